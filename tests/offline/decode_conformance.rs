//! Golden conformance: every `.pb` under `../shared/testdata/k8s-api` decoded with the
//! compiled Kubernetes schemas and compared, as JSON values (key order ignored), with the
//! upstream `.json` written by the same Kubernetes serializer.
//!
//! Prints an N/M table per folder (run with `--nocapture` to see it). Asserts: every kind in
//! v1.30.3 exact; in head, every kind whose message the schemas know decodes with its known
//! fields equal to the golden and its newer fields listed as unknown (never dropped), and
//! every other kind decodes through the schema-less dump without error.

use std::path::{Path, PathBuf};

use regscope::decode::object::UNKNOWN_FIELDS_KEY;
use regscope::decode::{self, envelope::parse_envelope, DecodeOptions, SchemaUse};
use serde_json::Value;

use crate::common::fixtures;
use crate::common::require;

/// `../shared/testdata/k8s-api`.
fn testdata() -> PathBuf {
    fixtures::testdata().join("k8s-api")
}

/// `(group, version, kind)` from `<group>.<version>.<Kind>.pb`; group `core` is `""`.
fn gvk(path: &Path) -> (String, String, String) {
    let stem = path.file_stem().unwrap().to_str().unwrap();
    let mut it = stem.rsplitn(3, '.');
    let kind = it.next().unwrap().to_owned();
    let version = it.next().unwrap().to_owned();
    let group = it.next().unwrap().to_owned();
    let group = if group == "core" {
        String::new()
    } else {
        group
    };
    (group, version, kind)
}

fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

/// First difference between two JSON values, as `path: ours vs golden`.
fn first_diff(path: &str, ours: &Value, golden: &Value) -> Option<String> {
    match (ours, golden) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, bv) in b {
                match a.get(k) {
                    Some(av) => {
                        if let Some(d) = first_diff(&format!("{path}.{k}"), av, bv) {
                            return Some(d);
                        }
                    }
                    None => return Some(format!("{path}.{k}: missing (golden {bv})")),
                }
            }
            a.keys()
                .find(|k| !b.contains_key(*k))
                .map(|k| format!("{path}.{k}: extra {}", a[k]))
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                return Some(format!("{path}: {} items vs {}", a.len(), b.len()));
            }
            a.iter()
                .zip(b)
                .enumerate()
                .find_map(|(i, (x, y))| first_diff(&format!("{path}[{i}]"), x, y))
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => None,
        (a, b) if a == b => None,
        (a, b) => Some(format!("{path}: {a} vs golden {b}")),
    }
}

/// Removes the unknown-field lists (anywhere) from a decoded value.
fn strip_unknown(v: &mut Value) {
    match v {
        Value::Object(o) => {
            o.remove(UNKNOWN_FIELDS_KEY);
            o.values_mut().for_each(strip_unknown);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_unknown),
        _ => {}
    }
}

/// The first key/value of `ours` that is not in `golden` (golden may have more: newer
/// fields that our schema reports as unknown).
fn extra_in_ours(path: &str, ours: &Value, golden: &Value) -> Option<String> {
    match (ours, golden) {
        (Value::Object(a), Value::Object(b)) => a.iter().find_map(|(k, v)| match b.get(k) {
            Some(g) => extra_in_ours(&format!("{path}.{k}"), v, g),
            None => Some(format!("{path}.{k}: not in golden ({v})")),
        }),
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| extra_in_ours(&format!("{path}[{i}]"), x, y)),
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => None,
        (a, b) if a == b => None,
        (a, b) => Some(format!("{path}: {a} vs golden {b}")),
    }
}

#[derive(Default)]
struct Tally {
    total: usize,
    exact: usize,
    known_with_newer_fields: Vec<String>,
    unknown_kinds: Vec<String>,
    failures: Vec<String>,
}

fn run_folder(dir: &Path) -> Tally {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "pb"))
        .collect();
    files.sort();
    let mut t = Tally::default();
    for pb in files {
        t.total += 1;
        let name = pb.file_stem().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&pb).unwrap();
        let golden: Value =
            serde_json::from_slice(&std::fs::read(pb.with_extension("json")).unwrap()).unwrap();
        let (group, version, kind) = gvk(&pb);
        let av = api_version(&group, &version);
        let env = parse_envelope(&bytes).unwrap();
        // The public decode path (envelope typeMeta) for every kind that has one; the
        // file name for WatchEvent, whose typeMeta is empty.
        let (json, unknown, known) = if env.kind.is_empty() {
            match decode::decode_raw_as(&av, &kind, env.raw) {
                Some(Ok((j, u))) => (j, u, true),
                Some(Err(e)) => {
                    t.failures.push(format!("{name}: {e}"));
                    continue;
                }
                None => {
                    t.failures
                        .push(format!("{name}: no schema for an untyped value"));
                    continue;
                }
            }
        } else {
            let d = decode::decode(
                &bytes,
                &DecodeOptions {
                    show_secrets: true,
                    ..Default::default()
                },
            );
            if let Some(e) = d.error {
                t.failures.push(format!("{name}: {e}"));
                continue;
            }
            let known = matches!(d.schema, SchemaUse::Known { .. });
            (d.json.unwrap_or_default(), d.unknown_fields, known)
        };
        let mut ours: Value = serde_json::from_str(&json).unwrap();
        if !known {
            t.unknown_kinds.push(name);
            continue;
        }
        if unknown == 0 {
            match first_diff("", &ours, &golden) {
                None => t.exact += 1,
                Some(d) => t.failures.push(format!("{name}: {d}")),
            }
        } else {
            strip_unknown(&mut ours);
            if let Some(d) = extra_in_ours("", &ours, &golden) {
                t.failures.push(format!("{name}: known fields differ: {d}"));
            } else {
                t.known_with_newer_fields
                    .push(format!("{name} ({unknown} newer fields)"));
            }
        }
    }
    t
}

fn report(label: &str, t: &Tally) {
    println!(
        "{label}: {}/{} exact, {} known kinds with newer fields (known fields equal), {} kinds without a schema (raw dump), {} failures",
        t.exact,
        t.total,
        t.known_with_newer_fields.len(),
        t.unknown_kinds.len(),
        t.failures.len()
    );
    for k in &t.known_with_newer_fields {
        println!("  newer fields: {k}");
    }
    for k in &t.unknown_kinds {
        println!("  no schema: {k}");
    }
    for f in &t.failures {
        println!("  FAIL {f}");
    }
}

#[test]
fn v1_30_3_every_kind_exact() {
    require!(TESTDATA);
    let td = testdata();
    for sub in ["v1.30.3", "extra/apiextensions-apiserver/v1.30.3"] {
        let t = run_folder(&td.join(sub));
        report(sub, &t);
        assert!(t.total > 0);
        assert!(t.failures.is_empty(), "{sub}: {:#?}", t.failures);
        assert_eq!(t.exact, t.total, "{sub}: every kind exact");
    }
}

#[test]
fn head_known_kinds_match_and_the_rest_dump() {
    require!(TESTDATA);
    let td = testdata();
    for sub in ["head", "extra/apiextensions-apiserver/head"] {
        let t = run_folder(&td.join(sub));
        report(sub, &t);
        assert!(t.total > 0);
        assert!(t.failures.is_empty(), "{sub}: {:#?}", t.failures);
        assert_eq!(
            t.exact + t.known_with_newer_fields.len() + t.unknown_kinds.len(),
            t.total
        );
    }
}
