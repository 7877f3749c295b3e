//! The apiserver's watch cache per resource: the ring's capacity and how it changed, events
//! received from etcd and dispatched to watchers per second, watchers terminated as
//! unresponsive, re-initializations (relists from etcd), relists from clients per minute (LIST
//! requests plus watch-lists), and the history span — events held
//! (capacity, or fewer until the ring has filled) ÷ event rate, how many seconds back a reconnecting watcher can resume from the cache
//! before it is answered 410 Gone by the cache (not by etcd's compaction).

use ratatui::text::Span;

use super::body::{flow, wrap, Body, Col, Table};
use super::cells::{self, Cell};
use super::{empty_line, not_exposed_note};
use crate::derive::apiserver::{ApiserverPanels, Reading, WatchCacheRow};
use crate::model::{ApiserverFlags, WatchCacheFlags};
use crate::tui::app::App;
use crate::tui::state::Section;
use crate::tui::theme::Role;
use crate::tui::views::sp;

/// A history span shorter than this is worth a colour: the apiserver aims to keep at least
/// 75 s of events in the ring (its `eventFreshDuration`).
const SHORT_SPAN: f64 = 75.0;

fn span_cell(r: &WatchCacheRow) -> Cell {
    // Not yet full since it was initialised: it still holds every event since its list,
    // and a resume from after that list always succeeds.
    if r.wrapped == Some(false) {
        return ("all".into(), Role::Muted);
    }
    match r.history_span_seconds {
        Some(s) => {
            let role = if s < 10.0 {
                Role::Delete
            } else if s < SHORT_SPAN {
                Role::Note
            } else {
                Role::Text
            };
            (cells::secs(s), role)
        }
        None => {
            let idle = r.events_received_rate.value().is_some_and(|x| *x == 0.0)
                || r.replica_event_rate == Some(0.0);
            if idle {
                ("idle".into(), Role::Muted)
            } else {
                (cells::NONE.into(), Role::Muted)
            }
        }
    }
}

fn changes(r: &WatchCacheRow) -> Cell {
    match (&r.capacity_increases, &r.capacity_decreases) {
        (Reading::Value(i), Reading::Value(d)) => (
            format!("+{}/−{}", cells::count(*i), cells::count(*d)),
            Role::Text,
        ),
        (Reading::Unavailable, _) | (_, Reading::Unavailable) => {
            (cells::UNAVAILABLE.into(), Role::Note)
        }
        _ => (cells::NOT_EXPOSED.into(), Role::Muted),
    }
}

/// Relists per minute of one resource, `total (LIST+watch-list)`, or `total (LIST)` where
/// the apiserver exposes no watch-lists (before 1.29).
fn lists_cell(r: &WatchCacheRow) -> Cell {
    let Some(total) = r.lists_per_minute else {
        return cells::reading(&r.list_requests_rate, |x| {
            (cells::rate(60.0 * x), Role::Text)
        });
    };
    let list = r.list_requests_rate.value().map_or(0.0, |x| 60.0 * x);
    let text = match r.watch_lists_rate.value() {
        Some(w) => format!(
            "{} ({}+{})",
            cells::rate(total),
            cells::rate(list),
            cells::rate(60.0 * w)
        ),
        None => format!("{} (LIST)", cells::rate(total)),
    };
    (text, Role::Text)
}

/// What kube-apiserver's flags configure, in one sentence for the notes.
fn configured(f: &ApiserverFlags, wc: &WatchCacheFlags) -> (String, Role) {
    let file = f.file.rsplit('/').next().unwrap_or(&f.file);
    if !wc.enabled {
        return (
            format!(
                "configured ({file}): --watch-cache=false: no watch cache, every list and \
                 watch is served by etcd"
            ),
            Role::Note,
        );
    }
    let mut parts = Vec::new();
    match wc.default_size {
        Some(0) => parts.push("off by default (--default-watch-cache-size=0)".to_string()),
        Some(n) => parts.push(format!("on by default (--default-watch-cache-size={n})")),
        None => parts.push("on by default".to_string()),
    }
    let off = wc.disabled();
    if !off.is_empty() {
        parts.push(format!("off for {}", off.join(", ")));
    }
    let on: Vec<&str> = wc
        .sizes
        .iter()
        .filter(|(_, n)| *n != 0)
        .map(|(r, _)| r.as_str())
        .collect();
    if !on.is_empty() {
        parts.push(format!("on for {}", on.join(", ")));
    }
    if !wc.unreadable.is_empty() {
        parts.push(format!(
            "not read: {} (resource[.group]#size)",
            wc.unreadable.join(", ")
        ));
    }
    (
        format!(
            "configured ({file}): {}; a size other than 0 only turns a cache on, \
             kube-apiserver sizes each ring itself",
            parts.join("; ")
        ),
        Role::Muted,
    )
}

pub(super) fn body(app: &App, v: &ApiserverPanels, w: usize) -> (Vec<Span<'static>>, Body) {
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
    // kube-apiserver's watch-cache flags, when the node's manifest told them.
    let flags = app.session.apiserver_flags.as_ref();
    let wc = flags.and_then(|f| f.watch_cache());
    let mut flag_col = Col::num("flag", 7, 2);
    flag_col.hide = wc.is_none();
    let cols = vec![
        Col::name("resource", 16),
        flag_col,
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
            Col::num("lists/min", 16, 3),
            |r| &r.list_requests_rate,
            "list requests",
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
            let num = |x: f64| (cells::count(x), Role::Text);
            let rate = |x: f64| (cells::rate(x), Role::Text);
            // A row means the cache is on: flags that turn it off disagree.
            let off = wc
                .as_ref()
                .is_some_and(|w| !w.cached(&r.group, &r.resource));
            let role = if off { Role::Note } else { Role::Text };
            let flag = match wc.as_ref().map(|w| w.size_for(&r.group, &r.resource)) {
                Some(Some(n)) => (format!("#{n}"), role),
                _ if off => ("default".to_string(), role),
                _ => ("default".to_string(), Role::Muted),
            };
            vec![
                (cells::resource(&r.group, &r.resource), Role::Text),
                flag,
                cells::reading(&r.capacity, num),
                span_cell(r),
                cells::reading(&r.events_received_rate, rate),
                cells::reading(&r.events_dispatched_rate, rate),
                cells::reading(&r.terminated_watchers, |x| {
                    (
                        cells::count(x),
                        if x > 0.0 { Role::Note } else { Role::Text },
                    )
                }),
                cells::reading(&r.initializations, |x| {
                    (
                        cells::count(x),
                        if x > 1.0 { Role::Note } else { Role::Text },
                    )
                }),
                lists_cell(r),
                changes(r),
                cells::opt(r.replica_event_rate, rate),
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
            sp(app, cells::rate(x), Role::HeaderValue),
            sp(app, "/s", Role::Text),
        ]);
    }
    if let Some(x) = sum(|r| &r.events_dispatched_rate) {
        segs.push(vec![
            sp(app, "dispatched ", Role::Text),
            sp(app, cells::rate(x), Role::HeaderValue),
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
            sp(app, cells::count(x), role),
        ]);
    }
    // Relists: LIST requests and watch-lists, each named, over the rows that know them.
    let listing: Vec<&WatchCacheRow> = rows
        .iter()
        .filter(|r| r.lists_per_minute.is_some())
        .collect();
    if !listing.is_empty() {
        let per_min = |f: fn(&WatchCacheRow) -> &Reading<f64>| -> Option<f64> {
            let vals: Vec<f64> = listing
                .iter()
                .filter_map(|r| f(r).value().copied())
                .collect();
            (!vals.is_empty()).then(|| 60.0 * vals.iter().sum::<f64>())
        };
        let list = per_min(|r| &r.list_requests_rate).unwrap_or(0.0);
        let watch_list = per_min(|r| &r.watch_lists_rate);
        let total = list + watch_list.unwrap_or(0.0);
        let how = match watch_list {
            Some(w) => format!(
                " ({} LIST + {} watch-list)",
                cells::rate(list),
                cells::rate(w)
            ),
            None => " (LIST; watch-lists not exposed)".to_string(),
        };
        segs.push(vec![
            sp(app, "lists/min ", Role::Text),
            sp(app, cells::rate(total), Role::HeaderValue),
            sp(app, how, Role::Muted),
        ]);
    }
    let shortest = rows
        .iter()
        .filter_map(|r| r.history_span_seconds.map(|s| (s, r)))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((s, r)) = shortest {
        segs.push(vec![
            sp(app, "shortest history ", Role::Text),
            sp(app, cells::secs(s), span_cell(r).1),
            sp(
                app,
                format!(" ({})", cells::resource(&r.group, &r.resource)),
                Role::Muted,
            ),
        ]);
    }
    let top = flow(app, segs, w);

    let mut notes = Vec::new();
    if let (Some(f), Some(wc)) = (flags, &wc) {
        let (text, role) = configured(f, wc);
        notes.extend(wrap(app, &text, role, w));
        let disagree: Vec<String> = rows
            .iter()
            .filter(|r| !wc.cached(&r.group, &r.resource))
            .map(|r| cells::resource(&r.group, &r.resource))
            .collect();
        if !disagree.is_empty() {
            notes.extend(wrap(
                app,
                &format!(
                    "{} cached although the manifest's flags turn that off: kube-apiserver \
                     runs with other flags than its manifest has now (edited since it started?)",
                    disagree.join(", ")
                ),
                Role::Note,
                w,
            ));
        }
    }
    if !listing.is_empty() {
        notes.extend(wrap(
            app,
            "lists/min = LIST requests + watch-lists (WATCH with sendInitialEvents=true, how \
         informers list since client-go 1.35) per minute, as total (LIST+watch-list)",
            Role::Muted,
            w,
        ));
    }
    notes.extend(wrap(
        app,
        "history = events held (capacity, or fewer until the ring fills) ÷ event rate: how far \
         back a reconnecting watcher can resume; older gets 410 Gone from the cache",
        Role::Muted,
        w,
    ));
    let mut legend = Vec::new();
    if !missing.is_empty() {
        legend.extend(wrap(
            app,
            &format!("{}: {}", missing.join(", "), cells::NOT_EXPOSED_TEXT),
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
        ..Default::default()
    };
    (title, body)
}
