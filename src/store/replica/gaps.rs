//! What a relist after a gap shows had changed in it: the event-log rows marked unseen
//! (created, changed, deleted with the last copy held) and the counts per resource, read
//! from the replica before the relist's tombstones go in.

use std::time::SystemTime;

use bytes::Bytes;

use super::{EventRecord, GapChanges, Replica, Unseen, UnseenChange, UnseenCounts};
use crate::model::{EventKind, Revision};

impl Replica {
    /// The rows and counts of what changed in the gap `before + 1 ..= revision`, from the
    /// relist just applied: every key whose newest version is newer than `before` came from
    /// the list (created when its create_revision is too, else changed), and `gone` are the
    /// live keys the list did not return. Rows in revision order (deletes, whose revision
    /// is unknown, at the relist's), at most the event log's cap of them (the newest); the
    /// counts cover all.
    pub(super) fn unseen_rows(
        &self,
        before: Revision,
        revision: Revision,
        gone: &[Box<[u8]>],
        at: SystemTime,
    ) -> (Vec<EventRecord>, GapChanges) {
        let gap = |change| Unseen {
            from: before + 1,
            to: revision,
            change,
        };
        let mut rows: Vec<EventRecord> = Vec::new();
        let mut changes = GapChanges {
            from: before + 1,
            to: revision,
            by_resource: Vec::new(),
        };
        let mut count = |resource: u32, c: UnseenChange| match changes
            .by_resource
            .iter_mut()
            .find(|(r, _)| *r == resource)
        {
            Some((_, n)) => n.add(c),
            None => {
                let mut n = UnseenCounts::default();
                n.add(c);
                changes.by_resource.push((resource, n));
            }
        };
        for (_, key, e) in self.versions.keys.iter_unordered() {
            let Some(v) = e.live().filter(|v| v.mod_revision > before) else {
                continue;
            };
            let change = if v.create_revision > before {
                UnseenChange::Created
            } else {
                UnseenChange::Changed
            };
            count(e.resource, change);
            rows.push(EventRecord {
                at,
                revision: v.mod_revision,
                kind: EventKind::Put,
                key: Bytes::copy_from_slice(key),
                value: v
                    .value
                    .raw_bytes()
                    .cloned()
                    .unwrap_or_else(|| self.unpacked(e.resource, v).value.unwrap_or_default()),
                resource: e.resource,
                unseen: Some(gap(change)),
                managed_unchanged: false,
                note: None,
            });
        }
        for key in gone {
            let Some(e) = self.versions.keys.get(key) else {
                continue;
            };
            count(e.resource, UnseenChange::Deleted);
            rows.push(EventRecord {
                at,
                revision,
                kind: EventKind::Delete,
                key: Bytes::copy_from_slice(key),
                value: self
                    .unpacked(e.resource, &e.newest)
                    .value
                    .unwrap_or_default(),
                resource: e.resource,
                unseen: Some(gap(UnseenChange::Deleted)),
                managed_unchanged: false,
                note: None,
            });
        }
        rows.sort_by(|a, b| (a.revision, &a.key).cmp(&(b.revision, &b.key)));
        let keep = self.cfg.event_log_cap;
        if rows.len() > keep {
            rows.drain(..rows.len() - keep);
        }
        (rows, changes)
    }
}
