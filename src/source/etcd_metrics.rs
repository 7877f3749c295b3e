//! A light scraper of etcd's own `/metrics` (served on the client URL by etcd 3.4+, with the
//! same TLS client certificates) for the compacted revision:
//! `etcd_debugging_mvcc_compact_revision` (etcd reports -1 before the first compaction).
//!
//! It is best effort: an etcd whose metrics are not reachable (e.g. `--listen-metrics-urls`
//! elsewhere) just contributes nothing, and the first failure is reported once as a note.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::connect::EtcdOptions;
use crate::model::{Observation, Revision, Stamped};

/// etcd's gauge for the revision of the last compaction (etcd server mvcc metrics).
pub const COMPACT_REVISION_METRIC: &str = "etcd_debugging_mvcc_compact_revision";

/// Finds the value of an unlabelled gauge in Prometheus text exposition.
pub fn gauge_value(text: &str, name: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let rest = l.strip_prefix(name)?;
        // Exactly this metric (not a longer name), no labels or empty labels.
        let rest = rest.strip_prefix("{}").unwrap_or(rest);
        if !rest.starts_with([' ', '\t']) {
            return None;
        }
        rest.split_whitespace().next()?.parse::<f64>().ok()
    })
}

/// The compacted revision from a metrics page, `None` before the first compaction.
pub fn compact_revision(text: &str) -> Option<Revision> {
    gauge_value(text, COMPACT_REVISION_METRIC)
        .filter(|v| *v > 0.0)
        .map(|v| v as Revision)
}

fn client_for(opts: &EtcdOptions) -> Result<reqwest::Client, String> {
    let mut b = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .connect_timeout(Duration::from_secs(3));
    if let Some(ca) = &opts.cacert {
        let pem = std::fs::read(ca).map_err(|e| format!("read {}: {e}", ca.display()))?;
        let cert = reqwest::Certificate::from_pem(&pem).map_err(|e| e.to_string())?;
        b = b.tls_certs_only([cert]);
    }
    if let (Some(c), Some(k)) = (&opts.cert, &opts.key) {
        let mut pem = std::fs::read(c).map_err(|e| format!("read {}: {e}", c.display()))?;
        pem.extend(std::fs::read(k).map_err(|e| format!("read {}: {e}", k.display()))?);
        b = b.identity(reqwest::Identity::from_pem(&pem).map_err(|e| e.to_string())?);
    }
    b.build().map_err(|e| e.to_string())
}

/// Scrapes `<endpoint>/metrics` every `interval` and emits `Compacted` when the gauge
/// moves. Ends when the receiver is dropped.
pub fn spawn(opts: EtcdOptions, interval: Duration, tx: mpsc::Sender<Stamped>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let Some(endpoint) = opts.endpoints.first().cloned() else {
            return;
        };
        let url = format!("{}/metrics", endpoint.trim_end_matches('/'));
        let client = match client_for(&opts) {
            Ok(c) => c,
            Err(e) => {
                let _ = tx
                    .send(Stamped::now(Observation::Note(format!(
                        "etcd metrics not scraped: {e}"
                    ))))
                    .await;
                return;
            }
        };
        let mut last: Option<Revision> = None;
        let mut warned = false;
        let mut ticker = tokio::time::interval(interval);
        loop {
            ticker.tick().await;
            if tx.is_closed() {
                return;
            }
            let text = match client.get(&url).send().await {
                Ok(r) if r.status().is_success() => r.text().await.ok(),
                Ok(r) => {
                    if !warned {
                        warned = true;
                        let _ = tx
                            .send(Stamped::now(Observation::Note(format!(
                                "etcd metrics at {url}: HTTP {}",
                                r.status()
                            ))))
                            .await;
                    }
                    None
                }
                Err(e) => {
                    if !warned {
                        warned = true;
                        let _ = tx
                            .send(Stamped::now(Observation::Note(format!(
                                "etcd metrics at {url} not reachable: {e}"
                            ))))
                            .await;
                    }
                    None
                }
            };
            if let Some(rev) = text.as_deref().and_then(compact_revision) {
                if last != Some(rev) {
                    last = Some(rev);
                    let obs = Observation::Compacted {
                        revision: rev,
                        source: "metrics",
                    };
                    if tx.send(Stamped::now(obs)).await.is_err() {
                        return;
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_gauge_from_real_captures() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/testdata/etcd-metrics"
        );
        let Ok(entries) = std::fs::read_dir(dir) else {
            eprintln!("{dir} absent; skipped");
            return;
        };
        let mut n = 0;
        for e in entries.flatten() {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            if !text.contains(COMPACT_REVISION_METRIC) {
                continue;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            if name == "etcd-3.4.23-local.txt" {
                // Captured after `compact 200` (testdata README).
                assert_eq!(compact_revision(&text), Some(200), "{name}");
            } else {
                // The minikube captures are of young clusters: -1, "no compaction yet".
                assert_eq!(gauge_value(&text, COMPACT_REVISION_METRIC), Some(-1.0));
                assert_eq!(compact_revision(&text), None, "{name}");
            }
            n += 1;
        }
        assert!(n >= 5, "captures read: {n}");
    }

    #[test]
    fn exact_name_only() {
        let t = "# HELP x\netcd_debugging_mvcc_compact_revision_total 9\netcd_debugging_mvcc_compact_revision 1234\n";
        assert_eq!(compact_revision(t), Some(1234));
    }
}
