//! Initial sync at the scale of a big cluster, against the tool people use instead:
//! `etcdctl get --prefix /registry -w protobuf > /dev/null`, in the same run on the same etcd.
//!
//! Two key sets (Kubernetes protobuf encodings made by the demo's object builders):
//! - `mixed` (default): 1,000,000 keys — Events, Leases, ConfigMaps and Secrets over 200
//!   namespaces, about 510 MiB of keys and values;
//! - `large`: 100,000 ConfigMaps of about 5 KiB.
//!
//! ```text
//! cargo bench --bench initial_sync                      # mixed, 3 rounds
//! INITIAL_SYNC_SET=large cargo bench --bench initial_sync
//! INITIAL_SYNC_DIR=/var/tmp/is cargo bench --bench initial_sync   # keep etcd's data dir
//! ```
//!
//! Needs `etcd` and `etcdctl` on PATH. With `INITIAL_SYNC_DIR`, etcd's data dir is kept
//! there (one per set) and reused by the next run instead of loading the keys again (a
//! million keys take a minute or two to write). Each round times etcdctl, then the
//! in-process sync (`cli::snapshot::snapshot_replica`, the code `snapshot` and `verify` run), and
//! prints the medians and their ratio (target: regscope ≤ 1.0× etcdctl). When a release
//! build exists (`cargo build --release`), it also runs `regscope snapshot --json` once and
//! prints its wall time and peak resident memory against the raw key + value bytes, and
//! (with tmux) the console's start-up on a node: `regscope --root TREE` where TREE holds a
//! kube-apiserver static pod manifest naming this etcd, from the process start (discovery
//! included) to the first full screen showing every key, as a person would see it.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcd_client::{Txn, TxnOp};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use regscope::source::{EtcdOptions, EtcdSource, SyncOptions};

#[path = "common/keyset.rs"]
mod keyset;

const BIN: &str = env!("CARGO_BIN_EXE_regscope");
/// Changes whenever the key sets (`common/keyset.rs`) change, so a kept data dir is not
/// reused.
const SET_VERSION: u32 = 2;
/// Puts per load transaction (etcd's `--max-txn-ops` is raised to this).
const TXN_OPS: usize = 1000;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// etcd on a data dir that may already hold the set; killed on drop.
struct Etcd {
    child: Child,
    endpoint: String,
    _tmp: Option<tempfile::TempDir>,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_etcd(dir: &Path, tmp: Option<tempfile::TempDir>) -> Etcd {
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

async fn connect(endpoint: &str) -> etcd_client::Client {
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
async fn load(c: &mut etcd_client::Client, set: &str, keys: usize) -> u64 {
    let marker = format!("/bench-loaded/{SET_VERSION}/{set}/{keys}");
    if let Ok(r) = c.get(marker.as_str(), None).await {
        if let Some(kv) = r.kvs().first() {
            let bytes: u64 = kv.value_str().unwrap_or("0").parse().unwrap_or(0);
            eprintln!("initial_sync: reusing the {keys} {set} keys already in etcd");
            return bytes;
        }
    }
    let t = Instant::now();
    let mut rng = SmallRng::seed_from_u64(0x5eed);
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
        "initial_sync: loaded {keys} {set} keys, {:.0} MiB, in {:.0} s",
        bytes as f64 / 1048576.0,
        t.elapsed().as_secs_f64()
    );
    bytes
}

/// CPU seconds (user + system) this process has used so far.
fn own_cpu() -> f64 {
    // SAFETY: an all-zero rusage is a valid value for getrusage to fill in.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer is to a live local.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn etcdctl(endpoint: &str) -> Duration {
    let t = Instant::now();
    let st = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args([
            "--endpoints",
            endpoint,
            // The default 5 s ends a full read of a big keyspace.
            "--command-timeout=300s",
            "get",
            "--prefix",
            "/registry",
            "-w",
            "protobuf",
        ])
        .stdout(Stdio::null())
        .status()
        .expect("run etcdctl");
    assert!(st.success(), "etcdctl failed");
    t.elapsed()
}

/// The console's start-up on a node, in seconds: a kubeadm-like tree whose kube-apiserver
/// manifest names `endpoint`, `regscope --root TREE` in a detached tmux pane (120x40), and
/// the time until the pane shows the header with `keys` keys and the watch running.
/// `None` without tmux or the binary, or when the screen does not come within 10 minutes.
fn console_startup(endpoint: &str, keys: usize) -> Option<f64> {
    let release = PathBuf::from(BIN);
    if !release.exists() || regscope::demo::etcd_server::find_on_path("tmux").is_none() {
        return None;
    }
    let tree = tempfile::tempdir().ok()?;
    let manifests = tree.path().join("etc/kubernetes/manifests");
    std::fs::create_dir_all(&manifests).ok()?;
    std::fs::write(
        manifests.join("kube-apiserver.yaml"),
        format!(
            "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: kube-apiserver\n    command:\n    - kube-apiserver\n    - --etcd-servers={endpoint}\n"
        ),
    )
    .ok()?;
    let sock = format!("regscope-startup-{}", std::process::id());
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .arg("-L")
            .arg(&sock)
            .args(args)
            .output()
            .ok()
    };
    let cmd = format!(
        "env REGSCOPE_CONFIG= KUBECONFIG=/nonexistent {} --root {} --informers none",
        release.display(),
        tree.path().display()
    );
    let want = format!("keys {}", regscope::derive::units::thousands(keys as u64));
    let t = Instant::now();
    tmux(&["new-session", "-d", "-x", "120", "-y", "40", &cmd])?;
    let mut secs = None;
    while t.elapsed() < Duration::from_secs(600) {
        if let Some(out) = tmux(&["capture-pane", "-p"]) {
            let screen = String::from_utf8_lossy(&out.stdout);
            if screen.contains(&want) && screen.contains("watching") {
                secs = Some(t.elapsed().as_secs_f64());
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = tmux(&["send-keys", "q"]);
    std::thread::sleep(Duration::from_millis(300));
    let _ = tmux(&["kill-server"]);
    secs
}

/// Runs the release binary's `snapshot --json`: (seconds, peak RSS bytes).
fn binary_snapshot(endpoint: &str) -> Option<(f64, u64)> {
    let release = PathBuf::from(BIN);
    if !release.exists() {
        return None;
    }
    let t = Instant::now();
    // Reaped by wait4 below, which also gives this child's own peak RSS.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(&release)
        .args(["snapshot", "--json", "--endpoints", endpoint])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .ok()?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet waited for; the pointers are to live locals.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4");
    let code = std::process::ExitStatus::from_raw(status).code();
    assert_eq!(code, Some(0), "regscope snapshot failed");
    Some((t.elapsed().as_secs_f64(), usage.ru_maxrss as u64 * 1024))
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    if regscope::demo::etcd_server::find_on_path("etcdctl").is_none()
        || regscope::demo::etcd_server::find_on_path("etcd").is_none()
    {
        eprintln!("initial_sync: etcd or etcdctl not on PATH (apt-get install etcd-server etcd-client); skipped");
        return;
    }
    let set = std::env::var("INITIAL_SYNC_SET").unwrap_or_else(|_| "mixed".into());
    let keys: usize = std::env::var("INITIAL_SYNC_KEYS")
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(if set == "large" { 100_000 } else { 1_000_000 });
    let rounds: usize = std::env::var("INITIAL_SYNC_ROUNDS")
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(3);
    let (dir, tmp) = match std::env::var_os("INITIAL_SYNC_DIR") {
        Some(d) => {
            let d = PathBuf::from(d).join(format!("{set}-{keys}-{SET_VERSION}"));
            std::fs::create_dir_all(&d).expect("INITIAL_SYNC_DIR");
            (d, None)
        }
        None => {
            let t = tempfile::tempdir().expect("tempdir");
            (t.path().to_path_buf(), Some(t))
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let etcd = start_etcd(&dir, tmp);
        let mut c = connect(&etcd.endpoint).await;
        let raw = load(&mut c, &set, keys).await;
        drop(c);

        // INITIAL_SYNC_CONCURRENCY and INITIAL_SYNC_PAGE_BYTES try other list settings.
        let mut sync = SyncOptions::default();
        if let Some(n) = std::env::var("INITIAL_SYNC_CONCURRENCY").ok().and_then(|v| v.parse().ok()) {
            sync.list_concurrency = n;
        }
        if let Some(n) = std::env::var("INITIAL_SYNC_PAGE_BYTES").ok().and_then(|v| v.parse().ok()) {
            sync.page_target_bytes = n;
        }
        let mut etcdctl_t = Vec::new();
        let mut ours = Vec::new();
        for round in 0..rounds {
            let e = etcdctl(&etcd.endpoint);
            let source = EtcdSource::new(
                EtcdOptions {
                    endpoints: vec![etcd.endpoint.clone()],
                    ..Default::default()
                }
                .with_defaults(),
                sync.clone(),
            );
            let t = Instant::now();
            let cpu = own_cpu();
            let mut session = regscope::store::Session::new(Default::default());
            regscope::cli::snapshot::snapshot_replica(&source, &mut session, None)
                .await
                .expect("sync");
            let o = t.elapsed();
            let cpu = own_cpu() - cpu;
            assert_eq!(session.replica.live_keys(), keys as u64);
            eprintln!(
                "  round {}: etcdctl {:.2} s, regscope {:.2} s ({cpu:.2} s of CPU)",
                round + 1,
                e.as_secs_f64(),
                o.as_secs_f64()
            );
            etcdctl_t.push(e);
            ours.push(o);
        }
        let (e, o) = (median(etcdctl_t), median(ours));
        println!(
            "initial_sync {set}: {keys} keys, {:.0} MiB raw: etcdctl get --prefix -w protobuf {:.2} s, regscope sync {:.2} s, ratio {:.2} (median of {rounds})",
            raw as f64 / 1048576.0,
            e.as_secs_f64(),
            o.as_secs_f64(),
            o.as_secs_f64() / e.as_secs_f64()
        );
        if let Some(secs) = console_startup(&etcd.endpoint, keys) {
            println!(
                "initial_sync {set}: console start-up on a node (discovery from the kube-apiserver manifest, then the list) to the first full screen with {keys} keys: {secs:.2} s"
            );
        }
        if let Some((secs, rss)) = binary_snapshot(&etcd.endpoint) {
            println!(
                "initial_sync {set}: regscope snapshot --json {secs:.2} s, peak RSS {:.0} MiB = {:.2}x the raw bytes",
                rss as f64 / 1048576.0,
                rss as f64 / raw as f64
            );
        }
    });
}
