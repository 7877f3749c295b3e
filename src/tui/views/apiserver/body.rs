//! What a section draws inside its border, as lines: summary lines on top, a table of rows
//! (each one or more lines) that scrolls, and notes below when there is room. Plus the
//! column fitting that keeps numbers whole on narrow panes: columns are sized to their
//! content and dropped by priority, never cut.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::cells::Cell;
use crate::tui::app::App;
use crate::tui::theme::Role;
use crate::tui::views::{fit, sp};

/// The content of one section at one width.
#[derive(Default)]
pub(super) struct Body {
    /// Shown first, always (summaries and verdicts).
    pub top: Vec<Line<'static>>,
    /// Column headings above the rows.
    pub header: Option<Line<'static>>,
    /// The rows, one or more lines each; these scroll.
    pub rows: Vec<Vec<Line<'static>>>,
    /// Shown instead of the rows when there are none.
    pub empty: Option<Line<'static>>,
    /// What placeholders and missing columns mean, below the rows while two row lines
    /// still fit.
    pub legend: Vec<Line<'static>>,
    /// Explanations, below the legend only when every row fits too.
    pub notes: Vec<Line<'static>>,
    /// Rows that head the rows after them (a second table's column headings), up to the
    /// next such row: the row filter keeps one when it keeps a row it heads.
    pub subheaders: Vec<usize>,
}

/// How a body's lines share `h` rows of screen.
#[derive(Clone, Copy, Debug)]
pub(super) struct Placed {
    top: usize,
    header: bool,
    legend: usize,
    notes: usize,
    /// Lines left for the rows.
    pub rows_h: usize,
}

impl Body {
    /// Shares `h` lines: the top first, the header when two lines remain for it and a row,
    /// the legend when two row lines (or all rows) still fit, the notes when all rows fit,
    /// the rest for rows.
    pub fn place(&self, h: usize) -> Placed {
        let top = self.top.len().min(h);
        let mut left = h - top;
        let header = self.header.is_some() && !self.rows.is_empty() && left >= 2;
        if header {
            left -= 1;
        }
        let row_lines: usize = self.rows.iter().map(Vec::len).sum::<usize>().max(1);
        let legend = if left >= self.legend.len() + row_lines.min(2) {
            self.legend.len()
        } else {
            0
        };
        left -= legend;
        let notes = if !self.rows.is_empty() && left >= self.notes.len() + row_lines {
            self.notes.len()
        } else {
            0
        };
        left -= notes;
        Placed {
            top,
            header,
            legend,
            notes,
            rows_h: left,
        }
    }

    /// Lines the body would take to show everything.
    pub fn wanted(&self) -> usize {
        let rows: usize = self.rows.iter().map(Vec::len).sum();
        let rows = if rows == 0 {
            usize::from(self.empty.is_some())
        } else {
            rows + usize::from(self.header.is_some())
        };
        self.top.len() + rows + self.legend.len() + self.notes.len()
    }

    /// The largest first row that still fills `rows_h` lines to the end (the last page).
    pub fn max_start(&self, rows_h: usize) -> usize {
        let mut used = 0;
        let mut start = self.rows.len();
        while start > 0 {
            let l = self.rows[start - 1].len();
            if used + l > rows_h {
                break;
            }
            used += l;
            start -= 1;
        }
        start.min(self.rows.len().saturating_sub(1))
    }

    /// The lines to draw with rows from `start`, and how many rows are shown.
    pub fn lines(self, p: Placed, start: usize) -> (Vec<Line<'static>>, usize) {
        let mut out: Vec<Line<'static>> = self.top.into_iter().take(p.top).collect();
        if p.header {
            out.extend(self.header);
        }
        let mut shown = 0;
        if self.rows.is_empty() {
            if p.rows_h > 0 {
                out.extend(self.empty);
            }
        } else {
            let mut used = 0;
            for row in self.rows.into_iter().skip(start) {
                let n = row.len();
                if used + n > p.rows_h {
                    if shown == 0 {
                        // A row taller than the space: its first lines.
                        out.extend(row.into_iter().take(p.rows_h));
                        shown = 1;
                    }
                    break;
                }
                used += n;
                shown += 1;
                out.extend(row);
            }
            if p.legend + p.notes > 0 {
                // Legend and notes sit at the bottom edge.
                out.extend((used..p.rows_h).map(|_| Line::from("")));
            }
        }
        out.extend(self.legend.into_iter().take(p.legend));
        out.extend(self.notes.into_iter().take(p.notes));
        (out, shown)
    }
}

/// One column of a section table.
#[derive(Clone, Copy, Debug)]
pub(super) struct Col {
    /// Heading.
    pub head: &'static str,
    /// Most columns the content may take (longer text is cut with `…`).
    pub max: usize,
    /// 0 is never dropped; higher priorities are dropped first when the pane is narrow.
    pub prio: u8,
    /// Numbers are right-aligned, text left-aligned.
    pub right: bool,
    /// The column that takes the room left over (at most its content); exactly one.
    pub flex: bool,
    /// Left out entirely (e.g. a reading that no row exposes; a note says so).
    pub hide: bool,
}

impl Col {
    /// A right-aligned number column.
    pub const fn num(head: &'static str, max: usize, prio: u8) -> Col {
        Col {
            head,
            max,
            prio,
            right: true,
            flex: false,
            hide: false,
        }
    }

    /// A left-aligned text column.
    pub const fn text(head: &'static str, max: usize, prio: u8) -> Col {
        Col {
            head,
            max,
            prio,
            right: false,
            flex: false,
            hide: false,
        }
    }

    /// The flexible (name) column, never dropped, at least `min` wide when there is room.
    pub const fn name(head: &'static str, min: usize) -> Col {
        Col {
            head,
            max: min,
            prio: 0,
            right: false,
            flex: true,
            hide: false,
        }
    }
}

/// Columns fitted to a width: which are shown and how wide each is.
pub(super) struct Table {
    cols: Vec<Col>,
    /// Width of each column; `None` when not shown.
    widths: Vec<Option<usize>>,
}

fn width_of(s: &str) -> usize {
    s.chars().count()
}

impl Table {
    /// Fits `cols` with content `cells` (one `Vec` per row, a cell per column) into
    /// `width`: each column as wide as its heading and content (up to its `max`), columns
    /// dropped highest priority first until the rest fit with one space between them.
    pub fn fit(cols: Vec<Col>, cells: &[Vec<Cell>], width: usize) -> Table {
        let natural: Vec<usize> = cols
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let content = cells
                    .iter()
                    .filter_map(|r| r.get(i))
                    .map(|(s, _)| width_of(s))
                    .max()
                    .unwrap_or(0);
                let w = content.max(width_of(c.head));
                if c.flex {
                    w
                } else {
                    w.min(c.max)
                }
            })
            .collect();
        let flex = cols.iter().position(|c| c.flex);
        let flex_min = flex.map_or(0, |i| cols[i].max.min(natural[i]));
        let mut order: Vec<usize> = (0..cols.len())
            .filter(|i| Some(*i) != flex && !cols[*i].hide)
            .collect();
        order.sort_by_key(|i| (cols[*i].prio, *i));
        let mut used = flex_min;
        let mut widths = vec![None; cols.len()];
        for i in order {
            let add = natural[i] + usize::from(used > 0);
            if cols[i].prio == 0 || used + add <= width {
                used += add;
                widths[i] = Some(natural[i]);
            }
        }
        if let Some(i) = flex {
            // The other shown columns and one separator each.
            let others: usize = widths.iter().flatten().map(|w| w + 1).sum();
            let room = width.saturating_sub(others);
            widths[i] = Some(natural[i].min(room.max(flex_min.min(width))));
        }
        Table { cols, widths }
    }

    /// Whether the column with this heading is shown.
    #[cfg(test)]
    pub fn shows(&self, head: &str) -> bool {
        self.cols
            .iter()
            .zip(&self.widths)
            .any(|(c, w)| c.head == head && w.is_some())
    }

    /// Legend lines for the placeholders (`n/e`, `unavail`, `…`) in the shown columns.
    pub fn legends(&self, app: &App, cells: &[Vec<Cell>]) -> Vec<Line<'static>> {
        let texts = cells.iter().flat_map(|row| {
            row.iter()
                .zip(&self.widths)
                .filter(|(_, w)| w.is_some())
                .map(|((s, _), _)| s.as_str())
        });
        super::cells::legends(texts)
            .into_iter()
            .map(|t| Line::from(sp(app, t, Role::Muted)))
            .collect()
    }

    /// The heading line.
    pub fn header(&self, app: &App) -> Line<'static> {
        let cells: Vec<Cell> = self
            .cols
            .iter()
            .map(|c| (c.head.to_string(), Role::TableHeader))
            .collect();
        self.row(app, cells)
    }

    /// One row: each shown cell padded (or cut) to its column.
    pub fn row(&self, app: &App, cells: Vec<Cell>) -> Line<'static> {
        let mut spans: Vec<Span<'static>> = Vec::new();
        let mut first = true;
        for ((c, w), (text, role)) in self.cols.iter().zip(&self.widths).zip(cells) {
            let Some(w) = *w else { continue };
            if !first {
                spans.push(Span::raw(" "));
            }
            first = false;
            let text = fit(&text, w);
            let pad = " ".repeat(w.saturating_sub(width_of(&text)));
            if c.right {
                spans.push(Span::raw(pad));
                spans.push(sp(app, text, role));
            } else {
                spans.push(sp(app, text, role));
                spans.push(Span::raw(pad));
            }
        }
        Line::from(spans)
    }
}

/// Packs segments (each a few spans) into lines of at most `width` columns, separated by
/// ` · `. A segment that does not fit on the current line starts the next; one wider than
/// a whole line is word-wrapped in the style of its first span.
pub(super) fn flow(
    app: &App,
    segments: Vec<Vec<Span<'static>>>,
    width: usize,
) -> Vec<Line<'static>> {
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut cur: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for seg in segments {
        let w: usize = seg.iter().map(|s| s.width()).sum();
        let sep = if cur.is_empty() { 0 } else { 3 };
        if used + sep + w <= width {
            if sep > 0 {
                cur.push(sp(app, " · ", Role::Muted));
            }
            cur.extend(seg);
            used += sep + w;
            continue;
        }
        if !cur.is_empty() {
            out.push(Line::from(std::mem::take(&mut cur)));
        }
        if w <= width {
            cur = seg;
            used = w;
        } else {
            let style = seg.first().map(|s| s.style).unwrap_or_default();
            let text: String = seg.iter().map(|s| s.content.as_ref()).collect();
            out.extend(wrap_styled(&text, style, width));
            used = 0;
        }
    }
    if !cur.is_empty() {
        out.push(Line::from(cur));
    }
    out
}

/// Splits text into lines of at most `width` columns at spaces (for notes and verdicts);
/// leading spaces become a hanging indent.
pub(super) fn wrap(app: &App, text: &str, role: Role, width: usize) -> Vec<Line<'static>> {
    wrap_styled(text, app.settings.theme.get(role), width)
}

fn wrap_styled(text: &str, style: Style, width: usize) -> Vec<Line<'static>> {
    let body = text.trim_start_matches(' ');
    let indent = " ".repeat((text.len() - body.len()).min(width / 2));
    let width = width.max(1);
    let mut out = Vec::new();
    let mut cur = indent.clone();
    let mut has_word = false;
    for word in body.split(' ').filter(|w| !w.is_empty()) {
        let need = width_of(&cur) + usize::from(has_word) + width_of(word);
        if has_word && need > width {
            out.push(Line::from(Span::styled(std::mem::take(&mut cur), style)));
            cur = indent.clone();
            has_word = false;
        }
        if has_word {
            cur.push(' ');
        }
        cur.push_str(word);
        has_word = true;
    }
    if has_word {
        out.push(Line::from(Span::styled(cur, style)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(rows: &[&[&str]]) -> Vec<Vec<Cell>> {
        rows.iter()
            .map(|r| r.iter().map(|s| (s.to_string(), Role::Text)).collect())
            .collect()
    }

    #[test]
    fn columns_drop_by_priority_and_numbers_stay_whole() {
        let cols = vec![
            Col::name("resource", 8),
            Col::num("p99", 7, 0),
            Col::num("p50", 7, 3),
            Col::num("req/s", 7, 1),
        ];
        let c = cells(&[&["configmaps", "12.3ms", "850µs", "1,234"]]);
        let t = Table::fit(cols.clone(), &c, 80);
        assert!(t.shows("p50") && t.shows("req/s"));
        // 8 + 1 + 6 + 1 + 5 = 21: p50 (prio 3) goes first.
        let t = Table::fit(cols.clone(), &c, 21);
        assert!(!t.shows("p50") && t.shows("req/s") && t.shows("p99"));
        let t = Table::fit(cols, &c, 3);
        assert!(t.shows("p99") && !t.shows("req/s"));
    }

    #[test]
    fn wrap_keeps_a_hanging_indent() {
        let lines = wrap_styled("  ≠ equals the total key count", Style::default(), 16);
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(text, ["  ≠ equals the", "  total key", "  count"]);
    }

    #[test]
    fn max_start_keeps_the_last_page_full() {
        let b = Body {
            rows: vec![
                vec![Line::from("a")],
                vec![Line::from("b"), Line::from("b2")],
                vec![Line::from("c")],
            ],
            ..Default::default()
        };
        assert_eq!(b.max_start(3), 1);
        assert_eq!(b.max_start(10), 0);
        assert_eq!(b.max_start(0), 2);
    }
}
