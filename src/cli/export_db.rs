//! `regscope export DB`: etcd's own db file as the same JSON lines `export` writes for a
//! recording: the keys alive at `--from` (default: the file's finished compaction, the
//! oldest state it holds whole) as `list_item` lines marked with that revision, `"from":
//! N` (a recording's say `"from": "start"`, as it starts at a time; `--from start` of a db
//! file is its compaction's revision), then every version the file retains after it, up
//! to `--to` (default: its head), as an `event` line (`op` `put` or `delete`, with
//! `revision` and `sub`, its place in the transaction).
//!
//! A db file holds revisions, not times: lines carry no `at`, and `--from`/`--to` take
//! revisions (`rN`, `start`, `end`). A delete's line is what a watch reports for it: the
//! key and `mod_revision`, other fields 0. Keys under `--prefix`, by default kube-apiserver's
//! `/registry` (every key of the file, `compact_rev_key` included, with `--prefix ''`).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use serde_json::json;

use super::args::{ExportArgs, UiArgs};
use super::db_file::{open, parse_revision};
use super::export::{kv_json, ExportLines};
use crate::model::Observation;
use crate::source::etcd_db;

/// The prefix kube-apiserver stores under when `--etcd-prefix` is not given.
const REGISTRY: &str = "/registry";

/// See the module docs. Exit 2 when the file cannot be read or a flag is outside it, 1
/// when the file turns out damaged part way (what was written stands; the error says
/// where).
pub fn run(e: &ExportArgs, ui: &UiArgs) -> Result<ExitCode> {
    let db = match open(&e.file) {
        Ok(d) => d,
        Err(code) => return Ok(code),
    };
    let bound = |flag: &str, v: &Option<String>, default: Result<i64, String>| match v {
        Some(t) => parse_revision(flag, t, &db),
        None => default,
    };
    let head = db.head().map_err(|x| x.to_string());
    let (from, to) = match (
        bound("--from", &e.from, Ok(db.compacted().max(1))),
        bound("--to", &e.to, head),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(m), _) | (_, Err(m)) => {
            eprintln!("regscope: {m}");
            return Ok(ExitCode::from(2));
        }
    };
    if from > to {
        eprintln!("regscope: --from r{from} is after --to r{to}: nothing to export");
        return Ok(ExitCode::from(2));
    }
    let keyring = match super::options::keyring_or_exit(ui) {
        Ok(k) => k,
        Err(code) => return Ok(code),
    };
    let key_filter = e.prefix.clone().unwrap_or_else(|| REGISTRY.to_string());
    let form = ExportLines {
        prefix: REGISTRY,
        key_filter: Some(&key_filter),
        e,
        keyring: keyring.as_ref(),
        show_secrets: ui.show_secrets,
    };
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let (mut listed, mut events) = (0u64, 0u64);
    let mut write_error = None;
    let mut write = |line: serde_json::Value| {
        if write_error.is_none() {
            if let Err(x) = writeln!(stdout, "{line}") {
                write_error = Some(x);
            }
        }
    };
    let listing = etcd_db::state_at(&db, from, key_filter.as_bytes(), |obs| {
        if let Observation::ListPage { kvs } = obs {
            for kv in &kvs {
                let mut line = kv_json("list_item", None, kv, &form);
                // The revision asked for (`--from start` resolved), not a word: the file
                // holds revisions and the export starts at one.
                line["from"] = json!(from);
                line["revision"] = json!(from);
                write(line);
                listed += 1;
            }
        }
    });
    let mut damaged = listing.err();
    if damaged.is_none() {
        for v in db.versions_from(from + 1) {
            let v = match v {
                Ok(v) => v,
                Err(x) => {
                    damaged = Some(x);
                    break;
                }
            };
            if v.main > to {
                break;
            }
            if !v.kv.key.starts_with(key_filter.as_bytes()) {
                continue;
            }
            let op = if v.tombstone { "delete" } else { "put" };
            let mut line = kv_json("event", Some(op), &v.kv, &form);
            line["revision"] = json!(v.main);
            line["sub"] = json!(v.sub);
            write(line);
            events += 1;
        }
    }
    if write_error.is_none() {
        if let Err(x) = stdout.flush() {
            write_error = Some(x);
        }
    }
    if let Some(x) = write_error {
        super::stdout_error(&x);
        return Ok(ExitCode::from(2));
    }
    let under = if key_filter.is_empty() {
        "of any key".to_string()
    } else {
        format!("under {key_filter}")
    };
    eprintln!(
        "regscope: exported {listed} key{} {under} alive at revision {from} and {events} version{} written after it up to revision {to}",
        if listed == 1 { "" } else { "s" },
        if events == 1 { "" } else { "s" }
    );
    if listed == 0 && events == 0 && damaged.is_none() {
        super::db_file::warn_no_keys_under(&db, key_filter.as_bytes());
    }
    if let Some(x) = damaged {
        eprintln!("regscope: damaged db file, export stopped there: {x}");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
