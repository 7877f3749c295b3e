//! Replica apply throughput and resident memory, on real Kubernetes encodings (the `mixed`
//! key set of `common/keyset.rs`: Events, Leases, ConfigMaps and Secrets).
//!
//! `cargo bench --bench replica_apply` prints:
//! - memory: a list of `REPLICA_APPLY_KEYS` keys (default 1,000,000, about 510 MiB of keys
//!   and values) applied in pages as the source lists them; resident memory right after the
//!   list, and again once the packing worker has caught up, against the raw key + value
//!   bytes (target ≤ 1.0×, stretch 0.5×);
//! - throughput: watch events applied per second on the session's thread (target ≥
//!   1,000,000/s), 2,000,000 updates over 100,000 of those keys in batches of 1,000, with
//!   values packed behind it on the worker thread; and how far packing got.
//!
//! Memory is measured first, in a fresh process, so freed memory from the throughput run
//! cannot hide growth.

use std::hint::black_box;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use regscope::model::{EventKind, KeyValue, Observation, Stamped, WatchEvent};
use regscope::store::{Replica, ReplicaConfig};

#[path = "common/keyset.rs"]
mod keyset;

fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn mib(b: usize) -> f64 {
    b as f64 / 1048576.0
}

/// Polls the replica until its packing worker has caught up (at most `limit`).
fn wait_packed(replica: &mut Replica, limit: Duration) -> Duration {
    let t = Instant::now();
    while replica.memory().packing_outstanding > 0 && t.elapsed() < limit {
        replica.maintain();
        std::thread::sleep(Duration::from_millis(20));
    }
    t.elapsed()
}

fn main() {
    memory();
    throughput();
}

fn memory() {
    let n: usize = std::env::var("REPLICA_APPLY_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let at = SystemTime::now();
    let mut rng = SmallRng::seed_from_u64(0x5eed);
    let before = rss_bytes();
    let mut raw = 0usize;
    let mut replica = Replica::new(ReplicaConfig::default());
    replica.apply(&Stamped {
        at,
        obs: Observation::ListBegin {
            revision: n as i64 + 1,
        },
    });
    let t = Instant::now();
    // Pages of about 4 MiB, as the source lists them.
    let page = 8_000;
    for start in (0..n).step_by(page) {
        let kvs: Vec<KeyValue> = (start..(start + page).min(n))
            .map(|i| {
                let (k, v) = keyset::entry("mixed", &mut rng, i);
                KeyValue {
                    key: Bytes::from(k),
                    create_revision: 2 + i as i64,
                    mod_revision: 2 + i as i64,
                    version: 1,
                    lease: 0,
                    value: Bytes::from(v),
                }
            })
            .collect();
        raw += kvs
            .iter()
            .map(|kv| kv.value.len() + kv.key.len())
            .sum::<usize>();
        replica.apply(&Stamped {
            at,
            obs: Observation::ListPage { kvs },
        });
    }
    replica.apply(&Stamped {
        at,
        obs: Observation::ListDone {
            revision: n as i64 + 1,
            compacted: None,
        },
    });
    let listed = t.elapsed();
    let after_list = rss_bytes().saturating_sub(before);
    let waited = wait_packed(&mut replica, Duration::from_secs(120));
    // mimalloc gives freed pages back after a short delay.
    std::thread::sleep(Duration::from_secs(2));
    replica.maintain();
    let after_pack = rss_bytes().saturating_sub(before);
    regscope::release_free_memory();
    let after_collect = rss_bytes().saturating_sub(before);
    let m = replica.memory();
    println!(
        "replica_memory: {n} keys (mixed set), raw key+value {:.1} MiB; listed (generated and applied) in {:.1} s",
        mib(raw),
        listed.as_secs_f64()
    );
    println!(
        "  resident growth right after the list {:.1} MiB = {:.2}x raw; after packing caught up ({:.1} s more) {:.1} MiB = {:.2}x raw (target <= 1.0x, stretch 0.5x)",
        mib(after_list),
        after_list as f64 / raw as f64,
        waited.as_secs_f64(),
        mib(after_pack),
        after_pack as f64 / raw as f64
    );
    println!(
        "  after the allocator gave freed memory back: {:.1} MiB = {:.2}x raw",
        mib(after_collect),
        after_collect as f64 / raw as f64
    );
    println!(
        "  packed {} values: {:.1} MiB raw held in {:.1} MiB ({:.2}x); key table {:.1} MiB; {} still to pack",
        m.packed_values,
        mib(m.packed_raw_bytes as usize),
        mib(m.packed_bytes as usize),
        m.packed_raw_bytes as f64 / m.packed_bytes.max(1) as f64,
        mib(m.table_bytes as usize),
        m.packing_outstanding
    );
    black_box(&replica);
}

fn throughput() {
    let n_keys = 100_000;
    let mut rng = SmallRng::seed_from_u64(0x5eed);
    let entries: Vec<(Bytes, Bytes)> = (0..n_keys)
        .map(|i| {
            let (k, v) = keyset::entry("mixed", &mut rng, i);
            (Bytes::from(k), Bytes::from(v))
        })
        .collect();
    let at = SystemTime::now();

    // Build the batches first so only apply is timed.
    let total = 2_000_000usize;
    let mut rev = 1i64;
    let mut batches = Vec::with_capacity(total / 1000);
    for b in 0..total / 1000 {
        let mut events = Vec::with_capacity(1000);
        for j in 0..1000 {
            rev += 1;
            let (k, v) = &entries[(b * 1000 + j) % n_keys];
            events.push(WatchEvent {
                kind: EventKind::Put,
                kv: KeyValue {
                    key: k.clone(),
                    create_revision: 2,
                    mod_revision: rev,
                    version: 1,
                    lease: 0,
                    value: v.clone(),
                },
                prev_kv: None,
            });
        }
        batches.push(Stamped {
            at,
            obs: Observation::Events {
                revision: rev,
                events,
            },
        });
    }
    let mut replica = Replica::new(ReplicaConfig::default());
    replica.apply(&Stamped {
        at,
        obs: Observation::ListDone {
            revision: 1,
            compacted: None,
        },
    });
    let t = Instant::now();
    for b in &batches {
        replica.apply(b);
    }
    let el = t.elapsed();
    let m = replica.memory();
    println!(
        "replica_apply: {} events (mixed set values, {n_keys} keys, history budget {} MiB) in {:.3} s = {:.0} events/s on the session's thread (target >= 1,000,000/s); {} values packed meanwhile on the worker, {} waiting",
        total,
        ReplicaConfig::default().history_budget >> 20,
        el.as_secs_f64(),
        total as f64 / el.as_secs_f64(),
        m.packed_values,
        m.packing_outstanding
    );
    let waited = wait_packed(&mut replica, Duration::from_secs(60));
    let m = replica.memory();
    println!(
        "  packing caught up {:.1} s later: {} values packed ({:.1} MiB raw in {:.1} MiB), {} waiting",
        waited.as_secs_f64(),
        m.packed_values,
        mib(m.packed_raw_bytes as usize),
        mib(m.packed_bytes as usize),
        m.packing_outstanding
    );
    black_box(&replica);
}
