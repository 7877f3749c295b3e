//! The controllers' own informers and workqueues, from kube-controller-manager's and
//! kube-scheduler's `/metrics`: per informer, the resourceVersion of its store
//! (`informer_store_resource_version`, Kubernetes 1.36+, alpha; client-go `tools/cache`
//! store metrics, kubernetes#137419) against etcd's head and the compaction window; per
//! controller queue, its depth, adds and retries (`workqueue_*`, every release).
//!
//! An informer's store only moves when an object of its resource changes, so head − its
//! resourceVersion grows on a quiet resource without the informer being late. What tells
//! lateness is the events of its resource after that resourceVersion, counted in the
//! replica's event log: none means it has applied everything of its resource, whatever
//! the revision distance. The verdict uses that.

use serde::Serialize;

use super::panels::{Reading, Risk};
use super::{
    events_behind, keys_changed_after, lag_from_truncated, rate_reading, resource_ids, scalar,
};
use crate::metrics::concepts::{minor_version, Concept, Mapped, Table};
use crate::model::{Revision, ScrapeTarget};
use crate::store::metrics::{MetricStore, TargetStatus};
use crate::store::Replica;

/// The Kubernetes release whose components first expose informer metrics.
pub const INFORMER_METRICS_SINCE: (u32, u32) = (1, 36);

/// Keys of one resource looked at, at most, to count what an informer has not applied when
/// the event log does not reach back to its resourceVersion (a quiet resource last written
/// before regscope started watching).
const KEYS_LOOKED_AT: usize = 20_000;

/// Where [`ControllerInformerRow::events_behind`] was counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BehindFrom {
    /// The replica's event log: every event of the resource after the resourceVersion.
    #[default]
    EventLog,
    /// The replica's live keys written after the resourceVersion: a lower bound (deletes
    /// are not seen), used when the log does not reach back that far. `keys_lower_bound`
    /// in `snapshot --json`.
    #[serde(rename = "keys_lower_bound")]
    Keys,
}

/// Whether a component's scrape carries informer metrics, and if not, why.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum InformerMetrics {
    /// `informer_store_resource_version` is in its newest scrape.
    Exposed,
    /// Its version predates them (client-go informer metrics came in Kubernetes 1.36).
    NotInVersion { version: String },
    /// Its version should have them and the scrape has none (informers without a name
    /// publish none: client-go `cache.InformerName`).
    Absent,
    /// No scrape yet.
    #[default]
    Unknown,
}

/// One scraped component: its scrape health and whether it exposes informer metrics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ComponentRow {
    /// `kube-controller-manager` or `kube-scheduler`.
    pub component: &'static str,
    pub status: TargetStatus,
    pub informer_metrics: InformerMetrics,
}

/// One informer of a controller component.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ControllerInformerRow {
    pub component: &'static str,
    /// The informer's name (`name` label).
    pub name: String,
    pub group: String,
    pub resource: String,
    /// `informer_store_resource_version`: the 15 least significant digits of its store's
    /// resourceVersion.
    pub resource_version: f64,
    /// Head − that resourceVersion, in revisions (compared modulo 10^15).
    pub behind_head_revisions: Option<i64>,
    /// Events of its resource after that resourceVersion, from the replica's event log,
    /// else its live keys written since ([`BehindFrom`]); `None` when neither can tell.
    pub events_behind: Option<u64>,
    /// Where `events_behind` was counted.
    pub events_behind_from: BehindFrom,
    /// The lag the verdict uses: 0 when no event of its resource is after its
    /// resourceVersion, else [`ControllerInformerRow::behind_head_revisions`]; `None` when
    /// the event log cannot count those events (a quiet resource whose last change came
    /// before regscope started watching looks exactly like a late informer), or when they
    /// were counted from the keys and none was found (deletes are not seen that way).
    pub lag_revisions: Option<i64>,
    /// How long the oldest event of its resource it has not applied had waited at the
    /// component's scrape, in seconds (its time in the replica's event log); 0 when it has
    /// applied everything; `None` when the event log cannot tell.
    pub lag_seconds: Option<f64>,
    /// `informer_queued_items`: deltas waiting in its FIFO.
    pub queued_items: Option<f64>,
    /// Lag ÷ compaction window (1 = at the window's edge), when both are known.
    pub window_fraction: Option<f64>,
    pub risk: Risk,
    pub risk_reason: Option<String>,
}

/// One workqueue of a controller component.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkqueueRow {
    pub component: &'static str,
    /// The queue's name (`name` label: `deployment`, `garbage_collector_graph_changes`).
    pub name: String,
    /// `workqueue_depth`.
    pub depth: Option<f64>,
    /// `workqueue_adds_total` per second between the two newest scrapes.
    pub adds_per_second: Reading<f64>,
    /// `workqueue_retries_total` per second between the two newest scrapes.
    pub retries_per_second: Reading<f64>,
    pub adds_total: Option<f64>,
    pub retries_total: Option<f64>,
    /// `workqueue_longest_running_processor_seconds`.
    pub longest_running_seconds: Option<f64>,
}

/// The controllers section.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ControllersPanel {
    /// The components configured or scraped, controller manager first.
    pub components: Vec<ComponentRow>,
    /// Worst risk first, then largest lag.
    pub informers: Vec<ControllerInformerRow>,
    /// Deepest first, then most retries.
    pub workqueues: Vec<WorkqueueRow>,
}

impl ControllersPanel {
    /// Whether any component is configured (a URL or files).
    pub fn configured(&self) -> bool {
        self.components.iter().any(|c| c.status.configured)
    }
}

fn informer_metrics(t: &Table, m: Option<&Mapped>) -> InformerMetrics {
    let Some(m) = m else {
        return InformerMetrics::Unknown;
    };
    if m.exposes(t, t.idx(Concept::InformerStoreResourceVersion)) {
        return InformerMetrics::Exposed;
    }
    match m.version.as_deref() {
        Some(v) if minor_version(v).is_some_and(|mv| mv < INFORMER_METRICS_SINCE) => {
            InformerMetrics::NotInVersion {
                version: v.to_string(),
            }
        }
        _ => InformerMetrics::Absent,
    }
}

/// Builds the section from the two components' series, etcd's `head` and compaction
/// `window` (revisions), and the replica (for the events behind).
pub(super) fn build(
    t: &Table,
    store: &MetricStore,
    head: Option<Revision>,
    window: Option<i64>,
    replica: Option<&Replica>,
) -> ControllersPanel {
    let mut out = ControllersPanel::default();
    let rv_ci = t.idx(Concept::InformerStoreResourceVersion);
    let queued_ci = t.idx(Concept::InformerQueuedItems);
    let depth_ci = t.idx(Concept::WorkqueueDepth);
    let adds_ci = t.idx(Concept::WorkqueueAdds);
    let retries_ci = t.idx(Concept::WorkqueueRetries);
    let longest_ci = t.idx(Concept::WorkqueueLongestRunning);
    for target in ScrapeTarget::CONTROLLERS {
        let ts = store.target(target);
        if !ts.status.configured {
            continue;
        }
        let component = target.component();
        let m = ts.latest();
        out.components.push(ComponentRow {
            component,
            status: ts.status.clone(),
            informer_metrics: informer_metrics(t, m),
        });
        let Some(m) = m else { continue };
        for (k, v) in &m.series {
            if k.concept == rv_ci {
                let Some(rv) = scalar(v).filter(|rv| *rv >= 0.0) else {
                    continue;
                };
                // Measured as of the component's scrape: the head then (the newest event
                // the replica had applied by that time), and the events up to then.
                let head_then = match (replica, ts.status.last_good) {
                    (Some(r), Some(at)) => head_at(r, at).or(head),
                    _ => head,
                };
                let behind_head = head_then.and_then(|h| lag_from_truncated(h, rv));
                let ids =
                    replica.map_or_else(Vec::new, |r| resource_ids(t, r, &k.group, &k.resource));
                let mut behind_from = BehindFrom::EventLog;
                let events = match (replica, head_then, behind_head, ts.status.last_good) {
                    (Some(r), Some(h), Some(lag), Some(at)) => {
                        events_behind(r, &ids, h - lag, Some(at)).or_else(|| {
                            behind_from = BehindFrom::Keys;
                            keys_changed_after(r, &ids, h - lag, KEYS_LOOKED_AT)
                        })
                    }
                    _ => None,
                };
                // Without the events, head − rv cannot tell a late informer from one on a
                // quiet resource: no lag is claimed.
                let lag = match (events, behind_from) {
                    // Counted from the keys, none written since: deletes cannot be seen
                    // that way, so "caught up" is not claimed.
                    (Some(0), BehindFrom::Keys) => None,
                    (Some(0), BehindFrom::EventLog) => Some(0),
                    (Some(_), _) => behind_head,
                    (None, _) => None,
                };
                let lag_seconds = match (lag, behind_from, replica, ts.status.last_good) {
                    (Some(0), _, _, _) => Some(0.0),
                    (Some(l), BehindFrom::EventLog, Some(r), Some(at)) => {
                        let rv = head_then.unwrap_or_default() - l;
                        oldest_unapplied(r, &ids, rv, at)
                            .and_then(|first| at.duration_since(first).ok())
                            .map(|d| d.as_secs_f64())
                    }
                    _ => None,
                };
                let mut queued_key = k.clone();
                queued_key.concept = queued_ci;
                let window_fraction = match (lag, window) {
                    (Some(l), Some(w)) if w > 0 => Some((l as f64 / w as f64).min(1.0)),
                    _ => None,
                };
                let (risk, risk_reason) = verdict(lag, window, events);
                out.informers.push(ControllerInformerRow {
                    component,
                    name: k.op.to_string(),
                    group: k.group.to_string(),
                    resource: k.resource.to_string(),
                    resource_version: rv,
                    behind_head_revisions: behind_head,
                    events_behind: events,
                    events_behind_from: behind_from,
                    lag_revisions: lag,
                    lag_seconds,
                    queued_items: m.get(&queued_key).and_then(scalar),
                    window_fraction,
                    risk,
                    risk_reason,
                });
            } else if k.concept == depth_ci {
                let with = |ci| {
                    let mut kk = k.clone();
                    kk.concept = ci;
                    kk
                };
                out.workqueues.push(WorkqueueRow {
                    component,
                    name: k.op.to_string(),
                    depth: scalar(v),
                    adds_per_second: rate_reading(t, ts, m, &with(adds_ci)),
                    retries_per_second: rate_reading(t, ts, m, &with(retries_ci)),
                    adds_total: m.get(&with(adds_ci)).and_then(scalar),
                    retries_total: m.get(&with(retries_ci)).and_then(scalar),
                    longest_running_seconds: m.get(&with(longest_ci)).and_then(scalar),
                });
            }
        }
    }
    out.informers.sort_by(|a, b| {
        b.risk
            .cmp(&a.risk)
            .then_with(|| {
                b.lag_revisions
                    .unwrap_or(-1)
                    .cmp(&a.lag_revisions.unwrap_or(-1))
            })
            .then_with(|| {
                (a.component, &a.name, &a.resource).cmp(&(b.component, &b.name, &b.resource))
            })
    });
    out.workqueues.sort_by(|a, b| {
        let key = |r: &WorkqueueRow| {
            (
                r.depth.unwrap_or(0.0),
                r.retries_per_second.value().copied().unwrap_or(0.0),
            )
        };
        key(b)
            .partial_cmp(&key(a))
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| (a.component, &a.name).cmp(&(b.component, &b.name)))
    });
    out
}

/// The replica's head as of `at`: the revision of the newest event applied by then
/// (`None` when the event log holds nothing that old).
fn head_at(r: &Replica, at: std::time::SystemTime) -> Option<Revision> {
    r.events()
        .iter()
        .rev()
        .find(|e| e.at <= at)
        .map(|e| e.revision)
}

/// When the replica applied the oldest event of the resource ids `ids` after revision
/// `rv` that it had applied by `until` (`None` when there is none in the log).
fn oldest_unapplied(
    r: &Replica,
    ids: &[u32],
    rv: Revision,
    until: std::time::SystemTime,
) -> Option<std::time::SystemTime> {
    r.events()
        .iter()
        .rev()
        .take_while(|e| e.revision > rv)
        .filter(|e| e.at <= until && ids.contains(&e.resource))
        .last()
        .map(|e| e.at)
}

/// The informer's risk against the compaction window: events of its resource it has not
/// applied whose revisions etcd may compact away (then a restart of its watch from there
/// gets 410 Gone and a relist).
fn verdict(lag: Option<i64>, window: Option<i64>, events: Option<u64>) -> (Risk, Option<String>) {
    let Some(lag) = lag else {
        return (Risk::Measuring, None);
    };
    // Nothing compacted yet: every revision is still there to resume from.
    let Some(win) = window.filter(|w| *w > 0) else {
        return (Risk::Ok, None);
    };
    let behind = match events {
        Some(n) => format!(
            "{n} event{} of its resource not applied",
            if n == 1 { "" } else { "s" }
        ),
        None => "the event log does not reach back to its resourceVersion".to_string(),
    };
    if lag >= win {
        (
            Risk::Danger,
            Some(format!(
                "{lag} revs behind, past the {win}-rev compaction window ({behind}): a watch restart from there gets 410 Gone and relists"
            )),
        )
    } else if lag * 2 >= win {
        (
            Risk::Warn,
            Some(format!(
                "{lag} revs behind, over half the {win}-rev compaction window ({behind})"
            )),
        )
    } else {
        (Risk::Ok, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_resource_versions_compare_modulo_ten_to_the_fifteen() {
        use super::super::lag_from_truncated as lag;
        assert_eq!(lag(900, 888.0), Some(12));
        assert_eq!(lag(900, 900.0), Some(0));
        // Ahead of the head taken (the component was scraped after it): caught up.
        assert_eq!(lag(900, 905.0), Some(0));
        // A head past 10^15: the gauge holds its 15 low digits.
        assert_eq!(lag(1_000_000_000_000_123, 120.0), Some(3));
        // The low digits wrapped between the store's version and the head.
        assert_eq!(lag(2_000_000_000_000_005, 999_999_999_999_990.0), Some(15));
        // Not a revision.
        assert_eq!(lag(900, -1.0), None);
        assert_eq!(lag(900, 1e16), None);
    }

    #[test]
    fn verdicts_follow_the_window() {
        assert_eq!(verdict(None, Some(100), None).0, Risk::Measuring);
        assert_eq!(verdict(Some(10), None, Some(3)).0, Risk::Ok);
        assert_eq!(verdict(Some(10), Some(100), Some(3)).0, Risk::Ok);
        let (r, why) = verdict(Some(60), Some(100), Some(3));
        assert_eq!(r, Risk::Warn);
        assert!(why.unwrap().contains("3 events"));
        let (r, why) = verdict(Some(100), Some(100), None);
        assert_eq!(r, Risk::Danger);
        assert!(why.unwrap().contains("410 Gone"));
    }
}
