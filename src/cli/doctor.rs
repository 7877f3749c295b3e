//! `regscope doctor`: what the node runs ([`crate::node::discover`]) with where each fact
//! was found, then every connection checked, each failure with what to do.
//!
//! Checks, in order: discovery problems (a manifest that cannot be read or lacks
//! `--etcd-servers`); the TLS files (readable, PEM, validity, clientAuth usage, X.509
//! version); each etcd member on its own (connect and `Maintenance.Status`: version,
//! leader, db size); each member of an `--etcd-servers-overrides` cluster; etcd's
//! `/metrics`; the encryption config (readable, which resources it covers). A TLS failure
//! is explained from the certificates ([`crate::node::certs`]). Read-only like the rest of
//! regscope: Status and a metrics GET are all it sends.

use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::Result;
use serde::Serialize;

use crate::cli::args::{DoctorArgs, MetricsArgs};
use crate::node::certs::{self, CertInfo};
use crate::node::Discovery;
use crate::source::EtcdOptions;

/// One check's verdict.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    /// What was checked: `discovery`, `file`, `etcd member`, `events etcd`, `etcd metrics`,
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
}

impl Check {
    fn ok(check: &str, target: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            check: check.into(),
            target: target.into(),
            ok: true,
            detail: detail.into(),
            advice: None,
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
            if c.ok { "ok  " } else { "FAIL" },
            c.check,
            c.target,
            c.detail
        ));
        if let Some(a) = &c.advice {
            s.push_str(&format!("        → {a}\n"));
        }
    }
    let failed = checks.iter().filter(|c| !c.ok).count();
    s.push_str(&match failed {
        0 => "\nAll checks passed.\n".to_string(),
        n => format!("\n{n} check(s) failed.\n"),
    });
    s
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
            "run as root (sudo) on a control-plane node, pass --endpoints/--cacert/--cert/--key, or --root DIR for a copied node",
        ));
    }
    let opts = a.conn.etcd_options();
    let now = SystemTime::now();
    let ca = file_checks(&opts, now, &mut out);
    let files_ok = out.iter().all(|c| c.check != "file" || c.ok);
    if given || d.etcd.is_some() {
        for ep in &opts.endpoints {
            out.push(member(&opts, ep, "etcd member", ca.as_ref(), files_ok, a.timeout).await);
        }
    }
    for o in &d.overrides {
        let oo = EtcdOptions {
            endpoints: o.endpoints.clone(),
            ..opts.clone()
        }
        .with_defaults();
        let label = format!("etcd for {}", o.resource);
        for ep in &oo.endpoints {
            out.push(member(&oo, ep, &label, ca.as_ref(), files_ok, a.timeout).await);
        }
    }
    if let Some(url) = m
        .etcd_metrics_url
        .clone()
        .or_else(|| d.etcd_metrics_url.clone())
    {
        out.push(etcd_metrics(&url, &opts, a.timeout).await);
    }
    if let Some(path) = &d.encryption_config {
        out.push(match crate::decrypt::Keyring::load(path) {
            Ok(k) => {
                let providers: Vec<String> =
                    k.keys().into_iter().map(|(p, _)| p).fold(Vec::new(), |mut v, p| {
                        if !v.contains(&p) {
                            v.push(p);
                        }
                        v
                    });
                Check::ok(
                    "encryption config",
                    path.display().to_string(),
                    format!(
                        "covers {}; providers {}",
                        k.resources().join(", "),
                        providers.join(", ")
                    ),
                )
            }
            Err(e) => Check::fail(
                "encryption config",
                path.display().to_string(),
                e.to_string(),
                "regscope shows encrypted values as such until it can read this file (run as root, or pass --encryption-config)",
            ),
        });
    }
    out
}

/// The TLS files: readable and usable. Returns the CA certificate when it parsed.
fn file_checks(opts: &EtcdOptions, now: SystemTime, out: &mut Vec<Check>) -> Option<CertInfo> {
    let mut ca_info = None;
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
                ca_info = Some(info);
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
            Ok(t) if t.contains("PRIVATE KEY-----") => Check::ok("file", target, "private key"),
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
    ca_info
}

/// One member on its own: connect and Status; a TLS failure explained from the
/// certificates.
async fn member(
    opts: &EtcdOptions,
    ep: &str,
    label: &str,
    ca: Option<&CertInfo>,
    files_ok: bool,
    timeout: Duration,
) -> Check {
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
                crate::tui::format::bytes(s.db_size.max(0) as u64),
                crate::tui::format::bytes(s.db_size_in_use.max(0) as u64),
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
            if ep.starts_with("https://") && files_ok {
                let ep_owned = ep.to_string();
                let chain =
                    tokio::task::spawn_blocking(move || certs::server_chain(&ep_owned, timeout))
                        .await
                        .unwrap_or_else(|e| Err(e.to_string()));
                if let Ok(chain) = chain {
                    if let Some(Ok(leaf)) = chain.first().map(|d| CertInfo::from_der(d)) {
                        let faults = leaf.server_faults(certs::host_of(ep), ca, SystemTime::now());
                        if !faults.is_empty() {
                            detail = faults.join("; ");
                            advice = "fix the certificate named above (etcd's --cert-file, or the CA given with --etcd-cafile/--cacert)".into();
                        }
                    }
                }
            }
            Check::fail(label, ep, detail, advice)
        }
    }
}

async fn etcd_metrics(url: &str, opts: &EtcdOptions, timeout: Duration) -> Check {
    use crate::model::ScrapeOutcome;
    use crate::source::scrape::{scrape_once, ScrapeFrom};
    let how = match ScrapeFrom::etcd_url(url, opts) {
        Ok(h) => h,
        Err(e) => return Check::fail("etcd metrics", url, e, "pass --etcd-metrics-url"),
    };
    match scrape_once(&how, timeout).await {
        ScrapeOutcome::Body { body, .. } => {
            if body.windows(12).any(|w| w == b"etcd_server_") {
                Check::ok(
                    "etcd metrics",
                    url,
                    format!(
                        "{} of metrics",
                        crate::tui::format::bytes(body.len() as u64)
                    ),
                )
            } else {
                Check::fail(
                    "etcd metrics",
                    url,
                    "answered, but not with etcd's metrics",
                    "check etcd's --listen-metrics-urls, or pass --etcd-metrics-url",
                )
            }
        }
        ScrapeOutcome::Failed { error, .. } => Check::fail(
            "etcd metrics",
            url,
            error,
            "check etcd's --listen-metrics-urls, or pass --etcd-metrics-url",
        ),
    }
}
