//! The console: the session it shows, the panel states it owns, and their update.
//!
//! Input enters in three ways only: [`App::ingest`] (observations, applied to the owned
//! session or queued behind a pause, followed by [`App::after_batch`] once per drained
//! batch), [`App::replace_session`] (a replay's seek) and [`App::handle_key`] /
//! [`App::perform`] (named actions from the keymap, dispatched in `dispatch`; what the
//! loop must do, such as starting a recording or seeking, comes back as [`Request`]s). The
//! clock is the session's: the newest observation's stamp. Each panel's state lives in
//! [`super::state`], one module per thing it holds; this file owns them and hands them the
//! session's data. All bookkeeping (selections, anchors, cached renders) happens in update;
//! the views in [`super::views`] only read `&App` and record what they drew. [`App::needs_draw`]
//! tells the loop whether anything visible changed since the last frame.

mod dispatch;

use std::time::SystemTime;

use bytes::Bytes;

use super::keymap::{Keymap, Mode};
use super::state::opened_key::Decoding;
use super::state::palette::{self, Entry};
use super::state::{
    ApiserverState, Cursor, Drawn, EncryptionState, EventsState, KeysState, MemoryStatus,
    OpenedKeyState, RecordingStatus, ReplayStatus, Request, Section,
};
use super::theme::Theme;
use crate::derive::apiserver::ApiserverPanels;
use crate::derive::keys::Scan;
use crate::model::{Revision, Stamped};
use crate::store::{Applied, Applies, EventRecord, Prepared, Replica, Session};

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
    /// The zone's name for the header (`UTC`, `UTC-05:00`); empty: `UTC` when the offset
    /// is 0.
    pub zone_label: String,
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
    /// health and object counts, flow control (drawn from an [`ApiserverPanels`]).
    Apiserver,
}

impl Settings {
    /// The zone clock times are shown in, for saying it once: `UTC`, `UTC-05:00`.
    pub fn zone_label(&self) -> String {
        if !self.zone_label.is_empty() {
            return self.zone_label.clone();
        }
        match self.utc_offset {
            0 => "UTC".into(),
            o => format!("UTC{}", crate::config::zone::offset_text(o)),
        }
    }
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
    /// The command palette ([`super::state::palette`]).
    Palette,
    /// A replay bookmark's text (see [`crate::record::bookmarks`]).
    Bookmark,
}

/// The console: the replica it displays plus all UI state. See the module docs.
pub struct App {
    /// The session shown: replica, metric series, informer lag and the clock. Live, it
    /// follows the sources (unless paused); in replay the player replaces it on a seek.
    pub(crate) session: Session,
    /// What the console was started with: keymap, theme, Secret and decryption options, the
    /// time zone, and the configuration warnings to show.
    pub(crate) settings: Settings,
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
    /// The opened key (its history, the version shown, the diff), drawn over the key browser.
    pub(crate) opened_key: Option<OpenedKeyState>,
    /// The panel the opened key was opened from when that was not the key browser (the
    /// event list): closing the key goes back there.
    pub(crate) opened_from: Option<Panel>,
    /// Show decoded values as JSON instead of YAML (`o`).
    pub(crate) json_output: bool,
    /// The encryption summary over the key browser.
    pub(crate) encryption: EncryptionState,
    /// The apiserver panel's data and state.
    pub(crate) apiserver: ApiserverState,
    /// What the views drew in the last frame: rows shown, scroll limits, where lists and
    /// tabs are (for paging and clicks).
    pub(crate) drawn: Drawn,
    pub(crate) debug_panic: bool,
    /// The newest message about something the user did (a recording started or saved),
    /// shown in the message row instead of a warning until a newer warning arrives.
    pub(crate) notice: Option<(usize, String)>,
    /// `S` was pressed: the next frame drawn is saved (see [`super::screenshot`]).
    screenshot: bool,
    /// The last frame drawn was the "terminal too small" screen: keys other than quit do
    /// nothing (they would act on panels nobody sees).
    pub(crate) too_small: bool,
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
            settings,
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
            opened_key: None,
            opened_from: None,
            json_output: false,
            encryption: EncryptionState::default(),
            apiserver: ApiserverState::default(),
            drawn: Drawn::default(),
            debug_panic: false,
            notice: None,
            screenshot: false,
            too_small: false,
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

    /// What the apiserver panel shows (empty until the first [`App::set_apiserver_panels`]).
    pub fn apiserver_panels(&self) -> &ApiserverPanels {
        &self.apiserver.panels
    }

    /// Replaces what the apiserver panel shows (computed from the metric store after a
    /// batch) and marks the screen dirty. Scroll positions are kept; drawing clamps them.
    pub fn set_apiserver_panels(&mut self, v: ApiserverPanels) {
        self.apiserver.panels = v;
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
        self.notice = Some((self.settings.warnings.len(), msg));
        self.dirty = true;
    }

    /// The message row's notice, while no warning came after it.
    pub(crate) fn current_notice(&self) -> Option<&str> {
        self.notice
            .as_ref()
            .filter(|(n, _)| *n == self.settings.warnings.len())
            .map(|(_, m)| m.as_str())
    }

    /// Takes one observation from the live stream: applied to the session, or held back
    /// while paused (the whole view stays as it was; the backlog is applied on resume, or
    /// when it grows past [`Cursor::BACKLOG_LIMIT`]). Call [`App::after_batch`] after a
    /// batch.
    pub fn ingest(&mut self, st: &Stamped) -> Option<Applied> {
        if self.cursor.paused && self.cursor.replay.is_none() {
            self.cursor.backlog.push_back(st.clone());
            // The timeline row counts what is queued.
            self.dirty = true;
            if self.cursor.backlog.len() >= Cursor::BACKLOG_LIMIT {
                self.settings.warnings.push(format!(
                    "pause ended: {} observations arrived while paused (the most held back)",
                    self.cursor.backlog.len()
                ));
                self.resume();
            }
            return None;
        }
        Some(self.apply(st))
    }

    /// Applies one observation to the session (see [`App::apply_prepared`]).
    pub fn apply(&mut self, st: &Stamped) -> Applied {
        self.apply_prepared(st, Prepared::default())
    }

    /// Applies one observation to the session, live or replayed (the one way both reach
    /// the console, [`Applies`]), and notes what to draw again. A clock tick marks the
    /// screen dirty only when rates can still change (something was observed in the last
    /// minute), so an idle console never redraws.
    pub fn apply_prepared(&mut self, st: &Stamped, prepared: Prepared<'_>) -> Applied {
        let before = self.now_second();
        let applied = self.session.apply_prepared(st, prepared);
        if applied.apiserver {
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
        applied
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
        self.encryption.summary = None;
        self.dirty = true;
        self.drawn_seq = u64::MAX;
        self.after_batch();
    }

    /// A replay moved its cursor (played or stepped through [`App::apply_prepared`], or
    /// sought in place in the session): the apiserver panels are derived again for the new
    /// moment even within the same second, then the batch bookkeeping.
    pub fn after_replay_moved(&mut self) {
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
            Panel::Keys if self.opened_key.is_some() => Mode::OpenedKey,
            Panel::Keys if self.encryption.is_open() => Mode::Encryption,
            Panel::Keys => Mode::Keys,
            Panel::Apiserver => Mode::Apiserver,
        }
    }

    /// The command palette's candidates for `text`.
    pub(crate) fn palette_entries(&self, text: &str) -> Vec<Entry> {
        palette::entries(
            text,
            &palette::Context {
                session: &self.session,
                keymap: &self.settings.keymap,
                mode: self.mode_under_input(),
                replay: self.cursor.replay.is_some(),
                revisions_only: self.revision_timeline().is_some(),
                utc_offset: self.settings.utc_offset,
            },
        )
    }

    /// Bookkeeping after a batch of observations: keep the event selection on the same
    /// event as new ones arrive, refresh the open key, keep the key browser's anchors valid.
    pub fn after_batch(&mut self) {
        self.events.after_batch(&self.session.replica);
        self.with_opened_key(OpenedKeyState::after_batch);
        self.refresh_encryption(false);
        if self
            .apiserver
            .refresh(&self.session, self.panel == Panel::Apiserver)
        {
            self.dirty = true;
        }
        self.normalize_keys();
    }

    /// Counts the encryption summary when open (see [`EncryptionState::refresh`]).
    pub(crate) fn refresh_encryption(&mut self, force: bool) {
        let second = self.now_second();
        if self
            .encryption
            .refresh(&self.session.replica, second, force)
        {
            self.dirty = true;
        }
    }

    fn set_keys_filter(&mut self, f: String) {
        let rows = self.drawn.keys.get();
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
        let rows = self.drawn.keys.get();
        self.keys.normalize(&mut self.session, rows);
    }

    /// What decoding the opened key depends on besides the key.
    fn decoding(&self) -> Decoding<'_> {
        Decoding {
            replica: &self.session.replica,
            show_secrets: self.settings.show_secrets,
            keyring: self.settings.keyring.as_deref(),
            json: self.json_output,
        }
    }

    /// Runs `f` on the opened key, if any, with what decoding it depends on.
    fn with_opened_key(&mut self, f: impl FnOnce(&mut OpenedKeyState, &Decoding)) {
        if let Some(mut d) = self.opened_key.take() {
            f(&mut d, &self.decoding());
            self.opened_key = Some(d);
        }
    }

    /// Opens `key` on its newest version.
    pub(crate) fn open_key(&mut self, key: Bytes) {
        self.open_key_at(key, None);
    }

    /// Opens `key` on the version written at `revision`; see [`OpenedKeyState::open`].
    pub(crate) fn open_key_at(&mut self, key: Bytes, revision: Option<Revision>) {
        self.opened_from = None;
        self.opened_key = Some(OpenedKeyState::open(key, revision, &self.decoding()));
    }

    /// The session's clock (the newest observation's stamp), for rates and relative times.
    pub(crate) fn now(&self) -> SystemTime {
        self.session.now()
    }

    /// [`App::now`] in unix seconds.
    pub(crate) fn now_second(&self) -> u64 {
        super::text::unix_second(self.session.now())
    }

    /// Whether the data shown is stale (etcd not answering or the connection lost).
    pub(crate) fn stale(&self) -> bool {
        use crate::model::ConnState;
        matches!(
            self.session.etcd.conn(),
            ConnState::NotResponding { .. }
                | ConnState::Reconnecting { .. }
                | ConnState::Failed { .. }
        )
    }

    /// `Some` in a replay of etcd's db file, whose timeline runs over revisions (see
    /// [`crate::record::RevisionTimeline`]).
    pub(crate) fn revision_timeline(&self) -> Option<crate::record::RevisionTimeline> {
        self.cursor.replay.as_ref().and_then(|r| r.revisions)
    }

    /// A seek typed at the prompt or in the palette, read as this replay reads positions:
    /// over a db file revisions, `start` and `end` only
    /// ([`crate::record::seek::parse_revision_seek`]), else also times and offsets.
    pub(crate) fn parse_typed_seek(
        &self,
        text: &str,
    ) -> Result<crate::record::seek::SeekTo, String> {
        let read = if self.revision_timeline().is_some() {
            crate::record::seek::parse_revision_seek
        } else {
            crate::record::seek::parse_seek
        };
        read(text, self.session.now(), self.settings.utc_offset)
    }

    /// The line being typed is a replay seek (the prompt says so).
    pub(crate) fn typing_seek(&self) -> bool {
        self.input
            .as_ref()
            .is_some_and(|i| i.target == InputTarget::Seek)
    }

    /// The line being typed is a bookmark's text (the prompt says so).
    pub(crate) fn typing_bookmark(&self) -> bool {
        self.input
            .as_ref()
            .is_some_and(|i| i.target == InputTarget::Bookmark)
    }

    /// The typed filter, if the user is typing one.
    pub(crate) fn input_text(&self) -> Option<&str> {
        self.input.as_ref().map(|i| i.text.as_str())
    }
}

impl Applies for App {
    fn session_mut(&mut self) -> &mut Session {
        &mut self.session
    }

    fn apply_prepared(&mut self, st: &Stamped, prepared: Prepared<'_>) -> Applied {
        App::apply_prepared(self, st, prepared)
    }
}

#[cfg(test)]
mod tests;
