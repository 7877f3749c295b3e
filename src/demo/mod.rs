//! `regscope demo`: a private etcd and a simulated control plane writing into it.
//!
//! [`etcd_server::PrivateEtcd`] starts the `etcd` binary from `PATH` on loopback ports with a
//! temp data dir and kills it on drop; the integration tests use it too.
//! [`Simulation::start`] takes only a `PrivateEtcd` and writes Kubernetes objects into it
//! the way kube-apiserver does (protobuf storage encoding from [`objects`], create / update /
//! delete transactions, leases for events, the `compact_rev_key` compactor). This module is
//! the only code in regscope that writes to etcd.
//! [`apiserver::DemoApiserver`] is the simulated kube-apiserver in front of it: `/metrics`
//! with the storage latencies the simulation measured, a watch cache per resource, and a
//! read-only list/watch HTTP endpoint on loopback.

pub mod apiserver;
pub mod components;
pub mod control_plane;
pub mod etcd_server;
pub mod objects;
pub mod sim;
pub mod workload;

pub use apiserver::{
    DemoApiserver, DemoApiserverConfig, SlowWatcher, StorageLatencies, StorageLatency,
};
pub use control_plane::{SimHandle, Simulation};
pub use etcd_server::{DemoError, PrivateEtcd};
pub use sim::{SimConfig, SimCounters, SimStats, COMPACT_REV_KEY};
