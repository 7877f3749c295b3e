//! The help screen, generated from the keymap: for each mode, every bound action with its
//! keys and description; configuration warnings first when there are any.

use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;

use super::{pane, sp, wrap_text};
use crate::tui::app::App;
use crate::tui::keymap::Mode;
use crate::tui::theme::Role;

/// The help text, one entry per line, each wrapped into `width` columns: descriptions
/// continue under their first word.
fn lines(app: &App, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    if !app.settings.warnings.is_empty() {
        out.push(Line::from(sp(
            app,
            "Warnings (configuration, recording, replay)",
            Role::TableHeader,
        )));
        for w in &app.settings.warnings {
            for l in wrap_text(w, width.saturating_sub(2)) {
                out.push(Line::from(sp(app, format!("  {l}"), Role::Warning)));
            }
        }
        out.push(Line::from(""));
    }
    // What the screen the help was opened on shows: every column, mark and abbreviation.
    let (screen, terms) = glossary(app);
    out.push(Line::from(sp(
        app,
        format!("[{screen}] what its columns and marks mean"),
        Role::TableHeader,
    )));
    let zone = format!(
        "every clock time on screen is in {} (header, right); --utc or --time-zone change it",
        app.settings.zone_label()
    );
    for (term, text) in std::iter::once(("times", zone.as_str())).chain(terms.iter().copied()) {
        // A long term, or no room beside it: the explanation goes under it, indented.
        let beside = term.chars().count() <= 16 && width >= 19 + 12;
        let indent = if beside { 19 } else { 4 };
        if !beside {
            for l in wrap_text(term, width.saturating_sub(2)) {
                out.push(Line::from(sp(app, format!("  {l}"), Role::HintLabel)));
            }
        }
        let room = width.saturating_sub(indent).max(8);
        for (i, l) in wrap_text(text, room).into_iter().enumerate() {
            let first = if i == 0 && beside {
                sp(app, format!("  {term:<16} "), Role::HintLabel)
            } else {
                Span::raw(" ".repeat(indent))
            };
            out.push(Line::from(vec![first, sp(app, l, Role::Text)]));
        }
    }
    out.push(Line::from(""));
    let name_w = Mode::ALL
        .iter()
        .flat_map(|m| app.settings.keymap.bindings(*m))
        .map(|b| b.action.name().len())
        .max()
        .unwrap_or(0)
        .max(15);
    for mode in Mode::ALL {
        let bindings = app.settings.keymap.bindings(*mode);
        if bindings.is_empty() {
            continue;
        }
        let title = format!("[{}]{}", mode.name(), mode_note(*mode));
        for l in wrap_text(&title, width) {
            out.push(Line::from(sp(app, l, Role::TableHeader)));
        }
        for b in bindings {
            let keys = b
                .keys
                .iter()
                .map(|k| k.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            let head = vec![
                sp(app, format!("  {keys:<16} "), Role::HintLabel),
                sp(app, format!("{:<name_w$} ", b.action.name()), Role::Filter),
            ];
            let indent: usize = head.iter().map(|s| s.width()).sum();
            // Too narrow for a column of descriptions: one that does not fit beside its
            // name goes under it.
            let desc = b.action.description();
            let room = width.saturating_sub(indent);
            let (indent, mut first) = if room >= 12 || desc.chars().count() <= room {
                (indent, head)
            } else {
                out.push(Line::from(head));
                (4, vec![Span::raw("    ")])
            };
            for l in wrap_text(desc, width.saturating_sub(indent)) {
                first.push(sp(app, l, Role::Text));
                out.push(Line::from(std::mem::replace(
                    &mut first,
                    vec![Span::raw(" ".repeat(indent))],
                )));
            }
        }
    }
    out
}

/// The screen's name and its terms: (column or mark, what it means).
fn glossary(app: &App) -> (&'static str, &'static [(&'static str, &'static str)]) {
    use crate::tui::app::Panel;
    match app.panel {
        Panel::Growth => ("growth", &[
            ("Revisions/s", "revisions etcd added per second, one bar a second: in the last second, the mean over the last 10 s, and the most in one second (a full bar); the header's ev/s counts watch events (PUT and DELETE under the prefix) over 10 s, which is not the same as revisions"),
            ("Head revision", "etcd's head revision over the same seconds; a break in the line is a replaced etcd (its revision went back)"),
            ("put/s del/s", "writes and deletes per second of the resource over the window named in the table's title (10 s, or the seconds seen when younger)"),
            ("top writer", "the resource's busiest writer by managedFields over the window"),
            ("writer / how", "the managedFields entry that a write changed: field manager, and Update or Apply with its subresource (/status)"),
            ("w/s", "writes (puts and deletes) per second of that writer"),
            ("(unknown: same managedFields)", "a write that left every managedFields entry as it was (graceful deletion, a finalizer removed, a write changing no owned field): nobody managedFields names made it"),
            ("(deleter unknown)", "deletes: kube-apiserver records no deleter"),
            ("Compactions & gaps", "compactions seen (through compact_rev_key or etcd) and gaps: revisions the watch never delivered, closed by a relist"),
        ]),
        Panel::Events => ("events", &[
            ("time revision op", "when regscope saw the write, its mod_revision, PUT or DELETE"),
            ("unseen CREATE/CHANGE/DELETE", "rows a relist showed after a gap (etcd compacted past the watch's resume point): the key's state before the gap against after; a DELETE's revision column gives the gap (12–16), its row carries the last copy held"),
            ("kind size", "the stored object's kind and its value's size in bytes"),
            ("writer", "the managedFields entry the write changed; (unknown: same managedFields) when it changed none; (deleter unknown) for deletes"),
            ("filter", "every word must match (AND): key, resource, op, writer, `unseen`"),
            ("RESET", "etcd was replaced under regscope (a new data dir, a restore): the rows below it are the old etcd's, above it the new one's"),
            ("Notes", "resyncs, reconnections, replaced etcds, watch anomalies, newest first"),
        ]),
        Panel::Keys => ("keys", &[
            ("keys bytes", "live keys of the resource and their values' bytes"),
            ("(no resource)", "keys under the prefix with no resource segment: the prefix itself with its slash (/registry/), /registry//x"),
            ("v7 1.2 KiB", "a version of the key (etcd's version counter) and its value's size"),
            ("≤ time", "a version that came in through a list: written at or before that time"),
            ("gap 12–16: v7 → v10", "the versions between came and went inside a gap (revisions the watch never delivered); only the relist's result is held"),
            ("DELETED", "a deletion: the value shown is the last live object before it; one that came through a gap says only within which revisions"),
            ("written by", "the managedFields entries the shown version's write changed, against the version before; unknown when it changed none; `newest entry` (the newest managedFields entries, which may be older than this write) when the version before is not held"),
        ]),
        Panel::Apiserver => ("apiserver", &[
            ("risk", "ok; warn: lag past half the compaction window, events behind past half the watch cache's ring, or 410s seen; HIGH: at or past either (a resume gets 410 Gone); meas: no measurement yet"),
            ("cache lag", "etcd's head minus the watch cache's resource version, in revisions"),
            ("inf lag / inf s", "how far regscope's own informer is behind etcd's head, in revisions and seconds"),
            ("%win", "the larger lag as a share of the compaction window (head − compacted revision)"),
            ("410s relists", "410 Gone answers the informer received, and the relists after its first list"),
            ("capacity cap ±", "events the watch cache's ring holds, and how often it grew / shrank"),
            ("history", "capacity ÷ event rate: about how many seconds back the ring reaches (an estimate; `all` before the ring first fills)"),
            ("recv/s sent/s", "events per second the watch cache received from etcd and dispatched to watchers"),
            ("term inits", "watchers terminated as too slow; the cache's re-initialisations (relists from etcd)"),
            ("p50 p90 p99", "latency quantiles over the last scrape interval (≥ means above the histogram's top bucket)"),
            ("db size", "etcd's database file against its quota; in use is what a defragmentation keeps"),
        ]),
    }
}

fn mode_note(mode: Mode) -> &'static str {
    match mode {
        Mode::Global => " everywhere unless a mode binds the key",
        Mode::Growth => " revision growth, top resources and who writes them (managedFields)",
        Mode::Events => " event stream (the filter matches key, resource, PUT/DELETE and writer)",
        Mode::Keys => " key browser",
        Mode::OpenedKey => " an opened key",
        Mode::Encryption => " encryption at rest per resource",
        Mode::Apiserver => " apiserver panel: ↑/↓ scroll the focused section",
        Mode::Help => " this screen",
        Mode::Filter => " typing a filter, a seek, or in the command palette (:)",
    }
}

/// Draws help over `area`, scrolled by `scroll` lines.
pub(crate) fn draw(app: &App, scroll: usize, f: &mut Frame, area: Rect) {
    let w = area.width.saturating_sub(4).min(96);
    let h = area.height.saturating_sub(2).max(3).min(area.height);
    let [col] = Layout::horizontal([Constraint::Length(w)])
        .flex(Flex::Center)
        .areas(area);
    let [rect] = Layout::vertical([Constraint::Length(h)])
        .flex(Flex::Center)
        .areas(col);
    let all = lines(app, rect.width.saturating_sub(2) as usize);
    let inner_h = rect.height.saturating_sub(2) as usize;
    let max_scroll = all.len().saturating_sub(inner_h);
    app.drawn.help.record(inner_h, max_scroll);
    let scroll = scroll.min(max_scroll);
    let title = vec![
        sp(app, "Help", Role::PanelTitle),
        sp(
            app,
            format!(
                " — this screen's columns, then keys from the keymap ({} lines)",
                all.len()
            ),
            Role::Muted,
        ),
    ];
    f.render_widget(Clear, rect);
    f.render_widget(
        Paragraph::new(all)
            .scroll((scroll.min(u16::MAX as usize) as u16, 0))
            .block(pane(app, title, true)),
        rect,
    );
}
