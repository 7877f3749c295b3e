//! The `report` section of the record bench (see `main` in `record.rs`): on the 1-hour
//! recording, `regscope report` (one pass collecting the report, then rendered as HTML
//! and as JSON) against `replay --check` of the same file, alternated, medians; and the
//! report's peak resident memory for the first 15 minutes against the whole hour, each
//! in a child process.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use regscope::record::{Player, Target};
use regscope::report;

use super::{median, process_cpu};

/// Makes the bench binary a child that reads one span of a recording and prints its peak
/// resident memory (see [`memory`]): `report:SECONDS:FILE` reports the first SECONDS of
/// the recording FILE (`all` for the whole of it), `replay:SECONDS:FILE` only replays
/// them into a session, for what the session alone holds.
pub const CHILD: &str = "RECORD_BENCH_REPORT_CHILD";

/// What `regscope report` does with the recording at `path` up to `to` (its end when
/// `None`): one pass collecting the report, then rendered as HTML and as JSON. Returns
/// the report's marker and instant counts, the HTML and JSON bytes, and the seconds the
/// collection and the rendering took.
fn make_report(path: &Path, to: Option<SystemTime>) -> ((usize, usize, usize, usize), f64, f64) {
    let t = Instant::now();
    let player = Player::open(path).expect("open");
    let opts = report::collect::Options {
        from: None,
        to,
        p99_threshold: 1.0,
        lag_threshold: 10.0,
    };
    let r = report::collect::collect(player, &opts).expect("report");
    let collected = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let html = report::html::html(&r);
    let json = serde_json::to_string(&r).expect("json");
    let rendered = t.elapsed().as_secs_f64();
    (
        (r.markers.len(), r.times.len(), html.len(), json.len()),
        collected,
        rendered,
    )
}

/// The report of the hour against `replay --check` of it (what both read the file for:
/// check verifies every checkpoint and scans markers; the report scans the same markers
/// and samples the derived signals on its grid), alternated `RECORD_BENCH_ROUNDS` times
/// so that both meet the same machine; medians.
pub fn against_check(path: &Path) {
    let rounds: usize = std::env::var("RECORD_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    let verbose = std::env::var_os("RECORD_BENCH_VERBOSE").is_some();
    let (mut a, mut a_cpu, mut b, mut b_cpu) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut collect, mut render) = (Vec::new(), Vec::new());
    let mut shape = (0, 0, 0, 0);
    for round in 0..rounds {
        let (t, cpu) = (Instant::now(), process_cpu());
        let check = regscope::record::check(Player::open(path).expect("open"), 1.0, 10.0);
        a.push(t.elapsed().as_secs_f64());
        a_cpu.push(process_cpu() - cpu);
        std::hint::black_box(check.observations);
        let (t, cpu) = (Instant::now(), process_cpu());
        let (s, c, r) = make_report(path, None);
        b.push(t.elapsed().as_secs_f64());
        b_cpu.push(process_cpu() - cpu);
        shape = s;
        collect.push(c);
        render.push(r);
        if verbose {
            println!(
                "  round {round}: check {:.2} s, report {:.2} s (collect {c:.2} s, render {:.1} ms)",
                a[round],
                b[round],
                r * 1e3
            );
        }
    }
    let (ma, mb) = (median(&mut a), median(&mut b));
    println!(
        "report of the hour against replay --check of it, alternated {rounds} times: check median {ma:.2} s ({:.2} s CPU), report median {mb:.2} s ({:.2} s CPU; collect {:.2} s, HTML and JSON {:.1} ms) = {:.2}x the check (target <= 3x)",
        median(&mut a_cpu),
        median(&mut b_cpu),
        median(&mut collect),
        median(&mut render) * 1e3,
        mb / ma
    );
    println!(
        "  the report: {} markers, {} sampled instants, HTML {:.1} KiB, JSON {:.1} KiB",
        shape.0,
        shape.1,
        shape.2 as f64 / 1024.0,
        shape.3 as f64 / 1024.0
    );
}

/// The report's peak resident memory (`VmHWM`) for the first 15 minutes of the hour and
/// for the whole hour, each in a fresh child process (this binary again, with
/// [`CHILD`]) so that neither inherits the other's heap, beside the peak of replaying the
/// same span alone (the session: its replica grows with the keyspace, and the hour's
/// workload leaves more Event keys than it deletes); two rounds, alternated.
pub fn memory(path: &Path) {
    let exe = std::env::current_exe().expect("the bench binary");
    let child = |what: &str| -> [f64; 3] {
        let out = std::process::Command::new(&exe)
            .env(CHILD, format!("{what}:{}", path.display()))
            .output()
            .expect("run the child");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "child failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = stdout
            .lines()
            .find_map(|l| l.strip_prefix("child: "))
            .expect("the child's line");
        let mut v = [0.0; 3];
        for (x, w) in v.iter_mut().zip(line.split_whitespace()) {
            *x = w.parse().unwrap_or(0.0);
        }
        v
    };
    let spans = [("first 15 min", "900"), ("whole hour", "all")];
    let mut peaks = [[(); 2].map(|_| Vec::new()), [(); 2].map(|_| Vec::new())];
    let mut keys = [0.0; 2];
    for _ in 0..2 {
        for (i, (_, secs)) in spans.iter().enumerate() {
            for (j, kind) in ["report", "replay"].iter().enumerate() {
                let [kib, _, k] = child(&format!("{kind}:{secs}"));
                peaks[i][j].push(kib / 1024.0);
                if *kind == "replay" {
                    keys[i] = k;
                }
            }
        }
    }
    let show = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let high = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    for (i, (name, _)) in spans.iter().enumerate() {
        println!(
            "  peak resident memory, {name} ({} keys at its end), each in its own process: report {:.1} MiB (runs {}), replaying it alone {:.1} MiB (runs {})",
            keys[i],
            high(&peaks[i][0]),
            show(&peaks[i][0]),
            high(&peaks[i][1]),
            show(&peaks[i][1])
        );
    }
    let (q, h) = (high(&peaks[0][0]), high(&peaks[1][0]));
    println!(
        "  report's peak: the hour {:.2}x the first 15 min's, for 4x the length and {:.1}x the keys (target: well below 4x, with the keyspace); over replaying alone: +{:.1} MiB, +{:.1} MiB",
        h / q,
        keys[1] / keys[0].max(1.0),
        q - high(&peaks[0][1]),
        h - high(&peaks[1][1])
    );
}

/// The child of [`memory`]: reads the span `spec` names (see [`CHILD`]), then prints its
/// peak resident memory in KiB, the seconds it took and the replica's live keys at the
/// span's end, on one line.
pub fn child(spec: &str) {
    let mut parts = spec.splitn(3, ':');
    let (kind, span, file) = match (parts.next(), parts.next(), parts.next()) {
        (Some(k), Some(s), Some(f)) => (k, s, f),
        _ => panic!("{CHILD}: KIND:SECONDS:FILE, not {spec}"),
    };
    let path = Path::new(file);
    let to = span.parse::<u64>().ok().map(|s| {
        let (start, _) = Player::open(path).expect("open").span();
        start + Duration::from_secs(s)
    });
    let t = Instant::now();
    let keys = if kind == "report" {
        let (shape, _, _) = make_report(path, to);
        std::hint::black_box(shape);
        // `collect` keeps its session to itself: the replay child says the keys.
        0
    } else {
        let mut p = Player::open(path).expect("open");
        p.set_bodies(false);
        p.verify(false);
        let mut s = p.seek(Target::Position(0));
        p.advance(
            &mut s,
            to.map_or(Target::End, Target::Time),
            u64::MAX,
            |_, _, _| {},
        );
        s.replica.live_keys()
    };
    let secs = t.elapsed().as_secs_f64();
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM");
    println!("child: {kib} {secs:.2} {keys}");
}
