//! One report chart as SVG text, drawn by the `plotters` crate's SVG backend: the title,
//! a time axis in UTC, a y axis labelled with the chart's unit, one line per series (a
//! `None` value breaks the line), every marker as a vertical line in its kind's colour, and
//! a legend under the plot. A chart with no value at all still draws its axes, with "no
//! data" (and the chart's note) in the middle.
//!
//! Colours come from the console's theme ([`Palette::from_theme`]); the text, axes and
//! grid are drawn in `currentColor`, so the page around the SVG (or its own `<style>`, see
//! [`standalone`]) picks them for a light or a dark background. Lines carry a class
//! (`series`, `marker`, `legend`) so that tests and stylesheets can find them.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use ratatui::style::Color as TermColor;

use super::model::{Chart, Marker};
use super::text;
use crate::tui::theme::{Role, Theme};

/// The chart's width in pixels.
pub const WIDTH: u32 = 900;
/// The chart's height in pixels without the legend's second and later rows.
pub const HEIGHT: u32 = 300;

/// Stands for `currentColor` while plotters draws (it only knows RGB); replaced after.
const INK: RGBColor = RGBColor(1, 2, 3);
const INK_HEX: &str = "#010203";
/// Marker lines' opacity: what tells them apart from the series' lines in the SVG.
const MARKER_ALPHA: f64 = 0.8;
const SERIES_WIDTH: u32 = 2;
const LEGEND_WIDTH: u32 = 3;
const FONT: &str = "sans-serif";
/// Font sizes as plotters takes them (it writes `size / 1.24` px into the SVG): 13, 14 and
/// 17 px for labels, axis titles and the chart's title.
const LABEL: u32 = 16;
const DESC: u32 = 17;
const TITLE: u32 = 21;
/// Legend rows' height and the estimated width of one character of its 13 px text.
const ROW: u32 = 22;
const CHAR_W: f64 = 7.4;

/// The colours of the report's charts, read from a console theme: series in the theme's
/// series and highlight roles, markers by how serious their kind is (alert, warning,
/// note, bookmark). Terminal colour names become mid-tone RGB values that read on a
/// white and on a near-black page alike.
#[derive(Clone, Debug, PartialEq)]
pub struct Palette {
    /// Series colours in order of use (`#rrggbb`); a chart's n-th series takes the n-th,
    /// cycling.
    pub series: Vec<String>,
    /// Markers whose kind means something broke (`MarkerKind::severity` 3: a gap, 410
    /// Gone, a reset, a lost connection, an alarm, damage).
    pub alert: String,
    /// Markers worth a look (severity 2: thresholds, watch anomalies, failed scrapes,
    /// failovers, member and other-cluster changes).
    pub warn: String,
    /// Routine markers (compactions) and kinds not known here.
    pub note: String,
    /// The user's bookmarks.
    pub bookmark: String,
    /// A connection restored (as the console's timeline colours it).
    pub ok: String,
}

/// Colours a chart's series take after the theme's, distinct from them and from each
/// other, so that no two lines of one chart share a colour (a chart draws at most ten).
const MORE_SERIES: [&str; 6] = [
    "#8c564b", "#ff7f0e", "#1f3a93", "#e377c2", "#006d6f", "#808000",
];

impl Default for Palette {
    /// From the embedded default theme.
    fn default() -> Self {
        Palette::from_theme(&Theme::default())
    }
}

/// The roles whose colours the series take, in order.
const SERIES_ROLES: [Role; 8] = [
    Role::SeriesHead,
    Role::SeriesRate,
    Role::Filter,
    Role::DiffChanged,
    Role::SyntaxKey,
    Role::Delete,
    Role::SyntaxString,
    Role::SyntaxScalar,
];

impl Palette {
    /// The palette of `theme`: each role's foreground (the alert's background, its
    /// colour), made readable on both page backgrounds; a role without a usable colour
    /// falls back to the default's.
    pub fn from_theme(theme: &Theme) -> Palette {
        let fg = |r: Role| theme.get(r).fg.and_then(web_colour);
        let bg = |r: Role| theme.get(r).bg.and_then(web_colour);
        let mut series: Vec<String> = Vec::new();
        for c in SERIES_ROLES.iter().filter_map(|r| fg(*r)) {
            if !series.contains(&c) {
                series.push(c);
            }
        }
        if series.is_empty() {
            series = [
                "#1aa9bf", "#3fae4f", "#c155c9", "#c99a00", "#4a7fe0", "#e0404f",
            ]
            .map(String::from)
            .to_vec();
        }
        for c in MORE_SERIES {
            if !series.iter().any(|s| s == c) {
                series.push(c.to_string());
            }
        }
        Palette {
            series,
            alert: bg(Role::Alert)
                .or_else(|| fg(Role::Delete))
                .unwrap_or_else(|| "#d7263d".into()),
            warn: fg(Role::StatusWarn).unwrap_or_else(|| "#c99a00".into()),
            note: fg(Role::Muted).unwrap_or_else(|| "#8a8a8a".into()),
            bookmark: fg(Role::Note).unwrap_or_else(|| "#c155c9".into()),
            ok: fg(Role::StatusOk).unwrap_or_else(|| "#3fae4f".into()),
        }
    }

    /// The colour of series number `i` (`#rrggbb`).
    pub fn series_colour(&self, i: usize) -> &str {
        &self.series[i % self.series.len().max(1)]
    }

    /// The colour of a marker of `kind` (`crate::record::MarkerKind::name` strings).
    pub fn marker_colour(&self, kind: &str) -> &str {
        // By the kind's severity, as the replay timeline colours its ticks.
        let kind = crate::record::MarkerKind::ALL
            .into_iter()
            .find(|k| k.name() == kind);
        match kind {
            Some(crate::record::MarkerKind::Bookmark) => &self.bookmark,
            Some(crate::record::MarkerKind::ConnectionRestored) => &self.ok,
            Some(k) if k.severity() >= 3 => &self.alert,
            Some(k) if k.severity() == 2 => &self.warn,
            _ => &self.note,
        }
    }
}

/// A terminal colour as a `#rrggbb` that reads on white and on near-black, or `None` for
/// colours that do not (black, white, the terminal's default).
fn web_colour(c: TermColor) -> Option<String> {
    let rgb = match c {
        TermColor::Red => (0xd7, 0x26, 0x3d),
        TermColor::LightRed => (0xe0, 0x40, 0x4f),
        TermColor::Green => (0x2a, 0x9d, 0x3a),
        TermColor::LightGreen => (0x3f, 0xae, 0x4f),
        TermColor::Yellow => (0xb8, 0x86, 0x0b),
        TermColor::LightYellow => (0xc9, 0x9a, 0x00),
        TermColor::Blue => (0x33, 0x66, 0xcc),
        TermColor::LightBlue => (0x4a, 0x7f, 0xe0),
        TermColor::Magenta => (0xb4, 0x3f, 0xb0),
        TermColor::LightMagenta => (0xc1, 0x55, 0xc9),
        TermColor::Cyan => (0x0f, 0x9b, 0xb0),
        TermColor::LightCyan => (0x1a, 0xa9, 0xbf),
        TermColor::Gray | TermColor::DarkGray => (0x8a, 0x8a, 0x8a),
        TermColor::Rgb(r, g, b) => (r, g, b),
        TermColor::Indexed(i) if i < 16 => return None,
        TermColor::Indexed(i) => crate::tui::theme::index_to_rgb(i),
        _ => return None,
    };
    // Too light for a white page or too dark for a black one.
    let luma = 0.2126 * rgb.0 as f64 + 0.7152 * rgb.1 as f64 + 0.0722 * rgb.2 as f64;
    (30.0..=215.0)
        .contains(&luma)
        .then(|| format!("#{:02x}{:02x}{:02x}", rgb.0, rgb.1, rgb.2))
}

fn rgb_of(hex: &str) -> RGBColor {
    let v = u32::from_str_radix(hex.trim_start_matches('#'), 16).unwrap_or(0x808080);
    RGBColor((v >> 16) as u8, (v >> 8) as u8, v as u8)
}

/// One legend entry: its label and colour, and whether it is a marker kind.
struct Entry {
    label: String,
    colour: String,
    marker: bool,
}

/// The legend's entries in order (series, then each marker kind present) with each one's
/// position as (row, x offset) in a legend `width` pixels wide.
fn legend_layout(entries: &[Entry], width: u32) -> Vec<(u32, i32)> {
    let mut out = Vec::with_capacity(entries.len());
    let (mut row, mut x) = (0u32, 0i32);
    for e in entries {
        let w = 30 + (e.label.chars().count() as f64 * CHAR_W) as i32 + 18;
        if x > 0 && x + w > width as i32 {
            row += 1;
            x = 0;
        }
        out.push((row, x));
        x += w;
    }
    out
}

/// The chart as one `<svg>` element (no XML declaration), `WIDTH` wide and `HEIGHT` high
/// plus 22 px per extra legend row. `times` are [`super::Report::times`] (unix seconds);
/// markers outside them are left out. Never fails: a drawing error becomes the text of
/// the SVG.
pub fn chart_svg(chart: &Chart, times: &[i64], markers: &[Marker], palette: &Palette) -> String {
    let (x0, x1) = match (times.first(), times.last()) {
        (Some(&a), Some(&b)) if b > a => (a, b),
        (Some(&a), _) => (a - 30, a + 30),
        _ => (0, 60),
    };
    let shown: Vec<&Marker> = markers
        .iter()
        .filter(|m| (x0..=x1).contains(&text::secs(m.at)))
        .collect();
    let mut entries: Vec<Entry> = chart
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| Entry {
            label: s.name.clone(),
            colour: palette.series_colour(i).to_string(),
            marker: false,
        })
        .collect();
    for m in &shown {
        if !entries.iter().any(|e| e.marker && e.label == m.kind) {
            entries.push(Entry {
                label: m.kind.to_string(),
                colour: palette.marker_colour(m.kind).to_string(),
                marker: true,
            });
        }
    }
    let layout = legend_layout(&entries, WIDTH - 100);
    let rows = layout.last().map_or(0, |(r, _)| r + 1);
    let height = HEIGHT + rows.saturating_sub(1) * ROW;
    let mut svg = String::new();
    let drawn = draw(
        &mut svg,
        chart,
        (x0, x1),
        times,
        &shown,
        palette,
        (&entries, &layout, rows),
        height,
    );
    match drawn {
        Ok(()) => finish(&svg, chart),
        Err(e) => {
            let mut s = String::new();
            let area = SVGBackend::with_string(&mut s, (WIDTH, 40)).into_drawing_area();
            let msg = format!("{}: the chart could not be drawn ({e})", chart.title);
            let _ = area.draw(&Text::new(
                msg,
                (10, 20),
                (FONT, 14).into_font().color(&INK),
            ));
            let _ = area.present();
            drop(area);
            finish(&s, chart)
        }
    }
}

type Legend<'a> = (&'a [Entry], &'a [(u32, i32)], u32);

#[allow(clippy::too_many_arguments)]
fn draw(
    buf: &mut String,
    chart: &Chart,
    (x0, x1): (i64, i64),
    times: &[i64],
    markers: &[&Marker],
    palette: &Palette,
    (entries, layout, rows): Legend,
    height: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::with_string(buf, (WIDTH, height)).into_drawing_area();
    let legend_h = rows.max(1) * ROW + 6;
    let (plot_area, legend_area) = root.split_vertically(height - legend_h);
    let values = chart
        .series
        .iter()
        .flat_map(|s| s.values.iter().flatten().copied())
        .filter(|v| v.is_finite());
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let has_data = lo.is_finite();
    let (y0, y1) = y_range(has_data.then_some((lo, hi)));
    let ink_font = |size: u32| (FONT, size).into_font().color(&INK);
    let mut c = ChartBuilder::on(&plot_area)
        .caption(&chart.title, ink_font(TITLE))
        .margin(8)
        .margin_right(24)
        .x_label_area_size(40)
        .y_label_area_size(100)
        .build_cartesian_2d((x0..x1).with_key_points(time_ticks(x0, x1)), y0..y1)?;
    let span = x1 - x0;
    let multi_day = x0.div_euclid(86_400) != x1.div_euclid(86_400);
    let x_fmt = |x: &i64| time_label(*x, span, multi_day);
    let unit = chart.unit;
    // Without data the y axis has no scale to show: a "0" there would read as a value.
    let y_fmt = |y: &f64| {
        if has_data {
            axis_value(*y, unit)
        } else {
            String::new()
        }
    };
    c.configure_mesh()
        .x_labels(8)
        .y_labels(6)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .x_desc("time (UTC)")
        .y_desc(chart.y_label.as_str())
        .axis_style(INK)
        .bold_line_style(INK.mix(0.12))
        .light_line_style(TRANSPARENT)
        .label_style(ink_font(LABEL))
        .axis_desc_style(ink_font(DESC))
        .draw()?;
    // The most severe last, so that it is on top where two fall on one column (a lost
    // connection and the scrape that failed with it).
    let mut by_severity: Vec<&&Marker> = markers.iter().collect();
    by_severity.sort_by_key(|m| {
        crate::record::MarkerKind::ALL
            .into_iter()
            .find(|k| k.name() == m.kind)
            .map_or(0, |k| k.severity())
    });
    for m in by_severity {
        let x = text::secs(m.at);
        let colour = rgb_of(palette.marker_colour(m.kind));
        c.draw_series(LineSeries::new(
            [(x, y0), (x, y1)],
            colour.mix(MARKER_ALPHA).stroke_width(1),
        ))?;
    }
    for (i, s) in chart.series.iter().enumerate() {
        let style = rgb_of(palette.series_colour(i)).stroke_width(SERIES_WIDTH);
        for run in runs(times, &s.values) {
            if let [only] = run.as_slice() {
                c.draw_series(std::iter::once(Circle::new(*only, 2, style.filled())))?;
            } else {
                c.draw_series(LineSeries::new(run, style))?;
            }
        }
    }
    if !has_data {
        let mid = x0 + (x1 - x0) / 2;
        let centre = Pos::new(HPos::Center, VPos::Center);
        c.draw_series(std::iter::once(Text::new(
            "no data",
            (mid, (y0 + y1) / 2.0),
            ink_font(TITLE).pos(centre),
        )))?;
        if let Some(note) = &chart.note {
            c.draw_series(std::iter::once(Text::new(
                note.clone(),
                (mid, y0 + (y1 - y0) * 0.3),
                ink_font(LABEL).pos(centre),
            )))?;
        }
    }
    let left = 84;
    for (e, (row, x)) in entries.iter().zip(layout) {
        let y = (row * ROW + ROW / 2) as i32;
        let colour = rgb_of(&e.colour);
        let style = if e.marker {
            colour.mix(MARKER_ALPHA).stroke_width(LEGEND_WIDTH)
        } else {
            colour.stroke_width(LEGEND_WIDTH)
        };
        let x = left + x;
        if e.marker {
            legend_area.draw(&PathElement::new(
                vec![(x + 12, y - 7), (x + 12, y + 7)],
                style,
            ))?;
        } else {
            legend_area.draw(&PathElement::new(vec![(x, y), (x + 24, y)], style))?;
        }
        legend_area.draw(&Text::new(
            e.label.clone(),
            (x + 30, y),
            ink_font(LABEL).pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    root.present()?;
    Ok(())
}

/// The y axis' range: from zero (or the lowest value when it is negative) to a little
/// above the highest, unless zero is far below the data (a head revision), which a zero
/// base would flatten.
fn y_range(data: Option<(f64, f64)>) -> (f64, f64) {
    let Some((lo, hi)) = data else {
        return (0.0, 1.0);
    };
    let range = hi - lo;
    let lo = if lo >= 0.0 && range > 0.0 && lo > 4.0 * range {
        lo - range * 0.05
    } else {
        lo.min(0.0)
    };
    let hi = if hi > lo {
        hi + (hi - lo) * 0.08
    } else {
        lo + 1.0
    };
    (lo, hi)
}

/// The runs of consecutive known values as (time, value) points: a `None` ends a run.
fn runs(times: &[i64], values: &[Option<f64>]) -> Vec<Vec<(i64, f64)>> {
    let mut out: Vec<Vec<(i64, f64)>> = Vec::new();
    let mut cur: Vec<(i64, f64)> = Vec::new();
    for (t, v) in times.iter().zip(values) {
        match v {
            Some(v) if v.is_finite() => cur.push((*t, *v)),
            _ if !cur.is_empty() => out.push(std::mem::take(&mut cur)),
            _ => {}
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The time axis' ticks: whole multiples of the smallest of 1 s, 2 s, 5 s, 10 s, 15 s,
/// 30 s, 1, 2, 5, 10, 15, 30 min, 1, 2, 3, 6, 12 h or whole days that gives at most eight.
fn time_ticks(x0: i64, x1: i64) -> Vec<i64> {
    const STEPS: [i64; 18] = [
        1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200,
        86_400,
    ];
    let span = (x1 - x0).max(1);
    let step = STEPS
        .iter()
        .copied()
        .find(|s| span / s <= 8)
        .unwrap_or_else(|| (span / 8 / 86_400 + 1) * 86_400);
    let first = x0.div_euclid(step) * step;
    (0..)
        .map(|i| first + i * step)
        .skip_while(|t| *t < x0)
        .take_while(|t| *t <= x1)
        .collect()
}

/// A time axis label (UTC): `HH:MM:SS` over spans up to ten minutes, `HH:MM` above, with
/// the month and day when the span crosses midnight.
fn time_label(x: i64, span: i64, multi_day: bool) -> String {
    let hms = text::hms(x);
    let clock = if span <= 600 {
        hms
    } else {
        hms[..5].to_string()
    };
    if multi_day {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(x.max(0) as u64);
        format!("{} {clock}", &text::rfc3339(t)[5..10])
    } else {
        clock
    }
}

/// A y axis label: short, the unit being on the axis' title (bytes in binary units,
/// seconds as ms below one, counts with k/M).
fn axis_value(v: f64, unit: &str) -> String {
    match unit {
        "bytes" | "bytes/s" => text::value(v, "bytes"),
        "seconds" => text::value(v, "seconds"),
        _ => {
            let a = v.abs();
            let (d, s) = match a {
                a if a >= 1e9 => (1e9, "G"),
                a if a >= 1e6 => (1e6, "M"),
                a if a >= 1e4 => (1e3, "k"),
                _ => (1.0, ""),
            };
            let n = v / d;
            let digits = if n.fract().abs() < 1e-9 || n.abs() >= 100.0 {
                0
            } else if n.abs() >= 10.0 {
                1
            } else {
                2
            };
            format!("{n:.digits$}{s}")
        }
    }
}

/// Classes on the drawn lines, a `<title>` and the chart's id on the `<svg>`, and
/// `currentColor` for the ink.
fn finish(svg: &str, chart: &Chart) -> String {
    let mut out = String::with_capacity(svg.len() + 256);
    let mut first = true;
    for line in svg.lines() {
        let line = line.replace(INK_HEX, "currentColor");
        if first && line.starts_with("<svg ") {
            first = false;
            out.push_str(&line.replacen(
                "<svg ",
                &format!(
                    "<svg class=\"chart\" id=\"chart-{}\" role=\"img\" ",
                    text::html_escape(chart.id)
                ),
                1,
            ));
            out.push('\n');
            out.push_str(&format!(
                "<title>{}</title>\n",
                text::html_escape(&chart.title)
            ));
            continue;
        }
        let class = if line.starts_with("<polyline") {
            if line.contains(&format!("opacity=\"{MARKER_ALPHA}\""))
                && line.contains("stroke-width=\"1\"")
            {
                Some("marker")
            } else if line.contains(&format!("stroke-width=\"{SERIES_WIDTH}\"")) {
                Some("series")
            } else if line.contains(&format!("stroke-width=\"{LEGEND_WIDTH}\"")) {
                Some("legend")
            } else {
                None
            }
        } else if line.starts_with("<circle") {
            Some("series-point")
        } else {
            None
        };
        match class {
            Some(c) => {
                let (tag, rest) = line.split_once(' ').unwrap_or((line.as_str(), ""));
                out.push_str(&format!("{tag} class=\"{c}\" {rest}"));
            }
            None => out.push_str(&line),
        }
        out.push('\n');
    }
    out
}

/// The chart as a file of its own (Markdown's `report-<id>.svg`): an XML declaration and
/// a `<style>` that sets the ink for a light or a dark page, which the HTML page does with
/// its own stylesheet instead.
pub fn standalone(svg: &str) -> String {
    const STYLE: &str = "<style>svg.chart{color:#222}@media (prefers-color-scheme: dark)\
                         {svg.chart{color:#ddd}}</style>\n";
    let body = match svg.find("</title>\n") {
        Some(i) => format!("{}{STYLE}{}", &svg[..i + 9], &svg[i + 9..]),
        None => svg.to_string(),
    };
    format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{body}")
}

#[cfg(test)]
#[path = "chart_tests.rs"]
mod tests;
