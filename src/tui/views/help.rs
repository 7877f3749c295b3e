//! The help screen, generated from the keymap: for each mode, every bound action with its
//! keys and description; configuration warnings first when there are any.

use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;

use super::{pane, sp};
use crate::tui::app::App;
use crate::tui::keymap::Mode;
use crate::tui::theme::Role;

/// The help text, one entry per line.
fn lines(app: &App) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    if !app.s.warnings.is_empty() {
        out.push(Line::from(sp(
            app,
            "Configuration warnings",
            Role::TableHeader,
        )));
        for w in &app.s.warnings {
            out.push(Line::from(sp(app, format!("  {w}"), Role::Warning)));
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
        out.push(Line::from(sp(
            app,
            format!("[{}]{}", mode.name(), mode_note(*mode)),
            Role::TableHeader,
        )));
        for b in bindings {
            let keys = b
                .keys
                .iter()
                .map(|k| k.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            out.push(Line::from(vec![
                sp(app, format!("  {keys:<16} "), Role::HintLabel),
                sp(app, format!("{:<name_w$} ", b.action.name()), Role::Filter),
                sp(app, b.action.description(), Role::Text),
            ]));
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
    let all = lines(app);
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
