//! The cluster-scoped and housekeeping objects of the demo: Namespaces, Nodes with their
//! heartbeat, kubelet Leases, Events, ConfigMaps, Secrets, Services and the Widget custom
//! resource (JSON, as the apiserver stores custom resources).

use std::collections::BTreeMap;

use k8s_pb::api::coordination::v1::{Lease, LeaseSpec};
use k8s_pb::api::core::v1::{
    ConfigMap, Event, EventSource, Namespace, NamespaceSpec, NamespaceStatus, Node, NodeAddress,
    NodeCondition, NodeSpec, NodeStatus, NodeSystemInfo, ObjectReference, Secret, Service,
    ServicePort, ServiceSpec,
};
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1::{MicroTime, OwnerReference};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use rand::Rng;

use super::{labels, managed, meta, micro_time_now, now_unix, time_now};
use crate::decode::object::rfc3339;

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
