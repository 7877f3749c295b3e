//! The identity of a mapped series ([`SeriesKey`] of shared [`Label`]s) and the histogram
//! shape ([`Hist`]), with the per-thread sharing of labels and bucket bounds that makes
//! reading thousands of recorded series cheap.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::ConceptIdx;

/// Series by their identity. foldhash rather than the standard SipHash: every scrape
/// looks up each of its thousands of series here and in the store (a replay applies a
/// scrape from its recorded digest in well under a millisecond this way), and the keys come
/// from our own concept table and the scraped server, not from a party that could choose
/// them to collide.
pub type SeriesMap<V> = HashMap<SeriesKey, V, foldhash::fast::RandomState>;

/// Identity of one mapped series.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SeriesKey {
    pub concept: ConceptIdx,
    /// API group, `""` for core or for concepts without resources.
    pub group: Label,
    /// Plain resource, `""` for concepts without resources.
    pub resource: Label,
    /// Operation, verb, priority level or (for identity concepts) the version string.
    pub op: Label,
}

/// Labels read back on one thread at most (a replay's read-ahead reads every scrape's
/// digest) are shared there: past this many, the table starts again.
const INTERNED_MAX: usize = 65_536;

thread_local! {
    static INTERNED: std::cell::RefCell<std::collections::HashSet<Arc<str>, foldhash::fast::RandomState>> =
        std::cell::RefCell::new(Default::default());
}

/// One part of a [`SeriesKey`]: a shared string. Read back (`Deserialize`), equal labels
/// read on one thread share one allocation, so that the thousands of series of each
/// scrape digest a replay reads cost no allocation each, and looking a series up
/// compares pointers before bytes. Compares, orders and hashes as the text; serialises
/// as a plain string (the bytes a `String` gave, so recordings read the same).
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Label(Arc<str>);

impl Label {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The shared label equal to `s` on this thread, added when new.
    pub(super) fn interned(s: &str) -> Label {
        INTERNED.with(|t| {
            let mut t = t.borrow_mut();
            if let Some(a) = t.get(s) {
                return Label(a.clone());
            }
            if t.len() >= INTERNED_MAX {
                t.clear();
            }
            let a: Arc<str> = Arc::from(s);
            t.insert(a.clone());
            Label(a)
        })
    }
}

impl std::ops::Deref for Label {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl std::fmt::Display for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Label {
    fn from(s: &str) -> Label {
        Label(Arc::from(s))
    }
}

impl From<String> for Label {
    fn from(s: String) -> Label {
        Label(Arc::from(s))
    }
}

impl PartialEq<str> for Label {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Label {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl std::borrow::Borrow<str> for Label {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl Serialize for Label {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Label {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Label, D::Error> {
        // A visitor of its own: serde's `Cow<str>` always allocates a `String`, where
        // postcard lends the text in place.
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Label;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Label, E> {
                Ok(Label::interned(s))
            }
        }
        d.deserialize_str(V)
    }
}

/// A histogram: cumulative counts per upper bound, as exposed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hist {
    /// Finite upper bounds, ascending (the `le` values without `+Inf`), shared by every
    /// point of a series (and, read back, by the series with the same bounds, see
    /// [`shared_bounds`]).
    #[serde(deserialize_with = "shared_bounds")]
    pub bounds: Arc<[f64]>,
    /// Cumulative counts, one per finite bound plus the `+Inf` bucket last.
    pub cumulative: Box<[f64]>,
    pub sum: f64,
    pub count: f64,
}

/// Distinct bound sets remembered per thread by [`shared_bounds`] (a kube-apiserver
/// page has a few dozen).
const BOUNDS_MAX: usize = 64;

/// A scratch buffer for the bounds being read, and the bound sets known.
type BoundsTable = (Vec<f64>, Vec<Arc<[f64]>>);

thread_local! {
    pub(super) static BOUNDS: std::cell::RefCell<BoundsTable> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Reads a histogram's bounds, sharing one allocation among the equal bound sets read on
/// this thread: every histogram series of every scrape digest a replay reads would
/// otherwise allocate its own copy of one of a few dozen sets.
fn shared_bounds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Arc<[f64]>, D::Error> {
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = Arc<[f64]>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a sequence of bounds")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Arc<[f64]>, A::Error> {
            BOUNDS.with(|b| {
                let (scratch, known) = &mut *b.borrow_mut();
                scratch.clear();
                while let Some(x) = seq.next_element::<f64>()? {
                    scratch.push(x);
                }
                Ok(shared_among(known, scratch))
            })
        }
    }
    d.deserialize_seq(V)
}

/// The bound set in `known` equal to `scratch` bit for bit, or a new one remembered there.
pub(super) fn shared_among(known: &mut Vec<Arc<[f64]>>, scratch: &[f64]) -> Arc<[f64]> {
    let same = |k: &Arc<[f64]>| {
        k.len() == scratch.len()
            && k.iter()
                .zip(scratch.iter())
                .all(|(a, b)| a.to_bits() == b.to_bits())
    };
    if let Some(k) = known.iter().find(|k| same(k)) {
        return k.clone();
    }
    let new: Arc<[f64]> = Arc::from(scratch);
    if known.len() >= BOUNDS_MAX {
        known.remove(0);
    }
    known.push(new.clone());
    new
}
