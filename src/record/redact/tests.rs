//! Tests of Secret redaction: the golden fixtures, hand-built protobuf and JSON Secrets,
//! malformed input, and properties over generated values.

use super::json::{contains, stars};
use super::*;
use crate::decode::protobuf_wire::{Reader, WireType};
use proptest::prelude::*;
use serde_json::Value;
use std::path::Path;

// -- helpers ------------------------------------------------------------------------------

/// A file under the shared golden test data folder `td` (see its README.md).
fn read(td: &Path, rel: &str) -> Vec<u8> {
    let p = td.join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

const FIXTURE_DIRS: [&str; 2] = ["k8s-api/v1.30.3", "k8s-api/head"];

fn b64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                s.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

fn b64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let t: Vec<u8> = s.bytes().filter(|&c| c != b'=').map(val).collect();
    let mut out = Vec::new();
    for c in t.chunks(4) {
        let mut n = 0u32;
        for (i, &x) in c.iter().enumerate() {
            n |= u32::from(x) << (18 - 6 * i);
        }
        for i in 0..c.len().saturating_sub(1) {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn all_fill(b: &[u8]) -> bool {
    b.iter().all(|&x| x == FILL)
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A length-delimited field.
fn ld(n: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    varint((u64::from(n) << 3) | 2, &mut out);
    varint(payload.len() as u64, &mut out);
    out.extend_from_slice(payload);
    out
}

fn entry(k: &[u8], v: &[u8]) -> Vec<u8> {
    [ld(1, k), ld(2, v)].concat()
}

fn envelope(api_version: &[u8], kind: &[u8], raw: &[u8]) -> Vec<u8> {
    [
        MAGIC.to_vec(),
        ld(1, &[ld(1, api_version), ld(2, kind)].concat()),
        ld(2, raw),
        ld(3, b""),
        ld(4, b""),
    ]
    .concat()
}

/// What an independent schema walk finds in a protobuf Secret value.
#[derive(Debug, Default)]
struct PbSecret {
    name: Vec<u8>,
    namespace: Vec<u8>,
    /// (map field 2 or 4, key, value range).
    values: Vec<(u32, Vec<u8>, (usize, usize))>,
    /// Ranges of last-applied annotation values.
    last_applied: Vec<(usize, usize)>,
    type_: Vec<u8>,
}

impl PbSecret {
    fn secret_ranges(&self) -> Vec<(usize, usize)> {
        let mut r: Vec<_> = self.values.iter().map(|v| v.2).collect();
        r.extend(&self.last_applied);
        r
    }
}

/// One field as these tests look at it: number, wire type and the payload's absolute span
/// (`start..end`, after the length for `Len`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Field {
    number: u32,
    wire: WireType,
    start: usize,
    end: usize,
}

impl Field {
    fn payload<'a>(&self, value: &'a [u8]) -> &'a [u8] {
        value.get(self.start..self.end).unwrap_or_default()
    }
}

/// The fields of `v[start..end]` (the range clamped to `v`), read with the decoder's wire
/// reader as redaction reads them; `None` when the framing breaks.
fn fields(v: &[u8], start: usize, end: usize) -> Option<Vec<Field>> {
    let end = end.min(v.len());
    let start = start.min(end);
    Reader::new(&v[start..end], start)
        .map(|f| {
            f.map(|f| Field {
                number: f.number,
                wire: f.wire_type(),
                start: f.value_offset,
                end: f.end,
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .ok()
}

/// Walks envelope → raw → Secret, tolerating what the redactor rejects; `None` when the
/// framing on that path breaks.
fn walk_pb(v: &[u8]) -> Option<PbSecret> {
    let mut s = PbSecret::default();
    let env = fields(v, 4, v.len())?;
    let raw = env.iter().find(|f| f.number == 2)?;
    for f in fields(v, raw.start, raw.end)? {
        match f.number {
            1 => {
                for m in fields(v, f.start, f.end)? {
                    match m.number {
                        1 => s.name = m.payload(v).to_vec(),
                        3 => s.namespace = m.payload(v).to_vec(),
                        12 => {
                            let e = fields(v, m.start, m.end)?;
                            let key = e.iter().find(|g| g.number == 1);
                            if key
                                .is_some_and(|k| k.payload(v) == LAST_APPLIED_ANNOTATION.as_bytes())
                            {
                                for g in e.iter().filter(|g| g.number == 2) {
                                    s.last_applied.push((g.start, g.end));
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
            2 | 4 => {
                let e = fields(v, f.start, f.end)?;
                let key = e
                    .iter()
                    .find(|g| g.number == 1)
                    .map(|g| g.payload(v).to_vec())
                    .unwrap_or_default();
                for g in e.iter().filter(|g| g.number == 2) {
                    s.values.push((f.number, key.clone(), (g.start, g.end)));
                }
            }
            3 => s.type_ = f.payload(v).to_vec(),
            _ => {}
        }
    }
    Some(s)
}

/// Field number, wire type, offset and length of every field at every level: descends into
/// each length-delimited payload that frames as a message, except the `skip` ranges.
fn dump(v: &[u8], start: usize, end: usize, skip: &[(usize, usize)], depth: usize) -> Vec<String> {
    let mut out = Vec::new();
    let Some(fs) = fields(v, start, end) else {
        out.push(format!("{depth} unframed {start}..{end}"));
        return out;
    };
    for f in fs {
        out.push(format!(
            "{depth} #{} {:?} @{} len {}",
            f.number,
            f.wire,
            f.start,
            f.end - f.start
        ));
        if f.wire == WireType::Len
            && f.end > f.start
            && depth < 32
            && !skip.contains(&(f.start, f.end))
            && fields(v, f.start, f.end).is_some()
        {
            out.extend(dump(v, f.start, f.end, skip, depth + 1));
        }
    }
    out
}

/// The checks every protobuf Secret redaction must pass; returns the redacted bytes.
fn check_pb(input: &[u8]) -> Vec<u8> {
    let before = walk_pb(input).expect("input walks");
    let r = redact_secret_value(input);
    assert_eq!(r.kind(), RedactionKind::Protobuf);
    let out = r.bytes(input).to_vec();
    assert_eq!(out.len(), input.len());
    let ranges = before.secret_ranges();
    // Inside secret ranges: all fill. Outside: byte for byte the input.
    for i in 0..input.len() {
        let secret = ranges.iter().any(|&(s, e)| (s..e).contains(&i));
        if secret {
            assert_eq!(out[i], FILL, "byte {i} not filled");
        } else {
            assert_eq!(out[i], input[i], "byte {i} changed");
        }
    }
    // No value (nor its base64 form, as kubectl stores it in last-applied) survives. A
    // value shorter than 4 bytes matches framing bytes by chance; the range check above
    // covers it.
    for (_, key, (s, e)) in &before.values {
        let val = &input[*s..*e];
        if val.len() >= 4 && !all_fill(val) {
            assert!(!find(&out, val), "value of {key:?} leaked");
        }
        let enc = b64(val);
        if enc.len() >= 4 && !all_fill(val) {
            assert!(!find(&out, enc.as_bytes()), "base64 of {key:?} leaked");
        }
        assert!(find(&out, key), "key {key:?} lost");
    }
    // The same structure, re-walked from the output.
    let after = walk_pb(&out).expect("output walks");
    assert_eq!(after.name, before.name);
    assert_eq!(after.namespace, before.namespace);
    assert_eq!(after.type_, before.type_);
    let keys =
        |s: &PbSecret| -> Vec<_> { s.values.iter().map(|v| (v.0, v.1.clone(), v.2)).collect() };
    assert_eq!(keys(&after), keys(&before));
    assert_eq!(after.last_applied, before.last_applied);
    assert!(find(&out, &before.name) && find(&out, &before.namespace));
    assert_eq!(
        dump(&out, 4, out.len(), &ranges, 0),
        dump(input, 4, input.len(), &ranges, 0)
    );
    out
}

// -- fixtures -----------------------------------------------------------------------------

#[test]
fn fixture_protobuf_secrets() {
    let Some(td) = crate::testdata::dir() else {
        return;
    };
    for dir in FIXTURE_DIRS {
        let input = read(&td, &format!("{dir}/core.v1.Secret.pb"));
        let before = walk_pb(&input).unwrap();
        // The fixture as documented: placeholder values, both maps populated.
        assert_eq!(before.name, b"nameValue");
        assert_eq!(before.namespace, b"namespaceValue");
        let keys: Vec<_> = before.values.iter().map(|v| (v.0, v.1.clone())).collect();
        assert_eq!(
            keys,
            vec![(2, b"dataKey".to_vec()), (4, b"stringDataKey".to_vec())]
        );
        let out = check_pb(&input);
        assert!(!find(&out, b"stringDataValue"));
        // Annotations other than last-applied and managedFields are kept.
        assert!(find(&out, b"annotationsValue"));
        assert!(find(&out, b"managerValue"));
        assert!(find(&out, b"Secret") && find(&out, b"typeValue"));
    }
}

#[test]
fn fixture_json_secrets() {
    let Some(td) = crate::testdata::dir() else {
        return;
    };
    for dir in FIXTURE_DIRS {
        let input = read(&td, &format!("{dir}/core.v1.Secret.json"));
        let orig: Value = serde_json::from_slice(&input).unwrap();
        let r = redact_secret_value(&input);
        assert_eq!(r.kind(), RedactionKind::Json, "{dir}");
        let out = r.bytes(&input);
        assert_eq!(out.len(), input.len());
        let got: Value = serde_json::from_slice(out).expect("output re-parses");
        // Expected: the input with exactly the secret strings starred.
        let mut want = orig.clone();
        for (field, pad) in [("data", true), ("stringData", false)] {
            for (k, x) in want[field].as_object_mut().unwrap() {
                let s = x.as_str().unwrap();
                *x = Value::String(stars(s, pad));
                let raw = orig[field][k].as_str().unwrap();
                assert!(!find(out, raw.as_bytes()), "{field}.{k} leaked");
                if field == "data" {
                    let plain = b64_decode(raw);
                    if plain.len() >= 4 {
                        assert!(!find(out, &plain));
                    }
                } else {
                    assert!(!find(out, b64(raw.as_bytes()).as_bytes()));
                }
                assert!(find(out, k.as_bytes()), "key {k} lost");
            }
        }
        assert_eq!(got, want);
        assert_eq!(got["data"]["dataKey"], "**==");
        assert!(find(out, b"\"nameValue\"") && find(out, b"\"namespaceValue\""));
        // Trailing padding is JSON whitespace.
        let compact = serde_json::to_vec(&got).unwrap();
        assert!(out[compact.len()..].iter().all(|&b| b == b' '));
    }
}

#[test]
fn fixture_other_kinds_are_filled_whole() {
    let Some(td) = crate::testdata::dir() else {
        return;
    };
    for dir in FIXTURE_DIRS {
        for (file, reason) in [
            ("core.v1.ConfigMap.pb", FillReason::NotSecret),
            ("core.v1.ConfigMap.json", FillReason::NotSecret),
            ("core.v1.WatchEvent.pb", FillReason::NotSecret),
        ] {
            let input = read(&td, &format!("{dir}/{file}"));
            let r = redact_secret_value(&input);
            assert_eq!(r.kind(), RedactionKind::Filled(reason), "{dir}/{file}");
            assert_eq!(r.bytes(&input), vec![FILL; input.len()]);
        }
    }
}

#[test]
fn truncated_fixture_never_leaks_or_panics() {
    let Some(td) = crate::testdata::dir() else {
        return;
    };
    let mut inputs: Vec<Vec<u8>> = FIXTURE_DIRS
        .iter()
        .map(|d| read(&td, &format!("{d}/core.v1.Secret.pb")))
        .collect();
    inputs.push(last_applied_secret().0);
    for input in inputs {
        let full = walk_pb(&input).unwrap();
        let ranges = full.secret_ranges();
        let mut kinds = std::collections::BTreeMap::new();
        for n in 0..=input.len() {
            let prefix = &input[..n];
            let r = redact_secret_value(prefix);
            *kinds.entry(r.kind().label()).or_insert(0) += 1;
            let out = r.bytes(prefix);
            assert_eq!(out.len(), n);
            for &(s, e) in &ranges {
                let inside = out.get(s..e.min(n)).unwrap_or_default();
                assert!(all_fill(inside), "prefix {n}, range {s}..{e}");
            }
            for (_, _, (s, e)) in &full.values {
                let val = &input[*s..*e];
                if val.len() >= 4 {
                    assert!(!find(out, val));
                    assert!(!find(out, b64(val).as_bytes()));
                }
            }
        }
        // The empty prefix, the complete value, and the prefixes that only drop the empty
        // contentEncoding/contentType fields are redacted field by field.
        assert_eq!(kinds.get("empty"), Some(&1));
        assert_eq!(kinds.get("protobuf"), Some(&3), "{kinds:?}");
    }
}

#[test]
fn mutated_fixture_never_leaks_or_panics() {
    let Some(td) = crate::testdata::dir() else {
        return;
    };
    let input = read(&td, "k8s-api/head/core.v1.Secret.pb");
    for i in 0..input.len() {
        for b in [0x00, 0x01, 0x02, 0x0a, 0x12, 0x22, 0x7f, 0x80, 0xff, FILL] {
            let mut m = input.clone();
            m[i] = b;
            let r = redact_secret_value(&m);
            let out = r.bytes(&m);
            assert_eq!(out.len(), m.len());
            match r.kind() {
                RedactionKind::Protobuf => {
                    let w = walk_pb(&m)
                        .unwrap_or_else(|| panic!("mutation {i}={b:#x} accepted, no walk"));
                    for (s, e) in w.secret_ranges() {
                        assert!(all_fill(&out[s..e]), "mutation {i}={b:#x}");
                    }
                }
                RedactionKind::Filled(_) => assert!(all_fill(out)),
                k => panic!("mutation {i}={b:#x}: {k:?}"),
            }
        }
    }
}

// -- hand-built protobuf ------------------------------------------------------------------

const PASSWORD: &[u8] = b"hunter2-password";
const TLS_KEY: &[u8] = b"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n";

/// A Secret as `kubectl apply` leaves it: last-applied annotation with the data in it,
/// managedFields naming the keys. Returns (value, last-applied JSON).
fn last_applied_secret() -> (Vec<u8>, String) {
    let applied = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"annotations": {}, "name": "db-creds", "namespace": "prod"},
        "data": {"password": b64(PASSWORD), "tls.key": b64(TLS_KEY)},
        "type": "Opaque",
    })
    .to_string()
        + "\n";
    let managed = [
        ld(1, b"kubectl-client-side-apply"),
        ld(2, b"Update"),
        ld(3, b"v1"),
        ld(6, b"FieldsV1"),
        ld(
            7,
            &ld(
                1,
                br#"{"f:data":{".":{},"f:password":{},"f:tls.key":{}},"f:type":{}}"#,
            ),
        ),
    ]
    .concat();
    let meta = [
        ld(1, b"db-creds"),
        ld(3, b"prod"),
        ld(5, b"6f1c2a9e-uid"),
        ld(12, &entry(b"team", b"payments")),
        ld(
            12,
            &entry(LAST_APPLIED_ANNOTATION.as_bytes(), applied.as_bytes()),
        ),
        ld(17, &managed),
    ]
    .concat();
    let raw = [
        ld(1, &meta),
        ld(2, &entry(b"password", PASSWORD)),
        ld(2, &entry(b"tls.key", TLS_KEY)),
        ld(3, b"Opaque"),
        ld(4, &entry(b"extra", b"plain-string-data")),
        vec![0x28, 0x01], // 5: immutable = true
    ]
    .concat();
    (envelope(b"v1", b"Secret", &raw), applied)
}

#[test]
fn protobuf_last_applied_annotation_is_redacted() {
    let (input, applied) = last_applied_secret();
    assert!(find(&input, b64(PASSWORD).as_bytes()));
    let out = check_pb(&input);
    for secret in [
        PASSWORD.to_vec(),
        b64(PASSWORD).into_bytes(),
        TLS_KEY.to_vec(),
        b64(TLS_KEY).into_bytes(),
        b"plain-string-data".to_vec(),
        applied.clone().into_bytes(),
    ] {
        assert!(
            !find(&out, &secret),
            "{:?}",
            String::from_utf8_lossy(&secret)
        );
    }
    assert!(find(&out, LAST_APPLIED_ANNOTATION.as_bytes()));
    assert!(find(&out, &vec![FILL; applied.len()]));
    // managedFields and other annotations are kept.
    assert!(find(&out, br#""f:password":{}"#));
    assert!(find(&out, b"payments") && find(&out, b"kubectl-client-side-apply"));
}

#[test]
fn protobuf_without_secret_bytes_is_unchanged() {
    let raw = [ld(1, &ld(1, b"empty")), ld(3, b"Opaque")].concat();
    let v = envelope(b"v1", b"Secret", &raw);
    assert_eq!(
        redact_secret_value(&v),
        Redacted::Unchanged(RedactionKind::Protobuf)
    );
    // An empty data value has no bytes to fill.
    let raw = [ld(1, &ld(1, b"e")), ld(2, &entry(b"k", b""))].concat();
    let v = envelope(b"v1", b"Secret", &raw);
    assert_eq!(redact_secret_value(&v).kind(), RedactionKind::Protobuf);
}

#[test]
fn protobuf_future_fields_are_filled_and_numbers_kept() {
    let raw = [
        ld(1, &ld(1, b"s")),
        ld(2, &entry(b"k", b"value-bytes")),
        ld(9, b"future-secret-ish"),
        vec![0x50, 0x07], // 10: varint 7
    ]
    .concat();
    let v = envelope(b"v1", b"Secret", &raw);
    let out = redact_secret_value(&v).into_bytes(&v);
    assert_eq!(out.len(), v.len());
    assert!(!find(&out, b"future-secret-ish") && !find(&out, b"value-bytes"));
    // The envelope ends with raw, then the empty fields 3 and 4 (2 bytes each).
    assert_eq!(&out[out.len() - 6..out.len() - 4], &[0x50, 0x07]);
}

#[test]
fn protobuf_shapes_that_fall_back() {
    let raw = [ld(1, &ld(1, b"s")), ld(2, &entry(b"k", b"value-bytes"))].concat();
    let secret = |api: &[u8], kind: &[u8]| envelope(api, kind, &raw);
    let cases: Vec<(Vec<u8>, FillReason)> = vec![
        (secret(b"v2", b"Secret"), FillReason::NotSecret),
        (secret(b"example.com/v1", b"Secret"), FillReason::NotSecret),
        (secret(b"v1", b"ConfigMap"), FillReason::NotSecret),
        (secret(b"", b""), FillReason::NotSecret),
        // Envelope with a contentType: raw is not protobuf.
        (
            [
                MAGIC.to_vec(),
                ld(1, &[ld(1, b"v1"), ld(2, b"Secret")].concat()),
                ld(2, &raw),
                ld(4, b"application/json"),
            ]
            .concat(),
            FillReason::Malformed,
        ),
        // Two raw fields.
        (
            [secret(b"v1", b"Secret"), ld(2, &raw)].concat(),
            FillReason::Malformed,
        ),
        // No raw.
        (
            [
                MAGIC.to_vec(),
                ld(1, &[ld(1, b"v1"), ld(2, b"Secret")].concat()),
            ]
            .concat(),
            FillReason::Malformed,
        ),
        (MAGIC.to_vec(), FillReason::Malformed),
        // data as a varint, data entry value as a varint, annotations as a varint.
        (
            envelope(b"v1", b"Secret", &[0x10, 0x01]),
            FillReason::Malformed,
        ),
        (
            envelope(
                b"v1",
                b"Secret",
                &ld(2, &[ld(1, b"k"), vec![0x10, 0x01]].concat()),
            ),
            FillReason::Malformed,
        ),
        (
            envelope(b"v1", b"Secret", &ld(1, &[0x60, 0x01])),
            FillReason::Malformed,
        ),
        // Group wire type, and a field number 0, inside raw.
        (
            envelope(b"v1", b"Secret", &[0x0b, 0x0c]),
            FillReason::Malformed,
        ),
        (
            envelope(b"v1", b"Secret", &[0x02, 0x00]),
            FillReason::Malformed,
        ),
        // CR LF translated by a terminal.
        (
            secret(b"v1", b"Secret")
                .iter()
                .flat_map(|&b| {
                    if b == b'\n' {
                        vec![b'\r', b'\n']
                    } else {
                        vec![b]
                    }
                })
                .collect(),
            FillReason::Malformed,
        ),
    ];
    for (v, reason) in cases {
        let r = redact_secret_value(&v);
        assert_eq!(r.kind(), RedactionKind::Filled(reason), "{v:?}");
        assert_eq!(r.bytes(&v), vec![FILL; v.len()]);
    }
}

#[test]
fn protobuf_trailing_newline_is_tolerated_and_kept() {
    let Some(td) = crate::testdata::dir() else {
        return;
    };
    let mut v = read(&td, "k8s-api/v1.30.3/core.v1.Secret.pb");
    v.push(b'\n');
    let r = redact_secret_value(&v);
    assert_eq!(r.kind(), RedactionKind::Protobuf);
    let out = r.bytes(&v);
    assert_eq!(out.len(), v.len());
    assert!(out.ends_with(b"\n") && !find(out, b"stringDataValue"));
}

// -- JSON ---------------------------------------------------------------------------------

#[test]
fn json_last_applied_annotation_is_redacted() {
    let (_, applied) = last_applied_secret();
    let obj = serde_json::json!({
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": {
            "name": "db-creds",
            "namespace": "prod",
            "annotations": {LAST_APPLIED_ANNOTATION: applied, "team": "payments"},
            "managedFields": [{"manager": "kubectl-client-side-apply", "fieldsV1":
                {"f:data": {".": {}, "f:password": {}, "f:tls.key": {}}}}],
        },
        "data": {"password": b64(PASSWORD), "tls.key": b64(TLS_KEY)},
        "type": "Opaque",
    });
    // As Go's json.Encoder writes it: compact, then a newline.
    let input = (obj.to_string() + "\n").into_bytes();
    let r = redact_secret_value(&input);
    assert_eq!(r.kind(), RedactionKind::Json);
    let out = r.bytes(&input);
    assert_eq!(out.len(), input.len());
    assert!(out.ends_with(b"\n"));
    for secret in [
        PASSWORD,
        b64(PASSWORD).as_bytes(),
        TLS_KEY,
        b64(TLS_KEY).as_bytes(),
    ] {
        assert!(!find(out, secret));
    }
    assert!(!find(out, b"hunter2"));
    let got: Value = serde_json::from_slice(out).unwrap();
    let ann = got["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
        .as_str()
        .unwrap();
    assert_eq!(ann, "*".repeat(applied.len()));
    assert_eq!(got["metadata"]["annotations"]["team"], "payments");
    assert_eq!(
        got["metadata"]["managedFields"],
        obj["metadata"]["managedFields"]
    );
    // Padding is kept, so the decoded size computes as live: 16 bytes -> 24 chars, "==".
    assert_eq!(got["data"]["password"], format!("{}==", "*".repeat(22)));
    assert_eq!(got["type"], "Opaque");
}

#[test]
fn json_escapes_shrink_and_count_utf8_bytes() {
    let input =
        br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"caf\u00e9","annotations":{"a":"\u003cb\u003e"}},"stringData":{"word":"caf\u00e9 \u2028 secret-text"}}"#;
    let r = redact_secret_value(input);
    assert_eq!(r.kind(), RedactionKind::Json);
    let out = r.bytes(input);
    assert_eq!(out.len(), input.len());
    let got: Value = serde_json::from_slice(out).unwrap();
    // "café \u2028 secret-text": é is 2 bytes, U+2028 is 3.
    assert_eq!(got["stringData"]["word"], "*".repeat(5 + 1 + 3 + 12));
    assert_eq!(got["metadata"]["name"], "café");
    assert_eq!(got["metadata"]["annotations"]["a"], "<b>");
    assert!(!find(out, b"secret-text"));
}

#[test]
fn json_longer_when_compact_falls_back_to_whole_fill() {
    // serde_json writes the float 1e2 as "100.0": two bytes longer.
    let input =
        br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a","generation":1e2},"data":{"k":"c2VjcmV0LXZhbHVl"}}"#;
    let r = redact_secret_value(input);
    assert_eq!(r.kind(), RedactionKind::Filled(FillReason::JsonLonger));
    assert_eq!(r.bytes(input), vec![FILL; input.len()]);
}

#[test]
fn json_shapes_that_fall_back() {
    let cases: &[(&[u8], FillReason)] = &[
        (br#"{"apiVersion":"v1","kind":"ConfigMap","data":{"k":"v"}}"#, FillReason::NotSecret),
        (br#"{"kind":"Secret","data":{"k":"c2VjcmV0"}}"#, FillReason::NotSecret),
        (br#"{"apiVersion":"v1","kind":"Secret","data":{"k":5}}"#, FillReason::Malformed),
        (br#"{"apiVersion":"v1","kind":"Secret","data":["c2VjcmV0"]}"#, FillReason::Malformed),
        (
            br#"{"apiVersion":"v1","kind":"Secret","metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":{"data":"x"}}}}"#,
            FillReason::Malformed,
        ),
        (br#"{"apiVersion":"v1","kind":"Secret","metadata":[]}"#, FillReason::Malformed),
        (br#"{"apiVersion":"v1","kind":"Secret","data":{"k":"c2VjcmV0"}"#, FillReason::Malformed),
        (br#"{"apiVersion":"v1","kind":"Secret"} trailing"#, FillReason::Malformed),
        (b"{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"data\":{\"k\":\"\xff\"}}", FillReason::Malformed),
        (b"{", FillReason::Malformed),
    ];
    for (v, reason) in cases {
        let r = redact_secret_value(v);
        assert_eq!(
            r.kind(),
            RedactionKind::Filled(*reason),
            "{}",
            String::from_utf8_lossy(v)
        );
        assert_eq!(r.bytes(v), vec![FILL; v.len()]);
    }
}

#[test]
fn json_unknown_fields_nulls_and_whitespace() {
    let input = br#"  {"apiVersion":"v1","kind":"Secret","data":{"k":null,"j":"c2VjcmV0LXZhbHVl"},"stringData":null,"future":{"n":1,"s":["hidden-text"]},"immutable":true}
"#;
    let r = redact_secret_value(input);
    assert_eq!(r.kind(), RedactionKind::Json);
    let out = r.bytes(input);
    assert_eq!(out.len(), input.len());
    let got: Value = serde_json::from_slice(out).unwrap();
    assert_eq!(
        got["future"],
        serde_json::json!({"n": 1, "s": ["***********"]})
    );
    assert_eq!(got["data"]["k"], Value::Null);
    assert_eq!(got["immutable"], true);
    assert!(!find(out, b"c2VjcmV0LXZhbHVl") && !find(out, b"hidden-text"));
    // A Secret with nothing to redact, already compact: recorded as is.
    let plain = br#"{"apiVersion":"v1","kind":"Secret","type":"Opaque"}"#;
    assert_eq!(
        redact_secret_value(plain),
        Redacted::Unchanged(RedactionKind::Json)
    );
}

#[test]
fn leak_guard_substring_search() {
    assert!(contains(b"abcabd", b"abd"));
    assert!(!contains(b"abcab", b"abd"));
    assert!(contains(b"xy", b""));
    assert!(!contains(b"", b"a"));
}

// -- other cases --------------------------------------------------------------------------

#[test]
fn encrypted_values_are_unchanged() {
    for v in [
        &b"k8s:enc:aescbc:v1:key1:\x8f\x00\x13ciphertext"[..],
        b"k8s:enc:aesgcm:v1:key2:\x00\x01",
        b"k8s:enc:secretbox:v1:sb:\xff",
        b"k8s:enc:kms:v1:vault:\x00\x9a",
        b"k8s:enc:kms:v2:kms-plugin:\x0a\x10",
        b"k8s:enc:aescbc:v1:k:",
    ] {
        assert_eq!(
            redact_secret_value(v),
            Redacted::Unchanged(RedactionKind::Encrypted)
        );
    }
    // Incomplete or unknown prefixes are not known to be ciphertext.
    for v in [
        &b"k8s:enc:"[..],
        b"k8s:enc:aescbc:v1:",
        b"k8s:enc:aescbc:v1::cipher",
        b"k8s:enc:aescbc:v1:nocolon",
        b"k8s:enc:identity:v1:k:plaintext",
        b"k8s:enc:kms:v3:p:x",
    ] {
        let r = redact_secret_value(v);
        assert_eq!(r.kind(), RedactionKind::Filled(FillReason::Unrecognised));
        assert_eq!(r.bytes(v), vec![FILL; v.len()]);
    }
}

#[test]
fn empty_is_unchanged() {
    let r = redact_secret_value(b"");
    assert_eq!(r, Redacted::Unchanged(RedactionKind::Empty));
    assert_eq!(r.bytes(b""), b"");
}

#[test]
fn garbage_is_filled_whole() {
    for v in [
        &b"password=hunter2"[..],
        b"\xd9\xd9\xf7\xa1\x64kind\x66Secret", // CBOR self-described
        b"k8s",
        b"k8s\x01\x0a\x00",
        b"[\"array\"]",
        b"\x00",
    ] {
        let r = redact_secret_value(v);
        assert_eq!(
            r.kind(),
            RedactionKind::Filled(FillReason::Unrecognised),
            "{v:?}"
        );
        assert_eq!(r.clone().into_bytes(v), vec![FILL; v.len()]);
    }
}

#[test]
fn labels() {
    assert_eq!(RedactionKind::Json.label(), "json");
    assert_eq!(
        RedactionKind::Filled(FillReason::NotSecret).label(),
        "filled"
    );
    assert_eq!(FillReason::JsonLonger.label(), "json-longer");
}

#[test]
fn wire_reader_offsets_and_errors() {
    // 1: varint 300, 2: len "hi", 3: fixed32, 4: fixed64, at absolute offset 2.
    let b = [
        0xee, 0xee, 0x08, 0xac, 0x02, 0x12, 0x02, b'h', b'i', 0x1d, 1, 0, 0, 0, 0x21, 2, 0, 0, 0,
        0, 0, 0, 0,
    ];
    let fs = fields(&b, 2, b.len()).unwrap();
    let got: Vec<_> = fs
        .iter()
        .map(|f| (f.number, f.wire, f.start, f.end))
        .collect();
    assert_eq!(
        got,
        vec![
            (1, WireType::Varint, 3, 5),
            (2, WireType::Len, 7, 9),
            (3, WireType::Fixed32, 10, 14),
            (4, WireType::Fixed64, 15, 23)
        ]
    );
    assert!(fields(&[0x12, 0x05, b'a'], 0, 3).is_none());
    let mut long = [0xff; 11];
    long[0] = 0x08;
    assert!(fields(&long, 0, long.len()).is_none());
    let huge = [
        0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
    ];
    assert!(fields(&huge, 0, huge.len()).is_none());
    // A range past the buffer is clamped, not a panic.
    assert!(fields(&[0x08, 0x01], 1, 99).is_none());
    assert_eq!(fields(&[0x08, 0x01], 5, 99).unwrap(), vec![]);
}

/// `cargo test --release -- --ignored --nocapture timing`
#[test]
#[ignore]
fn timing() {
    let Some(td) = crate::testdata::dir() else {
        return;
    };
    let pb = read(&td, "k8s-api/head/core.v1.Secret.pb");
    let json = read(&td, "k8s-api/head/core.v1.Secret.json");
    let (la, _) = last_applied_secret();
    for (name, v) in [
        ("fixture pb", &pb),
        ("fixture json", &json),
        ("last-applied pb", &la),
    ] {
        let n = 100_000u32;
        let t = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(redact_secret_value(std::hint::black_box(v)));
        }
        println!(
            "{name} ({} bytes): {:?} per value",
            v.len(),
            t.elapsed() / n
        );
    }
}

// -- properties ---------------------------------------------------------------------------

proptest! {
    #[test]
    fn arbitrary_bytes_keep_length(v in proptest::collection::vec(any::<u8>(), 0..600)) {
        let r = redact_secret_value(&v);
        prop_assert_eq!(r.bytes(&v).len(), v.len());
    }

    #[test]
    fn arbitrary_after_magic_keeps_length(v in proptest::collection::vec(any::<u8>(), 0..300)) {
        let v = [MAGIC.as_slice(), &v].concat();
        let r = redact_secret_value(&v);
        prop_assert_eq!(r.bytes(&v).len(), v.len());
    }

    #[test]
    fn arbitrary_json_text_keeps_length(s in "\\{[ -~]{0,200}") {
        let r = redact_secret_value(s.as_bytes());
        prop_assert_eq!(r.bytes(s.as_bytes()).len(), s.len());
    }

    #[test]
    fn generated_secrets_lose_every_value(
        entries in proptest::collection::vec(
            ("[a-z][a-z0-9.-]{0,15}", proptest::collection::vec(any::<u8>(), 1..80)), 0..6),
    ) {
        let mut raw = ld(1, &[ld(1, b"gen"), ld(3, b"ns")].concat());
        for (k, val) in &entries {
            raw.extend(ld(2, &entry(k.as_bytes(), val)));
        }
        let v = envelope(b"v1", b"Secret", &raw);
        let r = redact_secret_value(&v);
        prop_assert_eq!(r.kind(), RedactionKind::Protobuf);
        let out = r.bytes(&v);
        prop_assert_eq!(out.len(), v.len());
        let w = walk_pb(out).unwrap();
        prop_assert_eq!(w.values.len(), entries.len());
        for ((_, key, (s, e)), (k, val)) in w.values.iter().zip(&entries) {
            prop_assert_eq!(key, k.as_bytes());
            prop_assert_eq!(e - s, val.len());
            prop_assert!(all_fill(&out[*s..*e]));
        }
    }

    #[test]
    fn spliced_fixture_keeps_length(
        at in 0usize..441, cut in 0usize..8, insert in proptest::collection::vec(any::<u8>(), 0..8),
    ) {
        let Some(td) = crate::testdata::dir() else { return Ok(()); };
        let input = read(&td, "k8s-api/v1.30.3/core.v1.Secret.pb");
        let at = at.min(input.len());
        let end = (at + cut).min(input.len());
        let v = [&input[..at], &insert, &input[end..]].concat();
        let r = redact_secret_value(&v);
        let out = r.bytes(&v);
        prop_assert_eq!(out.len(), v.len());
        match r.kind() {
            RedactionKind::Protobuf => {
                for (s, e) in walk_pb(&v).unwrap().secret_ranges() {
                    prop_assert!(all_fill(&out[s..e]));
                }
            }
            RedactionKind::Filled(_) => prop_assert!(all_fill(out)),
            RedactionKind::Empty => prop_assert!(v.is_empty()),
            k => prop_assert!(false, "{:?}", k),
        }
    }
}

/// A Secret envelope around `raw`, for the wire-reader edge cases.
fn secret_raw(raw: &[u8]) -> Vec<u8> {
    envelope(b"v1", b"Secret", raw)
}

/// A tag for field `n`, wire type `w`.
fn tag(n: u64, w: u64) -> Vec<u8> {
    let mut t = Vec::new();
    varint((n << 3) | w, &mut t);
    t
}

/// Malformed (and barely well-formed) protobuf at each edge of the wire reader, with the
/// redaction each gave before redaction shared the decoder's reader, taken from that
/// implementation: the kind and, for `Protobuf`, the ranges overwritten with [`FILL`]
/// (everything else kept); `Filled` values are filled whole. Redaction must keep giving
/// exactly these: the reader's strictness is part of what decides what is recorded.
#[test]
fn wire_reader_edges_redact_as_before() {
    use RedactionKind::{Filled, Protobuf};
    const MALFORMED: RedactionKind = Filled(FillReason::Malformed);
    let meta = ld(1, &ld(1, b"s"));
    let m = |rest: &[u8]| secret_raw(&[meta.clone(), rest.to_vec()].concat());
    let data_entry = ld(2, &entry(b"k", b"secret-v"));
    let max_varint = [&[0x28][..], &[0xff; 9], &[0x01]].concat();
    /// (what, the value, its redaction, the ranges filled when `Protobuf`).
    type Case<'a> = (&'a str, Vec<u8>, RedactionKind, Vec<(usize, usize)>);
    let cases: Vec<Case> = vec![
        (
            "varint of 10 bytes, last 1",
            m(&max_varint),
            Protobuf,
            vec![],
        ),
        (
            "varint of 10 bytes, last 2",
            m(&[&[0x28][..], &[0xff; 9], &[0x02]].concat()),
            MALFORMED,
            vec![],
        ),
        (
            "varint of 11 bytes",
            m(&[&[0x28][..], &[0x80; 10], &[0x00]].concat()),
            MALFORMED,
            vec![],
        ),
        (
            "non-canonical tag",
            m(&[vec![0x92, 0x00, 0x0d], entry(b"k", b"secret-v")].concat()),
            Protobuf,
            vec![(33, 41)],
        ),
        (
            "non-canonical length",
            m(&[vec![0x12, 0x8d, 0x00], entry(b"k", b"secret-v")].concat()),
            Protobuf,
            vec![(33, 41)],
        ),
        (
            "largest field number",
            m(&[tag((1 << 29) - 1, 2), vec![3], b"abc".to_vec()].concat()),
            Protobuf,
            vec![(31, 34)],
        ),
        (
            "field number 2^29",
            m(&[tag(1 << 29, 2), vec![3], b"abc".to_vec()].concat()),
            MALFORMED,
            vec![],
        ),
        ("field number 0", m(&[0x02, 0x01, b'x']), MALFORMED, vec![]),
        ("wire type 3", m(&[0x33]), MALFORMED, vec![]),
        ("wire type 4", m(&[0x34]), MALFORMED, vec![]),
        ("wire type 6", m(&[0x36, 0x00]), MALFORMED, vec![]),
        ("wire type 7", m(&[0x37, 0x00]), MALFORMED, vec![]),
        (
            "future fixed32 and fixed64",
            m(&[0x35, 1, 2, 3, 4, 0x39, 1, 2, 3, 4, 5, 6, 7, 8]),
            Protobuf,
            vec![],
        ),
        ("fixed32 cut short", m(&[0x35, 1, 2, 3]), MALFORMED, vec![]),
        (
            "fixed64 cut short",
            m(&[0x39, 1, 2, 3, 4, 5, 6, 7]),
            MALFORMED,
            vec![],
        ),
        ("tag cut short", m(&[0x92]), MALFORMED, vec![]),
        ("length cut short", m(&[0x12, 0x80]), MALFORMED, vec![]),
        (
            "length one past the message",
            m(&ld(
                2,
                &[ld(1, b"k"), vec![0x12, 0x09], b"secret-v".to_vec()].concat(),
            )),
            MALFORMED,
            vec![],
        ),
        (
            "length to the end of the message",
            m(&ld(
                2,
                &[ld(1, b"k"), vec![0x12, 0x08], b"secret-v".to_vec()].concat(),
            )),
            Protobuf,
            vec![(32, 40)],
        ),
        (
            "huge length",
            m(&[&[0x12][..], &[0xff; 9], &[0x01]].concat()),
            MALFORMED,
            vec![],
        ),
        (
            "entry framed, then garbage after it",
            m(&ld(2, &[entry(b"k", b"secret-v"), vec![0x0e]].concat())),
            MALFORMED,
            vec![],
        ),
        (
            "annotations cut short",
            secret_raw(
                &[
                    ld(
                        1,
                        &[ld(1, b"s"), vec![0x62, 0x05, 0x0a, 0x01, b'a', 0x12]].concat(),
                    ),
                    data_entry.clone(),
                ]
                .concat(),
            ),
            MALFORMED,
            vec![],
        ),
        (
            "typeMeta cut short",
            [
                MAGIC.to_vec(),
                vec![0x0a, 0x04, 0x0a, 0x02, b'v'],
                ld(2, &data_entry),
            ]
            .concat(),
            MALFORMED,
            vec![],
        ),
        (
            "envelope cut short, then a newline",
            [m(&data_entry), vec![0x12, b'\n']].concat(),
            MALFORMED,
            vec![],
        ),
        (
            "malformed, then a newline",
            [m(&[0x0e]), vec![b'\n']].concat(),
            MALFORMED,
            vec![],
        ),
        (
            "well-formed, then a newline",
            [m(&data_entry), vec![b'\n']].concat(),
            Protobuf,
            vec![(32, 40)],
        ),
        (
            "envelope with a group",
            [MAGIC.to_vec(), vec![0x0b]].concat(),
            MALFORMED,
            vec![],
        ),
        (
            "magic only, then a newline",
            [MAGIC.to_vec(), vec![b'\n']].concat(),
            MALFORMED,
            vec![],
        ),
    ];
    for (name, input, kind, filled) in cases {
        let r = redact_secret_value(&input);
        assert_eq!(r.kind(), kind, "{name}");
        let out = r.bytes(&input);
        assert_eq!(out.len(), input.len(), "{name}");
        if let Filled(_) = kind {
            assert!(all_fill(out), "{name}");
            continue;
        }
        for (i, (&o, &b)) in out.iter().zip(&input).enumerate() {
            let want = if filled.iter().any(|&(s, e)| (s..e).contains(&i)) {
                FILL
            } else {
                b
            };
            assert_eq!(o, want, "{name}: byte {i}");
        }
    }
}
