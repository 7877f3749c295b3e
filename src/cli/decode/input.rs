//! The input of `regscope decode` read whole: which of its three forms it is (etcdctl
//! JSON, hex text, the value bytes) and the values in it ([`parse_input`]). Large etcdctl
//! output is streamed instead (`super::write_streamed`).

use serde_json::Value;

use super::etcdctl_json;
use super::StoredKv;

/// The form the input was found in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputForm {
    /// `etcdctl get -w json` output: `{"header":…,"kvs":[…],"count":N}`.
    EtcdctlJson,
    /// Hex digits and whitespace, optional `0x` prefix.
    Hex,
    /// The value bytes themselves.
    Raw,
}

impl InputForm {
    pub(super) fn describe(self) -> &'static str {
        match self {
            InputForm::EtcdctlJson => "etcdctl get -w json output",
            InputForm::Hex => "hex text",
            InputForm::Raw => "raw value bytes",
        }
    }
}

/// The parsed input: its form and the values in it (one for hex and raw input).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    pub form: InputForm,
    pub kvs: Vec<StoredKv>,
    /// etcdctl's `count` (all keys matching the range, which exceeds `kvs.len()` when
    /// etcdctl was given `--limit`).
    pub count: Option<i64>,
}

/// Detects the input form and extracts the values. `key` is the `--key` flag, used for hex
/// and raw input (etcdctl JSON names its own keys).
///
/// Errors (one line each): empty input (`no input`), etcdctl JSON with a field of the wrong
/// type or shape (naming the field, e.g. `kvs[0].key: expected a base64 string, found 1`),
/// hex text with an odd number of digits.
pub fn parse_input(bytes: &[u8], key: &[u8]) -> Result<Input, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(
            "no input (give a FILE, or pipe a value or `etcdctl get -w json` into stdin)".into(),
        );
    }
    if let Some(input) = parse_etcdctl_json(bytes)? {
        return Ok(input);
    }
    let one = |form, value| Input {
        form,
        kvs: vec![StoredKv {
            key: key.to_vec(),
            value,
            ..Default::default()
        }],
        count: None,
    };
    if let Some(value) = parse_hex(bytes)? {
        return Ok(one(InputForm::Hex, value));
    }
    Ok(one(InputForm::Raw, bytes.to_vec()))
}

/// Hex text: only hex digits and whitespace after an optional `0x`. `Ok(None)` when the
/// bytes are not hex text; an error for hex text with an odd digit count.
pub(super) fn parse_hex(bytes: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let trimmed = bytes.trim_ascii();
    let body = trimmed
        .strip_prefix(b"0x")
        .or_else(|| trimmed.strip_prefix(b"0X"))
        .unwrap_or(trimmed);
    if body.is_empty()
        || !body
            .iter()
            .all(|b| b.is_ascii_hexdigit() || b.is_ascii_whitespace())
    {
        return Ok(None);
    }
    let digits: Vec<u8> = body.iter().copied().filter(u8::is_ascii_hexdigit).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(format!(
            "the input looks like hex text but has an odd number of digits ({})",
            digits.len()
        ));
    }
    let nibble = |d: u8| (d as char).to_digit(16).unwrap_or(0) as u8;
    Ok(Some(
        digits
            .chunks(2)
            .map(|p| (nibble(p[0]) << 4) | nibble(p[1]))
            .collect(),
    ))
}

/// Short description of a JSON value for error messages.
/// True for a JSON object shaped like etcdctl's range response rather than a stored object:
/// it has `kvs` or `header`, and no `kind`/`apiVersion`.
fn is_etcdctl_shape(o: &serde_json::Map<String, Value>) -> bool {
    (o.contains_key("kvs") || o.contains_key("header"))
        && !o.contains_key("kind")
        && !o.contains_key("apiVersion")
}

/// etcdctl JSON: `Ok(None)` when the bytes are not etcdctl's output (then they are a value),
/// an error naming the field when they are but a field is wrong.
fn parse_etcdctl_json(bytes: &[u8]) -> Result<Option<Input>, String> {
    let start = bytes.trim_ascii_start();
    if !start.starts_with(b"{") {
        return Ok(None);
    }
    // etcdctl writes `header` (or `kvs`) first; an object with other members first is
    // etcdctl's output only when shaped like it, else it is a stored JSON value (whose
    // own parse errors the decoder reports).
    if !etcdctl_json::looks_like_etcdctl(start) {
        match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(o)) if is_etcdctl_shape(&o) => {}
            _ => return Ok(None),
        }
    }
    let mut kvs = Vec::new();
    let end = etcdctl_json::stream_slice(bytes, &mut |kv| {
        kvs.push(kv);
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    Ok(Some(Input {
        form: InputForm::EtcdctlJson,
        kvs,
        count: end.count,
    }))
}
