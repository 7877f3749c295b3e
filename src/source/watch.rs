//! The one etcd watch loop: opening a watch on a key range with progress notifications, then
//! reading its stream while a ticker runs, until the stream ends or a handler says stop.
//! Both etcd watchers run it: the main cluster's list+watch ([`super::etcd`]) and the other
//! clusters of `--etcd-servers-overrides` ([`super::other_cluster`]); what they do with a
//! response and on a tick is a [`WatchHandler`].
//!
//! The stream ends when etcd closes it or on a transport error; both are handed to
//! [`WatchHandler::lost`] as a [`StreamEnd`]. Responses, cancellations included, go to
//! [`WatchHandler::response`] as they come.

use std::ops::ControlFlow;
use std::time::Duration;

use etcd_client::{Client, WatchOptions, WatchResponse, WatchStream};

use super::connect::{prefix_end, short_detail};
use crate::model::Revision;

/// What a watcher does with its stream. `End` is what the loop returns when it stops.
pub(super) trait WatchHandler {
    /// Why the watch ended, handed back to the watcher's reconnect loop.
    type End;

    /// One response from etcd (events, progress, creation or cancellation).
    async fn response(&mut self, resp: WatchResponse) -> ControlFlow<Self::End>;

    /// The ticker fired; `stream` is free for requests (e.g. `request_progress`).
    async fn tick(&mut self, stream: &mut WatchStream) -> ControlFlow<Self::End>;

    /// The stream ended.
    fn lost(&mut self, end: StreamEnd) -> Self::End;
}

/// How a watch stream ended.
pub(super) enum StreamEnd {
    /// etcd closed it (the stream returned no more messages).
    ClosedByEtcd,
    /// The transport failed; the error's [`short_detail`].
    Failed(String),
}

impl StreamEnd {
    /// The words for a closed stream: `watch stream closed by etcd`.
    pub(super) const CLOSED: &'static str = "watch stream closed by etcd";
}

/// Why [`open_prefix_watch`] got no stream.
pub(super) enum OpenError {
    /// etcd refused or the transport failed (one line).
    Refused(String),
    /// No answer within the request timeout.
    TimedOut,
}

/// Opens a watch on every key starting with `key` (`key` .. its prefix end) from revision
/// `start`, with progress notifications, on `client`'s connection; waits at most `timeout`
/// for the stream. `max_decode_bytes`, when given, raises the gRPC decoding limit for large
/// responses.
pub(super) async fn open_prefix_watch(
    client: &Client,
    key: Vec<u8>,
    start: Revision,
    timeout: Duration,
    max_decode_bytes: Option<usize>,
) -> Result<WatchStream, OpenError> {
    let opts = WatchOptions::new()
        .with_range(prefix_end(&key))
        .with_start_revision(start)
        // No `prev_kv`: the replica already holds every key's previous version, and
        // etcd answers `prev_kv` with one range read per event on the watch's send
        // path (etcd 3.4/3.5 `v3rpc/watch.go` `sendLoop`), which made a watch on a
        // busy prefix seconds late while `etcdctl watch` (no `--prev-kv`) kept up
        // (`LIVE_LOAD=txn cargo bench --bench live`).
        .with_progress_notify();
    let mut wc = client.watch_client();
    if let Some(max) = max_decode_bytes {
        wc = wc.max_decoding_message_size(max);
    }
    match tokio::time::timeout(timeout, wc.watch(key, Some(opts))).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(OpenError::Refused(short_detail(&e))),
        Err(_) => Err(OpenError::TimedOut),
    }
}

/// Reads `stream` until it ends or `handler` breaks, ticking every `every` (the first tick
/// is skipped: it would fire at once). A tick that falls behind is delayed, never bunched.
pub(super) async fn watch_loop<H: WatchHandler>(
    stream: &mut WatchStream,
    every: Duration,
    handler: &mut H,
) -> H::End {
    let mut ticker = tokio::time::interval(every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        let flow = tokio::select! {
            msg = stream.message() => match msg {
                Ok(Some(resp)) => handler.response(resp).await,
                Ok(None) => return handler.lost(StreamEnd::ClosedByEtcd),
                Err(e) => return handler.lost(StreamEnd::Failed(short_detail(&e))),
            },
            _ = ticker.tick() => handler.tick(stream).await,
        };
        if let ControlFlow::Break(end) = flow {
            return end;
        }
    }
}
