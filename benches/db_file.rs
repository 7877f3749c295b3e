//! etcd's own db file at the scale of a big cluster, against the tool people use instead,
//! on the same file in the same run:
//! - `regscope analyze DB` against `etcdctl snapshot status DB` (target: at most 1.5× its
//!   time; resident memory under a quarter of the file's size);
//! - `regscope snapshot --json --from DB` (target: peak memory at most the raw key + value
//!   bytes of the revision it shows);
//! - `regscope replay --check DB` (every page read), for scale.
//!
//! The file: real etcd loads the `mixed` key set (1,000,000 Kubernetes objects, about 510
//! MiB of keys and values, `common/keyset.rs`), compacts, then rewrites 300,000 of them and
//! deletes 10,000, so the file holds history after its compaction, and `etcdctl snapshot
//! save` writes it (about 1 GB).
//!
//! ```text
//! cargo bench --bench db_file                       # 3 rounds, A/B alternated
//! DB_BENCH_DIR=/var/tmp/dbb cargo bench --bench db_file   # keep etcd's data and the file
//! DB_BENCH_KEYS=100000 cargo bench --bench db_file  # a smaller set
//! ```
//!
//! Needs `etcd` and `etcdctl` on PATH. Times are medians; peak resident memory is each
//! child's own (`wait4`'s `ru_maxrss`).

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use etcd_client::{Txn, TxnOp};
use rand::rngs::SmallRng;
use rand::SeedableRng;

#[path = "common/etcd.rs"]
mod etcd;
#[path = "common/keyset.rs"]
mod keyset;
use etcd::{connect, load, median, start_etcd, SET_VERSION, TXN_OPS};

const BIN: &str = env!("CARGO_BIN_EXE_regscope");

/// Runs a program to its end; its wall time and peak resident bytes. Panics when it fails.
fn measure(program: &str, args: &[&str]) -> (Duration, u64) {
    let t = Instant::now();
    // Reaped by wait4 below, which also gives this child's own peak RSS.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(program)
        .args(args)
        .env("ETCDCTL_API", "3")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet waited for; the pointers are to live locals.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4");
    let code = std::process::ExitStatus::from_raw(status).code();
    assert_eq!(code, Some(0), "{program} {args:?} failed");
    (t.elapsed(), usage.ru_maxrss as u64 * 1024)
}

/// After a compaction at the loaded revision, rewrites 3 of every 10 keys of the set (a new
/// value of the same kind from the same builders) and deletes 1 of every 100, so the file
/// holds history after its compaction; skipped when already done. The keys are the load's:
/// its sequence is replayed from its seed.
async fn add_history(c: &mut etcd_client::Client, keys: usize) {
    let marker = format!("/bench-history/{SET_VERSION}/{keys}/v2");
    if c.get(marker.as_str(), None)
        .await
        .is_ok_and(|r| !r.kvs().is_empty())
    {
        return;
    }
    let head = c
        .get("x", None)
        .await
        .expect("get")
        .header()
        .expect("header")
        .revision();
    c.compact(head, None).await.expect("compact");
    let mut load = SmallRng::seed_from_u64(etcd::LOAD_SEED);
    let mut fresh = SmallRng::seed_from_u64(0x4157);
    let mut ops = Vec::new();
    for j in 0..keys {
        let (k, _) = keyset::entry("mixed", &mut load, j);
        if j % 10 < 3 {
            let (_, v) = keyset::entry("mixed", &mut fresh, j);
            ops.push(TxnOp::put(k, v, None));
        } else if j % 100 == 99 {
            ops.push(TxnOp::delete(k, None));
        }
        if ops.len() == TXN_OPS {
            c.txn(Txn::new().and_then(std::mem::take(&mut ops)))
                .await
                .expect("history txn");
        }
    }
    if !ops.is_empty() {
        c.txn(Txn::new().and_then(ops)).await.expect("last txn");
    }
    c.put(marker, "done", None).await.expect("marker");
}

/// Raw key + value bytes of the keys alive at the head under `/registry` (what a
/// `snapshot --json` of the file shows), read through regscope's reader.
fn raw_bytes_at_head(db: &Path) -> (u64, u64) {
    let db = regscope::source::etcd_db::EtcdDb::open(db).expect("db");
    let head = db.head().expect("head");
    let (mut keys, mut bytes) = (0u64, 0u64);
    regscope::source::etcd_db::state_at(&db, head, b"/registry", |obs| {
        if let regscope::model::Observation::ListPage { kvs } = obs {
            for kv in kvs {
                keys += 1;
                bytes += (kv.key.len() + kv.value.len()) as u64;
            }
        }
    })
    .expect("state at head");
    (keys, bytes)
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    if regscope::demo::etcd_server::find_on_path("etcdctl").is_none()
        || regscope::demo::etcd_server::find_on_path("etcd").is_none()
    {
        eprintln!("db_file: etcd or etcdctl not on PATH (apt-get install etcd-server etcd-client); skipped");
        return;
    }
    let keys = etcd::env_number("DB_BENCH_KEYS", 1_000_000);
    let rounds = etcd::env_number("DB_BENCH_ROUNDS", 3);
    let (dir, tmp) = etcd::data_dir("DB_BENCH_DIR", &format!("mixed-{keys}-{SET_VERSION}"));
    let db = dir.join("snapshot.db");
    if !db.exists() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let etcd = start_etcd(&dir, None);
            let mut c = connect(&etcd.endpoint).await;
            load(&mut c, "mixed", keys).await;
            add_history(&mut c, keys).await;
            let part = dir.join("snapshot.db.part");
            let out = Command::new("etcdctl")
                .env("ETCDCTL_API", "3")
                .args(["--endpoints", &etcd.endpoint, "snapshot", "save"])
                .arg(&part)
                .output()
                .expect("etcdctl snapshot save");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::fs::rename(&part, &db).expect("rename");
        });
    }
    let _tmp = tmp;
    let file_bytes = std::fs::metadata(&db).expect("db").len();
    let d = db.to_str().expect("utf-8 path");
    eprintln!(
        "db_file: {} ({:.0} MiB)",
        db.display(),
        file_bytes as f64 / 1048576.0
    );
    // Warm the page cache for both tools alike, and check that they agree.
    let json = |program: &str, args: &[&str]| -> serde_json::Value {
        let out = Command::new(program)
            .args(args)
            .env("ETCDCTL_API", "3")
            .output()
            .expect(program);
        assert!(out.status.success(), "{program} {args:?} failed");
        serde_json::from_slice(&out.stdout).expect("JSON")
    };
    let e = json("etcdctl", &["snapshot", "status", d, "-w", "json"]);
    let a = json(BIN, &["analyze", d, "--json"]);
    let s = &a["snapshot_status"];
    for (ours, theirs) in [
        ("hash", "hash"),
        ("revision", "revision"),
        ("total_entries", "totalKey"),
        ("total_size", "totalSize"),
    ] {
        assert_eq!(
            s[ours], e[theirs],
            "analyze's {ours} against etcdctl's {theirs}"
        );
    }
    let (mut etcdctl_t, mut analyze_t) = (Vec::new(), Vec::new());
    let (mut etcdctl_rss, mut analyze_rss) = (0, 0);
    for round in 0..rounds {
        let (e, er) = measure("etcdctl", &["snapshot", "status", d, "-w", "json"]);
        let (a, ar) = measure(BIN, &["analyze", d, "--json"]);
        eprintln!(
            "  round {}: etcdctl snapshot status {:.2} s ({:.0} MiB), regscope analyze {:.2} s ({:.0} MiB)",
            round + 1,
            e.as_secs_f64(),
            er as f64 / 1048576.0,
            a.as_secs_f64(),
            ar as f64 / 1048576.0
        );
        etcdctl_t.push(e);
        analyze_t.push(a);
        etcdctl_rss = etcdctl_rss.max(er);
        analyze_rss = analyze_rss.max(ar);
    }
    let (e, a) = (median(etcdctl_t), median(analyze_t));
    println!(
        "db_file analyze: {:.2} s vs etcdctl snapshot status {:.2} s: {:.2}× (target ≤ 1.5×); peak RSS {:.0} MiB = {:.3} of the file (target < 0.25; etcdctl {:.0} MiB)",
        a.as_secs_f64(),
        e.as_secs_f64(),
        a.as_secs_f64() / e.as_secs_f64(),
        analyze_rss as f64 / 1048576.0,
        analyze_rss as f64 / file_bytes as f64,
        etcdctl_rss as f64 / 1048576.0,
    );
    let (t, rss) = measure(BIN, &["snapshot", "--json", "--from", d]);
    let (check_t, check_rss) = measure(BIN, &["replay", "--check", d]);
    // Only now, after every child is measured: a child's peak (`ru_maxrss`) starts from
    // this process's own peak when it is spawned (Linux keeps the high-water mark across
    // the exec of a vfork'd child), and reading the file here takes hundreds of MiB.
    let (live, raw) = raw_bytes_at_head(&db);
    eprintln!(
        "db_file: {live} keys alive at the head, {:.0} MiB of keys and values",
        raw as f64 / 1048576.0
    );
    println!(
        "db_file snapshot --json --from DB: {:.2} s, peak RSS {:.0} MiB = {:.2}× the {:.0} MiB of keys and values at the head (target ≤ 1.0×)",
        t.as_secs_f64(),
        rss as f64 / 1048576.0,
        rss as f64 / raw as f64,
        raw as f64 / 1048576.0
    );
    println!(
        "db_file replay --check DB: {:.2} s, peak RSS {:.0} MiB",
        check_t.as_secs_f64(),
        check_rss as f64 / 1048576.0
    );
}
