//! Who writes, at the demo's highest rate: what attributing every watch event to its
//! `managedFields` writer costs beside applying the event to the replica.
//!
//! A private etcd takes the demo simulation as fast as it accepts writes (`rate 0`, 20
//! nodes) for a few seconds; the events it wrote (real protobuf Pods, ReplicaSets, Events,
//! Leases, JSON custom resources) are read back with one watch from revision 1. Then, on
//! that stream: the replica's whole apply per event (which includes the writer counting),
//! and the writer counting alone ([`regscope::store::writers::Writers::count`]: the
//! managedFields scan, the row lookup, the per-second bucket). Printed: both per event, the
//! writers' share of the apply, and the CPU the counting takes at the rate etcd reached
//! (percent of one core).
//!
//! The marginal cost is the replica's apply with the counting on minus off
//! ([`regscope::store::ReplicaConfig::count_writers`]), best of five rounds each.
//!
//! Run: `cargo bench --bench writers` (needs etcd; `WRITERS_LOAD_SECS` to change the 8 s).

use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use etcd_client::{EventType, WatchOptions};
use regscope::demo::{PrivateEtcd, SimConfig, Simulation};
use regscope::model::{EventKind, KeyValue, Observation, Stamped, WatchEvent};
use regscope::store::writers::Writers;
use regscope::store::{Replica, ReplicaConfig};

fn model_kv(kv: &etcd_client::KeyValue) -> KeyValue {
    KeyValue {
        key: Bytes::copy_from_slice(kv.key()),
        create_revision: kv.create_revision(),
        mod_revision: kv.mod_revision(),
        version: kv.version(),
        lease: kv.lease(),
        value: Bytes::copy_from_slice(kv.value()),
    }
}

/// Every event etcd holds from revision 1 to `head`, with the deleted value of DELETEs.
async fn read_back(c: &mut etcd_client::Client, head: i64) -> Vec<WatchEvent> {
    let opts = WatchOptions::new()
        .with_prefix()
        .with_start_revision(1)
        .with_prev_key();
    let mut stream = c
        .watch_client()
        .max_decoding_message_size(256 << 20)
        .watch("/registry", Some(opts))
        .await
        .expect("watch");
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        let Ok(Ok(Some(resp))) =
            tokio::time::timeout(Duration::from_secs(10), stream.message()).await
        else {
            break;
        };
        for ev in resp.events() {
            let Some(kv) = ev.kv() else { continue };
            out.push(WatchEvent {
                kind: match ev.event_type() {
                    EventType::Put => EventKind::Put,
                    EventType::Delete => EventKind::Delete,
                },
                kv: model_kv(kv),
                prev_kv: ev.prev_kv().map(model_kv),
            });
        }
        if out.last().is_some_and(|e| e.kv.mod_revision >= head) {
            break;
        }
    }
    out
}

fn main() {
    let load_secs: u64 = std::env::var("WRITERS_LOAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (events, rate) = rt.block_on(async {
        let etcd = PrivateEtcd::start().await.expect("etcd");
        let mut c = etcd.client().await.expect("client");
        let cfg = SimConfig {
            rate: 0,
            nodes: 20,
            compact_interval: Duration::from_secs(3600),
            ..SimConfig::default()
        };
        let sim = Simulation::start(&etcd, cfg).await.expect("simulation");
        // The rate over the load window, after the bootstrap.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let head = |c: &mut etcd_client::Client| {
            let mut c = c.clone();
            async move { c.get("/", None).await.unwrap().header().unwrap().revision() }
        };
        let (r0, t0) = (head(&mut c).await, Instant::now());
        tokio::time::sleep(Duration::from_secs(load_secs)).await;
        let (r1, secs) = (head(&mut c).await, t0.elapsed().as_secs_f64());
        let _ = sim.stop().await;
        let last = head(&mut c).await;
        let events = read_back(&mut c, last).await;
        (events, (r1 - r0) as f64 / secs)
    });
    assert!(
        events.len() > 1000,
        "only {} events read back",
        events.len()
    );
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    // Stamped ten thousand events a second, so that the rate buckets turn over.
    let stamped: Vec<Stamped> = events
        .iter()
        .enumerate()
        .map(|(i, e)| Stamped {
            at: t0 + Duration::from_micros(i as u64 * 100),
            obs: Observation::Events {
                revision: e.kv.mod_revision,
                events: vec![e.clone()],
            },
        })
        .collect();
    let mut best_apply = f64::MAX;
    let mut best_bare = f64::MAX;
    let mut best_count = f64::MAX;
    let mut best_scan = f64::MAX;
    let mut rows = 0;
    for round in 0..10 {
        // Alternately with and without the writer counting, the same stream.
        let count_writers = round % 2 == 0;
        let mut r = Replica::new(ReplicaConfig {
            count_writers,
            ..ReplicaConfig::default()
        });
        r.disable_packing();
        for obs in [
            Observation::ListBegin { revision: 0 },
            Observation::ListPage { kvs: vec![] },
            Observation::ListDone {
                revision: 0,
                compacted: None,
            },
        ] {
            r.apply(&Stamped { at: t0, obs });
        }
        let t = Instant::now();
        for s in &stamped {
            r.apply(s);
        }
        let secs = t.elapsed().as_secs_f64();
        if !count_writers {
            best_bare = best_bare.min(secs);
            continue;
        }
        best_apply = best_apply.min(secs);
        rows = r.writers().len();

        let mut w = Writers::default();
        let t = Instant::now();
        for (i, e) in events.iter().enumerate() {
            let delete = e.kind == EventKind::Delete;
            let value = if delete {
                e.prev_kv.as_ref().map_or(&b""[..], |p| &p.value[..])
            } else {
                &e.kv.value[..]
            };
            w.count(0, value, 1_700_000_000 + i as u64 / 10_000, delete);
        }
        best_count = best_count.min(t.elapsed().as_secs_f64());
        std::hint::black_box(&w);
        let t = Instant::now();
        for e in &events {
            let value = match e.kind {
                EventKind::Delete => e.prev_kv.as_ref().map_or(&b""[..], |p| &p.value[..]),
                EventKind::Put => &e.kv.value[..],
            };
            std::hint::black_box(regscope::decode::last_writer(value));
        }
        best_scan = best_scan.min(t.elapsed().as_secs_f64());
    }
    let n = events.len() as f64;
    let apply_ns = best_apply / n * 1e9;
    let bare_ns = best_bare / n * 1e9;
    let count_ns = best_count / n * 1e9;
    let scan_ns = best_scan / n * 1e9;
    let bytes: usize = events.iter().map(|e| e.kv.value.len()).sum();
    println!(
        "writers: {} events read back ({:.0} B mean value), {rows} writer rows; demo at its highest rate: {rate:.0} revisions/s",
        events.len(),
        bytes as f64 / n
    );
    let extra_ns = apply_ns - bare_ns;
    println!(
        "writers: replica apply {apply_ns:.0} ns/event with writers, {bare_ns:.0} without: the writers add {extra_ns:.0} ns/event ({:.0}%); counting alone, values cold: {count_ns:.0} ns/event ({scan_ns:.0} of it reading managedFields)",
        100.0 * extra_ns / bare_ns
    );
    println!(
        "writers: at the demo's highest rate ({rate:.0} events/s) the writers cost {:.2}% of one core beyond the replica's own work",
        100.0 * rate * extra_ns.max(0.0) / 1e9
    );
}
