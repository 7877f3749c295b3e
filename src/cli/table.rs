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
