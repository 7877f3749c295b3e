//! Where a file's pages go: every page reachable from the meta (the root bucket's tree,
//! every bucket's tree, nested and inline buckets, overflow pages, the freelist page),
//! counted by kind, and the pages nothing reaches, which are free. This is how bbolt
//! itself finds its free pages when the freelist is not kept in the file (`db.freepages`
//! in bbolt's `db.go`, used when the meta's freelist is `NO_FREELIST`, as etcd opens its
//! backend on Linux: `NoFreelistSync: true` in etcd 3.4's `mvcc/backend/config_linux.go`).

use super::page::{corrupt, BUCKET_LEAF_FLAG, FREELIST_PAGE};
use super::{BoltError, Bucket, Db, ReadAt, MAX_DEPTH, NO_FREELIST};

/// Pages by what they hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PageUsage {
    /// Pages up to the high-water mark (`meta.pgid`), the two meta pages included.
    pub pages: u64,
    /// Branch pages of all trees.
    pub branch: u64,
    /// Leaf pages of all trees.
    pub leaf: u64,
    /// Overflow pages after branch and leaf pages (large values).
    pub overflow: u64,
    /// The freelist page and its overflow (0 when the freelist is not kept in the file).
    pub freelist: u64,
    /// Pages nothing reaches: free for bbolt to reuse, and what a defragmentation gives
    /// back (times the page size).
    pub free: u64,
    /// Bytes per page.
    pub page_size: u64,
    /// When the freelist the meta names is not one (then only reachability counts).
    pub freelist_problem: Option<String>,
}

impl PageUsage {
    /// Bytes of the free pages.
    pub fn free_bytes(&self) -> u64 {
        self.free * self.page_size
    }
}

impl<R: ReadAt + ?Sized> Db<R> {
    /// Walks every tree of the file once (reading each branch and leaf page) and counts
    /// its pages. Errors: a page reached twice (a corrupt tree), or any page error.
    pub fn page_usage(&self) -> Result<PageUsage, BoltError> {
        let n = self.meta().pgid;
        let mut seen = vec![false; n as usize];
        let mut u = PageUsage {
            pages: n,
            page_size: self.meta().page_size as u64,
            ..Default::default()
        };
        // Meta pages.
        for p in 0..2.min(n) {
            seen[p as usize] = true;
        }
        let fl = self.meta().freelist;
        if fl != NO_FREELIST {
            let (h, _) = self.page_bytes(fl)?;
            if h.flags == FREELIST_PAGE {
                for p in fl..=fl + h.overflow as u64 {
                    mark(&mut seen, p, fl)?;
                    u.freelist += 1;
                }
            } else {
                // Files written by boltdb before bbolt checked it can name a page that a
                // later transaction reused; the pages are counted by what reaches them.
                u.freelist_problem = Some(format!(
                    "the meta names page {fl} as the freelist, but it is a {} page",
                    h.kind()
                ));
            }
        }
        // (page id, depth) of tree pages still to read; inline buckets are read from the
        // leaf that holds them.
        let mut stack: Vec<(u64, usize)> = vec![(self.meta().root, 0)];
        let mut inline: Vec<(Bucket, usize)> = Vec::new();
        loop {
            let page = if let Some((id, depth)) = stack.pop() {
                if depth > MAX_DEPTH {
                    return Err(corrupt(id, "trees nest deeper than bbolt writes them"));
                }
                let page = self.page(id)?;
                for p in id..=id + page.header.overflow as u64 {
                    mark(&mut seen, p, id)?;
                }
                u.overflow += page.header.overflow as u64;
                if page.is_leaf() {
                    u.leaf += 1;
                } else {
                    u.branch += 1;
                }
                (page, depth)
            } else if let Some((b, depth)) = inline.pop() {
                match b.inline {
                    Some(p) => (p, depth),
                    None => continue,
                }
            } else {
                break;
            };
            let (page, depth) = page;
            for i in 0..page.count() {
                if page.is_leaf() {
                    let e = page.leaf(i)?;
                    if e.flags & BUCKET_LEAF_FLAG != 0 {
                        let b = Bucket::from_value(&e.value, page.at)?;
                        if b.root == 0 {
                            inline.push((b, depth + 1));
                        } else {
                            stack.push((b.root, depth + 1));
                        }
                    }
                } else {
                    stack.push((page.branch(i)?.1, depth + 1));
                }
            }
        }
        u.free = seen.iter().filter(|s| !**s).count() as u64;
        Ok(u)
    }
}

/// Marks page `p` as reached; a page reached twice is a corrupt tree.
fn mark(seen: &mut [bool], p: u64, from: u64) -> Result<(), BoltError> {
    match seen.get_mut(p as usize) {
        Some(s) if !*s => {
            *s = true;
            Ok(())
        }
        Some(_) => Err(corrupt(from, &format!("page {p} is reached twice"))),
        None => Err(corrupt(
            from,
            &format!("page {p} is beyond the pages in use"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_auger_db_pages_add_up() {
        let Some(td) = crate::testdata::dir() else {
            return;
        };
        let bytes = std::fs::read(td.join("etcd-registry/auger/boltdb/db")).unwrap();
        let db = Db::from_source(Box::new(bytes)).unwrap();
        let u = db.page_usage().unwrap();
        // Five pages: two metas, the root bucket's leaf (page 4, its buckets inline or
        // on page 3) and one page nothing reaches. The meta names page 2 as its freelist,
        // but page 2 is a leaf: it is counted by what reaches it, and said.
        assert_eq!(u.pages, 5);
        assert_eq!(
            2 + u.branch + u.leaf + u.overflow + u.freelist + u.free,
            u.pages
        );
        assert_eq!(u.free, 1);
        assert_eq!(u.free_bytes(), 4096);
        assert!(u
            .freelist_problem
            .as_deref()
            .is_some_and(|p| p.contains("page 2")));
    }
}
