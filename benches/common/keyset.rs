//! The key sets of the big-cluster benchmarks: Kubernetes protobuf encodings made by the
//! demo's object builders, deterministic for a seed.
//!
//! - `mixed`: Events (40 %), Leases (20 %), ConfigMaps (25 %) and Secrets (15 %) over 200
//!   namespaces, about 510 bytes of key + value each;
//! - `large`: ConfigMaps of about 5 KiB.

use rand::rngs::SmallRng;
use rand::Rng;
use regscope::demo::objects;

const NAMESPACES: usize = 200;

/// Key and value number `i` of the set.
pub fn entry(set: &str, rng: &mut SmallRng, i: usize) -> (String, Vec<u8>) {
    let ns = format!("ns-{:03}", i % NAMESPACES);
    let p = "/registry";
    if set == "large" {
        // ~5 KiB of data in a few keys, as a rendered config file would be.
        let body: String = (0..5 * 1024 / 64)
            .map(|l| format!("line {l:03} = {:048x}\n", rng.random::<u128>() >> 32))
            .collect();
        let name = format!("config-{i:07}");
        let cm = objects::config_map(rng, &ns, &name, &[("app.conf", &body)], "helm");
        return (
            objects::namespaced_key(p, "configmaps", &ns, &name),
            objects::encode_object(&cm),
        );
    }
    match i % 20 {
        // 40 % Events, as an event storm leaves them.
        0..=7 => {
            let pod = format!("web-{:05}-{}", i % 50_000, objects::random_suffix(rng, 5));
            let uid = objects::new_uid(rng);
            let ev = objects::event(
                rng,
                &ns,
                ("v1", "Pod", &pod, &uid),
                "BackOff",
                "Back-off restarting failed container app in pod (readiness probe failed)",
                "kubelet",
                Some("node-017"),
            );
            let name = ev
                .metadata
                .as_ref()
                .and_then(|m| m.name.clone())
                .unwrap_or_default();
            (
                objects::namespaced_key(p, "events", &ns, &name),
                objects::encode_object(&ev),
            )
        }
        // 20 % Leases.
        8..=11 => {
            let name = format!("lease-{i:07}");
            let lease = objects::lease(rng, &ns, &name, &name, 15, "controller", None);
            (
                objects::namespaced_key(p, "coordination.k8s.io/leases", &ns, &name),
                objects::encode_object(&lease),
            )
        }
        // 25 % ConfigMaps of a few hundred bytes.
        12..=16 => {
            let name = format!("cm-{i:07}");
            let mut hex = || format!("{:032x}{:032x}", rng.random::<u128>(), rng.random::<u128>());
            let (a, b, c, d, e) = (hex(), hex(), hex(), hex(), hex());
            let cm = objects::config_map(
                rng,
                &ns,
                &name,
                &[
                    ("settings", &a),
                    ("tls-fingerprint", &b),
                    ("upstream-a", &c),
                    ("upstream-b", &d),
                    ("upstream-c", &e),
                    ("mode", "production"),
                ],
                "kubectl-client-side-apply",
            );
            (
                objects::namespaced_key(p, "configmaps", &ns, &name),
                objects::encode_object(&cm),
            )
        }
        // 15 % Secrets.
        _ => {
            let name = format!("token-{i:07}");
            let s = objects::secret(rng, &ns, &name);
            (
                objects::namespaced_key(p, "secrets", &ns, &name),
                objects::encode_object(&s),
            )
        }
    }
}
