//! Which processes hold a file open, so that reading a live etcd's `member/snap/db` is said
//! plainly before it is read: etcd writes the file in place (bbolt commits pages, then a
//! meta), so a reader that is not etcd may see pages of two transactions, or a page being
//! rewritten, and take a sound file for a corrupt one.
//!
//! Linux only, from procfs (proc(5)): each `/proc/PID/fd/N` is a link to an open file, and
//! `stat(2)` through it gives that file's device and inode, which are compared with the
//! target's (so a hard link, a bind mount or a relative path still match). Whatever cannot
//! be read (another user's processes without privilege, a process that exits mid-scan) is
//! skipped; the scan examines at most [`MAX_FDS`] descriptors, so it ends on any machine.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Most descriptors one scan examines (across all processes): about a second of `stat`s.
pub const MAX_FDS: usize = 1_000_000;

/// A process holding the file open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// Its process id.
    pub pid: u32,
    /// Its command name (`/proc/PID/comm`: the executable's name, at most 15 bytes), or
    /// `?` when it cannot be read.
    pub comm: String,
}

/// The processes other than this one that hold `path` open, in pid order. Empty when the
/// file cannot be stat'ed, when `/proc` cannot be read, or when nobody has it open.
pub fn holders(path: &Path) -> Vec<Holder> {
    let Ok(target) = std::fs::metadata(path) else {
        return Vec::new();
    };
    holders_of(target.dev(), target.ino(), Path::new("/proc"), MAX_FDS)
}

/// The scan behind [`holders`]: processes under `proc` with a descriptor on `(dev, ino)`,
/// examining at most `budget` descriptors.
fn holders_of(dev: u64, ino: u64, proc: &Path, budget: usize) -> Vec<Holder> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir(proc) else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|&pid| pid != me)
        .collect();
    pids.sort_unstable();
    let mut left = budget;
    let mut out = Vec::new();
    for pid in pids {
        if left == 0 {
            break;
        }
        let Ok(fds) = std::fs::read_dir(proc.join(pid.to_string()).join("fd")) else {
            continue;
        };
        let mut holds = false;
        for fd in fds.flatten() {
            if left == 0 {
                break;
            }
            left -= 1;
            // Sockets, pipes and anonymous inodes are never the file: skip their stat.
            if let Ok(link) = std::fs::read_link(fd.path()) {
                if !link.is_absolute() {
                    continue;
                }
            }
            if let Ok(m) = std::fs::metadata(fd.path()) {
                if m.dev() == dev && m.ino() == ino {
                    holds = true;
                    break;
                }
            }
        }
        if holds {
            let comm = std::fs::read_to_string(proc.join(pid.to_string()).join("comm"))
                .map(|c| c.trim_end().to_string())
                .unwrap_or_else(|_| "?".into());
            out.push(Holder { pid, comm });
        }
    }
    out
}

/// The one sentence said when a db file is open by another process (`None` when `holders`
/// is empty): what that means for the read and what to read instead.
pub fn warning(path: &Path, holders: &[Holder]) -> Option<String> {
    if holders.is_empty() {
        return None;
    }
    let who: Vec<String> = holders
        .iter()
        .map(|h| format!("{} (pid {})", h.comm, h.pid))
        .collect();
    Some(format!(
        "{} is open by {}: it changes while it is read, so what regscope reads may mix two \
         moments or look corrupt; read a copy instead: `etcdctl snapshot save copy.db` (or \
         copy the file while etcd is stopped)",
        path.display(),
        who.join(" and ")
    ))
}

/// [`warning`] for the processes that hold `path` open now.
pub fn check(path: &Path) -> Option<String> {
    warning(path, &holders(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warning_names_each_holder_and_the_way_out() {
        let h = [
            Holder {
                pid: 41,
                comm: "etcd".into(),
            },
            Holder {
                pid: 7,
                comm: "cp".into(),
            },
        ];
        let w = warning(Path::new("/d/member/snap/db"), &h).unwrap();
        assert!(
            w.starts_with("/d/member/snap/db is open by etcd (pid 41) and cp (pid 7): it changes"),
            "{w}"
        );
        assert!(w.contains("`etcdctl snapshot save copy.db`"), "{w}");
        assert_eq!(warning(Path::new("x"), &[]), None);
    }

    #[test]
    fn this_process_is_not_its_own_holder_and_a_child_is() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("db");
        std::fs::write(&p, b"x").unwrap();
        let _mine = std::fs::File::open(&p).unwrap();
        assert_eq!(holders(&p), []);
        // A child holding it open on fd 3 (sh redirects, then sleeps).
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("exec 3<\"$1\"; exec sleep 30")
            .arg("sh")
            .arg(&p)
            .spawn()
            .unwrap();
        let pid = child.id();
        // The exec of sleep happens soon after spawn: wait until the fd is there.
        let mut found = Vec::new();
        for _ in 0..200 {
            found = holders(&p);
            if found.iter().any(|h| h.comm == "sleep") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(
            found,
            [Holder {
                pid,
                comm: "sleep".into()
            }]
        );
        // A missing file has no holder.
        assert_eq!(holders(&dir.path().join("none")), []);
    }

    #[test]
    fn a_procfs_shaped_folder_is_read_within_the_budget() {
        // proc/<pid>/fd/<n> links and proc/<pid>/comm, as procfs lays them out.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("db");
        std::fs::write(&file, b"x").unwrap();
        let proc = dir.path().join("proc");
        for (pid, comm, links) in [
            ("123", "etcd\n", &["pipe:[77]", "/nonexistent", "DB"][..]),
            ("99", "other\n", &["socket:[5]"][..]),
            ("self", "x\n", &["DB"][..]),
        ] {
            let fd = proc.join(pid).join("fd");
            std::fs::create_dir_all(&fd).unwrap();
            std::fs::write(proc.join(pid).join("comm"), comm).unwrap();
            for (n, l) in links.iter().enumerate() {
                let to = if *l == "DB" { file.clone() } else { l.into() };
                std::os::unix::fs::symlink(to, fd.join(n.to_string())).unwrap();
            }
        }
        let m = std::fs::metadata(&file).unwrap();
        let found = holders_of(m.dev(), m.ino(), &proc, MAX_FDS);
        assert_eq!(
            found,
            [Holder {
                pid: 123,
                comm: "etcd".into()
            }]
        );
        // Pids in numeric order: pid 99's one descriptor spends a budget of one.
        assert_eq!(holders_of(m.dev(), m.ino(), &proc, 1), []);
        assert_eq!(holders_of(m.dev(), m.ino(), &proc, 4), found);
        assert_eq!(holders_of(m.dev(), m.ino(), &proc, 0), []);
        // A folder that is no procfs at all: nothing, and no error.
        assert_eq!(holders_of(m.dev(), m.ino(), dir.path(), MAX_FDS), []);
    }
}
