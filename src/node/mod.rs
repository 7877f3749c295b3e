//! What the control-plane node runs, read from its files: where etcd is and how to reach it,
//! the apiserver's storage settings, and where each fact was found.
//!
//! Layouts, tried in order (paths under `--root`, `/` by default):
//! - **kubeadm**: static pods in `/etc/kubernetes/manifests/{kube-apiserver,etcd}.yaml`;
//!   without a readable apiserver manifest, kubeadm's apiserver etcd client certificate
//!   (`/etc/kubernetes/pki/apiserver-etcd-client.{crt,key}`, CA `pki/etcd/ca.crt`) against
//!   `https://127.0.0.1:2379`.
//! - **RKE2**: static pods in `/var/lib/rancher/rke2/agent/pod-manifests/` (same flags).
//! - **k3s** with embedded etcd: no manifests (the apiserver runs inside the k3s process);
//!   etcd's config file `/var/lib/rancher/k3s/server/db/etcd/config` and the client
//!   certificate k3s gives its apiserver, `/var/lib/rancher/k3s/server/tls/etcd/client.{crt,key}`
//!   with CA `server-ca.crt` (the files the k3s documentation tells etcdctl to use).
//!
//! From kube-apiserver's flags: `--etcd-servers` (every member), `--etcd-cafile`,
//! `--etcd-certfile`, `--etcd-keyfile`, `--etcd-prefix`, `--etcd-servers-overrides`
//! (`group/resource#url;url,…`, e.g. Events in their own etcd cluster),
//! `--encryption-provider-config`, `--etcd-compaction-interval`, `--watch-cache-sizes`,
//! `--default-watch-cache-size`, `--secure-port`. From etcd's: `--listen-metrics-urls`
//! (kubeadm's plain `http://127.0.0.1:2381`), `--quota-backend-bytes`,
//! `--auto-compaction-mode/-retention`, `--data-dir`, and the settings etcd 3.6 renamed, in
//! either spelling (see [`from_etcd_flags`]): the watch progress notify interval, the
//! compaction batch limit and sleep interval, the corruption check period, and
//! `--feature-gates` (with the initial corruption check among them). From
//! kube-controller-manager's and kube-scheduler's manifests (see [`from_component`]):
//! `--secure-port`, `--bind-address`, `--tls-cert-file` and their kubeconfigs. File paths
//! are translated from the container to the host through the pod's hostPath mounts, then
//! read under the root.
//!
//! Nothing here connects anywhere: `regscope doctor` checks what was found.

pub mod certs;
pub mod etcd_bugs;
pub mod manifest;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use crate::source::connect::LOCAL_ETCD;

pub use manifest::{Manifest, ManifestError};

/// kubeadm's kube-apiserver static pod manifest.
pub const KUBEADM_APISERVER_MANIFEST: &str = "/etc/kubernetes/manifests/kube-apiserver.yaml";
/// kubeadm's etcd static pod manifest.
pub const KUBEADM_ETCD_MANIFEST: &str = "/etc/kubernetes/manifests/etcd.yaml";
/// kubeadm's client certificate for the apiserver's etcd connection, its key and the etcd CA.
pub const KUBEADM_CERT: &str = "/etc/kubernetes/pki/apiserver-etcd-client.crt";
pub const KUBEADM_KEY: &str = "/etc/kubernetes/pki/apiserver-etcd-client.key";
pub const KUBEADM_CA: &str = "/etc/kubernetes/pki/etcd/ca.crt";
/// kubeadm's kube-controller-manager static pod manifest.
pub const KUBEADM_CONTROLLER_MANAGER_MANIFEST: &str =
    "/etc/kubernetes/manifests/kube-controller-manager.yaml";
/// kubeadm's kube-scheduler static pod manifest.
pub const KUBEADM_SCHEDULER_MANIFEST: &str = "/etc/kubernetes/manifests/kube-scheduler.yaml";
const RKE2_APISERVER_MANIFEST: &str =
    "/var/lib/rancher/rke2/agent/pod-manifests/kube-apiserver.yaml";
const RKE2_ETCD_MANIFEST: &str = "/var/lib/rancher/rke2/agent/pod-manifests/etcd.yaml";
/// RKE2's kube-controller-manager static pod manifest.
pub const RKE2_CONTROLLER_MANAGER_MANIFEST: &str =
    "/var/lib/rancher/rke2/agent/pod-manifests/kube-controller-manager.yaml";
/// RKE2's kube-scheduler static pod manifest.
pub const RKE2_SCHEDULER_MANIFEST: &str =
    "/var/lib/rancher/rke2/agent/pod-manifests/kube-scheduler.yaml";
const K3S_ETCD_CONFIG: &str = "/var/lib/rancher/k3s/server/db/etcd/config";
const K3S_CERT: &str = "/var/lib/rancher/k3s/server/tls/etcd/client.crt";
const K3S_KEY: &str = "/var/lib/rancher/k3s/server/tls/etcd/client.key";
const K3S_CA: &str = "/var/lib/rancher/k3s/server/tls/etcd/server-ca.crt";

/// Which distribution's layout the facts came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    Kubeadm,
    Rke2,
    K3s,
}

impl Layout {
    pub fn name(self) -> &'static str {
        match self {
            Layout::Kubeadm => "kubeadm",
            Layout::Rke2 => "RKE2",
            Layout::K3s => "k3s",
        }
    }
}

/// One fact and where it was found: the file as on the node (without the root) and the
/// flag or key in it (`None` for a file found by its well-known path).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Fact {
    pub name: &'static str,
    pub value: String,
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flag: Option<String>,
}

/// How to reach one etcd cluster: client URLs and TLS files (paths under the root, ready
/// to open).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EtcdAccess {
    pub endpoints: Vec<String>,
    pub cacert: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

/// A resource kube-apiserver stores in another etcd cluster (`--etcd-servers-overrides`),
/// reached with the same TLS files as the main one (kube-apiserver has one set).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EtcdOverride {
    /// `group/resource` as written (`/events` for core Events).
    pub resource: String,
    pub endpoints: Vec<String>,
}

/// A file that should have told something and could not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub file: String,
    pub message: String,
    pub advice: String,
}

/// Everything found on the node. Empty (no layout) when the node runs none of the
/// layouts above or its files cannot be read (not root: try sudo).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Discovery {
    pub root: PathBuf,
    pub layout: Option<Layout>,
    pub facts: Vec<Fact>,
    pub problems: Vec<Problem>,
    pub etcd: Option<EtcdAccess>,
    pub overrides: Vec<EtcdOverride>,
    /// kube-apiserver `--etcd-prefix` (default `/registry`).
    pub prefix: Option<String>,
    pub encryption_config: Option<PathBuf>,
    /// etcd's plain-HTTP metrics endpoint with `/metrics`, when etcd serves one.
    pub etcd_metrics_url: Option<String>,
    /// kube-apiserver's own `/metrics` on this node (`https://127.0.0.1:<secure-port>`).
    pub apiserver_metrics_url: Option<String>,
    /// kube-apiserver's storage flags as written in its manifest ([`STORAGE_FLAGS`] that
    /// it gives), for the console (the watch cache next to its configuration).
    pub apiserver_flags: Option<crate::model::ApiserverFlags>,
    /// The file etcd's flags were read from (its static pod manifest, or k3s's etcd
    /// config file), as on the node; `None` when none was read.
    pub etcd_flags_file: Option<String>,
    /// etcd's `--watch-progress-notify-interval` (before etcd 3.6
    /// `--experimental-watch-progress-notify-interval`) as written: a Go duration such as
    /// `5s` (kubeadm's). `None` when not given: etcd's default is 10 minutes
    /// (`progressReportInterval`, etcd `server/etcdserver/api/v3rpc/watch.go`).
    pub etcd_watch_progress_notify_interval: Option<String>,
    /// etcd's server feature gates as configured: `--feature-gates` entries, then the
    /// gates that etcd 3.6 reads from the older boolean `--experimental-*` flags
    /// ([`ETCD_GATED_FLAGS`]). Gates not given are at etcd's defaults and not listed.
    pub etcd_feature_gates: Vec<FeatureGate>,
    /// kube-controller-manager's `/metrics` on this node
    /// (`https://127.0.0.1:<--secure-port, default 10257>/metrics`); `None` without its
    /// manifest or with `--secure-port=0` (no secure serving).
    pub controller_manager_metrics_url: Option<String>,
    /// kube-controller-manager's `--tls-cert-file` under the root; `None` when not given
    /// (it then serves a self-signed certificate it makes at start, see [`from_component`]).
    pub controller_manager_tls_cert: Option<PathBuf>,
    /// kube-scheduler's `/metrics` on this node
    /// (`https://127.0.0.1:<--secure-port, default 10259>/metrics`), as for the controller
    /// manager.
    pub scheduler_metrics_url: Option<String>,
    /// kube-scheduler's `--tls-cert-file` under the root, as for the controller manager.
    pub scheduler_tls_cert: Option<PathBuf>,
}

/// One etcd server feature gate as configured, and the flag (or config-file key) that
/// set it: `--feature-gates` / `feature-gates`, or an `--experimental-*` boolean flag
/// that etcd 3.6 maps onto the gate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FeatureGate {
    /// The gate's name, e.g. `InitialCorruptCheck` (etcd `server/features/etcd_features.go`).
    pub gate: String,
    pub enabled: bool,
    /// Where it was set, spelt as found.
    pub flag: String,
}

/// etcd settings renamed in 3.6 and read in either spelling: (fact name, etcd 3.6+ name,
/// name before 3.6), without the leading dashes (the k3s config file uses them so).
/// etcd 3.6 maps each `experimental-` name onto the new one (`experimentalFlagMigrationMap`
/// in etcd `server/embed/config.go`, deprecation texts in `server/etcdmain/config.go`);
/// etcd 3.7 removed the old names (etcd-io/etcd#19959, `CHANGELOG-3.7.md`).
pub const ETCD_RENAMED_FLAGS: [(&str, &str, &str); 4] = [
    (
        "etcd watch progress notify interval",
        "watch-progress-notify-interval",
        "experimental-watch-progress-notify-interval",
    ),
    (
        "etcd compaction batch limit",
        "compaction-batch-limit",
        "experimental-compaction-batch-limit",
    ),
    (
        "etcd compaction sleep interval",
        "compaction-sleep-interval",
        "experimental-compaction-sleep-interval",
    ),
    (
        "etcd corrupt check time",
        "corrupt-check-time",
        "experimental-corrupt-check-time",
    ),
];

/// etcd's boolean `experimental-` flags that etcd 3.6 turned into server feature gates:
/// (flag without dashes, gate) (`ExperimentalFlagToFeatureMap` in etcd 3.6
/// `server/features/etcd_features.go`). etcd 3.6 refuses to start when a flag and its gate
/// in `--feature-gates` are both given (`SetFeatureGatesFromExperimentalFlags`, etcd 3.6
/// `server/embed/config.go`).
pub const ETCD_GATED_FLAGS: [(&str, &str); 6] = [
    ("experimental-initial-corrupt-check", "InitialCorruptCheck"),
    (
        "experimental-stop-grpc-service-on-defrag",
        "StopGRPCServiceOnDefrag",
    ),
    (
        "experimental-compact-hash-check-enabled",
        "CompactHashCheck",
    ),
    (
        "experimental-txn-mode-write-with-shared-buffer",
        "TxnModeWriteWithSharedBuffer",
    ),
    ("experimental-enable-lease-checkpoint", "LeaseCheckpoint"),
    (
        "experimental-enable-lease-checkpoint-persist",
        "LeaseCheckpointPersist",
    ),
];

/// kube-apiserver's list flags among those (pflag `StringSlice`): each occurrence appends.
const LIST_FLAGS: [&str; 2] = ["--etcd-servers-overrides", "--watch-cache-sizes"];

/// kube-apiserver's flags about its storage that the console shows as configured
/// ([`crate::model::ApiserverFlags`]).
pub const STORAGE_FLAGS: [&str; 5] = [
    "--watch-cache",
    "--watch-cache-sizes",
    "--default-watch-cache-size",
    "--etcd-servers-overrides",
    "--etcd-compaction-interval",
];

impl Discovery {
    /// `path` (as on the node) under the root.
    pub fn under(&self, path: &Path) -> PathBuf {
        under(&self.root, path)
    }

    /// Whether discovery was partial: a layout was recognised but a file in it could
    /// not be used.
    pub fn partial(&self) -> bool {
        !self.problems.is_empty()
    }

    /// kube-apiserver's other etcd clusters: the resources of each `--etcd-servers-overrides`
    /// entry grouped by their client URLs, as `(resources comma-separated, URLs)` in the
    /// order written (the console watches each, `doctor` checks each member once).
    /// An override naming the main cluster's own URLs is the main cluster: left out.
    pub fn other_clusters(&self) -> Vec<(String, Vec<String>)> {
        let main = self.etcd.as_ref().map_or(&[][..], |e| &e.endpoints[..]);
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for o in &self.overrides {
            if o.endpoints.iter().all(|u| main.contains(u)) {
                continue;
            }
            match out.iter_mut().find(|(_, urls)| *urls == o.endpoints) {
                Some((resources, _)) => {
                    resources.push(',');
                    resources.push_str(&o.resource);
                }
                None => out.push((o.resource.clone(), o.endpoints.clone())),
            }
        }
        out
    }

    fn fact(
        &mut self,
        name: &'static str,
        value: impl Into<String>,
        file: &str,
        flag: Option<&str>,
    ) {
        self.facts.push(Fact {
            name,
            value: value.into(),
            file: file.to_string(),
            flag: flag.map(str::to_string),
        });
    }

    fn problem(&mut self, file: &str, message: impl Into<String>, advice: impl Into<String>) {
        self.problems.push(Problem {
            file: file.to_string(),
            message: message.into(),
            advice: advice.into(),
        });
    }

    fn readable(&self, path: &str) -> bool {
        std::fs::File::open(under(&self.root, Path::new(path))).is_ok()
    }
}

/// `path` (absolute on the node, or relative as a manifest may write it) under `root`.
pub fn under(root: &Path, path: &Path) -> PathBuf {
    if root == Path::new("/") || path.is_relative() {
        return path.to_path_buf();
    }
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// Reads the node's files under `root` (`/` on a real node). Never fails: what cannot be
/// read becomes a [`Problem`] (for a recognised layout) or is simply not found.
pub fn discover(root: &Path) -> Discovery {
    let mut d = Discovery {
        root: root.to_path_buf(),
        ..Default::default()
    };
    let layouts = [
        (
            Layout::Kubeadm,
            KUBEADM_APISERVER_MANIFEST,
            KUBEADM_ETCD_MANIFEST,
        ),
        (Layout::Rke2, RKE2_APISERVER_MANIFEST, RKE2_ETCD_MANIFEST),
    ];
    for (layout, apiserver, etcd) in layouts {
        let components = match layout {
            Layout::Rke2 => [
                (CONTROLLER_MANAGER, RKE2_CONTROLLER_MANAGER_MANIFEST),
                (SCHEDULER, RKE2_SCHEDULER_MANIFEST),
            ],
            _ => [
                (CONTROLLER_MANAGER, KUBEADM_CONTROLLER_MANAGER_MANIFEST),
                (SCHEDULER, KUBEADM_SCHEDULER_MANIFEST),
            ],
        };
        let path = d.under(Path::new(apiserver));
        if !path.exists() && !d.under(Path::new(etcd)).exists() {
            continue;
        }
        d.layout = Some(layout);
        match Manifest::read(&path) {
            Ok(m) => from_apiserver(&mut d, &m, apiserver),
            Err(e) if path.exists() => d.problem(
                apiserver,
                e.to_string(),
                "fix the manifest (the kubelet cannot run it either), or pass --endpoints, --cacert, --cert and --key",
            ),
            Err(_) => d.problem(
                apiserver,
                "no kube-apiserver manifest beside etcd's",
                "pass --endpoints, --cacert, --cert and --key",
            ),
        }
        let etcd_path = d.under(Path::new(etcd));
        if etcd_path.exists() {
            match Manifest::read(&etcd_path) {
                Ok(m) => from_etcd_flags(&mut d, &m, etcd),
                Err(e) => d.problem(
                    etcd,
                    e.to_string(),
                    "fix the manifest, or pass --etcd-metrics-url",
                ),
            }
        }
        // A node may run only some components: a missing manifest is no problem.
        for (component, file) in components {
            let path = d.under(Path::new(file));
            if !path.exists() {
                continue;
            }
            match Manifest::read(&path) {
                Ok(m) => from_component(&mut d, &m, file, &component),
                Err(e) => d.problem(
                    file,
                    e.to_string(),
                    "fix the manifest (the kubelet cannot run it either), or run as root (sudo)",
                ),
            }
        }
        if d.etcd.is_none() && layout == Layout::Kubeadm {
            kubeadm_certificates(&mut d);
        }
        return d;
    }
    if d.readable(KUBEADM_CERT) && d.readable(KUBEADM_KEY) && d.readable(KUBEADM_CA) {
        d.layout = Some(Layout::Kubeadm);
        kubeadm_certificates(&mut d);
        return d;
    }
    let k3s = d.under(Path::new(K3S_ETCD_CONFIG));
    if k3s.exists() || d.readable(K3S_CERT) {
        d.layout = Some(Layout::K3s);
        from_k3s(&mut d, &k3s);
    }
    d
}

/// kubeadm's certificate files at their default paths, against the local member.
fn kubeadm_certificates(d: &mut Discovery) {
    if !(d.readable(KUBEADM_CERT) && d.readable(KUBEADM_KEY) && d.readable(KUBEADM_CA)) {
        return;
    }
    d.fact("etcd endpoints", LOCAL_ETCD, "kubeadm default", None);
    d.fact("etcd CA", KUBEADM_CA, "kubeadm default", None);
    d.fact(
        "etcd client certificate",
        KUBEADM_CERT,
        "kubeadm default",
        None,
    );
    d.fact("etcd client key", KUBEADM_KEY, "kubeadm default", None);
    d.etcd = Some(EtcdAccess {
        endpoints: vec![LOCAL_ETCD.into()],
        cacert: Some(d.under(Path::new(KUBEADM_CA))),
        cert: Some(d.under(Path::new(KUBEADM_CERT))),
        key: Some(d.under(Path::new(KUBEADM_KEY))),
    });
}

fn split_urls(v: &str, sep: char) -> Vec<String> {
    v.split(sep)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn from_apiserver(d: &mut Discovery, m: &Manifest, file: &str) {
    let path_fact = |d: &mut Discovery, name, flag: &str| -> Option<PathBuf> {
        let p = m.path_flag(flag)?;
        d.fact(name, p.display().to_string(), file, Some(flag));
        Some(d.under(&p))
    };
    let endpoints = m
        .flag("--etcd-servers")
        .map(|v| split_urls(&v, ','))
        .unwrap_or_default();
    let cacert = path_fact(d, "etcd CA", "--etcd-cafile");
    let cert = path_fact(d, "etcd client certificate", "--etcd-certfile");
    let key = path_fact(d, "etcd client key", "--etcd-keyfile");
    if endpoints.is_empty() {
        d.problem(
            file,
            "kube-apiserver has no --etcd-servers flag (misspelt?)",
            "check the manifest's flags, or pass --endpoints",
        );
    } else {
        d.facts.insert(
            0,
            Fact {
                name: "etcd endpoints",
                value: endpoints.join(","),
                file: file.to_string(),
                flag: Some("--etcd-servers".into()),
            },
        );
        d.etcd = Some(EtcdAccess {
            endpoints,
            cacert,
            cert,
            key,
        });
    }
    if let Some(p) = m.flag("--etcd-prefix").filter(|p| !p.is_empty()) {
        d.fact("etcd prefix", &p, file, Some("--etcd-prefix"));
        d.prefix = Some(p);
    }
    // A list flag: every occurrence appends (k8s.io/apiserver `EtcdOptions`).
    if let Some(v) = m
        .list_flag("--etcd-servers-overrides")
        .filter(|v| !v.is_empty())
    {
        d.fact(
            "etcd servers overrides",
            &v,
            file,
            Some("--etcd-servers-overrides"),
        );
        for entry in v.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            // kube-apiserver refuses to start on an entry that is not exactly
            // `group/resource#servers` (`EtcdOptions.Validate`).
            let parsed = entry
                .split_once('#')
                .filter(|(r, u)| r.matches('/').count() == 1 && !u.contains('#'));
            let Some((resource, urls)) = parsed else {
                d.problem(
                    file,
                    format!(
                        "--etcd-servers-overrides entry {entry:?} is not group/resource#url;url (kube-apiserver refuses to start on it)"
                    ),
                    "fix the flag: core resources are written /events, others group/resource",
                );
                continue;
            };
            let endpoints = split_urls(urls, ';');
            if endpoints.is_empty() {
                d.problem(
                    file,
                    format!("--etcd-servers-overrides entry {entry:?} names no servers"),
                    "give the override's etcd URLs after #, separated by ;",
                );
                continue;
            }
            // A resource overridden twice: the last entry wins, as in kube-apiserver's
            // storage factory (a map by group/resource).
            let resource = resource.trim().to_string();
            d.overrides.retain(|o| o.resource != resource);
            d.overrides.push(EtcdOverride {
                resource,
                endpoints,
            });
        }
    }
    if let Some(p) = path_fact(d, "encryption config", "--encryption-provider-config") {
        d.encryption_config = Some(p);
    }
    for (name, flag) in [
        ("compaction interval", "--etcd-compaction-interval"),
        ("watch cache", "--watch-cache"),
        ("watch cache sizes", "--watch-cache-sizes"),
        ("default watch cache size", "--default-watch-cache-size"),
    ] {
        let v = if LIST_FLAGS.contains(&flag) {
            m.list_flag(flag)
        } else {
            m.flag(flag)
        };
        if let Some(v) = v {
            d.fact(name, v, file, Some(flag));
        }
    }
    d.apiserver_flags = Some(crate::model::ApiserverFlags {
        file: file.to_string(),
        flags: STORAGE_FLAGS
            .iter()
            .filter_map(|f| {
                let v = if LIST_FLAGS.contains(f) {
                    m.list_flag(f)
                } else {
                    m.flag(f)
                };
                v.map(|v| (f.to_string(), v))
            })
            .collect(),
    });
    if let Some(wc) = d.apiserver_flags.as_ref().and_then(|f| f.watch_cache()) {
        for entry in wc.unreadable {
            d.problem(
                file,
                format!(
                    "--watch-cache-sizes entry {entry:?} is not resource[.group]#size with a size of 0 or more (kube-apiserver refuses to start on it)"
                ),
                "fix the flag, e.g. secrets#0 to turn off one resource's watch cache",
            );
        }
    }
    let port = m.flag("--secure-port");
    let url = format!(
        "https://127.0.0.1:{}/metrics",
        port.as_deref().unwrap_or("6443")
    );
    match port {
        Some(_) => d.fact("apiserver metrics", &url, file, Some("--secure-port")),
        None => d.fact(
            "apiserver metrics",
            &url,
            file,
            Some("(--secure-port default)"),
        ),
    }
    d.apiserver_metrics_url = Some(url);
}

/// The first plain-HTTP URL of a `--listen-metrics-urls` value, with `/metrics`, a
/// wildcard address read as loopback.
fn metrics_url(v: &str) -> Option<String> {
    let url = split_urls(v, ',')
        .into_iter()
        .find(|u| u.starts_with("http://"))?;
    let url = url
        .replace("://0.0.0.0:", "://127.0.0.1:")
        .replace("://[::]:", "://127.0.0.1:");
    Some(format!("{}/metrics", url.trim_end_matches('/')))
}

/// etcd's flags from its static pod manifest: the metrics URL, the quota, auto-compaction,
/// the data dir, then the settings etcd 3.6 renamed in either spelling and the feature
/// gates ([`etcd_settings`]).
fn from_etcd_flags(d: &mut Discovery, m: &Manifest, file: &str) {
    d.etcd_flags_file = Some(file.to_string());
    if let Some(v) = m.flag("--listen-metrics-urls") {
        d.fact("etcd metrics URLs", &v, file, Some("--listen-metrics-urls"));
        d.etcd_metrics_url = metrics_url(&v);
    }
    for (name, flag) in [
        ("etcd quota (bytes)", "--quota-backend-bytes"),
        ("etcd auto-compaction mode", "--auto-compaction-mode"),
        (
            "etcd auto-compaction retention",
            "--auto-compaction-retention",
        ),
        ("etcd data dir", "--data-dir"),
    ] {
        if let Some(v) = m.flag(flag) {
            d.fact(name, v, file, Some(flag));
        }
    }
    // Each `--feature-gates` occurrence adds to the gates (component-base `featuregate`
    // `Set` merges a map), so every occurrence is read, in order.
    etcd_settings(
        d,
        file,
        "--",
        |name| m.flag(&format!("--{name}")),
        m.list_flag("--feature-gates"),
    );
}

/// The settings etcd 3.6 renamed ([`ETCD_RENAMED_FLAGS`], [`ETCD_GATED_FLAGS`]) and the
/// feature gates, read through `get` (a flag or config-file key, named without dashes;
/// `dashes` is put before the name in facts: `--` for flags, empty for config keys).
///
/// A setting given in both spellings: the new spelling's value is the one recorded (the
/// only one etcd 3.7 reads), and it is a [`Problem`] whatever the values: etcd 3.6 refuses
/// to start with both, as flags or config-file keys (`Config.Validate` and
/// `SetFeatureGatesFromExperimentalFlags`, etcd 3.6 `server/embed/config.go`); on the
/// command line 3.7 refuses the old flags as undefined (etcd-io/etcd#19959) and 3.5 the
/// new ones, while in a config file each ignores the key it does not know
/// (`sigs.k8s.io/yaml` in `configFromFile`).
fn etcd_settings(
    d: &mut Discovery,
    file: &str,
    dashes: &str,
    get: impl Fn(&str) -> Option<String>,
    gates: Option<String>,
) {
    for (name, new, old) in ETCD_RENAMED_FLAGS {
        let (new_v, old_v) = (get(new), get(old));
        let new_flag = format!("{dashes}{new}");
        let old_flag = format!("{dashes}{old}");
        let (value, flag) = match (new_v, old_v) {
            (Some(n), Some(o)) => {
                let values = if n == o {
                    format!("both {n}")
                } else {
                    format!("{o} and {n}: regscope reads {n}, as etcd 3.7 would")
                };
                d.problem(
                    file,
                    format!(
                        "etcd is given both {old_flag} and {new_flag} ({values}); etcd 3.6 refuses to start with both, etcd 3.7 knows only {new_flag}"
                    ),
                    format!("keep only {new_flag} (etcd 3.6 and later; {old_flag} on etcd 3.5)"),
                );
                (n, new_flag)
            }
            (Some(n), None) => (n, new_flag),
            (None, Some(o)) => (o, old_flag),
            (None, None) => continue,
        };
        if new == "watch-progress-notify-interval" {
            d.etcd_watch_progress_notify_interval = Some(value.clone());
        }
        d.fact(name, value, file, Some(&flag));
    }
    let gates_flag = format!("{dashes}feature-gates");
    if let Some(text) = gates.filter(|t| !t.trim().is_empty()) {
        d.fact("etcd feature gates", &text, file, Some(&gates_flag));
        let (parsed, bad) = parse_feature_gates(&text);
        for entry in bad {
            d.problem(
                file,
                format!(
                    "{gates_flag} entry {entry:?} is not Gate=true or Gate=false (etcd refuses to start on it)"
                ),
                "write each gate as Name=true or Name=false, separated by commas",
            );
        }
        for (gate, enabled) in parsed {
            // A gate given twice: the later entry wins (the gate map is set in order).
            d.etcd_feature_gates.retain(|g| g.gate != gate);
            d.etcd_feature_gates.push(FeatureGate {
                gate,
                enabled,
                flag: gates_flag.clone(),
            });
        }
    }
    for (old, gate) in ETCD_GATED_FLAGS {
        let Some(v) = get(old) else { continue };
        let old_flag = format!("{dashes}{old}");
        // A boolean flag given bare (`--experimental-initial-corrupt-check`) is true.
        let Some(enabled) = (if v.is_empty() {
            Some(true)
        } else {
            go_bool(&v)
        }) else {
            d.problem(
                file,
                format!("{old_flag}={v} is not a boolean (etcd refuses to start on it)"),
                format!("write {old_flag}=true or false, or {gates_flag}={gate}=true on etcd 3.6 and later"),
            );
            continue;
        };
        if d.etcd_feature_gates.iter().any(|g| g.gate == gate) {
            d.problem(
                file,
                format!(
                    "etcd is given both {old_flag} and {gate} in {gates_flag}; etcd 3.6 refuses to start with both, etcd 3.7 knows only {gates_flag}"
                ),
                format!("keep only {gates_flag}={gate}=… (etcd 3.6 and later; {old_flag} on etcd 3.5)"),
            );
            continue;
        }
        d.etcd_feature_gates.push(FeatureGate {
            gate: gate.to_string(),
            enabled,
            flag: old_flag,
        });
    }
    if let Some(g) = d
        .etcd_feature_gates
        .iter()
        .find(|g| g.gate == "InitialCorruptCheck")
        .cloned()
    {
        let flag = if g.flag == gates_flag {
            format!("{gates_flag} InitialCorruptCheck")
        } else {
            g.flag.clone()
        };
        d.fact(
            "etcd initial corrupt check",
            g.enabled.to_string(),
            file,
            Some(&flag),
        );
    }
}

/// `Gate=bool` entries of a feature-gates value, comma-separated, blanks ignored, as
/// component-base's `featuregate` `Set` reads them (each value as Go's `strconv.ParseBool`).
/// Returns the gates in order and the entries it could not read.
pub fn parse_feature_gates(text: &str) -> (Vec<(String, bool)>, Vec<String>) {
    let (mut gates, mut bad) = (Vec::new(), Vec::new());
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        match entry
            .split_once('=')
            .and_then(|(k, v)| Some((k.trim(), go_bool(v.trim())?)))
            .filter(|(k, _)| !k.is_empty())
        {
            Some((k, v)) => gates.push((k.to_string(), v)),
            None => bad.push(entry.to_string()),
        }
    }
    (gates, bad)
}

/// A boolean as Go's `strconv.ParseBool` reads it (`1 t T TRUE true True`, `0 f F FALSE
/// false False`).
fn go_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// A control-plane component serving `/metrics` on its own secure port, with the names of
/// its facts.
struct Component {
    /// The program, for messages: `kube-controller-manager`, `kube-scheduler`.
    program: &'static str,
    default_port: u16,
    /// Fact names: metrics URL, bind address, serving certificate, and the kubeconfigs of
    /// `--kubeconfig`, `--authentication-kubeconfig`, `--authorization-kubeconfig`.
    metrics: &'static str,
    bind: &'static str,
    cert: &'static str,
    kubeconfigs: [&'static str; 3],
}

/// kube-controller-manager: secure port 10257 (`KubeControllerManagerPort`, kubernetes
/// `pkg/cluster/ports/ports.go`, set in `cmd/kube-controller-manager/app/options/options.go`).
const CONTROLLER_MANAGER: Component = Component {
    program: "kube-controller-manager",
    default_port: 10257,
    metrics: "controller-manager metrics",
    bind: "controller-manager bind address",
    cert: "controller-manager serving certificate",
    kubeconfigs: [
        "controller-manager kubeconfig",
        "controller-manager authentication kubeconfig",
        "controller-manager authorization kubeconfig",
    ],
};
/// kube-scheduler: secure port 10259 (`DefaultKubeSchedulerPort`, kubernetes
/// `pkg/scheduler/apis/config/types.go`, used in `cmd/kube-scheduler/app/options`).
const SCHEDULER: Component = Component {
    program: "kube-scheduler",
    default_port: 10259,
    metrics: "scheduler metrics",
    bind: "scheduler bind address",
    cert: "scheduler serving certificate",
    kubeconfigs: [
        "scheduler kubeconfig",
        "scheduler authentication kubeconfig",
        "scheduler authorization kubeconfig",
    ],
};

/// kube-controller-manager's or kube-scheduler's manifest: where its `/metrics` is served
/// (`--secure-port`, `--bind-address`), with which certificate (`--tls-cert-file`), and its
/// kubeconfigs (`--kubeconfig`, `--authentication-kubeconfig`, `--authorization-kubeconfig`).
///
/// Without `--tls-cert-file` both serve a self-signed certificate for `localhost` and
/// 127.0.0.1 that they generate in memory at start (their options' `Config` calls
/// `SecureServing.MaybeDefaultWithSelfSignedCerts`, kubernetes
/// `cmd/kube-controller-manager/app/options/options.go` and
/// `cmd/kube-scheduler/app/options/options.go`; k8s.io/apiserver
/// `pkg/server/options/serving.go`): no CA on the node can verify it.
/// `--secure-port=0` turns secure serving off: no URL.
fn from_component(d: &mut Discovery, m: &Manifest, file: &str, c: &Component) {
    let bind = m.flag("--bind-address");
    if let Some(b) = &bind {
        d.fact(c.bind, b, file, Some("--bind-address"));
    }
    // A wildcard (or unset, default 0.0.0.0) listens on loopback too: ask there.
    let host = match bind.as_deref().map(str::trim) {
        None | Some("" | "0.0.0.0" | "::" | "[::]") => "127.0.0.1".to_string(),
        Some(a) if a.contains(':') && !a.starts_with('[') => format!("[{a}]"),
        Some(a) => a.to_string(),
    };
    let port = m.flag("--secure-port");
    let url = match port.as_deref().map(str::trim) {
        None => Some(format!("https://{host}:{}/metrics", c.default_port)),
        Some("0") => None,
        Some(p) if p.parse::<u16>().is_ok() => Some(format!("https://{host}:{p}/metrics")),
        Some(p) => {
            d.problem(
                file,
                format!("{} --secure-port={p:?} is not a port", c.program),
                "fix the flag (the component cannot start with it either)",
            );
            None
        }
    };
    match (&url, &port) {
        (Some(u), Some(_)) => d.fact(c.metrics, u, file, Some("--secure-port")),
        (Some(u), None) => d.fact(c.metrics, u, file, Some("(--secure-port default)")),
        (None, Some(p)) if p.trim() == "0" => d.fact(
            c.metrics,
            "not served (secure serving off)",
            file,
            Some("--secure-port"),
        ),
        _ => {}
    }
    let cert = match m.path_flag("--tls-cert-file") {
        Some(p) => {
            d.fact(
                c.cert,
                p.display().to_string(),
                file,
                Some("--tls-cert-file"),
            );
            Some(d.under(&p))
        }
        None => {
            d.fact(
                c.cert,
                "self-signed, made in memory at start",
                file,
                Some("(no --tls-cert-file)"),
            );
            None
        }
    };
    let flags = [
        "--kubeconfig",
        "--authentication-kubeconfig",
        "--authorization-kubeconfig",
    ];
    for (fact, flag) in c.kubeconfigs.into_iter().zip(flags) {
        if let Some(p) = m.path_flag(flag) {
            d.fact(fact, p.display().to_string(), file, Some(flag));
        }
    }
    if c.program == CONTROLLER_MANAGER.program {
        d.controller_manager_metrics_url = url;
        d.controller_manager_tls_cert = cert;
    } else {
        d.scheduler_metrics_url = url;
        d.scheduler_tls_cert = cert;
    }
}

fn from_k3s(d: &mut Discovery, config: &Path) {
    let mut endpoints = vec![LOCAL_ETCD.to_string()];
    match Manifest::read(config) {
        Ok(m) => {
            d.etcd_flags_file = Some(K3S_ETCD_CONFIG.to_string());
            if let Some(v) = m.key("listen-client-urls") {
                let urls = split_urls(&v, ',');
                if let Some(local) = urls.iter().find(|u| u.contains("://127.0.0.1:")) {
                    endpoints = vec![local.clone()];
                }
                d.fact(
                    "etcd endpoints",
                    endpoints.join(","),
                    K3S_ETCD_CONFIG,
                    Some("listen-client-urls"),
                );
            }
            if let Some(v) = m.key("listen-metrics-urls") {
                d.fact(
                    "etcd metrics URLs",
                    &v,
                    K3S_ETCD_CONFIG,
                    Some("listen-metrics-urls"),
                );
                d.etcd_metrics_url = metrics_url(&v);
            }
            for (name, key) in [
                ("etcd quota (bytes)", "quota-backend-bytes"),
                ("etcd auto-compaction mode", "auto-compaction-mode"),
                (
                    "etcd auto-compaction retention",
                    "auto-compaction-retention",
                ),
                ("etcd data dir", "data-dir"),
            ] {
                if let Some(v) = m.key(key) {
                    d.fact(name, v, K3S_ETCD_CONFIG, Some(key));
                }
            }
            // The same names as the flags, without dashes; `feature-gates` is one string
            // (etcd `configJSON.ServerFeatureGatesJSON`, `server/embed/config.go`).
            etcd_settings(
                d,
                K3S_ETCD_CONFIG,
                "",
                |key| m.key(key),
                m.key("feature-gates"),
            );
        }
        Err(e) if config.exists() => d.problem(K3S_ETCD_CONFIG, e.to_string(), "pass --endpoints"),
        Err(_) => d.fact("etcd endpoints", LOCAL_ETCD, "k3s default", None),
    }
    if d.readable(K3S_CERT) && d.readable(K3S_KEY) && d.readable(K3S_CA) {
        d.fact("etcd CA", K3S_CA, "k3s default", None);
        d.fact("etcd client certificate", K3S_CERT, "k3s default", None);
        d.fact("etcd client key", K3S_KEY, "k3s default", None);
        d.etcd = Some(EtcdAccess {
            endpoints,
            cacert: Some(d.under(Path::new(K3S_CA))),
            cert: Some(d.under(Path::new(K3S_CERT))),
            key: Some(d.under(Path::new(K3S_KEY))),
        });
    } else {
        d.problem(
            K3S_CERT,
            "k3s's etcd client certificate, key or CA cannot be read",
            "run as root (sudo), or pass --cacert, --cert and --key",
        );
    }
}

#[cfg(test)]
mod tests;
