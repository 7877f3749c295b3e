//! The apiserver and etcd `/metrics` side (issue 4). So far: a parser for the Prometheus text
//! exposition format that keeps what `prometheus-parse` loses (field case BR-07), checked
//! against every real capture in `../shared/testdata`.

pub mod concepts;
pub mod derive;
pub mod exposition;
pub mod quantile;
pub mod view;

pub use derive::derive;
