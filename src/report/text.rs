//! The report's words and numbers, shared by the HTML and the Markdown renderers: times in
//! UTC, values with their units, the span line, and "what stands out" as plain sentences.
//! Everything here is plain text; each renderer escapes it for its own format.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::model::{Report, StandsOut};
use crate::derive::units;

/// Unix seconds of `t` (before 1970: 0).
pub(crate) fn secs(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// `2026-12-03T07:40:00Z`.
pub(crate) fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

/// `07:40:00` of unix seconds `s` (UTC).
pub(crate) fn hms(s: i64) -> String {
    let d = s.rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", d / 3600, d % 3600 / 60, d % 60)
}

/// `2026-12-03` of unix seconds `s` (UTC).
fn date(s: i64) -> String {
    let t = UNIX_EPOCH + Duration::from_secs(s.max(0) as u64);
    rfc3339(t)[..10].to_string()
}

/// How a moment of the report is written: the time of day in UTC, with the date as well
/// when the span covers more than one UTC day.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    multi_day: bool,
}

impl Clock {
    pub(crate) fn of(report: &Report) -> Clock {
        let (a, b) = (secs(report.span.from), secs(report.span.to));
        Clock {
            multi_day: a.div_euclid(86_400) != b.div_euclid(86_400),
        }
    }

    /// `07:40:00` or `2026-12-03 07:40:00` (UTC, unix seconds).
    pub(crate) fn at_secs(self, s: i64) -> String {
        if self.multi_day {
            format!("{} {}", date(s), hms(s))
        } else {
            hms(s)
        }
    }

    /// [`Clock::at_secs`] of a moment, followed by " UTC".
    pub(crate) fn utc(self, t: SystemTime) -> String {
        format!("{} UTC", self.at_secs(secs(t)))
    }
}

/// The span as one line: `2026-12-03 07:40:00 – 07:41:50 UTC (1 min 50 s, revisions 1,000 to
/// 1,132); the recorder's clock read UTC-05:00`.
pub(crate) fn span_line(report: &Report) -> String {
    let s = &report.span;
    let (a, b) = (secs(s.from), secs(s.to));
    let end = if date(a) == date(b) {
        hms(b)
    } else {
        format!("{} {}", date(b), hms(b))
    };
    let mut line = format!(
        "{} {} – {} UTC ({}, revisions {} to {})",
        date(a),
        hms(a),
        end,
        duration((b - a).max(0)),
        units::thousands_i(s.from_revision),
        units::thousands_i(s.to_revision)
    );
    match s.recorder_utc_offset_seconds {
        Some(0) => line.push_str("; the recorder's clock was on UTC"),
        Some(o) => line.push_str(&format!(
            "; the recorder's clock read UTC{} (local {} – {})",
            crate::config::zone::offset_text(o),
            hms(a + o),
            hms(b + o)
        )),
        None => line.push_str("; the recorder's UTC offset was not recorded"),
    }
    line
}

/// The whole recording's span, when the report covers only part of it.
pub(crate) fn recording_line(report: &Report) -> Option<String> {
    let s = &report.span;
    (s.recording_start != s.from || s.recording_end != s.to).then(|| {
        format!(
            "The recording runs from {} to {}; this report covers part of it.",
            rfc3339(s.recording_start),
            rfc3339(s.recording_end)
        )
    })
}

/// `1 h 2 min`, `1 min 50 s`, `40 s`.
pub(crate) fn duration(s: i64) -> String {
    match s {
        s if s >= 3600 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        s if s >= 60 => format!("{} min {} s", s / 60, s % 60),
        s => format!("{s} s"),
    }
}

/// A value in `unit` (one of [`super::model::Chart::unit`]'s): bytes in binary units,
/// seconds as ms below one second, rates with one decimal.
pub(crate) fn value(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    match unit {
        "bytes" => signed_bytes(v),
        "bytes/s" => format!("{}/s", signed_bytes(v)),
        "seconds" if v.abs() < 1.0 => format!("{} ms", trim(v * 1000.0)),
        "seconds" => format!("{} s", trim(v)),
        "revisions" | "objects" | "watchers" if v.fract() == 0.0 && v.abs() < 9e15 => {
            format!("{} {unit}", units::thousands_i(v as i64))
        }
        u => format!("{} {u}", trim(v)),
    }
}

/// A cell of a chart's data table: the value, or "—" where nothing was recorded (see
/// [`NOT_RECORDED`]).
pub(crate) fn cell(v: Option<f64>, unit: &str) -> String {
    v.map_or_else(|| "—".to_string(), |v| value(v, unit))
}

/// What "—" means in a data table.
pub(crate) const NOT_RECORDED: &str = "— : not recorded in that interval";

fn signed_bytes(v: f64) -> String {
    let b = units::bytes(v.abs().round() as u64);
    if v < 0.0 {
        format!("-{b}")
    } else {
        b
    }
}

/// Up to three significant decimals, no trailing zeros: `1.5`, `0.25`, `1200`.
fn trim(v: f64) -> String {
    let s = if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// One line of "what stands out": when (if it is a moment) and the sentence.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Item {
    pub at: Option<String>,
    pub text: String,
}

/// "What stands out" as sentences, in the model's order; a fact the recording did not
/// hold is said to be missing, never given as zero. The most-written keys are a table of
/// their own ([`StandsOut::most_written`]).
pub(crate) fn stands_out(report: &Report) -> Vec<Item> {
    let c = Clock::of(report);
    let s: &StandsOut = &report.stands_out;
    let mut out = Vec::new();
    let item = |at: Option<SystemTime>, text: String| Item {
        at: at.map(|t| c.utc(t)),
        text,
    };
    if report.source.lost_instants > 0 {
        out.push(item(
            None,
            format!(
                "These findings cover only the readable part of the recording: {} of {} \
                 sampling instants fell where damage left the state incomplete.",
                report.source.lost_instants,
                report.times.len()
            ),
        ));
    }
    for m in &s.incidents {
        out.push(item(
            Some(m.at),
            format!("{} (revision {}).", m.label, units::thousands_i(m.revision)),
        ));
    }
    match &s.largest_burst {
        Some(b) => out.push(item(
            Some(b.at),
            format!(
                "Largest burst: {} writes/s to {} over the {} s ending then{}{}.",
                trim(b.writes_per_second),
                b.resource,
                report.span.interval_seconds,
                b.median_writes_per_second
                    .map(|m| format!(" (its median in this span: {}/s)", trim(m)))
                    .unwrap_or_default(),
                b.writer
                    .as_ref()
                    .map(|w| format!(", most of them by {w}"))
                    .unwrap_or_default()
            ),
        )),
        None => out.push(item(None, "Largest burst: no writes in this span.".into())),
    }
    match &s.worst_lag {
        Some(l) => out.push(item(
            Some(l.at),
            format!("Worst informer lag: {}.", lag_words(l)),
        )),
        None => out.push(item(
            None,
            "Informer lag: none measured (no informers in this recording, or never behind).".into(),
        )),
    }
    if let Some(l) = &s.closest_to_window {
        out.push(item(
            Some(l.at),
            format!("Closest to the compaction window: {}.", lag_words(l)),
        ));
    }
    for e in &s.gone_and_relists {
        let text = match e.what {
            "gone" => format!(
                "410 Gone: the {} informer's watch was too old and had to relist.",
                e.resource
            ),
            "relist" => format!("Relist of {}.", e.resource),
            other => format!("{other}: {}.", e.resource),
        };
        out.push(item(Some(e.at), text));
    }
    match &s.slowest_etcd {
        Some(w) => out.push(item(
            Some(w.at),
            format!(
                "Slowest etcd request: {} {} with a p99 of {}{}.",
                w.operation,
                w.resource,
                if w.at_least { "at least " } else { "" },
                value(w.p99_seconds, "seconds")
            ),
        )),
        None => out.push(item(
            None,
            "etcd request latency: not recorded (no apiserver scrapes in this span).".into(),
        )),
    }
    match &s.db_growth {
        Some(g) => {
            let mut t = format!(
                "etcd's database: {} at the start, {} at the end ({}{}).",
                value(g.first_bytes, "bytes"),
                value(g.last_bytes, "bytes"),
                if g.last_bytes >= g.first_bytes {
                    "+"
                } else {
                    ""
                },
                value(g.last_bytes - g.first_bytes, "bytes")
            );
            let in_use = |v: Option<f64>| v.map_or("not recorded".into(), |v| value(v, "bytes"));
            if g.first_in_use_bytes.is_some() || g.last_in_use_bytes.is_some() {
                t.push_str(&format!(
                    " In use: {} at the start, {} at the end.",
                    in_use(g.first_in_use_bytes),
                    in_use(g.last_in_use_bytes)
                ));
            }
            match g.quota_bytes {
                Some(q) if q > 0.0 => t.push_str(&format!(
                    " Quota {} ({:.1}% used at the end).",
                    value(q, "bytes"),
                    g.last_bytes / q * 100.0
                )),
                _ => t.push_str(" Quota: not recorded."),
            }
            out.push(item(None, t));
        }
        None => out.push(item(
            None,
            "etcd's database size: not recorded (no etcd scrapes in this span).".into(),
        )),
    }
    out
}

/// `N revision(s)`.
fn revisions(n: i64) -> String {
    format!(
        "{} revision{}",
        units::thousands_i(n),
        if n == 1 { "" } else { "s" }
    )
}

/// One informer's lag against the window, as a clause.
fn lag_words(l: &super::model::WorstLag) -> String {
    let seconds = l
        .lag_seconds
        .map(|s| format!(" ({})", value(s, "seconds")))
        .unwrap_or_default();
    let window = match (l.window_revisions, l.fraction_of_window) {
        (Some(w), Some(f)) => format!(
            ", {:.0}% of the compaction window of {} (at 100% a resumed watch gets 410 Gone)",
            f * 100.0,
            revisions(w)
        ),
        _ => ", before any compaction (etcd still held all of history; a 410 could only come \
               from the watch cache)"
            .to_string(),
    };
    format!(
        "the {} informer was {}{seconds} behind{window}",
        l.resource,
        revisions(l.lag_revisions)
    )
}

/// The heading of the most-written keys' table.
pub(crate) fn most_written_heading(s: &StandsOut) -> &'static str {
    if s.most_written_exact || s.most_written.is_empty() {
        "Most written keys (writes in this span)"
    } else {
        "Most written keys (at least these many writes: rarer keys were not all counted)"
    }
}

/// `yes`/`no`.
pub(crate) fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// An optional fact: its text, or "not recorded".
pub(crate) fn or_not_recorded(v: Option<&str>) -> String {
    v.map_or_else(|| "not recorded".into(), str::to_string)
}

/// A byte count the model may lack (a key absent at one end).
pub(crate) fn opt_bytes(v: Option<u64>) -> String {
    v.map_or_else(|| "—".into(), units::bytes)
}

/// Escapes text for HTML and XML (`&`, `<`, `>`, both quotes).
pub(crate) fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample::{sample_report, T0};

    #[test]
    fn values_carry_units_and_missing_is_not_zero() {
        assert_eq!(value(0.25, "seconds"), "250 ms");
        assert_eq!(value(1.5, "seconds"), "1.5 s");
        assert_eq!(value(1536.0, "bytes"), "1.5 KiB");
        assert_eq!(value(12.0, "revisions/s"), "12 revisions/s");
        assert_eq!(value(1200.0, "revisions"), "1,200 revisions");
        assert_eq!(cell(None, "bytes"), "—");
        assert_eq!(hms(T0), "07:40:00");
    }

    #[test]
    fn span_and_stands_out_read_plainly() {
        let r = sample_report();
        let line = span_line(&r);
        assert!(
            line.starts_with("2026-12-04 07:40:00 – 07:41:50 UTC"),
            "{line}"
        );
        assert!(line.contains("UTC-05:00 (local 02:40:00"), "{line}");
        let items = stands_out(&r);
        assert_eq!(items[0].at.as_deref(), Some("07:40:40 UTC"));
        assert!(items[0].text.contains("6 writes/s to configmaps"));
        assert!(items
            .iter()
            .any(|i| i.text.contains("at least 250 ms") && i.at.is_some()));
        assert!(items
            .iter()
            .any(|i| i.text.contains("In use: not recorded")));
    }
}
