//! What serving `/metrics` costs, and whether it answers during a big initial sync.
//!
//! Three parts, chosen with `EXPORTER_PARTS` (comma-separated, default `render,cpu,sync`):
//!
//! - `render` (in process, one thread): a [`Readings`] shaped like a big cluster's (300
//!   resources, 2,048 writers each with its own series, latency rows of 280 (operation,
//!   resource) pairs; about 5,000 served series) through [`families`] + [`render`], in both
//!   formats, median of `EXPORTER_RENDER_RUNS` (default 200) runs each. Then the session's
//!   half of a scrape, [`signals::read`], on a session built from observations as the live
//!   loop applies them: a list of 300 resources, creates by 2,048 writers, and two scrapes
//!   of a real kube-apiserver's `/metrics` (from `../shared/testdata`, when present).
//! - `cpu`: the release binary, `regscope serve --writer-series 2048`, against a private
//!   etcd holding keys of 600 resources (`EXPORTER_RESOURCES`) and then creates by 2,048
//!   writers, so that `/metrics` serves at least 5,000 series. Scraped with Prometheus'
//!   `Accept` header every 15 s for `EXPORTER_CPU_SECS` (default 180) and left idle as long,
//!   in 30 s stretches alternated ABBA (idle, scraped, scraped, idle, …). Printed: the
//!   process's CPU as % of a core in each kind of stretch, the CPU each scrape took (the
//!   process's CPU clock read just before the request and just after the answer) and what
//!   that is at one scrape per 15 s, and the scrape latencies.
//! - `sync`: 1,000,000 keys (`EXPORTER_SYNC_KEYS`) of the `mixed` set (`common/keyset.rs`,
//!   loaded within `EXPORTER_LOAD_SECS`, default 1200), then `EXPORTER_SYNC_ROUNDS` (default
//!   3) rounds of: `etcdctl get --prefix /registry --keys-only | wc -l`; `regscope serve`
//!   started on the same etcd and scraped (text format) every 100 ms from the moment its
//!   port opens until `regscope_etcd_watch_up` is 1; and `regscope serve` not scraped (the
//!   two alternate which goes first). Printed per round and as medians: the sync's duration
//!   beside etcdctl's (and their ratio), the time to the list applied (its `listed` line on
//!   stderr) scraped and not, the scrapes' latency during the sync (p50, p90, p99, max;
//!   below 100 scrapes a round's p99 is its max), those over 1 s, and those answered from
//!   an older reading (the server's "session is busy" comment).
//!
//! ```text
//! cargo build --release      # the binary the cpu and sync parts run (cargo bench builds it too)
//! cargo bench --bench exporter
//! EXPORTER_PARTS=render cargo bench --bench exporter
//! EXPORTER_DIR=DIR cargo bench --bench exporter   # keep etcd's data dir of the sync part
//! ```
//!
//! With `EXPORTER_DIR` the million keys are loaded once into `DIR` and reused (the same
//! layout as `INITIAL_SYNC_DIR` of `benches/initial_sync.rs`, so one dir serves both).
//! `EXPORTER_PARTS=render-once` does one warm families + render (OpenMetrics) of the 5,000
//! series and nothing else, for an instruction count of that alone:
//!
//! ```text
//! EXPORTER_PARTS=render-once valgrind --tool=callgrind --collect-atstart=no \
//!   --toggle-collect='exporter::one_scrape*' target/release/deps/exporter-HASH
//! ```
//!
//! Needs `etcd` and `etcdctl` on PATH for the cpu and sync parts.

use std::hint::black_box;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use regscope::derive::signals::{self, Readings, Sample};
use regscope::exporter::exposition::{families, render, Extras, Format, WriterSeries};
use regscope::model::{
    Bytes, ConnState, EventKind, KeyValue, Observation, ScrapeOutcome, ScrapeTarget, Stamped,
    WatchEvent, BUILTIN_RESOURCES,
};
use regscope::store::Session;

#[path = "common/etcd.rs"]
mod etcd;
#[path = "common/keyset.rs"]
mod keyset;
#[path = "common/process.rs"]
mod process;
use process::{process_cpu, rss_mib};

const BIN: &str = env!("CARGO_BIN_EXE_regscope");

/// Prometheus' scrape `Accept` header (prometheus scrape/scrape.go, as of 2.42).
const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// Writers with their own series, and distinct writers created (the replica's row limit,
/// `store::replica::writers::MAX_WRITERS`).
const WRITERS: usize = 2048;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The value at quantile `q` (0–1) of `v`, nearest rank.
fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

// ---------------------------------------------------------------------------------------
// Resources and writers, shared by every part.

/// One resource of the bench: its API group, its plural, and where its keys live after
/// `/registry/` (`pods`, `services/specs`, `cert-manager.io/certificates`).
#[derive(Clone)]
struct Resource {
    group: String,
    resource: String,
    storage: String,
}

/// `n` resources: every built-in one, then custom resources of realistic names (a plural
/// from a few operators' kinds, in a group per team), as a cluster with many CRDs has.
fn resources(n: usize) -> Vec<Resource> {
    const KINDS: [&str; 10] = [
        "certificates",
        "servicemonitors",
        "applications",
        "networkpolicies",
        "virtualservices",
        "kafkatopics",
        "clusterissuers",
        "podmonitors",
        "gateways",
        "sealedsecrets",
    ];
    let mut out: Vec<Resource> = BUILTIN_RESOURCES
        .iter()
        .map(|b| Resource {
            group: b.group.to_string(),
            resource: b.resource.to_string(),
            storage: b.storage_path.to_string(),
        })
        .take(n)
        .collect();
    let mut i = 0;
    while out.len() < n {
        let group = format!("team-{:03}.platform.example.com", i / KINDS.len());
        let resource = KINDS[i % KINDS.len()].to_string();
        out.push(Resource {
            storage: format!("{group}/{resource}"),
            group,
            resource,
        });
        i += 1;
    }
    out
}

/// Field manager number `i`: a few kinds of writers, numbered.
fn manager(i: usize) -> String {
    const WHO: [&str; 6] = [
        "kube-controller-manager",
        "argocd-application-controller",
        "kubectl-client-side-apply",
        "helm",
        "cert-manager-certificates-issuing",
        "terraform-provider-kubernetes",
    ];
    format!("{}-{i:04}", WHO[i % WHO.len()])
}

/// Object `j` of resource `r` as kube-apiserver would store it, last written by `manager`:
/// its key (`/registry/<storage>/ns-NN/obj-NNNNNN`) and a JSON value (kube-apiserver's JSON
/// serializer output, one trailing newline, as for custom resources) whose only
/// managedFields entry is `manager`'s.
fn object(r: &Resource, j: usize, manager: &str) -> (String, Vec<u8>) {
    let (namespace, name) = (format!("ns-{:02}", j % 20), format!("obj-{j:06}"));
    let key = format!("/registry/{}/{namespace}/{name}", r.storage);
    let api_version = if r.group.is_empty() {
        "v1".to_string()
    } else {
        format!("{}/v1", r.group)
    };
    let obj = serde_json::json!({
        "apiVersion": api_version,
        "kind": "Object",
        "metadata": {
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "managedFields": [{
                "apiVersion": api_version,
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {".": {}, "f:replicas": {}, "f:selector": {}}},
                "manager": manager,
                "operation": "Update",
                "time": "2025-01-01T00:00:00Z",
            }],
            "name": name,
            "namespace": namespace,
            "uid": format!("00000000-0000-4000-8000-{j:012x}"),
        },
        "spec": {"replicas": 3, "selector": {"app": name}, "note": "x".repeat(200)},
    });
    let mut value = obj.to_string().into_bytes();
    value.push(b'\n');
    (key, value)
}

// ---------------------------------------------------------------------------------------
// render: families() + render() of ~5,000 series, and signals::read of a session.

/// Appends one sample of signal `name`, checking the signal and its label count.
fn put(r: &mut Readings, name: &str, labels: &[&str], value: f64) {
    let s = signals::signal(name).unwrap_or_else(|| panic!("no signal {name}"));
    assert_eq!(s.labels.len(), labels.len(), "labels of {name}");
    r.signals.entry(s.name).or_default().push(Sample {
        labels: labels.iter().map(|l| l.to_string()).collect(),
        value,
    });
}

/// A reading of a big cluster: 300 resources (keys, bytes, writes, objects, watch cache),
/// 2,048 writers, latency rows of 280 (operation, group, resource), informer lag of a few
/// resources, and the unlabelled signals. Values mix integers and fractions as the real
/// ones do.
fn big_readings() -> Readings {
    let mut r = Readings::default();
    for (name, v) in [
        ("etcd_head_revision", 183_456_789.0),
        ("etcd_compacted_revision", 183_401_220.0),
        ("compaction_window_revisions", 55_569.0),
        ("compaction_window_seconds", 301.25),
        ("regscope_watch_lag_revisions", 3.0),
        ("gaps_total", 0.0),
        ("cluster_replacements_total", 0.0),
        ("etcd_watch_up", 1.0),
        ("etcd_db_size_bytes", 2_147_483_648.0),
        ("etcd_db_in_use_bytes", 1_288_490_189.0),
        ("etcd_quota_bytes", 8_589_934_592.0),
        ("etcd_leader_changes_total", 2.0),
    ] {
        put(&mut r, name, &[], v);
    }
    for (i, k) in [
        "progress_behind",
        "progress_ahead_of_events",
        "repeated_events",
        "unknown_deletes",
    ]
    .iter()
    .enumerate()
    {
        put(&mut r, "watch_anomalies_total", &[k], i as f64);
    }
    for (k, n) in [
        ("leader", 1.0),
        ("follower", 2.0),
        ("learner", 0.0),
        ("unreachable", 0.0),
    ] {
        put(&mut r, "etcd_members", &[k], n);
    }
    for (i, pl) in [
        "exempt",
        "system",
        "node-high",
        "leader-election",
        "workload-high",
        "workload-low",
        "global-default",
        "catch-all",
    ]
    .iter()
    .enumerate()
    {
        put(&mut r, "apf_rejected_total", &[pl], (i * 17) as f64);
    }
    let res = resources(300);
    for (i, x) in res.iter().enumerate() {
        let keys = (i * 7919 % 40_000 + 3) as f64;
        put(&mut r, "keys", &[&x.storage], keys);
        put(&mut r, "stored_bytes", &[&x.storage], keys * 1843.0);
        put(&mut r, "writes_total", &[&x.storage, "put"], keys * 31.0);
        put(&mut r, "writes_total", &[&x.storage, "delete"], keys * 3.0);
        put(
            &mut r,
            "written_bytes_total",
            &[&x.storage, "put"],
            keys * 31.0 * 1843.0,
        );
        put(&mut r, "objects", &[&x.group, &x.resource], keys);
        put(
            &mut r,
            "watch_cache_capacity",
            &[&x.group, &x.resource],
            100.0 + i as f64,
        );
    }
    for x in res.iter().take(10) {
        let l = [x.group.as_str(), x.resource.as_str(), signals::OWN_INFORMER];
        put(&mut r, "informer_lag_revisions", &l, 12.0);
        put(&mut r, "informer_lag_seconds", &l, 0.0421);
        put(&mut r, "informer_lag_window_ratio", &l, 12.0 / 55_569.0);
        put(&mut r, "informer_relists_total", &l[..2], 1.0);
        put(&mut r, "informer_gone_total", &l[..2], 0.0);
    }
    for i in 0..WRITERS {
        let x = &res[i % res.len()];
        let op = if i % 5 == 0 { "Apply" } else { "Update" };
        put(
            &mut r,
            "writer_writes_total",
            &[&x.storage, &manager(i), op],
            (1 + i * 13 % 997) as f64,
        );
    }
    const OPS: [&str; 7] = [
        "get", "list", "create", "update", "delete", "watch", "patch",
    ];
    for i in 0..280 {
        let x = &res[i / OPS.len() * 3 % res.len()];
        let l = [OPS[i % OPS.len()], x.group.as_str(), x.resource.as_str()];
        let p99 = 0.0025 * (1 + i % 40) as f64;
        put(&mut r, "etcd_request_p50_seconds", &l, p99 / 7.3);
        put(&mut r, "etcd_request_p99_seconds", &l, p99);
        put(&mut r, "apiserver_request_p99_seconds", &l, p99 * 1.6);
    }
    r
}

/// Median seconds of `runs` calls of `f`.
fn time(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut v: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    median(&mut v)
}

/// Served series of an exposition: its lines that are not comments.
fn series(body: &str) -> usize {
    body.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count()
}

fn render_part() {
    let runs = etcd::env_number("EXPORTER_RENDER_RUNS", 200);
    let readings = big_readings();
    let samples: usize = readings.signals.values().map(Vec::len).sum();
    let mut writers = WriterSeries::new(WRITERS);
    let extras = Extras::default();
    // The first scrape places the writers; every later one is as timed.
    let fams = families(&readings, &mut writers, &extras);
    let fam_t = time(runs, || {
        black_box(families(black_box(&readings), &mut writers, &extras));
    });
    for format in [Format::Text, Format::OpenMetrics] {
        let body = render(&fams, format);
        let render_t = time(runs, || {
            black_box(render(black_box(&fams), format));
        });
        let both_t = time(runs, || {
            let f = families(black_box(&readings), &mut writers, &extras);
            black_box(render(&f, format));
        });
        println!(
            "exporter render {format:?}: {samples} samples read -> {} series, {} families, {:.0} KiB; families() {:.2} ms + render() {:.2} ms; together {:.2} ms (median of {runs})",
            series(&body),
            fams.len(),
            body.len() as f64 / 1024.0,
            fam_t * 1e3,
            render_t * 1e3,
            both_t * 1e3
        );
    }
    session_read(runs);
}

/// `body` with every finite sample value raised by `by`: a later scrape of the same
/// apiserver, its counters and histogram buckets grown (the buckets stay cumulative).
fn bumped(body: &str, by: f64) -> String {
    let mut out = String::with_capacity(body.len() + body.len() / 8);
    for line in body.lines() {
        match line.rsplit_once(' ') {
            Some((head, v)) if !line.starts_with('#') => match v.parse::<f64>() {
                Ok(x) if x.is_finite() => {
                    out.push_str(head);
                    out.push(' ');
                    out.push_str(&(x + by).to_string());
                }
                _ => out.push_str(line),
            },
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// A session as the live loop builds it: a list of `keys_per` keys of each of 300
/// resources, then one create by each of [`WRITERS`] writers (round-robin over the
/// resources), then two apiserver scrapes 5 s apart when a capture is found.
fn big_session(keys_per: usize) -> (Session, bool) {
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_750_000_000);
    let mut clock = 0u64;
    let mut session = Session::new(Default::default());
    let mut apply = |s: &mut Session, obs: Observation, step_ms: u64| {
        clock += step_ms;
        s.apply(&Stamped {
            at: t0 + Duration::from_millis(clock),
            obs,
        });
    };
    let res = resources(300);
    let mut kvs = Vec::new();
    let mut rev = 1;
    for r in &res {
        for j in 0..keys_per {
            rev += 1;
            let (k, v) = object(r, j, "preload");
            kvs.push(KeyValue::joined(k.as_bytes(), rev, rev, 1, 0, &v));
        }
    }
    apply(&mut session, Observation::Conn(ConnState::Connecting), 0);
    apply(&mut session, Observation::ListBegin { revision: rev }, 1);
    for page in kvs.chunks(1000) {
        apply(
            &mut session,
            Observation::ListPage { kvs: page.to_vec() },
            1,
        );
    }
    apply(
        &mut session,
        Observation::ListDone {
            revision: rev,
            compacted: None,
        },
        1,
    );
    apply(&mut session, Observation::Conn(ConnState::Watching), 1);
    for i in 0..WRITERS {
        rev += 1;
        let r = &res[i % res.len()];
        let (k, v) = object(r, keys_per + i, &manager(i));
        let kv = KeyValue::joined(k.as_bytes(), rev, rev, 1, 0, &v);
        apply(
            &mut session,
            Observation::Events {
                revision: rev,
                events: vec![WatchEvent {
                    kind: EventKind::Put,
                    kv,
                    prev_kv: None,
                }],
            },
            2,
        );
    }
    let capture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/testdata/apiserver-metrics/kube-apiserver-v1.34.0.prom");
    let scraped = match std::fs::read_to_string(&capture) {
        Ok(body) => {
            for (by, step) in [(0.0, 1000), (25.0, 5000)] {
                let body = if by == 0.0 {
                    body.clone()
                } else {
                    bumped(&body, by)
                };
                apply(
                    &mut session,
                    Observation::Scrape {
                        target: ScrapeTarget::Apiserver,
                        outcome: ScrapeOutcome::Body {
                            source: "bench".into(),
                            body: Bytes::from(body),
                        },
                    },
                    step,
                );
            }
            true
        }
        Err(_) => false,
    };
    (session, scraped)
}

fn session_read(runs: usize) {
    let keys_per = etcd::env_number("EXPORTER_SESSION_KEYS_PER_RESOURCE", 100);
    let (session, scraped) = big_session(keys_per);
    let readings = signals::read(&session);
    let samples: usize = readings.signals.values().map(Vec::len).sum();
    let read_t = time(runs, || {
        black_box(signals::read(black_box(&session)));
    });
    let mut writers = WriterSeries::new(WRITERS);
    let extras = Extras::default();
    let _ = families(&readings, &mut writers, &extras);
    let whole_t = time(runs, || {
        let r = signals::read(black_box(&session));
        let f = families(&r, &mut writers, &extras);
        black_box(render(&f, Format::OpenMetrics));
    });
    let body = render(
        &families(&readings, &mut writers, &extras),
        Format::OpenMetrics,
    );
    println!(
        "exporter session: {} keys of 300 resources, {WRITERS} writers, {}; signals::read {:.2} ms ({samples} samples, {} latency rows); read + families + render (OpenMetrics) {:.2} ms for {} series (median of {runs})",
        session.replica.live_keys(),
        if scraped {
            "two kube-apiserver v1.34.0 scrapes"
        } else {
            "no apiserver capture found (../shared/testdata): no latency rows"
        },
        read_t * 1e3,
        readings.get("etcd_request_p99_seconds").len(),
        whole_t * 1e3,
        series(&body)
    );
}

/// One scrape's exposition: families() + render() in OpenMetrics. Not inlined, so that
/// callgrind can count it alone (`--toggle-collect=exporter::one_scrape*`).
#[inline(never)]
fn one_scrape(readings: &Readings, writers: &mut WriterSeries) -> String {
    let f = families(readings, writers, &Extras::default());
    render(&f, Format::OpenMetrics)
}

/// One warm [`one_scrape`] of [`big_readings`] (the writers placed by an earlier one), for
/// callgrind.
fn render_once() {
    let readings = big_readings();
    let mut writers = WriterSeries::new(WRITERS);
    let _ = families(&readings, &mut writers, &Extras::default());
    let body = one_scrape(black_box(&readings), &mut writers);
    println!("exporter render-once: {} series", series(black_box(&body)));
}

// ---------------------------------------------------------------------------------------
// The real binary: scrapes over HTTP, its CPU.

/// One answered `GET /metrics`.
struct Scraped {
    /// From connect to the end of the body.
    secs: f64,
    status: u16,
    body: String,
}

impl Scraped {
    /// The value of unlabelled sample `name`.
    fn value(&self, name: &str) -> Option<f64> {
        self.body
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
    }

    /// Whether the server answered from an older reading (its comment, text format only).
    fn stale(&self) -> bool {
        self.body.starts_with("# regscope: ")
    }
}

/// `GET /metrics` on `addr` over a new connection (HTTP/1.1, `Connection: close`).
fn scrape(addr: &str, accept: Option<&str>) -> std::io::Result<Scraped> {
    let t = Instant::now();
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{accept}\r\n"
    )?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let secs = t.elapsed().as_secs_f64();
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    Ok(Scraped { secs, status, body })
}

/// The payload of a chunked HTTP/1.1 body.
fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

/// A running `regscope serve`; killed and reaped on drop unless stopped.
struct Serve {
    child: Option<Child>,
    addr: String,
    log: tempfile::NamedTempFile,
}

impl Serve {
    fn start(endpoint: &str, extra: &[&str]) -> Serve {
        let addr = format!("127.0.0.1:{}", etcd::free_port());
        let log = tempfile::NamedTempFile::new().expect("log file");
        let child = Command::new(BIN)
            .args(["serve", "--endpoints", endpoint, "--listen", &addr])
            .args(extra)
            // No user config, no kubeconfig: etcd alone.
            .env("REGSCOPE_CONFIG", "")
            .env("KUBECONFIG", "/nonexistent")
            .stdout(Stdio::null())
            .stderr(log.reopen().expect("log"))
            .spawn()
            .expect("spawn regscope serve");
        Serve {
            child: Some(child),
            addr,
            log,
        }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Waits until the port accepts a connection; false after `within`.
    fn wait_open(&self, within: Duration) -> bool {
        let t = Instant::now();
        while t.elapsed() < within {
            if TcpStream::connect(&self.addr).is_ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        false
    }

    /// What the process wrote on stderr.
    fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// SIGTERM, then the process's own CPU seconds and peak RSS (MiB) from wait4(2).
    fn stop(mut self) -> (f64, f64) {
        let Some(mut child) = self.child.take() else {
            return (0.0, 0.0);
        };
        let pid = child.id() as libc::pid_t;
        // SAFETY: `pid` is our child, not yet reaped.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let t = Instant::now();
        loop {
            // SAFETY: `pid` is our child; the pointers are to live locals.
            let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
            if r == pid {
                break;
            }
            if t.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        (
            tv(usage.ru_utime) + tv(usage.ru_stime),
            usage.ru_maxrss as f64 / 1024.0,
        )
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Puts `kvs` in transactions of [`etcd::TXN_OPS`].
async fn put_all(c: &mut etcd_client::Client, kvs: Vec<(String, Vec<u8>)>) {
    for chunk in kvs.chunks(etcd::TXN_OPS) {
        let ops: Vec<etcd_client::TxnOp> = chunk
            .iter()
            .map(|(k, v)| etcd_client::TxnOp::put(k.as_str(), v.clone(), None))
            .collect();
        c.txn(etcd_client::Txn::new().and_then(ops))
            .await
            .expect("put");
    }
}

/// Scrapes until `done` holds of an answer, every `every`; the last answer, or `None`
/// after `within`.
fn scrape_until(
    addr: &str,
    every: Duration,
    within: Duration,
    done: impl Fn(&Scraped) -> bool,
) -> Option<Scraped> {
    let t = Instant::now();
    while t.elapsed() < within {
        if let Ok(s) = scrape(addr, Some(PROMETHEUS_ACCEPT)) {
            if done(&s) {
                return Some(s);
            }
        }
        std::thread::sleep(every);
    }
    None
}

fn cpu_part(rt: &tokio::runtime::Runtime) {
    let n_res = etcd::env_number("EXPORTER_RESOURCES", 600);
    let keys_per = etcd::env_number("EXPORTER_KEYS_PER_RESOURCE", 20);
    let secs = etcd::env_number("EXPORTER_CPU_SECS", 180).max(60) as u64;
    const STRETCH: u64 = 30;
    const EVERY: u64 = 15;
    let res = resources(n_res);
    rt.block_on(async {
        let etcd = regscope::demo::PrivateEtcd::start_with(&[
            "--max-txn-ops=1000",
            "--max-request-bytes=33554432",
        ])
        .await
        .expect("etcd");
        let mut c = etcd.client().await.expect("client");
        let preload: Vec<(String, Vec<u8>)> = res
            .iter()
            .flat_map(|r| {
                (0..keys_per).map(move |j| {
                    object(r, j, "preload")
                })
            })
            .collect();
        put_all(&mut c, preload).await;
        let writer_series = WRITERS.to_string();
        let serve = Serve::start(&etcd.endpoint(), &["--writer-series", &writer_series]);
        assert!(
            serve.wait_open(Duration::from_secs(30)),
            "regscope serve did not listen: {}",
            serve.log()
        );
        let addr = serve.addr.clone();
        let up = scrape_until(&addr, Duration::from_millis(200), Duration::from_secs(60), |s| {
            s.value("regscope_etcd_watch_up") == Some(1.0)
        });
        assert!(up.is_some(), "no watch within 60 s: {}", serve.log());
        // Creates by as many writers as the replica keeps rows for, after the list (list
        // items are not writes), round-robin over the resources.
        let creates: Vec<(String, Vec<u8>)> = (0..WRITERS)
            .map(|i| {
                let r = &res[i % res.len()];
                object(r, keys_per + i, &manager(i))
            })
            .collect();
        put_all(&mut c, creates).await;
        let full = scrape_until(&addr, Duration::from_millis(500), Duration::from_secs(60), |s| {
            s.body
                .lines()
                .filter(|l| l.starts_with("regscope_writer_writes_total{"))
                .count()
                > WRITERS
        });
        let Some(full) = full else {
            panic!("the writers' series did not appear within 60 s: {}", serve.log());
        };
        let n_series = series(&full.body);
        println!(
            "exporter cpu: regscope serve --writer-series {WRITERS}: {} resources, {} keys, {WRITERS} writers: /metrics serves {n_series} series, {:.0} KiB (OpenMetrics)",
            res.len(),
            res.len() * keys_per + WRITERS,
            full.body.len() as f64 / 1024.0
        );
        // Settle: the writes' per-second buckets and the first placements are behind.
        tokio::time::sleep(Duration::from_secs(5)).await;
        let pid = serve.pid();
        // As long idle as scraped.
        let stretches = (2 * secs / STRETCH).max(2) as usize;
        let (mut idle, mut busy) = ((0.0, 0.0), (0.0, 0.0));
        let (mut lat, mut per_scrape) = (Vec::new(), Vec::new());
        for k in 0..stretches {
                // ABBA: idle, scraped, scraped, idle, …
                let scraped = matches!(k % 4, 1 | 2);
                let t0 = Instant::now();
                let c0 = process_cpu(pid);
                if scraped {
                    for j in 0..STRETCH / EVERY {
                        sleep_until(t0 + Duration::from_secs(j * EVERY));
                        let before = process_cpu(pid);
                        let s = scrape(&addr, Some(PROMETHEUS_ACCEPT)).expect("scrape");
                        let after = process_cpu(pid);
                        assert_eq!(s.status, 200);
                        lat.push(s.secs);
                        per_scrape.push(after - before);
                    }
                }
                sleep_until(t0 + Duration::from_secs(STRETCH));
                let (cpu, wall) = (process_cpu(pid) - c0, t0.elapsed().as_secs_f64());
                let acc = if scraped { &mut busy } else { &mut idle };
                acc.0 += cpu;
                acc.1 += wall;
                eprintln!(
                    "  stretch {}: {} {:.3} % of a core",
                    k + 1,
                    if scraped { "scraped" } else { "idle   " },
                    100.0 * cpu / wall
                );
            }
        let rss = rss_mib(pid);
        let n = lat.len();
        let cpu_med = median(&mut per_scrape.clone());
        let cpu_max = per_scrape.iter().copied().fold(0.0, f64::max);
        let (idle_pct, busy_pct) = (100.0 * idle.0 / idle.1, 100.0 * busy.0 / busy.1);
        println!(
            "exporter cpu: {:.0} s idle: {idle_pct:.3} % of a core; {:.0} s scraped every {EVERY} s: {busy_pct:.3} % of a core; difference {:.3} % (ABBA stretches of {STRETCH} s)",
            idle.1,
            busy.1,
            busy_pct - idle_pct
        );
        println!(
            "exporter cpu: each scrape of {n_series} series took {:.1} ms of CPU (median of {n}; max {:.1} ms) = {:.3} % of a core at one scrape per {EVERY} s; latency median {:.1} ms, max {:.1} ms; RSS {rss:.0} MiB",
            cpu_med * 1e3,
            cpu_max * 1e3,
            100.0 * cpu_med / EVERY as f64,
            median(&mut lat.clone()) * 1e3,
            lat.iter().copied().fold(0.0, f64::max) * 1e3
        );
        serve.stop();
    });
}

fn sleep_until(t: Instant) {
    if let Some(d) = t.checked_duration_since(Instant::now()) {
        std::thread::sleep(d);
    }
}

// ---------------------------------------------------------------------------------------
// sync: /metrics during the initial sync of a million keys.

/// Seconds `etcdctl get --prefix /registry --keys-only | wc -l` takes, and the count.
fn etcdctl_keys(endpoint: &str) -> (f64, u64) {
    let t = Instant::now();
    let out = Command::new("sh")
        .args([
            "-c",
            &format!(
                "ETCDCTL_API=3 etcdctl --endpoints {endpoint} --command-timeout=300s get --prefix /registry --keys-only | wc -l"
            ),
        ])
        .output()
        .expect("run etcdctl");
    let secs = t.elapsed().as_secs_f64();
    assert!(out.status.success(), "etcdctl failed");
    let n = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    (secs, n)
}

/// One sync of `regscope serve`, scraped or not.
struct SyncRun {
    /// Spawn to the first answer with `regscope_etcd_watch_up 1` (scraped runs).
    synced: Option<f64>,
    /// Spawn to the `regscope: listed …` line on its stderr (the list applied), read every
    /// 10 ms.
    listed: Option<f64>,
    /// Spawn to the port open.
    open: f64,
    /// Latencies of the scrapes from the port open until synced.
    lat: Vec<f64>,
    /// (seconds since spawn, latency) of the slowest scrape.
    worst: (f64, f64),
    /// Scrapes answered from an older reading.
    stale: usize,
    /// The process's CPU seconds and peak RSS (MiB), to its exit.
    cpu: f64,
    rss: f64,
}

/// Seconds from `t` until `path` holds the line regscope's stderr progress prints when its
/// list is done; `None` once `stop` is set or after `within`.
fn watch_listed(
    path: PathBuf,
    t: Instant,
    within: Duration,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<Option<f64>> {
    std::thread::spawn(move || {
        while t.elapsed() < within && !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let log = std::fs::read_to_string(&path).unwrap_or_default();
            if log.contains("regscope: listed ") {
                return Some(t.elapsed().as_secs_f64());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    })
}

/// Starts `regscope serve` on `endpoint`; with `scraped`, scrapes it (text format) every
/// 100 ms from the moment its port opens until `regscope_etcd_watch_up` is 1, else only
/// waits for its `listed` line.
fn serve_sync(endpoint: &str, scraped: bool, within: Duration) -> SyncRun {
    let t = Instant::now();
    let serve = Serve::start(endpoint, &[]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let listed = watch_listed(serve.log.path().to_path_buf(), t, within, stop.clone());
    assert!(
        serve.wait_open(Duration::from_secs(30)),
        "regscope serve did not listen: {}",
        serve.log()
    );
    let open = t.elapsed().as_secs_f64();
    let (mut lat, mut worst, mut stale, mut synced) = (Vec::new(), (0.0, 0.0), 0, None);
    let mut next = Instant::now();
    while scraped && synced.is_none() {
        assert!(
            t.elapsed() < within,
            "no sync within {within:?}: {}",
            serve.log()
        );
        let start = t.elapsed().as_secs_f64();
        let s = scrape(&serve.addr, None).expect("scrape");
        assert_eq!(s.status, 200, "{}", s.body);
        lat.push(s.secs);
        if s.secs > worst.1 {
            worst = (start, s.secs);
        }
        stale += usize::from(s.stale());
        if s.value("regscope_etcd_watch_up") == Some(1.0) {
            synced = Some(t.elapsed().as_secs_f64());
        } else {
            next += Duration::from_millis(100);
            sleep_until(next);
        }
    }
    if scraped {
        // The line comes with the batch that applied the list's end: by now, or soon.
        std::thread::sleep(Duration::from_millis(200));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let listed = listed.join().unwrap_or(None);
    assert!(
        scraped || listed.is_some(),
        "no listed line within {within:?}: {}",
        serve.log()
    );
    let (cpu, rss) = serve.stop();
    SyncRun {
        synced,
        listed,
        open,
        lat,
        worst,
        stale,
        cpu,
        rss,
    }
}

/// `v` seconds, or `-` when not known.
fn secs_or_dash(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.2} s", v))
}

fn sync_part(rt: &tokio::runtime::Runtime) {
    let keys = etcd::env_number("EXPORTER_SYNC_KEYS", 1_000_000);
    let rounds = etcd::env_number("EXPORTER_SYNC_ROUNDS", 3).max(1);
    let load_secs = etcd::env_number("EXPORTER_LOAD_SECS", 1200) as u64;
    let within = Duration::from_secs(900);
    let (dir, tmp) = etcd::data_dir(
        "EXPORTER_DIR",
        &format!("mixed-{keys}-{}", etcd::SET_VERSION),
    );
    let etcd_proc = etcd::start_etcd(&dir, tmp);
    let endpoint = etcd_proc.endpoint.clone();
    let loaded = rt.block_on(async {
        let mut c = etcd::connect(&endpoint).await;
        tokio::time::timeout(
            Duration::from_secs(load_secs),
            etcd::load(&mut c, "mixed", keys),
        )
        .await
    });
    let Ok(raw) = loaded else {
        println!("exporter sync: {keys} keys not loaded within {load_secs} s (EXPORTER_LOAD_SECS); skipped");
        return;
    };
    let mut ctl = Vec::new();
    let (mut synced, mut listed_scraped, mut listed_quiet) = (Vec::new(), Vec::new(), Vec::new());
    let (mut p99s, mut maxes, mut all) = (Vec::new(), Vec::new(), Vec::new());
    for round in 1..=rounds {
        let (e, lines) = etcdctl_keys(&endpoint);
        // Which regscope run goes first alternates from round to round.
        let (mut r, quiet) = if round % 2 == 1 {
            let r = serve_sync(&endpoint, true, within);
            (r, serve_sync(&endpoint, false, within))
        } else {
            let q = serve_sync(&endpoint, false, within);
            (serve_sync(&endpoint, true, within), q)
        };
        let n = r.lat.len();
        let over = r.lat.iter().filter(|l| **l > 1.0).count();
        all.extend_from_slice(&r.lat);
        let p50 = median(&mut r.lat);
        let p90 = quantile(&mut r.lat, 0.90);
        let p99 = quantile(&mut r.lat, 0.99);
        let max = r.lat.last().copied().unwrap_or(0.0);
        eprintln!(
            "  round {round}: etcdctl --keys-only | wc -l {e:.2} s ({lines} lines); regscope serve scraped: etcd_watch_up 1 at {}, listed at {} (port open at {:.2} s; {:.1} s of CPU, peak RSS {:.0} MiB); not scraped: listed at {} ({:.1} s of CPU); {n} scrapes: p50 {:.0} ms, p90 {:.0} ms, p99 {:.0} ms, max {:.0} ms (started at {:.2} s), {over} over 1 s, {} stale",
            secs_or_dash(r.synced),
            secs_or_dash(r.listed),
            r.open,
            r.cpu,
            r.rss,
            secs_or_dash(quiet.listed),
            quiet.cpu,
            p50 * 1e3,
            p90 * 1e3,
            p99 * 1e3,
            max * 1e3,
            r.worst.0,
            r.stale
        );
        ctl.push(Duration::from_secs_f64(e));
        synced.extend(r.synced);
        listed_scraped.extend(r.listed);
        listed_quiet.extend(quiet.listed);
        p99s.push(p99);
        maxes.push(max);
    }
    let e = etcd::median(ctl).as_secs_f64();
    let o = median(&mut synced);
    println!(
        "exporter sync: {keys} keys ({:.0} MiB raw): regscope serve synced in {o:.2} s (spawn to etcd_watch_up 1, scraped every 100 ms), etcdctl get --prefix /registry --keys-only | wc -l {e:.2} s, ratio {:.2} (medians of {rounds})",
        raw as f64 / 1048576.0,
        o / e
    );
    if !listed_scraped.is_empty() && !listed_quiet.is_empty() {
        let (a, b) = (median(&mut listed_scraped), median(&mut listed_quiet));
        println!(
            "exporter sync: spawn to the list applied (stderr `listed`): {a:.2} s scraped every 100 ms, {b:.2} s not scraped, ratio {:.2} (medians of {rounds})",
            a / b
        );
    }
    let n = all.len();
    println!(
        "exporter sync: scrape latency during the sync, {n} scrapes over {rounds} rounds: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms; per round p99 {:.0} ms (median), max {:.0} ms (worst round); {} over 1 s",
        median(&mut all) * 1e3,
        quantile(&mut all, 0.99) * 1e3,
        all.last().copied().unwrap_or(0.0) * 1e3,
        median(&mut p99s) * 1e3,
        maxes.iter().copied().fold(0.0, f64::max) * 1e3,
        all.iter().filter(|l| **l > 1.0).count()
    );
    drop(etcd_proc);
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let parts = std::env::var("EXPORTER_PARTS").unwrap_or_else(|_| "render,cpu,sync".into());
    let parts: Vec<&str> = parts.split(',').map(str::trim).collect();
    if parts.contains(&"render-once") {
        render_once();
        return;
    }
    if parts.contains(&"render") {
        render_part();
    }
    let live: Vec<&str> = parts
        .iter()
        .copied()
        .filter(|p| matches!(*p, "cpu" | "sync"))
        .collect();
    if live.is_empty() {
        return;
    }
    let missing: Vec<&str> = ["etcd", "etcdctl"]
        .into_iter()
        .filter(|t| regscope::demo::etcd_server::find_on_path(t).is_none())
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "exporter: {} not on PATH; the cpu and sync parts need them",
            missing.join(" and ")
        );
        std::process::exit(1);
    }
    if !PathBuf::from(BIN).exists() {
        eprintln!("exporter: no binary at {BIN}: cargo build --release first");
        std::process::exit(1);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    if live.contains(&"cpu") {
        cpu_part(&rt);
    }
    if live.contains(&"sync") {
        sync_part(&rt);
    }
}
