//! A [`Report`] as GitHub-flavoured Markdown with its charts as SVG files beside it: the
//! same sections in the same words as the HTML ([`super::html`]), tables as pipe tables,
//! each chart as `![title](stem-id.svg)` with its data table in a `<details>` block under
//! it. Text from the data is escaped for Markdown (no markup, no table breaks).

use std::fmt::Write;

use super::chart::{chart_svg, standalone, Palette};
use super::model::Report;
use super::tables::{self, Table};
use super::text;

/// The report's Markdown and the chart files it references, as (file name, SVG text):
/// `{svg_stem}-{chart.id}.svg`, to be written beside the Markdown file.
pub fn markdown(report: &Report, svg_stem: &str) -> (String, Vec<(String, String)>) {
    let palette = Palette::default();
    let mut o = String::with_capacity(32 * 1024);
    let mut files = Vec::new();
    let _ = writeln!(o, "# Postmortem report: {}\n", md(&report.cluster.title));
    let _ = writeln!(o, "{}\n", md(&text::span_line(report)));
    if let Some(l) = text::recording_line(report) {
        let _ = writeln!(o, "{}\n", md(&l));
    }
    let _ = writeln!(
        o,
        "Made by {} from {}.\n",
        md(&report.generated_by),
        md(&report.source.files.join(", "))
    );
    let warnings = tables::warnings(report);
    if !warnings.is_empty() {
        o.push_str("> [!WARNING]\n> **Read this first**\n>\n");
        for w in &warnings {
            let _ = writeln!(o, "> - {}", md(w));
        }
        o.push('\n');
    }

    o.push_str("## What stands out\n\n");
    for item in text::stands_out(report) {
        match &item.at {
            Some(at) => {
                let _ = writeln!(o, "- **{}** — {}", md(at), md(&item.text));
            }
            None => {
                let _ = writeln!(o, "- {}", md(&item.text));
            }
        }
    }
    let _ = writeln!(
        o,
        "\n### {}\n",
        md(text::most_written_heading(&report.stands_out))
    );
    let t = tables::most_written(report);
    if t.rows.is_empty() {
        o.push_str("No key was written in this span.\n\n");
    } else {
        table(&mut o, &t);
    }

    o.push_str("## The cluster and the session\n\n");
    for (k, v) in tables::cluster_facts(report) {
        let _ = writeln!(o, "- **{}:** {}", md(k), md(&v));
    }
    o.push_str("\n### etcd members\n\n");
    match tables::members(report) {
        Some(t) => table(&mut o, &t),
        None => o.push_str("Not recorded: no member list in this recording.\n\n"),
    }
    o.push_str("### kube-apiserver's storage flags\n\n");
    match tables::flags(report) {
        Some(t) => {
            if let Some(f) = &report.cluster.apiserver_flags_file {
                let _ = writeln!(o, "From {}.\n", md(f));
            }
            table(&mut o, &t);
        }
        None => o.push_str("Not recorded: the recording holds no kube-apiserver manifest.\n\n"),
    }
    o.push_str("### Other etcd clusters (--etcd-servers-overrides)\n\n");
    match tables::other_clusters(report) {
        Some(t) => table(&mut o, &t),
        None => o.push_str("None recorded.\n\n"),
    }

    o.push_str("## Timeline\n\n");
    let t = tables::timeline(report);
    if t.rows.is_empty() {
        o.push_str("No markers in this span.\n\n");
    } else {
        table(&mut o, &t);
    }

    o.push_str("## Charts\n\n");
    if report.charts.is_empty() {
        o.push_str("No charts: the span holds no sampling instant.\n\n");
    }
    for c in &report.charts {
        let file = format!("{svg_stem}-{}.svg", c.id);
        let svg = chart_svg(c, &report.times, &report.markers, &palette);
        let _ = writeln!(o, "### {}\n", md(&c.title));
        let _ = writeln!(o, "![{}]({})\n", md(&c.title), link_target(&file));
        let t = tables::chart_data(report, c);
        if let Some(n) = c.note.as_ref().filter(|_| !t.rows.is_empty()) {
            let _ = writeln!(o, "*{}*\n", md(n));
        }
        if t.rows.is_empty() {
            let _ = writeln!(o, "{}\n", md(&tables::no_chart_data(c)));
        } else {
            let _ = writeln!(
                o,
                "<details>\n<summary>The data ({} rows, {})</summary>\n",
                t.rows.len(),
                md(c.unit)
            );
            table(&mut o, &t);
            let _ = writeln!(o, "{}\n\n</details>\n", md(text::NOT_RECORDED));
        }
        files.push((file, standalone(&svg)));
    }

    o.push_str("## Changes between from and to\n\n");
    let _ = writeln!(o, "{}\n", md(&tables::changes_line(report)));
    if let Some(n) = &report.changes.note {
        let _ = writeln!(o, "**Note:** {}\n", md(n));
    }
    o.push_str("### Per resource\n\n");
    let t = tables::per_resource(report);
    if t.rows.is_empty() {
        o.push_str("No key was created, deleted or changed between the two moments.\n\n");
    } else {
        table(&mut o, &t);
    }
    o.push_str("### Keys changed most in size\n\n");
    let t = tables::top_keys(report);
    if t.rows.is_empty() {
        o.push_str("None.\n\n");
    } else {
        table(&mut o, &t);
    }
    (o, files)
}

/// Text for Markdown: markup characters backslash-escaped, `<`, `>` and `&` as entities,
/// `|` escaped (GitHub's tables split cells on it even inside code), line breaks as spaces.
fn md(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '!' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A file name as a link target: percent-encodes what would end or break it.
fn link_target(file: &str) -> String {
    let mut out = String::with_capacity(file.len());
    for b in file.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'/' | b'~' => {
                out.push(b as char)
            }
            b => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

/// A pipe table (numbers right-aligned), followed by a blank line.
fn table(o: &mut String, t: &Table) {
    o.push('|');
    for h in &t.headers {
        let _ = write!(o, " {} |", md(h));
    }
    o.push_str("\n|");
    for n in &t.numeric {
        o.push_str(if *n { " ---: |" } else { " --- |" });
    }
    o.push('\n');
    for row in &t.rows {
        o.push('|');
        for cell in row {
            let _ = write!(o, " {} |", md(cell));
        }
        o.push('\n');
    }
    o.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample::{sample_report, HOSTILE_KEY};

    #[test]
    fn every_referenced_chart_is_returned_and_parses() {
        let r = sample_report();
        let (text, files) = markdown(&r, "report");
        let referenced: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("!["))
            .filter_map(|l| l.rsplit_once("](")?.1.strip_suffix(')'))
            .collect();
        assert_eq!(
            referenced,
            ["report-writes.svg", "report-head.svg", "report-latency.svg"]
        );
        for name in &referenced {
            let (_, svg) = files
                .iter()
                .find(|(f, _)| f == name)
                .unwrap_or_else(|| panic!("{name} not returned"));
            let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(doc.root_element().has_tag_name("svg"));
        }
        assert_eq!(files.len(), referenced.len());
    }

    #[test]
    fn sections_tables_and_details_are_in_place() {
        let r = sample_report();
        let (text, _) = markdown(&r, "r");
        let order = [
            "# Postmortem report: demo &lt;cluster&gt;",
            "## What stands out",
            "## The cluster and the session",
            "## Timeline",
            "## Charts",
            "## Changes between from and to",
        ];
        let pos: Vec<usize> = order
            .iter()
            .map(|h| text.find(h).unwrap_or_else(|| panic!("{h} missing")))
            .collect();
        assert!(pos.windows(2).all(|w| w[0] < w[1]), "{pos:?}");
        // One details block per chart with data; the empty chart says why.
        assert_eq!(text.matches("<details>").count(), 2);
        assert!(text.contains("No data: no apiserver scrapes in this recording."));
        assert!(text.contains(
            "| time (UTC) | all resources |\n| --- | ---: |\n| 2026-12-04T07:40:00.000Z | — |"
        ));
        assert!(text.contains("- **Kubernetes version:** not recorded"));
        assert!(text.contains("> - Damaged recording:"));
    }

    #[test]
    fn hostile_strings_cannot_break_tables_or_inject_markup() {
        let r = sample_report();
        let (text, _) = markdown(&r, "r");
        assert!(!text.contains("<script>") && !text.contains("<b>"));
        // Every table row still has as many unescaped pipes as its header.
        let key_rows: Vec<&str> = text.lines().filter(|l| l.contains("alert(1)")).collect();
        assert_eq!(key_rows.len(), 2);
        for row in key_rows {
            let pipes = row.replace("\\|", "").matches('|').count();
            let cols = if row.contains("changed") { 5 } else { 2 };
            assert_eq!(pipes, cols + 1, "{row}");
        }
        assert_eq!(md(HOSTILE_KEY).matches("\\|").count(), 1);
        assert_eq!(link_target("a b(c).svg"), "a%20b%28c%29.svg");
    }
}
