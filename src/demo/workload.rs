//! What the simulated control plane writes, and when: the bootstrap of a small cluster,
//! workload workers (deployment rollouts, config changes, custom-resource updates, events)
//! and the periodic heartbeats (node leases, node status, leader election).
//!
//! Every write goes through [`Store`] (the apiserver-style write path in [`super::sim`]).
//! Each worker owns its namespaces; all workers also update one shared ConfigMap, which
//! produces the occasional GuaranteedUpdate conflict a real cluster has.

use std::time::Duration;

use k8s_pb::api::apps::v1::{Deployment, ReplicaSet};
use k8s_pb::api::coordination::v1::Lease;
use k8s_pb::api::core::v1::{ConfigMap, Node, Pod};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::watch;

use super::etcd_server::DemoError;
use super::objects::{self as o, cluster_key, namespaced_key};
use super::sim::{Cached, Seen, SimConfig, Store};

const NAMESPACE_NAMES: &[&str] = &[
    "shop",
    "payments",
    "search",
    "identity",
    "billing",
    "catalog",
    "checkout",
    "analytics",
];
const APP_NAMES: &[&str] = &["web", "api"];
const SHARED_CONFIG: (&str, &str) = ("kube-system", "cluster-state");

/// Everything [`bootstrap`] set up, handed to the tasks.
pub(crate) struct Plan {
    pub(crate) workers: Vec<Worker>,
    pub(crate) heartbeats: Heartbeats,
}

struct DepState {
    namespace: String,
    name: String,
    key: String,
    dep: Cached<Deployment>,
    /// Oldest first; the last one is current.
    replica_sets: Vec<(String, Cached<ReplicaSet>)>,
    pods: Vec<PodState>,
}

struct PodState {
    key: String,
    rs_name: String,
    pod: Cached<Pod>,
}

struct WidgetState {
    key: String,
    namespace: String,
    name: String,
    uid: String,
    seen: Seen,
}

/// One workload task's world: its namespaces, deployments and objects.
pub(crate) struct Worker {
    rng: StdRng,
    nodes: Vec<String>,
    deployments: Vec<DepState>,
    config_maps: Vec<(String, Cached<ConfigMap>)>,
    shared: (String, Cached<ConfigMap>),
    widgets: Vec<WidgetState>,
}

/// The periodic writers: kubelets' node leases and status, controller leader election.
pub(crate) struct Heartbeats {
    node_leases: Vec<(String, Cached<Lease>)>,
    nodes: Vec<(String, Cached<Node>)>,
    leader_leases: Vec<(String, Cached<Lease>)>,
}

fn node_names(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("demo-node-{i}")).collect()
}

fn worker_namespaces(worker: usize) -> Vec<String> {
    (0..2)
        .map(|j| {
            let i = worker * 2 + j;
            let base = NAMESPACE_NAMES[i % NAMESPACE_NAMES.len()];
            match i / NAMESPACE_NAMES.len() {
                0 => base.to_string(),
                round => format!("{base}-{round}"),
            }
        })
        .collect()
}

/// Writes the initial cluster (not paced, so the console has something to show at once)
/// and returns the state the tasks continue from.
pub(crate) async fn bootstrap(store: &Store, cfg: &SimConfig) -> Result<Plan, DemoError> {
    let mut rng = StdRng::from_rng(&mut rand::rng());
    let p = store.prefix.clone();
    let nodes = node_names(cfg.nodes.max(1));
    let workers_n = cfg.effective_workers();

    let mut all_ns: Vec<String> = ["default", "kube-system", "kube-public", "kube-node-lease"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for w in 0..workers_n {
        all_ns.extend(worker_namespaces(w));
    }
    for ns in &all_ns {
        store
            .create(
                &cluster_key(&p, "namespaces", ns),
                o::namespace(&mut rng, ns),
                false,
            )
            .await?;
        let ca = o::config_map(
            &mut rng,
            ns,
            "kube-root-ca.crt",
            &[(
                "ca.crt",
                "-----BEGIN CERTIFICATE-----\n(regscope demo: not a real certificate)\n-----END CERTIFICATE-----\n",
            )],
            "kube-controller-manager",
        );
        store
            .create(
                &namespaced_key(&p, "configmaps", ns, "kube-root-ca.crt"),
                ca,
                false,
            )
            .await?;
    }

    let mut hb = Heartbeats {
        node_leases: Vec::new(),
        nodes: Vec::new(),
        leader_leases: Vec::new(),
    };
    for (i, name) in nodes.iter().enumerate() {
        let key = cluster_key(&p, "nodes", name);
        let node = store
            .create(&key, o::node(&mut rng, name, i), false)
            .await?;
        let owner = o::controller_ref("v1", "Node", name, &o::uid_of(node.obj.metadata.as_ref()));
        let mut owner = owner;
        owner.controller = None;
        owner.block_owner_deletion = None;
        let lease = o::lease(
            &mut rng,
            "kube-node-lease",
            name,
            name,
            40,
            "kubelet",
            Some(owner),
        );
        let lkey = namespaced_key(&p, "leases", "kube-node-lease", name);
        let lease = store.create(&lkey, lease, false).await?;
        hb.nodes.push((key, node));
        hb.node_leases.push((lkey, lease));
    }
    for component in ["kube-controller-manager", "kube-scheduler"] {
        let holder = format!("{}_{}", nodes[0], o::new_uid(&mut rng));
        let lease = o::lease(
            &mut rng,
            "kube-system",
            component,
            &holder,
            15,
            component,
            None,
        );
        let key = namespaced_key(&p, "leases", "kube-system", component);
        hb.leader_leases
            .push((key.clone(), store.create(&key, lease, false).await?));
    }

    let kubernetes = o::service(&mut rng, "default", "kubernetes", None, "10.96.0.1");
    store
        .create(
            &namespaced_key(&p, "services/specs", "default", "kubernetes"),
            kubernetes,
            false,
        )
        .await?;
    store
        .create(
            &namespaced_key(&p, "secrets", "default", "demo-credentials"),
            o::secret(&mut rng, "default", "demo-credentials"),
            false,
        )
        .await?;
    let shared_key = namespaced_key(&p, "configmaps", SHARED_CONFIG.0, SHARED_CONFIG.1);
    let shared = store
        .create(
            &shared_key,
            o::config_map(
                &mut rng,
                SHARED_CONFIG.0,
                SHARED_CONFIG.1,
                &[("generation", "0")],
                "regscope-demo",
            ),
            false,
        )
        .await?;

    let mut workers = Vec::new();
    let mut service_ip = 10_u32;
    for w in 0..workers_n {
        let mut worker = Worker {
            rng: StdRng::from_rng(&mut rng),
            nodes: nodes.clone(),
            deployments: Vec::new(),
            config_maps: Vec::new(),
            shared: (shared_key.clone(), shared.clone()),
            widgets: Vec::new(),
        };
        for ns in worker_namespaces(w) {
            let cm_key = namespaced_key(&p, "configmaps", &ns, "app-config");
            let cm = o::config_map(
                &mut worker.rng,
                &ns,
                "app-config",
                &[
                    ("log-level", "info"),
                    ("feature-flags", "checkout-v2=false"),
                ],
                "kubectl-client-side-apply",
            );
            worker
                .config_maps
                .push((cm_key.clone(), store.create(&cm_key, cm, false).await?));

            let wname = format!("{ns}-widget");
            let wkey = format!("{p}/example.com/widgets/{ns}/{wname}");
            let uid = o::new_uid(&mut worker.rng);
            let value = o::widget_json(&ns, &wname, &uid, 1, 1);
            let rev = store.create_raw(&wkey, value.clone(), None, false).await?;
            worker.widgets.push(WidgetState {
                key: wkey,
                namespace: ns.clone(),
                name: wname,
                uid,
                seen: Seen {
                    mod_revision: rev.unwrap_or(0),
                    value,
                },
            });

            for app in APP_NAMES {
                let replicas = worker.rng.random_range(2..=3);
                let dep = o::deployment(&mut worker.rng, &ns, app, replicas, &image(app, 1));
                let key = namespaced_key(&p, "deployments", &ns, app);
                let dep = store.create(&key, dep, false).await?;
                service_ip += 1;
                let svc = o::service(
                    &mut worker.rng,
                    &ns,
                    app,
                    Some(app),
                    &format!("10.96.{}.{}", service_ip / 250, service_ip % 250),
                );
                store
                    .create(&namespaced_key(&p, "services/specs", &ns, app), svc, false)
                    .await?;
                worker.deployments.push(DepState {
                    namespace: ns.clone(),
                    name: app.to_string(),
                    key,
                    dep,
                    replica_sets: Vec::new(),
                    pods: Vec::new(),
                });
            }
        }
        workers.push(worker);
    }
    Ok(Plan {
        workers,
        heartbeats: hb,
    })
}

fn image(app: &str, version: i64) -> String {
    format!("registry.example.com/{app}:1.{version}.0")
}

async fn sleep_or_stop(stop: &mut watch::Receiver<bool>, d: Duration) -> bool {
    tokio::select! {
        _ = stop.wait_for(|s| *s) => true,
        () = tokio::time::sleep(d) => false,
    }
}

impl Worker {
    /// Runs until stopped: a rollout of one deployment, then a handful of small writes.
    /// Errors are counted (in the store) and retried after a short pause.
    pub(crate) async fn run(mut self, store: Store, mut stop: watch::Receiver<bool>) {
        // The first rollout of every deployment brings its pods up.
        for i in 0..self.deployments.len() {
            if let Err(e) = self.rollout(&store, i).await {
                tracing::debug!("demo worker: {e}");
                if sleep_or_stop(&mut stop, Duration::from_millis(500)).await {
                    return;
                }
            }
        }
        loop {
            let result = self.step(&store).await;
            if let Err(e) = result {
                tracing::debug!("demo worker: {e}");
                if sleep_or_stop(&mut stop, Duration::from_millis(500)).await {
                    return;
                }
            }
        }
    }

    async fn step(&mut self, store: &Store) -> Result<(), DemoError> {
        let i = self.rng.random_range(0..self.deployments.len().max(1));
        if !self.deployments.is_empty() {
            self.rollout(store, i).await?;
        }
        let small = self.rng.random_range(4..12);
        for _ in 0..small {
            match self.rng.random_range(0..10) {
                0..=2 => self.touch_config(store).await?,
                3..=4 => self.touch_widget(store).await?,
                5 => self.touch_shared(store).await?,
                _ => self.chatter_event(store).await?,
            }
        }
        Ok(())
    }

    async fn touch_config(&mut self, store: &Store) -> Result<(), DemoError> {
        if self.config_maps.is_empty() {
            return Ok(());
        }
        let i = self.rng.random_range(0..self.config_maps.len());
        let level = ["debug", "info", "warn"][self.rng.random_range(0..3)];
        let (key, cm) = &mut self.config_maps[i];
        store
            .update(key, cm, |c| {
                c.data.insert("log-level".to_string(), level.to_string());
                if let Some(m) = c.metadata.as_mut() {
                    o::touch_managed(
                        m,
                        o::managed(
                            "kubectl-client-side-apply",
                            "Update",
                            "v1",
                            None,
                            r#"{"f:data":{}}"#,
                        ),
                    );
                }
            })
            .await?;
        Ok(())
    }

    async fn touch_widget(&mut self, store: &Store) -> Result<(), DemoError> {
        if self.widgets.is_empty() {
            return Ok(());
        }
        let i = self.rng.random_range(0..self.widgets.len());
        let size = self.rng.random_range(1..100);
        let w = &mut self.widgets[i];
        let (ns, name, uid) = (w.namespace.clone(), w.name.clone(), w.uid.clone());
        store
            .update_raw(&w.key, &mut w.seen, None, |old| {
                let generation = serde_json::from_slice::<serde_json::Value>(old)
                    .ok()
                    .and_then(|v| v["metadata"]["generation"].as_u64())
                    .unwrap_or(0);
                Ok(o::widget_json(&ns, &name, &uid, size, generation + 1))
            })
            .await?;
        Ok(())
    }

    async fn touch_shared(&mut self, store: &Store) -> Result<(), DemoError> {
        let (key, cm) = &mut self.shared;
        store
            .update(key, cm, |c| {
                let g: u64 = c
                    .data
                    .get("generation")
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                c.data.insert("generation".to_string(), (g + 1).to_string());
            })
            .await?;
        Ok(())
    }

    async fn chatter_event(&mut self, store: &Store) -> Result<(), DemoError> {
        let Some(d) = self.deployments.first() else {
            return Ok(());
        };
        let (ns, name, uid) = (
            d.namespace.clone(),
            d.name.clone(),
            o::uid_of(d.dep.obj.metadata.as_ref()),
        );
        let node = self.nodes[self.rng.random_range(0..self.nodes.len())].clone();
        let ev = o::event(
            &mut self.rng,
            &ns,
            ("apps/v1", "Deployment", &name, &uid),
            "HealthCheck",
            "Readiness probe succeeded",
            "kubelet",
            Some(&node),
        );
        self.emit(store, ev).await
    }

    async fn emit(
        &mut self,
        store: &Store,
        ev: k8s_pb::api::core::v1::Event,
    ) -> Result<(), DemoError> {
        let m = ev.metadata.clone().unwrap_or_default();
        let key = namespaced_key(
            &store.prefix,
            "events",
            m.namespace.as_deref().unwrap_or_default(),
            m.name.as_deref().unwrap_or_default(),
        );
        store.create_with_ttl(&key, &ev).await
    }

    /// A rolling update of deployment `i`: new image, new ReplicaSet, then per replica a
    /// pod created, bound, running, and an old pod gracefully deleted; old ReplicaSets
    /// beyond two are garbage-collected.
    async fn rollout(&mut self, store: &Store, i: usize) -> Result<(), DemoError> {
        let p = store.prefix.clone();
        let (ns, app, dep_key) = {
            let d = &self.deployments[i];
            (d.namespace.clone(), d.name.clone(), d.key.clone())
        };
        let generation = self.deployments[i]
            .dep
            .obj
            .metadata
            .as_ref()
            .and_then(|m| m.generation)
            .unwrap_or(1);
        let replicas = self.deployments[i]
            .dep
            .obj
            .spec
            .as_ref()
            .and_then(|s| s.replicas)
            .unwrap_or(2);
        let dep_uid = o::uid_of(self.deployments[i].dep.obj.metadata.as_ref());

        // kubectl apply of a new image (skipped on the very first rollout).
        if !self.deployments[i].replica_sets.is_empty() {
            let img = image(&app, generation + 1);
            store
                .update(&dep_key, &mut self.deployments[i].dep, |d| {
                    o::set_deployment_image(d, &img)
                })
                .await?;
        }

        // The deployment controller's new ReplicaSet.
        let hash = o::random_suffix(&mut self.rng, 10);
        let rs = o::replica_set(&mut self.rng, &self.deployments[i].dep.obj, &hash, 0);
        let rs_name = format!("{app}-{hash}");
        let rs_key = namespaced_key(&p, "replicasets", &ns, &rs_name);
        let rs = store.create(&rs_key, rs, true).await?;
        let rs_uid = o::uid_of(rs.obj.metadata.as_ref());
        self.deployments[i].replica_sets.push((rs_key.clone(), rs));
        let ev = o::event(
            &mut self.rng,
            &ns,
            ("apps/v1", "Deployment", &app, &dep_uid),
            "ScalingReplicaSet",
            &format!("Scaled up replica set {rs_name} to {replicas}"),
            "deployment-controller",
            None,
        );
        self.emit(store, ev).await?;

        for n in 0..replicas {
            // ReplicaSet controller: scale up, create a pod.
            let cur = self.deployments[i].replica_sets.len() - 1;
            {
                let (k, rs) = &mut self.deployments[i].replica_sets[cur];
                store
                    .update(k, rs, |r| o::scale_replica_set(r, n + 1, n))
                    .await?;
            }
            let pod = o::pod_for(&mut self.rng, &self.deployments[i].replica_sets[cur].1.obj);
            let pod_name = pod
                .metadata
                .as_ref()
                .and_then(|m| m.name.clone())
                .unwrap_or_default();
            let pod_key = namespaced_key(&p, "pods", &ns, &pod_name);
            let cached = store.create(&pod_key, pod, true).await?;
            let pod_uid = o::uid_of(cached.obj.metadata.as_ref());
            self.deployments[i].pods.push(PodState {
                key: pod_key.clone(),
                rs_name: rs_name.clone(),
                pod: cached,
            });
            let ev = o::event(
                &mut self.rng,
                &ns,
                ("apps/v1", "ReplicaSet", &rs_name, &rs_uid),
                "SuccessfulCreate",
                &format!("Created pod: {pod_name}"),
                "replicaset-controller",
                None,
            );
            self.emit(store, ev).await?;

            // Scheduler binds it; kubelet starts it.
            let node_idx = self.rng.random_range(0..self.nodes.len());
            let node = self.nodes[node_idx].clone();
            let pod_ip = format!("10.244.{node_idx}.{}", self.rng.random_range(2..250));
            let host_ip = format!("10.0.0.{}", 10 + node_idx);
            let pi = self.deployments[i].pods.len() - 1;
            {
                let ps = &mut self.deployments[i].pods[pi];
                store
                    .update(&ps.key, &mut ps.pod, |p| o::bind_pod(p, &node))
                    .await?;
            }
            let ev = o::event(
                &mut self.rng,
                &ns,
                ("v1", "Pod", &pod_name, &pod_uid),
                "Scheduled",
                &format!("Successfully assigned {ns}/{pod_name} to {node}"),
                "default-scheduler",
                None,
            );
            self.emit(store, ev).await?;
            {
                let ps = &mut self.deployments[i].pods[pi];
                store
                    .update(&ps.key, &mut ps.pod, |p| o::run_pod(p, &pod_ip, &host_ip))
                    .await?;
            }
            let ev = o::event(
                &mut self.rng,
                &ns,
                ("v1", "Pod", &pod_name, &pod_uid),
                "Started",
                &format!("Started container {app}"),
                "kubelet",
                Some(&node),
            );
            self.emit(store, ev).await?;

            // One old pod goes: graceful deletion, then the kubelet's final delete.
            self.retire_one_old_pod(store, i, &rs_name).await?;
            let updated = n + 1;
            let dep = &mut self.deployments[i];
            store
                .update(&dep_key, &mut dep.dep, |d| {
                    o::set_deployment_status(d, replicas, updated, updated)
                })
                .await?;
        }
        while self.retire_one_old_pod(store, i, &rs_name).await? {}

        // Old ReplicaSets stay scaled to zero (revision history); keep two.
        let d = &mut self.deployments[i];
        let old = d.replica_sets.len().saturating_sub(1);
        for (k, rs) in d.replica_sets.iter_mut().take(old) {
            if rs.obj.spec.as_ref().and_then(|s| s.replicas) != Some(0) {
                store
                    .update(k, rs, |r| o::scale_replica_set(r, 0, 0))
                    .await?;
            }
        }
        while d.replica_sets.len() > 3 {
            let (k, rs) = d.replica_sets.remove(0);
            store.delete(&k, rs.mod_revision).await?;
        }
        Ok(())
    }

    /// Deletes one pod not owned by `current_rs`. Returns whether there was one.
    async fn retire_one_old_pod(
        &mut self,
        store: &Store,
        i: usize,
        current_rs: &str,
    ) -> Result<bool, DemoError> {
        let Some(idx) = self.deployments[i]
            .pods
            .iter()
            .position(|p| p.rs_name != current_rs)
        else {
            return Ok(false);
        };
        let ns = self.deployments[i].namespace.clone();
        let (key, name, uid, node) = {
            let ps = &self.deployments[i].pods[idx];
            let m = ps.pod.obj.metadata.clone().unwrap_or_default();
            let node = ps.pod.obj.spec.as_ref().and_then(|s| s.node_name.clone());
            (
                ps.key.clone(),
                m.name.unwrap_or_default(),
                m.uid.unwrap_or_default(),
                node,
            )
        };
        let still_there = {
            let ps = &mut self.deployments[i].pods[idx];
            store.update(&key, &mut ps.pod, o::mark_deleting).await?
        };
        if still_there {
            let ev = o::event(
                &mut self.rng,
                &ns,
                ("v1", "Pod", &name, &uid),
                "Killing",
                "Stopping container",
                "kubelet",
                node.as_deref(),
            );
            self.emit(store, ev).await?;
            let rev = self.deployments[i].pods[idx].pod.mod_revision;
            store.delete(&key, rev).await?;
        }
        self.deployments[i].pods.remove(idx);
        Ok(true)
    }
}

impl Heartbeats {
    /// Node leases every `node_lease_interval`, node status every 6 node-lease periods (a
    /// minute by default: the kubelet reports status at least every 5 minutes, more often
    /// when it changes), leader leases every `leader_lease_interval`.
    pub(crate) async fn run(mut self, store: Store, cfg: &SimConfig) {
        let mut node_tick = tokio::time::interval(cfg.node_lease_interval);
        let mut leader_tick = tokio::time::interval(cfg.leader_lease_interval);
        node_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        leader_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The bootstrap just wrote them; skip the immediate first ticks.
        node_tick.tick().await;
        leader_tick.tick().await;
        let mut rounds: u64 = 0;
        loop {
            tokio::select! {
                _ = node_tick.tick() => {
                    rounds += 1;
                    for (key, lease) in &mut self.node_leases {
                        if let Err(e) = store.update(key, lease, o::renew_lease).await {
                            tracing::debug!("demo node lease: {e}");
                        }
                    }
                    if rounds.is_multiple_of(6) {
                        for (key, node) in &mut self.nodes {
                            if let Err(e) = store.update(key, node, o::heartbeat_node).await {
                                tracing::debug!("demo node status: {e}");
                            }
                        }
                    }
                }
                _ = leader_tick.tick() => {
                    for (key, lease) in &mut self.leader_leases {
                        if let Err(e) = store.update(key, lease, o::renew_lease).await {
                            tracing::debug!("demo leader lease: {e}");
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_namespaces_are_unique() {
        let mut all: Vec<String> = (0..16).flat_map(worker_namespaces).collect();
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n);
    }

    #[test]
    fn node_names_count() {
        assert_eq!(node_names(3), ["demo-node-1", "demo-node-2", "demo-node-3"]);
    }
}
