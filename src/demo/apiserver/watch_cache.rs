//! The watch cache ("cacher") per resource: the current objects and a ring of the last
//! events, as k8s.io/apiserver's `pkg/storage/cacher` keeps them.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use serde_json::Value;

use super::resources::ResourceInfo;

/// One object in the cache: its JSON with `metadata.resourceVersion` set.
#[derive(Debug, Clone)]
pub(super) struct CachedObject {
    pub(super) namespace: Option<String>,
    pub(super) json: Arc<str>,
}

/// One event in a resource's ring.
#[derive(Debug)]
pub(super) struct CachedEvent {
    /// `ADDED`, `MODIFIED`, `DELETED`.
    pub(super) kind: &'static str,
    /// The etcd revision of the change (the object's resourceVersion).
    pub(super) revision: i64,
    pub(super) namespace: Option<String>,
    /// The object (for `DELETED` its last state, with the deletion's resourceVersion).
    pub(super) object: Arc<str>,
}

/// Counters a watcher updates without the cache lock.
#[derive(Debug, Default)]
pub(super) struct WatcherCounters {
    pub(super) dispatched: AtomicU64,
    pub(super) terminated: AtomicU64,
}

/// One resource's cacher.
#[derive(Debug)]
pub(super) struct ResourceCache {
    pub(super) info: ResourceInfo,
    pub(super) objects: BTreeMap<Vec<u8>, CachedObject>,
    pub(super) ring: VecDeque<Arc<CachedEvent>>,
    /// Sequence number of `ring[0]`; sequence numbers never repeat.
    pub(super) first_seq: u64,
    /// The revision of the last (re)list.
    list_revision: i64,
    /// Whether an event was dropped from the ring since the last list.
    evicted: bool,
    /// Bumped by a relist: watchers of an older epoch are closed.
    pub(super) epoch: u64,
    pub(super) received: u64,
    pub(super) initializations: u64,
    pub(super) counters: Arc<WatcherCounters>,
}

impl ResourceCache {
    pub(super) fn new(info: ResourceInfo, list_revision: i64) -> Self {
        ResourceCache {
            info,
            objects: BTreeMap::new(),
            ring: VecDeque::new(),
            first_seq: 0,
            list_revision,
            evicted: false,
            epoch: 0,
            received: 0,
            initializations: 1,
            counters: Arc::default(),
        }
    }

    pub(super) fn next_seq(&self) -> u64 {
        self.first_seq + self.ring.len() as u64
    }

    /// The oldest resourceVersion a watch can start from (the cacher's `oldest - 1`).
    pub(super) fn oldest_watchable(&self) -> i64 {
        match self.ring.front() {
            Some(ev) if self.evicted => ev.revision - 1,
            _ => self.list_revision,
        }
    }

    pub(super) fn push(&mut self, ev: CachedEvent, capacity: usize) {
        self.ring.push_back(Arc::new(ev));
        while self.ring.len() > capacity.max(1) {
            self.ring.pop_front();
            self.first_seq += 1;
            self.evicted = true;
        }
        self.received += 1;
    }

    /// Replaces the contents after a (re)list at `revision`.
    pub(super) fn replace(&mut self, objects: BTreeMap<Vec<u8>, CachedObject>, revision: i64) {
        self.first_seq = self.next_seq();
        self.ring.clear();
        self.objects = objects;
        self.list_revision = revision;
        self.evicted = false;
        self.epoch += 1;
        self.initializations += 1;
    }

    /// Learns version and kind of a custom resource from a decoded object.
    pub(super) fn learn(&mut self, obj: &Value) {
        if self.info.kind.is_empty() {
            if let Some(k) = obj.get("kind").and_then(Value::as_str) {
                self.info.kind = k.to_string();
            }
        }
        if self.info.version.is_empty() {
            if let Some(av) = obj.get("apiVersion").and_then(Value::as_str) {
                self.info.version = av.rsplit('/').next().unwrap_or(av).to_string();
            }
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct CacheState {
    /// The cache's resourceVersion: the last event or progress notification applied.
    pub(super) revision: i64,
    /// By display name (`pods`, `leases.coordination.k8s.io`).
    pub(super) resources: BTreeMap<String, ResourceCache>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::BUILTIN_RESOURCES;

    #[test]
    fn ring_evicts_and_reports_oldest() {
        let info = ResourceInfo::for_builtin("/registry", &BUILTIN_RESOURCES[0]);
        let mut rc = ResourceCache::new(info, 10);
        assert_eq!(rc.oldest_watchable(), 10);
        for rev in 11..=15 {
            rc.push(
                CachedEvent {
                    kind: "ADDED",
                    revision: rev,
                    namespace: None,
                    object: Arc::from("{}"),
                },
                3,
            );
        }
        assert_eq!(rc.ring.len(), 3);
        assert_eq!(rc.first_seq, 2);
        assert_eq!(rc.oldest_watchable(), 12);
        assert_eq!(rc.received, 5);
    }
}
