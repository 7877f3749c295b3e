//! The key browser: resources with key counts and bytes on the left, the selected
//! resource's keys on the right (virtualized: only the visible rows are fetched), and the
//! detail of an opened key (metadata, history, decoded value).

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;

use super::{fit, pane, selection, sp};
use crate::decode;
use crate::model::{escape_bytes, KeyPath};
use crate::tui::app::{App, DetailState, KeysFocus};
use crate::tui::browse::SCAN_LIMIT;
use crate::tui::format::{bytes, clock, thousands, thousands_i};
use crate::tui::theme::Role;

/// Draws the resource list and key list into `area`.
pub(crate) fn draw(app: &App, f: &mut Frame, area: Rect) {
    let left_w = (area.width * 35 / 100).clamp(24.min(area.width), 48);
    let [left, right] =
        Layout::horizontal([Constraint::Length(left_w), Constraint::Min(0)]).areas(area);
    draw_resources(app, f, left);
    draw_keys(app, f, right);
}

fn draw_resources(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.s.theme;
    let focused = app.keys.focus == KeysFocus::Resources;
    let mut res: Vec<&crate::store::ResourceStats> = app.replica.resources().iter().collect();
    res.sort_by(|a, b| a.resource.cmp(&b.resource));
    let rows_h = area.height.saturating_sub(3) as usize;
    app.view.resources.set(rows_h);
    let sel = app
        .keys
        .resource
        .as_ref()
        .and_then(|r| res.iter().position(|s| &s.resource == r));
    let scroll = match sel {
        Some(s) if rows_h > 0 && s >= rows_h => s + 1 - rows_h,
        _ => 0,
    };
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
    let t = &app.s.theme;
    let focused = app.keys.focus == KeysFocus::Keys;
    let rows_h = area.height.saturating_sub(3) as usize;
    app.view.keys.set(rows_h);
    let prefix = app.keys_prefix().cloned();
    let scan = app.key_rows(rows_h);
    let sel = app
        .keys
        .selected
        .as_ref()
        .and_then(|s| scan.keys.iter().position(|k| k == s));
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
            let v = app.replica.get(k);
            let (rev, ver, size) = match v {
                Some(v) => (
                    thousands_i(v.mod_revision),
                    v.version.to_string(),
                    bytes(v.value.as_ref().map_or(0, |b| b.len() as u64)),
                ),
                None => ("-".into(), "-".into(), "-".into()),
            };
            Row::new(vec![
                Cell::from(name.into_owned()),
                Cell::from(Line::from(rev).right_aligned()),
                Cell::from(Line::from(ver).right_aligned()),
                Cell::from(Line::from(size).right_aligned()),
            ])
        })
        .collect();
    let header = Row::new(vec![
        Cell::from("namespace/name"),
        Cell::from(Line::from("mod rev").right_aligned()),
        Cell::from(Line::from("ver").right_aligned()),
        Cell::from(Line::from("size").right_aligned()),
    ])
    .style(t.get(Role::TableHeader));
    let widths = [
        Constraint::Min(10),
        Constraint::Length(10),
        Constraint::Length(5),
        Constraint::Length(10),
    ];
    let count = app
        .keys
        .resource
        .as_ref()
        .and_then(|r| app.replica.resources().iter().find(|s| &s.resource == r))
        .map_or(0, |s| s.keys);
    let mut title = vec![
        sp(
            app,
            prefix
                .as_ref()
                .map_or_else(|| "Keys".to_string(), |p| escape_bytes(p).into_owned()),
            Role::PanelTitle,
        ),
        sp(app, format!(" {} keys", thousands(count)), Role::Muted),
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
                " (searched {} keys; refine the filter)",
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
        let empty_note = app
            .replica
            .notes()
            .iter()
            .rev()
            .find(|(_, n)| n.starts_with("no keys under"))
            .map(|(_, n)| n.clone());
        let msg: String = if !app.keys.filter.is_empty() {
            "no key matches the filter".into()
        } else if app.keys.resource.is_none() {
            match (&empty_note, app.replica.live_keys()) {
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

/// Draws an opened key into `area`: metadata and history on top, the value below.
pub(crate) fn draw_detail(app: &App, d: &DetailState, f: &mut Frame, area: Rect) {
    let top_h = 10.min(area.height / 2).max(3.min(area.height));
    let [top, value] =
        Layout::vertical([Constraint::Length(top_h), Constraint::Min(0)]).areas(area);
    let hist_w = (area.width / 3).clamp(20.min(area.width), 56);
    let [meta, hist] =
        Layout::horizontal([Constraint::Min(0), Constraint::Length(hist_w)]).areas(top);
    draw_meta(app, d, f, meta);
    draw_history(app, d, f, hist);
    draw_value(app, d, f, value);
}

fn kv<'a>(app: &App, k: &'a str, v: String) -> Vec<Span<'a>> {
    vec![
        sp(app, k, Role::Muted),
        sp(app, v, Role::HeaderValue),
        Span::raw("  "),
    ]
}

fn draw_meta(app: &App, d: &DetailState, f: &mut Frame, area: Rect) {
    let r = &app.replica;
    let path = KeyPath::parse(r.prefix(), &d.key);
    let mut lines = vec![Line::from(vec![
        sp(app, "key ", Role::Muted),
        Span::raw(escape_bytes(&d.key).into_owned()),
    ])];
    let mut l = kv(app, "resource ", path.resource.to_string());
    if let Some(ns) = &path.namespace {
        l.extend(kv(app, "namespace ", ns.to_string()));
    }
    l.extend(kv(app, "name ", path.name.to_string()));
    lines.push(Line::from(l));
    let live = r.get(&d.key);
    match (d.history.get(d.index), &live) {
        (Some(v), _) if v.value.is_none() => {
            lines.push(Line::from(sp(
                app,
                format!("deleted at revision {}", thousands_i(v.mod_revision)),
                Role::Delete,
            )));
        }
        (Some(v), _) => {
            let mut l = kv(app, "create_revision ", thousands_i(v.create_revision));
            l.extend(kv(app, "mod_revision ", thousands_i(v.mod_revision)));
            l.extend(kv(app, "version ", v.version.to_string()));
            lines.push(Line::from(l));
            let size = v.value.as_ref().map_or(0, |b| b.len() as u64);
            let mut l = kv(app, "resourceVersion ", format!("\"{}\"", v.mod_revision));
            l.extend(kv(
                app,
                "lease ",
                if v.lease == 0 {
                    "none".to_string()
                } else {
                    format!("{:x}", v.lease)
                },
            ));
            l.extend(kv(app, "size ", bytes(size)));
            lines.push(Line::from(l));
            let sum = v
                .value
                .as_ref()
                .map(|b| decode::summarize(b))
                .unwrap_or_default();
            let mut l = kv(
                app,
                "format ",
                d.rendered
                    .as_ref()
                    .map(|r| r.format.clone())
                    .or_else(|| sum.format.as_ref().map(|f| f.label()))
                    .unwrap_or_else(|| "?".into()),
            );
            if let Some(kind) = &sum.kind {
                let av = sum.api_version.clone().unwrap_or_default();
                l.extend(kv(app, "kind ", format!("{av} {kind}").trim().to_string()));
            }
            lines.push(Line::from(l));
        }
        (None, _) => lines.push(Line::from(sp(app, "no version held", Role::Muted))),
    }
    let state = if live.is_some() { "live" } else { "deleted" };
    let mut l = kv(
        app,
        "history ",
        format!("{} versions held", d.history.len()),
    );
    l.extend(kv(app, "state ", state.to_string()));
    if d.index + 1 < d.history.len() {
        l.push(sp(
            app,
            format!("showing older version {}/{}", d.index + 1, d.history.len()),
            Role::Filter,
        ));
    }
    lines.push(Line::from(l));
    let title = vec![sp(app, "Key", Role::PanelTitle)];
    f.render_widget(
        Paragraph::new(lines)
            .wrap(ratatui::widgets::Wrap { trim: false })
            .block(pane(app, title, false)),
        area,
    );
}

fn draw_history(app: &App, d: &DetailState, f: &mut Frame, area: Rect) {
    let t = &app.s.theme;
    let rows_h = area.height.saturating_sub(2) as usize;
    let n = d.history.len();
    // Newest first; keep the shown version visible.
    let shown_row = n.saturating_sub(1).saturating_sub(d.index);
    let scroll = if rows_h > 0 && shown_row >= rows_h {
        shown_row + 1 - rows_h
    } else {
        0
    };
    let off = app.s.utc_offset;
    let rows: Vec<Row> = d
        .history
        .iter()
        .rev()
        .skip(scroll)
        .take(rows_h)
        .map(|v| {
            // A revision that arrived through a list was written at or before the list.
            let mark = if app.replica.seen_live(v.mod_revision) {
                ""
            } else {
                "≤"
            };
            let when = app
                .replica
                .time_of(v.mod_revision)
                .map(|t| format!("{mark}{}", clock(t, off)))
                .unwrap_or_else(|| "--:--:--".into());
            let (what, role) = match &v.value {
                Some(b) => (
                    format!("v{} {}", v.version, bytes(b.len() as u64)),
                    Role::Text,
                ),
                None => ("deleted".to_string(), Role::Delete),
            };
            Row::new(vec![
                Cell::from(Line::from(thousands_i(v.mod_revision)).right_aligned()),
                Cell::from(Span::styled(what, t.get(role))),
                Cell::from(Span::styled(when, t.get(Role::Muted))),
            ])
        })
        .collect();
    let mut state = TableState::default();
    if n > 0 {
        state.select(Some(shown_row - scroll));
    }
    let title = vec![
        sp(app, "History", Role::PanelTitle),
        sp(
            app,
            if area.width >= 44 {
                format!(" {n} · ≤ seen by a list")
            } else {
                format!(" {n}")
            },
            Role::Muted,
        ),
    ];
    let widths: &[Constraint] = if area.width >= 34 {
        &[
            Constraint::Length(8),
            Constraint::Min(8),
            Constraint::Length(9),
        ]
    } else {
        &[Constraint::Length(8), Constraint::Min(8)]
    };
    let table = Table::new(rows, widths.iter().copied())
        .column_spacing(1)
        .row_highlight_style(selection(app, true))
        .block(pane(app, title, false));
    f.render_stateful_widget(table, area, &mut state);
}

fn draw_value(app: &App, d: &DetailState, f: &mut Frame, area: Rect) {
    let rows_h = area.height.saturating_sub(2) as usize;
    app.view.detail.set(rows_h);
    let width = area.width.saturating_sub(2) as usize;
    let mut title = vec![sp(app, "Value", Role::PanelTitle)];
    let mut lines: Vec<Line> = Vec::new();
    match &d.rendered {
        Some(r) => {
            title.push(sp(
                app,
                format!(" {} · {} lines", r.format, thousands(r.lines.len() as u64)),
                Role::Muted,
            ));
            if let Some(e) = &r.error {
                lines.push(Line::from(sp(
                    app,
                    fit(&format!("! {e}"), width),
                    Role::Note,
                )));
            }
            let room = rows_h.saturating_sub(lines.len());
            let scroll = d.scroll.min(r.lines.len().saturating_sub(room.max(1)));
            if scroll > 0 {
                title.push(sp(app, format!(" from line {}", scroll + 1), Role::Muted));
            }
            lines.extend(
                r.lines
                    .iter()
                    .skip(scroll)
                    .take(room)
                    .map(|l| Line::from(l.clone())),
            );
        }
        None => {
            let msg = match d.history.get(d.index) {
                Some(v) => format!(
                    "(deleted at revision {}: no value)",
                    thousands_i(v.mod_revision)
                ),
                None => "(no value held)".to_string(),
            };
            lines.push(Line::from(sp(app, msg, Role::Muted)));
        }
    }
    f.render_widget(Paragraph::new(lines).block(pane(app, title, true)), area);
}
