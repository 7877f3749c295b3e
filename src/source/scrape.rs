//! Scrapers of `/metrics` endpoints (kube-apiserver, etcd) and their offline stand-in,
//! metrics files. Each attempt becomes exactly one [`Observation::Scrape`]: the body as
//! received on HTTP 200 (whatever it holds; parsing is the store's business) or a one-line
//! reason why there is none. Bodies stay [`Bytes`] from the socket to the store: a 3 MB
//! apiserver page is never copied into a `String`.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::connect::EtcdOptions;
use crate::model::{Bytes, Observation, ScrapeOutcome, ScrapeTarget, Stamped};

/// `--scrape-interval` default.
pub const DEFAULT_SCRAPE_INTERVAL: Duration = Duration::from_secs(5);
/// The longest default timeout of one scrape; the default is `min(interval, this)`.
pub const MAX_DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The `Accept` header sent: Prometheus text format (kube-apiserver and etcd serve it by
/// default; asking explicitly keeps protobuf and OpenMetrics negotiation out of the way).
pub const ACCEPT: &str = "text/plain;version=0.0.4;q=1,*/*;q=0.1";
/// Bytes of a non-200 body quoted in the error.
const ERROR_BODY_PREVIEW: usize = 80;

/// Largest `/metrics` body accepted (bytes). Real kube-apiservers serve 2–30 MB (the 1.34
/// capture in testdata: 3.4 MB); the store parses a body on the console's loop at about
/// 70–150 MB/s, so a runaway body must be refused, not parsed.
pub const MAX_BODY_BYTES: usize = 64 << 20;

/// Why a scraper could not be set up, or a metrics file not read: one line that names the
/// flag and the file. The underlying errors are part of the text, not a `source()` chain,
/// so the line reads the same however it is printed.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("cannot read {flag} {}: {error}", path.display())]
    Read {
        flag: &'static str,
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{flag} {}: not a PEM bundle: {error}", path.display())]
    NotPem {
        flag: &'static str,
        path: PathBuf,
        error: reqwest::Error,
    },
    #[error("{flag} {} holds no certificate", path.display())]
    NoCertificate { flag: &'static str, path: PathBuf },
    /// The client certificate and key do not make an identity.
    #[error("{cert_flag} {} / {key_flag} {}: {error}", cert.display(), key.display())]
    Identity {
        cert_flag: &'static str,
        cert: PathBuf,
        key_flag: &'static str,
        key: PathBuf,
        error: reqwest::Error,
    },
    #[error("{cert} and {key} must be given together")]
    CertWithoutKey {
        cert: &'static str,
        key: &'static str,
    },
    #[error("{flag} {} is empty", path.display())]
    EmptyToken { flag: &'static str, path: PathBuf },
    /// The HTTP client cannot be built from these settings (e.g. rustls refusing a key
    /// that is not the certificate's); the whole error chain, as reqwest's own Display
    /// says only "builder error".
    #[error("HTTP client: {}", error_detail(.0))]
    Client(reqwest::Error),
    #[error("no etcd endpoint")]
    NoEtcdEndpoint,
    #[error("{flag} {}: {}", path.display(), TooLarge(*bytes))]
    FileTooLarge {
        flag: &'static str,
        path: PathBuf,
        bytes: u64,
    },
}

/// Why one scrape attempt got no body; the text goes into [`ScrapeOutcome::Failed`].
#[derive(Debug, thiserror::Error)]
enum FetchError {
    /// The request could not be built or sent, or no response came: the error chain as one
    /// line ([`error_detail`]).
    #[error("{0}")]
    Request(String),
    #[error("HTTP {status}: reading the body failed: {detail}")]
    Body { status: u16, detail: String },
    #[error("{0}")]
    TooLarge(TooLarge),
    /// Any answer but 200, with [`error_body_preview`] of its body (empty: not shown).
    #[error("HTTP {status}{}", if preview.is_empty() { String::new() } else { format!(": {preview}") })]
    Status {
        status: http::StatusCode,
        preview: String,
    },
}

/// A body (announced or received) over [`MAX_BODY_BYTES`], in bytes.
#[derive(Debug, Clone, Copy)]
struct TooLarge(u64);

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "body of {} MiB is larger than the {} MiB accepted for /metrics",
            self.0 >> 20,
            MAX_BODY_BYTES >> 20
        )
    }
}

/// The default timeout of one scrape for an interval: `min(interval, 10 s)`.
pub fn default_timeout(interval: Duration) -> Duration {
    interval.min(MAX_DEFAULT_TIMEOUT)
}

/// Credentials for a plain-URL scrape (`--apiserver-metrics-url`): a bearer token file
/// and/or a client certificate, and the CA that signs the server's certificate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpAuth {
    /// A file holding a bearer token (e.g. a ServiceAccount token). Re-read at every scrape
    /// when possible, so rotated tokens are picked up.
    pub token_file: Option<PathBuf>,
    /// Client certificate (PEM); with `key`.
    pub cert: Option<PathBuf>,
    /// Client private key (PEM); with `cert`.
    pub key: Option<PathBuf>,
    /// CA bundle (PEM) that signs the server's certificate; the platform's roots otherwise.
    pub cacert: Option<PathBuf>,
    /// Skip verification of the server's certificate (kubectl's --insecure-skip-tls-verify).
    pub insecure: bool,
}

/// The flags an [`HttpAuth`] came from, for errors that name them.
#[derive(Clone, Copy, Debug)]
pub struct AuthFlags {
    pub token_file: &'static str,
    pub cert: &'static str,
    pub key: &'static str,
    pub cacert: &'static str,
}

impl AuthFlags {
    /// `--apiserver-metrics-url`'s credentials.
    pub const APISERVER: AuthFlags = AuthFlags {
        token_file: "--apiserver-token-file",
        cert: "--apiserver-cert",
        key: "--apiserver-key",
        cacert: "--apiserver-cacert",
    };
    /// The credentials for kube-controller-manager's and kube-scheduler's `/metrics`.
    pub const CONTROLLERS: AuthFlags = AuthFlags {
        token_file: "--controllers-token-file",
        cert: "--controllers-cert",
        key: "--controllers-key",
        cacert: "--controllers-cacert",
    };
}

/// How to fetch one `/metrics` page.
#[derive(Clone)]
pub enum ScrapeFrom {
    /// Through a kube client (kubeconfig: exec, token or certificate auth), `GET /metrics`.
    Kube {
        client: kube::Client,
        /// The full URL, for display.
        url: String,
    },
    /// A plain HTTP(S) GET with reqwest (`--apiserver-metrics-url`, `--etcd-metrics-url`, or
    /// `<etcd endpoint>/metrics` with the etcd connection's client certificates).
    Http {
        client: reqwest::Client,
        url: String,
        /// Bearer token: the file to re-read and the value last read from it.
        token: Option<(PathBuf, String)>,
        /// URLs to move on to, in turn, after a failed scrape: the `/metrics` of the other
        /// etcd members given in `--endpoints`, so that etcd's metrics keep coming from a
        /// member that is up after the first one fails.
        others: Vec<String>,
    },
}

impl std::fmt::Debug for ScrapeFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScrapeFrom::Kube { url, .. } => write!(f, "ScrapeFrom::Kube({url})"),
            ScrapeFrom::Http { url, token, .. } => write!(
                f,
                "ScrapeFrom::Http({url}{})",
                if token.is_some() {
                    ", bearer token"
                } else {
                    ""
                }
            ),
        }
    }
}

impl ScrapeFrom {
    /// `GET <server>/metrics` through a kube client; `server` is the cluster URL (display only).
    pub fn kube(client: kube::Client, server: &str) -> Self {
        ScrapeFrom::Kube {
            client,
            url: format!("{}/metrics", server.trim_end_matches('/')),
        }
    }

    /// A plain URL with optional bearer token, client certificate and CA. Fails (one line,
    /// naming the flag) when a file cannot be read or is not PEM.
    pub fn url(url: &str, auth: &HttpAuth) -> Result<Self, SetupError> {
        Self::url_with(url, auth, &AuthFlags::APISERVER)
    }

    /// As [`ScrapeFrom::url`], errors naming `flags` (the credentials of another target).
    pub fn url_with(url: &str, auth: &HttpAuth, flags: &AuthFlags) -> Result<Self, SetupError> {
        let mut b = base_builder();
        if let Some(ca) = &auth.cacert {
            let pem = read_flag_file(flags.cacert, ca)?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|error| {
                SetupError::NotPem {
                    flag: flags.cacert,
                    path: ca.clone(),
                    error,
                }
            })?;
            if certs.is_empty() {
                return Err(SetupError::NoCertificate {
                    flag: flags.cacert,
                    path: ca.clone(),
                });
            }
            b = b.tls_certs_only(certs);
        }
        match (&auth.cert, &auth.key) {
            (Some(c), Some(k)) => {
                b = b.identity(identity((flags.cert, c), (flags.key, k))?);
            }
            (None, None) => {}
            _ => {
                return Err(SetupError::CertWithoutKey {
                    cert: flags.cert,
                    key: flags.key,
                })
            }
        }
        if auth.insecure {
            b = b.tls_danger_accept_invalid_certs(true);
        }
        let token = match &auth.token_file {
            Some(p) => {
                let t = read_flag_file(flags.token_file, p)?;
                let t = String::from_utf8_lossy(&t).trim().to_string();
                if t.is_empty() {
                    return Err(SetupError::EmptyToken {
                        flag: flags.token_file,
                        path: p.clone(),
                    });
                }
                Some((p.clone(), t))
            }
            None => None,
        };
        let client = b.build().map_err(SetupError::Client)?;
        Ok(ScrapeFrom::Http {
            client,
            url: url.to_string(),
            token,
            others: Vec::new(),
        })
    }

    /// etcd's `/metrics` on its first client endpoint (etcd 3.4+ serves it there), with the
    /// etcd connection's CA and client certificate, as etcd serves them on its client URL (etcd 3.4+).
    pub fn etcd(opts: &EtcdOptions) -> Result<Self, SetupError> {
        // One client for all: the endpoints of the first one's scheme share its TLS setup.
        let mut urls = opts
            .endpoints
            .iter()
            .filter(|e| opts.client_url(std::slice::from_ref(e)).is_some())
            .map(|e| format!("{}/metrics", e.trim_end_matches('/')));
        let first = urls.next().ok_or(SetupError::NoEtcdEndpoint)?;
        let mut how = Self::etcd_url(&first, opts)?;
        if let ScrapeFrom::Http { others, .. } = &mut how {
            others.extend(urls);
        }
        Ok(how)
    }

    /// After a failed scrape: the next URL to try, when there are others (the first is
    /// tried again after the last). Returns whether the URL changed.
    pub fn next_url(&mut self) -> bool {
        match self {
            ScrapeFrom::Http { url, others, .. } if !others.is_empty() => {
                others.push(std::mem::take(url));
                *url = others.remove(0);
                true
            }
            _ => false,
        }
    }

    /// `--etcd-metrics-url`: any URL (e.g. etcd's `--listen-metrics-urls`), with the etcd
    /// connection's CA and client certificate when it is https.
    pub fn etcd_url(url: &str, opts: &EtcdOptions) -> Result<Self, SetupError> {
        let mut b = base_builder();
        if url.starts_with("https://") {
            if let Some(ca) = &opts.cacert {
                let pem = read_flag_file("--cacert", ca)?;
                let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|error| {
                    SetupError::NotPem {
                        flag: "--cacert",
                        path: ca.clone(),
                        error,
                    }
                })?;
                b = b.tls_certs_only(certs);
            }
            if let (Some(c), Some(k)) = (&opts.cert, &opts.key) {
                b = b.identity(identity(("--cert", c), ("--key", k))?);
            }
        }
        let client = b.build().map_err(SetupError::Client)?;
        Ok(ScrapeFrom::Http {
            client,
            url: url.to_string(),
            token: None,
            others: Vec::new(),
        })
    }

    /// The URL scraped, as shown in `ScrapeOutcome::*::source`.
    pub fn source(&self) -> &str {
        match self {
            ScrapeFrom::Kube { url, .. } | ScrapeFrom::Http { url, .. } => url,
        }
    }
}

fn base_builder() -> reqwest::ClientBuilder {
    // Timeouts are applied per attempt by `scrape_once`; connections are kept alive between
    // scrapes. No redirects: a metrics endpoint that redirects (to a login page) is an error.
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(1)
}

fn read_flag_file(flag: &'static str, p: &std::path::Path) -> Result<Vec<u8>, SetupError> {
    std::fs::read(p).map_err(|error| SetupError::Read {
        flag,
        path: p.to_path_buf(),
        error,
    })
}

/// A client identity from a PEM certificate and key file, each with the flag that named it.
fn identity(
    (cert_flag, cert): (&'static str, &std::path::Path),
    (key_flag, key): (&'static str, &std::path::Path),
) -> Result<reqwest::Identity, SetupError> {
    let mut pem = read_flag_file(cert_flag, cert)?;
    pem.push(b'\n');
    pem.extend(read_flag_file(key_flag, key)?);
    reqwest::Identity::from_pem(&pem).map_err(|error| SetupError::Identity {
        cert_flag,
        cert: cert.to_path_buf(),
        key_flag,
        key: key.to_path_buf(),
        error,
    })
}

/// Formats a duration for messages: `5s`, `500ms`, `1m 30s`.
fn human(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// Makes one attempt, bounded by `timeout` (connect, headers and body together).
pub async fn scrape_once(how: &ScrapeFrom, timeout: Duration) -> ScrapeOutcome {
    let source = how.source().to_string();
    let fut = async {
        match how {
            ScrapeFrom::Kube { client, .. } => fetch_kube(client).await,
            ScrapeFrom::Http {
                client, url, token, ..
            } => fetch_http(client, url, token).await,
        }
    };
    match tokio::time::timeout(timeout, fut).await {
        Ok(Ok(body)) => ScrapeOutcome::Body { source, body },
        Ok(Err(e)) => ScrapeOutcome::Failed {
            error: match tls_hint(&source, &e.to_string()) {
                Some(hint) => format!("GET {source}: {e} ({hint})"),
                None => format!("GET {source}: {e}"),
            },
            source,
        },
        Err(_) => ScrapeOutcome::Failed {
            error: format!("GET {source}: timed out after {}", human(timeout)),
            source,
        },
    }
}

/// What to do about a TLS failure, when the error says which.
fn tls_hint(url: &str, detail: &str) -> Option<&'static str> {
    if !url.starts_with("https://") {
        return None;
    }
    let d = detail.to_ascii_lowercase();
    if d.contains("invalidcontenttype") || d.contains("corrupt message") {
        Some("the server does not speak TLS there: try http://")
    } else if d.contains("unknownissuer") || d.contains("unknown issuer") {
        Some("the server's certificate is not signed by a trusted CA: pass its CA (--apiserver-cacert, or --cacert for etcd)")
    } else if d.contains("notvalidforname") || d.contains("not valid for name") {
        Some("the server's certificate does not name this host: use a host or IP in its SANs")
    } else if d.contains("certificaterequired") || d.contains("certificate required") {
        Some("the server requires a client certificate")
    } else {
        None
    }
}

async fn fetch_http(
    client: &reqwest::Client,
    url: &str,
    token: &Option<(PathBuf, String)>,
) -> Result<Bytes, FetchError> {
    let mut req = client.get(url).header(http::header::ACCEPT, ACCEPT);
    if let Some((path, cached)) = token {
        // Pick up a rotated token; keep the last good one when the file is momentarily
        // unreadable (or was a one-shot pipe).
        let fresh = std::fs::read_to_string(path)
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty());
        req = req.bearer_auth(fresh.as_deref().unwrap_or(cached));
    }
    let mut resp = req
        .send()
        .await
        .map_err(|e| FetchError::Request(error_detail(&e)))?;
    let status = resp.status();
    if let Some(n) = resp.content_length().filter(|n| *n > MAX_BODY_BYTES as u64) {
        return Err(FetchError::TooLarge(TooLarge(n)));
    }
    let mut body = bytes::BytesMut::new();
    loop {
        match resp.chunk().await {
            Ok(Some(c)) => {
                if body.len() + c.len() > MAX_BODY_BYTES {
                    return Err(FetchError::TooLarge(TooLarge(
                        (body.len() + c.len()) as u64,
                    )));
                }
                body.extend_from_slice(&c);
            }
            Ok(None) => break,
            Err(e) => {
                return Err(FetchError::Body {
                    status: status.as_u16(),
                    detail: error_detail(&e),
                })
            }
        }
    }
    check_status(status, body.freeze())
}

async fn fetch_kube(client: &kube::Client) -> Result<Bytes, FetchError> {
    let req = http::Request::get("/metrics")
        .header(http::header::ACCEPT, ACCEPT)
        .body(kube::client::Body::from(Vec::new()))
        .map_err(|e| FetchError::Request(e.to_string()))?;
    let resp = client
        .send(req)
        .await
        .map_err(|e| FetchError::Request(error_detail(&e)))?;
    let status = resp.status();
    let body = resp
        .into_body()
        .collect_bytes()
        .await
        .map_err(|e| FetchError::Body {
            status: status.as_u16(),
            detail: error_detail(&e),
        })?;
    if body.len() > MAX_BODY_BYTES {
        return Err(FetchError::TooLarge(TooLarge(body.len() as u64)));
    }
    check_status(status, body)
}

fn check_status(status: http::StatusCode, body: Bytes) -> Result<Bytes, FetchError> {
    if status == http::StatusCode::OK {
        return Ok(body);
    }
    Err(FetchError::Status {
        status,
        preview: error_body_preview(&body),
    })
}

/// What to quote from an error body: a Kubernetes `Status`'s message when the body is one
/// (`{"kind":"Status",...,"message":"forbidden: ..."}`), else its first 80 bytes; one line.
pub fn error_body_preview(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct StatusMsg {
        kind: Option<String>,
        message: Option<String>,
    }
    if body.first() == Some(&b'{') {
        if let Ok(StatusMsg {
            kind: Some(k),
            message: Some(m),
        }) = serde_json::from_slice::<StatusMsg>(body)
        {
            if k == "Status" && !m.is_empty() {
                return one_line(&m, 200);
            }
        }
    }
    let cut = &body[..body.len().min(ERROR_BODY_PREVIEW)];
    let mut s = one_line(&String::from_utf8_lossy(cut), usize::MAX);
    if body.len() > ERROR_BODY_PREVIEW {
        s.push('…');
    }
    s
}

/// Collapses whitespace (newlines included) to single spaces and trims; cuts at `max` chars.
fn one_line(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(256));
    for (i, w) in s.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(w);
    }
    if out.chars().count() > max {
        out = out.chars().take(max).collect::<String>() + "…";
    }
    out
}

/// The useful part of an error chain, one line: reqwest's "error sending request for url
/// (…)" (the URL is already in the message) is dropped, repeated parts are skipped.
pub fn error_detail(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur = Some(e);
    while let Some(c) = cur {
        let t = c.to_string();
        let noise = t.starts_with("error sending request")
            || t.starts_with("client error (")
            || t.starts_with("HyperError: client error")
            || t.starts_with("ServiceError: client error")
            || t.is_empty();
        if !noise && !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        cur = c.source();
    }
    if parts.is_empty() {
        parts.push(e.to_string());
    }
    one_line(&parts.join(": "), 300)
}

/// Scrapes every `interval` (the first attempt at once) until the receiver is dropped;
/// every attempt sends exactly one `Observation::Scrape`, stamped when it finished. A slow
/// endpoint delays the next tick instead of causing a burst.
pub fn spawn_scraper(
    target: ScrapeTarget,
    mut how: ScrapeFrom,
    interval: Duration,
    timeout: Duration,
    tx: mpsc::Sender<Stamped>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval.max(Duration::from_millis(10)));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            if tx.is_closed() {
                return;
            }
            let outcome = scrape_once(&how, timeout).await;
            if matches!(outcome, ScrapeOutcome::Failed { .. }) {
                how.next_url();
            }
            let obs = Observation::Scrape { target, outcome };
            if tx.send(Stamped::now(obs)).await.is_err() {
                return;
            }
        }
    })
}

/// Offline scrapes: each file becomes one `Body` observation, in the order given
/// (successive files are successive scrapes). Timestamps: the last file is stamped now
/// and each earlier one [`DEFAULT_SCRAPE_INTERVAL`] before the next; use
/// [`file_scrapes_spaced`] to choose the spacing (e.g. `--scrape-interval`) and end time.
/// A file that cannot be read is an error naming it.
pub fn file_scrapes(target: ScrapeTarget, paths: &[PathBuf]) -> Result<Vec<Stamped>, SetupError> {
    file_scrapes_spaced(target, paths, DEFAULT_SCRAPE_INTERVAL, SystemTime::now())
}

/// As [`file_scrapes`]: file `i` of `n` is stamped `end - (n-1-i) * spacing`, so rates
/// computed between successive files use `spacing` as the time between them.
pub fn file_scrapes_spaced(
    target: ScrapeTarget,
    paths: &[PathBuf],
    spacing: Duration,
    end: SystemTime,
) -> Result<Vec<Stamped>, SetupError> {
    let flag = match target {
        ScrapeTarget::Apiserver => "--apiserver-metrics-file",
        ScrapeTarget::Etcd => "--etcd-metrics-file",
        ScrapeTarget::ControllerManager => "--controller-manager-metrics-file",
        ScrapeTarget::Scheduler => "--scheduler-metrics-file",
    };
    let n = paths.len() as u32;
    let mut out = Vec::with_capacity(paths.len());
    for (i, p) in paths.iter().enumerate() {
        if let Ok(m) = std::fs::metadata(p) {
            if m.len() > MAX_BODY_BYTES as u64 {
                return Err(SetupError::FileTooLarge {
                    flag,
                    path: p.clone(),
                    bytes: m.len(),
                });
            }
        }
        let body = std::fs::read(p).map_err(|error| SetupError::Read {
            flag,
            path: p.clone(),
            error,
        })?;
        let back = spacing * (n - 1 - i as u32);
        out.push(Stamped {
            at: end.checked_sub(back).unwrap_or(end),
            obs: Observation::Scrape {
                target,
                outcome: ScrapeOutcome::Body {
                    source: p.display().to_string(),
                    body: Bytes::from(body),
                },
            },
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_timeout_is_capped() {
        assert_eq!(
            default_timeout(Duration::from_secs(5)),
            Duration::from_secs(5)
        );
        assert_eq!(
            default_timeout(Duration::from_secs(60)),
            Duration::from_secs(10)
        );
    }

    #[test]
    fn previews_are_one_line_and_short() {
        let html = b"<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad Gateway</h1></center>\n</body></html>";
        let p = error_body_preview(html);
        assert!(!p.contains('\n'));
        assert!(p.starts_with("<html> <head><title>502"), "{p}");
        assert!(p.ends_with('…'));
        let status = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"system:anonymous\" cannot get path \"/metrics\"","reason":"Forbidden","details":{},"code":403}"#;
        assert_eq!(
            error_body_preview(status),
            r#"forbidden: User "system:anonymous" cannot get path "/metrics""#
        );
        assert_eq!(error_body_preview(b""), "");
    }

    #[test]
    fn file_spacing() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.prom");
        let b = dir.path().join("b.prom");
        std::fs::write(&a, "x 1\n").unwrap();
        std::fs::write(&b, "x 2\n").unwrap();
        let end = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let v = file_scrapes_spaced(
            ScrapeTarget::Etcd,
            &[a, b.clone()],
            Duration::from_secs(5),
            end,
        )
        .unwrap();
        assert_eq!(v[0].at, end - Duration::from_secs(5));
        assert_eq!(v[1].at, end);
        let e = file_scrapes(ScrapeTarget::Etcd, &[b, dir.path().join("missing")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--etcd-metrics-file") && e.contains("missing"),
            "{e}"
        );
    }
}
