//! One side of `regscope diff`: a file (etcd's db file or a recording) at one moment,
//! played into a [`Session`] as `snapshot --json --from FILE --at T` plays it, and what
//! the output says about it.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::{json, Value};

use crate::cli::{db_file, recording};
use crate::config::Zone;
use crate::model::{Revision, SessionInfo};
use crate::record::{Player, Target};
use crate::store::Session;

/// The prefix kube-apiserver stores under when `--etcd-prefix` is not given.
pub const REGISTRY: &str = "/registry";

/// What kind of file a side is, and what it holds.
#[derive(Clone, Debug)]
pub enum Holds {
    /// etcd's db file: the revisions from its finished compaction to its head.
    DbFile { compacted: Revision, head: Revision },
    /// A recording: its first and last stamp, and the revisions it knows.
    Recording {
        start: SystemTime,
        end: SystemTime,
        first_revision: Option<Revision>,
        last_revision: Option<Revision>,
    },
}

/// A file at one moment.
pub struct Side {
    /// The file as given.
    pub file: PathBuf,
    /// `--at` as given; `None`: the file's end (a db file's head).
    pub at: Option<String>,
    pub holds: Holds,
    /// The keys at that moment (and, for a recording, the rest of its session).
    pub session: Session,
    /// A recording's session clock at that moment; `None` for a db file (it holds no
    /// times).
    pub time: Option<SystemTime>,
    /// Secret values in the file were redacted when recorded (a recording made without
    /// `--show-secrets`); never for a db file.
    pub secrets_redacted: bool,
    /// Damage found in a recording (one line each); the comparison then is of what it
    /// still holds.
    pub damage: Vec<String>,
    /// What the reader of the output should know about this side (a seek stopped short).
    pub notes: Vec<String>,
    /// A db file that holds no key, live or deleted, under the prefix compared: the line
    /// saying so and naming the top-level prefixes it holds
    /// ([`db_file::no_keys_under`]); `None` for a recording.
    pub no_keys: Option<String>,
    /// A db file's member IDs (its `members` bucket, [`crate::source::etcd_db::EtcdDb::members`]);
    /// empty for a recording, or a file that lists none.
    pub member_ids: Vec<u64>,
}

impl Side {
    /// Opens `path` (a db file when its first bytes say bbolt, else a recording) and plays
    /// it to `at` (`None`: its end). `prefix`, the `--prefix` flag, decides which keys a
    /// db file is read under ([`db_root`]). Errors: one line naming the file (a file that
    /// is missing or not readable as either kind, a moment outside it, a recording with no
    /// listed keyspace at that moment).
    pub fn open(
        path: &Path,
        at: Option<&str>,
        prefix: Option<&str>,
        zone: Zone,
    ) -> Result<Side, String> {
        if db_file::is_db_file(path) {
            Side::open_db(path, at, prefix)
        } else {
            Side::open_recording(path, at, zone)
        }
    }

    fn open_db(path: &Path, at: Option<&str>, prefix: Option<&str>) -> Result<Side, String> {
        let db = db_file::open_or_error(path)?;
        // The file's own errors (`DbError`) name it already; a flag's do not.
        let in_file = |e: String| format!("{}: {e}", path.display());
        let head = db.head().map_err(|e| e.to_string())?;
        let rev = match at {
            Some(t) => db_file::parse_revision("--at", t, &db).map_err(in_file)?,
            None => head,
        };
        let info = SessionInfo {
            title: format!("file {}", path.display()),
            prefix: db_root(prefix),
            started_at: db_file::file_time(path),
            ..Default::default()
        };
        // `{e}`, not the chain: the file's error says its cause already.
        let session = db_file::session_at(&db, rev, info).map_err(|e| format!("{e}"))?;
        // The prefix compared ([`super::run`]): `--prefix`, else the one read under.
        let compared = prefix.map_or_else(
            || session.replica.prefix().to_vec(),
            |p| p.as_bytes().to_vec(),
        );
        let no_keys = if crate::derive::changes::live_keys(&session.replica, &compared)
            .next()
            .is_none()
        {
            db_file::no_keys_under(&db, &compared).map_err(|e| e.to_string())?
        } else {
            None
        };
        Ok(Side {
            file: path.to_path_buf(),
            at: at.map(str::to_owned),
            holds: Holds::DbFile {
                compacted: db.compacted(),
                head,
            },
            session,
            time: None,
            secrets_redacted: false,
            damage: Vec::new(),
            notes: Vec::new(),
            no_keys,
            member_ids: db
                .members()
                .map_err(|e| e.to_string())?
                .iter()
                .map(|m| m.id)
                .collect(),
        })
    }

    fn open_recording(path: &Path, at: Option<&str>, zone: Zone) -> Result<Side, String> {
        crate::record::files::recording_files(path).map_err(|e| e.to_string())?;
        // Its first bytes said it is no bbolt file either.
        let mut player = Player::open(path).map_err(|e| recording::open_error(&e))?;
        let in_file = |e: String| format!("{}: {e}", path.display());
        let target = match at {
            Some(t) => recording::parse_at("--at", t, &player, zone).map_err(in_file)?,
            None => Target::End,
        };
        // Only the session is needed; damage anywhere makes the answer suspect, as in
        // `snapshot --json --from`.
        player.set_bodies(false);
        player.verify(false);
        let session = player.seek(target);
        let mut notes = Vec::new();
        if let Some(line) = player.short_of(&session, target) {
            notes.push(in_file(format!("--at {}: {line}", at.unwrap_or("end"))));
        }
        let moment = at.map_or_else(|| "its end".to_string(), |t| format!("--at {t}"));
        if session.revision() == 0 {
            return Err(in_file(format!(
                "the recording holds no keys at {moment}: its first list of etcd had not ended (first revision it holds: {})",
                player
                    .first_revision()
                    .map_or("none".into(), |r| format!("r{r}"))
            )));
        }
        if let Some((rev, _)) = session.replica.listing() {
            return Err(in_file(format!(
                "at {moment} the recording is relisting etcd (at revision {rev}): its keys are incomplete there; choose a moment after the list ends"
            )));
        }
        let (start, end) = player.span();
        Ok(Side {
            file: path.to_path_buf(),
            at: at.map(str::to_owned),
            holds: Holds::Recording {
                start,
                end,
                first_revision: player.first_revision(),
                last_revision: player.last_revision(),
            },
            time: Some(session.now()),
            session,
            secrets_redacted: player.header().secrets_redacted,
            damage: player.damage().to_vec(),
            notes,
            no_keys: None,
            member_ids: Vec::new(),
        })
    }

    /// The revision the side shows.
    pub fn revision(&self) -> Revision {
        self.session.revision()
    }

    /// The prefix the side's keys were read under (kube-apiserver's `--etcd-prefix`).
    pub fn root(&self) -> &[u8] {
        self.session.replica.prefix()
    }

    /// `db_file` or `recording`.
    pub fn kind(&self) -> &'static str {
        match self.holds {
            Holds::DbFile { .. } => "db_file",
            Holds::Recording { .. } => "recording",
        }
    }

    /// The moment in words: `revision 30 (the file holds 23 to 47)`, `2026-…Z, revision
    /// 1234 (the recording spans … to …)`.
    pub fn moment_text(&self, zone: Zone) -> String {
        let rev = crate::derive::units::thousands_i(self.revision());
        match &self.holds {
            Holds::DbFile { compacted, head } => {
                // A store never compacted (0) holds every revision from etcd's first, 1.
                let first = (*compacted).max(1);
                format!("etcd db file at revision {rev} (it holds revisions {first} to {head})")
            }
            Holds::Recording { start, end, .. } => format!(
                "recording at {}, revision {rev} (it spans {} to {})",
                self.time
                    .map_or_else(String::new, |t| zone.rfc3339_millis(t)),
                zone.rfc3339_millis(*start),
                zone.rfc3339_millis(*end)
            ),
        }
    }

    /// The side in `--json`: `{file, kind, at, revision, time, holds, keys, bytes,
    /// secrets_redacted}` (`keys` and `bytes`, the live keys compared and their value
    /// bytes, are the caller's).
    pub fn json(&self, keys: u64, bytes: u64) -> Value {
        let t = |t: SystemTime| humantime::format_rfc3339_millis(t).to_string();
        let holds = match &self.holds {
            Holds::DbFile { compacted, head } => json!({"compacted": compacted, "head": head}),
            Holds::Recording {
                start,
                end,
                first_revision,
                last_revision,
            } => json!({
                "start": t(*start),
                "end": t(*end),
                "first_revision": first_revision,
                "last_revision": last_revision,
            }),
        };
        json!({
            "file": self.file.display().to_string(),
            "kind": self.kind(),
            "at": self.at,
            "revision": self.revision(),
            "time": self.time.map(t),
            "holds": holds,
            "keys": keys,
            "bytes": bytes,
            "secrets_redacted": self.secrets_redacted,
        })
    }
}

/// When a key live on both sides at the same mod_revision counts as changed: never within
/// one file (one history: a revision names one value); between two files when the values
/// differ, except Secrets where either side is a recording that redacted them (their bytes
/// say nothing then: compared by revision only).
pub struct SameRevision {
    one_history: bool,
    /// Two db files whose `members` buckets share no member ID: two clusters' histories,
    /// whose revisions do not compare (a key is never "recreated" between them).
    pub two_clusters: bool,
    /// `<prefix>/secrets/` of each side whose Secret values are redacted.
    redacted: Vec<Vec<u8>>,
}

/// What [`SameRevision::compare`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueCheck {
    Same,
    Differs,
    /// A redacted Secret: not compared by value.
    Redacted,
}

impl SameRevision {
    /// The rule for `a` against `b`; `one_history` when they are one file.
    pub fn new(a: &Side, b: &Side, one_history: bool) -> SameRevision {
        let redacted = [a, b]
            .into_iter()
            .filter(|s| s.secrets_redacted)
            .map(|s| {
                let mut p = s.root().to_vec();
                p.extend_from_slice(b"/secrets/");
                p
            })
            .collect();
        let two_clusters = !one_history
            && !a.member_ids.is_empty()
            && !b.member_ids.is_empty()
            && !a.member_ids.iter().any(|id| b.member_ids.contains(id));
        SameRevision {
            one_history,
            two_clusters,
            redacted,
        }
    }

    /// Compares the values of `key` (live on both sides at one mod_revision).
    pub fn compare(&self, key: &[u8], a: &Side, b: &Side) -> ValueCheck {
        if self.one_history {
            return ValueCheck::Same;
        }
        if self.redacted.iter().any(|p| key.starts_with(p)) {
            return ValueCheck::Redacted;
        }
        let value = |s: &Side| s.session.replica.get(key).and_then(|v| v.value);
        if value(a) == value(b) {
            ValueCheck::Same
        } else {
            ValueCheck::Differs
        }
    }
}

/// The prefix a db file is read under: kube-apiserver's default `/registry`, unless
/// `--prefix` names keys outside it (another `--etcd-prefix`, or `''` for every key).
pub fn db_root(prefix: Option<&str>) -> String {
    match prefix {
        Some(p) if !under(p.as_bytes(), REGISTRY.as_bytes()) => p.trim_end_matches('/').to_string(),
        _ => REGISTRY.to_string(),
    }
}

/// Whether `key` lies under `root` (the root itself, or `root/…`).
fn under(key: &[u8], root: &[u8]) -> bool {
    key.strip_prefix(root)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(b"/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_db_file_never_compacted_holds_revisions_from_1() {
        let side = |compacted| Side {
            file: PathBuf::from("s.db"),
            at: None,
            holds: Holds::DbFile {
                compacted,
                head: 10,
            },
            session: Session::new(SessionInfo::default()),
            time: None,
            secrets_redacted: false,
            damage: Vec::new(),
            notes: Vec::new(),
            no_keys: None,
            member_ids: Vec::new(),
        };
        assert!(side(0)
            .moment_text(Zone::Utc)
            .ends_with("(it holds revisions 1 to 10)"));
        assert!(side(4)
            .moment_text(Zone::Utc)
            .ends_with("(it holds revisions 4 to 10)"));
    }

    #[test]
    fn a_db_file_is_read_under_the_registry_unless_the_prefix_lies_outside_it() {
        assert_eq!(db_root(None), "/registry");
        assert_eq!(db_root(Some("/registry")), "/registry");
        assert_eq!(db_root(Some("/registry/pods/")), "/registry");
        assert_eq!(db_root(Some("/kube/")), "/kube");
        assert_eq!(db_root(Some("/registry-other")), "/registry-other");
        assert_eq!(db_root(Some("")), "");
    }
}
