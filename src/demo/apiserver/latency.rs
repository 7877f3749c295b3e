//! Storage latencies: kube-apiserver's `etcd_request_duration_seconds` histograms (and the
//! request and error counters beside them), fed by the simulation's writes and the demo
//! apiserver's own reads, and the histogram type the request metrics share.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

use super::lock::lock;
use super::text_format::{esc, family, fmt_f64};

/// Upper bounds (seconds) of the buckets of `etcd_request_duration_seconds` and
/// `apiserver_request_duration_seconds`, as kube-apiserver 1.34 declares them.
pub const LATENCY_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// A Prometheus-style histogram over [`LATENCY_BUCKETS`] (per-bucket counts, made cumulative
/// when rendered).
#[derive(Debug, Clone, Default)]
pub(super) struct Histogram {
    buckets: [u64; LATENCY_BUCKETS.len()],
    sum: f64,
    count: u64,
}

impl Histogram {
    pub(super) fn observe(&mut self, seconds: f64) {
        let seconds = if seconds.is_finite() {
            seconds.max(0.0)
        } else {
            0.0
        };
        if let Some(i) = LATENCY_BUCKETS.iter().position(|b| seconds <= *b) {
            self.buckets[i] += 1;
        }
        self.sum += seconds;
        self.count += 1;
    }

    /// `_bucket`, `_sum` and `_count` lines; `labels` is the rendered label list without braces.
    pub(super) fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        for (bound, n) in LATENCY_BUCKETS.iter().zip(self.buckets) {
            cumulative += n;
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels},le=\"{}\"}} {cumulative}",
                fmt_f64(*bound)
            );
        }
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", fmt_f64(self.sum));
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count);
    }
}

#[derive(Debug, Clone, Default)]
struct EtcdOp {
    latency: Histogram,
    errors: u64,
}

/// Storage latencies measured by the simulation around its real etcd calls (and by the demo
/// apiserver around its own reads), as Prometheus-style cumulative histograms keyed by
/// `(operation, group, resource)`: kube-apiserver's `etcd_request_duration_seconds`,
/// `etcd_requests_total` and `etcd_request_errors_total` (1.34 labels). Thread-safe; share it
/// in an `Arc` between [`crate::demo::SimConfig::latencies`] and
/// [`DemoApiserver::start`](super::DemoApiserver::start).
#[derive(Debug, Default)]
pub struct StorageLatencies {
    ops: Mutex<BTreeMap<(String, String, String), EtcdOp>>,
}

/// One `(operation, group, resource)` row of [`StorageLatencies::snapshot`].
#[derive(Debug, Clone, PartialEq)]
pub struct StorageLatency {
    /// `create`, `update`, `delete`, `get`, `list`, `listWithCount`.
    pub operation: String,
    /// API group, `""` for the core group.
    pub group: String,
    /// Resource, e.g. `pods`, `leases`.
    pub resource: String,
    /// Requests observed (failed ones included, as kube-apiserver counts them).
    pub count: u64,
    /// Total elapsed seconds.
    pub sum_seconds: f64,
    /// Requests that returned an error.
    pub errors: u64,
}

impl StorageLatencies {
    /// An empty set of histograms.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one etcd request: `operation` (`create`, `update`, `delete`, `get`, `list`,
    /// `listWithCount`), the API `group` (`""` = core) and `resource` of the key, its elapsed
    /// wall-clock time in `seconds`, and whether it failed. Like kube-apiserver's
    /// `RecordEtcdRequest`, the latency and request count include failed requests; `error`
    /// also counts it in `etcd_request_errors_total`.
    pub fn observe(&self, operation: &str, group: &str, resource: &str, seconds: f64, error: bool) {
        let mut ops = lock(&self.ops);
        let op = ops
            .entry((
                operation.to_string(),
                group.to_string(),
                resource.to_string(),
            ))
            .or_default();
        op.latency.observe(seconds);
        if error {
            op.errors += 1;
        }
    }

    /// Requests observed so far for `(operation, group, resource)`.
    pub fn count(&self, operation: &str, group: &str, resource: &str) -> u64 {
        lock(&self.ops)
            .get(&(
                operation.to_string(),
                group.to_string(),
                resource.to_string(),
            ))
            .map_or(0, |o| o.latency.count)
    }

    /// Every row observed so far, ordered by operation, group, resource.
    pub fn snapshot(&self) -> Vec<StorageLatency> {
        lock(&self.ops)
            .iter()
            .map(|((operation, group, resource), o)| StorageLatency {
                operation: operation.clone(),
                group: group.clone(),
                resource: resource.clone(),
                count: o.latency.count,
                sum_seconds: o.latency.sum,
                errors: o.errors,
            })
            .collect()
    }

    pub(super) fn render(&self, out: &mut String) {
        let ops = lock(&self.ops).clone();
        family(
            out,
            "etcd_request_duration_seconds",
            "[ALPHA] Etcd request latency in seconds for each operation and object type.",
            "histogram",
        );
        for ((op, group, resource), o) in &ops {
            let labels = format!(
                "group=\"{}\",operation=\"{}\",resource=\"{}\"",
                esc(group),
                esc(op),
                esc(resource)
            );
            o.latency
                .render(out, "etcd_request_duration_seconds", &labels);
        }
        family(
            out,
            "etcd_requests_total",
            "[ALPHA] Etcd request counts for each operation and object type.",
            "counter",
        );
        for ((op, group, resource), o) in &ops {
            let _ = writeln!(
                out,
                "etcd_requests_total{{group=\"{}\",operation=\"{}\",resource=\"{}\"}} {}",
                esc(group),
                esc(op),
                esc(resource),
                o.latency.count
            );
        }
        family(
            out,
            "etcd_request_errors_total",
            "[ALPHA] Etcd failed request counts for each operation and object type.",
            "counter",
        );
        for ((op, group, resource), o) in &ops {
            let _ = writeln!(
                out,
                "etcd_request_errors_total{{group=\"{}\",operation=\"{}\",resource=\"{}\"}} {}",
                esc(group),
                esc(op),
                esc(resource),
                o.errors
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_cumulative() {
        let mut h = Histogram::default();
        h.observe(0.001);
        h.observe(0.03);
        h.observe(100.0);
        let mut out = String::new();
        h.render(&mut out, "x", "a=\"b\"");
        assert!(out.contains("x_bucket{a=\"b\",le=\"0.005\"} 1\n"), "{out}");
        assert!(out.contains("x_bucket{a=\"b\",le=\"0.05\"} 2\n"), "{out}");
        assert!(out.contains("x_bucket{a=\"b\",le=\"60\"} 2\n"), "{out}");
        assert!(out.contains("x_bucket{a=\"b\",le=\"+Inf\"} 3\n"), "{out}");
        assert!(out.contains("x_count{a=\"b\"} 3\n"), "{out}");
    }
}
