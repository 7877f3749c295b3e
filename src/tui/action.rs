//! Named user actions: the vocabulary the keymap binds keys to.
//!
//! Every thing a user can do has a stable snake_case name (used in `keymaps/*.toml`) and a
//! one-line description (shown by the help screen and, shortened, in the hint bar). Keys never
//! reach handlers directly: the keymap turns a key into an [`Action`] and
//! [`crate::tui::App::perform`] applies it.
//!
//! Each action is written once, in the table given to `actions!` below: its doc, variant,
//! keymap name, hint-bar label and help line. The macro makes the enum, [`Action::ALL`],
//! [`Action::name`], [`Action::hint`], [`Action::description`] and [`Action::from_name`] from
//! it, so they cannot disagree.

use std::fmt;

/// Builds [`Action`] and its tables from one row per action, in help order:
/// `/// doc` then `Variant { name: "keymap_name", hint: "hint label", help: "help line" },`.
macro_rules! actions {
    ($(
        $(#[$doc:meta])*
        $variant:ident { name: $name:literal, hint: $hint:literal, help: $help:literal $(,)? },
    )*) => {
        /// One user action. The declaration order is the order help lists them in.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Action {
            $( $(#[$doc])* $variant, )*
        }

        impl Action {
            /// Every action, in help order.
            pub const ALL: &'static [Action] = &[$(Action::$variant),*];

            /// The name used in keymap files, e.g. `toggle_pause`.
            pub fn name(self) -> &'static str {
                match self {
                    $(Action::$variant => $name,)*
                }
            }

            /// One-line description for the help screen.
            pub fn description(self) -> &'static str {
                match self {
                    $(Action::$variant => $help,)*
                }
            }

            /// A short label for the hint bar (one or two words).
            pub fn hint(self) -> &'static str {
                match self {
                    $(Action::$variant => $hint,)*
                }
            }

            /// Looks an action up by its keymap name.
            pub fn from_name(name: &str) -> Option<Action> {
                match name {
                    $($name => Some(Action::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

actions! {
    /// Leave regscope (the terminal is restored).
    Quit {
        name: "quit",
        hint: "quit",
        help: "quit regscope",
    },
    /// Open or close the help screen.
    ToggleHelp {
        name: "toggle_help",
        hint: "help",
        help: "open or close this help",
    },
    /// Switch to the next panel (Growth → Events → Keys → Apiserver).
    NextPanel {
        name: "next_panel",
        hint: "panel",
        help: "next panel",
    },
    /// Switch to the previous panel.
    PrevPanel {
        name: "prev_panel",
        hint: "prev panel",
        help: "previous panel",
    },
    /// Show the revision growth panel.
    ShowGrowth {
        name: "show_growth",
        hint: "growth",
        help: "revision growth panel",
    },
    /// Show the live event stream.
    ShowEvents {
        name: "show_events",
        hint: "events",
        help: "event stream panel",
    },
    /// Show the key browser.
    ShowKeys {
        name: "show_keys",
        hint: "keys",
        help: "key browser panel",
    },
    /// Show the apiserver panel (latency, watch cache, compaction window, etcd health, APF).
    ShowApiserver {
        name: "show_apiserver",
        hint: "apiserver",
        help: "apiserver panel: latency, watch cache, window, etcd, APF",
    },
    /// Clear the screen and draw everything again.
    Redraw {
        name: "redraw",
        hint: "redraw",
        help: "clear and redraw the screen",
    },
    /// Move the selection (or scroll) up one row.
    Up {
        name: "up",
        hint: "up",
        help: "move up",
    },
    /// Move the selection (or scroll) down one row.
    Down {
        name: "down",
        hint: "down",
        help: "move down",
    },
    /// Move up one page.
    PageUp {
        name: "page_up",
        hint: "pg up",
        help: "page up",
    },
    /// Move down one page.
    PageDown {
        name: "page_down",
        hint: "pg down",
        help: "page down",
    },
    /// Jump to the first row.
    Top {
        name: "top",
        hint: "top",
        help: "first row",
    },
    /// Jump to the last row.
    Bottom {
        name: "bottom",
        hint: "bottom",
        help: "last row",
    },
    /// Focus the pane on the left (keys: the resource list).
    FocusLeft {
        name: "focus_left",
        hint: "resources",
        help: "focus the resource list",
    },
    /// Focus the pane on the right (keys: the key list).
    FocusRight {
        name: "focus_right",
        hint: "keys",
        help: "focus the key list",
    },
    /// Focus the next section of the apiserver panel.
    NextSection {
        name: "next_section",
        hint: "section",
        help: "focus the next section",
    },
    /// Focus the previous section of the apiserver panel.
    PrevSection {
        name: "prev_section",
        hint: "prev section",
        help: "focus the previous section",
    },
    /// Show the focused section of the apiserver panel full screen, or all sections again.
    ZoomSection {
        name: "zoom_section",
        hint: "zoom",
        help: "zoom the focused section to the whole panel (again: all)",
    },
    /// Open the selected item (a resource's keys, a key's value, an event's key).
    Open {
        name: "open",
        hint: "open",
        help: "open the selection",
    },
    /// Close the current view and go back.
    Back {
        name: "back",
        hint: "back",
        help: "close and go back",
    },
    /// Start typing a filter for the current list.
    Filter {
        name: "filter",
        hint: "filter",
        help: "filter the list by text",
    },
    /// Remove the current list's filter.
    ClearFilter {
        name: "clear_filter",
        hint: "clear filter",
        help: "clear the filter",
    },
    /// Freeze the whole view at the cursor (live: observations queue and are still
    /// recorded; replay: stop playing) or resume.
    TogglePause {
        name: "toggle_pause",
        hint: "pause",
        help: "pause / resume: freeze every panel (live: the stream queues and is still recorded; replay: play)",
    },
    /// Keep the newest event selected, or stop following.
    ToggleFollow {
        name: "toggle_follow",
        hint: "follow",
        help: "follow the newest event / stop following",
    },
    /// Start recording the session to a file (named in the header), or stop.
    ToggleRecording {
        name: "toggle_recording",
        hint: "record",
        help: "start recording the session to a file / stop (shown in the header)",
    },
    /// Replay: play faster.
    SpeedUp {
        name: "speed_up",
        hint: "faster",
        help: "replay: play faster (1× 2× 5× 10× 100× 1000× max)",
    },
    /// Replay: play slower.
    SlowDown {
        name: "slow_down",
        hint: "slower",
        help: "replay: play slower",
    },
    /// Replay: pause and apply one more observation.
    StepEvent {
        name: "step_event",
        hint: "step",
        help: "replay: pause and apply exactly one more observation",
    },
    /// Replay: seek 10 seconds back.
    SeekBack {
        name: "seek_back",
        hint: "-10s",
        help: "replay: seek 10 s back (from the nearest checkpoint)",
    },
    /// Replay: seek 10 seconds forward.
    SeekForward {
        name: "seek_forward",
        hint: "+10s",
        help: "replay: seek 10 s forward",
    },
    /// Replay: jump to the next marker.
    NextMarker {
        name: "next_marker",
        hint: "next mark",
        help: "replay: jump to the next marker (compaction, relist, 410, connection, failed scrape, p99 or lag threshold, damage, bookmark)",
    },
    /// Replay: jump to the previous marker.
    PrevMarker {
        name: "prev_marker",
        hint: "prev mark",
        help: "replay: jump to the previous marker",
    },
    /// Replay: type where to seek (a time, an offset or a revision).
    SeekPrompt {
        name: "seek_prompt",
        hint: "seek",
        help: "replay: seek to a time (14:32:10, -5m) or a revision (r1234)",
    },
    /// Replay: bookmark the cursor's moment with a line of text, saved in a file beside
    /// the recording (never in it).
    Bookmark {
        name: "bookmark",
        hint: "bookmark",
        help: "replay: bookmark this moment with a line of text (saved beside the recording, in FILE.bookmarks)",
    },
    /// Save the screen as SVG and plain text (into `--screenshot-dir`).
    Screenshot {
        name: "screenshot",
        hint: "screenshot",
        help: "save the screen as SVG and text (--screenshot-dir)",
    },
    /// Show the previous (older) version of the open key.
    OlderVersion {
        name: "older_version",
        hint: "older",
        help: "show the older version",
    },
    /// Show the next (newer) version of the open key.
    NewerVersion {
        name: "newer_version",
        hint: "newer",
        help: "show the newer version",
    },
    /// Show the open key's value as YAML or as JSON.
    ToggleJson {
        name: "toggle_json",
        hint: "yaml/json",
        help: "show the value as YAML / as JSON",
    },
    /// Show the diff of the shown version against the previous (or the marked) one.
    ToggleDiff {
        name: "toggle_diff",
        hint: "diff",
        help: "diff against the previous or the marked version",
    },
    /// Mark the shown version as the other side of the diff (again: unmark).
    MarkVersion {
        name: "mark_version",
        hint: "mark",
        help: "mark the shown version as the diff base (again: unmark)",
    },
    /// Open or close the encryption-at-rest summary per resource.
    ToggleEncryption {
        name: "toggle_encryption",
        hint: "encryption",
        help: "encryption at rest per resource (identity, provider:key)",
    },
    /// Open the command palette: every action, and go to a resource, key, revision or
    /// (replay) time, by fuzzy match.
    Palette {
        name: "palette",
        hint: "commands",
        help: "command palette: every action; go to a resource, a key, a revision or (replay) a time",
    },
    /// Apply the filter being typed.
    Submit {
        name: "submit",
        hint: "apply",
        help: "apply the filter",
    },
    /// Abandon the filter being typed.
    Cancel {
        name: "cancel",
        hint: "cancel",
        help: "cancel typing",
    },
    /// Delete the last character of the filter being typed.
    DeleteChar {
        name: "delete_char",
        hint: "delete",
        help: "delete a character",
    },
    /// Clear the filter being typed.
    ClearInput {
        name: "clear_input",
        hint: "clear",
        help: "clear the typed text",
    },
}

impl Action {
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
                | Action::Bookmark
        )
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
