//! Kubernetes `Status` bodies (the failures the demo apiserver answers with) and JSON
//! responses.

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::{json, Value};

pub(super) fn status_value(
    code: u16,
    reason: &str,
    message: &str,
    details: Option<Value>,
) -> Value {
    let mut v = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    if let Some(d) = details {
        v["details"] = d;
    }
    v
}

pub(super) fn json_response(code: StatusCode, body: String) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

pub(super) fn status_response(
    code: u16,
    reason: &str,
    message: &str,
    details: Option<Value>,
) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(
        status,
        status_value(code, reason, message, details).to_string(),
    )
}

pub(super) fn expired(message: String) -> Value {
    status_value(410, "Expired", &message, None)
}

pub(super) fn too_large(rv: i64, current: i64) -> Value {
    status_value(
        504,
        "Timeout",
        &format!("Too large resource version: {rv}, current: {current}"),
        Some(json!({
            "causes": [{
                "reason": "ResourceVersionTooLarge",
                "message": "Too large resource version",
            }],
            "retryAfterSeconds": 1,
        })),
    )
}

pub(super) fn not_found_path() -> Response {
    status_response(
        404,
        "NotFound",
        "the server could not find the requested resource",
        Some(json!({})),
    )
}
