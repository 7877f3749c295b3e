//! A long list's progress on stderr, for the subcommands that have no screen (`snapshot`,
//! `verify`, `record`): what [`crate::store::ListProgress`] says, at most once a second.
//!
//! Nothing is printed for a list that takes less than a second, so scripts that run these
//! against small clusters see no change. On a terminal one line is rewritten in place; to a
//! file or pipe (`record` under systemd or nohup) a line goes every 5 seconds.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::derive::progress::list_progress;
use crate::store::ListProgress;

/// Throttled stderr reporter of one command's lists. Feed it after every observation.
pub struct StderrProgress {
    what: &'static str,
    done: &'static str,
    tty: bool,
    started: Option<Instant>,
    printed: Option<Instant>,
    /// The revision and key count of the list whose last line was printed.
    finished: Option<(i64, u64)>,
    /// A terminal line is on screen without its newline.
    pending: bool,
}

impl StderrProgress {
    /// `what` names the list in each line while it runs (`listing`), `done` in its last
    /// line (`listed`).
    pub fn new(what: &'static str, done: &'static str) -> Self {
        Self {
            what,
            done,
            tty: std::io::stderr().is_terminal(),
            started: None,
            printed: None,
            finished: None,
            pending: false,
        }
    }

    /// Prints a line when one is due for `progress` (the newest list's, or none).
    pub fn update(&mut self, progress: Option<&ListProgress>) {
        let Some(p) = progress else { return };
        let now = Instant::now();
        if p.done {
            let id = (p.revision, p.keys);
            if self.printed.is_some() && self.finished != Some(id) {
                self.finished = Some(id);
                self.line(&format!("{} {}", self.done, list_progress(p)), true);
            }
            self.started = None;
            self.printed = None;
            return;
        }
        let started = *self.started.get_or_insert(now);
        let every = if self.tty {
            Duration::from_secs(1)
        } else {
            Duration::from_secs(5)
        };
        let due = match self.printed {
            None => now.duration_since(started) >= Duration::from_secs(1),
            Some(t) => now.duration_since(t) >= every,
        };
        if due {
            self.printed = Some(now);
            self.line(&format!("{} {}", self.what, list_progress(p)), false);
        }
    }

    fn line(&mut self, text: &str, last: bool) {
        let mut e = std::io::stderr().lock();
        let _ = if self.tty {
            // \r and erase-to-end-of-line: one line rewritten in place.
            write!(
                e,
                "\rregscope: {text}\x1b[K{}",
                if last { "\n" } else { "" }
            )
        } else {
            writeln!(e, "regscope: {text}")
        };
        self.pending = self.tty && !last;
        let _ = e.flush();
    }

    /// Erases the progress line on a terminal, before another message goes to stderr.
    pub fn interrupt(&mut self) {
        if self.pending {
            self.pending = false;
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[K");
            let _ = e.flush();
        }
    }
}

impl Drop for StderrProgress {
    /// A line left on a terminal gets its newline, so what follows starts on its own.
    fn drop(&mut self) {
        if self.pending {
            let _ = writeln!(std::io::stderr());
        }
    }
}
