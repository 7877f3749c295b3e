//! The server: starts the cacher and the HTTP endpoint over one shared state, and stops them.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::cacher::{install, load_all, progress_requests_ordered, run_cacher};
use super::config::DemoApiserverConfig;
use super::flow_control::Apf;
use super::http::{api_handler, healthz, livez, metrics_handler, readyz, version};
use super::kubeconfig::{io_err, write_kubeconfig};
use super::latency::StorageLatencies;
use super::state::Shared;
use crate::demo::etcd_server::{DemoError, PrivateEtcd};

/// The simulated kube-apiserver: an HTTP server on `127.0.0.1:<free port>` serving
/// `/metrics`, list, get and watch of the resources in a [`PrivateEtcd`] from its own watch
/// cache. It reads from etcd only. Dropping it aborts its tasks and removes its kubeconfig;
/// [`DemoApiserver::stop`] ends them cleanly.
pub struct DemoApiserver {
    addr: SocketAddr,
    /// Removed on drop, with the kubeconfig in it.
    _kubeconfig_dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    shared: Arc<Shared>,
    stop_tx: watch::Sender<bool>,
    server: Option<JoinHandle<()>>,
    cacher: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for DemoApiserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoApiserver")
            .field("addr", &self.addr)
            .field("kubeconfig", &self.kubeconfig)
            .field("config", &self.shared.cfg)
            .finish_non_exhaustive()
    }
}

impl DemoApiserver {
    /// Starts on `127.0.0.1:<free port>`; reads from the [`PrivateEtcd`] only (never writes).
    ///
    /// Lists every resource under `cfg.prefix` at one revision into the watch cache, starts
    /// the etcd watch that keeps it current, writes a kubeconfig for the URL and starts
    /// serving. Its own etcd reads are recorded in `latencies` (the same histograms the
    /// simulation records its writes in). Must be called inside a tokio runtime. Errors:
    /// connecting to etcd, the initial list, binding the port, writing the kubeconfig.
    pub async fn start(
        etcd: &PrivateEtcd,
        latencies: Arc<StorageLatencies>,
        cfg: DemoApiserverConfig,
    ) -> Result<DemoApiserver, DemoError> {
        let mut client = etcd.client().await?;
        let etcd_version = client.status().await?.version().to_string();
        let (stop_tx, stop_rx) = watch::channel(false);
        let (progress_tx, progress_rx) = mpsc::channel(1);
        let prefix = cfg.prefix.trim_end_matches('/').to_string();
        let shared = Arc::new(Shared {
            cfg,
            prefix,
            client,
            latencies,
            cache: Mutex::default(),
            changed: watch::channel(0).0,
            progress: progress_tx,
            progress_requests: progress_requests_ordered(&etcd_version),
            requests: Mutex::default(),
            apf: Arc::new(Apf::new()),
            slow_claimed: AtomicBool::new(false),
            stop: stop_rx,
        });
        let (rev, lists) = load_all(&shared).await?;
        install(&shared, rev, lists, true);
        let cacher = tokio::spawn(run_cacher(shared.clone(), progress_rx));

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| io_err("bind the demo apiserver port", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| io_err("bind the demo apiserver port", e))?;
        let url = format!("http://{addr}");
        let (kubeconfig_dir, kubeconfig) = write_kubeconfig(&url)?;

        let app = Router::new()
            .route("/metrics", get(metrics_handler))
            .route("/healthz", get(healthz))
            .route("/livez", get(livez))
            .route("/readyz", get(readyz))
            .route("/version", get(version))
            .fallback(api_handler)
            .with_state(shared.clone());
        let mut stop = stop_tx.subscribe();
        let server = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            if let Err(e) = axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
            {
                tracing::debug!("demo apiserver: {e}");
            }
        });
        Ok(DemoApiserver {
            addr,
            _kubeconfig_dir: kubeconfig_dir,
            kubeconfig,
            shared,
            stop_tx,
            server: Some(server),
            cacher: Some(cacher),
        })
    }

    /// The base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kubeconfig (mode 0600, in a temp dir removed on drop) whose current context
    /// `regscope-demo` points at [`DemoApiserver::url`] with a dummy bearer token; usable by
    /// the `kube` crate (`kube::Config::from_custom_kubeconfig`) over plain HTTP.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// The watch cache's current resourceVersion (the last etcd revision it has applied).
    pub fn cache_revision(&self) -> i64 {
        self.shared.cache().revision
    }

    /// The storage latency histograms this server serves (and records its reads in).
    pub fn latencies(&self) -> Arc<StorageLatencies> {
        self.shared.latencies.clone()
    }

    /// Stops serving: open watches end, the server and the cacher stop (waits at most 5 s).
    pub async fn stop(mut self) {
        let _ = self.stop_tx.send(true);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        for task in [self.server.take(), self.cacher.take()]
            .into_iter()
            .flatten()
        {
            let abort = task.abort_handle();
            if tokio::time::timeout_at(deadline, task).await.is_err() {
                abort.abort();
            }
        }
    }
}

impl Drop for DemoApiserver {
    fn drop(&mut self) {
        let _ = self.stop_tx.send(true);
        for task in [self.server.take(), self.cacher.take()]
            .into_iter()
            .flatten()
        {
            task.abort();
        }
    }
}
