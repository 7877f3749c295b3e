//! The Prometheus exporter (`regscope serve`, `record --listen`, `demo --listen`): the
//! derived-signal table ([`crate::derive::signals`]) served on `/metrics` in Prometheus'
//! text format 0.0.4 or OpenMetrics 1.0, with `/healthz` and `/`.
//!
//! - `exposition.rs`: the families served, their names (one `regscope_` prefix), the
//!   bounded writer series, and both text formats;
//! - `server.rs`: the HTTP(S) server, which asks the session loop for a reading and never
//!   holds the session.

pub mod exposition;
pub mod server;

pub use exposition::{exported_name, family_names};
