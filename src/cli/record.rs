//! `regscope record -o FILE`: the live sources recorded headless (no terminal: under
//! nohup, systemd or timeout) until `--duration`, a signal or `--max-size`, with a log of
//! outages and progress on stderr, and served to Prometheus too with `--listen`; the loop
//! is [`super::headless`]. `serve` ([`serve`]) is the same without a file.

use std::process::ExitCode;

use anyhow::Result;

use super::args::{MetricsArgs, RecordArgs, ServeArgs};
use super::headless::{self, Headless};
use super::options::scrape_config;
use crate::record::RecordOptions;

/// `regscope record -o FILE`: the live sources into a file until `--duration`, SIGTERM,
/// SIGINT, SIGHUP or `--max-size`; no terminal needed. Exit 0 when the file was closed
/// cleanly, 2 when the sources or the file could not be set up.
pub async fn run(r: &RecordArgs, m: &MetricsArgs, show_secrets: bool) -> Result<ExitCode> {
    if let Some(flag) = r.exporter.flag_without_listen(r.listen) {
        eprintln!("regscope record: {flag} goes with --listen (nothing is served without it)");
        return Ok(ExitCode::from(2));
    }
    let mut scfg = match scrape_config(m) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    scfg.other_clusters = r.conn.other_clusters(&m.node_other_clusters);
    let scfg = &scfg;
    // A recorder that also serves is a daemon: it waits for etcd rather than exiting.
    let connected = if r.listen.is_some() {
        super::session::connect_session_waiting(&r.conn, "record").await?
    } else {
        match super::session::connect_session(&r.conn).await {
            Ok(c) => Some(c),
            Err(e) => {
                eprintln!("regscope: {e}");
                return Ok(ExitCode::from(2));
            }
        }
    };
    let Some((source, cluster_id, info)) = connected else {
        eprintln!("regscope record: stopped before etcd was reached; nothing recorded");
        return Ok(ExitCode::SUCCESS);
    };
    let opts = RecordOptions {
        show_secrets,
        max_size: r.max_size.map(|n| n as u64),
        keep_last: r.keep_last,
        overwrite: r.force,
        ..RecordOptions::new(&r.output)
    };
    let h = Headless {
        who: "record",
        record: Some(opts),
        serve: r.listen.map(|l| r.exporter.serve_options(l)),
        duration: r.duration,
        memory_limit: r.conn.memory_limit.map(|b| b as u64),
    };
    headless::run(source, scfg, info, cluster_id, h).await
}

/// `regscope serve`: the live sources applied to a session served on `--listen` until
/// `--duration` or SIGTERM/SIGINT; no terminal and no file. Exit codes as [`run`].
pub async fn serve(a: &ServeArgs, m: &MetricsArgs) -> Result<ExitCode> {
    let mut scfg = match scrape_config(m) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    scfg.other_clusters = a.conn.other_clusters(&m.node_other_clusters);
    let Some((source, cluster_id, info)) =
        super::session::connect_session_waiting(&a.conn, "serve").await?
    else {
        eprintln!("regscope serve: stopped before etcd was reached");
        return Ok(ExitCode::SUCCESS);
    };
    let h = Headless {
        who: "serve",
        record: None,
        serve: Some(a.exporter.serve_options(a.listen)),
        duration: a.duration,
        memory_limit: a.conn.memory_limit.map(|b| b as u64),
    };
    headless::run(source, &scfg, info, cluster_id, h).await
}
