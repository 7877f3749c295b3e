//! Kubernetes objects in kube-apiserver's storage encoding, for the demo simulation.
//!
//! Protobuf values are `k8s\x00` followed by a `runtime.Unknown` whose `typeMeta` names the
//! apiVersion and kind and whose `raw` is the object's protobuf, with `contentEncoding` and
//! `contentType` present and empty — exactly what k8s.io/apimachinery's protobuf serializer
//! writes (checked byte for byte against v1.30.3 serializer output in
//! `tests/offline/demo_objects.rs`).
//! Custom resources are JSON with a trailing newline, as the apiserver stores them.
//!
//! The builders make objects the way the named components would (labels, ownerReferences,
//! managedFields with their manager names); they never set `resourceVersion`, which the
//! apiserver clears before storing because etcd's `mod_revision` carries it.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use k8s_pb::api::apps::v1::{Deployment, ReplicaSet};
use k8s_pb::api::coordination::v1::Lease;
use k8s_pb::api::core::v1::{ConfigMap, Event, Namespace, Node, Pod, Secret, Service};
use k8s_pb::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, ManagedFieldsEntry, MicroTime, ObjectMeta, OwnerReference, Time,
};
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;
use rand::Rng;

pub use crate::model::kubernetes::PROTOBUF_MAGIC;

mod cluster;
mod workloads;

pub use cluster::{
    config_map, event, heartbeat_node, lease, namespace, node, renew_lease, secret, service,
    widget_json,
};
pub use workloads::{
    bind_pod, deployment, mark_deleting, pod_for, replica_set, run_pod, scale_replica_set,
    set_deployment_image, set_deployment_status,
};

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

#[cfg(test)]
mod tests;
