//! `--memory-limit` for the subcommands without a screen (`snapshot`, `verify`, `record`):
//! a [`MemoryGuard`] checked at most every 100 ms, with what it does said on stderr.

use std::time::{Duration, Instant};

use crate::store::{MemoryAction, MemoryGuard, Session};
use crate::tui::format::{bytes, thousands};

/// Checks the process against `--memory-limit` while a command fills a session.
pub struct MemoryCheck {
    guard: Option<MemoryGuard>,
    last: Option<Instant>,
    what: &'static str,
}

impl MemoryCheck {
    /// `limit` in bytes (`None`: no limit, every check passes). `what` names the command
    /// in messages (`snapshot`, `record`).
    pub fn new(limit: Option<u64>, what: &'static str) -> Self {
        Self {
            guard: limit.map(MemoryGuard::new),
            last: None,
            what,
        }
    }

    /// At most every 100 ms: reads the resident size and applies the limit to `session`
    /// (history first). Returns the message to end with when the session cannot be kept
    /// under the limit.
    pub fn over(&mut self, session: &mut Session) -> Option<String> {
        let guard = self.guard.as_mut()?;
        let now = Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < Duration::from_millis(100))
        {
            return None;
        }
        self.last = Some(now);
        let resident = crate::source::process::resident_bytes()?;
        let limit = bytes(guard.limit());
        match guard.check(resident, now, session) {
            MemoryAction::Fine => None,
            MemoryAction::HistoryLowered { from, to } => {
                eprintln!(
                    "regscope {}: --memory-limit {limit}: resident {}; history budget lowered from {} to {}",
                    self.what,
                    bytes(resident),
                    bytes(from as u64),
                    bytes(to as u64)
                );
                None
            }
            MemoryAction::Exceeded { resident } => {
                let r = &session.replica;
                let at = match r.list_progress().filter(|p| !p.done) {
                    Some(p) => format!(
                        "while listing ({} of {} keys at revision {})",
                        thousands(p.keys),
                        p.expected_keys.map_or("?".into(), thousands),
                        p.revision
                    ),
                    None => format!("at revision {}", r.revision()),
                };
                Some(format!(
                    "--memory-limit {limit} reached with no history to drop: {} keys ({}) take {} resident {at}. Raise --memory-limit or narrow --prefix.",
                    thousands(r.live_keys()),
                    bytes(r.live_bytes()),
                    bytes(resident),
                ))
            }
        }
    }
}
