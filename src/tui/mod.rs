//! The full-screen console (ratatui + crossterm on tokio).
//!
//! Data enters as [`Stamped`] observations — from the live sources' channel or from a
//! recording's player ([`Feed`]) — and is applied to the [`Session`] the [`App`] owns; keys
//! enter from crossterm's event stream and become named [`Action`]s through the
//! [`Keymap`]. One loop ([`run`]) selects over the feed (draining everything pending as one
//! batch), terminal events, signals and a 1 s tick (recorder flushes, replay markers), and
//! draws at most once per [`FRAME_BUDGET`], only when something visible changed: an idle
//! console does not redraw. Drawing ([`views`]) reads `&App` only. Live, the loop taps the
//! recorder (`R`); in replay, `replay` moves the player's cursor.
//!
//! Split by concern: [`action`] (names), [`keymap`] and [`theme`] (configuration as data),
//! `app` (the top-level dispatch of keys, clicks and observations), `state` (each panel's
//! state, one module per thing it holds), [`views`] (drawing), `terminal` (setup/restore,
//! panic hook).
//! The key browser's queries over the replica are derived data: [`crate::derive::keys`].

pub mod action;
mod app;
pub mod keymap;
mod replay;
pub mod screenshot;
mod state;
mod syntax;
mod terminal;
pub mod text;
pub mod theme;
pub mod views;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use futures::StreamExt;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc::error::TryRecvError;

pub use action::Action;
pub use app::{App, Panel, Settings};
pub use keymap::{KeyChord, Keymap, Mode};
pub use state::{Cursor, MemoryStatus, RecordingStatus, ReplayStatus, Request, Section, Speed};
pub use theme::{ColorDepth, Role, Theme};

use crate::model::Stamped;
use crate::record::{Player, RecordOptions, Recorder};
use crate::store::Session;

/// Minimum time between two frames (at most 20 frames per second).
pub const FRAME_BUDGET: Duration = Duration::from_millis(50);

/// Most observations applied in one batch before the loop lets input and drawing in.
const MAX_BATCH: usize = 50_000;

/// Options for [`run`], filled from the flags by `crate::cli::options::ui_options`.
#[derive(Clone, Debug, Default)]
pub struct UiOptions {
    /// A keymap file overriding `keymaps/default.toml` (`--keymap`).
    pub keymap_path: Option<PathBuf>,
    /// A theme file overriding `themes/default.toml` (`--theme`).
    pub theme_path: Option<PathBuf>,
    /// Show Secret data in decoded values instead of redacting it.
    pub show_secrets: bool,
    /// Warnings found by the caller (flags, discovery), shown with the config warnings.
    pub warnings: Vec<String>,
    /// Encryption keys for values encrypted at rest (`--encryption-config`).
    pub keyring: Option<std::sync::Arc<crate::decrypt::Keyring>>,
    /// `--memory-limit` in bytes: history is dropped to stay under it, then updates stop.
    pub memory_limit: Option<u64>,
    /// Where `S` saves screenshots (`--screenshot-dir`; empty: the current directory).
    pub screenshot_dir: PathBuf,
    /// Report mouse events (`--mouse`): click tabs and rows, scroll with the wheel.
    pub mouse: bool,
    /// The zone times are shown and read in (`--time-zone`, `--utc`).
    pub zone: crate::config::Zone,
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
        show_secrets: opts.show_secrets,
        keyring: opts.keyring.clone(),
        keymap,
        theme,
        warnings: all,
        utc_offset: opts.zone.offset_at(SystemTime::now()),
        zone_label: opts.zone.label_at(SystemTime::now()),
    }
}

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

/// Where the console's observations come from: the live sources (one channel, fed by
/// [`crate::source::live::start`]) or a recording. Everything after this is the same.
pub enum Feed {
    Live {
        rx: tokio::sync::mpsc::Receiver<Stamped>,
        /// Where `R` writes recordings (a new `regscope-YYYYMMDD-HHMMSS.rgs` each time).
        record_dir: PathBuf,
        /// etcd's cluster id for recording headers (0 when unknown).
        cluster_id: u64,
    },
    Replay {
        player: Box<Player>,
        /// The recording's path as given, for the timeline.
        file: String,
        /// Where to open (the start when `None`).
        at: Option<crate::record::Target>,
        /// Thresholds for the "latency or lag crossed" markers, in seconds.
        p99_threshold: f64,
        lag_threshold: f64,
    },
}

/// Runs the console until the user quits or SIGTERM/SIGHUP/SIGINT arrives.
///
/// Sets up the terminal (raw mode, alternate screen) and restores it exactly once on every
/// way out: quit, a signal, an error returned from here (drop guard) or a panic (chained
/// hook; the panic message then prints on the main screen). With
/// `REGSCOPE_DEBUG_PANIC=1` the first draw panics, to test exactly that. When the live
/// channel closes the header says "source ended" and the console stays usable; a replay
/// pauses at its end.
///
/// Errors: terminal I/O failures (e.g. stdout closed) and signal registration failures.
pub async fn run(feed: Feed, session: Session, opts: UiOptions) -> anyhow::Result<Exit> {
    let mut app = App::new(session, settings(&opts));
    // The zone's offset at the session's moment (a recording's daylight saving time, not
    // today's), said once in the header.
    let at = app.session.now();
    app.settings.utc_offset = opts.zone.offset_at(at);
    app.settings.zone_label = opts.zone.label_at(at);
    let opts_screenshot_dir = opts.screenshot_dir.clone();
    let mut drawn_size: Option<ratatui::layout::Size> = None;
    app.set_debug_panic(std::env::var("REGSCOPE_DEBUG_PANIC").is_ok_and(|v| v == "1"));

    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigcont = signal(SignalKind::from_raw(libc::SIGCONT))?;
    let mut guard = terminal::TerminalGuard::setup(opts.mouse)?;
    let mut input = crossterm::event::EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_draw: Option<Instant> = None;
    let mut exit = Exit::Quit;
    let mut memory_guard = opts.memory_limit.map(crate::store::MemoryGuard::new);
    let mut last_memory_check = Instant::now();
    // `--memory-limit` holds the stream while values are packed.
    let mut memory_hold = false;

    let mut live = match feed {
        Feed::Live {
            rx,
            record_dir,
            cluster_id,
        } => Driver::Live(Box::new(LiveDriver {
            rx,
            open: true,
            recorder: None,
            record_dir,
            cluster_id,
        })),
        Feed::Replay {
            player,
            file,
            at,
            p99_threshold,
            lag_threshold,
        } => Driver::Replay(Box::new(replay::ReplayDriver::start(
            player,
            file,
            at,
            (p99_threshold, lag_threshold),
            &mut app,
        ))),
    };

    loop {
        if app.should_quit() {
            break;
        }
        for req in app.take_requests() {
            match &mut live {
                Driver::Live(l) => l.request(&mut app, req),
                Driver::Replay(r) => r.request(&mut app, req),
            }
        }
        let due = last_draw.map_or(Instant::now(), |t| t + FRAME_BUDGET);
        if app.needs_draw() && Instant::now() >= due {
            if app.take_clear_request() {
                // Best effort: ratatui's clear asks the terminal for the cursor position,
                // which can time out while input is streaming (two quick Ctrl-L); a failed
                // clear must not end the session.
                let _ = guard.terminal().clear();
            }
            app.prepare_frame();
            let shot = app.take_screenshot();
            let frame = guard.terminal().draw(|f| views::draw(&app, f))?;
            drawn_size = Some(frame.area.as_size());
            app.too_small = views::too_small(frame.area);
            let saved = shot.then(|| {
                let dir = if opts_screenshot_dir.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    opts_screenshot_dir.as_path()
                };
                screenshot::save(
                    frame.buffer,
                    screenshot::Canvas::for_theme(&app.settings.theme),
                    dir,
                    SystemTime::now(),
                )
                .map_err(|e| (dir.to_path_buf(), e))
            });
            app.mark_drawn();
            match saved {
                Some(Ok(p)) => app.notify(format!("screenshot saved: {} (and .txt)", p.display())),
                Some(Err((dir, e))) => app.notify(format!(
                    "screenshot not saved: cannot write into {}: {e} (set --screenshot-dir to a writable directory)",
                    dir.display()
                )),
                None => {}
            }
            last_draw = Some(Instant::now());
            continue;
        }
        let wait_frame = app.needs_draw();
        let (live_open, replay_wake) = match &live {
            Driver::Live(l) => (l.open, None),
            Driver::Replay(r) => (false, r.wake(&app)),
        };
        let rx = match &mut live {
            Driver::Live(l) => Some(&mut l.rx),
            Driver::Replay(_) => None,
        };
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
            msg = recv(rx), if live_open && !memory_hold => {
                if let Driver::Live(l) = &mut live {
                    l.batch(&mut app, msg);
                }
                // A list brings hundreds of MiB a second: check the limit more often then.
                if memory_guard.is_some()
                    && app.session.replica.listing().is_some()
                    && last_memory_check.elapsed() >= Duration::from_millis(25)
                {
                    last_memory_check = Instant::now();
                    memory_hold = watch_memory(&mut app, &mut live, memory_guard.as_mut(), memory_hold);
                }
            },
            _ = tokio::time::sleep(Duration::from_millis(50)), if memory_hold => {
                last_memory_check = Instant::now();
                memory_hold = watch_memory(&mut app, &mut live, memory_guard.as_mut(), memory_hold);
            },
            _ = tokio::time::sleep(replay_wake.unwrap_or(Duration::from_secs(3600))), if replay_wake.is_some() => {
                if let Driver::Replay(r) = &mut live {
                    r.play(&mut app);
                }
            },
            _ = tick.tick() => {
                // A resize can arrive without its event (a tmux pane resized while
                // detached): compare the size with the last frame's.
                if let (Ok(now), Some(drawn)) = (guard.terminal().size(), drawn_size) {
                    if now != drawn {
                        let _ = guard.terminal().autoresize();
                        app.mark_dirty();
                    }
                }
                // Packing runs behind the apply: take what it has done while no
                // observation comes (a paused replay, a quiet cluster). When it has just
                // caught up, what it replaced is freed: give that back to the kernel.
                maintain_packing(&mut app);
                match &mut live {
                    Driver::Live(l) => l.maintain(&mut app),
                    Driver::Replay(r) => r.poll_markers(&mut app),
                }
                last_memory_check = Instant::now();
                memory_hold = watch_memory(&mut app, &mut live, memory_guard.as_mut(), memory_hold);
            },
            _ = tokio::time::sleep_until(due.into()), if wait_frame => {}
        }
    }
    drop(guard);
    if let Driver::Live(l) = &mut live {
        l.stop_recording(&mut app);
    }
    if exit == Exit::Quit {
        if let crate::model::ConnState::Failed { error } = app.session.etcd.conn() {
            exit = Exit::SourceFailed(error.clone());
        }
    }
    Ok(exit)
}

/// Once a second: the header's memory figure, and `--memory-limit`. Over the limit the
/// history budget is lowered first; with no history left, values still raw are given time
/// to pack while the stream waits (returns `true`: take no observations, check again
/// soon); when that is not enough either, a live session stops taking observations (the
/// sources see a closed channel and end) with a message saying why, rather than growing
/// until the kernel kills it.
fn watch_memory(
    app: &mut App,
    live: &mut Driver,
    guard: Option<&mut crate::store::MemoryGuard>,
    holding: bool,
) -> bool {
    let Some(resident) = crate::source::process::resident_bytes() else {
        return false;
    };
    let m = app.session.replica.memory();
    app.set_memory(Some(MemoryStatus {
        resident,
        limit: guard.as_ref().map(|g| g.limit()),
        packed: (m.packed_values > 0).then_some((m.packed_raw_bytes, m.packed_bytes)),
    }));
    let Some(guard) = guard else { return false };
    let action = guard.check(resident, Instant::now(), &mut app.session);
    if let crate::store::MemoryAction::Packing { .. } = action {
        maintain_packing(app);
        if holding {
            return true;
        }
    }
    let hold = matches!(action, crate::store::MemoryAction::Packing { .. });
    let Some(msg) = crate::derive::progress::memory_action(
        &action,
        guard.limit(),
        resident,
        &app.session.replica,
    ) else {
        return hold;
    };
    if matches!(action, crate::store::MemoryAction::Exceeded { .. }) {
        if let Driver::Live(l) = live {
            l.rx.close();
            while l.rx.try_recv().is_ok() {}
            l.open = false;
            app.set_source_ended();
        }
    }
    app.settings.warnings.push(msg);
    app.mark_dirty();
    hold
}

/// Takes what the packing worker has done; when that is the last of it, what packing
/// replaced is freed: give it back to the kernel (once, not on every later call).
fn maintain_packing(app: &mut App) {
    let packing = app.session.replica.memory().packing_outstanding;
    app.session.replica.maintain();
    if packing > 0 && app.session.replica.memory().packing_outstanding == 0 {
        crate::release_free_memory();
    }
}

async fn recv(rx: Option<&mut tokio::sync::mpsc::Receiver<Stamped>>) -> Option<Stamped> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

enum Driver {
    Live(Box<LiveDriver>),
    Replay(Box<replay::ReplayDriver>),
}

/// The live side of the loop: drains the channel in batches, taps the recorder.
struct LiveDriver {
    rx: tokio::sync::mpsc::Receiver<Stamped>,
    open: bool,
    recorder: Option<Recorder>,
    record_dir: PathBuf,
    cluster_id: u64,
}

impl LiveDriver {
    fn take(&mut self, app: &mut App, st: &Stamped) {
        if let crate::model::Observation::Server { cluster_id, .. } = &st.obs {
            if *cluster_id != 0 {
                self.cluster_id = *cluster_id;
            }
        }
        let applied = app.ingest(st);
        if let Some(r) = self.recorder.as_mut() {
            match applied {
                Some(applied) => r.record_applied(st, &applied),
                // Held back while paused: recorded now, applied later.
                None => r.record(st),
            }
        }
    }

    fn batch(&mut self, app: &mut App, first: Option<Stamped>) {
        let Some(first) = first else {
            self.open = false;
            app.set_source_ended();
            return;
        };
        self.take(app, &first);
        let mut n = 1;
        while n < MAX_BATCH {
            match self.rx.try_recv() {
                Ok(st) => {
                    self.take(app, &st);
                    n += 1;
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    self.open = false;
                    app.set_source_ended();
                    break;
                }
            }
        }
        app.after_batch();
        self.maintain(app);
    }

    fn maintain(&mut self, app: &mut App) {
        let Some(r) = self.recorder.as_mut() else {
            return;
        };
        r.maintain((!app.paused()).then_some(&mut app.session));
        if let Some(why) = r.stopped().map(str::to_string) {
            let path = r.path();
            if let Some(r) = self.recorder.take() {
                let _ = r.finish();
            }
            app.settings
                .warnings
                .push(format!("recording to {} ended: {why}", path.display()));
            app.set_recording(None);
            return;
        }
        app.set_recording(Some(RecordingStatus {
            path: r.path().display().to_string(),
            bytes: r.bytes_written(),
        }));
    }

    fn request(&mut self, app: &mut App, req: Request) {
        match req {
            Request::StartRecording if self.recorder.is_none() => {
                let name = format!(
                    "regscope-{}.rgs",
                    humantime::format_rfc3339_seconds(SystemTime::now())
                        .to_string()
                        .replace(['-', ':'], "")
                        .trim_end_matches('Z')
                        .replace('T', "-")
                );
                // Two recordings in one second get -2, -3, ….
                let mut path = self.record_dir.join(&name);
                let mut n = 2;
                while path.exists() && n < 1000 {
                    path = self
                        .record_dir
                        .join(name.replace(".rgs", &format!("-{n}.rgs")));
                    n += 1;
                }
                let opts = RecordOptions::new(&path);
                // The first checkpoint writes every key in key order.
                app.session.settle();
                match Recorder::create(opts, &app.session, self.cluster_id) {
                    Ok(mut r) => {
                        // Paused: the session is behind the stream by the backlog, which
                        // the checkpoint does not hold; it follows as observations.
                        for st in app.cursor.backlog.iter() {
                            r.record(st);
                        }
                        app.notify(format!(
                            "recording to {} (R stops; Secret values redacted)",
                            path.display()
                        ));
                        self.recorder = Some(r);
                        self.maintain(app);
                    }
                    Err(e) => app.settings.warnings.push(format!("cannot record: {e}")),
                }
            }
            Request::StopRecording => self.stop_recording(app),
            Request::Notice(n) => app.settings.warnings.push(n),
            _ => {}
        }
    }

    fn stop_recording(&mut self, app: &mut App) {
        if let Some(r) = self.recorder.take() {
            let path = r.path();
            match r.finish() {
                Ok(n) => app.notify(format!(
                    "recording saved: {} ({}) — regscope replay {0}",
                    path.display(),
                    text::bytes(n)
                )),
                Err(e) => app.settings.warnings.push(format!("recording ended: {e}")),
            }
            app.set_recording(None);
        }
    }
}
