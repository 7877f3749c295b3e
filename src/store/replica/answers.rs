//! The shapes the replica answers with: a version of a key, an event-log row, what a gap
//! hid, a replaced etcd, the `snapshot --json` summary, memory, and why a question about
//! the past cannot be answered.

use std::time::SystemTime;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::stats::ResourceSummary;
use super::versions::Version;
use super::writers::WriterSummary;
use crate::model::{CompactionSeen, EtcdStatus, EventKind, Gap, MemberStatus, Revision};
use crate::store::etcd_cluster::WatchHealth;

/// A version of a key as views and the CLI see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionValue {
    pub create_revision: Revision,
    pub mod_revision: Revision,
    pub version: i64,
    pub lease: i64,
    /// `None` for a tombstone.
    pub value: Option<Bytes>,
}

/// A version without its value unpacked: what listings need (sizes, and the leading bytes
/// that tell plaintext from encrypted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionMeta<'a> {
    pub create_revision: Revision,
    pub mod_revision: Revision,
    pub version: i64,
    pub lease: i64,
    /// Length of the value in bytes; `None` for a tombstone.
    pub size: Option<usize>,
    /// The value when it is held as etcd sent it; `None` when it is held packed (values
    /// encrypted at rest never are: every packed value is plaintext) or a tombstone.
    pub raw: Option<&'a [u8]>,
}

impl<'a> VersionMeta<'a> {
    pub(super) fn of(v: &'a Version) -> VersionMeta<'a> {
        VersionMeta {
            create_revision: v.create_revision,
            mod_revision: v.mod_revision,
            version: v.version,
            lease: v.lease,
            size: (!v.value.is_tombstone()).then(|| v.value.len()),
            raw: v.value.raw_bytes().map(|b| b.as_ref()),
        }
    }
}

/// Metadata of a live key, for the key browser.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyMeta {
    pub key: Bytes,
    pub resource: String,
    pub newest: VersionValue,
    /// Versions held in history, the newest included.
    pub history_len: usize,
}

/// One applied watch event as kept for the live event stream.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EventRecord {
    pub at: SystemTime,
    pub revision: Revision,
    pub kind: EventKind,
    #[serde(deserialize_with = "crate::store::shared_bytes::bytes")]
    pub key: Bytes,
    /// For a PUT the value written, as received; for a DELETE the deleted value (etcd's
    /// `prev_kv` when sent, else the replica's last copy; empty when the key was unknown).
    #[serde(deserialize_with = "crate::store::shared_bytes::bytes")]
    pub value: Bytes,
    pub resource: u32,
    /// Set on a row the replica synthesized after a gap, from what the relist that closed
    /// it showed (checkpoint format 7 and later): the watch never delivered this change.
    #[serde(
        default,
        deserialize_with = "crate::store::shared_bytes::since_format::<7, _, _>"
    )]
    pub unseen: Option<Unseen>,
    /// A PUT whose managedFields equal the key's previous version's: no manager that
    /// managedFields names made it (see [`super::writers`]; checkpoint format 7 and
    /// later).
    #[serde(
        default,
        deserialize_with = "crate::store::shared_bytes::since_format::<7, _, _>"
    )]
    pub managed_unchanged: bool,
    /// Set on the row that marks etcd replaced under regscope (no key, no value): the rows
    /// before it are the old etcd's (checkpoint format 7 and later).
    #[serde(
        default,
        deserialize_with = "crate::store::shared_bytes::since_format::<7, _, _>"
    )]
    pub note: Option<String>,
}

impl EventRecord {
    /// Who made this write, as far as regscope can tell, in one line: the managedFields
    /// writer the new value names when the write changed managedFields (as the writers
    /// panel counts it, [`super::writers`]); else a phrase in parentheses that says
    /// why nobody is named.
    pub fn writer(&self) -> String {
        if self.note.is_some() {
            return "-".into();
        }
        if self.unseen.is_some() {
            return "(unseen: only a relist showed it)".into();
        }
        match self.kind {
            EventKind::Delete => super::writers::DELETER.into(),
            EventKind::Put if self.managed_unchanged => super::writers::UNCHANGED_WRITER.into(),
            EventKind::Put => crate::decode::last_writer(&self.value).label(),
        }
    }
}

/// A change the watch never delivered, seen only by the relist after a gap (etcd compacted
/// past the revision the watch would have resumed from): the key's state before the gap
/// against its state in the relist.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unseen {
    /// The gap: the first revision not seen one by one, and the relist's revision.
    pub from: Revision,
    pub to: Revision,
    pub change: UnseenChange,
}

/// What a relist showed of one key, against what the replica held before the gap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnseenChange {
    /// Absent (or deleted) before, live in the relist: the row's revision is the new
    /// mod_revision.
    Created,
    /// Live before and in the relist at a newer mod_revision (the row's revision); any
    /// versions between were never seen.
    Changed,
    /// Live before, absent from the relist: deleted somewhere in the gap (the row's revision
    /// is the relist's, the deleting one is unknown); the row carries the last copy held.
    Deleted,
}

impl UnseenChange {
    pub fn label(self) -> &'static str {
        match self {
            UnseenChange::Created => "created",
            UnseenChange::Changed => "changed",
            UnseenChange::Deleted => "deleted",
        }
    }
}

/// Keys created, changed and deleted inside one gap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnseenCounts {
    pub created: u64,
    pub changed: u64,
    pub deleted: u64,
}

impl UnseenCounts {
    pub fn add(&mut self, c: UnseenChange) {
        match c {
            UnseenChange::Created => self.created += 1,
            UnseenChange::Changed => self.changed += 1,
            UnseenChange::Deleted => self.deleted += 1,
        }
    }

    pub fn total(&self) -> u64 {
        self.created + self.changed + self.deleted
    }
}

/// What the relist after one gap showed had changed inside it, per resource (checkpoint
/// format 7 and later; gaps of older checkpoints have none).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GapChanges {
    /// The gap, as in [`Replica::gaps`].
    pub from: Revision,
    pub to: Revision,
    /// (resource id, counts), in the order first met.
    pub by_resource: Vec<(u32, UnseenCounts)>,
}

impl GapChanges {
    pub fn total(&self) -> UnseenCounts {
        let mut t = UnseenCounts::default();
        for (_, c) in &self.by_resource {
            t.created += c.created;
            t.changed += c.changed;
            t.deleted += c.deleted;
        }
        t
    }
}

/// etcd replaced under regscope: a new cluster id, or a revision that went back (a new data
/// dir on the same endpoint, or a restore from a snapshot). The replica was rebuilt from a
/// fresh list; this record outlives that rebuild (checkpoint format 7 and later).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replacement {
    /// When regscope found out (the reconnection).
    #[serde(with = "crate::model::humantime_serde_compat")]
    pub at: SystemTime,
    /// The endpoint read when it happened.
    pub endpoint: String,
    /// etcd's cluster id before (as of the last list) and after (`ResponseHeader.cluster_id`;
    /// 0 when unknown); in JSON as hex text, as etcdctl and the console write it (a JSON
    /// number loses the low digits of a 64-bit id).
    #[serde(with = "hex_id")]
    pub cluster_id_before: u64,
    #[serde(with = "hex_id")]
    pub cluster_id_after: u64,
    /// The replica's revision before, and the fresh list's (`None` until it is done).
    pub revision_before: Revision,
    pub revision_after: Option<Revision>,
    /// The source's reason, one line.
    pub reason: String,
}

/// A 64-bit id as hex text for human-readable formats (JSON), as a number for binary ones
/// (checkpoints).
mod hex_id {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(id: &u64, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.serialize_str(&format!("{id:x}"))
        } else {
            s.serialize_u64(*id)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        if d.is_human_readable() {
            let t = String::deserialize(d)?;
            u64::from_str_radix(&t, 16).map_err(serde::de::Error::custom)
        } else {
            u64::deserialize(d)
        }
    }
}

impl Replacement {
    /// "etcd replaced: cluster id a → b, revision 50 → 3" (without the endpoint).
    pub fn short(&self) -> String {
        format!(
            "etcd replaced: {}, {}",
            self.ids("unknown"),
            self.revisions()
        )
    }

    /// "etcd at URL replaced: cluster id a → b, revision 50 → 3".
    pub fn describe(&self) -> String {
        format!(
            "etcd at {} replaced: {}, {}",
            self.endpoint,
            self.ids("unknown"),
            self.revisions()
        )
    }

    /// "cluster id a → b", "same cluster id b", with `unknown` for an id not known.
    pub fn ids(&self, unknown: &str) -> String {
        let id = |id: u64| match id {
            0 => unknown.to_string(),
            id => format!("{id:x}"),
        };
        if self.cluster_id_before == self.cluster_id_after && self.cluster_id_after != 0 {
            format!("same cluster id {}", id(self.cluster_id_after))
        } else {
            format!(
                "cluster id {} → {}",
                id(self.cluster_id_before),
                id(self.cluster_id_after)
            )
        }
    }

    /// "revision 50 → 3" ("→ (listing)" until the new etcd's list is done).
    pub fn revisions(&self) -> String {
        let after = self
            .revision_after
            .map_or("(listing)".to_string(), |r| r.to_string());
        format!("revision {} → {after}", self.revision_before)
    }
}

/// The connection to etcd as `snapshot --json` gives it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ConnectionSummary {
    /// `connecting`, `listing`, `watching`, `not_responding`, `reconnecting` or `failed`.
    pub state: &'static str,
    /// When the connection was lost, while it is (RFC 3339, UTC).
    #[serde(with = "crate::model::humantime_serde_compat::opt")]
    pub lost_since: Option<SystemTime>,
    /// The newest error while reconnecting or failed.
    pub error: Option<String>,
}

/// A gap as `snapshot --json` gives it: the revisions not seen one by one, and what the
/// relist that closed it showed had changed there.
#[derive(Clone, Debug, Serialize)]
pub struct GapSummary {
    #[serde(flatten)]
    pub gap: Gap,
    /// Keys created, changed and deleted in the gap; `None` for a gap of a checkpoint
    /// written before regscope counted them.
    pub changes: Option<UnseenCounts>,
    /// The same per resource, by name.
    pub by_resource: std::collections::BTreeMap<String, UnseenCounts>,
}

/// Why a query about the past cannot be answered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HistoryError {
    #[error("revision {requested} is compacted (etcd compacted up to {compacted})")]
    Compacted {
        requested: Revision,
        compacted: Revision,
    },
    #[error("revision {requested} is older than the history kept (budget dropped history up to {floor}); raise --history-budget")]
    Dropped {
        requested: Revision,
        floor: Revision,
    },
    #[error("revision {requested} is newer than the replica's revision {applied}")]
    Future {
        requested: Revision,
        applied: Revision,
    },
    #[error("revision {requested} is older than the replica's first list at {first}")]
    BeforeStart {
        requested: Revision,
        first: Revision,
    },
}

/// One disagreement found by [`Replica::diff`] (used by `regscope verify`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Difference {
    pub key: String,
    pub what: String,
}

/// The summary printed by `regscope snapshot --json`.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// The replica's applied revision (etcd's head as far as the replica has seen).
    pub revision: Revision,
    /// etcd's compacted revision when known.
    pub compact_revision: Option<Revision>,
    /// Live keys under the prefix.
    pub keys: u64,
    /// Value bytes of the newest version of every live key.
    pub bytes: u64,
    /// Superseded versions and tombstones held, and their charged bytes.
    pub history_versions: u64,
    pub history_bytes: u64,
    pub resources: Vec<ResourceSummary>,
    /// Who wrote what since the replica started: one row per (resource, managedFields
    /// writer), most events first (see [`super::writers`]).
    pub writers: Vec<WriterSummary>,
    /// Every gap with what changed in it (see [`GapSummary`]).
    pub gaps: Vec<GapSummary>,
    /// Each time etcd was replaced under regscope (new data dir, restore), oldest first.
    pub replacements: Vec<Replacement>,
    /// The connection to etcd at this moment (in a replay, at the moment sought).
    pub connection: ConnectionSummary,
    pub compactions: Vec<CompactionSeen>,
    /// etcd's head as its watch announced it, and the watch anomalies counted.
    pub watch: WatchHealth,
    /// etcd's latest Status answer (alarms included), when one came.
    pub etcd_status: Option<EtcdStatus>,
    /// Every member of the cluster with its own Status answer, as last polled (empty before
    /// the first poll).
    pub members: Vec<MemberStatus>,
    /// The session's notes, oldest first (the newest 200; see [`crate::store::Note`]).
    pub notes: Vec<NoteSummary>,
}

/// A note as `snapshot --json` gives it: when, its kind, and its line.
#[derive(Clone, Debug, Serialize)]
pub struct NoteSummary {
    /// When it happened (RFC 3339, UTC).
    #[serde(with = "crate::model::humantime_serde_compat")]
    pub at: SystemTime,
    /// The note's kind ([`crate::store::Note::kind`]), e.g. `resync`, `failover`.
    pub kind: &'static str,
    /// The note as the event log shows it.
    pub text: String,
}

/// What the replica holds in memory, in bytes: for the header, `snapshot --json` and the
/// benchmarks. Packing runs behind the apply, so these move for a while after the stream
/// stops; they are not part of what a replay must reproduce.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReplicaMemory {
    /// Keys held (live keys and keys held only for their history).
    pub keys: u64,
    /// Values held packed, their raw bytes and the bytes they take packed.
    pub packed_values: u64,
    pub packed_raw_bytes: u64,
    pub packed_bytes: u64,
    /// Keys written and not swept for packing yet, plus versions handed to the packing
    /// worker and not back yet: 0 when packing has caught up.
    pub packing_outstanding: u64,
    /// Bytes of the key table itself (slab, hash table, order), beyond keys and values.
    pub table_bytes: u64,
}
