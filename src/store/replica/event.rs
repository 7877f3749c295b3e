//! Applying one watch event: the new version (or tombstone), who wrote it (the managedFields
//! writer, when the write changed managedFields; see `store::replica::writers`), and the
//! event log's row, which for a DELETE carries the value deleted.

use std::time::SystemTime;

use super::key_table::Slot;
use super::packing::Val;
use super::versions::{Version, NO_MARK};
use super::writers::{FoundWriter, WriterNames};
use super::{EventRecord, Replica};
use crate::model::{escape_bytes, EventKind, WatchEvent};
use crate::store::etcd_cluster::{worth_noting, WatchHealth};
use crate::store::notes::{Note, Notes};

impl Replica {
    pub(super) fn apply_event(
        &mut self,
        ev: &WatchEvent,
        at: SystemTime,
        second: u64,
        found: Option<(FoundWriter, &WriterNames)>,
        watch: &mut WatchHealth,
        notes: &mut Notes,
    ) {
        let kv = &ev.kv;
        // A DELETE row shows what was deleted: etcd's prev_kv when the watch asked for it,
        // else the replica's own last copy (regscope's watch does not ask for prev_kv).
        let deleted = match ev.kind {
            EventKind::Put => None,
            EventKind::Delete => {
                let last = ev
                    .prev_kv
                    .as_ref()
                    .map(|p| p.value.clone())
                    .or_else(|| self.get(&kv.key).and_then(|v| v.value));
                if last.is_none() && self.get_meta(&kv.key).is_none() {
                    watch.unknown_deletes += 1;
                    let n = watch.unknown_deletes;
                    if worth_noting(n) {
                        notes.push(
                            at,
                            Note::UnknownDelete {
                                key: escape_bytes(&kv.key).into_owned(),
                                revision: kv.mod_revision,
                                count: n,
                            },
                        );
                    }
                }
                last
            }
        };
        let version = match ev.kind {
            EventKind::Put => Version {
                create_revision: kv.create_revision,
                mod_revision: kv.mod_revision,
                version: kv.version,
                lease: kv.lease,
                value: Val::raw(kv.value.clone()),
            },
            EventKind::Delete => Version::tombstone(kv.mod_revision),
        };
        let (resource, slot, gen, prev_live) = self.push_version_full(&kv.key, version);
        let delete = ev.kind == EventKind::Delete;
        self.resources[resource as usize].count(second, delete);
        let mut managed_unchanged = false;
        if self.cfg.count_writers {
            if delete {
                // kube-apiserver records no deleter.
                if let Some((_, e)) = self.versions.keys.at_mut(slot, gen) {
                    e.mark = NO_MARK;
                }
                self.writers.count_unnamed(resource, 0, second, true);
            } else {
                let (mark, parsed) = match found {
                    Some((f, _)) => (f.mark(), None),
                    None => {
                        let (lw, mark) = crate::decode::last_write_marked(&kv.value);
                        (mark, Some(lw))
                    }
                };
                // A write that left every managedFields entry as it was is nobody's that
                // managedFields names (see `store::writers`). The key's entry holds the
                // previous version's mark (read from its value when not known).
                let kept = self
                    .versions
                    .keys
                    .at_mut(slot, gen)
                    .map(|(_, e)| std::mem::replace(&mut e.mark, mark));
                if prev_live && mark != 0 {
                    let before = match kept {
                        Some(m) if m != NO_MARK => Some(m),
                        _ => self.previous_mark(slot, gen),
                    };
                    managed_unchanged = before == Some(mark);
                }
                match (managed_unchanged, found, parsed) {
                    (true, _, _) => self.writers.count_unchanged(
                        resource,
                        &self.resources[resource as usize].resource,
                        &kv.key,
                        kv.value.len(),
                        second,
                    ),
                    (false, Some((f, names)), _) => self
                        .writers
                        .count_found(resource, &kv.value, f, names, second),
                    (false, None, Some(lw)) => self
                        .writers
                        .count_parsed(resource, &kv.value, &lw, second, false),
                    (false, None, None) => self.writers.count(resource, &kv.value, second, false),
                }
            }
        }
        self.log_event(EventRecord {
            at,
            revision: kv.mod_revision,
            kind: ev.kind,
            key: kv.key.clone(),
            value: deleted.unwrap_or_else(|| kv.value.clone()),
            resource,
            unseen: None,
            managed_unchanged,
            note: None,
        });
    }

    /// The managedFields mark of the version before the newest of the key at `slot`
    /// (generation `gen`), read from its value.
    fn previous_mark(&self, slot: Slot, gen: u32) -> Option<u64> {
        let (_, g, e) = self.versions.keys.at(slot)?;
        if g != gen {
            return None;
        }
        let prev = e.older.as_ref()?.back()?;
        let v = self.unpacked(e.resource, prev).value?;
        Some(crate::decode::last_write_marked(&v).1)
    }
}
