//! The compaction window against the lag of every watcher, per resource: how far back etcd
//! still has history (head − compacted revision), how far behind the apiserver's watch
//! cache and regscope's own watchers are, and a verdict when a lag nears the window — a
//! watcher resuming from a compacted revision gets 410 Gone and relists (etcd cancels a
//! watch whose start revision is compacted). The 410s actually received are counted.

use ratatui::text::{Line, Span};

use super::body::{flow, wrap, Body, Col, Table};
use super::cells::{self, Cell};
use super::{empty_line, not_exposed_note};
use crate::derive::apiserver::{ApiserverPanels, Reading, Risk, WindowRow};
use crate::tui::app::App;
use crate::tui::state::Section;
use crate::tui::text::{thousands, thousands_i};
use crate::tui::theme::Role;
use crate::tui::views::sp;

/// Verdict lines shown before "+N more".
const MAX_VERDICTS: usize = 3;

/// The larger of the two lags of a row, with who has it.
fn worst_lag(r: &WindowRow) -> Option<(&'static str, i64)> {
    let cache = r.watch_cache_lag_revisions.value().copied();
    match (r.informer_lag_revisions, cache) {
        (Some(i), Some(c)) if c > i => Some(("watch cache for", c)),
        (Some(i), _) => Some(("informer", i)),
        (None, Some(c)) => Some(("watch cache for", c)),
        (None, None) => None,
    }
}

pub(super) fn risk_cell(r: Risk) -> Cell {
    match r {
        Risk::Measuring => ("meas".into(), Role::Muted),
        Risk::Ok => ("ok".into(), Role::StatusOk),
        Risk::Warn => ("warn".into(), Role::StatusWarn),
        Risk::Danger => ("HIGH".into(), Role::StatusError),
    }
}

/// "informer events lags 812 revs of a 1,000-rev window: 410 Gone likely on reconnect".
fn verdict(r: &WindowRow, window: Option<i64>) -> Option<String> {
    let res = cells::resource(&r.group, &r.resource);
    if let (Some(reason), true) = (&r.risk_reason, r.risk != Risk::Ok) {
        return Some(format!("{res}: {reason}"));
    }
    let (who, lag) = worst_lag(r)?;
    let of = match window {
        Some(w) => format!(" of a {}-rev window", thousands_i(w)),
        None => String::new(),
    };
    Some(match r.risk {
        Risk::Ok | Risk::Measuring => return None,
        Risk::Warn => format!(
            "{who} {res} lags {} revs{of}: 410 Gone likely on reconnect",
            thousands_i(lag)
        ),
        Risk::Danger => format!(
            "{who} {res} lags {} revs{of}: a reconnect gets 410 Gone and relists",
            thousands_i(lag)
        ),
    })
}

pub(super) fn body(app: &App, v: &ApiserverPanels, w: usize) -> (Vec<Span<'static>>, Body) {
    let win = &v.window;
    let mut top = Vec::new();

    // The window itself.
    let val = |s: String| sp(app, s, Role::HeaderValue);
    let txt = |s: &'static str| sp(app, s, Role::Text);
    let mut segs: Vec<Vec<Span<'static>>> = Vec::new();
    if let Some(h) = win.head {
        segs.push(vec![txt("head "), val(thousands_i(h))]);
    }
    match (win.compact_revision, win.window_revisions) {
        (Some(c), Some(n)) => {
            segs.push(vec![txt("compacted "), val(thousands_i(c))]);
            let mut s = vec![txt("window "), val(thousands_i(n)), txt(" revs")];
            if let Some(secs) = win.window_seconds {
                s.push(txt(" = "));
                s.push(val(cells::secs(secs)));
            }
            segs.push(s);
        }
        // etcd reports no compacted revision before the first compaction; without a head
        // there is no etcd data at all.
        _ if win.head.is_some() => segs.push(vec![sp(
            app,
            "no compaction yet: the window is all history",
            Role::StatusOk,
        )]),
        _ => segs.push(vec![sp(
            app,
            "compaction window not known yet (no etcd revision)",
            Role::Muted,
        )]),
    }
    if let Some(l) = win.regscope_lag_revisions {
        segs.push(vec![
            txt("regscope's etcd watch lags "),
            val(thousands_i(l)),
            txt(" revs"),
        ]);
    }
    // The 410s actually received, by resource.
    if !win.rows.is_empty() {
        let gone: u64 = win.rows.iter().map(|r| r.gone_410).sum();
        let relists: u64 = win.rows.iter().map(|r| r.relists).sum();
        let mut by: Vec<String> = win
            .rows
            .iter()
            .filter(|r| r.gone_410 > 0)
            .map(|r| format!("{} {}", cells::resource(&r.group, &r.resource), r.gone_410))
            .collect();
        by.truncate(4);
        let role = if gone > 0 { Role::Note } else { Role::Muted };
        let mut seg = vec![sp(app, format!("410 Gone seen {}", thousands(gone)), role)];
        if !by.is_empty() {
            seg.push(sp(app, format!(" ({})", by.join(", ")), role));
        }
        segs.push(seg);
        segs.push(vec![sp(
            app,
            format!("relists {}", thousands(relists)),
            Role::Muted,
        )]);
    }
    top.extend(flow(app, segs, w));

    // Verdicts, worst first (the derived panels order rows by risk).
    let at_risk: Vec<(Risk, String)> = win
        .rows
        .iter()
        .filter(|r| r.risk >= Risk::Warn)
        .filter_map(|r| verdict(r, win.window_revisions).map(|t| (r.risk, t)))
        .collect();
    for (risk, t) in at_risk.iter().take(MAX_VERDICTS) {
        let (mark, role) = if *risk == Risk::Danger {
            ("✖ ", Role::StatusError)
        } else {
            ("⚠ ", Role::StatusWarn)
        };
        top.extend(wrap(app, &format!("{mark}{t}"), role, w));
    }
    if at_risk.len() > MAX_VERDICTS {
        top.push(Line::from(sp(
            app,
            format!("+{} more at risk (below)", at_risk.len() - MAX_VERDICTS),
            Role::StatusWarn,
        )));
    }
    let measuring = win
        .rows
        .iter()
        .filter(|r| r.risk == Risk::Measuring)
        .count();
    if measuring > 0 {
        top.push(Line::from(sp(
            app,
            format!(
                "… measuring {measuring} watcher{} (no event, bookmark or list yet)",
                if measuring == 1 { "" } else { "s" }
            ),
            Role::Muted,
        )));
    }
    if at_risk.is_empty() && measuring < win.rows.len() {
        top.push(Line::from(sp(
            app,
            if measuring > 0 {
                "✓ every other watcher is well inside the window"
            } else {
                "✓ every watcher is well inside the window"
            },
            Role::StatusOk,
        )));
    }

    // Per resource.
    let all_not_exposed = win
        .rows
        .iter()
        .all(|r| r.watch_cache_lag_revisions == Reading::NotExposed);
    let mut cache_col = Col::num("cache lag", 9, 1);
    let cache_hidden = all_not_exposed && !win.rows.is_empty();
    cache_col.hide = cache_hidden;
    let cols = vec![
        Col::name("resource", 10),
        Col::text("risk", 4, 0),
        cache_col,
        Col::num("inf lag", 9, 0),
        Col::num("inf s", 7, 2),
        Col::num("%win", 5, 0),
        Col::num("410s", 5, 0),
        Col::num("relists", 7, 3),
        Col::text("informer state", 28, 4),
    ];
    let cells: Vec<Vec<Cell>> = win
        .rows
        .iter()
        .map(|r| {
            let pct = match (worst_lag(r), win.window_revisions) {
                (Some((_, lag)), Some(n)) if n > 0 => {
                    let p = lag as f64 / n as f64 * 100.0;
                    (cells::pct(p), risk_cell(r.risk).1)
                }
                _ => (cells::NONE.into(), Role::Muted),
            };
            vec![
                (cells::resource(&r.group, &r.resource), Role::Text),
                risk_cell(r.risk),
                cells::reading(&r.watch_cache_lag_revisions, |x| {
                    (thousands_i(x), Role::Text)
                }),
                cells::opt(r.informer_lag_revisions, |x| (thousands_i(x), Role::Text)),
                cells::opt(r.informer_lag_seconds, |x| (cells::secs(x), Role::Text)),
                pct,
                (
                    thousands(r.gone_410),
                    if r.gone_410 > 0 {
                        Role::Delete
                    } else {
                        Role::Muted
                    },
                ),
                (thousands(r.relists), Role::Muted),
                (
                    r.informer_state
                        .clone()
                        .unwrap_or_else(|| cells::NONE.into()),
                    Role::Muted,
                ),
            ]
        })
        .collect();
    let table = Table::fit(cols, &cells, w);

    let mut legend = Vec::new();
    if cache_hidden {
        // Without the apiserver's metrics nothing is known of its version.
        let why = if v.apiserver.configured {
            "watch-cache lag: not exposed by this version (apiserver_watch_cache_resource_version, 1.31+)"
        } else {
            "watch-cache lag: needs the apiserver's metrics (see above)"
        };
        legend.extend(wrap(app, why, Role::Muted, w));
    }
    legend.extend(table.legends(app, &cells));
    if !cache_hidden {
        legend.extend(not_exposed_note(app, v, Section::Window, w));
    }
    let notes = wrap(
        app,
        "warn: lag past half the compaction window, or events behind past half the watch cache's ring; HIGH: at or past either (resuming gets 410 Gone); meas: not measured yet",
        Role::Muted,
        w,
    );
    let title = Vec::new();
    let body = Body {
        top,
        header: Some(table.header(app)),
        rows: cells.into_iter().map(|c| vec![table.row(app, c)]).collect(),
        empty: Some(if v.apiserver.configured {
            Line::from(sp(
                app,
                "no watchers measured yet (informers start with apiserver access)",
                Role::Muted,
            ))
        } else {
            empty_line(app, v, "watchers")
        }),
        legend,
        notes,
        ..Default::default()
    };
    (title, body)
}
