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

use std::time::SystemTime;

use bytes::Bytes;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::action::Action;
use super::browse::Scan;
use super::keymap::{Keymap, Mode};
use super::state::keys::resource_names;
use super::state::opened_key::Decoding;
use super::state::palette::{self, Entry, Goto};
use super::state::viewport::add;
use super::state::{
    parse_seek, ApiserverState, Cursor, DetailState, EventsState, KeysFocus, KeysState,
    MemoryStatus, RecordingStatus, ReplayStatus, Request, Section, SeekTo, Viewports,
};
use super::storage::StorageSummary;
use super::theme::Theme;
use crate::metrics::view::ApiserverView;
use crate::model::{Revision, Stamped};
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
        let events = EventsState::new(&session.replica);
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
            events,
            keys: KeysState::default(),
            detail: None,
            json_output: false,
            storage: None,
            apiserver: ApiserverState::default(),
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
            self.apiserver.changed = true;
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
        self.apiserver.changed = true;
        self.events.session_replaced(&self.session.replica);
        self.storage = None;
        self.dirty = true;
        self.drawn_seq = u64::MAX;
        self.after_batch();
    }

    /// The session was changed outside [`App::ingest`] (a replay applied observations to
    /// it directly): derive again and do the batch bookkeeping.
    pub fn after_external_apply(&mut self) {
        self.apiserver.changed = true;
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
                        let names = resource_names(&self.session.replica);
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
                let n = self.palette_entries(&text).len();
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
                        self.apiserver.set_filter(String::new());
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
                    self.apiserver.next_section(action == Action::NextSection);
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
                Mode::Events => self.events.set_filter(String::new()),
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
            Action::ToggleFollow => self.events.toggle_follow(),
            Action::OlderVersion => self.with_detail(|d, cx| d.select_version(-1, cx)),
            Action::NewerVersion => self.with_detail(|d, cx| d.select_version(1, cx)),
            Action::ToggleJson => {
                self.json_output = !self.json_output;
                self.with_detail(DetailState::rerender);
            }
            Action::ToggleDiff => self.with_detail(DetailState::toggle_diff),
            Action::MarkVersion => self.with_detail(DetailState::mark_version),
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
                        InputTarget::Events => self.events.set_filter(input.text),
                        InputTarget::Keys => self.set_keys_filter(input.text),
                        InputTarget::Apiserver => self.apiserver.set_filter(input.text),
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
                            let all = self.palette_entries(&input.text);
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
        self.panel = Panel::Keys;
        let rows = self.view.keys.get();
        self.keys.select_key(key, &mut self.session, rows);
    }

    /// The command palette's candidates for `text`.
    pub(crate) fn palette_entries(&self, text: &str) -> Vec<Entry> {
        palette::entries(
            text,
            &palette::Context {
                session: &self.session,
                keymap: &self.s.keymap,
                mode: self.mode_under_input(),
                replay: self.cursor.replay.is_some(),
                utc_offset: self.s.utc_offset,
            },
        )
    }

    /// Runs what a palette entry names.
    fn go(&mut self, goto: Goto) {
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
                self.events.set_filter(String::new());
                let found = self.events_filtered().position(|e| e.revision == rev);
                match found {
                    Some(i) => self.events.select(i, self.view.events.get()),
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
                let rows = self.view.events.get();
                self.events.step(&self.session.replica, delta, rows);
            }
            Mode::Keys => {
                let rows = self.view.keys.get();
                match self.keys.focus {
                    KeysFocus::Resources => self.keys.step_resource(&mut self.session, delta, rows),
                    KeysFocus::Keys => self.keys.step(&self.session.replica, delta, rows),
                }
            }
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
                let max = self.view.apiserver[self.apiserver.focus.index()].max_top();
                self.apiserver.step(delta, max);
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
                    self.keys.choose_resource(resource);
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
        self.events.after_batch(&self.session.replica);
        self.with_detail(DetailState::after_batch);
        self.refresh_storage(false);
        if self
            .apiserver
            .refresh(&self.session, self.panel == Panel::Apiserver)
        {
            self.dirty = true;
        }
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

    fn set_keys_filter(&mut self, f: String) {
        let rows = self.view.keys.get();
        self.keys.set_filter(f, &mut self.session, rows);
    }

    /// Filtered events, newest first.
    pub(crate) fn events_filtered(&self) -> impl Iterator<Item = &EventRecord> + '_ {
        self.events.filtered(&self.session.replica)
    }

    pub(crate) fn events_len(&self) -> usize {
        self.events.len(&self.session.replica)
    }

    fn events_row(&self, i: usize) -> Option<&EventRecord> {
        self.events.row(&self.session.replica, i)
    }

    /// The resource prefix of the selected resource, when known.
    pub(crate) fn keys_prefix(&self) -> Option<&Bytes> {
        self.keys.prefix()
    }

    /// The visible key rows (`rows` of them at most); see [`KeysState::rows`].
    pub(crate) fn key_rows(&self, rows: usize) -> Scan {
        self.keys.rows(&self.session.replica, rows)
    }

    /// Keeps the key browser consistent with the replica (see [`KeysState::normalize`]).
    fn normalize_keys(&mut self) {
        let rows = self.view.keys.get();
        self.keys.normalize(&mut self.session, rows);
    }

    /// What decoding the opened key depends on besides the key.
    fn decoding(&self) -> Decoding<'_> {
        Decoding {
            replica: &self.session.replica,
            show_secrets: self.s.show_secrets,
            keyring: self.s.keyring.as_deref(),
            json: self.json_output,
        }
    }

    /// Runs `f` on the opened key, if any, with what decoding it depends on.
    fn with_detail(&mut self, f: impl FnOnce(&mut DetailState, &Decoding)) {
        if let Some(mut d) = self.detail.take() {
            f(&mut d, &self.decoding());
            self.detail = Some(d);
        }
    }

    /// Opens `key` on its newest version.
    pub(crate) fn open_detail(&mut self, key: Bytes) {
        self.open_detail_at(key, None);
    }

    /// Opens `key` on the version written at `revision`; see [`DetailState::open`].
    pub(crate) fn open_detail_at(&mut self, key: Bytes, revision: Option<Revision>) {
        self.detail = Some(DetailState::open(key, revision, &self.decoding()));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EventKind, KeyValue, Observation, WatchEvent};
    use crate::store::ReplicaConfig;
    use crate::tui::state::Speed;
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
