//! The exporter's HTTP(S) server: `/metrics`, `/healthz` and `/`.
//!
//! The session lives in one loop (`cli/serve.rs`, `cli/record.rs`) that owns it; the server
//! never touches it. A scrape sends a [`Ask`] down a bounded channel and the loop answers
//! between two batches of observations with a [`Reading`] (the derived-signal table read
//! at the session's clock, [`crate::derive::signals::read`]); the text is rendered here, off
//! the loop. When the loop does not answer within [`ANSWER_WITHIN`] (a long batch), the
//! scrape is served from the last reading and says so in a comment, so a scrape neither
//! waits on the session nor makes it wait.
//!
//! TLS (rustls, the ring provider the rest of regscope uses) with an optional client CA:
//! with one, a client without a certificate signed by it is refused in the handshake.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tokio::sync::{mpsc, oneshot};

use super::exposition::{families, render, Extras, Format, WriterSeries};
use crate::derive::signals::Readings;

/// How long a scrape waits for the session loop before serving its last reading.
pub const ANSWER_WITHIN: Duration = Duration::from_millis(500);

/// One reading of the session for the exporter.
#[derive(Clone, Debug, Default)]
pub struct Reading {
    pub readings: Readings,
    pub extras: Extras,
    /// When the loop read it (for the stale comment).
    pub read_at: Option<Instant>,
}

/// What the server asks the session loop.
pub enum Ask {
    /// A reading of the signal table now.
    Reading(oneshot::Sender<Reading>),
    /// Only whether the loop is answering (`/healthz`).
    Ping(oneshot::Sender<()>),
}

/// Where and how to serve.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The address to listen on (loopback unless the user names another).
    pub listen: SocketAddr,
    /// Certificate chain and private key (PEM) for HTTPS; `None`: plain HTTP.
    pub tls: Option<TlsFiles>,
    /// N of [`WriterSeries`].
    pub writer_series: usize,
    /// What the session watches, one line for `/` (`etcd https://10.0.0.1:2379 /registry`).
    pub watching: String,
}

/// PEM files of the HTTPS server.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Clients must present a certificate signed by one of these CAs.
    pub client_ca: Option<PathBuf>,
}

/// Errors that stop the server from starting.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("{path}: {what}")]
    Tls { path: PathBuf, what: String },
}

/// A running server; dropping it stops it.
pub struct Server {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// The address it listens on (with the port chosen when `:0` was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Shared {
    ask: mpsc::Sender<Ask>,
    /// The newest reading, shared with the scrapes that serve it (never copied).
    last: Mutex<Arc<Reading>>,
    writers: Mutex<WriterSeries>,
    opts: ServeOptions,
    scheme: &'static str,
}

/// Binds `opts.listen` and serves until dropped; `ask` reaches the session loop.
pub async fn start(opts: ServeOptions, ask: mpsc::Sender<Ask>) -> Result<Server, ServeError> {
    let tls = opts.tls.as_ref().map(tls_config).transpose()?;
    let listener = tokio::net::TcpListener::bind(opts.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: opts.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: opts.listen,
        source,
    })?;
    let shared = Arc::new(Shared {
        ask,
        last: Mutex::new(Arc::default()),
        writers: Mutex::new(WriterSeries::new(opts.writer_series)),
        scheme: if tls.is_some() { "https" } else { "http" },
        opts,
    });
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/", get(index))
        .with_state(shared);
    let task = match tls {
        None => tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        }),
        Some(cfg) => tokio::spawn(async move {
            let _ = axum::serve(TlsListener::new(listener, cfg), app).await;
        }),
    };
    Ok(Server { addr, task })
}

async fn metrics(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let format = Format::negotiate(headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()));
    let (tx, rx) = oneshot::channel();
    let fresh = match s.ask.try_send(Ask::Reading(tx)) {
        Ok(()) => tokio::time::timeout(ANSWER_WITHIN, rx)
            .await
            .ok()
            .and_then(Result::ok),
        Err(_) => None,
    };
    let reading = match fresh {
        Some(r) => {
            let r = Arc::new(r);
            *s.last.lock().unwrap_or_else(|e| e.into_inner()) = r.clone();
            r
        }
        None => s.last.lock().unwrap_or_else(|e| e.into_inner()).clone(),
    };
    let fams = {
        let mut w = s.writers.lock().unwrap_or_else(|e| e.into_inner());
        families(&reading.readings, &mut w, &reading.extras)
    };
    let mut body = String::new();
    if format == Format::Text {
        match reading.read_at {
            Some(t) if t.elapsed() > ANSWER_WITHIN => body.push_str(&format!(
                "# regscope: the session is busy; these values were read {:.1} s ago\n",
                t.elapsed().as_secs_f64()
            )),
            None => body.push_str("# regscope: the session has not answered yet\n"),
            _ => {}
        }
    }
    body.push_str(&render(&fams, format));
    ([(header::CONTENT_TYPE, format.content_type())], body).into_response()
}

async fn healthz(State(s): State<Arc<Shared>>) -> Response {
    let (tx, rx) = oneshot::channel();
    let answered = s.ask.try_send(Ask::Ping(tx)).is_ok()
        && matches!(
            tokio::time::timeout(Duration::from_secs(2), rx).await,
            Ok(Ok(()))
        );
    if answered {
        (StatusCode::OK, "ok: the session is running\n").into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ok: the session did not answer within 2 s\n",
        )
            .into_response()
    }
}

async fn index(State(s): State<Arc<Shared>>) -> Response {
    let page = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>regscope exporter</title></head><body>\
<h1>regscope {}</h1><p>Watching {}.</p><ul>\
<li><a href=\"/metrics\">/metrics</a>: the derived signals (Prometheus text format 0.0.4, or OpenMetrics 1.0 when asked), every family prefixed <code>regscope_</code>; at most {} writers have their own series</li>\
<li><a href=\"/healthz\">/healthz</a>: 200 while the session answers, 503 when it does not</li>\
</ul><p>Served over {} on {}.</p></body></html>\n",
        env!("CARGO_PKG_VERSION"),
        html_escape(&s.opts.watching),
        s.opts.writer_series,
        s.scheme,
        s.opts.listen,
    );
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn tls_err(path: &Path, what: impl std::fmt::Display) -> ServeError {
    ServeError::Tls {
        path: path.to_path_buf(),
        what: what.to_string(),
    }
}

/// The rustls server configuration of `files`: HTTP/1.1, TLS 1.2 and 1.3.
fn tls_config(files: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, ServeError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| tls_err(&files.cert, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| tls_err(&files.cert, e))?;
    if certs.is_empty() {
        return Err(tls_err(&files.cert, "no certificate in this PEM file"));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| tls_err(&files.key, e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_err(&files.cert, e))?;
    let builder = match &files.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in CertificateDer::pem_file_iter(ca).map_err(|e| tls_err(ca, e))? {
                roots
                    .add(c.map_err(|e| tls_err(ca, e))?)
                    .map_err(|e| tls_err(ca, e))?;
            }
            if roots.is_empty() {
                return Err(tls_err(ca, "no CA certificate in this PEM file"));
            }
            let verifier =
                rustls::server::WebPkiClientVerifier::builder_with_provider(roots.into(), provider)
                    .build()
                    .map_err(|e| tls_err(ca, e))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut cfg = builder
        .with_single_cert(certs, key)
        .map_err(|e| tls_err(&files.key, e))?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// Accepts TCP connections and hands on those whose TLS handshake completed; handshakes
/// run in their own tasks (at most 10 s each), so a slow or silent client holds nobody.
struct TlsListener {
    addr: SocketAddr,
    done: mpsc::Receiver<(
        tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
        SocketAddr,
    )>,
    _accept: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    fn new(listener: tokio::net::TcpListener, cfg: Arc<rustls::ServerConfig>) -> Self {
        let addr = listener
            .local_addr()
            .unwrap_or_else(|_| ([0, 0, 0, 0], 0).into());
        let acceptor = tokio_rustls::TlsAcceptor::from(cfg);
        let (tx, done) = mpsc::channel(16);
        let accept = tokio::spawn(async move {
            loop {
                let (tcp, peer) = match listener.accept().await {
                    Ok(c) => c,
                    Err(_) => {
                        // Out of file descriptors and the like: wait, as axum's own
                        // listener does.
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let acceptor = acceptor.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    let hs = tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp));
                    if let Ok(Ok(tls)) = hs.await {
                        let _ = tx.send((tls, peer)).await;
                    }
                });
            }
        });
        TlsListener {
            addr,
            done,
            _accept: accept,
        }
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self._accept.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.done.recv().await {
            Some(c) => c,
            // The accept task ended (only when aborted): never hand on another.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}
