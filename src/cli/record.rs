//! `regscope record -o FILE`: the live sources recorded headless (no terminal: under
//! nohup, systemd or timeout) until `--duration`, a signal or `--max-size`, with a log of
//! outages and progress on stderr. `demo --record` records its session the same way
//! ([`record_session`]).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Result;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

use super::args::{MetricsArgs, RecordArgs};
use super::options::scrape_config;
use crate::model::Stamped;
use crate::record::{RecordOptions, Recorder};
use crate::source::ScrapeConfig;
use crate::store::Session;

/// `regscope record -o FILE`: the live sources into a file until `--duration`, SIGTERM,
/// SIGINT, SIGHUP or `--max-size`; no terminal needed. Exit 0 when the file was closed
/// cleanly, 2 when the sources or the file could not be set up.
pub async fn run(r: &RecordArgs, m: &MetricsArgs, show_secrets: bool) -> Result<ExitCode> {
    let mut scfg = match scrape_config(m) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    scfg.other_clusters = r.conn.other_clusters(&m.node_other_clusters);
    let scfg = &scfg;
    let (source, cluster_id, info) = match super::session::connect_session(&r.conn).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("regscope: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let opts = RecordOptions {
        show_secrets,
        max_size: r.max_size.map(|n| n as u64),
        keep_last: r.keep_last,
        overwrite: r.force,
        ..RecordOptions::new(&r.output)
    };
    let memory_limit = r.conn.memory_limit.map(|b| b as u64);
    record_session(
        source,
        scfg,
        info,
        cluster_id,
        opts,
        r.duration,
        memory_limit,
    )
    .await
}

/// One stderr line when etcd's connection is lost and when it is restored (and on each
/// failover), so that a headless recorder under nohup or systemd leaves a log of the outage.
#[derive(Default)]
struct ConnLog {
    bad: bool,
}

impl ConnLog {
    fn observe(&mut self, st: &Stamped) {
        use crate::model::{ConnState, Observation};
        match &st.obs {
            Observation::Conn(c) => {
                let line = match c {
                    ConnState::Reconnecting { error, .. } => {
                        format!("etcd connection lost: {error}")
                    }
                    ConnState::NotResponding { .. } => "etcd not responding".to_string(),
                    ConnState::Failed { error } => format!("etcd source failed: {error}"),
                    ConnState::Watching if self.bad => {
                        self.bad = false;
                        eprintln!("regscope record: etcd connection restored");
                        return;
                    }
                    _ => return,
                };
                if !self.bad {
                    self.bad = true;
                    eprintln!("regscope record: {line}");
                }
            }
            // A replaced or restored etcd: the replica is rebuilt from a fresh list.
            Observation::Reset { reason } => {
                eprintln!("regscope record: etcd replaced: {reason}");
            }
            // A gap: revisions compacted before the watch could resume.
            Observation::ListDone {
                revision,
                compacted: Some(c),
            } => {
                eprintln!(
                    "regscope record: gap: relisted at revision {revision} after etcd compacted at {c}; the changes in between were not seen one by one (rows marked unseen in replay and export)"
                );
            }
            // A failover, and a prefix that holds nothing (a typo'd --prefix would
            // otherwise record an empty session without a word).
            Observation::Note(n)
                if n.starts_with("failover: ") || n.starts_with("no keys under ") =>
            {
                eprintln!("regscope record: {n}");
            }
            _ => {}
        }
    }
}

/// Records the live sources of a session (`source` for etcd, `scfg` for the rest) into
/// `opts.path` headless, until `duration`, a signal or `--max-size`, then closes the file
/// cleanly. Progress goes to stderr once a minute. With `memory_limit` (bytes resident),
/// history is dropped to stay under it, and when that is not enough the recording stops
/// (exit 2) with a message instead of growing until the kernel kills it. Exit codes as
/// [`run`].
pub async fn record_session(
    source: crate::source::EtcdSource,
    scfg: &ScrapeConfig,
    mut info: crate::model::SessionInfo,
    cluster_id: u64,
    opts: RecordOptions,
    duration: Option<Duration>,
    memory_limit: Option<u64>,
) -> Result<ExitCode> {
    let mut memory = super::memory::MemoryCheck::new(memory_limit, "record");
    let show_secrets = opts.show_secrets;
    let limits = [
        opts.keep_last.map(|d| {
            format!(
                ", keeping the last {} in a rolling set",
                humantime::format_duration(d)
            )
        }),
        opts.max_size.map(|n| format!(", at most {n} bytes")),
    ]
    .into_iter()
    .flatten()
    .collect::<String>();
    let set = opts.keep_last.map(|_| opts.path.clone());
    let (tx, mut rx) = mpsc::channel::<Stamped>(4096);
    let sources = match super::session::start_live(source, scfg, tx, &mut info).await {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let mut session = Session::new(info);
    let mut rec = match Recorder::create(opts, &session, cluster_id) {
        Ok(rec) => rec,
        Err(e) => {
            eprintln!("regscope: cannot record: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    eprintln!(
        "regscope record: recording to {}{}{}{limits} (SIGTERM or Ctrl-C stops)",
        rec.path().display(),
        if show_secrets {
            ", Secret values INCLUDED"
        } else {
            ", Secret values redacted"
        },
        duration
            .map(|d| format!(", for {}", humantime::format_duration(d)))
            .unwrap_or_default()
    );
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    // Under `nohup` (SIGHUP ignored when regscope started) a hangup must not stop the
    // recording: the terminal that goes away is the one `nohup` protects it from.
    let mut sighup = if signal_ignored(libc::SIGHUP) {
        None
    } else {
        Some(signal(SignalKind::hangup())?)
    };
    let deadline = duration.map(|d| tokio::time::Instant::now() + d);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let started = Instant::now();
    let mut last_report = Instant::now();
    let mut progress = super::progress::StderrProgress::new("listing", "listed");
    let mut conn_log = ConnLog::default();
    let why = loop {
        tokio::select! {
            biased;
            _ = sigterm.recv() => break "SIGTERM",
            _ = sigint.recv() => break "SIGINT",
            _ = async {
                match sighup.as_mut() {
                    Some(s) => s.recv().await,
                    None => std::future::pending().await,
                }
            } => break "SIGHUP",
            _ = sleep_until(deadline) => break "--duration reached",
            st = rx.recv() => {
                let Some(st) = st else { break "the sources ended" };
                let applied = session.apply(&st);
                rec.record_applied(&st, &applied);
                conn_log.observe(&st);
                let mut n = 1;
                while n < 10_000 {
                    match rx.try_recv() {
                        Ok(st) => {
                            let applied = session.apply(&st);
                            rec.record_applied(&st, &applied);
                            conn_log.observe(&st);
                            n += 1;
                        }
                        Err(_) => break,
                    }
                }
                progress.update(session.replica.list_progress());
                if let Some(msg) = memory.over(&mut session) {
                    eprintln!("regscope record: {msg} The recording is closed.");
                    drop(sources);
                    let _ = rec.finish();
                    return Ok(ExitCode::from(2));
                }
                rec.maintain(Some(&mut session));
            }
            _ = tick.tick() => {
                rec.maintain(Some(&mut session));
                if let Some(note) = rec.take_note() {
                    eprintln!("regscope record: {note}");
                }
                if let Some(msg) = memory.over(&mut session) {
                    eprintln!("regscope record: {msg} The recording is closed.");
                    drop(sources);
                    let _ = rec.finish();
                    return Ok(ExitCode::from(2));
                }
                if last_report.elapsed() >= Duration::from_secs(60) {
                    last_report = Instant::now();
                    eprintln!(
                        "regscope record: {} observations, {} bytes, revision {}, {} s",
                        rec.records(),
                        rec.bytes_written(),
                        session.revision(),
                        started.elapsed().as_secs()
                    );
                }
            }
        }
        if let Some(s) = rec.stopped() {
            if !s.starts_with("stopped at") {
                eprintln!("regscope record: {s}");
                drop(sources);
                let _ = rec.finish();
                return Ok(ExitCode::from(2));
            }
            break "--max-size reached";
        }
    };
    drop(sources);
    // What the sources sent before they stopped is part of the session.
    while let Ok(st) = rx.try_recv() {
        let applied = session.apply(&st);
        rec.record_applied(&st, &applied);
    }
    let path = rec.path();
    let records = rec.records();
    let files = rec.files();
    match rec.finish() {
        Ok(bytes) => {
            let to = match &set {
                Some(base) => format!(
                    "the set {} ({files} file(s) kept, newest {})",
                    base.display(),
                    path.display()
                ),
                None => path.display().to_string(),
            };
            eprintln!(
                "regscope record: {why}: wrote {records} observations to {to} ({bytes} bytes on disk), revision {}",
                session.revision()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("regscope record: {e}");
            Ok(ExitCode::from(2))
        }
    }
}

async fn sleep_until(t: Option<tokio::time::Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// Whether `sig` is ignored in this process now (as `nohup` leaves SIGHUP for the program
/// it starts: ignored dispositions survive exec(2), signal(7)). Asks sigaction(2) without
/// changing anything.
fn signal_ignored(sig: libc::c_int) -> bool {
    // SAFETY: a zeroed sigaction is a valid value to be written into; with a null new
    // action, sigaction(2) only reads the current disposition into `old`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}
