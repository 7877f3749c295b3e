//! Record → replay against real etcd: the headless recorder under a mixed workload (with a
//! compaction, an etcd restart and its metrics endpoint going down), the replayed replica
//! checked against etcd as `verify` does; an empty prefix; surviving SIGKILL and a timeout;
//! a memory limit the recorder cannot keep.

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use regscope::demo::PrivateEtcd;
use regscope::record::{Player, Target};

use crate::common;
use crate::common::recording::{recorded_so_far, secret_value, snapshot_from, state, BIN};
use crate::common::require;

fn snapshot_live(endpoint: &str) -> serde_json::Value {
    let out = Command::new(BIN)
        .args(["snapshot", "--json", "--endpoints", endpoint])
        .env("HOME", "/nonexistent")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_recording_with_compaction_restart_and_scrape_loss_replays_exactly() {
    require!(ETCD);
    let mut etcd = PrivateEtcd::start().await.expect("etcd");
    let ep = etcd.endpoint();
    let mut c = etcd.client().await.unwrap();
    for i in 0..40 {
        c.put(
            format!("/registry/configmaps/default/cm{i:02}"),
            format!("v0-{i}"),
            None,
        )
        .await
        .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("session.rgs");
    let mut rec = Command::new(BIN)
        .args([
            "record",
            "-o",
            file.to_str().unwrap(),
            "--endpoints",
            &ep,
            "--show-secrets",
            "--scrape-interval",
            "1s",
        ])
        .env("HOME", "/nonexistent")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    common::wait_until("the recording to start", Duration::from_secs(20), || {
        std::fs::metadata(&file).is_ok_and(|m| m.len() > 0)
    });
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // A mixed workload: updates, creates, deletes, a Secret, a lease-attached key.
    let lease = c.lease_grant(600, None).await.unwrap().id();
    for round in 0..5 {
        for i in 0..40 {
            c.put(
                format!("/registry/configmaps/default/cm{i:02}"),
                format!("v{round}-{i}-{}", "x".repeat(i * 10)),
                None,
            )
            .await
            .unwrap();
        }
        c.put(
            format!("/registry/events/default/e{round}"),
            "event",
            Some(etcd_client::PutOptions::new().with_lease(lease)),
        )
        .await
        .unwrap();
        c.put(
            format!("/registry/secrets/default/s{round}"),
            secret_value(&format!("s{round}")),
            None,
        )
        .await
        .unwrap();
        c.delete(
            format!("/registry/configmaps/default/cm{:02}", round * 3),
            None,
        )
        .await
        .unwrap();
    }
    // A compaction: etcd's metrics (scraped every second) tell the session.
    let head = common::head_revision(&mut c).await;
    c.compact(head - 20, None).await.unwrap();
    // The recording holds it (from a scrape) before etcd goes down.
    common::wait_until_async(
        "the compaction in the recording",
        Duration::from_secs(30),
        || async { recorded_so_far(&file).is_some_and(|s| s.replica.compact_revision().is_some()) },
    )
    .await;
    // etcd restarts: the watch is lost and resumed, and the metrics endpoint is down.
    etcd.kill().unwrap();
    // An outage of a few seconds is the point: several scrapes of the metrics endpoint fail.
    tokio::time::sleep(Duration::from_secs(3)).await;
    etcd.restart().await.unwrap();
    let mut c = etcd.client().await.unwrap();
    for i in 0..20 {
        c.put(
            format!("/registry/pods/default/p{i}"),
            format!("pod-{i}"),
            None,
        )
        .await
        .unwrap();
    }
    c.delete("/registry/configmaps/default/cm01", None)
        .await
        .unwrap();
    let head = common::head_revision(&mut c).await;
    // The recorder has caught up (its own watch, then its writing out about once a second).
    common::wait_until_async(
        "the head revision in the recording",
        Duration::from_secs(30),
        || async { recorded_so_far(&file).is_some_and(|s| s.revision() >= head) },
    )
    .await;
    unsafe_kill(rec.id(), libc::SIGTERM);
    let status = rec.wait().unwrap();
    let mut err = String::new();
    use std::io::Read;
    rec.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "record: {status}: {err}");
    assert!(err.contains("SIGTERM"), "{err}");
    // The restart left a log line each way on stderr (for nohup and systemd).
    assert!(
        err.contains("regscope record: etcd connection lost"),
        "{err}"
    );
    assert!(
        err.contains("regscope record: etcd connection restored"),
        "{err}"
    );
    let live = snapshot_live(&ep);
    // The one member, polled once by the live snapshot, with its Status answer.
    let members = live["members"].as_array().expect("members");
    assert_eq!(members.len(), 1, "{members:?}");
    assert_eq!(members[0]["endpoint"], ep.as_str());
    assert!(
        members[0]["status"]["raft_index"].as_u64().unwrap() > 0,
        "{members:?}"
    );

    // Replay to the end: the replica is exactly etcd at that revision.
    let mut player = Player::open(&file).unwrap();
    assert!(player.damage().is_empty(), "{:?}", player.damage());
    let session = player.seek(Target::End);
    assert!(
        session.revision() >= head,
        "{} < {head}",
        session.revision()
    );
    let source = common::source(&ep, common::fast_sync());
    let diffs = regscope::cli::verify::verify_replica(&source, &session.replica)
        .await
        .unwrap();
    assert!(diffs.is_empty(), "{diffs:?}");
    assert!(
        session.replica.compact_revision().is_some(),
        "the compaction was seen through etcd's metrics"
    );
    // What happened is in the recording, as markers.
    let markers = player.markers(1.0, 10.0);
    let labels: Vec<&str> = markers.iter().map(|m| m.label.as_str()).collect();
    assert!(
        labels.iter().any(|l| l.starts_with("compaction at")),
        "{labels:?}"
    );
    assert!(
        labels
            .iter()
            .any(|l| l.starts_with("connection lost") || l.starts_with("etcd not responding")),
        "{labels:?}"
    );
    assert!(
        labels.iter().any(|l| l.contains("connection restored")),
        "{labels:?}"
    );
    assert!(
        labels.iter().any(|l| l.starts_with("etcd scrape failed")),
        "{labels:?}"
    );
    // snapshot --json --from at the end equals the live snapshot of the same etcd.
    let replayed = snapshot_from(&file, None);
    assert_eq!(state(&replayed), state(&live));
    assert_eq!(replayed["revision"], live["revision"]);
    // The check command agrees the file is whole.
    let out = Command::new(BIN)
        .args(["replay", "--check", file.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("damage     none"), "{text}");
    // Recorded with --show-secrets: the header says so.
    assert!(!player.header().secrets_redacted);
    // The recording began before its list: its first revision is the list's (the 40
    // puts before it at least), and a revision before it is refused, not shown empty.
    let first = player.first_revision().expect("a first revision");
    assert!(first >= 41, "{first}");
    let before = Command::new(BIN)
        .args(["snapshot", "--json", "--from", file.to_str().unwrap()])
        .arg(format!("--at=r{}", first - 1))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&before.stderr);
    assert_eq!(before.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("before the recording's first ({first})")),
        "{err}"
    );
    let at_first = snapshot_from(&file, Some(&format!("r{first}")));
    assert!(at_first["keys"].as_u64().unwrap() >= 40, "{at_first}");
}

fn unsafe_kill(pid: u32, sig: i32) {
    // SAFETY: kill(2) on a child we spawned.
    let rc = unsafe { libc::kill(pid as i32, sig) };
    assert_eq!(rc, 0);
}

// ---- recordings built in-process ------------------------------------------------------

/// A --prefix that holds nothing (a typo) is said by `verify` and by the headless
/// recorder, with the prefixes etcd holds instead; neither fails for it.
#[test]
fn an_empty_prefix_is_said_by_verify_and_record() {
    require!(ETCD);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let etcd = rt.block_on(PrivateEtcd::start()).expect("etcd");
    let ep = etcd.endpoint();
    rt.block_on(async {
        let mut c = etcd.client().await.unwrap();
        c.put("/registry/configmaps/default/a", "v", None)
            .await
            .unwrap();
    });
    let out = Command::new(BIN)
        .args(["verify", "--endpoints", &ep, "--prefix", "/nope"])
        .env("HOME", "/nonexistent")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("no keys under /nope/; top-level prefixes here: /registry"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nope.rgs");
    let out = Command::new("timeout")
        .args([
            "--preserve-status",
            "3",
            BIN,
            "record",
            "-o",
            file.to_str().unwrap(),
            "--endpoints",
            &ep,
            "--prefix",
            "/nope",
        ])
        .env("HOME", "/nonexistent")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("regscope record: no keys under /nope/"),
        "{err}"
    );
}

#[test]
fn headless_recorder_survives_sigkill_and_timeout() {
    require!(ETCD);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let etcd = rt.block_on(PrivateEtcd::start()).expect("etcd");
    let ep = etcd.endpoint();
    let dir = tempfile::tempdir().unwrap();
    // Under timeout(1): SIGTERM after 4 s closes the file cleanly.
    let clean = dir.path().join("timeout.rgs");
    let st = Command::new("timeout")
        .args([
            "--preserve-status",
            "4",
            BIN,
            "record",
            "-o",
            clean.to_str().unwrap(),
            "--endpoints",
            &ep,
        ])
        .env("HOME", "/nonexistent")
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(0), "record closes cleanly on SIGTERM");
    let p = Player::open(&clean).unwrap();
    assert!(p.damage().is_empty(), "{:?}", p.damage());
    // Under nohup(1) a hangup does not stop it (SIGHUP stays ignored); SIGTERM then does.
    let hup = dir.path().join("nohup.rgs");
    let mut child = Command::new("nohup")
        .args([
            BIN,
            "record",
            "-o",
            hup.to_str().unwrap(),
            "--endpoints",
            &ep,
        ])
        .env("HOME", "/nonexistent")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    common::wait_until(
        "the nohup recording to start",
        Duration::from_secs(20),
        || std::fs::metadata(&hup).is_ok_and(|m| m.len() > 0),
    );
    unsafe_kill(child.id(), libc::SIGHUP);
    // Time passing is the point: the recording must still run a while after SIGHUP.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "a SIGHUP under nohup stopped the recording"
    );
    unsafe_kill(child.id(), libc::SIGTERM);
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let p = Player::open(&hup).unwrap();
    assert!(p.damage().is_empty(), "{:?}", p.damage());
    // SIGKILL after the writes: what was written out replays.
    let killed = dir.path().join("killed.rgs");
    let mut child = Command::new(BIN)
        .args(["record", "-o", killed.to_str().unwrap(), "--endpoints", &ep])
        .env("HOME", "/nonexistent")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    common::wait_until("the recording to start", Duration::from_secs(20), || {
        std::fs::metadata(&killed).is_ok_and(|m| m.len() > 0)
    });
    let head = rt.block_on(async {
        let mut c = etcd.client().await.unwrap();
        for i in 0..200 {
            c.put(format!("/registry/configmaps/default/k{i}"), "v", None)
                .await
                .unwrap();
        }
        common::head_revision(&mut c).await
    });
    // The writes are on disk (written out about once a second, not at the end) before the
    // kill.
    common::wait_until(
        "the writes in the recording",
        Duration::from_secs(30),
        || recorded_so_far(&killed).is_some_and(|s| s.revision() >= head),
    );
    child.kill().unwrap();
    let _ = child.wait();
    let mut p = Player::open(&killed).unwrap();
    assert!(
        p.notes().iter().any(|d| d.contains("not closed cleanly")),
        "{:?}",
        p.notes()
    );
    assert!(
        p.damage().is_empty(),
        "a kill loses the pending second, not a frame"
    );
    let s = p.seek(Target::End);
    assert_eq!(
        s.revision(),
        head,
        "writes more than a second old were on disk"
    );
    assert_eq!(s.replica.live_keys(), 200);
    let out = Command::new(BIN)
        .args(["replay", "--check", killed.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("rebuilt by scanning"), "{text}");
    assert!(
        out.status.success(),
        "not closed cleanly is no damage: {text}"
    );
}

/// `--memory-limit` below what the session needs: `record` says so and closes a readable
/// file (exit 2) instead of growing until the kernel kills it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_under_a_memory_limit_it_cannot_keep_stops_with_a_readable_file() {
    require!(ETCD);
    let etcd = PrivateEtcd::start().await.expect("etcd");
    let mut c = etcd.client().await.unwrap();
    for i in 0..20 {
        c.put(format!("/registry/configmaps/default/cm{i:02}"), "v", None)
            .await
            .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("limited.rgs");
    // A few MiB: less than the process itself takes, so no session fits.
    let mut rec = Command::new(BIN)
        .args([
            "record",
            "-o",
            file.to_str().unwrap(),
            "--endpoints",
            &etcd.endpoint(),
            "--memory-limit",
            "4MiB",
            "--duration",
            "60s",
        ])
        .env("HOME", "/nonexistent")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut status = None;
    common::wait_until(
        "record to stop at the limit",
        Duration::from_secs(30),
        || {
            status = rec.try_wait().unwrap();
            status.is_some()
        },
    );
    let mut err = String::new();
    std::io::Read::read_to_string(&mut rec.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.unwrap().code(), Some(2), "{err}");
    assert!(
        err.contains("--memory-limit 4.0 MiB reached") && err.contains("recording is closed"),
        "{err}"
    );
    let player = Player::open(&file).expect("the file closed cleanly");
    assert!(player.damage().is_empty(), "{:?}", player.damage());
}
