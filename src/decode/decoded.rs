//! The full decode of one stored value: format, decryption, the object as the apiserver's
//! JSON, and what could not be decoded.

use serde_json::Value;

use super::envelope::{parse_envelope, Envelope};
use super::object::{generic_field, push_str, walk_object, UNKNOWN_FIELDS_KEY};
use super::protobuf_wire::{DecodeError, Reader};
use super::schema::{self, split_api_version};
use super::{detect, hexdump::lossless_text, json, looks_crlf_translated, summarize, undo_crlf};
use super::{identity, Format, ObjectSummary};

/// Options for [`decode`].
#[derive(Clone, Copy, Default)]
pub struct DecodeOptions<'a> {
    /// Show Secret `data`/`stringData` instead of `<redacted: N bytes>`.
    pub show_secrets: bool,
    /// The etcd key the value is stored under (aesgcm's authenticated data; the resource for
    /// picking encryption keys). Empty when unknown.
    pub etcd_key: &'a [u8],
    /// The key's mod_revision: shown as `metadata.resourceVersion`, as the apiserver does on
    /// every read (stored objects carry no resourceVersion).
    pub mod_revision: Option<i64>,
    /// The apiserver's encryption keys, when the user gave an EncryptionConfiguration.
    pub keyring: Option<&'a crate::decrypt::Keyring>,
    /// Other etcd keys holding the very same bytes (aesgcm: to tell "bound to another key
    /// path" from "wrong key").
    pub candidates: &'a [&'a [u8]],
}

/// Which schema decoded a protobuf object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaUse {
    /// A built-in kind, decoded with the merged Kubernetes 1.30–1.35 descriptors.
    Known {
        /// The newest compiled Kubernetes minor version that has the kind, e.g. `1.35`.
        version: &'static str,
        /// Full protobuf message name, e.g. `api.core.v1.Pod`.
        message: String,
    },
    /// No descriptor for the kind (OpenShift, aggregated APIs, removed versions): envelope and
    /// ObjectMeta decoded, the rest dumped by field number.
    Unknown,
    /// Not protobuf (JSON, CBOR) or nothing decodable.
    NotApplicable,
}

/// How an encrypted value fared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncryptionStatus {
    /// `aescbc:key1`, `aesgcm:key2`, `secretbox:k`, `kms:name`, `kmsv2:name`.
    pub label: String,
    /// The plaintext was recovered and decodes.
    pub decrypted: bool,
    /// Why not, in one line (e.g. `key1 is configured but does not match the key that wrote
    /// this value`); `None` when decrypted.
    pub message: Option<String>,
}

/// One stored value, decoded as far as possible. Never an error: problems are in `error`.
#[derive(Clone, Debug)]
pub struct Decoded {
    /// The stored format (`Encrypted{…}` for values encrypted at rest).
    pub format: Format,
    /// Encryption provider/key and outcome, for encrypted values.
    pub encryption: Option<EncryptionStatus>,
    /// Format of the payload (after decryption); equals `format` when not encrypted.
    pub payload_format: Format,
    /// Identity and last manager (from the payload when decrypted).
    pub summary: ObjectSummary,
    /// The object as compact JSON in the apiserver's shape, Secret payloads redacted unless
    /// asked for. `None` when nothing decoded.
    pub json: Option<String>,
    /// Schema used for protobuf.
    pub schema: SchemaUse,
    /// Fields the schema did not know (written by a newer apiserver, or removed from Kubernetes before 1.30), listed in the JSON
    /// under `x-regscope-unknown-fields`.
    pub unknown_fields: usize,
    /// One-line error, e.g. `offset 4, field 1: unexpected wire type 5 (expected 2, len)`.
    pub error: Option<String>,
    /// The structured protobuf error behind `error`.
    pub decode_error: Option<DecodeError>,
    /// A likely cause or a note on what was tolerated (CR LF translation, trailing newline).
    pub hint: Option<String>,
    /// The value was redacted whole (under `secrets/` but not a decodable Secret).
    pub redacted_whole: bool,
}

impl Decoded {
    fn new(format: Format) -> Self {
        Decoded {
            payload_format: format.clone(),
            format,
            encryption: None,
            summary: ObjectSummary::default(),
            json: None,
            schema: SchemaUse::NotApplicable,
            unknown_fields: 0,
            error: None,
            decode_error: None,
            hint: None,
            redacted_whole: false,
        }
    }

    /// The object as a JSON value (keys sorted, as kubectl prints them).
    pub fn value(&self) -> Option<Value> {
        self.json
            .as_deref()
            .and_then(|j| serde_json::from_str(j).ok())
    }
}

/// Kind `Secret` under any apiVersion is treated as secret: a core/v1 Secret's payload is
/// redacted; one whose apiVersion has no schema, or whose bytes are damaged, may carry the
/// same data in other shapes.
fn is_secret_type(_api_version: &str, kind: &str) -> bool {
    kind == "Secret"
}

/// The envelope's typeMeta says kind `Secret`, read leniently from the first field alone, so
/// that a value whose object bytes are truncated or damaged is still known to be a Secret.
fn envelope_says_secret(value: &[u8]) -> bool {
    let Some(rest) = value.strip_prefix(super::envelope::MAGIC) else {
        return false;
    };
    let mut r = Reader::new(rest, 4);
    let Some(Ok(f)) = r.next_field() else {
        return false;
    };
    let Ok(type_meta) = f.expect_len() else {
        return false;
    };
    Reader::new(type_meta, 0)
        .any(|x| x.is_ok_and(|x| x.number == 2 && x.expect_len().is_ok_and(|k| k == b"Secret")))
}

/// The resource segment of a `/registry/<resource>/…` style key, as the EncryptionConfiguration
/// names it: `secrets`, or `widgets.example.com` for `/registry/example.com/widgets/…`.
pub fn resource_of_key(key: &[u8]) -> String {
    let text = String::from_utf8_lossy(key);
    let parts: Vec<&str> = text.trim_start_matches('/').split('/').collect();
    // parts[0] is the root prefix (`registry`, `kubernetes.io`).
    match parts.get(1) {
        Some(first) if first.contains('.') => match parts.get(2) {
            Some(res) => format!("{res}.{first}"),
            None => (*first).to_owned(),
        },
        Some(first) => (*first).to_owned(),
        None => String::new(),
    }
}

/// Decodes a stored value: detects the format, decrypts with `opts.keyring`, decodes the
/// payload with the Kubernetes schemas (protobuf), serde_json (JSON) or ciborium (CBOR), and
/// redacts Secret payloads unless `opts.show_secrets`.
pub fn decode(value: &[u8], opts: &DecodeOptions<'_>) -> Decoded {
    let format = detect(value);
    let mut d = Decoded::new(format.clone());
    if let Format::Encrypted { provider, key } = &format {
        let label = format!("{provider}:{key}");
        let Some(keyring) = opts.keyring else {
            d.encryption = Some(EncryptionStatus {
                label,
                decrypted: false,
                message: Some(
                    "not decrypted: no EncryptionConfiguration given (--encryption-config)".into(),
                ),
            });
            d.summary.format = Some(format);
            return d;
        };
        let resource = resource_of_key(opts.etcd_key);
        let outcome =
            keyring.decrypt_with_candidates(&resource, opts.etcd_key, value, opts.candidates);
        match outcome {
            crate::decrypt::Decryption::Plaintext { plaintext, .. } => {
                let inner = decode_payload(&plaintext, opts, &mut d);
                if inner {
                    d.encryption = Some(EncryptionStatus {
                        label,
                        decrypted: true,
                        message: None,
                    });
                } else {
                    // Unauthenticated ciphers (aescbc) "decrypt" with a wrong key into noise.
                    d = Decoded::new(format.clone());
                    d.encryption = Some(EncryptionStatus {
                        label,
                        decrypted: false,
                        message: Some(crate::decrypt::wrong_key_message(key)),
                    });
                    d.summary.format = Some(format);
                }
            }
            other => {
                d.encryption = Some(EncryptionStatus {
                    label: other.label(),
                    decrypted: false,
                    message: other.message(),
                });
                d.summary.format = Some(format);
            }
        }
        return d;
    }
    decode_payload(value, opts, &mut d);
    d
}

/// Decodes an unencrypted payload into `d` (format, summary, json, errors). Returns whether it
/// decoded as a Kubernetes object (protobuf envelope, JSON or CBOR object).
fn decode_payload(value: &[u8], opts: &DecodeOptions<'_>, d: &mut Decoded) -> bool {
    let format = detect(value);
    d.payload_format = format.clone();
    d.summary = summarize(value);
    let secret_key = resource_of_key(opts.etcd_key) == "secrets";
    let ok = match format {
        Format::Protobuf => decode_protobuf(value, opts, d),
        Format::Json => decode_json(value, opts, d),
        Format::Cbor => decode_cbor(value, opts, d),
        Format::Encrypted { .. } => {
            d.error = Some("encrypted twice: the payload is itself encrypted".into());
            false
        }
        Format::Raw => {
            d.error =
                Some("not a Kubernetes encoding (no k8s\\x00 magic, not JSON or CBOR)".into());
            // `etcdctl get KEY` without -w prints the key on a line, then the value.
            if let Some(nl) = value.iter().position(|&b| b == b'\n') {
                let after = &value[nl + 1..];
                if value.starts_with(b"/") && !matches!(detect(after), Format::Raw) {
                    d.hint = Some(
                        "this looks like `etcdctl get KEY` output (the key on its own line, then \
                         the value): use `etcdctl get KEY -w json`, or --print-value-only"
                            .into(),
                    );
                }
            }
            false
        }
    };
    if !opts.show_secrets {
        // Under secrets/, anything that is not a cleanly decoded Secret may hold secret bytes
        // in the clear; so may a Secret whose payload failed to decode.
        let secretish = d.summary.is_secret()
            || d.summary.kind.as_deref() == Some("Secret")
            || envelope_says_secret(value);
        let clean_secret = d.error.is_none() && d.summary.is_secret();
        if (secret_key || secretish) && !clean_secret {
            d.json = None;
            d.redacted_whole = true;
        }
    }
    ok
}

fn redact_if_secret(v: &mut Value, opts: &DecodeOptions<'_>) {
    let av = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    if is_secret_type(av, kind) && !opts.show_secrets {
        json::redact_secret(v);
        redact_unknown(v);
    }
}

/// Fields of a Secret that the schema does not know may hold secret bytes: their dumps are
/// replaced by their count.
fn redact_unknown(v: &mut Value) {
    match v {
        Value::Object(o) => {
            if let Some(u) = o.get_mut(UNKNOWN_FIELDS_KEY) {
                let n = u.as_array().map_or(1, Vec::len);
                *u = Value::String(format!("<redacted: {n} unknown fields>"));
            }
            o.values_mut().for_each(redact_unknown);
        }
        Value::Array(a) => a.iter_mut().for_each(redact_unknown),
        _ => {}
    }
}

fn set_resource_version(v: &mut Value, rv: Option<i64>) {
    let Some(rv) = rv else { return };
    if let Value::Object(o) = v {
        let meta = o
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Value::Object(m) = meta {
            m.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
    }
}

fn decode_json(value: &[u8], opts: &DecodeOptions<'_>, d: &mut Decoded) -> bool {
    match serde_json::from_slice::<Value>(value) {
        Ok(mut v) => {
            redact_if_secret(&mut v, opts);
            set_resource_version(&mut v, opts.mod_revision);
            d.json = Some(v.to_string());
            true
        }
        Err(e) => {
            d.error = Some(format!("JSON: {e}"));
            false
        }
    }
}

/// CBOR → JSON, as kube-apiserver's CBOR serializer (Kubernetes 1.32+, KEP-4222) maps Go
/// values: it writes Go strings as CBOR byte strings and `[]byte` as byte strings tagged 22
/// (expected base64). So an untagged byte string that is valid UTF-8 is a string; tag 22
/// (21: base64url, 23: hex) marks bytes, printed as Kubernetes JSON prints `[]byte` (base64);
/// other byte strings are base64 too. The self-described tag 55799 and other tags are looked
/// through; map keys become strings.
pub(super) fn cbor_to_json(v: ciborium::Value, depth: usize) -> Value {
    use base64::Engine as _;
    use ciborium::Value as C;
    if depth > super::object::MAX_DEPTH {
        return Value::Null;
    }
    let b64 = |b: &[u8]| Value::String(base64::engine::general_purpose::STANDARD.encode(b));
    match v {
        C::Integer(i) => {
            let n: i128 = i.into();
            i64::try_from(n)
                .map(Value::from)
                .or_else(|_| u64::try_from(n).map(Value::from))
                .unwrap_or_else(|_| Value::String(n.to_string()))
        }
        C::Bytes(b) => match String::from_utf8(b) {
            Ok(s) => Value::String(s),
            Err(e) => b64(e.as_bytes()),
        },
        C::Tag(21..=23, inner) => match *inner {
            C::Bytes(b) => b64(&b),
            other => cbor_to_json(other, depth + 1),
        },
        C::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        C::Text(s) => Value::String(s),
        C::Bool(b) => Value::Bool(b),
        C::Null => Value::Null,
        C::Tag(_, inner) => cbor_to_json(*inner, depth + 1),
        C::Array(a) => Value::Array(a.into_iter().map(|x| cbor_to_json(x, depth + 1)).collect()),
        C::Map(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| {
                    let key = match k {
                        C::Text(s) => s,
                        C::Bytes(b) => String::from_utf8_lossy(&b).into_owned(),
                        other => match cbor_to_json(other, depth + 1) {
                            Value::String(s) => s,
                            x => x.to_string(),
                        },
                    };
                    (key, cbor_to_json(v, depth + 1))
                })
                .collect(),
        ),
        _ => Value::Null,
    }
}

fn decode_cbor(value: &[u8], opts: &DecodeOptions<'_>, d: &mut Decoded) -> bool {
    match ciborium::de::from_reader::<ciborium::Value, _>(value) {
        Ok(c) => {
            let mut v = cbor_to_json(c, 0);
            redact_if_secret(&mut v, opts);
            set_resource_version(&mut v, opts.mod_revision);
            d.json = Some(v.to_string());
            true
        }
        Err(e) => {
            d.error = Some(format!("CBOR: {e}"));
            false
        }
    }
}

/// Parses the envelope; on failure retries without one trailing `\n` (etcdctl and auger add
/// one). Returns whether the newline was dropped.
fn envelope_tolerant(value: &[u8]) -> Result<(Envelope<'_>, bool), DecodeError> {
    match parse_envelope(value) {
        Ok(e) => Ok((e, false)),
        Err(err) => match value.strip_suffix(b"\n") {
            Some(v) => parse_envelope(v).map(|e| (e, true)).map_err(|_| err),
            None => Err(err),
        },
    }
}

fn crlf_hint(value: &[u8]) -> String {
    let mut hint = String::from(
        "the bytes look CR LF translated: a TTY turned every LF (0a) into CR LF (0d0a pairs, \
         trailing 0d0a), so the envelope's first tag 0a became 0d (field 1, wire type 5). \
         Capture the value without a TTY (no -t on kubectl/docker exec).",
    );
    let fixed = undo_crlf(value);
    let s = summarize(&fixed);
    if s.error.is_none() {
        hint.push_str(&format!(
            " Undoing the translation decodes as {}.",
            identity(&s)
        ));
    }
    hint
}

fn decode_protobuf(value: &[u8], opts: &DecodeOptions<'_>, d: &mut Decoded) -> bool {
    let (env, dropped_nl) = match envelope_tolerant(value) {
        Ok(x) => x,
        Err(e) => {
            let mut error = e.to_string();
            if looks_crlf_translated(value) {
                error.push_str("; hint: the bytes look CR LF translated by a TTY");
                d.hint = Some(crlf_hint(value));
            }
            d.error = Some(error);
            d.decode_error = Some(e);
            return false;
        }
    };
    if dropped_nl {
        d.hint = Some(
            "ignored one trailing newline (0a) after the envelope (etcdctl and auger's extract \
             add one)"
                .into(),
        );
    }
    let api_version = lossless_text(env.api_version);
    let kind = lossless_text(env.kind);
    if !env.content_encoding.is_empty() {
        d.error = Some(format!(
            "contentEncoding {} is not supported; raw object not decoded",
            lossless_text(env.content_encoding)
        ));
        return true;
    }
    if api_version.is_empty() && kind.is_empty() {
        d.error = Some(
            "the envelope has no apiVersion and kind (typeMeta empty): not a stored object".into(),
        );
    }
    let (group, version) = split_api_version(&api_version);
    let resolved = if kind.is_empty() {
        None
    } else {
        schema::resolve(group, version, &kind)
    };
    let is_secret = is_secret_type(&api_version, &kind);
    let walked = resolved.map(|(plan, msg)| {
        walk_object(
            plan,
            msg,
            env.raw,
            env.raw_offset,
            Some((&api_version, &kind)),
            opts.mod_revision,
        )
        .map(|w| (plan, msg, w))
        .map_err(|e| (plan, msg, e))
    });
    let mut v = match walked {
        Some(Ok((plan, msg, w))) => {
            d.schema = SchemaUse::Known {
                version: plan.messages[msg as usize].newest,
                message: plan.messages[msg as usize].full_name.to_string(),
            };
            d.unknown_fields = w.unknown_fields;
            if !is_secret || opts.show_secrets {
                // The walker's JSON is final: no round trip through a Value.
                d.json = Some(w.json);
                return true;
            }
            match serde_json::from_str::<Value>(&w.json) {
                Ok(v) => v,
                Err(e) => {
                    d.error = Some(format!("internal: walker wrote invalid JSON: {e}"));
                    return true;
                }
            }
        }
        Some(Err((plan, msg, e))) => {
            // The kind is known but its bytes do not match the schema: the error, and the
            // fields by number so the damage can be seen.
            d.error = Some(format!(
                "{e} (decoding {api_version} {kind} with the Kubernetes {} schemas)",
                plan.versions
            ));
            d.decode_error = Some(e);
            d.schema = SchemaUse::Known {
                version: plan.messages[msg as usize].newest,
                message: plan.messages[msg as usize].full_name.to_string(),
            };
            let mut v = unknown_kind(&env, &api_version, &kind);
            set_resource_version(&mut v, opts.mod_revision);
            v
        }
        None => {
            d.schema = SchemaUse::Unknown;
            let mut v = unknown_kind(&env, &api_version, &kind);
            set_resource_version(&mut v, opts.mod_revision);
            v
        }
    };
    redact_if_secret(&mut v, opts);
    d.json = Some(v.to_string());
    true
}

/// A kind without a schema: apiVersion, kind, `metadata` decoded as ObjectMeta when field 1
/// parses as one (the Kubernetes convention for top-level objects), and every other field
/// dumped by number under [`UNKNOWN_FIELDS_KEY`].
fn unknown_kind(env: &Envelope<'_>, api_version: &str, kind: &str) -> Value {
    let mut out = String::from("{");
    let mut first = true;
    let mut sep = |out: &mut String| {
        if !first {
            out.push(',');
        }
        first = false;
    };
    if !kind.is_empty() {
        sep(&mut out);
        out.push_str("\"kind\":");
        push_str(&mut out, kind);
    }
    if !api_version.is_empty() {
        sep(&mut out);
        out.push_str("\"apiVersion\":");
        push_str(&mut out, api_version);
    }
    let meta_plan = schema::plan().and_then(|p| {
        p.message("apimachinery.pkg.apis.meta.v1.ObjectMeta")
            .map(|m| (p, m))
    });
    let mut rest = Vec::new();
    let mut r = Reader::new(env.raw, env.raw_offset);
    let mut meta_done = false;
    while let Some(Ok(f)) = r.next_field() {
        if f.number == 1 && !meta_done {
            if let (Some((p, m)), Ok(b)) = (meta_plan, f.expect_len()) {
                if let Ok(w) = walk_object(p, m, b, f.value_offset, None, None) {
                    if w.unknown_fields == 0 {
                        sep(&mut out);
                        out.push_str("\"metadata\":");
                        out.push_str(&w.json);
                        meta_done = true;
                        continue;
                    }
                }
            }
        }
        rest.push(f);
    }
    if !rest.is_empty() {
        sep(&mut out);
        push_str(&mut out, UNKNOWN_FIELDS_KEY);
        out.push_str(":[");
        for (i, f) in rest.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            generic_field(&mut out, f, 0);
        }
        out.push(']');
    }
    out.push('}');
    serde_json::from_str(&out).unwrap_or(Value::Null)
}

/// Decodes object bytes (the envelope's `raw`) as a given kind, for callers that know the
/// type without an envelope (e.g. `core.v1.WatchEvent`, whose typeMeta is empty). Returns the
/// JSON and the number of unknown fields, or `None` when no schema has the kind.
pub fn decode_raw_as(
    api_version: &str,
    kind: &str,
    raw: &[u8],
) -> Option<Result<(String, usize), DecodeError>> {
    let (group, version) = split_api_version(api_version);
    let (plan, msg) = schema::resolve(group, version, kind)?;
    Some(walk_object(plan, msg, raw, 0, None, None).map(|w| (w.json, w.unknown_fields)))
}
