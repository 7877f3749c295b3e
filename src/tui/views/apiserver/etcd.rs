//! etcd's health beside the apiserver, and the object counts per resource.
//!
//! Quota use is the physical file size against the quota, because that is what etcd's space
//! alarm compares; "not in use" is the share of the file a defrag would give back, and 0 %
//! (right after a defrag, or on a young etcd) means nothing to reclaim, not a problem. The apiserver's object count per resource
//! stands next to the replica's own count; disagreements are flagged with the reason the
//! derived panels give, and a count the apiserver could not read (its −1) is said to be unavailable,
//! never shown as −1 or 0.

use ratatui::text::{Line, Span};

use super::body::{flow, wrap, Body, Col, Table};
use super::cells::{self, Cell};
use super::not_exposed_note;
use crate::derive::apiserver::{ApiserverPanels, EtcdHealth, Reading};
use crate::tui::app::App;
use crate::tui::state::Section;
use crate::tui::text::{thousands, thousands_i};
use crate::tui::theme::Role;
use crate::tui::views::sp;

fn health_lines(
    app: &App,
    h: &EtcdHealth,
    apiserver_configured: bool,
    w: usize,
) -> Vec<Line<'static>> {
    let val = |s: String| sp(app, s, Role::HeaderValue);
    let txt = |s: &'static str| sp(app, s, Role::Text);
    let na = || sp(app, "n/a", Role::Muted);
    let mut out = Vec::new();

    // Size against quota.
    let mut segs: Vec<Vec<Span<'static>>> = Vec::new();
    segs.push(vec![
        txt("db size "),
        h.db_size_bytes.map_or_else(na, |b| val(cells::bytes(b))),
    ]);
    let mut quota = vec![
        txt("quota "),
        h.quota_bytes.map_or_else(na, |b| val(cells::bytes(b))),
    ];
    if let Some(p) = h.quota_used_percent {
        let role = if p >= 80.0 {
            Role::StatusError
        } else if p >= 50.0 {
            Role::StatusWarn
        } else {
            Role::HeaderValue
        };
        quota.push(txt(", "));
        quota.push(sp(app, format!("{} used", cells::pct(p)), role));
    }
    segs.push(quota);
    out.extend(flow(app, std::mem::take(&mut segs), w));

    // In use vs allocated.
    segs.push(vec![
        txt("in use "),
        h.db_in_use_bytes.map_or_else(na, |b| val(cells::bytes(b))),
    ]);
    if h.just_defragmented {
        segs.push(vec![sp(
            app,
            "0 % not in use — nothing to reclaim",
            Role::StatusOk,
        )]);
    } else {
        match h.not_in_use_percent {
            Some(p) => {
                segs.push(vec![txt("not in use "), val(cells::pct(p))]);
                if let Some(r) = h.reclaimable_bytes {
                    segs.push(vec![val(cells::bytes(r)), txt(" reclaimable by defrag")]);
                }
            }
            None => segs.push(vec![txt("not in use "), na()]),
        }
    }

    out.extend(flow(app, std::mem::take(&mut segs), w));

    // Cluster.
    match h.has_leader {
        Some(true) => segs.push(vec![sp(app, "leader ✓", Role::StatusOk)]),
        Some(false) => segs.push(vec![sp(app, "NO LEADER", Role::StatusError)]),
        None => {}
    }
    let counter = |label: &'static str, v: Option<f64>, bad: bool| -> Option<Vec<Span<'static>>> {
        let v = v?;
        let role = if bad && v > 0.0 {
            Role::StatusWarn
        } else {
            Role::HeaderValue
        };
        Some(vec![txt(label), sp(app, cells::count(v), role)])
    };
    segs.extend(counter("leader changes ", h.leader_changes, false));
    segs.extend(counter("slow watchers ", h.slow_watchers, true));
    segs.extend(counter("failed proposals ", h.proposals_failed, true));

    out.extend(flow(app, std::mem::take(&mut segs), w));

    // Revisions and the apiserver's view of the size.
    if let Some(r) = h.revision {
        segs.push(vec![txt("rev "), val(thousands_i(r))]);
    }
    segs.push(match h.compact_revision {
        Some(c) => vec![txt("compacted "), val(thousands_i(c))],
        None => vec![sp(app, "never compacted", Role::Muted)],
    });
    segs.push(match &h.apiserver_db_size_bytes {
        Reading::Value(b) => vec![txt("apiserver sees "), val(cells::bytes(*b))],
        // Without the apiserver's metrics nothing is known of its version.
        Reading::NotExposed if !apiserver_configured => vec![sp(
            app,
            "apiserver's db size: no apiserver metrics",
            Role::Muted,
        )],
        Reading::NotExposed => vec![sp(
            app,
            format!("apiserver's db size: {}", cells::NOT_EXPOSED_TEXT),
            Role::Muted,
        )],
        Reading::Unavailable => vec![sp(
            app,
            format!("apiserver's db size: {}", cells::UNAVAILABLE_TEXT),
            Role::Note,
        )],
        Reading::Pending => vec![sp(app, "apiserver's db size: …", Role::Muted)],
    });
    out.extend(flow(app, segs, w));
    out
}

/// etcd's alarms from its Status answer: each raised one in red with what to do, or
/// "no alarm" once a Status came.
fn alarm_lines(app: &App, w: usize) -> Vec<Line<'static>> {
    let Some((_, s)) = app.session.etcd.etcd_status() else {
        return Vec::new();
    };
    let alarms = s.alarms();
    if alarms.is_empty() {
        return vec![Line::from(sp(app, "no etcd alarm", Role::StatusOk))];
    }
    let text = crate::tui::views::header::alarm_advice(app, false).unwrap_or_default();
    wrap(app, text.trim(), Role::StatusError, w)
}

/// Every member of the cluster as last polled: name (marked when regscope reads from it),
/// endpoint, role, raft term and index, db size, and whether it answered (its error
/// wrapped below when not). Nothing before the first poll.
fn member_lines(app: &App, w: usize) -> Vec<Line<'static>> {
    let Some((_, members)) = app.session.etcd.members() else {
        return Vec::new();
    };
    let reading = app.session.etcd.server().map(|(e, _)| e.to_string());
    let leader = members
        .iter()
        .filter_map(|m| m.status.as_ref())
        .map(|s| s.leader)
        .find(|l| *l != 0);
    let cols = vec![
        Col::name("member", 8),
        Col::text("endpoint", 40, 2),
        Col::text("role", 8, 1),
        Col::num("term", 8, 4),
        Col::num("raft index", 12, 3),
        Col::num("db size", 10, 3),
        Col::text("health", 12, 1),
    ];
    let cells: Vec<Vec<Cell>> = members
        .iter()
        .map(|m| {
            let read = reading.as_deref() == Some(m.endpoint.as_str());
            let name = if m.name.is_empty() {
                format!("{:x}", m.id)
            } else {
                m.name.clone()
            };
            // As the members that answer name the leader; unknown for one that did not.
            let role = if m.is_learner {
                "learner"
            } else if leader == Some(m.id) {
                "leader"
            } else if leader.is_some() && m.status.is_some() {
                "follower"
            } else {
                "—"
            };
            let st = m.status.as_ref();
            vec![
                (
                    if read {
                        format!("▸ {name}")
                    } else {
                        format!("  {name}")
                    },
                    if read { Role::HeaderValue } else { Role::Text },
                ),
                (m.endpoint.clone(), Role::Text),
                (role.to_string(), Role::Text),
                cells::opt(st.map(|s| s.raft_term), |t| (thousands(t), Role::Text)),
                cells::opt(st.map(|s| s.raft_index), |i| (thousands(i), Role::Text)),
                cells::opt(st.map(|s| s.db_size), |b| {
                    (cells::bytes(b.max(0) as f64), Role::Text)
                }),
                match (st, &m.error) {
                    (Some(s), _) if !s.errors.is_empty() => ("alarm".into(), Role::StatusError),
                    (Some(_), _) => ("ok".into(), Role::StatusOk),
                    (None, _) => ("no answer".into(), Role::StatusError),
                },
            ]
        })
        .collect();
    let table = Table::fit(cols, &cells, w);
    let mut out = vec![table.header(app)];
    for (m, c) in members.iter().zip(cells) {
        out.push(table.row(app, c));
        if let (None, Some(e)) = (&m.status, &m.error) {
            out.extend(wrap(app, &format!("    {e}"), Role::StatusError, w));
        }
    }
    if reading.is_some() {
        out.push(Line::from(sp(
            app,
            "▸ the member regscope reads from",
            Role::Muted,
        )));
    }
    out
}

pub(super) fn body(app: &App, v: &ApiserverPanels, w: usize) -> (Vec<Span<'static>>, Body) {
    let mut alarms = alarm_lines(app, w);
    alarms.extend(member_lines(app, w));
    // Where each figure comes from, and how old it is: etcd's /metrics as last scraped
    // (db size, quota, rev, compacted), the members' Status answers as last polled, and
    // the header's live replica beside them.
    let now = app.session.now();
    let age = |t: std::time::SystemTime| {
        let secs = now.duration_since(t).map_or(0, |d| d.as_secs());
        format!(
            "{} ({secs} s old)",
            crate::tui::text::clock(t, app.settings.utc_offset)
        )
    };
    let mut sources = Vec::new();
    if let Some(t) = v.etcd.last_good {
        sources.push(format!(
            "figures below: etcd's /metrics as scraped at {}",
            age(t)
        ));
    }
    if let Some((t, _)) = app.session.etcd.members() {
        sources.push(format!(
            "members: their Status answers as polled at {}",
            age(*t)
        ));
    }
    if !sources.is_empty() {
        sources.push("the header's rev and keys: the replica, live".into());
        alarms.extend(wrap(app, &sources.join("; "), Role::Muted, w));
    }
    let mut top = match &v.etcd_health {
        Some(h) => health_lines(app, h, v.apiserver.configured, w),
        None => vec![Line::from(sp(
            app,
            if v.etcd.configured {
                "no etcd health metrics yet"
            } else {
                "etcd metrics not configured (see above)"
            },
            Role::Muted,
        ))],
    };
    top.splice(0..0, alarms);

    let cols = vec![
        Col::name("objects", 12),
        Col::num("apiserver", 10, 0),
        Col::num("replica", 10, 0),
    ];
    let cells: Vec<Vec<Cell>> = v
        .objects
        .iter()
        .map(|o| {
            let flagged = o.flag.is_some();
            let res_role = if flagged { Role::Note } else { Role::Text };
            vec![
                (
                    format!(
                        "{}{}",
                        if flagged { "≠ " } else { "" },
                        cells::resource(&o.group, &o.resource)
                    ),
                    res_role,
                ),
                match &o.apiserver {
                    Reading::Value(n) => (thousands_i(*n), res_role),
                    Reading::NotExposed if !v.apiserver.configured => {
                        (cells::NONE.into(), Role::Muted)
                    }
                    Reading::NotExposed => (cells::NOT_EXPOSED.into(), Role::Muted),
                    Reading::Unavailable => ("n/a".into(), Role::Note),
                    Reading::Pending => (cells::PENDING.into(), Role::Muted),
                },
                cells::opt(o.replica, |n| (thousands(n), Role::Text)),
            ]
        })
        .collect();
    let table = Table::fit(cols, &cells, w);
    let legend = table.legends(app, &cells);
    let rows: Vec<Vec<Line<'static>>> = v
        .objects
        .iter()
        .zip(cells)
        .map(|(o, c)| {
            let mut lines = vec![table.row(app, c)];
            if o.apiserver == Reading::Unavailable {
                lines.extend(wrap(
                    app,
                    &format!("  count {}", cells::UNAVAILABLE_TEXT),
                    Role::Note,
                    w,
                ));
            }
            if let Some(flag) = &o.flag {
                lines.extend(wrap(app, &format!("  ≠ {flag}"), Role::Note, w));
            }
            lines
        })
        .collect();
    let flagged = v.objects.iter().filter(|o| o.flag.is_some()).count();
    if flagged > 0 {
        top.push(Line::from(sp(
            app,
            format!(
                "{flagged} of {} object counts disagree with the replica",
                v.objects.len()
            ),
            Role::StatusWarn,
        )));
    }

    let mut legend = legend;
    legend.extend(not_exposed_note(app, v, Section::Etcd, w));
    let mut title = Vec::new();
    if let Some(ver) = &v.etcd.version {
        title.push(sp(app, format!(" etcd {ver}"), Role::Muted));
    }
    let body = Body {
        top,
        header: Some(table.header(app)),
        rows,
        empty: Some(Line::from(sp(
            app,
            "no object counts from the apiserver",
            Role::Muted,
        ))),
        legend,
        notes: Vec::new(),
        ..Default::default()
    };
    (title, body)
}
