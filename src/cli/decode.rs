//! `regscope decode`: stored values -> objects, offline (no etcd connection, no apiserver).
//!
//! Bytes enter from a file or stdin in one of three forms ([`parse_input`]): `etcdctl get -w
//! json` output (every kv, with its key and revisions), hex text, or the value bytes
//! themselves. Each value goes through [`crate::decode::decode`] (the same decoder as the
//! console's key view), and leaves as the object on stdout (YAML, JSON or the raw bytes) with
//! a header and any error on stderr. Nothing here assumes the input or the keys are UTF-8.

use std::collections::HashMap;
use std::hash::BuildHasher as _;
use std::io::{self, IsTerminal, Read, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::Value;

use super::etcdctl_json;
pub use super::etcdctl_json::StoredKv;
use crate::cli::args::{DecodeArgs, DecodeOutput, UiArgs};
use crate::decode::hexdump::hexdump;
use crate::decode::{
    decode, resource_of_key, yaml_lines, DecodeOptions, Decoded, Format, SchemaUse,
};
use crate::decrypt::Keyring;
use crate::model::escape_bytes;

/// Exit status when a value or the input could not be decoded.
pub const EXIT_UNDECODED: u8 = 1;

/// Bytes of a value shown as hex after a decode error.
const ERROR_DUMP_BYTES: usize = 64;

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
    fn describe(self) -> &'static str {
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
fn parse_hex(bytes: &[u8]) -> Result<Option<Vec<u8>>, String> {
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

/// What to do with the parsed input.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    pub output: DecodeOutput,
    pub show_secrets: bool,
    pub keyring: Option<&'a Keyring>,
    /// Say which input form was detected.
    pub verbose: bool,
    /// `-o raw` refuses to write bytes that are not text to a terminal.
    pub stdout_is_terminal: bool,
    /// `--key` was given (ignored, with a note, for etcdctl JSON).
    pub key_given: bool,
}

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
fn candidates_in<'k>(kv: &StoredKv, all: impl IntoIterator<Item = &'k StoredKv>) -> Vec<&'k [u8]> {
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

/// Decodes every value of `input` and writes objects to `out`, header and errors to `err`.
/// Returns the exit status: 0 when every value decoded, [`EXIT_UNDECODED`] otherwise.
pub fn write_decoded(
    input: &Input,
    req: &Request<'_>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    let mut w = DecodeWriter::new(req, input.form, out, err);
    w.begin(Some(&input.kvs))?;
    for kv in &input.kvs {
        w.kv(kv, &candidates_in(kv, &input.kvs))?;
    }
    w.finish(input.count)
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

fn etcd_key_bytes(key: &std::ffi::OsStr) -> Vec<u8> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt as _;
        key.as_bytes().to_vec()
    }
    #[cfg(not(unix))]
    {
        key.to_string_lossy().into_owned().into_bytes()
    }
}

/// Runs `regscope decode`. Errors (exit 2 from `main`) are the environment's: a FILE or an
/// `--encryption-config` that cannot be read; problems with the input or a value are exit 1
/// with the message on stderr.
pub fn run(args: &DecodeArgs, ui: &UiArgs) -> Result<ExitCode> {
    let (keyring, note) = match crate::cli::options::load_keyring(ui) {
        Ok(k) => k,
        // The context and the ConfigError only: ConfigError::Read already prints its I/O
        // error, which `{:#}` would repeat as the error's source.
        Err(e) => {
            let msg: Vec<String> = e.chain().take(2).map(ToString::to_string).collect();
            anyhow::bail!("{}", msg.join(": "))
        }
    };
    let mut input: Box<dyn Read> = match args.input.as_deref() {
        None => stdin_reader(),
        Some(p) if p.as_os_str() == "-" => stdin_reader(),
        Some(p) => Box::new(
            std::fs::File::open(p).with_context(|| format!("cannot read {}", p.display()))?,
        ),
    };
    // The first bytes tell etcdctl's output (read as a stream) from a value (read whole).
    let mut head = Vec::with_capacity(HEAD_BYTES);
    (&mut input)
        .take(HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .context("cannot read the input")?;
    let stderr = io::stderr();
    let mut err = stderr.lock();
    if let Some(n) = note {
        let _ = writeln!(err, "# note      {n}");
    }
    let stdout = io::stdout();
    let req = Request {
        output: args.output,
        show_secrets: ui.show_secrets,
        keyring: keyring.as_ref(),
        verbose: args.verbose,
        stdout_is_terminal: stdout.is_terminal(),
        key_given: args.key.is_some(),
    };
    let mut out = io::BufWriter::new(stdout.lock());
    let written = if etcdctl_json::looks_like_etcdctl(&head) {
        write_streamed(head.as_slice().chain(input), &req, &mut out, &mut err)
    } else {
        let mut bytes = head;
        input
            .read_to_end(&mut bytes)
            .context("cannot read the input")?;
        let key = args.key.as_deref().map(etcd_key_bytes).unwrap_or_default();
        match parse_input(&bytes, &key) {
            Ok(input) => write_decoded(&input, &req, &mut out, &mut err),
            Err(e) => {
                let _ = writeln!(err, "regscope: {e}");
                return Ok(ExitCode::from(EXIT_UNDECODED));
            }
        }
    };
    match written {
        Ok(code) => Ok(ExitCode::from(code)),
        // A reader that went away (`| head`) is not an error worth a message.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::from(EXIT_UNDECODED)),
        Err(e) => Err(anyhow::Error::new(e).context("writing the output")),
    }
}

/// Bytes read to tell the input's form before reading the rest.
const HEAD_BYTES: usize = 64;

/// etcdctl JSON from `input`, each kv decoded and written as it is read. An input error
/// (bad JSON, a wrong field) ends the output after the kvs before it, with the error on
/// `err` and [`EXIT_UNDECODED`].
pub fn write_streamed(
    input: impl Read,
    req: &Request<'_>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    // aesgcm candidates (see `candidates_in`): the encrypted values seen so far, by hash,
    // with the keys holding them. Only encrypted values, so memory stays that of the keys.
    let mut encrypted: HashMap<u64, Vec<StoredKv>> = HashMap::new();
    let hasher = foldhash::fast::FixedState::default();
    let mut w = DecodeWriter::new(req, InputForm::EtcdctlJson, out, err);
    w.begin(None)?;
    let read = etcdctl_json::stream(input, &mut |kv| {
        if !kv.value.starts_with(b"k8s:enc:") {
            return w.kv(&kv, &[]);
        }
        let same = encrypted.entry(hasher.hash_one(&kv.value)).or_default();
        w.kv(&kv, &candidates_in(&kv, same.iter()))?;
        if !same.iter().any(|o| o.key == kv.key) {
            same.push(StoredKv {
                key: kv.key,
                value: kv.value,
                ..Default::default()
            });
        }
        Ok(())
    });
    match read {
        Ok(end) => w.finish(end.count),
        Err(etcdctl_json::StreamError::Output(e)) => Err(e),
        Err(etcdctl_json::StreamError::Input(m)) => w.abort(&m),
    }
}

fn stdin_reader() -> Box<dyn Read> {
    if io::stdin().is_terminal() {
        eprintln!(
            "regscope decode: reading a value from the terminal (paste hex or JSON, then Ctrl-D); \
             usually: etcdctl get KEY -w json | regscope decode"
        );
    }
    Box::new(io::stdin().lock())
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    const POD: &str = "6b3873000a090a0276311203506f64120f0a0d0a0270311a0764656661756c741a002200";

    fn unhex(s: &str) -> Vec<u8> {
        parse_hex(s.as_bytes()).unwrap().unwrap()
    }

    fn req(output: DecodeOutput) -> Request<'static> {
        Request {
            output,
            show_secrets: false,
            keyring: None,
            verbose: true,
            stdout_is_terminal: false,
            key_given: false,
        }
    }

    fn run_on(bytes: &[u8], key: &[u8], r: &Request<'_>) -> (u8, String, String) {
        let input = match parse_input(bytes, key) {
            Ok(i) => i,
            Err(e) => return (1, String::new(), e),
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = write_decoded(&input, r, &mut out, &mut err).unwrap();
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn input_forms() {
        let i = parse_input(POD.as_bytes(), b"/registry/pods/default/p1").unwrap();
        assert_eq!(i.form, InputForm::Hex);
        assert_eq!(i.kvs[0].value.len(), 36);
        assert_eq!(i.kvs[0].key, b"/registry/pods/default/p1");
        let spaced = format!("0x{}\n", POD.replace("0a", "0A ").replace("00", "00\n"));
        assert_eq!(
            parse_input(spaced.as_bytes(), b"").unwrap().kvs[0].value,
            unhex(POD)
        );
        let raw = unhex(POD);
        let i = parse_input(&raw, b"").unwrap();
        assert_eq!((i.form, i.kvs[0].value.clone()), (InputForm::Raw, raw));
        // A stored JSON object is a value, not etcdctl output.
        let w = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"header":1}"#;
        assert_eq!(parse_input(w, b"").unwrap().form, InputForm::Raw);
        assert!(parse_input(b"abc", b"").unwrap_err().contains("odd number"));
        assert!(parse_input(b"", b"").unwrap_err().starts_with("no input"));
        assert!(parse_input(b" \n", b"")
            .unwrap_err()
            .starts_with("no input"));
    }

    #[test]
    fn etcdctl_json_fields() {
        let json = format!(
            r#"{{"header":{{"cluster_id":14841639068965178418,"revision":9}},"kvs":[{{"key":"{}","create_revision":"2","mod_revision":7,"version":3,"value":"{}","lease":7587}}],"count":1}}"#,
            base64::engine::general_purpose::STANDARD.encode("/registry/pods/default/p1"),
            base64::engine::general_purpose::STANDARD.encode(unhex(POD)),
        );
        let i = parse_input(json.as_bytes(), b"").unwrap();
        assert_eq!(i.form, InputForm::EtcdctlJson);
        let kv = &i.kvs[0];
        assert_eq!(
            (kv.create_revision, kv.mod_revision, kv.version, kv.lease),
            (Some(2), Some(7), Some(3), Some(7587))
        );
        for (bad, want) in [
            (
                r#"{"kvs":[{"key":1}]}"#,
                "kvs[0].key: expected a base64 string, found 1",
            ),
            (r#"{"kvs":[{"key":"!!"}]}"#, "kvs[0].key: not base64"),
            (
                r#"{"kvs":[{"key":"YQ==","value":"YQ==","mod_revision":true}]}"#,
                "kvs[0].mod_revision: expected an integer, found true",
            ),
            (r#"{"kvs":{}}"#, "kvs: expected an array, found an object"),
            (r#"{"kvs":[3]}"#, "kvs[0]: expected an object, found 3"),
            (
                r#"{"header":{"revision":1},"kvs":["#,
                "etcdctl JSON: not valid JSON",
            ),
        ] {
            let e = parse_input(bad.as_bytes(), b"").unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
        }
        let (code, out, err) = run_on(
            br#"{"header":{"revision":5},"count":0}"#,
            b"",
            &req(DecodeOutput::Yaml),
        );
        assert_eq!((code, out.as_str()), (1, ""));
        assert!(err.contains("holds no kvs"), "{err}");
    }

    #[test]
    fn yaml_json_and_errors() {
        let (code, out, err) = run_on(
            POD.as_bytes(),
            b"/registry/pods/default/p1",
            &req(DecodeOutput::Yaml),
        );
        assert_eq!(code, 0, "{err}");
        assert!(
            out.contains("kind: Pod") && out.contains("name: p1"),
            "{out}"
        );
        assert!(err.contains("# input     hex text (36 bytes)"), "{err}");
        assert!(err.contains("# resource  pods"), "{err}");
        let (code, out, _) = run_on(POD.as_bytes(), b"", &req(DecodeOutput::Json));
        assert_eq!(code, 0);
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["metadata"]["namespace"], "default");
        // Not a Kubernetes encoding: exit 1, the message and a hex dump on stderr.
        let (code, out, err) = run_on(b"hello world\x00\x01", b"", &req(DecodeOutput::Yaml));
        assert_eq!((code, out.as_str()), (1, ""));
        assert!(
            err.contains("regscope: value: not a Kubernetes encoding"),
            "{err}"
        );
        assert!(err.contains("#   00000000  68 65 6c 6c 6f"), "{err}");
        // Invalid JSON value.
        let (code, _, err) = run_on(
            b"{\"kind\":",
            b"/registry/example.com/widgets/default/w1",
            &req(DecodeOutput::Json),
        );
        assert_eq!(code, 1);
        assert!(
            err.contains("regscope: /registry/example.com/widgets/default/w1: JSON: EOF"),
            "{err}"
        );
    }

    #[test]
    fn non_utf8_key_is_escaped_in_the_header() {
        // Not UTF-8: /registry/configmaps/default/cm followed by a stray byte 0xff.
        let key = unhex("2f72656769737472792f636f6e6669676d6170732f64656661756c742f636dff");
        let (code, _, err) = run_on(POD.as_bytes(), &key, &req(DecodeOutput::Yaml));
        assert_eq!(code, 0, "{err}");
        assert!(
            err.contains("# key       /registry/configmaps/default/cm\\xff"),
            "{err}"
        );
        assert!(err.contains("# resource  configmaps"), "{err}");
    }

    #[test]
    fn raw_output_guards() {
        let pod = unhex(POD);
        let (code, out, _) = run_on(POD.as_bytes(), b"", &req(DecodeOutput::Raw));
        assert_eq!((code, out.as_bytes()), (0, pod.as_slice()));
        let tty = Request {
            stdout_is_terminal: true,
            ..req(DecodeOutput::Raw)
        };
        let (code, out, err) = run_on(POD.as_bytes(), b"", &tty);
        assert_eq!((code, out.as_str()), (1, ""));
        assert!(err.contains("binary bytes to a terminal"), "{err}");
        // An unencrypted Secret is plaintext: only with --show-secrets.
        let s3 = "6b3873000a0c0a0276311206536563726574120f0a0d0a0273331a0764656661756c741a002200";
        let (code, out, err) = run_on(s3.as_bytes(), b"", &req(DecodeOutput::Raw));
        assert_eq!((code, out.as_str()), (1, ""));
        assert!(err.contains("--show-secrets"), "{err}");
        let show = Request {
            show_secrets: true,
            ..req(DecodeOutput::Raw)
        };
        assert_eq!(run_on(s3.as_bytes(), b"", &show).0, 0);
    }

    #[test]
    fn secret_bytes_never_dumped() {
        // Under secrets/ but not decodable: the error, no hex dump of the bytes.
        let (code, _, err) = run_on(
            b"top secret",
            b"/registry/secrets/default/x",
            &req(DecodeOutput::Yaml),
        );
        assert_eq!(code, 1);
        assert!(!err.contains("74 6f 70"), "{err}");
        assert!(err.contains("redacted whole"), "{err}");
    }
}
