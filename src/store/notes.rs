//! The session's notes: what happened to the stream that no key shows (a resync after a
//! compaction, a departure from the watch contract, a failover, an alarm, a member that
//! stopped answering, etcd replaced), each a [`Note`] — a kind and its fields — with the
//! time it happened. The replica and the etcd cluster's state write them; the event log,
//! the key screen and the replay markers render them ([`Note`]'s `Display` is the one
//! wording).

use std::collections::VecDeque;
use std::fmt;
use std::time::SystemTime;

use serde::{Deserialize, Deserializer, Serialize};

use super::replica::Replacement;
use crate::model::Revision;

/// Notes kept at most (the oldest go first).
const NOTES_CAP: usize = 200;

/// One note. Saved in checkpoints from format 8; older checkpoints held the rendered
/// line, read back as [`Note::Text`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Note {
    /// A line as it came: a source's note ([`crate::model::Observation::Note`]), the
    /// source's reason for a reset, or a note of a checkpoint older than format 8.
    Text(String),
    /// A relist after the watch's revision was compacted: revisions `from..=to` were not
    /// seen one by one.
    Resync {
        from: Revision,
        to: Revision,
        compact_revision: Revision,
    },
    /// An event at or below a revision already applied, ignored (`count` so far).
    RepeatedEvent {
        revision: Revision,
        applied_through: Revision,
        count: u64,
    },
    /// A progress notification that announced `progress` before the event at `event`
    /// (etcd-io/etcd#15220: etcd 3.4 before 3.4.25, 3.5 before 3.5.8).
    ProgressAheadOfEvent {
        progress: Revision,
        event: Revision,
        count: u64,
    },
    /// A progress notification below the revision already applied.
    ProgressBehind {
        revision: Revision,
        applied: Revision,
        count: u64,
    },
    /// A DELETE of a key the replica did not hold (`key` escaped for display).
    UnknownDelete {
        key: String,
        revision: Revision,
        count: u64,
    },
    /// etcd raised alarms (`errors`: its Status answer's errors, joined).
    AlarmRaised { alarms: Vec<String>, errors: String },
    /// etcd's alarms cleared (`were` raised before).
    AlarmsCleared { were: Vec<String> },
    /// A member (named with its endpoint) stopped answering its Status poll.
    MemberStopped { member: String, error: String },
    /// A member answers its Status poll again.
    MemberAnswers { member: String },
    /// etcd's leader moved (members named with their endpoints).
    LeaderMoved { from: String, to: String },
    /// The source went on reading from another member.
    Failover { from: String, to: String },
    /// etcd was replaced under regscope, once the new etcd's list is done.
    Replaced(Replacement),
}

impl Note {
    /// The kind's name, as `snapshot --json` gives it.
    pub fn kind(&self) -> &'static str {
        match self {
            Note::Text(_) => "text",
            Note::Resync { .. } => "resync",
            Note::RepeatedEvent { .. } => "repeated_event",
            Note::ProgressAheadOfEvent { .. } => "progress_ahead_of_event",
            Note::ProgressBehind { .. } => "progress_behind",
            Note::UnknownDelete { .. } => "unknown_delete",
            Note::AlarmRaised { .. } => "alarm_raised",
            Note::AlarmsCleared { .. } => "alarms_cleared",
            Note::MemberStopped { .. } => "member_stopped",
            Note::MemberAnswers { .. } => "member_answers",
            Note::LeaderMoved { .. } => "leader_moved",
            Note::Failover { .. } => "failover",
            Note::Replaced(_) => "replaced",
        }
    }

    /// Whether the note is of a departure from etcd's watch contract (those the replay
    /// markers show with the count that grew).
    pub fn is_watch_anomaly(&self) -> bool {
        matches!(
            self,
            Note::RepeatedEvent { .. }
                | Note::ProgressAheadOfEvent { .. }
                | Note::ProgressBehind { .. }
                | Note::UnknownDelete { .. }
        )
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::Text(t) => f.write_str(t),
            Note::Resync {
                from,
                to,
                compact_revision,
            } => write!(
                f,
                "resync after compaction: revisions {from}..{to} not seen one by one (etcd compacted at {compact_revision})"
            ),
            Note::RepeatedEvent {
                revision,
                applied_through,
                count,
            } => write!(
                f,
                "etcd sent an event at revision {revision} again (already applied through {applied_through}); ignored ({count} so far)"
            ),
            Note::ProgressAheadOfEvent {
                progress,
                event,
                count,
            } => write!(
                f,
                "etcd announced revision {progress} in a progress notification before the event at {event} (etcd-io/etcd#15220: etcd 3.4 < 3.4.25, 3.5 < 3.5.8); {count} so far"
            ),
            Note::ProgressBehind {
                revision,
                applied,
                count,
            } => write!(
                f,
                "etcd sent a progress notification at revision {revision}, below revision {applied} already applied (a lagging member, or a server bug); {count} so far"
            ),
            Note::UnknownDelete {
                key,
                revision,
                count,
            } => write!(
                f,
                "etcd deleted {key} at revision {revision}, a key the replica did not hold; {count} so far"
            ),
            Note::AlarmRaised { alarms, errors } => {
                write!(f, "etcd raised alarm {} ({})", alarms.join(", "), errors)
            }
            Note::AlarmsCleared { were } => {
                write!(f, "etcd's alarms cleared (were {})", were.join(", "))
            }
            Note::MemberStopped { member, error } => {
                write!(f, "etcd member {member} stopped answering: {error}")
            }
            Note::MemberAnswers { member } => write!(f, "etcd member {member} answers again"),
            Note::LeaderMoved { from, to } => {
                write!(f, "etcd's leader moved from {from} to {to}")
            }
            Note::Failover { from, to } => write!(f, "failover: reading from {to} (was {from})"),
            Note::Replaced(r) => f.write_str(&r.describe()),
        }
    }
}

/// The newest [`NOTES_CAP`] notes, oldest first: (when, the note).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Notes {
    pub(in crate::store) lines: VecDeque<(SystemTime, Note)>,
}

impl Notes {
    /// Appends a note, dropping the oldest past the cap.
    pub fn push(&mut self, at: SystemTime, note: Note) {
        if self.lines.len() == NOTES_CAP {
            self.lines.pop_front();
        }
        self.lines.push_back((at, note));
    }

    /// Every note held, oldest first.
    pub fn lines(&self) -> &VecDeque<(SystemTime, Note)> {
        &self.lines
    }
}

/// `deserialize_with` for the notes of a checkpoint: typed from format 8, the rendered
/// lines of older formats as [`Note::Text`].
pub(in crate::store) fn by_format<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<VecDeque<(SystemTime, Note)>, D::Error> {
    if super::shared_bytes::format() >= 8 {
        VecDeque::deserialize(d)
    } else {
        let lines = VecDeque::<(SystemTime, String)>::deserialize(d)?;
        Ok(lines.into_iter().map(|(t, l)| (t, Note::Text(l))).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::shared_bytes::restore_from;
    use bytes::Bytes;
    use std::time::{Duration, UNIX_EPOCH};

    #[derive(Serialize, Deserialize)]
    struct Held {
        #[serde(deserialize_with = "by_format")]
        notes: VecDeque<(SystemTime, Note)>,
    }

    #[test]
    fn notes_of_format_7_read_as_their_lines_and_format_8_keeps_kinds() {
        let at = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let line =
            "resync after compaction: revisions 6..13 not seen one by one (etcd compacted at 9)";
        let old = postcard::to_stdvec(&(VecDeque::from([(at, line.to_string())]),)).unwrap();
        let read: Held = restore_from(&Bytes::from(old), 7, |b| postcard::from_bytes(b).unwrap());
        assert_eq!(read.notes, [(at, Note::Text(line.into()))]);

        let typed = Note::Resync {
            from: 6,
            to: 13,
            compact_revision: 9,
        };
        assert_eq!(typed.to_string(), line);
        let new = postcard::to_stdvec(&Held {
            notes: VecDeque::from([(at, typed.clone())]),
        })
        .unwrap();
        let read: Held = restore_from(&Bytes::from(new), 8, |b| postcard::from_bytes(b).unwrap());
        assert_eq!(read.notes, [(at, typed)]);
    }
}
