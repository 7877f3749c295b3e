//! Helpers shared by the scrape-source tests of both binaries: the TLS provider, a hard
//! bound on a test body, and the body of a scrape outcome.
#![allow(dead_code)]

use std::time::Duration;

use regscope::model::ScrapeOutcome;

pub fn init() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Runs a test body with a hard bound.
pub async fn bounded<F: std::future::Future<Output = ()>>(secs: u64, f: F) {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .expect("test timed out");
}

/// Awaits `f`, failing the test naming `what` if it has not ended after `limit`. A hang
/// guard (set at about ten times what `f` should take), not a performance claim: it only
/// turns a wait that never ends into a failure.
pub async fn hang_guard<T>(
    what: &str,
    limit: Duration,
    f: impl std::future::Future<Output = T>,
) -> T {
    tokio::time::timeout(limit, f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not end within {limit:?} (a hang guard)"))
}

pub fn body_of(o: &ScrapeOutcome) -> &[u8] {
    match o {
        ScrapeOutcome::Body { body, .. } => body,
        ScrapeOutcome::Failed { error, .. } => panic!("expected a body, got: {error}"),
    }
}
