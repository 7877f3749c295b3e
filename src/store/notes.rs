//! The session's notes: what happened to the stream that no key shows (a resync after a
//! compaction, a failover, an alarm, a member that stopped answering, etcd replaced), one
//! line each with the time it happened, for the event log, the replay markers and
//! `snapshot --json`. The replica and the etcd cluster's state both write them.

use std::collections::VecDeque;
use std::time::SystemTime;

/// Notes kept at most (the oldest go first).
const NOTES_CAP: usize = 200;

/// The newest [`NOTES_CAP`] notes, oldest first: (when, the line).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Notes {
    pub(in crate::store) lines: VecDeque<(SystemTime, String)>,
}

impl Notes {
    /// Appends a note, dropping the oldest past the cap.
    pub fn push(&mut self, at: SystemTime, line: String) {
        if self.lines.len() == NOTES_CAP {
            self.lines.pop_front();
        }
        self.lines.push_back((at, line));
    }

    /// Every note held, oldest first.
    pub fn lines(&self) -> &VecDeque<(SystemTime, String)> {
        &self.lines
    }
}
