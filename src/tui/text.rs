//! Small text formatters of the views: rates and clock times (counts and sizes, shared
//! with the CLI, live in [`crate::derive::units`] and are named here too).

use std::time::SystemTime;

// Counts and sizes are said the same in the CLI's output: their home is
// `crate::derive::units`; the views name them through here.
pub use crate::derive::units::{bytes, thousands, thousands_i, unix_second};

/// A rate with one decimal below 100 and none above: `0.0`, `12.5`, `1,234`.
pub fn rate(r: f64) -> String {
    if r < 100.0 {
        format!("{r:.1}")
    } else {
        thousands(r.round() as u64)
    }
}

/// `HH:MM:SS` of `t` at `offset` seconds east of UTC.
pub fn clock(t: SystemTime, offset: i64) -> String {
    let s = (unix_second(t) as i64 + offset).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// `YYYY-MM-DD` of `t` at `offset` seconds east of UTC.
pub fn local_date(t: SystemTime, offset: i64) -> String {
    let local = (unix_second(t) as i64 + offset).max(0) as u64;
    let shifted = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(local);
    humantime::format_rfc3339_seconds(shifted).to_string()[..10].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn formats() {
        assert_eq!(rate(12.34), "12.3");
        assert_eq!(rate(1234.4), "1,234");
        let t = UNIX_EPOCH + Duration::from_secs(3600 + 62);
        assert_eq!(clock(t, 0), "01:01:02");
        assert_eq!(clock(t, -7200), "23:01:02");
        assert_eq!(local_date(t, 0), "1970-01-01");
        let t = UNIX_EPOCH + Duration::from_secs(1_796_139_130); // 2026-12-01T15:32:10Z
        assert_eq!(local_date(t, 0), "2026-12-01");
        assert_eq!(local_date(t, 9 * 3600), "2026-12-02");
        assert_eq!(local_date(t, -16 * 3600), "2026-11-30");
    }
}
