//! Named user actions: the vocabulary the keymap binds keys to.
//!
//! Every thing a user can do has a stable snake_case name (used in `keymaps/*.toml`) and a
//! one-line description (shown by the help screen and, shortened, in the hint bar). Keys never
//! reach handlers directly: the keymap turns a key into an [`Action`] and
//! [`crate::tui::App::perform`] applies it.

use std::fmt;

/// One user action. The declaration order is the order help lists them in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    /// Leave regscope (the terminal is restored).
    Quit,
    /// Open or close the help screen.
    ToggleHelp,
    /// Switch to the next panel (Growth → Events → Keys → Apiserver).
    NextPanel,
    /// Switch to the previous panel.
    PrevPanel,
    /// Show the revision growth panel.
    ShowGrowth,
    /// Show the live event stream.
    ShowEvents,
    /// Show the key browser.
    ShowKeys,
    /// Show the apiserver panel (latency, watch cache, compaction window, etcd health, APF).
    ShowApiserver,
    /// Clear the screen and draw everything again.
    Redraw,
    /// Move the selection (or scroll) up one row.
    Up,
    /// Move the selection (or scroll) down one row.
    Down,
    /// Move up one page.
    PageUp,
    /// Move down one page.
    PageDown,
    /// Jump to the first row.
    Top,
    /// Jump to the last row.
    Bottom,
    /// Focus the pane on the left (keys: the resource list).
    FocusLeft,
    /// Focus the pane on the right (keys: the key list).
    FocusRight,
    /// Focus the next section of the apiserver panel.
    NextSection,
    /// Focus the previous section of the apiserver panel.
    PrevSection,
    /// Show the focused section of the apiserver panel full screen, or all sections again.
    ZoomSection,
    /// Open the selected item (a resource's keys, a key's value, an event's key).
    Open,
    /// Close the current view and go back.
    Back,
    /// Start typing a filter for the current list.
    Filter,
    /// Remove the current list's filter.
    ClearFilter,
    /// Freeze the whole view at the cursor (live: observations queue and are still
    /// recorded; replay: stop playing) or resume.
    TogglePause,
    /// Keep the newest event selected, or stop following.
    ToggleFollow,
    /// Start recording the session to a file (named in the header), or stop.
    ToggleRecording,
    /// Replay: play faster.
    SpeedUp,
    /// Replay: play slower.
    SlowDown,
    /// Replay: pause and apply one more observation.
    StepEvent,
    /// Replay: seek 10 seconds back.
    SeekBack,
    /// Replay: seek 10 seconds forward.
    SeekForward,
    /// Replay: jump to the next marker.
    NextMarker,
    /// Replay: jump to the previous marker.
    PrevMarker,
    /// Replay: type where to seek (a time, an offset or a revision).
    SeekPrompt,
    /// Save the screen as SVG and plain text (into `--screenshot-dir`).
    Screenshot,
    /// Show the previous (older) version of the open key.
    OlderVersion,
    /// Show the next (newer) version of the open key.
    NewerVersion,
    /// Show the open key's value as YAML or as JSON.
    ToggleJson,
    /// Show the diff of the shown version against the previous (or the marked) one.
    ToggleDiff,
    /// Mark the shown version as the other side of the diff (again: unmark).
    MarkVersion,
    /// Open or close the encryption-at-rest summary per resource.
    ToggleEncryption,
    /// Apply the filter being typed.
    Submit,
    /// Open the command palette: every action, and go to a resource, key, revision or
    /// (replay) time, by fuzzy match.
    Palette,
    /// Abandon the filter being typed.
    Cancel,
    /// Delete the last character of the filter being typed.
    DeleteChar,
    /// Clear the filter being typed.
    ClearInput,
}

impl Action {
    /// Every action, in help order.
    pub const ALL: &'static [Action] = &[
        Action::Quit,
        Action::ToggleHelp,
        Action::NextPanel,
        Action::PrevPanel,
        Action::ShowGrowth,
        Action::ShowEvents,
        Action::ShowKeys,
        Action::ShowApiserver,
        Action::Redraw,
        Action::Up,
        Action::Down,
        Action::PageUp,
        Action::PageDown,
        Action::Top,
        Action::Bottom,
        Action::FocusLeft,
        Action::FocusRight,
        Action::NextSection,
        Action::PrevSection,
        Action::ZoomSection,
        Action::Open,
        Action::Back,
        Action::Filter,
        Action::ClearFilter,
        Action::TogglePause,
        Action::ToggleFollow,
        Action::ToggleRecording,
        Action::SpeedUp,
        Action::SlowDown,
        Action::StepEvent,
        Action::SeekBack,
        Action::SeekForward,
        Action::NextMarker,
        Action::PrevMarker,
        Action::SeekPrompt,
        Action::Screenshot,
        Action::OlderVersion,
        Action::NewerVersion,
        Action::ToggleJson,
        Action::ToggleDiff,
        Action::MarkVersion,
        Action::ToggleEncryption,
        Action::Palette,
        Action::Submit,
        Action::Cancel,
        Action::DeleteChar,
        Action::ClearInput,
    ];

    /// The name used in keymap files, e.g. `toggle_pause`.
    pub fn name(self) -> &'static str {
        match self {
            Action::Quit => "quit",
            Action::ToggleHelp => "toggle_help",
            Action::NextPanel => "next_panel",
            Action::PrevPanel => "prev_panel",
            Action::ShowGrowth => "show_growth",
            Action::ShowEvents => "show_events",
            Action::ShowKeys => "show_keys",
            Action::ShowApiserver => "show_apiserver",
            Action::Redraw => "redraw",
            Action::Up => "up",
            Action::Down => "down",
            Action::PageUp => "page_up",
            Action::PageDown => "page_down",
            Action::Top => "top",
            Action::Bottom => "bottom",
            Action::FocusLeft => "focus_left",
            Action::FocusRight => "focus_right",
            Action::NextSection => "next_section",
            Action::PrevSection => "prev_section",
            Action::ZoomSection => "zoom_section",
            Action::Open => "open",
            Action::Back => "back",
            Action::Filter => "filter",
            Action::ClearFilter => "clear_filter",
            Action::TogglePause => "toggle_pause",
            Action::ToggleFollow => "toggle_follow",
            Action::ToggleRecording => "toggle_recording",
            Action::SpeedUp => "speed_up",
            Action::SlowDown => "slow_down",
            Action::StepEvent => "step_event",
            Action::SeekBack => "seek_back",
            Action::SeekForward => "seek_forward",
            Action::NextMarker => "next_marker",
            Action::PrevMarker => "prev_marker",
            Action::SeekPrompt => "seek_prompt",
            Action::Screenshot => "screenshot",
            Action::OlderVersion => "older_version",
            Action::NewerVersion => "newer_version",
            Action::ToggleJson => "toggle_json",
            Action::ToggleDiff => "toggle_diff",
            Action::MarkVersion => "mark_version",
            Action::ToggleEncryption => "toggle_encryption",
            Action::Palette => "palette",
            Action::Submit => "submit",
            Action::Cancel => "cancel",
            Action::DeleteChar => "delete_char",
            Action::ClearInput => "clear_input",
        }
    }

    /// One-line description for the help screen.
    pub fn description(self) -> &'static str {
        match self {
            Action::Quit => "quit regscope",
            Action::ToggleHelp => "open or close this help",
            Action::NextPanel => "next panel",
            Action::PrevPanel => "previous panel",
            Action::ShowGrowth => "revision growth panel",
            Action::ShowEvents => "event stream panel",
            Action::ShowKeys => "key browser panel",
            Action::ShowApiserver => "apiserver panel: latency, watch cache, window, etcd, APF",
            Action::Redraw => "clear and redraw the screen",
            Action::Up => "move up",
            Action::Down => "move down",
            Action::PageUp => "page up",
            Action::PageDown => "page down",
            Action::Top => "first row",
            Action::Bottom => "last row",
            Action::FocusLeft => "focus the resource list",
            Action::FocusRight => "focus the key list",
            Action::NextSection => "focus the next section",
            Action::PrevSection => "focus the previous section",
            Action::ZoomSection => "zoom the focused section to the whole panel (again: all)",
            Action::Open => "open the selection",
            Action::Back => "close and go back",
            Action::Filter => "filter the list by text",
            Action::ClearFilter => "clear the filter",
            Action::TogglePause => "pause / resume: freeze every panel (live: the stream queues and is still recorded; replay: play)",
            Action::ToggleFollow => "follow the newest event / stop following",
            Action::ToggleRecording => "start recording the session to a file / stop (shown in the header)",
            Action::SpeedUp => "replay: play faster (1× 2× 5× 10× 100× 1000× max)",
            Action::SlowDown => "replay: play slower",
            Action::StepEvent => "replay: pause and apply exactly one more observation",
            Action::SeekBack => "replay: seek 10 s back (from the nearest checkpoint)",
            Action::SeekForward => "replay: seek 10 s forward",
            Action::NextMarker => "replay: jump to the next marker (compaction, relist, 410, connection, failed scrape, p99 or lag threshold, damage)",
            Action::PrevMarker => "replay: jump to the previous marker",
            Action::SeekPrompt => "replay: seek to a time (14:32:10, -5m) or a revision (r1234)",
            Action::Screenshot => "save the screen as SVG and text (--screenshot-dir)",
            Action::OlderVersion => "show the older version",
            Action::NewerVersion => "show the newer version",
            Action::ToggleJson => "show the value as YAML / as JSON",
            Action::ToggleDiff => "diff against the previous or the marked version",
            Action::MarkVersion => "mark the shown version as the diff base (again: unmark)",
            Action::ToggleEncryption => "encryption at rest per resource (identity, provider:key)",
            Action::Palette => {
                "command palette: every action; go to a resource, a key, a revision or (replay) a time"
            }
            Action::Submit => "apply the filter",
            Action::Cancel => "cancel typing",
            Action::DeleteChar => "delete a character",
            Action::ClearInput => "clear the typed text",
        }
    }

    /// A short label for the hint bar (one or two words).
    pub fn hint(self) -> &'static str {
        match self {
            Action::Quit => "quit",
            Action::ToggleHelp => "help",
            Action::NextPanel => "panel",
            Action::PrevPanel => "prev panel",
            Action::ShowGrowth => "growth",
            Action::ShowEvents => "events",
            Action::ShowKeys => "keys",
            Action::ShowApiserver => "apiserver",
            Action::Redraw => "redraw",
            Action::Up => "up",
            Action::Down => "down",
            Action::PageUp => "pg up",
            Action::PageDown => "pg down",
            Action::Top => "top",
            Action::Bottom => "bottom",
            Action::FocusLeft => "resources",
            Action::FocusRight => "keys",
            Action::NextSection => "section",
            Action::PrevSection => "prev section",
            Action::ZoomSection => "zoom",
            Action::Open => "open",
            Action::Back => "back",
            Action::Filter => "filter",
            Action::ClearFilter => "clear filter",
            Action::TogglePause => "pause",
            Action::ToggleFollow => "follow",
            Action::ToggleRecording => "record",
            Action::SpeedUp => "faster",
            Action::SlowDown => "slower",
            Action::StepEvent => "step",
            Action::SeekBack => "-10s",
            Action::SeekForward => "+10s",
            Action::NextMarker => "next mark",
            Action::PrevMarker => "prev mark",
            Action::SeekPrompt => "seek",
            Action::Screenshot => "screenshot",
            Action::OlderVersion => "older",
            Action::NewerVersion => "newer",
            Action::ToggleJson => "yaml/json",
            Action::ToggleDiff => "diff",
            Action::MarkVersion => "mark",
            Action::ToggleEncryption => "encryption",
            Action::Palette => "commands",
            Action::Submit => "apply",
            Action::Cancel => "cancel",
            Action::DeleteChar => "delete",
            Action::ClearInput => "clear",
        }
    }

    /// Whether the action works only in a replay (the timeline's keys).
    pub fn replay_only(self) -> bool {
        matches!(
            self,
            Action::SpeedUp
                | Action::SlowDown
                | Action::StepEvent
                | Action::SeekBack
                | Action::SeekForward
                | Action::NextMarker
                | Action::PrevMarker
                | Action::SeekPrompt
        )
    }

    /// Looks an action up by its keymap name.
    pub fn from_name(name: &str) -> Option<Action> {
        Action::ALL.iter().copied().find(|a| a.name() == name)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for a in Action::ALL {
            assert!(seen.insert(a.name()), "duplicate name {}", a.name());
            assert_eq!(Action::from_name(a.name()), Some(*a));
            assert!(!a.description().is_empty());
        }
        assert_eq!(Action::from_name("no_such_action"), None);
    }
}
