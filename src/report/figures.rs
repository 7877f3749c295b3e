//! The report's charts as data: which derived signals each draws and how (a gauge as it
//! is, a counter as its increase per second over each interval), with the top few label
//! sets of each. Built from the series the collector sampled ([`super::collect`]); the
//! renderers draw them as they are.

use std::collections::BTreeMap;

use std::time::SystemTime;

use super::model::{Chart, Series};
use super::series::{counter_increases, interval_seconds, writer_name, Presence, SeriesTable};

/// Lines per chart besides totals.
const TOP: usize = 5;

/// The ids of [`build`]'s charts, in order (the Markdown's SVG files are named by them).
pub const CHART_IDS: [&str; 13] = [
    "revisions",
    "bytes_written",
    "writers",
    "window_revisions",
    "window_seconds",
    "watch_cache",
    "watch_cache_capacity",
    "terminated_watchers",
    "etcd_latency",
    "apiserver_latency",
    "apf",
    "etcd_db",
    "objects",
];

/// Every chart, in the order the report shows them.
pub fn build(table: &SeriesTable, presence: &Presence, times: &[SystemTime]) -> Vec<Chart> {
    let t = Tables {
        table,
        presence,
        times,
    };
    vec![
        revisions(&t),
        bytes_written(&t),
        writers(&t),
        window_revisions(&t),
        window_seconds(&t),
        watch_cache(&t),
        capacity(&t),
        terminated(&t),
        etcd_latency(&t),
        apiserver_latency(&t),
        apf(&t),
        db(&t),
        objects(&t),
    ]
}

struct Tables<'a> {
    table: &'a SeriesTable,
    presence: &'a Presence,
    times: &'a [SystemTime],
}

impl Tables<'_> {
    /// The series of `signal` by label values.
    fn of(&self, signal: &str) -> impl Iterator<Item = (&Vec<String>, &Vec<Option<f64>>)> {
        self.table.get(signal).into_iter().flatten()
    }

    /// The unlabelled series of `signal`.
    fn scalar(&self, signal: &str) -> Option<&Vec<Option<f64>>> {
        self.table.get(signal).and_then(|m| m.get(&Vec::new()))
    }

    /// A counter's increase per second over each interval (`signal` says when it was
    /// read, see [`counter_increases`]).
    fn rate(&self, signal: &str, v: &[Option<f64>]) -> Vec<Option<f64>> {
        counter_increases(v, self.presence.get(signal))
            .into_iter()
            .enumerate()
            .map(|(i, x)| x.map(|x| x / interval_seconds(self.times, i)))
            .collect()
    }

    /// Sums per-second rates of a counter's series grouped by `key` (label values → line
    /// name).
    fn rates_by(
        &self,
        signal: &str,
        key: impl Fn(&[String]) -> String,
    ) -> BTreeMap<String, Vec<Option<f64>>> {
        let mut by: BTreeMap<String, Vec<Option<f64>>> = BTreeMap::new();
        for (labels, v) in self.of(signal) {
            let row = by
                .entry(key(labels))
                .or_insert_with(|| vec![None; self.times.len()]);
            for (i, x) in self.rate(signal, v).into_iter().enumerate() {
                if let Some(x) = x {
                    row[i] = Some(row[i].unwrap_or(0.0) + x);
                }
            }
        }
        by
    }

    /// Gauges grouped by `key`, the largest value of the group at each instant.
    fn max_by(
        &self,
        signal: &str,
        key: impl Fn(&[String]) -> String,
    ) -> BTreeMap<String, Vec<Option<f64>>> {
        let mut by: BTreeMap<String, Vec<Option<f64>>> = BTreeMap::new();
        for (labels, v) in self.of(signal) {
            let row = by
                .entry(key(labels))
                .or_insert_with(|| vec![None; self.times.len()]);
            for (i, x) in v.iter().enumerate() {
                if let Some(x) = *x {
                    row[i] = Some(row[i].map_or(x, |y: f64| y.max(x)));
                }
            }
        }
        by
    }
}

/// The `n` series with the largest sum (then by name), as chart lines named `prefix name`.
/// Series with exactly the same values are one line naming them all (five watch caches
/// of capacity 100 would otherwise hide each other).
fn top(by: BTreeMap<String, Vec<Option<f64>>>, n: usize, prefix: &str) -> Vec<Series> {
    let mut merged: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    let bits = |v: &[Option<f64>]| v.iter().map(|x| x.map(f64::to_bits)).collect::<Vec<_>>();
    for (name, values) in by {
        match merged.iter_mut().find(|(_, v)| bits(v) == bits(&values)) {
            Some((names, _)) => {
                names.push_str(", ");
                names.push_str(&name);
            }
            None => merged.push((name, values)),
        }
    }
    let mut v: Vec<_> = merged
        .into_iter()
        .map(|(name, values)| {
            let sum: f64 = values.iter().flatten().sum();
            (sum, name, values)
        })
        .filter(|(sum, _, _)| *sum > 0.0)
        .collect();
    v.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    v.into_iter()
        .take(n)
        .map(|(_, name, values)| Series {
            name: format!("{prefix}{name}"),
            values,
        })
        .collect()
}

/// The group/resource label pair as one name: `pods`, `deployments.apps`.
pub fn group_resource(labels: &[String]) -> String {
    gr(labels)
}

fn gr(labels: &[String]) -> String {
    match (labels.first(), labels.get(1)) {
        (Some(g), Some(r)) if !g.is_empty() => format!("{r}.{g}"),
        (_, Some(r)) => r.clone(),
        _ => String::new(),
    }
}

fn chart(
    id: &'static str,
    title: &str,
    y_label: &str,
    unit: &'static str,
    signals: &[&'static str],
    series: Vec<Series>,
    missing: &str,
) -> Chart {
    let empty = series.iter().all(|s| s.values.iter().all(Option::is_none));
    Chart {
        id,
        title: title.into(),
        y_label: y_label.into(),
        unit,
        signals: signals.to_vec(),
        series,
        note: empty.then(|| missing.to_string()),
    }
}

fn revisions(t: &Tables<'_>) -> Chart {
    let mut series = Vec::new();
    if let Some(head) = t.scalar("etcd_head_revision") {
        series.push(Series {
            name: "revisions (etcd head)".into(),
            values: t.rate("etcd_head_revision", head),
        });
    }
    series.extend(top(
        t.rates_by("writes_total", |l| l[0].clone()),
        TOP,
        "writes: ",
    ));
    chart(
        "revisions",
        "Revisions per second, and writes per second of the busiest resources",
        "per second",
        "per second",
        &["etcd_head_revision", "writes_total"],
        series,
        "no revision was seen in this span",
    )
}

fn bytes_written(t: &Tables<'_>) -> Chart {
    chart(
        "bytes_written",
        "Bytes written per second by resource",
        "bytes per second",
        "bytes/s",
        &["written_bytes_total"],
        top(t.rates_by("written_bytes_total", |l| l[0].clone()), TOP, ""),
        "no value was written in this span",
    )
}

fn writers(t: &Tables<'_>) -> Chart {
    let by = t.rates_by("writer_writes_total", |l| {
        if l[1].starts_with('(') {
            "(unattributed: no managedFields writer named)".to_string()
        } else {
            writer_name(&l[1], &l[2])
        }
    });
    let unattributed: Vec<Series> = by
        .iter()
        .filter(|(k, _)| k.starts_with('('))
        .map(|(k, v)| Series {
            name: k.clone(),
            values: v.clone(),
        })
        .collect();
    let named: BTreeMap<_, _> = by
        .into_iter()
        .filter(|(k, _)| !k.starts_with('('))
        .collect();
    let mut series = top(named, TOP, "");
    series.extend(unattributed);
    chart(
        "writers",
        "Top writers (managedFields manager and operation), writes per second",
        "writes per second",
        "writes/s",
        &["writer_writes_total"],
        series,
        "no write in this span",
    )
}

fn window_revisions(t: &Tables<'_>) -> Chart {
    let mut series = Vec::new();
    if let Some(w) = t.scalar("compaction_window_revisions") {
        series.push(Series {
            name: "compaction window".into(),
            values: w.clone(),
        });
    }
    series.extend(top(
        t.max_by("informer_lag_revisions", gr),
        TOP,
        "informer lag: ",
    ));
    series.extend(top(
        t.max_by("watch_cache_lag_revisions", gr),
        TOP,
        "watch cache lag: ",
    ));
    if let Some(w) = t.scalar("regscope_watch_lag_revisions") {
        series.push(Series {
            name: "regscope's own watch lag".into(),
            values: w.clone(),
        });
    }
    chart(
        "window_revisions",
        "Compaction window against lag, in revisions",
        "revisions",
        "revisions",
        &[
            "compaction_window_revisions",
            "informer_lag_revisions",
            "watch_cache_lag_revisions",
            "regscope_watch_lag_revisions",
        ],
        series,
        "no compaction and no lag were measured in this span",
    )
}

fn window_seconds(t: &Tables<'_>) -> Chart {
    let mut series = Vec::new();
    if let Some(w) = t.scalar("compaction_window_seconds") {
        series.push(Series {
            name: "compaction window".into(),
            values: w.clone(),
        });
    }
    series.extend(top(
        t.max_by("informer_lag_seconds", gr),
        TOP,
        "informer lag: ",
    ));
    chart(
        "window_seconds",
        "Compaction window against informer lag, in seconds",
        "seconds",
        "seconds",
        &["compaction_window_seconds", "informer_lag_seconds"],
        series,
        "no compaction and no informer lag were measured in this span",
    )
}

fn watch_cache(t: &Tables<'_>) -> Chart {
    chart(
        "watch_cache",
        "Watch cache history span by resource (how far back a watcher can resume)",
        "seconds",
        "seconds",
        &["watch_cache_history_span_seconds"],
        top(t.max_by("watch_cache_history_span_seconds", gr), TOP, ""),
        "no apiserver scrape with the watch cache's metrics in this span",
    )
}

fn capacity(t: &Tables<'_>) -> Chart {
    chart(
        "watch_cache_capacity",
        "Watch cache capacity by resource (events the ring holds)",
        "events",
        "events",
        &["watch_cache_capacity"],
        top(t.max_by("watch_cache_capacity", gr), TOP, ""),
        "no apiserver scrape with the watch cache's metrics in this span",
    )
}

fn terminated(t: &Tables<'_>) -> Chart {
    chart(
        "terminated_watchers",
        "Watchers the apiserver terminated as unresponsive, per second",
        "watchers per second",
        "watchers/s",
        &["terminated_watchers_total"],
        top(t.rates_by("terminated_watchers_total", gr), TOP, ""),
        "no apiserver scrape with apiserver_terminated_watchers_total in this span",
    )
}

/// The `n` operations with the worst p99 anywhere, with their p50.
fn etcd_latency(t: &Tables<'_>) -> Chart {
    let op = |l: &[String]| {
        let res = gr(&l[1..]);
        format!("{} {res}", l[0])
    };
    let p99 = t.max_by("etcd_request_p99_seconds", op);
    let p50 = t.max_by("etcd_request_p50_seconds", op);
    let mut worst: Vec<(f64, String)> = p99
        .iter()
        .map(|(k, v)| (v.iter().flatten().fold(0.0f64, |a, b| a.max(*b)), k.clone()))
        .filter(|(m, _)| *m > 0.0)
        .collect();
    worst.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut series = Vec::new();
    for (_, k) in worst.into_iter().take(3) {
        series.push(Series {
            name: format!("p99 {k}"),
            values: p99[&k].clone(),
        });
        if let Some(v) = p50.get(&k) {
            series.push(Series {
                name: format!("p50 {k}"),
                values: v.clone(),
            });
        }
    }
    chart(
        "etcd_latency",
        "etcd request latency as the apiserver measures it: p99 and p50 of the slowest operations",
        "seconds",
        "seconds",
        &["etcd_request_p99_seconds", "etcd_request_p50_seconds"],
        series,
        "no apiserver scrape with etcd_request_duration_seconds in this span",
    )
}

fn apiserver_latency(t: &Tables<'_>) -> Chart {
    chart(
        "apiserver_latency",
        "Apiserver request latency p99 by verb (the slowest resource of each)",
        "seconds",
        "seconds",
        &["apiserver_request_p99_seconds"],
        top(
            t.max_by("apiserver_request_p99_seconds", |l| l[0].clone()),
            8,
            "",
        ),
        "no apiserver scrape with apiserver_request_duration_seconds in this span",
    )
}

fn apf(t: &Tables<'_>) -> Chart {
    let by = t.rates_by("apf_rejected_total", |l| l[0].clone());
    let any = !by.is_empty();
    let mut series = top(by, TOP, "");
    if series.is_empty() && any {
        // Exposed, and nothing rejected: a flat zero is the finding.
        series.push(Series {
            name: "all priority levels".into(),
            values: t
                .rate(
                    "apf_rejected_total",
                    t.of("apf_rejected_total")
                        .next()
                        .map_or(&Vec::new(), |x| x.1),
                )
                .into_iter()
                .map(|x| x.map(|_| 0.0))
                .collect(),
        });
    }
    chart(
        "apf",
        "API Priority and Fairness: rejected requests per second",
        "requests per second",
        "requests/s",
        &["apf_rejected_total"],
        series,
        "no apiserver scrape with APF's metrics in this span",
    )
}

fn db(t: &Tables<'_>) -> Chart {
    let mut series = Vec::new();
    for (signal, name) in [
        ("etcd_db_size_bytes", "database file"),
        ("etcd_db_in_use_bytes", "in use"),
    ] {
        if let Some(v) = t.scalar(signal) {
            series.push(Series {
                name: name.into(),
                values: v.clone(),
            });
        }
    }
    let largest = series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .fold(0.0f64, |a, b| a.max(*b));
    let quota = t.scalar("etcd_quota_bytes");
    let last_quota = quota.and_then(|q| q.iter().rev().flatten().next().copied());
    let mut title = "etcd database size against in use and quota".to_string();
    match (quota, last_quota) {
        // The quota on the same axis would flatten the sizes into its floor: drawn only
        // when the database comes within a fifth of it, else named in the title.
        (Some(q), Some(last)) if largest >= last * 0.2 => series.push(Series {
            name: "quota".into(),
            values: q.clone(),
        }),
        (Some(_), Some(last)) => {
            title = format!(
                "etcd database size and in use (quota {}, at most {:.1} % of it)",
                crate::derive::units::bytes(last as u64),
                100.0 * largest / last
            );
        }
        _ => {}
    }
    chart(
        "etcd_db",
        &title,
        "bytes",
        "bytes",
        &[
            "etcd_db_size_bytes",
            "etcd_db_in_use_bytes",
            "etcd_quota_bytes",
        ],
        series,
        "no etcd scrape in this span",
    )
}

fn objects(t: &Tables<'_>) -> Chart {
    // The apiserver's counts when it exposes them, else the replica's keys.
    let from_apiserver = top(t.max_by("objects", gr), TOP, "");
    let (series, signal, title) = if from_apiserver.is_empty() {
        (
            top(t.max_by("keys", |l| l[0].clone()), TOP, ""),
            "keys",
            "Keys of the biggest resources (the replica's count)",
        )
    } else {
        (
            from_apiserver,
            "objects",
            "Objects of the biggest resources (the apiserver's count)",
        )
    };
    chart(
        "objects",
        title,
        "objects",
        "objects",
        &[signal],
        series,
        "no object count in this span",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_ids_are_the_charts_built() {
        let ids: Vec<&str> = build(
            &SeriesTable::new(),
            &Presence::new(),
            &[std::time::UNIX_EPOCH],
        )
        .iter()
        .map(|c| c.id)
        .collect();
        assert_eq!(ids, CHART_IDS);
    }
}
