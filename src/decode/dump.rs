//! Schema-less protobuf field dump: field number, wire type and value, nested messages shown
//! nested where their bytes frame as protobuf, text shown as text, anything else as hex.
//!
//! Without a schema a length-delimited payload is ambiguous; the dump prefers readable text,
//! then a nested message, then hex. Depth is bounded ([`MAX_DEPTH`]) and total output is
//! capped ([`OUTPUT_LIMIT`]). Secret values are redacted here (see [`Redact`]).

use std::fmt::Write as _;

use super::envelope::map_entry;
use super::hexdump::{hex_inline, hexdump, looks_textual, lossless_text};
use super::wire::{frames_as_message, Reader, WireValue};

/// Deepest nesting shown as messages; deeper payloads are shown as bytes.
pub const MAX_DEPTH: usize = 32;
/// Total text the dump produces before it stops (bytes of output lines).
pub const OUTPUT_LIMIT: usize = 512 * 1024;
/// Longest string shown inline before it is cut.
const STRING_LIMIT: usize = 4096;
/// Byte payloads up to this size are shown inline as hex; larger ones as a hex dump block.
const INLINE_HEX: usize = 32;
/// Largest hex-dump block for one bytes payload.
const BLOCK_HEX: usize = 4096;

/// Output lines with a size budget; lines past the budget are counted, not stored.
#[derive(Debug, Default)]
pub struct Out {
    /// Lines kept.
    pub lines: Vec<String>,
    bytes: usize,
    cut: usize,
}

impl Out {
    /// Adds one line (or counts it as cut once the budget is spent).
    pub fn push(&mut self, line: String) {
        if self.bytes >= OUTPUT_LIMIT {
            self.cut += 1;
        } else {
            self.bytes += line.len() + 1;
            self.lines.push(line);
        }
    }

    /// True once the budget is spent.
    pub fn full(&self) -> bool {
        self.bytes >= OUTPUT_LIMIT
    }

    /// Finishes: appends a line saying how much was cut, returns the lines.
    pub fn finish(mut self) -> Vec<String> {
        if self.cut > 0 {
            self.lines.push(format!(
                "… output capped at {} KiB; {} more lines cut",
                OUTPUT_LIMIT / 1024,
                self.cut
            ));
        }
        self.lines
    }
}

/// What to hide while dumping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redact {
    /// Nothing hidden.
    None,
    /// The top level of a v1 Secret: data(2) and stringData(4) map values are hidden; in its
    /// metadata(1), the `kubectl.kubernetes.io/last-applied-configuration` annotation (which
    /// `kubectl apply` fills with the whole Secret) is hidden too.
    SecretTop,
    /// Inside a Secret's ObjectMeta.
    SecretMeta,
}

/// Annotation in which `kubectl apply` keeps the full last applied manifest.
pub const LAST_APPLIED: &[u8] = b"kubectl.kubernetes.io/last-applied-configuration";

/// Dumps a message's fields into `out`. Errors inside are shown in place, never returned.
pub fn dump_message(out: &mut Out, bytes: &[u8], base: usize, depth: usize, redact: Redact) {
    let indent = "  ".repeat(depth);
    for f in Reader::new(bytes, base) {
        if out.full() {
            // Counted as a cut line so `finish` reports the truncation.
            out.push(String::new());
            return;
        }
        let f = match f {
            Ok(f) => f,
            Err(e) => {
                out.push(format!("{indent}! {e}"));
                return;
            }
        };
        let n = f.number;
        let wt = f.wire_type().name();
        match f.value {
            WireValue::Varint(v) => {
                let mut s = format!("{indent}{n} [{wt}] {v}");
                if v > i64::MAX as u64 {
                    let _ = write!(s, " (int64 {})", v as i64);
                }
                out.push(s);
            }
            WireValue::Fixed32(v) => out.push(format!(
                "{indent}{n} [{wt}] 0x{v:08x} (uint32 {v}, float {})",
                f32::from_bits(v)
            )),
            WireValue::Fixed64(v) => out.push(format!(
                "{indent}{n} [{wt}] 0x{v:016x} (uint64 {v}, double {})",
                f64::from_bits(v)
            )),
            WireValue::Len(b) => {
                let redact_entry = match redact {
                    Redact::SecretTop => n == 2 || n == 4,
                    Redact::SecretMeta => {
                        n == 12
                            && map_entry(b, f.value_offset).is_ok_and(|(k, _)| k == LAST_APPLIED)
                    }
                    Redact::None => false,
                };
                if redact_entry {
                    match map_entry(b, f.value_offset) {
                        Ok((k, v)) => out.push(format!(
                            "{indent}{n} [{wt}] {:?} => <redacted: {} bytes>",
                            lossless_text(k),
                            v.len()
                        )),
                        Err(_) => {
                            out.push(format!("{indent}{n} [{wt}] <redacted: {} bytes>", b.len()))
                        }
                    }
                    continue;
                }
                let child = match (redact, n) {
                    (Redact::SecretTop, 1) => Redact::SecretMeta,
                    _ => Redact::None,
                };
                dump_len(out, &indent, n, b, f.value_offset, depth, child);
            }
        }
    }
}

fn dump_len(
    out: &mut Out,
    indent: &str,
    n: u32,
    b: &[u8],
    base: usize,
    depth: usize,
    child: Redact,
) {
    if b.is_empty() {
        out.push(format!("{indent}{n} [len] \"\""));
        return;
    }
    // A redacting context must never fall back to showing text or hex of its payload.
    let is_msg = depth + 1 < MAX_DEPTH && frames_as_message(b);
    if child == Redact::None && looks_textual(b) {
        out.push(format!("{indent}{n} [len] {}", quoted(b)));
    } else if is_msg {
        out.push(format!("{indent}{n} [len] message ({} bytes) {{", b.len()));
        dump_message(out, b, base, depth + 1, child);
        out.push(format!("{indent}}}"));
    } else if child != Redact::None {
        out.push(format!("{indent}{n} [len] <redacted: {} bytes>", b.len()));
    } else if std::str::from_utf8(b).is_ok() {
        out.push(format!("{indent}{n} [len] {}", quoted(b)));
    } else if b.len() <= INLINE_HEX {
        out.push(format!(
            "{indent}{n} [len] bytes ({}) {}",
            b.len(),
            hex_inline(b)
        ));
    } else {
        out.push(format!("{indent}{n} [len] bytes ({}):", b.len()));
        let inner = format!("{indent}  ");
        for l in hexdump(b, base, BLOCK_HEX, &inner) {
            out.push(l);
        }
    }
}

/// A string payload quoted with Rust-style escapes, cut at [`STRING_LIMIT`] bytes.
fn quoted(b: &[u8]) -> String {
    let s = lossless_text(b);
    if s.len() <= STRING_LIMIT {
        return format!("{s:?}");
    }
    let mut end = STRING_LIMIT;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}… ({} bytes)", &s[..end], b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dump(b: &[u8], r: Redact) -> Vec<String> {
        let mut out = Out::default();
        dump_message(&mut out, b, 0, 0, r);
        out.finish()
    }

    #[test]
    fn nested_text_and_hex() {
        // 1: {1: "p1"}, 2: bytes ff 00, 3: varint 7
        let b = [
            0x0a, 0x04, 0x0a, 0x02, b'p', b'1', 0x12, 0x02, 0xff, 0x00, 0x18, 0x07,
        ];
        let l = dump(&b, Redact::None);
        assert_eq!(
            l,
            vec![
                "1 [len] message (4 bytes) {",
                "  1 [len] \"p1\"",
                "}",
                "2 [len] bytes (2) ff 00",
                "3 [varint] 7",
            ]
        );
    }

    #[test]
    fn broken_payload_shows_error_in_place() {
        let l = dump(&[0x08, 0x01, 0x0e], Redact::None);
        assert_eq!(l[0], "1 [varint] 1");
        assert!(l[1].contains("offset 2") && l[1].contains("invalid wire type 6"));
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let mut b = vec![0x08, 0x01];
        for _ in 0..200 {
            let mut outer = vec![0x0a];
            let mut len = b.len();
            while len >= 0x80 {
                outer.push((len as u8) | 0x80);
                len >>= 7;
            }
            outer.push(len as u8);
            outer.extend_from_slice(&b);
            b = outer;
        }
        let l = dump(&b, Redact::None);
        assert!(l.len() < 100);
    }
}
