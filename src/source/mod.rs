//! Live inputs. Each source runs as its own tokio task and hands owned batches of
//! [`crate::model::Stamped`] observations to the store's owner through a channel; no source
//! shares state with the UI. [`live::start`] starts all of them at once; a replay
//! (`crate::record::Player`) takes the place of that one call.

pub mod compacted;
pub mod connect;
pub mod controllers;
pub mod etcd;
pub mod etcd_db;
pub mod informer;
pub mod kubeconfig;
pub mod list;
pub mod live;
mod members;
pub mod other_cluster;
pub mod process;
pub mod scrape;
pub mod sync;
mod watch;

pub use connect::{ConnectError, Connected, EtcdOptions};
pub use etcd::{EtcdSource, SyncOptions};
pub use informer::{spawn_informers, InformerResource};
pub use kubeconfig::{ApiserverAccess, KubeconfigChoice, KubeconfigOrigin};
pub use live::{EtcdMetricsFrom, LiveSources, ScrapeConfig};
pub use members::members_once;
pub use other_cluster::OtherClusterSource;
pub use scrape::{file_scrapes, spawn_scraper, HttpAuth, ScrapeFrom};
