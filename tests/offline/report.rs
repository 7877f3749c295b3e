//! `regscope report` on recordings: the figures equal `snapshot --json --from FILE --at T`
//! at the report's own instants, `--from`/`--to` bound everything, and a recording with a
//! gap, a replaced etcd and damage says each plainly.

use std::path::Path;
use std::process::Command;

use crate::common::recording::{at, snapshot_from, BIN};
use crate::record_replay::{demo_recording, kv, list_at, record_stream, run_ok, small_policy};
use regscope::model::{Observation, Stamped};
use regscope::record::bookmarks::{self, Bookmark};

/// `regscope report FILE ARGS… -o - --format json`, parsed; fails the test unless the exit
/// code is `code`.
pub(crate) fn report_json(file: &Path, args: &[&str], code: i32) -> serde_json::Value {
    let out = Command::new(BIN)
        .args([
            "report",
            file.to_str().unwrap(),
            "-o",
            "-",
            "--format",
            "json",
        ])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "report {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A report instant (unix seconds) as `--at` text naming exactly that instant.
fn instant(secs: i64) -> String {
    humantime::format_rfc3339_millis(unix(secs)).to_string()
}

fn unix(secs: i64) -> std::time::SystemTime {
    std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs as u64)
}

/// The one value of a signal in `snapshot --json`'s `signals` with these labels.
fn signal(snap: &serde_json::Value, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    snap["signals"][name]
        .as_array()?
        .iter()
        .find(|s| labels.iter().all(|(k, v)| s[*k] == *v))?["value"]
        .as_f64()
}

/// The series `name` of chart `id`.
fn series<'a>(r: &'a serde_json::Value, id: &str, name: &str) -> &'a Vec<serde_json::Value> {
    let chart = r["charts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no chart {id}"));
    chart["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no series {name} in {id}: {}", chart["series"]))["values"]
        .as_array()
        .unwrap()
}

#[test]
fn the_demo_report_has_the_figures_snapshot_gives_at_each_instant() {
    let file = demo_recording();
    let r = report_json(&file, &[], 0);
    let times: Vec<i64> = r["times"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_i64().unwrap())
        .collect();
    assert!(times.len() > 20, "{} instants", times.len());
    let mut compared = [0usize; 4];
    // Every fifth instant, and the last.
    let picks: Vec<usize> = (1..times.len())
        .step_by(5)
        .chain([times.len() - 1])
        .collect();
    for i in picks {
        let when = r["sampled_at"][i].as_str().unwrap();
        let snap = snapshot_from(&file, Some(when));
        let fig = |name: &str| r["figures"][name][i].as_f64();
        assert_eq!(
            fig("etcd_head_revision"),
            signal(&snap, "etcd_head_revision", &[]),
            "head at {when}"
        );
        // The head is the replica's revision, and not known while etcd is out of reach.
        let connected = snap["connection"]["lost_since"].is_null();
        assert_eq!(
            fig("etcd_head_revision"),
            snap["revision"].as_f64().filter(|r| *r > 0.0 && connected),
            "head at {when}"
        );
        compared[0] += 1;
        assert_eq!(
            fig("compaction_window_revisions"),
            signal(&snap, "compaction_window_revisions", &[])
        );
        if fig("compaction_window_revisions").is_some() {
            compared[1] += 1;
        }
        // Informer lag of the events informer, as the window chart draws it.
        let lag = series(&r, "window_revisions", "informer lag: events")[i].as_f64();
        assert_eq!(
            lag,
            signal(
                &snap,
                "informer_lag_revisions",
                &[("group", ""), ("resource", "events")]
            ),
            "lag at {when}"
        );
        compared[2] += usize::from(lag.is_some());
        // A p99 of the etcd latency chart.
        let p99 = series(&r, "etcd_latency", "p99 update deployments.apps")[i].as_f64();
        assert_eq!(
            p99,
            signal(
                &snap,
                "etcd_request_p99_seconds",
                &[
                    ("operation", "update"),
                    ("group", "apps"),
                    ("resource", "deployments")
                ]
            ),
            "p99 at {when}"
        );
        compared[3] += usize::from(p99.is_some());
    }
    // Each figure was compared where it has a value, not only where both are null.
    assert!(compared.iter().all(|n| *n >= 3), "{compared:?}");
    // The timeline lists exactly what replay --check lists, with the same times.
    let check = run_ok("UTC", &["replay", "--check", file.to_str().unwrap()]);
    let listed: Vec<String> = check
        .lines()
        .filter_map(|l| l.strip_prefix("  marker     "))
        .map(str::to_string)
        .collect();
    let reported: Vec<String> = r["markers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{}  {}",
                m["at"].as_str().unwrap(),
                m["label"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(reported, listed);
    assert!(listed.len() >= 5, "{listed:?}");
    // The worst informer lag is the largest the lag chart draws (the slow events
    // watcher before its 410, before any compaction).
    let most = series(&r, "window_revisions", "informer lag: events")
        .iter()
        .filter_map(|v| v.as_f64())
        .fold(0.0f64, f64::max);
    let worst = &r["stands_out"]["worst_lag"];
    assert_eq!(worst["lag_revisions"].as_f64(), Some(most), "{worst}");
    assert!(most > 100.0, "{most}");
    assert_eq!(worst["resource"], "events");
    // What stands out names the demo's slow watcher: its 410 and relist, with the resource.
    let events = r["stands_out"]["gone_and_relists"].as_array().unwrap();
    assert!(events
        .iter()
        .any(|e| e["what"] == "gone" && e["resource"] == "events"));
    assert!(events
        .iter()
        .any(|e| e["what"] == "relist" && e["resource"] == "events"));
    assert!(
        r["stands_out"]["slowest_etcd"]["p99_seconds"]
            .as_f64()
            .unwrap()
            > 1.0
    );
    assert_eq!(r["cluster"]["etcd_version"], "3.4.23");
    assert!(r["cluster"]["kubernetes_version"]
        .as_str()
        .unwrap()
        .starts_with("v1."));
}

#[test]
fn from_and_to_bound_every_chart_and_table() {
    let file = demo_recording();
    let whole = report_json(&file, &[], 0);
    let start = whole["times"][0].as_i64().unwrap();
    let (from, to) = (instant(start + 20), instant(start + 50));
    let r = report_json(&file, &["--from", &from, "--to", &to], 0);
    let times: Vec<i64> = r["times"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_i64().unwrap())
        .collect();
    assert_eq!((times[0], *times.last().unwrap()), (start + 20, start + 50));
    assert_eq!(r["sampled_at"][0].as_str(), Some(from.as_str()));
    assert_eq!(r["sampled_at"][times.len() - 1].as_str(), Some(to.as_str()));
    for c in r["charts"].as_array().unwrap() {
        for s in c["series"].as_array().unwrap() {
            assert_eq!(
                s["values"].as_array().unwrap().len(),
                times.len(),
                "{}",
                c["id"]
            );
        }
    }
    for m in r["markers"].as_array().unwrap() {
        let t = humantime::parse_rfc3339(m["at"].as_str().unwrap()).unwrap();
        assert!(t >= unix(start + 20) && t <= unix(start + 50), "{m}");
    }
    // Fewer markers than the whole recording's, and the span says what was asked.
    assert!(r["markers"].as_array().unwrap().len() < whole["markers"].as_array().unwrap().len());
    assert_eq!(r["span"]["from"].as_str(), Some(from.as_str()));
    // The keys changed are the replica at the two moments compared.
    let c = &r["changes"];
    let snap_from = snapshot_from(&file, Some(&from));
    let snap_to = snapshot_from(&file, Some(&to));
    assert_eq!(c["from_revision"], snap_from["revision"]);
    assert_eq!(c["to_revision"], snap_to["revision"]);
    assert!(!c["per_resource"].as_array().unwrap().is_empty());
    // A span that starts on a marker copied from replay --check keeps it, and one zoomed
    // onto the outage lists the restore (the loss before it is outside).
    let check = run_ok("UTC", &["replay", "--check", file.to_str().unwrap()]);
    let gone_at = check
        .lines()
        .find(|l| l.contains("410 Gone"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .to_string();
    let r = report_json(&file, &["--from", &gone_at], 0);
    assert_eq!(r["markers"][0]["kind"], "gone", "{}", r["markers"]);
    assert_eq!(r["stands_out"]["gone_and_relists"][0]["what"], "gone");
    let restored_at = check
        .lines()
        .find(|l| l.contains("connection restored"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .to_string();
    let restored = humantime::parse_rfc3339(&restored_at).unwrap();
    let r = report_json(
        &file,
        &[
            "--from",
            &humantime::format_rfc3339_millis(restored - std::time::Duration::from_secs(1))
                .to_string(),
            "--to",
            &restored_at,
        ],
        0,
    );
    let kinds: Vec<&str> = r["markers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["connection_restored"], "{}", r["markers"]);
    // A reversed span is refused, with nothing written.
    let out = Command::new(BIN)
        .args([
            "report",
            file.to_str().unwrap(),
            "-o",
            "-",
            "--from",
            &to,
            "--to",
            &from,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not before"));
}

#[test]
fn a_gap_a_replaced_etcd_and_damage_are_each_said() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("incident.rgs");
    let list = list_at;
    let server = |id, s| Stamped {
        at: at(s),
        obs: Observation::Server {
            endpoint: "http://127.0.0.1:2379".into(),
            version: "3.5.1".into(),
            cluster_id: id,
        },
    };
    let tick = |s| Stamped {
        at: at(s),
        obs: Observation::Tick,
    };
    let mut all = vec![server(0xaaaa, 0)];
    all.extend(list(
        5,
        vec![
            kv("/registry/configmaps/ns/a", 2, 1, b"a1".to_vec()),
            kv("/registry/pods/ns/p", 4, 1, b"p1".to_vec()),
        ],
        None,
        0,
    ));
    all.extend((1..30).map(tick));
    // Away, and back after etcd compacted past the revision to resume from: a gap.
    all.extend(list(
        12,
        vec![
            kv("/registry/configmaps/ns/a", 9, 2, b"a2".to_vec()),
            kv("/registry/configmaps/ns/b", 10, 1, b"b1".to_vec()),
        ],
        Some(12),
        30,
    ));
    all.extend((31..60).map(tick));
    // A new etcd on the same endpoint: another cluster id, revisions from the start.
    all.push(server(0xbbbb, 60));
    all.push(Stamped {
        at: at(60),
        obs: Observation::Reset {
            reason: "cluster id changed".into(),
        },
    });
    all.extend(list(
        3,
        vec![kv("/registry/configmaps/ns/c", 3, 1, b"c1".to_vec())],
        None,
        60,
    ));
    all.extend((61..90).map(tick));
    record_stream(&file, &all, small_policy(), false);
    // The user's bookmark, and a line of the bookmarks file torn by a crash.
    bookmarks::append(&file, &Bookmark::new(at(45), 12, "outage starts here")).unwrap();
    let sidecar = bookmarks::bookmarks_path(&file);
    let mut text = std::fs::read(&sidecar).unwrap();
    text.extend_from_slice(br#"{"at":"2023-11"#);
    std::fs::write(&sidecar, text).unwrap();
    let r = report_json(&file, &[], 0);
    let bookmark = r["markers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["kind"] == "bookmark")
        .expect("the bookmark is a marker");
    assert_eq!(bookmark["label"], "bookmark: outage starts here");
    assert_eq!(bookmark["revision"], 12);
    assert!(
        r["source"]["notes"][0].as_str().unwrap().contains("torn"),
        "{}",
        r["source"]
    );
    let kinds: Vec<&str> = r["markers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["label"].as_str().unwrap())
        .collect();
    assert!(
        kinds
            .iter()
            .any(|l| l.contains("relist at revision 12 after compaction")),
        "{kinds:?}"
    );
    assert!(
        kinds.iter().any(|l| l.contains("history reset")),
        "{kinds:?}"
    );
    assert_eq!(r["cluster"]["cluster_id"], "bbbb");
    // Written by this regscope: the recorder's UTC offset is in the file.
    assert!(
        r["span"]["recorder_utc_offset_seconds"].is_i64(),
        "{}",
        r["span"]
    );
    assert_eq!(
        r["cluster"]["replacements"],
        serde_json::json!(["aaaa", "bbbb"])
    );
    assert!(r["changes"]["note"]
        .as_str()
        .unwrap()
        .contains("replaced between the two moments"));
    assert_eq!(r["source"]["damage"], serde_json::json!([]));
    // The HTML says each plainly, in words a reader finds without the JSON.
    let page = dir.path().join("incident.html");
    let out = Command::new(BIN)
        .args([
            "report",
            file.to_str().unwrap(),
            "-o",
            page.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    for said in [
        "relist at revision 12 after compaction at 12 (gap)",
        "history reset: cluster id changed",
        "bookmark: outage starts here",
        "torn",
        "bbbb",
        "replaced between the two moments",
    ] {
        assert!(html.contains(said), "the HTML does not say {said:?}");
    }
    // Damage: bytes flipped in the middle of the file. The report is still written, says
    // what was lost, and exits 1 as every reader of a damaged recording does.
    let mut bytes = std::fs::read(&file).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 64] {
        *b ^= 0x5a;
    }
    let damaged = dir.path().join("damaged.rgs");
    std::fs::write(&damaged, &bytes).unwrap();
    let r = report_json(&damaged, &[], 1);
    let damage = r["source"]["damage"].as_array().unwrap();
    assert!(!damage.is_empty(), "{}", r["source"]);
    let page = dir.path().join("damaged.html");
    let out = Command::new(BIN)
        .args([
            "report",
            damaged.to_str().unwrap(),
            "-o",
            page.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let html = std::fs::read_to_string(&page).unwrap();
    let first = damage[0].as_str().unwrap();
    // The damage line as replay --check words it (the path and what was lost).
    let lost = first.rsplit(": ").next().unwrap();
    assert!(html.contains(lost), "the HTML does not say {lost:?}");
}

#[test]
fn a_report_never_overwrites_the_recording() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("demo.rgs");
    std::fs::copy(demo_recording(), &file).unwrap();
    let before = std::fs::read(&file).unwrap();
    let out = Command::new(BIN)
        .args([
            "report",
            file.to_str().unwrap(),
            "-o",
            file.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is the recording itself"));
    assert_eq!(std::fs::read(&file).unwrap(), before);
    let report = |out: &Path, force: bool| {
        let mut c = Command::new(BIN);
        c.args([
            "report",
            file.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        if force {
            c.arg("--force");
        }
        c.output().unwrap()
    };
    // Another recording is never replaced, not even with --force (here named as a
    // report would be, so that only its content tells it).
    let other = dir.path().join("other.html");
    std::fs::copy(&file, &other).unwrap();
    let out = report(&other, true);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a recording"));
    assert_eq!(std::fs::read(&other).unwrap(), before);
    // An existing file is replaced only with --force; a directory never.
    let html = dir.path().join("r.html");
    std::fs::write(&html, "an older report").unwrap();
    let out = report(&html, false);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force replaces it"));
    assert_eq!(std::fs::read_to_string(&html).unwrap(), "an older report");
    assert!(report(&html, true).status.success());
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .starts_with("<!DOCTYPE html>"));
    let out = report(dir.path(), true);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a regular file"));
    // Nor the recording's bookmarks, nor a name whose format is unknown.
    let sidecar = regscope::record::bookmarks::bookmarks_path(&file);
    std::fs::write(&sidecar, "").unwrap();
    let out = Command::new(BIN)
        .args([
            "report",
            file.to_str().unwrap(),
            "-o",
            sidecar.to_str().unwrap(),
            "--format",
            "html",
            "--force",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds the recording's bookmarks"));
    let out = report(&dir.path().join("r.pdf"), false);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("name it .html"));
    // Markdown: one of its SVG names taken by a directory refuses before writing anything.
    let md = dir.path().join("m.md");
    std::fs::create_dir(dir.path().join("m-etcd_db.svg")).unwrap();
    let out = report(&md, true);
    assert_eq!(out.status.code(), Some(2));
    assert!(!md.exists());
    assert!(!dir.path().join("m-revisions.svg").exists());
}

#[test]
fn markdown_references_svg_files_that_exist_and_parse() {
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("incident.md");
    let out = Command::new(BIN)
        .args([
            "report",
            demo_recording().to_str().unwrap(),
            "-o",
            md.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&md).unwrap();
    let refs: Vec<&str> = text
        .split("](")
        .skip(1)
        .filter_map(|s| s.split(')').next())
        .filter(|s| s.ends_with(".svg"))
        .collect();
    let charts = report_json(&demo_recording(), &[], 0)["charts"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(refs.len(), charts, "{refs:?}");
    for name in refs {
        assert!(name.starts_with("incident-"), "{name}");
        let svg = std::fs::read_to_string(dir.path().join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let doc = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(doc.root_element().tag_name().name(), "svg");
    }
    // Markdown cannot go to standard output: its charts are files beside it.
    let out = Command::new(BIN)
        .args([
            "report",
            demo_recording().to_str().unwrap(),
            "-o",
            "-",
            "--format",
            "md",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A flight recorder's rolling set is reported whole, by its base name, with its
/// bookmarks beside it.
#[test]
fn a_keep_last_set_is_reported_by_its_base_name() {
    crate::common::require!(TESTDATA);
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("fr.rgs");
    let all = crate::record_replay::stream(120);
    crate::record_replay::record_set(
        &base,
        &all,
        std::time::Duration::from_secs(40),
        None,
        &mut |_| {},
    );
    bookmarks::append(&base, &Bookmark::new(at(110), 0, "in the set")).unwrap();
    let r = report_json(&base, &[], 0);
    let files = r["source"]["files"].as_array().unwrap();
    assert!(files.len() >= 2, "{files:?}");
    assert_eq!(
        r["span"]["recording_end"].as_str(),
        Some(
            humantime::format_rfc3339_millis(at(120))
                .to_string()
                .as_str()
        )
    );
    assert!(r["markers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["label"] == "bookmark: in the set"));
}
