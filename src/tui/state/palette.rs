//! The command palette (`:`): every named action, and "go to" a resource, a key, a
//! revision or (in a replay) a time, found by fuzzy matching what is typed.
//!
//! This module only lists and ranks the candidates; [`crate::tui::App`] runs the chosen
//! one and [`crate::tui::views`] draws the list.

use bytes::Bytes;

use crate::model::Revision;
use crate::record::seek::{parse_revision_seek, parse_seek, SeekTo};
use crate::store::Session;
use crate::tui::action::Action;
use crate::tui::keymap::{Keymap, Mode};

/// What a palette entry does when chosen.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Goto {
    /// Performs the action, as its key would.
    Action(Action),
    /// Opens the key browser on the resource.
    Resource(String),
    /// Opens the key, as held now.
    Key(Bytes),
    /// Live: selects the event of the revision in Events.
    Revision(Revision),
    /// Replay: moves the cursor there.
    Seek(SeekTo),
}

/// One candidate: what it says, a hint on the right (action name and keys, key count), and
/// what it does.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub label: String,
    pub hint: String,
    pub goto: Goto,
}

/// What the candidates come from.
pub(crate) struct Context<'a> {
    /// Resources and keys to go to, and the clock a seek is read against.
    pub session: &'a Session,
    /// The keys shown beside each action: those of `mode`, the mode under the palette.
    pub keymap: &'a Keymap,
    pub mode: Mode,
    /// A replay: a time or revision typed is a seek, and replay actions are offered.
    pub replay: bool,
    /// A replay of etcd's db file: only a revision, `start` or `end` typed is a seek
    /// ([`crate::record::seek::parse_revision_seek`]).
    pub revisions_only: bool,
    /// Seconds east of UTC a clock time typed is read in.
    pub utc_offset: i64,
}

/// Actions that only edit the palette's or a filter's text, never offered.
const EDITING: [Action; 5] = [
    Action::Submit,
    Action::Cancel,
    Action::DeleteChar,
    Action::ClearInput,
    Action::Palette,
];

/// Candidates for `text`, best first: first what `text` names exactly (a time or revision
/// to seek to, a revision to select, a key), then the actions and resources it matches
/// fuzzily (see [`fuzzy_score`]); with nothing typed, every action then every resource.
pub(crate) fn entries(text: &str, cx: &Context) -> Vec<Entry> {
    let t = text.trim();
    let mut out = Vec::new();
    let replay = cx.replay;
    if !t.is_empty() {
        if replay {
            let read = if cx.revisions_only {
                parse_revision_seek
            } else {
                parse_seek
            };
            if let Ok(to) = read(t, cx.session.now(), cx.utc_offset) {
                out.push(Entry {
                    label: format!("seek to {t}"),
                    hint: "replay".into(),
                    goto: Goto::Seek(to),
                });
            }
        } else if let Some(rev) = revision_of(t) {
            out.push(Entry {
                label: format!("go to revision {rev}"),
                hint: "events".into(),
                goto: Goto::Revision(rev),
            });
        }
        if t.starts_with('/') && cx.session.replica.get_meta(t.as_bytes()).is_some() {
            out.push(Entry {
                label: format!("open key {t}"),
                hint: "keys".into(),
                goto: Goto::Key(Bytes::copy_from_slice(t.as_bytes())),
            });
        }
    }
    let mode = cx.mode;
    let mut ranked: Vec<(i64, usize, Entry)> = Vec::new();
    // Quit last: never the first thing a stray Enter runs.
    let actions = Action::ALL
        .iter()
        .copied()
        .filter(|a| !EDITING.contains(a) && (replay || !a.replay_only()))
        .filter(|a| *a != Action::Quit)
        .chain([Action::Quit]);
    for (i, a) in actions.enumerate() {
        let label = a.description().to_string();
        let keys: Vec<String> = cx
            .keymap
            .keys_for(mode, a)
            .iter()
            .map(|k| k.to_string())
            .collect();
        let hint = if keys.is_empty() {
            a.name().to_string()
        } else {
            format!("{}  {}", a.name(), keys.join(", "))
        };
        let score = best_score(t, &[&label, a.name()]);
        if let Some(s) = score {
            ranked.push((
                s,
                i,
                Entry {
                    label,
                    hint,
                    goto: Goto::Action(a),
                },
            ));
        }
    }
    for (i, r) in cx.session.replica.resources().iter().enumerate() {
        let label = format!("go to resource {}", r.resource);
        if let Some(s) = best_score(t, &[&r.resource, &label]) {
            ranked.push((
                s,
                1000 + i,
                Entry {
                    label,
                    hint: format!("{} key{}", r.keys, if r.keys == 1 { "" } else { "s" }),
                    goto: Goto::Resource(r.resource.clone()),
                },
            ));
        }
    }
    if !t.is_empty() {
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    }
    out.extend(ranked.into_iter().map(|(_, _, e)| e));
    out
}

fn best_score(query: &str, texts: &[&str]) -> Option<i64> {
    texts.iter().filter_map(|t| fuzzy_score(query, t)).max()
}

/// `r1234` or a plain number, as the seek prompt reads a revision.
fn revision_of(t: &str) -> Option<Revision> {
    let digits = t.strip_prefix('r').unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|r| *r > 0)
}

/// Fuzzy match of `query` in `text`, ignoring case: `None` unless every character of the
/// query appears in `text` in order. The score rewards characters at the start of a word
/// (after a space, `_`, `-`, `.` or `/`), runs of consecutive characters and an early
/// first match, the usual heuristics of editor pickers. An empty query matches with 0.
pub(crate) fn fuzzy_score(query: &str, text: &str) -> Option<i64> {
    let q: Vec<char> = query.chars().flat_map(char::to_lowercase).collect();
    if q.is_empty() {
        return Some(0);
    }
    let mut score = 0i64;
    let mut qi = 0;
    let mut prev_match: Option<usize> = None;
    let mut prev_char = ' ';
    let mut first = None;
    for (i, c) in text.chars().enumerate() {
        if qi == q.len() {
            break;
        }
        let lc = c.to_lowercase().next().unwrap_or(c);
        if lc == q[qi] {
            score += 1;
            if matches!(prev_char, ' ' | '_' | '-' | '.' | '/' | '(') {
                score += 6;
            }
            if prev_match == Some(i.wrapping_sub(1)) {
                score += 8;
            }
            first.get_or_insert(i);
            prev_match = Some(i);
            qi += 1;
        }
        prev_char = c;
    }
    (qi == q.len()).then(|| score - first.unwrap_or(0).min(20) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzzy_matches_in_order_and_prefers_word_starts_and_runs() {
        assert_eq!(fuzzy_score("xyz", "pause"), None);
        assert_eq!(fuzzy_score("", "anything"), Some(0));
        assert!(fuzzy_score("ps", "pause").is_some());
        assert_eq!(fuzzy_score("sp", "pause"), None, "order matters");
        // Word starts and runs beat scattered letters.
        let words = fuzzy_score("tp", "toggle pause").unwrap();
        let scattered = fuzzy_score("tp", "stop").unwrap();
        assert!(words > scattered, "{words} vs {scattered}");
        let run = fuzzy_score("pau", "pause").unwrap();
        let spread = fuzzy_score("pau", "pick a unit").unwrap();
        assert!(run > spread, "{run} vs {spread}");
        assert!(fuzzy_score("PODS", "go to resource pods").is_some(), "case");
    }

    #[test]
    fn revisions_are_read_as_the_seek_prompt_reads_them() {
        assert_eq!(revision_of("r1234"), Some(1234));
        assert_eq!(revision_of("42"), Some(42));
        assert_eq!(revision_of("r"), None);
        assert_eq!(revision_of("0"), None);
        assert_eq!(revision_of("12a"), None);
    }
}
