//! The MVCC replica: every version of every key seen under the prefix, with tombstones, back
//! to etcd's compacted revision or until the history budget drops the oldest history.
//!
//! Model (etcd MVCC, v3.4+): one global revision; each key has create_revision,
//! mod_revision, version and lease; a delete leaves a tombstone at the deleting revision;
//! compaction at revision C discards every version superseded at or before C and every key
//! whose newest version at C is a tombstone.
//!
//! Memory: keys live in a [`KeyTable`] (a slab with a hash table and a lazily settled key
//! order); each version holds its value as received until a worker thread packs it with
//! zstd ([`self::packing`]), and views get values back whole. History (superseded
//! versions and tombstones) is charged against `history_budget` at its raw size, so what
//! the budget keeps does not depend on how far packing got; the newest version of every
//! live key is never dropped.

use std::collections::{HashMap, VecDeque};
use std::time::SystemTime;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

mod answers;
mod append;
pub(in crate::store) mod checkpoint;
mod clock;
mod compaction;
mod discards;
mod event;
mod gaps;
mod image;
pub(crate) mod key_table;
pub mod list_progress;
pub(crate) mod packing;
mod read;
pub mod stats;
#[cfg(test)]
mod tests;
pub(crate) mod versions;
pub mod writers;

use self::clock::{unix_second, ClockCache};
use super::etcd_cluster::{worth_noting, WatchHealth};
use super::notes::{Note, Notes};
pub use read::{
    ConnectionSummary, Difference, EventRecord, GapChanges, GapSummary, HistoryError, KeyMeta,
    NoteSummary, Replacement, ReplicaMemory, Summary, Unseen, UnseenChange, UnseenCounts,
    VersionMeta, VersionValue,
};

use self::list_progress::ListProgress;
use self::packing::Val;
use self::stats::{Growth, ResourceStats};
use self::versions::{Queued, Version, VersionStore, NO_MARK};
use self::writers::{Found, Writers};
use crate::model::{
    escape_bytes, CompactionSeen, CompactionSource, EventKind, Gap, KeyPath, KeyValue, Observation,
    Revision, Stamped,
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

/// The replica. See the module docs. Saved whole in a recording's checkpoint (with the
/// etcd cluster's state and the notes, see [`checkpoint`]), so that a replay resumed from it
/// equals one played from the start.
pub struct Replica {
    cfg: ReplicaConfig,
    /// Keys, versions, the history queue and the packing dictionaries, as one image.
    versions: VersionStore,
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
    legacy_history_queue: VecDeque<(Revision, Bytes)>,
    /// First wall-clock time each revision range was observed: (revision, time), ascending.
    rev_times: VecDeque<(Revision, SystemTime)>,
    events: VecDeque<EventRecord>,
    growth: Growth,
    gaps: Vec<Gap>,
    /// What each gap's relist showed had changed in it (checkpoint format 7 and later).
    gap_changes: Vec<GapChanges>,
    compactions: VecDeque<CompactionSeen>,
    live_keys: u64,
    live_bytes: u64,
    list: Option<ListState>,
    /// The newest list's progress (kept after it is done, for the header and notes). Not
    /// in checkpoints: a replay resumed mid-list shows no estimate for that list.
    list_progress: Option<ListProgress>,
    gen: u32,
    /// Counts every change, so views can tell whether to redraw.
    change_seq: u64,
    last_observed: Option<SystemTime>,
    /// Time arithmetic of the newest observation, kept (not in checkpoints).
    clock: ClockCache,
    /// Who writes: counters per (resource, managedFields writer) (checkpoint format 5 and
    /// later; older checkpoints start them empty).
    writers: Writers,
    /// When the newest reset (etcd replaced) happened: gaps before it are of another
    /// etcd's revisions. Saved as the etcd cluster's newest replacement.
    reset_at: Option<SystemTime>,
    /// Bytes let go of, kept for the caller to free (see [`Replica::defer_frees`]).
    discards: self::discards::Discards<Bytes>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(in crate::store) struct ListState {
    revision: Revision,
    keys: u64,
}

impl Replica {
    pub fn new(cfg: ReplicaConfig) -> Self {
        let growth = Growth::new(cfg.growth_cap);
        Self {
            cfg,
            versions: VersionStore::default(),
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
            gap_changes: Vec::new(),
            compactions: VecDeque::new(),
            live_keys: 0,
            live_bytes: 0,
            list: None,
            list_progress: None,
            gen: 0,
            change_seq: 0,
            last_observed: None,
            clock: ClockCache::default(),
            writers: Writers::default(),
            reset_at: None,
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
        self.rederive_writers_state();
        if let Some((_, k, e)) = self
            .versions
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
        let keys = &self.versions.keys;
        self.versions.history_queue = legacy
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

    /// While on, applying hands the packing worker nothing (explicit [`Replica::maintain`]
    /// still does); turned off, a sweep runs if one is due. A replay turns it on while it
    /// applies a stretch as fast as it can (a seek, playing at full speed): there the
    /// session's time runs minutes per wall-clock second, and most values packed on the
    /// way were superseded and compacted away milliseconds later, while the packing
    /// worker took the core the read-ahead needed. Values meanwhile stay raw (the history
    /// budget bounds them as ever) and are packed from the end of the stretch on.
    pub fn defer_packing(&mut self, on: bool) {
        self.versions.sweeps_deferred = on;
        if !on && self.versions.sweep_due() {
            self.sweep();
        }
    }

    /// Stops packing values (those packed stay packed): for sessions that only count, or
    /// that are about to be thrown away.
    pub fn disable_packing(&mut self) {
        self.versions.codebook.disable();
    }

    /// Applies one observation on its own, for a replica outside a session (tests and
    /// benchmarks build replicas from literal observations): the etcd cluster's part (watch
    /// health, notes, connection, a reset) is not kept, and applying one here is a mistake
    /// that debug builds stop at. A session applies through [`Replica::apply_observed`].
    pub fn apply(&mut self, st: &Stamped) {
        debug_assert!(
            !matches!(
                st.obs,
                Observation::Conn(_)
                    | Observation::Server { .. }
                    | Observation::EtcdStatus(_)
                    | Observation::Members(_)
                    | Observation::Note(_)
                    | Observation::Reset { .. }
            ),
            "an observation of the etcd cluster applied to a replica alone is lost: apply it to a Session"
        );
        let mut watch = WatchHealth::default();
        self.apply_observed(st, None, &mut watch, &mut Notes::default())
    }

    /// Applies one observation to the MVCC store: lists, events, progress notifications
    /// and compactions. Events at or below the applied revision are ignored (a resumed watch
    /// never applies an event twice), progress never moves the revision back. `found`: the
    /// writers of its events found ahead of time (see [`WriterNames`]; the same state as
    /// without them). How the watch stream kept its contract is counted in `watch` (the
    /// etcd cluster's, [`crate::store::EtcdCluster`]), what is worth a line goes to `notes`.
    /// Every other observation only counts as applied (see [`Replica::change_seq`]).
    pub(crate) fn apply_observed(
        &mut self,
        st: &Stamped,
        found: Option<Found<'_>>,
        watch: &mut WatchHealth,
        notes: &mut Notes,
    ) {
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
            } => self.finish_list(*revision, *compacted, st.at, notes),
            Observation::Events { revision, events } => {
                let second = self.clock.second(st.at);
                let mut applied = 0u32;
                for (i, ev) in events.iter().enumerate() {
                    // Deduplicate against events and lists only, not progress: etcd before
                    // 3.4.25/3.5.8 can send a progress notification ahead of events still
                    // queued for the watcher (etcd-io/etcd#15220), and those must apply.
                    if ev.kv.mod_revision <= self.events_through {
                        watch.repeated_events += 1;
                        if worth_noting(watch.repeated_events) {
                            notes.push(
                                st.at,
                                Note::RepeatedEvent {
                                    revision: ev.kv.mod_revision,
                                    applied_through: self.events_through,
                                    count: watch.repeated_events,
                                },
                            );
                        }
                        continue;
                    }
                    if ev.kv.mod_revision <= watch.progress_through {
                        watch.progress_ahead_of_events += 1;
                        if worth_noting(watch.progress_ahead_of_events) {
                            notes.push(
                                st.at,
                                Note::ProgressAheadOfEvent {
                                    progress: watch.progress_through,
                                    event: ev.kv.mod_revision,
                                    count: watch.progress_ahead_of_events,
                                },
                            );
                        }
                    }
                    let f = found.and_then(|f| Some((f.writers.get(i)?, f.names)));
                    self.apply_event(ev, st.at, second, f, watch, notes);
                    applied += 1;
                }
                if applied > 0 {
                    watch.events_since_progress = true;
                }
                watch.head_at_least = watch.head_at_least.max(*revision);
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
                self.progress_seen(*revision, st.at, true, watch, notes);
                self.advance(*revision, st.at);
                self.growth.record(unix_second(st.at), self.applied, 0);
            }
            Observation::HeadAtLeast { revision } => {
                self.progress_seen(*revision, st.at, false, watch, notes);
                self.growth.record(unix_second(st.at), self.applied, 0);
            }
            Observation::Compacted { revision, source } => {
                self.set_compacted(*revision, *source, st.at)
            }
            // etcd itself is the etcd cluster's (`store::etcd_cluster`), notes and the reset
            // are the session's; the apiserver side lives in `store::metrics` and
            // `store::informer`.
            Observation::EtcdStatus(_)
            | Observation::Members(_)
            | Observation::Conn(_)
            | Observation::Server { .. }
            | Observation::Note(_)
            | Observation::Reset { .. }
            | Observation::Scrape { .. }
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

    /// etcd's compacted revision as another source than the watch told it (an etcd scrape's
    /// `etcd_debugging_mvcc_compact_revision`): applied as a
    /// [`crate::model::Observation::Compacted`] from that source would be.
    pub(crate) fn compaction_seen(
        &mut self,
        revision: Revision,
        source: CompactionSource,
        at: SystemTime,
    ) {
        self.change_seq += 1;
        self.last_observed = Some(at);
        self.set_compacted(revision, source, at);
        self.maybe_sweep(1);
    }

    /// Looks at the clock every few hundred keys and events, and sweeps for packing
    /// when the last sweep is old enough (see [`VersionStore::maybe_sweep`]).
    fn maybe_sweep(&mut self, work: usize) {
        self.versions.maybe_sweep(work, &mut self.discards);
    }

    fn sweep(&mut self) {
        self.versions.sweep(&mut self.discards);
    }

    /// A clock tick of the stream (once a second live): hands the packing worker the
    /// values offered since, even when they do not fill a batch, so that a quiet
    /// cluster's values are packed too. Paced by the wall clock as every sweep is: a
    /// replay applies an hour's ticks in a second, and a sweep per tick there packed
    /// values that the next compaction dropped a few milliseconds later.
    pub(crate) fn tick(&mut self) {
        if self.versions.sweep_due() {
            self.sweep();
        }
    }

    /// Takes what the packing worker has packed and hands it more (what every apply does
    /// at its end), for a replica that is not being applied to: an idle console, a
    /// benchmark waiting for packing to catch up. Also settles the key order when many
    /// keys wait to be sorted, so that the next range does not pay for all of them at once.
    pub fn maintain(&mut self) {
        self.sweep();
        let keys = &self.versions.keys;
        if keys.unsettled() > keys.len() / 8 + 65_536 {
            self.versions.keys.settle();
        }
    }

    /// Brings the key order up to date, so that ranges (the key browser, `verify`,
    /// checkpoints) cost a binary search. The console calls it before drawing what needs
    /// ranges; ranges are exact without it, only slower. See [`key_table::KeyTable::settle`].
    pub fn settle(&mut self) {
        self.versions.keys.settle();
    }

    /// Forgets every key, version, event and statistic, so a following list starts from
    /// scratch: etcd was replaced (`line` says how, for the event log's row). What the screen
    /// showed stays, up to a visible break: the head chart's series (the revision drops),
    /// the event log with a row that says what happened, the compactions and gaps seen
    /// (revisions use only the new etcd's gaps: `current_gaps`), the write counters, and the
    /// resources' names (so the old rows keep theirs; their key counts start again with the
    /// new etcd's list).
    pub(crate) fn reset(&mut self, at: SystemTime, line: String) {
        let mut fresh = Replica::new(self.cfg.clone());
        fresh.growth = std::mem::replace(&mut self.growth, Growth::new(0));
        fresh.compactions = std::mem::take(&mut self.compactions);
        fresh.gaps = std::mem::take(&mut self.gaps);
        fresh.gap_changes = std::mem::take(&mut self.gap_changes);
        fresh.writers = std::mem::take(&mut self.writers);
        fresh.resource_ids = std::mem::take(&mut self.resource_ids);
        fresh.resources = self
            .resources
            .iter()
            .map(|r| ResourceStats::new(r.resource.clone()))
            .collect();
        fresh.events = std::mem::take(&mut self.events);
        let applied = self.applied;
        fresh.log_event(EventRecord {
            at,
            revision: applied,
            kind: EventKind::Put,
            key: Bytes::new(),
            value: Bytes::new(),
            resource: 0,
            unseen: None,
            managed_unchanged: false,
            note: Some(line),
        });
        fresh.change_seq = self.change_seq;
        fresh.last_observed = self.last_observed;
        fresh.reset_at = Some(at);
        *self = fresh;
    }

    /// Rewrites the event log's newest reset row (see [`Replica::reset`]) with `line`, once
    /// the new etcd's revision is known.
    pub(crate) fn relabel_reset(&mut self, line: String) {
        if let Some(row) = self.events.iter_mut().rev().find(|e| e.note.is_some()) {
            row.note = Some(line);
        }
    }

    /// Books a progress notification at `rev` (applied or not): etcd's head, and, for one
    /// that says every event up to it was sent (`ordered`, [`Observation::Progress`]),
    /// whether it fell behind what is applied. An [`Observation::HeadAtLeast`] is only a
    /// lower bound on etcd's head: below what is applied it is still true, and etcd
    /// versions that send it (etcd-io/etcd#15220) do stamp a notification with the
    /// revision at which it was asked for, then send it after later events.
    fn progress_seen(
        &mut self,
        rev: Revision,
        at: SystemTime,
        ordered: bool,
        w: &mut WatchHealth,
        notes: &mut Notes,
    ) {
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
                notes.push(
                    at,
                    Note::ProgressBehind {
                        revision: rev,
                        applied: self.applied,
                        count: n,
                    },
                );
            }
        }
    }

    fn advance(&mut self, rev: Revision, at: SystemTime) {
        if rev > self.applied {
            self.applied = rev;
            match self.rev_times.back_mut() {
                // Revisions that arrive within 100 ms of the entry's time share it: the map
                // stays small (at most ~10 entries a second) at any write rate.
                Some((r, t)) if at >= *t && at < self.clock.window_end(*t) => *r = rev,
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
        self.writers.migrations.resource_named(id, &name);
        self.resource_ids.insert(name.clone(), id);
        self.resources.push(ResourceStats::new(name));
        id
    }

    fn apply_listed(&mut self, kv: &KeyValue) {
        let gen = self.gen;
        if let Some(e) = self.versions.keys.get_mut(&kv.key) {
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
        if let Some((_, e)) = self.versions.keys.at_mut(slot, key_gen) {
            e.seen_gen = gen;
            // Its managedFields mark was of a version before this one.
            e.mark = NO_MARK;
        }
    }

    fn finish_list(
        &mut self,
        revision: Revision,
        compacted: Option<Revision>,
        at: SystemTime,
        notes: &mut Notes,
    ) {
        let gen = self.gen;
        let before = self.events_through;
        self.events_through = self.events_through.max(revision);
        // Live keys the list did not return were deleted while we were away; they become
        // tombstones in key order (as a replay from a checkpoint must repeat them).
        let mut gone: Vec<Box<[u8]>> = self
            .versions
            .keys
            .iter_unordered()
            .filter(|(_, _, e)| e.seen_gen != gen && e.live().is_some())
            .map(|(_, k, _)| k.into())
            .collect();
        gone.sort_unstable();
        // After a gap, what the relist shows had changed in it becomes event rows marked
        // as unseen: keys the list wrote a newer version for (created or changed), and the
        // keys it did not return (deleted, with the last copy held). Read before the
        // tombstones go in.
        let unseen = match compacted {
            Some(_) if self.first_list.is_some() => {
                Some(self.unseen_rows(before, revision, &gone, at))
            }
            _ => None,
        };
        for k in gone {
            self.push_version(&k, Version::tombstone(revision));
        }
        self.list = None;
        if self.first_list.is_none() {
            self.first_list = Some(revision);
        }
        if let Some((rows, changes)) = unseen {
            for row in rows {
                self.log_event(row);
            }
            self.gap_changes.push(changes);
        }
        if let Some(c) = compacted {
            self.gaps.push(Gap {
                from: before + 1,
                to: revision,
                compact_revision: c,
                at,
            });
            notes.push(
                at,
                Note::Resync {
                    from: before + 1,
                    to: revision,
                    compact_revision: c,
                },
            );
        }
        self.advance(revision, at);
        // The head chart takes the revision a list lands on (a relist after a gap jumps
        // it), not only revisions of events.
        self.growth.record(unix_second(at), self.applied, 0);
        self.enforce_budget();
    }

    /// Appends a row to the event log, dropping the oldest past its cap.
    fn log_event(&mut self, row: EventRecord) {
        if self.events.len() >= self.cfg.event_log_cap {
            if let Some(old) = self.events.pop_front() {
                self.discards.keep(old.key);
                self.discards.keep(old.value);
            }
        }
        self.events.push_back(row);
    }

    /// Replaces every value held for keys starting with `key_prefix` (every version and
    /// the event log's copies) by `f(value)`. Recordings use it to redact Secret values in
    /// a checkpoint; `f` must keep lengths for the size accounting to stay true.
    pub fn map_values(&mut self, key_prefix: &[u8], f: impl Fn(&Bytes) -> Bytes) {
        let store = &mut self.versions;
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
    fn unpacked(&self, resource: u32, v: &Version) -> VersionValue {
        VersionValue {
            create_revision: v.create_revision,
            mod_revision: v.mod_revision,
            version: v.version,
            lease: v.lease,
            value: (!v.value.is_tombstone()).then(|| {
                packing::unpack(&v.value, self.versions.codebook.dict(resource)).unwrap_or_default()
            }),
        }
    }

    /// Whether bytes let go of are kept for [`Replica::take_discards`] instead of freed in
    /// place (see [`crate::store::Session::defer_frees`]).
    pub fn defer_frees(&mut self, on: bool) {
        self.discards.set(on);
    }

    /// The bytes let go of since the last call, while deferring.
    pub fn take_discards(&mut self) -> Vec<Bytes> {
        self.discards.take()
    }
}
