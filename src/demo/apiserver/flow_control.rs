//! API Priority and Fairness: which priority level a request belongs to, real seats and
//! queues per level (so the flow-control gauges reflect real load), and the 429 answer of a
//! rejected request.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::Response;
use serde_json::json;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::lock::lock;
use super::status::status_response;

/// Requests one non-exempt priority level executes at once (its seats).
const APF_SEATS: usize = 8;
/// Requests that may wait in one priority level's queue; more are rejected (`queue-full`).
const APF_QUEUE_LENGTH: i64 = 64;
/// How long a request may wait in an APF queue before it is rejected (`time-out`).
const APF_QUEUE_WAIT: Duration = Duration::from_secs(10);

/// One API Priority and Fairness priority level with its flow schema.
#[derive(Debug)]
pub(super) struct PriorityLevel {
    pub(super) flow_schema: &'static str,
    pub(super) priority_level: &'static str,
    /// `None` for exempt (never queued).
    seats: Option<Arc<Semaphore>>,
    pub(super) inqueue: AtomicI64,
    pub(super) executing: AtomicI64,
}

/// Which priority level a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    /// `/metrics` and health checks (flow schema `exempt`).
    Exempt,
    /// Requests carrying a bearer token, as controllers' service accounts do (flow schema
    /// `service-accounts`, priority level `workload-low`).
    ServiceAccounts,
    /// Everything else (`global-default`).
    GlobalDefault,
}

/// The APF subsystem: real slots per priority level, so its gauges reflect real load.
#[derive(Debug)]
pub(super) struct Apf {
    pub(super) levels: [PriorityLevel; 3],
    pub(super) rejected: Mutex<BTreeMap<(&'static str, &'static str, &'static str), u64>>,
}

impl Apf {
    pub(super) fn new() -> Self {
        let level = |fs, pl, limited: bool| PriorityLevel {
            flow_schema: fs,
            priority_level: pl,
            seats: limited.then(|| Arc::new(Semaphore::new(APF_SEATS))),
            inqueue: AtomicI64::new(0),
            executing: AtomicI64::new(0),
        };
        Apf {
            levels: [
                level("exempt", "exempt", false),
                level("service-accounts", "workload-low", true),
                level("global-default", "global-default", true),
            ],
            rejected: Mutex::default(),
        }
    }

    fn level(&self, flow: Flow) -> &PriorityLevel {
        match flow {
            Flow::Exempt => &self.levels[0],
            Flow::ServiceAccounts => &self.levels[1],
            Flow::GlobalDefault => &self.levels[2],
        }
    }

    /// Waits for a seat of `flow`'s level. Err(reason) when rejected.
    pub(super) async fn acquire(self: &Arc<Self>, flow: Flow) -> Result<ApfSeat, &'static str> {
        let level = self.level(flow);
        let permit = match &level.seats {
            None => None,
            Some(sem) => match sem.clone().try_acquire_owned() {
                Ok(p) => Some(p),
                Err(_) => {
                    if level.inqueue.load(Ordering::Relaxed) >= APF_QUEUE_LENGTH {
                        self.reject(level, "queue-full");
                        return Err("queue-full");
                    }
                    level.inqueue.fetch_add(1, Ordering::Relaxed);
                    let waited =
                        tokio::time::timeout(APF_QUEUE_WAIT, sem.clone().acquire_owned()).await;
                    level.inqueue.fetch_sub(1, Ordering::Relaxed);
                    match waited {
                        Ok(Ok(p)) => Some(p),
                        _ => {
                            self.reject(level, "time-out");
                            return Err("time-out");
                        }
                    }
                }
            },
        };
        level.executing.fetch_add(1, Ordering::Relaxed);
        Ok(ApfSeat {
            apf: self.clone(),
            flow,
            _permit: permit,
        })
    }

    fn reject(&self, level: &PriorityLevel, reason: &'static str) {
        *lock(&self.rejected)
            .entry((level.flow_schema, level.priority_level, reason))
            .or_default() += 1;
    }
}

/// A request's execution slot; released on drop (for a WATCH after its initial stage).
pub(super) struct ApfSeat {
    apf: Arc<Apf>,
    flow: Flow,
    _permit: Option<OwnedSemaphorePermit>,
}

impl Drop for ApfSeat {
    fn drop(&mut self) {
        self.apf
            .level(self.flow)
            .executing
            .fetch_sub(1, Ordering::Relaxed);
    }
}

/// The priority level of a request (by path and credentials).
pub(super) fn classify(path: &str, headers: &HeaderMap) -> Flow {
    if matches!(
        path,
        "/metrics" | "/healthz" | "/livez" | "/readyz" | "/version"
    ) {
        return Flow::Exempt;
    }
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("Bearer "));
    if bearer {
        Flow::ServiceAccounts
    } else {
        Flow::GlobalDefault
    }
}

pub(super) fn rejected_response(reason: &str) -> Response {
    let mut resp = status_response(
        429,
        "TooManyRequests",
        "Too many requests, please try again later.",
        Some(json!({"retryAfterSeconds": 1})),
    );
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    tracing::debug!("demo apiserver: request rejected by flow control ({reason})");
    resp
}
