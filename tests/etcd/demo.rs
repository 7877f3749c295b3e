//! Integration tests of `regscope demo`'s pieces against a real etcd (the `etcd` binary on
//! PATH): the private etcd's lifecycle, the simulated control plane's keyspace, and the
//! storage encoding checked byte for byte against Kubernetes v1.30.3 serializer output.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use etcd_client::GetOptions;
use k8s_pb::api::apps::v1::{Deployment, ReplicaSet};
use k8s_pb::api::coordination::v1::Lease;
use k8s_pb::api::core::v1::{ConfigMap, Event, Namespace, Node, Pod, Secret, Service};
use regscope::demo::objects::{decode_envelope, decode_object, encode_object, StorageKind};
use regscope::demo::{PrivateEtcd, SimConfig, Simulation, COMPACT_REV_KEY};

use crate::common::require;

/// Whether a process with this pid exists (zombies included).
fn process_exists(pid: u32) -> bool {
    PathBuf::from(format!("/proc/{pid}")).exists()
}

async fn count(client: &mut etcd_client::Client, prefix: &str) -> i64 {
    client
        .get(
            prefix,
            Some(GetOptions::new().with_prefix().with_count_only()),
        )
        .await
        .expect("count")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_etcd_lifecycle_leaves_no_process() {
    require!(ETCD);
    let test = async {
        let mut etcd = PrivateEtcd::start().await.expect("start etcd");
        let pid = etcd.pid().expect("pid");
        assert!(process_exists(pid));
        assert!(etcd.endpoint().starts_with("http://127.0.0.1:"));
        assert!(etcd.data_dir().join("member").is_dir());
        let endpoint = etcd.endpoint();

        let mut client = etcd.client().await.expect("client");
        let status = client.status().await.expect("status");
        let member = status.header().expect("header").member_id();

        // A paused etcd keeps its socket but answers nothing.
        etcd.pause().expect("pause");
        assert!(etcd.is_paused());
        let hung = tokio::time::timeout(Duration::from_millis(800), client.status()).await;
        assert!(hung.is_err(), "a SIGSTOPped etcd answered");
        etcd.resume().expect("resume");
        let back = tokio::time::timeout(Duration::from_secs(10), client.status()).await;
        assert!(matches!(back, Ok(Ok(_))), "no answer after SIGCONT");

        // Restart: same endpoint and data dir (same member), new process.
        etcd.restart().await.expect("restart");
        let pid2 = etcd.pid().expect("pid after restart");
        assert_ne!(pid, pid2);
        assert!(!process_exists(pid), "old etcd still there");
        assert_eq!(etcd.endpoint(), endpoint);
        let mut client = etcd.client().await.expect("client after restart");
        let status = client.status().await.expect("status after restart");
        assert_eq!(status.header().expect("header").member_id(), member);

        // Kill: reaped, no pid.
        etcd.kill().expect("kill");
        assert!(etcd.pid().is_none());
        assert!(!process_exists(pid2));
        etcd.restart().await.expect("restart after kill");
        let pid3 = etcd.pid().expect("pid");

        // Drop while paused: still killed and reaped, temp dir gone.
        etcd.pause().expect("pause");
        let dir = etcd.data_dir();
        drop(etcd);
        assert!(!process_exists(pid3), "etcd survived drop");
        assert!(!dir.exists(), "temp dir survived drop");
    };
    tokio::time::timeout(Duration::from_secs(90), test)
        .await
        .expect("lifecycle test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_etcd_accepts_extra_flags() {
    require!(ETCD);
    let test = async {
        let etcd = PrivateEtcd::start_with(&["--quota-backend-bytes=104857600"])
            .await
            .expect("start etcd");
        let pid = etcd.pid().expect("pid");
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).expect("cmdline");
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        assert!(
            cmdline.contains("--quota-backend-bytes=104857600"),
            "{cmdline}"
        );
        let mut client = etcd.client().await.expect("client");
        client.status().await.expect("status");
    };
    tokio::time::timeout(Duration::from_secs(60), test)
        .await
        .expect("timed out");
}

/// Decodes `value` into the k8s-pb type its envelope names and re-encodes it unchanged.
fn decode_as_named_type(key: &str, value: &[u8]) -> (String, String) {
    fn check<T: StorageKind>(key: &str, value: &[u8]) {
        let obj: T = decode_object(value).unwrap_or_else(|e| panic!("{key}: {e}"));
        assert_eq!(encode_object(&obj), value, "{key}: re-encoding differs");
    }
    let env = decode_envelope(value).unwrap_or_else(|e| panic!("{key}: {e}"));
    match (env.api_version.as_str(), env.kind.as_str()) {
        ("v1", "Pod") => check::<Pod>(key, value),
        ("v1", "Namespace") => check::<Namespace>(key, value),
        ("v1", "Node") => check::<Node>(key, value),
        ("v1", "ConfigMap") => check::<ConfigMap>(key, value),
        ("v1", "Secret") => check::<Secret>(key, value),
        ("v1", "Service") => check::<Service>(key, value),
        ("v1", "Event") => check::<Event>(key, value),
        ("coordination.k8s.io/v1", "Lease") => check::<Lease>(key, value),
        ("apps/v1", "Deployment") => check::<Deployment>(key, value),
        ("apps/v1", "ReplicaSet") => check::<ReplicaSet>(key, value),
        other => panic!("{key}: unexpected type {other:?}"),
    }
    (env.api_version, env.kind)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn simulation_writes_like_kube_apiserver() {
    require!(ETCD);
    let test = async {
        let etcd = PrivateEtcd::start().await.expect("start etcd");
        let cfg = SimConfig {
            nodes: 3,
            rate: 300,
            compact_interval: Duration::from_secs(1),
            node_lease_interval: Duration::from_secs(1),
            ..SimConfig::default()
        };
        let sim = Simulation::start(&etcd, cfg)
            .await
            .expect("start simulation");
        // A run of a few seconds is the point: what is checked below is what the simulation
        // does over it (compaction rounds, lease renewals, pods through their lifecycle).
        tokio::time::sleep(Duration::from_secs(5)).await;
        let running = sim.stats();
        assert!(running.writes > 50, "too few writes: {running:?}");
        let stats = sim.stop().await;
        assert!(stats.writes >= running.writes);
        assert!(stats.compactions >= 1, "no compaction: {stats:?}");
        assert!(stats.leases_granted >= 1, "no lease: {stats:?}");

        let mut client = etcd.client().await.expect("client");
        for (prefix, min) in [
            ("/registry/namespaces/", 6),
            ("/registry/nodes/", 3),
            ("/registry/leases/kube-node-lease/", 3),
            ("/registry/leases/kube-system/", 2),
            ("/registry/pods/", 1),
            ("/registry/deployments/", 2),
            ("/registry/replicasets/", 2),
            ("/registry/configmaps/", 3),
            ("/registry/services/specs/", 3),
            ("/registry/secrets/", 1),
            ("/registry/events/", 1),
            ("/registry/example.com/widgets/", 1),
        ] {
            let n = count(&mut client, prefix).await;
            assert!(n >= min, "{prefix}: {n} keys, expected at least {min}");
        }
        assert_eq!(count(&mut client, "/registry/nodes/").await, 3);

        // Events carry a lease; node leases were renewed (1 s period here).
        let events = client
            .get("/registry/events/", Some(GetOptions::new().with_prefix()))
            .await
            .expect("events");
        assert!(events.kvs().iter().all(|kv| kv.lease() != 0));
        let leases = client
            .get(
                "/registry/leases/kube-node-lease/",
                Some(GetOptions::new().with_prefix()),
            )
            .await
            .expect("leases");
        assert!(leases.kvs().iter().all(|kv| kv.version() > 1));
        let ttl = client
            .lease_time_to_live(events.kvs()[0].lease(), None)
            .await
            .expect("lease ttl");
        assert!(ttl.ttl() > 0 && ttl.ttl() <= 63, "ttl {}", ttl.ttl());

        // The compactor's key: at the root, a decimal revision, bumped once per round.
        let crk = client
            .get(COMPACT_REV_KEY, None)
            .await
            .expect("compact key");
        let kv = crk.kvs().first().expect("compact_rev_key exists");
        assert!(kv.version() >= 2, "version {}", kv.version());
        let rev: i64 = kv.value_str().expect("utf8").parse().expect("decimal");
        assert!(rev > 0);
        assert_eq!(stats.last_compact_revision, rev);

        // Every protobuf value decodes into the type its envelope names; CRs are JSON.
        let all = client
            .get("/registry/", Some(GetOptions::new().with_prefix()))
            .await
            .expect("list");
        let mut kinds: BTreeMap<(String, String), usize> = BTreeMap::new();
        for kv in all.kvs() {
            let key = String::from_utf8_lossy(kv.key()).into_owned();
            if kv.value().starts_with(b"k8s\x00") {
                *kinds
                    .entry(decode_as_named_type(&key, kv.value()))
                    .or_default() += 1;
            } else {
                assert!(key.starts_with("/registry/example.com/widgets/"), "{key}");
                assert_eq!(kv.value().last(), Some(&b'\n'), "{key}");
                let v: serde_json::Value = serde_json::from_slice(kv.value()).expect("json");
                assert_eq!(v["kind"], "Widget");
            }
        }
        for kind in [
            "Pod",
            "Event",
            "Lease",
            "Deployment",
            "ReplicaSet",
            "Secret",
        ] {
            assert!(kinds.keys().any(|(_, k)| k == kind), "no {kind}: {kinds:?}");
        }

        // The writers are named in managedFields.
        let pods = client
            .get("/registry/pods/", Some(GetOptions::new().with_prefix()))
            .await
            .expect("pods");
        let managers: Vec<String> = pods
            .kvs()
            .iter()
            .filter_map(|kv| decode_object::<Pod>(kv.value()).ok())
            .flat_map(|p| p.metadata.unwrap_or_default().managed_fields)
            .filter_map(|m| m.manager)
            .collect();
        assert!(managers.iter().any(|m| m == "kube-controller-manager"));
        assert!(managers.iter().any(|m| m == "kube-scheduler"));
        assert!(managers.iter().any(|m| m == "kubelet"));
    };
    tokio::time::timeout(Duration::from_secs(90), test)
        .await
        .expect("simulation test timed out");
}
