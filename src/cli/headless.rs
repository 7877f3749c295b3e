//! The headless session loop shared by `record`, `serve`, `demo --record` and
//! `demo --listen`: the live sources applied to a session with no terminal, written to a
//! recording and/or served to Prometheus ([`crate::exporter`]), until `--duration`, a
//! signal or `--max-size`, with a log of outages and progress on stderr.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Result;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

use crate::exporter::server::{self, Ask, Reading, ServeOptions};
use crate::model::Stamped;
use crate::record::{RecordOptions, Recorder};
use crate::source::ScrapeConfig;
use crate::store::Session;

/// Observations applied in one turn of the loop at most, and for at most this long, before
/// the loop looks at its other inputs (signals, the exporter's asks, the clock).
const BATCH: usize = 10_000;
const BATCH_TIME: Duration = Duration::from_millis(50);

/// What a headless session does besides applying: record, serve, or both.
pub struct Headless {
    /// Stderr lines start `regscope {who}:` (`record`, `serve`).
    pub who: &'static str,
    pub record: Option<RecordOptions>,
    pub serve: Option<ServeOptions>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Bytes resident: history is dropped to stay under it, and the session stops (exit 2)
    /// when that is not enough.
    pub memory_limit: Option<u64>,
}

/// One stderr line when etcd's connection is lost and when it is restored (and on each
/// failover), so that a headless recorder under nohup or systemd leaves a log of the outage.
#[derive(Default)]
struct ConnLog {
    bad: bool,
    who: &'static str,
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
                        eprintln!("regscope {}: etcd connection restored", self.who);
                        return;
                    }
                    _ => return,
                };
                if !self.bad {
                    self.bad = true;
                    eprintln!("regscope {}: {line}", self.who);
                }
            }
            // A replaced or restored etcd: the replica is rebuilt from a fresh list.
            Observation::Reset { reason } => {
                eprintln!("regscope {}: etcd replaced: {reason}", self.who);
            }
            // A gap: revisions compacted before the watch could resume.
            Observation::ListDone {
                revision,
                compacted: Some(c),
            } => {
                eprintln!(
                    "regscope {}: gap: relisted at revision {revision} after etcd compacted at {c}; the changes in between were not seen one by one (rows marked unseen in replay and export)",
                    self.who
                );
            }
            // A failover, and a prefix that holds nothing (a typo'd --prefix would
            // otherwise record an empty session without a word).
            Observation::Note(n)
                if n.starts_with("failover: ") || n.starts_with("no keys under ") =>
            {
                eprintln!("regscope {}: {n}", self.who);
            }
            _ => {}
        }
    }
}

/// Runs the live sources of a session (`source` for etcd, `scfg` for the rest) headless as
/// `h` says until its duration, a signal or `--max-size`, then closes the recording
/// cleanly. Progress goes to stderr once a minute. Exit 0 when it ended cleanly, 2 when
/// the sources, the file or the listener could not be set up, or memory ran out.
pub async fn run(
    source: crate::source::EtcdSource,
    scfg: &ScrapeConfig,
    mut info: crate::model::SessionInfo,
    cluster_id: u64,
    h: Headless,
) -> Result<ExitCode> {
    let who = h.who;
    let mut memory = super::memory::MemoryCheck::new(h.memory_limit, who);
    let duration = h.duration;
    let (ask_tx, mut ask_rx) = mpsc::channel::<Ask>(8);
    // Bound before the sources start, so a port in use fails at once.
    // Endpoints without any user:password@ they were given with (the page is served to
    // whoever can reach it).
    let endpoints: Vec<String> = info
        .endpoints
        .iter()
        .map(|e| match (e.find("://"), e.rfind('@')) {
            (Some(s), Some(at)) if at > s => format!("{}{}", &e[..s + 3], &e[at + 1..]),
            _ => e.clone(),
        })
        .collect();
    let watching = format!("etcd {} under {}", endpoints.join(","), info.prefix);
    let tls_mode = h
        .serve
        .as_ref()
        .and_then(|o| o.tls.as_ref())
        .map(|t| t.client_ca.is_some());
    let served = match h.serve {
        Some(mut opts) => {
            if opts.watching.is_empty() {
                opts.watching = watching;
            }
            match server::start(opts, ask_tx).await {
                Ok(s) => Some(s),
                Err(e) => {
                    eprintln!("regscope {who}: {e}");
                    return Ok(ExitCode::from(2));
                }
            }
        }
        None => {
            drop(ask_tx);
            None
        }
    };
    let (tx, mut rx) = mpsc::channel::<Stamped>(4096);
    let sources = match super::session::start_live(source, scfg, tx, &mut info).await {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let mut session = Session::new(info);
    let set = h
        .record
        .as_ref()
        .and_then(|o| o.keep_last.map(|_| o.path.clone()));
    let mut rec = match h.record {
        None => None,
        Some(opts) => {
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
            let rec = match Recorder::create(opts, &session, cluster_id) {
                Ok(rec) => rec,
                Err(e) => {
                    eprintln!("regscope: cannot record: {e}");
                    return Ok(ExitCode::from(2));
                }
            };
            eprintln!(
                "regscope {who}: recording to {}{}{}{limits} (SIGTERM or Ctrl-C stops)",
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
            Some(rec)
        }
    };
    if let Some(s) = &served {
        eprintln!(
            "regscope {who}: serving /metrics on {} ({}; SIGTERM or Ctrl-C stops)",
            s.local_addr(),
            match tls_mode {
                None => "plain HTTP",
                Some(false) => "HTTPS",
                Some(true) => "HTTPS, client certificates required",
            }
        );
        if tls_mode.is_none() && !s.local_addr().ip().is_loopback() {
            eprintln!(
                "regscope {who}: warning: plain HTTP on {}, which is not loopback: the signals name resources and writers; consider --tls-cert, --tls-key and --client-ca",
                s.local_addr()
            );
        }
    }
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    // Under `nohup` (SIGHUP ignored when regscope started) a hangup must not stop the
    // session: the terminal that goes away is the one `nohup` protects it from.
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
    let mut conn_log = ConnLog { bad: false, who };
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
            Some(ask) = ask_rx.recv() => match ask {
                Ask::Reading(reply) => {
                    let _ = reply.send(Reading {
                        readings: crate::derive::signals::read(&session),
                        extras: crate::exporter::exposition::Extras {
                            recording: rec.as_ref().map(|r| (r.bytes_written(), r.files() as u64)),
                        },
                        read_at: Some(Instant::now()),
                    });
                }
                Ask::Ping(reply) => {
                    let _ = reply.send(());
                }
            },
            st = rx.recv() => {
                let Some(st) = st else { break "the sources ended" };
                let t0 = Instant::now();
                let mut n = 0;
                let mut next = Some(st);
                while let Some(st) = next.take() {
                    let applied = session.apply(&st);
                    if let Some(rec) = rec.as_mut() {
                        rec.record_applied(&st, &applied);
                    }
                    conn_log.observe(&st);
                    n += 1;
                    if n < BATCH && t0.elapsed() < BATCH_TIME {
                        next = rx.try_recv().ok();
                    }
                }
                progress.update(session.replica.list_progress());
                if let Some(msg) = memory.over(&mut session) {
                    return Ok(stop_for_memory(who, &msg, sources, rec));
                }
                if let Some(rec) = rec.as_mut() {
                    rec.maintain(Some(&mut session));
                }
            }
            _ = tick.tick() => {
                if let Some(rec) = rec.as_mut() {
                    rec.maintain(Some(&mut session));
                    if let Some(note) = rec.take_note() {
                        eprintln!("regscope {who}: {note}");
                    }
                }
                if let Some(msg) = memory.over(&mut session) {
                    return Ok(stop_for_memory(who, &msg, sources, rec));
                }
                if last_report.elapsed() >= Duration::from_secs(60) {
                    last_report = Instant::now();
                    match &rec {
                        Some(rec) => eprintln!(
                            "regscope {who}: {} observations, {} bytes, revision {}, {} s",
                            rec.records(),
                            rec.bytes_written(),
                            session.revision(),
                            started.elapsed().as_secs()
                        ),
                        None => eprintln!(
                            "regscope {who}: revision {}, {} s",
                            session.revision(),
                            started.elapsed().as_secs()
                        ),
                    }
                }
            }
        }
        if let Some(s) = rec.as_ref().and_then(|r| r.stopped()) {
            if !s.starts_with("stopped at") {
                eprintln!("regscope {who}: {s}");
                drop(sources);
                if let Some(rec) = rec {
                    let _ = rec.finish();
                }
                return Ok(ExitCode::from(2));
            }
            break "--max-size reached";
        }
    };
    drop(served);
    drop(sources);
    // What the sources sent before they stopped is part of the session.
    while let Ok(st) = rx.try_recv() {
        let applied = session.apply(&st);
        if let Some(rec) = rec.as_mut() {
            rec.record_applied(&st, &applied);
        }
    }
    let Some(rec) = rec else {
        eprintln!(
            "regscope {who}: {why}: stopped at revision {}",
            session.revision()
        );
        return Ok(ExitCode::SUCCESS);
    };
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
                "regscope {who}: {why}: wrote {records} observations to {to} ({bytes} bytes on disk), revision {}",
                session.revision()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("regscope {who}: {e}");
            Ok(ExitCode::from(2))
        }
    }
}

fn stop_for_memory(who: &str, msg: &str, sources: impl Sized, rec: Option<Recorder>) -> ExitCode {
    drop(sources);
    match rec {
        Some(rec) => {
            eprintln!("regscope {who}: {msg} The recording is closed.");
            let _ = rec.finish();
        }
        None => eprintln!("regscope {who}: {msg} Stopped."),
    }
    ExitCode::from(2)
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
