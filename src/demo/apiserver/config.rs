//! The settings of the simulated apiserver: the key prefix, the watch cache's ring size, the
//! bookmark interval, and an optional deliberately slow watcher.

use std::time::Duration;

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
