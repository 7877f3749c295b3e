//! Subcommands that print instead of draw: `snapshot`, `verify`, `record`, `export` and
//! `replay --check`. They drive the same sources and the same [`Session`] as the console,
//! so what they print is what the console shows.

pub mod args;
pub mod decode;
pub mod doctor;
pub mod etcdctl_json;
pub mod memory;
pub mod progress;
pub mod record;

/// Writes to stdout; a closed pipe (`regscope snapshot --json | head`) ends the output
/// quietly instead of panicking like `print!` does.
pub fn out(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args).and_then(|()| o.flush()) {
        stdout_error(&e);
    }
}

/// Set once writing to stdout failed for another reason than a closed pipe.
static STDOUT_FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Takes note of an error writing to stdout: a closed pipe (`| head`) ends the output
/// quietly; anything else (a full disk: ENOSPC, an I/O error) is said once on stderr and
/// makes the command fail ([`stdout_failed`]), so that a cut output is never taken for a
/// whole one.
pub fn stdout_error(e: &std::io::Error) {
    use std::sync::atomic::Ordering;
    if e.kind() != std::io::ErrorKind::BrokenPipe && !STDOUT_FAILED.swap(true, Ordering::SeqCst) {
        eprintln!("regscope: writing to stdout: {e}");
    }
}

/// Whether writing to stdout failed (see [`stdout_error`]); `main` then exits 1 where it
/// would have exited 0.
pub fn stdout_failed() -> bool {
    STDOUT_FAILED.load(std::sync::atomic::Ordering::SeqCst)
}

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::Serialize;
use tokio::sync::mpsc;

use serde_json::json;

use crate::derive::apiserver::{ApiserverView, Reading};
use crate::metrics::quantile::Quantile;
use crate::model::{escape_bytes, ConnState, Observation, Revision, Stamped};
use crate::source::connect::classify;
use crate::source::etcd::{list_once, ListError};
use crate::source::EtcdSource;
use crate::store::{Difference, Replica, ReplicaConfig, Session, Summary};

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
    conn: &args::ConnArgs,
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
/// to `each`. Errors name the endpoint.
/// Lists the prefix at `at` (0: now) and hands every observation to `each`; `each`
/// returning `Err` ends the list with that error.
async fn list_with(
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

/// Lists the prefix once into `session` (no watch). Notes (e.g. "no keys under the
/// prefix") are printed to stderr, and so is the progress of a long list. With
/// `memory_limit` (bytes resident) the list ends with an error when it does not fit.
pub async fn snapshot_replica(
    source: &EtcdSource,
    session: &mut Session,
    memory_limit: Option<u64>,
) -> Result<()> {
    let mut progress = progress::StderrProgress::new("listing", "listed");
    let mut memory = memory::MemoryCheck::new(memory_limit, "snapshot");
    list_with(source, 0, |st| {
        if let Observation::Note(n) = &st.obs {
            progress.interrupt();
            eprintln!("regscope: {n}");
        }
        session.apply(&st);
        progress.update(session.replica.list_progress());
        match memory.over(session) {
            Some(msg) => bail!("{msg}"),
            None => Ok(()),
        }
    })
    .await?;
    warn_etcd_alarms(session);
    Ok(())
}

/// One key in `snapshot --json --keys`.
#[derive(Serialize)]
struct KeyRow {
    key: String,
    resource: String,
    create_revision: Revision,
    mod_revision: Revision,
    version: i64,
    lease: i64,
    bytes: usize,
}

#[derive(Serialize)]
struct SnapshotJson {
    #[serde(flatten)]
    summary: Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_list: Option<Vec<KeyRow>>,
}

/// Renders the snapshot JSON for a replica. `with_keys` adds `key_list` (every live key).
/// The EncryptionConfiguration to decrypt with: `--encryption-config FILE` (an error if it
/// cannot be read or parsed), else the file the node's kube-apiserver manifest names in
/// `--encryption-provider-config` ([`crate::node::discover`], filled into
/// `ui.discovered_encryption`): a note, not an error, when that file cannot be used
/// (decoding then shows encrypted values as such). Returns the keyring and, for the
/// discovered case, a note saying where it came from or why not.
pub fn load_keyring(
    ui: &args::UiArgs,
) -> Result<(Option<crate::decrypt::Keyring>, Option<String>)> {
    use crate::decrypt::Keyring;
    if let Some(path) = &ui.encryption_config {
        let k = Keyring::load(path).with_context(|| "--encryption-config".to_string())?;
        return Ok((Some(k), None));
    }
    let Some((path, manifest)) = &ui.discovered_encryption else {
        return Ok((None, None));
    };
    match Keyring::load(path) {
        Ok(k) => Ok((
            Some(k),
            Some(format!(
                "decrypting with {} (from {manifest})",
                path.display()
            )),
        )),
        Err(e) => Ok((None, Some(format!("encrypted values stay encrypted: {e}")))),
    }
}

/// `regscope snapshot --json`: the replica's summary (revision, compact_revision, keys,
/// bytes, resources, gaps, compactions; with `with_keys` every key) and, when `view` is
/// given, the apiserver side ([`metrics_json`]); with `session`, kube-apiserver's other
/// etcd clusters and storage flags when the node told them ([`node_json`]). Without a
/// replica (metric files only) the replica's fields are present and `null`.
pub fn snapshot_json(
    replica: Option<&Replica>,
    with_keys: bool,
    view: Option<&ApiserverView>,
    session: Option<&Session>,
) -> Result<String> {
    let mut out = match replica {
        Some(replica) => serde_json::to_value(SnapshotJson {
            summary: replica.summary(),
            key_list: with_keys.then(|| key_rows(replica)),
        })?,
        None => {
            // The same keys as with a replica, every one null.
            let mut v = serde_json::to_value(Replica::new(ReplicaConfig::default()).summary())?;
            if let Some(o) = v.as_object_mut() {
                o.values_mut().for_each(|x| *x = serde_json::Value::Null);
            }
            v
        }
    };
    if let (Some(view), Some(o)) = (view, out.as_object_mut()) {
        if let serde_json::Value::Object(m) = metrics_json(view) {
            o.extend(m);
        }
    }
    if let (Some(session), Some(o)) = (session, out.as_object_mut()) {
        o.extend(node_json(session));
    }
    Ok(serde_json::to_string_pretty(&out)?)
}

/// kube-apiserver's other etcd clusters and storage flags, for `snapshot --json`:
/// * `other_clusters`: `[{resources, up, since, error, endpoint, version, cluster_id,
///   revision, db_size_bytes, keys, puts, deletes, bytes}]`, `[]` without overrides
///   (`since`: RFC 3339, when it last went up or down; `puts`, `deletes`, `bytes`:
///   watched since the session started);
/// * `apiserver_flags`: `{file, flags: {"--flag": "value"}}` as written in the manifest,
///   or `null` when no manifest told them.
pub fn node_json(session: &Session) -> serde_json::Map<String, serde_json::Value> {
    let mut o = serde_json::Map::new();
    let rows: Vec<_> = session
        .other_clusters
        .all()
        .iter()
        .map(|c| {
            json!({
                "resources": c.resources,
                "up": c.up,
                "since": c.since.map(|t| humantime::format_rfc3339_seconds(t).to_string()),
                "error": c.error,
                "endpoint": c.endpoint,
                "version": c.version,
                "cluster_id": c.cluster_id,
                "revision": c.revision,
                "db_size_bytes": c.db_size,
                "keys": c.keys,
                "puts": c.puts,
                "deletes": c.deletes,
                "bytes": c.bytes,
            })
        })
        .collect();
    o.insert("other_clusters".into(), json!(rows));
    let flags = session.apiserver_flags.as_ref().map(|f| {
        let flags: serde_json::Map<String, serde_json::Value> =
            f.flags.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        json!({ "file": f.file, "flags": flags })
    });
    o.insert("apiserver_flags".into(), json!(flags));
    o
}

fn key_rows(replica: &Replica) -> Vec<KeyRow> {
    let prefix = replica.prefix().to_vec();
    replica
        .range_meta_at(&prefix, replica.revision())
        .map(|it| {
            it.map(|(k, v)| KeyRow {
                key: escape_bytes(k).into_owned(),
                resource: crate::model::KeyPath::parse(&prefix, k)
                    .resource
                    .into_owned(),
                create_revision: v.create_revision,
                mod_revision: v.mod_revision,
                version: v.version,
                lease: v.lease,
                bytes: v.size.unwrap_or(0),
            })
            .collect()
        })
        .unwrap_or_default()
}

/// A quantile for JSON: seconds as a number, `{"at_least": 60}` when the rank is in the
/// `+Inf` bucket, `null` without observations.
fn quantile_json(q: Quantile) -> serde_json::Value {
    match q {
        Quantile::Value(v) => json!(v),
        Quantile::AtLeast(b) => json!({ "at_least": b }),
        Quantile::NoData => serde_json::Value::Null,
    }
}

/// A reading for JSON: the value, or `null` with the reason beside it.
fn reading_json<T: Serialize>(r: &Reading<T>) -> (serde_json::Value, Option<&'static str>) {
    match r {
        Reading::Value(v) => (json!(v), None),
        Reading::NotExposed => (serde_json::Value::Null, Some("not_exposed")),
        Reading::Unavailable => (serde_json::Value::Null, Some("unavailable")),
        Reading::Pending => (serde_json::Value::Null, Some("pending")),
    }
}

/// The apiserver side of `snapshot --json`:
/// * `latency`: `[{metric, operation, group, resource, count, p50, p90, p99, rate,
///   error_rate}]`, worst p99 first; `operation` is the storage operation or the verb;
///   times in seconds (see [`quantile_json`]); from a single scrape the quantiles are over
///   everything since the apiserver started.
/// * `watch_cache`: `[{group, resource, capacity, history_span_seconds}]`.
/// * `objects`: `[{group, resource, apiserver, replica, flag}]`; `apiserver` is null with
///   `apiserver_state` "unavailable" for the −1 sentinel or "not_exposed".
/// * `etcd`: `{db_size_bytes, db_in_use_bytes, quota_bytes, compact_revision, revision,
///   …}` from etcd's `/metrics`, or null without them.
/// * `compaction_window`, `apf`, `not_exposed`, and `scrape` (per target status).
pub fn metrics_json(view: &ApiserverView) -> serde_json::Value {
    let latency: Vec<_> = view
        .latency
        .iter()
        .map(|r| {
            json!({
                "metric": r.metric,
                "operation": r.operation,
                "group": r.group,
                "resource": r.resource,
                "count": r.count,
                "p50": quantile_json(r.p50),
                "p90": quantile_json(r.p90),
                "p99": quantile_json(r.p99),
                "rate": r.rate,
                "error_rate": r.error_rate,
            })
        })
        .collect();
    let watch_cache: Vec<_> = view
        .watch_cache
        .iter()
        .map(|r| {
            json!({
                "group": r.group,
                "resource": r.resource,
                "capacity": reading_json(&r.capacity).0,
                "history_span_seconds": r.history_span_seconds,
            })
        })
        .collect();
    let objects: Vec<_> = view
        .objects
        .iter()
        .map(|r| {
            let (v, state) = reading_json(&r.apiserver);
            let mut o = json!({
                "group": r.group,
                "resource": r.resource,
                "apiserver": v,
                "replica": r.replica,
            });
            if let Some(state) = state {
                o["apiserver_state"] = json!(state);
            }
            if let Some(f) = &r.flag {
                o["flag"] = json!(f);
            }
            o
        })
        .collect();
    let etcd = view
        .etcd_health
        .as_ref()
        .filter(|h| h.db_size_bytes.is_some() || h.revision.is_some())
        .map(|h| {
            json!({
                "db_size_bytes": h.db_size_bytes,
                "db_in_use_bytes": h.db_in_use_bytes,
                "quota_bytes": h.quota_bytes,
                "quota_used_percent": h.quota_used_percent,
                "not_in_use_percent": h.not_in_use_percent,
                "reclaimable_bytes": h.reclaimable_bytes,
                "compact_revision": h.compact_revision,
                "revision": h.revision,
                "has_leader": h.has_leader,
            })
        });
    // The apiserver's own view of the database size (apiserver_storage_size_bytes and its
    // older names), next to etcd's.
    let apiserver_db = view
        .etcd_health
        .as_ref()
        .map_or(serde_json::Value::Null, |h| {
            reading_json(&h.apiserver_db_size_bytes).0
        });
    json!({
        "latency": latency,
        "watch_cache": watch_cache,
        "objects": objects,
        "apiserver_storage_size_bytes": apiserver_db,
        "etcd": etcd,
        "compaction_window": view.window,
        "apf": view.apf,
        "not_exposed": view.not_exposed,
        "scrape": { "apiserver": view.apiserver, "etcd": view.etcd },
    })
}

/// Says on stderr when etcd has an alarm raised (NOSPACE: it accepts only reads and
/// deletes), for `snapshot` and `verify`, whose output is otherwise about the data only.
pub fn warn_etcd_alarms(session: &Session) {
    if let Some((_, s)) = session.replica.etcd_status() {
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
    let mut memory = memory::MemoryCheck::new(memory_limit, "verify");
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
    let mut progress = progress::StderrProgress::new("listing", "listed");
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
        if session.replica.watch_health().head_at_least >= head
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
                if let ConnState::Failed { error } = session.replica.conn() {
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
    let mut progress = progress::StderrProgress::new("reading etcd's copy:", "read etcd's copy:");
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
