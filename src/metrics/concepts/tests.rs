//! Unit tests of the concept table, the mapping of real names and label schemes across
//! releases, and the sharing of labels and bounds read back.

use super::*;
use crate::metrics::exposition::parse;

#[test]
fn embedded_table_is_valid_and_every_id_is_unique() {
    let t = table();
    let mut ids: Vec<&str> = t.concepts.iter().map(|c| c.id.as_str()).collect();
    ids.sort();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "duplicate concept ids");
    assert!(n >= 30, "{n}");
    for c in &t.concepts {
        assert!(!c.names.is_empty(), "{}", c.id);
    }
}

#[test]
fn the_concepts_named_in_code_are_the_table_in_its_order() {
    let ids: Vec<&str> = table().concepts.iter().map(|c| c.id.as_str()).collect();
    let named: Vec<&str> = Concept::ALL.iter().map(|c| c.id()).collect();
    assert_eq!(named, ids);
}

#[test]
fn resource_labels_of_every_scheme_normalise_to_group_and_resource() {
    let t = table();
    let pairs = [
        ("pods", ("", "pods")),
        (
            "leases.coordination.k8s.io",
            ("coordination.k8s.io", "leases"),
        ),
        ("/registry/pods/", ("", "pods")),
        ("/registry/configmaps/", ("", "configmaps")),
        ("/registry/services/specs/", ("", "services")),
        ("/registry/services/endpoints/", ("", "endpoints")),
        ("/registry/minions/", ("", "nodes")),
        ("/registry/controllers/", ("", "replicationcontrollers")),
        ("/registry/ingress/", ("networking.k8s.io", "ingresses")),
        ("/registry/deployments/", ("apps", "deployments")),
        (
            "/registry/apiregistration.k8s.io/apiservices/",
            ("apiregistration.k8s.io", "apiservices"),
        ),
        (
            "/custom-prefix/widgets.example.com/",
            ("example.com", "widgets"),
        ),
    ];
    for (v, (g, r)) in pairs {
        assert_eq!(t.resource_of(v), (g.to_string(), r.to_string()), "{v}");
    }
    assert_eq!(
        t.storage_path_resource("widgets.example.com"),
        ("example.com".into(), "widgets".into())
    );
    assert_eq!(
        t.storage_path_resource("leases"),
        ("coordination.k8s.io".into(), "leases".into())
    );
}

fn count_of(m: &Mapped, id: Concept, op: &str, group: &str, resource: &str) -> Option<f64> {
    let t = table();
    match m.get(&SeriesKey {
        concept: t.idx(id),
        group: group.into(),
        resource: resource.into(),
        op: op.into(),
    })? {
        Value::Scalar(v) => Some(*v),
        Value::Histogram(h) => Some(h.count),
    }
}

/// Three scrapes across a rename (old names only, old and new together, new names only);
/// every label scheme maps to configmaps in the core group and the deprecation window,
/// where both names are present, counts once.
#[test]
fn renamed_metrics_and_label_schemes_across_releases_map_to_one_concept() {
    let t = table();
    let old = parse(
        b"etcd_object_counts{resource=\"configmaps\"} 40\n\
etcd_db_total_size_in_bytes{endpoint=\"https://127.0.0.1:2379\"} 2.097152e+07\n\
etcd_request_duration_seconds_count{operation=\"get\",group=\"\",resource=\"configmaps\"} 10\n",
    );
    let mid = parse(
        b"etcd_object_counts{resource=\"configmaps\"} 40\n\
apiserver_storage_objects{resource=\"configmaps\"} 40\n\
apiserver_storage_db_total_size_in_bytes{endpoint=\"https://127.0.0.1:2379\"} 2.097152e+07\n\
apiserver_storage_size_bytes{cluster=\"etcd-0\"} 2.097152e+07\n",
    );
    let new = parse(
        b"apiserver_storage_objects{resource=\"configmaps\"} 40\n\
apiserver_storage_size_bytes{storage_cluster_id=\"etcd-0\"} 2.097152e+07\n\
etcd_request_duration_seconds_count{operation=\"get\",type=\"/registry/configmaps/\"} 7\n\
etcd_request_duration_seconds_count{operation=\"list\",type=\"configmaps\"} 3\n",
    );
    for (name, e) in [("old", &old), ("mid", &mid), ("new", &new)] {
        assert!(e.skipped.is_empty(), "{name}");
        let m = map(t, e);
        assert_eq!(
            count_of(&m, Concept::Objects, "", "", "configmaps"),
            Some(40.0),
            "{name}"
        );
        let sizes: Vec<f64> = m
            .series
            .iter()
            .filter(|(k, _)| k.concept == t.idx(Concept::StorageSize))
            .map(|(_, v)| match v {
                Value::Scalar(v) => *v,
                _ => f64::NAN,
            })
            .collect();
        assert_eq!(sizes, vec![20.0 * 1024.0 * 1024.0], "{name}");
    }
    let m = map(t, &old);
    assert_eq!(
        count_of(&m, Concept::EtcdRequestDuration, "get", "", "configmaps"),
        Some(10.0)
    );
    let m = map(t, &new);
    assert_eq!(
        count_of(&m, Concept::EtcdRequestDuration, "get", "", "configmaps"),
        Some(7.0)
    );
    assert_eq!(
        count_of(&m, Concept::EtcdRequestDuration, "list", "", "configmaps"),
        Some(3.0)
    );
    // MID has no latency histogram at all: the concept is not exposed there.
    let m = map(t, &mid);
    assert!(!m.exposes(t, t.idx(Concept::EtcdRequestDuration)));
    assert_eq!(
        m.names[t.idx(Concept::Objects) as usize].as_deref(),
        Some("apiserver_storage_objects")
    );
}

#[test]
fn lazy_counters_are_zero_from_their_release_and_not_exposed_before() {
    let t = table();
    let m = map(
        t,
        &parse(b"kubernetes_build_info{git_version=\"v1.28.3\"} 1\n"),
    );
    assert_eq!(m.version.as_deref(), Some("v1.28.3"));
    assert!(m.exposes(t, t.idx(Concept::TerminatedWatchers)));
    // events_received_total is from 1.27, resource_version gauge from 1.31 (not lazy).
    assert!(m.exposes(t, t.idx(Concept::WatchCacheEventsReceived)));
    assert!(!m.exposes(t, t.idx(Concept::WatchCacheResourceVersion)));
    let m = map(
        t,
        &parse(b"kubernetes_build_info{git_version=\"v1.26.1\"} 1\n"),
    );
    assert!(!m.exposes(t, t.idx(Concept::WatchCacheEventsReceived)));
}

#[test]
fn histograms_sum_series_that_map_to_one_key() {
    let t = table();
    let body = b"apiserver_request_duration_seconds_bucket{verb=\"GET\",group=\"\",resource=\"pods\",scope=\"namespace\",le=\"0.1\"} 3\n\
apiserver_request_duration_seconds_bucket{verb=\"GET\",group=\"\",resource=\"pods\",scope=\"namespace\",le=\"+Inf\"} 4\n\
apiserver_request_duration_seconds_sum{verb=\"GET\",group=\"\",resource=\"pods\",scope=\"namespace\"} 1.5\n\
apiserver_request_duration_seconds_count{verb=\"GET\",group=\"\",resource=\"pods\",scope=\"namespace\"} 4\n\
apiserver_request_duration_seconds_bucket{verb=\"GET\",group=\"\",resource=\"pods\",scope=\"cluster\",le=\"0.1\"} 1\n\
apiserver_request_duration_seconds_bucket{verb=\"GET\",group=\"\",resource=\"pods\",scope=\"cluster\",le=\"+Inf\"} 1\n\
apiserver_request_duration_seconds_sum{verb=\"GET\",group=\"\",resource=\"pods\",scope=\"cluster\"} 0.05\n\
apiserver_request_duration_seconds_count{verb=\"GET\",group=\"\",resource=\"pods\",scope=\"cluster\"} 1\n\
apiserver_request_duration_seconds_count{verb=\"WATCH\",group=\"\",resource=\"pods\",scope=\"cluster\"} 9\n";
    let m = map(t, &parse(body));
    let key = SeriesKey {
        concept: t.idx(Concept::RequestDuration),
        group: Default::default(),
        resource: "pods".into(),
        op: "GET".into(),
    };
    let Some(Value::Histogram(h)) = m.get(&key) else {
        panic!("{:?}", m.series)
    };
    assert_eq!(&*h.bounds, &[0.1]);
    assert_eq!(&*h.cumulative, &[4.0, 5.0]);
    assert_eq!(h.count, 5.0);
    assert!((h.sum - 1.55).abs() < 1e-9);
    // WATCH is long-running: not a latency row.
    assert_eq!(m.series.len(), 1);
}

#[test]
fn minor_versions() {
    assert_eq!(minor_version("v1.34.0"), Some((1, 34)));
    assert_eq!(minor_version("1.31"), Some((1, 31)));
    assert_eq!(minor_version("v1.34.0-regscope-demo"), Some((1, 34)));
    assert_eq!(minor_version("3.6.4"), Some((3, 6)));
    assert_eq!(minor_version(""), None);
}

mod shared {
    use super::*;
    use serde::Serialize;
    use std::sync::Arc;

    /// Labels and histogram bounds read back on one thread share their allocations, and
    /// are written as the plain strings and sequences a `String` and an `Arc<[f64]>`
    /// gave (recordings written before read the same).
    #[test]
    fn labels_and_bounds_read_back_are_shared_and_written_as_before() {
        let key = |r: &str| SeriesKey {
            concept: 1,
            group: "apps".into(),
            resource: r.into(),
            op: "GET".into(),
        };
        let hist = || {
            Value::Histogram(Arc::new(Hist {
                bounds: Arc::from(&[0.1, 1.0, 10.0][..]),
                cumulative: vec![1.0, 2.0, 3.0, 4.0].into_boxed_slice(),
                sum: 5.0,
                count: 4.0,
            }))
        };
        let mut m = Mapped::default();
        m.series.insert(key("deployments"), hist());
        m.series.insert(key("replicasets"), hist());
        let bytes = postcard::to_allocvec(&m).unwrap();
        let a: Mapped = postcard::from_bytes(&bytes).unwrap();
        let b: Mapped = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(a.series, m.series);
        let (ka, va) = a.series.iter().next().unwrap();
        let (kb, _) = b.series.get_key_value(ka).unwrap();
        assert!(std::ptr::eq(ka.group.as_ptr(), kb.group.as_ptr()));
        assert!(std::ptr::eq(ka.resource.as_ptr(), kb.resource.as_ptr()));
        let bounds: Vec<_> = a
            .series
            .values()
            .chain(b.series.values())
            .map(|v| match v {
                Value::Histogram(h) => h.bounds.clone(),
                Value::Scalar(_) => unreachable!(),
            })
            .collect();
        assert!(bounds.iter().all(|x| Arc::ptr_eq(x, &bounds[0])), "{va:?}");
        // The bytes a String and a Vec<f64> gave.
        #[derive(Serialize)]
        struct Before {
            concept: ConceptIdx,
            group: String,
            resource: String,
            op: String,
        }
        let before = Before {
            concept: 1,
            group: "apps".into(),
            resource: "deployments".into(),
            op: "GET".into(),
        };
        assert_eq!(
            postcard::to_allocvec(&key("deployments")).unwrap(),
            postcard::to_allocvec(&before).unwrap()
        );
        // JSON, which lends no text, reads too.
        let k: SeriesKey =
            serde_json::from_str(r#"{"concept":1,"group":"apps","resource":"a\"b","op":""}"#)
                .unwrap();
        assert_eq!(k.resource, "a\"b");
    }
}

/// `until` ends a name's life: a lazy concept whose names are all past it is not exposed
/// (never 0), one with a live name is; versions of both version spaces compare by minor.
#[test]
fn names_past_their_until_are_not_exposed_even_when_lazy() {
    let t = table();
    let at = |v: &str| {
        let body = if v.starts_with('3') {
            format!("etcd_server_version{{server_version=\"{v}\"}} 1\n")
        } else {
            format!("kubernetes_build_info{{git_version=\"{v}\"}} 1\n")
        };
        map(t, &parse(body.as_bytes()))
    };
    let cache_lists = t.idx(Concept::CacheLists);
    assert!(at("v1.36.2").exposes(t, cache_lists));
    assert!(!at("v1.37.0").exposes(t, cache_lists));
    assert!(!at("v1.38.0-alpha.1").exposes(t, cache_lists));
    assert!(!at("v1.24.0").exposes(t, cache_lists));
    // A newer name of the concept keeps it exposed across the rename.
    let bookmarks = t.idx(Concept::EtcdBookmarks);
    for v in ["v1.20.0", "v1.35.1", "v1.36.0", "v1.37.0"] {
        assert!(at(v).exposes(t, bookmarks), "{v}");
    }
    // etcd versions: 3.6.4 is at or after "3.6".
    let http = t.idx(Concept::EtcdHttpReceived);
    assert!(at("3.5.21").exposes(t, http));
    assert!(!at("3.6.4").exposes(t, http));
    assert!(!at("3.7.0").exposes(t, http));
    assert_eq!(
        t.concept(http).absence(Some("3.6.4")),
        Absence::Removed {
            name: "etcd_http_received_total",
            until: "3.6",
            replacement: ""
        }
    );
    // Every `until` and `since` of the table reads as a version, and `until` comes after
    // `since`; a replacement is a name of the table.
    let all: Vec<&str> = t
        .concepts
        .iter()
        .flat_map(|c| c.names.iter().map(|n| n.name.as_str()))
        .collect();
    for c in &t.concepts {
        for n in &c.names {
            assert!(
                n.since.is_empty() || minor_version(&n.since).is_some(),
                "{}",
                n.name
            );
            if !n.until.is_empty() {
                let u = minor_version(&n.until).expect("until reads as a version");
                assert!(minor_version(&n.since).is_none_or(|s| s < u), "{}", n.name);
            }
            assert!(
                n.replacement.is_empty() || all.contains(&n.replacement.as_str()),
                "{}: {}",
                n.name,
                n.replacement
            );
        }
    }
}

/// The watch cache's list metrics up to 1.33 name a storage path without the etcd prefix.
#[test]
fn bare_storage_paths_map_to_group_and_resource() {
    let t = table();
    let m = map(
        t,
        &parse(
            b"apiserver_cache_list_total{index=\"\",resource_prefix=\"/pods\"} 3\n\
apiserver_cache_list_total{index=\"\",resource_prefix=\"/apiregistration.k8s.io/apiservices\"} 2\n\
apiserver_cache_list_total{index=\"\",resource_prefix=\"/deployments\"} 1\n\
apiserver_cache_list_total{index=\"\",resource_prefix=\"/services/specs\"} 4\n",
        ),
    );
    for (g, r, v) in [
        ("", "pods", 3.0),
        ("apiregistration.k8s.io", "apiservices", 2.0),
        ("apps", "deployments", 1.0),
        ("", "services", 4.0),
    ] {
        assert_eq!(count_of(&m, Concept::CacheLists, "", g, r), Some(v), "{r}");
    }
}
