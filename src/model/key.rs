//! Parsing `/registry` key paths into resource, namespace and name, and escaping key bytes
//! for display. The layout the keys follow, with its historical paths, is described and
//! segmented by [`super::kubernetes`].

use std::borrow::Cow;
use std::fmt::Write as _;

use super::kubernetes::resource_segments;

/// A key split into its Kubernetes parts. All parts borrow from the key where possible.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPath<'a> {
    /// Resource as `kubectl` names it with its group: `pods`, `widgets.example.com`,
    /// `customresourcedefinitions.apiextensions.k8s.io`; `(outside prefix)` for keys not
    /// under the prefix, and the key's first segment for non-object keys such as
    /// `compact_rev_key`.
    pub resource: Cow<'a, str>,
    /// Namespace, or `None` for cluster-scoped objects.
    pub namespace: Option<Cow<'a, str>>,
    /// Object name (may be empty for singleton keys such as `ranges/serviceips`).
    pub name: Cow<'a, str>,
}

/// Resource shown for keys that do not start with the prefix.
pub const OUTSIDE_PREFIX: &str = "(outside prefix)";

/// Resource shown for keys under the prefix with no resource segment: the prefix itself
/// with its slash (`/registry/`) and keys such as `/registry//x`. Nothing Kubernetes writes
/// looks like this; a tool or a mistake does, and it must be findable.
pub const NO_RESOURCE: &str = "(no resource)";

impl<'a> KeyPath<'a> {
    /// Parses `key` under `prefix` (e.g. `/registry`, with or without trailing slash).
    /// Never fails: non-UTF-8 segments are shown escaped (`cm\xff`).
    pub fn parse(prefix: &[u8], key: &'a [u8]) -> KeyPath<'a> {
        let prefix = prefix.strip_suffix(b"/").unwrap_or(prefix);
        let rest = match key.strip_prefix(prefix) {
            Some(r) if r.first() == Some(&b'/') => &r[1..],
            Some([]) => b"".as_slice(),
            _ => {
                return KeyPath {
                    resource: Cow::Borrowed(OUTSIDE_PREFIX),
                    namespace: None,
                    name: escape_bytes(key),
                }
            }
        };
        let segs: Vec<&'a [u8]> = rest.split(|b| *b == b'/').collect();
        let (head, tail) = segs.split_at(resource_segments(&segs).min(segs.len()));
        let resource: Cow<'a, str> = match head {
            [group, resource] if group.contains(&b'.') => Cow::Owned(format!(
                "{}.{}",
                escape_bytes(resource),
                escape_bytes(group)
            )),
            [b"ranges", kind] => Cow::Owned(format!("ranges/{}", escape_bytes(kind))),
            // The historical storage paths (BuiltinResource::storage_path).
            [b"services", b"specs"] => Cow::Borrowed("services"),
            [b"services", b"endpoints"] => Cow::Borrowed("endpoints"),
            [b"minions"] => Cow::Borrowed("nodes"),
            [b"", ..] => Cow::Borrowed(NO_RESOURCE),
            [first, ..] => escape_bytes(first),
            [] => Cow::Borrowed(NO_RESOURCE),
        };
        match tail {
            [] => KeyPath {
                resource,
                namespace: None,
                name: Cow::Borrowed(""),
            },
            [name] => KeyPath {
                resource,
                namespace: None,
                name: escape_bytes(name),
            },
            [ns, name @ ..] => {
                let name = name.join(&b'/');
                KeyPath {
                    resource,
                    namespace: Some(escape_bytes(ns)),
                    name: Cow::Owned(escape_bytes(&name).into_owned()),
                }
            }
        }
    }
}

/// The smallest key greater than every key starting with `prefix` (etcd's `range_end` for
/// a prefix range); `[0]` means "to the end of the keyspace" in etcd's range API.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// Renders bytes for display: valid UTF-8 printable text as is, anything else escaped
/// as `\xNN` (so `/registry/configmaps/default/cm\xff` stays readable and unambiguous).
/// A literal backslash is shown as `\\`.
pub fn escape_bytes(b: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(b) {
        if !s.chars().any(|c| c.is_control() || c == '\\') {
            return Cow::Borrowed(s);
        }
    }
    let mut out = String::with_capacity(b.len() + 8);
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                c if c.is_control() => {
                    let mut buf = [0u8; 4];
                    for byte in c.encode_utf8(&mut buf).bytes() {
                        let _ = write!(out, "\\x{byte:02x}");
                    }
                }
                c => out.push(c),
            }
        }
        for byte in chunk.invalid() {
            let _ = write!(out, "\\x{byte:02x}");
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(key: &str) -> (String, Option<String>, String) {
        let k = KeyPath::parse(b"/registry", key.as_bytes());
        (
            k.resource.into_owned(),
            k.namespace.map(|n| n.into_owned()),
            k.name.into_owned(),
        )
    }

    #[test]
    fn namespaced_and_cluster_scoped() {
        assert_eq!(
            p("/registry/pods/default/p1"),
            ("pods".into(), Some("default".into()), "p1".into())
        );
        assert_eq!(
            p("/registry/namespaces/kube-system"),
            ("namespaces".into(), None, "kube-system".into())
        );
    }

    #[test]
    fn groups_and_quirks() {
        assert_eq!(
            p("/registry/example.com/widgets/default/w1"),
            (
                "widgets.example.com".into(),
                Some("default".into()),
                "w1".into()
            )
        );
        assert_eq!(
            p("/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com").0,
            "customresourcedefinitions.apiextensions.k8s.io"
        );
        assert_eq!(
            p("/registry/services/specs/default/kubernetes").0,
            "services"
        );
        assert_eq!(
            p("/registry/services/endpoints/default/kubernetes").0,
            "endpoints"
        );
        assert_eq!(
            p("/registry/minions/node-1"),
            ("nodes".into(), None, "node-1".into())
        );
        assert_eq!(p("/registry/ranges/serviceips").0, "ranges/serviceips");
        assert_eq!(p("/registry/masterleases/10.0.0.1").0, "masterleases");
        assert_eq!(p("compact_rev_key").0, OUTSIDE_PREFIX);
        assert_eq!(p("/registry/").0, NO_RESOURCE);
        assert_eq!(p("/registry//x").0, NO_RESOURCE);
        assert_eq!(p("/other/k1").0, OUTSIDE_PREFIX);
    }

    #[test]
    fn prefix_with_trailing_slash_and_openshift_prefix() {
        let k = KeyPath::parse(b"/kubernetes.io/", b"/kubernetes.io/builds/ns1/b1");
        assert_eq!(k.resource, "builds");
        assert_eq!(k.namespace.as_deref(), Some("ns1"));
        assert_eq!(k.name, "b1");
    }

    #[test]
    fn non_utf8_key_is_escaped_br01() {
        // Not UTF-8: `/registry/configmaps/default/cm` followed by a stray byte 0xff.
        let key = b"/registry/configmaps/default/cm\xff";
        let k = KeyPath::parse(b"/registry", key);
        assert_eq!(k.resource, "configmaps");
        assert_eq!(k.name, "cm\\xff");
        assert_eq!(escape_bytes(key), "/registry/configmaps/default/cm\\xff");
        assert_eq!(escape_bytes(b"a\\b"), "a\\\\b");
        assert_eq!(escape_bytes(b"a\nb"), "a\\x0ab");
    }
}
