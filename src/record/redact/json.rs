//! Case 4 of Secret redaction: a Secret stored as JSON (`--storage-media-type=application/json`)
//! is parsed, its secret strings replaced by runs of `*`, re-serialised compactly and padded
//! with spaces to the stored length. Enters as the stored bytes, leaves as the rewritten bytes
//! or the [`FillReason`] for filling the value whole.

use serde_json::Value;

use super::{FillReason, LAST_APPLIED_ANNOTATION};

/// Escaped JSON secrets at least this long are searched for in the JSON output as a guard
/// against redaction bugs. Shorter ones would match ordinary metadata text by coincidence.
const GUARD_MIN_LEN: usize = 8;

/// Case 4. The top level must be an object with `apiVersion` `v1` and `kind` `Secret` (the
/// storage JSON serializer always writes both). `data` values (base64 text in JSON) become `*`
/// runs of the same length that keep the trailing `=` padding, so the replay computes the same
/// decoded size; `stringData` values and the last-applied annotation become `*` runs as long as
/// their UTF-8 bytes. Top-level fields a `v1` Secret does not have get every string inside
/// starred. Object keys are kept; serde_json writes them sorted. A stored value ending in `\n`
/// (Go's `json.Encoder` adds one) keeps it as its last byte.
pub(super) fn redact_json(value: &[u8]) -> Result<Vec<u8>, FillReason> {
    let mut v: Value = serde_json::from_slice(value).map_err(|_| FillReason::Malformed)?;
    let Value::Object(obj) = &mut v else {
        return Err(FillReason::Malformed);
    };
    if obj.get("apiVersion").and_then(Value::as_str) != Some("v1")
        || obj.get("kind").and_then(Value::as_str) != Some("Secret")
    {
        return Err(FillReason::NotSecret);
    }
    let mut guard: Vec<String> = Vec::new();
    for (key, field) in obj.iter_mut() {
        match key.as_str() {
            "apiVersion" | "kind" | "type" | "immutable" => {}
            "data" => redact_json_map(field, true, &mut guard)?,
            "stringData" => redact_json_map(field, false, &mut guard)?,
            "metadata" => redact_json_metadata(field, &mut guard)?,
            _ => star_strings(field),
        }
    }
    let mut out = serde_json::to_vec(&v).map_err(|_| FillReason::Malformed)?;
    let compact_len = out.len();
    if compact_len > value.len() {
        return Err(FillReason::JsonLonger);
    }
    if guard.iter().any(|s| contains(&out, s.as_bytes())) {
        return Err(FillReason::LeakGuard);
    }
    out.resize(value.len(), b' ');
    if value.ends_with(b"\n") && compact_len < value.len() {
        if let Some(last) = out.last_mut() {
            *last = b'\n';
        }
    }
    Ok(out)
}

/// `data` / `stringData`: absent/null, or an object of string (or null) values.
fn redact_json_map(
    field: &mut Value,
    is_data: bool,
    guard: &mut Vec<String>,
) -> Result<(), FillReason> {
    match field {
        Value::Null => Ok(()),
        Value::Object(map) => {
            for x in map.values_mut() {
                match x {
                    Value::Null => {}
                    Value::String(s) => {
                        remember(s, guard);
                        *s = stars(s, is_data);
                    }
                    _ => return Err(FillReason::Malformed),
                }
            }
            Ok(())
        }
        _ => Err(FillReason::Malformed),
    }
}

/// `metadata.annotations[LAST_APPLIED_ANNOTATION]` becomes stars; the rest is kept.
fn redact_json_metadata(field: &mut Value, guard: &mut Vec<String>) -> Result<(), FillReason> {
    let meta = match field {
        Value::Null => return Ok(()),
        Value::Object(meta) => meta,
        _ => return Err(FillReason::Malformed),
    };
    let annotations = match meta.get_mut("annotations") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(a)) => a,
        Some(_) => return Err(FillReason::Malformed),
    };
    match annotations.get_mut(LAST_APPLIED_ANNOTATION) {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(s)) => {
            remember(s, guard);
            *s = stars(s, false);
            Ok(())
        }
        Some(_) => Err(FillReason::Malformed),
    }
}

/// Keeps the JSON-escaped form of a secret (as serde_json will write it) for the leak guard.
fn remember(s: &str, guard: &mut Vec<String>) {
    if let Ok(quoted) = serde_json::to_string(s) {
        let inner = quoted
            .strip_prefix('"')
            .and_then(|q| q.strip_suffix('"'))
            .unwrap_or_default();
        if inner.len() >= GUARD_MIN_LEN {
            guard.push(inner.to_owned());
        }
    }
}

/// `s.len()` bytes: `*`, then, when `keep_padding`, the same up to two trailing `=`.
pub(super) fn stars(s: &str, keep_padding: bool) -> String {
    let pad = if keep_padding {
        s.bytes().rev().take(2).take_while(|&b| b == b'=').count()
    } else {
        0
    };
    let mut out = String::with_capacity(s.len());
    out.extend(std::iter::repeat_n('*', s.len() - pad));
    out.extend(std::iter::repeat_n('=', pad));
    out
}

/// Every string inside `v` becomes stars (keys are kept). Depth is bounded by serde_json's
/// recursion limit on parse (128).
fn star_strings(v: &mut Value) {
    match v {
        Value::String(s) => *s = stars(s, false),
        Value::Array(a) => a.iter_mut().for_each(star_strings),
        Value::Object(m) => m.values_mut().for_each(star_strings),
        _ => {}
    }
}

/// Substring search; `needle` is non-empty in every use.
pub(super) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    let mut from = 0;
    while let Some(p) = hay
        .get(from..)
        .and_then(|h| h.iter().position(|&b| b == first))
    {
        let at = from + p;
        if hay.get(at + 1..at + 1 + rest.len()) == Some(rest) {
            return true;
        }
        from = at + 1;
    }
    false
}
