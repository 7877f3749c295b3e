//! Small text formatters shared by the views: counts, sizes, rates and clock times.

use std::time::{SystemTime, UNIX_EPOCH};

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Signed variant of [`thousands`] (revisions are `i64`).
pub fn thousands_i(n: i64) -> String {
    if n < 0 {
        format!("-{}", thousands(n.unsigned_abs()))
    } else {
        thousands(n as u64)
    }
}

/// One line for a list's progress: `412,000 of 1,000,000 keys (41%), 190.2 MiB, 98,000
/// keys/s, about 6 s left`; a finished list says how long it took.
pub fn list_progress(p: &crate::store::ListProgress) -> String {
    let mut s = thousands(p.keys);
    if let Some(e) = p.expected_keys {
        s.push_str(&format!(" of {} keys", thousands(e)));
        if e > 0 && !p.done {
            s.push_str(&format!(" ({}%)", (p.keys * 100 / e).min(100)));
        }
    } else {
        s.push_str(" keys");
    }
    s.push_str(&format!(", {}", bytes(p.bytes)));
    if p.done {
        s.push_str(&format!(
            " at revision {} in {:.1} s",
            thousands_i(p.revision),
            p.elapsed().as_secs_f64()
        ));
        return s;
    }
    if let Some(r) = p.keys_per_second() {
        s.push_str(&format!(", {} keys/s", thousands(r as u64)));
    }
    if let Some(left) = p.estimate_left() {
        s.push_str(&format!(", about {} s left", left.as_secs().max(1)));
    }
    s
}

/// What `--memory-limit` did, in one line for the console's warnings and the CLI's stderr
/// (`None` for [`MemoryAction::Fine`]). `limit` and `resident` are bytes. When the limit is
/// exceeded during a list, the line starts by saying the keys held are incomplete: a
/// warning row may cut the end.
///
/// [`MemoryAction::Fine`]: crate::store::MemoryAction::Fine
pub fn memory_action(
    action: &crate::store::MemoryAction,
    limit: u64,
    resident: u64,
    replica: &crate::store::Replica,
) -> Option<String> {
    use crate::store::MemoryAction;
    match action {
        MemoryAction::Fine => None,
        MemoryAction::HistoryLowered { from, to } => Some(format!(
            "--memory-limit {}: resident {}; history budget lowered from {} to {}",
            bytes(limit),
            bytes(resident),
            bytes(*from as u64),
            bytes(*to as u64)
        )),
        MemoryAction::Packing {
            resident,
            outstanding,
        } => Some(format!(
            "--memory-limit {}: resident {} while {} values are still to pack; the stream waits for packing",
            bytes(limit),
            bytes(*resident),
            thousands(*outstanding)
        )),
        MemoryAction::Exceeded { resident } => {
            let stopped = match replica.list_progress().filter(|p| !p.done) {
                Some(p) => format!(
                    "INCOMPLETE: the list stopped at {} of {} keys (revision {})",
                    thousands(p.keys),
                    p.expected_keys.map_or("?".into(), thousands),
                    thousands_i(p.revision)
                ),
                None => format!("stopped at revision {}", thousands_i(replica.revision())),
            };
            Some(format!(
                "--memory-limit {} reached: {stopped}. {} keys ({}) take {} resident with no history to drop; raise --memory-limit or narrow --prefix.",
                bytes(limit),
                thousands(replica.live_keys()),
                bytes(replica.live_bytes()),
                bytes(*resident),
            ))
        }
    }
}

/// Bytes in binary units: `512 B`, `1.5 KiB`, `12.0 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// A rate with one decimal below 100 and none above: `0.0`, `12.5`, `1,234`.
pub fn rate(r: f64) -> String {
    if r < 100.0 {
        format!("{r:.1}")
    } else {
        thousands(r.round() as u64)
    }
}

/// Unix seconds of a time (0 before the epoch).
pub fn unix_second(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
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
    use std::time::Duration;

    #[test]
    fn formats() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands_i(-1234), "-1,234");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
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

    #[test]
    fn list_progress_lines() {
        use crate::store::ListProgress;
        let began = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut p = ListProgress {
            revision: 1042,
            began,
            last: began + Duration::from_secs(1),
            keys: 2000,
            bytes: 2000 * 1026,
            expected_keys: Some(4000),
            done: false,
        };
        assert_eq!(
            list_progress(&p),
            "2,000 of 4,000 keys (50%), 2.0 MiB, 2,000 keys/s, about 1 s left"
        );
        p.expected_keys = None;
        assert_eq!(list_progress(&p), "2,000 keys, 2.0 MiB, 2,000 keys/s");
        p.expected_keys = Some(2000);
        p.done = true;
        p.last = began + Duration::from_millis(2500);
        assert_eq!(
            list_progress(&p),
            "2,000 of 2,000 keys, 2.0 MiB at revision 1,042 in 2.5 s"
        );
    }
}
