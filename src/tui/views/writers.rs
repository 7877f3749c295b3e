//! Who writes: the replica's write counters per `managedFields` writer
//! ([`crate::store::writers`]), as a table on Growth (every resource) and under the
//! resource list in Keys (the selected resource).
//!
//! Two kinds of rows carry a tag where the operation would be: a storage version
//! migration's rewrites (`migration`), and the unnamed rewrites of a resource most of whose
//! keys were written with unchanged managedFields in the last minute (`rewrite?`, an
//! estimate, with a line under the table saying what it may be).

use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table};
use ratatui::Frame;

use super::{header_row, pane, sp};
use crate::store::writers::{MIGRATION_WRITER_PREFIX, UNCHANGED_WRITER};
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

/// The tag shown for a row where its operation would be: `migration` for a storage
/// version migration's rewrites, `rewrite?` for unnamed rewrites of a resource that looks
/// rewritten whole now ([`crate::store::Replica::looks_rewritten`]).
pub(crate) fn tag(app: &App, w: &WriterStats) -> Option<&'static str> {
    if w.manager.starts_with(MIGRATION_WRITER_PREFIX) {
        Some(MIGRATION_TAG)
    } else if w.manager == UNCHANGED_WRITER
        && app
            .session
            .replica
            .looks_rewritten(w.resource, app.now_second())
    {
        Some(REWRITE_TAG)
    } else {
        None
    }
}

/// The tag of a storage version migration's rows.
pub(crate) const MIGRATION_TAG: &str = "migration";
/// The tag of a row of unnamed rewrites that may be a rewrite of every object.
pub(crate) const REWRITE_TAG: &str = "rewrite?";

/// What a [`REWRITE_TAG`] row may be, worded as a guess: the line under the table.
pub(crate) fn rewrite_hint(resource: &str) -> String {
    format!(
        "{REWRITE_TAG} {resource}: perhaps a rewrite of every object — a storage version \
         migration or an encryption-key rotation (kube-storage-version-migrator, `kubectl \
         replace`); most keys were written within a minute with managedFields unchanged"
    )
}

/// The row's label with its tag, for the narrow table.
fn tagged_label(app: &App, w: &WriterStats) -> String {
    match tag(app, w) {
        Some(t) => format!("{} [{t}]", label(w)),
        None => label(w),
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
    let mut inner_h = area.height.saturating_sub(3) as usize;
    // A resource that looks rewritten whole among the rows shown: one line under the table
    // says what that may be (when there is room for it and a row).
    let hinted = rows
        .iter()
        .take(inner_h)
        .find(|(w, _)| tag(app, w) == Some(REWRITE_TAG))
        .map(|(w, _)| w.resource);
    let hint = hinted.filter(|_| inner_h >= 2).map(|id| {
        inner_h -= 1;
        rewrite_hint(r.resource_name(id))
    });
    let body: Vec<Row> = rows
        .iter()
        .take(inner_h)
        .map(|(w, rt)| {
            let writer = if mid {
                w.manager.clone()
            } else {
                tagged_label(app, w)
            };
            let mut cells = vec![Cell::from(writer)];
            if mid {
                let how = match tag(app, w) {
                    Some(tg) => Span::styled(tg, t.get(Role::Warning)),
                    None => Span::styled(w.how(), t.get(Role::Muted)),
                };
                cells.push(Cell::from(how));
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
                tagged_label(app, w).chars().count()
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
    if let Some(hint) = hint {
        let line = Rect {
            x: area.x + 1,
            y: area.bottom().saturating_sub(2),
            width: area.width.saturating_sub(2),
            height: 1,
        };
        f.render_widget(
            Paragraph::new(Line::from(sp(app, hint, Role::Warning))),
            line,
        );
    }
}
