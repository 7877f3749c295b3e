//! Command-line flags (clap). Connection flags mirror etcdctl's and honour the same
//! `ETCDCTL_*` environment variables.
//!
//! Here: the root ([`Cli`], the list of subcommands, the console's and the node's flags).
//! `conn.rs`: the etcd connection and the metrics flags; the subcommands' own flags by
//! group: `live.rs` (demo, snapshot, verify, doctor), `recording.rs` (record, replay,
//! export), `decode.rs`, `diff.rs`, `analyze.rs`; `config_merge.rs`: the config file under the command line;
//! `parse.rs`: the value parsers. The `--help` texts are these doc comments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod analyze;
mod config_merge;
mod conn;
mod decode;
mod diff;
mod live;
mod parse;
mod recording;

pub use analyze::AnalyzeArgs;
pub use config_merge::{config_file_args, Setting, CONFIG_KEYS};
pub use conn::{ConnArgs, MetricsArgs};
pub use decode::{DecodeArgs, DecodeOutput};
pub use diff::DiffArgs;
pub use live::{DemoArgs, DoctorArgs, SnapshotArgs, VerifyArgs};
pub use parse::{
    normal_prefix, parse_duration, parse_positive_duration, parse_record_size, parse_size,
};
pub use recording::{
    ExportArgs, ExportFormat, ExporterArgs, RecordArgs, ReplayArgs, ReportArgs, ReportFormat,
    ServeArgs,
};

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
  regscope serve --listen 127.0.0.1:9943           the signals for Prometheus, headless
  regscope diff mon.db tue.db                      what changed between two etcd snapshots
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
    #[command(after_help = recording::RECORD_EXAMPLES)]
    Record(RecordArgs),
    /// Serve the live session's signals to Prometheus, headless (no terminal, no file):
    /// `/metrics` (text format 0.0.4, or OpenMetrics when asked), `/healthz` and `/`.
    /// Loopback unless --listen names another address; HTTPS and client certificates as
    /// options. The families are listed in the README ("Many clusters").
    #[command(after_help = recording::SERVE_EXAMPLES)]
    Serve(ServeArgs),
    /// Open a recording in the console with a timeline: play, pause, speed, step, seek to
    /// a time or a revision, jump between markers. `--check` only verifies the file.
    #[command(after_help = recording::REPLAY_EXAMPLES)]
    Replay(ReplayArgs),
    /// Write a recording's observations as JSON lines (one per event, per listed key, per
    /// scrape and per other observation; none for clock ticks).
    Export(ExportArgs),
    /// Write a postmortem report of a recording: the cluster and session, a timeline of
    /// markers, charts on one time axis, what stands out and the keys changed; one
    /// self-contained HTML file, Markdown with SVG charts, or JSON.
    #[command(after_help = recording::REPORT_EXAMPLES)]
    Report(ReportArgs),
    /// Compare the keyspace at two moments (two etcd db files, two recordings, or one file
    /// at two moments): keys created, deleted and changed per resource with their bytes,
    /// and chosen keys' objects field by field. Exit 0 when equal, 1 when not, 2 on trouble.
    #[command(long_about = diff::DIFF_ABOUT, after_help = diff::DIFF_EXAMPLES)]
    Diff(DiffArgs),
    /// Decode stored values offline: `etcdctl get -w json` output, a hex string or the raw
    /// value bytes, from FILE or stdin. Prints the object on stdout, a header on stderr.
    #[command(long_about = decode::DECODE_ABOUT, after_help = decode::DECODE_EXAMPLES)]
    Decode(DecodeArgs),
    /// What fills an etcd db file (what `etcdctl snapshot save` writes, or a member's
    /// member/snap/db), a live etcd, or what a recording's session held at its end.
    ///
    /// For a db file: its size, the free pages a defragmentation would give back and the
    /// quota; compactions (an interrupted one said), members, alarms (NOSPACE) and leases;
    /// `etcdctl snapshot status`'s hash, revision, totalKey and totalSize; per resource the
    /// live keys, the bytes of their newest values and of every revision the file retains;
    /// the largest objects, the keys with the most revisions, the leases with the most keys
    /// and the namespaces by bytes. The file is read once, never written or locked; memory
    /// grows with the number of keys, not with the values. Exit 2 with one line when the
    /// file is neither a db file nor a recording, or is damaged.
    ///
    /// For a recording: the same per resource, key and namespace, as far back as its
    /// replica holds history (exit 1 when the recording is damaged).
    ///
    /// Without a file: the live etcd of --endpoints (or the one this node runs), listed
    /// once like `snapshot` does, never its history (a watch from the compaction would make
    /// etcd read all of it at once): each member's file size, in use and free, the quota,
    /// alarms, the compacted revision; per resource and namespace the keys, their newest
    /// value bytes, their writes since creation (`version`) and the versions etcd retains
    /// of them (exact where the revisions decide it, else a range); the largest and most
    /// written keys and the leases with the most keys. Deleted keys are not counted, and
    /// the output says so.
    #[command(after_help = analyze::ANALYZE_EXAMPLES)]
    Analyze(AnalyzeArgs),
    /// Print what the node runs (found in its manifests and configs, with the file and
    /// flag of each fact), then check every connection: each etcd member (TLS, auth,
    /// version, leader, db size), an events etcd, etcd's metrics, the encryption config.
    /// Says what to do for each failure. Exit 0 when all is well, 1 otherwise.
    #[command(after_help = live::DOCTOR_EXAMPLES)]
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
#[cfg(test)]
mod tests {
    use super::*;

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
    fn serve_listens_on_loopback_unless_told() {
        let c = parse(&["serve", "--endpoints", "http://a:1"]);
        let Some(Command::Serve(s)) = c.command else {
            panic!()
        };
        assert_eq!(s.listen, std::net::SocketAddr::from(([127, 0, 0, 1], 9943)));
        assert_eq!(s.conn.endpoints, ["http://a:1"]);
        let c = parse(&["record", "-o", "f.rgs", "--listen", "0.0.0.0:9000"]);
        let Some(Command::Record(r)) = c.command else {
            panic!()
        };
        assert_eq!(r.listen, Some(([0, 0, 0, 0], 9000).into()));
        assert_eq!(r.exporter.flag_without_listen(r.listen), None);
        let c = parse(&[
            "record",
            "-o",
            "f.rgs",
            "--client-ca",
            "ca.pem",
            "--tls-cert",
            "c",
            "--tls-key",
            "k",
        ]);
        let Some(Command::Record(r)) = c.command else {
            panic!()
        };
        assert_eq!(r.exporter.flag_without_listen(r.listen), Some("--tls-cert"));
        // A key without its certificate is refused.
        let e = Cli::try_parse_merged_from(["regscope", "serve", "--tls-key", "k.pem"]);
        assert!(e.is_err());
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
        // A value starting with '-' reads with `=` and after a space.
        assert!(
            Cli::try_parse_merged_from(["regscope", "snapshot", "--from", "f", "--at=-5m"]).is_ok()
        );
    }

    #[test]
    fn times_counted_back_from_the_end_read_after_a_space() {
        let c = parse(&["snapshot", "--from", "f", "--at", "-5m", "--json"]);
        let Some(Command::Snapshot(s)) = c.command else {
            panic!()
        };
        assert_eq!((s.at.as_deref(), s.json), (Some("-5m"), true));
        let c = parse(&["replay", "f", "--at", "-10m", "--lag-threshold", "2"]);
        let Some(Command::Replay(r)) = c.command else {
            panic!()
        };
        assert_eq!((r.at.as_deref(), r.lag_threshold), (Some("-10m"), 2.0));
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
