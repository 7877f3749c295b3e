//! What the views drew in the last frame, for the state to page, clamp and hit-test by.
//!
//! Views write these while drawing (the only interior mutability in the console); the
//! state reads them when a key or a click arrives. The state never asks a view to measure
//! anything: a limit is whatever the last frame recorded (gitui's `VerticalScroll` keeps
//! its limits the same way), and every view clamps its own scroll when it draws, so a
//! limit one frame old never shows.

use std::cell::Cell;

/// A scrolling view's height and largest useful first row, as last drawn.
#[derive(Default)]
pub(crate) struct Scroll {
    rows: Cell<usize>,
    max_top: Cell<Option<usize>>,
}

impl Scroll {
    /// Records a frame: `rows` lines shown, and `max_top`, the first row of the last page.
    pub fn record(&self, rows: usize, max_top: usize) {
        self.rows.set(rows);
        self.max_top.set(Some(max_top));
    }

    /// The view was not drawn in this frame.
    pub fn forget(&self) {
        self.rows.set(0);
        self.max_top.set(None);
    }

    /// Rows shown in the last frame (0 when not drawn).
    pub fn rows(&self) -> usize {
        self.rows.get()
    }

    /// The largest first row to scroll to; unbounded until the view has been drawn (its
    /// draw clamps what was asked for).
    pub fn max_top(&self) -> usize {
        self.max_top.get().unwrap_or(usize::MAX)
    }
}

/// Rows available to scrollable lists in the last frame, so that paging moves by what the
/// user saw, and where lists and tabs were drawn, for mouse clicks.
#[derive(Default)]
pub(crate) struct Drawn {
    pub events: Cell<usize>,
    pub keys: Cell<usize>,
    pub resources: Cell<usize>,
    pub opened_key: Cell<usize>,
    pub encryption: Cell<usize>,
    pub help: Scroll,
    pub growth: Cell<usize>,
    /// Each apiserver section's scrolling rows, by [`super::Section::index`]; forgotten for
    /// the sections not drawn in the last frame.
    pub apiserver: [Scroll; 6],
    /// For mouse clicks: the columns `[from, to)` of each panel tab on the first row.
    pub tabs: Cell<[(u16, u16); 4]>,
    /// For mouse clicks: a list's rows as drawn: the area's columns `[x0, x1)`, the screen
    /// row of its first data row, the index shown there and the rows shown.
    pub events_rows: Cell<ListRows>,
    pub resources_rows: Cell<ListRows>,
    pub keys_rows: Cell<ListRows>,
    /// The key list's selected row index (within [`Drawn::keys_rows`]), when shown.
    pub keys_selected: Cell<Option<usize>>,
}

/// Where a list's rows were drawn (see [`Drawn::events_rows`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ListRows {
    pub x0: u16,
    pub x1: u16,
    pub y0: u16,
    pub first: usize,
    pub rows: usize,
}

impl ListRows {
    /// The list index at screen cell (`x`, `y`), when it is one of the rows drawn.
    pub fn index_at(&self, x: u16, y: u16) -> Option<usize> {
        let inside = x >= self.x0 && x < self.x1 && y >= self.y0;
        let row = usize::from(y.checked_sub(self.y0)?);
        (inside && row < self.rows).then_some(self.first + row)
    }
}

/// `v` moved by `delta` rows, kept within `0..=max` (`delta` beyond ±2⁴⁰ counts as that:
/// Top and Bottom move by half the range of `i64`).
pub(crate) fn add(v: usize, delta: i64, max: usize) -> usize {
    let r = v as i64 + delta.clamp(-(1 << 40), 1 << 40);
    (r.max(0) as usize).min(max)
}
