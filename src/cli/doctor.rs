//! `regscope doctor`: what the node runs ([`crate::node::discover`]) with where each fact
//! was found, then every connection checked, each failure with what to do.
//!
//! Checks, in order: discovery problems (a manifest that cannot be read or lacks
//! `--etcd-servers`); the TLS files (readable, PEM, validity, clientAuth usage, X.509
//! version); each etcd member on its own (connect and `Maintenance.Status`: version,
//! leader, db size); each member of an `--etcd-servers-overrides` cluster; etcd's
//! `/metrics`; the apiserver's `/metrics` and a one-item list of each informer resource;
//! the encryption config (readable, which resources it covers) and how up to 50 values of
//! each covered resource are stored (read from etcd). After the members: the known etcd
//! watch bugs of each version the members run ([`crate::node::etcd_bugs`]; a member's
//! Status asked once more), and etcd's watch progress notify interval and feature gates as
//! its manifest gives them. A TLS failure
//! is explained from the certificates ([`crate::node::certs`]). Read-only like the rest of
//! regscope: Status, Range reads, metrics GETs and lists are all it sends.

use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::Result;
use serde::Serialize;

use crate::cli::args::{DoctorArgs, MetricsArgs, UiArgs};
use crate::node::certs::{self, CertInfo};
use crate::node::Discovery;
use crate::source::EtcdOptions;

/// One check's verdict.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    /// What was checked: `discovery`, `file`, `etcd member`, `prefix`, `etcd for …`, `etcd metrics`,
    /// `encryption config`.
    pub check: String,
    /// The endpoint, URL or file.
    pub target: String,
    pub ok: bool,
    /// What was found (version, leader, db size…) or what is wrong.
    pub detail: String,
    /// What to do, for a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
    /// Not checked (nothing to check it with); `ok` stays true.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub skipped: bool,
}

impl Check {
    fn ok(check: &str, target: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            check: check.into(),
            target: target.into(),
            ok: true,
            detail: detail.into(),
            advice: None,
            skipped: false,
        }
    }

    fn skip(check: &str, target: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            skipped: true,
            ..Check::ok(check, target, detail)
        }
    }

    fn fail(
        check: &str,
        target: impl Into<String>,
        detail: impl Into<String>,
        advice: impl Into<String>,
    ) -> Check {
        Check {
            check: check.into(),
            target: target.into(),
            ok: false,
            detail: detail.into(),
            advice: Some(advice.into()),
            skipped: false,
        }
    }
}

#[derive(Serialize)]
struct Report<'a> {
    root: &'a std::path::Path,
    layout: Option<crate::node::Layout>,
    facts: &'a [crate::node::Fact],
    problems: &'a [crate::node::Problem],
    checks: &'a [Check],
    ok: bool,
    /// etcd's watch progress notify interval as its manifest gives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    etcd_watch_progress_notify_interval: Option<&'a str>,
    /// etcd's feature gates as configured.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    etcd_feature_gates: &'a [crate::node::FeatureGate],
    #[serde(skip_serializing_if = "Option::is_none")]
    controller_manager_metrics_url: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    controller_manager_tls_cert: Option<&'a std::path::Path>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scheduler_metrics_url: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scheduler_tls_cert: Option<&'a std::path::Path>,
}

/// `regscope doctor` from its flags: `--timeout` must be more than 0 (exit 2), the global
/// `--encryption-config` is checked instead of the node's, and the node as discovered
/// (nothing, when it was not read) is reported and checked ([`run`]).
pub async fn command(
    mut a: DoctorArgs,
    ui: &UiArgs,
    d: Option<Discovery>,
    m: &MetricsArgs,
) -> Result<ExitCode> {
    if a.timeout.is_zero() {
        eprintln!("regscope: doctor --timeout must be more than 0 (e.g. 3s)");
        return Ok(ExitCode::from(2));
    }
    a.encryption_config.clone_from(&ui.encryption_config);
    run(&a, &d.unwrap_or_default(), m).await
}

/// Runs the checks and prints the report. Exit 0 when every check passed, 1 otherwise.
pub async fn run(a: &DoctorArgs, d: &Discovery, m: &MetricsArgs) -> Result<ExitCode> {
    let checks = checks(a, d, m).await;
    let ok = checks.iter().all(|c| c.ok);
    if a.json {
        let report = Report {
            root: &d.root,
            layout: d.layout,
            facts: &d.facts,
            problems: &d.problems,
            checks: &checks,
            ok,
            etcd_watch_progress_notify_interval: d.etcd_watch_progress_notify_interval.as_deref(),
            etcd_feature_gates: &d.etcd_feature_gates,
            controller_manager_metrics_url: d.controller_manager_metrics_url.as_deref(),
            controller_manager_tls_cert: d.controller_manager_tls_cert.as_deref(),
            scheduler_metrics_url: d.scheduler_metrics_url.as_deref(),
            scheduler_tls_cert: d.scheduler_tls_cert.as_deref(),
        };
        crate::cli::out(format_args!("{}\n", serde_json::to_string_pretty(&report)?));
    } else {
        crate::cli::out(format_args!("{}", text(d, &checks)));
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The report as text: facts with their origin, then one line per check (and a `→` line
/// of advice under each failure), then a summary.
pub fn text(d: &Discovery, checks: &[Check]) -> String {
    let mut s = String::new();
    let root = if d.root == std::path::Path::new("/") {
        String::new()
    } else {
        format!(" under {}", d.root.display())
    };
    match d.layout {
        Some(l) => s.push_str(&format!("Found a {} control-plane node{root}:\n", l.name())),
        None => s.push_str(&format!(
            "No control-plane layout found{root} (kubeadm, RKE2 or k3s files)\n"
        )),
    }
    let w = d.facts.iter().map(|f| f.name.len()).max().unwrap_or(0);
    for f in &d.facts {
        let origin = match &f.flag {
            Some(flag) => format!("{} {flag}", f.file),
            None => f.file.clone(),
        };
        s.push_str(&format!("  {:w$}  {}   ({origin})\n", f.name, f.value));
    }
    s.push_str("\nChecks:\n");
    for c in checks {
        s.push_str(&format!(
            "  {}  {} {}: {}\n",
            if c.skipped {
                "skip"
            } else if c.ok {
                "ok  "
            } else {
                "FAIL"
            },
            c.check,
            c.target,
            c.detail
        ));
        if let Some(a) = &c.advice {
            s.push_str(&format!("        → {a}\n"));
        }
    }
    let failed = checks.iter().filter(|c| !c.ok).count();
    let skipped = checks.iter().filter(|c| c.skipped).count();
    s.push_str(&match (failed, skipped) {
        (0, 0) => "\nAll checks passed.\n".to_string(),
        (0, k) => format!("\nAll checks made passed ({k} not checked).\n"),
        (n, _) => format!("\n{n} check(s) failed.\n"),
    });
    s
}

/// Whether regscope runs as root (advice to use sudo would be wrong then).
fn is_root() -> bool {
    // SAFETY: geteuid takes no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

async fn checks(a: &DoctorArgs, d: &Discovery, m: &MetricsArgs) -> Vec<Check> {
    let mut out = Vec::new();
    for p in &d.problems {
        out.push(Check::fail("discovery", &p.file, &p.message, &p.advice));
    }
    let given = !a.conn.endpoints.is_empty();
    if d.layout.is_none() && !given {
        out.push(Check::fail(
            "discovery",
            d.root.display().to_string(),
            "no kubeadm, RKE2 or k3s files found (or they are not readable)",
            if is_root() {
                "this does not look like a control-plane node: pass --endpoints/--cacert/--cert/--key, or --root DIR for a copied node"
            } else {
                "run as root (sudo) on a control-plane node, pass --endpoints/--cacert/--cert/--key, or --root DIR for a copied node"
            },
        ));
    }
    let opts = a.conn.etcd_options();
    let now = SystemTime::now();
    file_checks(&opts, now, &mut out);
    let files_ok = out.iter().all(|c| c.check != "file" || c.ok);
    if given || d.etcd.is_some() {
        for ep in &opts.endpoints {
            out.push(member(&opts, ep, "etcd member", a.timeout).await);
        }
        if out.iter().any(|c| c.check == "etcd member" && c.ok) {
            out.extend(prefix_check(&opts, &a.conn.prefix_bytes(), a.timeout).await);
            let (bugs, versions) = known_bug_checks(&opts, a.timeout).await;
            out.extend(bugs);
            out.extend(spelling_checks(d, &versions));
        }
    }
    out.extend(etcd_settings_checks(d));
    for (resources, endpoints) in d.other_clusters() {
        let oo = EtcdOptions {
            endpoints,
            ..opts.clone()
        }
        .with_defaults();
        let label = format!("etcd for {resources}");
        for ep in &oo.endpoints {
            out.push(member(&oo, ep, &label, a.timeout).await);
        }
    }
    match m
        .etcd_metrics_url
        .clone()
        .or_else(|| d.etcd_metrics_url.clone())
    {
        Some(url) => out.push(etcd_metrics(Some(&url), &opts, a.timeout).await),
        // As the console does without one: the endpoint's own /metrics.
        None if given || d.etcd.is_some() => out.push(etcd_metrics(None, &opts, a.timeout).await),
        None => {}
    }
    out.extend(apiserver(m, a.timeout).await);
    out.extend(controllers(m, a.timeout).await);
    // The config given with --encryption-config, else the node's.
    let keyring_path = a
        .encryption_config
        .clone()
        .or_else(|| d.encryption_config.clone());
    if let Some(path) = &keyring_path {
        match crate::decrypt::Keyring::load(path) {
            Ok(k) => {
                let mut providers: Vec<String> = Vec::new();
                for (p, _) in k.keys() {
                    if !providers.contains(&p) {
                        providers.push(p);
                    }
                }
                out.push(Check::ok(
                    "encryption config",
                    path.display().to_string(),
                    format!(
                        "covers {}; providers {}",
                        k.resources().join(", "),
                        providers.join(", ")
                    ),
                ));
                if files_ok && (given || d.etcd.is_some()) {
                    let prefix = a.conn.prefix_bytes();
                    if let Some(c) = stored_values(&opts, &prefix, &k, a.timeout).await {
                        out.push(c);
                    }
                }
            }
            Err(e) => {
                let advice = match &e {
                    crate::decrypt::ConfigError::Read { .. } => {
                        "regscope shows encrypted values as such until it can read this file (run as root, or pass --encryption-config)"
                    }
                    _ => "fix the file (kube-apiserver cannot start with it either), or pass the one it runs with in --encryption-config",
                };
                let target = path.display().to_string();
                let msg = e.to_string();
                let msg = msg
                    .strip_prefix(&format!("{target}: "))
                    .map_or(msg.clone(), str::to_string);
                out.push(Check::fail("encryption config", target, msg, advice))
            }
        }
    }
    out
}

/// The apiserver side: its `/metrics` (through the kubeconfig or `--apiserver-metrics-url`,
/// as the console reaches it) and, for each informer resource, whether the user may list
/// it (a list of one item: informer lag needs list and watch). Nothing when the apiserver
/// side is not configured.
/// kube-controller-manager's and kube-scheduler's `/metrics` (given, or found in their
/// manifests): reachable with the credentials regscope would use, their version, and
/// whether they expose informer metrics (Kubernetes 1.36+) or only workqueues.
async fn controllers(m: &MetricsArgs, timeout: Duration) -> Vec<Check> {
    use crate::derive::apiserver::INFORMER_METRICS_SINCE;
    use crate::metrics::concepts::{self, minor_version, Concept};
    use crate::model::ScrapeOutcome;
    use crate::source::scrape::scrape_once;
    let mut out = Vec::new();
    let Ok(scfg) = m.scrape_config() else {
        // The apiserver check says what is wrong with the flags.
        return out;
    };
    let live: Vec<_> = scfg
        .controllers
        .iter()
        .filter(|c| c.files.is_empty())
        .collect();
    if live.is_empty() {
        return out;
    }
    let kube = scfg.apiserver.load_config().await.ok().flatten();
    for c in live {
        let check = format!("{} metrics", c.target.component());
        let url = c.url.as_deref().unwrap_or_default();
        let how = match crate::source::controllers::scrape_from(
            c.target,
            url,
            &scfg.controllers_auth,
            kube.as_ref(),
        ) {
            Ok((how, _)) => how,
            Err(e) => {
                // The check and target already name the component and the URL.
                let detail = e
                    .split_once(" not scraped: ")
                    .map_or(e.clone(), |(_, why)| format!("not scraped: {why}"));
                let advice = if e.contains("no credentials") {
                    "give --kubeconfig (the node's admin.conf), or --controllers-token-file / --controllers-cert and --controllers-key"
                } else if e.contains("off loopback its certificate") {
                    "give --controllers-cacert, or scrape the component on 127.0.0.1 (--controller-manager-metrics-url / --scheduler-metrics-url)"
                } else if e.contains("plain HTTP") {
                    "scrape its https secure port"
                } else {
                    "fix the URL or the credentials' files named above"
                };
                out.push(Check::fail(&check, url, detail, advice));
                continue;
            }
        };
        out.push(match scrape_once(&how, timeout).await {
            ScrapeOutcome::Body { body, source } => {
                let d = crate::store::metrics::ScrapeDigest::of(&body);
                match d.mapped {
                    None => Check::fail(
                        &check,
                        source,
                        d.no_samples.unwrap_or_else(|| "no metrics in the answer".into()),
                        format!("point the URL at {}'s /metrics", c.target.component()),
                    ),
                    Some(mapped) => {
                        let t = concepts::table();
                        let version = mapped.version.clone().unwrap_or_else(|| "version unknown".into());
                        let informers = mapped
                            .series
                            .keys()
                            .filter(|k| k.concept == t.idx(Concept::InformerStoreResourceVersion))
                            .count();
                        let queues = mapped
                            .series
                            .keys()
                            .filter(|k| k.concept == t.idx(Concept::WorkqueueDepth))
                            .count();
                        let old = mapped
                            .version
                            .as_deref()
                            .and_then(minor_version)
                            .is_some_and(|v| v < INFORMER_METRICS_SINCE);
                        let detail = if informers > 0 {
                            format!("{version}: {informers} informers, {queues} workqueues")
                        } else if old {
                            format!(
                                "{version}: {queues} workqueues; no informer metrics (they came in Kubernetes 1.36), so its informers' lag cannot be shown"
                            )
                        } else {
                            format!("{version}: {queues} workqueues; no informer_* series")
                        };
                        Check::ok(&check, source, detail)
                    }
                }
            }
            ScrapeOutcome::Failed { source, error } => {
                let advice = if denied(&error) {
                    "the credentials need `get` on the nonResourceURL /metrics (kubeadm's admin.conf has it)"
                } else {
                    "is the component running, on this --secure-port? (its static pod manifest says)"
                };
                Check::fail(&check, source, error, advice)
            }
        });
    }
    out
}

async fn apiserver(m: &MetricsArgs, timeout: Duration) -> Vec<Check> {
    use crate::model::ScrapeOutcome;
    use crate::source::scrape::scrape_once;
    let mut out = Vec::new();
    let scfg = match m.scrape_config() {
        Ok(c) => c,
        Err(e) => {
            out.push(Check::fail(
                "apiserver",
                "flags",
                e,
                "fix the flag named above",
            ));
            return out;
        }
    };
    if !scfg.apiserver.is_configured() {
        out.push(Check::skip(
            "apiserver",
            "not checked",
            "no kubeconfig found (admin.conf under the root, $KUBECONFIG, ~/.kube/config): pass --kubeconfig or --apiserver-metrics-url to check /metrics and the informers",
        ));
        return out;
    }
    let target = scfg.apiserver.describe();
    let clients = match scfg.apiserver.connect().await {
        Ok(Some(c)) => c,
        Ok(None) => return out,
        Err(e) => {
            out.push(Check::fail(
                "apiserver",
                target,
                e,
                "check the kubeconfig (--kubeconfig, --context) or --apiserver-metrics-url",
            ));
            return out;
        }
    };
    out.push(match scrape_once(&clients.metrics, timeout).await {
        ScrapeOutcome::Body { body, source } => metrics_body(
            "apiserver metrics",
            &source,
            &body,
            b"apiserver_request_total",
            "kube-apiserver's",
            "point --apiserver-metrics-url or the kubeconfig at kube-apiserver",
        ),
        ScrapeOutcome::Failed { source, error } => {
            let advice = if denied(&error) {
                "the user needs `get` on the nonResourceURL /metrics (kubeadm's admin.conf has it)"
            } else {
                "is kube-apiserver running there? check the kubeconfig's server (or --apiserver-metrics-url)"
            };
            Check::fail("apiserver metrics", source, error, advice)
        }
    });
    let (resources, errors) =
        crate::source::informer::resolve_informers(&clients.kube, &scfg.informers).await;
    for e in errors {
        out.push(Check::fail(
            "informer",
            "--informers",
            e,
            "fix the --informers entry",
        ));
    }
    for r in resources {
        let api: kube::Api<kube::core::DynamicObject> =
            kube::Api::all_with(clients.kube.clone(), &r.api_resource());
        let lp = kube::api::ListParams::default().limit(1);
        out.push(
            match tokio::time::timeout(timeout, api.list_metadata(&lp)).await {
                Ok(Ok(_)) => Check::ok("informer", r.label(), "may list and watch"),
                Ok(Err(e)) => {
                    let msg = crate::source::informer::one_line_kube(&e);
                    let advice = if denied(&msg) {
                        "informer lag needs list and watch on it: grant them, or leave it out of --informers"
                    } else {
                        "the apiserver did not answer the list: is it running, and is the kubeconfig's server right?"
                    };
                    Check::fail("informer", r.label(), msg, advice)
                }
                Err(_) => Check::fail(
                    "informer",
                    r.label(),
                    format!("no answer within {} s", timeout.as_secs()),
                    "the apiserver is slow or unreachable",
                ),
            },
        );
    }
    out
}

/// Whether an error is the apiserver refusing the user (401/403), not a failure to reach it.
fn denied(error: &str) -> bool {
    let e = error.to_ascii_lowercase();
    ["401", "403", "forbidden", "unauthorized"]
        .iter()
        .any(|w| e.contains(w))
}

/// How the values stored under the resources the encryption config covers are written,
/// from up to 50 keys per resource (a read of etcd, nothing else): encrypted with a key the
/// config has, with one it lacks (regscope cannot decrypt those), or in plaintext while
/// the config's first provider encrypts (they are encrypted on their next write).
async fn stored_values(
    opts: &EtcdOptions,
    prefix: &[u8],
    k: &crate::decrypt::Keyring,
    timeout: Duration,
) -> Option<Check> {
    let (mut client, _) = opts.connect(timeout).await.ok()?;
    let keys = k.keys();
    let (mut matched, mut plain, mut unknown) = (0usize, 0usize, Vec::<String>::new());
    let mut unknown_values = 0usize;
    let mut resources = Vec::new();
    for r in k.resources() {
        if r.contains('*') {
            continue;
        }
        // `secrets` is stored under <prefix>/secrets/, `widgets.example.com` under
        // <prefix>/example.com/widgets/ (the apiserver's key layout for group resources).
        let path = match r.split_once('.') {
            Some((res, group)) => format!("{group}/{res}"),
            None => r.clone(),
        };
        let mut key = prefix.to_vec();
        key.push(b'/');
        key.extend_from_slice(path.as_bytes());
        key.push(b'/');
        let get = etcd_client::GetOptions::new().with_prefix().with_limit(50);
        let resp = tokio::time::timeout(timeout, client.get(key, Some(get)))
            .await
            .ok()?
            .ok()?;
        for kv in resp.kvs() {
            let v = kv.value();
            match v.strip_prefix(b"k8s:enc:") {
                Some(rest) => {
                    let mut parts = rest.splitn(4, |b| *b == b':');
                    let provider =
                        String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
                    let _version = parts.next();
                    let name =
                        String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
                    let provider = match provider.as_str() {
                        "kms" => "kmsv1".to_string(),
                        p => p.to_string(),
                    };
                    if keys.iter().any(|(p, n)| *p == provider && *n == name)
                        || keys
                            .iter()
                            .any(|(p, _)| p.starts_with("kms") && provider.starts_with("kms"))
                    {
                        matched += 1;
                    } else {
                        unknown_values += 1;
                        if !unknown.contains(&format!("{provider}:{name}")) {
                            unknown.push(format!("{provider}:{name}"));
                        }
                    }
                }
                None => plain += 1,
            }
        }
        resources.push(r);
    }
    if resources.is_empty() {
        return None;
    }
    let first_encrypts = keys.first().is_some_and(|(p, _)| p != "identity");
    let detail = format!(
        "{} value{} read under {}: {matched} encrypted with the config's keys, {plain} in plaintext{}",
        matched + plain + unknown_values,
        if matched + plain + unknown_values == 1 {
            ""
        } else {
            "s"
        },
        resources.join(", "),
        if unknown.is_empty() {
            String::new()
        } else {
            format!(
                ", {unknown_values} with keys the config lacks ({})",
                unknown.join(", ")
            )
        }
    );
    Some(if !unknown.is_empty() {
        Check::fail(
            "encrypted values",
            "etcd",
            detail,
            "values written with a key this config does not have cannot be decrypted: use the apiserver's current config, or add the old key",
        )
    } else if plain > 0 && first_encrypts {
        Check::fail(
            "encrypted values",
            "etcd",
            detail,
            "the config encrypts, but some values were written before it: rewrite them (kubectl get secrets -A -o json | kubectl replace -f -)",
        )
    } else {
        Check::ok("encrypted values", "etcd", detail)
    })
}

/// The TLS files: readable and usable.
fn file_checks(opts: &EtcdOptions, now: SystemTime, out: &mut Vec<Check>) {
    if let Some(ca) = &opts.cacert {
        let target = ca.display().to_string();
        match CertInfo::from_pem_file(ca) {
            Ok(info) => {
                let faults = info.faults("the CA certificate", now);
                out.push(if faults.is_empty() {
                    Check::ok("file", target, format!("CA {}", info.subject))
                } else {
                    Check::fail(
                        "file",
                        target,
                        faults.join("; "),
                        "replace the CA bundle (--etcd-cafile / --cacert)",
                    )
                });
            }
            Err(e) => out.push(Check::fail(
                "file",
                target,
                e,
                "check the path and that you may read it (sudo); --cacert overrides it",
            )),
        }
    }
    if let Some(cert) = &opts.cert {
        let target = cert.display().to_string();
        match CertInfo::from_pem_file(cert) {
            Ok(info) => {
                let faults = info.client_faults(now);
                out.push(if faults.is_empty() {
                    Check::ok("file", target, format!("client certificate {}", info.subject))
                } else {
                    Check::fail(
                        "file",
                        target,
                        faults.join("; "),
                        "renew or reissue the client certificate (kubeadm: kubeadm certs renew apiserver-etcd-client)",
                    )
                });
            }
            Err(e) => out.push(Check::fail(
                "file",
                target,
                e,
                "check the path and that you may read it (sudo); --cert overrides it",
            )),
        }
    }
    if let Some(key) = &opts.key {
        let target = key.display().to_string();
        out.push(match std::fs::read_to_string(key) {
            Ok(t) if t.contains("PRIVATE KEY-----") => match &opts.cert {
                Some(cert) => match certs::key_matches_cert(cert, key) {
                    Ok(Some(false)) => Check::fail(
                        "file",
                        target,
                        format!("is not the private key of --cert {}", cert.display()),
                        "pass the key that belongs to the certificate (kubeadm: apiserver-etcd-client.key beside apiserver-etcd-client.crt)",
                    ),
                    Ok(Some(true)) => Check::ok("file", target, "private key of --cert"),
                    _ => Check::ok("file", target, "private key"),
                },
                None => Check::ok("file", target, "private key"),
            },
            Ok(_) => Check::fail(
                "file",
                target,
                "holds no PEM private key",
                "check the file, and that --cert and --key are not swapped",
            ),
            Err(e) => Check::fail(
                "file",
                target,
                format!("cannot read: {e}"),
                "check the path and that you may read it (sudo); --key overrides it",
            ),
        });
    }
}

/// One member on its own: connect and Status; a TLS failure explained from the
/// certificates.
/// Whether etcd holds anything under the prefix regscope reads (`--prefix`, else the
/// node's kube-apiserver `--etcd-prefix`, else `/registry`): an empty prefix is the usual
/// sign of a wrong one, and every panel would be empty. `None` when etcd cannot be asked
/// (the member checks say why).
async fn prefix_check(opts: &EtcdOptions, prefix: &[u8], timeout: Duration) -> Option<Check> {
    let (mut client, _) = opts.connect(timeout).await.ok()?;
    let target = format!(
        "{}/",
        crate::model::escape_bytes(prefix).trim_end_matches('/')
    );
    let counted = tokio::time::timeout(
        timeout,
        crate::source::etcd::keys_under(&mut client, prefix),
    )
    .await;
    Some(match counted {
        Ok(Ok(crate::source::etcd::KeysUnder::Some(n))) => Check::ok(
            "prefix",
            target,
            format!(
                "{} key{}",
                crate::derive::units::thousands(n.max(0) as u64),
                if n == 1 { "" } else { "s" }
            ),
        ),
        Ok(Ok(crate::source::etcd::KeysUnder::None(msg))) => Check::fail(
            "prefix",
            target,
            msg,
            "pass the prefix kube-apiserver stores under (its --etcd-prefix) in --prefix",
        ),
        Ok(Err(e)) => Check::fail(
            "prefix",
            target,
            format!("cannot count the keys: {e}"),
            "grant the user read access to the prefix, or use the apiserver's etcd client certificate",
        ),
        Err(_) => Check::fail(
            "prefix",
            target,
            format!("counting the keys took longer than {}", humantime::format_duration(timeout)),
            "etcd is overloaded: check `etcdctl endpoint status` and etcd's log",
        ),
    })
}

async fn member(opts: &EtcdOptions, ep: &str, label: &str, timeout: Duration) -> Check {
    let one = EtcdOptions {
        endpoints: vec![ep.to_string()],
        ..opts.clone()
    };
    match one.connect_info(timeout).await {
        Ok(c) => {
            let s = &c.status;
            let role = if s.is_learner {
                "learner"
            } else if s.leader != 0 && s.leader == s.member_id {
                "leader"
            } else if s.leader == 0 {
                "no leader"
            } else {
                "follower"
            };
            let detail = format!(
                "etcd {}, {role}, raft term {}, db {} ({} in use), revision {}{}",
                c.version,
                s.raft_term,
                crate::derive::units::bytes(s.db_size.max(0) as u64),
                crate::derive::units::bytes(s.db_size_in_use.max(0) as u64),
                c.revision,
                if s.errors.is_empty() {
                    String::new()
                } else {
                    format!("; alarms: {}", s.errors.join("; "))
                }
            );
            if s.leader == 0 || !s.errors.is_empty() {
                Check::fail(
                    label,
                    ep,
                    detail,
                    "the member has no leader or an alarm is raised: check `etcdctl endpoint status --cluster` and etcd's log",
                )
            } else {
                Check::ok(label, ep, detail)
            }
        }
        Err(e) => {
            use crate::source::ConnectError as E;
            let mut detail = e.to_string();
            let mut advice = match &e {
                E::File { .. } | E::BadFile { .. } => "fix the file named above",
                E::Unreachable { .. } if label.starts_with("etcd for ") => {
                    "start etcd there, or correct kube-apiserver's --etcd-servers-overrides"
                }
                E::Unreachable { .. } => {
                    "start etcd there, or correct the endpoint (kube-apiserver's --etcd-servers, or --endpoints)"
                }
                E::NotResponding { .. } => {
                    "the member is overloaded, stopped or cut off: check its log and `etcdctl endpoint status`"
                }
                E::Tls { .. } => "check --cacert, --cert and --key against etcd's --trusted-ca-file and --cert-file",
                E::Auth { .. } => "check --user/--password (etcd has auth enabled)",
                E::Permission { .. } => "grant the user read access to the prefix, or use the apiserver's etcd client certificate",
                E::Other { .. } => "see the error above",
            }
            .to_string();
            if ep.starts_with("https://") {
                let (o, ep_owned) = (one.clone(), ep.to_string());
                let faults =
                    tokio::task::spawn_blocking(move || certs::diagnose(&o, &ep_owned, timeout))
                        .await
                        .unwrap_or_default();
                if !faults.is_empty() {
                    detail = format!("TLS refused: {}", faults.join("; "));
                    advice = "fix the certificate named above (the client's --cert, etcd's --cert-file, or the CA given with --etcd-cafile/--cacert)".into();
                }
            }
            Check::fail(label, ep, detail, advice)
        }
    }
}

/// A `/metrics` body that answered: ok when it holds `marker` (a metric name only that
/// server exposes), else a failure saying it is not `whose` metrics.
fn metrics_body(
    check: &str,
    source: &str,
    body: &[u8],
    marker: &[u8],
    whose: &str,
    advice: &str,
) -> Check {
    if body.windows(marker.len()).any(|w| w == marker) {
        Check::ok(
            check,
            source,
            format!(
                "{} of metrics",
                crate::derive::units::bytes(body.len() as u64)
            ),
        )
    } else {
        Check::fail(
            check,
            source,
            format!("answered, but not with {whose} metrics"),
            advice,
        )
    }
}

async fn etcd_metrics(url: Option<&str>, opts: &EtcdOptions, timeout: Duration) -> Check {
    use crate::model::ScrapeOutcome;
    use crate::source::scrape::{scrape_once, ScrapeFrom};
    let how = match url {
        Some(u) => ScrapeFrom::etcd_url(u, opts),
        None => ScrapeFrom::etcd(opts),
    };
    let how = match how {
        Ok(h) => h,
        Err(e) => {
            return Check::fail(
                "etcd metrics",
                url.unwrap_or("(endpoint)"),
                e.to_string(),
                "check --cacert, --cert and --key (etcd's /metrics is read with them), or pass --etcd-metrics-url",
            )
        }
    };
    let url = how.source().to_string();
    let url = url.as_str();
    match scrape_once(&how, timeout).await {
        ScrapeOutcome::Body { body, .. } => metrics_body(
            "etcd metrics",
            url,
            &body,
            b"etcd_server_",
            "etcd's",
            "check etcd's --listen-metrics-urls, or pass --etcd-metrics-url",
        ),
        ScrapeOutcome::Failed { error, .. } => Check::fail(
            "etcd metrics",
            url,
            error,
            "check etcd's --listen-metrics-urls, or pass --etcd-metrics-url",
        ),
    }
}

/// One check per known etcd watch bug of each etcd version the members run
/// ([`crate::node::etcd_bugs::known_watch_bugs`]), or one line saying none applies; each
/// member's Status is asked once more for its version (members that do not answer are left
/// to the member checks). Known bugs are facts about the server, not faults of the node's
/// setup: they pass, with the release that fixes them as advice.
async fn known_bug_checks(opts: &EtcdOptions, timeout: Duration) -> (Vec<Check>, Vec<String>) {
    use crate::node::etcd_bugs::{known_watch_bugs, KNOWN_WATCH_BUGS};
    // Members by version, in the order they answered.
    let mut versions: Vec<(String, Vec<String>)> = Vec::new();
    for ep in &opts.endpoints {
        let one = EtcdOptions {
            endpoints: vec![ep.clone()],
            ..opts.clone()
        };
        let Ok(c) = one.connect_info(timeout).await else {
            continue;
        };
        match versions.iter_mut().find(|(v, _)| *v == c.version) {
            Some((_, eps)) => eps.push(ep.clone()),
            None => versions.push((c.version, vec![ep.clone()])),
        }
    }
    let mut out = Vec::new();
    let seen: Vec<String> = versions.iter().map(|(v, _)| v.clone()).collect();
    for (version, endpoints) in versions {
        let target = endpoints.join(",");
        let bugs = known_watch_bugs(&version);
        if bugs.is_empty() {
            let known: Vec<&str> = KNOWN_WATCH_BUGS.iter().map(|b| b.id).collect();
            out.push(Check::ok(
                "etcd known bugs",
                target,
                format!(
                    "etcd {version}: none of the watch bugs regscope knows applies ({})",
                    known.join(", ")
                ),
            ));
            continue;
        }
        for b in bugs {
            out.push(Check {
                advice: Some(format!("upgrade etcd: fixed by {}", b.fixed_in)),
                ..Check::ok(
                    "etcd known bug",
                    target.clone(),
                    format!(
                        "etcd {version} has {} ({}): {}; regscope {}",
                        b.id, b.affected, b.what, b.regscope_does
                    ),
                )
            });
        }
    }
    (out, seen)
}

/// The etcd flags the node's manifest gives against the etcd versions its members run:
/// a flag spelt as etcd 3.6 renamed it (`--watch-progress-notify-interval`,
/// `--feature-gates`) on a member before 3.6, or an `--experimental-*` spelling on 3.7 and
/// later (etcd-io/etcd#19959), is one that etcd refuses to start with: what the manifest
/// says is then not what runs. Spellings from [`crate::node::ETCD_RENAMED_FLAGS`] and
/// [`crate::node::ETCD_GATED_FLAGS`].
fn spelling_checks(d: &Discovery, versions: &[String]) -> Vec<Check> {
    use crate::metrics::concepts::minor_version;
    use crate::node::{ETCD_GATED_FLAGS, ETCD_RENAMED_FLAGS};
    let Some(file) = &d.etcd_flags_file else {
        return Vec::new();
    };
    let mut flags: Vec<&str> = d
        .facts
        .iter()
        .filter(|f| &f.file == file)
        .filter_map(|f| f.flag.as_deref())
        .map(|f| f.trim_start_matches('-'))
        .collect();
    flags.sort_unstable();
    flags.dedup();
    let mut out = Vec::new();
    for version in versions {
        let Some(v) = minor_version(version) else {
            continue;
        };
        for flag in &flags {
            let new =
                *flag == "feature-gates" || ETCD_RENAMED_FLAGS.iter().any(|(_, n, _)| n == flag);
            let old = ETCD_RENAMED_FLAGS.iter().any(|(_, _, o)| o == flag)
                || ETCD_GATED_FLAGS.iter().any(|(o, _)| o == flag);
            if new && v < (3, 6) {
                out.push(Check::fail(
                    "etcd flag spelling",
                    file,
                    format!(
                        "etcd {version} does not know --{flag} (etcd 3.6 and later): it refuses to start with a flag it does not know, so the manifest is not what runs (or the member is older than the manifest)"
                    ),
                    "spell it --experimental-… on etcd before 3.6, or upgrade etcd",
                ));
            } else if old && v >= (3, 7) {
                out.push(Check::fail(
                    "etcd flag spelling",
                    file,
                    format!(
                        "etcd {version} refuses --{flag}: etcd 3.7 removed the --experimental-* flags (etcd-io/etcd#19959)"
                    ),
                    "use the etcd 3.6 name (without experimental-) or --feature-gates",
                ));
            }
        }
    }
    out
}

/// etcd's watch progress notify interval and feature gates, as the node's etcd manifest
/// (or k3s's etcd config) gives them; nothing when no such file was read.
///
/// kube-apiserver's watch cache learns etcd's revision from events and progress
/// notifications: a consistent read served from the cache waits until the cache reaches
/// etcd's current revision, and asks etcd for progress every 100 ms while one waits
/// (k8s.io/apiserver `pkg/storage/cacher/progress/watch_progress.go`); etcd's periodic
/// notifications at this interval move the cache of a resource nobody writes. kubeadm sets
/// 5s; etcd's default is 10 minutes (`progressReportInterval`, etcd
/// `server/etcdserver/api/v3rpc/watch.go`).
fn etcd_settings_checks(d: &Discovery) -> Vec<Check> {
    let Some(file) = &d.etcd_flags_file else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let fact = d
        .facts
        .iter()
        .find(|f| f.name == "etcd watch progress notify interval");
    let deprecated = |flag: &str| {
        if flag.trim_start_matches('-').starts_with("experimental-") {
            ", a spelling deprecated in etcd 3.6 and refused by etcd 3.7"
        } else {
            ""
        }
    };
    let why = "kube-apiserver's watch cache learns etcd's revision from progress notifications; between them it knows only the revisions of events it saw";
    out.push(match (&d.etcd_watch_progress_notify_interval, fact) {
        (Some(v), Some(f)) => {
            let flag = f.flag.as_deref().unwrap_or_default();
            Check::ok(
                "etcd progress notify",
                file,
                format!("every {v} ({flag}{}); {why}", deprecated(flag)),
            )
        }
        _ => Check::ok(
            "etcd progress notify",
            file,
            format!("not set: etcd's default, every 10 minutes (kubeadm sets 5s); {why}"),
        ),
    });
    if !d.etcd_feature_gates.is_empty() {
        let gates: Vec<String> = d
            .etcd_feature_gates
            .iter()
            .map(|g| {
                format!(
                    "{}={} ({}{})",
                    g.gate,
                    g.enabled,
                    g.flag,
                    deprecated(&g.flag)
                )
            })
            .collect();
        out.push(Check::ok("etcd feature gates", file, gates.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::Fact;

    fn node(flag: &str) -> Discovery {
        let file = "/etc/kubernetes/manifests/etcd.yaml";
        Discovery {
            etcd_flags_file: Some(file.into()),
            facts: vec![Fact {
                name: "etcd watch progress notify interval",
                value: "5s".into(),
                file: file.into(),
                flag: Some(flag.into()),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn flag_spellings_are_held_to_the_running_etcd() {
        let new = node("--watch-progress-notify-interval");
        let old = node("--experimental-watch-progress-notify-interval");
        let fails = |d: &Discovery, v: &str| {
            spelling_checks(d, &[v.to_string()])
                .into_iter()
                .filter(|c| !c.ok)
                .map(|c| c.detail)
                .collect::<Vec<_>>()
        };
        let f = fails(&new, "3.5.9");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].starts_with("etcd 3.5.9 does not know --watch-progress-notify-interval"));
        assert!(fails(&new, "3.6.4").is_empty());
        assert!(fails(&new, "3.7.0").is_empty());
        assert!(fails(&old, "3.4.23").is_empty());
        assert!(
            fails(&old, "3.6.4").is_empty(),
            "deprecated, still accepted"
        );
        let f = fails(&old, "3.7.1");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("etcd-io/etcd#19959"), "{f:?}");
        // A version that does not parse: nothing claimed.
        assert!(fails(&new, "garbage").is_empty());
    }
}
