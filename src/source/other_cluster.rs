//! Another etcd cluster of kube-apiserver's (`--etcd-servers-overrides`, e.g.
//! `/events#https://10.0.0.5:2379`: Events in their own etcd, a common layout for large
//! clusters), watched beside the main one as its own cluster with its own revisions.
//!
//! The watcher keeps nothing: on each connection it reports the member's Status and etcd's
//! count of the keys under the prefix ([`OtherClusterWhat::Up`]), then watches the prefix
//! from the next revision and reports each watch response's events counted
//! ([`OtherClusterWhat::Writes`]), with a fresh Status and count every status interval.
//! A lost connection is reported ([`OtherClusterWhat::Down`]) and retried with backoff. A
//! watch start that etcd has compacted away (after a long disconnection) starts again at
//! the head: the counts miss what happened while down, the next count corrects the keys.
//! The watch runs the loop the main cluster's watch runs too ([`super::watch`]).
//!
//! Read-only: Status, a count-only range and a watch, as `etcdctl endpoint status`,
//! `etcdctl get --prefix --count-only` and `etcdctl watch --prefix` make them.

use std::ops::ControlFlow;
use std::time::Duration;

use etcd_client::{EventType, GetOptions, WatchResponse, WatchStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::connect::{short_detail, EtcdOptions};
use super::watch::{open_prefix_watch, watch_loop, OpenError, StreamEnd, WatchHandler};
use crate::model::{prefix_end, Observation, OtherClusterObs, OtherClusterWhat, Revision, Stamped};

/// One other cluster to watch.
#[derive(Clone, Debug)]
pub struct OtherClusterSource {
    /// The resources kube-apiserver keeps there, as the flag names them (`/events`),
    /// comma-separated when several overrides name the same servers.
    pub resources: String,
    /// Its client URLs with the main connection's TLS files and credentials
    /// (kube-apiserver has one set for all its etcd clusters).
    pub etcd: EtcdOptions,
    /// kube-apiserver's `--etcd-prefix`, without trailing slash.
    pub prefix: Vec<u8>,
    /// Bound on connecting and on each request.
    pub request_timeout: Duration,
    /// How often Status and the key count are asked while watching.
    pub status_interval: Duration,
    /// Longest pause between reconnect attempts.
    pub backoff_max: Duration,
}

impl OtherClusterSource {
    /// Starts the watcher; it ends when `tx`'s receiver is gone (or the handle is aborted).
    pub fn spawn(self, tx: mpsc::Sender<Stamped>) -> JoinHandle<()> {
        tokio::spawn(async move { self.run(tx).await })
    }

    /// Connects once and reports what [`OtherClusterWhat::Up`] holds, or why it cannot
    /// ([`OtherClusterWhat::Down`]), for a one-shot command (`snapshot`).
    pub async fn once(&self) -> OtherClusterObs {
        let what = match self.etcd.connect_info(self.request_timeout).await {
            Ok(conn) => {
                let mut client = conn.client;
                match self.up(&mut client, &conn.endpoint).await {
                    Ok((_, up)) => up,
                    Err(e) => OtherClusterWhat::Down {
                        error: format!("{}: {e}", conn.endpoint),
                    },
                }
            }
            Err(e) => OtherClusterWhat::Down {
                error: down_text(e),
            },
        };
        OtherClusterObs {
            resources: self.resources.clone(),
            what,
        }
    }

    async fn send(&self, tx: &mpsc::Sender<Stamped>, what: OtherClusterWhat) -> bool {
        let obs = Observation::OtherCluster(OtherClusterObs {
            resources: self.resources.clone(),
            what,
        });
        tx.send(Stamped::now(obs)).await.is_ok()
    }

    async fn run(self, tx: mpsc::Sender<Stamped>) {
        let mut backoff = Duration::from_secs(1);
        loop {
            let error = self.watch_once(&tx, &mut backoff).await;
            if tx.is_closed() || !self.send(&tx, OtherClusterWhat::Down { error }).await {
                return;
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(self.backoff_max.max(Duration::from_secs(1)));
        }
    }

    /// Status and the key count from `endpoint`, as an [`OtherClusterWhat::Up`], and the
    /// revision of the count.
    async fn up(
        &self,
        client: &mut etcd_client::Client,
        endpoint: &str,
    ) -> Result<(Revision, OtherClusterWhat), String> {
        let t = self.request_timeout;
        let status = tokio::time::timeout(t, client.status())
            .await
            .map_err(|_| "Status timed out".to_string())?
            .map_err(|e| short_detail(&e))?;
        let key = self.range_key();
        let opts = GetOptions::new()
            .with_range(prefix_end(&key))
            .with_count_only();
        let count = tokio::time::timeout(t, client.get(key, Some(opts)))
            .await
            .map_err(|_| "counting the keys timed out".to_string())?
            .map_err(|e| short_detail(&e))?;
        let header = count.header();
        let revision = header.map_or(0, |h| h.revision());
        let up = OtherClusterWhat::Up {
            endpoint: endpoint.to_string(),
            version: status.version().to_string(),
            cluster_id: header.map_or(0, |h| h.cluster_id()),
            revision,
            db_size: status.db_size(),
            keys: u64::try_from(count.count()).unwrap_or(0),
        };
        Ok((revision, up))
    }

    fn range_key(&self) -> Vec<u8> {
        let mut k = self.prefix.clone();
        if !k.ends_with(b"/") {
            k.push(b'/');
        }
        k
    }

    /// One connection: connect, report, watch until something fails; returns why.
    async fn watch_once(&self, tx: &mpsc::Sender<Stamped>, backoff: &mut Duration) -> String {
        let conn = match self.etcd.connect_info(self.request_timeout).await {
            Ok(c) => c,
            Err(e) => return down_text(e),
        };
        let endpoint = conn.endpoint.clone();
        let mut client = conn.client;
        let (revision, up) = match self.up(&mut client, &endpoint).await {
            Ok(u) => u,
            Err(e) => return format!("{endpoint}: {e}"),
        };
        if !self.send(tx, up).await {
            return String::new();
        }
        let stream = open_prefix_watch(
            &client,
            self.range_key(),
            revision + 1,
            self.request_timeout,
            None,
        )
        .await;
        let mut stream = match stream {
            Ok(s) => s,
            Err(OpenError::Refused(e)) => return format!("{endpoint}: watch: {e}"),
            Err(OpenError::TimedOut) => return format!("{endpoint}: watch: timed out"),
        };
        *backoff = Duration::from_secs(1);
        let mut counting = Counting {
            source: self,
            tx,
            client: &mut client,
            endpoint: &endpoint,
        };
        let every = self.status_interval.max(Duration::from_secs(1));
        watch_loop(&mut stream, every, &mut counting).await
    }
}

/// One connection's watch: each response's events counted into a
/// [`OtherClusterWhat::Writes`], a fresh [`OtherClusterWhat::Up`] on every tick. Ends with
/// why the connection is given up (empty when the receiver is gone).
struct Counting<'a> {
    source: &'a OtherClusterSource,
    tx: &'a mpsc::Sender<Stamped>,
    client: &'a mut etcd_client::Client,
    endpoint: &'a str,
}

impl WatchHandler for Counting<'_> {
    type End = String;

    async fn response(&mut self, resp: WatchResponse) -> ControlFlow<String> {
        let endpoint = self.endpoint;
        if resp.canceled() {
            // Compacted (or refused): start again at the head.
            let why = if resp.compact_revision() > 0 {
                format!("watch start compacted (at {})", resp.compact_revision())
            } else {
                format!("watch canceled: {}", resp.cancel_reason())
            };
            return ControlFlow::Break(format!("{endpoint}: {why}"));
        }
        let events = resp.events();
        if events.is_empty() {
            return ControlFlow::Continue(());
        }
        let (mut puts, mut creates, mut deletes, mut bytes) = (0u64, 0u64, 0u64, 0u64);
        for ev in events {
            match ev.event_type() {
                EventType::Put => {
                    puts += 1;
                    if let Some(kv) = ev.kv() {
                        if kv.create_revision() == kv.mod_revision() {
                            creates += 1;
                        }
                        bytes += (kv.key().len() + kv.value().len()) as u64;
                    }
                }
                EventType::Delete => deletes += 1,
            }
        }
        let revision = resp.header().map_or(0, |h| h.revision());
        let what = OtherClusterWhat::Writes {
            revision,
            puts,
            creates,
            deletes,
            bytes,
        };
        if !self.source.send(self.tx, what).await {
            return ControlFlow::Break(String::new());
        }
        ControlFlow::Continue(())
    }

    async fn tick(&mut self, _stream: &mut WatchStream) -> ControlFlow<String> {
        match self.source.up(self.client, self.endpoint).await {
            Ok((_, up)) => {
                if !self.source.send(self.tx, up).await {
                    return ControlFlow::Break(String::new());
                }
                ControlFlow::Continue(())
            }
            Err(e) => ControlFlow::Break(format!("{}: {e}", self.endpoint)),
        }
    }

    fn lost(&mut self, end: StreamEnd) -> String {
        match end {
            StreamEnd::ClosedByEtcd => format!("{}: {}", self.endpoint, StreamEnd::CLOSED),
            StreamEnd::Failed(e) => format!("{}: watch: {e}", self.endpoint),
        }
    }
}

/// A connection error as one line, without the advice about `--endpoints` that fits the
/// main cluster (this one comes from kube-apiserver's `--etcd-servers-overrides`).
fn down_text(e: super::ConnectError) -> String {
    match e {
        super::ConnectError::Unreachable {
            endpoint, detail, ..
        } => format!("cannot reach etcd at {endpoint}: {detail}"),
        e => e.to_string(),
    }
}
