//! regscope: a terminal console for the Kubernetes storage layer (kube-apiserver on etcd).
//!
//! Data flows one way: [`source`]s turn etcd responses into [`model::Observation`]s, the
//! [`store`] applies them to an MVCC replica, and the [`tui`] and [`cli`] read the store.
//! [`demo`] runs a private etcd with a simulated control plane; it is the only code that
//! writes to etcd, and only to an etcd it started itself.

pub mod cli;
pub mod config;
pub mod decode;
pub mod decrypt;
pub mod demo;
pub mod metrics;
pub mod model;
pub mod source;
pub mod store;
pub mod tui;
