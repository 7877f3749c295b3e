//! Integration tests that start no etcd, in one test binary (one link instead of one per
//! file): the decoder and the CLI on the shared golden data, the metrics concept table over
//! real captures, recordings built in-process, scrape sources and informers against fake
//! servers, the scripted fake etcd. Tests that start a real etcd live in `tests/etcd/`.

#[path = "../common/mod.rs"]
mod common;

mod analyze;
mod apiserver_cli;
mod bbolt_fuzz;
mod bookmarks;
mod decode_cli;
mod decode_conformance;
mod decode_fuzz;
mod demo_objects;
mod diff;
mod metrics_captures;
mod metrics_mapping;
mod metrics_versions;
mod prometheus_rules;
mod record_replay;
mod recording_flags;
mod report;
mod report_render;
mod scrape_sources;
mod scripted_etcd;
mod tls_auth;
