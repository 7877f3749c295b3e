//! Kubernetes objects in kube-apiserver's storage encoding, for the demo simulation.
//!
//! Protobuf values are `k8s\x00` followed by a `runtime.Unknown` whose `typeMeta` names the
//! apiVersion and kind and whose `raw` is the object's protobuf, with `contentEncoding` and
//! `contentType` present and empty — exactly what k8s.io/apimachinery's protobuf serializer
//! writes (checked byte for byte against v1.30.3 serializer output in `tests/demo_etcd.rs`).
//! Custom resources are JSON with a trailing newline, as the apiserver stores them.
//!
//! The builders make objects the way the named components would (labels, ownerReferences,
//! managedFields with their manager names); they never set `resourceVersion`, which the
//! apiserver clears before storing because etcd's `mod_revision` carries it.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use k8s_pb::api::apps::v1::{
    Deployment, DeploymentCondition, DeploymentSpec, DeploymentStatus, DeploymentStrategy,
    ReplicaSet, ReplicaSetSpec, ReplicaSetStatus, RollingUpdateDeployment,
};
use k8s_pb::api::coordination::v1::{Lease, LeaseSpec};
use k8s_pb::api::core::v1::{
    ConfigMap, Container, ContainerPort, ContainerState, ContainerStateRunning, ContainerStatus,
    Event, EventSource, Namespace, NamespaceSpec, NamespaceStatus, Node, NodeAddress,
    NodeCondition, NodeSpec, NodeStatus, NodeSystemInfo, ObjectReference, Pod, PodCondition, PodIp,
    PodSpec, PodStatus, PodTemplateSpec, ResourceRequirements, Secret, Service, ServicePort,
    ServiceSpec,
};
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, LabelSelector, ManagedFieldsEntry, MicroTime, ObjectMeta, OwnerReference, Time,
};
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use prost::Message;
use rand::Rng;

use crate::decode::object::rfc3339;

pub use crate::model::kubernetes::PROTOBUF_MAGIC;

/// A k8s-pb type with the apiVersion and kind the apiserver stores it under.
pub trait StorageKind: Message + Default + Clone + Send + Sync + 'static {
    /// `apiVersion` as written in the envelope (`v1`, `apps/v1`, ...).
    const API_VERSION: &'static str;
    /// `kind` as written in the envelope (`Pod`, ...).
    const KIND: &'static str;
}

macro_rules! storage_kind {
    ($t:ty, $av:literal, $k:literal) => {
        impl StorageKind for $t {
            const API_VERSION: &'static str = $av;
            const KIND: &'static str = $k;
        }
    };
}
storage_kind!(Pod, "v1", "Pod");
storage_kind!(Namespace, "v1", "Namespace");
storage_kind!(Node, "v1", "Node");
storage_kind!(ConfigMap, "v1", "ConfigMap");
storage_kind!(Secret, "v1", "Secret");
storage_kind!(Service, "v1", "Service");
storage_kind!(Event, "v1", "Event");
storage_kind!(Lease, "coordination.k8s.io/v1", "Lease");
storage_kind!(Deployment, "apps/v1", "Deployment");
storage_kind!(ReplicaSet, "apps/v1", "ReplicaSet");

/// The envelope of a protobuf storage value: type and raw object bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// `typeMeta.apiVersion`, e.g. `apps/v1`.
    pub api_version: String,
    /// `typeMeta.kind`, e.g. `Deployment`.
    pub kind: String,
    /// The object's own protobuf bytes.
    pub raw: Vec<u8>,
}

/// Wraps raw object protobuf in the storage envelope: magic + `runtime.Unknown`.
pub fn encode_envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.to_string()),
            kind: Some(kind.to_string()),
        }),
        raw: Some(raw),
        // The Go serializer always writes both strings, empty.
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = Vec::with_capacity(PROTOBUF_MAGIC.len() + unknown.encoded_len());
    out.extend_from_slice(PROTOBUF_MAGIC);
    unknown.encode_raw(&mut out);
    out
}

/// Encodes an object as kube-apiserver stores it (the one encoder the simulation uses).
pub fn encode_object<T: StorageKind>(obj: &T) -> Vec<u8> {
    encode_envelope(T::API_VERSION, T::KIND, obj.encode_to_vec())
}

/// Splits a protobuf storage value into its envelope. Errors name what is wrong.
pub fn decode_envelope(value: &[u8]) -> Result<Envelope, String> {
    let body = value
        .strip_prefix(PROTOBUF_MAGIC)
        .ok_or_else(|| "no k8s\\x00 magic".to_string())?;
    let unknown = Unknown::decode(body).map_err(|e| format!("runtime.Unknown: {e}"))?;
    let tm = unknown.type_meta.unwrap_or_default();
    Ok(Envelope {
        api_version: tm.api_version.unwrap_or_default(),
        kind: tm.kind.unwrap_or_default(),
        raw: unknown.raw.unwrap_or_default(),
    })
}

/// Decodes a storage value into `T`, checking the envelope names `T`'s apiVersion and kind.
pub fn decode_object<T: StorageKind>(value: &[u8]) -> Result<T, String> {
    let env = decode_envelope(value)?;
    if env.api_version != T::API_VERSION || env.kind != T::KIND {
        return Err(format!(
            "envelope is {}/{}, expected {}/{}",
            env.api_version,
            env.kind,
            T::API_VERSION,
            T::KIND
        ));
    }
    T::decode(env.raw.as_slice()).map_err(|e| format!("{}: {e}", T::KIND))
}

/// Seconds since the Unix epoch, now.
pub fn now_unix() -> (i64, i32) {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    (
        i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        i32::try_from(d.subsec_nanos()).unwrap_or(0),
    )
}

/// `metav1.Time` now; like the apiserver's, truncated to whole seconds.
pub fn time_now() -> Time {
    Time {
        seconds: Some(now_unix().0),
        nanos: Some(0),
    }
}

/// `metav1.MicroTime` now, truncated to microseconds.
pub fn micro_time_now() -> MicroTime {
    let (s, n) = now_unix();
    MicroTime {
        seconds: Some(s),
        nanos: Some(n - n % 1000),
    }
}

/// A random RFC 4122 version-4 UUID string, as the apiserver assigns to `metadata.uid`.
pub fn new_uid<R: Rng + ?Sized>(rng: &mut R) -> String {
    let mut b: [u8; 16] = rng.random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A random lowercase alphanumeric suffix like the ones `generateName` and pod-template
/// hashes use (consonants and digits, as in k8s.io/apimachinery's `rand.String`).
pub fn random_suffix<R: Rng + ?Sized>(rng: &mut R, len: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..len)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}

/// Etcd key of a namespaced object: `<prefix>/<resource>/<namespace>/<name>`.
pub fn namespaced_key(prefix: &str, resource: &str, namespace: &str, name: &str) -> String {
    format!("{prefix}/{resource}/{namespace}/{name}")
}

/// Etcd key of a cluster-scoped object: `<prefix>/<resource>/<name>`.
pub fn cluster_key(prefix: &str, resource: &str, name: &str) -> String {
    format!("{prefix}/{resource}/{name}")
}

/// One managedFields entry: `manager` did `operation` (`Update`/`Apply`) at `time` on the
/// fields in `fields_json` (FieldsV1 JSON), optionally through `subresource` (`status`).
pub fn managed(
    manager: &str,
    operation: &str,
    api_version: &str,
    subresource: Option<&str>,
    fields_json: &str,
) -> ManagedFieldsEntry {
    ManagedFieldsEntry {
        manager: Some(manager.to_string()),
        operation: Some(operation.to_string()),
        api_version: Some(api_version.to_string()),
        time: Some(time_now()),
        fields_type: Some("FieldsV1".to_string()),
        fields_v1: Some(FieldsV1 {
            raw: Some(fields_json.as_bytes().to_vec()),
        }),
        subresource: subresource.map(str::to_string),
    }
}

/// Adds or refreshes the managedFields entry of (`manager`, `operation`, `subresource`).
pub fn touch_managed(meta: &mut ObjectMeta, entry: ManagedFieldsEntry) {
    if let Some(e) = meta.managed_fields.iter_mut().find(|e| {
        e.manager == entry.manager
            && e.operation == entry.operation
            && e.subresource == entry.subresource
    }) {
        *e = entry;
    } else {
        meta.managed_fields.push(entry);
    }
}

/// An owner reference with `controller: true`, as controllers set on what they create.
pub fn controller_ref(api_version: &str, kind: &str, name: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: Some(api_version.to_string()),
        kind: Some(kind.to_string()),
        name: Some(name.to_string()),
        uid: Some(uid.to_string()),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn meta<R: Rng + ?Sized>(rng: &mut R, namespace: Option<&str>, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(str::to_string),
        uid: Some(new_uid(rng)),
        creation_timestamp: Some(time_now()),
        ..Default::default()
    }
}

/// The uid in an object's metadata, or "".
pub fn uid_of(meta: Option<&ObjectMeta>) -> String {
    meta.and_then(|m| m.uid.clone()).unwrap_or_default()
}

/// A Namespace as `kubectl create namespace` (or the apiserver for system ones) makes it.
pub fn namespace<R: Rng + ?Sized>(rng: &mut R, name: &str) -> Namespace {
    let mut m = meta(rng, None, name);
    m.labels = labels(&[("kubernetes.io/metadata.name", name)]);
    m.managed_fields.push(managed(
        "kubectl-create",
        "Update",
        "v1",
        None,
        r#"{"f:metadata":{"f:labels":{".":{},"f:kubernetes.io/metadata.name":{}}}}"#,
    ));
    Namespace {
        metadata: Some(m),
        spec: Some(NamespaceSpec {
            finalizers: vec!["kubernetes".to_string()],
        }),
        status: Some(NamespaceStatus {
            phase: Some("Active".to_string()),
            conditions: Vec::new(),
        }),
    }
}

/// A Node as the kubelet registers it, Ready, with capacity and addresses.
pub fn node<R: Rng + ?Sized>(rng: &mut R, name: &str, index: usize) -> Node {
    let mut m = meta(rng, None, name);
    m.labels = labels(&[
        ("beta.kubernetes.io/arch", "amd64"),
        ("beta.kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("kubernetes.io/hostname", name),
        ("kubernetes.io/os", "linux"),
    ]);
    m.annotations = labels(&[("node.alpha.kubernetes.io/ttl", "0")]);
    m.managed_fields.push(managed(
        "kubelet",
        "Update",
        "v1",
        None,
        r#"{"f:metadata":{"f:labels":{".":{},"f:kubernetes.io/arch":{},"f:kubernetes.io/hostname":{},"f:kubernetes.io/os":{}}}}"#,
    ));
    m.managed_fields.push(managed(
        "kubelet",
        "Update",
        "v1",
        Some("status"),
        r#"{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{"f:lastHeartbeatTime":{}}}}}"#,
    ));
    let qty = |s: &str| Quantity {
        string: Some(s.to_string()),
    };
    let mut capacity = BTreeMap::new();
    capacity.insert("cpu".to_string(), qty("8"));
    capacity.insert("memory".to_string(), qty("32853496Ki"));
    capacity.insert("pods".to_string(), qty("110"));
    let now = time_now();
    Node {
        metadata: Some(m),
        spec: Some(NodeSpec {
            pod_cidr: Some(format!("10.244.{index}.0/24")),
            pod_cid_rs: vec![format!("10.244.{index}.0/24")],
            ..Default::default()
        }),
        status: Some(NodeStatus {
            allocatable: capacity.clone(),
            capacity,
            conditions: vec![NodeCondition {
                r#type: Some("Ready".to_string()),
                status: Some("True".to_string()),
                last_heartbeat_time: Some(now),
                last_transition_time: Some(now),
                reason: Some("KubeletReady".to_string()),
                message: Some("kubelet is posting ready status".to_string()),
            }],
            addresses: vec![
                NodeAddress {
                    r#type: Some("InternalIP".to_string()),
                    address: Some(format!("10.0.0.{}", 10 + index)),
                },
                NodeAddress {
                    r#type: Some("Hostname".to_string()),
                    address: Some(name.to_string()),
                },
            ],
            node_info: Some(NodeSystemInfo {
                kernel_version: Some("6.1.0-18-amd64".to_string()),
                os_image: Some("Debian GNU/Linux 12 (bookworm)".to_string()),
                container_runtime_version: Some("containerd://1.7.13".to_string()),
                kubelet_version: Some("v1.30.3".to_string()),
                operating_system: Some("linux".to_string()),
                architecture: Some("amd64".to_string()),
                ..Default::default()
            }),
            ..Default::default()
        }),
    }
}

/// A Lease with `holder` renewing every `duration_s` seconds, by `manager`.
pub fn lease<R: Rng + ?Sized>(
    rng: &mut R,
    namespace: &str,
    name: &str,
    holder: &str,
    duration_s: i32,
    manager: &str,
    owner: Option<OwnerReference>,
) -> Lease {
    let mut m = meta(rng, Some(namespace), name);
    m.owner_references.extend(owner);
    m.managed_fields.push(managed(
        manager,
        "Update",
        "coordination.k8s.io/v1",
        None,
        r#"{"f:spec":{"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:renewTime":{}}}"#,
    ));
    Lease {
        metadata: Some(m),
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.to_string()),
            lease_duration_seconds: Some(duration_s),
            acquire_time: Some(micro_time_now()),
            renew_time: Some(micro_time_now()),
            lease_transitions: Some(0),
            ..Default::default()
        }),
    }
}

/// Renews a Lease: `renewTime` now and the manager's managedFields time, as the kubelet's
/// node-lease controller or a leader-election client does.
pub fn renew_lease(lease: &mut Lease) {
    if let Some(spec) = lease.spec.as_mut() {
        spec.renew_time = Some(micro_time_now());
    }
    if let Some(m) = lease.metadata.as_mut() {
        for e in &mut m.managed_fields {
            e.time = Some(time_now());
        }
    }
}

/// Refreshes the Ready condition's heartbeat, as the kubelet's node status update does.
pub fn heartbeat_node(node: &mut Node) {
    if let Some(st) = node.status.as_mut() {
        for c in &mut st.conditions {
            c.last_heartbeat_time = Some(time_now());
        }
    }
    if let Some(m) = node.metadata.as_mut() {
        for e in &mut m.managed_fields {
            if e.subresource.as_deref() == Some("status") {
                e.time = Some(time_now());
            }
        }
    }
}

fn container(app: &str, image: &str) -> Container {
    Container {
        name: Some(app.to_string()),
        image: Some(image.to_string()),
        ports: vec![ContainerPort {
            container_port: Some(8080),
            protocol: Some("TCP".to_string()),
            name: Some("http".to_string()),
            ..Default::default()
        }],
        resources: Some(ResourceRequirements::default()),
        termination_message_path: Some("/dev/termination-log".to_string()),
        termination_message_policy: Some("File".to_string()),
        image_pull_policy: Some("IfNotPresent".to_string()),
        ..Default::default()
    }
}

fn pod_template(app: &str, image: &str, hash: Option<&str>) -> PodTemplateSpec {
    let mut l = labels(&[("app", app)]);
    if let Some(h) = hash {
        l.insert("pod-template-hash".to_string(), h.to_string());
    }
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: l,
            ..Default::default()
        }),
        spec: Some(pod_spec(app, image)),
    }
}

fn pod_spec(app: &str, image: &str) -> PodSpec {
    PodSpec {
        containers: vec![container(app, image)],
        restart_policy: Some("Always".to_string()),
        termination_grace_period_seconds: Some(30),
        dns_policy: Some("ClusterFirst".to_string()),
        service_account_name: Some("default".to_string()),
        service_account: Some("default".to_string()),
        scheduler_name: Some("default-scheduler".to_string()),
        enable_service_links: Some(true),
        preemption_policy: Some("PreemptLowerPriority".to_string()),
        priority: Some(0),
        ..Default::default()
    }
}

const DEPLOYMENT_APPLY_FIELDS: &str = r#"{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}}}"#;

/// A Deployment as `kubectl apply` creates it (client-side apply), `replicas` pods of `image`.
pub fn deployment<R: Rng + ?Sized>(
    rng: &mut R,
    namespace: &str,
    name: &str,
    replicas: i32,
    image: &str,
) -> Deployment {
    let mut m = meta(rng, Some(namespace), name);
    m.labels = labels(&[("app", name)]);
    m.generation = Some(1);
    m.annotations = labels(&[(
        "kubectl.kubernetes.io/last-applied-configuration",
        &format!(
            "{{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{{\"name\":\"{name}\",\"namespace\":\"{namespace}\"}},\"spec\":{{\"replicas\":{replicas}}}}}\n"
        ),
    )]);
    m.managed_fields.push(managed(
        "kubectl-client-side-apply",
        "Update",
        "apps/v1",
        None,
        DEPLOYMENT_APPLY_FIELDS,
    ));
    let pct = |s: &str| IntOrString {
        r#type: Some(1),
        int_val: None,
        str_val: Some(s.to_string()),
    };
    Deployment {
        metadata: Some(m),
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            selector: Some(LabelSelector {
                match_labels: labels(&[("app", name)]),
                match_expressions: Vec::new(),
            }),
            template: Some(pod_template(name, image, None)),
            strategy: Some(DeploymentStrategy {
                r#type: Some("RollingUpdate".to_string()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_unavailable: Some(pct("25%")),
                    max_surge: Some(pct("25%")),
                }),
            }),
            revision_history_limit: Some(10),
            progress_deadline_seconds: Some(600),
            ..Default::default()
        }),
        status: Some(DeploymentStatus::default()),
    }
}

/// Changes a Deployment's image (a `kubectl apply` of a new version): generation + 1.
pub fn set_deployment_image(dep: &mut Deployment, image: &str) {
    if let Some(c) = dep
        .spec
        .as_mut()
        .and_then(|s| s.template.as_mut())
        .and_then(|t| t.spec.as_mut())
        .and_then(|s| s.containers.first_mut())
    {
        c.image = Some(image.to_string());
    }
    if let Some(m) = dep.metadata.as_mut() {
        m.generation = Some(m.generation.unwrap_or(0) + 1);
        touch_managed(
            m,
            managed(
                "kubectl-client-side-apply",
                "Update",
                "apps/v1",
                None,
                DEPLOYMENT_APPLY_FIELDS,
            ),
        );
    }
}

/// The deployment controller's status write after a rollout step.
pub fn set_deployment_status(dep: &mut Deployment, replicas: i32, updated: i32, ready: i32) {
    let generation = dep.metadata.as_ref().and_then(|m| m.generation);
    let complete = updated == replicas && ready == replicas;
    dep.status = Some(DeploymentStatus {
        observed_generation: generation,
        replicas: Some(replicas),
        updated_replicas: Some(updated),
        ready_replicas: Some(ready),
        available_replicas: Some(ready),
        unavailable_replicas: (replicas > ready).then_some(replicas - ready),
        conditions: vec![DeploymentCondition {
            r#type: Some("Progressing".to_string()),
            status: Some("True".to_string()),
            last_update_time: Some(time_now()),
            last_transition_time: Some(time_now()),
            reason: Some(
                if complete {
                    "NewReplicaSetAvailable"
                } else {
                    "ReplicaSetUpdated"
                }
                .to_string(),
            ),
            message: Some("ReplicaSet is progressing.".to_string()),
        }],
        ..Default::default()
    });
    if let Some(m) = dep.metadata.as_mut() {
        touch_managed(
            m,
            managed(
                "kube-controller-manager",
                "Update",
                "apps/v1",
                Some("status"),
                r#"{"f:status":{"f:availableReplicas":{},"f:conditions":{},"f:observedGeneration":{},"f:readyReplicas":{},"f:replicas":{},"f:updatedReplicas":{}}}"#,
            ),
        );
    }
}

/// A ReplicaSet the deployment controller creates for `dep`'s current template.
pub fn replica_set<R: Rng + ?Sized>(
    rng: &mut R,
    dep: &Deployment,
    hash: &str,
    replicas: i32,
) -> ReplicaSet {
    let dm = dep.metadata.clone().unwrap_or_default();
    let app = dm.name.clone().unwrap_or_default();
    let ns = dm.namespace.clone().unwrap_or_default();
    let image = dep
        .spec
        .as_ref()
        .and_then(|s| s.template.as_ref())
        .and_then(|t| t.spec.as_ref())
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    let mut m = meta(rng, Some(&ns), &format!("{app}-{hash}"));
    m.labels = labels(&[("app", &app), ("pod-template-hash", hash)]);
    m.generation = Some(1);
    m.annotations = labels(&[
        (
            "deployment.kubernetes.io/desired-replicas",
            &replicas.to_string(),
        ),
        (
            "deployment.kubernetes.io/max-replicas",
            &(replicas + 1).to_string(),
        ),
        (
            "deployment.kubernetes.io/revision",
            &dm.generation.unwrap_or(1).to_string(),
        ),
    ]);
    m.owner_references.push(controller_ref(
        "apps/v1",
        "Deployment",
        &app,
        &uid_of(dep.metadata.as_ref()),
    ));
    m.managed_fields.push(managed(
        "kube-controller-manager",
        "Update",
        "apps/v1",
        None,
        r#"{"f:metadata":{"f:annotations":{},"f:labels":{},"f:ownerReferences":{}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{}}}"#,
    ));
    ReplicaSet {
        metadata: Some(m),
        spec: Some(ReplicaSetSpec {
            replicas: Some(replicas),
            selector: Some(LabelSelector {
                match_labels: labels(&[("app", &app), ("pod-template-hash", hash)]),
                match_expressions: Vec::new(),
            }),
            template: Some(pod_template(&app, &image, Some(hash))),
            ..Default::default()
        }),
        status: Some(ReplicaSetStatus::default()),
    }
}

/// Scales a ReplicaSet (spec and status, as the controller's two writes would leave it).
pub fn scale_replica_set(rs: &mut ReplicaSet, replicas: i32, ready: i32) {
    if let Some(s) = rs.spec.as_mut() {
        s.replicas = Some(replicas);
    }
    let generation = rs.metadata.as_ref().and_then(|m| m.generation);
    rs.status = Some(ReplicaSetStatus {
        replicas: Some(replicas),
        fully_labeled_replicas: Some(replicas),
        ready_replicas: Some(ready),
        available_replicas: Some(ready),
        observed_generation: generation,
        ..Default::default()
    });
    if let Some(m) = rs.metadata.as_mut() {
        m.generation = Some(m.generation.unwrap_or(1) + 1);
        touch_managed(
            m,
            managed(
                "kube-controller-manager",
                "Update",
                "apps/v1",
                Some("status"),
                r#"{"f:status":{"f:availableReplicas":{},"f:fullyLabeledReplicas":{},"f:observedGeneration":{},"f:readyReplicas":{},"f:replicas":{}}}"#,
            ),
        );
    }
}

/// A Pending pod the ReplicaSet controller creates from `rs`'s template.
pub fn pod_for<R: Rng + ?Sized>(rng: &mut R, rs: &ReplicaSet) -> Pod {
    let rm = rs.metadata.clone().unwrap_or_default();
    let rs_name = rm.name.clone().unwrap_or_default();
    let ns = rm.namespace.clone().unwrap_or_default();
    let name = format!("{rs_name}-{}", random_suffix(rng, 5));
    let template = rs
        .spec
        .as_ref()
        .and_then(|s| s.template.clone())
        .unwrap_or_default();
    let mut m = meta(rng, Some(&ns), &name);
    m.generate_name = Some(format!("{rs_name}-"));
    m.labels = template.metadata.map(|t| t.labels).unwrap_or_default();
    m.owner_references.push(controller_ref(
        "apps/v1",
        "ReplicaSet",
        &rs_name,
        &uid_of(rs.metadata.as_ref()),
    ));
    m.managed_fields.push(managed(
        "kube-controller-manager",
        "Update",
        "v1",
        None,
        r#"{"f:metadata":{"f:generateName":{},"f:labels":{},"f:ownerReferences":{}},"f:spec":{"f:containers":{},"f:dnsPolicy":{},"f:restartPolicy":{}}}"#,
    ));
    Pod {
        metadata: Some(m),
        spec: template.spec,
        status: Some(PodStatus {
            phase: Some("Pending".to_string()),
            qos_class: Some("BestEffort".to_string()),
            ..Default::default()
        }),
    }
}

/// The scheduler's binding: `spec.nodeName` and the PodScheduled condition.
pub fn bind_pod(pod: &mut Pod, node: &str) {
    if let Some(s) = pod.spec.as_mut() {
        s.node_name = Some(node.to_string());
    }
    if let Some(st) = pod.status.as_mut() {
        st.conditions.push(condition("PodScheduled"));
    }
    if let Some(m) = pod.metadata.as_mut() {
        touch_managed(
            m,
            managed(
                "kube-scheduler",
                "Update",
                "v1",
                Some("status"),
                r#"{"f:status":{"f:conditions":{".":{},"k:{\"type\":\"PodScheduled\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}}}}"#,
            ),
        );
    }
}

fn condition(kind: &str) -> PodCondition {
    PodCondition {
        r#type: Some(kind.to_string()),
        status: Some("True".to_string()),
        last_probe_time: Some(Time::default()),
        last_transition_time: Some(time_now()),
        ..Default::default()
    }
}

/// The kubelet's status update once the container runs: Running, Ready, pod IP.
pub fn run_pod(pod: &mut Pod, pod_ip: &str, host_ip: &str) {
    let (app, image) = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .map(|c| (c.name.clone(), c.image.clone()))
        .unwrap_or_default();
    if let Some(st) = pod.status.as_mut() {
        st.phase = Some("Running".to_string());
        for c in ["Initialized", "Ready", "ContainersReady"] {
            st.conditions.push(condition(c));
        }
        st.host_ip = Some(host_ip.to_string());
        st.pod_ip = Some(pod_ip.to_string());
        st.pod_ips = vec![PodIp {
            ip: Some(pod_ip.to_string()),
        }];
        st.start_time = Some(time_now());
        st.container_statuses = vec![ContainerStatus {
            name: app,
            state: Some(ContainerState {
                running: Some(ContainerStateRunning {
                    started_at: Some(time_now()),
                }),
                ..Default::default()
            }),
            last_state: Some(ContainerState::default()),
            ready: Some(true),
            restart_count: Some(0),
            image_id: image.as_ref().map(|i| format!("{i}@sha256:{:064x}", 0)),
            image,
            container_id: Some("containerd://0123456789abcdef".to_string()),
            started: Some(true),
            ..Default::default()
        }];
    }
    if let Some(m) = pod.metadata.as_mut() {
        touch_managed(
            m,
            managed(
                "kubelet",
                "Update",
                "v1",
                Some("status"),
                r#"{"f:status":{"f:conditions":{},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{},"f:startTime":{}}}"#,
            ),
        );
    }
}

/// Graceful deletion: `deletionTimestamp` and grace period set, as the apiserver does on a
/// DELETE with a grace period before the kubelet's final delete.
pub fn mark_deleting(pod: &mut Pod) {
    if let Some(m) = pod.metadata.as_mut() {
        let (s, _) = now_unix();
        m.deletion_timestamp = Some(Time {
            seconds: Some(s + 30),
            nanos: Some(0),
        });
        m.deletion_grace_period_seconds = Some(30);
    }
}

/// A core/v1 Event about `obj` (kind, name, uid) from `component` on `host`.
#[allow(clippy::too_many_arguments)]
pub fn event<R: Rng + ?Sized>(
    rng: &mut R,
    namespace: &str,
    involved: (&str, &str, &str, &str),
    reason: &str,
    message: &str,
    component: &str,
    host: Option<&str>,
) -> Event {
    let (api_version, kind, name, uid) = involved;
    // Like client-go's recorder: "<involved name>.<hex unix nanos>".
    let ev_name = format!("{name}.{:x}", rng.random::<u64>() >> 4);
    let mut m = meta(rng, Some(namespace), &ev_name);
    m.managed_fields.push(managed(
        component,
        "Update",
        "v1",
        None,
        r#"{"f:count":{},"f:firstTimestamp":{},"f:involvedObject":{},"f:lastTimestamp":{},"f:message":{},"f:reason":{},"f:reportingComponent":{},"f:source":{"f:component":{}},"f:type":{}}"#,
    ));
    Event {
        metadata: Some(m),
        involved_object: Some(ObjectReference {
            kind: Some(kind.to_string()),
            namespace: Some(namespace.to_string()),
            name: Some(name.to_string()),
            uid: Some(uid.to_string()),
            api_version: Some(api_version.to_string()),
            ..Default::default()
        }),
        reason: Some(reason.to_string()),
        message: Some(message.to_string()),
        source: Some(EventSource {
            component: Some(component.to_string()),
            host: host.map(str::to_string),
        }),
        first_timestamp: Some(time_now()),
        last_timestamp: Some(time_now()),
        count: Some(1),
        r#type: Some("Normal".to_string()),
        event_time: Some(MicroTime::default()),
        reporting_component: Some(component.to_string()),
        reporting_instance: Some(host.unwrap_or("").to_string()),
        ..Default::default()
    }
}

/// A ConfigMap with `data`, created by `manager`.
pub fn config_map<R: Rng + ?Sized>(
    rng: &mut R,
    namespace: &str,
    name: &str,
    data: &[(&str, &str)],
    manager: &str,
) -> ConfigMap {
    let mut m = meta(rng, Some(namespace), name);
    m.managed_fields
        .push(managed(manager, "Update", "v1", None, r#"{"f:data":{}}"#));
    ConfigMap {
        metadata: Some(m),
        data: labels(data),
        ..Default::default()
    }
}

/// An Opaque Secret whose data is obviously fake (the console masks secret values anyway).
pub fn secret<R: Rng + ?Sized>(rng: &mut R, namespace: &str, name: &str) -> Secret {
    let mut m = meta(rng, Some(namespace), name);
    m.managed_fields.push(managed(
        "kubectl-create",
        "Update",
        "v1",
        None,
        r#"{"f:data":{".":{},"f:password":{},"f:username":{}},"f:type":{}}"#,
    ));
    let mut data = BTreeMap::new();
    data.insert("username".to_string(), b"demo".to_vec());
    data.insert(
        "password".to_string(),
        b"not-a-real-password-regscope-demo".to_vec(),
    );
    Secret {
        metadata: Some(m),
        data,
        r#type: Some("Opaque".to_string()),
        ..Default::default()
    }
}

/// A ClusterIP Service selecting `app=<selector>` on port 80 -> 8080.
pub fn service<R: Rng + ?Sized>(
    rng: &mut R,
    namespace: &str,
    name: &str,
    selector: Option<&str>,
    cluster_ip: &str,
) -> Service {
    let mut m = meta(rng, Some(namespace), name);
    m.managed_fields.push(managed(
        "kubectl-client-side-apply",
        "Update",
        "v1",
        None,
        r#"{"f:spec":{"f:ports":{},"f:selector":{},"f:type":{}}}"#,
    ));
    Service {
        metadata: Some(m),
        spec: Some(ServiceSpec {
            ports: vec![ServicePort {
                name: Some("http".to_string()),
                protocol: Some("TCP".to_string()),
                port: Some(if selector.is_some() { 80 } else { 443 }),
                target_port: Some(IntOrString {
                    r#type: Some(0),
                    int_val: Some(if selector.is_some() { 8080 } else { 6443 }),
                    str_val: None,
                }),
                ..Default::default()
            }],
            selector: selector.map(|s| labels(&[("app", s)])).unwrap_or_default(),
            cluster_ip: Some(cluster_ip.to_string()),
            cluster_ips: vec![cluster_ip.to_string()],
            r#type: Some("ClusterIP".to_string()),
            session_affinity: Some("None".to_string()),
            ip_families: vec!["IPv4".to_string()],
            ip_family_policy: Some("SingleStack".to_string()),
            internal_traffic_policy: Some("Cluster".to_string()),
            ..Default::default()
        }),
        status: Some(Default::default()),
    }
}

/// The demo's custom resource: `example.com/v1` `Widget`, stored as JSON + `\n` (the
/// apiserver's JSON serializer output for custom resources).
pub fn widget_json(namespace: &str, name: &str, uid: &str, size: u64, generation: u64) -> Vec<u8> {
    let (s, _) = now_unix();
    let obj = serde_json::json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {
            "creationTimestamp": rfc3339(s, None),
            "generation": generation,
            "managedFields": [{
                "apiVersion": "example.com/v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {".": {}, "f:size": {}}},
                "manager": "kubectl-client-side-apply",
                "operation": "Update",
                "time": rfc3339(s, None),
            }],
            "name": name,
            "namespace": namespace,
            "uid": uid,
        },
        "spec": {"size": size, "color": "blue"},
    });
    let mut out = obj.to_string().into_bytes();
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_round_trip_names_the_type() {
        let mut rng = rand::rng();
        let dep = deployment(&mut rng, "ns", "web", 2, "nginx:1");
        let rs = replica_set(&mut rng, &dep, "abc12", 2);
        let pod = pod_for(&mut rng, &rs);
        let bytes = encode_object(&pod);
        assert!(bytes.starts_with(PROTOBUF_MAGIC));
        let env = decode_envelope(&bytes).unwrap();
        assert_eq!((env.api_version.as_str(), env.kind.as_str()), ("v1", "Pod"));
        let back: Pod = decode_object(&bytes).unwrap();
        assert_eq!(back, pod);
        assert!(decode_object::<Lease>(&bytes).is_err());
    }

    #[test]
    fn envelope_ends_with_empty_content_fields() {
        let v = encode_envelope("v1", "Pod", vec![]);
        // typeMeta, raw (empty), contentEncoding "", contentType "".
        assert_eq!(
            v,
            b"k8s\x00\x0a\x09\x0a\x02v1\x12\x03Pod\x12\x00\x1a\x00\x22\x00".to_vec()
        );
    }

    #[test]
    fn decode_rejects_missing_magic() {
        assert!(decode_envelope(b"{\"kind\":\"Pod\"}").is_err());
    }

    #[test]
    fn uid_is_version_4() {
        let uid = new_uid(&mut rand::rng());
        assert_eq!(uid.len(), 36);
        assert_eq!(&uid[14..15], "4");
        assert!(matches!(&uid[19..20], "8" | "9" | "a" | "b"));
    }

    #[test]
    fn widget_is_json_with_trailing_newline() {
        let w = widget_json("ns", "w", "u", 3, 1);
        assert_eq!(w.last(), Some(&b'\n'));
        let v: serde_json::Value = serde_json::from_slice(&w).unwrap();
        assert_eq!(v["kind"], "Widget");
    }

    #[test]
    fn rollout_helpers_keep_managed_fields_unique() {
        let mut rng = rand::rng();
        let mut dep = deployment(&mut rng, "ns", "web", 2, "nginx:1");
        set_deployment_image(&mut dep, "nginx:2");
        set_deployment_image(&mut dep, "nginx:3");
        let m = dep.metadata.as_ref().unwrap();
        assert_eq!(m.generation, Some(3));
        assert_eq!(m.managed_fields.len(), 1);
    }
}
