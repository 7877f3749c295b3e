//! `regscope analyze` without a file: what fills a live etcd, from one list of the prefix
//! (the list `snapshot` makes, paced the same way) and etcd's own answers, never from its
//! history.
//!
//! Reading etcd's retained history live would need a watch from the compacted revision,
//! and etcd serves such a watch by reading every retained revision in one range
//! (`syncWatchers` in `watchable_store.go`, etcd 3.4 and 3.5): a burst of the history's
//! size on the member this guest shares a node with. So the live figures are the newest
//! version of every key (exact, as `etcdctl get --prefix` returns them) and, for the
//! history, what each key's revisions tell without reading it: with `C` etcd's compacted
//! revision ([`crate::source::compacted`]), a live key keeps exactly `version` versions
//! when it was created after `C` (etcd counts `version` from the key's creation: etcd
//! `mvccpb.KeyValue`), exactly one when it was last written at or before `C`, and between
//! 2 and `version` otherwise. Versions of deleted keys, and of a key's earlier lives before
//! a delete, are not counted: the text and the JSON say so, and that only a db file
//! (`etcdctl snapshot save`) gives them exactly.
//!
//! `--json` prints one object: `kind` (`"live"`), `endpoint`, `revision` (the list's),
//! `compacted` (null: never compacted), `members: [{id, name, endpoint, db_size,
//! db_size_in_use, free_bytes, error}]`, `db_size`, `db_size_in_use`, `free_bytes` (of the
//! member that answered the list), `quota: {bytes, from ("flag" | "node" | "default"),
//! used_percent}`, `alarms`, `prefix`, `not_counted` (a sentence: what the figures leave
//! out), `all_keys`, `resources` and `namespaces` (`[{name, …usage}]`, most bytes first), `largest`, `most_written`: `[{key, resource, namespace, bytes,
//! create_revision, mod_revision, version, lease, retained_min, retained_max}]`,
//! `leases_by_keys: [{id, ttl (seconds left, null: not asked or gone), granted_ttl, keys,
//! bytes}]`. A usage is `{keys, bytes, versions (sum of version: writes since each key's
//! creation), written_since_compaction (keys whose newest write is after `compacted`),
//! retained_min, retained_max}`. Bytes are value bytes as `etcdctl get` returns them.
//! Exit 0, or 2 with one line on stderr when etcd cannot be read.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use super::analyze::LARGEST_WRITE_COST;
use super::args::{normal_prefix, AnalyzeArgs};
use super::out;
use super::snapshot::snapshot_replica;
use super::table::Table;
use crate::derive::units::{bytes, thousands, thousands_i};
use crate::model::{escape_bytes, CompactionSource, KeyPath, Observation, Revision, Stamped};
use crate::source::etcd_db::analysis::DEFAULT_QUOTA_BYTES;
use crate::source::EtcdSource;
use crate::store::Session;

/// What the figures of a live analysis leave out, said in the text and the JSON.
pub const NOT_COUNTED: &str = "retained versions are counted for live keys only, from their revisions: deleted keys, deletions and a recreated key's earlier lives are not counted (etcd would have to read its whole history); analyze a db file from `etcdctl snapshot save` for them";

/// The figures of a set of live keys (all, one resource, one namespace).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LiveUsage {
    pub keys: u64,
    /// Newest value bytes.
    pub bytes: u64,
    /// Sum of `version`: writes since each key's creation, retained or compacted.
    pub versions: u64,
    /// Keys whose newest write is after the compacted revision (all when never compacted).
    pub written_since_compaction: u64,
    /// Versions etcd retains of these keys' current lives: at least, and at most.
    pub retained_min: u64,
    pub retained_max: u64,
}

impl LiveUsage {
    fn add(&mut self, k: &LiveKey) {
        self.keys += 1;
        self.bytes += k.bytes;
        self.versions += k.version.max(0) as u64;
        self.retained_min += k.retained_min;
        self.retained_max += k.retained_max;
        if k.written_since_compaction {
            self.written_since_compaction += 1;
        }
    }
}

/// One live key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LiveKey {
    pub key: String,
    pub resource: String,
    pub namespace: Option<String>,
    pub bytes: u64,
    pub create_revision: Revision,
    pub mod_revision: Revision,
    pub version: i64,
    pub lease: i64,
    pub retained_min: u64,
    pub retained_max: u64,
    #[serde(skip)]
    written_since_compaction: bool,
}

/// The versions etcd retains of a live key's current life, `(at least, at most)`, from its
/// revisions and `compacted` (see the module doc for why these bounds hold).
pub fn retained_bounds(
    create_revision: Revision,
    mod_revision: Revision,
    version: i64,
    compacted: Option<Revision>,
) -> (u64, u64) {
    let version = version.max(1) as u64;
    let c = compacted.unwrap_or(0);
    if create_revision > c {
        (version, version)
    } else if mod_revision <= c {
        (1, 1)
    } else {
        (2.min(version), version)
    }
}

/// One member's file, as its Status answered.
#[derive(Clone, Debug, Serialize)]
pub struct MemberFile {
    pub id: String,
    pub name: String,
    pub endpoint: String,
    pub db_size: Option<i64>,
    pub db_size_in_use: Option<i64>,
    pub free_bytes: Option<i64>,
    pub error: Option<String>,
}

/// A lease and the live keys on it.
#[derive(Clone, Debug, Serialize)]
pub struct LeaseKeys {
    /// The lease ID as etcdctl prints it (hex).
    pub id: String,
    /// Seconds left, when asked (the top leases) and the lease still exists.
    pub ttl: Option<i64>,
    pub granted_ttl: Option<i64>,
    pub keys: u64,
    pub bytes: u64,
}

/// The quota the member's file is measured against, and where it came from.
#[derive(Clone, Debug, Serialize)]
pub struct LiveQuota {
    pub bytes: u64,
    /// `flag` (--quota-bytes), `node` (etcd's --quota-backend-bytes in the node's
    /// manifest) or `default` (etcd's, 2 GiB).
    pub from: &'static str,
    pub used_percent: Option<f64>,
}

/// What a live analysis found (shape in the module doc).
#[derive(Clone, Debug, Serialize)]
pub struct LiveAnalysis {
    pub kind: &'static str,
    pub endpoint: String,
    pub revision: Revision,
    pub compacted: Option<Revision>,
    pub members: Vec<MemberFile>,
    pub db_size: Option<i64>,
    pub db_size_in_use: Option<i64>,
    pub free_bytes: Option<i64>,
    pub quota: LiveQuota,
    pub alarms: Vec<String>,
    pub prefix: String,
    pub not_counted: &'static str,
    #[serde(flatten)]
    pub keys: KeyFigures,
}

/// The figures of the live keys: all, per resource and namespace, ranked lists.
#[derive(Clone, Debug, Serialize)]
pub struct KeyFigures {
    pub all_keys: LiveUsage,
    pub resources: Vec<NamedUsage>,
    pub namespaces: Vec<NamedUsage>,
    pub largest: Vec<LiveKey>,
    pub most_written: Vec<LiveKey>,
    pub leases_by_keys: Vec<LeaseKeys>,
}

/// A resource's or a namespace's figures.
#[derive(Clone, Debug, Serialize)]
pub struct NamedUsage {
    pub name: String,
    #[serde(flatten)]
    pub usage: LiveUsage,
}

/// The key figures of `session`'s replica (one list of `prefix`, no history), ranked lists
/// cut to `top`.
pub fn live_key_figures(session: &Session, prefix: &[u8], top: usize) -> KeyFigures {
    let replica = &session.replica;
    let compacted = replica.compact_revision();
    let mut all = LiveUsage::default();
    let mut by_resource: BTreeMap<String, LiveUsage> = BTreeMap::new();
    let mut by_namespace: BTreeMap<String, LiveUsage> = BTreeMap::new();
    let mut by_lease: BTreeMap<i64, (u64, u64)> = BTreeMap::new();
    let mut keys: Vec<LiveKey> = Vec::new();
    if let Ok(it) = replica.range_meta_at(prefix, replica.revision()) {
        for (k, v) in it {
            let Some(size) = v.size else { continue };
            let path = KeyPath::parse(prefix, k);
            let (retained_min, retained_max) =
                retained_bounds(v.create_revision, v.mod_revision, v.version, compacted);
            let key = LiveKey {
                key: escape_bytes(k).into_owned(),
                resource: path.resource.to_string(),
                namespace: path.namespace.map(|n| n.into_owned()),
                bytes: size as u64,
                create_revision: v.create_revision,
                mod_revision: v.mod_revision,
                version: v.version,
                lease: v.lease,
                retained_min,
                retained_max,
                written_since_compaction: v.mod_revision > compacted.unwrap_or(0),
            };
            all.add(&key);
            by_resource
                .entry(key.resource.clone())
                .or_default()
                .add(&key);
            if let Some(ns) = &key.namespace {
                by_namespace.entry(ns.clone()).or_default().add(&key);
            }
            if key.lease != 0 {
                let e = by_lease.entry(key.lease).or_default();
                e.0 += 1;
                e.1 += key.bytes;
            }
            keys.push(key);
        }
    }
    let ranked = |m: BTreeMap<String, LiveUsage>, cut: Option<usize>| {
        let mut v: Vec<NamedUsage> = m
            .into_iter()
            .map(|(name, usage)| NamedUsage { name, usage })
            .collect();
        v.sort_by_key(|n| std::cmp::Reverse(n.usage.bytes));
        if let Some(n) = cut {
            v.truncate(n);
        }
        v
    };
    let resources = ranked(by_resource, None);
    let namespaces = ranked(by_namespace, Some(top));
    // Keys are in key order, so the stable sorts break ties by key.
    let mut largest = keys.clone();
    largest.sort_by_key(|k| std::cmp::Reverse(k.bytes));
    largest.truncate(top);
    keys.sort_by_key(|k| std::cmp::Reverse(k.version));
    keys.truncate(top);
    let mut leases: Vec<LeaseKeys> = by_lease
        .into_iter()
        .map(|(id, (n, b))| LeaseKeys {
            id: format!("{id:x}"),
            ttl: None,
            granted_ttl: None,
            keys: n,
            bytes: b,
        })
        .collect();
    leases.sort_by_key(|l| std::cmp::Reverse(l.keys));
    leases.truncate(top);
    KeyFigures {
        all_keys: all,
        resources,
        namespaces,
        largest,
        most_written: keys,
        leases_by_keys: leases,
    }
}

/// Runs `regscope analyze` on a live etcd (see the module doc).
pub async fn run(a: &AnalyzeArgs, node: Option<&crate::node::Discovery>) -> Result<ExitCode> {
    let conn = &a.conn;
    if conn.endpoints.iter().all(|e| e.trim().is_empty()) {
        eprintln!("regscope: analyze: give a db file, a recording, or --endpoints (no etcd found on this node either)");
        return Ok(ExitCode::from(2));
    }
    let source = EtcdSource::new(conn.etcd_options(), conn.sync_options());
    let timeout = source.sync.request_timeout;
    let mut session = Session::new(conn.session_info(String::new()));
    let limit = conn.memory_limit.map(|b| b as u64);
    if let Err(e) = snapshot_replica(&source, &mut session, limit).await {
        eprintln!("regscope: {e:#}");
        return Ok(ExitCode::from(2));
    }
    // etcd's compacted revision, exactly (the list knows only the apiserver's marker).
    let endpoint = source.etcd.endpoint_label();
    let (client, _version) = match source.etcd.connect(timeout).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "regscope: {}",
                super::session::explain(&source.etcd, e).await
            );
            return Ok(ExitCode::from(2));
        }
    };
    match crate::source::compacted::compacted_revision(&client, timeout).await {
        Ok(Some(c)) => {
            session.apply(&Stamped::now(Observation::Compacted {
                revision: c,
                source: CompactionSource::Watch,
            }));
        }
        Ok(None) => {}
        Err(e) => {
            eprintln!("regscope: etcd's compacted revision: {e}");
            return Ok(ExitCode::from(2));
        }
    }
    if let Some(rows) = crate::source::members_once(&source.etcd, timeout).await {
        session.apply(&Stamped::now(Observation::Members(rows)));
    }
    let prefix = normal_prefix(&conn.prefix);
    let mut r = live_analysis(&session, &prefix, a.top, endpoint, quota(a, node));
    lease_ttls(&client, &mut r.keys.leases_by_keys, timeout).await;
    if a.json {
        out(format_args!("{}\n", serde_json::to_string_pretty(&r)?));
    } else {
        out(format_args!("{}", live_text(&r)));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--quota-bytes`, else etcd's `--quota-backend-bytes` from the node's manifest, else
/// etcd's default; 0 is etcd's default as etcd reads it (3.4 `etcdserver/quota.go`, 3.5
/// `server/etcdserver/quota.go`: a quota of 0 is `DefaultQuotaBytes`).
fn quota(a: &AnalyzeArgs, node: Option<&crate::node::Discovery>) -> (u64, &'static str) {
    if let Some(b) = a.quota_bytes.filter(|b| *b > 0) {
        return (b as u64, "flag");
    }
    let from_node = node.and_then(|d| {
        d.facts
            .iter()
            .find(|f| f.name == "etcd quota (bytes)")
            .and_then(|f| f.value.trim().parse::<u64>().ok())
            .filter(|b| *b > 0)
    });
    match from_node {
        Some(b) => (b, "node"),
        None => (DEFAULT_QUOTA_BYTES, "default"),
    }
}

/// The analysis of `session` (one list, the compacted revision and the members applied).
pub fn live_analysis(
    session: &Session,
    prefix: &[u8],
    top: usize,
    endpoint: String,
    (quota_bytes, quota_from): (u64, &'static str),
) -> LiveAnalysis {
    let keys = live_key_figures(session, prefix, top);
    let status = session.etcd.etcd_status().map(|(_, s)| s.clone());
    let members = session
        .etcd
        .members()
        .map(|(_, rows)| {
            rows.iter()
                .map(|m| MemberFile {
                    id: format!("{:x}", m.id),
                    name: m.name.clone(),
                    endpoint: m.endpoint.clone(),
                    db_size: m.status.as_ref().map(|s| s.db_size),
                    db_size_in_use: m.status.as_ref().map(|s| s.db_size_in_use),
                    free_bytes: m.status.as_ref().map(|s| s.db_size - s.db_size_in_use),
                    error: m.error.clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    let db_size = status.as_ref().map(|s| s.db_size);
    LiveAnalysis {
        kind: "live",
        endpoint,
        revision: session.replica.revision(),
        compacted: session.replica.compact_revision(),
        members,
        db_size,
        db_size_in_use: status.as_ref().map(|s| s.db_size_in_use),
        free_bytes: status.as_ref().map(|s| s.db_size - s.db_size_in_use),
        quota: LiveQuota {
            bytes: quota_bytes,
            from: quota_from,
            used_percent: db_size.map(|s| s as f64 * 100.0 / quota_bytes as f64),
        },
        alarms: status.as_ref().map(|s| s.alarms()).unwrap_or_default(),
        prefix: escape_bytes(prefix).into_owned(),
        not_counted: NOT_COUNTED,
        keys,
    }
}

/// Fills the TTLs of `leases` (already cut to the top rows), one LeaseTimeToLive each; a
/// lease that expired since the list, or a refused request, keeps `null`.
async fn lease_ttls(
    client: &etcd_client::Client,
    leases: &mut [LeaseKeys],
    timeout: std::time::Duration,
) {
    let mut lc = client.lease_client();
    for l in leases {
        let Ok(id) = i64::from_str_radix(&l.id, 16) else {
            continue;
        };
        if let Ok(Ok(r)) = tokio::time::timeout(timeout, lc.time_to_live(id, None)).await {
            // etcd answers a lease that no longer exists with TTL -1.
            if r.ttl() >= 0 {
                l.ttl = Some(r.ttl());
                l.granted_ttl = Some(r.granted_ttl());
            }
        }
    }
}

fn retained(u: &LiveUsage) -> String {
    if u.retained_min == u.retained_max {
        thousands(u.retained_min)
    } else {
        format!(
            "{}–{}",
            thousands(u.retained_min),
            thousands(u.retained_max)
        )
    }
}

fn usage_row(name: &str, u: &LiveUsage) -> Vec<String> {
    vec![
        name.to_string(),
        thousands(u.keys),
        bytes(u.bytes),
        thousands(u.versions),
        thousands(u.written_since_compaction),
        retained(u),
    ]
}

const USAGE_HEADER: [&str; 6] = [
    "",
    "KEYS",
    "BYTES",
    "WRITES",
    "WRITTEN SINCE COMPACTION",
    "RETAINED VERSIONS",
];

fn opt_bytes(b: Option<i64>) -> String {
    b.map_or("?".into(), |b| bytes(b.max(0) as u64))
}

/// The tables for people.
pub fn live_text(r: &LiveAnalysis) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} (a live etcd: one list at revision {}, no history read)",
        r.endpoint,
        thousands_i(r.revision)
    );
    let _ = writeln!(
        o,
        "  compaction    {}",
        match r.compacted {
            Some(c) => format!(
                "at {}: etcd keeps every version after it and the newest at or before it",
                thousands_i(c)
            ),
            None => "none: etcd keeps every version since revision 1".into(),
        }
    );
    let _ = writeln!(
        o,
        "  file          {} ({} in use; free {}: about what a defragmentation gives back)",
        opt_bytes(r.db_size),
        opt_bytes(r.db_size_in_use),
        opt_bytes(r.free_bytes),
    );
    let quota_from = match r.quota.from {
        "flag" => "--quota-bytes",
        "node" => "etcd's --quota-backend-bytes on this node",
        _ => "etcd's default; give --quota-bytes if the member sets --quota-backend-bytes",
    };
    let nospace = r.alarms.iter().any(|a| a == "NOSPACE");
    let size = r.db_size.map(|s| s.max(0) as u64);
    // etcd raises NOSPACE when the backend's size plus a write's cost reaches the quota
    // (`backendQuota.Available`): a file further below the quota assumed than one write
    // can cost was under a lower quota (or has shrunk since: defragmented, alarm kept).
    let remark = match size {
        Some(s) if nospace && s.saturating_add(LARGEST_WRITE_COST) < r.quota.bytes => {
            "; NOSPACE is raised below it: the member's quota is evidently lower (pass --quota-bytes), or its file was defragmented since"
        }
        Some(s) if !nospace && s >= r.quota.bytes => {
            "; at or over it: etcd refuses the next write with NOSPACE"
        }
        _ => "",
    };
    let _ = writeln!(
        o,
        "  quota         {} of {} used{} ({quota_from}){remark}",
        opt_bytes(r.db_size),
        bytes(r.quota.bytes),
        r.quota
            .used_percent
            .map_or(String::new(), |p| format!(" ({p:.1}%)")),
    );
    if !r.alarms.is_empty() {
        let advice = if nospace {
            ": etcd accepts only reads and deletes until the alarm is disarmed (`etcdctl alarm disarm`, after compacting and defragmenting)"
        } else {
            ""
        };
        let _ = writeln!(o, "  alarms        {}{advice}", r.alarms.join(", "));
    }
    if r.members.len() > 1 {
        let _ = writeln!(o, "\nMembers' files");
        Table {
            header: vec!["MEMBER", "ENDPOINT", "FILE", "IN USE", "FREE"],
            rows: r
                .members
                .iter()
                .map(|m| {
                    vec![
                        if m.name.is_empty() {
                            m.id.clone()
                        } else {
                            m.name.clone()
                        },
                        m.endpoint.clone(),
                        opt_bytes(m.db_size),
                        opt_bytes(m.db_size_in_use),
                        m.error.clone().unwrap_or_else(|| opt_bytes(m.free_bytes)),
                    ]
                })
                .collect(),
            left: vec![0, 1],
        }
        .render(&mut o, "  ");
    }
    let in_use_besides = r
        .db_size_in_use
        .map(|u| u - r.keys.all_keys.bytes as i64)
        .filter(|b| *b > 0);
    if let Some(b) = in_use_besides {
        let _ = writeln!(
            o,
            "  in use besides the newest values under {}: {} (history, deleted keys' versions, leases, keys outside the prefix, bbolt's pages)",
            r.prefix,
            bytes(b as u64)
        );
    }
    let _ = writeln!(
        o,
        "\nResources under {} by bytes (WRITES: sum of each key's version, its writes since creation)",
        r.prefix
    );
    let mut header = USAGE_HEADER.to_vec();
    header[0] = "RESOURCE";
    let mut rows: Vec<Vec<String>> = r
        .keys
        .resources
        .iter()
        .map(|x| usage_row(&x.name, &x.usage))
        .collect();
    rows.push(usage_row("total", &r.keys.all_keys));
    Table {
        header,
        rows,
        left: vec![0],
    }
    .render(&mut o, "  ");
    let _ = writeln!(o, "  ({})", r.not_counted);
    for (title, list) in [
        ("Largest objects", &r.keys.largest),
        ("Most written keys (version)", &r.keys.most_written),
    ] {
        let _ = writeln!(o, "\n{title}");
        if list.is_empty() {
            let _ = writeln!(o, "  none");
            continue;
        }
        Table {
            header: vec!["BYTES", "WRITES", "RETAINED", "MODIFIED", "KEY"],
            rows: list
                .iter()
                .map(|k| {
                    vec![
                        bytes(k.bytes),
                        thousands_i(k.version),
                        if k.retained_min == k.retained_max {
                            thousands(k.retained_min)
                        } else {
                            format!(
                                "{}–{}",
                                thousands(k.retained_min),
                                thousands(k.retained_max)
                            )
                        },
                        format!("r{}", k.mod_revision),
                        k.key.clone(),
                    ]
                })
                .collect(),
            left: vec![4],
        }
        .render(&mut o, "  ");
    }
    let _ = writeln!(o, "\nNamespaces by bytes");
    if r.keys.namespaces.is_empty() {
        let _ = writeln!(o, "  none");
    } else {
        let mut header = USAGE_HEADER.to_vec();
        header[0] = "NAMESPACE";
        Table {
            header,
            rows: r
                .keys
                .namespaces
                .iter()
                .map(|n| usage_row(&n.name, &n.usage))
                .collect(),
            left: vec![0],
        }
        .render(&mut o, "  ");
    }
    let _ = writeln!(o, "\nLeases with the most keys");
    if r.keys.leases_by_keys.is_empty() {
        let _ = writeln!(o, "  none");
    } else {
        Table {
            header: vec!["LEASE", "TTL", "KEYS", "BYTES"],
            rows: r
                .keys
                .leases_by_keys
                .iter()
                .map(|l| {
                    vec![
                        l.id.clone(),
                        match (l.ttl, l.granted_ttl) {
                            (Some(t), Some(g)) => format!("{t}s of {g}s"),
                            _ => "gone".into(),
                        },
                        thousands(l.keys),
                        bytes(l.bytes),
                    ]
                })
                .collect(),
            left: vec![0],
        }
        .render(&mut o, "  ");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bounds for each case of a key's revisions against the compaction.
    #[test]
    fn retained_versions_follow_the_keys_revisions_against_the_compaction() {
        // Never compacted: every version since creation.
        assert_eq!(retained_bounds(5, 40, 7, None), (7, 7));
        // Created after the compaction: all its versions.
        assert_eq!(retained_bounds(101, 140, 3, Some(100)), (3, 3));
        // Last written at or before it: the one version etcd keeps.
        assert_eq!(retained_bounds(10, 100, 9, Some(100)), (1, 1));
        // Written on both sides: the one at the compaction and 1..version-1 after.
        assert_eq!(retained_bounds(10, 150, 9, Some(100)), (2, 9));
    }
}
