//! One scrape mapped onto the concepts: [`map`] turns a parsed page into a [`Mapped`]
//! (the winning name per concept and one [`Value`] per series key, summing series that
//! normalise to the same key), and [`Mapped::from_postcard`] reads a recorded one back.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::series::{shared_among, Hist, Label, SeriesKey, SeriesMap, BOUNDS};
use super::{Concept, ConceptIdx, NameDef, Part, Table};
use crate::metrics::exposition::{Exposition, Sample};

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

/// Series keys read back on one thread by [`Mapped::from_postcard`], by their encoding: at
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
    /// [`PostcardReader`](crate::metrics::postcard_reader::PostcardReader) declines; the caller then reads the bytes with serde
    /// (same value, serde's error).
    pub(crate) fn from_postcard(
        w: &mut crate::metrics::postcard_reader::PostcardReader<'_>,
    ) -> Option<Mapped> {
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
        (None, Some(r)) if def.bare_path => t.storage_path_resource(r.trim_matches('/')),
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
/// `v1.34.0-regscope-demo`, or of an etcd version such as `3.6.4` or `3.7`; `None` when it
/// does not start with two numbers. The concept table's `since` and `until` are read the
/// same way, so `3.6.4` is at or after `"3.6"` and before `"3.7"`.
pub fn minor_version(v: &str) -> Option<(u32, u32)> {
    let v = v.trim_start_matches('v');
    let mut it = v.split(['.', '-', '+']);
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// Whether a server at version `v` (`(major, minor)`) exposes name `n`: at or after its
/// `since` (an empty `since` is older than anything) and before its `until` (none when
/// empty).
fn live_at(n: &NameDef, v: (u32, u32)) -> bool {
    let after_since = n.since.is_empty() || minor_version(&n.since).is_some_and(|s| v >= s);
    let before_until = minor_version(&n.until).is_none_or(|u| v < u);
    after_since && before_until
}

/// Why a server does not expose a concept, as the "not exposed" line words it
/// ([`ConceptDef::absence`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Absence<'a> {
    /// Every name of the concept is past its `until`: hidden or removed from `until` on,
    /// with the metric to read instead (`""` for none).
    Removed {
        name: &'a str,
        until: &'a str,
        replacement: &'a str,
    },
    /// The server is older than the concept's first release `since`.
    NotYet { name: &'a str, since: &'a str },
    /// The server's version has the concept (or its version is unknown) but it sent no
    /// series: a family printed only once used, or turned off (a feature gate).
    Absent { name: &'a str },
}

impl super::ConceptDef {
    /// Why a server of `version` (`v1.37.0`, `3.6.4`; `None` when unknown) shows none of
    /// this concept's names. Names are newest first, so the first one is shown.
    pub fn absence(&self, version: Option<&str>) -> Absence<'_> {
        let newest = self
            .names
            .first()
            .map_or(self.id.as_str(), |n| n.name.as_str());
        let Some(v) = version.and_then(minor_version) else {
            return Absence::Absent { name: newest };
        };
        if let Some(n) = self.names.first() {
            // The newest name is past its `until`: so is every older one.
            if minor_version(&n.until).is_some_and(|u| v >= u) {
                return Absence::Removed {
                    name: &n.name,
                    until: &n.until,
                    replacement: &n.replacement,
                };
            }
        }
        let since = self
            .names
            .iter()
            .filter_map(|n| minor_version(&n.since).map(|m| (m, n.since.as_str())))
            .min();
        match since {
            Some((m, s)) if v < m => Absence::NotYet {
                name: newest,
                since: s,
            },
            _ => Absence::Absent { name: newest },
        }
    }
}

impl Mapped {
    /// Whether concept `ci` is exposed by this server: a name of it is present, or it is a
    /// lazy counter and one of its names is live at the server's version (at or after its
    /// `since`, before its `until`). A concept whose names are all past their `until` is
    /// not exposed, lazy or not: a hidden metric is never read as 0.
    pub fn exposes(&self, t: &Table, ci: ConceptIdx) -> bool {
        if self.names.get(ci as usize).is_some_and(|n| n.is_some()) {
            return true;
        }
        let c = t.concept(ci);
        if !c.lazy {
            return false;
        }
        match self.version.as_deref().and_then(minor_version) {
            Some(v) => c.names.iter().any(|n| live_at(n, v)),
            None => false,
        }
    }

    /// The value of a series.
    pub fn get(&self, key: &SeriesKey) -> Option<&Value> {
        self.series.get(key)
    }
}
