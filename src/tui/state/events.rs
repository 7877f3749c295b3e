//! The event list: a filter over the session's event ring shown newest first, a selection
//! kept on the same event as new ones arrive above it, and following the newest.
//!
//! The rows are never copied: each query walks the replica's event ring (frozen with the
//! rest of the view while paused).

use super::drawn::add;
use crate::model::Revision;
use crate::store::{EventRecord, Replica};

/// The event list's state.
pub(crate) struct EventsState {
    pub filter: String,
    pub follow: bool,
    /// Index of the selected row in the filtered, newest-first list.
    pub selected: usize,
    /// Index of the first visible row.
    pub scroll: usize,
    /// Newest revision already accounted for in `selected`/`scroll`.
    pub seen_rev: Revision,
}

impl EventsState {
    /// Following the newest of `replica`'s events.
    pub fn new(replica: &Replica) -> EventsState {
        EventsState {
            filter: String::new(),
            follow: true,
            selected: 0,
            scroll: 0,
            seen_rev: newest_rev(replica),
        }
    }

    /// `replica`'s events matching the filter, newest first.
    pub fn filtered<'a>(&self, replica: &'a Replica) -> impl Iterator<Item = &'a EventRecord> + 'a {
        let f = self.filter.to_lowercase();
        replica
            .events()
            .iter()
            .rev()
            .filter(move |e| event_matches(replica, e, &f))
    }

    /// Rows in the filtered list.
    pub fn len(&self, replica: &Replica) -> usize {
        if self.filter.is_empty() {
            replica.events().len()
        } else {
            self.filtered(replica).count()
        }
    }

    /// Row `i` of the filtered list.
    pub fn row<'a>(&self, replica: &'a Replica, i: usize) -> Option<&'a EventRecord> {
        self.filtered(replica).nth(i)
    }

    /// Moves the selection by `delta` rows (clamped) in a view of `rows` rows. Leaving the
    /// newest row stops following; coming back to it resumes.
    pub fn step(&mut self, replica: &Replica, delta: i64, rows: usize) {
        let n = self.len(replica);
        self.selected = add(self.selected, delta, n.saturating_sub(1));
        self.follow = self.selected == 0;
        self.keep_visible(rows);
    }

    /// Selects row `i`, following when it is the newest.
    pub fn select(&mut self, i: usize, rows: usize) {
        self.selected = i;
        self.follow = i == 0;
        self.keep_visible(rows);
    }

    /// Scrolls so that the selection is among the `rows` rows shown.
    pub fn keep_visible(&mut self, rows: usize) {
        let rows = rows.max(1);
        if self.selected < self.scroll {
            self.scroll = self.selected;
        } else if self.selected >= self.scroll + rows {
            self.scroll = self.selected + 1 - rows;
        }
    }

    pub fn set_filter(&mut self, f: String) {
        self.filter = f;
        self.selected = 0;
        self.scroll = 0;
    }

    /// Follows the newest event (from the top), or stops following.
    pub fn toggle_follow(&mut self) {
        self.follow = !self.follow;
        if self.follow {
            self.selected = 0;
            self.scroll = 0;
        }
    }

    /// After a batch: new arrivals insert rows above the selection, which stays on its
    /// event unless following.
    pub fn after_batch(&mut self, replica: &Replica) {
        let newest = newest_rev(replica);
        if newest <= self.seen_rev {
            return;
        }
        if self.follow {
            self.selected = 0;
            self.scroll = 0;
        } else {
            let f = self.filter.to_lowercase();
            let added = replica
                .events()
                .iter()
                .rev()
                .take_while(|e| e.revision > self.seen_rev)
                .filter(|e| event_matches(replica, e, &f))
                .count();
            self.selected += added;
            self.scroll += added;
        }
        self.seen_rev = newest;
    }

    /// The session was replaced (a replay's seek): its events are not arrivals.
    pub fn session_replaced(&mut self, replica: &Replica) {
        self.seen_rev = newest_rev(replica);
    }
}

fn newest_rev(replica: &Replica) -> Revision {
    replica.events().back().map_or(0, |e| e.revision)
}

/// Whether an event matches a lower-case filter: every word of it (AND) is a substring of
/// the escaped key, the resource, the operation or the writer; a row synthesized after a
/// gap also matches `unseen` and its change (`created`, `changed`, `deleted`).
pub(crate) fn event_matches(replica: &Replica, e: &EventRecord, f: &str) -> bool {
    f.split_whitespace().all(|w| word_matches(replica, e, w))
}

fn word_matches(replica: &Replica, e: &EventRecord, f: &str) -> bool {
    if let Some(n) = &e.note {
        return n.to_lowercase().contains(f) || "replaced".contains(f);
    }
    let key = crate::model::escape_bytes(&e.key).to_lowercase();
    if key.contains(f) {
        return true;
    }
    let res = replica.resource_name(e.resource).to_lowercase();
    let op = e.kind.name().to_lowercase();
    if res.contains(f) || op.contains(f) {
        return true;
    }
    if let Some(u) = e.unseen {
        if "unseen".contains(f) || u.change.label().contains(f) {
            return true;
        }
    }
    // The writer (a field manager such as `kubelet`, as the writers panel counts it):
    // decoded only when nothing cheaper matched.
    e.writer().to_lowercase().contains(f)
}
