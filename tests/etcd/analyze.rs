//! `regscope analyze DB` on a backend file real etcd wrote (`common::etcd_db`), against what
//! etcd and etcdctl said about it: `etcdctl snapshot status` (hash, revision, totalKey as
//! that etcd version counts it, totalSize), the keys etcd returned at the head (live keys
//! and newest value bytes per resource, outside the prefix, per lease), and every readable
//! revision (the versions the file retains per key: each `(key, mod_revision)` etcd
//! returned at some revision from the compaction on, and each deletion after it). Also:
//! the tables for people, and a file that is not a db, or is cut short, is one line and
//! exit 2.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::common::etcd_db::{self, DbFixture};
use crate::common::require;
use crate::common::snapshot_cli::{run, s, stderr};

/// Per key under `/registry`: (versions retained, of which deletions), from `at`.
fn retained_from_answers(fx: &DbFixture) -> BTreeMap<String, (u64, u64)> {
    let mut versions: BTreeSet<(String, i64)> = BTreeSet::new();
    let mut deletes: BTreeMap<String, u64> = BTreeMap::new();
    let mut before: Option<BTreeSet<String>> = None;
    for rev in fx.compacted..=fx.head {
        let kvs = fx.kvs_at(rev);
        for kv in &kvs {
            versions.insert((kv.key.clone(), kv.mod_revision));
        }
        let now: BTreeSet<String> = kvs.into_iter().map(|kv| kv.key).collect();
        if let Some(b) = &before {
            for gone in b.difference(&now) {
                *deletes.entry(gone.clone()).or_default() += 1;
            }
        }
        before = Some(now);
    }
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (key, _) in versions {
        out.entry(key).or_default().0 += 1;
    }
    for (key, n) in deletes {
        let e = out.entry(key).or_default();
        e.0 += n;
        e.1 += n;
    }
    out
}

/// Per resource under `/registry`: (keys, newest value bytes) etcd returned at the head.
fn per_resource_at_head(fx: &DbFixture) -> BTreeMap<String, (u64, u64)> {
    let mut want: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for kv in fx.kvs_at(fx.head) {
        let r = regscope::model::KeyPath::parse(b"/registry", kv.key.as_bytes())
            .resource
            .into_owned();
        let e = want.entry(r).or_default();
        e.0 += 1;
        e.1 += kv.value.len() as u64;
    }
    want
}

fn analyze_json(fx: &DbFixture) -> Value {
    let o = run(&["analyze", s(&fx.db), "--json", "--top", "1000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("analyze --json prints JSON")
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn analyze_agrees_with_etcdctl_and_with_what_etcd_answered() {
    require!(ETCD, ETCDCTL, TESTDATA);
    let fx = etcd_db::write_workload_and_snapshot();
    let v = analyze_json(&fx);
    assert_eq!(v["kind"], "etcd_db");

    // `etcdctl snapshot status`: the same hash, revision, size, and totalKey as this
    // etcd's etcdctl counts it (3.4 and 3.5: every bucket's entries; 3.6: live keys).
    let st = &v["snapshot_status"];
    assert_eq!(st["hash"], fx.status["hash"], "{}", fx.status);
    assert_eq!(st["revision"], fx.status["revision"]);
    assert_eq!(st["total_size"], fx.status["totalSize"]);
    let total_key = if fx.etcd_version.starts_with("3.6.") {
        &st["live_keys"]
    } else {
        &st["total_entries"]
    };
    assert_eq!(
        total_key, &fx.status["totalKey"],
        "etcd {}",
        fx.etcd_version
    );

    // The file: etcd's SHA-256 after the pages, the figures adding up.
    let f = &v["file"];
    let len = std::fs::metadata(&fx.db).unwrap().len();
    assert_eq!(u(&f["file_bytes"]), len);
    assert_eq!(u(&f["trailer_bytes"]), 32);
    assert_eq!(u(&f["bbolt_bytes"]), u(&fx.status["totalSize"]));
    assert_eq!(
        u(&f["in_use_bytes"]) + u(&f["free_bytes"]),
        u(&f["bbolt_bytes"])
    );
    assert_eq!(
        u(&f["free_bytes"]),
        u(&f["free_pages"]) * u(&f["page_size"])
    );
    // etcd on Linux keeps no freelist in the file.
    assert_eq!(f["free_pages_from"], "unreached_pages");
    assert_eq!(v["quota"]["default"], true);
    assert_eq!(u(&v["quota"]["bytes"]), 2 << 30);

    assert_eq!(v["head"].as_i64(), Some(fx.head));
    assert_eq!(v["compaction"]["finished"].as_i64(), Some(fx.compacted));
    assert_eq!(v["compaction"]["interrupted"], false);
    assert_eq!(v["alarms"].as_array().map(Vec::len), Some(0));
    assert_eq!(v["members"].as_array().map(Vec::len), Some(1));
    assert_eq!(u(&v["lease_count"]), fx.leases.len() as u64);

    // Live keys and newest value bytes per resource: etcd's answer at the head.
    let want = per_resource_at_head(&fx);
    let rows = v["resources"].as_array().expect("resources");
    let got: BTreeMap<String, (u64, u64)> = rows
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
    assert!(rows
        .windows(2)
        .all(|w| u(&w[0]["retained_bytes"]) >= u(&w[1]["retained_bytes"])));

    // Keys outside /registry at the head: `/other/...` and `compact_rev_key`.
    let all = etcd_db::kvs(&fx.all_keys_at_head);
    let outside: Vec<_> = all
        .iter()
        .filter(|kv| !kv.key.starts_with("/registry/"))
        .collect();
    assert_eq!(u(&v["outside_prefix"]["live_keys"]), outside.len() as u64);
    assert_eq!(
        u(&v["outside_prefix"]["live_bytes"]),
        outside.iter().map(|kv| kv.value.len() as u64).sum::<u64>()
    );
    assert_eq!(u(&v["all_keys"]["live_keys"]), all.len() as u64);
    assert_eq!(u(&st["live_keys"]), all.len() as u64);

    // Retained versions per key: every version etcd returned from the compaction on, and
    // every deletion after it. With --top 1000 every key under the prefix is listed.
    let retained = retained_from_answers(&fx);
    let listed: BTreeMap<String, (u64, u64)> = v["most_revisions"]
        .as_array()
        .expect("most_revisions")
        .iter()
        .map(|k| {
            (
                k["key"].as_str().unwrap().to_string(),
                (u(&k["revisions"]), u(&k["tombstones"])),
            )
        })
        .collect();
    assert_eq!(listed, retained);
    let sum: u64 = retained.values().map(|r| r.0).sum();
    let under: u64 = rows.iter().map(|r| u(&r["revisions"])).sum();
    assert_eq!(under, sum);

    // The largest objects: etcd's values at the head, largest first.
    let head = fx.kvs_at(fx.head);
    for k in v["largest"].as_array().expect("largest") {
        let key = k["key"].as_str().unwrap();
        let kv = head.iter().find(|kv| kv.key == key).expect("a live key");
        assert_eq!(u(&k["bytes"]), kv.value.len() as u64, "{key}");
        assert_eq!(
            k["newest_revision"].as_i64(),
            Some(kv.mod_revision),
            "{key}"
        );
    }
    assert_eq!(
        v["largest"].as_array().map(Vec::len),
        Some(head.len()),
        "every live key under the prefix, with --top 1000"
    );

    // Leases: the kept one holds the keys etcdctl lease timetolive --keys listed.
    let leases = v["leases_by_keys"].as_array().expect("leases_by_keys");
    assert_eq!(leases.len(), fx.leases.len());
    for (id, ttl, keys) in &fx.leases {
        let row = leases
            .iter()
            .find(|l| l["id"].as_i64() == Some(*id))
            .unwrap_or_else(|| panic!("lease {id:x} missing: {leases:?}"));
        assert_eq!(row["ttl"].as_i64(), Some(*ttl));
        assert_eq!(u(&row["keys"]), keys.len() as u64);
    }

    // Fewer rows with --top, the same resources.
    let o = run(&["analyze", s(&fx.db), "--json", "--top", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let two: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(two["largest"].as_array().map(Vec::len), Some(2));
    assert_eq!(two["resources"], v["resources"]);

    the_tables_say_the_same(&fx, &v);
    bad_files_are_one_line_and_exit_2(&fx);
}

fn the_tables_say_the_same(fx: &DbFixture, v: &Value) {
    let o = run(&["analyze", s(&fx.db), "--quota-bytes", "1GiB"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    eprintln!("{text}");
    let hash = format!("hash {:x} ", u(&v["snapshot_status"]["hash"]));
    assert!(text.contains(&hash), "{hash:?} in:\n{text}");
    assert!(text.contains(&format!("revision {} ", fx.head)), "{text}");
    assert!(text.contains("then 32 B: the SHA-256"), "{text}");
    assert!(!text.contains("etcd's default quota"), "{text}");
    assert!(text.contains("of 1.0 GiB used"), "{text}");
    for section in [
        "Resources under /registry",
        "Largest objects",
        "Most retained revisions",
        "Leases by live keys attached",
        "Namespaces by retained bytes",
    ] {
        assert!(text.contains(section), "{section} in:\n{text}");
    }
    // Every resource is a row; the numeric columns line up on the right.
    let resources = &text[text.find("Resources under").expect("the resources table")..];
    let row = |name: &str| {
        resources
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row {name} in:\n{text}"))
            .to_string()
    };
    let (pods, leases) = (row("pods"), row("leases"));
    assert_eq!(pods.len(), leases.len(), "{pods}\n{leases}");
    revisions_per_key_counts_every_key_seen(fx, &text, row);
}

/// `KEYS` is every key with a revision in the file, live or deleted, and `REV/KEY` is
/// `REVISIONS / KEYS`, as the line under the table says: per resource, from etcd's answers
/// at every revision the file holds. `events` holds only a deleted key (its lease was
/// revoked): no live key, and still 2 revisions per key seen.
fn revisions_per_key_counts_every_key_seen(
    fx: &DbFixture,
    text: &str,
    row: impl Fn(&str) -> String,
) {
    let header = text
        .lines()
        .find(|l| l.trim_start().starts_with("RESOURCE "))
        .unwrap_or_else(|| panic!("no header in:\n{text}"));
    let names: Vec<&str> = header
        .split("  ")
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .collect();
    assert_eq!(
        names,
        [
            "RESOURCE",
            "KEYS",
            "LIVE KEYS",
            "LIVE BYTES",
            "RETAINED",
            "REVISIONS",
            "REV/KEY",
            "DELETES",
            "OF RETAINED"
        ],
        "{header}"
    );
    assert!(
        text.contains("(KEYS: every key with a revision in the file, live or deleted; REV/KEY: REVISIONS / KEYS"),
        "{text}"
    );
    let mut per: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    let live: BTreeSet<String> = fx.kvs_at(fx.head).into_iter().map(|kv| kv.key).collect();
    for (key, (revisions, _)) in retained_from_answers(fx) {
        let r = regscope::model::KeyPath::parse(b"/registry", key.as_bytes())
            .resource
            .into_owned();
        let e = per.entry(r).or_default();
        e.0 += 1;
        e.1 += u64::from(live.contains(&key));
        e.2 += revisions;
    }
    assert_eq!(per.get("events"), Some(&(1, 0, 2)), "{per:?}");
    for (resource, (keys, live_keys, revisions)) in &per {
        let line = row(resource);
        // Bytes are two words (`3.4 KiB`); the counts around them are one.
        let cells: Vec<&str> = line.split_whitespace().collect();
        let n = cells.len();
        assert_eq!(cells[1], keys.to_string(), "KEYS of {line}");
        assert_eq!(cells[2], live_keys.to_string(), "LIVE KEYS of {line}");
        assert_eq!(cells[n - 4], revisions.to_string(), "REVISIONS of {line}");
        assert_eq!(
            cells[n - 3],
            format!("{:.1}", *revisions as f64 / *keys as f64),
            "REV/KEY of {line}"
        );
    }
}

fn bad_files_are_one_line_and_exit_2(fx: &DbFixture) {
    let dir = fx.dir.path();
    let text = dir.join("not-a-db.txt");
    std::fs::write(&text, "hello, this is not etcd\n").unwrap();
    let cut = dir.join("cut.db");
    let bytes = std::fs::read(&fx.db).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let mut garbled = bytes.clone();
    // Page 2 onwards overwritten: the metas stand, the tree under them is noise.
    let ps = 4096.min(bytes.len() / 4);
    for b in &mut garbled[2 * ps..] {
        *b = 0xA5;
    }
    let garbled_path = dir.join("garbled.db");
    std::fs::write(&garbled_path, &garbled).unwrap();
    for (p, want) in [
        (&text, "not a regscope recording"),
        (&cut, "cut short"),
        (&garbled_path, "corrupt"),
    ] {
        let o = run(&["analyze", s(p)]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{}: {err}", p.display());
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.contains(want), "{want:?} in {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(o.stdout.is_empty());
    }
}

/// The value of an unlabelled metric in a Prometheus text body.
fn metric(body: &str, name: &str) -> u64 {
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("{name} not in etcd's /metrics")) as u64
}

/// A member's own file (`member/snap/db`, read after etcd is killed) that hit its quota:
/// the NOSPACE alarm is said, there is no trailer, and the size and the bytes in use are
/// what etcd's own metrics said just before (`etcd_mvcc_db_total_size_in_bytes` and
/// `..._in_use_in_bytes`), though the file keeps no freelist: free pages are the ones no
/// tree reaches. etcd still counts the pages its newest commit freed as in use until no
/// reader can see them; the file shows them free, so the two may differ by those few.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_members_own_file_says_nospace_and_etcds_own_sizes() {
    require!(ETCD);
    let quota = 1 << 20;
    let mut etcd =
        regscope::demo::PrivateEtcd::start_with(&[&format!("--quota-backend-bytes={quota}")])
            .await
            .expect("start etcd");
    let mut c = etcd.client().await.expect("client");
    let value = vec![b'x'; 16 * 1024];
    let mut n = 0;
    let full = loop {
        match c
            .put(
                format!("/registry/configmaps/ns/cm-{n:03}"),
                value.clone(),
                None,
            )
            .await
        {
            Ok(_) => n += 1,
            Err(e) => break e.to_string(),
        }
        assert!(
            n < 1000,
            "etcd took {n} values of 16 KiB under a 1 MiB quota"
        );
    };
    assert!(full.contains("database space exceeded"), "{full}");
    // Under NOSPACE etcd still deletes and compacts: half the keys go, their pages free.
    assert!(n > 8, "{n} values before NOSPACE");
    for i in (0..n).step_by(2) {
        c.delete(format!("/registry/configmaps/ns/cm-{i:03}"), None)
            .await
            .expect("delete under NOSPACE");
    }
    let head = c
        .get("x", None)
        .await
        .expect("get")
        .header()
        .unwrap()
        .revision();
    c.compact(
        head,
        Some(etcd_client::CompactionOptions::new().with_physical()),
    )
    .await
    .expect("compact");
    // etcd counts the pages a commit frees as in use until a later write transaction
    // begins with no reader left that could see them (bbolt's pending pages); its size
    // metrics are taken as each batch begins, every 100 ms while there are writes. Two
    // more deletes, apart, bring the metrics up to the compaction's frees.
    for i in [1, 3] {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        c.delete(format!("/registry/configmaps/ns/cm-{i:03}"), None)
            .await
            .expect("delete under NOSPACE");
    }
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let body = reqwest::get(format!("{}/metrics", etcd.endpoint()))
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics body");
    let size = metric(&body, "etcd_mvcc_db_total_size_in_bytes");
    let in_use = metric(&body, "etcd_mvcc_db_total_size_in_use_in_bytes");
    // etcd's own count of what is left: the loop's count once disagreed with the file
    // under etcd 3.5.1 with two test threads (cause not found), so the file is held to
    // what etcd says it holds.
    let live = c
        .get(
            "/registry/",
            Some(
                etcd_client::GetOptions::new()
                    .with_prefix()
                    .with_count_only(),
            ),
        )
        .await
        .expect("count the keys left")
        .count();
    assert!(live >= (n / 2 - 2) as i64, "{live} keys left of {n}");
    // Live, the alarm is read against the quota too: etcd's default would not have been
    // reached by a file this small, so the member's quota was lower; told the quota, the
    // analysis has nothing to add.
    let o = run(&["analyze", "--endpoints", &etcd.endpoint()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("NOSPACE is raised below it: the member's quota is evidently lower"),
        "{text}"
    );
    assert!(
        text.contains("alarms        NOSPACE: etcd accepts only reads"),
        "{text}"
    );
    let o = run(&[
        "analyze",
        "--endpoints",
        &etcd.endpoint(),
        "--quota-bytes",
        "1MiB",
    ]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(!text.contains("evidently lower"), "{text}");
    drop(c);
    etcd.kill().expect("kill etcd");

    let db = etcd.data_dir().join("member/snap/db");
    let o = run(&["analyze", s(&db), "--json", "--quota-bytes", "1MiB"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let alarms: Vec<&str> = v["alarms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["alarm"].as_str().unwrap())
        .collect();
    assert_eq!(alarms, ["NOSPACE"]);
    let f = &v["file"];
    assert_eq!(u(&f["trailer_bytes"]), 0, "a member's file has no trailer");
    assert_eq!(f["free_pages_from"], "unreached_pages");
    assert_eq!(u(&f["bbolt_bytes"]), size, "etcd's size");
    let ps = u(&f["page_size"]);
    let ours = u(&f["in_use_bytes"]);
    eprintln!(
        "member file: size {size}, etcd in use {in_use}, analyze in use {ours}, free pages {}",
        u(&f["free_pages"])
    );
    // The last commits' frees (seen 11 to 15 pages here) against hundreds of free pages.
    assert!(
        ours <= in_use && in_use - ours <= 32 * ps,
        "in use: etcd {in_use}, analyze {ours} (pages of {ps})"
    );
    assert!(
        u(&f["free_pages"]) >= 100,
        "half the values deleted and compacted: {f}"
    );
    assert_eq!(v["quota"]["default"], false);
    assert_eq!(u(&v["quota"]["bytes"]), quota);
    assert_eq!(u(&v["all_keys"]["live_keys"]), live as u64);
    // The tables say NOSPACE, loudly.
    let o = run(&["analyze", s(&db)]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("ALARM         NOSPACE: the quota was hit"),
        "{text}"
    );
    nospace_is_said_on_the_quota_line(&db, quota);
}

/// The quota line of a file whose member hit NOSPACE: the alarm said there; under etcd's
/// default quota assumed (not given, or `--quota-bytes 0`, which etcd reads as its default)
/// the file is far below it, so the member's quota was lower; under the member's own, not.
fn nospace_is_said_on_the_quota_line(db: &std::path::Path, quota: u64) {
    let quota_line = |args: &[&str]| {
        let mut all = vec!["analyze", s(db)];
        all.extend_from_slice(args);
        let o = run(&all);
        assert!(o.status.success(), "{all:?}: {}", stderr(&o));
        let text = String::from_utf8(o.stdout).unwrap();
        text.lines()
            .find(|l| l.trim_start().starts_with("quota "))
            .unwrap_or_else(|| panic!("no quota line in:\n{text}"))
            .to_string()
    };
    let raised =
        "a NOSPACE alarm is raised: the member's backend was at its quota when it was raised";
    let lower = "the member's quota was evidently lower (pass --quota-bytes)";
    for args in [&[][..], &["--quota-bytes", "0"][..]] {
        let line = quota_line(args);
        assert!(line.contains("of 2.0 GiB used"), "{args:?}: {line}");
        assert!(line.contains(raised), "{args:?}: {line}");
        assert!(line.contains(lower), "{args:?}: {line}");
    }
    assert!(
        quota_line(&["--quota-bytes", "0"]).contains("--quota-bytes 0 is etcd's default quota"),
    );
    let own = quota.to_string();
    let line = quota_line(&["--quota-bytes", &own]);
    assert!(line.contains(raised), "{line}");
    assert!(!line.contains(lower), "{line}");
    let o = run(&["analyze", s(db), "--json", "--quota-bytes", "0"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(u(&v["quota"]["bytes"]), 2 << 30, "{}", v["quota"]);
    assert_eq!(v["quota"]["default"], true);
    assert_eq!(v["quota"]["nospace_alarm"], true);
    assert_eq!(v["quota"]["below_quota_with_nospace"], true);
}

/// `regscope analyze --endpoints` on the etcd that wrote the fixture, while it is still up
/// (and read-only: the fixture checks that etcd's revision did not move): the keys and
/// newest value bytes per resource are etcd's at the head, the compaction is the one the
/// workload made, the member's file size is what `etcdctl endpoint status` says, every
/// live key's retained-version bounds hold the versions of its current life etcd answered
/// at the revisions from the compaction on (and are exact where the revisions decide
/// them), and the leases carry the keys `etcdctl lease timetolive --keys` listed.
#[test]
fn analyze_live_agrees_with_etcd_and_bounds_each_keys_retained_versions() {
    require!(ETCD, ETCDCTL, TESTDATA);
    let (fx, (json_out, text_out, status)) =
        etcd_db::write_workload_and_snapshot_then(|endpoint| {
            let j = run(&[
                "analyze",
                "--endpoints",
                endpoint,
                "--json",
                "--top",
                "1000",
            ]);
            let t = run(&["analyze", "--endpoints", endpoint]);
            let st = std::process::Command::new("etcdctl")
                .env("ETCDCTL_API", "3")
                .args(["--endpoints", endpoint, "endpoint", "status", "-w", "json"])
                .output()
                .expect("etcdctl endpoint status");
            (j, t, st)
        });
    assert!(json_out.status.success(), "{}", stderr(&json_out));
    let v: Value = serde_json::from_slice(&json_out.stdout).expect("JSON");
    assert_eq!(v["kind"], "live");
    assert_eq!(v["revision"].as_i64(), Some(fx.head));
    assert_eq!(v["compacted"].as_i64(), Some(fx.compacted));

    // The member's file: etcdctl's figures (nothing was written in between).
    let st: Value = serde_json::from_slice(&status.stdout).expect("endpoint status JSON");
    let st = &st[0]["Status"];
    assert_eq!(v["db_size"], st["dbSize"], "{st}");
    assert_eq!(v["db_size_in_use"], st["dbSizeInUse"], "{st}");
    assert_eq!(v["quota"]["from"], "default");

    // Keys and newest value bytes per resource: etcd's answer at the head.
    let head = fx.kvs_at(fx.head);
    let want = per_resource_at_head(&fx);
    let got: BTreeMap<String, (u64, u64)> = v["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                (u(&r["keys"]), u(&r["bytes"])),
            )
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(u(&v["all_keys"]["keys"]), head.len() as u64);

    // Every live key (--top 1000 lists them all): its bounds hold the versions of its
    // current life that etcd answered at some revision from the compaction on.
    let keys = v["largest"].as_array().expect("largest");
    assert_eq!(keys.len(), head.len());
    let mut exact = 0;
    let mut ranged = 0;
    for kv in &head {
        let row = keys
            .iter()
            .find(|k| k["key"] == kv.key.as_str())
            .unwrap_or_else(|| panic!("{} missing", kv.key));
        let mut versions = BTreeSet::new();
        for rev in fx.compacted..=fx.head {
            if let Some(x) = fx.kv_at(rev, &kv.key) {
                if x.create_revision == kv.create_revision {
                    versions.insert(x.mod_revision);
                }
            }
        }
        let n = versions.len() as u64;
        let (lo, hi) = (u(&row["retained_min"]), u(&row["retained_max"]));
        assert!(
            lo <= n && n <= hi,
            "{}: {n} retained, said {lo}..{hi}",
            kv.key
        );
        assert_eq!(row["version"].as_i64(), Some(kv.version));
        assert_eq!(row["mod_revision"].as_i64(), Some(kv.mod_revision));
        if kv.create_revision > fx.compacted || kv.mod_revision <= fx.compacted {
            assert_eq!((lo, hi), (n, n), "{}: exact here", kv.key);
            exact += 1;
        } else {
            ranged += 1;
        }
    }
    assert!(
        exact > 0 && ranged > 0,
        "the workload has both cases: {exact} exact, {ranged} ranged"
    );

    // Leases with keys: etcdctl's ids and key counts, TTLs asked.
    let leases = v["leases_by_keys"].as_array().expect("leases");
    let want: BTreeMap<String, u64> = fx
        .leases
        .iter()
        .filter(|(_, _, k)| k.iter().any(|k| k.starts_with("/registry/")))
        .map(|(id, _, k)| {
            (
                format!("{id:x}"),
                k.iter().filter(|k| k.starts_with("/registry/")).count() as u64,
            )
        })
        .collect();
    let got: BTreeMap<String, u64> = leases
        .iter()
        .map(|l| (l["id"].as_str().unwrap().to_string(), u(&l["keys"])))
        .collect();
    assert_eq!(got, want);
    for l in leases {
        assert_eq!(l["granted_ttl"].as_i64(), Some(etcd_db::LEASE_TTL), "{l}");
    }

    // The tables say what they leave out.
    assert!(text_out.status.success(), "{}", stderr(&text_out));
    let text = String::from_utf8(text_out.stdout).unwrap();
    assert!(text.contains("no history read"), "{text}");
    assert!(
        text.contains(&format!("compaction    at {}", fx.compacted)),
        "{text}"
    );
    assert!(text.contains("deleted keys"), "{text}");
}
