//! Kubernetes protobuf schemas, resolved from (apiVersion, kind) to a decoding plan.
//!
//! The descriptors come from the Kubernetes `generated.proto` files shipped in the
//! `k8s-rs-pb` crate (Kubernetes 1.30 … 1.35), compiled by `build.rs` with `protox`; nothing
//! here is a hand-written field table. Every minor version is its own descriptor pool; on
//! first use they are merged into one [`Plan`]: each message gets the union of its fields
//! across versions, so objects stored under API versions or fields removed since 1.30 still
//! decode, and objects written by newer apiservers decode with their newer fields shown as
//! unknown fields rather than dropped.
//!
//! A [`Plan`] flattens the messages into an arena of [`MessagePlan`]s: JSON names,
//! scalar kinds, map/list shape, `omitempty` (from the `+optional` marker that Kubernetes'
//! API conventions put on the same fields as `omitempty`), inline embedding and the handful
//! of well-known apimachinery types with custom JSON (Time, MicroTime, Duration, Quantity,
//! IntOrString, RawExtension, FieldsV1, apiextensions' JSON and JSONSchemaProps unions). The
//! walker in `object.rs` reads only this arena, never prost-reflect, so decoding is one pass
//! over the bytes with no dynamic messages.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use prost_reflect::{DescriptorPool, FieldDescriptor, Kind, MessageDescriptor};

/// One compiled Kubernetes minor version: `("1.35", descriptor set bytes)`.
struct Source {
    version: &'static str,
    bytes: &'static [u8],
}

/// Newest first: resolution tries them in this order.
const SOURCES: [Source; 6] = [
    Source {
        version: "1.35",
        bytes: include_bytes!(concat!(env!("OUT_DIR"), "/k8s-v1_35.fds")),
    },
    Source {
        version: "1.34",
        bytes: include_bytes!(concat!(env!("OUT_DIR"), "/k8s-v1_34.fds")),
    },
    Source {
        version: "1.33",
        bytes: include_bytes!(concat!(env!("OUT_DIR"), "/k8s-v1_33.fds")),
    },
    Source {
        version: "1.32",
        bytes: include_bytes!(concat!(env!("OUT_DIR"), "/k8s-v1_32.fds")),
    },
    Source {
        version: "1.31",
        bytes: include_bytes!(concat!(env!("OUT_DIR"), "/k8s-v1_31.fds")),
    },
    Source {
        version: "1.30",
        bytes: include_bytes!(concat!(env!("OUT_DIR"), "/k8s-v1_30.fds")),
    },
];

/// `package.Message.field` for fields marked `+optional` (see build.rs).
const OPTIONAL: &str = include_str!(concat!(env!("OUT_DIR"), "/k8s-optional.txt"));

/// `package.Message` for named slice types, marked `+protobuf.nullable=true` (see build.rs).
const NAMED_SLICES: &str = include_str!(concat!(env!("OUT_DIR"), "/k8s-named-slices.txt"));

/// Schema versions compiled in, newest first, e.g. `["1.35", …, "1.30"]`.
pub fn versions() -> Vec<&'static str> {
    SOURCES.iter().map(|s| s.version).collect()
}

/// Embedded structs that Kubernetes flattens into their parent in JSON (`json:",inline"` in
/// the Go types) although protobuf keeps them as a nested field: `(field name, field type's
/// simple name)`, matched in every group and version. The Go struct tags are not in the
/// .proto files, so this short list is the one piece of JSON shape kept here; the golden
/// conformance test finds any that is missing.
const INLINE: &[(&str, &str)] = &[
    ("volumeSource", "VolumeSource"),
    ("persistentVolumeSource", "PersistentVolumeSource"),
    ("handler", "ProbeHandler"),
    ("ephemeralContainerCommon", "EphemeralContainerCommon"),
    ("ingressRuleValue", "IngressRuleValue"),
    ("ruleWithOperations", "RuleWithOperations"),
    ("rule", "Rule"),
    ("deviceConfiguration", "DeviceConfiguration"),
    ("localObjectReference", "LocalObjectReference"),
    // resource.k8s.io/v1alpha2 (Kubernetes ≤ 1.30) structured parameters.
    ("allocationResultModel", "AllocationResultModel"),
    ("resourceFilterModel", "ResourceFilterModel"),
    ("resourceRequestModel", "ResourceRequestModel"),
    ("resourceModel", "ResourceModel"),
    ("attributeValue", "NamedResourcesAttributeValue"),
];

/// Fields whose JSON name differs from the proto name: `(message, proto name, JSON name)`.
/// apiextensions' JSONSchemaProps also maps every `xKubernetesFooBar` to
/// `x-kubernetes-foo-bar` (see [`json_name`]).
const RENAMED: &[(&str, &str, &str)] = &[
    ("JSONSchemaProps", "ref", "$ref"),
    ("JSONSchemaProps", "schema", "$schema"),
    // Capitalised JSON tags: core/v1 `Port int32 json:"Port"`, apiextensions/v1beta1
    // `JSONPath string json:"JSONPath"` (elsewhere a capitalised proto name has a
    // lower-case JSON tag, e.g. `Webhooks` → `webhooks`).
    ("DaemonEndpoint", "Port", "Port"),
    ("CustomResourceColumnDefinition", "JSONPath", "JSONPath"),
];

/// Messages with a custom JSON form in Kubernetes (their MarshalJSON methods).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    /// An ordinary message: a JSON object of its fields.
    None,
    /// metav1.Time: RFC 3339 with whole seconds in UTC; the zero time is `null`.
    Time,
    /// metav1.MicroTime: RFC 3339 with six fractional digits in UTC; zero is `null`.
    MicroTime,
    /// metav1.Duration: Go's `time.Duration.String()`, e.g. `1h0m0s`.
    Duration,
    /// resource.Quantity: its canonical string; empty is `"0"`.
    Quantity,
    /// intstr.IntOrString: an int (type 0) or a string (type 1).
    IntOrString,
    /// runtime.RawExtension, metav1.FieldsV1, apiextensions JSON: field 1 holds JSON bytes
    /// embedded as they are; empty is `null`.
    RawJson,
    /// A named slice type (e.g. metav1.Verbs, authentication ExtraValue): field 1 `items`
    /// is the JSON array itself.
    Items,
    /// apiextensions JSONSchemaPropsOrArray: the array when non-empty, else the schema.
    SchemaOrArray,
    /// apiextensions JSONSchemaPropsOrBool: the schema when set, else the bool.
    SchemaOrBool,
    /// apiextensions JSONSchemaPropsOrStringArray: the strings when non-empty, else the
    /// schema, else `null`.
    SchemaOrStringArray,
}

/// Scalar protobuf types, as far as JSON rendering cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scalar {
    /// int32, int64, sfixed32, sfixed64, enum (varint or fixed, two's complement).
    Signed,
    /// sint32, sint64 (zigzag).
    Zigzag,
    /// uint32, uint64, fixed32, fixed64.
    Unsigned,
    /// bool.
    Bool,
    /// double.
    Double,
    /// float.
    Float,
    /// string (UTF-8; invalid bytes become U+FFFD as Go's encoding/json does).
    String,
    /// bytes (base64 in JSON).
    Bytes,
}

/// What a field (or a map value) holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// A scalar.
    Scalar(Scalar),
    /// A message: index into [`Plan::messages`].
    Message(u32),
}

/// One field of a message.
#[derive(Clone, Debug)]
pub struct FieldPlan {
    /// Field number.
    pub number: u32,
    /// Proto field name.
    pub name: Box<str>,
    /// JSON key (usually the proto name; see [`RENAMED`]).
    pub json_name: Box<str>,
    /// The key as written in JSON output, quoted and with the colon: `"name":`.
    pub key_json: Box<str>,
    /// Element type (for maps: the value type).
    pub ty: Ty,
    /// `repeated` (not maps).
    pub repeated: bool,
    /// `map<K, V>`: the key's scalar type.
    pub map_key: Option<Scalar>,
    /// Omitted from JSON when empty (`+optional`).
    pub omitempty: bool,
    /// Flattened into the parent object (see [`INLINE`]).
    pub inline: bool,
}

/// One message.
#[derive(Clone, Debug)]
pub struct MessagePlan {
    /// Full protobuf name, e.g. `api.core.v1.Pod`.
    pub full_name: Box<str>,
    /// Custom JSON form, if any.
    pub special: Special,
    /// The newest compiled Kubernetes version that has this message, e.g. `1.35`.
    pub newest: &'static str,
    /// Fields in declaration order (Kubernetes generates them in Go struct order) of the
    /// newest version, then fields only older versions have.
    pub fields: Vec<FieldPlan>,
    /// Field number → index into `fields` for numbers below 256 (`u16::MAX` = none).
    by_number: Vec<u16>,
}

impl MessagePlan {
    /// Index into `fields` of the field with this number.
    #[inline]
    pub fn field_index(&self, number: u32) -> Option<usize> {
        if let Some(&i) = self.by_number.get(number as usize) {
            return (i != u16::MAX).then_some(i as usize);
        }
        self.fields.iter().position(|f| f.number == number)
    }
}

/// `(group folder, version, kind)`, e.g. `("apps", "v1", "Deployment")`.
type Gvk = (Box<str>, Box<str>, Box<str>);

/// Every message of every compiled Kubernetes version, merged, plus the (group, version,
/// kind) index. A message present in several versions has the union of their fields by
/// number: Kubernetes never reuses a protobuf field number for another meaning, so a field
/// removed in a later release (e.g. PodResourceClaim.source, gone in 1.31) still decodes in
/// objects written before, and fields added later decode in objects written after.
pub struct Plan {
    /// The versions merged, e.g. `1.30–1.35`.
    pub versions: String,
    /// The arena.
    pub messages: Vec<MessagePlan>,
    by_name: HashMap<Box<str>, u32>,
    /// `(group folder, version, kind)` → message index; the group folder is the last-but-one
    /// package component (`core`, `apps`, `rbac`, `apiextensions`, `meta` …).
    kinds: HashMap<Gvk, u32>,
}

impl Plan {
    /// Index of a message by full name.
    pub fn message(&self, full_name: &str) -> Option<u32> {
        self.by_name.get(full_name).copied()
    }

    /// Merges the versions' descriptor sets, newest first (see [`Plan`]), decoding one pool
    /// at a time so only one is in memory. Fails if a set does not decode (a build defect).
    fn build(
        sources: &[Source],
        optional: &HashSet<&str>,
    ) -> Result<Plan, prost_reflect::DescriptorError> {
        let mut messages: Vec<MessagePlan> = Vec::new();
        let mut by_name: HashMap<Box<str>, u32> = HashMap::new();
        // Per message, per field: the full name of a message-typed field's type, linked to an
        // arena index once every version is in.
        let mut links: Vec<Vec<Option<String>>> = Vec::new();
        let mut kinds = HashMap::new();
        for src in sources {
            let version = &src.version;
            let pool = DescriptorPool::decode(src.bytes)?;
            for m in pool.all_messages() {
                let idx = match by_name.get(m.full_name()) {
                    Some(&i) => i,
                    None => {
                        let i = messages.len() as u32;
                        messages.push(MessagePlan {
                            full_name: m.full_name().into(),
                            special: special(&m),
                            newest: version,
                            fields: Vec::new(),
                            by_number: Vec::new(),
                        });
                        links.push(Vec::new());
                        by_name.insert(m.full_name().into(), i);
                        i
                    }
                };
                let pkg: Vec<&str> = m.package_name().split('.').collect();
                if pkg.len() >= 2 && m.parent_message().is_none() {
                    let (g, v) = (pkg[pkg.len() - 2], pkg[pkg.len() - 1]);
                    kinds
                        .entry((g.into(), v.into(), m.name().into()))
                        .or_insert(idx);
                }
                for f in m.fields() {
                    let mp = &mut messages[idx as usize];
                    if mp.fields.iter().any(|x| x.number == f.number()) {
                        continue;
                    }
                    let (fp, link) = field_plan(&m, &f, optional);
                    mp.fields.push(fp);
                    links[idx as usize].push(link);
                }
            }
        }
        for (mp, names) in messages.iter_mut().zip(&links) {
            for (f, name) in mp.fields.iter_mut().zip(names) {
                if let Some(n) = name {
                    f.ty = Ty::Message(by_name[n.as_str()]);
                }
            }
            mp.by_number = by_number(&mp.fields);
        }
        let versions = match (sources.last(), sources.first()) {
            (Some(old), Some(new)) => format!("{}–{}", old.version, new.version),
            _ => String::new(),
        };
        Ok(Plan {
            versions,
            messages,
            by_name,
            kinds,
        })
    }

    /// The message for a top-level kind: `group` is the API group (`""` for core),
    /// `version` e.g. `v1`. Kinds missing from the group (WatchEvent, Status, the option
    /// kinds) are looked up in meta/v1, where Kubernetes registers them for every group.
    pub fn resolve(&self, group: &str, version: &str, kind: &str) -> Option<u32> {
        let folder = group_folder(group);
        let key = |g: &str, v: &str| (Box::<str>::from(g), Box::from(v), Box::from(kind));
        self.kinds
            .get(&key(folder, version))
            .or_else(|| self.kinds.get(&key("meta", "v1")))
            .copied()
    }
}

/// The .proto package folder of an API group: `""` → `core`, else the group's first DNS
/// label (`rbac.authorization.k8s.io` → `rbac`), except `internal.apiserver.k8s.io`, whose
/// Go package is `apiserverinternal`.
pub fn group_folder(group: &str) -> &str {
    match group {
        "" => "core",
        "internal.apiserver.k8s.io" => "apiserverinternal",
        g => g.split('.').next().unwrap_or(g),
    }
}

fn scalar(kind: &Kind) -> Option<Scalar> {
    Some(match kind {
        Kind::Int32 | Kind::Int64 | Kind::Sfixed32 | Kind::Sfixed64 | Kind::Enum(_) => {
            Scalar::Signed
        }
        Kind::Sint32 | Kind::Sint64 => Scalar::Zigzag,
        Kind::Uint32 | Kind::Uint64 | Kind::Fixed32 | Kind::Fixed64 => Scalar::Unsigned,
        Kind::Bool => Scalar::Bool,
        Kind::Double => Scalar::Double,
        Kind::Float => Scalar::Float,
        Kind::String => Scalar::String,
        Kind::Bytes => Scalar::Bytes,
        Kind::Message(_) => return None,
    })
}

/// The field type, with a placeholder index and the type's full name for message types.
fn ty(kind: &Kind) -> (Ty, Option<String>) {
    match kind {
        Kind::Message(m) => (Ty::Message(u32::MAX), Some(m.full_name().to_owned())),
        k => (Ty::Scalar(scalar(k).unwrap_or(Scalar::Bytes)), None),
    }
}

fn special(m: &MessageDescriptor) -> Special {
    let name = m.full_name();
    let ends = |s: &str| name.ends_with(s);
    if ends("apis.meta.v1.Time") {
        Special::Time
    } else if ends("apis.meta.v1.MicroTime") {
        Special::MicroTime
    } else if ends("apis.meta.v1.Duration") {
        Special::Duration
    } else if ends("api.resource.Quantity") {
        Special::Quantity
    } else if ends("util.intstr.IntOrString") {
        Special::IntOrString
    } else if ends("pkg.runtime.RawExtension")
        || ends("apis.meta.v1.FieldsV1")
        || (name.contains("apiextensions") && m.name() == "JSON")
    {
        Special::RawJson
    } else if m.name() == "JSONSchemaPropsOrArray" {
        Special::SchemaOrArray
    } else if m.name() == "JSONSchemaPropsOrBool" {
        Special::SchemaOrBool
    } else if m.name() == "JSONSchemaPropsOrStringArray" {
        Special::SchemaOrStringArray
    } else if named_slices().contains(name) && m.fields().len() == 1 {
        Special::Items
    } else {
        Special::None
    }
}

/// JSON key of a field: [`RENAMED`], then JSONSchemaProps' `xKubernetesFooBar` →
/// `x-kubernetes-foo-bar`, then the Go-name rule for the few proto names go-to-protobuf took
/// from the Go field name instead of the JSON tag (`Webhooks`, `Expression`, `aPIGroup`,
/// `uID`, `JSONPath`): the leading acronym is lowercased as the JSON tags spell them
/// (`webhooks`, `expression`, `apiGroup`, `uid`, `jsonPath`). Otherwise the proto name, which
/// for Kubernetes types is the JSON name.
pub fn json_name(message: &str, field: &str) -> String {
    if let Some((_, _, j)) = RENAMED
        .iter()
        .find(|(m, f, _)| *m == message && *f == field)
    {
        return (*j).to_owned();
    }
    if message == "JSONSchemaProps" {
        if let Some(rest) = field.strip_prefix("xKubernetes") {
            let mut out = String::from("x-kubernetes");
            for c in rest.chars() {
                if c.is_ascii_uppercase() {
                    out.push('-');
                    out.push(c.to_ascii_lowercase());
                } else {
                    out.push(c);
                }
            }
            return out;
        }
    }
    let mut chars = field.chars();
    let (c0, c1) = (chars.next(), chars.next());
    let odd =
        c0.is_some_and(|c| c.is_ascii_uppercase()) || c1.is_some_and(|c| c.is_ascii_uppercase());
    if !odd {
        return field.to_owned();
    }
    // Rebuild the Go name, then lowercase its leading capitals the way the JSON tags do.
    let go: Vec<char> = field
        .chars()
        .enumerate()
        .map(|(i, c)| if i == 0 { c.to_ascii_uppercase() } else { c })
        .collect();
    let run = go.iter().take_while(|c| c.is_ascii_uppercase()).count();
    let lower = if run == go.len() || run == 1 {
        run
    } else {
        run - 1
    };
    go.iter()
        .enumerate()
        .map(|(i, c)| {
            if i < lower {
                c.to_ascii_lowercase()
            } else {
                *c
            }
        })
        .collect()
}

fn field_plan(
    m: &MessageDescriptor,
    f: &FieldDescriptor,
    optional: &HashSet<&str>,
) -> (FieldPlan, Option<String>) {
    let ((ty, link), map_key, repeated) = if f.is_map() {
        let Kind::Message(entry) = f.kind() else {
            unreachable!("map fields have entry messages")
        };
        let key = scalar(&entry.map_entry_key_field().kind()).unwrap_or(Scalar::String);
        (ty(&entry.map_entry_value_field().kind()), Some(key), false)
    } else {
        (ty(&f.kind()), None, f.is_list())
    };
    let full = format!("{}.{}", m.full_name(), f.name());
    let type_name = match f.kind() {
        Kind::Message(t) => Some(t.name().to_owned()),
        _ => None,
    };
    let inline = INLINE
        .iter()
        .any(|(field, ty)| *field == f.name() && type_name.as_deref() == Some(*ty));
    let json = json_name(m.name(), f.name());
    let plan = FieldPlan {
        number: f.number(),
        name: f.name().into(),
        key_json: format!("{}:", serde_json::Value::String(json.clone())).into(),
        json_name: json.into(),
        ty,
        repeated,
        map_key,
        // JSONSchemaProps tags every field omitempty but marks none `+optional`.
        omitempty: optional.contains(full.as_str()) || m.name() == "JSONSchemaProps",
        inline,
    };
    (plan, link)
}

/// Field number → index into `fields`, for numbers below 256 (`u16::MAX` = none).
fn by_number(fields: &[FieldPlan]) -> Vec<u16> {
    let mut out = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        let n = f.number as usize;
        if n < 256 {
            if out.len() <= n {
                out.resize(n + 1, u16::MAX);
            }
            out[n] = i as u16;
        }
    }
    out
}

fn named_slices() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| NAMED_SLICES.lines().collect())
}

fn optional_set() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| OPTIONAL.lines().collect())
}

static PLAN: OnceLock<Option<Plan>> = OnceLock::new();

/// The merged plan of every compiled version, built on first use (about 70 ms). `None` only if
/// an embedded descriptor set fails to load, which a unit test rules out.
pub fn plan() -> Option<&'static Plan> {
    PLAN.get_or_init(|| Plan::build(&SOURCES, optional_set()).ok())
        .as_ref()
}

/// The message for `(group, version, kind)` (see [`Plan::resolve`]).
pub fn resolve(group: &str, version: &str, kind: &str) -> Option<(&'static Plan, u32)> {
    let p = plan()?;
    p.resolve(group, version, kind).map(|m| (p, m))
}

/// Splits an apiVersion into (group, version): `v1` → `("", "v1")`, `apps/v1` →
/// `("apps", "v1")`.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.rsplit_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_version_loads_and_merges() {
        let p = plan().expect("descriptor sets load");
        assert_eq!(p.versions, "1.30–1.35");
        let pod = p.resolve("", "v1", "Pod").expect("Pod");
        assert_eq!(&*p.messages[pod as usize].full_name, "api.core.v1.Pod");
        assert_eq!(p.messages[pod as usize].newest, "1.35");
        // PodResourceClaim.source (field 2) was removed in 1.31 and still decodes.
        let prc = &p.messages[p.message("api.core.v1.PodResourceClaim").unwrap() as usize];
        assert!(prc.fields.iter().any(|f| &*f.name == "source"));
        // resource.k8s.io/v1alpha2 exists only in the 1.30 schema.
        let (_, rc) = resolve("resource.k8s.io", "v1alpha2", "ResourceClaim").unwrap();
        assert_eq!(p.messages[rc as usize].newest, "1.30");
    }

    #[test]
    fn group_folders() {
        assert_eq!(group_folder(""), "core");
        assert_eq!(group_folder("rbac.authorization.k8s.io"), "rbac");
        assert_eq!(
            group_folder("internal.apiserver.k8s.io"),
            "apiserverinternal"
        );
        let (p, m) = resolve("apiextensions.k8s.io", "v1", "CustomResourceDefinition").unwrap();
        assert!(p.messages[m as usize]
            .full_name
            .ends_with("CustomResourceDefinition"));
        let (p, m) = resolve("", "v1", "WatchEvent").unwrap();
        assert!(p.messages[m as usize]
            .full_name
            .ends_with("meta.v1.WatchEvent"));
    }

    #[test]
    fn optional_marker_and_specials() {
        let p = plan().unwrap();
        let c = &p.messages[p.message("api.core.v1.Container").unwrap() as usize];
        let image = c.fields.iter().find(|f| &*f.name == "image").unwrap();
        assert!(image.omitempty);
        let name = c.fields.iter().find(|f| &*f.name == "name").unwrap();
        assert!(!name.omitempty, "container name is required");
        let t = p.message("apimachinery.pkg.apis.meta.v1.Time").unwrap();
        assert_eq!(p.messages[t as usize].special, Special::Time);
        let v = p.message("apimachinery.pkg.apis.meta.v1.Verbs").unwrap();
        assert_eq!(p.messages[v as usize].special, Special::Items);
        assert_eq!(
            json_name("JSONSchemaProps", "xKubernetesPreserveUnknownFields"),
            "x-kubernetes-preserve-unknown-fields"
        );
        for (proto, json) in [
            ("Webhooks", "webhooks"),
            ("aPIGroup", "apiGroup"),
            ("uID", "uid"),
            ("Expression", "expression"),
            ("podIP", "podIP"),
            ("name", "name"),
        ] {
            assert_eq!(json_name("X", proto), json);
        }
    }
}
