//! One session: everything the store holds for one stream of observations — the MVCC
//! replica, the metric series, the informer lag, kube-apiserver's other etcd clusters and
//! storage flags — and the session's clock.
//!
//! In: [`Session::apply`] with [`Stamped`] observations in stream order, live or replayed
//! (the same code). Out: `&Session` for the views, `snapshot --json`, `verify` and the
//! recorder's checkpoints. Time is data: [`Session::now`] is the newest stamp applied, never
//! the system clock, so a replayed frame equals the live frame at the same point.
//!
//! The whole session serialises (serde; a recording's checkpoint is `postcard` of it), so a
//! replay that resumes from a checkpoint holds exactly what one played from the start holds.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::etcd_cluster::EtcdCluster;
use super::metrics::ScrapeDigest;
use super::notes::{Note, Notes};
use super::replica::checkpoint::{Image as ReplicaImage, Owned as ReplicaOwned};
use super::shared_bytes::since_format;
use super::{
    Found, InformerLag, MetricStore, NoteSummary, OtherClusters, Replica, ReplicaConfig, Summary,
};
use crate::model::{
    ApiserverFlags, Bytes, CompactionSource, Observation, Revision, ScrapeOutcome, ScrapeTarget,
    SessionInfo, Stamped,
};

/// What one [`Session::apply`] changed, so the console knows what to refresh, and what
/// the recorder writes beside the observation.
#[derive(Clone, Debug, Default)]
pub struct Applied {
    /// A scrape or informer observation arrived: the apiserver panels' data must be
    /// derived again.
    pub apiserver: bool,
    /// A scrape body's digest (handed in or made while applying): the recorder stores it
    /// beside the body ([`crate::record::Recorder::record_applied`]). Dropping it frees
    /// the digest when nothing else holds it (a replay hands it to its read-ahead thread).
    pub digest: Option<std::sync::Arc<ScrapeDigest>>,
}

/// What the reader of a stream already knows about an observation, so that applying it
/// does not work it out again: a recording's scrape digest, and the writers of its events
/// that a replay's read-ahead found while decoding (see [`super::WriterNames`]). The same
/// session results with or without them; live observations come with none
/// (`Prepared::default()`).
#[derive(Clone, Copy, Default)]
pub struct Prepared<'a> {
    pub digest: Option<&'a std::sync::Arc<ScrapeDigest>>,
    pub writers: Option<Found<'a>>,
}

/// What observations are applied to: a [`Session`], or a console that shows one (and
/// decides from each [`Applied`] what to draw again). Live sources and a replay's player
/// both apply through it, one observation at a time.
pub trait Applies {
    /// The session applied to.
    fn session_mut(&mut self) -> &mut Session;
    /// Applies `st` (see [`Session::apply_prepared`]).
    fn apply_prepared(&mut self, st: &Stamped, prepared: Prepared<'_>) -> Applied;
}

impl Applies for Session {
    fn session_mut(&mut self) -> &mut Session {
        self
    }

    fn apply_prepared(&mut self, st: &Stamped, prepared: Prepared<'_>) -> Applied {
        Session::apply_prepared(self, st, prepared)
    }
}

/// See the module docs.
pub struct Session {
    info: SessionInfo,
    /// The MVCC replica of the keyspace.
    pub replica: Replica,
    /// The etcd cluster the replica reads: connection, members, status, watch health.
    pub etcd: EtcdCluster,
    /// What happened to the stream that no key shows, oldest first.
    notes: Notes,
    pub metrics: MetricStore,
    pub informers: InformerLag,
    /// Newest stamp applied (`None` before the first observation).
    now: Option<SystemTime>,
    /// Observations applied since the session started: the position of the session in its
    /// stream (a replay's cursor is this count).
    applied: u64,
    /// kube-apiserver's other etcd clusters (`--etcd-servers-overrides`), as watched.
    pub other_clusters: OtherClusters,
    /// kube-apiserver's storage flags as found on the node, when they were.
    pub apiserver_flags: Option<ApiserverFlags>,
}

/// A session as a checkpoint holds it (written borrowed, read owned): the replica, the etcd
/// cluster's state and the notes as one record ([`super::replica::checkpoint`]), in the
/// order checkpoints have always had.
#[derive(Serialize)]
struct Image<'a> {
    info: &'a SessionInfo,
    replica: ReplicaImage<'a>,
    metrics: &'a MetricStore,
    informers: &'a InformerLag,
    now: Option<SystemTime>,
    applied: u64,
    other_clusters: &'a OtherClusters,
    apiserver_flags: &'a Option<ApiserverFlags>,
}

#[derive(Deserialize)]
struct Owned {
    info: SessionInfo,
    replica: ReplicaOwned,
    metrics: MetricStore,
    informers: InformerLag,
    now: Option<SystemTime>,
    applied: u64,
    #[serde(default, deserialize_with = "since_format::<6, _, _>")]
    other_clusters: OtherClusters,
    #[serde(default, deserialize_with = "since_format::<6, _, _>")]
    apiserver_flags: Option<ApiserverFlags>,
}

impl Session {
    /// An empty session for `info` (scrape targets it names are marked configured).
    pub fn new(info: SessionInfo) -> Session {
        let replica = Replica::new(ReplicaConfig {
            prefix: Bytes::from(info.prefix.clone().into_bytes()),
            history_budget: usize::try_from(info.history_budget).unwrap_or(usize::MAX),
            event_log_cap: usize::try_from(info.event_log_cap).unwrap_or(10_000),
            growth_cap: usize::try_from(info.growth_cap).unwrap_or(3_600),
            count_writers: true,
        });
        let mut metrics = MetricStore::new(usize::try_from(info.metric_retention).unwrap_or(720));
        for (t, src) in &info.scrape_targets {
            metrics.set_configured(*t, src);
        }
        Session {
            info,
            replica,
            etcd: EtcdCluster::default(),
            notes: Notes::default(),
            metrics,
            informers: InformerLag::default(),
            now: None,
            applied: 0,
            other_clusters: OtherClusters::default(),
            apiserver_flags: None,
        }
    }

    /// A session around a replica built elsewhere (tests and benchmarks build replicas
    /// from literal observations); `title` as the header shows it. The clock starts at
    /// the replica's newest observation.
    pub fn from_replica(replica: Replica, title: &str) -> Session {
        let info = SessionInfo {
            title: title.to_string(),
            prefix: String::from_utf8_lossy(replica.prefix()).into_owned(),
            ..SessionInfo::default()
        };
        let now = replica.last_observed();
        let mut s = Session::new(info);
        s.replica = replica;
        s.now = now;
        s
    }

    /// The same session under another header (`info`; tests and benchmarks build sessions
    /// from literal observations, then name them as a live one would be).
    pub fn with_info(mut self, info: SessionInfo) -> Session {
        self.info = info;
        self
    }

    /// What the session is about (its recorded header).
    pub fn info(&self) -> &SessionInfo {
        &self.info
    }

    /// Applies one observation to the replica, the metric series and the informer lag.
    ///
    /// An etcd scrape also tells the replica etcd's compacted revision
    /// (`etcd_debugging_mvcc_compact_revision`, mapped by the concept table), derived here
    /// from the recorded body rather than scraped twice.
    pub fn apply(&mut self, st: &Stamped) -> Applied {
        self.apply_prepared(st, Prepared::default())
    }

    /// As [`Session::apply`], with what the stream's reader already knows about `st`
    /// ([`Prepared`]): the same session as without it. The one way observations enter a
    /// session; each goes to the part that owns it.
    pub fn apply_prepared(&mut self, st: &Stamped, prepared: Prepared<'_>) -> Applied {
        let Prepared {
            digest,
            writers: found,
        } = prepared;
        self.applied += 1;
        if self.now.is_none_or(|n| st.at > n) {
            self.now = Some(st.at);
        }
        if matches!(st.obs, Observation::Tick) {
            // Time only: the store holds nothing new (and views need not redraw for it).
            self.replica.tick();
            return Applied::default();
        }
        match &st.obs {
            Observation::OtherCluster(o) => {
                self.other_clusters.apply(st.at, o);
                return Applied::default();
            }
            Observation::ApiserverFlags(f) => {
                self.apiserver_flags = Some(f.clone());
                return Applied {
                    apiserver: true,
                    ..Applied::default()
                };
            }
            _ => {}
        }
        // The etcd cluster's own observations, then the replica (which counts every
        // observation as applied), then what joins the two: a reset when etcd was replaced,
        // a replacement's new revision when the fresh list is done.
        match &st.obs {
            Observation::Conn(_)
            | Observation::Server { .. }
            | Observation::EtcdStatus(_)
            | Observation::Members(_) => self.etcd.apply(st, &mut self.notes),
            Observation::Note(n) => self.notes.push(st.at, Note::Text(n.clone())),
            _ => {}
        }
        self.replica
            .apply_observed(st, found, &mut self.etcd.watch, &mut self.notes);
        match &st.obs {
            Observation::Reset { reason } => {
                let line = self
                    .etcd
                    .replaced(st.at, reason, self.replica.revision())
                    .short();
                self.replica.reset(st.at, line);
                self.notes.push(st.at, Note::Text(reason.clone()));
            }
            Observation::ListDone { revision, .. } => {
                if let Some(r) = self.etcd.listed(*revision) {
                    let r = r.clone();
                    self.replica.relabel_reset(r.short());
                    self.notes.push(st.at, Note::Replaced(r));
                }
            }
            _ => {}
        }
        let mut out = Applied::default();
        let (scraped, digest) = self.metrics.apply_digested(st, digest);
        out.digest = digest;
        if scraped {
            out.apiserver = true;
            if let Observation::Scrape {
                target: ScrapeTarget::Etcd,
                outcome: ScrapeOutcome::Body { .. },
            } = &st.obs
            {
                if let Some(c) = self.metrics.etcd_compact_revision() {
                    if self.replica.compact_revision().is_none_or(|r| r < c) {
                        self.replica
                            .compaction_seen(c, CompactionSource::Metrics, st.at);
                    }
                }
            }
        }
        if self.informers.apply(st, &self.replica) {
            out.apiserver = true;
        }
        out
    }

    /// Whether what applying lets go of (event-log copies, dropped history) is kept for [`Session::take_discarded`] instead of freed in place. A replay
    /// turns it on and frees on its read-ahead thread; live, freeing in place is cheap.
    pub fn defer_frees(&mut self, on: bool) {
        self.replica.defer_frees(on);
    }

    /// What was let go of since the last call while deferring (empty otherwise).
    pub fn take_discarded(&mut self) -> Discarded {
        Discarded {
            bytes: self.replica.take_discards(),
            digests: Vec::new(),
        }
    }

    /// The session's clock: the newest observation's stamp (live) or the replay cursor's;
    /// the session's start before anything arrived.
    pub fn now(&self) -> SystemTime {
        self.now.unwrap_or(self.info.started_at)
    }

    /// Observations applied so far.
    pub fn applied(&self) -> u64 {
        self.applied
    }

    /// The replica's applied revision.
    pub fn revision(&self) -> Revision {
        self.replica.revision()
    }

    /// The session serialised for a checkpoint (`postcard`; values stay as they are, so a
    /// checkpoint is about the size of the keys and values held).
    ///
    /// Errors: only if serde fails, which the types here cannot make it do.
    pub fn to_checkpoint(&self) -> Result<Vec<u8>, postcard::Error> {
        postcard::to_stdvec(&Image {
            info: &self.info,
            replica: ReplicaImage::of(&self.replica, &self.etcd, &self.notes),
            metrics: &self.metrics,
            informers: &self.informers,
            now: self.now,
            applied: self.applied,
            other_clusters: &self.other_clusters,
            apiserver_flags: &self.apiserver_flags,
        })
    }

    /// A session restored from [`Session::to_checkpoint`]'s bytes, written in checkpoint
    /// format `format` ([`super::CHECKPOINT_FORMAT`] now; 1 is still read). Values are not
    /// copied: they are slices of `state`, which stays allocated while any of them lives
    /// (see [`super::shared_bytes`]).
    ///
    /// Errors: bytes that are not a checkpoint of that format, or whose parts disagree.
    pub fn from_checkpoint(state: &Bytes, format: u32) -> Result<Session, String> {
        let o: Owned =
            super::shared_bytes::restore_from(state, format, |b| postcard::from_bytes(b))
                .map_err(|e| e.to_string())?;
        let (mut replica, etcd, notes) = o.replica.into_parts();
        replica.restored()?;
        Ok(Session {
            info: o.info,
            replica,
            etcd,
            notes,
            metrics: o.metrics,
            informers: o.informers,
            now: o.now,
            applied: o.applied,
            other_clusters: o.other_clusters,
            apiserver_flags: o.apiserver_flags,
        })
    }

    /// Notes for the event log and the replay markers (resyncs, failovers, alarms, etcd
    /// replaced), oldest first (the newest 200).
    pub fn notes(&self) -> &std::collections::VecDeque<(SystemTime, Note)> {
        self.notes.lines()
    }

    /// The revision the replica is known to be as new as, for lag: its applied revision,
    /// or a head etcd announced and then confirmed by a second progress notification with
    /// no event between them (nothing of the prefix was pending: the revisions between were
    /// written elsewhere in etcd). On etcds whose progress may run ahead of events
    /// (etcd-io/etcd#15220) those events arrive right after it, before the next progress.
    /// Never applied: the replica's state stays the one at [`Replica::revision`].
    pub fn synced_revision(&self) -> Revision {
        self.replica
            .revision()
            .max(self.etcd.watch_health().quiet_through)
    }

    /// The summary printed by `snapshot --json`: the replica's, with the etcd cluster's
    /// replacements, connection, watch health, Status answer and members.
    pub fn summary(&self) -> Summary {
        let mut s = self.replica.summary();
        let e = &self.etcd;
        s.replacements = e.replacements().to_vec();
        s.connection = e.connection_summary();
        s.watch = e.watch_health().clone();
        s.etcd_status = e.etcd_status().map(|(_, s)| s.clone());
        s.members = e.members().map(|(_, m)| m.clone()).unwrap_or_default();
        s.notes = self
            .notes()
            .iter()
            .map(|(at, n)| NoteSummary {
                at: *at,
                kind: n.kind(),
                text: n.to_string(),
            })
            .collect();
        s
    }

    /// Brings derived orders up to date (see [`Replica::settle`]): call before ranges over
    /// keys are drawn or a checkpoint is written.
    pub fn settle(&mut self) {
        self.replica.settle();
    }
}

/// What a session let go of since the last [`Session::take_discarded`]: for
/// the caller to drop wherever suits it. Holding it keeps the memory; dropping it frees.
#[derive(Debug, Default)]
pub struct Discarded {
    /// Keys and values (raw or packed).
    pub bytes: Vec<Bytes>,
    /// Scrape digests that applies handed back ([`Applied::digest`]) and the caller let go
    /// of (a replay's player adds them; the session keeps none).
    pub digests: Vec<std::sync::Arc<ScrapeDigest>>,
}

impl Discarded {
    /// Nothing held.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty() && self.digests.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EventKind, KeyValue, WatchEvent};
    use crate::store::CHECKPOINT_FORMAT;
    use std::time::Duration;

    fn at(s: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + s)
    }

    fn kv(k: &str, rev: i64, v: &str) -> KeyValue {
        KeyValue {
            key: Bytes::from(k.to_string()),
            create_revision: 2,
            mod_revision: rev,
            version: rev - 1,
            lease: 0,
            value: Bytes::from(v.to_string()),
        }
    }

    fn stream() -> Vec<Stamped> {
        let mut v = vec![
            Stamped {
                at: at(0),
                obs: Observation::ListBegin { revision: 2 },
            },
            Stamped {
                at: at(0),
                obs: Observation::ListPage {
                    kvs: vec![kv("/registry/pods/a/p", 2, "x")],
                },
            },
            Stamped {
                at: at(0),
                obs: Observation::ListDone {
                    revision: 2,
                    compacted: None,
                },
            },
            Stamped {
                at: at(1),
                obs: Observation::Members(vec![crate::model::MemberStatus {
                    id: 7,
                    name: "m0".into(),
                    endpoint: "http://127.0.0.1:2379".into(),
                    is_learner: false,
                    status: Some(crate::model::EtcdStatus {
                        member_id: 7,
                        leader: 7,
                        raft_term: 2,
                        raft_index: 40,
                        ..Default::default()
                    }),
                    error: None,
                }]),
            },
        ];
        for r in 3..40 {
            v.push(Stamped {
                at: at(r as u64),
                obs: Observation::Events {
                    revision: r,
                    events: vec![WatchEvent {
                        kind: EventKind::Put,
                        kv: kv("/registry/pods/a/p", r, &format!("v{r}")),
                        prev_kv: None,
                    }],
                },
            });
        }
        v
    }

    #[test]
    fn clock_is_the_newest_stamp() {
        let mut s = Session::new(SessionInfo {
            started_at: at(0),
            ..Default::default()
        });
        assert_eq!(s.now(), at(0));
        for st in stream() {
            s.apply(&st);
        }
        assert_eq!(s.now(), at(39));
        // A stamp from the past (a metrics file) does not move the clock back.
        s.apply(&Stamped {
            at: at(5),
            obs: Observation::Tick,
        });
        assert_eq!(s.now(), at(39));
        assert_eq!(s.applied(), 42);
    }

    #[test]
    fn checkpoint_then_the_rest_equals_the_whole_stream() {
        let all = stream();
        let mut whole = Session::new(SessionInfo::default());
        for st in &all {
            whole.apply(st);
        }
        let mut half = Session::new(SessionInfo::default());
        for st in &all[..20] {
            half.apply(st);
        }
        let mut resumed =
            Session::from_checkpoint(&half.to_checkpoint().unwrap().into(), CHECKPOINT_FORMAT)
                .unwrap();
        for st in &all[20..] {
            resumed.apply(st);
        }
        assert_eq!(
            whole.to_checkpoint().unwrap(),
            resumed.to_checkpoint().unwrap()
        );
        assert_eq!(resumed.revision(), 39);
        assert_eq!(resumed.now(), whole.now());
        // The members polled before the checkpoint came through it (format 4).
        let (_, members) = resumed.etcd.members().expect("members restored");
        assert_eq!(members[0].name, "m0");
    }
}
