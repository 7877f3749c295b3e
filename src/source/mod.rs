//! Live inputs. Each source runs as its own tokio task and hands owned batches of
//! [`crate::model::Stamped`] observations to the store's owner through a channel; no source
//! shares state with the UI.

pub mod connect;
pub mod etcd;
pub mod etcd_metrics;
pub mod informer;
pub mod kubeconfig;
pub mod scrape;

pub use connect::{ConnectError, Connected, EtcdOptions};
pub use etcd::{EtcdSource, SyncOptions};
pub use informer::{spawn_informers, InformerResource};
pub use kubeconfig::{ApiserverAccess, KubeconfigChoice, KubeconfigOrigin};
pub use scrape::{file_scrapes, spawn_scraper, HttpAuth, ScrapeConfig, ScrapeFrom};
