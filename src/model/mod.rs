//! Plain data types shared by sources, the store, the TUI and the CLI.
//!
//! Nothing here knows about tokio, gRPC or ratatui: a source turns what it receives into
//! [`Observation`]s, the store applies them, views read the store. Keys and values are
//! [`Bytes`] (reference counted), so history, views and recordings share one copy of a value.

mod key;
pub mod kubernetes;

use std::time::SystemTime;

pub use bytes::Bytes;
pub use key::{escape_bytes, prefix_end, KeyPath, NO_RESOURCE, OUTSIDE_PREFIX};
pub use kubernetes::{BuiltinResource, BUILTIN_RESOURCES};

/// An etcd revision: the cluster-wide, monotonically increasing counter etcd bumps on every
/// write transaction (etcd MVCC; a fresh single-member cluster's first write is revision 2).
/// A Kubernetes object's `metadata.resourceVersion` is its key's `mod_revision`.
pub type Revision = i64;

/// One version of one key, exactly as etcd reports it in a range or watch response
/// (`mvccpb.KeyValue`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct KeyValue {
    /// The key bytes (not necessarily UTF-8).
    pub key: Bytes,
    /// Revision of the write that created the key (last creation after a delete).
    pub create_revision: Revision,
    /// Revision of the write that produced this version.
    pub mod_revision: Revision,
    /// Number of writes since creation, starting at 1; etcd resets it to 0 on delete.
    pub version: i64,
    /// Lease ID the key is attached to, 0 for none (Kubernetes events and leases use TTLs).
    pub lease: i64,
    /// The stored value bytes (protobuf, JSON, CBOR, encrypted or anything else).
    pub value: Bytes,
}

/// `v` as bytes whose clones are reference counts (`Bytes::from_owner`), without copying
/// them. A `Bytes` made with `Bytes::from(vec)` allocates its shared count on its first
/// clone, on whichever thread clones it; the store clones every key and value it applies
/// (history, event log), so sources and the replay's reader hand over bytes made this way,
/// and the allocation happens on their threads, not the session's. (Not via
/// `Bytes::from(vec)` and back: bytes 1.x's `Vec::from(Bytes)` moves every byte once more,
/// to the start of its buffer, even when it already starts there.)
/// Unix seconds of a time (0 before the epoch): the second a sample, a counter or a
/// revision→time entry is booked under.
pub fn unix_second(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

pub fn shareable(v: Vec<u8>) -> Bytes {
    if v.is_empty() {
        return Bytes::new();
    }
    Bytes::from_owner(v)
}

impl KeyValue {
    /// A key-value whose key and value are slices of one [`shareable`] buffer (`key`
    /// then `value`): one allocation where two shareable copies take four. The key then
    /// keeps the value's memory for as long as it is held, and the other way round: the
    /// store copies keys it indexes and holds the two together only in its event log and
    /// history, where both live equally long anyway.
    pub fn joined(
        key: &[u8],
        create_revision: Revision,
        mod_revision: Revision,
        version: i64,
        lease: i64,
        value: &[u8],
    ) -> KeyValue {
        let mut buf = Vec::with_capacity(key.len() + value.len());
        buf.extend_from_slice(key);
        buf.extend_from_slice(value);
        // Split rather than sliced twice: one count taken instead of two taken and one
        // given back.
        let mut value = shareable(buf);
        let key = value.split_to(key.len());
        KeyValue {
            key,
            create_revision,
            mod_revision,
            version,
            lease,
            value,
        }
    }
}

/// Read back as written by the derived `Serialize` (a struct of six fields), into one
/// buffer per key-value ([`KeyValue::joined`]): recordings are read on the replay's
/// read-ahead thread, so the session's thread never allocates or frees for it.
impl<'de> serde::Deserialize<'de> for KeyValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<KeyValue, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(rename = "KeyValue")]
        struct Wire<'a> {
            #[serde(borrow, with = "serde_bytes_cow")]
            key: std::borrow::Cow<'a, [u8]>,
            create_revision: Revision,
            mod_revision: Revision,
            version: i64,
            lease: i64,
            #[serde(borrow, with = "serde_bytes_cow")]
            value: std::borrow::Cow<'a, [u8]>,
        }
        let w = Wire::deserialize(d)?;
        Ok(KeyValue::joined(
            &w.key,
            w.create_revision,
            w.mod_revision,
            w.version,
            w.lease,
            &w.value,
        ))
    }
}

/// Bytes as serde bytes (what `Bytes` serialises to), borrowed from the input when the
/// format lends it (postcard) and copied when not (JSON's arrays of numbers).
mod serde_bytes_cow {
    use std::borrow::Cow;
    use std::fmt;

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Cow<'de, [u8]>, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Cow<'de, [u8]>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a byte string")
            }
            fn visit_borrowed_bytes<E>(self, v: &'de [u8]) -> Result<Self::Value, E> {
                Ok(Cow::Borrowed(v))
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<Self::Value, E> {
                Ok(Cow::Owned(v.to_vec()))
            }
            fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Self::Value, E> {
                Ok(Cow::Owned(v))
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Cow::Borrowed(v.as_bytes()))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Cow::Owned(v.as_bytes().to_vec()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
                while let Some(b) = seq.next_element::<u8>()? {
                    out.push(b);
                }
                Ok(Cow::Owned(out))
            }
        }
        d.deserialize_bytes(V)
    }
}

/// PUT or DELETE, as in etcd's `mvccpb.Event.EventType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum EventKind {
    Put,
    Delete,
}

impl EventKind {
    /// `PUT` or `DELETE`, as etcd names them (and as export writes them).
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Put => "PUT",
            EventKind::Delete => "DELETE",
        }
    }
}

/// One watch event. For a DELETE, `kv` carries the key and the deleting revision in
/// `mod_revision` (etcd sends an empty value and zero create_revision/version).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WatchEvent {
    pub kind: EventKind,
    pub kv: KeyValue,
    /// The previous version when the watch was created with `prev_kv` and etcd still had it.
    /// The etcd source no longer asks for it (the replica holds the previous version);
    /// recordings made before may carry it, and replay reads it (it is redacted alike).
    pub prev_kv: Option<KeyValue>,
}

/// Connection state of a source, shown in the header.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ConnState {
    Connecting,
    /// Initial or recovery list in progress: keys received so far.
    Listing {
        keys: u64,
    },
    Watching,
    /// No response within the liveness window since `since` (wall clock).
    NotResponding {
        since: SystemTime,
    },
    /// Lost the connection; retrying after a backoff. `error` is the last error, one line.
    Reconnecting {
        attempt: u32,
        error: String,
    },
    /// The source gave up (fatal error, e.g. authentication refused).
    Failed {
        error: String,
    },
    /// No connection: the source is etcd's own db file, read whole (see
    /// `crate::source::etcd_db`).
    File,
}

/// Why the replica skipped a range of revisions it could not observe one by one.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Gap {
    /// First revision whose events were not seen individually.
    pub from: Revision,
    /// Revision of the relist that closed the gap (inclusive).
    pub to: Revision,
    /// etcd's compacted revision that forced the relist.
    pub compact_revision: Revision,
    /// Wall clock when the gap was recorded.
    #[serde(with = "humantime_serde_compat")]
    pub at: SystemTime,
}

/// One compaction seen through the `compact_rev_key` the apiserver writes
/// (k8s.io/apiserver storage/etcd3/compact.go: the key's `version` counts compactions and
/// the compaction revision is the revision at which the previous compaction wrote the key).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CompactionSeen {
    pub revision: Revision,
    #[serde(with = "humantime_serde_compat")]
    pub at: SystemTime,
    /// Where the fact came from.
    pub source: CompactionSource,
}

/// How regscope learned of a compaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionSource {
    /// The `compact_rev_key` the apiserver's compactor writes (k8s.io/apiserver
    /// storage/etcd3/compact.go).
    CompactRevKey,
    /// etcd cancelled a watch with its compacted revision (etcd's watch API,
    /// `WatchResponse.compact_revision`).
    Watch,
    /// etcd's `/metrics` (`etcd_debugging_mvcc_compact_revision`).
    Metrics,
    /// A list or range refused with "required revision has been compacted".
    List,
    /// An etcd db file's `finishedCompactRev` (its `meta` bucket).
    DbFile,
}

impl CompactionSource {
    /// Short label for screens and JSON: `compact_rev_key`, `watch`, `metrics`, `list`,
    /// `db_file`.
    pub fn label(self) -> &'static str {
        match self {
            CompactionSource::CompactRevKey => "compact_rev_key",
            CompactionSource::DbFile => "db_file",
            CompactionSource::Watch => "watch",
            CompactionSource::Metrics => "metrics",
            CompactionSource::List => "list",
        }
    }
}

impl std::fmt::Display for CompactionSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// Everything a source can tell the store, in the order it happened. Serialisable: a
/// recording is a sequence of these (see `crate::record`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Observation {
    /// Start of a (re)list pinned at `revision`. Pages follow; `ListDone` ends it.
    ListBegin { revision: Revision },
    /// One page of a list, keys ascending within the page. A list reads several ranges at
    /// once, so pages do not come in key order.
    ListPage { kvs: Vec<KeyValue> },
    /// End of the list: the replica now equals etcd at `revision` for the prefix.
    /// `compacted` is set when the relist was forced by a compaction.
    ListDone {
        revision: Revision,
        compacted: Option<Revision>,
    },
    /// A batch of watch events from one watch response; `revision` is the header revision.
    Events {
        revision: Revision,
        events: Vec<WatchEvent>,
    },
    /// A progress notification: etcd has sent every event up to `revision`.
    Progress { revision: Revision },
    /// etcd told us its compacted revision (watch cancellation, metrics or compact_rev_key).
    Compacted {
        revision: Revision,
        source: CompactionSource,
    },
    /// Connection state changed.
    Conn(ConnState),
    /// Facts about the server, learned once per connection. `cluster_id` is etcd's
    /// (`ResponseHeader.cluster_id`), 0 when unknown.
    Server {
        endpoint: String,
        version: String,
        #[serde(default)]
        cluster_id: u64,
    },
    /// A note for the event log (one line, for humans).
    Note(String),
    /// etcd's history was replaced under us (restored from a snapshot, wiped data dir): the
    /// replica forgets everything it holds; a fresh list follows.
    Reset { reason: String },
    /// One scrape of a `/metrics` endpoint (or one offline metrics file): the raw body as
    /// received, or why there is none. Bodies are kept raw so that recordings replay the
    /// same derivation as live; the store parses and maps them.
    Scrape {
        target: ScrapeTarget,
        outcome: ScrapeOutcome,
    },
    /// What one of regscope's own informers (a list + watch with bookmarks through the
    /// apiserver) saw.
    Informer(InformerObs),
    /// The clock moved: the live sources stamp one every second, so that time on screen
    /// (rates over the last minute, "stale since", ages) comes from the stream even when
    /// nothing else arrives, and a replay sees the same seconds go by.
    Tick,
    /// etcd's count of the keys under the prefix at the list revision (the `count` of the
    /// list's first range response), sent after `ListBegin`: what the list will bring, for
    /// its progress and estimate.
    ListCount { keys: u64 },
    /// A progress notification from an etcd that may send one before events still queued
    /// for the same watch (etcd 3.4 before 3.4.25 and 3.5.0–3.5.7, etcd-io/etcd#15220): it
    /// says only that etcd's head is at least `revision`, not that every event up to it
    /// was sent, so the store shows it apart and never applies it as [`Observation::Progress`].
    HeadAtLeast { revision: Revision },
    /// What etcd's `Maintenance.Status` answered for the member read from: sent on every
    /// connection and then every [`crate::source::SyncOptions::status_interval`].
    EtcdStatus(EtcdStatus),
    /// Every member of the etcd cluster (etcd's `Cluster.MemberList`) with what its own
    /// `Maintenance.Status` answered, or why it did not: sent every
    /// [`crate::source::SyncOptions::status_interval`] by a poller beside the watch.
    Members(Vec<MemberStatus>),
    /// kube-apiserver's storage flags as found on the node (its static pod manifest), sent
    /// once when the live sources start, so that a replay shows them too.
    ApiserverFlags(ApiserverFlags),
    /// What the watcher of another etcd cluster of kube-apiserver's learned
    /// (`--etcd-servers-overrides`, e.g. Events in their own etcd): see
    /// `crate::source::other_cluster`.
    OtherCluster(OtherClusterObs),
}

/// kube-apiserver's flags that shape its storage, as written in its static pod manifest:
/// `--watch-cache`, `--watch-cache-sizes`, `--default-watch-cache-size`,
/// `--etcd-servers-overrides`, `--etcd-compaction-interval` (each when given). Raw text:
/// what they mean is read where they are shown.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ApiserverFlags {
    /// The manifest they were read from, as on the node (e.g.
    /// `/etc/kubernetes/manifests/kube-apiserver.yaml`).
    pub file: String,
    /// `(flag, value)` in the order written, the flag with its dashes.
    pub flags: Vec<(String, String)>,
}

impl ApiserverFlags {
    /// The value of `flag` (with its dashes), the last one when given twice (as kube-apiserver
    /// reads it).
    pub fn get(&self, flag: &str) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(f, _)| f == flag)
            .map(|(_, v)| v.as_str())
    }
}

/// The watch cache as kube-apiserver's flags configure it (k8s.io/apiserver
/// `pkg/server/options/etcd.go`, Kubernetes 1.30): `--watch-cache` (default true) turns it
/// on or off for all; `--default-watch-cache-size` (default 100) of 0 turns it off for the
/// resources not listed in `--watch-cache-sizes` (`resource[.group]#size`), where 0 turns it
/// off for one resource. Any other size only means "on": kube-apiserver sizes each
/// cache's ring itself (its capacity moves between bounds with the event rate).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchCacheFlags {
    /// `--watch-cache` (true unless given false).
    pub enabled: bool,
    /// `--default-watch-cache-size` when given.
    pub default_size: Option<i64>,
    /// `--watch-cache-sizes` entries: (`resource[.group]`, size).
    pub sizes: Vec<(String, i64)>,
    /// Entries that are not `resource[.group]#size` with a size of 0 or more, as written
    /// (kube-apiserver refuses to start on them).
    pub unreadable: Vec<String>,
}

impl WatchCacheFlags {
    /// The explicit size for `resource` in `group` ("" for the core group), when listed.
    pub fn size_for(&self, group: &str, resource: &str) -> Option<i64> {
        let name = if group.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}.{group}")
        };
        self.sizes
            .iter()
            .rev()
            .find(|(r, _)| *r == name)
            .map(|(_, n)| *n)
    }

    /// Whether the cache is on for `resource` in `group`.
    pub fn cached(&self, group: &str, resource: &str) -> bool {
        self.enabled
            && match self.size_for(group, resource) {
                Some(n) => n != 0,
                None => self.default_size != Some(0),
            }
    }

    /// The resources the flags turn the cache off for (`resource[.group]`), in the order
    /// written.
    pub fn disabled(&self) -> Vec<&str> {
        self.sizes
            .iter()
            .filter(|(_, n)| *n == 0)
            .map(|(r, _)| r.as_str())
            .collect()
    }
}

impl ApiserverFlags {
    /// The watch-cache flags read (see [`WatchCacheFlags`]); `None` when none is given.
    pub fn watch_cache(&self) -> Option<WatchCacheFlags> {
        let on = self.get("--watch-cache");
        let default = self.get("--default-watch-cache-size");
        let sizes = self.get("--watch-cache-sizes");
        if on.is_none() && default.is_none() && sizes.is_none() {
            return None;
        }
        let mut out = WatchCacheFlags {
            enabled: !matches!(
                on.map(str::trim),
                Some("false" | "0" | "f" | "F" | "FALSE" | "False")
            ),
            default_size: default.and_then(|d| d.trim().parse().ok()),
            ..WatchCacheFlags::default()
        };
        for entry in sizes.unwrap_or("").split(',').map(str::trim) {
            if entry.is_empty() {
                continue;
            }
            // kube-apiserver refuses to start on a size that is not a number or is
            // negative (`ParseWatchCacheSizes`); an empty resource name it takes as given.
            match entry
                .split_once('#')
                .and_then(|(r, n)| Some((r.trim(), n.trim().parse::<i64>().ok()?)))
            {
                Some((r, n)) if n >= 0 => out.sizes.push((r.to_string(), n)),
                _ => out.unreadable.push(entry.to_string()),
            }
        }
        Some(out)
    }
}

/// One report of the watcher of another etcd cluster.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OtherClusterObs {
    /// The resources kube-apiserver keeps there, as `--etcd-servers-overrides` names them
    /// (`group/resource`, `/events` for core Events), comma-separated.
    pub resources: String,
    pub what: OtherClusterWhat,
}

/// What the watcher of another etcd cluster learned.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum OtherClusterWhat {
    /// Connected (sent on each connection and then every status interval): the member that
    /// answered, its version, the cluster's ID, its head revision, the backend file's size
    /// (bytes) and the keys under the prefix (etcd's count at that revision).
    Up {
        endpoint: String,
        version: String,
        cluster_id: u64,
        revision: Revision,
        db_size: i64,
        keys: u64,
    },
    /// Not connected: why (one line). The watcher retries.
    Down { error: String },
    /// One watch response's events under the prefix, counted: `revision` is the response
    /// header's; `creates` are the puts that made a key (create_revision = mod_revision);
    /// `bytes` are keys and values put.
    Writes {
        revision: Revision,
        puts: u64,
        creates: u64,
        deletes: u64,
        bytes: u64,
    },
}

/// One etcd member as the member list names it, and its own Status answer.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MemberStatus {
    /// The member's ID (`Member.ID`).
    pub id: u64,
    /// Its `--name`; empty for a member added but not started yet.
    pub name: String,
    /// The client URL regscope asks (the first of its `clientURLs` with the scheme of the
    /// endpoints given); empty when it has none.
    pub endpoint: String,
    /// A learner (non-voting member, etcd 3.4+).
    pub is_learner: bool,
    /// Its Status answer, when it gave one within the request timeout.
    pub status: Option<EtcdStatus>,
    /// Why there is no answer: the connection or request error, or a timeout.
    pub error: Option<String>,
}

/// etcd's `Maintenance.Status` answer for one member (etcd v3 API `StatusResponse`):
/// sizes in bytes, raft positions, and the alarms raised in the cluster as etcd words them.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EtcdStatus {
    /// The endpoint that answered.
    pub endpoint: String,
    /// The answering member's ID (`ResponseHeader.member_id`) and the leader's.
    pub member_id: u64,
    pub leader: u64,
    pub raft_term: u64,
    pub raft_index: u64,
    pub raft_applied_index: u64,
    /// Physical size of the backend file, bytes.
    pub db_size: i64,
    /// Bytes of that file in use (`raft_used_db_size`, etcd 3.4+); the rest is what a
    /// defragmentation gives back.
    pub db_size_in_use: i64,
    pub is_learner: bool,
    /// `StatusResponse.errors`: one line per alarm raised anywhere in the cluster (etcd
    /// 3.4+), e.g. `memberID:10276657743932975437 alarm:NOSPACE `.
    pub errors: Vec<String>,
}

impl EtcdStatus {
    /// The names of the alarms raised (`NOSPACE`, `CORRUPT`), once each, from `errors`.
    pub fn alarms(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .errors
            .iter()
            .filter_map(|e| e.split("alarm:").nth(1))
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

impl Observation {
    /// The highest revision an observation speaks for (0 for those without one).
    pub fn revision(&self) -> Revision {
        match self {
            Observation::ListBegin { revision }
            | Observation::ListDone { revision, .. }
            | Observation::Progress { revision } => *revision,
            Observation::Events { revision, events } => events
                .last()
                .map_or(*revision, |e| e.kv.mod_revision.max(*revision)),
            _ => 0,
        }
    }

    /// Short name of the variant, for statistics and `export`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Observation::ListBegin { .. } => "list_begin",
            Observation::ListPage { .. } => "list_page",
            Observation::ListCount { .. } => "list_count",
            Observation::ListDone { .. } => "list_done",
            Observation::Events { .. } => "events",
            Observation::Progress { .. } => "progress",
            Observation::Compacted { .. } => "compacted",
            Observation::Conn(_) => "conn",
            Observation::Server { .. } => "server",
            Observation::Note(_) => "note",
            Observation::Reset { .. } => "reset",
            Observation::Scrape { .. } => "scrape",
            Observation::Informer(_) => "informer",
            Observation::Tick => "tick",
            Observation::HeadAtLeast { .. } => "head_at_least",
            Observation::EtcdStatus(_) => "etcd_status",
            Observation::Members(_) => "members",
            Observation::ApiserverFlags(_) => "apiserver_flags",
            Observation::OtherCluster(_) => "other_cluster",
        }
    }
}

/// Which `/metrics` endpoint a scrape came from.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ScrapeTarget {
    /// kube-apiserver's `/metrics`.
    Apiserver,
    /// etcd's `/metrics` (client URL, or `--listen-metrics-urls`).
    Etcd,
    /// kube-controller-manager's `/metrics` (secure port 10257 by default): its informers
    /// (`informer_*`, Kubernetes 1.36+) and workqueues (`workqueue_*`).
    #[serde(rename = "controller-manager")]
    ControllerManager,
    /// kube-scheduler's `/metrics` (secure port 10259 by default): the same client-go
    /// families as the controller manager.
    Scheduler,
}

impl ScrapeTarget {
    /// Every target, in the order of their index in recordings (appended, never reordered:
    /// a recording stores the index).
    pub const ALL: [ScrapeTarget; 4] = [
        ScrapeTarget::Apiserver,
        ScrapeTarget::Etcd,
        ScrapeTarget::ControllerManager,
        ScrapeTarget::Scheduler,
    ];

    pub fn label(self) -> &'static str {
        match self {
            ScrapeTarget::Apiserver => "apiserver",
            ScrapeTarget::Etcd => "etcd",
            ScrapeTarget::ControllerManager => "controller-manager",
            ScrapeTarget::Scheduler => "scheduler",
        }
    }

    /// The target whose index (`as u8`) is `i`.
    pub fn from_index(i: u8) -> Option<ScrapeTarget> {
        ScrapeTarget::ALL.get(usize::from(i)).copied()
    }

    /// The components whose informers and workqueues regscope reads (the controllers'
    /// own informer lag): kube-controller-manager and kube-scheduler.
    pub const CONTROLLERS: [ScrapeTarget; 2] =
        [ScrapeTarget::ControllerManager, ScrapeTarget::Scheduler];

    /// The component's process name, as in its static pod manifest
    /// (`kube-controller-manager`).
    pub fn component(self) -> &'static str {
        match self {
            ScrapeTarget::Apiserver => "kube-apiserver",
            ScrapeTarget::Etcd => "etcd",
            ScrapeTarget::ControllerManager => "kube-controller-manager",
            ScrapeTarget::Scheduler => "kube-scheduler",
        }
    }
}

/// The result of one scrape.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ScrapeOutcome {
    /// HTTP 200 (or a file's contents): the body, not yet parsed. `source` is the URL or
    /// file path, for display. A body that is not Prometheus text (HTML, garbage) still
    /// arrives here; the store's parser counts its unreadable lines and marks the target
    /// stale when no sample could be read.
    Body { source: String, body: Bytes },
    /// No body: connection refused, timeout, TLS or HTTP error status. `error` is one line
    /// for humans, e.g. `GET https://10.0.0.1:6443/metrics: timed out after 5s`.
    Failed { source: String, error: String },
}

/// One thing an informer saw for one resource. `resource` is `group/resource` style
/// identity split in two: `group` is `""` for the core group.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InformerObs {
    pub group: String,
    pub resource: String,
    pub what: InformerWhat,
}

/// What an informer saw.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum InformerWhat {
    /// A list finished; the list's `metadata.resourceVersion` (an etcd revision for
    /// etcd3-backed resources). `relist` is false for the first list of the session.
    Listed {
        resource_version: Revision,
        items: u64,
        relist: bool,
    },
    /// A watch event (ADDED/MODIFIED/DELETED, `bookmark` false) or a BOOKMARK (true) with the
    /// object's `metadata.resourceVersion`. The store measures lag against the replica's
    /// head at the moment it applies this (its `Stamped::at`).
    Event {
        resource_version: Revision,
        bookmark: bool,
    },
    /// The apiserver answered 410 Gone (HTTP status or an ERROR watch event with code
    /// 410: "too old resource version"); the informer relists. `message` as the server
    /// said it.
    Gone { message: String },
    /// The watch or list failed for another reason (one line); the informer retries.
    Error { message: String },
}

/// An observation with the wall-clock time the source received it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stamped {
    pub at: SystemTime,
    pub obs: Observation,
}

impl Stamped {
    pub fn now(obs: Observation) -> Self {
        Self {
            at: SystemTime::now(),
            obs,
        }
    }
}

/// A `SystemTime` as RFC 3339 text (milliseconds) for human-readable formats (JSON), and
/// exactly (seconds and nanoseconds since the epoch) for binary ones (recordings and
/// checkpoints), so that a checkpoint restores the same instant it saved.
pub mod humantime_serde_compat {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::time::SystemTime;

    pub fn serialize<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.serialize_str(&humantime::format_rfc3339_millis(*t).to_string())
        } else {
            t.serialize(s)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
        if d.is_human_readable() {
            let s = String::deserialize(d)?;
            humantime::parse_rfc3339_weak(&s).map_err(serde::de::Error::custom)
        } else {
            SystemTime::deserialize(d)
        }
    }

    /// The same for `Option<SystemTime>` (`null` when absent).
    pub mod opt {
        use super::*;

        pub fn serialize<S: Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
            if s.is_human_readable() {
                match t {
                    Some(t) => s.serialize_some(&humantime::format_rfc3339_millis(*t).to_string()),
                    None => s.serialize_none(),
                }
            } else {
                t.serialize(s)
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<SystemTime>, D::Error> {
            if d.is_human_readable() {
                match Option::<String>::deserialize(d)? {
                    Some(s) => humantime::parse_rfc3339_weak(&s)
                        .map(Some)
                        .map_err(serde::de::Error::custom),
                    None => Ok(None),
                }
            } else {
                Option::<SystemTime>::deserialize(d)
            }
        }
    }
}

/// What a session is about, fixed for its whole life: where it came from and how the
/// store keeps it. Live, the console, `snapshot`, `verify` and `record` build one from
/// their flags; a recording starts with it (its header), so a replay builds exactly the
/// same store and shows the same header.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SessionInfo {
    /// Shown in the console's header: the endpoint and prefix, or `demo · etcd …`.
    pub title: String,
    /// The etcd endpoints given (or discovered), in order.
    pub endpoints: Vec<String>,
    /// The watched prefix without trailing slash (kube-apiserver's `--etcd-prefix`).
    pub prefix: String,
    /// Bytes of revision history the replica keeps besides every live key's newest value.
    pub history_budget: u64,
    /// Events kept for the event stream.
    pub event_log_cap: u64,
    /// Seconds of growth samples kept.
    pub growth_cap: u64,
    /// Scrapes kept per `/metrics` target.
    pub metric_retention: u64,
    /// `/metrics` targets with a source (URL, kubeconfig, etcd endpoint or files), shown
    /// as configured before their first scrape.
    pub scrape_targets: Vec<(ScrapeTarget, String)>,
    /// Wall clock when the session (or the recording) started.
    #[serde(with = "humantime_serde_compat")]
    pub started_at: SystemTime,
}

impl Default for SessionInfo {
    fn default() -> Self {
        SessionInfo {
            title: String::new(),
            endpoints: Vec::new(),
            prefix: "/registry".into(),
            history_budget: 256 << 20,
            event_log_cap: 10_000,
            growth_cap: 3_600,
            metric_retention: 720,
            scrape_targets: Vec::new(),
            started_at: SystemTime::UNIX_EPOCH,
        }
    }
}

#[cfg(test)]
mod tests;
