//! A db file as observations: the state at one revision as a list (what a replica listing
//! etcd at that revision would receive), so that the session, and everything after it,
//! reads a db file as it reads etcd.

use std::collections::HashMap;

use bytes::Bytes;

use crate::bbolt::ReadAt;
use crate::model::{CompactionSource, ConnState, KeyValue, Observation, Revision};

use super::{DbError, EtcdDb};

/// Keys per list page handed on (etcd's own list pages are 500–10,000 keys).
pub const PAGE_KEYS: usize = 1000;
/// Value bytes per list page at most (a page ends early when its values reach this).
pub const PAGE_BYTES: usize = 4 << 20;

impl<R: ReadAt + ?Sized> EtcdDb<R> {
    /// Checks that `rev` is a revision the file holds whole: from its finished compaction
    /// to its head. Errors name the compacted revision or the head.
    pub fn check_revision(&self, rev: Revision) -> Result<(), DbError> {
        let compacted = self.compacted();
        let head = self.head()?;
        if rev < compacted {
            return Err(self.err(format!(
                "revision {rev} is compacted: the file holds revisions {compacted} (its finished compaction) to {head}"
            )));
        }
        if rev > head {
            return Err(self.err(format!(
                "revision {rev} is after the file's head, {head} (it holds {compacted} to {head})"
            )));
        }
        Ok(())
    }
}

/// Hands `f` the observations that make a session hold the keys under `prefix` as they
/// were at revision `rev`: the source (`Server`, `Conn(File)`), the compaction, and a list at `rev`
/// (`ListBegin`, `ListCount`, pages of at most [`PAGE_KEYS`] keys, each ascending, `ListDone`).
///
/// Two walks over the `key` bucket up to `rev`: the first finds each key's newest version
/// at or before it (keys and revisions only), the second hands those versions on a page at
/// a time, so that memory holds the keys once and a page of values, never the file's
/// history. Errors: `rev` outside the file ([`EtcdDb::check_revision`]), or a damaged file.
pub fn state_at<R: ReadAt + ?Sized>(
    db: &EtcdDb<R>,
    rev: Revision,
    prefix: &[u8],
    mut f: impl FnMut(Observation),
) -> Result<(), DbError> {
    db.check_revision(rev)?;
    // Newest (main, sub) per key at `rev`; a key deleted by then is not in the map.
    let mut newest: HashMap<Bytes, (Revision, i64)> = HashMap::new();
    for v in db.key_versions(prefix) {
        let (key, main, sub, tombstone) = v?;
        if main > rev {
            break;
        }
        if tombstone {
            newest.remove(key.as_ref());
        } else {
            newest.insert(key, (main, sub));
        }
    }
    f(Observation::Server {
        endpoint: format!("file {}", db.path().display()),
        version: db
            .meta()
            .storage_version
            .clone()
            .or_else(|| db.meta().cluster_version.clone())
            .unwrap_or_default(),
        cluster_id: 0,
    });
    f(Observation::Conn(ConnState::File));
    let compacted = db.compacted();
    if compacted > 0 {
        f(Observation::Compacted {
            revision: compacted,
            source: CompactionSource::DbFile,
        });
    }
    f(Observation::ListBegin { revision: rev });
    f(Observation::ListCount {
        keys: newest.len() as u64,
    });
    let mut page: Vec<KeyValue> = Vec::new();
    let mut bytes = 0usize;
    let flush = |page: &mut Vec<KeyValue>, f: &mut dyn FnMut(Observation)| {
        page.sort_by(|a, b| a.key.cmp(&b.key));
        f(Observation::ListPage {
            kvs: std::mem::take(page),
        });
    };
    for v in db.versions_from(0) {
        if newest.is_empty() {
            break;
        }
        let v = v?;
        if v.main > rev {
            break;
        }
        if v.tombstone || newest.get(v.kv.key.as_ref()) != Some(&(v.main, v.sub)) {
            continue;
        }
        newest.remove(v.kv.key.as_ref());
        bytes += v.kv.value.len();
        page.push(v.kv);
        if page.len() >= PAGE_KEYS || bytes >= PAGE_BYTES {
            flush(&mut page, &mut f);
            bytes = 0;
        }
    }
    if !page.is_empty() {
        flush(&mut page, &mut f);
    }
    f(Observation::ListDone {
        revision: rev,
        compacted: None,
    });
    Ok(())
}

impl<R: ReadAt + ?Sized> EtcdDb<R> {
    /// Every version's key (copied), revision and tombstone flag, for keys under `prefix`,
    /// in revision order, without copying values.
    pub fn key_versions<'a>(
        &'a self,
        prefix: &'a [u8],
    ) -> impl Iterator<Item = Result<(Bytes, Revision, i64, bool), DbError>> + 'a {
        let mut entries = self.bolt().entries(&self.key);
        std::iter::from_fn(move || loop {
            let e = match entries.next()? {
                Ok(e) => e,
                Err(e) => return Some(Err(self.bolt_err(e))),
            };
            let Some((main, sub, tombstone)) = super::parse_revision_key(&e.key) else {
                return Some(Err(self.err(super::not_a_revision(&e.key, entries.page()))));
            };
            let key = match super::decode_key_only(&e.value) {
                Ok(k) => k,
                Err(x) => return Some(Err(self.err(format!("revision {main}.{sub}: {x}")))),
            };
            if key.starts_with(prefix) {
                return Some(Ok((Bytes::copy_from_slice(key), main, sub, tombstone)));
            }
        })
    }
}
