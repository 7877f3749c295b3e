//! The other etcd clusters of kube-apiserver (`--etcd-servers-overrides`, e.g. Events in
//! their own etcd): each with its own revisions, counted from the watcher's reports
//! ([`crate::model::OtherClusterObs`]), not replicated. Their keys and values are not held:
//! what an operator asks of an events etcd during an incident is whether it is up, how fast
//! its revision climbs and how many events are written and expire (an Event is stored with
//! a lease, its TTL, `--event-ttl`, 1 h by default, so expiries arrive as deletes).

use std::collections::VecDeque;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::model::{unix_second, OtherClusterObs, OtherClusterWhat, Revision};

/// Seconds of per-second samples kept for the rates (one more than the longest window).
const SAMPLES: usize = 61;

/// Counts at the end of one second (cumulative since the session started).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Sample {
    /// Unix seconds.
    second: u64,
    revision: Revision,
    puts: u64,
    deletes: u64,
    bytes: u64,
}

/// One other etcd cluster as its watcher last reported it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtherCluster {
    /// The resources kept there, as `--etcd-servers-overrides` names them (`/events`).
    pub resources: String,
    /// The member that answered last, its etcd version and the cluster's ID (empty, empty,
    /// 0 before the first connection).
    pub endpoint: String,
    pub version: String,
    pub cluster_id: u64,
    /// Connected now.
    pub up: bool,
    /// Why not, while down.
    pub error: Option<String>,
    /// When the watcher last went up or down.
    pub since: Option<SystemTime>,
    /// Head revision (the newest of the Status answers and watch response headers).
    pub revision: Revision,
    /// Backend file size (bytes) at the last Status answer.
    pub db_size: i64,
    /// Keys under the prefix: etcd's count at the last Status, plus creates minus deletes
    /// watched since.
    pub keys: u64,
    /// Watched since the session started: puts, deletes and bytes of keys and values put.
    pub puts: u64,
    pub deletes: u64,
    pub bytes: u64,
    /// Times its history was replaced (a new cluster ID or a lower head revision).
    pub rebuilt: u64,
    samples: VecDeque<Sample>,
}

/// Rates over a window (per second).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OtherClusterRates {
    pub revisions: f64,
    pub puts: f64,
    pub deletes: f64,
    pub bytes: f64,
}

impl OtherCluster {
    fn apply(&mut self, at: SystemTime, what: &OtherClusterWhat) {
        match what {
            OtherClusterWhat::Up {
                endpoint,
                version,
                cluster_id,
                revision,
                db_size,
                keys,
            } => {
                if !self.up {
                    self.since = Some(at);
                }
                // A new cluster ID, or a head below the one seen: the cluster was rebuilt
                // or restored from a snapshot. Its revisions start again; so do the rates.
                let rebuilt = (self.cluster_id != 0 && *cluster_id != self.cluster_id)
                    || *revision < self.revision;
                if rebuilt {
                    self.revision = *revision;
                    self.samples.clear();
                    self.rebuilt += 1;
                }
                self.up = true;
                self.error = None;
                self.endpoint.clone_from(endpoint);
                self.version.clone_from(version);
                self.cluster_id = *cluster_id;
                self.revision = self.revision.max(*revision);
                self.db_size = *db_size;
                self.keys = *keys;
            }
            OtherClusterWhat::Down { error } => {
                if self.up || self.since.is_none() {
                    self.since = Some(at);
                }
                self.up = false;
                self.error = Some(error.clone());
            }
            OtherClusterWhat::Writes {
                revision,
                puts,
                creates,
                deletes,
                bytes,
            } => {
                self.revision = self.revision.max(*revision);
                self.puts += puts;
                self.deletes += deletes;
                self.bytes += bytes;
                self.keys = (self.keys + creates).saturating_sub(*deletes);
            }
        }
        self.sample(at);
    }

    /// Keeps the counts at the end of `at`'s second.
    fn sample(&mut self, at: SystemTime) {
        let s = Sample {
            second: unix_second(at),
            revision: self.revision,
            puts: self.puts,
            deletes: self.deletes,
            bytes: self.bytes,
        };
        match self.samples.back_mut() {
            Some(last) if last.second >= s.second => {
                *last = Sample {
                    second: last.second,
                    ..s
                }
            }
            _ => {
                self.samples.push_back(s);
                if self.samples.len() > SAMPLES {
                    self.samples.pop_front();
                }
            }
        }
    }

    /// Rates over the `window` seconds before `now` (at most 60), or over the seconds
    /// observed when fewer; zero when nothing was observed for a second or more.
    pub fn rates(&self, now: SystemTime, window: u64) -> OtherClusterRates {
        let now_s = unix_second(now);
        let (Some(first), Some(last)) = (self.samples.front(), self.samples.back()) else {
            return OtherClusterRates::default();
        };
        let from = now_s.saturating_sub(window.clamp(1, SAMPLES as u64 - 1));
        // The counts at `from`: the newest sample at or before it, else the oldest kept.
        let base = self
            .samples
            .iter()
            .rev()
            .find(|s| s.second <= from)
            .unwrap_or(first);
        let secs = now_s.saturating_sub(base.second.max(from)).max(1) as f64;
        let d = |a: u64, b: u64| a.saturating_sub(b) as f64 / secs;
        OtherClusterRates {
            revisions: (last.revision - base.revision).max(0) as f64 / secs,
            puts: d(last.puts, base.puts),
            deletes: d(last.deletes, base.deletes),
            bytes: d(last.bytes, base.bytes),
        }
    }
}

/// Every other etcd cluster reported, in the order first reported.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtherClusters {
    clusters: Vec<OtherCluster>,
}

impl OtherClusters {
    /// Applies one report stamped `at`.
    pub fn apply(&mut self, at: SystemTime, obs: &OtherClusterObs) {
        let i = match self
            .clusters
            .iter()
            .position(|c| c.resources == obs.resources)
        {
            Some(i) => i,
            None => {
                self.clusters.push(OtherCluster {
                    resources: obs.resources.clone(),
                    ..OtherCluster::default()
                });
                self.clusters.len() - 1
            }
        };
        self.clusters[i].apply(at, &obs.what);
    }

    /// The clusters, in the order first reported.
    pub fn all(&self) -> &[OtherCluster] {
        &self.clusters
    }

    pub fn is_empty(&self) -> bool {
        self.clusters.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn at(s: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_700_000_000 + s)
    }

    fn obs(what: OtherClusterWhat) -> OtherClusterObs {
        OtherClusterObs {
            resources: "/events".into(),
            what,
        }
    }

    fn up(revision: Revision, keys: u64) -> OtherClusterWhat {
        OtherClusterWhat::Up {
            endpoint: "https://10.0.0.5:2379".into(),
            version: "3.5.12".into(),
            cluster_id: 7,
            revision,
            db_size: 1 << 20,
            keys,
        }
    }

    fn writes(revision: Revision, puts: u64, creates: u64, deletes: u64) -> OtherClusterWhat {
        OtherClusterWhat::Writes {
            revision,
            puts,
            creates,
            deletes,
            bytes: puts * 100,
        }
    }

    #[test]
    fn up_writes_and_down_are_counted_with_their_times() {
        let mut c = OtherClusters::default();
        c.apply(at(0), &obs(up(100, 10)));
        c.apply(at(1), &obs(writes(104, 4, 3, 1)));
        let e = &c.all()[0];
        assert!(e.up);
        assert_eq!(e.since, Some(at(0)));
        assert_eq!(
            (e.revision, e.keys, e.puts, e.deletes, e.bytes),
            (104, 12, 4, 1, 400)
        );
        c.apply(
            at(5),
            &obs(OtherClusterWhat::Down {
                error: "connection refused".into(),
            }),
        );
        let e = &c.all()[0];
        assert!(!e.up);
        assert_eq!(e.since, Some(at(5)));
        assert_eq!(e.error.as_deref(), Some("connection refused"));
        // Still down: the time it went down stays.
        c.apply(
            at(7),
            &obs(OtherClusterWhat::Down {
                error: "timeout".into(),
            }),
        );
        assert_eq!(c.all()[0].since, Some(at(5)));
        // Back up: etcd's count replaces the one kept from the watch.
        c.apply(at(9), &obs(up(110, 20)));
        let e = &c.all()[0];
        assert!(e.up && e.error.is_none());
        assert_eq!((e.since, e.keys, e.revision), (Some(at(9)), 20, 110));
        // Another override is another cluster.
        c.apply(
            at(9),
            &OtherClusterObs {
                resources: "coordination.k8s.io/leases".into(),
                what: up(5, 1),
            },
        );
        assert_eq!(c.all().len(), 2);
    }

    #[test]
    fn a_rebuilt_cluster_starts_its_revisions_again() {
        let mut c = OtherClusters::default();
        c.apply(at(0), &obs(up(500, 10)));
        c.apply(at(1), &obs(writes(510, 10, 10, 0)));
        // The same cluster ID, a lower head: restored from a snapshot.
        c.apply(at(5), &obs(up(40, 3)));
        let e = &c.all()[0];
        assert_eq!((e.revision, e.keys, e.rebuilt), (40, 3, 1));
        c.apply(at(6), &obs(writes(45, 5, 5, 0)));
        assert_eq!(c.all()[0].rates(at(6), 60).revisions, 5.0);
        // A new cluster ID, even at a higher head.
        let mut other = up(900, 1);
        if let OtherClusterWhat::Up { cluster_id, .. } = &mut other {
            *cluster_id = 8;
        }
        c.apply(at(8), &obs(other));
        let e = &c.all()[0];
        assert_eq!((e.revision, e.cluster_id, e.rebuilt), (900, 8, 2));
    }

    #[test]
    fn rates_cover_the_window_or_the_seconds_observed() {
        let mut c = OtherClusters::default();
        c.apply(at(0), &obs(up(1000, 0)));
        for s in 1..=100 {
            c.apply(at(s), &obs(writes(1000 + 10 * s as i64, 10, 10, 2)));
        }
        let e = &c.all()[0];
        let r = e.rates(at(100), 60);
        assert_eq!(r.revisions, 10.0);
        assert_eq!(r.puts, 10.0);
        assert_eq!(r.deletes, 2.0);
        assert_eq!(r.bytes, 1000.0);
        // Ten quiet seconds later, the minute holds 50 seconds of writes.
        let r = e.rates(at(110), 60);
        assert!((r.puts - 500.0 / 60.0).abs() < 1e-9, "{r:?}");
        // A minute and more of quiet: nothing.
        assert_eq!(e.rates(at(200), 60), OtherClusterRates::default());
        // Five seconds observed: over those five.
        let mut c = OtherClusters::default();
        c.apply(at(0), &obs(up(0, 0)));
        for s in 1..=5 {
            c.apply(at(s), &obs(writes(s as i64 * 3, 3, 3, 0)));
        }
        assert_eq!(c.all()[0].rates(at(5), 60).puts, 3.0);
    }

    #[test]
    fn a_postcard_round_trip_keeps_everything() {
        let mut c = OtherClusters::default();
        c.apply(at(0), &obs(up(100, 10)));
        c.apply(at(3), &obs(writes(110, 10, 5, 0)));
        let bytes = postcard::to_stdvec(&c).unwrap();
        let back: OtherClusters = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, c);
        assert_eq!(back.all()[0].rates(at(3), 60), c.all()[0].rates(at(3), 60));
    }
}
