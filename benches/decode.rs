//! Decode throughput on one core (the bench is single-threaded):
//! - `summarize`, the per-row decode used by key lists and the live event stream (target
//!   >= 500,000 objects/s for a typical Pod);
//! - `decode`, the full schema-driven decode of a stored value to the apiserver's JSON text
//!   (target >= 20,000 objects/s for the fixture Pod, stretch 50,000/s), with and without
//!   the mod_revision filled in as metadata.resourceVersion;
//! - the mutation fuzzing's values (`tests/offline/decode_fuzz.rs`, its mutator shared):
//!   the slowest of a fixed-seed run through `summarize`, `decode` and `render`, as the
//!   fuzz test feeds every input (target: under 5 s per value; about 0.15 s measured for
//!   the largest inputs when the target was set).
//!
//! Run: `cargo bench --bench decode`. Inputs come from `../shared/testdata` (relative to the
//! package); the bench prints a note and exits 0 when they are absent.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use rand::SeedableRng;

use regscope::decode::{decode, render, summarize, DecodeOptions, RenderOptions};

/// Calls `f` in five rounds of `budget / 5` and returns the median calls per second (this
/// machine is a shared VM: single rounds vary by ±30 %).
fn rate<R>(budget: Duration, mut f: impl FnMut() -> R) -> f64 {
    // Warm up caches, branch predictors and the schema plans.
    for _ in 0..1_000 {
        black_box(f());
    }
    let round = budget / 5;
    let mut rates: Vec<f64> = (0..5)
        .map(|_| {
            let start = Instant::now();
            let mut n: u64 = 0;
            while start.elapsed() < round {
                for _ in 0..200 {
                    black_box(f());
                }
                n += 200;
            }
            n as f64 / start.elapsed().as_secs_f64()
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[2]
}

/// Calls `summarize` on `value` for about `budget` and returns objects per second.
fn measure(value: &[u8], budget: Duration) -> f64 {
    rate(budget, || summarize(black_box(value)))
}

/// Full decode to JSON text; returns (objects/s, JSON bytes).
fn measure_full(value: &[u8], opts: &DecodeOptions<'_>, budget: Duration) -> (f64, usize) {
    let d = decode(value, opts);
    assert!(d.error.is_none(), "{:?}", d.error);
    let len = d.json.as_ref().map_or(0, String::len);
    (rate(budget, || decode(black_box(value), opts).json), len)
}

#[path = "../tests/offline/decode_fuzz/mutate.rs"]
mod mutate;

/// The mutation fuzzing's per-value time: `FUZZ_INPUTS` values (default 20,000) mutated
/// from the golden `.pb` values with a fixed seed, each through `summarize`, `decode` and
/// `render` as the fuzz test feeds it; prints the slowest and its size.
fn fuzz_worst(root: &Path) {
    let mut corpus = Vec::new();
    for sub in ["k8s-api/v1.30.3", "k8s-api/head"] {
        let Ok(rd) = std::fs::read_dir(root.join(sub)) else {
            continue;
        };
        let mut files: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        files.sort();
        for p in files
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "pb"))
        {
            corpus.push(std::fs::read(p).expect("a golden value"));
        }
    }
    if corpus.is_empty() {
        println!("decode bench: no golden .pb values, fuzz figure skipped");
        return;
    }
    let n: usize = std::env::var("FUZZ_INPUTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let (mut slowest, mut slowest_len) = (Duration::ZERO, 0);
    for _ in 0..n {
        let v = mutate::mutate(&mut rng, &corpus);
        let start = Instant::now();
        black_box(summarize(black_box(&v)));
        black_box(decode(black_box(&v), &DecodeOptions::default()));
        black_box(render(
            black_box(&v),
            &RenderOptions {
                etcd_key: b"/registry/pods/default/p1",
                ..Default::default()
            },
        ));
        let took = start.elapsed();
        if took > slowest {
            (slowest, slowest_len) = (took, v.len());
        }
    }
    println!(
        "mutated values ({n}, seed 1, up to {} bytes): slowest summarize + decode + render {:.3} s for {slowest_len} bytes (target < 5 s)",
        mutate::MAX_INPUT,
        slowest.as_secs_f64()
    );
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
        let start = Instant::now();
        let first = decode(&value, &DecodeOptions::default());
        println!(
            "first decode (loads the schema plans): {:.1} ms, schema {:?}",
            start.elapsed().as_secs_f64() * 1e3,
            first.schema
        );
        for (label, opts) in [
            ("decode to JSON", DecodeOptions::default()),
            (
                "decode to JSON + resourceVersion",
                DecodeOptions {
                    mod_revision: Some(123_456),
                    ..Default::default()
                },
            ),
        ] {
            let (r, len) = measure_full(&value, &opts, Duration::from_secs(2));
            println!(
                "{label} {what}: {} bytes -> {len} bytes JSON, {r:.0} objects/s ({:.1} µs/object)",
                value.len(),
                1e6 / r
            );
        }
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
        "summarize JSON Widget (a custom resource stored as JSON): {} bytes -> {:.0} objects/s ({:.0} ns/object)",
        widget.len(),
        rate,
        1e9 / rate
    );
    fuzz_worst(&root);
    if !any {
        println!("decode bench: no testdata found under {}", root.display());
    }
}
