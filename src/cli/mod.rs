//! The subcommands, one module each, which `main` dispatches to after [`prepare`]: the
//! console (no subcommand: [`console`]), [`demo`], [`snapshot`], [`verify`], [`record`],
//! [`replay`], `replay --check` ([`check`]), [`export`], [`report`], [`diff`], [`decode`],
//! [`doctor`], [`completions`] (and `man`), [`print_config`] and [`analyze`] (a db file or,
//! in [`analyze_recording`], a recording). Those that watch etcd or read a
//! recording drive the same sources and the same [`crate::store::Session`] as the console,
//! so what they print is what the console shows.
//!
//! Shared: the flags ([`args`]) and what they turn into ([`options`]); connecting and
//! listing ([`session`]); opening recordings and reading positions in them
//! ([`recording`]); stderr progress ([`progress`]) and `--memory-limit` ([`memory`]);
//! stdout that survives a closed pipe ([`out`]); aligned text tables ([`table`]).

pub mod analyze;
pub mod analyze_live;
pub mod analyze_recording;
pub mod args;
pub mod check;
pub mod completions;
pub mod console;
pub mod db_file;
pub mod decode;
pub mod demo;
pub mod diff;
pub mod doctor;
pub mod etcdctl_json;
pub mod export;
pub mod export_db;
pub mod headless;
pub mod memory;
pub mod options;
pub mod prepare;
pub mod print_config;
pub mod progress;
pub mod record;
pub mod recording;
pub mod replay;
pub mod report;
pub mod session;
pub mod snapshot;
pub mod table;
pub mod verify;

/// Writes to stdout; a closed pipe (`regscope snapshot --json | head`) ends the output
/// quietly instead of panicking like `print!` does.
pub fn out(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args).and_then(|()| o.flush()) {
        stdout_error(&e);
    }
}

/// Set once writing to stdout failed for another reason than a closed pipe.
static STDOUT_FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Takes note of an error writing to stdout: a closed pipe (`| head`) ends the output
/// quietly; anything else (a full disk: ENOSPC, an I/O error) is said once on stderr and
/// makes the command fail ([`stdout_failed`]), so that a cut output is never taken for a
/// whole one.
pub fn stdout_error(e: &std::io::Error) {
    use std::sync::atomic::Ordering;
    if e.kind() != std::io::ErrorKind::BrokenPipe && !STDOUT_FAILED.swap(true, Ordering::SeqCst) {
        eprintln!("regscope: writing to stdout: {e}");
    }
}

/// Whether writing to stdout failed (see [`stdout_error`]); `main` then exits 1 where it
/// would have exited 0.
pub fn stdout_failed() -> bool {
    STDOUT_FAILED.load(std::sync::atomic::Ordering::SeqCst)
}
