//! The opened key: its history from the replica, the shown version decoded (YAML or JSON,
//! syntax-coloured), and the structural diff between two versions.
//!
//! State lives in [`DetailState`]; every decode, highlight and diff happens here, in
//! update (on open, on `[`/`]`, `o`, `d`, `m`, and when a batch changes the key), so the
//! view in [`super::views`] only slices what was computed.

use bytes::Bytes;

use super::app::App;
use super::diff::{self, LineKind, Writer};
use super::syntax::{self, Styled};
use crate::decode::{self, DecodeOptions, RenderOptions, Rendered};
use crate::model::{KeyPath, Revision};
use crate::store::VersionView;

/// The opened key.
pub(crate) struct DetailState {
    pub key: Bytes,
    /// Every version held, oldest first.
    pub history: Vec<VersionView>,
    /// Index into `history` of the version shown.
    pub index: usize,
    /// Rendered value of the version shown (`None` for a tombstone).
    pub rendered: Option<Rendered>,
    /// Syntax spans for each line of `rendered`.
    pub styled: Vec<Styled>,
    /// Who wrote the shown version (newest `managedFields` entries).
    pub writers: Vec<Writer>,
    /// First body line shown.
    pub scroll: usize,
    /// Diff mode: the body is the diff instead of the value.
    pub diff_on: bool,
    /// mod_revision of the marked version (the other side of the diff).
    pub mark: Option<Revision>,
    /// The diff shown in diff mode.
    pub diff: Option<DiffView>,
}

/// A diff ready to draw.
pub(crate) struct DiffView {
    /// `120 → 125`.
    pub title: String,
    /// Attribution and notes first, then the changes.
    pub lines: Vec<(LineKind, String)>,
}

impl DetailState {
    /// Lines of the body currently shown (value or diff), for scrolling.
    pub fn body_len(&self) -> usize {
        match (&self.diff, self.diff_on) {
            (Some(d), true) => d.lines.len(),
            _ => self.rendered.as_ref().map_or(0, |r| r.lines.len()),
        }
    }

    /// The version shown.
    pub fn shown(&self) -> Option<&VersionView> {
        self.history.get(self.index)
    }
}

impl App {
    pub(crate) fn open_detail(&mut self, key: Bytes) {
        self.open_detail_at(key, None);
    }

    /// Opens `key` on the version written at `revision` (an event's), or the newest held
    /// at or before it; on the newest version without one, or when history before it was
    /// dropped.
    pub(crate) fn open_detail_at(&mut self, key: Bytes, revision: Option<Revision>) {
        let history = self.session.replica.history(&key);
        let newest = history.len().saturating_sub(1);
        let index = revision
            .and_then(|r| history.iter().rposition(|v| v.mod_revision <= r))
            .unwrap_or(newest);
        let mut d = DetailState {
            key,
            history,
            index,
            rendered: None,
            styled: Vec::new(),
            writers: Vec::new(),
            scroll: 0,
            diff_on: false,
            mark: None,
            diff: None,
        };
        self.refresh_detail(&mut d);
        self.detail = Some(d);
    }

    /// Re-renders the shown version and, in diff mode, the diff.
    pub(crate) fn refresh_detail(&self, d: &mut DetailState) {
        d.rendered = self.render_version(d);
        d.styled = match &d.rendered {
            Some(r) if r.decoded.as_ref().is_some_and(|x| x.json.is_some()) => {
                syntax::highlight(&r.lines, self.json_output)
            }
            Some(r) => syntax::plain(&r.lines),
            None => Vec::new(),
        };
        d.writers = d
            .rendered
            .as_ref()
            .and_then(|r| r.decoded.as_ref())
            .and_then(|x| x.value())
            .map(|v| diff::last_writers(&v))
            .unwrap_or_default();
        d.diff = if d.diff_on {
            Some(self.diff_view(d))
        } else {
            None
        };
        d.scroll = d.scroll.min(d.body_len().saturating_sub(1));
    }

    fn options<'a>(&'a self, key: &'a [u8], v: &VersionView) -> DecodeOptions<'a> {
        DecodeOptions {
            show_secrets: self.s.show_secrets,
            etcd_key: key,
            mod_revision: Some(v.mod_revision),
            keyring: self.s.keyring.as_deref(),
            candidates: &[],
        }
    }

    fn render_version(&self, d: &DetailState) -> Option<Rendered> {
        let v = d.shown()?;
        let value = v.value.as_ref()?;
        let mut r = decode::render(
            value,
            &RenderOptions {
                show_secrets: self.s.show_secrets,
                secret_key: KeyPath::parse(self.session.replica.prefix(), &d.key).resource
                    == "secrets",
                etcd_key: &d.key,
                mod_revision: Some(v.mod_revision),
                keyring: self.s.keyring.as_deref(),
                json: self.json_output,
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
        let Some(rp) = crate::derive::keys::resource_prefix(self.session.replica.prefix(), key)
        else {
            return;
        };
        let mut same: Vec<Bytes> = Vec::new();
        let mut after: Option<Bytes> = None;
        let mut scanned = 0;
        while scanned < crate::derive::keys::SCAN_LIMIT {
            let chunk = self
                .session
                .replica
                .live_keys_after(&rp, after.as_deref(), 512);
            scanned += chunk.len();
            let done = chunk.len() < 512;
            after = chunk.last().cloned();
            same.extend(chunk.into_iter().filter(|k| {
                k.as_ref() != key
                    && self
                        .session
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
                keyring: self.s.keyring.as_deref(),
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
    fn object_of(&self, key: &[u8], v: &VersionView) -> Result<serde_json::Value, String> {
        let Some(value) = &v.value else {
            return Err(format!(
                "revision {} is a deletion",
                super::format::thousands_i(v.mod_revision)
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
                super::format::thousands_i(v.mod_revision)
            )
        })
    }

    /// The diff of the shown version against the marked one, else the previous one.
    fn diff_view(&self, d: &DetailState) -> DiffView {
        use super::format::thousands_i as t;
        let note = |title: String, msg: String| DiffView {
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
        let title = format!("{} → {}{marked}", t(old.mod_revision), t(new.mod_revision));
        let mut lines = Vec::new();
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
                format!("deleted at revision {}", t(new.mod_revision)),
            ));
            lines.push((LineKind::Header, compared));
            return DiffView { title, lines };
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
            lines.push((
                LineKind::Header,
                "written by: no managedFields in the newer version".into(),
            ));
        }
        for w in &od.writers {
            lines.push((LineKind::Header, format!("written by {}", w.describe())));
        }
        lines.push((LineKind::Header, compared));
        if od.is_empty() {
            lines.push((
                LineKind::Header,
                "no differences besides metadata.resourceVersion".into(),
            ));
        }
        lines.extend(od.lines());
        DiffView { title, lines }
    }

    pub(crate) fn select_version(&mut self, delta: i64) {
        let Some(mut d) = self.detail.take() else {
            return;
        };
        let n = d.history.len() as i64;
        let i = (d.index as i64 + delta).clamp(0, (n - 1).max(0)) as usize;
        if i != d.index {
            d.index = i;
            d.scroll = 0;
            self.refresh_detail(&mut d);
        }
        self.detail = Some(d);
    }

    pub(crate) fn toggle_json(&mut self) {
        self.json_output = !self.json_output;
        if let Some(mut d) = self.detail.take() {
            d.scroll = 0;
            self.refresh_detail(&mut d);
            self.detail = Some(d);
        }
    }

    pub(crate) fn toggle_diff(&mut self) {
        if let Some(mut d) = self.detail.take() {
            d.diff_on = !d.diff_on;
            d.scroll = 0;
            self.refresh_detail(&mut d);
            self.detail = Some(d);
        }
    }

    pub(crate) fn mark_version(&mut self) {
        if let Some(mut d) = self.detail.take() {
            let shown = d.shown().map(|v| v.mod_revision);
            d.mark = if d.mark == shown { None } else { shown };
            self.refresh_detail(&mut d);
            self.detail = Some(d);
        }
    }

    /// After a batch: refresh the open key when its history changed, staying on the newest
    /// version if it was shown, else on the same revision.
    pub(crate) fn detail_after_batch(&mut self) {
        let Some(mut d) = self.detail.take() else {
            return;
        };
        let newest = self.session.replica.key_meta(&d.key);
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
            d.history = self.session.replica.history(&d.key);
            d.index = if was_newest {
                d.history.len().saturating_sub(1)
            } else {
                shown
                    .and_then(|r| d.history.iter().position(|v| v.mod_revision == r))
                    .unwrap_or(0)
            };
            self.refresh_detail(&mut d);
        }
        self.detail = Some(d);
    }
}
