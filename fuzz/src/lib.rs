//! What the fuzz targets do with their input, as plain functions: the libFuzzer targets
//! (`fuzz_targets/`) call them, and regscope's own tests (`tests/offline/bbolt_fuzz.rs`,
//! which includes this file) call them on mutated real files, so the same code runs in CI
//! without a nightly toolchain.
//!
//! Both walk everything the readers offer and panic on what must never happen: a read
//! count past the bound a sound walk keeps to (a loop or a blow-up), more entries than the
//! bytes read can hold. Errors from damaged input are expected and ignored.

use std::cell::Cell;
use std::path::Path;
use std::rc::Rc;

use regscope::bbolt::{page::BUCKET_LEAF_FLAG, Bucket, Db, ReadAt, MAX_DEPTH};
use regscope::source::etcd_db::{analyze_status, state_at, EtcdDb};

/// Reads and bytes asked for so far.
type Tally = Rc<Cell<(u64, u64)>>;

/// The input as a file, counting the reads made of it.
struct Counted {
    bytes: Vec<u8>,
    tally: Tally,
}

impl ReadAt for Counted {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let (n, b) = self.tally.get();
        self.tally.set((n + 1, b + buf.len() as u64));
        self.bytes.read_exact_at(buf, offset)
    }
    fn byte_len(&self) -> std::io::Result<u64> {
        Ok(self.bytes.len() as u64)
    }
}

fn open(data: &[u8]) -> Option<(Db<Counted>, Tally)> {
    let tally = Tally::default();
    let src = Counted {
        bytes: data.to_vec(),
        tally: tally.clone(),
    };
    Db::from_source(Box::new(src)).ok().map(|db| (db, tally))
}

/// Runs `f` (one part of a walk, returning the entries it saw) and checks its cost: at
/// most `max_reads` reads, and no more entries than 16-byte elements in the bytes read
/// (plus one inline page).
fn bounded(
    db: &Db<Counted>,
    tally: &Tally,
    what: &str,
    max_reads: u64,
    f: impl FnOnce() -> u64,
) -> u64 {
    let pgid = db.meta().pgid;
    let (n0, b0) = tally.get();
    let entries = f();
    let (n1, b1) = tally.get();
    let reads = n1 - n0;
    assert!(
        reads <= max_reads,
        "{what}: {reads} reads in a file of {pgid} pages"
    );
    let room = (b1 - b0) / 16 + db.meta().page_size as u64 / 16 + 1;
    assert!(
        entries <= room,
        "{what}: {entries} entries from {} bytes read",
        b1 - b0
    );
    entries
}

/// Reads a walk of one tree may make: each page in use at most once, two reads per page
/// (the page and its overflow).
fn tree_reads(db: &Db<Counted>) -> u64 {
    2 * db.meta().pgid
}

/// Reads a walk down one path may make: a page per level to the depth limit.
const PATH_READS: u64 = 2 * (MAX_DEPTH as u64 + 1);

/// Every part of a bbolt file the reader reaches from `data`: the metas, each top-level
/// bucket's entries (and nested buckets', three levels down), a seek to a key taken from
/// the input, `get`, `last_entry`, the freelist. Returns the entries seen.
pub fn bbolt_pages(data: &[u8]) -> u64 {
    let Some((db, tally)) = open(data) else {
        return 0;
    };
    walk(&db, &tally, seek_key(data))
}

/// A key to seek to, from the input's last bytes (so the fuzzer steers it).
fn seek_key(data: &[u8]) -> &[u8] {
    &data[data.len().saturating_sub(17)..]
}

fn walk(db: &Db<Counted>, tally: &Tally, seek: &[u8]) -> u64 {
    let _ = db.metas();
    let tree = tree_reads(db);
    let mut seen = bounded(db, tally, "the root bucket", tree, || {
        db.entries(&db.root()).count() as u64
    });
    let mut todo: Vec<(Bucket, usize)> = match db.buckets() {
        Ok(b) => b.into_iter().map(|(_, b)| (b, 0)).collect(),
        Err(_) => Vec::new(),
    };
    while let Some((b, depth)) = todo.pop() {
        seen += bounded(db, tally, "a bucket", tree, || {
            let mut n = 0;
            for e in db.entries(&b) {
                let Ok(e) = e else { break };
                n += 1;
                if depth < 3 && e.flags & BUCKET_LEAF_FLAG != 0 {
                    if let Ok(nb) = Bucket::from_value(&e.value, 0) {
                        todo.push((nb, depth + 1));
                    }
                }
            }
            n
        });
        seen += bounded(db, tally, "entries_from", tree, || {
            db.entries_from(&b, seek).count() as u64
        });
        seen += bounded(db, tally, "get", tree, || {
            db.get(&b, seek).map_or(0, |v| v.is_some() as u64)
        });
        seen += bounded(db, tally, "last_entry", PATH_READS, || {
            db.last_entry(&b).map_or(0, |e| e.is_some() as u64)
        });
    }
    bounded(db, tally, "the freelist", 2, || {
        let _ = db.freelist();
        0
    });
    seen
}

/// [`bbolt_pages`], then etcd's schema over the same bytes: the meta bucket, every
/// version from revision 0, `etcdctl snapshot status`'s walk, the head, the leases,
/// members and alarms, and the state at the head as a list. Returns the versions seen.
pub fn etcd_db(data: &[u8]) -> u64 {
    bbolt_pages(data);
    let Some((db, tally)) = open(data) else {
        return 0;
    };
    let pgid = db.meta().pgid;
    let Ok(edb) = EtcdDb::from_db(db, Path::new("fuzz.db")) else {
        return 0;
    };
    let (n0, _) = tally.get();
    let versions = edb.versions_from(0).take_while(Result::is_ok).count() as u64;
    let mut each = 0u64;
    let status = analyze_status(&edb, |_, _| each += 1);
    if let Ok(st) = &status {
        assert_eq!(st.total_size, pgid * edb.bolt().meta().page_size as u64);
        assert!(
            st.live_keys <= each,
            "{} live keys of {each} versions",
            st.live_keys
        );
    }
    let head = edb.head();
    let _ = edb.leases();
    let _ = edb.members();
    let _ = edb.alarms();
    let _ = edb.auth_enabled();
    if let Ok(head) = head {
        let _ = edb.check_revision(head);
        let mut listed = 0u64;
        let _ = state_at(&edb, head, b"", |o| {
            if let regscope::model::Observation::ListPage { kvs } = o {
                listed += kvs.len() as u64;
            }
        });
        // The list hands on versions the same walk from revision 0 read.
        assert!(
            listed <= versions,
            "{listed} keys listed of {versions} versions"
        );
    }
    // Since opening: tree walks (versions, status's one per bucket, leases, members,
    // alarms, auth, the list's two) and walks down one path (head three times).
    let (n1, _) = tally.get();
    let walks = 7 + edb.buckets().len() as u64;
    assert!(
        n1 - n0 <= walks * 2 * pgid + 3 * PATH_READS,
        "{} reads in a file of {pgid} pages",
        n1 - n0
    );
    versions
}
