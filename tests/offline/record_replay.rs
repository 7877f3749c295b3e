//! Record → replay round trips: the headless recorder against real etcd under a mixed
//! workload (with a compaction, an etcd restart and its metrics endpoint going down), the
//! replayed replica checked against etcd as `verify` does, seeking by every route to the
//! same cursor, every truncation and random damage of a recording, Secret redaction and
//! the file mode.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::common::fixtures;
use crate::common::recording::{
    at, contains, frame, secret_value, snapshot_from, whole, BIN, PLAINTEXT,
};
use crate::common::require;
use regscope::demo::objects::encode_object;
use regscope::model::{
    Bytes, EventKind, KeyValue, Observation, ScrapeOutcome, ScrapeTarget, SessionInfo, Stamped,
    WatchEvent,
};
use regscope::record::{CheckpointPolicy, Player, RecordOptions, Recorder, Target};
use regscope::store::Session;
use regscope::tui::{App, Settings};

/// The recording in the repository (scripts/record-demo.sh).
pub(crate) fn demo_recording() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings/demo.rgs")
}

/// The binary's stdout for `args` under the time zone `tz`; fails the test, with its
/// stderr, when it does not exit 0.
pub(crate) fn run_ok(tz: &str, args: &[&str]) -> String {
    let out = Command::new(BIN).env("TZ", tz).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "TZ={tz} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `snapshot --json --from FILE --at AT`, whatever it answers.
fn snapshot_output(file: &Path, at: &str) -> std::process::Output {
    Command::new(BIN)
        .args([
            "snapshot",
            "--json",
            "--from",
            file.to_str().unwrap(),
            "--at",
            at,
        ])
        .output()
        .unwrap()
}

pub(crate) fn kv(key: &str, rev: i64, version: i64, value: Vec<u8>) -> KeyValue {
    KeyValue {
        key: Bytes::from(key.to_string()),
        create_revision: rev - version + 1,
        mod_revision: rev,
        version,
        lease: 0,
        value: value.into(),
    }
}

/// A synthetic session: a list, a minute of watch events (a Secret among them, with its
/// previous version), clock ticks, scrapes of a real apiserver capture with NaN/±Inf/−0
/// lines added, a failed scrape and a compaction.
pub(crate) fn stream(seconds: u64) -> Vec<Stamped> {
    let mut out = vec![
        Stamped {
            at: at(0),
            obs: Observation::ListBegin { revision: 10 },
        },
        Stamped {
            at: at(0),
            obs: Observation::ListPage {
                kvs: (2..10)
                    .map(|r| {
                        kv(
                            &format!("/registry/configmaps/ns/c{r}"),
                            r,
                            1,
                            b"x".to_vec(),
                        )
                    })
                    .chain([kv("/registry/secrets/ns/s", 10, 1, secret_value("s"))])
                    .collect(),
            },
        },
        Stamped {
            at: at(0),
            obs: Observation::ListDone {
                revision: 10,
                compacted: None,
            },
        },
    ];
    // kube-apiserver's storage flags, and an events etcd (its own revisions) that writes
    // three Events a second, goes down at 20 s and comes back at 25 s.
    out.push(Stamped {
        at: at(0),
        obs: Observation::ApiserverFlags(regscope::model::ApiserverFlags {
            file: "/etc/kubernetes/manifests/kube-apiserver.yaml".into(),
            flags: vec![("--watch-cache-sizes".into(), "secrets#0".into())],
        }),
    });
    let events_etcd = |what| {
        Observation::OtherCluster(regscope::model::OtherClusterObs {
            resources: "/events".into(),
            what,
        })
    };
    let events_up = |revision| {
        events_etcd(regscope::model::OtherClusterWhat::Up {
            endpoint: "https://127.0.0.1:2381".into(),
            version: "3.5.1".into(),
            cluster_id: 9,
            revision,
            db_size: 1 << 20,
            keys: 100,
        })
    };
    out.push(Stamped {
        at: at(0),
        obs: events_up(1000),
    });
    let body = scrape_body();
    let mut rev = 10;
    for s in 1..=seconds {
        let obs = match s {
            20 => events_etcd(regscope::model::OtherClusterWhat::Down {
                error: "connection refused".into(),
            }),
            25 => events_up(1000 + 3 * s as i64),
            _ => events_etcd(regscope::model::OtherClusterWhat::Writes {
                revision: 1000 + 3 * s as i64,
                puts: 3,
                creates: 1,
                deletes: 1,
                bytes: 300,
            }),
        };
        out.push(Stamped { at: at(s), obs });
        for k in 0..5 {
            rev += 1;
            let key = format!("/registry/configmaps/ns/c{}", 2 + (rev + k) % 8);
            let prev = kv(&key, rev - 1, 1, b"old".to_vec());
            out.push(Stamped {
                at: at(s),
                obs: Observation::Events {
                    revision: rev,
                    events: vec![WatchEvent {
                        kind: EventKind::Put,
                        kv: kv(
                            &key,
                            rev,
                            2,
                            configmap_by(&key, k % 3, rev, &"y".repeat(k as usize * 20)),
                        ),
                        prev_kv: Some(prev),
                    }],
                },
            });
        }
        if s % 7 == 0 {
            rev += 1;
            out.push(Stamped {
                at: at(s),
                obs: Observation::Events {
                    revision: rev,
                    events: vec![WatchEvent {
                        kind: EventKind::Put,
                        kv: kv("/registry/secrets/ns/s", rev, 2, secret_value("s")),
                        prev_kv: Some(kv("/registry/secrets/ns/s", 10, 1, secret_value("s"))),
                    }],
                },
            });
        }
        if s % 5 == 0 {
            let outcome = if s == 15 {
                ScrapeOutcome::Failed {
                    source: "http://127.0.0.1:1/metrics".into(),
                    error: "connection refused".into(),
                }
            } else {
                ScrapeOutcome::Body {
                    source: "capture".into(),
                    body: Bytes::from(body.replace("SCRAPE_N", &s.to_string())),
                }
            };
            out.push(Stamped {
                at: at(s),
                obs: Observation::Scrape {
                    target: ScrapeTarget::Apiserver,
                    outcome,
                },
            });
        }
        if s == seconds / 2 {
            out.push(Stamped {
                at: at(s),
                obs: Observation::Compacted {
                    revision: rev - 10,
                    source: regscope::model::CompactionSource::CompactRevKey,
                },
            });
        }
        out.push(Stamped {
            at: at(s),
            obs: Observation::Tick,
        });
    }
    out
}

/// A JSON ConfigMap whose newest managedFields entry names `writer-{w}` (writer-2 through
/// the `status` subresource with server-side apply), so that who-writes is part of what a
/// replay must reproduce.
fn configmap_by(key: &str, w: i64, rev: i64, pad: &str) -> Vec<u8> {
    let (op, sub) = if w == 2 {
        ("Apply", "status")
    } else {
        ("Update", "")
    };
    serde_json::to_vec(&serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": key.rsplit('/').next().unwrap(), "namespace": "ns",
            "managedFields": [
                {"manager": "old-writer", "operation": "Update", "time": "2024-01-01T00:00:00Z"},
                {"manager": format!("writer-{w}"), "operation": op, "subresource": sub,
                 "time": format!("2024-01-02T00:00:{:02}Z", rev % 60)}]},
        "data": {"v": format!("value {rev} {pad}")}
    }))
    .unwrap()
}

/// A real kube-apiserver 1.34 `/metrics` capture from `../shared/testdata`.
fn apiserver_capture() -> String {
    std::fs::read_to_string(
        fixtures::testdata().join("apiserver-metrics/kube-apiserver-v1.34.0.prom"),
    )
    .expect("the kube-apiserver 1.34 capture in ../shared/testdata")
}

/// A real kube-apiserver capture plus special values, so that bit-exactness of NaN, ±Inf
/// and −0 is checked through the whole path.
fn scrape_body() -> String {
    let mut body = apiserver_capture();
    body.push_str("regscope_test_nan NaN\nregscope_test_inf +Inf\nregscope_test_ninf -Inf\nregscope_test_negzero -0\nregscope_test_seq SCRAPE_N\n");
    body
}

pub(crate) fn record_stream(
    path: &Path,
    all: &[Stamped],
    policy: CheckpointPolicy,
    show_secrets: bool,
) {
    record_stream_from(path, &[], all, policy, show_secrets);
}

/// As [`record_stream`], with the recording started after `before` was applied (a
/// recording begun mid-session).
fn record_stream_from(
    path: &Path,
    before: &[Stamped],
    all: &[Stamped],
    policy: CheckpointPolicy,
    show_secrets: bool,
) {
    let info = SessionInfo {
        title: "synthetic".into(),
        started_at: at(0),
        ..Default::default()
    };
    let opts = RecordOptions {
        show_secrets,
        policy,
        ..RecordOptions::new(path)
    };
    record_with(info, opts, 7, before, all, &mut |_| {});
}

/// Applies `before` to a fresh session of `info`, starts a recorder with `opts` (etcd
/// cluster id `cluster_id`), then applies and records `all` as the console does (each
/// observation, then the recorder's upkeep), calling `check` after each; the live
/// session at the end.
fn record_with(
    info: SessionInfo,
    opts: RecordOptions,
    cluster_id: u64,
    before: &[Stamped],
    all: &[Stamped],
    check: &mut dyn FnMut(&mut Recorder),
) -> Session {
    let mut session = Session::new(info);
    for st in before {
        session.apply(st);
    }
    let mut rec = Recorder::create(opts, &session, cluster_id).unwrap();
    for st in all {
        let applied = session.apply(st);
        rec.record_applied(st, &applied);
        rec.maintain(Some(&mut session));
        check(&mut rec);
    }
    rec.finish().unwrap();
    session
}

pub(crate) fn small_policy() -> CheckpointPolicy {
    CheckpointPolicy {
        records: 40,
        interval: Duration::from_secs(3600),
        min_ratio: 0.0,
    }
}

#[test]
fn seeking_forward_backward_and_from_the_start_reach_identical_sessions() {
    require!(TESTDATA);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.rgs");
    let all = stream(60);
    record_stream(&file, &all, small_policy(), false);
    let mut p = Player::open(&file).unwrap();
    let total = p.total();
    let scrapes = all
        .iter()
        .filter(|s| {
            matches!(
                &s.obs,
                Observation::Scrape {
                    outcome: ScrapeOutcome::Body { .. },
                    ..
                }
            )
        })
        .count();
    // Positions count records: every observation, and each scrape's digest.
    assert_eq!(total, (all.len() + scrapes) as u64);
    for pos in [0, 1, 39, 40, 41, total / 2, total - 1, total] {
        // Played forward from the start.
        let mut fwd = p.seek(Target::Position(0));
        p.advance(&mut fwd, Target::Position(pos), u64::MAX, |_, _, _| {});
        // A scrape's digest and the scrape are taken together: the cursor may pass by one.
        let reached = p.position();
        assert!(reached == pos || reached == pos + 1, "{reached} for {pos}");
        let a = regscope::cli::snapshot::snapshot_of(&fwd, true).unwrap();
        let fa = frame(fwd);
        // Seeking back from the end.
        let _ = p.seek(Target::End);
        let back = p.seek(Target::Position(pos));
        assert_eq!(p.position(), reached);
        let b = regscope::cli::snapshot::snapshot_of(&back, true).unwrap();
        let fb = frame(back);
        // Seeking forward from a fresh open.
        let mut q = Player::open(&file).unwrap();
        let fresh = q.seek(Target::Position(pos));
        assert_eq!(q.position(), reached);
        let c = regscope::cli::snapshot::snapshot_of(&fresh, true).unwrap();
        let fc = frame(fresh);
        assert_eq!(a, b, "position {pos}: forward vs back");
        assert_eq!(a, c, "position {pos}: forward vs fresh seek");
        assert!(fa == fb && fa == fc, "position {pos}: frames differ");
    }
    // Who writes is part of the state: at the end, 5 PUTs a second over 60 seconds, by the
    // managers the stream names (k = 0..5 gives writer-0 twice, writer-1 twice, writer-2
    // once a second), and the Secret's writes, which carry no managedFields.
    let end: serde_json::Value = serde_json::from_str(
        &regscope::cli::snapshot::snapshot_of(&p.seek(Target::End), false).unwrap(),
    )
    .unwrap();
    let writers: Vec<_> = end["writers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["resource"].as_str().unwrap().to_string(),
                w["manager"].as_str().unwrap().to_string(),
                w["operation"].as_str().unwrap().to_string(),
                w["subresource"].as_str().unwrap().to_string(),
                w["puts"].as_u64().unwrap(),
            )
        })
        .collect();
    let row = |r: &str, m: &str, o: &str, s: &str, n: u64| {
        (
            r.to_string(),
            m.to_string(),
            o.to_string(),
            s.to_string(),
            n,
        )
    };
    assert_eq!(
        writers,
        [
            row("configmaps", "writer-0", "Update", "", 120),
            row("configmaps", "writer-1", "Update", "", 120),
            row("configmaps", "writer-2", "Apply", "status", 60),
            row("secrets", "(no managedFields)", "", "", 8),
        ]
    );
    // The events etcd and the flags are part of the state too.
    let other = &end["other_clusters"][0];
    assert_eq!(other["resources"], "/events", "{end:#}");
    assert_eq!(other["up"], true);
    assert_eq!(other["revision"], 1180);
    // Writes in 58 of the 60 seconds (not at 20 and 25); keys from etcd's count at 25
    // s, then +1 −1 a second.
    assert_eq!(other["puts"], 3 * 58);
    assert_eq!(other["keys"], 100);
    assert_eq!(
        end["apiserver_flags"]["flags"]["--watch-cache-sizes"],
        "secrets#0"
    );
    let down: serde_json::Value = serde_json::from_str(
        &regscope::cli::snapshot::snapshot_of(&p.seek(Target::Time(at(22))), false).unwrap(),
    )
    .unwrap();
    assert_eq!(down["other_clusters"][0]["up"], false, "{down:#}");
    assert_eq!(down["other_clusters"][0]["error"], "connection refused");
    let markers = p.markers(1.0, 10.0);
    let at_of = |label: &str| {
        markers
            .iter()
            .find(|m| m.label == label)
            .unwrap_or_else(|| panic!("{label}: {markers:?}"))
            .at
    };
    assert_eq!(
        at_of("etcd for /events unreachable: connection refused"),
        at(20)
    );
    assert_eq!(at_of("etcd for /events reachable again"), at(25));
    // By time and by revision as well.
    let t = at(33);
    let by_time = p.seek(Target::Time(t));
    assert!(by_time.now() <= t);
    let pos = p.position();
    let mut fwd = p.seek(Target::Position(0));
    p.advance(&mut fwd, Target::Time(t), u64::MAX, |_, _, _| {});
    assert_eq!(p.position(), pos);
    assert_eq!(
        regscope::cli::snapshot::snapshot_of(&by_time, false).unwrap(),
        regscope::cli::snapshot::snapshot_of(&fwd, false).unwrap()
    );
    // The state as of a revision: nothing newer applied.
    let by_rev = p.seek(Target::Revision(200));
    assert_eq!(by_rev.revision(), 200);
}

/// A recording that starts before etcd was listed opens just after the first list (not on
/// an empty screen); one that starts with keys opens at its start.
#[test]
fn replay_opens_after_the_first_list_when_the_start_is_empty() {
    require!(TESTDATA);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.rgs");
    let all = stream(30);
    record_stream(&path, &all, small_policy(), false);
    let mut p = Player::open(&path).unwrap();
    assert_eq!(p.seek(Target::Position(0)).replica.live_keys(), 0);
    let s = p.seek_first_frame();
    let pos = p.position();
    assert_eq!(s.replica.live_keys(), 9);
    assert!(s.replica.listing().is_none(), "the list is done");
    assert!(
        p.seek(Target::Position(pos - 1))
            .replica
            .listing()
            .is_some(),
        "just after the list's end, not later"
    );
    // Played on from there, it is the same session as seeking there afresh.
    let mut played = s;
    p.seek(Target::Position(pos));
    p.advance(&mut played, Target::Position(40), u64::MAX, |_, _, _| {});
    assert_eq!(whole(&played), whole(&p.seek(Target::Position(40))));

    // A live source says it watches right after its list: the view opens after that too,
    // so the header does not open on "listing".
    let says_watching = || Stamped {
        at: at(0),
        obs: Observation::Conn(regscope::model::ConnState::Watching),
    };
    let mut watching = all.clone();
    watching.insert(3, says_watching());
    let path = dir.path().join("w.rgs");
    record_stream(&path, &watching, small_policy(), false);
    let mut p = Player::open(&path).unwrap();
    let s = p.seek_first_frame();
    assert!(s.replica.listing().is_none(), "the list is done");
    assert_eq!(s.etcd.conn(), &regscope::model::ConnState::Watching);
    // A scrape between the list and "watching" (as `record` writes it): still after
    // "watching". An event before it: not past the event.
    let scrape = Stamped {
        at: at(0),
        obs: Observation::Scrape {
            target: regscope::model::ScrapeTarget::Etcd,
            outcome: regscope::model::ScrapeOutcome::Failed {
                source: "http://127.0.0.1:1/metrics".into(),
                error: "connection refused".into(),
            },
        },
    };
    let mut scraped = watching.clone();
    scraped.insert(3, scrape);
    let path = dir.path().join("sw.rgs");
    record_stream(&path, &scraped, small_policy(), false);
    let mut p = Player::open(&path).unwrap();
    let s = p.seek_first_frame();
    assert_eq!(s.etcd.conn(), &regscope::model::ConnState::Watching);
    let listed_rev = s.revision();
    let mut late = all.clone();
    let first_event = late
        .iter()
        .position(|st| matches!(st.obs, Observation::Events { .. }))
        .unwrap();
    late.insert(first_event + 1, says_watching());
    let path = dir.path().join("late.rgs");
    record_stream(&path, &late, small_policy(), false);
    let mut p = Player::open(&path).unwrap();
    let s = p.seek_first_frame();
    assert_eq!(s.revision(), listed_rev, "no event of the watch applied");
    assert_ne!(s.etcd.conn(), &regscope::model::ConnState::Watching);

    // Started mid-session (keys in the first checkpoint): the start.
    let path = dir.path().join("mid.rgs");
    record_stream_from(&path, &all[..10], &all[10..], small_policy(), false);
    let mut p = Player::open(&path).unwrap();
    let s = p.seek_first_frame();
    assert_eq!(s.replica.live_keys(), 9);
    assert_eq!(whole(&s), whole(&p.seek(Target::Position(0))));
}

#[test]
fn moving_one_session_around_equals_seeking_afresh_with_or_without_bodies() {
    require!(TESTDATA);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.rgs");
    let all = stream(60);
    record_stream(&file, &all, small_policy(), false);
    let targets = [
        Target::Time(at(5)),
        Target::Time(at(7)),
        Target::Position(90),
        Target::Position(95),
        Target::Revision(200),
        Target::Revision(201),
        Target::Time(at(50)),
        Target::Time(at(20)),
        Target::Position(3),
        Target::End,
        Target::Position(0),
        Target::Time(at(59)),
    ];
    for bodies in [true, false] {
        let mut p = Player::open(&file).unwrap();
        p.set_bodies(bodies);
        let mut moved = p.seek(Target::Position(0));
        let (mut in_place, mut restored) = (0, 0);
        for t in targets {
            let before = (p.position(), moved.now());
            let old = p.seek_in(&mut moved, t);
            match &old {
                Some(_) => restored += 1,
                None => {
                    in_place += 1;
                    assert!(
                        p.position() >= before.0 && moved.now() >= before.1,
                        "{t:?} went back in place"
                    );
                }
            }
            let pos = p.position();
            // A fresh player (with bodies) seeking straight there.
            let mut q = Player::open(&file).unwrap();
            let fresh = q.seek(t);
            assert_eq!(q.position(), pos, "{t:?} bodies={bodies}");
            assert_eq!(whole(&moved), whole(&fresh), "{t:?} bodies={bodies}");
        }
        // Forward targets go in place, backward ones restore.
        assert!(
            in_place >= 5 && restored >= 3,
            "{in_place} in place, {restored} restored"
        );
        // Without bodies, a scrape whose digest is recorded comes with an empty body.
        let mut p = Player::open(&file).unwrap();
        p.set_bodies(bodies);
        let _ = p.seek(Target::Position(0));
        let mut empty = 0;
        while let Some(st) = p.next_observation() {
            if let Observation::Scrape {
                outcome: ScrapeOutcome::Body { body, .. },
                ..
            } = &st.obs
            {
                empty += usize::from(body.is_empty());
            }
        }
        assert_eq!(empty > 0, !bodies, "bodies={bodies}: {empty} empty bodies");
    }
    // A session the player did not leave where it is (here: another player's) is rebuilt.
    let mut p = Player::open(&file).unwrap();
    let _ = p.seek(Target::Position(10));
    let mut q = Player::open(&file).unwrap();
    let mut other = q.seek(Target::Position(50));
    assert!(p.seek_in(&mut other, Target::Position(60)).is_some());
    let mut r = Player::open(&file).unwrap();
    assert_eq!(whole(&other), whole(&r.seek(Target::Position(60))));
}

#[test]
fn scrape_bodies_and_special_values_come_back_bit_for_bit() {
    require!(TESTDATA);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.rgs");
    let all = stream(30);
    record_stream(&file, &all, small_policy(), false);
    let mut p = Player::open(&file).unwrap();
    // The scrape digests the file carries derive exactly what parsing the bodies derives.
    let mut direct = Session::new(SessionInfo {
        title: "synthetic".into(),
        started_at: at(0),
        ..Default::default()
    });
    for st in &all {
        direct.apply(st);
    }
    let replayed = p.seek(Target::End);
    assert_eq!(
        regscope::cli::snapshot::snapshot_of(&direct, true).unwrap(),
        regscope::cli::snapshot::snapshot_of(&replayed, true).unwrap()
    );
    let _ = p.seek(Target::Position(0));
    let mut got = Vec::new();
    while let Some(st) = p.next_observation() {
        got.push(st);
    }
    let bodies = |v: &[Stamped]| -> Vec<Vec<u8>> {
        v.iter()
            .filter_map(|st| match &st.obs {
                Observation::Scrape {
                    outcome: ScrapeOutcome::Body { body, .. },
                    ..
                } => Some(body.to_vec()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(bodies(&got), bodies(&all));
    let last = bodies(&got).pop().unwrap();
    let expo = regscope::metrics::exposition::parse(&last);
    let value = |name: &str| {
        expo.samples
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.value.to_bits())
            .unwrap()
    };
    assert!(f64::from_bits(value("regscope_test_nan")).is_nan());
    assert_eq!(value("regscope_test_inf"), f64::INFINITY.to_bits());
    assert_eq!(value("regscope_test_ninf"), f64::NEG_INFINITY.to_bits());
    assert_eq!(value("regscope_test_negzero"), (-0.0f64).to_bits());
    // Every other observation is exactly what was recorded (Secrets aside: redacted).
    assert_eq!(got.len(), all.len());
    for (g, a) in got.iter().zip(&all) {
        if format!("{:?}", a.obs).contains("secrets") {
            continue;
        }
        assert_eq!(g, a);
    }
}

#[test]
fn secret_plaintext_never_reaches_the_file_and_the_file_is_private() {
    require!(TESTDATA);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.rgs");
    record_stream(&file, &stream(30), small_policy(), false);
    let bytes = std::fs::read(&file).unwrap();
    // The file is compressed: look in what it decompresses to as well, by replaying.
    assert!(!contains(&bytes, PLAINTEXT.as_bytes()));
    let mut p = Player::open(&file).unwrap();
    assert!(p.header().secrets_redacted);
    let session = p.seek(Target::End);
    let cp = session.to_checkpoint().unwrap();
    assert!(
        !contains(&cp, PLAINTEXT.as_bytes()),
        "plaintext in the replayed state"
    );
    let _ = p.seek(Target::Position(0));
    while let Some(st) = p.next_observation() {
        assert!(!format!("{:?}", st.obs).contains(PLAINTEXT));
    }
    // Redaction keeps the length: the replayed Secret has the live size.
    let live = secret_value("s");
    let replayed = session.replica.get(b"/registry/secrets/ns/s").unwrap();
    assert_eq!(replayed.value.as_ref().map(|v| v.len()), Some(live.len()));
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // With --show-secrets the plaintext is there (and the header says so).
    let shown = dir.path().join("shown.rgs");
    record_stream(&shown, &stream(30), small_policy(), true);
    let mut p = Player::open(&shown).unwrap();
    assert!(!p.header().secrets_redacted);
    let s = p.seek(Target::End);
    assert!(contains(&s.to_checkpoint().unwrap(), PLAINTEXT.as_bytes()));
    // An existing file is refused.
    let e = Recorder::create(
        RecordOptions::new(&file),
        &Session::new(SessionInfo::default()),
        0,
    );
    assert!(e.is_err());
}

/// Values packed in memory (enough keys of a resource for its dictionary to be trained)
/// come back from a recording byte for byte, and packed Secret values are redacted in a
/// checkpoint as raw ones are: the checkpoint of a recording begun mid-session is written
/// from the live session's packed values.
#[test]
fn packed_values_round_trip_and_packed_secrets_are_redacted() {
    let n = 1_200;
    let mut session = Session::new(SessionInfo {
        title: "packed".into(),
        started_at: at(0),
        ..Default::default()
    });
    let cm = |i: usize| {
        let mut data = std::collections::BTreeMap::new();
        data.insert(
            "config".to_string(),
            format!("key-{i} = value-{}\n", i * 7).repeat(4),
        );
        encode_object(&k8s_pb::api::core::v1::ConfigMap {
            metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(format!("cm-{i:05}")),
                namespace: Some("default".into()),
                ..Default::default()
            }),
            data,
            ..Default::default()
        })
    };
    let mut kvs = Vec::new();
    for i in 0..n {
        kvs.push(kv(
            &format!("/registry/configmaps/default/cm-{i:05}"),
            2,
            1,
            cm(i),
        ));
        let name = format!("s-{i:05}");
        kvs.push(kv(
            &format!("/registry/secrets/default/{name}"),
            2,
            1,
            secret_value(&name),
        ));
    }
    for obs in [
        Observation::ListBegin { revision: 2 },
        Observation::ListPage { kvs: kvs.clone() },
        Observation::ListDone {
            revision: 2,
            compacted: None,
        },
    ] {
        session.apply(&Stamped { at: at(1), obs });
    }
    // Packing runs on its own thread: a bounded wait for it.
    let t = Instant::now();
    while (session.replica.memory().packing_outstanding > 0
        || session.replica.memory().packed_values < 2 * n as u64)
        && t.elapsed() < Duration::from_secs(30)
    {
        session.replica.maintain();
        std::thread::sleep(Duration::from_millis(10));
    }
    let m = session.replica.memory();
    assert_eq!(m.packed_values, 2 * n as u64, "every value packed: {m:?}");
    assert!(m.packed_bytes * 3 < m.packed_raw_bytes, "{m:?}");
    // The live session reads its packed values back whole.
    for kv in &kvs {
        assert_eq!(
            session.replica.get(&kv.key).and_then(|v| v.value),
            Some(kv.value.clone())
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("packed.rgs");
    let rec = Recorder::create(RecordOptions::new(&file), &session, 0).unwrap();
    rec.finish().unwrap();
    let mut p = Player::open(&file).unwrap();
    let replayed = p.seek(Target::End);
    for kv in &kvs {
        let got = replayed.replica.get(&kv.key).and_then(|v| v.value).unwrap();
        if kv.key.starts_with(b"/registry/secrets/") {
            assert!(!contains(&got, PLAINTEXT.as_bytes()), "{:?}", kv.key);
            assert_eq!(got.len(), kv.value.len(), "redaction keeps the length");
        } else {
            assert_eq!(got, kv.value);
        }
    }
    assert!(!contains(
        &std::fs::read(&file).unwrap(),
        PLAINTEXT.as_bytes()
    ));
}

/// The observations a player yields from the first checkpoint to the end.
fn replay_all(path: &Path) -> Result<(Vec<Stamped>, Vec<String>), String> {
    let mut p = Player::open(path).map_err(|e| e.to_string())?;
    let _ = p.seek(Target::Position(0));
    let mut v = Vec::new();
    while let Some(st) = p.next_observation() {
        v.push(st);
    }
    // Damage, and notes such as "not closed cleanly" (a cut on a frame boundary).
    let mut said = p.damage().to_vec();
    said.extend(p.notes().iter().cloned());
    Ok((v, said))
}

#[test]
fn every_truncation_replays_a_prefix_and_reports_the_loss() {
    require!(TESTDATA);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.rgs");
    // Small: no scrapes, a few seconds.
    let all: Vec<Stamped> = stream(12)
        .into_iter()
        .filter(|s| !matches!(s.obs, Observation::Scrape { .. }))
        .collect();
    record_stream(&file, &all, small_policy(), true);
    let bytes = std::fs::read(&file).unwrap();
    let (whole, damage) = replay_all(&file).unwrap();
    assert!(damage.is_empty(), "{damage:?}");
    let cut = dir.path().join("cut.rgs");
    let mut opened = 0;
    for len in 0..bytes.len() {
        std::fs::write(&cut, &bytes[..len]).unwrap();
        match replay_all(&cut) {
            Err(_) => continue, // the header itself is cut: a clear error
            Ok((got, damage)) => {
                opened += 1;
                assert!(got.len() <= whole.len(), "cut at {len}");
                assert_eq!(got[..], whole[..got.len()], "cut at {len}: not a prefix");
                assert!(
                    !damage.is_empty(),
                    "cut at {len} of {}: the loss must be reported",
                    bytes.len()
                );
            }
        }
    }
    assert!(opened > bytes.len() / 2, "most cuts still open ({opened})");
}

/// What a player hands out along a walk of seeks and reads: each observation with the
/// cursor after it, and the damage it reported.
fn walk(path: &Path, read_ahead: bool) -> (Vec<String>, Vec<String>) {
    let mut p = Player::open(path).unwrap();
    p.set_read_ahead(read_ahead);
    // Scrape frames are read on the caller's thread either way; their bodies only slow
    // the walk down.
    p.set_bodies(false);
    let total = p.total();
    let mut out = Vec::new();
    for target in [
        Target::Position(0),
        Target::Position(total / 2),
        Target::Position(3),
        Target::Time(at(60)),
        Target::End,
        Target::Position(total / 3),
    ] {
        let s = p.seek(target);
        out.push(format!("seek {target:?}: revision {}", s.revision()));
        for _ in 0..150 {
            let Some(st) = p.next_observation() else {
                break;
            };
            out.push(format!("{} {st:?}", p.position()));
        }
    }
    (out, p.damage().to_vec())
}

/// Fails at the first line where two walks differ, each line cut to 300 characters (a
/// scrape's line holds its whole body).
fn assert_same_walk(a: &[String], b: &[String], what: &str) {
    let cut = |s: &String| s.chars().take(300).collect::<String>();
    if let Some(i) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) {
        panic!(
            "{what}: the walks differ at line {i} of {}/{}:\n  {:?}\n  {:?}",
            a.len(),
            b.len(),
            a.get(i).map(cut),
            b.get(i).map(cut)
        );
    }
}

#[test]
fn reading_ahead_on_a_thread_hands_out_what_reading_in_place_does() {
    require!(TESTDATA);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.rgs");
    record_stream(&file, &stream(60), small_policy(), false);
    let (ahead, damage) = walk(&file, true);
    assert!(
        ahead.len() > 600,
        "the walk read {} observations",
        ahead.len()
    );
    assert!(damage.is_empty(), "{damage:?}");
    assert_same_walk(&ahead, &walk(&file, false).0, "intact");
    // Damaged copies: the same frames are lost and said to be lost either way.
    let bytes = std::fs::read(&file).unwrap();
    let bad = dir.path().join("bad.rgs");
    let mut damaged_walks = 0;
    for i in 1..10 {
        let mut b = bytes.clone();
        let at_byte = b.len() * i / 10;
        b[at_byte] ^= 0x55;
        std::fs::write(&bad, &b).unwrap();
        if Player::open(&bad).is_err() {
            continue;
        }
        let (a, da) = walk(&bad, true);
        let (n, dn) = walk(&bad, false);
        assert_same_walk(&a, &n, &format!("flip at byte {at_byte}"));
        assert_eq!(da, dn, "flip at byte {at_byte}");
        damaged_walks += usize::from(!da.is_empty());
    }
    assert!(damaged_walks > 2, "only {damaged_walks} flips were noticed");
}

#[test]
fn flipped_bytes_never_panic_and_lose_only_damaged_frames() {
    require!(TESTDATA);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.rgs");
    let all: Vec<Stamped> = stream(20)
        .into_iter()
        .filter(|s| !matches!(s.obs, Observation::Scrape { .. }))
        .collect();
    record_stream(&file, &all, small_policy(), true);
    let bytes = std::fs::read(&file).unwrap();
    let (whole, _) = replay_all(&file).unwrap();
    let bad = dir.path().join("bad.rgs");
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for _ in 0..300 {
        let mut b = bytes.clone();
        for _ in 0..(1 + next() % 4) {
            let i = (next() as usize) % b.len();
            b[i] ^= 1 << (next() % 8);
        }
        std::fs::write(&bad, &b).unwrap();
        if let Ok((got, _damage)) = replay_all(&bad) {
            // Whatever is returned is a subsequence of what was written.
            let mut it = whole.iter();
            for g in &got {
                assert!(it.any(|w| w == g), "an observation that was never written");
            }
        }
    }
}

#[test]
fn export_writes_one_json_object_per_observation() {
    require!(TESTDATA);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.rgs");
    record_stream(&file, &stream(20), small_policy(), false);
    let out = Command::new(BIN)
        .args([
            "export",
            file.to_str().unwrap(),
            "--format",
            "jsonl",
            "--decode",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // stderr ends with what was written beside what was read.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("exported {} lines for ", lines.len())),
        "{err}"
    );
    let events: Vec<_> = lines.iter().filter(|l| l["type"] == "event").collect();
    assert_eq!(events.len(), 20 * 5 + 2);
    assert!(events
        .iter()
        .all(|e| e["op"] == "PUT" && e["size"].as_u64().is_some()));
    let secret = events
        .iter()
        .find(|e| e["resource"] == "secrets")
        .expect("the Secret event");
    assert_eq!(secret["object"]["kind"], "Secret");
    assert!(!text.contains(PLAINTEXT));
    let scrapes: Vec<_> = lines.iter().filter(|l| l["type"] == "scrape").collect();
    assert!(!scrapes.is_empty());
    let ok = scrapes.iter().find(|s| s["samples"].is_array()).unwrap();
    let nan = ok["samples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "regscope_test_nan")
        .unwrap();
    assert_eq!(nan["value"], "NaN");
    assert!(lines.iter().any(|l| l["type"] == "compacted"));
    // An output that cannot be written (a full disk) fails, and says so; `replay --check`
    // too. A closed pipe (`| head`) is no error.
    if let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") {
        for args in [
            vec!["export", file.to_str().unwrap(), "--format", "jsonl"],
            vec!["replay", "--check", file.to_str().unwrap()],
        ] {
            let out = Command::new(BIN)
                .args(&args)
                .stdout(full.try_clone().unwrap())
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
            assert_eq!(
                err.matches("writing to stdout: No space left on device")
                    .count(),
                1,
                "{args:?}: {err}"
            );
        }
    }
    // --prefix and --only-keys narrow it down.
    let export_keys = |prefix: &str| {
        Command::new(BIN)
            .args([
                "export",
                file.to_str().unwrap(),
                "--only-keys",
                "--prefix",
                prefix,
            ])
            .output()
            .unwrap()
    };
    let out = export_keys("/registry/secrets/");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().count() >= 3);
    assert!(text.lines().all(|l| l.contains("/registry/secrets/")));
    // A prefix that matches nothing says so: without its leading '/', with the prefix
    // meant; with it, after the export.
    for (prefix, says) in [
        (
            "secrets",
            "--prefix secrets matches no key: keys start with '/' (e.g. /registry/secrets)",
        ),
        ("registry/secrets", "(e.g. /registry/secrets)"),
        (
            "/registry/nothing-here",
            "--prefix /registry/nothing-here matched no key",
        ),
    ] {
        let out = export_keys(prefix);
        assert!(out.stdout.is_empty());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{prefix}: {err}");
    }
}

#[test]
fn snapshot_from_a_recording_at_a_time_and_a_revision() {
    require!(TESTDATA);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.rgs");
    record_stream(&file, &stream(40), small_policy(), false);
    let end = snapshot_from(&file, None);
    let by_rev = snapshot_from(&file, Some("r100"));
    assert_eq!(by_rev["revision"].as_i64().unwrap(), 100);
    assert!(by_rev["revision"].as_i64().unwrap() < end["revision"].as_i64().unwrap());
    let from_start = snapshot_from(&file, Some("+10s"));
    let back = snapshot_from(&file, Some("-30s"));
    assert_eq!(from_start, back, "+10s from the start is -30s from the end");
    let out = snapshot_output(&file, "soon");
    assert_eq!(out.status.code(), Some(2));
    let missing = PathBuf::from("/nonexistent/recording.rgs");
    let out = Command::new(BIN)
        .args(["replay", "--check", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim().lines().count(),
        1
    );
}

/// Records `all` as a `--keep-last keep` set based at `base` (with `max_size`), calling
/// `check` after each observation's upkeep; the live session at the end.
pub(crate) fn record_set(
    base: &Path,
    all: &[Stamped],
    keep: Duration,
    max_size: Option<u64>,
    check: &mut dyn FnMut(&mut Recorder),
) -> Session {
    let info = SessionInfo {
        started_at: at(0),
        ..Default::default()
    };
    let opts = RecordOptions {
        keep_last: Some(keep),
        max_size,
        policy: small_policy(),
        ..RecordOptions::new(base)
    };
    record_with(info, opts, 0, &[], all, check)
}

#[test]
fn keep_last_rolls_a_set_that_always_holds_the_last_window() {
    require!(TESTDATA);
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("fr.rgs");
    let all = stream(120);
    let keep = Duration::from_secs(40);
    let session = record_set(&base, &all, keep, None, &mut |_| {});
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 4 && files.len() <= 7, "{files:?}");
    assert!(files
        .iter()
        .all(|f| f.file_name().unwrap().to_str().unwrap().starts_with("fr.0")));
    // The oldest file was deleted; the set still starts at least `keep` before the end.
    assert!(!dir.path().join("fr.000001.rgs").exists());
    let mut p = Player::open(&base).unwrap();
    assert!(p.damage().is_empty(), "{:?}", p.damage());
    let (start, end) = p.span();
    assert!(
        end.duration_since(start).unwrap() >= keep,
        "{start:?}..{end:?}"
    );
    assert_eq!(end, at(120));
    // Played across the files, the set ends where the live session ended.
    let s = p.seek(Target::End);
    assert_eq!(s.revision(), session.revision());
    let live = regscope::cli::snapshot::snapshot_of(&session, true).unwrap();
    assert_eq!(
        regscope::cli::snapshot::snapshot_of(&s, true).unwrap(),
        live
    );
    // A file taken out of the middle of the set is damage, with the stretch it held; played
    // through, the next file's opening checkpoint puts the session right again.
    let middle = files[files.len() / 2].clone();
    std::fs::remove_file(&middle).unwrap();
    // The set opened again: `n` lines of damage, the last saying `says`.
    let open_damaged = |n: usize, says: &str| {
        let p = Player::open(&base).unwrap();
        assert_eq!(p.damage().len(), n, "{:?}", p.damage());
        assert!(p.damage()[n - 1].contains(says), "{:?}", p.damage());
        p
    };
    let mut p = open_damaged(1, "1 file(s) of the set missing before it");
    let mut s = p.seek(Target::Position(0));
    p.advance(&mut s, Target::End, u64::MAX, |_, _, _| {});
    assert_eq!(p.resyncs(), 1);
    assert_eq!(
        regscope::cli::snapshot::snapshot_of(&s, true).unwrap(),
        live
    );
    let out = Command::new(BIN)
        .args(["replay", "--check", base.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    // A copy of the oldest file under the next number repeats what the set already
    // holds: skipped, and said, not played twice.
    let total = p.total();
    let last = regscope::record::files::set_number(files.last().unwrap()).unwrap();
    std::fs::copy(
        &files[0],
        dir.path().join(format!("fr.{:06}.rgs", last + 1)),
    )
    .unwrap();
    let mut p = open_damaged(2, "repeats the set's observations and is skipped");
    assert_eq!(p.total(), total);
    let mut s = p.seek(Target::Position(0));
    p.advance(&mut s, Target::End, u64::MAX, |_, _, _| {});
    assert_eq!(
        regscope::cli::snapshot::snapshot_of(&s, true).unwrap(),
        live
    );
}

/// `--max-size` beside `--keep-last`: the set never holds more than the size (older files
/// go first, even when that leaves less than the window), says so once, and still replays.
#[test]
fn keep_last_with_max_size_never_holds_more_than_the_size() {
    require!(TESTDATA);
    let all = stream(120);
    let keep = Duration::from_secs(100);
    let run = |dir: &Path, max_size: Option<u64>, check: &mut dyn FnMut(&mut Recorder)| {
        let base = dir.join("fr.rgs");
        let session = record_set(&base, &all, keep, max_size, check);
        (base, session)
    };
    // Without a size: how much the window takes.
    let free = tempfile::tempdir().unwrap();
    let mut most = 0;
    run(free.path(), None, &mut |r| {
        most = most.max(r.bytes_written())
    });
    // A third of that.
    let max = most / 3;
    let dir = tempfile::tempdir().unwrap();
    let mut notes = Vec::new();
    let (base, session) = run(dir.path(), Some(max), &mut |r| {
        assert!(r.bytes_written() <= max, "{} > {max}", r.bytes_written());
        notes.extend(r.take_note());
    });
    let on_disk: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(on_disk <= max, "{on_disk} bytes on disk > {max}");
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("less than --keep-last 1m 40s"),
        "{notes:?}"
    );
    let mut p = Player::open(&base).unwrap();
    assert!(p.damage().is_empty(), "{:?}", p.damage());
    let s = p.seek(Target::End);
    assert_eq!(s.revision(), session.revision());
}

/// NaN, ±Inf and −0 in the histograms and gauges the panels sort and divide: replaying a
/// recording of such scrapes and drawing every section at every scrape never panics.
#[test]
fn special_values_in_latency_and_gauges_never_panic_the_panels() {
    require!(TESTDATA);
    let base = apiserver_capture();
    let specials = ["NaN", "+Inf", "-Inf", "-0", "1e308"];
    let poisoned = |n: usize| -> String {
        base.lines()
            .enumerate()
            .map(|(i, l)| {
                let hit = (l.starts_with("etcd_request_duration_seconds")
                    || l.starts_with("apiserver_request_duration_seconds")
                    || l.starts_with("watch_cache_capacity")
                    || l.starts_with("apiserver_storage"))
                    && (i + n).is_multiple_of(3);
                match (hit, l.rsplit_once(' ')) {
                    (true, Some((name, _))) => {
                        format!("{name} {}\n", specials[(i + n) % specials.len()])
                    }
                    _ => format!("{l}\n"),
                }
            })
            .collect()
    };
    let mut all = Vec::new();
    for n in 0..6 {
        all.push(Stamped {
            at: at(5 * n as u64),
            obs: Observation::Scrape {
                target: ScrapeTarget::Apiserver,
                outcome: ScrapeOutcome::Body {
                    source: "capture".into(),
                    body: Bytes::from(if n % 2 == 0 {
                        base.clone()
                    } else {
                        poisoned(n)
                    }),
                },
            },
        });
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nan.rgs");
    record_stream(&file, &all, small_policy(), false);
    let mut p = Player::open(&file).unwrap();
    let total = p.total();
    for pos in 0..=total {
        let s = p.seek(Target::Position(pos));
        let mut app = App::new(s, Settings::default());
        let backend = ratatui::backend::TestBackend::new(120, 40);
        let mut term = ratatui::Terminal::new(backend).unwrap();
        for k in ['4', 'z', 'l', 'z', 'l', 'z', 'l', 'z', 'l', 'z', 'G', 'g'] {
            app.handle_key(&crossterm::event::KeyEvent::new(
                crossterm::event::KeyCode::Char(k),
                crossterm::event::KeyModifiers::NONE,
            ));
            term.draw(|f| regscope::tui::views::draw(&app, f)).unwrap();
        }
    }
}

/// The recording in the repository (scripts/record-demo.sh): whole, standing alone, with
/// the incidents it is there to show, and without the demo Secret's plaintext.
#[test]
fn the_demo_recording_in_the_repository_replays() {
    let file = demo_recording();
    let bytes = std::fs::read(&file).unwrap();
    assert!(bytes.len() < 4 << 20, "a few MB at most");
    let demo_password = b"not-a-real-password-regscope-demo";
    assert!(!contains(&bytes, demo_password));
    let mut p = Player::open(&file).unwrap();
    assert!(p.damage().is_empty(), "{:?}", p.damage());
    assert!(p.header().secrets_redacted);
    let end = p.seek(Target::End);
    assert!(end.revision() > 1000);
    assert!(end.replica.compact_revision().is_some());
    assert!(!contains(&end.to_checkpoint().unwrap(), demo_password));
    let markers = p.markers(1.0, 10.0);
    let has = |prefix: &str| markers.iter().any(|m| m.label.starts_with(prefix));
    assert!(has("410 Gone: informer events"), "{markers:?}");
    assert!(has("compaction at revision"), "{markers:?}");
    assert!(has("connection lost"), "{markers:?}");
    assert!(has("connection restored"), "{markers:?}");
    // A marker's position is just after its observation: the state there shows it.
    let c = markers
        .iter()
        .find(|m| m.label.starts_with("compaction at revision"))
        .unwrap();
    let rev: i64 = c.label["compaction at revision ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let at_c = p.seek(Target::Position(c.position));
    assert_eq!(at_c.replica.compact_revision(), Some(rev), "{}", c.label);
    let g = markers
        .iter()
        .find(|m| m.label.starts_with("410 Gone"))
        .unwrap();
    let at_g = p.seek(Target::Position(g.position));
    assert!(at_g.informers.get("", "events").unwrap().gone_410 >= 1);
    // Every panel draws at every marker, and a seek to a marker lands on it (`N` looks
    // for the marker before the cursor's position: landing past one, it found it again).
    for m in &markers {
        let s = p.seek(Target::Position(m.position));
        let _ = frame(s);
        assert_eq!(p.position(), m.position, "{}", m.label);
    }
}

/// A revision inside a lost segment cannot be shown as of itself: `snapshot --at` says
/// which revision it shows instead (the last before the loss). One before the loss is
/// reached as asked.
#[test]
fn a_revision_in_a_lost_stretch_is_said_not_silently_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lost.rgs");
    let mut bytes = std::fs::read(demo_recording()).unwrap();
    // Inside the segment that holds revisions 1038 .. 1077 of this recording.
    bytes[200_000..200_100].fill(b'0');
    std::fs::write(&file, &bytes).unwrap();
    let out = snapshot_output(&file, "r1050");
    assert_eq!(out.status.code(), Some(1), "damaged: {out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "revision 1050 lies in a damaged stretch of the file: shown as of revision 1037"
        ),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["revision"], 1037);
    let out = snapshot_output(&file, "r1000");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("damaged stretch"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["revision"], 1000);
}

/// `export --show-secrets` of a recording made without it says why the Secret data
/// stays `<redacted: N bytes>`.
#[test]
fn export_show_secrets_over_a_redacted_recording_says_so() {
    let file = demo_recording();
    let out = Command::new(BIN)
        .args([
            "export",
            file.to_str().unwrap(),
            "--decode",
            "--show-secrets",
        ])
        .args(["--prefix", "/registry/secrets/"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("<redacted: "));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("made without it, its Secret data is redacted"),
        "{err}"
    );
}

/// Times with a fraction of a second or an RFC 3339 offset name the same moment as in
/// UTC, and a range whose --from lands past its --to (a time against a revision) is
/// refused, on the repository's recording (it spans 07:43:18.792 .. 07:44:48.808 UTC on
/// 2026-12-03, revisions 44 .. 3383).
#[test]
fn moments_with_fractions_offsets_and_mixed_ranges_on_the_repository_recording() {
    let file = demo_recording();
    let snapshot = |at: &str| snapshot_from(&file, Some(at))["revision"].clone();
    let utc = snapshot("2026-12-03T07:44:00.5Z");
    assert!(utc.as_i64().unwrap() > 44, "{utc}");
    assert_eq!(snapshot("07:44:00.5"), utc);
    assert_eq!(snapshot("2026-12-03T08:44:00.5+01:00"), utc);
    assert_eq!(snapshot("2026-12-03 02:14:00.5-05:30"), utc);
    // Half a second earlier is another moment of this busy recording.
    assert_ne!(snapshot("07:44:00.0"), utc);
    // A time names all of its last digit: the whole second takes in its half.
    let whole_second = snapshot("07:44:00").as_i64().unwrap();
    assert!(
        whole_second >= utc.as_i64().unwrap(),
        "{whole_second} {utc}"
    );
    // The span's first and last seconds are inside, whole; the next ones are not, and
    // the refusal gives the span to the millisecond.
    assert_eq!(snapshot("07:44:48.9"), snapshot("end"));
    for at in ["07:44:49", "07:44:49.9", "07:43:17.9"] {
        let out = snapshot_output(&file, at);
        assert_eq!(out.status.code(), Some(2), "--at {at}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(".808Z)"), "{err}");
    }
    let export = |from: &str, to: &str| {
        Command::new(BIN)
            .args(["export", file.to_str().unwrap(), "--from", from, "--to", to])
            .output()
            .unwrap()
    };
    let out = export("r2000", "07:43:30");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("after --to 07:43:30: nothing to export"),
        "{err}"
    );
    let out = export("07:44:30", "r1000");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    // In order, both ways round.
    for (from, to) in [("r1000", "07:44:30"), ("07:43:30", "r2000")] {
        let out = export(from, to);
        assert!(out.status.success(), "{from} {to}: {out:?}");
        assert!(!out.stdout.is_empty());
    }
}

#[test]
fn force_replaces_only_regular_files_and_keep_last_never_mixes_two_runs() {
    let dir = tempfile::tempdir().unwrap();
    let session = Session::new(SessionInfo::default());
    // A FIFO (or a device, under sudo) is never deleted, --force or not.
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) on a path in our temp dir.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let e = Recorder::create(
        RecordOptions {
            overwrite: true,
            ..RecordOptions::new(&fifo)
        },
        &session,
        0,
    )
    .err()
    .expect("refused");
    assert!(e.to_string().contains("not a regular file"), "{e}");
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    // An existing regular file: refused, then replaced with --force.
    let file = dir.path().join("f.rgs");
    std::fs::write(&file, b"old").unwrap();
    let e = Recorder::create(RecordOptions::new(&file), &session, 0)
        .err()
        .unwrap();
    assert!(e.to_string().contains("--force"), "{e}");
    let r = Recorder::create(
        RecordOptions {
            overwrite: true,
            ..RecordOptions::new(&file)
        },
        &session,
        0,
    )
    .unwrap();
    r.finish().unwrap();
    assert!(Player::open(&file).is_ok());
    // A --keep-last base naming an earlier run's set: refused, or replaced whole.
    let base = dir.path().join("fr");
    let keep = |overwrite| RecordOptions {
        keep_last: Some(Duration::from_secs(60)),
        overwrite,
        ..RecordOptions::new(&base)
    };
    Recorder::create(keep(false), &session, 0)
        .unwrap()
        .finish()
        .unwrap();
    std::fs::write(dir.path().join("fr.000002.rgs"), b"x").unwrap();
    let e = Recorder::create(keep(false), &session, 0).err().unwrap();
    assert!(e.to_string().contains("earlier --keep-last set"), "{e}");
    Recorder::create(keep(true), &session, 0)
        .unwrap()
        .finish()
        .unwrap();
    assert!(!dir.path().join("fr.000002.rgs").exists());
    assert!(Player::open(&base).unwrap().damage().is_empty());
}

#[test]
fn a_damaged_recording_says_so_in_the_snapshot_and_the_exit_code() {
    require!(TESTDATA);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.rgs");
    record_stream(&file, &stream(30), small_policy(), false);
    let mut bytes = std::fs::read(&file).unwrap();
    // After the last checkpoint (a seek to the end reads from there on; damage before it
    // does not change the end state, and `--check` reports it all the same).
    let mid = bytes.len() * 9 / 10;
    for b in &mut bytes[mid..mid + 64] {
        *b ^= 0x55;
    }
    std::fs::write(&file, &bytes).unwrap();
    let out = Command::new(BIN)
        .args(["snapshot", "--json", "--from", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!v["recording_damage"].as_array().unwrap().is_empty(), "{v}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("damaged recording"));
    let out = Command::new(BIN)
        .args(["replay", "--check", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // --check reads the whole file: a moment asked for with it is refused, not ignored.
    let out = Command::new(BIN)
        .args(["replay", "--check", "--at", "r5", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
    // And replay needs a terminal: without one, a clear line and exit 2.
    let without_terminal = |f: &Path| {
        Command::new(BIN)
            .args(["replay", f.to_str().unwrap()])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = without_terminal(&file);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs a terminal"));
    // A file that is no recording says so first, terminal or not.
    let empty = dir.path().join("empty.rgs");
    std::fs::write(&empty, b"").unwrap();
    let out = without_terminal(&empty);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("empty file") && !err.contains("terminal"),
        "{err}"
    );
}

/// A segment lost between two checkpoints leaves the session inexact only up to the next
/// checkpoint: playing through, that checkpoint is restored in its place, so from there on
/// the session equals what a seek past it (and the intact recording) gives.
#[test]
fn play_through_a_lost_segment_is_exact_again_from_the_next_checkpoint() {
    require!(TESTDATA);
    use regscope::record::format::{FrameKind, Reader};
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.rgs");
    record_stream(&file, &stream(30), small_policy(), false);
    let intact = dir.path().join("intact.rgs");
    std::fs::copy(&file, &intact).unwrap();
    let frames = Reader::open(&file).unwrap().frames().to_vec();
    let checkpoints: Vec<usize> = (0..frames.len())
        .filter(|&i| frames[i].kind == FrameKind::Checkpoint)
        .collect();
    assert!(checkpoints.len() >= 3, "{} checkpoints", checkpoints.len());
    // The first segment after the second checkpoint, with the third still to come.
    let lost = (checkpoints[1]..checkpoints[2])
        .find(|&i| frames[i].kind == FrameKind::Segment)
        .expect("a segment between the second and third checkpoints");
    let f = &frames[lost];
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[(f.offset + 20 + f.len / 2) as usize] ^= 0x10;
    std::fs::write(&file, &bytes).unwrap();

    let mut whole = Player::open(&intact).unwrap();
    let total = whole.total();
    // `-0s` is the end, as every `-D` counts from it (and `+0s` the start).
    let (start, end) = whole.span();
    let at_text = |t: &str| {
        regscope::cli::recording::parse_at("--at", t, &whole, regscope::config::Zone::Utc)
    };
    assert_eq!(at_text("-0s"), Ok(Target::Time(end)));
    assert_eq!(at_text("+0s"), Ok(Target::Time(start)));
    // And by name.
    assert_eq!(at_text("end"), Ok(Target::End));
    assert_eq!(at_text("Start"), Ok(Target::Time(start)));
    // What is there but is no recording is named for what it is.
    let err = |p: &Path| {
        Player::open(p)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert!(
        err(dir.path()).contains("a directory, not a file"),
        "{}",
        err(dir.path())
    );
    assert!(
        err(Path::new("/dev/null")).contains("not a regular file"),
        "{}",
        err(Path::new("/dev/null"))
    );
    let empty = dir.path().join("empty.rgs");
    std::fs::write(&empty, b"").unwrap();
    assert!(err(&empty).contains("empty file"), "{}", err(&empty));
    let mut p = Player::open(&file).unwrap();
    assert_eq!(p.total(), total);
    // Played forward from the start: the loss is said, one checkpoint is restored.
    let mut fwd = p.seek(Target::Position(0));
    p.advance(&mut fwd, Target::End, u64::MAX, |_, _, _| {});
    assert_eq!(p.damage().len(), 1, "{:?}", p.damage());
    assert!(p.damage()[0].contains("segment frame"), "{:?}", p.damage());
    assert_eq!(p.resyncs(), 1);
    let end = whole.seek(Target::End);
    assert_eq!(
        regscope::cli::snapshot::snapshot_of(&fwd, true).unwrap(),
        regscope::cli::snapshot::snapshot_of(&end, true).unwrap(),
        "played through the loss vs the intact recording, at the end"
    );
    assert!(frame(fwd) == frame(end), "frames differ at the end");
    // Before that checkpoint the played session misses what the lost segment held.
    let mut fwd = p.seek(Target::Position(0));
    let mut before = whole.seek(Target::Position(0));
    let at_loss = Target::Time(std::time::UNIX_EPOCH + Duration::from_nanos(f.last_time_ns as u64));
    p.advance(&mut fwd, at_loss, u64::MAX, |_, _, _| {});
    whole.advance(&mut before, at_loss, u64::MAX, |_, _, _| {});
    assert_eq!(
        p.resyncs(),
        1,
        "no checkpoint restored before it is reached"
    );
    assert_ne!(
        regscope::cli::snapshot::snapshot_of(&fwd, true).unwrap(),
        regscope::cli::snapshot::snapshot_of(&before, true).unwrap(),
        "just after the loss, the played session misses what the lost segment held"
    );
    // The console's marker list (n / N) stops at the loss too, in position order.
    let markers = p.markers(1.0, 60.0);
    let lost: Vec<_> = markers
        .iter()
        .filter(|m| m.label.starts_with("damaged segment"))
        .collect();
    assert_eq!(lost.len(), 1, "{markers:?}");
    assert_eq!(
        lost[0].at,
        SystemTime::UNIX_EPOCH + Duration::from_nanos(f.first_time_ns as u64)
    );
    assert!(markers.windows(2).all(|w| w[0].position <= w[1].position));
    // And `replay --check` lists it with the others.
    let out = Command::new(BIN)
        .args(["replay", "--check", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("damaged segment"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Damage where no seek goes — a later checkpoint, a frame before the point asked for —
/// still makes `replay --check`, `snapshot --from` (at any `--at`) and `export` say so.
#[test]
fn damage_off_the_seeks_way_is_still_reported_everywhere() {
    require!(TESTDATA);
    use regscope::record::format::{FrameKind, Reader};
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.rgs");
    record_stream(&file, &stream(30), small_policy(), false);
    let frames = Reader::open(&file).unwrap().frames().to_vec();
    let checkpoints: Vec<_> = frames
        .iter()
        .filter(|f| f.kind == FrameKind::Checkpoint)
        .collect();
    assert!(checkpoints.len() >= 3, "{} checkpoints", checkpoints.len());
    // One byte in the middle of the second checkpoint's payload.
    let ck = checkpoints[1];
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[(ck.offset + 20 + ck.len / 2) as usize] ^= 0x10;
    std::fs::write(&file, &bytes).unwrap();
    let run = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .arg(file.to_str().unwrap())
            .output()
            .unwrap()
    };
    let check = run(&["replay", "--check"]);
    assert_eq!(check.status.code(), Some(1), "{check:?}");
    assert!(String::from_utf8_lossy(&check.stdout).contains("checkpoint at position"));
    // r10 is the first revision the recording holds (its list's); r2 would be refused.
    for at in ["r10", "r40", "+1s"] {
        let out = Command::new(BIN)
            .args([
                "snapshot",
                "--json",
                "--at",
                at,
                "--from",
                file.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "--at {at}: {out:?}");
    }
    let export = run(&["export", "--format", "jsonl"]);
    assert_eq!(export.status.code(), Some(1));
}

/// A recording begun mid-session (`R` in the console) holds no list: `export` starts with
/// the live keys of its first checkpoint.
#[test]
fn export_of_a_recording_begun_mid_session_starts_with_the_state() {
    require!(TESTDATA);
    let all = stream(10);
    let mut session = Session::new(SessionInfo {
        started_at: at(0),
        ..Default::default()
    });
    for st in &all[..20] {
        session.apply(st);
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mid.rgs");
    let begun_at = session.revision();
    let mut rec = Recorder::create(RecordOptions::new(&file), &session, 0).unwrap();
    for st in &all[20..] {
        let applied = session.apply(st);
        rec.record_applied(st, &applied);
    }
    rec.finish().unwrap();
    // `replay --check` gives the span a seek accepts: from the revision the first
    // checkpoint holds, not the first one applied after it.
    let check = Command::new(BIN)
        .args(["replay", "--check", file.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(
        text.contains(&format!("revisions  {begun_at} .. {}", session.revision())),
        "begun at {begun_at}: {text}"
    );
    let out = Command::new(BIN)
        .args(["export", file.to_str().unwrap(), "--only-keys"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let start: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["from"] == "start")
        .collect();
    assert_eq!(
        start.len(),
        9,
        "the 9 keys listed before the recording began"
    );
    assert!(start.iter().all(|v| v["type"] == "list_item"));
    assert!(!text.contains(PLAINTEXT));
}

/// etcd's alarms and the watch anomalies are in the recording: markers to jump to, and the
/// same counts at the end of a replay (from any checkpoint) as live.
#[test]
fn alarms_and_watch_anomalies_are_markers_and_replay_exactly() {
    let status = |errors: &[&str]| {
        Observation::EtcdStatus(regscope::model::EtcdStatus {
            errors: errors.iter().map(|e| e.to_string()).collect(),
            ..Default::default()
        })
    };
    let put = |rev: i64| Observation::Events {
        revision: rev,
        events: vec![WatchEvent {
            kind: EventKind::Put,
            kv: kv("/registry/configmaps/ns/a", rev, rev - 1, b"v".to_vec()),
            prev_kv: None,
        }],
    };
    let mut obs = vec![
        Observation::ListBegin { revision: 1 },
        Observation::ListPage { kvs: vec![] },
        Observation::ListDone {
            revision: 1,
            compacted: None,
        },
        status(&[]),
    ];
    for r in 2..60 {
        obs.push(put(r));
    }
    // etcd-io/etcd#15220: the head announced before the event at 61.
    obs.push(Observation::HeadAtLeast { revision: 61 });
    obs.push(put(60));
    obs.push(put(61));
    obs.push(status(&["memberID:1 alarm:NOSPACE "]));
    for r in 62..100 {
        obs.push(put(r));
    }
    obs.push(status(&[]));
    let all: Vec<Stamped> = obs
        .into_iter()
        .enumerate()
        .map(|(i, obs)| Stamped {
            at: at(i as u64),
            obs,
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("alarm.rgs");
    record_stream(&file, &all, small_policy(), false);
    let mut p = Player::open(&file).unwrap();
    let labels: Vec<String> = p.markers(1.0, 10.0).into_iter().map(|m| m.label).collect();
    let has = |s: &str| labels.iter().any(|l| l.starts_with(s));
    assert!(has("etcd alarm NOSPACE"), "{labels:?}");
    assert!(has("etcd alarms cleared (NOSPACE)"), "{labels:?}");
    assert!(
        has("watch anomaly: etcd announced revision 61"),
        "{labels:?}"
    );
    let mut live = Session::new(SessionInfo::default());
    for st in &all {
        live.apply(st);
    }
    let end = p.seek(Target::End);
    assert_eq!(end.etcd.watch_health(), live.etcd.watch_health());
    // Both events at or below the announced head (60 and 61) came after it.
    assert_eq!(end.etcd.watch_health().progress_ahead_of_events, 2);
    assert_eq!(end.replica.revision(), 99);
    assert_eq!(
        end.etcd.etcd_status().map(|(_, s)| s.clone()),
        live.etcd.etcd_status().map(|(_, s)| s.clone())
    );
}

/// A list at `rev` of `kvs` stamped at second `s`, the relist after a gap when etcd had
/// `compacted` past the revision to resume from.
pub(crate) fn list_at(
    rev: i64,
    kvs: Vec<KeyValue>,
    compacted: Option<i64>,
    s: u64,
) -> Vec<Stamped> {
    vec![
        Stamped {
            at: at(s),
            obs: Observation::ListBegin { revision: rev },
        },
        Stamped {
            at: at(s),
            obs: Observation::ListPage { kvs },
        },
        Stamped {
            at: at(s),
            obs: Observation::ListDone {
                revision: rev,
                compacted,
            },
        },
    ]
}

/// A gap in a recording: the rows the replica synthesized from the relist come back in a
/// replay (the console's event log and snapshot --json at the end) and in export, marked as
/// synthesized with the gap they came through, and equal to what changed.
#[test]
fn a_gap_in_a_recording_replays_and_exports_its_unseen_rows() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gap.rgs");
    let list = list_at;
    let mut all = list(
        5,
        vec![
            kv("/registry/configmaps/ns/kept", 2, 1, b"k1".to_vec()),
            kv("/registry/configmaps/ns/changed", 3, 1, b"c1".to_vec()),
            kv("/registry/pods/ns/fresh", 4, 1, b"p1".to_vec()),
        ],
        None,
        0,
    );
    // Away: changed twice (6, 7), fresh deleted (8), new created (9); compacted at 12.
    all.extend(list(
        12,
        vec![
            kv("/registry/configmaps/ns/kept", 2, 1, b"k1".to_vec()),
            kv("/registry/configmaps/ns/changed", 7, 3, b"c3".to_vec()),
            kv("/registry/configmaps/ns/new", 9, 1, b"n1".to_vec()),
        ],
        Some(12),
        30,
    ));
    all.push(Stamped {
        at: at(31),
        obs: Observation::Tick,
    });
    record_stream(&file, &all, small_policy(), false);
    let snap = snapshot_from(&file, None);
    let gap = &snap["gaps"][0];
    assert_eq!(
        (gap["from"].as_i64(), gap["to"].as_i64()),
        (Some(6), Some(12))
    );
    assert_eq!(gap["changes"]["created"], 1);
    assert_eq!(gap["changes"]["changed"], 1);
    assert_eq!(gap["changes"]["deleted"], 1);
    assert_eq!(gap["by_resource"]["pods"]["deleted"], 1);
    let exported: Vec<serde_json::Value> = run_ok("UTC", &["export", file.to_str().unwrap()])
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .collect();
    // The resync is said once, as the session's note: its kind and its line.
    let notes: Vec<&serde_json::Value> = exported.iter().filter(|l| l["type"] == "note").collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0]["kind"], "resync");
    assert!(
        notes[0]["text"]
            .as_str()
            .unwrap()
            .starts_with("resync after compaction: revisions 6..12"),
        "{notes:?}"
    );
    let synthesized: Vec<&serde_json::Value> = exported
        .iter()
        .filter(|l| l["synthesized"] == true)
        .collect();
    let got: Vec<(String, String, Option<i64>, String)> = synthesized
        .iter()
        .map(|l| {
            assert_eq!(l["type"], "event");
            assert_eq!(
                (l["unseen"]["from"].as_i64(), l["unseen"]["to"].as_i64()),
                (Some(6), Some(12))
            );
            (
                l["op"].as_str().unwrap().to_string(),
                l["unseen"]["change"].as_str().unwrap().to_string(),
                l["mod_revision"].as_i64(),
                l["key"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "PUT".into(),
                "changed".into(),
                Some(7),
                "/registry/configmaps/ns/changed".into()
            ),
            (
                "PUT".into(),
                "created".into(),
                Some(9),
                "/registry/configmaps/ns/new".into()
            ),
            // Deleted somewhere in 6..=12: etcd's revision for it is not known.
            (
                "DELETE".into(),
                "deleted".into(),
                None,
                "/registry/pods/ns/fresh".into()
            ),
        ]
    );
    // The delete carries the last copy held: its size, and the revision it was written at.
    assert_eq!(synthesized[2]["value_is_last_copy"], true);
    assert_eq!(synthesized[2]["last_mod_revision"], 4);
    assert_eq!(synthesized[2]["size"], 2);
    // A replay's console holds the same rows.
    let mut player = Player::open(&file).unwrap();
    let session = player.seek(Target::End);
    let rows: Vec<(i64, &str)> = session
        .replica
        .events()
        .iter()
        .filter_map(|e| e.unseen.map(|u| (e.revision, u.change.label())))
        .collect();
    assert_eq!(rows, vec![(7, "changed"), (9, "created"), (12, "deleted")]);
}

/// One rule for time zones: `replay --check` prints each time in the zone times are shown
/// in, with its offset; that time, whole or only its clock part, given to `--at` in the
/// same zone lands on the same moment, in New York, in Kolkata and in UTC (and `--utc`, a
/// `Z` or an offset override the zone); the marker's own observation is reached from all.
#[test]
fn a_time_copied_from_replay_check_means_the_same_moment_in_every_zone() {
    let file = demo_recording();
    let f = file.to_str().unwrap();
    let revision_at = |tz: &str, at: &str, extra: &[&str]| -> i64 {
        let mut args = vec!["snapshot", "--json", "--from", f, "--at", at];
        args.extend_from_slice(extra);
        let v: serde_json::Value = serde_json::from_str(&run_ok(tz, &args)).unwrap();
        v["revision"].as_i64().unwrap()
    };
    let mut seen = Vec::new();
    for (tz, offset) in [
        ("UTC", "Z"),
        ("America/New_York", "-05:00"),
        ("Asia/Kolkata", "+05:30"),
    ] {
        let check = run_ok(tz, &["replay", "--check", f]);
        let line = check
            .lines()
            .find(|l| l.contains("compaction at revision 1588"))
            .unwrap_or_else(|| panic!("{check}"));
        let full = line.split_whitespace().nth(1).unwrap().to_string();
        assert!(full.ends_with(offset), "TZ={tz}: {line}");
        // The clock part alone, as a person copies it: HH:MM:SS.mmm.
        let clock = &full[11..23];
        let whole = revision_at(tz, &full, &[]);
        assert_eq!(revision_at(tz, clock, &[]), whole, "TZ={tz} {clock}");
        // The UTC form, and --utc with the UTC clock, mean the same moment everywhere.
        let utc_full = run_ok("UTC", &["replay", "--check", f])
            .lines()
            .find(|l| l.contains("compaction at revision 1588"))
            .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
            .unwrap();
        assert_eq!(revision_at(tz, &utc_full, &[]), whole, "TZ={tz} {utc_full}");
        assert_eq!(
            revision_at(tz, &utc_full[11..23], &["--utc"]),
            whole,
            "TZ={tz} --utc"
        );
        seen.push(whole);
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "{seen:?}");
    assert!(seen[0] >= 1588, "{seen:?}");
    // Inside the recording's outage, the snapshot says so (the connection was lost at
    // 07:44:03.792 and restored at 07:44:05.602).
    let v: serde_json::Value = serde_json::from_str(&run_ok(
        "UTC",
        &["snapshot", "--json", "--from", f, "--at", "07:44:04Z"],
    ))
    .unwrap();
    assert!(
        ["connecting", "reconnecting", "not_responding"]
            .contains(&v["connection"]["state"].as_str().unwrap_or("")),
        "{}",
        v["connection"]
    );
    assert!(
        v["connection"]["lost_since"]
            .as_str()
            .is_some_and(|t| t.starts_with("2026-12-03T07:44:03")),
        "{}",
        v["connection"]
    );
    let v: serde_json::Value = serde_json::from_str(&run_ok(
        "UTC",
        &["snapshot", "--json", "--from", f, "--at", "07:44:30Z"],
    ))
    .unwrap();
    assert_eq!(v["connection"]["state"], "watching", "{}", v["connection"]);
    assert!(v["connection"]["lost_since"].is_null());
    // A refusal names the span in the zone asked for.
    let out = Command::new(BIN)
        .env("TZ", "Asia/Kolkata")
        .args(["snapshot", "--json", "--from", f, "--at", "23:59:59"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("+05:30"), "{err}");
}
