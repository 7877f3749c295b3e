//! The help screen, generated from the keymap: for each mode, every bound action with its
//! keys and description; configuration warnings first when there are any.

use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;

use super::{pane, sp, wrap_text};
use crate::tui::app::App;
use crate::tui::keymap::Mode;
use crate::tui::theme::Role;

/// The help text, one entry per line, each wrapped into `width` columns: descriptions
/// continue under their first word.
fn lines(app: &App, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    if !app.s.warnings.is_empty() {
        out.push(Line::from(sp(
            app,
            "Warnings (configuration, recording, replay)",
            Role::TableHeader,
        )));
        for w in &app.s.warnings {
            for l in wrap_text(w, width.saturating_sub(2)) {
                out.push(Line::from(sp(app, format!("  {l}"), Role::Warning)));
            }
        }
        out.push(Line::from(""));
    }
    let name_w = Mode::ALL
        .iter()
        .flat_map(|m| app.s.keymap.bindings(*m))
        .map(|b| b.action.name().len())
        .max()
        .unwrap_or(0)
        .max(15);
    for mode in Mode::ALL {
        let bindings = app.s.keymap.bindings(*mode);
        if bindings.is_empty() {
            continue;
        }
        let title = format!("[{}]{}", mode.name(), mode_note(*mode));
        for l in wrap_text(&title, width) {
            out.push(Line::from(sp(app, l, Role::TableHeader)));
        }
        for b in bindings {
            let keys = b
                .keys
                .iter()
                .map(|k| k.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            let head = vec![
                sp(app, format!("  {keys:<16} "), Role::HintLabel),
                sp(app, format!("{:<name_w$} ", b.action.name()), Role::Filter),
            ];
            let indent: usize = head.iter().map(|s| s.width()).sum();
            // Too narrow for a column of descriptions: one that does not fit beside its
            // name goes under it.
            let desc = b.action.description();
            let room = width.saturating_sub(indent);
            let (indent, mut first) = if room >= 12 || desc.chars().count() <= room {
                (indent, head)
            } else {
                out.push(Line::from(head));
                (4, vec![Span::raw("    ")])
            };
            for l in wrap_text(desc, width.saturating_sub(indent)) {
                first.push(sp(app, l, Role::Text));
                out.push(Line::from(std::mem::replace(
                    &mut first,
                    vec![Span::raw(" ".repeat(indent))],
                )));
            }
        }
    }
    out
}

fn mode_note(mode: Mode) -> &'static str {
    match mode {
        Mode::Global => " everywhere unless a mode binds the key",
        Mode::Growth => " revision growth, top resources and who writes them (managedFields)",
        Mode::Events => " event stream (the filter matches key, resource, PUT/DELETE and writer)",
        Mode::Keys => " key browser",
        Mode::Detail => " an opened key",
        Mode::Encryption => " encryption at rest per resource",
        Mode::Apiserver => " apiserver panel: ↑/↓ scroll the focused section",
        Mode::Help => " this screen",
        Mode::Filter => " typing a filter, a seek, or in the command palette (:)",
    }
}

/// Draws help over `area`, scrolled by `scroll` lines.
pub(crate) fn draw(app: &App, scroll: usize, f: &mut Frame, area: Rect) {
    let w = area.width.saturating_sub(4).min(96);
    let h = area.height.saturating_sub(2).max(3).min(area.height);
    let [col] = Layout::horizontal([Constraint::Length(w)])
        .flex(Flex::Center)
        .areas(area);
    let [rect] = Layout::vertical([Constraint::Length(h)])
        .flex(Flex::Center)
        .areas(col);
    let all = lines(app, rect.width.saturating_sub(2) as usize);
    let inner_h = rect.height.saturating_sub(2) as usize;
    let max_scroll = all.len().saturating_sub(inner_h);
    app.view.help.record(inner_h, max_scroll);
    let scroll = scroll.min(max_scroll);
    let title = vec![
        sp(app, "Help", Role::PanelTitle),
        sp(
            app,
            format!(" — keys from the keymap ({} lines)", all.len()),
            Role::Muted,
        ),
    ];
    f.render_widget(Clear, rect);
    f.render_widget(
        Paragraph::new(all)
            .scroll((scroll.min(u16::MAX as usize) as u16, 0))
            .block(pane(app, title, true)),
        rect,
    );
}
