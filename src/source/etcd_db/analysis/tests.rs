//! The analysis against the real etcd backend of the shared golden data
//! (`etcd-registry/auger/boltdb/db`: three objects under `/registry` and
//! `compact_rev_key`, see its `keys.txt`), counted again here by a second reader
//! ([`EtcdDb::versions_from`], which decodes whole values), and the per-key counting on
//! versions made by hand. Real etcd 3.4 and 3.5 files are analysed in `tests/etcd/`.

use std::collections::BTreeMap;

use super::*;
use crate::source::etcd_db::revision_key;

fn auger() -> Option<EtcdDb> {
    let td = crate::testdata::dir()?;
    Some(EtcdDb::open(&td.join("etcd-registry/auger/boltdb/db")).expect("the auger db opens"))
}

fn opts(top: usize) -> AnalysisOptions {
    AnalysisOptions {
        prefix: b"/registry".to_vec(),
        top,
    }
}

#[test]
fn the_auger_db_has_four_keys_three_resources_and_one_outside() {
    let Some(db) = auger() else { return };
    let a = analyze(&db, &opts(10)).unwrap();
    let resources: Vec<(&str, u64, u64)> = a
        .resources
        .iter()
        .map(|r| (r.resource.as_str(), r.usage.keys, r.usage.live_keys))
        .collect();
    let mut sorted = resources.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [("jobs", 1, 1), ("namespaces", 1, 1), ("pods", 1, 1)],
        "{resources:?}"
    );
    assert_eq!((a.all_keys.keys, a.all_keys.live_keys), (4, 4));
    assert_eq!(
        (a.outside_prefix.keys, a.outside_prefix.live_keys),
        (1, 1),
        "compact_rev_key"
    );
    // The namespace `default` holds the job and the pod; the namespace object itself is
    // cluster-scoped.
    assert_eq!(a.namespaces.len(), 1);
    assert_eq!(a.namespaces[0].namespace, "default");
    assert_eq!(a.namespaces[0].usage.live_keys, 2);
    // The same figures as `analyze_status` (whose live keys are counted apart, by hash),
    // and the last revision as etcdctl's.
    let alone = crate::source::etcd_db::analyze_status(&db, |_, _| {}).unwrap();
    assert_eq!(a.snapshot_status, alone);
    assert_eq!(alone.live_keys, a.all_keys.live_keys);
    assert_eq!(a.snapshot_status.revision, db.last_key_revision().unwrap());
    assert_eq!(a.all_keys.revisions, a.buckets_entries("key"));
    assert_eq!(
        a.buckets.iter().map(|b| b.entries).sum::<u64>(),
        a.snapshot_status.total_entries
    );
}

impl Analysis {
    fn buckets_entries(&self, name: &str) -> u64 {
        self.buckets
            .iter()
            .find(|b| b.name == name)
            .map_or(0, |b| b.entries)
    }
}

/// Per key: (versions, tombstones, stored bytes, newest value length when live).
type Counted = BTreeMap<Vec<u8>, (u64, u64, u64, Option<u64>)>;

fn count_again(db: &EtcdDb) -> Counted {
    let mut out = Counted::new();
    for v in db.versions_from(0) {
        let v = v.unwrap();
        let e = out.entry(v.kv.key.to_vec()).or_default();
        e.0 += 1;
        e.2 += v.stored_bytes as u64;
        if v.tombstone {
            e.1 += 1;
            e.3 = None;
        } else {
            e.3 = Some(v.kv.value.len() as u64);
        }
    }
    out
}

#[test]
fn per_resource_and_per_key_figures_match_a_second_reading() {
    let Some(db) = auger() else { return };
    let a = analyze(&db, &opts(10)).unwrap();
    let counted = count_again(&db);
    let prefix = b"/registry".as_slice();
    let mut want: BTreeMap<String, Usage> = BTreeMap::new();
    for (key, (revs, tombs, stored, newest)) in &counted {
        if !key.starts_with(b"/registry/") {
            continue;
        }
        let r = KeyPath::parse(prefix, key).resource.into_owned();
        let u = want.entry(r).or_default();
        u.keys += 1;
        u.revisions += revs;
        u.tombstones += tombs;
        u.retained_bytes += stored;
        if let Some(n) = newest {
            u.live_keys += 1;
            u.live_bytes += n;
        }
    }
    let got: BTreeMap<String, Usage> = a
        .resources
        .iter()
        .map(|r| (r.resource.clone(), r.usage.clone()))
        .collect();
    assert_eq!(got, want);
    // Ranked by retained bytes.
    assert!(a
        .resources
        .windows(2)
        .all(|w| w[0].usage.retained_bytes >= w[1].usage.retained_bytes));
    // The pod's newest value is the stored object auger extracted (less its newline).
    let td = crate::testdata::dir().unwrap();
    let pod = std::fs::read(td.join("etcd-registry/auger/storage/pod.bin")).unwrap();
    let row = a
        .largest
        .iter()
        .find(|k| k.key == "/registry/pods/default/pi-dqtsw")
        .unwrap();
    assert_eq!(row.bytes, pod.len() as u64 - 1);
    assert_eq!(row.newest_revision, 82702);
    // Largest first, and only the three objects under the prefix.
    assert_eq!(a.largest.len(), 3);
    assert!(a.largest.windows(2).all(|w| w[0].bytes >= w[1].bytes));
    for k in &a.most_revisions {
        let c = &counted[k.key.as_bytes()];
        assert_eq!(
            (k.revisions, k.tombstones, k.retained_bytes),
            (c.0, c.1, c.2)
        );
    }
    // --top cuts every ranked list.
    let one = analyze(&db, &opts(1)).unwrap();
    assert_eq!(one.largest, a.largest[..1]);
    assert_eq!(one.most_revisions, a.most_revisions[..1]);
    assert_eq!(one.resources, a.resources);
}

#[test]
fn the_file_figures_add_up() {
    let Some(db) = auger() else { return };
    let a = analyze(&db, &opts(10)).unwrap();
    let f = &a.file;
    assert_eq!(f.file_bytes, 20480);
    assert_eq!(f.bbolt_bytes, f.pages * f.page_size as u64);
    assert_eq!(f.trailer_bytes, f.file_bytes - f.bbolt_bytes);
    assert_eq!(f.in_use_bytes + f.free_bytes, f.bbolt_bytes);
    assert!(f.free_pages <= f.pages - 2);
    // The bytes the key bucket's entries take are inside the pages in use.
    assert!(a.all_keys.retained_bytes < f.in_use_bytes);
    assert_eq!(a.snapshot_status.total_size, f.bbolt_bytes);
    assert_eq!(a.head, db.head().unwrap());
    assert!(!a.compaction.interrupted);
}

/// An `mvccpb.KeyValue` with key, mod revision, value and lease (tags 1, 3, 5, 6).
fn kv(key: &[u8], rev: u64, value: &[u8], lease: u64) -> Vec<u8> {
    let mut b = vec![0x0a, key.len() as u8];
    b.extend_from_slice(key);
    b.extend_from_slice(&[0x18, rev as u8]);
    b.extend_from_slice(&[0x2a, value.len() as u8]);
    b.extend_from_slice(value);
    if lease != 0 {
        b.extend_from_slice(&[0x30, lease as u8]);
    }
    b
}

#[test]
fn a_key_put_deleted_and_put_again_counts_every_version_and_its_newest_value() {
    let mut keys = Keys::new(b"/registry");
    let pod = b"/registry/pods/ns1/p".as_slice();
    let mut tomb = revision_key(3, 0).to_vec();
    tomb.push(b't');
    let tomb_kv = {
        let mut b = vec![0x0a, pod.len() as u8];
        b.extend_from_slice(pod);
        b
    };
    let versions: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (revision_key(1, 0).to_vec(), kv(pod, 1, b"aaaa", 0)),
        (revision_key(2, 0).to_vec(), kv(b"other", 2, b"x", 0)),
        (tomb, tomb_kv),
        (revision_key(4, 0).to_vec(), kv(pod, 4, b"bb", 7)),
    ];
    for (k, v) in &versions {
        keys.version(k, v).unwrap();
    }
    assert_eq!(keys.stats.len(), 2);
    let p = keys.key_usage(&keys.stats[0]);
    assert_eq!(p.key, "/registry/pods/ns1/p");
    assert_eq!(
        (p.resource.as_str(), p.namespace.as_deref()),
        ("pods", Some("ns1"))
    );
    assert_eq!(
        (p.live, p.bytes, p.lease, p.newest_revision),
        (true, 2, 7, 4)
    );
    assert_eq!((p.revisions, p.tombstones), (3, 1));
    let stored: u64 = [0usize, 2, 3]
        .iter()
        .map(|&i| (versions[i].0.len() + versions[i].1.len()) as u64)
        .sum();
    assert_eq!(p.retained_bytes, stored);
    let o = keys.key_usage(&keys.stats[1]);
    assert_eq!(o.resource, crate::model::OUTSIDE_PREFIX);
    // A deletion as the newest version: not live, no bytes, no lease.
    let mut tomb = revision_key(5, 0).to_vec();
    tomb.push(b't');
    let mut del = vec![0x0a, pod.len() as u8];
    del.extend_from_slice(pod);
    keys.version(&tomb, &del).unwrap();
    let p = keys.key_usage(&keys.stats[0]);
    assert_eq!(
        (p.live, p.bytes, p.lease, p.revisions, p.tombstones),
        (false, 0, 0, 4, 2)
    );
    // Garbage is an error naming the revision, not a panic.
    let e = keys
        .version(&revision_key(6, 0), &[0x0a, 0x7f, 1])
        .unwrap_err();
    assert!(e.contains("revision 6.0"), "{e}");
    assert!(keys.version(b"not a revision", &[]).is_err());
}

#[test]
fn many_keys_are_found_again_through_the_table_across_chunks() {
    let mut keys = Keys::new(b"/registry");
    let n = CHUNK + 4_464;
    let name = |i: usize| format!("/registry/configmaps/ns{}/c{i}", i % 7);
    for round in 1..=2u64 {
        for i in 0..n {
            let key = name(i);
            let rev = round as usize * 1_000_000 + i;
            let mut v = vec![0x0a, key.len() as u8];
            v.extend_from_slice(key.as_bytes());
            v.extend_from_slice(&[0x2a, 1, b'x']);
            keys.version(&revision_key(rev as i64, 0), &v).unwrap();
        }
    }
    assert_eq!(keys.stats.len(), n);
    assert!(keys.stats.iter().all(|k| k.revisions == 2 && k.live()));
    assert!(
        keys.arena.chunks.len() > 1,
        "the names fill more than one chunk"
    );
    assert_eq!(keys.stats.chunks.len(), 2);
    for i in [0, CHUNK - 1, CHUNK, n - 1] {
        assert_eq!(keys.name(&keys.stats[i]), name(i).as_bytes(), "key {i}");
    }
    assert_eq!(keys.namespaces.names.len(), 7);
    assert_eq!(keys.resources.names, ["configmaps"]);
}

#[test]
fn a_compaction_scheduled_past_the_finished_one_is_said_to_be_interrupted() {
    let Some(td) = crate::testdata::dir() else {
        return;
    };
    let mut bytes = std::fs::read(td.join("etcd-registry/auger/boltdb/db")).unwrap();
    // The meta bucket is inline in the root's leaf: each key is followed by its value, a
    // 17-byte revision. The root page is not covered by the meta's checksum.
    let name = b"scheduledCompactRev";
    let at = bytes
        .windows(name.len())
        .position(|w| w == name)
        .expect("the auger db records a scheduled compaction")
        + name.len();
    let finished = EtcdDb::from_db(
        crate::bbolt::Db::from_source(Box::new(bytes.clone())).unwrap(),
        std::path::Path::new("db"),
    )
    .unwrap()
    .meta()
    .finished_compact_revision
    .expect("and a finished one");
    bytes[at..at + 17].copy_from_slice(&revision_key(finished + 100, 0));
    let db = EtcdDb::from_db(
        crate::bbolt::Db::from_source(Box::new(bytes)).unwrap(),
        std::path::Path::new("db"),
    )
    .unwrap();
    let a = analyze(&db, &opts(10)).unwrap();
    assert_eq!(
        a.compaction,
        Compaction {
            finished: Some(finished),
            scheduled: Some(finished + 100),
            interrupted: true,
        }
    );
}
