//! `record` (headless), `replay` (the console over a recording), `replay --check`,
//! `export` and `snapshot --from`: the subcommands of recordings. They use the same
//! [`Session`] and derivation as the live console; only the source differs.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Result;
use serde_json::{json, Value};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

use super::args::{ExportArgs, RecordArgs, ReplayArgs, SnapshotArgs, UiArgs};
use super::out;
use crate::config::Zone;
use crate::model::{escape_bytes, Bytes, KeyPath, KeyValue, Observation, ScrapeOutcome, Stamped};
use crate::record::seek::{parse_seek, parse_seek_from, SeekTo};
use crate::record::{Player, RecordOptions, Recorder, Target};
use crate::source::ScrapeConfig;
use crate::store::Session;

/// Parses `--at`/`--from`/`--to` against a recording: `+D` from its start, `-D` from its
/// end, `rN` (or a number) a revision, `start` or `end`, otherwise a time (RFC 3339, or
/// `HH:MM[:SS[.fff]]` on the recording's first day, each in `zone` unless it names its
/// own; see [`parse_seek`]).
///
/// Errors: one line naming the flag and what it accepts.
pub fn parse_at(flag: &str, text: &str, player: &Player, zone: Zone) -> Result<Target, String> {
    let (start, end) = player.span();
    let t = text.trim();
    let anchor = if t.starts_with('+') { start } else { end };
    let ts = |t: SystemTime| zone.rfc3339_millis(t);
    let span = || format!("the recording spans {} .. {}", ts(start), ts(end));
    // A time without a zone is read in the zone times are shown in (at the recording's
    // start: its daylight saving time, not today's).
    let offset = zone.offset_at(start);
    // A range starts at the start of the moment named; `--at` and `--to` take all of it.
    let parse = if flag == "--from" {
        parse_seek_from
    } else {
        parse_seek
    };
    let target = match parse(t, if t.contains(':') { start } else { anchor }, offset) {
        Ok(SeekTo::Relative(s)) => {
            let d = Duration::from_secs(s.unsigned_abs());
            // By the text's sign: `-0s` is the end, as every `-D` counts from it.
            Target::Time(if t.starts_with('-') {
                end.checked_sub(d).unwrap_or(start)
            } else {
                start + d
            })
        }
        Ok(SeekTo::Time(at)) => Target::Time(at),
        Ok(SeekTo::Revision(r)) => Target::Revision(r),
        Ok(SeekTo::Start) => Target::Time(start),
        Ok(SeekTo::End) => Target::End,
        Err(e) => return Err(format!("{flag}: {}", e.trim_start_matches("seek: "))),
    };
    // Outside the recording is a mistake to say, not a moment to guess.
    match target {
        Target::Time(at) if !player.holds_time(at) => Err(format!(
            "{flag} {t}: {} is outside the recording ({})",
            ts(at),
            span()
        )),
        Target::Revision(r) if r <= 0 => Err(format!(
            "{flag} {t}: a revision is a positive number (etcd's first is 1)"
        )),
        Target::Revision(r) if player.first_revision().is_some_and(|first| r < first) => {
            Err(format!(
                "{flag} {t}: revision {r} is before the recording's first ({})",
                player.first_revision().unwrap_or(0)
            ))
        }
        Target::Revision(r) if player.last_revision().is_some_and(|last| r > last) => Err(format!(
            "{flag} {t}: revision {r} is after the recording's last ({})",
            player.last_revision().unwrap_or(0)
        )),
        t => Ok(t),
    }
}

fn open(path: &Path) -> Result<Player, ExitCode> {
    Player::open(path).map_err(|e| {
        eprintln!("regscope: {e}");
        ExitCode::from(2)
    })
}

/// `regscope record -o FILE`: the live sources into a file until `--duration`, SIGTERM,
/// SIGINT, SIGHUP or `--max-size`; no terminal needed. Exit 0 when the file was closed
/// cleanly, 2 when the sources or the file could not be set up.
pub async fn record(r: &RecordArgs, scfg: &ScrapeConfig, show_secrets: bool) -> Result<ExitCode> {
    let (source, cluster_id, info) = match super::connect_session(&r.conn).await {
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
/// [`record`].
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
    let sources = match super::start_live(source, scfg, tx, &mut info).await {
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
                session.apply(&st);
                rec.record_applied(&st, &mut session);
                conn_log.observe(&st);
                let mut n = 1;
                while n < 10_000 {
                    match rx.try_recv() {
                        Ok(st) => {
                            session.apply(&st);
                            rec.record_applied(&st, &mut session);
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
        session.apply(&st);
        rec.record_applied(&st, &mut session);
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

/// `regscope replay FILE`: the console over a recording, paused at its start (or at
/// `--at`).
pub async fn replay(r: &ReplayArgs, opts: crate::tui::UiOptions) -> Result<ExitCode> {
    use std::io::IsTerminal;
    // The file first: a missing or damaged file is the error to report, terminal or not.
    let mut player = match open(&r.file) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        eprintln!(
            "regscope: replay opens the console and needs a terminal; for scripts use `replay --check`, `export` or `snapshot --json --from`"
        );
        return Ok(ExitCode::from(2));
    }
    let at = match r
        .at
        .as_deref()
        .map(|a| parse_at("--at", a, &player, opts.zone))
    {
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => {
            eprintln!("regscope: {e}");
            return Ok(ExitCode::from(2));
        }
        None => None,
    };
    let mut opts = opts;
    if !player.header().secrets_redacted {
        opts.warnings.push(
            "this recording was made with --show-secrets: it holds Secret data in the clear".into(),
        );
    } else if opts.show_secrets {
        // The file holds placeholders of the right length, not the data: shown decoded
        // they would pass for real values. As `export --decode`, they stay
        // `<redacted: N bytes>`.
        opts.show_secrets = false;
        opts.warnings.push(
            "--show-secrets: this recording was made without it, its Secret data is redacted; shown as <redacted: N bytes>".into(),
        );
    }
    let session = player.seek(Target::Position(0));
    let feed = crate::tui::Feed::Replay {
        player: Box::new(player),
        file: r.file.display().to_string(),
        at,
        p99_threshold: r.p99_threshold,
        lag_threshold: r.lag_threshold,
    };
    match crate::tui::run(feed, session, opts).await? {
        crate::tui::Exit::Signal(n) => Ok(ExitCode::from(u8::try_from(128 + n).unwrap_or(1))),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// `regscope replay --check FILE`: reads every frame, verifies checksums, prints the span,
/// counts and damage. Exit 0 when whole, 1 when damaged, 2 when not a recording.
pub fn check(path: &Path, p99_threshold: f64, lag_threshold: f64, zone: Zone) -> Result<ExitCode> {
    let player = match open(path) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let report = crate::record::check(player, p99_threshold, lag_threshold);
    // In the zone times are shown in, with its offset: pasted into any input, the same
    // moment (see `crate::config::zone`).
    let ts = |t: Option<SystemTime>| t.map_or("-".to_string(), |t| zone.rfc3339_millis(t));
    out(format_args!(
        "{}\n  span       {} .. {}\n  revisions  {} .. {}\n  observations {}\n  secrets    {}\n",
        report.files.join(", "),
        ts(report.start),
        ts(report.end),
        report.first_revision.map_or("-".into(), |r| r.to_string()),
        report.last_revision.map_or("-".into(), |r| r.to_string()),
        counts(&report),
        if report.secrets_redacted {
            "redacted"
        } else {
            "INCLUDED (recorded with --show-secrets)"
        },
    ));
    for n in &report.notes {
        out(format_args!("  note       {n}\n"));
    }
    for m in &report.markers {
        out(format_args!(
            "  marker     {}  {}\n",
            ts(Some(m.at)),
            m.label
        ));
    }
    if report.damage.is_empty() {
        out(format_args!("  damage     none\n"));
        Ok(ExitCode::SUCCESS)
    } else {
        for d in &report.damage {
            out(format_args!("  damage     {d}\n"));
        }
        Ok(ExitCode::from(1))
    }
}

/// `replay --check`'s counts: observations (scrapes) in segments, checkpoints, bytes.
fn counts(r: &crate::record::ReplayReport) -> String {
    let s = |n: u64| if n == 1 { "" } else { "s" };
    format!(
        "{} ({} scrape{}; {} records with the scrape digests, as the timeline counts) in {} segment{}, {} checkpoint{}, {} bytes",
        r.observations,
        r.scrapes,
        s(r.scrapes),
        r.records,
        r.segments,
        s(r.segments),
        r.checkpoints,
        s(r.checkpoints),
        r.bytes
    )
}

/// `regscope snapshot --json --from FILE [--at T]`: the summary `snapshot --json` prints
/// live, for that moment of the recording.
pub fn snapshot_from(s: &SnapshotArgs, zone: Zone) -> Result<ExitCode> {
    let Some(path) = s.from.as_deref() else {
        return Ok(ExitCode::from(2));
    };
    let mut player = match open(path) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let target = match s.at.as_deref().map(|a| parse_at("--at", a, &player, zone)) {
        Some(Ok(t)) => t,
        Some(Err(e)) => {
            eprintln!("regscope: {e}");
            return Ok(ExitCode::from(2));
        }
        None => Target::End,
    };
    // The summary is the session's: scrape bodies whose digest is recorded stay compressed.
    player.set_bodies(false);
    // Damage anywhere in the file makes the answer suspect, not only on the seek's way.
    player.verify(false);
    let session = player.seek(target);
    for d in player.damage() {
        eprintln!("regscope: damaged recording: {d}");
    }
    if let Some(line) = player.short_of(&session, target) {
        eprintln!("regscope: --at {}: {line}", s.at.as_deref().unwrap_or(""));
    }
    let mut v: serde_json::Value = serde_json::from_str(&snapshot_of(&session, s.keys)?)?;
    // A damaged file replays what it still holds; the summary says it is incomplete.
    v["recording_damage"] = json!(player.damage());
    out(format_args!("{}\n", serde_json::to_string_pretty(&v)?));
    Ok(if player.damage().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The `snapshot --json` text of a session (the replica and the apiserver side derived at
/// the session's clock).
pub fn snapshot_of(session: &Session, keys: bool) -> Result<String> {
    let view = crate::derive::apiserver::view(
        &session.metrics,
        Some(&session.replica),
        &session.informers,
        session.now(),
    );
    super::snapshot_json(Some(&session.replica), keys, Some(&view), Some(session))
}

fn time_text(t: SystemTime) -> String {
    humantime::format_rfc3339_nanos(t).to_string()
}

/// `regscope export FILE --format jsonl`: one JSON object per observation (list items and
/// watch events one per key), in recorded order.
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

pub fn export(e: &ExportArgs, ui: &UiArgs) -> Result<ExitCode> {
    let mut player = match open(&e.file) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let parse = |flag: &str, v: &Option<String>, player: &Player| match v.as_deref() {
        Some(t) => parse_at(flag, t, player, ui.zone()).map(Some),
        None => Ok(None),
    };
    let (from, to) = match (
        parse("--from", &e.from, &player),
        parse("--to", &e.to, &player),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(m), _) | (_, Err(m)) => {
            eprintln!("regscope: {m}");
            return Ok(ExitCode::from(2));
        }
    };
    let reversed = match (from, to) {
        (Some(Target::Time(a)), Some(Target::Time(b))) => a > b,
        (Some(Target::Revision(a)), Some(Target::Revision(b))) => a > b,
        _ => false,
    };
    if reversed {
        eprintln!(
            "regscope: --from {} is after --to {}: nothing to export",
            e.from.as_deref().unwrap_or(""),
            e.to.as_deref().unwrap_or("")
        );
        return Ok(ExitCode::from(2));
    }
    let keyring = match crate::cli::load_keyring(ui) {
        Ok((k, _)) => k,
        Err(err) => {
            eprintln!("regscope: {err:#}");
            return Ok(ExitCode::from(2));
        }
    };
    let show_secrets = ui.show_secrets && !player.header().secrets_redacted;
    if ui.show_secrets && !show_secrets {
        eprintln!(
            "regscope export: --show-secrets: this recording was made without it, its Secret data is redacted; written as <redacted: N bytes>"
        );
    }
    let prefix = player.header().info.prefix.clone();
    // Checkpoints after the first are not on an export's way: check them too.
    player.verify(false);
    let mut session = player.seek(from.unwrap_or(Target::Position(0)));
    // A time and a revision are compared where --from lands.
    let past_to = match (from, to) {
        (Some(Target::Revision(_)), Some(Target::Time(b))) => session.now() > b,
        (Some(Target::Time(_)), Some(Target::Revision(b))) => session.revision() > b,
        _ => false,
    };
    if past_to {
        eprintln!(
            "regscope: --from {} is at {} (revision {}), after --to {}: nothing to export",
            e.from.as_deref().unwrap_or(""),
            time_text(session.now()),
            session.revision(),
            e.to.as_deref().unwrap_or("")
        );
        return Ok(ExitCode::from(2));
    }
    // The keys where the export starts are walked in key order.
    session.settle();
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let mut broken = false;
    let key_filter = e.prefix.clone();
    if let Some(p) = key_filter.as_deref().filter(|p| !p.starts_with('/')) {
        // Compared byte for byte with the keys, which all start with '/'.
        let root = prefix.trim_end_matches('/');
        let meant = if format!("/{p}").starts_with(root) {
            format!("/{p}")
        } else {
            format!("{root}/{p}")
        };
        eprintln!(
            "regscope export: --prefix {p} matches no key: keys start with '/' (e.g. {meant})"
        );
    }
    let form = ExportLines {
        prefix: &prefix,
        key_filter: key_filter.as_deref(),
        e,
        keyring: keyring.as_ref(),
        show_secrets,
    };
    // Key lines written (listed keys and events) that the prefix kept.
    let mut key_lines = 0u64;
    // For the closing summary: lines are not observations (one line per event and per
    // listed key, none for a clock tick), so the counts are said side by side.
    let (mut lines_written, mut observations, mut ticks) = (0u64, 0u64, 0u64);
    // A recording starts with a checkpoint (a recording begun mid-session holds no list):
    // the live keys where the export starts come first, as `list_item`s marked
    // `"from": "start"`.
    {
        use std::io::Write;
        let at = time_text(session.now());
        let prefix_bytes = key_filter.clone().unwrap_or_default().into_bytes();
        let mut after: Option<Bytes> = None;
        'keys: loop {
            let chunk = session
                .replica
                .live_keys_after(&prefix_bytes, after.as_deref(), 1024);
            let Some(last) = chunk.last().cloned() else {
                break;
            };
            for key in chunk {
                let Some(v) = session.replica.get(&key) else {
                    continue;
                };
                let kv = KeyValue {
                    key,
                    create_revision: v.create_revision,
                    mod_revision: v.mod_revision,
                    version: v.version,
                    lease: v.lease,
                    value: v.value.unwrap_or_default(),
                };
                let mut line = kv_json("list_item", None, &kv, &form);
                line["from"] = json!("start");
                line["at"] = json!(at);
                if let Err(e) = writeln!(stdout, "{line}") {
                    crate::cli::stdout_error(&e);
                    broken = true;
                    break 'keys;
                }
                lines_written += 1;
                key_lines += 1;
            }
            after = Some(last);
        }
    }
    player.advance(&mut session, Target::End, u64::MAX, |s, st, _| {
        if broken {
            return;
        }
        if let Some(Target::Time(t)) = to {
            if st.at > t {
                return;
            }
        }
        if let Some(Target::Revision(r)) = to {
            if s.revision() > r {
                return;
            }
        }
        observations += 1;
        if matches!(st.obs, Observation::Tick) {
            ticks += 1;
        }
        if let Some(p) = key_filter.as_deref() {
            let kvs: Box<dyn Iterator<Item = &KeyValue>> = match &st.obs {
                Observation::ListPage { kvs } => Box::new(kvs.iter()),
                Observation::Events { events, .. } => Box::new(events.iter().map(|e| &e.kv)),
                _ => Box::new(std::iter::empty()),
            };
            key_lines += kvs.filter(|kv| kv.key.starts_with(p.as_bytes())).count() as u64;
        }
        let lines = export_lines(st, s, &form);
        use std::io::Write;
        for l in lines {
            if let Err(e) = writeln!(stdout, "{l}") {
                crate::cli::stdout_error(&e);
                broken = true;
                return;
            }
            lines_written += 1;
        }
    });
    use std::io::Write;
    if let Err(e) = stdout.flush() {
        crate::cli::stdout_error(&e);
        broken = true;
    }
    if !broken {
        eprintln!(
            "regscope: {}",
            export_summary(lines_written, observations, ticks)
        );
        if let Some(p) = key_filter.as_deref().filter(|_| key_lines == 0) {
            eprintln!(
                "regscope export: --prefix {p} matched no key (listed or written) in what was exported"
            );
        }
    }
    for d in player.damage() {
        eprintln!("regscope: damaged recording: {d}");
    }
    Ok(if player.damage().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The line `export` ends with on stderr: what it wrote against what it read, so that the
/// count of lines (one per event and per listed key) is not mistaken for the count of
/// observations `replay --check` prints.
fn export_summary(lines: u64, observations: u64, ticks: u64) -> String {
    let s = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    format!(
        "exported {} for {} read (a line per event and per listed key; none for the {})",
        s(lines, "line", "lines"),
        s(observations, "observation", "observations"),
        s(ticks, "clock tick", "clock ticks"),
    )
}

/// What every export line depends on besides the observation: the recording's prefix,
/// `--prefix`, the flags, the keys to decrypt with and whether Secrets show.
struct ExportLines<'a> {
    prefix: &'a str,
    key_filter: Option<&'a str>,
    e: &'a ExportArgs,
    keyring: Option<&'a crate::decrypt::Keyring>,
    show_secrets: bool,
}

fn kv_json(kind: &str, op: Option<&str>, kv: &KeyValue, x: &ExportLines<'_>) -> Value {
    let ExportLines {
        prefix,
        e,
        keyring,
        show_secrets,
        ..
    } = *x;
    let path = KeyPath::parse(prefix.as_bytes(), &kv.key);
    let mut v = json!({
        "type": kind,
        "key": escape_bytes(&kv.key),
        "resource": path.resource,
        "create_revision": kv.create_revision,
        "mod_revision": kv.mod_revision,
        "version": kv.version,
        "lease": kv.lease,
        "size": kv.value.len(),
    });
    if let Some(op) = op {
        v["op"] = json!(op);
    }
    if e.decode && !kv.value.is_empty() {
        let d = crate::decode::decode(
            &kv.value,
            &crate::decode::DecodeOptions {
                show_secrets,
                etcd_key: &kv.key,
                mod_revision: Some(kv.mod_revision),
                keyring,
                candidates: &[],
            },
        );
        let secret = path.resource == "secrets";
        v["object"] = match d.value() {
            Some(obj) if !(secret && !show_secrets && !d.summary.is_secret()) => obj,
            _ => Value::Null,
        };
        if let Some(err) = &d.error {
            v["decode_error"] = json!(err);
        }
    }
    v
}

fn export_lines(st: &Stamped, s: &Session, x: &ExportLines<'_>) -> Vec<String> {
    let key_filter = x.key_filter;
    let mut lines = export_observation(st, s, x);
    // After a gap, the rows the replica synthesized from the relist that closed it (what
    // changed in revisions never seen one by one), as events marked synthesized.
    if let Observation::ListDone {
        revision,
        compacted: Some(_),
    } = &st.obs
    {
        for ev in s.replica.events().iter().filter(|ev| {
            ev.unseen.is_some_and(|u| u.to == *revision)
                && key_filter.is_none_or(|p| ev.key.starts_with(p.as_bytes()))
        }) {
            let Some(u) = ev.unseen else { continue };
            // A delete's last copy is the version before the tombstone.
            let history = s.replica.history(&ev.key);
            let held = match ev.kind {
                crate::model::EventKind::Put => {
                    history.iter().rev().find(|v| v.mod_revision == ev.revision)
                }
                crate::model::EventKind::Delete => history
                    .iter()
                    .rev()
                    .find(|v| v.value.is_some() && v.mod_revision < u.from),
            };
            let kv = KeyValue {
                key: ev.key.clone(),
                create_revision: held.map_or(0, |v| v.create_revision),
                mod_revision: ev.revision,
                version: held.map_or(0, |v| v.version),
                lease: held.map_or(0, |v| v.lease),
                value: ev.value.clone(),
            };
            let op = ev.kind.name();
            let mut line = kv_json("event", Some(op), &kv, x);
            line["synthesized"] = json!(true);
            line["writer"] = json!(ev.writer());
            line["unseen"] = json!({"from": u.from, "to": u.to, "change": u.change.label()});
            if ev.kind == crate::model::EventKind::Delete {
                // Deleted somewhere in the gap: etcd's deleting revision is unknown (null;
                // `unseen` gives the gap), and the value (its size, its object) is the last
                // copy held before the gap.
                line["mod_revision"] = Value::Null;
                line["value_is_last_copy"] = json!(true);
                line["last_mod_revision"] = json!(held.map(|v| v.mod_revision));
            }
            line["at"] = json!(time_text(st.at));
            lines.push(line.to_string());
        }
    }
    lines
}

/// The lines of one observation as the recording holds it.
fn export_observation(st: &Stamped, s: &Session, x: &ExportLines<'_>) -> Vec<String> {
    let (key_filter, e) = (x.key_filter, x.e);
    let at = time_text(st.at);
    let keep = |kv: &KeyValue| key_filter.is_none_or(|p| kv.key.starts_with(p.as_bytes()));
    let with_at = |mut v: Value| {
        v["at"] = json!(at);
        v.to_string()
    };
    match &st.obs {
        Observation::ListPage { kvs } => kvs
            .iter()
            .filter(|kv| keep(kv))
            .map(|kv| with_at(kv_json("list_item", None, kv, x)))
            .collect(),
        Observation::Events { events, .. } => events
            .iter()
            .filter(|ev| keep(&ev.kv))
            .map(|ev| {
                let op = ev.kind.name();
                let mut line = kv_json("event", Some(op), &ev.kv, x);
                // Who made it, as the console names it (the event as the replica logged
                // it, just applied): a manager only when the write changed managedFields.
                if let Some(logged) = s.replica.events().iter().rev().take(4096).find(|l| {
                    l.unseen.is_none() && l.revision == ev.kv.mod_revision && l.key == ev.kv.key
                }) {
                    line["writer"] = json!(logged.writer());
                }
                with_at(line)
            })
            .collect(),
        _ if e.only_keys => Vec::new(),
        Observation::Tick => Vec::new(),
        Observation::Scrape { target, outcome } => {
            let mut v = json!({"type": "scrape", "target": target.label()});
            match outcome {
                ScrapeOutcome::Body { source, body } => {
                    let expo = crate::metrics::exposition::parse(body);
                    v["source"] = json!(source);
                    v["bytes"] = json!(body.len());
                    v["skipped_lines"] = json!(expo.skipped.len());
                    v["samples"] = Value::Array(
                        expo.samples
                            .iter()
                            .map(|s| {
                                let labels: serde_json::Map<String, Value> = s
                                    .labels
                                    .iter()
                                    .map(|(k, v)| (k.clone(), json!(v)))
                                    .collect();
                                json!({"name": s.name, "labels": labels, "value": sample_value(s.value)})
                            })
                            .collect(),
                    );
                }
                ScrapeOutcome::Failed { source, error } => {
                    v["source"] = json!(source);
                    v["error"] = json!(error);
                }
            }
            vec![with_at(v)]
        }
        obs => {
            let mut v = serde_json::to_value(obs).unwrap_or(Value::Null);
            // Externally tagged enums: {"Variant": {...}} or "Variant".
            let body = match &mut v {
                Value::Object(m) if m.len() == 1 => {
                    m.values().next().cloned().unwrap_or(Value::Null)
                }
                _ => Value::Null,
            };
            let mut line = match body {
                Value::Object(m) => Value::Object(m),
                Value::Null => json!({}),
                other => json!({"value": other}),
            };
            line["type"] = json!(obs.kind_name());
            vec![with_at(line)]
        }
    }
}

/// A sample value as JSON: a number, or `"NaN"`, `"+Inf"`, `"-Inf"` (not JSON numbers).
fn sample_value(v: f64) -> Value {
    if v.is_nan() {
        json!("NaN")
    } else if v == f64::INFINITY {
        json!("+Inf")
    } else if v == f64::NEG_INFINITY {
        json!("-Inf")
    } else {
        json!(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_summary_sets_lines_beside_observations() {
        assert_eq!(
            export_summary(5989, 6038, 91),
            "exported 5989 lines for 6038 observations read (a line per event and per listed key; none for the 91 clock ticks)"
        );
        assert_eq!(
            export_summary(1, 1, 1),
            "exported 1 line for 1 observation read (a line per event and per listed key; none for the 1 clock tick)"
        );
    }

    #[test]
    fn check_counts_say_one_in_the_singular() {
        let mut r = crate::record::ReplayReport {
            observations: 120,
            records: 121,
            scrapes: 1,
            segments: 1,
            checkpoints: 1,
            bytes: 4096,
            ..Default::default()
        };
        assert_eq!(
            counts(&r),
            "120 (1 scrape; 121 records with the scrape digests, as the timeline counts) in 1 segment, 1 checkpoint, 4096 bytes"
        );
        (r.scrapes, r.segments, r.checkpoints) = (0, 3, 2);
        assert_eq!(
            counts(&r),
            "120 (0 scrapes; 121 records with the scrape digests, as the timeline counts) in 3 segments, 2 checkpoints, 4096 bytes"
        );
    }
}
