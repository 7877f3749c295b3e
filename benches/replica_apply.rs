//! Replica apply throughput and memory per key.
//!
//! `cargo bench --bench replica_apply` prints:
//! - watch events applied per second on one core, 1 KiB values, 100,000 keys, batches of
//!   1,000 events (target: ≥ 1,000,000/s);
//! - resident memory per live key for 100,000 keys of ~2 KiB, against the raw value bytes.

use std::hint::black_box;
use std::time::{Instant, SystemTime};

use bytes::Bytes;
use regscope::model::{EventKind, KeyValue, Observation, Stamped, WatchEvent};
use regscope::store::{Replica, ReplicaConfig};

fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn key(i: usize) -> Bytes {
    Bytes::from(format!(
        "/registry/pods/namespace-{:03}/pod-{i:07}",
        i % 200
    ))
}

fn main() {
    // Memory first, in a fresh process, so freed memory from the throughput run cannot
    // hide growth.
    memory();
    throughput();
}

fn throughput() {
    let keys: Vec<Bytes> = (0..100_000).map(key).collect();
    let value = Bytes::from(vec![b'v'; 1024]);
    let at = SystemTime::now();

    // Build the batches first so only apply is timed.
    let total = 2_000_000usize;
    let mut rev = 1i64;
    let mut batches = Vec::with_capacity(total / 1000);
    for b in 0..total / 1000 {
        let mut events = Vec::with_capacity(1000);
        for j in 0..1000 {
            rev += 1;
            let i = (b * 1000 + j) % keys.len();
            events.push(WatchEvent {
                kind: EventKind::Put,
                kv: KeyValue {
                    key: keys[i].clone(),
                    create_revision: 2,
                    mod_revision: rev,
                    version: 1,
                    lease: 0,
                    value: value.clone(),
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
    black_box(&replica);
    println!(
        "replica_apply: {} events (1 KiB values, 100k keys, history budget {} MiB) in {:.3} s = {:.0} events/s",
        total,
        ReplicaConfig::default().history_budget >> 20,
        el.as_secs_f64(),
        total as f64 / el.as_secs_f64()
    );
}

fn memory() {
    let at = SystemTime::now();
    // Memory per key: 100,000 live keys of ~2 KiB, listed (no history).
    let value_len = 2048;
    let before = rss_bytes();
    let mut raw = 0usize;
    let mut replica = Replica::new(ReplicaConfig::default());
    replica.apply(&Stamped {
        at,
        obs: Observation::ListBegin { revision: 100_001 },
    });
    // Pages of 500 keys, as the source lists them.
    for page in 0..200 {
        let kvs: Vec<KeyValue> = (page * 500..(page + 1) * 500)
            .map(|i| KeyValue {
                key: key(i),
                create_revision: 2 + i as i64,
                mod_revision: 2 + i as i64,
                version: 1,
                lease: 0,
                value: Bytes::from(vec![b'x'; value_len]),
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
            revision: 100_001,
            compacted: None,
        },
    });
    let after = rss_bytes();
    let per_key = (after.saturating_sub(before)) as f64 / 100_000.0;
    println!(
        "replica_memory: 100000 keys, raw key+value {:.1} MiB, RSS growth {:.1} MiB, {:.0} bytes/key ({:.0} bytes/key beyond raw)",
        raw as f64 / 1048576.0,
        (after.saturating_sub(before)) as f64 / 1048576.0,
        per_key,
        per_key - raw as f64 / 100_000.0
    );
    black_box(&replica);
}
