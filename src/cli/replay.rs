//! `regscope replay FILE`: the console over a recording, with its timeline (play, pause,
//! speed, step, seek, markers). The recording replaces the live sources and nothing else
//! ([`crate::tui::Feed::Replay`]).

use std::process::ExitCode;

use anyhow::Result;

use super::args::{ReplayArgs, UiArgs};
use super::options::ui_options;
use super::recording::{files_exist, open, parse_at};
use crate::record::Target;

/// `regscope replay FILE`: the console over a recording, paused at its start (or at
/// `--at`).
pub async fn run(r: &ReplayArgs, ui: &UiArgs) -> Result<ExitCode> {
    if super::db_file::is_db_file(&r.file) {
        return run_db(r, ui).await;
    }
    if let Err(code) = files_exist(&r.file) {
        return Ok(code);
    }
    let opts = ui_options(ui)?;
    // The file first: a missing or damaged file is the error to report, terminal or not.
    let player = match open(&r.file) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    if let Some(code) = needs_terminal() {
        return Ok(code);
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
    console(player, r.file.display().to_string(), at, r, opts).await
}

/// Without a terminal on both ends, the exit code to return after saying so.
fn needs_terminal() -> Option<ExitCode> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        eprintln!(
            "regscope: replay opens the console and needs a terminal; for scripts use `replay --check`, `export` or `snapshot --json --from`"
        );
        return Some(ExitCode::from(2));
    }
    None
}

/// `regscope replay DB` for etcd's own db file: its retained history written as a
/// recording in a temporary directory (removed when the console closes), then the console
/// over that, paused at the file's finished compaction (or at `--at`, a revision).
async fn run_db(r: &ReplayArgs, ui: &UiArgs) -> Result<ExitCode> {
    use super::db_file;
    let db = match db_file::open(&r.file) {
        Ok(d) => d,
        Err(code) => return Ok(code),
    };
    let at = match r
        .at
        .as_deref()
        .map(|a| db_file::parse_revision("--at", a, &db))
    {
        Some(Ok(rev)) => Some(Target::Revision(rev)),
        Some(Err(e)) => {
            eprintln!("regscope: {e}");
            return Ok(ExitCode::from(2));
        }
        None => None,
    };
    if let Some(code) = needs_terminal() {
        return Ok(code);
    }
    let mut opts = ui_options(ui)?;
    let dir = tempfile::Builder::new().prefix("regscope-db-").tempdir()?;
    let rgs = dir.path().join("history.rgs");
    let mut said = std::time::Instant::now();
    let mut printed = false;
    let written = db_file::to_recording(&db, &rgs, "/registry", opts.show_secrets, |rev, head| {
        if said.elapsed() >= std::time::Duration::from_secs(1) {
            said = std::time::Instant::now();
            printed = true;
            eprint!(
                "\rregscope: reading {}: revision {rev} of {head}",
                r.file.display()
            );
        }
    });
    if printed {
        eprintln!();
    }
    if let Err(e) = written {
        eprintln!("regscope: {e:#}");
        return Ok(ExitCode::from(2));
    }
    let player = match open(&rgs) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    opts.warnings.push(format!(
        "etcd's db file: revisions {} to {}; it keeps no times (no revision has one; the timeline names the file's modification time as such): seek by revision",
        db.compacted().max(1),
        db.head()?
    ));
    let code = console(player, r.file.display().to_string(), at, r, opts).await;
    drop(dir);
    code
}

/// The console over an open recording.
async fn console(
    player: crate::record::Player,
    file: String,
    at: Option<Target>,
    r: &ReplayArgs,
    mut opts: crate::tui::UiOptions,
) -> Result<ExitCode> {
    let mut player = player;
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
        file,
        at,
        p99_threshold: r.p99_threshold,
        lag_threshold: r.lag_threshold,
    };
    match crate::tui::run(feed, session, opts).await? {
        crate::tui::Exit::Signal(n) => Ok(ExitCode::from(u8::try_from(128 + n).unwrap_or(1))),
        _ => Ok(ExitCode::SUCCESS),
    }
}
