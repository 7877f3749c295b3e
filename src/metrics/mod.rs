//! The apiserver and etcd `/metrics` side: [`exposition`] parses the Prometheus text format
//! without losing label values that hold separators or escapes (checked against every real
//! capture in `../shared/testdata`); [`concepts`] maps the metric names and label schemes of
//! each Kubernetes release onto one set of concepts; [`quantile`] computes rates and
//! quantiles between two scrapes as Prometheus does; [`derive`] builds the panels' data
//! ([`view`]) from the stored scrapes.

pub mod concepts;
pub mod derive;
pub mod exposition;
pub mod quantile;
pub mod view;

pub use derive::derive;
