//! Decode throughput on one core (the bench is single-threaded):
//! - `summarize`, the per-row decode used by key lists and the live event stream (target
//!   >= 500,000 objects/s for a typical Pod);
//! - `decode`, the full schema-driven decode of a stored value to the apiserver's JSON text
//!   (target >= 20,000 objects/s for the fixture Pod, stretch 50,000/s), with and without
//!   the mod_revision filled in as metadata.resourceVersion;
//! - the worst shapes the mutation fuzzing (`tests/offline/decode_fuzz.rs`) makes: a value
//!   grown to 2 MiB by repeating itself, and one wrapped in 400 nested length-delimited
//!   fields behind a Pod's envelope, each through `summarize`, `decode` and `render` as the
//!   fuzz test feeds every input (target: under 5 s per value; about 0.15 s measured when
//!   the target was set).
//!
//! Run: `cargo bench --bench decode`. Inputs come from `../shared/testdata` (relative to the
//! package); the bench prints a note and exits 0 when they are absent.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

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

/// The fuzz test's largest inputs, made from `value`: (what, bytes).
fn worst_shapes(value: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    const MAX_INPUT: usize = 2 << 20;
    let mut grown = Vec::with_capacity(MAX_INPUT);
    while grown.len() + value.len() < MAX_INPUT {
        grown.extend_from_slice(value);
    }
    let mut nested = value.to_vec();
    for _ in 0..400 {
        let mut w = vec![0x12];
        let mut n = nested.len();
        while n >= 0x80 {
            w.push((n as u8) | 0x80);
            n >>= 7;
        }
        w.push(n as u8);
        w.extend_from_slice(&nested);
        nested = w;
    }
    let mut wrapped = b"k8s\x00\x0a\x09\x0a\x02v1\x12\x03Pod".to_vec();
    wrapped.extend_from_slice(&nested);
    vec![
        ("repeated to 2 MiB", grown),
        ("400 nested length fields in a Pod envelope", wrapped),
    ]
}

/// `summarize`, `decode` and `render` of `value`, as the fuzz test calls them: the median
/// of three rounds.
fn fuzz_call_time(value: &[u8]) -> Duration {
    let mut times: Vec<Duration> = (0..3)
        .map(|_| {
            let start = Instant::now();
            black_box(summarize(black_box(value)));
            black_box(decode(black_box(value), &DecodeOptions::default()));
            black_box(render(
                black_box(value),
                &RenderOptions {
                    etcd_key: b"/registry/pods/default/p1",
                    ..Default::default()
                },
            ));
            start.elapsed()
        })
        .collect();
    times.sort();
    times[1]
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
        for (shape, v) in worst_shapes(&value) {
            let took = fuzz_call_time(&v);
            println!(
                "worst shape of {what}, {shape}: {} bytes -> summarize + decode + render in {:.3} s (target < 5 s)",
                v.len(),
                took.as_secs_f64()
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
    if !any {
        println!("decode bench: no testdata found under {}", root.display());
    }
}
