//! The console's top-level dispatch: terminal events to named actions (through the
//! keymap), actions and clicks to the panel states in [`crate::tui::state`], and what the
//! loop must do to [`Request`]s.
//!
//! Which panel state a key goes to follows the keymap mode ([`App::mode`]): the help
//! screen, the opened key or the encryption summary over the key browser, or the panel
//! shown. Moves are clamped by what the views recorded in the last frame
//! ([`crate::tui::state::Drawn`]).

use bytes::Bytes;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::{App, Input, InputTarget, Panel};
use crate::record::bookmarks::{Bookmark, TEXT_MAX};
use crate::record::seek::SeekTo;
use crate::tui::action::Action;
use crate::tui::keymap::Mode;
use crate::tui::state::drawn::add;
use crate::tui::state::keys::resource_names;
use crate::tui::state::palette::Goto;
use crate::tui::state::{KeysFocus, OpenedKeyState, Request};

impl App {
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
                    let tabs = self.drawn.tabs.get();
                    if let Some(i) = tabs
                        .iter()
                        .position(|(a, b)| m.column >= *a && m.column < *b)
                    {
                        self.switch(Panel::ALL[i]);
                    }
                } else if mode == Mode::Events {
                    if let Some(i) = self.drawn.events_rows.get().index_at(m.column, m.row) {
                        if i < self.events_len() {
                            if i == self.events.selected {
                                self.perform(Action::Open);
                            } else {
                                self.step(mode, i as i64 - self.events.selected as i64);
                            }
                        }
                    }
                } else if mode == Mode::Keys {
                    if let Some(i) = self.drawn.resources_rows.get().index_at(m.column, m.row) {
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
                    } else if let Some(row) = self.drawn.keys_rows.get().index_at(m.column, m.row) {
                        let was = self.keys.focus;
                        self.keys.focus = KeysFocus::Keys;
                        self.normalize_keys();
                        let first = self.drawn.keys_rows.get().first;
                        let sel = self.drawn.keys_selected.get();
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
        if self.too_small {
            // The screen shows none of the panels: only quitting acts (`q` too while a
            // prompt is open, as the screen says).
            let quits = |m| self.settings.keymap.lookup(m, key) == Some(Action::Quit);
            if quits(self.mode()) || quits(Mode::Global) {
                self.perform(Action::Quit);
            }
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
        if let Some(action) = self.settings.keymap.lookup(mode, key) {
            self.perform(action);
            return;
        }
        // Esc and the key typed right after it can reach us in one read (over a slow SSH
        // link, or from tmux's send-keys), and the terminal parser then reports them as one
        // Alt+key (crossterm's `parse_event`: ESC followed by a byte is Alt). When nothing
        // binds that Alt+key, it was Esc and then the key.
        if key.modifiers.contains(KeyModifiers::ALT)
            && !key.modifiers.contains(KeyModifiers::CONTROL)
        {
            self.handle_key(&KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
            self.handle_key(&KeyEvent::new(
                key.code,
                key.modifiers.difference(KeyModifiers::ALT),
            ));
            return;
        }
        if let (Some(input), KeyCode::Char(c)) = (self.input.as_mut(), key.code) {
            // A bookmark's text is one line of at most `TEXT_MAX` characters.
            let full = input.target == InputTarget::Bookmark
                && (c.is_control() || input.text.chars().count() >= TEXT_MAX);
            if !full
                && !key
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
                } else if self.opened_key.is_some() {
                    self.opened_key = None;
                    // Back to the event list the key was opened from, its filter and
                    // selection as they were.
                    if let Some(from) = self.opened_from.take() {
                        if self.panel == Panel::Keys {
                            self.switch(from);
                        }
                    }
                } else if self.encryption.is_open() {
                    self.encryption.close();
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
                    self.opened_key = None;
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
                    self.settings
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
                let back = action == Action::SeekBack;
                if let Some(tl) = self.revision_timeline() {
                    // A db file keeps no times: ten revisions, within the file.
                    let r = self.session.revision().max(tl.first) + if back { -10 } else { 10 };
                    self.requests
                        .push(Request::Seek(SeekTo::Revision(r.clamp(tl.first, tl.head))));
                } else if self.cursor.replay.is_some() {
                    let secs = if back { -10 } else { 10 };
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
            Action::Bookmark => {
                if self.revision_timeline().is_some() {
                    // Bookmarks live beside the recording, and a db file's console reads a
                    // temporary one, removed on quit: a bookmark would be lost.
                    self.notify(
                        "bookmarks are for recordings: this console reads etcd's db file through a temporary one, removed on quit".into(),
                    );
                } else if self.cursor.replay.is_some() {
                    self.input = Some(Input {
                        target: InputTarget::Bookmark,
                        text: String::new(),
                    });
                } else {
                    self.notify("bookmarks are for replays (regscope replay FILE)".into());
                }
            }
            Action::ToggleFollow => self.events.toggle_follow(),
            Action::OlderVersion => self.with_opened_key(|d, cx| d.select_version(-1, cx)),
            Action::NewerVersion => self.with_opened_key(|d, cx| d.select_version(1, cx)),
            Action::ToggleJson => {
                self.json_output = !self.json_output;
                self.with_opened_key(OpenedKeyState::rerender);
            }
            Action::ToggleDiff => self.with_opened_key(OpenedKeyState::toggle_diff),
            Action::MarkVersion => self.with_opened_key(OpenedKeyState::mark_version),
            Action::ToggleEncryption => {
                if self.encryption.is_open() {
                    self.encryption.close();
                } else {
                    self.opened_key = None;
                    self.panel = Panel::Keys;
                    self.help = None;
                    self.encryption.open();
                    self.refresh_encryption(true);
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
                        InputTarget::Seek => match self.parse_typed_seek(&input.text) {
                            Ok(to) => self.requests.push(Request::Seek(to)),
                            Err(e) => self.requests.push(Request::Notice(e)),
                        },
                        // Enter with nothing typed (or only spaces) saves nothing, and
                        // says so: a bookmark silently dropped reads as one saved.
                        InputTarget::Bookmark if input.text.trim().is_empty() => {
                            self.requests
                                .push(Request::Notice("empty bookmark not saved".into()));
                        }
                        InputTarget::Bookmark => {
                            self.requests.push(Request::Bookmark(Bookmark::new(
                                self.now(),
                                self.session.revision(),
                                &input.text,
                            )));
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

    /// Shows `key` selected in the key browser, under its resource.
    fn select_key(&mut self, key: Bytes) {
        self.panel = Panel::Keys;
        self.encryption.close();
        let rows = self.drawn.keys.get();
        self.keys.select_key(key, &mut self.session, rows);
    }

    /// Runs what a palette entry names.
    fn go(&mut self, goto: Goto) {
        match goto {
            Goto::Action(a) => self.perform(a),
            Goto::Seek(to) => self.requests.push(Request::Seek(to)),
            Goto::Resource(r) => {
                self.switch(Panel::Keys);
                self.opened_key = None;
                self.encryption.close();
                self.keys.resource = Some(r);
                self.keys.filter.clear();
                self.keys.focus = KeysFocus::Resources;
                self.keys.selected = None;
                self.keys.page_after = None;
                self.normalize_keys();
            }
            Goto::Key(key) => {
                self.help = None;
                self.select_key(key.clone());
                self.open_key(key);
            }
            Goto::Revision(rev) => {
                self.switch(Panel::Events);
                self.events.set_filter(String::new());
                let found = self.events_filtered().position(|e| e.revision == rev);
                match found {
                    Some(i) => self.events.select(i, self.drawn.events.get()),
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
            Mode::Events => self.drawn.events.get(),
            Mode::Keys if self.keys.focus == KeysFocus::Keys => self.drawn.keys.get(),
            Mode::Keys => self.drawn.resources.get(),
            Mode::OpenedKey => self.drawn.opened_key.get(),
            Mode::Encryption => self.drawn.encryption.get(),
            Mode::Help => self.drawn.help.rows(),
            Mode::Apiserver => self.drawn.apiserver[self.apiserver.focus.index()].rows(),
            _ => self.drawn.growth.get(),
        };
        rows.max(2) - 1
    }

    /// Moves the selection of the list that `mode` shows by `delta` rows (clamped).
    fn step(&mut self, mode: Mode, delta: i64) {
        match mode {
            Mode::Help => {
                let max = self.drawn.help.max_top();
                self.help = self.help.map(|s| add(s, delta, max));
            }
            Mode::Growth => {
                let n = self.session.replica.resources().len();
                self.growth_scroll = add(self.growth_scroll, delta, n.saturating_sub(1));
            }
            Mode::Events => {
                let rows = self.drawn.events.get();
                self.events.step(&self.session.replica, delta, rows);
            }
            Mode::Keys => {
                let rows = self.drawn.keys.get();
                match self.keys.focus {
                    KeysFocus::Resources => self.keys.step_resource(&mut self.session, delta, rows),
                    KeysFocus::Keys => self.keys.step(&self.session.replica, delta, rows),
                }
            }
            Mode::OpenedKey => {
                if let Some(d) = self.opened_key.as_mut() {
                    let n = d.body_len();
                    d.scroll = add(d.scroll, delta, n.saturating_sub(1));
                }
            }
            Mode::Encryption => self.encryption.step(delta),
            Mode::Apiserver => {
                let max = self.drawn.apiserver[self.apiserver.focus.index()].max_top();
                self.apiserver.step(delta, max);
            }
            Mode::Global | Mode::Filter => {}
        }
    }

    fn open(&mut self, mode: Mode) {
        match mode {
            Mode::Events => {
                // A row that marks etcd replaced has no key to open.
                let Some(ev) = self
                    .events_row(self.events.selected)
                    .filter(|e| e.note.is_none())
                else {
                    return;
                };
                let (key, revision) = (ev.key.clone(), ev.revision);
                self.select_key(key.clone());
                // The object as this event left it, not as it is now.
                self.open_key_at(key, Some(revision));
                self.opened_from = Some(Panel::Events);
            }
            Mode::Keys => match self.keys.focus {
                KeysFocus::Resources => {
                    self.keys.focus = KeysFocus::Keys;
                    self.normalize_keys();
                }
                KeysFocus::Keys => {
                    if let Some(k) = self.keys.selected.clone() {
                        self.open_key(k);
                    }
                }
            },
            Mode::Encryption => {
                if let Some(resource) = self.encryption.selected_resource() {
                    self.encryption.close();
                    self.keys.choose_resource(resource);
                    self.keys.focus = KeysFocus::Keys;
                    self.normalize_keys();
                }
            }
            _ => {}
        }
    }
}
