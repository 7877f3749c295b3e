//! Bookmarks: moments of a recording the user named in a replay ("outage starts here"),
//! kept in a sidecar file beside the recording, never in it.
//!
//! A recording is read-only to regscope once written: appending to a `.rgs` file would
//! make the bytes after its last frame read as damage to every regscope, older ones too.
//! So a bookmark goes to `F.bookmarks` beside a recording file `F`, or `BASE.bookmarks`
//! for a `--keep-last` set named by its base `BASE` (see [`bookmarks_path`]). Writing it is
//! the one write a replay makes, and only on the user's explicit key press
//! ([`append`]); everything else here only reads.
//!
//! The file is JSON lines, one bookmark a line:
//! `{"at":"2024-01-02T03:04:05.678Z","revision":1234,"text":"outage starts here"}` (`at` in
//! RFC 3339 UTC with milliseconds). Each line is appended whole with one write and synced,
//! so a crash loses at most the line being written; [`load`] skips a line it cannot read
//! (torn at the end, or garbage) with a warning and keeps the others. The player turns
//! bookmarks into markers (`Player::complete_markers`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::RecordError;
use crate::model::Revision;

/// Most characters a bookmark's text keeps (the rest is cut at input and on reading).
pub const TEXT_MAX: usize = 500;

/// One bookmark: a moment of the recording, the revision the session showed there, and
/// what the user typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bookmark {
    /// The cursor's time (the session's clock), to the millisecond the file keeps.
    pub at: SystemTime,
    /// The session's revision at the cursor.
    pub revision: Revision,
    /// One line, at most [`TEXT_MAX`] characters, no control characters (see
    /// [`clean_text`]).
    pub text: String,
}

/// The line as the file holds it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Line {
    at: String,
    revision: Revision,
    text: String,
}

impl Bookmark {
    /// A bookmark at `at` (cut to the millisecond, as the file keeps it) with `text`
    /// cleaned by [`clean_text`].
    pub fn new(at: SystemTime, revision: Revision, text: &str) -> Bookmark {
        Bookmark {
            at: to_millis(at),
            revision,
            text: clean_text(text),
        }
    }

    /// The bookmark's line, without the newline.
    fn to_line(&self) -> String {
        let line = Line {
            at: humantime::format_rfc3339_millis(self.at).to_string(),
            revision: self.revision,
            text: clean_text(&self.text),
        };
        // Strings and an integer: serialising cannot fail.
        serde_json::to_string(&line).unwrap_or_default()
    }

    /// Reads one line of the file, or says why not.
    fn from_line(line: &str) -> Result<Bookmark, String> {
        let l: Line = serde_json::from_str(line).map_err(|e| e.to_string())?;
        let at = humantime::parse_rfc3339(&l.at)
            .map_err(|e| format!("at {:?}: {e} (RFC 3339 UTC expected)", l.at))?;
        Ok(Bookmark {
            at,
            revision: l.revision,
            text: clean_text(&l.text),
        })
    }
}

/// `text` as a bookmark keeps it: control characters (newlines, tabs, escapes) replaced
/// by spaces, surrounding spaces trimmed, at most [`TEXT_MAX`] characters.
pub fn clean_text(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    one_line.trim().chars().take(TEXT_MAX).collect()
}

fn to_millis(t: SystemTime) -> SystemTime {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    UNIX_EPOCH + Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The sidecar file of the recording named `recording` (as given to `replay`): `F.bookmarks`
/// beside a recording file `F`; for a `--keep-last` set named by its base, the base with a
/// `.rgs` removed plus `.bookmarks` (`fr` or `fr.rgs` for `fr.000001.rgs`, … →
/// `fr.bookmarks`), so that every file of the set shares it.
pub fn bookmarks_path(recording: &Path) -> PathBuf {
    if recording.is_file() {
        let mut s = recording.as_os_str().to_owned();
        s.push(".bookmarks");
        return PathBuf::from(s);
    }
    let s = recording.display().to_string();
    let stem = s.strip_suffix(".rgs").unwrap_or(&s);
    PathBuf::from(format!("{stem}.bookmarks"))
}

/// The bookmarks of `recording`, in the file's order, and a warning for each line that
/// could not be read (skipped: a line torn by a crash, garbage), each naming the file and
/// the line. A missing file is no bookmarks and no warning; a file that cannot be read
/// is one warning. Never an error: bookmarks never stand in the way of a replay.
pub fn load(recording: &Path) -> (Vec<Bookmark>, Vec<String>) {
    let path = bookmarks_path(recording);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Vec::new(), Vec::new()),
        Err(e) => {
            return (
                Vec::new(),
                vec![format!("{}: bookmarks unreadable: {e}", path.display())],
            )
        }
    };
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let text = String::from_utf8_lossy(&bytes);
    let ends_whole = text.ends_with('\n');
    let lines: Vec<&str> = text.split('\n').collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let last = i + 1 == lines.len();
        match Bookmark::from_line(line) {
            Ok(b) => out.push(b),
            Err(e) => warnings.push(format!(
                "{}: line {} {}, skipped: {e}",
                path.display(),
                i + 1,
                if last && !ends_whole {
                    "torn (the file ends inside it)"
                } else {
                    "unreadable"
                }
            )),
        }
    }
    (out, warnings)
}

/// Appends `b` to the sidecar of `recording` (created mode 0600 when missing): the line
/// written whole in one write with `O_APPEND`, then synced. The recording itself is never
/// opened for writing. A file whose last line was torn gets a newline first, so the torn
/// line stays one skipped line and this one reads.
///
/// The sidecar is never followed through a symbolic link (opened with `O_NOFOLLOW`) and
/// must be a regular file: a link or a FIFO planted in its place is refused, so a
/// bookmark can never append to some other file.
///
/// Errors: the directory is not writable, the disk is full, the sidecar is a symbolic
/// link or not a regular file (the message names the file).
pub fn append(recording: &Path, b: &Bookmark) -> Result<(), RecordError> {
    let path = bookmarks_path(recording);
    let io = |source| RecordError::Io {
        path: path.display().to_string(),
        source,
    };
    let refused = |what: &str| RecordError::Format {
        path: path.display().to_string(),
        what: format!("{what}; bookmarks are only written to a regular file"),
    };
    let mut opts = std::fs::OpenOptions::new();
    opts.append(true).create(true).read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NONBLOCK: opening a FIFO planted there must not hang the console.
        opts.mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let mut f = match opts.open(&path) {
        Ok(f) => f,
        Err(_) if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) => {
            return Err(refused("a symbolic link"))
        }
        Err(e) => return Err(io(e)),
    };
    if !f.metadata().map_err(io)?.is_file() {
        return Err(refused("not a regular file"));
    }
    let torn = {
        use std::io::{Read, Seek, SeekFrom};
        let len = f.metadata().map_err(io)?.len();
        let mut last = [0u8; 1];
        len > 0
            && f.seek(SeekFrom::Start(len - 1)).is_ok()
            && f.read_exact(&mut last).is_ok()
            && last[0] != b'\n'
    };
    let mut line = String::new();
    if torn {
        line.push('\n');
    }
    line.push_str(&b.to_line());
    line.push('\n');
    f.write_all(line.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(1_700_000_000_000 + ms)
    }

    fn dir() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let rec = d.path().join("incident.rgs");
        std::fs::write(&rec, b"not read here").unwrap();
        (d, rec)
    }

    #[test]
    fn the_sidecar_sits_beside_a_file_or_a_sets_base() {
        let (d, rec) = dir();
        assert_eq!(
            bookmarks_path(&rec),
            d.path().join("incident.rgs.bookmarks")
        );
        // A set named by its base (no file of that name).
        assert_eq!(
            bookmarks_path(&d.path().join("fr")),
            d.path().join("fr.bookmarks")
        );
        assert_eq!(
            bookmarks_path(&d.path().join("fr.rgs")),
            d.path().join("fr.bookmarks")
        );
    }

    #[test]
    fn appended_bookmarks_load_in_order_and_the_file_is_private() {
        let (_d, rec) = dir();
        assert_eq!(load(&rec), (Vec::new(), Vec::new()), "missing file: none");
        let a = Bookmark::new(at(1), 10, "outage starts here");
        let b = Bookmark::new(at(2_500), 12, "  back\tagain\n");
        append(&rec, &a).unwrap();
        append(&rec, &b).unwrap();
        let (got, warnings) = load(&rec);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(got, vec![a, b.clone()]);
        assert_eq!(b.text, "back again", "control characters refused, trimmed");
        let text = std::fs::read_to_string(bookmarks_path(&rec)).unwrap();
        assert_eq!(
            text.lines().next().unwrap(),
            r#"{"at":"2023-11-14T22:13:20.001Z","revision":10,"text":"outage starts here"}"#
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(bookmarks_path(&rec))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(std::fs::read(&rec).unwrap(), b"not read here");
    }

    #[test]
    fn a_torn_last_line_is_skipped_with_a_warning_and_the_next_append_reads() {
        let (_d, rec) = dir();
        for i in 0..3 {
            append(
                &rec,
                &Bookmark::new(at(i * 1000), i as i64, &format!("b{i}")),
            )
            .unwrap();
        }
        let path = bookmarks_path(&rec);
        let len = std::fs::metadata(&path).unwrap().len();
        // Cut in the middle of the last line.
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 20).unwrap();
        let (got, warnings) = load(&rec);
        assert_eq!(
            got.iter().map(|b| b.text.as_str()).collect::<Vec<_>>(),
            ["b0", "b1"]
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("line 3 torn (the file ends inside it), skipped"),
            "{warnings:?}"
        );
        append(&rec, &Bookmark::new(at(9_000), 9, "after the crash")).unwrap();
        let (got, warnings) = load(&rec);
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[2].text, "after the crash");
        assert!(warnings[0].contains("line 3 unreadable"), "{warnings:?}");
    }

    #[test]
    fn a_directory_that_cannot_be_written_is_an_error_naming_the_file() {
        let (d, _) = dir();
        let rec = d.path().join("gone").join("incident.rgs");
        let e = append(&rec, &Bookmark::new(at(0), 1, "x")).unwrap_err();
        assert!(e.to_string().contains("gone/incident.bookmarks: "), "{e}");
        assert_eq!(load(&rec), (Vec::new(), Vec::new()));
    }

    #[test]
    fn garbage_lines_are_skipped_and_long_texts_cut() {
        let (_d, rec) = dir();
        let long = "x".repeat(TEXT_MAX + 10);
        let good = Bookmark::new(at(5), 3, &long);
        assert_eq!(good.text.chars().count(), TEXT_MAX);
        let body = format!(
            "garbage\n{}\n{{\"at\":\"yesterday\",\"revision\":1,\"text\":\"t\"}}\n\n",
            good.to_line()
        );
        std::fs::write(bookmarks_path(&rec), body).unwrap();
        let (got, warnings) = load(&rec);
        assert_eq!(got, vec![good]);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("line 1 unreadable"), "{warnings:?}");
        assert!(warnings[1].contains("line 3 unreadable"), "{warnings:?}");
        assert!(warnings[1].contains("RFC 3339"), "{warnings:?}");
    }

    #[cfg(unix)]
    #[test]
    fn a_sidecar_that_is_a_symlink_or_no_regular_file_is_refused() {
        let (d, rec) = dir();
        let victim = d.path().join("victim.txt");
        std::fs::write(&victim, b"keep me").unwrap();
        std::os::unix::fs::symlink(&victim, bookmarks_path(&rec)).unwrap();
        let e = append(&rec, &Bookmark::new(at(0), 1, "x")).unwrap_err();
        assert!(
            e.to_string()
                .contains("incident.rgs.bookmarks: a symbolic link"),
            "{e}"
        );
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
        // A dangling link is not followed to create its target either.
        let (d, rec) = dir();
        let target = d.path().join("made.txt");
        std::os::unix::fs::symlink(&target, bookmarks_path(&rec)).unwrap();
        assert!(append(&rec, &Bookmark::new(at(0), 1, "x")).is_err());
        assert!(!target.exists());
        // A directory in its place.
        let (_d, rec) = dir();
        std::fs::create_dir(bookmarks_path(&rec)).unwrap();
        let e = append(&rec, &Bookmark::new(at(0), 1, "x")).unwrap_err();
        assert!(e.to_string().contains(".bookmarks: "), "{e}");
    }
}
