//! A [`Report`] as one self-contained HTML file: inline CSS and inline SVG charts, no
//! script, no font, no image, no request of any kind (a Content-Security-Policy of
//! `default-src 'none'` says so to the browser too). Light and dark follow the reader's
//! `prefers-color-scheme`; printing keeps a white page, keeps each chart on one page and
//! prints the data tables folded under the charts.
//!
//! Sections, in order: the title and span, what stands out, the cluster and the session,
//! the timeline of markers, the charts (each a `<figure>` with its data table in a
//! `<details>`), and the changes between `--from` and `--to`. Every string from the data
//! (keys, labels, names come from the cluster) is escaped.

use std::fmt::Write;

use super::chart::{chart_svg, Palette};
use super::model::Report;
use super::tables::{self, Table};
use super::text::{self, html_escape as e};

/// The page's stylesheet: colours as variables switched by `prefers-color-scheme`; the
/// charts' ink is `currentColor`, so they follow.
const CSS: &str = r#"
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1f2328; --muted: #59636e;
  --rule: #d1d9e0; --head: #f6f8fa; --warn-bg: #fff8c5; --warn-rule: #d4a72c;
  --alert-bg: #ffebe9; --alert-rule: #cf222e; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --rule: #3d444d; --head: #151b23;
    --warn-bg: #272115; --warn-rule: #9e6a03; --alert-bg: #25171c; --alert-rule: #f85149; }
}
html { background: var(--bg); color: var(--fg); }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto;
  max-width: 1000px; padding: 1.5rem; }
h1 { font-size: 1.6rem; margin: 0 0 .3rem; }
h2 { font-size: 1.25rem; border-bottom: 1px solid var(--rule); padding-bottom: .2rem;
  margin-top: 2rem; }
h3 { font-size: 1.05rem; }
.muted, figcaption .note { color: var(--muted); }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .9rem; }
th, td { border: 1px solid var(--rule); padding: .2rem .5rem; text-align: left;
  vertical-align: top; }
th { background: var(--head); }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
table.timeline td:first-child, table.timeline td:nth-child(3), details td:first-child { white-space: nowrap; }
td.key { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; word-break: break-all; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; word-break: break-word; }
.warnings { border: 1px solid var(--alert-rule); background: var(--alert-bg);
  border-radius: 6px; padding: .5rem 1rem; margin: 1rem 0; }
.warnings strong { color: var(--alert-rule); }
ul.stands-out li { margin: .3rem 0; }
time { font-variant-numeric: tabular-nums; font-weight: 600; }
.swatch { display: inline-block; width: .8em; height: .8em; border-radius: 2px;
  margin-right: .4em; vertical-align: -.05em; }
figure { margin: 1.5rem 0; border: 1px solid var(--rule); border-radius: 6px;
  padding: .5rem; break-inside: avoid; page-break-inside: avoid; }
figure svg.chart { display: block; width: 100%; height: auto; color: var(--fg); }
figcaption { font-weight: 600; margin: .3rem 0; }
details summary { cursor: pointer; color: var(--muted); }
@media print {
  :root { --bg: #ffffff; --fg: #000000; --muted: #444444; --rule: #999999; --head: #eeeeee;
    --alert-bg: #ffffff; --warn-bg: #ffffff; }
  html, body { background: #ffffff; color: #000000; }
  body { max-width: none; padding: 0; }
  figure { border: none; }
  details > summary { display: none; }
  details::details-content { content-visibility: visible; display: contents; }
  table { break-inside: auto; }
  tr { break-inside: avoid; }
}
"#;

/// The report as one HTML document (UTF-8).
pub fn html(report: &Report) -> String {
    let palette = Palette::default();
    let mut o = String::with_capacity(64 * 1024);
    let title = format!("Postmortem report: {}", report.cluster.title);
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\" />\n");
    o.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:\" />\n",
    );
    o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\" />\n");
    o.push_str("<meta name=\"color-scheme\" content=\"light dark\" />\n");
    let _ = writeln!(
        o,
        "<meta name=\"generator\" content=\"{}\" />",
        e(&report.generated_by)
    );
    let _ = writeln!(o, "<title>{}</title>", e(&title));
    let _ = writeln!(o, "<style>{CSS}</style>\n</head>\n<body>");

    // Title and span.
    let _ = writeln!(o, "<header>\n<h1>{}</h1>", e(&title));
    let _ = writeln!(o, "<p class=\"span\">{}</p>", e(&text::span_line(report)));
    if let Some(l) = text::recording_line(report) {
        let _ = writeln!(o, "<p class=\"muted\">{}</p>", e(&l));
    }
    let _ = writeln!(
        o,
        "<p class=\"muted\">Made by {} from {}.</p>\n</header>",
        e(&report.generated_by),
        e(&report.source.files.join(", "))
    );
    let warnings = tables::warnings(report);
    if !warnings.is_empty() {
        o.push_str(
            "<div class=\"warnings\" role=\"alert\">\n<strong>Read this first</strong>\n<ul>\n",
        );
        for w in &warnings {
            let _ = writeln!(o, "<li>{}</li>", e(w));
        }
        o.push_str("</ul>\n</div>\n");
    }

    stands_out(&mut o, report);
    cluster(&mut o, report);
    timeline(&mut o, report, &palette);
    charts(&mut o, report, &palette);
    changes(&mut o, report);
    o.push_str("</body>\n</html>\n");
    o
}

fn stands_out(o: &mut String, r: &Report) {
    o.push_str(
        "<section id=\"stands-out\">\n<h2>What stands out</h2>\n<ul class=\"stands-out\">\n",
    );
    for item in text::stands_out(r) {
        match &item.at {
            Some(at) => {
                let _ = writeln!(o, "<li><time>{}</time> — {}</li>", e(at), e(&item.text));
            }
            None => {
                let _ = writeln!(o, "<li>{}</li>", e(&item.text));
            }
        }
    }
    o.push_str("</ul>\n");
    let _ = writeln!(
        o,
        "<h3>{}</h3>",
        e(text::most_written_heading(&r.stands_out))
    );
    let t = tables::most_written(r);
    if t.rows.is_empty() {
        o.push_str("<p>No key was written in this span.</p>\n");
    } else {
        table(o, &t, &[0]);
    }
    o.push_str("</section>\n");
}

fn cluster(o: &mut String, r: &Report) {
    o.push_str(
        "<section id=\"cluster\">\n<h2>The cluster and the session</h2>\n<dl class=\"facts\">\n",
    );
    for (k, v) in tables::cluster_facts(r) {
        let _ = writeln!(o, "<dt>{}</dt><dd>{}</dd>", e(k), e(&v));
    }
    o.push_str("</dl>\n<h3>etcd members</h3>\n");
    match tables::members(r) {
        Some(t) => table(o, &t, &[]),
        None => o.push_str("<p>Not recorded: no member list in this recording.</p>\n"),
    }
    o.push_str("<h3>kube-apiserver's storage flags</h3>\n");
    match (tables::flags(r), &r.cluster.apiserver_flags_file) {
        (Some(t), file) => {
            if let Some(f) = file {
                let _ = writeln!(o, "<p class=\"muted\">From {}.</p>", e(f));
            }
            table(o, &t, &[]);
        }
        (None, _) => {
            o.push_str("<p>Not recorded: the recording holds no kube-apiserver manifest.</p>\n")
        }
    }
    o.push_str("<h3>Other etcd clusters (--etcd-servers-overrides)</h3>\n");
    match tables::other_clusters(r) {
        Some(t) => table(o, &t, &[]),
        None => o.push_str("<p>None recorded.</p>\n"),
    }
    o.push_str("</section>\n");
}

fn timeline(o: &mut String, r: &Report, palette: &Palette) {
    o.push_str("<section id=\"timeline\">\n<h2>Timeline</h2>\n");
    let t = tables::timeline(r);
    if t.rows.is_empty() {
        o.push_str("<p>No markers in this span.</p>\n</section>\n");
        return;
    }
    o.push_str("<table class=\"timeline\">\n");
    head(o, &t);
    o.push_str("<tbody>\n");
    for (row, m) in t.rows.iter().zip(&r.markers) {
        let _ = writeln!(
            o,
            "<tr class=\"kind-{k}\"><td>{}</td><td class=\"n\">{}</td>\
             <td><span class=\"swatch\" style=\"background:{c}\"></span>{k}</td><td>{}</td></tr>",
            e(&row[0]),
            e(&row[1]),
            e(&row[3]),
            k = e(&row[2]),
            c = e(palette.marker_colour(m.kind)),
        );
    }
    o.push_str("</tbody>\n</table>\n</section>\n");
}

fn charts(o: &mut String, r: &Report, palette: &Palette) {
    o.push_str("<section id=\"charts\">\n<h2>Charts</h2>\n");
    if r.charts.is_empty() {
        o.push_str("<p>No charts: the span holds no sampling instant.</p>\n");
    }
    for c in &r.charts {
        let _ = writeln!(o, "<figure id=\"figure-{}\">", e(c.id));
        o.push_str(&chart_svg(c, &r.times, &r.markers, palette));
        let t = tables::chart_data(r, c);
        let _ = write!(o, "<figcaption>{}", e(&c.title));
        if let Some(n) = c.note.as_ref().filter(|_| !t.rows.is_empty()) {
            let _ = write!(o, " <span class=\"note\">— {}</span>", e(n));
        }
        o.push_str("</figcaption>\n");
        if t.rows.is_empty() {
            let _ = writeln!(o, "<p class=\"muted\">{}</p>", e(&tables::no_chart_data(c)));
        } else {
            let _ = writeln!(
                o,
                "<details>\n<summary>The data ({} rows, {})</summary>",
                t.rows.len(),
                e(c.unit)
            );
            table(o, &t, &[]);
            let _ = writeln!(
                o,
                "<p class=\"muted\">{}</p>\n</details>",
                e(text::NOT_RECORDED)
            );
        }
        o.push_str("</figure>\n");
    }
    o.push_str("</section>\n");
}

fn changes(o: &mut String, r: &Report) {
    o.push_str("<section id=\"changes\">\n<h2>Changes between from and to</h2>\n");
    let _ = writeln!(o, "<p>{}</p>", e(&tables::changes_line(r)));
    if let Some(n) = &r.changes.note {
        let _ = writeln!(o, "<p><strong>Note:</strong> {}</p>", e(n));
    }
    o.push_str("<h3>Per resource</h3>\n");
    let t = tables::per_resource(r);
    if t.rows.is_empty() {
        o.push_str("<p>No key was created, deleted or changed between the two moments.</p>\n");
    } else {
        table(o, &t, &[]);
    }
    o.push_str("<h3>Keys changed most in size</h3>\n");
    let t = tables::top_keys(r);
    if t.rows.is_empty() {
        o.push_str("<p>None.</p>\n");
    } else {
        table(o, &t, &[0]);
    }
    o.push_str("</section>\n");
}

fn head(o: &mut String, t: &Table) {
    o.push_str("<thead><tr>");
    for (h, n) in t.headers.iter().zip(&t.numeric) {
        let _ = write!(
            o,
            "<th{}>{}</th>",
            if *n { " class=\"n\"" } else { "" },
            e(h)
        );
    }
    o.push_str("</tr></thead>\n");
}

/// A table; `keys` are the columns holding etcd keys (monospace, broken anywhere).
fn table(o: &mut String, t: &Table, keys: &[usize]) {
    o.push_str("<table>\n");
    head(o, t);
    o.push_str("<tbody>\n");
    for row in &t.rows {
        o.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = if keys.contains(&i) {
                " class=\"key\""
            } else if t.numeric.get(i).copied().unwrap_or(false) {
                " class=\"n\""
            } else {
                ""
            };
            let _ = write!(o, "<td{class}>{}</td>", e(cell));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody>\n</table>\n");
}

#[cfg(test)]
#[path = "html_tests.rs"]
mod tests;
