//! Flags of the subcommands of recordings: `record`, `replay` (and `replay --check`) and
//! `export`, with their examples.

use std::path::PathBuf;

use clap::Args;

use super::parse::{
    parse_listen, parse_positive_duration, parse_record_size, parse_threshold_seconds,
};
use super::ConnArgs;

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
    /// Also serve the session's signals to Prometheus on this address (as `regscope serve`
    /// does), with the recording's own bytes and files.
    #[arg(long, value_name = "ADDR", value_parser = parse_listen)]
    pub listen: Option<std::net::SocketAddr>,
    #[command(flatten)]
    pub exporter: ExporterArgs,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// `regscope serve`: a live session with no terminal and no file, served to Prometheus.
#[derive(Debug, Args, Clone)]
pub struct ServeArgs {
    /// The address to serve `/metrics`, `/healthz` and `/` on: loopback unless another
    /// address is named (`0.0.0.0:9943` for every interface; the signals name resources
    /// and writers, so prefer --tls-cert and --client-ca off loopback).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9943", value_parser = parse_listen)]
    pub listen: std::net::SocketAddr,
    /// Stop after this long (e.g. 10m); without it, until SIGTERM or SIGINT.
    #[arg(long, value_parser = parse_positive_duration)]
    pub duration: Option<std::time::Duration>,
    #[command(flatten)]
    pub exporter: ExporterArgs,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// How the exporter serves (`serve`, `record --listen`, `demo --listen`).
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Exporter")]
pub struct ExporterArgs {
    /// Serve HTTPS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Refuse HTTPS clients without a certificate signed by a CA in this PEM file.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub client_ca: Option<PathBuf>,
    /// Writers (managedFields manager and operation) with their own
    /// regscope_writer_writes_total series; the rest are summed as manager="(other)".
    #[arg(long, value_name = "N", default_value_t = crate::exporter::exposition::DEFAULT_WRITER_SERIES)]
    pub writer_series: usize,
}

impl ExporterArgs {
    /// An exporter flag given although nothing is served (`listen` is `None`): the first
    /// one's name, so that it is refused rather than silently ignored.
    pub fn flag_without_listen(
        &self,
        listen: Option<std::net::SocketAddr>,
    ) -> Option<&'static str> {
        if listen.is_some() {
            return None;
        }
        [
            (self.tls_cert.is_some(), "--tls-cert"),
            (self.tls_key.is_some(), "--tls-key"),
            (self.client_ca.is_some(), "--client-ca"),
            (
                self.writer_series != crate::exporter::exposition::DEFAULT_WRITER_SERIES,
                "--writer-series",
            ),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }

    /// The server's options on `listen`; `watching` is filled in when the session starts.
    pub fn serve_options(
        &self,
        listen: std::net::SocketAddr,
    ) -> crate::exporter::server::ServeOptions {
        crate::exporter::server::ServeOptions {
            listen,
            tls: self
                .tls_cert
                .clone()
                .zip(self.tls_key.clone())
                .map(|(cert, key)| crate::exporter::server::TlsFiles {
                    cert,
                    key,
                    client_ca: self.client_ca.clone(),
                }),
            writer_series: self.writer_series,
            watching: String::new(),
        }
    }
}

#[derive(Debug, Args, Clone)]
pub struct ReplayArgs {
    /// The recording (a file, or the base name of a --keep-last set), or etcd's db file (what
    /// `etcdctl snapshot save` writes, or a member's member/snap/db; told apart by content:
    /// its retained history is written as a recording in $TMPDIR, removed on quit, and
    /// --at is a revision).
    pub file: PathBuf,
    /// Do not open the console: read the whole file, verify every checksum and print its
    /// span, counts and any damage (exit 1 when damaged).
    #[arg(long)]
    pub check: bool,
    /// Open at this moment (as `snapshot --at`) instead of the start. Not with --check,
    /// which reads the whole file (`snapshot --json --from FILE --at T` prints a moment).
    #[arg(
        long,
        value_name = "TIME|REV",
        conflicts_with = "check",
        allow_hyphen_values = true
    )]
    pub at: Option<String>,
    /// Marker: etcd request p99 latency above this many seconds.
    #[arg(
        long,
        default_value_t = 1.0,
        value_parser = parse_threshold_seconds,
        allow_negative_numbers = true
    )]
    pub p99_threshold: f64,
    /// Marker: informer lag above this many seconds.
    #[arg(
        long,
        default_value_t = 10.0,
        value_parser = parse_threshold_seconds,
        allow_negative_numbers = true
    )]
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
    /// The recording (a file, or the base name of a --keep-last set), or etcd's db file (what
    /// `etcdctl snapshot save` writes, or a member's member/snap/db; told apart by content:
    /// --from/--to are then revisions, `start` the file's compaction, `end` its head).
    pub file: PathBuf,
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: ExportFormat,
    /// Only observations stamped at or after this (as `snapshot --at`; revisions allowed).
    #[arg(long, value_name = "TIME|REV", allow_hyphen_values = true)]
    pub from: Option<String>,
    /// Only observations stamped at or before this.
    #[arg(long, value_name = "TIME|REV", allow_hyphen_values = true)]
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
    /// Add each written value as etcd stores it, base64 (`value`; a Secret's only with
    /// --show-secrets and when the source holds it, else `null` and `value_redacted`).
    #[arg(long)]
    pub values: bool,
    /// Marker: etcd request p99 latency above this many seconds (as `replay`).
    #[arg(
        long,
        default_value_t = 1.0,
        value_parser = parse_threshold_seconds,
        allow_negative_numbers = true
    )]
    pub p99_threshold: f64,
    /// Marker: informer lag above this many seconds (as `replay`).
    #[arg(
        long,
        default_value_t = 10.0,
        value_parser = parse_threshold_seconds,
        allow_negative_numbers = true
    )]
    pub lag_threshold: f64,
}

/// Output formats of `report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// One self-contained HTML file (charts inline, no network, prints cleanly).
    Html,
    /// Markdown with one SVG file per chart beside it (OUT-<chart>.svg).
    Md,
    /// The report's data as one JSON document.
    Json,
}

#[derive(Debug, Args, Clone)]
pub struct ReportArgs {
    /// The recording (a file, or the base name of a --keep-last set).
    pub file: PathBuf,
    /// Where to write: report.html, report.md (its SVG charts beside it), report.json, or
    /// `-` for standard output (HTML and JSON).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: PathBuf,
    /// html, md or json; by default from OUT's extension (.md, .json, else html).
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,
    /// Replace an existing OUT (and, for md, its SVG files); never a directory, device or
    /// symlink, and never a recording.
    #[arg(long)]
    pub force: bool,
    /// Start of the span reported (as `snapshot --at`: a time, -10m, +5m, or rREV);
    /// the recording's start by default.
    #[arg(long, value_name = "TIME|REV", allow_hyphen_values = true)]
    pub from: Option<String>,
    /// End of the span reported; the recording's end by default.
    #[arg(long, value_name = "TIME|REV", allow_hyphen_values = true)]
    pub to: Option<String>,
    /// Marker: etcd request p99 latency above this many seconds.
    #[arg(
        long,
        default_value_t = 1.0,
        value_parser = parse_threshold_seconds,
        allow_negative_numbers = true
    )]
    pub p99_threshold: f64,
    /// Marker: informer lag above this many seconds.
    #[arg(
        long,
        default_value_t = 10.0,
        value_parser = parse_threshold_seconds,
        allow_negative_numbers = true
    )]
    pub lag_threshold: f64,
}

pub(super) const REPORT_EXAMPLES: &str = "Examples:
  regscope report incident.rgs -o report.html             one file to attach to a ticket
  regscope report incident.rgs --from 14:30 --to 14:45 -o report.md
                                                          report.md with report-*.svg beside it
  regscope report incident.rgs -o - --format json | jq .stands_out";

pub(super) const RECORD_EXAMPLES: &str = "Examples:
  regscope record -o incident.rgs --duration 30m          a half-hour session
  nohup regscope record -o /var/lib/regscope/fr --keep-last 30m --max-size 2GiB &
                                                          a flight recorder: always the last 30 min
  timeout 10m regscope record -o s.rgs                    SIGTERM/SIGINT close the file cleanly
  regscope record -o /var/lib/regscope/fr --keep-last 24h --listen 127.0.0.1:9943
                                                          flight recorder and Prometheus exporter
Secret values are redacted in the file (lengths kept) unless --show-secrets.";

pub(super) const SERVE_EXAMPLES: &str = "Examples:
  sudo regscope serve                                     on a control-plane node, 127.0.0.1:9943
  regscope serve --endpoints http://127.0.0.1:2379 --listen 9943
  regscope serve --listen 0.0.0.0:9943 --tls-cert tls.crt --tls-key tls.key --client-ca ca.crt
  regscope demo --listen 127.0.0.1:9943                   the demo, served instead of shown
  curl -s 127.0.0.1:9943/metrics | promtool check metrics
The unit and rules for a fleet: deploy/ in the repository.";

pub(super) const REPLAY_EXAMPLES: &str = "Examples:
  regscope replay incident.rgs                            the console, paused at the start
  regscope replay incident.rgs --at 14:32:10              open at a moment
  regscope replay --check incident.rgs                    span, counts and damage
  regscope snapshot --json --from incident.rgs --at r1234 the summary at a revision
  regscope export incident.rgs --decode --prefix /registry/pods | jq .
Keys in replay: space plays, + - speed, . step, < > 10 s, : seek, n N markers, b bookmark, ? help.";
