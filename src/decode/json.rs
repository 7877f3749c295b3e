//! JSON-stored objects: custom resources, and every kind in clusters with JSON storage.
//!
//! kube-apiserver's JSON serializer writes one object per value followed by a newline;
//! leading and trailing whitespace is accepted. [`summarize`] deserializes only the fields it
//! needs, borrowing strings from the input where they carry no escapes and skipping the rest
//! without building values; [`redact_secret`] hides Secret values in a parsed object.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};
use serde_json::Value;

use super::ObjectSummary;

/// A string borrowed from the input when possible (no escapes), owned otherwise.
struct BStr<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for BStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(BStr(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(BStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(BStr(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

fn owned(s: Option<BStr<'_>>) -> Option<String> {
    s.map(|b| b.0.into_owned())
}

#[derive(serde::Deserialize)]
struct Head<'a> {
    #[serde(rename = "apiVersion", borrow, default)]
    api_version: Option<BStr<'a>>,
    #[serde(borrow, default)]
    kind: Option<BStr<'a>>,
    #[serde(borrow, default)]
    metadata: Option<Meta<'a>>,
}

#[derive(serde::Deserialize)]
struct Meta<'a> {
    #[serde(borrow, default)]
    name: Option<BStr<'a>>,
    #[serde(borrow, default)]
    namespace: Option<BStr<'a>>,
    #[serde(borrow, default)]
    uid: Option<BStr<'a>>,
    #[serde(rename = "creationTimestamp", borrow, default)]
    creation: Option<BStr<'a>>,
    #[serde(rename = "managedFields", borrow, default)]
    managed: Option<NewestJson<'a>>,
}

#[derive(serde::Deserialize)]
struct Entry<'a> {
    #[serde(borrow, default)]
    manager: Option<BStr<'a>>,
    #[serde(borrow, default)]
    operation: Option<BStr<'a>>,
    #[serde(borrow, default)]
    subresource: Option<BStr<'a>>,
    #[serde(borrow, default)]
    time: Option<BStr<'a>>,
}

/// Only `metadata.managedFields`, for [`last_writer`].
#[derive(serde::Deserialize)]
struct WriterHead<'a> {
    #[serde(borrow, default)]
    metadata: Option<WriterMeta<'a>>,
}

#[derive(serde::Deserialize)]
struct WriterMeta<'a> {
    #[serde(rename = "managedFields", borrow, default)]
    managed: Option<NewestJson<'a>>,
}

/// The newest managedFields entry's manager, chosen while streaming the array (no Vec).
/// Kubernetes writes times as RFC 3339 UTC with seconds (`2024-01-01T00:00:00Z`), which
/// order correctly as strings; entries without a time lose; ties go to the later entry.
struct NewestJson<'a>(Option<Entry<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for NewestJson<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NewestJson<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a managedFields list")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(NewestJson(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut best: Option<Entry<'de>> = None;
                while let Some(e) = seq.next_element::<Entry<'de>>()? {
                    let better = match &best {
                        None => true,
                        Some(b) => e.time.as_ref().map(|t| &t.0) >= b.time.as_ref().map(|t| &t.0),
                    };
                    if better {
                        best = Some(e);
                    }
                }
                Ok(NewestJson(best))
            }
        }
        d.deserialize_any(V)
    }
}

/// The newest `managedFields` entry of a JSON object (see [`super::last_writer`]): `Ok(None)`
/// when the object has none, `Err` when the value is not a JSON object.
pub(crate) fn last_writer(value: &[u8]) -> Result<Option<super::Writer<'_>>, ()> {
    last_writer_marked(value).map(|(w, _)| w)
}

/// As [`last_writer`], with the mark of the `managedFields` array's text (a hash; 0 when
/// the object has none, or when its metadata had to be read the slow way: unknown).
pub(crate) fn last_writer_marked(value: &[u8]) -> Result<(Option<super::Writer<'_>>, u64), ()> {
    // Fast path: kube-apiserver writes map keys sorted, so the first `"managedFields":` is
    // metadata's (apiVersion, kind and metadata come before spec and status, and inside
    // metadata only annotation or label keys could spell it). Parse just that array; on
    // anything unexpected, read the whole object.
    const FIELD: &[u8] = b"\"managedFields\"";
    if let Some(at) = memchr::memmem::find(value, FIELD) {
        let rest = &value[at + FIELD.len()..];
        let skip = rest.iter().take_while(|b| b.is_ascii_whitespace()).count();
        if rest.get(skip) == Some(&b':') {
            let list = &rest[skip + 1..];
            // A stream, for the offset where the array ends: its text is the mark.
            let mut it = serde_json::Deserializer::from_slice(list).into_iter::<NewestJson<'_>>();
            if let Some(Ok(n)) = it.next() {
                if let Some(e) = n.0 {
                    let mut mark = super::ManagedMark::default();
                    mark.add(list[..it.byte_offset()].trim_ascii());
                    return Ok((Some(writer_of(e)), mark.finish()));
                }
            }
        }
    }
    let h: WriterHead<'_> = serde_json::from_slice(value).map_err(|_| ())?;
    Ok((
        h.metadata
            .and_then(|m| m.managed)
            .and_then(|n| n.0)
            .map(writer_of),
        0,
    ))
}

fn writer_of(e: Entry<'_>) -> super::Writer<'_> {
    fn bytes(s: Option<BStr<'_>>) -> Cow<'_, [u8]> {
        match s.map(|b| b.0) {
            Some(Cow::Borrowed(b)) => Cow::Borrowed(b.as_bytes()),
            Some(Cow::Owned(o)) => Cow::Owned(o.into_bytes()),
            None => Cow::Borrowed(&b""[..]),
        }
    }
    super::Writer {
        manager: bytes(e.manager),
        operation: bytes(e.operation),
        subresource: bytes(e.subresource),
    }
}

/// Unix seconds of an RFC 3339 UTC timestamp as Kubernetes writes them.
fn unix_seconds(s: &str) -> Option<i64> {
    let t = humantime::parse_rfc3339_weak(s).ok()?;
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(d.as_secs()).ok()
}

/// Summary of a JSON value; on malformed JSON the summary carries the parse error.
pub fn summarize(value: &[u8], mut s: ObjectSummary) -> ObjectSummary {
    match serde_json::from_slice::<Head<'_>>(value) {
        Ok(h) => {
            s.api_version = owned(h.api_version);
            s.kind = owned(h.kind);
            if let Some(m) = h.metadata {
                s.name = owned(m.name);
                s.namespace = owned(m.namespace);
                s.uid = owned(m.uid);
                s.creation_timestamp = m.creation.as_ref().and_then(|c| unix_seconds(&c.0));
                s.manager = m.managed.and_then(|n| n.0).and_then(|e| owned(e.manager));
            }
        }
        Err(e) => s.error = Some(format!("JSON: {e}")),
    }
    s
}

/// Decoded size of a base64 string (Secret `data` values are base64 in JSON).
fn base64_len(s: &str) -> usize {
    let t = s.trim_end_matches('=');
    t.len() * 3 / 4
}

/// Replaces Secret payloads with `<redacted: N bytes>`: every value of `data` (N = decoded
/// bytes) and `stringData`, and the last-applied-configuration annotation.
pub(crate) fn redact_secret(v: &mut Value) {
    for field in ["data", "stringData"] {
        match v.get_mut(field) {
            Some(Value::Object(data)) => {
                for x in data.values_mut() {
                    let n = x.as_str().map_or(0, |s| {
                        if field == "data" {
                            base64_len(s)
                        } else {
                            s.len()
                        }
                    });
                    *x = Value::String(format!("<redacted: {n} bytes>"));
                }
            }
            // Not the map Kubernetes writes: redact the whole field rather than guess.
            Some(x) if !x.is_null() => {
                let n = x.to_string().len();
                *x = Value::String(format!("<redacted: {n} bytes>"));
            }
            _ => {}
        }
    }
    if let Some(Value::Object(ann)) = v.get_mut("metadata").and_then(|m| m.get_mut("annotations")) {
        if let Some(x) = ann.get_mut("kubectl.kubernetes.io/last-applied-configuration") {
            let n = x.as_str().map(str::len).unwrap_or(0);
            *x = Value::String(format!("<redacted: {n} bytes>"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_manager_from_json() {
        let v = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","managedFields":[
            {"manager":"a","time":"2024-01-01T00:00:05Z"},
            {"manager":"b","time":"2024-01-01T00:00:09Z"},
            {"manager":"c","time":"2024-01-01T00:00:07Z"},
            {"manager":"d"}]}}"#;
        let s = summarize(v, ObjectSummary::default());
        assert_eq!(s.manager.as_deref(), Some("b"));
        assert_eq!(s.name.as_deref(), Some("c"));
    }

    #[test]
    fn escaped_strings_and_odd_shapes() {
        let v = br#" {"kind":"W\u0069dget","metadata":{"name":"a\"b","managedFields":null}}"#;
        let s = summarize(v, ObjectSummary::default());
        assert_eq!(s.kind.as_deref(), Some("Widget"));
        assert_eq!(s.name.as_deref(), Some("a\"b"));
        let s = summarize(br#"{"kind":3}"#, ObjectSummary::default());
        assert!(s.error.is_some());
        let s = summarize(b"{\"kind\":\"\xff\"}", ObjectSummary::default());
        assert!(s.error.is_some());
    }

    #[test]
    fn base64_lengths() {
        assert_eq!(base64_len("YWJj"), 3);
        assert_eq!(base64_len("YWI="), 2);
        assert_eq!(base64_len("YQ=="), 1);
        assert_eq!(base64_len(""), 0);
    }
}
