//! What the replica lets go of, when the caller frees it elsewhere.
//!
//! Applying an observation drops older state: the event log's copies pushed out by newer
//! events, history versions dropped by the budget or a compaction (a scrape's digest goes
//! back to the caller in [`crate::store::Applied`]). Live, that is a few frees per event, done in place. A replay applies up to a
//! million observations a second, most of them allocated on its read-ahead thread: freed on
//! the session's thread, each is a cold, cross-thread free, together about a fifth of a
//! replay's time there (`cargo bench --bench record -- replay`). With deferral on
//! ([`crate::store::Session::defer_frees`]) they are kept instead and handed to the caller
//! ([`crate::store::Session::take_discarded`]), which drops them on another thread.

/// Things let go of, kept while deferral is on and dropped at once otherwise.
#[derive(Debug)]
pub(crate) struct Discards<T> {
    on: bool,
    held: Vec<T>,
}

impl<T> Default for Discards<T> {
    fn default() -> Self {
        Discards {
            on: false,
            held: Vec::new(),
        }
    }
}

impl<T> Discards<T> {
    /// Keeps `t` for the caller when deferring, else drops it here.
    pub(crate) fn keep(&mut self, t: T) {
        if self.on {
            self.held.push(t);
        }
    }

    /// Deferral on or off (off drops what is held).
    pub(crate) fn set(&mut self, on: bool) {
        self.on = on;
        if !on {
            self.held = Vec::new();
        }
    }

    /// What is held, emptied. While deferring, the next batch starts with room for as
    /// many as this one held: a replay takes a batch every thousand observations, and
    /// growing each from empty again copied every batch's list several times.
    pub(crate) fn take(&mut self) -> Vec<T> {
        let room = if self.on { self.held.len() } else { 0 };
        std::mem::replace(&mut self.held, Vec::with_capacity(room))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Bytes;

    #[test]
    fn keeps_only_while_deferring() {
        let mut d = Discards::default();
        d.keep(Bytes::from_static(b"a"));
        assert!(d.take().is_empty(), "off: dropped at once");
        d.set(true);
        d.keep(Bytes::from_static(b"b"));
        d.keep(Bytes::from_static(b"c"));
        assert_eq!(d.take().len(), 2);
        assert!(d.take().is_empty(), "take empties");
        d.keep(Bytes::from_static(b"d"));
        d.set(false);
        assert!(d.take().is_empty(), "off drops what was held");
    }
}
