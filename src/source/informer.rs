//! regscope's own informers: per resource, a list then a watch with bookmarks through the
//! apiserver, the way client-go reflectors and kube-rs watchers do it, reporting every
//! resourceVersion they see so the store can measure how far behind etcd's head an
//! informer runs, and every 410 Gone (and the relist it forces).
//!
//! The raw `Api::watch_metadata` of kube-client is used, not kube-runtime's watcher, so that
//! every 410 is seen and counted. Metadata-only list and watch (`PartialObjectMetadata`) are
//! enough for resourceVersions and keep the traffic small; the apiserver serves them from
//! the same watch cache as full objects.
//!
//! Which resources to inform on (`--informers`, built-ins, discovery) is `informer/resources.rs`;
//! this file runs the informers.

use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Api, DynamicObject, ListParams, WatchEvent, WatchParams};
use kube::core::Status;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

mod resources;

pub use resources::{
    discover_resource, parse_informer_list, parse_resource, resolve_builtin, resolve_informers,
    InformerResource, DEFAULT_INFORMERS,
};

use crate::model::{InformerObs, InformerWhat, Observation, Revision, Stamped};

/// An etcd-backed resourceVersion as a revision; `None` for anything else (aggregated APIs
/// may use non-numeric versions, which say nothing about etcd).
pub fn parse_resource_version(rv: &str) -> Option<Revision> {
    let rv = rv.trim();
    if rv.is_empty() || !rv.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rv.parse().ok()
}

/// Whether a Status (an ERROR watch event or an error response) is 410 Gone / Expired:
/// "too old resource version", "The resourceVersion for the provided watch is too old",
/// an expired continue token.
pub fn status_is_gone(s: &Status) -> bool {
    s.code == 410 || s.reason == "Expired" || s.reason == "Gone"
}

/// The server's message when a kube error is a 410 Gone.
pub fn gone_message(e: &kube::Error) -> Option<String> {
    match e {
        kube::Error::Api(s) if status_is_gone(s) => Some(status_message(s)),
        _ => None,
    }
}

fn status_message(s: &Status) -> String {
    let m = if s.message.is_empty() {
        format!("{} {}", s.code, s.reason)
    } else {
        s.message.clone()
    };
    m.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One line for a kube error (the API status message when there is one).
pub fn one_line_kube(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => {
            let m = status_message(s);
            if s.code != 0 && !m.starts_with(&s.code.to_string()) {
                format!("HTTP {}: {m}", s.code)
            } else {
                m
            }
        }
        other => super::scrape::error_detail(other),
    }
}

/// Timing knobs of the informers; the defaults are what client-go does, roughly.
#[derive(Clone, Debug)]
pub struct InformerOptions {
    /// Items per list page (`limit`).
    pub page_limit: u32,
    /// Server-side watch timeout (`timeoutSeconds`); the watch is re-opened after it.
    pub watch_timeout_secs: u32,
    /// No event (not even a bookmark) for this long: the watch is deemed dead and re-opened.
    pub idle_timeout: Duration,
    /// Bound on one list page or on opening a watch.
    pub request_timeout: Duration,
    /// First retry delay after an error; doubles up to `backoff_max`.
    pub backoff_min: Duration,
    pub backoff_max: Duration,
}

impl Default for InformerOptions {
    fn default() -> Self {
        Self {
            page_limit: 500,
            watch_timeout_secs: 290,
            idle_timeout: Duration::from_secs(320),
            request_timeout: Duration::from_secs(60),
            backoff_min: Duration::from_secs(1),
            backoff_max: Duration::from_secs(30),
        }
    }
}

/// Runs one informer per resource until the receiver is dropped or the returned handle is
/// aborted (which aborts every informer).
pub fn spawn_informers(
    client: kube::Client,
    resources: Vec<InformerResource>,
    tx: mpsc::Sender<Stamped>,
) -> JoinHandle<()> {
    spawn_informers_with(client, resources, InformerOptions::default(), tx)
}

/// As [`spawn_informers`], with explicit timing.
pub fn spawn_informers_with(
    client: kube::Client,
    resources: Vec<InformerResource>,
    opts: InformerOptions,
    tx: mpsc::Sender<Stamped>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut set = tokio::task::JoinSet::new();
        for r in resources {
            set.spawn(run_informer(client.clone(), r, opts.clone(), tx.clone()));
        }
        // Dropping the set (when this task is aborted) aborts the informers.
        while set.join_next().await.is_some() {}
    })
}

/// Resolves `specs` (see [`resolve_informers`]; unresolvable ones become `Note`s), then
/// runs the informers as [`spawn_informers`]. For callers that should not wait for
/// discovery.
pub fn spawn_informers_for(
    client: kube::Client,
    specs: Vec<String>,
    tx: mpsc::Sender<Stamped>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let (resources, errors) = resolve_informers(&client, &specs).await;
        for e in errors {
            if tx.send(Stamped::now(Observation::Note(e))).await.is_err() {
                return;
            }
        }
        let inner = spawn_informers(client, resources, tx);
        // Abort the informers when this task is aborted.
        struct AbortOnDrop(JoinHandle<()>);
        impl Drop for AbortOnDrop {
            fn drop(&mut self) {
                self.0.abort();
            }
        }
        let mut guard = AbortOnDrop(inner);
        let _ = (&mut guard.0).await;
    })
}

/// Sends one informer observation; false when the receiver is gone.
async fn emit(tx: &mpsc::Sender<Stamped>, r: &InformerResource, what: InformerWhat) -> bool {
    let obs = Observation::Informer(InformerObs {
        group: r.group.clone(),
        resource: r.resource.clone(),
        what,
    });
    tx.send(Stamped::now(obs)).await.is_ok()
}

struct Backoff {
    cur: Duration,
    min: Duration,
    max: Duration,
}

impl Backoff {
    fn new(o: &InformerOptions) -> Self {
        Self {
            cur: o.backoff_min,
            min: o.backoff_min,
            max: o.backoff_max,
        }
    }
    async fn wait(&mut self) {
        tokio::time::sleep(self.cur).await;
        self.cur = (self.cur * 2).min(self.max);
    }
    fn reset(&mut self) {
        self.cur = self.min;
    }
}

/// Why a list failed.
enum ListError {
    Gone(String),
    Other(String),
}

/// Lists every page; returns the list's resourceVersion (of the first page, which pins the
/// snapshot) and the item count.
async fn list_all(
    api: &Api<DynamicObject>,
    opts: &InformerOptions,
) -> Result<(String, u64), ListError> {
    let mut lp = ListParams::default().limit(opts.page_limit);
    let mut rv: Option<String> = None;
    let mut items = 0u64;
    loop {
        let page = match tokio::time::timeout(opts.request_timeout, api.list_metadata(&lp)).await {
            Ok(Ok(p)) => p,
            Ok(Err(e)) => {
                return Err(match gone_message(&e) {
                    Some(m) => ListError::Gone(m),
                    None => ListError::Other(format!("list: {}", one_line_kube(&e))),
                })
            }
            Err(_) => {
                return Err(ListError::Other(format!(
                    "list: timed out after {}",
                    humantime::format_duration(opts.request_timeout)
                )))
            }
        };
        items += page.items.len() as u64;
        if rv.is_none() {
            rv = page.metadata.resource_version.clone();
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => lp = lp.continue_token(&c),
            None => break,
        }
    }
    Ok((rv.unwrap_or_default(), items))
}

/// What ended one watch.
enum WatchEnd {
    /// The server closed it (timeoutSeconds) or it went idle: re-open from the last version.
    Closed { events: u64 },
    /// 410: relist.
    Gone { events: u64 },
    /// Another error (already reported): back off, then re-open from the last version.
    Failed { events: u64 },
    /// The receiver is gone.
    Stop,
}

/// The informer loop of one resource: list, watch, re-watch, relist on 410.
async fn run_informer(
    client: kube::Client,
    res: InformerResource,
    opts: InformerOptions,
    tx: mpsc::Sender<Stamped>,
) {
    let api: Api<DynamicObject> = Api::all_with(client, &res.api_resource());
    let mut backoff = Backoff::new(&opts);
    let mut listed_once = false;
    let mut rv_warned = false;
    loop {
        if tx.is_closed() {
            return;
        }
        let (mut rv, items) = match list_all(&api, &opts).await {
            Ok(x) => x,
            Err(ListError::Gone(message)) => {
                if !emit(&tx, &res, InformerWhat::Gone { message }).await {
                    return;
                }
                backoff.wait().await;
                continue;
            }
            Err(ListError::Other(message)) => {
                if !emit(&tx, &res, InformerWhat::Error { message }).await {
                    return;
                }
                backoff.wait().await;
                continue;
            }
        };
        backoff.reset();
        match parse_resource_version(&rv) {
            Some(resource_version) => {
                let what = InformerWhat::Listed {
                    resource_version,
                    items,
                    relist: listed_once,
                };
                if !emit(&tx, &res, what).await {
                    return;
                }
            }
            None => {
                if !rv_warned {
                    rv_warned = true;
                    let message = format!(
                        "list resourceVersion '{rv}' is not an etcd revision; lag is not measured for it"
                    );
                    if !emit(&tx, &res, InformerWhat::Error { message }).await {
                        return;
                    }
                }
            }
        }
        listed_once = true;
        // Watch from the list's version until a 410 forces a relist.
        loop {
            let started = Instant::now();
            match watch_once(&api, &res, &opts, &tx, &mut rv, &mut rv_warned).await {
                WatchEnd::Stop => return,
                WatchEnd::Closed { events } => {
                    if events > 0 {
                        backoff.reset();
                    } else if started.elapsed() < Duration::from_secs(1) {
                        // A server that closes watches at once must not make us spin.
                        backoff.wait().await;
                    }
                }
                WatchEnd::Failed { events } => {
                    if events > 0 {
                        backoff.reset();
                    }
                    backoff.wait().await;
                }
                WatchEnd::Gone { events } => {
                    if events > 0 {
                        backoff.reset();
                    } else {
                        // 410 right after a list: do not hammer the apiserver.
                        backoff.wait().await;
                    }
                    break;
                }
            }
        }
    }
}

/// The watch parameters: bookmarks on (kube's default; `allowWatchBookmarks=true`) and
/// the server-side timeout.
fn watch_params(opts: &InformerOptions) -> WatchParams {
    WatchParams::default().timeout(opts.watch_timeout_secs)
}

/// Opens one watch from `rv` and reports its events until it ends; `rv` follows every
/// event, bookmarks included.
async fn watch_once(
    api: &Api<DynamicObject>,
    res: &InformerResource,
    opts: &InformerOptions,
    tx: &mpsc::Sender<Stamped>,
    rv: &mut String,
    rv_warned: &mut bool,
) -> WatchEnd {
    let wp = watch_params(opts);
    let stream = match tokio::time::timeout(opts.request_timeout, api.watch_metadata(&wp, rv)).await
    {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            return match gone_message(&e) {
                Some(message) => {
                    if emit(tx, res, InformerWhat::Gone { message }).await {
                        WatchEnd::Gone { events: 0 }
                    } else {
                        WatchEnd::Stop
                    }
                }
                None => {
                    let message = format!("watch: {}", one_line_kube(&e));
                    if emit(tx, res, InformerWhat::Error { message }).await {
                        WatchEnd::Failed { events: 0 }
                    } else {
                        WatchEnd::Stop
                    }
                }
            }
        }
        Err(_) => {
            let message = format!(
                "watch: no response within {}",
                humantime::format_duration(opts.request_timeout)
            );
            return if emit(tx, res, InformerWhat::Error { message }).await {
                WatchEnd::Failed { events: 0 }
            } else {
                WatchEnd::Stop
            };
        }
    };
    let mut stream = std::pin::pin!(stream);
    let mut events = 0u64;
    loop {
        let item = match tokio::time::timeout(opts.idle_timeout, stream.next()).await {
            Ok(Some(item)) => item,
            Ok(None) => return WatchEnd::Closed { events },
            Err(_) => {
                let message = format!(
                    "watch: nothing received for {}; re-opening it",
                    humantime::format_duration(opts.idle_timeout)
                );
                return if emit(tx, res, InformerWhat::Error { message }).await {
                    WatchEnd::Closed { events }
                } else {
                    WatchEnd::Stop
                };
            }
        };
        let (new_rv, bookmark) = match item {
            Ok(WatchEvent::Added(o)) | Ok(WatchEvent::Modified(o)) | Ok(WatchEvent::Deleted(o)) => {
                (o.metadata.resource_version.unwrap_or_default(), false)
            }
            Ok(WatchEvent::Bookmark(b)) => (b.metadata.resource_version, true),
            Ok(WatchEvent::Error(status)) => {
                let (what, end) = if status_is_gone(&status) {
                    (
                        InformerWhat::Gone {
                            message: status_message(&status),
                        },
                        WatchEnd::Gone { events },
                    )
                } else {
                    (
                        InformerWhat::Error {
                            message: format!("watch: {}", status_message(&status)),
                        },
                        WatchEnd::Failed { events },
                    )
                };
                return if emit(tx, res, what).await {
                    end
                } else {
                    WatchEnd::Stop
                };
            }
            Err(e) => {
                let (what, end) = match gone_message(&e) {
                    Some(message) => (InformerWhat::Gone { message }, WatchEnd::Gone { events }),
                    None => (
                        InformerWhat::Error {
                            message: format!("watch: {}", one_line_kube(&e)),
                        },
                        WatchEnd::Failed { events },
                    ),
                };
                return if emit(tx, res, what).await {
                    end
                } else {
                    WatchEnd::Stop
                };
            }
        };
        events += 1;
        match parse_resource_version(&new_rv) {
            Some(resource_version) => {
                let what = InformerWhat::Event {
                    resource_version,
                    bookmark,
                };
                if !emit(tx, res, what).await {
                    return WatchEnd::Stop;
                }
            }
            None if !*rv_warned => {
                *rv_warned = true;
                let message = format!(
                    "watch resourceVersion '{new_rv}' is not an etcd revision; such events are skipped"
                );
                if !emit(tx, res, InformerWhat::Error { message }).await {
                    return WatchEnd::Stop;
                }
            }
            None => {}
        }
        if !new_rv.is_empty() {
            *rv = new_rv;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_versions() {
        assert_eq!(parse_resource_version("12345"), Some(12345));
        assert_eq!(parse_resource_version(" 7 "), Some(7));
        assert_eq!(parse_resource_version(""), None);
        assert_eq!(parse_resource_version("abc"), None);
        assert_eq!(parse_resource_version("-1"), None);
        assert_eq!(parse_resource_version("99999999999999999999999"), None);
    }

    #[test]
    fn gone_detection() {
        // An ERROR watch event as the apiserver sends it (cacher: "too old resource version").
        let line = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 100 (250)","reason":"Expired","code":410}}"#;
        let ev: WatchEvent<DynamicObject> = serde_json::from_str(line).unwrap();
        let WatchEvent::Error(s) = ev else {
            panic!("not an error event")
        };
        assert!(status_is_gone(&s));
        assert_eq!(status_message(&s), "too old resource version: 100 (250)");
        // An HTTP 410 answer to a watch/list request, as kube reports it.
        let e = kube::Error::Api(
            Status::failure(
                "The resourceVersion for the provided watch is too old.",
                "Expired",
            )
            .with_code(410)
            .boxed(),
        );
        assert_eq!(
            gone_message(&e).as_deref(),
            Some("The resourceVersion for the provided watch is too old.")
        );
        // A non-JSON 410 body (kube rebuilds a Status with the code).
        let e = kube::Error::Api(
            Status::failure("gone", "Failed to parse error data")
                .with_code(410)
                .boxed(),
        );
        assert!(gone_message(&e).is_some());
        // Other errors are not Gone.
        let e = kube::Error::Api(
            Status::failure("forbidden", "Forbidden")
                .with_code(403)
                .boxed(),
        );
        assert!(gone_message(&e).is_none());
        assert_eq!(one_line_kube(&e), "HTTP 403: forbidden");
        let ev: WatchEvent<DynamicObject> = serde_json::from_str(
            r#"{"type":"ERROR","object":{"kind":"Status","status":"Failure","message":"internal error","reason":"InternalError","code":500}}"#,
        )
        .unwrap();
        let WatchEvent::Error(s) = ev else { panic!() };
        assert!(!status_is_gone(&s));
    }

    #[test]
    fn watches_ask_for_bookmarks() {
        let wp = watch_params(&InformerOptions::default());
        assert!(wp.bookmarks);
        assert_eq!(wp.timeout, Some(290));
    }
}
