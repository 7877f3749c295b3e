//! `regscope replay --check FILE`: every frame of a recording read and its checksum
//! verified, without a terminal; prints the span, revisions, counts, notes, markers and
//! damage. The markers are [`crate::record::Player::complete_markers`]'s list, the bookmarks
//! of the file beside the recording included; a bookmark line that cannot be read is a
//! `note`, never damage, and does not change the exit code.

use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::Result;

use super::out;
use super::recording::{files_exist, open};
use crate::config::Zone;

/// `regscope replay --check FILE`: reads every frame, verifies checksums, prints the span,
/// counts and damage. Exit 0 when whole, 1 when damaged (what was read is printed, then
/// the damage), 2 when it cannot be read as either kind (missing, a directory, neither a
/// recording nor etcd's db file). An etcd db file: see [`db_file`].
pub fn run(path: &Path, p99_threshold: f64, lag_threshold: f64, zone: Zone) -> Result<ExitCode> {
    if super::db_file::is_db_file(path) {
        return db_file(path);
    }
    if let Err(code) = files_exist(path) {
        return Ok(code);
    }
    let player = match open(path) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let report = crate::record::check(player, p99_threshold, lag_threshold);
    // In the zone times are shown in, with its offset: pasted into any input, the same
    // moment (see `crate::config::zone`).
    let ts = |t: Option<SystemTime>| t.map_or("-".to_string(), |t| zone.rfc3339_millis(t));
    out(format_args!(
        "{}\n  span       {} .. {}\n  revisions  {} .. {}\n  observations {}\n  secrets    {}\n",
        report.files.join(", "),
        ts(report.start),
        ts(report.end),
        report.first_revision.map_or("-".into(), |r| r.to_string()),
        report.last_revision.map_or("-".into(), |r| r.to_string()),
        counts(&report),
        if report.secrets_redacted {
            "redacted"
        } else {
            "INCLUDED (recorded with --show-secrets)"
        },
    ));
    for n in &report.notes {
        out(format_args!("  note       {n}\n"));
    }
    for m in &report.markers {
        out(format_args!(
            "  marker     {}  {}\n",
            ts(Some(m.at)),
            m.label
        ));
    }
    if report.damage.is_empty() {
        out(format_args!("  damage     none\n"));
        Ok(ExitCode::SUCCESS)
    } else {
        for d in &report.damage {
            out(format_args!("  damage     {d}\n"));
        }
        Ok(ExitCode::from(1))
    }
}

/// `replay --check`'s counts: observations (scrapes) in segments, checkpoints, bytes.
fn counts(r: &crate::record::ReplayReport) -> String {
    let s = |n: u64| if n == 1 { "" } else { "s" };
    format!(
        "{} ({} scrape{}; {} records with the scrape digests, as the timeline counts) in {} segment{}, {} checkpoint{}, {} bytes",
        r.observations,
        r.scrapes,
        s(r.scrapes),
        r.records,
        r.segments,
        s(r.segments),
        r.checkpoints,
        s(r.checkpoints),
        r.bytes
    )
}

/// `replay --check DB` for etcd's own db file: every page of every bucket read (and the
/// pages nothing reaches counted free), as `etcdctl snapshot status` walks it; prints what
/// it holds and the hash etcdctl prints. Exit 0 when every page reads; 1 when the file is
/// damaged: a page that does not read (both meta pages, the root, a bucket's, cut short)
/// or an entry of etcd's schema that does not parse, said as a `damage` line after what
/// could be read; 2 when it cannot be read at all (an I/O error) or is a bbolt file but not
/// etcd's backend (one line on stderr).
fn db_file(path: &Path) -> Result<ExitCode> {
    let db = match super::db_file::open_db(path) {
        Ok(d) => d,
        Err(e)
            if e.is_unreadable()
                || matches!(e, crate::source::etcd_db::DbError::NotEtcd { .. }) =>
        {
            eprintln!("regscope: {e}");
            return Ok(ExitCode::from(2));
        }
        Err(e) => {
            // It starts as a bbolt file (that is how it was told from a recording), and
            // what it holds does not read: damage, said as for a page further in.
            out(format_args!(
                "{} (etcd's db file)\n  damage     {}\n",
                path.display(),
                e.detail()
            ));
            return Ok(ExitCode::from(1));
        }
    };
    let head = db.head();
    // bbolt's way of finding free pages when the file keeps no freelist (etcd on Linux):
    // the pages no tree reaches, counted on the same walk.
    // (The root bucket's pages were read when the file was opened: read again here.)
    db.bolt().track_reached();
    let walked = db
        .bolt()
        .buckets()
        .map_err(|e| db.bolt_err(e))
        .and_then(|_| crate::source::etcd_db::analyze_status(&db, |_, _| {}));
    out(format_args!(
        "{} (etcd's db file)\n  revisions  {}\n",
        path.display(),
        revisions_held(
            db.compacted(),
            &head
                .as_ref()
                .map_or_else(|_| "?".to_string(), ToString::to_string)
        )
    ));
    // The head is the `key` bucket's last entry: when it does not read, that is the damage
    // to say (the walk meets the same page, or says more).
    let walked = match (head, walked) {
        (Err(e), Ok(_)) => Err(e),
        (_, w) => w,
    };
    match walked {
        Ok(st) => {
            let page = db.bolt().meta().page_size as u64;
            let (free, note) = match db.bolt().freelist() {
                Ok(Some(ids)) => (ids.len() as u64, None),
                Ok(None) => (db.bolt().unreached_pages().unwrap_or(0), None),
                Err(e) => (
                    db.bolt().unreached_pages().unwrap_or(0),
                    Some(format!(
                        "the freelist the meta names is unreadable ({e}): free pages are those no tree reaches"
                    )),
                ),
            };
            out(format_args!(
                "  entries    {} in all buckets, {} live keys\n  hash       {} (CRC-32C, as etcdctl snapshot status)\n  size       {} bytes of pages ({} in the file), free pages {} ({} bytes a defragmentation would give back)\n",
                st.total_entries,
                st.live_keys,
                st.hash,
                st.total_size,
                db.bolt().file_len(),
                free,
                free * page,
            ));
            if let Some(n) = note {
                out(format_args!("  note       {n}\n"));
            }
            match super::db_file::snapshot_digest(&db) {
                Ok(line) => out(format_args!("  digest     {line}\n")),
                Err(e) => {
                    out(format_args!("  damage     {e}\n"));
                    return Ok(ExitCode::from(1));
                }
            }
            out(format_args!("  damage     none\n"));
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            // The first line named the file.
            out(format_args!("  damage     {}\n", e.detail()));
            Ok(ExitCode::from(1))
        }
    }
}

/// The revisions a db file holds, `FIRST .. HEAD (why)`: from its finished compaction, or
/// from etcd's first revision, 1, when it was never compacted (`compacted` 0), as `diff`
/// and the console say it.
fn revisions_held(compacted: crate::model::Revision, head: &str) -> String {
    if compacted > 0 {
        format!("{compacted} .. {head} (finished compaction .. head)")
    } else {
        format!("1 .. {head} (never compacted: etcd's first revision .. head)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_db_file_never_compacted_holds_revisions_from_1() {
        assert_eq!(
            revisions_held(0, "19"),
            "1 .. 19 (never compacted: etcd's first revision .. head)"
        );
        assert_eq!(
            revisions_held(7, "19"),
            "7 .. 19 (finished compaction .. head)"
        );
    }

    #[test]
    fn check_counts_say_one_in_the_singular() {
        let mut r = crate::record::ReplayReport {
            observations: 120,
            records: 121,
            scrapes: 1,
            segments: 1,
            checkpoints: 1,
            bytes: 4096,
            ..Default::default()
        };
        assert_eq!(
            counts(&r),
            "120 (1 scrape; 121 records with the scrape digests, as the timeline counts) in 1 segment, 1 checkpoint, 4096 bytes"
        );
        (r.scrapes, r.segments, r.checkpoints) = (0, 3, 2);
        assert_eq!(
            counts(&r),
            "120 (0 scrapes; 121 records with the scrape digests, as the timeline counts) in 3 segments, 2 checkpoints, 4096 bytes"
        );
    }
}
