//! The exporter against a real Prometheus: `regscope demo --listen` (the demo's private
//! etcd, simulated control plane and apiserver, served headless) scraped by Debian's
//! `prometheus` on loopback with a temp config and storage dir, with the rules of
//! `deploy/prometheus/` loaded; queries through Prometheus' HTTP API (`/api/v1/query`,
//! `/api/v1/alerts`) and `promtool check metrics` on the exposition.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{free_port, require};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_regscope");

/// A child process killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// GET `path` from `addr` over HTTP/1.0 (the connection closes after the answer): status
/// and body. Bounded by a 10 s read timeout.
fn http_get(addr: &str, path: &str, accept: Option<&str>) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n{accept}\r\n").unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, body.to_string())
}

/// Percent-encodes a query parameter's value.
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// An instant query through Prometheus' HTTP API: every sample as (labels, value).
fn query(prom: &str, q: &str) -> Vec<(serde_json::Map<String, Value>, f64)> {
    let (status, body) = http_get(prom, &format!("/api/v1/query?query={}", enc(q)), None);
    assert_eq!(status, 200, "query {q}: {body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let labels = r["metric"].as_object().cloned().unwrap_or_default();
            let value = r["value"][1].as_str().unwrap().parse::<f64>().unwrap();
            (labels, value)
        })
        .collect()
}

/// Waits (bounded) until `f` gives `Some`, checking every 500 ms.
fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(t) = f() {
            return t;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Spawns `cmd` (stdin and stdout null) with its stderr read line by line on a thread:
/// each line echoed to the test's stderr after `tag` and sent down the channel.
fn spawn_reading_stderr(cmd: &mut Command, tag: &'static str) -> (Child, mpsc::Receiver<String>) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("{tag}: {line}");
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

/// `regscope demo --listen 127.0.0.1:0 ARGS…`: the process, the address it serves on and
/// the demo's etcd endpoint, both read from its stderr (the rest of stderr is drained).
fn start_demo(args: &[&str]) -> (Proc, String, String) {
    let (child, rx) = spawn_reading_stderr(
        Command::new(BIN)
            .args(["demo", "--listen", "127.0.0.1:0"])
            .args(args),
        "demo",
    );
    let child = Proc(child);
    let (mut served, mut etcd) = (None, None);
    let deadline = Instant::now() + Duration::from_secs(60);
    while served.is_none() || etcd.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx
            .recv_timeout(left)
            .expect("regscope demo --listen said where it serves within 60 s");
        if let Some(rest) = line.strip_prefix("regscope demo: private etcd at ") {
            etcd = Some(rest.trim().to_string());
        }
        if let Some(rest) = line.strip_prefix("regscope serve: serving /metrics on ") {
            served = rest.split_whitespace().next().map(str::to_string);
        }
    }
    (child, served.unwrap(), etcd.unwrap())
}

/// Debian's Prometheus on a free loopback port scraping `target` every second and
/// evaluating `rules` (a file in `dir`) every second.
fn start_prometheus(dir: &Path, target: &str, rules: &Path) -> (Proc, String) {
    let port = free_port();
    let cfg = dir.join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\nscrape_configs:\n  - job_name: regscope\n    static_configs:\n      - targets: ['{target}']\n",
            rules.display()
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", cfg.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start prometheus");
    let addr = format!("127.0.0.1:{port}");
    let child = Proc(child);
    wait_for("Prometheus to be ready", Duration::from_secs(60), || {
        TcpStream::connect(&addr)
            .ok()
            .and_then(|_| (http_get(&addr, "/-/ready", None).0 == 200).then_some(()))
    });
    (child, addr)
}

/// The rules of `deploy/prometheus/regscope-rules.yml` with every `for:` shortened to 5 s
/// (their expressions unchanged; `promtool test rules` checks the real durations), written
/// into `dir`.
fn rules_with_short_for(dir: &Path) -> std::path::PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/prometheus/regscope-rules.yml");
    let text = std::fs::read_to_string(&src).unwrap();
    let short: String = text
        .lines()
        .map(|l| match l.trim_start().strip_prefix("for:") {
            Some(_) => format!("{}for: 5s\n", &l[..l.len() - l.trim_start().len()]),
            None => format!("{l}\n"),
        })
        .collect();
    let out = dir.join("regscope-rules.yml");
    std::fs::write(&out, short).unwrap();
    out
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// etcd's head revision as etcd reports it (the header of a count-only Range).
async fn etcd_head(c: &mut etcd_client::Client) -> i64 {
    let r = c
        .get("/", Some(etcd_client::GetOptions::new().with_count_only()))
        .await
        .unwrap();
    r.header().unwrap().revision()
}

#[test]
fn prometheus_scrapes_the_demo_and_the_informer_lag_alert_fires() {
    require!(ETCD, PROMETHEUS, PROMTOOL);
    let dir = tempfile::tempdir().unwrap();
    // A slow events watcher whose watch cache never drops it: its lag grows past half the
    // compaction window (compacted every 5 s) and stays there.
    let (_demo, served, etcd) = start_demo(&[
        "--slow-watcher",
        "events",
        "--watch-cache-capacity",
        "99999",
        "--compact-interval",
        "5",
        "--writer-series",
        "20",
    ]);
    let rules = rules_with_short_for(dir.path());
    let (_prom, prom) = start_prometheus(dir.path(), &served, &rules);
    let rt = runtime();
    let mut client = rt
        .block_on(etcd_client::Client::connect([etcd.as_str()], None))
        .unwrap();

    // The exposition passes promtool's linter, in the text format and as Prometheus
    // scrapes it (OpenMetrics).
    let (status, text) = http_get(&served, "/metrics", None);
    assert_eq!(status, 200);
    let mut lint = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lint.stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = lint.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool check metrics: {said}\n{text}"
    );
    let (_, om) = http_get(
        &served,
        "/metrics",
        Some("application/openmetrics-text; version=1.0.0"),
    );
    assert!(
        om.ends_with("# EOF\n") && om.contains("# TYPE regscope_build info"),
        "{om}"
    );
    let (status, health) = http_get(&served, "/healthz", None);
    assert_eq!((status, health.starts_with("ok")), (200, true), "{health}");

    // The head revision in Prometheus lies between etcd's heads before and after the
    // scrape that took it.
    let before = rt.block_on(etcd_head(&mut client));
    let t0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let (at, head) = wait_for(
        "a head revision scraped after etcd was asked",
        Duration::from_secs(30),
        || {
            let (status, body) = http_get(
                &prom,
                &format!(
                    "/api/v1/query?query={}",
                    enc("timestamp(regscope_etcd_head_revision)")
                ),
                None,
            );
            assert_eq!(status, 200);
            let v: Value = serde_json::from_str(&body).unwrap();
            let ts: f64 = v["data"]["result"][0]["value"][1].as_str()?.parse().ok()?;
            (ts > t0 + 1.0).then_some(ts)?;
            let h = query(&prom, "regscope_etcd_head_revision");
            Some((ts, h.first()?.1))
        },
    );
    let after = rt.block_on(etcd_head(&mut client));
    assert!(
        before as f64 <= head && head <= after as f64,
        "Prometheus says head {head} (scraped at {at}); etcd said {before} before and {after} after"
    );

    // Writes the test makes in a resource nobody else writes: the counter grows by exactly
    // them.
    let key = |i: usize| format!("/registry/regscopetests/default/w{i}");
    rt.block_on(client.put(key(0), "{}", None)).unwrap();
    let series = r#"regscope_writes_total{resource="regscopetests",operation="put"}"#;
    let first = wait_for(
        "the first test write in Prometheus",
        Duration::from_secs(30),
        || query(&prom, series).first().map(|s| s.1),
    );
    assert_eq!(first, 1.0);
    for i in 1..=7 {
        rt.block_on(client.put(key(i), "{}", None)).unwrap();
    }
    for i in 0..2 {
        rt.block_on(client.delete(key(i), None)).unwrap();
    }
    wait_for("8 puts in Prometheus", Duration::from_secs(30), || {
        query(&prom, series)
            .first()
            .filter(|s| s.1 == 8.0)
            .map(|_| ())
    });
    let deletes = r#"regscope_writes_total{resource="regscopetests",operation="delete"}"#;
    wait_for("2 deletes in Prometheus", Duration::from_secs(30), || {
        query(&prom, deletes)
            .first()
            .filter(|s| s.1 == 2.0)
            .map(|_| ())
    });

    // Informer lag and the compaction window for the demo's resources.
    for resource in ["events", "pods", "leases", "nodes"] {
        let q = format!(
            "regscope_informer_lag_revisions{{resource=\"{resource}\",watcher=\"regscope\"}}"
        );
        wait_for(&q, Duration::from_secs(30), || {
            query(&prom, &q).first().map(|_| ())
        });
    }
    // The demo's controller manager and scheduler (1.36-style informer metrics): their
    // informers' lag, and the slow pods informer of the controller manager falling behind.
    for q in [
        r#"regscope_informer_lag_revisions{resource="pods",watcher="kube-scheduler/kube-scheduler"}"#,
        r#"regscope_workqueue_adds_total{component="kube-controller-manager",queue="replicaset"}"#,
        r#"max_over_time(regscope_informer_events_behind{resource="pods",watcher="kube-controller-manager/kube-controller-manager"}[5m]) > 0"#,
        r#"max_over_time(regscope_informer_queued_items{resource="pods",watcher="kube-controller-manager/kube-controller-manager"}[5m]) > 0"#,
        r#"max_over_time(regscope_informer_lag_seconds{resource="pods",watcher="kube-controller-manager/kube-controller-manager"}[5m]) > 0"#,
    ] {
        wait_for(q, Duration::from_secs(90), || {
            query(&prom, q).first().map(|_| ())
        });
    }
    for q in [
        "regscope_compaction_window_revisions",
        "regscope_compaction_window_seconds",
        r#"regscope_informer_lag_window_ratio{resource="events"}"#,
    ] {
        wait_for(q, Duration::from_secs(60), || {
            query(&prom, q).first().map(|_| ())
        });
    }

    // The slow events watcher: the alert fires in Prometheus' own rule evaluation (the
    // demo's slow controller-manager pods informer may fire it too, for its own series).
    let alert = wait_for(
        "RegscopeInformerLagNearCompactionWindow firing for regscope's events watcher",
        Duration::from_secs(120),
        || {
            let (status, body) = http_get(&prom, "/api/v1/alerts", None);
            assert_eq!(status, 200);
            let v: Value = serde_json::from_str(&body).unwrap();
            v["data"]["alerts"]
                .as_array()?
                .iter()
                .find(|a| {
                    a["labels"]["alertname"] == "RegscopeInformerLagNearCompactionWindow"
                        && a["state"] == "firing"
                        && a["labels"]["resource"] == "events"
                })
                .cloned()
        },
    );
    assert_eq!(alert["labels"]["watcher"], "regscope", "{alert}");

    // 10,000 distinct writers (managedFields managers) yield at most N+1 writer series.
    rt.block_on(async {
        for i in 0..10_000 {
            let obj = format!(
                r#"{{"apiVersion":"regscope.test/v1","kind":"Gadget","metadata":{{"name":"g{i}","namespace":"default","managedFields":[{{"manager":"writer-{i}","operation":"Update","apiVersion":"regscope.test/v1"}}]}}}}"#
            );
            client
                .put(format!("/registry/regscope.test/gadgets/default/g{i}"), obj, None)
                .await
                .unwrap();
        }
    });
    let widgets = r#"regscope_writes_total{resource="gadgets.regscope.test",operation="put"}"#;
    let mut last = None;
    let deadline = Instant::now() + Duration::from_secs(90);
    while last != Some(10_000.0) {
        assert!(
            Instant::now() < deadline,
            "10,000 widget writes not in Prometheus within 90 s: {last:?}; {:?}",
            query(&prom, "up")
        );
        std::thread::sleep(Duration::from_millis(500));
        last = query(&prom, widgets).first().map(|s| s.1);
    }
    let writer_series = query(&prom, "regscope_writer_writes_total");
    assert!(
        writer_series.len() <= 21,
        "{} writer series with --writer-series 20",
        writer_series.len()
    );
    let served: f64 = writer_series.iter().map(|(_, v)| v).sum();
    assert!(
        served >= 10_000.0,
        "{served} writes in the writer series: {writer_series:?}"
    );
    assert!(
        writer_series
            .iter()
            .any(|(l, _)| l.get("manager").and_then(Value::as_str) == Some("(other)")),
        "{writer_series:?}"
    );
}

/// GET `path` over HTTPS from `addr` trusting `ca` (PEM), presenting `client` (certificate
/// and key PEM files) when given: the status line and body, or the error that ended the
/// exchange (a refused handshake surfaces at the first read under TLS 1.3).
fn https_get(
    addr: &str,
    path: &str,
    ca: &Path,
    client: Option<(&Path, &Path)>,
) -> Result<String, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let b = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let cfg = match client {
        Some((crt, key)) => b
            .with_client_auth_cert(
                CertificateDer::pem_file_iter(crt)
                    .unwrap()
                    .map(Result::unwrap)
                    .collect(),
                PrivateKeyDer::from_pem_file(key).unwrap(),
            )
            .unwrap(),
        None => b.with_no_client_auth(),
    };
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(cfg));
    runtime().block_on(async {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| e.to_string())?;
        let name = ServerName::try_from("127.0.0.1").unwrap();
        let fut = async {
            let mut tls = connector
                .connect(name, tcp)
                .await
                .map_err(|e| e.to_string())?;
            tls.write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
                .await
                .map_err(|e| e.to_string())?;
            let mut out = Vec::new();
            tls.read_to_end(&mut out).await.map_err(|e| e.to_string())?;
            Ok::<_, String>(String::from_utf8_lossy(&out).into_owned())
        };
        tokio::time::timeout(Duration::from_secs(10), fut)
            .await
            .map_err(|_| "timed out".to_string())?
    })
}

#[test]
fn record_listen_serves_https_to_known_clients_only_with_the_recordings_size() {
    require!(ETCD, OPENSSL);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    common::pki::ca(d, "ca");
    common::pki::leaf(d, "server", "ca", Some(common::pki::SERVER_EXT));
    common::pki::leaf(d, "scraper", "ca", Some(common::pki::CLIENT_EXT));
    common::pki::ca(d, "other");
    common::pki::leaf(d, "stranger", "other", Some(common::pki::CLIENT_EXT));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let etcd = rt.block_on(regscope::demo::PrivateEtcd::start()).unwrap();
    rt.block_on(async {
        let mut c = etcd.client().await.unwrap();
        for i in 0..5 {
            c.put(format!("/registry/configmaps/default/c{i}"), "{}", None)
                .await
                .unwrap();
        }
    });
    let rec = d.join("flight.rgs");
    let (child, rx) = spawn_reading_stderr(
        Command::new(BIN)
            .args(["record", "-o"])
            .arg(&rec)
            .args(["--endpoints", &etcd.endpoint(), "--listen", "127.0.0.1:0"])
            .arg("--tls-cert")
            .arg(d.join("server.crt"))
            .arg("--tls-key")
            .arg(d.join("server.key"))
            .arg("--client-ca")
            .arg(d.join("ca.crt")),
        "record",
    );
    let pid = child.id();
    let _child = Proc(child);
    let served = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("record --listen said where it serves");
        if let Some(rest) = line.strip_prefix("regscope record: serving /metrics on ") {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    let ca = d.join("ca.crt");
    let scraper = (d.join("scraper.crt"), d.join("scraper.key"));
    let body = wait_for(
        "the head revision over HTTPS",
        Duration::from_secs(30),
        || {
            let r = https_get(&served, "/metrics", &ca, Some((&scraper.0, &scraper.1))).ok()?;
            r.contains("\nregscope_etcd_head_revision ").then_some(r)
        },
    );
    assert!(
        body.starts_with("HTTP/1.0 200") || body.starts_with("HTTP/1.1 200"),
        "{body}"
    );
    assert!(body.contains("\nregscope_recording_files 1\n"), "{body}");
    let bytes: f64 = body
        .lines()
        .find_map(|l| l.strip_prefix("regscope_recording_bytes "))
        .and_then(|v| v.parse().ok())
        .expect("regscope_recording_bytes");
    assert!(bytes > 0.0, "{body}");
    // Without a certificate, with one of another CA, and in plain HTTP: no metrics.
    let stranger = (d.join("stranger.crt"), d.join("stranger.key"));
    for (what, got) in [
        (
            "no client certificate",
            https_get(&served, "/metrics", &ca, None),
        ),
        (
            "a certificate of another CA",
            https_get(&served, "/metrics", &ca, Some((&stranger.0, &stranger.1))),
        ),
    ] {
        assert!(
            got.as_ref().map_or(true, |b| !b.contains("regscope_")),
            "{what}: {got:?}"
        );
    }
    let plain = std::panic::catch_unwind(|| http_get(&served, "/metrics", None));
    assert!(
        plain.map_or(true, |(status, body)| status != 200
            && !body.contains("regscope_")),
        "plain HTTP to the HTTPS port"
    );
    // SIGTERM closes the recording cleanly; the file replays.
    // SAFETY: kill(2) on the child's pid, which `_child` has not reaped.
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
    wait_for("the recording closed", Duration::from_secs(30), || {
        rx.try_iter()
            .any(|l| l.contains("SIGTERM: wrote"))
            .then_some(())
    });
    let check = Command::new(BIN)
        .args(["replay", "--check"])
        .arg(&rec)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    drop(etcd);
}

#[test]
fn serve_waits_for_an_etcd_not_up_yet_and_stops_on_sigterm() {
    let dead = format!("http://127.0.0.1:{}", free_port());
    let (mut child, rx) = spawn_reading_stderr(
        Command::new(BIN).args(["serve", "--endpoints", &dead, "--listen", "127.0.0.1:0"]),
        "serve",
    );
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("a line on stderr");
    assert!(
        line.starts_with("regscope serve: waiting for etcd (trying every 5 s): "),
        "{line}"
    );
    // Still there after a retry: a daemon does not exit for an etcd that is not up yet.
    std::thread::sleep(Duration::from_secs(6));
    assert!(
        child.try_wait().unwrap().is_none(),
        "serve exited while waiting for etcd"
    );
    // SAFETY: kill(2) on our own child, not yet reaped.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "{status}");
    let rest: Vec<String> = rx.try_iter().collect();
    assert!(
        rest.iter()
            .any(|l| l.contains("stopped before etcd was reached")),
        "{rest:?}"
    );
}
