//! Who writes: write and delete counters per writer and resource, where a writer is the
//! `metadata.managedFields` entry with the newest `time` in the value written
//! ([`crate::decode::last_writer`]): a field manager, an operation (`Update` or `Apply`)
//! and a subresource.
//!
//! A PUT counts for the writer named in its new value, with that value's bytes. A DELETE
//! counts for the writer named in the deleted value: kube-apiserver does not record who
//! deleted, so a delete is attributed to the last writer of what was deleted (for a Pod
//! usually the kubelet's last status update). Values encrypted at rest, values without
//! managedFields and values that do not decode count for a writer in parentheses that says
//! so. List items are not writes and are not counted (as with [`super::ResourceStats`]).
//!
//! Rates come from per-second buckets keyed by the observation's second, so a replay, and a
//! replay resumed from a checkpoint (which holds these counters), show the same numbers as
//! the live session did.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::decode::{last_writer, LastWrite};
use crate::model::escape_bytes;

/// Distinct (resource, writer) rows kept; past it, new writers of a resource are counted
/// together as [`OTHER_WRITERS`]. Each row costs about 1.6 KiB (its rate buckets).
pub const MAX_WRITERS: usize = 2048;

/// The writer that collects new writers once [`MAX_WRITERS`] rows exist.
pub const OTHER_WRITERS: &str = "(other writers)";

/// Seconds of per-second buckets kept per row (rates are asked for over at most 60 s).
const RATE_WINDOW: usize = 64;

/// One second's counts of a row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Bucket {
    second: u64,
    puts: u32,
    deletes: u32,
    bytes: u64,
}

/// Counters of one writer of one resource.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriterStats {
    /// The resource's id in the replica ([`super::Replica::resource_name`]).
    pub resource: u32,
    /// Field manager, or a name in parentheses when the value does not name one.
    pub manager: String,
    /// `Update` or `Apply`; empty when the value names no manager.
    pub operation: String,
    /// `status`, `scale`, …; empty for the main resource.
    pub subresource: String,
    /// PUT events attributed since the replica started.
    pub puts: u64,
    /// DELETE events attributed since the replica started.
    pub deletes: u64,
    /// Value bytes written by those PUTs.
    pub bytes: u64,
    /// Ring of per-second counts, [`RATE_WINDOW`] long.
    buckets: Vec<Bucket>,
}

/// Mean rates of a row over a window, per second.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WriteRates {
    pub puts: f64,
    pub deletes: f64,
    /// Value bytes written per second.
    pub bytes: f64,
}

impl WriteRates {
    /// Puts and deletes per second.
    pub fn writes(&self) -> f64 {
        self.puts + self.deletes
    }
}

impl WriterStats {
    fn new(resource: u32, manager: String, operation: String, subresource: String) -> Self {
        Self {
            resource,
            manager,
            operation,
            subresource,
            puts: 0,
            deletes: 0,
            bytes: 0,
            buckets: vec![Bucket::default(); RATE_WINDOW],
        }
    }

    /// How the writer wrote: `Update`, `Apply`, `Update/status`; empty for a writer in
    /// parentheses.
    pub fn how(&self) -> String {
        match (self.operation.is_empty(), self.subresource.is_empty()) {
            (_, true) => self.operation.clone(),
            (true, false) => format!("/{}", self.subresource),
            (false, false) => format!("{}/{}", self.operation, self.subresource),
        }
    }

    /// Mean rates over the `window` whole seconds before `now_second` (unix seconds);
    /// `window` is clamped to 1..=60.
    pub fn rates(&self, now_second: u64, window: u64) -> WriteRates {
        let window = window.clamp(1, 60);
        let mut r = WriteRates::default();
        for s in now_second.saturating_sub(window)..now_second {
            let b = &self.buckets[(s as usize) % RATE_WINDOW];
            if b.second == s {
                r.puts += f64::from(b.puts);
                r.deletes += f64::from(b.deletes);
                r.bytes += b.bytes as f64;
            }
        }
        let w = window as f64;
        WriteRates {
            puts: r.puts / w,
            deletes: r.deletes / w,
            bytes: r.bytes / w,
        }
    }

    fn count(&mut self, second: u64, delete: bool, bytes: u64) {
        if self.buckets.len() != RATE_WINDOW {
            // Only a damaged checkpoint gets here; start its rates afresh.
            self.buckets = vec![Bucket::default(); RATE_WINDOW];
        }
        let b = &mut self.buckets[(second as usize) % RATE_WINDOW];
        if b.second != second {
            *b = Bucket {
                second,
                ..Default::default()
            };
        }
        if delete {
            b.deletes += 1;
            self.deletes += 1;
        } else {
            b.puts += 1;
            b.bytes += bytes;
            self.puts += 1;
            self.bytes += bytes;
        }
    }
}

/// Every writer row, in the order first seen, with an index by (resource, writer).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Writers {
    rows: Vec<WriterStats>,
    #[serde(skip)]
    /// foldhash: looked up once per event applied, where SipHash cost a tenth of a
    /// replay's time on the session's thread (`cargo bench --bench record -- replay`).
    index: HashMap<Box<[u8]>, u32, foldhash::fast::RandomState>,
    #[serde(skip)]
    scratch: Vec<u8>,
}

/// [`last_writer`] of one value, found ahead of time on another thread (a replay's
/// read-ahead decodes each segment's values and finds their writers there): where in the
/// value the writer's manager, operation and subresource are, or the row a value that
/// names none counts for. [`Writers::count_found`] with it counts exactly as
/// [`Writers::count`] with the value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FoundWriter {
    /// Byte ranges of the value: manager, operation, subresource.
    By([std::ops::Range<u32>; 3]),
    /// The row of a value that names no writer (`(no managedFields)`, …).
    Named(&'static [u8]),
}

impl FoundWriter {
    /// The writer of `value`, or `None` when the value names it in bytes that are not
    /// the value's own (a JSON string with escapes, a CBOR value): those are looked up
    /// when counted.
    pub fn of(value: &[u8]) -> Option<FoundWriter> {
        let base = value.as_ptr() as usize;
        let range = |c: &std::borrow::Cow<'_, [u8]>| -> Option<std::ops::Range<u32>> {
            if c.is_empty() {
                return Some(0..0);
            }
            let std::borrow::Cow::Borrowed(b) = c else {
                return None;
            };
            let start = (b.as_ptr() as usize).checked_sub(base)?;
            let end = start.checked_add(b.len())?;
            (end <= value.len()).then_some(u32::try_from(start).ok()?..u32::try_from(end).ok()?)
        };
        Some(match last_writer(value) {
            LastWrite::By(w) => FoundWriter::By([
                range(&w.manager)?,
                range(&w.operation)?,
                range(&w.subresource)?,
            ]),
            other => FoundWriter::Named(unnamed(&other, value)),
        })
    }
}

/// The writers of one observation's events found ahead of time ([`FoundWriter::of`] on
/// each PUT's value), by the event's index in the observation; an event without one (a
/// DELETE, whose value is the replica's, or a writer not found ahead) is looked up when
/// counted. Most observations hold one event: that one needs no allocation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum FoundWriters {
    #[default]
    None,
    /// The first event's.
    One(FoundWriter),
    Many(Vec<Option<FoundWriter>>),
}

impl FoundWriters {
    /// Finds the writer of each PUT of `events`.
    pub fn of(events: &[crate::model::WatchEvent]) -> FoundWriters {
        let one = |e: &crate::model::WatchEvent| match e.kind {
            crate::model::EventKind::Put => FoundWriter::of(&e.kv.value),
            crate::model::EventKind::Delete => None,
        };
        match events {
            [] => FoundWriters::None,
            [e] => one(e).map_or(FoundWriters::None, FoundWriters::One),
            many => FoundWriters::Many(many.iter().map(one).collect()),
        }
    }

    /// Event `i`'s writer, when found ahead.
    pub fn get(&self, i: usize) -> Option<&FoundWriter> {
        match self {
            FoundWriters::None => None,
            FoundWriters::One(w) => (i == 0).then_some(w),
            FoundWriters::Many(v) => v.get(i).and_then(Option::as_ref),
        }
    }
}

/// The row of a value that names no writer.
fn unnamed(lw: &LastWrite<'_>, value: &[u8]) -> &'static [u8] {
    match lw {
        LastWrite::By(_) => b"",
        LastWrite::NoManagedFields => b"(no managedFields)",
        LastWrite::Encrypted => b"(encrypted at rest)",
        LastWrite::Undecodable if value.is_empty() => b"(value not held)",
        LastWrite::Undecodable => b"(not decodable)",
    }
}

impl Writers {
    /// Counts one event of `resource` at unix second `second`: a PUT of `value`, or a DELETE
    /// whose deleted value is `value` (empty when the replica did not hold it).
    pub fn count(&mut self, resource: u32, value: &[u8], second: u64, delete: bool) {
        let lw = last_writer(value);
        let (manager, operation, subresource): (&[u8], &[u8], &[u8]) = match &lw {
            LastWrite::By(w) => (&w.manager, &w.operation, &w.subresource),
            other => (unnamed(other, value), b"", b""),
        };
        self.count_as(
            resource,
            value,
            (manager, operation, subresource),
            second,
            delete,
        );
    }

    /// As [`Writers::count`], with `value`'s writer found beforehand by
    /// [`FoundWriter::of`] on these same bytes.
    pub fn count_found(
        &mut self,
        resource: u32,
        value: &[u8],
        found: &FoundWriter,
        second: u64,
        delete: bool,
    ) {
        let part = |r: &std::ops::Range<u32>| value.get(r.start as usize..r.end as usize);
        match found {
            FoundWriter::By([m, o, s]) => match (part(m), part(o), part(s)) {
                (Some(m), Some(o), Some(s)) => {
                    self.count_as(resource, value, (m, o, s), second, delete)
                }
                // Not found on these bytes after all: look again.
                _ => self.count(resource, value, second, delete),
            },
            FoundWriter::Named(n) => self.count_as(resource, value, (n, b"", b""), second, delete),
        }
    }

    fn count_as(
        &mut self,
        resource: u32,
        value: &[u8],
        (manager, operation, subresource): (&[u8], &[u8], &[u8]),
        second: u64,
        delete: bool,
    ) {
        let id = match self.find(resource, manager, operation, subresource) {
            Some(id) => id,
            None if self.rows.len() >= MAX_WRITERS => {
                match self.find(resource, OTHER_WRITERS.as_bytes(), b"", b"") {
                    Some(id) => id,
                    None => self.insert(resource, OTHER_WRITERS.as_bytes(), b"", b""),
                }
            }
            None => self.insert(resource, manager, operation, subresource),
        };
        let bytes = if delete { 0 } else { value.len() as u64 };
        self.rows[id as usize].count(second, delete, bytes);
    }

    /// Looks a row up; leaves its index key in `scratch`.
    fn find(&mut self, resource: u32, manager: &[u8], operation: &[u8], sub: &[u8]) -> Option<u32> {
        let k = &mut self.scratch;
        k.clear();
        k.extend_from_slice(&resource.to_le_bytes());
        for part in [operation, sub] {
            k.extend_from_slice(&(part.len() as u32).to_le_bytes());
            k.extend_from_slice(part);
        }
        k.extend_from_slice(manager);
        self.index.get(&k[..]).copied()
    }

    /// Adds a row for the key [`Self::find`] left in `scratch`.
    fn insert(&mut self, resource: u32, manager: &[u8], operation: &[u8], sub: &[u8]) -> u32 {
        let id = self.rows.len() as u32;
        let text = |b: &[u8]| escape_bytes(b).into_owned();
        self.rows.push(WriterStats::new(
            resource,
            text(manager),
            text(operation),
            text(sub),
        ));
        self.index.insert(self.scratch.as_slice().into(), id);
        id
    }

    /// Rebuilds the index of rows just read from a checkpoint.
    pub(crate) fn restored(&mut self) {
        self.index.clear();
        for i in 0..self.rows.len() {
            let r = &self.rows[i];
            let (res, m, o, s) = (
                r.resource,
                r.manager.clone(),
                r.operation.clone(),
                r.subresource.clone(),
            );
            // A row whose text was escaped gets the escaped key; its writer, seen again,
            // makes a second row. Rare (a manager name that is not UTF-8) and harmless.
            self.find(res, m.as_bytes(), o.as_bytes(), s.as_bytes());
            self.index.insert(self.scratch.as_slice().into(), i as u32);
        }
    }

    /// Every row, in the order first seen.
    pub fn rows(&self) -> &[WriterStats] {
        &self.rows
    }
}

/// One row of the `writers` list in `snapshot --json`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct WriterSummary {
    pub resource: String,
    pub manager: String,
    /// `Update` or `Apply` (empty for a writer in parentheses).
    pub operation: String,
    /// Empty for the main resource.
    pub subresource: String,
    pub puts: u64,
    pub deletes: u64,
    /// Value bytes written by the PUTs.
    pub bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(managers: &[(&str, &str, &str, &str)]) -> Vec<u8> {
        let mf: Vec<_> = managers
            .iter()
            .map(|(m, op, sub, t)| json!({"manager": m, "operation": op, "subresource": sub, "time": t}))
            .collect();
        serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "managedFields": mf}}))
        .unwrap()
    }

    #[test]
    fn writes_are_attributed_to_the_newest_entry_and_rated_per_second() {
        let mut w = Writers::default();
        let a = object(&[
            ("kubectl", "Update", "", "2024-01-01T00:00:01Z"),
            ("ctrl", "Update", "status", "2024-01-01T00:00:09Z"),
        ]);
        let b = object(&[("apply-bot", "Apply", "", "2024-01-01T00:00:03Z")]);
        for s in 100..110 {
            w.count(0, &a, s, false);
        }
        w.count(0, &b, 105, false);
        w.count(1, &b, 105, false);
        w.count(0, &b, 106, true);
        w.count(0, b"", 107, true);
        w.count(0, b"k8s:enc:aescbc:v1:key1:xxxx", 107, false);
        w.count(0, br#"{"metadata":{"name":"x"}}"#, 107, false);
        w.count(0, b"\x00\x01garbage", 107, false);
        let rows = w.rows();
        let find = |res: u32, m: &str| rows.iter().find(|r| r.resource == res && r.manager == m);
        let ctrl = find(0, "ctrl").unwrap();
        assert_eq!(
            (ctrl.puts, ctrl.deletes, ctrl.bytes),
            (10, 0, 10 * a.len() as u64)
        );
        assert_eq!(ctrl.how(), "Update/status");
        let r = ctrl.rates(110, 10);
        assert_eq!(r.puts, 1.0);
        assert_eq!(r.bytes, a.len() as f64);
        assert_eq!(ctrl.rates(110, 60).puts, 10.0 / 60.0);
        // Seconds that left the ring are not counted again.
        assert_eq!(ctrl.rates(200, 10).puts, 0.0);
        let bot = find(0, "apply-bot").unwrap();
        assert_eq!((bot.puts, bot.deletes, bot.how().as_str()), (1, 1, "Apply"));
        assert_eq!(find(1, "apply-bot").unwrap().puts, 1);
        assert_eq!(find(0, "(value not held)").unwrap().deletes, 1);
        assert_eq!(find(0, "(encrypted at rest)").unwrap().puts, 1);
        assert_eq!(find(0, "(no managedFields)").unwrap().puts, 1);
        assert_eq!(find(0, "(not decodable)").unwrap().puts, 1);
        assert_eq!(rows.len(), 7);
    }

    #[test]
    fn rows_are_capped_and_survive_a_checkpoint() {
        let mut w = Writers::default();
        for i in 0..MAX_WRITERS + 10 {
            let v = object(&[(&format!("m{i}"), "Update", "", "2024-01-01T00:00:01Z")]);
            w.count(0, &v, 1, false);
        }
        assert_eq!(w.rows().len(), MAX_WRITERS + 1);
        let other = w.rows().last().unwrap();
        assert_eq!((other.manager.as_str(), other.puts), (OTHER_WRITERS, 10));

        let bytes = postcard::to_stdvec(&w).unwrap();
        let mut back: Writers = postcard::from_bytes(&bytes).unwrap();
        back.restored();
        assert_eq!(back.rows(), w.rows());
        let v = object(&[("m3", "Update", "", "2024-01-01T00:00:01Z")]);
        back.count(0, &v, 2, false);
        assert_eq!(
            back.rows().len(),
            MAX_WRITERS + 1,
            "m3 found again after restore"
        );
        assert_eq!(back.rows()[3].puts, 2);
    }
}

#[cfg(test)]
mod found_tests {
    use super::*;
    use crate::demo::objects as o;
    use rand::SeedableRng;

    /// Writers found ahead of time ([`FoundWriter::of`]) count exactly as the values
    /// counted directly: protobuf (the demo's Lease and Node with managedFields), JSON
    /// with and without escapes in the manager's name, encrypted, empty and garbage.
    #[test]
    fn writers_found_ahead_count_as_the_values_do() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let lease = o::encode_object(&o::lease(
            &mut rng,
            "kube-node-lease",
            "n1",
            "n1",
            40,
            "kubelet",
            None,
        ));
        let node = o::encode_object(&o::node(&mut rng, "n1", 1));
        let json = br#"{"metadata":{"name":"a","managedFields":[{"manager":"kubectl","operation":"Update","time":"2024-01-01T00:00:01Z"}]}}"#.to_vec();
        let escaped = br#"{"metadata":{"name":"a","managedFields":[{"manager":"ctl\u0041","operation":"Apply","subresource":"status","time":"2024-01-01T00:00:01Z"}]}}"#.to_vec();
        let values: Vec<Vec<u8>> = vec![
            lease,
            node,
            json,
            escaped.clone(),
            b"k8s:enc:aescbc:v1:key1:xxxx".to_vec(),
            br#"{"metadata":{"name":"x"}}"#.to_vec(),
            b"\x00\x01garbage".to_vec(),
            Vec::new(),
        ];
        let (mut direct, mut ahead) = (Writers::default(), Writers::default());
        let mut looked_up = 0;
        for (i, v) in values.iter().enumerate() {
            let second = 100 + i as u64;
            direct.count(i as u32 % 2, v, second, false);
            match FoundWriter::of(v) {
                Some(f) => ahead.count_found(i as u32 % 2, v, &f, second, false),
                None => {
                    looked_up += 1;
                    ahead.count(i as u32 % 2, v, second, false)
                }
            }
        }
        assert_eq!(direct.rows(), ahead.rows());
        assert_eq!(direct.rows().len(), values.len());
        // Only the escaped manager is not the value's own bytes.
        assert_eq!(looked_up, 1);
        assert_eq!(FoundWriter::of(&escaped), None);
        assert_eq!(
            FoundWriter::of(b"\x00\x01garbage"),
            Some(FoundWriter::Named(b"(not decodable)"))
        );
        // A writer found on other bytes than those counted is looked up again.
        let f = FoundWriter::By([0..1000, 0..1, 0..1]);
        let mut again = Writers::default();
        again.count_found(0, &values[0], &f, 1, false);
        assert_eq!(again.rows()[0].manager, "kubelet");
    }

    /// The writers of an observation's events by index: DELETEs have none.
    #[test]
    fn found_writers_by_event() {
        use crate::model::{Bytes, EventKind, KeyValue, WatchEvent};
        let ev = |kind, v: &[u8]| WatchEvent {
            kind,
            kv: KeyValue {
                key: Bytes::from_static(b"/registry/configmaps/d/a"),
                create_revision: 2,
                mod_revision: 2,
                version: 1,
                lease: 0,
                value: Bytes::copy_from_slice(v),
            },
            prev_kv: None,
        };
        let put = ev(EventKind::Put, b"\x00garbage");
        let del = ev(EventKind::Delete, b"");
        assert_eq!(FoundWriters::of(&[]), FoundWriters::None);
        assert_eq!(
            FoundWriters::of(std::slice::from_ref(&del)),
            FoundWriters::None
        );
        let one = FoundWriters::of(std::slice::from_ref(&put));
        assert!(one.get(0).is_some() && one.get(1).is_none());
        let many = FoundWriters::of(&[del, put]);
        assert!(many.get(0).is_none() && many.get(1).is_some());
    }
}
