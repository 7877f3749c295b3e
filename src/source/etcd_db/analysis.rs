//! What fills an etcd db file: one walk over every bucket ([`status_walk`], which also gives
//! `etcdctl snapshot status`'s figures) that keeps counters per key, never values, then
//! the tables a person or a script reads: per resource, per namespace, the largest
//! objects, the keys with the most retained revisions, the leases holding the most keys,
//! and how much of the file is free pages a defragmentation would give back.
//!
//! [`analyze`] is a pure function of an open [`EtcdDb`]: it reads the file and returns an
//! [`Analysis`] (serialisable as it is, for `regscope analyze --json` and anything that
//! reports on a db file later). Memory grows with the number of distinct keys (their
//! names and about 64 bytes of counters each), not with the values or the history: a
//! page of the file at a time is held while the walk reads it.

use std::collections::HashMap;
use std::hash::BuildHasher;

use hashbrown::HashTable;
use serde::Serialize;

use crate::bbolt::page::BUCKET_LEAF_FLAG;
use crate::bbolt::{Bucket, LeafElement, ReadAt, MAX_DEPTH};
use crate::decode::protobuf_wire::{Reader, WireValue};
use crate::model::{escape_bytes, KeyPath, Revision};

use super::status::{status_walk, SnapshotStatus};
use super::{parse_revision_key, DbError, EtcdDb, EtcdMeta, StoredMember};

/// etcd's default backend quota, 2 GiB (`DefaultQuotaBytes`: etcd 3.4
/// `etcdserver/quota.go`, 3.5 `server/etcdserver/quota.go`, 3.6 `server/storage/quota.go`):
/// what `--quota-backend-bytes` is when not given or given as 0 (`NewBackendQuota` takes 0
/// for "use the default"; a negative quota turns it off). etcd raises `NOSPACE` when a
/// write would take the backend's size (bbolt's `Tx.Size`, the [`FileUsage::bbolt_bytes`]
/// here, not the bytes in use) plus the write's cost to the quota or past it.
pub const DEFAULT_QUOTA_BYTES: u64 = 2 * 1024 * 1024 * 1024;

/// What to analyse with.
#[derive(Clone, Debug)]
pub struct AnalysisOptions {
    /// The prefix Kubernetes stores under (`/registry`): keys under it are split by
    /// resource and namespace ([`KeyPath::parse`]); the others are summed in
    /// [`Analysis::outside_prefix`].
    pub prefix: Vec<u8>,
    /// Rows of each ranked list ([`Analysis::largest`], [`Analysis::most_revisions`],
    /// [`Analysis::leases_by_keys`], [`Analysis::namespaces`]).
    pub top: usize,
}

/// Everything [`analyze`] finds in a db file. Byte counts are bytes; revisions are
/// etcd's main revisions.
#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    /// The bbolt file: sizes, pages, free pages.
    pub file: FileUsage,
    /// What `etcdctl snapshot status` prints for this file (3.4/3.5: `totalKey` is
    /// [`SnapshotStatus::total_entries`]; 3.6's `etcdutl`: [`SnapshotStatus::live_keys`]).
    pub snapshot_status: SnapshotStatus,
    /// etcd's revision when the file was written ([`EtcdDb::head`]).
    pub head: Revision,
    /// Compactions finished and scheduled.
    pub compaction: Compaction,
    /// The `meta` bucket (consistent index, term, compactions, storage and cluster version).
    pub meta: EtcdMeta,
    /// The members the file knows.
    pub members: Vec<StoredMember>,
    /// Alarms raised when the file was written (`NOSPACE`: the quota was hit and etcd
    /// refuses writes until the alarm is disarmed; `CORRUPT`).
    pub alarms: Vec<Alarm>,
    /// Leases in the `lease` bucket.
    pub lease_count: u64,
    /// Entries per top-level bucket, in name order (their sum is
    /// [`SnapshotStatus::total_entries`]).
    pub buckets: Vec<BucketEntries>,
    /// The prefix the keys were split under (escaped as [`escape_bytes`] does).
    pub prefix: String,
    /// Every key in the file.
    pub all_keys: Usage,
    /// Keys outside the prefix (`compact_rev_key`, other applications' keys).
    pub outside_prefix: Usage,
    /// Keys under the prefix per resource (as [`KeyPath::parse`] names it), most retained
    /// bytes first, then by name. All of them.
    pub resources: Vec<ResourceUsage>,
    /// Namespaced keys under the prefix per namespace, most retained bytes first; at most
    /// [`AnalysisOptions::top`].
    pub namespaces: Vec<NamespaceUsage>,
    /// Live keys under the prefix with the largest newest values, largest first; at most
    /// [`AnalysisOptions::top`].
    pub largest: Vec<KeyUsage>,
    /// Keys under the prefix (live or deleted) with the most retained revisions, most
    /// first; at most [`AnalysisOptions::top`].
    pub most_revisions: Vec<KeyUsage>,
    /// Leases by the live keys attached to them (any key, under the prefix or not: what
    /// `etcdctl lease timetolive --keys` lists), most keys first; at most
    /// [`AnalysisOptions::top`].
    pub leases_by_keys: Vec<LeaseUsage>,
}

/// The bbolt file's size and pages (etcd-io/bbolt `db.go`, `tx.go`; etcd
/// `server/storage/backend/backend.go`).
#[derive(Clone, Debug, Serialize)]
pub struct FileUsage {
    /// The file as named.
    pub path: String,
    /// The file's length.
    pub file_bytes: u64,
    /// Pages up to the high-water mark × page size (bbolt's `Tx.Size`: etcd's
    /// `etcd_mvcc_db_total_size_in_bytes`, what the quota is compared with, and
    /// `snapshot status`'s `totalSize`).
    pub bbolt_bytes: u64,
    /// Bytes after the last page: 32 in a file `etcdctl snapshot save` wrote (the SHA-256
    /// etcd's Snapshot RPC appends), 0 in a member's `member/snap/db` (or more when the
    /// file was grown ahead of use).
    pub trailer_bytes: u64,
    /// Bytes per page.
    pub page_size: u32,
    /// Pages up to the high-water mark (the meta's `pgid`), the two meta pages included.
    pub pages: u64,
    /// Free pages: listed in the freelist when the file keeps one, else those no bucket's
    /// tree reaches ([`FreePagesFrom`]).
    pub free_pages: u64,
    /// `free_pages × page_size`: about what a defragmentation gives back.
    pub free_bytes: u64,
    /// `bbolt_bytes − free_bytes`: etcd's `SizeInUse` (`backend.go`), its
    /// `etcd_mvcc_db_total_size_in_use_in_bytes`.
    pub in_use_bytes: u64,
    /// Where `free_pages` came from.
    pub free_pages_from: FreePagesFrom,
    /// Why the freelist the meta names could not be used, when it could not (then the
    /// free pages are counted as for a file that keeps none).
    pub freelist_unreadable: Option<String>,
    /// The transaction that wrote the meta in use.
    pub txid: u64,
}

/// How the free pages were counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FreePagesFrom {
    /// The freelist page the meta names.
    Freelist,
    /// The file keeps no freelist (etcd opens bbolt with `NoFreelistSync` on Linux), or
    /// its freelist does not read ([`FileUsage::freelist_unreadable`]): pages below the
    /// high-water mark that no bucket's tree reaches, as bbolt counts them when it opens a
    /// file without a freelist (`DB.freepages`).
    UnreachedPages,
}

/// Compactions as the `meta` bucket records them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Compaction {
    /// The last compaction that finished: history below it is gone.
    pub finished: Option<Revision>,
    /// The last compaction asked for (recorded before it runs).
    pub scheduled: Option<Revision>,
    /// `scheduled` is ahead of `finished`: a compaction was interrupted (or still running
    /// when the file was written); etcd finishes it when it next opens the file
    /// (`mvcc/kvstore.go` `restore`), so history the file still holds may go then.
    pub interrupted: bool,
}

/// An alarm in the `alarm` bucket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Alarm {
    /// The member that raised it, in hex as etcdctl prints member ids.
    pub member_id: String,
    /// `NOSPACE`, `CORRUPT`.
    pub alarm: String,
}

/// Entries of one top-level bucket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BucketEntries {
    pub name: String,
    pub entries: u64,
}

/// Counters of a set of keys.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Keys with at least one version in the file (live or deleted): every key seen in the
    /// retained history.
    pub keys: u64,
    /// Keys whose newest version is not a deletion.
    pub live_keys: u64,
    /// Bytes of the newest values of the live keys (the value alone, as `etcdctl get`
    /// returns it).
    pub live_bytes: u64,
    /// Versions in the file (entries of the `key` bucket), tombstones included.
    pub revisions: u64,
    /// Of those, deletions.
    pub tombstones: u64,
    /// Bytes of every version as stored: revision key and `mvccpb.KeyValue` (the key,
    /// value and revisions), tombstones included. What the history costs, before bbolt's
    /// page overhead.
    pub retained_bytes: u64,
}

impl Usage {
    /// Versions per key seen in the retained history: [`Usage::revisions`] over
    /// [`Usage::keys`], deleted keys and their deletions included (a key put twice and
    /// deleted counts 3 revisions for 1 key). Not per live key: a resource whose keys are
    /// all deleted has live keys 0 and still its revisions per key. 0 without keys.
    pub fn revisions_per_key(&self) -> f64 {
        if self.keys == 0 {
            0.0
        } else {
            self.revisions as f64 / self.keys as f64
        }
    }

    fn add(&mut self, k: &KeyStat) {
        self.keys += 1;
        if k.live() {
            self.live_keys += 1;
            self.live_bytes += k.newest_value as u64;
        }
        self.revisions += k.revisions as u64;
        self.tombstones += k.tombstones() as u64;
        self.retained_bytes += k.retained;
    }
}

/// One resource's keys.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResourceUsage {
    /// As [`KeyPath::parse`] names it: `pods`, `widgets.example.com`, `(no resource)`.
    pub resource: String,
    #[serde(flatten)]
    pub usage: Usage,
    /// `revisions / keys`, every key seen counted, live or deleted
    /// ([`Usage::revisions_per_key`]).
    pub revisions_per_key: f64,
}

/// One namespace's keys.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NamespaceUsage {
    pub namespace: String,
    #[serde(flatten)]
    pub usage: Usage,
}

/// One key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeyUsage {
    /// The key (non-UTF-8 bytes escaped as [`escape_bytes`] does).
    pub key: String,
    pub resource: String,
    pub namespace: Option<String>,
    /// Its newest version is not a deletion.
    pub live: bool,
    /// Bytes of the newest value (0 when deleted).
    pub bytes: u64,
    /// The newest version's main revision (its mod revision, or its deletion's).
    pub newest_revision: Revision,
    /// Versions in the file, tombstones included.
    pub revisions: u64,
    pub tombstones: u64,
    /// Bytes of all its versions as stored.
    pub retained_bytes: u64,
    /// The newest version's lease (0: none).
    pub lease: i64,
}

/// One lease and the live keys attached to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LeaseUsage {
    /// The lease id (etcdctl prints it in hex).
    pub id: i64,
    /// Its granted TTL in seconds; `None` when the `lease` bucket does not hold it (keys
    /// still naming a lease that is gone).
    pub ttl: Option<i64>,
    /// Live keys attached.
    pub keys: u64,
    /// Bytes of their newest values.
    pub bytes: u64,
}

/// What is kept per distinct key while the walk runs: 56 bytes and its name.
#[derive(Clone, Debug)]
struct KeyStat {
    /// Where the name sits in the [`Arena`].
    at: u64,
    len: u32,
    /// Index into the resource names; [`OUTSIDE`] for keys outside the prefix.
    resource: u32,
    /// Index into the namespace names; [`NO_NAMESPACE`] for cluster-scoped keys.
    namespace: u32,
    revisions: u32,
    /// Deletions in the file; the top bit is set while the newest version is not one
    /// ([`KeyStat::live`]).
    tombstones_live: u32,
    newest_value: u32,
    retained: u64,
    newest_revision: Revision,
    lease: i64,
}

// What the memory bound rests on: 56 bytes per key besides its name.
const _: () = assert!(std::mem::size_of::<KeyStat>() == 56);

const LIVE_BIT: u32 = 1 << 31;

impl KeyStat {
    fn live(&self) -> bool {
        self.tombstones_live & LIVE_BIT != 0
    }

    fn tombstones(&self) -> u32 {
        self.tombstones_live & !LIVE_BIT
    }
}

/// Elements per chunk of a [`Chunked`].
const CHUNK: usize = 1 << 16;

/// An append-only list kept in chunks of [`CHUNK`] elements, each allocated at its full
/// size once: growing never copies what is held (a `Vec` doubling copies it all and holds
/// both copies for a moment, which at a million keys is the peak of the whole analysis).
struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Chunked<T> {
    fn new() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn push(&mut self, x: T) {
        if self.len.is_multiple_of(CHUNK) {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        if let Some(c) = self.chunks.last_mut() {
            c.push(x);
            self.len += 1;
        }
    }

    fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flatten()
    }
}

impl<T> std::ops::Index<usize> for Chunked<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        &self.chunks[i / CHUNK][i % CHUNK]
    }
}

impl<T> std::ops::IndexMut<usize> for Chunked<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.chunks[i / CHUNK][i % CHUNK]
    }
}

/// Bytes per chunk of an [`Arena`] (a longer key gets a chunk of its own size).
const ARENA_CHUNK: usize = 1 << 20;

/// Key names, each stored once, in chunks that never move; a name is found by its
/// position: the chunk in the high 32 bits, the offset in the low.
struct Arena {
    chunks: Vec<Vec<u8>>,
}

impl Arena {
    fn new() -> Self {
        Arena { chunks: Vec::new() }
    }

    /// Stores `b`; returns its position.
    fn push(&mut self, b: &[u8]) -> u64 {
        let fits = self
            .chunks
            .last()
            .is_some_and(|c| c.capacity() - c.len() >= b.len());
        if !fits {
            self.chunks
                .push(Vec::with_capacity(ARENA_CHUNK.max(b.len())));
        }
        let n = self.chunks.len() - 1;
        let c = &mut self.chunks[n];
        let at = ((n as u64) << 32) | c.len() as u64;
        c.extend_from_slice(b);
        at
    }

    fn get(&self, at: u64, len: u32) -> &[u8] {
        let (chunk, off) = ((at >> 32) as usize, (at & 0xFFFF_FFFF) as usize);
        &self.chunks[chunk][off..off + len as usize]
    }
}

const OUTSIDE: u32 = u32::MAX;
const NO_NAMESPACE: u32 = u32::MAX;

/// The per-key counters, keys stored once in an arena and found through a table of
/// indices (no per-key allocation).
struct Keys {
    hasher: std::collections::hash_map::RandomState,
    table: HashTable<u32>,
    arena: Arena,
    stats: Chunked<KeyStat>,
    resources: Interned,
    namespaces: Interned,
    prefix: Vec<u8>,
}

/// Names given a small index each.
#[derive(Default)]
struct Interned {
    index: HashMap<String, u32>,
    names: Vec<String>,
}

impl Interned {
    fn of(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }
}

/// The fields of a stored `mvccpb.KeyValue` the analysis reads, without copying.
struct Fields<'a> {
    key: &'a [u8],
    value_len: usize,
    lease: i64,
}

/// Reads key (1), value (5, its length) and lease (6) of an `mvccpb.KeyValue`
/// (etcd's `api/mvccpb/kv.proto`).
fn fields(b: &[u8]) -> Result<Fields<'_>, String> {
    let mut f = Fields {
        key: &[],
        value_len: 0,
        lease: 0,
    };
    for x in Reader::new(b, 0) {
        let x = x.map_err(|e| format!("not an mvccpb.KeyValue: {e}"))?;
        match (x.number, x.value) {
            (1, WireValue::Len(k)) => f.key = k,
            (5, WireValue::Len(v)) => f.value_len = v.len(),
            (6, WireValue::Varint(l)) => f.lease = l as i64,
            _ => {}
        }
    }
    Ok(f)
}

impl Keys {
    fn new(prefix: &[u8]) -> Keys {
        Keys {
            hasher: Default::default(),
            table: HashTable::new(),
            arena: Arena::new(),
            stats: Chunked::new(),
            resources: Interned::default(),
            namespaces: Interned::default(),
            prefix: prefix.to_vec(),
        }
    }

    fn name(&self, k: &KeyStat) -> &[u8] {
        self.arena.get(k.at, k.len)
    }

    /// The counters of `key`, added on first sight with its resource and namespace.
    fn entry(&mut self, key: &[u8]) -> &mut KeyStat {
        let hash = self.hasher.hash_one(key);
        let (arena, stats) = (&self.arena, &self.stats);
        let name_of = |i: u32| {
            let k = &stats[i as usize];
            arena.get(k.at, k.len)
        };
        let found = self.table.find(hash, |&i| name_of(i) == key).copied();
        let i = match found {
            Some(i) => i,
            None => {
                let path = KeyPath::parse(&self.prefix, key);
                let (resource, namespace) = if path.resource == crate::model::OUTSIDE_PREFIX {
                    (OUTSIDE, NO_NAMESPACE)
                } else {
                    (
                        self.resources.of(&path.resource),
                        path.namespace
                            .as_deref()
                            .map_or(NO_NAMESPACE, |n| self.namespaces.of(n)),
                    )
                };
                let i = self.stats.len() as u32;
                let at = self.arena.push(key);
                self.stats.push(KeyStat {
                    at,
                    len: key.len() as u32,
                    resource,
                    namespace,
                    revisions: 0,
                    tombstones_live: 0,
                    newest_value: 0,
                    retained: 0,
                    newest_revision: 0,
                    lease: 0,
                });
                let (arena, stats, hasher) = (&self.arena, &self.stats, &self.hasher);
                self.table.insert_unique(hash, i, |&j| {
                    let k = &stats[j as usize];
                    hasher.hash_one(arena.get(k.at, k.len))
                });
                i
            }
        };
        &mut self.stats[i as usize]
    }

    /// Counts one entry of the `key` bucket (entries come in revision order, so the last
    /// one seen of a key is its newest).
    fn version(&mut self, rev_key: &[u8], value: &[u8]) -> Result<(), String> {
        let (main, sub, tombstone) =
            parse_revision_key(rev_key).ok_or_else(|| super::not_a_revision(rev_key, None))?;
        let f = fields(value).map_err(|e| format!("revision {main}.{sub}: {e}"))?;
        let stored = (rev_key.len() + value.len()) as u64;
        let k = self.entry(f.key);
        k.revisions = k.revisions.saturating_add(1);
        k.retained += stored;
        k.newest_revision = main;
        if tombstone {
            let n = (k.tombstones() + 1).min(!LIVE_BIT);
            k.tombstones_live = n;
            k.newest_value = 0;
            k.lease = 0;
        } else {
            k.tombstones_live = k.tombstones() | LIVE_BIT;
            k.newest_value = u32::try_from(f.value_len).unwrap_or(u32::MAX);
            k.lease = f.lease;
        }
        Ok(())
    }

    fn key_usage(&self, k: &KeyStat) -> KeyUsage {
        let name = |i: u32, names: &Interned| names.names.get(i as usize).cloned();
        KeyUsage {
            key: escape_bytes(self.name(k)).into_owned(),
            resource: if k.resource == OUTSIDE {
                crate::model::OUTSIDE_PREFIX.to_string()
            } else {
                name(k.resource, &self.resources).unwrap_or_default()
            },
            namespace: name(k.namespace, &self.namespaces),
            live: k.live(),
            bytes: k.newest_value as u64,
            newest_revision: k.newest_revision,
            revisions: k.revisions as u64,
            tombstones: k.tombstones() as u64,
            retained_bytes: k.retained,
            lease: k.lease,
        }
    }

    /// The `top` keys that `keep` admits, ranked by `order` (smallest first).
    fn ranked(
        &self,
        top: usize,
        keep: impl Fn(&KeyStat) -> bool,
        order: impl Fn(&KeyStat, &KeyStat) -> std::cmp::Ordering,
    ) -> Vec<KeyUsage> {
        let mut idx: Vec<u32> = (0..self.stats.len() as u32)
            .filter(|&i| keep(&self.stats[i as usize]))
            .collect();
        let cmp = |a: &u32, b: &u32| {
            let (a, b) = (&self.stats[*a as usize], &self.stats[*b as usize]);
            order(a, b).then_with(|| self.name(a).cmp(self.name(b)))
        };
        if top == 0 {
            return Vec::new();
        }
        if idx.len() > top {
            idx.select_nth_unstable_by(top - 1, cmp);
            idx.truncate(top);
        }
        idx.sort_by(cmp);
        idx.iter()
            .map(|&i| self.key_usage(&self.stats[i as usize]))
            .collect()
    }
}

/// Reads the whole db file once and says what fills it (see the module doc). The free
/// pages come from the freelist when the file keeps one, else from the pages the walk
/// did not reach ([`crate::bbolt::Db::track_reached`]).
///
/// Errors: the file's pages or etcd's schema do not read ([`DbError`]).
pub fn analyze<R: ReadAt + ?Sized>(
    db: &EtcdDb<R>,
    opts: &AnalysisOptions,
) -> Result<Analysis, DbError> {
    let bolt = db.bolt();
    bolt.track_reached();
    // The root bucket's pages were read when the file was opened, before tracking began.
    bolt.buckets().map_err(|e| db.bolt_err(e))?;

    let mut keys = Keys::new(&opts.prefix);
    let mut failed: Option<String> = None;
    // Entries per top-level bucket, in the walk's order (empty buckets too).
    let mut counts: Vec<(&[u8], u64)> = db.buckets().iter().map(|(n, _)| (&n[..], 0)).collect();
    let mut at = 0usize;
    let mut nested: Vec<Bucket> = Vec::new();
    let mut nested_err: Option<DbError> = None;
    // Keys are counted here, exactly: the walk need not remember them a second time.
    let mut status = status_walk(db, false, |bucket, e: &LeafElement| {
        if counts.get(at).is_none_or(|c| c.0 != bucket) {
            at = counts
                .iter()
                .position(|c| c.0 == bucket)
                .unwrap_or(counts.len());
        }
        if let Some(c) = counts.get_mut(at) {
            c.1 += 1;
        }
        if e.flags & BUCKET_LEAF_FLAG != 0 {
            match Bucket::from_value(&e.value, 0) {
                Ok(b) => nested.push(b),
                Err(x) => {
                    nested_err.get_or_insert(db.bolt_err(x));
                }
            }
        } else if bucket == b"key" && failed.is_none() {
            if let Err(x) = keys.version(&e.key, &e.value) {
                failed = Some(x);
            }
        }
    })?;
    if let Some(x) = failed {
        return Err(db.err(x));
    }
    if let Some(x) = nested_err {
        return Err(x);
    }
    // Nested buckets (etcd keeps none) are walked only for their pages.
    walk_nested(db, nested, 0)?;
    let buckets = counts
        .into_iter()
        .map(|(name, entries)| BucketEntries {
            name: escape_bytes(name).into_owned(),
            entries,
        })
        .collect();

    let file = file_usage(db)?;
    let meta = db.meta().clone();
    let compaction = Compaction {
        finished: meta.finished_compact_revision,
        scheduled: meta.scheduled_compact_revision,
        interrupted: meta.scheduled_compact_revision.unwrap_or(0)
            > meta.finished_compact_revision.unwrap_or(0),
    };
    let stored_leases = db.leases()?;
    let alarms = db
        .alarms()?
        .into_iter()
        .map(|(id, alarm)| Alarm {
            member_id: format!("{id:x}"),
            alarm,
        })
        .collect();

    let mut all_keys = Usage::default();
    let mut outside_prefix = Usage::default();
    let mut by_resource = vec![Usage::default(); keys.resources.names.len()];
    let mut by_namespace = vec![Usage::default(); keys.namespaces.names.len()];
    let mut by_lease: HashMap<i64, (u64, u64)> = HashMap::new();
    for k in keys.stats.iter() {
        all_keys.add(k);
        if k.live() && k.lease != 0 {
            let l = by_lease.entry(k.lease).or_default();
            l.0 += 1;
            l.1 += k.newest_value as u64;
        }
        if k.resource == OUTSIDE {
            outside_prefix.add(k);
            continue;
        }
        if let Some(u) = by_resource.get_mut(k.resource as usize) {
            u.add(k);
        }
        if let Some(u) = by_namespace.get_mut(k.namespace as usize) {
            u.add(k);
        }
    }
    status.live_keys = all_keys.live_keys;
    let mut resources: Vec<ResourceUsage> = by_resource
        .into_iter()
        .zip(&keys.resources.names)
        .map(|(usage, name)| ResourceUsage {
            resource: name.clone(),
            revisions_per_key: usage.revisions_per_key(),
            usage,
        })
        .collect();
    resources.sort_by(|a, b| {
        b.usage
            .retained_bytes
            .cmp(&a.usage.retained_bytes)
            .then_with(|| a.resource.cmp(&b.resource))
    });
    let mut namespaces: Vec<NamespaceUsage> = by_namespace
        .into_iter()
        .zip(&keys.namespaces.names)
        .map(|(usage, name)| NamespaceUsage {
            namespace: name.clone(),
            usage,
        })
        .collect();
    namespaces.sort_by(|a, b| {
        b.usage
            .retained_bytes
            .cmp(&a.usage.retained_bytes)
            .then_with(|| a.namespace.cmp(&b.namespace))
    });
    namespaces.truncate(opts.top);
    let ttl: HashMap<i64, i64> = stored_leases.iter().map(|l| (l.id, l.ttl)).collect();
    let mut leases_by_keys: Vec<LeaseUsage> = by_lease
        .into_iter()
        .map(|(id, (n, bytes))| LeaseUsage {
            id,
            ttl: ttl.get(&id).copied(),
            keys: n,
            bytes,
        })
        .collect();
    leases_by_keys.sort_by(|a, b| {
        b.keys
            .cmp(&a.keys)
            .then(b.bytes.cmp(&a.bytes))
            .then(a.id.cmp(&b.id))
    });
    leases_by_keys.truncate(opts.top);

    let largest = keys.ranked(
        opts.top,
        |k| k.live() && k.resource != OUTSIDE,
        |a, b| b.newest_value.cmp(&a.newest_value),
    );
    let most_revisions = keys.ranked(
        opts.top,
        |k| k.resource != OUTSIDE,
        |a, b| {
            b.revisions
                .cmp(&a.revisions)
                .then(b.retained.cmp(&a.retained))
        },
    );

    Ok(Analysis {
        file,
        snapshot_status: status,
        head: db.head()?,
        compaction,
        meta,
        members: db.members()?,
        alarms,
        lease_count: stored_leases.len() as u64,
        buckets,
        prefix: escape_bytes(&opts.prefix).into_owned(),
        all_keys,
        outside_prefix,
        resources,
        namespaces,
        largest,
        most_revisions,
        leases_by_keys,
    })
}

/// Walks nested buckets (and theirs) so that their pages count as reached.
fn walk_nested<R: ReadAt + ?Sized>(
    db: &EtcdDb<R>,
    buckets: Vec<Bucket>,
    depth: usize,
) -> Result<(), DbError> {
    if buckets.is_empty() {
        return Ok(());
    }
    if depth >= MAX_DEPTH {
        return Err(db.err(format!(
            "buckets nested deeper than {MAX_DEPTH} (a bucket points back up the file)"
        )));
    }
    let mut inner = Vec::new();
    for b in &buckets {
        for e in db.bolt().entries(b) {
            let e = e.map_err(|e| db.bolt_err(e))?;
            if e.flags & BUCKET_LEAF_FLAG != 0 {
                inner.push(Bucket::from_value(&e.value, b.root).map_err(|e| db.bolt_err(e))?);
            }
        }
    }
    walk_nested(db, inner, depth + 1)
}

/// The file's sizes and free pages, after the walk.
fn file_usage<R: ReadAt + ?Sized>(db: &EtcdDb<R>) -> Result<FileUsage, DbError> {
    let bolt = db.bolt();
    let meta = bolt.meta();
    let unreached = || bolt.unreached_pages().unwrap_or(0);
    let (free_pages, from, freelist_unreadable) = match bolt.freelist() {
        Ok(Some(ids)) => (ids.len() as u64, FreePagesFrom::Freelist, None),
        Ok(None) => (unreached(), FreePagesFrom::UnreachedPages, None),
        // The data's trees read whole; only the freelist is lost: count as bbolt does
        // without one.
        Err(e) => (
            unreached(),
            FreePagesFrom::UnreachedPages,
            Some(e.to_string()),
        ),
    };
    let free_bytes = free_pages * meta.page_size as u64;
    Ok(FileUsage {
        path: db.path().display().to_string(),
        file_bytes: bolt.file_len(),
        bbolt_bytes: bolt.size(),
        trailer_bytes: bolt.file_len().saturating_sub(bolt.size()),
        page_size: meta.page_size,
        pages: meta.pgid,
        free_pages,
        free_bytes,
        in_use_bytes: bolt.size().saturating_sub(free_bytes),
        free_pages_from: from,
        freelist_unreadable,
        txid: meta.txid,
    })
}

#[cfg(test)]
mod tests;
