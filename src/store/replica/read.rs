//! The replica's read side: what views, `snapshot`, `verify` and `export` ask of it (a key
//! now or at a revision, ranges, history, the summary, a diff against etcd), and the
//! shapes they get back.

use std::collections::VecDeque;
use std::ops::Bound;
use std::time::SystemTime;

use bytes::Bytes;

use super::list_progress::ListProgress;
use super::stats::{GrowthSample, ResourceStats, ResourceSummary};
use super::versions::{KeyEntry, Version};
use super::writers::{WriterStats, WriterSummary};
use super::Replica;
use crate::model::{escape_bytes, CompactionSeen, Gap, KeyValue, Revision};
use crate::store::etcd_cluster::WatchHealth;

pub use super::answers::*;

impl Replica {
    /// The replica's applied revision: every event up to it is applied, and nothing past
    /// it. Moves with events, lists and progress notifications from etcds that order them
    /// after pending events, never with [`crate::model::Observation::HeadAtLeast`].
    pub fn revision(&self) -> Revision {
        self.applied
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
        let p = self.versions.packed;
        ReplicaMemory {
            keys: self.versions.keys.len() as u64,
            packed_values: p.values,
            packed_raw_bytes: p.raw_bytes,
            packed_bytes: p.held_bytes,
            packing_outstanding: self.versions.packing_outstanding() as u64,
            table_bytes: self.versions.keys.overhead_bytes() as u64,
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
    pub fn get(&self, key: &[u8]) -> Option<VersionValue> {
        let e = self.versions.keys.get(key)?;
        e.live().map(|v| self.unpacked(e.resource, v))
    }

    /// The newest live version of `key` without its value unpacked.
    pub fn get_meta(&self, key: &[u8]) -> Option<VersionMeta<'_>> {
        self.versions.keys.get(key)?.live().map(VersionMeta::of)
    }

    /// The version of `key` visible at revision `rev` (`Ok(None)`: absent or deleted then).
    pub fn get_at(&self, key: &[u8], rev: Revision) -> Result<Option<VersionValue>, HistoryError> {
        self.check_rev(rev)?;
        Ok(self
            .versions
            .keys
            .get(key)
            .and_then(|e| version_at(e, rev).map(|v| self.unpacked(e.resource, v))))
    }

    fn prefix_range<'a>(
        &'a self,
        prefix: &'a [u8],
    ) -> impl Iterator<Item = (&'a [u8], &'a KeyEntry)> + 'a {
        let end = prefix_upper(prefix);
        let hi = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        // The bounds are only read by the binary search inside `range`.
        let it = self.versions.keys.range(Bound::Included(prefix), hi);
        it.take_while(move |(k, _)| k.starts_with(prefix))
    }

    /// Every live key under `prefix` at revision `rev`, ascending by key bytes, with its
    /// value unpacked.
    pub fn range_at<'a>(
        &'a self,
        prefix: &'a [u8],
        rev: Revision,
    ) -> Result<impl Iterator<Item = (&'a [u8], VersionValue)> + 'a, HistoryError> {
        self.check_rev(rev)?;
        Ok(self.prefix_range(prefix).filter_map(move |(k, e)| {
            version_at(e, rev).map(|v| (k, self.unpacked(e.resource, v)))
        }))
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

    /// Every key under `prefix` the replica holds (live, or deleted with versions still
    /// held), in key order: its resource and the metadata of each version held, oldest
    /// first (`size: None` for a deletion), values not unpacked. What `analyze` counts
    /// for a recording.
    pub fn held_versions<'a>(
        &'a self,
        prefix: &'a [u8],
    ) -> impl Iterator<Item = (&'a [u8], &'a str, Vec<VersionMeta<'a>>)> + 'a {
        self.prefix_range(prefix).map(move |(k, e)| {
            (
                k,
                self.resource_name(e.resource),
                e.versions().map(VersionMeta::of).collect(),
            )
        })
    }

    /// Every version of `key` still held, oldest first (tombstones have `value: None`).
    pub fn history(&self, key: &[u8]) -> Vec<VersionValue> {
        self.versions
            .keys
            .get(key)
            .map(|e| e.versions().map(|v| self.unpacked(e.resource, v)).collect())
            .unwrap_or_default()
    }

    /// Metadata of a key (live or not).
    pub fn key_meta(&self, key: &[u8]) -> Option<KeyMeta> {
        let (k, e) = self.versions.keys.get_key_value(key)?;
        Some(KeyMeta {
            key: Bytes::copy_from_slice(k),
            resource: self.resources[e.resource as usize].resource.clone(),
            newest: self.unpacked(e.resource, &e.newest),
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
        self.versions
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
        self.versions
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

    /// Whether resource `id` looks rewritten whole in the minute before `now_second`: most
    /// of its keys written with unchanged managedFields (an estimate, see
    /// [`super::writers::Writers::looks_rewritten`]).
    pub fn looks_rewritten(&self, id: u32, now_second: u64) -> bool {
        self.resources
            .get(id as usize)
            .is_some_and(|r| self.writers.looks_rewritten(id, r.keys, now_second))
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

    /// Events of the resources `of` (ids as [`Replica::resource_name`] takes) applied at
    /// revisions after `rev`, counted in the event log, newest first until `rev`. `None`
    /// when the log cannot tell: it no longer reaches back to `rev` (older events were
    /// dropped for the newest [`ReplicaConfig::event_log_cap`](super::ReplicaConfig)), the
    /// replica had not listed by then, or a resync after a gap ends after `rev` (the
    /// events inside a gap were never seen one by one).
    pub fn events_after(&self, rev: Revision, of: impl Fn(u32) -> bool) -> Option<u64> {
        if self.current_gaps().any(|g| g.to > rev) {
            return None;
        }
        let mut n = 0u64;
        for e in self.events.iter().rev() {
            if e.note.is_some() {
                // etcd was replaced here: what came before is another revision space. The
                // rows after it are every event since the new etcd's first list.
                return self.first_list.filter(|f| *f <= rev).map(|_| n);
            }
            if e.revision <= rev {
                return Some(n);
            }
            if of(e.resource) {
                n += 1;
            }
        }
        // The whole log is after `rev`: complete only when nothing was dropped from it and
        // the replica had listed by then.
        (self.events.len() < self.cfg.event_log_cap && self.first_list.is_some_and(|f| f <= rev))
            .then_some(n)
    }

    /// Per-second revision growth, oldest first.
    pub fn growth(&self) -> impl DoubleEndedIterator<Item = &GrowthSample> + ExactSizeIterator {
        self.growth.samples.iter()
    }

    pub fn gaps(&self) -> &[Gap] {
        &self.gaps
    }

    /// The gap a key's version at `newer` came in through, when the key's version before
    /// it (at `older`) was seen before that gap: the versions between, if any, were never
    /// seen (the history goes, e.g., from version 7 to 10).
    pub fn gap_between(&self, older: Revision, newer: Revision) -> Option<&Gap> {
        self.current_gaps()
            .find(|g| older < g.from && g.from <= newer && newer <= g.to)
    }

    /// The gaps of the etcd read now: those since the newest replacement (the ones before
    /// it are of another revision space, kept only to be shown).
    pub fn current_gaps(&self) -> impl Iterator<Item = &Gap> + '_ {
        let since = self.reset_at;
        self.gaps
            .iter()
            .filter(move |g| since.is_none_or(|s| g.at >= s))
    }

    /// What the relist after a gap showed had changed in it; `None` for a gap restored from
    /// a checkpoint written before these were counted.
    pub fn gap_changes(&self, gap: &Gap) -> Option<&GapChanges> {
        self.gap_changes
            .iter()
            .find(|c| c.from == gap.from && c.to == gap.to)
    }

    /// The gaps with their changes, as `snapshot --json` gives them.
    pub fn gap_summaries(&self) -> Vec<GapSummary> {
        self.gaps
            .iter()
            .map(|g| {
                let c = self.gap_changes(g);
                let mut by_resource = std::collections::BTreeMap::new();
                for (id, n) in c.map(|c| c.by_resource.as_slice()).unwrap_or_default() {
                    let e: &mut UnseenCounts = by_resource
                        .entry(self.resource_name(*id).to_string())
                        .or_default();
                    e.created += n.created;
                    e.changed += n.changed;
                    e.deleted += n.deleted;
                }
                GapSummary {
                    gap: g.clone(),
                    changes: c.map(|c| c.total()),
                    by_resource,
                }
            })
            .collect()
    }

    pub fn compactions(&self) -> &VecDeque<CompactionSeen> {
        &self.compactions
    }

    /// The replica's part of the summary for `snapshot --json` (resources sorted by name);
    /// the etcd cluster's part (replacements, connection, watch, status, members) is left
    /// empty for [`crate::store::Session::summary`] to fill in.
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
            gaps: self.gap_summaries(),
            replacements: Vec::new(),
            connection: ConnectionSummary::default(),
            compactions: self.compactions.iter().cloned().collect(),
            watch: WatchHealth::default(),
            etcd_status: None,
            members: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Compares the replica at its applied revision with `etcd_kvs`, the result of a range
    /// over the same prefix at the same revision (ascending by key). Returns every
    /// difference in key, value, create_revision, mod_revision and version.
    pub fn diff(&self, etcd_kvs: &[KeyValue]) -> Vec<Difference> {
        let mut out = Vec::new();
        let prefix = self.cfg.prefix.clone();
        let ours: Vec<(&[u8], VersionValue)> = match self.range_at(&prefix, self.applied) {
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
pub(super) fn version_at(e: &KeyEntry, rev: Revision) -> Option<&Version> {
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
