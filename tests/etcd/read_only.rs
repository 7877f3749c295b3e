//! regscope only reads, proven against real etcd:
//! - with authentication on and a user whose role may only read the prefix, the source,
//!   `snapshot` and `verify` work (nothing regscope needs lies outside the prefix);
//! - against a plain etcd, etcd's own `/metrics` count no write RPC from regscope: the
//!   `grpc_server_handled_total` counters of Put, Txn, DeleteRange, Compact and LeaseGrant
//!   stay as they were while `snapshot`, `verify`, `record` and the live source run, while
//!   its Range and Watch counters move (so the counters are the ones regscope is seen by).

use crate::common;
use crate::common::require;

use std::io::{Read, Write};
use std::time::Duration;

use common::{fast_sync, Harness};
use etcd_client::{Permission, PermissionType};
use regscope::demo::PrivateEtcd;
use regscope::source::{EtcdOptions, EtcdSource};

async fn fill(c: &mut etcd_client::Client) {
    for i in 0..20 {
        c.put(format!("/registry/configmaps/default/cm-{i}"), "x", None)
            .await
            .unwrap();
    }
    c.put("/registry/pods/default/p", "y", None).await.unwrap();
    c.delete("/registry/configmaps/default/cm-0", None)
        .await
        .unwrap();
}

fn regscope(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_regscope"))
        .args(args)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_that_may_only_read_the_prefix_is_enough() {
    require!(ETCD);
    let e = PrivateEtcd::start().await.expect("etcd");
    let mut c = e.client().await.unwrap();
    fill(&mut c).await;
    // The apiserver's compactor writes compact_rev_key at the root, outside the prefix.
    c.put("compact_rev_key", "3", None).await.unwrap();
    c.role_add("root").await.unwrap();
    c.user_add("root", "rootpw", None).await.unwrap();
    c.user_grant_role("root", "root").await.unwrap();
    c.role_add("registry-reader").await.unwrap();
    c.role_grant_permission(
        "registry-reader",
        Permission::new(PermissionType::Read, "/registry/").with_prefix(),
    )
    .await
    .unwrap();
    c.user_add("reader", "readerpw", None).await.unwrap();
    c.user_grant_role("reader", "registry-reader")
        .await
        .unwrap();
    c.auth_enable().await.unwrap();
    let mut root = EtcdOptions {
        endpoints: vec![e.endpoint()],
        user: Some("root".into()),
        password: Some("rootpw".into()),
        ..Default::default()
    }
    .with_defaults()
    .connect(Duration::from_secs(5))
    .await
    .expect("root")
    .0;

    let reader = EtcdOptions {
        endpoints: vec![e.endpoint()],
        user: Some("reader".into()),
        password: Some("readerpw".into()),
        ..Default::default()
    }
    .with_defaults();
    let mut h = Harness::start(EtcdSource::new(reader.clone(), fast_sync()));
    h.catch_up(&mut root, Duration::from_secs(20)).await;
    assert_eq!(h.replica.live_keys(), 20);
    // Writes after the list arrive by the watch.
    root.put("/registry/pods/default/q", "z", None)
        .await
        .unwrap();
    h.catch_up(&mut root, Duration::from_secs(20)).await;
    assert_eq!(h.replica.live_keys(), 21);
    // Told once why compactions come only from the watch and the metrics.
    assert!(
        h.seen
            .notes
            .iter()
            .any(|n| n.starts_with("no read permission on compact_rev_key")),
        "{:?}",
        h.seen.notes
    );
    // One list, one watch that stayed up: no part of the sync was refused.
    assert_eq!(h.seen.list_begins, 1, "{:?}", h.seen);
    assert!(
        matches!(h.etcd.conn(), regscope::model::ConnState::Watching),
        "{:?}",
        h.etcd.conn()
    );
    let diffs = regscope::cli::verify::verify_replica(&h.source, &h.replica)
        .await
        .unwrap();
    assert!(diffs.is_empty(), "{diffs:?}");

    let ep = e.endpoint();
    let args = ["--endpoints", &ep, "--user", "reader:readerpw"];
    let out = regscope(&[&["snapshot", "--json"][..], &args[..]].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["keys"], 21, "{v}");
    let out = regscope(&[&["verify"][..], &args[..]].concat());
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// etcd's `grpc_server_handled_total` per gRPC method, summed over codes, from its
/// `/metrics` on the client port.
fn handled(endpoint: &str) -> std::collections::BTreeMap<String, f64> {
    let addr = endpoint.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    let mut out = std::collections::BTreeMap::new();
    for line in body.lines() {
        let Some(rest) = line.strip_prefix("grpc_server_handled_total{") else {
            continue;
        };
        let method = rest
            .split("grpc_method=\"")
            .nth(1)
            .and_then(|m| m.split('"').next())
            .unwrap()
            .to_string();
        let value: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        *out.entry(method).or_insert(0.0) += value;
    }
    out
}

const WRITES: [&str; 5] = ["Put", "Txn", "DeleteRange", "Compact", "LeaseGrant"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_counts_no_write_rpc_from_regscope() {
    require!(ETCD);
    let e = PrivateEtcd::start().await.expect("etcd");
    let mut c = e.client().await.unwrap();
    fill(&mut c).await;
    let ep = e.endpoint();
    let before = handled(&ep);
    let get =
        |m: &std::collections::BTreeMap<String, f64>, k: &str| m.get(k).copied().unwrap_or(0.0);
    assert!(get(&before, "Put") >= 21.0, "{before:?}");

    // The live source (what the console runs), a while.
    let mut h = Harness::start(common::source(&ep, fast_sync()));
    h.until("listed", Duration::from_secs(20), |r, _| {
        r.replica.live_keys() == 20 && r.replica.listing().is_none()
    })
    .await;
    // Running for a while is the point: whatever it does meanwhile must not write.
    tokio::time::sleep(Duration::from_secs(2)).await;
    drop(h);
    // The one-shot commands, and a recording.
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("s.rgs");
    for args in [
        vec!["snapshot", "--json", "--endpoints", &ep],
        vec!["verify", "--endpoints", &ep],
        vec![
            "record",
            "-o",
            rec.to_str().unwrap(),
            "--duration",
            "3s",
            "--endpoints",
            &ep,
        ],
    ] {
        let out = regscope(&args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let after = handled(&ep);
    for m in WRITES {
        assert_eq!(
            get(&before, m),
            get(&after, m),
            "{m}: {before:?} -> {after:?}"
        );
    }
    assert!(get(&after, "Range") > get(&before, "Range"), "{after:?}");
    assert!(
        get(&after, "Watch") + get(&after, "Status") > 0.0,
        "{after:?}"
    );
}
