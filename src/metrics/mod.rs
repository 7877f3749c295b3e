//! The apiserver and etcd `/metrics` side: [`exposition`] parses the Prometheus text format
//! without losing label values that hold separators or escapes (checked against every real
//! capture in `../shared/testdata`); [`concepts`] maps the metric names and label schemes of
//! each Kubernetes release onto one set of concepts; [`quantile`] computes rates and
//! quantiles between two scrapes as Prometheus does. [`postcard_reader`] reads a recorded scrape
//! digest's series back faster than serde. The store keeps the mapped scrapes;
//! the panels' data is derived from them above the store, in [`crate::derive::apiserver`].

pub mod concepts;
pub mod exposition;
pub(crate) mod postcard_reader;
pub mod quantile;
