//! The etcd list+watch source: a list of the prefix pinned at one revision (many ranges at
//! once, see [`super::list`]), then one
//! watch from list revision + 1 (with progress notifications, without `prev_kv`) plus a watch on
//! the apiserver's `compact_rev_key`. Reconnects with backoff and resumes from the last
//! forwarded revision + 1; relists when the watch is cancelled because its start revision
//! was compacted. The prefix's watch is opened one revision early, so that a compaction at
//! exactly the resume revision also relists (etcd-io/etcd#19179, see `etcd/session.rs`).
//!
//! This file is the reconnect loop (connect, fail over, detect a restored etcd, list); one
//! watch session is `etcd/session.rs`, run by the loop both etcd watchers share
//! ([`super::watch`]).
//!
//! etcd facts this relies on (etcd v3.4+ watch API):
//! - A watch whose start revision is compacted is cancelled with `compact_revision` set;
//!   etcd 3.4 sends it as an ordinary response (`canceled`, empty reason), and the stream
//!   then stays open and silent.
//! - Progress notifications (`RequestProgress`) carry only a header revision: every event up
//!   to it has been sent. etcd's own periodic progress notify defaults to 10 minutes, so
//!   liveness relies on our own progress requests.
//! - Range responses over the gRPC decoding limit fail with "message length too large";
//!   the page limit is halved (never an identical retry).

mod session;

use std::time::{Duration, SystemTime};

use etcd_client::{Client, GetOptions};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::connect::{classify, error_chain, prefix_end, top_level_prefixes, EtcdOptions};
use super::sync::Emitter;
pub use super::sync::{convert_kv, take_kv, ListError, SyncOptions};
use crate::model::{CompactionSource, ConnState, Observation, Revision, Stamped};

pub use crate::model::kubernetes::COMPACT_REV_KEY;

/// Why a watch session ended.
enum WatchEnd {
    /// Cancelled: start revision compacted at this revision.
    Compacted(Revision),
    /// Stream or connection lost (one-line reason).
    Lost(String),
    /// No response within the liveness window; last response at this wall-clock time.
    Silent(SystemTime),
    /// The consumer went away.
    Closed,
}

/// The etcd source. Create, then [`EtcdSource::spawn`].
#[derive(Clone, Debug)]
pub struct EtcdSource {
    pub etcd: EtcdOptions,
    pub sync: SyncOptions,
}

impl EtcdSource {
    pub fn new(etcd: EtcdOptions, sync: SyncOptions) -> Self {
        Self { etcd, sync }
    }

    /// Runs the source until the receiver is dropped or a fatal error (reported as
    /// `ConnState::Failed`).
    pub fn spawn(self, tx: mpsc::Sender<Stamped>) -> JoinHandle<()> {
        tokio::spawn(async move { self.run(tx, None).await })
    }

    /// Like [`EtcdSource::spawn`] for a consumer that already holds everything up to
    /// revision `after` (e.g. a replica kept across a restart of the source): no list, the
    /// watch starts at `after + 1`; a compacted start revision still forces a relist.
    pub fn spawn_resuming(self, tx: mpsc::Sender<Stamped>, after: Revision) -> JoinHandle<()> {
        tokio::spawn(async move { self.run(tx, Some(after)).await })
    }

    async fn run(self, tx: mpsc::Sender<Stamped>, resume_after: Option<Revision>) {
        // The members panel's poller lives as long as this source.
        let members = tokio::spawn(super::members::poll(
            self.etcd.clone(),
            self.sync.clone(),
            Emitter { tx: tx.clone() },
        ));
        let _stop_members = AbortOnDrop(members);
        let out = Emitter { tx };
        let endpoint = self.etcd.endpoint_label();
        let mut forwarded: Option<Revision> = resume_after;
        let mut relist_for: Option<Revision> = None;
        let mut attempt: u32 = 0;
        let mut silent_since: Option<SystemTime> = None;
        let mut first_list = resume_after.is_none();
        let mut ever_connected = false;
        let mut cluster_id: Option<u64> = None;
        // A key and the mod_revision we last saw for it, to detect a rewritten history.
        let mut kept = Kept {
            anchor: None,
            watch_marker: true,
        };
        // The endpoints tried, in order: those given, then (when only one was given) the
        // other members' client URLs from etcd's member list, refreshed on every connection.
        let mut etcd = self.etcd.clone();
        let mut last_endpoint: Option<String> = None;
        loop {
            if attempt > 0 {
                let backoff = (Duration::from_millis(100) * 2u32.saturating_pow(attempt - 1))
                    .min(self.sync.backoff_max);
                tokio::time::sleep(backoff).await;
            }
            // While etcd is silent, keep saying so (with its "since") rather than "connecting".
            if silent_since.is_none()
                && !out.send(Observation::Conn(ConnState::Connecting)).await
                && attempt > 0
            {
                return;
            }
            let conn = match etcd.connect_info(self.sync.request_timeout).await {
                Ok(c) => c,
                // Once connected, TLS trouble is more likely a restart than a wrong
                // certificate: keep retrying; only credentials stay fatal.
                Err(e)
                    if e.is_fatal()
                        && (!ever_connected
                            || matches!(
                                e,
                                super::ConnectError::Auth { .. }
                                    | super::ConnectError::Permission { .. }
                            )) =>
                {
                    out.fail(&e).await;
                    return;
                }
                Err(e) => {
                    attempt = attempt.saturating_add(1);
                    let state = match (silent_since, &e) {
                        (Some(since), super::ConnectError::NotResponding { .. }) => {
                            ConnState::NotResponding { since }
                        }
                        _ => ConnState::Reconnecting {
                            attempt,
                            error: e.to_string(),
                        },
                    };
                    if !out.send(Observation::Conn(state)).await {
                        return;
                    }
                    continue;
                }
            };
            ever_connected = true;
            let progress_safe = progress_ordered(&conn.version);
            let mut client = conn.client;
            if self.etcd.endpoints.len() == 1 {
                if let Some(found) = self.other_members(&mut client, conn.status.member_id).await {
                    let mut all = self.etcd.endpoints.clone();
                    for e in found {
                        if !all.contains(&e) {
                            all.push(e);
                        }
                    }
                    if all != etcd.endpoints {
                        out.send(Observation::Note(format!(
                            "etcd's member list: {}; regscope reads {} and fails over to the others in this order",
                            all.join(", "),
                            conn.endpoint
                        )))
                        .await;
                        etcd.endpoints = all;
                    }
                }
            }
            // compact_rev_key lies outside the prefix: a user that may read only the prefix
            // is refused it (etcd 3.4.23 then accepts its watch and sends nothing).
            if kept.watch_marker {
                // Serializable: answered by the member itself, also while the cluster
                // elects a leader after a failover.
                let probe = client.get(
                    COMPACT_REV_KEY,
                    Some(GetOptions::new().with_count_only().with_serializable()),
                );
                if let Ok(Err(e)) = tokio::time::timeout(self.sync.request_timeout, probe).await {
                    if error_chain(&e).to_lowercase().contains("permission denied") {
                        kept.watch_marker = false;
                        out.send(marker_refused()).await;
                    }
                }
            }
            // Another member that has not applied as far as the one read before (a follower
            // a few entries behind): wait for it rather than take it for a restored etcd.
            let moved = last_endpoint.as_ref().is_some_and(|e| *e != conn.endpoint);
            if moved
                && forwarded.is_some_and(|f| conn.revision < f)
                && cluster_id == Some(conn.cluster_id)
                && attempt < 10
            {
                attempt = attempt.saturating_add(1);
                out.send(Observation::Conn(ConnState::Reconnecting {
                    attempt,
                    error: format!(
                        "{} is at revision {}, behind revision {} already applied; waiting for it to catch up",
                        conn.endpoint,
                        conn.revision,
                        forwarded.unwrap_or(0)
                    ),
                }))
                .await;
                continue;
            }
            last_endpoint = Some(conn.endpoint.clone());
            if !out
                .send(Observation::Server {
                    endpoint: conn.endpoint.clone(),
                    version: conn.version,
                    cluster_id: conn.cluster_id,
                })
                .await
                || !out.send(Observation::EtcdStatus(conn.status)).await
            {
                return;
            }
            // etcd restored from a snapshot or with a wiped data dir: a new cluster ID, or a
            // head revision below what we already applied. Nothing can be resumed: rebuild.
            let rewound = forwarded.is_some_and(|f| conn.revision < f);
            let new_cluster = cluster_id.is_some_and(|c| c != conn.cluster_id);
            // A restore that has since moved past our revision keeps the cluster ID (same
            // name and peer URLs) and the revision check: ask etcd about a key we know.
            let diverged = if forwarded.is_some() && !rewound && !new_cluster {
                self.anchor_diverged(&mut client, kept.anchor.as_ref())
                    .await
            } else {
                None
            };
            if rewound || new_cluster || diverged.is_some() {
                let why = if let Some(d) = diverged {
                    d
                } else if new_cluster {
                    format!(
                        "etcd's cluster ID changed ({:x} -> {:x}): restored from a snapshot or a new data dir; replica rebuilt from a fresh list",
                        cluster_id.unwrap_or(0),
                        conn.cluster_id
                    )
                } else {
                    format!(
                        "etcd's revision went back from {} to {}: restored from a snapshot or a new data dir; replica rebuilt from a fresh list",
                        forwarded.unwrap_or(0),
                        conn.revision
                    )
                };
                if !out.send(Observation::Reset { reason: why }).await {
                    return;
                }
                forwarded = None;
                relist_for = None;
            }
            cluster_id = Some(conn.cluster_id);
            if silent_since.take().is_some() {
                out.send(Observation::Note(format!(
                    "etcd answers again; resuming from revision {}",
                    forwarded.map_or(0, |r| r + 1)
                )))
                .await;
            }
            let start = match forwarded {
                Some(rev) if relist_for.is_none() => rev + 1,
                _ => {
                    if !out
                        .send(Observation::Conn(ConnState::Listing { keys: 0 }))
                        .await
                    {
                        return;
                    }
                    match self.list(&mut client, &out, relist_for, 0).await {
                        Ok(rev) => {
                            kept.anchor = self.first_key_at(&mut client, rev).await;
                            if first_list {
                                first_list = false;
                                // Bounded: a hung etcd must not stall the sync here.
                                let _ = tokio::time::timeout(
                                    self.sync.request_timeout,
                                    self.warn_if_empty(&mut client, &out),
                                )
                                .await;
                            }
                            relist_for = None;
                            forwarded = Some(rev);
                            rev + 1
                        }
                        Err(ListError::Closed) => return,
                        Err(ListError::Etcd(e)) => {
                            let ce = classify(&endpoint, &self.etcd, &e);
                            if ce.is_fatal() {
                                out.fail(&ce).await;
                                return;
                            }
                            attempt = attempt.saturating_add(1);
                            out.send(Observation::Conn(ConnState::Reconnecting {
                                attempt,
                                error: ce.to_string(),
                            }))
                            .await;
                            continue;
                        }
                        Err(e) => {
                            attempt = attempt.saturating_add(1);
                            out.send(Observation::Conn(ConnState::Reconnecting {
                                attempt,
                                error: e.to_string(),
                            }))
                            .await;
                            continue;
                        }
                    }
                }
            };
            if !out.send(Observation::Conn(ConnState::Watching)).await {
                return;
            }
            attempt = 0;
            match self
                .watch(
                    &mut client,
                    last_endpoint.as_deref().unwrap_or_default(),
                    start,
                    &out,
                    &mut forwarded,
                    progress_safe,
                    &mut kept,
                )
                .await
            {
                WatchEnd::Closed => return,
                WatchEnd::Compacted(c) => {
                    out.send(Observation::Compacted {
                        revision: c,
                        source: CompactionSource::Watch,
                    })
                    .await;
                    // The watch opens one revision early (see `session.rs`): a compaction
                    // at exactly `start` cancels it too.
                    let note = if c == start {
                        format!(
                            "etcd compacted at {c}, exactly the revision the watch resumes from, where a watch can miss a DELETE (etcd-io/etcd#19179); relisting"
                        )
                    } else {
                        format!("watch from revision {start} refused: compacted at {c}; relisting")
                    };
                    out.send(Observation::Note(note)).await;
                    relist_for = Some(c);
                }
                WatchEnd::Lost(reason) => {
                    // A member without a leader (cut off from the others, or removed)
                    // still answers Status: try it last, so that the next connection
                    // goes to a member of the quorum.
                    if reason.contains("no leader") {
                        if let Some(read) = last_endpoint.as_ref() {
                            if let Some(i) = etcd.endpoints.iter().position(|e| e == read) {
                                let e = etcd.endpoints.remove(i);
                                etcd.endpoints.push(e);
                            }
                            out.send(Observation::Note(format!(
                                "etcd member {read} has no leader (cut off from the others, or removed): reading from another member"
                            )))
                            .await;
                        }
                    }
                    attempt = 1;
                    out.send(Observation::Conn(ConnState::Reconnecting {
                        attempt,
                        error: reason,
                    }))
                    .await;
                }
                WatchEnd::Silent(since) => {
                    attempt = 1;
                    silent_since = Some(since);
                    out.send(Observation::Conn(ConnState::NotResponding { since }))
                        .await;
                }
            }
        }
    }

    /// Lists the prefix at one revision (see [`super::list`]) and emits ListBegin,
    /// ListCount, ListPages and ListDone. Returns the list revision.
    async fn list(
        &self,
        client: &mut Client,
        out_tx: &Emitter,
        compacted: Option<Revision>,
        at: Revision,
    ) -> Result<Revision, ListError> {
        let mut kv = client.kv_client();
        let rev = super::list::list_pinned(&kv, &self.sync, out_tx, at).await?;
        // The apiserver's compaction marker lives at the etcd root, outside the prefix.
        if let Ok(Ok(resp)) = tokio::time::timeout(
            self.sync.request_timeout,
            kv.get(COMPACT_REV_KEY, Some(GetOptions::new().with_revision(rev))),
        )
        .await
        {
            if let Some(c) = resp.kvs().first().and_then(|kv| parse_rev(kv.value())) {
                out_tx
                    .send(Observation::Compacted {
                        revision: c,
                        source: CompactionSource::CompactRevKey,
                    })
                    .await;
            }
        }
        if !out_tx
            .send(Observation::ListDone {
                revision: rev,
                compacted,
            })
            .await
        {
            return Err(ListError::Closed);
        }
        Ok(rev)
    }

    /// The client URLs of the members other than `own` (etcd's `MemberList`), one per
    /// member, in etcd's order, with the scheme of the endpoint given; `None` when etcd does
    /// not answer within the request timeout.
    async fn other_members(&self, client: &mut Client, own: u64) -> Option<Vec<String>> {
        let list = tokio::time::timeout(self.sync.request_timeout, client.member_list())
            .await
            .ok()?
            .ok()?;
        Some(
            list.members()
                .iter()
                .filter(|m| !m.is_learner() && m.id() != own)
                .filter_map(|m| self.etcd.client_url(m.client_urls()).cloned())
                .collect(),
        )
    }

    /// The first key under the prefix and its mod_revision at `rev`, as an anchor.
    async fn first_key_at(
        &self,
        client: &mut Client,
        rev: Revision,
    ) -> Option<(Vec<u8>, Revision)> {
        let start = self.sync.range_key();
        let opts = GetOptions::new()
            .with_range(prefix_end(&start))
            .with_limit(1)
            .with_keys_only()
            .with_revision(rev);
        let resp = tokio::time::timeout(self.sync.request_timeout, client.get(start, Some(opts)))
            .await
            .ok()?
            .ok()?;
        let kv = resp.kvs().first()?;
        Some((kv.key().to_vec(), kv.mod_revision()))
    }

    /// Whether etcd's history disagrees with what we saw: the anchor key at its revision
    /// must still have that mod_revision. Returns the reason when it does not; `None` when
    /// it agrees or cannot be checked (no anchor, compacted, error).
    async fn anchor_diverged(
        &self,
        client: &mut Client,
        anchor: Option<&(Vec<u8>, Revision)>,
    ) -> Option<String> {
        let (key, rev) = anchor?;
        let opts = GetOptions::new().with_revision(*rev);
        let resp = tokio::time::timeout(
            self.sync.request_timeout,
            client.get(key.clone(), Some(opts)),
        )
        .await
        .ok()?
        .ok()?;
        let now = resp.kvs().first().map(|kv| kv.mod_revision());
        if now == Some(*rev) {
            return None;
        }
        Some(format!(
            "etcd's history changed: {} had mod_revision {rev}, etcd now has {} at that revision (restored from a snapshot?); replica rebuilt from a fresh list",
            crate::model::escape_bytes(key),
            now.map_or("no such key".to_string(), |m| format!("mod_revision {m}"))
        ))
    }

    async fn warn_if_empty(&self, client: &mut Client, out: &Emitter) {
        // A failed count says nothing: the list that follows reports the error.
        if let Ok(KeysUnder::None(msg)) = keys_under(client, &self.sync.prefix).await {
            out.send(Observation::Note(msg)).await;
        }
    }
}

/// Aborts a task when dropped (whichever way the owner returns).
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The note for a user that may not read compact_rev_key (outside the prefix).
fn marker_refused() -> Observation {
    Observation::Note(format!(
        "no read permission on {}: watching the prefix alone; compactions are seen from the watch and etcd's metrics only",
        String::from_utf8_lossy(COMPACT_REV_KEY)
    ))
}

/// What the sync loop keeps from one watch to the next, beside the forwarded revision.
struct Kept {
    /// A key and the mod_revision it had, asked again after a reconnect to tell a restored
    /// etcd (see `anchor_diverged`).
    anchor: Option<(Vec<u8>, Revision)>,
    /// Whether to watch compact_rev_key beside the prefix: dropped for good once etcd
    /// refuses it (a user that may read only the prefix).
    watch_marker: bool,
}

/// Whether etcd `version` sends progress notifications only after the events before them
/// (etcd-io/etcd#15220, fixed in 3.4.25 and 3.5.8; 3.6 and later are fine).
pub fn progress_ordered(version: &str) -> bool {
    let mut parts = version
        .trim_start_matches('v')
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor, patch) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    match (major, minor) {
        (3, 4) => patch >= 25,
        (3, 5) => patch >= 8,
        (3, m) => m >= 6,
        (m, _) => m > 3,
    }
}

fn parse_rev(v: &[u8]) -> Option<Revision> {
    std::str::from_utf8(v)
        .ok()?
        .trim()
        .parse::<Revision>()
        .ok()
        .filter(|r| *r > 0)
}

/// Lists the prefix once (no watch) into a channel, at revision `at` (0: the current one);
/// used by `snapshot` and `verify`. Returns the list revision.
pub async fn list_once(
    source: &EtcdSource,
    client: &mut Client,
    tx: mpsc::Sender<Stamped>,
    at: Revision,
) -> Result<Revision, ListError> {
    let out = Emitter { tx };
    let rev = source.list(client, &out, None, at).await?;
    if at == 0 {
        let _ = tokio::time::timeout(
            source.sync.request_timeout,
            source.warn_if_empty(client, &out),
        )
        .await;
    }
    Ok(rev)
}

/// Whether etcd holds keys under `prefix` + `/` (a count-only range read: etcd counts
/// in its index without reading values).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeysUnder {
    /// This many keys.
    Some(i64),
    /// None, with one line that says so and names the top-level prefixes etcd holds
    /// instead (the usual cause: kube-apiserver runs with another `--etcd-prefix`).
    None(String),
}

/// Counts the keys under `prefix` + `/`; see [`KeysUnder`].
///
/// Errors: the range read's (unreachable, permission denied, …).
pub async fn keys_under(
    client: &mut Client,
    prefix: &[u8],
) -> Result<KeysUnder, etcd_client::Error> {
    let mut start = prefix.to_vec();
    if start.last() != Some(&b'/') {
        start.push(b'/');
    }
    let count = client
        .get(
            start.clone(),
            Some(
                GetOptions::new()
                    .with_range(prefix_end(&start))
                    .with_count_only(),
            ),
        )
        .await?
        .count();
    if count > 0 {
        return Ok(KeysUnder::Some(count));
    }
    let tops = top_level_prefixes(client, 20).await.unwrap_or_default();
    Ok(KeysUnder::None(no_keys_line(prefix, &tops, "this etcd")))
}

/// The line that says no key is under `prefix` and names the top-level prefixes `tops`
/// (from [`top_level_prefixes`] or a db file's keys) held by `what` (`this etcd`, a file's
/// name) instead: `no keys under /kube/; top-level prefixes here: /registry,
/// compact_rev_key (use --prefix)`, or `no keys under /kube/: this etcd is empty`.
pub fn no_keys_line(prefix: &[u8], tops: &[String], what: &str) -> String {
    let shown = crate::model::escape_bytes(prefix);
    let shown = shown.trim_end_matches('/');
    if tops.is_empty() {
        format!("no keys under {shown}/: {what} is empty")
    } else {
        format!(
            "no keys under {shown}/; top-level prefixes here: {} (use --prefix)",
            tops.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_ordering_by_etcd_version() {
        assert!(!progress_ordered("3.4.23"));
        assert!(progress_ordered("3.4.25"));
        assert!(!progress_ordered("3.5.7"));
        assert!(progress_ordered("3.5.16"));
        assert!(progress_ordered("3.6.4"));
        assert!(!progress_ordered("garbage"));
    }

    #[test]
    fn compact_rev_key_values() {
        assert_eq!(parse_rev(b"1234"), Some(1234));
        assert_eq!(parse_rev(b"0"), None);
        assert_eq!(parse_rev(b"\xff"), None);
    }

    #[test]
    fn range_key_has_one_trailing_slash() {
        let mut s = SyncOptions::default();
        assert_eq!(s.range_key(), b"/registry/".to_vec());
        s.prefix = b"/kubernetes.io/".to_vec();
        assert_eq!(s.range_key(), b"/kubernetes.io/".to_vec());
    }
}
