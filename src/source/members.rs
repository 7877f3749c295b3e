//! The members of the etcd cluster, polled beside the watch: etcd's `Cluster.MemberList`
//! from any endpoint that answers, then each member's own `Maintenance.Status` (leader,
//! raft term and index, db size, alarms) through a connection to that member, every
//! [`SyncOptions::status_interval`]. One [`Observation::Members`] per poll; a member that
//! does not answer within the timeout is a row with its error, not a missing row.
//!
//! Read-only: MemberList and Status are the calls `etcdctl member list` and
//! `etcdctl endpoint status` make. Connections are kept between polls (one per member,
//! dropped when it fails), so a poll costs one small RPC per member.

use std::collections::HashMap;
use std::time::Duration;

use etcd_client::Client;

use super::connect::{etcd_status, short_detail, EtcdOptions};
use super::sync::{Emitter, SyncOptions};
use crate::model::{MemberStatus, Observation};

/// Longest wait for one member's connection or answer: a stopped member costs one
/// poll at most this much, not the request timeout.
const MEMBER_TIMEOUT: Duration = Duration::from_secs(2);

/// Polls until the consumer is gone (see the module docs).
pub(super) async fn poll(etcd: EtcdOptions, sync: SyncOptions, out: Emitter) {
    let timeout = sync.request_timeout.min(MEMBER_TIMEOUT);
    let mut clients: HashMap<String, Client> = HashMap::new();
    let mut known: Vec<Listed> = Vec::new();
    let mut ticker = tokio::time::interval(sync.status_interval.max(Duration::from_millis(100)));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        if out.closed() {
            return;
        }
        let Some(rows) = poll_once(&etcd, &mut clients, &mut known, timeout).await else {
            continue;
        };
        if !out.send(Observation::Members(rows)).await {
            return;
        }
    }
}

/// Every member with its Status answer, once, for a one-shot command (`snapshot`): `None`
/// when no endpoint answers the member list. Bounded by about two seconds per member.
pub async fn members_once(etcd: &EtcdOptions, timeout: Duration) -> Option<Vec<MemberStatus>> {
    let timeout = timeout.min(MEMBER_TIMEOUT);
    poll_once(etcd, &mut HashMap::new(), &mut Vec::new(), timeout).await
}

/// (ID, name, client URLs, learner) of one member as the member list gave it.
type Listed = (u64, String, Vec<String>, bool);

/// One poll: the member list (or, when no endpoint answers it, the members `known` from
/// the last list, so that their rows say they do not answer rather than keep their last
/// answer), then each member's Status. `None` before any list was read.
async fn poll_once(
    etcd: &EtcdOptions,
    clients: &mut HashMap<String, Client>,
    known: &mut Vec<Listed>,
    timeout: Duration,
) -> Option<Vec<MemberStatus>> {
    if let Some(list) = member_list(etcd, clients, timeout).await {
        *known = list;
    } else if known.is_empty() {
        return None;
    }
    let mut rows = Vec::with_capacity(known.len());
    for (id, name, urls, is_learner) in known.iter() {
        let endpoint = etcd
            .client_url(urls)
            .or(urls.first())
            .cloned()
            .unwrap_or_default();
        let (status, error) = if endpoint.is_empty() {
            (
                None,
                Some("no client URL (a member added but not started?)".into()),
            )
        } else {
            match status_of(etcd, clients, &endpoint, timeout).await {
                Ok(s) => (Some(s), None),
                Err(e) => (None, Some(e)),
            }
        };
        rows.push(MemberStatus {
            id: *id,
            name: name.clone(),
            endpoint,
            is_learner: *is_learner,
            status,
            error,
        });
    }
    Some(rows)
}

/// Every member as the member list gives it, from the first endpoint given that answers;
/// `None` when none does.
async fn member_list(
    etcd: &EtcdOptions,
    clients: &mut HashMap<String, Client>,
    timeout: Duration,
) -> Option<Vec<Listed>> {
    for endpoint in &etcd.endpoints {
        let Ok(client) = client_for(etcd, clients, endpoint, timeout).await else {
            continue;
        };
        match tokio::time::timeout(timeout, client.member_list()).await {
            Ok(Ok(list)) => {
                return Some(
                    list.members()
                        .iter()
                        .map(|m| {
                            (
                                m.id(),
                                m.name().to_string(),
                                m.client_urls().to_vec(),
                                m.is_learner(),
                            )
                        })
                        .collect(),
                )
            }
            _ => {
                clients.remove(endpoint);
            }
        }
    }
    None
}

/// `endpoint`'s Status answer, or why there is none.
async fn status_of(
    etcd: &EtcdOptions,
    clients: &mut HashMap<String, Client>,
    endpoint: &str,
    timeout: Duration,
) -> Result<crate::model::EtcdStatus, String> {
    let client = client_for(etcd, clients, endpoint, timeout).await?;
    let answer = match tokio::time::timeout(timeout, client.status()).await {
        Ok(Ok(s)) => Ok(etcd_status(endpoint, &s)),
        Ok(Err(e)) => Err(short_detail(&e)),
        Err(_) => Err(format!("no answer within {} s", timeout.as_secs_f64())),
    };
    if answer.is_err() {
        clients.remove(endpoint);
    }
    answer
}

/// The kept connection to `endpoint`, made (with the TLS and auth options given) when
/// there is none.
async fn client_for<'a>(
    etcd: &EtcdOptions,
    clients: &'a mut HashMap<String, Client>,
    endpoint: &str,
    timeout: Duration,
) -> Result<&'a mut Client, String> {
    if !clients.contains_key(endpoint) {
        let one = EtcdOptions {
            endpoints: vec![endpoint.to_string()],
            ..etcd.clone()
        };
        let c = one.connect(timeout).await.map_err(|e| e.to_string())?;
        clients.insert(endpoint.to_string(), c.0);
    }
    clients
        .get_mut(endpoint)
        .ok_or_else(|| "no connection".to_string())
}
