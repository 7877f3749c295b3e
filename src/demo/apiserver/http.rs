//! The HTTP surface: `/metrics`, the health checks and `/version`, and get, list and watch of
//! resources under `/api` and `/apis`, each request classified for flow control and counted
//! in the request metrics.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use bytes::Bytes;
use etcd_client::GetOptions;
use serde_json::json;
use tokio::sync::mpsc;

use super::flow_control::{classify, rejected_response};
use super::kubeconfig::KUBECONFIG_CONTEXT;
use super::list::serve_list;
use super::metrics::render_metrics;
use super::request_metrics::RequestLabels;
use super::resources::ResourceInfo;
use super::state::{object_json, Shared};
use super::status::{json_response, not_found_path, status_response};
use super::version::{platform, DEMO_GIT_VERSION};
use super::watch::{run_watch, WatchSpec, DEFAULT_WATCH_TIMEOUT, WATCH_CHANNEL};
use crate::model::kubernetes::qualified_name;

async fn serve_non_resource(shared: &Arc<Shared>, path: &str, headers: &HeaderMap) -> Response {
    let started = Instant::now();
    let labels = RequestLabels::non_resource(path);
    let seat = match shared.apf.acquire(classify(path, headers)).await {
        Ok(s) => s,
        Err(reason) => {
            shared.record_request(labels, 429, started.elapsed());
            return rejected_response(reason);
        }
    };
    let resp = match path {
        "/metrics" => {
            let body = render_metrics(shared).await;
            let mut r = Response::new(Body::from(body));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            );
            r
        }
        "/version" => json_response(
            StatusCode::OK,
            json!({
                "major": "1",
                "minor": "34",
                "gitVersion": DEMO_GIT_VERSION,
                "gitCommit": "",
                "gitTreeState": "",
                "buildDate": "",
                "goVersion": "",
                "compiler": "rustc",
                "platform": platform(),
            })
            .to_string(),
        ),
        _ => Response::new(Body::from("ok")),
    };
    drop(seat);
    shared.record_request(labels, resp.status().as_u16(), started.elapsed());
    resp
}

pub(super) async fn metrics_handler(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
) -> Response {
    serve_non_resource(&shared, "/metrics", &headers).await
}

pub(super) async fn healthz(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    serve_non_resource(&shared, "/healthz", &headers).await
}

pub(super) async fn livez(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    serve_non_resource(&shared, "/livez", &headers).await
}

pub(super) async fn readyz(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    serve_non_resource(&shared, "/readyz", &headers).await
}

pub(super) async fn version(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    serve_non_resource(&shared, "/version", &headers).await
}

/// A parsed resource request path.
#[derive(Debug)]
struct Target {
    group: String,
    version: String,
    resource: String,
    namespace: Option<String>,
    name: Option<String>,
}

fn parse_target(path: &str) -> Option<Target> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    let (resource, namespace, name) = match rest {
        [r] => (*r, None, None),
        ["namespaces", ns, r] => (*r, Some(*ns), None),
        ["namespaces", ns, r, n] => (*r, Some(*ns), Some(*n)),
        [r, n] => (*r, None, Some(*n)),
        _ => return None,
    };
    if resource.is_empty() || name.is_some_and(str::is_empty) {
        return None;
    }
    Some(Target {
        group: group.to_string(),
        version: version.to_string(),
        resource: resource.to_string(),
        namespace: namespace.map(str::to_string),
        name: name.map(str::to_string),
    })
}

fn flag(q: &HashMap<String, String>, name: &str) -> bool {
    q.get(name)
        .is_some_and(|v| matches!(v.as_str(), "1" | "true" | "True"))
}

pub(super) async fn api_handler(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let started = Instant::now();
    let path = uri.path().to_string();
    let Some(t) = parse_target(&path) else {
        return not_found_path();
    };
    let name = qualified_name(&t.group, &t.resource);
    let info = {
        let st = shared.cache();
        st.resources.get(&name).map(|rc| rc.info.clone())
    };
    let Some(info) = info else {
        return not_found_path();
    };
    if !info.version.is_empty() && info.version != t.version {
        return not_found_path();
    }
    if t.namespace.is_some() && !info.namespaced {
        return not_found_path();
    }
    let watch = flag(&q, "watch");
    let (verb, scope) = match (&t.name, watch, &t.namespace) {
        (Some(_), _, _) => ("GET", "resource"),
        (None, true, Some(_)) => ("WATCH", "namespace"),
        (None, true, None) => ("WATCH", "cluster"),
        (None, false, Some(_)) => ("LIST", "namespace"),
        (None, false, None) => ("LIST", "cluster"),
    };
    let labels = RequestLabels {
        verb,
        group: info.group.clone(),
        version: t.version.clone(),
        resource: info.resource.clone(),
        subresource: String::new(),
        scope,
        component: "apiserver",
    };
    if method != Method::GET {
        let resp = status_response(
            405,
            "MethodNotAllowed",
            "the demo apiserver is read-only: only GET (get, list, watch) is served",
            None,
        );
        shared.record_request(labels, 405, started.elapsed());
        return resp;
    }
    if info.group.is_empty() && info.resource == "secrets" {
        let scope_text = match &t.namespace {
            Some(ns) => format!("in the namespace \"{ns}\""),
            None => "at the cluster scope".to_string(),
        };
        let resp = status_response(
            403,
            "Forbidden",
            &format!(
                "secrets is forbidden: User \"{KUBECONFIG_CONTEXT}\" cannot {} resource \"secrets\" in API group \"\" {scope_text}: the regscope demo apiserver does not serve Secrets",
                verb.to_lowercase()
            ),
            Some(json!({"kind": "secrets"})),
        );
        shared.record_request(labels, 403, started.elapsed());
        return resp;
    }
    let rv = match q.get("resourceVersion").map(String::as_str) {
        None | Some("") => None,
        Some(s) => {
            match s.parse::<i64>() {
                Ok(n) if n >= 0 => Some(n),
                _ => {
                    let resp = status_response(
                    400,
                    "BadRequest",
                    &format!("resourceVersion: Invalid value: \"{s}\": must be a non-negative integer"),
                    None,
                );
                    shared.record_request(labels, 400, started.elapsed());
                    return resp;
                }
            }
        }
    };
    let seat = match shared.apf.acquire(classify(&path, &headers)).await {
        Ok(s) => s,
        Err(reason) => {
            shared.record_request(labels, 429, started.elapsed());
            return rejected_response(reason);
        }
    };
    match verb {
        "WATCH" => {
            // Like kube-apiserver, an absent or zero timeoutSeconds means its own default.
            let timeout = q
                .get("timeoutSeconds")
                .and_then(|s| s.parse::<u64>().ok())
                .filter(|s| *s > 0)
                .map_or(DEFAULT_WATCH_TIMEOUT, Duration::from_secs);
            let slow = shared.cfg.slow_watcher.as_ref().and_then(|s| {
                (s.resource == name && !shared.slow_claimed.swap(true, Ordering::SeqCst))
                    .then_some(s.delay_per_event)
            });
            let spec = WatchSpec {
                name,
                namespace: t.namespace,
                rv,
                bookmarks: flag(&q, "allowWatchBookmarks"),
                initial_events_end: flag(&q, "sendInitialEvents"),
                timeout,
                slow,
            };
            let (tx, mut rx) = mpsc::channel::<Bytes>(WATCH_CHANNEL);
            let shared2 = shared.clone();
            tokio::spawn(async move {
                run_watch(&shared2, spec, tx, seat).await;
                shared2.record_request(labels, 200, started.elapsed());
            });
            let stream = futures::stream::poll_fn(move |cx| {
                rx.poll_recv(cx).map(|o| o.map(Ok::<Bytes, Infallible>))
            });
            let mut resp = Response::new(Body::from_stream(stream));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            resp
        }
        "GET" => {
            let resp = serve_get(&shared, &info, &t).await;
            drop(seat);
            shared.record_request(labels, resp.status().as_u16(), started.elapsed());
            resp
        }
        _ => {
            let exact = q.get("resourceVersionMatch").map(String::as_str) == Some("Exact");
            let resp = serve_list(&shared, &name, &info, t.namespace.as_deref(), rv, exact).await;
            drop(seat);
            shared.record_request(labels, resp.status().as_u16(), started.elapsed());
            resp
        }
    }
}

async fn serve_get(shared: &Shared, info: &ResourceInfo, t: &Target) -> Response {
    let name = t.name.as_deref().unwrap_or_default();
    let key = match &t.namespace {
        Some(ns) => format!("{}{ns}/{name}", info.key_prefix),
        None => format!("{}{name}", info.key_prefix),
    };
    match shared
        .etcd_get(
            "get",
            (&info.group, &info.resource),
            key.clone(),
            GetOptions::new(),
        )
        .await
    {
        Ok(resp) => match resp.kvs().first() {
            Some(kv) => match object_json(kv.key(), kv.value(), kv.mod_revision()) {
                Some((_, json)) => json_response(StatusCode::OK, json.to_string()),
                None => status_response(
                    500,
                    "InternalError",
                    &format!("unable to decode {key}"),
                    None,
                ),
            },
            None => status_response(
                404,
                "NotFound",
                &format!("{} \"{name}\" not found", info.name()),
                Some(json!({"name": name, "group": info.group, "kind": info.resource})),
            ),
        },
        Err(e) => status_response(500, "InternalError", &format!("etcd: {e}"), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let t = parse_target("/api/v1/pods").unwrap();
        assert_eq!((t.group.as_str(), t.resource.as_str()), ("", "pods"));
        let t = parse_target("/apis/apps/v1/namespaces/shop/deployments/web").unwrap();
        assert_eq!(t.group, "apps");
        assert_eq!(t.namespace.as_deref(), Some("shop"));
        assert_eq!(t.name.as_deref(), Some("web"));
        let t = parse_target("/api/v1/namespaces/shop").unwrap();
        assert_eq!(t.resource, "namespaces");
        assert_eq!(t.name.as_deref(), Some("shop"));
        assert!(parse_target("/apis/apps").is_none());
        assert!(parse_target("/api/v1/pods/a/b/c").is_none());
    }
}
