//! The replica's time arithmetic: Unix seconds of observation times, kept between
//! observations so that a replay applying a million events a second does not subtract
//! `SystemTime`s for each.

use std::time::{SystemTime, UNIX_EPOCH};

pub(super) use crate::model::unix_second;

/// The newest observation's Unix second and the end of the newest `rev_times` entry's
/// 100 ms window, kept between observations: a replay applies a million events a second,
/// most of them one per observation, and `SystemTime` subtraction is not free.
#[derive(Clone, Copy, Debug)]
pub(super) struct ClockCache {
    at: SystemTime,
    second: u64,
    /// A `rev_times` entry's time, and that time plus 100 ms.
    window: (SystemTime, SystemTime),
}

impl Default for ClockCache {
    fn default() -> Self {
        ClockCache {
            at: UNIX_EPOCH,
            second: 0,
            window: (
                UNIX_EPOCH,
                UNIX_EPOCH + std::time::Duration::from_millis(100),
            ),
        }
    }
}

impl ClockCache {
    /// [`unix_second`] of `at`.
    pub(super) fn second(&mut self, at: SystemTime) -> u64 {
        if at != self.at {
            self.at = at;
            self.second = unix_second(at);
        }
        self.second
    }

    /// `t` plus 100 ms (`t` itself past the end of time).
    pub(super) fn window_end(&mut self, t: SystemTime) -> SystemTime {
        if t != self.window.0 {
            let end = t.checked_add(std::time::Duration::from_millis(100));
            self.window = (t, end.unwrap_or(t));
        }
        self.window.1
    }
}
