//! Walking a bucket's B+tree in key order (bbolt's `Cursor.First`/`Seek`/`Next`, in
//! `cursor.go`): a stack of pages from the root to the current leaf, each page read when
//! the walk reaches it, so a walk over any file holds one page per level.

use super::page::{corrupt, LeafElement, Page};
use super::{BoltError, Bucket, Db, ReadAt, MAX_DEPTH};

/// Pages a walk read, by kind, and their bytes (overflow included): what a tree costs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TreeStats {
    /// Branch pages read.
    pub branch_pages: u64,
    /// Leaf pages read (an inline bucket's page is not counted: it has no page of its own).
    pub leaf_pages: u64,
    /// Overflow pages after those pages.
    pub overflow_pages: u64,
}

/// The entries of a bucket in key order: each a [`LeafElement`] (key, value, and whether
/// it is a nested bucket). Ends after the first error, which it yields.
pub struct Entries<'a, R: ReadAt + ?Sized> {
    db: &'a Db<R>,
    /// From the root down: each page and the index of the element being visited.
    stack: Vec<(Page, usize)>,
    /// An error found before the first entry (reading the root or seeking).
    pending: Option<BoltError>,
    done: bool,
    stats: TreeStats,
}

impl<'a, R: ReadAt + ?Sized> Entries<'a, R> {
    pub(super) fn new(db: &'a Db<R>, bucket: &Bucket, start: Option<&[u8]>) -> Self {
        let mut it = Entries {
            db,
            stack: Vec::new(),
            pending: None,
            done: false,
            stats: TreeStats::default(),
        };
        let root = match &bucket.inline {
            Some(p) => Ok(p.clone()),
            None => it.read(bucket.root),
        };
        match root.and_then(|p| {
            it.stack.push((p, 0));
            it.descend(start)
        }) {
            Ok(()) => {}
            Err(e) => it.pending = Some(e),
        }
        it
    }

    /// What the walk has read so far.
    pub fn stats(&self) -> TreeStats {
        self.stats
    }

    /// The leaf page the walk is on: after [`Iterator::next`] yielded an element, the
    /// page holding it (its id, or the page holding an inline bucket), for errors about
    /// what the element holds.
    pub fn page(&self) -> Option<u64> {
        self.stack.last().map(|(p, _)| p.at)
    }

    /// Reads page `id` for the walk. In a sound file each page sits at one place of one
    /// tree, so a walk reads each at most once: more pages than the file has in use means
    /// branches share a page or point back up the tree, and the walk stops there (a chain
    /// of branches whose elements all point at the next branch would otherwise be walked
    /// 2^depth times).
    fn read(&mut self, id: u64) -> Result<Page, BoltError> {
        let in_use = self.db.meta().pgid;
        let read = self.stats.branch_pages + self.stats.leaf_pages + self.stats.overflow_pages;
        if read >= in_use {
            return Err(corrupt(
                id,
                &format!(
                    "the walk has read as many pages as the file has in use ({in_use}): \
                     branches point at a page twice or back up the tree"
                ),
            ));
        }
        let p = self.db.page(id)?;
        if p.is_leaf() {
            self.stats.leaf_pages += 1;
        } else {
            self.stats.branch_pages += 1;
        }
        self.stats.overflow_pages += p.header.overflow as u64;
        Ok(p)
    }

    /// From the page on top of the stack down to a leaf: the first child, or with `start`
    /// the child whose range holds it; on the leaf, the first element at or after `start`.
    fn descend(&mut self, start: Option<&[u8]>) -> Result<(), BoltError> {
        loop {
            let Some((page, idx)) = self.stack.last_mut() else {
                return Ok(());
            };
            if page.is_leaf() {
                if let Some(s) = start {
                    *idx = first_at_or_after(page, s)?;
                }
                return Ok(());
            }
            if let Some(s) = start {
                *idx = last_at_or_before(page, s)?;
            }
            let (_, child) = page.branch(*idx)?;
            let at = page.at;
            if self.stack.len() >= MAX_DEPTH {
                return Err(corrupt(
                    at,
                    &format!(
                        "the tree is deeper than {MAX_DEPTH} pages (a page points back up it)"
                    ),
                ));
            }
            let p = self.read(child)?;
            self.stack.push((p, 0));
        }
    }

    fn step(&mut self) -> Result<Option<LeafElement>, BoltError> {
        loop {
            let Some((page, idx)) = self.stack.last_mut() else {
                return Ok(None);
            };
            if page.is_leaf() && *idx < page.count() {
                let e = page.leaf(*idx)?;
                *idx += 1;
                return Ok(Some(e));
            }
            if !page.is_leaf() && *idx + 1 < page.count() {
                *idx += 1;
                let (_, child) = page.branch(*idx)?;
                let p = self.read(child)?;
                self.stack.push((p, 0));
                self.descend(None)?;
                continue;
            }
            self.stack.pop();
        }
    }
}

/// Index of the first element whose key is at or after `s` (the page's count when none).
fn first_at_or_after(page: &Page, s: &[u8]) -> Result<usize, BoltError> {
    let (mut lo, mut hi) = (0, page.count());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if page.key(mid)?.as_ref() < s {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// Index of the branch element whose child holds `s`: the last whose key is at or before
/// it, or the first when all are after it (bbolt's `Cursor.searchPage`).
fn last_at_or_before(page: &Page, s: &[u8]) -> Result<usize, BoltError> {
    let i = first_at_or_after(page, s)?;
    if i < page.count() && page.key(i)?.as_ref() == s {
        return Ok(i);
    }
    Ok(i.saturating_sub(1))
}

impl<R: ReadAt + ?Sized> Iterator for Entries<'_, R> {
    type Item = Result<LeafElement, BoltError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if let Some(e) = self.pending.take() {
            self.done = true;
            return Some(Err(e));
        }
        match self.step() {
            Ok(Some(e)) => Some(Ok(e)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
