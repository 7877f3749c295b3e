//! The report's tables and fact lists as plain text, shared by the HTML and the Markdown
//! renderers so both say the same thing in the same words: the cluster's facts, the
//! members, the apiserver's flags, the other etcd clusters, the timeline of markers, each
//! chart's data, the most written keys and the changes between `--from` and `--to`.
//! Cells are unescaped text; a missing value is written as missing, never as zero.

use super::model::{Chart, Report};
use super::text::{self, Clock};
use crate::derive::units;

/// A table: column headers, rows of cells (as many as headers), and which columns are
/// numbers (right-aligned).
#[derive(Clone, Debug, Default)]
pub(crate) struct Table {
    pub headers: Vec<String>,
    pub numeric: Vec<bool>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    fn new(headers: &[(&str, bool)]) -> Table {
        Table {
            headers: headers.iter().map(|(h, _)| h.to_string()).collect(),
            numeric: headers.iter().map(|(_, n)| *n).collect(),
            rows: Vec::new(),
        }
    }
}

/// The cluster and the session as (label, value) pairs, in reading order.
pub(crate) fn cluster_facts(r: &Report) -> Vec<(&'static str, String)> {
    let c = &r.cluster;
    let mut f = vec![
        ("Session", c.title.clone()),
        (
            "etcd endpoints",
            if c.endpoints.is_empty() {
                "not recorded".into()
            } else {
                c.endpoints.join(", ")
            },
        ),
        ("Read from", text::or_not_recorded(c.server.as_deref())),
        ("Key prefix", c.prefix.clone()),
        (
            "etcd cluster id",
            text::or_not_recorded(c.cluster_id.as_deref()),
        ),
    ];
    if c.replacements.len() > 1 {
        f.push((
            "etcd replaced during the span",
            format!(
                "{} cluster ids in turn: {}",
                c.replacements.len(),
                c.replacements.join(" → ")
            ),
        ));
    }
    f.push((
        "etcd version",
        text::or_not_recorded(c.etcd_version.as_deref()),
    ));
    f.push((
        "Kubernetes version",
        text::or_not_recorded(c.kubernetes_version.as_deref()),
    ));
    f.push((
        "etcd quota",
        c.quota_bytes
            .map_or_else(|| "not recorded".into(), |q| text::value(q, "bytes")),
    ));
    f.push((
        "Secrets",
        if r.source.secrets_redacted {
            "values redacted when recorded".into()
        } else {
            "recorded unredacted (--show-secrets): this report may name Secret contents".into()
        },
    ));
    f.push(("Recording", r.source.files.join(", ")));
    f
}

/// The etcd members as last polled (`None`: no member poll in the recording).
pub(crate) fn members(r: &Report) -> Option<Table> {
    if r.cluster.members.is_empty() {
        return None;
    }
    let mut t = Table::new(&[
        ("member", false),
        ("endpoint", false),
        ("version", false),
        ("leader", false),
        ("answering", false),
    ]);
    for m in &r.cluster.members {
        t.rows.push(vec![
            m.name.clone(),
            m.endpoint.clone(),
            text::or_not_recorded(m.version.as_deref()),
            text::yes_no(m.leader).into(),
            text::yes_no(m.answering).into(),
        ]);
    }
    Some(t)
}

/// The apiserver's storage flags (`None`: no manifest read).
pub(crate) fn flags(r: &Report) -> Option<Table> {
    if r.cluster.apiserver_flags.is_empty() {
        return None;
    }
    let mut t = Table::new(&[("flag", false), ("value", false)]);
    for (k, v) in &r.cluster.apiserver_flags {
        t.rows.push(vec![k.clone(), v.clone()]);
    }
    Some(t)
}

/// kube-apiserver's other etcd clusters (`None`: none known).
pub(crate) fn other_clusters(r: &Report) -> Option<Table> {
    if r.cluster.other_clusters.is_empty() {
        return None;
    }
    let mut t = Table::new(&[
        ("resources", false),
        ("endpoint", false),
        ("version", false),
        ("state at the end", false),
    ]);
    for o in &r.cluster.other_clusters {
        t.rows.push(vec![
            o.resources.clone(),
            o.endpoint.clone(),
            text::or_not_recorded(o.version.as_deref()),
            if o.up { "up" } else { "down" }.into(),
        ]);
    }
    Some(t)
}

/// Every marker of the span (time UTC, revision, kind, label).
pub(crate) fn timeline(r: &Report) -> Table {
    let mut t = Table::new(&[
        ("time (UTC)", false),
        ("revision", true),
        ("kind", false),
        ("what", false),
    ]);
    for m in &r.markers {
        // As `replay --check` prints it: pasted into `--at`, the same moment.
        t.rows.push(vec![
            humantime::format_rfc3339_millis(m.at).to_string(),
            units::thousands_i(m.revision),
            m.kind.to_string(),
            m.label.clone(),
        ]);
    }
    t
}

/// A chart's data: one row per sampling instant (its exact time, which `snapshot --json
/// --from FILE --at` takes to show the same state), one column per series, values with
/// their unit ("—" where nothing was recorded).
pub(crate) fn chart_data(r: &Report, chart: &Chart) -> Table {
    let c = Clock::of(r);
    let mut headers = vec![("time (UTC)".to_string(), false)];
    headers.extend(chart.series.iter().map(|s| (s.name.clone(), true)));
    let mut t = Table {
        headers: headers.iter().map(|(h, _)| h.clone()).collect(),
        numeric: headers.iter().map(|(_, n)| *n).collect(),
        rows: Vec::new(),
    };
    if chart.series.is_empty() {
        return t;
    }
    for (i, at) in r.times.iter().enumerate() {
        let when = r.sampled_at.get(i).map_or_else(
            || c.at_secs(*at),
            |t| humantime::format_rfc3339_millis(*t).to_string(),
        );
        let mut row = vec![when];
        row.extend(
            chart
                .series
                .iter()
                .map(|s| text::cell(s.values.get(i).copied().flatten(), chart.unit)),
        );
        t.rows.push(row);
    }
    t
}

/// What a chart without a table says instead.
pub(crate) fn no_chart_data(chart: &Chart) -> String {
    match &chart.note {
        Some(n) => format!("No data: {n}."),
        None => "No data: nothing was recorded for this chart in the span.".into(),
    }
}

/// The most written keys and their writes.
pub(crate) fn most_written(r: &Report) -> Table {
    let mut t = Table::new(&[("key", false), ("writes", true)]);
    for k in &r.stands_out.most_written {
        let n = units::thousands(k.writes);
        let n = if r.stands_out.most_written_exact {
            n
        } else {
            format!("≥ {n}")
        };
        t.rows.push(vec![k.key.clone(), n]);
    }
    t
}

/// Keys created, deleted, changed and recreated (deleted and created again) per resource,
/// with the resource's live bytes.
pub(crate) fn per_resource(r: &Report) -> Table {
    let mut t = Table::new(&[
        ("resource", false),
        ("created", true),
        ("deleted", true),
        ("changed", true),
        ("recreated", true),
        ("bytes at from", true),
        ("bytes at to", true),
        ("difference", true),
    ]);
    for p in &r.changes.per_resource {
        let diff = p.bytes_to as i128 - p.bytes_from as i128;
        t.rows.push(vec![
            p.resource.clone(),
            units::thousands(p.created),
            units::thousands(p.deleted),
            units::thousands(p.changed),
            units::thousands(p.recreated),
            units::bytes(p.bytes_from),
            units::bytes(p.bytes_to),
            format!(
                "{}{}",
                if diff < 0 { "-" } else { "+" },
                units::bytes(diff.unsigned_abs().min(u64::MAX as u128) as u64)
            ),
        ]);
    }
    t
}

/// The keys changed most in size.
pub(crate) fn top_keys(r: &Report) -> Table {
    let mut t = Table::new(&[
        ("key", false),
        ("change", false),
        ("bytes at from", true),
        ("bytes at to", true),
        ("revision at to", true),
    ]);
    for k in &r.changes.top_keys {
        t.rows.push(vec![
            k.key.clone(),
            k.change.to_string(),
            text::opt_bytes(k.bytes_from),
            text::opt_bytes(k.bytes_to),
            k.mod_revision_to
                .map_or_else(|| "—".into(), units::thousands_i),
        ]);
    }
    t
}

/// The changes section's opening line.
pub(crate) fn changes_line(r: &Report) -> String {
    let at = |t: Option<std::time::SystemTime>| {
        t.map_or_else(String::new, |t| {
            format!(" ({})", humantime::format_rfc3339_millis(t))
        })
    };
    format!(
        "The replica at revision {}{} compared with revision {}{}.",
        units::thousands_i(r.changes.from_revision),
        at(r.changes.from_at),
        units::thousands_i(r.changes.to_revision),
        at(r.changes.to_at)
    )
}

/// Damage and the notes `replay --check` makes about the file (an unreadable bookmark
/// line, an index rebuilt by scanning), the lines a reader must not miss (empty: none).
pub(crate) fn warnings(r: &Report) -> Vec<String> {
    let mut w: Vec<String> = r
        .source
        .damage
        .iter()
        .map(|d| format!("Damaged recording: {d}"))
        .collect();
    w.extend(
        r.source
            .notes
            .iter()
            .map(|b| format!("Note on the recording: {b}")),
    );
    if r.source.lost_instants > 0 {
        w.push(format!(
            "{} sampling instant{} fell where the damage left the state incomplete (until \
             the next checkpoint): left out of every chart and table, shown as —.",
            r.source.lost_instants,
            if r.source.lost_instants == 1 { "" } else { "s" }
        ));
    }
    if !r.source.secrets_redacted {
        w.push(
            "Secrets were recorded unredacted (--show-secrets): keys and values in this report \
             may name Secret contents."
                .into(),
        );
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample::sample_report;

    #[test]
    fn data_tables_have_a_row_per_instant_and_say_what_is_missing() {
        let r = sample_report();
        let t = chart_data(&r, &r.charts[0]);
        assert_eq!(t.rows.len(), r.times.len());
        assert_eq!(t.headers, ["time (UTC)", "all resources"]);
        assert_eq!(t.rows[0], ["2026-12-04T07:40:00.000Z", "—"]);
        assert_eq!(t.rows[1][1], "1.5 revisions/s");
        assert!(chart_data(&r, &r.charts[2]).rows.is_empty());
        assert_eq!(
            no_chart_data(&r.charts[2]),
            "No data: no apiserver scrapes in this recording."
        );
    }

    #[test]
    fn facts_say_not_recorded_rather_than_zero() {
        let r = sample_report();
        let f = cluster_facts(&r);
        let get = |k: &str| f.iter().find(|(l, _)| *l == k).map(|(_, v)| v.as_str());
        assert_eq!(get("Kubernetes version"), Some("not recorded"));
        assert_eq!(get("etcd quota"), Some("2.0 GiB"));
        assert_eq!(warnings(&r).len(), 2);
        assert_eq!(per_resource(&r).rows[0][4], "2");
        assert_eq!(per_resource(&r).rows[0][7], "+2.0 KiB");
        assert_eq!(top_keys(&r).rows[0][4], "1,130");
    }
}
