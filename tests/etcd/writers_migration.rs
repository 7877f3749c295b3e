//! A storage version migration against real etcd: the StorageVersionMigration object (as
//! kube-apiserver stores it, `storagemigration.k8s.io/v1`) names the writer of its
//! resource's rewrites that keep managedFields, in the session and in `snapshot --json`, until
//! its status says it has succeeded.

use crate::common;
use crate::common::require;

use std::time::Duration;

use common::{fast_sync, source, Harness};
use regscope::demo::PrivateEtcd;

const T: Duration = Duration::from_secs(30);

fn configmap(i: usize) -> String {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": format!("cm{i:02}"),
            "namespace": "default",
            "managedFields": [{
                "manager": "kubectl-create",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2026-01-02T10:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {"f:n": {}}}
            }]
        },
        "data": {"n": i.to_string()}
    })
    .to_string()
}

fn migration(conditions: serde_json::Value) -> String {
    serde_json::json!({
        "apiVersion": "storagemigration.k8s.io/v1",
        "kind": "StorageVersionMigration",
        "metadata": {"name": "cm-to-v1"},
        "spec": {"resource": {"group": "", "resource": "configmaps"}},
        "status": {"conditions": conditions}
    })
    .to_string()
}

/// The `configmaps` rows of `snapshot --json`'s writers: (manager, puts).
fn configmap_writers(h: &Harness) -> Vec<(String, u64)> {
    let json = regscope::cli::snapshot::snapshot_json(Some(&h.session), false, None, None)
        .expect("snapshot");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut rows: Vec<(String, u64)> = v["writers"]
        .as_array()
        .expect("writers")
        .iter()
        .filter(|w| w["resource"] == "configmaps")
        .map(|w| {
            (
                w["manager"].as_str().unwrap().to_string(),
                w["puts"].as_u64().unwrap(),
            )
        })
        .collect();
    rows.sort();
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storage_version_migration_is_named_for_its_rewrites() {
    require!(ETCD);
    let e = PrivateEtcd::start().await.expect("start etcd");
    let mut c = e.client().await.expect("client");
    let key = |i: usize| format!("/registry/configmaps/default/cm{i:02}");
    let svm_key = "/registry/storageversionmigrations/cm-to-v1";
    let mut h = Harness::start(source(&e.endpoint(), fast_sync()));
    h.catch_up(&mut c, T).await;
    // Created while the replica watches: kubectl's writes.
    for i in 0..30 {
        c.put(key(i), configmap(i), None).await.unwrap();
    }
    let running = serde_json::json!([{
        "type": "Running", "status": "True", "lastTransitionTime": "2026-01-02T10:05:00Z",
        "reason": "MigrationRunning", "message": "The migration is running"
    }]);
    c.put(svm_key, migration(running.clone()), None)
        .await
        .unwrap();
    // The migration's rewrites: the same objects again, managedFields as they were.
    for i in 0..30 {
        c.put(key(i), configmap(i), None).await.unwrap();
    }
    h.catch_up(&mut c, T).await;
    assert_eq!(
        configmap_writers(&h),
        vec![
            ("(storage version migration cm-to-v1)".to_string(), 30),
            ("kubectl-create".to_string(), 30),
        ]
    );
    let cms = h
        .replica
        .resources()
        .iter()
        .position(|r| r.resource == "configmaps")
        .unwrap() as u32;
    let now = regscope::model::unix_second(h.session.now());
    assert!(
        h.replica.looks_rewritten(cms, now),
        "30 of 30 keys rewritten within a minute"
    );

    // Succeeded: a further rewrite that keeps managedFields is nobody's again.
    let mut done = running;
    done.as_array_mut().unwrap().push(serde_json::json!({
        "type": "Succeeded", "status": "True", "lastTransitionTime": "2026-01-02T10:06:00Z",
        "reason": "StorageVersionMigrationSucceeded", "message": ""
    }));
    c.put(svm_key, migration(done), None).await.unwrap();
    c.put(key(7), configmap(7), None).await.unwrap();
    h.catch_up(&mut c, T).await;
    assert_eq!(
        configmap_writers(&h),
        vec![
            ("(storage version migration cm-to-v1)".to_string(), 30),
            ("(unknown: same managedFields)".to_string(), 1),
            ("kubectl-create".to_string(), 30),
        ]
    );
    // The rows add up to the resource's writes.
    let stats = &h.replica.resources()[cms as usize];
    let rows: u64 = configmap_writers(&h).iter().map(|(_, n)| n).sum();
    assert_eq!(rows, stats.puts + stats.deletes);
}
