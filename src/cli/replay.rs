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
    use std::io::IsTerminal;
    if let Err(code) = files_exist(&r.file) {
        return Ok(code);
    }
    let opts = ui_options(ui)?;
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
