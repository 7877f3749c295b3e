//! The store: the MVCC replica of the watched keyspace plus what is derived from it.
//!
//! Data enters only through [`Replica::apply`] with [`Stamped`] observations, in the order a
//! source produced them (live or replayed: the same code). Views and the CLI read through
//! `&Replica` queries; nothing here knows about drawing or I/O.

mod informer;
pub mod metrics;
mod replica;
mod session;
mod stats;

pub use informer::{InformerLag, InformerState};
pub use metrics::MetricStore;
pub use replica::{
    Difference, EventRecord, HistoryError, KeyMeta, Replica, ReplicaConfig, Summary, VersionView,
    DEFAULT_HISTORY_BUDGET,
};
pub use session::{Applied, Session};
pub use stats::{GrowthSample, ResourceStats, ResourceSummary};
