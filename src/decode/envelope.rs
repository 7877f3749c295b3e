//! The protobuf storage envelope and the few ObjectMeta fields regscope reads without a schema.
//!
//! kube-apiserver's protobuf serializer writes `k8s\x00` followed by a
//! `k8s.io.apimachinery.pkg.runtime.Unknown` message: `typeMeta` (1: {1 apiVersion, 2 kind}),
//! `raw` (2: the object's own protobuf), `contentEncoding` (3) and `contentType` (4). By
//! Kubernetes convention field 1 of every top-level object is `ObjectMeta`; only the ObjectMeta
//! fields listed on [`MetaScan`] are named by number here. Everything borrows from the input;
//! nothing allocates.

use super::protobuf_wire::{DecodeError, ErrorKind, Reader, WireValue};

/// The storage magic: `k8s` then a NUL byte.
pub use crate::model::kubernetes::PROTOBUF_MAGIC as MAGIC;

/// A parsed `runtime.Unknown` envelope, borrowing from the stored value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// `typeMeta.apiVersion`, e.g. `v1`, `apps/v1` (empty in some non-stored kinds).
    pub api_version: &'a [u8],
    /// `typeMeta.kind`, e.g. `Pod`.
    pub kind: &'a [u8],
    /// The object's own protobuf bytes.
    pub raw: &'a [u8],
    /// Absolute offset of `raw` in the stored value.
    pub raw_offset: usize,
    /// `contentEncoding` (empty in storage).
    pub content_encoding: &'a [u8],
    /// `contentType` (empty in storage, meaning protobuf).
    pub content_type: &'a [u8],
}

/// Parses `k8s\x00` + runtime.Unknown. Unknown envelope fields are skipped; a wrong wire type
/// for a known one is an error naming its offset and field (bytes that went through CR LF
/// translation fail as `offset 4, field 1: unexpected wire type 5`).
pub fn parse_envelope(value: &[u8]) -> Result<Envelope<'_>, DecodeError> {
    let Some(body) = value.strip_prefix(MAGIC) else {
        return Err(DecodeError {
            offset: 0,
            field: None,
            kind: ErrorKind::BadMagic,
        });
    };
    let mut env = Envelope::default();
    for f in Reader::new(body, MAGIC.len()) {
        let f = f?;
        match f.number {
            1 => {
                let tm = f.expect_len()?;
                for g in Reader::new(tm, f.value_offset) {
                    let g = g?;
                    match g.number {
                        1 => env.api_version = g.expect_len()?,
                        2 => env.kind = g.expect_len()?,
                        _ => {}
                    }
                }
            }
            2 => {
                env.raw = f.expect_len()?;
                env.raw_offset = f.value_offset;
            }
            3 => env.content_encoding = f.expect_len()?,
            4 => env.content_type = f.expect_len()?,
            _ => {}
        }
    }
    Ok(env)
}

/// `metav1.Time` on the wire: {1: seconds int64, 2: nanos int32}, UTC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Time {
    /// Seconds since the Unix epoch.
    pub seconds: i64,
    /// Nanoseconds within the second.
    pub nanos: i32,
}

impl Time {
    /// Parses a Time message. Varints are reinterpreted as two's complement, as protobuf does
    /// for int64/int32.
    pub fn parse(b: &[u8], base: usize) -> Result<Time, DecodeError> {
        let mut t = Time::default();
        for f in Reader::new(b, base) {
            let f = f?;
            match f.number {
                1 => t.seconds = f.expect_varint()? as i64,
                2 => t.nanos = f.expect_varint()? as i32,
                _ => {}
            }
        }
        Ok(t)
    }

    /// RFC 3339 in UTC with whole seconds, e.g. `2024-01-01T00:00:00Z`, as Kubernetes JSON
    /// shows a metav1.Time (the stored nanos are dropped there too).
    pub fn rfc3339(&self) -> String {
        let days = self.seconds.div_euclid(86_400);
        let secs = self.seconds.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        let (hh, mm, ss) = (secs / 3600, secs % 3600 / 60, secs % 60);
        format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
    }
}

/// Proleptic Gregorian date from days since 1970-01-01 (the standard era-based conversion).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// One `metadata.managedFields` entry (ManagedFieldsEntry: 1 manager, 2 operation,
/// 3 apiVersion, 4 time, 6 fieldsType, 7 fieldsV1, 8 subresource).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ManagedEntry<'a> {
    /// Field manager, e.g. `kubectl-client-side-apply`, `kube-controller-manager`.
    pub manager: &'a [u8],
    /// `Apply` or `Update`.
    pub operation: &'a [u8],
    /// API version the manager wrote with.
    pub api_version: &'a [u8],
    /// When the manager last changed its fields.
    pub time: Option<Time>,
    /// Subresource written through (`status`, `scale`), empty for the main resource.
    pub subresource: &'a [u8],
}

impl<'a> ManagedEntry<'a> {
    /// Parses one ManagedFieldsEntry.
    pub fn parse(b: &'a [u8], base: usize) -> Result<Self, DecodeError> {
        let mut e = ManagedEntry::default();
        for f in Reader::new(b, base) {
            let f = f?;
            match f.number {
                1 => e.manager = f.expect_len()?,
                2 => e.operation = f.expect_len()?,
                3 => e.api_version = f.expect_len()?,
                4 => e.time = Some(Time::parse(f.expect_len()?, f.value_offset)?),
                6 | 7 => {
                    f.expect_len()?;
                }
                8 => e.subresource = f.expect_len()?,
                _ => {}
            }
        }
        Ok(e)
    }
}

/// Picks the last writer: the entry with the newest time; entries without a time lose to any
/// with one; among equals (or when no entry has a time) the later entry wins.
///
/// kube-apiserver's field manager moves the `time` of the entry of the manager whose request
/// changed the object (`managedfieldsupdater.go` in k8s.io/apiserver), so the newest entry
/// names the last writer. `time` has whole seconds, and kube-apiserver sorts the entries by
/// operation, then time, then manager: two writers in the same second cannot be told apart
/// from one version, and the later one in that order is named.
#[derive(Clone, Copy, Debug, Default)]
pub struct NewestManager<'a> {
    best: Option<(Option<Time>, ManagedEntry<'a>)>,
}

impl<'a> NewestManager<'a> {
    /// Offers one entry, in document order.
    pub fn offer(&mut self, e: ManagedEntry<'a>) {
        let better = match &self.best {
            None => true,
            Some((bt, _)) => e.time >= *bt,
        };
        if better {
            self.best = Some((e.time, e));
        }
    }

    /// The chosen manager, if any entry was offered.
    pub fn get(&self) -> Option<&'a [u8]> {
        self.best.map(|(_, e)| e.manager)
    }

    /// The chosen entry, if any was offered.
    pub fn entry(&self) -> Option<ManagedEntry<'a>> {
        self.best.map(|(_, e)| e)
    }
}

/// The ObjectMeta facts read without a schema: name(1), generateName(2), namespace(3),
/// uid(5), resourceVersion(6), generation(7), creationTimestamp(8), and the newest manager of
/// managedFields(17). Labels(11), annotations(12), ownerReferences(13) and all managedFields
/// entries are iterated separately by [`meta_entries`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetaScan<'a> {
    /// `metadata.name`.
    pub name: Option<&'a [u8]>,
    /// `metadata.generateName`.
    pub generate_name: Option<&'a [u8]>,
    /// `metadata.namespace`.
    pub namespace: Option<&'a [u8]>,
    /// `metadata.uid`.
    pub uid: Option<&'a [u8]>,
    /// `metadata.resourceVersion` (normally empty in storage: it is the key's mod_revision).
    pub resource_version: Option<&'a [u8]>,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `metadata.creationTimestamp`.
    pub creation: Option<Time>,
    /// Last writer from `metadata.managedFields` ([`NewestManager`]).
    pub manager: Option<&'a [u8]>,
    /// Its whole entry (manager, operation, subresource).
    pub writer: Option<ManagedEntry<'a>>,
    /// Number of managedFields entries.
    pub managed_count: usize,
}

/// Returns the bytes of the first field 1 of an object (its ObjectMeta by convention) and
/// their absolute offset; `None` when there is no field 1 or it is not length-delimited (e.g.
/// `DeleteOptions`, whose field 1 is a varint). Errors only when the object does not frame.
pub fn object_meta_bytes(raw: &[u8], base: usize) -> Result<Option<(&[u8], usize)>, DecodeError> {
    for f in Reader::new(raw, base) {
        let f = f?;
        if f.number == 1 {
            return Ok(match f.value {
                WireValue::Len(b) => Some((b, f.value_offset)),
                _ => None,
            });
        }
    }
    Ok(None)
}

/// Scans ObjectMeta bytes. A wrong wire type for a known field means the message is not an
/// ObjectMeta (e.g. `WatchEvent`, whose field 1 is a string) and is reported as an error.
pub fn scan_meta(meta: &[u8], base: usize) -> Result<MetaScan<'_>, DecodeError> {
    let mut m = MetaScan::default();
    let mut newest = NewestManager::default();
    for f in Reader::new(meta, base) {
        let f = f?;
        match f.number {
            1 => m.name = Some(f.expect_len()?),
            2 => m.generate_name = Some(f.expect_len()?),
            3 => m.namespace = Some(f.expect_len()?),
            5 => m.uid = Some(f.expect_len()?),
            6 => m.resource_version = Some(f.expect_len()?),
            7 => m.generation = Some(f.expect_varint()? as i64),
            8 => m.creation = Some(Time::parse(f.expect_len()?, f.value_offset)?),
            11..=13 => {
                f.expect_len()?;
            }
            17 => {
                let e = ManagedEntry::parse(f.expect_len()?, f.value_offset)?;
                newest.offer(e);
                m.managed_count += 1;
            }
            _ => {}
        }
    }
    m.manager = newest.get();
    m.writer = newest.entry();
    Ok(m)
}

/// A tight scanner for the one question asked of every watch event, who wrote it: the
/// [`NewestManager`] entry of a protobuf value, without building [`super::protobuf_wire::Field`]s or
/// errors. `Err(())` when the value does not frame (the caller then calls it undecodable),
/// `Ok(None)` when it has no ObjectMeta or no managedFields. Agrees with
/// [`scan_meta`]'s `writer` on every value that decodes (see the tests).
pub(crate) fn newest_writer(value: &[u8]) -> Result<Option<ManagedEntry<'_>>, ()> {
    newest_writer_marked(value).map(|(e, _)| e)
}

/// As [`newest_writer`], with a mark of the whole `managedFields` list: a hash of every
/// entry's bytes in order (0 when there are none). Two versions of an object with the same
/// mark have byte-identical managedFields, so the write between them changed no manager's
/// entry (see [`super::last_write_marked`]).
pub(crate) fn newest_writer_marked(value: &[u8]) -> Result<(Option<ManagedEntry<'_>>, u64), ()> {
    #[inline(always)]
    fn varint(b: &[u8], i: &mut usize) -> Result<u64, ()> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *b.get(*i).ok_or(())?;
            *i += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(v);
            }
        }
        Err(())
    }
    /// The next field: its number, its wire type, and its value: a varint's in the number,
    /// a length-delimited field's bytes in the slice (fixed-width values are skipped).
    #[inline(always)]
    fn field<'a>(b: &'a [u8], i: &mut usize) -> Result<(u64, u64, u64, &'a [u8]), ()> {
        let tag = varint(b, i)?;
        let wire = tag & 7;
        match wire {
            0 => Ok((tag >> 3, wire, varint(b, i)?, &[])),
            1 | 5 => {
                let n = if wire == 1 { 8 } else { 4 };
                if b.len() - *i < n {
                    return Err(());
                }
                *i += n;
                Ok((tag >> 3, wire, 0, &[]))
            }
            2 => {
                let n = varint(b, i)?;
                let n = usize::try_from(n).map_err(|_| ())?;
                if b.len() - *i < n {
                    return Err(());
                }
                let v = &b[*i..*i + n];
                *i += n;
                Ok((tag >> 3, wire, 0, v))
            }
            _ => Err(()),
        }
    }
    /// The first length-delimited field `number` of `b`, and whether every field framed.
    fn first(b: &[u8], number: u64) -> Result<Option<&[u8]>, ()> {
        let mut i = 0;
        while i < b.len() {
            let (n, wire, _, v) = field(b, &mut i)?;
            if n == number {
                return if wire == 2 { Ok(Some(v)) } else { Ok(None) };
            }
        }
        Ok(None)
    }
    let body = value.strip_prefix(MAGIC).ok_or(())?;
    // The envelope: raw (2) must be there and content encoding (3) empty.
    let mut i = 0;
    let mut raw = None;
    while i < body.len() {
        let (n, wire, _, v) = field(body, &mut i)?;
        match (n, wire) {
            (2, 2) => raw = Some(v),
            (3, 2) if !v.is_empty() => return Err(()),
            _ => {}
        }
    }
    let Some(meta) = first(raw.ok_or(())?, 1)? else {
        return Ok((None, 0));
    };
    let mut newest = NewestManager::default();
    let mut mark = super::ManagedMark::default();
    let mut i = 0;
    while i < meta.len() {
        let (n, wire, _, v) = field(meta, &mut i)?;
        if n != 17 || wire != 2 {
            continue;
        }
        mark.add(v);
        let mut e = ManagedEntry::default();
        let mut j = 0;
        while j < v.len() {
            let (m, w, _, x) = field(v, &mut j)?;
            match (m, w) {
                (1, 2) => e.manager = x,
                (2, 2) => e.operation = x,
                (3, 2) => e.api_version = x,
                (4, 2) => {
                    let mut t = Time::default();
                    let mut k = 0;
                    while k < x.len() {
                        match field(x, &mut k)? {
                            (1, 0, s, _) => t.seconds = s as i64,
                            (2, 0, n, _) => t.nanos = n as i32,
                            _ => {}
                        }
                    }
                    e.time = Some(t);
                }
                (8, 2) => e.subresource = x,
                _ => {}
            }
        }
        newest.offer(e);
    }
    Ok((newest.entry(), mark.finish()))
}

/// A map entry (`map<string,string>` is encoded as repeated {1: key, 2: value}).
pub fn map_entry(b: &[u8], base: usize) -> Result<(&[u8], &[u8]), DecodeError> {
    let (mut k, mut v): (&[u8], &[u8]) = (b"", b"");
    for f in Reader::new(b, base) {
        let f = f?;
        match f.number {
            1 => k = f.expect_len()?,
            2 => v = f.expect_len()?,
            _ => {}
        }
    }
    Ok((k, v))
}

/// Repeated ObjectMeta entries the header lists.
#[derive(Clone, Debug, Default)]
pub struct MetaEntries<'a> {
    /// labels(11) in stored order.
    pub labels: Vec<(&'a [u8], &'a [u8])>,
    /// Number of annotations(12).
    pub annotations: usize,
    /// ownerReferences(13): (kind 1, name 3).
    pub owners: Vec<(&'a [u8], &'a [u8])>,
    /// managedFields(17) in stored order.
    pub managed: Vec<ManagedEntry<'a>>,
}

/// Collects labels, annotation count, owner references and managedFields of ObjectMeta bytes.
pub fn meta_entries(meta: &[u8], base: usize) -> Result<MetaEntries<'_>, DecodeError> {
    let mut out = MetaEntries::default();
    for f in Reader::new(meta, base) {
        let f = f?;
        match f.number {
            11 => out.labels.push(map_entry(f.expect_len()?, f.value_offset)?),
            12 => {
                f.expect_len()?;
                out.annotations += 1;
            }
            13 => {
                let (mut kind, mut name): (&[u8], &[u8]) = (b"", b"");
                for g in Reader::new(f.expect_len()?, f.value_offset) {
                    let g = g?;
                    if let WireValue::Len(v) = g.value {
                        match g.number {
                            1 => kind = v,
                            3 => name = v,
                            _ => {}
                        }
                    }
                }
                out.owners.push((kind, name));
            }
            17 => out
                .managed
                .push(ManagedEntry::parse(f.expect_len()?, f.value_offset)?),
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn envelope_of_br01_pod() {
        let v = hex("6b3873000a090a0276311203506f64120f0a0d0a0270311a0764656661756c741a002200");
        let e = parse_envelope(&v).unwrap();
        assert_eq!(e.api_version, b"v1");
        assert_eq!(e.kind, b"Pod");
        let (meta, base) = object_meta_bytes(e.raw, e.raw_offset).unwrap().unwrap();
        let m = scan_meta(meta, base).unwrap();
        assert_eq!(m.name, Some(&b"p1"[..]));
        assert_eq!(m.namespace, Some(&b"default"[..]));
    }

    #[test]
    fn rfc3339_formatting() {
        let t = |seconds| Time { seconds, nanos: 0 }.rfc3339();
        assert_eq!(t(0), "1970-01-01T00:00:00Z");
        assert_eq!(t(1_704_067_200), "2024-01-01T00:00:00Z");
        assert_eq!(t(1_498_581_334), "2017-06-27T16:35:34Z");
        assert_eq!(t(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(t(-1), "1969-12-31T23:59:59Z");
        let t = Time {
            seconds: 0,
            nanos: 5,
        };
        assert_eq!(t.rfc3339(), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn newest_manager_rules() {
        let t = |s| {
            Some(Time {
                seconds: s,
                nanos: 0,
            })
        };
        let e = |time, manager: &'static [u8]| ManagedEntry {
            manager,
            time,
            ..Default::default()
        };
        let mut n = NewestManager::default();
        n.offer(e(t(5), b"a"));
        n.offer(e(t(9), b"b"));
        n.offer(e(t(7), b"c"));
        n.offer(e(None, b"d"));
        assert_eq!(n.get(), Some(&b"b"[..]));
        let mut n = NewestManager::default();
        n.offer(e(None, b"a"));
        n.offer(e(None, b"b"));
        assert_eq!(n.get(), Some(&b"b"[..]));
        assert_eq!(n.entry().map(|e| e.manager), Some(&b"b"[..]));
    }
}
