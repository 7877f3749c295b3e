//! Bookmarks beside a recording: added through the public API to a copy of
//! `recordings/demo.rgs` (never beside the repository's file), then listed by
//! `replay --check` as markers in time order, written by `export` as `marker` lines with
//! the scanned markers' kinds, skipped with a note (not damage) when their file is torn,
//! and never a byte written into the recording itself.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use crate::common::recording::BIN;
use regscope::record::bookmarks::{self, Bookmark};
use regscope::record::{MarkerKind, Player, Target};

/// A copy of the repository's demo recording in a temporary directory of its own.
fn demo_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("demo.rgs");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings/demo.rgs"),
        &copy,
    )
    .unwrap();
    (dir, copy)
}

/// A bookmark `secs` after the recording's start, at the revision a seek there shows.
fn bookmark_at(file: &Path, secs: u64, text: &str) -> Bookmark {
    let mut p = Player::open(file).unwrap();
    let at = p.span().0 + Duration::from_secs(secs);
    let revision = p.seek(Target::Time(at)).revision();
    Bookmark::new(at, revision, text)
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .env("TZ", "UTC")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// `replay --check`'s marker lines: (time as printed, label).
fn check_markers(out: &str) -> Vec<(String, String)> {
    out.lines()
        .filter_map(|l| l.strip_prefix("  marker     "))
        .map(|l| {
            let (at, label) = l.split_once("  ").unwrap();
            (at.to_string(), label.to_string())
        })
        .collect()
}

fn parse_time(s: &str) -> SystemTime {
    humantime::parse_rfc3339(s).unwrap()
}

#[test]
fn bookmarks_are_markers_of_check_and_export_and_the_recording_stays_as_it_was() {
    let (_dir, file) = demo_copy();
    let before = std::fs::read(&file).unwrap();
    // Added out of time order: the list is sorted by time.
    let late = bookmark_at(&file, 50, "etcd p99 back to normal");
    let early = bookmark_at(&file, 41, "outage starts here");
    bookmarks::append(&file, &late).unwrap();
    bookmarks::append(&file, &early).unwrap();
    assert_eq!(
        bookmarks::bookmarks_path(&file),
        file.with_file_name("demo.rgs.bookmarks")
    );

    // The API: one list, bookmarks at the first observation at or after their time.
    let mut p = Player::open(&file).unwrap();
    let markers = p.markers(1.0, 10.0);
    let marks: Vec<_> = markers
        .iter()
        .filter(|m| m.kind == MarkerKind::Bookmark)
        .collect();
    assert_eq!(marks.len(), 2, "{markers:?}");
    assert_eq!(marks[0].label, "bookmark: outage starts here");
    assert_eq!(marks[0].revision, early.revision);
    assert_eq!(marks[1].label, "bookmark: etcd p99 back to normal");
    assert!(
        markers.windows(2).all(|w| w[0].at <= w[1].at),
        "{markers:?}"
    );
    let pos = marks[0].position;
    assert_eq!(pos, p.position_at_or_after(early.at));
    // The observation just before that position is stamped before the bookmark, the one
    // that brings the cursor there at or after it.
    let s = p.seek(Target::Position(pos));
    assert!(s.now() >= early.at, "{:?} < {:?}", s.now(), early.at);
    assert!(p.seek(Target::Position(pos - 1)).now() < early.at);
    let kinds: std::collections::HashSet<_> = markers.iter().map(|m| m.kind).collect();
    for k in [
        MarkerKind::Gone,
        MarkerKind::Compaction,
        MarkerKind::ConnectionLost,
        MarkerKind::ScrapeFailed,
        MarkerKind::ConnectionRestored,
        MarkerKind::Threshold,
        MarkerKind::Bookmark,
    ] {
        assert!(kinds.contains(&k), "{k:?} in {markers:?}");
    }

    // replay --check: one marker line each, in time order, exit 0.
    let (code, out, err) = run(&["replay", "--check", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let listed = check_markers(&out);
    assert_eq!(listed.len(), markers.len(), "{out}");
    let labels: Vec<_> = listed.iter().map(|(_, l)| l.as_str()).collect();
    let api: Vec<_> = markers.iter().map(|m| m.label.as_str()).collect();
    assert_eq!(labels, api);
    let times: Vec<_> = listed.iter().map(|(t, _)| parse_time(t)).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{out}");
    assert!(out.contains("  damage     none"), "{out}");
    assert!(!out.contains("  note "), "{out}");

    // export: a marker line per marker, with its kind and revision, among the others.
    let (code, out, err) = run(&["export", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let exported: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["type"] == "marker").collect();
    assert_eq!(
        exported
            .iter()
            .map(|l| l["label"].as_str().unwrap())
            .collect::<Vec<_>>(),
        api,
        "export lists what replay --check lists"
    );
    for (l, m) in exported.iter().zip(&markers) {
        assert_eq!(l["kind"], m.kind.name(), "{l}");
        assert_eq!(l["revision"], m.revision, "{l}");
        assert_eq!(parse_time(l["at"].as_str().unwrap()), m.at, "{l}");
    }
    // Each bookmark line sits between the lines of earlier and later moments.
    for (i, l) in lines.iter().enumerate() {
        if l["kind"] != "bookmark" {
            continue;
        }
        let at = parse_time(l["at"].as_str().unwrap());
        let other = |l: &&serde_json::Value| l["type"] != "marker" && l["at"].is_string();
        let before = lines[..i].iter().rev().find(other).unwrap();
        let after = lines[i + 1..].iter().find(other).unwrap();
        assert!(
            parse_time(before["at"].as_str().unwrap()) <= at,
            "{before} then {l}"
        );
        assert!(
            parse_time(after["at"].as_str().unwrap()) >= at,
            "{l} then {after}"
        );
    }
    // --from/--to: only the markers in between.
    let from = humantime::format_rfc3339_millis(early.at - Duration::from_secs(1)).to_string();
    let to = humantime::format_rfc3339_millis(early.at + Duration::from_secs(1)).to_string();
    let (code, out, err) = run(&[
        "export",
        file.to_str().unwrap(),
        "--from",
        &from,
        "--to",
        &to,
    ]);
    assert_eq!(code, 0, "{err}");
    let bounded: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["type"] == "marker")
        .collect();
    let expected: Vec<_> = markers
        .iter()
        .filter(|m| {
            m.at >= early.at - Duration::from_secs(1) && m.at <= early.at + Duration::from_secs(1)
        })
        .map(|m| m.label.clone())
        .collect();
    assert!(expected.contains(&"bookmark: outage starts here".to_string()));
    assert_eq!(
        bounded
            .iter()
            .map(|l| l["label"].as_str().unwrap().to_string())
            .collect::<Vec<_>>(),
        expected
    );
    // --only-keys: no markers.
    let (_, out, _) = run(&["export", file.to_str().unwrap(), "--only-keys"]);
    assert!(!out.contains(r#""type":"marker""#));

    // Not a byte of the recording changed: an older regscope reads it as before.
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

#[test]
fn a_torn_bookmarks_file_is_a_note_and_the_earlier_bookmarks_still_list() {
    let (_dir, file) = demo_copy();
    let before = std::fs::read(&file).unwrap();
    for (secs, text) in [(10, "first"), (20, "second"), (30, "third")] {
        bookmarks::append(&file, &bookmark_at(&file, secs, text)).unwrap();
    }
    // A crash in the middle of the last line.
    let side = bookmarks::bookmarks_path(&file);
    let len = std::fs::metadata(&side).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&side)
        .unwrap()
        .set_len(len - 15)
        .unwrap();
    let (code, out, err) = run(&["replay", "--check", file.to_str().unwrap()]);
    assert_eq!(code, 0, "a torn bookmark is no damage\n{out}{err}");
    let labels: Vec<_> = check_markers(&out).into_iter().map(|(_, l)| l).collect();
    assert!(labels.contains(&"bookmark: first".to_string()), "{out}");
    assert!(labels.contains(&"bookmark: second".to_string()), "{out}");
    assert!(!labels.iter().any(|l| l.contains("third")), "{out}");
    let note = out
        .lines()
        .find(|l| l.starts_with("  note ") && l.contains("demo.rgs.bookmarks"))
        .unwrap_or_else(|| panic!("a note on the torn line\n{out}"));
    assert!(note.contains("line 3 torn"), "{note}");
    assert!(out.contains("  damage     none"), "{out}");
    // export says so on stderr and goes on.
    let (code, out, err) = run(&["export", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("line 3 torn"), "{err}");
    assert_eq!(out.matches(r#""kind":"bookmark""#).count(), 2);
    // Garbage in the middle: skipped too, the rest read.
    let mut text = std::fs::read_to_string(&side).unwrap();
    text.insert_str(0, "\u{0}\u{1}not json at all\n");
    std::fs::write(&side, text).unwrap();
    let (code, out, _) = run(&["replay", "--check", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("line 1 unreadable"), "{out}");
    assert!(out.contains("  damage     none"), "{out}");
    assert_eq!(out.matches("bookmark: ").count(), 2, "{out}");
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

/// A hand-edited bookmark whose revision is beyond the recording (or before it) is
/// shown at the revision of the state at its time, not as typed; one within its
/// segment's revisions is kept as the user saw it.
#[test]
fn a_bookmark_revision_outside_the_recording_is_replaced_by_the_one_at_its_time() {
    let (_dir, file) = demo_copy();
    let good = bookmark_at(&file, 41, "as seen");
    let mut p = Player::open(&file).unwrap();
    let last = p.last_revision().unwrap();
    let at = p.span().0 + Duration::from_secs(30);
    let state = p.seek(Target::Time(at)).revision();
    for typed in [99_999, last + 1, 1] {
        bookmarks::append(&file, &Bookmark::new(at, typed, &format!("typed {typed}"))).unwrap();
    }
    bookmarks::append(&file, &good).unwrap();
    let markers = p.complete_markers(Vec::new());
    let revision = |text: &str| {
        markers
            .iter()
            .find(|m| m.label == format!("bookmark: {text}"))
            .unwrap_or_else(|| panic!("{text} in {markers:?}"))
            .revision
    };
    assert_eq!(revision("as seen"), good.revision);
    for typed in [99_999, last + 1, 1] {
        let shown = revision(&format!("typed {typed}"));
        assert!(shown <= last, "{typed}: {shown} beyond {last}");
        // The state at the bookmark's time, to within the observation at its position.
        let pos = p.position_at_or_after(at);
        let after = p.seek(Target::Position(pos)).revision();
        assert!(
            (state..=after).contains(&shown),
            "{typed}: {shown} not in {state}..={after}"
        );
    }
}
