//! The command palette over the panel: the typed text, then the candidates
//! ([`crate::tui::state::palette::entries`]) with the chosen one highlighted.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;

use super::{fit, pane, sp};
use crate::tui::app::App;
use crate::tui::theme::Role;

/// Candidates shown at most.
const SHOWN: usize = 12;

/// Draws the palette near the top of `area` when it is open.
pub(crate) fn draw(app: &App, text: &str, f: &mut Frame, area: Rect) {
    let all = app.palette_entries(text);
    let selected = app.palette_selected.min(all.len().saturating_sub(1));
    let w = area.width.saturating_sub(4).min(90);
    let rows = all.len().clamp(1, SHOWN) as u16;
    let h = (rows + 3).min(area.height);
    let [_, col, _] = Layout::horizontal([
        Constraint::Min(0),
        Constraint::Length(w),
        Constraint::Min(0),
    ])
    .areas(area);
    let [_, bx, _] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(h),
        Constraint::Min(0),
    ])
    .areas(col);
    let inner_w = usize::from(w.saturating_sub(2));
    let mut lines = vec![Line::from(vec![
        sp(app, ": ", Role::Filter),
        Span::raw(text.to_string()),
        sp(app, "▏", Role::Filter),
    ])];
    if all.is_empty() {
        lines.push(Line::from(sp(app, "nothing matches", Role::Muted)));
    }
    // Keep the chosen row in view.
    let first = selected.saturating_sub(SHOWN - 1);
    for (i, e) in all.iter().enumerate().skip(first).take(SHOWN) {
        let hint_w = e.hint.chars().count().min(inner_w / 2);
        let label_w = inner_w.saturating_sub(hint_w + 2);
        let label = format!("{:<label_w$}", fit(&e.label, label_w));
        let role = if i == selected {
            Role::Selection
        } else {
            Role::Text
        };
        lines.push(Line::from(vec![
            sp(app, format!(" {label}"), role),
            sp(app, format!(" {}", fit(&e.hint, hint_w)), Role::Muted),
        ]));
    }
    let title = vec![
        sp(app, "Command palette", Role::PanelTitle),
        sp(
            app,
            format!(" {} · ↑↓ choose · enter run · esc close", all.len()),
            Role::Muted,
        ),
    ];
    f.render_widget(Clear, bx);
    f.render_widget(Paragraph::new(lines).block(pane(app, title, true)), bx);
}
