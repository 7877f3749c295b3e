//! Markers: the moments of a recording worth jumping to (compactions, watch anomalies,
//! relists after a gap, resets, failovers, alarms and member changes, lost connections,
//! 410 Gone, failed scrapes, and etcd p99 latency or informer lag crossing a threshold),
//! each of a [`MarkerKind`]. A [`MarkerScan`] looks at each observation just after the
//! session applied it; [`Player::markers`](super::Player::markers) runs one over a whole
//! recording, and `replay --check` runs one in the same pass that counts the recording.
//! [`Player::complete_markers`](super::Player::complete_markers) adds what no observation
//! makes: what damaged frames lost, and the user's bookmarks (see [`super::bookmarks`]).

use std::time::SystemTime;

use crate::model::{
    ConnState, InformerWhat, Observation, Revision, ScrapeOutcome, ScrapeTarget, Stamped,
};
use crate::store::Session;

/// What a marker is about. The names ([`MarkerKind::name`], the same in JSON) are a
/// stable surface: `export` writes them and reports group by them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkerKind {
    /// etcd compacted its history (however learned: `compact_rev_key`, a cancelled
    /// watch, etcd's metrics).
    Compaction,
    /// A relist after the watch fell behind a compaction: the revisions in between were
    /// never seen one by one.
    Gap,
    /// An informer was answered 410 Gone.
    Gone,
    /// The session's history was reset (etcd replaced by another cluster).
    Reset,
    /// etcd stopped answering, the watch is reconnecting, or the source failed.
    ConnectionLost,
    /// Watching again after a lost connection.
    ConnectionRestored,
    /// The client moved to another etcd endpoint.
    Failover,
    /// A member or leader change seen by the member polls.
    Member,
    /// An etcd alarm was raised or cleared.
    Alarm,
    /// One of kube-apiserver's other etcd clusters became unreachable or reachable.
    OtherCluster,
    /// A `/metrics` scrape failed.
    ScrapeFailed,
    /// etcd's request p99 latency or an informer's lag crossed its threshold upwards.
    Threshold,
    /// A departure from etcd's watch contract (see `store::WatchHealth`).
    WatchAnomaly,
    /// What a damaged stretch of the file lost.
    Damage,
    /// A bookmark the user added in a replay.
    Bookmark,
}

impl MarkerKind {
    /// Every kind, in declaration order.
    pub const ALL: [MarkerKind; 15] = [
        MarkerKind::Compaction,
        MarkerKind::Gap,
        MarkerKind::Gone,
        MarkerKind::Reset,
        MarkerKind::ConnectionLost,
        MarkerKind::ConnectionRestored,
        MarkerKind::Failover,
        MarkerKind::Member,
        MarkerKind::Alarm,
        MarkerKind::OtherCluster,
        MarkerKind::ScrapeFailed,
        MarkerKind::Threshold,
        MarkerKind::WatchAnomaly,
        MarkerKind::Damage,
        MarkerKind::Bookmark,
    ];

    /// The snake_case name, as serde writes it: `compaction`, `connection_lost`, …
    pub fn name(self) -> &'static str {
        match self {
            MarkerKind::Compaction => "compaction",
            MarkerKind::Gap => "gap",
            MarkerKind::Gone => "gone",
            MarkerKind::Reset => "reset",
            MarkerKind::ConnectionLost => "connection_lost",
            MarkerKind::ConnectionRestored => "connection_restored",
            MarkerKind::Failover => "failover",
            MarkerKind::Member => "member",
            MarkerKind::Alarm => "alarm",
            MarkerKind::OtherCluster => "other_cluster",
            MarkerKind::ScrapeFailed => "scrape_failed",
            MarkerKind::Threshold => "threshold",
            MarkerKind::WatchAnomaly => "watch_anomaly",
            MarkerKind::Damage => "damage",
            MarkerKind::Bookmark => "bookmark",
        }
    }

    /// How much a marker of this kind asks for attention, for showing the worst of
    /// several in one place: 3 something was lost or broken (a gap, 410 Gone, a reset, a
    /// lost connection, damage, an alarm), 2 a warning (a threshold crossed, a failed
    /// scrape, a watch anomaly, a failover, a member change, another etcd cluster), 1 the
    /// user's own bookmark, 0 information (a compaction, a connection restored).
    pub fn severity(self) -> u8 {
        match self {
            MarkerKind::Gap
            | MarkerKind::Gone
            | MarkerKind::Reset
            | MarkerKind::ConnectionLost
            | MarkerKind::Damage
            | MarkerKind::Alarm => 3,
            MarkerKind::Threshold
            | MarkerKind::ScrapeFailed
            | MarkerKind::WatchAnomaly
            | MarkerKind::Failover
            | MarkerKind::Member
            | MarkerKind::OtherCluster => 2,
            MarkerKind::Bookmark => 1,
            MarkerKind::Compaction | MarkerKind::ConnectionRestored => 0,
        }
    }
}

impl std::fmt::Display for MarkerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Something worth jumping to in a recording.
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    /// The position just after the observation that made it (a bookmark: just after the
    /// first observation stamped at or after it; damage: where the lost frame was).
    pub position: u64,
    pub at: SystemTime,
    pub kind: MarkerKind,
    /// The session's revision when the marker was made (damage: the highest known where
    /// the lost frame starts; a bookmark: as the user saw it).
    pub revision: Revision,
    /// One line: "compaction at revision 1,200", "410 Gone: events", …
    pub label: String,
}

/// Finds the markers of a recording while it is played (see
/// [`Player::markers`](super::Player::markers)), so a caller that reads the whole file
/// anyway (`replay --check`) reads it once.
pub struct MarkerScan {
    out: Vec<Marker>,
    p99_threshold: f64,
    lag_threshold: f64,
    compacted: Option<Revision>,
    /// Whether an etcd scrape body was applied since the scan began.
    etcd_scraped: bool,
    conn_bad: bool,
    scrape_bad: [bool; ScrapeTarget::ALL.len()],
    p99_high: bool,
    /// The informers (group, resource) whose lag is over the threshold: one marker when
    /// a resource's lag goes over, none again until it has gone back under.
    lag_high: std::collections::HashSet<(String, String)>,
    /// etcd's alarms as last seen, and the watch anomalies counted so far.
    alarms: Vec<String>,
    anomalies: u64,
    /// The replica's newest note as of the previous observation (stamp and text).
    last_note: Option<(std::time::SystemTime, crate::store::Note)>,
    /// The etcd members as last polled.
    members: Vec<crate::model::MemberStatus>,
    /// kube-apiserver's other etcd clusters that are down (by their resources).
    others_down: Vec<String>,
}

impl MarkerScan {
    /// A scan starting at `session`; thresholds in seconds (etcd p99, informer lag).
    pub fn new(session: &Session, p99_threshold: f64, lag_threshold: f64) -> MarkerScan {
        MarkerScan {
            out: Vec::new(),
            p99_threshold,
            lag_threshold,
            compacted: session.replica.compact_revision(),
            etcd_scraped: false,
            conn_bad: false,
            scrape_bad: [false; ScrapeTarget::ALL.len()],
            p99_high: false,
            lag_high: std::collections::HashSet::new(),
            alarms: session
                .etcd
                .etcd_status()
                .map(|(_, s)| s.alarms())
                .unwrap_or_default(),
            anomalies: session.etcd.watch_health().anomalies(),
            last_note: session.notes().back().cloned(),
            members: session
                .etcd
                .members()
                .map(|(_, m)| m.clone())
                .unwrap_or_default(),
            others_down: session
                .other_clusters
                .all()
                .iter()
                .filter(|c| !c.up)
                .map(|c| c.resources.clone())
                .collect(),
        }
    }

    /// Looks at one observation just applied to `s`; `pos` is the position after it.
    pub fn observe(&mut self, s: &Session, st: &Stamped, pos: u64) {
        let revision = s.revision();
        let mut mark = |kind: MarkerKind, label: String| {
            self.out.push(Marker {
                position: pos,
                at: st.at,
                kind,
                revision,
                label,
            })
        };
        // Compactions however learned (compact_rev_key, a cancelled watch, etcd's
        // metrics derived in the session).
        // What etcd had compacted before the recording looked is state, not a moment of
        // the recording: the first compaction known at all, when a list (compact_rev_key
        // read with it) or the recording's first etcd scrape (its compacted revision) is
        // what told.
        let first_etcd_scrape = !self.etcd_scraped
            && matches!(
                &st.obs,
                Observation::Scrape {
                    target: ScrapeTarget::Etcd,
                    outcome: ScrapeOutcome::Body { .. },
                }
            );
        let c = s.replica.compact_revision();
        if c > self.compacted {
            let known_before =
                self.compacted.is_none() && (first_etcd_scrape || s.replica.listing().is_some());
            if let (Some(rev), Some(seen), false) =
                (c, s.replica.compactions().back(), known_before)
            {
                mark(
                    MarkerKind::Compaction,
                    format!("compaction at revision {rev} ({})", seen.source),
                );
            }
            self.compacted = c;
        }
        self.etcd_scraped |= first_etcd_scrape;
        // Departures from etcd's watch contract (see `WatchHealth`), with the replica's note.
        // The replica notes the 1st, 10th, 100th, … of a kind (the count in between only
        // grows): a marker for each anomaly noted by this observation, not one per anomaly
        // repeating an older note. A checkpoint restored after damage may count fewer.
        let anomalies = s.etcd.watch_health().anomalies();
        let note = s.notes().back();
        if anomalies > self.anomalies && note.is_some() && note != self.last_note.as_ref() {
            let why = note.map_or(String::new(), |(_, n)| n.to_string());
            mark(MarkerKind::WatchAnomaly, format!("watch anomaly: {why}"));
        }
        if note != self.last_note.as_ref() {
            self.last_note = note.cloned();
        }
        self.anomalies = anomalies;
        match &st.obs {
            Observation::OtherCluster(o) => {
                let c = s
                    .other_clusters
                    .all()
                    .iter()
                    .find(|c| c.resources == o.resources);
                let was_down = self.others_down.contains(&o.resources);
                match c {
                    Some(c) if !c.up && !was_down => {
                        let why = c.error.as_deref().unwrap_or("");
                        mark(
                            MarkerKind::OtherCluster,
                            format!("etcd for {} unreachable: {why}", c.resources),
                        );
                        self.others_down.push(c.resources.clone());
                    }
                    Some(c) if c.up && was_down => {
                        mark(
                            MarkerKind::OtherCluster,
                            format!("etcd for {} reachable again", c.resources),
                        );
                        self.others_down.retain(|r| *r != c.resources);
                    }
                    _ => {}
                }
            }
            Observation::Members(now) => {
                for note in crate::store::member_changes(&self.members, now) {
                    mark(MarkerKind::Member, note.to_string());
                }
                self.members.clone_from(now);
            }
            Observation::EtcdStatus(status) => {
                let alarms = status.alarms();
                if alarms != self.alarms {
                    mark(
                        MarkerKind::Alarm,
                        if alarms.is_empty() {
                            format!("etcd alarms cleared ({})", self.alarms.join(", "))
                        } else {
                            format!("etcd alarm {}", alarms.join(", "))
                        },
                    );
                    self.alarms = alarms;
                }
            }
            Observation::ListDone {
                revision,
                compacted: Some(c),
            } => mark(
                MarkerKind::Gap,
                format!("relist at revision {revision} after compaction at {c} (gap)"),
            ),
            Observation::Reset { reason } => {
                mark(MarkerKind::Reset, format!("history reset: {reason}"))
            }
            Observation::Server { endpoint, .. }
                if s.etcd
                    .failovers()
                    .back()
                    .is_some_and(|(at, _, to)| *at == st.at && to == endpoint) =>
            {
                mark(MarkerKind::Failover, format!("failover to {endpoint}"));
            }
            Observation::Conn(c) => {
                let bad = matches!(
                    c,
                    ConnState::NotResponding { .. }
                        | ConnState::Reconnecting { .. }
                        | ConnState::Failed { .. }
                );
                if bad && !self.conn_bad {
                    mark(
                        MarkerKind::ConnectionLost,
                        match c {
                            ConnState::NotResponding { .. } => "etcd not responding".into(),
                            ConnState::Reconnecting { error, .. } => {
                                format!("connection lost: {error}")
                            }
                            ConnState::Failed { error } => format!("source failed: {error}"),
                            _ => String::new(),
                        },
                    );
                } else if !bad && self.conn_bad && *c == ConnState::Watching {
                    mark(MarkerKind::ConnectionRestored, "connection restored".into());
                }
                if bad || *c == ConnState::Watching {
                    self.conn_bad = bad;
                }
            }
            Observation::Informer(i) => {
                if let InformerWhat::Gone { .. } = i.what {
                    mark(
                        MarkerKind::Gone,
                        format!("410 Gone: informer {}", i.resource),
                    );
                }
                if let Some(lag) = s
                    .informers
                    .get(&i.group, &i.resource)
                    .and_then(|x| x.lag_seconds)
                {
                    let key = (i.group.clone(), i.resource.clone());
                    if lag <= self.lag_threshold {
                        self.lag_high.remove(&key);
                    } else if self.lag_high.insert(key) {
                        mark(
                            MarkerKind::Threshold,
                            format!(
                                "informer lag over {}s: {} {}s",
                                self.lag_threshold,
                                i.resource,
                                over(lag, self.lag_threshold, lag_decimals(lag))
                            ),
                        );
                    }
                }
            }
            Observation::Scrape { target, outcome } => {
                let bad = matches!(outcome, ScrapeOutcome::Failed { .. });
                let slot = &mut self.scrape_bad[*target as usize];
                if bad && !*slot {
                    if let ScrapeOutcome::Failed { error, .. } = outcome {
                        mark(
                            MarkerKind::ScrapeFailed,
                            format!("{} scrape failed: {error}", target.label()),
                        );
                    }
                }
                *slot = bad;
                if *target == ScrapeTarget::Apiserver && !bad {
                    if let Some((row, p99)) = worst_etcd_p99(s) {
                        let high = p99 > self.p99_threshold;
                        if high && !self.p99_high {
                            mark(
                                MarkerKind::Threshold,
                                format!(
                                    "etcd p99 over {}s: {row} {}s",
                                    self.p99_threshold,
                                    over(p99, self.p99_threshold, 3)
                                ),
                            );
                        }
                        self.p99_high = high;
                    }
                }
            }
            _ => {}
        }
    }

    /// The markers found, in recorded order.
    pub fn markers(self) -> Vec<Marker> {
        self.out
    }
}

/// The decimals an informer lag of `lag` seconds is shown with: one from a second up,
/// else three significant digits (0.0123 → 4).
fn lag_decimals(lag: f64) -> usize {
    if lag >= 1.0 || lag <= 0.0 || !lag.is_finite() {
        1
    } else {
        // 0.5 → 3, 0.05 → 4; capped so a vanishing lag stays one short word.
        (2 - lag.log10().floor() as i64).clamp(1, 12) as usize
    }
}

/// `value` (over `threshold`) with at least `decimals` decimals, and more while the
/// rounded text would not read as over the threshold (a lag of 1.04 over 1 → "1.04").
fn over(value: f64, threshold: f64, decimals: usize) -> String {
    let mut d = decimals;
    loop {
        let text = format!("{value:.d$}");
        if d >= 12 || text.parse::<f64>().is_ok_and(|shown| shown > threshold) {
            return text;
        }
        d += 1;
    }
}

/// The worst `etcd_request_duration_seconds` p99 over the last scrape interval, with its
/// operation and resource: the worst sample of the derived signal
/// `etcd_request_p99_seconds`, as the report charts it, read without the other signals.
fn worst_etcd_p99(s: &Session) -> Option<(String, f64)> {
    crate::derive::signals::worst_etcd_request_p99(s)
        .map(|x| (format!("{} {}", x.labels[0], x.labels[2]), x.value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CompactionSource, KeyValue, SessionInfo};
    use std::time::Duration;

    fn play(s: &mut Session, scan: &mut MarkerScan, obs: Vec<Observation>) {
        for (i, obs) in obs.into_iter().enumerate() {
            let st = Stamped {
                at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_000 + i as u64),
                obs,
            };
            s.apply(&st);
            scan.observe(s, &st, i as u64 + 1);
        }
    }

    #[test]
    fn the_worst_etcd_p99_is_the_signal_tables_worst_at_every_apiserver_scrape() {
        // The demo recording's real apiserver scrapes: the narrow read names the same
        // sample as the whole table, ties included (several rows at the worst value), so
        // the threshold markers' labels are the same.
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings/demo.rgs");
        let mut p = crate::record::Player::open(&file).expect("recordings/demo.rgs");
        p.set_bodies(false);
        let mut s = p.seek(crate::record::Target::Position(0));
        let (mut scrapes, mut known, mut ties) = (0, 0, 0);
        p.advance(&mut s, crate::record::Target::End, u64::MAX, |s, st, _| {
            if !matches!(
                st.obs,
                Observation::Scrape {
                    target: ScrapeTarget::Apiserver,
                    ..
                }
            ) {
                return;
            }
            scrapes += 1;
            let all = crate::derive::signals::read(s);
            let whole = all
                .get("etcd_request_p99_seconds")
                .iter()
                .max_by(|a, b| a.value.total_cmp(&b.value))
                .cloned();
            let narrow = crate::derive::signals::worst_etcd_request_p99(s);
            known += usize::from(narrow.is_some());
            let top = whole.as_ref().map_or(0, |w| {
                let same = all.get("etcd_request_p99_seconds").iter();
                same.filter(|x| x.value == w.value).count()
            });
            ties += usize::from(top > 1);
            assert_eq!(narrow, whole, "at {:?}", st.at);
        });
        assert!(
            scrapes > 10 && known > 10,
            "{scrapes} scrapes, {known} with a p99"
        );
        assert!(
            ties > 0,
            "the demo has a scrape whose worst p99 several rows share"
        );
    }

    #[test]
    fn every_scrape_target_failing_is_one_marker_each() {
        // The controllers' targets too (a recording from before them has none; one
        // after them must not panic on their index).
        let mut s = Session::new(SessionInfo::default());
        let mut scan = MarkerScan::new(&s, 1.0, 10.0);
        let failed = |target| Observation::Scrape {
            target,
            outcome: ScrapeOutcome::Failed {
                source: "https://127.0.0.1:10257/metrics".into(),
                error: "connection refused".into(),
            },
        };
        let obs: Vec<Observation> = ScrapeTarget::ALL
            .iter()
            .flat_map(|t| [failed(*t), failed(*t)])
            .collect();
        play(&mut s, &mut scan, obs);
        let labels: Vec<String> = scan
            .markers()
            .iter()
            .filter(|m| m.kind == MarkerKind::ScrapeFailed)
            .map(|m| m.label.clone())
            .collect();
        assert_eq!(labels.len(), ScrapeTarget::ALL.len(), "{labels:?}");
        assert!(
            labels
                .iter()
                .any(|l| l.starts_with("controller-manager scrape failed")),
            "{labels:?}"
        );
        assert!(
            labels
                .iter()
                .any(|l| l.starts_with("scheduler scrape failed")),
            "{labels:?}"
        );
    }

    #[test]
    fn kind_names_are_serdes_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for k in MarkerKind::ALL {
            let json = serde_json::to_value(k).unwrap();
            assert_eq!(json, serde_json::json!(k.name()), "{k:?}");
            assert_eq!(k.to_string(), k.name());
            assert!(seen.insert(k.name()), "{k:?} twice");
            assert!(k.severity() <= 3);
        }
        assert_eq!(MarkerKind::ConnectionLost.name(), "connection_lost");
        assert_eq!(MarkerKind::OtherCluster.name(), "other_cluster");
        assert_eq!(MarkerKind::WatchAnomaly.name(), "watch_anomaly");
        assert!(MarkerKind::Gap.severity() > MarkerKind::Threshold.severity());
        assert!(MarkerKind::Threshold.severity() > MarkerKind::Bookmark.severity());
        assert!(MarkerKind::Bookmark.severity() > MarkerKind::Compaction.severity());
    }

    #[test]
    fn a_compaction_older_than_the_recording_is_no_marker_and_a_new_one_is() {
        let mut s = Session::new(SessionInfo::default());
        let mut scan = MarkerScan::new(&s, 1.0, 10.0);
        let kv = KeyValue::joined(b"/registry/configmaps/default/a", 40, 40, 1, 0, b"x");
        let compacted = |revision| Observation::Compacted {
            revision,
            source: CompactionSource::CompactRevKey,
        };
        play(
            &mut s,
            &mut scan,
            vec![
                Observation::ListBegin { revision: 50 },
                Observation::ListPage { kvs: vec![kv] },
                // As the etcd source sends compact_rev_key read at the list's revision.
                compacted(31),
                Observation::ListDone {
                    revision: 50,
                    compacted: None,
                },
            ],
        );
        assert_eq!(s.replica.compact_revision(), Some(31));
        assert!(scan.out.is_empty(), "{:?}", scan.out);
        // Compacted again while the recording runs: a moment worth jumping to.
        play(&mut s, &mut scan, vec![compacted(45)]);
        let marks = scan.markers();
        let labels: Vec<_> = marks.iter().map(|m| m.label.clone()).collect();
        assert_eq!(
            labels,
            vec!["compaction at revision 45 (compact_rev_key)".to_string()]
        );
        assert_eq!(marks[0].kind, MarkerKind::Compaction);
        assert_eq!(
            marks[0].revision, 50,
            "the session's revision when it was made"
        );
    }

    #[test]
    fn repeated_anomalies_mark_each_note_once() {
        let mut s = Session::new(SessionInfo::default());
        let mut scan = MarkerScan::new(&s, 1.0, 10.0);
        let kv = |rev| KeyValue::joined(b"/registry/configmaps/default/a", 1, rev, 1, 0, b"x");
        let event = |rev| Observation::Events {
            revision: rev,
            events: vec![crate::model::WatchEvent {
                kind: crate::model::EventKind::Put,
                kv: kv(rev),
                prev_kv: None,
            }],
        };
        let mut obs = vec![
            Observation::ListBegin { revision: 5 },
            Observation::ListPage { kvs: vec![kv(5)] },
            Observation::ListDone {
                revision: 5,
                compacted: None,
            },
            event(6),
        ];
        // The same event 15 times: anomalies 1 to 15, noted at the 1st and the 10th.
        obs.extend((0..15).map(|_| event(6)));
        play(&mut s, &mut scan, obs);
        assert_eq!(s.etcd.watch_health().anomalies(), 15);
        let labels: Vec<_> = scan.markers().into_iter().map(|m| m.label).collect();
        assert_eq!(labels.len(), 2, "{labels:?}");
        assert!(labels[0].contains("(1 so far)"), "{labels:?}");
        assert!(labels[1].contains("(10 so far)"), "{labels:?}");
    }

    #[test]
    fn lag_over_the_threshold_marks_once_per_resource_until_it_goes_back_under() {
        let mut s = Session::new(SessionInfo::default());
        let mut scan = MarkerScan::new(&s, 1.0, 0.5);
        let kv = |rev| KeyValue::joined(b"/registry/configmaps/default/a", 1, rev, 1, 0, b"x");
        let informer = |resource: &str, rv| {
            Observation::Informer(crate::model::InformerObs {
                group: String::new(),
                resource: resource.into(),
                what: InformerWhat::Event {
                    resource_version: rv,
                    bookmark: false,
                },
            })
        };
        play(
            &mut s,
            &mut scan,
            vec![
                Observation::ListBegin { revision: 5 },
                Observation::ListPage { kvs: vec![kv(5)] },
                Observation::ListDone {
                    revision: 5,
                    compacted: None,
                },
                // Revision 6 written at second 1003; informers at 5 lag from then on.
                Observation::Events {
                    revision: 6,
                    events: vec![crate::model::WatchEvent {
                        kind: crate::model::EventKind::Put,
                        kv: kv(6),
                        prev_kv: None,
                    }],
                },
                informer("pods", 5),   // 1 s behind: over
                informer("pods", 5),   // still over: no second marker
                informer("events", 6), // another informer, caught up
                informer("pods", 5),   // still over: no marker (it was one before)
                informer("pods", 6),   // back under
                informer("pods", 5),   // over again: a marker
                informer("events", 5), // another informer over: its own marker
            ],
        );
        let labels: Vec<_> = scan.markers().into_iter().map(|m| m.label).collect();
        assert_eq!(
            labels,
            [
                "informer lag over 0.5s: pods 1.0s",
                "informer lag over 0.5s: pods 6.0s",
                "informer lag over 0.5s: events 7.0s",
            ],
        );
    }

    #[test]
    fn a_value_over_a_threshold_is_shown_with_the_digits_that_tell() {
        // Informer lags: one decimal from a second up, three significant digits below.
        assert_eq!(over(7.04, 1.0, lag_decimals(7.04)), "7.0");
        assert_eq!(over(0.0123, 0.001, lag_decimals(0.0123)), "0.0123");
        assert_eq!(over(0.4567, 0.001, lag_decimals(0.4567)), "0.457");
        // Rounding would hide the crossing: more digits.
        assert_eq!(over(1.04, 1.0, lag_decimals(1.04)), "1.04");
        assert_eq!(over(0.0010004, 0.001, lag_decimals(0.0010004)), "0.0010004");
        // etcd p99: three decimals at least.
        assert_eq!(over(1.4851, 1.0, 3), "1.485");
        assert_eq!(over(0.00123, 0.001, 3), "0.0012");
    }
}
