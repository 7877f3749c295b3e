//! etcd's compacted revision, asked without making etcd read its history: what `analyze`
//! of a live etcd needs to tell which versions etcd still keeps.
//!
//! etcd has no call that returns its compacted revision (Status does not carry it), and
//! the apiserver's `compact_rev_key` names only the compactions the apiserver made. Two
//! requests on one key answer it exactly, each costing etcd an index lookup:
//! 1. a Range at revision 1: etcd refuses a revision below its compaction with
//!    `ErrCompacted` before it looks anything up (etcd 3.4 `mvcc/kvstore_txn.go`, 3.5
//!    `server/mvcc/kvstore_txn.go`, `rangeKeys`); answered, nothing was ever compacted;
//! 2. refused, a watch from revision 1: an unsynced watcher whose start is below the
//!    compaction is cancelled with `compact_revision` set, and is dropped before etcd
//!    reads any history for it (`chooseAll` in `watchable_store.go`, 3.4 and 3.5).
//!
//! The order matters: a watch from revision 1 on an etcd that was never compacted would
//! make it read every revision it holds in one range (`syncWatchers` reads the whole
//! revision span of its unsynced watchers at once, whatever their keys), a burst this
//! guest must not cause.

use std::time::Duration;

use etcd_client::{Client, GetOptions, WatchOptions};

use crate::model::kubernetes::COMPACT_REV_KEY;
use crate::model::Revision;

/// Watch responses read before giving up on the cancellation (the first is the
/// creation, the second the cancellation; a few more cover a stray progress response).
const MAX_RESPONSES: usize = 8;

/// etcd's compacted revision: `Ok(None)` when revision 1 is still readable (never
/// compacted), `Ok(Some(rev))` when etcd refused revision 1 and its watch said where it
/// compacted. Errors: one line (timeout within `timeout` per request, a refusal, or an
/// etcd that refused revision 1 without saying its compaction on the watch).
pub async fn compacted_revision(
    client: &Client,
    timeout: Duration,
) -> Result<Option<Revision>, String> {
    let mut kv = client.kv_client();
    let probe = COMPACT_REV_KEY.to_vec();
    let read = kv.get(
        probe.clone(),
        Some(GetOptions::new().with_revision(1).with_count_only()),
    );
    match tokio::time::timeout(timeout, read).await {
        Err(_) => return Err(format!("reading revision 1: no answer in {timeout:?}")),
        Ok(Ok(_)) => return Ok(None),
        // etcd's text: "etcdserver: mvcc: required revision has been compacted".
        Ok(Err(e)) if e.to_string().contains("compacted") => {}
        Ok(Err(e)) => {
            return Err(format!(
                "reading revision 1: {}",
                super::connect::short_detail(&e)
            ))
        }
    }
    let mut wc = client.watch_client();
    let opts = WatchOptions::new().with_start_revision(1);
    let mut stream = match tokio::time::timeout(timeout, wc.watch(probe, Some(opts))).await {
        Err(_) => {
            return Err(format!(
                "watching from revision 1: no answer in {timeout:?}"
            ))
        }
        Ok(Err(e)) => {
            return Err(format!(
                "watching from revision 1: {}",
                super::connect::short_detail(&e)
            ))
        }
        Ok(Ok(s)) => s,
    };
    for _ in 0..MAX_RESPONSES {
        match tokio::time::timeout(timeout, stream.message()).await {
            Err(_) => break,
            Ok(Ok(Some(resp))) if resp.compact_revision() > 0 => {
                return Ok(Some(resp.compact_revision()))
            }
            Ok(Ok(Some(resp))) if resp.canceled() => {
                return Err(format!(
                    "the watch from revision 1 was cancelled without a compacted revision: {}",
                    resp.cancel_reason()
                ))
            }
            Ok(Ok(Some(_))) => {}
            Ok(Ok(None)) => break,
            Ok(Err(e)) => {
                return Err(format!(
                    "watching from revision 1: {}",
                    super::connect::short_detail(&e)
                ))
            }
        }
    }
    Err("etcd refused revision 1 as compacted but its watch did not say where".into())
}
