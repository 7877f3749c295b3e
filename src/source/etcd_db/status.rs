//! What `etcdctl snapshot status` prints for a db file, computed the way it does
//! (etcd 3.4 `clientv3/snapshot/v3_snapshot.go`, 3.5 `etcdutl/snapshot/v3_snapshot.go`,
//! `Status`): one walk over every top-level bucket in name order and every entry in key
//! order, hashing bucket names, keys and values with CRC-32C (Castagnoli).

use crate::bbolt::{LeafElement, ReadAt};
use crate::model::Revision;

use super::{parse_revision_key, DbError, EtcdDb};

/// `etcdctl snapshot status -w json`'s fields, and the live keys etcd 3.6 counts instead.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SnapshotStatus {
    /// CRC-32C of every bucket name, key and value, in order (`hash`).
    pub hash: u32,
    /// The main revision of the `key` bucket's last entry (`revision`).
    pub revision: Revision,
    /// Entries in all top-level buckets: what etcdctl 3.4 and 3.5 print as `totalKey`.
    pub total_entries: u64,
    /// Keys alive at the head (a key's last version not a tombstone): what etcd 3.6's
    /// `etcdutl snapshot status` prints as `totalKey`.
    pub live_keys: u64,
    /// Bytes up to the high-water mark (`totalSize`, bbolt's `Tx.Size`).
    pub total_size: u64,
    /// etcd 3.6's storage version (`version`), when the file has one.
    pub version: Option<String>,
}

/// Walks the whole file once. `each_version` sees every entry of the `key` bucket (for
/// callers that gather more on the same walk): revision key and raw value.
pub fn analyze_status<R: ReadAt + ?Sized>(
    db: &EtcdDb<R>,
    mut each_version: impl FnMut(&[u8], &[u8]),
) -> Result<SnapshotStatus, DbError> {
    status_walk(db, true, |bucket, e| {
        if bucket == b"key" {
            each_version(&e.key, &e.value)
        }
    })
}

/// [`analyze_status`], handing `each_entry` every entry of every top-level bucket as the
/// walk reads it: the bucket's name and the entry (a nested bucket's entry too, with
/// [`crate::bbolt::page::BUCKET_LEAF_FLAG`] set; the walk does not enter it, as etcdctl's
/// does not). Entries of the `key` bucket are handed on only once their revision key and
/// `mvccpb.KeyValue` key have been read. Without `count_live_keys`,
/// [`SnapshotStatus::live_keys`] is left 0 for a caller that counts keys itself (the count
/// costs 16 bytes per key).
pub fn status_walk<R: ReadAt + ?Sized>(
    db: &EtcdDb<R>,
    count_live_keys: bool,
    mut each_entry: impl FnMut(&[u8], &LeafElement),
) -> Result<SnapshotStatus, DbError> {
    // CRC-32C with the CPU's own instruction where it has one (SSE 4.2, ARMv8), as Go's
    // hash/crc32 does for etcdctl: the walk's cost is mostly this hash.
    let mut h = 0u32;
    let mut st = SnapshotStatus {
        total_size: db.bolt().size(),
        version: db.meta().storage_version.clone(),
        ..Default::default()
    };
    // The live keys: a key's newest entry decides. Keys are remembered by their FNV-1a
    // 64-bit hash, 16 bytes per key (two of a million keys sharing one: odds about 1 in
    // 10^7).
    let mut live: std::collections::HashMap<u64, bool> = std::collections::HashMap::new();
    for (name, bucket) in db.buckets() {
        h = crc32c::crc32c_append(h, name);
        let is_key = name.as_ref() == b"key";
        let mut entries = db.bolt().entries(bucket);
        while let Some(e) = entries.next() {
            let e = e.map_err(|e| db.bolt_err(e))?;
            h = crc32c::crc32c_append(h, &e.key);
            // A nested bucket's value is nil in bbolt's ForEach: nothing is hashed for it.
            if e.flags & crate::bbolt::page::BUCKET_LEAF_FLAG == 0 {
                h = crc32c::crc32c_append(h, &e.value);
            }
            st.total_entries += 1;
            if is_key {
                let Some((main, _, tombstone)) = parse_revision_key(&e.key) else {
                    return Err(db.err(super::not_a_revision(&e.key, entries.page())));
                };
                st.revision = main;
                let key = super::decode_key_only(&e.value)
                    .map_err(|x| db.err(format!("revision {main}: {x}")))?;
                if count_live_keys {
                    live.insert(fnv(key), !tombstone);
                }
            }
            each_entry(name, &e);
        }
    }
    st.live_keys = live.values().filter(|&&l| l).count() as u64;
    st.hash = h;
    Ok(st)
}

fn fnv(b: &[u8]) -> u64 {
    crate::bbolt::fnv1a64(b)
}
