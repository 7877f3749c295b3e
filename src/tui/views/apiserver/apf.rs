//! API Priority and Fairness beside storage: requests queued, executing and rejected per
//! priority level, and one line that sets APF's rejections against etcd's request errors
//! in the same window, so that a failure from flow control (refused before storage, no
//! etcd revision) is not mistaken for one from etcd, and the other way round.

use ratatui::text::{Line, Span};

use super::body::{flow, wrap, Body, Col, Table};
use super::cells::{self, Cell};
use super::{empty_line, not_exposed_note};
use crate::derive::apiserver::ApiserverPanels;
use crate::tui::app::App;
use crate::tui::state::Section;
use crate::tui::theme::Role;
use crate::tui::views::sp;

/// Sum of the values present; `None` when there is none.
fn sum(vals: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    vals.flatten()
        .fold(None, |acc, x| Some(acc.unwrap_or(0.0) + x))
}

/// The "who refuses requests" line: APF rejections vs etcd request errors in the window.
fn compare(app: &App, v: &ApiserverPanels, w: usize) -> Vec<Line<'static>> {
    let apf = v
        .apf
        .as_ref()
        .and_then(|rows| sum(rows.iter().map(|r| r.rejected_rate)));
    let etcd = sum(v
        .latency
        .iter()
        .filter(|r| r.metric.starts_with("etcd_"))
        .map(|r| r.error_rate));
    let val = |x: Option<f64>| match x {
        Some(x) => sp(
            app,
            format!("{}/s", cells::rate(x)),
            if x > 0.0 {
                Role::Delete
            } else {
                Role::HeaderValue
            },
        ),
        // A rate needs two scrapes; only after that does "none" mean not exposed.
        None if v.apiserver.good_scrapes < 2 => sp(app, "… (needs a second scrape)", Role::Muted),
        None => sp(app, cells::NOT_EXPOSED_TEXT, Role::Muted),
    };
    let (verdict, role) = match (apf, etcd) {
        (Some(a), Some(e)) if a > 0.0 && e > 0.0 => (
            "both flow control and etcd are failing requests",
            Role::StatusError,
        ),
        (Some(a), _) if a > 0.0 => (
            "failures come from flow control (APF), not from etcd",
            Role::StatusWarn,
        ),
        (_, Some(e)) if e > 0.0 => (
            "failures come from etcd, not from flow control",
            Role::StatusWarn,
        ),
        (Some(_), Some(_)) => ("no rejections and no etcd errors", Role::StatusOk),
        _ => ("", Role::Muted),
    };
    let segs = vec![
        vec![
            sp(app, "in the window: APF rejected ", Role::Text),
            val(apf),
        ],
        vec![sp(app, "etcd request errors ", Role::Text), val(etcd)],
    ];
    let mut out = flow(app, segs, w);
    if !verdict.is_empty() {
        out.extend(wrap(app, &format!("→ {verdict}"), role, w));
    }
    out
}

pub(super) fn body(app: &App, v: &ApiserverPanels, w: usize) -> (Vec<Span<'static>>, Body) {
    let rows = v.apf.as_deref().unwrap_or(&[]);
    let cols = vec![
        Col::name("priority level", 14),
        Col::num("queued", 8, 0),
        Col::num("executing", 9, 0),
        Col::num("seats", 6, 2),
        Col::num("rej/s", 7, 0),
        Col::num("rejected", 10, 1),
    ];
    let cells: Vec<Vec<Cell>> = rows
        .iter()
        .map(|r| {
            let hot =
                |x: f64, role: Role| (cells::count(x), if x > 0.0 { role } else { Role::Text });
            vec![
                (r.priority_level.clone(), Role::Text),
                cells::opt(r.in_queue, |x| hot(x, Role::Note)),
                cells::opt(r.executing, |x| (cells::count(x), Role::Text)),
                cells::opt(r.nominal_seats, |x| (cells::count(x), Role::Muted)),
                cells::opt(r.rejected_rate, |x| {
                    (
                        cells::rate(x),
                        if x > 0.0 { Role::Delete } else { Role::Text },
                    )
                }),
                cells::opt(r.rejected_total, |x| hot(x, Role::Note)),
            ]
        })
        .collect();
    let table = Table::fit(cols, &cells, w);
    let top = if v.apf.is_some() || !v.latency.is_empty() {
        compare(app, v, w)
    } else {
        Vec::new()
    };
    let empty = if v.apf.is_none() && v.apiserver.good_scrapes > 0 {
        Line::from(sp(
            app,
            format!(
                "APF: {} (no apiserver_flowcontrol_* metrics)",
                cells::NOT_EXPOSED_TEXT
            ),
            Role::Muted,
        ))
    } else {
        empty_line(app, v, "flow-control metrics")
    };
    let legend = not_exposed_note(app, v, Section::Apf, w);
    let title = super::count_title(app, rows.len(), "levels");
    let body = Body {
        top,
        header: Some(table.header(app)),
        rows: cells.into_iter().map(|c| vec![table.row(app, c)]).collect(),
        empty: Some(empty),
        legend,
        notes: Vec::new(),
        ..Default::default()
    };
    (title, body)
}
