//! The report's HTML in a real browser: a hand-built report rendered to a file and opened
//! in headless Chromium logs no console error, makes no network request, and shows every
//! chart as an SVG with drawn lines and a data table with rows. The detector is shown to
//! work too: a page that reaches for a remote image is caught.

use std::time::{Duration, UNIX_EPOCH};

use regscope::report::model::*;

use crate::common::chromium::{self, Look};
use crate::common::require;

/// 2026-12-04T07:40:00Z.
const T0: i64 = 1_796_370_000;

fn report() -> Report {
    let at = |s: i64| UNIX_EPOCH + Duration::from_secs((T0 + s) as u64);
    let times: Vec<i64> = (0..30).map(|i| T0 + i * 10).collect();
    let wave = |f: fn(i64) -> Option<f64>| (0..30).map(f).collect::<Vec<_>>();
    Report {
        generated_by: "regscope test".into(),
        source: Source {
            files: vec!["test.rgs".into()],
            secrets_redacted: true,
            lost_instants: 0,
            damage: vec![],
            notes: vec![],
        },
        cluster: Cluster {
            title: "browser <check>".into(),
            endpoints: vec!["http://127.0.0.1:2379".into()],
            prefix: "/registry".into(),
            ..Default::default()
        },
        span: Span {
            from: at(0),
            to: at(290),
            recording_start: at(0),
            recording_end: at(290),
            recorder_utc_offset_seconds: None,
            from_revision: 100,
            to_revision: 400,
            interval_seconds: 10,
        },
        markers: vec![
            Marker {
                at: at(95),
                revision: 190,
                kind: "compaction",
                label: "compaction at revision 190".into(),
            },
            Marker {
                at: at(200),
                revision: 300,
                kind: "gone",
                label: "410 Gone: <events>".into(),
            },
        ],
        sampled_at: times
            .iter()
            .map(|t| std::time::UNIX_EPOCH + std::time::Duration::from_secs(*t as u64))
            .collect(),
        figures: Default::default(),
        times,
        charts: vec![
            Chart {
                id: "writes",
                title: "Writes per second".into(),
                y_label: "revisions per second".into(),
                unit: "revisions/s",
                signals: vec!["head_rate"],
                series: vec![
                    Series {
                        name: "all".into(),
                        values: wave(|i| (i != 0 && i != 12).then_some((i % 7) as f64)),
                    },
                    Series {
                        name: "configmaps".into(),
                        values: wave(|i| (i != 0).then_some((i % 3) as f64)),
                    },
                ],
                note: None,
            },
            Chart {
                id: "db",
                title: "etcd database size".into(),
                y_label: "bytes".into(),
                unit: "bytes",
                signals: vec!["db_size"],
                series: vec![Series {
                    name: "size".into(),
                    values: wave(|i| Some(20e6 + i as f64 * 1e5)),
                }],
                note: None,
            },
        ],
        stands_out: StandsOut::default(),
        changes: Changes {
            from_revision: 100,
            to_revision: 400,
            top_keys: vec![KeyChange {
                key: "/registry/configmaps/default/<script>x</script>".into(),
                resource: "configmaps".into(),
                change: ChangeKind::Created,
                bytes_from: None,
                bytes_to: Some(300),
                mod_revision_from: None,
                mod_revision_to: Some(399),
                create_revision_from: None,
                create_revision_to: Some(399),
            }],
            ..Default::default()
        },
    }
}

#[test]
fn the_report_loads_in_chromium_without_errors_or_requests() {
    require!(CHROMIUM);
    let r = report();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    std::fs::write(&page, regscope::report::html::html(&r)).unwrap();
    let png = dir.path().join("report.png");
    let seen = chromium::load(&page, Look::Light, 2400, Some(&png));
    assert!(
        seen.console_errors.is_empty(),
        "console errors: {:?}",
        seen.console_errors
    );
    assert!(seen.requests.is_empty(), "requests: {:?}", seen.requests);
    assert!(
        seen.blocked.is_empty(),
        "blocked requests: {:?}",
        seen.blocked
    );
    // The DOM the browser built: every figure has an SVG with drawn lines and a data table.
    let figures: Vec<&str> = seen.dom.split("<figure").skip(1).collect();
    assert_eq!(figures.len(), r.charts.len(), "{}", seen.dom);
    for (f, c) in figures.iter().zip(&r.charts) {
        let f = &f[..f.find("</figure>").expect("figure closes")];
        assert!(f.contains("<svg"), "{}: no svg", c.id);
        assert!(
            f.contains("<polyline class=\"series\""),
            "{}: no line",
            c.id
        );
        assert_eq!(
            f.matches("<polyline class=\"marker\"").count(),
            r.markers.len(),
            "{}: a line per marker",
            c.id
        );
        let details = &f[f.find("<details").expect("data table")..];
        assert_eq!(
            details.matches("<tr").count(),
            r.times.len() + 1,
            "{}",
            c.id
        );
    }
    assert!(!seen.dom.contains("<script>x</script>"));
    assert!(seen.dom.contains("&lt;script&gt;x&lt;/script&gt;"));
    // Light: a white page, dark chart text.
    assert_eq!(seen.background, "rgb(255, 255, 255)");
    assert_eq!(seen.chart_text, "rgb(31, 35, 40)");
    // On screen the data tables are folded away.
    assert!(!seen.details_table_visible);
    // The screenshot is a PNG 1280 pixels wide.
    let bytes = std::fs::read(&png).expect("screenshot written");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(u32::from_be_bytes(bytes[16..20].try_into().unwrap()), 1280);
}

#[test]
fn the_report_turns_dark_with_the_reader_and_its_charts_follow() {
    require!(CHROMIUM);
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    std::fs::write(&page, regscope::report::html::html(&report())).unwrap();
    let seen = chromium::load(&page, Look::Dark, 1200, None);
    assert!(seen.console_errors.is_empty(), "{:?}", seen.console_errors);
    assert_eq!(seen.background, "rgb(13, 17, 23)");
    // The charts' ink is currentColor: their text takes the page's light foreground.
    assert_eq!(seen.chart_text, "rgb(230, 237, 243)");
}

#[test]
fn printed_the_report_is_black_on_white_with_its_data_tables_unfolded() {
    require!(CHROMIUM);
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    std::fs::write(&page, regscope::report::html::html(&report())).unwrap();
    let seen = chromium::load(&page, Look::Print, 1200, None);
    assert!(seen.console_errors.is_empty(), "{:?}", seen.console_errors);
    assert_eq!(seen.background, "rgb(255, 255, 255)");
    assert_eq!(seen.chart_text, "rgb(0, 0, 0)");
    assert!(seen.details_table_visible);
}

#[test]
fn the_check_catches_a_page_that_reaches_out() {
    require!(CHROMIUM);
    let dir = tempfile::tempdir().unwrap();
    let img = "<img src=\"http://127.0.0.1:9/x.png\" alt=\"x\">";
    // Under the report's policy the browser refuses the image and says so.
    let with_csp = dir.path().join("csp.html");
    std::fs::write(
        &with_csp,
        format!(
            "<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" \
             content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\
             </head><body>{img}</body></html>"
        ),
    )
    .unwrap();
    let seen = chromium::load(&with_csp, Look::Light, 600, None);
    assert!(
        seen.console_errors.iter().any(
            |e| e.contains("http://127.0.0.1:9/x.png") && e.contains("Content Security Policy")
        ),
        "no CSP error for the image: {:?}",
        seen.console_all
    );
    assert!(seen.requests.is_empty(), "{:?}", seen.requests);
    assert_eq!(seen.blocked, ["http://127.0.0.1:9/x.png (csp)"]);
    // Without it the request is made, and seen.
    let open = dir.path().join("open.html");
    std::fs::write(
        &open,
        format!("<!DOCTYPE html><html><body>{img}</body></html>"),
    )
    .unwrap();
    let seen = chromium::load(&open, Look::Light, 600, None);
    assert_eq!(seen.requests, ["http://127.0.0.1:9/x.png"], "{seen:?}");
    assert!(seen.blocked.is_empty(), "{seen:?}");
}

/// The text of a DOM fragment with the entities the report's HTML writes undone.
fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The cells of each body row of the first `<table class="{class}">` of a DOM.
fn table_rows(dom: &str, class: &str) -> Vec<Vec<String>> {
    let start = dom
        .find(&format!("<table class=\"{class}\""))
        .unwrap_or_else(|| panic!("no {class} table"));
    let table = &dom[start..start + dom[start..].find("</table>").unwrap()];
    let body = &table[table.find("<tbody>").unwrap()..];
    body.split("<tr")
        .skip(1)
        .map(|row| {
            row.split("<td")
                .skip(1)
                .map(|cell| {
                    let inner = &cell[cell.find('>').unwrap() + 1..cell.find("</td>").unwrap()];
                    // Drop tags inside a cell (the kind's colour swatch).
                    let mut text = String::new();
                    let mut in_tag = false;
                    for ch in inner.chars() {
                        match ch {
                            '<' => in_tag = true,
                            '>' => in_tag = false,
                            c if !in_tag => text.push(c),
                            _ => {}
                        }
                    }
                    unescape(&text)
                })
                .collect()
        })
        .collect()
}

/// The report of the repository's demo recording, made by the binary and opened in real
/// headless Chromium: no console error, no request, every chart with data drawn and
/// tabled, and the timeline exactly what `replay --check` lists.
#[test]
fn the_demo_recordings_report_opens_whole_in_chromium() {
    require!(CHROMIUM);
    let file = crate::record_replay::demo_recording();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    crate::record_replay::run_ok(
        "UTC",
        &[
            "report",
            file.to_str().unwrap(),
            "-o",
            page.to_str().unwrap(),
        ],
    );
    let r = crate::report::report_json(&file, &[], 0);
    let seen = chromium::load(&page, Look::Light, 2400, None);
    assert!(seen.console_errors.is_empty(), "{:?}", seen.console_errors);
    assert!(seen.requests.is_empty(), "requests: {:?}", seen.requests);
    assert!(seen.blocked.is_empty(), "blocked: {:?}", seen.blocked);
    let figures: Vec<&str> = seen.dom.split("<figure").skip(1).collect();
    let charts = r["charts"].as_array().unwrap();
    assert_eq!(figures.len(), charts.len());
    let times = r["times"].as_array().unwrap().len();
    let mut drawn = 0;
    for (f, c) in figures.iter().zip(charts) {
        let f = &f[..f.find("</figure>").expect("figure closes")];
        assert!(f.contains("<svg"), "{}: no svg", c["id"]);
        if c["note"].is_null() {
            assert!(
                f.contains("<polyline class=\"series\""),
                "{}: no line",
                c["id"]
            );
            let details = &f[f.find("<details").expect("data table")..];
            assert_eq!(details.matches("<tr").count(), times + 1, "{}", c["id"]);
            drawn += 1;
        }
    }
    // The demo has data for nearly every chart (it serves apiserver and etcd metrics).
    assert!(
        drawn >= charts.len() - 2,
        "{drawn} of {} charts drawn",
        charts.len()
    );
    let check = crate::record_replay::run_ok("UTC", &["replay", "--check", file.to_str().unwrap()]);
    let listed: Vec<String> = check
        .lines()
        .filter_map(|l| l.strip_prefix("  marker     "))
        .map(str::to_string)
        .collect();
    let shown: Vec<String> = table_rows(&seen.dom, "timeline")
        .into_iter()
        .map(|cells| format!("{}  {}", cells[0], cells[3]))
        .collect();
    assert_eq!(shown, listed);
}
