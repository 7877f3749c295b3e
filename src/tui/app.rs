//! The console's state and its update functions.
//!
//! Input enters in three ways only: [`App::ingest`] (observations, applied to the owned
//! session or queued behind a pause, followed by [`App::after_batch`] once per drained
//! batch), [`App::replace_session`] (a replay's seek) and [`App::handle_key`] /
//! [`App::perform`] (named actions from the keymap; what the loop must do, such as starting
//! a recording or seeking, comes back as [`Request`]s). The clock is the session's: the
//! newest observation's stamp. All bookkeeping (selections, anchors, cached renders) happens here; the views in
//! [`super::views`] only read `&App`. [`App::needs_draw`] tells the loop whether anything
//! visible changed since the last frame.

use std::collections::HashMap;
use std::time::SystemTime;

use bytes::Bytes;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::action::Action;
use super::browse::{self, Scan};
pub(crate) use super::detail::DetailState;
use super::keymap::{Keymap, Mode};
use super::state::Viewports;
use super::storage::StorageSummary;
use super::theme::Theme;
use crate::metrics::view::ApiserverView;
use crate::model::{KeyPath, Revision, Stamped};
use crate::store::{EventRecord, Replica, Session};

/// Everything the app needs besides the session.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// Show Secret data in decoded values (`--show-secrets`).
    pub show_secrets: bool,
    /// Encryption keys for values encrypted at rest (`--encryption-config`).
    pub keyring: Option<std::sync::Arc<crate::decrypt::Keyring>>,
    /// Key bindings.
    pub keymap: Keymap,
    /// Colours.
    pub theme: Theme,
    /// Configuration warnings to show (from loading the keymap and theme, and the caller's).
    pub warnings: Vec<String>,
    /// Seconds east of UTC for clock times (0 shows UTC, as the snapshot tests do).
    pub utc_offset: i64,
}

/// The main panels, switched with Tab or 1–4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Panel {
    /// Revision growth, top resources, compactions.
    Growth,
    /// The live event stream.
    Events,
    /// The key browser.
    Keys,
    /// The apiserver side: request latency, watch cache, compaction window vs lag, etcd
    /// health and object counts, flow control (drawn from an [`ApiserverView`]).
    Apiserver,
}

impl Panel {
    /// Every panel, in tab order.
    pub const ALL: [Panel; 4] = [Panel::Growth, Panel::Events, Panel::Keys, Panel::Apiserver];

    /// Tab label.
    pub fn label(self) -> &'static str {
        match self {
            Panel::Growth => "Growth",
            Panel::Events => "Events",
            Panel::Keys => "Keys",
            Panel::Apiserver => "Apiserver",
        }
    }
}

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
}

impl Section {
    /// Every section, in focus order.
    pub const ALL: [Section; 5] = [
        Section::Latency,
        Section::Window,
        Section::WatchCache,
        Section::Etcd,
        Section::Apf,
    ];

    /// Short label for the section strip.
    pub fn label(self) -> &'static str {
        match self {
            Section::Latency => "Latency",
            Section::Window => "Window",
            Section::WatchCache => "Watch cache",
            Section::Etcd => "etcd",
            Section::Apf => "APF",
        }
    }

    /// Position in [`Section::ALL`].
    pub fn index(self) -> usize {
        Section::ALL.iter().position(|s| *s == self).unwrap_or(0)
    }
}

/// The apiserver panel: the data shown (replaced whole by [`App::set_apiserver_view`]) and
/// the panel's own UI state.
#[derive(Default)]
pub(crate) struct ApiserverState {
    pub view: ApiserverView,
    pub focus: Section,
    /// The focused section fills the panel.
    pub zoomed: bool,
    /// First visible row of each section, by [`Section::index`].
    pub scroll: [usize; 5],
    /// Lower-case text every section's rows are filtered by (`/`); empty: all rows.
    pub filter: String,
}

/// Which list of the key browser has the focus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeysFocus {
    Resources,
    Keys,
}

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

pub(crate) struct KeysState {
    pub focus: KeysFocus,
    pub resource: Option<String>,
    /// Resource name → resource prefix (see [`browse::resource_prefix`]).
    pub prefixes: HashMap<String, Bytes>,
    /// (resources, live keys) when `prefixes` was last discovered, so a resource whose
    /// keys cannot be found (outside the prefix) does not trigger a scan per batch.
    pub discovered_at: (usize, u64),
    /// Lower-case filter over `namespace/name`.
    pub filter: String,
    /// The visible rows start strictly after this key (`None`: at the first key).
    pub view_after: Option<Bytes>,
    pub selected: Option<Bytes>,
    /// The encryption summary is open, with this row selected (the last row is the total).
    pub encryption: Option<usize>,
}

pub(crate) struct Input {
    pub target: InputTarget,
    pub text: String,
}

/// What a typed line is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InputTarget {
    /// The event stream's filter.
    Events,
    /// The key browser's filter.
    Keys,
    /// The apiserver panel's row filter (every section).
    Apiserver,
    /// A replay seek: a time (`14:32:10`, RFC 3339), a relative time (`-5m`, `+30s`) or a
    /// revision (`r1234`, or a plain number).
    Seek,
    /// The command palette ([`super::palette`]).
    Palette,
}

/// Live, paused and replay as one cursor over one session: live, the cursor follows the
/// newest observation; paused, it stays where it was while observations queue behind it
/// (the recorder still writes them); in replay the player moves it (play, speed, seek).
#[derive(Debug, Default)]
pub struct Cursor {
    /// The view is frozen at the cursor.
    pub paused: bool,
    /// Live observations that arrived while paused, applied on resume.
    pub(crate) backlog: std::collections::VecDeque<Stamped>,
    /// `Some` in replay: the timeline.
    pub replay: Option<ReplayStatus>,
}

impl Cursor {
    /// Most observations held back while paused live (about a minute of the heaviest
    /// write rate measured); past it the pause ends by itself, with a warning.
    pub const BACKLOG_LIMIT: usize = 2_000_000;

    /// Observations waiting behind a live pause.
    pub fn backlog(&self) -> usize {
        self.backlog.len()
    }
}

/// Replay speed: a multiple of real time, or as fast as the machine can apply.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Speed {
    /// Times real time (1 to 1000).
    Times(u32),
    /// No waiting between observations.
    Max,
}

impl Speed {
    /// The speeds `+` and `-` step through.
    pub const STEPS: [Speed; 7] = [
        Speed::Times(1),
        Speed::Times(2),
        Speed::Times(5),
        Speed::Times(10),
        Speed::Times(100),
        Speed::Times(1000),
        Speed::Max,
    ];

    /// The next faster (`up`) or slower speed, staying at the ends.
    pub fn step(self, up: bool) -> Speed {
        let i = Self::STEPS.iter().position(|s| *s == self).unwrap_or(0);
        let j = if up {
            (i + 1).min(Self::STEPS.len() - 1)
        } else {
            i.saturating_sub(1)
        };
        Self::STEPS[j]
    }

    /// `1×`, `1000×`, `max`.
    pub fn label(self) -> String {
        match self {
            Speed::Times(n) => format!("{n}×"),
            Speed::Max => "max".into(),
        }
    }
}

/// The replay's timeline, as the header shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayStatus {
    /// The recording's path, for the header.
    pub file: String,
    /// First and last observation time in the recording.
    pub start: SystemTime,
    pub end: SystemTime,
    /// Observations in the recording, and the cursor's position among them.
    pub total: u64,
    pub position: u64,
    pub speed: Speed,
    /// The recording was made with `--show-secrets`: Secret data is in it.
    pub secrets_shown: bool,
    /// What was lost to damage, one line (empty when the file is whole).
    pub damage: String,
    /// The marker the cursor last passed or jumped to, one line.
    pub marker: Option<String>,
}

/// The recording indicator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordingStatus {
    pub path: String,
    pub bytes: u64,
}

/// regscope's own memory, for the header: resident bytes (read once a second by the loop)
/// and the `--memory-limit`, when one is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryStatus {
    pub resident: u64,
    pub limit: Option<u64>,
    /// Values held packed in memory: (their raw bytes, the bytes they take), when any are
    /// (see [`crate::store::ReplicaMemory`]).
    pub packed: Option<(u64, u64)>,
}

/// Where to seek in a replay.
#[derive(Clone, Debug, PartialEq)]
pub enum SeekTo {
    /// Seconds from the cursor (negative: back).
    Relative(i64),
    /// A wall-clock time.
    Time(SystemTime),
    /// The first point at which the replica's revision reaches this.
    Revision(crate::model::Revision),
}

/// Something the app asks of the loop that owns the sources, the recorder or the player.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    StartRecording,
    StopRecording,
    Seek(SeekTo),
    /// Apply exactly one more observation (replay).
    Step,
    /// Jump to the next (`true`) or previous marker.
    Marker(bool),
    /// A one-line answer to what the user just typed (a seek that cannot be read): shown
    /// where replay shows its messages, replaced by the next.
    Notice(String),
}

/// The console: the replica it displays plus all UI state. See the module docs.
pub struct App {
    /// The session shown: replica, metric series, informer lag and the clock. Live, it
    /// follows the sources (unless paused); in replay the player replaces it on a seek.
    pub(crate) session: Session,
    pub(crate) s: Settings,
    /// Live, paused and replay as one cursor over the session's stream.
    pub(crate) cursor: Cursor,
    /// The recording in progress (the header's indicator), set by the loop.
    pub(crate) recording: Option<RecordingStatus>,
    /// regscope's own memory (the header's `mem`), set by the loop.
    pub(crate) memory: Option<MemoryStatus>,
    /// What the loop must do for the app (start or stop a recording, seek the replay).
    requests: Vec<Request>,
    pub(crate) panel: Panel,
    pub(crate) help: Option<usize>,
    pub(crate) input: Option<Input>,
    pub(crate) source_ended: bool,
    pub(crate) growth_scroll: usize,
    /// The command palette's chosen row (an index into its candidates).
    pub(crate) palette_selected: usize,
    pub(crate) events: EventsState,
    pub(crate) keys: KeysState,
    pub(crate) detail: Option<DetailState>,
    /// Show decoded values as JSON instead of YAML (`o`).
    pub(crate) json_output: bool,
    /// The encryption summary, counted when its view is open (see [`App::refresh_storage`]).
    pub(crate) storage: Option<StorageSummary>,
    /// The apiserver panel's data and state.
    pub(crate) apiserver: ApiserverState,
    /// A scrape or informer observation arrived since the last derive.
    apiserver_changed: bool,
    /// Clock second of the last derive.
    apiserver_second: u64,
    /// Clock second of the last count, to count at most once a second.
    storage_second: u64,
    pub(crate) view: Viewports,
    pub(crate) debug_panic: bool,
    /// The newest message about something the user did (a recording started or saved),
    /// shown in the message row instead of a warning until a newer warning arrives.
    pub(crate) notice: Option<(usize, String)>,
    /// `S` was pressed: the next frame drawn is saved (see [`super::screenshot`]).
    screenshot: bool,
    quit: bool,
    dirty: bool,
    clear_requested: bool,
    drawn_seq: u64,
}

impl App {
    /// A new app over `session`, showing the Growth panel, following the stream live.
    pub fn new(session: Session, settings: Settings) -> App {
        let seen_rev = session.replica.events().back().map_or(0, |e| e.revision);
        let mut app = App {
            session,
            s: settings,
            cursor: Cursor::default(),
            recording: None,
            memory: None,
            requests: Vec::new(),
            panel: Panel::Growth,
            help: None,
            input: None,
            source_ended: false,
            growth_scroll: 0,
            palette_selected: 0,
            events: EventsState {
                filter: String::new(),
                follow: true,
                selected: 0,
                scroll: 0,
                seen_rev,
            },
            keys: KeysState {
                focus: KeysFocus::Resources,
                resource: None,
                prefixes: HashMap::new(),
                discovered_at: (usize::MAX, 0),
                filter: String::new(),
                view_after: None,
                selected: None,
                encryption: None,
            },
            detail: None,
            json_output: false,
            storage: None,
            apiserver: ApiserverState::default(),
            apiserver_changed: false,
            apiserver_second: 0,
            storage_second: 0,
            view: Viewports::default(),
            debug_panic: false,
            notice: None,
            screenshot: false,
            quit: false,
            dirty: true,
            clear_requested: false,
            drawn_seq: u64::MAX,
        };
        app.after_batch();
        app
    }

    /// The replica shown.
    pub fn replica(&self) -> &Replica {
        &self.session.replica
    }

    /// The panel shown.
    pub fn panel(&self) -> Panel {
        self.panel
    }

    /// What the apiserver panel shows (empty until the first [`App::set_apiserver_view`]).
    pub fn apiserver_view(&self) -> &ApiserverView {
        &self.apiserver.view
    }

    /// Replaces what the apiserver panel shows (computed from the metric store after a
    /// batch) and marks the screen dirty. Scroll positions are kept; drawing clamps them.
    pub fn set_apiserver_view(&mut self, v: ApiserverView) {
        self.apiserver.view = v;
        self.dirty = true;
    }

    /// The focused section of the apiserver panel and whether it is zoomed.
    pub fn apiserver_focus(&self) -> (Section, bool) {
        (self.apiserver.focus, self.apiserver.zoomed)
    }

    /// Whether the user asked to quit.
    pub fn should_quit(&self) -> bool {
        self.quit
    }

    /// Makes the next draw panic (`REGSCOPE_DEBUG_PANIC=1`, a debug hook for testing that a
    /// panic leaves the terminal restored).
    pub fn set_debug_panic(&mut self, on: bool) {
        self.debug_panic = on;
    }

    /// Shows `msg` in the message row as information (not a warning) until a newer
    /// warning arrives.
    /// Whether the frame about to be drawn should be saved as a screenshot (once).
    pub(crate) fn take_screenshot(&mut self) -> bool {
        std::mem::take(&mut self.screenshot)
    }

    pub(crate) fn notify(&mut self, msg: String) {
        self.notice = Some((self.s.warnings.len(), msg));
        self.dirty = true;
    }

    /// The message row's notice, while no warning came after it.
    pub(crate) fn current_notice(&self) -> Option<&str> {
        self.notice
            .as_ref()
            .filter(|(n, _)| *n == self.s.warnings.len())
            .map(|(_, m)| m.as_str())
    }

    /// Takes one observation from the live stream: applied to the session, or held back
    /// while paused (the whole view stays as it was; the backlog is applied on resume, or
    /// when it grows past [`Cursor::BACKLOG_LIMIT`]). Call [`App::after_batch`] after a
    /// batch.
    pub fn ingest(&mut self, st: &Stamped) {
        if self.cursor.paused && self.cursor.replay.is_none() {
            self.cursor.backlog.push_back(st.clone());
            // The timeline row counts what is queued.
            self.dirty = true;
            if self.cursor.backlog.len() >= Cursor::BACKLOG_LIMIT {
                self.s.warnings.push(format!(
                    "pause ended: {} observations arrived while paused (the most held back)",
                    self.cursor.backlog.len()
                ));
                self.resume();
            }
            return;
        }
        self.apply(st);
    }

    /// Applies one observation to the session. A clock tick marks the screen dirty only
    /// when rates can still change (something was observed in the last minute), so an idle
    /// console never redraws.
    pub fn apply(&mut self, st: &Stamped) {
        let before = self.now_second();
        if self.session.apply(st).apiserver {
            self.apiserver_changed = true;
        }
        let sec = self.now_second();
        if sec != before {
            let recent = self
                .session
                .replica
                .growth()
                .next_back()
                .is_some_and(|g| g.second + 62 >= sec);
            if recent {
                self.dirty = true;
            }
        }
    }

    /// Advances the clock with a [`crate::model::Observation::Tick`] stamped `at`, as the
    /// live sources do every second (tests use it to set the time shown).
    pub fn tick(&mut self, at: SystemTime) {
        self.ingest_all(&[Stamped {
            at,
            obs: crate::model::Observation::Tick,
        }]);
    }

    /// Replaces the session (a replay's seek) and keeps the UI state; selections that no
    /// longer exist are normalised on the next batch.
    pub fn replace_session(&mut self, session: Session) {
        self.session = session;
        self.session_replaced();
    }

    /// `self.session` was replaced by another (a replay's seek): forget what was derived
    /// from the old one.
    pub fn session_replaced(&mut self) {
        self.apiserver_changed = true;
        self.events.seen_rev = self.newest_event_rev();
        self.storage = None;
        self.dirty = true;
        self.drawn_seq = u64::MAX;
        self.after_batch();
    }

    /// The session was changed outside [`App::ingest`] (a replay applied observations to
    /// it directly): derive again and do the batch bookkeeping.
    pub fn after_external_apply(&mut self) {
        self.apiserver_changed = true;
        self.after_batch();
    }

    /// The session shown.
    pub fn session(&self) -> &Session {
        &self.session
    }

    fn resume(&mut self) {
        self.cursor.paused = false;
        let backlog = std::mem::take(&mut self.cursor.backlog);
        for st in &backlog {
            self.apply(st);
        }
        self.dirty = true;
    }

    /// Requests for the loop, in order (and clears them).
    pub fn take_requests(&mut self) -> Vec<Request> {
        std::mem::take(&mut self.requests)
    }

    /// Live, paused or replay, with the replay's timeline.
    pub fn cursor(&self) -> &Cursor {
        &self.cursor
    }

    /// Sets the timeline shown in replay (the driver updates it as it plays).
    pub fn set_replay(&mut self, r: Option<ReplayStatus>) {
        if self.cursor.replay != r {
            self.cursor.replay = r;
            self.dirty = true;
        }
    }

    /// Sets the recording indicator (path and bytes written) or clears it.
    pub fn set_recording(&mut self, r: Option<RecordingStatus>) {
        if self.recording != r {
            self.recording = r;
            self.dirty = true;
        }
    }

    /// Sets the header's memory figure.
    pub fn set_memory(&mut self, m: Option<MemoryStatus>) {
        if self.memory != m {
            self.memory = m;
            self.dirty = true;
        }
    }

    /// Whether the view is paused (live: the stream is held back; replay: not playing).
    pub fn paused(&self) -> bool {
        self.cursor.paused
    }

    /// Derives the apiserver panel's data: when a scrape or informer observation arrived,
    /// and once a second while the panel is shown (the replica-derived parts move with
    /// time). Costs about 2 ms for a 1.34 apiserver's series (`cargo bench --bench
    /// metrics_parse`).
    fn refresh_apiserver(&mut self) {
        let sec = super::format::unix_second(self.session.now());
        let tick = self.panel == Panel::Apiserver && sec != self.apiserver_second;
        if !(self.apiserver_changed || tick) {
            return;
        }
        // Nothing to derive from (no scrape configured, no informer): the view stays as
        // set (tests set literal views).
        if !self.session.metrics.any_configured() && self.session.informers.iter().next().is_none()
        {
            return;
        }
        self.apiserver_changed = false;
        self.apiserver_second = sec;
        let v = crate::metrics::derive(
            &self.session.metrics,
            Some(&self.session.replica),
            &self.session.informers,
            self.session.now(),
        );
        if v != self.apiserver.view {
            self.set_apiserver_view(v);
        }
    }

    /// Applies a batch of observations and does the bookkeeping once.
    pub fn ingest_all<'a>(&mut self, batch: impl IntoIterator<Item = &'a Stamped>) {
        for st in batch {
            self.ingest(st);
        }
        self.after_batch();
    }

    /// The source's channel closed: the data shown is final.
    pub fn set_source_ended(&mut self) {
        self.source_ended = true;
        self.dirty = true;
    }

    /// Whether a frame is due: UI state changed or the replica changed since the last draw.
    pub fn needs_draw(&self) -> bool {
        self.dirty || self.drawn_seq != self.session.replica.change_seq()
    }

    /// Gets the session ready for the next frame: the key browser, a key's neighbours and
    /// the encryption summary walk key ranges, which cost a binary search once the key
    /// order is settled (see [`crate::store::Replica::settle`]); other panels need no
    /// order, and settling waits until one of those is shown.
    pub fn prepare_frame(&mut self) {
        if self.panel == Panel::Keys {
            self.session.settle();
        }
    }

    /// Records that a frame was drawn.
    pub fn mark_drawn(&mut self) {
        self.dirty = false;
        self.drawn_seq = self.session.replica.change_seq();
    }

    /// Forces the next frame (e.g. after a resize).
    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    /// Returns and clears a pending "clear the screen" request (the `redraw` action).
    pub fn take_clear_request(&mut self) -> bool {
        std::mem::take(&mut self.clear_requested)
    }

    /// The keymap mode for the current state.
    pub fn mode(&self) -> Mode {
        if self.input.is_some() {
            Mode::Filter
        } else {
            self.mode_under_input()
        }
    }

    /// Handles a terminal event: keys go through the keymap, resizes force a frame.
    pub fn on_event(&mut self, ev: &Event) {
        match ev {
            Event::Key(k) => self.handle_key(k),
            Event::Resize(_, _) => self.dirty = true,
            Event::Mouse(m) => self.handle_mouse(m),
            _ => {}
        }
    }

    /// Mouse (with `--mouse`): the wheel scrolls what has the focus, three rows a notch; a
    /// click on a tab switches panels; a click on a row of the event list or of the key
    /// browser's lists selects it, and a click on the selected row opens it.
    pub fn handle_mouse(&mut self, m: &crossterm::event::MouseEvent) {
        use crossterm::event::{MouseButton, MouseEventKind};
        if self.input.is_some() {
            return;
        }
        let mode = self.mode();
        match m.kind {
            MouseEventKind::ScrollDown => self.step(mode, 3),
            MouseEventKind::ScrollUp => self.step(mode, -3),
            MouseEventKind::Down(MouseButton::Left) => {
                self.notice = None;
                if m.row == 0 {
                    let tabs = self.view.tabs.get();
                    if let Some(i) = tabs
                        .iter()
                        .position(|(a, b)| m.column >= *a && m.column < *b)
                    {
                        self.switch(Panel::ALL[i]);
                    }
                } else if mode == Mode::Events {
                    if let Some(i) = self.view.events_rows.get().index_at(m.column, m.row) {
                        if i < self.events_len() {
                            if i == self.events.selected {
                                self.perform(Action::Open);
                            } else {
                                self.step(mode, i as i64 - self.events.selected as i64);
                            }
                        }
                    }
                } else if mode == Mode::Keys {
                    if let Some(i) = self.view.resources_rows.get().index_at(m.column, m.row) {
                        self.keys.focus = KeysFocus::Resources;
                        let names = self.resource_names();
                        let cur = self
                            .keys
                            .resource
                            .as_ref()
                            .and_then(|r| names.iter().position(|n| n == r))
                            .unwrap_or(0);
                        if i < names.len() {
                            self.step(Mode::Keys, i as i64 - cur as i64);
                        }
                    } else if let Some(row) = self.view.keys_rows.get().index_at(m.column, m.row) {
                        let was = self.keys.focus;
                        self.keys.focus = KeysFocus::Keys;
                        self.normalize_keys();
                        let first = self.view.keys_rows.get().first;
                        let sel = self.view.keys_selected.get();
                        match sel {
                            Some(s) if s == row && was == KeysFocus::Keys => {
                                self.perform(Action::Open)
                            }
                            Some(s) => self.step(Mode::Keys, row as i64 - s as i64),
                            None => self.step(Mode::Keys, (row - first) as i64),
                        }
                    }
                }
            }
            _ => return,
        }
        self.dirty = true;
    }

    /// Looks the key up in the keymap for the current mode and performs the action; in
    /// filter mode, unbound printable keys are typed.
    pub fn handle_key(&mut self, key: &KeyEvent) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        // A notice answers the last key; the next one dismisses it.
        if self.notice.take().is_some() {
            self.dirty = true;
        }
        // The palette's list moves with the arrows (and Tab, ctrl-p/ctrl-n) whatever the
        // keymap binds, since the keys typed into it are text.
        if self.palette_open() {
            let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
            let delta: Option<i64> = match key.code {
                KeyCode::Up | KeyCode::BackTab => Some(-1),
                KeyCode::Down | KeyCode::Tab => Some(1),
                KeyCode::PageUp => Some(-10),
                KeyCode::PageDown => Some(10),
                KeyCode::Char('p') if ctrl => Some(-1),
                KeyCode::Char('n') if ctrl => Some(1),
                _ => None,
            };
            if let Some(delta) = delta {
                let text = self.input_text().unwrap_or("").to_string();
                let n = super::palette::entries(self, &text).len();
                self.palette_selected = add(self.palette_selected, delta, n.saturating_sub(1));
                self.dirty = true;
                return;
            }
        }
        let mode = self.mode();
        if let Some(action) = self.s.keymap.lookup(mode, key) {
            self.perform(action);
            return;
        }
        if let (Some(input), KeyCode::Char(c)) = (self.input.as_mut(), key.code) {
            if !key
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
            {
                input.text.push(c);
                self.palette_selected = 0;
                self.dirty = true;
            }
        }
    }

    /// Performs a named action in the current context.
    pub fn perform(&mut self, action: Action) {
        self.dirty = true;
        let mode = self.mode();
        match action {
            Action::Palette => {
                self.help = None;
                self.palette_selected = 0;
                self.input = Some(Input {
                    target: InputTarget::Palette,
                    text: String::new(),
                });
            }
            Action::Quit => self.quit = true,
            Action::ToggleHelp => {
                self.help = if self.help.is_some() { None } else { Some(0) };
            }
            Action::Back => {
                if self.help.is_some() {
                    self.help = None;
                } else if self.detail.is_some() {
                    self.detail = None;
                } else if self.keys.encryption.is_some() {
                    self.keys.encryption = None;
                } else if mode == Mode::Apiserver {
                    if self.apiserver.filter.is_empty() {
                        self.apiserver.zoomed = false;
                    } else {
                        self.set_apiserver_filter(String::new());
                    }
                }
            }
            Action::NextPanel | Action::PrevPanel => {
                let i = Panel::ALL
                    .iter()
                    .position(|p| *p == self.panel)
                    .unwrap_or(0);
                let n = Panel::ALL.len();
                let j = if action == Action::NextPanel {
                    (i + 1) % n
                } else {
                    (i + n - 1) % n
                };
                self.switch(Panel::ALL[j]);
            }
            Action::ShowGrowth => self.switch(Panel::Growth),
            Action::ShowEvents => self.switch(Panel::Events),
            Action::ShowKeys => self.switch(Panel::Keys),
            Action::ShowApiserver => self.switch(Panel::Apiserver),
            Action::NextSection | Action::PrevSection => {
                if mode == Mode::Apiserver {
                    let n = Section::ALL.len();
                    let i = self.apiserver.focus.index();
                    let j = if action == Action::NextSection {
                        (i + 1) % n
                    } else {
                        (i + n - 1) % n
                    };
                    self.apiserver.focus = Section::ALL[j];
                }
            }
            Action::ZoomSection => {
                if mode == Mode::Apiserver {
                    self.apiserver.zoomed = !self.apiserver.zoomed;
                }
            }
            Action::Redraw => self.clear_requested = true,
            Action::Up => self.step(mode, -1),
            Action::Down => self.step(mode, 1),
            Action::PageUp => {
                let p = self.page(mode);
                self.step(mode, -(p as i64));
            }
            Action::PageDown => {
                let p = self.page(mode);
                self.step(mode, p as i64);
            }
            Action::Top => self.step(mode, i64::MIN / 2),
            Action::Bottom => self.step(mode, i64::MAX / 2),
            Action::FocusLeft => {
                if mode == Mode::Keys {
                    self.keys.focus = KeysFocus::Resources;
                }
            }
            Action::FocusRight => {
                if mode == Mode::Keys {
                    self.keys.focus = KeysFocus::Keys;
                    self.normalize_keys();
                }
            }
            Action::Open => self.open(mode),
            Action::Filter => {
                let (target, text) = match self.panel {
                    Panel::Events => (InputTarget::Events, self.events.filter.clone()),
                    Panel::Keys => (InputTarget::Keys, self.keys.filter.clone()),
                    Panel::Apiserver => (InputTarget::Apiserver, self.apiserver.filter.clone()),
                    Panel::Growth => return,
                };
                if target == InputTarget::Keys {
                    self.detail = None;
                    self.keys.focus = KeysFocus::Keys;
                }
                self.input = Some(Input { target, text });
            }
            Action::ClearFilter => match mode {
                Mode::Events => self.set_events_filter(String::new()),
                Mode::Keys => {
                    if self.keys.filter.is_empty() {
                        self.keys.focus = KeysFocus::Resources;
                    } else {
                        self.set_keys_filter(String::new());
                    }
                }
                _ => {}
            },
            Action::TogglePause => {
                if self.cursor.paused {
                    if self.cursor.replay.is_some() {
                        self.cursor.paused = false;
                    } else {
                        self.resume();
                    }
                } else {
                    self.cursor.paused = true;
                }
            }
            Action::ToggleRecording => {
                if self.cursor.replay.is_some() {
                    self.s
                        .warnings
                        .push("recording is for live sessions; this one is a replay".into());
                } else if self.recording.is_some() {
                    self.requests.push(Request::StopRecording);
                } else {
                    self.requests.push(Request::StartRecording);
                }
            }
            Action::SpeedUp | Action::SlowDown => {
                if let Some(r) = self.cursor.replay.as_mut() {
                    r.speed = r.speed.step(action == Action::SpeedUp);
                }
            }
            Action::StepEvent => {
                if self.cursor.replay.is_some() {
                    self.cursor.paused = true;
                    self.requests.push(Request::Step);
                }
            }
            Action::SeekBack | Action::SeekForward => {
                if self.cursor.replay.is_some() {
                    let secs = if action == Action::SeekBack { -10 } else { 10 };
                    self.requests.push(Request::Seek(SeekTo::Relative(secs)));
                }
            }
            Action::NextMarker | Action::PrevMarker => {
                if self.cursor.replay.is_some() {
                    self.requests
                        .push(Request::Marker(action == Action::NextMarker));
                }
            }
            Action::Screenshot => {
                self.screenshot = true;
                self.dirty = true;
            }
            Action::SeekPrompt => {
                if self.cursor.replay.is_some() {
                    self.input = Some(Input {
                        target: InputTarget::Seek,
                        text: String::new(),
                    });
                } else {
                    self.notify(
                        "seeking is for replays (regscope replay FILE); live, `:` then r1234 selects a revision's event".into(),
                    );
                }
            }
            Action::ToggleFollow => {
                self.events.follow = !self.events.follow;
                if self.events.follow {
                    self.events.selected = 0;
                    self.events.scroll = 0;
                }
            }
            Action::OlderVersion => self.select_version(-1),
            Action::NewerVersion => self.select_version(1),
            Action::ToggleJson => self.toggle_json(),
            Action::ToggleDiff => self.toggle_diff(),
            Action::MarkVersion => self.mark_version(),
            Action::ToggleEncryption => {
                if self.keys.encryption.is_some() {
                    self.keys.encryption = None;
                } else {
                    self.detail = None;
                    self.panel = Panel::Keys;
                    self.help = None;
                    self.keys.encryption = Some(0);
                    self.refresh_storage(true);
                }
            }
            Action::Submit => {
                if let Some(input) = self.input.take() {
                    match input.target {
                        InputTarget::Events => self.set_events_filter(input.text),
                        InputTarget::Keys => self.set_keys_filter(input.text),
                        InputTarget::Apiserver => self.set_apiserver_filter(input.text),
                        // Enter with nothing typed closes the prompt.
                        InputTarget::Seek if input.text.trim().is_empty() => {}
                        InputTarget::Seek => {
                            match parse_seek(&input.text, self.session.now(), self.s.utc_offset) {
                                Ok(to) => self.requests.push(Request::Seek(to)),
                                Err(e) => self.requests.push(Request::Notice(e)),
                            }
                        }
                        // Enter on an empty palette closes it: nothing was asked for.
                        InputTarget::Palette
                            if input.text.trim().is_empty() && self.palette_selected == 0 => {}
                        InputTarget::Palette => {
                            let all = super::palette::entries(self, &input.text);
                            match all.into_iter().nth(self.palette_selected) {
                                Some(e) => self.go(e.goto),
                                None => self.notify(format!(
                                    "palette: nothing matches '{}'",
                                    input.text.trim()
                                )),
                            }
                        }
                    }
                }
            }
            Action::Cancel => self.input = None,
            Action::DeleteChar => {
                if let Some(i) = self.input.as_mut() {
                    i.text.pop();
                    self.palette_selected = 0;
                }
            }
            Action::ClearInput => {
                if let Some(i) = self.input.as_mut() {
                    i.text.clear();
                }
            }
        }
    }

    /// Whether the command palette is open.
    pub(crate) fn palette_open(&self) -> bool {
        self.input
            .as_ref()
            .is_some_and(|i| i.target == InputTarget::Palette)
    }

    /// The keymap mode under the palette or a filter being typed (what [`Self::mode`] says
    /// once it closes), for the keys the palette shows beside each action.
    pub(crate) fn mode_under_input(&self) -> Mode {
        if self.help.is_some() {
            return Mode::Help;
        }
        match self.panel {
            Panel::Growth => Mode::Growth,
            Panel::Events => Mode::Events,
            Panel::Keys if self.detail.is_some() => Mode::Detail,
            Panel::Keys if self.keys.encryption.is_some() => Mode::Encryption,
            Panel::Keys => Mode::Keys,
            Panel::Apiserver => Mode::Apiserver,
        }
    }

    /// Shows `key` selected in the key browser, under its resource.
    fn select_key(&mut self, key: Bytes) {
        let resource = KeyPath::parse(self.session.replica.prefix(), &key)
            .resource
            .into_owned();
        self.panel = Panel::Keys;
        self.keys.encryption = None;
        self.keys.resource = Some(resource);
        self.keys.filter.clear();
        self.keys.focus = KeysFocus::Keys;
        self.keys.selected = Some(key);
        self.keys.view_after = None;
        self.normalize_keys();
    }

    /// Runs what a palette entry names.
    fn go(&mut self, goto: super::palette::Goto) {
        use super::palette::Goto;
        match goto {
            Goto::Action(a) => self.perform(a),
            Goto::Seek(to) => self.requests.push(Request::Seek(to)),
            Goto::Resource(r) => {
                self.switch(Panel::Keys);
                self.detail = None;
                self.keys.encryption = None;
                self.keys.resource = Some(r);
                self.keys.filter.clear();
                self.keys.focus = KeysFocus::Resources;
                self.keys.selected = None;
                self.keys.view_after = None;
                self.normalize_keys();
            }
            Goto::Key(key) => {
                self.help = None;
                self.select_key(key.clone());
                self.open_detail(key);
            }
            Goto::Revision(rev) => {
                self.switch(Panel::Events);
                self.set_events_filter(String::new());
                let found = self.events_filtered().position(|e| e.revision == rev);
                match found {
                    Some(i) => {
                        self.events.selected = i;
                        self.events.follow = i == 0;
                        self.events_keep_visible();
                    }
                    None => {
                        let log = self.session.replica.events();
                        let span = match (log.front(), log.back()) {
                            (Some(a), Some(b)) => {
                                format!("it holds revisions {} to {}", a.revision, b.revision)
                            }
                            _ => "it is empty".to_string(),
                        };
                        self.notify(format!(
                            "revision {rev} is not in the event log ({span}); open the key at it with [ and ] in its history"
                        ));
                    }
                }
            }
        }
    }

    fn switch(&mut self, p: Panel) {
        self.panel = p;
        self.help = None;
        if p == Panel::Keys {
            self.normalize_keys();
        }
    }

    fn page(&self, mode: Mode) -> usize {
        let rows = match mode {
            Mode::Events => self.view.events.get(),
            Mode::Keys if self.keys.focus == KeysFocus::Keys => self.view.keys.get(),
            Mode::Keys => self.view.resources.get(),
            Mode::Detail => self.view.detail.get(),
            Mode::Encryption => self.view.encryption.get(),
            Mode::Help => self.view.help.rows(),
            Mode::Apiserver => self.view.apiserver[self.apiserver.focus.index()].rows(),
            _ => self.view.growth.get(),
        };
        rows.max(2) - 1
    }

    /// Moves the selection of the list that `mode` shows by `delta` rows (clamped).
    fn step(&mut self, mode: Mode, delta: i64) {
        match mode {
            Mode::Help => {
                let max = self.view.help.max_top();
                self.help = self.help.map(|s| add(s, delta, max));
            }
            Mode::Growth => {
                let n = self.session.replica.resources().len();
                self.growth_scroll = add(self.growth_scroll, delta, n.saturating_sub(1));
            }
            Mode::Events => {
                let n = self.events_len();
                self.events.selected = add(self.events.selected, delta, n.saturating_sub(1));
                // Leaving the newest row stops following; coming back to it resumes.
                self.events.follow = self.events.selected == 0;
                self.events_keep_visible();
            }
            Mode::Keys => match self.keys.focus {
                KeysFocus::Resources => {
                    let names = self.resource_names();
                    let i = self
                        .keys
                        .resource
                        .as_ref()
                        .and_then(|r| names.iter().position(|n| n == r))
                        .unwrap_or(0);
                    let j = add(i, delta, names.len().saturating_sub(1));
                    if let Some(name) = names.get(j) {
                        if self.keys.resource.as_ref() != Some(name) {
                            self.keys.resource = Some(name.clone());
                            self.keys.view_after = None;
                            self.keys.selected = None;
                            self.keys.filter.clear();
                        }
                    }
                    self.normalize_keys();
                }
                KeysFocus::Keys => self.step_keys(delta),
            },
            Mode::Detail => {
                if let Some(d) = self.detail.as_mut() {
                    let n = d.body_len();
                    d.scroll = add(d.scroll, delta, n.saturating_sub(1));
                }
            }
            Mode::Encryption => {
                // Rows: every resource, then the total.
                let n = self.storage.as_ref().map_or(0, |s| s.rows.len()) + 1;
                self.keys.encryption = self.keys.encryption.map(|i| add(i, delta, n - 1));
            }
            Mode::Apiserver => {
                let section = self.apiserver.focus;
                let max = self.view.apiserver[section.index()].max_top();
                let s = &mut self.apiserver.scroll[section.index()];
                *s = add(*s, delta, max);
            }
            Mode::Global | Mode::Filter => {}
        }
    }

    fn open(&mut self, mode: Mode) {
        match mode {
            Mode::Events => {
                let Some(ev) = self.events_row(self.events.selected) else {
                    return;
                };
                let (key, revision) = (ev.key.clone(), ev.revision);
                self.select_key(key.clone());
                // The object as this event left it, not as it is now.
                self.open_detail_at(key, Some(revision));
            }
            Mode::Keys => match self.keys.focus {
                KeysFocus::Resources => {
                    self.keys.focus = KeysFocus::Keys;
                    self.normalize_keys();
                }
                KeysFocus::Keys => {
                    if let Some(k) = self.keys.selected.clone() {
                        self.open_detail(k);
                    }
                }
            },
            Mode::Encryption => {
                let row = self.keys.encryption.and_then(|i| {
                    self.storage
                        .as_ref()
                        .and_then(|s| s.rows.get(i))
                        .map(|r| r.resource.clone())
                });
                if let Some(resource) = row {
                    self.keys.encryption = None;
                    if self.keys.resource.as_ref() != Some(&resource) {
                        self.keys.resource = Some(resource);
                        self.keys.view_after = None;
                        self.keys.selected = None;
                        self.keys.filter.clear();
                    }
                    self.keys.focus = KeysFocus::Keys;
                    self.normalize_keys();
                }
            }
            _ => {}
        }
    }

    /// Bookkeeping after a batch of observations: keep the event selection on the same
    /// event as new ones arrive, refresh the open key, keep the key browser's anchors valid.
    pub fn after_batch(&mut self) {
        // Events: new arrivals insert rows above the selection.
        let newest = self.newest_event_rev();
        if newest > self.events.seen_rev {
            if self.events.follow {
                self.events.selected = 0;
                self.events.scroll = 0;
            } else {
                let f = self.events.filter.to_lowercase();
                let added = self
                    .session
                    .replica
                    .events()
                    .iter()
                    .rev()
                    .take_while(|e| e.revision > self.events.seen_rev)
                    .filter(|e| event_matches(&self.session.replica, e, &f))
                    .count();
                self.events.selected += added;
                self.events.scroll += added;
            }
            self.events.seen_rev = newest;
        }
        self.detail_after_batch();
        self.refresh_storage(false);
        self.refresh_apiserver();
        self.normalize_keys();
    }

    /// Counts the encryption summary when its view is open: always when `force` (the view
    /// was just opened), else when the replica changed and not yet in this clock second, so
    /// a large replica under heavy writes is counted at most once a second.
    pub(crate) fn refresh_storage(&mut self, force: bool) {
        if self.keys.encryption.is_none() {
            // Closed: drop the counts so that reopening counts afresh.
            self.storage = None;
            return;
        }
        let sec = self.now_second();
        let stale = self
            .storage
            .as_ref()
            .is_none_or(|s| s.seq != self.session.replica.change_seq());
        if force || (stale && sec != self.storage_second) || self.storage.is_none() {
            self.storage = Some(StorageSummary::compute(&self.session.replica));
            self.storage_second = sec;
            self.dirty = true;
        }
        let n = self.storage.as_ref().map_or(0, |s| s.rows.len());
        self.keys.encryption = self.keys.encryption.map(|i| i.min(n));
    }

    fn newest_event_rev(&self) -> Revision {
        self.session
            .replica
            .events()
            .back()
            .map_or(0, |e| e.revision)
    }

    fn set_events_filter(&mut self, f: String) {
        self.events.filter = f;
        self.events.selected = 0;
        self.events.scroll = 0;
    }

    fn set_apiserver_filter(&mut self, f: String) {
        self.apiserver.filter = f.to_lowercase();
        self.apiserver.scroll = [0; 5];
        self.dirty = true;
    }

    fn set_keys_filter(&mut self, f: String) {
        self.keys.filter = f.to_lowercase();
        self.keys.view_after = None;
        self.keys.selected = None;
        self.normalize_keys();
    }

    /// The event list shown: the session's event ring (frozen with the rest of the view
    /// while paused).
    pub(crate) fn event_source(&self) -> impl DoubleEndedIterator<Item = &EventRecord> + '_ {
        self.session.replica.events().iter()
    }

    /// Filtered events, newest first.
    pub(crate) fn events_filtered(&self) -> impl Iterator<Item = &EventRecord> + '_ {
        let f = self.events.filter.to_lowercase();
        self.event_source()
            .rev()
            .filter(move |e| event_matches(&self.session.replica, e, &f))
    }

    pub(crate) fn events_len(&self) -> usize {
        if self.events.filter.is_empty() {
            self.session.replica.events().len()
        } else {
            self.events_filtered().count()
        }
    }

    fn events_row(&self, i: usize) -> Option<&EventRecord> {
        self.events_filtered().nth(i)
    }

    fn events_keep_visible(&mut self) {
        let rows = self.view.events.get().max(1);
        let e = &mut self.events;
        if e.selected < e.scroll {
            e.scroll = e.selected;
        } else if e.selected >= e.scroll + rows {
            e.scroll = e.selected + 1 - rows;
        }
    }

    /// Resource names for the browser, sorted.
    pub(crate) fn resource_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .session
            .replica
            .resources()
            .iter()
            .map(|r| r.resource.clone())
            .collect();
        v.sort();
        v
    }

    /// The resource prefix of the selected resource, when known.
    pub(crate) fn keys_prefix(&self) -> Option<&Bytes> {
        self.keys
            .resource
            .as_ref()
            .and_then(|r| self.keys.prefixes.get(r))
    }

    /// The visible key rows (`rows` of them at most). When the rows after the anchor do not
    /// fill the view (keys deleted near the end, a taller terminal), keys before the anchor
    /// fill it from above.
    pub(crate) fn key_rows(&self, rows: usize) -> Scan {
        let Some(p) = self.keys_prefix() else {
            return Scan::default();
        };
        let f = &self.keys.filter;
        let mut scan = browse::after(
            &self.session.replica,
            p,
            self.keys.view_after.as_deref(),
            rows,
            f,
        );
        if scan.keys.len() < rows && self.keys.view_after.is_some() {
            let bound = scan.keys.first().cloned();
            let more = browse::before(
                &self.session.replica,
                p,
                bound.as_deref(),
                rows - scan.keys.len(),
                f,
            );
            let mut keys: Vec<Bytes> = more.keys.into_iter().rev().collect();
            keys.append(&mut scan.keys);
            scan.keys = keys;
            scan.limited |= more.limited;
        }
        scan
    }

    /// Keeps the key browser consistent with the replica: a resource chosen, its prefix
    /// known, the selection on a live matching key and inside the visible rows.
    fn normalize_keys(&mut self) {
        // The browser walks key ranges: bring the key order up to date first.
        self.session.settle();
        if self.keys.resource.is_none() {
            let mut with_keys: Vec<&str> = self
                .session
                .replica
                .resources()
                .iter()
                .filter(|r| r.keys > 0)
                .map(|r| r.resource.as_str())
                .collect();
            with_keys.sort();
            self.keys.resource = with_keys.first().map(|s| s.to_string());
        }
        let Some(res) = self.keys.resource.clone() else {
            return;
        };
        let state = (
            self.session.replica.resources().len(),
            self.session.replica.live_keys(),
        );
        if !self.keys.prefixes.contains_key(&res)
            && self.keys.discovered_at != state
            && self
                .session
                .replica
                .resources()
                .iter()
                .any(|r| r.resource == res && r.keys > 0)
        {
            self.keys.prefixes = browse::discover_prefixes(&self.session.replica);
            self.keys.discovered_at = state;
        }
        let Some(prefix) = self.keys.prefixes.get(&res).cloned() else {
            return;
        };
        let f = self.keys.filter.clone();
        let ok = self.keys.selected.as_ref().is_some_and(|k| {
            self.session.replica.get(k).is_some()
                && k.starts_with(&prefix)
                && browse::matches(&prefix, k, &f)
        });
        if !ok {
            let after = self.keys.selected.clone().or(self.keys.view_after.clone());
            let next = browse::after(&self.session.replica, &prefix, after.as_deref(), 1, &f)
                .keys
                .into_iter()
                .next();
            self.keys.selected = next.or_else(|| {
                browse::before(&self.session.replica, &prefix, after.as_deref(), 1, &f)
                    .keys
                    .into_iter()
                    .next()
            });
        }
        self.keys_keep_visible(&prefix);
    }

    fn keys_keep_visible(&mut self, prefix: &Bytes) {
        let Some(sel) = self.keys.selected.clone() else {
            self.keys.view_after = None;
            return;
        };
        let rows = self.view.keys.get();
        if rows == 0 {
            // Nothing drawn yet: the first frame shows the selection from the top.
            return;
        }
        let f = self.keys.filter.clone();
        if let Some(a) = &self.keys.view_after {
            if sel <= *a {
                // Selection above the view: it becomes the first row.
                self.keys.view_after =
                    browse::before(&self.session.replica, prefix, Some(&sel), 1, &f)
                        .keys
                        .into_iter()
                        .next();
                return;
            }
        }
        let visible = browse::after(
            &self.session.replica,
            prefix,
            self.keys.view_after.as_deref(),
            rows,
            &f,
        );
        if !visible.keys.contains(&sel) {
            // Selection below the view: it becomes the last row.
            let above = browse::before(&self.session.replica, prefix, Some(&sel), rows, &f);
            self.keys.view_after = if above.keys.len() >= rows {
                above.keys.last().cloned()
            } else {
                None
            };
        }
    }

    fn step_keys(&mut self, delta: i64) {
        let Some(prefix) = self.keys_prefix().cloned() else {
            return;
        };
        let f = self.keys.filter.clone();
        let sel = self.keys.selected.clone();
        let n = delta.unsigned_abs().min(1 << 20) as usize;
        let target = if delta >= i64::MAX / 4 {
            browse::before(&self.session.replica, &prefix, None, 1, &f)
                .keys
                .pop()
        } else if delta <= i64::MIN / 4 {
            browse::after(&self.session.replica, &prefix, None, 1, &f)
                .keys
                .pop()
        } else if delta > 0 {
            browse::after(&self.session.replica, &prefix, sel.as_deref(), n, &f)
                .keys
                .pop()
        } else {
            browse::before(&self.session.replica, &prefix, sel.as_deref(), n, &f)
                .keys
                .pop()
        };
        if let Some(t) = target {
            if delta <= i64::MIN / 4 {
                self.keys.view_after = None;
            }
            self.keys.selected = Some(t);
            self.keys_keep_visible(&prefix);
        }
    }

    /// The session's clock (the newest observation's stamp), for rates and relative times.
    pub(crate) fn now(&self) -> SystemTime {
        self.session.now()
    }

    /// [`App::now`] in unix seconds.
    pub(crate) fn now_second(&self) -> u64 {
        super::format::unix_second(self.session.now())
    }

    /// Whether the data shown is stale (etcd not answering or the connection lost).
    pub(crate) fn stale(&self) -> bool {
        use crate::model::ConnState;
        matches!(
            self.session.replica.conn(),
            ConnState::NotResponding { .. }
                | ConnState::Reconnecting { .. }
                | ConnState::Failed { .. }
        )
    }

    /// The line being typed is a replay seek (the prompt says so).
    pub(crate) fn typing_seek(&self) -> bool {
        self.input
            .as_ref()
            .is_some_and(|i| i.target == InputTarget::Seek)
    }

    /// The typed filter, if the user is typing one.
    pub(crate) fn input_text(&self) -> Option<&str> {
        self.input.as_ref().map(|i| i.text.as_str())
    }
}

/// Parses what the seek prompt takes: `-5m`/`+30s` (from `now`), `r1234` or a plain
/// number (a revision), an RFC 3339 time, or a clock time `HH:MM[:SS]` on the day of `now`
/// in the time zone `utc_offset` seconds east of UTC (the console's clock; `0` for UTC).
///
/// Errors: one line saying what is accepted.
pub fn parse_seek(text: &str, now: SystemTime, utc_offset: i64) -> Result<SeekTo, String> {
    let t = text.trim();
    let bad = || {
        format!("seek: '{t}' is not a time (14:32:10, 2026-12-01T14:32:10Z), an offset (-5m, +30s) or a revision (r1234)")
    };
    if let Some(rest) = t.strip_prefix('-').or_else(|| t.strip_prefix('+')) {
        let d = humantime::parse_duration(rest.trim()).map_err(|_| bad())?;
        let secs = i64::try_from(d.as_secs()).map_err(|_| bad())?;
        return Ok(SeekTo::Relative(if t.starts_with('-') {
            -secs
        } else {
            secs
        }));
    }
    if let Some(r) = t.strip_prefix('r').or_else(|| t.strip_prefix('R')) {
        return r.trim().parse().map(SeekTo::Revision).map_err(|_| bad());
    }
    if let Ok(r) = t.parse::<i64>() {
        return Ok(SeekTo::Revision(r));
    }
    if let Ok(at) = humantime::parse_rfc3339_weak(t) {
        return Ok(SeekTo::Time(at));
    }
    let parts: Vec<&str> = t.split(':').collect();
    if (2..=3).contains(&parts.len()) {
        let n: Vec<u64> = parts
            .iter()
            .map(|p| p.parse::<u64>())
            .collect::<Result<_, _>>()
            .map_err(|_| bad())?;
        let (h, m, sec) = (n[0], n[1], n.get(2).copied().unwrap_or(0));
        if h < 24 && m < 60 && sec < 60 {
            // Midnight of `now`'s day where the clock is read, then back to UTC.
            let local = super::format::unix_second(now) as i64 + utc_offset;
            let day = local.div_euclid(86_400) * 86_400;
            let t = day + (h * 3600 + m * 60 + sec) as i64 - utc_offset;
            return Ok(SeekTo::Time(
                SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(t.max(0) as u64),
            ));
        }
    }
    Err(bad())
}

/// Whether an event matches a lower-case filter: substring of the escaped key, the
/// resource or the operation.
pub(crate) fn event_matches(replica: &Replica, e: &EventRecord, f: &str) -> bool {
    if f.is_empty() {
        return true;
    }
    let key = crate::model::escape_bytes(&e.key).to_lowercase();
    if key.contains(f) {
        return true;
    }
    let res = replica.resource_name(e.resource).to_lowercase();
    let op = match e.kind {
        crate::model::EventKind::Put => "put",
        crate::model::EventKind::Delete => "delete",
    };
    if res.contains(f) || op.contains(f) {
        return true;
    }
    // The writer (a field manager such as `kubelet`; for a DELETE the last writer of what
    // was deleted, as the writers panel counts it): decoded only when nothing cheaper matched.
    !e.value.is_empty()
        && crate::decode::last_writer(&e.value)
            .label()
            .to_lowercase()
            .contains(f)
}

fn add(v: usize, delta: i64, max: usize) -> usize {
    let r = v as i64 + delta.clamp(-(1 << 40), 1 << 40);
    (r.max(0) as usize).min(max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EventKind, KeyValue, Observation, WatchEvent};
    use crate::store::ReplicaConfig;
    use std::time::{Duration, UNIX_EPOCH};

    fn at(s: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_700_000_000 + s)
    }

    fn kv(key: &str, rev: i64) -> KeyValue {
        KeyValue {
            key: Bytes::copy_from_slice(key.as_bytes()),
            create_revision: 2,
            mod_revision: rev,
            version: 1,
            lease: 0,
            value: Bytes::from(format!("value-{rev}")),
        }
    }

    fn listed(keys: usize) -> Replica {
        let mut r = Replica::new(ReplicaConfig::default());
        let kvs: Vec<KeyValue> = (0..keys)
            .map(|i| kv(&format!("/registry/configmaps/ns/cm{i:06}"), 2))
            .collect();
        for obs in [
            Observation::ListBegin { revision: 2 },
            Observation::ListPage { kvs },
            Observation::ListDone {
                revision: 2,
                compacted: None,
            },
        ] {
            r.apply(&Stamped { at: at(0), obs });
        }
        r
    }

    fn put(app: &mut App, s: u64, key: &str, rev: i64) {
        let mut v = kv(key, rev);
        v.version = rev;
        let st = Stamped {
            at: at(s),
            obs: Observation::Events {
                revision: rev,
                events: vec![WatchEvent {
                    kind: EventKind::Put,
                    kv: v,
                    prev_kv: None,
                }],
            },
        };
        app.ingest_all([&st]);
    }

    fn press(app: &mut App, c: char) {
        app.handle_key(&KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }

    fn code(app: &mut App, c: KeyCode) {
        app.handle_key(&KeyEvent::new(c, KeyModifiers::NONE));
    }

    #[test]
    fn pause_freezes_every_panel_and_queues_the_stream() {
        let mut app = App::new(
            Session::from_replica(listed(3), "demo"),
            Settings::default(),
        );
        put(&mut app, 1, "/registry/configmaps/ns/a", 3);
        press(&mut app, '2');
        press(&mut app, ' ');
        assert!(app.paused());
        put(&mut app, 2, "/registry/configmaps/ns/b", 4);
        app.tick(at(50));
        assert_eq!(app.events_len(), 1, "event list frozen");
        assert_eq!(app.replica().revision(), 3, "replica frozen at the cursor");
        assert_eq!(app.now(), at(1), "clock frozen");
        assert_eq!(
            app.cursor().backlog(),
            2,
            "the stream queues behind the cursor"
        );
        press(&mut app, '1');
        press(&mut app, ' ');
        assert!(!app.paused());
        assert_eq!(app.cursor().backlog(), 0);
        assert_eq!(app.replica().revision(), 4);
        assert_eq!(app.events_len(), 2);
        assert_eq!(app.now(), at(50));
    }

    #[test]
    fn seek_prompt_parses_times_offsets_and_revisions() {
        let now = at(0);
        let parse_seek = |t: &str, now| super::parse_seek(t, now, 0);
        assert_eq!(parse_seek("-5m", now), Ok(SeekTo::Relative(-300)));
        assert_eq!(parse_seek("+30s", now), Ok(SeekTo::Relative(30)));
        assert_eq!(parse_seek("r1234", now), Ok(SeekTo::Revision(1234)));
        assert_eq!(parse_seek("77", now), Ok(SeekTo::Revision(77)));
        // A clock time is read in the console's zone: 15:32:10 at UTC+1 is 14:32:10 UTC.
        assert_eq!(
            super::parse_seek("15:32:10", now, 3600),
            parse_seek("14:32:10", now)
        );
        assert_eq!(
            parse_seek("2026-12-01T14:32:10Z", now),
            Ok(SeekTo::Time(
                humantime::parse_rfc3339("2026-12-01T14:32:10Z").unwrap()
            ))
        );
        let day = super::super::format::unix_second(now) / 86_400 * 86_400;
        assert_eq!(
            parse_seek("14:32:10", now),
            Ok(SeekTo::Time(
                SystemTime::UNIX_EPOCH
                    + std::time::Duration::from_secs(day + 14 * 3600 + 32 * 60 + 10)
            ))
        );
        for bad in ["", "soon", "25:00", "r", "-x"] {
            assert!(parse_seek(bad, now).is_err(), "{bad}");
        }
    }

    #[test]
    fn speed_steps_stop_at_the_ends() {
        assert_eq!(Speed::Times(1).step(false), Speed::Times(1));
        assert_eq!(Speed::Times(1).step(true), Speed::Times(2));
        assert_eq!(Speed::Times(1000).step(true), Speed::Max);
        assert_eq!(Speed::Max.step(true), Speed::Max);
        assert_eq!(Speed::Max.step(false), Speed::Times(1000));
    }

    #[test]
    fn selection_stays_on_its_event_when_not_following() {
        let mut app = App::new(
            Session::from_replica(listed(1), "demo"),
            Settings::default(),
        );
        app.view.events.set(10);
        for r in 3..6 {
            put(&mut app, 1, &format!("/registry/configmaps/ns/k{r}"), r);
        }
        app.perform(Action::ShowEvents);
        app.perform(Action::Down);
        assert!(!app.events.follow);
        let before = app.events_row(app.events.selected).map(|e| e.revision);
        put(&mut app, 2, "/registry/configmaps/ns/new", 6);
        put(&mut app, 2, "/registry/configmaps/ns/new2", 7);
        let after = app.events_row(app.events.selected).map(|e| e.revision);
        assert_eq!(before, after);
        app.perform(Action::Top);
        assert!(app.events.follow, "back at the newest row follows again");
    }

    #[test]
    fn the_seek_key_live_says_where_seeking_is_and_an_empty_seek_just_closes() {
        let mut app = App::new(
            Session::from_replica(listed(1), "demo"),
            Settings::default(),
        );
        press(&mut app, 't');
        assert!(app.input.is_none());
        assert!(app
            .current_notice()
            .is_some_and(|n| n.contains("seeking is for replays")));
        // In a replay, Enter on an empty prompt closes it without a request or an error.
        app.set_replay(Some(ReplayStatus {
            file: "r.rgs".into(),
            start: at(0),
            end: at(60),
            total: 10,
            position: 0,
            speed: Speed::Times(1),
            secrets_shown: false,
            damage: String::new(),
            marker: None,
        }));
        press(&mut app, 't');
        assert!(app.typing_seek());
        code(&mut app, KeyCode::Enter);
        assert!(app.input.is_none());
        assert!(app.take_requests().is_empty());
    }

    #[test]
    fn a_notice_shows_until_a_newer_warning_or_the_next_key() {
        let mut app = App::new(
            Session::from_replica(listed(1), "demo"),
            Settings::default(),
        );
        assert_eq!(app.current_notice(), None);
        app.notify("recording saved: a.rgs".into());
        assert_eq!(app.current_notice(), Some("recording saved: a.rgs"));
        assert!(app.s.warnings.is_empty(), "a notice is not a warning");
        app.s.warnings.push("pause ended".into());
        assert_eq!(app.current_notice(), None, "the newer warning shows");
        app.notify("screenshot saved: s.svg".into());
        app.handle_key(&KeyEvent::new(KeyCode::Char('2'), KeyModifiers::NONE));
        assert_eq!(
            app.current_notice(),
            None,
            "the next key dismisses a notice"
        );
    }

    #[test]
    fn filter_is_typed_in_filter_mode() {
        let mut app = App::new(
            Session::from_replica(listed(1), "demo"),
            Settings::default(),
        );
        put(&mut app, 1, "/registry/configmaps/ns/alpha", 3);
        put(&mut app, 1, "/registry/configmaps/ns/beta", 4);
        press(&mut app, '2');
        press(&mut app, '/');
        assert_eq!(app.mode(), Mode::Filter);
        for c in "ALP".chars() {
            press(&mut app, c);
        }
        press(&mut app, 'q'); // typed, not quit
        code(&mut app, KeyCode::Backspace);
        code(&mut app, KeyCode::Enter);
        assert!(!app.should_quit());
        assert_eq!(app.events.filter, "ALP");
        assert_eq!(app.events_len(), 1);
        code(&mut app, KeyCode::Esc);
        assert_eq!(app.events_len(), 2);
    }

    #[test]
    fn key_browser_pages_through_many_keys_without_collecting_them() {
        let mut app = App::new(
            Session::from_replica(listed(100_000), "demo"),
            Settings::default(),
        );
        app.view.keys.set(20);
        press(&mut app, '3');
        code(&mut app, KeyCode::Enter);
        assert_eq!(
            app.keys.selected.as_deref(),
            Some(&b"/registry/configmaps/ns/cm000000"[..])
        );
        code(&mut app, KeyCode::PageDown);
        assert_eq!(
            app.keys.selected.as_deref(),
            Some(&b"/registry/configmaps/ns/cm000019"[..])
        );
        press(&mut app, 'G');
        assert_eq!(
            app.keys.selected.as_deref(),
            Some(&b"/registry/configmaps/ns/cm099999"[..])
        );
        let rows = app.key_rows(20);
        assert_eq!(rows.keys.len(), 20);
        assert_eq!(rows.keys.last(), app.keys.selected.as_ref());
        press(&mut app, 'k');
        assert_eq!(
            app.keys.selected.as_deref(),
            Some(&b"/registry/configmaps/ns/cm099998"[..])
        );
        press(&mut app, 'g');
        assert_eq!(app.keys.view_after, None);
        // Filter within the resource.
        press(&mut app, '/');
        for c in "cm05000".chars() {
            press(&mut app, c);
        }
        code(&mut app, KeyCode::Enter);
        let rows = app.key_rows(20);
        assert_eq!(rows.keys.len(), 10);
        assert_eq!(app.keys.selected.as_ref(), rows.keys.first());
    }

    #[test]
    fn detail_follows_new_versions_and_shows_older_ones() {
        let mut app = App::new(
            Session::from_replica(listed(2), "demo"),
            Settings::default(),
        );
        press(&mut app, '3');
        code(&mut app, KeyCode::Enter);
        code(&mut app, KeyCode::Enter);
        assert_eq!(app.mode(), Mode::Detail);
        let key = "/registry/configmaps/ns/cm000000";
        put(&mut app, 1, key, 3);
        let d = app.detail.as_ref().map(|d| (d.history.len(), d.index));
        assert_eq!(d, Some((2, 1)));
        press(&mut app, '[');
        let d = app.detail.as_ref().map(|d| d.index);
        assert_eq!(d, Some(0));
        put(&mut app, 2, key, 4);
        let d = app.detail.as_ref().map(|d| (d.history.len(), d.index));
        assert_eq!(d, Some((3, 0)), "an older version stays shown");
        code(&mut app, KeyCode::Esc);
        assert_eq!(app.mode(), Mode::Keys);
    }

    #[test]
    fn an_open_key_shows_nothing_of_it_after_a_seek_to_before_it_existed() {
        let mut app = App::new(
            Session::from_replica(listed(2), "demo"),
            Settings::default(),
        );
        let key = "/registry/configmaps/ns/new";
        put(&mut app, 1, key, 3);
        put(&mut app, 2, key, 4);
        app.open_detail(Bytes::from(key));
        assert_eq!(app.detail.as_ref().map(|d| d.history.len()), Some(2));
        // A replay seeks back: the session is the one from before the key's first write.
        app.replace_session(Session::from_replica(listed(2), "demo"));
        let d = app.detail.as_ref().expect("still open");
        assert!(d.history.is_empty(), "{:?}", d.history);
        assert!(d.shown().is_none());
    }

    #[test]
    fn encryption_summary_counts_on_open_and_at_most_once_a_second() {
        let mut app = App::new(
            Session::from_replica(listed(3), "demo"),
            Settings::default(),
        );
        app.tick(at(0));
        press(&mut app, '3');
        press(&mut app, 'E');
        assert_eq!(app.mode(), Mode::Encryption);
        let values = |app: &App| app.storage.as_ref().map(|s| s.total().values);
        assert_eq!(values(&app), Some(3));
        put(&mut app, 0, "/registry/configmaps/ns/new", 3);
        assert_eq!(
            values(&app),
            Some(3),
            "same clock second: not counted again"
        );
        app.tick(at(1));
        assert_eq!(values(&app), Some(4));
        // Enter opens the selected resource's keys; the counts are dropped.
        code(&mut app, KeyCode::Enter);
        assert_eq!(app.mode(), Mode::Keys);
        assert_eq!(app.keys.resource.as_deref(), Some("configmaps"));
        assert_eq!(app.keys.focus, KeysFocus::Keys);
        app.tick(at(2));
        assert!(app.storage.is_none());
        press(&mut app, 'E');
        code(&mut app, KeyCode::Esc);
        assert_eq!(app.mode(), Mode::Keys);
    }

    #[test]
    fn an_event_opens_the_object_as_that_event_left_it() {
        let mut app = App::new(
            Session::from_replica(listed(1), "demo"),
            Settings::default(),
        );
        let key = "/registry/configmaps/ns/cm000000";
        for rev in 3..=5 {
            put(&mut app, rev as u64, key, rev);
        }
        press(&mut app, '2');
        let row = (0..10)
            .find(|i| app.events_row(*i).is_some_and(|e| e.revision == 4))
            .expect("the event at revision 4");
        app.events.follow = false;
        app.events.selected = row;
        code(&mut app, KeyCode::Enter);
        let shown = app
            .detail
            .as_ref()
            .and_then(|d| d.shown())
            .map(|v| v.mod_revision);
        assert_eq!(shown, Some(4), "not the newest (5)");
    }

    #[test]
    fn diff_mark_and_json_toggles_on_the_open_key() {
        let mut app = App::new(
            Session::from_replica(listed(1), "demo"),
            Settings::default(),
        );
        let key = "/registry/configmaps/ns/cm000000";
        put(&mut app, 1, key, 3);
        put(&mut app, 2, key, 4);
        press(&mut app, '3');
        code(&mut app, KeyCode::Enter);
        code(&mut app, KeyCode::Enter);
        press(&mut app, 'd');
        let title = |app: &App| {
            app.detail
                .as_ref()
                .and_then(|d| d.diff.as_ref())
                .map(|x| x.title.clone())
        };
        assert_eq!(title(&app).as_deref(), Some("3 → 4"));
        press(&mut app, '[');
        press(&mut app, '[');
        let text = |app: &App| {
            app.detail
                .as_ref()
                .and_then(|d| d.diff.as_ref())
                .map(|x| {
                    x.lines
                        .iter()
                        .map(|(_, l)| l.clone())
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default()
        };
        assert!(
            text(&app).contains("the key's first version"),
            "{}",
            text(&app)
        );
        press(&mut app, 'm');
        press(&mut app, ']');
        press(&mut app, ']');
        assert_eq!(title(&app).as_deref(), Some("2 → 4 (marked)"));
        press(&mut app, 'm');
        assert_eq!(
            title(&app).as_deref(),
            Some("4 (marked)"),
            "the mark moves to 4"
        );
        press(&mut app, 'm');
        assert_eq!(title(&app).as_deref(), Some("3 → 4"), "m again unmarks");
        press(&mut app, 'd');
        assert!(title(&app).is_none());
        assert!(!app.json_output);
        press(&mut app, 'o');
        assert!(app.json_output);
    }

    #[test]
    fn idle_means_no_redraw() {
        let mut app = App::new(
            Session::from_replica(listed(2), "demo"),
            Settings::default(),
        );
        app.tick(at(0));
        app.mark_drawn();
        assert!(!app.needs_draw());
        put(&mut app, 1, "/registry/configmaps/ns/x", 3);
        assert!(app.needs_draw(), "data changed");
        app.mark_drawn();
        app.tick(at(2));
        assert!(app.needs_draw(), "rates still moving");
        app.mark_drawn();
        app.tick(at(600));
        app.mark_drawn();
        app.tick(at(601));
        assert!(!app.needs_draw(), "nothing observed for minutes: no redraw");
        press(&mut app, '?');
        assert!(app.needs_draw());
    }

    #[test]
    fn invalid_config_corpus_yields_warnings_not_crashes() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/config-invalid");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).expect("corpus dir") {
            let path = entry.expect("entry").path();
            n += 1;
            let (km, w) = Keymap::load(Some(&path));
            assert!(!w.is_empty(), "{} as keymap: no warning", path.display());
            let help = KeyEvent::new(KeyCode::Char('?'), KeyModifiers::NONE);
            assert_eq!(km.lookup(Mode::Global, &help), Some(Action::ToggleHelp));
            let (theme, w) = Theme::load(Some(&path));
            assert!(!w.is_empty(), "{} as theme: no warning", path.display());
            let _ = theme.get(super::super::theme::Role::Alert);
            let opts = super::super::UiOptions {
                keymap_path: Some(path.clone()),
                theme_path: Some(path.clone()),
                ..Default::default()
            };
            let s = super::super::settings(&opts);
            assert!(s.warnings.len() >= 2);
        }
        assert!(n >= 8, "corpus has {n} files");
    }
}
