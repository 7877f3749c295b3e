//! Structural diff of two revisions of one object, and who wrote the newer one.
//!
//! Input: two decoded objects as `serde_json::Value` (from [`crate::decode::Decoded::value`],
//! so Secret payloads arrive already redacted unless `--show-secrets`). Output: an
//! [`ObjectDiff`], a flat list of changes by path (`spec.replicas`,
//! `metadata.labels.app`, `spec.template.spec.containers[name=app].image`), and the
//! `managedFields` entries that account for the newer revision. The opened key's screen turns it into
//! `~ path: old → new`, `+ path: value`, `- path: value` lines ([`ObjectDiff::lines`]).
//!
//! Rules: `metadata.resourceVersion` is ignored (it is the key's mod_revision, different in
//! every revision by construction); `metadata.managedFields` is summarized per entry
//! (manager, operation, subresource) instead of listing field sets; lists of objects are
//! matched by `name` (containers, ports, volumes) or, failing that, by `type` (conditions,
//! the patch merge key Kubernetes uses for them), else by index; lists of scalars compare
//! whole.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

/// One difference at a path.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// The value at `path` changed (a scalar, a scalar list, or a change of type).
    Changed {
        /// Dotted path, e.g. `spec.replicas`.
        path: String,
        /// Value in the older revision.
        old: Value,
        /// Value in the newer revision.
        new: Value,
    },
    /// `path` exists only in the newer revision.
    Added {
        /// Dotted path.
        path: String,
        /// Its value.
        value: Value,
    },
    /// `path` exists only in the older revision.
    Removed {
        /// Dotted path.
        path: String,
        /// Its former value.
        value: Value,
    },
}

/// What happened to one `managedFields` entry, identified by (manager, operation,
/// subresource) as the apiserver's field manager does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedChange {
    /// `+` added, `-` removed, `~` updated (time or field set changed).
    pub op: char,
    /// `kube-controller-manager (Update, status)`.
    pub entry: String,
}

/// A writer of a revision: a `managedFields` entry with the newest `time`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Writer {
    /// `manager`, e.g. `kube-controller-manager`.
    pub manager: String,
    /// `Update` or `Apply`.
    pub operation: String,
    /// RFC 3339 time as stored (`2024-01-01T00:00:00Z`), when the entry has one.
    pub time: Option<String>,
    /// `status`, `scale`… when the write went through a subresource.
    pub subresource: Option<String>,
}

impl Writer {
    /// `kube-controller-manager Update status at 2024-01-01T00:00:00Z`.
    pub fn describe(&self) -> String {
        let mut s = format!("{} {}", self.manager, self.operation);
        if let Some(sub) = &self.subresource {
            s.push_str(&format!(" (subresource {sub})"));
        }
        if let Some(t) = &self.time {
            s.push_str(&format!(" at {t}"));
        }
        s
    }
}

/// The difference between an older and a newer object.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObjectDiff {
    /// Changes in path order (old object's order first, additions where they appear).
    pub changes: Vec<Change>,
    /// `managedFields` entries added, removed or updated.
    pub managed: Vec<ManagedChange>,
    /// Who wrote the newer revision (see [`last_writers`]).
    pub writers: Vec<Writer>,
}

/// How a diff line is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    /// Attribution and notes.
    Header,
    /// `+ path: value`.
    Added,
    /// `- path: value`.
    Removed,
    /// `~ path: old → new`.
    Changed,
    /// The managedFields summary.
    Managed,
}

impl ObjectDiff {
    /// True when nothing but ignored fields differ.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty() && self.managed.is_empty()
    }

    /// Display lines: changes, then the managedFields summary (one line).
    pub fn lines(&self) -> Vec<(LineKind, String)> {
        let mut out: Vec<(LineKind, String)> = self
            .changes
            .iter()
            .map(|c| match c {
                Change::Changed { path, old, new } => (
                    LineKind::Changed,
                    format!("~ {path}: {} → {}", compact(old), compact(new)),
                ),
                Change::Added { path, value } => {
                    (LineKind::Added, format!("+ {path}: {}", compact(value)))
                }
                Change::Removed { path, value } => {
                    (LineKind::Removed, format!("- {path}: {}", compact(value)))
                }
            })
            .collect();
        if !self.managed.is_empty() {
            let parts: Vec<String> = self
                .managed
                .iter()
                .map(|m| format!("{}{}", m.op, m.entry))
                .collect();
            out.push((
                LineKind::Managed,
                format!("~ metadata.managedFields: {}", parts.join(", ")),
            ));
        }
        out
    }
}

/// One position present on either side: recurse, or record the addition or removal.
fn pair(old: Option<&Value>, new: Option<&Value>, path: &mut Vec<Seg>, out: &mut Vec<Change>) {
    match (old, new) {
        (Some(a), Some(b)) => walk(a, b, path, out),
        (Some(a), None) => out.push(Change::Removed {
            path: render_path(path),
            value: a.clone(),
        }),
        (None, Some(b)) => out.push(Change::Added {
            path: render_path(path),
            value: b.clone(),
        }),
        (None, None) => {}
    }
}

/// Compact JSON text of a value (strings quoted, so `"3"` and `3` stay apart).
pub fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "?".into())
}

/// Diffs `old` against `new` (both whole objects).
pub fn diff(old: &Value, new: &Value) -> ObjectDiff {
    let mut out = ObjectDiff {
        writers: changed_writers(old, new),
        ..Default::default()
    };
    let mut path = Vec::new();
    walk(old, new, &mut path, &mut out.changes);
    out.managed = managed_changes(managed_fields(old), managed_fields(new));
    out
}

/// Who wrote `new` since `old`: the `managedFields` entries that are new or differ (the
/// apiserver's field manager moves a manager's entry, its `time` and `fieldsV1`, when that
/// manager's request changes fields: `managedfieldsupdater.go` in k8s.io/apimachinery); of
/// those, the ones whose `time` moved when any did, so a status write is not blamed on a
/// client whose entry merely shares the newest second. Empty when managedFields are
/// unchanged: nobody they name made the change (graceful deletion setting
/// `deletionTimestamp`, a finalizer removed by the garbage collector, a client that changes
/// no field it owns).
pub fn changed_writers(old: &Value, new: &Value) -> Vec<Writer> {
    let before = managed_fields(old);
    let prior = |e: &Value| before.iter().find(|b| entry_id(b) == entry_id(e));
    let changed: Vec<&Value> = managed_fields(new)
        .iter()
        .filter(|e| prior(e).is_none_or(|b| b != *e))
        .collect();
    let moved: Vec<&Value> = changed
        .iter()
        .copied()
        .filter(|e| prior(e).is_none_or(|b| b.get("time") != e.get("time")))
        .collect();
    let pick = if moved.is_empty() { changed } else { moved };
    pick.into_iter().map(writer).collect()
}

/// The `managedFields` entries of `obj` with the newest `time` (several when they share
/// it); the last entry when none has a time; empty when there are none. Entries are as
/// stored: the apiserver updates an entry's `time` on every write by its manager.
pub fn last_writers(obj: &Value) -> Vec<Writer> {
    let entries = managed_fields(obj);
    let newest = entries
        .iter()
        .filter_map(|e| e.get("time").and_then(Value::as_str))
        .max();
    let pick: Vec<&Value> = match newest {
        Some(t) => entries
            .iter()
            .filter(|e| e.get("time").and_then(Value::as_str) == Some(t))
            .collect(),
        None => entries.last().into_iter().collect(),
    };
    pick.into_iter().map(writer).collect()
}

fn writer(e: &Value) -> Writer {
    let s = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_owned);
    Writer {
        manager: s("manager").unwrap_or_else(|| "(no manager)".into()),
        operation: s("operation").unwrap_or_default(),
        time: s("time"),
        subresource: s("subresource").filter(|s| !s.is_empty()),
    }
}

fn managed_fields(obj: &Value) -> &[Value] {
    obj.get("metadata")
        .and_then(|m| m.get("managedFields"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn entry_id(e: &Value) -> (String, String, String) {
    let s = |k: &str| {
        e.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    (s("manager"), s("operation"), s("subresource"))
}

fn entry_label(e: &Value) -> String {
    let (m, op, sub) = entry_id(e);
    let m = if m.is_empty() {
        "(no manager)".into()
    } else {
        m
    };
    match (op.is_empty(), sub.is_empty()) {
        (true, true) => m,
        (false, true) => format!("{m} ({op})"),
        (true, false) => format!("{m} ({sub})"),
        (false, false) => format!("{m} ({op}, {sub})"),
    }
}

fn managed_changes(old: &[Value], new: &[Value]) -> Vec<ManagedChange> {
    let mut out = Vec::new();
    for o in old {
        match new.iter().find(|n| entry_id(n) == entry_id(o)) {
            None => out.push(ManagedChange {
                op: '-',
                entry: entry_label(o),
            }),
            Some(n) if n != o => out.push(ManagedChange {
                op: '~',
                entry: entry_label(n),
            }),
            Some(_) => {}
        }
    }
    for n in new {
        if !old.iter().any(|o| entry_id(o) == entry_id(n)) {
            out.push(ManagedChange {
                op: '+',
                entry: entry_label(n),
            });
        }
    }
    out
}

/// One step of a path.
#[derive(Clone, Debug)]
enum Seg {
    Key(String),
    Index(usize),
    /// A list element matched by a field: `[name=app]`.
    Match(&'static str, String),
}

fn render_path(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                let plain = !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if plain {
                    if !s.is_empty() {
                        s.push('.');
                    }
                    s.push_str(k);
                } else {
                    s.push('[');
                    s.push_str(&compact(&Value::String(k.clone())));
                    s.push(']');
                }
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
            Seg::Match(field, v) => s.push_str(&format!("[{field}={v}]")),
        }
    }
    if s.is_empty() {
        "(object)".into()
    } else {
        s
    }
}

/// Paths that are compared specially at the top level.
fn ignored(path: &[Seg]) -> bool {
    matches!(
        path,
        [Seg::Key(a), Seg::Key(b)] if a == "metadata" && (b == "resourceVersion" || b == "managedFields")
    )
}

fn walk(old: &Value, new: &Value, path: &mut Vec<Seg>, out: &mut Vec<Change>) {
    if ignored(path) || old == new {
        return;
    }
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => walk_maps(o, n, path, out),
        (Value::Array(o), Value::Array(n)) => walk_lists(o, n, path, out),
        _ => out.push(Change::Changed {
            path: render_path(path),
            old: old.clone(),
            new: new.clone(),
        }),
    }
}

fn walk_maps(
    o: &Map<String, Value>,
    n: &Map<String, Value>,
    path: &mut Vec<Seg>,
    out: &mut Vec<Change>,
) {
    let keys: BTreeSet<&String> = o.keys().chain(n.keys()).collect();
    for k in keys {
        path.push(Seg::Key(k.clone()));
        if !ignored(path) {
            pair(o.get(k), n.get(k), path, out);
        }
        path.pop();
    }
}

/// The field lists are matched by: `name`, else `type`, when every element of both lists is
/// an object with a distinct string value for it.
fn merge_key(o: &[Value], n: &[Value]) -> Option<&'static str> {
    ["name", "type"].into_iter().find(|field| {
        [o, n].iter().all(|list| {
            let mut seen = BTreeSet::new();
            list.iter().all(|e| {
                e.get(field)
                    .and_then(Value::as_str)
                    .is_some_and(|v| seen.insert(v))
            })
        })
    })
}

fn walk_lists(o: &[Value], n: &[Value], path: &mut Vec<Seg>, out: &mut Vec<Change>) {
    let all_objects = o.iter().chain(n).all(Value::is_object);
    if !all_objects || o.is_empty() || n.is_empty() {
        // Scalar lists (finalizers, args), and a list appearing or emptying: as a whole.
        out.push(Change::Changed {
            path: render_path(path),
            old: Value::Array(o.to_vec()),
            new: Value::Array(n.to_vec()),
        });
        return;
    }
    if let Some(field) = merge_key(o, n) {
        let id = |e: &Value| {
            e.get(field)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        for a in o {
            path.push(Seg::Match(field, id(a)));
            match n.iter().find(|b| id(b) == id(a)) {
                Some(b) => walk(a, b, path, out),
                None => out.push(Change::Removed {
                    path: render_path(path),
                    value: a.clone(),
                }),
            }
            path.pop();
        }
        for b in n {
            if !o.iter().any(|a| id(a) == id(b)) {
                path.push(Seg::Match(field, id(b)));
                out.push(Change::Added {
                    path: render_path(path),
                    value: b.clone(),
                });
                path.pop();
            }
        }
        return;
    }
    for i in 0..o.len().max(n.len()) {
        path.push(Seg::Index(i));
        pair(o.get(i), n.get(i), path, out);
        path.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(d: &ObjectDiff) -> Vec<String> {
        d.lines().into_iter().map(|(_, l)| l).collect()
    }

    #[test]
    fn nested_maps_added_and_removed_keys() {
        let old = json!({
            "metadata": {"name": "w", "labels": {"app": "web", "tier": "fe"}, "resourceVersion": "10"},
            "spec": {"replicas": 2, "paused": false}
        });
        let new = json!({
            "metadata": {"name": "w", "labels": {"app": "api", "team": "x"}, "resourceVersion": "11"},
            "spec": {"replicas": 3, "paused": false, "minReadySeconds": 5}
        });
        let d = diff(&old, &new);
        assert_eq!(
            lines(&d),
            [
                "~ metadata.labels.app: \"web\" → \"api\"",
                "+ metadata.labels.team: \"x\"",
                "- metadata.labels.tier: \"fe\"",
                "+ spec.minReadySeconds: 5",
                "~ spec.replicas: 2 → 3",
            ]
        );
        assert!(diff(&old, &old).is_empty());
    }

    #[test]
    fn resource_version_alone_is_no_change() {
        let old = json!({"metadata": {"name": "a", "resourceVersion": "1"}});
        let new = json!({"metadata": {"name": "a", "resourceVersion": "2"}});
        assert!(diff(&old, &new).is_empty());
    }

    #[test]
    fn lists_of_objects_match_by_name_then_type_else_index() {
        let old = json!({"spec": {"containers": [
            {"name": "app", "image": "nginx:1.25"},
            {"name": "sidecar", "image": "envoy:1"}
        ]}, "status": {"conditions": [
            {"type": "Ready", "status": "False"},
            {"type": "Scheduled", "status": "True"}
        ]}, "rules": [{"verbs": ["get"]}]});
        // Reordered containers, one replaced; conditions reordered; anonymous list by index.
        let new = json!({"spec": {"containers": [
            {"name": "init", "image": "busybox"},
            {"name": "app", "image": "nginx:1.26"}
        ]}, "status": {"conditions": [
            {"type": "Scheduled", "status": "True"},
            {"type": "Ready", "status": "True"}
        ]}, "rules": [{"verbs": ["get", "list"]}, {"verbs": ["watch"]}]});
        let d = diff(&old, &new);
        assert_eq!(
            lines(&d),
            [
                "~ rules[0].verbs: [\"get\"] → [\"get\",\"list\"]",
                "+ rules[1]: {\"verbs\":[\"watch\"]}",
                "~ spec.containers[name=app].image: \"nginx:1.25\" → \"nginx:1.26\"",
                "- spec.containers[name=sidecar]: {\"image\":\"envoy:1\",\"name\":\"sidecar\"}",
                "+ spec.containers[name=init]: {\"image\":\"busybox\",\"name\":\"init\"}",
                "~ status.conditions[type=Ready].status: \"False\" → \"True\"",
            ]
        );
    }

    #[test]
    fn keys_with_dots_are_quoted() {
        let old = json!({"metadata": {"annotations": {"deployment.kubernetes.io/revision": "1"}}});
        let new = json!({"metadata": {"annotations": {"deployment.kubernetes.io/revision": "2"}}});
        assert_eq!(
            lines(&diff(&old, &new)),
            ["~ metadata.annotations[\"deployment.kubernetes.io/revision\"]: \"1\" → \"2\""]
        );
    }

    #[test]
    fn managed_fields_are_summarized_and_attribute_the_change() {
        let mf = |entries: Value| json!({"metadata": {"name": "d", "managedFields": entries}, "spec": {"replicas": 1}});
        let old = mf(json!([
            {"manager": "kubectl-client-side-apply", "operation": "Update", "time": "2024-01-01T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
            {"manager": "old-tool", "operation": "Apply", "time": "2023-12-01T00:00:00Z"}
        ]));
        let mut new = mf(json!([
            {"manager": "kubectl-client-side-apply", "operation": "Update", "time": "2024-01-01T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
            {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status",
             "time": "2024-01-02T10:00:00Z", "fieldsV1": {"f:status": {}}},
            {"manager": "hpa", "operation": "Update", "subresource": "scale",
             "time": "2024-01-02T10:00:00Z", "fieldsV1": {}}
        ]));
        new["spec"]["replicas"] = json!(4);
        let d = diff(&old, &new);
        let l = lines(&d);
        assert_eq!(l[0], "~ spec.replicas: 1 → 4");
        assert_eq!(
            l[1],
            "~ metadata.managedFields: -old-tool (Apply), +kube-controller-manager (Update, status), +hpa (Update, scale)"
        );
        assert_eq!(l.len(), 2, "field sets are not listed: {l:?}");
        assert_eq!(d.writers.len(), 2, "both entries share the newest time");
        assert_eq!(
            d.writers[0].describe(),
            "kube-controller-manager Update (subresource status) at 2024-01-02T10:00:00Z"
        );
        assert_eq!(d.writers[1].manager, "hpa");
        // A refreshed entry (same manager, new time) is "updated".
        let mut newer = new.clone();
        newer["metadata"]["managedFields"][0]["time"] = json!("2024-01-03T00:00:00Z");
        let d = diff(&new, &newer);
        assert_eq!(
            lines(&d),
            ["~ metadata.managedFields: ~kubectl-client-side-apply (Update)"]
        );
        assert_eq!(d.writers.len(), 1);
        assert_eq!(d.writers[0].manager, "kubectl-client-side-apply");
        // No times: the last entry; no entries: nobody.
        let untimed = mf(json!([{"manager": "a"}, {"manager": "b", "operation": "Apply"}]));
        assert_eq!(last_writers(&untimed)[0].describe(), "b Apply");
        assert!(last_writers(&json!({"metadata": {}})).is_empty());
    }

    #[test]
    fn secrets_are_diffed_redacted() {
        use crate::decode::{decode, DecodeOptions};
        let secret = |pw: &str| {
            use base64::Engine as _;
            let b64 = base64::engine::general_purpose::STANDARD.encode(pw);
            format!(
                r#"{{"apiVersion":"v1","kind":"Secret","metadata":{{"name":"s","namespace":"default"}},"data":{{"password":"{b64}","user":"YWRtaW4="}}}}"#
            )
        };
        let key = b"/registry/secrets/default/s";
        let value = |pw: &str, show: bool| {
            decode(
                secret(pw).as_bytes(),
                &DecodeOptions {
                    show_secrets: show,
                    etcd_key: key,
                    ..Default::default()
                },
            )
            .value()
            .expect("decodes")
        };
        let d = diff(&value("hunter2", false), &value("correct horse", false));
        let text = lines(&d).join("\n");
        assert_eq!(
            text,
            "~ data.password: \"<redacted: 7 bytes>\" → \"<redacted: 13 bytes>\""
        );
        assert!(
            !text.contains("hunter") && !text.contains("aHVudGVy"),
            "{text}"
        );
        // Asked for: the base64 values are compared.
        let d = diff(&value("hunter2", true), &value("hunter3", true));
        assert_eq!(
            lines(&d),
            ["~ data.password: \"aHVudGVyMg==\" → \"aHVudGVyMw==\""]
        );
    }

    #[test]
    fn type_changes_and_whole_objects() {
        let old = json!({"spec": {"x": {"a": 1}, "y": [1, 2]}});
        let new = json!({"spec": {"x": "flat", "y": []}});
        assert_eq!(
            lines(&diff(&old, &new)),
            ["~ spec.x: {\"a\":1} → \"flat\"", "~ spec.y: [1,2] → []",]
        );
        assert_eq!(
            lines(&diff(&json!({}), &json!({"kind": "Pod"}))),
            ["+ kind: \"Pod\""]
        );
    }
}

#[cfg(test)]
mod writer_tests {
    use super::*;
    use serde_json::json;

    fn obj(entries: Value) -> Value {
        json!({"metadata": {"managedFields": entries}})
    }

    #[test]
    fn the_entry_whose_time_moved_wrote_the_change() {
        let old = obj(json!([
            {"manager": "kubectl-client-side-apply", "operation": "Update", "time": "2024-01-02T10:00:00Z"},
            {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status", "time": "2024-01-02T09:59:00Z"},
        ]));
        // The status write lands in the same second as the earlier apply.
        let new = obj(json!([
            {"manager": "kubectl-client-side-apply", "operation": "Update", "time": "2024-01-02T10:00:00Z"},
            {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status", "time": "2024-01-02T10:00:00Z"},
        ]));
        let w = changed_writers(&old, &new);
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].manager, "kube-controller-manager");
        assert_eq!(
            last_writers(&new).len(),
            2,
            "the newest-time rule alone names both"
        );
        // Nothing changed: nobody managedFields name wrote it.
        assert!(changed_writers(&new, &new).is_empty());
        // An entry whose fields changed within the same second: that one.
        let mut refined = new.clone();
        refined["metadata"]["managedFields"][1]["fieldsV1"] = json!({"f:status": {}});
        let w = changed_writers(&new, &refined);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].manager, "kube-controller-manager");
        // A new manager's first write.
        let added = obj(json!([
            {"manager": "kubectl-client-side-apply", "operation": "Update", "time": "2024-01-02T10:00:00Z"},
            {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status", "time": "2024-01-02T09:59:00Z"},
            {"manager": "hpa", "operation": "Update", "subresource": "scale", "time": "2024-01-02T09:00:00Z"},
        ]));
        let w = changed_writers(&old, &added);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].manager, "hpa");
    }
}
