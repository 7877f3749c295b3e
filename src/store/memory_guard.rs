//! `--memory-limit`: the whole process kept under a resident size without being OOM-killed.
//! History goes first (the history budget is halved until the process fits or no history
//! is left); when even that is not enough, the caller stops taking observations and says
//! why. Resident sizes and times come from the caller, so this is plain logic.

use std::time::{Duration, Instant};

use super::Session;

/// What [`MemoryGuard::check`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemoryAction {
    /// Under the limit, or waiting for freed history to leave the resident set.
    Fine,
    /// Over the limit: the history budget went from `from` to `to` bytes.
    HistoryLowered { from: usize, to: usize },
    /// Over the limit with no history to drop while values written lately are still raw
    /// (the packing worker runs at idle priority, behind a fast list): take no
    /// observations for now, let packing catch up (call the replica's `maintain`, and
    /// give freed memory back to the kernel once it has), and check again. Returned for
    /// at most [`MemoryGuard::PACK_WAIT`], then [`MemoryAction::Exceeded`].
    Packing {
        resident: u64,
        /// Versions still to pack (keys written and not swept, plus those with the worker).
        outstanding: u64,
    },
    /// Over the limit with no history held ([`MemoryGuard::SETTLE`] after the last lowering,
    /// or at once when there was none), and nothing left to pack: the session cannot be
    /// held in the limit; stop taking observations.
    Exceeded { resident: u64 },
}

/// Keeps a session's process under `limit` bytes resident. Check often (once a second,
/// and every 25 ms while a list brings keys in fast).
#[derive(Debug)]
pub struct MemoryGuard {
    limit: u64,
    /// When the last lowering happened.
    acted: Option<Instant>,
    exceeded: bool,
    /// Since when observations are held for packing, and since when packing had caught up
    /// while still over the limit.
    packing_since: Option<Instant>,
    packed_at: Option<Instant>,
}

impl MemoryGuard {
    /// Time given to a lowering before acting again: the allocator returns freed pages to
    /// the kernel after a delay (mimalloc purges after about a second).
    pub const SETTLE: Duration = Duration::from_secs(2);

    /// Longest hold for packing before the limit is reported exceeded. Packing 500 MiB of
    /// listed values takes a few seconds of an idle core; when etcd or the apiserver keep
    /// the cores busy, the idle-priority worker gets none, and waiting longer would only
    /// stall the list.
    pub const PACK_WAIT: Duration = Duration::from_secs(30);

    pub fn new(limit: u64) -> Self {
        Self {
            limit,
            acted: None,
            exceeded: false,
            packing_since: None,
            packed_at: None,
        }
    }

    /// The limit in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Whether [`MemoryAction::Exceeded`] was returned (once; later checks are `Fine`).
    pub fn exceeded(&self) -> bool {
        self.exceeded
    }

    /// Compares `resident` bytes at `now` with the limit and, when over it, lowers
    /// `session`'s history budget (at once the first time, then [`Self::SETTLE`] after the
    /// last lowering), or reports that nothing is left to drop.
    pub fn check(&mut self, resident: u64, now: Instant, session: &mut Session) -> MemoryAction {
        if self.exceeded || resident <= self.limit {
            self.packing_since = None;
            self.packed_at = None;
            return MemoryAction::Fine;
        }
        if self
            .acted
            .is_some_and(|t| now.saturating_duration_since(t) < Self::SETTLE)
        {
            return MemoryAction::Fine;
        }
        let budget = session.replica.history_budget();
        let (_, held) = session.replica.history_usage();
        if budget == 0 || held == 0 {
            // No history to give back (none kept, or none held yet, as during the first
            // list). Raw values still to pack may be what the limit is short of: hold the
            // observations while packing catches up and the allocator returns what it
            // freed; waiting for anything else would only let the process grow further.
            let outstanding = session.replica.memory().packing_outstanding;
            let hold = if outstanding > 0 {
                let since = *self.packing_since.get_or_insert(now);
                self.packed_at = None;
                now.saturating_duration_since(since) < Self::PACK_WAIT
            } else {
                // Caught up during this hold: what packing replaced needs a moment to
                // leave the resident set. With nothing packed, nothing will leave.
                self.packing_since.is_some() && {
                    let at = *self.packed_at.get_or_insert(now);
                    now.saturating_duration_since(at) < Self::SETTLE
                }
            };
            if hold {
                return MemoryAction::Packing {
                    resident,
                    outstanding,
                };
            }
            self.packing_since = None;
            self.packed_at = None;
            session.replica.set_history_budget(0);
            self.exceeded = true;
            return MemoryAction::Exceeded { resident };
        }
        self.acted = Some(now);
        // Halve the history held; below 2 MiB (or with none held, when the memory is not
        // history at all) keep none.
        let to = if held >= 2 << 20 { held / 2 } else { 0 };
        session.replica.set_history_budget(to);
        MemoryAction::HistoryLowered { from: budget, to }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Bytes, EventKind, KeyValue, Observation, Stamped, WatchEvent};

    fn apply(s: &mut Session, obs: Observation) {
        s.apply(&Stamped {
            at: std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000),
            obs,
        });
    }

    /// A session holding `versions` MiB-sized versions of one key, all but one history.
    fn with_history(versions: i64) -> Session {
        let mut s = Session::new(Default::default());
        let kv = |rev: i64| KeyValue {
            key: Bytes::from_static(b"/registry/configmaps/a/big"),
            create_revision: 2,
            mod_revision: rev,
            version: rev - 1,
            lease: 0,
            value: Bytes::from(vec![b'v'; 1 << 20]),
        };
        apply(&mut s, Observation::ListBegin { revision: 2 });
        apply(&mut s, Observation::ListPage { kvs: vec![kv(2)] });
        apply(
            &mut s,
            Observation::ListDone {
                revision: 2,
                compacted: None,
            },
        );
        let events = (3..2 + versions)
            .map(|rev| WatchEvent {
                kind: EventKind::Put,
                kv: kv(rev),
                prev_kv: None,
            })
            .collect();
        apply(
            &mut s,
            Observation::Events {
                revision: 1 + versions,
                events,
            },
        );
        s
    }

    #[test]
    fn history_goes_first_then_the_limit_is_reported() {
        let mut s = with_history(9);
        let held = |s: &Session| s.replica.history_usage().1;
        assert!(held(&s) >= 8 << 20, "{}", held(&s));
        let mut g = MemoryGuard::new(100);
        let t0 = Instant::now();
        let mut t = t0;
        assert_eq!(g.check(50, t, &mut s), MemoryAction::Fine);
        let MemoryAction::HistoryLowered { from, to } = g.check(200, t, &mut s) else {
            panic!("history first");
        };
        assert_eq!(from, crate::store::DEFAULT_HISTORY_BUDGET);
        assert!(to >= 4 << 20 && held(&s) <= to, "{to} {}", held(&s));
        // Freed pages take a moment to leave: no new action until SETTLE has passed.
        t += MemoryGuard::SETTLE - Duration::from_millis(1);
        assert_eq!(g.check(200, t, &mut s), MemoryAction::Fine);
        let mut budgets = vec![to];
        loop {
            t += Duration::from_millis(500);
            assert!(t - t0 < Duration::from_secs(60), "bounded");
            match g.check(200, t, &mut s) {
                MemoryAction::HistoryLowered { to, .. } => {
                    assert!(held(&s) <= to);
                    budgets.push(to);
                }
                MemoryAction::Exceeded { resident } => {
                    assert_eq!(resident, 200);
                    break;
                }
                MemoryAction::Fine | MemoryAction::Packing { .. } => {}
            }
        }
        assert!(budgets.windows(2).all(|w| w[1] < w[0]), "{budgets:?}");
        assert_eq!(budgets.last(), Some(&0));
        assert_eq!(held(&s), 0);
        // The newest value of the key stays: only history was dropped.
        assert_eq!(s.replica.live_keys(), 1);
        assert!(g.exceeded());
        assert_eq!(g.check(500, t, &mut s), MemoryAction::Fine);
    }

    #[test]
    fn raw_values_still_to_pack_hold_the_stream_before_the_limit_is_reported() {
        let mut s = Session::new(Default::default());
        let kvs = (0..200)
            .map(|i| KeyValue {
                key: Bytes::from(format!("/registry/configmaps/ns/cm{i:03}")),
                create_revision: 2,
                mod_revision: 2,
                version: 1,
                lease: 0,
                value: Bytes::from(format!("{{\"data\":\"{}\"}}", "x".repeat(4000))),
            })
            .collect();
        apply(&mut s, Observation::ListBegin { revision: 2 });
        apply(&mut s, Observation::ListPage { kvs });
        assert!(s.replica.memory().packing_outstanding > 0);
        let mut g = MemoryGuard::new(100);
        let t0 = Instant::now();
        assert!(matches!(
            g.check(200, t0, &mut s),
            MemoryAction::Packing { resident: 200, .. }
        ));
        // Packing catches up (the caller keeps calling `maintain`).
        let wall = Instant::now();
        while s.replica.memory().packing_outstanding > 0 {
            assert!(
                wall.elapsed() < Duration::from_secs(30),
                "packing never caught up"
            );
            s.replica.maintain();
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(s.replica.memory().packed_values > 0);
        // Still over just after: freed memory is given time to leave, then the limit is
        // reported as before.
        let t = t0 + Duration::from_millis(300);
        assert!(matches!(
            g.check(200, t, &mut s),
            MemoryAction::Packing { outstanding: 0, .. }
        ));
        assert_eq!(
            g.check(200, t + MemoryGuard::SETTLE, &mut s),
            MemoryAction::Exceeded { resident: 200 }
        );
        // Under the limit once packed, the stream goes on.
        let mut g = MemoryGuard::new(100);
        apply(
            &mut s,
            Observation::ListPage {
                kvs: vec![KeyValue {
                    key: Bytes::from_static(b"/registry/configmaps/ns/late"),
                    create_revision: 2,
                    mod_revision: 2,
                    version: 1,
                    lease: 0,
                    value: Bytes::from("y".repeat(4000)),
                }],
            },
        );
        assert!(matches!(
            g.check(200, t0, &mut s),
            MemoryAction::Packing { .. }
        ));
        assert_eq!(g.check(90, t0, &mut s), MemoryAction::Fine);
        assert!(!g.exceeded());
    }

    #[test]
    fn a_hold_for_packing_ends_after_pack_wait() {
        let mut s = Session::new(Default::default());
        apply(&mut s, Observation::ListBegin { revision: 2 });
        apply(
            &mut s,
            Observation::ListPage {
                kvs: vec![KeyValue {
                    key: Bytes::from_static(b"/registry/configmaps/ns/a"),
                    create_revision: 2,
                    mod_revision: 2,
                    version: 1,
                    lease: 0,
                    value: Bytes::from("z".repeat(4000)),
                }],
            },
        );
        let mut g = MemoryGuard::new(100);
        let t0 = Instant::now();
        assert!(matches!(
            g.check(200, t0, &mut s),
            MemoryAction::Packing { .. }
        ));
        // Nobody lets packing run: after PACK_WAIT the limit is reported.
        assert_eq!(
            g.check(200, t0 + MemoryGuard::PACK_WAIT, &mut s),
            MemoryAction::Exceeded { resident: 200 }
        );
    }

    #[test]
    fn without_history_to_give_back_the_limit_is_reported_at_once() {
        let mut s = Session::new(Default::default());
        let mut g = MemoryGuard::new(100);
        assert_eq!(
            g.check(200, Instant::now(), &mut s),
            MemoryAction::Exceeded { resident: 200 }
        );
        assert_eq!(s.replica.history_budget(), 0);
    }

    #[test]
    fn under_the_limit_nothing_is_dropped() {
        let mut s = with_history(9);
        let before = s.replica.history_usage();
        let mut g = MemoryGuard::new(100);
        let t = Instant::now();
        for i in 0..10 {
            assert_eq!(
                g.check(100, t + Duration::from_secs(i), &mut s),
                MemoryAction::Fine
            );
        }
        assert_eq!(s.replica.history_usage(), before);
        assert!(!g.exceeded());
    }
}
