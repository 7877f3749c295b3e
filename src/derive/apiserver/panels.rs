//! The apiserver-side panels' data, derived on read from the metric store, the informer
//! lag tracker and the replica ([`super::build`]). The console draws it and
//! `regscope snapshot --json` prints it; neither computes anything of its own.
//!
//! Units: times in seconds (`f64`), sizes in bytes, revisions as etcd revisions, rates per
//! second over the window between the two newest usable scrapes.

use serde::Serialize;

use crate::metrics::quantile::Quantile;
use crate::model::Revision;
use crate::store::metrics::TargetStatus;

/// A value that a metric may or may not provide. Kubernetes renames and adds metrics
/// between releases, and the apiserver publishes `-1` when it could not read a count:
/// neither may ever be shown as 0.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "state", content = "value", rename_all = "snake_case")]
pub enum Reading<T> {
    /// The metric exists and has a value.
    Value(T),
    /// This server version does not expose the metric (or no scrape has arrived yet).
    #[default]
    NotExposed,
    /// The server exposes the metric but reported its "unavailable" sentinel (`-1`).
    Unavailable,
    /// A rate of an exposed counter that needs a second scrape (shown as "…"): one scrape
    /// holds totals only.
    Pending,
}

impl<T> Reading<T> {
    pub fn value(&self) -> Option<&T> {
        match self {
            Reading::Value(v) => Some(v),
            _ => None,
        }
    }
}

/// One row of the latency panel: one histogram series after label mapping.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencyRow {
    /// `etcd_request_duration_seconds` (the apiserver's storage calls) or
    /// `apiserver_request_duration_seconds` (whole requests).
    pub metric: &'static str,
    /// Storage operation (`get`, `list`, `listWithCount`, `create`, …) or request verb
    /// (`GET`, `LIST`, `WATCH`, …).
    pub operation: String,
    /// API group, `""` for core.
    pub group: String,
    /// Plain resource name, e.g. `pods`.
    pub resource: String,
    /// Requests observed since the apiserver started (the histogram's `_count`).
    pub count: f64,
    /// Quantiles over the window (between the two newest scrapes; over everything since
    /// process start when only one scrape exists).
    pub p50: Quantile,
    pub p90: Quantile,
    pub p99: Quantile,
    /// Requests per second over the window, when two scrapes exist.
    pub rate: Option<f64>,
    /// Errors per second (`etcd_request_errors_total`, or 5xx `apiserver_request_total`)
    /// when the server exposes a matching counter.
    pub error_rate: Option<f64>,
    /// p99 per scrape interval, oldest first, in seconds (AtLeast values as their bound;
    /// intervals without requests as `None`), for the sparkline.
    pub p99_history: Vec<Option<f64>>,
}

/// One row of the watch-cache panel.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WatchCacheRow {
    pub group: String,
    pub resource: String,
    /// `watch_cache_capacity`: events the cache holds.
    pub capacity: Reading<f64>,
    /// `watch_cache_capacity_increase_total` / `_decrease_total` (since start).
    pub capacity_increases: Reading<f64>,
    pub capacity_decreases: Reading<f64>,
    /// `apiserver_watch_cache_events_received_total`, per second.
    pub events_received_rate: Reading<f64>,
    /// `apiserver_watch_cache_events_dispatched_total` (bookmarks included), per second.
    pub events_dispatched_rate: Reading<f64>,
    /// `apiserver_terminated_watchers_total` (watchers closed as unresponsive), since start.
    pub terminated_watchers: Reading<f64>,
    /// `apiserver_watch_cache_initializations_total` (the cache relisted from etcd).
    pub initializations: Reading<f64>,
    /// The resource's write rate seen in the replica (events per second), if known.
    pub replica_event_rate: Option<f64>,
    /// Events held ÷ event rate (held: the capacity, or the events received while fewer):
    /// how many seconds back a reconnecting watcher can resume from the cache. `None` when the rate is 0 or unknown (then the span is unbounded
    /// by traffic and only capacity limits it).
    pub history_span_seconds: Option<f64>,
    /// LIST requests for this resource since the apiserver started
    /// (`apiserver_request_total{verb="LIST"}`, summed over codes and scopes; 0 when the
    /// family has no LIST series for it yet).
    pub list_requests_total: Reading<f64>,
    /// Watch-lists for this resource since the apiserver started: WATCH requests with
    /// `sendInitialEvents=true`, the way client-go's informers list since WatchListClient
    /// became the default in 1.35 (`apiserver_watch_list_duration_seconds`' count,
    /// Kubernetes 1.29+; not exposed before).
    pub watch_lists_total: Reading<f64>,
    /// The same two per second over the window.
    pub list_requests_rate: Reading<f64>,
    pub watch_lists_rate: Reading<f64>,
    /// Relists per minute: LIST requests plus watch-lists (only the LIST requests before
    /// 1.29, where watch-lists are not exposed); `None` until the LIST rate is known.
    pub lists_per_minute: Option<f64>,
    /// The ring has received at least `capacity` events since the cache was initialised,
    /// so it evicts its oldest (`events_received_total` ≥ capacity); until then it holds
    /// every event since its list and a resume from after that list always succeeds.
    /// `None` when the apiserver does not expose what it received.
    pub wrapped: Option<bool>,
}

/// How close one resource is to 410 Gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Not enough data yet (the informer has reported no resourceVersion): never shown as
    /// "ok".
    Measuring,
    Ok,
    /// Lag above half the compaction window, or events behind above half the watch
    /// cache's ring, or 410s already seen.
    Warn,
    /// Lag at or beyond the compaction window, or at least as many events behind as the
    /// watch cache's ring holds: a resume gets 410 Gone (see `risk.rs` for the rule).
    Danger,
}

/// One row of the compaction-window-vs-lag panel.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WindowRow {
    pub group: String,
    pub resource: String,
    /// head − `apiserver_watch_cache_resource_version` for this resource, in revisions
    /// (exposed from Kubernetes 1.31; from 1.36 the gauge holds the resourceVersion's 15
    /// least significant digits, compared with the head's by [`super::lag_from_truncated`]).
    pub watch_cache_lag_revisions: Reading<i64>,
    /// Lag of regscope's own informer for this resource: etcd head when an event arrived −
    /// its resourceVersion. `None` when no informer watches this resource.
    pub informer_lag_revisions: Option<i64>,
    pub informer_lag_seconds: Option<f64>,
    /// Events of this resource after the informer's resourceVersion, counted in the
    /// replica's event log (`None` when the log does not reach back, or a gap hides some):
    /// what the watch cache must still hold for a resume to succeed.
    pub events_behind: Option<u64>,
    /// 410 Gone answers this informer received.
    pub gone_410: u64,
    /// Relists after the first list.
    pub relists: u64,
    /// Informer state, one line ("watching", "relisting after 410", the last error).
    pub informer_state: Option<String>,
    pub risk: Risk,
    /// Why the risk is not Ok, one line, naming the cause: etcd compaction (the lag reaches
    /// the compaction window) or the watch cache (the lag in seconds exceeds the cache's
    /// history span while etcd still holds the revisions), or 410s already seen.
    pub risk_reason: Option<String>,
}

/// The compaction window panel.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CompactionWindow {
    /// etcd head revision (replica, else etcd's `etcd_debugging_mvcc_current_revision`).
    pub head: Option<Revision>,
    /// etcd's compacted revision; `None` before the first compaction (etcd reports -1).
    pub compact_revision: Option<Revision>,
    /// head − compacted revision; `None` before the first compaction (the window is then
    /// all of history, not a huge number).
    pub window_revisions: Option<i64>,
    /// The same window in seconds through the replica's revision→time map, when the
    /// compacted revision is inside what the replica saw.
    pub window_seconds: Option<f64>,
    /// regscope's own etcd watch lag in revisions (etcd head per metrics − replica head),
    /// when both are known.
    pub regscope_lag_revisions: Option<i64>,
    /// Per resource, worst risk first.
    pub rows: Vec<WindowRow>,
}

/// etcd's health panel. The file size, the part of it in use and what a defrag would give
/// back are kept apart, because they are easy to confuse, most of all right after a defrag.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EtcdHealth {
    /// `etcd_mvcc_db_total_size_in_bytes`: the physical file size (what the space alarm
    /// compares with the quota).
    pub db_size_bytes: Option<f64>,
    /// `etcd_mvcc_db_total_size_in_use_in_bytes` (etcd 3.4+).
    pub db_in_use_bytes: Option<f64>,
    /// `etcd_server_quota_backend_bytes`.
    pub quota_bytes: Option<f64>,
    /// size ÷ quota × 100; `None` when either is missing or the quota is 0.
    pub quota_used_percent: Option<f64>,
    /// (size − in use) ÷ size × 100; `None` when size is 0 or missing ("n/a").
    pub not_in_use_percent: Option<f64>,
    /// size − in use: what a defrag would give back.
    pub reclaimable_bytes: Option<f64>,
    /// True when not-in-use is 0 %: normal right after a defrag, not a problem.
    pub just_defragmented: bool,
    pub has_leader: Option<bool>,
    /// `etcd_server_leader_changes_seen_total`.
    pub leader_changes: Option<f64>,
    /// `etcd_debugging_mvcc_slow_watcher_total`.
    pub slow_watchers: Option<f64>,
    /// `etcd_server_proposals_failed_total`.
    pub proposals_failed: Option<f64>,
    /// `etcd_debugging_mvcc_current_revision`.
    pub revision: Option<Revision>,
    /// `etcd_debugging_mvcc_compact_revision`; `None` when -1 (never compacted).
    pub compact_revision: Option<Revision>,
    /// The apiserver's view of the db size (`apiserver_storage_size_bytes` and its older
    /// names), for comparison.
    pub apiserver_db_size_bytes: Reading<f64>,
}

/// Object counts per resource: the apiserver's metric next to the replica's keys, because
/// `apiserver_storage_objects` can be `-1` or simply wrong.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ObjectsRow {
    pub group: String,
    pub resource: String,
    /// `apiserver_resource_objects` / `apiserver_storage_objects` / `etcd_object_counts`.
    pub apiserver: Reading<i64>,
    /// Live keys of this resource in the replica, when a replica exists.
    pub replica: Option<u64>,
    /// Why the two disagree, when they do (e.g. "equals the total key count (82): the
    /// 1.34-rc regression"); `None` when they agree or cannot be compared.
    pub flag: Option<String>,
}

/// One priority level of API Priority and Fairness.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ApfRow {
    pub priority_level: String,
    /// `apiserver_flowcontrol_current_inqueue_requests` (summed over flow schemas).
    pub in_queue: Option<f64>,
    /// `apiserver_flowcontrol_current_executing_requests`.
    pub executing: Option<f64>,
    /// `apiserver_flowcontrol_rejected_requests_total`, since start.
    pub rejected_total: Option<f64>,
    /// The same per second over the window.
    pub rejected_rate: Option<f64>,
    /// `apiserver_flowcontrol_nominal_limit_seats`, when exposed.
    pub nominal_seats: Option<f64>,
}

/// Everything the apiserver-side panels show, at one moment.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ApiserverPanels {
    pub apiserver: TargetStatus,
    pub etcd: TargetStatus,
    /// Worst p99 first.
    pub latency: Vec<LatencyRow>,
    /// Sorted by group, resource.
    pub watch_cache: Vec<WatchCacheRow>,
    pub window: CompactionWindow,
    pub etcd_health: Option<EtcdHealth>,
    /// Sorted by group, resource; disagreements first.
    pub objects: Vec<ObjectsRow>,
    /// `None` when the server exposes no APF metrics.
    pub apf: Option<Vec<ApfRow>>,
    /// Concepts the apiserver's version does not expose, by concept id (e.g.
    /// `watch_cache_resource_version` before 1.31), for "not exposed by this version"
    /// (worded by [`super::not_exposed_text`]).
    pub not_exposed: Vec<String>,
    /// The apiserver's version from its newest scrape (`kubernetes_build_info`'s
    /// `git_version`, `v1.37.0`), when it states one.
    pub apiserver_version: Option<String>,
    /// kube-controller-manager's and kube-scheduler's informers and workqueues.
    pub controllers: super::ControllersPanel,
}
