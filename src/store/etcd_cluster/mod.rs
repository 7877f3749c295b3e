//! The state of the etcd cluster the replica reads, as the source saw it: the connection
//! and its outages, the member read from and each failover, every member's Status answer,
//! etcd's alarms, its cluster id and each time it was replaced, and how its watch stream
//! kept the watch contract ([`WatchHealth`]).
//!
//! In: the session hands it the observations about etcd itself
//! ([`crate::model::Observation::Conn`], `Server`, `EtcdStatus`, `Members`), tells it when
//! the source reset the replica and when a list completed, and lends its [`WatchHealth`] to
//! the replica while events and progress notifications apply. Out: read by the header,
//! the etcd panel, `snapshot --json` and the replay markers. What it writes to the
//! session's [`Notes`] is what those show as the line of an event.

mod health;

use std::collections::VecDeque;
use std::time::SystemTime;

pub(in crate::store) use health::worth_noting;
pub use health::{member_changes, WatchHealth};

use super::notes::{Note, Notes};
use super::replica::{ConnectionSummary, Replacement};
use crate::model::{ConnState, EtcdStatus, MemberStatus, Observation, Revision, Stamped};

/// Failovers and replacements kept at most (the oldest go first).
const KEPT: usize = 64;

/// See the module docs. Saved in checkpoints inside the replica's part, in the field order
/// checkpoints have always had (see `store::replica::checkpoint`).
#[derive(Debug)]
pub struct EtcdCluster {
    pub(in crate::store) conn: ConnState,
    /// (endpoint, etcd server version) of the current connection.
    pub(in crate::store) server: Option<(String, String)>,
    /// When the connection was last lost (the first state other than watching or listing
    /// after watching), while it stays lost (checkpoint format 7 and later).
    pub(in crate::store) outage_since: Option<SystemTime>,
    /// etcd's cluster id as the newest `Server` observation gave it, and as of the newest
    /// completed list (0: unknown; checkpoint format 7 and later).
    pub(in crate::store) cluster_ids: (u64, u64),
    /// Each time etcd was replaced (checkpoint format 7 and later).
    pub(in crate::store) replacements: Vec<Replacement>,
    /// What etcd's watch stream said about its head and where it broke the rules clients
    /// rely on (checkpoint format 3 and later; older checkpoints start it empty).
    pub(in crate::store) watch: WatchHealth,
    /// etcd's latest Status answer and when it came (checkpoint format 3 and later).
    pub(in crate::store) etcd_status: Option<(SystemTime, EtcdStatus)>,
    /// Each time the source went on reading from another member: when, from which endpoint,
    /// to which (the newest 64; checkpoint format 3 and later).
    pub(in crate::store) failovers: VecDeque<(SystemTime, String, String)>,
    /// The cluster's members and their Status answers, as last polled, and when
    /// (checkpoint format 4 and later).
    pub(in crate::store) members: Option<(SystemTime, Vec<MemberStatus>)>,
}

impl Default for EtcdCluster {
    fn default() -> Self {
        EtcdCluster {
            conn: ConnState::Connecting,
            server: None,
            outage_since: None,
            cluster_ids: (0, 0),
            replacements: Vec::new(),
            watch: WatchHealth::default(),
            etcd_status: None,
            failovers: VecDeque::new(),
            members: None,
        }
    }
}

impl EtcdCluster {
    /// Applies an observation about etcd itself (connection, server, status, members);
    /// any other observation changes nothing here.
    pub(in crate::store) fn apply(&mut self, st: &Stamped, notes: &mut Notes) {
        match &st.obs {
            Observation::EtcdStatus(s) => {
                let before = self
                    .etcd_status
                    .as_ref()
                    .map(|(_, s)| s.alarms())
                    .unwrap_or_default();
                let now = s.alarms();
                if now != before {
                    let n = if now.is_empty() {
                        Note::AlarmsCleared { were: before }
                    } else {
                        Note::AlarmRaised {
                            alarms: now,
                            errors: s.errors.join("; ").trim().to_string(),
                        }
                    };
                    notes.push(st.at, n);
                }
                self.etcd_status = Some((st.at, s.clone()));
            }
            Observation::Members(now) => {
                let before = self.members.take().map(|(_, m)| m).unwrap_or_default();
                for n in member_changes(&before, now) {
                    notes.push(st.at, n);
                }
                self.members = Some((st.at, now.clone()));
            }
            Observation::Conn(c) => {
                match c {
                    ConnState::Watching | ConnState::Listing { .. } | ConnState::File => {
                        self.outage_since = None
                    }
                    ConnState::NotResponding { since } => {
                        self.outage_since = Some(self.outage_since.unwrap_or(*since))
                    }
                    // Connecting is also the very first state: an outage only after a
                    // connection was had.
                    ConnState::Connecting if self.server.is_none() => {}
                    _ => self.outage_since = Some(self.outage_since.unwrap_or(st.at)),
                }
                self.conn = c.clone()
            }
            Observation::Server {
                endpoint,
                version,
                cluster_id,
            } => {
                if *cluster_id != 0 {
                    self.cluster_ids.0 = *cluster_id;
                }
                if let Some((before, _)) = self.server.as_ref().filter(|(e, _)| e != endpoint) {
                    let before = before.clone();
                    notes.push(
                        st.at,
                        Note::Failover {
                            from: before.clone(),
                            to: endpoint.clone(),
                        },
                    );
                    if self.failovers.len() == KEPT {
                        self.failovers.pop_front();
                    }
                    self.failovers.push_back((st.at, before, endpoint.clone()));
                }
                self.server = Some((endpoint.clone(), version.clone()));
            }
            _ => {}
        }
    }

    /// Records that the source found etcd replaced (a reset of the replica) at `at`, when
    /// the replica stood at `revision_before`. The `Server` observation before the reset
    /// brought the new cluster id; the old one is the id as of the last list. What was said
    /// of the old etcd goes with it: its watch's head and anomalies, its Status answer, its
    /// members (the new etcd's first poll is then no change of leader) and the failovers
    /// between its members. The connection, the server read and the replacements stay.
    pub(in crate::store) fn replaced(
        &mut self,
        at: SystemTime,
        reason: &str,
        revision_before: Revision,
    ) -> &Replacement {
        self.watch = WatchHealth::default();
        self.etcd_status = None;
        self.members = None;
        self.failovers.clear();
        let (now_id, before_id) = self.cluster_ids;
        if self.replacements.len() == KEPT {
            self.replacements.remove(0);
        }
        self.replacements.push(Replacement {
            at,
            endpoint: self
                .server
                .as_ref()
                .map_or(String::new(), |(e, _)| e.clone()),
            cluster_id_before: before_id,
            cluster_id_after: now_id,
            revision_before,
            revision_after: None,
            reason: reason.to_string(),
        });
        self.replacements.last().expect("just pushed")
    }

    /// Records a completed list at `revision`: its cluster id is now the one of the last
    /// list, and a replacement waiting for the new etcd's revision gets it (returned).
    pub(in crate::store) fn listed(&mut self, revision: Revision) -> Option<&Replacement> {
        self.cluster_ids.1 = self.cluster_ids.0;
        let r = self
            .replacements
            .last_mut()
            .filter(|r| r.revision_after.is_none())?;
        r.revision_after = Some(revision);
        Some(r)
    }

    /// etcd's cluster id (from the response headers of the etcd read), `None` before one
    /// was seen.
    pub fn cluster_id(&self) -> Option<u64> {
        Some(self.cluster_ids.0).filter(|id| *id != 0)
    }

    /// Each change of the member read from: (when, from endpoint, to endpoint), oldest
    /// first (the newest 64).
    pub fn failovers(&self) -> &VecDeque<(SystemTime, String, String)> {
        &self.failovers
    }

    /// Every member of the cluster with its own Status answer (or why none), as last
    /// polled, and when; `None` before the first poll.
    pub fn members(&self) -> Option<&(SystemTime, Vec<MemberStatus>)> {
        self.members.as_ref()
    }

    /// etcd's latest `Maintenance.Status` answer (sizes, raft position, alarms) and when
    /// it came; `None` before the first.
    pub fn etcd_status(&self) -> Option<&(SystemTime, EtcdStatus)> {
        self.etcd_status.as_ref()
    }

    /// etcd's head revision as far as its watch stream told, and the departures from the
    /// watch contract seen (see [`WatchHealth`]).
    pub fn watch_health(&self) -> &WatchHealth {
        &self.watch
    }

    /// Each time etcd was replaced under regscope, oldest first (at most 64).
    pub fn replacements(&self) -> &[Replacement] {
        &self.replacements
    }

    /// When the connection to etcd was lost, while it is (see [`EtcdCluster::conn`]).
    pub fn outage_since(&self) -> Option<SystemTime> {
        self.outage_since
    }

    /// The source's connection to etcd as last reported.
    pub fn conn(&self) -> &ConnState {
        &self.conn
    }

    /// (endpoint, etcd server version) of the current connection.
    pub fn server(&self) -> Option<(&str, &str)> {
        self.server.as_ref().map(|(a, b)| (a.as_str(), b.as_str()))
    }

    /// The connection as `snapshot --json` gives it.
    pub fn connection_summary(&self) -> ConnectionSummary {
        ConnectionSummary {
            state: match &self.conn {
                ConnState::Connecting => "connecting",
                ConnState::Listing { .. } => "listing",
                ConnState::Watching => "watching",
                ConnState::File => "file",
                ConnState::NotResponding { .. } => "not_responding",
                ConnState::Reconnecting { .. } => "reconnecting",
                ConnState::Failed { .. } => "failed",
            },
            lost_since: self.outage_since,
            error: match &self.conn {
                ConnState::Reconnecting { error, .. } | ConnState::Failed { error } => {
                    Some(error.clone())
                }
                _ => None,
            },
        }
    }
}
