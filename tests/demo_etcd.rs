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

fn testdata_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/testdata/k8s-api/v1.30.3")
}

/// Reads a protobuf varint at `*pos`.
fn varint(buf: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0_u64;
    for shift in (0..64).step_by(7) {
        let b = buf[*pos];
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            break;
        }
    }
    v
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Copies the protobuf message `buf`, dropping every field at `path` (field numbers from
/// the top, through length-delimited fields, repeated ones included). Counts drops.
fn strip_field(buf: &[u8], path: &[u64], dropped: &mut usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(buf.len());
    let mut pos = 0;
    while pos < buf.len() {
        let start = pos;
        let tag = varint(buf, &mut pos);
        let (field, wire) = (tag >> 3, tag & 7);
        match wire {
            0 => {
                varint(buf, &mut pos);
            }
            1 => pos += 8,
            5 => pos += 4,
            2 => {
                let len = varint(buf, &mut pos) as usize;
                let body = &buf[pos..pos + len];
                pos += len;
                if field == path[0] {
                    if path.len() == 1 {
                        *dropped += 1;
                    } else {
                        let inner = strip_field(body, &path[1..], dropped);
                        put_varint(&mut out, tag);
                        put_varint(&mut out, inner.len() as u64);
                        out.extend_from_slice(&inner);
                    }
                    continue;
                }
            }
            other => panic!("unexpected wire type {other}"),
        }
        out.extend_from_slice(&buf[start..pos]);
    }
    out
}

/// Decodes the real serializer's bytes, re-encodes with the simulation's encoder
/// (`encode_object`), and asserts byte-for-byte equality.
///
/// `removed` lists fields Kubernetes dropped from the API after v1.30 (paths of field numbers
/// inside the object's own protobuf). k8s-pb follows a newer API, so prost cannot carry them;
/// they are stripped from the expected bytes at the wire level (and must be present), and
/// every other byte must match.
fn assert_reencodes_identically<T: StorageKind>(file: &str, removed: &[&[u64]]) {
    let path = testdata_dir().join(file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (../shared/testdata beside the repository)",
            path.display()
        )
    });
    let env = decode_envelope(&bytes).expect("envelope");
    assert_eq!(
        (env.api_version.as_str(), env.kind.as_str()),
        (T::API_VERSION, T::KIND)
    );
    let obj = T::decode(env.raw.as_slice()).expect("decode object");
    let ours = encode_object(&obj);

    // Expected: the file, minus fields removed from the API since v1.30 (runtime.Unknown's
    // `raw` is field 2 of the envelope body).
    let mut expected = bytes.clone();
    for field in removed {
        let mut dropped = 0;
        let full: Vec<u64> = std::iter::once(2).chain(field.iter().copied()).collect();
        let body = strip_field(&expected[4..], &full, &mut dropped);
        assert!(dropped > 0, "{file}: field {field:?} not in the fixture");
        expected.truncate(4);
        expected.extend_from_slice(&body);
    }
    if removed.is_empty() {
        assert_eq!(expected, bytes);
    }
    assert!(
        ours == expected,
        "{file}: re-encoding differs ({} vs {} bytes)",
        ours.len(),
        expected.len()
    );
}

/// PodSpec.resourceClaims (39) [].source (2): the `ClaimSource` wrapper, removed in
/// Kubernetes v1.31 when its two fields moved into PodResourceClaim itself.
const POD_SPEC_CLAIM_SOURCE: &[u64] = &[39, 2];

#[test]
fn encoding_matches_kubernetes_serializer_output() {
    let claim_in_pod: Vec<u64> = [2].iter().chain(POD_SPEC_CLAIM_SOURCE).copied().collect();
    let claim_in_deployment: Vec<u64> = [2, 3, 2]
        .iter()
        .chain(POD_SPEC_CLAIM_SOURCE)
        .copied()
        .collect();
    assert_reencodes_identically::<Pod>("core.v1.Pod.pb", &[&claim_in_pod]);
    assert_reencodes_identically::<Lease>("coordination.k8s.io.v1.Lease.pb", &[]);
    assert_reencodes_identically::<Deployment>("apps.v1.Deployment.pb", &[&claim_in_deployment]);
    assert_reencodes_identically::<Event>("core.v1.Event.pb", &[]);
    assert_reencodes_identically::<ConfigMap>("core.v1.ConfigMap.pb", &[]);
}

#[test]
fn strip_field_removes_only_the_path() {
    // {1: "a", 2: {1: "b", 2: "c"}, 2: {2: "d"}}
    let msg = b"\x0a\x01a\x12\x06\x0a\x01b\x12\x01c\x12\x03\x12\x01d";
    let mut dropped = 0;
    let out = strip_field(msg, &[2, 2], &mut dropped);
    assert_eq!(dropped, 2);
    assert_eq!(out, b"\x0a\x01a\x12\x03\x0a\x01b\x12\x00".to_vec());
}
