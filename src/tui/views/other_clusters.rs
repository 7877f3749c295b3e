//! kube-apiserver's other etcd clusters (`--etcd-servers-overrides`, e.g. Events in their
//! own etcd), each as its own cluster: up or down and since when, the member that answers
//! and its version, its own head revision and how fast it climbs, its keys and backend
//! size, and the puts and deletes watched under the prefix over the last minute (Events
//! expire through their lease, so their deletes are the TTL at work).

use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{pane, sp};
use crate::store::OtherCluster;
use crate::tui::app::App;
use crate::tui::text::{bytes, clock, rate, thousands, thousands_i};
use crate::tui::theme::Role;

/// Seconds of the rates shown.
const WINDOW: u64 = 60;

/// The pane's height for the clusters the session has (borders included); 0 without any.
pub(crate) fn height(app: &App) -> u16 {
    let clusters = app.session.other_clusters.all();
    if clusters.is_empty() {
        return 0;
    }
    // Three rows for a cluster that is up, two (state and error) for one that is down.
    2 + clusters
        .iter()
        .map(|c| if c.up { 3 } else { 2 })
        .sum::<u16>()
}

/// A short label for a cluster's resources: `events` for `/events`, `leases.coordination.k8s.io`
/// for `coordination.k8s.io/leases`.
pub(crate) fn label(resources: &str) -> String {
    resources
        .split(',')
        .map(|r| match r.trim().split_once('/') {
            Some(("", res)) => res.to_string(),
            Some((group, res)) => format!("{res}.{group}"),
            None => r.trim().to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn lines(app: &App, c: &OtherCluster) -> Vec<Line<'static>> {
    let off = app.settings.utc_offset;
    let mut first = vec![sp(
        app,
        format!("{} ", label(&c.resources)),
        Role::HeaderValue,
    )];
    if c.up {
        first.push(sp(app, "up", Role::Text));
        first.push(sp(
            app,
            format!(
                " · etcd {} · {}",
                c.version,
                c.endpoint
                    .trim_start_matches("https://")
                    .trim_start_matches("http://")
            ),
            Role::Muted,
        ));
    } else {
        let since = c.since.map(|t| clock(t, off)).unwrap_or_default();
        first.push(sp(app, format!("DOWN since {since}"), Role::Alert));
    }
    let r = c.rates(app.session.now(), WINDOW);
    let second = if !c.up {
        vec![sp(app, c.error.clone().unwrap_or_default(), Role::Note)]
    } else {
        vec![
            sp(app, "rev ", Role::Muted),
            sp(app, thousands_i(c.revision), Role::HeaderValue),
            sp(app, format!(" ({}/s)", rate(r.revisions)), Role::Muted),
            sp(app, "  keys ", Role::Muted),
            sp(app, thousands(c.keys), Role::HeaderValue),
            sp(app, "  db ", Role::Muted),
            sp(
                app,
                bytes(u64::try_from(c.db_size).unwrap_or(0)),
                Role::HeaderValue,
            ),
        ]
    };
    if !c.up {
        return vec![Line::from(first), Line::from(second)];
    }
    let third = vec![
        sp(app, "put/s ", Role::Muted),
        sp(app, rate(r.puts), Role::Text),
        sp(app, "  del/s ", Role::Muted),
        sp(app, rate(r.deletes), Role::Text),
        sp(app, format!("  {}/s", bytes(r.bytes as u64)), Role::Muted),
    ];
    vec![Line::from(first), Line::from(second), Line::from(third)]
}

/// Draws the pane into `area` (see [`height`]).
pub(crate) fn draw(app: &App, f: &mut Frame, area: Rect) {
    let clusters = app.session.other_clusters.all();
    let lines: Vec<Line> = clusters.iter().flat_map(|c| lines(app, c)).collect();
    let title = vec![
        sp(app, "Other etcd clusters", Role::PanelTitle),
        sp(app, format!(" {WINDOW} s rates"), Role::Muted),
    ];
    f.render_widget(Paragraph::new(lines).block(pane(app, title, false)), area);
}

#[cfg(test)]
mod tests {
    use super::label;

    #[test]
    fn labels_name_resources_as_kubectl_does() {
        assert_eq!(label("/events"), "events");
        assert_eq!(
            label("coordination.k8s.io/leases"),
            "leases.coordination.k8s.io"
        );
        assert_eq!(label("/events,/pods"), "events,pods");
    }
}
