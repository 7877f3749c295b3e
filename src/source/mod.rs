//! Live inputs. Each source runs as its own tokio task and hands owned batches of
//! [`crate::model::Stamped`] observations to the store's owner through a channel; no source
//! shares state with the UI.

pub mod connect;
pub mod etcd;
pub mod etcd_metrics;

pub use connect::{ConnectError, Connected, EtcdOptions};
pub use etcd::{EtcdSource, SyncOptions};
