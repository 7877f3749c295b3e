//! The revision growth panel: revisions per second (sparkline) and the head revision over
//! time (line chart) from the replica's per-second growth samples; the resources driving
//! writes (10 s rates and totals, and each one's busiest writer); who writes
//! ([`super::writers`]); compactions and gaps seen; kube-apiserver's other etcd clusters
//! ([`super::other_clusters`]).

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Cell, Chart, Dataset, GraphType, Paragraph, Row, Sparkline, Table};
use ratatui::Frame;

use super::{header_row, pane, sp};
use crate::tui::app::App;
use crate::tui::text::{bytes, clock, rate, thousands, thousands_i};
use crate::tui::theme::Role;

/// Window of the per-resource rates, in seconds (fewer while the session is younger).
const RATE_WINDOW: u64 = 10;

/// Rows the resources table needs to show one resource: borders and header, and the row.
const TABLE_MIN_H: u16 = 4;

/// Revisions per second for each of the `n` seconds ending just before the app's clock,
/// oldest first, and the head revision at the end of each (carried forward).
pub(crate) fn per_second(app: &App, n: usize) -> (Vec<u64>, Vec<Option<i64>>) {
    let now = app.now_second();
    let start = now.saturating_sub(n as u64);
    let mut revs = vec![0u64; n];
    let mut heads = vec![None; n];
    let mut prev: Option<(u64, i64)> = None;
    let mut last_head: Option<i64> = None;
    for g in app.session.replica.growth() {
        let (grew, since) = match prev {
            Some((s, p)) => ((g.head - p).max(0) as u64, s),
            None => (g.events as u64, g.second.saturating_sub(1)),
        };
        prev = Some((g.second, g.head));
        if g.second < start {
            last_head = Some(g.head);
            continue;
        }
        if g.second >= now {
            break;
        }
        // Revisions that came in after seconds without a sample (a relist after an outage
        // lands them all at once) are spread over those seconds, not drawn as one spike.
        let span = g.second.saturating_sub(since).max(1);
        for s in (g.second + 1 - span).max(start)..=g.second {
            let share = grew / span + u64::from(s == g.second) * (grew % span);
            revs[(s - start) as usize] = share;
        }
        heads[(g.second - start) as usize] = Some(g.head);
    }
    for h in heads.iter_mut() {
        match h {
            Some(v) => last_head = Some(*v),
            None => *h = last_head,
        }
    }
    (revs, heads)
}

/// Draws the panel into `area`.
pub(crate) fn draw(app: &App, f: &mut Frame, area: Rect) {
    let top_h = (area.height * 2 / 5).clamp(6, 18).min(area.height);
    let [top, bottom] =
        Layout::vertical([Constraint::Length(top_h), Constraint::Min(0)]).areas(area);
    let [spark, chart] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(top);
    draw_rate(app, f, spark);
    draw_head(app, f, chart);
    let (tables, mut comp) = if bottom.height < TABLE_MIN_H {
        // No room for a resource under the table's header: the compactions take it all.
        (
            Rect {
                height: 0,
                ..bottom
            },
            bottom,
        )
    } else if bottom.width >= 110 {
        let [tables, comp] =
            Layout::horizontal([Constraint::Min(60), Constraint::Length(48)]).areas(bottom);
        (tables, comp)
    } else {
        let comp_h = if bottom.height >= 14 { 6 } else { 4 };
        // kube-apiserver's other etcd clusters under the compactions when the resources
        // keep at least a few rows (else the alert row still names one that is down).
        let others = super::other_clusters::height(app);
        let comp_h = if bottom.height >= comp_h + others + 8 {
            comp_h + others
        } else {
            comp_h
        };
        // The resources keep at least one row: the compactions shrink to what is left, and
        // give it up when that is less than one line.
        let comp_h = match comp_h.min(bottom.height - TABLE_MIN_H) {
            h if h < 3 => 0,
            h => h,
        };
        let [tables, comp] =
            Layout::vertical([Constraint::Min(0), Constraint::Length(comp_h)]).areas(bottom);
        (tables, comp)
    };
    // kube-apiserver's other etcd clusters under the compactions, when there is room for
    // both.
    let others_h = super::other_clusters::height(app);
    if others_h > 0 && comp.height >= others_h + 3 {
        let [c, others] =
            Layout::vertical([Constraint::Min(3), Constraint::Length(others_h)]).areas(comp);
        super::other_clusters::draw(app, f, others);
        comp = c;
    }
    // The writers under the resources when there is room for a few rows of each.
    if tables.height >= 12 {
        let [res, writers] =
            Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)])
                .areas(tables);
        draw_resources(app, f, res);
        super::writers::draw(app, f, writers, None);
    } else {
        draw_resources(app, f, tables);
    }
    draw_compactions(app, f, comp);
}

fn draw_rate(app: &App, f: &mut Frame, area: Rect) {
    let n = area.width.saturating_sub(2) as usize;
    let (revs, _) = per_second(app, n.max(1));
    let last = revs.last().copied().unwrap_or(0);
    let win = revs.len().min(RATE_WINDOW as usize).max(1);
    let avg = revs.iter().rev().take(win).sum::<u64>() as f64 / win as f64;
    let peak = revs.iter().copied().max().unwrap_or(0);
    let title = vec![
        sp(app, "Revisions/s", Role::PanelTitle),
        sp(
            app,
            // Each figure with its window; the bars' full height is the peak.
            format!(
                " {} in the last second · {} a second over {win} s · full bar {}",
                thousands(last),
                rate(avg),
                thousands(peak)
            ),
            Role::Muted,
        ),
    ];
    let spark = Sparkline::default()
        .block(pane(app, title, false))
        .data(&revs)
        .max(peak.max(1))
        .style(app.settings.theme.get(Role::SeriesRate));
    f.render_widget(spark, area);
}

fn draw_head(app: &App, f: &mut Frame, area: Rect) {
    // The same window as the rate sparkline beside it, so the time axes line up.
    let n = area.width.saturating_sub(2).max(1) as usize;
    let (_, heads) = per_second(app, n);
    let now = app.now_second() as f64;
    let pts: Vec<(f64, f64)> = heads
        .iter()
        .enumerate()
        .filter_map(|(i, h)| h.map(|h| (now - n as f64 + i as f64, h as f64)))
        .collect();
    let head = app.session.replica.revision();
    let mut title = vec![
        sp(app, "Head revision", Role::PanelTitle),
        sp(app, format!(" {}", thousands_i(head)), Role::Muted),
    ];
    // etcd replaced under regscope (a new data dir, a restore): the old cluster's series
    // stays, and the line breaks where the revision went back.
    if let Some(r) = app.session.etcd.replacements().last() {
        title.push(sp(
            app,
            format!(
                " · etcd replaced at {}: revision {} → {}",
                clock(r.at, app.settings.utc_offset),
                thousands_i(r.revision_before),
                r.revision_after.map_or("…".into(), thousands_i)
            ),
            Role::Note,
        ));
    }
    if pts.is_empty() {
        let p = Paragraph::new(Line::from(sp(
            app,
            "no revisions observed in this window yet",
            Role::Muted,
        )))
        .block(pane(app, title, false));
        f.render_widget(p, area);
        return;
    }
    let lo = pts.iter().map(|p| p.1).fold(f64::MAX, f64::min);
    let hi = pts.iter().map(|p| p.1).fold(f64::MIN, f64::max);
    let (lo, hi) = if hi - lo < 1.0 {
        (lo - 1.0, hi + 1.0)
    } else {
        (lo, hi)
    };
    let x0 = now - n as f64;
    let secs = |x: f64| std::time::UNIX_EPOCH + std::time::Duration::from_secs(x.max(0.0) as u64);
    // One line per stretch in which the revision never went back.
    let mut stretches: Vec<&[(f64, f64)]> = Vec::new();
    let mut start = 0;
    for i in 1..pts.len() {
        if pts[i].1 < pts[i - 1].1 {
            stretches.push(&pts[start..i]);
            start = i;
        }
    }
    stretches.push(&pts[start..]);
    let datasets: Vec<Dataset> = stretches
        .into_iter()
        .map(|s| {
            Dataset::default()
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(app.settings.theme.get(Role::SeriesHead))
                .data(s)
        })
        .collect();
    let muted = app.settings.theme.get(Role::Muted);
    // Over a db file every second is the file's modification time: no time on the axis.
    let timeless = app.revision_timeline().is_some();
    let axis_time = |t: f64| {
        if timeless {
            "—".to_string()
        } else {
            clock(secs(t), app.settings.utc_offset)
        }
    };
    let chart = Chart::new(datasets)
        .block(pane(app, title, false))
        .x_axis(
            Axis::default()
                .bounds([x0, now])
                .style(muted)
                .labels([Line::from(axis_time(x0)), Line::from(axis_time(now))]),
        )
        .y_axis(Axis::default().bounds([lo, hi]).style(muted).labels([
            Line::from(thousands_i(lo.round() as i64)),
            Line::from(thousands_i(hi.round() as i64)),
        ]));
    f.render_widget(chart, area);
}

fn draw_resources(app: &App, f: &mut Frame, area: Rect) {
    let now = app.now_second();
    let win = super::observed_window(app, RATE_WINDOW);
    let mut rows: Vec<(u32, &crate::store::ResourceStats, f64, f64)> = app
        .session
        .replica
        .resources()
        .iter()
        .enumerate()
        .map(|(id, r)| {
            let (p, d) = r.rates(now, win);
            (id as u32, r, p, d)
        })
        .collect();
    rows.sort_by(|a, b| {
        (b.2 + b.3)
            .total_cmp(&(a.2 + a.3))
            .then((b.1.puts + b.1.deletes).cmp(&(a.1.puts + a.1.deletes)))
            .then(a.1.resource.cmp(&b.1.resource))
    });
    let inner_h = area.height.saturating_sub(3) as usize;
    app.drawn.growth.set(inner_h);
    let skip = app
        .growth_scroll
        .min(rows.len().saturating_sub(inner_h.max(1)));
    let wide = area.width >= 70;
    let show_writer = area.width >= 100;
    let top = if show_writer {
        super::writers::top_writers(app)
    } else {
        Default::default()
    };
    let t = &app.settings.theme;
    let body: Vec<Row> = rows
        .iter()
        .skip(skip)
        .take(inner_h)
        .map(|(id, r, p, d)| {
            let mut cells = vec![
                Cell::from(r.resource.clone()),
                Cell::from(Line::from(thousands(r.keys)).right_aligned()),
            ];
            if wide {
                cells.push(Cell::from(Line::from(bytes(r.bytes)).right_aligned()));
            }
            cells.push(Cell::from(
                Line::from(Span::styled(rate(*p), t.get(Role::Put))).right_aligned(),
            ));
            cells.push(Cell::from(
                Line::from(Span::styled(rate(*d), t.get(Role::Delete))).right_aligned(),
            ));
            cells.push(Cell::from(Line::from(thousands(r.puts)).right_aligned()));
            cells.push(Cell::from(Line::from(thousands(r.deletes)).right_aligned()));
            if show_writer {
                let w = top.get(id).cloned().unwrap_or_default();
                cells.push(Cell::from(Span::styled(w, t.get(Role::Muted))));
            }
            Row::new(cells)
        })
        .collect();
    let mut header = vec!["resource", "keys"];
    let mut widths = vec![Constraint::Min(14), Constraint::Length(9)];
    if wide {
        header.push("bytes");
        widths.push(Constraint::Length(10));
    }
    header.extend(["put/s", "del/s", "puts", "deletes"]);
    widths.extend([
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(9),
        Constraint::Length(9),
    ]);
    if show_writer {
        header.push("top writer");
        widths.push(Constraint::Min(18));
    }
    let last_number = header.len() - usize::from(show_writer);
    let header = header_row(app, header, 1..last_number);
    let title = vec![
        sp(app, "Top resources by writes", Role::PanelTitle),
        sp(
            app,
            format!(
                " ({win} s rates; {} resource{})",
                rows.len(),
                if rows.len() == 1 { "" } else { "s" }
            ),
            Role::Muted,
        ),
    ];
    let table = Table::new(body, widths)
        .header(header)
        .column_spacing(1)
        .block(pane(app, title, true));
    f.render_widget(table, area);
}

fn draw_compactions(app: &App, f: &mut Frame, area: Rect) {
    let r = &app.session.replica;
    let off = app.settings.utc_offset;
    // Over a db file every observation carries the file's time: no compaction's own.
    let timeless = app.revision_timeline().is_some();
    let when = |at| {
        if timeless {
            "—".to_string()
        } else {
            clock(at, off)
        }
    };
    let mut lines: Vec<Line> = Vec::new();
    match r.compact_revision() {
        Some(c) => lines.push(Line::from(vec![
            sp(app, "compacted ", Role::Muted),
            sp(app, thousands_i(c), Role::HeaderValue),
            sp(app, "  window ", Role::Muted),
            sp(app, thousands_i(r.revision() - c), Role::HeaderValue),
            sp(app, " revisions", Role::Muted),
        ])),
        None => lines.push(Line::from(sp(
            app,
            "compacted revision not known yet",
            Role::Muted,
        ))),
    }
    for g in r.gaps().iter().rev() {
        lines.push(Line::from(sp(
            app,
            format!(
                "{} gap {}..{} (resync, etcd compacted at {})",
                when(g.at),
                thousands_i(g.from),
                thousands_i(g.to),
                thousands_i(g.compact_revision)
            ),
            Role::Note,
        )));
    }
    for c in r.compactions().iter().rev() {
        lines.push(Line::from(vec![
            sp(app, when(c.at), Role::Muted),
            Span::raw(format!(" compacted at {}", thousands_i(c.revision))),
            sp(app, format!(" ({})", c.source), Role::Muted),
        ]));
    }
    let title = vec![
        sp(app, "Compactions & gaps", Role::PanelTitle),
        sp(
            app,
            format!(
                " {} seen, {} gap{}",
                r.compactions().len(),
                r.gaps().len(),
                if r.gaps().len() == 1 { "" } else { "s" }
            ),
            Role::Muted,
        ),
    ];
    f.render_widget(Paragraph::new(lines).block(pane(app, title, false)), area);
}
