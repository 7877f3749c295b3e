//! The key browser's data: queries over the replica that never collect all keys.
//!
//! The replica stores keys in byte order, so every resource's keys are one contiguous range
//! under a *resource prefix* (`/registry/pods/`, `/registry/example.com/widgets/`). The
//! prefix is derived from any one key of the resource, following the same layout rules as
//! [`crate::model::KeyPath`]. Lists page through that range with
//! [`Replica::live_keys_after`]/[`Replica::live_keys_before`] (O(log keys + rows)); a text
//! filter scans forward in chunks and gives up after [`SCAN_LIMIT`] keys per query.

use std::collections::HashMap;

use bytes::Bytes;

use crate::model::kubernetes::resource_segments;
use crate::model::NO_RESOURCE;
use crate::model::{escape_bytes, KeyPath};
use crate::store::Replica;

/// Keys examined at most by one filtered query before it reports `limited`: a whole
/// resource of up to this many keys is searched. A frame makes a few such queries: a
/// filter that matches nothing in a bigger resource costs a frame 54 ms (median; 69 ms
/// worst) at this limit, against 13 ms at 50,000 (`cargo bench --bench key_browser`),
/// and only while such a filter is open.
pub const SCAN_LIMIT: usize = 150_000;

const CHUNK: usize = 512;

/// Rows found by a query, and whether the scan stopped at [`SCAN_LIMIT`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// Matching keys, in the order of the query (ascending for `after`, nearest first for
    /// `before`).
    pub keys: Vec<Bytes>,
    /// The filter scan stopped before the end of the range.
    pub limited: bool,
}

/// The global prefix with exactly one trailing slash (`/registry/`).
pub fn scan_prefix(replica: &Replica) -> Vec<u8> {
    let p = replica.prefix();
    let mut v = p.strip_suffix(b"/").unwrap_or(p).to_vec();
    v.push(b'/');
    v
}

/// The prefix shared by every key of `key`'s resource: `/registry/pods/` for
/// `/registry/pods/ns/p`; the key itself when it has nothing after the resource
/// (`/registry/ranges/serviceips`). `None` for keys outside the prefix.
pub fn resource_prefix(prefix: &[u8], key: &[u8]) -> Option<Bytes> {
    let prefix = prefix.strip_suffix(b"/").unwrap_or(prefix);
    let rest = key.strip_prefix(prefix)?.strip_prefix(b"/")?;
    let segs: Vec<&[u8]> = rest.split(|b| *b == b'/').collect();
    // `/registry/` itself or `/registry//x`: no resource segment, so no prefix of its own
    // (it would cover every key).
    if segs.first().is_none_or(|s| s.is_empty()) {
        return None;
    }
    let n = resource_segments(&segs);
    if segs.len() <= n {
        return Some(Bytes::copy_from_slice(key));
    }
    let len = prefix.len() + 1 + segs[..n].iter().map(|s| s.len() + 1).sum::<usize>();
    Some(Bytes::copy_from_slice(&key[..len]))
}

/// The smallest byte string greater than every string starting with `p`, if any.
pub fn upper_bound(p: &[u8]) -> Option<Vec<u8>> {
    Some(crate::model::prefix_end(p)).filter(|e| e.as_slice() != [0])
}

/// Finds each resource's prefix by jumping from one resource's range to the next:
/// O(resources × log keys), independent of the number of keys.
pub fn discover_prefixes(replica: &Replica) -> HashMap<String, Bytes> {
    let scan = scan_prefix(replica);
    let mut out = HashMap::new();
    let mut cursor: Option<Bytes> = None;
    for _ in 0..100_000 {
        let next = replica.live_keys_after(&scan, cursor.as_deref(), 1);
        let Some(k) = next.into_iter().next() else {
            break;
        };
        let Some(rp) = resource_prefix(replica.prefix(), &k) else {
            // A stray key without a resource segment: listed under NO_RESOURCE (the prefix
            // itself stands for them, see `after`), and stepped over here.
            if k.starts_with(&scan) {
                out.entry(NO_RESOURCE.to_string())
                    .or_insert_with(|| Bytes::copy_from_slice(&scan));
            }
            cursor = Some(k);
            continue;
        };
        let name = KeyPath::parse(replica.prefix(), &k).resource.into_owned();
        out.entry(name).or_insert_with(|| rp.clone());
        let Some(ub) = upper_bound(&rp) else {
            break;
        };
        match replica
            .live_keys_before(&scan, Some(&ub), 1)
            .into_iter()
            .next()
        {
            Some(last) if last >= k => cursor = Some(last),
            _ => break,
        }
    }
    out
}

/// Whether `key` (under `rprefix`) matches a lower-case filter: a substring of the escaped
/// part after the resource prefix (`namespace/name`).
pub fn matches(rprefix: &[u8], key: &[u8], filter_lower: &str) -> bool {
    if filter_lower.is_empty() {
        return true;
    }
    let tail = key.strip_prefix(rprefix).unwrap_or(key);
    // Most keys are printable ASCII, shown as they are: compared in place, without the
    // two strings the general case builds (a scan looks at many thousands of keys).
    if filter_lower.is_ascii() && tail.iter().all(|b| (0x20..0x7f).contains(b) && *b != b'\\') {
        return contains_ignore_ascii_case(tail, filter_lower.as_bytes());
    }
    escape_bytes(tail).to_lowercase().contains(filter_lower)
}

/// Whether `hay` holds `needle_lower` (ASCII, lowercase) ignoring ASCII case.
fn contains_ignore_ascii_case(hay: &[u8], needle_lower: &[u8]) -> bool {
    needle_lower.is_empty()
        || hay
            .windows(needle_lower.len())
            .any(|w| w.eq_ignore_ascii_case(needle_lower))
}

/// Whether `key` has no resource segment under `root` (the prefix with its slash): `root`
/// itself, or `root` then `/`.
fn rootless(root: &[u8], key: &[u8]) -> bool {
    key.strip_prefix(root)
        .is_some_and(|t| t.is_empty() || t[0] == b'/')
}

/// The keys without a resource segment ([`NO_RESOURCE`]), whose "resource prefix" is the
/// prefix itself (`/registry/`): they all sort before `/registry/0` (`/` is 0x2f), so they
/// are found at the start of the prefix's range, where only keys of resources named from
/// `-` or `.` can stand between them.
fn rootless_keys(
    replica: &Replica,
    root: &[u8],
    from: Option<&[u8]>,
    n: usize,
    forward: bool,
    filter_lower: &str,
) -> Scan {
    let mut end = root.to_vec();
    end.push(b'0');
    let mut out = Scan::default();
    let mut cursor: Option<Bytes> = from.map(Bytes::copy_from_slice);
    // Upwards from `from`, or down from the end of their range.
    if !forward && cursor.is_none() {
        cursor = Some(Bytes::from(end.clone()));
    }
    for _ in 0..64 {
        let chunk = if forward {
            replica.live_keys_after(root, cursor.as_deref(), CHUNK)
        } else {
            replica.live_keys_before(root, cursor.as_deref(), CHUNK)
        };
        let done = chunk.len() < CHUNK;
        cursor = chunk.last().cloned();
        for k in chunk {
            if forward && k.as_ref() >= end.as_slice() {
                return out;
            }
            if rootless(root, &k) && matches(root, &k, filter_lower) {
                out.keys.push(k);
                if out.keys.len() >= n {
                    return out;
                }
            }
        }
        if done {
            break;
        }
    }
    out
}

/// Up to `n` matching keys strictly after `after` (from the start when `None`).
pub fn after(
    replica: &Replica,
    rprefix: &[u8],
    after: Option<&[u8]>,
    n: usize,
    filter_lower: &str,
) -> Scan {
    if rprefix == scan_prefix(replica).as_slice() {
        return rootless_keys(replica, rprefix, after, n, true, filter_lower);
    }
    if filter_lower.is_empty() {
        return Scan {
            keys: replica.live_keys_after(rprefix, after, n),
            limited: false,
        };
    }
    scan_filtered(rprefix, after, n, filter_lower, |cursor, k| {
        replica.live_keys_after(rprefix, cursor, k)
    })
}

/// Up to `n` matching keys strictly before `before` (from the end when `None`), nearest
/// first.
pub fn before(
    replica: &Replica,
    rprefix: &[u8],
    before: Option<&[u8]>,
    n: usize,
    filter_lower: &str,
) -> Scan {
    if rprefix == scan_prefix(replica).as_slice() {
        return rootless_keys(replica, rprefix, before, n, false, filter_lower);
    }
    if filter_lower.is_empty() {
        return Scan {
            keys: replica.live_keys_before(rprefix, before, n),
            limited: false,
        };
    }
    scan_filtered(rprefix, before, n, filter_lower, |cursor, k| {
        replica.live_keys_before(rprefix, cursor, k)
    })
}

/// Walks keys in chunks from `start` with `fetch(cursor, chunk)` (either direction), keeping
/// those that match the filter, until `n` match or [`SCAN_LIMIT`] keys were looked at.
fn scan_filtered(
    rprefix: &[u8],
    start: Option<&[u8]>,
    n: usize,
    filter_lower: &str,
    fetch: impl Fn(Option<&[u8]>, usize) -> Vec<Bytes>,
) -> Scan {
    let mut out = Scan::default();
    let mut cursor: Option<Bytes> = start.map(Bytes::copy_from_slice);
    let mut scanned = 0;
    while out.keys.len() < n {
        if scanned >= SCAN_LIMIT {
            out.limited = true;
            break;
        }
        let chunk = fetch(cursor.as_deref(), CHUNK);
        scanned += chunk.len();
        let done = chunk.len() < CHUNK;
        cursor = chunk.last().cloned();
        out.keys.extend(
            chunk
                .into_iter()
                .filter(|k| matches(rprefix, k, filter_lower))
                .take(n - out.keys.len()),
        );
        if done {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{KeyValue, Observation, Stamped};
    use crate::store::ReplicaConfig;
    use std::time::{Duration, UNIX_EPOCH};

    fn replica(keys: &[&str]) -> Replica {
        let mut r = Replica::new(ReplicaConfig::default());
        let at = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut kvs: Vec<KeyValue> = keys
            .iter()
            .map(|k| KeyValue {
                key: Bytes::copy_from_slice(k.as_bytes()),
                create_revision: 2,
                mod_revision: 2,
                version: 1,
                lease: 0,
                value: Bytes::from_static(b"{}"),
            })
            .collect();
        kvs.sort_by(|a, b| a.key.cmp(&b.key));
        for obs in [
            Observation::ListBegin { revision: 2 },
            Observation::ListPage { kvs },
            Observation::ListDone {
                revision: 2,
                compacted: None,
            },
        ] {
            r.apply(&Stamped { at, obs });
        }
        r
    }

    #[test]
    fn resource_prefixes_follow_the_layout() {
        let p = b"/registry";
        let rp = |k: &str| {
            resource_prefix(p, k.as_bytes()).map(|b| String::from_utf8_lossy(&b).into_owned())
        };
        assert_eq!(
            rp("/registry/pods/ns/p").as_deref(),
            Some("/registry/pods/")
        );
        assert_eq!(
            rp("/registry/example.com/widgets/ns/w").as_deref(),
            Some("/registry/example.com/widgets/")
        );
        assert_eq!(
            rp("/registry/services/specs/default/k").as_deref(),
            Some("/registry/services/specs/")
        );
        assert_eq!(
            rp("/registry/ranges/serviceips").as_deref(),
            Some("/registry/ranges/serviceips")
        );
        assert_eq!(rp("/other/x"), None);
        assert_eq!(upper_bound(b"/a/"), Some(b"/a0".to_vec()));
        assert_eq!(upper_bound(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(upper_bound(b"\xff"), None);
    }

    #[test]
    fn discovery_jumps_between_resources() {
        let r = replica(&[
            "/registry/pods/a/p1",
            "/registry/pods/b/p2",
            "/registry/podsecuritypolicy/x",
            "/registry/services/specs/default/kubernetes",
            "/registry/services/endpoints/default/kubernetes",
            "/registry/example.com/widgets/ns/w",
            "/registry/ranges/serviceips",
        ]);
        let m = discover_prefixes(&r);
        assert_eq!(m.len(), 6, "{m:?}");
        assert_eq!(&m["pods"][..], b"/registry/pods/");
        assert_eq!(&m["endpoints"][..], b"/registry/services/endpoints/");
        assert_eq!(
            &m["widgets.example.com"][..],
            b"/registry/example.com/widgets/"
        );
        // A stray key equal to the prefix neither swallows nor hides the resources.
        let r = replica(&[
            "/registry/",
            "/registry/configmaps/default/a",
            "/registry/secrets/default/s1",
        ]);
        let m = discover_prefixes(&r);
        assert_eq!(&m["configmaps"][..], b"/registry/configmaps/");
        assert_eq!(&m["secrets"][..], b"/registry/secrets/");
        // The stray key has its own named entry, whose listing takes only such keys.
        assert!(
            m.iter()
                .all(|(name, p)| (&p[..] == b"/registry/") == (name == NO_RESOURCE)),
            "{m:?}"
        );
    }

    #[test]
    fn paging_and_filtered_scans() {
        let names: Vec<String> = (0..2000)
            .map(|i| format!("/registry/configmaps/ns/cm{i:04}"))
            .collect();
        let mut keys: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
        keys.push("/registry/secrets/ns/s");
        let r = replica(&keys);
        let rp = b"/registry/configmaps/";
        let last = before(&r, rp, None, 1, "");
        assert_eq!(&last.keys[0][..], b"/registry/configmaps/ns/cm1999");
        let f = after(&r, rp, None, 3, "cm19");
        assert_eq!(f.keys.len(), 3);
        assert_eq!(&f.keys[0][..], b"/registry/configmaps/ns/cm1900");
        let b = before(&r, rp, None, 2, "cm00");
        assert_eq!(&b.keys[0][..], b"/registry/configmaps/ns/cm0099");
        let none = after(&r, rp, None, 3, "zzz");
        assert!(none.keys.is_empty() && !none.limited);
    }

    #[test]
    fn a_filter_finds_a_key_past_a_hundred_thousand_others() {
        let names: Vec<String> = (0..100_010)
            .map(|i| format!("/registry/configmaps/ns-{:03}/cm-{:06}", i / 1000, i))
            .collect();
        let keys: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
        let r = replica(&keys);
        let rp = b"/registry/configmaps/";
        let hit = after(&r, rp, None, 5, "ns-100/cm-100005");
        assert_eq!(hit.keys.len(), 1, "{hit:?}");
        assert!(!hit.limited);
        assert_eq!(&hit.keys[0][..], b"/registry/configmaps/ns-100/cm-100005");
    }

    proptest::proptest! {
        /// The in-place comparison of plain keys agrees with matching the key as shown
        /// (escaped, lowercased), for any key bytes and any filter.
        #[test]
        fn matching_in_place_agrees_with_matching_the_shown_key(
            tail in proptest::collection::vec(
                proptest::prop_oneof![
                    8 => proptest::sample::select(b"abcXYZ-./019".to_vec()),
                    1 => proptest::num::u8::ANY,
                ],
                0..24,
            ),
            filter in "[a-zA-Z0-9./\\\\-]{0,4}|.{0,3}",
        ) {
            let rp = b"/registry/pods/";
            let mut key = rp.to_vec();
            key.extend_from_slice(&tail);
            let lower = filter.to_lowercase();
            let shown = escape_bytes(&tail).to_lowercase().contains(&lower);
            proptest::prop_assert_eq!(matches(rp, &key, &lower), shown);
        }
    }

    /// Keys with no resource segment (`/registry/` itself, `/registry//x`) are listed under
    /// their own named entry, in both directions, and nothing else is.
    #[test]
    fn keys_without_a_resource_segment_have_a_named_entry_that_lists_them() {
        let mut r = replica(&[
            "/registry/",
            "/registry//odd",
            "/registry//odd/deeper",
            "/registry/-dash/x",
            "/registry/pods/a/p",
            "/registry/zz/y",
        ]);
        r.settle();
        let prefixes = discover_prefixes(&r);
        let root = prefixes.get(NO_RESOURCE).expect("a named entry").clone();
        assert_eq!(&root[..], b"/registry/");
        assert_eq!(&prefixes["pods"][..], b"/registry/pods/");
        let text = |s: Scan| {
            s.keys
                .iter()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            text(after(&r, &root, None, 10, "")),
            ["/registry/", "/registry//odd", "/registry//odd/deeper"]
        );
        assert_eq!(
            text(after(&r, &root, Some(b"/registry/"), 1, "")),
            ["/registry//odd"]
        );
        assert_eq!(
            text(before(&r, &root, None, 10, "")),
            ["/registry//odd/deeper", "/registry//odd", "/registry/"]
        );
        assert_eq!(
            text(after(&r, &root, None, 10, "deeper")),
            ["/registry//odd/deeper"]
        );
        assert_eq!(
            KeyPath::parse(r.prefix(), b"/registry/").resource,
            NO_RESOURCE
        );
    }
}
