//! The concept table over every real capture: which concepts each Kubernetes and etcd
//! version exposes, values read from the files, quantiles against an independent
//! computation, counter resets across scrapes, stale targets, and, through the whole path
//! (store → derive), the field cases of metric names and labels that change between
//! Kubernetes releases, `apiserver_storage_objects` at −1 or wrong, and etcd DB size
//! against in use misread after a defrag.

use std::time::{Duration, SystemTime};

use regscope::derive::apiserver::{ApiserverPanels, Reading, Risk};
use regscope::metrics::concepts::{map, table, Concept, SeriesKey, Value};
use regscope::metrics::exposition::parse;
use regscope::metrics::quantile::Quantile;
use regscope::model::{
    Bytes, InformerObs, InformerWhat, KeyValue, Observation, ScrapeOutcome, ScrapeTarget, Stamped,
};
use regscope::store::{InformerLag, MetricStore, Replica, ReplicaConfig, Session};

use crate::common::fixtures;
use crate::common::require;

use fixtures::testdata;

const APISERVER: [(&str, &str); 4] = [
    ("v1.28.3", "etcd-3.5.9-k8s-v1.28.3.prom"),
    ("v1.30.0", "etcd-3.5.12-k8s-v1.30.0.prom"),
    ("v1.32.0", "etcd-3.5.16-k8s-v1.32.0.prom"),
    ("v1.34.0", "etcd-3.6.4-k8s-v1.34.0.prom"),
];

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(testdata().join(rel)).unwrap()
}

fn at(s: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + s)
}

fn scrape(target: ScrapeTarget, t: u64, body: impl Into<Bytes>) -> Stamped {
    Stamped {
        at: at(t),
        obs: Observation::Scrape {
            target,
            outcome: ScrapeOutcome::Body {
                source: "file".into(),
                body: body.into(),
            },
        },
    }
}

fn view_of(store: &MetricStore, replica: Option<Replica>) -> ApiserverPanels {
    let session = replica.map(|r| Session::from_replica(r, "test"));
    regscope::derive::apiserver::build(store, session.as_ref(), &InformerLag::default(), at(1000))
}

/// A reference `histogram_quantile`, written from Prometheus' documentation separately from
/// regscope's: the raw `_bucket` lines of one series, sorted by `le`.
fn reference_quantile(body: &str, series: &str, q: f64) -> Option<f64> {
    let prefix = format!("{series},le=\"");
    let mut buckets: Vec<(f64, f64)> = body
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(|rest| {
            let (le, v) = rest.split_once("\"} ").unwrap();
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().unwrap()
            };
            (le, v.trim().parse::<f64>().unwrap())
        })
        .collect();
    buckets.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
    let total = buckets.last()?.1;
    if total == 0.0 {
        return None;
    }
    let rank = q * total;
    let mut prev_le = 0.0;
    let mut prev_count = 0.0;
    for (le, count) in buckets {
        if count >= rank {
            if le.is_infinite() {
                return Some(f64::INFINITY);
            }
            return Some(prev_le + (le - prev_le) * (rank - prev_count) / (count - prev_count));
        }
        prev_le = le;
        prev_count = count;
    }
    None
}

#[test]
fn every_apiserver_capture_maps_with_the_concepts_its_version_has() {
    require!(TESTDATA);
    let t = table();
    for (version, etcd_file) in APISERVER {
        let body = read(&format!("apiserver-metrics/kube-apiserver-{version}.prom"));
        let expo = parse(&body);
        assert!(expo.skipped.is_empty(), "{version}");
        let m = map(t, &expo);
        assert_eq!(m.version.as_deref(), Some(version));
        let minor: u32 = version[3..5].parse().unwrap();

        // Storage latency: one mapped series per exposed `_count` series, whatever the label
        // scheme ({operation,type} up to 1.33, {operation,group,resource} from 1.34).
        let lat = t.idx(Concept::EtcdRequestDuration);
        let raw = expo
            .samples_named("etcd_request_duration_seconds_count")
            .count();
        let mapped: Vec<&SeriesKey> = m.series.keys().filter(|k| k.concept == lat).collect();
        assert_eq!(mapped.len(), raw, "{version}");
        assert!(mapped
            .iter()
            .all(|k| !k.resource.contains('/') && !k.resource.contains('.')));
        let ops: std::collections::BTreeSet<&str> = mapped.iter().map(|k| k.op.as_str()).collect();
        let list_op = if minor == 34 {
            "listOnlyKeys"
        } else {
            "listWithCount"
        };
        assert!(ops.contains(list_op), "{version}: {ops:?}");
        // ≤ 1.33 spells listWithCount's type as a storage path (`/registry/pods/`); it maps
        // to the core pods. 1.34.0 counts its listOnlyKeys for events only.
        let pods_list = SeriesKey {
            concept: lat,
            group: Default::default(),
            resource: if minor == 34 { "events" } else { "pods" }.into(),
            op: list_op.into(),
        };
        assert!(m.get(&pods_list).is_some(), "{version}");
        // Leases live in coordination.k8s.io in every scheme.
        assert!(
            mapped
                .iter()
                .any(|k| k.group == "coordination.k8s.io" && k.resource == "leases"),
            "{version}"
        );

        // The watch cache capacity, no apiserver_ prefix, pods in the core group.
        let cap = SeriesKey {
            concept: t.idx(Concept::WatchCacheCapacity),
            group: Default::default(),
            resource: "pods".into(),
            op: Default::default(),
        };
        let want = if minor == 30 || minor == 32 {
            200.0
        } else {
            100.0
        };
        assert_eq!(m.get(&cap), Some(&Value::Scalar(want)), "{version}");

        // Which concepts exist in which version.
        assert_eq!(
            m.exposes(t, t.idx(Concept::WatchCacheResourceVersion)),
            minor >= 31,
            "{version}"
        );
        assert!(
            m.exposes(t, t.idx(Concept::WatchCacheEventsReceived)),
            "{version}"
        );
        assert!(m.exposes(t, t.idx(Concept::ApfExecuting)), "{version}");
        let objects = m.names[t.idx(Concept::Objects) as usize].as_deref();
        assert_eq!(
            objects,
            Some(if minor >= 34 {
                "apiserver_resource_objects"
            } else {
                "apiserver_storage_objects"
            }),
            "{version}"
        );
        // 1.28 has both apiserver_storage_db_total_size_in_bytes and the new name: the new
        // one wins and matches etcd's own figure in the paired capture.
        assert_eq!(
            m.names[t.idx(Concept::StorageSize) as usize].as_deref(),
            Some("apiserver_storage_size_bytes")
        );
        let etcd_body = read(&format!("etcd-metrics/{etcd_file}"));
        let em = map(t, &parse(&etcd_body));
        let get = |m: &regscope::metrics::concepts::Mapped, id: Concept| {
            m.series
                .iter()
                .find(|(k, _)| k.concept == t.idx(id))
                .map(|(_, v)| match v {
                    Value::Scalar(x) => *x,
                    Value::Histogram(h) => h.count,
                })
        };
        assert_eq!(
            get(&m, Concept::StorageSize),
            get(&em, Concept::EtcdDbSize),
            "{version}"
        );
        assert_eq!(get(&em, Concept::EtcdQuota), Some(2147483648.0));
        assert_eq!(get(&em, Concept::EtcdCompactRevision), Some(-1.0));
    }
}

#[test]
fn paired_captures_give_the_readme_cache_lags_and_an_honest_window() {
    require!(TESTDATA);
    for (version, etcd_file, max_lag) in [
        ("v1.32.0", "etcd-3.5.16-k8s-v1.32.0.prom", 6),
        ("v1.34.0", "etcd-3.6.4-k8s-v1.34.0.prom", 20),
    ] {
        let (a, e) = (
            read(&format!("apiserver-metrics/kube-apiserver-{version}.prom")),
            read(&format!("etcd-metrics/{etcd_file}")),
        );
        let mut store = MetricStore::default();
        store.apply(&scrape(ScrapeTarget::Apiserver, 0, a));
        store.apply(&scrape(ScrapeTarget::Etcd, 1, e));
        let v = view_of(&store, None);
        let lags: Vec<i64> = v
            .window
            .rows
            .iter()
            .filter_map(|r| r.watch_cache_lag_revisions.value().copied())
            .collect();
        assert!(!lags.is_empty(), "{version}");
        assert_eq!(lags.iter().max(), Some(&max_lag), "{version}");
        assert_eq!(lags.iter().min(), Some(&0), "{version}");
        // No compaction yet (etcd says -1): no window, not a huge number.
        assert_eq!(v.window.compact_revision, None);
        assert_eq!(v.window.window_revisions, None);
        assert!(v.window.rows.iter().all(|r| r.risk == Risk::Ok));
        let h = v.etcd_health.unwrap();
        assert_eq!(h.compact_revision, None);
        assert_eq!(h.has_leader, Some(true));
        assert_eq!(
            h.apiserver_db_size_bytes,
            Reading::Value(h.db_size_bytes.unwrap())
        );
    }
    // Before 1.31 the cache's revision is not exposed: every row says so, none says 0.
    let a = read("apiserver-metrics/kube-apiserver-v1.28.3.prom");
    let mut store = MetricStore::default();
    store.apply(&scrape(ScrapeTarget::Apiserver, 0, a));
    let v = view_of(&store, None);
    assert!(v
        .not_exposed
        .contains(&"watch_cache_resource_version".to_string()));
    assert!(v
        .window
        .rows
        .iter()
        .all(|r| r.watch_cache_lag_revisions == Reading::NotExposed));
}

#[test]
fn quantiles_from_one_capture_match_an_independent_computation() {
    require!(TESTDATA);
    let body = read("apiserver-metrics/kube-apiserver-v1.34.0.prom");
    let text = String::from_utf8(body.clone()).unwrap();
    let mut store = MetricStore::default();
    store.apply(&scrape(ScrapeTarget::Apiserver, 0, body));
    let v = view_of(&store, None);
    let mut checked = 0;
    for row in v
        .latency
        .iter()
        .filter(|r| r.metric == "etcd_request_duration_seconds")
    {
        let series = format!(
            "etcd_request_duration_seconds_bucket{{group=\"{}\",operation=\"{}\",resource=\"{}\"",
            row.group, row.operation, row.resource
        );
        for (q, got) in [(0.5, row.p50), (0.9, row.p90), (0.99, row.p99)] {
            let want = reference_quantile(&text, &series, q);
            match (got, want) {
                (Quantile::Value(g), Some(w)) => {
                    assert!((g - w).abs() < 1e-9, "{series} q{q}: {g} vs {w}")
                }
                (Quantile::AtLeast(b), Some(w)) => {
                    assert!(w.is_infinite() && b == 60.0, "{series} q{q}")
                }
                (Quantile::NoData, None) => {}
                other => panic!("{series} q{q}: {other:?}"),
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 176 * 3);
    // By hand: 146 of 148 gets of pods took ≤ 5 ms, one ≤ 25 ms, one ≤ 50 ms.
    let get_pods = v
        .latency
        .iter()
        .find(|r| r.operation == "get" && r.resource == "pods" && r.group.is_empty())
        .unwrap();
    assert_eq!(get_pods.count, 148.0);
    let Quantile::Value(p50) = get_pods.p50 else {
        panic!()
    };
    assert!((p50 - 0.005 * 74.0 / 146.0).abs() < 1e-12);
    let Quantile::Value(p99) = get_pods.p99 else {
        panic!()
    };
    // rank 146.52: 0.52 of the way through the (5 ms, 25 ms] bucket.
    assert!((p99 - (0.005 + 0.020 * 0.52)).abs() < 1e-12, "{p99}");
    // Sorted worst first.
    let ranks: Vec<f64> = v
        .latency
        .iter()
        .map(|r| match r.p99 {
            Quantile::Value(x) => x,
            Quantile::AtLeast(x) => x + 1.0,
            Quantile::NoData => -1.0,
        })
        .collect();
    assert!(ranks.windows(2).all(|w| w[0] >= w[1]));
    // One scrape: totals only, rates need a second one.
    assert!(v.latency.iter().all(|r| r.rate.is_none()));
}

/// A series' `_bucket`, `_sum` and `_count` lines for the given cumulative counts.
fn hist_lines(labels: &str, bounds: &[&str], cum: &[u64]) -> String {
    let mut s = String::from("# TYPE etcd_request_duration_seconds histogram\n");
    for (b, c) in bounds.iter().zip(cum) {
        s += &format!("etcd_request_duration_seconds_bucket{{{labels},le=\"{b}\"}} {c}\n");
    }
    let n = cum.last().unwrap();
    s += &format!("etcd_request_duration_seconds_sum{{{labels}}} 1\n");
    s += &format!("etcd_request_duration_seconds_count{{{labels}}} {n}\n");
    s
}

#[test]
fn rates_and_quantiles_use_the_delta_between_scrapes_and_survive_a_counter_reset() {
    let l = "group=\"\",operation=\"get\",resource=\"pods\"";
    let b = ["0.1", "1", "+Inf"];
    let mut store = MetricStore::default();
    store.apply(&scrape(
        ScrapeTarget::Apiserver,
        0,
        hist_lines(l, &b, &[100, 100, 100]),
    ));
    // 5 s later: 10 more requests, all slow (between 0.1 and 1 s).
    store.apply(&scrape(
        ScrapeTarget::Apiserver,
        5,
        hist_lines(l, &b, &[100, 110, 110]),
    ));
    let v = view_of(&store, None);
    let r = &v.latency[0];
    assert_eq!(r.rate, Some(2.0));
    assert_eq!(r.p50, Quantile::Value(0.55));
    // Since process start p50 would be within the first bucket; the window shows now.
    assert_eq!(r.count, 110.0);
    // The apiserver restarts: counters start again from 0. 4 requests, 2 fast 2 above 1 s.
    store.apply(&scrape(
        ScrapeTarget::Apiserver,
        10,
        hist_lines(l, &b, &[2, 2, 4]),
    ));
    let v = view_of(&store, None);
    let r = &v.latency[0];
    assert_eq!(
        r.rate,
        Some(4.0 / 5.0),
        "a reset counts the new value, never negative"
    );
    assert_eq!(
        r.p99,
        Quantile::AtLeast(1.0),
        "a rank in +Inf is ≥ the last bound"
    );
    assert_eq!(r.p50, Quantile::Value(0.1));
    assert_eq!(r.p99_history.len(), 2);
    assert_eq!(r.p99_history[1], Some(1.0));
}

#[test]
fn a_down_slow_or_garbage_endpoint_leaves_the_last_data_and_says_stale_since() {
    let mut store = MetricStore::default();
    let l = "group=\"\",operation=\"get\",resource=\"pods\"";
    store.apply(&scrape(
        ScrapeTarget::Apiserver,
        0,
        hist_lines(l, &["0.1", "+Inf"], &[1, 1]),
    ));
    store.apply(&Stamped {
        at: at(5),
        obs: Observation::Scrape {
            target: ScrapeTarget::Apiserver,
            outcome: ScrapeOutcome::Failed {
                source: "https://10.0.0.1:6443/metrics".into(),
                error: "timed out after 5s".into(),
            },
        },
    });
    store.apply(&scrape(
        ScrapeTarget::Apiserver,
        10,
        "<html><head><title>502 Bad Gateway</title></head></html>\n",
    ));
    let v = view_of(&store, None);
    assert_eq!(v.apiserver.stale_since, Some(at(5)));
    assert!(v.apiserver.last_error.as_deref().unwrap().contains("HTML"));
    assert_eq!(v.apiserver.last_good, Some(at(0)));
    assert_eq!(v.latency.len(), 1, "the last good data stays on screen");
}

/// `apiserver_storage_objects` can be −1 or wrong: −1 is "unavailable", not a count; counts
/// that equal the total key count are the 1.34-rc regression; the replica's counts are shown
/// beside them.
#[test]
fn sentinel_and_wrong_counts_are_flagged_against_the_replica() {
    let mut replica = Replica::new(ReplicaConfig::default());
    let mut kvs = Vec::new();
    for (res, n) in [("configmaps", 40), ("pods", 12), ("secrets", 30)] {
        for i in 0..n {
            kvs.push(KeyValue {
                key: Bytes::from(format!("/registry/{res}/default/o{i:03}")),
                create_revision: 2,
                mod_revision: 2,
                version: 1,
                lease: 0,
                value: Bytes::from_static(b"{}"),
            });
        }
    }
    kvs.sort_by(|a, b| a.key.cmp(&b.key));
    for obs in [
        Observation::ListBegin { revision: 100 },
        Observation::ListPage { kvs },
        Observation::ListDone {
            revision: 100,
            compacted: None,
        },
    ] {
        replica.apply(&Stamped { at: at(0), obs });
    }
    let mut store = MetricStore::default();
    store.apply(&scrape(
        ScrapeTarget::Apiserver,
        0,
        "# TYPE apiserver_storage_objects gauge\n\
apiserver_storage_objects{resource=\"configmaps\"} -1\n\
apiserver_storage_objects{resource=\"pods\"} 82\n\
apiserver_storage_objects{resource=\"secrets\"} 82\n",
    ));
    let v = view_of(&store, Some(replica));
    let row = |r: &str| v.objects.iter().find(|o| o.resource == r).unwrap();
    assert_eq!(row("configmaps").apiserver, Reading::Unavailable);
    assert_eq!(row("configmaps").replica, Some(40));
    assert_eq!(row("configmaps").flag, None);
    for (r, n) in [("pods", 12), ("secrets", 30)] {
        assert_eq!(row(r).apiserver, Reading::Value(82));
        assert_eq!(row(r).replica, Some(n));
        let f = row(r).flag.as_deref().unwrap();
        assert!(f.contains("equals the total key count (82)"), "{f}");
    }
    // Flagged rows come first.
    assert!(v.objects[0].flag.is_some() && v.objects[1].flag.is_some());
    let json = serde_json::to_value(&v.objects).unwrap();
    assert!(json.to_string().contains("\"unavailable\""));
}

/// etcd DB size against in use, often misread after a defrag: size, in use, quota use from the
/// total size, reclaimable bytes, 0 % after a defrag, and total 0 as n/a.
#[test]
fn br10_db_size_in_use_and_quota_read_as_operators_need() {
    let page = |total: &str, in_use: &str| {
        format!(
            "# TYPE etcd_mvcc_db_total_size_in_bytes gauge\n\
etcd_mvcc_db_total_size_in_bytes {total}\n\
# TYPE etcd_mvcc_db_total_size_in_use_in_bytes gauge\n\
etcd_mvcc_db_total_size_in_use_in_bytes {in_use}\n\
# TYPE etcd_server_quota_backend_bytes gauge\n\
etcd_server_quota_backend_bytes 2.147483648e+09\n"
        )
    };
    let health = |body: String| {
        let mut store = MetricStore::default();
        store.apply(&scrape(ScrapeTarget::Etcd, 0, body));
        view_of(&store, None).etcd_health.unwrap()
    };
    let h = health(page("1.048576e+08", "7.5497472e+07"));
    assert_eq!(h.db_size_bytes, Some(100.0 * 1048576.0));
    assert_eq!(h.db_in_use_bytes, Some(72.0 * 1048576.0));
    assert_eq!(h.reclaimable_bytes, Some(28.0 * 1048576.0));
    assert!((h.not_in_use_percent.unwrap() - 28.0).abs() < 1e-9);
    // Quota use from the total (physical) size: 100 / 2048 MiB.
    assert!((h.quota_used_percent.unwrap() - 4.8828125).abs() < 1e-9);
    assert!(!h.just_defragmented);
    let h = health(page("7.5497472e+07", "7.5497472e+07"));
    assert_eq!(h.not_in_use_percent, Some(0.0));
    assert!(h.just_defragmented);
    // A total of 0 is "not measured": n/a everywhere, no 0 B, no 0 %, no NaN.
    let h = health(page("0", "0"));
    assert_eq!(h.db_size_bytes, None);
    assert_eq!(h.not_in_use_percent, None);
    assert_eq!(h.reclaimable_bytes, None);
    assert_eq!(h.quota_used_percent, None);
}

/// Metric names that change between Kubernetes releases, through the store: three
/// successive scrapes across a rename all show 40 configmaps (never 80) and 20 MiB.
#[test]
fn successive_scrapes_across_a_rename_count_once() {
    let scrapes = [
        "etcd_object_counts{resource=\"configmaps\"} 40\n\
etcd_db_total_size_in_bytes{endpoint=\"https://127.0.0.1:2379\"} 2.097152e+07\n\
etcd_request_duration_seconds_count{operation=\"get\",group=\"\",resource=\"configmaps\"} 10\n",
        "etcd_object_counts{resource=\"configmaps\"} 40\n\
apiserver_storage_objects{resource=\"configmaps\"} 40\n\
apiserver_storage_db_total_size_in_bytes{endpoint=\"https://127.0.0.1:2379\"} 2.097152e+07\n\
apiserver_storage_size_bytes{cluster=\"etcd-0\"} 2.097152e+07\n",
        "apiserver_storage_objects{resource=\"configmaps\"} 40\n\
apiserver_storage_size_bytes{storage_cluster_id=\"etcd-0\"} 2.097152e+07\n\
etcd_request_duration_seconds_count{operation=\"get\",type=\"/registry/configmaps/\"} 7\n\
etcd_request_duration_seconds_count{operation=\"list\",type=\"configmaps\"} 3\n",
    ];
    let mut store = MetricStore::default();
    for (i, s) in scrapes.iter().enumerate() {
        store.apply(&scrape(ScrapeTarget::Apiserver, i as u64 * 5, *s));
        let v = view_of(&store, None);
        assert_eq!(v.objects.len(), 1, "scrape {i}");
        assert_eq!(v.objects[0].resource, "configmaps");
        assert_eq!(v.objects[0].group, "");
        assert_eq!(v.objects[0].apiserver, Reading::Value(40), "scrape {i}");
        let h = v.etcd_health.unwrap();
        assert_eq!(h.apiserver_db_size_bytes, Reading::Value(20.0 * 1048576.0));
        // The watch cache's revision is a 1.31 metric: not exposed, not 0.
        assert!(v
            .not_exposed
            .contains(&"watch_cache_resource_version".to_string()));
    }
}

#[test]
fn informer_lag_is_measured_against_the_replica_head_and_410s_are_counted() {
    let mut replica = Replica::new(ReplicaConfig::default());
    replica.apply(&Stamped {
        at: at(0),
        obs: Observation::ListBegin { revision: 1 },
    });
    replica.apply(&Stamped {
        at: at(0),
        obs: Observation::ListDone {
            revision: 1,
            compacted: None,
        },
    });
    for rev in 2..=101 {
        replica.apply(&Stamped {
            at: at(rev as u64),
            obs: Observation::Events {
                revision: rev,
                events: vec![regscope::model::WatchEvent {
                    kind: regscope::model::EventKind::Put,
                    kv: KeyValue {
                        key: Bytes::from(format!("/registry/events/default/e{rev}")),
                        create_revision: rev,
                        mod_revision: rev,
                        version: 1,
                        lease: 0,
                        value: Bytes::from_static(b"{}"),
                    },
                    prev_kv: None,
                }],
            },
        });
    }
    replica.apply(&Stamped {
        at: at(102),
        obs: Observation::Compacted {
            revision: 61,
            source: regscope::model::CompactionSource::Watch,
        },
    });
    let mut inf = InformerLag::default();
    let ev = |what| Stamped {
        at: at(101),
        obs: Observation::Informer(InformerObs {
            group: Default::default(),
            resource: "events".into(),
            what,
        }),
    };
    inf.apply(
        &ev(InformerWhat::Event {
            resource_version: 71,
            bookmark: false,
        }),
        &replica,
    );
    inf.apply(
        &ev(InformerWhat::Gone {
            message: "too old resource version: 50 (61)".into(),
        }),
        &replica,
    );
    let s = inf.get("", "events").unwrap();
    assert_eq!(s.lag_revisions, Some(30));
    // Revision 72 was seen at t=72; the event arrived at t=101.
    assert_eq!(s.lag_seconds, Some(29.0));
    assert_eq!(s.gone_410, 1);
    let session = Session::from_replica(replica, "test");
    let replica = &session.replica;
    let v =
        regscope::derive::apiserver::build(&MetricStore::default(), Some(&session), &inf, at(102));
    assert_eq!(v.window.head, Some(101));
    assert_eq!(v.window.compact_revision, Some(61));
    assert_eq!(v.window.window_revisions, Some(40));
    // Revision 61 was seen at t=61 and the head (101) at t=101.
    assert_eq!(v.window.window_seconds, Some(40.0));
    let row = &v.window.rows[0];
    assert_eq!(row.gone_410, 1);
    // 30 of a 40-revision window: more than half.
    assert_eq!(row.risk, Risk::Warn);
    assert!(row
        .risk_reason
        .as_deref()
        .unwrap()
        .contains("past half of the 40-revision compaction window"));
    // An informer that fails is never "ok": its error is the reason.
    inf.apply(
        &ev(InformerWhat::Error {
            message: "list: HTTP 404: the server could not find the requested resource".into(),
        }),
        replica,
    );
    let v =
        regscope::derive::apiserver::build(&MetricStore::default(), Some(&session), &inf, at(102));
    let row = &v.window.rows[0];
    assert_eq!(row.risk, Risk::Warn);
    assert!(
        row.risk_reason
            .as_deref()
            .unwrap()
            .contains("informer failing, retrying: list: HTTP 404"),
        "{row:?}"
    );
}

/// The watch cache's history: a ring of `capacity` events that fills from where the cache
/// was initialised, so until it has received `capacity` events its span is what it
/// received ÷ the rate, not `capacity` ÷ the rate.
#[test]
fn watch_cache_history_is_what_the_cache_holds_not_its_capacity() {
    let body = |received: u64| {
        format!(
            "# TYPE watch_cache_capacity gauge\n\
             watch_cache_capacity{{group=\"\",resource=\"pods\"}} 1000\n\
             # TYPE apiserver_watch_cache_events_received_total counter\n\
             apiserver_watch_cache_events_received_total{{group=\"\",resource=\"pods\"}} {received}\n"
        )
    };
    let span = |first: u64, second: u64| {
        let mut store = MetricStore::default();
        store.apply(&scrape(ScrapeTarget::Apiserver, 990, body(first)));
        store.apply(&scrape(ScrapeTarget::Apiserver, 1000, body(second)));
        let v = view_of(&store, None);
        let row = v
            .watch_cache
            .iter()
            .find(|r| r.resource == "pods")
            .expect("pods row")
            .clone();
        row.history_span_seconds
    };
    // 100 events in 10 s: 10/s. 200 received so far: 20 s held, not 1000 ÷ 10.
    assert_eq!(span(100, 200), Some(20.0));
    // Once it has received more than its capacity, the ring is full: 1000 ÷ 10.
    assert_eq!(span(5_000, 5_100), Some(100.0));
}
