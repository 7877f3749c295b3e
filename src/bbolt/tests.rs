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

/// Building small bbolt files by hand, page by page, for the shapes a real file never has
/// (cycles, shared pages, forged overflow) and for a tree deep enough to have branch pages.
pub(super) mod build {
    use super::super::page::*;
    use super::super::{fnv1a64, MAGIC, VERSION};

    /// One element of a page being built.
    pub enum Elem<'a> {
        /// A key and value (`flags` 0) or a nested bucket's header (`BUCKET_LEAF_FLAG`).
        Leaf(u32, &'a [u8], Vec<u8>),
        /// A branch element: the first key under the child, and the child's page id.
        Branch(&'a [u8], u64),
    }

    /// `pages` zeroed pages of `ps` bytes.
    pub fn file(ps: usize, pages: usize) -> Vec<u8> {
        vec![0u8; ps * pages]
    }

    /// Writes meta page `id` (0 or 1) with its checksum.
    pub fn meta(f: &mut [u8], ps: usize, id: u64, root: u64, freelist: u64, pgid: u64, txid: u64) {
        let at = id as usize * ps;
        header(f, at, id, META_PAGE, 0, 0);
        let m = at + PAGE_HEADER_SIZE;
        f[m..m + 4].copy_from_slice(&MAGIC.to_le_bytes());
        f[m + 4..m + 8].copy_from_slice(&VERSION.to_le_bytes());
        f[m + 8..m + 12].copy_from_slice(&(ps as u32).to_le_bytes());
        for (o, v) in [(16, root), (24, 0), (32, freelist), (40, pgid), (48, txid)] {
            f[m + o..m + o + 8].copy_from_slice(&v.to_le_bytes());
        }
        reseal(f, at);
    }

    /// Recomputes the checksum of the meta whose page starts at byte `at`.
    pub fn reseal(f: &mut [u8], at: usize) {
        let m = at + PAGE_HEADER_SIZE;
        if f.len() < m + 64 {
            return;
        }
        let sum = fnv1a64(&f[m..m + 56]);
        f[m + 56..m + 64].copy_from_slice(&sum.to_le_bytes());
    }

    pub fn header(f: &mut [u8], at: usize, id: u64, flags: u16, count: u16, overflow: u32) {
        f[at..at + 8].copy_from_slice(&id.to_le_bytes());
        f[at + 8..at + 10].copy_from_slice(&flags.to_le_bytes());
        f[at + 10..at + 12].copy_from_slice(&count.to_le_bytes());
        f[at + 12..at + 16].copy_from_slice(&overflow.to_le_bytes());
    }

    /// The bytes of a page (header, elements, then keys and values), unpadded.
    pub fn page_bytes(id: u64, overflow: u32, elems: &[Elem]) -> Vec<u8> {
        let n = elems.len();
        let leaf = matches!(elems.first(), Some(Elem::Leaf(..)) | None);
        let mut b = vec![0u8; PAGE_HEADER_SIZE + n * LEAF_ELEMENT_SIZE];
        let flags = if leaf { LEAF_PAGE } else { BRANCH_PAGE };
        header(&mut b, 0, id, flags, n as u16, overflow);
        for (i, el) in elems.iter().enumerate() {
            let e = PAGE_HEADER_SIZE + i * LEAF_ELEMENT_SIZE;
            let pos = (b.len() - e) as u32;
            match el {
                Elem::Leaf(fl, k, v) => {
                    for (o, x) in [
                        (0, *fl),
                        (4, pos),
                        (8, k.len() as u32),
                        (12, v.len() as u32),
                    ] {
                        b[e + o..e + o + 4].copy_from_slice(&x.to_le_bytes());
                    }
                    b.extend_from_slice(k);
                    b.extend_from_slice(v);
                }
                Elem::Branch(k, child) => {
                    b[e..e + 4].copy_from_slice(&pos.to_le_bytes());
                    b[e + 4..e + 8].copy_from_slice(&(k.len() as u32).to_le_bytes());
                    b[e + 8..e + 16].copy_from_slice(&child.to_le_bytes());
                    b.extend_from_slice(k);
                }
            }
        }
        b
    }

    /// Writes page `id` (with `overflow` pages after it) into the file.
    pub fn page(f: &mut [u8], ps: usize, id: u64, overflow: u32, elems: &[Elem]) {
        let b = page_bytes(id, overflow, elems);
        assert!(
            b.len() <= ps * (overflow as usize + 1),
            "page {id} does not fit"
        );
        let at = id as usize * ps;
        f[at..at + b.len()].copy_from_slice(&b);
    }

    /// A bucket header naming root page `root`.
    pub fn bucket(root: u64) -> Vec<u8> {
        let mut v = root.to_le_bytes().to_vec();
        v.extend_from_slice(&0u64.to_le_bytes());
        v
    }

    /// An inline bucket: header with root 0, then its leaf page.
    pub fn inline(elems: &[Elem]) -> Vec<u8> {
        let mut v = bucket(0);
        v.extend_from_slice(&page_bytes(0, 0, elems));
        v
    }

    /// A freelist page listing `ids`.
    pub fn freelist(f: &mut [u8], ps: usize, id: u64, ids: &[u64]) {
        let at = id as usize * ps;
        header(f, at, id, FREELIST_PAGE, ids.len() as u16, 0);
        for (i, p) in ids.iter().enumerate() {
            let o = at + PAGE_HEADER_SIZE + 8 * i;
            f[o..o + 8].copy_from_slice(&p.to_le_bytes());
        }
    }

    /// Page size of [`tree`].
    pub const TREE_PS: usize = 1024;

    /// A 15-page file of 1 KiB pages with every kind of page: the root bucket's leaf (3)
    /// names bucket `big` (a three-level tree: branch 4 over branches 5 and 6 over leaves
    /// 7–10, leaf 10 holding a 1500-byte value on an overflow page, 11), an inline bucket
    /// `inl`, and bucket `small` (leaf 12) with a nested bucket (leaf 13); the freelist (2)
    /// lists page 14.
    pub fn tree() -> Vec<u8> {
        let ps = TREE_PS;
        let mut f = file(ps, 15);
        meta(&mut f, ps, 0, 3, 2, 15, 4);
        meta(&mut f, ps, 1, 3, 2, 15, 3);
        freelist(&mut f, ps, 2, &[14]);
        let leaf = |k: &'static [u8]| Elem::Leaf(0, k, k.repeat(3));
        page(
            &mut f,
            ps,
            3,
            0,
            &[
                Elem::Leaf(BUCKET_LEAF_FLAG, b"big", bucket(4)),
                Elem::Leaf(
                    BUCKET_LEAF_FLAG,
                    b"inl",
                    inline(&[leaf(b"i1"), leaf(b"i2")]),
                ),
                Elem::Leaf(BUCKET_LEAF_FLAG, b"small", bucket(12)),
            ],
        );
        page(
            &mut f,
            ps,
            4,
            0,
            &[Elem::Branch(b"a", 5), Elem::Branch(b"m", 6)],
        );
        page(
            &mut f,
            ps,
            5,
            0,
            &[Elem::Branch(b"a", 7), Elem::Branch(b"f", 8)],
        );
        page(
            &mut f,
            ps,
            6,
            0,
            &[Elem::Branch(b"m", 9), Elem::Branch(b"t", 10)],
        );
        page(&mut f, ps, 7, 0, &[leaf(b"a"), leaf(b"b"), leaf(b"c")]);
        page(&mut f, ps, 8, 0, &[leaf(b"f"), leaf(b"g")]);
        page(&mut f, ps, 9, 0, &[leaf(b"m"), leaf(b"n"), leaf(b"p")]);
        page(
            &mut f,
            ps,
            10,
            1,
            &[leaf(b"t"), Elem::Leaf(0, b"z", vec![b'Z'; 1500])],
        );
        page(
            &mut f,
            ps,
            12,
            0,
            &[
                Elem::Leaf(BUCKET_LEAF_FLAG, b"nested", bucket(13)),
                leaf(b"s"),
            ],
        );
        page(&mut f, ps, 13, 0, &[leaf(b"deep")]);
        f
    }
}

use build::Elem;

#[test]
fn the_built_tree_reads_back_whole() {
    let db = Db::from_source(Box::new(build::tree())).unwrap();
    let rows = walk(&db).unwrap();
    let keys: Vec<String> = rows
        .iter()
        .map(|(b, k, _)| {
            format!(
                "{}/{}",
                String::from_utf8_lossy(b),
                String::from_utf8_lossy(k)
            )
        })
        .collect();
    assert_eq!(
        keys,
        [
            "big/a",
            "big/b",
            "big/c",
            "big/f",
            "big/g",
            "big/m",
            "big/n",
            "big/p",
            "big/t",
            "big/z",
            "inl/i1",
            "inl/i2",
            "small/nested",
            "small/s"
        ]
    );
    let big = db.bucket(b"big").unwrap().unwrap();
    let mut it = db.entries(&big);
    assert_eq!(it.by_ref().count(), 10);
    assert_eq!(
        it.stats(),
        cursor::TreeStats {
            branch_pages: 3,
            leaf_pages: 4,
            overflow_pages: 1
        }
    );
    assert_eq!(db.get(&big, b"z").unwrap().unwrap().len(), 1500);
    let from: Vec<Bytes> = db
        .entries_from(&big, b"h")
        .map(|e| e.unwrap().key)
        .collect();
    assert_eq!(
        from,
        ["m", "n", "p", "t", "z"].map(|s| Bytes::from_static(s.as_bytes()))
    );
    assert_eq!(&db.last_entry(&big).unwrap().unwrap().key[..], b"z");
    let small = db.bucket(b"small").unwrap().unwrap();
    let nested = db.entries(&small).next().unwrap().unwrap();
    let nested = Bucket::from_value(&nested.value, 12).unwrap();
    assert_eq!(
        &db.entries(&nested).next().unwrap().unwrap().key[..],
        b"deep"
    );
    assert_eq!(db.freelist().unwrap(), Some(vec![14]));
}

/// The file of [`build::tree`] with page `id` rewritten.
fn tree_with(id: u64, overflow: u32, elems: &[Elem]) -> Db<Vec<u8>> {
    let mut f = build::tree();
    let ps = build::TREE_PS;
    f[id as usize * ps..(id as usize + 1) * ps].fill(0);
    build::page(&mut f, ps, id, overflow, elems);
    Db::from_source(Box::new(f)).unwrap()
}

#[test]
fn a_branch_pointing_at_itself_ends_in_an_error() {
    // Its first child is itself: the descent stops at the depth limit.
    let db = tree_with(4, 0, &[Elem::Branch(b"a", 4), Elem::Branch(b"m", 6)]);
    let big = db.bucket(b"big").unwrap().unwrap();
    let e = db.entries(&big).find_map(Result::err).unwrap().to_string();
    assert!(e.contains("deeper than") || e.contains("twice"), "{e}");
    let e = db.entries_from(&big, b"b").find_map(Result::err).unwrap();
    assert!(e.to_string().contains("corrupt"), "{e}");
    // Its last child is itself: `last_entry` stops at the depth limit.
    let db = tree_with(4, 0, &[Elem::Branch(b"a", 5), Elem::Branch(b"m", 4)]);
    let big = db.bucket(b"big").unwrap().unwrap();
    let e = db.last_entry(&big).unwrap_err().to_string();
    assert!(e.contains("deeper than 64 pages"), "{e}");
    // The walk reads page 5's leaves, then climbs back into page 4 again and again.
    let n = db.entries(&big).count();
    assert!(n <= 15 * 5, "{n} entries from a 15-page file");
    assert!(db.entries(&big).any(|e| e.is_err()));
}

#[test]
fn a_branch_pointing_back_at_an_ancestor_ends_in_an_error() {
    // Page 6 (under 4) points back at 4.
    let db = tree_with(6, 0, &[Elem::Branch(b"m", 9), Elem::Branch(b"t", 4)]);
    let big = db.bucket(b"big").unwrap().unwrap();
    let all: Vec<_> = db.entries(&big).collect();
    assert!(all.last().unwrap().is_err(), "{:?}", all.last());
    assert!(all.len() < 100, "{} entries", all.len());
}

#[test]
fn branches_sharing_pages_are_not_walked_exponentially() {
    // 60 branch pages, each with two elements that both name the next, over one leaf:
    // 2^60 paths to the leaf. The walk stops once it has read as many pages as the file has.
    let ps = 1024;
    let n = 64u64;
    let mut f = build::file(ps, n as usize);
    build::meta(&mut f, ps, 0, 2, NO_FREELIST, n, 1);
    build::meta(&mut f, ps, 1, 2, NO_FREELIST, n, 0);
    build::page(
        &mut f,
        ps,
        2,
        0,
        &[Elem::Leaf(page::BUCKET_LEAF_FLAG, b"b", build::bucket(3))],
    );
    for id in 3..n - 1 {
        build::page(
            &mut f,
            ps,
            id,
            0,
            &[Elem::Branch(b"a", id + 1), Elem::Branch(b"b", id + 1)],
        );
    }
    build::page(&mut f, ps, n - 1, 0, &[Elem::Leaf(0, b"k", b"v".to_vec())]);
    let db = Db::from_source(Box::new(f)).unwrap();
    let b = db.bucket(b"b").unwrap().unwrap();
    let mut it = db.entries(&b);
    let got: Vec<_> = it.by_ref().collect();
    let e = got.last().unwrap().as_ref().unwrap_err().to_string();
    assert!(
        e.contains("as many pages as the file has in use (64)"),
        "{e}"
    );
    let s = it.stats();
    assert!(s.branch_pages + s.leaf_pages <= n, "{s:?}");
    assert!(got.len() <= n as usize, "{} entries", got.len());
}

/// A source that claims `len` bytes and holds `head`; past it, every byte reads as zero
/// (a sparse file).
struct Sparse {
    head: Vec<u8>,
    len: u64,
}

impl ReadAt for Sparse {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.len)
            .ok_or(std::io::ErrorKind::UnexpectedEof)?;
        buf.fill(0);
        let head = self.head.len() as u64;
        if offset < head {
            let n = (head.min(end) - offset) as usize;
            buf[..n].copy_from_slice(&self.head[offset as usize..offset as usize + n]);
        }
        Ok(())
    }
    fn byte_len(&self) -> std::io::Result<u64> {
        Ok(self.len)
    }
}

#[test]
fn a_forged_overflow_is_refused_before_anything_is_allocated() {
    // A 32 TiB sparse file whose meta says every page is in use, and whose bucket page
    // claims 2^32 - 1 overflow pages (16 TiB): within the file, so only the cap on one
    // page's size stands between the header and the allocation.
    let ps = 4096usize;
    let len: u64 = 1 << 45;
    let pgid = len / ps as u64;
    let mut f = build::file(ps, 4);
    build::meta(&mut f, ps, 0, 2, NO_FREELIST, pgid, 1);
    build::meta(&mut f, ps, 1, 2, NO_FREELIST, pgid, 0);
    build::page(
        &mut f,
        ps,
        2,
        0,
        &[Elem::Leaf(page::BUCKET_LEAF_FLAG, b"b", build::bucket(3))],
    );
    build::page(
        &mut f,
        ps,
        3,
        u32::MAX,
        &[Elem::Leaf(0, b"k", b"v".to_vec())],
    );
    let db = Db::from_source(Box::new(Sparse {
        head: f.clone(),
        len,
    }))
    .unwrap();
    let b = db.bucket(b"b").unwrap().unwrap();
    let e = db.entries(&b).next().unwrap().unwrap_err().to_string();
    assert!(
        e.contains("4294967295 overflow pages") && e.contains("more than the 1073741824 bytes"),
        "{e}"
    );
    // In an ordinary file the same header runs past the pages in use.
    build::meta(&mut f, ps, 0, 2, NO_FREELIST, 4, 1);
    build::meta(&mut f, ps, 1, 2, NO_FREELIST, 4, 0);
    let db = Db::from_source(Box::new(f.clone())).unwrap();
    let b = db.bucket(b"b").unwrap().unwrap();
    let e = db.entries(&b).next().unwrap().unwrap_err().to_string();
    assert!(
        e.contains("overflow pages run past the 4 pages in use"),
        "{e}"
    );
    // And past the end of a file whose meta claims more pages than it holds.
    build::meta(&mut f, ps, 0, 2, NO_FREELIST, 40, 1);
    let e = Db::from_source(Box::new(f)).err().unwrap().to_string();
    assert!(e.contains("cut short"), "{e}");
}

#[test]
fn a_freelist_naming_its_own_page_or_a_meta_is_refused() {
    let mut f = build::tree();
    build::freelist(&mut f, build::TREE_PS, 2, &[14, 2]);
    let db = Db::from_source(Box::new(f.clone())).unwrap();
    let e = db.freelist().unwrap_err().to_string();
    assert!(e.contains("names page 2, one of its own pages"), "{e}");
    build::freelist(&mut f, build::TREE_PS, 2, &[1]);
    let db = Db::from_source(Box::new(f)).unwrap();
    let e = db.freelist().unwrap_err().to_string();
    assert!(e.contains("outside the pages in use"), "{e}");
}

#[test]
fn an_inline_bucket_whose_page_is_a_branch_is_refused() {
    let mut v = build::bucket(0);
    v.extend_from_slice(&build::page_bytes(0, 0, &[Elem::Branch(b"a", 7)]));
    let e = Bucket::from_value(&Bytes::from(v), 3)
        .unwrap_err()
        .to_string();
    assert!(e.contains("inline bucket's page is a branch"), "{e}");
}

#[test]
fn elements_are_reached_only_by_checked_offsets() {
    let p = Page::new(
        Bytes::from(build::page_bytes(
            9,
            0,
            &[Elem::Leaf(0, b"k", b"v".to_vec())],
        )),
        9,
    )
    .unwrap();
    // An index past the count (a caller's mistake, or a count read elsewhere).
    assert!(p.leaf(1).is_err() && p.leaf(usize::MAX).is_err() && p.branch(7).is_err());
    // pos and ksize at their largest: the sums are checked, not wrapped.
    let mut b = build::page_bytes(9, 0, &[Elem::Leaf(0, b"k", b"v".to_vec())]);
    b[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = Page::new(Bytes::from(b.clone()), 9)
        .unwrap()
        .leaf(0)
        .unwrap_err();
    assert!(e.to_string().contains("runs past"), "{e}");
    b[20..24].copy_from_slice(&16u32.to_le_bytes());
    b[24..28].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = Page::new(Bytes::from(b), 9).unwrap().leaf(0).unwrap_err();
    assert!(e.to_string().contains("runs past"), "{e}");
}

#[test]
fn a_directory_is_said_to_be_unreadable_not_foreign() {
    let dir = tempfile::tempdir().unwrap();
    let e = Db::open(dir.path()).err().unwrap();
    assert!(matches!(e, BoltError::Io(_)), "{e}");
}

/// A file in memory that counts the reads made of it and the bytes they ask for, and fails
/// every read after `budget` of them (so that a walk that would never end fails the test
/// instead of hanging it).
struct Counted {
    bytes: Vec<u8>,
    reads: std::rc::Rc<std::cell::Cell<(u64, u64)>>,
    budget: u64,
}

impl ReadAt for Counted {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let (n, b) = self.reads.get();
        self.reads.set((n + 1, b + buf.len() as u64));
        if n >= self.budget {
            return Err(std::io::Error::other("read budget spent"));
        }
        self.bytes.read_exact_at(buf, offset)
    }
    fn byte_len(&self) -> std::io::Result<u64> {
        Ok(self.bytes.len() as u64)
    }
}

/// Reads every part of `db` that the API reaches: the top-level buckets, every entry of
/// each (and of nested buckets, three levels down), `entries_from(seek)`, `get(seek)`,
/// `last_entry`, the freelist. Errors end a part and the walk goes on with the next.
/// Checks that each part reads no more than it may — a walk of a tree at most each page in
/// use once, `last_entry` one page per level down to the depth limit, two reads per page
/// (the page and its overflow) — and yields no more entries than the bytes it read hold
/// elements. Returns the entries seen.
fn walk_bounded(db: &Db<Counted>, seek: &[u8], reads: &std::cell::Cell<(u64, u64)>) -> u64 {
    let pgid = db.meta().pgid;
    let tree = 2 * pgid;
    let path = 2 * (MAX_DEPTH as u64 + 1);
    let mut seen = 0u64;
    let mut part = |what: &str, max_reads: u64, f: &mut dyn FnMut() -> u64| {
        let (n0, b0) = reads.get();
        let entries = f();
        let (n1, b1) = reads.get();
        assert!(
            n1 - n0 <= max_reads,
            "{what}: {} reads in a file of {pgid} pages",
            n1 - n0
        );
        // Each entry is a 16-byte element of a page read (or of an inline page, which
        // the bucket's value holds: at most one page's worth).
        let room = (b1 - b0) / 16 + (db.meta().page_size as u64) / 16 + 1;
        assert!(
            entries <= room,
            "{what}: {entries} entries from {} bytes",
            b1 - b0
        );
        seen += entries;
    };
    let buckets = db.buckets().unwrap_or_default();
    part("the root bucket", tree, &mut || {
        db.entries(&db.root()).count() as u64
    });
    let mut todo: Vec<(Bucket, usize)> = buckets.into_iter().map(|(_, b)| (b, 0)).collect();
    while let Some((b, depth)) = todo.pop() {
        part("a bucket", tree, &mut || {
            let mut n = 0;
            for e in db.entries(&b) {
                let Ok(e) = e else { break };
                n += 1;
                if depth < 3 && e.flags & page::BUCKET_LEAF_FLAG != 0 {
                    if let Ok(nb) = Bucket::from_value(&e.value, 0) {
                        todo.push((nb, depth + 1));
                    }
                }
            }
            n
        });
        part("entries_from", tree, &mut || {
            db.entries_from(&b, seek).count() as u64
        });
        part("get", tree, &mut || {
            db.get(&b, seek).map_or(0, |v| v.is_some() as u64)
        });
        part("last_entry", path, &mut || {
            db.last_entry(&b).map_or(0, |e| e.is_some() as u64)
        });
    }
    part("the freelist", 2, &mut || {
        let _ = db.freelist();
        0
    });
    seen
}

/// One damage done to a file.
#[derive(Clone, Debug)]
enum Damage {
    /// XOR a byte (the position taken modulo the length).
    Flip(usize, u8),
    /// Cut the file to this length (modulo the length + 1).
    Cut(usize),
    /// Write `value` over a page header's field 0 id, 1 flags, 2 count, 3 overflow.
    Header(usize, u8, u64),
    /// Write a u32 over word 0–3 of element `i` of a page (leaf: flags, pos, ksize,
    /// vsize; branch: pos, ksize, and the child's page id's halves).
    Element(usize, u16, u8, u32),
    /// Point branch element `i` of a page at a page (itself, an ancestor, a meta, ...).
    Child(usize, u16, u64),
    /// Write `value` over meta `m`'s field 0 page size, 1 root, 2 freelist, 3 pgid,
    /// 4 txid, and reseal its checksum.
    Meta(usize, u8, u64),
}

/// Values a forger would try: small page ids and counts, the edges of each width.
fn forged() -> impl proptest::strategy::Strategy<Value = u64> {
    use proptest::prelude::*;
    prop_oneof![
        4 => 0u64..20,
        1 => Just(0xFFFF),
        1 => Just(u32::MAX as u64),
        1 => Just(u64::MAX),
        1 => Just(1 << 31),
        2 => any::<u64>(),
    ]
}

fn damage() -> impl proptest::strategy::Strategy<Value = Damage> {
    use proptest::prelude::*;
    prop_oneof![
        4 => (any::<usize>(), 1u8..).prop_map(|(a, m)| Damage::Flip(a, m)),
        1 => any::<usize>().prop_map(Damage::Cut),
        3 => (0usize..32, 0u8..4, forged()).prop_map(|(p, f, v)| Damage::Header(p, f, v)),
        3 => (0usize..32, 0u16..6, 0u8..4, forged())
            .prop_map(|(p, i, w, v)| Damage::Element(p, i, w, v as u32)),
        3 => (0usize..32, 0u16..4, forged()).prop_map(|(p, i, v)| Damage::Child(p, i, v)),
        2 => (0usize..2, 0u8..5, forged()).prop_map(|(m, f, v)| Damage::Meta(m, f, v)),
    ]
}

fn apply(f: &mut Vec<u8>, ps: usize, d: &Damage) {
    let pages = f.len().div_ceil(ps).max(1);
    let put = |f: &mut Vec<u8>, at: usize, v: &[u8]| {
        if let Some(dst) = f.get_mut(at..at + v.len()) {
            dst.copy_from_slice(v);
        }
    };
    match *d {
        Damage::Flip(at, m) if !f.is_empty() => {
            let n = f.len();
            f[at % n] ^= m;
        }
        Damage::Flip(..) => {}
        Damage::Cut(to) => f.truncate(to % (f.len() + 1)),
        Damage::Header(p, field, v) => {
            let at = (p % pages) * ps;
            match field {
                0 => put(f, at, &v.to_le_bytes()),
                1 => put(f, at + 8, &(v as u16).to_le_bytes()),
                2 => put(f, at + 10, &(v as u16).to_le_bytes()),
                _ => put(f, at + 12, &(v as u32).to_le_bytes()),
            }
        }
        Damage::Element(p, i, w, v) => {
            let at = (p % pages) * ps + 16 + i as usize * 16 + w as usize * 4;
            put(f, at, &v.to_le_bytes());
        }
        Damage::Child(p, i, v) => {
            let at = (p % pages) * ps + 16 + i as usize * 16 + 8;
            put(f, at, &v.to_le_bytes());
        }
        Damage::Meta(m, field, v) => {
            let at = m * ps;
            let o = at + 16 + [8, 16, 32, 40, 48][field as usize % 5];
            if field == 0 {
                put(f, o, &(v as u32).to_le_bytes());
            } else {
                put(f, o, &v.to_le_bytes());
            }
            build::reseal(f, at);
        }
    }
}

/// The golden auger db, read once.
fn auger_bytes() -> Option<&'static [u8]> {
    static DB: std::sync::OnceLock<Option<Vec<u8>>> = std::sync::OnceLock::new();
    DB.get_or_init(auger_db).as_deref()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

    /// The golden etcd file and the hand-built tree, damaged one to six times: opening
    /// and walking all of each never panics, and every part of the walk stays within its
    /// bound of reads (a file that looped would spend the read budget and fail here).
    #[test]
    fn damaged_files_are_walked_within_bounds(
        tree in proptest::bool::ANY,
        damages in proptest::collection::vec(damage(), 1..7),
        seek in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..20),
    ) {
        let (mut f, ps) = if tree {
            (build::tree(), build::TREE_PS)
        } else {
            let Some(b) = auger_bytes() else { return Ok(()) };
            (b.to_vec(), 4096)
        };
        for d in &damages {
            apply(&mut f, ps, d);
        }
        let reads = std::rc::Rc::new(std::cell::Cell::new((0, 0)));
        // Far more than any bounded walk of a 20 KiB file needs; a loop spends it.
        let src = Counted { bytes: f, reads: reads.clone(), budget: 1 << 20 };
        if let Ok(db) = Db::from_source(Box::new(src)) {
            walk_bounded(&db, &seek, &reads);
        }
        proptest::prop_assert!(reads.get().0 < 1 << 20, "the read budget was spent");
    }
}

#[test]
fn the_bounded_walk_sees_every_entry_of_a_sound_file() {
    // The bounds of the property above are not so tight that a sound file breaks them,
    // and the walk does reach every entry (10 + 2 + 2 + 1 nested, plus the three buckets,
    // entries_from, get and last_entry of each).
    let reads = std::rc::Rc::new(std::cell::Cell::new((0, 0)));
    let src = Counted {
        bytes: build::tree(),
        reads: reads.clone(),
        budget: 1 << 20,
    };
    let db = Db::from_source(Box::new(src)).unwrap();
    let seen = walk_bounded(&db, b"m", &reads);
    // root 3; big 10 + from "m" 5 + get 1 + last 1; inl 2 + 0 + 0 + 1;
    // small 2 + 2 + 0 + 1; nested 1 + 0 + 0 + 1.
    assert_eq!(seen, 3 + 17 + 3 + 5 + 2);
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
