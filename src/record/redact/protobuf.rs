//! Case 2 of Secret redaction: a Secret stored as protobuf (`k8s\0` magic then a
//! `runtime.Unknown` envelope). Walks envelope → Secret → map entries and ObjectMeta's
//! annotations with the decoder's wire reader ([`crate::decode::protobuf_wire::Reader`]) and overwrites
//! secret payloads in place, so every tag and length stays as it was. Enters as the stored
//! bytes, leaves as the rewritten copy (`None` when nothing needed rewriting) or the
//! [`FillReason`] for filling the value whole.
//!
//! The reader accepts exactly what this module's own reader accepted before it was shared:
//! varints of at most 10 bytes (the tenth at most 1, non-canonical encodings allowed), field
//! numbers 1 ..= 2^29-1, wire types 0, 1, 2 and 5, and lengths that fit what is left; it stops
//! at the first error. Every error it reports, whatever its kind, is
//! [`FillReason::Malformed`] here, so the value is filled whole.

use crate::decode::protobuf_wire::{Field, Reader, WireType, WireValue};

use super::{FillReason, FILL, LAST_APPLIED_ANNOTATION, MAGIC};

/// The fields of `payload`, whose first byte sits at absolute offset `base` in the stored
/// value; any framing error is [`FillReason::Malformed`].
fn fields(payload: &[u8], base: usize) -> impl Iterator<Item = Result<Field<'_>, FillReason>> {
    Reader::new(payload, base).map(|f| f.map_err(|_| FillReason::Malformed))
}

/// The fields inside a length-delimited field's payload (none for other wire types, which
/// no caller passes).
fn within<'a>(f: &Field<'a>) -> impl Iterator<Item = Result<Field<'a>, FillReason>> {
    let payload = match f.value {
        WireValue::Len(b) => b,
        _ => &[],
    };
    fields(payload, f.value_offset)
}

/// A length-delimited field's payload (empty for other wire types).
fn payload<'a>(f: &Field<'a>) -> &'a [u8] {
    match f.value {
        WireValue::Len(b) => b,
        _ => &[],
    }
}

/// The output buffer, copied from the input on the first fill.
struct Patch<'a> {
    src: &'a [u8],
    out: Option<Vec<u8>>,
}

impl Patch<'_> {
    /// Overwrites the field's payload (`value_offset..end`, absolute in the stored value).
    fn fill(&mut self, f: &Field<'_>) {
        if f.value_offset >= f.end {
            return;
        }
        let src = self.src;
        let out = self.out.get_or_insert_with(|| src.to_vec());
        if let Some(bytes) = out.get_mut(f.value_offset..f.end) {
            bytes.fill(FILL);
        }
    }
}

/// Case 2. `Ok(None)`: a Secret with nothing to redact.
pub(super) fn redact_protobuf(value: &[u8]) -> Result<Option<Vec<u8>>, FillReason> {
    match redact_envelope(value, value.len()) {
        Err(FillReason::Malformed) if value.ends_with(b"\n") => {
            redact_envelope(value, value.len().saturating_sub(1))
        }
        r => r,
    }
}

/// Parses the `runtime.Unknown` envelope in `value[4..end]` (k8s.io/apimachinery
/// `pkg/runtime/generated.proto`: 1 typeMeta {1 apiVersion, 2 kind}, 2 raw, 3 contentEncoding,
/// 4 contentType) and redacts the Secret in `raw`. Storage writes exactly one typeMeta and one
/// raw and leaves 3 and 4 empty; anything else is `Malformed`.
fn redact_envelope(value: &[u8], end: usize) -> Result<Option<Vec<u8>>, FillReason> {
    let body = value.get(MAGIC.len()..end).unwrap_or_default();
    let (mut type_meta, mut raw) = (None, None);
    for f in fields(body, MAGIC.len()) {
        let f = f?;
        match (f.number, f.value) {
            (1, WireValue::Len(_)) if type_meta.is_none() => type_meta = Some(f),
            (2, WireValue::Len(_)) if raw.is_none() => raw = Some(f),
            (3 | 4, WireValue::Len([])) => {}
            _ => return Err(FillReason::Malformed),
        }
    }
    let (Some(type_meta), Some(raw)) = (type_meta, raw) else {
        return Err(FillReason::Malformed);
    };
    let (mut api_version, mut kind): (&[u8], &[u8]) = (b"", b"");
    for f in within(&type_meta) {
        let f = f?;
        match (f.number, f.value) {
            (1, WireValue::Len(b)) => api_version = b,
            (2, WireValue::Len(b)) => kind = b,
            _ => return Err(FillReason::Malformed),
        }
    }
    if api_version != b"v1" || kind != b"Secret" {
        return Err(FillReason::NotSecret);
    }
    let mut patch = Patch {
        src: value,
        out: None,
    };
    redact_secret_message(&raw, &mut patch)?;
    Ok(patch.out)
}

/// The core/v1 `Secret` message (k8s.io/api `core/v1/generated.proto`): 1 metadata
/// (ObjectMeta), 2 data (`map<string, bytes>`), 3 type (string), 4 stringData
/// (`map<string, string>`), 5 immutable (bool). A length-delimited field with a higher number
/// (one added after this was written) is overwritten too: it might carry data.
fn redact_secret_message(raw: &Field<'_>, patch: &mut Patch<'_>) -> Result<(), FillReason> {
    for f in within(raw) {
        let f = f?;
        match (f.number, f.wire_type()) {
            (1, WireType::Len) => redact_object_meta(&f, patch)?,
            (2 | 4, WireType::Len) => redact_map_entry(&f, patch)?,
            (3, WireType::Len) | (5, WireType::Varint) => {}
            (1..=5, _) => return Err(FillReason::Malformed),
            (_, WireType::Len) => patch.fill(&f),
            _ => {}
        }
    }
    Ok(())
}

/// A protobuf map entry is a message {1 key, 2 value}. Keeps the key, overwrites every other
/// length-delimited payload (the value; a repeated value field too: the last one wins on
/// decode, and all are overwritten).
fn redact_map_entry(entry: &Field<'_>, patch: &mut Patch<'_>) -> Result<(), FillReason> {
    for g in within(entry) {
        let g = g?;
        match (g.number, g.wire_type()) {
            (1, WireType::Len) => {}
            (_, WireType::Len) => patch.fill(&g),
            _ => return Err(FillReason::Malformed),
        }
    }
    Ok(())
}

/// ObjectMeta (k8s.io/apimachinery `pkg/apis/meta/v1/generated.proto`): only field 12,
/// annotations (`map<string, string>`), can carry Secret data, in the
/// [`LAST_APPLIED_ANNOTATION`] entry, whose value is overwritten. Everything else is kept,
/// managedFields (17) included: their `fieldsV1` lists field names (`f:data`, `f:tls.crt`),
/// never values.
fn redact_object_meta(meta: &Field<'_>, patch: &mut Patch<'_>) -> Result<(), FillReason> {
    for f in within(meta) {
        let f = f?;
        if f.number != 12 {
            continue;
        }
        if f.wire_type() != WireType::Len {
            return Err(FillReason::Malformed);
        }
        let mut last_applied = false;
        for g in within(&f) {
            let g = g?;
            match (g.number, g.wire_type()) {
                (1, WireType::Len) => {
                    last_applied |= payload(&g) == LAST_APPLIED_ANNOTATION.as_bytes();
                }
                (_, WireType::Len) => {}
                _ => return Err(FillReason::Malformed),
            }
        }
        if last_applied {
            redact_map_entry(&f, patch)?;
        }
    }
    Ok(())
}
