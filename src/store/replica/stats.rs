//! Per-resource counters and the per-second revision-growth series.
//!
//! Rates are derived from per-second buckets keyed by the observation's wall-clock second
//! (the time the source received the event), so live and replay compute the same numbers.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::model::Revision;

/// Seconds of per-second buckets kept per resource for rates.
const RATE_WINDOW: usize = 64;

/// Counters for one resource (as named by [`crate::model::KeyPath::resource`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ResourceStats {
    pub resource: String,
    /// Live keys now.
    pub keys: u64,
    /// Value bytes of the newest version of every live key.
    pub bytes: u64,
    /// PUT events applied since the replica started (list items are not counted).
    pub puts: u64,
    /// DELETE events applied since the replica started.
    pub deletes: u64,
    /// Ring of (unix second, puts, deletes).
    #[serde(with = "ring")]
    buckets: [(u64, u32, u32); RATE_WINDOW],
}

impl ResourceStats {
    pub(crate) fn new(resource: String) -> Self {
        Self {
            resource,
            keys: 0,
            bytes: 0,
            puts: 0,
            deletes: 0,
            buckets: [(0, 0, 0); RATE_WINDOW],
        }
    }

    #[inline]
    pub(crate) fn count(&mut self, second: u64, delete: bool) {
        let b = &mut self.buckets[(second as usize) % RATE_WINDOW];
        if b.0 != second {
            *b = (second, 0, 0);
        }
        if delete {
            b.2 += 1;
            self.deletes += 1;
        } else {
            b.1 += 1;
            self.puts += 1;
        }
    }

    /// Mean (puts/s, deletes/s) over the `window` whole seconds before `now_second`
    /// (unix seconds). `window` is clamped to 1..=60.
    pub fn rates(&self, now_second: u64, window: u64) -> (f64, f64) {
        let window = window.clamp(1, 60);
        let (mut p, mut d) = (0u64, 0u64);
        for s in now_second.saturating_sub(window)..now_second {
            let b = &self.buckets[(s as usize) % RATE_WINDOW];
            if b.0 == s {
                p += b.1 as u64;
                d += b.2 as u64;
            }
        }
        (p as f64 / window as f64, d as f64 / window as f64)
    }
}

/// One row of the `resources` list in `snapshot --json`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ResourceSummary {
    pub resource: String,
    pub keys: u64,
    pub bytes: u64,
    pub puts: u64,
    pub deletes: u64,
}

/// Revision growth during one wall-clock second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrowthSample {
    /// Unix seconds.
    pub second: u64,
    /// Highest revision applied by the end of that second.
    pub head: Revision,
    /// Watch events applied in that second.
    pub events: u32,
}

/// Per-second growth samples, newest last, at most `cap` of them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Growth {
    pub samples: VecDeque<GrowthSample>,
    cap: usize,
}

impl Growth {
    pub fn new(cap: usize) -> Self {
        Self {
            samples: VecDeque::with_capacity(cap.min(4096)),
            cap,
        }
    }

    pub fn record(&mut self, second: u64, head: Revision, events: u32) {
        match self.samples.back_mut() {
            Some(last) if last.second == second => {
                last.head = last.head.max(head);
                last.events += events;
            }
            Some(last) if last.second > second => {
                // Clock stepped back: fold into the newest sample rather than reorder.
                last.head = last.head.max(head);
                last.events += events;
            }
            _ => {
                if self.samples.len() == self.cap {
                    self.samples.pop_front();
                }
                self.samples.push_back(GrowthSample {
                    second,
                    head,
                    events,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_use_whole_seconds_only() {
        let mut s = ResourceStats::new("pods".into());
        for _ in 0..10 {
            s.count(100, false);
        }
        s.count(101, true);
        s.count(102, false); // current second, not yet whole
        assert_eq!(s.rates(102, 2), (5.0, 0.5));
        // Stale buckets are ignored once their second leaves the window.
        assert_eq!(s.rates(200, 10), (0.0, 0.0));
    }

    #[test]
    fn growth_merges_same_second() {
        let mut g = Growth::new(2);
        g.record(1, 10, 3);
        g.record(1, 12, 2);
        g.record(2, 13, 1);
        g.record(3, 14, 1);
        assert_eq!(g.samples.len(), 2);
        assert_eq!(g.samples[0].second, 2);
        let first = GrowthSample {
            second: 2,
            head: 13,
            events: 1,
        };
        assert_eq!(g.samples[0], first);
    }
}

/// serde for the fixed rate ring (serde derives arrays up to 32 elements only).
mod ring {
    use super::RATE_WINDOW;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    type Ring = [(u64, u32, u32); RATE_WINDOW];

    pub fn serialize<S: Serializer>(r: &Ring, s: S) -> Result<S::Ok, S::Error> {
        r.as_slice().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Ring, D::Error> {
        let v = Vec::<(u64, u32, u32)>::deserialize(d)?;
        let n = v.len();
        v.try_into().map_err(|_| {
            serde::de::Error::custom(format!("rate ring of {n} buckets, expected {RATE_WINDOW}"))
        })
    }
}
