//! The workload objects of the demo as their controllers write them: Deployments and their
//! rollouts, ReplicaSets, and Pods from creation through scheduling, running and deletion.

use k8s_pb::api::apps::v1::{
    Deployment, DeploymentCondition, DeploymentSpec, DeploymentStatus, DeploymentStrategy,
    ReplicaSet, ReplicaSetSpec, ReplicaSetStatus, RollingUpdateDeployment,
};
use k8s_pb::api::core::v1::{
    Container, ContainerPort, ContainerState, ContainerStateRunning, ContainerStatus, Pod,
    PodCondition, PodIp, PodSpec, PodStatus, PodTemplateSpec, ResourceRequirements,
};
use k8s_pb::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use rand::Rng;

use super::{
    controller_ref, labels, managed, meta, now_unix, random_suffix, time_now, touch_managed, uid_of,
};

fn container(app: &str, image: &str) -> Container {
    Container {
        name: Some(app.to_string()),
        image: Some(image.to_string()),
        ports: vec![ContainerPort {
            container_port: Some(8080),
            protocol: Some("TCP".to_string()),
            name: Some("http".to_string()),
            ..Default::default()
        }],
        resources: Some(ResourceRequirements::default()),
        termination_message_path: Some("/dev/termination-log".to_string()),
        termination_message_policy: Some("File".to_string()),
        image_pull_policy: Some("IfNotPresent".to_string()),
        ..Default::default()
    }
}

fn pod_template(app: &str, image: &str, hash: Option<&str>) -> PodTemplateSpec {
    let mut l = labels(&[("app", app)]);
    if let Some(h) = hash {
        l.insert("pod-template-hash".to_string(), h.to_string());
    }
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: l,
            ..Default::default()
        }),
        spec: Some(pod_spec(app, image)),
    }
}

fn pod_spec(app: &str, image: &str) -> PodSpec {
    PodSpec {
        containers: vec![container(app, image)],
        restart_policy: Some("Always".to_string()),
        termination_grace_period_seconds: Some(30),
        dns_policy: Some("ClusterFirst".to_string()),
        service_account_name: Some("default".to_string()),
        service_account: Some("default".to_string()),
        scheduler_name: Some("default-scheduler".to_string()),
        enable_service_links: Some(true),
        preemption_policy: Some("PreemptLowerPriority".to_string()),
        priority: Some(0),
        ..Default::default()
    }
}

const DEPLOYMENT_APPLY_FIELDS: &str = r#"{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}}}"#;

/// A Deployment as `kubectl apply` creates it (client-side apply), `replicas` pods of `image`.
pub fn deployment<R: Rng + ?Sized>(
    rng: &mut R,
    namespace: &str,
    name: &str,
    replicas: i32,
    image: &str,
) -> Deployment {
    let mut m = meta(rng, Some(namespace), name);
    m.labels = labels(&[("app", name)]);
    m.generation = Some(1);
    m.annotations = labels(&[(
        "kubectl.kubernetes.io/last-applied-configuration",
        &format!(
            "{{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{{\"name\":\"{name}\",\"namespace\":\"{namespace}\"}},\"spec\":{{\"replicas\":{replicas}}}}}\n"
        ),
    )]);
    m.managed_fields.push(managed(
        "kubectl-client-side-apply",
        "Update",
        "apps/v1",
        None,
        DEPLOYMENT_APPLY_FIELDS,
    ));
    let pct = |s: &str| IntOrString {
        r#type: Some(1),
        int_val: None,
        str_val: Some(s.to_string()),
    };
    Deployment {
        metadata: Some(m),
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            selector: Some(LabelSelector {
                match_labels: labels(&[("app", name)]),
                match_expressions: Vec::new(),
            }),
            template: Some(pod_template(name, image, None)),
            strategy: Some(DeploymentStrategy {
                r#type: Some("RollingUpdate".to_string()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_unavailable: Some(pct("25%")),
                    max_surge: Some(pct("25%")),
                }),
            }),
            revision_history_limit: Some(10),
            progress_deadline_seconds: Some(600),
            ..Default::default()
        }),
        status: Some(DeploymentStatus::default()),
    }
}

/// Changes a Deployment's image (a `kubectl apply` of a new version): generation + 1.
pub fn set_deployment_image(dep: &mut Deployment, image: &str) {
    if let Some(c) = dep
        .spec
        .as_mut()
        .and_then(|s| s.template.as_mut())
        .and_then(|t| t.spec.as_mut())
        .and_then(|s| s.containers.first_mut())
    {
        c.image = Some(image.to_string());
    }
    if let Some(m) = dep.metadata.as_mut() {
        m.generation = Some(m.generation.unwrap_or(0) + 1);
        touch_managed(
            m,
            managed(
                "kubectl-client-side-apply",
                "Update",
                "apps/v1",
                None,
                DEPLOYMENT_APPLY_FIELDS,
            ),
        );
    }
}

/// The deployment controller's status write after a rollout step.
pub fn set_deployment_status(dep: &mut Deployment, replicas: i32, updated: i32, ready: i32) {
    let generation = dep.metadata.as_ref().and_then(|m| m.generation);
    let complete = updated == replicas && ready == replicas;
    dep.status = Some(DeploymentStatus {
        observed_generation: generation,
        replicas: Some(replicas),
        updated_replicas: Some(updated),
        ready_replicas: Some(ready),
        available_replicas: Some(ready),
        unavailable_replicas: (replicas > ready).then_some(replicas - ready),
        conditions: vec![DeploymentCondition {
            r#type: Some("Progressing".to_string()),
            status: Some("True".to_string()),
            last_update_time: Some(time_now()),
            last_transition_time: Some(time_now()),
            reason: Some(
                if complete {
                    "NewReplicaSetAvailable"
                } else {
                    "ReplicaSetUpdated"
                }
                .to_string(),
            ),
            message: Some("ReplicaSet is progressing.".to_string()),
        }],
        ..Default::default()
    });
    if let Some(m) = dep.metadata.as_mut() {
        touch_managed(
            m,
            managed(
                "kube-controller-manager",
                "Update",
                "apps/v1",
                Some("status"),
                r#"{"f:status":{"f:availableReplicas":{},"f:conditions":{},"f:observedGeneration":{},"f:readyReplicas":{},"f:replicas":{},"f:updatedReplicas":{}}}"#,
            ),
        );
    }
}

/// A ReplicaSet the deployment controller creates for `dep`'s current template.
pub fn replica_set<R: Rng + ?Sized>(
    rng: &mut R,
    dep: &Deployment,
    hash: &str,
    replicas: i32,
) -> ReplicaSet {
    let dm = dep.metadata.clone().unwrap_or_default();
    let app = dm.name.clone().unwrap_or_default();
    let ns = dm.namespace.clone().unwrap_or_default();
    let image = dep
        .spec
        .as_ref()
        .and_then(|s| s.template.as_ref())
        .and_then(|t| t.spec.as_ref())
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    let mut m = meta(rng, Some(&ns), &format!("{app}-{hash}"));
    m.labels = labels(&[("app", &app), ("pod-template-hash", hash)]);
    m.generation = Some(1);
    m.annotations = labels(&[
        (
            "deployment.kubernetes.io/desired-replicas",
            &replicas.to_string(),
        ),
        (
            "deployment.kubernetes.io/max-replicas",
            &(replicas + 1).to_string(),
        ),
        (
            "deployment.kubernetes.io/revision",
            &dm.generation.unwrap_or(1).to_string(),
        ),
    ]);
    m.owner_references.push(controller_ref(
        "apps/v1",
        "Deployment",
        &app,
        &uid_of(dep.metadata.as_ref()),
    ));
    m.managed_fields.push(managed(
        "kube-controller-manager",
        "Update",
        "apps/v1",
        None,
        r#"{"f:metadata":{"f:annotations":{},"f:labels":{},"f:ownerReferences":{}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{}}}"#,
    ));
    ReplicaSet {
        metadata: Some(m),
        spec: Some(ReplicaSetSpec {
            replicas: Some(replicas),
            selector: Some(LabelSelector {
                match_labels: labels(&[("app", &app), ("pod-template-hash", hash)]),
                match_expressions: Vec::new(),
            }),
            template: Some(pod_template(&app, &image, Some(hash))),
            ..Default::default()
        }),
        status: Some(ReplicaSetStatus::default()),
    }
}

/// Scales a ReplicaSet (spec and status, as the controller's two writes would leave it).
pub fn scale_replica_set(rs: &mut ReplicaSet, replicas: i32, ready: i32) {
    if let Some(s) = rs.spec.as_mut() {
        s.replicas = Some(replicas);
    }
    let generation = rs.metadata.as_ref().and_then(|m| m.generation);
    rs.status = Some(ReplicaSetStatus {
        replicas: Some(replicas),
        fully_labeled_replicas: Some(replicas),
        ready_replicas: Some(ready),
        available_replicas: Some(ready),
        observed_generation: generation,
        ..Default::default()
    });
    if let Some(m) = rs.metadata.as_mut() {
        m.generation = Some(m.generation.unwrap_or(1) + 1);
        touch_managed(
            m,
            managed(
                "kube-controller-manager",
                "Update",
                "apps/v1",
                Some("status"),
                r#"{"f:status":{"f:availableReplicas":{},"f:fullyLabeledReplicas":{},"f:observedGeneration":{},"f:readyReplicas":{},"f:replicas":{}}}"#,
            ),
        );
    }
}

/// A Pending pod the ReplicaSet controller creates from `rs`'s template.
pub fn pod_for<R: Rng + ?Sized>(rng: &mut R, rs: &ReplicaSet) -> Pod {
    let rm = rs.metadata.clone().unwrap_or_default();
    let rs_name = rm.name.clone().unwrap_or_default();
    let ns = rm.namespace.clone().unwrap_or_default();
    let name = format!("{rs_name}-{}", random_suffix(rng, 5));
    let template = rs
        .spec
        .as_ref()
        .and_then(|s| s.template.clone())
        .unwrap_or_default();
    let mut m = meta(rng, Some(&ns), &name);
    m.generate_name = Some(format!("{rs_name}-"));
    m.labels = template.metadata.map(|t| t.labels).unwrap_or_default();
    m.owner_references.push(controller_ref(
        "apps/v1",
        "ReplicaSet",
        &rs_name,
        &uid_of(rs.metadata.as_ref()),
    ));
    m.managed_fields.push(managed(
        "kube-controller-manager",
        "Update",
        "v1",
        None,
        r#"{"f:metadata":{"f:generateName":{},"f:labels":{},"f:ownerReferences":{}},"f:spec":{"f:containers":{},"f:dnsPolicy":{},"f:restartPolicy":{}}}"#,
    ));
    Pod {
        metadata: Some(m),
        spec: template.spec,
        status: Some(PodStatus {
            phase: Some("Pending".to_string()),
            qos_class: Some("BestEffort".to_string()),
            ..Default::default()
        }),
    }
}

/// The scheduler's binding: `spec.nodeName` and the PodScheduled condition.
pub fn bind_pod(pod: &mut Pod, node: &str) {
    if let Some(s) = pod.spec.as_mut() {
        s.node_name = Some(node.to_string());
    }
    if let Some(st) = pod.status.as_mut() {
        st.conditions.push(condition("PodScheduled"));
    }
    if let Some(m) = pod.metadata.as_mut() {
        touch_managed(
            m,
            managed(
                "kube-scheduler",
                "Update",
                "v1",
                Some("status"),
                r#"{"f:status":{"f:conditions":{".":{},"k:{\"type\":\"PodScheduled\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}}}}"#,
            ),
        );
    }
}

fn condition(kind: &str) -> PodCondition {
    PodCondition {
        r#type: Some(kind.to_string()),
        status: Some("True".to_string()),
        last_probe_time: Some(Time::default()),
        last_transition_time: Some(time_now()),
        ..Default::default()
    }
}

/// The kubelet's status update once the container runs: Running, Ready, pod IP.
pub fn run_pod(pod: &mut Pod, pod_ip: &str, host_ip: &str) {
    let (app, image) = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .map(|c| (c.name.clone(), c.image.clone()))
        .unwrap_or_default();
    if let Some(st) = pod.status.as_mut() {
        st.phase = Some("Running".to_string());
        for c in ["Initialized", "Ready", "ContainersReady"] {
            st.conditions.push(condition(c));
        }
        st.host_ip = Some(host_ip.to_string());
        st.pod_ip = Some(pod_ip.to_string());
        st.pod_ips = vec![PodIp {
            ip: Some(pod_ip.to_string()),
        }];
        st.start_time = Some(time_now());
        st.container_statuses = vec![ContainerStatus {
            name: app,
            state: Some(ContainerState {
                running: Some(ContainerStateRunning {
                    started_at: Some(time_now()),
                }),
                ..Default::default()
            }),
            last_state: Some(ContainerState::default()),
            ready: Some(true),
            restart_count: Some(0),
            image_id: image.as_ref().map(|i| format!("{i}@sha256:{:064x}", 0)),
            image,
            container_id: Some("containerd://0123456789abcdef".to_string()),
            started: Some(true),
            ..Default::default()
        }];
    }
    if let Some(m) = pod.metadata.as_mut() {
        touch_managed(
            m,
            managed(
                "kubelet",
                "Update",
                "v1",
                Some("status"),
                r#"{"f:status":{"f:conditions":{},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{},"f:startTime":{}}}"#,
            ),
        );
    }
}

/// Graceful deletion: `deletionTimestamp` and grace period set, as the apiserver does on a
/// DELETE with a grace period before the kubelet's final delete.
pub fn mark_deleting(pod: &mut Pod) {
    if let Some(m) = pod.metadata.as_mut() {
        let (s, _) = now_unix();
        m.deletion_timestamp = Some(Time {
            seconds: Some(s + 30),
            nanos: Some(0),
        });
        m.deletion_grace_period_seconds = Some(30);
    }
}
