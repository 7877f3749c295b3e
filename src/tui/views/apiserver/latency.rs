//! Request latency by operation: the apiserver's storage calls
//! (`etcd_request_duration_seconds`, by operation and resource) and whole requests
//! (`apiserver_request_duration_seconds`, by verb and resource), worst p99 first as the derived
//! panels order them, with rates, error rates and a p99 sparkline over the scrapes.

use ratatui::text::Span;

use super::body::{wrap, Body, Col, Table};
use super::cells::{self, Cell};
use super::{empty_line, not_exposed_note};
use crate::derive::apiserver::{ApiserverPanels, LatencyRow};
use crate::tui::app::App;
use crate::tui::state::Section;
use crate::tui::theme::Role;
use crate::tui::views::sp;

/// Points in the p99 sparkline.
const TREND: usize = 12;

/// `etcd` for the storage-call histogram, `api` for whole requests.
fn layer(r: &LatencyRow) -> &'static str {
    if r.metric.starts_with("etcd_") {
        "etcd"
    } else {
        "api"
    }
}

pub(super) fn body(app: &App, v: &ApiserverPanels, w: usize) -> (Vec<Span<'static>>, Body) {
    let cols = vec![
        Col::text("src", 4, 0),
        Col::text("op", 14, 0),
        Col::name("resource", 12),
        Col::num("p50", 7, 3),
        Col::num("p90", 7, 3),
        Col::num("p99", 7, 0),
        Col::num("req/s", 7, 0),
        Col::num("err/s", 7, 1),
        Col::num("count", 11, 5),
        Col::text("p99 trend", TREND, 2),
    ];
    let cells: Vec<Vec<Cell>> = v
        .latency
        .iter()
        .map(|r| {
            vec![
                (layer(r).to_string(), Role::Muted),
                (r.operation.clone(), Role::Text),
                (cells::resource(&r.group, &r.resource), Role::Text),
                cells::quantile(r.p50),
                cells::quantile(r.p90),
                cells::quantile(r.p99),
                cells::opt(r.rate, |x| (cells::rate(x), Role::Text)),
                cells::opt(r.error_rate, |x| {
                    (
                        cells::rate(x),
                        if x > 0.0 { Role::Delete } else { Role::Text },
                    )
                }),
                (cells::count(r.count), Role::Muted),
                (cells::sparkline(&r.p99_history, TREND), Role::SeriesRate),
            ]
        })
        .collect();
    let table = Table::fit(cols, &cells, w);
    let etcd = v.latency.iter().filter(|r| layer(r) == "etcd").count();
    let title = if v.latency.is_empty() {
        Vec::new()
    } else {
        vec![sp(
            app,
            format!(
                " worst p99 first · {} etcd, {} api",
                etcd,
                v.latency.len() - etcd
            ),
            Role::Muted,
        )]
    };
    let notes = wrap(
        app,
        "src etcd: the apiserver's calls to etcd; api: whole requests. ≥: past the last bucket",
        Role::Muted,
        w,
    );
    let legend = not_exposed_note(app, v, Section::Latency, w);
    let body = Body {
        top: Vec::new(),
        header: Some(table.header(app)),
        rows: cells.into_iter().map(|c| vec![table.row(app, c)]).collect(),
        empty: Some(empty_line(app, v, "request-latency histograms")),
        legend,
        notes,
        ..Default::default()
    };
    (title, body)
}
