//! Every real `/metrics` capture in `../shared/testdata` parses completely, and the facts its
//! README states hold (families, samples, values, histogram invariants).

use std::collections::BTreeMap;

use regscope::metrics::exposition::{parse, Exposition, MetricType};

use crate::common::fixtures;
use crate::common::require;

use fixtures::testdata;

fn load(rel: &str) -> (Vec<u8>, Exposition) {
    let body = std::fs::read(testdata().join(rel)).unwrap();
    let e = parse(&body);
    (body, e)
}

/// Non-empty, non-comment lines: every one of them is a valid sample in these captures.
fn sample_lines(body: &[u8]) -> usize {
    body.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty() && !l.starts_with(b"#"))
        .count()
}

/// A histogram series: (name without `_bucket`, labels other than `le`).
type SeriesKey = (String, Vec<(String, String)>);

/// One row of the apiserver facts table.
type ApiserverFacts<'a> = (&'a str, usize, usize, f64, &'a [(&'a str, &'a str)]);

fn value(e: &Exposition, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    e.samples_named(name)
        .find(|s| labels.iter().all(|(k, v)| s.label(k) == Some(v)))
        .map(|s| s.value)
}

/// For every histogram series: buckets non-decreasing in `le`, and `le="+Inf"` = `_count`.
fn check_histograms(e: &Exposition) -> usize {
    let mut series: BTreeMap<SeriesKey, Vec<(f64, f64)>> = BTreeMap::new();
    for s in &e.samples {
        let Some(base) = s.name.strip_suffix("_bucket") else {
            continue;
        };
        if e.family_of(&s.name).map(|f| f.kind) != Some(MetricType::Histogram) {
            continue;
        }
        let le = s.label("le").expect("bucket has le");
        let le: f64 = if le == "+Inf" {
            f64::INFINITY
        } else {
            le.parse().unwrap()
        };
        let rest: Vec<(String, String)> = s
            .labels
            .iter()
            .filter(|(k, _)| k != "le")
            .cloned()
            .collect();
        series
            .entry((base.to_owned(), rest))
            .or_default()
            .push((le, s.value));
    }
    for ((base, labels), mut buckets) in series.clone() {
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert!(
            buckets.windows(2).all(|w| w[0].1 <= w[1].1),
            "{base} {labels:?}: buckets decrease"
        );
        let count = e
            .samples_named(&format!("{base}_count"))
            .find(|s| s.labels == labels)
            .map(|s| s.value);
        assert_eq!(buckets.last().map(|b| b.0), Some(f64::INFINITY), "{base}");
        assert_eq!(count, buckets.last().map(|b| b.1), "{base} {labels:?}");
    }
    series.len()
}

#[test]
fn apiserver_captures_parse_completely_with_the_stated_facts() {
    require!(TESTDATA);
    // (version, families, samples, pods watch-cache capacity and its labels)
    let table: [ApiserverFacts; 4] = [
        ("1.28.3", 209, 19007, 100.0, &[("resource", "pods")]),
        ("1.30.0", 254, 23448, 200.0, &[("resource", "pods")]),
        ("1.32.0", 262, 23967, 200.0, &[("resource", "pods")]),
        (
            "1.34.0",
            272,
            24311,
            100.0,
            &[("group", ""), ("resource", "pods")],
        ),
    ];
    for (v, families, samples, pods_cap, pods_labels) in table {
        let (body, e) = load(&format!("apiserver-metrics/kube-apiserver-v{v}.prom"));
        assert!(e.skipped.is_empty(), "{v}: {:?}", &e.skipped[..1]);
        assert_eq!(e.samples.len(), sample_lines(&body), "{v}");
        assert_eq!(e.samples.len(), samples, "{v}");
        assert_eq!(e.families.len(), families, "{v}");
        let build = e
            .samples_named("kubernetes_build_info")
            .next()
            .and_then(|s| s.label("git_version"))
            .unwrap();
        assert_eq!(build, format!("v{v}"));
        assert_eq!(
            value(&e, "watch_cache_capacity", pods_labels),
            Some(pods_cap),
            "{v}"
        );
        assert!(e
            .samples_named("apiserver_watch_cache_capacity")
            .next()
            .is_none());
        let n = check_histograms(&e);
        assert!(n > 100, "{v}: {n} histogram series");
    }
}

#[test]
fn etcd_captures_parse_completely_with_the_stated_facts() {
    require!(TESTDATA);
    // (file, server version, current revision, keys, db size)
    let table = [
        (
            "etcd-3.5.9-k8s-v1.28.3.prom",
            "3.5.9",
            870.0,
            492.0,
            2.285568e6,
        ),
        (
            "etcd-3.5.12-k8s-v1.30.0.prom",
            "3.5.12",
            856.0,
            484.0,
            2.29376e6,
        ),
        (
            "etcd-3.5.16-k8s-v1.32.0.prom",
            "3.5.16",
            851.0,
            485.0,
            2.506752e6,
        ),
        (
            "etcd-3.6.4-k8s-v1.34.0.prom",
            "3.6.4",
            893.0,
            509.0,
            2.064384e6,
        ),
    ];
    for (file, version, rev, keys, db) in table {
        let (body, e) = load(&format!("etcd-metrics/{file}"));
        assert!(e.skipped.is_empty(), "{file}: {:?}", e.skipped);
        assert_eq!(e.samples.len(), sample_lines(&body), "{file}");
        let server = e
            .samples_named("etcd_server_version")
            .next()
            .and_then(|s| s.label("server_version"))
            .unwrap();
        assert_eq!(server, version);
        assert_eq!(
            value(&e, "etcd_debugging_mvcc_current_revision", &[]),
            Some(rev)
        );
        assert_eq!(
            value(&e, "etcd_debugging_mvcc_compact_revision", &[]),
            Some(-1.0)
        );
        assert_eq!(value(&e, "etcd_debugging_mvcc_keys_total", &[]), Some(keys));
        assert_eq!(value(&e, "etcd_mvcc_db_total_size_in_bytes", &[]), Some(db));
        assert_eq!(value(&e, "etcd_server_has_leader", &[]), Some(1.0));
        assert_eq!(
            value(&e, "etcd_server_quota_backend_bytes", &[]),
            Some(2.147483648e9)
        );
        check_histograms(&e);
    }
    // A capture from the etcd 3.4 this project tests against also reads completely.
    {
        let (body, e) = load("etcd-metrics/etcd-3.4.23-local.txt");
        assert!(e.skipped.is_empty(), "{:?}", e.skipped);
        assert_eq!(e.samples.len(), sample_lines(&body));
    }
}
