//! The store: one [`Session`] — the MVCC replica of the watched keyspace, the metric series
//! and the informer lag — and its clock.
//!
//! Data enters only through [`Session::apply`] with [`crate::model::Stamped`] observations,
//! in the order the sources (or a recording) produced them: live and replay are the same
//! code. Views and the CLI read through `&Session`; nothing here knows about drawing or I/O.

mod discards;
mod informer;
mod memory_guard;
pub mod metrics;
pub mod other_clusters;
mod replica;
pub use replica::writers;
mod session;
mod shared_bytes;

pub use informer::{InformerLag, InformerState};
pub use memory_guard::{MemoryAction, MemoryGuard};
pub use metrics::MetricStore;
pub use other_clusters::{OtherCluster, OtherClusterRates, OtherClusters};
pub use replica::list_progress::ListProgress;
pub use replica::stats::{GrowthSample, ResourceStats, ResourceSummary};
pub use replica::writers::{
    Found, FoundWriter, FoundWriters, WriteRates, WriterNames, WriterNamesGuard, WriterStats,
    WriterSummary,
};
pub use replica::{
    member_changes, Difference, EventRecord, GapChanges, GapSummary, HistoryError, KeyMeta,
    Replica, ReplicaConfig, ReplicaMemory, Summary, Unseen, UnseenChange, UnseenCounts,
    VersionMeta, VersionView, WatchHealth, DEFAULT_HISTORY_BUDGET,
};
pub use session::{Applied, Discarded, Session};
pub use shared_bytes::CHECKPOINT_FORMAT;
