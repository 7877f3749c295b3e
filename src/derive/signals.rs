//! The derived signals: one table of named numbers computed from a session at one moment
//! ([`SIGNALS`], read all at once with [`read`]). Each has a name, a kind (gauge or
//! counter), a unit, its labels and how it is computed: every entry reads the same
//! derivation the console's panels draw ([`super::apiserver::build`] and the replica's
//! counters), so a figure in a report, in `snapshot --json` (`signals`) and on screen is
//! the same number at the same moment. The report samples this table on a time grid;
//! `snapshot --json --from FILE --at T` prints it at T.
//!
//! Names carry no prefix and their unit as a suffix where Prometheus' naming practice
//! puts one (`_seconds`, `_bytes`, `_total` on counters). Counters count since the replica
//! (or, for the apiserver's, since the apiserver) started; a replaced etcd restarts the
//! replica's, so a consumer taking differences treats a decrease as a restart.

use serde::Serialize;
use std::collections::BTreeMap;

use super::apiserver::{self, ApiserverPanels};
use crate::metrics::concepts::{self, Concept, SeriesKey, Value};
use crate::metrics::quantile::{histogram_increase, histogram_quantile, Quantile};
use crate::model::ScrapeTarget;
use crate::store::Session;

/// How a signal's value moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalKind {
    /// A value at the moment.
    Gauge,
    /// A count since a start, never decreasing except at a restart.
    Counter,
}

/// One named derived signal.
pub struct Signal {
    /// `etcd_head_revision`, `informer_lag_seconds`, …
    pub name: &'static str,
    pub kind: SignalKind,
    /// The unit of the value: `revisions`, `seconds`, `bytes`, `keys`, `objects`,
    /// `writes`, `requests`, `watchers`, `ratio` (0–1), `events`.
    pub unit: &'static str,
    /// The label names, in the order of each [`Sample::labels`].
    pub labels: &'static [&'static str],
    /// One line: what it is and where it comes from.
    pub help: &'static str,
    read: fn(&Inputs<'_>, &mut Vec<Sample>),
}

impl std::fmt::Debug for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signal").field("name", &self.name).finish()
    }
}

/// One value of a signal: its label values (in [`Signal::labels`] order) and the value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sample {
    pub labels: Vec<String>,
    pub value: f64,
}

/// What every signal reads: the session and its apiserver-side panels, derived once at
/// the session's clock ([`Session::now`]), as the console and `snapshot --json` derive
/// them.
struct Inputs<'a> {
    session: &'a Session,
    panels: &'a ApiserverPanels,
}

/// The `watcher` label of the informer-lag signals for regscope's own informer through
/// the apiserver (the only watcher whose lag regscope measures event by event).
pub const OWN_INFORMER: &str = "regscope";

/// The `watcher` label of a controller's informer: `<component>/<informer name>`, e.g.
/// `kube-controller-manager/shared-informers`.
fn controller_watcher(r: &crate::derive::apiserver::ControllerInformerRow) -> String {
    format!("{}/{}", r.component, r.name)
}

/// The counters the replica keeps from etcd's watch: they stand still while etcd is out
/// of reach, so a rate over such a stretch is not known (a reader must not take it for no
/// writes).
pub const REPLICA_COUNTERS: [&str; 3] =
    ["writes_total", "written_bytes_total", "writer_writes_total"];

/// Every signal's samples at one moment, in [`SIGNALS`] order; a signal with nothing
/// known has no sample (never a 0 it does not know).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Readings {
    /// Signal name → its samples.
    pub signals: BTreeMap<&'static str, Vec<Sample>>,
}

impl Readings {
    /// The samples of `name` (empty when unknown or nothing known).
    pub fn get(&self, name: &str) -> &[Sample] {
        self.signals.get(name).map_or(&[], Vec::as_slice)
    }

    /// The one value of an unlabelled signal.
    pub fn scalar(&self, name: &str) -> Option<f64> {
        self.get(name).first().map(|s| s.value)
    }

    /// As `snapshot --json` prints them: signal name → one object per sample, its labels
    /// by name and `value` (`{"resource": "pods", "operation": "put", "value": 12}`).
    pub fn to_json(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        for (name, samples) in &self.signals {
            let names = signal(name).map_or(&[][..], |s| s.labels);
            let rows = samples
                .iter()
                .map(|x| {
                    let mut o = serde_json::Map::new();
                    for (k, v) in names.iter().zip(&x.labels) {
                        o.insert((*k).to_string(), serde_json::Value::from(v.as_str()));
                    }
                    o.insert("value".into(), serde_json::Value::from(x.value));
                    serde_json::Value::Object(o)
                })
                .collect();
            out.insert((*name).to_string(), serde_json::Value::Array(rows));
        }
        serde_json::Value::Object(out)
    }
}

/// Reads every signal of [`SIGNALS`] from `session` and the `panels` already derived from
/// it at its clock (`apiserver::build(…, session.now())`).
pub fn read_with(session: &Session, panels: &ApiserverPanels) -> Readings {
    let inputs = Inputs { session, panels };
    let mut r = Readings::default();
    for s in SIGNALS {
        let mut out = Vec::new();
        (s.read)(&inputs, &mut out);
        if !out.is_empty() {
            r.signals.insert(s.name, out);
        }
    }
    // While etcd is out of reach its head is not known: the replica's revision is only
    // where the watch stopped.
    // Nor are the figures of etcd's own metrics, whose last scrape is as old as the
    // outage, nor regscope's lag behind a head it cannot see.
    if session.etcd.outage_since().is_some() {
        for name in [
            "etcd_head_revision",
            "regscope_watch_lag_revisions",
            "etcd_db_size_bytes",
            "etcd_db_in_use_bytes",
            "etcd_quota_bytes",
            "etcd_leader_changes_total",
        ] {
            r.signals.remove(name);
        }
    }
    r
}

/// Reads every signal of `session` at its own clock ([`Session::now`]).
pub fn read(session: &Session) -> Readings {
    let panels = apiserver::build(
        &session.metrics,
        Some(session),
        &session.informers,
        session.now(),
    );
    read_with(session, &panels)
}

/// The worst sample of `etcd_request_p99_seconds` (labels operation, group, resource),
/// derived from the apiserver's newest scrape alone instead of every panel: the marker
/// scan asks for it after each apiserver scrape. It is the sample that the highest value
/// among [`read`]'s samples of that signal names, and of equal values the last in the
/// latency panel's order (as `Iterator::max_by` picks), so that a label made from it is
/// the same either way.
pub fn worst_etcd_request_p99(session: &Session) -> Option<Sample> {
    let t = concepts::table();
    let api = session.metrics.target(ScrapeTarget::Apiserver);
    // The panels have no latency rows before the first scrape.
    api.latest()?;
    let ci = t.idx(Concept::EtcdRequestDuration);
    let newest = api.newest_seq();
    let mut rows: Vec<(Quantile, f64, &str, &SeriesKey)> = Vec::new();
    for (k, pts) in api.series() {
        if k.concept != ci || pts.back().map(|p| p.seq) != newest {
            continue;
        }
        let Some(Value::Histogram(cur)) = pts.back().map(|p| &p.value) else {
            continue;
        };
        let prev = pts
            .len()
            .checked_sub(2)
            .and_then(|i| pts.get(i))
            .filter(|p| Some(p.seq + 1) == newest)
            .and_then(|p| match &p.value {
                Value::Histogram(h) => Some(&**h),
                _ => None,
            });
        let inc = histogram_increase(prev, cur);
        let p99 = histogram_quantile(0.99, &cur.bounds, &inc);
        let resource = if k.resource.is_empty() {
            "(non-resource URLs)"
        } else {
            k.resource.as_str()
        };
        rows.push((p99, cur.count, resource, k));
    }
    // The latency panel's order: worst first (an open top bucket above its bound), then
    // more requests first, then by resource and operation.
    let rank = |q: &Quantile| match q {
        Quantile::Value(v) => *v,
        Quantile::AtLeast(v) => v * 1.0001 + 1e-9,
        Quantile::NoData => -1.0,
    };
    rows.sort_by(|a, b| {
        rank(&b.0)
            .total_cmp(&rank(&a.0))
            .then_with(|| b.1.total_cmp(&a.1))
            .then_with(|| (a.2, a.3.op.as_str()).cmp(&(b.2, b.3.op.as_str())))
    });
    rows.iter()
        .filter_map(|(q, _, resource, k)| quantile_value(q).map(|v| (v, *resource, *k)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(value, resource, k)| Sample {
            labels: vec![k.op.to_string(), k.group.to_string(), resource.to_string()],
            value,
        })
}

/// The signal named `name`.
pub fn signal(name: &str) -> Option<&'static Signal> {
    SIGNALS.iter().find(|s| s.name == name)
}

fn one(out: &mut Vec<Sample>, v: Option<f64>) {
    if let Some(value) = v {
        out.push(Sample {
            labels: Vec::new(),
            value,
        });
    }
}

fn labelled(out: &mut Vec<Sample>, labels: &[&str], v: Option<f64>) {
    if let Some(value) = v {
        out.push(Sample {
            labels: labels.iter().map(|s| s.to_string()).collect(),
            value,
        });
    }
}

/// A quantile as a number: the value, or the bound of an open top bucket.
pub fn quantile_value(q: &Quantile) -> Option<f64> {
    match q {
        Quantile::Value(v) | Quantile::AtLeast(v) => Some(*v),
        Quantile::NoData => None,
    }
}

/// `etcd_request_duration_seconds` as the apiserver measures its storage calls.
const ETCD_REQUEST: &str = "etcd_request_duration_seconds";
/// `apiserver_request_duration_seconds`, whole requests.
const APISERVER_REQUEST: &str = "apiserver_request_duration_seconds";

fn latency(
    i: &Inputs<'_>,
    out: &mut Vec<Sample>,
    metric: &str,
    q: fn(&apiserver::LatencyRow) -> &Quantile,
) {
    for r in i.panels.latency.iter().filter(|r| r.metric == metric) {
        labelled(
            out,
            &[&r.operation, &r.group, &r.resource],
            quantile_value(q(r)),
        );
    }
}

/// The table. Kept in the order a reader meets the things they measure: etcd's history,
/// lag, the watch cache, writes, keys, latency, etcd's database.
pub static SIGNALS: &[Signal] = &[
    Signal {
        name: "etcd_head_revision",
        kind: SignalKind::Gauge,
        unit: "revisions",
        labels: &[],
        help: "etcd's head revision: the replica's, else etcd's metrics (the compaction window panel's head); absent while etcd is out of reach",
        read: |i, o| one(o, i.panels.window.head.map(|r| r as f64)),
    },
    Signal {
        name: "etcd_compacted_revision",
        kind: SignalKind::Gauge,
        unit: "revisions",
        labels: &[],
        help: "etcd's compacted revision, however learned (compact_rev_key, a cancelled watch, etcd's metrics)",
        read: |i, o| one(o, i.panels.window.compact_revision.map(|r| r as f64)),
    },
    Signal {
        name: "compaction_window_revisions",
        kind: SignalKind::Gauge,
        unit: "revisions",
        labels: &[],
        help: "head − compacted revision: how far back a watch can resume before 410 Gone",
        read: |i, o| one(o, i.panels.window.window_revisions.map(|r| r as f64)),
    },
    Signal {
        name: "compaction_window_seconds",
        kind: SignalKind::Gauge,
        unit: "seconds",
        labels: &[],
        help: "the compaction window in seconds, through the replica's revision→time map",
        read: |i, o| one(o, i.panels.window.window_seconds),
    },
    Signal {
        name: "regscope_watch_lag_revisions",
        kind: SignalKind::Gauge,
        unit: "revisions",
        labels: &[],
        help: "etcd's head per its metrics − the replica's head: regscope's own watch lag",
        read: |i, o| one(o, i.panels.window.regscope_lag_revisions.map(|r| r as f64)),
    },
    Signal {
        name: "informer_lag_revisions",
        kind: SignalKind::Gauge,
        unit: "revisions",
        labels: &["group", "resource", "watcher"],
        help: "an informer's lag: regscope's own (watcher=\"regscope\"), head when an event arrived − its resourceVersion; a controller's (watcher=\"<component>/<informer>\", Kubernetes 1.36+), head − its store's resourceVersion, 0 when no event of its resource is after it",
        read: |i, o| {
            for r in &i.panels.window.rows {
                labelled(o, &[&r.group, &r.resource, OWN_INFORMER], r.informer_lag_revisions.map(|v| v as f64));
            }
            for r in &i.panels.controllers.informers {
                let w = controller_watcher(r);
                labelled(o, &[&r.group, &r.resource, &w], r.lag_revisions.map(|v| v as f64));
            }
        },
    },
    Signal {
        name: "informer_lag_seconds",
        kind: SignalKind::Gauge,
        unit: "seconds",
        labels: &["group", "resource", "watcher"],
        help: "the same lag in seconds (replica's revision→time map); for a controller's informer, how long the oldest event of its resource it has not applied had waited",
        read: |i, o| {
            for r in &i.panels.window.rows {
                labelled(o, &[&r.group, &r.resource, OWN_INFORMER], r.informer_lag_seconds);
            }
            for r in &i.panels.controllers.informers {
                let w = controller_watcher(r);
                labelled(o, &[&r.group, &r.resource, &w], r.lag_seconds);
            }
        },
    },
    Signal {
        name: "informer_lag_window_ratio",
        kind: SignalKind::Gauge,
        unit: "ratio",
        labels: &["group", "resource", "watcher"],
        help: "informer lag ÷ compaction window in revisions, at most 1: 1 means the informer's resourceVersion is compacted and a resume gets 410 Gone",
        read: |i, o| {
            let Some(w) = i.panels.window.window_revisions.filter(|w| *w > 0) else {
                return;
            };
            for r in &i.panels.window.rows {
                // A lag past the window is as certain a 410 as one at it: a ratio stays
                // within 0–1 (its revisions say how far past).
                let v = r.informer_lag_revisions.map(|l| (l as f64 / w as f64).min(1.0));
                labelled(o, &[&r.group, &r.resource, OWN_INFORMER], v);
            }
            for r in &i.panels.controllers.informers {
                let watcher = controller_watcher(r);
                let v = r.lag_revisions.map(|l| (l as f64 / w as f64).min(1.0));
                labelled(o, &[&r.group, &r.resource, &watcher], v);
            }
        },
    },
    Signal {
        name: "informer_events_behind",
        kind: SignalKind::Gauge,
        unit: "events",
        labels: &["group", "resource", "watcher"],
        help: "events of the resource after a controller informer's store resourceVersion, counted in the replica's event log (kube-controller-manager and kube-scheduler, Kubernetes 1.36+)",
        read: |i, o| {
            for r in &i.panels.controllers.informers {
                let w = controller_watcher(r);
                labelled(o, &[&r.group, &r.resource, &w], r.events_behind.map(|v| v as f64));
            }
        },
    },
    Signal {
        name: "informer_queued_items",
        kind: SignalKind::Gauge,
        unit: "deltas",
        labels: &["group", "resource", "watcher"],
        help: "informer_queued_items of a controller informer: deltas waiting in its FIFO",
        read: |i, o| {
            for r in &i.panels.controllers.informers {
                let w = controller_watcher(r);
                labelled(o, &[&r.group, &r.resource, &w], r.queued_items);
            }
        },
    },
    Signal {
        name: "workqueue_depth",
        kind: SignalKind::Gauge,
        unit: "items",
        labels: &["component", "queue"],
        help: "workqueue_depth of a controller queue in kube-controller-manager or kube-scheduler",
        read: |i, o| {
            for q in &i.panels.controllers.workqueues {
                labelled(o, &[q.component, &q.name], q.depth);
            }
        },
    },
    Signal {
        name: "workqueue_adds_total",
        kind: SignalKind::Counter,
        unit: "items",
        labels: &["component", "queue"],
        help: "workqueue_adds_total of a controller queue",
        read: |i, o| {
            for q in &i.panels.controllers.workqueues {
                labelled(o, &[q.component, &q.name], q.adds_total);
            }
        },
    },
    Signal {
        name: "workqueue_retries_total",
        kind: SignalKind::Counter,
        unit: "items",
        labels: &["component", "queue"],
        help: "workqueue_retries_total of a controller queue: items put back after a failed sync",
        read: |i, o| {
            for q in &i.panels.controllers.workqueues {
                labelled(o, &[q.component, &q.name], q.retries_total);
            }
        },
    },
    Signal {
        name: "watch_cache_lag_revisions",
        kind: SignalKind::Gauge,
        unit: "revisions",
        labels: &["group", "resource"],
        help: "head − apiserver_watch_cache_resource_version (Kubernetes 1.31+)",
        read: |i, o| {
            for r in &i.panels.window.rows {
                let v = r.watch_cache_lag_revisions.value().map(|v| *v as f64);
                labelled(o, &[&r.group, &r.resource], v);
            }
        },
    },
    Signal {
        name: "informer_relists_total",
        kind: SignalKind::Counter,
        unit: "lists",
        labels: &["group", "resource"],
        help: "relists of regscope's informer after its first list",
        read: |i, o| {
            for r in i.panels.window.rows.iter().filter(|r| r.informer_state.is_some()) {
                labelled(o, &[&r.group, &r.resource], Some(r.relists as f64));
            }
        },
    },
    Signal {
        name: "informer_gone_total",
        kind: SignalKind::Counter,
        unit: "answers",
        labels: &["group", "resource"],
        help: "410 Gone answers regscope's informer received",
        read: |i, o| {
            for r in i.panels.window.rows.iter().filter(|r| r.informer_state.is_some()) {
                labelled(o, &[&r.group, &r.resource], Some(r.gone_410 as f64));
            }
        },
    },
    Signal {
        name: "watch_cache_capacity",
        kind: SignalKind::Gauge,
        unit: "events",
        labels: &["group", "resource"],
        help: "watch_cache_capacity: events the apiserver's watch cache ring holds",
        read: |i, o| {
            for r in &i.panels.watch_cache {
                labelled(o, &[&r.group, &r.resource], r.capacity.value().copied());
            }
        },
    },
    Signal {
        name: "watch_cache_history_span_seconds",
        kind: SignalKind::Gauge,
        unit: "seconds",
        labels: &["group", "resource"],
        help: "events the cache holds ÷ the resource's event rate: how far back a watcher can resume from the cache",
        read: |i, o| {
            for r in &i.panels.watch_cache {
                labelled(o, &[&r.group, &r.resource], r.history_span_seconds);
            }
        },
    },
    Signal {
        name: "terminated_watchers_total",
        kind: SignalKind::Counter,
        unit: "watchers",
        labels: &["group", "resource"],
        help: "apiserver_terminated_watchers_total: watchers closed as unresponsive, since the apiserver started",
        read: |i, o| {
            for r in &i.panels.watch_cache {
                labelled(o, &[&r.group, &r.resource], r.terminated_watchers.value().copied());
            }
        },
    },
    Signal {
        name: "apiserver_lists_total",
        kind: SignalKind::Counter,
        unit: "requests",
        labels: &["group", "resource", "kind"],
        help: "lists per watch-cached resource since the apiserver started: kind list (apiserver_request_total verb LIST) and watch_list (apiserver_watch_list_duration_seconds count, 1.29+); a relist is either",
        read: |i, o| {
            for r in &i.panels.watch_cache {
                labelled(o, &[&r.group, &r.resource, "list"], r.list_requests_total.value().copied());
                labelled(o, &[&r.group, &r.resource, "watch_list"], r.watch_lists_total.value().copied());
            }
        },
    },
    Signal {
        name: "writes_total",
        kind: SignalKind::Counter,
        unit: "writes",
        labels: &["resource", "operation"],
        help: "PUT and DELETE events the replica applied per resource (list items are not writes)",
        read: |i, o| {
            for r in i.session.replica.resources() {
                labelled(o, &[&r.resource, "put"], Some(r.puts as f64));
                labelled(o, &[&r.resource, "delete"], Some(r.deletes as f64));
            }
        },
    },
    Signal {
        name: "written_bytes_total",
        kind: SignalKind::Counter,
        unit: "bytes",
        labels: &["resource", "operation"],
        help: "value bytes of the PUTs the replica applied per resource (a DELETE writes no value: operation is always put)",
        read: |i, o| {
            let r = &i.session.replica;
            let mut by: BTreeMap<&str, u64> = BTreeMap::new();
            for w in r.writers() {
                *by.entry(r.resource_name(w.resource)).or_default() += w.bytes;
            }
            for (res, b) in by {
                labelled(o, &[res, "put"], Some(b as f64));
            }
        },
    },
    Signal {
        name: "writer_writes_total",
        kind: SignalKind::Counter,
        unit: "writes",
        labels: &["resource", "manager", "operation"],
        help: "writes per managedFields writer (manager, how); names in parentheses are writes no manager is named for",
        read: |i, o| {
            let r = &i.session.replica;
            for w in r.writers() {
                labelled(
                    o,
                    &[r.resource_name(w.resource), &w.manager, &w.how()],
                    Some((w.puts + w.deletes) as f64),
                );
            }
        },
    },
    Signal {
        name: "keys",
        kind: SignalKind::Gauge,
        unit: "keys",
        labels: &["resource"],
        help: "live keys per resource in the replica",
        read: |i, o| {
            for r in i.session.replica.resources().iter().filter(|r| r.keys > 0) {
                labelled(o, &[&r.resource], Some(r.keys as f64));
            }
        },
    },
    Signal {
        name: "stored_bytes",
        kind: SignalKind::Gauge,
        unit: "bytes",
        labels: &["resource"],
        help: "value bytes of every live key's newest version per resource",
        read: |i, o| {
            for r in i.session.replica.resources().iter().filter(|r| r.keys > 0) {
                labelled(o, &[&r.resource], Some(r.bytes as f64));
            }
        },
    },
    Signal {
        name: "objects",
        kind: SignalKind::Gauge,
        unit: "objects",
        labels: &["group", "resource"],
        help: "the apiserver's object count per resource (apiserver_storage_objects or apiserver_resource_objects)",
        read: |i, o| {
            for r in &i.panels.objects {
                labelled(o, &[&r.group, &r.resource], r.apiserver.value().map(|v| *v as f64));
            }
        },
    },
    Signal {
        name: "etcd_request_p50_seconds",
        kind: SignalKind::Gauge,
        unit: "seconds",
        labels: &["operation", "group", "resource"],
        help: "median of etcd_request_duration_seconds over the newest scrape interval",
        read: |i, o| latency(i, o, ETCD_REQUEST, |r| &r.p50),
    },
    Signal {
        name: "etcd_request_p99_seconds",
        kind: SignalKind::Gauge,
        unit: "seconds",
        labels: &["operation", "group", "resource"],
        help: "99th percentile of etcd_request_duration_seconds over the newest scrape interval",
        read: |i, o| latency(i, o, ETCD_REQUEST, |r| &r.p99),
    },
    Signal {
        name: "apiserver_request_p99_seconds",
        kind: SignalKind::Gauge,
        unit: "seconds",
        labels: &["operation", "group", "resource"],
        help: "99th percentile of apiserver_request_duration_seconds over the newest scrape interval",
        read: |i, o| latency(i, o, APISERVER_REQUEST, |r| &r.p99),
    },
    Signal {
        name: "apf_rejected_total",
        kind: SignalKind::Counter,
        unit: "requests",
        labels: &["priority_level"],
        help: "apiserver_flowcontrol_rejected_requests_total per priority level",
        read: |i, o| {
            for r in i.panels.apf.iter().flatten() {
                labelled(o, &[&r.priority_level], r.rejected_total);
            }
        },
    },
    Signal {
        name: "etcd_db_size_bytes",
        kind: SignalKind::Gauge,
        unit: "bytes",
        labels: &[],
        help: "etcd's database file size (etcd_mvcc_db_total_size_in_bytes)",
        read: |i, o| one(o, i.panels.etcd_health.as_ref().and_then(|h| h.db_size_bytes)),
    },
    Signal {
        name: "etcd_db_in_use_bytes",
        kind: SignalKind::Gauge,
        unit: "bytes",
        labels: &[],
        help: "the part of etcd's database file in use (etcd_mvcc_db_total_size_in_use_in_bytes)",
        read: |i, o| one(o, i.panels.etcd_health.as_ref().and_then(|h| h.db_in_use_bytes)),
    },
    Signal {
        name: "etcd_quota_bytes",
        kind: SignalKind::Gauge,
        unit: "bytes",
        labels: &[],
        help: "etcd's --quota-backend-bytes (etcd_server_quota_backend_bytes)",
        read: |i, o| one(o, i.panels.etcd_health.as_ref().and_then(|h| h.quota_bytes)),
    },
    Signal {
        name: "etcd_leader_changes_total",
        kind: SignalKind::Counter,
        unit: "changes",
        labels: &[],
        help: "etcd_server_leader_changes_seen_total of the member scraped",
        read: |i, o| one(o, i.panels.etcd_health.as_ref().and_then(|h| h.leader_changes)),
    },
    Signal {
        name: "watch_anomalies_total",
        kind: SignalKind::Counter,
        unit: "anomalies",
        labels: &["kind"],
        help: "departures from etcd's watch contract counted by the replica, by kind (progress_behind, progress_ahead_of_events, repeated_events, unknown_deletes)",
        read: |i, o| {
            let h = i.session.etcd.watch_health();
            for (kind, n) in [
                ("progress_behind", h.progress_behind),
                ("progress_ahead_of_events", h.progress_ahead_of_events),
                ("repeated_events", h.repeated_events),
                ("unknown_deletes", h.unknown_deletes),
            ] {
                labelled(o, &[kind], Some(n as f64));
            }
        },
    },
    Signal {
        name: "gaps_total",
        kind: SignalKind::Counter,
        unit: "gaps",
        labels: &[],
        help: "relists after etcd compacted past the revision the watch would resume from",
        read: |i, o| one(o, Some(i.session.replica.gaps().len() as f64)),
    },
    Signal {
        name: "cluster_replacements_total",
        kind: SignalKind::Counter,
        unit: "replacements",
        labels: &[],
        help: "times etcd was replaced under regscope (new cluster id, or a revision that went back)",
        read: |i, o| one(o, Some(i.session.etcd.replacements().len() as f64)),
    },
    Signal {
        name: "etcd_watch_up",
        kind: SignalKind::Gauge,
        unit: "ratio",
        labels: &[],
        help: "1 while regscope's watch of etcd is live (listed and watching), 0 while connecting, listing, not responding, reconnecting or failed; absent for etcd's db file",
        read: |i, o| {
            use crate::model::ConnState;
            match i.session.etcd.conn() {
                // etcd's own db file: there is no watch to be up or down.
                ConnState::File => {}
                ConnState::Watching => one(o, Some(1.0)),
                _ => one(o, Some(0.0)),
            }
        },
    },
    Signal {
        name: "etcd_members",
        kind: SignalKind::Gauge,
        unit: "members",
        labels: &["state"],
        help: "etcd members by state at the last member poll (Cluster.MemberList, then Maintenance.Status of each): leader, follower, learner, unreachable (no Status answer)",
        read: |i, o| {
            let Some((_, members)) = i.session.etcd.members() else {
                return;
            };
            let mut by: BTreeMap<&str, u64> =
                ["leader", "follower", "learner", "unreachable"].map(|k| (k, 0)).into();
            for m in members {
                let state = match &m.status {
                    None => "unreachable",
                    Some(_) if m.is_learner => "learner",
                    Some(st) if st.leader == m.id => "leader",
                    Some(_) => "follower",
                };
                *by.entry(state).or_default() += 1;
            }
            for (state, n) in by {
                labelled(o, &[state], Some(n as f64));
            }
        },
    },
    Signal {
        name: "other_etcd_cluster_up",
        kind: SignalKind::Gauge,
        unit: "ratio",
        labels: &["resources", "endpoint"],
        help: "1 while the watcher of another etcd cluster (--etcd-servers-overrides) is connected, else 0; endpoint is the member that answered last (empty before any)",
        read: |i, o| {
            for c in i.session.other_clusters.all() {
                let up = if c.up { 1.0 } else { 0.0 };
                labelled(o, &[&c.resources, &c.endpoint], Some(up));
            }
        },
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{KeyValue, Observation, SessionInfo, Stamped};
    use std::time::{Duration, SystemTime};

    #[test]
    fn names_are_unique_and_counters_end_in_total() {
        let mut seen = std::collections::BTreeSet::new();
        for s in SIGNALS {
            assert!(seen.insert(s.name), "{} twice", s.name);
            assert_eq!(
                s.kind == SignalKind::Counter,
                s.name.ends_with("_total"),
                "{}",
                s.name
            );
        }
    }

    #[test]
    fn a_replica_reads_as_its_head_and_writes() {
        let mut s = Session::new(SessionInfo::default());
        let at = |n| SystemTime::UNIX_EPOCH + Duration::from_secs(1_000 + n);
        let kv = |rev| KeyValue::joined(b"/registry/configmaps/default/a", 2, rev, 1, 0, b"x");
        for (n, obs) in [
            Observation::ListBegin { revision: 2 },
            Observation::ListPage { kvs: vec![kv(2)] },
            Observation::ListDone {
                revision: 2,
                compacted: None,
            },
            Observation::Events {
                revision: 3,
                events: vec![crate::model::WatchEvent {
                    kind: crate::model::EventKind::Put,
                    kv: kv(3),
                    prev_kv: None,
                }],
            },
        ]
        .into_iter()
        .enumerate()
        {
            s.apply(&Stamped {
                at: at(n as u64),
                obs,
            });
        }
        let r = read(&s);
        assert_eq!(r.scalar("etcd_head_revision"), Some(3.0));
        // Nothing compacted yet: no window, never a 0 it does not know.
        assert_eq!(r.scalar("compaction_window_revisions"), None);
        let puts: Vec<_> = r
            .get("writes_total")
            .iter()
            .filter(|x| x.labels == ["configmaps", "put"])
            .map(|x| x.value)
            .collect();
        assert_eq!(puts, vec![1.0]);
        assert_eq!(r.get("keys")[0].labels, vec!["configmaps".to_string()]);
    }

    #[test]
    fn members_by_state_and_other_clusters_up_or_down() {
        use crate::model::{EtcdStatus, MemberStatus, OtherClusterObs, OtherClusterWhat};
        let mut s = Session::new(SessionInfo::default());
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let member = |id, learner, status: Option<u64>| MemberStatus {
            id,
            name: format!("m{id}"),
            endpoint: format!("http://127.0.0.1:{id}"),
            is_learner: learner,
            status: status.map(|leader| EtcdStatus {
                member_id: id,
                leader,
                ..Default::default()
            }),
            error: None,
        };
        let events = |what| {
            Observation::OtherCluster(OtherClusterObs {
                resources: "/events".into(),
                what,
            })
        };
        for obs in [
            Observation::Members(vec![
                member(1, false, Some(1)),
                member(2, false, Some(1)),
                member(3, false, None),
                member(4, true, Some(1)),
            ]),
            events(OtherClusterWhat::Up {
                endpoint: "https://10.0.0.2:2379".into(),
                version: "3.5.16".into(),
                cluster_id: 7,
                revision: 10,
                db_size: 1,
                keys: 1,
            }),
            events(OtherClusterWhat::Down {
                error: "connection refused".into(),
            }),
        ] {
            s.apply(&Stamped { at, obs });
        }
        let r = read(&s);
        let by: Vec<(String, f64)> = r
            .get("etcd_members")
            .iter()
            .map(|x| (x.labels[0].clone(), x.value))
            .collect();
        let want = [
            ("follower", 1.0),
            ("leader", 1.0),
            ("learner", 1.0),
            ("unreachable", 1.0),
        ];
        assert_eq!(by, want.map(|(k, v)| (k.to_string(), v)));
        let other = r.get("other_etcd_cluster_up");
        assert_eq!(other.len(), 1);
        assert_eq!(other[0].labels, ["/events", "https://10.0.0.2:2379"]);
        assert_eq!(other[0].value, 0.0);
        // Before the first poll of members: no count, never a 0 it does not know.
        assert!(read(&Session::new(SessionInfo::default()))
            .get("etcd_members")
            .is_empty());
    }
}
