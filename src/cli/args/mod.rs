//! Command-line flags (clap). Connection flags mirror etcdctl's and honour the same
//! `ETCDCTL_*` environment variables.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod conn;

pub use conn::{ConnArgs, MetricsArgs};

/// regscope: watch what kube-apiserver does to etcd, live.
///
/// Without a subcommand, opens the console on the etcd given by --endpoints (or
/// ETCDCTL_ENDPOINTS). With no endpoint given it reads what the control-plane node runs
/// (kubeadm's and RKE2's static pod manifests, k3s's etcd config): every etcd member and the
/// apiserver's etcd client certificate, its --etcd-prefix, encryption config and etcd's
/// metrics URL, so on a control-plane node `sudo regscope` just works; `regscope doctor`
/// prints what was found and checks it. Flags and ETCDCTL_* win over what is found.
/// regscope never writes to an etcd it did not start itself.
#[derive(Debug, Parser)]
#[command(name = "regscope", version, about, long_about, after_help = EXAMPLES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub ui: UiArgs,
    #[command(flatten)]
    pub metrics: MetricsArgs,
    #[command(flatten)]
    pub node: NodeArgs,
    /// Every [`CONFIG_KEYS`] setting as in effect and where it came from.
    #[arg(skip)]
    pub settings: Vec<Setting>,
    /// What in the config file could not be used.
    #[arg(skip)]
    pub config_warnings: Vec<String>,
}

/// The [`CONFIG_KEYS`] settings at the root, with their values and origins.
fn settings(m: &clap::ArgMatches) -> Vec<Setting> {
    use clap::parser::ValueSource;
    CONFIG_KEYS
        .iter()
        .map(|&key| {
            let id = key.replace('-', "_");
            let value = m.try_get_raw(&id).ok().flatten().map(|vals| {
                vals.map(|v| v.to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join(",")
            });
            let origin = match m.value_source(&id) {
                Some(ValueSource::CommandLine) => "command line",
                Some(ValueSource::EnvVariable) => "environment",
                _ => "default",
            };
            // A password given in --user NAME:PASSWORD is not printed.
            let value = match (key, value) {
                ("user", Some(u)) => Some(u.split(':').next().unwrap_or("").to_string()),
                (_, v) => v,
            };
            Setting {
                key,
                value,
                origin: origin.to_string(),
            }
        })
        .collect()
}

/// Where the node's files are read (global).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Node discovery")]
pub struct NodeArgs {
    /// Read the node's manifests, certificates and configs under DIR instead of / (a
    /// copied node's files, a test tree). Paths found in them are read under DIR too.
    #[arg(long, global = true, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
}

impl Default for NodeArgs {
    fn default() -> Self {
        NodeArgs { root: "/".into() }
    }
}

const EXAMPLES: &str = "Examples:
  regscope demo                                   private etcd + simulated control plane
  sudo regscope                                   on a kubeadm control-plane node
  regscope --endpoints http://127.0.0.1:2379      a plain-HTTP etcd
  regscope snapshot --json | jq .resources        what is stored, per resource
  regscope verify                                 replica vs etcd, exit 1 on any difference
  sudo regscope doctor                            what the node runs, every connection checked
  regscope --kubeconfig ~/.kube/config --context prod    apiserver metrics and informers too
  regscope --apiserver-metrics-url https://127.0.0.1:6443/metrics \
      --apiserver-token-file token --apiserver-cacert /etc/kubernetes/pki/ca.crt
  regscope snapshot --json --apiserver-metrics-file m1.prom --apiserver-metrics-file m2.prom
  regscope record -o incident.rgs --duration 30m   record headless (R in the console)
  regscope replay incident.rgs                     scrub through a recording
  etcdctl get /registry/pods/default/p1 -w json | regscope decode   one stored object
  regscope completions bash > /etc/bash_completion.d/regscope; regscope man | man -l -
Keys inside the console: press ? for help.";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start a private etcd (the `etcd` binary on PATH) on a free loopback port with a temp
    /// data dir, run a simulated control plane against it and open the console.
    Demo(DemoArgs),
    /// Connect, list the prefix, print the store's summary and exit.
    Snapshot(SnapshotArgs),
    /// Mirror the prefix (list + watch until caught up), then read etcd at the replica's
    /// revision and compare every key, value, create/mod revision and version. Exit 1 on
    /// any difference.
    Verify(VerifyArgs),
    /// Record the session headless (no terminal: under nohup, systemd or timeout) to a file
    /// that `regscope replay` opens: the same connection and scrape flags as the console.
    #[command(after_help = RECORD_EXAMPLES)]
    Record(RecordArgs),
    /// Open a recording in the console with a timeline: play, pause, speed, step, seek to
    /// a time or a revision, jump between markers. `--check` only verifies the file.
    #[command(after_help = REPLAY_EXAMPLES)]
    Replay(ReplayArgs),
    /// Write a recording's observations as JSON lines (one per event, per listed key, per
    /// scrape and per other observation; none for clock ticks).
    Export(ExportArgs),
    /// Decode stored values offline: `etcdctl get -w json` output, a hex string or the raw
    /// value bytes, from FILE or stdin. Prints the object on stdout, a header on stderr.
    #[command(long_about = DECODE_ABOUT, after_help = DECODE_EXAMPLES)]
    Decode(DecodeArgs),
    /// Print what the node runs (found in its manifests and configs, with the file and
    /// flag of each fact), then check every connection: each etcd member (TLS, auth,
    /// version, leader, db size), an events etcd, etcd's metrics, the encryption config.
    /// Says what to do for each failure. Exit 0 when all is well, 1 otherwise.
    #[command(after_help = DOCTOR_EXAMPLES)]
    Doctor(DoctorArgs),
    /// Print a shell completion script: `regscope completions bash >
    /// /etc/bash_completion.d/regscope`, `regscope completions zsh > ~/.zfunc/_regscope`,
    /// `regscope completions fish > ~/.config/fish/completions/regscope.fish`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), made from these same flags and texts:
    /// `regscope man | man -l -`, or `regscope man > /usr/local/share/man/man1/regscope.1`.
    Man,
    /// Print the effective settings and where each came from (command line, environment,
    /// config file, default); with `keymap` or `theme`, the embedded default file (TOML) to
    /// copy and override: `regscope print-config keymap > keys.toml`, then
    /// `regscope --keymap keys.toml`. The config file (~/.config/regscope/config.toml, or
    /// $REGSCOPE_CONFIG) sets default flags: `theme = "light"`, `history-budget = "1GiB"`.
    PrintConfig {
        /// Which file; the settings when omitted.
        #[arg(value_enum)]
        which: Option<ConfigFile>,
    },
}

const DOCTOR_EXAMPLES: &str = "Examples:
  sudo regscope doctor                      on a kubeadm, RKE2 or k3s control-plane node
  regscope doctor --json | jq '.checks[] | select(.ok | not)'
  regscope doctor --root /tmp/node-copy     a copied node's /etc and /var/lib trees";

/// `regscope doctor` options.
#[derive(Debug, Args, Clone)]
pub struct DoctorArgs {
    /// Print JSON: {root, layout, facts, problems, checks, ok}.
    #[arg(long)]
    pub json: bool,
    /// Seconds to wait for each connection.
    #[arg(long, default_value = "3s", value_parser = parse_duration, value_name = "DURATION")]
    pub timeout: std::time::Duration,
    /// Filled from the global --encryption-config (checked instead of the node's).
    #[arg(skip)]
    pub encryption_config: Option<PathBuf>,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// One of the embedded configuration files.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ConfigFile {
    /// keymaps/default.toml (for --keymap)
    Keymap,
    /// themes/default.toml (for --theme)
    Theme,
}

/// Console options (global: `--encryption-config` and `--show-secrets` also serve `decode`).
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Display and decryption")]
pub struct UiArgs {
    /// Key bindings: a shipped set (default: vim-style; emacs), the name of a file in
    /// ~/.config/regscope/keymaps/, or a TOML file; merged over the default (see
    /// `regscope print-config keymap`).
    #[arg(long, global = true, value_name = "NAME|FILE")]
    pub keymap: Option<PathBuf>,
    /// Colour theme: a shipped one (default, light, high-contrast, 16-colour), the name of
    /// a file in ~/.config/regscope/themes/, or a TOML file; merged over the default.
    #[arg(long, global = true, value_name = "NAME|FILE")]
    pub theme: Option<PathBuf>,
    /// Show Secret data instead of `<redacted: N bytes>` (console, decode, export). With
    /// `record`: write Secret values into the file as etcd holds them (the file's header
    /// says so and its replay warns).
    #[arg(long, global = true)]
    pub show_secrets: bool,
    /// The kube-apiserver's EncryptionConfiguration (its `--encryption-provider-config`), to
    /// decrypt values encrypted at rest (aescbc, aesgcm, secretbox; KMS values are only
    /// identified). Default: the file the node's kube-apiserver manifest names in its
    /// --encryption-provider-config, when there is one.
    #[arg(long, global = true, value_name = "FILE")]
    pub encryption_config: Option<PathBuf>,
    /// Mouse in the console: click tabs and rows (a click on the selected row opens it),
    /// scroll with the wheel. Off by default: with it, selecting text needs the terminal's
    /// modifier (often Shift).
    #[arg(long, global = true)]
    pub mouse: bool,
    /// Where `S` in the console saves screenshots (SVG and text; default: the current
    /// directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub screenshot_dir: Option<PathBuf>,
    /// The time zone every time is shown and read in, console and CLI alike: `local` (the
    /// default: $TZ, else the system's) or `utc`. A time given with a zone or an offset
    /// (`07:44:03Z`, `07:44:03 UTC`, `2026-12-03T02:44:03-05:00`) means what it says.
    #[arg(long, global = true, value_enum, value_name = "ZONE")]
    pub time_zone: Option<TimeZoneArg>,
    /// Short for `--time-zone utc`.
    #[arg(long, global = true)]
    pub utc: bool,
    /// The node's encryption config and the manifest naming it (see [`crate::node`]).
    #[arg(skip)]
    pub discovered_encryption: Option<(PathBuf, String)>,
    /// What in the config file could not be used, for the console's warning row.
    #[arg(skip)]
    pub config_warnings: Vec<String>,
}

/// `--time-zone`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TimeZoneArg {
    Local,
    Utc,
}

impl UiArgs {
    /// The zone times are shown and read in (`--utc` wins over `--time-zone`).
    pub fn zone(&self) -> crate::config::Zone {
        match (self.utc, self.time_zone) {
            (true, _) | (false, Some(TimeZoneArg::Utc)) => crate::config::Zone::Utc,
            _ => crate::config::Zone::Local,
        }
    }
}

/// Parses `5s`, `500ms`, `1m 30s` (humantime), or a bare number of seconds (`5`, `0.5`).
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Ok(std::time::Duration::from_secs_f64(secs));
        }
        return Err(format!("'{s}' is not a duration (e.g. 5s, 500ms, 1m)"));
    }
    humantime::parse_duration(t)
        .map_err(|e| format!("'{s}' is not a duration (e.g. 5s, 500ms, 1m): {e}"))
}

#[derive(Debug, Args, Clone)]
pub struct DemoArgs {
    /// Simulated nodes (each renews its Lease every 10 s).
    #[arg(long, default_value_t = 3)]
    pub nodes: usize,
    /// Target writes per second of the simulated control plane (0 = as fast as etcd takes).
    #[arg(long, default_value_t = 50)]
    pub rate: u32,
    /// Seconds between compactions through compact_rev_key (kube-apiserver: 300).
    #[arg(long, default_value_t = 60)]
    pub compact_interval: u64,
    /// Events the simulated apiserver's watch cache keeps per resource (kube-apiserver's
    /// old default was 100).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..100_000))]
    pub watch_cache_capacity: u64,
    /// Make the simulated apiserver deliver events late to the first watcher of this
    /// resource (e.g. `events`): regscope's own informer then falls behind for real, is
    /// terminated when it drops out of the watch cache, and gets 410 Gone on resume.
    #[arg(long, value_name = "RESOURCE")]
    pub slow_watcher: Option<String>,
    /// Delay per event for --slow-watcher (e.g. 200ms, 1s).
    #[arg(long, default_value = "200ms", value_parser = parse_duration)]
    pub slow_watcher_delay: std::time::Duration,
    /// Record the demo headless to this file instead of opening the console (how
    /// recordings/demo.rgs is made: scripts/record-demo.sh).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// With --record: how long.
    #[arg(long, default_value = "60s", value_parser = parse_duration, requires = "record")]
    pub duration: std::time::Duration,
    /// Kill the private etcd after this long and start it again (same data dir), to see a
    /// connection loss, the resumed watch and a failed scrape.
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub restart_etcd_after: Option<std::time::Duration>,
}

#[derive(Debug, Args, Clone)]
pub struct SnapshotArgs {
    /// Print JSON (the only format today; kept explicit for scripts).
    #[arg(long)]
    pub json: bool,
    /// Add every key with its revisions, version, lease and size.
    #[arg(long)]
    pub keys: bool,
    /// Read the session from a recording instead of etcd (see `regscope record`).
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// With --from: the moment to print — a time (RFC 3339 with `Z` or an offset, or
    /// HH:MM[:SS[.fff]] UTC on the recording's first day), an offset from the recording's start (+90s) or end
    /// (--at=-5m), a revision (r1234, or a bare number: 1234), `start` or `end`. Default:
    /// the end of the recording.
    #[arg(long, value_name = "TIME|REV", requires = "from")]
    pub at: Option<String>,
    #[command(flatten)]
    pub conn: ConnArgs,
}

#[derive(Debug, Args, Clone)]
pub struct RecordArgs {
    /// The recording to write (created mode 0600; an existing file is refused unless
    /// --force). With --keep-last: the base name of a rolling set, BASE.000001.rgs, ….
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Stop after this long (e.g. 10m, 1h), closing the file cleanly.
    #[arg(long, value_parser = parse_positive_duration)]
    pub duration: Option<std::time::Duration>,
    /// Stop when the file reaches this size (e.g. 512MiB; at least 1MiB); with --keep-last,
    /// the most the whole set may hold (oldest files dropped first, even when the set then
    /// holds less than --keep-last: said once on stderr).
    #[arg(long, value_parser = parse_record_size)]
    pub max_size: Option<usize>,
    /// A flight recorder: keep a rolling set of files that always holds at least the last
    /// D (e.g. 30m), deleting older files, until stopped.
    #[arg(long, value_name = "D", value_parser = parse_positive_duration)]
    pub keep_last: Option<std::time::Duration>,
    /// Replace an existing regular file (with --keep-last: an earlier set under the same
    /// base, e.g. after a systemd restart); never a device, FIFO, directory or symlink.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub conn: ConnArgs,
}

#[derive(Debug, Args, Clone)]
pub struct ReplayArgs {
    /// The recording (a file, or the base name of a --keep-last set).
    pub file: PathBuf,
    /// Do not open the console: read the whole file, verify every checksum and print its
    /// span, counts and any damage (exit 1 when damaged).
    #[arg(long)]
    pub check: bool,
    /// Open at this moment (as `snapshot --at`) instead of the start. Not with --check,
    /// which reads the whole file (`snapshot --json --from FILE --at T` prints a moment).
    #[arg(long, value_name = "TIME|REV", conflicts_with = "check")]
    pub at: Option<String>,
    /// Marker: etcd request p99 latency above this many seconds.
    #[arg(long, default_value_t = 1.0)]
    pub p99_threshold: f64,
    /// Marker: informer lag above this many seconds.
    #[arg(long, default_value_t = 10.0)]
    pub lag_threshold: f64,
}

/// Output formats of `export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// One JSON object per line.
    Jsonl,
}

#[derive(Debug, Args, Clone)]
pub struct ExportArgs {
    /// The recording (a file, or the base name of a --keep-last set).
    pub file: PathBuf,
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: ExportFormat,
    /// Only observations stamped at or after this (as `snapshot --at`; revisions allowed).
    #[arg(long, value_name = "TIME|REV")]
    pub from: Option<String>,
    /// Only observations stamped at or before this.
    #[arg(long, value_name = "TIME|REV")]
    pub to: Option<String>,
    /// Only keys under this prefix (events and list items; other observations are kept
    /// unless --only-keys).
    #[arg(long)]
    pub prefix: Option<String>,
    /// Only observations about keys (list pages and watch events).
    #[arg(long)]
    pub only_keys: bool,
    /// Add each written value decoded (as `regscope decode -o json`; Secret data redacted
    /// unless --show-secrets and the recording holds it).
    #[arg(long)]
    pub decode: bool,
}

const RECORD_EXAMPLES: &str = "Examples:
  regscope record -o incident.rgs --duration 30m          a half-hour session
  nohup regscope record -o /var/lib/regscope/fr --keep-last 30m --max-size 2GiB &
                                                          a flight recorder: always the last 30 min
  timeout 10m regscope record -o s.rgs                    SIGTERM/SIGINT close the file cleanly
Secret values are redacted in the file (lengths kept) unless --show-secrets.";

const REPLAY_EXAMPLES: &str = "Examples:
  regscope replay incident.rgs                            the console, paused at the start
  regscope replay incident.rgs --at 14:32:10              open at a moment
  regscope replay --check incident.rgs                    span, counts and damage
  regscope snapshot --json --from incident.rgs --at r1234 the summary at a revision
  regscope export incident.rgs --decode --prefix /registry/pods | jq .
Keys in replay: space play/pause, + - speed, . step, < > 10 s, : seek, n N markers, ? help.";

#[derive(Debug, Args, Clone)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
}

const DECODE_ABOUT: &str = "\
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

const DECODE_EXAMPLES: &str = "Examples:
  etcdctl get /registry/pods/default/p1 -w json | regscope decode
  etcdctl get /registry/pods/default/p1 -w json | regscope decode -o json | jq .spec
  etcdctl get /registry/pods/ --prefix -w json > pods.json
  regscope decode pods.json -o json | jq '.[].metadata.name'
  regscope decode value.bin --key /registry/secrets/default/s1 \\
      --encryption-config /etc/kubernetes/enc.yaml
  xxd -p value.bin | regscope decode --key /registry/pods/default/p1
  etcdctl get /registry/pods/default/p1 -w json | regscope decode -o raw > p1.bin";

/// `regscope decode` options. `--encryption-config` and `--show-secrets` are the global UI
/// flags ([`UiArgs`]).
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

/// Settings the config file may give, as long flag names. Not `show-secrets` (showing
/// Secrets is asked for each time) nor `password` (no passwords in a plain file: use
/// `ETCDCTL_PASSWORD` or the prompt).
pub const CONFIG_KEYS: &[&str] = &[
    "theme",
    "keymap",
    "endpoints",
    "cacert",
    "cert",
    "key",
    "user",
    "prefix",
    "page-limit",
    "list-concurrency",
    "history-budget",
    "memory-limit",
    "encryption-config",
    "kubeconfig",
    "context",
    "apiserver-metrics-url",
    "apiserver-token-file",
    "apiserver-cert",
    "apiserver-key",
    "apiserver-cacert",
    "etcd-metrics-url",
    "scrape-interval",
    "scrape-timeout",
    "informers",
    "root",
    "screenshot-dir",
    "mouse",
    "time-zone",
];

/// One setting as in effect, for `regscope print-config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    pub key: &'static str,
    /// The value (lists joined with commas); `None` when unset.
    pub value: Option<String>,
    /// `command line`, `environment`, `config file PATH` or `default`.
    pub origin: String,
}

/// The config file's settings turned into flags: `--key value` for each key neither given
/// on the command line (`argv`) nor by its environment variable (`env_set`), plus warnings
/// for what cannot be used (unknown keys, values of the wrong type, an unreadable file).
/// `Ok` with nothing when the file does not exist.
pub fn config_file_args(
    path: &std::path::Path,
    argv: &[std::ffi::OsString],
    env_set: &dyn Fn(&str) -> bool,
) -> (Vec<std::ffi::OsString>, Vec<&'static str>, Vec<String>) {
    let (mut args, mut keys, mut warnings) = (Vec::new(), Vec::new(), Vec::new());
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                && std::env::var_os("REGSCOPE_CONFIG").is_none() =>
        {
            return (args, keys, warnings)
        }
        Err(e) => {
            warnings.push(format!("config file {}: cannot read ({e})", path.display()));
            return (args, keys, warnings);
        }
    };
    let table = match text.parse::<toml::Table>() {
        Ok(t) => t,
        Err(e) => {
            let msg = e.to_string();
            warnings.push(format!(
                "config file {}: not valid TOML ({}); ignored",
                path.display(),
                msg.lines().next().unwrap_or("").trim()
            ));
            return (args, keys, warnings);
        }
    };
    let on_command_line = |k: &str| {
        let flag = format!("--{k}");
        let eq = format!("--{k}=");
        argv.iter()
            .filter_map(|a| a.to_str())
            .any(|a| a == flag || a.starts_with(&eq))
    };
    for (k, v) in table {
        // `time_zone` as some write it, for `time-zone`.
        let k = if k == "time_zone" {
            "time-zone".to_string()
        } else {
            k
        };
        let Some(key) = CONFIG_KEYS.iter().copied().find(|c| *c == k) else {
            if k == "show-secrets" || k == "password" {
                warnings.push(format!(
                    "config file {}: `{k}` is never read from a file (ignored): give it on the command line{}",
                    path.display(),
                    if k == "password" { ", in ETCDCTL_PASSWORD or at the prompt" } else { "" }
                ));
                continue;
            }
            let first = !warnings.iter().any(|w| w.contains("unknown setting"));
            warnings.push(format!(
                "config file {}: unknown setting `{k}` (ignored{})",
                path.display(),
                if first {
                    format!("; settings: {}", CONFIG_KEYS.join(", "))
                } else {
                    String::new()
                }
            ));
            continue;
        };
        let env = match key {
            "endpoints" => Some("ETCDCTL_ENDPOINTS"),
            "cacert" => Some("ETCDCTL_CACERT"),
            "cert" => Some("ETCDCTL_CERT"),
            "key" => Some("ETCDCTL_KEY"),
            "user" => Some("ETCDCTL_USER"),
            _ => None,
        };
        if on_command_line(key) || env.is_some_and(env_set) {
            continue;
        }
        let value = match &v {
            toml::Value::String(s) => s.clone(),
            // The one switch: `mouse = true` (or "true") gives `--mouse`.
            _ if key == "mouse" => {
                match (v.as_bool(), v.as_str()) {
                    (Some(true), _) | (_, Some("true")) => {
                        args.push(format!("--{key}").into());
                        keys.push(key);
                    }
                    (Some(false), _) | (_, Some("false")) => {}
                    _ => warnings.push(format!(
                        "config file {}: `mouse` should be true or false (ignored)",
                        path.display()
                    )),
                }
                continue;
            }
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Array(items) => {
                let parts: Option<Vec<String>> = items
                    .iter()
                    .map(|i| i.as_str().map(str::to_string))
                    .collect();
                match parts {
                    Some(p) => p.join(","),
                    None => {
                        warnings.push(format!(
                            "config file {}: `{key}` should be a string or a list of strings (ignored)",
                            path.display()
                        ));
                        continue;
                    }
                }
            }
            _ => {
                warnings.push(format!(
                    "config file {}: `{key}` should be a string or a number (ignored)",
                    path.display()
                ));
                continue;
            }
        };
        args.push(format!("--{key}").into());
        args.push(value.into());
        keys.push(key);
    }
    (args, keys, warnings)
}

impl Cli {
    /// Parses the process arguments (exits on `--help` and usage errors, as
    /// [`Parser::parse`]), with the config file's settings ([`crate::config::config_file`])
    /// for the flags the command line and the environment leave unset. Connection flags given
    /// before a connecting subcommand (`regscope --endpoints X snapshot`) apply to it unless
    /// the subcommand repeats them.
    pub fn parse_merged() -> Cli {
        let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
        let (extra, keys, warnings, path) = match crate::config::config_file() {
            Some(path) => {
                let (a, k, w) = config_file_args(&path, &argv, &|v| std::env::var_os(v).is_some());
                (a, k, w, Some(path))
            }
            None => (Vec::new(), Vec::new(), Vec::new(), None),
        };
        let file = path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        // After the program name, before everything typed: the subcommand's own flags and
        // values stay where they were.
        let with = |extra: &[std::ffi::OsString]| {
            let mut full = argv.clone();
            let at = full.len().min(1);
            full.splice(at..at, extra.iter().cloned());
            full
        };
        let (mut extra, mut keys, mut warnings) = (extra, keys, warnings);
        let mut cli = match Self::try_parse_merged_from(with(&extra)) {
            Ok(c) => c,
            Err(e) if keys.is_empty() => e.exit(),
            Err(e) => {
                // The command line itself is wrong (help and version land here too): say
                // so without the config file's settings.
                if let Err(plain) = Self::try_parse_merged_from(argv.clone()) {
                    plain.exit()
                }
                drop(e);
                // A setting of the config file is: keep those that parse, warn about the rest.
                let mut kept: Vec<std::ffi::OsString> = Vec::new();
                let mut kept_keys = Vec::new();
                // One group per setting: its `--flag`, then its value when it has one.
                let mut groups: Vec<Vec<std::ffi::OsString>> = Vec::new();
                for a in &extra {
                    let flag = groups.is_empty()
                        || a.to_str().is_some_and(|t| {
                            t.starts_with("--") && keys.iter().any(|k| t == format!("--{k}"))
                        });
                    match groups.last_mut() {
                        Some(g) if !flag => g.push(a.clone()),
                        _ => groups.push(vec![a.clone()]),
                    }
                }
                for (pair, key) in groups.iter().zip(keys.iter()) {
                    let mut trial = kept.clone();
                    trial.extend(pair.iter().cloned());
                    match Self::try_parse_merged_from(with(&trial)) {
                        Ok(_) => {
                            kept = trial;
                            kept_keys.push(*key);
                        }
                        Err(err) => {
                            let msg = err.to_string();
                            let first = msg
                                .lines()
                                .next()
                                .unwrap_or("")
                                .trim_start_matches("error: ");
                            warnings
                                .push(format!("config file {file}: `{key}`: {first} (ignored)"));
                        }
                    }
                }
                extra = kept;
                keys = kept_keys;
                Self::try_parse_merged_from(with(&extra)).unwrap_or_else(|e| e.exit())
            }
        };
        let _ = &extra;
        for s in &mut cli.settings {
            if keys.contains(&s.key) {
                s.origin = format!("config file {file}");
            }
        }
        cli.config_warnings = warnings;
        cli
    }

    /// As [`Cli::parse_merged`], from the given arguments (the first is the program name).
    pub fn try_parse_merged_from<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::{CommandFactory, FromArgMatches};
        let matches = Cli::command().try_get_matches_from(args)?;
        let mut cli = Cli::from_arg_matches(&matches)?;
        cli.settings = settings(&matches);
        let root = cli.conn.clone();
        match (&mut cli.command, matches.subcommand()) {
            (Some(Command::Snapshot(SnapshotArgs { conn, .. })), Some((_, sub)))
            | (Some(Command::Doctor(DoctorArgs { conn, .. })), Some((_, sub)))
            | (Some(Command::Verify(VerifyArgs { conn })), Some((_, sub))) => {
                conn.inherit(&root, &matches, sub)
            }
            _ => {}
        }
        let given = |m: &clap::ArgMatches| {
            m.value_source("prefix") == Some(clap::parser::ValueSource::CommandLine)
        };
        cli.conn.prefix_given = given(&matches);
        let root_given = cli.conn.prefix_given;
        if let (Some(cmd), Some((_, sub))) = (&mut cli.command, matches.subcommand()) {
            let conn = match cmd {
                Command::Snapshot(a) => Some(&mut a.conn),
                Command::Doctor(a) => Some(&mut a.conn),
                Command::Verify(a) => Some(&mut a.conn),
                Command::Record(a) => Some(&mut a.conn),
                _ => None,
            };
            if let Some(conn) = conn {
                conn.prefix_given =
                    root_given || sub.try_contains_id("prefix").unwrap_or(false) && given(sub);
            }
        }
        Ok(cli)
    }
}

/// `--memory-limit`: a size of at least 1 MiB (less is no limit anyone means).
fn parse_memory_limit(s: &str) -> Result<usize, String> {
    let n = parse_size(s)?;
    if n < 1 << 20 {
        return Err(format!("{s} is less than 1MiB; regscope itself takes more"));
    }
    Ok(n)
}

/// Parses sizes such as `1048576`, `512KiB`, `256MiB`, `1GiB`, `2GB` into bytes.
/// [`parse_duration`], refusing zero (a recording of no time holds nothing).
pub fn parse_positive_duration(s: &str) -> Result<std::time::Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err(format!("'{s}' is no time: give more than 0 (e.g. 10m)")),
        d => Ok(d),
    }
}

/// [`parse_size`] for a recording's `--max-size`: at least 1 MiB, as a recording starts
/// with a checkpoint of the whole session (often larger) and a file cut before it holds
/// nothing to replay.
pub fn parse_record_size(s: &str) -> Result<usize, String> {
    match parse_size(s)? {
        n if n < 1 << 20 => Err(format!(
            "'{s}' is too small for a recording: give at least 1MiB"
        )),
        n => Ok(n),
    }
}

pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (e.g. 256MiB, 1GiB)"))?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "kib" => 1024.0,
        "m" | "mb" => 1e6,
        "mib" => 1024.0 * 1024.0,
        "g" | "gb" => 1e9,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        other => return Err(format!("unknown size unit '{other}' (use KiB, MiB, GiB)")),
    };
    Ok((n * mult) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_file_settings_give_way_to_the_command_line_and_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let no_env = |_: &str| false;
        let argv: Vec<std::ffi::OsString> = vec!["regscope".into()];
        let (args, keys, w) = config_file_args(&path, &argv, &no_env);
        assert!(
            args.is_empty() && keys.is_empty() && w.is_empty(),
            "no file: nothing"
        );
        std::fs::write(
            &path,
            "theme = \"light\"\nhistory-budget = \"1GiB\"\npage-limit = 100\n\
             informers = [\"pods\", \"nodes\"]\nendpoints = \"http://e:1\"\n\
             show-secrets = true\nprefix = true\n",
        )
        .unwrap();
        let argv: Vec<std::ffi::OsString> = vec![
            "regscope".into(),
            "--history-budget=2GiB".into(),
            "snapshot".into(),
        ];
        let env = |v: &str| v == "ETCDCTL_ENDPOINTS";
        let (args, keys, w) = config_file_args(&path, &argv, &env);
        let args: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "--informers",
                "pods,nodes",
                "--page-limit",
                "100",
                "--theme",
                "light"
            ],
            "the command line's history-budget and the environment's endpoints win"
        );
        assert_eq!(keys, ["informers", "page-limit", "theme"]);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("`prefix` should be a string"), "{w:?}");
        assert!(
            w[1].contains("`show-secrets` is never read from a file"),
            "{w:?}"
        );
        // The flags parse, and the settings say where each came from.
        let mut full = vec!["regscope".to_string()];
        full.extend(args);
        full.push("print-config".into());
        let cli = Cli::try_parse_merged_from(full).unwrap();
        assert_eq!(cli.ui.theme.as_deref(), Some(std::path::Path::new("light")));
        let theme = cli.settings.iter().find(|s| s.key == "theme").unwrap();
        assert_eq!(theme.value.as_deref(), Some("light"));
        let budget = cli
            .settings
            .iter()
            .find(|s| s.key == "history-budget")
            .unwrap();
        assert_eq!(
            (budget.value.as_deref(), budget.origin.as_str()),
            (Some("256MiB"), "default")
        );
        // Not TOML: one warning, nothing applied.
        std::fs::write(&path, "theme = [\n").unwrap();
        let (args, _, w) = config_file_args(&path, &argv, &no_env);
        assert!(args.is_empty());
        assert!(w[0].contains("not valid TOML"), "{w:?}");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("3 parsecs").is_err());
        // A recording's: not below 1 MiB; durations not zero.
        assert_eq!(parse_record_size("1MiB"), Ok(1 << 20));
        assert!(parse_record_size("1")
            .unwrap_err()
            .contains("at least 1MiB"));
        assert!(parse_positive_duration("0s")
            .unwrap_err()
            .contains("no time"));
        assert_eq!(
            parse_positive_duration("10m"),
            Ok(std::time::Duration::from_secs(600))
        );
    }

    #[test]
    fn user_password_split() {
        let c = ConnArgs {
            user: Some("root:secret".into()),
            endpoints: vec!["http://127.0.0.1:1".into()],
            ..Default::default()
        };
        let o = c.etcd_options();
        assert_eq!(o.user.as_deref(), Some("root"));
        assert_eq!(o.password.as_deref(), Some("secret"));
    }

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_merged_from(std::iter::once("regscope").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    #[test]
    fn connection_flags_reach_subcommands_from_either_side() {
        let c = parse(&["snapshot", "--json", "--endpoints", "http://a:1"]);
        let Some(Command::Snapshot(s)) = c.command else {
            panic!()
        };
        assert_eq!(s.conn.endpoints, ["http://a:1"]);
        let c = parse(&["--endpoints", "http://a:1", "--prefix", "/x", "verify"]);
        let Some(Command::Verify(v)) = c.command else {
            panic!()
        };
        assert_eq!(v.conn.endpoints, ["http://a:1"]);
        assert_eq!(v.conn.prefix, "/x");
        // The subcommand's own flag wins.
        let c = parse(&[
            "--endpoints",
            "http://a:1",
            "snapshot",
            "--endpoints",
            "http://b:2",
        ]);
        let Some(Command::Snapshot(s)) = c.command else {
            panic!()
        };
        assert_eq!(s.conn.endpoints, ["http://b:2"]);
        let c = parse(&["--endpoints", "http://a:1"]);
        assert_eq!(c.conn.endpoints, ["http://a:1"]);
    }

    #[test]
    fn decode_key_is_the_etcd_key_not_the_tls_key() {
        let c = parse(&[
            "decode",
            "v.bin",
            "--key",
            "/registry/secrets/default/s1",
            "-o",
            "json",
            "--encryption-config",
            "enc.yaml",
            "--show-secrets",
        ]);
        let Some(Command::Decode(d)) = c.command else {
            panic!()
        };
        assert_eq!(
            d.key.as_deref(),
            Some("/registry/secrets/default/s1".as_ref())
        );
        assert_eq!(d.output, DecodeOutput::Json);
        assert!(c.ui.show_secrets);
        assert_eq!(c.ui.encryption_config.as_deref(), Some("enc.yaml".as_ref()));
        // Connection flags are not decode's.
        assert!(Cli::try_parse_merged_from(["regscope", "decode", "--endpoints", "x"]).is_err());
    }

    #[test]
    fn snapshot_at_help_names_every_form_the_parser_takes() {
        use clap::CommandFactory;
        let cmd = Cli::command();
        let snapshot = cmd.find_subcommand("snapshot").unwrap();
        let at = snapshot
            .get_arguments()
            .find(|a| a.get_id() == "at")
            .unwrap();
        let help = at.get_help().unwrap().to_string();
        for form in [
            "RFC 3339 with `Z` or an offset",
            "HH:MM[:SS[.fff]]",
            "+90s",
            "--at=-5m",
            "r1234",
            "1234)",
        ] {
            assert!(help.contains(form), "{form} missing from: {help}");
        }
        // The forms it names are the ones `--at` reads.
        let now = std::time::UNIX_EPOCH;
        let seek = |t: &str| crate::record::seek::parse_seek(t, now, 0);
        assert_eq!(
            seek("1234"),
            Ok(crate::record::seek::SeekTo::Revision(1234))
        );
        assert_eq!(
            seek("r1234"),
            Ok(crate::record::seek::SeekTo::Revision(1234))
        );
        assert_eq!(seek("+90s"), Ok(crate::record::seek::SeekTo::Relative(90)));
        assert_eq!(seek("-5m"), Ok(crate::record::seek::SeekTo::Relative(-300)));
        assert!(seek("14:32").is_ok() && seek("14:32:10").is_ok());
        // A value starting with '-' needs the `=` form.
        assert!(
            Cli::try_parse_merged_from(["regscope", "snapshot", "--from", "f", "--at=-5m"]).is_ok()
        );
    }

    #[test]
    fn cli_parses() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn prefixes_are_absolute_like_the_apiservers() {
        let p = |s: &str| {
            ConnArgs {
                prefix: s.into(),
                ..Default::default()
            }
            .prefix_bytes()
        };
        assert_eq!(p("/registry"), b"/registry");
        assert_eq!(p("/registry/"), b"/registry");
        assert_eq!(p("registry"), b"/registry");
        assert_eq!(p("kubernetes.io/"), b"/kubernetes.io");
        assert_eq!(p("/"), b"/");
        assert_eq!(p(""), b"/");
    }
}
