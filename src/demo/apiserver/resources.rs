//! Resources and keys: what the server knows about each resource it serves, and where its
//! objects live under the etcd prefix. The built-in resources and the key layout are
//! [`crate::model::kubernetes`]'s.

use crate::model::kubernetes::{self, BuiltinResource};
use crate::model::KeyPath;

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
            let group = kubernetes::builtin_by_plural(resource).map_or("", |b| b.group);
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
    let n = kubernetes::resource_segments(&segs);
    if segs.len() <= n {
        return None;
    }
    Some(format!("{prefix}/{}/", segs[..n].join("/")))
}

/// The default key prefix of a built-in resource that has no keys yet.
fn builtin_key_prefix(prefix: &str, b: &BuiltinResource) -> String {
    let prefix = prefix.trim_end_matches('/');
    format!("{prefix}/{}/", b.storage_path)
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
        kubernetes::qualified_name(&self.group, &self.resource)
    }

    pub(super) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub(super) fn for_builtin(prefix: &str, b: &BuiltinResource) -> Self {
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
        Some(match kubernetes::builtin(&group, &resource) {
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
