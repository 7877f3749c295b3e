//! What a report holds: the data `regscope report` collects from one pass over a
//! recording ([`super::collect`]), rendered as HTML, Markdown with SVG charts, or JSON
//! (this structure serialised as it is). Every number here comes from the derived-signal
//! table ([`crate::derive::signals`]), the replica, the markers or the recording's
//! header: the renderers compute nothing of their own.
//!
//! Times are `SystemTime` (serialised as RFC 3339 UTC); revisions are etcd revisions;
//! sizes in bytes; rates per second over one sampling interval.

use std::time::SystemTime;

use serde::Serialize;

use crate::model::humantime_serde_compat;
use crate::model::Revision;

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// `regscope VERSION`.
    pub generated_by: String,
    pub source: Source,
    pub cluster: Cluster,
    pub span: Span,
    /// Every marker of the span in time order: exactly what `replay --check` lists
    /// between `--from` and `--to`.
    pub markers: Vec<Marker>,
    /// The sampling instants every chart shares, as unix seconds (rounded down) for
    /// drawing. A chart's series hold one value per interval ending at each of these (the
    /// first instant starts the span and rate series have no value there).
    pub times: Vec<i64>,
    /// The same instants exactly (RFC 3339 with milliseconds): the span's start, whole
    /// seconds, the span's end. The state sampled at each is what `snapshot --json --from
    /// FILE --at` that text shows.
    #[serde(serialize_with = "times_rfc3339")]
    pub sampled_at: Vec<SystemTime>,
    /// Every unlabelled derived signal at each of [`Report::times`], as sampled (etcd's
    /// head and compacted revision, the compaction window, db sizes…): the raw figures the
    /// charts are drawn from, each equal to `snapshot --json --from FILE --at T`'s
    /// `signals` at that instant.
    pub figures: std::collections::BTreeMap<&'static str, Vec<Option<f64>>>,
    pub charts: Vec<Chart>,
    pub stands_out: StandsOut,
    /// The replica at `--from` and at `--to` compared.
    pub changes: Changes,
}

fn times_rfc3339<S: serde::Serializer>(v: &[SystemTime], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(
        v.iter()
            .map(|t| humantime::format_rfc3339_millis(*t).to_string()),
    )
}

/// The recording the report was made from.
#[derive(Clone, Debug, Serialize)]
pub struct Source {
    /// The files read (one, or a `--keep-last` set oldest first).
    pub files: Vec<String>,
    /// Secret values were redacted when recorded (false only with `--show-secrets`).
    pub secrets_redacted: bool,
    /// Sampling instants whose state misses observations (a damaged stretch of the file
    /// before the next checkpoint restored it): their values are left out of every chart
    /// and table, never drawn from the partial state.
    pub lost_instants: usize,
    /// One line per damaged part of the file (`replay --check`'s damage lines); empty
    /// when whole.
    pub damage: Vec<String>,
    /// What `replay --check` notes about the file besides damage (a bookmark line beside
    /// the recording that could not be read, …).
    pub notes: Vec<String>,
}

/// What the session knew about the cluster (at `--to`, with what changed during the span
/// in [`Report::markers`]).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Cluster {
    /// The session's title as the console showed it.
    pub title: String,
    /// etcd endpoints given or discovered, in order.
    pub endpoints: Vec<String>,
    /// The watched prefix (kube-apiserver's `--etcd-prefix`).
    pub prefix: String,
    /// The member read from (endpoint), when known.
    pub server: Option<String>,
    /// etcd's cluster id as hex text, when known.
    pub cluster_id: Option<String>,
    /// Every etcd cluster id seen during the span, in order (more than one: replaced).
    pub replacements: Vec<String>,
    pub members: Vec<Member>,
    /// etcd's version from its Status call or its metrics.
    pub etcd_version: Option<String>,
    /// Kubernetes' version from the apiserver's metrics (`kubernetes_build_info`).
    pub kubernetes_version: Option<String>,
    /// The apiserver's storage flags as `(flag, value)` and the manifest they came from.
    pub apiserver_flags: Vec<(String, String)>,
    pub apiserver_flags_file: Option<String>,
    /// kube-apiserver's other etcd clusters (`--etcd-servers-overrides`).
    pub other_clusters: Vec<OtherCluster>,
    /// etcd's quota when known (bytes).
    pub quota_bytes: Option<f64>,
}

/// One etcd member as last polled.
#[derive(Clone, Debug, Serialize)]
pub struct Member {
    pub name: String,
    pub endpoint: String,
    pub version: Option<String>,
    pub leader: bool,
    pub answering: bool,
}

/// One of kube-apiserver's other etcd clusters.
#[derive(Clone, Debug, Serialize)]
pub struct OtherCluster {
    /// The resources it stores (`/events`).
    pub resources: String,
    pub endpoint: String,
    pub version: Option<String>,
    pub up: bool,
}

/// The span reported.
#[derive(Clone, Debug, Serialize)]
pub struct Span {
    #[serde(with = "humantime_serde_compat")]
    pub from: SystemTime,
    #[serde(with = "humantime_serde_compat")]
    pub to: SystemTime,
    /// The whole recording's span (the report may cover part of it).
    #[serde(with = "humantime_serde_compat")]
    pub recording_start: SystemTime,
    #[serde(with = "humantime_serde_compat")]
    pub recording_end: SystemTime,
    /// The recorder's UTC offset in seconds, when the recording says it.
    pub recorder_utc_offset_seconds: Option<i64>,
    /// The revision at `from` and at `to`.
    pub from_revision: Revision,
    pub to_revision: Revision,
    /// Seconds between two sampling instants.
    pub interval_seconds: i64,
}

/// One marker.
#[derive(Clone, Debug, Serialize)]
pub struct Marker {
    #[serde(with = "humantime_serde_compat")]
    pub at: SystemTime,
    pub revision: Revision,
    /// `compaction`, `gap`, `gone`, `reset`, … (`crate::record::MarkerKind::name`).
    pub kind: &'static str,
    pub label: String,
}

/// One chart: series over [`Report::times`] on one y axis.
#[derive(Clone, Debug, Serialize)]
pub struct Chart {
    /// Stable id, used in file names (`report-<id>.svg`) and anchors.
    pub id: &'static str,
    pub title: String,
    /// The y axis' label with its unit, e.g. "revisions per second".
    pub y_label: String,
    /// The unit of every value: "revisions/s", "bytes/s", "seconds", "revisions", "bytes",
    /// "objects", "requests/s", "watchers".
    pub unit: &'static str,
    /// The derived signals the series come from (names in the signal table).
    pub signals: Vec<&'static str>,
    pub series: Vec<Series>,
    /// What the chart cannot show (no scrape of the apiserver, a metric this version does
    /// not expose); empty when the data is whole.
    pub note: Option<String>,
}

/// One line of a chart.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    pub name: String,
    /// One value per [`Report::times`] entry; `None` where nothing was known.
    pub values: Vec<Option<f64>>,
}

/// The few facts a postmortem reader wants first.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StandsOut {
    /// What broke or crossed a line, in time order (markers of the timeline whose kind's
    /// severity is a warning or worse: lost connections, gaps, resets, damage, alarms,
    /// failovers, thresholds, failed scrapes…; 410s are in `gone_and_relists`), at most
    /// [`MAX_INCIDENTS`].
    pub incidents: Vec<Marker>,
    pub largest_burst: Option<Burst>,
    /// The largest informer lag in revisions.
    pub worst_lag: Option<WorstLag>,
    /// The lag that came closest to the compaction window, when not the same as
    /// `worst_lag` (a smaller lag against a narrower window).
    pub closest_to_window: Option<WorstLag>,
    /// Every 410 Gone and every relist, with its resource.
    pub gone_and_relists: Vec<ResourceEvent>,
    pub slowest_etcd: Option<Slowest>,
    pub db_growth: Option<DbGrowth>,
    /// The keys with the most writes during the span, most first.
    pub most_written: Vec<KeyWrites>,
    /// The counts in `most_written` are exact (false: at least these many, counted with
    /// a bounded table that had to drop rarer keys).
    pub most_written_exact: bool,
}

/// Most incidents listed in what stands out (the timeline has them all).
pub const MAX_INCIDENTS: usize = 20;

/// The interval with the most writes to one resource.
#[derive(Clone, Debug, Serialize)]
pub struct Burst {
    #[serde(with = "humantime_serde_compat")]
    pub at: SystemTime,
    pub resource: String,
    /// Writes per second over the interval ending at `at`.
    pub writes_per_second: f64,
    /// The resource's median over the intervals with writes, for scale.
    pub median_writes_per_second: Option<f64>,
    /// The writer with the most of them (managedFields manager and operation), or a name
    /// in parentheses when unattributed.
    pub writer: Option<String>,
}

/// One informer's lag at one instant, against the compaction window then.
#[derive(Clone, Debug, Serialize)]
pub struct WorstLag {
    #[serde(with = "humantime_serde_compat")]
    pub at: SystemTime,
    pub resource: String,
    pub lag_revisions: i64,
    pub lag_seconds: Option<f64>,
    /// The compaction window then; `None` before the first compaction (the window was all
    /// of history: a 410 could then only come from the watch cache's ring).
    pub window_revisions: Option<i64>,
    /// lag ÷ window (1 means a resume would get 410 Gone), when the window is known.
    pub fraction_of_window: Option<f64>,
}

/// A 410 Gone or a relist of one resource's informer.
#[derive(Clone, Debug, Serialize)]
pub struct ResourceEvent {
    #[serde(with = "humantime_serde_compat")]
    pub at: SystemTime,
    /// `gone` or `relist`.
    pub what: &'static str,
    pub resource: String,
}

/// The worst etcd request p99 seen.
#[derive(Clone, Debug, Serialize)]
pub struct Slowest {
    #[serde(with = "humantime_serde_compat")]
    pub at: SystemTime,
    pub operation: String,
    pub resource: String,
    pub p99_seconds: f64,
    /// The p99 is a lower bound (the rank fell in the histogram's open top bucket).
    pub at_least: bool,
}

/// etcd's database size at the start and the end of the span.
#[derive(Clone, Debug, Serialize)]
pub struct DbGrowth {
    pub first_bytes: f64,
    pub last_bytes: f64,
    pub first_in_use_bytes: Option<f64>,
    pub last_in_use_bytes: Option<f64>,
    pub quota_bytes: Option<f64>,
}

/// Writes to one key during the span.
#[derive(Clone, Debug, Serialize)]
pub struct KeyWrites {
    pub key: String,
    pub writes: u64,
}

/// The replica at `from` against the replica at `to`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Changes {
    pub from_revision: Revision,
    pub to_revision: Revision,
    /// The instants the two states were sampled at.
    #[serde(with = "crate::model::humantime_serde_compat::opt")]
    pub from_at: Option<SystemTime>,
    #[serde(with = "crate::model::humantime_serde_compat::opt")]
    pub to_at: Option<SystemTime>,
    /// Per resource, most changed first ([`crate::derive::changes`], the comparison
    /// `regscope diff` makes).
    pub per_resource: Vec<ResourceChanges>,
    /// Every resource together (`resource` left out).
    pub total: ResourceChanges,
    /// The keys changed most in size (created, deleted or changed), largest first.
    pub top_keys: Vec<KeyChange>,
    /// Set when the comparison is incomplete (a replaced cluster between the two
    /// moments: the revisions are of two different etcds).
    pub note: Option<String>,
}

pub use crate::derive::changes::{ChangeKind, KeyChange, ResourceChanges};
