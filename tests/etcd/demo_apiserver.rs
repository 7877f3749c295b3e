//! Integration tests of the demo's simulated kube-apiserver against a real etcd (the `etcd`
//! binary on PATH) written by the real simulation: `/metrics` in the 1.34 format with the
//! measured storage latencies, lists whose resourceVersions are etcd's mod_revisions, watches
//! with bookmarks, the two sources of 410 (watch-cache ring and etcd compaction), and the slow
//! watcher that falls behind, is terminated and gets a 410 on resume.

use std::sync::Arc;
use std::time::{Duration, Instant};

use etcd_client::GetOptions;
use regscope::demo::{
    DemoApiserver, DemoApiserverConfig, PrivateEtcd, SimConfig, SimHandle, Simulation, SlowWatcher,
    StorageLatencies,
};
use regscope::metrics::exposition::{self, Exposition};
use serde_json::Value;

use crate::common::require;

/// Every test has this long; each step inside is bounded too.
const TEST_TIMEOUT: Duration = Duration::from_secs(35);

struct Env {
    etcd: PrivateEtcd,
    sim: SimHandle,
    api: DemoApiserver,
    http: reqwest::Client,
}

async fn env(sim: SimConfig, api: DemoApiserverConfig) -> Env {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let etcd = PrivateEtcd::start().await.expect("start etcd");
    let latencies = Arc::new(StorageLatencies::new());
    let sim = Simulation::start(
        &etcd,
        SimConfig {
            latencies: Some(latencies.clone()),
            ..sim
        },
    )
    .await
    .expect("start simulation");
    let api = DemoApiserver::start(&etcd, latencies, api)
        .await
        .expect("start demo apiserver");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("http client");
    Env {
        etcd,
        sim,
        api,
        http,
    }
}

impl Env {
    async fn get(&self, path: &str) -> (u16, Value) {
        let resp = self
            .http
            .get(format!("{}{path}", self.api.url()))
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        let code = resp.status().as_u16();
        let body = resp.bytes().await.expect("body");
        let v = serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("GET {path}: {e}: {}", String::from_utf8_lossy(&body)));
        (code, v)
    }

    async fn metrics(&self) -> Exposition {
        let resp = self
            .http
            .get(format!("{}/metrics", self.api.url()))
            .send()
            .await
            .expect("GET /metrics");
        assert_eq!(resp.status().as_u16(), 200);
        let ct = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}");
        let body = resp.bytes().await.expect("metrics body");
        let e = exposition::parse(&body);
        assert!(e.skipped.is_empty(), "skipped lines: {:?}", e.skipped);
        e
    }

    async fn watch(&self, path_and_query: &str) -> Lines {
        let resp = self
            .http
            .get(format!("{}{path_and_query}", self.api.url()))
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .unwrap_or_else(|e| panic!("WATCH {path_and_query}: {e}"));
        assert_eq!(resp.status().as_u16(), 200, "{path_and_query}");
        Lines {
            resp,
            buf: Vec::new(),
        }
    }

    /// etcd's current revision.
    async fn head(&self) -> i64 {
        let mut c = self.etcd.client().await.expect("etcd client");
        c.get("/", Some(GetOptions::new().with_count_only()))
            .await
            .expect("head")
            .header()
            .expect("header")
            .revision()
    }

    /// Waits (bounded) until the sim has made `writes` writes.
    async fn wait_writes(&self, writes: u64, within: Duration) {
        let deadline = Instant::now() + within;
        while self.sim.stats().writes < writes {
            assert!(
                Instant::now() < deadline,
                "only {:?} writes after {within:?}",
                self.sim.stats()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Newline-delimited JSON from a streaming response.
struct Lines {
    resp: reqwest::Response,
    buf: Vec<u8>,
}

enum Next {
    Line(Value),
    /// The server ended the stream.
    End,
    /// Nothing within the wait.
    Timeout,
}

impl Lines {
    async fn next(&mut self, wait: Duration) -> Next {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=pos).collect();
                let v = serde_json::from_slice(&line).unwrap_or_else(|e| {
                    panic!("bad watch line {e}: {}", String::from_utf8_lossy(&line))
                });
                return Next::Line(v);
            }
            match tokio::time::timeout_at(deadline, self.resp.chunk()).await {
                Err(_) => return Next::Timeout,
                Ok(Ok(Some(chunk))) => self.buf.extend_from_slice(&chunk),
                Ok(Ok(None)) => {
                    assert!(self.buf.is_empty(), "partial line at end of stream");
                    return Next::End;
                }
                Ok(Err(e)) => panic!("watch stream error: {e}"),
            }
        }
    }
}

fn rv_of(obj: &Value) -> i64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_else(|| panic!("no resourceVersion in {obj}"))
        .parse()
        .expect("numeric resourceVersion")
}

/// `etcd_request_duration_seconds_count` of one operation on one resource, 0 when absent.
fn etcd_requests(e: &Exposition, op: &str, group: &str, resource: &str) -> f64 {
    value(
        e,
        "etcd_request_duration_seconds_count",
        &[("operation", op), ("group", group), ("resource", resource)],
    )
    .unwrap_or(0.0)
}

fn value(e: &Exposition, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    e.samples_named(name)
        .find(|s| labels.iter().all(|(k, v)| s.label(k) == Some(*v)))
        .map(|s| s.value)
}

/// The sum over every sample of `name` matching `labels`.
fn sum(e: &Exposition, name: &str, labels: &[(&str, &str)]) -> f64 {
    e.samples_named(name)
        .filter(|s| labels.iter().all(|(k, v)| s.label(k) == Some(*v)))
        .map(|s| s.value)
        .sum()
}

fn key_of(prefix: &str, resource_path: &str, obj: &Value) -> String {
    let m = &obj["metadata"];
    let name = m["name"].as_str().expect("name");
    match m["namespace"].as_str() {
        Some(ns) => format!("{prefix}/{resource_path}/{ns}/{name}"),
        None => format!("{prefix}/{resource_path}/{name}"),
    }
}

/// The 410 ERROR event a watch gets for an expired resourceVersion, and that the stream ends.
async fn expect_expired(lines: &mut Lines, message_prefix: &str) {
    match lines.next(Duration::from_secs(10)).await {
        Next::Line(ev) => {
            assert_eq!(ev["type"], "ERROR", "{ev}");
            let st = &ev["object"];
            assert_eq!(st["kind"], "Status", "{ev}");
            assert_eq!(st["apiVersion"], "v1", "{ev}");
            assert_eq!(st["status"], "Failure", "{ev}");
            assert_eq!(st["reason"], "Expired", "{ev}");
            assert_eq!(st["code"], 410, "{ev}");
            let msg = st["message"].as_str().unwrap_or_default();
            assert!(msg.starts_with(message_prefix), "{msg}");
        }
        _ => panic!("no ERROR event"),
    }
    assert!(matches!(
        lines.next(Duration::from_secs(5)).await,
        Next::End
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_lists_gets_and_kubeconfig() {
    require!(ETCD);
    let test = async {
        let env = env(
            SimConfig {
                rate: 200,
                leader_lease_interval: Duration::from_millis(500),
                ..SimConfig::default()
            },
            DemoApiserverConfig::default(),
        )
        .await;
        env.wait_writes(150, Duration::from_secs(15)).await;

        // A list, recorded in apiserver_request_total, resourceVersions = mod_revisions.
        let (code, list) = env.get("/api/v1/pods").await;
        assert_eq!(code, 200, "{list}");
        assert_eq!(list["kind"], "PodList");
        assert_eq!(list["apiVersion"], "v1");
        let list_rv: i64 = list["metadata"]["resourceVersion"]
            .as_str()
            .expect("list rv")
            .parse()
            .expect("numeric");
        let items = list["items"].as_array().expect("items");
        assert!(!items.is_empty(), "no pods listed");
        let mut etcd = env.etcd.client().await.expect("client");
        for item in items {
            assert_eq!(item["kind"], "Pod");
            let key = key_of("/registry", "pods", item);
            let kv = etcd
                .get(key.clone(), Some(GetOptions::new().with_revision(list_rv)))
                .await
                .expect("get at list rv");
            let kv = kv.kvs().first().unwrap_or_else(|| panic!("{key} absent"));
            assert_eq!(rv_of(item), kv.mod_revision(), "{key}");
        }
        assert!(list_rv <= env.head().await);

        // Group resources, namespaced lists, a single get.
        let (code, leases) = env.get("/apis/coordination.k8s.io/v1/leases").await;
        assert_eq!(code, 200, "{leases}");
        assert_eq!(leases["kind"], "LeaseList");
        assert_eq!(leases["apiVersion"], "coordination.k8s.io/v1");
        assert_eq!(leases["items"].as_array().map(Vec::len), Some(5));
        let (code, node_leases) = env
            .get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases")
            .await;
        assert_eq!(code, 200);
        assert_eq!(node_leases["items"].as_array().map(Vec::len), Some(3));
        let (code, cm) = env
            .get("/api/v1/namespaces/kube-system/configmaps/cluster-state")
            .await;
        assert_eq!(code, 200, "{cm}");
        assert_eq!(cm["metadata"]["name"], "cluster-state");
        let (code, _) = env
            .get("/api/v1/namespaces/kube-system/configmaps/no-such")
            .await;
        assert_eq!(code, 404);
        let (code, deps) = env.get("/apis/apps/v1/deployments").await;
        assert_eq!(code, 200);
        assert_eq!(deps["kind"], "DeploymentList");

        // Secrets are refused, unknown resources are 404.
        for path in ["/api/v1/secrets", "/api/v1/namespaces/default/secrets"] {
            let (code, st) = env.get(path).await;
            assert_eq!(code, 403, "{path}: {st}");
            assert_eq!(st["reason"], "Forbidden");
        }
        let (code, st) = env.get("/api/v1/nosuchthings").await;
        assert_eq!(code, 404);
        assert_eq!(st["kind"], "Status");
        let (code, _) = env.get("/apis/apps/v2/deployments").await;
        assert_eq!(code, 404);

        // /metrics: the 1.34 families, with what really happened. The simulation's first
        // lease renewal comes a lease interval after its start: on a loaded machine
        // possibly after the writes waited for above, so /metrics is read again (bounded)
        // until each kind of write the checks below expect has been counted.
        let writes = [
            ("create", "", "pods"),
            ("update", "", "pods"),
            ("create", "", "events"),
            ("create", "apps", "replicasets"),
            ("update", "coordination.k8s.io", "leases"),
        ];
        let mut m = env.metrics().await;
        for _ in 0..50 {
            if writes
                .iter()
                .all(|(o, g, r)| etcd_requests(&m, o, g, r) > 0.0)
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            m = env.metrics().await;
        }
        for fam in [
            "kubernetes_build_info",
            "etcd_request_duration_seconds",
            "etcd_requests_total",
            "etcd_request_errors_total",
            "watch_cache_capacity",
            "apiserver_watch_cache_events_received_total",
            "apiserver_watch_cache_events_dispatched_total",
            "apiserver_watch_cache_initializations_total",
            "apiserver_watch_cache_resource_version",
            "apiserver_terminated_watchers_total",
            "apiserver_resource_objects",
            "apiserver_storage_size_bytes",
            "apiserver_request_duration_seconds",
            "apiserver_request_total",
            "apiserver_flowcontrol_current_inqueue_requests",
            "apiserver_flowcontrol_current_executing_requests",
            "apiserver_flowcontrol_rejected_requests_total",
        ] {
            assert!(
                m.families.iter().any(|f| f.name == fam),
                "family {fam} missing"
            );
        }
        let build = m
            .samples_named("kubernetes_build_info")
            .next()
            .expect("build info");
        assert_eq!(build.label("git_version"), Some("v1.34.0-regscope-demo"));
        let count = |op: &str, group: &str, resource: &str| etcd_requests(&m, op, group, resource);
        // The simulation's writes...
        for (op, group, resource) in writes {
            assert!(
                count(op, group, resource) > 0.0,
                "no {op} of {group}/{resource} counted after 10 s"
            );
        }
        // ...and the apiserver's own reads.
        assert!(count("list", "", "pods") > 0.0);
        assert!(count("list", "coordination.k8s.io", "leases") > 0.0);
        assert!(count("get", "", "configmaps") > 0.0);
        // Buckets are cumulative and end at the count.
        let inf = value(
            &m,
            "etcd_request_duration_seconds_bucket",
            &[
                ("operation", "create"),
                ("group", ""),
                ("resource", "pods"),
                ("le", "+Inf"),
            ],
        );
        assert_eq!(inf, Some(count("create", "", "pods")));
        assert_eq!(
            value(
                &m,
                "etcd_requests_total",
                &[("operation", "create"), ("group", ""), ("resource", "pods")]
            ),
            Some(count("create", "", "pods"))
        );
        let pods = [("group", ""), ("resource", "pods")];
        assert_eq!(value(&m, "watch_cache_capacity", &pods), Some(100.0));
        // The sim rolls pods (deletes and recreates), so the count may be 0 at any moment;
        // it must be there and never the -1 sentinel.
        assert!(value(&m, "apiserver_resource_objects", &pods).is_some_and(|v| v >= 0.0));
        assert!(
            value(&m, "apiserver_watch_cache_events_received_total", &pods).unwrap_or(0.0) > 0.0
        );
        assert_eq!(
            value(&m, "apiserver_watch_cache_initializations_total", &pods),
            Some(1.0)
        );
        let cache_rv = value(&m, "apiserver_watch_cache_resource_version", &pods).unwrap_or(0.0);
        assert!(cache_rv >= list_rv as f64 && cache_rv <= env.head().await as f64);
        assert!(
            value(
                &m,
                "apiserver_resource_objects",
                &[("group", "coordination.k8s.io"), ("resource", "leases")]
            ) == Some(5.0)
        );
        assert!(
            value(
                &m,
                "apiserver_storage_size_bytes",
                &[("storage_cluster_id", "etcd-0")]
            )
            .unwrap_or(0.0)
                > 0.0
        );
        assert!(
            value(
                &m,
                "apiserver_request_total",
                &[
                    ("code", "200"),
                    ("verb", "LIST"),
                    ("resource", "pods"),
                    ("scope", "cluster"),
                    ("component", "apiserver"),
                ]
            )
            .unwrap_or(0.0)
                >= 1.0
        );
        // One cluster-scoped and one namespaced refusal.
        assert_eq!(
            sum(
                &m,
                "apiserver_request_total",
                &[("code", "403"), ("verb", "LIST"), ("resource", "secrets")]
            ),
            2.0
        );
        // The scrape itself is executing in the exempt level right now.
        assert_eq!(
            value(
                &m,
                "apiserver_flowcontrol_current_executing_requests",
                &[("flow_schema", "exempt"), ("priority_level", "exempt")]
            ),
            Some(1.0)
        );

        // The kubeconfig works with the kube crate over plain HTTP.
        let path = env.api.kubeconfig_path().to_path_buf();
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path)
                .expect("kubeconfig")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let kc = kube::config::Kubeconfig::read_from(&path).expect("read kubeconfig");
        let cfg =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .expect("kube config");
        assert_eq!(
            cfg.cluster_url.to_string().trim_end_matches('/'),
            env.api.url()
        );
        let client = kube::Client::try_from(cfg).expect("kube client");
        let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::all(client.clone());
        let listed = pods
            .list(&kube::api::ListParams::default())
            .await
            .expect("kube list pods");
        assert!(!listed.items.is_empty());
        let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
            kube::Api::namespaced(client, "kube-node-lease");
        let node_leases = leases
            .list(&kube::api::ListParams::default())
            .await
            .expect("kube list leases");
        assert_eq!(node_leases.items.len(), 3);
        // kube's watch parses the stream: events after the list, then the timeout ends it.
        {
            use futures::{StreamExt, TryStreamExt};
            let wp = kube::api::WatchParams::default().timeout(2);
            let rv = listed.metadata.resource_version.clone().expect("list rv");
            let stream = pods.watch(&wp, &rv).await.expect("kube watch");
            let events: Vec<_> = stream.take(3).try_collect().await.expect("watch events");
            assert!(!events.is_empty());
            for ev in &events {
                assert!(!matches!(ev, kube::api::WatchEvent::Error(_)), "{ev:?}");
            }
        }
        // Requests with the kubeconfig's bearer token are the service-accounts flow.
        let m = env.metrics().await;
        assert!(value(
            &m,
            "apiserver_flowcontrol_current_executing_requests",
            &[
                ("flow_schema", "service-accounts"),
                ("priority_level", "workload-low")
            ]
        )
        .is_some());

        let path_gone = path.clone();
        env.api.stop().await;
        assert!(!path_gone.exists(), "kubeconfig left behind");
        env.sim.stop().await;
    };
    tokio::time::timeout(TEST_TIMEOUT, test)
        .await
        .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_from_list_rv_gets_the_next_writes_and_bookmarks() {
    require!(ETCD);
    let test = async {
        let env = env(
            SimConfig {
                rate: 100,
                ..SimConfig::default()
            },
            DemoApiserverConfig {
                bookmark_interval: Duration::from_millis(200),
                ..DemoApiserverConfig::default()
            },
        )
        .await;
        let (code, list) = env.get("/api/v1/pods").await;
        assert_eq!(code, 200);
        let list_rv = rv_of(&list);
        let mut w = env
            .watch(&format!(
                "/api/v1/pods?watch=1&resourceVersion={list_rv}&allowWatchBookmarks=true&timeoutSeconds=20"
            ))
            .await;
        let mut etcd = env.etcd.client().await.expect("client");
        let (mut events, mut bookmarks, mut last) = (0, 0, list_rv);
        let deadline = Instant::now() + Duration::from_secs(15);
        while events < 8 || bookmarks < 2 {
            assert!(
                Instant::now() < deadline,
                "{events} events, {bookmarks} bookmarks"
            );
            let Next::Line(ev) = w.next(Duration::from_secs(5)).await else {
                panic!("watch ended or stalled after {events} events");
            };
            let obj = &ev["object"];
            let rv = rv_of(obj);
            match ev["type"].as_str() {
                Some("BOOKMARK") => {
                    assert_eq!(obj["kind"], "Pod");
                    assert_eq!(obj["apiVersion"], "v1");
                    assert!(rv >= last, "bookmark {rv} before {last}");
                    bookmarks += 1;
                }
                Some(t @ ("ADDED" | "MODIFIED" | "DELETED")) => {
                    assert!(rv > last, "{t} {rv} not after {last}");
                    assert_eq!(obj["kind"], "Pod");
                    let key = key_of("/registry", "pods", obj);
                    let resp = etcd
                        .get(key.clone(), Some(GetOptions::new().with_revision(rv)))
                        .await
                        .expect("get at event rv");
                    match t {
                        // The object as etcd held it at that revision.
                        "DELETED" => assert!(resp.kvs().is_empty(), "{key} still there"),
                        _ => {
                            let kv = resp.kvs().first().expect("present");
                            assert_eq!(kv.mod_revision(), rv, "{key}");
                            assert_eq!(t == "ADDED", kv.create_revision() == rv, "{key}");
                        }
                    }
                    events += 1;
                }
                other => panic!("unexpected event type {other:?}: {ev}"),
            }
            last = last.max(rv);
        }
        drop(w);

        // RV 0: the current objects first, as ADDED; timeoutSeconds ends the stream. The
        // leases keep changing, so a stream that ignored it would run on: 10 s (ten times
        // the timeout) is the hang guard that fails it, not a performance claim.
        let guard = Instant::now() + Duration::from_secs(10);
        let (code, _) = env
            .get("/api/v1/namespaces/kube-node-lease/leases?watch=true&timeoutSeconds=1")
            .await;
        assert_eq!(code, 404, "leases live in coordination.k8s.io");
        let mut w = env
            .watch("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?watch=true&resourceVersion=0&timeoutSeconds=1")
            .await;
        let mut added = 0;
        loop {
            assert!(
                Instant::now() < guard,
                "timeoutSeconds=1 did not end the watch within 10 s"
            );
            match w.next(Duration::from_secs(5)).await {
                Next::Line(ev) => {
                    if added < 3 {
                        assert_eq!(ev["type"], "ADDED", "{ev}");
                        assert_eq!(ev["object"]["kind"], "Lease");
                        assert_eq!(ev["object"]["metadata"]["namespace"], "kube-node-lease");
                    }
                    added += 1;
                }
                Next::End => break,
                Next::Timeout => panic!("timeoutSeconds=1 did not end the watch"),
            }
        }
        assert!(added >= 3, "{added}");

        let m = env.metrics().await;
        assert!(
            value(
                &m,
                "apiserver_watch_cache_events_dispatched_total",
                &[("group", ""), ("resource", "pods")]
            )
            .unwrap_or(0.0)
                >= 10.0
        );
        assert!(
            value(
                &m,
                "apiserver_request_total",
                &[
                    ("code", "200"),
                    ("verb", "WATCH"),
                    ("resource", "leases"),
                    ("scope", "namespace")
                ]
            )
            .unwrap_or(0.0)
                >= 1.0
        );
        env.api.stop().await;
        env.sim.stop().await;
    };
    tokio::time::timeout(TEST_TIMEOUT, test)
        .await
        .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_old_resource_versions_get_410_from_ring_and_from_compaction() {
    require!(ETCD);
    let test = async {
        let env = env(
            SimConfig {
                rate: 200,
                compact_interval: Duration::from_secs(1),
                ..SimConfig::default()
            },
            DemoApiserverConfig {
                watch_cache_capacity: 20,
                ..DemoApiserverConfig::default()
            },
        )
        .await;
        // A second apiserver whose ring never overflows: its 410s can only come from etcd.
        let big_ring = DemoApiserver::start(
            &env.etcd,
            Arc::new(StorageLatencies::new()),
            DemoApiserverConfig {
                watch_cache_capacity: 1_000_000,
                ..DemoApiserverConfig::default()
            },
        )
        .await
        .expect("second apiserver");
        let (_, list) = env.get("/api/v1/pods").await;
        let list_rv = rv_of(&list);

        // Enough pod events to overflow the 20-event ring, and a compaction past list_rv.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let m = env.metrics().await;
            let received = value(
                &m,
                "apiserver_watch_cache_events_received_total",
                &[("group", ""), ("resource", "pods")],
            )
            .unwrap_or(0.0);
            if received > 40.0 && env.sim.stats().last_compact_revision > list_rv {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{received} {:?}",
                env.sim.stats()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }

        // Older than the ring: the cacher's 410.
        let mut w = env
            .watch("/api/v1/pods?watch=1&resourceVersion=1&allowWatchBookmarks=true")
            .await;
        expect_expired(&mut w, "too old resource version: 1 (").await;
        let mut w = env
            .watch(&format!("/api/v1/pods?watch=1&resourceVersion={list_rv}"))
            .await;
        expect_expired(&mut w, &format!("too old resource version: {list_rv} (")).await;

        // Within the big ring but compacted in etcd: the etcd3 watcher's 410.
        let resp = env
            .http
            .get(format!(
                "{}/api/v1/pods?watch=1&resourceVersion={list_rv}",
                big_ring.url()
            ))
            .send()
            .await
            .expect("watch");
        let mut w = Lines {
            resp,
            buf: Vec::new(),
        };
        expect_expired(
            &mut w,
            "The resourceVersion for the provided watch is too old.",
        )
        .await;

        // A list at an exact compacted revision: HTTP 410 with a Status.
        let (code, st) = env
            .get("/api/v1/pods?resourceVersion=1&resourceVersionMatch=Exact")
            .await;
        assert_eq!(code, 410, "{st}");
        assert_eq!(st["kind"], "Status");
        assert_eq!(st["reason"], "Expired");
        assert_eq!(st["code"], 410);
        assert_eq!(
            st["message"],
            "The resourceVersion for the provided list is too old."
        );
        // A list at an exact revision that is still there is served from etcd at it.
        let head = env.head().await;
        let (code, list) = env
            .get(&format!(
                "/api/v1/pods?resourceVersion={head}&resourceVersionMatch=Exact"
            ))
            .await;
        assert_eq!(code, 200, "{list}");
        assert_eq!(rv_of(&list), head);
        // A watch from the current cache revision is fine.
        let (_, list) = env.get("/api/v1/pods").await;
        let now_rv = rv_of(&list);
        let mut w = env
            .watch(&format!(
                "/api/v1/pods?watch=1&resourceVersion={now_rv}&timeoutSeconds=5"
            ))
            .await;
        match w.next(Duration::from_secs(5)).await {
            Next::Line(ev) => assert_ne!(ev["type"], "ERROR", "{ev}"),
            _ => panic!("no event from a current resourceVersion"),
        }
        big_ring.stop().await;
        env.api.stop().await;
        env.sim.stop().await;
    };
    tokio::time::timeout(TEST_TIMEOUT, test)
        .await
        .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_watcher_lags_is_terminated_and_gets_410_on_resume() {
    require!(ETCD);
    let test = async {
        let delay = Duration::from_millis(50);
        let env = env(
            SimConfig {
                rate: 300,
                ..SimConfig::default()
            },
            DemoApiserverConfig {
                watch_cache_capacity: 100,
                slow_watcher: Some(SlowWatcher {
                    resource: "events".to_string(),
                    delay_per_event: delay,
                }),
                ..DemoApiserverConfig::default()
            },
        )
        .await;
        let (_, list) = env.get("/api/v1/events").await;
        assert_eq!(list["kind"], "EventList");
        let list_rv = rv_of(&list);
        let query =
            format!("/api/v1/events?watch=1&resourceVersion={list_rv}&allowWatchBookmarks=true");
        // The first watch on events is the slow one; a second one keeps up.
        let mut slow = env.watch(&query).await;
        let mut fast = env.watch(&query).await;
        let fast_task = tokio::spawn(async move {
            let mut n = 0;
            let mut last = 0;
            let until = tokio::time::Instant::now() + Duration::from_secs(3);
            while tokio::time::Instant::now() < until {
                match fast.next(Duration::from_millis(500)).await {
                    Next::Line(ev) => {
                        if ev["type"] != "BOOKMARK" {
                            n += 1;
                            last = rv_of(&ev["object"]);
                        }
                    }
                    Next::End => panic!("the fast watcher was closed"),
                    Next::Timeout => {}
                }
            }
            (n, last, Instant::now())
        });

        let started = Instant::now();
        let mut received: Vec<(i64, Duration)> = Vec::new();
        let mut lags: Vec<i64> = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            assert!(Instant::now() < deadline, "slow watcher never terminated");
            match slow.next(Duration::from_secs(5)).await {
                Next::Line(ev) => {
                    assert_ne!(ev["type"], "ERROR", "{ev}");
                    if ev["type"] == "BOOKMARK" {
                        continue;
                    }
                    let rv = rv_of(&ev["object"]);
                    received.push((rv, started.elapsed()));
                    if received.len().is_multiple_of(5) {
                        lags.push(env.head().await - rv);
                    }
                }
                Next::End => break,
                Next::Timeout => panic!("slow watcher stalled"),
            }
        }
        // It fell behind for real: events arrived no faster than one per delay, while the
        // head ran away from it.
        assert!(received.len() >= 5, "{received:?}");
        let (first, last) = (received[0], received[received.len() - 1]);
        let n = u32::try_from(received.len() - 1).unwrap();
        assert!(last.1 - first.1 >= delay * n * 9 / 10, "{received:?}");
        assert!(lags.len() >= 2, "{lags:?}");
        assert!(lags[lags.len() - 1] > lags[0], "lag did not grow: {lags:?}");
        eprintln!(
            "slow watcher: {} events in {:?}, lag in revisions every 5 events: {lags:?}",
            received.len(),
            last.1 - first.1
        );
        let resume_rv = last.0;
        assert!(env.head().await - resume_rv > 100, "not behind");

        // Terminated like an unresponsive watcher, and counted.
        let m = env.metrics().await;
        assert_eq!(
            value(
                &m,
                "apiserver_terminated_watchers_total",
                &[("group", ""), ("resource", "events")]
            ),
            Some(1.0)
        );
        // Its resume from the last resourceVersion it saw is too old for the ring.
        let mut resumed = env
            .watch(&format!(
                "/api/v1/events?watch=1&resourceVersion={resume_rv}&allowWatchBookmarks=true"
            ))
            .await;
        expect_expired(
            &mut resumed,
            &format!("too old resource version: {resume_rv} ("),
        )
        .await;

        // The other watcher kept up and was not terminated: by the end of its window it
        // had received at least what the slow one had by then, and was at least as far.
        // (Compared over the same window: on a loaded machine the simulator writes fewer
        // events, and the slow watcher's longer run may hold more of them in total.)
        let (n, fast_last, fast_end) = fast_task.await.expect("fast watcher");
        let slow_by_then: Vec<i64> = received
            .iter()
            .filter(|(_, at)| started + *at <= fast_end)
            .map(|(rv, _)| *rv)
            .collect();
        assert!(
            n >= slow_by_then.len(),
            "fast {n} vs slow {} in the same window",
            slow_by_then.len()
        );
        assert!(fast_last >= slow_by_then.last().copied().unwrap_or(0));
        env.api.stop().await;
        env.sim.stop().await;
    };
    tokio::time::timeout(TEST_TIMEOUT, test)
        .await
        .expect("test timed out");
}
