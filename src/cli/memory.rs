//! `--memory-limit` for the subcommands without a screen (`snapshot`, `verify`, `record`):
//! a [`MemoryGuard`] checked at most every 25 ms, with what it does said on stderr.

use std::time::{Duration, Instant};

use crate::derive::progress::memory_action;
use crate::store::{MemoryAction, MemoryGuard, Session};

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

    /// At most every 25 ms (a list brings about 10 MiB in that time): reads the resident size and applies the limit to `session`
    /// (history first). Returns the message to end with when the session cannot be kept
    /// under the limit.
    pub fn over(&mut self, session: &mut Session) -> Option<String> {
        let guard = self.guard.as_mut()?;
        let now = Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < Duration::from_millis(25))
        {
            return None;
        }
        self.last = Some(now);
        let mut resident = crate::source::process::resident_bytes()?;
        let mut action = guard.check(resident, now, session);
        if let MemoryAction::Packing { .. } = action {
            if let Some(msg) = memory_action(&action, guard.limit(), resident, &session.replica) {
                eprintln!("regscope {}: {msg}", self.what);
            }
            // Take nothing more (the source waits on its queue) until packing has caught
            // up and what it freed has left, or the guard gives up (MemoryGuard::PACK_WAIT).
            let mut released = false;
            while let MemoryAction::Packing { outstanding, .. } = action {
                session.replica.maintain();
                if outstanding == 0 && !released {
                    crate::release_free_memory();
                    released = true;
                }
                std::thread::sleep(Duration::from_millis(20));
                resident = crate::source::process::resident_bytes()?;
                action = guard.check(resident, Instant::now(), session);
            }
            self.last = Some(Instant::now());
        }
        let msg = memory_action(&action, guard.limit(), resident, &session.replica)?;
        if matches!(action, MemoryAction::Exceeded { .. }) {
            return Some(msg);
        }
        eprintln!("regscope {}: {msg}", self.what);
        None
    }
}
