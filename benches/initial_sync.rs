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
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use regscope::source::{EtcdOptions, EtcdSource, SyncOptions};

#[path = "common/etcd.rs"]
mod etcd;
#[path = "common/keyset.rs"]
mod keyset;
use etcd::{connect, load, median, start_etcd, SET_VERSION};

const BIN: &str = env!("CARGO_BIN_EXE_regscope");

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
    let keys = etcd::env_number(
        "INITIAL_SYNC_KEYS",
        if set == "large" { 100_000 } else { 1_000_000 },
    );
    let rounds = etcd::env_number("INITIAL_SYNC_ROUNDS", 3);
    let (dir, tmp) = etcd::data_dir("INITIAL_SYNC_DIR", &format!("{set}-{keys}-{SET_VERSION}"));
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
