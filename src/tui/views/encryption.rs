//! The encryption-at-rest summary: per resource, how many live values are stored in
//! plaintext (`identity`) and how many under each encryption `provider:key`, counted from
//! the value prefixes (nothing is decrypted), with the selected row spelled out in a
//! sentence below the table. Counts come from [`crate::derive::encryption::StorageSummary`],
//! computed in update.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table, TableState, Wrap};
use ratatui::Frame;

use super::{pane, selection, sp};
use crate::derive::encryption::ResourceStorage;
use crate::tui::app::App;
use crate::tui::text::{thousands, thousands_i};
use crate::tui::theme::Role;

/// Draws the summary into `area`.
pub(crate) fn draw(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.settings.theme;
    let Some(sum) = &app.encryption.summary else {
        f.render_widget(
            Paragraph::new(sp(app, "counting…", Role::Muted)).block(pane(
                app,
                vec![sp(app, "Encryption at rest", Role::PanelTitle)],
                true,
            )),
            area,
        );
        return;
    };
    let total = sum.total();
    let title = vec![
        sp(app, "Encryption at rest", Role::PanelTitle),
        sp(
            app,
            format!(
                " · revision {} · {} values (by prefix, not decrypted)",
                thousands_i(sum.revision),
                thousands(total.values)
            ),
            Role::Muted,
        ),
    ];
    let block = pane(app, title, true);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let [table_area, text_area] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(4.min(inner.height / 2)),
    ])
    .areas(inner);
    let all: Vec<&ResourceStorage> = sum.rows.iter().chain(std::iter::once(&total)).collect();
    let selected = app.encryption.selected.unwrap_or(0).min(all.len() - 1);
    let rows_h = table_area.height.saturating_sub(1) as usize;
    app.drawn.encryption.set(rows_h);
    let scroll = if rows_h > 0 && selected >= rows_h {
        selected + 1 - rows_h
    } else {
        0
    };
    let last = all.len() - 1;
    let rows: Vec<Row> = all
        .iter()
        .enumerate()
        .skip(scroll)
        .take(rows_h)
        .map(|(i, r)| {
            let enc = r.encrypted_total();
            let num = |n: u64, role: Role| {
                Cell::from(Line::from(sp(app, thousands(n), role)).right_aligned())
            };
            let name_role = if i == last {
                Role::TableHeader
            } else {
                Role::Text
            };
            Row::new(vec![
                Cell::from(sp(app, r.resource.clone(), name_role)),
                num(r.values, Role::Text),
                num(enc, if enc > 0 { Role::StatusOk } else { Role::Muted }),
                num(
                    r.plaintext,
                    if enc > 0 && r.plaintext > 0 {
                        // Mixed: some values still wait for a rewrite.
                        Role::Note
                    } else {
                        Role::Text
                    },
                ),
                Cell::from(r.providers()),
            ])
        })
        .collect();
    let name_w = all
        .iter()
        .map(|r| r.resource.chars().count())
        .max()
        .unwrap_or(8)
        .clamp(8, 40) as u16;
    let header = Row::new(vec![
        Cell::from("resource"),
        Cell::from(Line::from("values").right_aligned()),
        Cell::from(Line::from("encrypted").right_aligned()),
        Cell::from(Line::from("plaintext").right_aligned()),
        Cell::from("by provider:key"),
    ])
    .style(t.get(Role::TableHeader));
    let widths = [
        Constraint::Length(name_w),
        Constraint::Length(8),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Min(10),
    ];
    let mut state = TableState::default();
    state.select(Some(selected - scroll));
    f.render_stateful_widget(
        Table::new(rows, widths)
            .header(header)
            .column_spacing(2)
            .row_highlight_style(selection(app, true)),
        table_area,
        &mut state,
    );
    let text = vec![
        Line::from(sp(app, all[selected].sentence(), Role::HeaderValue)),
        Line::from(sp(
            app,
            "plaintext = the identity provider (protobuf, JSON, CBOR as written); a value is \
             only re-encrypted when it is written again",
            Role::Muted,
        )),
    ];
    f.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: true })
            .block(Block::default()),
        text_area,
    );
}
