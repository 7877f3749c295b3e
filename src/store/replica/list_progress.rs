//! How far a list has come: keys and bytes so far, etcd's count of what it will bring, the
//! rate and an estimate. Derived from the list's own observations (`ListBegin`,
//! `ListCount`, `ListPage`, `ListDone`) and their stamps, so the console, the CLI's stderr
//! and a replay all say the same.

use std::time::{Duration, SystemTime};

use crate::model::{Observation, Revision, Stamped};

/// Progress of one list. Times are the observations' stamps (wall clock).
#[derive(Clone, Debug, PartialEq)]
pub struct ListProgress {
    /// The revision the list is pinned at.
    pub revision: Revision,
    /// Stamp of `ListBegin`.
    pub began: SystemTime,
    /// Stamp of the newest page.
    pub last: SystemTime,
    /// Keys received so far.
    pub keys: u64,
    /// Key + value bytes received so far.
    pub bytes: u64,
    /// etcd's count of keys under the prefix at the revision (`ListCount`), when known.
    pub expected_keys: Option<u64>,
    /// Set by `ListDone`: the list is complete.
    pub done: bool,
}

impl ListProgress {
    /// Folds one observation into `progress`: `ListBegin` starts a new one (a restarted
    /// list starts over), the others update it. Returns whether it changed.
    pub fn observe(progress: &mut Option<ListProgress>, st: &Stamped) -> bool {
        match &st.obs {
            Observation::ListBegin { revision } => {
                *progress = Some(ListProgress {
                    revision: *revision,
                    began: st.at,
                    last: st.at,
                    keys: 0,
                    bytes: 0,
                    expected_keys: None,
                    done: false,
                });
            }
            Observation::ListCount { keys } => match progress.as_mut() {
                Some(p) => p.expected_keys = Some(*keys),
                None => return false,
            },
            Observation::ListPage { kvs } => match progress.as_mut() {
                Some(p) => {
                    p.keys += kvs.len() as u64;
                    p.bytes += kvs
                        .iter()
                        .map(|kv| (kv.key.len() + kv.value.len()) as u64)
                        .sum::<u64>();
                    p.last = p.last.max(st.at);
                }
                None => return false,
            },
            Observation::ListDone { .. } => match progress.as_mut() {
                Some(p) => {
                    p.done = true;
                    p.last = p.last.max(st.at);
                }
                None => return false,
            },
            _ => return false,
        }
        true
    }

    /// Time from `ListBegin` to the newest page.
    pub fn elapsed(&self) -> Duration {
        self.last.duration_since(self.began).unwrap_or_default()
    }

    /// Keys per second so far; `None` before a tenth of a second has passed.
    pub fn keys_per_second(&self) -> Option<f64> {
        let s = self.elapsed().as_secs_f64();
        (s >= 0.1).then(|| self.keys as f64 / s)
    }

    /// Time left at the rate so far, when etcd's count is known.
    pub fn estimate_left(&self) -> Option<Duration> {
        let expected = self.expected_keys?;
        let rate = self.keys_per_second().filter(|r| *r > 0.0)?;
        let left = expected.saturating_sub(self.keys) as f64 / rate;
        Some(Duration::from_secs_f64(left.min(1e6)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Bytes, KeyValue};

    fn at(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_000 + ms)
    }

    fn page(n: usize, value: usize) -> Observation {
        Observation::ListPage {
            kvs: (0..n)
                .map(|i| KeyValue {
                    key: Bytes::from(format!("/registry/k/{i:04}").into_bytes()),
                    create_revision: 1,
                    mod_revision: 1,
                    version: 1,
                    lease: 0,
                    value: Bytes::from(vec![b'v'; value]),
                })
                .collect(),
        }
    }

    #[test]
    fn progress_counts_keys_and_bytes_and_estimates_the_rest() {
        let mut p = None;
        assert!(!ListProgress::observe(
            &mut p,
            &Stamped {
                at: at(0),
                obs: page(1, 1)
            }
        ));
        let obs = [
            (0, Observation::ListBegin { revision: 42 }),
            (0, Observation::ListCount { keys: 4000 }),
            (500, page(1000, 1010)),
            (1000, page(1000, 1010)),
        ];
        for (ms, obs) in obs {
            assert!(ListProgress::observe(&mut p, &Stamped { at: at(ms), obs }));
        }
        let p1 = p.clone().unwrap();
        // Keys such as "/registry/k/0000" are 16 bytes.
        assert_eq!(p1.keys, 2000);
        assert_eq!(p1.bytes, 2000 * (16 + 1010));
        assert_eq!(p1.keys_per_second(), Some(2000.0));
        assert_eq!(p1.estimate_left(), Some(Duration::from_secs(1)));
        ListProgress::observe(
            &mut p,
            &Stamped {
                at: at(2000),
                obs: Observation::ListDone {
                    revision: 42,
                    compacted: None,
                },
            },
        );
        let p2 = p.unwrap();
        assert!(p2.done);
        assert_eq!(p2.elapsed(), Duration::from_secs(2));
    }

    #[test]
    fn a_restarted_list_starts_over() {
        let mut p = None;
        for obs in [
            Observation::ListBegin { revision: 7 },
            page(10, 1),
            Observation::ListBegin { revision: 9 },
        ] {
            ListProgress::observe(&mut p, &Stamped { at: at(0), obs });
        }
        let p = p.unwrap();
        assert_eq!((p.revision, p.keys, p.expected_keys), (9, 0, None));
    }
}
