//! [`build`] builds the apiserver-side panels' data ([`ApiserverPanels`], its rows in
//! `panels`) from the metric store, the informer lag tracker and the replica, on read. Live, paused and replayed sessions run this same
//! code over the same stored scrapes.

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

mod controllers;
mod panels;
mod risk;

pub use controllers::{
    BehindFrom, ComponentRow, ControllerInformerRow, ControllersPanel, InformerMetrics,
    WorkqueueRow, INFORMER_METRICS_SINCE,
};

pub use panels::{
    ApfRow, ApiserverPanels, CompactionWindow, EtcdHealth, LatencyRow, ObjectsRow, Reading, Risk,
    WatchCacheRow, WindowRow,
};
pub use risk::{assess as assess_risk, RiskInputs};

use crate::metrics::concepts::{self, Concept, ConceptIdx, Hist, Mapped, SeriesKey, Table, Value};
use crate::metrics::quantile::{
    counter_increase, histogram_increase, histogram_quantile, Quantile,
};
use crate::model::{Bytes, Revision, ScrapeTarget};
use crate::store::metrics::{MetricStore, TargetSeries};
use crate::store::{InformerLag, Replica, Session};

/// Points of p99 history kept per latency row (the sparkline's width at most).
const HISTORY_POINTS: usize = 60;

/// Derives every panel. `etcd_side` is the session whose replica and etcd cluster to use,
/// `None` when there is no etcd connection (metric files only); the etcd-derived parts are
/// then empty or `None`.
pub fn build(
    store: &MetricStore,
    etcd_side: Option<&Session>,
    informers: &InformerLag,
    now: SystemTime,
) -> ApiserverPanels {
    let t = concepts::table();
    let api = store.target(ScrapeTarget::Apiserver);
    let etcd = store.target(ScrapeTarget::Etcd);
    let mut panels = ApiserverPanels {
        apiserver: api.status.clone(),
        etcd: etcd.status.clone(),
        ..ApiserverPanels::default()
    };
    let replica = etcd_side.map(|s| &s.replica);
    let replica_rates = replica
        .map(|r| replica_rates(t, r, now))
        .unwrap_or_default();
    if let Some(m) = api.latest() {
        panels.latency = latency(t, api);
        panels.watch_cache = watch_cache(t, api, m, &replica_rates);
        panels.apf = apf(t, api, m);
        panels.apiserver_version = m.version.clone();
        panels.not_exposed = t
            .concepts
            .iter()
            .enumerate()
            .filter(|(i, c)| c.target == ScrapeTarget::Apiserver && !m.exposes(t, *i as ConceptIdx))
            .map(|(_, c)| c.id.clone())
            .collect();
    }
    // Counts move while the scrape ages: allow what the resource's write rate explains
    // since the scrape (plus one scrape interval of refresh delay in the apiserver).
    let age = api
        .status
        .last_good
        .and_then(|g| now.duration_since(g).ok())
        .map_or(0.0, |d| d.as_secs_f64());
    panels.objects = objects(t, api.latest(), replica, &replica_rates, age + 5.0);
    panels.etcd_health = etcd_health(t, etcd.latest(), api.latest());
    panels.window = window(
        t,
        api.latest(),
        etcd.latest(),
        etcd_side,
        informers,
        &panels.watch_cache,
    );
    panels.controllers = controllers::build(
        t,
        store,
        panels.window.head,
        panels.window.window_revisions,
        replica,
    );
    panels
}

/// The replica's resource ids (its storage paths) that hold `group`/`resource`.
pub(crate) fn resource_ids(t: &Table, rep: &Replica, group: &str, resource: &str) -> Vec<u32> {
    rep.resources()
        .iter()
        .enumerate()
        .filter(|(_, rs)| {
            let (g, r) = t.storage_path_resource(&rs.resource);
            g == group && r == resource
        })
        .map(|(i, _)| i as u32)
        .collect()
}

/// Events of the resource ids `ids` ([`resource_ids`]) after revision `rv` in the
/// replica's event log (`None` when the log does not reach back or a gap hides some);
/// with `until`, only those the replica had applied by then.
pub(crate) fn events_behind(
    rep: &Replica,
    ids: &[u32],
    rv: Revision,
    until: Option<SystemTime>,
) -> Option<u64> {
    let all = rep.events_after(rv, |id| ids.contains(&id))?;
    let Some(until) = until else {
        return Some(all);
    };
    let later = rep
        .events()
        .iter()
        .rev()
        .take_while(|e| e.at > until && e.revision > rv)
        .filter(|e| ids.contains(&e.resource))
        .count() as u64;
    Some(all.saturating_sub(later))
}

/// Live keys of the resource ids `ids` ([`resource_ids`]) whose newest version was
/// written after revision `rv`: what an informer whose store is at `rv` has not applied,
/// counted from the replica's keys when its event log does not reach back that far. A
/// lower bound (keys deleted since are not seen). `None` past `limit` keys looked at.
pub(crate) fn keys_changed_after(
    rep: &Replica,
    ids: &[u32],
    rv: Revision,
    limit: usize,
) -> Option<u64> {
    let mut changed = 0u64;
    let mut seen = 0usize;
    for &id in ids {
        let mut prefix = rep.prefix().to_vec();
        if !prefix.ends_with(b"/") {
            prefix.push(b'/');
        }
        prefix.extend_from_slice(rep.resource_name(id).as_bytes());
        prefix.push(b'/');
        let mut after: Option<Bytes> = None;
        loop {
            let page = rep.live_keys_after(&prefix, after.as_deref(), 1024);
            if page.is_empty() {
                break;
            }
            seen += page.len();
            if seen > limit {
                return None;
            }
            for k in &page {
                if rep.get_meta(k).is_some_and(|m| m.mod_revision > rv) {
                    changed += 1;
                }
            }
            after = page.last().cloned();
        }
    }
    Some(changed)
}

/// Decimal digits the apiserver keeps of a resourceVersion in its watch cache's gauge.
const TRUNCATED_DIGITS: i64 = 1_000_000_000_000_000;

/// The lag in revisions between etcd's `head` and a resourceVersion gauge that holds only
/// the 15 least significant decimal digits of the resourceVersion:
/// `apiserver_watch_cache_resource_version` from Kubernetes 1.36 (kubernetes#137615,
/// k8s.io/apiserver `pkg/storage/cacher/metrics/metrics.go` `RecordResourceVersion`: the
/// value modulo 10^15, so that a float64 holds it exactly) and client-go's
/// `informer_store_resource_version`. The head is taken modulo 10^15 too; a truncated
/// value above the head's low digits is read as the head having crossed a multiple of
/// 10^15 since (lag = low digits + 10^15 − truncated) when the difference is more than
/// half of 10^15, and as a gauge read a little after etcd's head (lag 0) otherwise. Below
/// 10^15 (every release before 1.36, and every cluster so far) this is head − value.
/// `None` for a value that cannot be such a gauge (negative, fractional or 10^15 and above)
/// or a negative head.
///
/// `lag_from_truncated(1_000_000_000_000_123, 120.0)` is `Some(3)`;
/// `lag_from_truncated(1_000_000_000_000_123, 999_999_999_999_990.0)` is `Some(133)`.
pub fn lag_from_truncated(head: Revision, truncated: f64) -> Option<i64> {
    if head < 0
        || !truncated.is_finite()
        || truncated < 0.0
        || truncated.fract() != 0.0
        || truncated >= TRUNCATED_DIGITS as f64
    {
        return None;
    }
    let low = head % TRUNCATED_DIGITS;
    let t = truncated as i64;
    let lag = low - t;
    Some(if lag >= 0 {
        lag
    } else if head >= TRUNCATED_DIGITS && -lag > TRUNCATED_DIGITS / 2 {
        lag + TRUNCATED_DIGITS
    } else {
        0
    })
}

/// The "not exposed" line for concept `id` on an apiserver of `version` (`None`: unknown),
/// naming the metric, the version, and why: `apiserver_cache_list_total: not exposed by
/// v1.37.0 (removed in 1.37; apiserver_storage_list_total)`, `apiserver_watch_cache_resource_version:
/// not exposed by v1.28.3 (new in 1.31)`. The reasons are the concept table's `since`,
/// `until` and `replacement` ([`concepts::Absence`]).
pub fn not_exposed_text(t: &Table, id: &str, version: Option<&str>) -> String {
    let Some(c) = t.concepts.iter().find(|c| c.id == id) else {
        return format!("{id}: not exposed by this version");
    };
    let by = version.unwrap_or("this version");
    match c.absence(version) {
        concepts::Absence::Removed {
            name,
            until,
            replacement: "",
        } => format!("{name}: not exposed by {by} (removed in {until})"),
        concepts::Absence::Removed {
            name,
            until,
            replacement,
        } => format!("{name}: not exposed by {by} (removed in {until}; {replacement})"),
        concepts::Absence::NotYet { name, since } => {
            format!("{name}: not exposed by {by} (new in {since})")
        }
        concepts::Absence::Absent { name } => format!("{name}: not exposed by {by}"),
    }
}

fn key(ci: ConceptIdx, group: &str, resource: &str, op: &str) -> SeriesKey {
    SeriesKey {
        concept: ci,
        group: group.into(),
        resource: resource.into(),
        op: op.into(),
    }
}

fn scalar(v: &Value) -> Option<f64> {
    match v {
        Value::Scalar(x) => Some(*x),
        Value::Histogram(h) => Some(h.count),
    }
}

/// Per-second rate of a counter series over the two newest scrapes.
fn rate(ts: &TargetSeries, k: &SeriesKey) -> Option<f64> {
    let (prev, (cur, cur_t)) = ts.last_two(k)?;
    let (prev, prev_t) = prev?;
    let dt = cur_t.duration_since(prev_t).ok()?.as_secs_f64();
    if dt <= 0.0 {
        return None;
    }
    Some(counter_increase(scalar(&prev.value)?, scalar(&cur.value)?) / dt)
}

/// A counter's rate as a reading: not exposed, pending (one scrape), or the rate (0 for a
/// lazy counter with no series yet when two scrapes exist).
fn rate_reading(t: &Table, ts: &TargetSeries, m: &Mapped, k: &SeriesKey) -> Reading<f64> {
    if !m.exposes(t, k.concept) {
        return Reading::NotExposed;
    }
    match rate(ts, k) {
        Some(r) => Reading::Value(r),
        None if ts.newest_seq().unwrap_or(0) >= 1 && m.get(k).is_none() => Reading::Value(0.0),
        None => Reading::Pending,
    }
}

/// A counter's total for one series of a family whose other series are printed: 0 when
/// the family is exposed but has no series for this key yet (no such request so far).
fn counter_total(t: &Table, m: &Mapped, k: &SeriesKey) -> Reading<f64> {
    if !m.exposes(t, k.concept) {
        return Reading::NotExposed;
    }
    Reading::Value(m.get(k).and_then(scalar).unwrap_or(0.0))
}

fn total_reading(t: &Table, m: &Mapped, k: &SeriesKey) -> Reading<f64> {
    if !m.exposes(t, k.concept) {
        return Reading::NotExposed;
    }
    match m.get(k).and_then(scalar) {
        Some(v) => Reading::Value(v),
        // Exposed (a lazy counter, or a gauge family present for other resources) but no
        // series for this resource: a counter that never moved is 0, a gauge is absent.
        None if t.concept(k.concept).lazy => Reading::Value(0.0),
        None => Reading::NotExposed,
    }
}

fn quantiles(prev: Option<&Hist>, cur: &Hist) -> (Quantile, Quantile, Quantile) {
    let inc = histogram_increase(prev, cur);
    (
        histogram_quantile(0.5, &cur.bounds, &inc),
        histogram_quantile(0.9, &cur.bounds, &inc),
        histogram_quantile(0.99, &cur.bounds, &inc),
    )
}

fn latency(t: &Table, ts: &TargetSeries) -> Vec<LatencyRow> {
    let mut rows = Vec::new();
    let newest = ts.newest_seq();
    for (id, metric, errors) in [
        (
            Concept::EtcdRequestDuration,
            "etcd_request_duration_seconds",
            Concept::EtcdRequestErrors,
        ),
        (
            Concept::RequestDuration,
            "apiserver_request_duration_seconds",
            Concept::RequestErrors,
        ),
    ] {
        let ci = t.idx(id);
        let eci = t.idx(errors);
        for (k, pts) in ts.series() {
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
            let (p50, p90, p99) = quantiles(prev, cur);
            // Each point carries the p99 of the interval it closed (see store::metrics).
            let start = pts.len().saturating_sub(HISTORY_POINTS);
            let history: Vec<Option<f64>> = pts
                .iter()
                .skip(start.max(1))
                .map(|p| (!p.p99.is_nan()).then_some(f64::from(p.p99)))
                .collect();
            let ek = key(eci, &k.group, &k.resource, &k.op);
            let error_rate = match ts.latest() {
                Some(m) if m.exposes(t, eci) => rate(ts, &ek)
                    .or_else(|| (prev.is_some() && m.get(&ek).is_none()).then_some(0.0)),
                _ => None,
            };
            rows.push(LatencyRow {
                metric,
                operation: k.op.to_string(),
                group: k.group.to_string(),
                // Requests without a resource: /healthz, /readyz, /openapi, discovery.
                resource: if k.resource.is_empty() {
                    "(non-resource URLs)".to_string()
                } else {
                    k.resource.to_string()
                },
                count: cur.count,
                p50,
                p90,
                p99,
                rate: rate(ts, k),
                error_rate,
                p99_history: history,
            });
        }
    }
    rows.sort_by(|a, b| {
        rank(&b.p99)
            .total_cmp(&rank(&a.p99))
            .then_with(|| b.count.total_cmp(&a.count))
            .then_with(|| {
                (a.metric, &a.resource, &a.operation).cmp(&(b.metric, &b.resource, &b.operation))
            })
    });
    rows
}

/// Sort key for "worst first": AtLeast ranks above its bound, NoData last.
fn rank(q: &Quantile) -> f64 {
    match q {
        Quantile::Value(v) => *v,
        Quantile::AtLeast(v) => v * 1.0001 + 1e-9,
        Quantile::NoData => -1.0,
    }
}

/// Events per second (puts + deletes) per `(group, resource)` over the last 10 s.
fn replica_rates(t: &Table, r: &Replica, now: SystemTime) -> BTreeMap<(String, String), f64> {
    let sec = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut out = BTreeMap::new();
    for rs in r.resources() {
        let (p, d) = rs.rates(sec, 10);
        *out.entry(t.storage_path_resource(&rs.resource))
            .or_insert(0.0) += p + d;
    }
    out
}

fn watch_cache(
    t: &Table,
    ts: &TargetSeries,
    m: &Mapped,
    replica_rates: &BTreeMap<(String, String), f64>,
) -> Vec<WatchCacheRow> {
    let cap = t.idx(Concept::WatchCacheCapacity);
    let ids = [
        cap,
        t.idx(Concept::WatchCacheEventsReceived),
        t.idx(Concept::WatchCacheEventsDispatched),
        t.idx(Concept::WatchCacheInitializations),
        t.idx(Concept::TerminatedWatchers),
        t.idx(Concept::WatchCacheResourceVersion),
    ];
    let resources: BTreeSet<(String, String)> = m
        .series
        .keys()
        .filter(|k| ids.contains(&k.concept) && !k.resource.is_empty())
        .map(|k| (k.group.to_string(), k.resource.to_string()))
        .collect();
    resources
        .into_iter()
        .map(|(g, r)| {
            let k = |id: Concept| key(t.idx(id), &g, &r, "");
            let capacity = total_reading(t, m, &k(Concept::WatchCacheCapacity));
            let received = rate_reading(t, ts, m, &k(Concept::WatchCacheEventsReceived));
            let replica_event_rate = replica_rates.get(&(g.clone(), r.clone())).copied();
            // The cache's own intake is the best rate; the replica's write rate stands in
            // before 1.27 (no events_received counter) or before a second scrape.
            let rate = received
                .value()
                .copied()
                .filter(|v| *v > 0.0)
                .or(replica_event_rate.filter(|v| *v > 0.0));
            // The cache holds at most `capacity` events, and no more than it received:
            // until it has wrapped once, its history starts where it was initialised
            // (k8s.io/apiserver pkg/storage/cacher/watch_cache.go: a ring of `capacity`
            // events; older resourceVersions get 410 Gone). `events_received` counts since
            // the apiserver started, so min(capacity, received) ÷ rate is the span held.
            let received_total = total_reading(t, m, &k(Concept::WatchCacheEventsReceived))
                .value()
                .copied();
            let held = capacity
                .value()
                .map(|c| received_total.map_or(*c, |r| c.min(r)));
            // An empty ring holds no history to speak of, and needs none: nothing can be
            // missed from it (an idle resource is not "0 s of history").
            let history_span_seconds = match (held, rate) {
                (Some(c), Some(rate)) if rate > 0.0 && c > 0.0 => Some(c / rate),
                _ => None,
            };
            let wrapped = match (capacity.value(), received_total) {
                (Some(c), Some(r)) => Some(r >= *c),
                _ => None,
            };
            // Relists: LIST requests plus watch-lists (WATCH with sendInitialEvents=true,
            // how informers list since client-go 1.35); neither alone counts them all.
            let list_key = key(t.idx(Concept::Requests), &g, &r, "LIST");
            let watch_list_key = k(Concept::WatchLists);
            let list_requests_rate = rate_reading(t, ts, m, &list_key);
            let watch_lists_rate = rate_reading(t, ts, m, &watch_list_key);
            let lists_per_minute = list_requests_rate
                .value()
                .map(|l| 60.0 * (l + watch_lists_rate.value().copied().unwrap_or(0.0)));
            WatchCacheRow {
                capacity,
                capacity_increases: total_reading(t, m, &k(Concept::WatchCacheCapacityIncrease)),
                capacity_decreases: total_reading(t, m, &k(Concept::WatchCacheCapacityDecrease)),
                events_received_rate: received,
                events_dispatched_rate: rate_reading(
                    t,
                    ts,
                    m,
                    &k(Concept::WatchCacheEventsDispatched),
                ),
                terminated_watchers: total_reading(t, m, &k(Concept::TerminatedWatchers)),
                initializations: total_reading(t, m, &k(Concept::WatchCacheInitializations)),
                list_requests_total: counter_total(t, m, &list_key),
                watch_lists_total: counter_total(t, m, &watch_list_key),
                list_requests_rate,
                watch_lists_rate,
                lists_per_minute,
                replica_event_rate,
                history_span_seconds,
                wrapped,
                group: g,
                resource: r,
            }
        })
        .collect()
}

fn apf(t: &Table, ts: &TargetSeries, m: &Mapped) -> Option<Vec<ApfRow>> {
    let exec = t.idx(Concept::ApfExecuting);
    if !m.exposes(t, exec) {
        return None;
    }
    let ids = [
        exec,
        t.idx(Concept::ApfInqueue),
        t.idx(Concept::ApfRejected),
        t.idx(Concept::ApfNominalSeats),
    ];
    let levels: BTreeSet<&str> = m
        .series
        .keys()
        .filter(|k| ids.contains(&k.concept) && !k.op.is_empty())
        .map(|k| k.op.as_str())
        .collect();
    let get = |id: Concept, pl: &str| m.get(&key(t.idx(id), "", "", pl)).and_then(scalar);
    let rejected_ci = t.idx(Concept::ApfRejected);
    Some(
        levels
            .into_iter()
            .map(|pl| {
                let rk = key(rejected_ci, "", "", pl);
                let rejected_total = get(Concept::ApfRejected, pl)
                    .or_else(|| m.exposes(t, rejected_ci).then_some(0.0));
                ApfRow {
                    priority_level: pl.to_string(),
                    in_queue: get(Concept::ApfInqueue, pl),
                    executing: get(Concept::ApfExecuting, pl),
                    rejected_total,
                    rejected_rate: rate(ts, &rk).or_else(|| {
                        (ts.newest_seq().unwrap_or(0) >= 1 && rejected_total == Some(0.0))
                            .then_some(0.0)
                    }),
                    nominal_seats: get(Concept::ApfNominalSeats, pl),
                }
            })
            .collect(),
    )
}

fn objects(
    t: &Table,
    m: Option<&Mapped>,
    replica: Option<&Replica>,
    rates: &BTreeMap<(String, String), f64>,
    drift_seconds: f64,
) -> Vec<ObjectsRow> {
    let ci = t.idx(Concept::Objects);
    let sentinel = |m: &Mapped| {
        m.names[ci as usize]
            .as_deref()
            .and_then(|n| t.concept(ci).names.iter().find(|d| d.name == n))
            .and_then(|d| d.sentinel)
    };
    let mut api: BTreeMap<(String, String), Reading<i64>> = BTreeMap::new();
    if let Some(m) = m {
        let s = sentinel(m);
        for (k, v) in &m.series {
            if k.concept != ci {
                continue;
            }
            let v = scalar(v).unwrap_or(f64::NAN);
            let reading = if Some(v) == s || v < 0.0 || !v.is_finite() {
                Reading::Unavailable
            } else {
                Reading::Value(v as i64)
            };
            api.insert((k.group.to_string(), k.resource.to_string()), reading);
        }
    }
    let mut rep: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut total_keys = 0u64;
    if let Some(r) = replica {
        for rs in r.resources() {
            total_keys += rs.keys;
            if rs.keys > 0 || api.contains_key(&t.storage_path_resource(&rs.resource)) {
                *rep.entry(t.storage_path_resource(&rs.resource))
                    .or_insert(0) += rs.keys;
            }
        }
    }
    let names: BTreeSet<(String, String)> = api.keys().chain(rep.keys()).cloned().collect();
    // The 1.34-rc regression (kubernetes/kubernetes#133604): several resources report the
    // same value, the total key count under the prefix.
    let same_as_total = |v: i64| {
        total_keys > 0
            && v as u64 == total_keys
            && api.values().filter(|r| **r == Reading::Value(v)).count() >= 2
    };
    let mut rows: Vec<ObjectsRow> = names
        .into_iter()
        .map(|(g, r)| {
            // No series for a resource the replica holds: the apiserver does not count it.
            let a = api
                .get(&(g.clone(), r.clone()))
                .cloned()
                .unwrap_or(Reading::NotExposed);
            let replica_n = replica.map(|_| rep.get(&(g.clone(), r.clone())).copied().unwrap_or(0));
            let flag = match (&a, replica_n) {
                (Reading::Value(v), Some(n))
                    if disagree(
                        *v,
                        n,
                        rates.get(&(g.clone(), r.clone())).copied().unwrap_or(0.0) * drift_seconds,
                    ) =>
                {
                    Some(if same_as_total(*v) {
                    format!(
                        "apiserver says {v}, replica has {n}: equals the total key count ({total_keys}), the pattern of the 1.34-rc regression (kubernetes#133604)"
                    )
                } else {
                    format!("apiserver says {v}, replica has {n}")
                })
                }
                _ => None,
            };
            ObjectsRow {
                group: g,
                resource: r,
                apiserver: a,
                replica: replica_n,
                flag,
            }
        })
        .collect();
    rows.sort_by_key(|r| r.flag.is_none());
    rows
}

/// Counts disagree when they differ by more than 2, by more than 10 % and by more than
/// `drift` (the writes the resource's rate explains since the scrape): the apiserver
/// refreshes its counts periodically, so small transient differences are normal.
fn disagree(api: i64, replica: u64, drift: f64) -> bool {
    let diff = (api - replica as i64).unsigned_abs();
    diff > 2 && diff as f64 > 0.1 * replica as f64 && diff as f64 > drift
}

fn etcd_health(t: &Table, m: Option<&Mapped>, api: Option<&Mapped>) -> Option<EtcdHealth> {
    let api_size = api.map_or(Reading::NotExposed, |a| {
        let ci = t.idx(Concept::StorageSize);
        a.series
            .iter()
            .find(|(k, _)| k.concept == ci)
            .and_then(|(_, v)| scalar(v))
            .map_or(Reading::NotExposed, Reading::Value)
    });
    let m = match m {
        Some(m) => m,
        None if api.is_some() => {
            return Some(EtcdHealth {
                apiserver_db_size_bytes: api_size,
                ..EtcdHealth::default()
            })
        }
        None => return None,
    };
    let get = |id: Concept| m.get(&key(t.idx(id), "", "", "")).and_then(scalar);
    // etcd never reports a real database as 0 bytes: 0 means "not measured", shown as n/a
    // rather than as a size and a 0 % quota use that would look like an empty database.
    let size = get(Concept::EtcdDbSize).filter(|s| *s > 0.0);
    let in_use = get(Concept::EtcdDbInUse);
    let quota = get(Concept::EtcdQuota);
    let quota_used_percent = match (size, quota) {
        (Some(s), Some(q)) if q > 0.0 => Some(s / q * 100.0),
        _ => None,
    };
    let (not_in_use_percent, reclaimable) = match (size, in_use) {
        (Some(s), Some(u)) if s > 0.0 => {
            let free = (s - u).max(0.0);
            (Some(free / s * 100.0), Some(free))
        }
        _ => (None, None),
    };
    Some(EtcdHealth {
        db_size_bytes: size,
        db_in_use_bytes: in_use,
        quota_bytes: quota,
        quota_used_percent,
        not_in_use_percent,
        reclaimable_bytes: reclaimable,
        just_defragmented: not_in_use_percent == Some(0.0),
        has_leader: get(Concept::EtcdHasLeader).map(|v| v >= 1.0),
        leader_changes: get(Concept::EtcdLeaderChanges),
        slow_watchers: get(Concept::EtcdSlowWatchers),
        proposals_failed: get(Concept::EtcdProposalsFailed),
        revision: get(Concept::EtcdCurrentRevision).map(|v| v as Revision),
        compact_revision: get(Concept::EtcdCompactRevision)
            .filter(|v| *v > 0.0)
            .map(|v| v as Revision),
        apiserver_db_size_bytes: api_size,
    })
}

fn window(
    t: &Table,
    api: Option<&Mapped>,
    etcd: Option<&Mapped>,
    etcd_side: Option<&Session>,
    informers: &InformerLag,
    cache: &[WatchCacheRow],
) -> CompactionWindow {
    let etcd_get = |id: Concept| {
        etcd.and_then(|m| m.get(&key(t.idx(id), "", "", "")))
            .and_then(scalar)
    };
    let etcd_head = etcd_get(Concept::EtcdCurrentRevision).map(|v| v as Revision);
    // Known-synced rather than applied: revisions written outside the prefix are not lag.
    let replica_head = etcd_side.map(|s| s.synced_revision()).filter(|r| *r > 0);
    let replica = etcd_side.map(|s| &s.replica);
    let head = replica_head.or(etcd_head);
    let compact_revision = replica.and_then(|r| r.compact_revision()).or_else(|| {
        etcd_get(Concept::EtcdCompactRevision)
            .filter(|v| *v > 0.0)
            .map(|v| v as Revision)
    });
    let window_revisions = match (head, compact_revision) {
        (Some(h), Some(c)) => Some((h - c).max(0)),
        _ => None,
    };
    // Seconds only when the replica saw the compacted revision as it was written (a revision
    // that came in through a list has only an "at or before" time).
    let window_seconds = match (replica, compact_revision) {
        (Some(r), Some(c)) if r.seen_live(c) => match (r.time_of(c), r.time_of(r.revision())) {
            (Some(a), Some(b)) => b.duration_since(a).ok().map(|d| d.as_secs_f64()),
            _ => None,
        },
        _ => None,
    };
    // The apiserver's cache lag is measured against etcd's head as etcd reported it in its
    // own scrape (the nearest moment to the apiserver's); the replica's head otherwise.
    let cache_head = etcd_head.or(head);
    let mut rows: BTreeMap<(String, String), WindowRow> = BTreeMap::new();
    let rv_ci = t.idx(Concept::WatchCacheResourceVersion);
    let row = |g: &str, r: &str| -> WindowRow {
        WindowRow {
            group: g.to_string(),
            resource: r.to_string(),
            watch_cache_lag_revisions: Reading::NotExposed,
            informer_lag_revisions: None,
            informer_lag_seconds: None,
            events_behind: None,
            gone_410: 0,
            relists: 0,
            informer_state: None,
            risk: Risk::Ok,
            risk_reason: None,
        }
    };
    if let Some(m) = api {
        for (k, v) in &m.series {
            if k.concept != rv_ci {
                continue;
            }
            // From 1.36 the gauge holds the 15 least significant digits only.
            let lag = match (scalar(v), cache_head) {
                (Some(rv), Some(h)) => {
                    lag_from_truncated(h, rv).map_or(Reading::Unavailable, Reading::Value)
                }
                (Some(_), None) => Reading::Unavailable,
                _ => Reading::NotExposed,
            };
            let mut w = row(&k.group, &k.resource);
            w.watch_cache_lag_revisions = lag;
            rows.insert((k.group.to_string(), k.resource.to_string()), w);
        }
    }
    for ((g, r), s) in informers.iter() {
        let w = rows
            .entry((g.clone(), r.clone()))
            .or_insert_with(|| row(g, r));
        w.informer_lag_revisions = s.lag_revisions;
        w.informer_lag_seconds = s.lag_seconds;
        w.gone_410 = s.gone_410;
        w.relists = s.relists;
        w.informer_state = Some(s.state.clone());
        w.events_behind = match (replica, s.resource_version) {
            (Some(rep), Some(rv)) => events_behind(rep, &resource_ids(t, rep, g, r), rv, None),
            _ => None,
        };
    }
    for w in rows.values_mut() {
        let c = cache
            .iter()
            .find(|c| c.group == w.group && c.resource == w.resource);
        let inputs = RiskInputs {
            informer: w.informer_state.is_some(),
            informer_lag_revisions: w.informer_lag_revisions,
            informer_lag_seconds: w.informer_lag_seconds,
            informer_error: w
                .informer_state
                .as_deref()
                .and_then(|s| s.strip_prefix("retrying: ")),
            events_behind: w.events_behind,
            watch_cache_lag_revisions: w.watch_cache_lag_revisions.value().copied(),
            window_revisions,
            cache_capacity: c.and_then(|c| c.capacity.value().copied()),
            cache_wrapped: c.and_then(|c| c.wrapped),
            cache_span_seconds: c.and_then(|c| c.history_span_seconds),
            gone_410: w.gone_410,
        };
        (w.risk, w.risk_reason) = risk::assess(&inputs);
    }
    let mut rows: Vec<WindowRow> = rows.into_values().collect();
    rows.sort_by(|a, b| {
        b.risk.cmp(&a.risk).then_with(|| {
            b.informer_lag_revisions
                .unwrap_or(-1)
                .cmp(&a.informer_lag_revisions.unwrap_or(-1))
        })
    });
    CompactionWindow {
        head,
        compact_revision,
        window_revisions,
        window_seconds,
        regscope_lag_revisions: match (etcd_head, replica_head) {
            (Some(e), Some(r)) => Some((e - r).max(0)),
            _ => None,
        },
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_resource_versions_compare_with_the_heads_low_digits() {
        // Below 10^15 (every release before 1.36): head − value.
        assert_eq!(lag_from_truncated(48_230, 48_213.0), Some(17));
        assert_eq!(lag_from_truncated(48_230, 48_230.0), Some(0));
        // Above: the head modulo 10^15.
        assert_eq!(lag_from_truncated(1_000_000_000_000_123, 120.0), Some(3));
        assert_eq!(lag_from_truncated(7_000_000_000_004_812, 4_800.0), Some(12));
        // The head crossed a multiple of 10^15 after the cache's revision: wraps.
        assert_eq!(
            lag_from_truncated(1_000_000_000_000_123, 999_999_999_999_990.0),
            Some(133)
        );
        assert_eq!(
            lag_from_truncated(2_000_000_000_000_000, 999_999_999_999_999.0),
            Some(1)
        );
        // A gauge read a little after etcd's head is not a lag of nearly 10^15.
        assert_eq!(lag_from_truncated(1_000_000_000_000_123, 125.0), Some(0));
        assert_eq!(lag_from_truncated(100, 104.0), Some(0));
        // Not such a gauge: negative, fractional, 10^15 or more, not a number.
        assert_eq!(lag_from_truncated(100, -1.0), None);
        assert_eq!(lag_from_truncated(100, 99.5), None);
        assert_eq!(lag_from_truncated(100, 1e15), None);
        assert_eq!(lag_from_truncated(100, f64::NAN), None);
        assert_eq!(lag_from_truncated(-1, 5.0), None);
    }

    #[test]
    fn not_exposed_lines_name_the_version_and_the_replacement() {
        let t = concepts::table();
        assert_eq!(
            not_exposed_text(t, "cache_lists", Some("v1.37.0")),
            "apiserver_cache_list_total: not exposed by v1.37.0 (removed in 1.37; \
             apiserver_storage_list_total)"
        );
        assert_eq!(
            not_exposed_text(t, "watch_cache_resource_version", Some("v1.28.3")),
            "apiserver_watch_cache_resource_version: not exposed by v1.28.3 (new in 1.31)"
        );
        // Feature-gated in its own release: no reason invented.
        assert_eq!(
            not_exposed_text(t, "watch_shards", Some("v1.36.0")),
            "apiserver_watch_shards_total: not exposed by v1.36.0"
        );
        assert_eq!(
            not_exposed_text(t, "watch_shards", None),
            "apiserver_watch_shards_total: not exposed by this version"
        );
    }
}
