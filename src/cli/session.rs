//! What the subcommands that connect share: the etcd source connected once to fail fast
//! ([`connect_session`], [`explain`] for its errors), the live sources started
//! ([`start_live`]), the prefix listed once at a revision (`list_with`) and etcd's alarms
//! said on stderr ([`warn_etcd_alarms`]).

use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio::sync::mpsc;

use super::args::ConnArgs;
use crate::model::{Observation, Revision, Stamped};
use crate::source::connect::classify;
use crate::source::etcd::{list_once, ListError};
use crate::source::EtcdSource;
use crate::store::Session;

/// Starts every live source of a session ([`crate::source::live::start`]) and records in
/// `info` which scrape targets are configured. Before a terminal is taken or a file
/// created: an explicit --kubeconfig or URL that cannot be used, or an unreadable metrics
/// file, is printed to stderr here.
///
/// Errors: exit code 2, the reason already printed.
pub async fn start_live(
    source: EtcdSource,
    scfg: &crate::source::ScrapeConfig,
    tx: mpsc::Sender<Stamped>,
    info: &mut crate::model::SessionInfo,
) -> std::result::Result<crate::source::LiveSources, std::process::ExitCode> {
    match crate::source::live::start(Some(source), scfg, tx).await {
        Ok(s) => {
            info.scrape_targets = s.configured().to_vec();
            Ok(s)
        }
        Err(e) => {
            eprintln!("regscope: {e}");
            Err(std::process::ExitCode::from(2))
        }
    }
}

/// The etcd source for `conn`, connected once to fail fast (before a terminal is taken or
/// a file created), with etcd's cluster id and the session's header for it (the endpoint
/// and prefix as the console's title).
///
/// Errors: the one-line connection error (unreachable, TLS, authentication), for stderr.
pub async fn connect_session(
    conn: &ConnArgs,
) -> Result<(EtcdSource, u64, crate::model::SessionInfo), String> {
    let source = EtcdSource::new(conn.etcd_options(), conn.sync_options());
    let cluster_id = match source.etcd.connect_info(source.sync.request_timeout).await {
        Ok(c) => c.cluster_id,
        Err(e) => return Err(explain(&source.etcd, e).await),
    };
    let title = format!(
        "{} {}/",
        source.etcd.endpoint_label(),
        conn.prefix.trim_end_matches('/')
    );
    let info = conn.session_info(title);
    Ok((source, cluster_id, info))
}

/// [`connect_session`] for a daemon that serves (`serve`, `record --listen`): when etcd
/// cannot be reached yet (a node that boots, an etcd static pod not started), it says so
/// on stderr and tries again every 5 s (saying so again once a minute) instead of exiting,
/// so that the unit running it does not give up. `None` when SIGTERM or SIGINT came first.
pub async fn connect_session_waiting(
    conn: &ConnArgs,
    who: &str,
) -> Result<Option<(EtcdSource, u64, crate::model::SessionInfo)>, std::io::Error> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut said: Option<std::time::Instant> = None;
    loop {
        match connect_session(conn).await {
            Ok(c) => {
                if said.is_some() {
                    eprintln!("regscope {who}: etcd reached");
                }
                return Ok(Some(c));
            }
            Err(e) => {
                if said.is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(60)) {
                    eprintln!("regscope {who}: waiting for etcd (trying every 5 s): {e}");
                    said = Some(std::time::Instant::now());
                }
            }
        }
        tokio::select! {
            _ = sigterm.recv() => return Ok(None),
            _ = sigint.recv() => return Ok(None),
            _ = tokio::time::sleep(std::time::Duration::from_secs(5)) => {}
        }
    }
}

/// A connection error as one line, and for a TLS failure what the certificates say is
/// wrong with them ([`crate::node::certs::diagnose`]: expired, X.509 v1, no SAN, …),
/// which rustls's own message ("transport error", "UnknownIssuer") does not.
pub async fn explain(opts: &crate::source::EtcdOptions, e: crate::source::ConnectError) -> String {
    use crate::source::ConnectError as E;
    let line = e.to_string();
    let tls = matches!(e, E::Tls { .. })
        || (matches!(e, E::Other { .. } | E::Unreachable { .. })
            && line.contains("transport error"));
    let Some(endpoint) = opts.endpoints.first().cloned().filter(|_| tls) else {
        return line;
    };
    let o = opts.clone();
    let why = tokio::task::spawn_blocking(move || {
        crate::node::certs::diagnose(&o, &endpoint, Duration::from_secs(3))
    })
    .await
    .unwrap_or_default();
    if why.is_empty() {
        line
    } else {
        format!("{line}\n  because {}", why.join("\n  and "))
    }
}

/// Connects and lists the prefix once at revision `at` (0: now), handing every observation
/// to `each`; `each` returning `Err` ends the list with that error. Errors name the
/// endpoint.
pub(super) async fn list_with(
    source: &EtcdSource,
    at: Revision,
    mut each: impl FnMut(Stamped) -> Result<()>,
) -> Result<()> {
    let conn = match source.etcd.connect_info(source.sync.request_timeout).await {
        Ok(c) => c,
        Err(e) => bail!("{}", explain(&source.etcd, e).await),
    };
    let mut client = conn.client;
    // The member's Status (sizes, alarms) first, as the live source sends it.
    each(Stamped::now(Observation::EtcdStatus(conn.status)))?;
    let (tx, mut rx) = mpsc::channel::<Stamped>(64);
    let src = source.clone();
    let lister = tokio::spawn(async move { list_once(&src, &mut client, tx, at).await });
    while let Some(st) = rx.recv().await {
        if let Err(e) = each(st) {
            lister.abort();
            return Err(e);
        }
    }
    match lister.await.context("list task failed")? {
        Ok(_) => Ok(()),
        // Authentication and permission errors show up on the first read, not on connect.
        Err(ListError::Etcd(e)) => bail!(
            "{}",
            classify(&source.etcd.endpoint_label(), &source.etcd, &e)
        ),
        Err(e) if at == 0 => bail!("listing {}: {e}", source.etcd.endpoint_label()),
        Err(e) => bail!("reading etcd at revision {at}: {e}"),
    }
}

/// Says on stderr when etcd has an alarm raised (NOSPACE: it accepts only reads and
/// deletes), for `snapshot` and `verify`, whose output is otherwise about the data only.
pub fn warn_etcd_alarms(session: &Session) {
    if let Some((_, s)) = session.etcd.etcd_status() {
        let alarms = s.alarms();
        if !alarms.is_empty() {
            let advice = if alarms.iter().any(|a| a == "NOSPACE") {
                ": etcd accepts only reads and deletes (the apiserver fails creates and updates); delete, compact, defragment, then `etcdctl alarm disarm`"
            } else {
                ""
            };
            eprintln!(
                "regscope: warning: etcd alarm {}{advice}",
                alarms.join(", ")
            );
        }
    }
}
