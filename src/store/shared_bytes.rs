//! Restoring a checkpoint without copying its values: while [`restore_from`] runs, every
//! key and value the store deserialises with these helpers becomes a slice of the one
//! buffer the checkpoint was decompressed into (`Bytes::slice_ref`, a reference count),
//! instead of an allocation and a copy each.
//!
//! A 1-hour recording's checkpoint holds about 650,000 values and 300 MB; restoring it
//! copy by copy spent most of its time in `malloc`, `memcpy` and later `free`
//! (`cargo bench --bench record`). The price: the buffer stays allocated until the last
//! value sliced from it is dropped, so a replay that has moved far past its checkpoint can
//! hold up to twice the bytes of its values.
//!
//! Serialising is unchanged (`Bytes` as serde bytes), so checkpoints written before and
//! after read the same. Outside [`restore_from`] (and for formats that do not lend their
//! input, such as JSON) the helpers copy, as `Bytes`' own `Deserialize` does.

use std::cell::{Cell, RefCell};
use std::fmt;

use bytes::Bytes;
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

/// The checkpoint format this regscope writes: 9 adds the scrapes of kube-controller-manager
/// and kube-scheduler to the metric series ([`super::MetricStore`]); 8 holds the session's notes as kinds with
/// their fields ([`super::Note`]) instead of rendered lines; 7 adds the event rows synthesized after a
/// gap and each gap's counts of what changed in it ([`super::replica::GapChanges`]); 6 adds the session's other etcd clusters
/// ([`super::OtherClusters`]) and kube-apiserver's storage flags; 5 adds the replica's write counters per
/// writer ([`super::replica::writers`]); 4 adds the replica's etcd members as last
/// polled (and recordings may hold [`crate::model::Observation::Members`]); 3 adds the replica's watch health (etcd's
/// announced head and the watch anomalies counted); 2 holds the replica's keys as one image
/// with packed values ([`super::replica::image`]); 1 held them as a map of raw values. All are read.
pub const CHECKPOINT_FORMAT: u32 = 9;

thread_local! {
    /// The buffer being restored from on this thread.
    static SOURCE: RefCell<Option<Bytes>> = const { RefCell::new(None) };
    /// The checkpoint format being restored on this thread.
    static FORMAT: Cell<u32> = const { Cell::new(CHECKPOINT_FORMAT) };
}

/// Runs `f` on `buf`'s bytes with `buf` as the source that borrowed keys and values are
/// sliced from, reading checkpoint format `format`. Nested or panicking calls leave no
/// source behind.
pub(crate) fn restore_from<T>(buf: &Bytes, format: u32, f: impl FnOnce(&[u8]) -> T) -> T {
    struct Reset(Option<Bytes>, u32);
    impl Drop for Reset {
        fn drop(&mut self) {
            let prev = self.0.take();
            SOURCE.with(|s| *s.borrow_mut() = prev);
            FORMAT.with(|f| f.set(self.1));
        }
    }
    let prev = SOURCE.with(|s| s.borrow_mut().replace(buf.clone()));
    let prev_format = FORMAT.with(|f| f.replace(format));
    let _reset = Reset(prev, prev_format);
    f(buf)
}

/// The checkpoint format being read (the current one outside [`restore_from`]).
pub(crate) fn format() -> u32 {
    FORMAT.with(|f| f.get())
}

/// `deserialize_with` for a field added in checkpoint format `ADDED_IN`: read from that
/// format on, the default (nothing read) before. Only for formats that read fields in order
/// (`postcard`), as checkpoints are. Written `since_format::<7, _, _>` in a serde attribute.
pub(crate) fn since_format<'de, const ADDED_IN: u32, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    if format() >= ADDED_IN {
        T::deserialize(d)
    } else {
        Ok(T::default())
    }
}

/// The buffer being restored from, when `slice` lies inside it (then every part of `slice`
/// can be shared from it, on any thread).
pub(crate) fn source_of(slice: &[u8]) -> Option<Bytes> {
    SOURCE.with(|s| s.borrow().as_ref().filter(|b| contains(b, slice)).cloned())
}

/// `slice` as a `Bytes`: shared with the source buffer when it lies inside it, else copied.
pub(crate) fn share(slice: &[u8]) -> Bytes {
    SOURCE.with(|s| match &*s.borrow() {
        Some(buf) if contains(buf, slice) => buf.slice_ref(slice),
        _ => Bytes::copy_from_slice(slice),
    })
}

fn contains(buf: &[u8], slice: &[u8]) -> bool {
    let (b, s) = (buf.as_ptr() as usize, slice.as_ptr() as usize);
    s >= b && s + slice.len() <= b + buf.len() && !slice.is_empty()
}

/// A `Bytes` deserialised through [`share`].
pub(crate) struct Shared(pub Bytes);

impl<'de> Deserialize<'de> for Shared {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Shared, D::Error> {
        d.deserialize_bytes(BytesVisitor).map(Shared)
    }
}

struct BytesVisitor;

impl<'de> Visitor<'de> for BytesVisitor {
    type Value = Bytes;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a byte string")
    }
    fn visit_borrowed_bytes<E>(self, v: &'de [u8]) -> Result<Bytes, E> {
        Ok(share(v))
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<Bytes, E> {
        Ok(Bytes::copy_from_slice(v))
    }
    fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Bytes, E> {
        Ok(Bytes::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Bytes, E> {
        Ok(Bytes::copy_from_slice(v.as_bytes()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Bytes, A::Error> {
        let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
        while let Some(b) = seq.next_element::<u8>()? {
            v.push(b);
        }
        Ok(Bytes::from(v))
    }
}

/// `#[serde(deserialize_with = "shared_bytes::bytes")]` for a `Bytes` field.
pub(crate) fn bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
    Shared::deserialize(d).map(|s| s.0)
}

/// For an `Option<Bytes>` field.
pub(crate) fn opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Bytes>, D::Error> {
    Ok(Option::<Shared>::deserialize(d)?.map(|s| s.0))
}

/// For a `VecDeque<(i64, Bytes)>` field (a revision and a key).
pub(crate) fn rev_keys<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<std::collections::VecDeque<(i64, Bytes)>, D::Error> {
    Ok(Vec::<(i64, Shared)>::deserialize(d)?
        .into_iter()
        .map(|(r, s)| (r, s.0))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct T {
        #[serde(deserialize_with = "bytes")]
        a: Bytes,
        #[serde(deserialize_with = "opt")]
        b: Option<Bytes>,
        #[serde(deserialize_with = "rev_keys")]
        q: std::collections::VecDeque<(i64, Bytes)>,
    }

    fn sample() -> T {
        T {
            a: Bytes::from_static(b"value one"),
            b: Some(Bytes::from_static(b"value two")),
            q: [(5, Bytes::from_static(b"/k/1"))].into_iter().collect(),
        }
    }

    fn inside(buf: &Bytes, b: &Bytes) -> bool {
        contains(buf, b)
    }

    #[test]
    fn restored_values_are_slices_of_the_buffer() {
        let buf = Bytes::from(postcard::to_stdvec(&sample()).unwrap());
        let t: T = restore_from(&buf, CHECKPOINT_FORMAT, |b| {
            postcard::from_bytes(b).unwrap()
        });
        assert_eq!(t, sample());
        assert!(inside(&buf, &t.a));
        assert!(inside(&buf, t.b.as_ref().unwrap()));
        assert!(inside(&buf, &t.q[0].1));
        // Outside a restore the same bytes are copied.
        let c: T = postcard::from_bytes(&buf).unwrap();
        assert_eq!(c, sample());
        assert!(!inside(&buf, &c.a));
    }

    #[test]
    fn formats_that_do_not_lend_their_input_still_work() {
        // JSON has no byte strings (a sequence of numbers) and string-only map keys.
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct J {
            #[serde(deserialize_with = "bytes")]
            a: Bytes,
            #[serde(deserialize_with = "opt")]
            b: Option<Bytes>,
        }
        let j = J {
            a: Bytes::from_static(b"\x00\xffvalue"),
            b: None,
        };
        let json = serde_json::to_string(&j).unwrap();
        assert_eq!(serde_json::from_str::<J>(&json).unwrap(), j);
    }

    #[test]
    fn a_field_added_in_format_3_reads_as_default_from_older_checkpoints() {
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct Old {
            x: u32,
            z: String,
        }
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct New {
            x: u32,
            #[serde(default, deserialize_with = "since_format::<3, _, _>")]
            y: (u64, i64),
            z: String,
        }
        let old = Bytes::from(
            postcard::to_stdvec(&Old {
                x: 7,
                z: "after".into(),
            })
            .unwrap(),
        );
        let n: New = restore_from(&old, 2, |b| postcard::from_bytes(b).unwrap());
        assert_eq!((n.x, n.y, n.z.as_str()), (7, (0, 0), "after"));
        let new = New {
            x: 7,
            y: (3, -4),
            z: "after".into(),
        };
        let buf = Bytes::from(postcard::to_stdvec(&new).unwrap());
        let back: New = restore_from(&buf, 3, |b| postcard::from_bytes(b).unwrap());
        assert_eq!(back, new);
        // Read as format 2, the new bytes are not the old layout: an error, not a guess.
        let wrong = restore_from(&buf, 2, |b| postcard::from_bytes::<New>(b));
        assert!(wrong.is_err() || wrong.unwrap() != new);
    }

    #[test]
    fn the_source_is_reset_after_a_panic() {
        let buf = Bytes::from_static(b"0123456789");
        let r = std::panic::catch_unwind(|| {
            restore_from(&buf, CHECKPOINT_FORMAT, |_| panic!("inside"))
        });
        assert!(r.is_err());
        assert!(SOURCE.with(|s| s.borrow().is_none()));
    }
}
