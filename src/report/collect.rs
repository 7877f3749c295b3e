//! One pass over a recording that fills a [`Report`]: the player seeks to `--from`, then
//! advances to each instant of one time grid and reads the derived-signal table there
//! ([`crate::derive::signals`]), exactly the state `snapshot --json --from FILE --at T`
//! shows for that instant (both stop after the last observation stamped at or before
//! it). On the way it scans markers as `replay --check` does, counts writes per key and
//! notes every 410 Gone and relist; at `--to` it compares the replica's keys with those it
//! held at `--from`.
//!
//! Memory: the grid has at most [`MAX_POINTS`] instants whatever the span; the per-key
//! write counts are a bounded table ([`KeyCounter`]); the keys held at `--from` are one
//! copy of the keyspace (its keys, revisions and sizes, not its values).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::figures;
use super::model::{
    Burst, Changes, Cluster, KeyWrites, Marker, Member, OtherCluster, Report, ResourceEvent,
    Slowest, Source, Span, StandsOut, WorstLag,
};
use super::series::{counter_increases, interval_seconds, writer_name, Presence, SeriesTable};
use crate::derive::changes;
use crate::derive::signals::{self, Readings};
use crate::model::{escape_bytes, InformerWhat, Observation, Revision};
use crate::record::{MarkerScan, Player, Target};
use crate::store::Session;

/// Most sampling instants a report has, whatever its span.
pub const MAX_POINTS: usize = 240;

/// Distinct keys the write counter tracks at once (see [`KeyCounter`]).
const KEY_COUNTER_CAP: usize = 4096;

/// Keys listed in "most written" and in the top changed keys.
const TOP_KEYS: usize = 15;

/// What to report on.
#[derive(Clone, Debug)]
pub struct Options {
    /// Start and end of the span; the recording's own when `None`.
    pub from: Option<SystemTime>,
    pub to: Option<SystemTime>,
    /// Marker thresholds, in seconds, as `replay --check` takes them.
    pub p99_threshold: f64,
    pub lag_threshold: f64,
}

/// Reads the recording once and returns its report, or why not (a span outside the
/// recording, `--from` not before `--to`).
pub fn collect(mut player: Player, opts: &Options) -> Result<Report, String> {
    let (first, last) = player.span();
    let from = opts.from.unwrap_or(first);
    let to = opts.to.unwrap_or(last);
    if from >= to {
        return Err(format!(
            "--from {} is not before --to {}",
            humantime::format_rfc3339_millis(from),
            humantime::format_rfc3339_millis(to)
        ));
    }
    let instants = grid(from, to);
    // Each instant names its whole millisecond, as `snapshot --at` reads a time written
    // with milliseconds: the state after every observation stamped within it.
    let whole_ms = Duration::from_nanos(999_999);
    let times: Vec<i64> = instants.iter().map(|t| secs(*t)).collect();
    let interval = times.get(2).map_or(1, |t| t - times[1]).max(1);
    player.set_bodies(false);
    player.verify(false);
    // Seek to just before the first instant and advance into it with the scans, so that
    // what happened within its millisecond (a marker copied from `replay --check` as
    // `--from`) is seen.
    let mut session = player.seek(Target::Time(
        instants[0]
            .checked_sub(Duration::from_nanos(1))
            .unwrap_or(instants[0]),
    ));
    // The keys are compared from the first instant the replica holds a listed keyspace:
    // a recording starts with its list, and before it ends no key is known yet (every
    // key would read as created).
    let mut keys_from: Option<(KeysAt, Revision, usize)> = None;
    // Before the recording's first list the replica is at revision 0: the span then
    // starts at the first revision the recording holds, as `replay --check` says.
    let start_revision = Some(session.revision())
        .filter(|r| *r > 0)
        .or_else(|| player.first_revision())
        .unwrap_or(0);
    let mut lost = 0usize;
    let mut scan = MarkerScan::new(&session, opts.p99_threshold, opts.lag_threshold);
    let mut counter = KeyCounter::default();
    let mut events: Vec<ResourceEvent> = Vec::new();
    let mut table = SeriesTable::new();
    let mut presence = Presence::new();
    let mut slowest: Option<Slowest> = None;
    for (i, t) in instants.iter().enumerate() {
        let damaged = player.damage().len();
        {
            player.advance(
                &mut session,
                Target::Time(*t + whole_ms),
                u64::MAX,
                |s, st, pos| {
                    scan.observe(s, st, pos);
                    match &st.obs {
                        Observation::Events { events: evs, .. } => {
                            for e in evs {
                                counter.count(&e.kv.key);
                            }
                        }
                        Observation::Informer(inf) => match &inf.what {
                            InformerWhat::Gone { .. } => events.push(ResourceEvent {
                                at: st.at,
                                what: "gone",
                                resource: inf.resource.clone(),
                            }),
                            InformerWhat::Listed { relist: true, .. } => {
                                events.push(ResourceEvent {
                                    at: st.at,
                                    what: "relist",
                                    resource: inf.resource.clone(),
                                })
                            }
                            _ => {}
                        },
                        _ => {}
                    }
                },
            );
        }
        // A state that misses observations (lost to damage, not yet restored from a
        // checkpoint) is not sampled: its numbers would be drawn as if whole.
        if player.is_lost() || player.damage().len() > damaged {
            lost += 1;
            continue;
        }
        let panels = crate::derive::apiserver::build(
            &session.metrics,
            Some(&session),
            &session.informers,
            session.now(),
        );
        let mut readings = signals::read_with(&session, &panels);
        if session.etcd.outage_since().is_some() {
            // While etcd is out of reach the replica's head and counters stand still:
            // not known is not zero.
            for name in signals::REPLICA_COUNTERS {
                readings.signals.remove(name);
            }
        }
        if keys_from.is_none() && session.revision() > 0 && session.replica.listing().is_none() {
            keys_from = Some((KeysAt::of(&session), session.revision(), i));
        }
        // A p99 is of the interval before the apiserver scrape that carried it.
        let scraped = panels.apiserver.last_good.unwrap_or(*t);
        slowest = slowest_of(&panels, scraped, slowest);
        record(&mut table, &mut presence, &readings, i, times.len());
    }
    let to_revision = session.revision();
    // A report of the whole recording lists what its one pass scanned; one of a part of it
    // lists the whole recording's markers within the part, as `export` does, since a scan
    // begun at `--from` would not know what led there (a restored connection needs the
    // loss before it).
    let scanned = if opts.from.is_some() {
        player.markers(opts.p99_threshold, opts.lag_threshold)
    } else {
        player.complete_markers(scan.markers())
    };
    let markers: Vec<Marker> = scanned
        .into_iter()
        .filter(|m| {
            (opts.from.is_none() || m.at >= instants[0])
                && (opts.to.is_none() || m.at <= *instants.last().unwrap_or(&to) + whole_ms)
        })
        .map(|m| Marker {
            at: m.at,
            revision: m.revision,
            kind: m.kind.name(),
            label: m.label,
        })
        .collect();
    let mut stands_out = stands_out(&table, &presence, &instants, slowest, events, counter);
    stands_out.incidents = markers
        .iter()
        .filter(|m| {
            crate::record::MarkerKind::ALL
                .into_iter()
                .find(|k| k.name() == m.kind)
                .is_some_and(|k| k.severity() >= 2 && k != crate::record::MarkerKind::Gone)
        })
        .take(super::model::MAX_INCIDENTS)
        .cloned()
        .collect();
    let changes = match keys_from {
        Some((keys, rev, t)) => {
            let mut c = keys.compare(&session, rev);
            c.from_at = Some(instants[t]);
            c.to_at = instants.last().copied();
            if t != 0 {
                let why = format!(
                    "the replica held no listed keyspace at the span's start; compared from {} (revision {rev}), the first instant it did",
                    humantime::format_rfc3339_millis(instants[t])
                );
                c.note = Some(c.note.map_or(why.clone(), |n| format!("{why}; {n}")));
            }
            c
        }
        None => Changes {
            note: Some(
                "the replica held no listed keyspace in this span: no keys to compare".into(),
            ),
            ..Default::default()
        },
    };
    let charts = figures::build(&table, &presence, &instants);
    Ok(Report {
        generated_by: format!("regscope {}", env!("CARGO_PKG_VERSION")),
        source: Source {
            files: player
                .paths()
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            secrets_redacted: player.header().secrets_redacted,
            damage: player.damage().to_vec(),
            notes: player.notes().to_vec(),
            lost_instants: lost,
        },
        cluster: cluster(&session, &table),
        span: Span {
            from: instants[0],
            to: *instants.last().unwrap_or(&instants[0]),
            recording_start: ms(first),
            recording_end: ms(last),
            recorder_utc_offset_seconds: player.recorder_utc_offset(),
            from_revision: start_revision,
            to_revision,
            interval_seconds: interval,
        },
        markers,
        figures: table
            .iter()
            .filter_map(|(name, by)| by.get(&Vec::new()).map(|v| (*name, v.clone())))
            .collect(),
        sampled_at: instants.clone(),
        times,
        charts,
        stands_out,
        changes,
    })
}

/// Unix seconds as a stamp.
fn at(secs: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).unwrap_or(0))
}

/// A stamp as whole unix seconds, rounded down.
fn secs(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// `t` cut to whole milliseconds.
fn ms(t: SystemTime) -> SystemTime {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    UNIX_EPOCH + Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The sampling instants: `from`, then whole seconds in steps of a round interval
/// (1 s … 1 h) chosen so that at most [`MAX_POINTS`] fit, then `to`; `from` and `to` are
/// cut to whole milliseconds, so that each instant printed as RFC 3339 with milliseconds
/// (as `snapshot --at` reads it) names the state sampled.
pub fn grid(from: SystemTime, to: SystemTime) -> Vec<SystemTime> {
    let (from, to) = (ms(from), ms(to));
    let span = (secs(to) - secs(from)).max(1);
    let step = [
        1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 86400,
    ]
    .into_iter()
    .find(|s| span / s < MAX_POINTS as i64 - 1)
    .unwrap_or_else(|| span / (MAX_POINTS as i64 - 2) + 1);
    let first_whole = (secs(from) / step + 1) * step;
    let mut out = vec![from];
    out.extend(
        (0..)
            .map(|i| at(first_whole + i * step))
            .take_while(|t| *t < to),
    );
    if to > from {
        out.push(to);
    }
    out
}

/// Adds one instant's readings to the table (column `i` of `n`).
fn record(table: &mut SeriesTable, presence: &mut Presence, r: &Readings, i: usize, n: usize) {
    for (name, samples) in &r.signals {
        presence.entry(name).or_insert_with(|| vec![false; n])[i] = true;
        let by = table.entry(name).or_default();
        for s in samples {
            let v = by.entry(s.labels.clone()).or_insert_with(|| vec![None; n]);
            v[i] = Some(s.value);
        }
    }
}

/// The worst etcd request p99 so far, with whether it is a lower bound.
fn slowest_of(
    panels: &crate::derive::apiserver::ApiserverPanels,
    t: SystemTime,
    best: Option<Slowest>,
) -> Option<Slowest> {
    use crate::metrics::quantile::Quantile;
    let mut best = best;
    for r in panels
        .latency
        .iter()
        .filter(|r| r.metric == "etcd_request_duration_seconds")
    {
        let (v, at_least) = match r.p99 {
            Quantile::Value(v) => (v, false),
            Quantile::AtLeast(v) => (v, true),
            Quantile::NoData => continue,
        };
        if best.as_ref().is_none_or(|b| v > b.p99_seconds) {
            best = Some(Slowest {
                at: t,
                operation: r.operation.clone(),
                resource: r.resource.clone(),
                p99_seconds: v,
                at_least,
            });
        }
    }
    best
}

/// What stands out over the span.
fn stands_out(
    table: &SeriesTable,
    presence: &Presence,
    times: &[SystemTime],
    slowest_etcd: Option<Slowest>,
    gone_and_relists: Vec<ResourceEvent>,
    counter: KeyCounter,
) -> StandsOut {
    let dt = |i: usize| interval_seconds(times, i);
    // Writes per resource (puts and deletes) per interval.
    let mut per_resource: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for (labels, v) in table.get("writes_total").into_iter().flatten() {
        let row = per_resource
            .entry(labels[0].as_str())
            .or_insert_with(|| vec![0.0; times.len()]);
        for (i, x) in counter_increases(v, presence.get("writes_total"))
            .into_iter()
            .enumerate()
        {
            row[i] += x.unwrap_or(0.0);
        }
    }
    let mut largest_burst = None::<Burst>;
    for (res, row) in &per_resource {
        for i in 1..times.len() {
            let rate = row[i] / dt(i);
            if rate > 0.0
                && largest_burst
                    .as_ref()
                    .is_none_or(|b| rate > b.writes_per_second)
            {
                largest_burst = Some(Burst {
                    at: times[i],
                    resource: (*res).to_string(),
                    writes_per_second: rate,
                    median_writes_per_second: None,
                    writer: None,
                });
            }
        }
    }
    if let Some(b) = largest_burst.as_mut() {
        let mut rates: Vec<f64> = per_resource
            .get(b.resource.as_str())
            .map(|row| {
                (1..times.len())
                    .map(|i| row[i] / dt(i))
                    .filter(|r| *r > 0.0)
                    .collect()
            })
            .unwrap_or_default();
        rates.sort_by(f64::total_cmp);
        b.median_writes_per_second = rates.get(rates.len() / 2).copied();
        let i = times.iter().position(|t| *t == b.at).unwrap_or(0);
        b.writer = table
            .get("writer_writes_total")
            .into_iter()
            .flatten()
            .filter(|(l, _)| l[0] == b.resource)
            .filter_map(|(l, v)| {
                counter_increases(v, presence.get("writer_writes_total"))[i].map(|x| (l, x))
            })
            .filter(|(_, x)| *x > 0.0)
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(l, _)| writer_name(&l[1], &l[2]));
    }
    // The largest lag, and the one closest to the compaction window.
    let window = table
        .get("compaction_window_revisions")
        .and_then(|m| m.get(&Vec::new()));
    let mut worst_lag = None::<WorstLag>;
    let mut closest = None::<WorstLag>;
    for (labels, v) in table.get("informer_lag_revisions").into_iter().flatten() {
        for (i, x) in v.iter().enumerate() {
            let Some(lag) = *x else { continue };
            let get = |name: &str| {
                table
                    .get(name)
                    .and_then(|m| m.get(labels))
                    .and_then(|v| v[i])
            };
            let window_revisions = window.and_then(|w| w[i]).map(|w| w as i64);
            let here = WorstLag {
                at: times[i],
                resource: super::figures::group_resource(labels),
                lag_revisions: lag as i64,
                lag_seconds: get("informer_lag_seconds"),
                window_revisions,
                fraction_of_window: get("informer_lag_window_ratio"),
            };
            if worst_lag
                .as_ref()
                .is_none_or(|w| here.lag_revisions > w.lag_revisions)
            {
                worst_lag = Some(here.clone());
            }
            if let Some(f) = here.fraction_of_window {
                if closest
                    .as_ref()
                    .is_none_or(|c| f > c.fraction_of_window.unwrap_or(0.0))
                {
                    closest = Some(here);
                }
            }
        }
    }
    let closest_to_window = closest.filter(|c| {
        worst_lag
            .as_ref()
            .is_none_or(|w| (w.at, &w.resource) != (c.at, &c.resource))
            && c.lag_revisions > 0
            // Under 1 % of the window is no finding.
            && c.fraction_of_window.is_some_and(|f| f >= 0.01)
    });
    let db = |name: &str| {
        table
            .get(name)
            .and_then(|m| m.get(&Vec::new()))
            .map(|v| v.iter().flatten().copied().collect::<Vec<f64>>())
            .unwrap_or_default()
    };
    let (size, in_use, quota) = (
        db("etcd_db_size_bytes"),
        db("etcd_db_in_use_bytes"),
        db("etcd_quota_bytes"),
    );
    let db_growth = (!size.is_empty()).then(|| super::model::DbGrowth {
        first_bytes: size[0],
        last_bytes: size[size.len() - 1],
        first_in_use_bytes: in_use.first().copied(),
        last_in_use_bytes: in_use.last().copied(),
        quota_bytes: quota.last().copied(),
    });
    let (most_written, most_written_exact) = counter.top(TOP_KEYS);
    StandsOut {
        incidents: Vec::new(),
        largest_burst,
        worst_lag: worst_lag.filter(|w| w.lag_revisions > 0),
        closest_to_window,
        gone_and_relists,
        slowest_etcd,
        db_growth,
        most_written,
        most_written_exact,
    }
}

/// What the session knew about the cluster at the end of the span.
fn cluster(s: &Session, table: &SeriesTable) -> Cluster {
    let info = s.info();
    let members = s
        .etcd
        .members()
        .map(|(_, ms)| {
            ms.iter()
                .map(|m| Member {
                    name: m.name.clone(),
                    endpoint: m.endpoint.clone(),
                    // etcd's Status answer carries no version: the one read from says its
                    // own when connected.
                    version: s
                        .etcd
                        .server()
                        .filter(|(e, v)| *e == m.endpoint && !v.is_empty())
                        .map(|(_, v)| v.to_string()),
                    leader: m
                        .status
                        .as_ref()
                        .is_some_and(|st| st.leader != 0 && st.leader == m.id),
                    answering: m.status.is_some(),
                })
                .collect()
        })
        .unwrap_or_default();
    let mut replacements: Vec<String> = Vec::new();
    for r in s.etcd.replacements() {
        for id in [r.cluster_id_before, r.cluster_id_after] {
            let id = format!("{id:x}");
            if replacements.last() != Some(&id) {
                replacements.push(id);
            }
        }
    }
    let flags = s.apiserver_flags.as_ref();
    Cluster {
        title: info.title.clone(),
        endpoints: info.endpoints.clone(),
        prefix: info.prefix.clone(),
        server: s.etcd.server().map(|(e, _)| e.to_string()),
        cluster_id: s.etcd.cluster_id().map(|id| format!("{id:x}")),
        replacements,
        members,
        etcd_version: s
            .etcd
            .server()
            .map(|(_, v)| v.to_string())
            .filter(|v| !v.is_empty())
            .or_else(|| {
                s.metrics
                    .target(crate::model::ScrapeTarget::Etcd)
                    .status
                    .version
                    .clone()
            }),
        kubernetes_version: s
            .metrics
            .target(crate::model::ScrapeTarget::Apiserver)
            .status
            .version
            .clone(),
        apiserver_flags: flags.map(|f| f.flags.clone()).unwrap_or_default(),
        apiserver_flags_file: flags.map(|f| f.file.clone()),
        other_clusters: s
            .other_clusters
            .all()
            .iter()
            .map(|c| OtherCluster {
                resources: c.resources.clone(),
                endpoint: c.endpoint.clone(),
                version: Some(c.version.clone()).filter(|v| !v.is_empty()),
                up: c.up,
            })
            .collect(),
        quota_bytes: table
            .get("etcd_quota_bytes")
            .and_then(|m| m.get(&Vec::new()))
            .and_then(|v| v.iter().rev().flatten().next().copied()),
    }
}

/// Writes per key over the span, in a table of at most [`KEY_COUNTER_CAP`] keys
/// (Misra–Gries: when full, every count drops by one and the keys at zero leave, so a key
/// written more than total/cap times is always kept, and its count is at most that much
/// short). `exact` stays true while nothing was dropped.
#[derive(Default)]
pub struct KeyCounter {
    counts: std::collections::HashMap<Box<[u8]>, u64>,
    dropped: bool,
}

impl KeyCounter {
    /// Counts one write of `key`.
    pub fn count(&mut self, key: &[u8]) {
        if let Some(c) = self.counts.get_mut(key) {
            *c += 1;
            return;
        }
        if self.counts.len() >= KEY_COUNTER_CAP {
            self.dropped = true;
            self.counts.retain(|_, c| {
                *c -= 1;
                *c > 0
            });
            if self.counts.len() >= KEY_COUNTER_CAP {
                return;
            }
        }
        self.counts.insert(key.into(), 1);
    }

    /// The `n` keys written most, most first, and whether the counts are exact.
    pub fn top(self, n: usize) -> (Vec<KeyWrites>, bool) {
        let mut v: Vec<_> = self.counts.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let top = v
            .into_iter()
            .take(n)
            .map(|(k, writes)| KeyWrites {
                key: escape_bytes(&k).into_owned(),
                writes,
            })
            .collect();
        (top, !self.dropped)
    }
}

/// The replica's live keys at one moment ([`changes::KeysAt`]), and how many times etcd
/// had been replaced by then.
struct KeysAt {
    keys: changes::KeysAt,
    replacements: usize,
}

impl KeysAt {
    fn of(s: &Session) -> KeysAt {
        KeysAt {
            keys: changes::KeysAt::of(&s.replica, s.replica.prefix()),
            replacements: s.etcd.replacements().len(),
        }
    }

    /// Keys created, deleted and changed from these to `s`'s live keys: one history, so
    /// a key changed when its mod_revision did.
    fn compare(self, s: &Session, from_revision: Revision) -> Changes {
        let r = &s.replica;
        let prefix = r.prefix();
        let c = changes::compare(
            self.keys.iter(),
            changes::live_keys(r, prefix),
            &changes::CompareOptions {
                root: prefix,
                top: TOP_KEYS,
                every_key: false,
                recreated: true,
            },
            |_| false,
        );
        let replaced = s.etcd.replacements().len() > self.replacements;
        Changes {
            from_revision,
            to_revision: r.revision(),
            from_at: None,
            to_at: None,
            per_resource: c.per_resource,
            total: c.total,
            top_keys: c.top_keys,
            note: replaced.then(|| {
                "etcd was replaced between the two moments: its revisions restarted, so a key \
                 counts as changed when its mod_revision differs, even if its value did not"
                    .to_string()
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_covers_the_span_in_round_steps() {
        let ms = |t: u64| UNIX_EPOCH + Duration::from_millis(t);
        let g = grid(ms(1_000_300), ms(1_010_000));
        assert_eq!(g[0], ms(1_000_300));
        assert_eq!(g[1], at(1001));
        assert_eq!(*g.last().unwrap(), at(1010));
        assert_eq!(g.len(), 11);
        // An hour: 30 s steps, whole seconds between the two ends.
        let g = grid(at(1000), at(4600));
        assert_eq!(g[2].duration_since(g[1]).unwrap(), Duration::from_secs(30));
        assert_eq!(*g.last().unwrap(), at(4600));
        assert!(g.len() <= MAX_POINTS);
        // Ends are cut to whole milliseconds, never moved past the span.
        let g = grid(at(1000), at(1004) + Duration::from_nanos(300_999_999));
        assert_eq!(*g.last().unwrap(), ms(1_004_300));
    }

    #[test]
    fn the_key_counter_keeps_heavy_keys_and_says_when_it_dropped() {
        let mut c = KeyCounter::default();
        for _ in 0..3 {
            c.count(b"/registry/a");
        }
        c.count(b"/registry/b");
        let (top, exact) = c.top(1);
        assert!(exact);
        assert_eq!((top[0].key.as_str(), top[0].writes), ("/registry/a", 3));
        let mut c = KeyCounter::default();
        for i in 0..(KEY_COUNTER_CAP * 2) {
            c.count(format!("/registry/k{i}").as_bytes());
            c.count(b"/registry/hot");
        }
        let (top, exact) = c.top(1);
        assert!(!exact);
        assert_eq!(top[0].key, "/registry/hot");
    }
}
