//! What the subcommands that take a recording do when given etcd's own db file instead
//! (told apart by content, [`is_db_file`]): open it ([`open`]), read `--at`/`--from`/`--to`
//! as revisions of it ([`parse_revision`]), and feed a session the state at one revision
//! ([`session_at`]).

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use crate::model::{Revision, SessionInfo, Stamped};
use crate::source::etcd_db::{self, EtcdDb};
use crate::store::Session;

/// Whether `path` is a bbolt file: page 0 a meta page with bbolt's magic, by its first
/// bytes, or, when page 0 is damaged, page 1 at one of the page sizes bbolt tries for the
/// second meta (`crate::bbolt::PAGE_SIZES`; bbolt's `getPageSizeFromSecondMeta`), so that
/// a db file whose first page is damaged is still read (and its damage said) as one. A
/// path that is not a readable file (a `--keep-last` set's base name) is not.
pub fn is_db_file(path: &Path) -> bool {
    use std::os::unix::fs::FileExt;
    // Opening a FIFO blocks until a writer comes: only a regular file is looked into (the
    // recording's check then says what else it is).
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let looks_at = |offset: u64| {
        let mut head = [0u8; 20];
        f.read_exact_at(&mut head, offset).is_ok() && etcd_db::looks_like_bbolt(&head)
    };
    looks_at(0) || crate::bbolt::PAGE_SIZES.iter().any(|&ps| looks_at(ps))
}

/// Opens etcd's db file at `path`; what is wrong is said on stderr (exit 2). A file another
/// process holds open (a running etcd's `member/snap/db`) is read anyway, after one line
/// on stderr saying what that risks and what to read instead
/// ([`etcd_db::open_by::warning`]).
pub fn open(path: &Path) -> Result<EtcdDb, ExitCode> {
    open_or_error(path).map_err(|e| {
        eprintln!("regscope: {e}");
        ExitCode::from(2)
    })
}

/// [`open`] without the check of the SHA-256 `etcdctl snapshot save` appends, for a caller
/// that runs [`warn_digest_of`] itself (beside its own walk: `analyze`).
pub fn open_unchecked(path: &Path) -> Result<EtcdDb, ExitCode> {
    open_db(path).map_err(|e| {
        eprintln!("regscope: {e}");
        ExitCode::from(2)
    })
}

/// Says on stderr when the SHA-256 `etcdctl snapshot save` appended does not match the
/// file's pages (a backup changed after it was saved: etcdctl snapshot restore refuses
/// it), naming `replay --check`; a file without one (a member's own) says nothing. Reads
/// the file once, sequentially ([`digest_check`]).
pub fn warn_digest(db: &EtcdDb) {
    warn_digest_of(db.path(), db.bolt().size(), db.bolt().file_len());
}

/// [`warn_digest`] from the file's path, its bbolt size and its length (what a thread
/// beside a walk needs).
pub fn warn_digest_of(path: &Path, pages: u64, len: u64) {
    // Once per file and process (`diff` of one file at two moments opens it twice).
    static CHECKED: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());
    if let Ok(mut seen) = CHECKED.lock() {
        if seen.iter().any(|p| p == path) {
            return;
        }
        seen.push(path.to_path_buf());
    }
    if let Err(e) = digest_check(path, pages, len) {
        eprintln!(
            "regscope: warning: {}: {e}; what it holds may be damaged (`regscope replay --check` of it reads every page)",
            path.display()
        );
    }
}

/// [`open`] for a caller that says the error itself: the warnings (another process holds
/// the file, an interrupted compaction) on stderr, the error as text (naming the path
/// once).
pub fn open_or_error(path: &Path) -> Result<EtcdDb, String> {
    let db = open_db(path).map_err(|e| e.to_string())?;
    warn_digest(&db);
    Ok(db)
}

/// [`open_or_error`] with the error as it is, for a caller that tells a file it cannot
/// read ([`etcd_db::DbError::is_unreadable`]) from a damaged one.
pub fn open_db(path: &Path) -> Result<EtcdDb, etcd_db::DbError> {
    if let Some(w) = etcd_db::open_by::check(path) {
        eprintln!("regscope: {w}");
    }
    let db = EtcdDb::open(path)?;
    if let Some(rev) = db.interrupted_compaction() {
        eprintln!(
            "regscope: {}: a compaction to revision {rev} was scheduled and never finished (finished: {}): revisions below {rev} are partly deleted, so the file is read from {rev}",
            path.display(),
            db.meta().finished_compact_revision.unwrap_or(0)
        );
    }
    Ok(db)
}

/// Reads `--at`/`--from`/`--to` against a db file: a revision (`rN` or a number), `start`
/// (the finished compaction, the oldest state the file holds whole) or `end` (its head).
/// A db file holds no times: a time or an offset is refused, naming the revisions held.
pub fn parse_revision(flag: &str, text: &str, db: &EtcdDb) -> Result<Revision, String> {
    let head = db.head().map_err(|e| e.to_string())?;
    // A store never compacted holds every revision from etcd's first, 1.
    let compacted = db.compacted().max(1);
    let held = format!("the file holds revisions {compacted} to {head}");
    let t = text.trim();
    let rev = match t {
        "start" => return Ok(compacted),
        "end" => return Ok(head),
        _ => t.strip_prefix('r').unwrap_or(t).parse::<Revision>().map_err(|_| {
            format!("{flag} {t}: a db file holds revisions, not times: give a revision (r{head}), `start` or `end` ({held})")
        })?,
    };
    if rev <= 0 {
        return Err(format!(
            "{flag} {t}: a revision is a positive number (etcd's first is 1)"
        ));
    }
    if rev < compacted {
        return Err(format!(
            "{flag} {t}: revision {rev} is compacted (the file's finished compaction is {compacted}): {held}"
        ));
    }
    if rev > head {
        return Err(format!(
            "{flag} {t}: revision {rev} is after the file's head: {held}"
        ));
    }
    Ok(rev)
}

/// When `db` holds no key under `prefix` (a byte prefix, as `--prefix` filters) in any
/// version it keeps, live or deleted: one line naming the file that says so and names the
/// top-level prefixes it holds instead (up to 20, by each key's first segment,
/// [`crate::source::connect::first_segment`]), worded as the live path's
/// ([`crate::source::etcd::no_keys_line`]); `None` when some version is under it. Reads
/// every version of the file's `key` bucket: call it when no live key was found.
///
/// Errors: the file is damaged (the error names where).
pub fn no_keys_under(db: &EtcdDb, prefix: &[u8]) -> Result<Option<String>, etcd_db::DbError> {
    let mut tops: std::collections::BTreeSet<Vec<u8>> = std::collections::BTreeSet::new();
    for v in db.versions_from(0) {
        let key = v?.kv.key;
        if key.starts_with(prefix) {
            return Ok(None);
        }
        if tops.len() < 20 {
            tops.insert(crate::source::connect::first_segment(&key).to_vec());
        }
    }
    let tops: Vec<String> = tops
        .iter()
        .map(|t| crate::model::escape_bytes(t).into_owned())
        .collect();
    Ok(Some(format!(
        "{}: {}",
        db.path().display(),
        crate::source::etcd::no_keys_line(prefix, &tops, "the file")
    )))
}

/// [`no_keys_under`] for a command that says it as a warning: the line on stderr, `true`
/// when it was said (a damaged file says nothing here: the command reading it says that).
pub fn warn_no_keys_under(db: &EtcdDb, prefix: &[u8]) -> bool {
    match no_keys_under(db, prefix) {
        Ok(Some(line)) => {
            eprintln!("regscope: {line}");
            true
        }
        _ => false,
    }
}

/// The file's modification time: the stamp every observation read from it carries (a db
/// file records revisions, not when they were written).
pub fn file_time(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// A session holding the keys under `info.prefix` as they were at revision `rev` of `db`.
/// It is a list: it observes none of the writes the file retains (its write counts stay 0,
/// which `snapshot --json --from DB` prints as `null`), and every stamp is [`file_time`].
pub fn session_at(db: &EtcdDb, rev: Revision, info: SessionInfo) -> anyhow::Result<Session> {
    let at = file_time(db.path());
    let prefix = info.prefix.clone().into_bytes();
    let mut session = Session::new(info);
    etcd_db::state_at(db, rev, &prefix, |obs| {
        session.apply(&Stamped { at, obs });
    })?;
    Ok(session)
}

/// What `snapshot --json` adds for a db file under `db_file`: `{path, revision (shown),
/// head, compacted, scheduled_compaction, storage_version, cluster_version, members,
/// leases, alarms, file_bytes, bbolt_bytes, page_size}`.
pub fn db_json(db: &EtcdDb, rev: Revision) -> anyhow::Result<serde_json::Value> {
    let m = db.meta();
    Ok(serde_json::json!({
        "path": db.path().display().to_string(),
        "revision": rev,
        "head": db.head()?,
        "compacted": db.compacted(),
        "scheduled_compaction": m.scheduled_compact_revision,
        "consistent_index": m.consistent_index,
        "term": m.term,
        "storage_version": m.storage_version,
        "cluster_version": m.cluster_version,
        "members": db.members()?,
        "leases": db.leases()?,
        "alarms": db.alarms()?.iter().map(|(id, a)| serde_json::json!({"member_id": format!("{id:x}"), "alarm": a})).collect::<Vec<_>>(),
        "file_bytes": db.bolt().file_len(),
        "bbolt_bytes": db.bolt().size(),
        "page_size": db.bolt().meta().page_size,
    }))
}

/// Writes `db`'s retained history under `prefix` as a recording at `out` (replaced if
/// there), so that the console's replay, with its timeline, seeks and markers, runs over
/// it: the keys alive at the finished compaction as a list, then each later revision's
/// writes as one watch response (a revision that wrote nothing under the prefix as a
/// progress notification at it), then a progress notification at the head when that is
/// newer (a compaction after the last write). Every
/// observation carries the file's modification time ([`file_time`]): a db file keeps no
/// times, and a note first in the recording says so; the header says it as a fact
/// ([`crate::record::RevisionTimeline`]: the revisions held and the file's time), which the
/// console's replay reads to run its timeline over revisions. The replica keeps every version (its history
/// budget is the file's size), as the file does. `progress` is told each revision written.
///
/// Errors: the db file is damaged (the error names where), or `out` cannot be written.
pub fn to_recording(
    db: &EtcdDb,
    out: &Path,
    prefix: &str,
    show_secrets: bool,
    mut progress: impl FnMut(Revision, Revision),
) -> anyhow::Result<()> {
    use crate::model::{EventKind, Observation, WatchEvent};
    use crate::record::{RecordOptions, Recorder};
    let at = file_time(db.path());
    let head = db.head()?;
    let info = SessionInfo {
        title: format!("file {}", db.path().display()),
        prefix: prefix.to_string(),
        // Every version the file holds: their values take at most the file's bytes.
        history_budget: db.bolt().file_len().max(256 << 20),
        started_at: at,
        ..Default::default()
    };
    let mut session = Session::new(info);
    let mut opts = RecordOptions::new(out);
    opts.show_secrets = show_secrets;
    opts.overwrite = true;
    // What says, to every reader of the recording, that its stamps are no times.
    opts.revision_timeline = Some(crate::record::RevisionTimeline {
        compacted: db.compacted(),
        first: db.compacted().max(1),
        head,
        file_time: at,
    });
    let mut rec = Recorder::create(opts, &session, 0)?;
    let put = |session: &mut Session, rec: &mut Recorder, obs: Observation| {
        let st = Stamped { at, obs };
        let applied = session.apply(&st);
        rec.record_applied(&st, &applied);
        rec.maintain(Some(session));
    };
    put(
        &mut session,
        &mut rec,
        Observation::Note(format!(
            "{}: etcd's db file, revisions {} to {head}; it keeps no times, so no revision has one (the file was modified at {}); seek by revision",
            db.path().display(),
            db.compacted().max(1),
            humantime::format_rfc3339_seconds(at)
        )),
    );
    let start = db.compacted().max(1);
    let bytes = prefix.as_bytes();
    etcd_db::state_at(db, start, bytes, |obs| put(&mut session, &mut rec, obs))?;
    let mut batch: Vec<WatchEvent> = Vec::new();
    let mut current = start;
    // A revision that wrote only outside the prefix (`compact_rev_key`, another
    // application's keys) is still a revision of etcd's: a progress notification moves
    // the replica to it, as a watch's would.
    let flush =
        |session: &mut Session, rec: &mut Recorder, revision, batch: &mut Vec<WatchEvent>| {
            let obs = if batch.is_empty() {
                Observation::Progress { revision }
            } else {
                Observation::Events {
                    revision,
                    events: std::mem::take(batch),
                }
            };
            put(session, rec, obs);
        };
    for v in db.versions_from(start + 1) {
        let v = v?;
        if v.main != current {
            if current != start {
                flush(&mut session, &mut rec, current, &mut batch);
            }
            current = v.main;
            progress(current, head);
        }
        if !v.kv.key.starts_with(bytes) {
            continue;
        }
        batch.push(WatchEvent {
            kind: if v.tombstone {
                EventKind::Delete
            } else {
                EventKind::Put
            },
            kv: v.kv,
            prev_kv: None,
        });
    }
    if current != start {
        flush(&mut session, &mut rec, current, &mut batch);
    }
    if head > current {
        put(
            &mut session,
            &mut rec,
            Observation::Progress { revision: head },
        );
    }
    // The error names the file itself (`writing OUT: …`).
    rec.finish().map_err(anyhow::Error::msg)?;
    Ok(())
}

/// What `etcdctl snapshot save` appends to the file it writes, checked: the SHA-256 of
/// the pages before it, 32 bytes (etcd's `etcdutl/snapshot` `Restore` checks it when the
/// file's length is 32 past a multiple of 512, and refuses a mismatch). `Ok` says what was
/// found (a digest that matches, or a file without one: a member's own `member/snap/db`);
/// `Err` a digest that does not match, or bytes after the pages that are not one.
pub fn snapshot_digest(db: &EtcdDb) -> Result<String, String> {
    digest_check(db.path(), db.bolt().size(), db.bolt().file_len())
}

/// [`snapshot_digest`] of the file at `path` whose bbolt pages take `pages` bytes of its
/// `len`.
pub fn digest_check(path: &Path, pages: u64, len: u64) -> Result<String, String> {
    use sha2::{Digest, Sha256};
    let extra = len.saturating_sub(pages);
    if extra == 0 {
        return Ok("none (a member's own file; `etcdctl snapshot save` appends a SHA-256)".into());
    }
    if extra != 32 || len % 512 != 32 {
        return Err(format!(
            "{extra} bytes after the {pages} bytes of pages: not the 32-byte SHA-256 `etcdctl snapshot save` appends (etcdctl snapshot restore refuses such a file)"
        ));
    }
    let mut f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut h = Sha256::new();
    let mut left = pages;
    let mut buf = vec![0u8; 1 << 20];
    while left > 0 {
        let n = (buf.len() as u64).min(left) as usize;
        f.read_exact(&mut buf[..n]).map_err(|e| e.to_string())?;
        h.update(&buf[..n]);
        left -= n as u64;
    }
    let mut stored = [0u8; 32];
    f.read_exact(&mut stored).map_err(|e| e.to_string())?;
    if h.finalize().as_slice() == stored {
        Ok("SHA-256 of the pages matches the one `etcdctl snapshot save` appended".into())
    } else {
        Err("the SHA-256 `etcdctl snapshot save` appended does not match the pages: the file changed after it was saved (etcdctl snapshot restore refuses it)".into())
    }
}
