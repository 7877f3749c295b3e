//! A read-only reader of bbolt files, the B+tree file etcd keeps its backend in (`member/snap/db`,
//! and what `etcdctl snapshot save` writes). Only what reading needs: the two meta pages,
//! branch and leaf pages with their overflow, nested and inline buckets, the freelist.
//!
//! Facts from etcd-io/bbolt (`internal/common/{page,meta,bucket}.go`, `db.go`, `cursor.go`):
//! - the file is pages of `page_size` bytes (the OS page size when it was created, 4096 on
//!   x86-64); pages 0 and 1 are meta pages, each written by alternate transactions;
//! - a meta (after the 16-byte page header) is `magic u32 = 0xED0CDAED, version u32 = 2,
//!   page_size u32, flags u32, root {pgid u64, sequence u64}, freelist pgid u64, pgid u64
//!   (the high-water mark: pages beyond it are unused), txid u64, checksum u64`, the
//!   checksum being FNV-1a 64 of the 56 bytes before it; bbolt opens the valid meta with
//!   the larger txid;
//! - a bucket's value is `root pgid u64, sequence u64`; root 0 means an inline bucket whose
//!   leaf page follows the header inside the value;
//! - `freelist == u64::MAX` means the freelist is not written (`NoFreelistSync`).
//!
//! The reader never maps the file and never takes bbolt's `flock`: it reads pages with
//! positioned reads (`pread`), so the page cache, not regscope, holds what it read, and an
//! etcd holding the file is never stalled. Every page id, offset and length read from the
//! file is checked before use: a corrupt, truncated or foreign file is a [`BoltError`],
//! never a panic (see `fuzz/` and the tests).

pub mod cursor;
pub mod page;

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use bytes::Bytes;

pub use cursor::Entries;
use page::{corrupt, u32_at, u64_at, FREELIST_PAGE, META_PAGE, PAGE_HEADER_SIZE};
pub use page::{LeafElement, Page, PageHeader};

/// bbolt's magic number (`common.Magic`).
pub const MAGIC: u32 = 0xED0C_DAED;
/// The file format version bbolt reads and writes (`common.Version`).
pub const VERSION: u32 = 2;
/// A meta's `freelist` when the freelist is not kept in the file (`common.PgidNoFreelist`).
pub const NO_FREELIST: u64 = u64::MAX;
/// Deepest tree the reader follows: a B+tree of 4 KiB pages this deep would hold far more
/// keys than any file; deeper means a page points back up the tree.
pub const MAX_DEPTH: usize = 64;
/// Most bytes one page with its overflow may take in memory: a larger claim is refused
/// before anything is allocated. etcd refuses a request over `--max-request-bytes` (1.5 MiB
/// by default) and bbolt splits a node of more than four elements once it outgrows a page
/// (`node.splitTwo` in bbolt's `node.go`), so etcd's pages stay within a few MiB; its
/// freelist takes 8 bytes per free page (16 MiB for every free page of an 8 GiB file, etcd's
/// largest suggested quota).
pub const MAX_PAGE_BYTES: u64 = 1 << 30;
/// Page sizes tried for the second meta when the first is unreadable (bbolt's
/// `getPageSizeFromSecondMeta` tries 1 KiB to 16 MiB).
pub const PAGE_SIZES: [u64; 15] = [
    1 << 10,
    1 << 11,
    1 << 12,
    1 << 13,
    1 << 14,
    1 << 15,
    1 << 16,
    1 << 17,
    1 << 18,
    1 << 19,
    1 << 20,
    1 << 21,
    1 << 22,
    1 << 23,
    1 << 24,
];

/// What can go wrong reading a bbolt file.
#[derive(Debug, thiserror::Error)]
pub enum BoltError {
    /// Reading failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Neither meta page is a bbolt meta: not a bbolt file at all.
    #[error("not a bbolt database file (neither meta page holds bbolt's magic number with a valid checksum: {0})")]
    NotBolt(String),
    /// A page is (partly) beyond the end of the file.
    #[error("the file is cut short: page {page} ends at byte {end}, the file has {len} bytes")]
    Truncated { page: u64, end: u64, len: u64 },
    /// A page's content contradicts the format.
    #[error("corrupt bbolt file: page {page}: {what}")]
    Corrupt { page: u64, what: String },
}

/// Where a [`Db`] reads bytes from: a file by positioned reads, or bytes in memory (tests
/// and the fuzz target).
pub trait ReadAt {
    /// Fills `buf` from byte `offset`; fails when the source ends first.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()>;
    /// Length in bytes.
    fn byte_len(&self) -> std::io::Result<u64>;
}

impl ReadAt for File {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        FileExt::read_exact_at(self, buf, offset)
    }
    fn byte_len(&self) -> std::io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

impl ReadAt for [u8] {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        match start
            .checked_add(buf.len())
            .and_then(|end| self.get(start..end))
        {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(std::io::ErrorKind::UnexpectedEof.into()),
        }
    }
    fn byte_len(&self) -> std::io::Result<u64> {
        Ok(<[u8]>::len(self) as u64)
    }
}

impl ReadAt for Vec<u8> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.as_slice().read_exact_at(buf, offset)
    }
    fn byte_len(&self) -> std::io::Result<u64> {
        Ok(self.as_slice().len() as u64)
    }
}

/// A bucket: the root of its B+tree, or its inline leaf page.
#[derive(Clone, Debug)]
pub struct Bucket {
    /// Root page id, 0 for an inline bucket.
    pub root: u64,
    /// The bucket's sequence counter (`Bucket.Sequence`).
    pub sequence: u64,
    /// The inline bucket's leaf page (when `root` is 0).
    pub inline: Option<Page>,
}

impl Bucket {
    /// Reads a bucket from a leaf value: its 16-byte header and, when inline, its page.
    /// `at` is the page the value sits on, for errors.
    pub fn from_value(value: &Bytes, at: u64) -> Result<Bucket, BoltError> {
        let root = u64_at(value, 0).ok_or_else(|| corrupt(at, "bucket header cut short"))?;
        let sequence = u64_at(value, 8).ok_or_else(|| corrupt(at, "bucket header cut short"))?;
        let inline = if root == 0 {
            let p = Page::new(value.slice(16..), at)?;
            // bbolt writes a bucket inline only when its root is a leaf (`Bucket.inlineable`)
            // and reads no page from a bucket whose root is 0 (`Bucket.pageNode`).
            if !p.is_leaf() {
                return Err(corrupt(at, "an inline bucket's page is a branch page"));
            }
            Some(p)
        } else {
            None
        };
        Ok(Bucket {
            root,
            sequence,
            inline,
        })
    }
}

/// One meta page as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    /// Bytes per page.
    pub page_size: u32,
    /// The meta's flags (unused by bbolt today).
    pub flags: u32,
    /// The root bucket's root page (0: inline, never in practice).
    pub root: u64,
    /// The root bucket's sequence.
    pub sequence: u64,
    /// The freelist's page, [`NO_FREELIST`] when it is not kept in the file.
    pub freelist: u64,
    /// The high-water mark: pages `0..pgid` are in use or free; the file may be longer.
    pub pgid: u64,
    /// The transaction that wrote this meta.
    pub txid: u64,
}

impl Meta {
    /// Parses and checks the meta in the page bytes `b` (header included): magic, version,
    /// FNV-1a 64 checksum, a page size bbolt could have written. Errors: what is wrong, in
    /// words.
    pub fn parse(b: &[u8]) -> Result<Meta, String> {
        let m = b
            .get(PAGE_HEADER_SIZE..PAGE_HEADER_SIZE + 64)
            .ok_or("cut short")?;
        let flags = u16::from_le_bytes([b[8], b[9]]);
        if flags != META_PAGE {
            return Err(format!("page flags {flags:#06x}, not a meta page"));
        }
        let magic = u32_at(m, 0).unwrap_or(0);
        if magic != MAGIC {
            return Err(format!("magic {magic:#010x}"));
        }
        let version = u32_at(m, 4).unwrap_or(0);
        if version != VERSION {
            return Err(format!("format version {version}, bbolt writes {VERSION}"));
        }
        let stored = u64_at(m, 56).unwrap_or(0);
        if fnv1a64(&m[..56]) != stored {
            return Err("checksum does not match".into());
        }
        let page_size = u32_at(m, 8).unwrap_or(0);
        if !PAGE_SIZES.contains(&(page_size as u64)) {
            return Err(format!("page size {page_size}"));
        }
        Ok(Meta {
            page_size,
            flags: u32_at(m, 12).unwrap_or(0),
            root: u64_at(m, 16).unwrap_or(0),
            sequence: u64_at(m, 24).unwrap_or(0),
            freelist: u64_at(m, 32).unwrap_or(0),
            pgid: u64_at(m, 40).unwrap_or(0),
            txid: u64_at(m, 48).unwrap_or(0),
        })
    }
}

/// FNV-1a, 64 bits (Go's `hash/fnv.New64a`, which bbolt's `Meta.Sum64` uses).
pub fn fnv1a64(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// An open bbolt file, read-only. Holds one meta and the file handle; pages are read when
/// asked for, so memory does not grow with the file.
pub struct Db<R: ReadAt + ?Sized = File> {
    meta: Meta,
    /// Each meta page: its meta, or why it is not valid.
    metas: [Result<Meta, String>; 2],
    len: u64,
    src: Box<R>,
    /// One bit per page below the high-water mark, set for each page [`Db::page`] reads
    /// (with its overflow pages) once [`Db::track_reached`] turned it on.
    reached: OnceLock<Box<[AtomicU64]>>,
}

impl Db<File> {
    /// Opens `path` read-only (no lock, no map) and picks the meta bbolt would.
    ///
    /// Errors: the file cannot be read, is not a bbolt file, or its meta points outside it.
    pub fn open(path: &Path) -> Result<Db<File>, BoltError> {
        Db::from_source(Box::new(File::open(path)?))
    }
}

impl<R: ReadAt + ?Sized> Db<R> {
    /// Reads the metas of `src` and picks the valid one with the larger txid.
    pub fn from_source(src: Box<R>) -> Result<Db<R>, BoltError> {
        let len = src.byte_len()?;
        // A read that fails for another reason than the end of the file (a directory, an
        // I/O error) is said as itself when no meta can be read.
        let failed: std::cell::Cell<Option<std::io::Error>> = std::cell::Cell::new(None);
        let read_meta = |offset: u64| -> Result<Meta, String> {
            let mut b = vec![0u8; PAGE_HEADER_SIZE + 64];
            src.read_exact_at(&mut b, offset).map_err(|e| {
                if e.kind() == std::io::ErrorKind::UnexpectedEof {
                    "beyond the end of the file".to_string()
                } else {
                    let said = e.to_string();
                    failed.set(Some(e));
                    said
                }
            })?;
            Meta::parse(&b)
        };
        let m0 = read_meta(0);
        // The second meta sits one page in: its size is the first meta's, or, when the first
        // is unreadable, whichever size finds a valid one.
        let m1 = match &m0 {
            Ok(m) => read_meta(m.page_size as u64),
            Err(_) => PAGE_SIZES
                .iter()
                .filter(|&&s| s < len)
                .map(|&s| (s, read_meta(s)))
                .find(|(s, m)| m.as_ref().is_ok_and(|m| m.page_size as u64 == *s))
                .map(|(_, m)| m)
                .unwrap_or_else(|| Err("no valid meta at any page size".into())),
        };
        let meta = match (&m0, &m1) {
            (Ok(a), Ok(b)) => {
                if b.txid > a.txid && b.page_size == a.page_size {
                    b.clone()
                } else {
                    a.clone()
                }
            }
            (Ok(a), Err(_)) => a.clone(),
            (Err(_), Ok(b)) => b.clone(),
            (Err(a), Err(b)) => {
                if let Some(e) = failed.take() {
                    return Err(BoltError::Io(e));
                }
                return Err(BoltError::NotBolt(if len == 0 {
                    "the file is empty".into()
                } else {
                    format!("page 0: {a}; page 1: {b}")
                }));
            }
        };
        let db = Db {
            meta,
            metas: [m0, m1],
            len,
            src,
            reached: OnceLock::new(),
        };
        let ps = db.meta.page_size as u64;
        let end = db.meta.pgid.saturating_mul(ps);
        if db.meta.pgid < 2 || db.meta.root >= db.meta.pgid {
            return Err(corrupt(
                if db.metas[0].as_ref().is_ok_and(|m| *m == db.meta) {
                    0
                } else {
                    1
                },
                &format!(
                    "root page {} outside the {} pages in use",
                    db.meta.root, db.meta.pgid
                ),
            ));
        }
        if end > len {
            return Err(BoltError::Truncated {
                page: db.meta.pgid - 1,
                end,
                len,
            });
        }
        Ok(db)
    }

    /// The meta in use (the valid one with the larger txid).
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// Both meta pages: each one's meta, or why it is not valid (a torn write leaves one).
    pub fn metas(&self) -> &[Result<Meta, String>; 2] {
        &self.metas
    }

    /// Length of the file in bytes.
    pub fn file_len(&self) -> u64 {
        self.len
    }

    /// Bytes in use up to the high-water mark (`pgid × page_size`, what bbolt's `Tx.Size`
    /// and so `etcdctl snapshot status`'s `totalSize` report).
    pub fn size(&self) -> u64 {
        self.meta.pgid * self.meta.page_size as u64
    }

    /// Reads page `id` with its overflow pages. Checks the id against the high-water mark,
    /// the page's own id in its header, and the end of the file; the overflow its header
    /// claims is checked against the pages in use, the file's length and
    /// [`MAX_PAGE_BYTES`] before anything is allocated for it, and the allocation itself
    /// is fallible, so a forged `overflow` is an error, never an abort.
    pub fn page_bytes(&self, id: u64) -> Result<(PageHeader, Bytes), BoltError> {
        let ps = self.meta.page_size as u64;
        if id >= self.meta.pgid {
            return Err(corrupt(
                id,
                &format!("beyond the high-water mark of {} pages", self.meta.pgid),
            ));
        }
        // At open, pgid × page_size ≤ the file's length: neither product below overflows.
        let off = id * ps;
        if off + ps > self.len {
            return Err(BoltError::Truncated {
                page: id,
                end: off + ps,
                len: self.len,
            });
        }
        // A page size is at most 16 MiB (`Meta::parse`).
        let mut first = vec![0u8; ps as usize];
        self.src.read_exact_at(&mut first, off)?;
        let header = PageHeader::parse(&first).ok_or_else(|| corrupt(id, "header cut short"))?;
        if header.id != id {
            return Err(corrupt(
                id,
                &format!("the page says it is page {}", header.id),
            ));
        }
        let overflow = header.overflow as u64;
        if overflow > 0 {
            // id < pgid and overflow < 2^32: no overflow in the sum.
            if id + overflow >= self.meta.pgid {
                return Err(corrupt(
                    id,
                    &format!(
                        "{overflow} overflow pages run past the {} pages in use",
                        self.meta.pgid
                    ),
                ));
            }
            // (id + overflow + 1) × page_size ≤ pgid × page_size ≤ the file's length.
            let total = (overflow + 1) * ps;
            if off + total > self.len {
                return Err(BoltError::Truncated {
                    page: id,
                    end: off + total,
                    len: self.len,
                });
            }
            let too_big = || {
                corrupt(
                    id,
                    &format!(
                        "with its {overflow} overflow pages it is {total} bytes, more than the \
                         {MAX_PAGE_BYTES} bytes the reader holds in memory for one page"
                    ),
                )
            };
            let total = usize::try_from(total)
                .ok()
                .filter(|&t| t as u64 <= MAX_PAGE_BYTES)
                .ok_or_else(too_big)?;
            first.try_reserve_exact(total - first.len()).map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::OutOfMemory,
                    format!("page {id}: {total} bytes (with its {overflow} overflow pages) cannot be allocated"),
                )
            })?;
            first.resize(total, 0);
            self.src
                .read_exact_at(&mut first[ps as usize..], off + ps)?;
        }
        Ok((header, Bytes::from(first)))
    }

    /// Reads branch or leaf page `id`.
    pub fn page(&self, id: u64) -> Result<Page, BoltError> {
        if id < 2 {
            return Err(corrupt(id, "a bucket's tree points at a meta page"));
        }
        let (header, bytes) = self.page_bytes(id)?;
        if let Some(bits) = self.reached.get() {
            // page_bytes checked that the overflow stays below the high-water mark.
            for p in id..=id + header.overflow as u64 {
                if let Some(w) = bits.get((p / 64) as usize) {
                    w.fetch_or(1 << (p % 64), Ordering::Relaxed);
                }
            }
        }
        Page::new(bytes, id)
    }

    /// Starts noting which pages [`Db::page`] reads, each with its overflow pages (one bit
    /// per page of the file). After a walk of every bucket's tree, the pages never read are
    /// the free ones ([`Db::unreached_pages`]): bbolt's own way of finding the free pages
    /// of a file that keeps no freelist (`DB.freepages` in `db.go`, which etcd's backend
    /// relies on, as it opens bbolt with `NoFreelistSync` on Linux:
    /// `server/storage/backend/config_linux.go`). Calling it again changes nothing.
    pub fn track_reached(&self) {
        self.reached.get_or_init(|| {
            (0..self.meta.pgid.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect()
        });
    }

    /// How many pages of `2..pgid` (the high-water mark) [`Db::page`] has not read since
    /// [`Db::track_reached`]; `None` when tracking is off.
    pub fn unreached_pages(&self) -> Option<u64> {
        let bits = self.reached.get()?;
        let reached: u64 = (2..self.meta.pgid)
            .filter(|&p| {
                bits.get((p / 64) as usize)
                    .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (p % 64)) != 0)
            })
            .count() as u64;
        Some(self.meta.pgid.saturating_sub(2) - reached)
    }

    /// The root bucket (whose entries are the top-level buckets).
    pub fn root(&self) -> Bucket {
        Bucket {
            root: self.meta.root,
            sequence: self.meta.sequence,
            inline: None,
        }
    }

    /// Every entry of `bucket` in key order, read as the iteration goes.
    pub fn entries<'a>(&'a self, bucket: &Bucket) -> Entries<'a, R> {
        Entries::new(self, bucket, None)
    }

    /// The entries of `bucket` from the first key at or after `start`, in key order.
    pub fn entries_from<'a>(&'a self, bucket: &Bucket, start: &[u8]) -> Entries<'a, R> {
        Entries::new(self, bucket, Some(start))
    }

    /// The top-level buckets, by name, in key order.
    pub fn buckets(&self) -> Result<Vec<(Bytes, Bucket)>, BoltError> {
        let mut out = Vec::new();
        for e in self.entries(&self.root()) {
            let e = e?;
            if e.flags & page::BUCKET_LEAF_FLAG != 0 {
                let b = Bucket::from_value(&e.value, self.meta.root)?;
                out.push((e.key, b));
            }
        }
        Ok(out)
    }

    /// The top-level bucket `name`, if there is one.
    pub fn bucket(&self, name: &[u8]) -> Result<Option<Bucket>, BoltError> {
        Ok(self
            .buckets()?
            .into_iter()
            .find(|(n, _)| n.as_ref() == name)
            .map(|(_, b)| b))
    }

    /// The last entry of `bucket` in key order (its rightmost leaf's last element), without
    /// reading the rest of the tree.
    pub fn last_entry(&self, bucket: &Bucket) -> Result<Option<LeafElement>, BoltError> {
        let mut page = match &bucket.inline {
            Some(p) => p.clone(),
            None => self.page(bucket.root)?,
        };
        for _ in 0..MAX_DEPTH {
            if page.is_leaf() {
                return match page.count() {
                    0 => Ok(None),
                    n => page.leaf(n - 1).map(Some),
                };
            }
            let (_, child) = page.branch(page.count() - 1)?;
            page = self.page(child)?;
        }
        Err(corrupt(
            bucket.root,
            &format!("the tree is deeper than {MAX_DEPTH} pages (a page points back up it)"),
        ))
    }

    /// The value of `key` in `bucket`, if any (not a nested bucket).
    pub fn get(&self, bucket: &Bucket, key: &[u8]) -> Result<Option<Bytes>, BoltError> {
        match self.entries_from(bucket, key).next() {
            Some(Ok(e)) if e.key.as_ref() == key && e.flags & page::BUCKET_LEAF_FLAG == 0 => {
                Ok(Some(e.value))
            }
            Some(Err(e)) => Err(e),
            _ => Ok(None),
        }
    }

    /// The free page ids the freelist lists (bbolt writes its free and pending pages
    /// together), or `None` when the file keeps no freelist ([`NO_FREELIST`]).
    pub fn freelist(&self) -> Result<Option<Vec<u64>>, BoltError> {
        let id = self.meta.freelist;
        if id == NO_FREELIST {
            return Ok(None);
        }
        let (h, bytes) = self.page_bytes(id)?;
        if h.flags != FREELIST_PAGE {
            return Err(corrupt(
                id,
                &format!("the meta's freelist page is a {} page", h.kind()),
            ));
        }
        let ids = page::freelist_ids(&h, &bytes, id)?;
        if let Some(bad) = ids.iter().find(|&&p| p < 2 || p >= self.meta.pgid) {
            return Err(corrupt(
                id,
                &format!("the freelist names page {bad}, outside the pages in use"),
            ));
        }
        // bbolt allocates the freelist's own pages before writing it (`Tx.commitFreelist`),
        // so they are never in it; `Tx.Check` calls such a page "reachable freed".
        let own = id..=id + h.overflow as u64;
        if let Some(bad) = ids.iter().find(|p| own.contains(p)) {
            return Err(corrupt(
                id,
                &format!("the freelist names page {bad}, one of its own pages"),
            ));
        }
        Ok(Some(ids))
    }
}

#[cfg(test)]
mod tests;
