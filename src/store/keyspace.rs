//! The replica's keys: a hash map for the point lookups every watch event makes, beside an
//! ordered set of the same keys for prefix ranges (the key browser, `verify`, listings).
//!
//! Why both: Kubernetes keys share long prefixes (`/registry/events/default/web-…`), so a
//! B-tree lookup compares 20-odd keys of 40–60 bytes, each behind its own pointer; at a
//! million events in a replay that was most of the apply's time
//! (`cargo bench --bench record`). Updates, the bulk of an etcd write stream, now touch the
//! hash map only; the ordered set changes when a key is created or finally forgotten.
//! The key bytes are shared between the two (`Bytes` clones), so the set costs its nodes.
//!
//! Serialised as one map in key order (as a `BTreeMap` would be), so checkpoints are
//! deterministic and read the same as before.

use std::collections::{BTreeSet, HashMap};
use std::ops::RangeBounds;

use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::shared_bytes::Shared;

/// Keys to values, iterated in key order. See the module docs.
pub(crate) struct Keyspace<V> {
    map: HashMap<Bytes, V, foldhash::fast::RandomState>,
    order: BTreeSet<Bytes>,
}

impl<V> Default for Keyspace<V> {
    fn default() -> Self {
        Keyspace {
            map: HashMap::default(),
            order: BTreeSet::new(),
        }
    }
}

impl<V> Keyspace<V> {
    pub(crate) fn get(&self, key: &[u8]) -> Option<&V> {
        self.map.get(key)
    }

    pub(crate) fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        self.map.get_mut(key)
    }

    pub(crate) fn get_key_value(&self, key: &[u8]) -> Option<(&Bytes, &V)> {
        self.map.get_key_value(key)
    }

    /// The value of `key`, inserted by `make` when absent.
    pub(crate) fn get_or_insert_with(&mut self, key: &Bytes, make: impl FnOnce() -> V) -> &mut V {
        self.map.entry(key.clone()).or_insert_with(|| {
            self.order.insert(key.clone());
            make()
        })
    }

    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<V> {
        let v = self.map.remove(key)?;
        self.order.remove(key);
        Some(v)
    }

    /// Entries whose keys fall in `range`, in key order (forwards or, with `.rev()`,
    /// backwards).
    pub(crate) fn range<'a, R: RangeBounds<[u8]>>(
        &'a self,
        range: R,
    ) -> impl DoubleEndedIterator<Item = (&'a Bytes, &'a V)> + 'a {
        self.order
            .range::<[u8], R>(range)
            .filter_map(|k| self.map.get_key_value(k.as_ref()))
    }

    /// Every entry in key order.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = (&Bytes, &V)> + '_ {
        self.range::<std::ops::RangeFull>(..)
    }

    /// Calls `f` on every value whose key falls in `range`.
    pub(crate) fn for_each_mut_in<R: RangeBounds<[u8]>>(
        &mut self,
        range: R,
        mut f: impl FnMut(&mut V),
    ) {
        for k in self.order.range::<[u8], R>(range) {
            if let Some(v) = self.map.get_mut(k.as_ref()) {
                f(v);
            }
        }
    }
}

impl<V: Serialize> Serialize for Keyspace<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.map.len()))?;
        for (k, v) in self.iter() {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Keyspace<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyspaceVisitor<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for KeyspaceVisitor<V> {
            type Value = Keyspace<V>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map keyed by byte strings")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Keyspace<V>, A::Error> {
                let n = m.size_hint().unwrap_or(0).min(1 << 24);
                let mut map = HashMap::with_capacity_and_hasher(n, Default::default());
                let mut keys = Vec::with_capacity(n);
                while let Some((k, v)) = m.next_entry::<Shared, V>()? {
                    keys.push(k.0.clone());
                    map.insert(k.0, v);
                }
                // Written in key order: the sort finds it sorted, then a bulk build.
                let order = keys.into_iter().collect();
                Ok(Keyspace { map, order })
            }
        }
        d.deserialize_map(KeyspaceVisitor(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::from(s.to_string())
    }

    #[test]
    fn ranges_are_in_key_order_and_follow_inserts_and_removes() {
        let mut k = Keyspace::default();
        for (i, key) in ["/r/b", "/r/a", "/s/x", "/r/c"].iter().enumerate() {
            *k.get_or_insert_with(&b(key), || 0) += i;
        }
        *k.get_or_insert_with(&b("/r/a"), || 100) += 10;
        assert_eq!(k.get(b"/r/a"), Some(&11));
        let r: Vec<_> = k
            .range::<(std::ops::Bound<&[u8]>, std::ops::Bound<&[u8]>)>((
                std::ops::Bound::Included(b"/r/".as_slice()),
                std::ops::Bound::Excluded(b"/r0".as_slice()),
            ))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        assert_eq!(r, vec![(b("/r/a"), 11), (b("/r/b"), 0), (b("/r/c"), 3)]);
        assert_eq!(k.remove(b"/r/b"), Some(0));
        assert_eq!(k.iter().count(), 3);
        let back: Vec<_> = k.iter().rev().map(|(k, _)| k.clone()).collect();
        assert_eq!(back, vec![b("/s/x"), b("/r/c"), b("/r/a")]);
    }

    #[test]
    fn serialises_as_an_ordered_map() {
        let mut k = Keyspace::default();
        let mut m = std::collections::BTreeMap::new();
        for (i, key) in ["/z", "/a", "/m"].iter().enumerate() {
            *k.get_or_insert_with(&b(key), || 0) = i as u32;
            m.insert(b(key), i as u32);
        }
        let bytes = postcard::to_stdvec(&k).unwrap();
        assert_eq!(bytes, postcard::to_stdvec(&m).unwrap());
        let buf = Bytes::from(bytes);
        let back: Keyspace<u32> =
            super::super::shared_bytes::restore_from(&buf, |b| postcard::from_bytes(b).unwrap());
        assert!(back
            .iter()
            .all(|(k, _)| k.as_ptr() >= buf.as_ptr() && k.as_ptr() < buf[buf.len()..].as_ptr()));
        let entries: Vec<_> = back.iter().map(|(k, v)| (k.clone(), *v)).collect();
        assert_eq!(entries, m.into_iter().collect::<Vec<_>>());
    }
}
