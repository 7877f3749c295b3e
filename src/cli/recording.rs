//! What the subcommands of recordings share (`replay`, `replay --check`, `export`,
//! `snapshot --from`): opening a recording, reading `--at`/`--from`/`--to` against its
//! span ([`parse_at`]), and the files of a recording being there at all.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use crate::config::Zone;
use crate::record::seek::{parse_seek, parse_seek_from, SeekTo};
use crate::record::{Player, Target};

/// A recording that is not there says so on stderr, terminal or not (exit 2), before
/// anything else is asked of it.
pub fn files_exist(path: &Path) -> Result<(), ExitCode> {
    crate::record::files::recording_files(path)
        .map(drop)
        .map_err(|e| {
            eprintln!("regscope: {e}");
            ExitCode::from(2)
        })
}

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

/// Opens a recording (a file, or the base name of a `--keep-last` set); what is wrong
/// with it is said on stderr (exit 2).
pub fn open(path: &Path) -> Result<Player, ExitCode> {
    Player::open(path).map_err(|e| {
        eprintln!("regscope: {}", open_error(&e));
        ExitCode::from(2)
    })
}

/// What a command taking a recording or etcd's db file says of `e`, [`Player::open`]'s
/// error for a file [`super::db_file::is_db_file`] did not take: a file that is neither
/// is said to be neither (no regscope magic, and no bbolt meta page at page 0 nor at
/// page 1 of any page size bbolt reads).
pub fn open_error(e: &crate::record::RecordError) -> String {
    if e.is_not_a_recording() {
        format!("{e}, nor an etcd db file (no valid bbolt meta page)")
    } else {
        e.to_string()
    }
}

/// A time in export lines and messages: RFC 3339 in UTC with nanoseconds.
pub fn time_text(t: SystemTime) -> String {
    humantime::format_rfc3339_nanos(t).to_string()
}
