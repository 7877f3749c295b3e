//! Helpers shared by the `regscope snapshot --json` tests of both binaries: running the
//! binary, reading numbers out of its JSON, and writing a kubeconfig for a server.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_regscope");

/// The hang guard of [`run`]: a snapshot takes seconds, even an unoptimised build's on a
/// busy machine; one that runs this long is stuck.
pub const RUN_HANG_GUARD: Duration = Duration::from_secs(120);

/// Runs `regscope ARGS` to its end; fails the test if it has not exited after
/// [`RUN_HANG_GUARD`].
pub fn run(args: &[&str]) -> Output {
    // Keep the machine's kubeconfig (`$KUBECONFIG`, `~/.kube/config`) and etcd environment
    // out of these runs.
    let home = tempfile::tempdir().unwrap();
    super::output_within(
        Command::new(BIN)
            .args(args)
            .env_remove("KUBECONFIG")
            .env_remove("ETCDCTL_ENDPOINTS")
            .env("HOME", home.path()),
        RUN_HANG_GUARD,
    )
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

pub fn num(v: &Value) -> f64 {
    v.as_f64()
        .unwrap_or_else(|| panic!("expected a number, got {v}"))
}

/// A kubeconfig for `server` with one context `ctx` and a dummy token.
pub fn kubeconfig(dir: &Path, server: &str) -> PathBuf {
    let p = dir.join("kubeconfig");
    std::fs::write(
        &p,
        format!(
            "apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: {server}
contexts:
- name: ctx
  context:
    cluster: c
    user: u
current-context: ctx
users:
- name: u
  user:
    token: dummy
"
        ),
    )
    .unwrap();
    p
}
