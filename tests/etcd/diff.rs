//! `regscope diff` on etcd's own db file written by real etcd (`common::etcd_db`): for
//! pairs of revisions, the keys it says were created, deleted and changed, with their
//! bytes and revisions, are exactly what etcdctl's answers at the two revisions give; a
//! copy of the file compared with itself differs in nothing (exit 0); `--key` on a changed
//! Pod names a changed field whose two values are the decoded objects'; Secrets are
//! decrypted with `--encryption-config` and redacted unless `--show-secrets`; a compacted
//! or future revision, a missing file and a damaged file are each refused in one line
//! (exit 2). Two clusters that wrote other values at the same revisions differ by value; a
//! recording and a db file of one cluster agree, moment for moment.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::etcd_db::{self, DbFixture, Kv};
use crate::common::snapshot_cli::{run, s, stderr, BIN};
use crate::common::{output_within, require};

/// One key's change as `diff --json` lists it under `keys`.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Change {
    key: String,
    change: String,
    bytes_from: Option<u64>,
    bytes_to: Option<u64>,
    mod_revision_from: Option<i64>,
    mod_revision_to: Option<i64>,
}

/// The changes from revision `x` to `y` computed from etcdctl's answers: a key live at
/// one only is created or deleted; live at both, recreated when its create_revision
/// differs (deleted and put again in between), else changed when its value or
/// mod_revision differs.
fn expected(fx: &DbFixture, x: i64, y: i64) -> Vec<Change> {
    let map = |kvs: Vec<Kv>| -> BTreeMap<String, Kv> {
        kvs.into_iter().map(|kv| (kv.key.clone(), kv)).collect()
    };
    let (from, to) = (map(fx.kvs_at(x)), map(fx.kvs_at(y)));
    let keys: BTreeSet<&String> = from.keys().chain(to.keys()).collect();
    let mut out = Vec::new();
    for k in keys {
        let (a, b) = (from.get(k), to.get(k));
        let change = match (a, b) {
            (None, Some(_)) => "created",
            (Some(_), None) => "deleted",
            (Some(a), Some(b)) if a.create_revision != b.create_revision => "recreated",
            (Some(a), Some(b)) if a.mod_revision != b.mod_revision || a.value != b.value => {
                "changed"
            }
            _ => continue,
        };
        out.push(Change {
            key: k.clone(),
            change: change.into(),
            bytes_from: a.map(|kv| kv.value.len() as u64),
            bytes_to: b.map(|kv| kv.value.len() as u64),
            mod_revision_from: a.map(|kv| kv.mod_revision),
            mod_revision_to: b.map(|kv| kv.mod_revision),
        });
    }
    out
}

fn listed(v: &Value) -> Vec<Change> {
    let n = |x: &Value| x.as_u64();
    v["keys"]
        .as_array()
        .unwrap_or_else(|| panic!("no keys list: {v}"))
        .iter()
        .map(|k| Change {
            key: k["key"].as_str().expect("key").into(),
            change: k["change"].as_str().expect("change").into(),
            bytes_from: n(&k["bytes_from"]),
            bytes_to: n(&k["bytes_to"]),
            mod_revision_from: k["mod_revision_from"].as_i64(),
            mod_revision_to: k["mod_revision_to"].as_i64(),
        })
        .collect()
}

/// `regscope diff ARGS --json`, which must exit `code`; its JSON.
fn diff_json(args: &[&str], code: i32) -> Value {
    let mut all = vec!["diff"];
    all.extend_from_slice(args);
    all.push("--json");
    let out = run(&all);
    assert_eq!(out.status.code(), Some(code), "{all:?}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{all:?}: not JSON ({e}): {}", stderr(&out)))
}

fn diff(args: &[&str]) -> Output {
    let mut all = vec!["diff"];
    all.extend_from_slice(args);
    run(&all)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn diff_of_db_files_says_what_etcd_said() {
    require!(ETCD, ETCDCTL, TESTDATA);
    let fx = etcd_db::write_workload_and_snapshot();
    eprintln!(
        "db fixture: etcd {}, revisions {}..={}",
        fx.etcd_version, fx.compacted, fx.head
    );
    two_revisions_list_exactly_the_changed_keys(&fx);
    a_copy_differs_in_nothing(&fx);
    key_shows_the_fields_that_changed(&fx);
    a_key_deleted_and_created_again_is_recreated(&fx);
    secrets_are_decrypted_and_redacted(&fx);
    moments_outside_the_file_and_bad_files_are_refused(&fx);
}

fn two_revisions_list_exactly_the_changed_keys(fx: &DbFixture) {
    let db = s(&fx.db);
    let txn = fx.revision_of("txn ");
    let revoke = fx.revision_of("revoke lease");
    let pairs = [
        (fx.compacted, fx.head),
        (txn - 1, txn),
        (revoke - 1, revoke),
        (txn - 1, revoke),
        (fx.compacted, fx.compacted + 1),
        (fx.head, fx.compacted),
        (txn, txn),
    ];
    for (x, y) in pairs {
        let want = expected(fx, x, y);
        let (rx, ry) = (format!("r{x}"), format!("r{y}"));
        let code = if want.is_empty() { 0 } else { 1 };
        let v = diff_json(&[db, "--at", &rx, "--at", &ry], code);
        let got = listed(&v);
        assert_eq!(got, want, "diff r{x} r{y}");
        assert_eq!(v["identical"], Value::Bool(want.is_empty()));
        assert_eq!(v["from"]["revision"].as_i64(), Some(x));
        assert_eq!(v["to"]["revision"].as_i64(), Some(y));
        assert_eq!(v["from"]["kind"], "db_file");
        // Sizes: every live key's value bytes at each side, and what the changes add.
        let bytes_at = |rev: i64| {
            fx.kvs_at(rev)
                .iter()
                .map(|kv| kv.value.len() as u64)
                .sum::<u64>()
        };
        let t = &v["total"];
        let n = |f: &str| t[f].as_i64().unwrap_or_else(|| panic!("total.{f}: {t}"));
        assert_eq!(n("bytes_from"), bytes_at(x) as i64);
        assert_eq!(n("bytes_to"), bytes_at(y) as i64);
        assert_eq!(v["from"]["keys"].as_u64(), Some(fx.kvs_at(x).len() as u64));
        assert_eq!(v["to"]["keys"].as_u64(), Some(fx.kvs_at(y).len() as u64));
        let of = |what: &'static str| want.iter().filter(move |c| c.change == what);
        assert_eq!(n("created"), of("created").count() as i64);
        assert_eq!(n("deleted"), of("deleted").count() as i64);
        assert_eq!(n("changed"), of("changed").count() as i64);
        assert_eq!(n("recreated"), of("recreated").count() as i64);
        assert_eq!(
            n("bytes_created"),
            of("created")
                .map(|c| c.bytes_to.unwrap() as i64)
                .sum::<i64>()
        );
        assert_eq!(
            n("bytes_deleted"),
            of("deleted")
                .map(|c| c.bytes_from.unwrap() as i64)
                .sum::<i64>()
        );
        for (kind, field) in [
            ("changed", "bytes_changed_delta"),
            ("recreated", "bytes_recreated_delta"),
        ] {
            assert_eq!(
                n(field),
                of(kind)
                    .map(|c| c.bytes_to.unwrap() as i64 - c.bytes_from.unwrap() as i64)
                    .sum::<i64>()
            );
        }
        // Per resource: the keys' changes grouped by their resource.
        let mut per: BTreeMap<String, [i64; 4]> = BTreeMap::new();
        for k in v["keys"].as_array().unwrap() {
            let row = per
                .entry(k["resource"].as_str().unwrap().into())
                .or_default();
            row[["created", "deleted", "changed", "recreated"]
                .iter()
                .position(|c| k["change"] == *c)
                .unwrap()] += 1;
        }
        let rows: BTreeMap<String, [i64; 4]> = v["per_resource"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let c = |f: &str| r[f].as_i64().unwrap();
                (
                    r["resource"].as_str().unwrap().to_string(),
                    [c("created"), c("deleted"), c("changed"), c("recreated")],
                )
            })
            .collect();
        assert_eq!(rows, per, "diff r{x} r{y}: {}", v["per_resource"]);
        for c in &want {
            let path = c.key.trim_start_matches("/registry/");
            let resource = path.split('/').next().unwrap();
            assert!(
                per.contains_key(resource),
                "{} not under {resource}: {per:?}",
                c.key
            );
        }
        // The table for people says the same.
        let out = diff(&[db, "--at", &rx, "--at", &ry]);
        assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
        let text = stdout(&out);
        if want.is_empty() {
            assert!(text.contains("No differences"), "{text}");
        } else {
            let total = text
                .lines()
                .find(|l| l.starts_with("total "))
                .unwrap_or_else(|| panic!("no total row:\n{text}"));
            let cells: Vec<&str> = total.split_whitespace().collect();
            assert_eq!(cells[1], of("created").count().to_string(), "{total}");
            for c in &want {
                assert!(
                    text.lines().any(|l| l.contains(&c.key)
                        && l.trim_start().starts_with(match c.change.as_str() {
                            "created" => "+",
                            "deleted" => "-",
                            "recreated" => "±",
                            _ => "~",
                        })),
                    "{} {} not in the top list:\n{text}",
                    c.change,
                    c.key
                );
            }
        }
    }
    // Across the transaction: its three puts and its delete, all at one revision.
    let at_txn = expected(fx, txn - 1, txn);
    assert_eq!(at_txn.len(), 4, "{at_txn:?}");
    assert!(at_txn
        .iter()
        .any(|c| c.key == "/registry/pods/default/web-2" && c.change == "deleted"));
    // The revoke deletes the lease's two keys.
    let at_revoke = expected(fx, revoke - 1, revoke);
    assert_eq!(
        at_revoke
            .iter()
            .map(|c| c.change.as_str())
            .collect::<Vec<_>>(),
        ["deleted", "deleted"]
    );
}

fn a_copy_differs_in_nothing(fx: &DbFixture) {
    let copy = fx.dir.path().join("copy.db");
    std::fs::copy(&fx.db, &copy).expect("copy the db file");
    let (db, copy) = (s(&fx.db), s(&copy));
    let v = diff_json(&[db, copy], 0);
    assert_eq!(v["identical"], true);
    assert_eq!(v["keys"].as_array().map(Vec::len), Some(0));
    assert_eq!(v["from"]["revision"].as_i64(), Some(fx.head));
    assert_eq!(v["to"]["revision"].as_i64(), Some(fx.head));
    assert_eq!(
        v["to"]["keys"].as_u64(),
        Some(fx.kvs_at(fx.head).len() as u64)
    );
    let out = diff(&[db, copy]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("No differences"), "{}", stdout(&out));
    // Two files at two moments: what one file at the same two gives.
    let c = format!("r{}", fx.compacted);
    let one = diff_json(&[db, "--at", &c, "--at", "end"], 1);
    let two = diff_json(&[db, copy, "--at", &c, "--at", "end"], 1);
    assert_eq!(listed(&one), listed(&two));
    assert_eq!(one["total"], two["total"]);
    // Only keys under --prefix.
    let pods = diff_json(
        &[
            db,
            copy,
            "--at",
            &c,
            "--at",
            "end",
            "--prefix",
            "/registry/pods/",
        ],
        1,
    );
    let want: Vec<Change> = expected(fx, fx.compacted, fx.head)
        .into_iter()
        .filter(|k| k.key.starts_with("/registry/pods/"))
        .collect();
    assert!(!want.is_empty());
    assert_eq!(listed(&pods), want);
}

/// The value at a dotted path of plain field names (`spec.nodeName`); `None` when the
/// path has another form or is absent.
fn at_path<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, seg| {
        if seg.is_empty() || !seg.chars().all(|c| c.is_ascii_alphanumeric()) {
            return None;
        }
        v.get(seg)
    })
}

fn decoded(fx: &DbFixture, rev: i64, key: &str) -> Value {
    let kv = fx
        .kv_at(rev, key)
        .unwrap_or_else(|| panic!("{key} at r{rev}"));
    let d = regscope::decode::decode(
        &kv.value,
        &regscope::decode::DecodeOptions {
            show_secrets: false,
            etcd_key: key.as_bytes(),
            mod_revision: Some(kv.mod_revision),
            keyring: None,
            candidates: &[],
        },
    );
    d.value()
        .unwrap_or_else(|| panic!("{key} at r{rev} decodes: {:?}", d.error))
}

fn key_shows_the_fields_that_changed(fx: &DbFixture) {
    let web0 = "/registry/pods/default/web-0";
    // From the compaction to the first write of web-0 after it.
    let x = fx.compacted;
    let y = fx
        .steps
        .iter()
        .find(|st| st.revision > x && st.what.starts_with(&format!("put {web0} ")))
        .unwrap_or_else(|| panic!("no write of {web0} after the compaction: {:?}", fx.steps))
        .revision;
    let (rx, ry) = (format!("r{x}"), format!("r{y}"));
    let db = s(&fx.db);
    let v = diff_json(&[db, "--at", &rx, "--at", &ry, "--key", web0], 1);
    let kd = &v["key_diffs"][0];
    assert_eq!(kd["key"], web0);
    assert_eq!(kd["change"], "changed", "{kd}");
    assert_eq!(
        kd["from"]["mod_revision"].as_i64(),
        fx.kv_at(x, web0).map(|k| k.mod_revision)
    );
    assert_eq!(kd["to"]["mod_revision"].as_i64(), Some(y));
    let changes = kd["changes"].as_array().expect("changes");
    assert!(!changes.is_empty(), "{kd}");
    // Every change at a plain path is what the two decoded objects hold there: `~` two
    // values that differ, `+` a field only the newer has, `-` one only the older has.
    let (old, new) = (decoded(fx, x, web0), decoded(fx, y, web0));
    let mut checked = 0;
    for c in changes {
        let path = c["path"].as_str().expect("a path");
        assert!(
            !path.is_empty() && path != "metadata.resourceVersion",
            "{c}"
        );
        let plain = path
            .split('.')
            .all(|seg| !seg.is_empty() && seg.chars().all(|ch| ch.is_ascii_alphanumeric()));
        if !plain {
            continue;
        }
        let (o, n) = (at_path(&old, path), at_path(&new, path));
        match c["op"].as_str() {
            Some("~") => {
                assert_eq!((Some(&c["old"]), Some(&c["new"])), (o, n), "{path}");
                assert_ne!(o, n, "{path}");
            }
            Some("+") => assert_eq!((o, n), (None, Some(&c["value"])), "{path}"),
            Some("-") => assert_eq!((o, n), (Some(&c["value"]), None), "{path}"),
            op => panic!("op {op:?}: {c}"),
        }
        checked += 1;
    }
    assert!(checked > 0, "no change at a plain path to check: {kd}");
    // The table names the same fields.
    let out = diff(&[db, "--at", &rx, "--at", &ry, "--key", web0]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(&format!("--key {web0}: changed")), "{text}");
    let first = changes[0]["path"].as_str().unwrap();
    assert!(
        text.lines().any(|l| l
            .trim_start()
            .starts_with(&format!("{} {first}:", changes[0]["op"].as_str().unwrap()))),
        "{first} not in:\n{text}"
    );
    // A key the same on both sides, and one on neither.
    let ns = "/registry/namespaces/default";
    let v = diff_json(
        &[
            db,
            "--at",
            &rx,
            "--at",
            &ry,
            "--key",
            ns,
            "--key",
            "/registry/pods/none/nothing",
        ],
        1,
    );
    assert_eq!(v["key_diffs"][0]["change"], "unchanged");
    assert_eq!(v["key_diffs"][1]["change"], "absent");
}

/// The workload deletes `/registry/configmaps/default/app-config` after the compaction
/// and puts it again at the next revision: from the compaction to the head it is one key
/// with another object behind it, which etcd says by its create_revision.
fn a_key_deleted_and_created_again_is_recreated(fx: &DbFixture) {
    let key = "/registry/configmaps/default/app-config";
    let deleted = fx.revision_of(&format!("delete {key}"));
    let (before, after) = (
        fx.kv_at(fx.compacted, key).expect("live at the compaction"),
        fx.kv_at(fx.head, key).expect("live at the head"),
    );
    assert!(
        after.create_revision > deleted && before.create_revision < deleted,
        "{before:?} {after:?}"
    );
    let db = s(&fx.db);
    let c = format!("r{}", fx.compacted);
    let v = diff_json(&[db, "--at", &c, "--at", "end", "--key", key], 1);
    let listed = v["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .find(|k| k["key"] == key)
        .unwrap_or_else(|| panic!("{key} not listed: {v}"));
    assert_eq!(listed["change"], "recreated", "{listed}");
    assert_eq!(
        listed["create_revision_from"].as_i64(),
        Some(before.create_revision)
    );
    assert_eq!(
        listed["create_revision_to"].as_i64(),
        Some(after.create_revision)
    );
    let configmaps = v["per_resource"]
        .as_array()
        .expect("per_resource")
        .iter()
        .find(|r| r["resource"] == "configmaps")
        .unwrap_or_else(|| panic!("no configmaps row: {v}"));
    assert!(configmaps["recreated"].as_u64() >= Some(1), "{configmaps}");
    assert_eq!(v["key_diffs"][0]["change"], "recreated", "{v}");
    // Just before the delete and just after the put: recreated, not changed.
    let (x, y) = (format!("r{}", deleted - 1), format!("r{}", deleted + 1));
    let v = diff_json(&[db, "--at", &x, "--at", &y], 1);
    assert_eq!(v["total"]["recreated"], 1, "{v}");
    assert_eq!(v["total"]["changed"], 0, "{v}");
    // Across the delete alone: deleted, the plain case.
    let z = format!("r{deleted}");
    let v = diff_json(&[db, "--at", &x, "--at", &z], 1);
    assert_eq!(v["total"]["deleted"], 1, "{v}");
    assert_eq!(v["total"]["recreated"], 0, "{v}");
    // The table marks it and counts it in its own column.
    let out = diff(&[db, "--at", &c, "--at", "end"]);
    let text = stdout(&out);
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with(&format!("± {key}"))
                && l.contains(&format!("created again at r{}", after.create_revision))),
        "{text}"
    );
    assert!(text.contains("RECREATED"), "{text}");
}

fn secrets_are_decrypted_and_redacted(fx: &DbFixture) {
    let db = s(&fx.db);
    let c = format!("r{}", fx.compacted);
    let token = "/registry/secrets/default/api-token";
    let password = "/registry/secrets/default/db-password";
    let enc = s(&fx.encryption_config);
    // Without the keys: said, not guessed.
    let v = diff_json(&[db, "--at", &c, "--at", "end", "--key", token], 1);
    let kd = &v["key_diffs"][0];
    assert_eq!(kd["change"], "created");
    assert!(
        kd["error"].as_str().is_some_and(|e| e.starts_with("B: ")),
        "{kd}"
    );
    // With them: the Secret's fields appear, its data redacted.
    let v = diff_json(
        &[
            db,
            "--at",
            &c,
            "--at",
            "end",
            "--key",
            token,
            "--encryption-config",
            enc,
        ],
        1,
    );
    let kd = &v["key_diffs"][0];
    assert!(kd["error"].is_null(), "{kd}");
    let lines = kd["lines"].to_string();
    assert!(lines.contains("+ kind: \\\"Secret\\\""), "{lines}");
    assert!(lines.contains("redacted"), "{lines}");
    let shown = diff_json(
        &[
            db,
            "--at",
            &c,
            "--at",
            "end",
            "--key",
            token,
            "--encryption-config",
            enc,
            "--show-secrets",
        ],
        1,
    );
    let shown_lines = shown["key_diffs"][0]["lines"].to_string();
    assert!(!shown_lines.contains("redacted"), "{shown_lines}");
    assert!(shown_lines.contains("+ data:"), "{shown_lines}");
    // Rewritten under another IV, the same Secret: nothing but the revision differs.
    let v = diff_json(
        &[
            db,
            "--at",
            &c,
            "--at",
            "end",
            "--key",
            password,
            "--encryption-config",
            enc,
        ],
        1,
    );
    let kd = &v["key_diffs"][0];
    assert_eq!(kd["change"], "changed", "{kd}");
    assert!(kd["error"].is_null(), "{kd}");
    assert_eq!(kd["changes"].as_array().map(Vec::len), Some(0), "{kd}");
}

/// One line on stderr starting `regscope:`, exit 2.
fn refused(out: &Output) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("regscope: "), "{err}");
    assert!(out.stdout.is_empty(), "{}", stdout(out));
    err
}

fn moments_outside_the_file_and_bad_files_are_refused(fx: &DbFixture) {
    let db = s(&fx.db);
    let held = format!("holds revisions {} to {}", fx.compacted, fx.head);
    let below = format!("r{}", fx.compacted - 1);
    let err = refused(&diff(&[db, "--at", &below, "--at", "end"]));
    assert!(err.contains("compacted") && err.contains(&held), "{err}");
    let after = format!("r{}", fx.head + 1);
    let err = refused(&diff(&[db, "--at", "start", "--at", &after]));
    assert!(
        err.contains("after the file's head") && err.contains(&held),
        "{err}"
    );
    let err = refused(&diff(&[db, "--at", "14:30", "--at", "end"]));
    assert!(err.contains("revisions, not times"), "{err}");
    // One file needs two moments.
    let err = refused(&diff(&[db, "--at", "end"]));
    assert!(err.contains("--at twice"), "{err}");
    // A missing file, a truncated db file, a file of neither kind.
    let dir = fx.dir.path();
    let missing = dir.join("no-such.db");
    let err = refused(&diff(&[db, s(&missing)]));
    assert!(err.contains("no-such.db"), "{err}");
    let bytes = std::fs::read(&fx.db).expect("read the db file");
    let cut = dir.join("cut.db");
    std::fs::write(&cut, &bytes[..bytes.len() / 3]).expect("write");
    let err = refused(&diff(&[s(&cut), db]));
    assert!(err.contains("cut.db"), "{err}");
    let junk = dir.join("junk");
    std::fs::write(&junk, b"neither a db file nor a recording\n").expect("write");
    let err = refused(&diff(&[db, s(&junk)]));
    assert!(err.contains("junk"), "{err}");
    assert!(!Path::new(&missing).exists());
}

/// `etcdctl --endpoints E snapshot save FILE` (API v3, no `ETCDCTL_*` of the caller's).
pub(crate) fn snapshot_save(endpoint: &str, file: &Path) {
    let mut cmd = std::process::Command::new("etcdctl");
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("ETCDCTL_") {
            cmd.env_remove(name);
        }
    }
    cmd.env("ETCDCTL_API", "3")
        .args(["--endpoints", endpoint, "snapshot", "save", s(file)]);
    let out = output_within(&mut cmd, std::time::Duration::from_secs(30));
    assert!(out.status.success(), "snapshot save: {}", stderr(&out));
}

#[test]
fn two_clusters_at_the_same_revisions_differ_by_value() {
    require!(ETCD, ETCDCTL);
    let dir = tempfile::tempdir().expect("temp dir");
    let files = [dir.path().join("one.db"), dir.path().join("two.db")];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    // Each cluster writes the same keys in the same order, so at the same revisions;
    // only the value of `x` differs.
    for (i, file) in files.iter().enumerate() {
        let etcd = rt
            .block_on(regscope::demo::PrivateEtcd::start())
            .expect("start etcd");
        rt.block_on(async {
            let mut c = etcd.client().await.expect("etcd client");
            let x = format!(
                "{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"data\":{{\"n\":\"{i}\"}}}}"
            );
            for (key, value) in [
                ("/registry/configmaps/a/x", x.as_str()),
                (
                    "/registry/configmaps/a/y",
                    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}",
                ),
            ] {
                c.put(key, value, None).await.expect("put");
            }
        });
        snapshot_save(&etcd.endpoint(), file);
    }
    let v = diff_json(&[s(&files[0]), s(&files[1])], 1);
    let got = listed(&v);
    assert_eq!(
        got,
        [Change {
            key: "/registry/configmaps/a/x".into(),
            change: "changed".into(),
            bytes_from: Some(55),
            bytes_to: Some(55),
            mod_revision_from: Some(2),
            mod_revision_to: Some(2),
        }],
        "{v}"
    );
    let v = diff_json(
        &[
            s(&files[0]),
            s(&files[1]),
            "--key",
            "/registry/configmaps/a/x",
        ],
        1,
    );
    assert_eq!(
        v["key_diffs"][0]["lines"][0], "~ data.n: \"0\" → \"1\"",
        "{v}"
    );
    let notes = v["notes"].to_string();
    assert!(notes.contains("share no etcd member"), "{notes}");
    assert!(
        notes.contains("1 key at the same mod_revision on both sides with different values"),
        "{notes}"
    );
    // One file at two moments is one history: the same revision is the same value.
    let v = diff_json(&[s(&files[0]), "--at", "end", "--at", "r3"], 0);
    assert_eq!(v["identical"], true);
    assert_eq!(v["notes"], serde_json::json!([]), "{v}");
}

#[test]
fn two_clusters_are_said_and_no_key_is_recreated_between_them() {
    require!(ETCD, ETCDCTL);
    let dir = tempfile::tempdir().expect("temp dir");
    let files = [dir.path().join("one.db"), dir.path().join("two.db")];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let y = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}";
    for (i, file) in files.iter().enumerate() {
        let etcd = rt
            .block_on(regscope::demo::PrivateEtcd::start())
            .expect("start etcd");
        rt.block_on(async {
            let mut c = etcd.client().await.expect("etcd client");
            c.put("/registry/configmaps/a/y", y, None)
                .await
                .expect("put");
            // The first cluster deletes y and creates it again (at r4); the second
            // writes it once (at r2).
            if i == 0 {
                c.delete("/registry/configmaps/a/y", None)
                    .await
                    .expect("delete");
                c.put("/registry/configmaps/a/y", y, None)
                    .await
                    .expect("put");
            }
        });
        snapshot_save(&etcd.endpoint(), file);
    }
    // A copy of one file is the same cluster: no note, nothing differs.
    let copy = dir.path().join("copy.db");
    std::fs::copy(&files[0], &copy).expect("copy");
    let v = diff_json(&[s(&files[0]), s(&copy)], 0);
    assert_eq!(v["notes"], serde_json::json!([]), "{v}");
    let v = diff_json(&[s(&files[0]), s(&files[1])], 1);
    assert_eq!(
        listed(&v),
        [Change {
            key: "/registry/configmaps/a/y".into(),
            change: "changed".into(),
            bytes_from: Some(38),
            bytes_to: Some(38),
            mod_revision_from: Some(4),
            mod_revision_to: Some(2),
        }],
        "{v}"
    );
    assert_eq!(v["total"]["recreated"], 0, "{v}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("share no etcd member: they are not one cluster's history"),
        "{notes}"
    );
    let v = diff_json(
        &[
            s(&files[0]),
            s(&files[1]),
            "--key",
            "/registry/configmaps/a/y",
        ],
        1,
    );
    assert_eq!(v["key_diffs"][0]["change"], "changed", "{v}");
    // The text says it too (on stderr, with the other notes), and never "created again".
    let out = diff(&[s(&files[0]), s(&files[1])]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!stdout(&out).contains("created again"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("share no etcd member"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_recording_and_a_db_file_of_one_cluster_agree() {
    require!(ETCD, ETCDCTL);
    let dir = tempfile::tempdir().expect("temp dir");
    let (rec, db) = (dir.path().join("session.rgs"), dir.path().join("etcd.db"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let etcd = rt
        .block_on(regscope::demo::PrivateEtcd::start())
        .expect("start etcd");
    let mut client = rt.block_on(etcd.client()).expect("etcd client");
    let secret = "/registry/secrets/a/s1";
    let cm = |n: u32| {
        format!("{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"data\":{{\"n\":\"{n}\"}}}}")
    };
    let put = |c: &mut etcd_client::Client, k: &str, v: String| {
        rt.block_on(c.put(k, v, None)).expect("put");
    };
    // Before the recording: listed by it.
    put(&mut client, "/registry/configmaps/a/x", cm(0));
    put(&mut client, "/registry/configmaps/a/gone", cm(0));
    put(
        &mut client,
        secret,
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s1","namespace":"a"},"data":{"pw":"aHVudGVyMg=="}}"#.into(),
    );
    let home = tempfile::tempdir().expect("home");
    let mut recorder = std::process::Command::new(BIN)
        .args([
            "record",
            "-o",
            s(&rec),
            "--endpoints",
            &etcd.endpoint(),
            "--duration",
            "6s",
        ])
        .env_remove("KUBECONFIG")
        .env_remove("ETCDCTL_ENDPOINTS")
        .env("HOME", home.path())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start regscope record");
    crate::common::wait_until(
        "the recording's file",
        std::time::Duration::from_secs(20),
        || rec.metadata().is_ok_and(|m| m.len() > 0),
    );
    std::thread::sleep(std::time::Duration::from_secs(1));
    // While it records: watched.
    let listed_head = rt
        .block_on(client.get("/", None))
        .expect("get")
        .header()
        .expect("header")
        .revision();
    put(&mut client, "/registry/configmaps/a/x", cm(1));
    rt.block_on(client.delete("/registry/configmaps/a/gone", None))
        .expect("delete");
    put(&mut client, "/registry/configmaps/a/new", cm(2));
    let status = recorder.wait().expect("wait for the recorder");
    assert!(status.success(), "record: {status}");
    snapshot_save(&etcd.endpoint(), &db);
    drop(etcd);

    // Each at its end: the same keys, the redacted Secret compared by revision.
    let out = diff(&[s(&db), s(&rec)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("1 Secret at the same revision"), "{err}");
    let v = diff_json(&[s(&db), s(&rec), "--key", secret], 0);
    assert_eq!(v["identical"], true);
    assert_eq!(v["key_diffs"][0]["change"], "unchanged", "{v}");
    assert_eq!(v["to"]["kind"], "recording");
    assert_eq!(v["to"]["secrets_redacted"], true);
    // The same two revisions of either file: the same changes.
    let from = format!("r{listed_head}");
    let of_db = diff_json(&[s(&db), "--at", &from, "--at", "end"], 1);
    let of_rec = diff_json(&[s(&rec), "--at", &from, "--at", "end"], 1);
    assert_eq!(listed(&of_db), listed(&of_rec));
    let changes: Vec<(String, String)> = listed(&of_db)
        .into_iter()
        .map(|c| (c.key, c.change))
        .collect();
    assert_eq!(
        changes,
        [
            (
                "/registry/configmaps/a/gone".to_string(),
                "deleted".to_string()
            ),
            ("/registry/configmaps/a/new".into(), "created".into()),
            ("/registry/configmaps/a/x".into(), "changed".into()),
        ]
    );
    // A db file against a recording at those two moments.
    let across = diff_json(&[s(&db), s(&rec), "--at", &from, "--at", "end"], 1);
    assert_eq!(listed(&across), listed(&of_db));
}
