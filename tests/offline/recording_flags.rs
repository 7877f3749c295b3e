//! The marker and time flags of `replay`, `export` and `report` as the binary reads
//! them: a marker threshold must be a finite number of seconds above zero, and a time
//! counted back from the recording's end (`-30s`) is read after a space as well as
//! after `=`.

use std::process::Command;

use crate::common::recording::BIN;

fn demo() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/recordings/demo.rgs").to_string()
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .env("TZ", "UTC")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn marker_thresholds_must_be_finite_seconds_above_zero() {
    let file = demo();
    let commands: [&[&str]; 3] = [
        &["replay", "--check", &file],
        &["export", &file, "--only-keys"],
        &["report", &file, "-o", "-", "--format", "json"],
    ];
    for cmd in commands {
        for flag in ["--p99-threshold", "--lag-threshold"] {
            for bad in ["-1", "0", "NaN", "inf", "-inf", "soon"] {
                // After a space and after `=`: the same answer (clap takes `-inf`
                // after a space for a flag of its own, as it would any `-word`).
                let spaced = if bad == "-inf" {
                    None
                } else {
                    Some(vec![flag, bad])
                };
                for args in spaced.into_iter().chain([vec![]]) {
                    let joined = format!("{flag}={bad}");
                    let mut a: Vec<&str> = cmd.to_vec();
                    if args.is_empty() {
                        a.push(&joined);
                    } else {
                        a.extend(args);
                    }
                    let (code, _, err) = run(&a);
                    assert_eq!(code, 2, "{a:?}: {err}");
                    assert!(
                        err.contains(&format!("'{bad}' is not a threshold")),
                        "{a:?}: {err}"
                    );
                }
            }
        }
    }
    // A fraction of a second is a threshold.
    let (code, out, err) = run(&["replay", "--check", "--lag-threshold", "0.5", &file]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("informer lag over 0.5s"), "{out}");
}

#[test]
fn times_counted_back_from_the_end_read_after_a_space() {
    let file = demo();
    let (code, out, err) = run(&[
        "report", &file, "--from", "-30s", "-o", "-", "--format", "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(report.is_object());
    // The same span as the `=` form, and the flags after the value still read.
    let (code, eq_out, err) = run(&[
        "report",
        &file,
        "--from=-30s",
        "-o",
        "-",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, eq_out);
    let (code, out, err) = run(&[
        "export",
        &file,
        "--from",
        "-60s",
        "--to",
        "-30s",
        "--only-keys",
    ]);
    assert_eq!(code, 0, "{err}");
    let (_, eq_out, _) = run(&["export", &file, "--from=-60s", "--to=-30s", "--only-keys"]);
    assert!(out.lines().count() > 1, "{out}");
    assert_eq!(out, eq_out);
    // A moment before the recording is said, not misread as a flag.
    let (code, _, err) = run(&["export", &file, "--from", "-10m"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--from -10m: "), "{err}");
    assert!(err.contains("outside the recording"), "{err}");
}
