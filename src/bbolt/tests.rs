//! The reader against a real bbolt file (`etcd-registry/auger/boltdb/db` of the shared
//! golden data: an etcd v3 backend from a GKE cluster, see its README), and against every
//! way of cutting and damaging it.

use super::*;

fn auger_db() -> Option<Vec<u8>> {
    let td = crate::testdata::dir()?;
    Some(std::fs::read(td.join("etcd-registry/auger/boltdb/db")).expect("auger db"))
}

/// Field 1 (the key) of an `mvccpb.KeyValue`, read by hand: a tag byte `0x0a`, a varint
/// length below 128, the bytes.
fn kv_key(v: &[u8]) -> &[u8] {
    assert_eq!(v[0], 0x0a);
    &v[2..2 + v[1] as usize]
}

/// A bucket's name, a key and its value.
type Row = (Vec<u8>, Vec<u8>, Vec<u8>);

/// Every entry of every top-level bucket, or the first error.
fn walk<R: ReadAt + ?Sized>(db: &Db<R>) -> Result<Vec<Row>, BoltError> {
    let mut out = Vec::new();
    for (name, b) in db.buckets()? {
        for e in db.entries(&b) {
            let e = e?;
            out.push((name.to_vec(), e.key.to_vec(), e.value.to_vec()));
        }
    }
    db.freelist()?;
    Ok(out)
}

#[test]
fn the_auger_db_lists_exactly_its_registry_keys() {
    let Some(bytes) = auger_db() else { return };
    let db = Db::from_source(Box::new(bytes)).unwrap();
    assert_eq!(db.meta().page_size, 4096);
    assert_eq!(db.size(), 20480);
    let names: Vec<String> = db
        .buckets()
        .unwrap()
        .iter()
        .map(|(n, _)| String::from_utf8_lossy(n).into_owned())
        .collect();
    assert!(
        names.iter().any(|n| n == "key") && names.iter().any(|n| n == "meta"),
        "{names:?}"
    );
    let key = db.bucket(b"key").unwrap().unwrap();
    let mut keys: Vec<String> = db
        .entries(&key)
        .map(|e| {
            let e = e.unwrap();
            // 17-byte revision keys (etcd's `revision` bytes), ascending.
            assert_eq!(e.key.len(), 17, "{:?}", e.key);
            String::from_utf8_lossy(kv_key(&e.value)).into_owned()
        })
        .collect();
    keys.sort();
    keys.dedup();
    let td = crate::testdata::dir().unwrap();
    let want = std::fs::read_to_string(td.join("etcd-registry/auger/boltdb/keys.txt")).unwrap();
    // The three objects and `compact_rev_key`, the key kube-apiserver's compactor writes.
    let want: Vec<&str> = want.lines().collect();
    assert_eq!(keys, want);
    let meta = db.bucket(b"meta").unwrap().unwrap();
    assert!(
        db.get(&meta, b"finishedCompactRev").unwrap().is_some()
            || db.get(&key, b"x").unwrap().is_none()
    );
}

#[test]
fn the_auger_values_equal_the_items_auger_extracted() {
    let Some(bytes) = auger_db() else { return };
    let td = crate::testdata::dir().unwrap();
    let db = Db::from_source(Box::new(bytes)).unwrap();
    let key = db.bucket(b"key").unwrap().unwrap();
    let values: Vec<Vec<u8>> = db
        .entries(&key)
        .map(|e| e.unwrap().value.to_vec())
        .collect();
    for i in 0..3 {
        let item =
            std::fs::read(td.join(format!("etcd-registry/auger/boltdb/page2item{i}.bin"))).unwrap();
        assert!(
            values.contains(&item),
            "page2item{i}.bin is not a value of the key bucket"
        );
    }
}

#[test]
fn seeking_lands_on_the_first_key_at_or_after() {
    let Some(bytes) = auger_db() else { return };
    let db = Db::from_source(Box::new(bytes)).unwrap();
    let key = db.bucket(b"key").unwrap().unwrap();
    let all: Vec<Bytes> = db.entries(&key).map(|e| e.unwrap().key).collect();
    for (i, k) in all.iter().enumerate() {
        let from: Vec<Bytes> = db.entries_from(&key, k).map(|e| e.unwrap().key).collect();
        assert_eq!(from, all[i..]);
        // Just below the key: the same place.
        let mut below = k.to_vec();
        let Some(last) = below.last_mut().filter(|b| **b > 0) else {
            continue;
        };
        *last -= 1;
        let from: Vec<Bytes> = db
            .entries_from(&key, &below)
            .map(|e| e.unwrap().key)
            .collect();
        assert_eq!(from, all[i..]);
    }
    assert_eq!(db.entries_from(&key, &[0xff; 20]).count(), 0);
}

#[test]
fn a_file_cut_anywhere_is_an_error_never_a_panic() {
    let Some(bytes) = auger_db() else { return };
    for cut in (0..bytes.len())
        .step_by(512)
        .chain([1, 15, 16, 80, 4095, 4097, 20479])
    {
        let short = bytes[..cut].to_vec();
        let r = Db::from_source(Box::new(short)).and_then(|db| walk(&db));
        let e = r.expect_err(&format!("cut at {cut} read as whole"));
        let msg = e.to_string();
        assert!(
            msg.contains("cut short") || msg.contains("not a bbolt") || msg.contains("corrupt"),
            "cut at {cut}: {msg}"
        );
    }
}

#[test]
fn flipped_bytes_give_errors_or_the_same_keys_never_a_panic() {
    let Some(bytes) = auger_db() else { return };
    // Every byte of every page flipped in turn (20480 files): each read ends, by an error
    // or by entries, and never panics or loops.
    for at in 0..bytes.len() {
        let mut b = bytes.clone();
        b[at] ^= 0xff;
        if let Ok(db) = Db::from_source(Box::new(b)) {
            let _ = walk(&db);
        }
    }
}

#[test]
fn a_foreign_file_is_said_to_be_no_bbolt_file() {
    let e = Db::from_source(Box::new(b"hello, this is a text file\n".repeat(400)))
        .err()
        .unwrap();
    assert!(
        e.to_string().starts_with("not a bbolt database file"),
        "{e}"
    );
    let e = Db::from_source(Box::new(Vec::new())).err().unwrap();
    assert!(e.to_string().contains("empty"), "{e}");
}

#[test]
fn a_torn_first_meta_falls_back_to_the_second() {
    let Some(mut bytes) = auger_db() else { return };
    let good = Db::from_source(Box::new(bytes.clone())).unwrap();
    let other = good.metas()[1].clone().unwrap();
    // The checksum of meta 0 broken: bbolt would open the file at meta 1.
    bytes[0x48] ^= 1;
    let db = Db::from_source(Box::new(bytes)).unwrap();
    assert!(db.metas()[0].as_ref().unwrap_err().contains("checksum"));
    assert_eq!(db.meta(), &other);
    // Meta 1 is an older transaction: pages it names may have been reused since (here its
    // freelist page has): the walk reads or says what is wrong, and never panics.
    if let Err(e) = walk(&db) {
        assert!(e.to_string().starts_with("corrupt bbolt file: page"), "{e}");
    }
}

#[test]
fn fnv1a64_matches_go() {
    // Go: fnv.New64a() over "" and "a".
    assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
    assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
}

#[test]
fn pages_no_walk_reaches_are_counted_once_tracking_is_on() {
    let Some(bytes) = auger_db() else { return };
    let db = Db::from_source(Box::new(bytes)).unwrap();
    assert_eq!(db.unreached_pages(), None, "off until asked for");
    db.track_reached();
    // Pages 2..5 below the high-water mark, none read yet.
    assert_eq!(db.unreached_pages(), Some(db.meta().pgid - 2));
    for (_, b) in db.buckets().unwrap() {
        for e in db.entries(&b) {
            e.unwrap();
        }
    }
    // The root's leaf (page 4, every bucket inline in it) and the `key` bucket's leaf
    // (page 2) are reached; page 3, an empty leaf no tree points at, is not.
    let reached: Vec<u64> = (2..db.meta().pgid)
        .filter(|&p| {
            let bits = db.reached.get().unwrap();
            bits[(p / 64) as usize].load(Ordering::Relaxed) & (1 << (p % 64)) != 0
        })
        .collect();
    assert_eq!(reached, [2, 4]);
    assert_eq!(db.unreached_pages(), Some(1));
    // Turning it on again keeps what was counted.
    db.track_reached();
    assert_eq!(db.unreached_pages(), Some(1));
}
