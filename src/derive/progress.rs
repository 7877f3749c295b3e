//! The lines the console's header and warnings and the CLI's stderr both say about work
//! in progress: how far a list of the prefix has got, and what `--memory-limit` did.

use super::units::{bytes, thousands, thousands_i};

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

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
