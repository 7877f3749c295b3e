//! Storage values -> what a human needs to see: format detection, the protobuf
//! `runtime.Unknown` envelope, JSON, CBOR, encryption-at-rest prefixes, hex dumps.
//!
//! Values enter as the raw bytes etcd holds under a key (never assumed to be UTF-8) and leave
//! as an [`ObjectSummary`] (cheap, per row of lists and the live event stream) or a
//! [`Rendered`] text for the key view. Nothing here fails: problems become structured
//! [`DecodeError`]s inside the output, with the raw bytes still shown as hex.
//!
//! Protobuf objects are decoded without a schema: the envelope's apiVersion/kind, the
//! ObjectMeta conventions (field 1 of every top-level object) and a generic field dump. The
//! schema-driven decode of every built-in kind comes later (issue 3).

pub mod envelope;
pub mod hexdump;
pub mod object;
pub mod schema;
pub mod wire;

mod decoded;

mod dump;
mod json;

#[cfg(test)]
mod tests;

use dump::{dump_message, Out, Redact};
use envelope::{meta_entries, object_meta_bytes, parse_envelope, scan_meta, Envelope, Time, MAGIC};
use hexdump::{hexdump, lossless_text, HEXDUMP_LIMIT};

pub use decoded::{
    decode, decode_raw_as, resource_of_key, DecodeOptions, Decoded, EncryptionStatus, SchemaUse,
};
pub use wire::{DecodeError, ErrorKind};

/// Prefix of values encrypted at rest by kube-apiserver's envelope/prefix transformers.
pub const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";
/// Self-described CBOR tag 55799 (`d9 d9 f7`), which kube-apiserver's CBOR serializer writes
/// first.
pub const CBOR_SELF_DESCRIBED: &[u8] = &[0xd9, 0xd9, 0xf7];
/// Marker put on generic field dumps until schema-driven decoding exists.
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

    /// Longer label for the key view: as [`Format::label`], except `raw (not Kubernetes
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
#[derive(Clone, Debug, Default)]
pub struct RenderOptions {
    /// Show Secret data instead of `<redacted: N bytes>`.
    pub show_secrets: bool,
    /// The value is stored under the `secrets` resource. Then anything that does not decode
    /// as a Secret (raw bytes, a damaged envelope, another kind) is redacted whole, since its
    /// bytes may hold secret data in the clear.
    pub secret_key: bool,
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
    /// translation by a TTY (BR-01) or a trailing newline after the envelope.
    pub hint: Option<String>,
}

/// `(provider, key, offset of the ciphertext)` for an encryption-at-rest prefix.
fn encryption_prefix(value: &[u8]) -> Option<(&'static str, &[u8], usize)> {
    let rest = value.strip_prefix(ENCRYPTED_PREFIX)?;
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

fn is_json_start(value: &[u8]) -> bool {
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
/// output strings: protobuf is scanned in place, JSON is deserialized into borrowed fields.
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
        _ => s,
    }
}

/// True when a value looks CR LF translated by a terminal (BR-01): the magic followed by 0x0d
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

/// Full render for the key view; never fails (errors go into `Rendered::error`).
pub fn render(value: &[u8], opts: &RenderOptions) -> Rendered {
    let format = detect(value);
    let summary = summarize(value);
    let mut r = Rendered {
        format: format.describe(),
        summary,
        ..Default::default()
    };
    match &format {
        Format::Protobuf => render_protobuf(value, opts, &mut r),
        Format::Json => {
            let (lines, error) = json::render(value, opts.show_secrets);
            r.lines = lines;
            r.error = error;
        }
        Format::Cbor => {
            r.lines
                .push("CBOR (self-described tag 55799); structured decode: issue 3".into());
            r.lines.extend(hexdump(value, 0, HEXDUMP_LIMIT, ""));
        }
        Format::Encrypted { provider, key } => {
            let body = encryption_prefix(value).map_or(value.len(), |(_, _, b)| b);
            r.lines
                .push(format!("encrypted at rest: provider {provider}, key {key}"));
            r.lines.push(
                "not decrypted: regscope does not read the apiserver's EncryptionConfiguration yet"
                    .into(),
            );
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
        Format::Raw => {
            if value.starts_with(ENCRYPTED_PREFIX) {
                r.hint = Some(
                    "starts with k8s:enc: but the provider or key name is not recognised".into(),
                );
            }
            r.lines = hexdump(value, 0, HEXDUMP_LIMIT, "");
        }
    }
    let encrypted = matches!(format, Format::Encrypted { .. });
    if opts.secret_key && !opts.show_secrets && !encrypted {
        let redacted_as_secret = r.error.is_none() && r.summary.is_secret();
        if !redacted_as_secret {
            r.lines = vec![format!(
                "<redacted: {} bytes> (under secrets/ but not decodable as a Secret; --show-secrets shows it)",
                value.len()
            )];
        }
    }
    r
}

fn render_protobuf(value: &[u8], opts: &RenderOptions, r: &mut Rendered) {
    let (env, dropped_nl) = match parse_envelope_tolerant(value) {
        Ok(x) => x,
        Err(e) => {
            let mut error = e.to_string();
            if looks_crlf_translated(value) {
                error.push_str("; hint: the bytes look CR LF translated by a TTY");
                let mut hint = String::from(
                    "the bytes look CR LF translated: a TTY turned every LF (0a) into CR LF \
                     (0d0a pairs, trailing 0d0a), so the envelope's first tag 0a became 0d \
                     (field 1, wire type 5). Capture the value without a TTY (no -t on \
                     kubectl/docker exec).",
                );
                let fixed = undo_crlf(value);
                let s = summarize_protobuf(&fixed);
                if s.error.is_none() {
                    hint.push_str(&format!(
                        " Undoing the translation decodes as {}.",
                        identity(&s)
                    ));
                }
                r.hint = Some(hint);
            }
            r.error = Some(error);
            r.decode_error = Some(e);
            r.lines
                .push("envelope could not be decoded; raw value:".into());
            r.lines.extend(hexdump(value, 0, HEXDUMP_LIMIT, ""));
            return;
        }
    };
    if dropped_nl {
        r.hint = Some(
            "ignored one trailing newline (0a) after the envelope (etcdctl and auger's extract \
             add one)"
                .into(),
        );
    }
    let mut out = Out::default();
    let text = |b: &[u8]| lossless_text(b);
    out.push(format!("apiVersion: {}", text(env.api_version)));
    out.push(format!("kind: {}", text(env.kind)));
    if !env.content_encoding.is_empty() {
        out.push(format!("contentEncoding: {}", text(env.content_encoding)));
    }
    if !env.content_type.is_empty() {
        out.push(format!("contentType: {}", text(env.content_type)));
    }
    if !env.content_encoding.is_empty() {
        out.push(format!(
            "raw ({} bytes, encoded; not decoded):",
            env.raw.len()
        ));
        for l in hexdump(env.raw, env.raw_offset, HEXDUMP_LIMIT, "  ") {
            out.push(l);
        }
        r.lines = out.finish();
        return;
    }
    let secret = env.api_version == b"v1" && env.kind == b"Secret";
    match object_meta_bytes(env.raw, env.raw_offset) {
        Ok(Some((meta, base))) => match (scan_meta(meta, base), meta_entries(meta, base)) {
            (Ok(m), Ok(e)) => {
                let mut id = String::new();
                if let Some(ns) = m.namespace.filter(|n| !n.is_empty()) {
                    id.push_str(&text(ns));
                    id.push('/');
                }
                id.push_str(&text(m.name.unwrap_or(b"")));
                out.push(format!("name: {id}"));
                if let Some(g) = m.generate_name.filter(|g| !g.is_empty()) {
                    out.push(format!("generateName: {}", text(g)));
                }
                if let Some(u) = m.uid.filter(|u| !u.is_empty()) {
                    out.push(format!("uid: {}", text(u)));
                }
                if let Some(rv) = m.resource_version.filter(|v| !v.is_empty()) {
                    out.push(format!("resourceVersion (stored): {}", text(rv)));
                }
                if let Some(g) = m.generation {
                    out.push(format!("generation: {g}"));
                }
                if let Some(t) = m.creation {
                    out.push(format!("creationTimestamp: {}", t.rfc3339()));
                }
                if !e.labels.is_empty() {
                    out.push("labels:".into());
                    for (k, v) in &e.labels {
                        out.push(format!("  {}: {}", text(k), text(v)));
                    }
                }
                if e.annotations > 0 {
                    out.push(format!("annotations: {}", e.annotations));
                }
                for (k, n) in &e.owners {
                    out.push(format!("ownedBy: {} {}", text(k), text(n)));
                }
                if !e.managed.is_empty() {
                    out.push(format!(
                        "managers (last writer: {}):",
                        text(m.manager.unwrap_or(b""))
                    ));
                    for me in &e.managed {
                        let mut l = format!(
                            "  {} {} {} {}",
                            text(me.manager),
                            text(me.operation),
                            text(me.api_version),
                            me.time.as_ref().map_or_else(|| "-".into(), Time::rfc3339)
                        );
                        if !me.subresource.is_empty() {
                            l.push_str(&format!(" (subresource {})", text(me.subresource)));
                        }
                        out.push(l);
                    }
                }
            }
            (Err(err), _) | (_, Err(err)) => {
                out.push(format!("field 1 is not an ObjectMeta ({err})"));
            }
        },
        Ok(None) => out.push("field 1 is not an ObjectMeta".into()),
        Err(err) => {
            r.error = Some(err.to_string());
            r.decode_error = Some(err);
        }
    }
    if secret && !opts.show_secrets {
        out.push("Secret: data and stringData values are redacted".into());
    }
    out.push(String::new());
    out.push(format!(
        "object ({} bytes) — {SCHEMA_UNKNOWN}:",
        env.raw.len()
    ));
    let redact = if secret && !opts.show_secrets {
        Redact::SecretTop
    } else {
        Redact::None
    };
    dump_message(&mut out, env.raw, env.raw_offset, 0, redact);
    r.lines = out.finish();
}
