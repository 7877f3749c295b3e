//! The apiserver side of the real `regscope` binary: `snapshot --json` on the real
//! `/metrics` captures in `../shared/testdata` (four kube-apiserver/etcd pairs, 1.28–1.34),
//! the error paths of the metric flags, and a live snapshot of a real etcd written by the
//! demo simulation and scraped through the demo's simulated kube-apiserver.
//!
//! Facts asserted per capture come from `../shared/testdata/README.md`; everything else is
//! computed here from the capture itself (plain line parsing), not hard-coded.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

use crate::common::fixtures;
use crate::common::require;
use crate::common::snapshot_cli::{num, run, s, stderr, BIN};

/// One capture pair and what its README says.
struct Pair {
    /// kube-apiserver version (the file name's and `kubernetes_build_info`'s).
    k8s: &'static str,
    /// etcd version of the paired capture.
    etcd: &'static str,
    /// `watch_cache_capacity` of pods.
    pods_capacity: f64,
    /// `etcd_mvcc_db_total_size_in_bytes`.
    db_size: f64,
    /// `etcd_debugging_mvcc_current_revision`.
    revision: i64,
    /// Whether `apiserver_watch_cache_resource_version` exists (1.31+).
    has_cache_rv: bool,
}

const PAIRS: [Pair; 4] = [
    Pair {
        k8s: "v1.28.3",
        etcd: "3.5.9",
        pods_capacity: 100.0,
        db_size: 2.285568e+06,
        revision: 870,
        has_cache_rv: false,
    },
    Pair {
        k8s: "v1.30.0",
        etcd: "3.5.12",
        pods_capacity: 200.0,
        db_size: 2.29376e+06,
        revision: 856,
        has_cache_rv: false,
    },
    Pair {
        k8s: "v1.32.0",
        etcd: "3.5.16",
        pods_capacity: 200.0,
        db_size: 2.506752e+06,
        revision: 851,
        has_cache_rv: true,
    },
    Pair {
        k8s: "v1.34.0",
        etcd: "3.6.4",
        pods_capacity: 100.0,
        db_size: 2.064384e+06,
        revision: 893,
        has_cache_rv: true,
    },
];

impl Pair {
    fn apiserver_file(&self, td: &Path) -> PathBuf {
        td.join(format!(
            "apiserver-metrics/kube-apiserver-{}.prom",
            self.k8s
        ))
    }

    fn etcd_file(&self, td: &Path) -> PathBuf {
        td.join(format!(
            "etcd-metrics/etcd-{}-k8s-{}.prom",
            self.etcd, self.k8s
        ))
    }
}

/// Runs `regscope <args>`, asserts exit 0 and parses stdout as JSON.
fn snapshot(args: &[&str]) -> Value {
    let out = run(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "regscope {args:?} failed: {}",
        stderr(&out)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout of {args:?} is not JSON: {e}\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Sum of the `<name>_count{...}` samples of a capture, leaving out the series whose
/// `verb` is one of `skip_verbs`.
fn sum_counts(text: &str, name: &str, skip_verbs: &[&str]) -> f64 {
    let head = format!("{name}_count{{");
    text.lines()
        .filter(|l| l.starts_with(&head))
        .filter(|l| {
            !skip_verbs
                .iter()
                .any(|v| l.contains(&format!("verb=\"{v}\"")))
        })
        .map(|l| {
            l.rsplit(' ')
                .next()
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or_else(|| panic!("sample value: {l}"))
        })
        .sum()
}

/// Number of samples of `name` (exactly that name, with labels).
fn series(text: &str, name: &str) -> usize {
    let head = format!("{name}{{");
    text.lines().filter(|l| l.starts_with(&head)).count()
}

/// The values of every sample of `name` (with labels) whose line contains `with`.
fn samples(text: &str, name: &str, with: &str) -> Vec<f64> {
    let head = format!("{name}{{");
    text.lines()
        .filter(|l| l.starts_with(&head) && l.contains(with))
        .map(|l| {
            l.rsplit(' ')
                .next()
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or_else(|| panic!("sample value: {l}"))
        })
        .collect()
}

/// `snapshot --json` on each capture pair: the replica's fields are null, every panel is
/// filled from the files, and the facts of the README hold.
#[test]
fn snapshot_json_on_each_capture_pair() {
    require!(TESTDATA);
    let td = fixtures::testdata();
    for p in &PAIRS {
        let started = Instant::now();
        let api = p.apiserver_file(&td);
        let etcd = p.etcd_file(&td);
        let v = snapshot(&[
            "snapshot",
            "--json",
            "--apiserver-metrics-file",
            s(&api),
            "--etcd-metrics-file",
            s(&etcd),
        ]);
        let k = p.k8s;
        let text = std::fs::read_to_string(&api).unwrap();

        // No --endpoints: the replica's fields are present and null.
        for f in ["revision", "keys", "resources", "compact_revision", "bytes"] {
            assert!(
                v.as_object().unwrap().contains_key(f),
                "{k}: field {f} missing"
            );
            assert!(v[f].is_null(), "{k}: {f} = {} (expected null)", v[f]);
        }

        // Latency rows: every field there, resources plain names, quantiles ordered.
        let latency = v["latency"].as_array().expect("latency array");
        assert!(!latency.is_empty(), "{k}: no latency rows");
        for r in latency {
            for f in [
                "metric",
                "operation",
                "group",
                "resource",
                "count",
                "p50",
                "p90",
                "p99",
            ] {
                assert!(r.get(f).is_some(), "{k}: latency row without {f}: {r}");
            }
            let res = r["resource"].as_str().expect("resource string");
            let group = r["group"].as_str().expect("group string");
            // Non-resource requests (/readyz, /healthz, openapi: resource "" in
            // apiserver_request_duration_seconds) are labelled too.
            assert!(!res.is_empty(), "{k}: empty resource: {r}");
            assert!(!res.contains('/'), "{k}: resource is a key path: {r}");
            assert!(
                !res.contains('.'),
                "{k}: resource carries its group (type=\"x.group\" not split): {r}"
            );
            assert!(!group.contains('/'), "{k}: group: {r}");
            let op = r["operation"].as_str().unwrap();
            assert!(
                op != "WATCH" && op != "CONNECT",
                "{k}: long-running verb as a latency row: {r}"
            );
            assert!(num(&r["count"]) > 0.0, "{k}: {r}");
            // Single scrape: no rates.
            assert!(r["rate"].is_null(), "{k}: rate from one scrape: {r}");
            if let (Some(a), Some(b), Some(c)) =
                (r["p50"].as_f64(), r["p90"].as_f64(), r["p99"].as_f64())
            {
                assert!(a <= b && b <= c, "{k}: quantiles out of order: {r}");
                assert!(a >= 0.0, "{k}: {r}");
            }
        }
        let etcd_rows: Vec<&Value> = latency
            .iter()
            .filter(|r| r["metric"] == "etcd_request_duration_seconds")
            .collect();
        assert!(
            etcd_rows
                .iter()
                .any(|r| r["resource"] == "pods" && r["group"] == "" && r["operation"] == "create"),
            "{k}: no etcd pods create row"
        );
        // Groups split off the 1.28–1.33 `type` label.
        assert!(
            etcd_rows
                .iter()
                .any(|r| r["resource"] == "apiservices" && r["group"] == "apiregistration.k8s.io"),
            "{k}: apiservices.apiregistration.k8s.io not split into group and resource"
        );
        // Nothing lost or double counted: the rows' counts add up to the capture's.
        let etcd_sum: f64 = etcd_rows.iter().map(|r| num(&r["count"])).sum();
        assert_eq!(
            etcd_sum,
            sum_counts(&text, "etcd_request_duration_seconds", &[]),
            "{k}: etcd_request_duration_seconds counts"
        );
        let api_sum: f64 = latency
            .iter()
            .filter(|r| r["metric"] == "apiserver_request_duration_seconds")
            .map(|r| num(&r["count"]))
            .sum();
        assert_eq!(
            api_sum,
            sum_counts(
                &text,
                "apiserver_request_duration_seconds",
                &["WATCH", "CONNECT"]
            ),
            "{k}: apiserver_request_duration_seconds counts (WATCH and CONNECT left out)"
        );

        // Watch cache: one row per watch_cache_capacity series, pods as the README says.
        let wc = v["watch_cache"].as_array().expect("watch_cache array");
        assert_eq!(wc.len(), series(&text, "watch_cache_capacity"), "{k}");
        let pods: Vec<&Value> = wc
            .iter()
            .filter(|r| r["group"] == "" && r["resource"] == "pods")
            .collect();
        assert_eq!(pods.len(), 1, "{k}: pods watch cache rows: {pods:?}");
        assert_eq!(num(&pods[0]["capacity"]), p.pods_capacity, "{k}");

        // Objects: the apiserver's counts, no replica.
        let objects = v["objects"].as_array().expect("objects array");
        assert!(!objects.is_empty(), "{k}: no object rows");
        for o in objects {
            assert!(
                o["replica"].is_null(),
                "{k}: replica count without one: {o}"
            );
            assert!(!o["resource"].as_str().unwrap().contains('/'), "{k}: {o}");
        }
        let pods = objects
            .iter()
            .find(|o| o["resource"] == "pods" && o["group"] == "")
            .unwrap_or_else(|| panic!("{k}: no pods object row"));
        let want = samples(&text, "apiserver_storage_objects", "resource=\"pods\"");
        assert_eq!(want.len(), 1, "{k}");
        assert_eq!(pods["apiserver"].as_f64(), Some(want[0]), "{k}: {pods}");

        // etcd from its own /metrics.
        let e = &v["etcd"];
        assert_eq!(num(&e["db_size_bytes"]), p.db_size, "{k}: {e}");
        assert_eq!(e["revision"].as_i64(), Some(p.revision), "{k}: {e}");
        assert!(
            e["compact_revision"].is_null(),
            "{k}: -1 (never compacted) must be null: {e}"
        );
        assert_eq!(num(&e["quota_bytes"]), 2.147483648e+09, "{k}: {e}");
        assert_eq!(e["has_leader"], true, "{k}: {e}");
        let etcd_text = std::fs::read_to_string(&etcd).unwrap();
        let in_use: f64 = etcd_text
            .lines()
            .find_map(|l| l.strip_prefix("etcd_mvcc_db_total_size_in_use_in_bytes "))
            .and_then(|v| v.parse().ok())
            .expect("in-use size in the etcd capture");
        assert_eq!(num(&e["db_in_use_bytes"]), in_use, "{k}: {e}");
        assert_eq!(num(&e["reclaimable_bytes"]), p.db_size - in_use, "{k}: {e}");

        // The apiserver's view of the db size equals etcd's in these pairs (README).
        assert_eq!(
            v["apiserver_storage_size_bytes"].as_f64(),
            Some(p.db_size),
            "{k}: apiserver_storage_size_bytes"
        );

        // Compaction window: no compaction yet, so no window (not a huge one).
        let w = &v["compaction_window"];
        assert_eq!(w["head"].as_i64(), Some(p.revision), "{k}: {w}");
        assert!(w["compact_revision"].is_null(), "{k}: {w}");
        assert!(w["window_revisions"].is_null(), "{k}: {w}");
        // The watch cache's lag per resource: etcd's revision − the cache's (1.31+).
        let mut lags: Vec<i64> = w["rows"]
            .as_array()
            .expect("window rows")
            .iter()
            .filter_map(|r| r["watch_cache_lag_revisions"]["value"].as_i64())
            .collect();
        let mut want: Vec<i64> = samples(&text, "apiserver_watch_cache_resource_version", "")
            .into_iter()
            .map(|rv| p.revision - rv as i64)
            .collect();
        lags.sort_unstable();
        want.sort_unstable();
        assert_eq!(lags, want, "{k}: watch cache lags");
        if p.has_cache_rv {
            assert_eq!(
                lags.first(),
                Some(&0),
                "{k}: the freshest cache is at etcd's head"
            );
            assert!(w["rows"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r["risk"] == "ok"));
        }

        // What the version does not expose.
        let not_exposed: Vec<&str> = v["not_exposed"]
            .as_array()
            .expect("not_exposed array")
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        assert_eq!(
            not_exposed.contains(&"watch_cache_resource_version"),
            !p.has_cache_rv,
            "{k}: not_exposed = {not_exposed:?}"
        );

        // Scrape status names the version and the file.
        let sa = &v["scrape"]["apiserver"];
        assert_eq!(sa["version"], k, "{k}: {sa}");
        assert_eq!(sa["configured"], true, "{k}: {sa}");
        assert_eq!(sa["good_scrapes"], 1, "{k}: {sa}");
        assert!(sa["last_error"].is_null(), "{k}: {sa}");
        assert!(sa["stale_since"].is_null(), "{k}: {sa}");
        assert_eq!(sa["source"], s(&api), "{k}: {sa}");
        let se = &v["scrape"]["etcd"];
        assert_eq!(se["version"], p.etcd, "{k}: {se}");
        assert_eq!(se["good_scrapes"], 1, "{k}: {se}");

        // The time is a figure, not a claim: its target is in `cargo bench --bench
        // metrics_parse`.
        let took = started.elapsed();
        println!("{k}: {} latency rows in {took:?}", latency.len());
    }
}

/// Successive files are successive scrapes: the same capture twice gives rates, all 0.
#[test]
fn snapshot_json_same_file_twice_gives_zero_rates() {
    require!(TESTDATA);
    let td = fixtures::testdata();
    for p in [&PAIRS[0], &PAIRS[3]] {
        let api = p.apiserver_file(&td);
        let v = snapshot(&[
            "snapshot",
            "--json",
            "--apiserver-metrics-file",
            s(&api),
            "--apiserver-metrics-file",
            s(&api),
        ]);
        let k = p.k8s;
        let latency = v["latency"].as_array().unwrap();
        assert!(!latency.is_empty(), "{k}");
        for r in latency {
            assert_eq!(r["rate"].as_f64(), Some(0.0), "{k}: {r}");
        }
        assert_eq!(v["scrape"]["apiserver"]["good_scrapes"], 2, "{k}");
        // No etcd file and no endpoint: etcd is not configured, its section is null.
        assert!(v["etcd"].is_null(), "{k}: {}", v["etcd"]);
        assert_eq!(v["scrape"]["etcd"]["configured"], false, "{k}");
    }
}

/// etcd's metrics alone, from an etcd that compacted (the local 3.4.23 capture: 300 puts,
/// compact 200): the window is head − compacted, no apiserver configured.
#[test]
fn snapshot_json_etcd_capture_with_compaction() {
    require!(TESTDATA);
    let td = fixtures::testdata();
    let f = td.join("etcd-metrics/etcd-3.4.23-local.txt");
    let v = snapshot(&["snapshot", "--json", "--etcd-metrics-file", s(&f)]);
    let e = &v["etcd"];
    assert_eq!(e["revision"], 301, "{e}");
    assert_eq!(e["compact_revision"], 200, "{e}");
    assert!(num(&e["db_size_bytes"]) > 0.0, "{e}");
    let w = &v["compaction_window"];
    assert_eq!(w["head"], 301, "{w}");
    assert_eq!(w["compact_revision"], 200, "{w}");
    assert_eq!(w["window_revisions"], 101, "{w}");
    assert_eq!(v["scrape"]["etcd"]["version"], "3.4.23");
    assert_eq!(v["scrape"]["apiserver"]["configured"], false);
    assert!(v["latency"].as_array().unwrap().is_empty());
    assert!(v["revision"].is_null(), "no replica without --endpoints");
}

/// The apiserver's `-1` object count (its "fetching error" sentinel) is "unavailable",
/// never a count; a quantile in the `+Inf` bucket is `{"at_least": <last bound>}`, never
/// a number. Inputs: a copy of a real capture with one value changed, and a minimal
/// exposition written here.
#[test]
fn snapshot_json_sentinels_and_open_ended_quantiles() {
    require!(TESTDATA);
    let td = fixtures::testdata();
    let dir = tempfile::tempdir().unwrap();
    let real = std::fs::read_to_string(PAIRS[2].apiserver_file(&td)).unwrap();
    let line = real
        .lines()
        .find(|l| l.starts_with("apiserver_storage_objects{resource=\"pods\"} "))
        .expect("pods object count in the 1.32 capture");
    let edited = real.replace(line, "apiserver_storage_objects{resource=\"pods\"} -1");
    let f = dir.path().join("minus-one.prom");
    std::fs::write(&f, edited).unwrap();
    let v = snapshot(&["snapshot", "--json", "--apiserver-metrics-file", s(&f)]);
    let pods = v["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["resource"] == "pods" && o["group"] == "")
        .expect("pods row")
        .clone();
    assert!(pods["apiserver"].is_null(), "{pods}");
    assert_eq!(pods["apiserver_state"], "unavailable", "{pods}");

    // 2 of 4 requests within 5 ms, 2 past the last bucket (60 s).
    let bounds = [
        "0.005", "0.025", "0.05", "0.1", "0.2", "0.4", "0.6", "0.8", "1", "1.25", "1.5", "2", "3",
        "4", "5", "6", "8", "10", "15", "20", "30", "45", "60",
    ];
    let labels = "group=\"\",operation=\"get\",resource=\"pods\"";
    let mut text = String::from(
        "# TYPE kubernetes_build_info gauge\nkubernetes_build_info{git_version=\"v1.34.0\"} 1\n\
         # TYPE etcd_request_duration_seconds histogram\n",
    );
    for b in bounds {
        text += &format!("etcd_request_duration_seconds_bucket{{{labels},le=\"{b}\"}} 2\n");
    }
    text += &format!(
        "etcd_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} 4\n\
         etcd_request_duration_seconds_sum{{{labels}}} 240.004\n\
         etcd_request_duration_seconds_count{{{labels}}} 4\n"
    );
    let f = dir.path().join("slow.prom");
    std::fs::write(&f, text).unwrap();
    let v = snapshot(&["snapshot", "--json", "--apiserver-metrics-file", s(&f)]);
    let rows = v["latency"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let r = &rows[0];
    assert_eq!(r["count"].as_f64(), Some(4.0), "{r}");
    assert_eq!(r["p50"].as_f64(), Some(0.005), "{r}");
    for q in ["p90", "p99"] {
        assert_eq!(r[q], serde_json::json!({ "at_least": 60.0 }), "{q}: {r}");
    }
    assert_eq!(v["scrape"]["apiserver"]["version"], "v1.34.0");
}

/// A metrics file that does not exist: exit 2, the path named on stderr, nothing on stdout.
#[test]
fn missing_metrics_file_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    for flag in ["--apiserver-metrics-file", "--etcd-metrics-file"] {
        let missing = dir.path().join(format!("no-such{flag}.prom"));
        let out = run(&["snapshot", "--json", flag, s(&missing)]);
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(s(&missing)), "{flag}: {err}");
        assert!(err.contains(flag), "{flag}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(out.stdout.is_empty(), "{flag}: stdout must be empty");
    }
}

/// A login page saved as metrics (what a proxy returns without credentials): exit 0, the
/// target is stale with an error naming HTML; after a good file, its data stays.
#[test]
fn html_metrics_file_is_stale_not_fatal() {
    require!(TESTDATA);
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("metrics.html");
    std::fs::write(
        &html,
        "<!DOCTYPE html>\n<html>\n<head><title>Sign in</title></head>\n\
         <body><form action=\"/login\"><input name=\"user\"></form></body>\n</html>\n",
    )
    .unwrap();
    let out = run(&["snapshot", "--json", "--apiserver-metrics-file", s(&html)]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // One line on stderr naming the file and why.
    assert!(err.contains(s(&html)) && err.contains("HTML"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let sa = &v["scrape"]["apiserver"];
    let err = sa["last_error"].as_str().unwrap_or_else(|| panic!("{sa}"));
    assert!(err.contains("HTML"), "{sa}");
    assert!(sa["stale_since"].is_string(), "{sa}");
    assert_eq!(sa["good_scrapes"], 0, "{sa}");
    assert!(sa["version"].is_null(), "{sa}");
    assert!(v["latency"].as_array().unwrap().is_empty(), "{v}");

    // A good capture then the HTML page: stale, with the last good data kept.
    let td = fixtures::testdata();
    let api = PAIRS[3].apiserver_file(&td);
    let v = snapshot(&[
        "snapshot",
        "--json",
        "--apiserver-metrics-file",
        s(&api),
        "--apiserver-metrics-file",
        s(&html),
    ]);
    let sa = &v["scrape"]["apiserver"];
    assert!(
        sa["last_error"].as_str().unwrap_or("").contains("HTML"),
        "{sa}"
    );
    assert!(sa["stale_since"].is_string(), "{sa}");
    assert_eq!(sa["good_scrapes"], 1, "{sa}");
    assert_eq!(sa["version"], "v1.34.0", "{sa}");
    assert!(
        !v["latency"].as_array().unwrap().is_empty(),
        "the last good data is kept"
    );
}

/// An explicit `--kubeconfig` that cannot be read is an error (exit 2, one clear line),
/// never silently "apiserver side off".
#[test]
fn unreadable_kubeconfig_exits_2() {
    let out = run(&["snapshot", "--json", "--kubeconfig", "/nonexistent"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("--kubeconfig"), "{err}");
    assert!(err.contains("/nonexistent"), "{err}");
    assert!(err.contains("No such file"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(out.stdout.is_empty());
}

/// `snapshot --json | head -1`: a reader that goes away is the end of the output, not a
/// panic.
#[test]
fn snapshot_json_into_closed_pipe_does_not_panic() {
    require!(TESTDATA);
    let td = fixtures::testdata();
    let api = PAIRS[3].apiserver_file(&td);
    let mut child = Command::new(BIN)
        .args(["snapshot", "--json", "--apiserver-metrics-file", s(&api)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run regscope");
    // Close the read end before regscope writes (it reads and derives a 3 MB file first).
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    assert_ne!(out.status.code(), Some(101), "{err}");
}
