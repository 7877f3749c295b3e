//! regscope's own informers: per resource, a list then a watch with bookmarks through the
//! apiserver, the way client-go reflectors and kube-rs watchers do it, reporting every
//! resourceVersion they see so the store can measure how far behind etcd's head an
//! informer runs, and every 410 Gone (and the relist it forces).
//!
//! The raw `Api::watch_metadata` of kube-client is used, not kube-runtime's watcher, so that
//! every 410 is seen and counted. Metadata-only list and watch (`PartialObjectMetadata`) are
//! enough for resourceVersions and keep the traffic small; the apiserver serves them from
//! the same watch cache as full objects.

use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, WatchEvent, WatchParams};
use kube::core::Status;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::model::kubernetes;
use crate::model::{InformerObs, InformerWhat, Observation, Revision, Stamped};

/// `--informers` default: the resources whose informers matter most to a control plane.
pub const DEFAULT_INFORMERS: &[&str] = &["pods", "nodes", "leases", "events"];

/// One resource to inform on. `group` is `""` for the core group; `resource` is the plural
/// (`pods`); `kind` is cosmetic (URLs use group, version and resource).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InformerResource {
    pub group: String,
    pub version: String,
    pub resource: String,
    pub kind: String,
}

impl InformerResource {
    pub fn new(group: &str, version: &str, resource: &str, kind: &str) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
            kind: kind.into(),
        }
    }

    /// kube's description of the resource, for `Api::all_with`.
    pub fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.clone(),
            version: self.version.clone(),
            api_version: if self.group.is_empty() {
                self.version.clone()
            } else {
                format!("{}/{}", self.group, self.version)
            },
            kind: self.kind.clone(),
            plural: self.resource.clone(),
        }
    }

    /// `pods`, `leases.coordination.k8s.io` (kubectl's resource.group form).
    pub fn label(&self) -> String {
        kubernetes::qualified_name(&self.group, &self.resource)
    }
}

/// A built-in resource by plural, singular, short name or `resource.group`.
pub fn resolve_builtin(name: &str) -> Option<InformerResource> {
    let n = name.trim().to_ascii_lowercase();
    kubernetes::builtin_by_name(&n)
        .map(|b| InformerResource::new(b.group, b.version, b.resource, b.kind))
}

/// Parses one `--informers` entry: a known name (`pods`, `leases`, `deploy`, …),
/// `group/version/resource` (`coordination.k8s.io/v1/leases`) or `version/resource` for the
/// core group (`v1/pods`). `Ok(None)`: a plain name that needs discovery (a CRD, an
/// uncommon built-in). `Err`: malformed.
pub fn parse_resource(spec: &str) -> Result<Option<InformerResource>, String> {
    let s = spec.trim();
    let valid = |p: &str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
    };
    let parts: Vec<&str> = s.split('/').collect();
    let (group, version, resource) = match parts.as_slice() {
        [name] => {
            if !valid(name) {
                return Err(format!("'{spec}' is not a resource name"));
            }
            return Ok(resolve_builtin(name));
        }
        [v, r] => ("", *v, *r),
        [g, v, r] => (*g, *v, *r),
        _ => {
            return Err(format!(
                "'{spec}': use a resource name (pods), version/resource (v1/pods) or group/version/resource (coordination.k8s.io/v1/leases)"
            ))
        }
    };
    // The core group may be written as "core" or left empty ("/v1/pods").
    let group = if group == "core" { "" } else { group };
    if !(group.is_empty() || valid(group)) || !valid(version) || !valid(resource) {
        return Err(format!("'{spec}' is not group/version/resource"));
    }
    let resource = resource.to_ascii_lowercase();
    let kind = kubernetes::builtin(group, &resource)
        .map(|b| b.kind.to_string())
        .unwrap_or_else(|| guess_kind(&resource));
    Ok(Some(InformerResource::new(
        group, version, &resource, &kind,
    )))
}

/// `networkpolicies` → `Networkpolicy`: good enough for display; URLs do not use the kind.
fn guess_kind(plural: &str) -> String {
    let singular = if let Some(s) = plural.strip_suffix("ies") {
        format!("{s}y")
    } else if let Some(s) = plural.strip_suffix("ses") {
        format!("{s}s")
    } else {
        plural.strip_suffix('s').unwrap_or(plural).to_string()
    };
    let mut c = singular.chars();
    match c.next() {
        Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
        None => singular,
    }
}

/// Splits and checks the `--informers` list: commas and whitespace separate, `none` (or an
/// empty list) disables informers, duplicates are dropped.
pub fn parse_informer_list(items: &[String]) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        for s in item
            .split([',', ' '])
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            if s.eq_ignore_ascii_case("none") {
                continue;
            }
            parse_resource(s)?;
            if !out.iter().any(|o| o == s) {
                out.push(s.to_string());
            }
        }
    }
    let any_none = items
        .iter()
        .flat_map(|i| i.split([',', ' ']))
        .any(|s| s.trim().eq_ignore_ascii_case("none"));
    if any_none && !out.is_empty() {
        return Err("--informers: 'none' cannot be combined with resources".into());
    }
    Ok(out)
}

/// Finds a resource by name through the apiserver's discovery (core v1, then every group's
/// preferred version): plural, singular, short name, kind, or `resource.group`. Only
/// resources that can be listed and watched qualify.
pub async fn discover_resource(
    client: &kube::Client,
    name: &str,
) -> Result<InformerResource, String> {
    let n = name.trim().to_ascii_lowercase();
    let (want, want_group) = match n.split_once('.') {
        Some((r, g)) => (r.to_string(), Some(g.to_string())),
        None => (n.clone(), None),
    };
    let matches = |r: &k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource| {
        !r.name.contains('/')
            && r.verbs.iter().any(|v| v == "list")
            && r.verbs.iter().any(|v| v == "watch")
            && (r.name == want
                || r.singular_name == want
                || r.kind.to_ascii_lowercase() == want
                || r.short_names.as_ref().is_some_and(|s| s.contains(&want)))
    };
    if want_group.is_none() {
        if let Ok(core) = client.list_core_api_resources("v1").await {
            if let Some(r) = core.resources.iter().find(|r| matches(r)) {
                return Ok(InformerResource::new("", "v1", &r.name, &r.kind));
            }
        }
    }
    let groups = client
        .list_api_groups()
        .await
        .map_err(|e| format!("discovery of '{name}' failed: {}", one_line_kube(&e)))?;
    for g in &groups.groups {
        if want_group.as_deref().is_some_and(|wg| wg != g.name) {
            continue;
        }
        let Some(ver) = g.preferred_version.as_ref().or_else(|| g.versions.first()) else {
            continue;
        };
        let Ok(list) = client.list_api_group_resources(&ver.group_version).await else {
            continue;
        };
        if let Some(r) = list.resources.iter().find(|r| matches(r)) {
            return Ok(InformerResource::new(
                &g.name,
                &ver.version,
                &r.name,
                &r.kind,
            ));
        }
    }
    Err(format!(
        "--informers: the apiserver serves no listable, watchable resource named '{name}'"
    ))
}

/// Resolves `--informers` entries: built-ins and `group/version/resource` directly, other
/// names through discovery. Entries that cannot be resolved become messages (returned).
pub async fn resolve_informers(
    client: &kube::Client,
    specs: &[String],
) -> (Vec<InformerResource>, Vec<String>) {
    let mut out: Vec<InformerResource> = Vec::new();
    let mut errors = Vec::new();
    for s in specs {
        let r = match parse_resource(s) {
            Ok(Some(r)) => Ok(r),
            Ok(None) => discover_resource(client, s).await,
            Err(e) => Err(e),
        };
        match r {
            Ok(r) if !out.contains(&r) => out.push(r),
            Ok(_) => {}
            Err(e) => errors.push(e),
        }
    }
    (out, errors)
}

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
    fn builtins() {
        let p = resolve_builtin("pods").unwrap();
        assert_eq!((p.group.as_str(), p.version.as_str()), ("", "v1"));
        assert_eq!(p.kind, "Pod");
        let l = resolve_builtin("leases").unwrap();
        assert_eq!(l.group, "coordination.k8s.io");
        assert_eq!(l.api_resource().api_version, "coordination.k8s.io/v1");
        assert_eq!(l.label(), "leases.coordination.k8s.io");
        let e = resolve_builtin("events").unwrap();
        assert_eq!((e.group.as_str(), e.kind.as_str()), ("", "Event"));
        assert_eq!(resolve_builtin("no").unwrap().resource, "nodes");
        assert_eq!(resolve_builtin("Deploy").unwrap().group, "apps");
        assert!(resolve_builtin("widgets").is_none());
    }

    #[test]
    fn gvr_syntax() {
        let r = parse_resource("coordination.k8s.io/v1/leases")
            .unwrap()
            .unwrap();
        assert_eq!(r, resolve_builtin("leases").unwrap());
        let r = parse_resource("v1/pods").unwrap().unwrap();
        assert_eq!(r, resolve_builtin("pods").unwrap());
        let r = parse_resource("core/v1/events").unwrap().unwrap();
        assert_eq!(r.group, "");
        let r = parse_resource("example.com/v1alpha1/widgetpolicies")
            .unwrap()
            .unwrap();
        assert_eq!(r.kind, "Widgetpolicy");
        assert_eq!(r.api_resource().plural, "widgetpolicies");
        assert_eq!(parse_resource("widgets").unwrap(), None);
        assert!(parse_resource("a/b/c/d").is_err());
        assert!(parse_resource("pods?x").is_err());
        assert!(parse_resource("/v1/").is_err());
    }

    #[test]
    fn informer_lists() {
        let l =
            |s: &[&str]| parse_informer_list(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        assert_eq!(
            l(&["pods,nodes, leases", "events,pods"]).unwrap(),
            ["pods", "nodes", "leases", "events"]
        );
        assert!(l(&["none"]).unwrap().is_empty());
        assert!(l(&[""]).unwrap().is_empty());
        assert!(l(&[]).unwrap().is_empty());
        assert!(l(&["none,pods"]).is_err());
        assert!(l(&["a/b/c/d"]).is_err());
    }

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

    #[test]
    fn guessed_kinds() {
        assert_eq!(guess_kind("networkpolicies"), "Networkpolicy");
        assert_eq!(guess_kind("ingressclasses"), "Ingressclass");
        assert_eq!(guess_kind("widgets"), "Widget");
    }
}
