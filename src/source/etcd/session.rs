//! One watch session of the main cluster: the prefix watched from a start revision (and
//! `compact_rev_key` beside it while the user may read it), run by the shared loop
//! ([`crate::source::watch`]) until the stream is lost, etcd falls silent, the start is
//! compacted or the consumer goes away ([`WatchEnd`]). Events, progress and compactions
//! leave as observations; the forwarded revision and what [`Kept`] holds are updated in
//! place for the reconnect loop in [`super`].

use std::ops::ControlFlow;
use std::time::{Duration, Instant, SystemTime};

use etcd_client::{Client, EventType, WatchOptions, WatchResponse, WatchStream};

use super::{convert_kv, marker_refused, parse_rev, EtcdSource, Kept, WatchEnd, COMPACT_REV_KEY};
use crate::model::{CompactionSource, EventKind, Observation, Revision, WatchEvent};
use crate::source::connect::short_detail;
use crate::source::sync::Emitter;
use crate::source::watch::{open_prefix_watch, watch_loop, OpenError, StreamEnd, WatchHandler};

impl EtcdSource {
    /// Watches the prefix from `start` on a connection to `read_from` that requires a
    /// leader (on `client`'s when that cannot be made) and forwards what comes until the
    /// session ends; see the module doc.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn watch(
        &self,
        client: &mut Client,
        read_from: &str,
        start: Revision,
        out: &Emitter,
        forwarded: &mut Option<Revision>,
        progress_safe: bool,
        kept: &mut Kept,
    ) -> WatchEnd {
        // The watch on a connection of its own that requires a leader (see
        // `EtcdOptions::connect_require_leader`); on the main one if that cannot be made.
        let leader_client = self
            .etcd
            .connect_require_leader(read_from, self.sync.request_timeout)
            .await
            .ok();
        // The prefix is watched from the revision before `start` (the last one applied),
        // never from `start` itself: when etcd compacted at exactly `start`, the watch is
        // then cancelled as compacted and the prefix listed again, instead of opened at
        // the compacted revision, where etcd 3.4 before 3.4.36 and 3.5 before 3.5.18 can
        // miss a DELETE after finishing that compaction at a restart (etcd-io/etcd#19179,
        // fixed by etcd-io/etcd#19251, #19249, #19188). That revision's events, applied
        // already, are dropped as they come (`resume_from`). Revision 1 holds no event.
        let from = if start > 1 { start - 1 } else { start };
        let stream = open_prefix_watch(
            leader_client.as_ref().unwrap_or(client),
            self.sync.range_key(),
            from,
            self.sync.request_timeout,
            Some(self.sync.watch_max_decode_bytes),
        )
        .await;
        let mut stream = match stream {
            Ok(s) => s,
            Err(OpenError::Refused(e)) => return WatchEnd::Lost(e),
            Err(OpenError::TimedOut) => return WatchEnd::Silent(SystemTime::now()),
        };
        if kept.watch_marker {
            let key_opts = WatchOptions::new().with_start_revision(start);
            if let Err(e) = stream.watch(COMPACT_REV_KEY, Some(key_opts)).await {
                return WatchEnd::Lost(short_detail(&e));
            }
        }
        let mut session = Session {
            source: self,
            client,
            out,
            forwarded,
            progress_safe,
            kept,
            resume_from: start,
            created: 0,
            last_progress: 0,
            confirmed: false,
            prefix_id: None,
            marker_id: None,
            last_msg: Instant::now(),
            last_msg_wall: SystemTime::now(),
            last_status: Instant::now(),
            endpoint: self.etcd.endpoint_label(),
        };
        watch_loop(&mut stream, self.sync.progress_interval, &mut session).await
    }
}

/// The state of one watch session beside what the reconnect loop keeps.
struct Session<'a> {
    source: &'a EtcdSource,
    /// The main connection (Status is asked on it).
    client: &'a mut Client,
    out: &'a Emitter,
    /// The newest revision forwarded; resumed from + 1.
    forwarded: &'a mut Option<Revision>,
    /// etcd orders progress notifications after pending events (see `progress_ordered`).
    progress_safe: bool,
    kept: &'a mut Kept,
    /// The first revision not yet applied: the prefix's events below it (the revision
    /// the watch was opened one early at) are dropped.
    resume_from: Revision,
    /// Watches created so far on the stream (prefix first, then the marker).
    created: usize,
    /// The head of the last progress notification forwarded (0 after events).
    last_progress: Revision,
    /// That head was announced twice with no event between.
    confirmed: bool,
    prefix_id: Option<i64>,
    marker_id: Option<i64>,
    last_msg: Instant,
    last_msg_wall: SystemTime,
    last_status: Instant,
    endpoint: String,
}

impl WatchHandler for Session<'_> {
    type End = WatchEnd;

    async fn response(&mut self, resp: WatchResponse) -> ControlFlow<WatchEnd> {
        let out = self.out;
        self.last_msg = Instant::now();
        self.last_msg_wall = SystemTime::now();
        let id = resp.watch_id();
        // Watches are created in the order requested: prefix, then marker.
        let creation = resp.created().then(|| {
            self.created += 1;
            self.created - 1
        });
        match creation {
            Some(0) => self.prefix_id = Some(id),
            Some(_) => self.marker_id = Some(id),
            None => {}
        }
        if resp.canceled() {
            if resp.compact_revision() > 0 {
                return ControlFlow::Break(WatchEnd::Compacted(resp.compact_revision()));
            }
            let reason = resp.cancel_reason();
            // The marker refused: etcd 3.5.1 answers a watch the user may not
            // read with a created-and-cancelled response, "permission denied",
            // carrying the requested watch id (0, the same as the prefix's
            // automatic one), so it is told by order; 3.4.23 lets the watch be.
            // After that refusal 3.5.1 sent no more events of the prefix's watch
            // on the stream, only progress (tests/etcd/read_only.rs), so the stream
            // is opened again, resuming, without the marker; compactions are
            // still seen from watch cancellations, list errors and etcd's metrics.
            if creation.is_some_and(|n| n > 0)
                && reason.to_lowercase().contains("permission denied")
            {
                self.kept.watch_marker = false;
                out.send(marker_refused()).await;
                return ControlFlow::Break(WatchEnd::Lost(format!(
                    "etcd refused the watch on {} (permission denied); watching again without it",
                    String::from_utf8_lossy(COMPACT_REV_KEY)
                )));
            }
            return ControlFlow::Break(WatchEnd::Lost(if reason.is_empty() {
                "watch cancelled by etcd".into()
            } else {
                format!("watch cancelled by etcd: {reason}")
            }));
        }
        let header_rev = resp.header().map_or(0, |h| h.revision());
        if Some(id) == self.marker_id && self.marker_id != self.prefix_id {
            for ev in resp.events() {
                if ev.event_type() == EventType::Put {
                    if let Some(c) = ev.kv().and_then(|kv| parse_rev(kv.value())) {
                        let obs = Observation::Compacted {
                            revision: c,
                            source: CompactionSource::CompactRevKey,
                        };
                        if !out.send(obs).await {
                            return ControlFlow::Break(WatchEnd::Closed);
                        }
                    }
                }
            }
            return ControlFlow::Continue(());
        }
        if resp.events().is_empty() {
            if resp.created() {
                return ControlFlow::Continue(());
            }
            // Progress notification (own request or etcd's periodic one). One
            // that tells nothing new is not forwarded; one below what was
            // forwarded is, for the store to count. Where progress may run ahead
            // of events, the first repeat of a head is forwarded too: a head
            // announced twice with no event between is one the prefix has no
            // pending event below (`Replica::synced_revision`).
            let repeat = header_rev == self.last_progress;
            if Some(header_rev) == *self.forwarded
                || (repeat && (self.progress_safe || self.confirmed))
            {
                return ControlFlow::Continue(());
            }
            self.confirmed = repeat;
            self.last_progress = header_rev;
            // Only where etcd orders progress after pending events is it "every
            // event up to here was sent", to apply and resume from
            // (etcd-io/etcd#15220, fixed in 3.4.25 and 3.5.8); elsewhere it is
            // only "etcd's head is at least here".
            let obs = if self.progress_safe {
                if header_rev > self.forwarded.unwrap_or(0) {
                    *self.forwarded = Some(header_rev);
                }
                Observation::Progress {
                    revision: header_rev,
                }
            } else {
                Observation::HeadAtLeast {
                    revision: header_rev,
                }
            };
            if !out.send(obs).await {
                return ControlFlow::Break(WatchEnd::Closed);
            }
            return ControlFlow::Continue(());
        }
        let resume_from = self.resume_from;
        let events: Vec<WatchEvent> = resp
            .events()
            .iter()
            .filter_map(|ev| {
                let kv = ev.kv().filter(|kv| kv.mod_revision() >= resume_from)?;
                Some(WatchEvent {
                    kind: match ev.event_type() {
                        EventType::Put => EventKind::Put,
                        EventType::Delete => EventKind::Delete,
                    },
                    kv: convert_kv(kv),
                    prev_kv: ev.prev_kv().map(convert_kv),
                })
            })
            .collect();
        if events.is_empty() {
            // Only events of the revision already applied (see `resume_from`).
            return ControlFlow::Continue(());
        }
        if let Some(last) = events.last() {
            *self.forwarded = Some(self.forwarded.unwrap_or(0).max(last.kv.mod_revision));
            // A head must be announced twice again, after these, to count.
            self.last_progress = 0;
            self.confirmed = false;
        }
        if let Some(put) = events.iter().rev().find(|e| e.kind == EventKind::Put) {
            self.kept.anchor = Some((put.kv.key.to_vec(), put.kv.mod_revision));
        }
        let obs = Observation::Events {
            revision: header_rev,
            events,
        };
        if !out.send(obs).await {
            return ControlFlow::Break(WatchEnd::Closed);
        }
        ControlFlow::Continue(())
    }

    async fn tick(&mut self, stream: &mut WatchStream) -> ControlFlow<WatchEnd> {
        let sync = &self.source.sync;
        if self.last_msg.elapsed() > sync.liveness_window {
            return ControlFlow::Break(WatchEnd::Silent(self.last_msg_wall));
        }
        if self.out.tx.is_closed() {
            return ControlFlow::Break(WatchEnd::Closed);
        }
        // Bounded: the request channel may be full if etcd stopped reading.
        let _ = tokio::time::timeout(Duration::from_secs(1), stream.request_progress()).await;
        if self.last_status.elapsed() >= sync.status_interval {
            self.last_status = Instant::now();
            if let Ok(Ok(s)) =
                tokio::time::timeout(Duration::from_secs(1), self.client.status()).await
            {
                let s = crate::source::connect::etcd_status(&self.endpoint, &s);
                if !self.out.send(Observation::EtcdStatus(s)).await {
                    return ControlFlow::Break(WatchEnd::Closed);
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn lost(&mut self, end: StreamEnd) -> WatchEnd {
        WatchEnd::Lost(match end {
            StreamEnd::ClosedByEtcd => StreamEnd::CLOSED.into(),
            StreamEnd::Failed(e) => e,
        })
    }
}
