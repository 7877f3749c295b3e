//! The key table: the replica's keys in a slab of entries addressed by slot number, a hash
//! table of slots for the point lookups every watch event makes, and a key order that is
//! brought up to date only when someone asks for ranges. Each key's versions, in its
//! entry, are the version store's ([`super::versions`]).
//!
//! Why this shape (`cargo bench --bench replica_apply`, `--bench record`):
//! - Kubernetes keys share long prefixes (`/registry/events/default/web-…`), so ordered
//!   lookups compare 20-odd keys of 40–60 bytes each behind a pointer; the hash table
//!   answers an update in one comparison.
//! - Ordering a new key costs ~20 such comparisons, whatever the structure. Most
//!   consumers never need order (a replay running to a point, `snapshot`'s counts), so
//!   new keys are only appended to `extra` and sorted in one batch ([`KeyTable::settle`])
//!   when ranges are wanted; a key created and forgotten in between (an Event and its
//!   TTL) is never sorted at all. Ranges asked for before a settle are still exact: they
//!   sort a copy of `extra`.
//! - An entry is one slab cell (key, generation, place in the order, value), 112 bytes
//!   for the replica's entries, where a hash map plus an ordered set of shared keys cost
//!   about 340 bytes a key beyond the key and value.
//!
//! A forgotten key's slot is reused for another key; its generation changes, so that
//! anything that named the slot before (the history queue, packing jobs) can tell.

use std::cmp::Ordering;
use std::hash::BuildHasher;
use std::ops::Bound;

use hashbrown::HashTable;

/// A folded hash as the table's: the same 32 bits high and low, so that the bucket
/// (low bits) and hashbrown's tag (top 7 bits) both come from it.
#[inline]
fn widen(h: u32) -> u64 {
    (u64::from(h) << 32) | u64::from(h)
}

/// Index of an entry in the slab.
pub(crate) type Slot = u32;

/// Cells per slab chunk: the slab grows by chunks, never by copying what it holds.
const CHUNK_BITS: u32 = 12;
const CHUNK: usize = 1 << CHUNK_BITS;

/// `Cell::place` of a slot that holds no key.
const FREE: u32 = u32::MAX;
/// `Cell::place` of a slot listed in the sorted `main` order.
const MAIN: u32 = u32::MAX - 1;

struct Cell<V> {
    key: Box<[u8]>,
    /// Changes each time the slot is given up.
    gen: u32,
    /// `FREE`, `MAIN`, or the slot's index in `extra`.
    place: u32,
    /// `None` when free, or forgotten while still listed in `main` (the key stays until
    /// the next settle, for binary searches).
    value: Option<V>,
}

/// Keys to values, iterated in key order. See the module docs.
pub(crate) struct KeyTable<V> {
    chunks: Vec<Vec<Cell<V>>>,
    /// Slots with their key's [`KeyTable::hash`]: growing the table rehashes from it,
    /// without reading a key (a replay grows it from a checkpoint's size while applying
    /// a million events a second).
    table: HashTable<(Slot, u32)>,
    hasher: foldhash::fast::RandomState,
    /// Sorted by key; may list forgotten slots (`value == None`) until the next settle.
    main: Vec<Slot>,
    /// Slots not yet in `main`, in no order.
    extra: Vec<Slot>,
    /// Forgotten slots still listed in `main`.
    dead_in_main: usize,
    free: Vec<Slot>,
    live: usize,
}

impl<V> Default for KeyTable<V> {
    fn default() -> Self {
        KeyTable {
            chunks: Vec::new(),
            table: HashTable::new(),
            hasher: Default::default(),
            main: Vec::new(),
            extra: Vec::new(),
            dead_in_main: 0,
            free: Vec::new(),
            live: 0,
        }
    }
}

impl<V> KeyTable<V> {
    #[inline]
    fn cell(&self, s: Slot) -> &Cell<V> {
        &self.chunks[(s >> CHUNK_BITS) as usize][s as usize & (CHUNK - 1)]
    }

    #[inline]
    fn cell_mut(&mut self, s: Slot) -> &mut Cell<V> {
        &mut self.chunks[(s >> CHUNK_BITS) as usize][s as usize & (CHUNK - 1)]
    }

    /// Keys held.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// `key`'s hash, folded to 32 bits (kept in the table).
    fn hash(&self, key: &[u8]) -> u32 {
        let h = self.hasher.hash_one(key);
        (h ^ (h >> 32)) as u32
    }

    fn find(&self, key: &[u8]) -> Option<Slot> {
        let h = self.hash(key);
        let chunks = &self.chunks;
        self.table
            .find(widen(h), |&(s, hs)| {
                hs == h && &*chunks[(s >> CHUNK_BITS) as usize][s as usize & (CHUNK - 1)].key == key
            })
            .map(|&(s, _)| s)
    }

    /// The slot of `key`, when held.
    pub(crate) fn slot(&self, key: &[u8]) -> Option<Slot> {
        self.find(key)
    }

    pub(crate) fn get(&self, key: &[u8]) -> Option<&V> {
        self.find(key).and_then(|s| self.cell(s).value.as_ref())
    }

    pub(crate) fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        let s = self.find(key)?;
        self.cell_mut(s).value.as_mut()
    }

    pub(crate) fn get_key_value(&self, key: &[u8]) -> Option<(&[u8], &V)> {
        let c = self.cell(self.find(key)?);
        Some((&c.key, c.value.as_ref()?))
    }

    /// The key, generation and value at `slot`, when it holds a key.
    pub(crate) fn at(&self, slot: Slot) -> Option<(&[u8], u32, &V)> {
        let c = self
            .chunks
            .get((slot >> CHUNK_BITS) as usize)?
            .get(slot as usize & (CHUNK - 1))?;
        Some((&c.key, c.gen, c.value.as_ref()?))
    }

    /// The value at `slot` when it holds a key and its generation is still `gen`.
    pub(crate) fn at_mut(&mut self, slot: Slot, gen: u32) -> Option<(&[u8], &mut V)> {
        let c = self
            .chunks
            .get_mut((slot >> CHUNK_BITS) as usize)?
            .get_mut(slot as usize & (CHUNK - 1))?;
        if c.gen != gen {
            return None;
        }
        Some((&c.key, c.value.as_mut()?))
    }

    /// The slot, generation and value of `key`, when held.
    pub(crate) fn get_full_mut(&mut self, key: &[u8]) -> Option<(Slot, u32, &mut V)> {
        let s = self.find(key)?;
        let c = self.cell_mut(s);
        let gen = c.gen;
        Some((s, gen, c.value.as_mut()?))
    }

    /// Inserts `key`, which must not be held, with `v`. Returns its slot and generation.
    pub(crate) fn insert(&mut self, key: &[u8], v: V) -> (Slot, u32) {
        debug_assert!(self.find(key).is_none());
        let s = self.insert_new(key, v);
        (s, self.cell(s).gen)
    }

    /// The slot, generation and value of `key`, inserted by `make` when absent.
    #[cfg(test)]
    pub(crate) fn get_or_insert_with(
        &mut self,
        key: &[u8],
        make: impl FnOnce() -> V,
    ) -> (Slot, u32, &mut V) {
        let s = match self.find(key) {
            Some(s) => s,
            None => self.insert_new(key, make()),
        };
        let c = self.cell_mut(s);
        let gen = c.gen;
        (
            s,
            gen,
            c.value.as_mut().expect("a found slot holds a value"),
        )
    }

    fn insert_new(&mut self, key: &[u8], v: V) -> Slot {
        let place = self.extra.len() as u32;
        let s = match self.free.pop() {
            Some(s) => {
                let c = self.cell_mut(s);
                c.key = key.into();
                c.place = place;
                c.value = Some(v);
                s
            }
            None => {
                if self.chunks.last().is_none_or(|c| c.len() == CHUNK) {
                    self.chunks.push(Vec::with_capacity(CHUNK));
                }
                let ci = self.chunks.len() - 1;
                let chunk = self.chunks.last_mut().expect("a chunk");
                let s = (ci << CHUNK_BITS) + chunk.len();
                chunk.push(Cell {
                    key: key.into(),
                    gen: 0,
                    place,
                    value: Some(v),
                });
                s as Slot
            }
        };
        self.extra.push(s);
        let h = self.hash(key);
        self.table
            .insert_unique(widen(h), (s, h), |&(_, h)| widen(h));
        self.live += 1;
        s
    }

    /// Forgets `key`. Its slot is reused at once when the key was never sorted, after the
    /// next settle otherwise.
    #[cfg(test)]
    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<V> {
        self.remove_key(key)
    }

    /// Forgets the key at `slot` when its generation is still `gen`.
    pub(crate) fn remove_at(&mut self, slot: Slot, gen: u32) -> Option<V> {
        let (key, g, _) = self.at(slot)?;
        if g != gen {
            return None;
        }
        let h = self.hash(key);
        match self.table.find_entry(widen(h), |&(t, _)| t == slot) {
            Ok(e) => {
                e.remove();
            }
            Err(_) => return None,
        }
        self.forget(slot)
    }

    #[cfg(test)]
    fn remove_key(&mut self, key: &[u8]) -> Option<V> {
        let h = self.hash(key);
        let chunks = &self.chunks;
        let s = match self.table.find_entry(widen(h), |&(s, _)| {
            &*chunks[(s >> CHUNK_BITS) as usize][s as usize & (CHUNK - 1)].key == key
        }) {
            Ok(e) => {
                let ((s, _), _) = e.remove();
                s
            }
            Err(_) => return None,
        };
        self.forget(s)
    }

    /// Gives up slot `s`, already out of the table.
    fn forget(&mut self, s: Slot) -> Option<V> {
        self.live -= 1;
        let c = self.cell_mut(s);
        let v = c.value.take();
        c.gen = c.gen.wrapping_add(1);
        match c.place {
            MAIN => {
                self.dead_in_main += 1;
                if self.dead_in_main > self.main.len() / 2 + CHUNK {
                    self.drop_dead_from_main();
                }
            }
            i => {
                c.key = Box::default();
                c.place = FREE;
                self.extra.swap_remove(i as usize);
                if let Some(&moved) = self.extra.get(i as usize) {
                    self.cell_mut(moved).place = i;
                }
                self.free.push(s);
            }
        }
        v
    }

    fn free_dead(&mut self, s: Slot) {
        let c = self.cell_mut(s);
        c.key = Box::default();
        c.place = FREE;
        self.free.push(s);
    }

    /// Takes forgotten slots out of `main` (no comparisons: it stays sorted).
    fn drop_dead_from_main(&mut self) {
        let mut main = std::mem::take(&mut self.main);
        self.retain_live(&mut main);
        self.main = main;
        self.dead_in_main = 0;
    }

    /// Takes forgotten slots out of `order` and frees them.
    fn retain_live(&mut self, order: &mut Vec<Slot>) {
        order.retain(|&s| {
            if self.cell(s).value.is_some() {
                true
            } else {
                self.free_dead(s);
                false
            }
        });
    }

    /// Brings the key order up to date: sorts the keys added since the last settle into
    /// the order, so that ranges cost a binary search. O(new keys × log) comparisons plus
    /// a pass over the order; nothing when nothing changed.
    pub(crate) fn settle(&mut self) {
        if self.extra.is_empty() {
            if self.dead_in_main > 0 {
                self.drop_dead_from_main();
            }
            return;
        }
        let mut extra = std::mem::take(&mut self.extra);
        self.sort_slots(&mut extra);
        let main = std::mem::take(&mut self.main);
        let mut out = Vec::with_capacity(main.len() - self.dead_in_main + extra.len());
        let mut i = 0;
        for &e in &extra {
            let key = &self.cell(e).key;
            let n = main[i..].partition_point(|&m| *self.cell(m).key < **key);
            out.extend_from_slice(&main[i..i + n]);
            out.push(e);
            i += n;
        }
        out.extend_from_slice(&main[i..]);
        // Placed in `main` now; forgotten slots come out in the same pass.
        if self.dead_in_main > 0 {
            self.retain_live(&mut out);
        }
        for &e in &extra {
            self.cell_mut(e).place = MAIN;
        }
        self.main = out;
        self.dead_in_main = 0;
    }

    /// Whether ranges are answered from the order alone (no copy to sort).
    #[cfg(test)]
    pub(crate) fn is_settled(&self) -> bool {
        self.extra.is_empty()
    }

    /// Keys added since the last settle.
    pub(crate) fn unsettled(&self) -> usize {
        self.extra.len()
    }

    /// Sorts slots by key. Stable, so that runs already in order (the pages of a list)
    /// merge in few comparisons.
    fn sort_slots(&self, slots: &mut [Slot]) {
        slots.sort_by(|&a, &b| self.cell(a).key.cmp(&self.cell(b).key));
    }

    fn in_bounds(key: &[u8], lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
        (match lo {
            Bound::Included(l) => key >= l,
            Bound::Excluded(l) => key > l,
            Bound::Unbounded => true,
        }) && (match hi {
            Bound::Included(h) => key <= h,
            Bound::Excluded(h) => key < h,
            Bound::Unbounded => true,
        })
    }

    /// Entries whose keys fall between `lo` and `hi`, in key order (forwards or, with
    /// `.rev()`, backwards).
    pub(crate) fn range<'a>(&'a self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Range<'a, V> {
        let start = match lo {
            Bound::Included(l) => self.main.partition_point(|&s| *self.cell(s).key < *l),
            Bound::Excluded(l) => self.main.partition_point(|&s| *self.cell(s).key <= *l),
            Bound::Unbounded => 0,
        };
        let end = match hi {
            Bound::Included(h) => self.main.partition_point(|&s| *self.cell(s).key <= *h),
            Bound::Excluded(h) => self.main.partition_point(|&s| *self.cell(s).key < *h),
            Bound::Unbounded => self.main.len(),
        }
        .max(start);
        let mut extra: Vec<Slot> = self
            .extra
            .iter()
            .copied()
            .filter(|&s| Self::in_bounds(&self.cell(s).key, lo, hi))
            .collect();
        self.sort_slots(&mut extra);
        Range {
            ks: self,
            main: &self.main[start..end],
            extra_back: extra.len(),
            extra,
            extra_front: 0,
        }
    }

    /// Every entry in key order.
    pub(crate) fn iter(&self) -> Range<'_, V> {
        self.range(Bound::Unbounded, Bound::Unbounded)
    }

    /// Every entry in no particular order (cheaper than [`KeyTable::iter`] when the order
    /// is not settled), with its slot.
    pub(crate) fn iter_unordered(&self) -> impl Iterator<Item = (Slot, &[u8], &V)> + '_ {
        self.chunks.iter().enumerate().flat_map(|(ci, chunk)| {
            chunk.iter().enumerate().filter_map(move |(i, c)| {
                c.value
                    .as_ref()
                    .map(|v| (((ci << CHUNK_BITS) + i) as Slot, &*c.key, v))
            })
        })
    }

    /// Calls `f` on every value, in no particular order.
    pub(crate) fn for_each_mut(&mut self, mut f: impl FnMut(&[u8], &mut V)) {
        for chunk in &mut self.chunks {
            for c in chunk.iter_mut() {
                if let Some(v) = c.value.as_mut() {
                    f(&c.key, v);
                }
            }
        }
    }

    /// A table of `entries`, which must come in strictly ascending key order (a
    /// checkpoint's): the order is taken as it is, without comparisons. Returns `None`
    /// when the keys are not strictly ascending.
    pub(crate) fn from_sorted(entries: Vec<(Box<[u8]>, V)>) -> Option<KeyTable<V>> {
        let mut ks = KeyTable::default();
        let n = entries.len();
        ks.table = HashTable::with_capacity(n);
        ks.main = Vec::with_capacity(n);
        ks.chunks = Vec::with_capacity(n.div_ceil(CHUNK));
        let mut prev: Option<Slot> = None;
        for (i, (key, v)) in entries.into_iter().enumerate() {
            if i % CHUNK == 0 {
                ks.chunks.push(Vec::with_capacity(CHUNK));
            }
            let s = i as Slot;
            if let Some(p) = prev {
                if ks.cell(p).key >= key {
                    return None;
                }
            }
            let h = ks.hash(&key);
            ks.chunks.last_mut().expect("a chunk").push(Cell {
                key,
                gen: 0,
                place: MAIN,
                value: Some(v),
            });
            ks.table.insert_unique(widen(h), (s, h), |&(_, h)| widen(h));
            ks.main.push(s);
            prev = Some(s);
        }
        ks.live = n;
        Some(ks)
    }

    /// One more than the highest slot number in use (for tables indexed by slot).
    pub(crate) fn slot_bound(&self) -> usize {
        (self.chunks.len().saturating_sub(1) << CHUNK_BITS)
            + self.chunks.last().map_or(0, |c| c.len())
    }

    /// Bytes held by the structure itself (slab cells, table, order), not counting what
    /// the keys and values point to.
    pub(crate) fn overhead_bytes(&self) -> usize {
        self.chunks.len() * CHUNK * std::mem::size_of::<Cell<V>>()
            + self.table.capacity() * (std::mem::size_of::<(Slot, u32)>() + 1)
            + (self.main.capacity() + self.extra.capacity() + self.free.capacity())
                * std::mem::size_of::<Slot>()
    }
}

/// Entries of a key range in key order: the sorted `main` order merged with the sorted
/// part of `extra` that falls in the range. Forgotten slots in `main` are skipped.
pub(crate) struct Range<'a, V> {
    ks: &'a KeyTable<V>,
    main: &'a [Slot],
    extra: Vec<Slot>,
    extra_front: usize,
    extra_back: usize,
}

impl<'a, V> Range<'a, V> {
    fn live_main_front(&mut self) -> Option<Slot> {
        while let Some((&s, rest)) = self.main.split_first() {
            if self.ks.cell(s).value.is_some() {
                return Some(s);
            }
            self.main = rest;
        }
        None
    }

    fn live_main_back(&mut self) -> Option<Slot> {
        while let Some((&s, rest)) = self.main.split_last() {
            if self.ks.cell(s).value.is_some() {
                return Some(s);
            }
            self.main = rest;
        }
        None
    }

    fn item(&self, s: Slot) -> (&'a [u8], &'a V) {
        let ks: &'a KeyTable<V> = self.ks;
        let c = ks.cell(s);
        (&c.key, c.value.as_ref().expect("live slot"))
    }
}

impl<'a, V> Range<'a, V> {
    fn next_slot(&mut self) -> Option<Slot> {
        let m = self.live_main_front();
        let e = (self.extra_front < self.extra_back).then(|| self.extra[self.extra_front]);
        let take_main = match (m, e) {
            (Some(m), Some(e)) => self.ks.cell(m).key.cmp(&self.ks.cell(e).key) == Ordering::Less,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return None,
        };
        if take_main {
            self.main = &self.main[1..];
            m
        } else {
            self.extra_front += 1;
            e
        }
    }

    fn next_back_slot(&mut self) -> Option<Slot> {
        let m = self.live_main_back();
        let e = (self.extra_front < self.extra_back).then(|| self.extra[self.extra_back - 1]);
        let take_main = match (m, e) {
            (Some(m), Some(e)) => {
                self.ks.cell(m).key.cmp(&self.ks.cell(e).key) == Ordering::Greater
            }
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return None,
        };
        if take_main {
            self.main = &self.main[..self.main.len() - 1];
            m
        } else {
            self.extra_back -= 1;
            e
        }
    }

    /// The same entries with their slots.
    pub(crate) fn with_slots(mut self) -> impl Iterator<Item = (Slot, &'a [u8], &'a V)> {
        std::iter::from_fn(move || {
            let s = self.next_slot()?;
            let (k, v) = self.item(s);
            Some((s, k, v))
        })
    }
}

impl<'a, V> Iterator for Range<'a, V> {
    type Item = (&'a [u8], &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        let s = self.next_slot()?;
        Some(self.item(s))
    }
}

impl<V> DoubleEndedIterator for Range<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let s = self.next_back_slot()?;
        Some(self.item(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn keys_of<V>(r: Range<'_, V>) -> Vec<Vec<u8>> {
        r.map(|(k, _)| k.to_vec()).collect()
    }

    #[test]
    fn ranges_are_in_key_order_and_follow_inserts_and_removes() {
        let mut k = KeyTable::default();
        for (i, key) in ["/r/b", "/r/a", "/s/x", "/r/c"].iter().enumerate() {
            *k.get_or_insert_with(key.as_bytes(), || 0).2 += i;
        }
        *k.get_or_insert_with(b"/r/a", || 100).2 += 10;
        assert_eq!(k.get(b"/r/a"), Some(&11));
        let r: Vec<_> = k
            .range(Bound::Included(b"/r/"), Bound::Excluded(b"/r0"))
            .map(|(k, v)| (k.to_vec(), *v))
            .collect();
        assert_eq!(
            r,
            vec![
                (b"/r/a".to_vec(), 11),
                (b"/r/b".to_vec(), 0),
                (b"/r/c".to_vec(), 3)
            ]
        );
        k.settle();
        assert_eq!(k.remove(b"/r/b"), Some(0));
        assert_eq!(k.iter().count(), 3);
        let back: Vec<_> = k.iter().rev().map(|(k, _)| k.to_vec()).collect();
        assert_eq!(
            back,
            vec![b"/s/x".to_vec(), b"/r/c".to_vec(), b"/r/a".to_vec()]
        );
        // Re-created after being forgotten while sorted: listed once.
        k.get_or_insert_with(b"/r/b", || 7);
        assert_eq!(keys_of(k.iter()).len(), 4);
        k.settle();
        assert_eq!(
            keys_of(k.iter()),
            vec![
                b"/r/a".to_vec(),
                b"/r/b".to_vec(),
                b"/r/c".to_vec(),
                b"/s/x".to_vec()
            ]
        );
    }

    #[test]
    fn a_reused_slot_has_a_new_generation() {
        let mut k = KeyTable::default();
        let (s, g, _) = k.get_or_insert_with(b"/a", || 1);
        k.remove(b"/a");
        let (s2, g2, _) = k.get_or_insert_with(b"/b", || 2);
        assert_eq!(s, s2, "an unsorted slot is reused at once");
        assert_ne!(g, g2);
        assert!(k.at_mut(s, g).is_none());
        assert_eq!(
            k.at_mut(s2, g2).map(|(k, v)| (k.to_vec(), *v)),
            Some((b"/b".to_vec(), 2))
        );
    }

    #[derive(Debug, Clone)]
    enum Op {
        Put(u8, u8),
        Del(u8, u8),
        Settle,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0u8..8, 0u8..40).prop_map(|(a, b)| Op::Put(a, b)),
            3 => (0u8..8, 0u8..40).prop_map(|(a, b)| Op::Del(a, b)),
            1 => Just(Op::Settle),
        ]
    }

    fn key(a: u8, b: u8) -> Vec<u8> {
        format!("/registry/r{a}/n{b:03}").into_bytes()
    }

    proptest! {
        /// Against a BTreeMap: the same entries, the same order both ways, the same
        /// ranges, whatever mix of inserts, removes and settles came before.
        #[test]
        fn behaves_as_an_ordered_map(ops in proptest::collection::vec(op(), 1..400), lo in 0u8..8, hi in 0u8..9) {
            let mut k: KeyTable<u32> = KeyTable::default();
            let mut m = std::collections::BTreeMap::new();
            for (i, o) in ops.iter().enumerate() {
                match o {
                    Op::Put(a, b) => {
                        *k.get_or_insert_with(&key(*a, *b), || 0).2 = i as u32;
                        m.insert(key(*a, *b), i as u32);
                    }
                    Op::Del(a, b) => {
                        prop_assert_eq!(k.remove(&key(*a, *b)), m.remove(&key(*a, *b)));
                    }
                    Op::Settle => k.settle(),
                }
            }
            prop_assert_eq!(k.len(), m.len());
            let all: Vec<_> = k.iter().map(|(k, v)| (k.to_vec(), *v)).collect();
            let want: Vec<_> = m.iter().map(|(k, v)| (k.clone(), *v)).collect();
            prop_assert_eq!(&all, &want);
            let back: Vec<_> = k.iter().rev().map(|(k, v)| (k.to_vec(), *v)).collect();
            let want_back: Vec<_> = m.iter().rev().map(|(k, v)| (k.clone(), *v)).collect();
            prop_assert_eq!(back, want_back);
            let (l, h) = (format!("/registry/r{lo}/").into_bytes(), format!("/registry/r{hi}/").into_bytes());
            let got: Vec<_> = k.range(Bound::Included(&l), Bound::Excluded(&h)).map(|(k, _)| k.to_vec()).collect();
            let want: Vec<_> = if l < h { m.range(l.clone()..h.clone()).map(|(k, _)| k.clone()).collect() } else { Vec::new() };
            prop_assert_eq!(got, want);
            // Mixed directions from both ends meet without repeating an entry.
            let mut r = k.iter();
            let mut seen = Vec::new();
            loop {
                match (r.next(), r.next_back()) {
                    (Some(a), Some(b)) => { seen.push(a.0.to_vec()); seen.push(b.0.to_vec()); }
                    (Some(a), None) | (None, Some(a)) => { seen.push(a.0.to_vec()); break; }
                    (None, None) => break,
                }
            }
            seen.sort();
            prop_assert_eq!(seen, m.keys().cloned().collect::<Vec<_>>());
            k.settle();
            let all: Vec<_> = k.iter().map(|(k, v)| (k.to_vec(), *v)).collect();
            prop_assert_eq!(all, m.iter().map(|(k, v)| (k.clone(), *v)).collect::<Vec<_>>());
        }
    }

    #[test]
    fn from_sorted_takes_the_order_as_it_is() {
        let e: Vec<(Box<[u8]>, u32)> = vec![(b"/a".to_vec().into(), 1), (b"/b".to_vec().into(), 2)];
        let k = KeyTable::from_sorted(e).unwrap();
        assert!(k.is_settled());
        assert_eq!(k.get(b"/b"), Some(&2));
        assert_eq!(keys_of(k.iter()), vec![b"/a".to_vec(), b"/b".to_vec()]);
        let bad: Vec<(Box<[u8]>, u32)> =
            vec![(b"/b".to_vec().into(), 1), (b"/a".to_vec().into(), 2)];
        assert!(KeyTable::from_sorted(bad).is_none());
    }
}
