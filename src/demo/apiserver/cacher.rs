//! The cacher: the initial list of every resource at one revision, the one etcd watch on the
//! prefix that keeps the cache current, relists after compaction, and waiting for the cache
//! to reach a revision.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{EventType, GetOptions, WatchOptions};
use serde_json::Value;
use tokio::sync::mpsc;

use super::resources::ResourceInfo;
use super::state::{namespace_of, object_json, stopped, Shared};
use super::watch_cache::{CachedEvent, CachedObject, ResourceCache};
use crate::demo::etcd_server::DemoError;
use crate::model::{prefix_end, BUILTIN_RESOURCES};

/// How long a list or watch waits for the cache to reach a requested resourceVersion before
/// answering "Too large resource version" (the cacher's `blockTimeout`, 3 s).
pub(super) const FRESHNESS_WAIT: Duration = Duration::from_secs(3);

/// Lists every resource (the built-ins and those found under the prefix) at one revision.
pub(super) async fn load_all(
    shared: &Shared,
) -> Result<(i64, Vec<(ResourceInfo, BTreeMap<Vec<u8>, CachedObject>)>), DemoError> {
    // Which resources exist: one keys-only range over the prefix, at the revision all lists
    // then read at (the apiserver knows its resources from its API; here they are found).
    let root = format!("{}/", shared.prefix);
    let mut client = shared.client.clone();
    let resp = client
        .get(
            root.clone(),
            Some(
                GetOptions::new()
                    .with_range(prefix_end(root.as_bytes()))
                    .with_keys_only(),
            ),
        )
        .await?;
    let revision = resp.header().map_or(0, |h| h.revision());
    let mut infos: BTreeMap<String, ResourceInfo> = builtin_infos(&shared.prefix);
    for kv in resp.kvs() {
        if let Some(info) = ResourceInfo::for_key(&shared.prefix, kv.key()) {
            match infos.get_mut(&info.name()) {
                // Keys decide where a built-in lives (`nodes/` rather than `minions/`).
                Some(known) => {
                    if known.key_prefix != info.key_prefix
                        && !kv.key().starts_with(known.key_prefix.as_bytes())
                    {
                        known.key_prefix = info.key_prefix;
                    }
                }
                None => {
                    infos.insert(info.name(), info);
                }
            }
        }
    }
    let mut out = Vec::new();
    for (_, info) in infos {
        let (_, kvs) = shared.list_resource(&info, revision).await?;
        let mut objects = BTreeMap::new();
        for kv in kvs {
            if let Some((_, json)) = object_json(kv.key(), kv.value(), kv.mod_revision()) {
                objects.insert(
                    kv.key().to_vec(),
                    CachedObject {
                        namespace: namespace_of(&shared.prefix, kv.key()),
                        json,
                    },
                );
            }
        }
        out.push((info, objects));
    }
    Ok((revision, out))
}

/// A watch cache for every built-in resource at start (also those with no keys yet), as
/// kube-apiserver has for every resource it serves.
fn builtin_infos(prefix: &str) -> BTreeMap<String, ResourceInfo> {
    BUILTIN_RESOURCES
        .iter()
        .map(|b| {
            let info = ResourceInfo::for_builtin(prefix, b);
            (info.name(), info)
        })
        .collect()
}

/// Installs a (re)list into the cache.
pub(super) fn install(
    shared: &Shared,
    revision: i64,
    lists: Vec<(ResourceInfo, BTreeMap<Vec<u8>, CachedObject>)>,
    initial: bool,
) {
    let mut st = shared.cache();
    if !initial {
        // Resources whose keys are all gone now hold nothing.
        let listed: std::collections::BTreeSet<String> =
            lists.iter().map(|(info, _)| info.name()).collect();
        for (name, rc) in st.resources.iter_mut() {
            if !listed.contains(name) {
                rc.replace(BTreeMap::new(), revision);
            }
        }
    }
    for (info, objects) in lists {
        let name = info.name();
        let mut learned = Vec::new();
        if info.kind.is_empty() || info.version.is_empty() {
            learned = objects
                .values()
                .take(1)
                .filter_map(|o| serde_json::from_str::<Value>(&o.json).ok())
                .collect();
        }
        match st.resources.get_mut(&name) {
            Some(rc) if !initial => rc.replace(objects, revision),
            _ => {
                let mut rc = ResourceCache::new(info, revision);
                rc.objects = objects;
                st.resources.insert(name.clone(), rc);
            }
        }
        if let Some(rc) = st.resources.get_mut(&name) {
            for v in &learned {
                rc.learn(v);
            }
        }
    }
    st.revision = st.revision.max(revision);
    drop(st);
    shared.changed.send_modify(|v| *v += 1);
}

/// Applies one batch of etcd watch events.
fn apply_events(shared: &Shared, events: &[etcd_client::Event]) {
    struct Decoded {
        key: Vec<u8>,
        revision: i64,
        put: Option<(Value, Arc<str>)>,
        deleted: bool,
    }
    // Decode outside the lock.
    let decoded: Vec<Decoded> = events
        .iter()
        .filter_map(|ev| {
            let kv = ev.kv()?;
            let deleted = matches!(ev.event_type(), EventType::Delete);
            let put = if deleted {
                None
            } else {
                Some(object_json(kv.key(), kv.value(), kv.mod_revision())?)
            };
            Some(Decoded {
                key: kv.key().to_vec(),
                revision: kv.mod_revision(),
                put,
                deleted,
            })
        })
        .collect();
    let capacity = shared.cfg.watch_cache_capacity;
    let mut st = shared.cache();
    let mut last_rev = st.revision;
    for d in decoded {
        last_rev = last_rev.max(d.revision);
        let Some(info) = ResourceInfo::for_key(&shared.prefix, &d.key) else {
            continue;
        };
        let name = info.name();
        let rc = st.resources.entry(name).or_insert_with(|| {
            // A resource seen for the first time: its cache starts empty just before it.
            ResourceCache::new(info, d.revision - 1)
        });
        let namespace = namespace_of(&shared.prefix, &d.key);
        if let Some((value, json)) = d.put {
            rc.learn(&value);
            let existed = rc
                .objects
                .insert(
                    d.key.clone(),
                    CachedObject {
                        namespace: namespace.clone(),
                        json: json.clone(),
                    },
                )
                .is_some();
            rc.push(
                CachedEvent {
                    kind: if existed { "MODIFIED" } else { "ADDED" },
                    revision: d.revision,
                    namespace,
                    object: json,
                },
                capacity,
            );
        } else if d.deleted {
            let Some(prev) = rc.objects.remove(&d.key) else {
                continue;
            };
            // The last state, with the deletion's revision as its resourceVersion.
            let object: Arc<str> = match serde_json::from_str::<Value>(&prev.json) {
                Ok(mut v) => {
                    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                        m.insert(
                            "resourceVersion".to_string(),
                            Value::String(d.revision.to_string()),
                        );
                    }
                    Arc::from(v.to_string())
                }
                Err(_) => prev.json.clone(),
            };
            rc.push(
                CachedEvent {
                    kind: "DELETED",
                    revision: d.revision,
                    namespace,
                    object,
                },
                capacity,
            );
        }
    }
    st.revision = last_rev;
    drop(st);
    shared.changed.send_modify(|v| *v += 1);
}

pub(super) fn is_compacted(e: &etcd_client::Error) -> bool {
    e.to_string().contains("compacted")
}

/// The reflector: one etcd watch on the prefix from the cache's revision, reopened after
/// errors; relists when etcd says the revision was compacted.
pub(super) async fn run_cacher(shared: Arc<Shared>, mut progress_rx: mpsc::Receiver<()>) {
    let mut stop = shared.stop.clone();
    let root = format!("{}/", shared.prefix);
    let mut backoff = Duration::from_millis(100);
    loop {
        if *stop.borrow() {
            return;
        }
        let from = shared.cache().revision + 1;
        let mut client = shared.client.clone();
        let opts = WatchOptions::new()
            .with_range(prefix_end(root.as_bytes()))
            .with_start_revision(from)
            .with_progress_notify();
        let stream = tokio::select! {
            () = stopped(&mut stop) => return,
            r = client.watch(root.clone(), Some(opts)) => r,
        };
        let (mut sender, mut stream) = match stream {
            Ok(s) => s.split(),
            Err(e) => {
                tracing::debug!("demo apiserver: watch: {e}");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(2));
                continue;
            }
        };
        let mut tick =
            tokio::time::interval(shared.cfg.bookmark_interval.max(Duration::from_millis(10)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let relist = loop {
            tokio::select! {
                () = stopped(&mut stop) => return,
                Some(()) = progress_rx.recv() => {
                    if shared.progress_requests {
                        let _ = sender.request_progress().await;
                    }
                }
                _ = tick.tick() => {
                    if shared.progress_requests {
                        let _ = sender.request_progress().await;
                    }
                }
                msg = stream.message() => match msg {
                    Ok(Some(resp)) => {
                        backoff = Duration::from_millis(100);
                        if resp.canceled() {
                            break resp.compact_revision() > 0
                                || resp.cancel_reason().contains("compacted");
                        }
                        if resp.compact_revision() > 0 {
                            break true;
                        }
                        if !resp.events().is_empty() {
                            apply_events(&shared, resp.events());
                        } else if !resp.created() {
                            // A progress notification: everything up to the header's
                            // revision has been delivered.
                            if let Some(h) = resp.header() {
                                let mut st = shared.cache();
                                if h.revision() > st.revision {
                                    st.revision = h.revision();
                                    drop(st);
                                    shared.changed.send_modify(|v| *v += 1);
                                }
                            }
                        }
                    }
                    Ok(None) => break false,
                    Err(e) => {
                        tracing::debug!("demo apiserver: watch stream: {e}");
                        break is_compacted(&e);
                    }
                }
            }
        };
        if relist {
            match load_all(&shared).await {
                Ok((rev, lists)) => install(&shared, rev, lists, false),
                Err(e) => tracing::debug!("demo apiserver: relist: {e}"),
            }
        } else {
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    }
}

/// Whether an etcd of `version` (`3.4.23`) sends requested progress notifications in order
/// with the watch's events (etcd-io/etcd#15220, fixed by #15237 and follow-ups). Like
/// kube-apiserver's feature-support checker for `RequestWatchProgress`: 3.4.31+, 3.5.13+,
/// 3.6 and later.
pub(super) fn progress_requests_ordered(version: &str) -> bool {
    let v: Vec<u64> = version
        .split(['.', '-', '+'])
        .take(3)
        .map(|p| p.parse().unwrap_or(0))
        .collect();
    match v.as_slice() {
        [3, 4, patch] => *patch >= 31,
        [3, 5, patch] => *patch >= 13,
        [3, minor, ..] => *minor >= 6,
        [major, ..] => *major > 3,
        [] => false,
    }
}

/// Waits until the cache's revision reaches `rv`, asking etcd for progress when that is safe.
/// Returns the cache revision reached and whether it is at least `rv`.
pub(super) async fn wait_for_revision(shared: &Shared, rv: i64, max: Duration) -> (i64, bool) {
    let deadline = tokio::time::Instant::now() + max;
    let mut rx = shared.changed.subscribe();
    loop {
        rx.borrow_and_update();
        let cur = shared.cache().revision;
        if cur >= rv {
            return (cur, true);
        }
        let _ = shared.progress.try_send(());
        if tokio::time::timeout_at(deadline, rx.changed())
            .await
            .is_err()
        {
            let cur = shared.cache().revision;
            return (cur, cur >= rv);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_request_support_by_etcd_version() {
        assert!(!progress_requests_ordered("3.4.23"));
        assert!(progress_requests_ordered("3.4.31"));
        assert!(!progress_requests_ordered("3.5.12"));
        assert!(progress_requests_ordered("3.5.13"));
        assert!(progress_requests_ordered("3.6.0"));
        assert!(progress_requests_ordered("3.6.0-rc.1"));
        assert!(!progress_requests_ordered("3.3.27"));
        assert!(!progress_requests_ordered(""));
    }
}
