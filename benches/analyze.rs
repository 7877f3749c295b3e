//! `regscope analyze` on a big db file: the `mixed` key set's million puts made twice with
//! no compaction (Events get fresh names the second time: about 1.4 M distinct keys, 2 M
//! versions, a 1.4 GB file), saved by `etcdctl snapshot save`. Prints the file's size, the
//! release binary's wall time and peak resident memory, and `etcdctl snapshot status`'s on
//! the same file for scale, and checks that the hash and counts are etcdctl's.
//!
//! Target: peak RSS under 250 MB for a 1 GB file of 1 M keys (memory grows with the keys,
//! never with the values), the hash and counts as etcdctl's.
//!
//! ```text
//! cargo build --release && cargo bench --bench analyze
//! ANALYZE_KEYS=200000 cargo bench --bench analyze          # a smaller file
//! ANALYZE_DIR=/var/tmp/an cargo bench --bench analyze      # keep (and reuse) the db file
//! ```
//!
//! Needs `etcd` and `etcdctl` on PATH and a release build (`target/release/regscope`).
//! The key set is `mixed` of `common/keyset.rs` (Events, Leases, ConfigMaps and Secrets
//! over 200 namespaces, about 510 bytes of key and value each).

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcd_client::{Txn, TxnOp};
use rand::rngs::SmallRng;
use rand::SeedableRng;

#[path = "common/keyset.rs"]
mod keyset;

const BIN: &str = env!("CARGO_BIN_EXE_regscope");
/// Puts per load transaction (etcd's `--max-txn-ops` is raised to this).
const TXN_OPS: usize = 1000;
/// Peak resident memory the analysis of a 1 GB file of 1 M keys must stay under.
const RSS_TARGET: u64 = 250_000_000;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// etcd on `dir`; killed on drop.
struct Etcd {
    child: Child,
    endpoint: String,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_etcd(dir: &Path) -> Etcd {
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
    Etcd { child, endpoint }
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

/// Writes the set twice (the second time with other random draws: fresh values, and
/// fresh names for the Events); returns the key and value bytes written.
async fn load(c: &mut etcd_client::Client, keys: usize) -> u64 {
    let t = Instant::now();
    let mut bytes = 0u64;
    for round in 0..2u64 {
        let mut rng = SmallRng::seed_from_u64(0x5eed + round);
        let mut i = 0;
        while i < keys {
            let ops: Vec<TxnOp> = (i..(i + TXN_OPS).min(keys))
                .map(|j| {
                    let (k, v) = keyset::entry("mixed", &mut rng, j);
                    bytes += (k.len() + v.len()) as u64;
                    TxnOp::put(k, v, None)
                })
                .collect();
            i += ops.len();
            c.txn(Txn::new().and_then(ops)).await.expect("load txn");
            if i % 200_000 == 0 {
                eprintln!(
                    "  round {round}: {i} keys ({:.0} s)",
                    t.elapsed().as_secs_f64()
                );
            }
        }
    }
    eprintln!(
        "analyze: wrote {keys} keys twice, {:.0} MiB, in {:.0} s",
        bytes as f64 / 1048576.0,
        t.elapsed().as_secs_f64()
    );
    bytes
}

/// Runs `program args`, stdout to `out`: (seconds, peak RSS bytes of that process).
fn measured(program: &Path, args: &[&str], out: &Path) -> (f64, u64) {
    let t = Instant::now();
    // Reaped by wait4 below, which also gives this child's own peak RSS.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(program)
        .args(args)
        .env("ETCDCTL_API", "3")
        .stdout(std::fs::File::create(out).expect("output file"))
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet waited for; the pointers are to live locals.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4");
    let code = std::process::ExitStatus::from_raw(status).code();
    assert_eq!(code, Some(0), "{} {args:?} failed", program.display());
    (t.elapsed().as_secs_f64(), usage.ru_maxrss as u64 * 1024)
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let on_path = |p| regscope::demo::etcd_server::find_on_path(p);
    let (Some(_), Some(etcdctl)) = (on_path("etcd"), on_path("etcdctl")) else {
        eprintln!("analyze: etcd or etcdctl not on PATH (apt-get install etcd-server etcd-client); nothing measured");
        std::process::exit(1);
    };
    let release = PathBuf::from(BIN);
    let keys: usize = std::env::var("ANALYZE_KEYS")
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(1_000_000);
    let (dir, _tmp) = match std::env::var_os("ANALYZE_DIR") {
        Some(d) => {
            let d = PathBuf::from(d).join(format!("mixed-{keys}-twice"));
            std::fs::create_dir_all(&d).expect("ANALYZE_DIR");
            (d, None)
        }
        None => {
            let t = tempfile::tempdir().expect("tempdir");
            (t.path().to_path_buf(), Some(t))
        }
    };
    let db = dir.join("snapshot.db");
    if db.exists() {
        eprintln!("analyze: reusing {}", db.display());
    } else {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let etcd = start_etcd(&dir);
            let mut c = connect(&etcd.endpoint).await;
            load(&mut c, keys).await;
            let partial = dir.join("snapshot.db.part");
            let st = Command::new(&etcdctl)
                .env("ETCDCTL_API", "3")
                .args(["--endpoints", &etcd.endpoint, "--command-timeout=600s"])
                .args(["snapshot", "save"])
                .arg(&partial)
                .stdout(Stdio::null())
                .status()
                .expect("etcdctl snapshot save");
            assert!(st.success(), "etcdctl snapshot save failed");
            std::fs::rename(&partial, &db).expect("rename the snapshot");
            let _ = std::fs::remove_dir_all(dir.join("data"));
        });
    }
    let size = std::fs::metadata(&db).expect("the db file").len();
    let db_arg = db.to_str().expect("a UTF-8 path");
    let status_out = dir.join("status.json");
    let (status_secs, status_rss) = measured(
        &etcdctl,
        &["snapshot", "status", db_arg, "-w", "json"],
        &status_out,
    );
    let analyze_out = dir.join("analyze.json");
    let (secs, rss) = measured(&release, &["analyze", db_arg, "--json"], &analyze_out);
    let status: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&status_out).expect("status")).expect("JSON");
    let ours: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&analyze_out).expect("analyze")).expect("JSON");
    let s = &ours["snapshot_status"];
    let agree = s["hash"] == status["hash"]
        && s["revision"] == status["revision"]
        && s["total_size"] == status["totalSize"]
        && (s["total_entries"] == status["totalKey"] || s["live_keys"] == status["totalKey"]);
    println!(
        "analyze: {} MiB file, {} keys ({} live), {} versions",
        size / 1048576,
        ours["all_keys"]["keys"],
        ours["all_keys"]["live_keys"],
        ours["all_keys"]["revisions"]
    );
    println!(
        "  regscope analyze --json      {secs:7.1} s  peak RSS {:6.1} MB (target < {} MB for 1 GB / 1 M keys): {}",
        rss as f64 / 1e6,
        RSS_TARGET / 1_000_000,
        if rss < RSS_TARGET { "met" } else { "MISSED" }
    );
    println!(
        "  etcdctl snapshot status      {status_secs:7.1} s  peak RSS {:6.1} MB",
        status_rss as f64 / 1e6
    );
    println!(
        "  hash, revision, totalKey, totalSize as etcdctl's: {}",
        if agree { "yes" } else { "NO" }
    );
    if !agree {
        println!("  etcdctl: {status}\n  regscope: {s}");
        std::process::exit(1);
    }
}
