//! Cross-format tests: values met in the field (altered on the way in by a terminal's CR LF
//! translation or a trailing newline, custom resources stored as JSON without the `k8s\0`
//! envelope, kinds no Kubernetes 1.30–1.35 schema has), encryption prefixes, Secret redaction, the shared golden data
//! (`../shared/testdata`) and a proptest that nothing panics.

use proptest::prelude::*;

use super::envelope::{object_meta_bytes, parse_envelope, scan_meta};
use super::protobuf_wire::{Reader, WireValue};
use super::*;

use crate::decrypt::tests::hex;

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Length-delimited field.
fn ld(field: u32, b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    varint(u64::from(field) << 3 | 2, &mut out);
    varint(b.len() as u64, &mut out);
    out.extend_from_slice(b);
    out
}

/// Varint field.
fn vi(field: u32, v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    varint(u64::from(field) << 3, &mut out);
    varint(v, &mut out);
    out
}

fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut v = MAGIC.to_vec();
    let tm = [ld(1, api_version.as_bytes()), ld(2, kind.as_bytes())].concat();
    v.extend(ld(1, &tm));
    v.extend(ld(2, raw));
    v.extend(ld(3, b""));
    v.extend(ld(4, b""));
    v
}

fn time(seconds: u64) -> Vec<u8> {
    [vi(1, seconds), vi(2, 0)].concat()
}

const BR01_VALID: &str = "6b3873000a090a0276311203506f64120f0a0d0a0270311a0764656661756c741a002200";
const BR01_CRLF: &str =
    "6b3873000d0a090d0a0276311203506f64120f0d0a0d0d0a0270311a0764656661756c741a0022000d0a";

/// A Pod with labels, an owner and two managers, for redaction-free rendering and mutation.
fn rich_pod() -> Vec<u8> {
    let meta = [
        ld(1, b"web-1"),
        ld(2, b"web-"),
        ld(3, b"prod"),
        ld(5, b"0000-uid"),
        vi(7, 3),
        ld(8, &time(1_704_067_200)),
        ld(11, &[ld(1, b"app"), ld(2, b"web")].concat()),
        ld(13, &[ld(1, b"ReplicaSet"), ld(3, b"web")].concat()),
        ld(
            17,
            &[
                ld(1, b"kube-controller-manager"),
                ld(2, b"Update"),
                ld(3, b"v1"),
                ld(4, &time(1_704_067_300)),
                ld(6, b"FieldsV1"),
                ld(7, &ld(1, br#"{"f:spec":{}}"#)),
            ]
            .concat(),
        ),
        ld(
            17,
            &[
                ld(1, b"kubelet"),
                ld(2, b"Update"),
                ld(3, b"v1"),
                ld(4, &time(1_704_067_900)),
                ld(8, b"status"),
            ]
            .concat(),
        ),
        ld(
            17,
            &[
                ld(1, b"old-tool"),
                ld(2, b"Apply"),
                ld(4, &time(1_704_067_000)),
            ]
            .concat(),
        ),
    ]
    .concat();
    let spec = [ld(2, &ld(1, b"nginx")), vi(4, 30)].concat();
    envelope("v1", "Pod", &[ld(1, &meta), ld(2, &spec)].concat())
}

#[test]
fn br01_valid_pod_decodes() {
    let v = hex(BR01_VALID);
    // The shared notes say 37 bytes; the hex they give is 36.
    assert_eq!(v.len(), 36);
    assert_eq!(detect(&v), Format::Protobuf);
    let s = summarize(&v);
    assert_eq!(s.api_version.as_deref(), Some("v1"));
    assert_eq!(s.kind.as_deref(), Some("Pod"));
    assert_eq!(s.namespace.as_deref(), Some("default"));
    assert_eq!(s.name.as_deref(), Some("p1"));
    assert_eq!(s.error, None);
    let r = render(&v, &RenderOptions::default());
    assert_eq!(r.error, None);
    assert_eq!(r.format, "protobuf");
    let text = r.lines.join("\n");
    assert!(
        text.contains("kind: Pod") && text.contains("  name: p1"),
        "{text}"
    );
    assert!(text.contains("  namespace: default"), "{text}");
    let d = r.decoded.unwrap();
    assert!(
        matches!(&d.schema, SchemaUse::Known { message, .. } if message == "api.core.v1.Pod"),
        "{:?}",
        d.schema
    );
}

#[test]
fn br01_crlf_translated_pod_gives_structured_error_and_hint() {
    let v = hex(BR01_CRLF);
    let s = summarize(&v);
    assert_eq!(s.format, Some(Format::Protobuf));
    assert!(s
        .error
        .as_deref()
        .unwrap()
        .starts_with("offset 4, field 1: unexpected wire type 5"));
    let r = render(&v, &RenderOptions::default());
    let e = r.decode_error.clone().unwrap();
    assert_eq!((e.offset, e.field), (4, Some(1)));
    assert_eq!(
        e.kind,
        ErrorKind::UnexpectedWireType {
            found: 5,
            expected: protobuf_wire::WireType::Len
        }
    );
    let err = r.error.as_deref().unwrap();
    assert!(
        err.contains("offset 4, field 1: unexpected wire type 5"),
        "{err}"
    );
    assert!(err.contains("CR LF"), "{err}");
    let hint = r.hint.as_deref().unwrap();
    assert!(hint.contains("CR LF") && hint.contains("TTY"), "{hint}");
    assert!(hint.contains("v1 Pod default/p1"), "{hint}");
    // The raw value stays visible as hex.
    assert!(r
        .lines
        .iter()
        .any(|l| l.starts_with("00000000  6b 38 73 00 0d 0a")));
    assert!(looks_crlf_translated(&v));
    assert!(!looks_crlf_translated(&hex(BR01_VALID)));
}

#[test]
fn br01_non_utf8_bytes_never_required() {
    let meta = [ld(1, b"cm\xff"), ld(3, b"def\xfe")].concat();
    let v = envelope(
        "v1",
        "ConfigMap",
        &[ld(1, &meta), ld(2, &ld(1, b"\xff\x00"))].concat(),
    );
    let s = summarize(&v);
    assert_eq!(s.name.as_deref(), Some("cm\\xff"));
    assert_eq!(s.namespace.as_deref(), Some("def\\xfe"));
    let r = render(&v, &RenderOptions::default());
    assert_eq!(r.error, None);
    let text = r.lines.join("\n");
    assert!(text.contains("name: cm\u{fffd}"), "{text}");
    assert!(text.contains("data:"), "{text}");
    // Non-UTF-8 JSON is an error, not a panic, and the hex stays.
    let r = render(b"{\"kind\":\"\xff\"}", &RenderOptions::default());
    assert!(r.error.is_some());
    assert!(!r.lines.is_empty());
}

#[test]
fn trailing_newline_after_envelope_is_tolerated() {
    let mut v = hex(BR01_VALID);
    v.push(b'\n');
    let s = summarize(&v);
    assert_eq!(s.error, None);
    assert_eq!(s.name.as_deref(), Some("p1"));
    let r = render(&v, &RenderOptions::default());
    assert_eq!(r.error, None);
    assert!(r.hint.as_deref().unwrap().contains("trailing newline"));
}

#[test]
fn managers_header_and_last_writer() {
    let v = rich_pod();
    let s = summarize(&v);
    assert_eq!(s.manager.as_deref(), Some("kubelet"));
    let w = crate::decode::last_writer(&v);
    assert_eq!(w.label(), "kubelet (Update/status)");
    let LastWrite::By(w) = w else { panic!() };
    assert!(
        matches!(w.manager, std::borrow::Cow::Borrowed(_)),
        "protobuf is not copied"
    );
    assert_eq!(s.uid.as_deref(), Some("0000-uid"));
    assert_eq!(s.creation_timestamp, Some(1_704_067_200));
    assert_eq!(s.namespace.as_deref(), Some("prod"));
    let r = render(&v, &RenderOptions::default());
    assert_eq!(r.error, None);
    let text = r.lines.join("\n");
    assert!(
        text.contains("creationTimestamp: \"2024-01-01T00:00:00Z\""),
        "{text}"
    );
    assert!(text.contains("  app: web"), "{text}");
    assert!(text.contains("    manager: kubelet"), "{text}");
    assert!(text.contains("    subresource: status"), "{text}");
    assert!(
        text.contains("    time: \"2024-01-01T00:11:40Z\""),
        "{text}"
    );
    assert!(text.contains("  - kind: ReplicaSet"), "{text}");
}

#[test]
fn br02_json_widget_with_trailing_newline() {
    let v = br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","namespace":"default","uid":"00000000-0000-0000-0000-000000000001","creationTimestamp":"2024-01-01T00:00:00Z"},"spec":{"size":3}}
"#;
    // The shared notes say 222 bytes; the text they give is 200 bytes plus the LF.
    assert_eq!(v.len(), 201);
    assert_eq!(detect(v), Format::Json);
    let s = summarize(v);
    assert_eq!(s.api_version.as_deref(), Some("example.com/v1"));
    assert_eq!(s.kind.as_deref(), Some("Widget"));
    assert_eq!(s.namespace.as_deref(), Some("default"));
    assert_eq!(s.name.as_deref(), Some("w1"));
    assert_eq!(s.creation_timestamp, Some(1_704_067_200));
    assert_eq!(s.error, None);
    let r = render(v, &RenderOptions::default());
    assert_eq!(r.error, None);
    assert_eq!(r.format, "json");
    let text = r.lines.join("\n");
    let back: serde_json::Value = serde_norway::from_str(&text).unwrap();
    assert_eq!(back["spec"]["size"], 3);
    assert!(text.contains("  size: 3"), "{text}");
    let r = render(
        v,
        &RenderOptions {
            json: true,
            mod_revision: Some(42),
            ..Default::default()
        },
    );
    let back: serde_json::Value = serde_json::from_str(&r.lines.join("\n")).unwrap();
    assert_eq!(back["metadata"]["resourceVersion"], "42");
    // Leading whitespace is allowed too.
    let mut spaced = b" \n\t".to_vec();
    spaced.extend_from_slice(v);
    assert_eq!(summarize(&spaced).name.as_deref(), Some("w1"));
}

#[test]
fn br03_openshift_build_decodes_without_schema() {
    let v = hex(
        "6b3873000a1e0a156275696c642e6f70656e73686966742e696f2f763112054275696c64120b0a090a0262311a036e73311a002200",
    );
    let s = summarize(&v);
    assert_eq!(s.api_version.as_deref(), Some("build.openshift.io/v1"));
    assert_eq!(s.kind.as_deref(), Some("Build"));
    assert_eq!(s.name.as_deref(), Some("b1"));
    assert_eq!(s.namespace.as_deref(), Some("ns1"));
    let r = render(&v, &RenderOptions::default());
    assert_eq!(r.error, None);
    assert!(r.lines[0].contains("schema unknown"), "{:?}", r.lines);
    let text = r.lines.join("\n");
    assert!(
        text.contains("  name: b1") && text.contains("  namespace: ns1"),
        "{text}"
    );
    assert!(text.contains("apiVersion: build.openshift.io/v1"), "{text}");
    assert_eq!(r.decoded.unwrap().schema, SchemaUse::Unknown);
}

#[test]
fn encrypted_prefixes() {
    let cases: [(&[u8], &str, &str); 5] = [
        (b"k8s:enc:aescbc:v1:key1:\x01\x02", "aescbc", "key1"),
        (b"k8s:enc:aesgcm:v1:k2:\xff", "aesgcm", "k2"),
        (b"k8s:enc:secretbox:v1:sb:", "secretbox", "sb"),
        (b"k8s:enc:kms:v1:vault:\x00\x01", "kms", "vault"),
        (b"k8s:enc:kms:v2:my-kms:\x0a\x20", "kmsv2", "my-kms"),
    ];
    for (v, provider, key) in cases {
        let f = detect(v);
        assert_eq!(
            f,
            Format::Encrypted {
                provider: provider.into(),
                key: key.into()
            }
        );
        assert_eq!(f.label(), format!("{provider}:{key}"));
        let r = render(v, &RenderOptions::default());
        assert!(r.error.as_deref().unwrap().contains("--encryption-config"));
        assert!(r.format.contains(provider) && r.format.contains(key));
        assert!(r.lines[0].contains(provider) && r.lines[0].contains(key));
        assert!(r.lines[1].contains("EncryptionConfiguration"));
        assert_eq!(summarize(v).format, Some(f));
    }
    // Malformed or unknown prefixes are raw, with a hint.
    for v in [
        &b"k8s:enc:aescbc:v1:"[..],
        b"k8s:enc:rot13:v1:k:",
        b"k8s:enc:aescbc:v1::x",
    ] {
        assert_eq!(detect(v), Format::Raw);
        assert!(render(v, &RenderOptions::default()).hint.is_some());
    }
    // A non-UTF-8 key name is escaped.
    assert_eq!(
        detect(b"k8s:enc:aescbc:v1:k\xff:"),
        Format::Encrypted {
            provider: "aescbc".into(),
            key: "k\\xff".into()
        }
    );
}

#[test]
fn cbor_and_raw_values() {
    let v = [0xd9, 0xd9, 0xf7, 0xa1, 0x61, 0x61, 0x01];
    assert_eq!(detect(&v), Format::Cbor);
    let r = render(&v, &RenderOptions::default());
    assert_eq!(r.format, "cbor");
    assert_eq!(r.error, None);
    assert_eq!(r.lines, vec!["a: 1".to_string()]);
    // Broken CBOR: an error and the hex.
    let r = render(&[0xd9, 0xd9, 0xf7, 0xa1], &RenderOptions::default());
    assert!(r.error.as_deref().unwrap().starts_with("CBOR"));
    assert!(r.lines.iter().any(|l| l.starts_with("00000000  d9 d9 f7")));

    let big = vec![b'x'; 102_400];
    assert_eq!(detect(&big), Format::Raw);
    let r = render(&big, &RenderOptions::default());
    assert_eq!(r.format, "raw (not Kubernetes encoding)");
    assert_eq!(r.lines.len(), 64 * 1024 / 16 + 1);
    assert!(r.lines.last().unwrap().contains("36864 bytes cut"));
    assert!(r.lines[0].ends_with("|xxxxxxxxxxxxxxxx|"));
    let r = render(b"", &RenderOptions::default());
    assert_eq!(r.format, "raw (not Kubernetes encoding)");
}

fn hand_secret() -> Vec<u8> {
    let meta = [
        ld(1, b"s"),
        ld(3, b"default"),
        ld(
            12,
            &[
                ld(1, b"kubectl.kubernetes.io/last-applied-configuration"),
                ld(2, br#"{"data":{"password":"c3VwZXJzZWNyZXQ="}}"#),
            ]
            .concat(),
        ),
        ld(12, &[ld(1, b"note"), ld(2, b"visible")].concat()),
    ]
    .concat();
    let raw = [
        ld(1, &meta),
        ld(2, &[ld(1, b"password"), ld(2, b"hunter2")].concat()),
        ld(3, b"Opaque"),
        ld(4, &[ld(1, b"token"), ld(2, b"tok-secret-value")].concat()),
    ]
    .concat();
    envelope("v1", "Secret", &raw)
}

#[test]
fn secret_redaction_protobuf() {
    let v = hand_secret();
    let r = render(&v, &RenderOptions::default());
    assert_eq!(r.error, None);
    let text = r.lines.join("\n");
    for secret in ["hunter2", "tok-secret-value", "c3VwZXJzZWNyZXQ"] {
        assert!(!text.contains(secret), "{secret} leaked:\n{text}");
    }
    assert!(text.contains("  password: '<redacted: 7 bytes>'"), "{text}");
    assert!(text.contains("  token: '<redacted: 16 bytes>'"), "{text}");
    assert!(text.contains("note: visible"), "{text}");
    assert!(text.contains("type: Opaque"), "{text}");
    let shown = render(
        &v,
        &RenderOptions {
            show_secrets: true,
            ..Default::default()
        },
    )
    .lines
    .join("\n");
    assert!(shown.contains("aHVudGVyMg==") && shown.contains("tok-secret-value"));

    // A Secret whose data entry does not frame is redacted whole, never hex-dumped.
    let raw = [ld(1, &ld(1, b"s")), ld(2, b"\x0a\x7fhunter2")].concat();
    let text = render(&envelope("v1", "Secret", &raw), &RenderOptions::default())
        .lines
        .join("\n");
    assert!(
        !text.contains("hunter2") && !text.contains("68 75 6e"),
        "{text}"
    );
    assert!(text.contains("<redacted: "), "{text}");
}

#[test]
fn secret_redaction_json() {
    let v = br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"password\":\"aHVudGVyMg==\"}}"}},"data":{"password":"aHVudGVyMg=="},"stringData":{"token":"tok-secret-value"},"type":"Opaque"}
"#;
    let r = render(v, &RenderOptions::default());
    assert_eq!(r.error, None);
    let text = r.lines.join("\n");
    assert!(
        !text.contains("aHVudGVyMg") && !text.contains("tok-secret-value"),
        "{text}"
    );
    assert!(text.contains("  password: '<redacted: 7 bytes>'"), "{text}");
    assert!(text.contains("  token: '<redacted: 16 bytes>'"), "{text}");
    let shown = render(
        v,
        &RenderOptions {
            show_secrets: true,
            ..Default::default()
        },
    )
    .lines
    .join("\n");
    assert!(shown.contains("aHVudGVyMg=="));
}

#[test]
fn secret_fixture_is_redacted() {
    let Some(td) = crate::testdata::dir() else {
        return;
    };
    let v = std::fs::read(td.join("k8s-api/v1.30.3/core.v1.Secret.pb")).unwrap();
    let r = render(&v, &RenderOptions::default());
    assert_eq!(r.error, None);
    let text = r.lines.join("\n");
    assert!(!text.contains("stringDataValue"), "{text}");
    assert!(text.contains("  dataKey: '<redacted: 1 bytes>'"), "{text}");
    assert!(
        text.contains("  stringDataKey: '<redacted: 15 bytes>'"),
        "{text}"
    );
}

/// (group, version, kind) from `<group>.<version>.<Kind>.pb`.
fn split_name(file: &str) -> (String, String, String) {
    let stem = file.strip_suffix(".pb").unwrap();
    let mut parts = stem.rsplitn(3, '.');
    let kind = parts.next().unwrap().to_owned();
    let version = parts.next().unwrap().to_owned();
    let group = parts.next().unwrap().to_owned();
    (group, version, kind)
}

#[test]
fn k8s_api_fixtures_envelopes_and_render() {
    let Some(td) = crate::testdata::dir() else {
        return;
    };
    let dirs = [
        "k8s-api/v1.30.3",
        "k8s-api/head",
        "k8s-api/extra/apiextensions-apiserver/v1.30.3",
        "k8s-api/extra/apiextensions-apiserver/head",
    ];
    let mut count = 0;
    let mut names_checked = 0;
    for d in dirs {
        let dir = td.join(d);
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "pb"))
            .collect();
        entries.sort();
        for p in entries {
            let file = p.file_name().unwrap().to_str().unwrap().to_owned();
            let v = std::fs::read(&p).unwrap();
            assert!(v.starts_with(MAGIC), "{file}: no magic");
            let env = parse_envelope(&v).unwrap_or_else(|e| panic!("{file}: {e}"));
            let (group, version, kind) = split_name(&file);
            let (want_api, want_kind) = if file == "core.v1.WatchEvent.pb" {
                (String::new(), String::new())
            } else if group == "core" {
                (version.clone(), kind.clone())
            } else {
                (format!("{group}/{version}"), kind.clone())
            };
            assert_eq!(env.api_version, want_api.as_bytes(), "{file}");
            assert_eq!(env.kind, want_kind.as_bytes(), "{file}");
            assert!(env.content_encoding.is_empty() && env.content_type.is_empty());
            let s = summarize(&v);
            assert_eq!(s.error, None, "{file}");
            assert_eq!(s.kind.as_deref().unwrap_or(""), want_kind, "{file}");
            let r = render(&v, &RenderOptions::default());
            if want_kind.is_empty() {
                // WatchEvent: an API response, never stored; its empty typeMeta is reported.
                assert!(
                    r.error.as_deref().unwrap().contains("typeMeta empty"),
                    "{file}"
                );
            } else {
                assert_eq!(r.error, None, "{d}/{file}");
            }
            assert!(!r.lines.is_empty(), "{file}");
            // Where the golden JSON has metadata.name, the ObjectMeta convention must find it.
            let json = p.with_extension("json");
            if let Ok(j) = std::fs::read(&json) {
                let j: serde_json::Value = serde_json::from_slice(&j).unwrap();
                if let Some(name) = j["metadata"]["name"].as_str() {
                    assert_eq!(s.name.as_deref(), Some(name), "{file}");
                    assert_eq!(
                        s.namespace.as_deref(),
                        j["metadata"]["namespace"].as_str(),
                        "{file}"
                    );
                    assert_eq!(s.uid.as_deref(), j["metadata"]["uid"].as_str(), "{file}");
                    let mf = &j["metadata"]["managedFields"];
                    if let Some(last) = mf.as_array().and_then(|a| a.last()) {
                        assert_eq!(s.manager.as_deref(), last["manager"].as_str(), "{file}");
                        // The writer the store counts is the same entry, whole.
                        let crate::decode::LastWrite::By(w) = crate::decode::last_writer(&v) else {
                            panic!("{file}: no writer for a value with managedFields");
                        };
                        let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
                        assert_eq!(
                            Some(text(&w.manager).as_str()),
                            last["manager"].as_str(),
                            "{file}"
                        );
                        assert_eq!(
                            Some(text(&w.operation).as_str()),
                            last["operation"].as_str(),
                            "{file}"
                        );
                        assert_eq!(
                            text(&w.subresource),
                            last["subresource"].as_str().unwrap_or(""),
                            "{file}"
                        );
                    }
                    names_checked += 1;
                }
            }
            count += 1;
        }
    }
    assert!(count >= 165 + 193, "only {count} fixtures");
    assert!(names_checked > 300, "only {names_checked} names checked");
}

/// Decodes an etcd `mvccpb.KeyValue` (1 key, 2 create_revision, 3 mod_revision, 4 version,
/// 5 value, 6 lease) with the wire reader.
fn mvcc_kv(b: &[u8]) -> (Vec<u8>, u64, u64, u64, Vec<u8>, u64) {
    let (mut key, mut cr, mut mr, mut ver, mut val, mut lease) = (vec![], 0, 0, 0, vec![], 0);
    for f in Reader::new(b, 0) {
        let f = f.unwrap();
        match (f.number, f.value) {
            (1, WireValue::Len(x)) => key = x.to_vec(),
            (2, WireValue::Varint(x)) => cr = x,
            (3, WireValue::Varint(x)) => mr = x,
            (4, WireValue::Varint(x)) => ver = x,
            (5, WireValue::Len(x)) => val = x.to_vec(),
            (6, WireValue::Varint(x)) => lease = x,
            _ => {}
        }
    }
    (key, cr, mr, ver, val, lease)
}

#[test]
fn auger_etcd_values() {
    let Some(td) = crate::testdata::dir() else {
        return;
    };
    let a = td.join("etcd-registry/auger");
    let read = |p: &str| std::fs::read(a.join(p)).unwrap();

    // bbolt items: mvccpb.KeyValue, checked against the summary files.
    let mut values = Vec::new();
    for i in 0..3 {
        let (key, cr, mr, ver, val, lease) = mvcc_kv(&read(&format!("boltdb/page2item{i}.bin")));
        let summary = String::from_utf8(read(&format!("boltdb/page2item{i}-summary.txt"))).unwrap();
        let field = |name: &str| {
            summary
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .unwrap()
                .trim()
                .to_owned()
        };
        assert_eq!(String::from_utf8_lossy(&key), field("Key:"));
        assert_eq!(ver.to_string(), field("Version:"));
        assert_eq!(cr.to_string(), field("CreateRevision:"));
        assert_eq!(mr.to_string(), field("ModRevision:"));
        assert_eq!(lease.to_string(), field("Lease:"));
        let key_txt = String::from_utf8(read(&format!("boltdb/page2item{i}-key.txt"))).unwrap();
        assert_eq!(String::from_utf8_lossy(&key), key_txt.trim());
        values.push(val);
    }
    let ns = summarize(&values[0]);
    assert_eq!(
        (ns.api_version.as_deref(), ns.kind.as_deref()),
        (Some("v1"), Some("Namespace"))
    );
    assert_eq!(ns.name.as_deref(), Some("default"));

    for (obj, item, api, kind) in [("pod", 1, "v1", "Pod"), ("job", 2, "batch/v1", "Job")] {
        let stored = read(&format!("storage/{obj}.bin"));
        // storage/X.bin = the etcd value + one '\n' added by auger's extract.
        assert_eq!(&stored[..stored.len() - 1], &values[item][..], "{obj}");
        let value = &values[item];
        let env = parse_envelope(value).unwrap();
        assert_eq!(env.raw, &read(&format!("proto/{obj}.bin"))[..], "{obj}");
        let meta = String::from_utf8(read(&format!("meta/{obj}.txt"))).unwrap();
        assert!(meta.contains(&format!("TypeMeta.APIVersion: {api}")));
        assert!(meta.contains(&format!("TypeMeta.Kind: {kind}")));

        let s = summarize(value);
        let j: serde_json::Value =
            serde_json::from_slice(&read(&format!("json/{obj}.json"))).unwrap();
        assert_eq!(s.api_version.as_deref(), j["apiVersion"].as_str(), "{obj}");
        assert_eq!(s.kind.as_deref(), j["kind"].as_str(), "{obj}");
        assert_eq!(s.name.as_deref(), j["metadata"]["name"].as_str(), "{obj}");
        assert_eq!(s.namespace.as_deref(), j["metadata"]["namespace"].as_str());
        assert_eq!(s.uid.as_deref(), j["metadata"]["uid"].as_str());
        // The same object stored as JSON summarizes identically.
        let sj = summarize(&read(&format!("json/{obj}.json")));
        assert_eq!(sj.format, Some(Format::Json));
        assert_eq!(
            (
                sj.api_version,
                sj.kind,
                sj.namespace,
                sj.name,
                sj.uid,
                sj.creation_timestamp
            ),
            (
                s.api_version.clone(),
                s.kind.clone(),
                s.namespace.clone(),
                s.name.clone(),
                s.uid.clone(),
                s.creation_timestamp
            ),
            "{obj}"
        );

        // With the trailing newline: tolerated, with a note.
        let r = render(&stored, &RenderOptions::default());
        assert_eq!(r.error, None, "{obj}");
        assert_eq!(r.summary, s, "{obj}");
        assert!(r.hint.as_deref().unwrap().contains("trailing newline"));
        let text = r.lines.join("\n");
        let created = j["metadata"]["creationTimestamp"].as_str().unwrap();
        assert!(
            text.contains(&format!("creationTimestamp: \"{created}\"")),
            "{obj}"
        );
        for (k, v) in j["metadata"]["labels"].as_object().unwrap() {
            assert!(
                text.contains(&format!("  {k}: {}", v.as_str().unwrap())),
                "{obj}"
            );
        }
        let (mk, mb) = object_meta_bytes(env.raw, env.raw_offset).unwrap().unwrap();
        assert!(
            scan_meta(mk, mb).unwrap().managed_count == 0,
            "2017 data has no managers"
        );
    }
    let pod = summarize(&values[1]);
    assert_eq!(pod.creation_timestamp, Some(1_498_581_334));

    // storage/pod-with-key.bin = key + '\n' + value + '\n'.
    let wk = read("storage/pod-with-key.bin");
    let nl = wk.iter().position(|&b| b == b'\n').unwrap();
    assert_eq!(&wk[..nl], b"/registry/pods/default/xyz");
    let s = summarize(&wk[nl + 1..]);
    assert_eq!(s.name.as_deref(), Some("pi-dqtsw"));
    assert_eq!(s.error, None);
}

fn check_no_panic(v: &[u8]) {
    let s = summarize(v);
    let r = render(v, &RenderOptions::default());
    assert_eq!(r.summary, s);
    let _ = render(
        v,
        &RenderOptions {
            show_secrets: true,
            ..Default::default()
        },
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn random_bytes_never_panic(
        body in proptest::collection::vec(any::<u8>(), 0..600),
        prefix in 0usize..5,
    ) {
        let head: &[u8] = match prefix {
            0 => b"",
            1 => MAGIC,
            2 => b"k8s:enc:aescbc:v1:k:",
            3 => b"{",
            _ => &[0xd9, 0xd9, 0xf7],
        };
        let v = [head, &body[..]].concat();
        check_no_panic(&v);
    }

    #[test]
    fn mutated_pod_never_panics(
        which in 0usize..3,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..4), 1..10),
    ) {
        let mut v = match which {
            0 => hex(BR01_VALID),
            1 => rich_pod(),
            _ => hand_secret(),
        };
        for (pos, byte, op) in edits {
            if v.is_empty() {
                break;
            }
            let i = pos % v.len();
            match op {
                0 => v[i] = byte,
                1 => v.insert(i, byte),
                2 => { v.remove(i); }
                _ => v.truncate(i),
            }
        }
        check_no_panic(&v);
    }
}

#[test]
fn undecodable_values_under_secrets_are_redacted_whole() {
    let opts = RenderOptions {
        show_secrets: false,
        secret_key: true,
        ..Default::default()
    };
    for v in [
        &b"password=hunter2"[..],
        b"k8s\x00\x0a\x0c\x0a\x02v1\x12\x06Secret\x12\x20\x0a\x10password=hunter2garbage\xff",
    ] {
        let r = render(v, &opts);
        let text = r.lines.join("\n");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(
            !text.contains("68 75 6e 74"),
            "no hex of the secret: {text}"
        );
        assert!(text.contains("<redacted:"), "{text}");
        let shown = render(
            v,
            &RenderOptions {
                show_secrets: true,
                secret_key: true,
                ..Default::default()
            },
        );
        assert!(
            !shown.lines.join("\n").contains("under secrets/"),
            "--show-secrets shows the bytes"
        );
    }
}

#[test]
fn json_secret_with_malformed_data_is_redacted() {
    let v =
        br#"{"kind":"Secret","apiVersion":"v1","data":"notamap-hunter2","stringData":["hunter2"]}"#;
    let r = render(v, &RenderOptions::default());
    let text = r.lines.join("\n");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains("<redacted:"), "{text}");
}

#[test]
fn resource_version_is_the_mod_revision() {
    let opts = DecodeOptions {
        mod_revision: Some(42),
        ..Default::default()
    };
    // Protobuf (walker path), with and without a stored ObjectMeta.
    for v in [hex(BR01_VALID), envelope("v1", "Pod", b"")] {
        let d = decode(&v, &opts);
        assert_eq!(d.error, None);
        let j = d.value().unwrap();
        assert_eq!(j["metadata"]["resourceVersion"], "42", "{j}");
        assert_eq!(j["kind"], "Pod");
    }
    // A stored resourceVersion is replaced, as the apiserver does on read.
    let meta = [ld(1, b"p"), ld(6, b"7")].concat();
    let d = decode(&envelope("v1", "Pod", &ld(1, &meta)), &opts);
    let j = d.value().unwrap();
    assert_eq!(j["metadata"]["resourceVersion"], "42");
    assert_eq!(j["metadata"]["name"], "p");
    // Without a mod_revision nothing is invented.
    let d = decode(&hex(BR01_VALID), &DecodeOptions::default());
    assert!(d.value().unwrap()["metadata"]
        .get("resourceVersion")
        .is_none());
}

#[test]
fn split_repeated_and_repeated_singular_fields_decode_like_protobuf() {
    // ConfigMap: 2 data (map), 3 binaryData (map), 4 immutable (bool). Kubernetes writes each
    // field once and map entries together; other writers may not, and protobuf allows both.
    let entry = |k: &[u8], v: &[u8]| [ld(1, k), ld(2, v)].concat();
    let raw = [
        ld(1, &ld(1, b"cm")),
        ld(2, &entry(b"a", b"1")),
        vi(4, 1),
        ld(3, &entry(b"b", b"\x00\x01")),
        ld(2, &entry(b"c", b"3")),
        vi(4, 0),
        vi(4, 1),
    ]
    .concat();
    let d = decode(
        &envelope("v1", "ConfigMap", &raw),
        &DecodeOptions::default(),
    );
    assert_eq!(d.error, None);
    let j = d.value().unwrap();
    assert_eq!(j["data"], serde_json::json!({"a": "1", "c": "3"}), "{j}");
    assert_eq!(j["binaryData"], serde_json::json!({"b": "AAE="}), "{j}");
    assert_eq!(j["immutable"], true, "last value wins: {j}");
    assert_eq!(j["metadata"]["name"], "cm");
    // The same object written the Kubernetes way gives the same JSON.
    let tidy = [
        ld(1, &ld(1, b"cm")),
        ld(2, &entry(b"a", b"1")),
        ld(2, &entry(b"c", b"3")),
        ld(3, &entry(b"b", b"\x00\x01")),
        vi(4, 1),
    ]
    .concat();
    let t = decode(
        &envelope("v1", "ConfigMap", &tidy),
        &DecodeOptions::default(),
    );
    assert_eq!(t.value().unwrap(), j);
}

/// Removes every unknown-field list, collecting `(path of its object, list)`.
fn strip_unknown(
    v: &mut serde_json::Value,
    path: &str,
    out: &mut Vec<(String, serde_json::Value)>,
) {
    match v {
        serde_json::Value::Object(o) => {
            if let Some(u) = o.remove(object::UNKNOWN_FIELDS_KEY) {
                out.push((path.to_owned(), u));
            }
            for (k, x) in o.iter_mut() {
                strip_unknown(x, &format!("{path}.{k}"), out);
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| strip_unknown(x, path, out)),
        _ => {}
    }
}

/// The 2017 GKE values decode with the schemas to the JSON auger printed for them (Kubernetes
/// 1.6/1.7 era), field for field. The one difference is shown, not dropped: the Pod carries
/// ObjectMeta field 15 (`clusterName`, empty; removed from the schema in Kubernetes 1.25)
/// in every metadata, which the 1.30+ schemas list as an unknown field.
#[test]
fn auger_2017_values_decode_exactly() {
    let Some(td) = crate::testdata::dir() else {
        return;
    };
    let dir = td.join("etcd-registry/auger");
    for obj in ["pod", "job"] {
        let stored = std::fs::read(dir.join(format!("storage/{obj}.bin"))).unwrap();
        let d = decode(&stored, &DecodeOptions::default());
        assert_eq!(d.error, None, "{obj}");
        assert!(matches!(d.schema, SchemaUse::Known { .. }), "{obj}");
        let mut ours = d.value().unwrap();
        let mut removed = Vec::new();
        strip_unknown(&mut ours, "", &mut removed);
        assert_eq!(removed.len(), d.unknown_fields, "{obj}");
        assert!(d.unknown_fields >= 1, "{obj}");
        for (path, u) in removed {
            assert!(path.ends_with("metadata"), "{obj}: {path}");
            assert_eq!(
                u,
                serde_json::json!([{"field": 15, "wireType": "len", "value": ""}])
            );
        }
        let golden: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join(format!("json/{obj}.json"))).unwrap())
                .unwrap();
        if obj == "job" {
            // A zero metav1.Time present on the wire prints as `null` in today's apiserver
            // JSON (`creationTimestamp: null` in every pod template); the 2017 encoder that
            // wrote auger's JSON left it out.
            let t = &mut ours["spec"]["template"]["metadata"];
            assert_eq!(t["creationTimestamp"], serde_json::Value::Null);
            t.as_object_mut().unwrap().remove("creationTimestamp");
        }
        assert_eq!(ours, golden, "{obj}");
    }
}

/// The mixed-encryption Secrets s1/s2/s3 through the decoder: encrypted and plain Secrets
/// side by side, provider and key named, the copied aesgcm value bound to another key path,
/// and no plaintext without --show-secrets.
#[test]
fn br11_mixed_encrypted_and_plain_secrets() {
    let keyring = crate::decrypt::tests::br11_config(crate::decrypt::tests::KEY_A);
    let s1 = hex(crate::decrypt::tests::S1);
    let s2 = hex(crate::decrypt::tests::S2);
    // The shared notes' s3 gives the kind "Secret" a length of 3 (`12 03`), so its typeMeta
    // does not parse: a precise error, not a guess. With the length corrected (`12 06`) it is
    // the plain Secret the case describes.
    let s3_as_given =
        hex("6b3873000a0c0a0276311203536563726574120f0a0d0a0273331a0764656661756c741a002200");
    let d = decode(&s3_as_given, &DecodeOptions::default());
    assert_eq!(
        d.error.as_deref(),
        Some("offset 16, field 14: truncated: needs 101 bytes, only 1 left")
    );
    let s3 = hex("6b3873000a0c0a0276311206536563726574120f0a0d0a0273331a0764656661756c741a002200");
    let mut encrypted = 0;
    for (name, v, label) in [
        ("s1", &s1, "aescbc:key1"),
        ("s2", &s2, "aesgcm:key2"),
        ("s3", &s3, "identity"),
    ] {
        let key = format!("/registry/secrets/default/{name}");
        let d = decode(
            v,
            &DecodeOptions {
                etcd_key: key.as_bytes(),
                keyring: Some(&keyring),
                ..Default::default()
            },
        );
        assert_eq!(d.error, None, "{name}");
        assert_eq!(d.summary.kind.as_deref(), Some("Secret"), "{name}");
        assert_eq!(d.summary.name.as_deref(), Some(name));
        assert_eq!(d.summary.namespace.as_deref(), Some("default"));
        match &d.encryption {
            Some(e) => {
                assert!(e.decrypted, "{name}: {e:?}");
                assert_eq!(e.label, label);
                encrypted += 1;
            }
            None => assert_eq!(label, "identity"),
        }
        let j = d.value().unwrap();
        assert_eq!(j["metadata"]["name"], name);
    }
    assert_eq!(encrypted, 2, "2 of 3 secrets encrypted, 1 plaintext");
    let copy = decode(
        &s2,
        &DecodeOptions {
            etcd_key: b"/registry/secrets/default/s2-copy",
            keyring: Some(&keyring),
            ..Default::default()
        },
    );
    let e = copy.encryption.unwrap();
    assert!(!e.decrypted && copy.json.is_none());
    assert!(e
        .message
        .unwrap()
        .contains("authentication failed: ciphertext is bound to a different key path"),);
    // Without the keyring: provider and key named, nothing decoded.
    let d = decode(&s1, &DecodeOptions::default());
    assert_eq!(d.encryption.unwrap().label, "aescbc:key1");
    assert!(d.json.is_none());
}

/// CBOR as kube-apiserver writes it (KEP-4222): self-described tag, Go strings as byte
/// strings, `[]byte` as byte strings tagged 22.
#[test]
fn cbor_custom_resource_as_kubernetes_writes_it() {
    use ciborium::Value as C;
    let bs = |s: &str| C::Bytes(s.as_bytes().to_vec());
    let obj = C::Tag(
        55799,
        Box::new(C::Map(vec![
            (bs("apiVersion"), bs("example.com/v1")),
            (bs("kind"), bs("Widget")),
            (
                bs("metadata"),
                C::Map(vec![
                    (bs("name"), bs("w1")),
                    (bs("namespace"), bs("default")),
                ]),
            ),
            (
                bs("spec"),
                C::Map(vec![
                    (bs("size"), C::Integer(3.into())),
                    (bs("blob"), C::Tag(22, Box::new(C::Bytes(vec![0, 1, 2])))),
                ]),
            ),
        ])),
    );
    let mut v = Vec::new();
    ciborium::ser::into_writer(&obj, &mut v).unwrap();
    assert_eq!(detect(&v), Format::Cbor);
    let d = decode(
        &v,
        &DecodeOptions {
            mod_revision: Some(9),
            ..Default::default()
        },
    );
    assert_eq!(d.error, None);
    assert_eq!(d.summary.kind.as_deref(), Some("Widget"));
    assert_eq!(d.summary.name.as_deref(), Some("w1"));
    // The list rows' summary reads CBOR too.
    let s = summarize(&v);
    assert_eq!(
        (s.kind.as_deref(), s.namespace.as_deref(), s.name.as_deref()),
        (Some("Widget"), Some("default"), Some("w1"))
    );
    let j = d.value().unwrap();
    assert_eq!(j["spec"]["size"], 3);
    assert_eq!(j["spec"]["blob"], "AAEC");
    assert_eq!(j["metadata"]["resourceVersion"], "9");
}

/// YAML output means what the JSON means, also to YAML 1.1 readers (kubectl quotes these).
#[test]
fn yaml_quotes_what_yaml_1_1_would_misread() {
    let v = serde_json::json!({
        "creationTimestamp": "2024-01-01T00:00:00Z",
        "date": "2024-01-01",
        "spaced": "2024-01-01 10:00:00",
        "bools": ["yes", "no", "on", "Off", "y"],
        "sexagesimal": "1:20",
        "plain": "nginx:1.27",
        "version": "v1.2.3",
        "text": "multi\nline\n2024-01-01T00:00:00Z\nyes\n",
        "nested": {"list": [{"time": "2024-01-01T00:00:00Z", "n": 3}]},
        "key: odd": "on",
        "port": "8080:80",
    });
    let lines = yaml_lines(&v);
    let text = lines.join("\n");
    for want in [
        "creationTimestamp: \"2024-01-01T00:00:00Z\"",
        "date: \"2024-01-01\"",
        "spaced: \"2024-01-01 10:00:00\"",
        "- \"yes\"",
        "- \"Off\"",
        "sexagesimal: \"1:20\"",
        "plain: nginx:1.27",
        "version: v1.2.3",
        "  - n: 3",
        "    time: \"2024-01-01T00:00:00Z\"",
        "'key: odd': \"on\"",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    // Block scalar text is left alone, and the YAML reads back to the same value.
    assert!(
        text.contains("\n  yes\n") || text.contains("\n  yes"),
        "{text}"
    );
    let back: serde_json::Value = serde_norway::from_str(&text).unwrap();
    assert_eq!(back, v);
}

/// Found by a first-time user: no Secret bytes without --show-secrets even when the value
/// does not decode, when no key path says `secrets/`, or when the apiVersion has no schema.
#[test]
fn damaged_or_unusual_secrets_never_show_their_data() {
    // A truncated v1 Secret (raw says 53 bytes, 51 follow).
    let truncated = hex("6b3873000a0c0a027631120653656372657412350a0c0a01731a0764656661756c74121d0a0870617373776f72641211544f505345435245542d68756e746572321a064f706171");
    // The same data under an apiVersion no schema knows.
    let data = [ld(1, b"password"), ld(2, b"TOPSECRET-hunter2")].concat();
    let v2 = envelope(
        "v2",
        "Secret",
        &[ld(1, &ld(1, b"s")), ld(2, &data)].concat(),
    );
    for v in [truncated, v2] {
        let d = decode(&v, &DecodeOptions::default());
        assert!(d.redacted_whole, "{:?}", d.json);
        assert!(d.json.is_none());
        let r = render(&v, &RenderOptions::default());
        let text = r.lines.join("\n");
        assert!(
            !text.contains("TOPSECRET") && !text.contains("54 4f 50"),
            "{text}"
        );
        assert!(text.contains("<redacted:"), "{text}");
        let shown = decode(
            &v,
            &DecodeOptions {
                show_secrets: true,
                ..Default::default()
            },
        );
        assert!(!shown.redacted_whole);
    }
}

/// Unknown fields nested deeper than the dump follows still give valid JSON, for known and
/// unknown kinds; damaged bytes of a known kind are an error that names the schema.
#[test]
fn deep_unknown_fields_and_damaged_known_kinds() {
    let mut nested = ld(1, b"leaf-value");
    for _ in 0..70 {
        nested = ld(7, &nested);
    }
    for (av, kind) in [("v1", "Pod"), ("example.com/v1", "Thing")] {
        let raw = [ld(1, &ld(1, b"deep")), ld(99, &nested)].concat();
        let d = decode(&envelope(av, kind, &raw), &DecodeOptions::default());
        assert_eq!(d.error, None, "{kind}");
        let j = d.value().unwrap_or_else(|| panic!("{kind}: no JSON"));
        assert_eq!(j["metadata"]["name"], "deep");
        assert!(j[object::UNKNOWN_FIELDS_KEY].is_array(), "{kind}: {j}");
        if kind == "Pod" {
            assert_eq!(d.unknown_fields, 1);
        } else {
            assert_eq!(d.schema, SchemaUse::Unknown);
        }
    }
    let damaged = envelope("v1", "Pod", &[0, 0, 0, 0]);
    let d = decode(&damaged, &DecodeOptions::default());
    assert!(d
        .error
        .as_deref()
        .unwrap()
        .contains("invalid field number 0"));
    assert!(
        matches!(d.schema, SchemaUse::Known { .. }),
        "{:?}",
        d.schema
    );
}

/// `etcdctl get KEY` (no -w) output fed to the decoder: a hint, not just "not Kubernetes".
#[test]
fn etcdctl_plain_get_output_gets_a_hint() {
    let mut v = b"/registry/pods/default/p1\n".to_vec();
    v.extend(hex(BR01_VALID));
    v.push(b'\n');
    let d = decode(&v, &DecodeOptions::default());
    assert!(d.error.is_some());
    assert!(
        d.hint.as_deref().unwrap().contains("-w json"),
        "{:?}",
        d.hint
    );
    assert!(decode(b"just text\nmore", &DecodeOptions::default())
        .hint
        .is_none());
}

#[test]
fn last_writer_agrees_with_the_meta_scan_and_survives_every_truncation() {
    let v = rich_pod();
    // The tight scanner names the same entry as the general ObjectMeta scan.
    let env = parse_envelope(&v).unwrap();
    let (meta, base) = object_meta_bytes(env.raw, env.raw_offset).unwrap().unwrap();
    let scanned = scan_meta(meta, base).unwrap().writer.unwrap();
    let LastWrite::By(w) = last_writer(&v) else {
        panic!()
    };
    assert_eq!(
        (&w.manager[..], &w.operation[..], &w.subresource[..]),
        (scanned.manager, scanned.operation, scanned.subresource)
    );
    // One trailing newline (etcdctl, auger) is tolerated.
    let mut nl = v.clone();
    nl.push(b'\n');
    assert_eq!(last_writer(&nl).label(), "kubelet (Update/status)");
    // Cut anywhere: never a panic, and never a writer the value does not hold whole.
    for n in 0..v.len() {
        match last_writer(&v[..n]) {
            LastWrite::By(w) => assert!(
                [&b"kubelet"[..], b"kube-controller-manager", b"old-tool"]
                    .iter()
                    .any(|m| w.manager.as_ref() == *m || m.starts_with(&w.manager)),
                "cut at {n}: {w:?}"
            ),
            LastWrite::NoManagedFields | LastWrite::Undecodable => {}
            LastWrite::Encrypted => panic!("cut at {n}"),
        }
    }
}

#[test]
fn last_writer_of_json_reads_metadata_even_when_the_name_appears_elsewhere() {
    let v = br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{
        "annotations":{"managedFields":"not the list"},"name":"w",
        "managedFields":[{"manager":"a","operation":"Update","time":"2024-01-01T00:00:05Z"},
                         {"manager":"b","operation":"Apply","time":"2024-01-01T00:00:09Z"}]},
        "spec":{"managedFields":[{"manager":"spec-field","time":"2099-01-01T00:00:00Z"}]}}"#;
    assert_eq!(last_writer(v).label(), "b (Apply)");
    let plain = br#"{"metadata":{"managedFields":[{"manager":"x","operation":"Update","subresource":"status"}]}}"#;
    assert_eq!(last_writer(plain).label(), "x (Update/status)");
    assert_eq!(
        last_writer(br#"{"metadata":{"name":"n"}}"#),
        LastWrite::NoManagedFields
    );
    assert_eq!(last_writer(br#"{"metadata":"#), LastWrite::Undecodable);
    assert_eq!(
        last_writer(b"k8s:enc:aescbc:v1:key1:\x00\x01"),
        LastWrite::Encrypted
    );
    assert_eq!(last_writer(b""), LastWrite::Undecodable);
}

/// The managedFields mark moves with managedFields and nothing else, in protobuf and JSON
/// alike; a value without managedFields, encrypted or CBOR has none (0).
#[test]
fn managed_fields_marks_move_with_managed_fields_only() {
    let swap = |v: &[u8], from: &[u8], to: &[u8]| {
        assert_eq!(from.len(), to.len());
        let at = memchr::memmem::find(v, from).expect("present");
        let mut out = v.to_vec();
        out[at..at + to.len()].copy_from_slice(to);
        out
    };
    let pod = rich_pod();
    let (lw, mark) = last_write_marked(&pod);
    assert_eq!(lw.label(), "kubelet (Update/status)");
    assert_ne!(mark, 0);
    let mut nl = pod.clone();
    nl.push(b'\n');
    assert_eq!(last_write_marked(&nl).1, mark, "a trailing newline");
    assert_eq!(
        last_write_marked(&swap(&pod, b"nginx", b"nginy")).1,
        mark,
        "spec only"
    );
    assert_eq!(
        last_write_marked(&swap(&pod, b"web-1", b"web-2")).1,
        mark,
        "name only"
    );
    assert_ne!(
        last_write_marked(&swap(&pod, b"old-tool", b"old-toom")).1,
        mark
    );
    assert_ne!(
        last_write_marked(&swap(&pod, b"{\"f:spec\":{}}", b"{\"f:meta\":{}}")).1,
        mark
    );
    let json = br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"managedFields":[{"manager":"op","operation":"Update","time":"2024-01-01T00:00:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}}}],"name":"w"},"spec":{"replicas":1}}"#;
    let (lw, mark) = last_write_marked(json);
    assert_eq!(lw.label(), "op");
    assert_ne!(mark, 0);
    assert_eq!(
        last_write_marked(&swap(json, b"\"replicas\":1", b"\"replicas\":2")).1,
        mark
    );
    assert_ne!(
        last_write_marked(&swap(json, b"00:00:05Z", b"00:00:06Z")).1,
        mark
    );
    assert_ne!(
        last_write_marked(&swap(json, b"f:replicas", b"f:selector")).1,
        mark
    );
    assert_eq!(last_write_marked(br#"{"metadata":{"name":"x"}}"#).1, 0);
    assert_eq!(last_write_marked(b"k8s:enc:aescbc:v1:key1:xxxx").1, 0);
}
