//! What the benchmarks that need a real etcd share: starting one on a data dir that may
//! already hold a key set, connecting, loading a set (`keyset.rs`) in transactions, and
//! medians.

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use etcd_client::{Txn, TxnOp};
use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::keyset;

/// Changes whenever the key sets (`keyset.rs`) change, so a kept data dir is not reused.
pub const SET_VERSION: u32 = 2;
/// The seed of [`load`]'s sequence of keys and values.
pub const LOAD_SEED: u64 = 0x5eed;
/// Puts per load transaction (etcd's `--max-txn-ops` is raised to this).
pub const TXN_OPS: usize = 1000;

pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// etcd on a data dir that may already hold the set; killed on drop.
pub struct Etcd {
    pub child: Child,
    pub endpoint: String,
    _tmp: Option<tempfile::TempDir>,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start_etcd(dir: &Path, tmp: Option<tempfile::TempDir>) -> Etcd {
    let (client, peer) = (free_port(), free_port());
    let endpoint = format!("http://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let log = std::fs::File::create(dir.join("etcd.log")).expect("etcd log");
    let child = Command::new("etcd")
        .arg(format!("--data-dir={}", dir.join("data").display()))
        .arg(format!("--listen-client-urls={endpoint}"))
        .arg(format!("--advertise-client-urls={endpoint}"))
        .arg(format!("--listen-peer-urls={peer_url}"))
        .arg(format!("--initial-advertise-peer-urls={peer_url}"))
        .arg(format!("--initial-cluster=default={peer_url}"))
        .arg("--quota-backend-bytes=8589934592")
        .arg(format!("--max-txn-ops={TXN_OPS}"))
        .arg("--max-request-bytes=33554432")
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("spawn etcd");
    Etcd {
        child,
        endpoint,
        _tmp: tmp,
    }
}

pub async fn connect(endpoint: &str) -> etcd_client::Client {
    for _ in 0..100 {
        if let Ok(mut c) = etcd_client::Client::connect([endpoint], None).await {
            if c.get("health-probe", None).await.is_ok() {
                return c;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("etcd at {endpoint} did not come up");
}

/// Writes `keys` entries unless the data dir already holds them; returns raw key + value
/// bytes under the prefix.
pub async fn load(c: &mut etcd_client::Client, set: &str, keys: usize) -> u64 {
    let marker = format!("/bench-loaded/{SET_VERSION}/{set}/{keys}");
    if let Ok(r) = c.get(marker.as_str(), None).await {
        if let Some(kv) = r.kvs().first() {
            let bytes: u64 = kv.value_str().unwrap_or("0").parse().unwrap_or(0);
            eprintln!("etcd bench: reusing the {keys} {set} keys already in etcd");
            return bytes;
        }
    }
    let t = Instant::now();
    let mut rng = SmallRng::seed_from_u64(LOAD_SEED);
    let mut bytes = 0u64;
    let mut i = 0;
    while i < keys {
        let ops: Vec<TxnOp> = (i..(i + TXN_OPS).min(keys))
            .map(|j| {
                let (k, v) = keyset::entry(set, &mut rng, j);
                bytes += (k.len() + v.len()) as u64;
                TxnOp::put(k, v, None)
            })
            .collect();
        i += ops.len();
        c.txn(Txn::new().and_then(ops)).await.expect("load txn");
        if i % 100_000 == 0 {
            eprintln!("  loaded {i} keys ({:.0} s)", t.elapsed().as_secs_f64());
        }
    }
    c.put(marker, bytes.to_string(), None)
        .await
        .expect("marker");
    eprintln!(
        "etcd bench: loaded {keys} {set} keys, {:.0} MiB, in {:.0} s",
        bytes as f64 / 1048576.0,
        t.elapsed().as_secs_f64()
    );
    bytes
}

/// The number in environment variable `name`, or `default`.
pub fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(default)
}

/// The bench's data dir: `$var/NAME`, kept for the next run, or a temporary one (removed
/// with the `TempDir` returned beside it).
pub fn data_dir(var: &str, name: &str) -> (std::path::PathBuf, Option<tempfile::TempDir>) {
    match std::env::var_os(var) {
        Some(d) => {
            let d = std::path::PathBuf::from(d).join(name);
            std::fs::create_dir_all(&d).expect(var);
            (d, None)
        }
        None => {
            let t = tempfile::tempdir().expect("tempdir");
            (t.path().to_path_buf(), Some(t))
        }
    }
}
