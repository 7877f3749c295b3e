//! `regscope analyze REC`: what a recording's session holds at its end, by the same
//! figures `analyze` gives a db file (see [`super::analyze`]), as far as the replica holds
//! them: its live keys are etcd's at the recording's last revision, but its history
//! reaches back only to where it started, etcd's compaction, or its history budget,
//! whichever is latest. [`recording_analysis`] computes it from a [`Session`].
//!
//! `--json` prints `{kind: "recording", files, revision, compacted, history_from,
//! history_budget_bytes, history_bytes, damage, prefix, all_keys, resources, namespaces,
//! largest, most_revisions}` with the db file's shapes for the usage and key rows, where
//! `retained_bytes` counts the value bytes of every version the replica holds (a deletion
//! none) and `revisions` the versions it holds. Exit 0, 1 when the recording is damaged
//! (what it still holds is analysed), 2 when it cannot be read.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use super::args::{normal_prefix, AnalyzeArgs};
use super::out;
use super::recording::files_exist;
use super::table::{
    key_usage_table, namespace_table, usage_cells, usage_header, usage_note, Table, RECORDING_WORDS,
};
use crate::derive::units::{bytes, thousands_i};
use crate::model::{escape_bytes, KeyPath, Revision};
use crate::record::Target;
use crate::source::etcd_db::analysis::{KeyUsage, NamespaceUsage, ResourceUsage, Usage};
use crate::store::Session;

/// What a session's replica holds, as `analyze` words it.
#[derive(Clone, Debug, Serialize)]
pub struct RecordingAnalysis {
    /// The replica's revision (the recording's last).
    pub revision: Revision,
    /// etcd's compacted revision, when the session saw it.
    pub compacted: Option<Revision>,
    /// The oldest revision the replica answers for: history before it is not held.
    pub history_from: Revision,
    /// `--history-budget` of the recording's session: history past it was dropped.
    pub history_budget_bytes: u64,
    /// History held besides the newest version of every key (bytes charged).
    pub history_bytes: u64,
    pub prefix: String,
    pub all_keys: Usage,
    /// Most retained (held) bytes first, then by name.
    pub resources: Vec<ResourceUsage>,
    pub namespaces: Vec<NamespaceUsage>,
    pub largest: Vec<KeyUsage>,
    pub most_revisions: Vec<KeyUsage>,
}

/// The figures of the keys under `prefix` that `session`'s replica holds; ranked lists
/// cut to `top` rows.
pub fn recording_analysis(session: &Session, prefix: &[u8], top: usize) -> RecordingAnalysis {
    let replica = &session.replica;
    let mut all_keys = Usage::default();
    let mut by_resource: BTreeMap<String, Usage> = BTreeMap::new();
    let mut by_namespace: BTreeMap<String, Usage> = BTreeMap::new();
    let mut keys: Vec<KeyUsage> = Vec::new();
    for (key, resource, versions) in replica.held_versions(prefix) {
        let Some(newest) = versions.last() else {
            continue;
        };
        let mut u = Usage {
            keys: 1,
            revisions: versions.len() as u64,
            ..Default::default()
        };
        for v in &versions {
            match v.size {
                Some(n) => u.retained_bytes += n as u64,
                None => u.tombstones += 1,
            }
        }
        if let Some(n) = newest.size {
            u.live_keys = 1;
            u.live_bytes = n as u64;
        }
        let path = KeyPath::parse(prefix, key);
        let add = |to: &mut Usage| {
            to.keys += u.keys;
            to.live_keys += u.live_keys;
            to.live_bytes += u.live_bytes;
            to.revisions += u.revisions;
            to.tombstones += u.tombstones;
            to.retained_bytes += u.retained_bytes;
        };
        add(&mut all_keys);
        add(by_resource.entry(resource.to_string()).or_default());
        if let Some(ns) = &path.namespace {
            add(by_namespace.entry(ns.to_string()).or_default());
        }
        keys.push(KeyUsage {
            key: escape_bytes(key).into_owned(),
            resource: resource.to_string(),
            namespace: path.namespace.map(|n| n.into_owned()),
            live: newest.size.is_some(),
            bytes: u.live_bytes,
            newest_revision: newest.mod_revision,
            revisions: u.revisions,
            tombstones: u.tombstones,
            retained_bytes: u.retained_bytes,
            lease: if newest.size.is_some() {
                newest.lease
            } else {
                0
            },
        });
    }
    let mut resources: Vec<ResourceUsage> = by_resource
        .into_iter()
        .map(|(resource, usage)| ResourceUsage {
            resource,
            revisions_per_key: usage.revisions_per_key(),
            usage,
        })
        .collect();
    resources.sort_by_key(|r| std::cmp::Reverse(r.usage.retained_bytes));
    let mut namespaces: Vec<NamespaceUsage> = by_namespace
        .into_iter()
        .map(|(namespace, usage)| NamespaceUsage { namespace, usage })
        .collect();
    namespaces.sort_by_key(|n| std::cmp::Reverse(n.usage.retained_bytes));
    namespaces.truncate(top);
    // Keys are in key order, so the stable sorts break ties by key.
    let mut largest: Vec<KeyUsage> = keys.iter().filter(|k| k.live).cloned().collect();
    largest.sort_by_key(|k| std::cmp::Reverse(k.bytes));
    largest.truncate(top);
    keys.sort_by(|a, b| {
        b.revisions
            .cmp(&a.revisions)
            .then(b.retained_bytes.cmp(&a.retained_bytes))
    });
    keys.truncate(top);
    RecordingAnalysis {
        revision: replica.revision(),
        compacted: replica.compact_revision(),
        history_from: replica.oldest_queryable(),
        history_budget_bytes: replica.history_budget() as u64,
        history_bytes: replica.history_usage().1 as u64,
        prefix: escape_bytes(prefix).into_owned(),
        all_keys,
        resources,
        namespaces,
        largest,
        most_revisions: keys,
    }
}

/// Runs `regscope analyze REC` (see the module doc).
pub fn run(a: &AnalyzeArgs, file: &std::path::Path) -> Result<ExitCode> {
    if let Err(code) = files_exist(file) {
        return Ok(code);
    }
    let mut player = match crate::record::Player::open(file) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("regscope: {}", super::recording::open_error(&e));
            return Ok(ExitCode::from(2));
        }
    };
    player.set_bodies(false);
    // Damage anywhere in the file makes the answer suspect, not only on the seek's way.
    player.verify(false);
    let session = player.seek(Target::End);
    let damage = player.damage().to_vec();
    for d in &damage {
        eprintln!("regscope: damaged recording: {d}");
    }
    let r = recording_analysis(&session, &normal_prefix(&a.conn.prefix), a.top);
    let files: Vec<String> = player
        .paths()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    if a.json {
        #[derive(Serialize)]
        struct Doc<'a> {
            kind: &'static str,
            files: &'a [String],
            #[serde(flatten)]
            analysis: &'a RecordingAnalysis,
            damage: &'a [String],
        }
        let doc = Doc {
            kind: "recording",
            files: &files,
            analysis: &r,
            damage: &damage,
        };
        out(format_args!("{}\n", serde_json::to_string_pretty(&doc)?));
    } else {
        out(format_args!("{}", recording_text(&r, &files)));
    }
    Ok(if damage.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn recording_text(r: &RecordingAnalysis, files: &[String]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} (a recording: what its session held at its end)",
        files.join(", ")
    );
    let _ = writeln!(
        o,
        "  revision      {}; history held from {}{}",
        thousands_i(r.revision),
        thousands_i(r.history_from),
        r.compacted.map_or(String::new(), |c| format!(
            " (etcd compacted at {})",
            thousands_i(c)
        )),
    );
    let _ = writeln!(
        o,
        "  history       {} held, of a {} budget (the replica keeps no version older than the start of its history)",
        bytes(r.history_bytes),
        bytes(r.history_budget_bytes),
    );
    let _ = writeln!(
        o,
        "\nResources under {} by held bytes (every version the replica holds)",
        r.prefix
    );
    let header = usage_header("RESOURCE", RECORDING_WORDS);
    let mut rows: Vec<Vec<String>> = r
        .resources
        .iter()
        .map(|x| {
            let mut row = vec![x.resource.clone()];
            row.extend(usage_cells(&x.usage));
            row
        })
        .collect();
    let mut total = vec!["total".to_string()];
    total.extend(usage_cells(&r.all_keys));
    rows.push(total);
    Table {
        header,
        rows,
        left: vec![0],
    }
    .render(&mut o, "  ");
    let _ = writeln!(o, "{}", usage_note(RECORDING_WORDS));
    for (title, list) in [
        ("Largest objects (newest value)", &r.largest),
        ("Most versions held", &r.most_revisions),
    ] {
        key_usage_table(
            &mut o,
            title,
            list,
            ["BYTES", "VERSIONS", "HELD", "STATE", "KEY"],
        );
    }
    namespace_table(
        &mut o,
        "Namespaces by held bytes",
        &r.namespaces,
        RECORDING_WORDS,
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `recordings/demo.rgs` at its end: the per-resource figures agree with the
    /// replica's own counters (live keys and bytes per resource, kept as events apply)
    /// and with its history as `history` unpacks it.
    #[test]
    fn the_demo_recording_at_its_end_matches_the_replicas_own_counters() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings/demo.rgs");
        let mut player = crate::record::Player::open(&path).expect("the demo recording opens");
        player.set_bodies(false);
        let session = player.seek(Target::End);
        let prefix = session.replica.prefix().to_vec();
        let r = recording_analysis(&session, &prefix, 5);
        assert!(r.all_keys.live_keys > 0);
        assert_eq!(r.all_keys.live_keys, session.replica.live_keys());
        assert_eq!(r.all_keys.live_bytes, session.replica.live_bytes());
        for s in session.replica.resources().iter().filter(|s| s.keys > 0) {
            let row = r
                .resources
                .iter()
                .find(|x| x.resource == s.resource)
                .unwrap_or_else(|| panic!("{} missing", s.resource));
            assert_eq!(
                (row.usage.live_keys, row.usage.live_bytes),
                (s.keys, s.bytes),
                "{}",
                s.resource
            );
        }
        // The most revised key's versions as the replica's history gives them.
        let top = &r.most_revisions[0];
        let history = session.replica.history(top.key.as_bytes());
        assert_eq!(top.revisions, history.len() as u64);
        assert_eq!(
            top.tombstones,
            history.iter().filter(|v| v.value.is_none()).count() as u64
        );
        assert!(r.most_revisions.len() <= 5 && r.largest.len() <= 5);
        assert!(r
            .largest
            .windows(2)
            .all(|w| w[0].bytes >= w[1].bytes && w[0].live));
        assert_eq!(r.revision, session.replica.revision());
    }
}
