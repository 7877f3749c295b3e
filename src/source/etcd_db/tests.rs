//! The schema reader against the real etcd backend of the shared golden data
//! (`etcd-registry/auger/boltdb/db`, see its README); real etcd 3.4 and 3.5 files are read
//! in `tests/etcd/`.

use super::*;

#[test]
fn revision_keys_round_trip_and_foreign_keys_are_none() {
    let k = revision_key(82702, 3);
    assert_eq!(parse_revision_key(&k), Some((82702, 3, false)));
    let mut t = k.to_vec();
    t.push(b't');
    assert_eq!(parse_revision_key(&t), Some((82702, 3, true)));
    t[17] = b'x';
    assert_eq!(parse_revision_key(&t), None);
    assert_eq!(parse_revision_key(b"compact_rev_key"), None);
}

#[test]
fn the_auger_db_reads_as_etcd_with_its_items() {
    let Some(td) = crate::testdata::dir() else {
        return;
    };
    let db = EtcdDb::open(&td.join("etcd-registry/auger/boltdb/db")).unwrap();
    let versions: Vec<Version> = db.versions_from(0).map(|v| v.unwrap()).collect();
    let pod = versions
        .iter()
        .find(|v| v.kv.key.as_ref() == b"/registry/pods/default/pi-dqtsw")
        .unwrap();
    // page2item1-summary.txt
    assert_eq!(
        (
            pod.kv.version,
            pod.kv.create_revision,
            pod.kv.mod_revision,
            pod.kv.lease
        ),
        (5, 82648, 82702, 0)
    );
    assert_eq!(pod.main, 82702);
    let storage = std::fs::read(td.join("etcd-registry/auger/storage/pod.bin")).unwrap();
    // storage/pod.bin is the value plus the newline auger's extract adds.
    assert_eq!(pod.kv.value.as_ref(), &storage[..storage.len() - 1]);
    assert_eq!(
        db.last_key_revision().unwrap(),
        versions.last().unwrap().main
    );
    // Compacted at 241828, after the last entry left (later writes were deleted and
    // compacted away): etcd's revision is the compaction's.
    assert_eq!(db.compacted(), 241828);
    assert_eq!(db.head().unwrap(), 241828);
    let from = db
        .versions_from(82703)
        .map(|v| v.unwrap().main)
        .collect::<Vec<_>>();
    assert!(from.iter().all(|&m| m >= 82703));
    assert_eq!(
        from.len(),
        versions.iter().filter(|v| v.main >= 82703).count()
    );
}

#[test]
fn a_file_with_no_key_bucket_is_said_to_be_no_etcd_backend() {
    let Some(td) = crate::testdata::dir() else {
        return;
    };
    let mut bytes = std::fs::read(td.join("etcd-registry/auger/boltdb/db")).unwrap();
    assert!(looks_like_bbolt(&bytes));
    // Rename the `key` bucket in place (it is an inline entry of the root page), then
    // the meta's checksum no longer matters: the root page is not covered by it.
    let at = bytes
        .windows(3)
        .enumerate()
        .filter(|(_, w)| *w == b"key")
        .map(|(i, _)| i)
        .collect::<Vec<_>>();
    for i in at {
        bytes[i] = b'K';
    }
    let open = |bytes: &Vec<u8>| {
        let db = crate::bbolt::Db::from_source(Box::new(bytes.clone())).unwrap();
        EtcdDb::from_db(db, std::path::Path::new("x.db"))
            .err()
            .unwrap()
    };
    // etcd's `meta` bucket is there: etcd's file, its root page damaged.
    let e = open(&bytes);
    assert!(!e.is_unreadable());
    let e = e.to_string();
    assert!(
        e.starts_with("x.db: damaged: etcd's `meta` bucket is there but its `key` bucket is not"),
        "{e}"
    );
    // Neither `key` nor `meta`: another program's bbolt file.
    for i in bytes
        .windows(4)
        .enumerate()
        .filter(|(_, w)| *w == b"meta")
        .map(|(i, _)| i)
        .collect::<Vec<_>>()
    {
        bytes[i] = b'M';
    }
    let e = open(&bytes);
    assert!(e.to_string().contains("not etcd's backend"), "{e}");
    assert!(
        e.detail()
            .starts_with("a bbolt file, but not etcd's backend"),
        "{e}"
    );
}

/// A key of the `key` bucket that is no revision (a damaged leaf page runs it into the
/// value) is said with its page, its length and its first bytes only.
#[test]
fn a_key_that_is_no_revision_names_its_page_and_not_the_whole_key() {
    let mut key = vec![0u8, 0, 0, 0, 0, 0, 0, 10, b'#'];
    key.extend_from_slice(b"/registry/leases/kube-node-lease/n2{\"kind\":\"Lease\"}");
    let m = super::not_a_revision(&key, Some(42));
    assert!(m.starts_with("page 42: "), "{m}");
    assert!(m.contains(&format!("({} bytes: ", key.len())), "{m}");
    assert!(m.contains('…') && !m.contains("Lease"), "{m}");
    assert!(m.ends_with("the page is damaged"), "{m}");
    let m = super::not_a_revision(b"abc", None);
    assert!(
        m.starts_with("a key of the `key` bucket is no revision (3 bytes: abc)"),
        "{m}"
    );
}
