//! The demo's simulated kube-apiserver: a read-only HTTP endpoint on loopback in front of the
//! [`PrivateEtcd`], so that the console's apiserver panels (metrics, informer lag, 410 risk)
//! work in `regscope demo` with real numbers and real delays.
//!
//! What it models (k8s.io/apiserver v1.34, `pkg/storage/cacher` and `pkg/storage/etcd3`):
//!
//! - The watch cache ("cacher"): a list of every resource at one etcd revision, then ONE etcd
//!   watch on the key prefix from the next revision (a reflector), feeding per resource a ring
//!   of the last [`DemoApiserverConfig::watch_cache_capacity`] events and the current objects.
//!   The cache's resourceVersion advances with every event under the prefix and with etcd's
//!   progress notifications: those etcd sends on the watch itself (ordered with its events;
//!   how often is etcd's `--experimental-watch-progress-notify-interval`, 10 min by default,
//!   kubeadm sets 5 s), and, on an etcd whose requested progress notifications are ordered
//!   with the events (3.4.31+, 3.5.13+, 3.6; the same versions kube-apiserver requires for
//!   `RequestWatchProgress`), one requested every bookmark interval. Older etcds (Debian's
//!   3.4.23) answer a progress request out of order with the events still in flight, so they
//!   are not asked. When etcd answers the watch with "compacted" (the watch had to be
//!   reopened from a compacted revision), everything is relisted and
//!   `apiserver_watch_cache_initializations_total` counts it.
//! - Lists: `GET /api/v1/{resource}`, `/api/v1/namespaces/{ns}/{resource}`,
//!   `/apis/{group}/{version}/...`. Without `resourceVersion` a consistent read: from the cache
//!   after waiting for it to reach etcd's current revision (fetched with a count-only range,
//!   `listWithCount`) when etcd supports progress requests, else from etcd (`list`), as
//!   kube-apiserver does without `ConsistentListFromCache` support; `0` or `N` are served
//!   from the cache (waiting up to 3 s for `N`); `resourceVersionMatch=Exact` reads etcd at
//!   revision `N` and answers `410 Expired` when etcd has compacted it.
//! - Watches (`?watch=1`): newline-delimited JSON events; `resourceVersion` unset or `0` starts
//!   with the current objects as `ADDED`; bookmarks every
//!   [`DemoApiserverConfig::bookmark_interval`] when `allowWatchBookmarks=true`; a
//!   resourceVersion older than the resource's ring answers one `ERROR` event with a 410
//!   `Expired` Status (`too old resource version: N (M)`, as the cacher says), one older than
//!   etcd's compaction another 410 (`The resourceVersion for the provided watch is too old.`,
//!   as the etcd3 watcher says; checked with a count-only range at `N`, recorded as
//!   `listWithCount`), so the two sources of 410 can be told apart. A resourceVersion the
//!   cache has not reached yet is waited for up to 3 s, then answered with a 504 `Timeout`
//!   ERROR event ("Too large resource version").
//! - Unresponsive watchers: a watcher whose position falls out of its resource's ring is
//!   closed and counted in `apiserver_terminated_watchers_total`. [`SlowWatcher`] makes the
//!   first watch opened on one resource (only that one; its reconnect is a normal watch)
//!   sleep before each event so this happens for real. A client that stops reading is caught
//!   the same way (each watcher has a 16-event buffer).
//! - Flow control: requests with a bearer token (the kubeconfig's) are flow schema
//!   `service-accounts` at priority level `workload-low`, other resource requests
//!   `global-default`, `/metrics` and health checks `exempt`. Each non-exempt level has 8
//!   seats and a queue of 64; a request waits at most 10 s, else 429 (`queue-full`,
//!   `time-out`). A WATCH holds its seat only until its initial events are sent.
//! - `/metrics` in the 1.34 format: `etcd_request_duration_seconds` from [`StorageLatencies`]
//!   (the simulation's writes and this server's own reads, timed around the real etcd
//!   calls), the watch-cache families, `apiserver_request_*` for the requests served here,
//!   and API Priority and Fairness gauges over its real request slots.
//!
//! Not modelled: label and field selectors, `limit`/`continue` paging (a list returns
//! everything), protobuf responses, writes of any kind, the dynamic sizing of the ring.
//! `apiserver_watch_cache_events_dispatched_total` counts each event or bookmark written to
//! a client watcher (kube-apiserver counts events handed to its dispatcher).
//!
//! It never writes to etcd. Secrets are refused with 403.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::convert::Infallible;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use etcd_client::{Client, EventType, GetOptions, WatchOptions};
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

use super::etcd_server::{DemoError, PrivateEtcd};
use crate::decode::{decode, DecodeOptions};
use crate::model::{prefix_end, KeyPath};

/// The `git_version` this server reports in `kubernetes_build_info` and `/version`.
pub const DEMO_GIT_VERSION: &str = "v1.34.0-regscope-demo";

/// The kubeconfig context (and cluster and user) name of [`DemoApiserver::kubeconfig_path`].
pub const KUBECONFIG_CONTEXT: &str = "regscope-demo";

/// Upper bounds (seconds) of the buckets of `etcd_request_duration_seconds` and
/// `apiserver_request_duration_seconds`, as kube-apiserver 1.34 declares them.
pub const LATENCY_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// Keys per etcd range request when listing (the reflector pages its lists too).
const LIST_PAGE: i64 = 1000;
/// How long a list or watch waits for the cache to reach a requested resourceVersion before
/// answering "Too large resource version" (the cacher's `blockTimeout`, 3 s).
const FRESHNESS_WAIT: Duration = Duration::from_secs(3);
/// Watch duration when the client gives no `timeoutSeconds` (kube-apiserver picks 30–60 min).
const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(1800);
/// Events buffered between a watcher and its HTTP response (the cacher's per-watcher channel).
const WATCH_CHANNEL: usize = 16;
/// Requests one non-exempt priority level executes at once (its seats).
const APF_SEATS: usize = 8;
/// Requests that may wait in one priority level's queue; more are rejected (`queue-full`).
const APF_QUEUE_LENGTH: i64 = 64;
/// How long a request may wait in an APF queue before it is rejected (`time-out`).
const APF_QUEUE_WAIT: Duration = Duration::from_secs(10);
/// Time allowed for etcd status and count requests made while answering.
const ETCD_CALL_TIMEOUT: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

/// Settings of the simulated apiserver.
#[derive(Debug, Clone)]
pub struct DemoApiserverConfig {
    /// etcd key prefix (kube-apiserver's `--etcd-prefix`). Default `/registry`.
    pub prefix: String,
    /// Events kept per resource in the watch cache's ring. kube-apiserver's fixed default was
    /// 100 (`--default-watch-cache-size`) before the ring became dynamically sized; here it is
    /// fixed. A watcher more than this many events of its resource behind is terminated, and a
    /// resourceVersion older than the ring is answered 410. Default 100; at least 1.
    pub watch_cache_capacity: usize,
    /// How often a watcher that allows bookmarks gets a `BOOKMARK` with the cache's current
    /// resourceVersion (only when it has received every event before it), and how often etcd
    /// is asked for a progress notification (when it orders them, see the module docs).
    /// kube-apiserver bookmarks about once a minute; default here 1 s so the demo shows
    /// progress.
    pub bookmark_interval: Duration,
    /// Makes the first watch on one resource slow, so its lag and termination can be seen.
    /// Default `None`.
    pub slow_watcher: Option<SlowWatcher>,
}

impl Default for DemoApiserverConfig {
    fn default() -> Self {
        DemoApiserverConfig {
            prefix: "/registry".to_string(),
            watch_cache_capacity: 100,
            bookmark_interval: Duration::from_secs(1),
            slow_watcher: None,
        }
    }
}

/// A deliberately slow watcher: for the FIRST watch opened on `resource`, the server sleeps
/// `delay_per_event` before sending each event (initial `ADDED` events included), so that the
/// watcher falls behind in real time. When it is more than the ring's capacity behind it is
/// terminated like an unresponsive watcher, and its reconnect from its last resourceVersion
/// gets a 410.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlowWatcher {
    /// The resource as `kubectl` names it with its group: `events`, `pods`,
    /// `leases.coordination.k8s.io`, `deployments.apps`.
    pub resource: String,
    /// Sleep before each event sent to that watcher.
    pub delay_per_event: Duration,
}

// ---------------------------------------------------------------------------------------------
// Storage latencies
// ---------------------------------------------------------------------------------------------

/// A Prometheus-style histogram over [`LATENCY_BUCKETS`] (per-bucket counts, made cumulative
/// when rendered).
#[derive(Debug, Clone, Default)]
struct Histogram {
    buckets: [u64; LATENCY_BUCKETS.len()],
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        let seconds = if seconds.is_finite() {
            seconds.max(0.0)
        } else {
            0.0
        };
        if let Some(i) = LATENCY_BUCKETS.iter().position(|b| seconds <= *b) {
            self.buckets[i] += 1;
        }
        self.sum += seconds;
        self.count += 1;
    }

    /// `_bucket`, `_sum` and `_count` lines; `labels` is the rendered label list without braces.
    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        for (bound, n) in LATENCY_BUCKETS.iter().zip(self.buckets) {
            cumulative += n;
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels},le=\"{}\"}} {cumulative}",
                fmt_f64(*bound)
            );
        }
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", fmt_f64(self.sum));
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count);
    }
}

#[derive(Debug, Clone, Default)]
struct EtcdOp {
    latency: Histogram,
    errors: u64,
}

/// Storage latencies measured by the simulation around its real etcd calls (and by the demo
/// apiserver around its own reads), as Prometheus-style cumulative histograms keyed by
/// `(operation, group, resource)`: kube-apiserver's `etcd_request_duration_seconds`,
/// `etcd_requests_total` and `etcd_request_errors_total` (1.34 labels). Thread-safe; share it
/// in an `Arc` between [`super::SimConfig::latencies`] and [`DemoApiserver::start`].
#[derive(Debug, Default)]
pub struct StorageLatencies {
    ops: Mutex<BTreeMap<(String, String, String), EtcdOp>>,
}

/// One `(operation, group, resource)` row of [`StorageLatencies::snapshot`].
#[derive(Debug, Clone, PartialEq)]
pub struct StorageLatency {
    /// `create`, `update`, `delete`, `get`, `list`, `listWithCount`.
    pub operation: String,
    /// API group, `""` for the core group.
    pub group: String,
    /// Resource, e.g. `pods`, `leases`.
    pub resource: String,
    /// Requests observed (failed ones included, as kube-apiserver counts them).
    pub count: u64,
    /// Total elapsed seconds.
    pub sum_seconds: f64,
    /// Requests that returned an error.
    pub errors: u64,
}

impl StorageLatencies {
    /// An empty set of histograms.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one etcd request: `operation` (`create`, `update`, `delete`, `get`, `list`,
    /// `listWithCount`), the API `group` (`""` = core) and `resource` of the key, its elapsed
    /// wall-clock time in `seconds`, and whether it failed. Like kube-apiserver's
    /// `RecordEtcdRequest`, the latency and request count include failed requests; `error`
    /// also counts it in `etcd_request_errors_total`.
    pub fn observe(&self, operation: &str, group: &str, resource: &str, seconds: f64, error: bool) {
        let mut ops = lock(&self.ops);
        let op = ops
            .entry((
                operation.to_string(),
                group.to_string(),
                resource.to_string(),
            ))
            .or_default();
        op.latency.observe(seconds);
        if error {
            op.errors += 1;
        }
    }

    /// Requests observed so far for `(operation, group, resource)`.
    pub fn count(&self, operation: &str, group: &str, resource: &str) -> u64 {
        lock(&self.ops)
            .get(&(
                operation.to_string(),
                group.to_string(),
                resource.to_string(),
            ))
            .map_or(0, |o| o.latency.count)
    }

    /// Every row observed so far, ordered by operation, group, resource.
    pub fn snapshot(&self) -> Vec<StorageLatency> {
        lock(&self.ops)
            .iter()
            .map(|((operation, group, resource), o)| StorageLatency {
                operation: operation.clone(),
                group: group.clone(),
                resource: resource.clone(),
                count: o.latency.count,
                sum_seconds: o.latency.sum,
                errors: o.errors,
            })
            .collect()
    }

    fn render(&self, out: &mut String) {
        let ops = lock(&self.ops).clone();
        family(
            out,
            "etcd_request_duration_seconds",
            "[ALPHA] Etcd request latency in seconds for each operation and object type.",
            "histogram",
        );
        for ((op, group, resource), o) in &ops {
            let labels = format!(
                "group=\"{}\",operation=\"{}\",resource=\"{}\"",
                esc(group),
                esc(op),
                esc(resource)
            );
            o.latency
                .render(out, "etcd_request_duration_seconds", &labels);
        }
        family(
            out,
            "etcd_requests_total",
            "[ALPHA] Etcd request counts for each operation and object type.",
            "counter",
        );
        for ((op, group, resource), o) in &ops {
            let _ = writeln!(
                out,
                "etcd_requests_total{{group=\"{}\",operation=\"{}\",resource=\"{}\"}} {}",
                esc(group),
                esc(op),
                esc(resource),
                o.latency.count
            );
        }
        family(
            out,
            "etcd_request_errors_total",
            "[ALPHA] Etcd failed request counts for each operation and object type.",
            "counter",
        );
        for ((op, group, resource), o) in &ops {
            let _ = writeln!(
                out,
                "etcd_request_errors_total{{group=\"{}\",operation=\"{}\",resource=\"{}\"}} {}",
                esc(group),
                esc(op),
                esc(resource),
                o.errors
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Resources and keys
// ---------------------------------------------------------------------------------------------

/// A built-in resource the server knows the API version and kind of.
struct Builtin {
    resource: &'static str,
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    namespaced: bool,
}

const fn b(
    resource: &'static str,
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    namespaced: bool,
) -> Builtin {
    Builtin {
        resource,
        group,
        version,
        kind,
        namespaced,
    }
}

/// Built-in resources stored without their group in the key (`/registry/leases/...` holds
/// `coordination.k8s.io` Leases); a watch cache is created for each at start, as
/// kube-apiserver does for every resource it serves.
const BUILTINS: &[Builtin] = &[
    b("pods", "", "v1", "Pod", true),
    b("nodes", "", "v1", "Node", false),
    b("namespaces", "", "v1", "Namespace", false),
    b("configmaps", "", "v1", "ConfigMap", true),
    b("secrets", "", "v1", "Secret", true),
    b("services", "", "v1", "Service", true),
    b("endpoints", "", "v1", "Endpoints", true),
    b("events", "", "v1", "Event", true),
    b("serviceaccounts", "", "v1", "ServiceAccount", true),
    b("persistentvolumes", "", "v1", "PersistentVolume", false),
    b(
        "persistentvolumeclaims",
        "",
        "v1",
        "PersistentVolumeClaim",
        true,
    ),
    b("leases", "coordination.k8s.io", "v1", "Lease", true),
    b("deployments", "apps", "v1", "Deployment", true),
    b("replicasets", "apps", "v1", "ReplicaSet", true),
    b("daemonsets", "apps", "v1", "DaemonSet", true),
    b("statefulsets", "apps", "v1", "StatefulSet", true),
    b(
        "controllerrevisions",
        "apps",
        "v1",
        "ControllerRevision",
        true,
    ),
    b("jobs", "batch", "v1", "Job", true),
    b("cronjobs", "batch", "v1", "CronJob", true),
    b(
        "endpointslices",
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        true,
    ),
];

fn builtin(group: &str, resource: &str) -> Option<&'static Builtin> {
    BUILTINS
        .iter()
        .find(|b| b.resource == resource && b.group == group)
}

/// The resource as `kubectl` names it: `pods`, `leases.coordination.k8s.io`.
fn display_name(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

/// The API group and resource of an etcd key, as kube-apiserver labels its storage metrics:
/// the resource is derived from the key path like [`KeyPath::parse`] does (`services/specs`
/// is `services`, `<group>/<resource>` for resources stored under their group), and built-in
/// resources stored without a group get theirs (`/registry/leases/...` is
/// `("coordination.k8s.io", "leases")`, `/registry/deployments/...` `("apps",
/// "deployments")`; core resources `""`). `None` for keys outside `prefix` and for non-object
/// keys such as `ranges/serviceips`.
pub fn storage_group_resource(prefix: &str, key: &[u8]) -> Option<(String, String)> {
    let prefix = prefix.trim_end_matches('/');
    let rest = key.strip_prefix(prefix.as_bytes())?.strip_prefix(b"/")?;
    if rest.is_empty() {
        return None;
    }
    let kp = KeyPath::parse(prefix.as_bytes(), key);
    let resource = kp.resource.as_ref();
    if resource.is_empty() || resource.contains('/') {
        return None;
    }
    match resource.split_once('.') {
        Some((res, group)) => Some((group.to_string(), res.to_string())),
        None => {
            let group = BUILTINS
                .iter()
                .find(|b| b.resource == resource)
                .map_or("", |b| b.group);
            Some((group.to_string(), resource.to_string()))
        }
    }
}

/// The key prefix (with trailing `/`) holding the resource `key` belongs to, segmented like
/// [`KeyPath::parse`]: `/registry/pods/`, `/registry/services/specs/`,
/// `/registry/example.com/widgets/`.
fn resource_key_prefix(prefix: &str, key: &[u8]) -> Option<String> {
    let prefix = prefix.trim_end_matches('/');
    let rest = key.strip_prefix(prefix.as_bytes())?.strip_prefix(b"/")?;
    let rest = std::str::from_utf8(rest).ok()?;
    let segs: Vec<&str> = rest.split('/').collect();
    let n = match segs.as_slice() {
        [first, _, ..] if first.contains('.') => 2,
        ["services", "specs" | "endpoints", ..] | ["ranges", _, ..] => 2,
        [_, ..] => 1,
        [] => return None,
    };
    if segs.len() <= n {
        return None;
    }
    Some(format!("{prefix}/{}/", segs[..n].join("/")))
}

/// The default key prefix of a built-in resource that has no keys yet.
fn builtin_key_prefix(prefix: &str, b: &Builtin) -> String {
    let prefix = prefix.trim_end_matches('/');
    match b.resource {
        "services" => format!("{prefix}/services/specs/"),
        "endpoints" => format!("{prefix}/services/endpoints/"),
        "nodes" => format!("{prefix}/minions/"),
        r => format!("{prefix}/{r}/"),
    }
}

/// What the server knows about one resource.
#[derive(Debug, Clone)]
struct ResourceInfo {
    group: String,
    resource: String,
    /// API version served (`v1`); learned from the objects for custom resources.
    version: String,
    /// Kind (`Pod`); learned from the objects for custom resources.
    kind: String,
    namespaced: bool,
    key_prefix: String,
}

impl ResourceInfo {
    fn name(&self) -> String {
        display_name(&self.group, &self.resource)
    }

    fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    fn for_builtin(prefix: &str, b: &Builtin) -> Self {
        ResourceInfo {
            group: b.group.to_string(),
            resource: b.resource.to_string(),
            version: b.version.to_string(),
            kind: b.kind.to_string(),
            namespaced: b.namespaced,
            key_prefix: builtin_key_prefix(prefix, b),
        }
    }

    fn for_key(prefix: &str, key: &[u8]) -> Option<Self> {
        let (group, resource) = storage_group_resource(prefix, key)?;
        let key_prefix = resource_key_prefix(prefix, key)?;
        let kp = KeyPath::parse(prefix.trim_end_matches('/').as_bytes(), key);
        if kp.name.is_empty() {
            return None;
        }
        Some(match builtin(&group, &resource) {
            Some(b) => ResourceInfo {
                key_prefix,
                ..ResourceInfo::for_builtin(prefix, b)
            },
            None => ResourceInfo {
                version: if group.is_empty() {
                    "v1".to_string()
                } else {
                    String::new()
                },
                kind: String::new(),
                namespaced: kp.namespace.is_some(),
                group,
                resource,
                key_prefix,
            },
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Watch cache
// ---------------------------------------------------------------------------------------------

/// One object in the cache: its JSON with `metadata.resourceVersion` set.
#[derive(Debug, Clone)]
struct CachedObject {
    namespace: Option<String>,
    json: Arc<str>,
}

/// One event in a resource's ring.
#[derive(Debug)]
struct CachedEvent {
    /// `ADDED`, `MODIFIED`, `DELETED`.
    kind: &'static str,
    /// The etcd revision of the change (the object's resourceVersion).
    revision: i64,
    namespace: Option<String>,
    /// The object (for `DELETED` its last state, with the deletion's resourceVersion).
    object: Arc<str>,
}

/// Counters a watcher updates without the cache lock.
#[derive(Debug, Default)]
struct WatcherCounters {
    dispatched: AtomicU64,
    terminated: AtomicU64,
}

/// One resource's cacher.
#[derive(Debug)]
struct ResourceCache {
    info: ResourceInfo,
    objects: BTreeMap<Vec<u8>, CachedObject>,
    ring: VecDeque<Arc<CachedEvent>>,
    /// Sequence number of `ring[0]`; sequence numbers never repeat.
    first_seq: u64,
    /// The revision of the last (re)list.
    list_revision: i64,
    /// Whether an event was dropped from the ring since the last list.
    evicted: bool,
    /// Bumped by a relist: watchers of an older epoch are closed.
    epoch: u64,
    received: u64,
    initializations: u64,
    counters: Arc<WatcherCounters>,
}

impl ResourceCache {
    fn new(info: ResourceInfo, list_revision: i64) -> Self {
        ResourceCache {
            info,
            objects: BTreeMap::new(),
            ring: VecDeque::new(),
            first_seq: 0,
            list_revision,
            evicted: false,
            epoch: 0,
            received: 0,
            initializations: 1,
            counters: Arc::default(),
        }
    }

    fn next_seq(&self) -> u64 {
        self.first_seq + self.ring.len() as u64
    }

    /// The oldest resourceVersion a watch can start from (the cacher's `oldest - 1`).
    fn oldest_watchable(&self) -> i64 {
        match self.ring.front() {
            Some(ev) if self.evicted => ev.revision - 1,
            _ => self.list_revision,
        }
    }

    fn push(&mut self, ev: CachedEvent, capacity: usize) {
        self.ring.push_back(Arc::new(ev));
        while self.ring.len() > capacity.max(1) {
            self.ring.pop_front();
            self.first_seq += 1;
            self.evicted = true;
        }
        self.received += 1;
    }

    /// Replaces the contents after a (re)list at `revision`.
    fn replace(&mut self, objects: BTreeMap<Vec<u8>, CachedObject>, revision: i64) {
        self.first_seq = self.next_seq();
        self.ring.clear();
        self.objects = objects;
        self.list_revision = revision;
        self.evicted = false;
        self.epoch += 1;
        self.initializations += 1;
    }

    /// Learns version and kind of a custom resource from a decoded object.
    fn learn(&mut self, obj: &Value) {
        if self.info.kind.is_empty() {
            if let Some(k) = obj.get("kind").and_then(Value::as_str) {
                self.info.kind = k.to_string();
            }
        }
        if self.info.version.is_empty() {
            if let Some(av) = obj.get("apiVersion").and_then(Value::as_str) {
                self.info.version = av.rsplit('/').next().unwrap_or(av).to_string();
            }
        }
    }
}

#[derive(Debug, Default)]
struct CacheState {
    /// The cache's resourceVersion: the last event or progress notification applied.
    revision: i64,
    /// By display name (`pods`, `leases.coordination.k8s.io`).
    resources: BTreeMap<String, ResourceCache>,
}

// ---------------------------------------------------------------------------------------------
// Request metrics and flow control
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct RequestLabels {
    verb: &'static str,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    scope: &'static str,
    component: &'static str,
}

impl RequestLabels {
    fn non_resource(path: &str) -> Self {
        RequestLabels {
            verb: "GET",
            group: String::new(),
            version: String::new(),
            resource: String::new(),
            subresource: path.to_string(),
            scope: "",
            component: "",
        }
    }

    fn render(&self) -> String {
        format!(
            "component=\"{}\",dry_run=\"\",group=\"{}\",resource=\"{}\",scope=\"{}\",subresource=\"{}\",verb=\"{}\",version=\"{}\"",
            self.component,
            esc(&self.group),
            esc(&self.resource),
            self.scope,
            esc(&self.subresource),
            self.verb,
            esc(&self.version)
        )
    }
}

#[derive(Debug, Default, Clone)]
struct RequestStats {
    latency: Histogram,
    codes: BTreeMap<u16, u64>,
}

/// One API Priority and Fairness priority level with its flow schema.
#[derive(Debug)]
struct PriorityLevel {
    flow_schema: &'static str,
    priority_level: &'static str,
    /// `None` for exempt (never queued).
    seats: Option<Arc<Semaphore>>,
    inqueue: AtomicI64,
    executing: AtomicI64,
}

/// Which priority level a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
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
struct Apf {
    levels: [PriorityLevel; 3],
    rejected: Mutex<BTreeMap<(&'static str, &'static str, &'static str), u64>>,
}

impl Apf {
    fn new() -> Self {
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
    async fn acquire(self: &Arc<Self>, flow: Flow) -> Result<ApfSeat, &'static str> {
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
struct ApfSeat {
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

// ---------------------------------------------------------------------------------------------
// Shared server state
// ---------------------------------------------------------------------------------------------

struct Shared {
    cfg: DemoApiserverConfig,
    prefix: String,
    client: Client,
    latencies: Arc<StorageLatencies>,
    cache: Mutex<CacheState>,
    /// Bumped whenever the cache changes; watchers wait on it.
    changed: watch::Sender<u64>,
    /// Asks the cacher to request an etcd progress notification.
    progress: mpsc::Sender<()>,
    /// Whether etcd orders requested progress notifications with the watch's events (see
    /// [`progress_requests_ordered`]); if not, none are requested.
    progress_requests: bool,
    requests: Mutex<BTreeMap<RequestLabels, RequestStats>>,
    apf: Arc<Apf>,
    slow_claimed: AtomicBool,
    stop: watch::Receiver<bool>,
}

impl Shared {
    fn cache(&self) -> MutexGuard<'_, CacheState> {
        lock(&self.cache)
    }

    fn record_request(&self, labels: RequestLabels, code: u16, elapsed: Duration) {
        let mut reqs = lock(&self.requests);
        let stats = reqs.entry(labels).or_default();
        stats.latency.observe(elapsed.as_secs_f64());
        *stats.codes.entry(code).or_default() += 1;
    }

    /// One etcd range request, timed and recorded under `operation`.
    async fn etcd_get(
        &self,
        operation: &str,
        group_resource: (&str, &str),
        key: impl Into<Vec<u8>>,
        opts: GetOptions,
    ) -> Result<etcd_client::GetResponse, etcd_client::Error> {
        let mut client = self.client.clone();
        let started = Instant::now();
        let result =
            match tokio::time::timeout(ETCD_CALL_TIMEOUT, client.get(key, Some(opts))).await {
                Ok(r) => r,
                Err(_) => Err(etcd_client::Error::InvalidArgs(
                    "etcd request timed out".to_string(),
                )),
            };
        self.latencies.observe(
            operation,
            group_resource.0,
            group_resource.1,
            started.elapsed().as_secs_f64(),
            result.is_err(),
        );
        result
    }

    /// Lists one resource's keys at `revision` (0 = the current one), page by page, each page
    /// recorded as a `list`. Returns the revision read at and the key-values.
    async fn list_resource(
        &self,
        info: &ResourceInfo,
        revision: i64,
    ) -> Result<(i64, Vec<etcd_client::KeyValue>), etcd_client::Error> {
        let end = prefix_end(info.key_prefix.as_bytes());
        let mut start = info.key_prefix.as_bytes().to_vec();
        let mut rev = revision;
        let mut kvs = Vec::new();
        loop {
            let mut opts = GetOptions::new()
                .with_range(end.clone())
                .with_limit(LIST_PAGE);
            if rev > 0 {
                opts = opts.with_revision(rev);
            }
            let resp = self
                .etcd_get("list", (&info.group, &info.resource), start.clone(), opts)
                .await?;
            if rev <= 0 {
                rev = resp.header().map_or(0, |h| h.revision());
            }
            let more = resp.more();
            if let Some(last) = resp.kvs().last() {
                start = last.key().to_vec();
                start.push(0);
            }
            kvs.extend(resp.kvs().iter().cloned());
            if !more {
                break;
            }
        }
        Ok((rev, kvs))
    }
}

/// Decodes a stored value into the apiserver's JSON with `metadata.resourceVersion` set.
fn object_json(key: &[u8], value: &[u8], mod_revision: i64) -> Option<(Value, Arc<str>)> {
    let d = decode(
        value,
        &DecodeOptions {
            etcd_key: key,
            mod_revision: Some(mod_revision),
            ..Default::default()
        },
    );
    let text = d.json?;
    let v: Value = serde_json::from_str(&text).ok()?;
    Some((v, Arc::from(text)))
}

fn namespace_of(prefix: &str, key: &[u8]) -> Option<String> {
    KeyPath::parse(prefix.trim_end_matches('/').as_bytes(), key)
        .namespace
        .map(|n| n.into_owned())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

// ---------------------------------------------------------------------------------------------
// The cacher: initial list, the etcd watch, relists
// ---------------------------------------------------------------------------------------------

/// Lists every resource (the built-ins and those found under the prefix) at one revision.
async fn load_all(
    shared: &Shared,
) -> Result<(i64, Vec<(ResourceInfo, BTreeMap<Vec<u8>, CachedObject>)>), DemoError> {
    // Which resources exist: one keys-only range over the prefix, at the revision all lists
    // then read at (the apiserver knows its resources from its API; here they are found).
    let root = format!("{}/", shared.prefix);
    let mut client = shared.client.clone();
    let resp = client
        .get(
            root.clone(),
            Some(
                GetOptions::new()
                    .with_range(prefix_end(root.as_bytes()))
                    .with_keys_only(),
            ),
        )
        .await?;
    let revision = resp.header().map_or(0, |h| h.revision());
    let mut infos: BTreeMap<String, ResourceInfo> = builtin_infos(&shared.prefix);
    for kv in resp.kvs() {
        if let Some(info) = ResourceInfo::for_key(&shared.prefix, kv.key()) {
            match infos.get_mut(&info.name()) {
                // Keys decide where a built-in lives (`nodes/` rather than `minions/`).
                Some(known) => {
                    if known.key_prefix != info.key_prefix
                        && !kv.key().starts_with(known.key_prefix.as_bytes())
                    {
                        known.key_prefix = info.key_prefix;
                    }
                }
                None => {
                    infos.insert(info.name(), info);
                }
            }
        }
    }
    let mut out = Vec::new();
    for (_, info) in infos {
        let (_, kvs) = shared.list_resource(&info, revision).await?;
        let mut objects = BTreeMap::new();
        for kv in kvs {
            if let Some((_, json)) = object_json(kv.key(), kv.value(), kv.mod_revision()) {
                objects.insert(
                    kv.key().to_vec(),
                    CachedObject {
                        namespace: namespace_of(&shared.prefix, kv.key()),
                        json,
                    },
                );
            }
        }
        out.push((info, objects));
    }
    Ok((revision, out))
}

fn builtin_infos(prefix: &str) -> BTreeMap<String, ResourceInfo> {
    BUILTINS
        .iter()
        .map(|b| {
            let info = ResourceInfo::for_builtin(prefix, b);
            (info.name(), info)
        })
        .collect()
}

/// Installs a (re)list into the cache.
fn install(
    shared: &Shared,
    revision: i64,
    lists: Vec<(ResourceInfo, BTreeMap<Vec<u8>, CachedObject>)>,
    initial: bool,
) {
    let mut st = shared.cache();
    if !initial {
        // Resources whose keys are all gone now hold nothing.
        let listed: std::collections::BTreeSet<String> =
            lists.iter().map(|(info, _)| info.name()).collect();
        for (name, rc) in st.resources.iter_mut() {
            if !listed.contains(name) {
                rc.replace(BTreeMap::new(), revision);
            }
        }
    }
    for (info, objects) in lists {
        let name = info.name();
        let mut learned = Vec::new();
        if info.kind.is_empty() || info.version.is_empty() {
            learned = objects
                .values()
                .take(1)
                .filter_map(|o| serde_json::from_str::<Value>(&o.json).ok())
                .collect();
        }
        match st.resources.get_mut(&name) {
            Some(rc) if !initial => rc.replace(objects, revision),
            _ => {
                let mut rc = ResourceCache::new(info, revision);
                rc.objects = objects;
                st.resources.insert(name.clone(), rc);
            }
        }
        if let Some(rc) = st.resources.get_mut(&name) {
            for v in &learned {
                rc.learn(v);
            }
        }
    }
    st.revision = st.revision.max(revision);
    drop(st);
    shared.changed.send_modify(|v| *v += 1);
}

/// Applies one batch of etcd watch events.
fn apply_events(shared: &Shared, events: &[etcd_client::Event]) {
    struct Decoded {
        key: Vec<u8>,
        revision: i64,
        put: Option<(Value, Arc<str>)>,
        deleted: bool,
    }
    // Decode outside the lock.
    let decoded: Vec<Decoded> = events
        .iter()
        .filter_map(|ev| {
            let kv = ev.kv()?;
            let deleted = matches!(ev.event_type(), EventType::Delete);
            let put = if deleted {
                None
            } else {
                Some(object_json(kv.key(), kv.value(), kv.mod_revision())?)
            };
            Some(Decoded {
                key: kv.key().to_vec(),
                revision: kv.mod_revision(),
                put,
                deleted,
            })
        })
        .collect();
    let capacity = shared.cfg.watch_cache_capacity;
    let mut st = shared.cache();
    let mut last_rev = st.revision;
    for d in decoded {
        last_rev = last_rev.max(d.revision);
        let Some(info) = ResourceInfo::for_key(&shared.prefix, &d.key) else {
            continue;
        };
        let name = info.name();
        let rc = st.resources.entry(name).or_insert_with(|| {
            // A resource seen for the first time: its cache starts empty just before it.
            ResourceCache::new(info, d.revision - 1)
        });
        let namespace = namespace_of(&shared.prefix, &d.key);
        if let Some((value, json)) = d.put {
            rc.learn(&value);
            let existed = rc
                .objects
                .insert(
                    d.key.clone(),
                    CachedObject {
                        namespace: namespace.clone(),
                        json: json.clone(),
                    },
                )
                .is_some();
            rc.push(
                CachedEvent {
                    kind: if existed { "MODIFIED" } else { "ADDED" },
                    revision: d.revision,
                    namespace,
                    object: json,
                },
                capacity,
            );
        } else if d.deleted {
            let Some(prev) = rc.objects.remove(&d.key) else {
                continue;
            };
            // The last state, with the deletion's revision as its resourceVersion.
            let object: Arc<str> = match serde_json::from_str::<Value>(&prev.json) {
                Ok(mut v) => {
                    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                        m.insert(
                            "resourceVersion".to_string(),
                            Value::String(d.revision.to_string()),
                        );
                    }
                    Arc::from(v.to_string())
                }
                Err(_) => prev.json.clone(),
            };
            rc.push(
                CachedEvent {
                    kind: "DELETED",
                    revision: d.revision,
                    namespace,
                    object,
                },
                capacity,
            );
        }
    }
    st.revision = last_rev;
    drop(st);
    shared.changed.send_modify(|v| *v += 1);
}

fn is_compacted(e: &etcd_client::Error) -> bool {
    e.to_string().contains("compacted")
}

/// The reflector: one etcd watch on the prefix from the cache's revision, reopened after
/// errors; relists when etcd says the revision was compacted.
async fn run_cacher(shared: Arc<Shared>, mut progress_rx: mpsc::Receiver<()>) {
    let mut stop = shared.stop.clone();
    let root = format!("{}/", shared.prefix);
    let mut backoff = Duration::from_millis(100);
    loop {
        if *stop.borrow() {
            return;
        }
        let from = shared.cache().revision + 1;
        let mut client = shared.client.clone();
        let opts = WatchOptions::new()
            .with_range(prefix_end(root.as_bytes()))
            .with_start_revision(from)
            .with_progress_notify();
        let stream = tokio::select! {
            () = stopped(&mut stop) => return,
            r = client.watch(root.clone(), Some(opts)) => r,
        };
        let (mut sender, mut stream) = match stream {
            Ok(s) => s.split(),
            Err(e) => {
                tracing::debug!("demo apiserver: watch: {e}");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(2));
                continue;
            }
        };
        let mut tick =
            tokio::time::interval(shared.cfg.bookmark_interval.max(Duration::from_millis(10)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let relist = loop {
            tokio::select! {
                () = stopped(&mut stop) => return,
                Some(()) = progress_rx.recv() => {
                    if shared.progress_requests {
                        let _ = sender.request_progress().await;
                    }
                }
                _ = tick.tick() => {
                    if shared.progress_requests {
                        let _ = sender.request_progress().await;
                    }
                }
                msg = stream.message() => match msg {
                    Ok(Some(resp)) => {
                        backoff = Duration::from_millis(100);
                        if resp.canceled() {
                            break resp.compact_revision() > 0
                                || resp.cancel_reason().contains("compacted");
                        }
                        if resp.compact_revision() > 0 {
                            break true;
                        }
                        if !resp.events().is_empty() {
                            apply_events(&shared, resp.events());
                        } else if !resp.created() {
                            // A progress notification: everything up to the header's
                            // revision has been delivered.
                            if let Some(h) = resp.header() {
                                let mut st = shared.cache();
                                if h.revision() > st.revision {
                                    st.revision = h.revision();
                                    drop(st);
                                    shared.changed.send_modify(|v| *v += 1);
                                }
                            }
                        }
                    }
                    Ok(None) => break false,
                    Err(e) => {
                        tracing::debug!("demo apiserver: watch stream: {e}");
                        break is_compacted(&e);
                    }
                }
            }
        };
        if relist {
            match load_all(&shared).await {
                Ok((rev, lists)) => install(&shared, rev, lists, false),
                Err(e) => tracing::debug!("demo apiserver: relist: {e}"),
            }
        } else {
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    }
}

/// Whether an etcd of `version` (`3.4.23`) sends requested progress notifications in order
/// with the watch's events (etcd-io/etcd#15220, fixed by #15237 and follow-ups). Like
/// kube-apiserver's feature-support checker for `RequestWatchProgress`: 3.4.31+, 3.5.13+,
/// 3.6 and later.
fn progress_requests_ordered(version: &str) -> bool {
    let v: Vec<u64> = version
        .split(['.', '-', '+'])
        .take(3)
        .map(|p| p.parse().unwrap_or(0))
        .collect();
    match v.as_slice() {
        [3, 4, patch] => *patch >= 31,
        [3, 5, patch] => *patch >= 13,
        [3, minor, ..] => *minor >= 6,
        [major, ..] => *major > 3,
        [] => false,
    }
}

/// Waits until the cache's revision reaches `rv`, asking etcd for progress when that is safe.
/// Returns the cache revision reached and whether it is at least `rv`.
async fn wait_for_revision(shared: &Shared, rv: i64, max: Duration) -> (i64, bool) {
    let deadline = tokio::time::Instant::now() + max;
    let mut rx = shared.changed.subscribe();
    loop {
        rx.borrow_and_update();
        let cur = shared.cache().revision;
        if cur >= rv {
            return (cur, true);
        }
        let _ = shared.progress.try_send(());
        if tokio::time::timeout_at(deadline, rx.changed())
            .await
            .is_err()
        {
            let cur = shared.cache().revision;
            return (cur, cur >= rv);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------------------

fn status_value(code: u16, reason: &str, message: &str, details: Option<Value>) -> Value {
    let mut v = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    if let Some(d) = details {
        v["details"] = d;
    }
    v
}

fn json_response(code: StatusCode, body: String) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

fn status_response(code: u16, reason: &str, message: &str, details: Option<Value>) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(
        status,
        status_value(code, reason, message, details).to_string(),
    )
}

fn expired(message: String) -> Value {
    status_value(410, "Expired", &message, None)
}

fn too_large(rv: i64, current: i64) -> Value {
    status_value(
        504,
        "Timeout",
        &format!("Too large resource version: {rv}, current: {current}"),
        Some(json!({
            "causes": [{
                "reason": "ResourceVersionTooLarge",
                "message": "Too large resource version",
            }],
            "retryAfterSeconds": 1,
        })),
    )
}

/// The priority level of a request (by path and credentials).
fn classify(path: &str, headers: &HeaderMap) -> Flow {
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

fn rejected_response(reason: &str) -> Response {
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

async fn serve_non_resource(shared: &Arc<Shared>, path: &str, headers: &HeaderMap) -> Response {
    let started = Instant::now();
    let labels = RequestLabels::non_resource(path);
    let seat = match shared.apf.acquire(classify(path, headers)).await {
        Ok(s) => s,
        Err(reason) => {
            shared.record_request(labels, 429, started.elapsed());
            return rejected_response(reason);
        }
    };
    let resp = match path {
        "/metrics" => {
            let body = render_metrics(shared).await;
            let mut r = Response::new(Body::from(body));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            );
            r
        }
        "/version" => json_response(
            StatusCode::OK,
            json!({
                "major": "1",
                "minor": "34",
                "gitVersion": DEMO_GIT_VERSION,
                "gitCommit": "",
                "gitTreeState": "",
                "buildDate": "",
                "goVersion": "",
                "compiler": "rustc",
                "platform": platform(),
            })
            .to_string(),
        ),
        _ => Response::new(Body::from("ok")),
    };
    drop(seat);
    shared.record_request(labels, resp.status().as_u16(), started.elapsed());
    resp
}

async fn metrics_handler(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    serve_non_resource(&shared, "/metrics", &headers).await
}

async fn healthz(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    serve_non_resource(&shared, "/healthz", &headers).await
}

async fn livez(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    serve_non_resource(&shared, "/livez", &headers).await
}

async fn readyz(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    serve_non_resource(&shared, "/readyz", &headers).await
}

async fn version(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    serve_non_resource(&shared, "/version", &headers).await
}

/// A parsed resource request path.
#[derive(Debug)]
struct Target {
    group: String,
    version: String,
    resource: String,
    namespace: Option<String>,
    name: Option<String>,
}

fn parse_target(path: &str) -> Option<Target> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    let (resource, namespace, name) = match rest {
        [r] => (*r, None, None),
        ["namespaces", ns, r] => (*r, Some(*ns), None),
        ["namespaces", ns, r, n] => (*r, Some(*ns), Some(*n)),
        [r, n] => (*r, None, Some(*n)),
        _ => return None,
    };
    if resource.is_empty() || name.is_some_and(str::is_empty) {
        return None;
    }
    Some(Target {
        group: group.to_string(),
        version: version.to_string(),
        resource: resource.to_string(),
        namespace: namespace.map(str::to_string),
        name: name.map(str::to_string),
    })
}

fn not_found_path() -> Response {
    status_response(
        404,
        "NotFound",
        "the server could not find the requested resource",
        Some(json!({})),
    )
}

fn flag(q: &HashMap<String, String>, name: &str) -> bool {
    q.get(name)
        .is_some_and(|v| matches!(v.as_str(), "1" | "true" | "True"))
}

async fn api_handler(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let started = Instant::now();
    let path = uri.path().to_string();
    let Some(t) = parse_target(&path) else {
        return not_found_path();
    };
    let name = display_name(&t.group, &t.resource);
    let info = {
        let st = shared.cache();
        st.resources.get(&name).map(|rc| rc.info.clone())
    };
    let Some(info) = info else {
        return not_found_path();
    };
    if !info.version.is_empty() && info.version != t.version {
        return not_found_path();
    }
    if t.namespace.is_some() && !info.namespaced {
        return not_found_path();
    }
    let watch = flag(&q, "watch");
    let (verb, scope) = match (&t.name, watch, &t.namespace) {
        (Some(_), _, _) => ("GET", "resource"),
        (None, true, Some(_)) => ("WATCH", "namespace"),
        (None, true, None) => ("WATCH", "cluster"),
        (None, false, Some(_)) => ("LIST", "namespace"),
        (None, false, None) => ("LIST", "cluster"),
    };
    let labels = RequestLabels {
        verb,
        group: info.group.clone(),
        version: t.version.clone(),
        resource: info.resource.clone(),
        subresource: String::new(),
        scope,
        component: "apiserver",
    };
    if method != Method::GET {
        let resp = status_response(
            405,
            "MethodNotAllowed",
            "the demo apiserver is read-only: only GET (get, list, watch) is served",
            None,
        );
        shared.record_request(labels, 405, started.elapsed());
        return resp;
    }
    if info.group.is_empty() && info.resource == "secrets" {
        let scope_text = match &t.namespace {
            Some(ns) => format!("in the namespace \"{ns}\""),
            None => "at the cluster scope".to_string(),
        };
        let resp = status_response(
            403,
            "Forbidden",
            &format!(
                "secrets is forbidden: User \"{KUBECONFIG_CONTEXT}\" cannot {} resource \"secrets\" in API group \"\" {scope_text}: the regscope demo apiserver does not serve Secrets",
                verb.to_lowercase()
            ),
            Some(json!({"kind": "secrets"})),
        );
        shared.record_request(labels, 403, started.elapsed());
        return resp;
    }
    let rv = match q.get("resourceVersion").map(String::as_str) {
        None | Some("") => None,
        Some(s) => {
            match s.parse::<i64>() {
                Ok(n) if n >= 0 => Some(n),
                _ => {
                    let resp = status_response(
                    400,
                    "BadRequest",
                    &format!("resourceVersion: Invalid value: \"{s}\": must be a non-negative integer"),
                    None,
                );
                    shared.record_request(labels, 400, started.elapsed());
                    return resp;
                }
            }
        }
    };
    let seat = match shared.apf.acquire(classify(&path, &headers)).await {
        Ok(s) => s,
        Err(reason) => {
            shared.record_request(labels, 429, started.elapsed());
            return rejected_response(reason);
        }
    };
    match verb {
        "WATCH" => {
            // Like kube-apiserver, an absent or zero timeoutSeconds means its own default.
            let timeout = q
                .get("timeoutSeconds")
                .and_then(|s| s.parse::<u64>().ok())
                .filter(|s| *s > 0)
                .map_or(DEFAULT_WATCH_TIMEOUT, Duration::from_secs);
            let slow = shared.cfg.slow_watcher.as_ref().and_then(|s| {
                (s.resource == name && !shared.slow_claimed.swap(true, Ordering::SeqCst))
                    .then_some(s.delay_per_event)
            });
            let spec = WatchSpec {
                name,
                namespace: t.namespace,
                rv,
                bookmarks: flag(&q, "allowWatchBookmarks"),
                initial_events_end: flag(&q, "sendInitialEvents"),
                timeout,
                slow,
            };
            let (tx, mut rx) = mpsc::channel::<Bytes>(WATCH_CHANNEL);
            let shared2 = shared.clone();
            tokio::spawn(async move {
                run_watch(&shared2, spec, tx, seat).await;
                shared2.record_request(labels, 200, started.elapsed());
            });
            let stream = futures::stream::poll_fn(move |cx| {
                rx.poll_recv(cx).map(|o| o.map(Ok::<Bytes, Infallible>))
            });
            let mut resp = Response::new(Body::from_stream(stream));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            resp
        }
        "GET" => {
            let resp = serve_get(&shared, &info, &t).await;
            drop(seat);
            shared.record_request(labels, resp.status().as_u16(), started.elapsed());
            resp
        }
        _ => {
            let exact = q.get("resourceVersionMatch").map(String::as_str) == Some("Exact");
            let resp = serve_list(&shared, &name, &info, t.namespace.as_deref(), rv, exact).await;
            drop(seat);
            shared.record_request(labels, resp.status().as_u16(), started.elapsed());
            resp
        }
    }
}

async fn serve_get(shared: &Shared, info: &ResourceInfo, t: &Target) -> Response {
    let name = t.name.as_deref().unwrap_or_default();
    let key = match &t.namespace {
        Some(ns) => format!("{}{ns}/{name}", info.key_prefix),
        None => format!("{}{name}", info.key_prefix),
    };
    match shared
        .etcd_get(
            "get",
            (&info.group, &info.resource),
            key.clone(),
            GetOptions::new(),
        )
        .await
    {
        Ok(resp) => match resp.kvs().first() {
            Some(kv) => match object_json(kv.key(), kv.value(), kv.mod_revision()) {
                Some((_, json)) => json_response(StatusCode::OK, json.to_string()),
                None => status_response(
                    500,
                    "InternalError",
                    &format!("unable to decode {key}"),
                    None,
                ),
            },
            None => status_response(
                404,
                "NotFound",
                &format!("{} \"{name}\" not found", info.name()),
                Some(json!({"name": name, "group": info.group, "kind": info.resource})),
            ),
        },
        Err(e) => status_response(500, "InternalError", &format!("etcd: {e}"), None),
    }
}

fn list_body(info: &ResourceInfo, revision: i64, items: &[Arc<str>]) -> String {
    let kind = if info.kind.is_empty() {
        "List".to_string()
    } else {
        format!("{}List", info.kind)
    };
    let mut out = format!(
        "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{{\"resourceVersion\":\"{revision}\"}},\"items\":[",
        Value::String(kind),
        Value::String(info.api_version())
    );
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item);
    }
    out.push_str("]}");
    out
}

/// Items and revision of one resource from the cache (optionally one namespace).
fn list_from_cache(
    shared: &Shared,
    name: &str,
    namespace: Option<&str>,
) -> Option<(ResourceInfo, i64, Vec<Arc<str>>)> {
    let st = shared.cache();
    let rc = st.resources.get(name)?;
    let items = rc
        .objects
        .values()
        .filter(|o| namespace.is_none() || o.namespace.as_deref() == namespace)
        .map(|o| o.json.clone())
        .collect();
    Some((rc.info.clone(), st.revision, items))
}

async fn list_from_etcd(
    shared: &Shared,
    info: &ResourceInfo,
    namespace: Option<&str>,
    revision: i64,
) -> Response {
    match shared.list_resource(info, revision).await {
        Ok((rev, kvs)) => {
            let items: Vec<Arc<str>> = kvs
                .iter()
                .filter(|kv| {
                    namespace.is_none()
                        || namespace_of(&shared.prefix, kv.key()).as_deref() == namespace
                })
                .filter_map(|kv| object_json(kv.key(), kv.value(), kv.mod_revision()))
                .map(|(_, j)| j)
                .collect();
            json_response(StatusCode::OK, list_body(info, rev, &items))
        }
        Err(e) if is_compacted(&e) => {
            let v = expired("The resourceVersion for the provided list is too old.".into());
            json_response(StatusCode::GONE, v.to_string())
        }
        Err(e) if e.to_string().contains("future revision") => {
            let cur = shared.cache().revision;
            json_response(
                StatusCode::GATEWAY_TIMEOUT,
                too_large(revision, cur).to_string(),
            )
        }
        Err(e) => status_response(500, "InternalError", &format!("etcd: {e}"), None),
    }
}

async fn serve_list(
    shared: &Shared,
    name: &str,
    info: &ResourceInfo,
    namespace: Option<&str>,
    rv: Option<i64>,
    exact: bool,
) -> Response {
    match rv {
        Some(n) if exact && n > 0 => list_from_etcd(shared, info, namespace, n).await,
        Some(0) => match list_from_cache(shared, name, namespace) {
            Some((info, rev, items)) => {
                json_response(StatusCode::OK, list_body(&info, rev, &items))
            }
            None => not_found_path(),
        },
        Some(n) => {
            let (cur, fresh) = wait_for_revision(shared, n, FRESHNESS_WAIT).await;
            if !fresh {
                return json_response(StatusCode::GATEWAY_TIMEOUT, too_large(n, cur).to_string());
            }
            match list_from_cache(shared, name, namespace) {
                Some((info, rev, items)) => {
                    json_response(StatusCode::OK, list_body(&info, rev, &items))
                }
                None => not_found_path(),
            }
        }
        None if !shared.progress_requests => list_from_etcd(shared, info, namespace, 0).await,
        None => {
            // Consistent read from the cache: etcd's current revision, then wait for the cache.
            let end = prefix_end(info.key_prefix.as_bytes());
            let head = shared
                .etcd_get(
                    "listWithCount",
                    (&info.group, &info.resource),
                    info.key_prefix.clone(),
                    GetOptions::new()
                        .with_range(end)
                        .with_count_only()
                        .with_limit(1),
                )
                .await
                .ok()
                .and_then(|r| r.header().map(|h| h.revision()));
            let fresh = match head {
                Some(h) => wait_for_revision(shared, h, FRESHNESS_WAIT).await.1,
                None => false,
            };
            if fresh {
                if let Some((info, rev, items)) = list_from_cache(shared, name, namespace) {
                    return json_response(StatusCode::OK, list_body(&info, rev, &items));
                }
            }
            // Fall back to etcd, as kube-apiserver does when the cache is not fresh in time.
            list_from_etcd(shared, info, namespace, 0).await
        }
    }
}

/// What a client watch asked for.
struct WatchSpec {
    name: String,
    namespace: Option<String>,
    rv: Option<i64>,
    bookmarks: bool,
    initial_events_end: bool,
    timeout: Duration,
    slow: Option<Duration>,
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

/// Resolves when the server is stopping (the guard of `wait_for` is not `Send`).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
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
async fn run_watch(shared: &Shared, spec: WatchSpec, tx: mpsc::Sender<Bytes>, seat: ApfSeat) {
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

// ---------------------------------------------------------------------------------------------
// /metrics
// ---------------------------------------------------------------------------------------------

fn fmt_f64(v: f64) -> String {
    if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else if v.is_nan() {
        "NaN".to_string()
    } else {
        format!("{v}")
    }
}

/// Escapes a label value for the text format.
fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn family(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        a => a,
    };
    format!("{}/{arch}", std::env::consts::OS)
}

async fn render_metrics(shared: &Shared) -> String {
    // etcd's db size, as the apiserver's storage size monitor reads it (Status).
    let db_size = {
        let mut client = shared.client.clone();
        match tokio::time::timeout(ETCD_CALL_TIMEOUT, client.status()).await {
            Ok(Ok(s)) => Some(s.db_size()),
            _ => None,
        }
    };
    let mut out = String::with_capacity(64 * 1024);
    family(
        &mut out,
        "kubernetes_build_info",
        "[ALPHA] A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.",
        "gauge",
    );
    let _ = writeln!(
        out,
        "kubernetes_build_info{{build_date=\"\",compiler=\"rustc\",git_commit=\"\",git_tree_state=\"\",git_version=\"{DEMO_GIT_VERSION}\",go_version=\"\",major=\"1\",minor=\"34\",platform=\"{}\"}} 1",
        platform()
    );

    shared.latencies.render(&mut out);

    struct Row {
        group: String,
        resource: String,
        received: u64,
        dispatched: u64,
        initializations: u64,
        terminated: u64,
        objects: usize,
    }
    let (revision, rows) = {
        let st = shared.cache();
        let rows: Vec<Row> = st
            .resources
            .values()
            .map(|rc| Row {
                group: rc.info.group.clone(),
                resource: rc.info.resource.clone(),
                received: rc.received,
                dispatched: rc.counters.dispatched.load(Ordering::Relaxed),
                initializations: rc.initializations,
                terminated: rc.counters.terminated.load(Ordering::Relaxed),
                objects: rc.objects.len(),
            })
            .collect();
        (st.revision, rows)
    };
    let gr = |r: &Row| {
        format!(
            "group=\"{}\",resource=\"{}\"",
            esc(&r.group),
            esc(&r.resource)
        )
    };
    let capacity = shared.cfg.watch_cache_capacity.max(1);
    /// Family name, help, type, and the value of a resource's row.
    type PerResource<'a> = (&'a str, &'a str, &'a str, &'a dyn Fn(&Row) -> String);
    let per_resource: [PerResource<'_>; 7] = [
        (
            "watch_cache_capacity",
            "[ALPHA] Total capacity of watch cache broken by resource type.",
            "gauge",
            &|_| capacity.to_string(),
        ),
        (
            "apiserver_watch_cache_events_received_total",
            "[ALPHA] Counter of events received in watch cache broken by resource type.",
            "counter",
            &|r| r.received.to_string(),
        ),
        (
            "apiserver_watch_cache_events_dispatched_total",
            "[ALPHA] Counter of events dispatched in watch cache broken by resource type.",
            "counter",
            &|r| r.dispatched.to_string(),
        ),
        (
            "apiserver_watch_cache_initializations_total",
            "[ALPHA] Counter of watch cache initializations broken by resource type.",
            "counter",
            &|r| r.initializations.to_string(),
        ),
        (
            "apiserver_watch_cache_resource_version",
            "[ALPHA] Current resource version of watch cache broken by resource type.",
            "gauge",
            &|_| (revision % 1_000_000_000_000_000).to_string(),
        ),
        (
            "apiserver_terminated_watchers_total",
            "[ALPHA] Counter of watchers closed due to unresponsiveness broken by resource type.",
            "counter",
            &|r| r.terminated.to_string(),
        ),
        (
            "apiserver_resource_objects",
            "[ALPHA] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
            "gauge",
            &|r| r.objects.to_string(),
        ),
    ];
    for (name, help, kind, value) in per_resource {
        family(&mut out, name, help, kind);
        for r in &rows {
            let _ = writeln!(out, "{name}{{{}}} {}", gr(r), value(r));
        }
    }

    family(
        &mut out,
        "apiserver_storage_size_bytes",
        "[STABLE] Size of the storage database file physically allocated in bytes.",
        "gauge",
    );
    if let Some(size) = db_size {
        let _ = writeln!(
            out,
            "apiserver_storage_size_bytes{{storage_cluster_id=\"etcd-0\"}} {size}"
        );
    }

    let requests = lock(&shared.requests).clone();
    family(
        &mut out,
        "apiserver_request_duration_seconds",
        "[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
        "histogram",
    );
    for (labels, stats) in &requests {
        stats.latency.render(
            &mut out,
            "apiserver_request_duration_seconds",
            &labels.render(),
        );
    }
    family(
        &mut out,
        "apiserver_request_total",
        "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
        "counter",
    );
    for (labels, stats) in &requests {
        for (code, n) in &stats.codes {
            let _ = writeln!(
                out,
                "apiserver_request_total{{code=\"{code}\",{}}} {n}",
                labels.render()
            );
        }
    }

    family(
        &mut out,
        "apiserver_flowcontrol_current_inqueue_requests",
        "[BETA] Number of requests currently pending in queues of the API Priority and Fairness subsystem",
        "gauge",
    );
    for l in &shared.apf.levels {
        let _ = writeln!(
            out,
            "apiserver_flowcontrol_current_inqueue_requests{{flow_schema=\"{}\",priority_level=\"{}\"}} {}",
            l.flow_schema,
            l.priority_level,
            l.inqueue.load(Ordering::Relaxed)
        );
    }
    family(
        &mut out,
        "apiserver_flowcontrol_current_executing_requests",
        "[BETA] Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem",
        "gauge",
    );
    for l in &shared.apf.levels {
        let _ = writeln!(
            out,
            "apiserver_flowcontrol_current_executing_requests{{flow_schema=\"{}\",priority_level=\"{}\"}} {}",
            l.flow_schema,
            l.priority_level,
            l.executing.load(Ordering::Relaxed)
        );
    }
    family(
        &mut out,
        "apiserver_flowcontrol_rejected_requests_total",
        "[BETA] Number of requests rejected by API Priority and Fairness subsystem",
        "counter",
    );
    for ((fs, pl, reason), n) in lock(&shared.apf.rejected).iter() {
        let _ = writeln!(
            out,
            "apiserver_flowcontrol_rejected_requests_total{{flow_schema=\"{fs}\",priority_level=\"{pl}\",reason=\"{reason}\"}} {n}"
        );
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------

/// The simulated kube-apiserver: an HTTP server on `127.0.0.1:<free port>` serving
/// `/metrics`, list, get and watch of the resources in a [`PrivateEtcd`] from its own watch
/// cache. It reads from etcd only. Dropping it aborts its tasks and removes its kubeconfig;
/// [`DemoApiserver::stop`] ends them cleanly.
pub struct DemoApiserver {
    addr: SocketAddr,
    /// Removed on drop, with the kubeconfig in it.
    _kubeconfig_dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    shared: Arc<Shared>,
    stop_tx: watch::Sender<bool>,
    server: Option<JoinHandle<()>>,
    cacher: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for DemoApiserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoApiserver")
            .field("addr", &self.addr)
            .field("kubeconfig", &self.kubeconfig)
            .field("config", &self.shared.cfg)
            .finish_non_exhaustive()
    }
}

impl DemoApiserver {
    /// Starts on `127.0.0.1:<free port>`; reads from the [`PrivateEtcd`] only (never writes).
    ///
    /// Lists every resource under `cfg.prefix` at one revision into the watch cache, starts
    /// the etcd watch that keeps it current, writes a kubeconfig for the URL and starts
    /// serving. Its own etcd reads are recorded in `latencies` (the same histograms the
    /// simulation records its writes in). Must be called inside a tokio runtime. Errors:
    /// connecting to etcd, the initial list, binding the port, writing the kubeconfig.
    pub async fn start(
        etcd: &PrivateEtcd,
        latencies: Arc<StorageLatencies>,
        cfg: DemoApiserverConfig,
    ) -> Result<DemoApiserver, DemoError> {
        let mut client = etcd.client().await?;
        let etcd_version = client.status().await?.version().to_string();
        let (stop_tx, stop_rx) = watch::channel(false);
        let (progress_tx, progress_rx) = mpsc::channel(1);
        let prefix = cfg.prefix.trim_end_matches('/').to_string();
        let shared = Arc::new(Shared {
            cfg,
            prefix,
            client,
            latencies,
            cache: Mutex::default(),
            changed: watch::channel(0).0,
            progress: progress_tx,
            progress_requests: progress_requests_ordered(&etcd_version),
            requests: Mutex::default(),
            apf: Arc::new(Apf::new()),
            slow_claimed: AtomicBool::new(false),
            stop: stop_rx,
        });
        let (rev, lists) = load_all(&shared).await?;
        install(&shared, rev, lists, true);
        let cacher = tokio::spawn(run_cacher(shared.clone(), progress_rx));

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| io_err("bind the demo apiserver port", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| io_err("bind the demo apiserver port", e))?;
        let url = format!("http://{addr}");
        let (kubeconfig_dir, kubeconfig) = write_kubeconfig(&url)?;

        let app = Router::new()
            .route("/metrics", get(metrics_handler))
            .route("/healthz", get(healthz))
            .route("/livez", get(livez))
            .route("/readyz", get(readyz))
            .route("/version", get(version))
            .fallback(api_handler)
            .with_state(shared.clone());
        let mut stop = stop_tx.subscribe();
        let server = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            if let Err(e) = axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
            {
                tracing::debug!("demo apiserver: {e}");
            }
        });
        Ok(DemoApiserver {
            addr,
            _kubeconfig_dir: kubeconfig_dir,
            kubeconfig,
            shared,
            stop_tx,
            server: Some(server),
            cacher: Some(cacher),
        })
    }

    /// The base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kubeconfig (mode 0600, in a temp dir removed on drop) whose current context
    /// `regscope-demo` points at [`DemoApiserver::url`] with a dummy bearer token; usable by
    /// the `kube` crate (`kube::Config::from_custom_kubeconfig`) over plain HTTP.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// The watch cache's current resourceVersion (the last etcd revision it has applied).
    pub fn cache_revision(&self) -> i64 {
        self.shared.cache().revision
    }

    /// The storage latency histograms this server serves (and records its reads in).
    pub fn latencies(&self) -> Arc<StorageLatencies> {
        self.shared.latencies.clone()
    }

    /// Stops serving: open watches end, the server and the cacher stop (waits at most 5 s).
    pub async fn stop(mut self) {
        let _ = self.stop_tx.send(true);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        for task in [self.server.take(), self.cacher.take()]
            .into_iter()
            .flatten()
        {
            let abort = task.abort_handle();
            if tokio::time::timeout_at(deadline, task).await.is_err() {
                abort.abort();
            }
        }
    }
}

impl Drop for DemoApiserver {
    fn drop(&mut self) {
        let _ = self.stop_tx.send(true);
        for task in [self.server.take(), self.cacher.take()]
            .into_iter()
            .flatten()
        {
            task.abort();
        }
    }
}

fn io_err(context: &str, source: std::io::Error) -> DemoError {
    DemoError::Io {
        context: context.to_string(),
        source,
    }
}

/// Writes the kubeconfig into a fresh temp dir, readable by the owner only.
fn write_kubeconfig(url: &str) -> Result<(tempfile::TempDir, PathBuf), DemoError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = tempfile::Builder::new()
        .prefix("regscope-apiserver-")
        .tempdir()
        .map_err(|e| io_err("create the demo kubeconfig dir", e))?;
    let path = dir.path().join("kubeconfig");
    let text = format!(
        "apiVersion: v1\n\
         kind: Config\n\
         clusters:\n\
         - name: {KUBECONFIG_CONTEXT}\n  cluster:\n    server: {url}\n\
         contexts:\n\
         - name: {KUBECONFIG_CONTEXT}\n  context:\n    cluster: {KUBECONFIG_CONTEXT}\n    user: {KUBECONFIG_CONTEXT}\n\
         current-context: {KUBECONFIG_CONTEXT}\n\
         users:\n\
         - name: {KUBECONFIG_CONTEXT}\n  user:\n    token: regscope-demo-token\n\
         preferences: {{}}\n"
    );
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| io_err("write the demo kubeconfig", e))?;
    f.write_all(text.as_bytes())
        .map_err(|e| io_err("write the demo kubeconfig", e))?;
    Ok((dir, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_resource_of_keys() {
        let gr = |k: &str| storage_group_resource("/registry", k.as_bytes());
        assert_eq!(
            gr("/registry/pods/ns/p"),
            Some((String::new(), "pods".into()))
        );
        assert_eq!(
            gr("/registry/leases/kube-node-lease/n1"),
            Some(("coordination.k8s.io".into(), "leases".into()))
        );
        assert_eq!(
            gr("/registry/deployments/ns/web"),
            Some(("apps".into(), "deployments".into()))
        );
        assert_eq!(
            gr("/registry/services/specs/default/kubernetes"),
            Some((String::new(), "services".into()))
        );
        assert_eq!(
            gr("/registry/example.com/widgets/ns/w"),
            Some(("example.com".into(), "widgets".into()))
        );
        assert_eq!(gr("compact_rev_key"), None);
        assert_eq!(gr("/registry/ranges/serviceips"), None);
        assert_eq!(gr("/registryx/pods/a"), None);
    }

    #[test]
    fn key_prefixes() {
        let kp = |k: &str| resource_key_prefix("/registry/", k.as_bytes());
        assert_eq!(
            kp("/registry/pods/ns/p").as_deref(),
            Some("/registry/pods/")
        );
        assert_eq!(
            kp("/registry/services/specs/ns/s").as_deref(),
            Some("/registry/services/specs/")
        );
        assert_eq!(
            kp("/registry/example.com/widgets/ns/w").as_deref(),
            Some("/registry/example.com/widgets/")
        );
        assert_eq!(kp("/registry/pods"), None);
    }

    #[test]
    fn histogram_is_cumulative() {
        let mut h = Histogram::default();
        h.observe(0.001);
        h.observe(0.03);
        h.observe(100.0);
        let mut out = String::new();
        h.render(&mut out, "x", "a=\"b\"");
        assert!(out.contains("x_bucket{a=\"b\",le=\"0.005\"} 1\n"), "{out}");
        assert!(out.contains("x_bucket{a=\"b\",le=\"0.05\"} 2\n"), "{out}");
        assert!(out.contains("x_bucket{a=\"b\",le=\"60\"} 2\n"), "{out}");
        assert!(out.contains("x_bucket{a=\"b\",le=\"+Inf\"} 3\n"), "{out}");
        assert!(out.contains("x_count{a=\"b\"} 3\n"), "{out}");
    }

    #[test]
    fn ring_evicts_and_reports_oldest() {
        let info = ResourceInfo::for_builtin("/registry", &BUILTINS[0]);
        let mut rc = ResourceCache::new(info, 10);
        assert_eq!(rc.oldest_watchable(), 10);
        for rev in 11..=15 {
            rc.push(
                CachedEvent {
                    kind: "ADDED",
                    revision: rev,
                    namespace: None,
                    object: Arc::from("{}"),
                },
                3,
            );
        }
        assert_eq!(rc.ring.len(), 3);
        assert_eq!(rc.first_seq, 2);
        assert_eq!(rc.oldest_watchable(), 12);
        assert_eq!(rc.received, 5);
    }

    #[test]
    fn progress_request_support_by_etcd_version() {
        assert!(!progress_requests_ordered("3.4.23"));
        assert!(progress_requests_ordered("3.4.31"));
        assert!(!progress_requests_ordered("3.5.12"));
        assert!(progress_requests_ordered("3.5.13"));
        assert!(progress_requests_ordered("3.6.0"));
        assert!(progress_requests_ordered("3.6.0-rc.1"));
        assert!(!progress_requests_ordered("3.3.27"));
        assert!(!progress_requests_ordered(""));
    }

    #[test]
    fn paths() {
        let t = parse_target("/api/v1/pods").unwrap();
        assert_eq!((t.group.as_str(), t.resource.as_str()), ("", "pods"));
        let t = parse_target("/apis/apps/v1/namespaces/shop/deployments/web").unwrap();
        assert_eq!(t.group, "apps");
        assert_eq!(t.namespace.as_deref(), Some("shop"));
        assert_eq!(t.name.as_deref(), Some("web"));
        let t = parse_target("/api/v1/namespaces/shop").unwrap();
        assert_eq!(t.resource, "namespaces");
        assert_eq!(t.name.as_deref(), Some("shop"));
        assert!(parse_target("/apis/apps").is_none());
        assert!(parse_target("/api/v1/pods/a/b/c").is_none());
    }
}
