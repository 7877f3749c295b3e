//! Flags of the subcommands that watch a live etcd besides the console: `demo`,
//! `snapshot`, `verify` and `doctor`.

use std::path::PathBuf;

use clap::Args;

use super::parse::parse_duration;
use super::ConnArgs;

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
    /// Serve the demo's signals to Prometheus on this address instead of opening the
    /// console (as `regscope serve` does; with --record, both), until --duration or
    /// SIGTERM/SIGINT.
    #[arg(long, value_name = "ADDR", value_parser = super::parse::parse_listen)]
    pub listen: Option<std::net::SocketAddr>,
    #[command(flatten)]
    pub exporter: super::ExporterArgs,
    /// With --record: how long (default 60s). With --listen alone: until stopped unless
    /// given.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<std::time::Duration>,
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
    /// Read the session from a recording instead of etcd (see `regscope record`), or from
    /// etcd's db file (`etcdctl snapshot save`'s output, a member's member/snap/db; --at is
    /// then a revision from the file's finished compaction to its head).
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// With --from: the moment to print — a time (RFC 3339 with `Z` or an offset, or
    /// HH:MM[:SS[.fff]] UTC on the recording's first day), an offset from the recording's start (+90s) or end
    /// (--at=-5m), a revision (r1234, or a bare number: 1234), `start` or `end`. Default:
    /// the end of the recording.
    #[arg(
        long,
        value_name = "TIME|REV",
        requires = "from",
        allow_hyphen_values = true
    )]
    pub at: Option<String>,
    #[command(flatten)]
    pub conn: ConnArgs,
}

#[derive(Debug, Args, Clone)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
}

pub(super) const DOCTOR_EXAMPLES: &str = "Examples:
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
