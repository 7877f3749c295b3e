//! Lag of regscope's own informers (list + watch with bookmarks through the apiserver).
//!
//! In: [`Observation::Informer`] stamped with the time it arrived, plus the replica's head
//! revision and revision→time map at that moment. Out: per resource, the lag of the newest
//! event: head − resourceVersion in revisions, and arrival time − the time the replica saw
//! that revision, in seconds; with counts of 410 Gone answers and relists.
//!
//! The head is regscope's replica of etcd, so the figure includes regscope's own etcd watch
//! lag; the panel shows that separately (etcd's current revision from `/metrics` against the
//! replica's).

use std::collections::BTreeMap;
use std::time::SystemTime;

use crate::model::{InformerWhat, Observation, Revision, Stamped};
use crate::store::Replica;

/// One resource's informer.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct InformerState {
    /// resourceVersion of the newest event or bookmark (or list).
    pub resource_version: Option<Revision>,
    /// Head − resourceVersion when the newest event arrived, in revisions (≥ 0).
    pub lag_revisions: Option<i64>,
    /// Arrival − the replica's time for that revision, in seconds (≥ 0), when the replica
    /// still holds the revision's time.
    pub lag_seconds: Option<f64>,
    /// The worst lag seen, in revisions.
    pub max_lag_revisions: i64,
    pub events: u64,
    pub bookmarks: u64,
    /// 410 Gone answers.
    pub gone_410: u64,
    /// Lists after the first.
    pub relists: u64,
    /// One line: "watching", "relisting after 410 Gone", or the newest error.
    pub state: String,
    pub last_at: Option<SystemTime>,
}

/// Every informer, keyed by `(group, resource)`.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct InformerLag {
    by_resource: BTreeMap<(String, String), InformerState>,
}

impl InformerLag {
    /// Applies an informer observation; anything else is ignored. `replica` gives the head
    /// revision at arrival. Returns true when something changed.
    pub fn apply(&mut self, st: &Stamped, replica: &Replica) -> bool {
        let Observation::Informer(obs) = &st.obs else {
            return false;
        };
        let s = self
            .by_resource
            .entry((obs.group.clone(), obs.resource.clone()))
            .or_default();
        s.last_at = Some(st.at);
        match &obs.what {
            InformerWhat::Listed {
                resource_version,
                relist,
                ..
            } => {
                if *relist {
                    s.relists += 1;
                }
                s.state = "watching".into();
                measure(s, *resource_version, st.at, replica);
            }
            InformerWhat::Event {
                resource_version,
                bookmark,
            } => {
                if *bookmark {
                    s.bookmarks += 1;
                } else {
                    s.events += 1;
                }
                s.state = "watching".into();
                measure(s, *resource_version, st.at, replica);
            }
            InformerWhat::Gone { message } => {
                s.gone_410 += 1;
                s.state = format!("relisting after 410 Gone: {message}");
            }
            InformerWhat::Error { message } => {
                s.state = format!("retrying: {message}");
            }
        }
        true
    }

    /// Informers by `(group, resource)`.
    pub fn iter(&self) -> impl Iterator<Item = (&(String, String), &InformerState)> {
        self.by_resource.iter()
    }

    pub fn get(&self, group: &str, resource: &str) -> Option<&InformerState> {
        self.by_resource
            .get(&(group.to_string(), resource.to_string()))
    }
}

fn measure(s: &mut InformerState, rv: Revision, at: SystemTime, replica: &Replica) {
    s.resource_version = Some(rv);
    let head = replica.revision();
    if head <= 0 {
        return;
    }
    let lag = (head - rv).max(0);
    s.lag_revisions = Some(lag);
    s.max_lag_revisions = s.max_lag_revisions.max(lag);
    // The time etcd wrote the first revision after rv is when the informer started to
    // be behind; at rv == head it is not behind at all.
    s.lag_seconds = if lag == 0 {
        Some(0.0)
    } else {
        replica
            .time_of(rv + 1)
            .map(|t| at.duration_since(t).map_or(0.0, |d| d.as_secs_f64()))
    };
}
