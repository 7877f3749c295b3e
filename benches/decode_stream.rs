//! `regscope decode` of one big `etcdctl get --prefix -w json` document, end to end (the
//! release binary reading a file, writing to /dev/null): time and peak resident memory
//! for 2,000, 20,000 and 60,000 Pods, so that linear time and flat memory show
//! (target: at least 10,000 Pods/s, memory flat in the input size).
//!
//! The Pods are the demo's (`regscope::demo::objects`): Deployment-owned Pods, scheduled
//! and running, protobuf-encoded as kube-apiserver stores them (about 2 KB each), with
//! their keys and revisions as etcdctl writes them (base64 key and value).
//!
//! Run: `cargo bench --bench decode_stream` (`-- N…` for other sizes).

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::Instant;

use base64::Engine as _;
use rand::rngs::StdRng;
use rand::SeedableRng;
use regscope::demo::objects as o;

const BIN: &str = env!("CARGO_BIN_EXE_regscope");

/// Writes an etcdctl JSON document of `n` Pods to `path`; returns its size in bytes.
fn document(path: &std::path::Path, n: usize) -> u64 {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let mut rng = StdRng::seed_from_u64(7);
    let dep = o::deployment(&mut rng, "shop", "web", 3, "registry.k8s.io/nginx:1.27");
    let rs = o::replica_set(&mut rng, &dep, "7d9c8b6f5", 3);
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    write!(
        f,
        r#"{{"header":{{"cluster_id":14841639068965178418,"member_id":10276657743932975437,"revision":{},"raft_term":2}},"kvs":["#,
        n + 100
    )
    .unwrap();
    for i in 0..n {
        let mut pod = o::pod_for(&mut rng, &rs);
        o::bind_pod(&mut pod, &format!("node-{:03}", i % 200));
        o::run_pod(
            &mut pod,
            &format!("10.1.{}.{}", i / 250, i % 250),
            "10.0.0.1",
        );
        let name = pod
            .metadata
            .as_ref()
            .and_then(|m| m.name.clone())
            .unwrap_or_default();
        let key = format!("/registry/pods/shop/{name}-{i}");
        let value = o::encode_object(&pod);
        if i > 0 {
            f.write_all(b",").unwrap();
        }
        write!(
            f,
            r#"{{"key":"{}","create_revision":{},"mod_revision":{},"version":3,"value":"{}"}}"#,
            b64(key.as_bytes()),
            i + 2,
            i + 50,
            b64(&value)
        )
        .unwrap();
    }
    write!(f, r#"],"count":{n}}}"#).unwrap();
    f.flush().unwrap();
    std::fs::metadata(path).unwrap().len()
}

/// Runs the binary on `path`; returns (seconds, peak RSS in bytes, exit code).
fn run(path: &std::path::Path, output: &str) -> (f64, u64, i32) {
    let t = Instant::now();
    // Reaped by wait4 below, which also gives this child's own peak RSS.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(BIN)
        .args(["decode", "-o", output])
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn regscope");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet waited for; the pointers are to live locals.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4");
    let secs = t.elapsed().as_secs_f64();
    let code = std::process::ExitStatus::from_raw(status)
        .code()
        .unwrap_or(-1);
    (secs, usage.ru_maxrss as u64 * 1024, code)
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![2_000, 20_000, 60_000]
    } else {
        sizes
    };
    let dir = tempfile::tempdir().expect("tempdir");
    for n in sizes {
        let path = dir.path().join(format!("pods-{n}.json"));
        let bytes = document(&path, n);
        for output in ["jsonl", "yaml"] {
            let (secs, rss, code) = run(&path, output);
            assert_eq!(code, 0, "regscope decode -o {output} exited {code}");
            println!(
                "decode -o {output:5} {n:>6} Pods ({:.1} MiB of etcdctl JSON): {secs:.2} s = {:.0} Pods/s, peak RSS {:.1} MiB",
                bytes as f64 / 1048576.0,
                n as f64 / secs,
                rss as f64 / 1048576.0
            );
        }
    }
}
