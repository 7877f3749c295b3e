//! The simulated control plane's write path: it writes into a [`super::PrivateEtcd`] the way
//! kube-apiserver's etcd3 storage (k8s.io/apiserver `pkg/storage/etcd3`, v1.30) does.
//!
//! - create: `txn(if mod_revision(key) == 0 then put)` (the apiserver's `notFound` compare;
//!   equivalent to `create_revision == 0`: both are 0 exactly when the key is absent);
//! - update (`GuaranteedUpdate`): `txn(if mod_revision(key) == seen then put else get)`,
//!   retried on conflict from the fresh value the else-branch returned;
//! - delete (`conditionalDelete`): `txn(if mod_revision(key) == seen then delete else get)`;
//! - TTL objects (events) are put with an etcd lease from a lease manager that reuses one
//!   lease for many objects, like the apiserver's `leaseManager`;
//! - the compactor coordinates through the root key `compact_rev_key` exactly like
//!   `compact.go`.
//!
//! [`super::Simulation::start`] only accepts a [`super::PrivateEtcd`], so this code can never
//! be pointed at a real cluster's etcd; it starts the tasks ([`super::control_plane`]). The
//! workload itself (what gets written when) is in [`super::workload`].

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_client::{Client, Compare, CompareOp, PutOptions, Txn, TxnOp, TxnOpResponse};
use tokio::time::Instant;

use super::apiserver::{storage_group_resource, StorageLatencies};
use super::etcd_server::DemoError;
use super::objects::{decode_object, encode_object, StorageKind};

pub use crate::model::kubernetes::COMPACT_REV_KEY;

/// How many times an update or delete is retried on a mod_revision conflict.
const MAX_CONFLICT_RETRIES: usize = 16;

/// Settings of the simulated control plane.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Number of nodes (each with a Node object and a node Lease). Default 3.
    pub nodes: usize,
    /// Target etcd write requests per second, over all tasks (creates, updates, deletes and
    /// their conflict retries, lease renewals, the compactor's txn). `0` = as fast as etcd
    /// allows (the benchmark setting). Default 50. The one-off bootstrap is not paced.
    pub rate: u32,
    /// Interval between compaction rounds (kube-apiserver: `--etcd-compaction-interval`,
    /// default 5 min). Default here 60 s so compactions are visible in the demo.
    pub compact_interval: Duration,
    /// TTL of Event objects (kube-apiserver: `--event-ttl`, default 1 h). Default 60 s.
    pub event_ttl: Duration,
    /// Node lease renewal period (the kubelet's default: 10 s).
    pub node_lease_interval: Duration,
    /// Leader-election lease renewal period of kube-controller-manager and kube-scheduler
    /// (their default retry period: 2 s).
    pub leader_lease_interval: Duration,
    /// Key prefix (kube-apiserver's `--etcd-prefix`). Default `/registry`.
    pub prefix: String,
    /// Concurrent workload tasks; `0` = automatic (1 per 100 writes/s, 16 when unpaced).
    pub workers: usize,
    /// Where to record the real elapsed time of every etcd call the write path makes, as
    /// kube-apiserver's `etcd_request_duration_seconds{operation,group,resource}` does:
    /// create txn -> `create`, GuaranteedUpdate txn -> `update`, conditional delete txn ->
    /// `delete`, read-back -> `get`. The compactor's txn and lease grants are not recorded
    /// (kube-apiserver does not record them either). Default `None` (nothing recorded).
    /// Share it with [`super::apiserver::DemoApiserver::start`] to serve it on `/metrics`.
    pub latencies: Option<Arc<StorageLatencies>>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            nodes: 3,
            rate: 50,
            compact_interval: Duration::from_secs(60),
            event_ttl: Duration::from_secs(60),
            node_lease_interval: Duration::from_secs(10),
            leader_lease_interval: Duration::from_secs(2),
            prefix: "/registry".to_string(),
            workers: 0,
            latencies: None,
        }
    }
}

impl SimConfig {
    /// The number of workload tasks [`super::Simulation::start`] will run.
    pub fn effective_workers(&self) -> usize {
        if self.workers > 0 {
            return self.workers.min(64);
        }
        if self.rate == 0 {
            16
        } else {
            usize::try_from(self.rate.div_ceil(100))
                .unwrap_or(16)
                .clamp(1, 16)
        }
    }
}

/// Live counters of a running simulation (shared; read with [`SimCounters::snapshot`]).
#[derive(Debug, Default)]
pub struct SimCounters {
    creates: AtomicU64,
    updates: AtomicU64,
    deletes: AtomicU64,
    conflicts: AtomicU64,
    errors: AtomicU64,
    leases_granted: AtomicU64,
    compactions: AtomicU64,
    last_compact_revision: AtomicI64,
    head_revision: AtomicI64,
}

/// A point-in-time copy of [`SimCounters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimStats {
    /// Committed writes (creates + updates + deletes, including the compactor's put).
    pub writes: u64,
    /// Committed creates.
    pub creates: u64,
    /// Committed updates.
    pub updates: u64,
    /// Committed deletes.
    pub deletes: u64,
    /// Transactions whose mod_revision compare failed (GuaranteedUpdate retries, creates of
    /// an existing key, deletes of a changed key).
    pub conflicts: u64,
    /// Failed etcd calls (timeouts, unavailable etcd, already compacted revision, ...).
    pub errors: u64,
    /// etcd leases granted for TTL objects.
    pub leases_granted: u64,
    /// Compact calls that succeeded.
    pub compactions: u64,
    /// The revision of the last successful compaction (0 before the first).
    pub last_compact_revision: i64,
    /// The highest header revision seen in a response.
    pub head_revision: i64,
}

impl SimCounters {
    /// A consistent-enough copy of all counters (each read is atomic on its own).
    pub fn snapshot(&self) -> SimStats {
        let creates = self.creates.load(Ordering::Relaxed);
        let updates = self.updates.load(Ordering::Relaxed);
        let deletes = self.deletes.load(Ordering::Relaxed);
        SimStats {
            writes: creates + updates + deletes,
            creates,
            updates,
            deletes,
            conflicts: self.conflicts.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            leases_granted: self.leases_granted.load(Ordering::Relaxed),
            compactions: self.compactions.load(Ordering::Relaxed),
            last_compact_revision: self.last_compact_revision.load(Ordering::Relaxed),
            head_revision: self.head_revision.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn error(&self) {
        self.errors.fetch_add(1, Ordering::Relaxed);
    }

    fn saw_revision(&self, rev: i64) {
        self.head_revision.fetch_max(rev, Ordering::Relaxed);
    }
}

/// Spaces requests evenly to hit a target rate; shared by all tasks.
#[derive(Debug)]
struct Pacer {
    interval: Option<Duration>,
    next: Mutex<Instant>,
}

impl Pacer {
    fn new(rate: u32) -> Self {
        Pacer {
            interval: (rate > 0).then(|| Duration::from_secs(1) / rate),
            next: Mutex::new(Instant::now()),
        }
    }

    /// Waits for this request's slot. Slots missed while idle are not caught up in a burst.
    async fn wait(&self) {
        let Some(interval) = self.interval else {
            return;
        };
        let slot = {
            let mut next = match self.next.lock() {
                Ok(g) => g,
                Err(poisoned) => poisoned.into_inner(),
            };
            let slot = (*next).max(Instant::now());
            *next = slot + interval;
            slot
        };
        tokio::time::sleep_until(slot).await;
    }
}

/// kube-apiserver's lease manager (k8s.io/apiserver etcd3 `lease_manager.go`): objects with a
/// TTL share one etcd lease while it still outlives them. A new lease gets the TTL plus a
/// reuse window of min(5 % of TTL, 60 s); at most 1000 objects are attached to one lease.
#[derive(Debug, Default)]
struct LeaseManager {
    prev_id: i64,
    prev_expiry: Option<Instant>,
    attached: u64,
}

const LEASE_REUSE_MAX_SECONDS: i64 = 60;
const LEASE_REUSE_PERCENT: f64 = 0.05;
const LEASE_MAX_ATTACHED: u64 = 1000;

impl LeaseManager {
    fn reuse_seconds(ttl: i64) -> i64 {
        // Truncation as in the Go int64(float) conversion.
        #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
        let pct = (LEASE_REUSE_PERCENT * ttl as f64) as i64;
        pct.min(LEASE_REUSE_MAX_SECONDS)
    }

    /// The reusable lease for an object of `ttl` seconds at `now`, or `None` with the TTL to
    /// grant a new lease with.
    fn reusable(&mut self, ttl: i64, now: Instant) -> Result<i64, i64> {
        let reuse = Self::reuse_seconds(ttl);
        let secs = |s: i64| Duration::from_secs(u64::try_from(s).unwrap_or(0));
        self.attached += 1;
        if let Some(exp) = self.prev_expiry {
            let valid = now + secs(ttl) < exp;
            let sufficient = now + secs(ttl + reuse) > exp;
            if valid && sufficient && self.attached <= LEASE_MAX_ATTACHED {
                return Ok(self.prev_id);
            }
        }
        Err(ttl + reuse)
    }

    fn granted(&mut self, id: i64, ttl: i64, at: Instant) {
        self.prev_id = id;
        self.prev_expiry = Some(at + Duration::from_secs(u64::try_from(ttl).unwrap_or(0)));
        self.attached = 1;
    }
}

/// What the writer last saw of a key: its `mod_revision` and value bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    /// The key's `mod_revision` (0 = absent).
    pub mod_revision: i64,
    /// The value at that revision.
    pub value: Vec<u8>,
}

/// A typed object with the `mod_revision` it was read or written at (the apiserver's
/// cached "origState").
#[derive(Debug, Clone)]
pub struct Cached<T> {
    /// The object as stored.
    pub obj: T,
    /// Its key's `mod_revision`.
    pub mod_revision: i64,
}

/// The write path: every etcd write the simulation makes goes through here.
#[derive(Clone)]
pub(crate) struct Store {
    client: Client,
    counters: Arc<SimCounters>,
    pacer: Arc<Pacer>,
    leases: Arc<tokio::sync::Mutex<LeaseManager>>,
    pub(crate) prefix: String,
    pub(crate) event_ttl_s: i64,
    latencies: Option<Arc<StorageLatencies>>,
}

impl Store {
    /// The write path for `cfg` over `client`: requests paced at `cfg.rate`, one lease
    /// manager for TTL objects, counts into `counters`.
    pub(crate) fn new(client: Client, counters: Arc<SimCounters>, cfg: &SimConfig) -> Store {
        Store {
            client,
            counters,
            pacer: Arc::new(Pacer::new(cfg.rate)),
            leases: Arc::new(tokio::sync::Mutex::new(LeaseManager::default())),
            prefix: cfg.prefix.trim_end_matches('/').to_string(),
            event_ttl_s: i64::try_from(cfg.event_ttl.as_secs())
                .unwrap_or(3600)
                .max(1),
            latencies: cfg.latencies.clone(),
        }
    }

    /// Records one etcd call on `key` that took `started.elapsed()` (when latencies are kept
    /// and the key is a resource key under the prefix).
    fn record(&self, operation: &str, key: &str, started: std::time::Instant, error: bool) {
        let Some(lat) = &self.latencies else {
            return;
        };
        let seconds = started.elapsed().as_secs_f64();
        if let Some((group, resource)) = storage_group_resource(&self.prefix, key.as_bytes()) {
            lat.observe(operation, &group, &resource, seconds, error);
        }
    }

    /// One txn; `record` names the operation and key to record its latency under (`None` for
    /// the compactor's txn, which the apiserver does not record).
    async fn txn(
        &self,
        txn: Txn,
        paced: bool,
        record: Option<(&str, &str)>,
    ) -> Result<etcd_client::TxnResponse, DemoError> {
        if paced {
            self.pacer.wait().await;
        }
        let mut client = self.client.clone();
        let started = std::time::Instant::now();
        let result = client.txn(txn).await;
        if let Some((op, key)) = record {
            self.record(op, key, started, result.is_err());
        }
        match result {
            Ok(resp) => {
                if let Some(h) = resp.header() {
                    self.counters.saw_revision(h.revision());
                }
                Ok(resp)
            }
            Err(e) => {
                self.counters.error();
                Err(e.into())
            }
        }
    }

    /// Creates `key` if absent. Returns the new mod_revision, or `Ok(None)` if it exists.
    pub(crate) async fn create_raw(
        &self,
        key: &str,
        value: Vec<u8>,
        lease: Option<i64>,
        paced: bool,
    ) -> Result<Option<i64>, DemoError> {
        let opts = lease.map(|id| PutOptions::new().with_lease(id));
        let txn = Txn::new()
            .when([Compare::mod_revision(key, CompareOp::Equal, 0)])
            .and_then([TxnOp::put(key, value, opts)]);
        let resp = self.txn(txn, paced, Some(("create", key))).await?;
        if resp.succeeded() {
            self.counters.creates.fetch_add(1, Ordering::Relaxed);
            Ok(Some(resp.header().map(|h| h.revision()).unwrap_or(0)))
        } else {
            self.counters.conflicts.fetch_add(1, Ordering::Relaxed);
            Ok(None)
        }
    }

    /// GuaranteedUpdate on raw bytes: `f` maps the current value to the new one and is
    /// re-run on the fresh value after a conflict. Returns `Ok(false)` when the key is gone.
    pub(crate) async fn update_raw(
        &self,
        key: &str,
        seen: &mut Seen,
        lease: Option<i64>,
        mut f: impl FnMut(&[u8]) -> Result<Vec<u8>, DemoError>,
    ) -> Result<bool, DemoError> {
        for _ in 0..MAX_CONFLICT_RETRIES {
            let new_value = f(&seen.value)?;
            let opts = lease.map(|id| PutOptions::new().with_lease(id));
            let txn = Txn::new()
                .when([Compare::mod_revision(
                    key,
                    CompareOp::Equal,
                    seen.mod_revision,
                )])
                .and_then([TxnOp::put(key, new_value.clone(), opts)])
                .or_else([TxnOp::get(key, None)]);
            let resp = self.txn(txn, true, Some(("update", key))).await?;
            if resp.succeeded() {
                self.counters.updates.fetch_add(1, Ordering::Relaxed);
                seen.mod_revision = resp.header().map(|h| h.revision()).unwrap_or(0);
                seen.value = new_value;
                return Ok(true);
            }
            self.counters.conflicts.fetch_add(1, Ordering::Relaxed);
            match fresh_kv(&resp) {
                Some(fresh) => *seen = fresh,
                None => {
                    *seen = Seen::default();
                    return Ok(false);
                }
            }
        }
        Err(DemoError::TooManyConflicts {
            key: key.to_string(),
            attempts: MAX_CONFLICT_RETRIES,
        })
    }

    /// Deletes `key` if its mod_revision is still `seen`, re-reading after a conflict.
    /// Returns `Ok(false)` if the key was already gone.
    pub(crate) async fn delete(&self, key: &str, mut seen: i64) -> Result<bool, DemoError> {
        for _ in 0..MAX_CONFLICT_RETRIES {
            let txn = Txn::new()
                .when([Compare::mod_revision(key, CompareOp::Equal, seen)])
                .and_then([TxnOp::delete(key, None)])
                .or_else([TxnOp::get(key, None)]);
            let resp = self.txn(txn, true, Some(("delete", key))).await?;
            if resp.succeeded() {
                self.counters.deletes.fetch_add(1, Ordering::Relaxed);
                return Ok(true);
            }
            self.counters.conflicts.fetch_add(1, Ordering::Relaxed);
            match fresh_kv(&resp) {
                Some(fresh) => seen = fresh.mod_revision,
                None => return Ok(false),
            }
        }
        Err(DemoError::TooManyConflicts {
            key: key.to_string(),
            attempts: MAX_CONFLICT_RETRIES,
        })
    }

    /// Creates a typed object. If the key already exists (e.g. a retried create whose first
    /// attempt did commit), the stored object is read back and adopted.
    pub(crate) async fn create<T: StorageKind>(
        &self,
        key: &str,
        obj: T,
        paced: bool,
    ) -> Result<Cached<T>, DemoError> {
        match self
            .create_raw(key, encode_object(&obj), None, paced)
            .await?
        {
            Some(rev) => Ok(Cached {
                obj,
                mod_revision: rev,
            }),
            None => self.read(key).await,
        }
    }

    /// Creates an object attached to a TTL lease from the lease manager (events).
    pub(crate) async fn create_with_ttl<T: StorageKind>(
        &self,
        key: &str,
        obj: &T,
    ) -> Result<(), DemoError> {
        let lease = self.lease_for_ttl(self.event_ttl_s).await?;
        self.create_raw(key, encode_object(obj), Some(lease), true)
            .await?;
        Ok(())
    }

    /// Reads and decodes a typed object (used after a lost create race).
    pub(crate) async fn read<T: StorageKind>(&self, key: &str) -> Result<Cached<T>, DemoError> {
        let mut client = self.client.clone();
        let started = std::time::Instant::now();
        let resp = client.get(key, None).await;
        self.record("get", key, started, resp.is_err());
        let resp = resp.map_err(|e| {
            self.counters.error();
            DemoError::from(e)
        })?;
        let kv = resp.kvs().first().ok_or_else(|| DemoError::Decode {
            key: key.to_string(),
            reason: "key vanished".to_string(),
        })?;
        let obj = decode_object::<T>(kv.value()).map_err(|reason| DemoError::Decode {
            key: key.to_string(),
            reason,
        })?;
        Ok(Cached {
            obj,
            mod_revision: kv.mod_revision(),
        })
    }

    /// GuaranteedUpdate of a typed object: `mutate` is applied to the cached object and, after
    /// a conflict, to the freshly read one. Returns `Ok(false)` if the object is gone.
    pub(crate) async fn update<T: StorageKind>(
        &self,
        key: &str,
        cached: &mut Cached<T>,
        mutate: impl Fn(&mut T),
    ) -> Result<bool, DemoError> {
        let mut seen = Seen {
            mod_revision: cached.mod_revision,
            value: Vec::new(),
        };
        let mut current = cached.obj.clone();
        let mut first = true;
        let mut result = None;
        let ok = self
            .update_raw(key, &mut seen, None, |bytes| {
                if !first {
                    current = decode_object::<T>(bytes).map_err(|reason| DemoError::Decode {
                        key: key.to_string(),
                        reason,
                    })?;
                }
                first = false;
                let mut next = current.clone();
                mutate(&mut next);
                let encoded = encode_object(&next);
                result = Some(next);
                Ok(encoded)
            })
            .await?;
        if ok {
            if let Some(obj) = result {
                cached.obj = obj;
            }
            cached.mod_revision = seen.mod_revision;
        }
        Ok(ok)
    }

    async fn lease_for_ttl(&self, ttl: i64) -> Result<i64, DemoError> {
        // Held across the grant, as the apiserver's lease manager holds its mutex.
        let mut mgr = self.leases.lock().await;
        let now = Instant::now();
        match mgr.reusable(ttl, now) {
            Ok(id) => Ok(id),
            Err(grant_ttl) => {
                let mut client = self.client.clone();
                let resp = client.lease_grant(grant_ttl, None).await.map_err(|e| {
                    self.counters.error();
                    DemoError::from(e)
                })?;
                self.counters.leases_granted.fetch_add(1, Ordering::Relaxed);
                mgr.granted(resp.id(), grant_ttl, now);
                Ok(resp.id())
            }
        }
    }

    /// One round of kube-apiserver's compactor (`compact.go`): `t` is the version of
    /// `compact_rev_key` last seen, `rev` the revision recorded in the previous round.
    /// Returns the new (t, rev). Only the winner of the version compare compacts, and only
    /// a non-zero revision (never on bootstrap).
    pub(crate) async fn compact_round(&self, t: i64, rev: i64) -> Result<(i64, i64), DemoError> {
        let txn = Txn::new()
            .when([Compare::version(COMPACT_REV_KEY, CompareOp::Equal, t)])
            .and_then([TxnOp::put(COMPACT_REV_KEY, rev.to_string(), None)])
            .or_else([TxnOp::get(COMPACT_REV_KEY, None)]);
        let resp = self.txn(txn, true, None).await?;
        let cur_rev = resp.header().map(|h| h.revision()).unwrap_or(0);
        if !resp.succeeded() {
            self.counters.conflicts.fetch_add(1, Ordering::Relaxed);
            let cur_t = fresh_kv_version(&resp).unwrap_or(0);
            return Ok((cur_t, cur_rev));
        }
        self.counters.updates.fetch_add(1, Ordering::Relaxed);
        let cur_t = t + 1;
        if rev == 0 {
            return Ok((cur_t, cur_rev));
        }
        let mut client = self.client.clone();
        match client.compact(rev, None).await {
            Ok(_) => {
                self.counters.compactions.fetch_add(1, Ordering::Relaxed);
                self.counters
                    .last_compact_revision
                    .fetch_max(rev, Ordering::Relaxed);
                Ok((cur_t, cur_rev))
            }
            Err(e) => {
                self.counters.error();
                Err(e.into())
            }
        }
    }
}

fn fresh_kv(resp: &etcd_client::TxnResponse) -> Option<Seen> {
    resp.op_responses().into_iter().find_map(|op| match op {
        TxnOpResponse::Get(g) => g.kvs().first().map(|kv| Seen {
            mod_revision: kv.mod_revision(),
            value: kv.value().to_vec(),
        }),
        _ => None,
    })
}

fn fresh_kv_version(resp: &etcd_client::TxnResponse) -> Option<i64> {
    resp.op_responses().into_iter().find_map(|op| match op {
        TxnOpResponse::Get(g) => g.kvs().first().map(|kv| kv.version()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_manager_reuses_within_window() {
        let mut m = LeaseManager::default();
        let t0 = Instant::now();
        // First call must grant TTL + min(5 %, 60 s).
        assert_eq!(m.reusable(60, t0), Err(63));
        m.granted(7, 63, t0);
        // One second later the lease still outlives a 60 s object: reuse.
        assert_eq!(m.reusable(60, t0 + Duration::from_secs(1)), Ok(7));
        // After the 3 s window it no longer does.
        assert_eq!(m.reusable(60, t0 + Duration::from_secs(4)), Err(63));
    }

    #[test]
    fn lease_manager_caps_attached_objects() {
        let mut m = LeaseManager::default();
        let t0 = Instant::now();
        let _ = m.reusable(3600, t0);
        m.granted(1, 3660, t0);
        let t1 = t0 + Duration::from_millis(1);
        for _ in 1..LEASE_MAX_ATTACHED {
            assert_eq!(m.reusable(3600, t1), Ok(1));
        }
        assert_eq!(m.reusable(3600, t1), Err(3660));
    }

    #[test]
    fn reuse_window_is_capped_at_60s() {
        assert_eq!(LeaseManager::reuse_seconds(3600), 60);
        assert_eq!(LeaseManager::reuse_seconds(60), 3);
        assert_eq!(LeaseManager::reuse_seconds(10), 0);
    }

    #[test]
    fn workers_scale_with_rate() {
        let mut c = SimConfig::default();
        assert_eq!(c.effective_workers(), 1);
        c.rate = 0;
        assert_eq!(c.effective_workers(), 16);
        c.rate = 450;
        assert_eq!(c.effective_workers(), 5);
        c.workers = 3;
        assert_eq!(c.effective_workers(), 3);
    }

    #[tokio::test]
    async fn pacer_spaces_requests() {
        let p = Pacer::new(100);
        let t0 = Instant::now();
        for _ in 0..11 {
            p.wait().await;
        }
        assert!(
            t0.elapsed() >= Duration::from_millis(95),
            "{:?}",
            t0.elapsed()
        );
        let unpaced = Pacer::new(0);
        let t1 = Instant::now();
        for _ in 0..1000 {
            unpaced.wait().await;
        }
        assert!(t1.elapsed() < Duration::from_millis(50));
    }
}
