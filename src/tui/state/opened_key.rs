//! The opened key: its history from the replica, the shown version decoded (YAML or JSON,
//! syntax-coloured), and the structural diff between two versions.
//!
//! State lives in [`OpenedKeyState`]; every decode, highlight and diff happens here, in
//! update (on open, on `[`/`]`, `o`, `d`, `m`, and when a batch changes the key), so the
//! view in [`crate::tui::views`] only slices what was computed. What decoding depends on
//! besides the key (the replica, `--show-secrets`, the keyring, JSON or YAML) comes in as
//! a [`Decoding`].

use bytes::Bytes;

use crate::decode::{self, DecodeOptions, RenderOptions, Rendered};
use crate::derive::diff::{self, LineKind, Writer};
use crate::model::{KeyPath, Revision};
use crate::store::{Replica, VersionValue};
use crate::tui::syntax::{self, Styled};

/// The opened key.
pub(crate) struct OpenedKeyState {
    pub key: Bytes,
    /// Every version held, oldest first.
    pub history: Vec<VersionValue>,
    /// Index into `history` of the version shown.
    pub index: usize,
    /// Rendered value of the version shown (`None` for a tombstone).
    pub rendered: Option<Rendered>,
    /// Syntax spans for each line of `rendered`.
    pub styled: Vec<Styled>,
    /// Who wrote the shown version (see `writers_compared`).
    pub writers: Vec<Writer>,
    /// `writers` come from comparing the shown version's managedFields with the version
    /// before it (held and decodable): then an empty list means nobody managedFields name
    /// made the change. Otherwise they are the newest entries only.
    pub writers_compared: bool,
    /// The version before the shown one is on the other side of a gap: `writers` moved
    /// their entries somewhere in writes not seen one by one.
    pub writers_across_gap: bool,
    /// First body line shown.
    pub scroll: usize,
    /// Diff mode: the body is the diff instead of the value.
    pub diff_on: bool,
    /// mod_revision of the marked version (the other side of the diff).
    pub mark: Option<Revision>,
    /// The diff shown in diff mode.
    pub diff: Option<RenderedDiff>,
}

/// A diff ready to draw.
pub(crate) struct RenderedDiff {
    /// `120 → 125`.
    pub title: String,
    /// Attribution and notes first, then the changes.
    pub lines: Vec<(LineKind, String)>,
}

/// What decoding the opened key depends on besides the key.
pub(crate) struct Decoding<'a> {
    /// Where the key's versions (and, to explain a failed authentication, its
    /// neighbours) are read.
    pub replica: &'a Replica,
    /// Show Secret data (`--show-secrets`).
    pub show_secrets: bool,
    /// Keys for values encrypted at rest (`--encryption-config`).
    pub keyring: Option<&'a crate::decrypt::Keyring>,
    /// JSON instead of YAML (`o`).
    pub json: bool,
}

impl OpenedKeyState {
    /// Lines of the body currently shown (value or diff), for scrolling.
    pub fn body_len(&self) -> usize {
        match (&self.diff, self.diff_on) {
            (Some(d), true) => d.lines.len(),
            _ => self.rendered.as_ref().map_or(0, |r| r.lines.len()),
        }
    }

    /// The version shown.
    pub fn shown(&self) -> Option<&VersionValue> {
        self.history.get(self.index)
    }

    /// "at revision 3,371", or, for a deletion that came in through the relist after a gap,
    /// "within revisions 7–13 (not seen one by one)": etcd's own deleting revision is then
    /// unknown, and the tombstone's revision is only the relist's.
    pub fn deleted_when(&self, replica: &crate::store::Replica) -> Option<String> {
        let v = self.shown().filter(|v| v.value.is_none())?;
        let before = self.history[..self.index]
            .last()
            .map_or(0, |p| p.mod_revision);
        Some(match replica.gap_between(before, v.mod_revision) {
            Some(g) => format!(
                "within revisions {}–{} (not seen one by one: the exact revision is unknown)",
                g.from, g.to
            ),
            None => format!(
                "at revision {}",
                crate::tui::text::thousands_i(v.mod_revision)
            ),
        })
    }

    /// When the version shown is a deletion, the newest live version before it (what was
    /// deleted), if held.
    pub fn last_live_before_shown(&self) -> Option<&VersionValue> {
        self.shown().filter(|v| v.value.is_none())?;
        self.history[..self.index]
            .iter()
            .rev()
            .find(|v| v.value.is_some())
    }

    /// Opens `key` on the version written at `revision` (an event's), or the newest held
    /// at or before it; on the newest version without one, or when history before it was
    /// dropped.
    pub fn open(key: Bytes, revision: Option<Revision>, cx: &Decoding) -> OpenedKeyState {
        let history = cx.replica.history(&key);
        let newest = history.len().saturating_sub(1);
        let index = revision
            .and_then(|r| history.iter().rposition(|v| v.mod_revision <= r))
            .unwrap_or(newest);
        let mut d = OpenedKeyState {
            key,
            history,
            index,
            rendered: None,
            styled: Vec::new(),
            writers: Vec::new(),
            writers_compared: false,
            writers_across_gap: false,
            scroll: 0,
            diff_on: false,
            mark: None,
            diff: None,
        };
        d.refresh(cx);
        d
    }

    /// Re-renders the shown version and, in diff mode, the diff.
    pub fn refresh(&mut self, cx: &Decoding) {
        let d = self;
        d.rendered = cx.render_version(d);
        d.styled = match &d.rendered {
            Some(r) if r.decoded.as_ref().is_some_and(|x| x.json.is_some()) => {
                syntax::highlight(&r.lines, cx.json)
            }
            Some(r) => syntax::plain(&r.lines),
            None => Vec::new(),
        };
        // Who wrote the shown version: the entries its write changed, against the version
        // before it when that one is held (a write that changed none names nobody).
        let current = d
            .rendered
            .as_ref()
            .and_then(|r| r.decoded.as_ref())
            .and_then(|x| x.value());
        let shown = d.shown();
        let before = match shown {
            // Created at this revision (version 1): every entry is this write's.
            Some(v) if v.value.is_some() && v.version == 1 => {
                Some(serde_json::Value::Object(Default::default()))
            }
            Some(v) if v.value.is_some() => d
                .index
                .checked_sub(1)
                .and_then(|i| d.history.get(i))
                .filter(|p| p.value.is_some())
                .and_then(|p| cx.object_of(&d.key, p).ok()),
            _ => None,
        };
        // Across a gap, the version before is several unseen writes back.
        d.writers_across_gap = match (shown, d.index.checked_sub(1).and_then(|i| d.history.get(i)))
        {
            (Some(v), Some(p)) => cx
                .replica
                .gap_between(p.mod_revision, v.mod_revision)
                .is_some(),
            _ => false,
        };
        d.writers_compared = current.is_some() && before.is_some();
        d.writers = match (&current, &before) {
            (Some(c), Some(b)) => diff::changed_writers(b, c),
            (Some(c), None) => diff::last_writers(c),
            _ => Vec::new(),
        };
        d.diff = if d.diff_on {
            Some(cx.render_diff(d))
        } else {
            None
        };
        d.scroll = d.scroll.min(d.body_len().saturating_sub(1));
    }

    /// Shows the version `delta` older (negative) or newer, staying at the ends.
    pub fn select_version(&mut self, delta: i64, cx: &Decoding) {
        let n = self.history.len() as i64;
        let i = (self.index as i64 + delta).clamp(0, (n - 1).max(0)) as usize;
        if i != self.index {
            self.index = i;
            self.scroll = 0;
            self.refresh(cx);
        }
    }

    /// Renders afresh from the top (after `o` switched JSON and YAML).
    pub fn rerender(&mut self, cx: &Decoding) {
        self.scroll = 0;
        self.refresh(cx);
    }

    /// Shows the diff instead of the value, or the value again.
    pub fn toggle_diff(&mut self, cx: &Decoding) {
        self.diff_on = !self.diff_on;
        self.scroll = 0;
        self.refresh(cx);
    }

    /// Marks the version shown as the other side of the diff, or unmarks it.
    pub fn mark_version(&mut self, cx: &Decoding) {
        let shown = self.shown().map(|v| v.mod_revision);
        self.mark = if self.mark == shown { None } else { shown };
        self.refresh(cx);
    }

    /// After a batch: refresh when the key's history changed, staying on the newest
    /// version if it was shown, else on the same revision.
    pub fn after_batch(&mut self, cx: &Decoding) {
        let d = self;
        let newest = cx.replica.key_meta(&d.key);
        let changed = match (&newest, d.history.last()) {
            (Some(m), Some(h)) => {
                m.newest.mod_revision != h.mod_revision || m.history_len != d.history.len()
            }
            (Some(_), None) => true,
            // Gone from the replica (a replay sought back to before the key was created, or
            // its history was dropped): nothing of it may be shown any more.
            (None, _) => !d.history.is_empty(),
        };
        if changed {
            let was_newest = d.index + 1 >= d.history.len();
            let shown = d.shown().map(|v| v.mod_revision);
            d.history = cx.replica.history(&d.key);
            d.index = if was_newest {
                d.history.len().saturating_sub(1)
            } else {
                shown
                    .and_then(|r| d.history.iter().position(|v| v.mod_revision == r))
                    .unwrap_or(0)
            };
            d.refresh(cx);
        }
    }
}

impl Decoding<'_> {
    fn options<'a>(&'a self, key: &'a [u8], v: &VersionValue) -> DecodeOptions<'a> {
        DecodeOptions {
            show_secrets: self.show_secrets,
            etcd_key: key,
            mod_revision: Some(v.mod_revision),
            keyring: self.keyring,
            candidates: &[],
        }
    }

    fn render_version(&self, d: &OpenedKeyState) -> Option<Rendered> {
        let shown = d.shown()?;
        // A deletion shows the last live object before it (its deletionTimestamp and
        // finalizers say how it went); the pane's title says it is deleted.
        let v = match &shown.value {
            Some(_) => shown,
            None => d.last_live_before_shown()?,
        };
        let value = v.value.as_ref()?;
        let mut r = decode::render(
            value,
            &RenderOptions {
                show_secrets: self.show_secrets,
                secret_key: KeyPath::parse(self.replica.prefix(), &d.key).resource == "secrets",
                etcd_key: &d.key,
                mod_revision: Some(v.mod_revision),
                keyring: self.keyring,
                json: self.json,
            },
        );
        self.explain_auth_failure(&d.key, value, &mut r);
        // The failure is shown above the body already: keep the body to what was stored.
        if let Some(e) = r.error.clone() {
            r.lines.retain(|l| *l != e);
        }
        Some(r)
    }

    /// aesgcm binds a value to its key path. When authentication fails, look for the same
    /// bytes under other keys of the resource (a value copied to another key) and, if the
    /// value authenticates under one of them, say so instead of "bound to a different key
    /// path, or the key differs". Costs one scan of the resource's keys, only for such values.
    fn explain_auth_failure(&self, key: &[u8], value: &Bytes, r: &mut Rendered) {
        let Some(old) = r
            .decoded
            .as_ref()
            .and_then(|x| x.encryption.as_ref())
            .and_then(|e| e.message.clone())
            .filter(|m| m.starts_with("authentication failed"))
        else {
            return;
        };
        let Some(rp) = crate::derive::keys::resource_prefix(self.replica.prefix(), key) else {
            return;
        };
        let mut same: Vec<Bytes> = Vec::new();
        let mut after: Option<Bytes> = None;
        let mut scanned = 0;
        while scanned < crate::derive::keys::SCAN_LIMIT {
            let chunk = self.replica.live_keys_after(&rp, after.as_deref(), 512);
            scanned += chunk.len();
            let done = chunk.len() < 512;
            after = chunk.last().cloned();
            same.extend(chunk.into_iter().filter(|k| {
                k.as_ref() != key
                    && self
                        .replica
                        .get(k)
                        .and_then(|v| v.value)
                        .is_some_and(|b| b == *value)
            }));
            if done {
                break;
            }
        }
        if same.is_empty() {
            return;
        }
        let cands: Vec<&[u8]> = same.iter().map(|b| b.as_ref()).collect();
        let d = decode::decode(
            value,
            &DecodeOptions {
                etcd_key: key,
                keyring: self.keyring,
                candidates: &cands,
                ..Default::default()
            },
        );
        let Some(new) = d.encryption.and_then(|e| e.message) else {
            return;
        };
        if new != old {
            if r.error.as_deref() == Some(old.as_str()) {
                r.error = Some(new.clone());
            }
            for l in r.lines.iter_mut().filter(|l| **l == old) {
                l.clone_from(&new);
            }
            if let Some(e) = r.decoded.as_mut().and_then(|x| x.encryption.as_mut()) {
                e.message = Some(new);
            }
        }
    }

    /// The decoded object of a version: `Err` says why there is none.
    fn object_of(&self, key: &[u8], v: &VersionValue) -> Result<serde_json::Value, String> {
        let Some(value) = &v.value else {
            return Err(format!(
                "revision {} is a deletion",
                crate::tui::text::thousands_i(v.mod_revision)
            ));
        };
        let d = decode::decode(value, &self.options(key, v));
        d.value().ok_or_else(|| {
            let why = d
                .encryption
                .and_then(|e| e.message)
                .or(d.error)
                .unwrap_or_else(|| "it does not decode".into());
            format!(
                "revision {} cannot be compared: {why}",
                crate::tui::text::thousands_i(v.mod_revision)
            )
        })
    }

    /// The diff of the shown version against the marked one, else the previous one.
    fn render_diff(&self, d: &OpenedKeyState) -> RenderedDiff {
        use crate::tui::text::thousands_i as t;
        let note = |title: String, msg: String| RenderedDiff {
            title,
            lines: vec![(LineKind::Header, msg)],
        };
        let Some(shown) = d.shown() else {
            return note(String::new(), "no version held".into());
        };
        let other =
            match d.mark {
                Some(m) if m == shown.mod_revision => return note(
                    format!("{} (marked)", t(m)),
                    "the marked version is the one shown: move to another with [ or ] to compare"
                        .into(),
                ),
                Some(m) => match d.history.iter().find(|v| v.mod_revision == m) {
                    Some(v) => v,
                    None => {
                        return note(
                            String::new(),
                            format!("the marked revision {} is no longer held", t(m)),
                        )
                    }
                },
                None => {
                    match d.index.checked_sub(1).and_then(|i| d.history.get(i)) {
                        Some(v) => v,
                        None if shown.version == 1 => {
                            return note(
                                t(shown.mod_revision),
                                format!(
                                    "created at revision {}: this is the key's first version, \
                                     there is nothing older to compare",
                                    t(shown.mod_revision)
                                ),
                            )
                        }
                        None => return note(
                            t(shown.mod_revision),
                            "no older version held (compacted, dropped by the history budget, or \
                         before the first list): mark one with m to compare"
                                .into(),
                        ),
                    }
                }
            };
        let (old, new) = if other.mod_revision < shown.mod_revision {
            (other, shown)
        } else {
            (shown, other)
        };
        let marked = if d.mark.is_some() { " (marked)" } else { "" };
        let gap = self
            .replica
            .gap_between(old.mod_revision, new.mod_revision)
            .cloned();
        // A deletion inside a gap has no revision of its own: the title names the gap.
        let title = match (&gap, &new.value) {
            (Some(g), None) => format!(
                "{} → deleted in {}–{}{marked}",
                t(old.mod_revision),
                g.from,
                g.to
            ),
            (None, None) => format!(
                "{} → deleted at {}{marked}",
                t(old.mod_revision),
                t(new.mod_revision)
            ),
            _ => format!("{} → {}{marked}", t(old.mod_revision), t(new.mod_revision)),
        };
        let mut lines = Vec::new();
        if let Some(g) = &gap {
            lines.push((
                LineKind::Header,
                format!(
                    "revisions {}–{} not seen (etcd compacted them before regscope's watch resumed; a relist showed the result): version {} → {}",
                    g.from,
                    g.to,
                    old.version,
                    if new.value.is_some() { format!("version {}", new.version) } else { "deleted".into() }
                ),
            ));
        }
        let compared = format!(
            "revision {} (version {}) → {} (version {}); metadata.resourceVersion not compared",
            t(old.mod_revision),
            old.version,
            t(new.mod_revision),
            new.version
        );
        if new.value.is_none() {
            lines.push((
                LineKind::Header,
                format!(
                    "deleted {}",
                    d.deleted_when(self.replica)
                        .unwrap_or_else(|| format!("at revision {}", t(new.mod_revision)))
                ),
            ));
            lines.push((LineKind::Header, compared));
            return RenderedDiff { title, lines };
        }
        let new_obj = match self.object_of(&d.key, new) {
            Ok(v) => v,
            Err(e) => return note(title, e),
        };
        let old_obj = match self.object_of(&d.key, old) {
            Ok(v) => v,
            // Re-created after a deletion: everything is new.
            Err(_) if old.value.is_none() => serde_json::Value::Object(Default::default()),
            Err(e) => return note(title, e),
        };
        let od = diff::diff(&old_obj, &new_obj);
        if od.writers.is_empty() {
            let why = if diff::last_writers(&new_obj).is_empty() {
                "written by: no managedFields in the newer version"
            } else {
                "written by: unknown — managedFields unchanged (a graceful deletion, a finalizer removed by the garbage collector, a write that changes no owned field leave every entry as it was)"
            };
            lines.push((LineKind::Header, why.into()));
        }
        // Across a gap the versions between were never seen: the entries that moved were
        // moved by any of those writes, the last of them included.
        let by = if gap.is_some() {
            "written (in writes not seen one by one) by"
        } else {
            "written by"
        };
        for w in &od.writers {
            lines.push((LineKind::Header, format!("{by} {}", w.describe())));
        }
        lines.push((LineKind::Header, compared));
        if od.is_empty() {
            lines.push((
                LineKind::Header,
                "no differences besides metadata.resourceVersion".into(),
            ));
        }
        lines.extend(od.lines());
        RenderedDiff { title, lines }
    }
}
