//! How to reach etcd and kube-apiserver: the connection flags (etcdctl's names, honouring
//! the same `ETCDCTL_*` variables), the apiserver and `/metrics` flags, their defaults and
//! what a control-plane node's own files fill in when a flag is not given.

use std::path::PathBuf;

use clap::Args;

use super::parse::{parse_duration, parse_memory_limit, parse_size};
use crate::source::{EtcdOptions, SyncOptions};
use crate::store::ReplicaConfig;

/// How to reach etcd (flags win over ETCDCTL_* variables). Not global: flattened into the
/// root (the console) and into the subcommands that connect, so that `decode --key` can
/// mean an etcd key rather than the TLS client key.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "etcd connection")]
pub struct ConnArgs {
    /// etcd endpoints, comma separated (e.g. https://127.0.0.1:2379).
    #[arg(long, env = "ETCDCTL_ENDPOINTS", value_delimiter = ',')]
    pub endpoints: Vec<String>,
    /// CA bundle that signs etcd's server certificate (PEM).
    #[arg(long, env = "ETCDCTL_CACERT")]
    pub cacert: Option<PathBuf>,
    /// Client certificate (PEM).
    #[arg(long, env = "ETCDCTL_CERT")]
    pub cert: Option<PathBuf>,
    /// Client private key (PEM).
    #[arg(long, env = "ETCDCTL_KEY")]
    pub key: Option<PathBuf>,
    /// etcd user, as `name` or `name:password` (etcdctl's form).
    #[arg(long, env = "ETCDCTL_USER")]
    pub user: Option<String>,
    /// etcd password (or give it in --user name:password).
    #[arg(long, env = "ETCDCTL_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// Key prefix the apiserver stores under (kube-apiserver --etcd-prefix; default: the
    /// node's, else /registry).
    #[arg(long, default_value = "/registry")]
    pub prefix: String,
    /// Whether --prefix was given (else the node's --etcd-prefix may replace the default).
    #[arg(skip)]
    pub prefix_given: bool,
    /// Keys in the first list page; later pages hold about 4 MiB of keys and values (at
    /// most 50,000 keys), and shrink when a page exceeds the gRPC message limit.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(i64).range(1..))]
    pub page_limit: i64,
    /// List ranges read from etcd at once during a list. The prefix is cut into ranges
    /// (resources, namespaces, names) read at one revision; 1 reads them one after another,
    /// which spares a busy etcd at the cost of a slower start.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub list_concurrency: u16,
    /// Bytes of revision history to keep besides the newest value of every key
    /// (e.g. 256MiB, 1GiB); older history is dropped first.
    #[arg(long, default_value = "256MiB", value_parser = parse_size)]
    pub history_budget: usize,
    /// Resident memory regscope keeps under (e.g. 1GiB), checked every 25 ms during a list
    /// and every second otherwise. Over it, history is dropped first; if the newest values
    /// alone do not fit, updates stop with a message saying so (the console keeps what it
    /// shows; `snapshot`, `verify` and `record` exit 2) instead of regscope growing until
    /// the kernel kills it. A burst between two checks (a recording's checkpoint) can pass
    /// it briefly: leave headroom under a cgroup limit.
    #[arg(long, value_parser = parse_memory_limit)]
    pub memory_limit: Option<usize>,
}

/// The kube-apiserver side and the `/metrics` scrapers (global: they apply to the console,
/// `demo` and `snapshot` wherever they are written on the command line).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "kube-apiserver and metrics")]
pub struct MetricsArgs {
    /// kubeconfig for kube-apiserver: its /metrics and regscope's informers (exec, token
    /// and certificate auth as kubectl). Default: /etc/kubernetes/admin.conf when readable
    /// (kubeadm control-plane nodes, with sudo), then $KUBECONFIG, then ~/.kube/config;
    /// when none is found the apiserver side is off. A --kubeconfig that cannot be read is
    /// an error.
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// kubeconfig context to use (default: its current-context).
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
    /// Scrape kube-apiserver's metrics from this URL instead of through the kubeconfig,
    /// e.g. https://127.0.0.1:6443/metrics, authenticated with --apiserver-token-file or
    /// --apiserver-cert/--apiserver-key. Without a kubeconfig, informers use the same URL
    /// and credentials.
    #[arg(long, global = true, value_name = "URL")]
    pub apiserver_metrics_url: Option<String>,
    /// Bearer token file for --apiserver-metrics-url (re-read at every scrape).
    #[arg(long, global = true, value_name = "FILE")]
    pub apiserver_token_file: Option<PathBuf>,
    /// Client certificate (PEM) for --apiserver-metrics-url; with --apiserver-key.
    #[arg(long, global = true, value_name = "FILE")]
    pub apiserver_cert: Option<PathBuf>,
    /// Client private key (PEM) for --apiserver-metrics-url; with --apiserver-cert.
    #[arg(long, global = true, value_name = "FILE")]
    pub apiserver_key: Option<PathBuf>,
    /// CA bundle (PEM) that signs the apiserver's certificate, for --apiserver-metrics-url
    /// (on kubeadm nodes /etc/kubernetes/pki/ca.crt).
    #[arg(long, global = true, value_name = "FILE")]
    pub apiserver_cacert: Option<PathBuf>,
    /// Do not verify the apiserver's certificate (--apiserver-metrics-url only).
    #[arg(long, global = true)]
    pub apiserver_insecure_skip_tls_verify: bool,
    /// etcd metrics URL, e.g. http://127.0.0.1:2381/metrics (etcd's --listen-metrics-urls;
    /// https uses --cacert/--cert/--key). Default: the etcd endpoint's /metrics with the
    /// etcd connection's certificates (the next endpoint given after a failed scrape).
    #[arg(long, global = true, value_name = "URL")]
    pub etcd_metrics_url: Option<String>,
    /// Time between scrapes of each /metrics endpoint, at least 1s (e.g. 5s, 30s, 1m).
    #[arg(long, global = true, default_value = "5s", value_parser = parse_duration, value_name = "DURATION")]
    pub scrape_interval: std::time::Duration,
    /// Timeout of one scrape (default: the interval, at most 10s).
    #[arg(long, global = true, value_parser = parse_duration, value_name = "DURATION")]
    pub scrape_timeout: Option<std::time::Duration>,
    /// kube-apiserver metrics file (Prometheus text) instead of a live scrape; repeat for
    /// successive scrapes, stamped --scrape-interval apart and ending now. With metrics
    /// files no kubeconfig is looked for (an explicit --kubeconfig still starts informers).
    #[arg(long, global = true, value_name = "FILE")]
    pub apiserver_metrics_file: Vec<PathBuf>,
    /// etcd metrics file instead of a live scrape; repeatable like --apiserver-metrics-file.
    #[arg(long, global = true, value_name = "FILE")]
    pub etcd_metrics_file: Vec<PathBuf>,
    /// kube-controller-manager's metrics URL (its secure port, default
    /// https://127.0.0.1:10257/metrics): its informers' lag and workqueues. Default: found
    /// in the node's static pod manifest (kubeadm, RKE2). Credentials: the kubeconfig's, or
    /// --controllers-token-file / --controllers-cert and --controllers-key.
    #[arg(long, global = true, value_name = "URL")]
    pub controller_manager_metrics_url: Option<String>,
    /// kube-scheduler's metrics URL (default https://127.0.0.1:10259/metrics when found in
    /// the node's manifests); as --controller-manager-metrics-url.
    #[arg(long, global = true, value_name = "URL")]
    pub scheduler_metrics_url: Option<String>,
    /// kube-controller-manager metrics file instead of a live scrape; repeatable like
    /// --apiserver-metrics-file.
    #[arg(long, global = true, value_name = "FILE")]
    pub controller_manager_metrics_file: Vec<PathBuf>,
    /// kube-scheduler metrics file instead of a live scrape; repeatable.
    #[arg(long, global = true, value_name = "FILE")]
    pub scheduler_metrics_file: Vec<PathBuf>,
    /// Bearer token file for kube-controller-manager's and kube-scheduler's /metrics
    /// (instead of the kubeconfig's credentials; re-read at every scrape).
    #[arg(long, global = true, value_name = "FILE")]
    pub controllers_token_file: Option<PathBuf>,
    /// Client certificate (PEM) for their /metrics; with --controllers-key.
    #[arg(long, global = true, value_name = "FILE")]
    pub controllers_cert: Option<PathBuf>,
    /// Client private key (PEM) for their /metrics; with --controllers-cert.
    #[arg(long, global = true, value_name = "FILE")]
    pub controllers_key: Option<PathBuf>,
    /// CA bundle (PEM) that signs their serving certificates (--tls-cert-file). Without it
    /// only loopback URLs are scraped, their certificates unverified (by default they serve
    /// one they signed themselves).
    #[arg(long, global = true, value_name = "FILE")]
    pub controllers_cacert: Option<PathBuf>,
    /// Resources regscope's own informers list and watch through the apiserver to measure
    /// informer lag: names (pods, nodes, leases, events, deployments, a CRD's plural...),
    /// version/resource (v1/pods) or group/version/resource (coordination.k8s.io/v1/leases),
    /// comma separated; `none` disables them.
    #[arg(
        long,
        global = true,
        value_delimiter = ',',
        default_value = "pods,nodes,leases,events",
        value_name = "LIST"
    )]
    pub informers: Vec<String>,
    /// `--root`, for kubeadm's admin.conf (see [`crate::node`]).
    #[arg(skip)]
    pub node_root: Option<PathBuf>,
    /// kube-apiserver's storage flags found on the node (see [`crate::node`]).
    #[arg(skip)]
    pub node_apiserver_flags: Option<crate::model::ApiserverFlags>,
    /// kube-apiserver's other etcd clusters found on the node: (resources, client URLs),
    /// one entry per set of URLs (see [`ConnArgs::other_clusters`]).
    #[arg(skip)]
    pub node_other_clusters: Vec<(String, Vec<String>)>,
    /// kube-controller-manager's and kube-scheduler's metrics URLs found on the node.
    #[arg(skip)]
    pub node_controllers: Vec<(crate::model::ScrapeTarget, String)>,
}

impl Default for MetricsArgs {
    fn default() -> Self {
        Self {
            kubeconfig: None,
            context: None,
            apiserver_metrics_url: None,
            apiserver_token_file: None,
            apiserver_cert: None,
            apiserver_key: None,
            apiserver_cacert: None,
            apiserver_insecure_skip_tls_verify: false,
            etcd_metrics_url: None,
            scrape_interval: crate::source::scrape::DEFAULT_SCRAPE_INTERVAL,
            scrape_timeout: None,
            apiserver_metrics_file: Vec::new(),
            etcd_metrics_file: Vec::new(),
            informers: crate::source::informer::DEFAULT_INFORMERS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            node_root: None,
            node_apiserver_flags: None,
            node_other_clusters: Vec::new(),
            controller_manager_metrics_url: None,
            scheduler_metrics_url: None,
            controller_manager_metrics_file: Vec::new(),
            scheduler_metrics_file: Vec::new(),
            controllers_token_file: None,
            controllers_cert: None,
            controllers_key: None,
            controllers_cacert: None,
            node_controllers: Vec::new(),
        }
    }
}

impl MetricsArgs {
    /// Resolves the flags against the real environment (`$KUBECONFIG`, `$HOME`, kubeadm's
    /// admin.conf). An error (one line) means exit status 2.
    pub fn scrape_config(&self) -> Result<crate::source::ScrapeConfig, String> {
        let mut env = crate::source::kubeconfig::DiscoveryEnv::from_process();
        if let Some(root) = &self.node_root {
            env.kubeadm_admin = crate::node::under(
                root,
                std::path::Path::new(crate::source::kubeconfig::KUBEADM_ADMIN_CONF),
            );
        }
        self.scrape_config_with(&env, &crate::source::kubeconfig::probe_file)
    }

    /// As [`MetricsArgs::scrape_config`] with the environment and file probe given (tests).
    pub fn scrape_config_with(
        &self,
        env: &crate::source::kubeconfig::DiscoveryEnv,
        probe: &dyn Fn(&std::path::Path) -> crate::source::kubeconfig::Probe,
    ) -> Result<crate::source::ScrapeConfig, String> {
        use crate::source::kubeconfig::{discover_kubeconfig, Probe};
        use crate::source::scrape::default_timeout;
        use crate::source::EtcdMetricsFrom;
        // Below a second an apiserver's /metrics (megabytes, rendered per request) would be
        // hammered, and `1ms` is more likely a typo for `1m` than a wish.
        if self.scrape_interval < std::time::Duration::from_secs(1) {
            return Err(format!(
                "--scrape-interval must be at least 1s (got {})",
                humantime::format_duration(self.scrape_interval)
            ));
        }
        if self.scrape_timeout.is_some_and(|t| t.is_zero()) {
            return Err("--scrape-timeout must be more than 0".into());
        }
        let informers = crate::source::informer::parse_informer_list(&self.informers)?;
        if self.apiserver_metrics_url.is_none() {
            let stray = [
                (
                    "--apiserver-token-file",
                    self.apiserver_token_file.is_some(),
                ),
                ("--apiserver-cert", self.apiserver_cert.is_some()),
                ("--apiserver-key", self.apiserver_key.is_some()),
                ("--apiserver-cacert", self.apiserver_cacert.is_some()),
                (
                    "--apiserver-insecure-skip-tls-verify",
                    self.apiserver_insecure_skip_tls_verify,
                ),
            ];
            if let Some((flag, _)) = stray.iter().find(|(_, set)| *set) {
                return Err(format!(
                    "{flag} applies to --apiserver-metrics-url (a kubeconfig carries its own credentials)"
                ));
            }
        } else if self.apiserver_cert.is_some() != self.apiserver_key.is_some() {
            return Err("--apiserver-cert and --apiserver-key must be given together".into());
        }
        if self.controllers_cert.is_some() != self.controllers_key.is_some() {
            return Err("--controllers-cert and --controllers-key must be given together".into());
        }
        if let Some(k) = &self.kubeconfig {
            if probe(k) != Probe::Readable {
                let why = std::fs::File::open(k)
                    .err()
                    .map_or("not a readable file".to_string(), |e| e.to_string());
                return Err(format!("cannot read --kubeconfig {}: {why}", k.display()));
            }
        }
        // With metrics files (offline: a postmortem or a test) no kubeconfig is looked for;
        // an explicit --kubeconfig is still used (for informers).
        let files = !self.apiserver_metrics_file.is_empty() || !self.etcd_metrics_file.is_empty();
        let (kubeconfig, notes) = if files && self.kubeconfig.is_none() {
            (None, Vec::new())
        } else {
            discover_kubeconfig(self.kubeconfig.as_deref(), env, probe)
        };
        let interval = self.scrape_interval;
        Ok(crate::source::ScrapeConfig {
            apiserver: crate::source::ApiserverAccess {
                kubeconfig,
                context: self.context.clone(),
                metrics_url: self.apiserver_metrics_url.clone(),
                auth: crate::source::HttpAuth {
                    token_file: self.apiserver_token_file.clone(),
                    cert: self.apiserver_cert.clone(),
                    key: self.apiserver_key.clone(),
                    cacert: self.apiserver_cacert.clone(),
                    insecure: self.apiserver_insecure_skip_tls_verify,
                },
            },
            etcd: match (&self.etcd_metrics_url, self.etcd_metrics_file.is_empty()) {
                (Some(u), _) => EtcdMetricsFrom::Url(u.clone()),
                (None, false) => EtcdMetricsFrom::Off,
                (None, true) => EtcdMetricsFrom::Endpoint,
            },
            interval,
            timeout: self.scrape_timeout.unwrap_or(default_timeout(interval)),
            apiserver_files: self.apiserver_metrics_file.clone(),
            etcd_files: self.etcd_metrics_file.clone(),
            informers,
            notes,
            apiserver_flags: self.node_apiserver_flags.clone(),
            other_clusters: Vec::new(),
            controllers: self.controllers(),
            controllers_auth: crate::source::HttpAuth {
                token_file: self.controllers_token_file.clone(),
                cert: self.controllers_cert.clone(),
                key: self.controllers_key.clone(),
                cacert: self.controllers_cacert.clone(),
                insecure: false,
            },
        })
    }

    /// kube-controller-manager's and kube-scheduler's scrapes: files, else the URL given,
    /// else the one found on the node (none with metrics files of other targets only: an
    /// offline snapshot reads what it was given).
    fn controllers(&self) -> Vec<crate::source::controllers::ControllerScrape> {
        use crate::model::ScrapeTarget;
        let offline = !self.apiserver_metrics_file.is_empty() || !self.etcd_metrics_file.is_empty();
        [
            (
                ScrapeTarget::ControllerManager,
                &self.controller_manager_metrics_url,
                &self.controller_manager_metrics_file,
            ),
            (
                ScrapeTarget::Scheduler,
                &self.scheduler_metrics_url,
                &self.scheduler_metrics_file,
            ),
        ]
        .into_iter()
        .filter_map(|(target, url, files)| {
            let found = self
                .node_controllers
                .iter()
                .find(|(t, _)| *t == target)
                .map(|(_, u)| u.clone())
                .filter(|_| !offline);
            let scrape = crate::source::controllers::ControllerScrape {
                target,
                discovered: url.is_none() && found.is_some(),
                url: url.clone().or(found),
                files: files.clone(),
            };
            (scrape.url.is_some() || !scrape.files.is_empty()).then_some(scrape)
        })
        .collect()
    }
}

impl ConnArgs {
    /// Takes each flag that was given on the command line at the root (`root_m`) but not on
    /// the subcommand (`sub_m`) from `root`: before connection flags stopped being global,
    /// `regscope --endpoints X snapshot` worked, and it still should.
    pub(super) fn inherit(
        &mut self,
        root: &ConnArgs,
        root_m: &clap::ArgMatches,
        sub_m: &clap::ArgMatches,
    ) {
        use clap::parser::ValueSource::CommandLine;
        let take = |id: &str| {
            root_m.value_source(id) == Some(CommandLine)
                && sub_m.value_source(id) != Some(CommandLine)
        };
        if take("endpoints") {
            self.endpoints = root.endpoints.clone();
        }
        if take("cacert") {
            self.cacert = root.cacert.clone();
        }
        if take("cert") {
            self.cert = root.cert.clone();
        }
        if take("key") {
            self.key = root.key.clone();
        }
        if take("user") {
            self.user = root.user.clone();
        }
        if take("password") {
            self.password = root.password.clone();
        }
        if take("prefix") {
            self.prefix = root.prefix.clone();
        }
        if take("page_limit") {
            self.page_limit = root.page_limit;
        }
        if take("list_concurrency") {
            self.list_concurrency = root.list_concurrency;
        }
        if take("history_budget") {
            self.history_budget = root.history_budget;
        }
        if take("memory_limit") {
            self.memory_limit = root.memory_limit;
        }
    }

    /// With `--user NAME` and no password given (neither in `--user NAME:PASSWORD` nor
    /// `--password`/`ETCDCTL_PASSWORD`), asks for it on the terminal without echo, as
    /// etcdctl does. Without a terminal it asks nothing (etcd then refuses the user, and
    /// the error says so). Errors: the terminal could not be read.
    pub fn prompt_password(&mut self) -> std::io::Result<()> {
        use std::io::IsTerminal;
        let Some(user) = &self.user else {
            return Ok(());
        };
        if user.contains(':') || self.password.is_some() || !std::io::stdin().is_terminal() {
            return Ok(());
        }
        self.password = Some(rpassword::prompt_password(format!(
            "etcd password for {user}: "
        ))?);
        Ok(())
    }

    /// Fills what flags and `ETCDCTL_*` left unset from what the node runs, field by
    /// field: the endpoints (every member of the apiserver's `--etcd-servers`), the CA,
    /// the client certificate and key (as a pair: a `--cert` given keeps its own key), and
    /// the apiserver's `--etcd-prefix` unless `--prefix` was given. So `--endpoints
    /// https://<another member>:2379` still uses the node's certificates. Returns a line
    /// for each value taken, for `snapshot`'s stderr.
    pub fn apply_discovery(&mut self, d: &crate::node::Discovery) -> Vec<String> {
        let mut notes = Vec::new();
        let layout = d.layout.map_or("node", |l| l.name());
        if let Some(etcd) = &d.etcd {
            if self.endpoints.iter().all(|e| e.trim().is_empty()) {
                self.endpoints = etcd.endpoints.clone();
                notes.push(format!(
                    "etcd {} from the {layout} node's files",
                    etcd.endpoints.join(",")
                ));
            }
            let mut taken = Vec::new();
            if self.cacert.is_none() && etcd.cacert.is_some() {
                self.cacert = etcd.cacert.clone();
                taken.push("CA");
            }
            if self.cert.is_none() && self.key.is_none() && etcd.cert.is_some() {
                self.cert = etcd.cert.clone();
                self.key = etcd.key.clone();
                taken.push("client certificate and key");
            }
            if !taken.is_empty() {
                notes.push(format!(
                    "etcd {} from the {layout} node's files",
                    taken.join(", ")
                ));
            }
        }
        if let (false, Some(p)) = (self.prefix_given, &d.prefix) {
            self.prefix = p.clone();
            notes.push(format!("prefix {p} from kube-apiserver --etcd-prefix"));
        }
        notes
    }

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

    /// The prefix without trailing slash and with a leading one, as bytes: `registry` is
    /// `/registry`, as kube-apiserver joins its `--etcd-prefix` onto `/` itself.
    pub fn prefix_bytes(&self) -> Vec<u8> {
        super::parse::normal_prefix(&self.prefix)
    }

    /// The session's header for these flags: `title` for the console's header, the
    /// endpoints, prefix and history budget; scrape targets and the start time are the
    /// caller's to fill.
    pub fn session_info(&self, title: String) -> crate::model::SessionInfo {
        crate::model::SessionInfo {
            title,
            endpoints: self.etcd_options().endpoints,
            prefix: String::from_utf8_lossy(&self.prefix_bytes()).into_owned(),
            history_budget: self.history_budget as u64,
            started_at: std::time::SystemTime::now(),
            ..Default::default()
        }
    }

    /// Watchers of kube-apiserver's other etcd clusters (`(resources, client URLs)` as
    /// found on the node), reached with this connection's TLS files and credentials as
    /// kube-apiserver reaches them with its one set, under the same prefix.
    pub fn other_clusters(
        &self,
        found: &[(String, Vec<String>)],
    ) -> Vec<crate::source::OtherClusterSource> {
        let sync = self.sync_options();
        found
            .iter()
            .map(|(resources, endpoints)| crate::source::OtherClusterSource {
                resources: resources.clone(),
                // Bare host:port gets the scheme of the TLS files, as `doctor` checks it.
                etcd: EtcdOptions {
                    endpoints: endpoints.clone(),
                    ..self.etcd_options()
                }
                .with_defaults(),
                prefix: self.prefix_bytes(),
                request_timeout: sync.request_timeout,
                status_interval: sync.status_interval,
                backoff_max: sync.backoff_max,
            })
            .collect()
    }

    pub fn sync_options(&self) -> SyncOptions {
        SyncOptions {
            prefix: self.prefix_bytes(),
            page_limit: self.page_limit.max(1),
            list_concurrency: usize::from(self.list_concurrency.max(1)),
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
