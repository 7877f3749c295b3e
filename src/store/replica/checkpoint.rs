//! How the replica, the etcd cluster's state and the notes are saved in a recording's
//! checkpoint: one record of fields in the order checkpoints have held them since format 1
//! (when all three were one struct), each field added later read only from checkpoints of
//! the format that added it (see [`crate::store::shared_bytes`]). Written from borrowed
//! parts ([`Image::of`]), read back whole ([`Owned::into_parts`]).

use std::collections::{HashMap, VecDeque};
use std::time::SystemTime;

use bytes::Bytes;
use serde::{Deserialize, Serialize, Serializer};

use super::stats::{Growth, ResourceStats};
use super::versions::VersionStore;
use super::writers::Writers;
use super::{ClockCache, EventRecord, GapChanges, ListState, Replacement, Replica, ReplicaConfig};
use crate::model::{CompactionSeen, ConnState, EtcdStatus, Gap, MemberStatus, Revision};
use crate::store::etcd_cluster::{EtcdCluster, WatchHealth};
use crate::store::notes::{Note, Notes};
use crate::store::shared_bytes::since_format;

/// The saved fields, borrowed from the three parts.
#[derive(Serialize)]
pub(in crate::store) struct Image<'a> {
    cfg: &'a ReplicaConfig,
    #[serde(serialize_with = "version_store")]
    versions: &'a VersionStore,
    resources: &'a [ResourceStats],
    resource_ids: &'a HashMap<String, u32>,
    applied: Revision,
    events_through: Revision,
    first_list: Option<Revision>,
    compacted: Option<Revision>,
    history_floor: Revision,
    history_bytes: usize,
    history_versions: usize,
    /// Always empty when written (format 1's history queue by key).
    legacy_history_queue: &'a VecDeque<(Revision, Bytes)>,
    rev_times: &'a VecDeque<(Revision, SystemTime)>,
    events: &'a VecDeque<EventRecord>,
    growth: &'a Growth,
    gaps: &'a [Gap],
    gap_changes: &'a [GapChanges],
    compactions: &'a VecDeque<CompactionSeen>,
    notes: &'a VecDeque<(SystemTime, Note)>,
    conn: &'a ConnState,
    server: &'a Option<(String, String)>,
    live_keys: u64,
    live_bytes: u64,
    list: &'a Option<ListState>,
    gen: u32,
    change_seq: u64,
    last_observed: Option<SystemTime>,
    watch: &'a WatchHealth,
    etcd_status: &'a Option<(SystemTime, EtcdStatus)>,
    failovers: &'a VecDeque<(SystemTime, String, String)>,
    members: &'a Option<(SystemTime, Vec<MemberStatus>)>,
    writers: &'a Writers,
    outage_since: Option<SystemTime>,
    cluster_ids: (u64, u64),
    replacements: &'a [Replacement],
}

fn version_store<S: Serializer>(store: &&VersionStore, s: S) -> Result<S::Ok, S::Error> {
    super::image::serialize(store, s)
}

/// The saved fields as read back.
#[derive(Deserialize)]
pub(in crate::store) struct Owned {
    cfg: ReplicaConfig,
    #[serde(with = "super::image")]
    versions: VersionStore,
    resources: Vec<ResourceStats>,
    resource_ids: HashMap<String, u32>,
    applied: Revision,
    events_through: Revision,
    first_list: Option<Revision>,
    compacted: Option<Revision>,
    history_floor: Revision,
    history_bytes: usize,
    history_versions: usize,
    #[serde(deserialize_with = "crate::store::shared_bytes::rev_keys")]
    legacy_history_queue: VecDeque<(Revision, Bytes)>,
    rev_times: VecDeque<(Revision, SystemTime)>,
    events: VecDeque<EventRecord>,
    growth: Growth,
    gaps: Vec<Gap>,
    #[serde(default, deserialize_with = "since_format::<7, _, _>")]
    gap_changes: Vec<GapChanges>,
    compactions: VecDeque<CompactionSeen>,
    #[serde(deserialize_with = "crate::store::notes::by_format")]
    notes: VecDeque<(SystemTime, Note)>,
    conn: ConnState,
    server: Option<(String, String)>,
    live_keys: u64,
    live_bytes: u64,
    list: Option<ListState>,
    gen: u32,
    change_seq: u64,
    last_observed: Option<SystemTime>,
    #[serde(default, deserialize_with = "since_format::<3, _, _>")]
    watch: WatchHealth,
    #[serde(default, deserialize_with = "since_format::<3, _, _>")]
    etcd_status: Option<(SystemTime, EtcdStatus)>,
    #[serde(default, deserialize_with = "since_format::<3, _, _>")]
    failovers: VecDeque<(SystemTime, String, String)>,
    #[serde(default, deserialize_with = "since_format::<4, _, _>")]
    members: Option<(SystemTime, Vec<MemberStatus>)>,
    #[serde(default, deserialize_with = "since_format::<5, _, _>")]
    writers: Writers,
    #[serde(default, deserialize_with = "since_format::<7, _, _>")]
    outage_since: Option<SystemTime>,
    #[serde(default, deserialize_with = "since_format::<7, _, _>")]
    cluster_ids: (u64, u64),
    #[serde(default, deserialize_with = "since_format::<7, _, _>")]
    replacements: Vec<Replacement>,
}

impl<'a> Image<'a> {
    /// The fields of `replica`, `etcd` and `notes` to save.
    pub(in crate::store) fn of(
        replica: &'a Replica,
        etcd: &'a EtcdCluster,
        notes: &'a Notes,
    ) -> Self {
        let r = replica;
        Image {
            cfg: &r.cfg,
            versions: &r.versions,
            resources: &r.resources,
            resource_ids: &r.resource_ids,
            applied: r.applied,
            events_through: r.events_through,
            first_list: r.first_list,
            compacted: r.compacted,
            history_floor: r.history_floor,
            history_bytes: r.history_bytes,
            history_versions: r.history_versions,
            legacy_history_queue: &r.legacy_history_queue,
            rev_times: &r.rev_times,
            events: &r.events,
            growth: &r.growth,
            gaps: &r.gaps,
            gap_changes: &r.gap_changes,
            compactions: &r.compactions,
            notes: &notes.lines,
            conn: &etcd.conn,
            server: &etcd.server,
            live_keys: r.live_keys,
            live_bytes: r.live_bytes,
            list: &r.list,
            gen: r.gen,
            change_seq: r.change_seq,
            last_observed: r.last_observed,
            watch: &etcd.watch,
            etcd_status: &etcd.etcd_status,
            failovers: &etcd.failovers,
            members: &etcd.members,
            writers: &r.writers,
            outage_since: etcd.outage_since,
            cluster_ids: etcd.cluster_ids,
            replacements: &etcd.replacements,
        }
    }
}

impl Owned {
    /// The three parts again. The replica still needs [`Replica::restored`].
    pub(in crate::store) fn into_parts(self) -> (Replica, EtcdCluster, Notes) {
        let replica = Replica {
            cfg: self.cfg,
            versions: self.versions,
            resources: self.resources,
            resource_ids: self.resource_ids,
            applied: self.applied,
            events_through: self.events_through,
            first_list: self.first_list,
            compacted: self.compacted,
            history_floor: self.history_floor,
            history_bytes: self.history_bytes,
            history_versions: self.history_versions,
            legacy_history_queue: self.legacy_history_queue,
            rev_times: self.rev_times,
            events: self.events,
            growth: self.growth,
            gaps: self.gaps,
            gap_changes: self.gap_changes,
            compactions: self.compactions,
            live_keys: self.live_keys,
            live_bytes: self.live_bytes,
            list: self.list,
            list_progress: None,
            gen: self.gen,
            change_seq: self.change_seq,
            last_observed: self.last_observed,
            clock: ClockCache::default(),
            writers: self.writers,
            reset_at: self.replacements.last().map(|r| r.at),
            discards: Default::default(),
        };
        let etcd = EtcdCluster {
            conn: self.conn,
            server: self.server,
            outage_since: self.outage_since,
            cluster_ids: self.cluster_ids,
            replacements: self.replacements,
            watch: self.watch,
            etcd_status: self.etcd_status,
            failovers: self.failovers,
            members: self.members,
        };
        (replica, etcd, Notes { lines: self.notes })
    }
}
