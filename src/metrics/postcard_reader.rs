//! A reader of postcard's wire format for the one record a replay reads by the thousand
//! series: the scrape digest ([`crate::store::metrics::ScrapeDigest::from_record`]).
//!
//! serde's derived path reads each series key as three interned strings (a UTF-8 check and
//! a hash lookup each) and is a quarter of a replay's read-ahead thread. This reader walks
//! the same bytes by hand and recognises a series key by its whole encoding. It takes the
//! fast way only: every method answers `None` at anything it does not expect (a varint
//! longer than it reads, an option tag other than 0 or 1, bytes running out), and the
//! caller then reads the record with serde, so that errors are serde's own.
//!
//! The encoding (postcard 1.x, "Wire Format" in postcard's specification,
//! <https://postcard.jamesmunns.com/wire-format>): unsigned integers other than `u8` as
//! LEB128 varints (`usize` as a `u64`), `u8` as one byte, `f64` as 8 bytes little-endian,
//! strings and sequences as a varint length then their items, `Option` as a tag byte
//! (`0` or `1`) then the value, enum variants as a varint index then the variant's
//! fields, structs and tuples as their fields in order.

/// A cursor over postcard bytes.
pub(crate) struct PostcardReader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> PostcardReader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> PostcardReader<'a> {
        PostcardReader { bytes, at: 0 }
    }

    /// Offset of the next byte to read.
    pub(crate) fn at(&self) -> usize {
        self.at
    }

    /// The bytes from `from` to the cursor.
    pub(crate) fn since(&self, from: usize) -> &'a [u8] {
        &self.bytes[from..self.at]
    }

    /// Bytes left.
    pub(crate) fn left(&self) -> usize {
        self.bytes.len() - self.at
    }

    pub(crate) fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    /// A varint of at most 9 bytes (63 bits): longer ones are left to serde.
    pub(crate) fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..63).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    pub(crate) fn usize(&mut self) -> Option<usize> {
        usize::try_from(self.varint()?).ok()
    }

    /// A `u16`: a varint of at most 3 bytes whose value fits.
    pub(crate) fn u16(&mut self) -> Option<u16> {
        let from = self.at;
        let v = u16::try_from(self.varint()?).ok()?;
        (self.at - from <= 3).then_some(v)
    }

    pub(crate) fn f64(&mut self) -> Option<f64> {
        let b: [u8; 8] = self.bytes.get(self.at..self.at + 8)?.try_into().ok()?;
        self.at += 8;
        Some(f64::from_le_bytes(b))
    }

    /// A length then that many bytes (a string's encoding, unchecked).
    pub(crate) fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.usize()?;
        let end = self.at.checked_add(n)?;
        let b = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(b)
    }

    pub(crate) fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes()?).ok()
    }

    /// An `Option` tag: `Some(false)` for `None`, `Some(true)` for `Some`.
    pub(crate) fn tag(&mut self) -> Option<bool> {
        match self.byte()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    pub(crate) fn opt_string(&mut self) -> Option<Option<String>> {
        Some(match self.tag()? {
            false => None,
            true => Some(self.str()?.to_owned()),
        })
    }

    /// A sequence of `f64` into `out` (cleared first).
    pub(crate) fn f64s(&mut self, out: &mut Vec<f64>) -> Option<()> {
        let n = self.usize()?;
        if n > self.left() / 8 {
            return None;
        }
        out.clear();
        out.reserve(n);
        for _ in 0..n {
            out.push(self.f64()?);
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the reader takes, it reads as postcard wrote it; what it does not, it declines.
    #[test]
    fn reads_what_postcard_writes_and_declines_the_rest() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, (1 << 63) - 1] {
            let b = postcard::to_allocvec(&v).unwrap();
            assert_eq!(PostcardReader::new(&b).varint(), Some(v), "{v}");
        }
        // 10-byte varints are serde's.
        let b = postcard::to_allocvec(&u64::MAX).unwrap();
        assert_eq!(PostcardReader::new(&b).varint(), None);
        for v in [0u16, 200, u16::MAX] {
            let b = postcard::to_allocvec(&v).unwrap();
            assert_eq!(PostcardReader::new(&b).u16(), Some(v));
        }
        let too_big = postcard::to_allocvec(&70_000u32).unwrap();
        assert_eq!(PostcardReader::new(&too_big).u16(), None);
        for x in [
            0.0,
            -0.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1.5e-300,
        ] {
            let b = postcard::to_allocvec(&x).unwrap();
            assert_eq!(
                PostcardReader::new(&b).f64().unwrap().to_bits(),
                x.to_bits()
            );
        }
        let b = postcard::to_allocvec(&(Some("é".to_string()), None::<String>)).unwrap();
        let mut w = PostcardReader::new(&b);
        assert_eq!(w.opt_string(), Some(Some("é".into())));
        assert_eq!(w.opt_string(), Some(None));
        assert_eq!(w.left(), 0);
        assert_eq!(w.byte(), None);
        // Bad tags, bad UTF-8, lengths past the end.
        assert_eq!(PostcardReader::new(&[2]).tag(), None);
        assert_eq!(PostcardReader::new(&[2, 0xff, 0xfe]).str(), None);
        assert_eq!(PostcardReader::new(&[5, b'a']).bytes(), None);
        let mut out = Vec::new();
        assert_eq!(
            PostcardReader::new(&[3, 0, 0, 0, 0, 0, 0, 0, 0]).f64s(&mut out),
            None
        );
    }
}
