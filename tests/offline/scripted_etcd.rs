//! Watch responses that etcd gets wrong in released versions, played by a scripted etcd
//! (`common/scripted_etcd.rs`), against the real etcd source, replica, `verify` and the
//! binary's `snapshot`:
//! - a progress notification before the event it covers (etcd-io/etcd#15220: etcd 3.4
//!   before 3.4.25 and 3.5.0–3.5.7, which include Debian's 3.4.23 and PyPI's 3.5.1);
//! - a DELETE without `prev_kv` (what etcd sends when a compaction raced the delete; the
//!   apiserver, which asks for `prev_kv`, treats it as fatal for its watch);
//! - a progress notification below events already delivered, and below the watch's own
//!   start revision (from these versions a lower bound on etcd's head, not an anomaly).

use crate::common;
#[path = "../common/scripted_etcd.rs"]
mod scripted;

use std::time::Duration;

use common::{fast_sync, source, Harness};
use regscope::model::EventKind;
use scripted::{ScriptedEtcd, Step};

const KEY: &str = "/registry/configmaps/default/settings";

fn configmap(data: &str) -> String {
    format!(
        r#"{{"kind":"ConfigMap","apiVersion":"v1","metadata":{{"name":"settings","namespace":"default"}},"data":{{"k":"{data}"}}}}"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_affected_etcd_progress_ahead_of_its_event_is_never_applied() {
    let v1 = configmap("one");
    let v2 = configmap("two");
    let etcd = ScriptedEtcd::new(
        "3.4.23",
        &[
            (KEY, &v1, 100),
            ("/registry/configmaps/default/other", &v1, 90),
        ],
        vec![
            Step::Pause(Duration::from_millis(200)),
            // The head is at 101 and says so before the event at 101 is sent.
            Step::Progress(101),
            Step::Pause(Duration::from_millis(300)),
            Step::Events(vec![(KEY.into(), Some(v2.clone()), 101)]),
            // A DELETE without prev_kv.
            Step::Events(vec![(KEY.into(), None, 102)]),
            // Progress below events already delivered, and below the watch's start (101).
            Step::Progress(99),
            Step::Progress(95),
            // A write outside the prefix: the head moves, nothing is pending under it.
            Step::WriteElsewhere(110),
        ],
    );
    let url = etcd.clone().serve().await;
    let src = source(&url, fast_sync());
    let mut h = Harness::start(src.clone());
    let t = Duration::from_secs(20);

    h.until("etcd announces head 101", t, |r, _| {
        r.etcd.watch_health().head_at_least >= 101
    })
    .await;
    // The replica must not pass the event it has not applied...
    assert_eq!(h.replica.revision(), 100);
    assert_eq!(h.replica.get(KEY.as_bytes()).unwrap().mod_revision, 100);
    // ...so verify, reading etcd at the replica's revision, finds nothing wrong.
    let diffs = regscope::cli::verify::verify_replica(&src, &h.replica)
        .await
        .unwrap();
    assert!(diffs.is_empty(), "{diffs:?}");

    h.until("the event at 101", t, |r, _| r.revision() >= 101)
        .await;
    assert_eq!(h.replica.get(KEY.as_bytes()).unwrap().mod_revision, 101);
    assert_eq!(h.etcd.watch_health().progress_ahead_of_events, 1);

    h.until("the delete at 102", t, |r, _| r.revision() >= 102)
        .await;
    let row = h.replica.events().back().unwrap().clone();
    assert_eq!(row.kind, EventKind::Delete);
    // The DELETE row carries what was deleted, from the replica's copy.
    assert_eq!(row.value, v2.as_bytes());
    let s = regscope::decode::summarize(&row.value);
    assert_eq!(s.kind.as_deref(), Some("ConfigMap"));

    h.until("etcd announces head 110", t, |r, _| {
        r.etcd.watch_health().head_at_least >= 110
    })
    .await;
    assert!(etcd.finished());
    // Announced again with no event between: the revisions up to 110 were written outside
    // the prefix, so the replica counts as synced there for lag, still exact at 102.
    h.until("head 110 confirmed", t, |r, _| r.synced_revision() >= 110)
        .await;
    let w = h.etcd.watch_health().clone();
    assert_eq!(h.replica.revision(), 102, "{w:?}");
    assert_eq!(
        (
            w.progress_ahead_of_events,
            w.progress_behind,
            w.repeated_events,
            w.unknown_deletes
        ),
        // The notifications at 99 and 95 came after 102 was applied: from this etcd
        // version (unordered progress) they are lower bounds on its head, still true, not
        // anomalies.
        (1, 0, 0, 0)
    );
    let notes: Vec<String> = h.notes().iter().map(|(_, n)| n.to_string()).collect();
    assert!(
        notes.iter().any(|n| n.contains("etcd-io/etcd#15220")),
        "{notes:?}"
    );
    assert!(
        !notes.iter().any(|n| n.contains("below revision")),
        "{notes:?}"
    );
    let diffs = regscope::cli::verify::verify_replica(&src, &h.replica)
        .await
        .unwrap();
    assert!(diffs.is_empty(), "{diffs:?}");

    // The binary: snapshot and verify read the end state (listed at 110) and end.
    let bin = env!("CARGO_BIN_EXE_regscope");
    let out = std::process::Command::new(bin)
        .args(["snapshot", "--json", "--endpoints", &url])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["revision"], 110, "{v}");
    assert_eq!(v["keys"], 1, "{v}");
    assert!(v["watch"]["progress_behind"].is_u64(), "{v}");
    let out = std::process::Command::new(bin)
        .args(["verify", "--endpoints", &url])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_etcd_progress_is_applied() {
    let v1 = configmap("one");
    let etcd = ScriptedEtcd::new(
        "3.5.16",
        &[(KEY, &v1, 100)],
        vec![
            Step::Events(vec![(KEY.into(), Some(configmap("two")), 101)]),
            Step::WriteElsewhere(105),
            Step::Progress(105),
        ],
    );
    let url = etcd.clone().serve().await;
    let src = source(&url, fast_sync());
    let mut h = Harness::start(src.clone());
    h.until("progress at 105", Duration::from_secs(20), |r, _| {
        r.revision() >= 105
    })
    .await;
    assert_eq!(h.etcd.watch_health().anomalies(), 0);
    assert_eq!(h.replica.get(KEY.as_bytes()).unwrap().mod_revision, 101);
    let diffs = regscope::cli::verify::verify_replica(&src, &h.replica)
        .await
        .unwrap();
    assert!(diffs.is_empty(), "{diffs:?}");
}
