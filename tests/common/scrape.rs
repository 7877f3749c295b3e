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

pub fn body_of(o: &ScrapeOutcome) -> &[u8] {
    match o {
        ScrapeOutcome::Body { body, .. } => body,
        ScrapeOutcome::Failed { error, .. } => panic!("expected a body, got: {error}"),
    }
}
