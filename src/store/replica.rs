//! The MVCC replica: every version of every key seen under the prefix, with tombstones, back
//! to etcd's compacted revision or until the history budget drops the oldest history.
//!
//! Model (etcd MVCC, v3.4+): one global revision; each key has create_revision,
//! mod_revision, version and lease; a delete leaves a tombstone at the deleting revision;
//! compaction at revision C discards every version superseded at or before C and every key
//! whose newest version at C is a tombstone.
//!
//! Memory: keys live in a [`Keyspace`] (a slab with a hash table and a lazily settled key
//! order); each version holds its value as received until a worker thread packs it with
//! zstd ([`super::packing`]), and views get values back whole. History (superseded
//! versions and tombstones) is charged against `history_budget` at its raw size, so what
//! the budget keeps does not depend on how far packing got; the newest version of every
//! live key is never dropped.

use std::collections::{HashMap, VecDeque};
use std::ops::Bound;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::keyspace::Slot;
use super::keystore::{KeyEntry, KeyStore, Queued, Version, VERSION_OVERHEAD};
use super::list_progress::ListProgress;
use super::packing::{self, Codebook, Val};
use super::stats::{Growth, GrowthSample, ResourceStats, ResourceSummary};
use super::writers::{WriterStats, WriterSummary, Writers};
use crate::model::{
    escape_bytes, CompactionSeen, CompactionSource, ConnState, EtcdStatus, EventKind, Gap, KeyPath,
    KeyValue, MemberStatus, Observation, Revision, Stamped, WatchEvent,
};

/// Default history budget: 256 MiB of superseded values and tombstones.
pub const DEFAULT_HISTORY_BUDGET: usize = 256 << 20;

/// Most revision→time entries kept (10 a second at most: about 27 hours).
const REV_TIMES_CAP: usize = 1_000_000;

/// Settings for a [`Replica`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplicaConfig {
    /// The watched prefix without trailing slash, e.g. `/registry`.
    pub prefix: Bytes,
    /// Bytes of history (superseded versions, tombstones) to keep at most.
    pub history_budget: usize,
    /// Events kept for the live event stream.
    pub event_log_cap: usize,
    /// Seconds of revision-growth samples kept.
    pub growth_cap: usize,
    /// Attribute each watch event to its managedFields writer ([`Replica::writers`]). On by
    /// default; a session that only compares keys can leave it off. Not in checkpoints: a
    /// restored replica counts.
    #[serde(skip, default = "counting_writers")]
    pub count_writers: bool,
}

fn counting_writers() -> bool {
    true
}

impl Default for ReplicaConfig {
    fn default() -> Self {
        Self {
            prefix: Bytes::from_static(b"/registry"),
            history_budget: DEFAULT_HISTORY_BUDGET,
            event_log_cap: 10_000,
            growth_cap: 3_600,
            count_writers: true,
        }
    }
}

/// A version of a key as views and the CLI see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionView {
    pub create_revision: Revision,
    pub mod_revision: Revision,
    pub version: i64,
    pub lease: i64,
    /// `None` for a tombstone.
    pub value: Option<Bytes>,
}

/// A version without its value unpacked: what listings need (sizes, and the leading bytes
/// that tell plaintext from encrypted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionMeta<'a> {
    pub create_revision: Revision,
    pub mod_revision: Revision,
    pub version: i64,
    pub lease: i64,
    /// Length of the value in bytes; `None` for a tombstone.
    pub size: Option<usize>,
    /// The value when it is held as etcd sent it; `None` when it is held packed (values
    /// encrypted at rest never are: every packed value is plaintext) or a tombstone.
    pub raw: Option<&'a [u8]>,
}

impl<'a> VersionMeta<'a> {
    fn of(v: &'a Version) -> VersionMeta<'a> {
        VersionMeta {
            create_revision: v.create_revision,
            mod_revision: v.mod_revision,
            version: v.version,
            lease: v.lease,
            size: (!v.value.is_tombstone()).then(|| v.value.len()),
            raw: v.value.raw_bytes().map(|b| b.as_ref()),
        }
    }
}

/// Metadata of a live key, for the key browser.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyMeta {
    pub key: Bytes,
    pub resource: String,
    pub newest: VersionView,
    /// Versions held in history, the newest included.
    pub history_len: usize,
}

/// One applied watch event as kept for the live event stream.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EventRecord {
    pub at: SystemTime,
    pub revision: Revision,
    pub kind: EventKind,
    #[serde(deserialize_with = "super::shared_bytes::bytes")]
    pub key: Bytes,
    /// For a PUT the value written, as received; for a DELETE the deleted value (etcd's
    /// `prev_kv` when sent, else the replica's last copy; empty when the key was unknown).
    #[serde(deserialize_with = "super::shared_bytes::bytes")]
    pub value: Bytes,
    pub resource: u32,
}

/// Why a query about the past cannot be answered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HistoryError {
    #[error("revision {requested} is compacted (etcd compacted up to {compacted})")]
    Compacted {
        requested: Revision,
        compacted: Revision,
    },
    #[error("revision {requested} is older than the history kept (budget dropped history up to {floor}); raise --history-budget")]
    Dropped {
        requested: Revision,
        floor: Revision,
    },
    #[error("revision {requested} is newer than the replica's revision {applied}")]
    Future {
        requested: Revision,
        applied: Revision,
    },
    #[error("revision {requested} is older than the replica's first list at {first}")]
    BeforeStart {
        requested: Revision,
        first: Revision,
    },
}

/// One disagreement found by [`Replica::diff`] (used by `regscope verify`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Difference {
    pub key: String,
    pub what: String,
}

/// The summary printed by `regscope snapshot --json`.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// The replica's applied revision (etcd's head as far as the replica has seen).
    pub revision: Revision,
    /// etcd's compacted revision when known.
    pub compact_revision: Option<Revision>,
    /// Live keys under the prefix.
    pub keys: u64,
    /// Value bytes of the newest version of every live key.
    pub bytes: u64,
    /// Superseded versions and tombstones held, and their charged bytes.
    pub history_versions: u64,
    pub history_bytes: u64,
    pub resources: Vec<ResourceSummary>,
    /// Who wrote what since the replica started: one row per (resource, managedFields
    /// writer), most events first (see [`super::writers`]).
    pub writers: Vec<WriterSummary>,
    pub gaps: Vec<Gap>,
    pub compactions: Vec<CompactionSeen>,
    /// etcd's head as its watch announced it, and the watch anomalies counted.
    pub watch: WatchHealth,
    /// etcd's latest Status answer (alarms included), when one came.
    pub etcd_status: Option<EtcdStatus>,
    /// Every member of the cluster with its own Status answer, as last polled (empty before
    /// the first poll).
    pub members: Vec<MemberStatus>,
}

/// What the replica holds in memory, in bytes: for the header, `snapshot --json` and the
/// benchmarks. Packing runs behind the apply, so these move for a while after the stream
/// stops; they are not part of what a replay must reproduce.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReplicaMemory {
    /// Keys held (live keys and keys held only for their history).
    pub keys: u64,
    /// Values held packed, their raw bytes and the bytes they take packed.
    pub packed_values: u64,
    pub packed_raw_bytes: u64,
    pub packed_bytes: u64,
    /// Keys written and not swept for packing yet, plus versions handed to the packing
    /// worker and not back yet: 0 when packing has caught up.
    pub packing_outstanding: u64,
    /// Bytes of the key table itself (slab, hash table, order), beyond keys and values.
    pub table_bytes: u64,
}

/// The replica. See the module docs. Serialisable whole: a recording's checkpoint is the
/// replica as it was, so that a replay resumed from it equals one played from the start.
#[derive(Serialize, Deserialize)]
pub struct Replica {
    cfg: ReplicaConfig,
    /// Keys, versions, the history queue and the packing dictionaries, as one image.
    #[serde(with = "super::image")]
    store: KeyStore,
    resources: Vec<ResourceStats>,
    resource_ids: HashMap<String, u32>,
    /// Highest revision applied (from events, progress notifications or a list).
    applied: Revision,
    /// Highest revision of an applied event or list: events at or below it are duplicates.
    events_through: Revision,
    /// Revision of the first completed list (history before it was never seen).
    first_list: Option<Revision>,
    compacted: Option<Revision>,
    /// History below this revision was dropped by the budget.
    history_floor: Revision,
    history_bytes: usize,
    history_versions: usize,
    /// The history queue by key, as checkpoints of format 1 held it; resolved into
    /// `store.history_queue` by [`Replica::restored`]. Empty otherwise (and when written).
    #[serde(deserialize_with = "super::shared_bytes::rev_keys")]
    legacy_history_queue: VecDeque<(Revision, Bytes)>,
    /// First wall-clock time each revision range was observed: (revision, time), ascending.
    rev_times: VecDeque<(Revision, SystemTime)>,
    events: VecDeque<EventRecord>,
    growth: Growth,
    gaps: Vec<Gap>,
    compactions: VecDeque<CompactionSeen>,
    notes: VecDeque<(SystemTime, String)>,
    conn: ConnState,
    server: Option<(String, String)>,
    live_keys: u64,
    live_bytes: u64,
    list: Option<ListState>,
    /// The newest list's progress (kept after it is done, for the header and notes). Not
    /// in checkpoints: a replay resumed mid-list shows no estimate for that list.
    #[serde(skip)]
    list_progress: Option<ListProgress>,
    gen: u32,
    /// Counts every change, so views can tell whether to redraw.
    change_seq: u64,
    last_observed: Option<SystemTime>,
    /// What etcd's watch stream said about its head and where it broke the rules clients
    /// rely on (checkpoint format 3 and later; older checkpoints start it empty).
    #[serde(default, deserialize_with = "super::shared_bytes::since_format_3")]
    watch: WatchHealth,
    /// etcd's latest Status answer and when it came (checkpoint format 3 and later).
    #[serde(default, deserialize_with = "super::shared_bytes::since_format_3")]
    etcd_status: Option<(SystemTime, EtcdStatus)>,
    /// Each time the source went on reading from another member: when, from which endpoint,
    /// to which (the newest 64; checkpoint format 3 and later).
    #[serde(default, deserialize_with = "super::shared_bytes::since_format_3")]
    failovers: VecDeque<(SystemTime, String, String)>,
    /// The cluster's members and their Status answers, as last polled, and when
    /// (checkpoint format 4 and later).
    #[serde(default, deserialize_with = "super::shared_bytes::since_format_4")]
    members: Option<(SystemTime, Vec<MemberStatus>)>,
    /// Who writes: counters per (resource, managedFields writer) (checkpoint format 5 and
    /// later; older checkpoints start them empty).
    #[serde(default, deserialize_with = "super::shared_bytes::since_format_5")]
    writers: Writers,
    /// Bytes let go of, kept for the caller to free (see [`Replica::defer_frees`]).
    #[serde(skip)]
    discards: super::discards::Discards<Bytes>,
}

/// Notes for what changed between two polls of the members: a member that stopped or
/// started answering, and the leader moving (as the members that answer name it). The
/// replica notes them; a replay's markers are the same lines.
pub fn member_changes(before: &[MemberStatus], now: &[MemberStatus]) -> Vec<String> {
    let label = |m: &MemberStatus| {
        if m.name.is_empty() {
            format!("{:x} ({})", m.id, m.endpoint)
        } else {
            format!("{} ({})", m.name, m.endpoint)
        }
    };
    let leader = |ms: &[MemberStatus]| {
        ms.iter()
            .filter_map(|m| m.status.as_ref())
            .map(|s| s.leader)
            .find(|l| *l != 0)
    };
    let mut out = Vec::new();
    for m in now {
        let was = before.iter().find(|b| b.id == m.id);
        match (was.map(|b| b.status.is_some()), m.status.is_some()) {
            (Some(true), false) => out.push(format!(
                "etcd member {} stopped answering: {}",
                label(m),
                m.error.as_deref().unwrap_or("no answer")
            )),
            (Some(false), true) => out.push(format!("etcd member {} answers again", label(m))),
            _ => {}
        }
    }
    if let (Some(a), Some(b)) = (leader(before), leader(now)) {
        if a != b {
            let name = |id: u64| {
                now.iter()
                    .chain(before)
                    .find(|m| m.id == id)
                    .map_or_else(|| format!("{id:x}"), label)
            };
            out.push(format!(
                "etcd's leader moved from {} to {}",
                name(a),
                name(b)
            ));
        }
    }
    out
}

/// etcd's head as its watch stream announced it, and the departures from the watch
/// contract seen on it: counted, and noted in the event log at the 1st, 10th, 100th… time.
///
/// The contract (etcd's `api/v3rpc` watch docs): events come in revision order, each once;
/// a progress notification at revision N means every event up to N was sent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchHealth {
    /// The highest revision etcd named as its head: header revisions of progress
    /// notifications (applied or not) and of event responses. 0 before any. May run ahead of
    /// [`Replica::revision`]: writes outside the prefix, or (etcd 3.4 before 3.4.25, 3.5.0–3.5.7)
    /// a progress notification sent before events still queued (etcd-io/etcd#15220).
    pub head_at_least: Revision,
    /// The highest revision announced by a progress notification (applied or not).
    pub progress_through: Revision,
    /// The highest announced head that a later progress notification confirmed with no
    /// event between the two: no event of the prefix up to it was pending (see
    /// [`Replica::synced_revision`]).
    pub quiet_through: Revision,
    /// An event was applied since the last progress notification.
    pub events_since_progress: bool,
    /// Progress notifications at a revision below the one already applied: a member that
    /// lags behind the one read before, or a server that breaks the contract.
    pub progress_behind: u64,
    /// Events that arrived after a progress notification at or above their revision: the
    /// notification ran ahead of them (etcd-io/etcd#15220, fixed in 3.4.25 and 3.5.8).
    pub progress_ahead_of_events: u64,
    /// Events at or below a revision already applied from events or a list: ignored.
    pub repeated_events: u64,
    /// DELETE events of a key the replica did not hold (nothing to show for it; the
    /// replica keeps no tombstone of a key it never saw).
    pub unknown_deletes: u64,
}

impl WatchHealth {
    /// Every departure counted, summed.
    pub fn anomalies(&self) -> u64 {
        self.progress_behind
            + self.progress_ahead_of_events
            + self.repeated_events
            + self.unknown_deletes
    }
}

/// Whether a counter just reached 1, 10, 100, … (the times worth a note).
fn worth_noting(n: u64) -> bool {
    n > 0 && 10u64.pow(n.ilog10()) == n
}

#[derive(Debug, Serialize, Deserialize)]
struct ListState {
    revision: Revision,
    keys: u64,
}

impl Replica {
    pub fn new(cfg: ReplicaConfig) -> Self {
        let growth = Growth::new(cfg.growth_cap);
        Self {
            cfg,
            store: KeyStore::default(),
            resources: Vec::new(),
            resource_ids: HashMap::new(),
            applied: 0,
            events_through: 0,
            first_list: None,
            compacted: None,
            history_floor: 0,
            history_bytes: 0,
            history_versions: 0,
            legacy_history_queue: VecDeque::new(),
            rev_times: VecDeque::new(),
            events: VecDeque::new(),
            growth,
            gaps: Vec::new(),
            compactions: VecDeque::new(),
            notes: VecDeque::new(),
            conn: ConnState::Connecting,
            server: None,
            live_keys: 0,
            live_bytes: 0,
            list: None,
            list_progress: None,
            gen: 0,
            change_seq: 0,
            last_observed: None,
            watch: WatchHealth::default(),
            etcd_status: None,
            failovers: VecDeque::new(),
            members: None,
            writers: Writers::default(),
            discards: Default::default(),
        }
    }

    /// Finishes a replica just deserialised from a checkpoint: a format-1 checkpoint's
    /// history queue, held by key, is resolved to the restored keys' slots, and every key's
    /// resource is checked to exist (a damaged checkpoint that passed its CRC must be
    /// refused here, not crash the apply later).
    pub(super) fn restored(&mut self) -> Result<(), String> {
        let n = self.resources.len() as u32;
        if let Some(w) = self.writers.rows().iter().find(|w| w.resource >= n) {
            return Err(format!(
                "writer {} names resource {} of {n}",
                w.manager, w.resource
            ));
        }
        self.writers.restored();
        if let Some((_, k, e)) = self
            .store
            .keys
            .iter_unordered()
            .find(|(_, _, e)| e.resource >= n)
        {
            return Err(format!(
                "key {} names resource {} of {n}",
                escape_bytes(k),
                e.resource
            ));
        }
        let legacy = std::mem::take(&mut self.legacy_history_queue);
        if legacy.is_empty() {
            return Ok(());
        }
        let keys = &self.store.keys;
        self.store.history_queue = legacy
            .into_iter()
            .map(|(revision, key)| match keys.slot(&key) {
                Some(slot) => Queued {
                    revision,
                    slot,
                    gen: keys.at(slot).map_or(u32::MAX, |(_, g, _)| g),
                },
                None => Queued::stale(revision),
            })
            .collect();
        Ok(())
    }

    /// Stops packing values (those packed stay packed): for sessions that only count, or
    /// that are about to be thrown away.
    pub fn disable_packing(&mut self) {
        self.store.codebook.disable();
    }

    /// Applies one observation. Events at or below the applied revision are ignored (a
    /// resumed watch never applies an event twice), progress never moves the revision back.
    pub fn apply(&mut self, st: &Stamped) {
        self.change_seq += 1;
        self.last_observed = Some(st.at);
        ListProgress::observe(&mut self.list_progress, st);
        match &st.obs {
            Observation::ListBegin { revision } => {
                self.gen = self.gen.wrapping_add(1);
                self.list = Some(ListState {
                    revision: *revision,
                    keys: 0,
                });
            }
            Observation::ListPage { kvs } => {
                for kv in kvs {
                    self.apply_listed(kv);
                }
                if let Some(l) = self.list.as_mut() {
                    l.keys += kvs.len() as u64;
                }
            }
            Observation::ListCount { .. } => {}
            Observation::ListDone {
                revision,
                compacted,
            } => self.finish_list(*revision, *compacted, st.at),
            Observation::Events { revision, events } => {
                let second = unix_second(st.at);
                let mut applied = 0u32;
                for ev in events {
                    // Deduplicate against events and lists only, not progress: etcd before
                    // 3.4.25/3.5.8 can send a progress notification ahead of events still
                    // queued for the watcher (etcd-io/etcd#15220), and those must apply.
                    if ev.kv.mod_revision <= self.events_through {
                        self.watch.repeated_events += 1;
                        if worth_noting(self.watch.repeated_events) {
                            self.note(st.at, format!(
                                "etcd sent an event at revision {} again (already applied through {}); ignored ({} so far)",
                                ev.kv.mod_revision, self.events_through, self.watch.repeated_events
                            ));
                        }
                        continue;
                    }
                    if ev.kv.mod_revision <= self.watch.progress_through {
                        self.watch.progress_ahead_of_events += 1;
                        if worth_noting(self.watch.progress_ahead_of_events) {
                            self.note(st.at, format!(
                                "etcd announced revision {} in a progress notification before the event at {} (etcd-io/etcd#15220: etcd 3.4 < 3.4.25, 3.5 < 3.5.8); {} so far",
                                self.watch.progress_through, ev.kv.mod_revision, self.watch.progress_ahead_of_events
                            ));
                        }
                    }
                    self.apply_event(ev, st.at, second);
                    applied += 1;
                }
                if applied > 0 {
                    self.watch.events_since_progress = true;
                }
                self.watch.head_at_least = self.watch.head_at_least.max(*revision);
                if let Some(last) = events.last() {
                    self.events_through = self.events_through.max(last.kv.mod_revision);
                }
                let head = events
                    .last()
                    .map_or(*revision, |e| e.kv.mod_revision)
                    .max(self.applied);
                self.advance(head, st.at);
                self.growth.record(second, self.applied, applied);
                self.enforce_budget();
            }
            Observation::Progress { revision } => {
                self.progress_seen(*revision, st.at, true);
                self.advance(*revision, st.at);
                self.growth.record(unix_second(st.at), self.applied, 0);
            }
            Observation::EtcdStatus(s) => {
                let before = self
                    .etcd_status
                    .as_ref()
                    .map(|(_, s)| s.alarms())
                    .unwrap_or_default();
                let now = s.alarms();
                if now != before {
                    let n = if now.is_empty() {
                        format!("etcd's alarms cleared (were {})", before.join(", "))
                    } else {
                        format!(
                            "etcd raised alarm {} ({})",
                            now.join(", "),
                            s.errors.join("; ").trim()
                        )
                    };
                    self.note(st.at, n);
                }
                self.etcd_status = Some((st.at, s.clone()));
            }
            Observation::Members(now) => {
                let before = self.members.take().map(|(_, m)| m).unwrap_or_default();
                for n in member_changes(&before, now) {
                    self.note(st.at, n);
                }
                self.members = Some((st.at, now.clone()));
            }
            Observation::HeadAtLeast { revision } => {
                self.progress_seen(*revision, st.at, false);
                self.growth.record(unix_second(st.at), self.applied, 0);
            }
            Observation::Compacted { revision, source } => {
                self.set_compacted(*revision, *source, st.at)
            }
            Observation::Conn(c) => self.conn = c.clone(),
            Observation::Server {
                endpoint, version, ..
            } => {
                if let Some((before, _)) = self.server.as_ref().filter(|(e, _)| e != endpoint) {
                    let before = before.clone();
                    self.note(
                        st.at,
                        format!("failover: reading from {endpoint} (was {before})"),
                    );
                    if self.failovers.len() == 64 {
                        self.failovers.pop_front();
                    }
                    self.failovers.push_back((st.at, before, endpoint.clone()));
                }
                self.server = Some((endpoint.clone(), version.clone()));
            }
            Observation::Note(n) => self.note(st.at, n.clone()),
            Observation::Reset { reason } => self.reset(st.at, reason),
            // The apiserver side lives in `store::metrics` and `store::informer`.
            Observation::Scrape { .. }
            | Observation::Informer(_)
            | Observation::Tick
            | Observation::ApiserverFlags(_)
            | Observation::OtherCluster(_) => {}
        }
        let work = match &st.obs {
            Observation::ListPage { kvs } => kvs.len(),
            Observation::Events { events, .. } => events.len(),
            _ => 1,
        };
        self.maybe_sweep(work);
    }

    /// Looks at the clock every few hundred keys and events, and sweeps for packing
    /// when the last sweep is old enough (see [`KeyStore::maybe_sweep`]).
    fn maybe_sweep(&mut self, work: usize) {
        self.store.maybe_sweep(work, &mut self.discards);
    }

    fn sweep(&mut self) {
        self.store.sweep(&mut self.discards);
    }

    /// A clock tick of the stream (once a second): hands the packing worker the values
    /// offered since, even when they do not fill a batch, so that a quiet cluster's values
    /// are packed too.
    pub(crate) fn tick(&mut self) {
        self.sweep();
    }

    /// Takes what the packing worker has packed and hands it more (what every apply does
    /// at its end), for a replica that is not being applied to: an idle console, a
    /// benchmark waiting for packing to catch up. Also settles the key order when many
    /// keys wait to be sorted, so that the next range does not pay for all of them at once.
    pub fn maintain(&mut self) {
        self.sweep();
        let keys = &self.store.keys;
        if keys.unsettled() > keys.len() / 8 + 65_536 {
            self.store.keys.settle();
        }
    }

    /// Brings the key order up to date, so that ranges (the key browser, `verify`,
    /// checkpoints) cost a binary search. The console calls it before drawing what needs
    /// ranges; ranges are exact without it, only slower. See [`Keyspace::settle`].
    pub fn settle(&mut self) {
        self.store.keys.settle();
    }

    /// Forgets every key, version, event and statistic (the notes, connection state and
    /// server facts stay), so a following list starts from scratch.
    fn reset(&mut self, at: SystemTime, reason: &str) {
        let mut fresh = Replica::new(self.cfg.clone());
        fresh.notes = std::mem::take(&mut self.notes);
        fresh.conn = self.conn.clone();
        fresh.server = self.server.take();
        fresh.change_seq = self.change_seq;
        fresh.last_observed = self.last_observed;
        *self = fresh;
        self.note(at, reason.to_string());
    }

    fn note(&mut self, at: SystemTime, n: String) {
        if self.notes.len() == 200 {
            self.notes.pop_front();
        }
        self.notes.push_back((at, n));
    }

    /// Books a progress notification at `rev` (applied or not): etcd's head, and, for one
    /// that says every event up to it was sent (`ordered`, [`Observation::Progress`]),
    /// whether it fell behind what is applied. An [`Observation::HeadAtLeast`] is only a
    /// lower bound on etcd's head: below what is applied it is still true, and etcd
    /// versions that send it (etcd-io/etcd#15220) do stamp a notification with the
    /// revision at which it was asked for, then send it after later events.
    fn progress_seen(&mut self, rev: Revision, at: SystemTime, ordered: bool) {
        let w = &mut self.watch;
        if !w.events_since_progress && w.progress_through > 0 {
            w.quiet_through = w.quiet_through.max(w.progress_through.min(rev));
        }
        w.events_since_progress = false;
        w.head_at_least = w.head_at_least.max(rev);
        w.progress_through = w.progress_through.max(rev);
        if ordered && rev < self.applied {
            w.progress_behind += 1;
            let n = w.progress_behind;
            if worth_noting(n) {
                let applied = self.applied;
                self.note(at, format!(
                    "etcd sent a progress notification at revision {rev}, below revision {applied} already applied (a lagging member, or a server bug); {n} so far"
                ));
            }
        }
    }

    fn advance(&mut self, rev: Revision, at: SystemTime) {
        if rev > self.applied {
            self.applied = rev;
            match self.rev_times.back_mut() {
                // Revisions that arrive within 100 ms of the entry's time share it: the map
                // stays small (at most ~10 entries a second) at any write rate.
                Some((r, t))
                    if at
                        .duration_since(*t)
                        .is_ok_and(|d| d < std::time::Duration::from_millis(100)) =>
                {
                    *r = rev
                }
                _ => {
                    if self.rev_times.len() >= REV_TIMES_CAP {
                        self.rev_times.pop_front();
                    }
                    self.rev_times.push_back((rev, at))
                }
            }
        }
    }

    fn resource_id(&mut self, key: &[u8]) -> u32 {
        let path = KeyPath::parse(&self.cfg.prefix, key);
        if let Some(id) = self.resource_ids.get(path.resource.as_ref()) {
            return *id;
        }
        let id = self.resources.len() as u32;
        let name = path.resource.into_owned();
        self.resource_ids.insert(name.clone(), id);
        self.resources.push(ResourceStats::new(name));
        id
    }

    fn apply_listed(&mut self, kv: &KeyValue) {
        let gen = self.gen;
        if let Some(e) = self.store.keys.get_mut(&kv.key) {
            e.seen_gen = gen;
            if !e.newest.value.is_tombstone() && e.newest.mod_revision == kv.mod_revision {
                return;
            }
        }
        // New, changed or re-created while we were not watching.
        let (_, slot, key_gen) = self.push_version(
            &kv.key,
            Version {
                create_revision: kv.create_revision,
                mod_revision: kv.mod_revision,
                version: kv.version,
                lease: kv.lease,
                value: Val::raw(kv.value.clone()),
            },
        );
        if let Some((_, e)) = self.store.keys.at_mut(slot, key_gen) {
            e.seen_gen = gen;
        }
    }

    fn finish_list(&mut self, revision: Revision, compacted: Option<Revision>, at: SystemTime) {
        let gen = self.gen;
        let before = self.events_through;
        self.events_through = self.events_through.max(revision);
        // Live keys the list did not return were deleted while we were away; they become
        // tombstones in key order (as a replay from a checkpoint must repeat them).
        let mut gone: Vec<Box<[u8]>> = self
            .store
            .keys
            .iter_unordered()
            .filter(|(_, _, e)| e.seen_gen != gen && e.live().is_some())
            .map(|(_, k, _)| k.into())
            .collect();
        gone.sort_unstable();
        for k in gone {
            self.push_version(&k, Version::tombstone(revision));
        }
        self.list = None;
        if self.first_list.is_none() {
            self.first_list = Some(revision);
        }
        if let Some(c) = compacted {
            self.gaps.push(Gap {
                from: before + 1,
                to: revision,
                compact_revision: c,
                at,
            });
            self.note(
                at,
                format!(
                    "resync after compaction: revisions {}..{} not seen one by one (etcd compacted at {c})",
                    before + 1,
                    revision
                ),
            );
        }
        self.advance(revision, at);
        self.enforce_budget();
    }

    fn apply_event(&mut self, ev: &WatchEvent, at: SystemTime, second: u64) {
        let kv = &ev.kv;
        // A DELETE row shows what was deleted: etcd's prev_kv when the watch asked for it,
        // else the replica's own last copy (regscope's watch does not ask for prev_kv).
        let deleted = match ev.kind {
            EventKind::Put => None,
            EventKind::Delete => {
                let last = ev
                    .prev_kv
                    .as_ref()
                    .map(|p| p.value.clone())
                    .or_else(|| self.get(&kv.key).and_then(|v| v.value));
                if last.is_none() && self.get_meta(&kv.key).is_none() {
                    self.watch.unknown_deletes += 1;
                    let n = self.watch.unknown_deletes;
                    if worth_noting(n) {
                        self.note(at, format!(
                            "etcd deleted {} at revision {}, a key the replica did not hold; {n} so far",
                            escape_bytes(&kv.key), kv.mod_revision
                        ));
                    }
                }
                last
            }
        };
        let version = match ev.kind {
            EventKind::Put => Version {
                create_revision: kv.create_revision,
                mod_revision: kv.mod_revision,
                version: kv.version,
                lease: kv.lease,
                value: Val::raw(kv.value.clone()),
            },
            EventKind::Delete => Version::tombstone(kv.mod_revision),
        };
        let (resource, _, _) = self.push_version(&kv.key, version);
        let delete = ev.kind == EventKind::Delete;
        self.resources[resource as usize].count(second, delete);
        let written = match &deleted {
            Some(v) if delete => v,
            _ if delete => &Bytes::new(),
            _ => &kv.value,
        };
        if self.cfg.count_writers {
            self.writers.count(resource, written, second, delete);
        }
        if self.events.len() >= self.cfg.event_log_cap {
            if let Some(old) = self.events.pop_front() {
                self.discards.keep(old.key);
                self.discards.keep(old.value);
            }
        }
        self.events.push_back(EventRecord {
            at,
            revision: kv.mod_revision,
            kind: ev.kind,
            key: kv.key.clone(),
            value: deleted.unwrap_or_else(|| kv.value.clone()),
            resource,
        });
    }

    /// Appends a version to a key (creating the entry), keeping live counts and history
    /// accounting right, and offers its value for packing. Returns the key's resource id,
    /// slot and slot generation.
    fn push_version(&mut self, key: &[u8], v: Version) -> (u32, Slot, u32) {
        let key_len = key.len();
        let new_live = (!v.value.is_tombstone()).then(|| v.value.len() as u64);
        let rev = v.mod_revision;
        let is_tombstone = v.value.is_tombstone();
        let packable = v.value.raw_bytes().is_some_and(|b| Codebook::packable(b));
        let (resource, slot, gen, old_live, superseded_cost) =
            match self.store.keys.get_full_mut(key) {
                Some((slot, gen, e)) => {
                    let old_live = e.live().map(|o| o.value.len() as u64);
                    let prev = std::mem::replace(&mut e.newest, v);
                    let cost = prev.cost(key_len);
                    e.older.get_or_insert_with(Default::default).push_back(prev);
                    (e.resource, slot, gen, old_live, Some(cost))
                }
                None => {
                    let resource = self.resource_id(key);
                    let (slot, gen) = self.store.keys.insert(
                        key,
                        KeyEntry {
                            newest: v,
                            older: None,
                            resource,
                            seen_gen: 0,
                        },
                    );
                    (resource, slot, gen, None, None)
                }
            };
        if let Some(cost) = superseded_cost {
            // The previous newest becomes history now.
            self.history_bytes += cost;
            self.history_versions += 1;
        }
        if is_tombstone {
            // A tombstone is history from the moment it is written.
            self.history_bytes += VERSION_OVERHEAD + key_len;
            self.history_versions += 1;
        }
        if superseded_cost.is_some() || is_tombstone {
            self.store.history_queue.push_back(Queued {
                revision: rev,
                slot,
                gen,
            });
        }
        let stats = &mut self.resources[resource as usize];
        if let Some(b) = old_live {
            stats.keys -= 1;
            stats.bytes -= b;
            self.live_keys -= 1;
            self.live_bytes -= b;
        }
        if let Some(b) = new_live {
            stats.keys += 1;
            stats.bytes += b;
            self.live_keys += 1;
            self.live_bytes += b;
        }
        if packable {
            self.store.mark_dirty(slot);
        }
        (resource, slot, gen)
    }

    fn set_compacted(&mut self, rev: Revision, source: CompactionSource, at: SystemTime) {
        if rev <= 0 {
            return;
        }
        if self.compactions.back().is_none_or(|c| c.revision != rev) {
            if self.compactions.len() == 64 {
                self.compactions.pop_front();
            }
            self.compactions.push_back(CompactionSeen {
                revision: rev,
                at,
                source,
            });
        }
        if self.compacted.is_some_and(|c| c >= rev) {
            return;
        }
        self.compacted = Some(rev);
        // Revision→time entries stay: live keys untouched since before the compaction still
        // have their mod_revision's time.
        self.drop_history_through(rev);
    }

    /// Drops history that became history at or before `rev`, oldest first.
    fn drop_history_through(&mut self, rev: Revision) {
        while let Some(q) = self.store.history_queue.front() {
            if q.revision > rev {
                break;
            }
            let q = self.store.history_queue.pop_front().expect("front exists");
            self.drop_key_history(q);
        }
    }

    /// Drops the versions of `q`'s key superseded at or before `q.revision`, and the key
    /// itself when all that is left is a tombstone from then.
    fn drop_key_history(&mut self, q: Queued) {
        let through = q.revision;
        let store = &mut self.store;
        let Some((key, e)) = store.keys.at_mut(q.slot, q.gen) else {
            return;
        };
        let key_len = key.len();
        if let Some(older) = e.older.as_mut() {
            while let Some(first) = older.front() {
                let next_rev = older
                    .get(1)
                    .map_or(e.newest.mod_revision, |v| v.mod_revision);
                if next_rev > through {
                    break;
                }
                self.history_bytes -= first.cost(key_len);
                self.history_versions -= 1;
                let v = older.pop_front().expect("front exists");
                store.packed.sub(&v.value);
                self.discards.keep(v.value.into_data());
            }
            if older.is_empty() {
                e.older = None;
            }
        }
        if e.older.is_none() && e.newest.value.is_tombstone() && e.newest.mod_revision <= through {
            self.history_bytes -= VERSION_OVERHEAD + key_len;
            self.history_versions -= 1;
            if let Some(e) = store.keys.remove_at(q.slot, q.gen) {
                store.packed.sub_entry(&e);
            }
        }
    }

    fn enforce_budget(&mut self) {
        while self.history_bytes > self.cfg.history_budget {
            let Some(q) = self.store.history_queue.pop_front() else {
                break;
            };
            self.history_floor = self.history_floor.max(q.revision);
            self.drop_key_history(q);
        }
    }

    /// Replaces every value held for keys starting with `key_prefix` (every version and
    /// the event log's copies) by `f(value)`. Recordings use it to redact Secret values in
    /// a checkpoint; `f` must keep lengths for the size accounting to stay true.
    pub fn map_values(&mut self, key_prefix: &[u8], f: impl Fn(&Bytes) -> Bytes) {
        let store = &mut self.store;
        let (codebook, packed) = (&store.codebook, &mut store.packed);
        store.keys.for_each_mut(|key, e| {
            if !key.starts_with(key_prefix) {
                return;
            }
            let dict = codebook.dict(e.resource);
            let mut map = |v: &mut Version| {
                if v.value.is_tombstone() {
                    return;
                }
                let Some(raw) = packing::unpack(&v.value, dict) else {
                    return;
                };
                packed.sub(&v.value);
                v.value = Val::raw(f(&raw));
            };
            if let Some(older) = e.older.as_mut() {
                older.iter_mut().for_each(&mut map);
            }
            map(&mut e.newest);
        });
        for ev in self.events.iter_mut() {
            if ev.key.starts_with(key_prefix) && !ev.value.is_empty() {
                ev.value = f(&ev.value);
            }
        }
    }

    // ---- queries -------------------------------------------------------------------

    /// The value of version `v` of a key of `resource`, whole.
    fn view(&self, resource: u32, v: &Version) -> VersionView {
        VersionView {
            create_revision: v.create_revision,
            mod_revision: v.mod_revision,
            version: v.version,
            lease: v.lease,
            value: (!v.value.is_tombstone()).then(|| {
                packing::unpack(&v.value, self.store.codebook.dict(resource)).unwrap_or_default()
            }),
        }
    }

    /// The replica's applied revision: every event up to it is applied, and nothing past
    /// it. Moves with events, lists and progress notifications from etcds that order them
    /// after pending events, never with [`Observation::HeadAtLeast`].
    /// Whether bytes let go of are kept for [`Replica::take_discards`] instead of freed in
    /// place (see [`crate::store::Session::defer_frees`]).
    pub fn defer_frees(&mut self, on: bool) {
        self.discards.set(on);
    }

    /// The bytes let go of since the last call, while deferring.
    pub fn take_discards(&mut self) -> Vec<Bytes> {
        self.discards.take()
    }

    pub fn revision(&self) -> Revision {
        self.applied
    }

    /// Each change of the member read from: (when, from endpoint, to endpoint), oldest
    /// first (the newest 64).
    pub fn failovers(&self) -> &VecDeque<(SystemTime, String, String)> {
        &self.failovers
    }

    /// Every member of the cluster with its own Status answer (or why none), as last
    /// polled, and when; `None` before the first poll.
    pub fn members(&self) -> Option<&(SystemTime, Vec<MemberStatus>)> {
        self.members.as_ref()
    }

    /// etcd's latest `Maintenance.Status` answer (sizes, raft position, alarms) and when
    /// it came; `None` before the first.
    pub fn etcd_status(&self) -> Option<&(SystemTime, EtcdStatus)> {
        self.etcd_status.as_ref()
    }

    /// The revision the replica is known to be as new as, for lag: its applied revision,
    /// or a head etcd announced and then confirmed by a second progress notification with
    /// no event between them (nothing of the prefix was pending: the revisions between were
    /// written elsewhere in etcd). On etcds whose progress may run ahead of events
    /// (etcd-io/etcd#15220) those events arrive right after it, before the next progress.
    /// Never applied: the replica's state stays the one at [`Replica::revision`].
    pub fn synced_revision(&self) -> Revision {
        self.applied.max(self.watch.quiet_through)
    }

    /// etcd's head revision as far as its watch stream told, and the departures from the
    /// watch contract seen (see [`WatchHealth`]).
    pub fn watch_health(&self) -> &WatchHealth {
        &self.watch
    }

    /// etcd's compacted revision, when known.
    pub fn compact_revision(&self) -> Option<Revision> {
        self.compacted
    }

    /// Lowest revision the replica can answer point-in-time queries for.
    pub fn oldest_queryable(&self) -> Revision {
        self.first_list
            .unwrap_or(self.applied)
            .max(self.compacted.unwrap_or(0))
            .max(self.history_floor)
    }

    /// Counts every applied observation: compare two values to know whether to redraw.
    pub fn change_seq(&self) -> u64 {
        self.change_seq
    }

    pub fn conn(&self) -> &ConnState {
        &self.conn
    }

    /// (endpoint, etcd server version) of the current connection.
    pub fn server(&self) -> Option<(&str, &str)> {
        self.server.as_ref().map(|(a, b)| (a.as_str(), b.as_str()))
    }

    /// Keys listed so far when a list is in progress.
    pub fn listing(&self) -> Option<(Revision, u64)> {
        self.list.as_ref().map(|l| (l.revision, l.keys))
    }

    /// The newest list's progress (also once it is done), from its observations.
    pub fn list_progress(&self) -> Option<&ListProgress> {
        self.list_progress.as_ref()
    }

    pub fn prefix(&self) -> &[u8] {
        &self.cfg.prefix
    }

    pub fn live_keys(&self) -> u64 {
        self.live_keys
    }

    pub fn live_bytes(&self) -> u64 {
        self.live_bytes
    }

    /// (versions, charged bytes) of history held.
    pub fn history_usage(&self) -> (usize, usize) {
        (self.history_versions, self.history_bytes)
    }

    /// Bytes of history kept besides the newest value of every key (`--history-budget`).
    pub fn history_budget(&self) -> usize {
        self.cfg.history_budget
    }

    /// Sets the history budget (bytes) and drops the oldest history at once until it fits,
    /// as new writes would (`--memory-limit` lowers it).
    pub fn set_history_budget(&mut self, bytes: usize) {
        self.cfg.history_budget = bytes;
        self.enforce_budget();
        self.change_seq += 1;
    }

    /// What the replica holds in memory. See [`ReplicaMemory`].
    pub fn memory(&self) -> ReplicaMemory {
        let p = self.store.packed;
        ReplicaMemory {
            keys: self.store.keys.len() as u64,
            packed_values: p.values,
            packed_raw_bytes: p.raw_bytes,
            packed_bytes: p.held_bytes,
            packing_outstanding: self.store.packing_outstanding() as u64,
            table_bytes: self.store.keys.overhead_bytes() as u64,
        }
    }

    /// Wall-clock time of the newest observation applied.
    pub fn last_observed(&self) -> Option<SystemTime> {
        self.last_observed
    }

    fn check_rev(&self, rev: Revision) -> Result<(), HistoryError> {
        if rev > self.applied {
            return Err(HistoryError::Future {
                requested: rev,
                applied: self.applied,
            });
        }
        if let Some(c) = self.compacted {
            if rev < c {
                return Err(HistoryError::Compacted {
                    requested: rev,
                    compacted: c,
                });
            }
        }
        if rev < self.history_floor {
            return Err(HistoryError::Dropped {
                requested: rev,
                floor: self.history_floor,
            });
        }
        if let Some(first) = self.first_list {
            if rev < first {
                return Err(HistoryError::BeforeStart {
                    requested: rev,
                    first,
                });
            }
        }
        Ok(())
    }

    /// The newest live version of `key`, if the key exists now.
    pub fn get(&self, key: &[u8]) -> Option<VersionView> {
        let e = self.store.keys.get(key)?;
        e.live().map(|v| self.view(e.resource, v))
    }

    /// The newest live version of `key` without its value unpacked.
    pub fn get_meta(&self, key: &[u8]) -> Option<VersionMeta<'_>> {
        self.store.keys.get(key)?.live().map(VersionMeta::of)
    }

    /// The version of `key` visible at revision `rev` (`Ok(None)`: absent or deleted then).
    pub fn get_at(&self, key: &[u8], rev: Revision) -> Result<Option<VersionView>, HistoryError> {
        self.check_rev(rev)?;
        Ok(self
            .store
            .keys
            .get(key)
            .and_then(|e| version_at(e, rev).map(|v| self.view(e.resource, v))))
    }

    fn prefix_range<'a>(
        &'a self,
        prefix: &'a [u8],
    ) -> impl Iterator<Item = (&'a [u8], &'a KeyEntry)> + 'a {
        let end = prefix_upper(prefix);
        let hi = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        // The bounds are only read by the binary search inside `range`.
        let it = self.store.keys.range(Bound::Included(prefix), hi);
        it.take_while(move |(k, _)| k.starts_with(prefix))
    }

    /// Every live key under `prefix` at revision `rev`, ascending by key bytes, with its
    /// value unpacked.
    pub fn range_at<'a>(
        &'a self,
        prefix: &'a [u8],
        rev: Revision,
    ) -> Result<impl Iterator<Item = (&'a [u8], VersionView)> + 'a, HistoryError> {
        self.check_rev(rev)?;
        Ok(self
            .prefix_range(prefix)
            .filter_map(move |(k, e)| version_at(e, rev).map(|v| (k, self.view(e.resource, v)))))
    }

    /// As [`Replica::range_at`] without unpacking values: sizes and revisions only (the
    /// key list of `snapshot --keys`, the encryption summary).
    pub fn range_meta_at<'a>(
        &'a self,
        prefix: &'a [u8],
        rev: Revision,
    ) -> Result<impl Iterator<Item = (&'a [u8], VersionMeta<'a>)> + 'a, HistoryError> {
        self.check_rev(rev)?;
        Ok(self
            .prefix_range(prefix)
            .filter_map(move |(k, e)| version_at(e, rev).map(|v| (k, VersionMeta::of(v)))))
    }

    /// Every version of `key` still held, oldest first (tombstones have `value: None`).
    pub fn history(&self, key: &[u8]) -> Vec<VersionView> {
        self.store
            .keys
            .get(key)
            .map(|e| e.versions().map(|v| self.view(e.resource, v)).collect())
            .unwrap_or_default()
    }

    /// Metadata of a key (live or not).
    pub fn key_meta(&self, key: &[u8]) -> Option<KeyMeta> {
        let (k, e) = self.store.keys.get_key_value(key)?;
        Some(KeyMeta {
            key: Bytes::copy_from_slice(k),
            resource: self.resources[e.resource as usize].resource.clone(),
            newest: self.view(e.resource, &e.newest),
            history_len: e.version_count(),
        })
    }

    /// Up to `n` live keys strictly after `after` (or from the start), in key order,
    /// restricted to keys starting with `prefix`. For virtualized lists: cost is
    /// O(log keys + n), whatever the number of keys, once the order is settled.
    pub fn live_keys_after(&self, prefix: &[u8], after: Option<&[u8]>, n: usize) -> Vec<Bytes> {
        let lower = match after {
            Some(a) => Bound::Excluded(a),
            None => Bound::Included(prefix),
        };
        self.store
            .keys
            .range(lower, Bound::Unbounded)
            .take_while(|(k, _)| k.starts_with(prefix))
            .filter(|(_, e)| e.live().is_some())
            .take(n)
            .map(|(k, _)| Bytes::copy_from_slice(k))
            .collect()
    }

    /// Up to `n` live keys strictly before `before` (or from the end), nearest first.
    pub fn live_keys_before(&self, prefix: &[u8], before: Option<&[u8]>, n: usize) -> Vec<Bytes> {
        // Walk back from the end of the prefix's range, not from the end of the keyspace.
        let end = prefix_upper(prefix);
        let upper: Bound<&[u8]> = match (before, end.as_deref()) {
            (Some(b), Some(e)) if b < e => Bound::Excluded(b),
            (Some(b), None) => Bound::Excluded(b),
            (_, Some(e)) => Bound::Excluded(e),
            (None, None) => Bound::Unbounded,
        };
        self.store
            .keys
            .range(Bound::Included(prefix), upper)
            .rev()
            .take_while(|(k, _)| k.starts_with(prefix))
            .filter(|(_, e)| e.live().is_some())
            .take(n)
            .map(|(k, _)| Bytes::copy_from_slice(k))
            .collect()
    }

    /// Wall-clock time the replica first observed revision `rev` (the batch or list that
    /// brought it), or `None` if older than what is kept or not yet seen.
    pub fn time_of(&self, rev: Revision) -> Option<SystemTime> {
        if rev > self.applied {
            return None;
        }
        let i = self.rev_times.partition_point(|(r, _)| *r < rev);
        self.rev_times.get(i).map(|(_, t)| *t)
    }

    /// Whether revision `rev` was seen as it happened (from the watch), so that
    /// [`Replica::time_of`] is its write time within the batching delay. `false` for
    /// revisions that came in through a list (initial or after a gap): their time is only an
    /// upper bound ("at or before").
    pub fn seen_live(&self, rev: Revision) -> bool {
        self.first_list.is_some_and(|f| rev > f)
            && !self.gaps.iter().any(|g| g.from <= rev && rev <= g.to)
    }

    /// Per-resource statistics, in first-seen order.
    pub fn resources(&self) -> &[ResourceStats] {
        &self.resources
    }

    /// Who writes: one row per (resource, writer) seen in the watch events, in first-seen
    /// order (see [`super::writers`]).
    pub fn writers(&self) -> &[WriterStats] {
        self.writers.rows()
    }

    /// Name of a resource id as found in [`EventRecord::resource`].
    pub fn resource_name(&self, id: u32) -> &str {
        self.resources
            .get(id as usize)
            .map_or("?", |r| r.resource.as_str())
    }

    /// The live event stream, oldest first.
    pub fn events(&self) -> &VecDeque<EventRecord> {
        &self.events
    }

    /// Per-second revision growth, oldest first.
    pub fn growth(&self) -> impl DoubleEndedIterator<Item = &GrowthSample> + ExactSizeIterator {
        self.growth.samples.iter()
    }

    pub fn gaps(&self) -> &[Gap] {
        &self.gaps
    }

    pub fn compactions(&self) -> &VecDeque<CompactionSeen> {
        &self.compactions
    }

    /// Notes for the event log (resyncs, reconnects), oldest first.
    pub fn notes(&self) -> &VecDeque<(SystemTime, String)> {
        &self.notes
    }

    /// The summary for `snapshot --json`. Resources are sorted by name.
    pub fn summary(&self) -> Summary {
        let mut resources: Vec<ResourceSummary> = self
            .resources
            .iter()
            .filter(|r| r.keys > 0 || r.puts > 0 || r.deletes > 0)
            .map(|r| ResourceSummary {
                resource: r.resource.clone(),
                keys: r.keys,
                bytes: r.bytes,
                puts: r.puts,
                deletes: r.deletes,
            })
            .collect();
        resources.sort_by(|a, b| a.resource.cmp(&b.resource));
        let mut writers: Vec<WriterSummary> = self
            .writers
            .rows()
            .iter()
            .map(|w| WriterSummary {
                resource: self.resource_name(w.resource).to_string(),
                manager: w.manager.clone(),
                operation: w.operation.clone(),
                subresource: w.subresource.clone(),
                puts: w.puts,
                deletes: w.deletes,
                bytes: w.bytes,
            })
            .collect();
        writers.sort_by(|a, b| {
            (b.puts + b.deletes)
                .cmp(&(a.puts + a.deletes))
                .then_with(|| {
                    (&a.resource, &a.manager, &a.operation, &a.subresource).cmp(&(
                        &b.resource,
                        &b.manager,
                        &b.operation,
                        &b.subresource,
                    ))
                })
        });
        Summary {
            revision: self.applied,
            compact_revision: self.compacted,
            keys: self.live_keys,
            bytes: self.live_bytes,
            history_versions: self.history_versions as u64,
            history_bytes: self.history_bytes as u64,
            resources,
            writers,
            gaps: self.gaps.clone(),
            compactions: self.compactions.iter().cloned().collect(),
            watch: self.watch.clone(),
            etcd_status: self.etcd_status.as_ref().map(|(_, s)| s.clone()),
            members: self
                .members
                .as_ref()
                .map(|(_, m)| m.clone())
                .unwrap_or_default(),
        }
    }

    /// Compares the replica at its applied revision with `etcd_kvs`, the result of a range
    /// over the same prefix at the same revision (ascending by key). Returns every
    /// difference in key, value, create_revision, mod_revision and version.
    pub fn diff(&self, etcd_kvs: &[KeyValue]) -> Vec<Difference> {
        let mut out = Vec::new();
        let prefix = self.cfg.prefix.clone();
        let ours: Vec<(&[u8], VersionView)> = match self.range_at(&prefix, self.applied) {
            Ok(it) => it.collect(),
            Err(e) => {
                out.push(Difference {
                    key: String::new(),
                    what: e.to_string(),
                });
                return out;
            }
        };
        let (mut i, mut j) = (0, 0);
        while i < ours.len() || j < etcd_kvs.len() {
            let a = ours.get(i);
            let b = etcd_kvs.get(j);
            match (a, b) {
                (Some((ka, _)), Some(kb)) if *ka < kb.key.as_ref() => {
                    out.push(Difference {
                        key: escape_bytes(ka).into_owned(),
                        what: "in replica, not in etcd".into(),
                    });
                    i += 1;
                }
                (Some((ka, va)), Some(kb)) if *ka == kb.key.as_ref() => {
                    let mut what = Vec::new();
                    if va.value.as_deref() != Some(kb.value.as_ref()) {
                        what.push("value differs".to_string());
                    }
                    if va.create_revision != kb.create_revision {
                        what.push(format!(
                            "create_revision {} != etcd {}",
                            va.create_revision, kb.create_revision
                        ));
                    }
                    if va.mod_revision != kb.mod_revision {
                        what.push(format!(
                            "mod_revision {} != etcd {}",
                            va.mod_revision, kb.mod_revision
                        ));
                    }
                    if va.version != kb.version {
                        what.push(format!("version {} != etcd {}", va.version, kb.version));
                    }
                    if va.lease != kb.lease {
                        what.push(format!("lease {} != etcd {}", va.lease, kb.lease));
                    }
                    if !what.is_empty() {
                        out.push(Difference {
                            key: escape_bytes(ka).into_owned(),
                            what: what.join(", "),
                        });
                    }
                    i += 1;
                    j += 1;
                }
                (_, Some(kb)) => {
                    out.push(Difference {
                        key: escape_bytes(&kb.key).into_owned(),
                        what: "in etcd, not in replica".into(),
                    });
                    j += 1;
                }
                (Some((ka, _)), None) => {
                    out.push(Difference {
                        key: escape_bytes(ka).into_owned(),
                        what: "in replica, not in etcd".into(),
                    });
                    i += 1;
                }
                (None, None) => break,
            }
        }
        out
    }
}

/// The version of `e` visible at `rev`, unless that is a tombstone or before the key.
fn version_at(e: &KeyEntry, rev: Revision) -> Option<&Version> {
    let v = if e.newest.mod_revision <= rev {
        &e.newest
    } else {
        let older = e.older.as_ref()?;
        let i = older.partition_point(|v| v.mod_revision <= rev);
        older.get(i.checked_sub(1)?)?
    };
    (!v.value.is_tombstone()).then_some(v)
}

/// The first key after every key starting with `prefix`; `None` when there is none (an
/// empty prefix, or one of `0xff` bytes only).
fn prefix_upper(prefix: &[u8]) -> Option<Vec<u8>> {
    let end = crate::model::prefix_end(prefix);
    (!prefix.is_empty() && end.as_slice() > prefix).then_some(end)
}

fn unix_second(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_changes_name_who_stopped_answering_and_where_the_leader_went() {
        let m = |id: u64, leader: u64, up: bool| MemberStatus {
            id,
            name: format!("m{id}"),
            endpoint: format!("http://e{id}"),
            is_learner: false,
            status: up.then(|| EtcdStatus {
                member_id: id,
                leader,
                ..Default::default()
            }),
            error: (!up).then(|| "refused".to_string()),
        };
        let before = [m(1, 1, true), m(2, 1, true), m(3, 1, true)];
        assert!(member_changes(&before, &before).is_empty());
        assert!(
            member_changes(&[], &before).is_empty(),
            "the first poll says nothing"
        );
        let after = [m(1, 2, false), m(2, 2, true), m(3, 2, true)];
        assert_eq!(
            member_changes(&before, &after),
            [
                "etcd member m1 (http://e1) stopped answering: refused",
                "etcd's leader moved from m1 (http://e1) to m2 (http://e2)"
            ]
        );
        assert_eq!(
            member_changes(&after, &[m(1, 2, true), m(2, 2, true), m(3, 2, true)]),
            ["etcd member m1 (http://e1) answers again"]
        );
    }
    use std::time::Duration;

    fn kv(key: &str, val: &str, create: i64, modr: i64, ver: i64) -> KeyValue {
        KeyValue {
            key: Bytes::copy_from_slice(key.as_bytes()),
            create_revision: create,
            mod_revision: modr,
            version: ver,
            lease: 0,
            value: Bytes::copy_from_slice(val.as_bytes()),
        }
    }

    fn at(s: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_700_000_000 + s)
    }

    fn put(k: KeyValue) -> WatchEvent {
        WatchEvent {
            kind: EventKind::Put,
            kv: k,
            prev_kv: None,
        }
    }

    fn del(key: &str, rev: i64) -> WatchEvent {
        WatchEvent {
            kind: EventKind::Delete,
            kv: kv(key, "", 0, rev, 0),
            prev_kv: None,
        }
    }

    fn obs(r: &mut Replica, s: u64, o: Observation) {
        r.apply(&Stamped { at: at(s), obs: o });
    }

    fn listed(r: &mut Replica, rev: i64, kvs: Vec<KeyValue>, compacted: Option<i64>) {
        obs(r, 0, Observation::ListBegin { revision: rev });
        obs(r, 0, Observation::ListPage { kvs });
        obs(
            r,
            0,
            Observation::ListDone {
                revision: rev,
                compacted,
            },
        );
    }

    #[test]
    fn history_tombstones_and_point_in_time() {
        let mut r = Replica::new(ReplicaConfig::default());
        listed(
            &mut r,
            2,
            vec![kv("/registry/pods/a/p", "v1", 2, 2, 1)],
            None,
        );
        obs(
            &mut r,
            1,
            Observation::Events {
                revision: 4,
                events: vec![
                    put(kv("/registry/pods/a/p", "v2", 2, 3, 2)),
                    del("/registry/pods/a/p", 4),
                ],
            },
        );
        assert_eq!(r.revision(), 4);
        assert_eq!(r.get(b"/registry/pods/a/p"), None);
        assert_eq!(
            r.get_at(b"/registry/pods/a/p", 3).unwrap().unwrap().value,
            Some(Bytes::from_static(b"v2"))
        );
        assert_eq!(
            r.get_at(b"/registry/pods/a/p", 2).unwrap().unwrap().version,
            1
        );
        assert_eq!(r.get_at(b"/registry/pods/a/p", 4).unwrap(), None);
        let h = r.history(b"/registry/pods/a/p");
        assert_eq!(h.len(), 3);
        assert!(h[2].value.is_none());
        assert_eq!(r.live_keys(), 0);
        assert_eq!(r.resources()[0].puts, 1);
        assert_eq!(r.resources()[0].deletes, 1);
        // Re-create after delete.
        obs(
            &mut r,
            2,
            Observation::Events {
                revision: 5,
                events: vec![put(kv("/registry/pods/a/p", "v3", 5, 5, 1))],
            },
        );
        assert_eq!(r.live_keys(), 1);
        assert_eq!(r.get(b"/registry/pods/a/p").unwrap().create_revision, 5);
    }

    #[test]
    fn duplicate_events_are_not_applied_twice() {
        let mut r = Replica::new(ReplicaConfig::default());
        listed(&mut r, 1, vec![], None);
        let e = Observation::Events {
            revision: 2,
            events: vec![put(kv("/registry/pods/a/p", "v1", 2, 2, 1))],
        };
        obs(&mut r, 1, e.clone());
        obs(&mut r, 1, e);
        assert_eq!(r.history(b"/registry/pods/a/p").len(), 1);
        assert_eq!(r.resources()[0].puts, 1);
    }

    #[test]
    fn events_behind_a_progress_notification_still_apply() {
        // etcd-io/etcd#15220: progress at 5 may arrive before the event at 4.
        let mut r = Replica::new(ReplicaConfig::default());
        listed(&mut r, 3, vec![], None);
        obs(&mut r, 1, Observation::Progress { revision: 5 });
        obs(
            &mut r,
            1,
            Observation::Events {
                revision: 5,
                events: vec![put(kv("/registry/pods/a/late", "v", 4, 4, 1))],
            },
        );
        assert!(r.get(b"/registry/pods/a/late").is_some());
        assert_eq!(r.revision(), 5);
    }

    #[test]
    fn a_head_announced_ahead_of_its_events_is_never_applied() {
        // What etcd 3.4.23 was seen to send (etcd-io/etcd#15220): the progress at 101
        // before the event at 101 that it covers.
        let mut r = Replica::new(ReplicaConfig::default());
        listed(
            &mut r,
            100,
            vec![kv("/registry/pods/a/p", "v1", 100, 100, 1)],
            None,
        );
        obs(&mut r, 1, Observation::HeadAtLeast { revision: 101 });
        assert_eq!(
            r.revision(),
            100,
            "the replica must not pass an event it lacks"
        );
        assert_eq!(r.watch_health().head_at_least, 101);
        obs(
            &mut r,
            1,
            Observation::Events {
                revision: 101,
                events: vec![put(kv("/registry/pods/a/p", "v2", 100, 101, 2))],
            },
        );
        assert_eq!(r.revision(), 101);
        assert_eq!(r.get(b"/registry/pods/a/p").unwrap().mod_revision, 101);
        let w = r.watch_health();
        assert_eq!(w.progress_ahead_of_events, 1);
        assert_eq!(w.anomalies(), 1);
        assert!(
            r.notes().back().unwrap().1.contains("15220"),
            "{:?}",
            r.notes()
        );
        // A head announced with nothing pending under the prefix (writes elsewhere): shown,
        // not applied, and not an anomaly.
        obs(&mut r, 2, Observation::HeadAtLeast { revision: 150 });
        assert_eq!(r.revision(), 101);
        assert_eq!(r.watch_health().anomalies(), 1);
        assert_eq!(r.summary().watch.head_at_least, 150);
    }

    #[test]
    fn progress_below_the_applied_revision_and_repeated_events_are_counted() {
        let mut r = Replica::new(ReplicaConfig::default());
        listed(&mut r, 10, vec![], None);
        // Lower than the watch's own start revision (11). A head "at least 9" is still
        // true at 10 (and what etcd before 3.4.25/3.5.8 sends): not an anomaly.
        obs(&mut r, 1, Observation::Progress { revision: 8 });
        obs(&mut r, 1, Observation::HeadAtLeast { revision: 9 });
        assert_eq!(r.revision(), 10);
        assert_eq!(r.watch_health().progress_behind, 1);
        let e = Observation::Events {
            revision: 11,
            events: vec![put(kv("/registry/pods/a/p", "v1", 11, 11, 1))],
        };
        obs(&mut r, 2, e.clone());
        obs(&mut r, 2, e);
        assert_eq!(r.watch_health().repeated_events, 1);
        assert_eq!(r.watch_health().anomalies(), 2);
        assert_eq!(r.history(b"/registry/pods/a/p").len(), 1);
        // Noted at the 1st time only, not at the 2nd.
        let notes: Vec<_> = r.notes().iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(
            notes
                .iter()
                .filter(|n| n.contains("below revision"))
                .count(),
            1
        );
        assert!(worth_noting(1) && worth_noting(10) && worth_noting(1000));
        assert!(!worth_noting(0) && !worth_noting(2) && !worth_noting(11));
    }

    #[test]
    fn a_delete_row_carries_the_deleted_value() {
        let mut r = Replica::new(ReplicaConfig::default());
        listed(
            &mut r,
            5,
            vec![kv("/registry/pods/a/p", "pod bytes", 5, 5, 1)],
            None,
        );
        // No prev_kv (regscope's watch does not ask for it): the replica's copy.
        obs(
            &mut r,
            1,
            Observation::Events {
                revision: 6,
                events: vec![del("/registry/pods/a/p", 6)],
            },
        );
        assert_eq!(
            r.events().back().unwrap().value,
            Bytes::from_static(b"pod bytes")
        );
        // With prev_kv, that one.
        let mut with_prev = del("/registry/pods/a/q", 7);
        with_prev.prev_kv = Some(kv("/registry/pods/a/q", "as etcd had it", 1, 2, 1));
        obs(
            &mut r,
            1,
            Observation::Events {
                revision: 7,
                events: vec![with_prev],
            },
        );
        assert_eq!(
            r.events().back().unwrap().value,
            Bytes::from_static(b"as etcd had it")
        );
        assert_eq!(r.watch_health().unknown_deletes, 0);
        // A key never held: nothing to show, counted.
        obs(
            &mut r,
            1,
            Observation::Events {
                revision: 8,
                events: vec![del("/registry/pods/a/never", 8)],
            },
        );
        assert!(r.events().back().unwrap().value.is_empty());
        assert_eq!(r.watch_health().unknown_deletes, 1);
    }

    #[test]
    fn etcd_alarms_raised_and_cleared_are_noted_once_each() {
        let mut r = Replica::new(ReplicaConfig::default());
        let status = |errors: Vec<&str>| {
            Observation::EtcdStatus(EtcdStatus {
                errors: errors.into_iter().map(String::from).collect(),
                ..Default::default()
            })
        };
        obs(&mut r, 1, status(vec![]));
        obs(
            &mut r,
            2,
            status(vec![
                "memberID:1 alarm:NOSPACE ",
                "memberID:2 alarm:NOSPACE ",
            ]),
        );
        obs(&mut r, 3, status(vec!["memberID:1 alarm:NOSPACE "]));
        assert_eq!(r.etcd_status().unwrap().1.alarms(), vec!["NOSPACE"]);
        obs(&mut r, 4, status(vec![]));
        let notes: Vec<&str> = r.notes().iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].starts_with("etcd raised alarm NOSPACE"),
            "{notes:?}"
        );
        assert!(notes[1].contains("cleared (were NOSPACE)"), "{notes:?}");
        assert_eq!(r.summary().etcd_status.unwrap().errors.len(), 0);
    }

    #[test]
    fn a_change_of_member_is_a_failover() {
        let mut r = Replica::new(ReplicaConfig::default());
        let server = |e: &str| Observation::Server {
            endpoint: e.into(),
            version: "3.5.1".into(),
            cluster_id: 7,
        };
        obs(&mut r, 1, server("http://127.0.0.1:1"));
        obs(&mut r, 2, server("http://127.0.0.1:1"));
        assert!(r.failovers().is_empty());
        obs(&mut r, 3, server("http://127.0.0.1:2"));
        assert_eq!(r.failovers().len(), 1);
        assert_eq!(r.failovers()[0].2, "http://127.0.0.1:2");
        assert_eq!(
            r.notes().back().unwrap().1,
            "failover: reading from http://127.0.0.1:2 (was http://127.0.0.1:1)"
        );
    }

    #[test]
    fn a_head_confirmed_by_two_quiet_progress_notifications_counts_as_synced() {
        let mut r = Replica::new(ReplicaConfig::default());
        listed(&mut r, 10, vec![], None);
        obs(&mut r, 1, Observation::HeadAtLeast { revision: 15 });
        assert_eq!(r.synced_revision(), 10, "one announcement is not enough");
        obs(&mut r, 2, Observation::HeadAtLeast { revision: 15 });
        assert_eq!(r.synced_revision(), 15);
        assert_eq!(r.revision(), 10);
        // Events between two announcements: the later head counts only after a quiet pair.
        obs(&mut r, 3, Observation::HeadAtLeast { revision: 20 });
        obs(
            &mut r,
            3,
            Observation::Events {
                revision: 20,
                events: vec![put(kv("/registry/pods/a/p", "v", 20, 20, 1))],
            },
        );
        obs(&mut r, 4, Observation::HeadAtLeast { revision: 25 });
        assert_eq!(r.synced_revision(), 20);
        obs(&mut r, 5, Observation::HeadAtLeast { revision: 25 });
        assert_eq!(r.synced_revision(), 25);
    }

    #[test]
    fn progress_never_moves_back() {
        let mut r = Replica::new(ReplicaConfig::default());
        listed(&mut r, 10, vec![], None);
        obs(&mut r, 1, Observation::Progress { revision: 7 });
        assert_eq!(r.revision(), 10);
        obs(&mut r, 1, Observation::Progress { revision: 12 });
        assert_eq!(r.revision(), 12);
    }

    #[test]
    fn compaction_drops_superseded_history_and_dead_keys() {
        let mut r = Replica::new(ReplicaConfig::default());
        listed(&mut r, 1, vec![], None);
        obs(
            &mut r,
            1,
            Observation::Events {
                revision: 5,
                events: vec![
                    put(kv("/registry/cm/a/x", "1", 2, 2, 1)),
                    put(kv("/registry/cm/a/x", "2", 2, 3, 2)),
                    put(kv("/registry/cm/a/y", "1", 4, 4, 1)),
                    del("/registry/cm/a/y", 5),
                ],
            },
        );
        assert_eq!(r.history_usage().0, 3); // x@2, y@4, y tombstone
        obs(
            &mut r,
            2,
            Observation::Compacted {
                revision: 5,
                source: CompactionSource::Watch,
            },
        );
        assert_eq!(r.history(b"/registry/cm/a/x").len(), 1);
        assert!(r.history(b"/registry/cm/a/y").is_empty());
        assert_eq!(r.history_usage(), (0, 0));
        assert!(matches!(
            r.get_at(b"/registry/cm/a/x", 4),
            Err(HistoryError::Compacted { .. })
        ));
    }

    #[test]
    fn budget_keeps_newest_of_live_keys() {
        let cfg = ReplicaConfig {
            history_budget: 1000,
            ..ReplicaConfig::default()
        };
        let mut r = Replica::new(cfg);
        listed(&mut r, 1, vec![], None);
        let big = "x".repeat(400);
        let mut events = Vec::new();
        for i in 0..10 {
            events.push(put(kv("/registry/cm/a/x", &big, 2, 2 + i, 1 + i)));
        }
        obs(
            &mut r,
            1,
            Observation::Events {
                revision: 11,
                events,
            },
        );
        assert!(r.history_usage().1 <= 1000);
        assert_eq!(r.get(b"/registry/cm/a/x").unwrap().mod_revision, 11);
        assert!(matches!(
            r.get_at(b"/registry/cm/a/x", 3),
            Err(HistoryError::Dropped { .. })
        ));
    }

    #[test]
    fn relist_applies_difference_and_records_gap() {
        let mut r = Replica::new(ReplicaConfig::default());
        listed(
            &mut r,
            3,
            vec![
                kv("/registry/cm/d/a", "v1", 2, 2, 1),
                kv("/registry/cm/d/b", "v1", 3, 3, 1),
            ],
            None,
        );
        // While away: a changed to v2 at 4, b deleted at 5, c created at 6; compacted at 103.
        listed(
            &mut r,
            103,
            vec![
                kv("/registry/cm/d/a", "v2", 2, 4, 2),
                kv("/registry/cm/d/c", "v1", 6, 6, 1),
            ],
            Some(103),
        );
        assert_eq!(r.get(b"/registry/cm/d/a").unwrap().mod_revision, 4);
        assert_eq!(r.get(b"/registry/cm/d/b"), None);
        assert!(r.get(b"/registry/cm/d/c").is_some());
        assert_eq!(r.live_keys(), 2);
        assert_eq!(r.gaps().len(), 1);
        assert_eq!((r.gaps()[0].from, r.gaps()[0].to), (4, 103));
        assert!(r
            .diff(&[
                kv("/registry/cm/d/a", "v2", 2, 4, 2),
                kv("/registry/cm/d/c", "v1", 6, 6, 1)
            ])
            .is_empty());
        let d = r.diff(&[kv("/registry/cm/d/a", "v3", 2, 4, 2)]);
        assert_eq!(d.len(), 2);
    }

    #[test]
    fn time_of_revision() {
        let mut r = Replica::new(ReplicaConfig::default());
        listed(&mut r, 1, vec![], None);
        obs(
            &mut r,
            5,
            Observation::Events {
                revision: 3,
                events: vec![
                    put(kv("/registry/cm/a/x", "1", 2, 2, 1)),
                    put(kv("/registry/cm/a/x", "2", 2, 3, 2)),
                ],
            },
        );
        assert_eq!(r.time_of(2), Some(at(5)));
        assert_eq!(r.time_of(1), Some(at(0)));
        assert_eq!(r.time_of(4), None);
    }

    #[test]
    fn virtual_paging() {
        let mut r = Replica::new(ReplicaConfig::default());
        let kvs = (0..100)
            .map(|i| kv(&format!("/registry/cm/d/k{i:03}"), "v", 2, 2, 1))
            .collect();
        listed(&mut r, 2, kvs, None);
        let first = r.live_keys_after(b"/registry/cm/", None, 10);
        assert_eq!(first.len(), 10);
        let next = r.live_keys_after(b"/registry/cm/", Some(&first[9]), 10);
        assert_eq!(&next[0][..], b"/registry/cm/d/k010");
        let back = r.live_keys_before(b"/registry/cm/", Some(&next[0]), 3);
        assert_eq!(&back[0][..], b"/registry/cm/d/k009");
        assert_eq!(
            r.live_keys_before(b"/registry/cm/", None, 1)[0].as_ref(),
            b"/registry/cm/d/k099"
        );
        // Keys sorting after the prefix's range must not hide the prefix's last keys.
        obs(
            &mut r,
            1,
            Observation::Events {
                revision: 3,
                events: vec![put(kv("/registry/zz/d/a", "v", 3, 3, 1))],
            },
        );
        assert_eq!(
            r.live_keys_before(b"/registry/cm/", None, 1)[0].as_ref(),
            b"/registry/cm/d/k099"
        );
    }
}
