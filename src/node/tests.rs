use super::*;

fn write(root: &Path, path: &str, text: &str) {
    let p = under(root, Path::new(path));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn apiserver_manifest(extra: &str) -> String {
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
    - --secure-port=6443
    - --etcd-servers=https://10.0.0.1:2379,https://10.0.0.2:2379,https://10.0.0.3:2379
    - --etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt
    - --etcd-certfile=/etc/kubernetes/pki/apiserver-etcd-client.crt
    - --etcd-keyfile=/etc/kubernetes/pki/apiserver-etcd-client.key
{extra}
    volumeMounts:
    - name: k8s-certs
      mountPath: /etc/kubernetes/pki
  volumes:
  - name: k8s-certs
    hostPath:
      path: /etc/kubernetes/pki
"
    )
}

const ETCD_MANIFEST: &str = "apiVersion: v1
kind: Pod
spec:
  containers:
  - name: etcd
    command:
    - etcd
    - --data-dir=/var/lib/etcd
    - --listen-metrics-urls=http://127.0.0.1:2381
    - --quota-backend-bytes=8589934592
    - --auto-compaction-retention=8
";

#[test]
fn a_kubeadm_node() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        KUBEADM_APISERVER_MANIFEST,
        &apiserver_manifest(
            "    - --etcd-prefix=/k8s
    - --etcd-servers-overrides=/events#https://10.0.0.9:2379;https://10.0.0.10:2379
    - --encryption-provider-config=/etc/kubernetes/enc/enc.yaml
    - --etcd-compaction-interval=10m
    - --watch-cache-sizes=pods#1000",
        ),
    );
    write(root, KUBEADM_ETCD_MANIFEST, ETCD_MANIFEST);
    let d = discover(root);
    assert_eq!(d.layout, Some(Layout::Kubeadm));
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    let etcd = d.etcd.clone().expect("etcd access");
    assert_eq!(etcd.endpoints.len(), 3, "every member, for failover");
    assert_eq!(
        etcd.cert,
        Some(root.join("etc/kubernetes/pki/apiserver-etcd-client.crt")),
        "paths are read under the root"
    );
    assert_eq!(
        etcd.cacert,
        Some(root.join("etc/kubernetes/pki/etcd/ca.crt"))
    );
    assert_eq!(d.prefix.as_deref(), Some("/k8s"));
    assert_eq!(
        d.overrides,
        vec![EtcdOverride {
            resource: "/events".into(),
            endpoints: vec![
                "https://10.0.0.9:2379".into(),
                "https://10.0.0.10:2379".into()
            ],
        }]
    );
    assert_eq!(
        d.encryption_config,
        Some(root.join("etc/kubernetes/enc/enc.yaml"))
    );
    assert_eq!(
        d.etcd_metrics_url.as_deref(),
        Some("http://127.0.0.1:2381/metrics")
    );
    assert_eq!(
        d.apiserver_metrics_url.as_deref(),
        Some("https://127.0.0.1:6443/metrics")
    );
    // Every fact says where it came from, as on the node.
    let f = |name: &str| d.facts.iter().find(|f| f.name == name).cloned().unwrap();
    assert_eq!(f("etcd endpoints").flag.as_deref(), Some("--etcd-servers"));
    assert_eq!(f("etcd endpoints").file, KUBEADM_APISERVER_MANIFEST);
    assert_eq!(f("compaction interval").value, "10m");
    assert_eq!(f("watch cache sizes").value, "pods#1000");
    assert_eq!(f("etcd quota (bytes)").value, "8589934592");
    assert_eq!(f("etcd data dir").file, KUBEADM_ETCD_MANIFEST);
}

#[test]
fn broken_manifests_are_problems_with_advice() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // A YAML typo: the kubelet would not run it either.
    write(root, KUBEADM_APISERVER_MANIFEST, "spec:\n  containers: [\n");
    let d = discover(root);
    assert_eq!(d.layout, Some(Layout::Kubeadm));
    assert!(d.etcd.is_none());
    assert!(d.partial());
    assert!(
        d.problems[0].message.contains("not valid YAML"),
        "{:?}",
        d.problems
    );
    // A misspelt flag: no --etcd-servers.
    write(
        root,
        KUBEADM_APISERVER_MANIFEST,
        &apiserver_manifest("").replace("--etcd-servers=", "--etcd-server="),
    );
    let d = discover(root);
    assert!(d.etcd.is_none());
    assert!(
        d.problems[0].message.contains("no --etcd-servers"),
        "{:?}",
        d.problems
    );
    // A bad overrides entry is named, the rest still found.
    write(
        root,
        KUBEADM_APISERVER_MANIFEST,
        &apiserver_manifest("    - --etcd-servers-overrides=/events"),
    );
    let d = discover(root);
    assert!(d.etcd.is_some());
    assert!(
        d.problems[0].message.contains("group/resource#url"),
        "{:?}",
        d.problems
    );
}

#[test]
fn kubeadm_certificates_without_a_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    assert_eq!(discover(root).layout, None, "an empty root finds nothing");
    for p in [KUBEADM_CERT, KUBEADM_KEY, KUBEADM_CA] {
        write(root, p, "pem");
    }
    let d = discover(root);
    assert_eq!(d.layout, Some(Layout::Kubeadm));
    let etcd = d.etcd.unwrap();
    assert_eq!(etcd.endpoints, vec![LOCAL_ETCD.to_string()]);
    assert_eq!(
        etcd.key,
        Some(root.join("etc/kubernetes/pki/apiserver-etcd-client.key"))
    );
}

#[test]
fn an_rke2_node() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let m = apiserver_manifest("").replace(
        "/etc/kubernetes/pki/etcd/ca.crt",
        "/var/lib/rancher/rke2/server/tls/etcd/server-ca.crt",
    );
    write(root, RKE2_APISERVER_MANIFEST, &m);
    write(root, RKE2_ETCD_MANIFEST, ETCD_MANIFEST);
    let d = discover(root);
    assert_eq!(d.layout, Some(Layout::Rke2));
    assert_eq!(
        d.etcd.unwrap().cacert,
        Some(root.join("var/lib/rancher/rke2/server/tls/etcd/server-ca.crt"))
    );
    assert_eq!(
        d.etcd_metrics_url.as_deref(),
        Some("http://127.0.0.1:2381/metrics")
    );
}

#[test]
fn a_k3s_node() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        K3S_ETCD_CONFIG,
        "listen-client-urls: https://10.0.0.5:2379,https://127.0.0.1:2379\n\
         listen-metrics-urls: http://127.0.0.1:2381\n\
         data-dir: /var/lib/rancher/k3s/server/db/etcd\n",
    );
    let d = discover(root);
    assert_eq!(d.layout, Some(Layout::K3s));
    assert!(d.etcd.is_none(), "no certificates: not reachable");
    assert!(d.problems[0].advice.contains("sudo"), "{:?}", d.problems);
    for p in [K3S_CERT, K3S_KEY, K3S_CA] {
        write(root, p, "pem");
    }
    let d = discover(root);
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    let etcd = d.etcd.unwrap();
    assert_eq!(etcd.endpoints, vec!["https://127.0.0.1:2379".to_string()]);
    assert_eq!(
        etcd.cert,
        Some(root.join("var/lib/rancher/k3s/server/tls/etcd/client.crt"))
    );
    assert_eq!(
        d.etcd_metrics_url.as_deref(),
        Some("http://127.0.0.1:2381/metrics")
    );
}

#[test]
fn paths_under_the_root() {
    assert_eq!(
        under(Path::new("/"), Path::new("/etc/x")),
        PathBuf::from("/etc/x")
    );
    assert_eq!(
        under(Path::new("/t"), Path::new("/etc/x")),
        PathBuf::from("/t/etc/x")
    );
    assert_eq!(
        under(Path::new("/t"), Path::new("rel/x")),
        PathBuf::from("rel/x")
    );
    assert_eq!(
        metrics_url("https://127.0.0.1:2382,http://0.0.0.0:2381/").as_deref(),
        Some("http://127.0.0.1:2381/metrics")
    );
    assert_eq!(metrics_url("https://127.0.0.1:2382"), None);
}

/// `--etcd-servers-overrides` and `--watch-cache-sizes` as kube-apiserver reads them: each
/// occurrence of the flag appends; the last entry for a resource wins; entries kube-apiserver
/// refuses to start on, and overrides without servers or naming the main cluster, are
/// problems or left out, never watched.
#[test]
fn list_flags_append_and_overrides_are_read_as_kube_apiserver_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        KUBEADM_APISERVER_MANIFEST,
        &apiserver_manifest(
            "    - --etcd-servers-overrides=/events#https://10.0.0.9:2379,/events#https://10.0.0.8:2379
    - --etcd-servers-overrides=apps/deployments#https://10.0.0.8:2379,events#https://x:1,/pods#
    - --etcd-servers-overrides=/configmaps#https://10.0.0.1:2379
    - --watch-cache-sizes=secrets#0,pods#abc
    - --watch-cache-sizes=jobs.batch#-3,events#5",
        ),
    );
    let d = discover(root);
    let resources: Vec<&str> = d.overrides.iter().map(|o| o.resource.as_str()).collect();
    assert_eq!(resources, ["/events", "apps/deployments", "/configmaps"]);
    assert_eq!(d.overrides[0].endpoints, ["https://10.0.0.8:2379"]);
    // Grouped by servers; the main cluster's own URL is the main cluster.
    assert_eq!(
        d.other_clusters(),
        vec![(
            "/events,apps/deployments".to_string(),
            vec!["https://10.0.0.8:2379".to_string()]
        )]
    );
    let problems: Vec<&str> = d.problems.iter().map(|p| p.message.as_str()).collect();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("\"events#https://x:1\" is not group/resource")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("\"/pods#\" names no servers")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("\"pods#abc\"")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("\"jobs.batch#-3\"")),
        "{problems:?}"
    );
    assert_eq!(problems.len(), 4, "{problems:?}");
    let flags = d.apiserver_flags.clone().unwrap();
    assert_eq!(
        flags.get("--watch-cache-sizes"),
        Some("secrets#0,pods#abc,jobs.batch#-3,events#5")
    );
    let wc = flags.watch_cache().unwrap();
    assert_eq!(wc.size_for("", "events"), Some(5));
    assert!(!wc.cached("", "secrets"));
}

fn etcd_manifest(flags: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
spec:
  containers:
  - name: etcd
    command:
    - etcd
    - --data-dir=/var/lib/etcd
{flags}
"
    )
}

fn kubeadm_with_etcd(flags: &str) -> (tempfile::TempDir, Discovery) {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        KUBEADM_APISERVER_MANIFEST,
        &apiserver_manifest(""),
    );
    write(dir.path(), KUBEADM_ETCD_MANIFEST, &etcd_manifest(flags));
    let d = discover(dir.path());
    (dir, d)
}

fn fact<'a>(d: &'a Discovery, name: &str) -> Option<&'a Fact> {
    d.facts.iter().find(|f| f.name == name)
}

fn gate(name: &str, enabled: bool, flag: &str) -> FeatureGate {
    FeatureGate {
        gate: name.into(),
        enabled,
        flag: flag.into(),
    }
}

/// kubeadm's etcd manifest before etcd 3.6: the `--experimental-` spellings, each fact
/// naming the spelling it was found in.
#[test]
fn etcd_flags_in_the_3_5_spelling() {
    let (_dir, d) = kubeadm_with_etcd(
        "    - --experimental-initial-corrupt-check=true
    - --experimental-watch-progress-notify-interval=5s
    - --experimental-compaction-batch-limit=500
    - --experimental-compaction-sleep-interval=20ms",
    );
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    assert_eq!(d.etcd_flags_file.as_deref(), Some(KUBEADM_ETCD_MANIFEST));
    assert_eq!(d.etcd_watch_progress_notify_interval.as_deref(), Some("5s"));
    let f = fact(&d, "etcd watch progress notify interval").unwrap();
    assert_eq!(
        f.flag.as_deref(),
        Some("--experimental-watch-progress-notify-interval")
    );
    assert_eq!(f.file, KUBEADM_ETCD_MANIFEST);
    assert_eq!(
        fact(&d, "etcd compaction batch limit").unwrap().value,
        "500"
    );
    assert_eq!(
        fact(&d, "etcd compaction sleep interval")
            .unwrap()
            .flag
            .as_deref(),
        Some("--experimental-compaction-sleep-interval")
    );
    assert_eq!(
        d.etcd_feature_gates,
        [gate(
            "InitialCorruptCheck",
            true,
            "--experimental-initial-corrupt-check"
        )]
    );
    let f = fact(&d, "etcd initial corrupt check").unwrap();
    assert_eq!(f.value, "true");
    assert_eq!(
        f.flag.as_deref(),
        Some("--experimental-initial-corrupt-check")
    );
    // A bare boolean flag is true; no gates flag, no gates fact.
    let (_dir, d) = kubeadm_with_etcd("    - --experimental-stop-grpc-service-on-defrag");
    assert_eq!(
        d.etcd_feature_gates,
        [gate(
            "StopGRPCServiceOnDefrag",
            true,
            "--experimental-stop-grpc-service-on-defrag"
        )]
    );
    assert!(fact(&d, "etcd feature gates").is_none());
    assert!(fact(&d, "etcd initial corrupt check").is_none());
}

/// kubeadm's etcd manifest for etcd 3.6 and 3.7: the plain names and `--feature-gates`.
#[test]
fn etcd_flags_in_the_3_7_spelling_with_feature_gates() {
    let (_dir, d) = kubeadm_with_etcd(
        "    - --feature-gates=InitialCorruptCheck=true
    - --watch-progress-notify-interval=5s
    - --compaction-batch-limit=1000",
    );
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    assert_eq!(d.etcd_watch_progress_notify_interval.as_deref(), Some("5s"));
    assert_eq!(
        fact(&d, "etcd watch progress notify interval")
            .unwrap()
            .flag
            .as_deref(),
        Some("--watch-progress-notify-interval")
    );
    assert_eq!(
        fact(&d, "etcd compaction batch limit")
            .unwrap()
            .flag
            .as_deref(),
        Some("--compaction-batch-limit")
    );
    assert_eq!(
        d.etcd_feature_gates,
        [gate("InitialCorruptCheck", true, "--feature-gates")]
    );
    let f = fact(&d, "etcd initial corrupt check").unwrap();
    assert_eq!(
        f.flag.as_deref(),
        Some("--feature-gates InitialCorruptCheck")
    );
    // Several gates, in two occurrences of the flag (each adds), Go's boolean spellings,
    // blanks, and a gate set twice (the later wins).
    let (_dir, d) = kubeadm_with_etcd(
        "    - --feature-gates=StopGRPCServiceOnDefrag=true, TxnModeWriteWithSharedBuffer=False,
    - --feature-gates=StopGRPCServiceOnDefrag=0,CompactHashCheck=T",
    );
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    assert_eq!(
        d.etcd_feature_gates,
        [
            gate("TxnModeWriteWithSharedBuffer", false, "--feature-gates"),
            gate("StopGRPCServiceOnDefrag", false, "--feature-gates"),
            gate("CompactHashCheck", true, "--feature-gates"),
        ]
    );
    assert_eq!(
        fact(&d, "etcd feature gates").unwrap().flag.as_deref(),
        Some("--feature-gates")
    );
    // Entries etcd refuses to start on are problems; the readable ones are kept.
    let (_dir, d) = kubeadm_with_etcd(
        "    - --feature-gates=InitialCorruptCheck,CompactHashCheck=yes,PriorityRequest=true",
    );
    assert_eq!(
        d.etcd_feature_gates,
        [gate("PriorityRequest", true, "--feature-gates")]
    );
    let problems: Vec<&str> = d.problems.iter().map(|p| p.message.as_str()).collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].contains("\"InitialCorruptCheck\" is not Gate=true"),
        "{problems:?}"
    );
    assert!(
        problems[1].contains("\"CompactHashCheck=yes\""),
        "{problems:?}"
    );
}

/// Both spellings of one setting: the new one is read (the only one etcd 3.7 knows), and it
/// is a problem whether or not they agree, since etcd 3.6 refuses to start with both.
#[test]
fn etcd_flags_in_both_spellings() {
    let (_dir, d) = kubeadm_with_etcd(
        "    - --experimental-watch-progress-notify-interval=10s
    - --watch-progress-notify-interval=5s
    - --experimental-compaction-batch-limit=100
    - --compaction-batch-limit=100
    - --experimental-initial-corrupt-check=false
    - --feature-gates=InitialCorruptCheck=true",
    );
    assert_eq!(d.etcd_watch_progress_notify_interval.as_deref(), Some("5s"));
    assert_eq!(
        fact(&d, "etcd watch progress notify interval")
            .unwrap()
            .flag
            .as_deref(),
        Some("--watch-progress-notify-interval")
    );
    assert_eq!(
        d.etcd_feature_gates,
        [gate("InitialCorruptCheck", true, "--feature-gates")]
    );
    let problems: Vec<&str> = d.problems.iter().map(|p| p.message.as_str()).collect();
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(
        problems[0].contains("10s and 5s: regscope reads 5s")
            && problems[0].contains("etcd 3.6 refuses to start with both"),
        "{problems:?}"
    );
    assert!(problems[1].contains("(both 100)"), "{problems:?}");
    assert!(
        problems[2].contains("--experimental-initial-corrupt-check and InitialCorruptCheck"),
        "{problems:?}"
    );
    assert!(d.problems.iter().all(|p| p.file == KUBEADM_ETCD_MANIFEST));
}

/// k3s's etcd config file uses the same names without dashes, in either spelling.
#[test]
fn k3s_etcd_config_in_either_spelling() {
    for (text, flag) in [
        (
            "experimental-watch-progress-notify-interval: 5s\nexperimental-initial-corrupt-check: true\n",
            "experimental-watch-progress-notify-interval",
        ),
        (
            "watch-progress-notify-interval: 5s\nfeature-gates: InitialCorruptCheck=true\n",
            "watch-progress-notify-interval",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), K3S_ETCD_CONFIG, text);
        let d = discover(dir.path());
        assert_eq!(d.etcd_flags_file.as_deref(), Some(K3S_ETCD_CONFIG));
        assert_eq!(d.etcd_watch_progress_notify_interval.as_deref(), Some("5s"));
        assert_eq!(
            fact(&d, "etcd watch progress notify interval")
                .unwrap()
                .flag
                .as_deref(),
            Some(flag)
        );
        assert_eq!(fact(&d, "etcd initial corrupt check").unwrap().value, "true");
        assert_eq!(d.etcd_feature_gates.len(), 1, "{:?}", d.etcd_feature_gates);
    }
}

fn component_manifest(program: &str, flags: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
spec:
  containers:
  - name: {program}
    command:
    - {program}
    - --kubeconfig=/etc/kubernetes/{program}.conf
    - --authentication-kubeconfig=/etc/kubernetes/{program}.conf
    - --authorization-kubeconfig=/etc/kubernetes/{program}.conf
{flags}
    volumeMounts:
    - name: kubeconfig
      mountPath: /etc/kubernetes/{program}.conf
  volumes:
  - name: kubeconfig
    hostPath:
      path: /etc/kubernetes/{program}.conf
"
    )
}

/// kube-controller-manager and kube-scheduler as kubeadm writes them: default ports, a
/// wildcard bind address, no serving certificate (self-signed in memory).
#[test]
fn controller_manager_and_scheduler_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, KUBEADM_APISERVER_MANIFEST, &apiserver_manifest(""));
    write(
        root,
        KUBEADM_CONTROLLER_MANAGER_MANIFEST,
        &component_manifest("kube-controller-manager", "    - --bind-address=0.0.0.0"),
    );
    write(
        root,
        KUBEADM_SCHEDULER_MANIFEST,
        &component_manifest("kube-scheduler", "    - --leader-elect=true"),
    );
    let d = discover(root);
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    assert_eq!(
        d.controller_manager_metrics_url.as_deref(),
        Some("https://127.0.0.1:10257/metrics")
    );
    assert_eq!(
        d.scheduler_metrics_url.as_deref(),
        Some("https://127.0.0.1:10259/metrics")
    );
    assert_eq!(d.controller_manager_tls_cert, None);
    assert_eq!(d.scheduler_tls_cert, None);
    let f = fact(&d, "controller-manager metrics").unwrap();
    assert_eq!(f.flag.as_deref(), Some("(--secure-port default)"));
    assert_eq!(f.file, KUBEADM_CONTROLLER_MANAGER_MANIFEST);
    assert_eq!(
        fact(&d, "controller-manager bind address").unwrap().value,
        "0.0.0.0"
    );
    assert_eq!(
        fact(&d, "scheduler serving certificate")
            .unwrap()
            .flag
            .as_deref(),
        Some("(no --tls-cert-file)")
    );
    let f = fact(&d, "scheduler authorization kubeconfig").unwrap();
    assert_eq!(f.value, "/etc/kubernetes/kube-scheduler.conf");
    assert_eq!(f.flag.as_deref(), Some("--authorization-kubeconfig"));
    assert_eq!(f.file, KUBEADM_SCHEDULER_MANIFEST);
    // The JSON doctor prints carries the URLs.
    let json = serde_json::to_value(&d).unwrap();
    assert_eq!(
        json["scheduler_metrics_url"],
        "https://127.0.0.1:10259/metrics"
    );
}

/// Custom ports, a specific bind address, a serving certificate; a missing manifest is no
/// problem, an unreadable one is; RKE2 has its own paths.
#[test]
fn controller_manager_and_scheduler_custom_and_broken() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, RKE2_APISERVER_MANIFEST, &apiserver_manifest(""));
    write(
        root,
        RKE2_CONTROLLER_MANAGER_MANIFEST,
        &component_manifest(
            "kube-controller-manager",
            "    - --secure-port=10357
    - --bind-address=10.0.0.7
    - --tls-cert-file=/var/lib/rancher/rke2/server/tls/kube-controller-manager/kube-controller-manager.crt",
        ),
    );
    let d = discover(root);
    assert_eq!(d.layout, Some(Layout::Rke2));
    assert!(
        d.problems.is_empty(),
        "no scheduler manifest is no problem: {:?}",
        d.problems
    );
    assert_eq!(
        d.controller_manager_metrics_url.as_deref(),
        Some("https://10.0.0.7:10357/metrics")
    );
    assert_eq!(
        fact(&d, "controller-manager metrics")
            .unwrap()
            .flag
            .as_deref(),
        Some("--secure-port")
    );
    assert_eq!(
        d.controller_manager_tls_cert,
        Some(root.join(
            "var/lib/rancher/rke2/server/tls/kube-controller-manager/kube-controller-manager.crt"
        ))
    );
    assert_eq!(
        fact(&d, "controller-manager serving certificate")
            .unwrap()
            .flag
            .as_deref(),
        Some("--tls-cert-file")
    );
    assert_eq!(d.scheduler_metrics_url, None);
    assert!(fact(&d, "scheduler metrics").is_none());

    // An IPv6 wildcard reads as loopback; secure serving off gives no URL.
    write(
        root,
        RKE2_SCHEDULER_MANIFEST,
        &component_manifest(
            "kube-scheduler",
            "    - --bind-address=::\n    - --secure-port=10260",
        ),
    );
    write(
        root,
        RKE2_CONTROLLER_MANAGER_MANIFEST,
        &component_manifest("kube-controller-manager", "    - --secure-port=0"),
    );
    let d = discover(root);
    assert_eq!(
        d.scheduler_metrics_url.as_deref(),
        Some("https://127.0.0.1:10260/metrics")
    );
    assert_eq!(d.controller_manager_metrics_url, None);
    assert_eq!(
        fact(&d, "controller-manager metrics").unwrap().value,
        "not served (secure serving off)"
    );

    // A manifest that cannot be read is a problem naming it.
    write(root, RKE2_SCHEDULER_MANIFEST, "spec:\n  containers: [\n");
    let d = discover(root);
    assert_eq!(d.problems.len(), 1, "{:?}", d.problems);
    assert_eq!(d.problems[0].file, RKE2_SCHEDULER_MANIFEST);
    assert!(d.problems[0].message.contains("not valid YAML"));
    assert_eq!(d.scheduler_metrics_url, None);
}
