//! Dropping history: what etcd's compaction at revision C discards (every version
//! superseded at or before C, every key whose newest version at C is a tombstone), and what
//! the history budget drops oldest first when history outgrows it.

use std::time::SystemTime;

use super::versions::{Queued, VERSION_OVERHEAD};
use super::Replica;
use crate::model::{CompactionSeen, CompactionSource, Revision};

impl Replica {
    pub(super) fn set_compacted(
        &mut self,
        rev: Revision,
        source: CompactionSource,
        at: SystemTime,
    ) {
        if rev <= 0 {
            return;
        }
        if self.compactions.back().is_none_or(|c| c.revision != rev) {
            if self.compactions.len() == 64 {
                self.compactions.pop_front();
            }
            self.compactions.push_back(CompactionSeen {
                revision: rev,
                at,
                source,
            });
        }
        if self.compacted.is_some_and(|c| c >= rev) {
            return;
        }
        self.compacted = Some(rev);
        // Revision→time entries stay: live keys untouched since before the compaction still
        // have their mod_revision's time.
        self.drop_history_through(rev);
    }

    /// Drops history that became history at or before `rev`, oldest first.
    fn drop_history_through(&mut self, rev: Revision) {
        while let Some(q) = self.versions.history_queue.front() {
            if q.revision > rev {
                break;
            }
            let q = self
                .versions
                .history_queue
                .pop_front()
                .expect("front exists");
            self.drop_key_history(q);
        }
    }

    /// Drops the versions of `q`'s key superseded at or before `q.revision`, and the key
    /// itself when all that is left is a tombstone from then.
    fn drop_key_history(&mut self, q: Queued) {
        let through = q.revision;
        let store = &mut self.versions;
        let Some((key, e)) = store.keys.at_mut(q.slot, q.gen) else {
            return;
        };
        let key_len = key.len();
        if let Some(older) = e.older.as_mut() {
            while let Some(first) = older.front() {
                let next_rev = older
                    .get(1)
                    .map_or(e.newest.mod_revision, |v| v.mod_revision);
                if next_rev > through {
                    break;
                }
                self.history_bytes -= first.cost(key_len);
                self.history_versions -= 1;
                let v = older.pop_front().expect("front exists");
                store.packed.sub(&v.value);
                self.discards.keep(v.value.into_data());
            }
            if older.is_empty() {
                e.older = None;
            }
        }
        if e.older.is_none() && e.newest.value.is_tombstone() && e.newest.mod_revision <= through {
            self.history_bytes -= VERSION_OVERHEAD + key_len;
            self.history_versions -= 1;
            if let Some(e) = store.keys.remove_at(q.slot, q.gen) {
                store.packed.sub_entry(&e);
            }
        }
    }

    pub(super) fn enforce_budget(&mut self) {
        while self.history_bytes > self.cfg.history_budget {
            let Some(q) = self.versions.history_queue.pop_front() else {
                break;
            };
            self.history_floor = self.history_floor.max(q.revision);
            self.drop_key_history(q);
        }
    }
}
