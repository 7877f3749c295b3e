//! Lists: from the watch cache (after waiting for it to be fresh enough) or from etcd, as
//! kube-apiserver chooses by `resourceVersion` and `resourceVersionMatch`.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;
use etcd_client::GetOptions;
use serde_json::Value;

use super::cacher::{is_compacted, wait_for_revision, FRESHNESS_WAIT};
use super::resources::ResourceInfo;
use super::state::{namespace_of, object_json, Shared};
use super::status::{expired, json_response, not_found_path, status_response, too_large};
use crate::model::prefix_end;

fn list_body(info: &ResourceInfo, revision: i64, items: &[Arc<str>]) -> String {
    let kind = if info.kind.is_empty() {
        "List".to_string()
    } else {
        format!("{}List", info.kind)
    };
    let mut out = format!(
        "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{{\"resourceVersion\":\"{revision}\"}},\"items\":[",
        Value::String(kind),
        Value::String(info.api_version())
    );
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item);
    }
    out.push_str("]}");
    out
}

/// Items and revision of one resource from the cache (optionally one namespace).
fn list_from_cache(
    shared: &Shared,
    name: &str,
    namespace: Option<&str>,
) -> Option<(ResourceInfo, i64, Vec<Arc<str>>)> {
    let st = shared.cache();
    let rc = st.resources.get(name)?;
    let items = rc
        .objects
        .values()
        .filter(|o| namespace.is_none() || o.namespace.as_deref() == namespace)
        .map(|o| o.json.clone())
        .collect();
    Some((rc.info.clone(), st.revision, items))
}

async fn list_from_etcd(
    shared: &Shared,
    info: &ResourceInfo,
    namespace: Option<&str>,
    revision: i64,
) -> Response {
    match shared.list_resource(info, revision).await {
        Ok((rev, kvs)) => {
            let items: Vec<Arc<str>> = kvs
                .iter()
                .filter(|kv| {
                    namespace.is_none()
                        || namespace_of(&shared.prefix, kv.key()).as_deref() == namespace
                })
                .filter_map(|kv| object_json(kv.key(), kv.value(), kv.mod_revision()))
                .map(|(_, j)| j)
                .collect();
            json_response(StatusCode::OK, list_body(info, rev, &items))
        }
        Err(e) if is_compacted(&e) => {
            let v = expired("The resourceVersion for the provided list is too old.".into());
            json_response(StatusCode::GONE, v.to_string())
        }
        Err(e) if e.to_string().contains("future revision") => {
            let cur = shared.cache().revision;
            json_response(
                StatusCode::GATEWAY_TIMEOUT,
                too_large(revision, cur).to_string(),
            )
        }
        Err(e) => status_response(500, "InternalError", &format!("etcd: {e}"), None),
    }
}

pub(super) async fn serve_list(
    shared: &Shared,
    name: &str,
    info: &ResourceInfo,
    namespace: Option<&str>,
    rv: Option<i64>,
    exact: bool,
) -> Response {
    match rv {
        Some(n) if exact && n > 0 => list_from_etcd(shared, info, namespace, n).await,
        Some(0) => match list_from_cache(shared, name, namespace) {
            Some((info, rev, items)) => {
                json_response(StatusCode::OK, list_body(&info, rev, &items))
            }
            None => not_found_path(),
        },
        Some(n) => {
            let (cur, fresh) = wait_for_revision(shared, n, FRESHNESS_WAIT).await;
            if !fresh {
                return json_response(StatusCode::GATEWAY_TIMEOUT, too_large(n, cur).to_string());
            }
            match list_from_cache(shared, name, namespace) {
                Some((info, rev, items)) => {
                    json_response(StatusCode::OK, list_body(&info, rev, &items))
                }
                None => not_found_path(),
            }
        }
        None if !shared.progress_requests => list_from_etcd(shared, info, namespace, 0).await,
        None => {
            // Consistent read from the cache: etcd's current revision, then wait for the cache.
            let end = prefix_end(info.key_prefix.as_bytes());
            let head = shared
                .etcd_get(
                    "listWithCount",
                    (&info.group, &info.resource),
                    info.key_prefix.clone(),
                    GetOptions::new()
                        .with_range(end)
                        .with_count_only()
                        .with_limit(1),
                )
                .await
                .ok()
                .and_then(|r| r.header().map(|h| h.revision()));
            let fresh = match head {
                Some(h) => wait_for_revision(shared, h, FRESHNESS_WAIT).await.1,
                None => false,
            };
            if fresh {
                if let Some((info, rev, items)) = list_from_cache(shared, name, namespace) {
                    return json_response(StatusCode::OK, list_body(&info, rev, &items));
                }
            }
            // Fall back to etcd, as kube-apiserver does when the cache is not fresh in time.
            list_from_etcd(shared, info, namespace, 0).await
        }
    }
}
