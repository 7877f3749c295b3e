//! The version store: each key's versions (the entries of a [`super::key_table::KeyTable`]),
//! the order in which versions became history (for compaction and the history budget),
//! and packing — which values are packed with what, and the sweeps that find raw values
//! to pack.
//!
//! A version is named by (slot, slot generation, mod_revision) wherever it must be found
//! again later (the history queue, a value coming back packed): slots are reused for
//! other keys, and the generation tells.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::discards::Discards;
use super::key_table::{KeyTable, Slot};
use super::packing::{Codebook, Form, Job, Plan, Val};
use crate::model::{Bytes, Revision};

/// Fixed cost charged per history entry besides its value bytes (version metadata, queue
/// slot), so a flood of tiny values still hits the budget.
pub(super) const VERSION_OVERHEAD: usize = 64;

/// One stored version; a tombstone when its value is (the key was deleted at
/// mod_revision).
#[derive(Clone, Debug)]
pub(super) struct Version {
    pub(super) create_revision: Revision,
    pub(super) mod_revision: Revision,
    pub(super) version: i64,
    pub(super) lease: i64,
    pub(super) value: Val,
}

impl Version {
    #[inline]
    pub(super) fn tombstone(mod_revision: Revision) -> Version {
        Version {
            create_revision: 0,
            mod_revision,
            version: 0,
            lease: 0,
            value: Val::tombstone(),
        }
    }

    /// Bytes charged to the history budget while this version is history: the raw value
    /// (packed or not), the key, and a fixed overhead.
    #[inline]
    pub(super) fn cost(&self, key_len: usize) -> usize {
        VERSION_OVERHEAD + key_len + self.value.len()
    }
}

/// Everything held for one key.
#[derive(Debug)]
pub(super) struct KeyEntry {
    /// The newest version (possibly a tombstone).
    pub(super) newest: Version,
    /// Superseded versions still held, oldest first; `None` when there are none. Boxed:
    /// 8 bytes in every entry instead of a `VecDeque`'s 32, for the many keys (most, in a
    /// big cluster) that hold no history.
    #[allow(clippy::box_collection)]
    pub(super) older: Option<Box<VecDeque<Version>>>,
    pub(super) resource: u32,
    /// List generation that last saw this key (relist difference).
    pub(super) seen_gen: u32,
    /// The newest version's managedFields mark ([`crate::decode::last_write_marked`]), or
    /// [`NO_MARK`] when not known (written by a list, or restored from a checkpoint before
    /// format 7): what the next write's managedFields are compared with
    /// ([`super::writers`]).
    pub(super) mark: u64,
}

/// A key's managedFields mark not known yet.
pub(crate) const NO_MARK: u64 = u64::MAX;

impl KeyEntry {
    #[inline]
    pub(super) fn live(&self) -> Option<&Version> {
        (!self.newest.value.is_tombstone()).then_some(&self.newest)
    }

    /// Every version held, oldest first, the newest last.
    #[inline]
    pub(super) fn versions(&self) -> impl DoubleEndedIterator<Item = &Version> + '_ {
        self.older
            .iter()
            .flat_map(|o| o.iter())
            .chain(std::iter::once(&self.newest))
    }

    #[inline]
    pub(super) fn version_count(&self) -> usize {
        1 + self.older.as_ref().map_or(0, |o| o.len())
    }

    /// Index in `older` of the version with `mod_revision`. Packing asks for recent
    /// versions most (it takes the newest first), so the last few are looked at before a
    /// binary search over a long history (a Lease renewed thousands of times).
    #[inline]
    fn older_index(older: &VecDeque<Version>, mod_revision: Revision) -> Option<usize> {
        let n = older.len();
        for i in (n.saturating_sub(8)..n).rev() {
            let r = older[i].mod_revision;
            if r == mod_revision {
                return Some(i);
            }
            if r < mod_revision {
                return None;
            }
        }
        let i = older.partition_point(|v| v.mod_revision < mod_revision);
        (older.get(i)?.mod_revision == mod_revision).then_some(i)
    }

    #[inline]
    pub(super) fn version_mut(&mut self, mod_revision: Revision) -> Option<&mut Version> {
        if self.newest.mod_revision == mod_revision {
            return Some(&mut self.newest);
        }
        let older = self.older.as_mut()?;
        let i = Self::older_index(older, mod_revision)?;
        older.get_mut(i)
    }
}

/// The replica's keys with everything that names them: their versions, the order in which
/// versions became history (for compaction and the budget), and how values are packed.
/// A checkpoint holds it as one image ([`super::image`]).
#[derive(Default)]
pub(super) struct VersionStore {
    pub(super) keys: KeyTable<KeyEntry>,
    /// (revision, slot, generation): at `revision` the key's oldest version became
    /// history. Entries whose slot was given up since are skipped when they come up.
    pub(super) history_queue: VecDeque<Queued>,
    pub(super) codebook: Codebook,
    pub(super) packed: PackedStats,
    /// Slots written since their last sweep (see [`Replica::sweep`]), and a bit per slot
    /// saying whether it is listed there.
    dirty: Vec<Slot>,
    dirty_bits: Vec<u64>,
    /// Raw bytes of the values written to the `dirty` slots (an estimate: a version
    /// dropped before its sweep still counts until `dirty` empties).
    pub(super) unswept_bytes: u64,
    /// Of those, the bytes written since the last look at the backlog.
    pub(super) unswept_since_check: u64,
    /// When the last sweep ran (wall clock: packing changes nothing the session shows).
    last_sweep: Option<Instant>,
    /// Keys and events applied since the clock was last looked at.
    since_sweep_check: u32,
    /// Sweeps wait (see [`crate::store::Replica::defer_packing`]).
    pub(super) sweeps_deferred: bool,
}

impl VersionStore {
    /// Keys written and not swept yet, plus versions handed to the packing worker and not
    /// back yet: 0 when packing has caught up.
    #[inline]
    pub(super) fn packing_outstanding(&self) -> usize {
        self.codebook.outstanding() + self.dirty.len()
    }

    /// A restored store; `raw` are the slots that hold raw values worth packing (the
    /// sweeps look at them).
    pub(super) fn new(
        keys: KeyTable<KeyEntry>,
        history_queue: VecDeque<Queued>,
        codebook: Codebook,
        packed: PackedStats,
        raw: impl IntoIterator<Item = Slot>,
    ) -> VersionStore {
        let mut s = VersionStore {
            keys,
            history_queue,
            codebook,
            packed,
            ..VersionStore::default()
        };
        for slot in raw {
            s.mark_dirty(slot);
            s.unswept_bytes += s.raw_len(slot);
        }
        s
    }

    /// Raw bytes of the values at `slot` that may be worth packing.
    fn raw_len(&self, slot: Slot) -> u64 {
        self.keys.at(slot).map_or(0, |(_, _, e)| {
            e.versions()
                .filter_map(|v| v.value.raw_bytes())
                .filter(|b| Codebook::long_enough(b.len()))
                .map(|b| b.len() as u64)
                .sum()
        })
    }

    /// Takes the next dirty slot off the list, with the raw bytes it holds that may be
    /// worth packing.
    fn pop_dirty(&mut self) -> Option<(Slot, u64)> {
        let slot = self.dirty.pop()?;
        if let Some(w) = self.dirty_bits.get_mut(slot as usize / 64) {
            *w &= !(1u64 << (slot % 64));
        }
        let len = self.raw_len(slot);
        self.unswept_bytes = if self.dirty.is_empty() {
            0
        } else {
            self.unswept_bytes.saturating_sub(len)
        };
        Some((slot, len))
    }

    /// Raw bytes waiting for packing on this thread's side: written and not swept yet,
    /// or parked until their resource's dictionary exists.
    pub(super) fn backlog(&self) -> u64 {
        self.unswept_bytes + self.codebook.parked_bytes()
    }

    #[inline]
    pub(super) fn mark_dirty(&mut self, slot: Slot) {
        let (w, bit) = (slot as usize / 64, 1u64 << (slot % 64));
        if self.dirty_bits.len() <= w {
            self.dirty_bits.resize(w + 1, 0);
        }
        if self.dirty_bits[w] & bit == 0 {
            self.dirty_bits[w] |= bit;
            self.dirty.push(slot);
        }
    }
}

/// An entry of the history queue.
#[derive(Clone, Copy, Debug)]
pub(super) struct Queued {
    pub(super) revision: Revision,
    pub(super) slot: Slot,
    pub(super) gen: u32,
}

impl Queued {
    /// An entry that names no key any more (kept: dropping it still moves the budget's
    /// floor, as it did when it named one).
    #[inline]
    pub(super) fn stale(revision: Revision) -> Queued {
        Queued {
            revision,
            slot: Slot::MAX,
            gen: u32::MAX,
        }
    }
}

/// Values held packed: how many, their raw bytes and the bytes they take.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct PackedStats {
    pub(super) values: u64,
    pub(super) raw_bytes: u64,
    pub(super) held_bytes: u64,
}

impl PackedStats {
    #[inline]
    pub(super) fn add(&mut self, v: &Val) {
        if v.is_packed() {
            self.values += 1;
            self.raw_bytes += v.len() as u64;
            self.held_bytes += v.held_len() as u64;
        }
    }

    #[inline]
    pub(super) fn sub(&mut self, v: &Val) {
        if v.is_packed() {
            self.values -= 1;
            self.raw_bytes -= v.len() as u64;
            self.held_bytes -= v.held_len() as u64;
        }
    }

    #[inline]
    pub(super) fn sub_entry(&mut self, e: &KeyEntry) {
        for v in e.versions() {
            self.sub(&v.value);
        }
    }
}

/// Sweeps run at most this often while observations stream in.
const SWEEP_EVERY: Duration = Duration::from_millis(50);
/// Versions one sweep looks at, at most (about a millisecond of the apply's thread).
const SWEEP_VERSIONS: usize = 32_768;
/// Keys and events applied between two looks at the clock.
const SWEEP_CHECK_EVERY: u32 = 256;
/// Raw bytes waiting to be packed (written and not swept yet, or parked while their
/// dictionary is trained) above which the replica's own thread packs them itself
/// (`VersionStore::assist`), the way Go's allocating goroutines do marking work when the
/// background collector falls behind (the Go runtime's GC assists, `runtime/mgcmark.go`
/// `gcAssistAlloc`).
///
/// Why: the worker runs under `SCHED_IDLE`, which Linux runs only when no other thread
/// wants the core (sched(7)). During a list, etcd serving it and regscope decoding it
/// keep a small node's cores busy, so the worker got almost nothing: a live `snapshot`
/// of 1,000,000 keys (510 MiB) on two cores ended its list with 9% of the values packed
/// and peaked at 1.5–1.6× the raw bytes, against 0.85–0.87× with this bound
/// (`cargo bench --bench initial_sync`), while the list takes longer by the CPU the
/// packing takes there (about 2 µs a value, `cargo bench --bench value_compression`).
/// Where cores are idle the worker keeps the backlog under the bound and the replica's
/// thread packs nothing. 32 MiB: a few pages of a list (4 MiB each) or a second of a
/// busy watch.
pub(super) const ASSIST_ABOVE: u64 = 32 << 20;
/// Raw bytes one assist packs at least (about 20 ms), beyond twice what was written since
/// the last one.
const ASSIST_MIN_BYTES: u64 = 4 << 20;

impl VersionStore {
    /// Looks at the clock every few hundred keys and events, and sweeps when the last
    /// sweep is [`SWEEP_EVERY`] old.
    #[inline]
    pub(super) fn maybe_sweep(&mut self, work: usize, discards: &mut Discards<Bytes>) {
        let s = self;
        s.since_sweep_check = s.since_sweep_check.saturating_add(work as u32);
        if s.since_sweep_check < SWEEP_CHECK_EVERY {
            return;
        }
        s.since_sweep_check = 0;
        if s.sweep_due() {
            s.sweep(discards);
        }
        if !s.sweeps_deferred && s.backlog() > ASSIST_ABOVE {
            // In proportion to what came in since the last look, as a Go assist is to
            // the allocation that triggers it: a backlog left by a deferred stretch (a
            // replay's seek) drains over the next observations, not in one stall.
            let most = 2 * std::mem::take(&mut s.unswept_since_check) + ASSIST_MIN_BYTES;
            s.assist(most, discards);
        }
        s.unswept_since_check = 0;
    }

    /// Whether a sweep may run now: not deferred, and the last one is [`SWEEP_EVERY`]
    /// old (or there was none).
    pub(super) fn sweep_due(&self) -> bool {
        !self.sweeps_deferred && self.last_sweep.is_none_or(|t| t.elapsed() >= SWEEP_EVERY)
    }

    /// Packing's turn: swaps in what the worker has packed, then hands it the raw values
    /// of the slots written since their last sweep, newest first, until it holds enough
    /// for now. Values of a resource without a dictionary yet are its samples, and their
    /// slots wait for it.
    ///
    /// Raw values replaced by their packed form go to `discards`.
    pub(super) fn sweep(&mut self, discards: &mut Discards<Bytes>) {
        let store = self;
        store.last_sweep = Some(Instant::now());
        let (keys, packed) = (&mut store.keys, &mut store.packed);
        let again = store.codebook.poll(|job, form, raw_len, data| {
            let Some((_, e)) = keys.at_mut(job.slot, job.gen) else {
                return;
            };
            let Some(v) = e.version_mut(job.mod_revision) else {
                return;
            };
            if v.value.form() != Form::Raw || v.value.len() != raw_len as usize {
                return;
            }
            if let Some(p) = Val::from_parts(form, raw_len, data) {
                packed.add(&p);
                discards.keep(std::mem::replace(&mut v.value, p).into_data());
            }
        });
        for slot in again {
            store.mark_dirty(slot);
            store.unswept_bytes += store.raw_len(slot);
        }
        let mut looked = 0usize;
        while !store.codebook.full() && looked < SWEEP_VERSIONS {
            let Some((slot, len)) = store.pop_dirty() else {
                break;
            };
            let Some((_, gen, e)) = store.keys.at(slot) else {
                continue;
            };
            let resource = e.resource;
            looked += e.version_count();
            let mut raw = e
                .versions()
                .filter_map(|v| v.value.raw_bytes().map(|b| (v.mod_revision, b)))
                .filter(|(_, b)| Codebook::packable(b));
            match store.codebook.plan(resource) {
                Plan::Skip => {
                    store.dirty = Vec::new();
                    store.dirty_bits = Vec::new();
                    store.unswept_bytes = 0;
                    break;
                }
                Plan::Pack => {
                    for (mod_revision, b) in raw {
                        let job = Job {
                            slot,
                            gen,
                            mod_revision,
                        };
                        store.codebook.add(resource, job, b);
                    }
                }
                Plan::Sample => {
                    // The newest raw value of each key: samples from many keys.
                    if let Some((_, b)) = raw.next_back() {
                        store.codebook.sample(resource, b);
                        store.codebook.park(resource, slot, len);
                    }
                }
                Plan::Park => {
                    if raw.count() > 0 {
                        store.codebook.park(resource, slot, len);
                    }
                }
            }
        }
        // Hand over what this sweep found; the answers are taken by the next sweep.
        store.codebook.flush();
    }

    /// Packs on this thread, newest first, until the backlog is back at [`ASSIST_ABOVE`]
    /// or `most` bytes lower than it was. Values of a resource without a dictionary are
    /// sampled and parked as a sweep does, and a dictionary the worker has not trained
    /// yet is trained here.
    fn assist(&mut self, most: u64, discards: &mut Discards<Bytes>) {
        let goal = self.backlog().saturating_sub(most).max(ASSIST_ABOVE);
        while self.backlog() > goal {
            if let Some(resource) = self.codebook.training() {
                // The worker has not trained this dictionary yet: train it here.
                for s in self.codebook.train_here(resource) {
                    self.mark_dirty(s);
                    self.unswept_bytes += self.raw_len(s);
                }
                continue;
            }
            let Some(&slot) = self.dirty.last() else {
                break;
            };
            let Some((_, gen, e)) = self.keys.at(slot) else {
                self.pop_dirty();
                continue;
            };
            let resource = e.resource;
            match self.codebook.plan(resource) {
                Plan::Skip => {
                    self.dirty = Vec::new();
                    self.dirty_bits = Vec::new();
                    self.unswept_bytes = 0;
                    return;
                }
                Plan::Sample | Plan::Park => {
                    // As a sweep does: the newest raw value as a sample, the slot parked.
                    let Some((_, len)) = self.pop_dirty() else {
                        break;
                    };
                    let newest = self.keys.at(slot).and_then(|(_, _, e)| {
                        e.versions()
                            .filter_map(|v| v.value.raw_bytes())
                            .rfind(|b| Codebook::packable(b))
                            .cloned()
                    });
                    if let Some(b) = newest {
                        self.codebook.sample(resource, &b);
                        self.codebook.park(resource, slot, len);
                    }
                }
                Plan::Pack => {
                    self.pop_dirty();
                    let (keys, codebook, packed) =
                        (&mut self.keys, &mut self.codebook, &mut self.packed);
                    let Some((_, e)) = keys.at_mut(slot, gen) else {
                        continue;
                    };
                    let older = e.older.iter_mut().flat_map(|o| o.iter_mut());
                    for v in older.chain(std::iter::once(&mut e.newest)) {
                        let Some(raw) = v.value.raw_bytes().filter(|b| Codebook::packable(b))
                        else {
                            continue;
                        };
                        let raw_len = raw.len() as u32;
                        let Some((form, data)) = codebook.pack_here(resource, raw) else {
                            continue;
                        };
                        if let Some(p) = Val::from_parts(form, raw_len, data) {
                            packed.add(&p);
                            discards.keep(std::mem::replace(&mut v.value, p).into_data());
                        }
                    }
                }
            }
        }
    }
}
