//! A hand-built [`Report`] for the renderers' unit tests: every section filled, a hostile
//! key (`<script>`, `|`, `&`), a chart with gaps (`None`) and markers, and a chart with no
//! data at all.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::model::*;

/// 2026-12-04T07:40:00Z.
pub(crate) const T0: i64 = 1_796_370_000;

fn at(secs: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs as u64)
}

/// The key a hostile cluster could hold: markup, a table separator and an ampersand.
pub(crate) const HOSTILE_KEY: &str = "/registry/configmaps/default/<script>alert(1)</script>|a&b";

/// Twelve instants ten seconds apart, two charts with data (one with gaps), one without.
pub(crate) fn sample_report() -> Report {
    let times: Vec<i64> = (0..12).map(|i| T0 + i * 10).collect();
    let rate: Vec<Option<f64>> = (0..12)
        .map(|i| match i {
            0 => None,
            5 | 6 => None,
            i => Some(i as f64 * 1.5),
        })
        .collect();
    let head: Vec<Option<f64>> = (0..12).map(|i| Some(1000.0 + i as f64 * 12.0)).collect();
    let marker = |secs: i64, rev: i64, kind: &'static str, label: &str| Marker {
        at: at(T0 + secs),
        revision: rev,
        kind,
        label: label.to_string(),
    };
    Report {
        generated_by: "regscope 0.1.0".into(),
        source: Source {
            files: vec!["recordings/demo.rgs".into()],
            secrets_redacted: true,
            lost_instants: 0,
            damage: vec!["frame at byte 4,096: checksum mismatch (skipped)".into()],
            notes: vec!["line 3: no time".into()],
        },
        cluster: Cluster {
            title: "demo <cluster>".into(),
            endpoints: vec!["http://127.0.0.1:2379".into()],
            prefix: "/registry".into(),
            server: Some("http://127.0.0.1:2379".into()),
            cluster_id: Some("cdf818194e3a8c32".into()),
            replacements: vec!["cdf818194e3a8c32".into()],
            members: vec![Member {
                name: "default".into(),
                endpoint: "http://127.0.0.1:2379".into(),
                version: Some("3.5.1".into()),
                leader: true,
                answering: true,
            }],
            etcd_version: Some("3.5.1".into()),
            kubernetes_version: None,
            apiserver_flags: vec![("--etcd-compaction-interval".into(), "5m".into())],
            apiserver_flags_file: Some("/etc/kubernetes/manifests/kube-apiserver.yaml".into()),
            other_clusters: vec![OtherCluster {
                resources: "/events".into(),
                endpoint: "https://127.0.0.1:2381".into(),
                version: None,
                up: false,
            }],
            quota_bytes: Some(2_147_483_648.0),
        },
        span: Span {
            from: at(T0),
            to: at(T0 + 110),
            recording_start: at(T0 - 60),
            recording_end: at(T0 + 200),
            recorder_utc_offset_seconds: Some(-5 * 3600),
            from_revision: 1000,
            to_revision: 1132,
            interval_seconds: 10,
        },
        markers: vec![
            marker(25, 1030, "compaction", "compaction at revision 1,030"),
            marker(52, 1062, "gone", "410 Gone: events"),
            marker(80, 1096, "bookmark", "bookmark: <b>deploy</b>"),
        ],
        sampled_at: times.iter().map(|t| at(*t)).collect(),
        figures: [("etcd_head_revision", head.clone())].into_iter().collect(),
        times,
        charts: vec![
            Chart {
                id: "writes",
                title: "Writes per second".into(),
                y_label: "revisions per second".into(),
                unit: "revisions/s",
                signals: vec!["head_rate"],
                series: vec![Series {
                    name: "all resources".into(),
                    values: rate,
                }],
                note: None,
            },
            Chart {
                id: "head",
                title: "Head revision".into(),
                y_label: "revision".into(),
                unit: "revisions",
                signals: vec!["head"],
                series: vec![Series {
                    name: "head <rev>".into(),
                    values: head,
                }],
                note: None,
            },
            Chart {
                id: "latency",
                title: "etcd request p99".into(),
                y_label: "seconds".into(),
                unit: "seconds",
                signals: vec!["etcd_p99"],
                series: vec![],
                note: Some("no apiserver scrapes in this recording".into()),
            },
        ],
        stands_out: StandsOut {
            incidents: Vec::new(),
            largest_burst: Some(Burst {
                at: at(T0 + 40),
                resource: "configmaps".into(),
                writes_per_second: 6.0,
                median_writes_per_second: Some(2.0),
                writer: Some("kube-controller-manager (Update)".into()),
            }),
            worst_lag: Some(WorstLag {
                at: at(T0 + 50),
                resource: "events".into(),
                lag_revisions: 80,
                lag_seconds: Some(12.5),
                window_revisions: Some(100),
                fraction_of_window: Some(0.8),
            }),
            gone_and_relists: vec![ResourceEvent {
                at: at(T0 + 52),
                what: "gone",
                resource: "events".into(),
            }],
            slowest_etcd: Some(Slowest {
                at: at(T0 + 60),
                operation: "get".into(),
                resource: "leases".into(),
                p99_seconds: 0.25,
                at_least: true,
            }),
            db_growth: Some(DbGrowth {
                first_bytes: 20_000_000.0,
                last_bytes: 24_000_000.0,
                first_in_use_bytes: None,
                last_in_use_bytes: Some(18_000_000.0),
                quota_bytes: Some(2_147_483_648.0),
            }),
            most_written: vec![KeyWrites {
                key: HOSTILE_KEY.into(),
                writes: 42,
            }],
            most_written_exact: true,
            closest_to_window: None,
        },
        changes: Changes {
            from_revision: 1000,
            to_revision: 1132,
            from_at: Some(at(T0)),
            to_at: Some(at(T0 + 110)),
            per_resource: vec![ResourceChanges {
                resource: "configmaps".into(),
                created: 3,
                deleted: 1,
                changed: 40,
                recreated: 2,
                bytes_from: 10_240,
                bytes_to: 12_288,
                bytes_created: 3_000,
                bytes_deleted: 1_000,
                bytes_changed_delta: 48,
                bytes_recreated_delta: 0,
            }],
            total: ResourceChanges {
                resource: String::new(),
                created: 3,
                deleted: 1,
                changed: 40,
                recreated: 2,
                bytes_from: 10_240,
                bytes_to: 12_288,
                bytes_created: 3_000,
                bytes_deleted: 1_000,
                bytes_changed_delta: 48,
                bytes_recreated_delta: 0,
            },
            top_keys: vec![KeyChange {
                key: HOSTILE_KEY.into(),
                resource: "configmaps".into(),
                change: ChangeKind::Changed,
                bytes_from: Some(100),
                bytes_to: Some(2_000),
                mod_revision_from: Some(1001),
                mod_revision_to: Some(1130),
                create_revision_from: Some(1001),
                create_revision_to: Some(1001),
            }],
            note: None,
        },
    }
}
