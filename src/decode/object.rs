//! Protobuf object bytes + a [`Plan`] → the apiserver's JSON, in one pass.
//!
//! Input: the `raw` field of the `runtime.Unknown` envelope (the object's own protobuf, with
//! its absolute offset in the stored value for error positions). Output: compact JSON text
//! as kube-apiserver would serve the object: `kind` and `apiVersion` first, then the fields
//! in declaration order; Time/MicroTime as RFC 3339, Duration as Go's duration string,
//! Quantity as its string, IntOrString as an int or a string, RawExtension/FieldsV1 as
//! embedded JSON, bytes as base64, maps as objects, int64 as JSON numbers, empty
//! `+optional` fields omitted. Fields the schema does not know (written by a newer
//! apiserver) are kept under [`UNKNOWN_FIELDS_KEY`], never dropped.
//!
//! Errors (malformed wire data, a wire type the schema does not allow, nesting deeper than
//! [`MAX_DEPTH`]) stop the walk and return a [`DecodeError`] with the absolute byte offset and
//! the field number; the caller falls back to a schema-less dump.

use base64::Engine as _;

use super::json_text::{push_bytes_as_str, push_rfc3339, raw_json, scalar_json};
use super::protobuf_wire::{DecodeError, ErrorKind, Field, Reader, WireValue};
use super::scalar::{packable, scalar_of, PackedReader, ScalarValue};
use super::schema::{FieldPlan, MessagePlan, Plan, Scalar, Special, Ty};

pub use super::json_text::{go_duration, push_str, rfc3339};

/// JSON key under which fields unknown to the schema are listed:
/// `[{"field": N, "wireType": "len", "value": …}]`.
pub const UNKNOWN_FIELDS_KEY: &str = "x-regscope-unknown-fields";

/// Deepest message nesting followed (Kubernetes objects nest about 15 deep; a CRD's schema
/// two levels per nested property). Deeper input is reported, not recursed into. With
/// [`GENERIC_MAX_DEPTH`] this keeps every output under serde_json's 128-level parse limit:
/// at most 2 JSON levels per message (object, list), 1 for an unknown-field list and 2 per
/// generic level.
pub const MAX_DEPTH: usize = 50;

/// Deepest nesting a schema-less field dump follows; deeper payloads are shown as base64.
pub const GENERIC_MAX_DEPTH: usize = 8;

/// Result of a schema walk.
#[derive(Debug, Default)]
pub struct Walked {
    /// Compact JSON of the object.
    pub json: String,
    /// How many fields the schema did not know (at any depth).
    pub unknown_fields: usize,
}

struct Walker<'p> {
    plan: &'p Plan,
    out: String,
    /// Field entries of the messages being walked (a shared stack; each level uses a window).
    scratch: Vec<(u16, Field<'p>)>,
    unknown: usize,
}

/// Walks object bytes `raw` (absolute offset `base`) of message `msg` in `plan`, emitting
/// `{"kind":…,"apiVersion":…, fields…}`. `extra_meta` lets the caller set
/// `metadata.resourceVersion` (stored objects carry none; the apiserver fills in the key's
/// mod_revision on every read).
pub fn walk_object(
    plan: &Plan,
    msg: u32,
    raw: &[u8],
    base: usize,
    type_meta: Option<(&str, &str)>,
    resource_version: Option<i64>,
) -> Result<Walked, DecodeError> {
    let mut w = Walker {
        plan,
        // JSON is typically 2–2.5× the protobuf (keys, quotes, base64): one allocation.
        out: String::with_capacity(raw.len() * 3 + 256),
        scratch: Vec::with_capacity(64),
        unknown: 0,
    };
    w.out.push('{');
    let mut first = true;
    if let Some((api_version, kind)) = type_meta {
        // An empty typeMeta (WatchEvent) is left out, as Kubernetes' JSON omits it.
        for (k, v) in [("kind", kind), ("apiVersion", api_version)] {
            if !v.is_empty() {
                if !first {
                    w.out.push(',');
                }
                first = false;
                push_str(&mut w.out, k);
                w.out.push(':');
                push_str(&mut w.out, v);
            }
        }
    }
    walk_fields(&mut w, msg, raw, base, &mut first, 0, resource_version)?;
    w.out.push('}');
    Ok(Walked {
        json: w.out,
        unknown_fields: w.unknown,
    })
}

fn depth_error(offset: usize, field: Option<u32>) -> DecodeError {
    DecodeError {
        offset,
        field,
        kind: ErrorKind::TooDeep(MAX_DEPTH),
    }
}

/// Collects the fields of one message into the scratch stack, sorted by declaration index
/// (stable, so repeated entries keep wire order), and returns the window.
#[inline]
fn collect<'a>(
    w: &mut Walker<'a>,
    m: &MessagePlan,
    bytes: &'a [u8],
    base: usize,
) -> Result<(usize, usize), DecodeError> {
    let start = w.scratch.len();
    let mut r = Reader::new(bytes, base);
    let mut sorted = true;
    let mut last = 0u16;
    while let Some(f) = r.next_field() {
        let f = f?;
        let idx = match m.field_index(f.number) {
            Some(i) => i as u16,
            None => u16::MAX,
        };
        if idx < last {
            sorted = false;
        }
        last = idx;
        w.scratch.push((idx, f));
    }
    let end = w.scratch.len();
    if !sorted {
        w.scratch[start..end].sort_by_key(|(i, _)| *i);
    }
    Ok((start, end))
}

#[allow(clippy::too_many_arguments)]
fn walk_fields<'a>(
    w: &mut Walker<'a>,
    msg: u32,
    bytes: &'a [u8],
    base: usize,
    first: &mut bool,
    depth: usize,
    resource_version: Option<i64>,
) -> Result<(), DecodeError> {
    if depth > MAX_DEPTH {
        return Err(depth_error(base, None));
    }
    let plan = w.plan;
    let m = &plan.messages[msg as usize];
    if resource_version.is_none() {
        let mark = (w.out.len(), *first, w.unknown);
        if stream_fields(w, m, bytes, base, first, depth)? {
            return Ok(());
        }
        w.out.truncate(mark.0);
        *first = mark.1;
        w.unknown = mark.2;
    }
    let (start, end) = collect(w, m, bytes, base)?;
    let mut i = start;
    let mut unknown_start = None;
    let mut rv_written = false;
    while i < end {
        let (idx, f) = w.scratch[i];
        if idx == u16::MAX {
            unknown_start = Some(i);
            break;
        }
        let fp = &m.fields[idx as usize];
        // The run of entries for this field.
        let mut j = i + 1;
        while j < end && w.scratch[j].0 == idx {
            j += 1;
        }
        if resource_version.is_some() && depth == 0 && &*fp.name == "metadata" {
            // Top-level metadata: emit it with the resourceVersion filled in.
            let Ty::Message(mm) = fp.ty else {
                unreachable!("metadata is a message")
            };
            let payload = f.expect_len()?;
            field_key(w, first, fp);
            w.out.push('{');
            let mut inner_first = true;
            walk_meta(
                w,
                mm,
                payload,
                f.value_offset,
                &mut inner_first,
                resource_version,
            )?;
            w.out.push('}');
            rv_written = true;
        } else {
            emit_field(w, fp, i, j, first, depth)?;
        }
        i = j;
    }
    if resource_version.is_some() && depth == 0 && !rv_written {
        key(w, first, "metadata");
        w.out.push_str("{\"resourceVersion\":");
        push_str(&mut w.out, &resource_version.unwrap_or(0).to_string());
        w.out.push('}');
    }
    if let Some(u) = unknown_start {
        let fields: Vec<Field<'a>> = w.scratch[u..end].iter().map(|(_, f)| *f).collect();
        emit_unknown(w, first, &fields);
    }
    w.scratch.truncate(start);
    Ok(())
}

/// ObjectMeta with `resourceVersion` replaced by the key's mod_revision.
fn walk_meta<'a>(
    w: &mut Walker<'a>,
    msg: u32,
    bytes: &'a [u8],
    base: usize,
    first: &mut bool,
    resource_version: Option<i64>,
) -> Result<(), DecodeError> {
    let plan = w.plan;
    let m = &plan.messages[msg as usize];
    let rv_index = m.fields.iter().position(|f| &*f.name == "resourceVersion");
    let (start, end) = collect(w, m, bytes, base)?;
    let mut i = start;
    let mut done = false;
    let mut unknown_start = None;
    while i < end {
        let (idx, _) = w.scratch[i];
        if idx == u16::MAX {
            unknown_start = Some(i);
            break;
        }
        let mut j = i + 1;
        while j < end && w.scratch[j].0 == idx {
            j += 1;
        }
        let fp = &m.fields[idx as usize];
        if Some(idx as usize) == rv_index {
            write_rv(w, first, resource_version);
            done = true;
        } else {
            if !done && rv_index.is_some_and(|r| (idx as usize) > r) {
                write_rv(w, first, resource_version);
                done = true;
            }
            emit_field(w, fp, i, j, first, 1)?;
        }
        i = j;
    }
    if !done {
        write_rv(w, first, resource_version);
    }
    if let Some(u) = unknown_start {
        let fields: Vec<Field<'a>> = w.scratch[u..end].iter().map(|(_, f)| *f).collect();
        emit_unknown(w, first, &fields);
    }
    w.scratch.truncate(start);
    Ok(())
}

fn write_rv(w: &mut Walker<'_>, first: &mut bool, rv: Option<i64>) {
    if let Some(rv) = rv {
        key(w, first, "resourceVersion");
        push_str(&mut w.out, &rv.to_string());
    }
}

#[inline]
fn key(w: &mut Walker<'_>, first: &mut bool, k: &str) {
    if !*first {
        w.out.push(',');
    }
    *first = false;
    push_str(&mut w.out, k);
    w.out.push(':');
}

/// As [`key`], with the field's precomputed `"name":`.
#[inline]
fn field_key(w: &mut Walker<'_>, first: &mut bool, fp: &FieldPlan) {
    if !*first {
        w.out.push(',');
    }
    *first = false;
    w.out.push_str(&fp.key_json);
}

/// Emits one field from its run of wire entries `scratch[i..j]`.
fn emit_field<'a>(
    w: &mut Walker<'a>,
    fp: &FieldPlan,
    i: usize,
    j: usize,
    first: &mut bool,
    depth: usize,
) -> Result<(), DecodeError> {
    if fp.map_key.is_some() || fp.repeated {
        field_key(w, first, fp);
        w.out.push(if fp.map_key.is_some() { '{' } else { '[' });
        let mut n = 0usize;
        for k in i..j {
            let (_, f) = w.scratch[k];
            element(w, fp, &f, &mut n, depth)?;
        }
        w.out.push(if fp.map_key.is_some() { '}' } else { ']' });
        return Ok(());
    }
    // Singular: the last entry wins (protobuf merge semantics for scalars; messages merge,
    // which Kubernetes' serializer never produces, so last-wins is shown).
    let (_, f) = w.scratch[j - 1];
    singular(w, fp, &f, first, depth)
}

/// One element of a repeated or map field (`n` counts the elements written, for commas):
/// a map entry, an unpacked element, or every scalar of a packed payload.
#[inline]
fn element<'a>(
    w: &mut Walker<'a>,
    fp: &FieldPlan,
    f: &Field<'a>,
    n: &mut usize,
    depth: usize,
) -> Result<(), DecodeError> {
    if let Some(kt) = fp.map_key {
        if *n > 0 {
            w.out.push(',');
        }
        *n += 1;
        return map_entry(w, fp, kt, f.expect_len()?, f.value_offset, depth);
    }
    match (fp.ty, f.value) {
        (Ty::Scalar(s), WireValue::Len(b)) if packable(s) => {
            let mut r = PackedReader::new(b, f.value_offset, s, f.number);
            while let Some(v) = r.next() {
                if *n > 0 {
                    w.out.push(',');
                }
                *n += 1;
                scalar_json(&mut w.out, s, v?);
            }
            Ok(())
        }
        _ => {
            if *n > 0 {
                w.out.push(',');
            }
            *n += 1;
            value(w, fp.ty, f, depth)
        }
    }
}

/// A singular field: omitted when `+optional` and empty, flattened when inline.
#[inline]
fn singular<'a>(
    w: &mut Walker<'a>,
    fp: &FieldPlan,
    f: &Field<'a>,
    first: &mut bool,
    depth: usize,
) -> Result<(), DecodeError> {
    match fp.ty {
        Ty::Scalar(s) => {
            let v = scalar_of(s, f)?;
            if fp.omitempty && v.is_empty() {
                return Ok(());
            }
            field_key(w, first, fp);
            scalar_json(&mut w.out, s, v);
        }
        Ty::Message(m) => {
            let payload = f.expect_len()?;
            if fp.inline && w.plan.messages[m as usize].special == Special::None {
                // Flatten into the current object.
                return walk_fields(w, m, payload, f.value_offset, first, depth + 1, None);
            }
            field_key(w, first, fp);
            message(w, m, payload, f.value_offset, depth + 1)?;
        }
    }
    Ok(())
}

/// The fast path of [`walk_fields`]: fields emitted in wire order as they are read, with no
/// collecting pass. Kubernetes' serializer writes each field once and the entries of a
/// repeated or map field together; when a message breaks that (a repeated field split up, a
/// singular field twice, more than 64 fields) this returns `Ok(false)` having written
/// partial output, and the caller rewinds and takes the collecting path.
fn stream_fields<'a>(
    w: &mut Walker<'a>,
    m: &MessagePlan,
    bytes: &'a [u8],
    base: usize,
    first: &mut bool,
    depth: usize,
) -> Result<bool, DecodeError> {
    let mut r = Reader::new(bytes, base);
    let mut seen = 0u64;
    // The repeated/map field whose array/object is open, and its element count.
    let mut open: Option<usize> = None;
    let mut n = 0usize;
    let mut unknown: Vec<Field<'a>> = Vec::new();
    while let Some(f) = r.next_field() {
        let f = f?;
        let Some(idx) = m.field_index(f.number) else {
            unknown.push(f);
            continue;
        };
        let fp = &m.fields[idx];
        if open == Some(idx) {
            element(w, fp, &f, &mut n, depth)?;
            continue;
        }
        if let Some(o) = open.take() {
            w.out.push(if m.fields[o].map_key.is_some() {
                '}'
            } else {
                ']'
            });
        }
        if idx >= 64 || seen & (1 << idx) != 0 {
            return Ok(false);
        }
        seen |= 1 << idx;
        if fp.map_key.is_some() || fp.repeated {
            field_key(w, first, fp);
            w.out.push(if fp.map_key.is_some() { '{' } else { '[' });
            n = 0;
            element(w, fp, &f, &mut n, depth)?;
            open = Some(idx);
        } else {
            singular(w, fp, &f, first, depth)?;
        }
    }
    if let Some(o) = open {
        w.out.push(if m.fields[o].map_key.is_some() {
            '}'
        } else {
            ']'
        });
    }
    if !unknown.is_empty() {
        emit_unknown(w, first, &unknown);
    }
    Ok(true)
}

/// Writes fields the schema does not know under [`UNKNOWN_FIELDS_KEY`] and counts them.
fn emit_unknown(w: &mut Walker<'_>, first: &mut bool, fields: &[Field<'_>]) {
    key(w, first, UNKNOWN_FIELDS_KEY);
    w.out.push('[');
    for (k, f) in fields.iter().enumerate() {
        if k > 0 {
            w.out.push(',');
        }
        generic_field(&mut w.out, f, 0);
    }
    w.out.push(']');
    w.unknown += fields.len();
}

fn map_entry<'a>(
    w: &mut Walker<'a>,
    fp: &FieldPlan,
    kt: Scalar,
    entry: &'a [u8],
    base: usize,
    depth: usize,
) -> Result<(), DecodeError> {
    let mut k: Option<Field<'a>> = None;
    let mut v: Option<Field<'a>> = None;
    let mut r = Reader::new(entry, base);
    while let Some(f) = r.next_field() {
        let f = f?;
        match f.number {
            1 => k = Some(f),
            2 => v = Some(f),
            _ => {}
        }
    }
    // JSON object keys are strings: Go's encoding/json writes integer keys in decimal.
    match k.map(|f| scalar_of(kt, &f)).transpose()? {
        Some(ScalarValue::Bytes(b)) => push_bytes_as_str(&mut w.out, b),
        Some(other) => {
            // Go's encoding/json writes integer map keys as decimal strings.
            let mut s = String::new();
            scalar_json(&mut s, kt, other);
            push_str(&mut w.out, s.trim_matches('"'));
        }
        None => w.out.push_str("\"\""),
    }
    w.out.push(':');
    match v {
        Some(f) => value(w, fp.ty, &f, depth),
        None => {
            // Absent value = the type's zero value.
            match fp.ty {
                Ty::Scalar(Scalar::String) | Ty::Scalar(Scalar::Bytes) => w.out.push_str("\"\""),
                Ty::Scalar(Scalar::Bool) => w.out.push_str("false"),
                Ty::Scalar(_) => w.out.push('0'),
                Ty::Message(m) => message(w, m, &[], base, depth + 1)?,
            }
            Ok(())
        }
    }
}

/// One element value (no key).
fn value<'a>(w: &mut Walker<'a>, ty: Ty, f: &Field<'a>, depth: usize) -> Result<(), DecodeError> {
    match ty {
        Ty::Scalar(s) => {
            let v = scalar_of(s, f)?;
            scalar_json(&mut w.out, s, v);
            Ok(())
        }
        Ty::Message(m) => {
            let payload = f.expect_len()?;
            message(w, m, payload, f.value_offset, depth + 1)
        }
    }
}

/// A whole message value, honouring its special JSON form.
fn message<'a>(
    w: &mut Walker<'a>,
    m: u32,
    bytes: &'a [u8],
    base: usize,
    depth: usize,
) -> Result<(), DecodeError> {
    if depth > MAX_DEPTH {
        return Err(depth_error(base, None));
    }
    let plan = w.plan;
    let mp = &plan.messages[m as usize];
    match mp.special {
        Special::None => {
            w.out.push('{');
            let mut first = true;
            walk_fields(w, m, bytes, base, &mut first, depth, None)?;
            w.out.push('}');
        }
        Special::Time | Special::MicroTime => {
            let (mut secs, mut nanos) = (0i64, 0i64);
            let mut r = Reader::new(bytes, base);
            while let Some(f) = r.next_field() {
                let f = f?;
                match f.number {
                    1 => secs = f.expect_varint()? as i64,
                    2 => nanos = i64::from(f.expect_varint()? as i32),
                    _ => {}
                }
            }
            if secs == 0 && nanos == 0 {
                w.out.push_str("null");
            } else {
                let micros = (mp.special == Special::MicroTime).then_some(nanos / 1000);
                push_rfc3339(&mut w.out, secs, micros);
            }
        }
        Special::Duration => {
            let mut nanos = 0i64;
            let mut r = Reader::new(bytes, base);
            while let Some(f) = r.next_field() {
                let f = f?;
                if f.number == 1 {
                    nanos = f.expect_varint()? as i64;
                }
            }
            push_str(&mut w.out, &go_duration(nanos));
        }
        Special::Quantity => {
            let mut s: &[u8] = b"0";
            let mut r = Reader::new(bytes, base);
            while let Some(f) = r.next_field() {
                let f = f?;
                if f.number == 1 {
                    let b = f.expect_len()?;
                    if !b.is_empty() {
                        s = b;
                    }
                }
            }
            push_str(&mut w.out, &String::from_utf8_lossy(s));
        }
        Special::IntOrString => {
            let (mut ty, mut int_val, mut str_val) = (0u64, 0i64, &[][..]);
            let mut r = Reader::new(bytes, base);
            while let Some(f) = r.next_field() {
                let f = f?;
                match f.number {
                    1 => ty = f.expect_varint()?,
                    2 => int_val = i64::from(f.expect_varint()? as i32),
                    3 => str_val = f.expect_len()?,
                    _ => {}
                }
            }
            if ty == 1 {
                push_str(&mut w.out, &String::from_utf8_lossy(str_val));
            } else {
                w.out.push_str(&int_val.to_string());
            }
        }
        Special::RawJson => {
            let mut raw: &[u8] = &[];
            let mut r = Reader::new(bytes, base);
            while let Some(f) = r.next_field() {
                let f = f?;
                if f.number == 1 {
                    raw = f.expect_len()?;
                }
            }
            raw_json(&mut w.out, raw);
        }
        Special::Items => {
            let f = &mp.fields[0];
            let (start, end) = collect(w, mp, bytes, base)?;
            w.out.push('[');
            let mut n = 0;
            for k in start..end {
                let (idx, fe) = w.scratch[k];
                if idx != 0 {
                    continue;
                }
                if n > 0 {
                    w.out.push(',');
                }
                n += 1;
                value(w, f.ty, &fe, depth)?;
            }
            w.out.push(']');
            w.scratch.truncate(start);
        }
        Special::SchemaOrArray | Special::SchemaOrBool | Special::SchemaOrStringArray => {
            schema_union(w, mp, bytes, base, depth)?;
        }
    }
    Ok(())
}

/// apiextensions' JSONSchemaProps unions (their MarshalJSON in apiextensions v1/v1beta1).
fn schema_union<'a>(
    w: &mut Walker<'a>,
    mp: &MessagePlan,
    bytes: &'a [u8],
    base: usize,
    depth: usize,
) -> Result<(), DecodeError> {
    let schema_field = mp.fields.iter().find(|f| &*f.name == "schema");
    let list_field = mp.fields.iter().find(|f| f.repeated);
    let (start, end) = collect(w, mp, bytes, base)?;
    let mut schema: Option<Field<'a>> = None;
    let mut allows = false;
    let mut list = Vec::new();
    for k in start..end {
        let (idx, f) = w.scratch[k];
        if idx == u16::MAX {
            continue;
        }
        let fp = &mp.fields[idx as usize];
        if &*fp.name == "schema" {
            schema = Some(f);
        } else if fp.repeated {
            list.push(f);
        } else if &*fp.name == "allows" {
            allows = f.expect_varint()? != 0;
        }
    }
    w.scratch.truncate(start);
    let emit_schema = |w: &mut Walker<'a>, f: Field<'a>| -> Result<(), DecodeError> {
        let Some(Ty::Message(m)) = schema_field.map(|s| s.ty) else {
            w.out.push_str("null");
            return Ok(());
        };
        message(w, m, f.expect_len()?, f.value_offset, depth + 1)
    };
    match mp.special {
        Special::SchemaOrBool => match schema {
            Some(f) => emit_schema(w, f)?,
            None => w.out.push_str(if allows { "true" } else { "false" }),
        },
        _ => {
            if !list.is_empty() {
                let ty = list_field.map_or(Ty::Scalar(Scalar::String), |l| l.ty);
                w.out.push('[');
                for (n, f) in list.iter().enumerate() {
                    if n > 0 {
                        w.out.push(',');
                    }
                    value(w, ty, f, depth)?;
                }
                w.out.push(']');
            } else if let Some(f) = schema {
                emit_schema(w, f)?;
            } else {
                w.out.push_str("null");
            }
        }
    }
    Ok(())
}

/// A field without a schema, as JSON: `{"field": N, "wireType": "len", "value": …}` where a
/// len payload becomes a nested list of fields when it frames as a message (down to
/// [`GENERIC_MAX_DEPTH`] levels; `depth` counts from 0), a string when it is printable UTF-8,
/// else base64.
pub fn generic_field(out: &mut String, f: &Field<'_>, depth: usize) {
    out.push_str("{\"field\":");
    out.push_str(&f.number.to_string());
    out.push_str(",\"wireType\":");
    push_str(out, f.wire_type().name());
    out.push_str(",\"value\":");
    match f.value {
        WireValue::Varint(v) | WireValue::Fixed64(v) => out.push_str(&v.to_string()),
        WireValue::Fixed32(v) => out.push_str(&v.to_string()),
        WireValue::Len(b) => generic_len(out, b, f.value_offset, depth),
    }
    out.push('}');
}

/// A len payload without a schema (see [`generic_field`]).
pub fn generic_len(out: &mut String, b: &[u8], base: usize, depth: usize) {
    let printable = std::str::from_utf8(b)
        .ok()
        .filter(|s| !s.is_empty() && s.chars().all(|c| !c.is_control() || c == '\n' || c == '\t'));
    if let Some(s) = printable {
        push_str(out, s);
        return;
    }
    if depth < GENERIC_MAX_DEPTH && !b.is_empty() && super::protobuf_wire::frames_as_message(b) {
        out.push('[');
        let mut r = Reader::new(b, base);
        let mut n = 0;
        while let Some(Ok(f)) = r.next_field() {
            if n > 0 {
                out.push(',');
            }
            n += 1;
            generic_field(out, &f, depth + 1);
        }
        out.push(']');
        return;
    }
    out.push('"');
    base64::engine::general_purpose::STANDARD.encode_string(b, out);
    out.push('"');
}
