//! The key browser: resources with key counts and bytes on the left, the selected
//! resource's keys on the right (virtualized: only the visible rows are fetched), each with
//! its revision, version, size and storage (`identity` or the encryption `provider:key`).
//! Under the resources, the selected resource's writers ([`super::writers`]). An opened
//! key is drawn by [`super::opened_key`].

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;

use super::{pane, selection, sp};
use crate::derive::encryption::{storage_label, IDENTITY};
use crate::derive::keys::SCAN_LIMIT;
use crate::model::escape_bytes;
use crate::tui::app::App;
use crate::tui::state::KeysFocus;
use crate::tui::text::{bytes, thousands, thousands_i};
use crate::tui::theme::Role;

/// Draws the resource list and key list into `area`.
pub(crate) fn draw(app: &App, f: &mut Frame, area: Rect) {
    let left_w = (area.width * 35 / 100).clamp(24.min(area.width), 48);
    let [left, right] =
        Layout::horizontal([Constraint::Length(left_w), Constraint::Min(0)]).areas(area);
    // The selected resource's writers under the list, when there is room for both.
    let selected = app.keys.resource.as_ref().and_then(|name| {
        app.session
            .replica
            .resources()
            .iter()
            .position(|r| &r.resource == name)
    });
    match selected {
        Some(id) if left.height >= 20 => {
            let writers_h = (left.height / 3).clamp(6, 12);
            let [list, writers] =
                Layout::vertical([Constraint::Min(0), Constraint::Length(writers_h)]).areas(left);
            draw_resources(app, f, list);
            super::writers::draw(app, f, writers, Some(id as u32));
        }
        _ => draw_resources(app, f, left),
    }
    draw_keys(app, f, right);
}

fn draw_resources(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.settings.theme;
    let focused = app.keys.focus == KeysFocus::Resources;
    let mut res: Vec<&crate::store::ResourceStats> =
        app.session.replica.resources().iter().collect();
    res.sort_by(|a, b| a.resource.cmp(&b.resource));
    let rows_h = area.height.saturating_sub(3) as usize;
    app.drawn.resources.set(rows_h);
    let sel = app
        .keys
        .resource
        .as_ref()
        .and_then(|r| res.iter().position(|s| &s.resource == r));
    let scroll = match sel {
        Some(s) if rows_h > 0 && s >= rows_h => s + 1 - rows_h,
        _ => 0,
    };
    app.drawn.resources_rows.set(crate::tui::state::ListRows {
        x0: area.x,
        x1: area.right(),
        y0: area.y + 2,
        first: scroll,
        rows: rows_h.min(res.len().saturating_sub(scroll)),
    });
    let show_bytes = area.width >= 36;
    let rows: Vec<Row> = res
        .iter()
        .skip(scroll)
        .take(rows_h)
        .map(|r| {
            let mut cells = vec![
                Cell::from(r.resource.clone()),
                Cell::from(Line::from(thousands(r.keys)).right_aligned()),
            ];
            if show_bytes {
                cells.push(Cell::from(Line::from(bytes(r.bytes)).right_aligned()));
            }
            Row::new(cells)
        })
        .collect();
    let mut widths = vec![Constraint::Min(8), Constraint::Length(8)];
    let mut header = vec![
        Cell::from("resource"),
        Cell::from(Line::from("keys").right_aligned()),
    ];
    if show_bytes {
        widths.push(Constraint::Length(10));
        header.push(Cell::from(Line::from("bytes").right_aligned()));
    }
    let mut state = TableState::default();
    state.select(sel.map(|s| s - scroll));
    let title = vec![
        sp(app, "Resources", Role::PanelTitle),
        sp(app, format!(" {}", res.len()), Role::Muted),
    ];
    let table = Table::new(rows, widths)
        .header(Row::new(header).style(t.get(Role::TableHeader)))
        .column_spacing(1)
        .row_highlight_style(selection(app, focused))
        .block(pane(app, title, focused));
    f.render_stateful_widget(table, area, &mut state);
}

fn draw_keys(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.settings.theme;
    let focused = app.keys.focus == KeysFocus::Keys;
    let rows_h = area.height.saturating_sub(3) as usize;
    app.drawn.keys.set(rows_h);
    let prefix = app.keys_prefix().cloned();
    let scan = app.key_rows(rows_h);
    let sel = app
        .keys
        .selected
        .as_ref()
        .and_then(|s| scan.keys.iter().position(|k| k == s));
    app.drawn.keys_rows.set(crate::tui::state::ListRows {
        x0: area.x,
        x1: area.right(),
        y0: area.y + 2,
        first: 0,
        rows: scan.keys.len().min(rows_h),
    });
    app.drawn.keys_selected.set(sel);
    // Widths from what is visible, so narrow terminals keep room for the name.
    let mut w_rev = "mod rev".len();
    let mut w_ver = "ver".len();
    let mut w_size = "size".len();
    let mut w_storage = "storage".len();
    let rows: Vec<Row> = scan
        .keys
        .iter()
        .map(|k| {
            let rel = prefix
                .as_ref()
                .and_then(|p| k.strip_prefix(&p[..]))
                .unwrap_or(k);
            let name = if rel.is_empty() {
                escape_bytes(k)
            } else {
                escape_bytes(rel)
            };
            // Sizes and storage labels only: values stay packed.
            let v = app.session.replica.get_meta(k);
            let (rev, ver, size, storage) = match v {
                Some(v) => (
                    thousands_i(v.mod_revision),
                    v.version.to_string(),
                    bytes(v.size.unwrap_or(0) as u64),
                    // A packed value is plaintext: values encrypted at rest never are.
                    v.raw.map_or_else(|| IDENTITY.to_string(), storage_label),
                ),
                None => ("-".into(), "-".into(), "-".into(), "-".into()),
            };
            w_rev = w_rev.max(rev.len());
            w_ver = w_ver.max(ver.len());
            w_size = w_size.max(size.len());
            w_storage = w_storage.max(storage.chars().count()).min(20);
            let storage_role = if storage == IDENTITY {
                Role::Muted
            } else {
                Role::Text
            };
            Row::new(vec![
                Cell::from(name.into_owned()),
                Cell::from(Line::from(rev).right_aligned()),
                Cell::from(Line::from(ver).right_aligned()),
                Cell::from(Line::from(size).right_aligned()),
                Cell::from(sp(app, storage, storage_role)),
            ])
        })
        .collect();
    let header = Row::new(vec![
        Cell::from("namespace/name"),
        Cell::from(Line::from("mod rev").right_aligned()),
        Cell::from(Line::from("ver").right_aligned()),
        Cell::from(Line::from("size").right_aligned()),
        Cell::from("storage"),
    ])
    .style(t.get(Role::TableHeader));
    let widths = [
        Constraint::Min(10),
        Constraint::Length(w_rev as u16),
        Constraint::Length(w_ver as u16),
        Constraint::Length(w_size as u16),
        Constraint::Length(w_storage as u16),
    ];
    let count = app
        .keys
        .resource
        .as_ref()
        .and_then(|r| {
            app.session
                .replica
                .resources()
                .iter()
                .find(|s| &s.resource == r)
        })
        .map_or(0, |s| s.keys);
    let mut title = vec![
        sp(
            app,
            prefix
                .as_ref()
                .map_or_else(|| "Keys".to_string(), |p| escape_bytes(p).into_owned()),
            Role::PanelTitle,
        ),
        sp(
            app,
            format!(
                " {} key{}",
                thousands(count),
                if count == 1 { "" } else { "s" }
            ),
            Role::Muted,
        ),
    ];
    if !app.keys.filter.is_empty() {
        title.push(sp(
            app,
            format!(" filter \"{}\"", app.keys.filter),
            Role::Filter,
        ));
    }
    if scan.limited {
        title.push(sp(
            app,
            format!(
                " (searched the first {} keys only; refine the filter)",
                thousands(SCAN_LIMIT as u64)
            ),
            Role::Note,
        ));
    }
    let mut state = TableState::default();
    state.select(sel);
    let table = Table::new(rows, widths)
        .header(header)
        .column_spacing(1)
        .row_highlight_style(selection(app, focused))
        .block(pane(app, title, focused));
    f.render_stateful_widget(table, area, &mut state);
    if scan.keys.is_empty() {
        // An empty prefix: say which prefixes do hold keys (the source's note).
        let empty_note = app.session.notes().iter().rev().find_map(|(_, n)| match n {
            crate::store::Note::Text(t) if t.starts_with("no keys under") => Some(t.clone()),
            _ => None,
        });
        let msg: String = if scan.limited {
            format!(
                "no match in the {} keys searched (the rest were not); refine the filter",
                thousands(SCAN_LIMIT as u64)
            )
        } else if !app.keys.filter.is_empty() {
            "no key matches the filter".into()
        } else if app.keys.resource.is_none() {
            match (&empty_note, app.session.replica.live_keys()) {
                (Some(n), 0) => n.clone(),
                _ => "no keys yet".into(),
            }
        } else {
            "no live keys in this resource".into()
        };
        let r = Rect {
            x: area.x + 2,
            y: area.y + 2,
            width: area.width.saturating_sub(4),
            height: area.height.saturating_sub(3).min(3),
        };
        f.render_widget(
            Paragraph::new(sp(app, msg, Role::Muted)).wrap(ratatui::widgets::Wrap { trim: true }),
            r,
        );
    }
}
