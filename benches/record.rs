//! Recording and replay figures (`cargo bench --bench record`), on real Kubernetes
//! encodings (the demo's protobuf Leases, Nodes, Events and ConfigMaps) and the real
//! kube-apiserver v1.34 `/metrics` capture:
//! - file bytes per event against the raw key + value bytes it holds (target ≤ 0.3×);
//! - file bytes per scrape against the raw body (target ≤ 0.05×), keys frames included;
//! - the recorder's CPU per event, and what that is at the demo's highest measured write
//!   rate (5,183 revisions/s; target ≤ 10 % of one core);
//! - a 1-hour, 1,000,000-event recording (with a scrape every 5 s and the apiserver's
//!   compaction every 5 min, as live; `RECORD_BENCH_NO_COMPACTION=1` without): seek to 20
//!   points, worst and median (target ≤ 200 ms), and replay "as fast as possible" into
//!   the session (target ≥ 1,000,000 events/s), scrapes applied from their digests;
//! - `report`, on that hour: `regscope report` (one pass sampling the derived signals,
//!   then rendered as HTML and as JSON) against `replay --check` of the same file,
//!   alternated, medians (target: the report ≤ 3× the check); and the report's peak
//!   resident memory for the first 15 minutes against the whole hour, each in a child
//!   process (target: well below 4× for 4× the length), beside the peak of replaying the
//!   same span alone: what grows is the session's replica with the keyspace (this
//!   workload creates Events faster than it deletes them, about 25,000 keys after 15
//!   minutes and 100,000 after the hour), the report's own share is the difference.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use rand::rngs::StdRng;
use rand::SeedableRng;
use regscope::demo::objects as o;
use regscope::model::{
    Bytes, CompactionSource, EventKind, KeyValue, Observation, ScrapeOutcome, ScrapeTarget,
    SessionInfo, Stamped, WatchEvent,
};
use regscope::record::{Player, RecordOptions, Recorder, Target};
use regscope::store::Session;

#[path = "record/report_bench.rs"]
mod report_bench;

/// The demo's highest write rate measured into the console (revisions/s).
const DEMO_MAX_RATE: f64 = 5_183.0;

fn t0() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

/// A realistic write mix: node Lease renewals (most writes of an idle cluster), Node
/// status heartbeats, new Events (fresh keys, later deleted by TTL) and ConfigMap updates.
struct Workload {
    rng: StdRng,
    leases: Vec<(Bytes, k8s_pb::api::coordination::v1::Lease, i64, i64)>,
    nodes: Vec<(Bytes, k8s_pb::api::core::v1::Node, i64, i64)>,
    events: std::collections::VecDeque<Bytes>,
    rev: i64,
    n: u64,
}

impl Workload {
    fn new(nodes: usize) -> Workload {
        let mut rng = StdRng::seed_from_u64(42);
        let leases = (0..nodes)
            .map(|i| {
                let name = format!("node-{i:04}");
                let l = o::lease(
                    &mut rng,
                    "kube-node-lease",
                    &name,
                    &name,
                    40,
                    "kubelet",
                    None,
                );
                (
                    Bytes::from(format!("/registry/leases/kube-node-lease/{name}")),
                    l,
                    0,
                    0,
                )
            })
            .collect();
        let nodes = (0..nodes)
            .map(|i| {
                let name = format!("node-{i:04}");
                let n = o::node(&mut rng, &name, i);
                (Bytes::from(format!("/registry/minions/{name}")), n, 0, 0)
            })
            .collect();
        Workload {
            rng,
            leases,
            nodes,
            events: Default::default(),
            rev: 1,
            n: 0,
        }
    }

    fn kv(key: &Bytes, value: Vec<u8>, rev: i64, create: &mut i64, version: &mut i64) -> KeyValue {
        if *create == 0 {
            *create = rev;
        }
        *version += 1;
        KeyValue {
            key: key.clone(),
            create_revision: *create,
            mod_revision: rev,
            version: *version,
            lease: 0,
            value: value.into(),
        }
    }

    /// The next watch event and its raw key + value bytes.
    fn next(&mut self) -> (WatchEvent, usize) {
        self.rev += 1;
        self.n += 1;
        let rev = self.rev;
        let i = self.n as usize;
        let ev = match i % 10 {
            0..=5 => {
                let k = i % self.leases.len();
                let (key, l, c, v) = &mut self.leases[k];
                o::renew_lease(l);
                let kv = Self::kv(key, o::encode_object(l), rev, c, v);
                WatchEvent {
                    kind: EventKind::Put,
                    kv,
                    prev_kv: None,
                }
            }
            6 => {
                let k = i % self.nodes.len();
                let (key, n, c, v) = &mut self.nodes[k];
                o::heartbeat_node(n);
                let kv = Self::kv(key, o::encode_object(n), rev, c, v);
                WatchEvent {
                    kind: EventKind::Put,
                    kv,
                    prev_kv: None,
                }
            }
            7 | 8 => {
                let e = o::event(
                    &mut self.rng,
                    "default",
                    ("v1", "Pod", &format!("web-{}", i % 97), "uid-1"),
                    "Pulled",
                    "Container image \"registry.k8s.io/pause:3.9\" already present on machine",
                    "kubelet",
                    Some("node-0001"),
                );
                let name = e
                    .metadata
                    .as_ref()
                    .and_then(|m| m.name.clone())
                    .unwrap_or_default();
                let key = Bytes::from(format!("/registry/events/default/{name}"));
                self.events.push_back(key.clone());
                let (mut c, mut v) = (0, 0);
                let kv = Self::kv(&key, o::encode_object(&e), rev, &mut c, &mut v);
                WatchEvent {
                    kind: EventKind::Put,
                    kv,
                    prev_kv: None,
                }
            }
            _ => match self.events.pop_front() {
                Some(key) => WatchEvent {
                    kind: EventKind::Delete,
                    kv: KeyValue {
                        key,
                        create_revision: 0,
                        mod_revision: rev,
                        version: 0,
                        lease: 0,
                        value: Bytes::new(),
                    },
                    prev_kv: None,
                },
                None => {
                    let c =
                        o::config_map(&mut self.rng, "default", "cfg", &[("k", "v")], "kubectl");
                    let (mut cr, mut v) = (0, 0);
                    let kv = Self::kv(
                        &Bytes::from_static(b"/registry/configmaps/default/cfg"),
                        o::encode_object(&c),
                        rev,
                        &mut cr,
                        &mut v,
                    );
                    WatchEvent {
                        kind: EventKind::Put,
                        kv,
                        prev_kv: None,
                    }
                }
            },
        };
        let raw = ev.kv.key.len() + ev.kv.value.len();
        (ev, raw)
    }
}

/// The v1.34 capture with ~5 % of its sample values changed per scrape `n`, as counters
/// and histograms move between two scrapes 5 s apart.
fn scrape_bodies(count: usize) -> Vec<Bytes> {
    let base = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/testdata/apiserver-metrics/kube-apiserver-v1.34.0.prom"),
    )
    .expect("the shared test data (../shared/testdata)");
    let lines: Vec<&str> = base.lines().collect();
    (0..count)
        .map(|n| {
            let mut out = String::with_capacity(base.len() + 4096);
            for (i, l) in lines.iter().enumerate() {
                if !l.starts_with('#') && (i * 7 + n) % 20 == 0 {
                    if let Some((name, v)) = l.rsplit_once(' ') {
                        let x: f64 = v.parse().unwrap_or(0.0);
                        out.push_str(name);
                        out.push(' ');
                        out.push_str(&format!("{}", x + (n as f64) * 3.0 + 1.0));
                        out.push('\n');
                        continue;
                    }
                }
                out.push_str(l);
                out.push('\n');
            }
            Bytes::from(out)
        })
        .collect()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// `cargo bench --bench record [-- SECTION…]` runs the named sections (`events`,
/// `scrapes`, `hour`, `report`; all when none is named; `replay` replays a kept
/// `hour.rgs` only). `RECORD_BENCH_DIR=DIR` writes the recordings there and keeps them
/// (e.g. to profile a replay of `DIR/hour.rgs`); with `RECORD_BENCH_REUSE=1` as well,
/// `hour` and `report` read the `DIR/hour.rgs` a previous run left instead of writing it
/// again. `RECORD_BENCH_NO_COMPACTION=1`: the hour without compactions
/// (`hour-uncompacted.rgs`). `RECORD_BENCH_ROUNDS=N`: rounds of `report`'s alternation
/// (default 3).
fn main() {
    if let Some(spec) = std::env::var_os(report_bench::CHILD) {
        return report_bench::child(&spec.to_string_lossy());
    }
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let run = |name: &str| wanted.is_empty() || wanted.iter().any(|w| w == name);
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = std::env::var_os("RECORD_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).expect("bench dir");
    if run("events") {
        events_and_overhead(&dir);
    }
    if run("scrapes") {
        scrapes(&dir);
    }
    if run("hour") {
        hour(&dir);
    }
    if run("report") {
        let path = dir.join(hour_file());
        let kept =
            path.exists() && (run("hour") || std::env::var_os("RECORD_BENCH_REUSE").is_some());
        if !kept {
            write_hour(&dir);
        }
        report_bench::against_check(&path);
        report_bench::memory(&path);
    }
    if wanted.iter().any(|w| w == "apply") {
        apply_only();
    }
    if wanted.iter().any(|w| w == "replay") {
        let path = dir.join(hour_file());
        let mut p = Player::open(&path).expect("a kept hour recording (see hour_replay)");
        p.set_bodies(false);
        hour_replay(&mut p);
    }
}

fn events_and_overhead(dir: &Path) {
    let n = 300_000;
    let mut w = Workload::new(200);
    let mut obs = Vec::with_capacity(n);
    let mut raw = 0usize;
    let mut at = t0();
    for i in 0..n {
        if i % 500 == 0 {
            at += Duration::from_millis(100);
        }
        let (ev, bytes) = w.next();
        raw += bytes;
        obs.push(Stamped {
            at,
            obs: Observation::Events {
                revision: ev.kv.mod_revision,
                events: vec![ev],
            },
        });
    }
    let path = dir.join("events.rgs");
    let _ = std::fs::remove_file(&path);
    let session = Session::new(SessionInfo::default());
    let mut rec = Recorder::create(RecordOptions::new(&path), &session, 1).expect("create");
    let start = Instant::now();
    for (i, st) in obs.iter().enumerate() {
        rec.record(st);
        if i % 5_000 == 0 {
            // The loop's once-a-second flush, at the demo's highest rate.
            rec.maintain(None);
        }
    }
    let bytes = rec.finish().expect("finish");
    let cpu = start.elapsed().as_secs_f64();
    let per_event = cpu / n as f64;
    let mut p = Player::open(&path).expect("open");
    let mut s = p.seek(Target::Position(0));
    let cpu0 = thread_cpu();
    let t = Instant::now();
    let applied = p.advance(&mut s, Target::End, u64::MAX, |_, _, _| {});
    let play = t.elapsed().as_secs_f64();
    let cpu = thread_cpu() - cpu0;
    println!(
        "replay of the events alone, as fast as possible: {applied} in {play:.2} s = {:.0} events/s into the session ({cpu:.2} s CPU on the session's thread)",
        applied as f64 / play
    );
    println!(
        "events: {n} watch events, raw key+value {:.1} MiB -> file {:.1} MiB = {:.3}x (target <= 0.3x)",
        raw as f64 / 1048576.0,
        bytes as f64 / 1048576.0,
        bytes as f64 / raw as f64
    );
    println!(
        "recorder CPU: {:.2} us/event ({:.0} events/s on one core); at the demo's highest rate ({DEMO_MAX_RATE} rev/s) {:.2} % of one core (target <= 10 %)",
        per_event * 1e6,
        1.0 / per_event,
        per_event * DEMO_MAX_RATE * 100.0
    );
}

fn scrapes(dir: &Path) {
    let bodies = scrape_bodies(120);
    let path = dir.join("scrapes.rgs");
    let _ = std::fs::remove_file(&path);
    let session = Session::new(SessionInfo::default());
    let mut session = session;
    let mut rec = Recorder::create(RecordOptions::new(&path), &session, 1).expect("create");
    let before = rec.bytes_written();
    let mut times = Vec::new();
    let raw: usize = bodies.iter().map(|b| b.len()).sum();
    for (i, b) in bodies.iter().enumerate() {
        let st = Stamped {
            at: t0() + Duration::from_secs(5 * i as u64),
            obs: Observation::Scrape {
                target: ScrapeTarget::Apiserver,
                outcome: ScrapeOutcome::Body {
                    source: "https://127.0.0.1:6443/metrics".into(),
                    body: b.clone(),
                },
            },
        };
        let applied = session.apply(&st);
        let t = Instant::now();
        rec.record_applied(&st, &applied);
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let bytes = rec.bytes_written() - before;
    rec.finish().expect("finish");
    println!(
        "scrapes: {} x {:.2} MB v1.34 bodies -> {:.1} KiB each with its digest = {:.4}x of the body (target <= 0.05x); {:.1} ms median to compress and write",
        bodies.len(),
        raw as f64 / bodies.len() as f64 / 1e6,
        bytes as f64 / bodies.len() as f64 / 1024.0,
        bytes as f64 / raw as f64,
        median(&mut times)
    );
}

fn hour(dir: &Path) {
    let path = dir.join(hour_file());
    if std::env::var_os("RECORD_BENCH_REUSE").is_some() && path.exists() {
        println!("1-hour recording: reusing {}", path.display());
    } else {
        write_hour(dir);
    }
    hour_read(&path);
}

/// Writes the 1-hour recording (see `hour`) into `dir`.
fn write_hour(dir: &Path) {
    let events = 1_000_000u64;
    let secs = 3_600u64;
    let bodies = scrape_bodies(12);
    let mut w = Workload::new(200);
    // kube-apiserver compacts etcd every `--etcd-compaction-interval` (default 5m): each
    // time it writes `compact_rev_key` and compacts at the revision it saw at the previous
    // interval (k8s.io/apiserver storage/etcd3/compact.go), so the replica holds 5 to 10
    // minutes of history. `RECORD_BENCH_NO_COMPACTION=1` records without it: history then
    // piles up to the replica's budget (the worst case for a seek's checkpoint).
    let compaction = compacted_hour();
    let mut compact_next = None::<i64>;
    let path = dir.join(hour_file());
    let _ = std::fs::remove_file(&path);
    let info = SessionInfo {
        started_at: t0(),
        ..Default::default()
    };
    let mut session = Session::new(info.clone());
    let mut rec = Recorder::create(RecordOptions::new(&path), &session, 1).expect("create");
    let build = Instant::now();
    let per_sec = events / secs;
    let mut n_obs = 0u64;
    for s in 0..secs {
        let at = t0() + Duration::from_secs(s);
        let mut batch = Vec::new();
        for _ in 0..per_sec + u64::from(s < events % secs) {
            let (ev, _) = w.next();
            batch.push(Stamped {
                at,
                obs: Observation::Events {
                    revision: ev.kv.mod_revision,
                    events: vec![ev],
                },
            });
        }
        if compaction && s > 0 && s % 300 == 0 {
            // The compactor's own write (`compact_rev_key`, outside the prefix) takes a
            // revision; the watch on that key reports the revision it compacts at.
            w.rev += 1;
            if let Some(revision) = compact_next {
                batch.push(Stamped {
                    at,
                    obs: Observation::Compacted {
                        revision,
                        source: CompactionSource::CompactRevKey,
                    },
                });
            }
            compact_next = Some(w.rev);
        }
        if s % 5 == 0 {
            batch.push(Stamped {
                at,
                obs: Observation::Scrape {
                    target: ScrapeTarget::Apiserver,
                    outcome: ScrapeOutcome::Body {
                        source: "https://127.0.0.1:6443/metrics".into(),
                        body: bodies[(s / 5) as usize % bodies.len()].clone(),
                    },
                },
            });
        }
        batch.push(Stamped {
            at,
            obs: Observation::Tick,
        });
        for st in &batch {
            let applied = session.apply(st);
            rec.record_applied(st, &applied);
            n_obs += 1;
        }
        // Live, a second of this workload (about 280 events) leaves the packing worker
        // idle CPU to pack it before the next; written here at full speed, it is given
        // that time, so that checkpoints hold values as a live session's would.
        let t = Instant::now();
        while session.replica.memory().packing_outstanding > 0
            && t.elapsed() < Duration::from_millis(100)
        {
            session.replica.maintain();
            std::thread::sleep(Duration::from_micros(200));
        }
        rec.maintain(Some(&mut session));
    }
    let bytes = rec.finish().expect("finish");
    println!(
        "1-hour recording{}: {events} events, {} scrapes, {n_obs} observations, {:.1} MiB, written in {:.1} s",
        if compaction {
            ", compacted every 5 min"
        } else {
            ", never compacted"
        },
        secs / 5,
        bytes as f64 / 1048576.0,
        build.elapsed().as_secs_f64()
    );
}

/// Whether the 1-hour recording has the apiserver's compactions (see `hour`).
fn compacted_hour() -> bool {
    std::env::var_os("RECORD_BENCH_NO_COMPACTION").is_none()
}

/// The 1-hour recording's file name in the bench directory.
fn hour_file() -> &'static str {
    if compacted_hour() {
        "hour.rgs"
    } else {
        "hour-uncompacted.rgs"
    }
}

/// The read side of `hour`: restore, seek and replay figures of the 1-hour recording.
fn hour_read(path: &Path) {
    let secs = 3_600u64;
    let mut p = Player::open(path).expect("open");
    // As the console replays: the session only, no scrape body decompressed when its
    // digest is recorded.
    p.set_bodies(false);
    let (c, _) = p.frame_counts();
    println!(
        "  frames: {} segments, {} scrapes, {} checkpoints",
        c.0, c.1, c.2
    );
    // What a seek costs is restoring its checkpoint plus applying what follows it.
    // The first restore in a process also grows its heap (fresh pages from the kernel);
    // later ones reuse what the previous session freed.
    let mut restores = Vec::new();
    let mut held = (0, 0);
    for _ in 0..4 {
        let t = Instant::now();
        let s = p.seek(Target::Position(p.last_checkpoint_position()));
        restores.push(t.elapsed().as_secs_f64() * 1e3);
        held = (s.replica.live_keys(), s.replica.history_usage().0);
    }
    let first = restores[0];
    println!(
        "  restore the last checkpoint alone: {first:.0} ms the first time, then median {:.0} ms ({} keys, {} history versions held)",
        median(&mut restores[1..]),
        held.0,
        held.1
    );
    // Seeks as the console makes them: one session moved from point to point, in place
    // when the target is ahead, the replaced session freed on another thread (and done
    // before the next seek, as a person types slower than that).
    let mut session = p.seek(Target::Position(0));
    let (mut seeks, mut restored) = (Vec::new(), Vec::new());
    for i in 0..20u64 {
        let target = Target::Time(t0() + Duration::from_secs((i * 7919) % secs));
        let t = Instant::now();
        let old = p.seek_in(&mut session, target);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        seeks.push(ms);
        std::hint::black_box(session.revision());
        if let Some(old) = old {
            restored.push(ms);
            std::thread::spawn(move || drop(old)).join().expect("drop");
        }
    }
    if std::env::var_os("RECORD_BENCH_VERBOSE").is_some() {
        println!("  each seek, ms: {seeks:.0?}");
    }
    let worst = seeks.iter().copied().fold(0.0, f64::max);
    let worst_restored = restored.iter().copied().fold(0.0, f64::max);
    println!(
        "  seek to 20 times: median {:.0} ms, worst {:.0} ms (target <= 200 ms); {} restored a checkpoint (worst {:.0} ms), {} moved forward in place",
        median(&mut seeks),
        worst,
        restored.len(),
        worst_restored,
        20 - restored.len()
    );
    drop(session);
    hour_replay(&mut p);
}

/// Replay of the 1-hour recording as fast as possible, start to end (also alone, as the
/// `replay` section, to profile it: `RECORD_BENCH_DIR=DIR RECORD_BENCH_REUSE=1 cargo bench
/// --bench record -- replay` after a run of `hour` left `DIR/hour.rgs`).
fn hour_replay(p: &mut Player) {
    let t = Instant::now();
    let s = p.seek(Target::End);
    let all = t.elapsed().as_secs_f64();
    std::hint::black_box(s.revision());
    drop(s);
    // The same from the start, timing only the apply of the observations, three times:
    // on a shared machine the CPU time of the same work varies by a third from run to
    // run, so the best run is the least disturbed and the median the typical one.
    let mut runs = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let mut s = p.seek(Target::Position(0));
        let restore_ms = t.elapsed().as_secs_f64() * 1e3;
        let (cpu0, all0) = (thread_cpu(), process_cpu());
        let t = Instant::now();
        let mut applied_events = 0u64;
        p.advance(&mut s, Target::End, u64::MAX, |_, st, _| {
            if matches!(st.obs, Observation::Events { .. }) {
                applied_events += 1;
            }
        });
        let play = t.elapsed().as_secs_f64();
        let (cpu, all_cpu) = (thread_cpu() - cpu0, process_cpu() - all0);
        // Two cores: the session's thread applies, the read-ahead decodes and frees, the
        // packing worker takes what is left. When the session's CPU is well below the
        // wall time, it waited for the read-ahead.
        println!(
            "  replay as fast as possible, start to end (first checkpoint restored in {restore_ms:.1} ms): {play:.2} s = {:.0} events/s, scrapes from their digests; {cpu:.2} s CPU on the session's thread, {all_cpu:.2} s in the process",
            applied_events as f64 / play,
        );
        runs.push(applied_events as f64 / play);
        if runs.len() == 1 {
            // Packing waited for the end of the stretch (`Replica::defer_packing`): what
            // catching up costs after it, as an idle console maintains its session.
            let (t, cpu0) = (Instant::now(), process_cpu());
            let before = s.replica.memory();
            while s.replica.memory().packing_outstanding > 0
                && t.elapsed() < Duration::from_secs(60)
            {
                s.replica.maintain();
                std::thread::sleep(Duration::from_millis(5));
            }
            let after = s.replica.memory();
            println!(
                "    then packing caught up in {:.2} s ({:.2} s CPU in the process): {} keys and versions waited; values packed {} -> {} ({:.0} MiB raw in {:.0} MiB)",
                t.elapsed().as_secs_f64(),
                process_cpu() - cpu0,
                before.packing_outstanding,
                before.packed_values,
                after.packed_values,
                after.packed_raw_bytes as f64 / 1048576.0,
                after.packed_bytes as f64 / 1048576.0
            );
        }
        std::thread::spawn(move || drop(s)).join().expect("drop");
    }
    let best = runs.iter().copied().fold(0.0, f64::max);
    println!(
        "  replay: best {best:.0} events/s, median {:.0} (target >= 1,000,000/s); seek to the end {:.0} ms",
        median(&mut runs),
        all * 1e3
    );
}

/// The session's apply alone, without the player: `RECORD_BENCH_APPLY` (default 600,000)
/// observations of the hour's workload, generated first, applied to a fresh session five
/// times; the best and the median (on a shared machine the best is the least disturbed).
fn apply_only() {
    let n: usize = std::env::var("RECORD_BENCH_APPLY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600_000);
    let mut w = Workload::new(200);
    let obs: Vec<Stamped> = (0..n)
        .map(|i| {
            let (ev, _) = w.next();
            Stamped {
                at: t0() + Duration::from_millis(i as u64 * 3),
                obs: Observation::Events {
                    revision: ev.kv.mod_revision,
                    events: vec![ev],
                },
            }
        })
        .collect();
    let mut rates = Vec::new();
    for _ in 0..5 {
        let mut s = Session::new(SessionInfo {
            started_at: t0(),
            ..Default::default()
        });
        if std::env::var_os("RECORD_BENCH_NO_PACK").is_some() {
            s.replica.disable_packing();
        }
        let t = Instant::now();
        for st in &obs {
            s.apply(st);
        }
        rates.push(n as f64 / t.elapsed().as_secs_f64());
        std::thread::spawn(move || drop(s)).join().expect("drop");
    }
    let best = rates.iter().copied().fold(0.0, f64::max);
    println!(
        "apply alone: {n} events of the hour's workload into a fresh session: best {best:.0} events/s, median {:.0}",
        median(&mut rates)
    );
}

/// CPU time of the calling thread so far, in seconds (`CLOCK_THREAD_CPUTIME_ID`): with it
/// beside the wall time, a replay shows whether the session's thread was the bound (CPU
/// about equal to wall) or waited for the segments' decoding.
fn thread_cpu() -> f64 {
    cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU seconds used by the whole process (every thread) so far.
fn process_cpu() -> f64 {
    cpu_clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn cpu_clock(clock: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes only the timespec it is given.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}
