//! Kubernetes' storage facts that several parts of regscope need: the built-in resources
//! (API group, version, kind, scope, kubectl's names for them, and where kube-apiserver
//! stores them under the prefix), how many segments of a key name its resource, and the
//! fixed key and value prefix kube-apiserver writes.
//!
//! Key layout (k8s.io/apiserver storage): `<prefix>/<resource>/<namespace>/<name>` for
//! namespaced resources and `<prefix>/<resource>/<name>` for cluster-scoped ones. Resources
//! of API groups stored under their group (CRDs, `apiextensions.k8s.io`,
//! `apiregistration.k8s.io`) use `<prefix>/<group>/<resource>/...`; a group always contains a
//! dot, a resource never does. Built-in resources of other groups are stored without it
//! (`/registry/leases/...` holds `coordination.k8s.io` Leases). Historical paths:
//! `services/specs` (Services), `services/endpoints` (Endpoints), `minions` (Nodes),
//! `ranges/serviceips`, `ranges/servicenodeports`, `masterleases`. [`super::KeyPath::parse`]
//! splits keys along these rules.

/// The key kube-apiserver's compactor writes at the etcd root (not under the prefix): its
/// value is the revision it compacts to, and its version coordinates the compactions of
/// several apiservers (k8s.io/apiserver `pkg/storage/etcd3/compact.go`).
pub const COMPACT_REV_KEY: &[u8] = b"compact_rev_key";

/// The prefix of kube-apiserver's protobuf storage encoding, `k8s` then a NUL byte, before
/// a `runtime.Unknown` (`protoEncodingPrefix` in k8s.io/apimachinery
/// `pkg/runtime/serializer/protobuf/protobuf.go`).
pub const PROTOBUF_MAGIC: &[u8; 4] = b"k8s\x00";

/// Prefix of every value an encryption-at-rest provider wrote: kube-apiserver's
/// `value.PrefixTransformer` (k8s.io/apiserver `pkg/storage/value`) writes
/// `k8s:enc:<provider>:<version>:<name>:` before the ciphertext.
pub const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";

/// A built-in resource: what the API serves it as and where it is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinResource {
    /// API group, `""` for the core group.
    pub group: &'static str,
    /// Version served (`v1`).
    pub version: &'static str,
    /// Plural, as URLs and kubectl name it (`pods`).
    pub resource: &'static str,
    /// Kind (`Pod`).
    pub kind: &'static str,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Other names kubectl accepts: singular, short names, `resource.group`.
    pub aliases: &'static [&'static str],
    /// Where kube-apiserver stores it, after the prefix: the plural, except for the
    /// historical paths (`minions`, `services/specs`, `services/endpoints`).
    pub storage_path: &'static str,
}

/// The resource as `kubectl` names it with its group (`<resource>.<group>`): `pods`,
/// `leases.coordination.k8s.io`.
pub fn qualified_name(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

const fn r(
    group: &'static str,
    resource: &'static str,
    kind: &'static str,
    namespaced: bool,
    aliases: &'static [&'static str],
) -> BuiltinResource {
    BuiltinResource {
        group,
        version: "v1",
        resource,
        kind,
        namespaced,
        aliases,
        storage_path: resource,
    }
}

/// The built-in resources regscope knows without the apiserver's discovery: the core and
/// common workload resources, all served as `v1` (Kubernetes 1.21 and later).
pub const BUILTIN_RESOURCES: &[BuiltinResource] = &[
    r("", "pods", "Pod", true, &["pod", "po"]),
    BuiltinResource {
        storage_path: "minions",
        ..r("", "nodes", "Node", false, &["node", "no"])
    },
    r("", "namespaces", "Namespace", false, &["namespace", "ns"]),
    r("", "configmaps", "ConfigMap", true, &["configmap", "cm"]),
    r("", "secrets", "Secret", true, &["secret"]),
    BuiltinResource {
        storage_path: "services/specs",
        ..r("", "services", "Service", true, &["service", "svc"])
    },
    BuiltinResource {
        storage_path: "services/endpoints",
        ..r("", "endpoints", "Endpoints", true, &["ep"])
    },
    r("", "events", "Event", true, &["event", "ev"]),
    r(
        "",
        "serviceaccounts",
        "ServiceAccount",
        true,
        &["serviceaccount", "sa"],
    ),
    r(
        "",
        "persistentvolumes",
        "PersistentVolume",
        false,
        &["persistentvolume", "pv"],
    ),
    r(
        "",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        true,
        &["persistentvolumeclaim", "pvc"],
    ),
    r(
        "coordination.k8s.io",
        "leases",
        "Lease",
        true,
        &["lease", "leases.coordination.k8s.io"],
    ),
    r(
        "apps",
        "deployments",
        "Deployment",
        true,
        &["deployment", "deploy", "deployments.apps"],
    ),
    r(
        "apps",
        "replicasets",
        "ReplicaSet",
        true,
        &["replicaset", "rs", "replicasets.apps"],
    ),
    r(
        "apps",
        "daemonsets",
        "DaemonSet",
        true,
        &["daemonset", "ds", "daemonsets.apps"],
    ),
    r(
        "apps",
        "statefulsets",
        "StatefulSet",
        true,
        &["statefulset", "sts", "statefulsets.apps"],
    ),
    r(
        "apps",
        "controllerrevisions",
        "ControllerRevision",
        true,
        &[],
    ),
    r("batch", "jobs", "Job", true, &["job", "jobs.batch"]),
    r(
        "batch",
        "cronjobs",
        "CronJob",
        true,
        &["cronjob", "cj", "cronjobs.batch"],
    ),
    r(
        "discovery.k8s.io",
        "endpointslices",
        "EndpointSlice",
        true,
        &["endpointslice", "endpointslices.discovery.k8s.io"],
    ),
];

/// The built-in resource `resource` of `group` (`""` = core).
pub fn builtin(group: &str, resource: &str) -> Option<&'static BuiltinResource> {
    BUILTIN_RESOURCES
        .iter()
        .find(|b| b.resource == resource && b.group == group)
}

/// The built-in resource with the plural `resource`, whatever its group: how a key stored
/// without its group (`/registry/leases/...`) finds it.
pub fn builtin_by_plural(resource: &str) -> Option<&'static BuiltinResource> {
    BUILTIN_RESOURCES.iter().find(|b| b.resource == resource)
}

/// The built-in resource kubectl would find by `name` (lowercase): its plural or one of its
/// aliases.
pub fn builtin_by_name(name: &str) -> Option<&'static BuiltinResource> {
    BUILTIN_RESOURCES
        .iter()
        .find(|b| b.resource == name || b.aliases.contains(&name))
}

/// How many leading segments of a key's path after `<prefix>/` name its resource: two for
/// `<group>/<resource>` (the first segment contains a dot), `services/specs`,
/// `services/endpoints` and `ranges/<kind>`; one otherwise.
pub fn resource_segments<S: AsRef<[u8]>>(segs: &[S]) -> usize {
    match segs {
        [first, _, ..] if first.as_ref().contains(&b'.') => 2,
        [first, second, ..] => match (first.as_ref(), second.as_ref()) {
            (b"services", b"specs" | b"endpoints") | (b"ranges", _) => 2,
            _ => 1,
        },
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_find_builtins() {
        assert_eq!(builtin_by_name("deploy").map(|b| b.group), Some("apps"));
        assert_eq!(builtin_by_name("no").map(|b| b.resource), Some("nodes"));
        assert_eq!(
            builtin_by_plural("leases").map(|b| b.group),
            Some("coordination.k8s.io")
        );
        assert_eq!(builtin("", "leases"), None);
        assert_eq!(
            builtin("", "nodes").map(|b| b.storage_path),
            Some("minions")
        );
    }

    #[test]
    fn keys_at_each_storage_path_parse_as_the_resource() {
        for b in BUILTIN_RESOURCES {
            let key = format!("/registry/{}/ns/name", b.storage_path);
            let kp = super::super::KeyPath::parse(b"/registry", key.as_bytes());
            assert_eq!(kp.resource, b.resource, "{key}");
            assert_eq!(kp.namespace.as_deref(), Some("ns"), "{key}");
        }
    }

    #[test]
    fn resource_segments_follow_the_layout() {
        let n = |p: &str| resource_segments(&p.split('/').collect::<Vec<_>>());
        assert_eq!(n("pods/ns/p"), 1);
        assert_eq!(n("services/specs/ns/s"), 2);
        assert_eq!(n("services/endpoints/ns/s"), 2);
        assert_eq!(n("services"), 1);
        assert_eq!(n("ranges/serviceips"), 2);
        assert_eq!(n("example.com/widgets/ns/w"), 2);
        assert_eq!(n("example.com"), 1);
    }
}
