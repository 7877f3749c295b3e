//! Which resources the informers watch: `--informers` entries resolved to a group, version,
//! plural and kind, from the built-in table ([`crate::model::kubernetes`]), an explicit
//! `group/version/resource`, or the apiserver's discovery. Enters as the flag's text, leaves
//! as [`InformerResource`]s (or one message per entry that does not resolve).

use kube::api::ApiResource;

use super::one_line_kube;
use crate::model::kubernetes;

/// `--informers` default: the resources whose informers matter most to a control plane.
pub const DEFAULT_INFORMERS: &[&str] = &["pods", "nodes", "leases", "events"];

/// One resource to inform on. `group` is `""` for the core group; `resource` is the plural
/// (`pods`); `kind` is cosmetic (URLs use group, version and resource).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InformerResource {
    pub group: String,
    pub version: String,
    pub resource: String,
    pub kind: String,
}

impl InformerResource {
    pub fn new(group: &str, version: &str, resource: &str, kind: &str) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
            kind: kind.into(),
        }
    }

    /// kube's description of the resource, for `Api::all_with`.
    pub fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.clone(),
            version: self.version.clone(),
            api_version: if self.group.is_empty() {
                self.version.clone()
            } else {
                format!("{}/{}", self.group, self.version)
            },
            kind: self.kind.clone(),
            plural: self.resource.clone(),
        }
    }

    /// `pods`, `leases.coordination.k8s.io` (kubectl's resource.group form).
    pub fn label(&self) -> String {
        kubernetes::qualified_name(&self.group, &self.resource)
    }
}

/// A built-in resource by plural, singular, short name or `resource.group`.
pub fn resolve_builtin(name: &str) -> Option<InformerResource> {
    let n = name.trim().to_ascii_lowercase();
    kubernetes::builtin_by_name(&n)
        .map(|b| InformerResource::new(b.group, b.version, b.resource, b.kind))
}

/// Parses one `--informers` entry: a known name (`pods`, `leases`, `deploy`, …),
/// `group/version/resource` (`coordination.k8s.io/v1/leases`) or `version/resource` for the
/// core group (`v1/pods`). `Ok(None)`: a plain name that needs discovery (a CRD, an
/// uncommon built-in). `Err`: malformed.
pub fn parse_resource(spec: &str) -> Result<Option<InformerResource>, String> {
    let s = spec.trim();
    let valid = |p: &str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
    };
    let parts: Vec<&str> = s.split('/').collect();
    let (group, version, resource) = match parts.as_slice() {
        [name] => {
            if !valid(name) {
                return Err(format!("'{spec}' is not a resource name"));
            }
            return Ok(resolve_builtin(name));
        }
        [v, r] => ("", *v, *r),
        [g, v, r] => (*g, *v, *r),
        _ => {
            return Err(format!(
                "'{spec}': use a resource name (pods), version/resource (v1/pods) or group/version/resource (coordination.k8s.io/v1/leases)"
            ))
        }
    };
    // The core group may be written as "core" or left empty ("/v1/pods").
    let group = if group == "core" { "" } else { group };
    if !(group.is_empty() || valid(group)) || !valid(version) || !valid(resource) {
        return Err(format!("'{spec}' is not group/version/resource"));
    }
    let resource = resource.to_ascii_lowercase();
    let kind = kubernetes::builtin(group, &resource)
        .map(|b| b.kind.to_string())
        .unwrap_or_else(|| guess_kind(&resource));
    Ok(Some(InformerResource::new(
        group, version, &resource, &kind,
    )))
}

/// `networkpolicies` → `Networkpolicy`: good enough for display; URLs do not use the kind.
fn guess_kind(plural: &str) -> String {
    let singular = if let Some(s) = plural.strip_suffix("ies") {
        format!("{s}y")
    } else if let Some(s) = plural.strip_suffix("ses") {
        format!("{s}s")
    } else {
        plural.strip_suffix('s').unwrap_or(plural).to_string()
    };
    let mut c = singular.chars();
    match c.next() {
        Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
        None => singular,
    }
}

/// Splits and checks the `--informers` list: commas and whitespace separate, `none` (or an
/// empty list) disables informers, duplicates are dropped.
pub fn parse_informer_list(items: &[String]) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        for s in item
            .split([',', ' '])
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            if s.eq_ignore_ascii_case("none") {
                continue;
            }
            parse_resource(s)?;
            if !out.iter().any(|o| o == s) {
                out.push(s.to_string());
            }
        }
    }
    let any_none = items
        .iter()
        .flat_map(|i| i.split([',', ' ']))
        .any(|s| s.trim().eq_ignore_ascii_case("none"));
    if any_none && !out.is_empty() {
        return Err("--informers: 'none' cannot be combined with resources".into());
    }
    Ok(out)
}

/// Finds a resource by name through the apiserver's discovery (core v1, then every group's
/// preferred version): plural, singular, short name, kind, or `resource.group`. Only
/// resources that can be listed and watched qualify.
pub async fn discover_resource(
    client: &kube::Client,
    name: &str,
) -> Result<InformerResource, String> {
    let n = name.trim().to_ascii_lowercase();
    let (want, want_group) = match n.split_once('.') {
        Some((r, g)) => (r.to_string(), Some(g.to_string())),
        None => (n.clone(), None),
    };
    let matches = |r: &k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource| {
        !r.name.contains('/')
            && r.verbs.iter().any(|v| v == "list")
            && r.verbs.iter().any(|v| v == "watch")
            && (r.name == want
                || r.singular_name == want
                || r.kind.to_ascii_lowercase() == want
                || r.short_names.as_ref().is_some_and(|s| s.contains(&want)))
    };
    if want_group.is_none() {
        if let Ok(core) = client.list_core_api_resources("v1").await {
            if let Some(r) = core.resources.iter().find(|r| matches(r)) {
                return Ok(InformerResource::new("", "v1", &r.name, &r.kind));
            }
        }
    }
    let groups = client
        .list_api_groups()
        .await
        .map_err(|e| format!("discovery of '{name}' failed: {}", one_line_kube(&e)))?;
    for g in &groups.groups {
        if want_group.as_deref().is_some_and(|wg| wg != g.name) {
            continue;
        }
        let Some(ver) = g.preferred_version.as_ref().or_else(|| g.versions.first()) else {
            continue;
        };
        let Ok(list) = client.list_api_group_resources(&ver.group_version).await else {
            continue;
        };
        if let Some(r) = list.resources.iter().find(|r| matches(r)) {
            return Ok(InformerResource::new(
                &g.name,
                &ver.version,
                &r.name,
                &r.kind,
            ));
        }
    }
    Err(format!(
        "--informers: the apiserver serves no listable, watchable resource named '{name}'"
    ))
}

/// Resolves `--informers` entries: built-ins and `group/version/resource` directly, other
/// names through discovery. Entries that cannot be resolved become messages (returned).
pub async fn resolve_informers(
    client: &kube::Client,
    specs: &[String],
) -> (Vec<InformerResource>, Vec<String>) {
    let mut out: Vec<InformerResource> = Vec::new();
    let mut errors = Vec::new();
    for s in specs {
        let r = match parse_resource(s) {
            Ok(Some(r)) => Ok(r),
            Ok(None) => discover_resource(client, s).await,
            Err(e) => Err(e),
        };
        match r {
            Ok(r) if !out.contains(&r) => out.push(r),
            Ok(_) => {}
            Err(e) => errors.push(e),
        }
    }
    (out, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins() {
        let p = resolve_builtin("pods").unwrap();
        assert_eq!((p.group.as_str(), p.version.as_str()), ("", "v1"));
        assert_eq!(p.kind, "Pod");
        let l = resolve_builtin("leases").unwrap();
        assert_eq!(l.group, "coordination.k8s.io");
        assert_eq!(l.api_resource().api_version, "coordination.k8s.io/v1");
        assert_eq!(l.label(), "leases.coordination.k8s.io");
        let e = resolve_builtin("events").unwrap();
        assert_eq!((e.group.as_str(), e.kind.as_str()), ("", "Event"));
        assert_eq!(resolve_builtin("no").unwrap().resource, "nodes");
        assert_eq!(resolve_builtin("Deploy").unwrap().group, "apps");
        assert!(resolve_builtin("widgets").is_none());
    }

    #[test]
    fn gvr_syntax() {
        let r = parse_resource("coordination.k8s.io/v1/leases")
            .unwrap()
            .unwrap();
        assert_eq!(r, resolve_builtin("leases").unwrap());
        let r = parse_resource("v1/pods").unwrap().unwrap();
        assert_eq!(r, resolve_builtin("pods").unwrap());
        let r = parse_resource("core/v1/events").unwrap().unwrap();
        assert_eq!(r.group, "");
        let r = parse_resource("example.com/v1alpha1/widgetpolicies")
            .unwrap()
            .unwrap();
        assert_eq!(r.kind, "Widgetpolicy");
        assert_eq!(r.api_resource().plural, "widgetpolicies");
        assert_eq!(parse_resource("widgets").unwrap(), None);
        assert!(parse_resource("a/b/c/d").is_err());
        assert!(parse_resource("pods?x").is_err());
        assert!(parse_resource("/v1/").is_err());
    }

    #[test]
    fn informer_lists() {
        let l =
            |s: &[&str]| parse_informer_list(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        assert_eq!(
            l(&["pods,nodes, leases", "events,pods"]).unwrap(),
            ["pods", "nodes", "leases", "events"]
        );
        assert!(l(&["none"]).unwrap().is_empty());
        assert!(l(&[""]).unwrap().is_empty());
        assert!(l(&[]).unwrap().is_empty());
        assert!(l(&["none,pods"]).is_err());
        assert!(l(&["a/b/c/d"]).is_err());
    }

    #[test]
    fn guessed_kinds() {
        assert_eq!(guess_kind("networkpolicies"), "Networkpolicy");
        assert_eq!(guess_kind("ingressclasses"), "Ingressclass");
        assert_eq!(guess_kind("widgets"), "Widget");
    }
}
