//! `regscope diff A [B] [--at T]…`: the keyspace at two moments compared, of two files
//! (etcd's db file or a recording, each at its end or at the moment `--at` gives) or of one
//! file at two moments.
//!
//! Each side is played into a [`crate::store::Session`] ([`side`]), as `snapshot --json
//! --from FILE --at T` plays it; the two replicas' live keys are compared with
//! [`crate::derive::changes`], the comparison `regscope report` makes between its `--from`
//! and `--to`. Two files may hold two histories (two clusters), so there a key whose
//! revision agrees on both sides is also compared by value (Secrets of a redacted recording
//! excepted: those by revision only); one file at two moments is one history. `--key` adds a key's two objects decoded and
//! compared field by field ([`key_diff`]). Output: a table ([`text`]) or one JSON object
//! (its shape in `regscope diff --help`). Exit status as diff(1): 0 equal, 1 different,
//! 2 trouble (a file missing, unreadable or damaged, a moment outside it). Memory: both
//! sessions at once.

mod key_diff;
mod side;
mod text;

use std::process::ExitCode;

use anyhow::Result;
use serde_json::json;

use super::args::{DiffArgs, UiArgs};
use super::out;
use crate::derive::changes::{self, CompareOptions, Compared};
use key_diff::{key_diff, Decoding, KeyDiff};
use side::{SameRevision, Side, ValueCheck};

/// The moments of the two sides from the files and `--at`s given: one file at two
/// moments, or two files each at its end or at one moment (A's `--at` first).
fn moments<'a>(
    files: &'a [std::path::PathBuf],
    at: &'a [String],
) -> Result<[(&'a std::path::Path, Option<&'a str>); 2], String> {
    let nth = |i: usize| at.get(i).map(String::as_str);
    match (files, at.len()) {
        ([f], 2) => Ok([(f.as_path(), nth(0)), (f.as_path(), nth(1))]),
        ([_], n) => Err(format!(
            "one file is compared at two moments: give --at twice (e.g. --at r100 --at end), not {n} time{}",
            if n == 1 { "" } else { "s" }
        )),
        ([a, b], 0) => Ok([(a.as_path(), None), (b.as_path(), None)]),
        ([a, b], 2) => Ok([(a.as_path(), nth(0)), (b.as_path(), nth(1))]),
        ([_, _], n) => Err(format!(
            "with two files, give --at twice (A's moment, then B's) or not at all (each file's end), not {n} time{}",
            if n == 1 { "" } else { "s" }
        )),
        _ => Err("give one file (with --at twice) or two files".into()),
    }
}

/// See the module docs.
pub fn run(d: &DiffArgs, ui: &UiArgs) -> Result<ExitCode> {
    let trouble = |e: String| {
        eprintln!("regscope: {e}");
        Ok(ExitCode::from(2))
    };
    let [(fa, at_a), (fb, at_b)] = match moments(&d.files, &d.at) {
        Ok(m) => m,
        Err(e) => return trouble(e),
    };
    let prefix = d.prefix.as_deref();
    let zone = ui.zone();
    let a = match Side::open(fa, at_a, prefix, zone) {
        Ok(s) => s,
        Err(e) => return trouble(e),
    };
    let b = match Side::open(fb, at_b, prefix, zone) {
        Ok(s) => s,
        Err(e) => return trouble(e),
    };
    // A db file with no key under the prefix: said on stderr; when neither side holds one,
    // there is nothing to compare (trouble, not "no differences").
    let mut no_keys: Vec<&String> = [&a, &b]
        .into_iter()
        .filter_map(|s| s.no_keys.as_ref())
        .collect();
    // One file at two moments says it once.
    no_keys.dedup();
    for line in no_keys {
        eprintln!("regscope: {line}");
    }
    if a.no_keys.is_some() && b.no_keys.is_some() {
        return Ok(ExitCode::from(2));
    }
    let keyring = if d.key.is_empty() {
        None
    } else {
        match super::options::keyring_or_exit(ui) {
            Ok(k) => k,
            Err(code) => return Ok(code),
        }
    };
    let mut notes: Vec<String> = a.notes.iter().chain(&b.notes).cloned().collect();
    if a.root() != b.root() && prefix.is_none() {
        notes.push(format!(
            "A's keys are under {} and B's under {}: each side is compared under its own (give --prefix to compare one prefix)",
            String::from_utf8_lossy(a.root()),
            String::from_utf8_lossy(b.root())
        ));
    }
    let under_a = prefix.map_or_else(|| a.root().to_vec(), |p| p.as_bytes().to_vec());
    let under_b = prefix.map_or_else(|| b.root().to_vec(), |p| p.as_bytes().to_vec());
    // One file at two moments is one history; two files may be two.
    let same_revision = SameRevision::new(&a, &b, fa == fb);
    let mut skipped_secrets = 0u64;
    // Keys at one mod_revision on both sides whose values differ.
    let mut same_revision_other_value = 0u64;
    if same_revision.two_clusters {
        notes.push(format!(
            "{} and {} share no etcd member: they are not one cluster's history, so their revisions do not compare (a key live in both is changed, never recreated)",
            fa.display(),
            fb.display()
        ));
    }
    // Resources are named after A's prefix; every key (`--prefix ''`) after the default.
    let root = if a.root().is_empty() {
        side::REGISTRY.as_bytes()
    } else {
        a.root()
    };
    let compared = changes::compare(
        changes::live_keys(&a.session.replica, &under_a),
        changes::live_keys(&b.session.replica, &under_b),
        &CompareOptions {
            root,
            top: d.top,
            every_key: d.json,
            recreated: !same_revision.two_clusters,
        },
        |key| match same_revision.compare(key, &a, &b) {
            ValueCheck::Same => false,
            ValueCheck::Differs => {
                same_revision_other_value += 1;
                true
            }
            ValueCheck::Redacted => {
                skipped_secrets += 1;
                false
            }
        },
    );
    if skipped_secrets > 0 {
        notes.push(format!(
            "{skipped_secrets} Secret{} at the same revision on both sides compared by revision only: a recording's Secret values are redacted",
            if skipped_secrets == 1 { "" } else { "s" }
        ));
    }
    if same_revision_other_value > 0 {
        let n = same_revision_other_value;
        notes.push(format!(
            "{n} key{} at the same mod_revision on both sides with different values: a damaged file, or two clusters' histories",
            if n == 1 { "" } else { "s" }
        ));
    }
    let under_text = prefix.map_or_else(
        || String::from_utf8_lossy(a.root()).into_owned(),
        str::to_owned,
    );
    if compared.keys_from == 0 && compared.keys_to == 0 {
        notes.push(format!("no key under {under_text} on either side"));
    }
    if ui.show_secrets && !d.key.is_empty() {
        for s in [&a, &b].into_iter().filter(|s| s.secrets_redacted) {
            notes.push(format!(
                "--show-secrets: {} was recorded without it, its Secret data is redacted",
                s.file.display()
            ));
        }
    }
    let how = Decoding {
        keyring: keyring.as_ref(),
        show_secrets: ui.show_secrets,
    };
    let key_diffs: Vec<KeyDiff> = d
        .key
        .iter()
        .map(|k| {
            key_diff(
                &super::decode::etcd_key_bytes(k),
                &a,
                &b,
                &how,
                &same_revision,
            )
        })
        .collect();
    let damage: Vec<&String> = a.damage.iter().chain(&b.damage).collect();
    let differs = !compared.is_empty() || key_diffs.iter().any(KeyDiff::differs);
    if d.json {
        out(format_args!(
            "{}\n",
            serde_json::to_string_pretty(&to_json(
                &a,
                &b,
                &compared,
                &under_text,
                &key_diffs,
                &notes
            ))?
        ));
    } else {
        out(format_args!(
            "{}",
            text::render(&a, &b, &compared, &under_text, &key_diffs, zone)
        ));
    }
    for n in &notes {
        eprintln!("regscope diff: {n}");
    }
    for x in &damage {
        eprintln!("regscope: damaged recording: {x}");
    }
    Ok(match (damage.is_empty(), differs) {
        (false, _) => ExitCode::from(2),
        (true, true) => ExitCode::from(1),
        (true, false) => ExitCode::SUCCESS,
    })
}

/// The `--json` object (shape in `regscope diff --help`).
fn to_json(
    a: &Side,
    b: &Side,
    c: &Compared,
    under: &str,
    key_diffs: &[KeyDiff],
    notes: &[String],
) -> serde_json::Value {
    json!({
        "from": a.json(c.keys_from, c.total.bytes_from),
        "to": b.json(c.keys_to, c.total.bytes_to),
        "prefix": under,
        "identical": c.is_empty(),
        "total": c.total,
        "per_resource": c.per_resource,
        "top_keys": c.top_keys,
        "keys": c.keys,
        "key_diffs": key_diffs,
        "notes": notes,
        "damage": a.damage.iter().chain(&b.damage).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn moments_pair_files_with_their_at() {
        let one = [PathBuf::from("a.db")];
        let two = [PathBuf::from("a.db"), PathBuf::from("b.rgs")];
        let at = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let both = at(&["r30", "end"]);
        let m = moments(&one, &both).unwrap();
        assert_eq!(m[0], (one[0].as_path(), Some("r30")));
        assert_eq!(m[1], (one[0].as_path(), Some("end")));
        assert!(moments(&one, &at(&["r30"]))
            .unwrap_err()
            .contains("--at twice"));
        assert!(moments(&one, &[]).is_err());
        let m = moments(&two, &[]).unwrap();
        assert_eq!(m[0], (two[0].as_path(), None));
        assert_eq!(m[1], (two[1].as_path(), None));
        let two_at = at(&["r5", "-1m"]);
        let m = moments(&two, &two_at).unwrap();
        assert_eq!(m[1], (two[1].as_path(), Some("-1m")));
        assert!(moments(&two, &at(&["r5"]))
            .unwrap_err()
            .contains("A's moment, then B's"));
        assert!(moments(&two, &at(&["1", "2", "3"])).is_err());
    }
}
