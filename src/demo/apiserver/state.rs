//! The state every task of the demo apiserver shares: its settings, the etcd client, the
//! watch cache, the request metrics and flow control; and the timed etcd reads they make.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use etcd_client::{Client, GetOptions};
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use super::config::DemoApiserverConfig;
use super::flow_control::Apf;
use super::latency::StorageLatencies;
use super::lock::lock;
use super::request_metrics::{RequestLabels, RequestStats};
use super::resources::ResourceInfo;
use super::watch_cache::CacheState;
use crate::decode::{decode, DecodeOptions};
use crate::model::{prefix_end, KeyPath};

/// Keys per etcd range request when listing (the reflector pages its lists too).
const LIST_PAGE: i64 = 1000;
/// Time allowed for etcd status and count requests made while answering.
pub(super) const ETCD_CALL_TIMEOUT: Duration = Duration::from_secs(5);

pub(super) struct Shared {
    pub(super) cfg: DemoApiserverConfig,
    pub(super) prefix: String,
    pub(super) client: Client,
    pub(super) latencies: Arc<StorageLatencies>,
    pub(super) cache: Mutex<CacheState>,
    /// Bumped whenever the cache changes; watchers wait on it.
    pub(super) changed: watch::Sender<u64>,
    /// Asks the cacher to request an etcd progress notification.
    pub(super) progress: mpsc::Sender<()>,
    /// Whether etcd orders requested progress notifications with the watch's events (see
    /// [`progress_requests_ordered`](super::cacher::progress_requests_ordered)); if not, none
    /// are requested.
    pub(super) progress_requests: bool,
    pub(super) requests: Mutex<BTreeMap<RequestLabels, RequestStats>>,
    pub(super) apf: Arc<Apf>,
    pub(super) slow_claimed: AtomicBool,
    pub(super) stop: watch::Receiver<bool>,
}

impl Shared {
    pub(super) fn cache(&self) -> MutexGuard<'_, CacheState> {
        lock(&self.cache)
    }

    pub(super) fn record_request(&self, labels: RequestLabels, code: u16, elapsed: Duration) {
        let mut reqs = lock(&self.requests);
        let stats = reqs.entry(labels).or_default();
        stats.latency.observe(elapsed.as_secs_f64());
        *stats.codes.entry(code).or_default() += 1;
    }

    /// One etcd range request, timed and recorded under `operation`.
    pub(super) async fn etcd_get(
        &self,
        operation: &str,
        group_resource: (&str, &str),
        key: impl Into<Vec<u8>>,
        opts: GetOptions,
    ) -> Result<etcd_client::GetResponse, etcd_client::Error> {
        let mut client = self.client.clone();
        let started = Instant::now();
        let result =
            match tokio::time::timeout(ETCD_CALL_TIMEOUT, client.get(key, Some(opts))).await {
                Ok(r) => r,
                Err(_) => Err(etcd_client::Error::InvalidArgs(
                    "etcd request timed out".to_string(),
                )),
            };
        self.latencies.observe(
            operation,
            group_resource.0,
            group_resource.1,
            started.elapsed().as_secs_f64(),
            result.is_err(),
        );
        result
    }

    /// Lists one resource's keys at `revision` (0 = the current one), page by page, each page
    /// recorded as a `list`. Returns the revision read at and the key-values.
    pub(super) async fn list_resource(
        &self,
        info: &ResourceInfo,
        revision: i64,
    ) -> Result<(i64, Vec<etcd_client::KeyValue>), etcd_client::Error> {
        let end = prefix_end(info.key_prefix.as_bytes());
        let mut start = info.key_prefix.as_bytes().to_vec();
        let mut rev = revision;
        let mut kvs = Vec::new();
        loop {
            let mut opts = GetOptions::new()
                .with_range(end.clone())
                .with_limit(LIST_PAGE);
            if rev > 0 {
                opts = opts.with_revision(rev);
            }
            let resp = self
                .etcd_get("list", (&info.group, &info.resource), start.clone(), opts)
                .await?;
            if rev <= 0 {
                rev = resp.header().map_or(0, |h| h.revision());
            }
            let more = resp.more();
            if let Some(last) = resp.kvs().last() {
                start = last.key().to_vec();
                start.push(0);
            }
            kvs.extend(resp.kvs().iter().cloned());
            if !more {
                break;
            }
        }
        Ok((rev, kvs))
    }
}

/// Decodes a stored value into the apiserver's JSON with `metadata.resourceVersion` set.
pub(super) fn object_json(
    key: &[u8],
    value: &[u8],
    mod_revision: i64,
) -> Option<(Value, Arc<str>)> {
    let d = decode(
        value,
        &DecodeOptions {
            etcd_key: key,
            mod_revision: Some(mod_revision),
            ..Default::default()
        },
    );
    let text = d.json?;
    let v: Value = serde_json::from_str(&text).ok()?;
    Some((v, Arc::from(text)))
}

pub(super) fn namespace_of(prefix: &str, key: &[u8]) -> Option<String> {
    KeyPath::parse(prefix.trim_end_matches('/').as_bytes(), key)
        .namespace
        .map(|n| n.into_owned())
}

/// Resolves when the server is stopping (the guard of `wait_for` is not `Send`).
pub(super) async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}
