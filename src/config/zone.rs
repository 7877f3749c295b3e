//! The one time zone regscope shows and reads times in, console and CLI alike: the local
//! zone (the `TZ` environment variable, else the system's `/etc/localtime`, as libc's
//! `localtime_r` reads them) or UTC (`--utc`, `--time-zone utc`, config `time-zone`).
//!
//! Every time shown either carries its zone (`2026-12-03T02:44:03.792-05:00`, `…Z`) or
//! appears where the zone is said once (the console's header names it). Every time read
//! takes an explicit zone or offset (`Z`, `UTC`, `+05:30`) and otherwise means the shown
//! zone: a time copied from any output of regscope and pasted into any input means the
//! same moment. The offset is the zone's at the moment in question (daylight saving time
//! moves it), so a recording from summer replayed in winter reads and shows summer's.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Which zone times are shown and read in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Zone {
    /// The local zone (`TZ`, else `/etc/localtime`).
    #[default]
    Local,
    Utc,
}

impl Zone {
    /// Seconds east of UTC at `t` (0 for UTC, and when libc cannot say).
    pub fn offset_at(self, t: SystemTime) -> i64 {
        match self {
            Zone::Utc => 0,
            Zone::Local => local_offset_at(t),
        }
    }

    /// `UTC`, or `UTC+05:30` / `UTC-05:00` for the offset at `t`.
    pub fn label_at(self, t: SystemTime) -> String {
        match self.offset_at(t) {
            0 => "UTC".into(),
            o => format!("UTC{}", offset_text(o)),
        }
    }

    /// RFC 3339 with milliseconds in this zone: `2026-12-03T07:44:03.792Z` in UTC,
    /// `2026-12-03T02:44:03.792-05:00` in New York.
    pub fn rfc3339_millis(self, t: SystemTime) -> String {
        let offset = self.offset_at(t);
        if offset == 0 {
            return humantime::format_rfc3339_millis(t).to_string();
        }
        let shifted = shift(t, offset);
        let s = humantime::format_rfc3339_millis(shifted).to_string();
        format!("{}{}", s.trim_end_matches('Z'), offset_text(offset))
    }
}

/// `+05:30`, `-05:00`.
pub fn offset_text(offset: i64) -> String {
    let sign = if offset < 0 { '-' } else { '+' };
    let a = offset.unsigned_abs();
    format!("{sign}{:02}:{:02}", a / 3600, a % 3600 / 60)
}

fn shift(t: SystemTime, offset: i64) -> SystemTime {
    let d = Duration::from_secs(offset.unsigned_abs());
    if offset >= 0 {
        t.checked_add(d).unwrap_or(t)
    } else {
        t.checked_sub(d).unwrap_or(UNIX_EPOCH)
    }
}

/// The local zone's offset from UTC at `t`, in seconds (0 when it cannot be found).
// `tm_gmtoff` is a C long: i64 here, i32 on 32-bit targets, hence the conversion.
#[allow(clippy::useless_conversion)]
pub fn local_offset_at(t: SystemTime) -> i64 {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    // time_t is 64 bits on the targets regscope builds for.
    let at = secs as libc::time_t;
    // SAFETY: localtime_r only writes into the zeroed `tm` we pass and reads `at`.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&at, &mut tm).is_null() {
            return 0;
        }
        i64::from(tm.tm_gmtoff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_and_their_text() {
        assert_eq!(offset_text(19_800), "+05:30");
        assert_eq!(offset_text(-18_000), "-05:00");
        assert_eq!(offset_text(0), "+00:00");
        let t = UNIX_EPOCH + Duration::from_millis(1_764_747_843_792);
        assert_eq!(Zone::Utc.rfc3339_millis(t), "2025-12-03T07:44:03.792Z");
        assert_eq!(Zone::Utc.label_at(t), "UTC");
    }
}
