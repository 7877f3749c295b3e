//! Scalar fields as read off the wire, before they are written as JSON: one field's value
//! checked against the wire type its schema allows ([`scalar_of`]), or the values of a packed
//! repeated field one by one ([`PackedReader`]).

use super::protobuf_wire::{DecodeError, ErrorKind, Field, WireType, WireValue};
use super::schema::Scalar;

/// A decoded scalar before formatting.
#[derive(Clone, Copy, Debug)]
pub(super) enum ScalarValue<'a> {
    I(i64),
    U(u64),
    B(bool),
    F(f64),
    Bytes(&'a [u8]),
}

impl ScalarValue<'_> {
    pub(super) fn is_empty(&self) -> bool {
        match *self {
            ScalarValue::I(v) => v == 0,
            ScalarValue::U(v) => v == 0,
            ScalarValue::B(v) => !v,
            ScalarValue::F(v) => v == 0.0,
            ScalarValue::Bytes(b) => b.is_empty(),
        }
    }
}

pub(super) fn packable(s: Scalar) -> bool {
    !matches!(s, Scalar::String | Scalar::Bytes)
}

fn wire_mismatch(f: &Field<'_>, expected: WireType) -> DecodeError {
    DecodeError {
        offset: f.offset,
        field: Some(f.number),
        kind: ErrorKind::UnexpectedWireType {
            found: f.wire_type().number(),
            expected,
        },
    }
}

#[inline]
pub(super) fn scalar_of<'a>(s: Scalar, f: &Field<'a>) -> Result<ScalarValue<'a>, DecodeError> {
    Ok(match (s, f.value) {
        (Scalar::Signed, WireValue::Varint(v)) => ScalarValue::I(v as i64),
        (Scalar::Signed, WireValue::Fixed64(v)) => ScalarValue::I(v as i64),
        (Scalar::Signed, WireValue::Fixed32(v)) => ScalarValue::I(i64::from(v as i32)),
        (Scalar::Zigzag, WireValue::Varint(v)) => {
            ScalarValue::I(((v >> 1) as i64) ^ -((v & 1) as i64))
        }
        (Scalar::Unsigned, WireValue::Varint(v)) => ScalarValue::U(v),
        (Scalar::Unsigned, WireValue::Fixed64(v)) => ScalarValue::U(v),
        (Scalar::Unsigned, WireValue::Fixed32(v)) => ScalarValue::U(u64::from(v)),
        (Scalar::Bool, WireValue::Varint(v)) => ScalarValue::B(v != 0),
        (Scalar::Double, WireValue::Fixed64(v)) => ScalarValue::F(f64::from_bits(v)),
        (Scalar::Float, WireValue::Fixed32(v)) => ScalarValue::F(f64::from(f32::from_bits(v))),
        (Scalar::String | Scalar::Bytes, WireValue::Len(b)) => ScalarValue::Bytes(b),
        (s, _) => {
            let expected = match s {
                Scalar::String | Scalar::Bytes => WireType::Len,
                Scalar::Double => WireType::Fixed64,
                Scalar::Float => WireType::Fixed32,
                _ => WireType::Varint,
            };
            return Err(wire_mismatch(f, expected));
        }
    })
}

/// Packed repeated scalars inside one length-delimited payload.
pub(super) struct PackedReader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
    s: Scalar,
    field: u32,
}

impl<'a> PackedReader<'a> {
    pub(super) fn new(buf: &'a [u8], base: usize, s: Scalar, field: u32) -> Self {
        PackedReader {
            buf,
            pos: 0,
            base,
            s,
            field,
        }
    }

    pub(super) fn next(&mut self) -> Option<Result<ScalarValue<'a>, DecodeError>> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let at = self.base + self.pos;
        let rest = &self.buf[self.pos..];
        let truncated = |needed: u64| DecodeError {
            offset: at,
            field: Some(self.field),
            kind: ErrorKind::Truncated {
                needed,
                available: rest.len(),
            },
        };
        let fixed = |n: usize| -> Result<u64, DecodeError> {
            let b = rest.get(..n).ok_or_else(|| truncated(n as u64))?;
            let mut v = 0u64;
            for (i, &x) in b.iter().enumerate() {
                v |= u64::from(x) << (8 * i);
            }
            Ok(v)
        };
        let r = match self.s {
            Scalar::Double => fixed(8).map(|v| {
                self.pos += 8;
                ScalarValue::F(f64::from_bits(v))
            }),
            Scalar::Float => fixed(4).map(|v| {
                self.pos += 4;
                ScalarValue::F(f64::from(f32::from_bits(v as u32)))
            }),
            _ => {
                let mut v = 0u64;
                let mut ok = None;
                for (i, &b) in rest.iter().take(10).enumerate() {
                    v |= u64::from(b & 0x7f) << (7 * i);
                    if b < 0x80 {
                        ok = Some(i + 1);
                        break;
                    }
                }
                match ok {
                    Some(n) => {
                        self.pos += n;
                        Ok(match self.s {
                            Scalar::Zigzag => ScalarValue::I(((v >> 1) as i64) ^ -((v & 1) as i64)),
                            Scalar::Unsigned => ScalarValue::U(v),
                            Scalar::Bool => ScalarValue::B(v != 0),
                            _ => ScalarValue::I(v as i64),
                        })
                    }
                    None => Err(truncated(rest.len() as u64 + 1)),
                }
            }
        };
        if r.is_err() {
            self.pos = self.buf.len();
        }
        Some(r)
    }
}
