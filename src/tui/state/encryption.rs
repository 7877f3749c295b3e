//! The encryption summary over the key browser (`E`): whether it is open, the row
//! selected, and the counts, taken from the replica when it opens and then at most once a
//! clock second while it stays open (counting walks every live value's prefix).

use super::drawn::add;
use crate::derive::encryption::StorageSummary;
use crate::store::Replica;

/// The encryption summary's state.
#[derive(Default)]
pub(crate) struct EncryptionState {
    /// Open, with this row selected (one row per resource, then the total).
    pub selected: Option<usize>,
    /// The counts, while open; dropped on close so that reopening counts afresh.
    pub summary: Option<StorageSummary>,
    /// Clock second of the last count.
    counted_second: u64,
}

impl EncryptionState {
    pub fn is_open(&self) -> bool {
        self.selected.is_some()
    }

    /// Opens the summary on its first row.
    pub fn open(&mut self) {
        self.selected = Some(0);
    }

    pub fn close(&mut self) {
        self.selected = None;
    }

    /// Counts `replica` when open: always when `force` (just opened), else when the
    /// replica changed and not yet in clock second `second`, so a large replica under heavy
    /// writes is counted at most once a second. Returns whether the counts changed.
    pub fn refresh(&mut self, replica: &Replica, second: u64, force: bool) -> bool {
        if self.selected.is_none() {
            self.summary = None;
            return false;
        }
        let stale = self
            .summary
            .as_ref()
            .is_none_or(|s| s.seq != replica.change_seq());
        let mut counted = false;
        if force || (stale && second != self.counted_second) || self.summary.is_none() {
            self.summary = Some(StorageSummary::compute(replica));
            self.counted_second = second;
            counted = true;
        }
        let n = self.summary.as_ref().map_or(0, |s| s.rows.len());
        self.selected = self.selected.map(|i| i.min(n));
        counted
    }

    /// Moves the selection by `delta` rows (every resource, then the total).
    pub fn step(&mut self, delta: i64) {
        let n = self.summary.as_ref().map_or(0, |s| s.rows.len()) + 1;
        self.selected = self.selected.map(|i| add(i, delta, n - 1));
    }

    /// The resource of the selected row (`None` on the total).
    pub fn selected_resource(&self) -> Option<String> {
        let i = self.selected?;
        let s = self.summary.as_ref()?;
        s.rows.get(i).map(|r| r.resource.clone())
    }
}
