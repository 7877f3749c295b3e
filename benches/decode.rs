//! Throughput of `regscope::decode::summarize`, the per-row decode used by key lists and the
//! live event stream. Target: >= 500,000 objects/s on one core for a typical Pod.
//!
//! Run: `cargo bench --bench decode`. Inputs come from `../shared/testdata` (relative to the
//! package); the bench prints a note and exits 0 when they are absent.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use regscope::decode::summarize;

/// Calls `summarize` on `value` for about `budget` and returns objects per second.
fn measure(value: &[u8], budget: Duration) -> f64 {
    // Warm up caches and branch predictors.
    for _ in 0..10_000 {
        black_box(summarize(black_box(value)));
    }
    let start = Instant::now();
    let mut n: u64 = 0;
    while start.elapsed() < budget {
        for _ in 0..10_000 {
            black_box(summarize(black_box(value)));
        }
        n += 10_000;
    }
    n as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/testdata");
    let inputs = [
        (
            "k8s-api/v1.30.3/core.v1.Pod.pb",
            "fixture Pod, every field set",
        ),
        (
            "etcd-registry/auger/storage/pod.bin",
            "GKE Pod from etcd (+ newline)",
        ),
    ];
    let mut any = false;
    for (rel, what) in inputs {
        let path = root.join(rel);
        let Ok(value) = std::fs::read(&path) else {
            println!("decode bench: {} absent, skipped", path.display());
            continue;
        };
        any = true;
        let s = summarize(&value);
        let rate = measure(&value, Duration::from_secs(2));
        println!(
            "summarize {what}: {} bytes, {}/{} {}/{} -> {:.0} objects/s ({:.0} ns/object)",
            value.len(),
            s.api_version.unwrap_or_default(),
            s.kind.unwrap_or_default(),
            s.namespace.unwrap_or_default(),
            s.name.unwrap_or_default(),
            rate,
            1e9 / rate
        );
    }
    let widget = br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","namespace":"default","uid":"00000000-0000-0000-0000-000000000001","creationTimestamp":"2024-01-01T00:00:00Z"},"spec":{"size":3}}
"#;
    let rate = measure(widget, Duration::from_secs(1));
    println!(
        "summarize JSON Widget (BR-02): {} bytes -> {:.0} objects/s ({:.0} ns/object)",
        widget.len(),
        rate,
        1e9 / rate
    );
    if !any {
        println!("decode bench: no testdata found under {}", root.display());
    }
}
