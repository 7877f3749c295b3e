//! The apiserver panel: what it shows (an [`ApiserverPanels`] derived from the session's
//! metric series, informers and replica) and which section has the focus, its zoom, each
//! section's scroll and the row filter.
//!
//! [`ApiserverState::refresh`] derives the panels again when a scrape or informer
//! observation arrived, and once a second while the panel is shown; the views only draw it.

use super::drawn::add;
use crate::derive::apiserver::ApiserverPanels;
use crate::store::Session;

/// The sections of the apiserver panel, in focus order (reading order of the full layout).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Section {
    /// Request latency by operation (etcd and apiserver histograms).
    #[default]
    Latency,
    /// Compaction window vs watch-cache and informer lag (risk of 410 Gone).
    Window,
    /// Watch-cache capacity, event rates and history span.
    WatchCache,
    /// etcd health (db size, quota, defrag) and object counts against the replica.
    Etcd,
    /// API Priority and Fairness per priority level.
    Apf,
    /// The controllers' own informers and workqueues (kube-controller-manager,
    /// kube-scheduler).
    Controllers,
}

impl Section {
    /// Every section, in focus order.
    pub const ALL: [Section; 6] = [
        Section::Latency,
        Section::Window,
        Section::WatchCache,
        Section::Etcd,
        Section::Apf,
        Section::Controllers,
    ];

    /// Short label for the section strip.
    pub fn label(self) -> &'static str {
        match self {
            Section::Latency => "Latency",
            Section::Window => "Window",
            Section::WatchCache => "Watch cache",
            Section::Etcd => "etcd",
            Section::Apf => "APF",
            Section::Controllers => "Controllers",
        }
    }

    /// Position in [`Section::ALL`].
    pub fn index(self) -> usize {
        Section::ALL.iter().position(|s| *s == self).unwrap_or(0)
    }
}

/// The apiserver panel: the data shown (replaced whole by a derive, or by
/// [`crate::tui::App::set_apiserver_panels`]) and the panel's own UI state.
#[derive(Default)]
pub(crate) struct ApiserverState {
    pub panels: ApiserverPanels,
    pub focus: Section,
    /// The focused section fills the panel.
    pub zoomed: bool,
    /// First visible row of each section, by [`Section::index`].
    pub scroll: [usize; 6],
    /// Lower-case text every section's rows are filtered by (`/`); empty: all rows.
    pub filter: String,
    /// A scrape or informer observation arrived since the last derive.
    pub changed: bool,
    /// Clock second of the last derive.
    derived_second: u64,
}

impl ApiserverState {
    /// Derives the panel's data: when a scrape or informer observation arrived, and once a
    /// second while the panel is `shown` (the replica-derived parts move with time). Costs
    /// about 2 ms for a 1.34 apiserver's series (`cargo bench --bench metrics_parse`).
    /// Returns whether the panels changed.
    pub fn refresh(&mut self, session: &Session, shown: bool) -> bool {
        let sec = crate::tui::text::unix_second(session.now());
        let tick = shown && sec != self.derived_second;
        if !(self.changed || tick) {
            return false;
        }
        // Nothing to derive from (no scrape configured, no informer): the panels stay as
        // set (tests set literal panels).
        if !session.metrics.any_configured() && session.informers.iter().next().is_none() {
            return false;
        }
        self.changed = false;
        self.derived_second = sec;
        let v = crate::derive::apiserver::build(
            &session.metrics,
            Some(session),
            &session.informers,
            session.now(),
        );
        if v == self.panels {
            return false;
        }
        self.panels = v;
        true
    }

    /// The sections shown, in focus order: the controllers' only when a controller
    /// component (kube-controller-manager, kube-scheduler) is configured.
    pub fn shown(&self) -> &'static [Section] {
        if self.panels.controllers.configured() {
            &Section::ALL
        } else {
            &Section::ALL[..Section::ALL.len() - 1]
        }
    }

    /// Moves the focus to the next (`forward`) or previous section shown, round.
    pub fn next_section(&mut self, forward: bool) {
        let shown = self.shown();
        let n = shown.len();
        let i = shown.iter().position(|s| *s == self.focus).unwrap_or(0);
        let j = if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        };
        self.focus = shown[j];
    }

    /// Scrolls the focused section by `delta` rows, to at most `max_top`.
    pub fn step(&mut self, delta: i64, max_top: usize) {
        let s = &mut self.scroll[self.focus.index()];
        *s = add(*s, delta, max_top);
    }

    /// Sets the row filter (lower-cased) and scrolls every section to its top.
    pub fn set_filter(&mut self, f: String) {
        self.filter = f.to_lowercase();
        self.scroll = [0; 6];
    }
}
