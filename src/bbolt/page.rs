//! One bbolt page read from the file: its 16-byte header and its elements, every offset
//! checked against the bytes read, so that a corrupt or foreign file gives an error and
//! never a panic. Layouts from etcd-io/bbolt `internal/common/page.go` (bbolt 1.3 and
//! 1.4, the versions etcd 3.4–3.6 link; the on-disk format has been version 2 since
//! boltdb 1.0).

use bytes::Bytes;

use super::BoltError;

/// Size of a page header: `id u64, flags u16, count u16, overflow u32`, little-endian
/// (bbolt writes the machine's byte order; every platform etcd supports is little-endian).
pub const PAGE_HEADER_SIZE: usize = 16;
/// Size of a branch element: `pos u32, ksize u32, pgid u64`.
pub const BRANCH_ELEMENT_SIZE: usize = 16;
/// Size of a leaf element: `flags u32, pos u32, ksize u32, vsize u32`.
pub const LEAF_ELEMENT_SIZE: usize = 16;
// One element size serves both kinds (`Page::element`).
const _: () = assert!(BRANCH_ELEMENT_SIZE == LEAF_ELEMENT_SIZE);

/// Page kinds (the header's `flags`; exactly one is set on a valid page).
pub const BRANCH_PAGE: u16 = 0x01;
/// A leaf page: keys and values (or nested buckets).
pub const LEAF_PAGE: u16 = 0x02;
/// One of the two meta pages (page 0 and page 1).
pub const META_PAGE: u16 = 0x04;
/// The freelist page.
pub const FREELIST_PAGE: u16 = 0x10;
/// A leaf element's flag for a nested bucket (its value is a bucket header).
pub const BUCKET_LEAF_FLAG: u32 = 0x01;

/// The header of a page as written in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageHeader {
    /// The page's own id (its offset divided by the page size).
    pub id: u64,
    /// One of [`BRANCH_PAGE`], [`LEAF_PAGE`], [`META_PAGE`], [`FREELIST_PAGE`].
    pub flags: u16,
    /// Elements on the page (for a freelist, `0xFFFF` means the count is the first u64).
    pub count: u16,
    /// Pages after this one that belong to it (a large value or a long freelist).
    pub overflow: u32,
}

impl PageHeader {
    /// Reads a header from the first 16 bytes of `b`.
    pub fn parse(b: &[u8]) -> Option<PageHeader> {
        Some(PageHeader {
            id: u64_at(b, 0)?,
            flags: u16::from_le_bytes(b.get(8..10)?.try_into().ok()?),
            count: u16::from_le_bytes(b.get(10..12)?.try_into().ok()?),
            overflow: u32_at(b, 12)?,
        })
    }

    /// The page kind in words, for errors.
    pub fn kind(&self) -> String {
        match self.flags {
            BRANCH_PAGE => "branch".into(),
            LEAF_PAGE => "leaf".into(),
            META_PAGE => "meta".into(),
            FREELIST_PAGE => "freelist".into(),
            f => format!("unknown (flags {f:#06x})"),
        }
    }
}

/// A little-endian u64 at `off`, or `None` past the end.
pub fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(off..off.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// A little-endian u32 at `off`, or `None` past the end.
pub fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(off..off.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// A branch or leaf page (or an inline bucket's page) held in memory: the header and the
/// bytes of the page and its overflow pages, from which elements are sliced without
/// copying.
#[derive(Clone, Debug)]
pub struct Page {
    /// The header as read.
    pub header: PageHeader,
    /// The whole page, header included.
    pub bytes: Bytes,
    /// Where the page came from, for errors: its id, or the page holding an inline bucket.
    pub at: u64,
}

/// One element of a leaf page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeafElement {
    /// [`BUCKET_LEAF_FLAG`] for a nested bucket, 0 for a key and value.
    pub flags: u32,
    /// The key.
    pub key: Bytes,
    /// The value (for a bucket, its header and any inline page).
    pub value: Bytes,
}

impl Page {
    /// Wraps page bytes, checking that the elements the header counts fit in them.
    ///
    /// Errors: [`BoltError::Corrupt`] naming the page and what does not fit.
    pub fn new(bytes: Bytes, at: u64) -> Result<Page, BoltError> {
        let header =
            PageHeader::parse(&bytes).ok_or_else(|| corrupt(at, "page header cut short"))?;
        let page = Page { header, bytes, at };
        match header.flags {
            BRANCH_PAGE | LEAF_PAGE => {
                let need = PAGE_HEADER_SIZE + header.count as usize * LEAF_ELEMENT_SIZE;
                if need > page.bytes.len() {
                    return Err(corrupt(
                        at,
                        &format!(
                            "{} elements do not fit in {} bytes",
                            header.count,
                            page.bytes.len()
                        ),
                    ));
                }
                if header.flags == BRANCH_PAGE && header.count == 0 {
                    return Err(corrupt(at, "a branch page with no elements"));
                }
                Ok(page)
            }
            _ => Err(corrupt(
                at,
                &format!("expected a branch or leaf page, found {}", header.kind()),
            )),
        }
    }

    /// Elements on the page.
    pub fn count(&self) -> usize {
        self.header.count as usize
    }

    /// Whether this is a leaf page (else a branch page).
    pub fn is_leaf(&self) -> bool {
        self.header.flags == LEAF_PAGE
    }

    /// Where element `i` starts (branch and leaf elements are both 16 bytes), or an error
    /// when the page has no element `i`.
    fn element(&self, i: usize) -> Result<usize, BoltError> {
        if i >= self.count() {
            return Err(corrupt(
                self.at,
                &format!("no element {i} on a page of {}", self.count()),
            ));
        }
        // `Page::new` checked that `count` elements fit in the bytes.
        Ok(PAGE_HEADER_SIZE + i * LEAF_ELEMENT_SIZE)
    }

    /// `base + by`, an offset into the page, when it can be one: the sum neither overflows
    /// (a u32 `pos` on a 32-bit target) nor lies past the page.
    fn offset(&self, base: usize, by: u32, what: &str) -> Result<usize, BoltError> {
        base.checked_add(to_usize(by))
            .filter(|&o| o <= self.bytes.len())
            .ok_or_else(|| {
                corrupt(
                    self.at,
                    &format!(
                        "{what} at {base}+{by} runs past the page's {} bytes",
                        self.bytes.len()
                    ),
                )
            })
    }

    /// The bytes at `start..start+len` of the page, checked.
    fn slice(&self, start: usize, len: usize, what: &str) -> Result<Bytes, BoltError> {
        let end = start.checked_add(len).filter(|&e| e <= self.bytes.len());
        match end {
            Some(end) => Ok(self.bytes.slice(start..end)),
            None => Err(corrupt(
                self.at,
                &format!(
                    "{what} at {start}+{len} runs past the page's {} bytes",
                    self.bytes.len()
                ),
            )),
        }
    }

    /// Leaf element `i` (0-based): its flags, key and value. The element's `pos` counts
    /// from the element itself (bbolt's `leafPageElement.Key`).
    pub fn leaf(&self, i: usize) -> Result<LeafElement, BoltError> {
        let e = self.element(i)?;
        let field = |o| {
            u32_at(&self.bytes, e + o).ok_or_else(|| corrupt(self.at, "leaf element cut short"))
        };
        let (flags, pos, ksize, vsize) = (field(0)?, field(4)?, field(8)?, field(12)?);
        let start = self.offset(e, pos, "a key")?;
        let key = self.slice(start, to_usize(ksize), "a key")?;
        let value_at = self.offset(start, ksize, "a value")?;
        let value = self.slice(value_at, to_usize(vsize), "a value")?;
        Ok(LeafElement { flags, key, value })
    }

    /// Branch element `i`: its key (the first key under the child) and the child's page id.
    pub fn branch(&self, i: usize) -> Result<(Bytes, u64), BoltError> {
        let e = self.element(i)?;
        let short = || corrupt(self.at, "branch element cut short");
        let pos = u32_at(&self.bytes, e).ok_or_else(short)?;
        let ksize = u32_at(&self.bytes, e + 4).ok_or_else(short)?;
        let pgid = u64_at(&self.bytes, e + 8).ok_or_else(short)?;
        let start = self.offset(e, pos, "a key")?;
        Ok((self.slice(start, to_usize(ksize), "a key")?, pgid))
    }

    /// The key of element `i`, branch or leaf.
    pub fn key(&self, i: usize) -> Result<Bytes, BoltError> {
        if self.is_leaf() {
            Ok(self.leaf(i)?.key)
        } else {
            Ok(self.branch(i)?.0)
        }
    }
}

/// The page ids a freelist page lists (`FreelistPageIds` in bbolt's `page.go`): `count`
/// u64s after the header, or, when `count` is `0xFFFF`, as many as the first u64 says,
/// after it.
pub fn freelist_ids(header: &PageHeader, bytes: &[u8], at: u64) -> Result<Vec<u64>, BoltError> {
    let (first, n) = if header.count == 0xFFFF {
        let n = u64_at(bytes, PAGE_HEADER_SIZE)
            .ok_or_else(|| corrupt(at, "freelist count cut short"))?;
        (1usize, n)
    } else {
        (0, header.count as u64)
    };
    let room = (bytes.len().saturating_sub(PAGE_HEADER_SIZE) / 8) as u64;
    if n > room.saturating_sub(first as u64) {
        return Err(corrupt(
            at,
            &format!("the freelist says {n} pages, its page holds at most {room}"),
        ));
    }
    (0..n as usize)
        .map(|i| {
            u64_at(bytes, PAGE_HEADER_SIZE + (first + i) * 8)
                .ok_or_else(|| corrupt(at, "freelist cut short"))
        })
        .collect()
}

/// A u32 read from the file as a length or offset: every target regscope builds for has a
/// usize of at least 32 bits; on a narrower one the value saturates, and the bounds checks
/// that follow refuse it.
fn to_usize(v: u32) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// A [`BoltError::Corrupt`] at page `page`.
pub fn corrupt(page: u64, what: &str) -> BoltError {
    BoltError::Corrupt {
        page,
        what: what.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf_page(entries: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut b = vec![0u8; PAGE_HEADER_SIZE + entries.len() * LEAF_ELEMENT_SIZE];
        b[8..10].copy_from_slice(&LEAF_PAGE.to_le_bytes());
        b[10..12].copy_from_slice(&(entries.len() as u16).to_le_bytes());
        for (i, (k, v)) in entries.iter().enumerate() {
            let e = PAGE_HEADER_SIZE + i * LEAF_ELEMENT_SIZE;
            let pos = (b.len() - e) as u32;
            b[e + 4..e + 8].copy_from_slice(&pos.to_le_bytes());
            b[e + 8..e + 12].copy_from_slice(&(k.len() as u32).to_le_bytes());
            b[e + 12..e + 16].copy_from_slice(&(v.len() as u32).to_le_bytes());
            b.extend_from_slice(k);
            b.extend_from_slice(v);
        }
        b
    }

    #[test]
    fn leaf_elements_are_read_where_their_positions_say() {
        let p = Page::new(Bytes::from(leaf_page(&[(b"a", b"1"), (b"bb", b"22")])), 3).unwrap();
        assert!(p.is_leaf());
        assert_eq!(p.count(), 2);
        let e = p.leaf(1).unwrap();
        assert_eq!((&e.key[..], &e.value[..]), (&b"bb"[..], &b"22"[..]));
    }

    #[test]
    fn an_element_pointing_past_the_page_is_an_error_naming_the_page() {
        let mut b = leaf_page(&[(b"a", b"1")]);
        // vsize of the only element made huge.
        b[PAGE_HEADER_SIZE + 12..PAGE_HEADER_SIZE + 16].copy_from_slice(&u32::MAX.to_le_bytes());
        let p = Page::new(Bytes::from(b), 7).unwrap();
        let e = p.leaf(0).unwrap_err().to_string();
        assert!(e.contains("page 7") && e.contains("runs past"), "{e}");
    }

    #[test]
    fn a_count_larger_than_the_page_is_refused() {
        let mut b = leaf_page(&[(b"a", b"1")]);
        b[10..12].copy_from_slice(&500u16.to_le_bytes());
        assert!(Page::new(Bytes::from(b), 1).is_err());
    }

    #[test]
    fn freelist_counts_over_0xffff_are_read_from_the_first_element() {
        let mut b = vec![0u8; PAGE_HEADER_SIZE + 8 * 3];
        b[8..10].copy_from_slice(&FREELIST_PAGE.to_le_bytes());
        b[10..12].copy_from_slice(&0xFFFFu16.to_le_bytes());
        b[16..24].copy_from_slice(&2u64.to_le_bytes());
        b[24..32].copy_from_slice(&9u64.to_le_bytes());
        b[32..40].copy_from_slice(&11u64.to_le_bytes());
        let h = PageHeader::parse(&b).unwrap();
        assert_eq!(freelist_ids(&h, &b, 2).unwrap(), vec![9, 11]);
        b[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(freelist_ids(&h, &b, 2).is_err());
    }
}
