//! The header: title, panel tabs and connection state on the first row; etcd version, head
//! and compacted revisions, keys and events/s on the second; and the alert row shown when
//! the data is stale (a watch on an unresponsive server hangs without an error, so silence
//! past the liveness window counts as stale) or the source ended.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use std::time::SystemTime;

use super::sp;
use crate::model::{ConnState, Revision};
use crate::record::{Marker, MarkerKind, RevisionTimeline};
use crate::tui::app::{App, Panel};
use crate::tui::state::ReplayStatus;
use crate::tui::text::{bytes, clock, rate, thousands, thousands_i};
use crate::tui::theme::Role;

/// Events per second over the last `window` whole seconds before the app's clock.
pub(crate) fn events_per_second(app: &App, window: u64) -> f64 {
    let now = app.now_second();
    let from = now.saturating_sub(window);
    let n: u64 = app
        .session
        .replica
        .growth()
        .rev()
        .take_while(|g| g.second >= from)
        .filter(|g| g.second < now)
        .map(|g| g.events as u64)
        .sum();
    n as f64 / window as f64
}

/// The connection state for the header's right side, in at most `room` columns where a
/// shorter form exists (a list's progress).
fn conn_label(app: &App, room: u16) -> (String, Role) {
    if app.source_ended {
        return ("source ended".into(), Role::StatusWarn);
    }
    match app.session.etcd.conn() {
        ConnState::Connecting => ("connecting…".into(), Role::StatusWarn),
        ConnState::Listing { keys } => {
            let rev = app
                .session
                .replica
                .listing()
                .map(|(r, _)| format!(" @rev {}", thousands_i(r)))
                .unwrap_or_default();
            let long = match app.session.replica.list_progress() {
                Some(p) if !p.done => crate::derive::progress::list_progress(p),
                _ => format!("{} keys", thousands(*keys)),
            };
            let long = format!("listing{rev}: {long}");
            // Narrow terminals get the share done and the time left instead of a cut line.
            let short = app
                .session
                .replica
                .list_progress()
                .filter(|p| !p.done)
                .and_then(|p| {
                    let e = p.expected_keys.filter(|e| *e > 0)?;
                    let left = p
                        .estimate_left()
                        .map(|d| format!(" · {} s left", d.as_secs().max(1)))
                        .unwrap_or_default();
                    Some(format!("listing {}%{left}", (p.keys * 100 / e).min(100)))
                });
            let text = match short {
                Some(s) if long.chars().count() + 2 > room as usize => s,
                _ => long,
            };
            (text, Role::StatusWarn)
        }
        ConnState::Watching => ("● watching".into(), Role::StatusOk),
        ConnState::File => ("■ db file".into(), Role::StatusOk),
        ConnState::NotResponding { since } => (
            format!(
                "NOT RESPONDING since {}",
                clock(*since, app.settings.utc_offset)
            ),
            Role::StatusError,
        ),
        ConnState::Reconnecting { attempt, .. } => (
            format!("reconnecting (attempt {attempt})"),
            Role::StatusWarn,
        ),
        ConnState::Failed { .. } => ("FAILED".into(), Role::StatusError),
    }
}

/// What an etcd alarm means and what to do (the first alarm raised): `short` for the alert
/// row (fits 100 columns), else in full for the Apiserver panel. etcd's alarms (etcd v3
/// `AlarmType`): NOSPACE, raised when the backend file reaches `--quota-backend-bytes`,
/// makes etcd accept only reads and deletes until disarmed; CORRUPT, raised by the corruption check when
/// members' data disagree.
pub(crate) fn alarm_advice(app: &App, short: bool) -> Option<String> {
    let (_, s) = app.session.etcd.etcd_status()?;
    let alarm = s.alarms().into_iter().next()?;
    Some(match (alarm.as_str(), short) {
        ("NOSPACE", true) => " ✖ etcd alarm NOSPACE: creates and updates fail — delete, compact, defrag, `etcdctl alarm disarm` (4: more)".to_string(),
        ("NOSPACE", false) => "✖ etcd alarm NOSPACE: etcd accepts only reads and deletes, so the apiserver fails every create and update. Free space: delete what is not needed (old Events, finished Jobs), compact (`etcdctl compact` to the current revision), defragment every member (`etcdctl defrag`), then `etcdctl alarm disarm`; if the live data itself outgrew the quota, raise etcd's --quota-backend-bytes.".to_string(),
        ("CORRUPT", true) => " ✖ etcd alarm CORRUPT: members' data disagree — stop writes (4: more)".to_string(),
        ("CORRUPT", false) => "✖ etcd alarm CORRUPT: the members' data disagree (etcd's corruption check). Stop writes, find the member whose hash differs (`etcdctl endpoint hashkv --cluster`), and replace it from a good member's snapshot.".to_string(),
        (other, _) => format!(" ✖ etcd alarm {other} — see `etcdctl alarm list`"),
    })
}

/// The session's title, with the endpoint read now when the source failed over to another
/// member (the title is made from the first endpoint given at the start).
pub(crate) fn title(app: &App) -> String {
    let info = app.session.info();
    match app.session.etcd.server() {
        // A title made from the endpoints given (not the demo's), naming another member.
        Some((now, _))
            if info
                .endpoints
                .first()
                .is_some_and(|first| info.title.starts_with(first.as_str()))
                && !info.title.starts_with(&format!("{now} ")) =>
        {
            format!("{now} {}/ (failed over)", info.prefix.trim_end_matches('/'))
        }
        _ => info.title.clone(),
    }
}

/// The first of kube-apiserver's other etcd clusters that is down, as an alert.
fn other_down(app: &App) -> Option<String> {
    let mut down = app.session.other_clusters.all().iter().filter(|c| !c.up);
    let c = down.next()?;
    let more = match down.count() {
        0 => String::new(),
        n => format!(" (+{n} more down: see Growth)"),
    };
    Some(format!(
        " ⚠ etcd for {} unreachable since {}{more}: {}",
        super::other_clusters::label(&c.resources),
        c.since
            .map(|t| clock(t, app.settings.utc_offset))
            .unwrap_or_default(),
        c.error.as_deref().unwrap_or("")
    ))
}

/// How long a gap stays in the alert row after its relist, in seconds of session time.
const RECENT_GAP_SECONDS: u64 = 300;

/// The newest gap, while recent: which revisions were not seen one by one, and what the
/// relist that closed it showed had changed (the rows marked `unseen` in Events).
fn recent_gap(app: &App) -> Option<String> {
    let r = &app.session.replica;
    let g = r.current_gaps().last()?;
    let age = app.session.now().duration_since(g.at).ok()?.as_secs();
    if age > RECENT_GAP_SECONDS {
        return None;
    }
    let changes = match r.gap_changes(g).map(|c| c.total()) {
        Some(c) => format!(
            ": {} created, {} changed, {} deleted unseen (rows marked unseen in Events;",
            c.created, c.changed, c.deleted
        ),
        None => " unseen (".to_string(),
    };
    Some(format!(
        " ⚠ gap {}–{} at {}{changes} etcd compacted at {})",
        g.from,
        g.to,
        clock(g.at, app.settings.utc_offset),
        g.compact_revision
    ))
}

/// etcd replaced under regscope, for the rest of the session: what is shown since is a
/// different cluster's (or a restored) history.
fn replaced(app: &App) -> Option<String> {
    let r = app.session.etcd.replacements().last()?;
    Some(format!(
        " ⚠ etcd replaced at {}: {}, {}, at {} (the RESET row in Events)",
        clock(r.at, app.settings.utc_offset),
        r.revisions(),
        r.ids("?"),
        r.endpoint
    ))
}

/// `s` in at most `w` columns, cut at a word's end with `…` when it does not fit: only at
/// white space (a word longer than a third of the room is cut inside).
pub(crate) fn fit_words(s: &str, w: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= w {
        return s.to_string();
    }
    if w == 0 {
        return String::new();
    }
    let room = w - 1;
    // A word is a run of anything but white space (`etcdctl`, `15:04:05,` and `(4:` alike).
    let ws = |i: usize| chars.get(i).is_none_or(|c| c.is_whitespace());
    // Before a word's trailing comma, colon or semicolon is a word's end too.
    let closing = |i: usize| matches!(chars.get(i), Some(',' | ':' | ';')) && ws(i + 1);
    let inside = |end: usize| !ws(end - 1) && !ws(end) && !closing(end);
    let mut end = room;
    while end > room * 2 / 3 && inside(end) {
        end -= 1;
    }
    if inside(end) {
        end = room;
    }
    let mut body: String = chars[..end].iter().collect();
    if end < room || !inside(end) {
        let trimmed = body.trim_end_matches([' ', ',', ':', ';', '—', '(']);
        body = trimmed.to_string();
    }
    format!("{body}…")
}

/// "2m 10s": a duration in whole seconds, minutes and hours.
fn for_how_long(secs: u64) -> String {
    match secs {
        0..=59 => format!("{secs}s"),
        60..=3599 => format!("{}m {}s", secs / 60, secs % 60),
        _ => format!("{}h {}m", secs / 3600, secs % 3600 / 60),
    }
}

/// The alert row, when there is something the user must not miss, fitted to `width`
/// columns at a word's end.
pub(crate) fn alert(app: &App, width: usize) -> Option<Line<'static>> {
    let t = &app.settings.theme;
    let alarm = alarm_advice(app, true);
    let since_for = |since: SystemTime| {
        let long = app
            .session
            .now()
            .duration_since(since)
            .map_or(String::new(), |d| {
                format!(", {}", for_how_long(d.as_secs()))
            });
        format!("since {}{long}", clock(since, app.settings.utc_offset))
    };
    let text = match app.session.etcd.conn() {
        ConnState::NotResponding { since } => format!(
            " ⚠ etcd not responding {} — data shown is stale",
            since_for(*since)
        ),
        ConnState::Reconnecting { attempt, error } => {
            let since = app
                .session
                .etcd
                .outage_since()
                .map(|s| format!(" {}", since_for(s)))
                .unwrap_or_default();
            format!(
                " ⚠ etcd unreachable{since} (reconnecting, attempt {attempt}) — data shown is stale: {error}"
            )
        }
        ConnState::Failed { error } => {
            format!(" ✖ source failed — data shown is stale: {error}")
        }
        _ => match alarm
            .or_else(|| other_down(app))
            .or_else(|| recent_gap(app))
            .or_else(|| replaced(app))
        {
            Some(a) => a,
            None if app.source_ended => {
                return Some(
                    Line::from(" source ended — the data shown is final; the console stays usable")
                        .style(t.get(Role::Note)),
                )
            }
            None => return None,
        },
    };
    Some(Line::from(fit_words(&text, width)).style(t.get(Role::Alert)))
}

/// Draws the two header rows into `area`.
pub(crate) fn draw(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.settings.theme;
    let [row0, row1] = Layout::vertical([Constraint::Length(1), Constraint::Length(1)]).areas(area);

    let (mut conn, mut role) = conn_label(app, row0.width / 2);
    // Every clock time on screen is in this zone: said once, here.
    conn = format!("{conn}  {}", app.settings.zone_label());
    if let Some(r) = &app.recording {
        conn = format!("● REC {}  {conn}", bytes(r.bytes));
        role = Role::StatusError;
    } else if app.cursor.replay.is_some() {
        conn = format!("REPLAY · {conn}");
    }
    let conn_w = (conn.chars().count() as u16 + 2).min(row0.width / 2);
    let [left, right] =
        Layout::horizontal([Constraint::Min(0), Constraint::Length(conn_w)]).areas(row0);
    // Every tab named when all fit beside the title; else the current one named and the
    // others by number only, with the title cut to the room left (dropped below 8 columns);
    // regscope's own name goes last.
    let labels = |compact: bool| -> Vec<String> {
        Panel::ALL
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if compact && *p != app.panel {
                    format!(" {} ", i + 1)
                } else {
                    format!(" {} {} ", i + 1, p.label())
                }
            })
            .collect()
    };
    let tabs_w = |l: &[String]| l.iter().map(|t| t.chars().count() + 1).sum::<usize>();
    let brand = " regscope ";
    let room = left.width as usize;
    let mut name = title(app);
    let mut labels_shown = labels(false);
    if brand.len() + name.chars().count() + 2 + tabs_w(&labels_shown) > room {
        labels_shown = labels(true);
        let name_room = room.saturating_sub(brand.len() + 2 + tabs_w(&labels_shown));
        name = if name_room >= 8 {
            super::fit(&name, name_room)
        } else {
            String::new()
        };
    }
    let mut spans = Vec::new();
    if brand.len() + 1 + tabs_w(&labels_shown) <= room {
        spans.push(sp(app, brand, Role::Title));
    }
    if !name.is_empty() {
        spans.push(sp(app, name, Role::Header));
        spans.push(Span::raw("  "));
    } else if !spans.is_empty() {
        spans.push(Span::raw(" "));
    }
    let mut x = left.x + spans.iter().map(|s| s.width() as u16).sum::<u16>();
    let mut tabs = [(0u16, 0u16); 4];
    for (i, (p, label)) in Panel::ALL.iter().zip(labels_shown).enumerate() {
        let role = if *p == app.panel {
            Role::TabActive
        } else {
            Role::TabInactive
        };
        let tab = sp(app, label, role);
        let w = tab.width() as u16;
        if let Some(t) = tabs.get_mut(i) {
            *t = (x.min(left.right()), (x + w).min(left.right()));
        }
        x += w + 1;
        spans.push(tab);
        spans.push(Span::raw(" "));
    }
    app.drawn.tabs.set(tabs);
    f.render_widget(
        Paragraph::new(Line::from(spans)).style(t.get(Role::Header)),
        left,
    );
    f.render_widget(
        Paragraph::new(Line::from(vec![sp(app, conn, role), Span::raw(" ")]).right_aligned()),
        right,
    );

    let r = &app.session.replica;
    let (version, endpoint) = match app.session.etcd.server() {
        Some((ep, v)) => (v.to_string(), ep.to_string()),
        None => ("?".into(), String::new()),
    };
    let v = |s: String| sp(app, s, Role::HeaderValue);
    let l = |s: &'static str| sp(app, s, Role::Header);
    // A db file records its storage or cluster version (`meta`/`cluster` buckets), never
    // the binary's: `3.4.0` for an etcd 3.4.23.
    let label = if app.revision_timeline().is_some() {
        " storage "
    } else {
        " etcd "
    };
    let mut stats = vec![
        l(label),
        v(version),
        l("  rev "),
        v(thousands_i(r.revision())),
    ];
    let w = app.session.etcd.watch_health();
    if w.head_at_least > r.revision() {
        // etcd's watch named a newer head: writes outside the prefix (confirmed when a
        // second progress came with no event), or a progress notification not applied
        // because it may precede queued events.
        let text = if app.session.synced_revision() >= w.head_at_least {
            format!(
                " (etcd head {}, nothing pending)",
                thousands_i(w.head_at_least)
            )
        } else {
            format!(" (head ≥ {})", thousands_i(w.head_at_least))
        };
        stats.push(sp(app, text, Role::Muted));
    }
    if w.anomalies() > 0 {
        stats.push(sp(
            app,
            format!("  watch anomalies {}", thousands(w.anomalies())),
            Role::StatusWarn,
        ));
    }
    stats.extend([
        l("  compacted "),
        v(r.compact_revision().map_or("none seen".into(), thousands_i)),
        l("  keys "),
        v(thousands(r.live_keys())),
        l(" ("),
        v(bytes(r.live_bytes())),
        l(")"),
    ]);
    // A rate over wall-clock seconds means nothing over a db file (one time for all).
    if app.revision_timeline().is_none() {
        stats.extend([
            l("  "),
            v(rate(events_per_second(app, 10))),
            l(" ev/s (10 s)"),
        ]);
    }
    if let Some(m) = app.memory {
        // What regscope holds and what of it the history budget keeps: the longest form
        // that fits the row (packed values, then history dropped first), never cut.
        let (_, history) = r.history_usage();
        let used: usize = stats.iter().map(|s| s.width()).sum();
        let form = |packed: bool, hist: bool| {
            let mut out = vec![l("  mem "), v(bytes(m.resident))];
            if let Some(limit) = m.limit {
                out.push(l(" of "));
                out.push(v(bytes(limit)));
            }
            let packed = m.packed.filter(|_| packed);
            if packed.is_none() && !hist {
                return out;
            }
            out.push(l(" ("));
            if let Some((raw, held)) = packed {
                // Values kept compressed in memory, counted at their raw size elsewhere.
                out.push(l("values "));
                out.push(v(bytes(raw)));
                out.push(l(" packed to "));
                out.push(v(bytes(held)));
                if hist {
                    out.push(l(", "));
                }
            }
            if hist {
                out.push(l("history "));
                out.push(v(bytes(history as u64)));
                out.push(l(" of "));
                out.push(v(bytes(r.history_budget() as u64)));
            }
            out.push(l(")"));
            out
        };
        let fits = |f: &Vec<Span<'static>>| {
            used + f.iter().map(|s| s.width()).sum::<usize>() <= row1.width as usize
        };
        if let Some(f) = [form(true, true), form(false, true), form(false, false)]
            .into_iter()
            .find(fits)
        {
            stats.extend(f);
        }
    }
    let used: usize = stats.iter().map(|s| s.width()).sum();
    if !endpoint.is_empty()
        && endpoint != app.session.info().title
        && !title(app).starts_with(&format!("{endpoint} "))
        && used + 2 + endpoint.chars().count() <= row1.width as usize
    {
        stats.push(l("  "));
        stats.push(sp(app, endpoint, Role::Muted));
    }
    f.render_widget(Paragraph::new(Line::from(stats)), row1);
}

/// The timeline row: in replay, play state, speed, the cursor's time on a bar from the
/// recording's start to its end with a tick where each marker falls (once they are read;
/// see [`ticks`]), the position and the last marker; paused live, how much is queued
/// behind the cursor. `None` when live and following.
pub(crate) fn timeline(app: &App, width: u16) -> Option<Line<'static>> {
    let t = &app.settings.theme;
    let c = &app.cursor;
    let Some(r) = &c.replay else {
        if !c.paused {
            return None;
        }
        return Some(Line::from(vec![
            Span::styled(" ⏸ PAUSED ", t.get(Role::StatusWarn)),
            Span::styled(
                format!(
                    " every panel frozen at {} · {} observation{} queued · p resumes",
                    clock(app.now(), app.settings.utc_offset),
                    thousands(c.backlog() as u64),
                    if c.backlog() == 1 { "" } else { "s" }
                ),
                t.get(Role::Muted),
            ),
        ]));
    };
    let state = if c.paused { " ⏸ " } else { " ▶ " };
    if let Some(tl) = r.revisions {
        return Some(revision_timeline(app, r, tl, width));
    }
    let now = app.now();
    let off = app.settings.utc_offset;
    let total = r
        .end
        .duration_since(r.start)
        .unwrap_or_default()
        .as_secs_f64();
    let done = now
        .duration_since(r.start)
        .unwrap_or_default()
        .as_secs_f64();
    let frac = if total > 0.0 {
        (done / total).clamp(0.0, 1.0)
    } else {
        1.0
    };
    let left = format!("{state}{} ", r.speed.label());
    let times = format!(" {} ", clock(now, off));
    let tail = format!(
        " {} · {}/{}",
        clock(r.end, off),
        thousands(r.position),
        thousands(r.total)
    );
    let fixed = left.chars().count() + times.chars().count() + tail.chars().count() + 2;
    // Short enough to leave room for the marker at 120 columns.
    let bar_w = (width as usize).saturating_sub(fixed).clamp(0, 36);
    let marks = r
        .markers
        .as_deref()
        .map(|m| ticks(m, r.start, r.end, bar_w))
        .unwrap_or_default();
    let mut spans = vec![
        Span::styled(
            left,
            t.get(if c.paused {
                Role::StatusWarn
            } else {
                Role::StatusOk
            }),
        ),
        Span::styled(times, t.get(Role::HeaderValue)),
    ];
    spans.extend(bar(app, bar_w, frac, &marks));
    spans.push(Span::styled(tail, t.get(Role::Muted)));
    spans.extend(after_bar(app, r, "  space plays · : seeks · n next marker"));
    Some(Line::from(spans))
}

/// The timeline row over etcd's db file ([`ReplayStatus::revisions`]): play state and
/// speed in revisions a second, the replica's revision of the head on a bar from the
/// file's first whole state (its finished compaction) to its head, with the markers'
/// ticks at their revisions, the compaction, and the last marker. No time is shown as a
/// revision's: the file's modification time, the only time it has, is named as that, and
/// only where the row has room after everything else.
fn revision_timeline(
    app: &App,
    r: &ReplayStatus,
    tl: RevisionTimeline,
    width: u16,
) -> Line<'static> {
    let t = &app.settings.theme;
    let c = &app.cursor;
    let state = if c.paused { " ⏸ " } else { " ▶ " };
    let rev = app.session.revision();
    let span = (tl.head - tl.first) as f64;
    let frac = if span > 0.0 {
        ((rev - tl.first) as f64 / span).clamp(0.0, 1.0)
    } else {
        1.0
    };
    let left = format!("{state}{} ", r.speed.revisions_label());
    // Before the file's first state is listed (a seek to position 0) there is no revision.
    let here = if rev > 0 {
        format!(" r{} of {} ", thousands_i(rev), thousands_i(tl.head))
    } else {
        format!(" listing r{} ", thousands_i(tl.first))
    };
    let tail = if tl.compacted > 0 {
        format!(" compacted at r{}", thousands_i(tl.compacted))
    } else {
        " never compacted".to_string()
    };
    let fixed = left.chars().count() + here.chars().count() + tail.chars().count() + 2;
    let bar_w = (width as usize).saturating_sub(fixed).clamp(0, 36);
    let marks = r
        .markers
        .as_deref()
        .map(|m| revision_ticks(m, tl.first, tl.head, bar_w))
        .unwrap_or_default();
    let mut spans = vec![
        Span::styled(
            left,
            t.get(if c.paused {
                Role::StatusWarn
            } else {
                Role::StatusOk
            }),
        ),
        Span::styled(here, t.get(Role::HeaderValue)),
    ];
    spans.extend(bar(app, bar_w, frac, &marks));
    spans.push(Span::styled(tail, t.get(Role::Muted)));
    spans.extend(after_bar(app, r, "  space plays · t seeks rN, start, end"));
    let used: usize = spans.iter().map(|s| s.width()).sum();
    let file_time = format!(
        "  file modified {} {} (no revision's time)",
        clock(tl.file_time, app.settings.utc_offset),
        app.settings.zone_label()
    );
    if used + file_time.chars().count() <= width as usize {
        spans.push(Span::styled(file_time, t.get(Role::Muted)));
    }
    Line::from(spans)
}

/// What follows the timeline's bar and its end label: the last marker (or, paused, the
/// keys `hint` names), then the warnings that the recording holds Secret data and what was
/// lost to damage.
fn after_bar(app: &App, r: &ReplayStatus, hint: &'static str) -> Vec<Span<'static>> {
    let t = &app.settings.theme;
    let mut spans = Vec::new();
    if let Some(m) = &r.marker {
        spans.push(Span::styled(format!("  ◆ {m}"), t.get(Role::Note)));
    } else if app.cursor.paused {
        spans.push(Span::styled(hint, t.get(Role::Muted)));
    }
    if r.secrets_shown {
        spans.push(Span::styled(
            "  ⚠ Secret data in this recording",
            t.get(Role::Alert),
        ));
    }
    if !r.damage.is_empty() {
        spans.push(Span::styled(
            format!("  ✖ {}", r.damage),
            t.get(Role::Alert),
        ));
    }
    spans
}

/// The timeline's bar, `bar_w` columns: done up to `frac` of it, the cursor's column,
/// and each column's marker tick in its kind's colour (`marks`, empty until the markers
/// are read; the cursor keeps its own column).
fn bar(app: &App, bar_w: usize, frac: f64, marks: &[Option<MarkerKind>]) -> Vec<Span<'static>> {
    let t = &app.settings.theme;
    let pos = ((bar_w as f64) * frac).round() as usize;
    let cursor = pos.min(bar_w.saturating_sub(1));
    // Runs of one style: the bar, and each tick in its kind's colour.
    let mut bar: Vec<Span<'static>> = Vec::new();
    let mut run = String::new();
    for i in 0..bar_w {
        let tick = marks.get(i).copied().flatten().filter(|_| i != cursor);
        let Some(kind) = tick else {
            run.push(if i == cursor {
                '●'
            } else if i < pos {
                '━'
            } else {
                '─'
            });
            continue;
        };
        if !run.is_empty() {
            bar.push(Span::styled(
                std::mem::take(&mut run),
                t.get(Role::SeriesHead),
            ));
        }
        bar.push(Span::styled("┃", t.get(tick_role(kind))));
    }
    if !run.is_empty() {
        bar.push(Span::styled(run, t.get(Role::SeriesHead)));
    }
    bar
}

/// The marker shown in each of the `width` columns of a timeline bar from `start` to
/// `end`: a marker falls in the column its time's fraction of the span rounds to (as the
/// cursor does), and of several in one column the most severe shows
/// ([`MarkerKind::severity`]; the earliest of equals), except that the user's own
/// bookmark shows over warnings and information: only something lost or broken
/// (severity 3) hides a bookmark's tick.
pub(crate) fn ticks(
    markers: &[Marker],
    start: SystemTime,
    end: SystemTime,
    width: usize,
) -> Vec<Option<MarkerKind>> {
    let total = end.duration_since(start).unwrap_or_default().as_secs_f64();
    place_ticks(markers, width, |m| {
        let done = m.at.duration_since(start).unwrap_or_default().as_secs_f64();
        if total > 0.0 {
            (done / total).clamp(0.0, 1.0)
        } else {
            1.0
        }
    })
}

/// Each of `width` columns' tick: a marker in the column its fraction of the bar (`frac`,
/// 0 to 1) rounds to, the most severe of several ([`tick_rank`]).
fn place_ticks(
    markers: &[Marker],
    width: usize,
    frac: impl Fn(&Marker) -> f64,
) -> Vec<Option<MarkerKind>> {
    let mut out: Vec<Option<MarkerKind>> = vec![None; width];
    if width == 0 {
        return out;
    }
    for m in markers {
        let col = (((width as f64) * frac(m)).round() as usize).min(width - 1);
        let slot = &mut out[col];
        if slot.is_none_or(|k| tick_rank(m.kind) > tick_rank(k)) {
            *slot = Some(m.kind);
        }
    }
    out
}

/// [`ticks`] over a db file's revisions: a marker falls in the column its revision's
/// fraction of `first..=head` rounds to (as the cursor does), the most severe of a column
/// showing.
pub(crate) fn revision_ticks(
    markers: &[Marker],
    first: Revision,
    head: Revision,
    width: usize,
) -> Vec<Option<MarkerKind>> {
    let span = (head - first) as f64;
    place_ticks(markers, width, |m| {
        if span > 0.0 {
            ((m.revision - first) as f64 / span).clamp(0.0, 1.0)
        } else {
            1.0
        }
    })
}

/// Which tick a column shows of several: the severity, with a bookmark between the
/// alerts and the warnings.
fn tick_rank(kind: MarkerKind) -> u8 {
    match kind {
        MarkerKind::Bookmark => 3,
        k if k.severity() >= 3 => 4,
        k => k.severity(),
    }
}

/// A tick's colour by its kind's severity: lost or broken in the alert colour, warnings in
/// the warning colour, bookmarks as notes, a restored connection as healthy, compactions
/// muted.
pub(crate) fn tick_role(kind: MarkerKind) -> Role {
    match kind.severity() {
        3 => Role::Alert,
        2 => Role::StatusWarn,
        1 => Role::Note,
        _ if kind == MarkerKind::ConnectionRestored => Role::StatusOk,
        _ => Role::Muted,
    }
}

#[cfg(test)]
mod tick_tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn mark(secs: u64, kind: MarkerKind) -> Marker {
        Marker {
            position: secs,
            at: UNIX_EPOCH + Duration::from_secs(secs),
            kind,
            revision: 1,
            label: String::new(),
        }
    }

    #[test]
    fn ticks_fall_in_their_column_and_the_most_severe_shows() {
        let (start, end) = (UNIX_EPOCH, UNIX_EPOCH + Duration::from_secs(100));
        let m = [
            mark(0, MarkerKind::Compaction),
            mark(50, MarkerKind::Compaction),
            mark(50, MarkerKind::Gap),
            mark(51, MarkerKind::Bookmark),
            mark(75, MarkerKind::Threshold),
            mark(100, MarkerKind::Bookmark),
            // Outside the span: at its ends.
            mark(200, MarkerKind::Member),
        ];
        let t = ticks(&m, start, end, 10);
        assert_eq!(t.len(), 10);
        assert_eq!(t[0], Some(MarkerKind::Compaction));
        assert_eq!(
            t[5],
            Some(MarkerKind::Gap),
            "the gap over the compaction and the bookmark"
        );
        // 75 % of 10 rounds to 8 (as the cursor's column does).
        assert_eq!(t[8], Some(MarkerKind::Threshold));
        assert_eq!(
            t[9],
            Some(MarkerKind::Bookmark),
            "the user's bookmark over a member change (a warning)"
        );
        assert_eq!(t.iter().filter(|k| k.is_some()).count(), 4);
        assert!(ticks(&m, start, end, 0).is_empty());
        // A bookmark and a threshold in one column: the bookmark; an alert hides it.
        let both = [
            mark(40, MarkerKind::Threshold),
            mark(40, MarkerKind::Bookmark),
        ];
        assert_eq!(ticks(&both, start, end, 10)[4], Some(MarkerKind::Bookmark));
        let lost = [
            mark(40, MarkerKind::Bookmark),
            mark(40, MarkerKind::ConnectionLost),
        ];
        assert_eq!(
            ticks(&lost, start, end, 10)[4],
            Some(MarkerKind::ConnectionLost)
        );
        assert_eq!(tick_role(MarkerKind::Gap), Role::Alert);
        assert_eq!(tick_role(MarkerKind::Threshold), Role::StatusWarn);
        assert_eq!(tick_role(MarkerKind::Bookmark), Role::Note);
        assert_eq!(tick_role(MarkerKind::Compaction), Role::Muted);
        assert_eq!(tick_role(MarkerKind::ConnectionRestored), Role::StatusOk);
    }
}
