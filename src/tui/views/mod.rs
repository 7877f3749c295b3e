//! Drawing: pure functions from `&App` to a ratatui frame.
//!
//! Layout, top to bottom: the header (two rows), the timeline row in replay or while
//! paused, an alert row when the data is stale or the source ended, a warning row when configuration warnings exist, the selected panel, and
//! the hint bar on the last row. Help is drawn over the panel. Nothing here changes the app
//! except the sizes and places recorded for paging and clicks ([`crate::tui::state::drawn`]).

mod apiserver;
mod encryption;
mod events;
mod footer;
mod growth;
mod header;
mod help;
mod keys;
mod opened_key;
mod other_clusters;
mod palette;
mod writers;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;

use super::app::{App, Panel};
use super::theme::Role;

/// Draws the whole console.
/// The smallest terminal the panels have a layout for (each is snapshot-tested there);
/// below it the screen says so instead of drawing cut panels.
pub const MIN_COLS: u16 = 40;
pub const MIN_ROWS: u16 = 12;

/// Whether `area` is below the smallest layout: the too-small screen is drawn instead.
pub fn too_small(area: Rect) -> bool {
    area.width < MIN_COLS || area.height < MIN_ROWS
}

/// "Terminal too small", centred and wrapped into whatever room there is. Only quitting
/// keys act (`q`, ctrl-c; see `App::too_small`), and the next resize redraws the panels.
fn draw_too_small(app: &App, f: &mut Frame, area: Rect) {
    debug_assert!(too_small(area));
    let text = format!(
        "terminal too small: {}x{}; regscope needs at least {MIN_COLS}x{MIN_ROWS} \
         (larger terminals show more of each panel). Enlarge it, or press q to quit.",
        area.width, area.height
    );
    let p = Paragraph::new(sp(app, text, Role::Alert))
        .wrap(ratatui::widgets::Wrap { trim: true })
        .alignment(ratatui::layout::Alignment::Center);
    f.render_widget(p, area);
}

pub fn draw(app: &App, f: &mut Frame) {
    if app.debug_panic {
        panic!("REGSCOPE_DEBUG_PANIC=1: deliberate panic while drawing (terminal restore test)");
    }
    let area = f.area();
    if too_small(area) {
        draw_too_small(app, f, area);
        return;
    }
    let alert = header::alert(app, usize::from(area.width));
    let timeline = header::timeline(app, area.width);
    let warn = !app.settings.warnings.is_empty() || app.current_notice().is_some();
    let [head, timeline_row, alert_row, warn_row, main, foot] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Length(u16::from(timeline.is_some())),
        Constraint::Length(u16::from(alert.is_some())),
        Constraint::Length(u16::from(warn)),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    header::draw(app, f, head);
    if let Some(line) = timeline {
        f.render_widget(Paragraph::new(line), timeline_row);
    }
    if let Some(line) = alert {
        f.render_widget(Paragraph::new(line), alert_row);
    }
    if warn {
        draw_warning(app, f, warn_row);
    }
    match app.panel {
        Panel::Growth => growth::draw(app, f, main),
        Panel::Events => events::draw(app, f, main),
        Panel::Keys => match &app.opened_key {
            Some(d) => opened_key::draw(app, d, f, main),
            None if app.encryption.is_open() => encryption::draw(app, f, main),
            None => keys::draw(app, f, main),
        },
        Panel::Apiserver => apiserver::draw(app, f, main),
    }
    if let Some(scroll) = app.help {
        help::draw(app, scroll, f, main);
    }
    if app.palette_open() {
        palette::draw(app, app.input_text().unwrap_or(""), f, main);
    }
    footer::draw(app, f, foot);
}

fn draw_warning(app: &App, f: &mut Frame, area: Rect) {
    if let Some(n) = app.current_notice() {
        let line = Line::from(vec![Span::raw(" ● "), Span::raw(n.to_string())])
            .style(app.settings.theme.get(Role::Note));
        f.render_widget(Paragraph::new(line), area);
        return;
    }
    let w = &app.settings.warnings;
    let more = if w.len() > 1 {
        format!("  (+{} more; ? shows all)", w.len() - 1)
    } else {
        "  (? shows it again)".to_string()
    };
    let line = Line::from(vec![
        Span::raw(" ⚠ "),
        // The newest message: a recording just saved matters more than a keymap note.
        Span::raw(w.last().cloned().unwrap_or_default()),
        Span::raw(more),
    ])
    .style(app.settings.theme.get(Role::Warning));
    f.render_widget(
        Paragraph::new(line).style(app.settings.theme.get(Role::Warning)),
        area,
    );
}

/// A bordered pane with a title; marked stale when the connection is broken or etcd has not
/// answered within the liveness window.
pub(crate) fn pane<'a>(app: &App, title: Vec<Span<'a>>, focused: bool) -> Block<'a> {
    let t = &app.settings.theme;
    let border = if app.stale() {
        t.get(Role::BorderStale)
    } else if focused {
        t.get(Role::BorderFocused)
    } else {
        t.get(Role::BorderUnfocused)
    };
    let mut spans = vec![Span::raw(" ")];
    if app.stale() {
        spans.push(Span::styled("STALE", t.get(Role::StatusError)));
        spans.push(Span::raw(" "));
    }
    spans.extend(title);
    spans.push(Span::raw(" "));
    Block::bordered()
        .border_style(border)
        .title(Line::from(spans).style(t.get(Role::PanelTitle)))
}

/// A span in a style role.
pub(crate) fn sp<'a>(
    app: &App,
    text: impl Into<std::borrow::Cow<'a, str>>,
    role: Role,
) -> Span<'a> {
    Span::styled(text.into(), app.settings.theme.get(role))
}

/// A table's header row: the columns in `numbers` right-aligned over their numbers.
pub(crate) fn header_row<'a>(
    app: &App,
    names: Vec<&'a str>,
    numbers: std::ops::Range<usize>,
) -> ratatui::widgets::Row<'a> {
    use ratatui::widgets::{Cell, Row};
    Row::new(
        names
            .into_iter()
            .enumerate()
            .map(|(i, h)| {
                let l = Line::from(h);
                Cell::from(if numbers.contains(&i) {
                    l.right_aligned()
                } else {
                    l
                })
            })
            .collect::<Vec<_>>(),
    )
    .style(app.settings.theme.get(Role::TableHeader))
}

/// The style for the selected row: full selection when the list has the focus.
pub(crate) fn selection(app: &App, focused: bool) -> Style {
    if focused {
        app.settings.theme.get(Role::Selection)
    } else {
        app.settings.theme.get(Role::HintKey)
    }
}

/// A rate window of `max` seconds, or the seconds observed so far when fewer (so that a
/// young session's rates are not divided by seconds it never saw, and each panel's title
/// names the seconds its rates cover).
pub(crate) fn observed_window(app: &App, max: u64) -> u64 {
    let now = app.now_second();
    app.session
        .replica
        .growth()
        .next()
        .map_or(max, |g| now.saturating_sub(g.second))
        .clamp(1, max)
}

/// Text truncated to `w` columns with an ellipsis (for values built by hand).
pub(crate) fn fit(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        s.to_string()
    } else if w == 0 {
        String::new()
    } else {
        let mut out: String = s.chars().take(w - 1).collect();
        out.push('…');
        out
    }
}

/// Words wrapped into lines of at most `width` columns (long words are cut).
pub(crate) fn wrap_text(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut out = vec![String::new()];
    for word in text.split(' ') {
        let cur = out.last_mut().expect("one line");
        let need = cur.chars().count() + usize::from(!cur.is_empty()) + word.chars().count();
        if need > width && !cur.is_empty() {
            out.push(String::new());
        }
        let cur = out.last_mut().expect("one line");
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
        while let Some(cur) = out.last_mut().filter(|c| c.chars().count() > width) {
            let rest: String = cur.chars().skip(width).collect();
            *cur = cur.chars().take(width).collect();
            out.push(rest);
        }
    }
    out
}
