//! `regscope snapshot --json`: the store's summary as JSON, live ([`live`]: list the
//! prefix once, poll the members, scrape each target once) or at a moment of a recording
//! ([`from_recording`]). Both print [`snapshot_json`] of a [`Session`], the same data the
//! console shows, derived the same way; scripts and tests read this surface.

use std::process::ExitCode;

use anyhow::{bail, Result};
use serde::Serialize;
use serde_json::json;

use super::args::{MetricsArgs, SnapshotArgs};
use super::options::scrape_config;
use super::out;
use super::recording::{open, parse_at};
use super::session::{list_with, warn_etcd_alarms};
use crate::config::Zone;
use crate::derive::apiserver::{ApiserverPanels, Reading};
use crate::metrics::quantile::Quantile;
use crate::model::{escape_bytes, Observation, Revision, ScrapeTarget, Stamped};
use crate::record::Target;
use crate::source::scrape::{scrape_once, ScrapeFrom};
use crate::source::{EtcdMetricsFrom, EtcdSource};
use crate::store::{Replica, ReplicaConfig, Session, Summary};

/// `snapshot --json`: the replica (unless only metric files are given and no
/// `--endpoints`), then one scrape of each configured target (or the metric files), derived
/// into the apiserver panels' data.
pub async fn live(s: &SnapshotArgs, m: &MetricsArgs) -> Result<ExitCode> {
    let conn = &s.conn;
    let scfg = match scrape_config(m) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let files = match scfg.file_observations() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("regscope: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let files_only = scfg.has_files() && conn.endpoints.is_empty();
    let source = EtcdSource::new(conn.etcd_options(), conn.sync_options());
    let mut session = Session::new(conn.session_info(String::new()));
    if !files_only {
        // kube-apiserver's other etcd clusters are asked once each, while the main one is
        // listed: a hung one then costs its timeouts beside the list, not after it.
        let others = conn.other_clusters(&m.node_other_clusters);
        let others_asked = futures::future::join_all(others.iter().map(|o| o.once()));
        let limit = conn.memory_limit.map(|b| b as u64);
        let (listed, others_seen) =
            tokio::join!(snapshot_replica(&source, &mut session, limit), others_asked);
        listed?;
        // The members, polled once (the console polls them beside its watch).
        if let Some(rows) =
            crate::source::members_once(&source.etcd, source.sync.request_timeout).await
        {
            session.apply(&Stamped::now(Observation::Members(rows)));
        }
        if let Some(f) = &scfg.apiserver_flags {
            session.apply(&Stamped::now(Observation::ApiserverFlags(f.clone())));
        }
        for seen in others_seen {
            session.apply(&Stamped::now(Observation::OtherCluster(seen)));
        }
    }
    for st in &files {
        session.apply(st);
    }
    if !files_only {
        let mut live: Vec<(ScrapeTarget, ScrapeFrom)> = Vec::new();
        if scfg.apiserver_files.is_empty() {
            match scfg.apiserver.connect().await {
                Ok(Some(c)) => live.push((ScrapeTarget::Apiserver, c.metrics)),
                Ok(None) => {}
                Err(e) if scfg.apiserver.is_explicit() => {
                    eprintln!("regscope: {e}");
                    return Ok(ExitCode::from(2));
                }
                Err(e) => eprintln!("regscope: apiserver side off: {e}"),
            }
        }
        if scfg.etcd_files.is_empty() {
            let how = match &scfg.etcd {
                EtcdMetricsFrom::Off => None,
                EtcdMetricsFrom::Endpoint => Some(ScrapeFrom::etcd(&source.etcd)),
                EtcdMetricsFrom::Url(u) => Some(ScrapeFrom::etcd_url(u, &source.etcd)),
            };
            match how {
                Some(Ok(h)) => live.push((ScrapeTarget::Etcd, h)),
                Some(Err(e)) => eprintln!("regscope: etcd metrics not scraped: {e}"),
                None => {}
            }
        }
        let live_controllers: Vec<_> = scfg
            .controllers
            .iter()
            .filter(|c| c.files.is_empty())
            .collect();
        // Read once for both components (their default credentials are the kubeconfig's).
        let kube_cfg = if live_controllers.is_empty() {
            None
        } else {
            scfg.apiserver.load_config().await.ok().flatten()
        };
        for c in live_controllers {
            let url = c.url.as_deref().unwrap_or_default();
            match crate::source::controllers::scrape_from(
                c.target,
                url,
                &scfg.controllers_auth,
                kube_cfg.as_ref(),
            ) {
                Ok((how, _)) => live.push((c.target, how)),
                Err(e) if c.discovered => {
                    eprintln!(
                        "regscope: {} metrics not scraped: {e}",
                        c.target.component()
                    );
                }
                Err(e) => {
                    eprintln!("regscope: {e}");
                    return Ok(ExitCode::from(2));
                }
            }
        }
        for (target, how) in live {
            let outcome = scrape_once(&how, scfg.timeout).await;
            session.apply(&Stamped::now(Observation::Scrape { target, outcome }));
        }
    }
    // The session's clock is the newest stamp, as in the console; a snapshot is taken now.
    session.apply(&Stamped::now(Observation::Tick));
    let panels = crate::derive::apiserver::build(
        &session.metrics,
        (!files_only).then_some(&session),
        &session.informers,
        session.now(),
    );
    // Every unusable source gets one line on stderr (down, HTML, garbage, empty); the JSON
    // carries the same under `scrape`.
    let controllers = panels
        .controllers
        .components
        .iter()
        .map(|c| (c.component, &c.status));
    for (target, status) in [("apiserver", &panels.apiserver), ("etcd", &panels.etcd)]
        .into_iter()
        .chain(controllers)
    {
        if let Some(e) = &status.last_error {
            eprintln!("regscope: {target} metrics from {}: {e}", status.source);
        }
    }
    out(format_args!(
        "{}\n",
        snapshot_json(
            (!files_only).then_some(&session),
            s.keys,
            Some(&panels),
            Some(&session),
        )?
    ));
    Ok(ExitCode::SUCCESS)
}

/// `regscope snapshot --json --from FILE [--at T]`: the summary `snapshot --json` prints
/// live, for that moment of the recording.
pub fn from_recording(s: &SnapshotArgs, zone: Zone) -> Result<ExitCode> {
    let Some(path) = s.from.as_deref() else {
        return Ok(ExitCode::from(2));
    };
    if super::db_file::is_db_file(path) {
        return from_db_file(s, path);
    }
    let mut player = match open(path) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let target = match s.at.as_deref().map(|a| parse_at("--at", a, &player, zone)) {
        Some(Ok(t)) => t,
        Some(Err(e)) => {
            eprintln!("regscope: {e}");
            return Ok(ExitCode::from(2));
        }
        None => Target::End,
    };
    // The summary is the session's: scrape bodies whose digest is recorded stay compressed.
    player.set_bodies(false);
    // Damage anywhere in the file makes the answer suspect, not only on the seek's way.
    player.verify(false);
    let session = player.seek(target);
    for d in player.damage() {
        eprintln!("regscope: damaged recording: {d}");
    }
    if let Some(line) = player.short_of(&session, target) {
        eprintln!("regscope: --at {}: {line}", s.at.as_deref().unwrap_or(""));
    }
    let mut v: serde_json::Value = serde_json::from_str(&snapshot_of(&session, s.keys)?)?;
    // A damaged file replays what it still holds; the summary says it is incomplete.
    v["recording_damage"] = json!(player.damage());
    out(format_args!("{}\n", serde_json::to_string_pretty(&v)?));
    Ok(if player.damage().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `regscope snapshot --json --from DB [--at REV]`: the summary at a revision of etcd's
/// own db file (default its head), with `db_file` ([`super::db_file::db_json`]) saying what
/// the file is. The replica is filled with a list at that revision, as a live snapshot's.
///
/// A list at one revision observes no writes, though the file may retain many before it,
/// and a db file keeps no wall-clock times (every stamp is the file's modification time).
/// So the figures that would count writes are not known here and the JSON does not state
/// them ([`Observed::ListAtRevision`]): `resources[].puts`/`deletes` and `writers` are
/// `null`, the write signals (`writes_total`, `written_bytes_total`,
/// `writer_writes_total`) are absent, and `compactions[].at` is `null`. The writes the
/// file retains are what `regscope export DB`, `regscope diff` and `regscope analyze` read.
fn from_db_file(s: &SnapshotArgs, path: &std::path::Path) -> Result<ExitCode> {
    use super::db_file;
    let db = match db_file::open(path) {
        Ok(d) => d,
        Err(code) => return Ok(code),
    };
    let rev = match s.at.as_deref() {
        Some(a) => match db_file::parse_revision("--at", a, &db) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("regscope: {e}");
                return Ok(ExitCode::from(2));
            }
        },
        None => db.head()?,
    };
    let mut info = s.conn.session_info(format!("file {}", path.display()));
    info.endpoints.clear();
    let session = db_file::session_at(&db, rev, info)?;
    let prefix = session.replica.prefix();
    if crate::derive::changes::live_keys(&session.replica, prefix)
        .next()
        .is_none()
    {
        db_file::warn_no_keys_under(&db, prefix);
    }
    let panels = crate::derive::apiserver::build(
        &session.metrics,
        Some(&session),
        &session.informers,
        session.now(),
    );
    let mut v = snapshot_value(
        Some(&session),
        s.keys,
        Some(&panels),
        Some(&session),
        Observed::ListAtRevision,
    )?;
    v["db_file"] = db_file::db_json(&db, rev)?;
    out(format_args!("{}\n", serde_json::to_string_pretty(&v)?));
    Ok(ExitCode::SUCCESS)
}

/// The `snapshot --json` text of a session (the replica and the apiserver side derived at
/// the session's clock).
pub fn snapshot_of(session: &Session, keys: bool) -> Result<String> {
    let panels = crate::derive::apiserver::build(
        &session.metrics,
        Some(session),
        &session.informers,
        session.now(),
    );
    snapshot_json(Some(session), keys, Some(&panels), Some(session))
}

/// Lists the prefix once into `session` (no watch). Notes (e.g. "no keys under the
/// prefix") are printed to stderr, and so is the progress of a long list. With
/// `memory_limit` (bytes resident) the list ends with an error when it does not fit.
pub async fn snapshot_replica(
    source: &EtcdSource,
    session: &mut Session,
    memory_limit: Option<u64>,
) -> Result<()> {
    let mut progress = super::progress::StderrProgress::new("listing", "listed");
    let mut memory = super::memory::MemoryCheck::new(memory_limit, "snapshot");
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

/// The JSON of a replica: its summary and, with `--keys`, `key_list` (every live key).
#[derive(Serialize)]
struct SnapshotJson {
    #[serde(flatten)]
    summary: Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_list: Option<Vec<KeyRow>>,
}

/// `regscope snapshot --json`: the replica's summary (revision, compact_revision, keys,
/// bytes, resources, gaps, compactions; with `with_keys` every key) and, when `panels` is
/// given, the apiserver side ([`metrics_json`]); with `session`, kube-apiserver's other
/// etcd clusters and storage flags when the node told them ([`node_json`]). `etcd_side`:
/// the session whose replica and etcd cluster to summarise; without one (metric files
/// only) their fields are present and `null`.
pub fn snapshot_json(
    etcd_side: Option<&Session>,
    with_keys: bool,
    panels: Option<&ApiserverPanels>,
    session: Option<&Session>,
) -> Result<String> {
    let out = snapshot_value(etcd_side, with_keys, panels, session, Observed::Stream)?;
    Ok(serde_json::to_string_pretty(&out)?)
}

/// What the session's observations were, for which figures `snapshot --json` may state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Observed {
    /// A stream (live, or a recording): what the replica counted is what was observed
    /// since it started, and every stamp is a wall-clock time.
    Stream,
    /// A list of the keys at one revision of a db file, every stamp the file's
    /// modification time: no write was observed (the writes before that revision are not
    /// zero, they are not read) and no stamp is when something happened.
    ListAtRevision,
}

/// [`snapshot_json`]'s value; with [`Observed::ListAtRevision`] the write counts
/// (`resources[].puts`, `deletes`, `writers`) and the compactions' `at` are `null` and the
/// write signals ([`crate::derive::signals::REPLICA_COUNTERS`]) absent.
fn snapshot_value(
    etcd_side: Option<&Session>,
    with_keys: bool,
    panels: Option<&ApiserverPanels>,
    session: Option<&Session>,
    observed: Observed,
) -> Result<serde_json::Value> {
    let mut out = match etcd_side {
        Some(s) => {
            let mut v = serde_json::to_value(SnapshotJson {
                summary: s.summary(),
                key_list: with_keys.then(|| key_rows(&s.replica)),
            })?;
            if observed == Observed::ListAtRevision {
                unobserved_writes_and_times(&mut v);
            }
            v
        }
        None => {
            // The same keys as with a replica, every one null.
            let mut v = serde_json::to_value(Replica::new(ReplicaConfig::default()).summary())?;
            if let Some(o) = v.as_object_mut() {
                o.values_mut().for_each(|x| *x = serde_json::Value::Null);
            }
            v
        }
    };
    if let (Some(panels), Some(o)) = (panels, out.as_object_mut()) {
        if let serde_json::Value::Object(m) = metrics_json(panels) {
            o.extend(m);
        }
    }
    if let (Some(session), Some(o)) = (session, out.as_object_mut()) {
        o.extend(node_json(session));
    }
    // The derived-signal table at the same moment: what a report samples (and charts).
    if let (Some(s), Some(panels), Some(o)) = (etcd_side, panels, out.as_object_mut()) {
        let mut readings = crate::derive::signals::read_with(s, panels);
        if observed == Observed::ListAtRevision {
            // Not observed, so absent: a signal with nothing known has no sample.
            for name in crate::derive::signals::REPLICA_COUNTERS {
                readings.signals.remove(name);
            }
        }
        o.insert("signals".into(), readings.to_json());
    }
    Ok(out)
}

/// Sets to `null` what a list at one revision of a db file does not observe in a
/// summary's JSON: each resource's `puts` and `deletes`, `writers`, and each compaction's
/// and note's `at` (the stamp is the file's modification time, not when etcd compacted or
/// the note was made).
fn unobserved_writes_and_times(summary: &mut serde_json::Value) {
    use serde_json::Value::Null;
    if let Some(rows) = summary["resources"].as_array_mut() {
        for r in rows {
            r["puts"] = Null;
            r["deletes"] = Null;
        }
    }
    summary["writers"] = Null;
    for list in ["compactions", "notes"] {
        if let Some(rows) = summary[list].as_array_mut() {
            for c in rows.iter_mut().filter(|c| c.get("at").is_some()) {
                c["at"] = Null;
            }
        }
    }
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
pub fn metrics_json(panels: &ApiserverPanels) -> serde_json::Value {
    let latency: Vec<_> = panels
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
    let watch_cache: Vec<_> = panels
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
    let objects: Vec<_> = panels
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
    let etcd = panels
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
    let apiserver_db = panels
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
        "compaction_window": panels.window,
        "apf": panels.apf,
        "not_exposed": panels.not_exposed,
        "scrape": { "apiserver": panels.apiserver, "etcd": panels.etcd },
        "controllers": panels.controllers,
    })
}
