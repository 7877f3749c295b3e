//! etcd's backend file as a source: what `etcdctl snapshot save` writes and a member keeps
//! in `member/snap/db`, read through [`crate::bbolt`] without writing and without a lock.
//!
//! The schema, from etcd's sources (`server/storage/schema/bucket.go` in 3.5–3.6,
//! `mvcc/kvstore.go`, `mvcc/revision.go` and `lease/leasepb/lease.proto` in 3.4):
//! - bucket `key`: one entry per version of a key, keyed by its revision as 17 bytes
//!   (`main` as a big-endian u64, `_`, `sub` as a big-endian u64), with an 18th byte `t`
//!   when the version is a deletion (a tombstone); the value is the `mvccpb.KeyValue`
//!   (for a tombstone, only its key). Compaction removes every version older than the
//!   compacted revision except each live key's newest, and tombstones at or below it.
//! - bucket `meta`: `consistent_index` and `term` (big-endian u64), `scheduledCompactRev` and
//!   `finishedCompactRev` (17-byte revisions), `storageVersion` (3.6), `confState` (JSON).
//! - bucket `lease`: one `leasepb.Lease {ID=1, TTL=2, RemainingTTL=3}` per lease, keyed by
//!   its id as a big-endian u64.
//! - bucket `members`: each member's JSON (`{"id","peerURLs","name","clientURLs","isLearner"}`)
//!   keyed by its id in hex; `members_removed`; `cluster` (`clusterVersion`); `alarm` (one
//!   `etcdserverpb.AlarmMember {MemberID=1, Alarm=2}` per key); `auth` (`authEnabled`,
//!   `authRevision`), `authUsers`, `authRoles`.

pub mod analysis;
pub mod observations;
pub mod open_by;
pub mod status;

use std::fs::File;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use crate::bbolt::{BoltError, Bucket, Db, ReadAt};
use crate::decode::protobuf_wire::{Reader, WireValue};
use crate::model::{KeyValue, Revision};

pub use observations::state_at;
pub use status::{analyze_status, SnapshotStatus};

/// The first bytes of a bbolt file (page 0's header is 16 bytes, then the meta's magic):
/// enough to tell a db file from a recording or a JSON dump by content.
pub fn looks_like_bbolt(head: &[u8]) -> bool {
    head.len() >= 20
        && head.get(8..10) == Some(&[0x04, 0x00][..])
        && head.get(16..20) == Some(&crate::bbolt::MAGIC.to_le_bytes()[..])
}

/// What goes wrong opening or reading a db file.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The bbolt layer: unreadable, cut short, corrupt, not bbolt. The bbolt error is in
    /// the message and not also its `source()`, so that a caller printing the chain
    /// (`anyhow`'s `{:#}`) says it once.
    #[error("{path}: {error}")]
    Bolt { path: String, error: BoltError },
    /// A bbolt file, but not etcd's backend.
    #[error(
        "{path}: a bbolt file, but not etcd's backend: it has no `key` bucket (buckets: {buckets})"
    )]
    NotEtcd { path: String, buckets: String },
    /// An entry of etcd's schema does not parse.
    #[error("{path}: {what}")]
    Schema { path: String, what: String },
}

impl DbError {
    /// What is wrong, without the path the error's `Display` starts with: for a line that
    /// names the file already.
    pub fn detail(&self) -> String {
        let (DbError::Bolt { path, .. }
        | DbError::NotEtcd { path, .. }
        | DbError::Schema { path, .. }) = self;
        let all = self.to_string();
        match all
            .strip_prefix(path.as_str())
            .and_then(|r| r.strip_prefix(": "))
        {
            Some(rest) => rest.to_string(),
            None => all,
        }
    }

    /// The file could not be read at all (it is not there, not a file, not permitted): no
    /// page of it was judged. Every other error is about what its pages hold.
    pub fn is_unreadable(&self) -> bool {
        matches!(
            self,
            DbError::Bolt {
                error: BoltError::Io(_),
                ..
            }
        )
    }
}

/// One version of a key as the `key` bucket holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    /// The revision of the write (`main`) and its place in that transaction (`sub`).
    pub main: Revision,
    pub sub: i64,
    /// A deletion (the revision key's trailing `t`).
    pub tombstone: bool,
    /// The key and value as etcd stored them (for a tombstone only the key is set; its
    /// `mod_revision` is set here to `main`, as a watch reports a delete).
    pub kv: KeyValue,
    /// Bytes of the stored entry (revision key and protobuf value): what it costs the file.
    pub stored_bytes: usize,
}

/// The `meta` bucket, each value when present.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EtcdMeta {
    pub consistent_index: Option<u64>,
    pub term: Option<u64>,
    /// A compaction asked for (it is recorded before it runs).
    pub scheduled_compact_revision: Option<Revision>,
    /// The last compaction that finished: revisions below it are gone (each live key keeps
    /// its newest version at or below it).
    pub finished_compact_revision: Option<Revision>,
    /// etcd 3.6's `storageVersion`.
    pub storage_version: Option<String>,
    /// The `cluster` bucket's `clusterVersion`.
    pub cluster_version: Option<String>,
}

/// A lease as the `lease` bucket holds it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StoredLease {
    pub id: i64,
    /// Granted time to live, seconds.
    pub ttl: i64,
    /// Seconds left when etcd last checkpointed it (`leasepb.Lease.RemainingTTL`, written
    /// only with lease checkpointing on, etcd 3.4+ `--experimental-enable-lease-checkpoint`);
    /// `None` when the file does not say (not "expired").
    pub remaining_ttl: Option<i64>,
}

/// A member as the `members` bucket holds it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StoredMember {
    #[serde(default)]
    pub id: u64,
    #[serde(default)]
    pub name: String,
    #[serde(rename = "peerURLs", default)]
    pub peer_urls: Vec<String>,
    #[serde(rename = "clientURLs", default)]
    pub client_urls: Vec<String>,
    #[serde(rename = "isLearner", default)]
    pub is_learner: bool,
}

/// etcd's backend file, open for reading.
pub struct EtcdDb<R: ReadAt + ?Sized = File> {
    db: Db<R>,
    path: PathBuf,
    buckets: Vec<(Bytes, Bucket)>,
    key: Bucket,
    meta: EtcdMeta,
}

/// The 17-byte revision key of `(main, sub)` (etcd's `revToBytes`).
pub fn revision_key(main: Revision, sub: i64) -> [u8; 17] {
    let mut k = [0u8; 17];
    k[..8].copy_from_slice(&(main as u64).to_be_bytes());
    k[8] = b'_';
    k[9..].copy_from_slice(&(sub as u64).to_be_bytes());
    k
}

/// The error for an entry of the `key` bucket whose key is no revision key: what a
/// damaged leaf page gives. Names the page when known, the key's length and its first
/// bytes escaped (never the whole key: on a damaged page it runs into the value).
pub fn not_a_revision(key: &[u8], page: Option<u64>) -> String {
    const SHOWN: usize = 24;
    let head = crate::model::escape_bytes(&key[..key.len().min(SHOWN)]).into_owned();
    let more = if key.len() > SHOWN { "…" } else { "" };
    let on = page.map_or(String::new(), |p| format!("page {p}: "));
    format!(
        "{on}a key of the `key` bucket is no revision ({} bytes: {head}{more}): the page is damaged",
        key.len()
    )
}

/// `(main, sub, tombstone)` of a revision key, or `None` when it is not one.
pub fn parse_revision_key(k: &[u8]) -> Option<(Revision, i64, bool)> {
    let tombstone = match k.len() {
        17 => false,
        18 if k[17] == b't' => true,
        _ => return None,
    };
    if k[8] != b'_' {
        return None;
    }
    let main = u64::from_be_bytes(k[..8].try_into().ok()?);
    let sub = u64::from_be_bytes(k[9..17].try_into().ok()?);
    Some((
        i64::try_from(main).ok()?,
        i64::try_from(sub).ok()?,
        tombstone,
    ))
}

/// An `mvccpb.KeyValue` (1 key, 2 create_revision, 3 mod_revision, 4 version, 5 value,
/// 6 lease; etcd's `api/mvccpb/kv.proto`), the value copied out of the page it sits on.
pub fn decode_key_value(b: &[u8]) -> Result<KeyValue, String> {
    let mut kv = KeyValue {
        key: Bytes::new(),
        create_revision: 0,
        mod_revision: 0,
        version: 0,
        lease: 0,
        value: Bytes::new(),
    };
    for f in Reader::new(b, 0) {
        let f = f.map_err(|e| format!("not an mvccpb.KeyValue: {e}"))?;
        match (f.number, f.value) {
            (1, WireValue::Len(x)) => kv.key = Bytes::copy_from_slice(x),
            (2, WireValue::Varint(x)) => kv.create_revision = x as i64,
            (3, WireValue::Varint(x)) => kv.mod_revision = x as i64,
            (4, WireValue::Varint(x)) => kv.version = x as i64,
            (5, WireValue::Len(x)) => kv.value = crate::model::shareable(x.to_vec()),
            (6, WireValue::Varint(x)) => kv.lease = x as i64,
            _ => {}
        }
    }
    Ok(kv)
}

/// The key (field 1) of an `mvccpb.KeyValue`, without copying anything.
pub fn decode_key_only(b: &[u8]) -> Result<&[u8], String> {
    for f in Reader::new(b, 0) {
        let f = f.map_err(|e| format!("not an mvccpb.KeyValue: {e}"))?;
        if let (1, WireValue::Len(x)) = (f.number, f.value) {
            return Ok(x);
        }
    }
    Ok(&[])
}

impl EtcdDb<File> {
    /// Opens etcd's backend at `path`: a bbolt file with a `key` bucket. Reads the meta
    /// bucket; keys are read when asked for.
    pub fn open(path: &Path) -> Result<EtcdDb<File>, DbError> {
        let db = Db::open(path).map_err(|error| DbError::Bolt {
            path: path.display().to_string(),
            error,
        })?;
        EtcdDb::from_db(db, path)
    }
}

impl<R: ReadAt + ?Sized> EtcdDb<R> {
    /// etcd's schema over an open bbolt file (`path` names it in errors).
    pub fn from_db(db: Db<R>, path: &Path) -> Result<EtcdDb<R>, DbError> {
        let p = path.display().to_string();
        let bolt = |error| DbError::Bolt {
            path: p.clone(),
            error,
        };
        let buckets = db.buckets().map_err(bolt)?;
        // A bucket of the root whose tree starts past the high-water mark is a damaged
        // root page (its element points elsewhere, so its name is garbage too): said
        // here, or a command reading only some buckets would find `alarm` or `lease`
        // missing and answer "none".
        let high_water = db.meta().pgid;
        if let Some((_, b)) = buckets
            .iter()
            .find(|(_, b)| b.inline.is_none() && b.root >= high_water)
        {
            return Err(bolt(crate::bbolt::page::corrupt(
                b.root,
                &format!("a bucket of the root starts beyond the high-water mark of {high_water} pages: the root page is damaged"),
            )));
        }
        let Some(key) = buckets
            .iter()
            .find(|(n, _)| n.as_ref() == b"key")
            .map(|(_, b)| b.clone())
        else {
            let names: Vec<String> = buckets
                .iter()
                .map(|(n, _)| String::from_utf8_lossy(n).into_owned())
                .collect();
            // etcd creates `key` and `meta` together in one transaction when it opens its
            // store (etcd 3.4 `mvcc/kvstore.go` `NewStore`): `meta` without `key` is etcd's
            // file with its root bucket's page damaged, not another program's.
            if buckets.iter().any(|(n, _)| n.as_ref() == b"meta") {
                return Err(DbError::Schema {
                    path: p,
                    what: format!(
                        "damaged: etcd's `meta` bucket is there but its `key` bucket is not (buckets: {})",
                        names.join(", ")
                    ),
                });
            }
            return Err(DbError::NotEtcd {
                path: p,
                buckets: if names.is_empty() {
                    "none".into()
                } else {
                    names.join(", ")
                },
            });
        };
        let mut out = EtcdDb {
            db,
            path: path.to_path_buf(),
            buckets,
            key,
            meta: EtcdMeta::default(),
        };
        out.meta = out.read_meta()?;
        Ok(out)
    }

    /// The file as named.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The bbolt file under it.
    pub fn bolt(&self) -> &Db<R> {
        &self.db
    }

    /// The top-level buckets by name.
    pub fn buckets(&self) -> &[(Bytes, Bucket)] {
        &self.buckets
    }

    /// The meta bucket as read when opened.
    pub fn meta(&self) -> &EtcdMeta {
        &self.meta
    }

    pub(crate) fn err(&self, what: String) -> DbError {
        DbError::Schema {
            path: self.path.display().to_string(),
            what,
        }
    }

    /// `error` as this file's error.
    pub fn bolt_err(&self, error: BoltError) -> DbError {
        DbError::Bolt {
            path: self.path.display().to_string(),
            error,
        }
    }

    fn bucket(&self, name: &[u8]) -> Option<&Bucket> {
        self.buckets
            .iter()
            .find(|(n, _)| n.as_ref() == name)
            .map(|(_, b)| b)
    }

    fn read_meta(&self) -> Result<EtcdMeta, DbError> {
        let mut m = EtcdMeta::default();
        if let Some(b) = self.bucket(b"meta") {
            for e in self.db.entries(b) {
                let e = e.map_err(|e| self.bolt_err(e))?;
                let v = &e.value[..];
                let be = || {
                    v.get(..8)
                        .and_then(|b| b.try_into().ok())
                        .map(u64::from_be_bytes)
                };
                let rev = || parse_revision_key(v).map(|(main, _, _)| main);
                match &e.key[..] {
                    b"consistent_index" => m.consistent_index = be(),
                    b"term" => m.term = be(),
                    b"scheduledCompactRev" => m.scheduled_compact_revision = rev(),
                    b"finishedCompactRev" => m.finished_compact_revision = rev(),
                    b"storageVersion" => {
                        m.storage_version = Some(String::from_utf8_lossy(v).into_owned())
                    }
                    _ => {}
                }
            }
        }
        if let Some(b) = self.bucket(b"cluster") {
            if let Ok(Some(v)) = self.db.get(b, b"clusterVersion") {
                m.cluster_version = Some(String::from_utf8_lossy(&v).into_owned());
            }
        }
        Ok(m)
    }

    /// Every version in the `key` bucket from revision `from` on, in revision order.
    pub fn versions_from(&self, from: Revision) -> VersionIter<'_, R> {
        let start = revision_key(from.max(0), 0);
        VersionIter {
            db: self,
            inner: self.db.entries_from(&self.key, &start),
        }
    }

    /// etcd's revision when the file was written: the newest in the `key` bucket, or the
    /// finished compaction when that is newer (writes since deleted and compacted leave no
    /// entry; etcd's `store.restore` in `mvcc/kvstore.go` takes the larger of the two), 0
    /// for a new store.
    pub fn head(&self) -> Result<Revision, DbError> {
        Ok(self.last_key_revision()?.max(self.compacted()))
    }

    /// The main revision of the `key` bucket's last entry (what `etcdctl snapshot status`
    /// prints as `revision`), 0 when the bucket is empty.
    pub fn last_key_revision(&self) -> Result<Revision, DbError> {
        let last = self
            .db
            .last_entry(&self.key)
            .map_err(|e| self.bolt_err(e))?;
        match last {
            Some(e) => parse_revision_key(&e.key)
                .map(|(main, _, _)| main)
                .ok_or_else(|| self.err(not_a_revision(&e.key, None))),
            None => Ok(0),
        }
    }

    /// The revision below which history is not whole: the finished compaction, or a
    /// scheduled one that never finished when that is newer (a member stopped while it
    /// compacted has deleted part of the revisions below it; etcd finishes that compaction
    /// when it starts again, `mvcc/kvstore.go` `restore`). 0 for a store never compacted.
    pub fn compacted(&self) -> Revision {
        let finished = self.meta.finished_compact_revision.unwrap_or(0);
        finished.max(self.interrupted_compaction().unwrap_or(0))
    }

    /// A compaction recorded as scheduled and never finished (`scheduledCompactRev` ahead of
    /// `finishedCompactRev`): its revision.
    pub fn interrupted_compaction(&self) -> Option<Revision> {
        let finished = self.meta.finished_compact_revision.unwrap_or(0);
        self.meta
            .scheduled_compact_revision
            .filter(|&s| s > finished)
    }

    /// The leases, in id order.
    pub fn leases(&self) -> Result<Vec<StoredLease>, DbError> {
        let Some(b) = self.bucket(b"lease") else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for e in self.db.entries(b) {
            let e = e.map_err(|e| self.bolt_err(e))?;
            let mut l = StoredLease {
                id: 0,
                ttl: 0,
                remaining_ttl: None,
            };
            for f in Reader::new(&e.value, 0) {
                let f = f.map_err(|x| self.err(format!("a lease is not a leasepb.Lease: {x}")))?;
                match (f.number, f.value) {
                    (1, WireValue::Varint(x)) => l.id = x as i64,
                    (2, WireValue::Varint(x)) => l.ttl = x as i64,
                    (3, WireValue::Varint(x)) => l.remaining_ttl = Some(x as i64),
                    _ => {}
                }
            }
            out.push(l);
        }
        Ok(out)
    }

    /// The members the file knows (JSON values of the `members` bucket), with their id.
    pub fn members(&self) -> Result<Vec<StoredMember>, DbError> {
        let Some(b) = self.bucket(b"members") else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for e in self.db.entries(b) {
            let e = e.map_err(|e| self.bolt_err(e))?;
            let mut m: StoredMember = serde_json::from_slice(&e.value)
                .map_err(|x| self.err(format!("a member is not JSON: {x}")))?;
            if m.id == 0 {
                m.id = u64::from_str_radix(&String::from_utf8_lossy(&e.key), 16).unwrap_or(0);
            }
            out.push(m);
        }
        Ok(out)
    }

    /// The alarms raised (`alarm` bucket): member id and alarm name (`NOSPACE`, `CORRUPT`).
    pub fn alarms(&self) -> Result<Vec<(u64, String)>, DbError> {
        let Some(b) = self.bucket(b"alarm") else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for e in self.db.entries(b) {
            let e = e.map_err(|e| self.bolt_err(e))?;
            let (mut member, mut alarm) = (0u64, 0u64);
            for f in Reader::new(&e.key, 0).flatten() {
                match (f.number, f.value) {
                    (1, WireValue::Varint(x)) => member = x,
                    (2, WireValue::Varint(x)) => alarm = x,
                    _ => {}
                }
            }
            // etcdserverpb.AlarmType: NONE 0, NOSPACE 1, CORRUPT 2.
            let name = match alarm {
                0 => "NONE".to_string(),
                1 => "NOSPACE".to_string(),
                2 => "CORRUPT".to_string(),
                n => format!("alarm {n}"),
            };
            out.push((member, name));
        }
        Ok(out)
    }

    /// Whether authentication is on (`auth` bucket's `authEnabled` is byte 1).
    pub fn auth_enabled(&self) -> bool {
        self.bucket(b"auth")
            .and_then(|b| self.db.get(b, b"authEnabled").ok().flatten())
            .is_some_and(|v| v.as_ref() == [1])
    }
}

/// The versions of the `key` bucket in revision order (see [`EtcdDb::versions_from`]).
pub struct VersionIter<'a, R: ReadAt + ?Sized> {
    db: &'a EtcdDb<R>,
    inner: crate::bbolt::Entries<'a, R>,
}

impl<R: ReadAt + ?Sized> VersionIter<'_, R> {
    /// Pages read so far.
    pub fn stats(&self) -> crate::bbolt::cursor::TreeStats {
        self.inner.stats()
    }
}

impl<R: ReadAt + ?Sized> Iterator for VersionIter<'_, R> {
    type Item = Result<Version, DbError>;

    fn next(&mut self) -> Option<Self::Item> {
        let e = match self.inner.next()? {
            Ok(e) => e,
            Err(e) => return Some(Err(self.db.bolt_err(e))),
        };
        let Some((main, sub, tombstone)) = parse_revision_key(&e.key) else {
            return Some(Err(self.db.err(not_a_revision(&e.key, self.inner.page()))));
        };
        let mut kv = match decode_key_value(&e.value) {
            Ok(kv) => kv,
            Err(x) => return Some(Err(self.db.err(format!("revision {main}.{sub}: {x}")))),
        };
        if tombstone {
            kv.mod_revision = main;
        }
        Some(Ok(Version {
            main,
            sub,
            tombstone,
            kv,
            stored_bytes: e.key.len() + e.value.len(),
        }))
    }
}

#[cfg(test)]
mod tests;
