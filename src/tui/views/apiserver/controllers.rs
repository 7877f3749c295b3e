//! The controllers' own informers and workqueues (kube-controller-manager, kube-scheduler):
//! per informer, its store's resourceVersion against etcd's head and the compaction
//! window, the events of its resource it has not applied and its FIFO; then each
//! controller queue's depth, adds and retries. A component whose version has no informer
//! metrics (before Kubernetes 1.36) says so, with its workqueues still shown.

use ratatui::text::{Line, Span};

use super::body::{wrap, Body, Col, Table};
use super::cells::{self, Cell};
use super::window::risk_cell;
use crate::derive::apiserver::{ApiserverPanels, BehindFrom, InformerMetrics, Reading, Risk};
use crate::tui::app::App;
use crate::tui::text::thousands_i;
use crate::tui::theme::Role;
use crate::tui::views::sp;

/// Workqueue rows shown below the informers, at most (the deepest first).
const MAX_QUEUES: usize = 12;

fn short(component: &str) -> &str {
    match component {
        "kube-controller-manager" => "kcm",
        "kube-scheduler" => "sched",
        c => c,
    }
}

/// One line per component: version and whether its informers can be read.
fn component_lines(app: &App, v: &ApiserverPanels, w: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for c in &v.controllers.components {
        let version = c.status.version.as_deref().unwrap_or("");
        let (text, role) = if let Some(e) = &c.status.last_error {
            (format!("{}: {e}", c.component), Role::StatusError)
        } else {
            match &c.informer_metrics {
                InformerMetrics::Exposed => (
                    format!("{} {version}: informer and workqueue metrics", c.component),
                    Role::Muted,
                ),
                InformerMetrics::NotInVersion { version } => (
                    format!(
                        "{} {version}: no informer metrics (client-go informer metrics came in Kubernetes 1.36); workqueues only",
                        c.component
                    ),
                    Role::Note,
                ),
                InformerMetrics::Absent => (
                    format!(
                        "{} {version}: no informer_* series in its metrics (unnamed informers publish none); workqueues only",
                        c.component
                    ),
                    Role::Note,
                ),
                InformerMetrics::Unknown => (
                    format!("{}: waiting for the first scrape ({})", c.component, c.status.source),
                    Role::Muted,
                ),
            }
        };
        out.extend(wrap(app, &text, role, w));
    }
    out
}

pub(super) fn body(app: &App, v: &ApiserverPanels, w: usize) -> (Vec<Span<'static>>, Body) {
    let p = &v.controllers;
    let cols = vec![
        Col::name("component", 5),
        Col::name("informer / queue", 16),
        Col::name("resource", 10),
        Col::num("behind", 7, 0),
        Col::num("head−rv", 8, 1),
        Col::num("window", 6, 1),
        Col::num("fifo", 5, 1),
        Col::name("risk", 4),
    ];
    let cells: Vec<Vec<Cell>> = p
        .informers
        .iter()
        .map(|r| {
            vec![
                (short(r.component).to_string(), Role::Muted),
                (r.name.clone(), Role::Text),
                (cells::resource(&r.group, &r.resource), Role::Text),
                cells::opt(r.events_behind, |n| {
                    // From the keys: a lower bound (deletes are not seen).
                    let at_least = if r.events_behind_from == BehindFrom::Keys {
                        "≥"
                    } else {
                        ""
                    };
                    (
                        format!("{at_least}{}", thousands_i(n as i64)),
                        if n > 0 { Role::StatusWarn } else { Role::Text },
                    )
                }),
                cells::opt(r.behind_head_revisions, |n| (thousands_i(n), Role::Muted)),
                cells::opt(r.window_fraction, |f| (cells::pct(f * 100.0), Role::Text)),
                cells::opt(r.queued_items, |q| {
                    (
                        cells::count(q),
                        if q > 0.0 { Role::Note } else { Role::Text },
                    )
                }),
                risk_cell(r.risk),
            ]
        })
        .collect();
    let qcols = vec![
        Col::name("component", 5),
        Col::name("workqueue", 16),
        Col::num("depth", 7, 0),
        Col::num("adds/s", 8, 0),
        Col::num("retries/s", 9, 1),
        Col::num("retries", 8, 2),
    ];
    let queues: Vec<Vec<Cell>> = p
        .workqueues
        .iter()
        .take(MAX_QUEUES)
        .map(|q| {
            let rate = |r: &Reading<f64>| cells::reading(r, |x| (cells::rate(x), Role::Text));
            vec![
                (short(q.component).to_string(), Role::Muted),
                (q.name.clone(), Role::Text),
                cells::opt(q.depth, |d| {
                    (
                        cells::count(d),
                        if d > 0.0 { Role::Note } else { Role::Text },
                    )
                }),
                rate(&q.adds_per_second),
                rate(&q.retries_per_second),
                cells::opt(q.retries_total, |x| (cells::count(x), Role::Muted)),
            ]
        })
        .collect();
    let n_informers = cells.len();
    let table = Table::fit(cols, &cells, w);
    let qtable = Table::fit(qcols, &queues, w);
    let mut rows: Vec<Vec<Line<'static>>> =
        cells.into_iter().map(|c| vec![table.row(app, c)]).collect();
    let mut subheaders = Vec::new();
    if !queues.is_empty() {
        subheaders.push(rows.len());
        rows.push(vec![qtable.header(app)]);
        rows.extend(queues.into_iter().map(|c| vec![qtable.row(app, c)]));
    }
    let mut top = component_lines(app, v, w);
    if let Some(r) = p.informers.iter().find(|r| r.risk >= Risk::Warn) {
        if let Some(why) = &r.risk_reason {
            top.extend(wrap(
                app,
                &format!(
                    "{} informer {} {}: {why}",
                    r.component,
                    r.name,
                    cells::resource(&r.group, &r.resource)
                ),
                if r.risk == Risk::Danger {
                    Role::StatusError
                } else {
                    Role::StatusWarn
                },
                w,
            ));
        }
    }
    let empty = if p.components.is_empty() {
        Line::from(sp(
            app,
            "controllers not configured: --controller-manager-metrics-url / --scheduler-metrics-url, or found in the node's manifests",
            Role::Muted,
        ))
    } else {
        Line::from(sp(app, "no informer or workqueue series yet", Role::Muted))
    };
    let legend = if n_informers > 0 {
        wrap(
            app,
            "behind: events of its resource after its store's resourceVersion (≥: counted from keys written since, deletes unseen; —: not countable, no lag claimed) · head−rv: revisions since its store last changed · window: lag ÷ compaction window · fifo: deltas queued",
            Role::Muted,
            w,
        )
    } else {
        Vec::new()
    };
    let title = super::count_title(app, n_informers, "informers");
    let body = Body {
        top,
        header: (n_informers > 0).then(|| table.header(app)),
        rows,
        empty: Some(empty),
        legend,
        notes: Vec::new(),
        subheaders,
    };
    (title, body)
}
