//! The controllers' own informer lag in `regscope snapshot --json`, against a real etcd: a
//! scripted kube-controller-manager `/metrics` (served on loopback by this test, 1.36-style
//! informer families) whose informer moves its store's resourceVersion, and the real
//! kube-controller-manager v1.34.0 capture, which has workqueues but no informer metrics.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::common::require;
use crate::common::snapshot_cli::{run, stderr};

/// A `/metrics` server on loopback answering every request with the current `body`.
pub(crate) struct Scripted {
    pub(crate) url: String,
    body: Arc<Mutex<String>>,
    stop: Arc<AtomicBool>,
}

impl Scripted {
    pub(crate) fn start() -> Scripted {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let url = format!("http://{}/metrics", l.local_addr().unwrap());
        let body = Arc::new(Mutex::new(String::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (b, st) = (body.clone(), stop.clone());
        std::thread::spawn(move || {
            while !st.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((mut c, _)) => {
                        c.set_nonblocking(false).unwrap();
                        c.set_read_timeout(Some(std::time::Duration::from_secs(2)))
                            .unwrap();
                        let mut buf = [0u8; 4096];
                        let _ = c.read(&mut buf);
                        let text = b.lock().unwrap().clone();
                        let _ = write!(
                            c,
                            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                            text.len()
                        );
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            }
        });
        Scripted { url, body, stop }
    }

    /// Answers with `text` from now on.
    pub(crate) fn serve_text(&self, text: String) {
        *self.body.lock().unwrap() = text;
    }

    pub(crate) fn serve_rv(&self, rv: i64) {
        *self.body.lock().unwrap() = format!(
            "# TYPE kubernetes_build_info gauge\n\
             kubernetes_build_info{{git_version=\"v1.36.0\",major=\"1\",minor=\"36\"}} 1\n\
             # HELP informer_store_resource_version [ALPHA] The 15 least significant digits of the resource version of the store.\n\
             # TYPE informer_store_resource_version gauge\n\
             informer_store_resource_version{{group=\"\",name=\"shared\",resource=\"configmaps\",version=\"v1\"}} {rv}\n\
             # TYPE informer_queued_items gauge\n\
             informer_queued_items{{group=\"\",name=\"shared\",resource=\"configmaps\",version=\"v1\"}} 7\n\
             # TYPE workqueue_depth gauge\n\
             workqueue_depth{{name=\"root_ca_cert_publisher\"}} 3\n\
             # TYPE workqueue_adds_total counter\n\
             workqueue_adds_total{{name=\"root_ca_cert_publisher\"}} 40\n\
             # TYPE workqueue_retries_total counter\n\
             workqueue_retries_total{{name=\"root_ca_cert_publisher\"}} 2\n"
        );
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn snapshot(endpoint: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "snapshot",
        "--json",
        "--endpoints",
        endpoint,
        "--informers",
        "none",
    ];
    args.extend_from_slice(extra);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn a_scripted_controller_manager_informer_moves_its_resource_version() {
    require!(ETCD);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let etcd = rt
        .block_on(regscope::demo::PrivateEtcd::start())
        .expect("etcd");
    let endpoint = etcd.endpoint();
    let head = rt.block_on(async {
        let mut c = etcd.client().await.expect("client");
        let mut rev = 0;
        for i in 0..20 {
            let r = c
                .put(format!("/registry/configmaps/default/cm{i}"), "{}", None)
                .await
                .unwrap();
            rev = r.header().unwrap().revision();
        }
        rev
    });
    let kcm = Scripted::start();
    // The informer's store is 12 revisions behind etcd's head.
    kcm.serve_rv(head - 12);
    let v = snapshot(&endpoint, &["--controller-manager-metrics-url", &kcm.url]);
    let c = &v["controllers"];
    assert_eq!(
        c["components"][0]["component"], "kube-controller-manager",
        "{c}"
    );
    assert_eq!(c["components"][0]["status"]["version"], "v1.36.0", "{c}");
    assert_eq!(
        c["components"][0]["informer_metrics"]["state"], "exposed",
        "{c}"
    );
    let row = &c["informers"][0];
    assert_eq!(row["name"], "shared", "{row}");
    assert_eq!(row["resource"], "configmaps", "{row}");
    assert_eq!(row["resource_version"], (head - 12) as f64, "{row}");
    assert_eq!(row["behind_head_revisions"], 12, "{row}");
    // A snapshot lists (no event log): counted from the 12 configmaps written since.
    assert_eq!(row["events_behind"], 12, "{row}");
    assert_eq!(row["events_behind_from"], "keys_lower_bound", "{row}");
    assert_eq!(row["lag_revisions"], 12, "{row}");
    assert_eq!(row["queued_items"], 7.0, "{row}");
    let q = &c["workqueues"][0];
    assert_eq!(q["name"], "root_ca_cert_publisher", "{q}");
    assert_eq!(
        (q["depth"].as_f64(), q["retries_total"].as_f64()),
        (Some(3.0), Some(2.0)),
        "{q}"
    );
    // The signal the exporter serves carries the component and informer as its watcher.
    let lag = &v["signals"]["informer_lag_revisions"];
    assert!(
        lag.to_string().contains("kube-controller-manager/shared"),
        "{lag}"
    );

    // The informer catches up: its store at etcd's head.
    kcm.serve_rv(head);
    let v = snapshot(&endpoint, &["--controller-manager-metrics-url", &kcm.url]);
    let row = &v["controllers"]["informers"][0];
    assert_eq!(row["behind_head_revisions"], 0, "{row}");
    assert_eq!(row["events_behind"], 0, "{row}");
    // At the list's revision: the event log covers everything since (nothing), so the
    // informer is known to be caught up.
    assert_eq!(row["events_behind_from"], "event_log", "{row}");
    assert_eq!(row["lag_revisions"], 0, "{row}");
    assert_eq!(row["risk"], "ok", "{row}");

    // A secret written after the informer's store: the snapshot lists after it, so what
    // the informer missed is counted from the configmaps' keys. None was written since,
    // but a deleted configmap would not show that way: no lag is claimed.
    let other = rt.block_on(async {
        let mut c = etcd.client().await.expect("client");
        c.put("/registry/secrets/default/s1", "{}", None)
            .await
            .unwrap()
            .header()
            .unwrap()
            .revision()
    });
    kcm.serve_rv(other - 1);
    let v = snapshot(&endpoint, &["--controller-manager-metrics-url", &kcm.url]);
    let row = &v["controllers"]["informers"][0];
    assert_eq!(row["behind_head_revisions"], 1, "{row}");
    assert_eq!(row["events_behind"], 0, "{row}");
    assert_eq!(row["events_behind_from"], "keys_lower_bound", "{row}");
    assert!(row["lag_revisions"].is_null(), "{row}");
    assert_eq!(row["risk"], "measuring", "{row}");
    drop(etcd);
}

#[test]
fn a_v134_controller_manager_has_workqueues_and_says_why_no_informers() {
    require!(ETCD, TESTDATA);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let etcd = rt
        .block_on(regscope::demo::PrivateEtcd::start())
        .expect("etcd");
    let capture = crate::common::fixtures::testdata()
        .join("controlplane-metrics/kube-controller-manager-v1.34.0.prom");
    let capture = capture.to_str().unwrap();
    let v = snapshot(
        &etcd.endpoint(),
        &["--controller-manager-metrics-file", capture],
    );
    let c = &v["controllers"];
    let comp = &c["components"][0];
    assert_eq!(
        comp["informer_metrics"]["state"], "not_in_version",
        "{comp}"
    );
    assert_eq!(comp["informer_metrics"]["version"], "v1.34.0", "{comp}");
    assert!(c["informers"].as_array().unwrap().is_empty(), "{c}");
    // One row per workqueue_depth series of the capture.
    let queues = c["workqueues"].as_array().unwrap();
    assert_eq!(queues.len(), 53, "{c}");
    assert!(queues
        .iter()
        .any(|q| q["name"] == "garbage_collector_graph_changes"));
    drop(etcd);
}

/// The default way to a component's `/metrics` on the node: the kubeconfig's client
/// certificate, sent to an HTTPS endpoint on loopback whose certificate regscope does not
/// verify unless `--controllers-cacert` is given (components serve a self-signed one by
/// default). The endpoint is a real HTTPS server that requires a client certificate
/// (`regscope serve --client-ca`); the kubeconfig's CA is another one, so only the
/// loopback rule lets the first scrape through; with `--controllers-cacert` the server's
/// CA verifies, another CA is refused.
#[test]
fn the_kubeconfig_client_certificate_reaches_a_loopback_https_component() {
    require!(ETCD, OPENSSL);
    use crate::common::pki;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    pki::ca(d, "ca");
    pki::leaf(d, "server", "ca", Some(pki::SERVER_EXT));
    pki::leaf(d, "scraper", "ca", Some(pki::CLIENT_EXT));
    pki::ca(d, "other");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let etcd = rt
        .block_on(regscope::demo::PrivateEtcd::start())
        .expect("etcd");
    let endpoint = etcd.endpoint();
    let mut serve = std::process::Command::new(env!("CARGO_BIN_EXE_regscope"))
        .args(["serve", "--endpoints", &endpoint, "--informers", "none"])
        .args(["--listen", "127.0.0.1:0", "--tls-cert"])
        .arg(d.join("server.crt"))
        .arg("--tls-key")
        .arg(d.join("server.key"))
        .arg("--client-ca")
        .arg(d.join("ca.crt"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("regscope serve");
    let mut err = std::io::BufReader::new(serve.stderr.take().unwrap());
    let addr = loop {
        let mut line = String::new();
        let n = std::io::BufRead::read_line(&mut err, &mut line).unwrap();
        assert!(n > 0, "serve ended before saying where it serves");
        if let Some(rest) = line.strip_prefix("regscope serve: serving /metrics on ") {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let kc = d.join("admin.conf");
    std::fs::write(
        &kc,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:1\n    certificate-authority: {}\ncontexts:\n- name: c\n  context:\n    cluster: k\n    user: u\nusers:\n- name: u\n  user:\n    client-certificate: {}\n    client-key: {}\n",
            d.join("other.crt").display(),
            d.join("scraper.crt").display(),
            d.join("scraper.key").display()
        ),
    )
    .unwrap();
    let url = format!("https://{addr}/metrics");
    let component = |extra: &[&str]| -> Value {
        let kc = kc.to_str().unwrap();
        let mut args = vec!["--kubeconfig", kc, "--controller-manager-metrics-url", &url];
        args.extend_from_slice(extra);
        let v = snapshot(&endpoint, &args);
        v["controllers"]["components"][0]["status"].clone()
    };
    // Unverified on loopback, the client certificate accepted.
    let st = component(&[]);
    assert_eq!(st["good_scrapes"], 1, "{st:#}");
    assert!(st["last_error"].is_null(), "{st:#}");
    // Verified against the server's CA.
    let ca = d.join("ca.crt");
    let st = component(&["--controllers-cacert", ca.to_str().unwrap()]);
    assert_eq!(st["good_scrapes"], 1, "{st:#}");
    // Another CA: refused.
    let other = d.join("other.crt");
    let st = component(&["--controllers-cacert", other.to_str().unwrap()]);
    assert_eq!(st["good_scrapes"], 0, "{st:#}");
    assert!(st["last_error"].is_string(), "{st:#}");
    let _ = serve.kill();
    let _ = serve.wait();
    drop(etcd);
}
