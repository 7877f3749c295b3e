//! A small, allocation-free protobuf wire-format reader.
//!
//! Input: a byte slice plus the absolute offset of its first byte inside the stored value, so
//! every error names a position an operator can find in the hex dump. Output: an iterator of
//! [`Field`]s borrowing from the input. It knows the wire format only (varint, fixed64,
//! length-delimited, fixed32, per the protobuf encoding spec); groups (wire types 3 and 4,
//! deprecated and never produced by Kubernetes' gogo-protobuf serializer) are rejected. It never
//! panics and never recurses; callers that descend into nested messages bound their own depth.

use std::fmt;

/// Largest field number protobuf allows (2^29 - 1).
pub const MAX_FIELD_NUMBER: u32 = (1 << 29) - 1;

/// Protobuf wire types (the low three bits of a field tag).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireType {
    /// 0: base-128 varint (int32, int64, uint*, bool, enum, sint* zigzag).
    Varint,
    /// 1: 8 bytes little-endian (fixed64, sfixed64, double).
    Fixed64,
    /// 2: varint length then that many bytes (string, bytes, messages, packed repeated).
    Len,
    /// 5: 4 bytes little-endian (fixed32, sfixed32, float).
    Fixed32,
}

impl WireType {
    /// The wire-type number as it appears in a tag.
    pub fn number(self) -> u8 {
        match self {
            WireType::Varint => 0,
            WireType::Fixed64 => 1,
            WireType::Len => 2,
            WireType::Fixed32 => 5,
        }
    }

    /// Short name used in dumps: `varint`, `fixed64`, `len`, `fixed32`.
    pub fn name(self) -> &'static str {
        match self {
            WireType::Varint => "varint",
            WireType::Fixed64 => "fixed64",
            WireType::Len => "len",
            WireType::Fixed32 => "fixed32",
        }
    }
}

/// The payload of one field, borrowed from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireValue<'a> {
    /// Raw varint (interpretation — signed, zigzag, bool — needs the schema).
    Varint(u64),
    /// Raw 8 bytes as little-endian u64.
    Fixed64(u64),
    /// Length-delimited payload.
    Len(&'a [u8]),
    /// Raw 4 bytes as little-endian u32.
    Fixed32(u32),
}

/// One decoded field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field<'a> {
    /// Field number (1 ..= 2^29-1).
    pub number: u32,
    /// The payload.
    pub value: WireValue<'a>,
    /// Absolute byte offset of the field's tag in the stored value.
    pub offset: usize,
    /// Absolute byte offset of the payload (after the tag, and after the length for `Len`).
    pub value_offset: usize,
    /// Absolute byte offset one past the field's last byte, so `value_offset..end` is the
    /// payload's span in the stored value (for a varint, its bytes as written, which a
    /// non-canonical encoding makes longer than the value needs).
    pub end: usize,
}

impl<'a> Field<'a> {
    /// The field's wire type.
    #[inline]
    pub fn wire_type(&self) -> WireType {
        match self.value {
            WireValue::Varint(_) => WireType::Varint,
            WireValue::Fixed64(_) => WireType::Fixed64,
            WireValue::Len(_) => WireType::Len,
            WireValue::Fixed32(_) => WireType::Fixed32,
        }
    }

    fn unexpected(&self, expected: WireType) -> DecodeError {
        DecodeError {
            offset: self.offset,
            field: Some(self.number),
            kind: ErrorKind::UnexpectedWireType {
                found: self.wire_type().number(),
                expected,
            },
        }
    }

    /// The payload of a length-delimited field, or an "unexpected wire type" error naming
    /// this field's tag offset.
    #[inline]
    pub fn expect_len(&self) -> Result<&'a [u8], DecodeError> {
        match self.value {
            WireValue::Len(b) => Ok(b),
            _ => Err(self.unexpected(WireType::Len)),
        }
    }

    /// The payload of a varint field, or an "unexpected wire type" error.
    #[inline]
    pub fn expect_varint(&self) -> Result<u64, DecodeError> {
        match self.value {
            WireValue::Varint(v) => Ok(v),
            _ => Err(self.unexpected(WireType::Varint)),
        }
    }
}

/// What went wrong, without the position (see [`DecodeError`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A field had a valid wire type, but not the one its schema position requires.
    UnexpectedWireType {
        /// Wire type number found in the tag.
        found: u8,
        /// Wire type the decoder expected.
        expected: WireType,
    },
    /// Wire type 6 or 7: not defined by protobuf.
    InvalidWireType(u8),
    /// Wire type 3 or 4 (groups): deprecated, never written by Kubernetes; rejected.
    Group(u8),
    /// Field number 0 or above 2^29-1.
    InvalidFieldNumber(u64),
    /// A varint longer than 10 bytes or overflowing 64 bits.
    VarintOverflow,
    /// The input ended inside a tag, varint, fixed-width value or length-delimited payload.
    Truncated {
        /// Bytes the element needs from its start.
        needed: u64,
        /// Bytes that were left.
        available: usize,
    },
    /// Nested messages deeper than the decoder's limit.
    TooDeep(usize),
    /// The value does not start with the expected magic bytes.
    BadMagic,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::UnexpectedWireType { found, expected } => write!(
                f,
                "unexpected wire type {found} (expected {}, {})",
                expected.number(),
                expected.name()
            ),
            ErrorKind::InvalidWireType(w) => write!(f, "invalid wire type {w}"),
            ErrorKind::Group(w) => write!(f, "wire type {w} (group) is not supported"),
            ErrorKind::InvalidFieldNumber(n) => write!(f, "invalid field number {n}"),
            ErrorKind::VarintOverflow => write!(f, "varint longer than 64 bits"),
            ErrorKind::Truncated { needed, available } => {
                write!(f, "truncated: needs {needed} bytes, only {available} left")
            }
            ErrorKind::TooDeep(limit) => write!(f, "messages nested deeper than {limit}"),
            ErrorKind::BadMagic => write!(f, "missing magic k8s\\x00"),
        }
    }
}

/// A structured decode error: absolute byte offset in the stored value, the field number when
/// the tag was read, and what was expected or found. Displays as
/// `offset 4, field 1: unexpected wire type 5 (expected 2, len)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Absolute byte offset (from the start of the stored value) where the problem starts.
    pub offset: usize,
    /// Field number, when the tag could be read.
    pub field: Option<u32>,
    /// What went wrong.
    pub kind: ErrorKind,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.field {
            Some(n) => write!(f, "offset {}, field {}: {}", self.offset, n, self.kind),
            None => write!(f, "offset {}: {}", self.offset, self.kind),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Reads fields one after another from a message's bytes. Yields `Err` once and then stops.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    /// A reader over `buf`, whose first byte sits at absolute offset `base` in the value.
    #[inline]
    pub fn new(buf: &'a [u8], base: usize) -> Self {
        Reader { buf, pos: 0, base }
    }

    /// Absolute offset of the next unread byte.
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    #[inline(always)]
    fn varint(&mut self, field: Option<u32>) -> Result<u64, DecodeError> {
        let start = self.pos;
        // Fast path: one-byte varints are the common case for tags and short lengths.
        if let Some(&b) = self.buf.get(start) {
            if b < 0x80 {
                self.pos = start + 1;
                return Ok(u64::from(b));
            }
        }
        let mut value: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.buf.get(start + i) else {
                return Err(DecodeError {
                    offset: self.base + start,
                    field,
                    kind: ErrorKind::Truncated {
                        needed: i as u64 + 1,
                        available: self.buf.len() - start,
                    },
                });
            };
            if i == 9 && b > 1 {
                break;
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                self.pos = start + i + 1;
                return Ok(value);
            }
        }
        Err(DecodeError {
            offset: self.base + start,
            field,
            kind: ErrorKind::VarintOverflow,
        })
    }

    #[inline]
    fn take(&mut self, n: u64, field: u32, at: usize) -> Result<&'a [u8], DecodeError> {
        let available = self.buf.len() - self.pos;
        if n > available as u64 {
            return Err(DecodeError {
                offset: at,
                field: Some(field),
                kind: ErrorKind::Truncated {
                    needed: n,
                    available,
                },
            });
        }
        // n <= available <= usize::MAX, so the cast is lossless.
        let n = n as usize;
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Reads the next field; `None` at the clean end of the input.
    #[inline]
    pub fn next_field(&mut self) -> Option<Result<Field<'a>, DecodeError>> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let r = self.read_field();
        if r.is_err() {
            // Stop after the first error: what follows cannot be framed reliably.
            self.pos = self.buf.len();
        }
        Some(r)
    }

    #[inline(always)]
    fn read_field(&mut self) -> Result<Field<'a>, DecodeError> {
        let offset = self.offset();
        let tag = self.varint(None)?;
        let number = tag >> 3;
        if number == 0 || number > u64::from(MAX_FIELD_NUMBER) {
            return Err(DecodeError {
                offset,
                field: None,
                kind: ErrorKind::InvalidFieldNumber(number),
            });
        }
        let number = number as u32;
        let after_tag = self.offset();
        let wt = (tag & 7) as u8;
        let err = |kind| DecodeError {
            offset,
            field: Some(number),
            kind,
        };
        let value = match wt {
            0 => WireValue::Varint(self.varint(Some(number))?),
            1 => {
                let b = self.take(8, number, offset)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                WireValue::Fixed64(u64::from_le_bytes(a))
            }
            2 => {
                let len_at = self.offset();
                let len = self.varint(Some(number))?;
                WireValue::Len(self.take(len, number, len_at)?)
            }
            5 => {
                let b = self.take(4, number, offset)?;
                let mut a = [0u8; 4];
                a.copy_from_slice(b);
                WireValue::Fixed32(u32::from_le_bytes(a))
            }
            3 | 4 => return Err(err(ErrorKind::Group(wt))),
            _ => return Err(err(ErrorKind::InvalidWireType(wt))),
        };
        let end = self.offset();
        let value_offset = match value {
            WireValue::Len(b) => end - b.len(),
            _ => after_tag,
        };
        Ok(Field {
            number,
            value,
            offset,
            value_offset,
            end,
        })
    }
}

impl<'a> Iterator for Reader<'a> {
    type Item = Result<Field<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_field()
    }
}

/// True when `buf` frames completely as a sequence of fields (no recursion into payloads).
pub fn frames_as_message(buf: &[u8]) -> bool {
    Reader::new(buf, 0).all(|f| f.is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(b: &[u8]) -> Vec<Result<Field<'_>, DecodeError>> {
        Reader::new(b, 10).collect()
    }

    #[test]
    fn reads_each_wire_type() {
        // 1: varint 300, 2: len "hi", 3: fixed32 1, 4: fixed64 2
        let b = [
            0x08, 0xac, 0x02, 0x12, 0x02, b'h', b'i', 0x1d, 1, 0, 0, 0, 0x21, 2, 0, 0, 0, 0, 0, 0,
            0,
        ];
        let f: Vec<_> = fields(&b).into_iter().map(|r| r.map(|f| f.value)).collect();
        assert_eq!(
            f,
            vec![
                Ok(WireValue::Varint(300)),
                Ok(WireValue::Len(b"hi")),
                Ok(WireValue::Fixed32(1)),
                Ok(WireValue::Fixed64(2)),
            ]
        );
        let offs: Vec<_> = fields(&b).into_iter().flatten().map(|f| f.offset).collect();
        assert_eq!(offs, vec![10, 13, 17, 22]);
        let spans: Vec<_> = fields(&b)
            .into_iter()
            .flatten()
            .map(|f| (f.value_offset, f.end))
            .collect();
        assert_eq!(spans, vec![(11, 13), (15, 17), (18, 22), (23, 31)]);
    }

    #[test]
    fn spans_follow_long_tags_and_non_canonical_varints() {
        // 16: varint 0 written in two bytes (0x80 0x00), then 17: len "x".
        let b = [0x80, 0x01, 0x80, 0x00, 0x8a, 0x01, 0x01, b'x'];
        let f: Vec<_> = fields(&b).into_iter().flatten().collect();
        assert_eq!(f[0].value, WireValue::Varint(0));
        assert_eq!((f[0].offset, f[0].value_offset, f[0].end), (10, 12, 14));
        assert_eq!(f[1].value, WireValue::Len(b"x"));
        assert_eq!((f[1].offset, f[1].value_offset, f[1].end), (14, 17, 18));
    }

    #[test]
    fn rejects_groups_and_bad_wire_types() {
        let e = fields(&[0x0b]).remove(0).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Group(3));
        assert_eq!(e.field, Some(1));
        let e = fields(&[0x0e]).remove(0).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidWireType(6));
        let e = fields(&[0x00]).remove(0).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidFieldNumber(0));
    }

    #[test]
    fn truncation_and_overflow_are_errors() {
        let e = fields(&[0x12, 0x05, b'a']).remove(0).unwrap_err();
        assert_eq!(
            e.kind,
            ErrorKind::Truncated {
                needed: 5,
                available: 1
            }
        );
        assert_eq!(e.offset, 11);
        let e = fields(&[0x08, 0xff, 0xff]).remove(0).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Truncated { .. }));
        let e = fields(&[
            0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
        ])
        .remove(0)
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::VarintOverflow);
        // Huge length must not overflow arithmetic.
        let e = fields(&[
            0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ])
        .remove(0)
        .unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Truncated { .. }));
        // The iterator stops after an error.
        assert_eq!(fields(&[0x0e, 0x08, 0x01]).len(), 1);
    }

    #[test]
    fn error_display_names_offset_field_and_types() {
        let f = Reader::new(&[0x0d, 0, 0, 0, 0], 4)
            .next_field()
            .unwrap()
            .unwrap();
        let e = f.expect_len().unwrap_err();
        assert_eq!(
            e.to_string(),
            "offset 4, field 1: unexpected wire type 5 (expected 2, len)"
        );
    }
}
