//! The demo's kube-controller-manager and kube-scheduler: real informers (list + watch with
//! bookmarks) against the demo apiserver, each applying what it receives to its store
//! through a FIFO at a limited pace, and workqueues fed by what they apply. Each serves
//! `/metrics` on `127.0.0.1:<free port>` over plain HTTP the way Kubernetes 1.36 components
//! do: `informer_store_resource_version`, `informer_queued_items` and
//! `informer_processing_latency_seconds` labelled `{name,group,version,resource}` (alpha in
//! 1.36, client-go `tools/cache` store and FIFO metrics, kubernetes#137419), and the
//! `workqueue_*` families labelled `{name}` (client-go `util/workqueue`).
//!
//! One informer is slow on purpose (the controller manager's pods informer applies four
//! deltas a second for 45 s of every minute, then catches up), so that under the demo's load its store falls behind etcd's head and
//! its FIFO fills: the lag the console shows for real controllers.
//!
//! Informer and queue names are the demo's own; nothing here claims to be what a real
//! component names its informers.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::model::{InformerWhat, Observation, Stamped};

/// The version the demo's components report in `kubernetes_build_info`.
pub const DEMO_COMPONENT_VERSION: &str = "v1.36.0-regscope-demo";

/// Buckets of `informer_processing_latency_seconds` (as client-go declares them).
const LATENCY_BUCKETS: [f64; 12] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// One simulated informer: what it watches and how fast it applies deltas.
struct InformerSpec {
    group: &'static str,
    version: &'static str,
    resource: &'static str,
    /// Time to apply one delta.
    per_delta: Duration,
    /// Workqueues each applied delta is added to.
    queues: &'static [&'static str],
}

struct ComponentSpec {
    /// The informer name (`name` label).
    informer_name: &'static str,
    informers: &'static [InformerSpec],
}

const FAST: Duration = Duration::from_millis(1);
/// The slow informer's pace during its slow phase: 4 deltas a second.
const SLOW: Duration = Duration::from_millis(250);
/// The slow informer is slow for the first 45 s of every minute and catches up in the
/// rest, so its lag grows and shrinks while the demo runs (and its FIFO stays bounded).
const SLOW_PHASE: Duration = Duration::from_secs(45);

const CONTROLLER_MANAGER: ComponentSpec = ComponentSpec {
    informer_name: "kube-controller-manager",
    informers: &[
        InformerSpec {
            group: "",
            version: "v1",
            resource: "pods",
            per_delta: SLOW,
            queues: &[
                "replicaset",
                "endpoint_slice",
                "garbage_collector_graph_changes",
            ],
        },
        InformerSpec {
            group: "apps",
            version: "v1",
            resource: "deployments",
            per_delta: FAST,
            queues: &["deployment", "garbage_collector_graph_changes"],
        },
        InformerSpec {
            group: "",
            version: "v1",
            resource: "nodes",
            per_delta: FAST,
            queues: &["node_lifecycle_controller"],
        },
        InformerSpec {
            group: "",
            version: "v1",
            resource: "configmaps",
            per_delta: FAST,
            queues: &["root_ca_cert_publisher"],
        },
    ],
};

const SCHEDULER: ComponentSpec = ComponentSpec {
    informer_name: "kube-scheduler",
    informers: &[
        InformerSpec {
            group: "",
            version: "v1",
            resource: "pods",
            per_delta: FAST,
            queues: &[],
        },
        InformerSpec {
            group: "",
            version: "v1",
            resource: "nodes",
            per_delta: FAST,
            queues: &[],
        },
    ],
};

#[derive(Default)]
struct InformerState {
    store_rv: i64,
    fifo: VecDeque<(i64, Instant)>,
    /// Cumulative counts per bucket of [`LATENCY_BUCKETS`], then the sum and count.
    latency: [u64; 12],
    latency_sum: f64,
    latency_count: u64,
}

#[derive(Default)]
struct QueueState {
    depth: u64,
    adds: u64,
    retries: u64,
}

#[derive(Default)]
struct State {
    informers: BTreeMap<&'static str, InformerState>,
    queues: BTreeMap<&'static str, QueueState>,
}

/// One running demo component.
pub struct DemoComponent {
    addr: SocketAddr,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for DemoComponent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoComponent")
            .field("addr", &self.addr)
            .finish()
    }
}

impl Drop for DemoComponent {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl DemoComponent {
    /// The `/metrics` URL.
    pub fn metrics_url(&self) -> String {
        format!("http://{}/metrics", self.addr)
    }
}

/// The demo's two components, started against the demo apiserver reached with `client`.
#[derive(Debug)]
pub struct DemoComponents {
    pub controller_manager: DemoComponent,
    pub scheduler: DemoComponent,
}

impl DemoComponents {
    /// Starts both. Must be called inside a tokio runtime. Errors: binding a port.
    pub async fn start(client: kube::Client) -> std::io::Result<DemoComponents> {
        Ok(DemoComponents {
            controller_manager: start_one(client.clone(), &CONTROLLER_MANAGER).await?,
            scheduler: start_one(client, &SCHEDULER).await?,
        })
    }
}

async fn start_one(
    client: kube::Client,
    spec: &'static ComponentSpec,
) -> std::io::Result<DemoComponent> {
    let state = Arc::new(Mutex::new(State::default()));
    let (tx, mut rx) = mpsc::channel::<Stamped>(4096);
    let resources = spec
        .informers
        .iter()
        .map(|i| {
            if i.group.is_empty() {
                format!("{}/{}", i.version, i.resource)
            } else {
                format!("{}/{}/{}", i.group, i.version, i.resource)
            }
        })
        .collect();
    let mut tasks = vec![crate::source::informer::spawn_informers_for(
        client, resources, tx,
    )];
    // Receive: every list and event is a delta queued in its informer's FIFO.
    let st = state.clone();
    tasks.push(tokio::spawn(async move {
        while let Some(s) = rx.recv().await {
            let Observation::Informer(obs) = s.obs else {
                continue;
            };
            let Some(i) = spec
                .informers
                .iter()
                .find(|i| i.resource == obs.resource && i.group == obs.group)
            else {
                continue;
            };
            let rv = match obs.what {
                InformerWhat::Listed {
                    resource_version, ..
                } => resource_version,
                InformerWhat::Event {
                    resource_version,
                    bookmark: false,
                } => resource_version,
                _ => continue,
            };
            let mut g = st.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            g.informers
                .entry(i.resource)
                .or_default()
                .fifo
                .push_back((rv, Instant::now()));
        }
    }));
    // Apply: each informer pops at its own pace; queues drain at 50 items a tick.
    let st = state.clone();
    tasks.push(tokio::spawn(async move {
        let tick = Duration::from_millis(20);
        let mut budget: BTreeMap<&'static str, Duration> = BTreeMap::new();
        let mut n: u64 = 0;
        let started = Instant::now();
        loop {
            tokio::time::sleep(tick).await;
            let mut g = st.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let State { informers, queues } = &mut *g;
            for i in spec.informers {
                let inf = informers.entry(i.resource).or_default();
                let b = budget.entry(i.resource).or_default();
                *b += tick;
                let in_slow_phase = started.elapsed().as_secs() % 60 < SLOW_PHASE.as_secs();
                let per_delta = if i.per_delta == SLOW && !in_slow_phase {
                    FAST
                } else {
                    i.per_delta
                };
                while *b >= per_delta {
                    let Some((rv, at)) = inf.fifo.pop_front() else {
                        *b = Duration::ZERO;
                        break;
                    };
                    *b -= per_delta;
                    inf.store_rv = inf.store_rv.max(rv);
                    let secs = at.elapsed().as_secs_f64();
                    for (k, le) in LATENCY_BUCKETS.iter().enumerate() {
                        if secs <= *le {
                            inf.latency[k] += 1;
                        }
                    }
                    inf.latency_sum += secs;
                    inf.latency_count += 1;
                    for q in i.queues {
                        let qs = queues.entry(q).or_default();
                        qs.adds += 1;
                        qs.depth += 1;
                        n += 1;
                        // One item in 97 fails and is retried (re-added later).
                        if n.is_multiple_of(97) {
                            qs.retries += 1;
                            qs.adds += 1;
                        }
                    }
                }
            }
            for q in queues.values_mut() {
                q.depth = q.depth.saturating_sub(50);
            }
        }
    }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = Router::new().route(
        "/metrics",
        get(move || {
            let st = state.clone();
            async move {
                let g = st.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                (
                    [(
                        http::header::CONTENT_TYPE,
                        "text/plain; version=0.0.4; charset=utf-8",
                    )],
                    render(spec, &g),
                )
            }
        }),
    );
    tasks.push(tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::debug!("demo component: {e}");
        }
    }));
    Ok(DemoComponent { addr, tasks })
}

fn render(spec: &ComponentSpec, st: &State) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# HELP kubernetes_build_info [ALPHA] A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.");
    let _ = writeln!(o, "# TYPE kubernetes_build_info gauge");
    let _ = writeln!(
        o,
        "kubernetes_build_info{{git_version=\"{DEMO_COMPONENT_VERSION}\",major=\"1\",minor=\"36\"}} 1"
    );
    let labels = |i: &InformerSpec| {
        format!(
            "group=\"{}\",name=\"{}\",resource=\"{}\",version=\"{}\"",
            i.group, spec.informer_name, i.resource, i.version
        )
    };
    let _ = writeln!(o, "# HELP informer_store_resource_version [ALPHA] The 15 least significant digits of the resource version of the store.");
    let _ = writeln!(o, "# TYPE informer_store_resource_version gauge");
    for i in spec.informers {
        let rv = st.informers.get(i.resource).map_or(0, |s| s.store_rv);
        let _ = writeln!(
            o,
            "informer_store_resource_version{{{}}} {}",
            labels(i),
            rv % 1_000_000_000_000_000
        );
    }
    let _ = writeln!(
        o,
        "# HELP informer_queued_items [ALPHA] Number of items currently queued in the FIFO."
    );
    let _ = writeln!(o, "# TYPE informer_queued_items gauge");
    for i in spec.informers {
        let q = st.informers.get(i.resource).map_or(0, |s| s.fifo.len());
        let _ = writeln!(o, "informer_queued_items{{{}}} {q}", labels(i));
    }
    let _ = writeln!(o, "# HELP informer_processing_latency_seconds [ALPHA] Time taken to process events after popping from the queue.");
    let _ = writeln!(o, "# TYPE informer_processing_latency_seconds histogram");
    for i in spec.informers {
        let empty = InformerState::default();
        let s = st.informers.get(i.resource).unwrap_or(&empty);
        for (k, le) in LATENCY_BUCKETS.iter().enumerate() {
            let _ = writeln!(
                o,
                "informer_processing_latency_seconds_bucket{{{},le=\"{le}\"}} {}",
                labels(i),
                s.latency[k]
            );
        }
        let _ = writeln!(
            o,
            "informer_processing_latency_seconds_bucket{{{},le=\"+Inf\"}} {}",
            labels(i),
            s.latency_count
        );
        let _ = writeln!(
            o,
            "informer_processing_latency_seconds_sum{{{}}} {}",
            labels(i),
            s.latency_sum
        );
        let _ = writeln!(
            o,
            "informer_processing_latency_seconds_count{{{}}} {}",
            labels(i),
            s.latency_count
        );
    }
    for (family, kind, help) in [
        ("workqueue_depth", "gauge", "Current depth of workqueue"),
        (
            "workqueue_adds_total",
            "counter",
            "Total number of adds handled by workqueue",
        ),
        (
            "workqueue_retries_total",
            "counter",
            "Total number of retries handled by workqueue",
        ),
    ] {
        let _ = writeln!(o, "# HELP {family} [ALPHA] {help}");
        let _ = writeln!(o, "# TYPE {family} {kind}");
        for (name, q) in &st.queues {
            let v = match family {
                "workqueue_depth" => q.depth,
                "workqueue_adds_total" => q.adds,
                _ => q.retries,
            };
            let _ = writeln!(o, "{family}{{name=\"{name}\"}} {v}");
        }
    }
    o
}
