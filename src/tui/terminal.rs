//! Terminal setup and restore: raw mode, the alternate screen and (with `--mouse`) mouse
//! reporting, undone exactly once.
//!
//! Restore runs from whichever comes first: the [`TerminalGuard`] being dropped (quit, an
//! error returned through `?`, a signal ending the loop) or the chained panic hook. A
//! process-wide flag makes the second caller a no-op, so the captured output holds one
//! leave-alternate-screen and one show-cursor, and a panic message printed by the previous
//! hook after our restore stays readable on the main screen (a second restore would move the
//! cursor and let the shell prompt overwrite it).
//!
//! ratatui's `Terminal` shows the cursor again in its own `Drop`; the guard therefore never
//! drops it (it only owns a handle to stdout and two buffers, freed at exit anyway).

use std::io::{self, Stdout, Write};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use crossterm::cursor::Show;
use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::execute;
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

/// The terminal type the live console draws on.
pub type Tui = Terminal<CrosstermBackend<Stdout>>;

/// Set while the terminal is in raw mode on the alternate screen.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Set while the terminal reports mouse events (`--mouse`).
static MOUSE: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

/// Owns the set-up terminal; dropping it restores the terminal (once).
pub struct TerminalGuard {
    terminal: ManuallyDrop<Tui>,
}

impl TerminalGuard {
    /// Enters raw mode and the alternate screen (and mouse reporting with `mouse`) and
    /// installs the panic hook (once per process, chained to the hook that was installed
    /// before).
    pub fn setup(mouse: bool) -> io::Result<TerminalGuard> {
        install_panic_hook();
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let mut out = io::stdout();
        if let Err(e) = execute!(out, EnterAlternateScreen) {
            restore();
            return Err(e);
        }
        if mouse {
            MOUSE.store(true, Ordering::SeqCst);
            if let Err(e) = execute!(out, EnableMouseCapture) {
                restore();
                return Err(e);
            }
        }
        match Terminal::new(CrosstermBackend::new(io::stdout())) {
            Ok(t) => Ok(TerminalGuard {
                terminal: ManuallyDrop::new(t),
            }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }

    /// Puts the terminal back into raw mode and the alternate screen after the process was
    /// stopped and continued (SIGSTOP/SIGCONT, or a shell's job control reset the tty), then
    /// clears it so the next draw repaints everything.
    pub fn resume(&mut self) -> io::Result<()> {
        enable_raw_mode()?;
        execute!(io::stdout(), EnterAlternateScreen)?;
        if MOUSE.load(Ordering::SeqCst) {
            execute!(io::stdout(), EnableMouseCapture)?;
        }
        self.terminal.clear()
    }

    /// The terminal to draw on.
    pub fn terminal(&mut self) -> &mut Tui {
        &mut self.terminal
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Leaves the alternate screen, shows the cursor and leaves raw mode, if the terminal is
/// still set up; otherwise does nothing. Errors are ignored: stdout may be gone (the pty was
/// closed) and there is nobody left to tell.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    if MOUSE.swap(false, Ordering::SeqCst) {
        let _ = execute!(out, DisableMouseCapture);
    }
    let _ = execute!(out, LeaveAlternateScreen, Show);
    let _ = out.flush();
    let _ = disable_raw_mode();
}

fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}
