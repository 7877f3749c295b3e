//! `regscope diff` on `recordings/demo.rgs`: the keys it lists between two moments are
//! exactly those `snapshot --json --from demo.rgs --at … --keys` shows created, deleted
//! and changed; the recording against itself differs in nothing; and `report` compares
//! the same two moments to the same counts (both use one comparison).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

use crate::common::recording::{snapshot_from, BIN};
use crate::record_replay::demo_recording;
use crate::report::report_json;

/// `regscope diff ARGS --json`, which must exit `code`.
fn diff_json(args: &[&str], code: i32) -> Value {
    let out = Command::new(BIN)
        .arg("diff")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "diff {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `snapshot --keys`'s key list as key → (mod_revision, bytes, create_revision).
fn key_list(file: &std::path::Path, at: &str) -> (i64, BTreeMap<String, (i64, u64, i64)>) {
    let mut args = vec![
        "snapshot".to_string(),
        "--json".into(),
        "--keys".into(),
        "--from".into(),
        file.display().to_string(),
    ];
    args.push(format!("--at={at}"));
    let out = Command::new(BIN).args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys = v["key_list"]
        .as_array()
        .expect("key_list")
        .iter()
        .map(|k| {
            (
                k["key"].as_str().unwrap().to_string(),
                (
                    k["mod_revision"].as_i64().unwrap(),
                    k["bytes"].as_u64().unwrap(),
                    k["create_revision"].as_i64().unwrap(),
                ),
            )
        })
        .collect();
    (v["revision"].as_i64().unwrap(), keys)
}

/// `(key, change, bytes_from, bytes_to)` of every key that differs.
type Row = (String, String, Option<u64>, Option<u64>);

/// A key on both sides is recreated when its create_revision differs, else changed when
/// its mod_revision does.
fn expected(
    from: &BTreeMap<String, (i64, u64, i64)>,
    to: &BTreeMap<String, (i64, u64, i64)>,
) -> Vec<Row> {
    let keys: BTreeSet<&String> = from.keys().chain(to.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let (a, b) = (from.get(k), to.get(k));
            let change = match (a, b) {
                (None, Some(_)) => "created",
                (Some(_), None) => "deleted",
                (Some(a), Some(b)) if a.2 != b.2 => "recreated",
                (Some(a), Some(b)) if a.0 != b.0 => "changed",
                _ => return None,
            };
            Some((k.clone(), change.into(), a.map(|x| x.1), b.map(|x| x.1)))
        })
        .collect()
}

fn listed(v: &Value) -> Vec<Row> {
    v["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["key"].as_str().unwrap().to_string(),
                k["change"].as_str().unwrap().to_string(),
                k["bytes_from"].as_u64(),
                k["bytes_to"].as_u64(),
            )
        })
        .collect()
}

#[test]
fn diff_of_the_demo_recording_is_snapshots_key_lists_compared() {
    let file = demo_recording();
    let f = file.to_str().unwrap();
    let whole = snapshot_from(&file, None);
    assert!(whole["revision"].as_i64().unwrap() > 0);
    for (x, y) in [("+15s", "-5s"), ("-5s", "+15s"), ("+30s", "+31s")] {
        let (rx, kx) = key_list(&file, x);
        let (ry, ky) = key_list(&file, y);
        let want = expected(&kx, &ky);
        let v = diff_json(
            &[f, "--at", x, "--at", y],
            if want.is_empty() { 0 } else { 1 },
        );
        assert_eq!(listed(&v), want, "--at {x} --at {y}");
        assert_eq!(v["from"]["revision"].as_i64(), Some(rx));
        assert_eq!(v["to"]["revision"].as_i64(), Some(ry));
        assert_eq!(v["from"]["kind"], "recording");
        assert_eq!(v["from"]["keys"].as_u64(), Some(kx.len() as u64));
        assert_eq!(v["to"]["keys"].as_u64(), Some(ky.len() as u64));
        let bytes = |k: &BTreeMap<String, (i64, u64, i64)>| k.values().map(|v| v.1).sum::<u64>();
        assert_eq!(v["total"]["bytes_from"].as_u64(), Some(bytes(&kx)));
        assert_eq!(v["total"]["bytes_to"].as_u64(), Some(bytes(&ky)));
        let n = |c: &str| want.iter().filter(|w| w.1 == c).count() as u64;
        for c in ["created", "deleted", "changed", "recreated"] {
            assert_eq!(v["total"][c].as_u64(), Some(n(c)), "{c}");
        }
    }
    // The first pair differs (the demo writes all the time).
    let (_, a) = key_list(&file, "+15s");
    let (_, b) = key_list(&file, "-5s");
    assert!(!expected(&a, &b).is_empty());
    // The recording against itself, each at its end.
    let v = diff_json(&[f, f], 0);
    assert_eq!(v["identical"], true);
    assert_eq!(v["from"]["revision"], whole["revision"]);
}

#[test]
fn report_and_diff_compare_two_moments_alike() {
    let file = demo_recording();
    let f = file.to_str().unwrap();
    let whole = report_json(&file, &[], 0);
    let start = whole["times"][0].as_i64().unwrap();
    let at = |secs: i64| {
        humantime::format_rfc3339_millis(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs as u64),
        )
        .to_string()
    };
    let (from, to) = (at(start + 20), at(start + 50));
    let r = report_json(&file, &["--from", &from, "--to", &to], 0);
    let d = diff_json(&[f, "--at", &from, "--at", &to], 1);
    let c = &r["changes"];
    assert_eq!(c["from_revision"], d["from"]["revision"]);
    assert_eq!(c["to_revision"], d["to"]["revision"]);
    assert_eq!(c["per_resource"], d["per_resource"]);
    assert_eq!(c["total"], d["total"]);
    assert!(c["total"]["changed"].as_u64().unwrap() > 0, "{c}");
}
