//! The few fields of a `StorageVersionMigration` (API group `storagemigration.k8s.io`) that
//! say which resource it rewrites and whether it is still at work, read from a stored value
//! in protobuf or JSON without a schema (the compiled schemas stop at Kubernetes 1.35, and
//! `v1` is new in 1.37).
//!
//! The layout, from kubernetes `staging/src/k8s.io/api/storagemigration/{v1,v1beta1,
//! v1alpha1}/types.go`: the object is {1 metadata, 2 spec, 3 status}; `spec.resource`
//! (its field 1) is a `metav1.GroupResource` {1 group, 2 resource} in `v1` and `v1beta1`,
//! and a `GroupVersionResource` {1 group, 2 version, 3 resource} in `v1alpha1`;
//! `status.conditions` (its field 1, repeated) holds conditions whose first two fields are
//! `type` (`Running`, `Succeeded`, `Failed`) and `status` (`True`, `False`, `Unknown`) in
//! every version. kube-controller-manager's migration runner
//! (`pkg/controller/storageversionmigrator/migrationrunner.go`) marks one migration of a
//! resource `Running` at a time and removes `Running` once it has `Succeeded` or `Failed`.

use super::envelope::{parse_envelope, MAGIC};
use super::protobuf_wire::Reader;

/// Where a migration stands, by its conditions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrationState {
    /// Created, no condition true yet: waiting for its turn (one runs per resource).
    Pending,
    /// `Running` is true.
    Running,
    /// `Succeeded` or `Failed` is true: it rewrites nothing more.
    Finished,
}

impl MigrationState {
    /// Whether the migration may still rewrite objects (pending or running).
    pub fn active(self) -> bool {
        self != MigrationState::Finished
    }
}

/// The resource a migration rewrites and its state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Migration {
    /// API group of the resource migrated, `""` for the core group.
    pub group: String,
    /// Plural of the resource migrated (`configmaps`).
    pub resource: String,
    pub state: MigrationState,
}

/// Reads a stored `StorageVersionMigration` (protobuf or JSON); `None` when the value is
/// something else, encrypted, or does not name a resource.
pub fn storage_version_migration(value: &[u8]) -> Option<Migration> {
    if value.starts_with(MAGIC) {
        from_protobuf(value)
    } else if super::is_json_start(value) {
        from_json(value)
    } else {
        None
    }
}

fn from_protobuf(value: &[u8]) -> Option<Migration> {
    let env = parse_envelope(value).ok()?;
    if env.kind != b"StorageVersionMigration" {
        return None;
    }
    // v1alpha1 names the resource in field 3 (after the version).
    let resource_field = if env.api_version.ends_with(b"/v1alpha1") {
        3
    } else {
        2
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let (mut group, mut resource) = (String::new(), String::new());
    let (mut running, mut finished) = (false, false);
    for f in Reader::new(env.raw, env.raw_offset) {
        let f = f.ok()?;
        match f.number {
            2 => {
                for s in Reader::new(f.expect_len().ok()?, f.value_offset) {
                    let s = s.ok()?;
                    if s.number != 1 {
                        continue;
                    }
                    for g in Reader::new(s.expect_len().ok()?, s.value_offset) {
                        let g = g.ok()?;
                        match g.number {
                            1 => group = text(g.expect_len().ok()?),
                            n if n == resource_field => resource = text(g.expect_len().ok()?),
                            _ => {}
                        }
                    }
                }
            }
            3 => {
                for s in Reader::new(f.expect_len().ok()?, f.value_offset) {
                    let s = s.ok()?;
                    if s.number != 1 {
                        continue;
                    }
                    let (mut ty, mut status): (&[u8], &[u8]) = (b"", b"");
                    for c in Reader::new(s.expect_len().ok()?, s.value_offset) {
                        let c = c.ok()?;
                        match c.number {
                            1 => ty = c.expect_len().ok()?,
                            2 => status = c.expect_len().ok()?,
                            _ => {}
                        }
                    }
                    condition(ty, status, &mut running, &mut finished);
                }
            }
            _ => {}
        }
    }
    finish(group, resource, running, finished)
}

fn from_json(value: &[u8]) -> Option<Migration> {
    let v: serde_json::Value = serde_json::from_slice(value).ok()?;
    if v.get("kind")?.as_str()? != "StorageVersionMigration" {
        return None;
    }
    let r = v.get("spec")?.get("resource")?;
    let field = |k: &str| r.get(k).and_then(|x| x.as_str()).unwrap_or("").to_owned();
    let (mut running, mut finished) = (false, false);
    let conditions = v
        .get("status")
        .and_then(|s| s.get("conditions"))
        .and_then(|c| c.as_array());
    for c in conditions.into_iter().flatten() {
        let s = |k: &str| c.get(k).and_then(|x| x.as_str()).unwrap_or("");
        condition(
            s("type").as_bytes(),
            s("status").as_bytes(),
            &mut running,
            &mut finished,
        );
    }
    finish(field("group"), field("resource"), running, finished)
}

fn condition(ty: &[u8], status: &[u8], running: &mut bool, finished: &mut bool) {
    if status != b"True" {
        return;
    }
    match ty {
        b"Running" => *running = true,
        b"Succeeded" | b"Failed" => *finished = true,
        _ => {}
    }
}

fn finish(group: String, resource: String, running: bool, finished: bool) -> Option<Migration> {
    if resource.is_empty() {
        return None;
    }
    let state = match (finished, running) {
        (true, _) => MigrationState::Finished,
        (false, true) => MigrationState::Running,
        (false, false) => MigrationState::Pending,
    };
    Some(Migration {
        group,
        resource,
        state,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The serializer's own output of both served versions (kubernetes' round-trip test
    /// data, `k8s-api/head/storagemigration.k8s.io.{v1,v1beta1}.StorageVersionMigration`):
    /// the protobuf and JSON forms read alike; the condition there is `typeValue`, so the
    /// migration is pending.
    #[test]
    fn reads_the_serializers_output_of_v1_and_v1beta1() {
        let Some(td) = crate::testdata::dir() else {
            return;
        };
        for version in ["v1", "v1beta1"] {
            for ext in ["pb", "json"] {
                let name = format!(
                    "k8s-api/head/storagemigration.k8s.io.{version}.StorageVersionMigration.{ext}"
                );
                let value = std::fs::read(td.join(&name)).expect(&name);
                assert_eq!(
                    storage_version_migration(&value),
                    Some(Migration {
                        group: "groupValue".into(),
                        resource: "resourceValue".into(),
                        state: MigrationState::Pending,
                    }),
                    "{name}"
                );
            }
        }
    }

    #[test]
    fn conditions_set_the_state() {
        let obj = |conds: &str| {
            format!(
                r#"{{"apiVersion":"storagemigration.k8s.io/v1","kind":"StorageVersionMigration","metadata":{{"name":"m"}},"spec":{{"resource":{{"group":"","resource":"configmaps"}}}},"status":{{"conditions":[{conds}]}}}}"#
            )
        };
        let state = |c: &str| storage_version_migration(obj(c).as_bytes()).map(|m| m.state);
        assert_eq!(state(""), Some(MigrationState::Pending));
        assert_eq!(
            state(r#"{"type":"Running","status":"True"}"#),
            Some(MigrationState::Running)
        );
        assert_eq!(
            state(r#"{"type":"Running","status":"False"}"#),
            Some(MigrationState::Pending)
        );
        assert_eq!(
            state(r#"{"type":"Running","status":"True"},{"type":"Succeeded","status":"True"}"#),
            Some(MigrationState::Finished)
        );
        assert_eq!(
            state(r#"{"type":"Failed","status":"True"}"#),
            Some(MigrationState::Finished)
        );
        // v1alpha1 named the version too.
        let alpha = br#"{"apiVersion":"storagemigration.k8s.io/v1alpha1","kind":"StorageVersionMigration","spec":{"resource":{"group":"apps","version":"v1","resource":"deployments"}}}"#;
        let m = storage_version_migration(alpha).unwrap();
        assert_eq!(
            (m.group.as_str(), m.resource.as_str()),
            ("apps", "deployments")
        );
        // Other kinds and encrypted values are not migrations.
        assert_eq!(
            storage_version_migration(br#"{"kind":"ConfigMap","spec":{}}"#),
            None
        );
        assert_eq!(storage_version_migration(b"k8s:enc:aescbc:v1:k:xx"), None);
    }

    /// v1alpha1's protobuf: the resource is field 3 of spec.resource.
    #[test]
    fn reads_v1alpha1_protobuf() {
        fn len(n: u8, b: &[u8]) -> Vec<u8> {
            let mut v = vec![(n << 3) | 2, b.len() as u8];
            v.extend_from_slice(b);
            v
        }
        let gvr = [len(1, b"apps"), len(2, b"v1"), len(3, b"deployments")].concat();
        let cond = [len(1, b"Running"), len(2, b"True")].concat();
        let raw = [
            len(1, &len(1, b"m")),
            len(2, &len(1, &gvr)),
            len(3, &len(1, &cond)),
        ]
        .concat();
        let tm = [
            len(1, b"storagemigration.k8s.io/v1alpha1"),
            len(2, b"StorageVersionMigration"),
        ]
        .concat();
        let value = [MAGIC.as_slice(), &len(1, &tm), &len(2, &raw)].concat();
        let m = storage_version_migration(&value).unwrap();
        assert_eq!(
            (m.group.as_str(), m.resource.as_str(), m.state),
            ("apps", "deployments", MigrationState::Running)
        );
    }
}
