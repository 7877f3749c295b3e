//! The demo's storage encoding checked byte for byte against the Kubernetes serializer's
//! output in `../shared/testdata` (fields Kubernetes dropped after v1.30 stripped at the wire
//! level).

use std::path::PathBuf;

use crate::common::fixtures;
use crate::common::require;
use k8s_pb::api::apps::v1::Deployment;
use k8s_pb::api::coordination::v1::Lease;
use k8s_pb::api::core::v1::{ConfigMap, Event, Pod};
use regscope::demo::objects::{decode_envelope, encode_object, StorageKind};

/// PodSpec.resourceClaims (39) [].source (2): the `ClaimSource` wrapper, removed in
/// Kubernetes v1.31 when its two fields moved into PodResourceClaim itself.
const POD_SPEC_CLAIM_SOURCE: &[u64] = &[39, 2];

fn testdata_dir() -> PathBuf {
    fixtures::testdata().join("k8s-api/v1.30.3")
}

/// Reads a protobuf varint at `*pos`.
fn varint(buf: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0_u64;
    for shift in (0..64).step_by(7) {
        let b = buf[*pos];
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            break;
        }
    }
    v
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Copies the protobuf message `buf`, dropping every field at `path` (field numbers from
/// the top, through length-delimited fields, repeated ones included). Counts drops.
fn strip_field(buf: &[u8], path: &[u64], dropped: &mut usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(buf.len());
    let mut pos = 0;
    while pos < buf.len() {
        let start = pos;
        let tag = varint(buf, &mut pos);
        let (field, wire) = (tag >> 3, tag & 7);
        match wire {
            0 => {
                varint(buf, &mut pos);
            }
            1 => pos += 8,
            5 => pos += 4,
            2 => {
                let len = varint(buf, &mut pos) as usize;
                let body = &buf[pos..pos + len];
                pos += len;
                if field == path[0] {
                    if path.len() == 1 {
                        *dropped += 1;
                    } else {
                        let inner = strip_field(body, &path[1..], dropped);
                        put_varint(&mut out, tag);
                        put_varint(&mut out, inner.len() as u64);
                        out.extend_from_slice(&inner);
                    }
                    continue;
                }
            }
            other => panic!("unexpected wire type {other}"),
        }
        out.extend_from_slice(&buf[start..pos]);
    }
    out
}

/// Decodes the real serializer's bytes, re-encodes with the simulation's encoder
/// (`encode_object`), and asserts byte-for-byte equality.
///
/// `removed` lists fields Kubernetes dropped from the API after v1.30 (paths of field numbers
/// inside the object's own protobuf). k8s-pb follows a newer API, so prost cannot carry them;
/// they are stripped from the expected bytes at the wire level (and must be present), and
/// every other byte must match.
fn assert_reencodes_identically<T: StorageKind>(file: &str, removed: &[&[u64]]) {
    let path = testdata_dir().join(file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (../shared/testdata beside the repository)",
            path.display()
        )
    });
    let env = decode_envelope(&bytes).expect("envelope");
    assert_eq!(
        (env.api_version.as_str(), env.kind.as_str()),
        (T::API_VERSION, T::KIND)
    );
    let obj = T::decode(env.raw.as_slice()).expect("decode object");
    let ours = encode_object(&obj);

    // Expected: the file, minus fields removed from the API since v1.30 (runtime.Unknown's
    // `raw` is field 2 of the envelope body).
    let mut expected = bytes.clone();
    for field in removed {
        let mut dropped = 0;
        let full: Vec<u64> = std::iter::once(2).chain(field.iter().copied()).collect();
        let body = strip_field(&expected[4..], &full, &mut dropped);
        assert!(dropped > 0, "{file}: field {field:?} not in the fixture");
        expected.truncate(4);
        expected.extend_from_slice(&body);
    }
    if removed.is_empty() {
        assert_eq!(expected, bytes);
    }
    assert!(
        ours == expected,
        "{file}: re-encoding differs ({} vs {} bytes)",
        ours.len(),
        expected.len()
    );
}

#[test]
fn encoding_matches_kubernetes_serializer_output() {
    require!(TESTDATA);
    let claim_in_pod: Vec<u64> = [2].iter().chain(POD_SPEC_CLAIM_SOURCE).copied().collect();
    let claim_in_deployment: Vec<u64> = [2, 3, 2]
        .iter()
        .chain(POD_SPEC_CLAIM_SOURCE)
        .copied()
        .collect();
    assert_reencodes_identically::<Pod>("core.v1.Pod.pb", &[&claim_in_pod]);
    assert_reencodes_identically::<Lease>("coordination.k8s.io.v1.Lease.pb", &[]);
    assert_reencodes_identically::<Deployment>("apps.v1.Deployment.pb", &[&claim_in_deployment]);
    assert_reencodes_identically::<Event>("core.v1.Event.pb", &[]);
    assert_reencodes_identically::<ConfigMap>("core.v1.ConfigMap.pb", &[]);
}

#[test]
fn strip_field_removes_only_the_path() {
    // {1: "a", 2: {1: "b", 2: "c"}, 2: {2: "d"}}
    let msg = b"\x0a\x01a\x12\x06\x0a\x01b\x12\x01c\x12\x03\x12\x01d";
    let mut dropped = 0;
    let out = strip_field(msg, &[2, 2], &mut dropped);
    assert_eq!(dropped, 2);
    assert_eq!(out, b"\x0a\x01a\x12\x03\x0a\x01b\x12\x00".to_vec());
}
