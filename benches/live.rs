//! Live load: the real console (release binary, drawing in a 160x48 tmux pane) against a
//! private etcd that the demo simulation drives as fast as etcd takes writes (`rate 0`).
//!
//! `cargo bench --bench live` (needs etcd and tmux; builds nothing itself: run
//! `cargo build --release` first; `LIVE_PRELOAD=1000000` first writes that many keys of the
//! `mixed` set, see `common/keyset.rs`, and waits for the console's list) prints the write rate reached, the console's lag behind
//! etcd's head (revisions and seconds, sampled once a second from the screen) beside that
//! of `etcdctl watch --prefix /registry` under the same load, the console process's CPU
//! under load and when idle.

use std::process::Command;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use regscope::demo::{PrivateEtcd, SimConfig, Simulation};

#[path = "common/keyset.rs"]
mod keyset;
#[path = "common/process.rs"]
mod process;
use process::{process_cpu as cpu_seconds, rss_mib};

const LOAD_SECS: u64 = 20;
const IDLE_SECS: u64 = 10;

fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux").args(args).output().expect("tmux");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The head revision the console shows in its header (`rev 12,345`).
fn shown_revision(screen: &str) -> Option<i64> {
    let line = screen.lines().nth(1)?;
    let at = line.find("rev ")? + 4;
    let digits: String = line[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(|c| *c != ',')
        .collect();
    digits.parse().ok()
}

fn main() {
    let bin = concat!(env!("CARGO_MANIFEST_DIR"), "/target/release/regscope");
    if !std::path::Path::new(bin).exists() {
        eprintln!("live: build the release binary first (cargo build --release); skipped");
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let preload: usize = std::env::var("LIVE_PRELOAD")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    rt.block_on(async {
        let etcd = PrivateEtcd::start_with(&[
            "--max-txn-ops=1000",
            "--max-request-bytes=33554432",
            "--quota-backend-bytes=8589934592",
        ])
        .await
        .expect("etcd");
        let mut client = etcd.client().await.expect("client");
        if preload > 0 {
            let t = Instant::now();
            let mut rng = rand::rngs::SmallRng::seed_from_u64(0x5eed);
            let mut i = 0;
            while i < preload {
                let ops: Vec<etcd_client::TxnOp> = (i..(i + 1000).min(preload))
                    .map(|j| {
                        let (k, v) = keyset::entry("mixed", &mut rng, j);
                        etcd_client::TxnOp::put(k, v, None)
                    })
                    .collect();
                i += ops.len();
                client
                    .txn(etcd_client::Txn::new().and_then(ops))
                    .await
                    .expect("preload");
            }
            eprintln!("live: preloaded {preload} keys in {:.0} s", t.elapsed().as_secs_f64());
        }
        let session = format!("regscope-live-{}", std::process::id());
        let cmd = format!("{bin} --endpoints {}", etcd.endpoint());
        tmux(&["new-session", "-d", "-s", &session, "-x", "160", "-y", "48", &cmd]);
        tokio::time::sleep(Duration::from_secs(2)).await;
        if preload > 0 {
            // The console's first list must be done before the load starts.
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(120) {
                let screen = tmux(&["capture-pane", "-p", "-t", &session]);
                if screen.lines().next().is_some_and(|l| l.contains("watching")) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            eprintln!("live: console listed {preload} keys in {:.1} s", t.elapsed().as_secs_f64() + 2.0);
        }
        let pid: u32 = tmux(&["display-message", "-p", "-t", &session, "#{pane_pid}"])
            .trim()
            .parse()
            .expect("pane pid");

        // LIVE_LOAD=txn: writers that rewrite the preloaded keys in transactions of 100
        // puts, as fast as etcd takes them (many events per revision, as a controller's
        // burst or a relist storm's writes); otherwise the demo's simulated control plane.
        let txn_load = std::env::var("LIVE_LOAD").is_ok_and(|v| v == "txn") && preload > 0;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let puts = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let mut writers = Vec::new();
        let sim = if txn_load {
            for w in 0..4u64 {
                let mut c = etcd.client().await.expect("client");
                let (stop, puts) = (stop.clone(), puts.clone());
                writers.push(tokio::spawn(async move {
                    let mut rng = rand::rngs::SmallRng::seed_from_u64(w);
                    let mut j = (w as usize * 250_000) % preload;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let ops: Vec<etcd_client::TxnOp> = (0..100)
                            .map(|_| {
                                j = (j + 1) % preload;
                                let (k, v) = keyset::entry("mixed", &mut rng, j);
                                etcd_client::TxnOp::put(k, v, None)
                            })
                            .collect();
                        if c.txn(etcd_client::Txn::new().and_then(ops)).await.is_ok() {
                            puts.fetch_add(100, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                }));
            }
            None
        } else {
            Some(
                Simulation::start(
                    &etcd,
                    SimConfig {
                        rate: 0,
                        nodes: 20,
                        ..SimConfig::default()
                    },
                )
                .await
                .expect("simulation"),
            )
        };
        tokio::time::sleep(Duration::from_secs(3)).await;

        let head = |c: &mut etcd_client::Client| {
            let mut c = c.clone();
            async move {
                c.get("/", Some(etcd_client::GetOptions::new().with_count_only()))
                    .await
                    .ok()
                    .and_then(|r| r.header().map(|h| h.revision()))
                    .unwrap_or(0)
            }
        };
        // etcdctl watching the same prefix under the same load: what a plain etcd watcher
        // sees, so that a lag of the console's own is told apart from etcd's delivery.
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(0));
        let mut watcher = Command::new("etcdctl")
            .args(["--endpoints", &etcd.endpoint(), "watch", "--prefix", "/registry", "-w", "json"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .ok();
        if let Some(out) = watcher.as_mut().and_then(|w| w.stdout.take()) {
            let seen = seen.clone();
            std::thread::spawn(move || {
                use std::io::BufRead;
                // One JSON line per watch response; its last event's mod_revision is the
                // newest revision this watcher has received.
                for line in std::io::BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    let Some(at) = line.rfind("\"mod_revision\":") else { continue };
                    let digits: String = line[at + 15..]
                        .chars()
                        .take_while(char::is_ascii_digit)
                        .collect();
                    if let Ok(r) = digits.parse::<i64>() {
                        seen.fetch_max(r, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let start_head = head(&mut client).await;
        let cpu0 = cpu_seconds(pid);
        let t0 = Instant::now();
        let (mut lags, mut etcdctl_lags) = (Vec::new(), Vec::new());
        for _ in 0..LOAD_SECS {
            tokio::time::sleep(Duration::from_secs(1)).await;
            // Read the screen and etcdctl's newest revision first, then etcd's head: the
            // lags are upper bounds.
            let screen = tmux(&["capture-pane", "-p", "-t", &session]);
            let watched = seen.load(std::sync::atomic::Ordering::Relaxed);
            let h = head(&mut client).await;
            if let Some(shown) = shown_revision(&screen) {
                lags.push(h - shown);
            }
            if watched > 0 {
                etcdctl_lags.push(h - watched);
            }
        }
        let load_wall = t0.elapsed().as_secs_f64();
        let load_cpu = cpu_seconds(pid) - cpu0;
        let end_head = head(&mut client).await;
        let rate = (end_head - start_head) as f64 / load_wall;
        let puts_done = puts.load(std::sync::atomic::Ordering::Relaxed);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for w in writers {
            let _ = w.await;
        }
        let stats = match sim {
            Some(sim) => {
                let s = sim.stop().await;
                format!("sim: {} writes, {} conflicts, {} errors", s.writes, s.conflicts, s.errors)
            }
            None => format!(
                "{:.0} puts/s in transactions of 100",
                puts_done as f64 / load_wall
            ),
        };

        tokio::time::sleep(Duration::from_secs(3)).await;
        let cpu1 = cpu_seconds(pid);
        tokio::time::sleep(Duration::from_secs(IDLE_SECS)).await;
        let idle_cpu = cpu_seconds(pid) - cpu1;
        let rss = rss_mib(pid);
        tmux(&["kill-session", "-t", &session]);
        if let Some(mut w) = watcher {
            let _ = w.kill();
            let _ = w.wait();
        }

        lags.sort();
        etcdctl_lags.sort();
        let max = lags.last().copied().unwrap_or(-1);
        let p50 = lags.get(lags.len() / 2).copied().unwrap_or(-1);
        println!(
            "live: etcd write rate {rate:.0} revisions/s over {load_wall:.0} s ({stats}), {preload} keys preloaded"
        );
        println!(
            "live: console lag behind etcd head: p50 {p50} revisions ({:.3} s), max {max} revisions ({:.3} s), {} samples",
            p50 as f64 / rate.max(1.0),
            max as f64 / rate.max(1.0),
            lags.len()
        );
        let (emax, ep50) = (
            etcdctl_lags.last().copied().unwrap_or(-1),
            etcdctl_lags.get(etcdctl_lags.len() / 2).copied().unwrap_or(-1),
        );
        println!(
            "live: etcdctl watch --prefix /registry under the same load: p50 {ep50} revisions ({:.3} s), max {emax} revisions ({:.3} s), {} samples",
            ep50 as f64 / rate.max(1.0),
            emax as f64 / rate.max(1.0),
            etcdctl_lags.len()
        );
        println!(
            "live: console CPU under load {:.1} % of one core; idle {:.2} % over {IDLE_SECS} s; RSS {rss:.1} MiB",
            100.0 * load_cpu / load_wall,
            100.0 * idle_cpu / IDLE_SECS as f64
        );
    });
}
