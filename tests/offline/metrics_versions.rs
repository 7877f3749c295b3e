//! The concept table across Kubernetes 1.36 and 1.37 and etcd 3.7, on pages built by hand
//! from the upstream metric definitions (`tests/fixtures/metrics/`, no live capture of those
//! releases exists to us), and on the real captures of 1.28–1.34 and etcd 3.4–3.6.4: every
//! new name maps, a name hidden or removed in a release is "not exposed" there (never 0) and
//! says which release and what replaces it, the watch cache's truncated resourceVersion is
//! compared with a head above 10^15, and relists count LIST requests and watch-lists.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use regscope::derive::apiserver::{not_exposed_text, ApiserverPanels, Reading};
use regscope::metrics::concepts::{map, table, Concept, Mapped, SeriesKey, Value};
use regscope::metrics::exposition::{parse, MetricType};
use regscope::model::{Observation, ScrapeOutcome, ScrapeTarget, Stamped};
use regscope::store::{InformerLag, MetricStore};

use crate::common::fixtures::testdata;
use crate::common::require;

const V136: &str = "kube-apiserver-v1.36.0-from-definitions.prom";
const V137: &str = "kube-apiserver-v1.37.0-from-definitions.prom";
const ETCD37: &str = "etcd-3.7.0-from-definitions.prom";

fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/metrics")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn capture(rel: &str) -> String {
    std::fs::read_to_string(testdata().join(rel)).unwrap()
}

fn mapped(body: &str) -> Mapped {
    let e = parse(body.as_bytes());
    assert!(e.skipped.is_empty(), "{:?}", e.skipped);
    map(table(), &e)
}

fn key(id: Concept, group: &str, resource: &str, op: &str) -> SeriesKey {
    SeriesKey {
        concept: table().idx(id),
        group: group.into(),
        resource: resource.into(),
        op: op.into(),
    }
}

/// A scalar's value, or a histogram's count.
fn value(m: &Mapped, id: Concept, group: &str, resource: &str, op: &str) -> Option<f64> {
    match m.get(&key(id, group, resource, op))? {
        Value::Scalar(v) => Some(*v),
        Value::Histogram(h) => Some(h.count),
    }
}

fn winner(m: &Mapped, id: Concept) -> Option<&str> {
    m.names[table().idx(id) as usize].as_deref()
}

fn exposes(m: &Mapped, id: Concept) -> bool {
    m.exposes(table(), table().idx(id))
}

fn at(s: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + s)
}

fn scrape(target: ScrapeTarget, t: u64, body: &str) -> Stamped {
    Stamped {
        at: at(t),
        obs: Observation::Scrape {
            target,
            outcome: ScrapeOutcome::Body {
                source: "file".into(),
                body: body.as_bytes().to_vec().into(),
            },
        },
    }
}

fn panels(store: &MetricStore, now: u64) -> ApiserverPanels {
    regscope::derive::apiserver::build(store, None, &InformerLag::default(), at(now))
}

/// An etcd page with a head revision and a version.
fn etcd_page(head: i64, version: &str) -> String {
    format!(
        "etcd_debugging_mvcc_current_revision {head}\n\
         etcd_debugging_mvcc_compact_revision -1\n\
         etcd_server_version{{server_version=\"{version}\"}} 1\n"
    )
}

/// Replaces the value of the one sample line that starts with `prefix`.
fn set_value(body: &str, prefix: &str, v: f64) -> String {
    let mut hit = 0;
    let out: Vec<String> = body
        .lines()
        .map(|l| {
            if l.starts_with(prefix) {
                hit += 1;
                let (series, _) = l.rsplit_once(' ').unwrap();
                format!("{series} {v}")
            } else {
                l.to_string()
            }
        })
        .collect();
    assert_eq!(hit, 1, "{prefix}");
    out.join("\n") + "\n"
}

#[test]
fn pages_built_from_definitions_say_so_on_line_one_and_parse_completely() {
    for (name, version) in [(V136, "v1.36.0"), (V137, "v1.37.0"), (ETCD37, "3.7.0")] {
        let body = fixture(name);
        let first = body.lines().next().unwrap();
        assert!(
            first.starts_with("# Built by hand from the upstream metric definitions")
                && first.ends_with("not captured from a live server."),
            "{name}: {first}"
        );
        let e = parse(body.as_bytes());
        assert!(e.skipped.is_empty(), "{name}: {:?}", e.skipped);
        let lines = body
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .count();
        assert_eq!(e.samples.len(), lines, "{name}");
        // Every sample belongs to a family with its # TYPE and # HELP.
        for s in &e.samples {
            let f = e
                .family_of(&s.name)
                .unwrap_or_else(|| panic!("{name}: {} has no family", s.name));
            assert_ne!(f.kind, MetricType::Untyped, "{name}: {}", f.name);
            assert!(!f.help.is_empty(), "{name}: {}", f.name);
        }
        assert_eq!(map(table(), &e).version.as_deref(), Some(version));
    }
}

#[test]
fn every_new_apiserver_name_maps_on_1_36_and_1_37() {
    let m = mapped(&fixture(V136));
    for (id, name) in [
        (Concept::EtcdBookmarks, "etcd_bookmark_total"),
        (Concept::CacheLists, "apiserver_cache_list_total"),
        (
            Concept::CacheListFetched,
            "apiserver_cache_list_fetched_objects_total",
        ),
        (
            Concept::CacheListReturned,
            "apiserver_cache_list_returned_objects_total",
        ),
        (Concept::StorageLists, "apiserver_storage_list_total"),
        (
            Concept::StorageListFetched,
            "apiserver_storage_list_fetched_objects_total",
        ),
        (
            Concept::StorageListEvaluated,
            "apiserver_storage_list_evaluated_objects_total",
        ),
        (
            Concept::StorageListReturned,
            "apiserver_storage_list_returned_objects_total",
        ),
        (Concept::WatchShards, "apiserver_watch_shards_total"),
        (
            Concept::WatchFilteredEvents,
            "apiserver_watch_filtered_events_total",
        ),
        (Concept::WatchLists, "apiserver_watch_list_duration_seconds"),
        (Concept::Objects, "apiserver_resource_objects"),
        (
            Concept::WatchCacheResourceVersion,
            "apiserver_watch_cache_resource_version",
        ),
    ] {
        assert_eq!(winner(&m, id), Some(name), "1.36 {id:?}");
    }
    assert_eq!(
        value(&m, Concept::EtcdBookmarks, "", "pods", ""),
        Some(31.0)
    );
    assert_eq!(value(&m, Concept::CacheLists, "", "pods", ""), Some(13.0));
    assert_eq!(value(&m, Concept::WatchShards, "", "pods", ""), Some(4.0));
    assert_eq!(
        value(&m, Concept::WatchFilteredEvents, "", "pods", ""),
        Some(7200.0)
    );
    assert_eq!(
        value(&m, Concept::WatchLists, "coordination.k8s.io", "leases", ""),
        Some(5.0)
    );
    // New in 1.37: not there yet, and said so with the release.
    for id in [
        Concept::WatchEventsDispatchDuration,
        Concept::StorageListDuration,
        Concept::WatchCacheInitializationErrors,
        Concept::WatchCacheInitializationDuration,
    ] {
        assert!(!exposes(&m, id), "1.36 {id:?}");
        assert!(
            not_exposed_text(table(), id.id(), m.version.as_deref())
                .ends_with(": not exposed by v1.36.0 (new in 1.37)"),
            "{id:?}"
        );
    }

    let m = mapped(&fixture(V137));
    for (id, name) in [
        (Concept::EtcdBookmarks, "etcd_bookmark_total"),
        (Concept::StorageLists, "apiserver_storage_list_total"),
        (
            Concept::StorageListFetched,
            "apiserver_storage_list_fetched_objects_total",
        ),
        (
            Concept::StorageListEvaluated,
            "apiserver_storage_list_evaluated_objects_total",
        ),
        (
            Concept::StorageListReturned,
            "apiserver_storage_list_returned_objects_total",
        ),
        (
            Concept::StorageListDuration,
            "apiserver_storage_list_duration_seconds",
        ),
        (
            Concept::WatchEventsDispatchDuration,
            "apiserver_watch_events_dispatch_duration_seconds",
        ),
        (
            Concept::WatchCacheInitializationErrors,
            "apiserver_watch_cache_initialization_errors_total",
        ),
        (
            Concept::WatchCacheInitializationDuration,
            "apiserver_watch_cache_initialization_duration_seconds",
        ),
        (Concept::WatchShards, "apiserver_watch_shards_total"),
        (
            Concept::WatchFilteredEvents,
            "apiserver_watch_filtered_events_total",
        ),
        (Concept::WatchLists, "apiserver_watch_list_duration_seconds"),
        (Concept::Objects, "apiserver_resource_objects"),
    ] {
        assert_eq!(winner(&m, id), Some(name), "1.37 {id:?}");
    }
    // 1.37's `storage` and `index` labels are summed over: one value per resource (1 list
    // from etcd, 13 from the watch cache).
    assert_eq!(value(&m, Concept::StorageLists, "", "pods", ""), Some(14.0));
    assert_eq!(
        value(&m, Concept::StorageListFetched, "", "pods", ""),
        Some(14.0 * 62.0)
    );
    for stage in ["total", "storage_to_cache", "cache_to_watcher"] {
        assert_eq!(
            value(&m, Concept::WatchEventsDispatchDuration, "", "pods", stage),
            Some(240.0),
            "{stage}"
        );
    }
    assert_eq!(
        value(
            &m,
            Concept::StorageListDuration,
            "apps",
            "deployments",
            "false"
        ),
        Some(2.0)
    );
    assert_eq!(
        value(
            &m,
            Concept::WatchCacheInitializationErrors,
            "apps",
            "deployments",
            ""
        ),
        Some(1.0)
    );
    // A lazy counter with no series for a resource reads 0 there (1.37 exposes it).
    assert!(exposes(&m, Concept::WatchCacheInitializationErrors));
    assert_eq!(
        value(
            &m,
            Concept::WatchCacheInitializationDuration,
            "",
            "pods",
            ""
        ),
        Some(1.0)
    );
}

#[test]
fn names_hidden_in_1_36_and_1_37_are_not_exposed_there_and_say_what_replaces_them() {
    let t = table();
    let m = mapped(&fixture(V137));
    for (id, name, replacement) in [
        (
            Concept::CacheLists,
            "apiserver_cache_list_total",
            "apiserver_storage_list_total",
        ),
        (
            Concept::CacheListFetched,
            "apiserver_cache_list_fetched_objects_total",
            "apiserver_storage_list_fetched_objects_total",
        ),
        (
            Concept::CacheListReturned,
            "apiserver_cache_list_returned_objects_total",
            "apiserver_storage_list_returned_objects_total",
        ),
    ] {
        // Lazy counters, yet not 0: every name is past its `until`.
        assert!(t.concept(t.idx(id)).lazy);
        assert!(!exposes(&m, id), "{id:?}");
        assert_eq!(
            not_exposed_text(t, id.id(), m.version.as_deref()),
            format!("{name}: not exposed by v1.37.0 (removed in 1.37; {replacement})")
        );
    }
    // The same lazy counters on a 1.36 apiserver that has not listed from its cache yet: 0.
    let bare36 = mapped("kubernetes_build_info{git_version=\"v1.36.0\"} 1\n");
    assert!(exposes(&bare36, Concept::CacheLists));
    let bare37 = mapped("kubernetes_build_info{git_version=\"v1.37.0\"} 1\n");
    assert!(!exposes(&bare37, Concept::CacheLists));

    // Through the panels: the ids in `not_exposed`, worded with the version and the
    // replacement; no 0 for them anywhere.
    let mut store = MetricStore::default();
    store.apply(&scrape(ScrapeTarget::Apiserver, 0, &fixture(V137)));
    let v = panels(&store, 1);
    assert_eq!(v.apiserver_version.as_deref(), Some("v1.37.0"));
    for id in ["cache_lists", "cache_list_fetched", "cache_list_returned"] {
        assert!(v.not_exposed.iter().any(|n| n == id), "{:?}", v.not_exposed);
    }
    assert!(!v
        .not_exposed
        .iter()
        .any(|n| n == "objects" || n == "storage_lists"));
    assert_eq!(
        not_exposed_text(t, "cache_lists", v.apiserver_version.as_deref()),
        "apiserver_cache_list_total: not exposed by v1.37.0 (removed in 1.37; apiserver_storage_list_total)"
    );

    // apiserver_storage_objects is hidden in 1.37 (STABLE, deprecated 1.34): the objects
    // concept reads apiserver_resource_objects, and a 1.37 page with only the old name
    // (--show-hidden-metrics-for-version=1.36) still reads it: a present name always counts.
    assert!(!fixture(V137).contains("\napiserver_storage_objects{"));
    assert!(fixture(V136).contains("\napiserver_storage_objects{"));
    let shown = mapped(
        "kubernetes_build_info{git_version=\"v1.37.0\"} 1\n\
         apiserver_storage_objects{resource=\"pods\"} 62\n",
    );
    assert_eq!(value(&shown, Concept::Objects, "", "pods", ""), Some(62.0));

    // etcd_bookmark_counts is hidden in 1.36 (ALPHA, deprecated 1.36): the counter
    // etcd_bookmark_total replaces it, and neither is read as 0 where neither can be.
    assert!(!fixture(V136).contains("etcd_bookmark_counts"));
    let b = t.concept(t.idx(Concept::EtcdBookmarks));
    assert_eq!(b.names[1].name, "etcd_bookmark_counts");
    assert_eq!(b.names[1].until, "1.36");
    assert_eq!(b.names[1].replacement, "etcd_bookmark_total");
    let bare19 = mapped("kubernetes_build_info{git_version=\"v1.19.16\"} 1\n");
    assert!(!exposes(&bare19, Concept::EtcdBookmarks));
    assert_eq!(
        not_exposed_text(t, "etcd_bookmarks", bare19.version.as_deref()),
        "etcd_bookmark_total: not exposed by v1.19.16 (new in 1.20)"
    );
    // The db size's deprecated name is gone since 1.29 (ALPHA, deprecated 1.28).
    let s = t.concept(t.idx(Concept::StorageSize));
    assert_eq!(s.names[1].name, "apiserver_storage_db_total_size_in_bytes");
    assert_eq!(s.names[1].until, "1.29");
    assert!(!fixture(V137).contains("apiserver_storage_db_total_size_in_bytes"));
}

#[test]
fn etcd_3_7_names_map_and_names_etcd_dropped_in_3_6_are_not_exposed() {
    let t = table();
    let m = mapped(&fixture(ETCD37));
    assert_eq!(m.version.as_deref(), Some("3.7.0"));
    for (id, name) in [
        (Concept::EtcdRanges, "etcd_mvcc_range_total"),
        (
            Concept::EtcdRangeDuration,
            "etcd_server_range_duration_seconds",
        ),
        (Concept::EtcdFeatureEnabled, "etcd_server_feature_enabled"),
        (
            Concept::EtcdServerRequestDuration,
            "etcd_server_request_duration_seconds",
        ),
        (
            Concept::EtcdWatchSendLoopWatchStream,
            "etcd_debugging_server_watch_send_loop_watch_stream_duration_seconds",
        ),
        (
            Concept::EtcdWatchSendLoopWatchStreamPerEvent,
            "etcd_debugging_server_watch_send_loop_watch_stream_duration_per_event_seconds",
        ),
        (
            Concept::EtcdWatchSendLoopControlStream,
            "etcd_debugging_server_watch_send_loop_control_stream_duration_seconds",
        ),
        (
            Concept::EtcdWatchSendLoopProgress,
            "etcd_debugging_server_watch_send_loop_progress_duration_seconds",
        ),
        (
            Concept::EtcdCurrentRevision,
            "etcd_debugging_mvcc_current_revision",
        ),
    ] {
        assert_eq!(winner(&m, id), Some(name), "{id:?}");
    }
    // Request latency per type, summed over success.
    assert_eq!(
        value(&m, Concept::EtcdServerRequestDuration, "", "", "Txn"),
        Some(97.0)
    );
    assert_eq!(
        value(&m, Concept::EtcdRangeDuration, "", "", "true"),
        Some(180.0)
    );
    assert_eq!(
        value(
            &m,
            Concept::EtcdFeatureEnabled,
            "",
            "",
            "FastLeaseKeepAlive"
        ),
        Some(1.0)
    );
    assert_eq!(
        value(&m, Concept::EtcdWatchSendLoopProgress, "", "", ""),
        Some(150.0)
    );
    // v2 HTTP metrics: lazy counters, but gone from 3.6: not exposed, never 0.
    for id in [
        Concept::EtcdHttpReceived,
        Concept::EtcdHttpFailed,
        Concept::EtcdHttpDuration,
    ] {
        assert!(!exposes(&m, id), "{id:?}");
    }
    assert_eq!(
        not_exposed_text(t, "etcd_http_received", m.version.as_deref()),
        "etcd_http_received_total: not exposed by 3.7.0 (removed in 3.6)"
    );
    let m36 = mapped("etcd_server_version{server_version=\"3.6.4\"} 1\n");
    assert!(!exposes(&m36, Concept::EtcdHttpReceived));
    assert!(!exposes(&m36, Concept::EtcdServerRequestDuration));
    let m35 = mapped("etcd_server_version{server_version=\"3.5.16\"} 1\n");
    assert!(exposes(&m35, Concept::EtcdHttpReceived));
    assert_eq!(
        not_exposed_text(t, "etcd_server_request_duration", m35.version.as_deref()),
        "etcd_server_request_duration_seconds: not exposed by 3.5.16 (new in 3.7)"
    );
}

#[test]
fn a_truncated_watch_cache_resource_version_is_compared_with_a_head_above_10_15() {
    // The 1.36 page's gauges hold the low digits of resourceVersions near 3·10^15 + 912.
    let mut store = MetricStore::default();
    store.apply(&scrape(ScrapeTarget::Apiserver, 0, &fixture(V136)));
    store.apply(&scrape(
        ScrapeTarget::Etcd,
        1,
        &etcd_page(3_000_000_000_000_912, "3.6.4"),
    ));
    let v = panels(&store, 2);
    let lag = |r: &str| {
        v.window
            .rows
            .iter()
            .find(|w| w.resource == r)
            .map(|w| w.watch_cache_lag_revisions.clone())
    };
    assert_eq!(v.window.head, Some(3_000_000_000_000_912));
    for (r, want) in [
        ("pods", 0),
        ("configmaps", 3),
        ("nodes", 0),
        ("leases", 1),
        ("deployments", 2),
    ] {
        assert_eq!(lag(r), Some(Reading::Value(want)), "{r}");
    }
    // Across a multiple of 10^15: the cache's gauge is still below it, the head past it.
    let body = set_value(
        &fixture(V136),
        "apiserver_watch_cache_resource_version{group=\"\",resource=\"pods\"}",
        999_999_999_999_990.0,
    );
    let mut store = MetricStore::default();
    store.apply(&scrape(ScrapeTarget::Apiserver, 0, &body));
    store.apply(&scrape(
        ScrapeTarget::Etcd,
        1,
        &etcd_page(4_000_000_000_000_005, "3.6.4"),
    ));
    let v = panels(&store, 2);
    let pods = v.window.rows.iter().find(|w| w.resource == "pods").unwrap();
    assert_eq!(pods.watch_cache_lag_revisions, Reading::Value(15));
}

#[test]
fn relists_count_list_requests_and_watch_lists() {
    // Two scrapes a minute apart: pods gets 2 more LIST requests and 1 more watch-list.
    let first = fixture(V137);
    let list = "apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"pods\",scope=\"namespace\",subresource=\"\",verb=\"LIST\",version=\"v1\"}";
    let watch_list =
        "apiserver_watch_list_duration_seconds_count{group=\"\",resource=\"pods\",scope=\"cluster\",version=\"v1\"}";
    let second = set_value(&set_value(&first, list, 16.0), watch_list, 10.0);
    let mut store = MetricStore::default();
    store.apply(&scrape(ScrapeTarget::Apiserver, 0, &first));
    store.apply(&scrape(ScrapeTarget::Apiserver, 60, &second));
    let v = panels(&store, 61);
    let row = |r: &str| v.watch_cache.iter().find(|w| w.resource == r).unwrap();
    let pods = row("pods");
    assert_eq!(pods.list_requests_total, Reading::Value(16.0));
    assert_eq!(pods.watch_lists_total, Reading::Value(10.0));
    assert_eq!(pods.list_requests_rate, Reading::Value(2.0 / 60.0));
    assert_eq!(pods.watch_lists_rate, Reading::Value(1.0 / 60.0));
    assert!((pods.lists_per_minute.unwrap() - 3.0).abs() < 1e-9);
    // Another resource did not list in the minute: 0, not unknown.
    assert_eq!(row("nodes").lists_per_minute, Some(0.0));
    assert_eq!(row("nodes").list_requests_total, Reading::Value(4.0));
    assert_eq!(row("nodes").watch_lists_total, Reading::Value(7.0));

    // Before 1.29 there are no watch-lists: the LIST requests alone, and the watch-list
    // reading says "not exposed", not 0.
    require!(TESTDATA);
    let old = capture("apiserver-metrics/kube-apiserver-v1.28.3.prom");
    let mut store = MetricStore::default();
    store.apply(&scrape(ScrapeTarget::Apiserver, 0, &old));
    store.apply(&scrape(ScrapeTarget::Apiserver, 60, &old));
    let v = panels(&store, 61);
    assert!(!v.watch_cache.is_empty());
    for r in &v.watch_cache {
        assert_eq!(r.watch_lists_total, Reading::NotExposed, "{}", r.resource);
        assert_eq!(r.lists_per_minute, Some(0.0), "{}", r.resource);
    }
    assert!(v.not_exposed.iter().any(|n| n == "watch_lists"));
    assert!(v
        .watch_cache
        .iter()
        .any(|r| matches!(r.list_requests_total, Reading::Value(n) if n > 0.0)));
}

/// The real captures map the new concepts as their releases have them, and the names they
/// had before still win where they did.
#[test]
fn real_captures_map_the_new_concepts_as_their_releases_have_them() {
    require!(TESTDATA);
    for v in ["v1.28.3", "v1.30.0", "v1.32.0", "v1.34.0"] {
        let m = mapped(&capture(&format!(
            "apiserver-metrics/kube-apiserver-{v}.prom"
        )));
        let minor: u32 = v[3..5].parse().unwrap();
        assert_eq!(
            winner(&m, Concept::EtcdBookmarks),
            Some("etcd_bookmark_counts"),
            "{v}"
        );
        assert_eq!(
            winner(&m, Concept::CacheLists),
            Some("apiserver_cache_list_total"),
            "{v}"
        );
        assert_eq!(
            winner(&m, Concept::StorageLists),
            Some("apiserver_storage_list_total"),
            "{v}"
        );
        // Up to 1.33 the cache's list metrics name a storage path without the prefix.
        assert!(
            value(
                &m,
                Concept::CacheLists,
                "apiextensions.k8s.io",
                "customresourcedefinitions",
                ""
            )
            .is_some()
                || minor >= 34,
            "{v}"
        );
        let cache_keys: Vec<SeriesKey> = m
            .series
            .keys()
            .filter(|k| k.concept == table().idx(Concept::CacheLists))
            .cloned()
            .collect();
        assert!(!cache_keys.is_empty(), "{v}");
        assert!(
            cache_keys
                .iter()
                .all(|k| !k.resource.contains('/') && !k.resource.is_empty()),
            "{v}: {cache_keys:?}"
        );
        assert_eq!(exposes(&m, Concept::WatchLists), minor >= 29, "{v}");
        for id in [
            Concept::WatchShards,
            Concept::WatchEventsDispatchDuration,
            Concept::StorageListDuration,
            Concept::WatchCacheInitializationErrors,
        ] {
            assert!(!exposes(&m, id), "{v} {id:?}");
        }
    }
    for (file, version, ranges) in [
        ("etcd-3.4.23-local.txt", "3.4.23", 253.0),
        ("etcd-3.5.9-k8s-v1.28.3.prom", "3.5.9", 2339.0),
        ("etcd-3.5.16-k8s-v1.32.0.prom", "3.5.16", 2488.0),
        ("etcd-3.6.4-k8s-v1.34.0.prom", "3.6.4", 2709.0),
    ] {
        let m = mapped(&capture(&format!("etcd-metrics/{file}")));
        assert_eq!(m.version.as_deref(), Some(version));
        let new = version.starts_with("3.6");
        // 3.4 and 3.5 serve both names; the newer one wins, once.
        assert_eq!(
            winner(&m, Concept::EtcdRanges),
            Some("etcd_mvcc_range_total"),
            "{file}"
        );
        assert_eq!(value(&m, Concept::EtcdRanges, "", "", ""), Some(ranges));
        assert_eq!(exposes(&m, Concept::EtcdRangeDuration), new, "{file}");
        assert_eq!(exposes(&m, Concept::EtcdFeatureEnabled), new, "{file}");
        assert_eq!(exposes(&m, Concept::EtcdHttpReceived), !new, "{file}");
        assert!(!exposes(&m, Concept::EtcdServerRequestDuration), "{file}");
        assert!(!exposes(&m, Concept::EtcdWatchSendLoopProgress), "{file}");
    }
}
