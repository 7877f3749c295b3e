//! Maps a parsed `/metrics` page onto regscope's metric concepts, using the table in
//! `concepts.toml` (embedded; the only place that knows metric names and label schemes).
//!
//! In: an [`Exposition`]. Out: a [`Mapped`] scrape: for each concept the name that won
//! (newest first; while a renamed metric's deprecation window serves the old and the new
//! name, the deprecated twin is ignored, so nothing counts twice) and one value per
//! [`SeriesKey`] `(concept, group, resource, op)`. Resource labels are normalised from
//! every scheme Kubernetes has used: `{group,resource}` (1.34+), `{resource}` holding
//! `pods` or `leases.coordination.k8s.io`, and `{type}` holding either of those or a storage
//! path such as `/registry/pods/` (≤ 1.33). Series that normalise to the same key (e.g.
//! `apiserver_request_duration_seconds` split by scope and component) are summed.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use serde::Deserialize;

use crate::model::ScrapeTarget;

/// The embedded concept table.
pub const CONCEPTS_TOML: &str = include_str!("concepts.toml");

/// A fingerprint of the concept table (FNV-1a over its text): recordings keep scrape
/// digests only for the table that made them.
pub fn table_fingerprint() -> u64 {
    CONCEPTS_TOML
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// What kind of metric a concept is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Gauge,
    Counter,
    Histogram,
}

/// One name a concept has had.
#[derive(Clone, Debug, Deserialize)]
pub struct NameDef {
    pub name: String,
    /// First release with this name, `"1.31"` (a Kubernetes minor for the apiserver and the
    /// controllers, an etcd minor such as `"3.6"` for etcd); `""` when older than anything
    /// regscope meets.
    pub since: String,
    /// First release that no longer exposes this name, `"1.37"`, in the same version space
    /// as `since`; `""` while it is still exposed. Kubernetes hides a deprecated ALPHA
    /// metric in the release that deprecates it, a BETA one a release later and a STABLE
    /// one three later (k8s.io/component-base `metrics/registry.go`, `shouldHide`); etcd
    /// drops names in a minor release. See [`Mapped::exposes`].
    #[serde(default)]
    pub until: String,
    /// The metric to read instead once past `until` (a newer name of this concept or
    /// another concept's), `""` for none: named by the "not exposed" line.
    #[serde(default)]
    pub replacement: String,
    /// The resource label holds a storage path without the etcd prefix (`/pods`,
    /// `/apiextensions.k8s.io/customresourcedefinitions`: `resource_prefix` of the watch
    /// cache's list metrics up to Kubernetes 1.33).
    #[serde(default)]
    pub bare_path: bool,
    /// Label holding the API group, `""` for none.
    #[serde(default)]
    pub group: String,
    /// Labels that may hold the resource, first present wins.
    #[serde(default)]
    pub resource: Vec<String>,
    /// Label holding the operation, verb or priority level.
    #[serde(default)]
    pub op: String,
    /// Operation values left out.
    #[serde(default)]
    pub skip_op: Vec<String>,
    /// A value meaning "could not be read".
    #[serde(default)]
    pub sentinel: Option<f64>,
    /// Only series whose `code` label is 5xx.
    #[serde(default)]
    pub code_5xx: bool,
}

/// One concept of the table.
#[derive(Clone, Debug, Deserialize)]
pub struct ConceptDef {
    pub id: String,
    pub target: ScrapeTarget,
    #[serde(rename = "type")]
    pub kind: Kind,
    /// Absent at or after `since` means zero (labelled counters appear on first increment).
    #[serde(default)]
    pub lazy: bool,
    pub names: Vec<NameDef>,
}

#[derive(Debug, Deserialize)]
struct TableFile {
    concept: Vec<ConceptDef>,
    storage_paths: BTreeMap<String, String>,
}

/// The loaded table with its lookup index.
#[derive(Debug)]
pub struct Table {
    pub concepts: Vec<ConceptDef>,
    /// Storage path after the prefix → `<resource>` or `<resource>.<group>`.
    pub storage_paths: BTreeMap<String, String>,
    /// Sample name (with `_bucket`/`_sum`/`_count` for histograms) → (concept, name index,
    /// part).
    index: HashMap<String, Vec<(usize, usize, Part)>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Value,
    Bucket,
    Sum,
    Count,
}

/// A concept of the table, named in code: a typo does not compile. One variant per `id` of
/// `concepts.toml` (a unit test holds the two together); [`Table::idx`] gives its position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Concept {
    BuildInfo,
    EtcdRequestDuration,
    EtcdRequests,
    EtcdRequestErrors,
    RequestDuration,
    Requests,
    WatchLists,
    RequestErrors,
    WatchCacheCapacity,
    WatchCacheCapacityIncrease,
    WatchCacheCapacityDecrease,
    WatchCacheEventsReceived,
    WatchCacheEventsDispatched,
    WatchCacheInitializations,
    WatchCacheResourceVersion,
    TerminatedWatchers,
    WatchCacheInitializationErrors,
    WatchCacheInitializationDuration,
    WatchShards,
    WatchFilteredEvents,
    WatchEventsDispatchDuration,
    CacheLists,
    CacheListFetched,
    CacheListReturned,
    Objects,
    StorageSize,
    StorageLists,
    StorageListFetched,
    StorageListEvaluated,
    StorageListReturned,
    StorageListDuration,
    EtcdBookmarks,
    ApfInqueue,
    ApfExecuting,
    ApfRejected,
    ApfNominalSeats,
    EtcdServerVersion,
    EtcdDbSize,
    EtcdDbInUse,
    EtcdQuota,
    EtcdHasLeader,
    EtcdLeaderChanges,
    EtcdSlowWatchers,
    EtcdProposalsFailed,
    EtcdCurrentRevision,
    EtcdCompactRevision,
    EtcdKeys,
    EtcdRanges,
    EtcdRangeDuration,
    EtcdFeatureEnabled,
    EtcdServerRequestDuration,
    EtcdWatchSendLoopWatchStream,
    EtcdWatchSendLoopWatchStreamPerEvent,
    EtcdWatchSendLoopControlStream,
    EtcdWatchSendLoopProgress,
    EtcdHttpReceived,
    EtcdHttpFailed,
    EtcdHttpDuration,
    InformerStoreResourceVersion,
    InformerQueuedItems,
    InformerProcessingLatency,
    WorkqueueDepth,
    WorkqueueAdds,
    WorkqueueRetries,
    WorkqueueLongestRunning,
}

impl Concept {
    /// Every concept, in the order of `concepts.toml`.
    pub const ALL: [Concept; 65] = [
        Concept::BuildInfo,
        Concept::EtcdRequestDuration,
        Concept::EtcdRequests,
        Concept::EtcdRequestErrors,
        Concept::RequestDuration,
        Concept::Requests,
        Concept::WatchLists,
        Concept::RequestErrors,
        Concept::WatchCacheCapacity,
        Concept::WatchCacheCapacityIncrease,
        Concept::WatchCacheCapacityDecrease,
        Concept::WatchCacheEventsReceived,
        Concept::WatchCacheEventsDispatched,
        Concept::WatchCacheInitializations,
        Concept::WatchCacheResourceVersion,
        Concept::TerminatedWatchers,
        Concept::WatchCacheInitializationErrors,
        Concept::WatchCacheInitializationDuration,
        Concept::WatchShards,
        Concept::WatchFilteredEvents,
        Concept::WatchEventsDispatchDuration,
        Concept::CacheLists,
        Concept::CacheListFetched,
        Concept::CacheListReturned,
        Concept::Objects,
        Concept::StorageSize,
        Concept::StorageLists,
        Concept::StorageListFetched,
        Concept::StorageListEvaluated,
        Concept::StorageListReturned,
        Concept::StorageListDuration,
        Concept::EtcdBookmarks,
        Concept::ApfInqueue,
        Concept::ApfExecuting,
        Concept::ApfRejected,
        Concept::ApfNominalSeats,
        Concept::EtcdServerVersion,
        Concept::EtcdDbSize,
        Concept::EtcdDbInUse,
        Concept::EtcdQuota,
        Concept::EtcdHasLeader,
        Concept::EtcdLeaderChanges,
        Concept::EtcdSlowWatchers,
        Concept::EtcdProposalsFailed,
        Concept::EtcdCurrentRevision,
        Concept::EtcdCompactRevision,
        Concept::EtcdKeys,
        Concept::EtcdRanges,
        Concept::EtcdRangeDuration,
        Concept::EtcdFeatureEnabled,
        Concept::EtcdServerRequestDuration,
        Concept::EtcdWatchSendLoopWatchStream,
        Concept::EtcdWatchSendLoopWatchStreamPerEvent,
        Concept::EtcdWatchSendLoopControlStream,
        Concept::EtcdWatchSendLoopProgress,
        Concept::EtcdHttpReceived,
        Concept::EtcdHttpFailed,
        Concept::EtcdHttpDuration,
        Concept::InformerStoreResourceVersion,
        Concept::InformerQueuedItems,
        Concept::InformerProcessingLatency,
        Concept::WorkqueueDepth,
        Concept::WorkqueueAdds,
        Concept::WorkqueueRetries,
        Concept::WorkqueueLongestRunning,
    ];

    /// The concept whose `id` is `id`, if any (ids come back from `snapshot --json` and
    /// [`ConceptDef::id`]).
    pub fn from_id(id: &str) -> Option<Concept> {
        Concept::ALL.into_iter().find(|c| c.id() == id)
    }

    /// The concept's `id` in `concepts.toml` (and in `snapshot --json`).
    pub const fn id(self) -> &'static str {
        match self {
            Concept::BuildInfo => "build_info",
            Concept::EtcdRequestDuration => "etcd_request_duration",
            Concept::EtcdRequests => "etcd_requests",
            Concept::EtcdRequestErrors => "etcd_request_errors",
            Concept::RequestDuration => "request_duration",
            Concept::Requests => "requests",
            Concept::WatchLists => "watch_lists",
            Concept::RequestErrors => "request_errors",
            Concept::WatchCacheCapacity => "watch_cache_capacity",
            Concept::WatchCacheCapacityIncrease => "watch_cache_capacity_increase",
            Concept::WatchCacheCapacityDecrease => "watch_cache_capacity_decrease",
            Concept::WatchCacheEventsReceived => "watch_cache_events_received",
            Concept::WatchCacheEventsDispatched => "watch_cache_events_dispatched",
            Concept::WatchCacheInitializations => "watch_cache_initializations",
            Concept::WatchCacheResourceVersion => "watch_cache_resource_version",
            Concept::TerminatedWatchers => "terminated_watchers",
            Concept::WatchCacheInitializationErrors => "watch_cache_initialization_errors",
            Concept::WatchCacheInitializationDuration => "watch_cache_initialization_duration",
            Concept::WatchShards => "watch_shards",
            Concept::WatchFilteredEvents => "watch_filtered_events",
            Concept::WatchEventsDispatchDuration => "watch_events_dispatch_duration",
            Concept::CacheLists => "cache_lists",
            Concept::CacheListFetched => "cache_list_fetched",
            Concept::CacheListReturned => "cache_list_returned",
            Concept::Objects => "objects",
            Concept::StorageSize => "storage_size",
            Concept::StorageLists => "storage_lists",
            Concept::StorageListFetched => "storage_list_fetched",
            Concept::StorageListEvaluated => "storage_list_evaluated",
            Concept::StorageListReturned => "storage_list_returned",
            Concept::StorageListDuration => "storage_list_duration",
            Concept::EtcdBookmarks => "etcd_bookmarks",
            Concept::ApfInqueue => "apf_inqueue",
            Concept::ApfExecuting => "apf_executing",
            Concept::ApfRejected => "apf_rejected",
            Concept::ApfNominalSeats => "apf_nominal_seats",
            Concept::EtcdServerVersion => "etcd_server_version",
            Concept::EtcdDbSize => "etcd_db_size",
            Concept::EtcdDbInUse => "etcd_db_in_use",
            Concept::EtcdQuota => "etcd_quota",
            Concept::EtcdHasLeader => "etcd_has_leader",
            Concept::EtcdLeaderChanges => "etcd_leader_changes",
            Concept::EtcdSlowWatchers => "etcd_slow_watchers",
            Concept::EtcdProposalsFailed => "etcd_proposals_failed",
            Concept::EtcdCurrentRevision => "etcd_current_revision",
            Concept::EtcdCompactRevision => "etcd_compact_revision",
            Concept::EtcdKeys => "etcd_keys",
            Concept::EtcdRanges => "etcd_ranges",
            Concept::EtcdRangeDuration => "etcd_range_duration",
            Concept::EtcdFeatureEnabled => "etcd_feature_enabled",
            Concept::EtcdServerRequestDuration => "etcd_server_request_duration",
            Concept::EtcdWatchSendLoopWatchStream => "etcd_watch_send_loop_watch_stream",
            Concept::EtcdWatchSendLoopWatchStreamPerEvent => {
                "etcd_watch_send_loop_watch_stream_per_event"
            }
            Concept::EtcdWatchSendLoopControlStream => "etcd_watch_send_loop_control_stream",
            Concept::EtcdWatchSendLoopProgress => "etcd_watch_send_loop_progress",
            Concept::EtcdHttpReceived => "etcd_http_received",
            Concept::EtcdHttpFailed => "etcd_http_failed",
            Concept::EtcdHttpDuration => "etcd_http_duration",
            Concept::InformerStoreResourceVersion => "informer_store_resource_version",
            Concept::InformerQueuedItems => "informer_queued_items",
            Concept::InformerProcessingLatency => "informer_processing_latency",
            Concept::WorkqueueDepth => "workqueue_depth",
            Concept::WorkqueueAdds => "workqueue_adds",
            Concept::WorkqueueRetries => "workqueue_retries",
            Concept::WorkqueueLongestRunning => "workqueue_longest_running",
        }
    }
}

/// A concept's position in the table; stable for one build of regscope.
pub type ConceptIdx = u16;

impl Table {
    /// Parses a table. Errors name the TOML problem (the embedded table is checked by a
    /// unit test, so this only fails for a broken edit).
    pub fn parse(text: &str) -> Result<Table, String> {
        let file: TableFile = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut index: HashMap<String, Vec<(usize, usize, Part)>> = HashMap::new();
        for (ci, c) in file.concept.iter().enumerate() {
            for (ni, n) in c.names.iter().enumerate() {
                let parts: &[(&str, Part)] = match c.kind {
                    Kind::Histogram => &[
                        ("_bucket", Part::Bucket),
                        ("_sum", Part::Sum),
                        ("_count", Part::Count),
                    ],
                    _ => &[("", Part::Value)],
                };
                for (suffix, part) in parts {
                    index
                        .entry(format!("{}{suffix}", n.name))
                        .or_default()
                        .push((ci, ni, *part));
                }
            }
        }
        Ok(Table {
            concepts: file.concept,
            storage_paths: file.storage_paths,
            index,
        })
    }

    /// The position of `concept` in the table. Every [`Concept`] is in the embedded
    /// table (checked by a unit test), so this panics only for a table that lost one.
    pub fn idx(&self, concept: Concept) -> ConceptIdx {
        let id = concept.id();
        self.concepts
            .iter()
            .position(|c| c.id == id)
            .unwrap_or_else(|| panic!("metric concept {id:?} is not in concepts.toml"))
            as ConceptIdx
    }

    pub fn concept(&self, idx: ConceptIdx) -> &ConceptDef {
        &self.concepts[idx as usize]
    }

    /// Splits a resource label value into `(group, resource)`: `pods` → `("", "pods")`,
    /// `leases.coordination.k8s.io` → `("coordination.k8s.io", "leases")`, and storage
    /// paths `/registry/pods/`, `/registry/services/specs/`,
    /// `/registry/apiregistration.k8s.io/apiservices/` through [`Table::storage_paths`].
    pub fn resource_of(&self, value: &str) -> (String, String) {
        if let Some(path) = value.strip_prefix('/') {
            // `<prefix>/<rest>/`: the prefix is the first segment (kube-apiserver's
            // --etcd-prefix, `/registry` by default).
            let path = path.trim_end_matches('/');
            let rest = path.split_once('/').map_or("", |(_, r)| r);
            return self.storage_path_resource(rest);
        }
        split_dotted(value)
    }

    /// `(group, resource)` for a key path after the prefix, e.g. `deployments` →
    /// `("apps", "deployments")`, `widgets.example.com` (a replica resource name) or
    /// `example.com/widgets` (a path) → `("example.com", "widgets")`.
    pub fn storage_path_resource(&self, rest: &str) -> (String, String) {
        if let Some(full) = self.storage_paths.get(rest) {
            return split_dotted(full);
        }
        match rest.split_once('/') {
            Some((g, r)) if g.contains('.') => (g.to_string(), r.to_string()),
            _ => split_dotted(rest),
        }
    }
}

fn split_dotted(v: &str) -> (String, String) {
    match v.split_once('.') {
        Some((r, g)) => (g.to_string(), r.to_string()),
        None => (String::new(), v.to_string()),
    }
}

/// The embedded table, loaded once.
pub fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| Table::parse(CONCEPTS_TOML).expect("embedded concepts.toml is valid"))
}

mod mapping;
mod series;

pub use mapping::{map, minor_version, Absence, Mapped, Value};
pub use series::{Hist, Label, SeriesKey, SeriesMap};

#[cfg(test)]
mod tests;
