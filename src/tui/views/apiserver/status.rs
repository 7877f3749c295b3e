//! One status line per scrape target: where its metrics come from, the server version, and
//! whether the data is current ("stale since …" with the error), plus lines the parser
//! skipped (never dropped silently) and how to configure a target that is not.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::store::metrics::TargetStatus;
use crate::tui::app::App;
use crate::tui::text::{clock, thousands};
use crate::tui::theme::Role;
use crate::tui::views::sp;

/// What to do about a target that is not configured.
const APISERVER_HOWTO: &str =
    "not configured — use --kubeconfig / --apiserver-metrics-url / --apiserver-metrics-file";
const ETCD_HOWTO: &str = "not configured — etcd's /metrics is read from the etcd endpoint";

/// Draws the two status lines into `area` (two rows).
pub(super) fn draw(app: &App, f: &mut Frame, area: Rect) {
    let v = &app.apiserver.panels;
    let [a, e] = Layout::vertical([Constraint::Length(1), Constraint::Length(1)]).areas(area);
    f.render_widget(
        Paragraph::new(line(app, "apiserver", &v.apiserver, APISERVER_HOWTO)),
        a,
    );
    f.render_widget(Paragraph::new(line(app, "etcd", &v.etcd, ETCD_HOWTO)), e);
}

/// The status line of one target.
pub(super) fn line(app: &App, label: &str, st: &TargetStatus, howto: &str) -> Line<'static> {
    let off = app.settings.utc_offset;
    let mut spans: Vec<Span<'static>> = vec![sp(app, format!(" {label:<11}"), Role::TableHeader)];
    if !st.configured {
        spans.push(sp(app, howto.to_string(), Role::Note));
        return Line::from(spans);
    }
    match (st.stale_since, st.last_good) {
        (Some(since), _) => {
            spans.push(sp(
                app,
                format!("⚠ stale since {}", clock(since, off)),
                Role::StatusError,
            ));
            if let Some(e) = &st.last_error {
                spans.push(sp(app, format!(" ({e})"), Role::Note));
            }
        }
        (None, None) => spans.push(sp(app, "waiting for the first scrape", Role::StatusWarn)),
        (None, Some(_)) => spans.push(sp(app, "● ok", Role::StatusOk)),
    }
    if let Some(ver) = &st.version {
        spans.push(Span::raw("  "));
        spans.push(sp(app, ver.clone(), Role::HeaderValue));
    }
    if st.skipped_lines > 0 {
        let n = st.skipped_lines;
        let mut text = format!(
            "  {} line{} skipped",
            thousands(n as u64),
            if n == 1 { "" } else { "s" }
        );
        if let Some(first) = &st.first_skipped {
            text.push_str(&format!(": first {first}"));
        }
        spans.push(sp(app, text, Role::Note));
    }
    if !st.source.is_empty() {
        spans.push(sp(app, format!("  {}", st.source), Role::Muted));
    }
    if let Some(t) = st.last_good {
        spans.push(sp(
            app,
            format!(
                "  last good {} ({} scrape{})",
                clock(t, off),
                thousands(st.good_scrapes),
                if st.good_scrapes == 1 { "" } else { "s" }
            ),
            Role::Muted,
        ));
    }
    Line::from(spans)
}
