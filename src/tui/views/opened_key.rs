//! An opened key: the storage facts of the shown version on top (key, resource,
//! revisions, lease, size, format and encryption, resourceVersion, schema, last writer),
//! its history beside them, and below the body: the decoded value with syntax colour
//! (YAML or JSON), or in diff mode the changes against the previous or marked version.
//! Errors and hints of the decode are shown above the body.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState, Wrap};
use ratatui::Frame;

use super::{fit, pane, selection, sp, wrap_text};
use crate::decode::{Rendered, SchemaUse};
use crate::derive::diff::LineKind;
use crate::model::{escape_bytes, KeyPath};
use crate::tui::app::App;
use crate::tui::state::OpenedKeyState;
use crate::tui::text::{bytes, clock, thousands, thousands_i};
use crate::tui::theme::Role;

/// Draws an opened key into `area`: metadata and history on top, the body below.
pub(crate) fn draw(app: &App, d: &OpenedKeyState, f: &mut Frame, area: Rect) {
    let hist_w = (area.width / 3).clamp(20.min(area.width), 56);
    let meta_w = area.width.saturating_sub(hist_w);
    let lines = meta_lines(app, d);
    let inner = meta_w.saturating_sub(2).max(1) as usize;
    let needed: usize = lines
        .iter()
        .map(|l| wrapped_rows(&line_text(l), inner))
        .sum::<usize>()
        + 2;
    let top_h = (needed.min(u16::MAX as usize) as u16)
        .min(area.height / 2)
        .max(3.min(area.height));
    let [top, body] = Layout::vertical([Constraint::Length(top_h), Constraint::Min(0)]).areas(area);
    let [meta, hist] =
        Layout::horizontal([Constraint::Min(0), Constraint::Length(hist_w)]).areas(top);
    f.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(pane(
            app,
            meta_title(app, d),
            false,
        )),
        meta,
    );
    draw_history(app, d, f, hist);
    draw_body(app, d, f, body);
}

fn line_text(l: &Line) -> String {
    l.spans.iter().map(|s| s.content.as_ref()).collect()
}

/// Rows `text` takes when word-wrapped at `width` columns (an estimate of ratatui's wrap).
fn wrapped_rows(text: &str, width: usize) -> usize {
    let mut rows = 1;
    let mut col = 0;
    for word in text.split_inclusive(' ') {
        let w = word.chars().count();
        if col + w.saturating_sub(usize::from(word.ends_with(' '))) > width && col > 0 {
            rows += 1;
            col = 0;
        }
        col += w;
        while col > width {
            rows += 1;
            col -= width;
        }
    }
    rows
}

/// Splits a styled line into rows of at most `width` characters; continuation rows start
/// with the line's indentation plus two spaces (unstyled), so wrapped YAML stays readable.
fn wrap_styled(
    text: &str,
    spans: &[(Role, std::ops::Range<usize>)],
    width: usize,
) -> Vec<Vec<(Role, String)>> {
    let indent = text.len() - text.trim_start_matches(' ').len();
    let cont = " ".repeat((indent + 2).min(width / 2));
    let mut rows: Vec<Vec<(Role, String)>> = vec![Vec::new()];
    let mut used = 0;
    for (role, range) in spans {
        let Some(piece) = text.get(range.clone()) else {
            continue;
        };
        let mut cur = String::new();
        for c in piece.chars() {
            if used >= width {
                if !cur.is_empty() {
                    rows.last_mut()
                        .expect("a row")
                        .push((*role, std::mem::take(&mut cur)));
                }
                rows.push(vec![(Role::Text, cont.clone())]);
                used = cont.chars().count();
            }
            cur.push(c);
            used += 1;
        }
        if !cur.is_empty() {
            rows.last_mut().expect("a row").push((*role, cur));
        }
    }
    rows
}

fn kv<'a>(app: &App, k: &'a str, v: String) -> Vec<Span<'a>> {
    vec![
        sp(app, k, Role::Muted),
        sp(app, v, Role::HeaderValue),
        Span::raw("  "),
    ]
}

fn meta_title<'a>(app: &App, d: &OpenedKeyState) -> Vec<Span<'a>> {
    let live = app.session.replica.get(&d.key).is_some();
    let n = d.history.len();
    let mut t = vec![
        sp(app, "Key", Role::PanelTitle),
        sp(
            app,
            format!(
                " {} · {n} version{} held",
                if live { "live" } else { "deleted" },
                if n == 1 { "" } else { "s" }
            ),
            Role::Muted,
        ),
    ];
    if d.index + 1 < n {
        t.push(sp(
            app,
            format!(" · showing older version {}/{n}", d.index + 1),
            Role::Filter,
        ));
    }
    t
}

/// `protobuf`, `aesgcm:key2, decrypted · payload protobuf`, `aescbc:key1, not decrypted`;
/// and the failure message when decryption failed.
fn format_text(r: &Rendered) -> (String, Option<String>) {
    let Some(x) = &r.decoded else {
        return (r.format.clone(), None);
    };
    match &x.encryption {
        Some(e) if e.decrypted => (
            format!(
                "{}, decrypted · payload {}",
                e.label,
                x.payload_format.label()
            ),
            None,
        ),
        Some(e) => (format!("{}, not decrypted", e.label), e.message.clone()),
        None => (x.format.describe(), None),
    }
}

fn meta_lines<'a>(app: &App, d: &'a OpenedKeyState) -> Vec<Line<'a>> {
    let path = KeyPath::parse(app.session.replica.prefix(), &d.key);
    let mut lines = vec![Line::from(vec![
        sp(app, "key ", Role::Muted),
        Span::raw(escape_bytes(&d.key).into_owned()),
    ])];
    let mut l = kv(app, "resource ", path.resource.to_string());
    if let Some(ns) = &path.namespace {
        l.extend(kv(app, "namespace ", ns.to_string()));
    }
    l.extend(kv(app, "name ", path.name.to_string()));
    lines.push(Line::from(l));
    let Some(v) = d.shown() else {
        lines.push(Line::from(sp(app, "no version held", Role::Muted)));
        return lines;
    };
    if v.value.is_none() {
        lines.push(Line::from(sp(
            app,
            format!(
                "deleted {}",
                d.deleted_when(&app.session.replica)
                    .unwrap_or_else(|| format!("at revision {}", thousands_i(v.mod_revision)))
            ),
            Role::Delete,
        )));
        return lines;
    }
    let mut l = kv(app, "create_revision ", thousands_i(v.create_revision));
    l.extend(kv(app, "mod_revision ", thousands_i(v.mod_revision)));
    l.extend(kv(app, "version ", v.version.to_string()));
    l.extend(kv(
        app,
        "lease ",
        if v.lease == 0 {
            "none".to_string()
        } else {
            format!("{:x}", v.lease)
        },
    ));
    lines.push(Line::from(l));
    let size = v.value.as_ref().map_or(0, |b| b.len() as u64);
    let mut l = kv(app, "resourceVersion ", format!("\"{}\"", v.mod_revision));
    l.insert(2, sp(app, " (= mod_revision)", Role::Muted));
    l.extend(kv(app, "size ", format!("{} bytes", thousands(size))));
    lines.push(Line::from(l));
    if let Some(r) = &d.rendered {
        let (format, failure) = format_text(r);
        let mut l = kv(app, "format ", format);
        if let Some(kind) = &r.summary.kind {
            let av = r.summary.api_version.clone().unwrap_or_default();
            l.extend(kv(app, "kind ", format!("{av} {kind}").trim().to_string()));
        }
        if let Some(x) = &r.decoded {
            match &x.schema {
                SchemaUse::Known { version, message } => {
                    l.extend(kv(
                        app,
                        "schema ",
                        format!("Kubernetes {version} ({message})"),
                    ));
                }
                SchemaUse::Unknown => {
                    l.push(sp(app, "schema unknown", Role::Note));
                    l.push(Span::raw("  "));
                }
                SchemaUse::NotApplicable => {}
            }
            if x.unknown_fields > 0 {
                l.push(sp(
                    app,
                    format!("{} unknown field(s)", x.unknown_fields),
                    Role::Note,
                ));
            }
        }
        lines.push(Line::from(l));
        if let Some(m) = failure {
            lines.push(Line::from(sp(app, m, Role::Note)));
        }
        if !d.writers.is_empty() {
            let who: Vec<String> = d.writers.iter().map(|w| w.describe()).collect();
            // Compared with the version before, the entries this write changed; else only
            // the newest entries, which may be older than this write.
            let label = match (d.writers_compared, d.writers_across_gap) {
                (true, true) => "written (in unseen writes) by ",
                (true, false) => "written by ",
                (false, _) => "newest entry ",
            };
            let mut l = vec![sp(app, label, Role::Muted)];
            l.push(sp(app, who.join("; "), Role::Text));
            lines.push(Line::from(l));
        } else if d.writers_compared && r.summary.manager.is_some() {
            lines.push(Line::from(sp(
                app,
                "written by: unknown — managedFields unchanged since the version before",
                Role::Note,
            )));
        } else if let Some(m) = &r.summary.manager {
            lines.push(Line::from(kv(app, "manager ", m.clone())));
        }
    }
    lines
}

fn draw_history(app: &App, d: &OpenedKeyState, f: &mut Frame, area: Rect) {
    let t = &app.settings.theme;
    let rows_h = area.height.saturating_sub(2) as usize;
    let n = d.history.len();
    // Newest first; keep the shown version visible.
    let shown_row = n.saturating_sub(1).saturating_sub(d.index);
    let scroll = if rows_h > 0 && shown_row >= rows_h {
        shown_row + 1 - rows_h
    } else {
        0
    };
    let off = app.settings.utc_offset;
    let timeless = app.revision_timeline().is_some();
    let rows: Vec<Row> = d
        .history
        .iter()
        .enumerate()
        .rev()
        .skip(scroll)
        .take(rows_h)
        .map(|(i, v)| {
            // A version that came in through the relist after a gap: what happened between
            // it and the version before was never seen.
            let gap = i
                .checked_sub(1)
                .and_then(|p| d.history.get(p))
                .and_then(|older| {
                    let g = app
                        .session
                        .replica
                        .gap_between(older.mod_revision, v.mod_revision)?;
                    Some((g.from, g.to, older.version))
                });
            let unseen = gap
                .map(|(from, to, was)| {
                    let now = match &v.value {
                        Some(_) => format!("v{}", v.version),
                        None => "deleted".into(),
                    };
                    format!(" · gap {from}–{to}: v{was} → {now}")
                })
                .unwrap_or_default();
            // A deletion inside a gap has no revision of its own that etcd told: its gap.
            let revision = match gap {
                Some((from, to, _)) if v.value.is_none() => format!("{from}–{to}"),
                _ => thousands_i(v.mod_revision),
            };
            // A revision that arrived through a list was written at or before the list.
            let mark = if app.session.replica.seen_live(v.mod_revision) {
                ""
            } else {
                "≤"
            };
            // Over etcd's db file every stamp is the file's modification time, not the
            // revision's: no time is shown (as in Events).
            let when = if timeless {
                "—".to_string()
            } else {
                app.session
                    .replica
                    .time_of(v.mod_revision)
                    .map(|t| format!("{mark}{}", clock(t, off)))
                    .unwrap_or_else(|| "--:--:--".into())
            };
            let star = if d.mark == Some(v.mod_revision) {
                "*"
            } else {
                ""
            };
            let (what, role) = match &v.value {
                Some(b) => (
                    format!("{star}v{} {}{unseen}", v.version, bytes(b.len() as u64)),
                    if unseen.is_empty() {
                        Role::Text
                    } else {
                        Role::Note
                    },
                ),
                None => (format!("{star}deleted{unseen}"), Role::Delete),
            };
            Row::new(vec![
                Cell::from(Line::from(revision).right_aligned()),
                Cell::from(Span::styled(what, t.get(role))),
                Cell::from(Span::styled(when, t.get(Role::Muted))),
            ])
        })
        .collect();
    let mut state = TableState::default();
    if n > 0 {
        state.select(Some(shown_row - scroll));
    }
    let mut note = if area.width >= 44 {
        format!(" {n} · ≤ seen by a list")
    } else {
        format!(" {n}")
    };
    if d.mark.is_some() && area.width >= 30 {
        note.push_str(" · * marked");
    }
    let title = vec![
        sp(app, "History", Role::PanelTitle),
        sp(app, note, Role::Muted),
    ];
    let widths: &[Constraint] = if area.width >= 34 {
        &[
            Constraint::Length(8),
            Constraint::Min(8),
            Constraint::Length(9),
        ]
    } else {
        &[Constraint::Length(8), Constraint::Min(8)]
    };
    let table = Table::new(rows, widths.iter().copied())
        .column_spacing(1)
        .row_highlight_style(selection(app, true))
        .block(pane(app, title, false));
    f.render_stateful_widget(table, area, &mut state);
}

fn diff_role(k: LineKind) -> Role {
    match k {
        LineKind::Header => Role::Text,
        LineKind::Added => Role::Put,
        LineKind::Removed => Role::Delete,
        LineKind::Changed => Role::DiffChanged,
        LineKind::Managed => Role::Muted,
    }
}

fn draw_body(app: &App, d: &OpenedKeyState, f: &mut Frame, area: Rect) {
    let rows_h = area.height.saturating_sub(2) as usize;
    app.drawn.opened_key.set(rows_h);
    let width = area.width.saturating_sub(2) as usize;
    let mut lines: Vec<Line> = Vec::new();
    let mut title = Vec::new();
    let total = d.body_len();
    let scroll_from = |room: usize| d.scroll.min(total.saturating_sub(room.max(1)));
    match (&d.diff, d.diff_on) {
        (Some(diff), true) => {
            title.push(sp(app, "Diff", Role::PanelTitle));
            if !diff.title.is_empty() {
                title.push(sp(app, format!(" {}", diff.title), Role::Muted));
            }
            let changes = diff
                .lines
                .iter()
                .filter(|(k, _)| *k != LineKind::Header)
                .count();
            // A deletion is not "0 changes".
            if !diff.title.contains("deleted") {
                title.push(sp(
                    app,
                    format!(" · {changes} change{}", if changes == 1 { "" } else { "s" }),
                    Role::Muted,
                ));
            }
            let scroll = scroll_from(rows_h);
            if scroll > 0 {
                title.push(sp(app, format!(" from line {}", scroll + 1), Role::Muted));
            }
            // Long values wrap (continuations indented); scrolling counts diff lines.
            'fill: for (k, text) in diff.lines.iter().skip(scroll) {
                for (i, part) in wrap_text(text, width.saturating_sub(2).max(8))
                    .into_iter()
                    .enumerate()
                {
                    if lines.len() >= rows_h {
                        break 'fill;
                    }
                    let part = if i == 0 { part } else { format!("  {part}") };
                    lines.push(Line::from(sp(app, part, diff_role(*k))));
                }
            }
        }
        _ => match &d.rendered {
            Some(r) => {
                title.push(sp(app, "Value", Role::PanelTitle));
                if let (Some(del), Some(last)) = (d.shown(), d.last_live_before_shown()) {
                    title.push(sp(
                        app,
                        format!(
                            " DELETED {}; the last live object, revision {}:",
                            d.deleted_when(&app.session.replica)
                                .unwrap_or_else(|| format!(
                                    "at revision {}",
                                    thousands_i(del.mod_revision)
                                )),
                            thousands_i(last.mod_revision)
                        ),
                        Role::Delete,
                    ));
                }
                title.push(sp(
                    app,
                    format!(
                        " {} · {} line{}",
                        match r.decoded.as_ref().and_then(|x| x.json.as_ref()) {
                            None => "not decoded",
                            Some(_) if app.json_output => "JSON",
                            Some(_) => "YAML",
                        },
                        thousands(r.lines.len() as u64),
                        if r.lines.len() == 1 { "" } else { "s" }
                    ),
                    Role::Muted,
                ));
                // Errors and hints first, wrapped: they explain what follows.
                for (prefix, text, role) in [
                    ("! ", r.error.as_deref(), Role::Note),
                    ("hint: ", r.hint.as_deref(), Role::Muted),
                ] {
                    if let Some(text) = text {
                        for l in wrap_text(&format!("{prefix}{text}"), width) {
                            lines.push(Line::from(sp(app, l, role)));
                        }
                    }
                }
                let room = rows_h.saturating_sub(lines.len());
                let scroll = scroll_from(room);
                if scroll > 0 {
                    title.push(sp(app, format!(" from line {}", scroll + 1), Role::Muted));
                }
                let t = &app.settings.theme;
                // Long lines (annotations, last-applied configurations) wrap onto indented
                // continuation rows; scrolling counts value lines.
                'rows: for (text, spans) in r.lines.iter().zip(&d.styled).skip(scroll) {
                    for row in wrap_styled(text, spans, width.max(8)) {
                        if lines.len() >= rows_h {
                            break 'rows;
                        }
                        lines.push(Line::from(
                            row.into_iter()
                                .map(|(role, s)| Span::styled(s, t.get(role)))
                                .collect::<Vec<_>>(),
                        ));
                    }
                }
            }
            None => {
                title.push(sp(app, "Value", Role::PanelTitle));
                let msg = match d.shown() {
                    Some(v) => format!(
                        "(deleted at revision {}: no value)",
                        thousands_i(v.mod_revision)
                    ),
                    None => "(no value held)".to_string(),
                };
                lines.push(Line::from(sp(app, fit(&msg, width), Role::Muted)));
            }
        },
    }
    f.render_widget(Paragraph::new(lines).block(pane(app, title, true)), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_helpers() {
        assert_eq!(wrapped_rows("abc def", 10), 1);
        assert_eq!(wrapped_rows("abc def ghi", 7), 2);
        assert_eq!(wrapped_rows("abcdefghijkl", 5), 3);
        assert_eq!(wrap_text("abc def ghi", 7), ["abc def", "ghi"]);
        assert_eq!(wrap_text("abcdefgh", 5), ["abcde", "fgh"]);
    }
}

#[cfg(test)]
mod wrap_tests {
    use super::*;

    #[test]
    fn long_styled_lines_wrap_with_indented_continuations() {
        let text = "  key: abcdefghijklmnopqrstuvwxyz";
        let spans = vec![
            (Role::Text, 0..2),
            (Role::SyntaxKey, 2..5),
            (Role::Text, 5..7),
            (Role::SyntaxString, 7..text.len()),
        ];
        let rows = wrap_styled(text, &spans, 12);
        let flat: Vec<String> = rows
            .iter()
            .map(|r| r.iter().map(|(_, s)| s.as_str()).collect())
            .collect();
        assert_eq!(
            flat,
            vec!["  key: abcde", "    fghijklm", "    nopqrstu", "    vwxyz"]
        );
        assert!(flat.iter().all(|r| r.chars().count() <= 12));
        // Roles survive the split: the string part stays a string.
        assert_eq!(rows[1][1].0, Role::SyntaxString);
        // Short lines are one row.
        assert_eq!(wrap_styled("a: b", &[(Role::Text, 0..4)], 12).len(), 1);
    }
}
