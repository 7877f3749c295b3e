//! The full-screen console (ratatui + crossterm on tokio).
//!
//! Data enters as [`Stamped`] observations on a channel and is applied to the replica the
//! [`App`] owns; keys enter from crossterm's event stream and become named [`Action`]s
//! through the [`Keymap`]. One loop ([`run`]) selects over the channel (draining everything
//! pending as one batch), terminal events, signals and a 1 s clock tick, and draws at most
//! once per [`FRAME_BUDGET`], only when something visible changed: an idle console does not
//! redraw. Drawing ([`views`]) reads `&App` only.
//!
//! Split by concern: [`action`] (names), [`keymap`] and [`theme`] (configuration as data),
//! `app` (state and update), [`views`] (drawing), `terminal` (setup/restore, panic hook),
//! `browse` (virtualized key queries).

pub mod action;
mod app;
mod browse;
mod detail;
pub mod diff;
mod format;
pub mod keymap;
pub mod storage;
mod syntax;
mod terminal;
pub mod theme;
pub mod views;

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use futures::StreamExt;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc::error::TryRecvError;

pub use action::Action;
pub use app::{App, Panel, Section, Settings};
pub use keymap::{KeyChord, Keymap, Mode};
pub use theme::{ColorDepth, Role, Theme};

use crate::model::Stamped;
use crate::store::Replica;

/// Minimum time between two frames (at most 20 frames per second).
pub const FRAME_BUDGET: Duration = Duration::from_millis(50);

/// Most observations applied in one batch before the loop lets input and drawing in.
const MAX_BATCH: usize = 50_000;

/// Options for [`run`], filled from the command line by `main`.
#[derive(Clone, Debug, Default)]
pub struct UiOptions {
    /// A keymap file overriding `keymaps/default.toml` (`--keymap`).
    pub keymap_path: Option<PathBuf>,
    /// A theme file overriding `themes/default.toml` (`--theme`).
    pub theme_path: Option<PathBuf>,
    /// Shown in the header: the endpoint, or `demo`.
    pub title: String,
    /// Show Secret data in decoded values instead of redacting it.
    pub show_secrets: bool,
    /// Warnings found by the caller (flags, discovery), shown with the config warnings.
    pub warnings: Vec<String>,
    /// Encryption keys for values encrypted at rest (`--encryption-config`).
    pub keyring: Option<std::sync::Arc<crate::decrypt::Keyring>>,
    /// Scrape targets with a source (URL, kubeconfig, endpoint or files), shown as
    /// configured before their first scrape arrives.
    pub scrape_targets: Vec<(crate::model::ScrapeTarget, String)>,
}

/// Builds the app settings from `opts`: loads keymap and theme (defaults plus overrides),
/// collecting every warning; never fails.
pub fn settings(opts: &UiOptions) -> Settings {
    let (keymap, mut warnings) = Keymap::load(opts.keymap_path.as_deref());
    let (theme, tw) = Theme::load(opts.theme_path.as_deref());
    warnings.extend(tw);
    let mut all = opts.warnings.clone();
    all.extend(warnings);
    Settings {
        title: opts.title.clone(),
        show_secrets: opts.show_secrets,
        keyring: opts.keyring.clone(),
        keymap,
        theme,
        warnings: all,
        utc_offset: format::local_utc_offset(),
    }
}

/// Runs the console until the user quits or SIGTERM/SIGHUP/SIGINT arrives.
///
/// Sets up the terminal (raw mode, alternate screen) and restores it exactly once on every
/// way out: quit, a signal, an error returned from here (drop guard) or a panic (chained
/// hook; the panic message then prints on the main screen, BR-12). With
/// `REGSCOPE_DEBUG_PANIC=1` the first draw panics, to test exactly that. When `rx` closes
/// the header says "source ended" and the console stays usable.
///
/// Errors: terminal I/O failures (e.g. stdout closed) and signal registration failures.
/// How the console ended, for the process exit code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// The user quit (or the terminal input ended).
    Quit,
    /// A signal ended it (SIGTERM, SIGHUP or SIGINT; the number).
    Signal(i32),
    /// The user quit after the source had failed for good (e.g. authentication refused);
    /// the error, one line.
    SourceFailed(String),
}

pub async fn run(
    mut rx: tokio::sync::mpsc::Receiver<Stamped>,
    replica: Replica,
    opts: UiOptions,
) -> anyhow::Result<Exit> {
    let mut app = App::new(replica, settings(&opts));
    for (t, src) in &opts.scrape_targets {
        app.set_scrape_configured(*t, src);
    }
    app.set_debug_panic(std::env::var("REGSCOPE_DEBUG_PANIC").is_ok_and(|v| v == "1"));

    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigcont = signal(SignalKind::from_raw(libc::SIGCONT))?;
    let mut guard = terminal::TerminalGuard::setup()?;
    let mut input = crossterm::event::EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_draw: Option<Instant> = None;
    let mut source_open = true;
    let mut exit = Exit::Quit;

    loop {
        if app.should_quit() {
            break;
        }
        let due = last_draw.map_or(Instant::now(), |t| t + FRAME_BUDGET);
        if app.needs_draw() && Instant::now() >= due {
            if app.take_clear_request() {
                // Best effort: ratatui's clear asks the terminal for the cursor position,
                // which can time out while input is streaming (two quick Ctrl-L); a failed
                // clear must not end the session.
                let _ = guard.terminal().clear();
            }
            guard.terminal().draw(|f| views::draw(&app, f))?;
            app.mark_drawn();
            last_draw = Some(Instant::now());
            continue;
        }
        let wait_frame = app.needs_draw();
        tokio::select! {
            biased;
            _ = sigterm.recv() => { exit = Exit::Signal(libc::SIGTERM); break }
            _ = sighup.recv() => { exit = Exit::Signal(libc::SIGHUP); break }
            _ = sigint.recv() => { exit = Exit::Signal(libc::SIGINT); break }
            _ = sigcont.recv() => {
                let _ = guard.resume();
                app.mark_dirty();
            }
            ev = input.next() => match ev {
                Some(Ok(ev)) => app.on_event(&ev),
                Some(Err(e)) => return Err(e.into()),
                None => break,
            },
            msg = rx.recv(), if source_open => match msg {
                Some(first) => {
                    app.ingest(&first);
                    let mut n = 1;
                    while n < MAX_BATCH {
                        match rx.try_recv() {
                            Ok(st) => {
                                app.ingest(&st);
                                n += 1;
                            }
                            Err(TryRecvError::Empty) => break,
                            Err(TryRecvError::Disconnected) => {
                                source_open = false;
                                app.set_source_ended();
                                break;
                            }
                        }
                    }
                    app.after_batch();
                    app.set_now(SystemTime::now());
                }
                None => {
                    source_open = false;
                    app.set_source_ended();
                }
            },
            _ = tick.tick() => app.set_now(SystemTime::now()),
            _ = tokio::time::sleep_until(due.into()), if wait_frame => {}
        }
    }
    drop(guard);
    if exit == Exit::Quit {
        if let crate::model::ConnState::Failed { error } = app.replica.conn() {
            exit = Exit::SourceFailed(error.clone());
        }
    }
    Ok(exit)
}
