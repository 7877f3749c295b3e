//! `regscope analyze` without etcd: a recording (`recordings/demo.rgs`) against what
//! `snapshot --json --from` prints for its end, the golden data's etcd db file (auger's)
//! against its known keys, and files that are neither, or damaged: one line, exit 2.
//! A db file real etcd wrote is analysed in `tests/etcd/analyze.rs`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::require;
use crate::common::snapshot_cli::{run, s, stderr};

fn demo() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/recordings/demo.rgs").to_string()
}

fn json(args: &[&str]) -> Value {
    let o = run(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn a_recording_is_analysed_at_its_end_as_snapshot_sees_it() {
    let file = demo();
    let a = json(&["analyze", &file, "--json", "--top", "3"]);
    let snap = json(&["snapshot", "--json", "--from", &file]);
    assert_eq!(a["kind"], "recording");
    assert_eq!(a["revision"], snap["revision"]);
    assert_eq!(a["compacted"], snap["compact_revision"]);
    assert_eq!(a["damage"].as_array().map(Vec::len), Some(0));
    // Live keys and bytes per resource: the snapshot's summary of the same moment.
    let want: BTreeMap<String, (u64, u64)> = snap["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| u(&r["keys"]) > 0)
        .map(|r| {
            (
                r["resource"].as_str().unwrap().to_string(),
                (u(&r["keys"]), u(&r["bytes"])),
            )
        })
        .collect();
    let got: BTreeMap<String, (u64, u64)> = a["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| u(&r["live_keys"]) > 0)
        .map(|r| {
            (
                r["resource"].as_str().unwrap().to_string(),
                (u(&r["live_keys"]), u(&r["live_bytes"])),
            )
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(u(&a["all_keys"]["live_keys"]), u(&snap["keys"]));
    assert_eq!(u(&a["history_bytes"]), u(&snap["history_bytes"]));
    for list in ["largest", "most_revisions", "namespaces"] {
        assert!(a[list].as_array().unwrap().len() <= 3, "{list}");
    }
    // The tables say the same, aligned.
    let o = run(&["analyze", &file]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("a recording: what its session held at its end"),
        "{text}"
    );
    let top = &a["resources"][0];
    let row = text
        .lines()
        .find(|l| {
            l.trim_start()
                .starts_with(&format!("{} ", top["resource"].as_str().unwrap()))
        })
        .unwrap_or_else(|| panic!("no row for {top} in:\n{text}"));
    assert!(
        row.contains(&regscope::derive::units::thousands(u(&top["revisions"]))),
        "{row}"
    );
    // KEYS (every key held, live or deleted) stands before LIVE KEYS, and VER/KEY is
    // VERSIONS / KEYS, as in a db file's table and as the line under it says.
    let cells: Vec<&str> = row.split_whitespace().collect();
    let thousands = regscope::derive::units::thousands;
    assert_eq!(cells[1], thousands(u(&top["keys"])), "{row}");
    assert_eq!(cells[2], thousands(u(&top["live_keys"])), "{row}");
    let per_key = u(&top["revisions"]) as f64 / u(&top["keys"]) as f64;
    assert_eq!(cells[cells.len() - 2], format!("{per_key:.1}"), "{row}");
    assert!(
        text.contains("(KEYS: every key with a version the replica holds, live or deleted; VER/KEY: VERSIONS / KEYS"),
        "{text}"
    );
}

#[test]
fn the_golden_db_file_is_analysed_by_content() {
    require!(TESTDATA);
    let db = crate::common::fixtures::testdata().join("etcd-registry/auger/boltdb/db");
    let a = json(&["analyze", s(&db), "--json"]);
    assert_eq!(a["kind"], "etcd_db");
    assert_eq!(u(&a["all_keys"]["live_keys"]), 4, "keys.txt lists four");
    assert_eq!(u(&a["outside_prefix"]["keys"]), 1, "compact_rev_key");
    let resources: Vec<&str> = a["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["resource"].as_str().unwrap())
        .collect();
    assert_eq!(
        resources,
        ["pods", "jobs", "namespaces"],
        "by retained bytes"
    );
    assert_eq!(a["quota"]["default"], true);
    // A different prefix puts every key outside it.
    let other = json(&["analyze", s(&db), "--json", "--prefix", "/kubernetes.io"]);
    assert_eq!(u(&other["outside_prefix"]["keys"]), 4);
    assert_eq!(other["resources"].as_array().map(Vec::len), Some(0));
}

#[test]
fn files_neither_db_nor_recording_or_damaged_are_one_line_and_exit_2() {
    require!(TESTDATA);
    let dir = tempfile::tempdir().unwrap();
    let db =
        std::fs::read(crate::common::fixtures::testdata().join("etcd-registry/auger/boltdb/db"))
            .unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not etcd, not a recording\n").unwrap();
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "").unwrap();
    let cut = dir.path().join("cut.db");
    std::fs::write(&cut, &db[..3 * 4096]).unwrap();
    // The metas stand; the pages under them are noise.
    let mut noise = db.clone();
    for b in &mut noise[2 * 4096..] {
        *b = 0x5A;
    }
    let garbled = dir.path().join("garbled.db");
    std::fs::write(&garbled, &noise).unwrap();
    let missing = dir.path().join("missing.db");
    for (p, want) in [
        (&text, "nor an etcd db file"),
        (&empty, "nor an etcd db file"),
        (&cut, "cut short"),
        (&garbled, "corrupt"),
        (&missing, "missing.db: no such file or directory"),
    ] {
        let o = run(&["analyze", s(p)]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{}: {err}", p.display());
        assert_eq!(err.lines().count(), 1, "{}: {err}", p.display());
        assert!(err.contains(want), "{want:?} in {err}");
        assert!(o.stdout.is_empty(), "{}", p.display());
    }
}

/// etcd's db file whose two meta pages are destroyed (its first 8 KiB zeroed) is neither a
/// recording nor a db file any reader can open: every command taking either says both, in
/// one line, and exits 2.
#[test]
fn a_db_file_without_its_meta_pages_is_neither_whatever_the_command() {
    require!(TESTDATA);
    let dir = tempfile::tempdir().unwrap();
    let mut db =
        std::fs::read(crate::common::fixtures::testdata().join("etcd-registry/auger/boltdb/db"))
            .unwrap();
    db[..8192].fill(0);
    let path = dir.path().join("zeroed.db");
    std::fs::write(&path, &db).unwrap();
    let p = s(&path);
    let out = dir.path().join("report.html");
    let want = format!(
        "regscope: {p}: not a regscope recording, nor an etcd db file (no valid bbolt meta page)"
    );
    for args in [
        vec!["replay", "--check", p],
        vec!["replay", p],
        vec!["snapshot", "--json", "--from", p],
        vec!["analyze", p],
        vec!["export", p],
        vec!["diff", p, p],
        vec!["report", p, "-o", s(&out)],
    ] {
        let o = run(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end(), want, "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}

/// A path that is not there, given to any command that takes a recording or a db file:
/// one line saying it does not exist, naming it once, and not what it was meant to be.
#[test]
fn a_missing_path_says_it_does_not_exist_whatever_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    let in_missing_dir = dir.path().join("gone").join("snapshot.db");
    for path in [&missing, &in_missing_dir] {
        let p = s(path);
        for args in [
            vec!["analyze", p],
            vec!["replay", p],
            vec!["replay", "--check", p],
            vec!["export", p],
            vec!["diff", p, "--at", "r1", "--at", "r2"],
            vec!["diff", p, p],
            vec!["snapshot", "--json", "--from", p],
            vec!["report", p, "-o", "-"],
        ] {
            let o = run(&args);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(
                err.contains(&format!("{p}: no such file or directory")),
                "{args:?}: {err}"
            );
            assert_eq!(err.matches(p).count(), 1, "{args:?}: {err}");
            assert!(!err.contains("recording"), "{args:?}: {err}");
            assert!(o.stdout.is_empty(), "{args:?}");
        }
    }
}
