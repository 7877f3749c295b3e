//! How a checkpoint holds the replica's keys: one byte string (the *image*) inside the
//! session's `postcard`, so that a restore reads it with a cursor instead of a serde call
//! per field, builds the key table in key order without a comparison, and keeps keys'
//! values as slices of the checkpoint buffer ([`crate::store::shared_bytes`]).
//!
//! Image layout (checkpoint format 2). Integers are LEB128 varints, signed ones zigzag
//! encoded first; `bytes` is a varint length and the bytes.
//!
//! ```text
//! dictionaries: count, then per dictionary: resource id, bytes
//! keys:         count, then the number of chunks, then per chunk (about 1 MiB each, so
//!               that a restore decodes them on all cores): its key count, then its keys
//!               as bytes. Per key, in ascending key order over all chunks:
//!                 key bytes, resource id, list generation, (format 7 and later: the
//!                 managedFields mark, 8 bytes little-endian), version count (>= 1), then per
//!                 version, oldest first: create_revision, mod_revision, version, lease
//!                 (signed), form (one byte: 0 tombstone, 1 raw, 2 packed with the
//!                 resource's dictionary, 3 packed without one), and for raw the value
//!                 bytes, for packed the raw length then the frame bytes
//! history:      count, then per entry: revision (signed), 1 + the key's index in the
//!               list above (0: the key is no longer held)
//! ```
//!
//! Format 1 (regscope before values were packed) held the keys as a `postcard` map of
//! key to `{resource, versions, seen_gen}` and the history queue as (revision, key)
//! pairs in a field of its own; it is still read ([`legacy`]).

use bytes::Bytes;
use serde::de::{self, Deserializer, Visitor};
use serde::Serializer;

use super::key_table::KeyTable;
use super::packing::{Codebook, Form, Val};
use super::versions::{KeyEntry, PackedStats, Queued, Version, VersionStore, NO_MARK};
use crate::store::shared_bytes;

/// `#[serde(with)]` for the replica's [`VersionStore`].
pub(super) fn serialize<S: Serializer>(store: &VersionStore, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bytes(&encode(store))
}

/// See [`serialize`]; reads format 1 when the checkpoint being restored is of it.
pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<VersionStore, D::Error> {
    if shared_bytes::format() < 2 {
        return legacy::deserialize(d);
    }
    d.deserialize_bytes(ImageVisitor)
}

fn put_uv(w: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        w.push((v as u8) | 0x80);
        v >>= 7;
    }
    w.push(v as u8);
}

fn put_iv(w: &mut Vec<u8>, v: i64) {
    put_uv(w, ((v << 1) ^ (v >> 63)) as u64);
}

fn put_bytes(w: &mut Vec<u8>, b: &[u8]) {
    put_uv(w, b.len() as u64);
    w.extend_from_slice(b);
}

/// Bytes of keys per chunk: chunks decode on all cores at once.
const CHUNK_BYTES: usize = 1 << 20;

fn encode_key(w: &mut Vec<u8>, key: &[u8], e: &KeyEntry) {
    put_bytes(w, key);
    put_uv(w, u64::from(e.resource));
    put_uv(w, u64::from(e.seen_gen));
    w.extend_from_slice(&e.mark.to_le_bytes());
    put_uv(w, e.versions().count() as u64);
    for v in e.versions() {
        put_iv(w, v.create_revision);
        put_iv(w, v.mod_revision);
        put_iv(w, v.version);
        put_iv(w, v.lease);
        let form = v.value.form();
        w.push(form as u8);
        match form {
            Form::Tombstone => {}
            Form::Raw => put_bytes(w, v.value.data()),
            Form::Dict | Form::Plain => {
                put_uv(w, v.value.len() as u64);
                put_bytes(w, v.value.data());
            }
        }
    }
}

/// The image of `store`, keys in key order (sorting a copy of what is not settled).
pub(super) fn encode(store: &VersionStore) -> Vec<u8> {
    // About the size it will have: the values held, and a few dozen bytes a key.
    let p = store.packed;
    let mut w = Vec::with_capacity(p.held_bytes as usize + store.keys.len() * 96);
    let dicts: Vec<_> = store.codebook.dicts().collect();
    put_uv(&mut w, dicts.len() as u64);
    for (r, d) in dicts {
        put_uv(&mut w, u64::from(r));
        put_bytes(&mut w, d.bytes());
    }
    let keys = &store.keys;
    put_uv(&mut w, keys.len() as u64);
    let mut ordinal = vec![0u32; keys.slot_bound()];
    let (mut chunk, mut in_chunk) = (Vec::new(), 0u64);
    let mut chunks: Vec<(Vec<u8>, u64)> = Vec::new();
    for (i, (slot, key, e)) in keys.iter().with_slots().enumerate() {
        ordinal[slot as usize] = i as u32 + 1;
        encode_key(&mut chunk, key, e);
        in_chunk += 1;
        if chunk.len() >= CHUNK_BYTES {
            chunks.push((std::mem::take(&mut chunk), in_chunk));
            in_chunk = 0;
        }
    }
    if in_chunk > 0 {
        chunks.push((chunk, in_chunk));
    }
    put_uv(&mut w, chunks.len() as u64);
    for (c, n) in chunks {
        put_uv(&mut w, n);
        put_bytes(&mut w, &c);
    }
    put_uv(&mut w, store.history_queue.len() as u64);
    for q in &store.history_queue {
        put_iv(&mut w, q.revision);
        let o = match keys.at(q.slot) {
            Some((_, gen, _)) if gen == q.gen => ordinal[q.slot as usize],
            _ => 0,
        };
        put_uv(&mut w, u64::from(o));
    }
    w
}

/// A cursor over an image.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn uv(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self
                .buf
                .get(self.pos)
                .ok_or_else(|| format!("image ends inside a number at byte {}", self.pos))?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(format!("number too long at byte {}", self.pos))
    }

    fn u32(&mut self) -> Result<u32, String> {
        let at = self.pos;
        u32::try_from(self.uv()?).map_err(|_| format!("number out of range at byte {at}"))
    }

    fn len(&mut self) -> Result<usize, String> {
        let at = self.pos;
        let n = self.uv()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.buf.len() - self.pos)
            .ok_or_else(|| format!("length {n} at byte {at} runs past the image"))
    }

    fn iv(&mut self) -> Result<i64, String> {
        let u = self.uv()?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }

    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.len()?;
        let b = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(b)
    }

    fn fixed8(&mut self) -> Result<[u8; 8], String> {
        let b = self
            .buf
            .get(self.pos..self.pos + 8)
            .ok_or_else(|| format!("image ends inside a mark at byte {}", self.pos))?;
        self.pos += 8;
        Ok(b.try_into().expect("8 bytes"))
    }

    fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| format!("image ends at byte {}", self.pos))?;
        self.pos += 1;
        Ok(b)
    }
}

/// Keys decoded from one chunk of an image.
struct Chunk {
    entries: Vec<(Box<[u8]>, KeyEntry)>,
    /// Indexes (within the chunk) of keys holding raw values worth packing.
    raw: Vec<u32>,
    packed: PackedStats,
}

/// `s` as `Bytes`: a slice of `src` (the checkpoint buffer being restored, which holds the
/// whole image) without a copy, else a copy.
fn share(src: Option<&Bytes>, s: &[u8]) -> Bytes {
    match src {
        Some(b) => b.slice_ref(s),
        None => Bytes::copy_from_slice(s),
    }
}

/// The `count` keys of one chunk (`buf`, at byte `at` of the image).
fn decode_chunk(
    buf: &[u8],
    count: u64,
    at: usize,
    src: Option<&Bytes>,
    marks: bool,
) -> Result<Chunk, String> {
    let mut r = Reader { buf, pos: 0 };
    let place = |pos: usize| at + pos;
    // Every key takes at least 8 bytes: a count from the file cannot make us reserve more.
    let mut entries = Vec::with_capacity((count as usize).min(buf.len() / 8));
    let mut packed = PackedStats::default();
    let mut raw = Vec::new();
    for i in 0..count {
        let key: Box<[u8]> = r.bytes()?.into();
        let resource = r.u32()?;
        let seen_gen = r.u32()?;
        let mark = if marks {
            let b = r.fixed8()?;
            u64::from_le_bytes(b)
        } else {
            NO_MARK
        };
        let n = r.uv()?;
        if n == 0 {
            return Err(format!("key at byte {} holds no version", place(r.pos)));
        }
        // Up to a history of what the chunk can hold: the count comes from the file.
        let mut versions =
            std::collections::VecDeque::with_capacity((n as usize).min(buf.len() / 8));
        for _ in 0..n {
            let create_revision = r.iv()?;
            let mod_revision = r.iv()?;
            let version = r.iv()?;
            let lease = r.iv()?;
            let form_at = r.pos;
            let form = Form::from_u8(r.byte()?)
                .ok_or_else(|| format!("unknown value form at byte {}", place(form_at)))?;
            let value = match form {
                Form::Tombstone => Val::tombstone(),
                Form::Raw => Val::raw(share(src, r.bytes()?)),
                Form::Dict | Form::Plain => {
                    let raw_len = r.u32()?;
                    Val::from_parts(form, raw_len, share(src, r.bytes()?))
                        .ok_or_else(|| format!("empty packed value at byte {}", place(form_at)))?
                }
            };
            if versions
                .back()
                .is_some_and(|p: &Version| p.mod_revision >= mod_revision)
            {
                return Err(format!(
                    "versions out of revision order at byte {}",
                    place(form_at)
                ));
            }
            packed.add(&value);
            if value.raw_bytes().is_some_and(|b| Codebook::packable(b))
                && raw.last() != Some(&(i as u32))
            {
                raw.push(i as u32);
            }
            versions.push_back(Version {
                create_revision,
                mod_revision,
                version,
                lease,
                value,
            });
        }
        let newest = versions.pop_back().expect("n >= 1");
        entries.push((
            key,
            KeyEntry {
                newest,
                older: (!versions.is_empty()).then(|| Box::new(versions)),
                resource,
                seen_gen,
                mark,
            },
        ));
    }
    if r.pos != buf.len() {
        return Err(format!(
            "{} bytes after the keys of the chunk at byte {at}",
            buf.len() - r.pos
        ));
    }
    Ok(Chunk {
        entries,
        raw,
        packed,
    })
}

/// The store an image describes. Errors say what is wrong and where.
pub(super) fn decode(buf: &[u8]) -> Result<VersionStore, String> {
    // Read here: the chunks decode on other threads, which do not know the format.
    let marks = shared_bytes::format() >= 7;
    let source = shared_bytes::source_of(buf);
    let src = source.as_ref();
    let mut r = Reader { buf, pos: 0 };
    let n_dicts = r.uv()?;
    let mut dicts = Vec::new();
    for _ in 0..n_dicts {
        let resource = r.u32()?;
        dicts.push((resource, share(src, r.bytes()?)));
    }
    let n = r.uv()?;
    let n_chunks = r.uv()?;
    let mut chunks = Vec::new();
    for _ in 0..n_chunks {
        let count = r.uv()?;
        let at = r.pos;
        chunks.push((count, at, r.bytes()?));
    }
    if chunks.iter().map(|c| c.0).sum::<u64>() != n {
        return Err(format!("the chunks hold other than {n} keys"));
    }
    // The chunks on all cores: thread t decodes chunks t, t + threads, …
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 8)
        .min(chunks.len().max(1));
    let mut decoded: Vec<Option<Result<Chunk, String>>> = (0..chunks.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let chunks = &chunks;
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    (t..chunks.len())
                        .step_by(threads)
                        .map(|i| {
                            let (count, at, bytes) = chunks[i];
                            (i, decode_chunk(bytes, count, at, src, marks))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            match h.join() {
                Ok(done) => {
                    for (i, c) in done {
                        decoded[i] = Some(c);
                    }
                }
                Err(_) => decoded.push(Some(Err("a chunk decoder panicked".into()))),
            }
        }
    });
    let decoded = decoded
        .into_iter()
        .map(|c| c.unwrap_or_else(|| Err("a chunk was not decoded".into())));
    let mut entries = Vec::with_capacity((n as usize).min(buf.len() / 8));
    let mut packed = PackedStats::default();
    // Keys (by their index, which becomes their slot) holding raw values worth packing.
    let mut raw = Vec::new();
    for c in decoded {
        let c = c?;
        let base = entries.len() as u32;
        raw.extend(c.raw.into_iter().map(|i| base + i));
        packed.values += c.packed.values;
        packed.raw_bytes += c.packed.raw_bytes;
        packed.held_bytes += c.packed.held_bytes;
        entries.extend(c.entries);
    }
    let held = entries.len();
    let keys = KeyTable::from_sorted(entries).ok_or("keys out of order")?;
    let nq = r.uv()?;
    let mut history_queue = std::collections::VecDeque::with_capacity((nq as usize).min(buf.len()));
    for _ in 0..nq {
        let revision = r.iv()?;
        let o = r.uv()?;
        history_queue.push_back(match o {
            0 => Queued::stale(revision),
            o if o as usize <= held => Queued {
                revision,
                // `from_sorted` gives the i-th key slot i, generation 0.
                slot: (o - 1) as u32,
                gen: 0,
            },
            o => return Err(format!("history entry names key {o} of {held}")),
        });
    }
    if r.pos != buf.len() {
        return Err(format!("{} bytes after the image", buf.len() - r.pos));
    }
    Ok(VersionStore::new(
        keys,
        history_queue,
        Codebook::with_dicts(dicts),
        packed,
        raw,
    ))
}

struct ImageVisitor;

impl<'de> Visitor<'de> for ImageVisitor {
    type Value = VersionStore;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("the replica's key image (bytes)")
    }
    fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<VersionStore, E> {
        decode(v).map_err(E::custom)
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<VersionStore, E> {
        decode(v).map_err(E::custom)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<VersionStore, A::Error> {
        // Formats without byte strings (JSON) write them as sequences of numbers.
        let mut v = Vec::new();
        while let Some(b) = seq.next_element::<u8>()? {
            v.push(b);
        }
        decode(&v).map_err(de::Error::custom)
    }
}

/// Checkpoint format 1: the keys as a map of key to entry, every value raw.
pub(super) mod legacy {
    use std::collections::VecDeque;

    use bytes::Bytes;
    use serde::{Deserialize, Deserializer};

    use super::*;
    use crate::store::shared_bytes::Shared;

    #[derive(Deserialize)]
    struct LegacyVersion {
        create_revision: i64,
        mod_revision: i64,
        version: i64,
        lease: i64,
        #[serde(deserialize_with = "crate::store::shared_bytes::opt")]
        value: Option<Bytes>,
    }

    #[derive(Deserialize)]
    struct LegacyEntry {
        resource: u32,
        versions: VecDeque<LegacyVersion>,
        seen_gen: u32,
    }

    /// A format-1 version store. The history queue, held by key elsewhere in that format, is
    /// resolved after the whole replica is read (`Replica::restored`).
    pub(in super::super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<VersionStore, D::Error> {
        // A postcard map is its length and its pairs: the same bytes as a sequence of
        // tuples.
        let pairs = Vec::<(Shared, LegacyEntry)>::deserialize(d)?;
        let mut entries = Vec::with_capacity(pairs.len());
        for (k, e) in pairs {
            let mut versions: VecDeque<Version> = e
                .versions
                .into_iter()
                .map(|v| Version {
                    create_revision: v.create_revision,
                    mod_revision: v.mod_revision,
                    version: v.version,
                    lease: v.lease,
                    value: v.value.map_or_else(Val::tombstone, Val::raw),
                })
                .collect();
            let newest = versions
                .pop_back()
                .ok_or_else(|| serde::de::Error::custom("a key without versions"))?;
            entries.push((
                Box::<[u8]>::from(k.0.as_ref()),
                KeyEntry {
                    newest,
                    older: (!versions.is_empty()).then(|| Box::new(versions)),
                    resource: e.resource,
                    seen_gen: e.seen_gen,
                    mark: NO_MARK,
                },
            ));
        }
        let n = entries.len() as u32;
        let keys = KeyTable::from_sorted(entries)
            .ok_or_else(|| serde::de::Error::custom("keys out of order"))?;
        // Every value of this format is raw: the sweeps look at every key.
        Ok(VersionStore::new(
            keys,
            Default::default(),
            Codebook::default(),
            PackedStats::default(),
            0..n,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_their_edges() {
        let mut w = Vec::new();
        let us = [0u64, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX];
        let is = [0i64, -1, 1, i64::MIN, i64::MAX, -300];
        for u in us {
            put_uv(&mut w, u);
        }
        for i in is {
            put_iv(&mut w, i);
        }
        let mut r = Reader { buf: &w, pos: 0 };
        for u in us {
            assert_eq!(r.uv().unwrap(), u);
        }
        for i in is {
            assert_eq!(r.iv().unwrap(), i);
        }
        assert!(r.uv().is_err());
    }

    #[test]
    fn every_cut_of_an_image_is_refused_with_a_reason() {
        let mut key = Vec::new();
        put_bytes(&mut key, b"/registry/pods/a/p");
        put_uv(&mut key, 0);
        put_uv(&mut key, 1);
        key.extend_from_slice(&42u64.to_le_bytes()); // the managedFields mark
        put_uv(&mut key, 1);
        for x in [2i64, 2, 1, 0] {
            put_iv(&mut key, x);
        }
        key.push(1);
        put_bytes(&mut key, b"value");
        let mut w = Vec::new();
        put_uv(&mut w, 0); // no dictionaries
        put_uv(&mut w, 1); // one key
        put_uv(&mut w, 1); // in one chunk
        put_uv(&mut w, 1);
        put_bytes(&mut w, &key);
        put_uv(&mut w, 1);
        put_iv(&mut w, 2);
        put_uv(&mut w, 1);
        let whole = decode(&w).expect("decodes");
        assert_eq!(whole.keys.len(), 1);
        assert_eq!(
            whole.keys.get(b"/registry/pods/a/p").map(|e| e.mark),
            Some(42)
        );
        for cut in 0..w.len() {
            assert!(decode(&w[..cut]).is_err(), "cut at {cut}");
        }
        // A history entry naming a key that is not there.
        let n = w.len();
        w[n - 1] = 5;
        assert!(decode(&w).err().unwrap().contains("names key 5"));
    }
}
