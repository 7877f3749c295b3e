//! Who writes: the replica's write counters per `managedFields` writer
//! ([`crate::store::writers`]), as a table on Growth (every resource) and under the
//! resource list in Keys (the selected resource).

use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table};
use ratatui::Frame;

use super::{header_row, pane, sp};
use crate::store::{WriteRates, WriterStats};
use crate::tui::app::App;
use crate::tui::text::{bytes, rate, thousands};
use crate::tui::theme::Role;

/// Window of the writers' rates, in seconds.
pub(crate) const WRITERS_WINDOW: u64 = 60;

/// The rates' window now: [`WRITERS_WINDOW`], or the seconds observed so far when fewer
/// (see [`super::observed_window`]).
pub(crate) fn window(app: &App) -> u64 {
    super::observed_window(app, WRITERS_WINDOW)
}

/// Writers of `resource` (every resource when `None`) with their rates over the last
/// [`window`] seconds, busiest first: by rate, then by events since start.
pub(crate) fn ranked(app: &App, resource: Option<u32>) -> Vec<(&WriterStats, WriteRates)> {
    let now = app.now_second();
    let win = window(app);
    let mut rows: Vec<(&WriterStats, WriteRates)> = app
        .session
        .replica
        .writers()
        .iter()
        .filter(|w| resource.is_none_or(|r| w.resource == r))
        .map(|w| (w, w.rates(now, win)))
        .collect();
    rows.sort_by(|a, b| {
        b.1.writes()
            .total_cmp(&a.1.writes())
            .then((b.0.puts + b.0.deletes).cmp(&(a.0.puts + a.0.deletes)))
            .then(a.0.manager.cmp(&b.0.manager))
    });
    rows
}

/// The busiest writer of each resource (see [`ranked`]), as `manager` or `manager (how)`,
/// by resource id: one ranking for the whole table rather than one per row.
pub(crate) fn top_writers(app: &App) -> std::collections::HashMap<u32, String> {
    let mut top = std::collections::HashMap::new();
    for (w, _) in ranked(app, None) {
        top.entry(w.resource).or_insert_with(|| label(w));
    }
    top
}

/// `manager (Update/status)`, or the manager alone for plain `Update`.
fn label(w: &WriterStats) -> String {
    match w.how().as_str() {
        "" | "Update" => w.manager.clone(),
        how => format!("{} ({how})", w.manager),
    }
}

/// Draws the writers of `resource` (all when `None`) into `area`.
pub(crate) fn draw(app: &App, f: &mut Frame, area: Rect, resource: Option<u32>) {
    let t = &app.settings.theme;
    let rows = ranked(app, resource);
    let win = window(app);
    let r = &app.session.replica;
    let mut title = vec![sp(app, "Writers", Role::PanelTitle)];
    title.push(sp(
        app,
        match resource {
            Some(id) if area.width >= 40 => {
                format!(" of {} ({win} s rates)", r.resource_name(id))
            }
            Some(id) => format!(" of {}", r.resource_name(id)),
            // Cut to the rows there is room for: said, so that the count is not read as
            // all shown (each resource's writers are under its row in Keys).
            None if rows.len() > area.height.saturating_sub(3) as usize => format!(
                " by managedFields ({win} s rates; busiest {} of {} writers)",
                area.height.saturating_sub(3),
                rows.len()
            ),
            None => format!(
                " by managedFields ({win} s rates; {} writer{})",
                rows.len(),
                if rows.len() == 1 { "" } else { "s" }
            ),
        },
        Role::Muted,
    ));
    let block = pane(app, title, false);
    if rows.is_empty() {
        let msg = "no writes seen yet (list items are not writes)";
        f.render_widget(
            Paragraph::new(Line::from(sp(app, msg, Role::Muted))).block(block),
            area,
        );
        return;
    }
    // Columns by the room there is: the full table on Growth, writer and rates in Keys.
    let full = area.width >= 100;
    let mid = area.width >= 60;
    // Beside the key list: the writer and its rate only.
    let tiny = area.width < 40;
    let show_resource = resource.is_none() && mid;
    let inner_h = area.height.saturating_sub(3) as usize;
    let body: Vec<Row> = rows
        .iter()
        .take(inner_h)
        .map(|(w, rt)| {
            let writer = if mid { w.manager.clone() } else { label(w) };
            let mut cells = vec![Cell::from(writer)];
            if mid {
                cells.push(Cell::from(Span::styled(w.how(), t.get(Role::Muted))));
            }
            if show_resource {
                cells.push(Cell::from(r.resource_name(w.resource).to_string()));
            }
            let num = |s: String| Cell::from(Line::from(s).right_aligned());
            if full {
                cells.push(Cell::from(
                    Line::from(Span::styled(rate(rt.puts), t.get(Role::Put))).right_aligned(),
                ));
                cells.push(Cell::from(
                    Line::from(Span::styled(rate(rt.deletes), t.get(Role::Delete))).right_aligned(),
                ));
                cells.push(num(format!("{}/s", bytes(rt.bytes.round() as u64))));
                cells.push(num(thousands(w.puts)));
                cells.push(num(thousands(w.deletes)));
                cells.push(num(bytes(w.bytes)));
            } else {
                cells.push(num(rate(rt.writes())));
                if !tiny {
                    cells.push(num(thousands(w.puts + w.deletes)));
                }
            }
            Row::new(cells)
        })
        .collect();
    // The writer column as wide as the longest name shown (the rest stays to the left).
    let name_w = rows
        .iter()
        .take(inner_h)
        .map(|(w, _)| {
            if mid {
                w.manager.chars().count()
            } else {
                label(w).chars().count()
            }
        })
        .max()
        .unwrap_or(0)
        .clamp(12, 48) as u16;
    let mut header: Vec<&str> = vec!["writer"];
    let mut widths = vec![if mid {
        Constraint::Length(name_w)
    } else {
        Constraint::Min(12)
    }];
    if mid {
        header.push("how");
        widths.push(Constraint::Length(13));
    }
    if show_resource {
        header.push("resource");
        widths.push(Constraint::Length(24));
    }
    if full {
        header.extend(["put/s", "del/s", "bytes/s", "puts", "deletes", "bytes"]);
        widths.extend([
            Constraint::Length(7),
            Constraint::Length(7),
            Constraint::Length(11),
            Constraint::Length(9),
            Constraint::Length(9),
            Constraint::Length(10),
        ]);
    } else if tiny {
        header.push("w/s");
        widths.push(Constraint::Length(6));
    } else {
        header.extend(["w/s", "writes"]);
        widths.extend([Constraint::Length(7), Constraint::Length(9)]);
    }
    let first_number = header.len()
        - match (full, tiny) {
            (true, _) => 6,
            (false, true) => 1,
            (false, false) => 2,
        };
    let n = header.len();
    let header = header_row(app, header, first_number..n);
    let table = Table::new(body, widths)
        .header(header)
        .column_spacing(1)
        .block(block);
    f.render_widget(table, area);
}
