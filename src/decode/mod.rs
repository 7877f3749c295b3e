//! Storage values -> what a human needs to see: format detection, the protobuf
//! `runtime.Unknown` envelope, JSON, CBOR, encryption-at-rest prefixes, hex dumps.
//!
//! Values enter as the raw bytes etcd holds under a key (never assumed to be UTF-8) and leave
//! as an [`ObjectSummary`] (cheap, per row of lists and the live event stream) or a
//! [`Rendered`] text for the opened key. Nothing here fails: problems become structured
//! [`DecodeError`]s inside the output, with the raw bytes still shown as hex.
//!
//! Protobuf objects of built-in kinds are decoded with the Kubernetes 1.30–1.35 schemas
//! ([`schema`]) into the apiserver's JSON. Kinds no schema has (OpenShift, aggregated APIs,
//! removed versions) still show the envelope's apiVersion/kind and ObjectMeta (field 1 of
//! every top-level object by convention), with the other fields dumped by number. Summaries
//! read only the envelope and ObjectMeta.

pub mod envelope;
pub mod hexdump;
pub mod migration;
pub mod object;
pub mod protobuf_wire;
pub mod schema;

mod decoded;

mod json;
mod json_text;
mod scalar;

#[cfg(test)]
mod tests;

use std::borrow::Cow;

use envelope::{object_meta_bytes, parse_envelope, scan_meta, Envelope, MAGIC};
use hexdump::{hexdump, lossless_text, HEXDUMP_LIMIT};

pub use decoded::{
    decode, decode_raw_as, resource_of_key, DecodeOptions, Decoded, EncryptionStatus, SchemaUse,
};
pub use protobuf_wire::{DecodeError, ErrorKind};

pub use crate::model::kubernetes::ENCRYPTED_PREFIX;

/// Self-described CBOR tag 55799 (`d9 d9 f7`), which kube-apiserver's CBOR serializer writes
/// first.
pub const CBOR_SELF_DESCRIBED: &[u8] = &[0xd9, 0xd9, 0xf7];
/// Marker put on the generic field dump of a kind that no compiled schema has.
pub const SCHEMA_UNKNOWN: &str = "schema unknown: fields by number";

/// The encoding a stored value was found in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Format {
    /// `k8s\x00` + runtime.Unknown (kube-apiserver's default for built-in types).
    Protobuf,
    /// JSON (custom resources, JSON storage): first non-whitespace byte `{`.
    Json,
    /// CBOR (self-described tag 55799, bytes `d9 d9 f7`).
    Cbor,
    /// Encrypted at rest: `k8s:enc:<provider>:v1:<key>:` with provider `aescbc`, `aesgcm` or
    /// `secretbox`; `k8s:enc:kms:v1:<name>:` gives provider `kms`, `k8s:enc:kms:v2:<name>:`
    /// gives provider `kmsv2` (the name is then the KMS plugin's configured name). Invalid
    /// UTF-8 in the key name is shown as `\xNN`.
    Encrypted {
        /// `aescbc`, `aesgcm`, `secretbox`, `kms` (KMS v1) or `kmsv2`.
        provider: String,
        /// Key name from the EncryptionConfiguration (KMS: the plugin's name).
        key: String,
    },
    /// Anything else.
    Raw,
}

impl Format {
    /// Short label for tables: `protobuf`, `json`, `cbor`, `aescbc:key1`, `raw`.
    pub fn label(&self) -> String {
        match self {
            Format::Protobuf => "protobuf".into(),
            Format::Json => "json".into(),
            Format::Cbor => "cbor".into(),
            Format::Encrypted { provider, key } => format!("{provider}:{key}"),
            Format::Raw => "raw".into(),
        }
    }

    /// Longer label for the opened key: as [`Format::label`], except `raw (not Kubernetes
    /// encoding)` and `encrypted (aescbc, key key1)`.
    pub fn describe(&self) -> String {
        match self {
            Format::Raw => "raw (not Kubernetes encoding)".into(),
            Format::Encrypted { provider, key } => format!("encrypted ({provider}, key {key})"),
            other => other.label(),
        }
    }
}

/// Cheap facts about a value: format and, when found, the object's identity. Strings are
/// copied from the value; invalid UTF-8 in them appears as `\xNN`. For protobuf, empty
/// typeMeta strings are `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectSummary {
    /// Detected format (always `Some` from [`summarize`]).
    pub format: Option<Format>,
    /// `apiVersion`, e.g. `v1`, `apps/v1`, `example.com/v1`.
    pub api_version: Option<String>,
    /// `kind`, e.g. `Pod`.
    pub kind: Option<String>,
    /// `metadata.namespace` (absent for cluster-scoped objects).
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: Option<String>,
    /// Last writer from `metadata.managedFields`: the entry with the newest `time`, else the
    /// last entry.
    pub manager: Option<String>,
    /// `metadata.uid`.
    pub uid: Option<String>,
    /// `metadata.creationTimestamp` in Unix seconds (UTC).
    pub creation_timestamp: Option<i64>,
    /// Why the value could not be decoded (one line), e.g.
    /// `offset 4, field 1: unexpected wire type 5 (expected 2, len)`.
    pub error: Option<String>,
}

impl ObjectSummary {
    /// True for a core `v1` Secret, whose payload must stay hidden unless asked for.
    pub fn is_secret(&self) -> bool {
        self.api_version.as_deref() == Some("v1") && self.kind.as_deref() == Some("Secret")
    }
}

/// Options for [`render`].
#[derive(Clone, Copy, Debug, Default)]
pub struct RenderOptions<'a> {
    /// Show Secret data instead of `<redacted: N bytes>`.
    pub show_secrets: bool,
    /// The value is stored under the `secrets` resource. Then anything that does not decode
    /// as a Secret (raw bytes, a damaged envelope, another kind) is redacted whole, since its
    /// bytes may hold secret data in the clear. (Also derived from `etcd_key` when given.)
    pub secret_key: bool,
    /// The etcd key (aesgcm's authenticated data; picks the encryption keys).
    pub etcd_key: &'a [u8],
    /// The key's mod_revision, shown as `metadata.resourceVersion`.
    pub mod_revision: Option<i64>,
    /// The apiserver's encryption keys, if given.
    pub keyring: Option<&'a crate::decrypt::Keyring>,
    /// Print JSON instead of YAML.
    pub json: bool,
}

/// A value rendered for display.
#[derive(Clone, Debug, Default)]
pub struct Rendered {
    /// Format label, e.g. `protobuf`, `json`, `cbor`, `raw (not Kubernetes encoding)`,
    /// `encrypted (aescbc, key key1)`.
    pub format: String,
    /// Same as [`summarize`] of the value.
    pub summary: ObjectSummary,
    /// Text lines of the body (header and field dump, pretty JSON or hex dump). Lines carry no
    /// newline characters; control characters inside strings are escaped.
    pub lines: Vec<String>,
    /// A decode error, one line (with a short hint appended when one applies).
    pub error: Option<String>,
    /// The structured protobuf error behind `error`, when there is one.
    pub decode_error: Option<DecodeError>,
    /// A longer explanation of a likely cause or a note on what was tolerated, e.g. CR LF
    /// translation by a TTY (which breaks protobuf decoding) or a trailing newline after the
    /// envelope.
    pub hint: Option<String>,
    /// The full decode behind the lines (object JSON, schema, encryption status).
    pub decoded: Option<Decoded>,
}

/// The encryption-at-rest prefix of a stored value: `(provider, key name, offset of the
/// ciphertext)`, with provider `aescbc`, `aesgcm`, `secretbox`, `kms` or `kmsv2` (see
/// [`Format::Encrypted`]). `None` unless the value starts with a complete prefix: `k8s:enc:`,
/// a known provider and version, then a non-empty name ending in `:`. Detection only; the
/// keys that decrypt are in [`crate::decrypt`]. Format detection and Secret redaction both
/// ask this.
pub fn encryption_prefix(value: &[u8]) -> Option<(&'static str, &[u8], usize)> {
    let rest = value.strip_prefix(ENCRYPTED_PREFIX)?;
    // What follows `k8s:enc:` for each provider that writes ciphertext. From k8s.io/apiserver
    // `pkg/server/options/encryptionconfig/config.go` (`aesCBCTransformerPrefixV1`,
    // `aesGCMTransformerPrefixV1`, `secretboxTransformerPrefixV1`, `kmsTransformerPrefixV1`,
    // `kmsTransformerPrefixV2`). No one is a prefix of another, so at most one matches.
    const KINDS: [(&[u8], &str); 5] = [
        (b"aescbc:v1:", "aescbc"),
        (b"aesgcm:v1:", "aesgcm"),
        (b"secretbox:v1:", "secretbox"),
        (b"kms:v1:", "kms"),
        (b"kms:v2:", "kmsv2"),
    ];
    let (p, provider) = KINDS.iter().find(|(p, _)| rest.starts_with(p))?;
    let after = &rest[p.len()..];
    let end = after.iter().position(|&b| b == b':')?;
    if end == 0 {
        return None;
    }
    let body = ENCRYPTED_PREFIX.len() + p.len() + end + 1;
    Some((provider, &after[..end], body))
}

/// True when the first byte that is not JSON whitespace (space, tab, LF, CR) is `{`: how a
/// JSON-stored object starts. Format detection and Secret redaction both ask this.
pub fn is_json_start(value: &[u8]) -> bool {
    value
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        == Some(&b'{')
}

/// Detects the format of a value (never fails). Order: protobuf magic `k8s\x00`, a complete
/// encryption prefix (a `k8s:enc:` value with an unknown provider or no key name is `Raw`),
/// the CBOR self-described tag, JSON by its first non-whitespace byte `{`, else `Raw`.
pub fn detect(value: &[u8]) -> Format {
    if value.starts_with(MAGIC) {
        Format::Protobuf
    } else if let Some((provider, key, _)) = encryption_prefix(value) {
        Format::Encrypted {
            provider: provider.to_owned(),
            key: lossless_text(key),
        }
    } else if value.starts_with(CBOR_SELF_DESCRIBED) {
        Format::Cbor
    } else if is_json_start(value) {
        Format::Json
    } else {
        Format::Raw
    }
}

/// Parses the envelope; if that fails and the value ends with one `\n` (added by etcdctl and
/// by auger's extract), retries without it. Returns whether the newline was dropped.
fn parse_envelope_tolerant(value: &[u8]) -> Result<(Envelope<'_>, bool), DecodeError> {
    match parse_envelope(value) {
        Ok(e) => Ok((e, false)),
        Err(err) => match value.strip_suffix(b"\n") {
            Some(v) => parse_envelope(v).map(|e| (e, true)).map_err(|_| err),
            None => Err(err),
        },
    }
}

fn non_empty(b: &[u8]) -> Option<String> {
    (!b.is_empty()).then(|| lossless_text(b))
}

fn summarize_protobuf(value: &[u8]) -> ObjectSummary {
    let mut s = ObjectSummary {
        format: Some(Format::Protobuf),
        ..Default::default()
    };
    let env = match parse_envelope_tolerant(value) {
        Ok((env, _)) => env,
        Err(e) => {
            s.error = Some(e.to_string());
            return s;
        }
    };
    s.api_version = non_empty(env.api_version);
    s.kind = non_empty(env.kind);
    if !env.content_encoding.is_empty() {
        return s;
    }
    // Field 1 is ObjectMeta only by convention; when it does not parse as one (WatchEvent,
    // review kinds), the object simply has no identity to show.
    let Ok(Some((meta, base))) = object_meta_bytes(env.raw, env.raw_offset) else {
        return s;
    };
    if let Ok(m) = scan_meta(meta, base) {
        s.name = m.name.map(lossless_text);
        s.namespace = m.namespace.and_then(non_empty);
        s.uid = m.uid.and_then(non_empty);
        s.creation_timestamp = m.creation.map(|t| t.seconds);
        s.manager = m.manager.map(lossless_text);
    }
    s
}

/// Cheap summary; never fails (problems go into [`ObjectSummary::error`]). Allocates only the
/// output strings: protobuf is scanned in place, JSON is deserialized into borrowed fields;
/// CBOR (rare) is converted to JSON first.
pub fn summarize(value: &[u8]) -> ObjectSummary {
    if value.starts_with(MAGIC) {
        return summarize_protobuf(value);
    }
    let format = detect(value);
    let s = ObjectSummary {
        format: Some(format.clone()),
        ..Default::default()
    };
    match format {
        Format::Json => json::summarize(value, s),
        // CBOR is rare (custom resources, Kubernetes 1.32+): convert, then read as JSON.
        Format::Cbor => match ciborium::de::from_reader::<ciborium::Value, _>(value) {
            Ok(c) => {
                let json = decoded::cbor_to_json(c, 0).to_string();
                json::summarize(json.as_bytes(), s)
            }
            Err(e) => ObjectSummary {
                error: Some(format!("CBOR: {e}")),
                ..s
            },
        },
        _ => s,
    }
}

/// The writer named by a `metadata.managedFields` entry: who wrote, how, and through which
/// subresource. Borrowed from the value where it can be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Writer<'a> {
    /// Field manager, e.g. `kube-controller-manager`, `kubelet`, `kubectl-client-side-apply`.
    pub manager: Cow<'a, [u8]>,
    /// `Update` (create, update, patch) or `Apply` (server-side apply).
    pub operation: Cow<'a, [u8]>,
    /// Subresource written through (`status`, `scale`), empty for the main resource.
    pub subresource: Cow<'a, [u8]>,
}

/// Who made the newest write of a stored object, as far as the value tells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LastWrite<'a> {
    /// The `managedFields` entry with the newest `time` ([`envelope::NewestManager`] gives
    /// the rule and its limit: writers within the same second).
    By(Writer<'a>),
    /// The object decodes but carries no `managedFields` (written with field management off,
    /// or by kube-apiserver itself).
    NoManagedFields,
    /// Encrypted at rest: the writer is inside the ciphertext.
    Encrypted,
    /// Not an object this reads (raw bytes, a damaged value, an empty one).
    Undecodable,
}

impl LastWrite<'_> {
    /// One line for tables: the manager, with the operation when it is not a plain
    /// `Update` (`kubelet (Update/status)`, `flux (Apply)`); a phrase in parentheses when
    /// the value names no writer; `-` when it does not decode.
    pub fn label(&self) -> String {
        match self {
            LastWrite::By(w) => {
                let m = lossless_text(&w.manager);
                match (&w.operation[..], &w.subresource[..]) {
                    (b"Update", b"") => m,
                    (op, b"") => format!("{m} ({})", lossless_text(op)),
                    (op, sub) => format!("{m} ({}/{})", lossless_text(op), lossless_text(sub)),
                }
            }
            LastWrite::NoManagedFields => "(no managedFields)".into(),
            LastWrite::Encrypted => "(encrypted)".into(),
            LastWrite::Undecodable => "-".into(),
        }
    }
}

/// A hash of a value's whole `metadata.managedFields` list, as [`last_write_marked`] gives
/// it: equal for two versions exactly when their lists are byte for byte the same (but for
/// a 64-bit collision). 0 means "no mark": the value has no managedFields, or they could
/// not be read in place. foldhash with a fixed seed: marks are compared within one process
/// only, never stored.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ManagedMark(Option<u64>);

impl ManagedMark {
    /// Adds one entry's bytes (with their length, so that where one entry ends is part of
    /// the mark).
    pub(crate) fn add(&mut self, bytes: &[u8]) {
        use std::hash::{BuildHasher, Hash, Hasher};
        let mut h = foldhash::fast::FixedState::with_seed(0x6b38_7300).build_hasher();
        self.0.unwrap_or(0).hash(&mut h);
        bytes.hash(&mut h);
        self.0 = Some(h.finish());
    }

    pub(crate) fn finish(self) -> u64 {
        match self.0 {
            None => 0,
            Some(0) => 1,
            Some(h) => h,
        }
    }
}

/// [`last_writer`] with the mark of the value's whole managedFields list (0 when there is
/// none or it cannot be read in place: CBOR, encrypted, or JSON whose metadata comes after a
/// field that spells `"managedFields"`).
///
/// kube-apiserver's field manager (k8s.io/apimachinery `util/managedfields`,
/// `managedfieldsupdater.go`) moves a manager's entry (its `time` and `fieldsV1`) when that
/// manager's request changes fields; a write that changes no owned field — graceful
/// deletion setting `deletionTimestamp`, the garbage collector removing a finalizer, a
/// no-op update — leaves every entry as it was. So a version whose mark equals the previous
/// version's was written by someone managedFields does not name, whatever its newest entry
/// says.
pub fn last_write_marked(value: &[u8]) -> (LastWrite<'_>, u64) {
    if value.starts_with(MAGIC) {
        let found =
            envelope::newest_writer_marked(value).or_else(|()| match value.strip_suffix(b"\n") {
                Some(v) => envelope::newest_writer_marked(v),
                None => Err(()),
            });
        return match found {
            Ok((Some(e), mark)) => (
                LastWrite::By(Writer {
                    manager: Cow::Borrowed(e.manager),
                    operation: Cow::Borrowed(e.operation),
                    subresource: Cow::Borrowed(e.subresource),
                }),
                mark,
            ),
            Ok((None, _)) => (LastWrite::NoManagedFields, 0),
            Err(()) => (LastWrite::Undecodable, 0),
        };
    }
    if let Format::Json = detect(value) {
        return match json::last_writer_marked(value) {
            Ok((Some(w), mark)) => (LastWrite::By(w), mark),
            Ok((None, _)) => (LastWrite::NoManagedFields, 0),
            Err(()) => (LastWrite::Undecodable, 0),
        };
    }
    (last_writer(value), 0)
}

/// The last writer of a stored object, for attributing writes while the stream is applied.
/// Protobuf is scanned in place without allocating (the envelope, then ObjectMeta up to its
/// managedFields); JSON reads only `metadata.managedFields`; CBOR is converted first (rare).
/// Never fails: what cannot be read is [`LastWrite::Undecodable`].
pub fn last_writer(value: &[u8]) -> LastWrite<'_> {
    if value.starts_with(MAGIC) {
        // As everywhere, one trailing newline (added by etcdctl and auger) is tolerated.
        let found = envelope::newest_writer(value).or_else(|()| match value.strip_suffix(b"\n") {
            Some(v) => envelope::newest_writer(v),
            None => Err(()),
        });
        return match found {
            Ok(Some(e)) => LastWrite::By(Writer {
                manager: Cow::Borrowed(e.manager),
                operation: Cow::Borrowed(e.operation),
                subresource: Cow::Borrowed(e.subresource),
            }),
            Ok(None) => LastWrite::NoManagedFields,
            Err(()) => LastWrite::Undecodable,
        };
    }
    let from_json = |r: Result<Option<Writer<'_>>, ()>| match r {
        Ok(Some(w)) => LastWrite::By(Writer {
            manager: Cow::Owned(w.manager.into_owned()),
            operation: Cow::Owned(w.operation.into_owned()),
            subresource: Cow::Owned(w.subresource.into_owned()),
        }),
        Ok(None) => LastWrite::NoManagedFields,
        Err(()) => LastWrite::Undecodable,
    };
    match detect(value) {
        Format::Json => match json::last_writer(value) {
            Ok(Some(w)) => LastWrite::By(w),
            Ok(None) => LastWrite::NoManagedFields,
            Err(()) => LastWrite::Undecodable,
        },
        Format::Encrypted { .. } => LastWrite::Encrypted,
        Format::Cbor => match ciborium::de::from_reader::<ciborium::Value, _>(value) {
            Ok(c) => {
                let json = decoded::cbor_to_json(c, 0).to_string();
                from_json(json::last_writer(json.as_bytes()))
            }
            Err(_) => LastWrite::Undecodable,
        },
        Format::Protobuf | Format::Raw => LastWrite::Undecodable,
    }
}

/// True when a value looks CR LF translated by a terminal: the magic followed by 0x0d
/// (the LF tag 0x0a turned into CR LF), or `0d0a` pairs with a trailing `0d0a` and no bare LF.
pub fn looks_crlf_translated(value: &[u8]) -> bool {
    if value.len() > MAGIC.len() && value.starts_with(MAGIC) && value[MAGIC.len()] == 0x0d {
        return true;
    }
    if !value.ends_with(b"\r\n") {
        return false;
    }
    let bare_lf = value
        .iter()
        .enumerate()
        .any(|(i, &b)| b == b'\n' && (i == 0 || value[i - 1] != b'\r'));
    !bare_lf
}

/// Undoes a TTY's LF -> CR LF translation and drops the trailing newline etcdctl adds.
fn undo_crlf(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len());
    let mut i = 0;
    while i < value.len() {
        if value[i] == b'\r' && value.get(i + 1) == Some(&b'\n') {
            out.push(b'\n');
            i += 2;
        } else {
            out.push(value[i]);
            i += 1;
        }
    }
    if value.ends_with(b"\r\n") {
        out.pop();
    }
    out
}

fn identity(s: &ObjectSummary) -> String {
    let mut id = String::new();
    if let Some(a) = &s.api_version {
        id.push_str(a);
        id.push(' ');
    }
    if let Some(k) = &s.kind {
        id.push_str(k);
        id.push(' ');
    }
    if let Some(ns) = &s.namespace {
        id.push_str(ns);
        id.push('/');
    }
    if let Some(n) = &s.name {
        id.push_str(n);
    }
    id.trim_end().to_owned()
}

/// The object as YAML lines (keys sorted, as kubectl prints them). serde_norway writes YAML
/// 1.2, where `2024-01-01T00:00:00Z`, `yes`, `on` or `1:20` are plain strings; kubectl (YAML
/// 1.1, go-yaml) quotes them, and YAML 1.1 readers (PyYAML) would read them as timestamps,
/// booleans or numbers. Such plain scalars are double-quoted here so the YAML means what the
/// JSON means.
pub fn yaml_lines(v: &serde_json::Value) -> Vec<String> {
    match serde_norway::to_string(v) {
        Ok(text) => quote_yaml11_scalars(&text),
        Err(e) => vec![format!("! cannot print YAML: {e}")],
    }
}

/// True for a plain scalar that YAML 1.1 resolves to a non-string: a boolean word, a
/// timestamp (`2024-01-01`, `2024-01-01T00:00:00Z`, `2024-01-01 10:00:00`) or a base-60
/// number (`1:20`).
fn yaml11_special(v: &str) -> bool {
    const BOOLS: [&str; 16] = [
        "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off",
        "OFF",
    ];
    if BOOLS.contains(&v) {
        return true;
    }
    let b = v.as_bytes();
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    // Timestamp: YYYY-M(M)-D(D), optionally followed by a time.
    if b.len() >= 8 && digits(&b[..4]) && b[4] == b'-' {
        let mut parts = v[5..].splitn(2, '-');
        let month = parts.next().unwrap_or("");
        let rest = parts.next().unwrap_or("");
        let day_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        if (1..=2).contains(&month.len()) && digits(month.as_bytes()) && (1..=2).contains(&day_len)
        {
            let tail = &rest[day_len..];
            return tail.is_empty()
                || (tail.starts_with(['T', 't', ' '])
                    && tail[1..].bytes().next().is_some_and(|c| c.is_ascii_digit()));
        }
    }
    // Base 60: 1:20, 190:20:30.15
    let mut parts = v.split(':');
    let head = parts.next().unwrap_or("");
    let rest: Vec<&str> = parts.collect();
    !rest.is_empty()
        && digits(head.as_bytes())
        && rest.iter().enumerate().all(|(i, p)| {
            let p = if i + 1 == rest.len() {
                p.split_once('.').map_or(*p, |(a, _)| a)
            } else {
                p
            };
            (1..=2).contains(&p.len()) && digits(p.as_bytes())
        })
}

/// Splits a YAML line into (everything before the scalar, the plain scalar), or `None` when
/// the line ends in no plain scalar (a quoted one, a key opening a block, a block scalar).
fn plain_scalar(line: &str) -> Option<(&str, &str)> {
    let mut i = line.len() - line.trim_start().len();
    while line[i..].starts_with("- ") {
        i += 2;
    }
    let rest = &line[i..];
    let value_at = if rest.starts_with(['"', '\'']) {
        // A quoted key: the value follows its closing quote and ": ".
        let q = rest.as_bytes()[0];
        let mut j = 1;
        let b = rest.as_bytes();
        while j < b.len() {
            if b[j] == b'\\' && q == b'"' {
                j += 2;
                continue;
            }
            if b[j] == q {
                if q == b'\'' && b.get(j + 1) == Some(&b'\'') {
                    j += 2;
                    continue;
                }
                break;
            }
            j += 1;
        }
        match rest.get(j + 1..) {
            Some(after) if after.starts_with(": ") => i + j + 3,
            // A quoted sequence item or a key opening a block.
            _ => return None,
        }
    } else {
        match rest.find(": ") {
            Some(k) => i + k + 2,
            None if rest.ends_with(':') => return None,
            None => i,
        }
    };
    let value = &line[value_at..];
    if value.is_empty() || value.starts_with(['"', '\'', '|', '>', '[', '{', '&', '*', '!']) {
        return None;
    }
    Some((&line[..value_at], value))
}

fn quote_yaml11_scalars(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    // Indent of the line that opened a block scalar (`key: |`): deeper lines are its text.
    let mut block: Option<usize> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        if let Some(b) = block {
            if line.trim().is_empty() || indent > b {
                out.push(line.to_owned());
                continue;
            }
            block = None;
        }
        let t = line.trim_end();
        if t.ends_with('|')
            || t.ends_with("|-")
            || t.ends_with("|+")
            || t.ends_with('>')
            || t.ends_with(">-")
        {
            block = Some(indent);
            out.push(line.to_owned());
            continue;
        }
        match plain_scalar(line) {
            Some((head, value)) if yaml11_special(value) => {
                out.push(format!(
                    "{head}{}",
                    serde_json::Value::String(value.to_owned())
                ));
            }
            _ => out.push(line.to_owned()),
        }
    }
    out
}

/// The object as indented JSON lines (keys sorted).
pub fn json_lines(v: &serde_json::Value) -> Vec<String> {
    match serde_json::to_string_pretty(v) {
        Ok(text) => text.lines().map(str::to_owned).collect(),
        Err(e) => vec![format!("! cannot print JSON: {e}")],
    }
}

/// Full render for the opened key; never fails (errors go into `Rendered::error`). The body
/// is the decoded object as YAML (or JSON with `opts.json`), preceded by `#` notes when the
/// kind has no schema or carries fields newer than the schemas; a hex dump when nothing
/// decodes; `<redacted: N bytes>` for undecodable values under `secrets/`.
pub fn render(value: &[u8], opts: &RenderOptions<'_>) -> Rendered {
    let d = decode(
        value,
        &DecodeOptions {
            show_secrets: opts.show_secrets,
            etcd_key: opts.etcd_key,
            mod_revision: opts.mod_revision,
            keyring: opts.keyring,
            candidates: &[],
        },
    );
    let mut r = Rendered {
        format: d.format.describe(),
        summary: d.summary.clone(),
        error: d.error.clone(),
        decode_error: d.decode_error.clone(),
        hint: d.hint.clone(),
        decoded: None,
        lines: Vec::new(),
    };
    if let Some(enc) = &d.encryption {
        r.format = if enc.decrypted {
            format!(
                "{} (decrypted; payload {})",
                d.format.describe(),
                d.payload_format.label()
            )
        } else {
            d.format.describe()
        };
        if let Some(m) = &enc.message {
            r.error = Some(m.clone());
        }
    }
    let secret_key = opts.secret_key || decoded::resource_of_key(opts.etcd_key) == "secrets";
    let undecodable_secret = !opts.show_secrets
        && d.encryption.as_ref().is_none_or(|e| e.decrypted)
        && (d.redacted_whole || (secret_key && (d.error.is_some() || !d.summary.is_secret())));
    if undecodable_secret {
        r.lines = vec![format!(
            "<redacted: {} bytes> (a Secret, or under secrets/, that does not decode cleanly; --show-secrets shows it)",
            value.len()
        )];
        r.decoded = Some(d);
        return r;
    }
    match d.value() {
        Some(v) => {
            if d.schema == SchemaUse::Unknown {
                r.lines.push(format!(
                    "# {SCHEMA_UNKNOWN}: no Kubernetes 1.30–1.35 schema has this kind; \
                     metadata decoded, other fields under {}",
                    object::UNKNOWN_FIELDS_KEY
                ));
            } else if d.unknown_fields > 0 {
                r.lines.push(format!(
                    "# {} field(s) unknown to the 1.30–1.35 schemas (written by a newer apiserver, or removed since): under {}",
                    d.unknown_fields,
                    object::UNKNOWN_FIELDS_KEY
                ));
            }
            if d.payload_format == Format::Protobuf && d.summary.is_secret() && !opts.show_secrets {
                r.lines
                    .push("# Secret: data and stringData values are redacted".into());
            }
            r.lines.extend(if opts.json {
                json_lines(&v)
            } else {
                yaml_lines(&v)
            });
        }
        None => match &d.format {
            Format::Encrypted { provider, key } => {
                let body = encryption_prefix(value).map_or(value.len(), |(_, _, b)| b);
                r.lines
                    .push(format!("encrypted at rest: provider {provider}, key {key}"));
                if let Some(m) = d.encryption.as_ref().and_then(|e| e.message.clone()) {
                    r.lines.push(m);
                }
                r.lines.push(format!(
                    "ciphertext: {} bytes after a {}-byte prefix",
                    value.len() - body,
                    body
                ));
                r.lines.extend(hexdump(
                    value.get(body..).unwrap_or(&[]),
                    body,
                    HEXDUMP_LIMIT,
                    "",
                ));
            }
            _ => {
                if value.starts_with(ENCRYPTED_PREFIX) {
                    r.hint = Some(
                        "starts with k8s:enc: but the provider or key name is not recognised"
                            .into(),
                    );
                }
                if d.format == Format::Protobuf {
                    r.lines
                        .push("envelope could not be decoded; raw value:".into());
                }
                r.lines.extend(hexdump(value, 0, HEXDUMP_LIMIT, ""));
            }
        },
    }
    r.decoded = Some(d);
    r
}
