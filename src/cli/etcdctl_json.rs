//! `etcdctl get -w json` output read one kv at a time.
//!
//! etcdctl (3.4, 3.5, 3.6) writes a range response as one JSON document,
//! `{"header":{…},"kvs":[{"key":"<base64>","create_revision":N,…,"value":"<base64>"},…],"count":N}`,
//! however many keys it holds: exporting a resource of 20,000 Pods is one 100 MB document.
//! Parsed whole (a JSON tree of the document, then a copy of every kv) that took memory
//! in proportion to the input and time that grew faster than it. Here the document is
//! read as a stream: each element of `kvs` is parsed alone, converted and handed to the
//! caller before the next is read, so memory holds one kv at a time.
//!
//! The fields are etcd's `mvccpb.KeyValue` in grpc-gateway's JSON mapping: bytes as
//! base64, 64-bit integers as numbers from etcdctl or as strings from etcd's HTTP API
//! (both accepted).

use std::cell::RefCell;
use std::fmt;
use std::io;

use base64::Engine as _;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// One stored value with what is known about where it came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredKv {
    /// The etcd key (empty when not known).
    pub key: Vec<u8>,
    /// etcd's create_revision, mod_revision, version and lease, when known.
    pub create_revision: Option<i64>,
    pub mod_revision: Option<i64>,
    pub version: Option<i64>,
    pub lease: Option<i64>,
    /// The value bytes as etcd holds them.
    pub value: Vec<u8>,
}

/// What the document said besides its kvs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RangeEnd {
    /// etcdctl's `count`: all keys matching the range (more than the kvs given when
    /// etcdctl ran with `--limit`).
    pub count: Option<i64>,
    /// kvs read.
    pub kvs: usize,
}

/// Why reading stopped early.
#[derive(Debug)]
pub enum StreamError {
    /// The input is not etcdctl JSON or a field is wrong: one line, naming the field
    /// (`etcdctl JSON: kvs[3].value: not base64: …`).
    Input(String),
    /// The caller's handling of a kv failed (e.g. stdout closed).
    Output(io::Error),
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::Input(m) => f.write_str(m),
            StreamError::Output(e) => write!(f, "{e}"),
        }
    }
}

/// Whether `head` (the first bytes of an input) starts like etcdctl's output: an object
/// whose first member is `header` (as etcdctl and etcd's HTTP API write it), `kvs` or
/// `count` (as a JSON tool that sorts keys rewrites it). A stored Kubernetes object
/// starts with `kind`, `apiVersion` or `metadata` instead.
pub fn looks_like_etcdctl(head: &[u8]) -> bool {
    let compact: Vec<u8> = head
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .take(9)
        .collect();
    [&b"{\"header\""[..], b"{\"kvs\"", b"{\"count\""]
        .iter()
        .any(|p| compact.starts_with(p))
}

/// Reads an etcdctl JSON document from `input`, calling `each` on every kv in order.
///
/// Errors: [`StreamError::Input`] for JSON that does not parse (`etcdctl JSON: not valid
/// JSON: …`, with line and column) or a field of the wrong type; [`StreamError::Output`]
/// when `each` fails. The kvs before the error have been handed out.
pub fn stream<R: io::Read>(
    input: R,
    each: &mut dyn FnMut(StoredKv) -> io::Result<()>,
) -> Result<RangeEnd, StreamError> {
    let mut de =
        serde_json::Deserializer::from_reader(io::BufReader::with_capacity(1 << 16, input));
    run(&mut de, each)
}

/// As [`stream`], from bytes in memory.
pub fn stream_slice(
    input: &[u8],
    each: &mut dyn FnMut(StoredKv) -> io::Result<()>,
) -> Result<RangeEnd, StreamError> {
    let mut de = serde_json::Deserializer::from_slice(input);
    run(&mut de, each)
}

fn run<'de, R: serde_json::de::Read<'de>>(
    de: &mut serde_json::Deserializer<R>,
    each: &mut dyn FnMut(StoredKv) -> io::Result<()>,
) -> Result<RangeEnd, StreamError> {
    let stop = RefCell::new(None);
    let top = Top { each, stop: &stop };
    let parsed = top
        .deserialize(&mut *de)
        .and_then(|end| de.end().map(|()| end));
    match (parsed, stop.into_inner()) {
        (Ok(end), None) => Ok(end),
        (_, Some(stopped)) => Err(stopped),
        (Err(e), None) => Err(StreamError::Input(format!(
            "etcdctl JSON: not valid JSON: {e}"
        ))),
    }
}

/// The top-level object. Errors of our own are put in `stop` (the serde error that
/// unwinds the parse then only carries them out).
struct Top<'a, 'b> {
    each: &'a mut dyn FnMut(StoredKv) -> io::Result<()>,
    stop: &'b RefCell<Option<StreamError>>,
}

fn stopped<E: serde::de::Error>(stop: &RefCell<Option<StreamError>>, why: StreamError) -> E {
    let msg = why.to_string();
    *stop.borrow_mut() = Some(why);
    E::custom(msg)
}

fn field_error(field: &str, what: impl fmt::Display) -> StreamError {
    StreamError::Input(format!("etcdctl JSON: {field}: {what}"))
}

impl<'de> DeserializeSeed<'de> for Top<'_, '_> {
    type Value = RangeEnd;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RangeEnd, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top<'_, '_> {
    type Value = RangeEnd;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("etcdctl's JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<RangeEnd, A::Error> {
        let mut end = RangeEnd::default();
        while let Some(name) = m.next_key::<String>()? {
            match name.as_str() {
                "kvs" => {
                    end.kvs += m.next_value_seed(Kvs {
                        each: &mut *self.each,
                        stop: self.stop,
                        from: end.kvs,
                    })?;
                }
                "count" => {
                    let v: Value = m.next_value()?;
                    end.count = int("count", Some(&v)).map_err(|e| stopped(self.stop, e))?;
                }
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(end)
    }
}

/// The `kvs` array: each element parsed, converted and handed out alone.
struct Kvs<'a, 'b> {
    each: &'a mut dyn FnMut(StoredKv) -> io::Result<()>,
    stop: &'b RefCell<Option<StreamError>>,
    /// kvs handed out before this array (its elements are numbered from there).
    from: usize,
}

impl<'de> DeserializeSeed<'de> for Kvs<'_, '_> {
    type Value = usize;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_any(self)
    }
}

impl Kvs<'_, '_> {
    fn not_an_array<E: serde::de::Error>(&self, found: &str) -> E {
        stopped(
            self.stop,
            field_error("kvs", format!("expected an array, found {found}")),
        )
    }
}

impl<'de> Visitor<'de> for Kvs<'_, '_> {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of kvs")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut n = 0;
        while let Some(v) = seq.next_element::<Value>()? {
            let kv = kv_from_value(self.from + n, &v).map_err(|e| stopped(self.stop, e))?;
            (self.each)(kv).map_err(|e| stopped(self.stop, StreamError::Output(e)))?;
            n += 1;
        }
        Ok(n)
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<usize, E> {
        Ok(0)
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<usize, A::Error> {
        Err(self.not_an_array("an object"))
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<usize, E> {
        Err(self.not_an_array(&v.to_string()))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<usize, E> {
        Err(self.not_an_array(&v.to_string()))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<usize, E> {
        Err(self.not_an_array(&v.to_string()))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<usize, E> {
        Err(self.not_an_array(&v.to_string()))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<usize, E> {
        Err(self.not_an_array(&json_kind(&Value::String(v.to_string()))))
    }
}

/// How a JSON value is named in an error: its kind for containers, else the value (cut
/// at 40 characters).
pub(crate) fn json_kind(v: &Value) -> String {
    match v {
        Value::Object(_) => "an object".into(),
        Value::Array(_) => "an array".into(),
        other => {
            let s = other.to_string();
            if s.chars().count() > 40 {
                format!("{}…", s.chars().take(40).collect::<String>())
            } else {
                s
            }
        }
    }
}

fn int(field: &str, v: Option<&Value>) -> Result<Option<i64>, StreamError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .map(Some)
            .ok_or_else(|| field_error(field, format!("expected an integer, found {n}"))),
        // grpc-gateway (etcd's HTTP API) writes 64-bit integers as strings.
        Some(Value::String(s)) => s
            .parse::<i64>()
            .map(Some)
            .map_err(|_| field_error(field, format!("expected an integer, found {s:?}"))),
        Some(other) => Err(field_error(
            field,
            format!("expected an integer, found {}", json_kind(other)),
        )),
    }
}

fn b64(field: &str, v: Option<&Value>, missing: &str) -> Result<Vec<u8>, StreamError> {
    match v {
        None | Some(Value::Null) => Err(field_error(field, missing)),
        Some(Value::String(s)) => base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(|e| field_error(field, format!("not base64: {e}"))),
        Some(other) => Err(field_error(
            field,
            format!("expected a base64 string, found {}", json_kind(other)),
        )),
    }
}

/// Element `i` of `kvs` as a [`StoredKv`].
fn kv_from_value(i: usize, kv: &Value) -> Result<StoredKv, StreamError> {
    let Value::Object(kv) = kv else {
        return Err(field_error(
            &format!("kvs[{i}]"),
            format!("expected an object, found {}", json_kind(kv)),
        ));
    };
    let f = |name: &str| format!("kvs[{i}].{name}");
    Ok(StoredKv {
        key: b64(&f("key"), kv.get("key"), "missing")?,
        create_revision: int(&f("create_revision"), kv.get("create_revision"))?,
        mod_revision: int(&f("mod_revision"), kv.get("mod_revision"))?,
        version: int(&f("version"), kv.get("version"))?,
        lease: int(&f("lease"), kv.get("lease"))?,
        // etcdctl leaves `value` out when it is empty (proto3 JSON omits default values),
        // and with --keys-only: an empty value, which the caller reports as such for this
        // kv alone.
        value: match kv.get("value") {
            None | Some(Value::Null) => Vec::new(),
            v => b64(&f("value"), v, "missing")?,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn kvs_come_out_one_by_one_in_order_with_count() {
        let doc = format!(
            r#"{{"header":{{"cluster_id":1,"revision":9,"raft_term":2}},"kvs":[{{"key":"{}","create_revision":2,"mod_revision":"7","version":3,"value":"{}"}},{{"key":"{}","value":"{}","lease":7587}}],"count":5}}"#,
            b("/registry/a"),
            b("one"),
            b("/registry/b"),
            b("two")
        );
        for reader in [true, false] {
            let mut got = Vec::new();
            let mut each = |kv: StoredKv| {
                got.push(kv);
                Ok(())
            };
            let end = if reader {
                stream(doc.as_bytes(), &mut each).unwrap()
            } else {
                stream_slice(doc.as_bytes(), &mut each).unwrap()
            };
            assert_eq!(
                end,
                RangeEnd {
                    count: Some(5),
                    kvs: 2
                }
            );
            assert_eq!(got[0].key, b"/registry/a");
            assert_eq!(
                (got[0].create_revision, got[0].mod_revision, got[0].version),
                (Some(2), Some(7), Some(3))
            );
            assert_eq!(
                (got[1].value.as_slice(), got[1].lease),
                (&b"two"[..], Some(7587))
            );
        }
    }

    #[test]
    fn a_bad_element_stops_after_the_good_ones_and_names_its_field() {
        let doc = format!(
            r#"{{"kvs":[{{"key":"{}","value":"{}"}},{{"key":"{}","value":7}}]}}"#,
            b("/a"),
            b("x"),
            b("/b")
        );
        let mut n = 0;
        let e = stream(doc.as_bytes(), &mut |_| {
            n += 1;
            Ok(())
        })
        .unwrap_err();
        assert_eq!(n, 1);
        assert_eq!(
            e.to_string(),
            "etcdctl JSON: kvs[1].value: expected a base64 string, found 7"
        );
        // Cut short: not valid JSON, with where.
        let cut = &doc[..doc.len() - 10];
        let e = stream(cut.as_bytes(), &mut |_| Ok(())).unwrap_err();
        assert!(
            e.to_string().starts_with("etcdctl JSON: not valid JSON: "),
            "{e}"
        );
        // Trailing bytes after a good document.
        let good = format!(r#"{{"kvs":[{{"key":"{0}","value":"{0}"}}]}} x"#, b("/a"));
        let e = stream(good.as_bytes(), &mut |_| Ok(())).unwrap_err();
        assert!(e.to_string().contains("trailing"), "{e}");
    }

    #[test]
    fn the_callers_error_stops_the_read() {
        let doc = format!(
            r#"{{"kvs":[{{"key":"{0}","value":"{0}"}},{{"key":"{0}","value":"{0}"}}]}}"#,
            b("/a")
        );
        let mut n = 0;
        let e = stream(doc.as_bytes(), &mut |_| {
            n += 1;
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        })
        .unwrap_err();
        assert_eq!(n, 1);
        assert!(matches!(e, StreamError::Output(ref e) if e.kind() == io::ErrorKind::BrokenPipe));
    }

    #[test]
    fn detection_by_the_first_member() {
        assert!(looks_like_etcdctl(b" {\n  \"header\": {}"));
        assert!(looks_like_etcdctl(b"{\"kvs\":[]}"));
        assert!(looks_like_etcdctl(b"{\"count\":0,\"kvs\":[]}"));
        assert!(!looks_like_etcdctl(b"{\"kind\":\"Pod\",\"header\":1}"));
        assert!(!looks_like_etcdctl(b"k8s\0"));
    }
}
