//! Live, paused and replay as one cursor over one session, and what the console asks of
//! the loop that owns the sources, the recorder and the player.
//!
//! The loop sets the replay's timeline, the recording indicator and the memory figure
//! here; [`crate::tui::App`] turns keys into [`Request`]s, which the loop takes
//! after each key and performs (start a recording, seek, step).

use std::time::SystemTime;

use crate::model::Stamped;
use crate::record::seek::SeekTo;
use crate::record::{Bookmark, Marker, RevisionTimeline};

/// Live, paused and replay as one cursor over one session: live, the cursor follows the
/// newest observation; paused, it stays where it was while observations queue behind it
/// (the recorder still writes them); in replay the player moves it (play, speed, seek).
#[derive(Debug, Default)]
pub struct Cursor {
    /// The view is frozen at the cursor.
    pub paused: bool,
    /// Live observations that arrived while paused, applied on resume.
    pub(crate) backlog: std::collections::VecDeque<Stamped>,
    /// `Some` in replay: the timeline.
    pub replay: Option<ReplayStatus>,
}

impl Cursor {
    /// Most observations held back while paused live (about a minute of the heaviest
    /// write rate measured); past it the pause ends by itself, with a warning.
    pub const BACKLOG_LIMIT: usize = 2_000_000;

    /// Observations waiting behind a live pause.
    pub fn backlog(&self) -> usize {
        self.backlog.len()
    }
}

/// Replay speed: a multiple of real time, or as fast as the machine can apply.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Speed {
    /// Times real time (1 to 1000).
    Times(u32),
    /// No waiting between observations.
    Max,
}

impl Speed {
    /// The speeds `+` and `-` step through.
    pub const STEPS: [Speed; 7] = [
        Speed::Times(1),
        Speed::Times(2),
        Speed::Times(5),
        Speed::Times(10),
        Speed::Times(100),
        Speed::Times(1000),
        Speed::Max,
    ];

    /// The next faster (`up`) or slower speed, staying at the ends.
    pub fn step(self, up: bool) -> Speed {
        let i = Self::STEPS.iter().position(|s| *s == self).unwrap_or(0);
        let j = if up {
            (i + 1).min(Self::STEPS.len() - 1)
        } else {
            i.saturating_sub(1)
        };
        Self::STEPS[j]
    }

    /// `1×`, `1000×`, `max`.
    pub fn label(self) -> String {
        match self {
            Speed::Times(n) => format!("{n}×"),
            Speed::Max => "max".into(),
        }
    }

    /// Over etcd's db file, where play steps through revisions (`n` a second at `n×`):
    /// `1 rev/s`, `1000 rev/s`, `max`.
    pub fn revisions_label(self) -> String {
        match self {
            Speed::Times(n) => format!("{n} rev/s"),
            Speed::Max => "max".into(),
        }
    }
}

/// The replay's timeline, as the header shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayStatus {
    /// The recording's path, for the header.
    pub file: String,
    /// First and last observation time in the recording.
    pub start: SystemTime,
    pub end: SystemTime,
    /// Observations in the recording, and the cursor's position among them.
    pub total: u64,
    pub position: u64,
    pub speed: Speed,
    /// The recording was made with `--show-secrets`: Secret data is in it.
    pub secrets_shown: bool,
    /// What was lost to damage, one line (empty when the file is whole).
    pub damage: String,
    /// The marker the cursor last passed or jumped to, one line.
    pub marker: Option<String>,
    /// Every marker of the recording ([`crate::record::Player::complete_markers`]), for
    /// the ticks on the timeline; `None` until they are read (on a thread of their own).
    pub markers: Option<std::sync::Arc<Vec<Marker>>>,
    /// `Some` over etcd's db file ([`crate::record::Player::revision_timeline`]): the
    /// timeline runs over its revisions, `start`..`end` above are both the file's
    /// modification time, and no time is shown as a revision's.
    pub revisions: Option<RevisionTimeline>,
}

/// The recording indicator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordingStatus {
    pub path: String,
    pub bytes: u64,
}

/// regscope's own memory, for the header: resident bytes (read once a second by the loop)
/// and the `--memory-limit`, when one is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryStatus {
    pub resident: u64,
    pub limit: Option<u64>,
    /// Values held packed in memory: (their raw bytes, the bytes they take), when any are
    /// (see [`crate::store::ReplicaMemory`]).
    pub packed: Option<(u64, u64)>,
}

/// Something the app asks of the loop that owns the sources, the recorder or the player.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    StartRecording,
    StopRecording,
    Seek(SeekTo),
    /// Apply exactly one more observation (replay).
    Step,
    /// Jump to the next (`true`) or previous marker.
    Marker(bool),
    /// A one-line answer to what the user just typed (a seek that cannot be read): shown
    /// where replay shows its messages, replaced by the next.
    Notice(String),
    /// Save a bookmark beside the replayed recording (the one write a replay makes).
    Bookmark(Bookmark),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_steps_stop_at_the_ends() {
        assert_eq!(Speed::Times(1).step(false), Speed::Times(1));
        assert_eq!(Speed::Times(1).step(true), Speed::Times(2));
        assert_eq!(Speed::Times(1000).step(true), Speed::Max);
        assert_eq!(Speed::Max.step(true), Speed::Max);
        assert_eq!(Speed::Max.step(false), Speed::Times(1000));
    }
}
