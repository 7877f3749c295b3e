//! Client watches: where one starts (initial objects, a resourceVersion in the ring, or a 410),
//! then events from the resource's ring, bookmarks, and termination of a watcher that falls
//! out of the ring.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use etcd_client::GetOptions;
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};

use super::cacher::{is_compacted, wait_for_revision, FRESHNESS_WAIT};
use super::flow_control::ApfSeat;
use super::resources::ResourceInfo;
use super::state::{stopped, Shared};
use super::status::{expired, status_value, too_large};
use super::watch_cache::CachedEvent;
use crate::model::prefix_end;

/// Watch duration when the client gives no `timeoutSeconds` (kube-apiserver picks 30–60 min).
pub(super) const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(1800);
/// Events buffered between a watcher and its HTTP response (the cacher's per-watcher channel).
pub(super) const WATCH_CHANNEL: usize = 16;

/// What a client watch asked for.
pub(super) struct WatchSpec {
    pub(super) name: String,
    pub(super) namespace: Option<String>,
    pub(super) rv: Option<i64>,
    pub(super) bookmarks: bool,
    pub(super) initial_events_end: bool,
    pub(super) timeout: Duration,
    pub(super) slow: Option<Duration>,
}

fn event_line(kind: &str, object: &str) -> Bytes {
    Bytes::from(format!("{{\"type\":\"{kind}\",\"object\":{object}}}\n"))
}

fn bookmark_line(info: &ResourceInfo, rv: i64, initial_events_end: bool) -> Bytes {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_events_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let obj = json!({
        "kind": info.kind,
        "apiVersion": info.api_version(),
        "metadata": meta,
    });
    event_line("BOOKMARK", &obj.to_string())
}

fn error_line(status: &Value) -> Bytes {
    event_line("ERROR", &status.to_string())
}

/// Where a watch starts.
enum Start {
    /// Current objects as ADDED, then events from `next_seq`.
    Initial {
        objects: Vec<Arc<str>>,
        next_seq: u64,
        epoch: u64,
        revision: i64,
        info: ResourceInfo,
    },
    /// Events after the requested resourceVersion, from `next_seq`.
    From {
        next_seq: u64,
        epoch: u64,
        info: ResourceInfo,
    },
    /// Answer with one ERROR event.
    Error(Value),
}

fn watch_start(shared: &Shared, spec: &WatchSpec) -> Start {
    let st = shared.cache();
    let Some(rc) = st.resources.get(&spec.name) else {
        return Start::Error(status_value(
            404,
            "NotFound",
            "the server could not find the requested resource",
            None,
        ));
    };
    match spec.rv {
        None | Some(0) => Start::Initial {
            objects: rc
                .objects
                .values()
                .filter(|o| spec.namespace.is_none() || o.namespace == spec.namespace)
                .map(|o| o.json.clone())
                .collect(),
            next_seq: rc.next_seq(),
            epoch: rc.epoch,
            revision: st.revision,
            info: rc.info.clone(),
        },
        Some(rv) => {
            let oldest = rc.oldest_watchable();
            if rv < oldest {
                return Start::Error(expired(format!(
                    "too old resource version: {rv} ({oldest})"
                )));
            }
            let skip = rc.ring.iter().take_while(|e| e.revision <= rv).count() as u64;
            Start::From {
                next_seq: rc.first_seq + skip,
                epoch: rc.epoch,
                info: rc.info.clone(),
            }
        }
    }
}

/// Sends one line, or returns false when the client is gone or the server stops.
async fn send(tx: &mpsc::Sender<Bytes>, stop: &mut watch::Receiver<bool>, line: Bytes) -> bool {
    tokio::select! {
        r = tx.send(line) => r.is_ok(),
        () = stopped(stop) => false,
    }
}

/// Sleeps `d` unless the client goes away or the server stops (then false).
async fn pause(tx: &mpsc::Sender<Bytes>, stop: &mut watch::Receiver<bool>, d: Duration) -> bool {
    tokio::select! {
        () = tokio::time::sleep(d) => true,
        () = tx.closed() => false,
        () = stopped(stop) => false,
    }
}

/// One client watch, until its timeout, the client leaving, termination or server stop.
pub(super) async fn run_watch(
    shared: &Shared,
    spec: WatchSpec,
    tx: mpsc::Sender<Bytes>,
    seat: ApfSeat,
) {
    let mut seat = Some(seat);
    let mut stop = shared.stop.clone();
    let deadline = tokio::time::Instant::now() + spec.timeout;
    // A resourceVersion the cache has not reached yet: wait for it, as the cacher does.
    if let Some(rv) = spec.rv.filter(|rv| *rv > 0) {
        let (cur, fresh) = wait_for_revision(shared, rv, FRESHNESS_WAIT).await;
        if !fresh {
            send(&tx, &mut stop, error_line(&too_large(rv, cur))).await;
            return;
        }
    }
    let mut start = watch_start(shared, &spec);
    // Within the ring, but etcd has compacted past it: the etcd3 watcher's 410.
    if let (Some(rv), Start::From { info, .. }) = (spec.rv.filter(|rv| *rv > 0), &start) {
        let probe = shared
            .etcd_get(
                "listWithCount",
                (&info.group, &info.resource),
                info.key_prefix.clone(),
                GetOptions::new()
                    .with_range(prefix_end(info.key_prefix.as_bytes()))
                    .with_count_only()
                    .with_limit(1)
                    .with_revision(rv),
            )
            .await;
        if let Err(e) = probe {
            if is_compacted(&e) {
                start = Start::Error(expired(
                    "The resourceVersion for the provided watch is too old.".into(),
                ));
            }
        }
    }
    let counters = {
        let st = shared.cache();
        match st.resources.get(&spec.name) {
            Some(rc) => rc.counters.clone(),
            None => return,
        }
    };
    let dispatched = |n: u64| counters.dispatched.fetch_add(n, Ordering::Relaxed);
    let (mut next_seq, epoch, info) = match start {
        Start::Error(status) => {
            send(&tx, &mut stop, error_line(&status)).await;
            return;
        }
        Start::Initial {
            objects,
            next_seq,
            epoch,
            revision,
            info,
        } => {
            for obj in objects {
                if let Some(d) = spec.slow {
                    if !pause(&tx, &mut stop, d).await {
                        return;
                    }
                }
                if !send(&tx, &mut stop, event_line("ADDED", &obj)).await {
                    return;
                }
                dispatched(1);
            }
            if spec.bookmarks && spec.initial_events_end {
                if !send(&tx, &mut stop, bookmark_line(&info, revision, true)).await {
                    return;
                }
                dispatched(1);
            }
            (next_seq, epoch, info)
        }
        Start::From {
            next_seq,
            epoch,
            info,
        } => (next_seq, epoch, info),
    };
    // The initial stage is over: the watch no longer occupies a flow-control seat.
    seat.take();
    let mut changed = shared.changed.subscribe();
    let mut bookmark_tick =
        tokio::time::interval(shared.cfg.bookmark_interval.max(Duration::from_millis(10)));
    bookmark_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    bookmark_tick.tick().await;
    enum Step {
        Event(Arc<CachedEvent>),
        Idle(i64),
        Terminated,
        Closed,
    }
    loop {
        if tokio::time::Instant::now() >= deadline {
            return;
        }
        changed.borrow_and_update();
        let step = {
            let st = shared.cache();
            match st.resources.get(&spec.name) {
                None => Step::Closed,
                Some(rc) if rc.epoch != epoch => Step::Closed,
                Some(rc) if next_seq < rc.first_seq => Step::Terminated,
                Some(rc) => {
                    let mut found = None;
                    while next_seq < rc.next_seq() {
                        let idx = usize::try_from(next_seq - rc.first_seq).unwrap_or(usize::MAX);
                        next_seq += 1;
                        if let Some(ev) = rc.ring.get(idx) {
                            if spec.namespace.is_none() || ev.namespace == spec.namespace {
                                found = Some(ev.clone());
                                break;
                            }
                        }
                    }
                    match found {
                        Some(ev) => Step::Event(ev),
                        None => Step::Idle(st.revision),
                    }
                }
            }
        };
        match step {
            Step::Closed => return,
            Step::Terminated => {
                // kube-apiserver: "Forcing watcher close due to unresponsiveness".
                counters.terminated.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(
                    "demo apiserver: terminated an unresponsive watcher of {}",
                    spec.name
                );
                return;
            }
            Step::Event(ev) => {
                if let Some(d) = spec.slow {
                    if !pause(&tx, &mut stop, d).await {
                        return;
                    }
                }
                if !send(&tx, &mut stop, event_line(ev.kind, &ev.object)).await {
                    return;
                }
                dispatched(1);
            }
            Step::Idle(revision) => {
                let bookmark_due = tokio::select! {
                    _ = changed.changed() => false,
                    _ = bookmark_tick.tick() => true,
                    () = tokio::time::sleep_until(deadline) => return,
                    () = tx.closed() => return,
                    () = stopped(&mut stop) => return,
                };
                if bookmark_due && spec.bookmarks {
                    if !send(&tx, &mut stop, bookmark_line(&info, revision, false)).await {
                        return;
                    }
                    dispatched(1);
                }
            }
        }
    }
}
