//! The key browser: a resource chosen from the replica's resources, and a window of its
//! keys anchored on a key rather than on an index, so paging through a million keys never
//! collects them (the queries are in [`crate::derive::keys`]).
//!
//! The anchor (`page_after`: the rows start strictly after this key) and the selection are
//! keys; after every batch and every move [`KeysState::normalize`] keeps them on live keys
//! that match the filter, and the selection inside the rows shown in the last frame.

use std::collections::HashMap;

use bytes::Bytes;

use super::drawn::add;
use crate::derive::keys::{self as browse, Scan};
use crate::model::KeyPath;
use crate::store::{Replica, Session};

/// Which list of the key browser has the focus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeysFocus {
    Resources,
    Keys,
}

/// The key browser's state.
pub(crate) struct KeysState {
    pub focus: KeysFocus,
    pub resource: Option<String>,
    /// Resource name → resource prefix (see [`browse::resource_prefix`]).
    pub prefixes: HashMap<String, Bytes>,
    /// (resources, live keys) when `prefixes` was last discovered, so a resource whose
    /// keys cannot be found (outside the prefix) does not trigger a scan per batch.
    pub discovered_at: (usize, u64),
    /// Lower-case filter over `namespace/name`.
    pub filter: String,
    /// The visible rows start strictly after this key (`None`: at the first key).
    pub page_after: Option<Bytes>,
    pub selected: Option<Bytes>,
}

impl Default for KeysState {
    fn default() -> KeysState {
        KeysState {
            focus: KeysFocus::Resources,
            resource: None,
            prefixes: HashMap::new(),
            discovered_at: (usize::MAX, 0),
            filter: String::new(),
            page_after: None,
            selected: None,
        }
    }
}

/// `replica`'s resource names, sorted, as the browser lists them.
pub(crate) fn resource_names(replica: &Replica) -> Vec<String> {
    let mut v: Vec<String> = replica
        .resources()
        .iter()
        .map(|r| r.resource.clone())
        .collect();
    v.sort();
    v
}

impl KeysState {
    /// The resource prefix of the selected resource, when known.
    pub fn prefix(&self) -> Option<&Bytes> {
        self.resource.as_ref().and_then(|r| self.prefixes.get(r))
    }

    /// Shows `resource`'s keys from the first; nothing changes when it is shown already.
    pub fn choose_resource(&mut self, resource: String) {
        if self.resource.as_ref() != Some(&resource) {
            self.resource = Some(resource);
            self.page_after = None;
            self.selected = None;
            self.filter.clear();
        }
    }

    /// Shows `key` selected, under its resource, with the focus on the keys.
    pub fn select_key(&mut self, key: Bytes, session: &mut Session, rows: usize) {
        let resource = KeyPath::parse(session.replica.prefix(), &key)
            .resource
            .into_owned();
        self.resource = Some(resource);
        self.filter.clear();
        self.focus = KeysFocus::Keys;
        self.selected = Some(key);
        self.page_after = None;
        self.normalize(session, rows);
    }

    /// Sets the filter (lower-cased) and starts from the first matching key.
    pub fn set_filter(&mut self, f: String, session: &mut Session, rows: usize) {
        self.filter = f.to_lowercase();
        self.page_after = None;
        self.selected = None;
        self.normalize(session, rows);
    }

    /// The visible key rows (`rows` of them at most). When the rows after the anchor do not
    /// fill the view (keys deleted near the end, a taller terminal), keys before the anchor
    /// fill it from above.
    pub fn rows(&self, replica: &Replica, rows: usize) -> Scan {
        let Some(p) = self.prefix() else {
            return Scan::default();
        };
        let f = &self.filter;
        let mut scan = browse::after(replica, p, self.page_after.as_deref(), rows, f);
        if scan.keys.len() < rows && self.page_after.is_some() {
            let bound = scan.keys.first().cloned();
            let more = browse::before(replica, p, bound.as_deref(), rows - scan.keys.len(), f);
            let mut keys: Vec<Bytes> = more.keys.into_iter().rev().collect();
            keys.append(&mut scan.keys);
            scan.keys = keys;
            scan.limited |= more.limited;
        }
        scan
    }

    /// Moves the resource selection by `delta` (clamped); another resource shows from its
    /// first key.
    pub fn step_resource(&mut self, session: &mut Session, delta: i64, rows: usize) {
        let names = resource_names(&session.replica);
        let i = self
            .resource
            .as_ref()
            .and_then(|r| names.iter().position(|n| n == r))
            .unwrap_or(0);
        let j = add(i, delta, names.len().saturating_sub(1));
        if let Some(name) = names.get(j) {
            self.choose_resource(name.clone());
        }
        self.normalize(session, rows);
    }

    /// Keeps the browser consistent with the replica: a resource chosen, its prefix known,
    /// the selection on a live matching key and inside the `rows` rows shown.
    pub fn normalize(&mut self, session: &mut Session, rows: usize) {
        // The browser walks key ranges: bring the key order up to date first.
        session.settle();
        let replica = &session.replica;
        if self.resource.is_none() {
            let mut with_keys: Vec<&str> = replica
                .resources()
                .iter()
                .filter(|r| r.keys > 0)
                .map(|r| r.resource.as_str())
                .collect();
            with_keys.sort();
            self.resource = with_keys.first().map(|s| s.to_string());
        }
        let Some(res) = self.resource.clone() else {
            return;
        };
        let state = (replica.resources().len(), replica.live_keys());
        if !self.prefixes.contains_key(&res)
            && self.discovered_at != state
            && replica
                .resources()
                .iter()
                .any(|r| r.resource == res && r.keys > 0)
        {
            self.prefixes = browse::discover_prefixes(replica);
            self.discovered_at = state;
        }
        let Some(prefix) = self.prefixes.get(&res).cloned() else {
            return;
        };
        let f = self.filter.clone();
        let ok = self.selected.as_ref().is_some_and(|k| {
            replica.get(k).is_some() && k.starts_with(&prefix) && browse::matches(&prefix, k, &f)
        });
        if !ok {
            let after = self.selected.clone().or(self.page_after.clone());
            let next = browse::after(replica, &prefix, after.as_deref(), 1, &f)
                .keys
                .into_iter()
                .next();
            self.selected = next.or_else(|| {
                browse::before(replica, &prefix, after.as_deref(), 1, &f)
                    .keys
                    .into_iter()
                    .next()
            });
        }
        self.keep_visible(replica, &prefix, rows);
    }

    fn keep_visible(&mut self, replica: &Replica, prefix: &Bytes, rows: usize) {
        let Some(sel) = self.selected.clone() else {
            self.page_after = None;
            return;
        };
        if rows == 0 {
            // Nothing drawn yet: the first frame shows the selection from the top.
            return;
        }
        let f = self.filter.clone();
        if let Some(a) = &self.page_after {
            if sel <= *a {
                // Selection above the view: it becomes the first row.
                self.page_after = browse::before(replica, prefix, Some(&sel), 1, &f)
                    .keys
                    .into_iter()
                    .next();
                return;
            }
        }
        let visible = browse::after(replica, prefix, self.page_after.as_deref(), rows, &f);
        if !visible.keys.contains(&sel) {
            // Selection below the view: it becomes the last row.
            let above = browse::before(replica, prefix, Some(&sel), rows, &f);
            self.page_after = if above.keys.len() >= rows {
                above.keys.last().cloned()
            } else {
                None
            };
        }
    }

    /// Moves the key selection by `delta` keys; Top and Bottom (±`i64::MAX / 2`) jump to
    /// the first and the last key.
    pub fn step(&mut self, replica: &Replica, delta: i64, rows: usize) {
        let Some(prefix) = self.prefix().cloned() else {
            return;
        };
        let f = self.filter.clone();
        let sel = self.selected.clone();
        let n = delta.unsigned_abs().min(1 << 20) as usize;
        let target = if delta >= i64::MAX / 4 {
            browse::before(replica, &prefix, None, 1, &f).keys.pop()
        } else if delta <= i64::MIN / 4 {
            browse::after(replica, &prefix, None, 1, &f).keys.pop()
        } else if delta > 0 {
            browse::after(replica, &prefix, sel.as_deref(), n, &f)
                .keys
                .pop()
        } else {
            browse::before(replica, &prefix, sel.as_deref(), n, &f)
                .keys
                .pop()
        };
        if let Some(t) = target {
            if delta <= i64::MIN / 4 {
                self.page_after = None;
            }
            self.selected = Some(t);
            self.keep_visible(replica, &prefix, rows);
        }
    }
}
