//! `regscope export FILE`: a recording's observations as JSON lines, one per event, per
//! listed key, per scrape and per other observation (none for clock ticks); values
//! decoded with `--decode`, keys filtered with `--prefix`.
//!
//! With `--decode`, a key's line adds `object` (or `null`), `decode_error` when it did not
//! decode, and `encryption` (`{provider, decrypted, message}`) for a value encrypted at rest.
//! The line types (`type`): `list_item` and `event` (a key), `scrape`, one per other
//! observation named by its kind (`conn`, `compacted`, `informer`, …), `note` (what the
//! session noted that no key shows: `at`, `kind`, `text`), and `marker` (each marker
//! `replay --check` lists, bookmarks included: `at`, `revision`, `kind` as
//! [`crate::record::MarkerKind::name`], `label`), placed in time order among the others.
//! Notes and markers are left out with `--only-keys`.

use std::process::ExitCode;

use anyhow::Result;
use serde_json::{json, Value};

use super::args::{ExportArgs, UiArgs};
use super::recording::{open, parse_at, time_text};
use crate::model::{escape_bytes, Bytes, KeyPath, KeyValue, Observation, ScrapeOutcome, Stamped};
use crate::record::{Marker, Player, Target};
use crate::store::Session;

/// `regscope export FILE --format jsonl`: one JSON object per observation (list items and
/// watch events one per key), in recorded order, from `--from` to `--to`; the live keys
/// where the export starts come first. Exit 1 when the recording is damaged.
pub fn run(e: &ExportArgs, ui: &UiArgs) -> Result<ExitCode> {
    let mut player = match open(&e.file) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let parse = |flag: &str, v: &Option<String>, player: &Player| match v.as_deref() {
        Some(t) => parse_at(flag, t, player, ui.zone()).map(Some),
        None => Ok(None),
    };
    let (from, to) = match (
        parse("--from", &e.from, &player),
        parse("--to", &e.to, &player),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(m), _) | (_, Err(m)) => {
            eprintln!("regscope: {m}");
            return Ok(ExitCode::from(2));
        }
    };
    let reversed = match (from, to) {
        (Some(Target::Time(a)), Some(Target::Time(b))) => a > b,
        (Some(Target::Revision(a)), Some(Target::Revision(b))) => a > b,
        _ => false,
    };
    if reversed {
        eprintln!(
            "regscope: --from {} is after --to {}: nothing to export",
            e.from.as_deref().unwrap_or(""),
            e.to.as_deref().unwrap_or("")
        );
        return Ok(ExitCode::from(2));
    }
    let keyring = match super::options::keyring_or_exit(ui) {
        Ok(k) => k,
        Err(code) => return Ok(code),
    };
    let show_secrets = ui.show_secrets && !player.header().secrets_redacted;
    if ui.show_secrets && !show_secrets {
        eprintln!(
            "regscope export: --show-secrets: this recording was made without it, its Secret data is redacted; written as <redacted: N bytes>"
        );
    }
    let prefix = player.header().info.prefix.clone();
    // Checkpoints after the first are not on an export's way: check them too.
    player.verify(false);
    let markers = if e.only_keys {
        Vec::new()
    } else {
        let (markers, notes) = all_markers(&player, e);
        for n in notes {
            eprintln!("regscope export: {n}");
        }
        markers
    };
    let mut session = player.seek(from.unwrap_or(Target::Position(0)));
    // Markers from where the export starts (those of the observations before it are not
    // in it).
    let start = player.position();
    let markers: Vec<&Marker> = markers
        .iter()
        .filter(|m| from.is_none() || m.position > start)
        .collect();
    let mut next_marker = 0usize;
    // A time and a revision are compared where --from lands.
    let past_to = match (from, to) {
        (Some(Target::Revision(_)), Some(Target::Time(b))) => session.now() > b,
        (Some(Target::Time(_)), Some(Target::Revision(b))) => session.revision() > b,
        _ => false,
    };
    if past_to {
        eprintln!(
            "regscope: --from {} is at {} (revision {}), after --to {}: nothing to export",
            e.from.as_deref().unwrap_or(""),
            time_text(session.now()),
            session.revision(),
            e.to.as_deref().unwrap_or("")
        );
        return Ok(ExitCode::from(2));
    }
    // The keys where the export starts are walked in key order.
    session.settle();
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let mut broken = false;
    let key_filter = e.prefix.clone();
    if let Some(p) = key_filter.as_deref().filter(|p| !p.starts_with('/')) {
        // Compared byte for byte with the keys, which all start with '/'.
        let root = prefix.trim_end_matches('/');
        let meant = if format!("/{p}").starts_with(root) {
            format!("/{p}")
        } else {
            format!("{root}/{p}")
        };
        eprintln!(
            "regscope export: --prefix {p} matches no key: keys start with '/' (e.g. {meant})"
        );
    }
    let form = ExportLines {
        prefix: &prefix,
        key_filter: key_filter.as_deref(),
        e,
        keyring: keyring.as_ref(),
        show_secrets,
    };
    // Key lines written (listed keys and events) that the prefix kept.
    let mut key_lines = 0u64;
    // For the closing summary: lines are not observations (one line per event and per
    // listed key, none for a clock tick), so the counts are said side by side.
    let (mut lines_written, mut observations, mut ticks) = (0u64, 0u64, 0u64);
    // A recording starts with a checkpoint (a recording begun mid-session holds no list):
    // the live keys where the export starts come first, as `list_item`s marked
    // `"from": "start"`.
    {
        use std::io::Write;
        let at = time_text(session.now());
        let prefix_bytes = key_filter.clone().unwrap_or_default().into_bytes();
        let mut after: Option<Bytes> = None;
        'keys: loop {
            let chunk = session
                .replica
                .live_keys_after(&prefix_bytes, after.as_deref(), 1024);
            let Some(last) = chunk.last().cloned() else {
                break;
            };
            for key in chunk {
                let Some(v) = session.replica.get(&key) else {
                    continue;
                };
                let kv = KeyValue {
                    key,
                    create_revision: v.create_revision,
                    mod_revision: v.mod_revision,
                    version: v.version,
                    lease: v.lease,
                    value: v.value.unwrap_or_default(),
                };
                let mut line = kv_json("list_item", None, &kv, &form);
                line["from"] = json!("start");
                line["at"] = json!(at);
                if let Err(e) = writeln!(stdout, "{line}") {
                    super::stdout_error(&e);
                    broken = true;
                    break 'keys;
                }
                lines_written += 1;
                key_lines += 1;
            }
            after = Some(last);
        }
    }
    // The newest note already written (or held when the export began): notes the session
    // adds after it become `note` lines.
    let mut last_note = session.notes().back().cloned();
    player.advance(&mut session, Target::End, u64::MAX, |s, st, pos| {
        if broken {
            return;
        }
        if let Some(Target::Time(t)) = to {
            if st.at > t {
                return;
            }
        }
        if let Some(Target::Revision(r)) = to {
            if s.revision() > r {
                return;
            }
        }
        observations += 1;
        if matches!(st.obs, Observation::Tick) {
            ticks += 1;
        }
        if let Some(p) = key_filter.as_deref() {
            let kvs: Box<dyn Iterator<Item = &KeyValue>> = match &st.obs {
                Observation::ListPage { kvs } => Box::new(kvs.iter()),
                Observation::Events { events, .. } => Box::new(events.iter().map(|e| &e.kv)),
                _ => Box::new(std::iter::empty()),
            };
            key_lines += kvs.filter(|kv| kv.key.starts_with(p.as_bytes())).count() as u64;
        }
        // Markers of earlier moments (a bookmark between two observations, a lost frame),
        // this observation's lines, then the markers it made.
        let mut lines = Vec::new();
        while let Some(m) = markers.get(next_marker).filter(|m| m.at < st.at) {
            lines.push(marker_line(m));
            next_marker += 1;
        }
        lines.extend(export_lines(st, s, &form));
        if !e.only_keys {
            lines.extend(new_notes(s, &mut last_note).iter().map(Value::to_string));
        }
        while let Some(m) = markers
            .get(next_marker)
            .filter(|m| m.at <= st.at && m.position <= pos)
        {
            lines.push(marker_line(m));
            next_marker += 1;
        }
        use std::io::Write;
        for l in lines {
            if let Err(e) = writeln!(stdout, "{l}") {
                super::stdout_error(&e);
                broken = true;
                return;
            }
            lines_written += 1;
        }
    });
    use std::io::Write;
    // Markers after the last observation (a frame lost at the end), within --to.
    for m in markers.get(next_marker..).unwrap_or_default() {
        let within = match to {
            Some(Target::Time(t)) => m.at <= t,
            Some(Target::Revision(r)) => m.revision <= r,
            _ => true,
        };
        if broken || !within {
            continue;
        }
        if let Err(e) = writeln!(stdout, "{}", marker_line(m)) {
            super::stdout_error(&e);
            broken = true;
        } else {
            lines_written += 1;
        }
    }
    if let Err(e) = stdout.flush() {
        super::stdout_error(&e);
        broken = true;
    }
    if !broken {
        eprintln!(
            "regscope: {}",
            export_summary(lines_written, observations, ticks)
        );
        if let Some(p) = key_filter.as_deref().filter(|_| key_lines == 0) {
            eprintln!(
                "regscope export: --prefix {p} matched no key (listed or written) in what was exported"
            );
        }
    }
    for d in player.damage() {
        eprintln!("regscope: damaged recording: {d}");
    }
    Ok(if player.damage().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The line `export` ends with on stderr: what it wrote against what it read, so that the
/// count of lines (one per event and per listed key) is not mistaken for the count of
/// observations `replay --check` prints.
fn export_summary(lines: u64, observations: u64, ticks: u64) -> String {
    let s = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    format!(
        "exported {} for {} read (a line per event and per listed key; none for the {})",
        s(lines, "line", "lines"),
        s(observations, "observation", "observations"),
        s(ticks, "clock tick", "clock ticks"),
    )
}

/// Every marker of the recording, as `replay --check` lists them (the same scan and
/// [`Player::complete_markers`], on a player of its own, with `--p99-threshold` and
/// `--lag-threshold`), and the notes reading them added (a bookmark line skipped).
fn all_markers(player: &Player, e: &ExportArgs) -> (Vec<Marker>, Vec<String>) {
    let Ok(mut p) = Player::open(player.name()) else {
        return (Vec::new(), Vec::new());
    };
    p.set_bodies(false);
    let markers = p.markers(e.p99_threshold, e.lag_threshold);
    let notes = p
        .notes()
        .iter()
        .filter(|n| !player.notes().contains(n))
        .cloned()
        .collect();
    (markers, notes)
}

/// A `marker` line: `at`, `revision`, `kind` and `label`.
fn marker_line(m: &Marker) -> String {
    json!({
        "type": "marker",
        "at": time_text(m.at),
        "revision": m.revision,
        "kind": m.kind.name(),
        "label": m.label,
    })
    .to_string()
}

/// `note` lines for the session's notes newer than `last` (which then names the newest):
/// `at`, `kind` and `text` as `snapshot --json` gives them. A source's own line
/// (`Note::Text`) is not repeated: its observation's line carries it.
fn new_notes(
    s: &Session,
    last: &mut Option<(std::time::SystemTime, crate::store::Note)>,
) -> Vec<Value> {
    let notes = s.notes();
    let start = match last.as_ref() {
        None => 0,
        Some(l) => match notes.iter().rposition(|n| n == l) {
            Some(i) => i + 1,
            // Pushed out of the ring since: every note held is newer.
            None => 0,
        },
    };
    if start >= notes.len() {
        return Vec::new();
    }
    *last = notes.back().cloned();
    notes
        .iter()
        .skip(start)
        .filter(|(_, n)| !matches!(n, crate::store::Note::Text(_)))
        .map(|(at, n)| json!({"type": "note", "at": time_text(*at), "kind": n.kind(), "text": n.to_string()}))
        .collect()
}

/// What every export line depends on besides the observation: the recording's prefix,
/// `--prefix`, the flags, the keys to decrypt with and whether Secrets show.
/// How key lines are written: the session's prefix (for the resource), `--prefix`, the
/// flags, the keyring for `--decode`, and whether Secret data is shown.
pub(super) struct ExportLines<'a> {
    pub prefix: &'a str,
    pub key_filter: Option<&'a str>,
    pub e: &'a ExportArgs,
    pub keyring: Option<&'a crate::decrypt::Keyring>,
    pub show_secrets: bool,
}

pub(super) fn kv_json(kind: &str, op: Option<&str>, kv: &KeyValue, x: &ExportLines<'_>) -> Value {
    let ExportLines {
        prefix,
        e,
        keyring,
        show_secrets,
        ..
    } = *x;
    let path = KeyPath::parse(prefix.as_bytes(), &kv.key);
    let mut v = json!({
        "type": kind,
        "key": escape_bytes(&kv.key),
        "resource": path.resource,
        "create_revision": kv.create_revision,
        "mod_revision": kv.mod_revision,
        "version": kv.version,
        "lease": kv.lease,
        "size": kv.value.len(),
    });
    if let Some(op) = op {
        v["op"] = json!(op);
    }
    if e.values {
        // `show_secrets` is off for a recording made without it: it holds no Secret value.
        if path.resource == "secrets" && !show_secrets && !kv.value.is_empty() {
            v["value"] = Value::Null;
            v["value_redacted"] = json!(true);
        } else {
            use base64::Engine as _;
            v["value"] = json!(base64::engine::general_purpose::STANDARD.encode(&kv.value));
        }
    }
    if e.decode && !kv.value.is_empty() {
        let d = crate::decode::decode(
            &kv.value,
            &crate::decode::DecodeOptions {
                show_secrets,
                etcd_key: &kv.key,
                mod_revision: Some(kv.mod_revision),
                keyring,
                candidates: &[],
            },
        );
        let secret = path.resource == "secrets";
        v["object"] = match d.value() {
            Some(obj) if !(secret && !show_secrets && !d.summary.is_secret()) => obj,
            _ => Value::Null,
        };
        if let Some(err) = &d.error {
            v["decode_error"] = json!(err);
        }
        // Encrypted at rest: by which provider and key, and whether it opened (and why not).
        if let Some(enc) = &d.encryption {
            v["encryption"] = json!({
                "provider": enc.label,
                "decrypted": enc.decrypted,
                "message": enc.message,
            });
        }
    }
    v
}

fn export_lines(st: &Stamped, s: &Session, x: &ExportLines<'_>) -> Vec<String> {
    let key_filter = x.key_filter;
    let mut lines = export_observation(st, s, x);
    // After a gap, the rows the replica synthesized from the relist that closed it (what
    // changed in revisions never seen one by one), as events marked synthesized.
    if let Observation::ListDone {
        revision,
        compacted: Some(_),
    } = &st.obs
    {
        for ev in s.replica.events().iter().filter(|ev| {
            ev.unseen.is_some_and(|u| u.to == *revision)
                && key_filter.is_none_or(|p| ev.key.starts_with(p.as_bytes()))
        }) {
            let Some(u) = ev.unseen else { continue };
            // A delete's last copy is the version before the tombstone.
            let history = s.replica.history(&ev.key);
            let held = match ev.kind {
                crate::model::EventKind::Put => {
                    history.iter().rev().find(|v| v.mod_revision == ev.revision)
                }
                crate::model::EventKind::Delete => history
                    .iter()
                    .rev()
                    .find(|v| v.value.is_some() && v.mod_revision < u.from),
            };
            let kv = KeyValue {
                key: ev.key.clone(),
                create_revision: held.map_or(0, |v| v.create_revision),
                mod_revision: ev.revision,
                version: held.map_or(0, |v| v.version),
                lease: held.map_or(0, |v| v.lease),
                value: ev.value.clone(),
            };
            let op = ev.kind.name();
            let mut line = kv_json("event", Some(op), &kv, x);
            line["synthesized"] = json!(true);
            line["writer"] = json!(ev.writer());
            line["unseen"] = json!({"from": u.from, "to": u.to, "change": u.change.label()});
            if ev.kind == crate::model::EventKind::Delete {
                // Deleted somewhere in the gap: etcd's deleting revision is unknown (null;
                // `unseen` gives the gap), and the value (its size, its object) is the last
                // copy held before the gap.
                line["mod_revision"] = Value::Null;
                line["value_is_last_copy"] = json!(true);
                line["last_mod_revision"] = json!(held.map(|v| v.mod_revision));
            }
            line["at"] = json!(time_text(st.at));
            lines.push(line.to_string());
        }
    }
    lines
}

/// The lines of one observation as the recording holds it.
fn export_observation(st: &Stamped, s: &Session, x: &ExportLines<'_>) -> Vec<String> {
    let (key_filter, e) = (x.key_filter, x.e);
    let at = time_text(st.at);
    let keep = |kv: &KeyValue| key_filter.is_none_or(|p| kv.key.starts_with(p.as_bytes()));
    let with_at = |mut v: Value| {
        v["at"] = json!(at);
        v.to_string()
    };
    match &st.obs {
        Observation::ListPage { kvs } => kvs
            .iter()
            .filter(|kv| keep(kv))
            .map(|kv| with_at(kv_json("list_item", None, kv, x)))
            .collect(),
        Observation::Events { events, .. } => events
            .iter()
            .filter(|ev| keep(&ev.kv))
            .map(|ev| {
                let op = ev.kind.name();
                let mut line = kv_json("event", Some(op), &ev.kv, x);
                // Who made it, as the console names it (the event as the replica logged
                // it, just applied): a manager only when the write changed managedFields.
                if let Some(logged) = s.replica.events().iter().rev().take(4096).find(|l| {
                    l.unseen.is_none() && l.revision == ev.kv.mod_revision && l.key == ev.kv.key
                }) {
                    line["writer"] = json!(logged.writer());
                }
                with_at(line)
            })
            .collect(),
        _ if e.only_keys => Vec::new(),
        Observation::Tick => Vec::new(),
        Observation::Scrape { target, outcome } => {
            let mut v = json!({"type": "scrape", "target": target.label()});
            match outcome {
                ScrapeOutcome::Body { source, body } => {
                    let expo = crate::metrics::exposition::parse(body);
                    v["source"] = json!(source);
                    v["bytes"] = json!(body.len());
                    v["skipped_lines"] = json!(expo.skipped.len());
                    v["samples"] = Value::Array(
                        expo.samples
                            .iter()
                            .map(|s| {
                                let labels: serde_json::Map<String, Value> = s
                                    .labels
                                    .iter()
                                    .map(|(k, v)| (k.clone(), json!(v)))
                                    .collect();
                                json!({"name": s.name, "labels": labels, "value": sample_value(s.value)})
                            })
                            .collect(),
                    );
                }
                ScrapeOutcome::Failed { source, error } => {
                    v["source"] = json!(source);
                    v["error"] = json!(error);
                }
            }
            vec![with_at(v)]
        }
        obs => {
            let mut v = serde_json::to_value(obs).unwrap_or(Value::Null);
            // Externally tagged enums: {"Variant": {...}} or "Variant".
            let body = match &mut v {
                Value::Object(m) if m.len() == 1 => {
                    m.values().next().cloned().unwrap_or(Value::Null)
                }
                _ => Value::Null,
            };
            let mut line = match body {
                Value::Object(m) => Value::Object(m),
                Value::Null => json!({}),
                other => json!({"value": other}),
            };
            line["type"] = json!(obs.kind_name());
            vec![with_at(line)]
        }
    }
}

/// A sample value as JSON: a number, or `"NaN"`, `"+Inf"`, `"-Inf"` (not JSON numbers).
fn sample_value(v: f64) -> Value {
    if v.is_nan() {
        json!("NaN")
    } else if v == f64::INFINITY {
        json!("+Inf")
    } else if v == f64::NEG_INFINITY {
        json!("-Inf")
    } else {
        json!(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_summary_sets_lines_beside_observations() {
        assert_eq!(
            export_summary(5989, 6038, 91),
            "exported 5989 lines for 6038 observations read (a line per event and per listed key; none for the 91 clock ticks)"
        );
        assert_eq!(
            export_summary(1, 1, 1),
            "exported 1 line for 1 observation read (a line per event and per listed key; none for the 1 clock tick)"
        );
    }
}
