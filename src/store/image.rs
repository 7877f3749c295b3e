//! How a checkpoint holds the replica's keys: one byte string (the *image*) inside the
//! session's `postcard`, so that a restore reads it with a cursor instead of a serde call
//! per field, builds the key table in key order without a comparison, and keeps keys'
//! values as slices of the checkpoint buffer ([`super::shared_bytes`]).
//!
//! Image layout (checkpoint format 2). Integers are LEB128 varints, signed ones zigzag
//! encoded first; `bytes` is a varint length and the bytes.
//!
//! ```text
//! dictionaries: count, then per dictionary: resource id, bytes
//! keys:         count, then per key in ascending key order:
//!                 key bytes, resource id, list generation, version count (>= 1), then per
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

use serde::de::{self, Deserializer, Visitor};
use serde::Serializer;

use super::keyspace::Keyspace;
use super::packing::{Codebook, Form, Val};
use super::replica::{KeyEntry, KeyStore, PackedStats, Queued, Version};
use super::shared_bytes;

/// `#[serde(with)]` for the replica's [`KeyStore`].
pub(super) fn serialize<S: Serializer>(store: &KeyStore, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bytes(&encode(store))
}

/// See [`serialize`]; reads format 1 when the checkpoint being restored is of it.
pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<KeyStore, D::Error> {
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

/// The image of `store`, keys in key order (sorting a copy of what is not settled).
pub(super) fn encode(store: &KeyStore) -> Vec<u8> {
    let mut w = Vec::new();
    let dicts: Vec<_> = store.codebook.dicts().collect();
    put_uv(&mut w, dicts.len() as u64);
    for (r, d) in dicts {
        put_uv(&mut w, u64::from(r));
        put_bytes(&mut w, d.bytes());
    }
    let keys = &store.keys;
    put_uv(&mut w, keys.len() as u64);
    let mut ordinal = vec![0u32; keys.slot_bound()];
    for (i, (slot, key, e)) in keys.iter().with_slots().enumerate() {
        ordinal[slot as usize] = i as u32 + 1;
        put_bytes(&mut w, key);
        put_uv(&mut w, u64::from(e.resource));
        put_uv(&mut w, u64::from(e.seen_gen));
        put_uv(&mut w, e.versions().count() as u64);
        for v in e.versions() {
            put_iv(&mut w, v.create_revision);
            put_iv(&mut w, v.mod_revision);
            put_iv(&mut w, v.version);
            put_iv(&mut w, v.lease);
            let form = v.value.form();
            w.push(form as u8);
            match form {
                Form::Tombstone => {}
                Form::Raw => put_bytes(&mut w, v.value.data()),
                Form::Dict | Form::Plain => {
                    put_uv(&mut w, v.value.len() as u64);
                    put_bytes(&mut w, v.value.data());
                }
            }
        }
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

    fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| format!("image ends at byte {}", self.pos))?;
        self.pos += 1;
        Ok(b)
    }
}

/// The store an image describes. Errors say what is wrong and where.
pub(super) fn decode(buf: &[u8]) -> Result<KeyStore, String> {
    let mut r = Reader { buf, pos: 0 };
    let n_dicts = r.uv()?;
    let mut dicts = Vec::new();
    for _ in 0..n_dicts {
        let resource = r.u32()?;
        dicts.push((resource, shared_bytes::share(r.bytes()?)));
    }
    let n = r.uv()?;
    // Every key takes at least 8 bytes: a count from the file cannot make us reserve more.
    let mut entries = Vec::with_capacity((n as usize).min(buf.len() / 8));
    let mut packed = PackedStats::default();
    for i in 0..n {
        let key: Box<[u8]> = r.bytes()?.into();
        let resource = r.u32()?;
        let seen_gen = r.u32()?;
        let count = r.uv()?;
        if count == 0 {
            return Err(format!("key {i} holds no version"));
        }
        let mut versions = std::collections::VecDeque::new();
        for _ in 0..count {
            let create_revision = r.iv()?;
            let mod_revision = r.iv()?;
            let version = r.iv()?;
            let lease = r.iv()?;
            let at = r.pos;
            let form = Form::from_u8(r.byte()?)
                .ok_or_else(|| format!("unknown value form at byte {at}"))?;
            let value = match form {
                Form::Tombstone => Val::tombstone(),
                Form::Raw => Val::raw(shared_bytes::share(r.bytes()?)),
                Form::Dict | Form::Plain => {
                    let raw_len = r.u32()?;
                    Val::from_parts(form, raw_len, shared_bytes::share(r.bytes()?))
                        .ok_or_else(|| format!("empty packed value at byte {at}"))?
                }
            };
            if versions
                .back()
                .is_some_and(|p: &Version| p.mod_revision >= mod_revision)
            {
                return Err(format!("key {i}: versions out of revision order"));
            }
            packed.add(&value);
            versions.push_back(Version {
                create_revision,
                mod_revision,
                version,
                lease,
                value,
            });
        }
        let newest = versions.pop_back().expect("count >= 1");
        entries.push((
            key,
            KeyEntry {
                newest,
                older: (!versions.is_empty()).then(|| Box::new(versions)),
                resource,
                seen_gen,
            },
        ));
    }
    let held = entries.len();
    let keys = Keyspace::from_sorted(entries).ok_or("keys out of order")?;
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
    Ok(KeyStore::new(
        keys,
        history_queue,
        Codebook::with_dicts(dicts),
        packed,
    ))
}

struct ImageVisitor;

impl<'de> Visitor<'de> for ImageVisitor {
    type Value = KeyStore;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("the replica's key image (bytes)")
    }
    fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<KeyStore, E> {
        decode(v).map_err(E::custom)
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<KeyStore, E> {
        decode(v).map_err(E::custom)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<KeyStore, A::Error> {
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

    use super::super::shared_bytes::Shared;
    use super::*;

    #[derive(Deserialize)]
    struct LegacyVersion {
        create_revision: i64,
        mod_revision: i64,
        version: i64,
        lease: i64,
        #[serde(deserialize_with = "super::super::shared_bytes::opt")]
        value: Option<Bytes>,
    }

    #[derive(Deserialize)]
    struct LegacyEntry {
        resource: u32,
        versions: VecDeque<LegacyVersion>,
        seen_gen: u32,
    }

    /// A format-1 keyspace. The history queue, held by key elsewhere in that format, is
    /// resolved after the whole replica is read (`Replica::restored`).
    pub(in super::super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<KeyStore, D::Error> {
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
                },
            ));
        }
        let keys = Keyspace::from_sorted(entries)
            .ok_or_else(|| serde::de::Error::custom("keys out of order"))?;
        Ok(KeyStore::new(
            keys,
            Default::default(),
            Codebook::default(),
            PackedStats::default(),
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
        let mut w = Vec::new();
        put_uv(&mut w, 0); // no dictionaries
        put_uv(&mut w, 1); // one key
        put_bytes(&mut w, b"/registry/pods/a/p");
        put_uv(&mut w, 0);
        put_uv(&mut w, 1);
        put_uv(&mut w, 1);
        for x in [2i64, 2, 1, 0] {
            put_iv(&mut w, x);
        }
        w.push(1);
        put_bytes(&mut w, b"value");
        put_uv(&mut w, 1);
        put_iv(&mut w, 2);
        put_uv(&mut w, 1);
        let whole = decode(&w).expect("decodes");
        assert_eq!(whole.keys.len(), 1);
        for cut in 0..w.len() {
            assert!(decode(&w[..cut]).is_err(), "cut at {cut}");
        }
        // A history entry naming a key that is not there.
        let n = w.len();
        w[n - 1] = 5;
        assert!(decode(&w).err().unwrap().contains("names key 5"));
    }
}
