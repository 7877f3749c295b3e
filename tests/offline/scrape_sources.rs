//! The apiserver-side inputs against loopback endpoints: `/metrics` scrapers (reqwest and
//! kube paths) against small hand-written HTTP/1.1 servers that misbehave on purpose
//! (refused, silent, HTML, 500, auth required), etcd's own `/metrics` on a private etcd,
//! offline metrics files, kubeconfig discovery, the `MetricsArgs` flags, and the informer
//! loop against a scripted list/watch server (bookmarks, ERROR 410, HTTP 410, relists).
//! Everything is bounded: no test waits more than a few seconds for anything.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::fixtures;
use crate::common::require;
use crate::common::scrape::{body_of, bounded, hang_guard, init};
use regscope::cli::args::MetricsArgs;
use regscope::model::{InformerWhat, Observation, ScrapeOutcome, ScrapeTarget, Stamped};
use regscope::source::informer::{spawn_informers_with, InformerOptions, InformerResource};
use regscope::source::kubeconfig::{
    discover_kubeconfig, probe_file, DiscoveryEnv, KubeconfigOrigin,
};
use regscope::source::scrape::{
    file_scrapes, file_scrapes_spaced, scrape_once, spawn_scraper, HttpAuth, ScrapeFrom,
};
use regscope::source::{ApiserverAccess, EtcdMetricsFrom, EtcdOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// A real kube-apiserver 1.34 `/metrics` capture.
fn capture() -> PathBuf {
    fixtures::testdata().join("apiserver-metrics/kube-apiserver-v1.34.0.prom")
}

/// A real kube-apiserver 1.32 `/metrics` capture.
fn capture_old() -> PathBuf {
    fixtures::testdata().join("apiserver-metrics/kube-apiserver-v1.32.0.prom")
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
struct Req {
    /// `GET /metrics HTTP/1.1`
    line: String,
    headers: Vec<(String, String)>,
}

impl Req {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn target(&self) -> &str {
        self.line.split(' ').nth(1).unwrap_or("")
    }
}

enum Reply {
    /// A complete response with Content-Length, then close.
    Full {
        status: &'static str,
        content_type: &'static str,
        body: Vec<u8>,
    },
    /// Accept and never answer.
    Hang,
    /// A 200 whose body is these lines written one by one (a watch stream), delimited by
    /// closing the connection; `hang` keeps it open afterwards instead.
    Stream { lines: Vec<String>, hang: bool },
}

type Handler = Arc<dyn Fn(&Req) -> Reply + Send + Sync>;

struct Server {
    addr: std::net::SocketAddr,
    requests: Arc<Mutex<Vec<Req>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    async fn start(handler: Handler) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let reqs = requests.clone();
        let task = tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    return;
                };
                let handler = handler.clone();
                let reqs = reqs.clone();
                conns.spawn(async move {
                    let _ = serve_conn(sock, handler, reqs).await;
                });
            }
        });
        Server {
            addr,
            requests,
            task,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn requests(&self) -> Vec<Req> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve_conn(
    mut sock: TcpStream,
    handler: Handler,
    reqs: Arc<Mutex<Vec<Req>>>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = sock.read(&mut chunk).await?;
        if n == 0 || buf.len() > 65536 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&buf).into_owned();
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or("").to_string();
    let headers = lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let req = Req { line, headers };
    reqs.lock().unwrap().push(req.clone());
    match handler(&req) {
        Reply::Full {
            status,
            content_type,
            body,
        } => {
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            sock.write_all(head.as_bytes()).await?;
            sock.write_all(&body).await?;
            sock.shutdown().await?;
        }
        Reply::Hang => {
            // A server that never answers is the point.
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        Reply::Stream { lines, hang } => {
            sock.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n",
            )
            .await?;
            for l in lines {
                sock.write_all(l.as_bytes()).await?;
                sock.write_all(b"\n").await?;
                sock.flush().await?;
                // Pacing, the point of this sleep: one watch event per read.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            if hang {
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
            sock.shutdown().await?;
        }
    }
    Ok(())
}

fn full(status: &'static str, content_type: &'static str, body: impl Into<Vec<u8>>) -> Reply {
    Reply::Full {
        status,
        content_type,
        body: body.into(),
    }
}

fn http_from(url: &str) -> ScrapeFrom {
    ScrapeFrom::url(url, &HttpAuth::default()).expect("client")
}

fn error_of(o: &ScrapeOutcome) -> &str {
    match o {
        ScrapeOutcome::Failed { error, .. } => error,
        ScrapeOutcome::Body { body, .. } => panic!("expected a failure, got {} bytes", body.len()),
    }
}

// ---------------------------------------------------------------------------------------
// Scrapes.

#[tokio::test]
async fn serves_a_real_capture_byte_for_byte() {
    require!(TESTDATA);
    init();
    bounded(20, async {
        let capture = std::fs::read(capture()).expect("capture");
        let body = capture.clone();
        let srv = Server::start(Arc::new(move |_| {
            full("200 OK", "text/plain; version=0.0.4", body.clone())
        }))
        .await;
        let url = srv.url("/metrics");
        let out = scrape_once(&http_from(&url), Duration::from_secs(5)).await;
        match &out {
            ScrapeOutcome::Body { source, body } => {
                assert_eq!(source, &url);
                assert_eq!(body.len(), capture.len());
                assert!(body[..] == capture[..], "body differs from the capture");
            }
            ScrapeOutcome::Failed { error, .. } => panic!("{error}"),
        }
        let req = &srv.requests()[0];
        assert_eq!(req.line, "GET /metrics HTTP/1.1");
        assert!(req.header("accept").unwrap().contains("text/plain"));
        assert!(req.header("authorization").is_none());
    })
    .await;
}

#[tokio::test]
async fn refused_connection_fails_quickly() {
    init();
    bounded(10, async {
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            l.local_addr().unwrap().port()
        };
        let url = format!("http://127.0.0.1:{port}/metrics");
        // The scrape's own timeout is an hour: only a failure that the refusal itself
        // causes, without waiting for the timeout, ends within the hang guard.
        let out = hang_guard(
            "a scrape of a refused port",
            Duration::from_secs(5),
            scrape_once(&http_from(&url), Duration::from_secs(3600)),
        )
        .await;
        let err = error_of(&out);
        assert!(err.starts_with(&format!("GET {url}: ")), "{err}");
        assert!(err.to_lowercase().contains("refused"), "{err}");
        assert!(!err.contains('\n'));
    })
    .await;
}

#[tokio::test]
async fn silent_endpoint_times_out() {
    init();
    bounded(10, async {
        let srv = Server::start(Arc::new(|_| Reply::Hang)).await;
        let url = srv.url("/metrics");
        let t0 = Instant::now();
        let out = hang_guard(
            "a scrape with a 500 ms timeout of a silent endpoint",
            Duration::from_secs(5),
            scrape_once(&http_from(&url), Duration::from_millis(500)),
        )
        .await;
        let took = t0.elapsed();
        assert_eq!(error_of(&out), format!("GET {url}: timed out after 500ms"));
        // The timeout is not cut short (a lower bound: a loaded machine only adds to it).
        assert!(took >= Duration::from_millis(500), "{took:?}");
    })
    .await;
}

#[tokio::test]
async fn html_200_is_a_body_and_500_is_a_failure() {
    init();
    bounded(10, async {
        let html = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head>\n<body>Please sign in to continue to the dashboard of this very important cluster</body></html>\n";
        let srv = Server::start(Arc::new(move |r| {
            if r.target() == "/login" {
                full("200 OK", "text/html", html)
            } else {
                full(
                    "500 Internal Server Error",
                    "text/plain",
                    "internal error:\nstorage backend unavailable\n",
                )
            }
        }))
        .await;
        let out = scrape_once(&http_from(&srv.url("/login")), Duration::from_secs(5)).await;
        assert_eq!(body_of(&out), html.as_bytes());
        let url = srv.url("/metrics");
        let out = scrape_once(&http_from(&url), Duration::from_secs(5)).await;
        let err = error_of(&out);
        assert_eq!(
            err,
            format!(
                "GET {url}: HTTP 500 Internal Server Error: internal error: storage backend unavailable"
            )
        );
    })
    .await;
}

#[tokio::test]
async fn long_error_bodies_are_cut() {
    init();
    bounded(10, async {
        let srv = Server::start(Arc::new(|_| {
            full("502 Bad Gateway", "text/html", "<p>".repeat(200))
        }))
        .await;
        let out = scrape_once(&http_from(&srv.url("/metrics")), Duration::from_secs(5)).await;
        let err = error_of(&out);
        assert!(err.contains("HTTP 502 Bad Gateway: <p><p>"), "{err}");
        assert!(err.len() < 200, "{err}");
        assert!(err.ends_with('…'), "{err}");
    })
    .await;
}

/// Answers 401 unless the request carries `Authorization: Bearer <token>`.
fn bearer_checker(token: &'static str, body: &'static str) -> Handler {
    Arc::new(move |r| {
        if r.header("authorization") == Some(&format!("Bearer {token}")) {
            full("200 OK", "text/plain", body)
        } else {
            full(
                "401 Unauthorized",
                "application/json",
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#,
            )
        }
    })
}

#[tokio::test]
async fn bearer_token_is_sent_and_reread() {
    init();
    bounded(10, async {
        let srv = Server::start(bearer_checker("s3cret", "up 1\n")).await;
        let url = srv.url("/metrics");
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "s3cret\n").unwrap();
        let auth = HttpAuth {
            token_file: Some(token.clone()),
            ..Default::default()
        };
        let how = ScrapeFrom::url(&url, &auth).unwrap();
        assert_eq!(
            body_of(&scrape_once(&how, Duration::from_secs(5)).await),
            b"up 1\n"
        );
        // A rotated (here: wrong) token is picked up at the next scrape.
        std::fs::write(&token, "other").unwrap();
        let out = scrape_once(&how, Duration::from_secs(5)).await;
        assert_eq!(
            error_of(&out),
            format!("GET {url}: HTTP 401 Unauthorized: Unauthorized")
        );
        // Without a token: 401 too.
        let out = scrape_once(&http_from(&url), Duration::from_secs(5)).await;
        assert!(error_of(&out).contains("401"));
        // A token file that cannot be read is a clear error up front.
        let e = ScrapeFrom::url(
            &url,
            &HttpAuth {
                token_file: Some(dir.path().join("missing")),
                ..Default::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("--apiserver-token-file") && e.contains("missing"),
            "{e}"
        );
    })
    .await;
}

#[tokio::test]
async fn scraper_task_sends_one_observation_per_attempt() {
    init();
    bounded(10, async {
        let srv = Server::start(Arc::new(|_| full("200 OK", "text/plain", "up 1\n"))).await;
        let (tx, mut rx) = mpsc::channel(16);
        let h = spawn_scraper(
            ScrapeTarget::Apiserver,
            http_from(&srv.url("/metrics")),
            Duration::from_millis(100),
            Duration::from_secs(1),
            tx,
        );
        for _ in 0..3 {
            let s: Stamped = rx.recv().await.expect("observation");
            match s.obs {
                Observation::Scrape {
                    target: ScrapeTarget::Apiserver,
                    outcome: ScrapeOutcome::Body { body, .. },
                } => assert_eq!(&body[..], b"up 1\n"),
                other => panic!("unexpected {other:?}"),
            }
        }
        // The task ends once the receiver is gone.
        drop(rx);
        tokio::time::timeout(Duration::from_secs(2), h)
            .await
            .expect("scraper ended")
            .unwrap();
        assert!(srv.requests().len() >= 3);
    })
    .await;
}

fn write_kubeconfig(dir: &Path, server: &str, token: Option<&str>) -> PathBuf {
    let user = match token {
        Some(t) => format!("    token: {t}\n"),
        None => "    {}\n".to_string(),
    };
    let user = if token.is_some() {
        format!("  user:\n{user}")
    } else {
        "  user: {}\n".to_string()
    };
    let text = format!(
        "apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: {server}
- name: other
  cluster:
    server: http://127.0.0.1:1
users:
- name: me
{user}contexts:
- name: local
  context:
    cluster: local
    user: me
- name: other
  context:
    cluster: other
    user: me
current-context: local
"
    );
    let p = dir.join("kubeconfig");
    std::fs::write(&p, text).unwrap();
    p
}

#[tokio::test]
async fn kube_client_scrape_through_a_kubeconfig_with_a_token() {
    init();
    bounded(20, async {
        let srv = Server::start(bearer_checker("kc-token", "apiserver_up 1\n")).await;
        let dir = tempfile::tempdir().unwrap();
        let kc = write_kubeconfig(dir.path(), &srv.url(""), Some("kc-token"));
        let access = ApiserverAccess::from_kubeconfig_path(&kc);
        assert!(access.is_explicit());
        let clients = access
            .connect()
            .await
            .expect("connect")
            .expect("configured");
        assert_eq!(clients.server, srv.url(""));
        assert_eq!(clients.metrics.source(), srv.url("/metrics"));
        let out = scrape_once(&clients.metrics, Duration::from_secs(5)).await;
        assert_eq!(body_of(&out), b"apiserver_up 1\n");
        // The other context points at a closed port: a failure, not a panic or a hang.
        let mut other = access.clone();
        other.context = Some("other".into());
        let clients = other.connect().await.unwrap().unwrap();
        let out = scrape_once(&clients.metrics, Duration::from_secs(5)).await;
        let err = error_of(&out);
        assert!(err.starts_with("GET http://127.0.0.1:1/metrics: "), "{err}");
        // A context that does not exist is a clear error.
        let mut missing = access.clone();
        missing.context = Some("nope".into());
        let e = missing.connect().await.err().expect("error");
        assert!(
            e.contains("no context 'nope'") && e.contains("local"),
            "{e}"
        );
    })
    .await;
}

#[tokio::test]
async fn kube_client_scrape_timeout_and_status() {
    init();
    bounded(20, async {
        let srv = Server::start(Arc::new(|r| {
            if r.target() == "/metrics" && r.header("x-hang").is_none() {
                full(
                    "403 Forbidden",
                    "application/json",
                    r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"system:anonymous\" cannot get path \"/metrics\"","reason":"Forbidden","details":{},"code":403}"#,
                )
            } else {
                Reply::Hang
            }
        }))
        .await;
        let dir = tempfile::tempdir().unwrap();
        let kc = write_kubeconfig(dir.path(), &srv.url(""), None);
        let clients = ApiserverAccess::from_kubeconfig_path(&kc)
            .connect()
            .await
            .unwrap()
            .unwrap();
        let out = scrape_once(&clients.metrics, Duration::from_secs(5)).await;
        assert_eq!(
            error_of(&out),
            format!(
                "GET {}: HTTP 403 Forbidden: forbidden: User \"system:anonymous\" cannot get path \"/metrics\"",
                srv.url("/metrics")
            )
        );
        // A silent apiserver through the kube client: the same bounded timeout.
        let silent = Server::start(Arc::new(|_| Reply::Hang)).await;
        let kc = write_kubeconfig(dir.path(), &silent.url(""), None);
        let clients = ApiserverAccess::from_kubeconfig_path(&kc)
            .connect()
            .await
            .unwrap()
            .unwrap();
        let out = hang_guard(
            "a scrape with a 300 ms timeout of a silent apiserver",
            Duration::from_secs(3),
            scrape_once(&clients.metrics, Duration::from_millis(300)),
        )
        .await;
        assert!(error_of(&out).ends_with("timed out after 300ms"), "{out:?}");
    })
    .await;
}

#[tokio::test]
async fn unreadable_explicit_kubeconfig_is_an_error() {
    init();
    let e = ApiserverAccess::from_kubeconfig_path("/nonexistent/kubeconfig")
        .connect()
        .await
        .err()
        .expect("error");
    assert!(e.contains("/nonexistent/kubeconfig"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad");
    std::fs::write(&bad, "this: [is not: a kubeconfig").unwrap();
    let e = ApiserverAccess::from_kubeconfig_path(&bad)
        .connect()
        .await
        .err()
        .expect("error");
    assert!(e.contains(&bad.display().to_string()), "{e}");
}

#[test]
fn file_scrapes_are_successive_bodies() {
    require!(TESTDATA);
    let paths = vec![capture_old(), capture()];
    let obs = file_scrapes(ScrapeTarget::Apiserver, &paths).expect("files");
    assert_eq!(obs.len(), 2);
    assert!(obs[0].at < obs[1].at, "distinct, increasing timestamps");
    for (s, p) in obs.iter().zip(&paths) {
        match &s.obs {
            Observation::Scrape {
                target: ScrapeTarget::Apiserver,
                outcome: ScrapeOutcome::Body { source, body },
            } => {
                assert_eq!(source, &p.display().to_string());
                assert_eq!(body.len() as u64, std::fs::metadata(p).unwrap().len());
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let end = std::time::SystemTime::now();
    let obs =
        file_scrapes_spaced(ScrapeTarget::Etcd, &paths, Duration::from_secs(15), end).unwrap();
    assert_eq!(obs[1].at, end);
    assert_eq!(
        end.duration_since(obs[0].at).unwrap(),
        Duration::from_secs(15)
    );
    let e = file_scrapes(
        ScrapeTarget::Apiserver,
        &[capture(), PathBuf::from("/nonexistent/m.prom")],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("/nonexistent/m.prom") && e.contains("--apiserver-metrics-file"),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------
// Flags and discovery.

fn no_env(dir: &Path) -> DiscoveryEnv {
    DiscoveryEnv {
        kubeconfig: None,
        home: None,
        kubeadm_admin: dir.join("admin.conf"),
    }
}

#[test]
fn scrape_config_resolution() {
    require!(TESTDATA);
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".kube")).unwrap();
    let home_kc = home.join(".kube/config");
    std::fs::write(&home_kc, "apiVersion: v1\nkind: Config\n").unwrap();
    let env_kc = dir.path().join("env-kc");
    std::fs::write(&env_kc, "apiVersion: v1\nkind: Config\n").unwrap();

    // Nothing anywhere: not configured, not an error.
    let cfg = MetricsArgs::default()
        .scrape_config_with(&no_env(dir.path()), &probe_file)
        .unwrap();
    assert!(!cfg.apiserver.is_configured());
    assert_eq!(cfg.etcd, EtcdMetricsFrom::Endpoint);
    assert_eq!(cfg.timeout, Duration::from_secs(5));
    assert_eq!(cfg.informers, ["pods", "nodes", "leases", "events"]);

    // $KUBECONFIG before ~/.kube/config; admin.conf before both.
    let env = DiscoveryEnv {
        kubeconfig: Some(env_kc.clone().into_os_string()),
        home: Some(home.clone()),
        kubeadm_admin: dir.path().join("admin.conf"),
    };
    let cfg = MetricsArgs::default()
        .scrape_config_with(&env, &probe_file)
        .unwrap();
    let k = cfg.apiserver.kubeconfig.unwrap();
    assert_eq!(
        (k.origin, k.paths),
        (KubeconfigOrigin::Env, vec![env_kc.clone()])
    );
    std::fs::write(
        dir.path().join("admin.conf"),
        "apiVersion: v1\nkind: Config\n",
    )
    .unwrap();
    let (k, _) = discover_kubeconfig(None, &env, &probe_file);
    assert_eq!(k.unwrap().origin, KubeconfigOrigin::KubeadmAdmin);
    let env_home = DiscoveryEnv {
        kubeconfig: None,
        ..no_env(dir.path())
    };
    let env_home = DiscoveryEnv {
        home: Some(home.clone()),
        kubeadm_admin: dir.path().join("no-admin.conf"),
        ..env_home
    };
    let (k, _) = discover_kubeconfig(None, &env_home, &probe_file);
    assert_eq!(k.unwrap().origin, KubeconfigOrigin::Home);

    // Metrics files: offline, no discovery, etcd live scrape replaced.
    let args = MetricsArgs {
        etcd_metrics_file: vec![capture()],
        ..Default::default()
    };
    let cfg = args.scrape_config_with(&env, &probe_file).unwrap();
    assert!(!cfg.apiserver.is_configured());
    assert_eq!(cfg.etcd, EtcdMetricsFrom::Off);
    assert!(cfg.has_files());
    assert_eq!(cfg.file_observations().unwrap().len(), 1);

    // An explicit --kubeconfig that cannot be read is an error.
    let args = MetricsArgs {
        kubeconfig: Some(dir.path().join("missing")),
        ..Default::default()
    };
    let e = args.scrape_config_with(&env, &probe_file).unwrap_err();
    assert!(e.contains("--kubeconfig") && e.contains("missing"), "{e}");

    // URL credentials without a URL are a mistake worth saying.
    let args = MetricsArgs {
        apiserver_token_file: Some(env_kc.clone()),
        ..Default::default()
    };
    assert!(args
        .scrape_config_with(&env, &probe_file)
        .unwrap_err()
        .contains("--apiserver-metrics-url"));
    let args = MetricsArgs {
        apiserver_metrics_url: Some("https://127.0.0.1:6443/metrics".into()),
        apiserver_cert: Some(env_kc.clone()),
        ..Default::default()
    };
    assert!(args.scrape_config_with(&env, &probe_file).is_err());

    // Timeout defaults to min(interval, 10s); informers none.
    let args = MetricsArgs {
        scrape_interval: Duration::from_secs(30),
        informers: vec!["none".into()],
        etcd_metrics_url: Some("http://127.0.0.1:2381/metrics".into()),
        ..Default::default()
    };
    let cfg = args
        .scrape_config_with(&no_env(dir.path()), &probe_file)
        .unwrap();
    assert_eq!(cfg.timeout, Duration::from_secs(10));
    assert!(cfg.informers.is_empty());
    assert_eq!(
        cfg.etcd,
        EtcdMetricsFrom::Url("http://127.0.0.1:2381/metrics".into())
    );
}

// ---------------------------------------------------------------------------------------
// Informers against a scripted list/watch server.

fn list_body(rv: &str, names: &[&str], cont: Option<&str>) -> String {
    let items: Vec<String> = names
        .iter()
        .map(|n| {
            format!(
                r#"{{"metadata":{{"name":"{n}","namespace":"default","resourceVersion":"50"}}}}"#
            )
        })
        .collect();
    let cont = cont
        .map(|c| format!(r#","continue":"{c}""#))
        .unwrap_or_default();
    format!(
        r#"{{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{{"resourceVersion":"{rv}"{cont}}},"items":[{}]}}"#,
        items.join(",")
    )
}

fn ev(kind: &str, rv: &str) -> String {
    if kind == "BOOKMARK" {
        format!(
            r#"{{"type":"BOOKMARK","object":{{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{{"resourceVersion":"{rv}"}}}}}}"#
        )
    } else {
        format!(
            r#"{{"type":"{kind}","object":{{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{{"name":"p","namespace":"default","resourceVersion":"{rv}"}}}}}}"#
        )
    }
}

const GONE_410: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 200 (350)","reason":"Expired","code":410}"#;

/// A scripted apiserver for pods: lists at 100 (two pages), 200, 300; the first watch sends
/// an ADDED, a BOOKMARK and an ERROR 410 event; the second watch is refused with HTTP 410;
/// the third sends a MODIFIED and stays open.
fn scripted_apiserver() -> Handler {
    let lists = Arc::new(Mutex::new(0u32));
    let watches = Arc::new(Mutex::new(0u32));
    Arc::new(move |r| {
        let target = r.target().to_string();
        if !target.starts_with("/api/v1/pods") {
            return full("404 Not Found", "text/plain", "404 page not found");
        }
        if target.contains("watch=true") {
            let n = {
                let mut w = watches.lock().unwrap();
                *w += 1;
                *w
            };
            return match n {
                1 => Reply::Stream {
                    lines: vec![
                        ev("ADDED", "101"),
                        ev("BOOKMARK", "105"),
                        format!(r#"{{"type":"ERROR","object":{GONE_410}}}"#),
                    ],
                    hang: false,
                },
                2 => full("410 Gone", "application/json", GONE_410),
                _ => Reply::Stream {
                    lines: vec![ev("MODIFIED", "301")],
                    hang: true,
                },
            };
        }
        if target.contains("continue=tok") {
            return full("200 OK", "application/json", list_body("100", &["c"], None));
        }
        let n = {
            let mut l = lists.lock().unwrap();
            *l += 1;
            *l
        };
        let body = match n {
            1 => list_body("100", &["a", "b"], Some("tok")),
            2 => list_body("200", &["a"], None),
            _ => list_body("300", &[], None),
        };
        full("200 OK", "application/json", body)
    })
}

fn what_of(s: Stamped) -> InformerWhat {
    match s.obs {
        Observation::Informer(i) => {
            assert_eq!((i.group.as_str(), i.resource.as_str()), ("", "pods"));
            i.what
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn informer_lists_watches_bookmarks_and_relists_on_410() {
    init();
    bounded(20, async {
        let srv = Server::start(scripted_apiserver()).await;
        let dir = tempfile::tempdir().unwrap();
        let kc = write_kubeconfig(dir.path(), &srv.url(""), None);
        let clients = ApiserverAccess::from_kubeconfig_path(&kc)
            .connect()
            .await
            .unwrap()
            .unwrap();
        let (tx, mut rx) = mpsc::channel(64);
        let opts = InformerOptions {
            backoff_min: Duration::from_millis(10),
            backoff_max: Duration::from_millis(50),
            ..Default::default()
        };
        let pods = InformerResource::new("", "v1", "pods", "Pod");
        let h = spawn_informers_with(clients.kube, vec![pods], opts, tx);
        let mut got = Vec::new();
        for _ in 0..8 {
            got.push(what_of(rx.recv().await.expect("observation")));
        }
        let gone = |m: &str| InformerWhat::Gone {
            message: m.to_string(),
        };
        assert_eq!(
            got,
            vec![
                InformerWhat::Listed {
                    resource_version: 100,
                    items: 3,
                    relist: false
                },
                InformerWhat::Event {
                    resource_version: 101,
                    bookmark: false
                },
                InformerWhat::Event {
                    resource_version: 105,
                    bookmark: true
                },
                gone("too old resource version: 200 (350)"),
                InformerWhat::Listed {
                    resource_version: 200,
                    items: 1,
                    relist: true
                },
                gone("too old resource version: 200 (350)"),
                InformerWhat::Listed {
                    resource_version: 300,
                    items: 0,
                    relist: true
                },
                InformerWhat::Event {
                    resource_version: 301,
                    bookmark: false
                },
            ]
        );
        h.abort();
        let reqs = srv.requests();
        let watches: Vec<&Req> = reqs
            .iter()
            .filter(|r| r.target().contains("watch=true"))
            .collect();
        assert_eq!(watches.len(), 3, "{reqs:#?}");
        for (w, rv) in watches.iter().zip(["100", "200", "300"]) {
            let t = w.target();
            assert!(t.contains("allowWatchBookmarks=true"), "{t}");
            assert!(t.contains("timeoutSeconds=290"), "{t}");
            assert!(t.contains(&format!("resourceVersion={rv}")), "{t}");
        }
        let lists: Vec<&Req> = reqs
            .iter()
            .filter(|r| !r.target().contains("watch=true"))
            .collect();
        assert!(
            lists[0].target().contains("limit=500"),
            "{}",
            lists[0].target()
        );
        assert!(
            lists[1].target().contains("continue=tok"),
            "{}",
            lists[1].target()
        );
    })
    .await;
}

#[tokio::test]
async fn informer_errors_are_reported_and_retried() {
    init();
    bounded(20, async {
        let calls = Arc::new(Mutex::new(0u32));
        let c2 = calls.clone();
        let srv = Server::start(Arc::new(move |r| {
            let n = {
                let mut c = c2.lock().unwrap();
                *c += 1;
                *c
            };
            if r.target().contains("watch=true") {
                Reply::Stream {
                    lines: vec![ev("ADDED", "abc"), ev("ADDED", "xyz"), ev("ADDED", "12")],
                    hang: true,
                }
            } else if n == 1 {
                full(
                    "500 Internal Server Error",
                    "text/plain",
                    "etcdserver: request timed out",
                )
            } else {
                full("200 OK", "application/json", list_body("10", &["a"], None))
            }
        }))
        .await;
        let dir = tempfile::tempdir().unwrap();
        let kc = write_kubeconfig(dir.path(), &srv.url(""), None);
        let clients = ApiserverAccess::from_kubeconfig_path(&kc)
            .connect()
            .await
            .unwrap()
            .unwrap();
        let (tx, mut rx) = mpsc::channel(64);
        let opts = InformerOptions {
            backoff_min: Duration::from_millis(10),
            backoff_max: Duration::from_millis(50),
            ..Default::default()
        };
        let h = spawn_informers_with(
            clients.kube,
            vec![InformerResource::new("", "v1", "pods", "Pod")],
            opts,
            tx,
        );
        let first = what_of(rx.recv().await.unwrap());
        let InformerWhat::Error { message } = first else {
            panic!("{first:?}")
        };
        assert!(
            message.contains("500") && message.contains("etcdserver: request timed out"),
            "{message}"
        );
        assert_eq!(
            what_of(rx.recv().await.unwrap()),
            InformerWhat::Listed {
                resource_version: 10,
                items: 1,
                relist: false
            }
        );
        // Non-numeric versions: one note, then skipped.
        let note = what_of(rx.recv().await.unwrap());
        assert!(
            matches!(&note, InformerWhat::Error { message } if message.contains("'abc'")),
            "{note:?}"
        );
        assert_eq!(
            what_of(rx.recv().await.unwrap()),
            InformerWhat::Event {
                resource_version: 12,
                bookmark: false
            }
        );
        h.abort();
    })
    .await;
}

#[tokio::test]
async fn scrape_config_start_runs_the_apiserver_side() {
    init();
    bounded(20, async {
        let srv = Server::start(Arc::new(|r| {
            if r.target() == "/metrics" {
                full("200 OK", "text/plain", "apiserver_up 1\n")
            } else if r.target().contains("watch=true") {
                Reply::Stream {
                    lines: vec![ev("BOOKMARK", "7")],
                    hang: true,
                }
            } else if r.target().starts_with("/api/v1/nodes") {
                full("200 OK", "application/json", list_body("5", &["n1"], None))
            } else {
                full("404 Not Found", "text/plain", "404 page not found")
            }
        }))
        .await;
        let dir = tempfile::tempdir().unwrap();
        let kc = write_kubeconfig(dir.path(), &srv.url(""), None);
        let args = MetricsArgs {
            kubeconfig: Some(kc),
            informers: vec!["nodes".into()],
            scrape_interval: Duration::from_secs(1),
            ..Default::default()
        };
        let cfg = args.scrape_config().expect("config");
        // The etcd side points at a closed port: its scrapes fail, the rest goes on.
        let etcd = EtcdOptions {
            endpoints: vec!["http://127.0.0.1:1".into()],
            ..Default::default()
        };
        let (tx, mut rx) = mpsc::channel(64);
        let tasks = cfg.start(&etcd, tx).await.expect("start");
        assert_eq!(tasks.apiserver.as_deref(), Some(srv.url("").as_str()));
        let (mut api, mut etcd_failed, mut listed, mut bookmark) = (false, false, false, false);
        while !(api && etcd_failed && listed && bookmark) {
            match rx.recv().await.unwrap().obs {
                Observation::Scrape {
                    target: ScrapeTarget::Apiserver,
                    outcome,
                } => {
                    assert_eq!(body_of(&outcome), b"apiserver_up 1\n");
                    api = true;
                }
                Observation::Scrape {
                    target: ScrapeTarget::Etcd,
                    outcome,
                } => {
                    assert!(error_of(&outcome).starts_with("GET http://127.0.0.1:1/metrics: "));
                    etcd_failed = true;
                }
                Observation::Informer(i) => {
                    assert_eq!(i.resource, "nodes");
                    match i.what {
                        InformerWhat::Listed {
                            resource_version: 5,
                            ..
                        } => listed = true,
                        InformerWhat::Event {
                            resource_version: 7,
                            bookmark: true,
                        } => bookmark = true,
                        other => panic!("{other:?}"),
                    }
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        drop(tasks);
    })
    .await;
}

// ---------------------------------------------------------------------------------------
// The whole apiserver side against the demo's simulated kube-apiserver on a real etcd.
