//! Hex dumps and byte-to-text helpers. Nothing here assumes UTF-8.

use std::fmt::Write as _;

/// How many bytes of a value a hex dump shows before cutting (64 KiB).
pub const HEXDUMP_LIMIT: usize = 64 * 1024;

/// Classic hex dump lines: 8-digit hex offset, 16 bytes in hex (two groups of 8), ASCII column
/// (`.` for bytes outside 0x20..=0x7e). `base` is added to the printed offsets. At most
/// `limit` bytes are shown; then one line says how many bytes were cut.
pub fn hexdump(bytes: &[u8], base: usize, limit: usize, indent: &str) -> Vec<String> {
    let shown = &bytes[..bytes.len().min(limit)];
    let mut out = Vec::with_capacity(shown.len() / 16 + 2);
    for (i, chunk) in shown.chunks(16).enumerate() {
        let mut line = String::with_capacity(80 + indent.len());
        line.push_str(indent);
        let _ = write!(line, "{:08x}  ", base + i * 16);
        for j in 0..16 {
            match chunk.get(j) {
                Some(b) => {
                    let _ = write!(line, "{b:02x} ");
                }
                None => line.push_str("   "),
            }
            if j == 7 {
                line.push(' ');
            }
        }
        line.push_str(" |");
        line.extend(chunk.iter().map(|&b| {
            if (0x20..=0x7e).contains(&b) {
                b as char
            } else {
                '.'
            }
        }));
        line.push('|');
        out.push(line);
    }
    if bytes.len() > shown.len() {
        out.push(format!(
            "{indent}… {} bytes cut (showing the first {} of {})",
            bytes.len() - shown.len(),
            shown.len(),
            bytes.len()
        ));
    }
    out
}

/// Space-separated lowercase hex, e.g. `6b 38 73 00`.
pub fn hex_inline(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 3);
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Bytes as a `String`: valid UTF-8 is copied as is; invalid bytes become `\xNN` escapes
/// (so a name like `cm\xff` stays recognisable and nothing panics on binary input).
pub fn lossless_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => {
            let mut out = String::with_capacity(bytes.len() + 8);
            for chunk in bytes.utf8_chunks() {
                out.push_str(chunk.valid());
                for b in chunk.invalid() {
                    let _ = write!(out, "\\x{b:02x}");
                }
            }
            out
        }
    }
}

/// True for text worth showing as a string: valid UTF-8, not starting with a control
/// character, and with no control characters other than tab, CR and LF.
pub fn looks_textual(bytes: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(bytes) else {
        return false;
    };
    let mut chars = s.chars();
    match chars.next() {
        None => true,
        Some(c) if c.is_control() => false,
        Some(_) => chars.all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r')),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hexdump_layout_and_cap() {
        let lines = hexdump(b"k8s\x00abcdefghijklmnop", 0, HEXDUMP_LIMIT, "");
        assert_eq!(
            lines[0],
            "00000000  6b 38 73 00 61 62 63 64  65 66 67 68 69 6a 6b 6c  |k8s.abcdefghijkl|"
        );
        assert!(lines[1].starts_with("00000010  6d 6e 6f 70"));
        assert!(lines[1].ends_with("|mnop|"));
        let big = vec![0u8; 100];
        let lines = hexdump(&big, 0, 32, "");
        assert_eq!(lines.len(), 3);
        assert!(lines[2].contains("68 bytes cut"));
    }

    #[test]
    fn text_helpers() {
        assert_eq!(lossless_text(b"cm\xff"), "cm\\xff");
        assert_eq!(lossless_text("é".as_bytes()), "é");
        assert!(looks_textual(b"hello\nworld"));
        assert!(!looks_textual(b"\n\x02v1"));
        assert!(!looks_textual(b"\xff"));
        assert_eq!(hex_inline(&[0, 0xff]), "00 ff");
    }
}
