//! `regscope decode`: stored values -> objects, offline (no etcd connection, no apiserver).
//!
//! Bytes enter from a file or stdin in one of three forms ([`parse_input`]): `etcdctl get -w
//! json` output (every kv, with its key and revisions), hex text, or the value bytes
//! themselves. Each value goes through [`crate::decode::decode`] (the same decoder as the
//! console's opened key), and leaves as the object on stdout (YAML, JSON or the raw bytes) with
//! a header and any error on stderr. Nothing here assumes the input or the keys are UTF-8.

mod input;
mod output;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::hash::BuildHasher as _;
use std::io::{self, IsTerminal, Read, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::etcdctl_json;
pub use super::etcdctl_json::StoredKv;
use crate::cli::args::{DecodeArgs, DecodeOutput, UiArgs};
use crate::decrypt::Keyring;
pub use input::{parse_input, Input, InputForm};
use output::candidates_in;
pub use output::DecodeWriter;

/// Exit status when a value or the input could not be decoded.
pub const EXIT_UNDECODED: u8 = 1;

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

/// A key given on the command line as the bytes it names (its OS bytes on Unix).
pub(crate) fn etcd_key_bytes(key: &std::ffi::OsStr) -> Vec<u8> {
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
