//! Who writes: write and delete counters per writer and resource, where a writer is the
//! `metadata.managedFields` entry with the newest `time` in the value written
//! ([`crate::decode::last_writer`]): a field manager, an operation (`Update` or `Apply`)
//! and a subresource.
//!
//! managedFields say who owns each field, not who made a write: kube-apiserver moves a
//! manager's entry only when that manager's request changes fields, and a write that
//! changes no owned field (graceful deletion setting `deletionTimestamp`, a finalizer
//! removed by the garbage collector, a no-op update) leaves every entry as it was (see
//! [`crate::decode::last_write_marked`]). So a PUT counts for the writer named in its new
//! value only when its managedFields differ from the key's previous version (or the key is
//! new); otherwise it counts for [`UNCHANGED_WRITER`]. A DELETE counts for [`DELETER`]:
//! kube-apiserver records no deleter. Values encrypted at rest, values without
//! managedFields and values that do not decode count for a writer in parentheses that says
//! so. These rows in parentheses keep the rates adding up to the resource's. List items are
//! not writes and are not counted (as with [`super::ResourceStats`]).
//!
//! The comparison needs the previous version's managedFields: each key's entry in the
//! replica keeps its newest value's mark (a hash of the list, 8 bytes a key, in
//! checkpoints from format 7), read from the previous value itself when not known (after
//! a list, or a checkpoint of an older format).
//!
//! Rates come from per-second buckets keyed by the observation's second, so a replay, and a
//! replay resumed from a checkpoint (which holds these counters), show the same numbers as
//! the live session did.
//!
//! A storage version migration rewrites every object of one resource with a patch that
//! changes no field (kubernetes `pkg/controller/storageversionmigrator/`: an apply patch of
//! the object's type, uid and resourceVersion only), so that kube-apiserver stores it again
//! in the current storage version and with the current encryption key; managedFields stay as
//! they were. The migration is itself an object the replica holds
//! (`<prefix>/storageversionmigrations/<name>`, kubernetes
//! `test/integration/etcd/data.go`), read when written ([`Migrations`]): while one of a
//! resource is pending or running, that resource's PUTs with unchanged managedFields count
//! for [`migration_writer`] instead of [`UNCHANGED_WRITER`]. The set is derived from the
//! keys held, so a checkpoint needs no field for it. A rewrite without such an object (the
//! older kube-storage-version-migrator, `kubectl replace` of everything after an
//! encryption-key rotation) is only estimated ([`RewriteSketch`]).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::decode::migration::{storage_version_migration, Migration, MigrationState};
use crate::decode::{last_write_marked, last_writer, LastWrite};
use crate::model::escape_bytes;

/// Distinct (resource, writer) rows kept; past it, new writers of a resource are counted
/// together as [`OTHER_WRITERS`]. Each row costs about 1.6 KiB (its rate buckets).
pub const MAX_WRITERS: usize = 2048;

/// Writers numbered by one [`WriterNames`] table, and (resource, number) pairs a
/// [`Writers`] remembers rows for, at most: a recording of a cluster whose writers name
/// themselves anew on every write costs a few MB here, and its values past these many are
/// read again when counted (as live).
pub const MAX_NUMBERED: usize = 65_536;

/// The writer that collects new writers once [`MAX_WRITERS`] rows exist.
pub const OTHER_WRITERS: &str = "(other writers)";

/// The writer of a PUT whose managedFields equal the key's previous version's: nobody
/// managedFields names made it.
pub const UNCHANGED_WRITER: &str = "(unknown: same managedFields)";

/// The writer of a DELETE: kube-apiserver records no deleter.
pub const DELETER: &str = "(deleter unknown)";

/// How the writer of a migration's rewrites starts; [`migration_writer`] adds its name and
/// a closing parenthesis.
pub const MIGRATION_WRITER_PREFIX: &str = "(storage version migration ";

/// The writer of PUTs with unchanged managedFields made while the StorageVersionMigration
/// `name` of their resource was pending or running: `(storage version migration <name>)`.
pub fn migration_writer(name: &str) -> String {
    format!("{MIGRATION_WRITER_PREFIX}{name})")
}

/// StorageVersionMigrations remembered at most (finished ones are dropped first; past it a
/// new one is not followed and its rewrites count for [`UNCHANGED_WRITER`]).
pub const MAX_MIGRATIONS: usize = 256;

/// The resource names (as the replica names resources from keys) that hold
/// StorageVersionMigrations: kube-apiserver stores them under the plural without the group
/// (`/registry/storageversionmigrations/<name>`, kubernetes `test/integration/etcd/data.go`);
/// the grouped form is what a server storing them as custom resources would use.
pub const MIGRATION_RESOURCES: [&str; 2] = [
    "storageversionmigrations",
    "storageversionmigrations.storagemigration.k8s.io",
];

/// Seconds of per-second buckets kept per row (rates are asked for over at most 60 s).
const RATE_WINDOW: usize = 64;

/// One second's counts of a row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Bucket {
    second: u64,
    puts: u32,
    deletes: u32,
    bytes: u64,
}

/// Counters of one writer of one resource.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriterStats {
    /// The resource's id in the replica ([`super::Replica::resource_name`]).
    pub resource: u32,
    /// Field manager, or a name in parentheses when the value does not name one.
    pub manager: String,
    /// `Update` or `Apply`; empty when the value names no manager.
    pub operation: String,
    /// `status`, `scale`, …; empty for the main resource.
    pub subresource: String,
    /// PUT events attributed since the replica started.
    pub puts: u64,
    /// DELETE events attributed since the replica started.
    pub deletes: u64,
    /// Value bytes written by those PUTs.
    pub bytes: u64,
    /// Ring of per-second counts, [`RATE_WINDOW`] long.
    buckets: Vec<Bucket>,
}

/// Mean rates of a row over a window, per second.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WriteRates {
    pub puts: f64,
    pub deletes: f64,
    /// Value bytes written per second.
    pub bytes: f64,
}

impl WriteRates {
    /// Puts and deletes per second.
    pub fn writes(&self) -> f64 {
        self.puts + self.deletes
    }
}

impl WriterStats {
    fn new(resource: u32, manager: String, operation: String, subresource: String) -> Self {
        Self {
            resource,
            manager,
            operation,
            subresource,
            puts: 0,
            deletes: 0,
            bytes: 0,
            buckets: vec![Bucket::default(); RATE_WINDOW],
        }
    }

    /// How the writer wrote: `Update`, `Apply`, `Update/status`; empty for a writer in
    /// parentheses.
    pub fn how(&self) -> String {
        match (self.operation.is_empty(), self.subresource.is_empty()) {
            (_, true) => self.operation.clone(),
            (true, false) => format!("/{}", self.subresource),
            (false, false) => format!("{}/{}", self.operation, self.subresource),
        }
    }

    /// Mean rates over the `window` whole seconds before `now_second` (unix seconds);
    /// `window` is clamped to 1..=60.
    pub fn rates(&self, now_second: u64, window: u64) -> WriteRates {
        let window = window.clamp(1, 60);
        let mut r = WriteRates::default();
        for s in now_second.saturating_sub(window)..now_second {
            let b = &self.buckets[(s as usize) % RATE_WINDOW];
            if b.second == s {
                r.puts += f64::from(b.puts);
                r.deletes += f64::from(b.deletes);
                r.bytes += b.bytes as f64;
            }
        }
        let w = window as f64;
        WriteRates {
            puts: r.puts / w,
            deletes: r.deletes / w,
            bytes: r.bytes / w,
        }
    }

    fn count(&mut self, second: u64, delete: bool, bytes: u64) {
        if self.buckets.len() != RATE_WINDOW {
            // Only a damaged checkpoint gets here; start its rates afresh.
            self.buckets = vec![Bucket::default(); RATE_WINDOW];
        }
        let b = &mut self.buckets[(second as usize) % RATE_WINDOW];
        if b.second != second {
            *b = Bucket {
                second,
                ..Default::default()
            };
        }
        if delete {
            b.deletes += 1;
            self.deletes += 1;
        } else {
            b.puts += 1;
            b.bytes += bytes;
            self.puts += 1;
            self.bytes += bytes;
        }
    }
}

/// Every writer row, in the order first seen, with an index by (resource, writer).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Writers {
    rows: Vec<WriterStats>,
    #[serde(skip)]
    /// foldhash: looked up once per event applied, where SipHash cost a tenth of a
    /// replay's time on the session's thread (`cargo bench --bench record -- replay`).
    index: HashMap<Box<[u8]>, u32, foldhash::fast::RandomState>,
    #[serde(skip)]
    scratch: Vec<u8>,
    /// Row by (resource << 32 | writer number) for writers found ahead of time, numbered
    /// in table `numbered_by` (see [`WriterNames`]).
    #[serde(skip)]
    numbered: HashMap<u64, u32, foldhash::fast::RandomState>,
    #[serde(skip)]
    numbered_by: u64,
    /// The StorageVersionMigrations held, derived from the keys (not saved).
    #[serde(skip)]
    pub(super) migrations: Migrations,
    /// Keys rewritten with unchanged managedFields, per resource (not saved: rebuilt from
    /// the event log after a checkpoint, see [`Writers::rebuild_sketches`]).
    #[serde(skip)]
    sketches: HashMap<u32, RewriteSketch, foldhash::fast::RandomState>,
}

/// The StorageVersionMigrations the replica holds, by name, and the resource ids their keys
/// are under.
#[derive(Clone, Debug, Default)]
pub(crate) struct Migrations {
    by_name: BTreeMap<String, Migration>,
    /// Resource ids named as one of [`MIGRATION_RESOURCES`].
    resource_ids: Vec<u32>,
}

impl Migrations {
    /// Notes that resource id `id` is named `name`.
    pub(super) fn resource_named(&mut self, id: u32, name: &str) {
        if MIGRATION_RESOURCES.contains(&name) && !self.resource_ids.contains(&id) {
            self.resource_ids.push(id);
        }
    }

    /// Whether some resource holds StorageVersionMigrations.
    pub(super) fn has_resources(&self) -> bool {
        !self.resource_ids.is_empty()
    }

    /// Whether keys of resource id `id` are StorageVersionMigrations.
    #[inline]
    pub(super) fn holds(&self, id: u32) -> bool {
        !self.resource_ids.is_empty() && self.resource_ids.contains(&id)
    }

    /// Follows the key of migration `name` in the replica: its value as written
    /// (`Some(value)`), or deleted (`None`). In memory only.
    pub(super) fn follow(&mut self, name: &str, value: Option<&[u8]>) {
        let Some(m) = value.and_then(storage_version_migration) else {
            self.by_name.remove(name);
            return;
        };
        if !self.by_name.contains_key(name) && self.by_name.len() >= MAX_MIGRATIONS {
            let done = self
                .by_name
                .iter()
                .find(|(_, m)| !m.state.active())
                .map(|(n, _)| n.clone());
            match done {
                Some(n) => {
                    self.by_name.remove(&n);
                }
                None => return,
            }
        }
        self.by_name.insert(name.to_owned(), m);
    }

    /// Forgets every migration (before they are read again from the keys).
    pub(super) fn clear(&mut self) {
        self.by_name.clear();
        self.resource_ids.clear();
    }

    /// The name of the migration that rewrites the resource the replica names `resource`
    /// now: a running one, else a pending one (the first by name of either).
    pub(super) fn active_for(&self, resource: &str) -> Option<&str> {
        let mut pending = None;
        for (name, m) in &self.by_name {
            if !m.state.active() || !migrates(m, resource) {
                continue;
            }
            if m.state == MigrationState::Running {
                return Some(name);
            }
            pending.get_or_insert(name.as_str());
        }
        pending
    }

    /// Whether any migration is pending or running.
    #[inline]
    pub(super) fn any_active(&self) -> bool {
        !self.by_name.is_empty() && self.by_name.values().any(|m| m.state.active())
    }
}

/// Whether migration `m` rewrites the resource the replica names `resource` (from its keys,
/// [`crate::model::KeyPath`]): kube-apiserver stores built-in resources under their plural
/// without the group, custom resources under `<group>/<plural>`, and two built-ins under
/// older names (kubernetes `test/integration/etcd/data.go`: `ingress`, `controllers`).
fn migrates(m: &Migration, resource: &str) -> bool {
    let historical = match (m.group.as_str(), m.resource.as_str()) {
        ("networking.k8s.io" | "extensions", "ingresses") => Some("ingress"),
        ("", "replicationcontrollers") => Some("controllers"),
        _ => None,
    };
    let grouped = || {
        resource
            .strip_prefix(m.resource.as_str())
            .and_then(|r| r.strip_prefix('.'))
            == Some(m.group.as_str())
    };
    resource == m.resource || historical == Some(resource) || (!m.group.is_empty() && grouped())
}

/// Slots of [`RewriteSketch`], each [`SKETCH_SLOT`] seconds long: six whole slots and the
/// current one cover the last minute.
const SKETCH_SLOTS: usize = 7;
/// Seconds per slot of a [`RewriteSketch`].
const SKETCH_SLOT: u64 = 10;
/// Registers of one slot's HyperLogLog (standard error about 1.04/sqrt(256), 6.5 %; below
/// some 600 keys linear counting, closer still).
const SKETCH_REGISTERS: usize = 256;
/// Resources with a sketch, at most (a sketch costs under 2 KiB).
const MAX_SKETCHES: usize = 512;

/// An estimate of how many distinct keys of one resource were written with unchanged
/// managedFields in the last minute: a HyperLogLog (Flajolet et al., 2007) per ten-second
/// slot, merged over the slots of the minute when asked. Keys are hashed with a fixed seed,
/// so a replay estimates as the live session did.
#[derive(Clone, Debug)]
pub struct RewriteSketch {
    /// (slot number, registers) per slot, ring by slot number.
    slots: Vec<(u64, [u8; SKETCH_REGISTERS])>,
}

impl Default for RewriteSketch {
    fn default() -> Self {
        RewriteSketch {
            slots: vec![(u64::MAX, [0; SKETCH_REGISTERS]); SKETCH_SLOTS],
        }
    }
}

impl RewriteSketch {
    /// Adds `key`, written at unix second `second`.
    pub fn add(&mut self, key: &[u8], second: u64) {
        use std::hash::BuildHasher;
        let h = foldhash::fast::FixedState::with_seed(0x5356_4d00).hash_one(key);
        let slot = second / SKETCH_SLOT;
        let (n, regs) = &mut self.slots[(slot as usize) % SKETCH_SLOTS];
        if *n != slot {
            *n = slot;
            *regs = [0; SKETCH_REGISTERS];
        }
        let i = (h & (SKETCH_REGISTERS as u64 - 1)) as usize;
        let rank = ((h >> 8) | (1 << 56)).trailing_zeros() as u8 + 1;
        regs[i] = regs[i].max(rank);
    }

    /// Distinct keys added in the 60 seconds before `now_second` (by whole slots: between
    /// 60 and 70 seconds), estimated.
    pub fn distinct(&self, now_second: u64) -> f64 {
        let now = now_second / SKETCH_SLOT;
        let first = now.saturating_sub(SKETCH_SLOTS as u64 - 1);
        let mut merged = [0u8; SKETCH_REGISTERS];
        for (n, regs) in &self.slots {
            if (first..=now).contains(n) {
                for (m, r) in merged.iter_mut().zip(regs) {
                    *m = (*m).max(*r);
                }
            }
        }
        let m = SKETCH_REGISTERS as f64;
        let zeros = merged.iter().filter(|&&r| r == 0).count();
        let sum: f64 = merged.iter().map(|&r| (-f64::from(r)).exp2()).sum();
        let raw = 0.7213 / (1.0 + 1.079 / m) * m * m / sum;
        if raw <= 2.5 * m && zeros > 0 {
            m * (m / zeros as f64).ln()
        } else {
            raw
        }
    }
}

/// A resource of at least these many keys can be said to be rewritten whole.
pub const REWRITE_MIN_KEYS: u64 = 20;
/// The share of a resource's keys that, rewritten with unchanged managedFields within a
/// minute, makes the writers view suggest a rewrite of every object.
pub const REWRITE_SHARE: f64 = 0.8;

/// The writers found ahead of time, numbered in the order first found: a replay's
/// read-ahead decodes each segment's values on its own thread, finds their writers there
/// ([`FoundWriters::of`]) and hands the session's thread a number per PUT instead of the
/// value's managedFields to read. [`Writers::count_found`] maps each number to its row
/// once per resource, so that the session's thread reads neither the value nor the
/// writer's name again. One table serves a player for as long as it lives (across seeks);
/// shared between the two threads, it is locked once per segment on the read-ahead and
/// once per new (resource, writer) on the session's thread.
#[derive(Debug)]
pub struct WriterNames {
    /// Tells tables apart: a [`Writers`] that counted with another table forgets its
    /// numbers.
    id: u64,
    inner: std::sync::Mutex<NamesInner>,
}

#[derive(Debug, Default)]
struct NamesInner {
    /// (manager, operation, subresource) by number.
    names: Vec<[Box<[u8]>; 3]>,
    /// Number by the three parts, each but the last after its length (as [`Writers`]'
    /// index, without the resource).
    index: HashMap<Box<[u8]>, u32, foldhash::fast::RandomState>,
    scratch: Vec<u8>,
}

/// The number of a writer in a [`WriterNames`] table, with the value's managedFields mark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FoundWriter(u32, u64);

impl FoundWriter {
    /// The value's managedFields mark ([`crate::decode::last_write_marked`]).
    pub fn mark(&self) -> u64 {
        self.1
    }
}

impl Default for WriterNames {
    fn default() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        WriterNames {
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            inner: Default::default(),
        }
    }
}

impl WriterNames {
    /// The table, locked (a poisoned lock is taken over: the table only grows, and a
    /// panic between its two pushes cannot leave a number without a name).
    pub fn lock(&self) -> WriterNamesGuard<'_> {
        WriterNamesGuard(self.inner.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The (manager, operation, subresource) numbered `w`, when this table numbered it.
    fn name(&self, w: FoundWriter) -> Option<[Box<[u8]>; 3]> {
        self.lock().0.names.get(w.0 as usize).cloned()
    }
}

/// A locked [`WriterNames`]: numbers writers found in values.
pub struct WriterNamesGuard<'a>(std::sync::MutexGuard<'a, NamesInner>);

impl WriterNamesGuard<'_> {
    /// The number of the writer [`last_writer`] finds in `value` (as [`Writers::count`]
    /// names it: a value that names none has a writer in parentheses); `None` for a new
    /// writer once the table holds [`MAX_NUMBERED`] (that value is read again when
    /// counted).
    pub fn of(&mut self, value: &[u8]) -> Option<FoundWriter> {
        let (lw, mark) = last_write_marked(value);
        let parts: [&[u8]; 3] = match &lw {
            LastWrite::By(w) => [&w.manager, &w.operation, &w.subresource],
            other => [unnamed(other, value), b"", b""],
        };
        let t = &mut *self.0;
        index_key(&mut t.scratch, None, parts);
        if let Some(&n) = t.index.get(t.scratch.as_slice()) {
            return Some(FoundWriter(n, mark));
        }
        if t.names.len() >= MAX_NUMBERED {
            return None;
        }
        let n = t.names.len() as u32;
        t.names.push(parts.map(Box::from));
        t.index.insert(t.scratch.as_slice().into(), n);
        Some(FoundWriter(n, mark))
    }
}

/// Fills `k` with the index key of a writer: the resource (when given), then operation
/// and subresource each after its length, then the manager.
fn index_key(k: &mut Vec<u8>, resource: Option<u32>, [manager, operation, sub]: [&[u8]; 3]) {
    k.clear();
    if let Some(r) = resource {
        k.extend_from_slice(&r.to_le_bytes());
    }
    for part in [operation, sub] {
        k.extend_from_slice(&(part.len() as u32).to_le_bytes());
        k.extend_from_slice(part);
    }
    k.extend_from_slice(manager);
}

/// The writers of one observation's events found ahead of time (numbers in a
/// [`WriterNames`]), by the event's index in the observation; an event without one (a
/// DELETE, whose value is the replica's) is looked up when counted. Most observations
/// hold one event: that one needs no allocation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum FoundWriters {
    #[default]
    None,
    /// The first event's.
    One(FoundWriter),
    Many(Vec<Option<FoundWriter>>),
}

impl FoundWriters {
    /// Finds the writer of each PUT of `events`, numbered in `names`.
    pub fn of(
        events: &[crate::model::WatchEvent],
        names: &mut WriterNamesGuard<'_>,
    ) -> FoundWriters {
        let mut one = |e: &crate::model::WatchEvent| match e.kind {
            crate::model::EventKind::Put => names.of(&e.kv.value),
            crate::model::EventKind::Delete => None,
        };
        match events {
            [] => FoundWriters::None,
            [e] => one(e).map_or(FoundWriters::None, FoundWriters::One),
            many => FoundWriters::Many(many.iter().map(one).collect()),
        }
    }

    /// Event `i`'s writer, when found ahead.
    pub fn get(&self, i: usize) -> Option<FoundWriter> {
        match self {
            FoundWriters::None => None,
            FoundWriters::One(w) => (i == 0).then_some(*w),
            FoundWriters::Many(v) => v.get(i).copied().flatten(),
        }
    }
}

/// One observation's [`FoundWriters`] with the table that numbered them.
#[derive(Clone, Copy, Debug)]
pub struct Found<'a> {
    pub writers: &'a FoundWriters,
    pub names: &'a WriterNames,
}

/// The row of a value that names no writer.
fn unnamed(lw: &LastWrite<'_>, value: &[u8]) -> &'static [u8] {
    match lw {
        LastWrite::By(_) => b"",
        LastWrite::NoManagedFields => b"(no managedFields)",
        LastWrite::Encrypted => b"(encrypted at rest)",
        LastWrite::Undecodable if value.is_empty() => b"(value not held)",
        LastWrite::Undecodable => b"(not decodable)",
    }
}

impl Writers {
    /// Counts a PUT of `resource` whose managedFields equal the key's previous version's,
    /// or a DELETE, for the writer in parentheses that says nobody is named.
    pub fn count_unnamed(&mut self, resource: u32, value_len: usize, second: u64, delete: bool) {
        let who = if delete { DELETER } else { UNCHANGED_WRITER };
        self.count_as(
            resource,
            value_len,
            [who.as_bytes(), b"", b""],
            second,
            delete,
        );
    }

    /// Counts a PUT of `key` (of `resource`, which the replica names `resource_name`) whose
    /// managedFields equal the key's previous version's: for the pending or running
    /// migration of that resource when there is one ([`migration_writer`]), else for
    /// [`UNCHANGED_WRITER`]; and adds the key to the resource's [`RewriteSketch`].
    pub fn count_unchanged(
        &mut self,
        resource: u32,
        resource_name: &str,
        key: &[u8],
        value_len: usize,
        second: u64,
    ) {
        self.sketch(resource, key, second);
        let by = if self.migrations.any_active() {
            self.migrations
                .active_for(resource_name)
                .map(migration_writer)
        } else {
            None
        };
        match by {
            Some(name) => self.count_as(
                resource,
                value_len,
                [name.as_bytes(), b"", b""],
                second,
                false,
            ),
            None => self.count_unnamed(resource, value_len, second, false),
        }
    }

    /// Adds `key` to the sketch of `resource`'s unchanged rewrites.
    fn sketch(&mut self, resource: u32, key: &[u8], second: u64) {
        let n = self.sketches.len();
        match self.sketches.get_mut(&resource) {
            Some(s) => s.add(key, second),
            None if n < MAX_SKETCHES => self.sketches.entry(resource).or_default().add(key, second),
            None => {}
        }
    }

    /// Forgets the sketches and adds each PUT with unchanged managedFields of `events`
    /// (resource, key, unix second): after a checkpoint, from the event log it holds (which
    /// may hold fewer than the live session counted: its cap).
    pub(super) fn rebuild_sketches<'a>(
        &mut self,
        events: impl Iterator<Item = (u32, &'a [u8], u64)>,
    ) {
        self.sketches.clear();
        for (resource, key, second) in events {
            self.sketch(resource, key, second);
        }
    }

    /// Whether `resource`, holding `keys` live keys, looks rewritten whole in the minute
    /// before `now_second`: at least [`REWRITE_MIN_KEYS`] keys, and an estimated
    /// [`REWRITE_SHARE`] of them written with unchanged managedFields. An estimate.
    pub fn looks_rewritten(&self, resource: u32, keys: u64, now_second: u64) -> bool {
        keys >= REWRITE_MIN_KEYS
            && self
                .sketches
                .get(&resource)
                .is_some_and(|s| s.distinct(now_second) >= REWRITE_SHARE * keys as f64)
    }

    /// Counts one event of `resource` at unix second `second`: a PUT of `value`, or a DELETE
    /// whose deleted value is `value` (empty when the replica did not hold it).
    pub fn count(&mut self, resource: u32, value: &[u8], second: u64, delete: bool) {
        self.count_parsed(resource, value, &last_writer(value), second, delete)
    }

    /// As [`Writers::count`], with `value`'s last writer already read.
    pub fn count_parsed(
        &mut self,
        resource: u32,
        value: &[u8],
        lw: &LastWrite<'_>,
        second: u64,
        delete: bool,
    ) {
        let parts: [&[u8]; 3] = match lw {
            LastWrite::By(w) => [&w.manager, &w.operation, &w.subresource],
            other => [unnamed(other, value), b"", b""],
        };
        self.count_as(resource, value.len(), parts, second, delete);
    }

    /// As [`Writers::count`] for a PUT of `value`, whose writer was found beforehand
    /// (number `found` of `names`, see [`WriterNames`]). Reads only `value`'s length,
    /// unless `found` is not a number of `names`.
    pub fn count_found(
        &mut self,
        resource: u32,
        value: &[u8],
        found: FoundWriter,
        names: &WriterNames,
        second: u64,
    ) {
        if self.numbered_by != names.id {
            self.numbered.clear();
            self.numbered_by = names.id;
        }
        let key = (u64::from(resource) << 32) | u64::from(found.0);
        let id = match self.numbered.get(&key) {
            Some(&id) => id,
            None => {
                let Some([m, o, s]) = names.name(found) else {
                    // Not a number of this table: read the value after all.
                    return self.count(resource, value, second, false);
                };
                let id = self.row(resource, [&m, &o, &s]);
                if self.numbered.len() < MAX_NUMBERED {
                    self.numbered.insert(key, id);
                }
                id
            }
        };
        self.rows[id as usize].count(second, false, value.len() as u64);
    }

    fn count_as(
        &mut self,
        resource: u32,
        value_len: usize,
        parts: [&[u8]; 3],
        second: u64,
        delete: bool,
    ) {
        let id = self.row(resource, parts);
        let bytes = if delete { 0 } else { value_len as u64 };
        self.rows[id as usize].count(second, delete, bytes);
    }

    /// The row of (resource, writer), added when new (or [`OTHER_WRITERS`]' once
    /// [`MAX_WRITERS`] rows exist: rows are never removed, so a writer not in a row then
    /// never gets one).
    fn row(&mut self, resource: u32, parts: [&[u8]; 3]) -> u32 {
        match self.find(resource, parts) {
            Some(id) => id,
            None if self.rows.len() >= MAX_WRITERS => {
                let other = [OTHER_WRITERS.as_bytes(), b"", b""];
                match self.find(resource, other) {
                    Some(id) => id,
                    None => self.insert(resource, other),
                }
            }
            None => self.insert(resource, parts),
        }
    }

    /// Looks a row up; leaves its index key in `scratch`.
    fn find(&mut self, resource: u32, parts: [&[u8]; 3]) -> Option<u32> {
        index_key(&mut self.scratch, Some(resource), parts);
        self.index.get(&self.scratch[..]).copied()
    }

    /// Adds a row for the key [`Self::find`] left in `scratch`.
    fn insert(&mut self, resource: u32, [manager, operation, sub]: [&[u8]; 3]) -> u32 {
        let id = self.rows.len() as u32;
        let text = |b: &[u8]| escape_bytes(b).into_owned();
        self.rows.push(WriterStats::new(
            resource,
            text(manager),
            text(operation),
            text(sub),
        ));
        self.index.insert(self.scratch.as_slice().into(), id);
        id
    }

    /// Rebuilds the index of rows just read from a checkpoint.
    pub(crate) fn restored(&mut self) {
        self.index.clear();
        for i in 0..self.rows.len() {
            let r = &self.rows[i];
            let (res, m, o, s) = (
                r.resource,
                r.manager.clone(),
                r.operation.clone(),
                r.subresource.clone(),
            );
            // A row whose text was escaped gets the escaped key; its writer, seen again,
            // makes a second row. Rare (a manager name that is not UTF-8) and harmless.
            self.find(res, [m.as_bytes(), o.as_bytes(), s.as_bytes()]);
            self.index.insert(self.scratch.as_slice().into(), i as u32);
        }
    }

    /// Every row, in the order first seen.
    pub fn rows(&self) -> &[WriterStats] {
        &self.rows
    }
}

/// One row of the `writers` list in `snapshot --json`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct WriterSummary {
    pub resource: String,
    pub manager: String,
    /// `Update` or `Apply` (empty for a writer in parentheses).
    pub operation: String,
    /// Empty for the main resource.
    pub subresource: String,
    pub puts: u64,
    pub deletes: u64,
    /// Value bytes written by the PUTs.
    pub bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(managers: &[(&str, &str, &str, &str)]) -> Vec<u8> {
        let mf: Vec<_> = managers
            .iter()
            .map(|(m, op, sub, t)| json!({"manager": m, "operation": op, "subresource": sub, "time": t}))
            .collect();
        serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "managedFields": mf}}))
        .unwrap()
    }

    #[test]
    fn writes_are_attributed_to_the_newest_entry_and_rated_per_second() {
        let mut w = Writers::default();
        let a = object(&[
            ("kubectl", "Update", "", "2024-01-01T00:00:01Z"),
            ("ctrl", "Update", "status", "2024-01-01T00:00:09Z"),
        ]);
        let b = object(&[("apply-bot", "Apply", "", "2024-01-01T00:00:03Z")]);
        for s in 100..110 {
            w.count(0, &a, s, false);
        }
        w.count(0, &b, 105, false);
        w.count(1, &b, 105, false);
        w.count(0, &b, 106, true);
        w.count(0, b"", 107, true);
        w.count(0, b"k8s:enc:aescbc:v1:key1:xxxx", 107, false);
        w.count(0, br#"{"metadata":{"name":"x"}}"#, 107, false);
        w.count(0, b"\x00\x01garbage", 107, false);
        let rows = w.rows();
        let find = |res: u32, m: &str| rows.iter().find(|r| r.resource == res && r.manager == m);
        let ctrl = find(0, "ctrl").unwrap();
        assert_eq!(
            (ctrl.puts, ctrl.deletes, ctrl.bytes),
            (10, 0, 10 * a.len() as u64)
        );
        assert_eq!(ctrl.how(), "Update/status");
        let r = ctrl.rates(110, 10);
        assert_eq!(r.puts, 1.0);
        assert_eq!(r.bytes, a.len() as f64);
        assert_eq!(ctrl.rates(110, 60).puts, 10.0 / 60.0);
        // Seconds that left the ring are not counted again.
        assert_eq!(ctrl.rates(200, 10).puts, 0.0);
        let bot = find(0, "apply-bot").unwrap();
        assert_eq!((bot.puts, bot.deletes, bot.how().as_str()), (1, 1, "Apply"));
        assert_eq!(find(1, "apply-bot").unwrap().puts, 1);
        assert_eq!(find(0, "(value not held)").unwrap().deletes, 1);
        assert_eq!(find(0, "(encrypted at rest)").unwrap().puts, 1);
        assert_eq!(find(0, "(no managedFields)").unwrap().puts, 1);
        assert_eq!(find(0, "(not decodable)").unwrap().puts, 1);
        assert_eq!(rows.len(), 7);
    }

    #[test]
    fn rows_are_capped_and_survive_a_checkpoint() {
        let mut w = Writers::default();
        for i in 0..MAX_WRITERS + 10 {
            let v = object(&[(&format!("m{i}"), "Update", "", "2024-01-01T00:00:01Z")]);
            w.count(0, &v, 1, false);
        }
        assert_eq!(w.rows().len(), MAX_WRITERS + 1);
        let other = w.rows().last().unwrap();
        assert_eq!((other.manager.as_str(), other.puts), (OTHER_WRITERS, 10));

        let bytes = postcard::to_stdvec(&w).unwrap();
        let mut back: Writers = postcard::from_bytes(&bytes).unwrap();
        back.restored();
        assert_eq!(back.rows(), w.rows());
        let v = object(&[("m3", "Update", "", "2024-01-01T00:00:01Z")]);
        back.count(0, &v, 2, false);
        assert_eq!(
            back.rows().len(),
            MAX_WRITERS + 1,
            "m3 found again after restore"
        );
        assert_eq!(back.rows()[3].puts, 2);
    }
}

#[cfg(test)]
mod sketch_tests {
    use super::*;

    /// The estimate of distinct keys is close (within 15 %) from 20 to 20 000 keys,
    /// writing a key again adds nothing, and keys leave it a minute later.
    #[test]
    fn the_sketch_counts_distinct_keys_of_the_last_minute() {
        for n in [20usize, 30, 100, 1_000, 20_000] {
            let mut s = RewriteSketch::default();
            for round in 0..3 {
                for i in 0..n {
                    s.add(
                        format!("/registry/configmaps/ns/cm{i}").as_bytes(),
                        1000 + round,
                    );
                }
            }
            let est = s.distinct(1005);
            let err = (est - n as f64).abs() / n as f64;
            assert!(err < 0.15, "{n} keys estimated {est}");
            assert_eq!(s.distinct(1100), 0.0, "{n}: a minute later");
        }
    }
}

#[cfg(test)]
mod found_tests {
    use super::*;
    use crate::demo::objects as o;
    use rand::SeedableRng;

    /// Writers found ahead of time (numbered in a [`WriterNames`]) count exactly as the
    /// values counted directly: protobuf (the demo's Lease and Node with managedFields),
    /// JSON with and without escapes in the manager's name, encrypted, empty and garbage;
    /// twice each, for two resources, and once more after a checkpoint.
    #[test]
    fn writers_found_ahead_count_as_the_values_do() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let lease = o::encode_object(&o::lease(
            &mut rng,
            "kube-node-lease",
            "n1",
            "n1",
            40,
            "kubelet",
            None,
        ));
        let node = o::encode_object(&o::node(&mut rng, "n1", 1));
        let json = br#"{"metadata":{"name":"a","managedFields":[{"manager":"kubectl","operation":"Update","time":"2024-01-01T00:00:01Z"}]}}"#.to_vec();
        let escaped = br#"{"metadata":{"name":"a","managedFields":[{"manager":"ctl\u0041","operation":"Apply","subresource":"status","time":"2024-01-01T00:00:01Z"}]}}"#.to_vec();
        let values: Vec<Vec<u8>> = vec![
            lease,
            node,
            json,
            escaped,
            b"k8s:enc:aescbc:v1:key1:xxxx".to_vec(),
            br#"{"metadata":{"name":"x"}}"#.to_vec(),
            b"\x00\x01garbage".to_vec(),
            Vec::new(),
        ];
        let names = WriterNames::default();
        let (mut direct, mut ahead) = (Writers::default(), Writers::default());
        let mut second = 100;
        for round in 0..2 {
            for (i, v) in values.iter().enumerate() {
                second += 1;
                let resource = (i as u32 + round) % 2;
                direct.count(resource, v, second, false);
                let f = names.lock().of(v).expect("numbered");
                ahead.count_found(resource, v, f, &names, second);
            }
        }
        assert_eq!(direct.rows(), ahead.rows());
        assert_eq!(direct.rows().len(), 2 * values.len());
        assert_eq!(names.lock().0.names.len(), values.len());
        let row = |w: &Writers, m: &str| w.rows().iter().find(|r| r.manager == m).cloned();
        assert_eq!(
            row(&ahead, "ctlA").map(|r| r.subresource),
            Some("status".into())
        );
        assert!(row(&ahead, "(not decodable)").is_some());
        // Read back from a checkpoint, the rows count on for the same numbers.
        let mut restored: Writers =
            postcard::from_bytes(&postcard::to_allocvec(&ahead).unwrap()).unwrap();
        restored.restored();
        let f = names.lock().of(&values[0]).expect("numbered");
        restored.count_found(0, &values[0], f, &names, second);
        direct.count(0, &values[0], second, false);
        assert_eq!(direct.rows(), restored.rows());
        // A number another table gave is not trusted: the value is read.
        let other = WriterNames::default();
        let mut again = Writers::default();
        again.count_found(0, &values[0], FoundWriter(7, 0), &other, 1);
        assert_eq!(again.rows()[0].manager, "kubelet");
    }

    /// A table stops numbering new writers at [`MAX_NUMBERED`]; those are read again
    /// when counted, and writers numbered before go on being found.
    #[test]
    fn numbering_stops_at_its_bound() {
        let value = |i: usize| {
            format!(r#"{{"metadata":{{"managedFields":[{{"manager":"m{i}","operation":"Update","time":"2024-01-01T00:00:01Z"}}]}}}}"#)
                .into_bytes()
        };
        let names = WriterNames::default();
        let mut t = names.lock();
        for i in 0..MAX_NUMBERED {
            assert_eq!(t.of(&value(i)).map(|f| f.0), Some(i as u32));
        }
        assert_eq!(t.of(&value(MAX_NUMBERED)), None);
        assert_eq!(t.of(&value(7)).map(|f| f.0), Some(7));
        let events = [crate::model::WatchEvent {
            kind: crate::model::EventKind::Put,
            kv: crate::model::KeyValue {
                key: crate::model::Bytes::from_static(b"/registry/configmaps/d/a"),
                create_revision: 2,
                mod_revision: 2,
                version: 1,
                lease: 0,
                value: crate::model::Bytes::from(value(MAX_NUMBERED + 1)),
            },
            prev_kv: None,
        }];
        assert_eq!(FoundWriters::of(&events, &mut t), FoundWriters::None);
    }

    /// The writers of an observation's events by index: DELETEs have none.
    #[test]
    fn found_writers_by_event() {
        use crate::model::{Bytes, EventKind, KeyValue, WatchEvent};
        let ev = |kind, v: &[u8]| WatchEvent {
            kind,
            kv: KeyValue {
                key: Bytes::from_static(b"/registry/configmaps/d/a"),
                create_revision: 2,
                mod_revision: 2,
                version: 1,
                lease: 0,
                value: Bytes::copy_from_slice(v),
            },
            prev_kv: None,
        };
        let put = ev(EventKind::Put, b"\x00garbage");
        let del = ev(EventKind::Delete, b"");
        let names = WriterNames::default();
        let mut n = names.lock();
        assert_eq!(FoundWriters::of(&[], &mut n), FoundWriters::None);
        assert_eq!(
            FoundWriters::of(std::slice::from_ref(&del), &mut n),
            FoundWriters::None
        );
        let one = FoundWriters::of(std::slice::from_ref(&put), &mut n);
        assert!(one.get(0).is_some() && one.get(1).is_none());
        let many = FoundWriters::of(&[del, put], &mut n);
        assert!(many.get(0).is_none() && many.get(1) == one.get(0));
    }
}
