//! Command-line flags (clap). Connection flags mirror etcdctl's and honour the same
//! `ETCDCTL_*` environment variables.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::source::{EtcdOptions, SyncOptions};
use crate::store::ReplicaConfig;

/// regscope: watch what kube-apiserver does to etcd, live.
///
/// Without a subcommand, opens the console on the etcd given by --endpoints (or
/// ETCDCTL_ENDPOINTS). With no endpoint at all it tries https://127.0.0.1:2379 with kubeadm's
/// apiserver etcd client certificates (/etc/kubernetes/pki/apiserver-etcd-client.{crt,key},
/// CA /etc/kubernetes/pki/etcd/ca.crt) when readable, so on a kubeadm control-plane node
/// `sudo regscope` just works. regscope never writes to an etcd it did not start itself.
#[derive(Debug, Parser)]
#[command(name = "regscope", version, about, long_about, after_help = EXAMPLES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub ui: UiArgs,
}

const EXAMPLES: &str = "Examples:
  regscope demo                                   private etcd + simulated control plane
  sudo regscope                                   on a kubeadm control-plane node
  regscope --endpoints http://127.0.0.1:2379      a plain-HTTP etcd
  regscope snapshot --json | jq .resources        what is stored, per resource
  regscope verify                                 replica vs etcd, exit 1 on any difference
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
    Verify,
    /// Print the embedded default keymap or theme (TOML), to copy and override:
    /// `regscope print-config keymap > keys.toml`, then `regscope --keymap keys.toml`.
    PrintConfig {
        /// Which file; both (as two commented sections) when omitted.
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

/// How to reach etcd (flags win over ETCDCTL_* variables).
#[derive(Debug, Args, Clone, Default)]
pub struct ConnArgs {
    /// etcd endpoints, comma separated (e.g. https://127.0.0.1:2379).
    #[arg(long, env = "ETCDCTL_ENDPOINTS", value_delimiter = ',', global = true)]
    pub endpoints: Vec<String>,
    /// CA bundle that signs etcd's server certificate (PEM).
    #[arg(long, env = "ETCDCTL_CACERT", global = true)]
    pub cacert: Option<PathBuf>,
    /// Client certificate (PEM).
    #[arg(long, env = "ETCDCTL_CERT", global = true)]
    pub cert: Option<PathBuf>,
    /// Client private key (PEM).
    #[arg(long, env = "ETCDCTL_KEY", global = true)]
    pub key: Option<PathBuf>,
    /// etcd user, as `name` or `name:password` (etcdctl's form).
    #[arg(long, env = "ETCDCTL_USER", global = true)]
    pub user: Option<String>,
    /// etcd password (or give it in --user name:password).
    #[arg(long, env = "ETCDCTL_PASSWORD", hide_env_values = true, global = true)]
    pub password: Option<String>,
    /// Key prefix the apiserver stores under (kube-apiserver --etcd-prefix).
    #[arg(long, default_value = "/registry", global = true)]
    pub prefix: String,
    /// Keys in the first list page; later pages grow (up to 10,000 keys) while they stay
    /// under 8 MiB, and shrink when a page exceeds the gRPC message limit.
    #[arg(long, default_value_t = 500, global = true)]
    pub page_limit: i64,
    /// Bytes of revision history to keep besides the newest value of every key
    /// (e.g. 256MiB, 1GiB); older history is dropped first.
    #[arg(long, default_value = "256MiB", value_parser = parse_size, global = true)]
    pub history_budget: usize,
}

/// Console options.
#[derive(Debug, Args, Clone, Default)]
pub struct UiArgs {
    /// Keymap TOML overriding the embedded default (see `regscope print-config`).
    #[arg(long, global = true)]
    pub keymap: Option<PathBuf>,
    /// Colour theme TOML overriding the embedded default.
    #[arg(long, global = true)]
    pub theme: Option<PathBuf>,
    /// Show Secret data instead of `<redacted: N bytes>`.
    #[arg(long, global = true)]
    pub show_secrets: bool,
    /// The kube-apiserver's EncryptionConfiguration (its `--encryption-provider-config`), to
    /// decrypt values encrypted at rest (aescbc, aesgcm, secretbox; KMS values are only
    /// identified). Default: the file named in the kubeadm manifest
    /// /etc/kubernetes/manifests/kube-apiserver.yaml, when that is readable.
    #[arg(long, global = true, value_name = "FILE")]
    pub encryption_config: Option<PathBuf>,
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
}

#[derive(Debug, Args, Clone)]
pub struct SnapshotArgs {
    /// Print JSON (the only format today; kept explicit for scripts).
    #[arg(long)]
    pub json: bool,
    /// Add every key with its revisions, version, lease and size.
    #[arg(long)]
    pub keys: bool,
}

impl ConnArgs {
    /// Connection options with etcdctl's `name:password` form split and defaults applied.
    pub fn etcd_options(&self) -> EtcdOptions {
        let (user, password) = match &self.user {
            Some(u) => match u.split_once(':') {
                Some((n, p)) => (Some(n.to_string()), Some(p.to_string())),
                None => (Some(u.clone()), self.password.clone()),
            },
            None => (None, None),
        };
        EtcdOptions {
            endpoints: self
                .endpoints
                .iter()
                .map(|e| e.trim().to_string())
                .filter(|e| !e.is_empty())
                .collect(),
            cacert: self.cacert.clone(),
            cert: self.cert.clone(),
            key: self.key.clone(),
            user,
            password,
        }
        .with_defaults()
    }

    /// The prefix without trailing slash, as bytes.
    pub fn prefix_bytes(&self) -> Vec<u8> {
        let p = self.prefix.trim_end_matches('/');
        if p.is_empty() {
            b"/".to_vec()
        } else {
            p.as_bytes().to_vec()
        }
    }

    pub fn sync_options(&self) -> SyncOptions {
        SyncOptions {
            prefix: self.prefix_bytes(),
            page_limit: self.page_limit.max(1),
            ..SyncOptions::default()
        }
    }

    pub fn replica_config(&self) -> ReplicaConfig {
        ReplicaConfig {
            prefix: self.prefix_bytes().into(),
            history_budget: self.history_budget,
            ..ReplicaConfig::default()
        }
    }
}

/// Parses sizes such as `1048576`, `512KiB`, `256MiB`, `1GiB`, `2GB` into bytes.
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
    fn sizes() {
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("3 parsecs").is_err());
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

    #[test]
    fn cli_parses() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
