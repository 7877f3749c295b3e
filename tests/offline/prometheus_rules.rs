//! What `deploy/` ships for many clusters, checked with the tools that will read it:
//! `promtool` checks the rules and runs their unit tests, checks the example Prometheus
//! configuration (with real certificates beside it) and the dashboard's PromQL;
//! `systemd-analyze verify` checks the unit. Beside the tools: every `regscope_…` name the
//! rules, their tests and the dashboard use is a family `/metrics` serves
//! ([`regscope::exporter::family_names`]), every `regscope:…` name is a recording rule, every
//! alert has `summary`, `description` and a `runbook` whose anchor is a heading of the
//! README, and every rule is exercised by the unit tests (each alert seen starting to fire:
//! not firing at one evaluation, firing at the next).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::Deserialize;

use crate::common::recording::BIN;
use crate::common::{output_within, pki, require};

/// Where every alert's runbook link points: the repository's README, at the heading named
/// after the alert.
const RUNBOOK_BASE: &str = "https://github.com/regscope/regscope#";

/// A guard against a hung tool, not a performance claim.
const TOOL_LIMIT: Duration = Duration::from_secs(120);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn deploy(path: &str) -> PathBuf {
    repo().join("deploy").join(path)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A rules file as Prometheus reads it (the fields these checks look at).
#[derive(Debug, Deserialize)]
struct RuleFile {
    groups: Vec<RuleGroup>,
}

#[derive(Debug, Deserialize)]
struct RuleGroup {
    rules: Vec<Rule>,
}

#[derive(Debug, Deserialize)]
struct Rule {
    record: Option<String>,
    alert: Option<String>,
    expr: String,
    #[serde(rename = "for")]
    for_: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

/// A `promtool test rules` file (Prometheus docs, "Unit testing for rules").
#[derive(Debug, Deserialize)]
struct TestFile {
    rule_files: Vec<String>,
    evaluation_interval: Option<String>,
    tests: Vec<TestGroup>,
}

#[derive(Debug, Deserialize)]
struct TestGroup {
    input_series: Vec<InputSeries>,
    #[serde(default)]
    alert_rule_test: Vec<AlertTest>,
    #[serde(default)]
    promql_expr_test: Vec<ExprTest>,
}

#[derive(Debug, Deserialize)]
struct InputSeries {
    series: String,
}

#[derive(Debug, Deserialize)]
struct AlertTest {
    eval_time: String,
    alertname: String,
    #[serde(default)]
    exp_alerts: Vec<serde_norway::Value>,
}

#[derive(Debug, Deserialize)]
struct ExprTest {
    expr: String,
    #[serde(default)]
    exp_samples: Vec<serde_norway::Value>,
}

fn rules() -> RuleFile {
    let path = deploy("prometheus/regscope-rules.yml");
    serde_norway::from_str(&read(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn rule_tests() -> TestFile {
    let path = deploy("prometheus/regscope-rules.test.yml");
    serde_norway::from_str(&read(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn dashboard() -> serde_json::Value {
    let path = deploy("grafana/regscope-dashboard.json");
    serde_json::from_str(&read(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn all_rules(file: &RuleFile) -> impl Iterator<Item = &Rule> {
    file.groups.iter().flat_map(|g| g.rules.iter())
}

fn alerts(file: &RuleFile) -> Vec<(&str, &Rule)> {
    all_rules(file)
        .filter_map(|r| r.alert.as_deref().map(|a| (a, r)))
        .collect()
}

fn records(file: &RuleFile) -> BTreeSet<&str> {
    all_rules(file)
        .filter_map(|r| r.record.as_deref())
        .collect()
}

/// The names in `text` that start with `prefix` (`regscope_` or `regscope:`) and are not
/// the tail of a longer name: a metric name is `[a-zA-Z_:][a-zA-Z0-9_:]*` (Prometheus data
/// model), and a recording rule's name holds colons where a served family's does not.
fn names_with_prefix(text: &str, prefix: &str) -> BTreeSet<String> {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut out = BTreeSet::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(prefix).map(|i| from + i) {
        from = at + prefix.len();
        if text[..at].chars().next_back().is_some_and(is_name) {
            continue;
        }
        let end = text[at..]
            .find(|c: char| !is_name(c))
            .map_or(text.len(), |i| at + i);
        out.insert(text[at..end].to_string());
        from = end;
    }
    out
}

/// A served family's name is `regscope_` and no colon; a name with a colon after the
/// prefix is a recording rule's (`regscope:…`) and is checked against the rules instead.
fn family_names_in(text: &str) -> BTreeSet<String> {
    names_with_prefix(text, "regscope_")
}

fn record_names_in(text: &str) -> BTreeSet<String> {
    names_with_prefix(text, "regscope:")
}

/// Every `expr` string in a Grafana dashboard (panels, rows' panels, targets), and the
/// queries of its template variables.
fn dashboard_queries(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("expr" | "definition", serde_json::Value::String(s)) => out.push(s.clone()),
                    _ => dashboard_queries(x, out),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| dashboard_queries(x, out)),
        _ => {}
    }
}

/// A Prometheus duration (`30s`, `5m`, `1h30m`) in milliseconds.
fn duration_ms(s: &str) -> u64 {
    let mut total = 0;
    let mut rest = s.trim();
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let n: u64 = rest[..digits]
            .parse()
            .unwrap_or_else(|_| panic!("duration {s:?}"));
        rest = &rest[digits..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let ms = match &rest[..unit] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "w" => 604_800_000,
            u => panic!("duration {s:?}: unit {u:?}"),
        };
        total += n * ms;
        rest = &rest[unit..];
    }
    total
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped,
/// spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The headings of a Markdown text as (level, text), outside fenced code blocks.
fn headings(md: &str) -> Vec<(usize, String)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let level = line.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&level) && line[level..].starts_with(' ') {
            out.push((level, line[level..].trim().to_string()));
        }
    }
    out
}

/// README.md, where the runbook lives.
fn readme_texts() -> Vec<(PathBuf, String)> {
    let p = repo().join("README.md");
    let t = read(&p);
    vec![(p, t)]
}

/// Runs `program args` in `dir`; fails the test with its output unless it succeeds.
/// Gives stdout and stderr.
fn run_ok(dir: &Path, program: &str, args: &[&str]) -> (String, String) {
    let out = output_within(
        Command::new(program).current_dir(dir).args(args),
        TOOL_LIMIT,
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{program} {args:?} in {}: {}\n{stdout}\n{stderr}",
        dir.display(),
        out.status
    );
    (stdout, stderr)
}

#[test]
fn rules_pass_promtool_check_and_their_unit_tests() {
    require!(PROMTOOL);
    let dir = deploy("prometheus");
    let (out, _) = run_ok(
        &dir,
        "promtool",
        &[
            "check",
            "rules",
            "--lint=all",
            "--lint-fatal",
            "regscope-rules.yml",
        ],
    );
    let n = all_rules(&rules()).count();
    assert!(out.contains(&format!("SUCCESS: {n} rules found")), "{out}");
    let (out, _) = run_ok(
        &dir,
        "promtool",
        &["test", "rules", "regscope-rules.test.yml"],
    );
    assert!(out.contains("SUCCESS"), "{out}");
    assert_eq!(rule_tests().rule_files, ["regscope-rules.yml"]);
}

#[test]
fn example_prometheus_config_passes_promtool_check() {
    require!(PROMTOOL, OPENSSL);
    let text = read(&deploy("prometheus/prometheus.yml"));
    let config: serde_norway::Value = serde_norway::from_str(&text).unwrap();
    assert_eq!(config["global"]["scrape_interval"].as_str(), Some("15s"));
    assert_eq!(
        config["rule_files"][0].as_str(),
        Some("regscope-rules.yml"),
        "{text}"
    );
    let jobs = config["scrape_configs"]
        .as_sequence()
        .expect("scrape_configs");
    let job = jobs
        .iter()
        .find(|j| j["job_name"].as_str() == Some("regscope"))
        .expect("a job named regscope, as the rules assume");
    let targets: Vec<&str> = job["static_configs"]
        .as_sequence()
        .unwrap()
        .iter()
        .flat_map(|c| c["targets"].as_sequence().unwrap())
        .filter_map(|t| t.as_str())
        .collect();
    assert!(
        targets.len() > 1 && targets.iter().all(|t| t.ends_with(":9943")),
        "{targets:?}"
    );

    // promtool reads the files the configuration names (relative to its folder): the rules,
    // and the TLS files, which must exist. Real ones, as the job would present them.
    let tmp = tempfile::tempdir().unwrap();
    for f in ["prometheus.yml", "regscope-rules.yml"] {
        std::fs::copy(deploy("prometheus").join(f), tmp.path().join(f)).unwrap();
    }
    let tls = tmp.path().join("regscope");
    std::fs::create_dir(&tls).unwrap();
    pki::ca(&tls, "ca");
    pki::leaf(
        &tls,
        "prometheus",
        "ca",
        Some("extendedKeyUsage=clientAuth\n"),
    );
    let tls_config = &job["tls_config"];
    for key in ["ca_file", "cert_file", "key_file"] {
        let f = tls_config[key].as_str().unwrap_or_else(|| panic!("{key}"));
        assert!(tmp.path().join(f).is_file(), "{key}: {f}");
    }
    let (out, _) = run_ok(
        tmp.path(),
        "promtool",
        &["check", "config", "prometheus.yml"],
    );
    assert!(out.contains("SUCCESS: 1 rule files found"), "{out}");
    assert!(out.contains("is valid prometheus config file"), "{out}");
}

#[test]
fn every_name_used_is_a_served_family_or_a_recording_rule() {
    let served: BTreeSet<String> = regscope::exporter::family_names().into_iter().collect();
    let file = rules();
    let recorded = records(&file);
    let mut used = Vec::new();
    for r in all_rules(&file) {
        let what = r.record.as_deref().or(r.alert.as_deref()).unwrap();
        used.push((format!("rule {what}"), r.expr.clone()));
        for (k, v) in &r.annotations {
            used.push((format!("rule {what}, annotation {k}"), v.clone()));
        }
    }
    for (i, g) in rule_tests().tests.iter().enumerate() {
        for s in &g.input_series {
            used.push((format!("unit test {i}, input series"), s.series.clone()));
        }
        for e in &g.promql_expr_test {
            used.push((format!("unit test {i}, expression"), e.expr.clone()));
        }
    }
    let mut queries = Vec::new();
    dashboard_queries(&dashboard(), &mut queries);
    assert!(queries.len() >= 10, "{queries:?}");
    used.extend(
        queries
            .into_iter()
            .map(|q| ("the dashboard".to_string(), q)),
    );

    let mut families_seen = BTreeSet::new();
    for (where_, text) in &used {
        for name in family_names_in(text) {
            assert!(
                served.contains(&name),
                "{where_}: {name} is not a family regscope serves ({text})"
            );
            families_seen.insert(name);
        }
        for name in record_names_in(text) {
            assert!(
                recorded.contains(name.as_str()),
                "{where_}: {name} is no recording rule of regscope-rules.yml ({text})"
            );
        }
    }
    // Recording rules are named level:metric:operations (Prometheus docs, "Recording
    // rules"): here the level is `regscope` and the metric the family the rule reads,
    // without its prefix (and without `_total` once a rate is taken).
    for r in &recorded {
        let parts: Vec<&str> = r.split(':').collect();
        assert!(parts.len() == 3 && parts[0] == "regscope", "{r}");
        let family = format!("regscope_{}", parts[1]);
        assert!(
            served.contains(&family) || served.contains(&format!("{family}_total")),
            "{r}: {family} is not a served family"
        );
    }
    // The families the rules are about are all used.
    for f in [
        "regscope_informer_lag_window_ratio",
        "regscope_watch_cache_history_span_seconds",
        "regscope_informer_lag_seconds",
        "regscope_informer_relists_total",
        "regscope_informer_gone_total",
        "regscope_gaps_total",
        "regscope_etcd_db_size_bytes",
        "regscope_etcd_quota_bytes",
        "regscope_etcd_watch_up",
        "regscope_cluster_replacements_total",
        "regscope_writes_total",
        "regscope_writer_writes_total",
    ] {
        assert!(families_seen.contains(f), "{f} is used by no rule");
    }
}

#[test]
fn every_alert_has_annotations_and_a_runbook_heading() {
    let file = rules();
    let texts = readme_texts();
    assert!(!texts.is_empty());
    let mut slugs = BTreeSet::new();
    let mut runbook_headings = BTreeSet::new();
    for (_, t) in &texts {
        for (level, h) in headings(t) {
            slugs.insert(anchor(&h));
            if level == 4 {
                runbook_headings.insert(h);
            }
        }
    }
    let alerts = alerts(&file);
    assert!(alerts.len() >= 10, "{alerts:?}");
    for (name, rule) in &alerts {
        for key in ["summary", "description", "runbook"] {
            let v = rule.annotations.get(key).map(|s| s.trim());
            assert!(v.is_some_and(|v| !v.is_empty()), "{name}: no {key}");
        }
        assert!(
            matches!(
                rule.labels.get("severity").map(String::as_str),
                Some("info" | "warning" | "critical")
            ),
            "{name}: severity {:?}",
            rule.labels.get("severity")
        );
        let runbook = &rule.annotations["runbook"];
        let fragment = runbook
            .strip_prefix(RUNBOOK_BASE)
            .unwrap_or_else(|| panic!("{name}: runbook {runbook} is not under {RUNBOOK_BASE}"));
        assert_eq!(fragment, name.to_lowercase(), "{name}: runbook {runbook}");
        assert!(
            runbook_headings.contains(*name) && slugs.contains(fragment),
            "{name}: no `#### {name}` heading (anchor #{fragment}) in {:?}",
            texts.iter().map(|(p, _)| p).collect::<Vec<_>>()
        );
    }
    // Alert names are unique, so each anchor names one heading.
    let names: BTreeSet<&str> = alerts.iter().map(|(n, _)| *n).collect();
    assert_eq!(names.len(), alerts.len());
    // The draft's own links to its headings resolve.
    for (path, t) in &texts {
        let mut rest = t.as_str();
        while let Some(at) = rest.find("](#") {
            let link = &rest[at + 3..];
            let end = link.find(')').expect("a closed link");
            assert!(
                slugs.contains(&link[..end]),
                "{}: link #{} has no heading",
                path.display(),
                &link[..end]
            );
            rest = &link[end..];
        }
    }
    let readme = read(&repo().join("README.md"));
    for placeholder in ["<!-- signals table -->", "<!-- graph -->"] {
        assert!(
            !readme.contains(placeholder),
            "{placeholder} left in the README"
        );
    }
}

#[test]
fn every_rule_is_exercised_by_the_unit_tests() {
    let file = rules();
    let tests = rule_tests();
    let step = duration_ms(tests.evaluation_interval.as_deref().unwrap_or("1m"));
    let alert_names: BTreeSet<&str> = alerts(&file).iter().map(|(n, _)| *n).collect();
    let recorded = records(&file);

    // Recording rules: an expected value of each.
    let mut tested_records = BTreeSet::new();
    for g in &tests.tests {
        for e in &g.promql_expr_test {
            assert!(!e.exp_samples.is_empty(), "{}: no expected sample", e.expr);
            tested_records.extend(record_names_in(&e.expr));
        }
        for a in &g.alert_rule_test {
            assert!(
                alert_names.contains(a.alertname.as_str()),
                "a unit test of {}, which is no alert",
                a.alertname
            );
        }
    }
    for r in &recorded {
        assert!(
            tested_records.contains(*r),
            "recording rule {r} has no promql_expr_test"
        );
    }

    // Alerts: seen starting to fire, i.e. not firing at one evaluation and firing at the
    // next, in the same test (for an alert with `for`, the evaluation before it is due).
    for (name, rule) in alerts(&file) {
        let starts = tests.tests.iter().any(|g| {
            let cases: Vec<(u64, bool)> = g
                .alert_rule_test
                .iter()
                .filter(|a| a.alertname == name)
                .map(|a| (duration_ms(&a.eval_time), !a.exp_alerts.is_empty()))
                .collect();
            cases.iter().any(|&(t, firing)| {
                firing
                    && t >= rule.for_.as_deref().map_or(0, duration_ms)
                    && cases.contains(&(t.saturating_sub(step), false))
            })
        });
        assert!(
            starts,
            "{name}: no unit test shows it not firing at one evaluation and firing at the next"
        );
    }
}

#[test]
fn dashboard_queries_are_valid_promql() {
    require!(PROMTOOL);
    let mut queries = Vec::new();
    dashboard_queries(&dashboard(), &mut queries);
    // Template variables ($cluster, ${datasource}, …) as a regular expression that matches
    // anything, as Grafana's "All" does; label_values() is Grafana's, not PromQL.
    let promql: Vec<String> = queries
        .iter()
        .filter(|q| !q.starts_with("label_values("))
        .map(|q| {
            let mut out = String::new();
            let mut rest = q.as_str();
            while let Some(at) = rest.find('$') {
                out.push_str(&rest[..at]);
                let var = &rest[at + 1..];
                let len = var
                    .find(|c: char| !(c.is_ascii_alphanumeric() || "_{}".contains(c)))
                    .unwrap_or(var.len());
                out.push_str(".*");
                rest = &var[len..];
            }
            out.push_str(rest);
            out
        })
        .collect();
    assert!(promql.len() >= 10, "{promql:?}");
    let rules: Vec<serde_json::Value> = promql
        .iter()
        .enumerate()
        .map(
            |(i, e)| serde_json::json!({"record": format!("dashboard:query_{i}:check"), "expr": e}),
        )
        .collect();
    let file = serde_json::json!({"groups": [{"name": "dashboard", "rules": rules}]});
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("dashboard-queries.yml");
    std::fs::write(&path, serde_norway::to_string(&file).unwrap()).unwrap();
    let (out, _) = run_ok(
        tmp.path(),
        "promtool",
        &["check", "rules", "dashboard-queries.yml"],
    );
    assert!(
        out.contains(&format!("SUCCESS: {} rules found", promql.len())),
        "{out}"
    );
}

/// The unit's `ExecStart` command line, split on spaces (it has no quoting).
fn exec_start(unit: &str) -> Vec<String> {
    let line = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("ExecStart");
    line.split_whitespace().map(str::to_string).collect()
}

#[test]
fn systemd_unit_verifies_clean() {
    require!(SYSTEMD_ANALYZE);
    let unit = read(&deploy("systemd/regscope.service"));
    let cmd = exec_start(&unit);
    assert_eq!(cmd[..2], ["/usr/local/bin/regscope", "record"], "{cmd:?}");
    for flag in [
        "--keep-last",
        "--max-size",
        "--force",
        "--listen",
        "--memory-limit",
    ] {
        assert!(cmd.iter().any(|a| a == flag), "{flag} in {cmd:?}");
    }
    let out_at = cmd.iter().position(|a| a == "-o").expect("-o") + 1;
    assert!(cmd[out_at].starts_with("/var/lib/regscope/"), "{cmd:?}");
    for line in [
        "User=root",
        "StateDirectory=regscope",
        "ReadWritePaths=/var/lib/regscope",
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "NoNewPrivileges=yes",
        "CapabilityBoundingSet=",
        "IOSchedulingClass=idle",
        "Restart=on-failure",
    ] {
        assert!(unit.lines().any(|l| l == line), "{line}");
    }
    let memory_max = unit
        .lines()
        .find_map(|l| l.strip_prefix("MemoryMax="))
        .expect("MemoryMax");
    assert!(memory_max.ends_with('M'), "{memory_max}");

    // `verify` checks that ExecStart names an executable: the one built here, at the path
    // the unit installs it to replaced. It exits 0 on an unknown directive or a value it
    // cannot parse, saying so on stderr: the unit is clean when stderr is empty.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("regscope.service");
    std::fs::write(&path, unit.replace("/usr/local/bin/regscope", BIN)).unwrap();
    let (out, err) = run_ok(
        tmp.path(),
        "systemd-analyze",
        &["verify", path.to_str().unwrap()],
    );
    assert!(err.trim().is_empty() && out.trim().is_empty(), "{out}{err}");
}

#[test]
fn systemd_unit_flags_are_record_flags() {
    let unit = read(&deploy("systemd/regscope.service"));
    let out = output_within(Command::new(BIN).args(["record", "--help"]), TOOL_LIMIT);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{help}");
    for flag in exec_start(&unit).iter().filter(|a| a.starts_with('-')) {
        assert!(
            help.contains(&format!("{flag} ")) || help.contains(&format!("{flag},")),
            "the unit passes {flag}, which `regscope record --help` does not name"
        );
    }
}

#[test]
fn name_scanner_and_anchors() {
    assert_eq!(
        family_names_in(
            "max without (w) (regscope_a_b{x=\"regscope\"}) / job:regscope_no + regscope:c:d"
        ),
        BTreeSet::from(["regscope_a_b".to_string()])
    );
    assert_eq!(
        record_names_in("regscope:c:rate5m{job=\"regscope\"} - regscope_a"),
        BTreeSet::from(["regscope:c:rate5m".to_string()])
    );
    assert_eq!(anchor("RegscopeDown"), "regscopedown");
    assert_eq!(anchor("Many clusters"), "many-clusters");
    assert_eq!(
        anchor("On each node: the `systemd` unit"),
        "on-each-node-the-systemd-unit"
    );
    assert_eq!(duration_ms("1h30m"), 5_400_000);
    assert_eq!(duration_ms("5m"), 300_000);
    assert_eq!(
        headings("# a\n```sh\n# not one\n```\n#### B c\n#nope\n"),
        [(1, "a".to_string()), (4, "B c".to_string())]
    );
}

#[test]
fn the_readme_lists_every_family_with_its_labels() {
    let readme = read(&repo().join("README.md"));
    let row = |name: &str| {
        readme
            .lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")))
            .unwrap_or_else(|| panic!("README.md has no table row for {name}"))
            .to_string()
    };
    for name in regscope::exporter::family_names() {
        row(&name);
    }
    for s in regscope::derive::signals::SIGNALS {
        let name = regscope::exporter::exported_name(s.name);
        let r = row(&name);
        // The writer family is served summed over resources.
        let labels: Vec<&str> = if s.name == "writer_writes_total" {
            vec!["manager", "operation"]
        } else {
            s.labels.to_vec()
        };
        for l in labels {
            assert!(
                r.contains(&format!("`{l}`")),
                "{name}: label {l} not in {r}"
            );
        }
    }
}
