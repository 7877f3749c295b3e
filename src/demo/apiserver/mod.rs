//! The demo's simulated kube-apiserver: a read-only HTTP endpoint on loopback in front of the
//! [`PrivateEtcd`](super::PrivateEtcd), so that the console's apiserver panels (metrics, informer lag, 410 risk)
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
//!
//! The files: `config` (settings), `server` (start and stop), `state` (what every task
//! shares), `cacher` and `watch_cache` (the cache and the etcd watch feeding it), `http`,
//! `list` and `watch` (the requests), `status` (failure bodies), `flow_control` (API Priority
//! and Fairness), `latency`, `request_metrics`, `text_format` and `metrics` (`/metrics`),
//! `resources` (built-in resources and their keys), `kubeconfig` and `version`.

mod cacher;
mod config;
mod flow_control;
mod http;
mod kubeconfig;
mod latency;
mod list;
mod lock;
mod metrics;
mod request_metrics;
mod resources;
mod server;
mod state;
mod status;
mod text_format;
mod version;
mod watch;
mod watch_cache;

pub use config::{DemoApiserverConfig, SlowWatcher};
pub use kubeconfig::KUBECONFIG_CONTEXT;
pub use latency::{StorageLatencies, StorageLatency, LATENCY_BUCKETS};
pub use resources::storage_group_resource;
pub use server::DemoApiserver;
pub use version::DEMO_GIT_VERSION;
