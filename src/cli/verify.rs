//! `regscope verify`: mirror the prefix (list, then watch until caught up with etcd's
//! head), read etcd's copy at the replica's revision and compare every key, value,
//! create/mod revision and version. Exit 0 when they match, 1 on any difference.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tokio::sync::mpsc;

use super::args::ConnArgs;
use super::out;
use super::session::{list_with, warn_etcd_alarms};
use crate::model::{ConnState, Observation, Stamped};
use crate::source::EtcdSource;
use crate::store::{Difference, Replica, Session};

/// `println!` through [`out`].
macro_rules! outln {
    ($($t:tt)*) => { out(format_args!("{}\n", format_args!($($t)*))) };
}

/// Mirrors the prefix and compares it with etcd's copy; when etcd compacts past the
/// replica's revision meanwhile (kube-apiserver compacts every 5 minutes), catches up and
/// compares again, up to three times. Prints `OK: …` or each difference on stdout.
pub async fn run(conn: &ConnArgs) -> Result<ExitCode> {
    let source = EtcdSource::new(conn.etcd_options(), conn.sync_options());
    let mut session = Session::new(conn.session_info(String::new()));
    let limit = conn.memory_limit.map(|b| b as u64);
    // etcd may compact past the replica's revision while etcd's copy is read (kube-apiserver
    // compacts every 5 minutes): catch up again and compare at the newer revision.
    let mut attempt = 0;
    let diffs = loop {
        attempt += 1;
        sync_until_caught_up(
            &source,
            &mut session,
            std::time::Duration::from_secs(120),
            limit,
        )
        .await?;
        match verify_replica_within(&source, &session.replica, limit).await {
            Err(e) if attempt < 3 && format!("{e:#}").contains("compacted") => eprintln!(
                "regscope: etcd compacted past revision {} while verifying; catching up and comparing again",
                session.replica.revision()
            ),
            other => break other?,
        }
    };
    let replica = &session.replica;
    // Nothing under the prefix matches trivially: say what etcd holds instead.
    if replica.live_keys() == 0 {
        let timeout = source.sync.request_timeout;
        if let Ok((mut client, _)) = source.etcd.connect(timeout).await {
            let prefix = conn.prefix_bytes();
            let counted = crate::source::etcd::keys_under(&mut client, &prefix);
            if let Ok(Ok(crate::source::etcd::KeysUnder::None(n))) =
                tokio::time::timeout(timeout, counted).await
            {
                eprintln!("regscope: {n}");
            }
        }
    }
    if diffs.is_empty() {
        outln!(
            "OK: {} key{} under {} match etcd at revision {}",
            replica.live_keys(),
            if replica.live_keys() == 1 { "" } else { "s" },
            conn.prefix,
            replica.revision()
        );
        Ok(ExitCode::SUCCESS)
    } else {
        for d in &diffs {
            outln!("{}: {}", d.key, d.what);
        }
        outln!(
            "{} difference(s) at revision {}",
            diffs.len(),
            replica.revision()
        );
        Ok(ExitCode::from(1))
    }
}

/// Runs the live source until the replica has caught up with etcd's head revision as read
/// at the start (bounded by `timeout`), then returns the replica.
///
/// With `memory_limit` (bytes resident), history is dropped to stay under it and the sync
/// ends with an error when even that is not enough.
pub async fn sync_until_caught_up(
    source: &EtcdSource,
    session: &mut Session,
    timeout: Duration,
    memory_limit: Option<u64>,
) -> Result<()> {
    let mut memory = super::memory::MemoryCheck::new(memory_limit, "verify");
    let (mut client, _) = source
        .etcd
        .connect(source.sync.request_timeout)
        .await
        .map_err(anyhow::Error::new)?;
    let head = client
        .get(
            source.sync.range_key(),
            Some(etcd_client::GetOptions::new().with_count_only()),
        )
        .await
        .context("reading etcd's head revision")?
        .header()
        .map_or(0, |h| h.revision());
    let (tx, mut rx) = mpsc::channel::<Stamped>(1024);
    let task = source.clone().spawn(tx);
    let deadline = Instant::now() + timeout;
    let mut progress = super::progress::StderrProgress::new("listing", "listed");
    // When the last writes before `head` were outside the prefix, no event brings the
    // replica to `head`. On etcds whose progress notifications are only "head at least N"
    // (see `Observation::HeadAtLeast`), the replica is taken as caught up once etcd has
    // announced `head` and no event came for `QUIET`: events still queued for the watch
    // would be arriving. Either way the replica is exact at its own revision, which is
    // what `snapshot` reports and `verify` reads etcd at.
    const QUIET: Duration = Duration::from_secs(1);
    let mut last_event = Instant::now();
    let result = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break Err(anyhow::anyhow!(
                "replica did not catch up with etcd revision {head} within {timeout:?} (at {})",
                session.revision()
            ));
        }
        if session.etcd.watch_health().head_at_least >= head
            && session.replica.listing().is_none()
            && session.revision() > 0
            && last_event.elapsed() >= QUIET
        {
            break Ok(());
        }
        match tokio::time::timeout(left.min(QUIET / 4), rx.recv()).await {
            Ok(Some(st)) => {
                if matches!(
                    st.obs,
                    Observation::Events { .. } | Observation::ListPage { .. }
                ) {
                    last_event = Instant::now();
                }
                session.apply(&st);
                progress.update(session.replica.list_progress());
                if let Some(msg) = memory.over(session) {
                    break Err(anyhow::anyhow!("{msg}"));
                }
                if let ConnState::Failed { error } = session.etcd.conn() {
                    break Err(anyhow::anyhow!("{error}"));
                }
                if session.revision() >= head && session.replica.listing().is_none() {
                    break Ok(());
                }
            }
            Ok(None) => break Err(anyhow::anyhow!("source ended")),
            Err(_) => continue,
        }
    };
    task.abort();
    if result.is_ok() {
        warn_etcd_alarms(session);
    }
    result
}

/// Reads the prefix from etcd at the replica's revision and returns every difference.
pub async fn verify_replica(source: &EtcdSource, replica: &Replica) -> Result<Vec<Difference>> {
    verify_replica_within(source, replica, None).await
}

/// [`verify_replica`] under `--memory-limit` (bytes resident): etcd's copy is held beside
/// the replica while they are compared, and the read ends with an error when the process
/// grows past the limit.
pub async fn verify_replica_within(
    source: &EtcdSource,
    replica: &Replica,
    memory_limit: Option<u64>,
) -> Result<Vec<Difference>> {
    let mut kvs = Vec::new();
    let mut progress =
        super::progress::StderrProgress::new("reading etcd's copy:", "read etcd's copy:");
    let mut seen = None;
    let mut checked: Option<Instant> = None;
    list_with(source, replica.revision(), |st| {
        if crate::store::ListProgress::observe(&mut seen, &st) {
            progress.update(seen.as_ref());
        }
        if let Observation::ListPage { kvs: page } = st.obs {
            kvs.extend(page);
        }
        if let Some(limit) = memory_limit {
            if checked.is_none_or(|t| t.elapsed() >= Duration::from_millis(100)) {
                checked = Some(Instant::now());
                let resident = crate::source::process::resident_bytes().unwrap_or(0);
                if resident > limit {
                    bail!(
                        "--memory-limit {} reached while reading etcd's copy to compare ({} resident with {} of its keys read): verify holds the replica and etcd's copy at once; raise --memory-limit",
                        crate::derive::units::bytes(limit),
                        crate::derive::units::bytes(resident),
                        crate::derive::units::thousands(kvs.len() as u64)
                    );
                }
            }
        }
        Ok(())
    })
    .await?;
    // Pages come from several ranges at once; the comparison walks both sides in key order.
    kvs.sort_unstable_by(|a, b| a.key.cmp(&b.key));
    Ok(replica.diff(&kvs))
}
