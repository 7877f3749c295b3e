//! How close one resource's watchers are to 410 Gone: the one rule behind the window
//! panel's `risk` column, its verdict lines and `snapshot --json`.
//!
//! Two things answer a resuming watch with 410 Gone, and they are told apart:
//!
//! - **etcd's compaction.** A watch that starts at a compacted revision is cancelled with
//!   the compacted revision (etcd `mvcc/watchable_store.go`); the apiserver relists its
//!   cache and its clients relist too. Decided in revisions: lag against head − compacted.
//! - **The watch cache's ring.** kube-apiserver's cacher keeps the newest `capacity`
//!   events of a resource and refuses a resourceVersion older than the oldest event the
//!   ring still holds (k8s.io/apiserver `pkg/storage/cacher/watch_cache.go`,
//!   `getAllEventsSinceLocked`: "too old resource version"). Until the ring has evicted an
//!   event since the cache was initialised, it holds everything since its list and a
//!   resume from after that list is always served. Decided in events: how many events of
//!   the resource came after the watcher's resourceVersion (counted in the replica's event
//!   log), against the capacity. An idle resource has no events to miss, whatever its lag
//!   in revisions or seconds.
//!
//! Seconds (lag in seconds against capacity ÷ event rate) are used only when the events
//! cannot be counted (the replica's event log no longer reaches back to the watcher's
//! resourceVersion, or a gap hides some), and the reason then says it is an estimate; an
//! estimate is never more than a warning, because event rates swing from one scrape to the
//! next and a rule on them flaps. Without a measurement the risk is
//! [`Risk::Measuring`], never "ok".

use super::Risk;

/// What the rule looks at for one resource; every field is a measurement, `None` where it
/// is not known.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RiskInputs<'a> {
    /// regscope runs an informer for the resource (through the apiserver).
    pub informer: bool,
    /// Head − the informer's resourceVersion, in revisions, when it has one.
    pub informer_lag_revisions: Option<i64>,
    /// The same lag in seconds (arrival − when etcd wrote the first revision after it).
    pub informer_lag_seconds: Option<f64>,
    /// The informer's newest error while it retries.
    pub informer_error: Option<&'a str>,
    /// Events of the resource after the informer's resourceVersion, counted in the
    /// replica's event log; `None` when the log cannot count them.
    pub events_behind: Option<u64>,
    /// Head − `apiserver_watch_cache_resource_version`, in revisions.
    pub watch_cache_lag_revisions: Option<i64>,
    /// Head − etcd's compacted revision, in revisions; `None` before the first compaction.
    pub window_revisions: Option<i64>,
    /// `watch_cache_capacity`, in events.
    pub cache_capacity: Option<f64>,
    /// The ring has received at least `capacity` events since it was initialised, so it
    /// has started evicting; `None` when the apiserver does not say how many it received
    /// (before 1.27), then taken as evicting.
    pub cache_wrapped: Option<bool>,
    /// The ring's history in seconds at the current event rate (an estimate).
    pub cache_span_seconds: Option<f64>,
    /// 410 Gone answers the informer received.
    pub gone_410: u64,
}

/// The risk and, unless it is [`Risk::Ok`], why, in one line.
pub fn assess(i: &RiskInputs<'_>) -> (Risk, Option<String>) {
    let lag = i
        .informer_lag_revisions
        .into_iter()
        .chain(i.watch_cache_lag_revisions)
        .max();
    let win = i.window_revisions.filter(|w| *w > 0);
    if let (Some(lag), Some(win)) = (lag, win) {
        if lag >= win {
            return (
                Risk::Danger,
                Some(format!(
                    "lags {lag} revisions, the whole {win}-revision compaction window: a resume is below the compacted revision, 410 Gone from etcd compaction"
                )),
            );
        }
    }
    // The ring evicts only once it has received its capacity; before that it holds all
    // since its list.
    let evicting = i.cache_wrapped != Some(false);
    let capacity = i.cache_capacity.filter(|c| *c > 0.0 && evicting);
    if let (Some(n), Some(cap)) = (i.events_behind, capacity) {
        if n as f64 >= cap {
            return (
                Risk::Danger,
                Some(format!(
                    "{n} events behind, the watch cache's ring holds the newest {cap:.0}: a resume gets 410 Gone from the watch cache (etcd still has the revisions)"
                )),
            );
        }
    }
    // A failing informer measures nothing: say so before any "ok" or "past half".
    if let Some(err) = i.informer_error {
        return (
            Risk::Warn,
            Some(format!("informer failing, retrying: {err}")),
        );
    }
    if i.informer && i.informer_lag_revisions.is_none() {
        return (
            Risk::Measuring,
            Some("measuring: no event, bookmark or list from the informer yet".into()),
        );
    }
    if let (Some(n), Some(cap)) = (i.events_behind, capacity) {
        if n as f64 * 2.0 >= cap && n > 0 {
            return (
                Risk::Warn,
                Some(format!(
                    "{n} events behind, past half of the watch cache's {cap:.0}-event ring"
                )),
            );
        }
    }
    if i.events_behind.is_none() && evicting {
        if let (Some(lag_s), Some(span)) = (i.informer_lag_seconds, i.cache_span_seconds) {
            if lag_s > 0.0 && lag_s * 2.0 >= span {
                let how = if lag_s >= span {
                    "beyond"
                } else {
                    "past half of"
                };
                return (
                    Risk::Warn,
                    Some(format!(
                        "estimate: {lag_s:.1}s behind, {how} the watch cache's ~{span:.1}s of history at the current event rate (the events behind could not be counted)"
                    )),
                );
            }
        }
    }
    if let (Some(lag), Some(win)) = (lag, win) {
        if lag * 2 >= win {
            return (
                Risk::Warn,
                Some(format!(
                    "lags {lag} revisions, past half of the {win}-revision compaction window"
                )),
            );
        }
    }
    if i.gone_410 > 0 {
        return (
            Risk::Warn,
            Some(format!(
                "410 Gone seen {} time{} (relisted); caught up now",
                i.gone_410,
                if i.gone_410 == 1 { "" } else { "s" }
            )),
        );
    }
    (Risk::Ok, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A watcher of a resource through a watch cache of 100 events in a 1,000-revision
    /// compaction window, caught up.
    fn base() -> RiskInputs<'static> {
        RiskInputs {
            informer: true,
            informer_lag_revisions: Some(0),
            informer_lag_seconds: Some(0.0),
            informer_error: None,
            events_behind: Some(0),
            watch_cache_lag_revisions: Some(0),
            window_revisions: Some(1_000),
            cache_capacity: Some(100.0),
            cache_wrapped: Some(true),
            cache_span_seconds: Some(10.0),
            gone_410: 0,
        }
    }

    #[test]
    fn the_risk_table() {
        type Case = (&'static str, RiskInputs<'static>, Risk, &'static str);
        let cases: Vec<Case> = vec![
            ("caught up", base(), Risk::Ok, ""),
            // Idle: the head moves on with other resources' writes, the cache's ring is
            // empty and the rate is 0, yet nothing can be missed.
            (
                "idle resource, empty ring, 0 s span",
                RiskInputs {
                    informer_lag_revisions: Some(300),
                    informer_lag_seconds: Some(30.0),
                    events_behind: Some(0),
                    cache_wrapped: Some(false),
                    cache_span_seconds: Some(0.0),
                    ..base()
                },
                Risk::Ok,
                "",
            ),
            (
                "idle resource whose ring has wrapped long ago",
                RiskInputs {
                    informer_lag_revisions: Some(300),
                    informer_lag_seconds: Some(30.0),
                    events_behind: Some(0),
                    cache_span_seconds: Some(0.5),
                    ..base()
                },
                Risk::Ok,
                "",
            ),
            // Warming up: the informer has not reported a resourceVersion yet.
            (
                "warming up",
                RiskInputs {
                    informer_lag_revisions: None,
                    informer_lag_seconds: None,
                    events_behind: None,
                    ..base()
                },
                Risk::Measuring,
                "measuring",
            ),
            // Before its ring has filled, the cache holds everything since its list.
            (
                "ring not yet full",
                RiskInputs {
                    informer_lag_revisions: Some(200),
                    events_behind: Some(150),
                    cache_wrapped: Some(false),
                    ..base()
                },
                Risk::Ok,
                "",
            ),
            (
                "steady, a few events behind",
                RiskInputs {
                    informer_lag_revisions: Some(20),
                    informer_lag_seconds: Some(0.4),
                    events_behind: Some(10),
                    ..base()
                },
                Risk::Ok,
                "",
            ),
            // Growing lag: half the ring, then the whole ring, then the window.
            (
                "growing: half the ring",
                RiskInputs {
                    informer_lag_revisions: Some(120),
                    events_behind: Some(50),
                    ..base()
                },
                Risk::Warn,
                "50 events behind, past half of the watch cache's 100-event ring",
            ),
            (
                "growing: the whole ring",
                RiskInputs {
                    informer_lag_revisions: Some(240),
                    events_behind: Some(100),
                    ..base()
                },
                Risk::Danger,
                "410 Gone from the watch cache",
            ),
            (
                "growing: half the window",
                RiskInputs {
                    informer_lag_revisions: Some(500),
                    events_behind: Some(10),
                    ..base()
                },
                Risk::Warn,
                "past half of the 1000-revision compaction window",
            ),
            (
                "growing: the window",
                RiskInputs {
                    informer_lag_revisions: Some(1_000),
                    events_behind: Some(10),
                    ..base()
                },
                Risk::Danger,
                "410 Gone from etcd compaction",
            ),
            (
                "the watch cache itself behind the window",
                RiskInputs {
                    watch_cache_lag_revisions: Some(1_200),
                    ..base()
                },
                Risk::Danger,
                "410 Gone from etcd compaction",
            ),
            // Seconds only when the events cannot be counted, and said to be an estimate.
            (
                "uncounted: estimate beyond the span",
                RiskInputs {
                    informer_lag_revisions: Some(50),
                    informer_lag_seconds: Some(12.0),
                    events_behind: None,
                    ..base()
                },
                Risk::Warn,
                "estimate: 12.0s behind, beyond the watch cache's ~10.0s",
            ),
            (
                "uncounted: estimate well inside",
                RiskInputs {
                    informer_lag_revisions: Some(5),
                    informer_lag_seconds: Some(1.0),
                    events_behind: None,
                    ..base()
                },
                Risk::Ok,
                "",
            ),
            // Counted events decide over seconds: 0.9 s behind a 0.6 s "span" is fine
            // when only 3 events came since.
            (
                "counted events beat a short span",
                RiskInputs {
                    informer_lag_revisions: Some(30),
                    informer_lag_seconds: Some(3.5),
                    events_behind: Some(3),
                    cache_span_seconds: Some(0.6),
                    ..base()
                },
                Risk::Ok,
                "",
            ),
            (
                "failing informer",
                RiskInputs {
                    informer_error: Some("list: HTTP 403"),
                    ..base()
                },
                Risk::Warn,
                "informer failing, retrying: list: HTTP 403",
            ),
            (
                "caught up after a 410",
                RiskInputs {
                    gone_410: 2,
                    ..base()
                },
                Risk::Warn,
                "410 Gone seen 2 times",
            ),
            (
                "cache only, no compaction yet",
                RiskInputs {
                    informer: false,
                    informer_lag_revisions: None,
                    informer_lag_seconds: None,
                    events_behind: None,
                    window_revisions: None,
                    watch_cache_lag_revisions: Some(40),
                    ..base()
                },
                Risk::Ok,
                "",
            ),
        ];
        for (name, inputs, want, reason) in cases {
            let (got, why) = assess(&inputs);
            assert_eq!(got, want, "{name}: {why:?}");
            match why {
                Some(w) => assert!(w.contains(reason) && !reason.is_empty(), "{name}: {w}"),
                None => assert!(reason.is_empty(), "{name}: no reason given"),
            }
        }
    }

    /// No flapping: with the inputs fixed, the verdict does not move as the estimate's
    /// event rate swings, so long as the events behind are counted; and a lag that only
    /// grows never gets a milder verdict.
    #[test]
    fn the_verdict_moves_only_with_its_inputs_and_grows_with_the_lag() {
        let mut last = Risk::Ok;
        for n in 0..=150u64 {
            let mut worst = None;
            for span in [0.3, 0.6, 5.2, 40.0] {
                let (r, _) = assess(&RiskInputs {
                    informer_lag_revisions: Some(n as i64 * 2),
                    informer_lag_seconds: Some(n as f64 / 10.0),
                    events_behind: Some(n),
                    cache_span_seconds: Some(span),
                    ..base()
                });
                assert!(worst.is_none_or(|w| w == r), "flaps with the rate at {n}");
                worst = Some(r);
            }
            let r = worst.unwrap();
            assert!(
                r >= last,
                "milder at {n} events behind: {r:?} after {last:?}"
            );
            last = r;
        }
        assert_eq!(last, Risk::Danger);
    }
}
