//! The apiserver's watch cache per resource: the ring's capacity and how it changed, events
//! received from etcd and dispatched to watchers per second, watchers terminated as
//! unresponsive, re-initializations (relists from etcd), and the history span — capacity ÷
//! event rate, how many seconds back a reconnecting watcher can resume from the cache
//! before it is answered 410 Gone by the cache (not by etcd's compaction).

use ratatui::text::Span;

use super::body::{flow, wrap, Body, Col, Table};
use super::fmt::{self, Cell};
use super::{empty_line, not_exposed_note};
use crate::metrics::view::{ApiserverView, Reading, WatchCacheRow};
use crate::tui::app::{App, Section};
use crate::tui::theme::Role;
use crate::tui::views::sp;

/// A history span shorter than this is worth a colour: the apiserver aims to keep at least
/// 75 s of events in the ring (its `eventFreshDuration`).
const SHORT_SPAN: f64 = 75.0;

fn span_cell(r: &WatchCacheRow) -> Cell {
    match r.history_span_seconds {
        Some(s) => {
            let role = if s < 10.0 {
                Role::Delete
            } else if s < SHORT_SPAN {
                Role::Note
            } else {
                Role::Text
            };
            (fmt::secs(s), role)
        }
        None => {
            let idle = r.events_received_rate.value().is_some_and(|x| *x == 0.0)
                || r.replica_event_rate == Some(0.0);
            if idle {
                ("idle".into(), Role::Muted)
            } else {
                (fmt::NONE.into(), Role::Muted)
            }
        }
    }
}

fn changes(r: &WatchCacheRow) -> Cell {
    match (&r.capacity_increases, &r.capacity_decreases) {
        (Reading::Value(i), Reading::Value(d)) => (
            format!("+{}/−{}", fmt::count(*i), fmt::count(*d)),
            Role::Text,
        ),
        (Reading::Unavailable, _) | (_, Reading::Unavailable) => {
            (fmt::UNAVAILABLE.into(), Role::Note)
        }
        _ => (fmt::NOT_EXPOSED.into(), Role::Muted),
    }
}

pub(super) fn body(app: &App, v: &ApiserverView, w: usize) -> (Vec<Span<'static>>, Body) {
    let rows = &v.watch_cache;
    // A reading that no row exposes is left out, with a note, instead of a column of n/e.
    let none_exposed = |f: fn(&WatchCacheRow) -> &Reading<f64>| {
        !rows.is_empty() && rows.iter().all(|r| *f(r) == Reading::NotExposed)
    };
    let mut missing: Vec<&str> = Vec::new();
    let mut col = |c: Col, f: fn(&WatchCacheRow) -> &Reading<f64>, long: &'static str| {
        let mut c = c;
        if none_exposed(f) {
            c.hide = true;
            missing.push(long);
        }
        c
    };
    let cols = vec![
        Col::name("resource", 16),
        col(Col::num("capacity", 8, 0), |r| &r.capacity, "capacity"),
        Col::num("history", 7, 0),
        col(
            Col::num("recv/s", 7, 1),
            |r| &r.events_received_rate,
            "events received",
        ),
        col(
            Col::num("sent/s", 7, 2),
            |r| &r.events_dispatched_rate,
            "events dispatched",
        ),
        col(
            Col::num("term", 6, 1),
            |r| &r.terminated_watchers,
            "terminated watchers",
        ),
        col(
            Col::num("inits", 6, 2),
            |r| &r.initializations,
            "initializations",
        ),
        col(
            Col::num("cap ±", 10, 3),
            |r| &r.capacity_increases,
            "capacity changes",
        ),
        Col::num("etcd ev/s", 9, 4),
    ];
    let cells: Vec<Vec<Cell>> = rows
        .iter()
        .map(|r| {
            let num = |x: f64| (fmt::count(x), Role::Text);
            let rate = |x: f64| (fmt::rate(x), Role::Text);
            vec![
                (fmt::resource(&r.group, &r.resource), Role::Text),
                fmt::reading(&r.capacity, num),
                span_cell(r),
                fmt::reading(&r.events_received_rate, rate),
                fmt::reading(&r.events_dispatched_rate, rate),
                fmt::reading(&r.terminated_watchers, |x| {
                    (fmt::count(x), if x > 0.0 { Role::Note } else { Role::Text })
                }),
                fmt::reading(&r.initializations, |x| {
                    (fmt::count(x), if x > 1.0 { Role::Note } else { Role::Text })
                }),
                changes(r),
                fmt::opt(r.replica_event_rate, rate),
            ]
        })
        .collect();
    let table = Table::fit(cols, &cells, w);

    let mut segs: Vec<Vec<Span<'static>>> = Vec::new();
    let sum = |f: fn(&WatchCacheRow) -> &Reading<f64>| -> Option<f64> {
        let vals: Vec<f64> = rows.iter().filter_map(|r| f(r).value().copied()).collect();
        (!vals.is_empty()).then(|| vals.iter().sum())
    };
    if let Some(x) = sum(|r| &r.events_received_rate) {
        segs.push(vec![
            sp(app, "received ", Role::Text),
            sp(app, fmt::rate(x), Role::HeaderValue),
            sp(app, "/s", Role::Text),
        ]);
    }
    if let Some(x) = sum(|r| &r.events_dispatched_rate) {
        segs.push(vec![
            sp(app, "dispatched ", Role::Text),
            sp(app, fmt::rate(x), Role::HeaderValue),
            sp(app, "/s", Role::Text),
        ]);
    }
    if let Some(x) = sum(|r| &r.terminated_watchers) {
        let role = if x > 0.0 {
            Role::Note
        } else {
            Role::HeaderValue
        };
        segs.push(vec![
            sp(app, "terminated watchers ", Role::Text),
            sp(app, fmt::count(x), role),
        ]);
    }
    let shortest = rows
        .iter()
        .filter_map(|r| r.history_span_seconds.map(|s| (s, r)))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((s, r)) = shortest {
        segs.push(vec![
            sp(app, "shortest history ", Role::Text),
            sp(app, fmt::secs(s), span_cell(r).1),
            sp(
                app,
                format!(" ({})", fmt::resource(&r.group, &r.resource)),
                Role::Muted,
            ),
        ]);
    }
    let top = flow(app, segs, w);

    let notes = wrap(
        app,
        "history = capacity ÷ event rate: how far back a reconnecting watcher can resume; \
         older gets 410 Gone from the cache",
        Role::Muted,
        w,
    );
    let mut legend = Vec::new();
    if !missing.is_empty() {
        legend.extend(wrap(
            app,
            &format!("{}: {}", missing.join(", "), fmt::NOT_EXPOSED_TEXT),
            Role::Muted,
            w,
        ));
    }
    legend.extend(table.legends(app, &cells));
    legend.extend(not_exposed_note(app, v, Section::WatchCache, w));
    let title = super::count_title(app, rows.len(), "resources");
    let body = Body {
        top,
        header: Some(table.header(app)),
        rows: cells.into_iter().map(|c| vec![table.row(app, c)]).collect(),
        empty: Some(empty_line(app, v, "watch-cache metrics")),
        legend,
        notes,
    };
    (title, body)
}
