//! The etcd source and the replica against real etcd processes (loopback, temp data dirs):
//! paging, reconnects, liveness, compaction, a mixed workload checked with `verify`.

use crate::common;
use crate::common::require;

use std::time::Duration;

use common::{addr_of, assert_verified, fast_sync, head_revision, source, Harness, Proxy};
use etcd_client::{Client, Compare, CompareOp, DeleteOptions, GetOptions, PutOptions, Txn, TxnOp};
use regscope::demo::PrivateEtcd;
use regscope::model::ConnState;

const T: Duration = Duration::from_secs(30);

async fn etcd() -> (PrivateEtcd, Client) {
    let e = PrivateEtcd::start().await.expect("start etcd");
    let c = e.client().await.expect("client");
    (e, c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_spans_many_pages_then_watch_applies_writes() {
    require!(ETCD);
    let (e, mut c) = etcd().await;
    for i in 0..1234 {
        c.put(
            format!("/registry/configmaps/ns{}/cm{i:04}", i % 7),
            "v",
            None,
        )
        .await
        .unwrap();
    }
    // A key just outside the prefix must not be mirrored.
    c.put("/registry-other/x", "v", None).await.unwrap();
    let sync = regscope::source::SyncOptions {
        page_limit_max: 100,
        ..fast_sync()
    };
    let mut h = Harness::start(source(&e.endpoint(), sync));
    h.catch_up(&mut c, T).await;
    assert_eq!(h.replica.live_keys(), 1234);
    assert!(h.seen.list_pages >= 13, "pages: {}", h.seen.list_pages);
    assert_eq!(h.seen.list_begins, 1);
    // Pages sized by bytes (the default): after a first page of 100 keys, the rest of
    // these small values fits in one page.
    let mut adaptive = Harness::start(source(&e.endpoint(), fast_sync()));
    adaptive.catch_up(&mut c, T).await;
    assert_eq!(adaptive.replica.live_keys(), 1234);
    assert!(
        adaptive.seen.list_pages <= 2,
        "100, then the rest: {} pages",
        adaptive.seen.list_pages
    );
    for i in 0..50 {
        c.put(format!("/registry/pods/default/p{i}"), "x", None)
            .await
            .unwrap();
    }
    // Overwrites of listed keys: etcd would attach their previous versions if the watch
    // asked for `prev_kv`, at one range read per event on its send path. The replica
    // holds them already, so the watch must not ask.
    for i in 0..10 {
        c.put(
            format!("/registry/configmaps/ns{}/cm{i:04}", i % 7),
            "w",
            None,
        )
        .await
        .unwrap();
    }
    h.catch_up(&mut c, T).await;
    assert_eq!(h.replica.live_keys(), 1284);
    assert_eq!(h.seen.events, 60);
    assert_eq!(h.seen.events_with_prev_kv, 0);
    assert_verified(&h).await;
}

/// A full-prefix reply above 4 MiB must not be refused for good: 48 values of 100 KiB
/// (4,915,200 bytes) exceed tonic's 4 MiB default decoding limit in one page and in one
/// catch-up watch response.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_and_catch_up_watch_over_4_mib() {
    require!(ETCD);
    let (e, mut c) = etcd().await;
    let value = vec![b'x'; 102_400];
    for i in 1..=48 {
        c.put(
            format!("/registry/configmaps/bulk/cm{i:02}"),
            value.clone(),
            None,
        )
        .await
        .unwrap();
    }
    let sync = regscope::source::SyncOptions {
        page_limit: 500,
        max_decode_bytes: 4 << 20,
        ..fast_sync()
    };
    let mut h = Harness::start(source(&e.endpoint(), sync));
    h.catch_up(&mut c, T).await;
    assert_eq!(h.replica.live_keys(), 48);
    assert!(
        h.seen.notes.iter().any(|n| n.contains("retrying with 250")),
        "the page limit must be halved, not retried identically: {:?}",
        h.seen.notes
    );
    // Second check: stop the source, rewrite all 48, resume from before them.
    let before = h.replica.revision();
    h.restart_source_resuming();
    // Give the restarted source no chance to see writes one by one: it resumes from `before`.
    for i in 1..=48 {
        let mut v = value.clone();
        v[0] = b'y';
        c.put(format!("/registry/configmaps/bulk/cm{i:02}"), v, None)
            .await
            .unwrap();
    }
    h.catch_up(&mut c, T).await;
    assert_eq!(h.replica.revision(), before + 48);
    let got = h.replica.get(b"/registry/configmaps/bulk/cm48").unwrap();
    assert_eq!(got.value.unwrap()[0], b'y');
    assert_verified(&h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_resumes_after_etcd_restart_without_loss_or_duplicates() {
    require!(ETCD);
    let (mut e, mut c) = etcd().await;
    c.put("/registry/pods/default/a", "1", None).await.unwrap();
    let mut h = Harness::start(source(&e.endpoint(), fast_sync()));
    h.catch_up(&mut c, T).await;
    for i in 0..20 {
        c.put(format!("/registry/pods/default/b{i}"), "1", None)
            .await
            .unwrap();
    }
    e.kill().unwrap();
    h.until("reconnecting after kill", T, |r, _| {
        matches!(r.etcd.conn(), ConnState::Reconnecting { .. })
    })
    .await;
    e.restart().await.unwrap();
    let mut c = e.client().await.unwrap();
    for i in 0..20 {
        c.put(format!("/registry/pods/default/c{i}"), "1", None)
            .await
            .unwrap();
    }
    c.delete("/registry/pods/default/a", None).await.unwrap();
    h.catch_up(&mut c, T).await;
    assert_eq!(h.seen.list_begins, 1, "a resume must not relist");
    let pods = h
        .replica
        .resources()
        .iter()
        .find(|r| r.resource == "pods")
        .unwrap();
    assert_eq!(pods.puts, 40, "every put applied exactly once");
    assert_eq!(pods.deletes, 1);
    assert_eq!(h.replica.live_keys(), 40);
    assert_verified(&h).await;
}

/// A watch on an unresponsive server must not hang silently: a SIGSTOPped etcd is detected
/// as not responding (its liveness window passing without an answer), and after SIGCONT
/// the source resumes from last revision + 1 without relisting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_etcd_is_detected_and_recovered() {
    require!(ETCD);
    let (mut e, mut c) = etcd().await;
    c.put("/registry/configmaps/default/y", "1", None)
        .await
        .unwrap();
    let mut h = Harness::start(source(&e.endpoint(), fast_sync()));
    h.catch_up(&mut c, T).await;
    e.pause().unwrap();
    // The stall is detected instead of waited on forever. The wait is a hang guard of ten
    // liveness windows (3 s in `fast_sync`), not a performance claim.
    let t0 = std::time::Instant::now();
    h.until("not responding", Duration::from_secs(30), |r, _| {
        matches!(r.etcd.conn(), ConnState::NotResponding { .. })
    })
    .await;
    println!("not responding after {:?}", t0.elapsed());
    // Staying paused past detection is the point: the source must ride out a long stall.
    tokio::time::sleep(Duration::from_secs(5)).await;
    h.drain();
    e.resume().unwrap();
    let mut c = e.client().await.unwrap();
    c.put("/registry/configmaps/default/z", "1", None)
        .await
        .unwrap();
    // Resumed: a hang guard (the source retries at most every 500 ms here), not a
    // performance claim.
    let t1 = std::time::Instant::now();
    h.until(
        "z applied after SIGCONT",
        Duration::from_secs(30),
        |r, _| r.replica.get(b"/registry/configmaps/default/z").is_some(),
    )
    .await;
    println!("z applied after {:?}", t1.elapsed());
    assert_eq!(
        h.seen.list_begins, 1,
        "no relist when nothing was compacted"
    );
    assert!(h.seen.not_responding >= 1);
    assert_verified(&h).await;
}

/// Resuming a watch after a disconnect once the last seen revision is compacted: relist,
/// keep the new value, record the gap once, never loop on the compacted revision; and what
/// changed in the unseen revisions becomes event rows marked unseen, equal to what etcd
/// changed (read back with a plain get before and after).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_during_disconnect_relists_with_gap() {
    require!(ETCD);
    let (e, mut c) = etcd().await;
    let r = c
        .put("/registry/configmaps/default/a", "v1", None)
        .await
        .unwrap();
    assert_eq!(r.header().unwrap().revision(), 2);
    c.put("/registry/pods/ns/fresh", "p1", None).await.unwrap();
    c.put("/registry/configmaps/default/same", "s1", None)
        .await
        .unwrap();
    let mut proxy = Proxy::start(addr_of(&e.endpoint())).await;
    let mut h = Harness::start(source(&proxy.url(), fast_sync()));
    h.catch_up(&mut c, T).await;
    h.until("watching", T, |r, _| {
        matches!(r.etcd.conn(), ConnState::Watching)
    })
    .await;
    let events_before = h.replica.events().len();
    proxy.cut().await;
    // While away: a changed twice (version 1 → 3), fresh deleted, new created.
    let r = c
        .put("/registry/configmaps/default/a", "v2", None)
        .await
        .unwrap();
    let first_unseen = r.header().unwrap().revision();
    c.put("/registry/configmaps/default/a", "v3", None)
        .await
        .unwrap();
    c.delete("/registry/pods/ns/fresh", None).await.unwrap();
    c.put("/registry/configmaps/default/new", "n1", None)
        .await
        .unwrap();
    for i in 1..=100 {
        c.put(format!("/other/k{i}"), "x", None).await.unwrap();
    }
    let head = c
        .get("/other/k1", None)
        .await
        .unwrap()
        .header()
        .unwrap()
        .revision();
    c.compact(head, None).await.unwrap();
    proxy.restore().await;
    h.until("relisted after compaction", T, |r, _| {
        !r.replica.gaps().is_empty()
    })
    .await;
    h.catch_up(&mut c, T).await;
    assert_eq!(h.seen.watch_compactions, vec![head]);
    let a = h.replica.get(b"/registry/configmaps/default/a").unwrap();
    assert_eq!(a.value.as_deref(), Some(&b"v3"[..]));
    assert_eq!((a.mod_revision, a.version), (first_unseen + 1, 3));
    assert_eq!(h.replica.gaps().len(), 1);
    let gap = h.replica.gaps()[0].clone();
    assert_eq!(gap.compact_revision, head);
    assert_eq!((gap.from, gap.to), (first_unseen, head));
    assert_eq!(h.replica.compact_revision(), Some(head));
    let resyncs = h
        .notes()
        .iter()
        .filter(|(_, n)| n.to_string().contains("resync after compaction"))
        .count();
    assert_eq!(resyncs, 1);
    // The rows the relist synthesized are exactly etcd's changes under the prefix: etcd's
    // state now (a get of the prefix) against the replica's before the gap.
    let now = c
        .get("/registry/", Some(GetOptions::new().with_prefix()))
        .await
        .unwrap();
    let mut want: Vec<(i64, String, &str, Vec<u8>)> = now
        .kvs()
        .iter()
        .filter(|kv| kv.mod_revision() >= first_unseen)
        .map(|kv| {
            let change = if kv.create_revision() >= first_unseen {
                "created"
            } else {
                "changed"
            };
            (
                kv.mod_revision(),
                kv.key_str().unwrap().to_string(),
                change,
                kv.value().to_vec(),
            )
        })
        .collect();
    want.sort();
    want.push((
        head,
        "/registry/pods/ns/fresh".into(),
        "deleted",
        b"p1".to_vec(),
    ));
    let got: Vec<(i64, String, &str, Vec<u8>)> = h
        .replica
        .events()
        .iter()
        .skip(events_before)
        .map(|ev| {
            let u = ev.unseen.expect("only unseen rows after the gap");
            assert_eq!((u.from, u.to), (gap.from, gap.to));
            (
                ev.revision,
                String::from_utf8_lossy(&ev.key).into_owned(),
                u.change.label(),
                ev.value.to_vec(),
            )
        })
        .collect();
    assert_eq!(got, want);
    let counts = h.replica.gap_summaries()[0].changes.unwrap();
    assert_eq!((counts.created, counts.changed, counts.deleted), (1, 1, 1));
    // The key's history goes from version 1 to 3 through the gap, and says so.
    let hist = h.replica.history(b"/registry/configmaps/default/a");
    let (old, new) = (&hist[hist.len() - 2], &hist[hist.len() - 1]);
    assert_eq!((old.version, new.version), (1, 3));
    assert!(h
        .replica
        .gap_between(old.mod_revision, new.mod_revision)
        .is_some());
    assert_eq!(h.seen.list_begins, 2);
    assert_verified(&h).await;
}

/// 10,000 operations: creates, updates (compare mod_revision), deletes, re-creates and
/// lease expiries; then the replica equals etcd.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_workload_of_10000_operations_verifies() {
    require!(ETCD);
    let (e, mut c) = etcd().await;
    let mut h = Harness::start(source(&e.endpoint(), fast_sync()));
    h.catch_up(&mut c, T).await;
    let mut ops = 0usize;
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let mut c = c.clone();
            tokio::spawn(async move {
                let mut n = 0usize;
                // Short leases, re-granted while they are young, so events expire soon
                // after the workload (as the apiserver attaches events to leases).
                let mut lease = (0i64, std::time::Instant::now() - Duration::from_secs(10));
                let mut rng_state: u64 = 0x9e3779b97f4a7c15 ^ w;
                for i in 0..1240u64 {
                    rng_state ^= rng_state << 13;
                    rng_state ^= rng_state >> 7;
                    rng_state ^= rng_state << 17;
                    let key = format!("/registry/pods/ns{w}/p{}", rng_state % 60);
                    match rng_state % 10 {
                        0..=3 => {
                            // create if absent
                            let t = Txn::new()
                                .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                                .and_then([TxnOp::put(key, format!("c{i}"), None)]);
                            c.txn(t).await.unwrap();
                        }
                        4..=6 => {
                            let cur = c.get(key.clone(), None).await.unwrap();
                            let m = cur.kvs().first().map_or(0, |kv| kv.mod_revision());
                            let t = Txn::new()
                                .when([Compare::mod_revision(key.clone(), CompareOp::Equal, m)])
                                .and_then([TxnOp::put(key, format!("u{i}"), None)]);
                            c.txn(t).await.unwrap();
                            n += 1; // the get above
                        }
                        7 | 8 => {
                            c.delete(key, None).await.unwrap();
                        }
                        _ => {
                            if lease.1.elapsed() > Duration::from_millis(500) {
                                lease = (
                                    c.lease_grant(2, None).await.unwrap().id(),
                                    std::time::Instant::now(),
                                );
                                n += 1;
                            }
                            c.put(
                                format!("/registry/events/ns{w}/e{i}"),
                                "ev",
                                Some(PutOptions::new().with_lease(lease.0)),
                            )
                            .await
                            .unwrap();
                        }
                    }
                    n += 1;
                }
                n
            })
        })
        .collect();
    for w in writers {
        ops += w.await.unwrap();
    }
    assert!(ops >= 10_000, "ops {ops}");
    c.delete(
        "/registry/pods/ns0/",
        Some(DeleteOptions::new().with_prefix()),
    )
    .await
    .unwrap();
    // Let the 2 s lease expire: etcd deletes the events itself.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let r = c
            .get(
                "/registry/events/",
                Some(
                    etcd_client::GetOptions::new()
                        .with_prefix()
                        .with_count_only(),
                ),
            )
            .await
            .unwrap();
        if r.count() == 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "lease did not expire");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    h.catch_up(&mut c, Duration::from_secs(60)).await;
    let events = h
        .replica
        .resources()
        .iter()
        .find(|r| r.resource == "events")
        .unwrap();
    assert!(
        events.puts > 0 && events.deletes == events.puts && events.keys == 0,
        "events: puts {} deletes {} live {}",
        events.puts,
        events.deletes,
        events.keys
    );
    assert_verified(&h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_and_tombstones_match_etcd_at_every_revision() {
    require!(ETCD);
    let (e, mut c) = etcd().await;
    let mut h = Harness::start(source(&e.endpoint(), fast_sync()));
    h.catch_up(&mut c, T).await;
    let k = "/registry/secrets/default/s";
    c.put(k, "a", None).await.unwrap();
    c.put(k, "b", None).await.unwrap();
    c.delete(k, None).await.unwrap();
    c.put(k, "c", None).await.unwrap();
    c.put("/registry/secrets/default/other", "x", None)
        .await
        .unwrap();
    h.catch_up(&mut c, T).await;
    let head = head_revision(&mut c).await;
    let hist = h.replica.history(k.as_bytes());
    assert_eq!(hist.len(), 4);
    assert!(hist[2].value.is_none(), "tombstone kept");
    for rev in h.replica.oldest_queryable()..=head {
        let ours = h.replica.get_at(k.as_bytes(), rev).unwrap();
        let theirs = c
            .get(k, Some(etcd_client::GetOptions::new().with_revision(rev)))
            .await
            .unwrap();
        let theirs = theirs.kvs().first();
        assert_eq!(
            ours.as_ref()
                .map(|v| (v.mod_revision, v.version, v.create_revision)),
            theirs.map(|kv| (kv.mod_revision(), kv.version(), kv.create_revision())),
            "at revision {rev}"
        );
        assert_eq!(
            ours.and_then(|v| v.value).map(|b| b.to_vec()),
            theirs.map(|kv| kv.value().to_vec())
        );
    }
}

/// Bytes that are not UTF-8 in keys (a key ending in a stray 0xff): such a key is
/// mirrored, listed escaped, and verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_utf8_key_round_trips() {
    require!(ETCD);
    let (e, mut c) = etcd().await;
    let key = b"/registry/configmaps/default/cm\xff".to_vec();
    c.put(key.clone(), b"\x00\xff binary".to_vec(), None)
        .await
        .unwrap();
    let mut h = Harness::start(source(&e.endpoint(), fast_sync()));
    h.catch_up(&mut c, T).await;
    assert!(h.replica.get(&key).is_some());
    let keys = h
        .replica
        .live_keys_after(b"/registry/configmaps/", None, 10);
    assert_eq!(keys, vec![bytes::Bytes::from(key.clone())]);
    let json = regscope::cli::snapshot::snapshot_json(Some(&h.session), true, None, None).unwrap();
    assert!(
        json.contains("/registry/configmaps/default/cm\\\\xff"),
        "{json}"
    );
    c.put(key.clone(), "v2", None).await.unwrap();
    h.catch_up(&mut c, T).await;
    assert_eq!(h.replica.history(&key).len(), 2);
    assert_verified(&h).await;
}

/// An empty prefix says which top-level prefixes exist (OpenShift, whose kinds the
/// decoder does not know, stores under `/kubernetes.io`), and that prefix works when
/// configured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_prefix_names_existing_prefixes() {
    require!(ETCD);
    let (e, mut c) = etcd().await;
    c.put("/kubernetes.io/builds/ns1/b1", "x", None)
        .await
        .unwrap();
    c.put("compact_rev_key", "0", None).await.unwrap();
    // A key that is a prefix itself, just before the keys under it.
    c.put("/kubernetes.io", "x", None).await.unwrap();
    let mut h = Harness::start(source(&e.endpoint(), fast_sync()));
    h.until("note about prefixes", T, |_, s| {
        s.notes
            .iter()
            .any(|n| n.contains("no keys under /registry/"))
    })
    .await;
    let note = h
        .seen
        .notes
        .iter()
        .find(|n| n.contains("no keys"))
        .unwrap()
        .clone();
    assert_eq!(
        note.matches("/kubernetes.io").count(),
        1,
        "named once: {note}"
    );
    assert!(note.contains("compact_rev_key"), "{note}");
    let sync = regscope::source::SyncOptions {
        prefix: b"/kubernetes.io".to_vec(),
        ..fast_sync()
    };
    let cfg = regscope::store::ReplicaConfig {
        prefix: bytes::Bytes::from_static(b"/kubernetes.io"),
        ..Default::default()
    };
    let mut h2 = Harness::start_with(source(&e.endpoint(), sync), cfg);
    h2.catch_up(&mut c, T).await;
    assert_eq!(h2.replica.live_keys(), 1);
    assert_eq!(h2.replica.resources()[0].resource, "builds");
}

/// compact_rev_key, written the way kube-apiserver's compactor does, is picked up live.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_rev_key_updates_are_seen() {
    require!(ETCD);
    let (e, mut c) = etcd().await;
    for i in 0..10 {
        c.put(format!("/registry/leases/kube-node-lease/n{i}"), "x", None)
            .await
            .unwrap();
    }
    let mut h = Harness::start(source(&e.endpoint(), fast_sync()));
    h.catch_up(&mut c, T).await;
    h.until("watching", T, |r, _| {
        matches!(r.etcd.conn(), ConnState::Watching)
    })
    .await;
    c.put("compact_rev_key", "5", None).await.unwrap();
    c.compact(5, None).await.unwrap();
    h.until("compaction seen", T, |r, _| {
        r.replica.compact_revision() == Some(5)
    })
    .await;
    assert_eq!(
        h.replica.compactions().back().unwrap().source,
        regscope::model::CompactionSource::CompactRevKey
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_endpoint_is_a_clear_error() {
    require!(ETCD);
    let opts = regscope::source::EtcdOptions {
        endpoints: vec!["http://127.0.0.1:1".into()],
        ..Default::default()
    }
    .with_defaults();
    let err = opts
        .connect(Duration::from_secs(3))
        .await
        .err()
        .expect("must fail");
    let msg = err.to_string();
    assert!(msg.contains("127.0.0.1:1"), "{msg}");
    assert!(
        msg.contains("cannot reach etcd") || msg.contains("not responding"),
        "{msg}"
    );
    assert!(!err.is_fatal());
}

/// etcd comes back with a wiped data dir (as after a restore from an older snapshot): its
/// cluster ID and revision no longer match what the replica holds, so the replica is
/// rebuilt from a fresh list instead of silently keeping keys that are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_restored_with_new_history_rebuilds_the_replica() {
    require!(ETCD);
    let (mut e, mut c) = etcd().await;
    for i in 0..30 {
        c.put(format!("/registry/secrets/dr/old{i}"), "x", None)
            .await
            .unwrap();
    }
    let mut h = Harness::start(source(&e.endpoint(), fast_sync()));
    h.catch_up(&mut c, T).await;
    assert_eq!(h.replica.live_keys(), 30);
    e.kill().unwrap();
    std::fs::remove_dir_all(e.data_dir()).unwrap();
    e.restart().await.unwrap();
    let mut c = e.client().await.unwrap();
    for i in 0..3 {
        c.put(format!("/registry/pods/dr/new{i}"), "y", None)
            .await
            .unwrap();
    }
    h.until("replica rebuilt", T, |r, _| {
        r.replica.live_keys() == 3 && r.replica.get(b"/registry/pods/dr/new2").is_some()
    })
    .await;
    h.catch_up(&mut c, T).await;
    assert!(h.replica.get(b"/registry/secrets/dr/old0").is_none());
    assert!(
        h.notes()
            .iter()
            .any(|(_, n)| n.to_string().contains("replica rebuilt")),
        "{:?}",
        h.notes()
    );
    // Kept on record past the rebuild: which etcd, the revision before and after, and the
    // cluster id (the same flags give the same id: only the revision went back).
    let rep = h.etcd.replacements();
    assert_eq!(rep.len(), 1, "{rep:?}");
    assert_eq!(rep[0].revision_before, 31);
    assert!(rep[0].revision_after.is_some_and(|r| r < 31), "{rep:?}");
    assert_ne!(rep[0].cluster_id_after, 0);
    assert_eq!(rep[0].cluster_id_before, rep[0].cluster_id_after);
    let line = rep[0].describe();
    assert!(
        line.starts_with("etcd at ") && line.contains(" replaced: same cluster id "),
        "{line}"
    );
    assert!(
        h.notes().iter().any(|(_, n)| n.to_string() == line),
        "{line}"
    );
    let summary = serde_json::to_value(h.summary()).unwrap();
    assert_eq!(summary["replacements"][0]["revision_before"], 31);
    // A 64-bit cluster id as hex text: a JSON number would lose its low digits.
    assert_eq!(
        summary["replacements"][0]["cluster_id_after"].as_str(),
        Some(format!("{:x}", rep[0].cluster_id_after).as_str())
    );
    assert_verified(&h).await;
}

/// etcd restored from an `etcdctl snapshot save` taken earlier, under a running replica:
/// the revision goes back (the same flags give the same cluster id). It is said (kept on
/// record with both revisions), the replica is rebuilt from the restored data, and equals
/// etcd.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_restored_from_a_snapshot_is_said_and_rebuilt() {
    require!(ETCD, ETCDCTL);
    let (mut e, mut c) = etcd().await;
    for i in 0..5 {
        c.put(format!("/registry/configmaps/dr/early{i}"), "x", None)
            .await
            .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("snap.db");
    let etcdctl = |args: &[&str]| {
        let out = std::process::Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args(args)
            .output()
            .expect("etcdctl (scripts/setup.sh installs it)");
        assert!(
            out.status.success(),
            "etcdctl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    etcdctl(&[
        "--endpoints",
        &e.endpoint(),
        "snapshot",
        "save",
        snap.to_str().unwrap(),
    ]);
    for i in 0..20 {
        c.put(format!("/registry/configmaps/dr/late{i}"), "y", None)
            .await
            .unwrap();
    }
    let mut h = Harness::start(source(&e.endpoint(), fast_sync()));
    h.catch_up(&mut c, T).await;
    assert_eq!(h.replica.live_keys(), 25);
    let before = h.replica.revision();
    e.kill().unwrap();
    std::fs::remove_dir_all(e.data_dir()).unwrap();
    let peer = format!("http://127.0.0.1:{}", e.peer_port());
    etcdctl(&[
        "snapshot",
        "restore",
        snap.to_str().unwrap(),
        "--data-dir",
        e.data_dir().to_str().unwrap(),
        "--name",
        regscope::demo::etcd_server::MEMBER_NAME,
        "--initial-cluster",
        &format!("{}={peer}", regscope::demo::etcd_server::MEMBER_NAME),
        "--initial-advertise-peer-urls",
        &peer,
    ]);
    e.restart().await.unwrap();
    let mut c = e.client().await.unwrap();
    h.until("replica rebuilt from the restore", T, |r, _| {
        r.etcd
            .replacements()
            .first()
            .is_some_and(|x| x.revision_after.is_some())
            && r.replica.live_keys() == 5
    })
    .await;
    h.catch_up(&mut c, T).await;
    assert!(h.replica.get(b"/registry/configmaps/dr/late0").is_none());
    let rep = &h.etcd.replacements()[0];
    assert_eq!(rep.revision_before, before);
    assert!(rep.revision_after.is_some_and(|r| r < before), "{rep:?}");
    assert!(
        h.notes()
            .iter()
            .any(|(_, n)| n.to_string().contains(" replaced: ")
                && n.to_string().contains(&format!("revision {before} → "))),
        "{:?}",
        h.notes()
    );
    assert_verified(&h).await;
}

/// etcd's history was replaced while we were cut off and has since grown past our revision
/// (same cluster ID, higher revision): a known key's mod_revision gives it away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replaced_history_past_our_revision_is_detected() {
    require!(ETCD);
    let (mut e, mut c) = etcd().await;
    for i in 0..5 {
        c.put(format!("/registry/configmaps/old/k{i}"), "x", None)
            .await
            .unwrap();
    }
    let mut proxy = Proxy::start(addr_of(&e.endpoint())).await;
    let mut h = Harness::start(source(&proxy.url(), fast_sync()));
    h.catch_up(&mut c, T).await;
    h.until("watching", T, |r, _| {
        matches!(r.etcd.conn(), ConnState::Watching)
    })
    .await;
    let ours = h.replica.revision();
    proxy.cut().await;
    e.kill().unwrap();
    std::fs::remove_dir_all(e.data_dir()).unwrap();
    e.restart().await.unwrap();
    let mut c = e.client().await.unwrap();
    for i in 0..(ours + 5) {
        c.put(format!("/registry/configmaps/new/k{i}"), "y", None)
            .await
            .unwrap();
    }
    assert!(head_revision(&mut c).await > ours);
    proxy.restore().await;
    h.until("replica rebuilt", T, |r, _| {
        r.notes()
            .iter()
            .any(|(_, n)| n.to_string().contains("replica rebuilt"))
    })
    .await;
    h.catch_up(&mut c, T).await;
    assert!(h.replica.get(b"/registry/configmaps/old/k0").is_none());
    assert_eq!(h.replica.live_keys() as i64, ours + 5);
    let why = h
        .notes()
        .iter()
        .find(|(_, n)| n.to_string().contains("replica rebuilt"))
        .map(|(_, n)| n.to_string())
        .unwrap();
    assert!(
        why.contains("history changed") || why.contains("cluster ID changed"),
        "{why}"
    );
    eprintln!("reason: {why}");
    let rep = h.etcd.replacements();
    assert_eq!(rep.len(), 1, "{rep:?}");
    assert_eq!(rep[0].revision_before, ours);
    assert!(rep[0].revision_after.is_some_and(|r| r > ours), "{rep:?}");
    assert_verified(&h).await;
}

/// The list reads many ranges at once: with tiny pages every resource, namespace and name
/// prefix below is cut into ranges of its own. While a writer changes keys under it, the
/// list must still bring every key under the prefix exactly once, as etcd had it at the
/// one list revision, and nothing outside the prefix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_cut_into_many_ranges_reads_every_key_once_at_one_revision() {
    require!(ETCD);
    use regscope::model::{Observation, Stamped};
    use std::collections::BTreeMap;

    let (e, mut c) = etcd().await;
    let namespaces: [&[u8]; 8] = [
        b"default",
        b"kube-system",
        b"team-a",
        b"a",
        b"z9",
        b"-x",
        b"Zed",
        b"ns\xff\x00",
    ];
    let resources = [
        "configmaps",
        "events",
        "coordination.k8s.io/leases",
        "example.com/widgets",
    ];
    let mut keys: Vec<Vec<u8>> = Vec::new();
    for (r, res) in resources.iter().enumerate() {
        for (n, ns) in namespaces.iter().enumerate() {
            for i in 0..(40 + 30 * r + 20 * n) {
                let mut k = format!("/registry/{res}/").into_bytes();
                k.extend_from_slice(ns);
                k.extend_from_slice(format!("/obj-{i:04}").as_bytes());
                keys.push(k);
            }
        }
    }
    // Keys at the edges of the byte ranges the list cuts at.
    for k in [
        &b"/registry/"[..],
        b"/registry/a",
        b"/registry/\xff",
        b"/registry/\xff\xff",
        b"/registry/nodes",
        b"/registry/nodes/",
        b"/registry/nodes/n\x00",
    ] {
        keys.push(k.to_vec());
    }
    for (i, k) in keys.iter().enumerate() {
        c.put(
            k.clone(),
            format!("value-{i:05}-{}", "x".repeat(i % 97)),
            None,
        )
        .await
        .unwrap();
    }
    for k in [
        &b"/registry"[..],
        b"/registry0",
        b"/registrz",
        b"/registr",
        b"\xff",
    ] {
        c.put(k, "outside", None).await.unwrap();
    }
    let sync = regscope::source::SyncOptions {
        page_limit: 10,
        page_target_bytes: 1500,
        split_above_pages: 2,
        list_concurrency: 4,
        ..fast_sync()
    };
    let src = source(&e.endpoint(), sync);
    // A writer rewrites, deletes and creates keys while the list runs.
    let mut w = e.client().await.unwrap();
    let writes: Vec<Vec<u8>> = keys.iter().step_by(7).cloned().collect();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (first_tx, first_rx) = tokio::sync::oneshot::channel();
    let writer = tokio::spawn({
        let stop = stop.clone();
        async move {
            let mut first = Some(first_tx);
            // Bounded: at most 20 passes, whatever the list does.
            for pass in 0..20 {
                for (i, k) in writes.iter().enumerate() {
                    if stop.load(std::sync::atomic::Ordering::SeqCst) {
                        return;
                    }
                    if (i + pass) % 3 == 0 {
                        w.delete(k.clone(), None).await.unwrap();
                    } else {
                        w.put(k.clone(), format!("rewritten-{pass}-{i}"), None)
                            .await
                            .unwrap();
                    }
                    let mut new = k.clone();
                    new.extend_from_slice(format!("-new{pass}").as_bytes());
                    w.put(new, "created", None).await.unwrap();
                    if let Some(f) = first.take() {
                        let _ = f.send(());
                    }
                }
            }
        }
    });
    // The writer is running before the list starts.
    first_rx.await.unwrap();
    let mut client = src.etcd.connect(Duration::from_secs(5)).await.unwrap().0;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Stamped>(16);
    let lister = tokio::spawn({
        let src = src.clone();
        async move { regscope::source::etcd::list_once(&src, &mut client, tx, 0).await }
    });
    let mut got: BTreeMap<Vec<u8>, (Vec<u8>, i64)> = BTreeMap::new();
    let (mut pages, mut begins, mut count) = (0, 0, None);
    while let Some(st) = rx.recv().await {
        match st.obs {
            Observation::ListBegin { .. } => begins += 1,
            Observation::ListCount { keys } => count = Some(keys),
            Observation::ListPage { kvs } => {
                pages += 1;
                // A slow consumer keeps the list running while the writer writes.
                tokio::time::sleep(Duration::from_millis(3)).await;
                assert!(
                    kvs.windows(2).all(|w| w[0].key < w[1].key),
                    "page in key order"
                );
                for kv in kvs {
                    let dup = got.insert(kv.key.to_vec(), (kv.value.to_vec(), kv.mod_revision));
                    assert!(dup.is_none(), "listed twice: {:?}", kv.key);
                }
            }
            _ => {}
        }
    }
    let rev = lister.await.unwrap().expect("list");
    // Only the writer writes: a head past the list revision when the list ends means it
    // wrote while the list ran.
    let head_at_end = head_revision(&mut c).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    writer.await.unwrap();
    assert!(head_at_end > rev, "no write during the list (rev {rev})");
    assert_eq!(begins, 1);
    assert!(pages > 60, "tiny pages over many ranges: {pages}");
    // What etcd had under the prefix at the list revision, read in one unlimited range.
    let want: BTreeMap<Vec<u8>, (Vec<u8>, i64)> = c
        .get(
            "/registry/",
            Some(
                etcd_client::GetOptions::new()
                    .with_range("/registry0")
                    .with_revision(rev),
            ),
        )
        .await
        .unwrap()
        .kvs()
        .iter()
        .map(|kv| (kv.key().to_vec(), (kv.value().to_vec(), kv.mod_revision())))
        .collect();
    assert_eq!(count, Some(want.len() as u64));
    let missing: Vec<_> = want.keys().filter(|k| !got.contains_key(*k)).collect();
    let extra: Vec<_> = got.keys().filter(|k| !want.contains_key(*k)).collect();
    let show = |ks: &[&Vec<u8>]| -> Vec<String> {
        ks.iter()
            .take(5)
            .map(|k| regscope::model::escape_bytes(k).into_owned())
            .collect()
    };
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{} missing (first: {:?}), {} extra (first: {:?})",
        missing.len(),
        show(&missing),
        extra.len(),
        show(&extra)
    );
    // Same keys; now the same values and mod_revisions (one line per difference).
    for (k, v) in &want {
        assert_eq!(got.get(k), Some(v), "{}", regscope::model::escape_bytes(k));
    }
}

/// The test command runs this suite twice: against Debian's etcd (3.4) and with etcd 3.5.1
/// in front of PATH, naming the version it expects in `REGSCOPE_TEST_ETCD_VERSION`
/// (`scripts/test.sh`). This checks that the etcd the suites start is that one, as the
/// server reports itself to regscope (etcd's `Status` RPC), so the second run cannot
/// silently test the first version again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_etcd_under_test_is_the_version_asked_for() {
    require!(ETCD);
    let (e, mut c) = etcd().await;
    let status = c.status().await.expect("status");
    let mut h = Harness::start(source(&e.endpoint(), fast_sync()));
    h.catch_up(&mut c, T).await;
    let (_, version) = h.etcd.server().expect("the source reports the server");
    assert_eq!(version, status.version());
    match std::env::var("REGSCOPE_TEST_ETCD_VERSION") {
        Ok(want) => assert_eq!(
            version,
            want,
            "etcd on PATH: {:?}",
            regscope::demo::etcd_server::find_on_path("etcd")
        ),
        // A plain `cargo test`: any etcd regscope supports.
        Err(_) => assert!(
            version.starts_with("3.4.")
                || version.starts_with("3.5.")
                || version.starts_with("3.6."),
            "etcd {version}"
        ),
    }
}

/// etcd compacted at exactly the revision regscope resumes from (here while regscope was
/// cut off, after a DELETE at that revision): regscope lists again instead of opening a
/// watch there, where etcd 3.4 before 3.4.36 and 3.5 before 3.5.18 can miss that DELETE
/// once it finished the compaction at a restart (etcd-io/etcd#19179). A resume without a
/// compaction still neither relists nor sees an event twice (the watch opens one revision
/// early and drops that revision's events).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_at_exactly_the_resume_revision_relists() {
    require!(ETCD);
    let (e, mut c) = etcd().await;
    for i in 0..3 {
        c.put(format!("/registry/configmaps/default/k{i}"), "x", None)
            .await
            .unwrap();
    }
    let mut proxy = Proxy::start(addr_of(&e.endpoint())).await;
    let mut h = Harness::start(source(&proxy.url(), fast_sync()));
    h.catch_up(&mut c, T).await;
    h.until("watching", T, |r, _| {
        matches!(r.etcd.conn(), ConnState::Watching)
    })
    .await;
    // A resume with writes in between: no relist, no repeated event.
    proxy.cut().await;
    c.put("/registry/configmaps/default/k3", "x", None)
        .await
        .unwrap();
    proxy.restore().await;
    h.catch_up(&mut c, T).await;
    assert_eq!(h.seen.list_begins, 1, "a resume must not relist");
    assert_eq!(h.etcd.watch_health().repeated_events, 0);
    h.until("watching", T, |r, _| {
        matches!(r.etcd.conn(), ConnState::Watching)
    })
    .await;
    // The DELETE and a compaction at its revision, the one regscope resumes from.
    let ours = h.replica.revision();
    proxy.cut().await;
    let del = c
        .delete("/registry/configmaps/default/k0", None)
        .await
        .unwrap();
    let at = del.header().unwrap().revision();
    assert_eq!(at, ours + 1);
    c.compact(
        at,
        Some(etcd_client::CompactionOptions::new().with_physical()),
    )
    .await
    .unwrap();
    proxy.restore().await;
    h.until("relisted at the compaction", T, |r, _| {
        r.notes().iter().any(|(_, n)| {
            n.to_string().contains(&format!(
                "etcd compacted at {at}, exactly the revision the watch resumes from"
            ))
        })
    })
    .await;
    h.catch_up(&mut c, T).await;
    assert_eq!(h.seen.list_begins, 2, "one relist: {:?}", h.notes());
    assert!(h.replica.get(b"/registry/configmaps/default/k0").is_none());
    assert_eq!(h.etcd.watch_health().repeated_events, 0);
    assert_verified(&h).await;
}
