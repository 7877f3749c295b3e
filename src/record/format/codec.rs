//! Byte-level pieces of the format: varints and zigzag, a bounds-checked little-endian
//! [`Cursor`], and the frame header and trailer as bytes. Everything that reads returns a
//! description of malformed data, never panics.

use super::{kind_name, FrameKind, FRAME_MAGIC, TRAILER_MAGIC};

pub(super) fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

pub(super) fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

pub(super) fn put_uvarint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// Bounds-checked little-endian reader over a byte slice; every failure is a
/// description of malformed data, never a panic.
pub(super) struct Cursor<'a> {
    buf: &'a [u8],
    pub(super) pos: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| format!("data ends early (need {n} bytes at {})", self.pos))?;
        let s = self
            .buf
            .get(self.pos..end)
            .ok_or_else(|| "data ends early".to_string())?;
        self.pos = end;
        Ok(s)
    }

    pub(super) fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        <[u8; N]>::try_from(self.take(N)?).map_err(|_| "data ends early".to_string())
    }

    pub(super) fn u8(&mut self) -> Result<u8, String> {
        Ok(self.array::<1>()?[0])
    }

    pub(super) fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    pub(super) fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub(super) fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    pub(super) fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    pub(super) fn uvarint(&mut self) -> Result<u64, String> {
        let mut x: u64 = 0;
        for i in 0..10u32 {
            let b = self.u8()?;
            if i == 9 && b > 1 {
                return Err("varint overflows 64 bits".into());
            }
            x |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(x);
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    pub(super) fn rest(&mut self) -> &'a [u8] {
        let s = self.buf.get(self.pos..).unwrap_or(&[]);
        self.pos = self.buf.len();
        s
    }

    pub(super) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }
}

pub(super) fn frame_header(kind: FrameKind, len: u32, crc: u32) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[0..4].copy_from_slice(&FRAME_MAGIC);
    h[4] = kind.as_u8();
    // h[5] flags and h[6..8] reserved stay zero.
    h[8..12].copy_from_slice(&len.to_le_bytes());
    h[12..16].copy_from_slice(&crc.to_le_bytes());
    let hc = crc32fast::hash(&h[0..16]);
    h[16..20].copy_from_slice(&hc.to_le_bytes());
    h
}

pub(super) struct RawHeader {
    pub(super) kind: u8,
    pub(super) len: u32,
    pub(super) crc: u32,
}

pub(super) fn parse_frame_header(h: &[u8; 20]) -> Result<RawHeader, String> {
    let mut c = Cursor::new(h);
    if c.array::<4>()? != FRAME_MAGIC {
        return Err("no frame magic".into());
    }
    let kind = c.u8()?;
    let flags = c.u8()?;
    let reserved = c.u16()?;
    let len = c.u32()?;
    let crc = c.u32()?;
    let hcrc = c.u32()?;
    let covered = h.get(0..16).ok_or("short header")?;
    if crc32fast::hash(covered) != hcrc {
        return Err("frame header checksum mismatch".into());
    }
    if flags != 0 || reserved != 0 {
        return Err(format!(
            "{} frame header has unknown flags {flags:#x}/{reserved:#x}",
            kind_name(kind)
        ));
    }
    Ok(RawHeader { kind, len, crc })
}

pub(super) fn trailer_bytes(index_offset: u64) -> [u8; 20] {
    let mut t = [0u8; 20];
    let off = index_offset.to_le_bytes();
    t[0..8].copy_from_slice(&off);
    t[8..12].copy_from_slice(&crc32fast::hash(&off).to_le_bytes());
    t[12..20].copy_from_slice(&TRAILER_MAGIC);
    t
}

pub(super) fn parse_trailer(t: &[u8; 20]) -> Option<u64> {
    let mut c = Cursor::new(t);
    let off = c.array::<8>().ok()?;
    let crc = c.u32().ok()?;
    let magic = c.array::<8>().ok()?;
    (magic == TRAILER_MAGIC && crc32fast::hash(&off) == crc).then(|| u64::from_le_bytes(off))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_zigzag_cover_the_extremes() {
        for n in [
            0i64,
            1,
            -1,
            63,
            -64,
            i64::MAX,
            i64::MIN,
            1 << 40,
            -(1 << 40),
        ] {
            assert_eq!(unzigzag(zigzag(n)), n);
            let mut v = Vec::new();
            put_uvarint(&mut v, zigzag(n));
            assert!(v.len() <= 10);
            let mut c = Cursor::new(&v);
            assert_eq!(c.uvarint().unwrap(), zigzag(n));
            assert!(c.is_empty());
        }
        // Overlong and overflowing encodings are rejected, not wrapped.
        assert!(Cursor::new(&[0xff; 11]).uvarint().is_err());
        assert!(
            Cursor::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02])
                .uvarint()
                .is_err()
        );
        assert!(Cursor::new(&[0x80]).uvarint().is_err());
    }
}
