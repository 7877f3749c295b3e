//! Parse time of real kube-apiserver and etcd `/metrics` captures on one core (issue 4's
//! scrape cycle budget: below 2 % of a core at the default 5 s interval, i.e. under 100 ms per
//! scrape for everything).
//!
//! Run: `cargo bench --bench metrics_parse`. Inputs come from `../shared/testdata`; the
//! bench prints a note and exits 0 when they are absent.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use regscope::metrics::exposition::parse;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/testdata");
    let files = [
        "apiserver-metrics/kube-apiserver-v1.28.3.prom",
        "apiserver-metrics/kube-apiserver-v1.34.0.prom",
        "etcd-metrics/etcd-3.6.4-k8s-v1.34.0.prom",
    ];
    for rel in files {
        let Ok(body) = std::fs::read(root.join(rel)) else {
            println!("metrics bench: {rel} absent, skipped");
            continue;
        };
        let e = parse(&body);
        let rounds = 20;
        let mut times: Vec<f64> = (0..rounds)
            .map(|_| {
                let start = Instant::now();
                black_box(parse(black_box(&body)));
                start.elapsed().as_secs_f64()
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let median = times[rounds / 2];
        println!(
            "parse {rel}: {} bytes, {} samples, {} families, {} skipped -> median {:.1} ms ({:.0} MB/s), {:.2} % of a core at a 5 s interval",
            body.len(),
            e.samples.len(),
            e.families.len(),
            e.skipped.len(),
            median * 1e3,
            body.len() as f64 / median / 1e6,
            median / 5.0 * 100.0
        );
    }
}
