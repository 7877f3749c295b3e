//! Tests of the HTML report: well-formed, self-contained, escaped, sections in order,
//! missing data said in words.

use super::*;
use crate::report::sample::{sample_report, HOSTILE_KEY};

/// The page is also well-formed XML (self-closed `<meta />`), which lets the tests walk it.
fn parse(h: &str) -> roxmltree::Document<'_> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(h, opts).unwrap_or_else(|e| panic!("{e}"))
}

fn text_of(n: roxmltree::Node) -> String {
    n.descendants().filter_map(|d| d.text()).collect()
}

#[test]
fn hostile_strings_are_escaped() {
    let r = sample_report();
    let h = html(&r);
    assert!(
        !h.to_ascii_lowercase().contains("<script"),
        "raw markup from the data"
    );
    assert!(!h.contains("<b>deploy</b>"));
    let doc = parse(&h);
    assert!(doc.descendants().all(|n| !n.has_tag_name("script")));
    // The key reads back exactly, as text, in both tables that hold it.
    let cells = doc
        .descendants()
        .filter(|n| n.has_tag_name("td") && n.text() == Some(HOSTILE_KEY))
        .count();
    assert_eq!(cells, 2);
    assert!(h.contains("demo &lt;cluster&gt;"));
}

#[test]
fn the_page_asks_for_nothing_outside_itself() {
    let h = html(&sample_report());
    assert!(h.contains(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:\" />"
    ));
    let doc = parse(&h);
    for n in doc.descendants().filter(|n| n.is_element()) {
        let tag = n.tag_name().name();
        assert!(
            !matches!(
                tag,
                "script" | "link" | "img" | "iframe" | "object" | "embed" | "image" | "use"
            ),
            "<{tag}> in the page"
        );
        for a in n.attributes() {
            let v = a.value().to_ascii_lowercase();
            if a.name() == "xmlns" {
                continue;
            }
            assert!(
                !v.contains("http://") && !v.contains("https://") && !v.contains("url("),
                "<{tag} {}={v:?}>",
                a.name()
            );
        }
    }
    let css: String = doc
        .descendants()
        .filter(|n| n.has_tag_name("style"))
        .map(text_of)
        .collect();
    assert!(!css.contains("url(") && !css.contains("@import") && !css.contains("@font-face"));
    assert!(css.contains("prefers-color-scheme: dark") && css.contains("@media print"));
}

#[test]
fn sections_come_in_order_and_every_chart_has_its_data() {
    let r = sample_report();
    let h = html(&r);
    let doc = parse(&h);
    let ids: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("section"))
        .filter_map(|n| n.attribute("id"))
        .collect();
    assert_eq!(
        ids,
        ["stands-out", "cluster", "timeline", "charts", "changes"]
    );
    let figures: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("figure"))
        .collect();
    assert_eq!(figures.len(), r.charts.len());
    for (f, c) in figures.iter().zip(&r.charts) {
        let svg = f
            .descendants()
            .find(|n| n.has_tag_name("svg"))
            .expect("svg");
        assert_eq!(
            svg.attribute("id"),
            Some(format!("chart-{}", c.id).as_str())
        );
        let cap = f
            .descendants()
            .find(|n| n.has_tag_name("figcaption"))
            .unwrap();
        assert!(text_of(cap).contains(&c.title));
        let rows = f
            .descendants()
            .filter(|n| n.has_tag_name("details"))
            .flat_map(|d| d.descendants().filter(|n| n.has_tag_name("tr")))
            .count();
        if c.series.is_empty() {
            assert_eq!(rows, 0);
            assert!(text_of(*f).contains("No data: no apiserver scrapes in this recording."));
        } else {
            // A header row and one per instant.
            assert_eq!(rows, r.times.len() + 1, "{}", c.id);
        }
    }
    // The timeline lists every marker.
    let timeline = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("timeline"))
        .unwrap();
    assert_eq!(
        timeline
            .descendants()
            .filter(|n| n.has_tag_name("tr"))
            .count(),
        r.markers.len() + 1
    );
}

#[test]
fn missing_facts_are_said_and_warnings_come_first() {
    let r = sample_report();
    let h = html(&r);
    assert!(h.contains("<dt>Kubernetes version</dt><dd>not recorded</dd>"));
    let warn = h.find("Read this first").expect("warnings box");
    assert!(warn < h.find("id=\"stands-out\"").unwrap());
    assert!(h.contains("Damaged recording: frame at byte 4,096"));
    assert!(h.contains("Note on the recording: line 3: no time"));
    // A report with none of the optional parts still says what is missing.
    let mut bare = sample_report();
    bare.cluster = Default::default();
    bare.stands_out = Default::default();
    bare.markers.clear();
    bare.changes = Default::default();
    bare.source.damage.clear();
    bare.source.notes.clear();
    let h = html(&bare);
    parse(&h);
    for said in [
        "Not recorded: no member list in this recording.",
        "No markers in this span.",
        "etcd request latency: not recorded (no apiserver scrapes in this span).",
        "No key was written in this span.",
        "None recorded.",
    ] {
        assert!(h.contains(said), "missing {said:?}");
    }
    assert!(!h.contains("Read this first"));
}
