//! Syntax colour for the decoded body of the opened key: mapping keys, strings, other scalars
//! (numbers, booleans, null), `#` note lines and `<redacted: N bytes>` values, as theme
//! [`Role`]s over byte ranges of each line.
//!
//! Input: the lines of [`crate::decode::Rendered`] (YAML as serde_norway prints it, or
//! pretty JSON). Output: one span list per line, computed once per render in the app's
//! update, so drawing only slices strings. This is a line classifier for that printer's
//! output, not a YAML parser: block scalars (`key: |`) are followed across lines; anything
//! unexpected stays plain text.

use std::ops::Range;

use super::theme::Role;

/// The styled spans of one line: (role, byte range), covering the line in order.
pub(crate) type Styled = Vec<(Role, Range<usize>)>;

const REDACTED: &str = "<redacted:";

/// Styles every line: YAML unless `json`.
pub(crate) fn highlight(lines: &[String], json: bool) -> Vec<Styled> {
    let mut block: Option<usize> = None;
    lines
        .iter()
        .map(|l| {
            if json {
                json_line(l)
            } else {
                yaml_line(l, &mut block)
            }
        })
        .collect()
}

/// Spans for a body that is not an object (hex dump, messages): plain text, notes kept.
pub(crate) fn plain(lines: &[String]) -> Vec<Styled> {
    lines
        .iter()
        .map(|l| {
            let role = if l.contains(REDACTED) {
                Role::Redacted
            } else {
                Role::Text
            };
            vec![(role, 0..l.len())]
        })
        .collect()
}

fn note(line: &str) -> Option<Styled> {
    (line.starts_with('#') || line.starts_with('!'))
        .then(|| vec![(Role::SyntaxNote, 0..line.len())])
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// YAML: `block` holds the key column of an open block scalar (`key: |`).
fn yaml_line(line: &str, block: &mut Option<usize>) -> Styled {
    let indent = indent_of(line);
    if let Some(col) = *block {
        if line.trim().is_empty() || indent > col {
            return vec![(Role::SyntaxString, 0..line.len())];
        }
        *block = None;
    }
    if let Some(n) = note(line) {
        return n;
    }
    let mut out: Styled = Vec::new();
    let mut i = indent;
    while line[i..].starts_with("- ") || &line[i..] == "-" {
        i += 2.min(line.len() - i);
    }
    if i > 0 {
        out.push((Role::Text, 0..i));
    }
    let key_col = i;
    if let Some(colon) = yaml_key_end(line, i) {
        out.push((Role::SyntaxKey, i..colon));
        out.push((Role::Text, colon..colon + 1));
        i = colon + 1;
        let rest = line[i..].trim_start();
        if rest.starts_with('|') || rest.starts_with('>') {
            out.push((Role::Text, i..line.len()));
            *block = Some(key_col);
            return out;
        }
    } else if line[i..].starts_with('|') || line[i..].starts_with('>') {
        // A block scalar as a list item.
        out.push((Role::Text, i..line.len()));
        *block = Some(key_col.saturating_sub(2));
        return out;
    }
    if i < line.len() {
        let value = &line[i..];
        let lead = value.len() - value.trim_start().len();
        if lead > 0 {
            out.push((Role::Text, i..i + lead));
        }
        out.push((scalar_role(value.trim_start()), i + lead..line.len()));
    }
    out
}

/// The index of the `:` ending a mapping key that starts at `start`, if the line has one.
fn yaml_key_end(line: &str, start: usize) -> Option<usize> {
    let rest = &line[start..];
    let b = rest.as_bytes();
    match b.first() {
        Some(q @ (b'\'' | b'"')) => {
            let close = quoted_end(rest, *q)?;
            let after = &rest[close + 1..];
            (after.starts_with(": ") || after == ":").then_some(start + close + 1)
        }
        Some(_) => {
            if let Some(p) = rest.find(": ") {
                Some(start + p)
            } else if rest.ends_with(':') {
                Some(line.len() - 1)
            } else {
                None
            }
        }
        None => None,
    }
}

/// Index of the closing quote of a string starting with quote `q` at 0 (`''` escapes in
/// single quotes, `\"` in double quotes).
fn quoted_end(s: &str, q: u8) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 1;
    while i < b.len() {
        if q == b'"' && b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == q {
            if q == b'\'' && b.get(i + 1) == Some(&b'\'') {
                i += 2;
                continue;
            }
            return Some(i);
        }
        i += 1;
    }
    None
}

fn scalar_role(v: &str) -> Role {
    let t = v.trim_end_matches(',').trim();
    if t.contains(REDACTED) {
        Role::Redacted
    } else if t.starts_with('\'') || t.starts_with('"') {
        Role::SyntaxString
    } else if matches!(t, "{}" | "[]" | "{" | "[" | "}" | "]" | "") {
        Role::Text
    } else if matches!(
        t,
        "null" | "~" | "true" | "false" | ".inf" | "-.inf" | ".nan"
    ) || t.parse::<f64>().is_ok()
    {
        Role::SyntaxScalar
    } else {
        Role::SyntaxString
    }
}

fn json_line(line: &str) -> Styled {
    if let Some(n) = note(line) {
        return n;
    }
    let indent = indent_of(line);
    let mut out: Styled = Vec::new();
    if indent > 0 {
        out.push((Role::Text, 0..indent));
    }
    let mut i = indent;
    let rest = &line[i..];
    if rest.starts_with('"') {
        if let Some(close) = quoted_end(rest, b'"') {
            if rest[close + 1..].starts_with(':') {
                out.push((Role::SyntaxKey, i..i + close + 1));
                out.push((Role::Text, i + close + 1..i + close + 2));
                i += close + 2;
            }
        }
    }
    let value = &line[i..];
    let lead = value.len() - value.trim_start().len();
    if lead > 0 {
        out.push((Role::Text, i..i + lead));
        i += lead;
    }
    let v = &line[i..];
    let body_end = if v.starts_with('"') {
        quoted_end(v, b'"').map_or(v.len(), |c| c + 1)
    } else {
        v.trim_end_matches(',').len()
    };
    if body_end > 0 {
        out.push((scalar_role(&v[..body_end]), i..i + body_end));
    }
    if i + body_end < line.len() {
        out.push((Role::Text, i + body_end..line.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `role:text` for each non-blank span.
    fn show(lines: &[&str], json: bool) -> Vec<String> {
        let owned: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        highlight(&owned, json)
            .iter()
            .zip(&owned)
            .map(|(spans, l)| {
                let covered: usize = spans.iter().map(|(_, r)| r.len()).sum();
                assert_eq!(covered, l.len(), "spans cover {l:?}: {spans:?}");
                spans
                    .iter()
                    .filter(|(_, r)| !l[r.clone()].trim().is_empty())
                    .map(|(role, r)| format!("{}:{}", role.name(), l[r.clone()].trim()))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    #[test]
    fn yaml_keys_strings_scalars_notes_redacted_and_block_scalars() {
        let got = show(
            &[
                "# Secret: data and stringData values are redacted",
                "apiVersion: v1",
                "data:",
                "  password: '<redacted: 7 bytes>'",
                "metadata:",
                "  annotations:",
                "    kubectl.kubernetes.io/last-applied-configuration: |",
                "      {\"kind\":\"Deployment\"}",
                "    'a: b': 'x'",
                "  generation: 3",
                "  labels:",
                "    n: '3'",
                "spec:",
                "  containers:",
                "  - name: app",
                "    ports:",
                "    - containerPort: 80",
                "  f:",
                "    k:{\"name\":\"app\"}:",
                "      .: {}",
                "  hostNetwork: false",
                "  nodeName: null",
                "  args:",
                "  - --v=2",
            ],
            false,
        );
        assert_eq!(
            got,
            [
                "syntax_note:# Secret: data and stringData values are redacted",
                "syntax_key:apiVersion text:: syntax_string:v1",
                "syntax_key:data text::",
                "syntax_key:password text:: redacted:'<redacted: 7 bytes>'",
                "syntax_key:metadata text::",
                "syntax_key:annotations text::",
                "syntax_key:kubectl.kubernetes.io/last-applied-configuration text:: text:|",
                "syntax_string:{\"kind\":\"Deployment\"}",
                "syntax_key:'a: b' text:: syntax_string:'x'",
                "syntax_key:generation text:: syntax_scalar:3",
                "syntax_key:labels text::",
                "syntax_key:n text:: syntax_string:'3'",
                "syntax_key:spec text::",
                "syntax_key:containers text::",
                "text:- syntax_key:name text:: syntax_string:app",
                "syntax_key:ports text::",
                "text:- syntax_key:containerPort text:: syntax_scalar:80",
                "syntax_key:f text::",
                "syntax_key:k:{\"name\":\"app\"} text::",
                "syntax_key:. text:: text:{}",
                "syntax_key:hostNetwork text:: syntax_scalar:false",
                "syntax_key:nodeName text:: syntax_scalar:null",
                "syntax_key:args text::",
                "text:- syntax_string:--v=2",
            ]
        );
    }

    #[test]
    fn json_lines() {
        let got = show(
            &[
                "{",
                "  \"data\": {",
                "    \"password\": \"<redacted: 7 bytes>\"",
                "  },",
                "  \"k:{\\\"name\\\":\\\"x\\\"}\": 1.5,",
                "  \"list\": [",
                "    \"a\",",
                "    true",
                "  ]",
                "}",
            ],
            true,
        );
        assert_eq!(
            got,
            [
                "text:{",
                "syntax_key:\"data\" text:: text:{",
                "syntax_key:\"password\" text:: redacted:\"<redacted: 7 bytes>\"",
                "text:} text:,",
                "syntax_key:\"k:{\\\"name\\\":\\\"x\\\"}\" text:: syntax_scalar:1.5 text:,",
                "syntax_key:\"list\" text:: text:[",
                "syntax_string:\"a\" text:,",
                "syntax_scalar:true",
                "text:]",
                "text:}",
            ]
        );
    }
}
