//! Aligned text tables for the commands that print them (`analyze`): a header and rows of
//! cells, names aligned left and numbers right, the last column unpadded.

use std::fmt::Write as _;

/// A table: a header and rows of cells; columns whose index is in `left` are aligned
/// left, the others right, and the last column is never padded (keys are long).
pub struct Table {
    pub header: Vec<&'static str>,
    pub rows: Vec<Vec<String>>,
    pub left: Vec<usize>,
}

impl Table {
    /// Appends the header and the rows to `o`, each line starting with `indent`.
    pub fn render(&self, o: &mut String, indent: &str) {
        let n = self.header.len();
        let header: Vec<String> = self.header.iter().map(|h| h.to_string()).collect();
        let mut width = vec![0usize; n];
        for row in std::iter::once(&header).chain(&self.rows) {
            for (w, c) in width.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count());
            }
        }
        for row in std::iter::once(&header).chain(&self.rows) {
            let mut line = String::from(indent);
            for (i, (c, w)) in row.iter().zip(&width).enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                let left = self.left.contains(&i);
                if left && i + 1 == n {
                    line.push_str(c);
                } else if left {
                    let _ = write!(line, "{c:<w$}");
                } else {
                    let _ = write!(line, "{c:>w$}");
                }
            }
            o.push_str(line.trim_end());
            o.push('\n');
        }
    }
}

/// How `analyze` names the history it counts: a db file's retained revisions, or the
/// versions a recording's replica holds. The usage columns mean the same in both.
#[derive(Clone, Copy, Debug)]
pub struct UsageWords {
    /// The bytes of every version: `RETAINED` (in the file) or `HELD` (by the replica).
    pub kept: &'static str,
    /// The versions counted: `REVISIONS` or `VERSIONS`.
    pub versions: &'static str,
    /// Versions per key: `REV/KEY` or `VER/KEY`.
    pub per_key: &'static str,
    /// Where the keys and versions are: `in the file`, `the replica holds`.
    pub whence: &'static str,
}

/// A db file's words.
pub const DB_FILE_WORDS: UsageWords = UsageWords {
    kept: "RETAINED",
    versions: "REVISIONS",
    per_key: "REV/KEY",
    whence: "with a revision in the file",
};

/// A recording's words.
pub const RECORDING_WORDS: UsageWords = UsageWords {
    kept: "HELD",
    versions: "VERSIONS",
    per_key: "VER/KEY",
    whence: "with a version the replica holds",
};

/// The usage columns after the first (`RESOURCE`, `NAMESPACE`): keys seen, live keys, live
/// bytes, kept bytes, versions, versions per key, deletions.
pub fn usage_header(first: &'static str, w: UsageWords) -> Vec<&'static str> {
    vec![
        first,
        "KEYS",
        "LIVE KEYS",
        "LIVE BYTES",
        w.kept,
        w.versions,
        w.per_key,
        "DELETES",
    ]
}

/// The cells of [`usage_header`]'s columns for one row. The per-key figure is
/// [`Usage::revisions_per_key`]: versions over every key seen, live or deleted, which is
/// why `KEYS` stands beside it.
///
/// [`Usage::revisions_per_key`]: crate::source::etcd_db::analysis::Usage::revisions_per_key
pub fn usage_cells(u: &crate::source::etcd_db::analysis::Usage) -> Vec<String> {
    use crate::derive::units::{bytes, thousands};
    vec![
        thousands(u.keys),
        thousands(u.live_keys),
        bytes(u.live_bytes),
        bytes(u.retained_bytes),
        thousands(u.revisions),
        format!("{:.1}", u.revisions_per_key()),
        thousands(u.tombstones),
    ]
}

/// `analyze`'s namespace table under `title`, in the order given, with [`usage_header`]'s
/// columns; `none` under the title when there are none.
pub fn namespace_table(
    o: &mut String,
    title: &str,
    namespaces: &[crate::source::etcd_db::analysis::NamespaceUsage],
    w: UsageWords,
) {
    let _ = writeln!(o, "\n{title}");
    if namespaces.is_empty() {
        let _ = writeln!(o, "  none");
        return;
    }
    Table {
        header: usage_header("NAMESPACE", w),
        rows: namespaces
            .iter()
            .map(|n| {
                let mut row = vec![n.namespace.clone()];
                row.extend(usage_cells(&n.usage));
                row
            })
            .collect(),
        left: vec![0],
    }
    .render(o, "  ");
}

/// The line under a usage table that says what `KEYS` and the per-key column count.
pub fn usage_note(w: UsageWords) -> String {
    format!(
        "  (KEYS: every key {}, live or deleted; {}: {} / KEYS, deletions counted as versions)",
        w.whence, w.per_key, w.versions
    )
}

/// A titled table of keys (`analyze`'s largest objects and most revisions, of a db file or
/// a recording): newest value bytes, versions, their bytes, live or when deleted, the key;
/// `none` under the title when there are none. `header` names the five columns.
pub fn key_usage_table(
    o: &mut String,
    title: &str,
    keys: &[crate::source::etcd_db::analysis::KeyUsage],
    header: [&'static str; 5],
) {
    use crate::derive::units::{bytes, thousands};
    let _ = writeln!(o, "\n{title}");
    if keys.is_empty() {
        let _ = writeln!(o, "  none");
        return;
    }
    Table {
        header: header.to_vec(),
        rows: keys
            .iter()
            .map(|k| {
                vec![
                    bytes(k.bytes),
                    thousands(k.revisions),
                    bytes(k.retained_bytes),
                    if k.live {
                        "live".into()
                    } else {
                        format!("deleted at {}", k.newest_revision)
                    },
                    k.key.clone(),
                ]
            })
            .collect(),
        left: vec![3, 4],
    }
    .render(o, "  ");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_per_key_count_every_key_seen_and_say_so() {
        use crate::source::etcd_db::analysis::Usage;
        // Two keys: one live with 3 versions, one deleted (a put and its deletion).
        let u = Usage {
            keys: 2,
            live_keys: 1,
            live_bytes: 10,
            revisions: 5,
            tombstones: 1,
            retained_bytes: 400,
        };
        let cells = usage_cells(&u);
        let header = usage_header("RESOURCE", DB_FILE_WORDS);
        assert_eq!(header.len(), cells.len() + 1);
        let at = |name: &str| header.iter().position(|h| *h == name).unwrap() - 1;
        assert_eq!(cells[at("KEYS")], "2");
        assert_eq!(cells[at("LIVE KEYS")], "1");
        // 5 revisions over the 2 keys seen, not over the 1 live key.
        assert_eq!(cells[at("REV/KEY")], "2.5");
        assert_eq!(
            usage_note(DB_FILE_WORDS),
            "  (KEYS: every key with a revision in the file, live or deleted; REV/KEY: REVISIONS / KEYS, deletions counted as versions)"
        );
        // A recording's table: the same columns under its own words.
        let rec = usage_header("RESOURCE", RECORDING_WORDS);
        assert_eq!(rec.len(), header.len());
        assert_eq!(rec[at("REV/KEY") + 1], "VER/KEY");
        assert!(usage_note(RECORDING_WORDS).contains("VER/KEY: VERSIONS / KEYS"));
        assert_eq!(usage_cells(&Usage::default())[at("REV/KEY")], "0.0");
    }

    #[test]
    fn tables_align_numbers_right_and_names_left() {
        let mut o = String::new();
        Table {
            header: vec!["NAME", "N", "KEY"],
            rows: vec![
                vec!["pods".into(), "1,234".into(), "/registry/pods/a".into()],
                vec!["configmaps".into(), "5".into(), "/b".into()],
            ],
            left: vec![0, 2],
        }
        .render(&mut o, "  ");
        assert_eq!(
            o,
            "  NAME            N  KEY\n  pods        1,234  /registry/pods/a\n  configmaps      5  /b\n"
        );
    }
}
