//! `regscope diff`'s output for people: the two sides, a table of the keys created,
//! deleted, changed and recreated (deleted and created again) per resource with the total, the keys changed most in size, and
//! each `--key`'s field-by-field diff.

use std::fmt::Write as _;

use super::key_diff::KeyDiff;
use super::side::Side;
use crate::config::Zone;
use crate::derive::changes::{ChangeKind, Compared, KeyChange, ResourceChanges};
use crate::derive::units::{bytes, thousands, thousands_i};

/// The whole text.
pub fn render(
    a: &Side,
    b: &Side,
    c: &Compared,
    under: &str,
    key_diffs: &[KeyDiff],
    zone: Zone,
) -> String {
    let mut o = String::new();
    for (name, side) in [("A", a), ("B", b)] {
        let _ = writeln!(
            o,
            "{name}  {}: {}",
            side.file.display(),
            side.moment_text(zone)
        );
    }
    let under = if under.is_empty() {
        String::new()
    } else {
        format!(" under {under}")
    };
    if c.is_empty() {
        let _ = writeln!(
            o,
            "\nNo differences: the {} keys{under} are the same in A and B ({}).",
            thousands(c.keys_from),
            bytes(c.total.bytes_from)
        );
    } else {
        let _ = writeln!(
            o,
            "\nKeys{under}: {} in A ({}), {} in B ({}).\n",
            thousands(c.keys_from),
            bytes(c.total.bytes_from),
            thousands(c.keys_to),
            bytes(c.total.bytes_to)
        );
        o.push_str(&resource_table(c));
        if !c.top_keys.is_empty() {
            let _ = writeln!(
                o,
                "\nChanged most in size ({} of {}):",
                c.top_keys.len(),
                thousands(c.total.differences())
            );
            o.push_str(&key_lines(&c.top_keys));
        }
    }
    for d in key_diffs {
        o.push('\n');
        o.push_str(&key_diff_text(d));
    }
    o
}

/// `+3.1 KiB`, `-120 B`, `0 B`.
fn signed_bytes(n: i64) -> String {
    match n.signum() {
        1 => format!("+{}", bytes(n.unsigned_abs())),
        -1 => format!("-{}", bytes(n.unsigned_abs())),
        _ => "0 B".into(),
    }
}

fn resource_table(c: &Compared) -> String {
    let mut rows = vec![[
        "RESOURCE",
        "CREATED",
        "BYTES",
        "DELETED",
        "BYTES",
        "CHANGED",
        "SIZE CHANGE",
        "RECREATED",
        "SIZE CHANGE",
        "BYTES IN A",
        "BYTES IN B",
    ]
    .map(str::to_owned)
    .to_vec()];
    let row = |name: &str, r: &ResourceChanges| {
        vec![
            name.to_string(),
            thousands(r.created),
            signed_bytes(r.bytes_created as i64),
            thousands(r.deleted),
            signed_bytes(-(r.bytes_deleted as i64)),
            thousands(r.changed),
            signed_bytes(r.bytes_changed_delta),
            thousands(r.recreated),
            signed_bytes(r.bytes_recreated_delta),
            bytes(r.bytes_from),
            bytes(r.bytes_to),
        ]
    };
    for r in &c.per_resource {
        rows.push(row(&r.resource, r));
    }
    rows.push(row("total", &c.total));
    columns(
        &rows,
        &[
            false, true, true, true, true, true, true, true, true, true, true,
        ],
    )
}

/// Rows aligned in columns two spaces apart (`right`: which columns are numbers).
fn columns(rows: &[Vec<String>], right: &[bool]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut o = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let pad = width[i].saturating_sub(cell.chars().count());
            if right.get(i).copied().unwrap_or(false) {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            }
        }
        o.push_str(line.trim_end());
        o.push('\n');
    }
    o
}

/// One line per key: `~ KEY  3,100 B → 3,220 B (+120 B)  r30 → r35`; a key deleted and
/// created again: `± KEY  … r30 → r35 (created again at r33)`.
fn key_lines(keys: &[KeyChange]) -> String {
    let rows: Vec<Vec<String>> = keys
        .iter()
        .map(|k| {
            let r = |r: Option<i64>| r.map_or_else(String::new, |r| format!("r{r}"));
            // Exact sizes: a key's change is often a few bytes.
            let b = |n: Option<u64>| format!("{} B", thousands(n.unwrap_or(0)));
            let (size, revs) = match k.change {
                ChangeKind::Created => (b(k.bytes_to), r(k.mod_revision_to)),
                ChangeKind::Deleted => (b(k.bytes_from), r(k.mod_revision_from)),
                ChangeKind::Changed => (
                    format!(
                        "{} → {} ({})",
                        b(k.bytes_from),
                        b(k.bytes_to),
                        signed_bytes(k.bytes_delta())
                    ),
                    format!("{} → {}", r(k.mod_revision_from), r(k.mod_revision_to)),
                ),
                ChangeKind::Recreated => (
                    format!(
                        "{} → {} ({})",
                        b(k.bytes_from),
                        b(k.bytes_to),
                        signed_bytes(k.bytes_delta())
                    ),
                    format!(
                        "{} → {} (created again at {})",
                        r(k.mod_revision_from),
                        r(k.mod_revision_to),
                        r(k.create_revision_to)
                    ),
                ),
            };
            vec![format!("  {} {}", k.change.sign(), k.key), size, revs]
        })
        .collect();
    columns(&rows, &[false, true, false])
}

fn key_diff_text(d: &KeyDiff) -> String {
    let mut o = String::new();
    let v = |v: &Option<super::key_diff::Version>| {
        v.as_ref().map_or_else(
            || "absent".to_string(),
            |v| {
                format!(
                    "revision {} ({} bytes)",
                    thousands_i(v.mod_revision),
                    thousands(v.bytes as u64)
                )
            },
        )
    };
    if d.from.is_none() && d.to.is_none() {
        // Absent on both sides: said once.
        let _ = writeln!(o, "--key {}: absent in A and in B", d.key);
        return o;
    }
    let _ = writeln!(
        o,
        "--key {}: {}, {} in A, {} in B",
        d.key,
        d.change,
        v(&d.from),
        v(&d.to)
    );
    if let Some(e) = &d.error {
        let _ = writeln!(o, "  {e}");
        return o;
    }
    for w in &d.writers {
        let _ = writeln!(o, "  written by {w}");
    }
    if d.change == "changed" && d.lines.is_empty() {
        o.push_str("  no differences besides metadata.resourceVersion\n");
    }
    for l in &d.lines {
        let _ = writeln!(o, "  {l}");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_numbers_right_and_words_left() {
        let rows = vec![
            vec!["a".to_string(), "1".to_string()],
            vec!["long".to_string(), "1,000".to_string()],
        ];
        assert_eq!(columns(&rows, &[false, true]), "a         1\nlong  1,000\n");
        assert_eq!(signed_bytes(2048), "+2.0 KiB");
        assert_eq!(signed_bytes(-120), "-120 B");
        assert_eq!(signed_bytes(0), "0 B");
    }

    #[test]
    fn a_key_absent_on_both_sides_says_absent_once() {
        let d = KeyDiff {
            key: "/registry/nothing".into(),
            change: "absent",
            from: None,
            to: None,
            changes: Vec::new(),
            managed_fields: Vec::new(),
            writers: Vec::new(),
            lines: Vec::new(),
            error: None,
        };
        let t = key_diff_text(&d);
        assert_eq!(t, "--key /registry/nothing: absent in A and in B\n");
        assert_eq!(t.matches("absent").count(), 1);
    }
}
