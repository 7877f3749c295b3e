//! Appending a version to a key: the key's entry (created when new), the live key and byte
//! counts per resource, the history accounting against the budget, and the offer of the
//! value to the packing worker.

use super::key_table::Slot;
use super::packing::Codebook;
use super::versions::{KeyEntry, Queued, Version, NO_MARK, VERSION_OVERHEAD};
use super::Replica;

impl Replica {
    /// Appends a version to a key (creating the entry), keeping live counts and history
    /// accounting right, and offers its value for packing. Returns the key's resource id,
    /// slot and slot generation.
    pub(super) fn push_version(&mut self, key: &[u8], v: Version) -> (u32, Slot, u32) {
        let (resource, slot, gen, _) = self.push_version_full(key, v);
        (resource, slot, gen)
    }

    /// As [`Replica::push_version`], also saying whether the key was live before.
    pub(super) fn push_version_full(&mut self, key: &[u8], v: Version) -> (u32, Slot, u32, bool) {
        let key_len = key.len();
        let new_live = (!v.value.is_tombstone()).then(|| v.value.len() as u64);
        let rev = v.mod_revision;
        let is_tombstone = v.value.is_tombstone();
        // By length only: the sweep reads the value (and passes over ciphertext) when it
        // packs. Reading it here was a cache miss per event on a replay's session thread,
        // where the value was decoded on another core.
        let packable = v
            .value
            .raw_bytes()
            .map(|b| b.len())
            .filter(|&n| Codebook::long_enough(n));
        let (resource, slot, gen, old_live, superseded_cost) =
            match self.versions.keys.get_full_mut(key) {
                Some((slot, gen, e)) => {
                    let old_live = e.live().map(|o| o.value.len() as u64);
                    let prev = std::mem::replace(&mut e.newest, v);
                    let cost = prev.cost(key_len);
                    e.older.get_or_insert_with(Default::default).push_back(prev);
                    (e.resource, slot, gen, old_live, Some(cost))
                }
                None => {
                    let resource = self.resource_id(key);
                    let (slot, gen) = self.versions.keys.insert(
                        key,
                        KeyEntry {
                            newest: v,
                            older: None,
                            resource,
                            seen_gen: 0,
                            mark: NO_MARK,
                        },
                    );
                    (resource, slot, gen, None, None)
                }
            };
        if let Some(cost) = superseded_cost {
            // The previous newest becomes history now.
            self.history_bytes += cost;
            self.history_versions += 1;
        }
        if is_tombstone {
            // A tombstone is history from the moment it is written.
            self.history_bytes += VERSION_OVERHEAD + key_len;
            self.history_versions += 1;
        }
        if superseded_cost.is_some() || is_tombstone {
            self.versions.history_queue.push_back(Queued {
                revision: rev,
                slot,
                gen,
            });
        }
        let stats = &mut self.resources[resource as usize];
        if let Some(b) = old_live {
            stats.keys -= 1;
            stats.bytes -= b;
            self.live_keys -= 1;
            self.live_bytes -= b;
        }
        if let Some(b) = new_live {
            stats.keys += 1;
            stats.bytes += b;
            self.live_keys += 1;
            self.live_bytes += b;
        }
        if let Some(len) = packable {
            self.versions.mark_dirty(slot);
            self.versions.unswept_bytes += len as u64;
            self.versions.unswept_since_check += len as u64;
        }
        if self.writers.migrations.holds(resource) {
            self.note_migration(resource, slot, key);
        }
        (resource, slot, gen, old_live.is_some())
    }

    /// Reads the StorageVersionMigration just written to (or deleted from) `key`, at `slot`
    /// of `resource` (see [`super::writers::Migrations`]).
    fn note_migration(&mut self, resource: u32, slot: Slot, key: &[u8]) {
        let value = self
            .versions
            .keys
            .at(slot)
            .and_then(|(_, _, e)| self.unpacked(resource, &e.newest).value);
        let path = crate::model::KeyPath::parse(&self.cfg.prefix, key);
        self.writers.migrations.follow(&path.name, value.as_deref());
    }

    /// Reads every StorageVersionMigration the replica holds again, and the sketches of
    /// unchanged rewrites from the event log: after a checkpoint, which saves neither.
    pub(super) fn rederive_writers_state(&mut self) {
        let w = &mut self.writers;
        w.migrations.clear();
        for (id, r) in self.resources.iter().enumerate() {
            w.migrations.resource_named(id as u32, &r.resource);
        }
        if w.migrations.has_resources() {
            let held: Vec<(u32, Slot, Box<[u8]>)> = self
                .versions
                .keys
                .iter_unordered()
                .filter(|(_, _, e)| self.writers.migrations.holds(e.resource))
                .map(|(slot, k, e)| (e.resource, slot, k.into()))
                .collect();
            for (resource, slot, key) in held {
                self.note_migration(resource, slot, &key);
            }
        }
        let events = self.events.iter().filter(|e| {
            e.managed_unchanged && e.kind == crate::model::EventKind::Put && e.unseen.is_none()
        });
        self.writers.rebuild_sketches(
            events.map(|e| (e.resource, &e.key[..], crate::model::unix_second(e.at))),
        );
    }
}
