//! Known etcd watch bugs by server version: one table, [`KNOWN_WATCH_BUGS`], each row with
//! the versions it affects and what regscope does about it, and [`known_watch_bugs`], the
//! rows that apply to a version as etcd's `Maintenance.Status` reports it. `regscope
//! doctor` names them for each member it reaches.
//!
//! The versions are those of etcd's own changelogs (`CHANGELOG/CHANGELOG-3.4.md` and
//! `CHANGELOG-3.5.md` in etcd-io/etcd); a release not listed in a row is taken to carry the
//! fix (3.6.0 and later carry both fixes below).

use serde::Serialize;

/// One known etcd watch bug.
#[derive(Debug, PartialEq, Eq, Serialize)]
pub struct KnownBug {
    /// The upstream issue, `etcd-io/etcd#N`.
    pub id: &'static str,
    /// The releases affected, in words (e.g. `etcd 3.4 before 3.4.25, 3.5.0–3.5.7`).
    pub affected: &'static str,
    /// The pull requests that fixed it and the first release of each line that has them.
    pub fixed_in: &'static str,
    /// What goes wrong, in one line.
    pub what: &'static str,
    /// What regscope does about it, in one line.
    pub regscope_does: &'static str,
    /// The affected releases as `(major, minor, first fixed patch)`: every patch of that
    /// minor line below the fixed one is affected.
    lines: &'static [(u32, u32, u32)],
}

/// Every known watch bug, oldest first.
///
/// etcd-io/etcd#19179: etcd rebuilds its key index at start without a key whose only
/// revision left is a tombstone, and a compaction it resumes then (one scheduled but not
/// finished, etcd 3.5 `server/mvcc/kvstore.go` `restore`) deletes every revision the index
/// does not keep (`kvstore_compaction.go`), the tombstone with them; the fix
/// (`restoreTombstone` in `key_index.go`) keeps it in the index.
pub static KNOWN_WATCH_BUGS: [KnownBug; 2] = [
    KnownBug {
        id: "etcd-io/etcd#15220",
        affected: "etcd 3.4 before 3.4.25, 3.5.0–3.5.7",
        fixed_in: "etcd-io/etcd#15697 (3.4.25), #15695 (3.5.8), #15237 (3.6)",
        what: "a progress notification can be sent before events still queued for the watch, so it does not mean every event up to its revision was sent",
        regscope_does: "takes a progress notification only as \"etcd's head is at least here\" on these versions (never resumes a watch from it), and counts each one that arrived before events at or below its revision (watch health), noting the 1st, 10th, 100th…",
        lines: &[(3, 4, 25), (3, 5, 8)],
    },
    KnownBug {
        id: "etcd-io/etcd#19179",
        affected: "etcd 3.4 before 3.4.36, 3.5 before 3.5.18",
        fixed_in: "etcd-io/etcd#19251 (3.4.36), #19249 (3.5.18), #19188 (3.6.0)",
        what: "a compaction at a DELETE's revision that etcd finishes after a restart (it stopped mid-compaction) also removes that DELETE's tombstone, left out of the rebuilt key index, so a watch opened at exactly the compacted revision misses the DELETE",
        regscope_does: "opens its watch of the prefix one revision before the one it resumes from (dropping that revision's events, already applied), so a compaction at exactly the resume revision cancels it and regscope lists the prefix again instead of watching from there; the clusters of --etcd-servers-overrides, only counted, still resume at the next revision",
        lines: &[(3, 4, 36), (3, 5, 18)],
    },
];

/// `(major, minor, patch)` of a version as etcd reports it (`3.5.9`, `v3.5.9`,
/// `3.6.0-rc.1`: the patch's leading digits); `None` for anything else.
fn parse(version: &str) -> Option<(u32, u32, u32)> {
    let v = version.trim();
    let v = v.strip_prefix('v').unwrap_or(v);
    let mut parts = v.splitn(3, '.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch = parts.next()?;
    let digits = patch.len() - patch.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let patch = patch[..digits].parse().ok()?;
    Some((major, minor, patch))
}

/// The known watch bugs of etcd `version`, in table order; none for a version that cannot
/// be read (never panics).
pub fn known_watch_bugs(version: &str) -> Vec<&'static KnownBug> {
    let Some((major, minor, patch)) = parse(version) else {
        return Vec::new();
    };
    KNOWN_WATCH_BUGS
        .iter()
        .filter(|b| {
            b.lines
                .iter()
                .any(|&(ma, mi, fixed)| ma == major && mi == minor && patch < fixed)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(version: &str) -> Vec<&'static str> {
        known_watch_bugs(version).iter().map(|b| b.id).collect()
    }

    const PROGRESS: &str = "etcd-io/etcd#15220";
    const TOMBSTONE: &str = "etcd-io/etcd#19179";

    #[test]
    fn progress_before_events_boundaries() {
        assert_eq!(ids("3.4.23"), [PROGRESS, TOMBSTONE], "Debian's etcd");
        assert_eq!(ids("3.4.24"), [PROGRESS, TOMBSTONE]);
        assert_eq!(ids("3.4.25"), [TOMBSTONE]);
        assert_eq!(ids("3.5.0"), [PROGRESS, TOMBSTONE]);
        assert_eq!(ids("3.5.1"), [PROGRESS, TOMBSTONE]);
        assert_eq!(ids("3.5.7"), [PROGRESS, TOMBSTONE]);
        assert_eq!(ids("3.5.8"), [TOMBSTONE]);
    }

    #[test]
    fn tombstone_at_the_compaction_boundaries() {
        assert_eq!(ids("3.4.35"), [TOMBSTONE]);
        assert_eq!(ids("3.4.36"), Vec::<&str>::new());
        assert_eq!(ids("3.4.37"), Vec::<&str>::new());
        assert_eq!(ids("3.5.17"), [TOMBSTONE]);
        assert_eq!(ids("3.5.18"), Vec::<&str>::new());
        assert_eq!(ids("3.5.21"), Vec::<&str>::new());
    }

    #[test]
    fn newer_lines_and_other_spellings() {
        for v in [
            "3.6.0",
            "3.6.4",
            "3.6.9",
            "3.7.0",
            "3.7.1",
            "v3.6.4",
            "3.6.0-rc.1",
        ] {
            assert!(ids(v).is_empty(), "{v}");
        }
        assert_eq!(ids("v3.5.9"), [TOMBSTONE]);
        assert_eq!(ids(" 3.5.7 "), [PROGRESS, TOMBSTONE]);
        assert_eq!(ids("3.5.7-rc.0"), [PROGRESS, TOMBSTONE]);
        for garbage in [
            "",
            "garbage",
            "3",
            "3.5",
            "3.x.1",
            "v",
            "3.5.",
            "-1.2.3",
            "99999999999.1.1",
        ] {
            assert!(ids(garbage).is_empty(), "{garbage:?}");
        }
    }

    #[test]
    fn every_row_is_filled_in() {
        for b in &KNOWN_WATCH_BUGS {
            assert!(b.id.starts_with("etcd-io/etcd#"), "{}", b.id);
            for text in [b.affected, b.fixed_in, b.what, b.regscope_does] {
                assert!(!text.is_empty() && !text.contains('\n'), "{}", b.id);
            }
        }
    }
}
