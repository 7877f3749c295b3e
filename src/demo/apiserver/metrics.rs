//! `/metrics` in kube-apiserver 1.34's format: build info, the storage latencies, the watch
//! cache families, etcd's db size, the request metrics and the flow-control gauges.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use super::lock::lock;
use super::state::{Shared, ETCD_CALL_TIMEOUT};
use super::text_format::{esc, family};
use super::version::{platform, DEMO_GIT_VERSION};

pub(super) async fn render_metrics(shared: &Shared) -> String {
    // etcd's db size, as the apiserver's storage size monitor reads it (Status).
    let db_size = {
        let mut client = shared.client.clone();
        match tokio::time::timeout(ETCD_CALL_TIMEOUT, client.status()).await {
            Ok(Ok(s)) => Some(s.db_size()),
            _ => None,
        }
    };
    let mut out = String::with_capacity(64 * 1024);
    family(
        &mut out,
        "kubernetes_build_info",
        "[ALPHA] A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.",
        "gauge",
    );
    let _ = writeln!(
        out,
        "kubernetes_build_info{{build_date=\"\",compiler=\"rustc\",git_commit=\"\",git_tree_state=\"\",git_version=\"{DEMO_GIT_VERSION}\",go_version=\"\",major=\"1\",minor=\"34\",platform=\"{}\"}} 1",
        platform()
    );

    shared.latencies.render(&mut out);

    struct Row {
        group: String,
        resource: String,
        received: u64,
        dispatched: u64,
        initializations: u64,
        terminated: u64,
        objects: usize,
    }
    let (revision, rows) = {
        let st = shared.cache();
        let rows: Vec<Row> = st
            .resources
            .values()
            .map(|rc| Row {
                group: rc.info.group.clone(),
                resource: rc.info.resource.clone(),
                received: rc.received,
                dispatched: rc.counters.dispatched.load(Ordering::Relaxed),
                initializations: rc.initializations,
                terminated: rc.counters.terminated.load(Ordering::Relaxed),
                objects: rc.objects.len(),
            })
            .collect();
        (st.revision, rows)
    };
    let gr = |r: &Row| {
        format!(
            "group=\"{}\",resource=\"{}\"",
            esc(&r.group),
            esc(&r.resource)
        )
    };
    let capacity = shared.cfg.watch_cache_capacity.max(1);
    /// Family name, help, type, and the value of a resource's row.
    type PerResource<'a> = (&'a str, &'a str, &'a str, &'a dyn Fn(&Row) -> String);
    let per_resource: [PerResource<'_>; 7] = [
        (
            "watch_cache_capacity",
            "[ALPHA] Total capacity of watch cache broken by resource type.",
            "gauge",
            &|_| capacity.to_string(),
        ),
        (
            "apiserver_watch_cache_events_received_total",
            "[ALPHA] Counter of events received in watch cache broken by resource type.",
            "counter",
            &|r| r.received.to_string(),
        ),
        (
            "apiserver_watch_cache_events_dispatched_total",
            "[ALPHA] Counter of events dispatched in watch cache broken by resource type.",
            "counter",
            &|r| r.dispatched.to_string(),
        ),
        (
            "apiserver_watch_cache_initializations_total",
            "[ALPHA] Counter of watch cache initializations broken by resource type.",
            "counter",
            &|r| r.initializations.to_string(),
        ),
        (
            "apiserver_watch_cache_resource_version",
            "[ALPHA] Current resource version of watch cache broken by resource type.",
            "gauge",
            &|_| (revision % 1_000_000_000_000_000).to_string(),
        ),
        (
            "apiserver_terminated_watchers_total",
            "[ALPHA] Counter of watchers closed due to unresponsiveness broken by resource type.",
            "counter",
            &|r| r.terminated.to_string(),
        ),
        (
            "apiserver_resource_objects",
            "[ALPHA] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
            "gauge",
            &|r| r.objects.to_string(),
        ),
    ];
    for (name, help, kind, value) in per_resource {
        family(&mut out, name, help, kind);
        for r in &rows {
            let _ = writeln!(out, "{name}{{{}}} {}", gr(r), value(r));
        }
    }

    family(
        &mut out,
        "apiserver_storage_size_bytes",
        "[STABLE] Size of the storage database file physically allocated in bytes.",
        "gauge",
    );
    if let Some(size) = db_size {
        let _ = writeln!(
            out,
            "apiserver_storage_size_bytes{{storage_cluster_id=\"etcd-0\"}} {size}"
        );
    }

    let requests = lock(&shared.requests).clone();
    family(
        &mut out,
        "apiserver_request_duration_seconds",
        "[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
        "histogram",
    );
    for (labels, stats) in &requests {
        stats.latency.render(
            &mut out,
            "apiserver_request_duration_seconds",
            &labels.render(),
        );
    }
    family(
        &mut out,
        "apiserver_request_total",
        "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
        "counter",
    );
    for (labels, stats) in &requests {
        for (code, n) in &stats.codes {
            let _ = writeln!(
                out,
                "apiserver_request_total{{code=\"{code}\",{}}} {n}",
                labels.render()
            );
        }
    }

    family(
        &mut out,
        "apiserver_flowcontrol_current_inqueue_requests",
        "[BETA] Number of requests currently pending in queues of the API Priority and Fairness subsystem",
        "gauge",
    );
    for l in &shared.apf.levels {
        let _ = writeln!(
            out,
            "apiserver_flowcontrol_current_inqueue_requests{{flow_schema=\"{}\",priority_level=\"{}\"}} {}",
            l.flow_schema,
            l.priority_level,
            l.inqueue.load(Ordering::Relaxed)
        );
    }
    family(
        &mut out,
        "apiserver_flowcontrol_current_executing_requests",
        "[BETA] Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem",
        "gauge",
    );
    for l in &shared.apf.levels {
        let _ = writeln!(
            out,
            "apiserver_flowcontrol_current_executing_requests{{flow_schema=\"{}\",priority_level=\"{}\"}} {}",
            l.flow_schema,
            l.priority_level,
            l.executing.load(Ordering::Relaxed)
        );
    }
    family(
        &mut out,
        "apiserver_flowcontrol_rejected_requests_total",
        "[BETA] Number of requests rejected by API Priority and Fairness subsystem",
        "counter",
    );
    for ((fs, pl, reason), n) in lock(&shared.apf.rejected).iter() {
        let _ = writeln!(
            out,
            "apiserver_flowcontrol_rejected_requests_total{{flow_schema=\"{fs}\",priority_level=\"{pl}\",reason=\"{reason}\"}} {n}"
        );
    }
    out
}
