//! The list half of list+watch: the prefix read at one pinned revision as many ranges at
//! once, each paged by bytes.
//!
//! Why not one paged range: etcd answers a range request with a `limit` by also counting
//! every key of the range past the page (`count` in the response). etcd 3.4 collects the
//! revision of every key from the page to the range end in its in-memory index before
//! cutting the page (mvcc `rangeKeys` → `treeIndex.Revisions`), and 3.5 still walks them
//! to count (the same call with a limit). Paging a million keys 10,000 at a time thus
//! costs etcd about fifty million index visits, and one stream of requests leaves its
//! other cores idle.
//!
//! So the key space under the prefix is cut into [`Piece`]s, each listed as its own range
//! at the same revision (`RangeRequest.revision`, which etcd serves from its MVCC history
//! until it is compacted). A piece whose first page says that more than a few pages remain
//! is cut again along the keys it returned ([`Piece::rest_after`]), so that no page counts
//! more than a few pages' worth of keys, whatever the layout of the keys: built-in
//! resources, custom resources, namespaces with any names. Up to
//! [`SyncOptions::list_concurrency`] ranges are in flight at once. Pages are sized by bytes
//! from the average key + value size seen so far; a page over the gRPC decoding limit is
//! retried with half the keys.
//!
//! Every key is still read exactly once and at the one revision, so the replica equals
//! etcd's state there; only the order of pages differs from a single range (each page is
//! still in key order).

use std::collections::VecDeque;

use etcd_client::{GetOptions, KvClient};
use tokio::task::JoinSet;

use super::connect::error_chain;
use super::sync::{take_kv, Emitter, ListError, SyncOptions};
use crate::model::{prefix_end, ConnState, KeyValue, Observation, Revision};

/// A set of keys: those that start with `base` and whose next byte (at `base.len()`) is in
/// `lo..=hi`. Every range that [`Piece::range`] gives is of this form, and so is the range
/// of a prefix (`[p, prefix_end(p))` is `base = p[..n-1]`, `lo = hi = p[n-1]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    pub base: Vec<u8>,
    pub lo: u8,
    pub hi: u8,
}

/// Bytes that get a piece of their own when a piece is cut at one byte position: those of
/// Kubernetes names (RFC 1123 labels and subdomains: `a-z`, `0-9`, `-`, `.`). Runs of other
/// bytes share a piece.
fn own_piece(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.'
}

impl Piece {
    /// The piece of every key that starts with `prefix` (not empty).
    pub fn of_prefix(prefix: &[u8]) -> Piece {
        let (last, base) = prefix.split_last().expect("prefix is not empty");
        Piece {
            base: base.to_vec(),
            lo: *last,
            hi: *last,
        }
    }

    /// The etcd range `[key, range_end)` of the piece. `range_end` is `"\0"` ("every key
    /// from `key` on", etcd's convention) when the piece runs to the end of the key space.
    pub fn range(&self) -> (Vec<u8>, Vec<u8>) {
        let mut start = self.base.clone();
        start.push(self.lo);
        let end = if self.hi < 0xff {
            let mut e = self.base.clone();
            e.push(self.hi + 1);
            e
        } else {
            prefix_end(&self.base)
        };
        (start, end)
    }

    /// Whether `key` belongs to the piece.
    pub fn contains(&self, key: &[u8]) -> bool {
        key.len() > self.base.len()
            && key.starts_with(&self.base)
            && (self.lo..=self.hi).contains(&key[self.base.len()])
    }

    /// The keys of this piece that sort after `last` (a key of the piece), as disjoint
    /// pieces in key order: keys that extend `last`; then, from the deepest byte of `last`
    /// up, keys that share `last` up to that byte and have a greater one there; then the
    /// rest of this piece's byte range. The two shallowest of these, where the rest of a
    /// big piece usually is, are cut once more, one piece per byte of a Kubernetes name
    /// ([`own_piece`]), so that a big prefix falls apart into its resources, namespaces or
    /// names; deeper ones are cut when their own first page shows them big.
    pub fn rest_after(&self, last: &[u8]) -> Vec<Piece> {
        debug_assert!(self.contains(last));
        let depth = self.base.len();
        let mut out = vec![Piece {
            base: last.to_vec(),
            lo: 0,
            hi: 0xff,
        }];
        for d in (depth + 1..last.len()).rev() {
            if last[d] < 0xff {
                let piece = Piece {
                    base: last[..d].to_vec(),
                    lo: last[d] + 1,
                    hi: 0xff,
                };
                if d == depth + 1 {
                    piece.cut_per_byte(&mut out);
                } else {
                    out.push(piece);
                }
            }
        }
        let c = last[depth];
        if c < self.hi {
            Piece {
                base: self.base.clone(),
                lo: c + 1,
                hi: self.hi,
            }
            .cut_per_byte(&mut out);
        }
        out
    }

    /// Appends this piece cut at its byte position: one piece per byte of a Kubernetes
    /// name, runs of other bytes together.
    fn cut_per_byte(&self, out: &mut Vec<Piece>) {
        let mut lo = self.lo;
        loop {
            let mut hi = lo;
            if !own_piece(lo) {
                while hi < self.hi && !own_piece(hi + 1) {
                    hi += 1;
                }
            }
            out.push(Piece {
                base: self.base.clone(),
                lo,
                hi,
            });
            if hi >= self.hi {
                break;
            }
            lo = hi + 1;
        }
    }
}

/// Observations that may wait in the consumer's channel before the list sends another page
/// (about half are pages: with 4 MiB pages, some 32 MiB queued at most).
const QUEUED_MAX: usize = 16;

/// A piece being listed: where its next page starts and how many keys a page may hold.
struct Active {
    piece: Piece,
    from: Vec<u8>,
    end: Vec<u8>,
    /// Pages of more keys than this exceeded the gRPC decoding limit (`i64::MAX`: never).
    too_large_at: i64,
    /// Requests of this range that timed out, and the smallest page that did
    /// (`i64::MAX`: none).
    timeouts: u32,
    timed_out_at: i64,
    /// Keys of the page being asked for.
    limit: i64,
}

/// Times a range request that timed out is asked again, each time for half the keys,
/// before the list fails: etcd busy (a compaction, a defrag, a cold page cache) answers
/// a smaller page sooner.
const TIMEOUT_RETRIES: u32 = 2;

/// What one range request brought back.
struct Page {
    header_revision: Revision,
    more: bool,
    /// etcd's `count`: keys in `[from, end)` at the revision, this page's included.
    count: i64,
    kvs: Vec<KeyValue>,
}

/// One request in flight, tagged with the list attempt it belongs to.
type Reply = (u64, Active, Result<Page, ListError>);

/// Lists `opts.range_key()` at revision `at` (0: etcd's current one) and emits
/// `ListBegin`, `ListCount`, then `ListPage`s with `Conn(Listing)` progress. Returns the
/// list revision. It does not emit `ListDone`: the caller adds what belongs to the list
/// (the compaction marker) first.
///
/// Errors: [`ListError::Closed`] when the consumer went away; [`ListError::Timeout`] when
/// a range still gets no answer within `opts.request_timeout` after [`TIMEOUT_RETRIES`]
/// requests of half its page (each said in a `Note`); [`ListError::TooLarge`] when one key
/// exceeds a 1 GiB message; [`ListError::Etcd`] for anything else etcd answers. When the
/// pinned revision is compacted mid-list (with `at == 0`), the list starts over at etcd's
/// new revision with a fresh `ListBegin`.
pub(super) async fn list_pinned(
    kv: &KvClient,
    opts: &SyncOptions,
    out: &Emitter,
    at: Revision,
) -> Result<Revision, ListError> {
    let top = Piece::of_prefix(&opts.range_key());
    let mut decode_limit = opts.max_decode_bytes;
    let mut kv = kv.clone().max_decoding_message_size(decode_limit);
    let concurrency = opts.list_concurrency.max(1);
    let mut attempt: u64 = 0;
    'attempt: loop {
        attempt += 1;
        let mut rev = at;
        let mut begun = false;
        let mut listed: u64 = 0;
        let mut listed_bytes: u64 = 0;
        let mut queue: VecDeque<Active> = VecDeque::new();
        let mut inflight: JoinSet<Reply> = JoinSet::new();
        // The first page, before any size is known: at most what a page may ever hold.
        let first = opts.page_limit.clamp(1, opts.page_limit_max.max(1));
        queue.push_back(active(top.clone(), first));
        loop {
            // Until the first reply pins the revision, one request; then up to `concurrency`.
            let room = if begun { concurrency } else { 1 };
            while inflight.len() < room {
                let Some(mut a) = queue.pop_front() else {
                    break;
                };
                if begun {
                    a.limit = page_keys(opts, listed, listed_bytes);
                    let cap = a.too_large_at.min(a.timed_out_at);
                    if cap != i64::MAX {
                        a.limit = a.limit.min((cap / 2).max(1));
                    }
                }
                inflight.spawn(request(kv.clone(), a, rev, attempt, opts.request_timeout));
            }
            let Some(joined) = inflight.join_next().await else {
                break;
            };
            let (of, mut a, result) = joined
                .map_err(|e| ListError::TooLarge(format!("list request task failed: {e}")))?;
            if of != attempt {
                continue;
            }
            let page = match result {
                Ok(p) => p,
                Err(ListError::Etcd(e)) => {
                    let msg = error_chain(&e).to_lowercase();
                    if msg.contains("compacted") && begun && at == 0 {
                        out.send(Observation::Note(format!(
                            "list revision {rev} compacted during the list; restarting"
                        )))
                        .await;
                        inflight.abort_all();
                        continue 'attempt;
                    }
                    if msg.contains("too large") {
                        a.too_large_at = a.too_large_at.min(a.limit);
                        if a.limit > 1 {
                            let smaller = (a.limit / 2).max(1);
                            out.send(Observation::Note(format!(
                                "list page of {} keys exceeded the {decode_limit}-byte gRPC limit; retrying with {smaller}",
                                a.limit
                            )))
                            .await;
                            a.limit = smaller;
                            queue.push_front(a);
                            continue;
                        }
                        if decode_limit < (1 << 30) {
                            decode_limit *= 4;
                            kv = kv.clone().max_decoding_message_size(decode_limit);
                            queue.push_front(a);
                            continue;
                        }
                        return Err(ListError::TooLarge(format!(
                            "a single key exceeds the gRPC decoding limit of {decode_limit} bytes"
                        )));
                    }
                    return Err(ListError::Etcd(e));
                }
                Err(ListError::Timeout) if a.timeouts < TIMEOUT_RETRIES => {
                    a.timeouts += 1;
                    a.timed_out_at = a.timed_out_at.min(a.limit);
                    let smaller = (a.limit / 2).max(1);
                    out.send(Observation::Note(format!(
                        "a list page of {} keys got no answer within {:?}; asking again for {smaller} (try {} of {})",
                        a.limit,
                        opts.request_timeout,
                        a.timeouts + 1,
                        TIMEOUT_RETRIES + 1
                    )))
                    .await;
                    a.limit = smaller;
                    queue.push_front(a);
                    continue;
                }
                Err(e) => return Err(e),
            };
            if !begun {
                begun = true;
                if rev == 0 {
                    rev = page.header_revision;
                }
                if !out.send(Observation::ListBegin { revision: rev }).await
                    || !out
                        .send(Observation::ListCount {
                            keys: page.count.max(0) as u64,
                        })
                        .await
                {
                    return Err(ListError::Closed);
                }
            }
            let got = page.kvs.len() as i64;
            listed += got as u64;
            listed_bytes += page
                .kvs
                .iter()
                .map(|kv| (kv.key.len() + kv.value.len()) as u64)
                .sum::<u64>();
            if let Some(last) = page.kvs.last() {
                if page.more {
                    let remaining = page.count - got;
                    let keys_per_page = page_keys(opts, listed, listed_bytes);
                    if remaining > opts.split_above_pages as i64 * keys_per_page {
                        for piece in a.piece.rest_after(&last.key) {
                            queue.push_back(active(piece, keys_per_page));
                        }
                    } else {
                        a.from = last.key.to_vec();
                        a.from.push(0);
                        queue.push_front(a);
                    }
                }
            }
            // Empty replies (most pieces of a cut hold nothing) send nothing.
            if !page.kvs.is_empty() {
                out.wait_for_room(QUEUED_MAX).await;
                if !out.send(Observation::ListPage { kvs: page.kvs }).await
                    || !out
                        .send(Observation::Conn(ConnState::Listing { keys: listed }))
                        .await
                {
                    return Err(ListError::Closed);
                }
            }
        }
        return Ok(rev);
    }
}

fn active(piece: Piece, limit: i64) -> Active {
    let (from, end) = piece.range();
    Active {
        piece,
        from,
        end,
        too_large_at: i64::MAX,
        timeouts: 0,
        timed_out_at: i64::MAX,
        limit,
    }
}

/// Keys per page for `opts.page_target_bytes`, from the average key + value size so far.
fn page_keys(opts: &SyncOptions, keys: u64, bytes: u64) -> i64 {
    let avg = bytes.checked_div(keys).unwrap_or(1024).max(1);
    ((opts.page_target_bytes as u64 / avg) as i64).clamp(1, opts.page_limit_max.max(1))
}

async fn request(
    mut kv: KvClient,
    a: Active,
    rev: Revision,
    attempt: u64,
    timeout: std::time::Duration,
) -> Reply {
    let opts = GetOptions::new()
        .with_range(a.end.clone())
        .with_limit(a.limit)
        .with_revision(rev);
    let result = match tokio::time::timeout(timeout, kv.get(a.from.clone(), Some(opts))).await {
        Err(_) => Err(ListError::Timeout),
        Ok(Err(e)) => Err(ListError::Etcd(e)),
        Ok(Ok(mut resp)) => Ok(Page {
            header_revision: resp.header().map_or(0, |h| h.revision()),
            more: resp.more(),
            count: resp.count(),
            kvs: resp.take_kvs().into_iter().map(take_kv).collect(),
        }),
    };
    (attempt, a, result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_prefix_is_one_piece_with_its_etcd_range() {
        let p = Piece::of_prefix(b"/registry/");
        assert_eq!(p.range(), (b"/registry/".to_vec(), b"/registry0".to_vec()));
        assert!(p.contains(b"/registry/"));
        assert!(p.contains(b"/registry/pods/a/b"));
        assert!(!p.contains(b"/registry"));
        assert!(!p.contains(b"/registry-other/x"));
        let all = Piece {
            base: vec![],
            lo: 0,
            hi: 0xff,
        };
        assert_eq!(all.range(), (vec![0], vec![0]));
    }

    #[test]
    fn a_big_resource_falls_apart_into_its_namespaces() {
        let top = Piece::of_prefix(b"/registry/");
        let rest = top.rest_after(b"/registry/events/default/a");
        // The resource's namespaces after "d..." stay one piece until it proves big...
        let ns = Piece {
            base: b"/registry/events/".to_vec(),
            lo: b'e',
            hi: 0xff,
        };
        assert!(rest.contains(&ns), "{rest:?}");
        // ...while the other resources are cut per first byte at once.
        let top_level: Vec<_> = rest
            .iter()
            .filter(|p| p.base == b"/registry/")
            .map(|p| (p.lo, p.hi))
            .collect();
        assert!(top_level.contains(&(b'f', b'f')), "{top_level:?}");
        assert!(top_level.contains(&(b'{', 0xff)), "{top_level:?}");
        // Cut after a key of its own, the namespaces piece falls apart per first byte.
        let cut = ns.rest_after(b"/registry/events/kube-system/x");
        let firsts: Vec<_> = cut
            .iter()
            .filter(|p| p.base == b"/registry/events/")
            .map(|p| (p.lo, p.hi))
            .collect();
        assert_eq!(firsts.first(), Some(&(b'l', b'l')), "{firsts:?}");
        assert!(firsts.contains(&(b'z', b'z')), "{firsts:?}");
        assert_eq!(firsts.last(), Some(&(b'{', 0xff)), "{firsts:?}");
    }

    fn key() -> impl Strategy<Value = Vec<u8>> {
        // Few distinct bytes, so that keys share prefixes as registry keys do; 0xff and 0
        // for the edges of the byte range.
        prop::collection::vec(
            prop::sample::select(vec![0u8, b'-', b'/', b'a', b'b', b'z', b'~', 0xfe, 0xff]),
            1..8,
        )
    }

    proptest! {
        /// The pieces after `last` hold exactly the keys of the piece that sort after it,
        /// each in one piece, in key order.
        #[test]
        fn pieces_after_a_key_partition_the_rest(
            base in prop::collection::vec(prop::sample::select(vec![b'/', b'a', 0xff]), 0..3),
            lo in any::<u8>(),
            width in any::<u8>(),
            keys in prop::collection::vec(key(), 1..60),
            pick in any::<prop::sample::Index>(),
        ) {
            let hi = lo.saturating_add(width);
            let piece = Piece { base: base.clone(), lo, hi };
            let inside: Vec<Vec<u8>> = keys
                .iter()
                .map(|k| {
                    let mut full = base.clone();
                    full.push(lo.saturating_add(k[0] % (width.saturating_add(1)).max(1)));
                    full.extend_from_slice(&k[1..]);
                    full
                })
                .collect();
            for k in &inside {
                prop_assert!(piece.contains(k));
            }
            let last = pick.get(&inside).clone();
            let rest = piece.rest_after(&last);
            for k in &inside {
                let holders: Vec<&Piece> = rest.iter().filter(|p| p.contains(k)).collect();
                if k > &last {
                    prop_assert_eq!(holders.len(), 1, "{:?} after {:?}: {:?}", k, last, rest);
                    // The etcd range of its piece holds it too.
                    let (start, end) = holders[0].range();
                    prop_assert!(k >= &start && (end == [0] || k < &end));
                } else {
                    prop_assert!(holders.is_empty(), "{:?} not after {:?}", k, last);
                }
            }
            for w in rest.windows(2) {
                let (a_start, a_end) = w[0].range();
                let (b_start, _) = w[1].range();
                prop_assert!(a_start < b_start);
                prop_assert!(a_end != [0] && a_end <= b_start, "{:?}", rest);
            }
        }
    }
}
