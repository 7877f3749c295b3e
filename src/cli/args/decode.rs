//! Flags of `regscope decode`, its long help and examples.

use std::path::PathBuf;

use clap::Args;

pub(super) const DECODE_ABOUT: &str = "\
Decode stored values offline, without an apiserver: what exactly is stored under a key.

Input (FILE, or stdin when FILE is - or absent; read as bytes, never assumed to be text):
  * `etcdctl get KEY -w json` output: every kv is decoded; its key gives the resource and
    aesgcm's authenticated data, its mod_revision becomes metadata.resourceVersion.
  * hex text: only hex digits and whitespace, optional 0x prefix (e.g. from auger or xxd -p).
  * anything else: the value bytes themselves (e.g. `etcdctl get KEY --print-value-only`).

Values may be protobuf (k8s\\x00 envelope), JSON or CBOR, and encrypted at rest (aescbc,
aesgcm, secretbox with --encryption-config; KMS values are identified only). Kinds without a
built-in schema (OpenShift, aggregated APIs) print with metadata and a field dump by number.
Secret data and stringData print as `<redacted: N bytes>` unless --show-secrets.

stdout carries only the object(s); the header (key, resource, revisions, format,
encryption, schema) and every error go to stderr. Exit status: 0 when every value decoded,
1 when any value or the input could not be decoded, 2 for a FILE or --encryption-config that
cannot be read.";

pub(super) const DECODE_EXAMPLES: &str = "Examples:
  etcdctl get /registry/pods/default/p1 -w json | regscope decode
  etcdctl get /registry/pods/default/p1 -w json | regscope decode -o json | jq .spec
  etcdctl get /registry/pods/ --prefix -w json > pods.json
  regscope decode pods.json -o json | jq '.[].metadata.name'
  regscope decode value.bin --key /registry/secrets/default/s1 \\
      --encryption-config /etc/kubernetes/enc.yaml
  xxd -p value.bin | regscope decode --key /registry/pods/default/p1
  etcdctl get /registry/pods/default/p1 -w json | regscope decode -o raw > p1.bin";

/// `regscope decode` options. `--encryption-config` and `--show-secrets` are the global UI
/// flags ([`super::UiArgs`]).
#[derive(Debug, Args, Clone)]
pub struct DecodeArgs {
    /// Input file; stdin when `-` or absent.
    #[arg(value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// The etcd key the value is stored under (for a bare value; etcdctl JSON carries its
    /// keys): gives the resource, picks the encryption key and is aesgcm's authenticated data.
    #[arg(long, value_name = "KEY")]
    pub key: Option<std::ffi::OsString>,
    /// Output: yaml (documents separated by ---), json (an array for several kvs), jsonl
    /// (one compact object per line), or raw (the stored value bytes; one kv only).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = DecodeOutput::Yaml)]
    pub output: DecodeOutput,
    /// Say on stderr which input form was detected.
    #[arg(short, long)]
    pub verbose: bool,
}

/// What `regscope decode` prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DecodeOutput {
    /// The object as YAML (keys sorted, as kubectl prints them).
    Yaml,
    /// The object as pretty JSON (several kvs: one array).
    Json,
    /// One compact JSON object per line, written as each kv is read (for `jq -c`,
    /// `grep`, `split`).
    Jsonl,
    /// The stored value bytes exactly as received (ciphertext stays ciphertext).
    Raw,
}
