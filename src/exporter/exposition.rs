//! The families `/metrics` serves and their two text formats.
//!
//! Every derived signal ([`crate::derive::signals::SIGNALS`]) becomes one family named
//! `regscope_` + its name (a name that already starts with `regscope_` keeps it), with the
//! signal's kind, help and labels, so a number in Prometheus is the number on screen, in
//! `snapshot --json` and in the report. Three things are the exporter's own:
//!
//! - `regscope_build_info{version}` (always 1), the metadata family of Prometheus' naming
//!   practice (prometheus.io/docs/practices/naming, "_info");
//! - `regscope_recording_bytes` and `regscope_recording_files`, only while recording;
//! - `regscope_writer_writes_total{manager,operation}`: the signal `writer_writes_total`
//!   summed over resources and bounded by [`WriterSeries`] to N writers plus
//!   `manager="(other)"`, so 10,000 distinct writers are at most N+1 series.
//!
//! Formats: the text format 0.0.4 (prometheus/docs `exposition_formats.md`: `# HELP`,
//! `# TYPE`, label values escaped `\\`, `\"`, `\n`), and OpenMetrics 1.0 (OpenMetrics spec
//! `MetricFamily`: a counter family is named without `_total` and its sample with it, an
//! info family without `_info`, and the exposition ends with `# EOF`). Prometheus 2.x asks
//! for OpenMetrics first in its Accept header (scrape/scrape.go `scrapeAcceptHeader`).

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::derive::signals::{Readings, Sample, SignalKind, SIGNALS};

/// The prefix of every family regscope serves.
pub const PREFIX: &str = "regscope_";

/// The `manager` label value of the writes of every writer without its own series.
pub const OTHER_WRITERS: &str = "(other)";

/// Default N of [`WriterSeries`]: writers with their own series.
pub const DEFAULT_WRITER_SERIES: usize = 50;

/// The served name of a derived signal: `regscope_` + `name`, unless `name` already starts
/// with it (`regscope_watch_lag_revisions`).
pub fn exported_name(name: &str) -> String {
    if name.starts_with(PREFIX) {
        name.to_string()
    } else {
        format!("{PREFIX}{name}")
    }
}

/// The families' kinds as served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FamilyKind {
    Gauge,
    Counter,
    /// Metadata: one sample of value 1 whose labels are the facts (OpenMetrics `info`; a
    /// gauge in the text format 0.0.4, which has no info type).
    Info,
}

/// One family: its served name (with `_total` on a counter and `_info` on an info), kind,
/// help, and samples as (label pairs, value).
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    pub name: String,
    pub kind: FamilyKind,
    pub help: String,
    pub samples: Vec<(Vec<(&'static str, String)>, f64)>,
}

/// Every family name `/metrics` can serve (some only when there is something to say, e.g.
/// recording bytes only while recording), in the order served. Dashboards and rules are
/// checked against it.
pub fn family_names() -> Vec<String> {
    let mut v = vec![format!("{PREFIX}build_info")];
    v.extend(SIGNALS.iter().map(|s| exported_name(s.name)));
    v.push(format!("{PREFIX}recording_bytes"));
    v.push(format!("{PREFIX}recording_files"));
    v
}

/// What the exporter adds to a reading of the signal table: the recorder's state, when
/// recording.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extras {
    /// Bytes written to the recording (all files of a rolling set) and the files it holds.
    pub recording: Option<(u64, u64)>,
}

/// The writers with their own `regscope_writer_writes_total` series: at most `limit`
/// (manager, operation) pairs, the rest summed into `manager="(other)"`.
///
/// Every served counter only grows while the replica's counters do. A writer given its own
/// series takes with it only what `(other)` has not served yet: a writer first seen at this
/// scrape starts at its whole count, one that was in `(other)` at the previous scrape
/// leaves its count of then in `(other)`; a writer that loses its series hands all its
/// writes to `(other)`. At each scrape the writers with the most writes take free places;
/// a writer without a series takes the place of the smallest writer with one when it has
/// made more than twice as many writes (so two close writers do not swap at every scrape).
/// When the replica's counters restart (a replaced etcd), every place is given up.
#[derive(Clone, Debug)]
pub struct WriterSeries {
    limit: usize,
    /// (manager, operation) → the writes that stay in `(other)` for it.
    placed: HashMap<(String, String), f64>,
    /// The writes of each writer served in `(other)` at the previous scrape.
    in_other: HashMap<(String, String), f64>,
    /// Every writer's writes summed, at the previous scrape.
    last_total: f64,
}

impl WriterSeries {
    /// At most `limit` writers with their own series (0: every writer in `(other)`).
    pub fn new(limit: usize) -> Self {
        WriterSeries {
            limit,
            placed: HashMap::new(),
            in_other: HashMap::new(),
            last_total: 0.0,
        }
    }

    /// The bounded samples from the signal's (resource, manager, operation) samples.
    fn bound(&mut self, samples: &[Sample]) -> Vec<(Vec<(&'static str, String)>, f64)> {
        let mut by: HashMap<(String, String), f64> = HashMap::new();
        for s in samples {
            if let [_, manager, operation] = s.labels.as_slice() {
                *by.entry((manager.clone(), operation.clone())).or_default() += s.value;
            }
        }
        let total: f64 = by.values().sum();
        // The replica's counters restarted: every series would go backwards.
        let restarted = total < self.last_total
            || self
                .placed
                .iter()
                .any(|(k, from)| by.get(k).copied().unwrap_or(0.0) < *from);
        if restarted {
            self.placed.clear();
            self.in_other.clear();
        }
        self.last_total = total;
        let mut ranked: Vec<(&(String, String), f64)> = by.iter().map(|(k, v)| (k, *v)).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        for (k, v) in &ranked {
            if self.placed.contains_key(*k) || self.limit == 0 {
                continue;
            }
            let from = self.in_other.get(*k).copied().unwrap_or(0.0);
            if self.placed.len() < self.limit {
                self.placed.insert((*k).clone(), from);
                continue;
            }
            // The smallest placed writer, by writes made in total.
            let smallest = self
                .placed
                .keys()
                .map(|p| (p, by.get(p).copied().unwrap_or(0.0)))
                .min_by(|a, b| a.1.total_cmp(&b.1).then_with(|| b.0.cmp(a.0)))
                .map(|(p, n)| (p.clone(), n));
            match smallest {
                Some((p, n)) if *v > 2.0 * n => {
                    self.placed.remove(&p);
                    self.placed.insert((*k).clone(), from);
                }
                // Ranked by writes: no later writer beats the smallest either.
                _ => break,
            }
        }
        let mut out = Vec::with_capacity(self.placed.len() + 1);
        let mut other = 0.0;
        self.in_other.clear();
        for (k, v) in &ranked {
            match self.placed.get(*k) {
                Some(from) => {
                    other += from;
                    out.push((
                        vec![("manager", k.0.clone()), ("operation", k.1.clone())],
                        v - from,
                    ));
                }
                None => {
                    other += v;
                    self.in_other.insert((*k).clone(), *v);
                }
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.push((
            vec![
                ("manager", OTHER_WRITERS.to_string()),
                ("operation", String::new()),
            ],
            other,
        ));
        out
    }
}

/// The families of one reading, in [`family_names`] order; a signal with no sample is left
/// out (never a 0 regscope does not know).
pub fn families(readings: &Readings, writers: &mut WriterSeries, extras: &Extras) -> Vec<Family> {
    let mut out = Vec::with_capacity(SIGNALS.len() + 3);
    out.push(Family {
        name: format!("{PREFIX}build_info"),
        kind: FamilyKind::Info,
        help: "regscope's version (Cargo package version); always 1".into(),
        samples: vec![(
            vec![("version", env!("CARGO_PKG_VERSION").to_string())],
            1.0,
        )],
    });
    for s in SIGNALS {
        let got = readings.get(s.name);
        if got.is_empty() {
            continue;
        }
        let kind = match s.kind {
            SignalKind::Gauge => FamilyKind::Gauge,
            SignalKind::Counter => FamilyKind::Counter,
        };
        let samples = if s.name == "writer_writes_total" {
            writers.bound(got)
        } else {
            got.iter()
                .map(|x| {
                    let labels = s.labels.iter().copied().zip(x.labels.iter().cloned());
                    (labels.collect(), x.value)
                })
                .collect()
        };
        let help = if s.name == "writer_writes_total" {
            format!(
                "writes per managedFields writer (manager, operation) summed over resources; at most {} writers have their own series, the rest are manager=\"{OTHER_WRITERS}\"; names in parentheses are writes no manager is named for",
                writers.limit
            )
        } else {
            s.help.to_string()
        };
        out.push(Family {
            name: exported_name(s.name),
            kind,
            help: format!("{help} ({})", s.unit),
            samples,
        });
    }
    if let Some((bytes, files)) = extras.recording {
        out.push(Family {
            name: format!("{PREFIX}recording_bytes"),
            kind: FamilyKind::Gauge,
            help: "bytes the recording holds on disk (every file of a rolling set)".into(),
            samples: vec![(Vec::new(), bytes as f64)],
        });
        out.push(Family {
            name: format!("{PREFIX}recording_files"),
            kind: FamilyKind::Gauge,
            help: "files of the recording (more than 1 only with --keep-last)".into(),
            samples: vec![(Vec::new(), files as f64)],
        });
    }
    out
}

/// The two exposition formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `text/plain; version=0.0.4`.
    Text,
    /// `application/openmetrics-text; version=1.0.0`.
    OpenMetrics,
}

impl Format {
    /// The format an `Accept` header asks for: OpenMetrics when it names
    /// `application/openmetrics-text` with a quality above 0 and not below that of
    /// `text/plain` (RFC 9110 §12.5.1 `q`, 1 when absent), else the text format.
    pub fn negotiate(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::Text;
        };
        let (mut om, mut text) = (0.0f64, 0.0f64);
        for part in accept.split(',') {
            let mut it = part.split(';').map(str::trim);
            let media = it.next().unwrap_or("");
            let q = it
                .filter_map(|p| p.strip_prefix("q="))
                .find_map(|q| q.parse::<f64>().ok())
                .unwrap_or(1.0);
            match media {
                "application/openmetrics-text" => om = om.max(q),
                "text/plain" => text = text.max(q),
                _ => {}
            }
        }
        if om > 0.0 && om >= text {
            Format::OpenMetrics
        } else {
            Format::Text
        }
    }

    /// The `Content-Type` of a body in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// Renders `families` in `format`.
pub fn render(families: &[Family], format: Format) -> String {
    let n: usize = families.iter().map(|f| f.samples.len()).sum();
    let mut out = String::with_capacity(256 * families.len() + 96 * n);
    for f in families {
        let (family, type_word) = match (format, f.kind) {
            (Format::Text, FamilyKind::Counter) => (f.name.as_str(), "counter"),
            (Format::Text, _) => (f.name.as_str(), "gauge"),
            (Format::OpenMetrics, FamilyKind::Counter) => {
                (f.name.strip_suffix("_total").unwrap_or(&f.name), "counter")
            }
            (Format::OpenMetrics, FamilyKind::Info) => {
                (f.name.strip_suffix("_info").unwrap_or(&f.name), "info")
            }
            (Format::OpenMetrics, FamilyKind::Gauge) => (f.name.as_str(), "gauge"),
        };
        out.push_str("# HELP ");
        out.push_str(family);
        out.push(' ');
        escape_help(&mut out, &f.help, format);
        out.push('\n');
        let _ = writeln!(out, "# TYPE {family} {type_word}");
        for (labels, value) in &f.samples {
            out.push_str(&f.name);
            if !labels.is_empty() {
                out.push('{');
                for (i, (k, v)) in labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(k);
                    out.push_str("=\"");
                    escape_label(&mut out, v);
                    out.push('"');
                }
                out.push('}');
            }
            out.push(' ');
            push_value(&mut out, *value);
            out.push('\n');
        }
    }
    if format == Format::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

fn escape_label(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// HELP text: `\` and newlines escaped in both formats; OpenMetrics also escapes `"`.
fn escape_help(out: &mut String, v: &str, format: Format) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '"' if format == Format::OpenMetrics => out.push_str("\\\""),
            c => out.push(c),
        }
    }
}

/// A value as both formats write it: integers without a fraction, `NaN`, `+Inf`, `-Inf`.
fn push_value(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        let _ = write!(out, "{}", v as i64);
    } else {
        let _ = write!(out, "{v}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writers(pairs: &[(&str, &str, &str, f64)]) -> Vec<Sample> {
        pairs
            .iter()
            .map(|(r, m, o, v)| Sample {
                labels: vec![r.to_string(), m.to_string(), o.to_string()],
                value: *v,
            })
            .collect()
    }

    fn value_of(out: &[(Vec<(&'static str, String)>, f64)], manager: &str) -> Option<f64> {
        out.iter().find(|(l, _)| l[0].1 == manager).map(|(_, v)| *v)
    }

    #[test]
    fn ten_thousand_writers_are_n_plus_one_series_and_every_write_is_counted() {
        let mut w = WriterSeries::new(5);
        let many: Vec<Sample> = (0..10_000)
            .map(|i| Sample {
                labels: vec!["pods".into(), format!("m{i}"), "Update".into()],
                value: (i % 7 + 1) as f64,
            })
            .collect();
        let out = w.bound(&many);
        assert_eq!(out.len(), 6);
        let total: f64 = many.iter().map(|s| s.value).sum();
        let served: f64 = out.iter().map(|(_, v)| v).sum();
        assert_eq!(served, total);
        // Placed at the first scrape with their whole counts: the five biggest.
        let placed: Vec<f64> = out
            .iter()
            .filter(|(l, _)| l[0].1 != OTHER_WRITERS)
            .map(|(_, v)| *v)
            .collect();
        assert_eq!(placed, [7.0; 5]);
        assert_eq!(value_of(&out, OTHER_WRITERS), Some(total - 35.0));
        // A writer that was in (other) and now leads leaves there what it had made.
        let mut more = many.clone();
        more[0].value = 10_000.0;
        let out = w.bound(&more);
        assert_eq!(out.len(), 6);
        assert_eq!(value_of(&out, "m0"), Some(10_000.0 - 1.0));
        let served: f64 = out.iter().map(|(_, v)| v).sum();
        assert_eq!(served, total - 1.0 + 10_000.0);
    }

    #[test]
    fn served_counters_never_go_back_when_writers_swap_places() {
        let mut w = WriterSeries::new(1);
        let a = w.bound(&writers(&[("pods", "kubelet", "Update", 10.0)]));
        assert_eq!(value_of(&a, "kubelet"), Some(10.0));
        // A bigger writer arrives: more than twice the smallest placed one takes its place.
        let b = w.bound(&writers(&[
            ("pods", "kubelet", "Update", 12.0),
            ("pods", "storage-version-migrator", "Update", 100.0),
        ]));
        assert_eq!(value_of(&b, "kubelet"), None);
        assert_eq!(value_of(&b, "storage-version-migrator"), Some(100.0));
        assert_eq!(value_of(&b, OTHER_WRITERS), Some(12.0));
        let c = w.bound(&writers(&[
            ("pods", "kubelet", "Update", 13.0),
            ("pods", "storage-version-migrator", "Update", 150.0),
            ("configmaps", "storage-version-migrator", "Update", 5.0),
        ]));
        assert_eq!(value_of(&c, "storage-version-migrator"), Some(155.0));
        assert_eq!(value_of(&c, OTHER_WRITERS), Some(13.0));
        // Close writers do not swap.
        let d = w.bound(&writers(&[
            ("pods", "kubelet", "Update", 200.0),
            ("pods", "storage-version-migrator", "Update", 155.0),
        ]));
        assert_eq!(value_of(&d, "storage-version-migrator"), Some(155.0));
    }

    #[test]
    fn a_restart_of_the_replicas_counters_gives_up_every_place() {
        let mut w = WriterSeries::new(2);
        w.bound(&writers(&[("pods", "kubelet", "Update", 50.0)]));
        let after = w.bound(&writers(&[("pods", "kubelet", "Update", 3.0)]));
        assert_eq!(value_of(&after, "kubelet"), Some(3.0));
        assert_eq!(value_of(&after, OTHER_WRITERS), Some(0.0));
    }

    #[test]
    fn both_formats_name_counters_and_info_as_their_specs_say() {
        let fams = vec![
            Family {
                name: "regscope_build_info".into(),
                kind: FamilyKind::Info,
                help: "v".into(),
                samples: vec![(vec![("version", "0.1.0".into())], 1.0)],
            },
            Family {
                name: "regscope_gaps_total".into(),
                kind: FamilyKind::Counter,
                help: "a \"gap\"\\n".into(),
                samples: vec![(Vec::new(), 2.0)],
            },
            Family {
                name: "regscope_keys".into(),
                kind: FamilyKind::Gauge,
                help: "k".into(),
                samples: vec![(vec![("resource", "a\"b\\c\nd".into())], 0.5)],
            },
        ];
        let text = render(&fams, Format::Text);
        assert!(text.contains(
            "# TYPE regscope_build_info gauge\nregscope_build_info{version=\"0.1.0\"} 1\n"
        ));
        assert!(text.contains("# HELP regscope_gaps_total a \"gap\"\\\\n\n# TYPE regscope_gaps_total counter\nregscope_gaps_total 2\n"));
        assert!(text.contains("regscope_keys{resource=\"a\\\"b\\\\c\\nd\"} 0.5\n"));
        assert!(!text.contains("# EOF"));
        let om = render(&fams, Format::OpenMetrics);
        assert!(
            om.contains("# TYPE regscope_build info\nregscope_build_info{version=\"0.1.0\"} 1\n")
        );
        assert!(om.contains("# HELP regscope_gaps a \\\"gap\\\"\\\\n\n# TYPE regscope_gaps counter\nregscope_gaps_total 2\n"));
        assert!(om.ends_with("# EOF\n"));
    }

    #[test]
    fn the_accept_header_chooses_the_format() {
        // Prometheus 2.42's scrape Accept header.
        let prom = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::negotiate(Some(prom)), Format::OpenMetrics);
        assert_eq!(Format::negotiate(Some("text/plain")), Format::Text);
        assert_eq!(Format::negotiate(None), Format::Text);
        assert_eq!(
            Format::negotiate(Some("application/openmetrics-text;q=0")),
            Format::Text
        );
        // A client that prefers the text format gets it.
        assert_eq!(
            Format::negotiate(Some(
                "text/plain;version=0.0.4;q=1,application/openmetrics-text;version=1.0.0;q=0.1"
            )),
            Format::Text
        );
    }

    #[test]
    fn every_signal_is_a_family_with_one_prefix() {
        let names = family_names();
        assert_eq!(names.len(), SIGNALS.len() + 3);
        for n in &names {
            assert!(
                n.starts_with(PREFIX) && !n[PREFIX.len()..].starts_with(PREFIX),
                "{n}"
            );
        }
        assert!(names.contains(&"regscope_watch_lag_revisions".to_string()));
    }
}
