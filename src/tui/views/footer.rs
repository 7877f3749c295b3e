//! The hint bar on the last row, generated from the keymap: help first, then the current
//! mode's own bindings, then a few global ones, as many as fit. While a filter is typed it
//! shows the prompt instead.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::sp;
use crate::tui::action::Action;
use crate::tui::app::App;
use crate::tui::keymap::Mode;
use crate::tui::theme::Role;

/// Global actions worth a hint in every mode, after the mode's own.
const GLOBAL_HINTS: &[Action] = &[Action::NextPanel, Action::Quit];

/// The replay's timeline keys, first in the hint bar of a replay.
const REPLAY_HINTS: [Action; 6] = [
    Action::TogglePause,
    Action::SpeedUp,
    Action::SlowDown,
    Action::StepEvent,
    Action::SeekPrompt,
    Action::NextMarker,
];

/// Draws the hint bar (or the filter prompt) into the one-row `area`.
pub(crate) fn draw(app: &App, f: &mut Frame, area: Rect) {
    if let Some(text) = app.input_text() {
        const SEEK_FORMS: &str = " seek to (14:32:10, -5m, +30s, r1234): ";
        // Over etcd's db file, which keeps revisions and no times.
        const REVISION_FORMS: &str = " seek to revision (r1234, start, end): ";
        let width = area.width as usize;
        let prompt = if app.typing_seek() {
            let (forms, short) = if app.revision_timeline().is_some() {
                (REVISION_FORMS, " seek to revision: ")
            } else {
                (SEEK_FORMS, " seek to: ")
            };
            // The forms only where they leave room to type (20 columns).
            if width >= forms.chars().count() + 20 {
                forms
            } else {
                short
            }
        } else if app.typing_bookmark() {
            " bookmark (Enter saves, Esc cancels): "
        } else if app.palette_open() {
            " : "
        } else {
            " filter: "
        };
        // What is typed stays in sight: its end, when the row cannot hold all of it.
        let room = width.saturating_sub(prompt.chars().count() + 1).max(1);
        let n = text.chars().count();
        let shown: String = text.chars().skip(n.saturating_sub(room)).collect();
        let mut spans = vec![
            sp(app, prompt, Role::Filter),
            Span::raw(shown),
            sp(app, "▏", Role::Filter),
            Span::raw("  "),
        ];
        spans.extend(hints(app, Mode::Filter, &[], area.width as usize / 2));
        f.render_widget(Paragraph::new(Line::from(spans)), area);
        return;
    }
    let mode = app.mode();
    let mut first = vec![Action::ToggleHelp];
    if mode == Mode::Help {
        first = vec![Action::Back];
    }
    let mut actions: Vec<Action> = first;
    if app.cursor().replay.is_some() && mode != Mode::Help {
        // The timeline's keys come first in a replay.
        actions.extend(REPLAY_HINTS);
    }
    let mut own: Vec<Action> = app
        .settings
        .keymap
        .bindings(mode)
        .into_iter()
        .map(|b| b.action)
        .filter(|a| !is_movement(*a))
        .collect();
    if mode == Mode::Events {
        // Pause is global (it freezes every panel) but belongs with the event list's hints.
        own.push(Action::TogglePause);
        own.sort();
    }
    for a in own {
        if !actions.contains(&a) {
            actions.push(a);
        }
    }
    for a in GLOBAL_HINTS {
        if !actions.contains(a) {
            actions.push(*a);
        }
    }
    let spans = hints(app, mode, &actions, area.width as usize);
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn is_movement(a: Action) -> bool {
    matches!(
        a,
        Action::Up
            | Action::Down
            | Action::PageUp
            | Action::PageDown
            | Action::Top
            | Action::Bottom
    )
}

/// `key label` pairs for `actions` (all of the mode's bindings when empty), up to `width`.
fn hints(app: &App, mode: Mode, actions: &[Action], width: usize) -> Vec<Span<'static>> {
    let list: Vec<Action> = if actions.is_empty() {
        app.settings
            .keymap
            .bindings(mode)
            .into_iter()
            .map(|b| b.action)
            .collect()
    } else {
        actions.to_vec()
    };
    let mut out = Vec::new();
    let mut used = 0;
    for a in list {
        let Some(key) = app.settings.keymap.keys_for(mode, a).into_iter().next() else {
            continue;
        };
        let key = format!(" {key} ");
        // The pause key says what it does now.
        let hint = match a {
            Action::TogglePause if app.paused() => "play",
            _ => a.hint(),
        };
        let label = format!(" {hint}  ");
        let w = key.chars().count() + label.chars().count();
        if used + w > width {
            break;
        }
        used += w;
        out.push(sp(app, key, Role::HintKey));
        out.push(sp(app, label, Role::HintLabel));
    }
    out
}
