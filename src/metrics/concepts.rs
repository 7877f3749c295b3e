//! Maps a parsed `/metrics` page onto regscope's metric concepts, using the table in
//! `concepts.toml` (embedded; the only place that knows metric names and label schemes).
//!
//! In: an [`Exposition`]. Out: a [`Mapped`] scrape: for each concept the name that won
//! (newest first; while a renamed metric's deprecation window serves the old and the new
//! name, the deprecated twin is ignored, so nothing counts twice) and one value per
//! [`SeriesKey`] `(concept, group, resource, op)`. Resource labels are normalised from
//! every scheme Kubernetes has used: `{group,resource}` (1.34+), `{resource}` holding
//! `pods` or `leases.coordination.k8s.io`, and `{type}` holding either of those or a storage
//! path such as `/registry/pods/` (≤ 1.33). Series that normalise to the same key (e.g.
//! `apiserver_request_duration_seconds` split by scope and component) are summed.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use super::exposition::{Exposition, Sample};
use crate::model::ScrapeTarget;

/// The embedded concept table.
pub const CONCEPTS_TOML: &str = include_str!("concepts.toml");

/// A fingerprint of the concept table (FNV-1a over its text): recordings keep scrape
/// digests only for the table that made them.
pub fn table_fingerprint() -> u64 {
    CONCEPTS_TOML
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// What kind of metric a concept is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Gauge,
    Counter,
    Histogram,
}

/// One name a concept has had.
#[derive(Clone, Debug, Deserialize)]
pub struct NameDef {
    pub name: String,
    /// First Kubernetes release with this name, `"1.31"`; `""` when older than anything
    /// regscope meets.
    pub since: String,
    /// Label holding the API group, `""` for none.
    #[serde(default)]
    pub group: String,
    /// Labels that may hold the resource, first present wins.
    #[serde(default)]
    pub resource: Vec<String>,
    /// Label holding the operation, verb or priority level.
    #[serde(default)]
    pub op: String,
    /// Operation values left out.
    #[serde(default)]
    pub skip_op: Vec<String>,
    /// A value meaning "could not be read".
    #[serde(default)]
    pub sentinel: Option<f64>,
    /// Only series whose `code` label is 5xx.
    #[serde(default)]
    pub code_5xx: bool,
}

/// One concept of the table.
#[derive(Clone, Debug, Deserialize)]
pub struct ConceptDef {
    pub id: String,
    pub target: ScrapeTarget,
    #[serde(rename = "type")]
    pub kind: Kind,
    /// Absent at or after `since` means zero (labelled counters appear on first increment).
    #[serde(default)]
    pub lazy: bool,
    pub names: Vec<NameDef>,
}

#[derive(Debug, Deserialize)]
struct TableFile {
    concept: Vec<ConceptDef>,
    storage_paths: BTreeMap<String, String>,
}

/// The loaded table with its lookup index.
#[derive(Debug)]
pub struct Table {
    pub concepts: Vec<ConceptDef>,
    /// Storage path after the prefix → `<resource>` or `<resource>.<group>`.
    pub storage_paths: BTreeMap<String, String>,
    /// Sample name (with `_bucket`/`_sum`/`_count` for histograms) → (concept, name index,
    /// part).
    index: HashMap<String, Vec<(usize, usize, Part)>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Value,
    Bucket,
    Sum,
    Count,
}

/// A concept of the table, named in code: a typo does not compile. One variant per `id` of
/// `concepts.toml` (a unit test holds the two together); [`Table::idx`] gives its position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Concept {
    BuildInfo,
    EtcdRequestDuration,
    EtcdRequests,
    EtcdRequestErrors,
    RequestDuration,
    Requests,
    RequestErrors,
    WatchCacheCapacity,
    WatchCacheCapacityIncrease,
    WatchCacheCapacityDecrease,
    WatchCacheEventsReceived,
    WatchCacheEventsDispatched,
    WatchCacheInitializations,
    WatchCacheResourceVersion,
    TerminatedWatchers,
    Objects,
    StorageSize,
    ApfInqueue,
    ApfExecuting,
    ApfRejected,
    ApfNominalSeats,
    EtcdServerVersion,
    EtcdDbSize,
    EtcdDbInUse,
    EtcdQuota,
    EtcdHasLeader,
    EtcdLeaderChanges,
    EtcdSlowWatchers,
    EtcdProposalsFailed,
    EtcdCurrentRevision,
    EtcdCompactRevision,
    EtcdKeys,
}

impl Concept {
    /// Every concept, in the order of `concepts.toml`.
    pub const ALL: [Concept; 32] = [
        Concept::BuildInfo,
        Concept::EtcdRequestDuration,
        Concept::EtcdRequests,
        Concept::EtcdRequestErrors,
        Concept::RequestDuration,
        Concept::Requests,
        Concept::RequestErrors,
        Concept::WatchCacheCapacity,
        Concept::WatchCacheCapacityIncrease,
        Concept::WatchCacheCapacityDecrease,
        Concept::WatchCacheEventsReceived,
        Concept::WatchCacheEventsDispatched,
        Concept::WatchCacheInitializations,
        Concept::WatchCacheResourceVersion,
        Concept::TerminatedWatchers,
        Concept::Objects,
        Concept::StorageSize,
        Concept::ApfInqueue,
        Concept::ApfExecuting,
        Concept::ApfRejected,
        Concept::ApfNominalSeats,
        Concept::EtcdServerVersion,
        Concept::EtcdDbSize,
        Concept::EtcdDbInUse,
        Concept::EtcdQuota,
        Concept::EtcdHasLeader,
        Concept::EtcdLeaderChanges,
        Concept::EtcdSlowWatchers,
        Concept::EtcdProposalsFailed,
        Concept::EtcdCurrentRevision,
        Concept::EtcdCompactRevision,
        Concept::EtcdKeys,
    ];

    /// The concept whose `id` is `id`, if any (ids come back from `snapshot --json` and
    /// [`ConceptDef::id`]).
    pub fn from_id(id: &str) -> Option<Concept> {
        Concept::ALL.into_iter().find(|c| c.id() == id)
    }

    /// The concept's `id` in `concepts.toml` (and in `snapshot --json`).
    pub const fn id(self) -> &'static str {
        match self {
            Concept::BuildInfo => "build_info",
            Concept::EtcdRequestDuration => "etcd_request_duration",
            Concept::EtcdRequests => "etcd_requests",
            Concept::EtcdRequestErrors => "etcd_request_errors",
            Concept::RequestDuration => "request_duration",
            Concept::Requests => "requests",
            Concept::RequestErrors => "request_errors",
            Concept::WatchCacheCapacity => "watch_cache_capacity",
            Concept::WatchCacheCapacityIncrease => "watch_cache_capacity_increase",
            Concept::WatchCacheCapacityDecrease => "watch_cache_capacity_decrease",
            Concept::WatchCacheEventsReceived => "watch_cache_events_received",
            Concept::WatchCacheEventsDispatched => "watch_cache_events_dispatched",
            Concept::WatchCacheInitializations => "watch_cache_initializations",
            Concept::WatchCacheResourceVersion => "watch_cache_resource_version",
            Concept::TerminatedWatchers => "terminated_watchers",
            Concept::Objects => "objects",
            Concept::StorageSize => "storage_size",
            Concept::ApfInqueue => "apf_inqueue",
            Concept::ApfExecuting => "apf_executing",
            Concept::ApfRejected => "apf_rejected",
            Concept::ApfNominalSeats => "apf_nominal_seats",
            Concept::EtcdServerVersion => "etcd_server_version",
            Concept::EtcdDbSize => "etcd_db_size",
            Concept::EtcdDbInUse => "etcd_db_in_use",
            Concept::EtcdQuota => "etcd_quota",
            Concept::EtcdHasLeader => "etcd_has_leader",
            Concept::EtcdLeaderChanges => "etcd_leader_changes",
            Concept::EtcdSlowWatchers => "etcd_slow_watchers",
            Concept::EtcdProposalsFailed => "etcd_proposals_failed",
            Concept::EtcdCurrentRevision => "etcd_current_revision",
            Concept::EtcdCompactRevision => "etcd_compact_revision",
            Concept::EtcdKeys => "etcd_keys",
        }
    }
}

/// A concept's position in the table; stable for one build of regscope.
pub type ConceptIdx = u16;

impl Table {
    /// Parses a table. Errors name the TOML problem (the embedded table is checked by a
    /// unit test, so this only fails for a broken edit).
    pub fn parse(text: &str) -> Result<Table, String> {
        let file: TableFile = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut index: HashMap<String, Vec<(usize, usize, Part)>> = HashMap::new();
        for (ci, c) in file.concept.iter().enumerate() {
            for (ni, n) in c.names.iter().enumerate() {
                let parts: &[(&str, Part)] = match c.kind {
                    Kind::Histogram => &[
                        ("_bucket", Part::Bucket),
                        ("_sum", Part::Sum),
                        ("_count", Part::Count),
                    ],
                    _ => &[("", Part::Value)],
                };
                for (suffix, part) in parts {
                    index
                        .entry(format!("{}{suffix}", n.name))
                        .or_default()
                        .push((ci, ni, *part));
                }
            }
        }
        Ok(Table {
            concepts: file.concept,
            storage_paths: file.storage_paths,
            index,
        })
    }

    /// The position of `concept` in the table. Every [`Concept`] is in the embedded
    /// table (checked by a unit test), so this panics only for a table that lost one.
    pub fn idx(&self, concept: Concept) -> ConceptIdx {
        let id = concept.id();
        self.concepts
            .iter()
            .position(|c| c.id == id)
            .unwrap_or_else(|| panic!("metric concept {id:?} is not in concepts.toml"))
            as ConceptIdx
    }

    pub fn concept(&self, idx: ConceptIdx) -> &ConceptDef {
        &self.concepts[idx as usize]
    }

    /// Splits a resource label value into `(group, resource)`: `pods` → `("", "pods")`,
    /// `leases.coordination.k8s.io` → `("coordination.k8s.io", "leases")`, and storage
    /// paths `/registry/pods/`, `/registry/services/specs/`,
    /// `/registry/apiregistration.k8s.io/apiservices/` through [`Table::storage_paths`].
    pub fn resource_of(&self, value: &str) -> (String, String) {
        if let Some(path) = value.strip_prefix('/') {
            // `<prefix>/<rest>/`: the prefix is the first segment (kube-apiserver's
            // --etcd-prefix, `/registry` by default).
            let path = path.trim_end_matches('/');
            let rest = path.split_once('/').map_or("", |(_, r)| r);
            return self.storage_path_resource(rest);
        }
        split_dotted(value)
    }

    /// `(group, resource)` for a key path after the prefix, e.g. `deployments` →
    /// `("apps", "deployments")`, `widgets.example.com` (a replica resource name) or
    /// `example.com/widgets` (a path) → `("example.com", "widgets")`.
    pub fn storage_path_resource(&self, rest: &str) -> (String, String) {
        if let Some(full) = self.storage_paths.get(rest) {
            return split_dotted(full);
        }
        match rest.split_once('/') {
            Some((g, r)) if g.contains('.') => (g.to_string(), r.to_string()),
            _ => split_dotted(rest),
        }
    }
}

fn split_dotted(v: &str) -> (String, String) {
    match v.split_once('.') {
        Some((r, g)) => (g.to_string(), r.to_string()),
        None => (String::new(), v.to_string()),
    }
}

/// The embedded table, loaded once.
pub fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| Table::parse(CONCEPTS_TOML).expect("embedded concepts.toml is valid"))
}

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
    fn interned(s: &str) -> Label {
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
    static BOUNDS: std::cell::RefCell<BoundsTable> =
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
fn shared_among(known: &mut Vec<Arc<[f64]>>, scratch: &[f64]) -> Arc<[f64]> {
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

/// One mapped value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Value {
    Scalar(f64),
    /// Behind a pointer: most values are scalars, and points are kept by the hundred
    /// thousand. Shared (`Arc`): the metric store keeps the scrape's own histogram in its
    /// series instead of a copy of its buckets (serialised the same as a box).
    Histogram(std::sync::Arc<Hist>),
}

/// One scrape after mapping.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Mapped {
    /// Server version: `kubernetes_build_info`'s `git_version` (`v1.34.0`) or
    /// `etcd_server_version`'s `server_version` (`3.6.4`).
    pub version: Option<String>,
    /// Per concept (by index): the name that won in this scrape, `None` when absent.
    pub names: Vec<Option<String>>,
    pub series: SeriesMap<Value>,
    /// Samples read from the body (all, mapped or not).
    pub samples: usize,
}

#[derive(Default)]
struct HistAcc {
    buckets: Vec<(f64, f64)>,
    sum: f64,
    count: f64,
}

enum Acc {
    Scalar(f64),
    Hist(HistAcc),
}

/// Series keys read back on one thread by [`Mapped::from_wire`], by their encoding: at
/// most this many (past that, the table starts again).
const KEYS_MAX: usize = 65_536;

thread_local! {
    static KEYS: std::cell::RefCell<HashMap<Box<[u8]>, SeriesKey, foldhash::fast::FixedState>> =
        std::cell::RefCell::new(Default::default());
}

impl Mapped {
    /// Reads a `Mapped` as postcard wrote it, the fast way: a series key seen before on
    /// this thread is recognised by its whole encoding (one hash of about 30 bytes instead
    /// of a UTF-8 check and an interning lookup per label). `None` at anything
    /// [`Wire`](super::wire::Wire) declines; the caller then reads the bytes with serde
    /// (same value, serde's error).
    pub(crate) fn from_wire(w: &mut super::wire::Wire<'_>) -> Option<Mapped> {
        let version = w.opt_string()?;
        let n = w.usize()?;
        if n > w.left() {
            return None;
        }
        let mut names = Vec::with_capacity(n);
        for _ in 0..n {
            names.push(w.opt_string()?);
        }
        let n = w.usize()?;
        // A series takes at least 5 bytes (concept, three lengths, variant).
        if n > w.left() / 5 {
            return None;
        }
        let mut series = SeriesMap::with_capacity_and_hasher(n, Default::default());
        KEYS.with(|keys| {
            BOUNDS.with(|b| {
                let mut keys = keys.borrow_mut();
                let (scratch, known) = &mut *b.borrow_mut();
                for _ in 0..n {
                    let from = w.at();
                    let concept = w.u16()?;
                    let (group, resource, op) = (w.bytes()?, w.bytes()?, w.bytes()?);
                    let raw = w.since(from);
                    let key = match keys.get(raw) {
                        Some(k) => k.clone(),
                        None => {
                            let label = |b| std::str::from_utf8(b).ok().map(Label::interned);
                            let k = SeriesKey {
                                concept,
                                group: label(group)?,
                                resource: label(resource)?,
                                op: label(op)?,
                            };
                            if keys.len() >= KEYS_MAX {
                                keys.clear();
                            }
                            keys.insert(raw.into(), k.clone());
                            k
                        }
                    };
                    let value = match w.varint()? {
                        0 => Value::Scalar(w.f64()?),
                        1 => {
                            w.f64s(scratch)?;
                            let bounds = shared_among(known, scratch);
                            w.f64s(scratch)?;
                            let cumulative = scratch.as_slice().into();
                            Value::Histogram(Arc::new(Hist {
                                bounds,
                                cumulative,
                                sum: w.f64()?,
                                count: w.f64()?,
                            }))
                        }
                        _ => return None,
                    };
                    series.insert(key, value);
                }
                Some(())
            })
        })?;
        Some(Mapped {
            version,
            names,
            series,
            samples: w.usize()?,
        })
    }
}

/// Maps a parsed page. Pure and cheap: one pass over the samples, one hash lookup each.
pub fn map(t: &Table, expo: &Exposition) -> Mapped {
    let n = t.concepts.len();
    // Per concept, per name index: accumulated series.
    let mut acc: Vec<Vec<SeriesMap<Acc>>> = t
        .concepts
        .iter()
        .map(|c| c.names.iter().map(|_| SeriesMap::default()).collect())
        .collect();
    for s in &expo.samples {
        let Some(hits) = t.index.get(s.name.as_str()) else {
            continue;
        };
        for &(ci, ni, part) in hits {
            let def = &t.concepts[ci].names[ni];
            let Some(key) = key_of(t, ci, def, s) else {
                continue;
            };
            let slot = acc[ci][ni].entry(key);
            match part {
                Part::Value => {
                    let a = slot.or_insert(Acc::Scalar(0.0));
                    if let Acc::Scalar(v) = a {
                        *v += s.value;
                    }
                }
                _ => {
                    let a = slot.or_insert_with(|| Acc::Hist(HistAcc::default()));
                    let Acc::Hist(h) = a else { continue };
                    match part {
                        Part::Bucket => {
                            let le = match s.label("le") {
                                Some(v) => parse_le(v),
                                None => None,
                            };
                            if let Some(le) = le {
                                match h.buckets.iter_mut().find(|(b, _)| *b == le) {
                                    Some((_, c)) => *c += s.value,
                                    None => h.buckets.push((le, s.value)),
                                }
                            }
                        }
                        Part::Sum => h.sum += s.value,
                        Part::Count => h.count += s.value,
                        Part::Value => {}
                    }
                }
            }
        }
    }

    let mut out = Mapped {
        names: vec![None; n],
        samples: expo.samples.len(),
        ..Mapped::default()
    };
    for (ci, per_name) in acc.into_iter().enumerate() {
        let Some((ni, series)) = per_name
            .into_iter()
            .enumerate()
            .find(|(_, m)| !m.is_empty())
        else {
            continue;
        };
        out.names[ci] = Some(t.concepts[ci].names[ni].name.clone());
        let mut bounds_cache: Option<Arc<[f64]>> = None;
        for (key, a) in series {
            let v = match a {
                Acc::Scalar(v) => Value::Scalar(v),
                Acc::Hist(mut h) => {
                    h.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
                    let finite: Vec<f64> = h
                        .buckets
                        .iter()
                        .map(|(b, _)| *b)
                        .filter(|b| b.is_finite())
                        .collect();
                    let bounds = match &bounds_cache {
                        Some(b) if **b == *finite => b.clone(),
                        _ => {
                            let b: Arc<[f64]> = finite.into();
                            bounds_cache = Some(b.clone());
                            b
                        }
                    };
                    let mut cumulative: Vec<f64> = h
                        .buckets
                        .iter()
                        .filter(|(b, _)| b.is_finite())
                        .map(|(_, c)| *c)
                        .collect();
                    let inf = h
                        .buckets
                        .iter()
                        .find(|(b, _)| b.is_infinite())
                        .map_or(h.count, |(_, c)| *c);
                    cumulative.push(inf);
                    Value::Histogram(std::sync::Arc::new(Hist {
                        bounds,
                        cumulative: cumulative.into_boxed_slice(),
                        sum: h.sum,
                        count: h.count,
                    }))
                }
            };
            out.series.insert(key, v);
        }
    }
    let version_of = |id: Concept| {
        let ci = t.idx(id);
        out.series
            .keys()
            .find(|k| k.concept == ci && !k.op.is_empty())
            .map(|k| k.op.to_string())
    };
    out.version = version_of(Concept::BuildInfo).or_else(|| version_of(Concept::EtcdServerVersion));
    out
}

fn parse_le(v: &str) -> Option<f64> {
    match v {
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        _ => v.parse().ok(),
    }
}

fn key_of(t: &Table, ci: usize, def: &NameDef, s: &Sample) -> Option<SeriesKey> {
    let op = if def.op.is_empty() {
        String::new()
    } else {
        s.label(&def.op).unwrap_or("").to_string()
    };
    if def.skip_op.contains(&op) {
        return None;
    }
    if def.code_5xx && !s.label("code").is_some_and(|c| c.starts_with('5')) {
        return None;
    }
    let group_label = if def.group.is_empty() {
        None
    } else {
        s.label(&def.group)
    };
    let res_value = def.resource.iter().find_map(|l| s.label(l));
    let (group, resource) = match (group_label, res_value) {
        (Some(g), Some(r)) => (g.to_string(), r.to_string()),
        (None, Some(r)) => t.resource_of(r),
        (_, None) => (String::new(), String::new()),
    };
    Some(SeriesKey {
        concept: ci as ConceptIdx,
        group: Label::interned(&group),
        resource: Label::interned(&resource),
        op: Label::interned(&op),
    })
}

/// `(major, minor)` of a Kubernetes version such as `v1.34.0`, `1.31` or
/// `v1.34.0-regscope-demo`; `None` when it does not start with two numbers.
pub fn minor_version(v: &str) -> Option<(u32, u32)> {
    let v = v.trim_start_matches('v');
    let mut it = v.split(['.', '-', '+']);
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

impl Mapped {
    /// Whether concept `ci` is exposed by this server: a name of it is present, or it is a
    /// lazy counter and the server's version is at or after the first name's `since`.
    pub fn exposes(&self, t: &Table, ci: ConceptIdx) -> bool {
        if self.names.get(ci as usize).is_some_and(|n| n.is_some()) {
            return true;
        }
        let c = t.concept(ci);
        if !c.lazy {
            return false;
        }
        let since = c.names.iter().filter_map(|n| minor_version(&n.since)).min();
        match (since, self.version.as_deref().and_then(minor_version)) {
            (Some(s), Some(v)) => v >= s,
            _ => false,
        }
    }

    /// The value of a series.
    pub fn get(&self, key: &SeriesKey) -> Option<&Value> {
        self.series.get(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::exposition::parse;

    #[test]
    fn embedded_table_is_valid_and_every_id_is_unique() {
        let t = table();
        let mut ids: Vec<&str> = t.concepts.iter().map(|c| c.id.as_str()).collect();
        ids.sort();
        let n = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), n, "duplicate concept ids");
        assert!(n >= 30, "{n}");
        for c in &t.concepts {
            assert!(!c.names.is_empty(), "{}", c.id);
        }
    }

    #[test]
    fn the_concepts_named_in_code_are_the_table_in_its_order() {
        let ids: Vec<&str> = table().concepts.iter().map(|c| c.id.as_str()).collect();
        let named: Vec<&str> = Concept::ALL.iter().map(|c| c.id()).collect();
        assert_eq!(named, ids);
    }

    #[test]
    fn resource_labels_of_every_scheme_normalise_to_group_and_resource() {
        let t = table();
        let pairs = [
            ("pods", ("", "pods")),
            (
                "leases.coordination.k8s.io",
                ("coordination.k8s.io", "leases"),
            ),
            ("/registry/pods/", ("", "pods")),
            ("/registry/configmaps/", ("", "configmaps")),
            ("/registry/services/specs/", ("", "services")),
            ("/registry/services/endpoints/", ("", "endpoints")),
            ("/registry/minions/", ("", "nodes")),
            ("/registry/controllers/", ("", "replicationcontrollers")),
            ("/registry/ingress/", ("networking.k8s.io", "ingresses")),
            ("/registry/deployments/", ("apps", "deployments")),
            (
                "/registry/apiregistration.k8s.io/apiservices/",
                ("apiregistration.k8s.io", "apiservices"),
            ),
            (
                "/custom-prefix/widgets.example.com/",
                ("example.com", "widgets"),
            ),
        ];
        for (v, (g, r)) in pairs {
            assert_eq!(t.resource_of(v), (g.to_string(), r.to_string()), "{v}");
        }
        assert_eq!(
            t.storage_path_resource("widgets.example.com"),
            ("example.com".into(), "widgets".into())
        );
        assert_eq!(
            t.storage_path_resource("leases"),
            ("coordination.k8s.io".into(), "leases".into())
        );
    }

    fn count_of(m: &Mapped, id: Concept, op: &str, group: &str, resource: &str) -> Option<f64> {
        let t = table();
        match m.get(&SeriesKey {
            concept: t.idx(id),
            group: group.into(),
            resource: resource.into(),
            op: op.into(),
        })? {
            Value::Scalar(v) => Some(*v),
            Value::Histogram(h) => Some(h.count),
        }
    }

    /// Three scrapes across a rename (old names only, old and new together, new names only);
    /// every label scheme maps to configmaps in the core group and the deprecation window,
    /// where both names are present, counts once.
    #[test]
    fn br08_names_and_labels_across_releases_map_to_one_concept() {
        let t = table();
        let old = parse(
            b"etcd_object_counts{resource=\"configmaps\"} 40\n\
etcd_db_total_size_in_bytes{endpoint=\"https://127.0.0.1:2379\"} 2.097152e+07\n\
etcd_request_duration_seconds_count{operation=\"get\",group=\"\",resource=\"configmaps\"} 10\n",
        );
        let mid = parse(
            b"etcd_object_counts{resource=\"configmaps\"} 40\n\
apiserver_storage_objects{resource=\"configmaps\"} 40\n\
apiserver_storage_db_total_size_in_bytes{endpoint=\"https://127.0.0.1:2379\"} 2.097152e+07\n\
apiserver_storage_size_bytes{cluster=\"etcd-0\"} 2.097152e+07\n",
        );
        let new = parse(
            b"apiserver_storage_objects{resource=\"configmaps\"} 40\n\
apiserver_storage_size_bytes{storage_cluster_id=\"etcd-0\"} 2.097152e+07\n\
etcd_request_duration_seconds_count{operation=\"get\",type=\"/registry/configmaps/\"} 7\n\
etcd_request_duration_seconds_count{operation=\"list\",type=\"configmaps\"} 3\n",
        );
        for (name, e) in [("old", &old), ("mid", &mid), ("new", &new)] {
            assert!(e.skipped.is_empty(), "{name}");
            let m = map(t, e);
            assert_eq!(
                count_of(&m, Concept::Objects, "", "", "configmaps"),
                Some(40.0),
                "{name}"
            );
            let sizes: Vec<f64> = m
                .series
                .iter()
                .filter(|(k, _)| k.concept == t.idx(Concept::StorageSize))
                .map(|(_, v)| match v {
                    Value::Scalar(v) => *v,
                    _ => f64::NAN,
                })
                .collect();
            assert_eq!(sizes, vec![20.0 * 1024.0 * 1024.0], "{name}");
        }
        let m = map(t, &old);
        assert_eq!(
            count_of(&m, Concept::EtcdRequestDuration, "get", "", "configmaps"),
            Some(10.0)
        );
        let m = map(t, &new);
        assert_eq!(
            count_of(&m, Concept::EtcdRequestDuration, "get", "", "configmaps"),
            Some(7.0)
        );
        assert_eq!(
            count_of(&m, Concept::EtcdRequestDuration, "list", "", "configmaps"),
            Some(3.0)
        );
        // MID has no latency histogram at all: the concept is not exposed there.
        let m = map(t, &mid);
        assert!(!m.exposes(t, t.idx(Concept::EtcdRequestDuration)));
        assert_eq!(
            m.names[t.idx(Concept::Objects) as usize].as_deref(),
            Some("apiserver_storage_objects")
        );
    }

    #[test]
    fn lazy_counters_are_zero_from_their_release_and_not_exposed_before() {
        let t = table();
        let m = map(
            t,
            &parse(b"kubernetes_build_info{git_version=\"v1.28.3\"} 1\n"),
        );
        assert_eq!(m.version.as_deref(), Some("v1.28.3"));
        assert!(m.exposes(t, t.idx(Concept::TerminatedWatchers)));
        // events_received_total is from 1.27, resource_version gauge from 1.31 (not lazy).
        assert!(m.exposes(t, t.idx(Concept::WatchCacheEventsReceived)));
        assert!(!m.exposes(t, t.idx(Concept::WatchCacheResourceVersion)));
        let m = map(
            t,
            &parse(b"kubernetes_build_info{git_version=\"v1.26.1\"} 1\n"),
        );
        assert!(!m.exposes(t, t.idx(Concept::WatchCacheEventsReceived)));
    }

    #[test]
    fn histograms_sum_series_that_map_to_one_key() {
        let t = table();
        let body = b"apiserver_request_duration_seconds_bucket{verb=\"GET\",group=\"\",resource=\"pods\",scope=\"namespace\",le=\"0.1\"} 3\n\
apiserver_request_duration_seconds_bucket{verb=\"GET\",group=\"\",resource=\"pods\",scope=\"namespace\",le=\"+Inf\"} 4\n\
apiserver_request_duration_seconds_sum{verb=\"GET\",group=\"\",resource=\"pods\",scope=\"namespace\"} 1.5\n\
apiserver_request_duration_seconds_count{verb=\"GET\",group=\"\",resource=\"pods\",scope=\"namespace\"} 4\n\
apiserver_request_duration_seconds_bucket{verb=\"GET\",group=\"\",resource=\"pods\",scope=\"cluster\",le=\"0.1\"} 1\n\
apiserver_request_duration_seconds_bucket{verb=\"GET\",group=\"\",resource=\"pods\",scope=\"cluster\",le=\"+Inf\"} 1\n\
apiserver_request_duration_seconds_sum{verb=\"GET\",group=\"\",resource=\"pods\",scope=\"cluster\"} 0.05\n\
apiserver_request_duration_seconds_count{verb=\"GET\",group=\"\",resource=\"pods\",scope=\"cluster\"} 1\n\
apiserver_request_duration_seconds_count{verb=\"WATCH\",group=\"\",resource=\"pods\",scope=\"cluster\"} 9\n";
        let m = map(t, &parse(body));
        let key = SeriesKey {
            concept: t.idx(Concept::RequestDuration),
            group: Default::default(),
            resource: "pods".into(),
            op: "GET".into(),
        };
        let Some(Value::Histogram(h)) = m.get(&key) else {
            panic!("{:?}", m.series)
        };
        assert_eq!(&*h.bounds, &[0.1]);
        assert_eq!(&*h.cumulative, &[4.0, 5.0]);
        assert_eq!(h.count, 5.0);
        assert!((h.sum - 1.55).abs() < 1e-9);
        // WATCH is long-running: not a latency row.
        assert_eq!(m.series.len(), 1);
    }

    #[test]
    fn minor_versions() {
        assert_eq!(minor_version("v1.34.0"), Some((1, 34)));
        assert_eq!(minor_version("1.31"), Some((1, 31)));
        assert_eq!(minor_version("v1.34.0-regscope-demo"), Some((1, 34)));
        assert_eq!(minor_version("3.6.4"), Some((3, 6)));
        assert_eq!(minor_version(""), None);
    }
}

#[cfg(test)]
mod shared_tests {
    use super::*;

    /// Labels and histogram bounds read back on one thread share their allocations, and
    /// are written as the plain strings and sequences a `String` and an `Arc<[f64]>`
    /// gave (recordings written before read the same).
    #[test]
    fn labels_and_bounds_read_back_are_shared_and_written_as_before() {
        let key = |r: &str| SeriesKey {
            concept: 1,
            group: "apps".into(),
            resource: r.into(),
            op: "GET".into(),
        };
        let hist = || {
            Value::Histogram(Arc::new(Hist {
                bounds: Arc::from(&[0.1, 1.0, 10.0][..]),
                cumulative: vec![1.0, 2.0, 3.0, 4.0].into_boxed_slice(),
                sum: 5.0,
                count: 4.0,
            }))
        };
        let mut m = Mapped::default();
        m.series.insert(key("deployments"), hist());
        m.series.insert(key("replicasets"), hist());
        let bytes = postcard::to_allocvec(&m).unwrap();
        let a: Mapped = postcard::from_bytes(&bytes).unwrap();
        let b: Mapped = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(a.series, m.series);
        let (ka, va) = a.series.iter().next().unwrap();
        let (kb, _) = b.series.get_key_value(ka).unwrap();
        assert!(std::ptr::eq(ka.group.as_ptr(), kb.group.as_ptr()));
        assert!(std::ptr::eq(ka.resource.as_ptr(), kb.resource.as_ptr()));
        let bounds: Vec<_> = a
            .series
            .values()
            .chain(b.series.values())
            .map(|v| match v {
                Value::Histogram(h) => h.bounds.clone(),
                Value::Scalar(_) => unreachable!(),
            })
            .collect();
        assert!(bounds.iter().all(|x| Arc::ptr_eq(x, &bounds[0])), "{va:?}");
        // The bytes a String and a Vec<f64> gave.
        #[derive(Serialize)]
        struct Before {
            concept: ConceptIdx,
            group: String,
            resource: String,
            op: String,
        }
        let before = Before {
            concept: 1,
            group: "apps".into(),
            resource: "deployments".into(),
            op: "GET".into(),
        };
        assert_eq!(
            postcard::to_allocvec(&key("deployments")).unwrap(),
            postcard::to_allocvec(&before).unwrap()
        );
        // JSON, which lends no text, reads too.
        let k: SeriesKey =
            serde_json::from_str(r#"{"concept":1,"group":"apps","resource":"a\"b","op":""}"#)
                .unwrap();
        assert_eq!(k.resource, "a\"b");
    }
}
