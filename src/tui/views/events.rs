//! The event stream panel: the replica's PUT/DELETE log newest first (or the frozen copy
//! while paused), filtered by text, with the notes (resyncs, reconnects) underneath.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;

use super::{pane, selection, sp};
use crate::decode;
use crate::model::{escape_bytes, EventKind};
use crate::store::UnseenChange;
use crate::tui::app::App;
use crate::tui::text::{bytes, clock, thousands, thousands_i};
use crate::tui::theme::Role;

/// Draws the panel into `area`.
pub(crate) fn draw(app: &App, f: &mut Frame, area: Rect) {
    let notes = app.session.notes();
    let notes_h = if notes.is_empty() {
        0
    } else {
        (notes.len() as u16 + 2).min(if area.height >= 30 { 8 } else { 5 })
    };
    let [list, notes_area] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(notes_h)]).areas(area);
    draw_list(app, f, list);
    if notes_h > 0 {
        draw_notes(app, f, notes_area);
    }
}

fn draw_list(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.settings.theme;
    let rows_h = area.height.saturating_sub(3) as usize;
    app.drawn.events.set(rows_h);
    let e = &app.events;
    let total = app.events_len();
    let selected = e.selected.min(total.saturating_sub(1));
    let mut scroll = e.scroll.min(selected);
    if rows_h > 0 && selected >= scroll + rows_h {
        scroll = selected + 1 - rows_h;
    }
    app.drawn.events_rows.set(crate::tui::state::ListRows {
        x0: area.x,
        x1: area.right(),
        y0: area.y + 2,
        first: scroll,
        rows: rows_h.min(total.saturating_sub(scroll)),
    });
    let wide = area.width >= 110;
    // Below this the table cannot hold every column at full width, and ratatui would cut
    // numbers from the left (`,546` for 4,546): drop kind and size instead.
    let narrow = area.width < 64;
    let prefix = app.session.replica.prefix();
    let off = app.settings.utc_offset;
    // Over etcd's db file every stamp is the file's modification time, not the event's:
    // no time is shown for a revision.
    let timeless = app.revision_timeline().is_some();
    let when = |at| {
        if timeless {
            "—".to_string()
        } else {
            clock(at, off)
        }
    };
    let mut header = vec!["time", "revision", "op"];
    let mut widths = vec![
        Constraint::Length(8),
        Constraint::Length(10),
        Constraint::Length(6),
    ];
    if wide {
        header.push("resource");
        widths.push(Constraint::Length(22));
    }
    if !narrow {
        header.extend(["kind", "size"]);
        widths.extend([
            Constraint::Length(if wide { 18 } else { 12 }),
            Constraint::Length(9),
        ]);
    }
    // Who made each write, when managedFields say (see `EventRecord::writer`).
    let show_writer = area.width >= 170;
    if show_writer {
        header.push("writer");
        widths.push(Constraint::Length(34));
    }
    header.push(if wide { "key" } else { "key (under prefix)" });
    widths.push(Constraint::Min(10));
    // The key column's width: what the borders and the other columns (each with one space
    // before the next) leave.
    let fixed: u16 = widths
        .iter()
        .map(|c| match c {
            Constraint::Length(n) => n + 1,
            _ => 0,
        })
        .sum();
    let key_w = usize::from(area.width.saturating_sub(2 + fixed));
    let rows: Vec<Row> = app
        .events_filtered()
        .skip(scroll)
        .take(rows_h)
        .map(|ev| {
            // A row synthesized after a gap says so in every column that could mislead:
            // its time is the relist's, a delete's revision is somewhere in the gap.
            if let Some(note) = &ev.note {
                // etcd replaced here: the rows below are the old etcd's.
                let mut cells = vec![
                    Cell::from(Span::styled(when(ev.at), t.get(Role::Muted))),
                    Cell::from(Line::from(thousands_i(ev.revision)).right_aligned()),
                    Cell::from(Span::styled("RESET", t.get(Role::Alert))),
                ];
                let blank =
                    usize::from(wide) + if narrow { 0 } else { 2 } + usize::from(show_writer);
                cells.extend((0..blank).map(|_| Cell::from("")));
                cells.push(Cell::from(Span::styled(
                    format!("── {note} (rows below: the old etcd)"),
                    t.get(Role::Note),
                )));
                return Row::new(cells);
            }
            let (op, role) = match (ev.unseen, ev.kind) {
                (Some(u), _) => (
                    match u.change {
                        UnseenChange::Created => "CREATE",
                        UnseenChange::Changed => "CHANGE",
                        UnseenChange::Deleted => "DELETE",
                    },
                    Role::Note,
                ),
                (None, EventKind::Put) => ("PUT", Role::Put),
                (None, EventKind::Delete) => ("DELETE", Role::Delete),
            };
            let writer = if show_writer {
                ev.writer()
            } else {
                String::new()
            };
            let (kind, size) = if ev.kind == EventKind::Delete && ev.value.is_empty() {
                ("-".to_string(), "-".to_string())
            } else {
                let s = decode::summarize(&ev.value);
                let kind = s
                    .kind
                    .or_else(|| s.format.map(|f| format!("({})", f.label())))
                    .unwrap_or_default();
                (kind, bytes(ev.value.len() as u64))
            };
            let key = if wide {
                escape_bytes(&ev.key).into_owned()
            } else {
                let rel = ev
                    .key
                    .strip_prefix(prefix)
                    .map(|r| r.strip_prefix(b"/").unwrap_or(r))
                    .unwrap_or(&ev.key);
                escape_bytes(rel).into_owned()
            };
            // Too long: cut from the left, so the namespace and name stay.
            let key = elide_left(key, key_w);
            let (time, time_role) = match ev.unseen {
                Some(_) => ("unseen".to_string(), Role::Note),
                None => (when(ev.at), Role::Muted),
            };
            let revision = match ev.unseen {
                Some(u) if u.change == UnseenChange::Deleted => format!("{}–{}", u.from, u.to),
                _ => thousands_i(ev.revision),
            };
            let mut cells = vec![
                Cell::from(Span::styled(time, t.get(time_role))),
                Cell::from(Line::from(revision).right_aligned()),
                Cell::from(Span::styled(op, t.get(role))),
            ];
            if wide {
                cells.push(Cell::from(
                    app.session.replica.resource_name(ev.resource).to_string(),
                ));
            }
            if !narrow {
                cells.push(Cell::from(kind));
                cells.push(Cell::from(Line::from(size).right_aligned()));
            }
            if show_writer {
                cells.push(Cell::from(Span::styled(writer, t.get(Role::Muted))));
            }
            cells.push(Cell::from(key));
            Row::new(cells)
        })
        .collect();
    let header = Row::new(
        header
            .into_iter()
            .map(|h| {
                if h == "revision" || h == "size" {
                    Cell::from(Line::from(h).right_aligned())
                } else {
                    Cell::from(h)
                }
            })
            .collect::<Vec<_>>(),
    )
    .style(t.get(Role::TableHeader));

    let mut title = vec![
        sp(app, "Events", Role::PanelTitle),
        sp(
            app,
            format!(" {} shown", thousands(total as u64)),
            Role::Muted,
        ),
    ];
    if app.cursor.paused && app.cursor.replay.is_none() {
        title.push(Span::raw(" "));
        title.push(sp(app, " PAUSED ", Role::StatusWarn));
    } else if e.follow {
        title.push(sp(app, " · following newest", Role::Muted));
    }
    if !e.filter.is_empty() {
        title.push(sp(app, format!(" filter \"{}\"", e.filter), Role::Filter));
    }
    let mut state = TableState::default();
    if total > 0 {
        state.select(Some(selected - scroll));
    }
    let table = Table::new(rows, widths)
        .header(header)
        .column_spacing(1)
        .row_highlight_style(selection(app, true))
        .block(pane(app, title, true));
    if total == 0 {
        let msg = if e.filter.is_empty() {
            "no watch events yet"
        } else {
            "no event matches the filter"
        };
        let [_, inner] = Layout::vertical([Constraint::Length(2), Constraint::Min(0)]).areas(area);
        f.render_stateful_widget(table, area, &mut state);
        let inner = inner.inner(ratatui::layout::Margin::new(2, 0));
        f.render_widget(Paragraph::new(sp(app, msg, Role::Muted)), inner);
        return;
    }
    f.render_stateful_widget(table, area, &mut state);
}

/// `s` in at most `w` columns: whole when it fits, else `…` and its last `w - 1` chars.
fn elide_left(s: String, w: usize) -> String {
    let n = s.chars().count();
    if n <= w || w == 0 {
        return s;
    }
    let tail: String = s.chars().skip(n - (w - 1)).collect();
    format!("…{tail}")
}

fn draw_notes(app: &App, f: &mut Frame, area: Rect) {
    let n = area.height.saturating_sub(2) as usize;
    let off = app.settings.utc_offset;
    // Over a db file a note's stamp is the file's modification time, as every other.
    let timeless = app.revision_timeline().is_some();
    let lines: Vec<Line> = app
        .session
        .notes()
        .iter()
        .rev()
        .take(n)
        .map(|(at, text)| {
            let when = if timeless {
                "—".to_string()
            } else {
                clock(*at, off)
            };
            Line::from(vec![
                sp(app, when, Role::Muted),
                Span::raw(" "),
                sp(app, text.to_string(), Role::Note),
            ])
        })
        .collect();
    let title = vec![
        sp(app, "Notes", Role::PanelTitle),
        sp(
            app,
            format!(" {} (newest first)", app.session.notes().len()),
            Role::Muted,
        ),
    ];
    f.render_widget(Paragraph::new(lines).block(pane(app, title, false)), area);
}
