//! The live sources of a session, started by one call: the etcd list+watch, the `/metrics`
//! scrapers, the informers, the metrics files given on the command line, and the clock
//! tick. Everything they learn reaches the caller as [`Stamped`] observations on one
//! channel; replay substitutes a recording for exactly this call (see `crate::record`).
//!
//! Dependencies point one way: this module uses [`super::etcd`], [`super::scrape`],
//! [`super::kubeconfig`] and [`super::informer`]; none of them uses it.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::connect::EtcdOptions;
use super::controllers::ControllerScrape;
use super::etcd::EtcdSource;
use super::kubeconfig::ApiserverAccess;
use super::other_cluster::OtherClusterSource;
use super::scrape::{
    default_timeout, file_scrapes_spaced, spawn_scraper, ScrapeFrom, SetupError,
    DEFAULT_SCRAPE_INTERVAL,
};
use crate::model::{ApiserverFlags, Observation, ScrapeTarget, Stamped};

/// Where etcd's `/metrics` is scraped from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EtcdMetricsFrom {
    /// `<etcd endpoint>/metrics` with the etcd connection's certificates (default): the first
    /// endpoint given, then the next after a failed scrape.
    Endpoint,
    /// `--etcd-metrics-url`.
    Url(String),
    /// Not scraped live (`--etcd-metrics-file` given: files replace the live scrape).
    Off,
}

/// The metrics and apiserver side of a session, resolved from the flags
/// ([`crate::cli::args::MetricsArgs::scrape_config`]).
#[derive(Clone, Debug)]
pub struct ScrapeConfig {
    pub apiserver: ApiserverAccess,
    pub etcd: EtcdMetricsFrom,
    /// `--scrape-interval`.
    pub interval: Duration,
    /// `--scrape-timeout`, default `min(interval, 10 s)`.
    pub timeout: Duration,
    /// `--apiserver-metrics-file`, in order; non-empty replaces the live apiserver scrape.
    pub apiserver_files: Vec<PathBuf>,
    /// `--etcd-metrics-file`, in order; non-empty replaces the live etcd scrape.
    pub etcd_files: Vec<PathBuf>,
    /// `--informers`: resource names or `group/version/resource`; empty = no informers.
    pub informers: Vec<String>,
    /// What discovery noticed (unreadable candidates), for the event log.
    pub notes: Vec<String>,
    /// kube-apiserver's storage flags as found on the node: sent once, first.
    pub apiserver_flags: Option<ApiserverFlags>,
    /// kube-apiserver's other etcd clusters (`--etcd-servers-overrides`), each watched
    /// beside the main one.
    pub other_clusters: Vec<OtherClusterSource>,
    /// kube-controller-manager's and kube-scheduler's `/metrics`, when configured or found.
    pub controllers: Vec<ControllerScrape>,
    /// `--controllers-token-file`, `--controllers-cert`/`-key`, `--controllers-cacert`.
    pub controllers_auth: super::scrape::HttpAuth,
}

impl Default for ScrapeConfig {
    fn default() -> Self {
        Self {
            apiserver: ApiserverAccess::default(),
            etcd: EtcdMetricsFrom::Endpoint,
            interval: DEFAULT_SCRAPE_INTERVAL,
            timeout: default_timeout(DEFAULT_SCRAPE_INTERVAL),
            apiserver_files: Vec::new(),
            etcd_files: Vec::new(),
            informers: super::informer::DEFAULT_INFORMERS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            notes: Vec::new(),
            apiserver_flags: None,
            other_clusters: Vec::new(),
            controllers: Vec::new(),
            controllers_auth: Default::default(),
        }
    }
}

/// The live tasks started by [`ScrapeConfig::start`]; dropping this aborts them.
#[derive(Debug, Default)]
pub struct ScrapeTasks {
    pub handles: Vec<JoinHandle<()>>,
    /// The apiserver's URL when the apiserver side is live.
    pub apiserver: Option<String>,
    /// The targets scraped live and from where (for `MetricStore::set_configured`).
    pub configured: Vec<(ScrapeTarget, String)>,
    /// Everything worth telling the user (also sent as `Observation::Note`s).
    pub notes: Vec<String>,
}

impl ScrapeTasks {
    pub fn abort_all(&self) {
        for h in &self.handles {
            h.abort();
        }
    }
}

impl Drop for ScrapeTasks {
    fn drop(&mut self) {
        self.abort_all();
    }
}

impl ScrapeConfig {
    /// True when any metrics file was given (a postmortem or a test).
    pub fn has_files(&self) -> bool {
        !self.apiserver_files.is_empty()
            || !self.etcd_files.is_empty()
            || self.controllers.iter().any(|c| !c.files.is_empty())
    }

    /// The observations of every metrics file, apiserver's then etcd's, each target's files
    /// spaced by `interval` and ending now (see [`file_scrapes_spaced`]), sorted by time.
    pub fn file_observations(&self) -> Result<Vec<Stamped>, SetupError> {
        let end = SystemTime::now();
        let mut out = file_scrapes_spaced(
            ScrapeTarget::Apiserver,
            &self.apiserver_files,
            self.interval,
            end,
        )?;
        out.extend(file_scrapes_spaced(
            ScrapeTarget::Etcd,
            &self.etcd_files,
            self.interval,
            end,
        )?);
        for c in &self.controllers {
            out.extend(file_scrapes_spaced(c.target, &c.files, self.interval, end)?);
        }
        out.sort_by_key(|s| s.at);
        Ok(out)
    }

    /// Starts the live side: the apiserver scraper and informers (when the apiserver is
    /// configured and its metrics are not replaced by files) and the etcd scraper (unless
    /// replaced by files or off). `etcd` is the etcd connection in use (its endpoints
    /// and certificates). Fails only when the apiserver was named explicitly
    /// (`--kubeconfig`, `--apiserver-metrics-url`) and cannot be used; anything else
    /// becomes a note, sent on `tx` as `Observation::Note` and returned.
    pub async fn start(
        &self,
        etcd: &EtcdOptions,
        tx: mpsc::Sender<Stamped>,
    ) -> Result<ScrapeTasks, String> {
        let mut tasks = ScrapeTasks::default();
        tasks.notes.clone_from(&self.notes);
        match self.apiserver.connect().await {
            Ok(Some(clients)) => {
                tasks.apiserver = Some(clients.server.clone());
                if self.apiserver_files.is_empty() {
                    tasks.configured.push((
                        ScrapeTarget::Apiserver,
                        clients.metrics.source().to_string(),
                    ));
                    tasks.handles.push(spawn_scraper(
                        ScrapeTarget::Apiserver,
                        clients.metrics,
                        self.interval,
                        self.timeout,
                        tx.clone(),
                    ));
                }
                if !self.informers.is_empty() {
                    tasks.handles.push(super::informer::spawn_informers_for(
                        clients.kube,
                        self.informers.clone(),
                        tx.clone(),
                    ));
                }
            }
            Ok(None) => {}
            Err(e) if self.apiserver.is_explicit() => return Err(e),
            Err(e) => tasks.notes.push(format!("apiserver side off: {e}")),
        }
        self.start_controllers(&mut tasks, &tx).await?;
        let etcd_from = match &self.etcd {
            EtcdMetricsFrom::Off => None,
            EtcdMetricsFrom::Endpoint => Some(ScrapeFrom::etcd(etcd)),
            EtcdMetricsFrom::Url(u) => Some(ScrapeFrom::etcd_url(u, etcd)),
        };
        match etcd_from {
            Some(Ok(how)) => {
                tasks
                    .configured
                    .push((ScrapeTarget::Etcd, how.source().to_string()));
                tasks.handles.push(spawn_scraper(
                    ScrapeTarget::Etcd,
                    how,
                    self.interval,
                    self.timeout,
                    tx.clone(),
                ));
            }
            Some(Err(e)) => tasks.notes.push(format!("etcd metrics not scraped: {e}")),
            None => {}
        }
        for n in &tasks.notes {
            let _ = tx.try_send(Stamped::now(Observation::Note(n.clone())));
        }
        Ok(tasks)
    }
}

impl ScrapeConfig {
    /// Starts the scrapers of kube-controller-manager and kube-scheduler that have a URL and
    /// no files, with [`ScrapeConfig::controllers_auth`] or the apiserver's kubeconfig
    /// credentials. A URL given by flag that cannot be set up is an error; one found on the
    /// node becomes a note.
    async fn start_controllers(
        &self,
        tasks: &mut ScrapeTasks,
        tx: &mpsc::Sender<Stamped>,
    ) -> Result<(), String> {
        let live: Vec<&ControllerScrape> = self
            .controllers
            .iter()
            .filter(|c| c.files.is_empty() && c.url.is_some())
            .collect();
        if live.is_empty() {
            return Ok(());
        }
        let auth = &self.controllers_auth;
        let kube_cfg = if auth.token_file.is_some() || auth.cert.is_some() {
            None
        } else {
            self.apiserver.load_config().await.ok().flatten()
        };
        for c in live {
            let url = c.url.as_deref().unwrap_or_default();
            match super::controllers::scrape_from(c.target, url, auth, kube_cfg.as_ref()) {
                Ok((how, described)) => {
                    tasks.configured.push((c.target, described));
                    tasks.handles.push(spawn_scraper(
                        c.target,
                        how,
                        self.interval,
                        self.timeout,
                        tx.clone(),
                    ));
                }
                Err(e) if c.discovered => tasks
                    .notes
                    .push(format!("{} metrics not scraped: {e}", c.target.component())),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Everything [`start`] started; dropping it stops every task.
#[derive(Debug, Default)]
pub struct LiveSources {
    pub tasks: ScrapeTasks,
    /// The etcd list+watch and the clock.
    handles: Vec<JoinHandle<()>>,
}

impl LiveSources {
    /// The scrape targets configured (live or from files) and from where, for the session
    /// header.
    pub fn configured(&self) -> &[(ScrapeTarget, String)] {
        &self.tasks.configured
    }
}

impl Drop for LiveSources {
    fn drop(&mut self) {
        for h in &self.handles {
            h.abort();
        }
    }
}

/// Interval of [`Observation::Tick`]: the session clock moves at least this often.
pub const TICK: Duration = Duration::from_secs(1);

/// Starts every live source of a session onto `tx`: kube-apiserver's storage flags and
/// metrics files first (successive files are successive scrapes, ending now), then the
/// apiserver scraper and informers, the etcd scraper, the etcd list+watch (`etcd`, unless
/// `None`: metrics only), the watchers of kube-apiserver's other etcd clusters and a
/// [`Observation::Tick`] every [`TICK`].
///
/// Errors: an unreadable metrics file, or an apiserver named explicitly (`--kubeconfig`,
/// `--apiserver-metrics-url`) that cannot be used — one line each, for stderr.
pub async fn start(
    etcd: Option<EtcdSource>,
    scrape: &ScrapeConfig,
    tx: mpsc::Sender<Stamped>,
) -> Result<LiveSources, String> {
    let mut scfg = scrape.clone();
    let mut files = scfg.file_observations().map_err(|e| e.to_string())?;
    if let Some(f) = scfg.apiserver_flags.take() {
        // Stamped no later than the metrics files' first scrape (they end now).
        let at = files.first().map_or_else(SystemTime::now, |st| st.at);
        files.insert(
            0,
            Stamped {
                at,
                obs: Observation::ApiserverFlags(f),
            },
        );
    }
    if !scfg.etcd_files.is_empty() || etcd.is_none() {
        scfg.etcd = EtcdMetricsFrom::Off;
    }
    let opts = etcd.as_ref().map(|e| e.etcd.clone()).unwrap_or_default();
    let mut tasks = scfg.start(&opts, tx.clone()).await?;
    for (t, paths) in [
        (ScrapeTarget::Apiserver, &scfg.apiserver_files),
        (ScrapeTarget::Etcd, &scfg.etcd_files),
    ] {
        if let Some(p) = paths.last() {
            tasks.configured.push((t, p.display().to_string()));
        }
    }
    let mut handles = Vec::new();
    let file_tx = tx.clone();
    handles.push(tokio::spawn(async move {
        for st in files {
            if file_tx.send(st).await.is_err() {
                break;
            }
        }
    }));
    if let Some(source) = etcd {
        handles.push(source.spawn(tx.clone()));
    }
    for other in scfg.other_clusters.drain(..) {
        handles.push(other.spawn(tx.clone()));
    }
    handles.push(tokio::spawn(async move {
        let mut t = tokio::time::interval(TICK);
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            t.tick().await;
            if tx.send(Stamped::now(Observation::Tick)).await.is_err() {
                return;
            }
        }
    }));
    Ok(LiveSources { tasks, handles })
}
