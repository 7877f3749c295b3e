//! etcd's own db file as regscope's input, against what etcd said: real etcd writes a
//! workload (creates, updates, deletes, a transaction, leases, a revoke, a compaction,
//! encrypted Secrets), `etcdctl get --prefix /registry --rev REV -w json` answers every
//! revision the compaction left, and `etcdctl snapshot save` writes the file under test
//! (`common::etcd_db`). For every one of those revisions, `snapshot --json --from DB --at
//! REV --keys` and the state `export DB` replays to agree with etcdctl; compacted and
//! future revisions are refused naming what the file holds; values decrypt with the
//! encryption config.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::Value;

use crate::common::etcd_db::{write_workload_and_snapshot, DbFixture, Kv};
use crate::common::require;
use crate::common::snapshot_cli::{run, s, stderr};

#[test]
fn a_db_file_reads_as_etcd_answered_at_every_revision() {
    require!(ETCD, ETCDCTL, TESTDATA);
    let fx = write_workload_and_snapshot();
    snapshot_at_every_revision(&fx);
    export_replays_every_revision(&fx);
    export_from_a_revision_says_that_revision(&fx);
    revisions_outside_the_file_are_refused(&fx);
    leases_and_meta(&fx);
    writes_and_times_are_not_stated(&fx);
    encrypted_values_decrypt(&fx);
    check_says_damage_wherever_the_file_is_damaged(&fx);
    bad_files_are_one_line_naming_the_path_once(&fx);
    a_prefix_without_keys_is_said_naming_the_prefixes_held(&fx);
}

/// `(key, create, mod, version, lease, bytes)` of each key, in key order.
type Row = (String, i64, i64, i64, i64, usize);

fn rows_of_etcd(kvs: &[Kv]) -> Vec<Row> {
    kvs.iter()
        .map(|kv| {
            (
                kv.key.clone(),
                kv.create_revision,
                kv.mod_revision,
                kv.version,
                kv.lease,
                kv.value.len(),
            )
        })
        .collect()
}

fn json(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "regscope failed: {}", stderr(out));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn snapshot_at_every_revision(fx: &DbFixture) {
    for rev in fx.compacted..=fx.head {
        let v = json(&run(&[
            "snapshot",
            "--json",
            "--keys",
            "--from",
            s(&fx.db),
            "--at",
            &format!("r{rev}"),
        ]));
        let got: Vec<Row> = v["key_list"]
            .as_array()
            .expect("key_list")
            .iter()
            .map(|k| {
                (
                    k["key"].as_str().unwrap().to_string(),
                    k["create_revision"].as_i64().unwrap(),
                    k["mod_revision"].as_i64().unwrap(),
                    k["version"].as_i64().unwrap(),
                    k["lease"].as_i64().unwrap(),
                    k["bytes"].as_u64().unwrap() as usize,
                )
            })
            .collect();
        assert_eq!(got, rows_of_etcd(&fx.kvs_at(rev)), "snapshot --at r{rev}");
        assert_eq!(v["revision"].as_i64(), Some(rev), "revision at r{rev}");
        assert_eq!(v["compact_revision"].as_i64(), Some(fx.compacted));
        assert_eq!(v["db_file"]["head"].as_i64(), Some(fx.head));
    }
    // Without --at: the head.
    let v = json(&run(&["snapshot", "--json", "--from", s(&fx.db)]));
    assert_eq!(v["revision"].as_i64(), Some(fx.head));
    assert_eq!(v["keys"].as_u64(), Some(fx.kvs_at(fx.head).len() as u64));
}

/// The export's lines replayed: the keys at `--from`, then each event applied in order;
/// after each revision the state equals etcd's at it, values included.
fn export_replays_every_revision(fx: &DbFixture) {
    let out = run(&["export", s(&fx.db), "--values", "--show-secrets"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut state: BTreeMap<String, Kv> = BTreeMap::new();
    let mut checked = Vec::new();
    let mut last_rev = fx.compacted;
    let check = |state: &BTreeMap<String, Kv>, rev: i64| {
        let want = fx.kvs_at(rev);
        let got: Vec<Kv> = state.values().cloned().collect();
        assert_eq!(
            rows_of_kv(&got),
            rows_of_kv(&want),
            "export state at r{rev}"
        );
        for (g, w) in got.iter().zip(&want) {
            assert!(g.value == w.value, "value of {} at r{rev}", w.key);
        }
    };
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let l: Value = serde_json::from_str(line).expect("a JSON line");
        let rev = l["revision"].as_i64().expect("revision on every line");
        if l["type"] == "event" && rev != last_rev {
            check(&state, last_rev);
            checked.push(last_rev);
            last_rev = rev;
        }
        let key = l["key"].as_str().unwrap().to_string();
        match (l["type"].as_str(), l["op"].as_str()) {
            (Some("event"), Some("delete")) => {
                assert!(state.remove(&key).is_some(), "delete of {key} not held");
                assert_eq!(l["mod_revision"].as_i64(), Some(rev));
            }
            (Some("list_item"), _) | (Some("event"), Some("put")) => {
                let value = base64::engine::general_purpose::STANDARD
                    .decode(l["value"].as_str().expect("value with --values"))
                    .unwrap();
                let kv = Kv {
                    key: key.clone(),
                    value,
                    create_revision: l["create_revision"].as_i64().unwrap(),
                    mod_revision: l["mod_revision"].as_i64().unwrap(),
                    version: l["version"].as_i64().unwrap(),
                    lease: l["lease"].as_i64().unwrap(),
                };
                state.insert(key, kv);
            }
            other => panic!("unexpected line {other:?}: {line}"),
        }
    }
    check(&state, last_rev);
    checked.push(last_rev);
    // Every revision that wrote under /registry was checked right after it.
    let writes: Vec<i64> = (fx.compacted + 1..=fx.head)
        .filter(|r| rows_of_kv(&fx.kvs_at(*r)) != rows_of_kv(&fx.kvs_at(r - 1)))
        .collect();
    for w in &writes {
        assert!(
            checked.contains(w),
            "r{w} was not an event revision: {checked:?}"
        );
    }
    assert!(writes.len() >= 8, "the workload wrote at {writes:?}");
    // Secrets without --show-secrets: no value.
    let out = run(&[
        "export",
        s(&fx.db),
        "--values",
        "--prefix",
        "/registry/secrets/",
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.is_empty());
    for line in text.lines() {
        let l: Value = serde_json::from_str(line).unwrap();
        assert_eq!(l["value"], Value::Null, "{line}");
        assert!(l["op"] == "delete" || l["value_redacted"] == true, "{line}");
    }
}

/// `export --from rN`: the list items are etcd's keys at N, each saying it starts there
/// (`"from": N`), and `--from start` names the compaction's revision the same way.
fn export_from_a_revision_says_that_revision(fx: &DbFixture) {
    let txn = fx.revision_of("txn ");
    for (flag, rev) in [
        (format!("r{txn}"), txn),
        ("start".to_string(), fx.compacted),
    ] {
        let out = run(&["export", s(&fx.db), "--from", &flag]);
        assert!(out.status.success(), "--from {flag}: {}", stderr(&out));
        let lines: Vec<Value> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        let listed: Vec<&Value> = lines.iter().filter(|l| l["type"] == "list_item").collect();
        let keys: Vec<&str> = listed.iter().map(|l| l["key"].as_str().unwrap()).collect();
        let want: Vec<String> = fx.kvs_at(rev).into_iter().map(|kv| kv.key).collect();
        assert_eq!(keys, want, "--from {flag}");
        for l in &listed {
            assert_eq!(l["from"].as_i64(), Some(rev), "--from {flag}: {l}");
            assert_eq!(l["revision"].as_i64(), Some(rev), "--from {flag}: {l}");
        }
        assert!(
            lines
                .iter()
                .filter(|l| l["type"] == "event")
                .all(|l| l["revision"].as_i64() > Some(rev)),
            "--from {flag}: an event at or before r{rev}"
        );
    }
}

fn rows_of_kv(kvs: &[Kv]) -> Vec<Row> {
    rows_of_etcd(kvs)
}

fn revisions_outside_the_file_are_refused(fx: &DbFixture) {
    for (at, says) in [
        (format!("r{}", fx.compacted - 1), "compacted"),
        ("r1".to_string(), "compacted"),
        (format!("r{}", fx.head + 1), "after the file's head"),
        ("12:00".to_string(), "holds revisions, not times"),
    ] {
        let out = run(&["snapshot", "--json", "--from", s(&fx.db), "--at", &at]);
        assert_eq!(out.status.code(), Some(2), "--at {at}");
        let e = stderr(&out);
        assert!(e.contains(says), "--at {at}: {e}");
        assert!(
            e.contains(&format!("revisions {} to {}", fx.compacted, fx.head)),
            "--at {at} names what the file holds: {e}"
        );
        assert!(out.stdout.is_empty());
    }
    let out = run(&[
        "export",
        s(&fx.db),
        "--from",
        &format!("r{}", fx.compacted - 1),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("compacted"), "{}", stderr(&out));
    // The report charts time, which a db file does not keep: refused, pointing elsewhere.
    let html = fx.dir.path().join("report.html");
    let out = run(&["report", s(&fx.db), "-o", s(&html)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("regscope analyze"),
        "{}",
        stderr(&out)
    );
    assert!(!html.exists());
}

fn leases_and_meta(fx: &DbFixture) {
    let v = json(&run(&["snapshot", "--json", "--from", s(&fx.db)]));
    let leases = v["db_file"]["leases"].as_array().expect("leases");
    let got: Vec<(i64, i64)> = leases
        .iter()
        .map(|l| (l["id"].as_i64().unwrap(), l["ttl"].as_i64().unwrap()))
        .collect();
    let want: Vec<(i64, i64)> = fx.leases.iter().map(|(id, ttl, _)| (*id, *ttl)).collect();
    assert_eq!(got, want);
    // The keys attached to each lease at the head, as etcd names them.
    let keys = v["key_list"].as_array().map(Vec::len);
    assert!(keys.is_none(), "no key list without --keys");
    let with_keys = json(&run(&["snapshot", "--json", "--keys", "--from", s(&fx.db)]));
    for (id, _, lease_keys) in &fx.leases {
        let mut held: Vec<&str> = with_keys["key_list"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|k| k["lease"].as_i64() == Some(*id))
            .map(|k| k["key"].as_str().unwrap())
            .collect();
        held.sort();
        let want: Vec<&str> = lease_keys
            .iter()
            .map(String::as_str)
            .filter(|k| k.starts_with("/registry"))
            .collect();
        assert_eq!(held, want, "keys of lease {id:x}");
    }
    assert_eq!(v["db_file"]["compacted"].as_i64(), Some(fx.compacted));
    assert_eq!(
        v["db_file"]["members"].as_array().map(Vec::len),
        Some(1),
        "one member"
    );
}

/// A list at one revision observes no writes and a db file keeps no times: `snapshot
/// --json --from DB` states neither as 0 or as the file's time. The write counts are
/// `null`, the write signals absent (the others there), and the finished compaction has
/// no `at`, at the head and at a revision inside the retained history.
fn writes_and_times_are_not_stated(fx: &DbFixture) {
    // The file does hold writes after its compaction: 0 would be a wrong answer.
    assert!(fx.head > fx.compacted + 1, "{} {}", fx.head, fx.compacted);
    let middle = format!("r{}", (fx.compacted + fx.head) / 2);
    for at in [None, Some(middle.as_str())] {
        let mut args = vec!["snapshot", "--json", "--from", s(&fx.db)];
        args.extend(at.map(|a| ["--at", a]).into_iter().flatten());
        let v = json(&run(&args));
        let resources = v["resources"].as_array().expect("resources");
        assert!(!resources.is_empty(), "{at:?}: {v:#}");
        for r in resources {
            assert!(r["keys"].as_u64().is_some(), "{at:?}: {r}");
            assert!(r["puts"].is_null(), "{at:?}: {r}");
            assert!(r["deletes"].is_null(), "{at:?}: {r}");
        }
        assert!(v["writers"].is_null(), "{at:?}: {}", v["writers"]);
        let signals = v["signals"].as_object().expect("signals");
        for name in ["writes_total", "written_bytes_total", "writer_writes_total"] {
            assert!(
                !signals.contains_key(name),
                "{at:?}: {name} {}",
                signals[name]
            );
        }
        assert!(signals.contains_key("keys"), "{at:?}: {:?}", signals.keys());
        let compactions = v["compactions"].as_array().expect("compactions");
        assert!(
            compactions
                .iter()
                .any(|c| c["revision"].as_i64() == Some(fx.compacted)),
            "{at:?}: {compactions:?}"
        );
        for c in compactions {
            assert_eq!(c["source"], "db_file", "{at:?}: {c}");
            assert!(c["at"].is_null(), "{at:?}: {c}");
        }
    }
}

fn encrypted_values_decrypt(fx: &DbFixture) {
    let decoded = |extra: &[&str]| -> BTreeMap<String, Value> {
        let mut args = vec![
            "export",
            s(&fx.db),
            "--decode",
            "--prefix",
            "/registry/secrets/",
            "--from",
            "end",
        ];
        args.extend_from_slice(extra);
        let out = run(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                (v["key"].as_str().unwrap().to_string(), v)
            })
            .collect()
    };
    let with = decoded(&[
        "--encryption-config",
        s(&fx.encryption_config),
        "--show-secrets",
    ]);
    for key in [
        "/registry/secrets/default/db-password",
        "/registry/secrets/default/api-token",
    ] {
        let l = &with[key];
        assert_eq!(l["decode_error"], Value::Null, "{key}: {l}");
        assert_eq!(l["object"]["kind"], "Secret", "{key}: {l}");
        assert!(l["object"]["data"].is_object(), "{key} decrypted: {l}");
    }
    assert_eq!(
        with["/registry/secrets/default/db-password"]["encryption"]["provider"],
        "aescbc:key1"
    );
    assert_eq!(
        with["/registry/secrets/default/api-token"]["encryption"]["provider"],
        "secretbox:key2"
    );
    // Without the config: said encrypted and not opened, no object.
    let without = decoded(&["--show-secrets"]);
    let l = &without["/registry/secrets/default/db-password"];
    assert_eq!(l["object"], Value::Null, "{l}");
    assert_eq!(l["encryption"]["decrypted"], false, "{l}");
    assert_eq!(l["encryption"]["provider"], "aescbc:key1", "{l}");
}

/// `replay --check DB` walks every page and prints what `etcdctl snapshot status` prints
/// for the same file (hash, entries as etcd 3.4/3.5 count them, size); `replay DB` opens
/// the console over the file's history in tmux, paused at its finished compaction, and
/// seeks to revisions across it, each showing etcd's state at that revision; quitting
/// removes the temporary recording it read through.
#[test]
fn the_console_opens_a_db_file_and_seeks_its_revisions() {
    require!(ETCD, ETCDCTL, TESTDATA, TMUX);
    use crate::common::tmux::Tmux;
    use std::time::Duration;
    let fx = write_workload_and_snapshot();

    let out = run(&["replay", "--check", s(&fx.db)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let status = &fx.status;
    for want in [
        format!("hash       {}", status["hash"]),
        format!("entries    {} in all buckets", status["totalKey"]),
        format!("size       {} bytes of pages", status["totalSize"]),
        format!("revisions  {} .. {}", fx.compacted, fx.head),
        "damage     none".to_string(),
    ] {
        assert!(
            text.contains(&want),
            "replay --check lacks {want:?}:\n{text}"
        );
    }
    assert!(text.contains("SHA-256 of the pages matches"), "{text}");
    // One byte changed inside a value: every page still parses, but the digest etcdctl
    // appended no longer matches (etcdctl snapshot restore refuses such a file).
    let mut bytes = std::fs::read(&fx.db).unwrap();
    let at = bytes
        .windows(8)
        .position(|w| w == b"web-0\x12\x00\x1a")
        .or_else(|| bytes.windows(5).position(|w| w == b"web-0"))
        .expect("a value naming web-0");
    bytes[at + 2] ^= 0x20;
    let flipped = fx.dir.path().join("flipped.db");
    std::fs::write(&flipped, &bytes).unwrap();
    let out = run(&["replay", "--check", s(&flipped)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(t.contains("does not match the pages"), "{t}");
    // The free pages, as `analyze` counts them (the pages no tree reaches: etcd keeps no
    // freelist in the file).
    let a = json(&run(&["analyze", s(&fx.db), "--json"]));
    let free = a["file"]["free_pages"].as_u64().expect("free_pages");
    assert!(
        text.contains(&format!("free pages {free} (")),
        "replay --check and analyze disagree on free pages ({free}):\n{text}"
    );

    let tmp = tempfile::tempdir().unwrap();
    let t = Tmux::start(
        140,
        40,
        &format!(
            "TMPDIR={} {} replay {}",
            tmp.path().display(),
            crate::common::snapshot_cli::BIN,
            fx.db.display()
        ),
    );
    let screen = t.wait_for("the console over the file", Duration::from_secs(30), |s| {
        s.contains("REPLAY") && s.contains("db file")
    });
    assert!(
        screen.contains(&format!("rev {}", fx.compacted)),
        "opens at the finished compaction:\n{screen}"
    );
    assert!(
        screen.contains("keeps no times"),
        "says times are unknown:\n{screen}"
    );
    // The temporary recording lives under TMPDIR while the console is open.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    let txn = fx.revision_of("txn");
    for rev in [fx.head, fx.compacted + 1, txn, txn - 1] {
        t.keys(&["t"]);
        t.wait_for("the seek prompt", Duration::from_secs(5), |s| {
            s.contains("seek to")
        });
        t.text(&format!("r{rev}"));
        t.keys(&["Enter"]);
        let keys = fx.kvs_at(rev).len();
        let screen = t.wait_for(&format!("r{rev}"), Duration::from_secs(10), |s| {
            s.contains(&format!("rev {rev} ")) && s.contains(&format!("keys {keys} "))
        });
        assert!(!screen.contains("FAILED"), "{screen}");
    }
    // A compacted revision is refused, naming the file's compaction.
    t.keys(&["t"]);
    t.wait_for("the seek prompt", Duration::from_secs(5), |s| {
        s.contains("seek to")
    });
    t.text(&format!("r{}", fx.compacted - 2));
    t.keys(&["Enter"]);
    let screen = t.wait_for("the refusal", Duration::from_secs(10), |s| {
        s.contains(&format!("revision {} is compacted", fx.compacted - 2))
    });
    assert!(
        screen.contains(&format!(
            "the file holds revisions {} .. {}",
            fx.compacted, fx.head
        )),
        "{screen}"
    );
    t.keys(&["Escape", "q"]);
    crate::common::wait_until("replay quits", Duration::from_secs(15), || t.pane_dead());
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "the temporary recording is removed on quit"
    );
}

/// The revision the db console's timeline row shows the cursor at (` rN of HEAD `), if
/// the screen has that row.
fn timeline_revision(screen: &str, head: i64) -> Option<i64> {
    let line = screen.lines().find(|l| l.contains(" rev/s "))?;
    let end = line.find(&format!(" of {head} "))?;
    let start = line[..end].rfind(" r")? + 2;
    line[start..end].parse().ok()
}

/// `replay DB` in tmux runs its timeline over the file's revisions: it opens at the
/// finished compaction (`rC of HEAD`, `compacted at rC`), the seek prompt names
/// revisions and takes `rN`, `start` (the finished compaction, with its keys) and `end`
/// (the head); a time typed is refused as one; play steps through the revisions one by
/// one (one a second at 1 rev/s, none skipped) and, faster, stops paused at the head.
#[test]
fn the_db_console_plays_and_seeks_over_revisions() {
    require!(ETCD, ETCDCTL, TESTDATA, TMUX);
    use crate::common::tmux::Tmux;
    use std::time::{Duration, Instant};
    let fx = write_workload_and_snapshot();
    let (c, head) = (fx.compacted, fx.head);
    assert!(head - c >= 4, "the workload writes after its compaction");
    let tmp = tempfile::tempdir().unwrap();
    let t = Tmux::start(
        160,
        40,
        &format!(
            "TMPDIR={} {} replay {}",
            tmp.path().display(),
            crate::common::snapshot_cli::BIN,
            fx.db.display()
        ),
    );
    let screen = t.wait_for("the console over the file", Duration::from_secs(30), |s| {
        timeline_revision(s, head).is_some()
    });
    assert_eq!(timeline_revision(&screen, head), Some(c), "{screen}");
    assert!(screen.contains(&format!("compacted at r{c}")), "{screen}");
    assert!(screen.contains("⏸ 1 rev/s"), "{screen}");
    let seek = |typed: &str| {
        t.keys(&["t"]);
        t.wait_for("the seek prompt", Duration::from_secs(5), |s| {
            s.contains("seek to revision (r1234, start, end):")
        });
        t.text(typed);
        t.keys(&["Enter"]);
    };
    // A revision, the start, the end: each shows etcd's keys at that revision.
    let txn = fx.revision_of("txn");
    for (typed, rev, said) in [
        (format!("r{txn}"), txn, None),
        (
            "start".to_string(),
            c,
            Some(format!(
                "at the start: r{c}, the file's finished compaction"
            )),
        ),
        (
            "end".to_string(),
            head,
            Some(format!("at the file's head, r{head}")),
        ),
    ] {
        seek(&typed);
        let keys = fx.kvs_at(rev).len();
        let screen = t.wait_for(&typed, Duration::from_secs(10), |s| {
            timeline_revision(s, head) == Some(rev)
                && s.contains(&format!("rev {rev} "))
                && s.contains(&format!("keys {keys} "))
        });
        if let Some(said) = said {
            assert!(screen.contains(&said), "{typed}:\n{screen}");
        }
    }
    // A time is no position in a db file: said, and the cursor stays at the head.
    seek("12:00:00");
    let screen = t.wait_for("the refusal of a time", Duration::from_secs(10), |s| {
        s.contains("'12:00:00' is a time, and a db file keeps none")
    });
    assert_eq!(timeline_revision(&screen, head), Some(head), "{screen}");

    // Play from the start at 1 rev/s: every revision in turn, none skipped, about one a
    // second (not all at once, though all share one stamp).
    seek("start");
    t.wait_for("the start", Duration::from_secs(10), |s| {
        timeline_revision(s, head) == Some(c)
    });
    t.keys(&["Space"]);
    let began = Instant::now();
    let mut seen = vec![c];
    while seen.last() != Some(&(c + 4)) {
        assert!(
            began.elapsed() < Duration::from_secs(15),
            "play did not reach r{} in 15 s: {seen:?}",
            c + 4
        );
        std::thread::sleep(Duration::from_millis(100));
        if let Some(r) = timeline_revision(&t.capture(), head) {
            if seen.last() != Some(&r) {
                seen.push(r);
            }
        }
    }
    assert_eq!(
        seen,
        (c..=c + 4).collect::<Vec<_>>(),
        "one revision at a time"
    );
    // Four steps at one a second, the first at once: about three seconds, never less
    // than two.
    assert!(
        began.elapsed() >= Duration::from_secs(2),
        "play went faster than 1 rev/s: {:?}",
        began.elapsed()
    );
    // Faster (1000 rev/s): on to the head, where play pauses.
    t.text("+++++");
    let screen = t.wait_for("the head", Duration::from_secs(15), |s| {
        timeline_revision(s, head) == Some(head) && s.contains("⏸ 1000 rev/s")
    });
    assert!(
        screen.contains(&format!("at the file's head, r{head}")),
        "{screen}"
    );
    assert!(
        screen.contains(&format!("keys {} ", fx.kvs_at(head).len())),
        "{screen}"
    );
    t.keys(&["q"]);
    crate::common::wait_until("replay quits", Duration::from_secs(15), || t.pane_dead());
}

/// `replay --check` of a copy of the file with one page damaged (a byte of its header
/// flipped, or one inside it), both meta pages damaged, or the file cut short: each is a
/// damaged db file, never an unreadable one: exit 1 with a `damage` line (or 0 when the
/// byte lies where nothing reads it), never 2, and each line names the file at most once.
fn check_says_damage_wherever_the_file_is_damaged(fx: &DbFixture) {
    let bytes = std::fs::read(&fx.db).unwrap();
    let ps = 4096;
    let pages = bytes.len() / ps;
    assert!(pages >= 6, "{} bytes", bytes.len());
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("damaged.db");
    let p = s(&copy).to_string();
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    for page in 0..pages {
        for (what, at) in [
            ("flags", 8),
            ("count", 10),
            ("an element", 40),
            ("the middle", 2000),
        ] {
            let mut b = bytes.clone();
            b[page * ps + at] ^= 0x5A;
            cases.push((format!("page {page}, {what}"), b));
        }
    }
    let mut metas = bytes.clone();
    metas[16 + 40] ^= 0xFF;
    metas[ps + 16 + 40] ^= 0xFF;
    cases.push(("both meta pages".into(), metas));
    for len in [100, ps + 10, 3 * ps, bytes.len() / 2] {
        cases.push((format!("cut to {len} bytes"), bytes[..len].to_vec()));
    }
    let mut damaged = 0;
    for (what, b) in &cases {
        std::fs::write(&copy, b).unwrap();
        let out = run(&["replay", "--check", &p]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let err = stderr(&out);
        let code = out.status.code();
        assert!(
            code == Some(0) || code == Some(1),
            "{what}: exit {code:?}, a damaged db file is reported, not refused:\n{text}{err}"
        );
        assert!(!err.contains("panicked"), "{what}: {err}");
        assert!(
            text.starts_with(&format!("{p} (etcd's db file)")),
            "{what}: {text}"
        );
        let damage: Vec<&str> = text
            .lines()
            .filter(|l| l.trim_start().starts_with("damage "))
            .collect();
        assert_eq!(damage.len(), 1, "{what}: {text}");
        if code == Some(1) {
            damaged += 1;
            assert!(!damage[0].ends_with(" none"), "{what}: {text}");
        } else {
            assert!(damage[0].ends_with(" none"), "{what}: {text}");
        }
        for line in text.lines().chain(err.lines()) {
            assert!(line.matches(p.as_str()).count() <= 1, "{what}: {line}");
        }
    }
    // Most flips land on something read.
    assert!(
        damaged * 2 > cases.len(),
        "{damaged} of {} damaged",
        cases.len()
    );
}

/// Errors about a db file that is damaged, cut short, not a db file, or a directory: one
/// line on stderr naming the path once, whichever command reads it.
fn bad_files_are_one_line_naming_the_path_once(fx: &DbFixture) {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(&fx.db).unwrap();
    let cut = dir.path().join("cut.db");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let mut garbled = bytes.clone();
    for b in &mut garbled[2 * 4096..] {
        *b = 0xA5;
    }
    let garbled_path = dir.path().join("garbled.db");
    std::fs::write(&garbled_path, &garbled).unwrap();
    let text = dir.path().join("notes.db");
    std::fs::write(&text, "not etcd\n").unwrap();
    let folder = dir.path().join("member");
    std::fs::create_dir(&folder).unwrap();
    // Each page past the metas with its flags flipped: the file opens, and a page read
    // later (the `key` bucket's, for the head or a revision's state) is the error.
    let mut paths = vec![cut, garbled_path, text, folder];
    for page in 2..bytes.len() / 4096 {
        let mut b = bytes.clone();
        b[page * 4096 + 8] ^= 0x5A;
        let p = dir.path().join(format!("page-{page}.db"));
        std::fs::write(&p, &b).unwrap();
        paths.push(p);
    }
    for path in &paths {
        let p = s(path);
        let at = |args: &[&'static str]| -> Vec<String> {
            let mut v = args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
            for a in &mut v {
                if a == "P" {
                    *a = p.to_string();
                }
            }
            v
        };
        for args in [
            at(&["analyze", "P"]),
            at(&["export", "P"]),
            at(&["snapshot", "--json", "--from", "P"]),
            at(&["diff", "P", "--at", "r30", "--at", "end"]),
            at(&["diff", "P", "P"]),
        ] {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = run(&args);
            let err = stderr(&out);
            assert!(!err.contains("panicked"), "{args:?}: {err}");
            let only_warnings = err.lines().all(|l| l.starts_with("regscope: warning:"));
            if out.status.code() == Some(0) || only_warnings {
                // A page nothing in this command reads: no error to check (`diff` exits 1
                // for keys that differ, `export` says what it wrote).
                assert!(matches!(out.status.code(), Some(0 | 1)), "{args:?}: {err}");
                continue;
            }
            // The error names the file once (a warning beside it, such as the SHA-256 no
            // longer matching, is its own line).
            let error: String = err
                .lines()
                .filter(|l| !l.starts_with("regscope: warning:"))
                .collect();
            assert_eq!(error.matches(p).count(), 1, "{args:?}: {err}");
            // Nor is the cause said twice (an error and its source both printed).
            for cause in [
                "corrupt bbolt file",
                "cut short",
                "not a regscope recording",
            ] {
                assert!(err.matches(cause).count() <= 1, "{args:?}: {err}");
            }
            match out.status.code() {
                Some(2) => assert_eq!(
                    err.lines()
                        .filter(|l| !l.starts_with("regscope: warning:"))
                        .count(),
                    1,
                    "{args:?}: {err}"
                ),
                // `export` of a file damaged part way: what it wrote, then where it
                // stopped.
                Some(1) if args[0] == "export" => {
                    let last = err.lines().last().unwrap_or_default();
                    assert!(
                        last.contains("damaged db file") && last.contains(p),
                        "{err}"
                    );
                }
                code => panic!("{args:?}: exit {code:?}: {err}"),
            }
        }
    }
}

/// A `--prefix` under which the file holds no key (live or deleted) is said on stderr by
/// every command reading a db file, naming the top-level prefixes the file holds (the live
/// path's words); `diff` exits 2 when neither side holds one (not "no differences"). A
/// prefix with keys says nothing of the kind.
fn a_prefix_without_keys_is_said_naming_the_prefixes_held(fx: &DbFixture) {
    let db = s(&fx.db);
    let line = format!(
        "regscope: {db}: no keys under /kubernetes.io/; top-level prefixes here: /other, /registry, compact_rev_key (use --prefix)"
    );
    let prefix = ["--prefix", "/kubernetes.io"];
    let with = |args: &[&'static str]| -> Vec<String> {
        args.iter()
            .map(|a| {
                if *a == "DB" {
                    db.to_string()
                } else {
                    a.to_string()
                }
            })
            .chain(prefix.iter().map(|a| a.to_string()))
            .collect()
    };
    for (args, code) in [
        (with(&["snapshot", "--json", "--from", "DB"]), 0),
        (with(&["export", "DB"]), 0),
        (with(&["analyze", "DB"]), 0),
        (with(&["diff", "DB", "DB"]), 2),
        (with(&["diff", "DB", "--at", "start", "--at", "end"]), 2),
        (with(&["diff", "DB", "DB", "--json"]), 2),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert_eq!(
            err.lines().filter(|l| *l == line).count(),
            1,
            "{args:?}: {err}"
        );
        if args[0] == "diff" {
            assert!(
                out.stdout.is_empty(),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
    // Keys there (and `/other`, outside `/registry`): no such line.
    for p in ["/registry", "/other"] {
        for args in [
            vec!["snapshot", "--json", "--from", db, "--prefix", p],
            vec!["export", db, "--prefix", p],
            vec!["analyze", db, "--prefix", p],
            vec!["diff", db, db, "--prefix", p],
        ] {
            let out = run(&args);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
            assert!(!err.contains("no keys under"), "{args:?}: {err}");
        }
    }
}

/// `replay --check` of a file etcd never compacted says it holds revisions from 1, etcd's
/// first, as `diff` says it (not from 0, the compaction it never had).
#[test]
fn check_of_a_file_never_compacted_says_revisions_from_1() {
    require!(ETCD, ETCDCTL);
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("fresh.db");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let etcd = rt
        .block_on(regscope::demo::PrivateEtcd::start())
        .expect("start etcd");
    rt.block_on(async {
        let mut c = etcd.client().await.expect("etcd client");
        for key in ["/registry/configmaps/a/x", "/registry/configmaps/a/y"] {
            c.put(key, "{}", None).await.expect("put");
        }
    });
    crate::diff::snapshot_save(&etcd.endpoint(), &file);
    let out = run(&["replay", "--check", s(&file)]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        text.contains("revisions  1 .. 3 (never compacted: etcd's first revision .. head)"),
        "{text}"
    );
    let out = run(&["diff", s(&file), "--at", "start", "--at", "end", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("diff --json");
    assert_eq!(v["from"]["holds"]["head"], 3, "{v}");
    assert_eq!(v["from"]["revision"], 1, "{v}");
    // One version, one key: in the singular.
    let out = run(&[
        "export",
        s(&file),
        "--prefix",
        "/registry/configmaps/a/y",
        "--from",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "exported 1 key under /registry/configmaps/a/y alive at revision 3 and 0 versions"
        ),
        "{}",
        stderr(&out)
    );
    let out = run(&["export", s(&file), "--prefix", "/registry/configmaps/a/y"]);
    assert!(
        stderr(&out).contains("exported 0 keys under /registry/configmaps/a/y alive at revision 1 and 1 version written after it up to revision 3"),
        "{}",
        stderr(&out)
    );
    // A key live on neither side: "absent" said once.
    let out = run(&["diff", s(&file), s(&file), "--key", "/registry/nothing"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("--key /registry/nothing: absent in A and in B\n"),
        "{text}"
    );
    assert_eq!(text.matches("absent").count(), 1, "{text}");
}
