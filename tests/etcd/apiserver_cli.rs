//! `regscope snapshot --json` against a live etcd: with the demo apiserver (both sides in
//! one snapshot), and explicit kubeconfig problems next to a live etcd.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::require;
use crate::common::snapshot_cli::{kubeconfig, num, run, s, stderr};

/// A live snapshot: a real etcd written by the simulation, its storage latencies served by
/// the demo apiserver; `snapshot --json --endpoints --kubeconfig` has both sides.
#[test]
fn live_snapshot_with_demo_apiserver() {
    require!(ETCD);
    use regscope::demo::{
        DemoApiserver, DemoApiserverConfig, PrivateEtcd, SimConfig, Simulation, StorageLatencies,
    };
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (etcd, sim, api) = rt.block_on(async {
        let etcd = PrivateEtcd::start().await.expect("start etcd");
        let latencies = Arc::new(StorageLatencies::new());
        let sim = Simulation::start(
            &etcd,
            SimConfig {
                latencies: Some(latencies.clone()),
                ..Default::default()
            },
        )
        .await
        .expect("start simulation");
        let api = DemoApiserver::start(&etcd, latencies.clone(), DemoApiserverConfig::default())
            .await
            .expect("start demo apiserver");
        // Some writes, among them pod creates, recorded as storage latencies.
        let deadline = Instant::now() + Duration::from_secs(20);
        while sim.stats().writes < 30 || latencies.count("create", "", "pods") == 0 {
            assert!(
                Instant::now() < deadline,
                "no pod creates within 20 s: {:?}",
                sim.stats()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        (etcd, sim, api)
    });
    let endpoint = etcd.endpoint();
    let kubeconfig = api.kubeconfig_path().to_path_buf();
    let args = [
        "snapshot",
        "--json",
        "--endpoints",
        &endpoint,
        "--kubeconfig",
        s(&kubeconfig),
    ];
    // While the simulation writes.
    let out = run(&args);
    // Then with the writes stopped and the watch cache caught up with etcd's head: the
    // apiserver's object counts and the replica's must agree exactly.
    let stats = rt.block_on(async {
        let stats = sim.stop().await;
        let mut c = etcd.client().await.expect("client");
        let head = c
            .get("/", Some(etcd_client::GetOptions::new().with_count_only()))
            .await
            .expect("head")
            .header()
            .expect("header")
            .revision();
        let deadline = Instant::now() + Duration::from_secs(10);
        while api.cache_revision() < head {
            assert!(
                Instant::now() < deadline,
                "watch cache at {} not at head {head} within 10 s",
                api.cache_revision()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        stats
    });
    // The runtime's workers keep serving the apiserver while this thread waits.
    let quiet = run(&args);
    // doctor checks the same access: etcd, the apiserver's /metrics, the informers' lists.
    let empty = tempfile::tempdir().unwrap();
    let doctor = run(&[
        "doctor",
        "--json",
        "--root",
        s(empty.path()),
        "--endpoints",
        &endpoint,
        "--kubeconfig",
        s(&kubeconfig),
    ]);
    rt.block_on(api.stop());
    let d: Value = serde_json::from_slice(&doctor.stdout).expect("doctor JSON");
    let checks = d["checks"].as_array().expect("checks");
    let kinds: Vec<&str> = checks.iter().filter_map(|c| c["check"].as_str()).collect();
    assert!(kinds.contains(&"apiserver metrics"), "{d:#}");
    assert!(kinds.contains(&"etcd metrics"), "{d:#}");
    assert_eq!(
        kinds.iter().filter(|k| **k == "informer").count(),
        4,
        "{d:#}"
    );
    // Endpoints given: nothing needs finding under the empty root; every check passed.
    let failed: Vec<&Value> = checks.iter().filter(|c| c["ok"] == false).collect();
    assert!(failed.is_empty(), "{failed:#?}");
    assert_eq!(doctor.status.code(), Some(0), "{d:#}");
    drop(etcd);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");

    // The replica's side.
    let rev = v["revision"].as_i64().expect("revision");
    assert!(rev > 0, "{rev}");
    assert!(v["keys"].as_u64().unwrap() > 0, "{}", v["keys"]);
    let resources = v["resources"].as_array().expect("resources");
    let replica_pods = resources
        .iter()
        .find(|r| r["resource"] == "pods")
        .unwrap_or_else(|| panic!("no pods in the replica: {resources:?}"));
    assert!(replica_pods["keys"].as_u64().unwrap() > 0);

    // etcd's own /metrics, read from the endpoint.
    let e = &v["etcd"];
    assert!(e["revision"].as_i64().unwrap_or(0) > 0, "{e}");
    assert!(e["db_size_bytes"].as_f64().unwrap_or(0.0) > 0.0, "{e}");
    assert!(v["scrape"]["etcd"]["good_scrapes"] == 1, "{}", v["scrape"]);

    // The apiserver's /metrics through the kubeconfig.
    let sa = &v["scrape"]["apiserver"];
    assert_eq!(sa["good_scrapes"], 1, "{sa}");
    assert!(sa["last_error"].is_null(), "{sa}");
    let latency = v["latency"].as_array().expect("latency");
    let create = latency
        .iter()
        .find(|r| {
            r["metric"] == "etcd_request_duration_seconds"
                && r["operation"] == "create"
                && r["group"] == ""
                && r["resource"] == "pods"
        })
        .unwrap_or_else(|| panic!("no etcd pods create row: {latency:?}"));
    assert!(num(&create["count"]) >= 1.0, "{create}");
    assert!(create["p99"].as_f64().is_some(), "{create}");

    let objects = v["objects"].as_array().expect("objects");
    let pods = objects
        .iter()
        .find(|o| o["group"] == "" && o["resource"] == "pods")
        .unwrap_or_else(|| panic!("no pods object row: {objects:?}"));
    assert!(pods["apiserver"].as_i64().is_some(), "{pods}");
    assert!(pods["replica"].as_i64().is_some(), "{pods}");

    let wc = v["watch_cache"].as_array().expect("watch_cache");
    let pods = wc
        .iter()
        .find(|r| r["group"] == "" && r["resource"] == "pods")
        .unwrap_or_else(|| panic!("no pods watch cache row: {wc:?}"));
    assert_eq!(num(&pods["capacity"]), 100.0, "{pods}");

    // Quiet: every resource both sides count agrees, and nothing is flagged.
    assert_eq!(quiet.status.code(), Some(0), "{}", stderr(&quiet));
    let q: Value = serde_json::from_slice(&quiet.stdout).expect("JSON");
    let objects = q["objects"].as_array().expect("objects");
    let mut compared = 0;
    for o in objects {
        if let (Some(a), Some(r)) = (o["apiserver"].as_i64(), o["replica"].as_i64()) {
            assert_eq!(a, r, "object counts disagree with no writes: {o}");
            assert!(o.get("flag").is_none(), "flagged with equal counts: {o}");
            compared += 1;
        }
    }
    assert!(compared >= 3, "too few resources compared: {objects:?}");
    let qpods = objects
        .iter()
        .find(|o| o["group"] == "" && o["resource"] == "pods")
        .expect("pods row");
    let replica_pods = q["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "pods")
        .expect("pods in the replica")["keys"]
        .as_i64();
    assert_eq!(qpods["replica"].as_i64(), replica_pods, "{qpods}");
    assert_eq!(
        q["etcd"]["revision"].as_i64(),
        q["revision"].as_i64(),
        "etcd's current revision and the replica's with no writes"
    );
    let w = &q["compaction_window"];
    assert_eq!(w["regscope_lag_revisions"], 0, "{w}");
    let rows = w["rows"].as_array().expect("window rows");
    assert!(!rows.is_empty(), "{w}");
    for r in rows {
        assert_eq!(
            r["watch_cache_lag_revisions"]["value"], 0,
            "the watch cache is caught up: {r}"
        );
        assert_eq!(r["risk"], "ok", "{r}");
    }

    // A figure, not a claim: each `snapshot` run is hang-guarded (`run`), and a live
    // snapshot's time is a target of `cargo bench --bench initial_sync`.
    let took = started.elapsed();
    println!("live snapshot at revision {rev} after {stats:?}, in {took:?}");
}

/// A private etcd with 5 configmaps.
async fn seeded_etcd() -> regscope::demo::PrivateEtcd {
    let e = regscope::demo::PrivateEtcd::start()
        .await
        .expect("start etcd");
    let mut c = e.client().await.expect("client");
    for i in 0..5 {
        c.put(format!("/registry/configmaps/default/cm{i}"), "{}", None)
            .await
            .unwrap();
    }
    e
}

/// Explicit apiserver access that cannot be used, with a reachable etcd: an unknown
/// `--context` is an error (exit 2, one line naming it); an apiserver that refuses
/// connections is a stale target (exit 0, the replica and etcd's metrics still there).
#[test]
fn explicit_kubeconfig_problems_with_live_etcd() {
    require!(ETCD);
    let started = Instant::now();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let etcd = rt.block_on(seeded_etcd());
    let endpoint = etcd.endpoint();
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let kc = kubeconfig(dir.path(), &format!("http://{closed}"));

    // Unknown context.
    let out = run(&[
        "snapshot",
        "--json",
        "--endpoints",
        &endpoint,
        "--kubeconfig",
        s(&kc),
        "--context",
        "no-such-context",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "unknown context: {err}");
    assert!(err.contains("no-such-context"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");

    // The apiserver refuses connections: stale, not fatal.
    let out = run(&[
        "snapshot",
        "--json",
        "--endpoints",
        &endpoint,
        "--kubeconfig",
        s(&kc),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains(&closed.to_string()), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["keys"], 5, "{v}");
    let sa = &v["scrape"]["apiserver"];
    assert!(
        sa["last_error"]
            .as_str()
            .is_some_and(|e| e.contains(&closed.to_string())),
        "{sa}"
    );
    assert!(sa["stale_since"].is_string(), "{sa}");
    assert_eq!(sa["good_scrapes"], 0, "{sa}");
    assert!(v["latency"].as_array().unwrap().is_empty());
    assert_eq!(v["scrape"]["etcd"]["good_scrapes"], 1, "{}", v["scrape"]);
    assert!(
        v["etcd"]["revision"].as_i64().unwrap() >= 6,
        "{}",
        v["etcd"]
    );
    drop(etcd);
    // Neither problem stalls the snapshot: each run above ended within `run`'s hang guard.
    println!("took {:?}", started.elapsed());
}

/// An explicit `--kubeconfig` that is not YAML: exit 2 with one line naming the file (the
/// README: errors are one line).
#[test]
fn malformed_kubeconfig_is_a_one_line_error() {
    require!(ETCD);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let etcd = rt.block_on(seeded_etcd());
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad-kubeconfig");
    std::fs::write(&bad, "clusters: [\n").unwrap();
    let out = run(&[
        "snapshot",
        "--json",
        "--endpoints",
        &etcd.endpoint(),
        "--kubeconfig",
        s(&bad),
    ]);
    drop(etcd);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "malformed kubeconfig: {err}");
    assert!(err.contains(s(&bad)), "names the file: {err}");
    assert!(out.stdout.is_empty(), "no JSON on an error");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
}
