//! Tests of the report's charts: the SVG parses, lines and markers are where the data
//! says, gaps break lines, an empty chart says so.

use super::*;
use crate::report::sample::{sample_report, T0};

fn parse(svg: &str) -> roxmltree::Document<'_> {
    roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{e}\n{svg}"))
}

fn texts<'a>(doc: &'a roxmltree::Document<'a>) -> Vec<&'a str> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(str::trim)
        .collect()
}

fn with_class<'a>(
    doc: &'a roxmltree::Document<'a>,
    tag: &str,
    class: &str,
) -> Vec<roxmltree::Node<'a, 'a>> {
    doc.descendants()
        .filter(|n| n.has_tag_name(tag) && n.attribute("class") == Some(class))
        .collect()
}

#[test]
fn a_chart_draws_its_title_axes_legend_and_a_line_per_marker() {
    let r = sample_report();
    let p = Palette::default();
    let svg = chart_svg(&r.charts[1], &r.times, &r.markers, &p);
    let doc = parse(&svg);
    let root = doc.root_element();
    assert_eq!(root.attribute("class"), Some("chart"));
    assert_eq!(root.attribute("width"), Some("900"));
    let texts = texts(&doc);
    for want in [
        "Head revision",
        "time (UTC)",
        "revision",
        "head <rev>",
        "compaction",
        "gone",
        "bookmark",
    ] {
        assert!(texts.contains(&want), "no text {want:?} in {texts:?}");
    }
    assert!(
        texts.iter().any(|t| t.starts_with("07:4")),
        "time labels: {texts:?}"
    );
    // The title element names the chart; escaped markup stays text.
    let title = doc.descendants().find(|n| n.has_tag_name("title")).unwrap();
    assert_eq!(title.text().map(str::trim), Some("Head revision"));
    // One vertical line per marker, in its kind's colour.
    let markers = with_class(&doc, "polyline", "marker");
    assert_eq!(markers.len(), r.markers.len(), "{svg}");
    // Drawn least severe first, so the most severe is on top where two share a column.
    let mut by_severity: Vec<&Marker> = r.markers.iter().collect();
    by_severity.sort_by_key(|m| {
        crate::record::MarkerKind::ALL
            .into_iter()
            .find(|k| k.name() == m.kind)
            .map_or(0, |k| k.severity())
    });
    for (line, m) in markers.iter().zip(by_severity) {
        assert_eq!(
            line.attribute("stroke")
                .map(str::to_ascii_lowercase)
                .as_deref(),
            Some(p.marker_colour(m.kind))
        );
        let pts: Vec<&str> = line
            .attribute("points")
            .unwrap()
            .split_whitespace()
            .collect();
        assert_eq!(pts.len(), 2);
        let x = |p: &str| p.split(',').next().unwrap().to_string();
        assert_eq!(x(pts[0]), x(pts[1]), "vertical: {pts:?}");
    }
    // The ink follows the page.
    assert!(svg.contains("currentColor"));
    assert!(!svg.contains(INK_HEX));
    // No data: no "no data".
    assert!(!texts.contains(&"no data"));
}

#[test]
fn none_values_break_the_line() {
    let r = sample_report();
    // Known at 1..=4, 7..=11 (0, 5 and 6 are None): two runs.
    let svg = chart_svg(&r.charts[0], &r.times, &[], &Palette::default());
    let doc = parse(&svg);
    let lines = with_class(&doc, "polyline", "series");
    assert_eq!(lines.len(), 2, "{svg}");
    let n = |l: &roxmltree::Node| l.attribute("points").unwrap().split_whitespace().count();
    assert_eq!((n(&lines[0]), n(&lines[1])), (4, 5));
    assert!(with_class(&doc, "polyline", "marker").is_empty());
    // A lone value between two gaps is a dot.
    let mut c = r.charts[0].clone();
    c.series[0].values = vec![None, Some(1.0), None, Some(2.0), Some(3.0)];
    let svg = chart_svg(&c, &r.times[..5], &[], &Palette::default());
    let doc = parse(&svg);
    assert_eq!(with_class(&doc, "polyline", "series").len(), 1);
    assert_eq!(with_class(&doc, "circle", "series-point").len(), 1);
}

#[test]
fn a_chart_without_data_keeps_its_axes_and_says_so() {
    let r = sample_report();
    let svg = chart_svg(&r.charts[2], &r.times, &r.markers, &Palette::default());
    let doc = parse(&svg);
    let texts = texts(&doc);
    assert!(texts.contains(&"no data"), "{texts:?}");
    assert!(texts.contains(&"no apiserver scrapes in this recording"));
    assert!(texts.contains(&"time (UTC)") && texts.contains(&"seconds"));
    assert!(
        !texts.iter().any(|t| t.ends_with(" ms")),
        "a scale without data: {texts:?}"
    );
    assert!(with_class(&doc, "polyline", "series").is_empty());
    // No times at all either.
    let svg = chart_svg(&r.charts[2], &[], &[], &Palette::default());
    parse(&svg);
}

#[test]
fn hostile_names_are_escaped_in_the_svg() {
    let r = sample_report();
    let mut c = r.charts[0].clone();
    c.title = "</title><script>alert(1)</script>".into();
    c.series[0].name = "a<b>&\"c\"".into();
    let svg = chart_svg(&c, &r.times, &r.markers, &Palette::default());
    assert!(!svg.contains("<script>"));
    let doc = parse(&svg);
    assert!(doc.descendants().all(|n| !n.has_tag_name("script")));
    assert!(texts(&doc).contains(&"a<b>&\"c\""));
}

#[test]
fn the_palette_comes_from_the_theme_and_reads_on_both_backgrounds() {
    let p = Palette::default();
    assert!(p.series.len() >= 5, "{p:?}");
    assert_eq!(p.marker_colour("gone"), p.alert);
    assert_eq!(p.marker_colour("threshold"), p.warn);
    assert_eq!(p.marker_colour("compaction"), p.note);
    assert_eq!(p.marker_colour("bookmark"), p.bookmark);
    assert_ne!(p.alert, p.warn);
    // The default theme's series head is light cyan; the light theme's is blue.
    let (spec, _) = crate::config::load_theme(Some(std::path::Path::new("light")));
    let light = Palette::from_theme(&Theme::from_spec(
        &spec,
        crate::tui::theme::ColorDepth::TrueColor,
        &mut Vec::new(),
    ));
    assert_ne!(light.series[0], p.series[0]);
    assert_eq!(web_colour(TermColor::White), None);
    assert_eq!(web_colour(TermColor::Rgb(250, 250, 250)), None);
}

#[test]
fn axis_labels_are_short_and_in_utc() {
    assert_eq!(time_label(T0 + 5, 110, false), "07:40:05");
    assert_eq!(time_label(T0, 3600, false), "07:40");
    assert_eq!(time_label(T0, 86_400, true), "12-04 07:40");
    assert_eq!(
        time_ticks(T0 + 3, T0 + 110),
        (1..8).map(|i| T0 + i * 15).collect::<Vec<_>>()
    );
    assert!(time_ticks(T0, T0 + 7200).iter().all(|t| t % 900 == 0));
    assert_eq!(axis_value(12_000.0, "revisions"), "12k");
    assert_eq!(axis_value(1.5, "revisions/s"), "1.50");
    assert_eq!(axis_value(0.02, "seconds"), "20 ms");
    assert_eq!(y_range(None), (0.0, 1.0));
    assert_eq!(y_range(Some((2.0, 2.0))).0, 0.0);
    assert!(y_range(Some((1000.0, 1132.0))).0 > 900.0);
}

#[test]
fn the_standalone_file_is_xml_with_its_own_ink() {
    let r = sample_report();
    let s = standalone(&chart_svg(
        &r.charts[0],
        &r.times,
        &r.markers,
        &Palette::default(),
    ));
    assert!(s.starts_with("<?xml"));
    let doc = parse(&s);
    assert!(doc.descendants().any(|n| n.has_tag_name("style")));
}
