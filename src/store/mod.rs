//! The store: one [`Session`] — the MVCC replica of the watched keyspace, the metric series
//! and the informer lag — and its clock.
//!
//! Data enters only through [`Session::apply`] with [`crate::model::Stamped`] observations,
//! in the order the sources (or a recording) produced them: live and replay are the same
//! code. Views and the CLI read through `&Session`; nothing here knows about drawing or I/O.

pub mod etcd_cluster;
mod informer;
mod memory_guard;
pub mod metrics;
mod notes;
pub mod other_clusters;
mod replica;
pub use replica::writers;
mod session;
mod shared_bytes;

pub use etcd_cluster::{member_changes, EtcdCluster, WatchHealth};
pub use informer::{InformerLag, InformerState};
pub use memory_guard::{MemoryAction, MemoryGuard};
pub use metrics::MetricStore;
pub use notes::{Note, Notes};
pub use other_clusters::{OtherCluster, OtherClusterRates, OtherClusters};
pub use replica::list_progress::ListProgress;
pub use replica::stats::{GrowthSample, ResourceStats, ResourceSummary};
pub use replica::writers::{
    Found, FoundWriter, FoundWriters, WriteRates, WriterNames, WriterNamesGuard, WriterStats,
    WriterSummary,
};
pub use replica::{
    ConnectionSummary, Difference, EventRecord, GapChanges, GapSummary, HistoryError, KeyMeta,
    NoteSummary, Replacement, Replica, ReplicaConfig, ReplicaMemory, Summary, Unseen, UnseenChange,
    UnseenCounts, VersionMeta, VersionValue, DEFAULT_HISTORY_BUDGET,
};
pub use session::{Applied, Applies, Discarded, Prepared, Session};
pub use shared_bytes::CHECKPOINT_FORMAT;
