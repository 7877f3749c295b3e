//! What the etcd source's list, watch and member polling share: the sync options, the
//! list error, the [`Emitter`] that stamps observations onto the session's channel, and
//! the conversion of etcd-client's key-values into the model's.

use std::time::Duration;

use tokio::sync::mpsc;

use super::connect::error_chain;
use crate::model::{ConnState, KeyValue, Observation, Stamped};

/// Tunables of the sync loop. Durations are wall-clock; sizes are bytes.
#[derive(Clone, Debug)]
pub struct SyncOptions {
    /// Prefix to mirror, without trailing slash (`/registry`).
    pub prefix: Vec<u8>,
    /// Keys in the first list page (etcd range `limit`), before any size is known; later
    /// pages hold `page_target_bytes` at the average key + value size seen so far.
    pub page_limit: i64,
    /// Most keys per page.
    pub page_limit_max: i64,
    /// Bytes of keys + values per list page.
    pub page_target_bytes: usize,
    /// List ranges in flight at once (see [`super::list`]).
    pub list_concurrency: usize,
    /// A list range whose rest holds more than this many pages is cut into smaller ranges.
    pub split_above_pages: usize,
    /// gRPC decoding limit for range responses; pages over it are retried smaller.
    pub max_decode_bytes: usize,
    /// gRPC decoding limit for watch responses (a catch-up batch can exceed 4 MiB).
    pub watch_max_decode_bytes: usize,
    /// How often we ask etcd for a progress notification.
    pub progress_interval: Duration,
    /// How often the member's Status (sizes, raft position, alarms) is asked while
    /// watching; checked on the progress ticker, so at least `progress_interval`.
    pub status_interval: Duration,
    /// No response at all for this long: "etcd not responding", reconnect.
    pub liveness_window: Duration,
    /// Bound on connecting and on each unary request.
    pub request_timeout: Duration,
    /// Longest pause between reconnect attempts.
    pub backoff_max: Duration,
}

impl Default for SyncOptions {
    fn default() -> Self {
        Self {
            prefix: b"/registry".to_vec(),
            page_limit: 500,
            page_limit_max: 50_000,
            page_target_bytes: 4 << 20,
            list_concurrency: 4,
            split_above_pages: 4,
            max_decode_bytes: 16 << 20,
            watch_max_decode_bytes: 512 << 20,
            progress_interval: Duration::from_secs(5),
            status_interval: Duration::from_secs(10),
            liveness_window: Duration::from_secs(15),
            request_timeout: Duration::from_secs(10),
            backoff_max: Duration::from_secs(2),
        }
    }
}

impl SyncOptions {
    /// `prefix + "/"`: the range actually listed and watched (so `/registry` never matches
    /// `/registry-other`).
    pub fn range_key(&self) -> Vec<u8> {
        let mut k = self.prefix.clone();
        if k.last() != Some(&b'/') {
            k.push(b'/');
        }
        k
    }
}

/// Error during list.
#[derive(Debug)]
pub enum ListError {
    Etcd(etcd_client::Error),
    Timeout,
    TooLarge(String),
    Closed,
}

impl std::fmt::Display for ListError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListError::Etcd(e) => write!(f, "{}", error_chain(e)),
            ListError::Timeout => write!(f, "list request timed out"),
            ListError::TooLarge(s) => write!(f, "{s}"),
            ListError::Closed => write!(f, "consumer closed"),
        }
    }
}

/// Sends observations, stamped with the wall clock, to the session's channel.
pub(super) struct Emitter {
    pub(super) tx: mpsc::Sender<Stamped>,
}

impl Emitter {
    pub(super) async fn send(&self, obs: Observation) -> bool {
        self.tx.send(Stamped::now(obs)).await.is_ok()
    }

    /// Whether the consumer is gone.
    pub(super) fn closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Waits until at most `queued` observations wait in the channel for the consumer (or
    /// it is closed). The channel bounds observations, not bytes: a list checks this
    /// before each page so that a slow consumer holds a few pages, not hundreds of MiB.
    /// Polls every 2 ms while the channel is that full (tokio's mpsc has no "room"
    /// notification short of reserving the slot).
    pub(super) async fn wait_for_room(&self, queued: usize) {
        while !self.tx.is_closed() && self.tx.max_capacity() - self.tx.capacity() > queued {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Reports a fatal error: as a note (banners may be too narrow for the whole line) and
    /// as the final connection state.
    pub(super) async fn fail(&self, e: &super::ConnectError) {
        self.send(Observation::Note(format!("stopped: {e}"))).await;
        self.send(Observation::Conn(ConnState::Failed {
            error: e.to_string(),
        }))
        .await;
    }
}

/// Takes etcd-client's key-value without copying its bytes (the buffers prost decoded
/// become the shared ones).
pub fn take_kv(kv: etcd_client::KeyValue) -> KeyValue {
    let (create_revision, mod_revision, version, lease) = (
        kv.create_revision(),
        kv.mod_revision(),
        kv.version(),
        kv.lease(),
    );
    let (key, value) = kv.into_key_value();
    // Made shareable here, on the source's task, not on the session's thread.
    KeyValue {
        key: crate::model::shareable(key),
        create_revision,
        mod_revision,
        version,
        lease,
        value: crate::model::shareable(value),
    }
}

/// Converts etcd-client's key-value (copies the bytes once into shareable buffers, see
/// [`crate::model::shareable`]).
pub fn convert_kv(kv: &etcd_client::KeyValue) -> KeyValue {
    KeyValue {
        key: crate::model::shareable(kv.key().to_vec()),
        create_revision: kv.create_revision(),
        mod_revision: kv.mod_revision(),
        version: kv.version(),
        lease: kv.lease(),
        value: crate::model::shareable(kv.value().to_vec()),
    }
}
