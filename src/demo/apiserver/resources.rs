//! Resources and keys: the built-in resources the server knows the API version and kind of,
//! and where each resource's objects live under the etcd prefix.

use crate::model::KeyPath;

/// A built-in resource the server knows the API version and kind of.
pub(super) struct Builtin {
    resource: &'static str,
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    namespaced: bool,
}

const fn b(
    resource: &'static str,
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    namespaced: bool,
) -> Builtin {
    Builtin {
        resource,
        group,
        version,
        kind,
        namespaced,
    }
}

/// Built-in resources stored without their group in the key (`/registry/leases/...` holds
/// `coordination.k8s.io` Leases); a watch cache is created for each at start, as
/// kube-apiserver does for every resource it serves.
pub(super) const BUILTINS: &[Builtin] = &[
    b("pods", "", "v1", "Pod", true),
    b("nodes", "", "v1", "Node", false),
    b("namespaces", "", "v1", "Namespace", false),
    b("configmaps", "", "v1", "ConfigMap", true),
    b("secrets", "", "v1", "Secret", true),
    b("services", "", "v1", "Service", true),
    b("endpoints", "", "v1", "Endpoints", true),
    b("events", "", "v1", "Event", true),
    b("serviceaccounts", "", "v1", "ServiceAccount", true),
    b("persistentvolumes", "", "v1", "PersistentVolume", false),
    b(
        "persistentvolumeclaims",
        "",
        "v1",
        "PersistentVolumeClaim",
        true,
    ),
    b("leases", "coordination.k8s.io", "v1", "Lease", true),
    b("deployments", "apps", "v1", "Deployment", true),
    b("replicasets", "apps", "v1", "ReplicaSet", true),
    b("daemonsets", "apps", "v1", "DaemonSet", true),
    b("statefulsets", "apps", "v1", "StatefulSet", true),
    b(
        "controllerrevisions",
        "apps",
        "v1",
        "ControllerRevision",
        true,
    ),
    b("jobs", "batch", "v1", "Job", true),
    b("cronjobs", "batch", "v1", "CronJob", true),
    b(
        "endpointslices",
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        true,
    ),
];

fn builtin(group: &str, resource: &str) -> Option<&'static Builtin> {
    BUILTINS
        .iter()
        .find(|b| b.resource == resource && b.group == group)
}

/// The resource as `kubectl` names it: `pods`, `leases.coordination.k8s.io`.
pub(super) fn display_name(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

/// The API group and resource of an etcd key, as kube-apiserver labels its storage metrics:
/// the resource is derived from the key path like [`KeyPath::parse`] does (`services/specs`
/// is `services`, `<group>/<resource>` for resources stored under their group), and built-in
/// resources stored without a group get theirs (`/registry/leases/...` is
/// `("coordination.k8s.io", "leases")`, `/registry/deployments/...` `("apps",
/// "deployments")`; core resources `""`). `None` for keys outside `prefix` and for non-object
/// keys such as `ranges/serviceips`.
pub fn storage_group_resource(prefix: &str, key: &[u8]) -> Option<(String, String)> {
    let prefix = prefix.trim_end_matches('/');
    let rest = key.strip_prefix(prefix.as_bytes())?.strip_prefix(b"/")?;
    if rest.is_empty() {
        return None;
    }
    let kp = KeyPath::parse(prefix.as_bytes(), key);
    let resource = kp.resource.as_ref();
    if resource.is_empty() || resource.contains('/') {
        return None;
    }
    match resource.split_once('.') {
        Some((res, group)) => Some((group.to_string(), res.to_string())),
        None => {
            let group = BUILTINS
                .iter()
                .find(|b| b.resource == resource)
                .map_or("", |b| b.group);
            Some((group.to_string(), resource.to_string()))
        }
    }
}

/// The key prefix (with trailing `/`) holding the resource `key` belongs to, segmented like
/// [`KeyPath::parse`]: `/registry/pods/`, `/registry/services/specs/`,
/// `/registry/example.com/widgets/`.
fn resource_key_prefix(prefix: &str, key: &[u8]) -> Option<String> {
    let prefix = prefix.trim_end_matches('/');
    let rest = key.strip_prefix(prefix.as_bytes())?.strip_prefix(b"/")?;
    let rest = std::str::from_utf8(rest).ok()?;
    let segs: Vec<&str> = rest.split('/').collect();
    let n = match segs.as_slice() {
        [first, _, ..] if first.contains('.') => 2,
        ["services", "specs" | "endpoints", ..] | ["ranges", _, ..] => 2,
        [_, ..] => 1,
        [] => return None,
    };
    if segs.len() <= n {
        return None;
    }
    Some(format!("{prefix}/{}/", segs[..n].join("/")))
}

/// The default key prefix of a built-in resource that has no keys yet.
fn builtin_key_prefix(prefix: &str, b: &Builtin) -> String {
    let prefix = prefix.trim_end_matches('/');
    match b.resource {
        "services" => format!("{prefix}/services/specs/"),
        "endpoints" => format!("{prefix}/services/endpoints/"),
        "nodes" => format!("{prefix}/minions/"),
        r => format!("{prefix}/{r}/"),
    }
}

/// What the server knows about one resource.
#[derive(Debug, Clone)]
pub(super) struct ResourceInfo {
    pub(super) group: String,
    pub(super) resource: String,
    /// API version served (`v1`); learned from the objects for custom resources.
    pub(super) version: String,
    /// Kind (`Pod`); learned from the objects for custom resources.
    pub(super) kind: String,
    pub(super) namespaced: bool,
    pub(super) key_prefix: String,
}

impl ResourceInfo {
    pub(super) fn name(&self) -> String {
        display_name(&self.group, &self.resource)
    }

    pub(super) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub(super) fn for_builtin(prefix: &str, b: &Builtin) -> Self {
        ResourceInfo {
            group: b.group.to_string(),
            resource: b.resource.to_string(),
            version: b.version.to_string(),
            kind: b.kind.to_string(),
            namespaced: b.namespaced,
            key_prefix: builtin_key_prefix(prefix, b),
        }
    }

    pub(super) fn for_key(prefix: &str, key: &[u8]) -> Option<Self> {
        let (group, resource) = storage_group_resource(prefix, key)?;
        let key_prefix = resource_key_prefix(prefix, key)?;
        let kp = KeyPath::parse(prefix.trim_end_matches('/').as_bytes(), key);
        if kp.name.is_empty() {
            return None;
        }
        Some(match builtin(&group, &resource) {
            Some(b) => ResourceInfo {
                key_prefix,
                ..ResourceInfo::for_builtin(prefix, b)
            },
            None => ResourceInfo {
                version: if group.is_empty() {
                    "v1".to_string()
                } else {
                    String::new()
                },
                kind: String::new(),
                namespaced: kp.namespace.is_some(),
                group,
                resource,
                key_prefix,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_resource_of_keys() {
        let gr = |k: &str| storage_group_resource("/registry", k.as_bytes());
        assert_eq!(
            gr("/registry/pods/ns/p"),
            Some((String::new(), "pods".into()))
        );
        assert_eq!(
            gr("/registry/leases/kube-node-lease/n1"),
            Some(("coordination.k8s.io".into(), "leases".into()))
        );
        assert_eq!(
            gr("/registry/deployments/ns/web"),
            Some(("apps".into(), "deployments".into()))
        );
        assert_eq!(
            gr("/registry/services/specs/default/kubernetes"),
            Some((String::new(), "services".into()))
        );
        assert_eq!(
            gr("/registry/example.com/widgets/ns/w"),
            Some(("example.com".into(), "widgets".into()))
        );
        assert_eq!(gr("compact_rev_key"), None);
        assert_eq!(gr("/registry/ranges/serviceips"), None);
        assert_eq!(gr("/registryx/pods/a"), None);
    }

    #[test]
    fn key_prefixes() {
        let kp = |k: &str| resource_key_prefix("/registry/", k.as_bytes());
        assert_eq!(
            kp("/registry/pods/ns/p").as_deref(),
            Some("/registry/pods/")
        );
        assert_eq!(
            kp("/registry/services/specs/ns/s").as_deref(),
            Some("/registry/services/specs/")
        );
        assert_eq!(
            kp("/registry/example.com/widgets/ns/w").as_deref(),
            Some("/registry/example.com/widgets/")
        );
        assert_eq!(kp("/registry/pods"), None);
    }
}
