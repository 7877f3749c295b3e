//! Node discovery and `regscope doctor` against a kubeadm-like tree built under a temp dir
//! (`--root`): static pod manifests, certificates made with openssl, an encryption config,
//! a TLS three-member etcd on loopback and a separate TLS etcd for Events
//! (`--etcd-servers-overrides`). Then broken variants of the tree, each with its verdict.

use crate::common;
use crate::common::require;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{free_port, pki};
use regscope::source::EtcdOptions;

const BIN: &str = env!("CARGO_BIN_EXE_regscope");

/// etcd members started with client TLS (peers in the clear), killed on drop.
struct Members {
    children: Vec<Child>,
    clients: Vec<String>,
    metrics: Vec<String>,
}

impl Drop for Members {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Starts `n` members of one cluster serving `server.crt` (client auth against `ca.crt`),
/// each with a plain-HTTP metrics URL.
fn start_cluster(etcd: &Path, data: &Path, pki_dir: &Path, name: &str, n: usize) -> Members {
    let ports: Vec<(u16, u16, u16)> = (0..n)
        .map(|_| (free_port(), free_port(), free_port()))
        .collect();
    let initial: Vec<String> = ports
        .iter()
        .enumerate()
        .map(|(i, (_, p, _))| format!("{name}{i}=http://127.0.0.1:{p}"))
        .collect();
    let p = |f: &str| pki_dir.join(f).display().to_string();
    let mut m = Members {
        children: Vec::new(),
        clients: Vec::new(),
        metrics: Vec::new(),
    };
    for (i, (c, peer, met)) in ports.iter().enumerate() {
        let client = format!("https://127.0.0.1:{c}");
        let metrics = format!("http://127.0.0.1:{met}");
        let child = Command::new(etcd)
            .args([
                "--name",
                &format!("{name}{i}"),
                "--data-dir",
                &data.join(format!("{name}{i}")).display().to_string(),
                "--listen-client-urls",
                &client,
                "--advertise-client-urls",
                &client,
                "--listen-peer-urls",
                &format!("http://127.0.0.1:{peer}"),
                "--initial-advertise-peer-urls",
                &format!("http://127.0.0.1:{peer}"),
                "--initial-cluster",
                &initial.join(","),
                "--initial-cluster-token",
                name,
                "--listen-metrics-urls",
                &metrics,
                "--cert-file",
                &p("server.crt"),
                "--key-file",
                &p("server.key"),
                "--trusted-ca-file",
                &p("ca.crt"),
                "--client-cert-auth",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn etcd");
        m.children.push(child);
        m.clients.push(client);
        m.metrics.push(metrics);
    }
    m
}

/// The test's own client (it writes the keys doctor and snapshot then read).
fn client_options(pki_dir: &Path, endpoint: &str) -> EtcdOptions {
    EtcdOptions {
        endpoints: vec![endpoint.to_string()],
        cacert: Some(pki_dir.join("ca.crt")),
        cert: Some(pki_dir.join("client.crt")),
        key: Some(pki_dir.join("client.key")),
        ..Default::default()
    }
}

/// Waits until every member serves with a leader; `false` when a member exited first
/// (e.g. "bind: address already in use": a port from `free_port` taken by another
/// process before etcd bound it).
async fn wait_serving(m: &mut Members, pki_dir: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    for ep in m.clients.clone() {
        let opts = client_options(pki_dir, &ep);
        loop {
            if let Ok(c) = opts.connect_info(Duration::from_secs(2)).await {
                if c.status.leader != 0 {
                    break;
                }
            }
            for ch in &mut m.children {
                if ch.try_wait().ok().flatten().is_some() {
                    return false;
                }
            }
            assert!(Instant::now() < deadline, "etcd {ep} did not come up");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    true
}

/// A cluster of `n` members that serves: started again on new ports and a new data dir
/// (up to 5 times) when a member exits at start.
async fn serving_cluster(
    etcd: &Path,
    data: &Path,
    pki_dir: &Path,
    name: &str,
    n: usize,
) -> Members {
    for attempt in 1..=5 {
        let dir = data.join(format!("{name}-attempt{attempt}"));
        let mut m = start_cluster(etcd, &dir, pki_dir, name, n);
        if wait_serving(&mut m, pki_dir).await {
            return m;
        }
        eprintln!("{name}: a member exited at start (attempt {attempt}); starting again");
    }
    panic!("{name}: a member exited at start five times");
}

fn write(root: &Path, path: &str, text: &str) {
    let p = root.join(path.trim_start_matches('/'));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

const ENC: &str = "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aescbc: {keys: [{name: key1, secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=}]}
      - identity: {}
";

fn apiserver_manifest(servers: &[String], events: &[String]) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - name: kube-apiserver
    command:
    - kube-apiserver
    - --etcd-servers={}
    - --etcd-servers-overrides=/events#{}
    - --etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt
    - --etcd-certfile=/etc/kubernetes/pki/apiserver-etcd-client.crt
    - --etcd-keyfile=/etc/kubernetes/pki/apiserver-etcd-client.key
    - --encryption-provider-config=/etc/kubernetes/enc/enc.yaml
    - --etcd-compaction-interval=5m
    - --watch-cache-sizes=secrets#0
    volumeMounts:
    - name: k8s-certs
      mountPath: /etc/kubernetes/pki
  volumes:
  - name: k8s-certs
    hostPath:
      path: /etc/kubernetes/pki
",
        servers.join(","),
        events.join(";")
    )
}

/// The smallest kube-apiserver manifest that points discovery at `endpoint` (no TLS).
fn write_plain_apiserver(root: &Path, endpoint: &str) {
    write(
        root,
        "/etc/kubernetes/manifests/kube-apiserver.yaml",
        &format!(
            "spec:\n  containers:\n  - name: kube-apiserver\n    command: [kube-apiserver, --etcd-servers={endpoint}]\n"
        ),
    );
}

/// A kubeadm tree for these clusters under `root`.
fn build_tree(root: &Path, pki_dir: &Path, main: &Members, events: &Members) {
    let pk = root.join("etc/kubernetes/pki");
    std::fs::create_dir_all(pk.join("etcd")).unwrap();
    std::fs::copy(pki_dir.join("ca.crt"), pk.join("etcd/ca.crt")).unwrap();
    std::fs::copy(
        pki_dir.join("client.crt"),
        pk.join("apiserver-etcd-client.crt"),
    )
    .unwrap();
    std::fs::copy(
        pki_dir.join("client.key"),
        pk.join("apiserver-etcd-client.key"),
    )
    .unwrap();
    write(root, "/etc/kubernetes/enc/enc.yaml", ENC);
    write(
        root,
        "/etc/kubernetes/manifests/kube-apiserver.yaml",
        &apiserver_manifest(&main.clients, &events.clients),
    );
    write(
        root,
        "/etc/kubernetes/manifests/etcd.yaml",
        &format!(
            "apiVersion: v1
kind: Pod
spec:
  containers:
  - name: etcd
    command: [etcd, --data-dir=/var/lib/etcd, --listen-metrics-urls={}, --quota-backend-bytes=2147483648]
",
            main.metrics[0]
        ),
    );
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .env_remove("ETCDCTL_ENDPOINTS")
        .env_remove("ETCDCTL_CACERT")
        .env_remove("ETCDCTL_CERT")
        .env_remove("ETCDCTL_KEY")
        .env("KUBECONFIG", "/nonexistent")
        .output()
        .expect("run regscope");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn doctor(root: &Path) -> (i32, serde_json::Value, String) {
    let r = root.display().to_string();
    let (code, out, err) = run(&["doctor", "--json", "--root", &r, "--informers", "none"]);
    let v: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("doctor JSON: {e}: {out}\n{err}"));
    (code, v, err)
}

fn failed(v: &serde_json::Value) -> Vec<(String, String, String)> {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["ok"] == false)
        .map(|c| {
            (
                c["check"].as_str().unwrap_or_default().to_string(),
                c["detail"].as_str().unwrap_or_default().to_string(),
                c["advice"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubeadm_tree_is_found_checked_and_used_and_broken_variants_are_named() {
    require!(ETCD, OPENSSL);
    let etcd = regscope::demo::etcd_server::find_on_path("etcd").expect("etcd, required above");
    let dir = tempfile::tempdir().unwrap();
    let pki_dir = dir.path().join("pki");
    std::fs::create_dir(&pki_dir).unwrap();
    pki::ca(&pki_dir, "ca");
    pki::ca(&pki_dir, "other-ca");
    pki::leaf(&pki_dir, "server", "ca", Some(pki::SERVER_EXT));
    pki::leaf(&pki_dir, "client", "ca", Some(pki::CLIENT_EXT));
    pki::leaf(&pki_dir, "v1server", "ca", None);
    let data = dir.path().join("data");
    let main = serving_cluster(&etcd, &data, &pki_dir, "main", 3).await;
    let mut events = serving_cluster(&etcd, &data, &pki_dir, "events", 1).await;
    // Something to list (written by the test, not by regscope).
    {
        let opts = client_options(&pki_dir, &main.clients[0]);
        let (mut c, _) = opts.connect(Duration::from_secs(5)).await.unwrap();
        c.put("/registry/configmaps/default/cm1", "x", None)
            .await
            .unwrap();
        // As kube-apiserver writes a Secret with the aescbc key "key1" (the ciphertext does
        // not matter here: doctor reads the provider and key name).
        c.put(
            "/registry/secrets/default/s1",
            &b"k8s:enc:aescbc:v1:key1:\x01\x02\x03"[..],
            None,
        )
        .await
        .unwrap();
    }
    let root = dir.path().join("node");
    build_tree(&root, &pki_dir, &main, &events);
    let r = root.display().to_string();

    // All is well: every fact found, every check passes.
    let (code, v, err) = doctor(&root);
    assert_eq!(code, 0, "{v:#}\n{err}");
    assert_eq!(v["layout"], "kubeadm");
    assert_eq!(v["ok"], true);
    let checks = v["checks"].as_array().unwrap();
    let count = |kind: &str| checks.iter().filter(|c| c["check"] == kind).count();
    assert_eq!(count("etcd member"), 3, "{v:#}");
    assert_eq!(count("etcd for /events"), 1, "{v:#}");
    assert_eq!(count("etcd metrics"), 1);
    assert_eq!(count("encryption config"), 1);
    assert_eq!(count("encrypted values"), 1, "{v:#}");
    // The prefix the node's apiserver stores under holds the two keys written above.
    let prefix = checks
        .iter()
        .find(|c| c["check"] == "prefix")
        .expect("prefix check");
    assert_eq!(prefix["target"], "/registry/", "{prefix:#}");
    assert_eq!(prefix["detail"], "2 keys", "{prefix:#}");
    let leaders = checks
        .iter()
        .filter(|c| c["detail"].as_str().unwrap_or("").contains("leader,"))
        .count();
    assert_eq!(leaders, 2, "one leader per cluster: {v:#}");
    let facts = v["facts"].as_array().unwrap();
    let fact = |name: &str| {
        facts
            .iter()
            .find(|f| f["name"] == name)
            .unwrap_or_else(|| panic!("fact {name}: {v:#}"))
            .clone()
    };
    assert_eq!(fact("etcd endpoints")["value"], main.clients.join(","));
    assert_eq!(fact("etcd endpoints")["flag"], "--etcd-servers");
    assert_eq!(
        fact("etcd endpoints")["file"],
        "/etc/kubernetes/manifests/kube-apiserver.yaml"
    );
    assert_eq!(fact("etcd quota (bytes)")["value"], "2147483648");
    assert_eq!(fact("compaction interval")["value"], "5m");

    // The text report says the same for people.
    let (code, text, _) = run(&["doctor", "--root", &r, "--informers", "none"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.starts_with("Found a kubeadm control-plane node under"),
        "{text}"
    );
    // No kubeconfig in the tree: the apiserver side is said to be not checked.
    assert!(
        text.contains("All checks made passed (1 not checked)."),
        "{text}"
    );
    assert!(text.contains("skip  apiserver not checked"), "{text}");
    assert!(!text.contains("FAIL"), "{text}");

    // A prefix nothing is stored under fails, and says what etcd holds instead.
    let (code, out, err) = run(&[
        "doctor",
        "--json",
        "--root",
        &r,
        "--informers",
        "none",
        "--prefix",
        "/nope",
    ]);
    assert_eq!(code, 1, "{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let f = failed(&v);
    assert!(
        f.iter().any(|(k, d, a)| k == "prefix"
            && d.contains("no keys under /nope/")
            && d.contains("/registry")
            && a.contains("--prefix")),
        "{f:#?}"
    );

    // snapshot uses what was found: the members, the certificates, the prefix.
    // Three Events in the events etcd (written by the test, not by regscope).
    let events_opts = client_options(&pki_dir, &events.clients[0]);
    let (mut ec, _) = events_opts.connect(Duration::from_secs(5)).await.unwrap();
    for i in 0..3 {
        ec.put(format!("/registry/events/default/e{i}"), "x", None)
            .await
            .unwrap();
    }
    let (code, out, err) = run(&["snapshot", "--json", "--root", &r, "--informers", "none"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let snap: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(snap["keys"], 2, "{snap:#}");
    // The events etcd is its own cluster, with its own revisions and keys.
    let other = &snap["other_clusters"][0];
    assert_eq!(other["resources"], "/events", "{snap:#}");
    assert_eq!(other["up"], true, "{snap:#}");
    assert_eq!(other["keys"], 3, "{snap:#}");
    assert_eq!(other["revision"], 4, "{snap:#}");
    assert_eq!(other["endpoint"], events.clients[0].as_str(), "{snap:#}");
    assert_eq!(
        snap["apiserver_flags"]["flags"]["--watch-cache-sizes"], "secrets#0",
        "{snap:#}"
    );
    assert_eq!(
        snap["apiserver_flags"]["file"],
        "/etc/kubernetes/manifests/kube-apiserver.yaml"
    );
    // Metric files alone are read offline, and it is said that the node's etcd is not.
    let metrics = dir.path().join("apiserver.metrics");
    std::fs::write(&metrics, "# TYPE up gauge\nup 1\n").unwrap();
    let (_, out, err) = run(&[
        "snapshot",
        "--json",
        "--root",
        &r,
        "--informers",
        "none",
        "--apiserver-metrics-file",
        &metrics.display().to_string(),
    ]);
    assert!(
        err.contains("metric files given without --endpoints"),
        "{out}\n{err}"
    );
    // A flag overrides only what it names: another member, still with the node's files.
    let (code, out, err) = run(&[
        "snapshot",
        "--json",
        "--root",
        &r,
        "--informers",
        "none",
        "--endpoints",
        &main.clients[2],
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        err.contains("CA, client certificate and key from the kubeadm node's files"),
        "{err}"
    );

    // Broken: the key file is missing.
    let key = root.join("etc/kubernetes/pki/apiserver-etcd-client.key");
    std::fs::rename(&key, key.with_extension("moved")).unwrap();
    let (code, v, _) = doctor(&root);
    assert_eq!(code, 1);
    let f = failed(&v);
    assert!(
        f.iter()
            .any(|(k, d, a)| k == "file" && d.contains("cannot read") && a.contains("sudo")),
        "{f:#?}"
    );
    std::fs::rename(key.with_extension("moved"), &key).unwrap();

    // Broken: the CA is another one than signed etcd's certificate.
    let ca = root.join("etc/kubernetes/pki/etcd/ca.crt");
    std::fs::copy(pki_dir.join("other-ca.crt"), &ca).unwrap();
    let (code, v, _) = doctor(&root);
    assert_eq!(code, 1);
    let f = failed(&v);
    let members: Vec<_> = f.iter().filter(|(k, _, _)| k == "etcd member").collect();
    assert_eq!(members.len(), 3, "{f:#?}");
    assert!(
        members.iter().all(|(_, d, _)| d.contains("a different CA")),
        "{f:#?}"
    );
    std::fs::copy(pki_dir.join("ca.crt"), &ca).unwrap();

    // Broken: a typo in the apiserver manifest.
    let manifest = root.join("etc/kubernetes/manifests/kube-apiserver.yaml");
    let good = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, good.replace("  containers:", "  containers: [")).unwrap();
    let (code, v, _) = doctor(&root);
    assert_eq!(code, 1);
    let f = failed(&v);
    assert!(
        f.iter()
            .any(|(k, d, _)| k == "discovery" && d.contains("not valid YAML")),
        "{f:#?}"
    );
    std::fs::write(&manifest, &good).unwrap();

    // Broken: an encryption config that cannot be used.
    write(&root, "/etc/kubernetes/enc/enc.yaml", "kind: [\n");
    let (code, v, _) = doctor(&root);
    assert_eq!(code, 1);
    let f = failed(&v);
    assert!(f.iter().any(|(k, _, _)| k == "encryption config"), "{f:#?}");
    assert_eq!(f.len(), 1, "only the encryption config: {f:#?}");
    write(&root, "/etc/kubernetes/enc/enc.yaml", ENC);
    assert_eq!(doctor(&root).0, 0, "repaired");

    // Stored values the config cannot read, or left in plaintext while it encrypts.
    let client_opts = client_options(&pki_dir, &main.clients[0]);
    let (mut c, _) = client_opts.connect(Duration::from_secs(5)).await.unwrap();
    c.put("/registry/secrets/default/s2", "plain", None)
        .await
        .unwrap();
    let (code, v, _) = doctor(&root);
    assert_eq!(code, 1);
    let f = failed(&v);
    assert!(
        f.iter().any(|(k, d, a)| k == "encrypted values"
            && d.contains("1 in plaintext")
            && a.contains("kubectl replace")),
        "{f:#?}"
    );
    c.put(
        "/registry/secrets/default/s2",
        &b"k8s:enc:aescbc:v1:oldkey:\x01"[..],
        None,
    )
    .await
    .unwrap();
    let (code, v, _) = doctor(&root);
    assert_eq!(code, 1);
    let f = failed(&v);
    assert!(
        f.iter()
            .any(|(k, d, _)| k == "encrypted values" && d.contains("aescbc:oldkey")),
        "{f:#?}"
    );
    drop(c);

    // The console watches the events etcd beside the main one: its keys and revision move
    // with the writes, and when it stops the alert row says so.
    if common::needs::met(&[common::needs::TMUX]) {
        let cmd = format!(
            "env -u ETCDCTL_ENDPOINTS -u ETCDCTL_CACERT -u ETCDCTL_CERT -u ETCDCTL_KEY \
             KUBECONFIG=/nonexistent {BIN} --root {r} --informers none"
        );
        let version = events_opts
            .connect_info(Duration::from_secs(5))
            .await
            .unwrap()
            .version;
        let t = common::tmux::Tmux::start(120, 40, &cmd);
        t.wait_for("the events etcd", Duration::from_secs(30), |s| {
            s.contains("Other etcd clusters") && s.contains(&format!("events up · etcd {version}"))
        });
        t.wait_for("its first keys", Duration::from_secs(10), |s| {
            s.contains("rev 4 (") && s.contains("keys 3 ")
        });
        for i in 3..8 {
            ec.put(format!("/registry/events/default/e{i}"), "x", None)
                .await
                .unwrap();
        }
        ec.delete("/registry/events/default/e0", None)
            .await
            .unwrap();
        t.wait_for("the writes counted", Duration::from_secs(15), |s| {
            s.contains("rev 10 (") && s.contains("keys 7 ")
        });
        for ch in &mut events.children {
            let _ = ch.kill();
            let _ = ch.wait();
        }
        t.wait_for("the alert", Duration::from_secs(30), |s| {
            s.contains("⚠ etcd for events unreachable since") && s.contains("events DOWN since")
        });
        t.keys(&["q"]);
        t.wait_for("the console to quit", Duration::from_secs(10), |_| {
            t.pane_dead()
        });
    }
    drop(ec);

    // An X.509 v1 server certificate (openssl x509 -req without extensions): named as such
    // instead of "transport error".
    drop(main);
    drop(events);
    std::fs::copy(pki_dir.join("v1server.crt"), pki_dir.join("server.crt")).unwrap();
    std::fs::copy(pki_dir.join("v1server.key"), pki_dir.join("server.key")).unwrap();
    let v1 = start_cluster(&etcd, &dir.path().join("data-v1"), &pki_dir, "v1", 1);
    let p = |f: &str| pki_dir.join(f).display().to_string();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let (root_s, ca_s, cert_s, key_s) = (
        empty.display().to_string(),
        p("ca.crt"),
        p("client.crt"),
        p("client.key"),
    );
    let with_v1 = |cmd: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
        for x in [
            "--root",
            &root_s,
            "--endpoints",
            &v1.clients[0],
            "--cacert",
            &ca_s,
            "--cert",
            &cert_s,
            "--key",
            &key_s,
        ] {
            a.push(x.to_string());
        }
        a
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let f = loop {
        let args = with_v1(&["doctor", "--json"]);
        let (code, out, err) = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(code, 1, "{out}\n{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let f = failed(&v);
        if f.iter().any(|(_, d, _)| d.contains("X.509 v1")) || Instant::now() > deadline {
            break f;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert!(
        f.iter()
            .any(|(k, d, _)| k == "etcd member" && d.contains("X.509 v1") && d.contains("etcdctl")),
        "{f:#?}"
    );
    // snapshot says the same, instead of rustls's "transport error" alone.
    let args = with_v1(&["snapshot", "--json"]);
    let (code, _, err) = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("because etcd's server certificate is an X.509 v1"),
        "{err}"
    );
}

/// `regscope doctor` names the known watch bugs of the etcd it reaches (etcd-io/etcd#15220
/// for Debian's 3.4.23 and for 3.5.1, both before its fix) and reports the progress notify
/// interval and feature gates the node's etcd manifest gives (etcd 3.6 spelling).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_names_known_etcd_watch_bugs_and_the_progress_notify_interval() {
    require!(ETCD);
    let e = regscope::demo::PrivateEtcd::start()
        .await
        .expect("start etcd");
    let mut c = e.client().await.expect("client");
    // Something under the prefix, so that the prefix check passes (written by the test).
    c.put("/registry/configmaps/default/cm1", "x", None)
        .await
        .unwrap();
    let version = c.status().await.expect("status").version().to_string();
    if let Ok(want) = std::env::var("REGSCOPE_TEST_ETCD_VERSION") {
        assert_eq!(version, want, "the etcd under test");
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_plain_apiserver(root, &e.endpoint());
    write(
        root,
        "/etc/kubernetes/manifests/etcd.yaml",
        "spec:\n  containers:\n  - name: etcd\n    command: [etcd, --watch-progress-notify-interval=5s, --feature-gates=InitialCorruptCheck=true]\n",
    );
    let (code, v, err) = doctor(root);
    let checks = v["checks"].as_array().unwrap();
    // The manifest spells the flags as etcd 3.6 does: a member before 3.6 would refuse
    // them, and doctor says so (the only failures).
    let spelling: Vec<&serde_json::Value> = checks
        .iter()
        .filter(|c| c["check"] == "etcd flag spelling")
        .collect();
    let before_36 = regscope::metrics::concepts::minor_version(&version).unwrap() < (3, 6);
    if before_36 {
        assert_eq!(code, 1, "{v:#}\n{err}");
        let text = serde_json::to_string(&spelling).unwrap();
        assert!(
            text.contains(&format!(
                "etcd {version} does not know --watch-progress-notify-interval"
            )) && text.contains("--feature-gates"),
            "{text}"
        );
        assert_eq!(
            checks.iter().filter(|c| c["ok"] == false).count(),
            spelling.len(),
            "{v:#}"
        );
    } else {
        assert_eq!(code, 0, "{v:#}\n{err}");
        assert!(spelling.is_empty(), "{v:#}");
    }
    let bugs: Vec<&serde_json::Value> = checks
        .iter()
        .filter(|c| c["check"] == "etcd known bug")
        .collect();
    let expected = regscope::node::etcd_bugs::known_watch_bugs(&version);
    assert_eq!(bugs.len(), expected.len(), "etcd {version}: {v:#}");
    let names_15220 = expected.iter().any(|b| b.id == "etcd-io/etcd#15220");
    if version == "3.4.23" || version == "3.5.1" {
        assert!(
            names_15220,
            "etcd {version} is before the fix of etcd-io/etcd#15220"
        );
    }
    if names_15220 {
        let progress = bugs
            .iter()
            .find(|c| {
                c["detail"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("etcd-io/etcd#15220")
            })
            .unwrap_or_else(|| panic!("etcd {version} names etcd-io/etcd#15220: {v:#}"));
        let detail = progress["detail"].as_str().unwrap();
        assert!(
            detail.starts_with(&format!("etcd {version} has")),
            "{detail}"
        );
        assert!(
            detail.contains("3.4 before 3.4.25, 3.5.0–3.5.7"),
            "{detail}"
        );
        assert!(
            detail.contains("regscope takes a progress notification only"),
            "{detail}"
        );
        assert_eq!(progress["target"], e.endpoint().as_str());
        assert_eq!(progress["ok"], true, "a server's bug, not the node's fault");
        assert!(
            progress["advice"].as_str().unwrap().contains("3.4.25"),
            "{progress:#}"
        );
    }
    if expected.is_empty() {
        assert!(
            checks.iter().any(|c| c["check"] == "etcd known bugs"),
            "{v:#}"
        );
    }
    let find = |kind: &str| {
        checks
            .iter()
            .find(|c| c["check"] == kind)
            .unwrap_or_else(|| panic!("{kind}: {v:#}"))
    };
    let progress = find("etcd progress notify");
    assert_eq!(progress["target"], "/etc/kubernetes/manifests/etcd.yaml");
    assert!(
        progress["detail"]
            .as_str()
            .unwrap()
            .starts_with("every 5s (--watch-progress-notify-interval)"),
        "{progress:#}"
    );
    assert_eq!(
        find("etcd feature gates")["detail"],
        "InitialCorruptCheck=true (--feature-gates)"
    );
    assert_eq!(v["etcd_watch_progress_notify_interval"], "5s");
    assert_eq!(v["etcd_feature_gates"][0]["gate"], "InitialCorruptCheck");
    // The text report names the bug too.
    let r = root.display().to_string();
    let (_, text, _) = run(&["doctor", "--root", &r, "--informers", "none"]);
    for b in &expected {
        assert!(text.contains(b.id), "{text}");
    }
}

/// doctor checks kube-controller-manager's and kube-scheduler's `/metrics`: one found in
/// the node's manifests (https on its secure port, no credentials for it here: failed,
/// saying what to give), and ones given by flag: a 1.36 controller manager with informer
/// metrics, and the real v1.34.0 scheduler capture, which has none (said why).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_the_controllers_metrics() {
    require!(ETCD, TESTDATA);
    let e = regscope::demo::PrivateEtcd::start()
        .await
        .expect("start etcd");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_plain_apiserver(root, &e.endpoint());
    write(
        root,
        "/etc/kubernetes/manifests/kube-controller-manager.yaml",
        "spec:\n  containers:\n  - name: kube-controller-manager\n    command: [kube-controller-manager, --secure-port=10999]\n",
    );
    let (_, v, _) = doctor(root);
    let checks = v["checks"].as_array().unwrap();
    let kcm = checks
        .iter()
        .find(|c| c["check"] == "kube-controller-manager metrics")
        .unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(kcm["target"], "https://127.0.0.1:10999/metrics", "{kcm:#}");
    assert_eq!(kcm["ok"], false, "{kcm:#}");
    assert!(
        kcm["detail"].as_str().unwrap().contains("no credentials"),
        "{kcm:#}"
    );

    let cm = crate::controllers::Scripted::start();
    cm.serve_rv(100);
    let sched = crate::controllers::Scripted::start();
    let capture = crate::common::fixtures::testdata()
        .join("controlplane-metrics/kube-scheduler-v1.34.0.prom");
    sched.serve_text(std::fs::read_to_string(capture).unwrap());
    let r = root.display().to_string();
    let (_, out, err) = run(&[
        "doctor",
        "--json",
        "--root",
        &r,
        "--informers",
        "none",
        "--controller-manager-metrics-url",
        &cm.url,
        "--scheduler-metrics-url",
        &sched.url,
    ]);
    let v: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out}\n{err}"));
    let checks = v["checks"].as_array().unwrap();
    let find = |kind: &str| {
        checks
            .iter()
            .find(|c| c["check"] == kind)
            .unwrap_or_else(|| panic!("{kind}: {v:#}"))
    };
    let kcm = find("kube-controller-manager metrics");
    assert_eq!(kcm["ok"], true, "{kcm:#}");
    assert_eq!(kcm["target"], cm.url.as_str());
    assert_eq!(
        kcm["detail"], "v1.36.0: 1 informers, 1 workqueues",
        "{kcm:#}"
    );
    let s = find("kube-scheduler metrics");
    assert_eq!(s["ok"], true, "{s:#}");
    let detail = s["detail"].as_str().unwrap();
    assert!(
        detail.starts_with(
            "v1.34.0: 3 workqueues; no informer metrics (they came in Kubernetes 1.36)"
        ),
        "{detail}"
    );
}
