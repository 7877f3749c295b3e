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
