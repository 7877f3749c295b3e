//! Writing JSON text the way kube-apiserver's encoding/json output reads: scalars, strings
//! (invalid UTF-8 as U+FFFD), embedded raw JSON, Time/MicroTime as RFC 3339 and Duration as
//! Go's duration string. Appends to a `String`; nothing here fails.

use base64::Engine as _;

use super::scalar::ScalarValue;
use super::schema::Scalar;

/// One scalar as JSON: numbers and booleans bare, `bytes` as base64, strings as JSON strings.
#[inline]
pub(super) fn scalar_json(out: &mut String, s: Scalar, v: ScalarValue<'_>) {
    match v {
        // int32 fields carry a sign-extended varint; the 64-bit value is kept.
        ScalarValue::I(i) => out.push_str(itoa::Buffer::new().format(i)),
        ScalarValue::U(u) => out.push_str(itoa::Buffer::new().format(u)),
        ScalarValue::B(b) => out.push_str(if b { "true" } else { "false" }),
        ScalarValue::F(f) => push_float(out, f),
        ScalarValue::Bytes(b) => match s {
            Scalar::Bytes => {
                out.push('"');
                base64::engine::general_purpose::STANDARD.encode_string(b, out);
                out.push('"');
            }
            _ => push_bytes_as_str(out, b),
        },
    }
}

/// Go's encoding/json float format: integral values without a fraction, `null` for NaN/Inf
/// (Go refuses those; we must show something).
fn push_float(out: &mut String, f: f64) {
    if !f.is_finite() {
        out.push_str("null");
    } else if f.fract() == 0.0 && f.abs() < 1e21 {
        out.push_str(&format!("{}", f as i128));
    } else {
        out.push_str(&format!("{f}"));
    }
}

/// Embedded JSON (RawExtension, FieldsV1, apiextensions JSON): the bytes as they are when
/// they are valid JSON, `null` when empty, else a string of the bytes.
pub(super) fn raw_json(out: &mut String, raw: &[u8]) {
    if raw.is_empty() {
        out.push_str("null");
        return;
    }
    match serde_json::from_slice::<serde_json::Value>(raw) {
        Ok(v) => out.push_str(&v.to_string()),
        Err(_) => push_str(out, &String::from_utf8_lossy(raw)),
    }
}

/// True when every byte is printable ASCII other than `"` and `\\`: such bytes are a JSON
/// string body as they are. Eight bytes at a time (SWAR); a false "no" only costs the slow
/// path.
#[inline]
fn plain_ascii(b: &[u8]) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |v: u64| v.wrapping_sub(LO) & !v & HI;
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let mut a = [0u8; 8];
        a.copy_from_slice(c);
        let x = u64::from_le_bytes(a);
        // High bit set, below 0x20 (exact when no high bit is set), `"`, `\\`.
        let special = (x & HI)
            | (x.wrapping_sub(LO * 0x20) & !x & HI)
            | zero_byte(x ^ (LO * u64::from(b'"')))
            | zero_byte(x ^ (LO * u64::from(b'\\')));
        if special != 0 {
            return false;
        }
    }
    chunks
        .remainder()
        .iter()
        .all(|&c| (0x20..0x80).contains(&c) && c != b'"' && c != b'\\')
}

/// Appends protobuf string bytes as a JSON string literal; invalid UTF-8 becomes U+FFFD, as
/// Go's encoding/json writes it.
#[inline]
pub(super) fn push_bytes_as_str(out: &mut String, b: &[u8]) {
    if plain_ascii(b) {
        out.push('"');
        // SAFETY: `plain_ascii` checked every byte is ASCII, so `b` is valid UTF-8.
        out.push_str(unsafe { std::str::from_utf8_unchecked(b) });
        out.push('"');
        return;
    }
    match std::str::from_utf8(b) {
        Ok(t) => push_str(out, t),
        Err(_) => push_str(out, &String::from_utf8_lossy(b)),
    }
}

/// Appends `s` as a JSON string literal.
pub fn push_str(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    let needs_escape = |b: u8| b < 0x20 || b == b'"' || b == b'\\';
    if !bytes.iter().any(|&b| needs_escape(b)) {
        out.push_str(s);
        out.push('"');
        return;
    }
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if !needs_escape(b) {
            continue;
        }
        out.push_str(&s[start..i]);
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 15) as usize] as char);
            }
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Appends [`rfc3339`] as a JSON string without formatting machinery (Times are frequent:
/// every managedFields entry and condition has one).
pub(super) fn push_rfc3339(out: &mut String, secs: i64, micros: Option<i64>) {
    let days = secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400);
    let (y, mo, d) = super::envelope::civil_from_days(days);
    if !(0..=9999).contains(&y) {
        push_str(out, &rfc3339(secs, micros));
        return;
    }
    let digits = |v: u64, width: usize, out: &mut String| {
        let mut buf = [b'0'; 6];
        let mut v = v;
        for i in (0..width).rev() {
            buf[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
        for &b in &buf[..width] {
            out.push(b as char);
        }
    };
    out.push('"');
    digits(y as u64, 4, out);
    out.push('-');
    digits(u64::from(mo), 2, out);
    out.push('-');
    digits(u64::from(d), 2, out);
    out.push('T');
    digits((tod / 3600) as u64, 2, out);
    out.push(':');
    digits((tod % 3600 / 60) as u64, 2, out);
    out.push(':');
    digits((tod % 60) as u64, 2, out);
    if let Some(us) = micros {
        out.push('.');
        digits(us.clamp(0, 999_999) as u64, 6, out);
    }
    out.push_str("Z\"");
}

/// RFC 3339 in UTC: whole seconds (`metav1.Time`), or with six fractional digits
/// (`metav1.MicroTime`, `micros` = the sub-second part in microseconds).
pub fn rfc3339(secs: i64, micros: Option<i64>) -> String {
    let t = super::envelope::Time {
        seconds: secs,
        nanos: 0,
    };
    let base = t.rfc3339();
    match micros {
        None => base,
        Some(us) => format!("{}.{:06}Z", &base[..base.len() - 1], us.clamp(0, 999_999)),
    }
}

/// Go's `time.Duration.String()`: `0s`, `1.5s`, `2m0s`, `1h0m0s`, `300ms`, `1µs`, `-5s`.
pub fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let neg = nanos < 0;
    let u = nanos.unsigned_abs();
    let mut s = String::new();
    if u < 1_000_000_000 {
        // Sub-second: ns, µs or ms with a fraction.
        let (unit, div) = if u < 1_000 {
            ("ns", 1)
        } else if u < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        s.push_str(&frac(u, div));
        s.push_str(unit);
    } else {
        let h = u / 3_600_000_000_000;
        let rem = u % 3_600_000_000_000;
        let m = rem / 60_000_000_000;
        let secs_ns = rem % 60_000_000_000;
        if h > 0 {
            s.push_str(&format!("{h}h{m}m"));
        } else if m > 0 {
            s.push_str(&format!("{m}m"));
        }
        s.push_str(&frac(secs_ns, 1_000_000_000));
        s.push('s');
    }
    if neg {
        s.insert(0, '-');
    }
    s
}

/// `v / div` with the fraction's trailing zeros trimmed, e.g. (1_500, 1_000) → `1.5`.
fn frac(v: u64, div: u64) -> String {
    let whole = v / div;
    let rem = v % div;
    if rem == 0 {
        return whole.to_string();
    }
    let width = div.to_string().len() - 1;
    let f = format!("{rem:0width$}");
    format!("{whole}.{}", f.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_go_prints_them() {
        assert_eq!(go_duration(0), "0s");
        assert_eq!(go_duration(1_500_000_000), "1.5s");
        assert_eq!(go_duration(120_000_000_000), "2m0s");
        assert_eq!(go_duration(3_600_000_000_000), "1h0m0s");
        assert_eq!(go_duration(300_000_000), "300ms");
        assert_eq!(go_duration(1_000), "1µs");
        assert_eq!(go_duration(-5_000_000_000), "-5s");
        assert_eq!(go_duration(3_723_000_000_000), "1h2m3s");
    }

    #[test]
    fn fast_times_match_the_formatted_ones() {
        for secs in [
            0i64,
            1,
            59,
            86_399,
            951_782_400,
            1_704_067_200,
            4_102_444_799,
            -1,
        ] {
            for micros in [None, Some(0), Some(5), Some(999_999)] {
                let mut out = String::new();
                push_rfc3339(&mut out, secs, micros);
                let mut want = String::new();
                push_str(&mut want, &rfc3339(secs, micros));
                assert_eq!(out, want, "{secs} {micros:?}");
            }
        }
    }

    #[test]
    fn times() {
        assert_eq!(rfc3339(0, None), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_709_251_199, None), "2024-02-29T23:59:59Z");
        assert_eq!(
            rfc3339(1_704_067_200, Some(5)),
            "2024-01-01T00:00:00.000005Z"
        );
    }

    #[test]
    fn plain_ascii_is_exact() {
        for (s, plain) in [
            (&b""[..], true),
            (b"nameValue", true),
            (b"0123456789abcdef~ !", true),
            (b"with \"quote\" inside", false),
            (b"back\\slash", false),
            (b"tab\there", false),
            (b"0123456\x7f", true),
            (b"01234567\x1f", false),
            (b"\xc3\xa9t\xc3\xa9", false),
        ] {
            assert_eq!(plain_ascii(s), plain, "{s:?}");
        }
        for b in 0u8..=255 {
            let v = [b'a', b'b', b'c', b'd', b'e', b'f', b'g', b];
            let want = (0x20..0x80).contains(&b) && b != b'"' && b != b'\\';
            assert_eq!(plain_ascii(&v), want, "byte {b:#x}");
            assert_eq!(plain_ascii(&v[7..]), want, "byte {b:#x} in the tail");
        }
        let mut out = String::new();
        push_bytes_as_str(&mut out, b"ok\xff");
        assert_eq!(out, "\"ok\u{fffd}\"");
    }

    #[test]
    fn json_strings_escape_controls() {
        let mut s = String::new();
        push_str(&mut s, "a\"b\\c\nd\u{1}");
        assert_eq!(s, r#""a\"b\\c\nd\u0001""#);
        let v: String = serde_json::from_str(&s).unwrap();
        assert_eq!(v, "a\"b\\c\nd\u{1}");
    }
}
