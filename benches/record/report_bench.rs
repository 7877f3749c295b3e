//! The `report` section of the record bench (see `main` in `record.rs`): on the 1-hour
//! recording, `regscope report` (one pass collecting the report, then rendered as HTML
//! and as JSON) against `replay --check` of the same file, alternated, medians; and the
//! report's peak resident memory for the first 15 minutes against the whole hour, each
//! in a child process.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use regscope::record::Player;
use regscope::report;

use super::{median, process_cpu};

/// Makes the bench binary a child that writes one report and prints its peak resident
/// memory (see [`memory`]): `SECONDS:FILE` reports the first SECONDS of the
/// recording FILE, `all:FILE` the whole of it.
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
/// [`CHILD`]) so that neither inherits the other's heap; two rounds, alternated.
pub fn memory(path: &Path) {
    let exe = std::env::current_exe().expect("the bench binary");
    let child = |span: &str| -> (f64, f64) {
        let out = std::process::Command::new(&exe)
            .env(CHILD, format!("{span}:{}", path.display()))
            .output()
            .expect("run the child");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "report child failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = stdout
            .lines()
            .find_map(|l| l.strip_prefix("report child: "))
            .expect("the child's line");
        let mut it = line
            .split_whitespace()
            .filter_map(|w| w.parse::<f64>().ok());
        (it.next().unwrap_or(0.0), it.next().unwrap_or(0.0))
    };
    let (mut quarter, mut hour) = (Vec::new(), Vec::new());
    for _ in 0..2 {
        quarter.push(child("900"));
        hour.push(child("all"));
    }
    let peak = |v: &[(f64, f64)]| v.iter().map(|x| x.0).fold(0.0, f64::max);
    let mib = |v: &[(f64, f64)]| {
        v.iter()
            .map(|x| format!("{:.1}", x.0 / 1024.0))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (q, h) = (peak(&quarter), peak(&hour));
    println!(
        "  peak resident memory of a report, each in its own process, the higher of 2 runs: first 15 min {:.1} MiB ({} MiB; {:.1} s), whole hour {:.1} MiB ({} MiB; {:.1} s) = {:.2}x for 4x the length (target: well below 4x, bounded by the keyspace)",
        q / 1024.0,
        mib(&quarter),
        quarter[0].1,
        h / 1024.0,
        mib(&hour),
        hour[0].1,
        h / q
    );
}

/// The child of [`memory`]: one report of `spec` (`SECONDS:FILE` or `all:FILE`),
/// then its peak resident memory in KiB and the seconds it took, on one line.
pub fn child(spec: &str) {
    let (span, file) = spec.split_once(':').expect("SECONDS:FILE or all:FILE");
    let path = Path::new(file);
    let to = span.parse::<u64>().ok().map(|s| {
        let (start, _) = Player::open(path).expect("open").span();
        start + Duration::from_secs(s)
    });
    let t = Instant::now();
    let (shape, _, _) = make_report(path, to);
    std::hint::black_box(shape);
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM");
    println!("report child: {kib} {:.2}", t.elapsed().as_secs_f64());
}
