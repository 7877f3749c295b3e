//! The files of a recording: one file, or the rolling set `BASE.000001.rgs`,
//! `BASE.000002.rgs`, … that `record --keep-last` writes (older files deleted as newer
//! ones fill), named and found here for the recorder and the player alike.

use std::path::{Path, PathBuf};

use super::RecordError;

/// File `n` (from 1) of a rolling set based at `base`: `BASE.000001.rgs`, with a `.rgs` on
/// the base removed first.
pub fn set_file_path(base: &Path, n: usize) -> PathBuf {
    let s = base.display().to_string();
    let stem = s.strip_suffix(".rgs").unwrap_or(&s);
    PathBuf::from(format!("{stem}.{n:06}.rgs"))
}

/// The number `n` of a rolling set's file name `BASE.NNNNNN.rgs` (see [`set_file_path`]),
/// `None` for any other name.
pub fn set_number(path: &Path) -> Option<usize> {
    set_member(path).map(|(_, n)| n)
}

/// The base file name and number of a rolling set's file `BASE.NNNNNN.rgs`.
fn set_member(path: &Path) -> Option<(&str, usize)> {
    let name = path.file_name()?.to_str()?.strip_suffix(".rgs")?;
    let (base, num) = name.rsplit_once('.')?;
    (num.len() == 6 && num.bytes().all(|b| b.is_ascii_digit()))
        .then(|| Some((base, num.parse().ok()?)))
        .flatten()
}

/// The files of a recording named `path`: the file itself, or the rolling set
/// `BASE.NNNNNN.rgs` of a `--keep-last` recording (oldest first).
///
/// Errors name `path` once: nothing there and no set by that name is [`NOT_THERE`] (the
/// commands that take a recording also take etcd's db file, so it says only that the path
/// does not exist, not what it was meant to be); a directory or a device says so.
pub fn recording_files(path: &Path) -> Result<Vec<PathBuf>, RecordError> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    if let Ok(m) = std::fs::metadata(path) {
        // There, but no regular file: a directory, a device, a pipe.
        let what = if m.is_dir() {
            "a directory, not a file (a --keep-last set is named by its base: DIR/BASE for DIR/BASE.000001.rgs, …; etcd's db file is member/snap/db in its data dir)"
        } else {
            "not a regular file"
        };
        return Err(RecordError::Io {
            path: path.display().to_string(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, what),
        });
    }
    let s = path.display().to_string();
    let stem = s.strip_suffix(".rgs").unwrap_or(&s).to_string();
    let stem_path = PathBuf::from(&stem);
    let dir = stem_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let base = stem_path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let not_there = || RecordError::Io {
        path: path.display().to_string(),
        source: std::io::Error::new(std::io::ErrorKind::NotFound, NOT_THERE),
    };
    let mut set: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| match e.kind() {
            // Its folder is not there either.
            std::io::ErrorKind::NotFound => not_there(),
            _ => RecordError::Io {
                path: path.display().to_string(),
                source: e,
            },
        })?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| set_member(p).is_some_and(|(b, _)| b == base))
        .collect();
    set.sort();
    if set.is_empty() {
        return Err(not_there());
    }
    Ok(set)
}

/// What a path that is not there says (after the path): no file, and no `--keep-last` set
/// named by it.
pub const NOT_THERE: &str =
    "no such file or directory (nor a --keep-last set BASE.NNNNNN.rgs by that name)";
