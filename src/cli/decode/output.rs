//! Each value of `regscope decode` decoded and written: the object on stdout (YAML, JSON,
//! JSON lines or the raw bytes, [`DecodeWriter`]), its header (key, resource, revisions,
//! format, encryption, schema) and any error on stderr.

use std::io::{self, Write};

use serde_json::Value;

use super::input::InputForm;
use super::{Request, StoredKv, EXIT_UNDECODED};
use crate::cli::args::DecodeOutput;
use crate::decode::hexdump::hexdump;
use crate::decode::{
    decode, resource_of_key, yaml_lines, DecodeOptions, Decoded, Format, SchemaUse,
};
use crate::model::escape_bytes;

/// Bytes of a value shown as hex after a decode error.
const ERROR_DUMP_BYTES: usize = 64;

/// The outcome of one value.
struct Outcome {
    decoded: Decoded,
    /// Why the value counts as not decoded (one line), if it does.
    failure: Option<String>,
}

fn is_encrypted(d: &Decoded) -> bool {
    matches!(d.format, Format::Encrypted { .. })
}

/// Other keys known to hold the very same bytes as `kv`: aesgcm binds a value to the key
/// it was written under, and with these the decoder can say "copied from there" instead
/// of "wrong key".
pub(super) fn candidates_in<'k>(
    kv: &StoredKv,
    all: impl IntoIterator<Item = &'k StoredKv>,
) -> Vec<&'k [u8]> {
    all.into_iter()
        .filter(|o| o.value == kv.value && o.key != kv.key && !o.key.is_empty())
        .map(|o| o.key.as_slice())
        .collect()
}

fn decode_kv(kv: &StoredKv, candidates: &[&[u8]], req: &Request<'_>) -> Outcome {
    let d = decode(
        &kv.value,
        &DecodeOptions {
            show_secrets: req.show_secrets,
            etcd_key: &kv.key,
            mod_revision: kv.mod_revision,
            keyring: req.keyring,
            candidates,
        },
    );
    let failure = match &d.encryption {
        Some(enc) if !enc.decrypted => {
            let mut m = enc
                .message
                .clone()
                .unwrap_or_else(|| format!("{} not decrypted", enc.label));
            if kv.key.is_empty() && enc.label.starts_with("aesgcm") {
                m.push_str(
                    "; aesgcm authenticates the etcd key the value was written under: give it with --key",
                );
            }
            Some(m)
        }
        _ if d.json.is_none() || d.error.is_some() => Some(if d.redacted_whole {
            let why = d.error.as_deref().map_or_else(
                || format!("it decodes as {}", identity(&d)),
                |e| format!("it does not decode: {e}"),
            );
            format!(
                "a Secret, or a value under secrets/, that does not decode cleanly ({why}); redacted whole (--show-secrets shows it)"
            )
        } else {
            d.error.clone().unwrap_or_else(|| "nothing decoded".into())
        }),
        _ => None,
    };
    // etcdctl writes no `value` for an empty one (nor any with --keys-only).
    let failure = if kv.value.is_empty() {
        Some("empty value (or etcdctl get --keys-only output, which holds no values)".into())
    } else {
        failure
    };
    Outcome {
        decoded: d,
        failure,
    }
}

fn identity(d: &Decoded) -> String {
    let s = &d.summary;
    let mut parts = Vec::new();
    if let Some(a) = &s.api_version {
        parts.push(a.clone());
    }
    if let Some(k) = &s.kind {
        parts.push(k.clone());
    }
    match (&s.namespace, &s.name) {
        (Some(ns), Some(n)) => parts.push(format!("{ns}/{n}")),
        (None, Some(n)) => parts.push(n.clone()),
        _ => {}
    }
    if parts.is_empty() {
        "(no apiVersion, kind or name)".into()
    } else {
        parts.join(" ")
    }
}

/// The header lines for one value (stderr). `#` comments, so that `2>&1` output stays YAML.
fn header(kv: &StoredKv, o: &Outcome, req: &Request<'_>) -> Vec<String> {
    let d = &o.decoded;
    let mut h = Vec::new();
    if !kv.key.is_empty() {
        h.push(format!("# key       {}", escape_bytes(&kv.key)));
        let resource = resource_of_key(&kv.key);
        if !resource.is_empty() {
            h.push(format!("# resource  {resource}"));
        }
    }
    let mut revs = Vec::new();
    for (name, v) in [
        ("create", kv.create_revision),
        ("mod", kv.mod_revision),
        ("version", kv.version),
    ] {
        if let Some(v) = v {
            revs.push(format!("{name} {v}"));
        }
    }
    if let Some(l) = kv.lease.filter(|&l| l != 0) {
        revs.push(format!("lease {l:x}"));
    }
    if !revs.is_empty() {
        h.push(format!("# revision  {}", revs.join(", ")));
    }
    let format = match &d.encryption {
        Some(enc) if enc.decrypted => format!(
            "encrypted {}, decrypted (payload {})",
            enc.label,
            d.payload_format.label()
        ),
        Some(enc) => format!("encrypted {}, not decrypted", enc.label),
        None if req.keyring.is_some() => {
            format!("{}, not encrypted (identity)", d.format.describe())
        }
        None => d.format.describe(),
    };
    h.push(format!("# format    {format}"));
    if d.json.is_some() || d.summary.kind.is_some() {
        h.push(format!("# object    {}", identity(d)));
    }
    match &d.schema {
        SchemaUse::Known { version, message } => {
            let unknown = match d.unknown_fields {
                0 => String::new(),
                n => format!(
                    ", {n} field(s) unknown to the 1.30–1.35 schemas (newer apiserver, or removed since) under {}",
                    crate::decode::object::UNKNOWN_FIELDS_KEY
                ),
            };
            h.push(format!(
                "# schema    Kubernetes {version} {message}{unknown}"
            ));
        }
        SchemaUse::Unknown => h.push(format!(
            "# schema    schema unknown: no Kubernetes 1.30–1.35 schema has this kind; metadata \
             decoded, other fields by number under {}",
            crate::decode::object::UNKNOWN_FIELDS_KEY
        )),
        SchemaUse::NotApplicable => {}
    }
    if d.json.is_some() {
        // Decoded, with something worth saying (e.g. a schema walk error that fell back to
        // the field dump).
        if let Some(e) = &d.error {
            h.push(format!("# note      {e}"));
        }
    }
    if let Some(hint) = &d.hint {
        h.push(format!("# hint      {hint}"));
    }
    h
}

/// True when showing the value's bytes could show Secret data in the clear.
fn secret_sensitive(kv: &StoredKv, d: &Decoded, req: &Request<'_>) -> bool {
    !req.show_secrets
        && !is_encrypted(d)
        && (resource_of_key(&kv.key) == "secrets" || d.summary.is_secret() || d.redacted_whole)
}

fn error_lines(kv: &StoredKv, o: &Outcome, failure: &str, req: &Request<'_>) -> Vec<String> {
    let what = if kv.key.is_empty() {
        "value".to_string()
    } else {
        escape_bytes(&kv.key).into_owned()
    };
    let mut lines = vec![format!("regscope: {what}: {failure}")];
    let d = &o.decoded;
    if d.encryption.is_none() && !secret_sensitive(kv, d, req) && !kv.value.is_empty() {
        let n = kv.value.len().min(ERROR_DUMP_BYTES);
        lines.push(format!("# first {n} of {} bytes:", kv.value.len()));
        lines.extend(hexdump(&kv.value[..n], 0, n, "#   "));
    }
    lines
}

/// Writes values as they come: each decoded and written before the next is read, so that
/// a 100 MB `etcdctl get -w json` export takes memory for one object at a time.
///
/// `-o json` keeps its shape (one kv: the object; several: an array, `[]` when none
/// decoded) by holding the first object until a second kv shows there are several;
/// `-o raw` holds the one kv it may write.
pub struct DecodeWriter<'w, 'r, 'a> {
    req: &'r Request<'a>,
    form: InputForm,
    out: &'w mut dyn Write,
    err: &'w mut dyn Write,
    /// kvs handed in, values that did not decode.
    seen: usize,
    failed: usize,
    /// Objects written (YAML documents, JSON lines or array elements).
    printed: usize,
    /// `-o json`: the first object, until a second kv opens the array.
    held: Option<Value>,
    array_open: bool,
    /// `-o raw`: the first kv.
    raw: Option<StoredKv>,
    /// The `# input` line waits for the count when the kvs were not known up front.
    input_line_pending: bool,
}

impl<'w, 'r, 'a> DecodeWriter<'w, 'r, 'a> {
    pub fn new(
        req: &'r Request<'a>,
        form: InputForm,
        out: &'w mut dyn Write,
        err: &'w mut dyn Write,
    ) -> Self {
        DecodeWriter {
            req,
            form,
            out,
            err,
            seen: 0,
            failed: 0,
            printed: 0,
            held: None,
            array_open: false,
            raw: None,
            input_line_pending: false,
        }
    }

    /// Before the first kv: the notes that do not depend on the values. `kvs` when all are
    /// known up front (then `-v`'s input line comes first, else last).
    pub fn begin(&mut self, kvs: Option<&[StoredKv]>) -> io::Result<()> {
        if self.req.verbose {
            match (self.form, kvs) {
                (InputForm::EtcdctlJson, Some(kvs)) => self.input_line(kvs.len())?,
                (InputForm::EtcdctlJson, None) => self.input_line_pending = true,
                (form, kvs) => writeln!(
                    self.err,
                    "# input     {} ({} bytes)",
                    form.describe(),
                    kvs.and_then(|k| k.first()).map_or(0, |k| k.value.len())
                )?,
            }
        }
        if self.form == InputForm::EtcdctlJson && self.req.key_given {
            writeln!(
                self.err,
                "# note      --key ignored: etcdctl JSON names its keys"
            )?;
        }
        Ok(())
    }

    fn input_line(&mut self, n: usize) -> io::Result<()> {
        writeln!(
            self.err,
            "# input     {} ({n} kv{})",
            self.form.describe(),
            if n == 1 { "" } else { "s" }
        )
    }

    /// One value: decoded, its header and any error on `err`, the object on `out`.
    /// `candidates`: other keys known to hold the same bytes (see [`candidates_in`]).
    pub fn kv(&mut self, kv: &StoredKv, candidates: &[&[u8]]) -> io::Result<()> {
        self.seen += 1;
        if self.req.output == DecodeOutput::Raw {
            if self.raw.is_none() {
                self.raw = Some(kv.clone());
            }
            return Ok(());
        }
        if self.seen == 2 && self.req.output == DecodeOutput::Json {
            writeln!(self.out, "[")?;
            self.array_open = true;
            if let Some(first) = self.held.take() {
                self.array_element(&first)?;
            }
        }
        let o = decode_kv(kv, candidates, self.req);
        if self.seen > 1 {
            writeln!(self.err)?;
        }
        for line in header(kv, &o, self.req) {
            writeln!(self.err, "{line}")?;
        }
        let value = match (&o.failure, o.decoded.value()) {
            (None, Some(v)) => v,
            (failure, _) => {
                let failure = failure.as_deref().unwrap_or("nothing decoded");
                for line in error_lines(kv, &o, failure, self.req) {
                    writeln!(self.err, "{line}")?;
                }
                self.failed += 1;
                return Ok(());
            }
        };
        match self.req.output {
            DecodeOutput::Yaml => {
                if self.printed > 0 {
                    writeln!(self.out, "---")?;
                }
                for line in yaml_lines(&value) {
                    writeln!(self.out, "{line}")?;
                }
                self.printed += 1;
                // Keeps each document next to its header on a terminal.
                self.out.flush()?;
            }
            DecodeOutput::Jsonl => {
                let line = serde_json::to_string(&value).map_err(io::Error::other)?;
                writeln!(self.out, "{line}")?;
                self.printed += 1;
                // Each line leaves as it is made, for a reader at the other end of a pipe.
                self.out.flush()?;
            }
            DecodeOutput::Json if self.array_open => self.array_element(&value)?,
            DecodeOutput::Json => self.held = Some(value),
            DecodeOutput::Raw => {}
        }
        Ok(())
    }

    /// One element of the `-o json` array, indented as `serde_json::to_string_pretty`
    /// indents an array's elements.
    fn array_element(&mut self, v: &Value) -> io::Result<()> {
        if self.printed > 0 {
            writeln!(self.out, ",")?;
        }
        let text = serde_json::to_string_pretty(v).map_err(io::Error::other)?;
        for (i, line) in text.lines().enumerate() {
            if i > 0 {
                writeln!(self.out)?;
            }
            write!(self.out, "  {line}")?;
        }
        self.printed += 1;
        Ok(())
    }

    /// After the last kv: what closes the output, the notes that needed every kv, and
    /// the exit status (0 when every value decoded, [`EXIT_UNDECODED`] otherwise).
    /// `count`: etcdctl's count of matching keys, when the input said.
    pub fn finish(mut self, count: Option<i64>) -> io::Result<u8> {
        let n = self.seen;
        if self.input_line_pending {
            self.input_line(n)?;
        }
        if self.form == InputForm::EtcdctlJson {
            if n == 0 {
                writeln!(
                    self.err,
                    "regscope: etcdctl JSON holds no kvs (count {}): no key matched at that revision",
                    count.unwrap_or(0)
                )?;
                return Ok(EXIT_UNDECODED);
            }
            if let Some(c) = count.filter(|&c| c > n as i64) {
                writeln!(
                    self.err,
                    "# note      {n} of {c} matching keys in the input (etcdctl --limit?)"
                )?;
            }
        }
        if self.req.output == DecodeOutput::Raw {
            return match self.raw.take() {
                Some(kv) if n == 1 => write_raw(&kv, self.req, self.out, self.err),
                _ => {
                    writeln!(
                        self.err,
                        "regscope: -o raw writes one value; the input holds {n} (get a single key, or use -o yaml/json)"
                    )?;
                    Ok(EXIT_UNDECODED)
                }
            };
        }
        self.close_output()?;
        if self.failed > 0 {
            if n > 1 {
                writeln!(
                    self.err,
                    "regscope: {} of {n} values not decoded",
                    self.failed
                )?;
            }
            return Ok(EXIT_UNDECODED);
        }
        Ok(0)
    }
}

impl DecodeWriter<'_, '_, '_> {
    /// Ends what is on `out`: the `-o json` array closed (so that what was written stays
    /// valid JSON), or the one object held written.
    fn close_output(&mut self) -> io::Result<()> {
        if self.req.output == DecodeOutput::Json {
            if self.array_open {
                if self.printed > 0 {
                    writeln!(self.out)?;
                }
                writeln!(self.out, "]")?;
            } else if let Some(v) = self.held.take() {
                let text = serde_json::to_string_pretty(&v).map_err(io::Error::other)?;
                writeln!(self.out, "{text}")?;
            }
        }
        self.out.flush()
    }

    /// The input broke off after the kvs written so far: closes the output and says
    /// `why` (one line) on `err`. Returns [`EXIT_UNDECODED`].
    pub fn abort(mut self, why: &str) -> io::Result<u8> {
        self.close_output()?;
        writeln!(self.err, "regscope: {why}")?;
        if self.seen > 0 {
            writeln!(
                self.err,
                "regscope: stopped after {} kv(s) ({} not decoded)",
                self.seen, self.failed
            )?;
        }
        Ok(EXIT_UNDECODED)
    }
}

/// `-o raw`: the stored bytes of the one value, as received. Ciphertext stays ciphertext;
/// an unencrypted Secret needs `--show-secrets`; binary bytes are not written to a terminal.
fn write_raw(
    kv: &StoredKv,
    req: &Request<'_>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    let o = decode_kv(kv, &[], req);
    for line in header(kv, &o, req) {
        writeln!(err, "{line}")?;
    }
    if let Some(f) = &o.failure {
        // The bytes are still written: -o raw is for extracting them, decodable or not.
        writeln!(err, "# note      not decodable: {f}")?;
    }
    if secret_sensitive(kv, &o.decoded, req) {
        writeln!(
            err,
            "regscope: refusing -o raw: the value is an unencrypted Secret (or stored under \
             secrets/) and its bytes hold the data in the clear; add --show-secrets"
        )?;
        return Ok(EXIT_UNDECODED);
    }
    if req.stdout_is_terminal && !is_printable_text(&kv.value) {
        writeln!(
            err,
            "regscope: refusing to write {} binary bytes to a terminal; redirect stdout \
             (> value.bin) or use -o yaml",
            kv.value.len()
        )?;
        return Ok(EXIT_UNDECODED);
    }
    out.write_all(&kv.value)?;
    out.flush()?;
    Ok(0)
}

/// UTF-8 without control characters other than tab, CR and LF.
fn is_printable_text(b: &[u8]) -> bool {
    std::str::from_utf8(b).is_ok_and(|s| {
        !s.chars()
            .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
    })
}
