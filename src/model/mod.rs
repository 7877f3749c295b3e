//! Plain data types shared by sources, the store, the TUI and the CLI.
//!
//! Nothing here knows about tokio, gRPC or ratatui: a source turns what it receives into
//! [`Observation`]s, the store applies them, views read the store. Keys and values are
//! [`Bytes`] (reference counted), so history, views and recordings share one copy of a value.

mod key;

use std::time::SystemTime;

pub use bytes::Bytes;
pub use key::{escape_bytes, prefix_end, KeyPath};

/// An etcd revision: the cluster-wide, monotonically increasing counter etcd bumps on every
/// write transaction (etcd MVCC; a fresh single-member cluster's first write is revision 2).
/// A Kubernetes object's `metadata.resourceVersion` is its key's `mod_revision`.
pub type Revision = i64;

/// One version of one key, exactly as etcd reports it in a range or watch response
/// (`mvccpb.KeyValue`).
#[derive(Clone, Debug, PartialEq, Eq)]
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

/// PUT or DELETE, as in etcd's `mvccpb.Event.EventType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum EventKind {
    Put,
    Delete,
}

/// One watch event. For a DELETE, `kv` carries the key and the deleting revision in
/// `mod_revision` (etcd sends an empty value and zero create_revision/version).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchEvent {
    pub kind: EventKind,
    pub kv: KeyValue,
    /// The previous version when the watch was created with `prev_kv` and etcd still had it.
    pub prev_kv: Option<KeyValue>,
}

/// Connection state of a source, shown in the header.
#[derive(Clone, Debug, PartialEq, Eq)]
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
}

/// Why the replica skipped a range of revisions it could not observe one by one.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
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
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CompactionSeen {
    pub revision: Revision,
    #[serde(with = "humantime_serde_compat")]
    pub at: SystemTime,
    /// Where the fact came from: "compact_rev_key", "watch", "metrics", "list".
    pub source: &'static str,
}

/// Everything a source can tell the store, in the order it happened.
#[derive(Clone, Debug)]
pub enum Observation {
    /// Start of a (re)list pinned at `revision`. Pages follow; `ListDone` ends it.
    ListBegin { revision: Revision },
    /// One page of a list, keys ascending.
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
        source: &'static str,
    },
    /// Connection state changed.
    Conn(ConnState),
    /// Facts about the server, learned once per connection.
    Server { endpoint: String, version: String },
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
}

impl ScrapeTarget {
    pub fn label(self) -> &'static str {
        match self {
            ScrapeTarget::Apiserver => "apiserver",
            ScrapeTarget::Etcd => "etcd",
        }
    }
}

/// The result of one scrape.
#[derive(Clone, Debug)]
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InformerObs {
    pub group: String,
    pub resource: String,
    pub what: InformerWhat,
}

/// What an informer saw.
#[derive(Clone, Debug, PartialEq, Eq)]
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
#[derive(Clone, Debug)]
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

/// Serialize a `SystemTime` as RFC 3339 text.
pub mod humantime_serde_compat {
    use std::time::SystemTime;

    pub fn serialize<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_rfc3339_millis(*t).to_string())
    }
}
