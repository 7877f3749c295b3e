//! `regscope analyze FILE [--json] [--top N] [--prefix P] [--quota-bytes SIZE]`: what fills
//! an etcd db file (told apart by content from a recording), as aligned tables for people
//! or one JSON document for scripts. The figures are
//! [`crate::source::etcd_db::analysis::analyze`]'s, computed in one walk over the file;
//! this module only words and lays them out. Given a recording, the same per-resource
//! figures for what the session's replica holds at its end ([`super::analyze_recording`]).
//!
//! `--json` prints one object:
//! * `kind`: `"etcd_db"`;
//! * `file`: `{path, file_bytes, bbolt_bytes, trailer_bytes, page_size, pages, free_pages,
//!   free_bytes, in_use_bytes, free_pages_from ("freelist" | "unreached_pages"),
//!   freelist_unreadable (why the meta's freelist could not be used, or null), txid}`;
//! * `quota`: `{bytes, default (true when etcd's default applies: --quota-bytes not given,
//!   or 0, which etcd reads as its default), used_percent, nospace_alarm (the file's alarm
//!   bucket holds NOSPACE), below_quota_with_nospace (it does, yet the file is smaller than
//!   the quota assumed: the member's was lower, or the file shrank since)}` — `bbolt_bytes`
//!   over the quota, which etcd compares its size with;
//! * `snapshot_status`: `{hash, revision, total_entries, live_keys, total_size, version}` —
//!   what `etcdctl snapshot status -w json` prints as `hash`, `revision`, `totalKey`
//!   (etcd 3.4 and 3.5: `total_entries`; etcd 3.6: `live_keys`) and `totalSize`;
//! * `head`, `compaction: {finished, scheduled, interrupted}`, `meta: {consistent_index,
//!   term, scheduled_compact_revision, finished_compact_revision, storage_version,
//!   cluster_version}`, `members: [{id, name, peerURLs, clientURLs, isLearner}]`,
//!   `alarms: [{member_id, alarm}]`, `lease_count`, `buckets: [{name, entries}]`;
//! * `prefix`; `all_keys`, `outside_prefix`: usage (`{keys, live_keys, live_bytes,
//!   revisions, tombstones, retained_bytes}`);
//! * `resources`: `[{resource, …usage, revisions_per_key}]`, most retained bytes first
//!   (`keys` counts every key with a revision in the file, live or deleted, and
//!   `revisions_per_key` is `revisions / keys`: the table's `KEYS` and `REV/KEY`);
//!   `namespaces`: `[{namespace, …usage}]`, the same order, at most `--top`;
//! * `largest`, `most_revisions`: `[{key, resource, namespace, live, bytes,
//!   newest_revision, revisions, tombstones, retained_bytes, lease}]`, at most `--top`;
//! * `leases_by_keys`: `[{id, ttl (null: not in the lease bucket), keys, bytes}]`.
//!
//! Bytes: `live_bytes` and `bytes` count values as `etcdctl get` returns them;
//! `retained_bytes` counts every version as the file stores it (revision key and
//! `mvccpb.KeyValue`), tombstones included. Exit 0, or 2 with one line on stderr when the
//! file is not an etcd db file or a recording, or cannot be read.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use serde_json::json;

use super::args::{normal_prefix, AnalyzeArgs};
use super::out;
use super::table::{
    key_usage_table, namespace_table, usage_cells, usage_header, usage_note, Table, DB_FILE_WORDS,
};
use crate::derive::units::{bytes, thousands, thousands_i};
use crate::source::etcd_db::analysis::{
    analyze, Analysis, AnalysisOptions, FreePagesFrom, DEFAULT_QUOTA_BYTES,
};

/// Runs `regscope analyze`: a db file here, a recording in [`super::analyze_recording`].
pub fn run(a: &AnalyzeArgs, file: &std::path::Path) -> Result<ExitCode> {
    if !super::db_file::is_db_file(file) {
        return super::analyze_recording::run(a, file);
    }
    let db = match super::db_file::open_unchecked(file) {
        Ok(db) => db,
        Err(code) => return Ok(code),
    };
    let opts = AnalysisOptions {
        prefix: normal_prefix(&a.conn.prefix),
        top: a.top,
    };
    // The SHA-256 of a saved snapshot is checked beside the walk (both read the file
    // once; on two cores the check adds no wall time).
    let (path, pages, len) = (
        db.path().to_path_buf(),
        db.bolt().size(),
        db.bolt().file_len(),
    );
    let analysed = std::thread::scope(|s| {
        let digest = s.spawn(move || super::db_file::warn_digest_of(&path, pages, len));
        let analysed = analyze(&db, &opts);
        let _ = digest.join();
        analysed
    });
    let analysis = match analysed {
        Ok(x) => x,
        Err(e) => {
            eprintln!("regscope: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    if analysis.all_keys.keys == analysis.outside_prefix.keys {
        super::db_file::warn_no_keys_under(&db, &opts.prefix);
    }
    let quota = Quota::of(a.quota_bytes);
    if a.json {
        out(format_args!("{}\n", analysis_json(&analysis, &quota)?));
    } else {
        out(format_args!("{}", analysis_text(&analysis, &quota)));
    }
    Ok(ExitCode::SUCCESS)
}

/// The backend quota the file is measured against.
pub struct Quota {
    /// Bytes; never 0.
    pub bytes: u64,
    /// etcd's default applies: `--quota-bytes` not given, or given as 0.
    pub default: bool,
    /// `--quota-bytes 0` was given (etcd reads a quota of 0 as its default).
    pub given_zero: bool,
}

impl Quota {
    /// The quota of `--quota-bytes`: etcd's default ([`DEFAULT_QUOTA_BYTES`]) when not
    /// given or 0, as etcd's `NewBackendQuota` reads `--quota-backend-bytes 0` (etcd 3.4
    /// `etcdserver/quota.go`, 3.5 `server/etcdserver/quota.go`).
    pub fn of(given: Option<usize>) -> Quota {
        match given {
            Some(b) if b > 0 => Quota {
                bytes: b as u64,
                default: false,
                given_zero: false,
            },
            _ => Quota {
                bytes: DEFAULT_QUOTA_BYTES,
                default: true,
                given_zero: given == Some(0),
            },
        }
    }

    /// `size` as a percentage of the quota.
    pub fn used_percent(&self, size: u64) -> f64 {
        if self.bytes == 0 {
            0.0
        } else {
            size as f64 * 100.0 / self.bytes as f64
        }
    }
}

/// The `--json` document (shape in the module doc), fields in declaration order.
pub fn analysis_json(a: &Analysis, quota: &Quota) -> Result<String> {
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        kind: &'static str,
        #[serde(flatten)]
        analysis: &'a Analysis,
        quota: serde_json::Value,
    }
    let nospace = nospace_alarm(a);
    Ok(serde_json::to_string_pretty(&Doc {
        kind: "etcd_db",
        analysis: a,
        quota: json!({
            "bytes": quota.bytes,
            "default": quota.default,
            "used_percent": quota.used_percent(a.file.bbolt_bytes),
            "nospace_alarm": nospace,
            "below_quota_with_nospace": nospace && below_quota(a, quota),
        }),
    })?)
}

/// The file's alarm bucket holds a NOSPACE alarm (of any member).
fn nospace_alarm(a: &Analysis) -> bool {
    a.alarms.iter().any(|al| al.alarm == "NOSPACE")
}

/// The most one write costs etcd's quota with its default `--max-request-bytes`: 1.5 MiB
/// (`DefaultMaxRequestBytes`, etcd 3.4–3.6 `embed/config.go`) plus the 256 bytes the quota
/// charges per key (`kvOverhead`, `quota.go`). etcd refuses a write when the backend's
/// size plus its cost reaches the quota, so at NOSPACE the file can be this far below it.
pub const LARGEST_WRITE_COST: u64 = 3 * 512 * 1024 + 256;

/// The file is below `quota` by more than one write could cost: at NOSPACE it would have
/// been this small only under a lower quota (or it shrank since).
fn below_quota(a: &Analysis, quota: &Quota) -> bool {
    a.file.bbolt_bytes.saturating_add(LARGEST_WRITE_COST) < quota.bytes
}

/// The quota line's words after the percentage: which quota it is, and what a NOSPACE
/// alarm in the file says about it. etcd raises NOSPACE when the backend's size plus a
/// write's cost reaches the quota (`backendQuota.Available`), so the file was at its
/// member's quota then: a file smaller than the quota assumed by more than a write's cost
/// ([`LARGEST_WRITE_COST`]) means that quota was lower, or the file has shrunk since
/// (defragmented with the alarm not yet disarmed).
fn quota_words(a: &Analysis, quota: &Quota) -> String {
    let mut o = String::new();
    if quota.given_zero {
        o.push_str(
            "; --quota-bytes 0 is etcd's default quota, as etcd reads --quota-backend-bytes 0",
        );
    } else if quota.default {
        o.push_str("; etcd's default quota: give --quota-bytes for the member's");
    }
    if !nospace_alarm(a) && a.file.bbolt_bytes >= quota.bytes {
        o.push_str(
            "; at or over it: etcd refuses the next write with NOSPACE and raises the alarm",
        );
    }
    if nospace_alarm(a) {
        o.push_str(
            "; a NOSPACE alarm is raised: the member's backend was at its quota when it was raised",
        );
        if below_quota(a, quota) {
            let _ = write!(
                o,
                ", yet the file is below the {} assumed: the member's quota was evidently lower (pass --quota-bytes), or the file has been defragmented since",
                bytes(quota.bytes)
            );
        }
    }
    o
}

/// `n` and the noun, plural unless `n` is 1: `1 page`, `3 pages`.
fn count(n: u64, noun: &str) -> String {
    format!("{} {noun}{}", thousands(n), if n == 1 { "" } else { "s" })
}

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// The tables for people.
pub fn analysis_text(a: &Analysis, quota: &Quota) -> String {
    let mut o = String::new();
    let f = &a.file;
    let _ = writeln!(o, "{} (an etcd db file)", f.path);
    let trailer = match f.trailer_bytes {
        0 => String::new(),
        32 => ", then 32 B: the SHA-256 `etcdctl snapshot save` appends".to_string(),
        n => format!(", then {} past the last page", bytes(n)),
    };
    let _ = writeln!(
        o,
        "  file          {} ({} of {} B{trailer})",
        bytes(f.file_bytes),
        count(f.pages, "page"),
        thousands(f.page_size as u64),
    );
    let how = match (f.free_pages_from, &f.freelist_unreadable) {
        (FreePagesFrom::Freelist, _) => "listed in its freelist".to_string(),
        (FreePagesFrom::UnreachedPages, None) => {
            "that no tree reaches, as it keeps no freelist".to_string()
        }
        (FreePagesFrom::UnreachedPages, Some(why)) => {
            format!("that no tree reaches, as its freelist is unusable ({why})")
        }
    };
    let _ = writeln!(
        o,
        "  in use        {} of {}; free {} in {} {how}: about what a defragmentation gives back",
        bytes(f.in_use_bytes),
        bytes(f.bbolt_bytes),
        bytes(f.free_bytes),
        count(f.free_pages, "page"),
    );
    let _ = writeln!(
        o,
        "  quota         {} of {} used ({:.1}%){}",
        bytes(f.bbolt_bytes),
        bytes(quota.bytes),
        quota.used_percent(f.bbolt_bytes),
        quota_words(a, quota),
    );
    let c = &a.compaction;
    let rev = |r: Option<i64>| r.map_or("none".to_string(), thousands_i);
    let _ = writeln!(
        o,
        "  revision      head {}; {}{}",
        thousands_i(a.head),
        c.finished
            .map_or("never compacted".to_string(), |r| format!(
                "compacted at {}",
                thousands_i(r)
            )),
        if c.interrupted {
            format!(
                "; a compaction to {} was scheduled and has not finished: interrupted (or running when the file was written), etcd finishes it when it next opens the file",
                rev(c.scheduled)
            )
        } else {
            String::new()
        },
    );
    let m = &a.meta;
    let _ = writeln!(
        o,
        "  raft          consistent index {}, term {}{}{}",
        m.consistent_index.map_or("not recorded".into(), thousands),
        m.term
            .map_or("not recorded (etcd before 3.5)".into(), thousands),
        m.cluster_version
            .as_deref()
            .map_or(String::new(), |v| format!(", cluster version {v}")),
        m.storage_version
            .as_deref()
            .map_or(String::new(), |v| format!(", storage version {v}")),
    );
    if a.members.is_empty() {
        let _ = writeln!(o, "  members       none recorded");
    }
    for (i, mem) in a.members.iter().enumerate() {
        let _ = writeln!(
            o,
            "  {:<13} {:x} {}{} {}",
            if i == 0 { "members" } else { "" },
            mem.id,
            if mem.name.is_empty() {
                "(unstarted)"
            } else {
                &mem.name
            },
            if mem.is_learner { " (learner)" } else { "" },
            mem.peer_urls.join(","),
        );
    }
    if a.alarms.is_empty() {
        let _ = writeln!(o, "  alarms        none");
    }
    for al in &a.alarms {
        let what = match al.alarm.as_str() {
            "NOSPACE" => "NOSPACE: the quota was hit; etcd refuses writes until it is defragmented or the quota raised, and the alarm disarmed",
            "CORRUPT" => "CORRUPT: a member's data differed from the others'",
            other => other,
        };
        let _ = writeln!(o, "  ALARM         {what} (member {})", al.member_id);
    }
    let _ = writeln!(o, "  leases        {}", count(a.lease_count, "lease"));

    let s = &a.snapshot_status;
    let _ = writeln!(o, "\netcdctl snapshot status");
    let _ = writeln!(
        o,
        "  hash {:x}  revision {}  totalKey {} (etcd 3.4/3.5: entries of all buckets; 3.6 prints {}, the live keys)  totalSize {} B",
        s.hash,
        s.revision,
        s.total_entries,
        s.live_keys,
        thousands(s.total_size),
    );
    if s.revision < a.head {
        // etcdctl prints the newest revision key in the file; etcd's store restores its
        // head as the larger of that and the finished compaction (`restore`, mvcc
        // kvstore.go), which is newer when a compaction removed the last writes' entries.
        let _ = writeln!(
            o,
            "  (revision {} is the file's newest entry; the head above is {}, the compaction's revision, as etcd restores it)",
            s.revision,
            thousands_i(a.head)
        );
    }

    let _ = writeln!(
        o,
        "\nResources under {} by retained bytes (every revision in the file)",
        a.prefix
    );
    let mut rows: Vec<Vec<String>> = a
        .resources
        .iter()
        .map(|r| {
            let mut row = vec![r.resource.clone()];
            row.extend(usage_cells(&r.usage));
            row.push(percent(r.usage.retained_bytes, a.all_keys.retained_bytes));
            row
        })
        .collect();
    if a.outside_prefix.keys > 0 {
        let mut outside = vec!["(outside prefix)".to_string()];
        outside.extend(usage_cells(&a.outside_prefix));
        outside.push(percent(
            a.outside_prefix.retained_bytes,
            a.all_keys.retained_bytes,
        ));
        rows.push(outside);
    }
    let mut total = vec!["total".to_string()];
    total.extend(usage_cells(&a.all_keys));
    total.push(percent(
        a.all_keys.retained_bytes,
        a.all_keys.retained_bytes,
    ));
    rows.push(total);
    let mut header = usage_header("RESOURCE", DB_FILE_WORDS);
    header.push("OF RETAINED");
    Table {
        header,
        rows,
        left: vec![0],
    }
    .render(&mut o, "  ");
    let _ = writeln!(o, "{}", usage_note(DB_FILE_WORDS));
    let _ = writeln!(
        o,
        "  ({} outside {}; the retained bytes are {} of the {} in use)",
        match a.outside_prefix.keys {
            0 => "no key".to_string(),
            n => count(n, "key"),
        },
        a.prefix,
        percent(a.all_keys.retained_bytes, f.in_use_bytes),
        bytes(f.in_use_bytes),
    );

    let header = ["BYTES", "REVISIONS", "RETAINED", "STATE", "KEY"];
    key_usage_table(&mut o, "Largest objects (newest value)", &a.largest, header);
    key_usage_table(&mut o, "Most retained revisions", &a.most_revisions, header);

    let _ = writeln!(o, "\nLeases by live keys attached");
    if a.leases_by_keys.is_empty() {
        let _ = writeln!(o, "  none");
    } else {
        Table {
            header: vec!["LEASE", "TTL", "KEYS", "BYTES"],
            rows: a
                .leases_by_keys
                .iter()
                .map(|l| {
                    vec![
                        format!("{:x}", l.id),
                        l.ttl
                            .map_or("not in the lease bucket".into(), |t| format!("{t}s")),
                        thousands(l.keys),
                        bytes(l.bytes),
                    ]
                })
                .collect(),
            left: vec![0],
        }
        .render(&mut o, "  ");
    }

    namespace_table(
        &mut o,
        "Namespaces by retained bytes",
        &a.namespaces,
        DB_FILE_WORDS,
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupted_compaction_and_a_nospace_alarm_are_said() {
        use crate::source::etcd_db::analysis::Alarm;
        let Some(td) = crate::testdata::dir() else {
            return;
        };
        let db = crate::source::etcd_db::EtcdDb::open(&td.join("etcd-registry/auger/boltdb/db"))
            .unwrap();
        let opts = AnalysisOptions {
            prefix: b"/registry".to_vec(),
            top: 3,
        };
        let mut a = analyze(&db, &opts).unwrap();
        let text = analysis_text(&a, &Quota::of(None));
        assert!(text.contains("alarms        none"), "{text}");
        assert!(!text.contains("interrupted"), "{text}");
        assert!(text.contains("etcd's default quota"), "{text}");
        a.compaction.scheduled = Some(241_900);
        a.compaction.interrupted = true;
        a.alarms.push(Alarm {
            member_id: "2f7fbfd36802ff7a".into(),
            alarm: "NOSPACE".into(),
        });
        let text = analysis_text(&a, &Quota::of(Some(8 << 30)));
        assert!(
            text.contains("a compaction to 241,900 was scheduled and has not finished"),
            "{text}"
        );
        assert!(
            text.contains("ALARM         NOSPACE: the quota was hit")
                && text.contains("(member 2f7fbfd36802ff7a)"),
            "{text}"
        );
        assert!(text.contains("of 8.0 GiB used"), "{text}");
        let v: serde_json::Value =
            serde_json::from_str(&analysis_json(&a, &Quota::of(None)).unwrap()).unwrap();
        assert_eq!(v["compaction"]["interrupted"], true);
        assert_eq!(v["alarms"][0]["alarm"], "NOSPACE");
        assert_eq!(v["quota"]["default"], true);
    }

    /// etcd raises NOSPACE at its quota: the quota line says the alarm is there, and for a
    /// file far smaller than the quota assumed, that the member's quota was lower.
    #[test]
    fn a_nospace_alarm_is_said_on_the_quota_line_and_a_small_file_points_at_a_lower_quota() {
        use crate::source::etcd_db::analysis::Alarm;
        let Some(td) = crate::testdata::dir() else {
            return;
        };
        let db = crate::source::etcd_db::EtcdDb::open(&td.join("etcd-registry/auger/boltdb/db"))
            .unwrap();
        let opts = AnalysisOptions {
            prefix: b"/registry".to_vec(),
            top: 3,
        };
        let mut a = analyze(&db, &opts).unwrap();
        let quota_line = |a: &Analysis, q: &Quota| {
            analysis_text(a, q)
                .lines()
                .find(|l| l.trim_start().starts_with("quota "))
                .unwrap_or_default()
                .to_string()
        };
        let json = |a: &Analysis, q: &Quota| -> serde_json::Value {
            serde_json::from_str(&analysis_json(a, q).unwrap()).unwrap()
        };
        // No alarm: nothing said of one.
        let line = quota_line(&a, &Quota::of(None));
        assert!(!line.contains("NOSPACE"), "{line}");
        assert_eq!(json(&a, &Quota::of(None))["quota"]["nospace_alarm"], false);
        a.alarms.push(Alarm {
            member_id: "8e9e05c52164694d".into(),
            alarm: "NOSPACE".into(),
        });
        // The default quota assumed, and a file of a few pages: the member's was lower.
        let line = quota_line(&a, &Quota::of(None));
        assert!(
            line.contains("a NOSPACE alarm is raised: the member's backend was at its quota when it was raised"),
            "{line}"
        );
        assert!(
            line.contains("yet the file is below the 2.0 GiB assumed: the member's quota was evidently lower (pass --quota-bytes)"),
            "{line}"
        );
        let v = json(&a, &Quota::of(None));
        assert_eq!(v["quota"]["nospace_alarm"], true);
        assert_eq!(v["quota"]["below_quota_with_nospace"], true);
        // The member's own quota given, the file at it (within one write's cost): the
        // alarm is said, no doubt about the quota.
        let at = Quota::of(Some(a.file.bbolt_bytes as usize + 16 * 1024));
        let line = quota_line(&a, &at);
        assert!(line.contains("a NOSPACE alarm is raised"), "{line}");
        assert!(!line.contains("evidently lower"), "{line}");
        assert_eq!(json(&a, &at)["quota"]["below_quota_with_nospace"], false);
        // --quota-bytes 0 is etcd's default quota, said as such.
        let zero = Quota::of(Some(0));
        let line = quota_line(&a, &zero);
        assert!(line.contains("of 2.0 GiB used"), "{line}");
        assert!(
            line.contains("--quota-bytes 0 is etcd's default quota"),
            "{line}"
        );
        assert!(line.contains("evidently lower"), "{line}");
        let v = json(&a, &zero);
        assert_eq!(v["quota"]["bytes"], 2u64 << 30);
        assert_eq!(v["quota"]["default"], true);
        assert!(v["quota"]["used_percent"].as_f64().unwrap() > 0.0);
    }

    #[test]
    fn counts_say_one_page_and_two_pages() {
        assert_eq!(count(1, "page"), "1 page");
        assert_eq!(count(2000, "page"), "2,000 pages");
    }

    #[test]
    fn the_default_quota_is_etcds_and_says_so() {
        let q = Quota::of(None);
        assert_eq!((q.bytes, q.default, q.given_zero), (2 << 30, true, false));
        assert_eq!(q.used_percent(1 << 30), 50.0);
        let q = Quota::of(Some(8 << 30));
        assert!(!q.default);
        // etcd reads a quota of 0 as its default, not as no room at all.
        let q = Quota::of(Some(0));
        assert_eq!((q.bytes, q.default, q.given_zero), (2 << 30, true, true));
        assert_eq!(q.used_percent(1 << 30), 50.0);
    }
}
