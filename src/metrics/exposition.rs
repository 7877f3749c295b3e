//! The Prometheus text exposition format (0.0.4), as kube-apiserver and etcd serve it on
//! `/metrics`.
//!
//! Input: the whole response body as bytes (never assumed to be valid UTF-8 as a whole: a bad
//! line is skipped, not the scrape). Output: an [`Exposition`] with every `# TYPE` family,
//! every sample (name, labels in order with escapes resolved, value, optional timestamp in
//! milliseconds) and every line that could not be read, with its number and why. Nothing is
//! dropped silently.
//!
//! Why not the `prometheus-parse` crate (0.2.5): it loses label values containing `=`, `,` or
//! `}`, keeps escapes, drops `name{}` lines and names containing `:` without a word. This
//! parser follows the format's grammar instead: a metric name `[a-zA-Z_:][a-zA-Z0-9_:]*`,
//! optional `{label="value",…}` with `\\`, `\"` and `\n` escapes inside quotes and an
//! optional trailing comma, a float value (`+Inf`, `-Inf`, `NaN` included) and an optional
//! integer timestamp.

use std::fmt;

/// A metric family's type from `# TYPE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricType {
    /// Monotonic counter (resets to 0 on process restart).
    Counter,
    /// Gauge.
    Gauge,
    /// Histogram: `_bucket{le=…}`, `_sum`, `_count` samples.
    Histogram,
    /// Summary: `{quantile=…}`, `_sum`, `_count` samples.
    Summary,
    /// `untyped`, or a type word this parser does not know.
    Untyped,
}

impl MetricType {
    fn parse(s: &str) -> MetricType {
        match s {
            "counter" => MetricType::Counter,
            "gauge" => MetricType::Gauge,
            "histogram" => MetricType::Histogram,
            "summary" => MetricType::Summary,
            _ => MetricType::Untyped,
        }
    }
}

/// A `# TYPE` (and `# HELP`) family.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    /// Family name, e.g. `etcd_request_duration_seconds`.
    pub name: String,
    /// Declared type.
    pub kind: MetricType,
    /// `# HELP` text (escapes resolved), empty when absent.
    pub help: String,
}

/// One sample line.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Metric name as written, e.g. `etcd_request_duration_seconds_bucket`.
    pub name: String,
    /// Labels in the order written, values unescaped.
    pub labels: Vec<(String, String)>,
    /// The value (`+Inf`, `-Inf` and `NaN` allowed).
    pub value: f64,
    /// Optional timestamp, milliseconds since the Unix epoch.
    pub timestamp_ms: Option<i64>,
}

impl Sample {
    /// The value of label `name`, if present.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A line that could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong, e.g. `unterminated label value`.
    pub reason: String,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

/// A parsed `/metrics` body.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Exposition {
    /// Families in the order of their `# TYPE` lines.
    pub families: Vec<Family>,
    /// Samples in the order written.
    pub samples: Vec<Sample>,
    /// Lines that could not be read (shown as "n lines skipped", never dropped silently).
    pub skipped: Vec<Skipped>,
}

impl Exposition {
    /// The family a sample belongs to: its own name, or for `_bucket`, `_sum`, `_count`
    /// (histograms, summaries) and `_total` the name without the suffix, when such a family
    /// was declared.
    pub fn family_of(&self, sample_name: &str) -> Option<&Family> {
        let find = |n: &str| self.families.iter().find(|f| f.name == n);
        find(sample_name).or_else(|| {
            ["_bucket", "_sum", "_count", "_total"]
                .iter()
                .find_map(|s| sample_name.strip_suffix(s).and_then(find))
        })
    }

    /// Samples named exactly `name`.
    pub fn samples_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |s| s.name == name)
    }
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b':'
}

fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b':'
}

/// Parses a whole body. Never fails: unreadable lines go into [`Exposition::skipped`].
pub fn parse(body: &[u8]) -> Exposition {
    let mut out = Exposition::default();
    for (i, raw) in body.split(|&b| b == b'\n').enumerate() {
        let line_no = i + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let Ok(line) = std::str::from_utf8(raw) else {
            out.skipped.push(Skipped {
                line: line_no,
                reason: "not valid UTF-8".into(),
            });
            continue;
        };
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(comment) = t.strip_prefix('#') {
            comment_line(comment.trim_start(), &mut out);
            continue;
        }
        match sample_line(t) {
            Ok(s) => out.samples.push(s),
            Err(reason) => out.skipped.push(Skipped {
                line: line_no,
                reason,
            }),
        }
    }
    out
}

/// `TYPE name type` and `HELP name text`; other comments are ignored, as the format says.
fn comment_line(c: &str, out: &mut Exposition) {
    let mut parts = c.splitn(3, [' ', '\t']);
    let word = parts.next().unwrap_or("");
    let name = parts.next().unwrap_or("");
    let rest = parts.next().unwrap_or("").trim();
    if name.is_empty() {
        return;
    }
    match word {
        "TYPE" => {
            let kind = MetricType::parse(rest);
            match out.families.iter_mut().find(|f| f.name == name) {
                Some(f) => f.kind = kind,
                None => out.families.push(Family {
                    name: name.to_owned(),
                    kind,
                    help: String::new(),
                }),
            }
        }
        "HELP" => {
            let help = rest.replace("\\n", "\n").replace("\\\\", "\\");
            match out.families.iter_mut().find(|f| f.name == name) {
                Some(f) => f.help = help,
                None => out.families.push(Family {
                    name: name.to_owned(),
                    kind: MetricType::Untyped,
                    help,
                }),
            }
        }
        _ => {}
    }
}

fn sample_line(t: &str) -> Result<Sample, String> {
    let b = t.as_bytes();
    if !b.first().copied().is_some_and(is_name_start) {
        return Err("does not start with a metric name".into());
    }
    let end = b.iter().position(|&c| !is_name_char(c)).unwrap_or(b.len());
    let name = t[..end].to_owned();
    let mut i = end;
    let mut labels = Vec::new();
    if b.get(i) == Some(&b'{') {
        i += 1;
        loop {
            while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
                i += 1;
            }
            match b.get(i) {
                Some(b'}') => {
                    i += 1;
                    break;
                }
                None => return Err("labels not closed with }".into()),
                _ => {}
            }
            let start = i;
            if !b
                .get(i)
                .copied()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
            {
                return Err(format!("bad label name at column {}", i + 1));
            }
            while b
                .get(i)
                .copied()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
            {
                i += 1;
            }
            let label = t[start..i].to_owned();
            while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
                i += 1;
            }
            if b.get(i) != Some(&b'=') {
                return Err(format!("expected = after label {label}"));
            }
            i += 1;
            while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
                i += 1;
            }
            if b.get(i) != Some(&b'"') {
                return Err(format!("label {label}: value not quoted"));
            }
            i += 1;
            let mut value = String::new();
            loop {
                match b.get(i) {
                    None => return Err(format!("label {label}: unterminated value")),
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') => {
                        match b.get(i + 1) {
                            Some(b'\\') => value.push('\\'),
                            Some(b'"') => value.push('"'),
                            Some(b'n') => value.push('\n'),
                            // Unknown escapes are kept as written, as Prometheus does.
                            Some(&c) => {
                                value.push('\\');
                                value.push(c as char);
                            }
                            None => return Err(format!("label {label}: unterminated value")),
                        }
                        i += 2;
                    }
                    Some(_) => {
                        // Copy the run up to the next quote or backslash (UTF-8 intact).
                        let run_end = b[i..]
                            .iter()
                            .position(|&c| c == b'"' || c == b'\\')
                            .map_or(b.len(), |p| i + p);
                        value.push_str(&t[i..run_end]);
                        i = run_end;
                    }
                }
            }
            labels.push((label, value));
            while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
                i += 1;
            }
            match b.get(i) {
                Some(b',') => i += 1,
                Some(b'}') => {}
                _ => return Err(format!("expected , or }} after label {}", labels.len())),
            }
        }
    }
    let rest = t[i..].trim();
    let mut fields = rest.split_ascii_whitespace();
    let value_text = fields.next().ok_or("no value")?;
    let value = parse_value(value_text).ok_or_else(|| format!("bad value {value_text:?}"))?;
    let timestamp_ms = match fields.next() {
        Some(ts) => Some(
            ts.parse::<i64>()
                .map_err(|_| format!("bad timestamp {ts:?}"))?,
        ),
        None => None,
    };
    if fields.next().is_some() {
        return Err("unexpected text after the timestamp".into());
    }
    Ok(Sample {
        name,
        labels,
        value,
        timestamp_ms,
    })
}

/// A sample value: Go's float syntax plus `+Inf`, `-Inf`, `NaN`.
fn parse_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => s.parse::<f64>().ok().filter(|v| v.is_finite()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain `#` comment (not HELP or TYPE) is allowed anywhere by the text format,
    /// first line included (the hand-built pages under tests/fixtures/metrics open with
    /// one): ignored, neither a family nor a skipped line, even when its second word looks
    /// like a metric name.
    #[test]
    fn plain_comment_lines_are_ignored() {
        let body = b"# Built by hand from the upstream metric definitions, not captured.
#HELP-less comment
# TYPE up gauge
# up 7 is not a sample
up 1
";
        let e = parse(body);
        assert!(e.skipped.is_empty(), "{:?}", e.skipped);
        assert_eq!(e.samples.len(), 1);
        assert_eq!(e.families.len(), 1);
        assert_eq!(e.families[0].name, "up");
    }

    /// Each line `prometheus-parse` gets wrong: label values holding `=`, `,`, `{`/`}`,
    /// escaped backslashes and quotes, a space after a comma, `name{}`, and a name with `:`.
    #[test]
    fn br07_label_values_with_separators_and_escapes() {
        let body = br#"# TYPE demo_info gauge
demo_info{dims="AvailabilityZone=zone-a,LoadBalancer=app/lb-1",region="r1"} 1
demo_info{ext="{plpgsql}",db="d1"} 2
demo_info{path="C:\\DIR\\",msg="say \"hi\""} 3
demo_info{a="1", b="2"} 4
demo_info{} 5
job:demo:rate5m 6
"#;
        let e = parse(body);
        assert!(e.skipped.is_empty(), "{:?}", e.skipped);
        assert_eq!(e.samples.len(), 6);
        let l = |i: usize| e.samples[i].labels.clone();
        let kv = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        assert_eq!(
            l(0),
            vec![
                kv("dims", "AvailabilityZone=zone-a,LoadBalancer=app/lb-1"),
                kv("region", "r1")
            ]
        );
        assert_eq!(l(1), vec![kv("ext", "{plpgsql}"), kv("db", "d1")]);
        assert_eq!(l(2), vec![kv("path", "C:\\DIR\\"), kv("msg", "say \"hi\"")]);
        assert_eq!(l(3), vec![kv("a", "1"), kv("b", "2")]);
        assert!(l(4).is_empty());
        assert_eq!(e.samples[4].name, "demo_info");
        assert_eq!(e.samples[5].name, "job:demo:rate5m");
        let values: Vec<f64> = e.samples.iter().map(|s| s.value).collect();
        assert_eq!(values, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(e.families[0].kind, MetricType::Gauge);
        assert_eq!(e.family_of("demo_info").unwrap().name, "demo_info");
    }

    #[test]
    fn unreadable_lines_are_counted_with_their_reason() {
        let body = b"ok 1\nbroken{a=\"x} 2\n{x=\"1\"} 3\nno_value\nbad 1.2.3\nts 1 notatime\nfine 2 1700000000000\n\xff\xfe 9\n";
        let e = parse(body);
        assert_eq!(e.samples.len(), 2);
        assert_eq!(e.samples[1].timestamp_ms, Some(1_700_000_000_000));
        let lines: Vec<usize> = e.skipped.iter().map(|s| s.line).collect();
        assert_eq!(lines, vec![2, 3, 4, 5, 6, 8]);
        assert!(
            e.skipped[0].reason.contains("unterminated"),
            "{}",
            e.skipped[0]
        );
    }

    #[test]
    fn special_values_help_and_histogram_families() {
        let body = b"# HELP h_seconds Latency \\\\ of x\\nsecond line\n# TYPE h_seconds histogram\nh_seconds_bucket{le=\"0.1\"} 1\nh_seconds_bucket{le=\"+Inf\"} 3\nh_seconds_sum 0.5\nh_seconds_count 3\ng -Inf\nn NaN\n";
        let e = parse(body);
        assert!(e.skipped.is_empty());
        let f = e.family_of("h_seconds_bucket").unwrap();
        assert_eq!(f.kind, MetricType::Histogram);
        assert_eq!(f.help, "Latency \\ of x\nsecond line");
        assert_eq!(e.family_of("h_seconds_count").unwrap().name, "h_seconds");
        assert_eq!(e.samples[1].label("le"), Some("+Inf"));
        assert_eq!(e.samples[4].value, f64::NEG_INFINITY);
        assert!(e.samples[5].value.is_nan());
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_parse_without_panic(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            let e = parse(&body);
            let lines = body.split(|&b| b == b'\n').count();
            proptest::prop_assert!(e.samples.len() + e.skipped.len() <= lines);
        }

        #[test]
        fn label_values_round_trip(v in "[ -~]{0,40}") {
            let escaped = v.replace('\\', "\\\\").replace('"', "\\\"");
            let body = format!("m{{a=\"{escaped}\",b=\"x\"}} 1\n");
            let e = parse(body.as_bytes());
            proptest::prop_assert!(e.skipped.is_empty(), "{:?}", e.skipped);
            proptest::prop_assert_eq!(e.samples[0].label("a"), Some(v.as_str()));
            proptest::prop_assert_eq!(e.samples[0].label("b"), Some("x"));
        }
    }
}
