//! The console (no subcommand): the live sources of the etcd the flags name, into the
//! full-screen console ([`crate::tui::run`]) until the user quits. `demo` runs the same
//! console over its private etcd ([`run_console`]).

use std::process::ExitCode;

use anyhow::Result;
use tokio::sync::mpsc;

use super::args::{ConnArgs, MetricsArgs, UiArgs};
use super::options::{scrape_config, ui_options};
use crate::model::SessionInfo;
use crate::source::{EtcdSource, ScrapeConfig};
use crate::store::Session;
use crate::tui::{Exit, Feed, UiOptions};

/// The console takes over a terminal: when stdin or stdout is not one, says what to use
/// instead and gives exit code 2.
pub fn need_terminal() -> Option<ExitCode> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        return None;
    }
    eprintln!(
        "regscope: the console needs a terminal (stdin and stdout); without one use `regscope snapshot --json`, `regscope record -o FILE` or `regscope replay --check FILE`"
    );
    Some(ExitCode::from(2))
}

/// `regscope` without a subcommand: connects (failing fast, before the terminal is taken,
/// when the endpoint is wrong) and runs the console; the node's discovery problems become
/// console warnings.
pub async fn run(
    conn: &ConnArgs,
    ui: &UiArgs,
    m: &MetricsArgs,
    discovery: Option<&crate::node::Discovery>,
) -> Result<ExitCode> {
    if let Some(code) = need_terminal() {
        return Ok(code);
    }
    let scfg = match scrape_config(m) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    // Fail fast, before taking over the terminal, when the endpoint is wrong.
    let (source, cluster_id, info) = match super::session::connect_session(conn).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("regscope: {e}");
            eprintln!(
                "regscope: `regscope doctor` checks each etcd member, certificate and file it uses"
            );
            return Ok(ExitCode::from(2));
        }
    };
    let mut scfg = scfg;
    scfg.other_clusters = conn.other_clusters(&m.node_other_clusters);
    let mut opts = ui_options(ui)?;
    opts.memory_limit = conn.memory_limit.map(|b| b as u64);
    for p in discovery.map_or(&[][..], |d| &d.problems) {
        opts.warnings.push(format!(
            "node discovery: {}: {} (run `regscope doctor`)",
            p.file, p.message
        ));
    }
    run_console(source, info, opts, &scfg, cluster_id).await
}

/// Runs the live sources into the console until the user quits.
pub async fn run_console(
    source: EtcdSource,
    mut info: SessionInfo,
    opts: UiOptions,
    scfg: &ScrapeConfig,
    cluster_id: u64,
) -> Result<ExitCode> {
    // Build the merged Kubernetes schemas (~0.1 s) while the initial list runs, so opening
    // the first key does not pause.
    std::thread::spawn(|| crate::decode::schema::plan().is_some());
    let (tx, rx) = mpsc::channel(1024);
    let sources = match super::session::start_live(source, scfg, tx, &mut info).await {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let feed = Feed::Live {
        rx,
        record_dir: std::env::current_dir().unwrap_or_else(|_| ".".into()),
        cluster_id,
    };
    let res = crate::tui::run(feed, Session::new(info), opts).await;
    drop(sources);
    exit_code(res?)
}

fn exit_code(e: Exit) -> Result<ExitCode> {
    Ok(match e {
        Exit::Quit => ExitCode::SUCCESS,
        // The shell convention for "ended by signal N".
        Exit::Signal(n) => ExitCode::from(u8::try_from(128 + n).unwrap_or(1)),
        Exit::SourceFailed(e) => {
            eprintln!("regscope: {e}");
            ExitCode::from(2)
        }
    })
}
