//! Two states of the keyspace compared key by key: the keys created, deleted and changed,
//! per resource and in total, with the sizes of their newest values.
//!
//! Input: two streams of live keys in key order ([`LiveKey`]: key, mod_revision, value
//! size), read from a replica at its revision ([`live_keys`]) or from an owned copy of an
//! earlier moment ([`KeysAt`], which a pass that moves its session on keeps). Output: a
//! [`Compared`]: per resource and in total, counts and bytes ([`ResourceChanges`]), the keys
//! whose size changed most, and on request every changed key in key order.
//!
//! The rule (the one `regscope report` and `regscope diff` share): a key on one side only is
//! created (only in `to`) or deleted (only in `from`); a key on both sides is recreated when
//! its create_revision differs (it was deleted and created again in between: etcd MVCC gives
//! a key the revision of the put that creates it anew after its deletion as its
//! create_revision, `mvcc/kvstore_txn.go` `put` in etcd 3.4–3.6), and otherwise changed when
//! its mod_revision differs, since within one etcd history a mod_revision names one value
//! (every write of a key gets the revision of its transaction). A recreated key is counted
//! once, as recreated, never also as changed, created or deleted: it is the same name with
//! another object behind it (a StatefulSet's Pod replaced, a namespace deleted and made
//! again). A caller comparing states that may come from two histories (two clusters, two
//! files) also passes a test of the values for keys whose revisions agree. The two streams are read once,
//! merged like a sorted join; nothing but the changed keys asked for is kept.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::{escape_bytes, KeyPath, Revision};
use crate::store::Replica;

/// One live key as the comparison sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveKey<'a> {
    /// The key bytes.
    pub key: &'a [u8],
    /// Its newest version's mod_revision.
    pub mod_revision: Revision,
    /// The revision that created it (since its last deletion, if any).
    pub create_revision: Revision,
    /// Its newest value's length in bytes.
    pub bytes: u64,
}

/// Every live key of `replica` starting with `under`, at the replica's revision, in key
/// order (none while the replica holds no revision).
pub fn live_keys<'a>(replica: &'a Replica, under: &'a [u8]) -> impl Iterator<Item = LiveKey<'a>> {
    replica
        .range_meta_at(under, replica.revision())
        .into_iter()
        .flatten()
        .map(|(key, m)| LiveKey {
            key,
            mod_revision: m.mod_revision,
            create_revision: m.create_revision,
            bytes: m.size.unwrap_or(0) as u64,
        })
}

/// An owned copy of the live keys at one moment: keys, mod and create revisions and sizes,
/// not values. One copy of the keyspace's keys, for a pass that moves its session on and
/// compares later ([`crate::report`]'s `--from` and `--to`).
#[derive(Clone, Debug, Default)]
pub struct KeysAt {
    /// `(key, mod_revision, create_revision, bytes)`.
    keys: Vec<(Box<[u8]>, Revision, Revision, u64)>,
}

impl KeysAt {
    /// The live keys of `replica` under `under` at its revision.
    pub fn of(replica: &Replica, under: &[u8]) -> KeysAt {
        KeysAt {
            keys: live_keys(replica, under)
                .map(|k| (Box::from(k.key), k.mod_revision, k.create_revision, k.bytes))
                .collect(),
        }
    }

    /// The keys held, in key order.
    pub fn iter(&self) -> impl Iterator<Item = LiveKey<'_>> {
        self.keys
            .iter()
            .map(|(key, mod_revision, create_revision, bytes)| LiveKey {
                key,
                mod_revision: *mod_revision,
                create_revision: *create_revision,
                bytes: *bytes,
            })
    }

    /// How many keys are held.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// No key is held.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// What happened to one key between the two states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// Live only in `to`.
    Created,
    /// Live only in `from`.
    Deleted,
    /// Live in both, with another mod_revision (or, when the caller compares values,
    /// another value), the same create_revision.
    Changed,
    /// Live in both with another create_revision: deleted and created again in between
    /// (between two clusters' files: created in each on its own).
    Recreated,
}

impl ChangeKind {
    /// `created`, `deleted`, `changed` or `recreated`, as the JSON says it.
    pub fn name(self) -> &'static str {
        match self {
            ChangeKind::Created => "created",
            ChangeKind::Deleted => "deleted",
            ChangeKind::Changed => "changed",
            ChangeKind::Recreated => "recreated",
        }
    }

    /// `+`, `-`, `~` or `±` (deleted and created again), as a diff line starts.
    pub fn sign(self) -> char {
        match self {
            ChangeKind::Created => '+',
            ChangeKind::Deleted => '-',
            ChangeKind::Changed => '~',
            ChangeKind::Recreated => '±',
        }
    }
}

impl std::fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One key's change between the two states. Sizes in bytes of the newest value; `None`
/// on the side where the key is not live.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeyChange {
    /// The key, non-UTF-8 bytes escaped ([`escape_bytes`]).
    pub key: String,
    /// Its resource as the key layout names it ([`KeyPath::parse`]).
    pub resource: String,
    pub change: ChangeKind,
    pub bytes_from: Option<u64>,
    pub bytes_to: Option<u64>,
    pub mod_revision_from: Option<Revision>,
    pub mod_revision_to: Option<Revision>,
    /// The revision that created the key as each side holds it: they differ for a key
    /// [`ChangeKind::Recreated`].
    pub create_revision_from: Option<Revision>,
    pub create_revision_to: Option<Revision>,
}

impl KeyChange {
    /// `bytes_to − bytes_from`, an absent side counting 0.
    pub fn bytes_delta(&self) -> i64 {
        self.bytes_to.unwrap_or(0) as i64 - self.bytes_from.unwrap_or(0) as i64
    }
}

/// Keys created, deleted, changed and recreated in one resource (or, with an empty
/// `resource`, in all of them), and the bytes of their newest values.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ResourceChanges {
    /// The resource (`pods`, `minions`, `apiregistration.k8s.io/apiservices`…); empty in a
    /// total.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource: String,
    pub created: u64,
    pub deleted: u64,
    pub changed: u64,
    /// Live on both sides as two objects: deleted and created again in between.
    pub recreated: u64,
    /// Value bytes of every live key (changed or not) in `from` and in `to`.
    pub bytes_from: u64,
    pub bytes_to: u64,
    /// Value bytes of the keys created (their size in `to`).
    pub bytes_created: u64,
    /// Value bytes of the keys deleted (their size in `from`).
    pub bytes_deleted: u64,
    /// Σ (size in `to` − size in `from`) over the keys changed; negative when they shrank.
    pub bytes_changed_delta: i64,
    /// The same over the keys recreated, so that `bytes_from + bytes_created −
    /// bytes_deleted + bytes_changed_delta + bytes_recreated_delta = bytes_to`.
    pub bytes_recreated_delta: i64,
}

impl ResourceChanges {
    /// Keys created, deleted, changed or recreated.
    pub fn differences(&self) -> u64 {
        self.created + self.deleted + self.changed + self.recreated
    }

    fn add(&mut self, c: &KeyChange) {
        match c.change {
            ChangeKind::Created => {
                self.created += 1;
                self.bytes_created += c.bytes_to.unwrap_or(0);
            }
            ChangeKind::Deleted => {
                self.deleted += 1;
                self.bytes_deleted += c.bytes_from.unwrap_or(0);
            }
            ChangeKind::Changed => {
                self.changed += 1;
                self.bytes_changed_delta += c.bytes_delta();
            }
            ChangeKind::Recreated => {
                self.recreated += 1;
                self.bytes_recreated_delta += c.bytes_delta();
            }
        }
    }
}

/// How to compare.
#[derive(Clone, Copy, Debug)]
pub struct CompareOptions<'a> {
    /// The prefix kube-apiserver stores under (its `--etcd-prefix`), which resource names
    /// are read after ([`KeyPath::parse`]).
    pub root: &'a [u8],
    /// Keys in [`Compared::top_keys`].
    pub top: usize,
    /// Keep every changed key in [`Compared::keys`].
    pub every_key: bool,
    /// Whether a key live on both sides with another create_revision is
    /// [`ChangeKind::Recreated`]: true when both sides are one cluster's history; between
    /// two clusters' (whose revisions do not compare) such a key is changed.
    pub recreated: bool,
}

/// The comparison's result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Compared {
    /// Per resource with any difference: most differences first, then by name.
    pub per_resource: Vec<ResourceChanges>,
    /// Every resource together (its `resource` empty); its byte totals count every live
    /// key compared.
    pub total: ResourceChanges,
    /// Live keys on each side.
    pub keys_from: u64,
    pub keys_to: u64,
    /// The [`CompareOptions::top`] keys whose size changed most (created, deleted or
    /// changed), largest change first, then by key.
    pub top_keys: Vec<KeyChange>,
    /// With [`CompareOptions::every_key`]: every key created, deleted or changed, in key
    /// order; else empty.
    pub keys: Vec<KeyChange>,
}

impl Compared {
    /// Nothing differs.
    pub fn is_empty(&self) -> bool {
        self.total.differences() == 0
    }
}

/// Compares `from` with `to` (both in key order, as [`live_keys`] and [`KeysAt::iter`]
/// give them). `values_differ(key)` is asked only of a key live on both sides with the
/// same mod_revision and create_revision: `true` counts it as changed (states of two
/// histories); a caller comparing two moments of one history passes `|_| false`.
pub fn compare<'a, 'b>(
    from: impl Iterator<Item = LiveKey<'a>>,
    to: impl Iterator<Item = LiveKey<'b>>,
    opts: &CompareOptions<'_>,
    mut values_differ: impl FnMut(&[u8]) -> bool,
) -> Compared {
    let mut per: BTreeMap<String, ResourceChanges> = BTreeMap::new();
    let mut out = Compared::default();
    let mut top: Vec<KeyChange> = Vec::new();
    let resource = |k: &[u8]| KeyPath::parse(opts.root, k).resource.into_owned();
    let mut one = |k: &[u8], old: Option<LiveKey<'_>>, new: Option<LiveKey<'_>>| {
        let name = resource(k);
        let row = per.entry(name.clone()).or_insert_with(|| ResourceChanges {
            resource: name.clone(),
            ..Default::default()
        });
        let (bytes_from, bytes_to) = (old.map_or(0, |o| o.bytes), new.map_or(0, |n| n.bytes));
        row.bytes_from += bytes_from;
        row.bytes_to += bytes_to;
        out.total.bytes_from += bytes_from;
        out.total.bytes_to += bytes_to;
        out.keys_from += u64::from(old.is_some());
        out.keys_to += u64::from(new.is_some());
        let change = match (old, new) {
            (None, Some(_)) => ChangeKind::Created,
            (Some(_), None) => ChangeKind::Deleted,
            (Some(o), Some(n)) if opts.recreated && o.create_revision != n.create_revision => {
                ChangeKind::Recreated
            }
            (Some(o), Some(n))
                if o.mod_revision != n.mod_revision
                    || values_differ(k)
                    || o.create_revision != n.create_revision =>
            {
                ChangeKind::Changed
            }
            _ => return,
        };
        let c = KeyChange {
            key: escape_bytes(k).into_owned(),
            resource: name,
            change,
            bytes_from: old.map(|o| o.bytes),
            bytes_to: new.map(|n| n.bytes),
            mod_revision_from: old.map(|o| o.mod_revision),
            mod_revision_to: new.map(|n| n.mod_revision),
            create_revision_from: old.map(|o| o.create_revision),
            create_revision_to: new.map(|n| n.create_revision),
        };
        row.add(&c);
        out.total.add(&c);
        if opts.every_key {
            out.keys.push(c.clone());
        }
        if opts.top > 0 {
            top.push(c);
            // Trimmed now and then, so that the candidates stay a few times the top.
            if top.len() > opts.top * 8 + 64 {
                sort_top(&mut top);
                top.truncate(opts.top);
            }
        }
    };
    let mut olds = from.peekable();
    for new in to {
        while let Some(old) = olds.next_if(|o| o.key < new.key) {
            one(old.key, Some(old), None);
        }
        let old = olds.next_if(|o| o.key == new.key);
        one(new.key, old, Some(new));
    }
    for old in olds {
        one(old.key, Some(old), None);
    }
    sort_top(&mut top);
    top.truncate(opts.top);
    out.top_keys = top;
    let mut rows: Vec<ResourceChanges> =
        per.into_values().filter(|r| r.differences() > 0).collect();
    rows.sort_by(|a, b| {
        b.differences()
            .cmp(&a.differences())
            .then_with(|| a.resource.cmp(&b.resource))
    });
    out.per_resource = rows;
    out
}

/// Largest change in size first, then by key.
fn sort_top(top: &mut [KeyChange]) {
    top.sort_by(|a, b| {
        b.bytes_delta()
            .unsigned_abs()
            .cmp(&a.bytes_delta().unsigned_abs())
            .then_with(|| a.key.cmp(&b.key))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key created at revision 1 and last written at `mod_revision`.
    fn k(key: &'static str, mod_revision: Revision, bytes: u64) -> LiveKey<'static> {
        LiveKey {
            key: key.as_bytes(),
            mod_revision,
            create_revision: 1,
            bytes,
        }
    }

    const OPTS: CompareOptions<'static> = CompareOptions {
        root: b"/registry",
        top: 10,
        every_key: true,
        recreated: true,
    };

    #[test]
    fn created_deleted_and_changed_keys_are_counted_with_their_bytes() {
        let from = [
            k("/registry/configmaps/a/x", 5, 100),
            k("/registry/pods/a/gone", 3, 40),
            k("/registry/pods/a/same", 4, 70),
            k("/registry/pods/a/web", 6, 300),
        ];
        let to = [
            k("/registry/configmaps/a/x", 5, 100),
            k("/registry/pods/a/new", 9, 55),
            k("/registry/pods/a/same", 4, 70),
            k("/registry/pods/a/web", 8, 280),
            k("/registry/secrets/a/s", 10, 12),
        ];
        let c = compare(from.into_iter(), to.into_iter(), &OPTS, |_| false);
        let keys: Vec<(&str, ChangeKind)> =
            c.keys.iter().map(|k| (k.key.as_str(), k.change)).collect();
        assert_eq!(
            keys,
            [
                ("/registry/pods/a/gone", ChangeKind::Deleted),
                ("/registry/pods/a/new", ChangeKind::Created),
                ("/registry/pods/a/web", ChangeKind::Changed),
                ("/registry/secrets/a/s", ChangeKind::Created),
            ]
        );
        assert_eq!(
            c.per_resource[0],
            ResourceChanges {
                resource: "pods".into(),
                created: 1,
                deleted: 1,
                changed: 1,
                bytes_from: 410,
                bytes_to: 405,
                bytes_created: 55,
                bytes_deleted: 40,
                bytes_changed_delta: -20,
                recreated: 0,
                bytes_recreated_delta: 0,
            }
        );
        assert_eq!(c.per_resource[1].resource, "secrets");
        // configmaps did not change: no row.
        assert_eq!(c.per_resource.len(), 2);
        assert_eq!(
            c.total,
            ResourceChanges {
                resource: String::new(),
                created: 2,
                deleted: 1,
                changed: 1,
                bytes_from: 510,
                bytes_to: 517,
                bytes_created: 67,
                bytes_deleted: 40,
                bytes_changed_delta: -20,
                recreated: 0,
                bytes_recreated_delta: 0,
            }
        );
        // Bytes add up: from + created − deleted + delta = to.
        let t = &c.total;
        assert_eq!(
            t.bytes_from as i64 + t.bytes_created as i64 - t.bytes_deleted as i64
                + t.bytes_changed_delta,
            t.bytes_to as i64
        );
        assert_eq!((c.keys_from, c.keys_to), (4, 5));
        // Largest size change first.
        let top: Vec<&str> = c.top_keys.iter().map(|k| k.key.as_str()).collect();
        assert_eq!(
            top,
            [
                "/registry/pods/a/new",
                "/registry/pods/a/gone",
                "/registry/pods/a/web",
                "/registry/secrets/a/s"
            ]
        );
        assert!(!c.is_empty());
    }

    #[test]
    fn the_same_keys_compare_empty_and_values_are_asked_only_at_equal_revisions() {
        let side = [
            k("/registry/pods/a/p", 4, 70),
            k("/registry/pods/a/q", 5, 80),
        ];
        let mut asked = Vec::new();
        let c = compare(side.into_iter(), side.into_iter(), &OPTS, |key| {
            asked.push(key.to_vec());
            false
        });
        assert!(c.is_empty(), "{c:?}");
        assert!(c.per_resource.is_empty() && c.keys.is_empty() && c.top_keys.is_empty());
        assert_eq!((c.total.bytes_from, c.total.bytes_to), (150, 150));
        assert_eq!(asked.len(), 2);
        // Two histories: the same revision with another value is a change.
        let c = compare(side.into_iter(), side.into_iter(), &OPTS, |key| {
            key.ends_with(b"/q")
        });
        assert_eq!(c.total.changed, 1);
        assert_eq!(c.keys[0].key, "/registry/pods/a/q");
        assert_eq!(c.keys[0].bytes_delta(), 0);
        // Both sides empty.
        let c = compare(std::iter::empty(), std::iter::empty(), &OPTS, |_| true);
        assert!(c.is_empty());
        assert_eq!((c.keys_from, c.keys_to), (0, 0));
    }

    #[test]
    fn the_top_list_is_bounded_and_every_key_is_optional() {
        let from: Vec<(String, u64)> = (0..1000)
            .map(|i| (format!("/registry/pods/a/p{i:04}"), i))
            .collect();
        let to: Vec<(String, u64)> = from.iter().map(|(k, b)| (k.clone(), b * 2)).collect();
        let live = |v: &[(String, u64)], rev: Revision| -> Vec<(Vec<u8>, Revision, u64)> {
            v.iter()
                .map(|(k, b)| (k.as_bytes().to_vec(), rev, *b))
                .collect()
        };
        let (a, b) = (live(&from, 1), live(&to, 2));
        fn iter(v: &[(Vec<u8>, Revision, u64)]) -> Vec<LiveKey<'_>> {
            v.iter()
                .map(|(key, mod_revision, bytes)| LiveKey {
                    key,
                    mod_revision: *mod_revision,
                    create_revision: 1,
                    bytes: *bytes,
                })
                .collect()
        }
        let opts = CompareOptions {
            top: 3,
            every_key: false,
            recreated: true,
            ..OPTS
        };
        let c = compare(iter(&a).into_iter(), iter(&b).into_iter(), &opts, |_| false);
        assert_eq!(c.total.changed, 1000);
        assert!(c.keys.is_empty());
        let top: Vec<&str> = c.top_keys.iter().map(|k| k.key.as_str()).collect();
        assert_eq!(
            top,
            [
                "/registry/pods/a/p0999",
                "/registry/pods/a/p0998",
                "/registry/pods/a/p0997"
            ]
        );
    }

    #[test]
    fn a_key_deleted_and_created_again_is_recreated_not_changed() {
        let recreated = |mod_revision, create_revision, bytes| LiveKey {
            create_revision,
            ..k("/registry/pods/a/web-0", mod_revision, bytes)
        };
        let from = [k("/registry/configmaps/a/x", 5, 100), recreated(6, 2, 300)];
        // web-0 was deleted and put again at 9; x was written again at 8.
        let to = [k("/registry/configmaps/a/x", 8, 90), recreated(9, 9, 320)];
        let c = compare(from.into_iter(), to.into_iter(), &OPTS, |_| false);
        let keys: Vec<(&str, ChangeKind)> =
            c.keys.iter().map(|k| (k.key.as_str(), k.change)).collect();
        assert_eq!(
            keys,
            [
                ("/registry/configmaps/a/x", ChangeKind::Changed),
                ("/registry/pods/a/web-0", ChangeKind::Recreated),
            ]
        );
        let web = &c.keys[1];
        assert_eq!(
            (web.create_revision_from, web.create_revision_to),
            (Some(2), Some(9))
        );
        assert_eq!(web.change.sign(), '±');
        assert_eq!(web.change.name(), "recreated");
        let t = &c.total;
        assert_eq!((t.created, t.deleted, t.changed, t.recreated), (0, 0, 1, 1));
        assert_eq!(t.differences(), 2);
        assert_eq!((t.bytes_changed_delta, t.bytes_recreated_delta), (-10, 20));
        assert_eq!(
            t.bytes_from as i64 + t.bytes_created as i64 - t.bytes_deleted as i64
                + t.bytes_changed_delta
                + t.bytes_recreated_delta,
            t.bytes_to as i64
        );
        // Recreated at the very revision of the other side's write: still recreated, and
        // the values are not asked (two histories, or one, it is another object).
        let same_rev = [recreated(9, 2, 300)];
        let again = [recreated(9, 9, 300)];
        let c = compare(same_rev.into_iter(), again.into_iter(), &OPTS, |_| {
            panic!("values asked of a recreated key")
        });
        assert_eq!(c.total.recreated, 1);
    }

    #[test]
    fn between_two_clusters_a_key_with_another_create_revision_is_changed() {
        let two = CompareOptions {
            recreated: false,
            ..OPTS
        };
        let at = |mod_revision, create_revision| LiveKey {
            create_revision,
            ..k("/registry/pods/a/web-0", mod_revision, 300)
        };
        // B's revisions below A's: another history, not a key created again.
        let c = compare(
            [at(15, 15)].into_iter(),
            [at(3, 3)].into_iter(),
            &two,
            |_| false,
        );
        assert_eq!((c.total.recreated, c.total.changed), (0, 1));
        assert_eq!(c.keys[0].change, ChangeKind::Changed);
        // The same mod_revision, another create_revision: the values are asked.
        let mut asked = 0;
        let c = compare([at(9, 2)].into_iter(), [at(9, 9)].into_iter(), &two, |_| {
            asked += 1;
            false
        });
        assert_eq!((asked, c.total.changed, c.total.recreated), (1, 1, 0));
        // The same versions on both sides: nothing.
        let c = compare([at(9, 2)].into_iter(), [at(9, 2)].into_iter(), &two, |_| {
            false
        });
        assert!(c.is_empty());
    }

    #[test]
    fn keys_at_keeps_what_live_keys_gives() {
        use crate::model::{KeyValue, Observation, Stamped};
        use crate::store::Session;
        let mut s = Session::new(crate::model::SessionInfo::default());
        let kv = |key: &str, rev: Revision, value: &[u8]| KeyValue {
            key: key.as_bytes().to_vec().into(),
            create_revision: rev,
            mod_revision: rev,
            version: 1,
            lease: 0,
            value: value.to_vec().into(),
        };
        let at = std::time::UNIX_EPOCH;
        for obs in [
            Observation::ListBegin { revision: 3 },
            Observation::ListPage {
                kvs: vec![
                    kv("/registry/pods/a/p", 2, b"abc"),
                    kv("/registry/pods/b/q", 3, b"defgh"),
                ],
            },
            Observation::ListDone {
                revision: 3,
                compacted: None,
            },
        ] {
            s.apply(&Stamped { at, obs });
        }
        let all = KeysAt::of(&s.replica, b"/registry");
        assert_eq!(all.len(), 2);
        let got: Vec<LiveKey<'_>> = all.iter().collect();
        assert_eq!(got, live_keys(&s.replica, b"/registry").collect::<Vec<_>>());
        assert_eq!(
            got[1],
            LiveKey {
                create_revision: 3,
                ..k("/registry/pods/b/q", 3, 5)
            }
        );
        let under = KeysAt::of(&s.replica, b"/registry/pods/b/");
        assert_eq!(
            under.iter().map(|k| k.key).collect::<Vec<_>>(),
            [b"/registry/pods/b/q"]
        );
        assert!(KeysAt::default().is_empty());
    }
}
