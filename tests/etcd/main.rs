//! Every integration test that starts a real etcd (the `etcd` binary on PATH, on loopback
//! with temp data dirs and random ports), in one test binary: the second pass of
//! `scripts/test.sh` reruns exactly this binary against etcd 3.5.1. Tests that need no etcd
//! live in `tests/offline/`.

#[path = "../common/mod.rs"]
mod common;

mod analyze;
mod apiserver_cli;
mod controllers;
mod db_file;
mod db_fixture;
mod db_holders;
mod db_warnings;
mod decode_cli;
mod demo;
mod demo_apiserver;
mod diff;
mod faults;
mod ha;
mod node_doctor;
mod read_only;
mod record_replay;
mod scrape_sources;
mod sync;
mod tls_auth;
mod writers_migration;
