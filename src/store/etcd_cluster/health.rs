//! How healthy the watch and the members look: the anomaly counters of the watch and the
//! notes for members that stop or start answering and for the leader moving.

use serde::{Deserialize, Serialize};

use crate::model::{MemberStatus, Revision};
use crate::store::notes::Note;

/// Notes for what changed between two polls of the members: a member that stopped or
/// started answering, and the leader moving (as the members that answer name it). The
/// etcd cluster's state notes them; a replay's markers show the same.
pub fn member_changes(before: &[MemberStatus], now: &[MemberStatus]) -> Vec<Note> {
    let label = |m: &MemberStatus| {
        if m.name.is_empty() {
            format!("{:x} ({})", m.id, m.endpoint)
        } else {
            format!("{} ({})", m.name, m.endpoint)
        }
    };
    let leader = |ms: &[MemberStatus]| {
        ms.iter()
            .filter_map(|m| m.status.as_ref())
            .map(|s| s.leader)
            .find(|l| *l != 0)
    };
    let mut out = Vec::new();
    for m in now {
        let was = before.iter().find(|b| b.id == m.id);
        match (was.map(|b| b.status.is_some()), m.status.is_some()) {
            (Some(true), false) => out.push(Note::MemberStopped {
                member: label(m),
                error: m.error.as_deref().unwrap_or("no answer").to_string(),
            }),
            (Some(false), true) => out.push(Note::MemberAnswers { member: label(m) }),
            _ => {}
        }
    }
    if let (Some(a), Some(b)) = (leader(before), leader(now)) {
        if a != b {
            let name = |id: u64| {
                now.iter()
                    .chain(before)
                    .find(|m| m.id == id)
                    .map_or_else(|| format!("{id:x}"), label)
            };
            out.push(Note::LeaderMoved {
                from: name(a),
                to: name(b),
            });
        }
    }
    out
}

/// etcd's head as its watch stream announced it, and the departures from the watch
/// contract seen on it: counted, and noted in the event log at the 1st, 10th, 100th… time.
///
/// The contract (etcd's `api/v3rpc` watch docs): events come in revision order, each once;
/// a progress notification at revision N means every event up to N was sent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchHealth {
    /// The highest revision etcd named as its head: header revisions of progress
    /// notifications (applied or not) and of event responses. 0 before any. May run ahead of
    /// [`crate::store::Replica::revision`]: writes outside the prefix, or (etcd 3.4 before 3.4.25, 3.5.0–3.5.7)
    /// a progress notification sent before events still queued (etcd-io/etcd#15220).
    pub head_at_least: Revision,
    /// The highest revision announced by a progress notification (applied or not).
    pub progress_through: Revision,
    /// The highest announced head that a later progress notification confirmed with no
    /// event between the two: no event of the prefix up to it was pending (see
    /// [`crate::store::Session::synced_revision`]).
    pub quiet_through: Revision,
    /// An event was applied since the last progress notification.
    pub events_since_progress: bool,
    /// Progress notifications at a revision below the one already applied: a member that
    /// lags behind the one read before, or a server that breaks the contract.
    pub progress_behind: u64,
    /// Events that arrived after a progress notification at or above their revision: the
    /// notification ran ahead of them (etcd-io/etcd#15220, fixed in 3.4.25 and 3.5.8).
    pub progress_ahead_of_events: u64,
    /// Events at or below a revision already applied from events or a list: ignored.
    pub repeated_events: u64,
    /// DELETE events of a key the replica did not hold (nothing to show for it; the
    /// replica keeps no tombstone of a key it never saw).
    pub unknown_deletes: u64,
}

impl WatchHealth {
    /// Every departure counted, summed.
    pub fn anomalies(&self) -> u64 {
        self.progress_behind
            + self.progress_ahead_of_events
            + self.repeated_events
            + self.unknown_deletes
    }
}

/// Whether a counter just reached 1, 10, 100, … (the times worth a note).
pub(in crate::store) fn worth_noting(n: u64) -> bool {
    n > 0 && 10u64.pow(n.ilog10()) == n
}
