//! Parse time of real kube-apiserver and etcd `/metrics` captures on one core (the scrape
//! cycle's budget: below 2 % of a core at the default 5 s interval, i.e. under 100 ms per
//! scrape for everything).
//!
//! Also the whole scrape cycle (store apply + derive), the memory per series-hour, and
//! `regscope snapshot --json` (the binary) on each kube-apiserver/etcd capture pair, start
//! to exit (target: under 15 s each, the bound its test once held in an unoptimised build).
//!
//! Run: `cargo bench --bench metrics_parse`. Inputs come from `../shared/testdata`; the
//! bench prints a note and exits 0 when they are absent.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use regscope::metrics::concepts::{map, table};
use regscope::metrics::exposition::parse;
use regscope::model::{Bytes, Observation, ScrapeOutcome, ScrapeTarget, Stamped};
use regscope::store::{InformerLag, MetricStore};

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// A scrape body whose counters moved: every sample value of the capture plus `i`
/// (histograms stay monotonic), so successive scrapes give real deltas.
fn bumped(body: &str, i: u64) -> String {
    let mut out = String::with_capacity(body.len() + 64 * 1024);
    for line in body.lines() {
        if line.starts_with('#') || line.is_empty() {
            out.push_str(line);
        } else if let Some((head, v)) = line.rsplit_once(' ') {
            match v.parse::<f64>() {
                Ok(x) if x.is_finite() => {
                    out.push_str(head);
                    out.push(' ');
                    out.push_str(&(x + i as f64).to_string());
                }
                _ => out.push_str(line),
            }
        }
        out.push('\n');
    }
    out
}

fn stamped(at: u64, body: Bytes) -> Stamped {
    Stamped {
        at: std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000 + at),
        obs: Observation::Scrape {
            target: ScrapeTarget::Apiserver,
            outcome: ScrapeOutcome::Body {
                source: "bench".into(),
                body,
            },
        },
    }
}

/// Parse + map alone, then the whole cycle the console runs per scrape (store apply:
/// parse, map, push into the ring series; then derive every panel), and the memory the
/// series hold per series-hour (720 scrapes = one hour at 5 s).
fn cycle(root: &Path) {
    let rel = "apiserver-metrics/kube-apiserver-v1.34.0.prom";
    let Ok(body) = std::fs::read_to_string(root.join(rel)) else {
        return;
    };
    let t = table();
    let e = parse(body.as_bytes());
    let map_only = median(
        (0..20)
            .map(|_| {
                let start = Instant::now();
                black_box(map(t, black_box(&e)));
                start.elapsed().as_secs_f64()
            })
            .collect(),
    );
    let parse_map = median(
        (0..20)
            .map(|_| {
                let start = Instant::now();
                black_box(map(t, &parse(black_box(body.as_bytes()))));
                start.elapsed().as_secs_f64()
            })
            .collect(),
    );
    println!(
        "map {rel}: {} mapped series -> median {:.2} ms; parse + map {:.1} ms",
        map(t, &e).series.len(),
        map_only * 1e3,
        parse_map * 1e3
    );
    let hour = 720u64;
    let bodies: Vec<Bytes> = (0..8).map(|i| Bytes::from(bumped(&body, i))).collect();
    let mut store = MetricStore::new(hour as usize);
    let informers = InformerLag::default();
    let mut apply_times = Vec::new();
    let mut derive_times = Vec::new();
    for i in 0..hour {
        // Counters must grow: reuse 8 bodies but keep the order increasing in blocks.
        let st = stamped(i * 5, bodies[(i % 8) as usize].clone());
        let start = Instant::now();
        store.apply(&st);
        apply_times.push(start.elapsed().as_secs_f64());
        if i % 24 == 0 || i == hour - 1 {
            let start = Instant::now();
            black_box(regscope::derive::apiserver::build(
                &store,
                None,
                &informers,
                std::time::SystemTime::now(),
            ));
            derive_times.push(start.elapsed().as_secs_f64());
        }
    }
    let apply = median(apply_times);
    let derive = median(derive_times);
    let target = store.target(ScrapeTarget::Apiserver);
    let bytes = target.approx_bytes();
    let series = target.series_count();
    println!(
        "scrape cycle (apply {:.1} ms + derive {:.1} ms) = {:.2} % of a core at a 5 s interval",
        apply * 1e3,
        derive * 1e3,
        (apply + derive) / 5.0 * 100.0
    );
    println!(
        "memory: {series} series x 1 h (720 scrapes) hold {:.1} MiB -> {:.1} KiB per series-hour",
        bytes as f64 / 1048576.0,
        bytes as f64 / series as f64 / 1024.0
    );
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/testdata");
    let files = [
        "apiserver-metrics/kube-apiserver-v1.28.3.prom",
        "apiserver-metrics/kube-apiserver-v1.34.0.prom",
        "etcd-metrics/etcd-3.6.4-k8s-v1.34.0.prom",
        "controlplane-metrics/kube-controller-manager-v1.34.0.prom",
        "controlplane-metrics/kube-scheduler-v1.34.0.prom",
    ];
    for rel in files {
        let Ok(body) = std::fs::read(root.join(rel)) else {
            println!("metrics bench: {rel} absent, skipped");
            continue;
        };
        let e = parse(&body);
        let median = median(
            (0..20)
                .map(|_| {
                    let start = Instant::now();
                    black_box(parse(black_box(&body)));
                    start.elapsed().as_secs_f64()
                })
                .collect(),
        );
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
    cycle(&root);
    snapshots(&root);
}

/// `regscope snapshot --json` on each capture pair, as `tests/offline/apiserver_cli.rs`
/// runs it: the median wall time of three runs, process start to exit.
fn snapshots(root: &Path) {
    let pairs = [
        ("v1.28.3", "3.5.9"),
        ("v1.30.0", "3.5.12"),
        ("v1.32.0", "3.5.16"),
        ("v1.34.0", "3.6.4"),
    ];
    let home = std::env::temp_dir();
    for (k8s, etcd) in pairs {
        let api = root.join(format!("apiserver-metrics/kube-apiserver-{k8s}.prom"));
        let etcd_file = root.join(format!("etcd-metrics/etcd-{etcd}-k8s-{k8s}.prom"));
        if !api.is_file() || !etcd_file.is_file() {
            println!("metrics bench: the {k8s} capture pair is absent, skipped");
            continue;
        }
        let took = median(
            (0..3)
                .map(|_| {
                    let start = Instant::now();
                    let out = std::process::Command::new(env!("CARGO_BIN_EXE_regscope"))
                        .args(["snapshot", "--json", "--apiserver-metrics-file"])
                        .arg(&api)
                        .arg("--etcd-metrics-file")
                        .arg(&etcd_file)
                        .env_remove("KUBECONFIG")
                        .env_remove("ETCDCTL_ENDPOINTS")
                        .env("HOME", &home)
                        .output()
                        .expect("run regscope");
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    start.elapsed().as_secs_f64()
                })
                .collect(),
        );
        println!(
            "snapshot --json on the {k8s} / etcd {etcd} capture pair: median {:.3} s (target < 15 s)",
            took
        );
    }
}
