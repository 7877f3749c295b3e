//! The apiserver panel: draws the [`ApiserverPanels`] the app holds (set from outside by
//! [`App::set_apiserver_panels`]; nothing here computes metrics).
//!
//! Layout, top to bottom: one status line per scrape target (apiserver, etcd), then the five
//! sections. With room (100x30 and more for the panel) all five are shown in three rows:
//! request latency across the top; the compaction window beside the watch cache; etcd
//! health with object counts beside flow control; row heights follow what each row has to
//! show. Smaller, or with the focused section zoomed, a strip
//! names the sections (marking those that need attention) and the focused one fills the
//! panel. Each section scrolls its rows on its own; the focused one takes up/down.
//!
//! The sections live in their own files ([`latency`], [`window`], [`cache`], [`etcd`],
//! [`apf`]) and each builds a [`body::Body`] for a width; this file places and scrolls them.

mod apf;
mod body;
mod cache;
mod cells;
mod controllers;
mod etcd;
mod latency;
mod status;
mod window;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{pane, sp};
use crate::derive::apiserver::ApiserverPanels;
use crate::tui::app::App;
use crate::tui::state::Section;
use crate::tui::theme::Role;
use body::Body;

/// The panel is split into all five sections only from this size on (columns, rows).
const FULL_MIN: (u16, u16) = (100, 30);

/// Draws the panel into `area`.
pub(crate) fn draw(app: &App, f: &mut Frame, area: Rect) {
    for c in &app.drawn.apiserver {
        c.forget();
    }
    let st = &app.apiserver;
    let status_h = if area.height >= 6 { 2 } else { 0 };
    let full = area.width >= FULL_MIN.0 && area.height >= FULL_MIN.1;
    let single = st.zoomed || !full;
    let strip_h = u16::from(single && area.height >= 4);
    let [status_area, strip_area, rest] = Layout::vertical([
        Constraint::Length(status_h),
        Constraint::Length(strip_h),
        Constraint::Min(0),
    ])
    .areas(area);
    if status_h > 0 {
        status::draw(app, f, status_area);
    }
    if single {
        if strip_h > 0 {
            draw_strip(app, f, strip_area);
        }
        draw_section(app, f, rest, st.focus, true);
        return;
    }
    // Latency across the top (it has the most columns); the window beside the watch cache;
    // etcd beside flow control. Rows get heights by what their sections want to show.
    // The controllers' row only when a controller component is configured.
    let all: [&[(Section, u16)]; 4] = [
        &[(Section::Latency, 100)],
        &[(Section::Window, 58), (Section::WatchCache, 42)],
        &[(Section::Etcd, 58), (Section::Apf, 42)],
        &[(Section::Controllers, 100)],
    ];
    let rows_shown = if app.apiserver.panels.controllers.configured() {
        4
    } else {
        3
    };
    let grid = &all[..rows_shown];
    let split = |row: Rect, parts: &[(Section, u16)]| -> Vec<Rect> {
        Layout::horizontal(parts.iter().map(|(_, p)| Constraint::Percentage(*p)))
            .split(row)
            .to_vec()
    };
    let wants: Vec<u16> = grid
        .iter()
        .map(|parts| {
            let probe = Rect::new(rest.x, rest.y, rest.width, 1);
            split(probe, parts)
                .iter()
                .zip(parts.iter())
                .map(|(r, (s, _))| {
                    let (_, b) = build(app, *s, r.width.saturating_sub(2) as usize);
                    (b.wanted() + 2).min(u16::MAX as usize) as u16
                })
                .max()
                .unwrap_or(3)
        })
        .collect();
    let heights = share(rest.height, &wants);
    let rows = Layout::vertical(heights.iter().map(|h| Constraint::Length(*h))).split(rest);
    for (row, parts) in rows.iter().zip(grid) {
        for (r, (section, _)) in split(*row, parts).into_iter().zip(parts.iter()) {
            draw_section(app, f, r, *section, *section == st.focus);
        }
    }
}

/// Splits `total` rows among parts that want `wants` rows: everyone gets what they want
/// when it all fits (the rest spread evenly); otherwise parts wanting less than an equal
/// share get what they want and the others share the remainder equally.
fn share(total: u16, wants: &[u16]) -> Vec<u16> {
    let n = wants.len();
    let mut out = vec![0u16; n];
    if n == 0 {
        return out;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|i| wants[*i]);
    let mut left = total;
    for (k, &i) in order.iter().enumerate() {
        let fair = left / (n - k) as u16;
        let give = wants[i].min(fair);
        out[i] = give;
        left -= give;
    }
    let each = left / n as u16;
    for o in out.iter_mut() {
        *o += each;
    }
    out[n - 1] += left - each * n as u16;
    out
}

/// Title spans (after the name) and body of a section at inner width `w`.
/// With a filter (`/`), only the rows whose text holds it (any case) are kept, and the
/// title says so.
fn build(app: &App, section: Section, w: usize) -> (Vec<Span<'static>>, Body) {
    let v = &app.apiserver.panels;
    let (mut title, mut body) = match section {
        Section::Latency => latency::body(app, v, w),
        Section::Window => window::body(app, v, w),
        Section::WatchCache => cache::body(app, v, w),
        Section::Etcd => etcd::body(app, v, w),
        Section::Apf => apf::body(app, v, w),
        Section::Controllers => controllers::body(app, v, w),
    };
    let f = &app.apiserver.filter;
    if !f.is_empty() {
        let matches = |lines: &Vec<Line<'static>>| {
            lines.iter().any(|l| {
                l.spans
                    .iter()
                    .map(|s| s.content.as_ref())
                    .collect::<String>()
                    .to_lowercase()
                    .contains(f.as_str())
            })
        };
        let mut keep: Vec<bool> = body.rows.iter().map(matches).collect();
        // A sub-table's headings stay with any row of theirs that stays.
        let subs = &body.subheaders;
        for (n, &h) in subs.iter().enumerate() {
            let end = subs.get(n + 1).copied().unwrap_or(keep.len());
            if h < keep.len() {
                keep[h] = keep[h + 1..end.max(h + 1)].iter().any(|k| *k);
            }
        }
        let before = body.rows.len() - subs.len();
        let shown = keep
            .iter()
            .enumerate()
            .filter(|(i, k)| **k && !subs.contains(i))
            .count();
        let mut i = 0;
        body.rows.retain(|_| {
            i += 1;
            keep[i - 1]
        });
        body.subheaders.clear();
        title.push(Span::styled(
            format!(" filter \"{f}\" {shown}/{before}"),
            app.settings.theme.get(Role::Filter),
        ));
        if body.rows.is_empty() {
            body.empty = Some(Line::from(Span::styled(
                format!("no row matches \"{f}\" (esc clears the filter)"),
                app.settings.theme.get(Role::Muted),
            )));
        }
    }
    (title, body)
}

fn title(section: Section) -> &'static str {
    match section {
        Section::Latency => "Request latency",
        Section::Window => "Compaction window vs lag",
        Section::WatchCache => "Watch cache",
        Section::Etcd => "etcd health & objects",
        Section::Apf => "Flow control (APF)",
        Section::Controllers => "Controllers' informers & workqueues",
    }
}

/// Whether the section's data comes from a stale target (its last scrape failed).
fn target_stale(v: &ApiserverPanels, section: Section) -> bool {
    match section {
        Section::Etcd => v.etcd.stale_since.is_some(),
        Section::Window => v.etcd.stale_since.is_some() || v.apiserver.stale_since.is_some(),
        Section::Controllers => v
            .controllers
            .components
            .iter()
            .any(|c| c.status.stale_since.is_some()),
        _ => v.apiserver.stale_since.is_some(),
    }
}

fn draw_section(app: &App, f: &mut Frame, area: Rect, section: Section, focused: bool) {
    if area.width < 3 || area.height < 3 {
        return;
    }
    let inner_w = area.width.saturating_sub(2);
    let inner_h = area.height.saturating_sub(2);
    let (extra, body) = build(app, section, inner_w as usize);
    let placed = body.place(inner_h as usize);
    let max_start = body.max_start(placed.rows_h);
    app.drawn.apiserver[section.index()].record(placed.rows_h, max_start);
    let total = body.rows.len();
    let start = app.apiserver.scroll[section.index()].min(max_start);
    let (lines, shown) = body.lines(placed, start);
    let stale = target_stale(&app.apiserver.panels, section);
    let mut t = Vec::new();
    if stale && !app.stale() {
        t.push(sp(app, "STALE", Role::StatusError));
        t.push(Span::raw(" "));
    }
    t.push(sp(app, title(section), Role::PanelTitle));
    t.extend(extra);
    if total > shown {
        t.push(sp(
            app,
            format!(" rows {}–{} of {}", start + 1, start + shown, total),
            Role::Filter,
        ));
    }
    let mut block = pane(app, t, focused);
    if stale {
        block = block.border_style(app.settings.theme.get(Role::BorderStale));
    }
    f.render_widget(Paragraph::new(lines).block(block), area);
}

/// The role marking a section that needs a look, for the strip.
fn attention(v: &ApiserverPanels, section: Section) -> Option<Role> {
    use crate::derive::apiserver::Risk;
    use crate::metrics::quantile::Quantile;
    match section {
        Section::Latency => v
            .latency
            .iter()
            .any(|r| match r.p99 {
                Quantile::AtLeast(_) => true,
                Quantile::Value(s) => s >= 1.0,
                Quantile::NoData => false,
            })
            .then_some(Role::StatusWarn),
        Section::Window => match v.window.rows.iter().map(|r| r.risk).max() {
            Some(Risk::Danger) => Some(Role::StatusError),
            Some(Risk::Warn) => Some(Role::StatusWarn),
            _ => None,
        },
        Section::WatchCache => None,
        Section::Etcd => {
            let h = v.etcd_health.as_ref();
            if h.is_some_and(|h| h.has_leader == Some(false))
                || h.and_then(|h| h.quota_used_percent)
                    .is_some_and(|p| p >= 80.0)
            {
                Some(Role::StatusError)
            } else if v.objects.iter().any(|o| o.flag.is_some()) {
                Some(Role::StatusWarn)
            } else {
                None
            }
        }
        Section::Apf => v
            .apf
            .iter()
            .flatten()
            .any(|r| r.rejected_rate.is_some_and(|x| x > 0.0))
            .then_some(Role::StatusWarn),
        Section::Controllers => match v.controllers.informers.iter().map(|r| r.risk).max() {
            Some(Risk::Danger) => Some(Role::StatusError),
            Some(Risk::Warn) => Some(Role::StatusWarn),
            _ => None,
        },
    }
}

/// The section strip: every section, the focused one highlighted, `!` on those needing a look.
fn draw_strip(app: &App, f: &mut Frame, area: Rect) {
    let v = &app.apiserver.panels;
    let mut spans = vec![Span::raw(" ")];
    for &s in app.apiserver.shown() {
        let role = if s == app.apiserver.focus {
            Role::TabActive
        } else {
            Role::TabInactive
        };
        spans.push(sp(app, format!(" {} ", s.label()), role));
        match attention(v, s) {
            Some(r) => spans.push(sp(app, "!", r)),
            None => spans.push(Span::raw(" ")),
        }
    }
    if app.apiserver.zoomed {
        spans.push(sp(app, "  zoomed", Role::Muted));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The concepts of `section` that the apiserver's version does not expose, as a note: one
/// line each, by metric name (the newest name of the concept, as an operator would search
/// for it), with the version it is missing in and why (`derive::apiserver::not_exposed_text`:
/// new in a later release, or removed there and what replaces it). Concepts the section
/// does not draw are named only when removed, so that a hidden metric's replacement is
/// found where its data would be.
fn not_exposed_note(
    app: &App,
    v: &ApiserverPanels,
    section: Section,
    w: usize,
) -> Vec<Line<'static>> {
    let t = crate::metrics::concepts::table();
    let version = v.apiserver_version.as_deref();
    let mut out = Vec::new();
    for id in &v.not_exposed {
        let Some((s, drawn)) = concept_section(id) else {
            continue;
        };
        if s != section {
            continue;
        }
        let removed = t.concepts.iter().find(|c| &c.id == id).is_some_and(|c| {
            matches!(
                c.absence(version),
                crate::metrics::concepts::Absence::Removed { .. }
            )
        });
        if drawn || removed {
            let text = crate::derive::apiserver::not_exposed_text(t, id, version);
            out.extend(body::wrap(app, &text, Role::Muted, w));
        }
    }
    out
}

/// Which section a metric concept belongs to (ids from `metrics/concepts.toml`), and
/// whether the section draws it (`false`: the section is where its data would be read, the
/// list and sharding families the panels do not draw).
fn concept_section(id: &str) -> Option<(Section, bool)> {
    use crate::metrics::concepts::Concept as C;
    match C::from_id(id)? {
        C::WatchCacheResourceVersion => Some((Section::Window, true)),
        C::EtcdBookmarks => Some((Section::Window, false)),
        C::WatchCacheCapacity
        | C::WatchCacheCapacityIncrease
        | C::WatchCacheCapacityDecrease
        | C::WatchCacheEventsReceived
        | C::WatchCacheEventsDispatched
        | C::WatchCacheInitializations
        | C::TerminatedWatchers
        | C::WatchLists => Some((Section::WatchCache, true)),
        C::WatchCacheInitializationErrors
        | C::WatchCacheInitializationDuration
        | C::WatchShards
        | C::WatchFilteredEvents
        | C::WatchEventsDispatchDuration
        | C::CacheLists
        | C::CacheListFetched
        | C::CacheListReturned
        | C::StorageLists
        | C::StorageListFetched
        | C::StorageListEvaluated
        | C::StorageListReturned
        | C::StorageListDuration => Some((Section::WatchCache, false)),
        C::EtcdRequestDuration
        | C::EtcdRequests
        | C::EtcdRequestErrors
        | C::RequestDuration
        | C::Requests
        | C::RequestErrors => Some((Section::Latency, true)),
        C::ApfInqueue | C::ApfExecuting | C::ApfRejected | C::ApfNominalSeats => {
            Some((Section::Apf, true))
        }
        C::Objects | C::StorageSize => Some((Section::Etcd, true)),
        C::BuildInfo
        | C::EtcdServerVersion
        | C::EtcdDbSize
        | C::EtcdDbInUse
        | C::EtcdQuota
        | C::EtcdHasLeader
        | C::EtcdLeaderChanges
        | C::EtcdSlowWatchers
        | C::EtcdProposalsFailed
        | C::EtcdCurrentRevision
        | C::EtcdCompactRevision
        | C::EtcdKeys
        | C::EtcdRanges
        | C::EtcdRangeDuration
        | C::EtcdFeatureEnabled
        | C::EtcdServerRequestDuration
        | C::EtcdWatchSendLoopWatchStream
        | C::EtcdWatchSendLoopWatchStreamPerEvent
        | C::EtcdWatchSendLoopControlStream
        | C::EtcdWatchSendLoopProgress
        | C::EtcdHttpReceived
        | C::EtcdHttpFailed
        | C::EtcdHttpDuration => None,
        C::InformerStoreResourceVersion
        | C::InformerQueuedItems
        | C::InformerProcessingLatency
        | C::WorkqueueDepth
        | C::WorkqueueAdds
        | C::WorkqueueRetries
        | C::WorkqueueLongestRunning => Some((Section::Controllers, true)),
    }
}

/// `" 5 resources"`, or nothing for none (the section says why it is empty).
fn count_title(app: &App, n: usize, what: &str) -> Vec<Span<'static>> {
    if n == 0 {
        Vec::new()
    } else {
        vec![sp(app, format!(" {n} {what}"), Role::Muted)]
    }
}

/// The line shown in a section without rows: why there is nothing yet.
fn empty_line(app: &App, v: &ApiserverPanels, what: &str) -> Line<'static> {
    let text = if !v.apiserver.configured {
        "apiserver metrics not configured (see above)".to_string()
    } else if v.apiserver.good_scrapes == 0 {
        format!("no {what} yet: waiting for the first apiserver scrape")
    } else {
        format!("no {what} in the apiserver's metrics")
    };
    Line::from(sp(app, text, Role::Muted))
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn rows_share_the_height_by_what_they_want() {
        assert_eq!(share(35, &[11, 15, 14]), vec![11, 12, 12]);
        assert_eq!(share(40, &[5, 10, 10]), vec![10, 15, 15]);
        assert_eq!(share(3, &[11, 15, 14]), vec![1, 1, 1]);
        assert_eq!(share(0, &[4, 4]), vec![0, 0]);
        let s = share(37, &[8, 30, 9]);
        assert_eq!(s.iter().sum::<u16>(), 37);
        assert_eq!(s, vec![8, 20, 9]);
    }
}
