use super::*;

#[test]
fn member_changes_name_who_stopped_answering_and_where_the_leader_went() {
    let m = |id: u64, leader: u64, up: bool| MemberStatus {
        id,
        name: format!("m{id}"),
        endpoint: format!("http://e{id}"),
        is_learner: false,
        status: up.then(|| EtcdStatus {
            member_id: id,
            leader,
            ..Default::default()
        }),
        error: (!up).then(|| "refused".to_string()),
    };
    let before = [m(1, 1, true), m(2, 1, true), m(3, 1, true)];
    assert!(member_changes(&before, &before).is_empty());
    assert!(
        member_changes(&[], &before).is_empty(),
        "the first poll says nothing"
    );
    let after = [m(1, 2, false), m(2, 2, true), m(3, 2, true)];
    assert_eq!(
        member_changes(&before, &after)
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        [
            "etcd member m1 (http://e1) stopped answering: refused",
            "etcd's leader moved from m1 (http://e1) to m2 (http://e2)"
        ]
    );
    assert_eq!(
        member_changes(&after, &[m(1, 2, true), m(2, 2, true), m(3, 2, true)])
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["etcd member m1 (http://e1) answers again"]
    );
}
use std::time::Duration;

use std::time::UNIX_EPOCH;

use crate::model::{ConnState, EtcdStatus, MemberStatus, WatchEvent};
use crate::store::notes::Notes;
use crate::store::{member_changes, EtcdCluster, Note, Session, WatchHealth};

fn kv(key: &str, val: &str, create: i64, modr: i64, ver: i64) -> KeyValue {
    KeyValue {
        key: Bytes::copy_from_slice(key.as_bytes()),
        create_revision: create,
        mod_revision: modr,
        version: ver,
        lease: 0,
        value: Bytes::copy_from_slice(val.as_bytes()),
    }
}

fn at(s: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000 + s)
}

fn put(k: KeyValue) -> WatchEvent {
    WatchEvent {
        kind: EventKind::Put,
        kv: k,
        prev_kv: None,
    }
}

fn del(key: &str, rev: i64) -> WatchEvent {
    WatchEvent {
        kind: EventKind::Delete,
        kv: kv(key, "", 0, rev, 0),
        prev_kv: None,
    }
}

/// What the tests apply observations to: a replica alone, or [`S`].
trait Apply {
    fn apply_one(&mut self, st: &Stamped);
}

impl Apply for Replica {
    fn apply_one(&mut self, st: &Stamped) {
        self.apply(st)
    }
}

/// A session, for the tests of what the replica and the etcd cluster's state do together
/// (watch health, notes, connection, a replaced etcd). Reads its replica through `Deref`.
struct S(Session);

impl S {
    fn new() -> S {
        S(Session::from_replica(
            Replica::new(ReplicaConfig::default()),
            "test",
        ))
    }
}

impl std::ops::Deref for S {
    type Target = Session;
    fn deref(&self) -> &Session {
        &self.0
    }
}

impl Apply for S {
    fn apply_one(&mut self, st: &Stamped) {
        self.0.apply(st);
    }
}

fn obs(r: &mut impl Apply, s: u64, o: Observation) {
    r.apply_one(&Stamped { at: at(s), obs: o });
}

fn listed(r: &mut impl Apply, rev: i64, kvs: Vec<KeyValue>, compacted: Option<i64>) {
    obs(r, 0, Observation::ListBegin { revision: rev });
    obs(r, 0, Observation::ListPage { kvs });
    obs(
        r,
        0,
        Observation::ListDone {
            revision: rev,
            compacted,
        },
    );
}

#[test]
fn history_tombstones_and_point_in_time() {
    let mut r = Replica::new(ReplicaConfig::default());
    listed(
        &mut r,
        2,
        vec![kv("/registry/pods/a/p", "v1", 2, 2, 1)],
        None,
    );
    obs(
        &mut r,
        1,
        Observation::Events {
            revision: 4,
            events: vec![
                put(kv("/registry/pods/a/p", "v2", 2, 3, 2)),
                del("/registry/pods/a/p", 4),
            ],
        },
    );
    assert_eq!(r.revision(), 4);
    assert_eq!(r.get(b"/registry/pods/a/p"), None);
    assert_eq!(
        r.get_at(b"/registry/pods/a/p", 3).unwrap().unwrap().value,
        Some(Bytes::from_static(b"v2"))
    );
    assert_eq!(
        r.get_at(b"/registry/pods/a/p", 2).unwrap().unwrap().version,
        1
    );
    assert_eq!(r.get_at(b"/registry/pods/a/p", 4).unwrap(), None);
    let h = r.history(b"/registry/pods/a/p");
    assert_eq!(h.len(), 3);
    assert!(h[2].value.is_none());
    assert_eq!(r.live_keys(), 0);
    assert_eq!(r.resources()[0].puts, 1);
    assert_eq!(r.resources()[0].deletes, 1);
    // Re-create after delete.
    obs(
        &mut r,
        2,
        Observation::Events {
            revision: 5,
            events: vec![put(kv("/registry/pods/a/p", "v3", 5, 5, 1))],
        },
    );
    assert_eq!(r.live_keys(), 1);
    assert_eq!(r.get(b"/registry/pods/a/p").unwrap().create_revision, 5);
}

#[test]
fn duplicate_events_are_not_applied_twice() {
    let mut r = Replica::new(ReplicaConfig::default());
    listed(&mut r, 1, vec![], None);
    let e = Observation::Events {
        revision: 2,
        events: vec![put(kv("/registry/pods/a/p", "v1", 2, 2, 1))],
    };
    obs(&mut r, 1, e.clone());
    obs(&mut r, 1, e);
    assert_eq!(r.history(b"/registry/pods/a/p").len(), 1);
    assert_eq!(r.resources()[0].puts, 1);
}

#[test]
fn events_behind_a_progress_notification_still_apply() {
    // etcd-io/etcd#15220: progress at 5 may arrive before the event at 4.
    let mut r = Replica::new(ReplicaConfig::default());
    listed(&mut r, 3, vec![], None);
    obs(&mut r, 1, Observation::Progress { revision: 5 });
    obs(
        &mut r,
        1,
        Observation::Events {
            revision: 5,
            events: vec![put(kv("/registry/pods/a/late", "v", 4, 4, 1))],
        },
    );
    assert!(r.get(b"/registry/pods/a/late").is_some());
    assert_eq!(r.revision(), 5);
}

#[test]
fn a_head_announced_ahead_of_its_events_is_never_applied() {
    // What etcd 3.4.23 was seen to send (etcd-io/etcd#15220): the progress at 101
    // before the event at 101 that it covers.
    let mut r = S::new();
    listed(
        &mut r,
        100,
        vec![kv("/registry/pods/a/p", "v1", 100, 100, 1)],
        None,
    );
    obs(&mut r, 1, Observation::HeadAtLeast { revision: 101 });
    assert_eq!(
        r.revision(),
        100,
        "the replica must not pass an event it lacks"
    );
    assert_eq!(r.etcd.watch_health().head_at_least, 101);
    obs(
        &mut r,
        1,
        Observation::Events {
            revision: 101,
            events: vec![put(kv("/registry/pods/a/p", "v2", 100, 101, 2))],
        },
    );
    assert_eq!(r.revision(), 101);
    assert_eq!(
        r.replica.get(b"/registry/pods/a/p").unwrap().mod_revision,
        101
    );
    let w = r.etcd.watch_health();
    assert_eq!(w.progress_ahead_of_events, 1);
    assert_eq!(w.anomalies(), 1);
    assert!(
        r.notes().back().unwrap().1.to_string().contains("15220"),
        "{:?}",
        r.notes()
    );
    // A head announced with nothing pending under the prefix (writes elsewhere): shown,
    // not applied, and not an anomaly.
    obs(&mut r, 2, Observation::HeadAtLeast { revision: 150 });
    assert_eq!(r.revision(), 101);
    assert_eq!(r.etcd.watch_health().anomalies(), 1);
    assert_eq!(r.summary().watch.head_at_least, 150);
}

#[test]
fn progress_below_the_applied_revision_and_repeated_events_are_counted() {
    let mut r = S::new();
    listed(&mut r, 10, vec![], None);
    // Lower than the watch's own start revision (11). A head "at least 9" is still
    // true at 10 (and what etcd before 3.4.25/3.5.8 sends): not an anomaly.
    obs(&mut r, 1, Observation::Progress { revision: 8 });
    obs(&mut r, 1, Observation::HeadAtLeast { revision: 9 });
    assert_eq!(r.revision(), 10);
    assert_eq!(r.etcd.watch_health().progress_behind, 1);
    let e = Observation::Events {
        revision: 11,
        events: vec![put(kv("/registry/pods/a/p", "v1", 11, 11, 1))],
    };
    obs(&mut r, 2, e.clone());
    obs(&mut r, 2, e);
    assert_eq!(r.etcd.watch_health().repeated_events, 1);
    assert_eq!(r.etcd.watch_health().anomalies(), 2);
    assert_eq!(r.replica.history(b"/registry/pods/a/p").len(), 1);
    // Noted at the 1st time only, not at the 2nd.
    let notes: Vec<String> = r.notes().iter().map(|(_, n)| n.to_string()).collect();
    assert_eq!(
        notes
            .iter()
            .filter(|n| n.contains("below revision"))
            .count(),
        1
    );
    assert!(worth_noting(1) && worth_noting(10) && worth_noting(1000));
    assert!(!worth_noting(0) && !worth_noting(2) && !worth_noting(11));
}

#[test]
fn a_delete_row_carries_the_deleted_value() {
    let mut r = S::new();
    listed(
        &mut r,
        5,
        vec![kv("/registry/pods/a/p", "pod bytes", 5, 5, 1)],
        None,
    );
    // No prev_kv (regscope's watch does not ask for it): the replica's copy.
    obs(
        &mut r,
        1,
        Observation::Events {
            revision: 6,
            events: vec![del("/registry/pods/a/p", 6)],
        },
    );
    assert_eq!(
        r.replica.events().back().unwrap().value,
        Bytes::from_static(b"pod bytes")
    );
    // With prev_kv, that one.
    let mut with_prev = del("/registry/pods/a/q", 7);
    with_prev.prev_kv = Some(kv("/registry/pods/a/q", "as etcd had it", 1, 2, 1));
    obs(
        &mut r,
        1,
        Observation::Events {
            revision: 7,
            events: vec![with_prev],
        },
    );
    assert_eq!(
        r.replica.events().back().unwrap().value,
        Bytes::from_static(b"as etcd had it")
    );
    assert_eq!(r.etcd.watch_health().unknown_deletes, 0);
    // A key never held: nothing to show, counted.
    obs(
        &mut r,
        1,
        Observation::Events {
            revision: 8,
            events: vec![del("/registry/pods/a/never", 8)],
        },
    );
    assert!(r.replica.events().back().unwrap().value.is_empty());
    assert_eq!(r.etcd.watch_health().unknown_deletes, 1);
}

#[test]
fn etcd_alarms_raised_and_cleared_are_noted_once_each() {
    let mut r = S::new();
    let status = |errors: Vec<&str>| {
        Observation::EtcdStatus(EtcdStatus {
            errors: errors.into_iter().map(String::from).collect(),
            ..Default::default()
        })
    };
    obs(&mut r, 1, status(vec![]));
    obs(
        &mut r,
        2,
        status(vec![
            "memberID:1 alarm:NOSPACE ",
            "memberID:2 alarm:NOSPACE ",
        ]),
    );
    obs(&mut r, 3, status(vec!["memberID:1 alarm:NOSPACE "]));
    assert_eq!(r.etcd.etcd_status().unwrap().1.alarms(), vec!["NOSPACE"]);
    obs(&mut r, 4, status(vec![]));
    let notes: Vec<String> = r.notes().iter().map(|(_, n)| n.to_string()).collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].starts_with("etcd raised alarm NOSPACE"),
        "{notes:?}"
    );
    assert!(notes[1].contains("cleared (were NOSPACE)"), "{notes:?}");
    assert_eq!(r.summary().etcd_status.unwrap().errors.len(), 0);
    // `snapshot --json` gives each note's kind beside its line.
    let kinds: Vec<(&str, String)> = r
        .summary()
        .notes
        .into_iter()
        .map(|n| (n.kind, n.text))
        .collect();
    assert_eq!(
        kinds.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
        ["alarm_raised", "alarms_cleared"]
    );
    assert_eq!(kinds[1].1, notes[1]);
}

#[test]
fn a_change_of_member_is_a_failover() {
    let mut r = S::new();
    let server = |e: &str| Observation::Server {
        endpoint: e.into(),
        version: "3.5.1".into(),
        cluster_id: 7,
    };
    obs(&mut r, 1, server("http://127.0.0.1:1"));
    obs(&mut r, 2, server("http://127.0.0.1:1"));
    assert!(r.etcd.failovers().is_empty());
    obs(&mut r, 3, server("http://127.0.0.1:2"));
    assert_eq!(r.etcd.failovers().len(), 1);
    assert_eq!(r.etcd.failovers()[0].2, "http://127.0.0.1:2");
    assert_eq!(
        r.notes().back().unwrap().1.to_string(),
        "failover: reading from http://127.0.0.1:2 (was http://127.0.0.1:1)"
    );
}

#[test]
fn a_head_confirmed_by_two_quiet_progress_notifications_counts_as_synced() {
    let mut r = S::new();
    listed(&mut r, 10, vec![], None);
    obs(&mut r, 1, Observation::HeadAtLeast { revision: 15 });
    assert_eq!(r.synced_revision(), 10, "one announcement is not enough");
    obs(&mut r, 2, Observation::HeadAtLeast { revision: 15 });
    assert_eq!(r.synced_revision(), 15);
    assert_eq!(r.revision(), 10);
    // Events between two announcements: the later head counts only after a quiet pair.
    obs(&mut r, 3, Observation::HeadAtLeast { revision: 20 });
    obs(
        &mut r,
        3,
        Observation::Events {
            revision: 20,
            events: vec![put(kv("/registry/pods/a/p", "v", 20, 20, 1))],
        },
    );
    obs(&mut r, 4, Observation::HeadAtLeast { revision: 25 });
    assert_eq!(r.synced_revision(), 20);
    obs(&mut r, 5, Observation::HeadAtLeast { revision: 25 });
    assert_eq!(r.synced_revision(), 25);
}

#[test]
fn progress_never_moves_back() {
    let mut r = Replica::new(ReplicaConfig::default());
    listed(&mut r, 10, vec![], None);
    obs(&mut r, 1, Observation::Progress { revision: 7 });
    assert_eq!(r.revision(), 10);
    obs(&mut r, 1, Observation::Progress { revision: 12 });
    assert_eq!(r.revision(), 12);
}

#[test]
fn compaction_drops_superseded_history_and_dead_keys() {
    let mut r = Replica::new(ReplicaConfig::default());
    listed(&mut r, 1, vec![], None);
    obs(
        &mut r,
        1,
        Observation::Events {
            revision: 5,
            events: vec![
                put(kv("/registry/cm/a/x", "1", 2, 2, 1)),
                put(kv("/registry/cm/a/x", "2", 2, 3, 2)),
                put(kv("/registry/cm/a/y", "1", 4, 4, 1)),
                del("/registry/cm/a/y", 5),
            ],
        },
    );
    assert_eq!(r.history_usage().0, 3); // x@2, y@4, y tombstone
    obs(
        &mut r,
        2,
        Observation::Compacted {
            revision: 5,
            source: CompactionSource::Watch,
        },
    );
    assert_eq!(r.history(b"/registry/cm/a/x").len(), 1);
    assert!(r.history(b"/registry/cm/a/y").is_empty());
    assert_eq!(r.history_usage(), (0, 0));
    assert!(matches!(
        r.get_at(b"/registry/cm/a/x", 4),
        Err(HistoryError::Compacted { .. })
    ));
}

#[test]
fn budget_keeps_newest_of_live_keys() {
    let cfg = ReplicaConfig {
        history_budget: 1000,
        ..ReplicaConfig::default()
    };
    let mut r = Replica::new(cfg);
    listed(&mut r, 1, vec![], None);
    let big = "x".repeat(400);
    let mut events = Vec::new();
    for i in 0..10 {
        events.push(put(kv("/registry/cm/a/x", &big, 2, 2 + i, 1 + i)));
    }
    obs(
        &mut r,
        1,
        Observation::Events {
            revision: 11,
            events,
        },
    );
    assert!(r.history_usage().1 <= 1000);
    assert_eq!(r.get(b"/registry/cm/a/x").unwrap().mod_revision, 11);
    assert!(matches!(
        r.get_at(b"/registry/cm/a/x", 3),
        Err(HistoryError::Dropped { .. })
    ));
}

#[test]
fn relist_applies_difference_and_records_gap() {
    let mut r = Replica::new(ReplicaConfig::default());
    listed(
        &mut r,
        3,
        vec![
            kv("/registry/cm/d/a", "v1", 2, 2, 1),
            kv("/registry/cm/d/b", "v1", 3, 3, 1),
        ],
        None,
    );
    // While away: a changed to v2 at 4, b deleted at 5, c created at 6; compacted at 103.
    listed(
        &mut r,
        103,
        vec![
            kv("/registry/cm/d/a", "v2", 2, 4, 2),
            kv("/registry/cm/d/c", "v1", 6, 6, 1),
        ],
        Some(103),
    );
    assert_eq!(r.get(b"/registry/cm/d/a").unwrap().mod_revision, 4);
    assert_eq!(r.get(b"/registry/cm/d/b"), None);
    assert!(r.get(b"/registry/cm/d/c").is_some());
    assert_eq!(r.live_keys(), 2);
    assert_eq!(r.gaps().len(), 1);
    assert_eq!((r.gaps()[0].from, r.gaps()[0].to), (4, 103));
    assert!(r
        .diff(&[
            kv("/registry/cm/d/a", "v2", 2, 4, 2),
            kv("/registry/cm/d/c", "v1", 6, 6, 1)
        ])
        .is_empty());
    let d = r.diff(&[kv("/registry/cm/d/a", "v3", 2, 4, 2)]);
    assert_eq!(d.len(), 2);
    // What changed in the gap is in the event log, marked unseen: a changed at its new
    // mod_revision, c created, b deleted (with its last copy) at the relist's revision.
    let rows: Vec<(i64, &str, String, &[u8])> = r
        .events()
        .iter()
        .map(|e| {
            let u = e.unseen.expect("every row here is unseen");
            assert_eq!((u.from, u.to), (4, 103));
            (
                e.revision,
                u.change.label(),
                String::from_utf8_lossy(&e.key).into_owned(),
                &e.value[..],
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (4, "changed", "/registry/cm/d/a".to_string(), &b"v2"[..]),
            (6, "created", "/registry/cm/d/c".to_string(), &b"v1"[..]),
            (103, "deleted", "/registry/cm/d/b".to_string(), &b"v1"[..]),
        ]
    );
    // The head chart takes the revision the relist landed on.
    assert_eq!(r.growth().last().map(|g| g.head), Some(103));
    let g = r.gap_summaries();
    assert_eq!(g.len(), 1);
    let c = g[0].changes.expect("counted");
    assert_eq!((c.created, c.changed, c.deleted), (1, 1, 1));
    assert_eq!(g[0].by_resource["cm"], c);
    // The key history's jump: version 1 at revision 2, then version 2 at 4 through the gap.
    assert_eq!(r.gap_between(2, 4).map(|g| (g.from, g.to)), Some((4, 103)));
    assert_eq!(r.gap_between(4, 104), None);
    // Unseen rows are no writes: nothing is counted for a writer or a resource's rate.
    assert!(r.writers().is_empty());
}

#[test]
fn the_first_list_and_a_relist_without_changes_synthesize_nothing() {
    let mut r = Replica::new(ReplicaConfig::default());
    listed(&mut r, 3, vec![kv("/registry/cm/d/a", "v1", 2, 2, 1)], None);
    assert!(r.events().is_empty());
    listed(
        &mut r,
        50,
        vec![kv("/registry/cm/d/a", "v1", 2, 2, 1)],
        Some(40),
    );
    assert!(r.events().is_empty());
    let c = r.gap_summaries()[0].changes.expect("counted");
    assert_eq!(c.total(), 0);
}

#[test]
fn a_replaced_etcd_is_kept_on_record_and_the_head_series_survives_it() {
    let mut r = S::new();
    let server = |id: u64| Observation::Server {
        endpoint: "http://127.0.0.1:2379".into(),
        version: "3.5.1".into(),
        cluster_id: id,
    };
    obs(&mut r, 0, server(0xa));
    listed(
        &mut r,
        50,
        vec![kv("/registry/cm/d/a", "v1", 2, 50, 1)],
        None,
    );
    obs(&mut r, 1, Observation::Conn(ConnState::Watching));
    obs(
        &mut r,
        1,
        Observation::Events {
            revision: 51,
            events: vec![put(kv("/registry/cm/d/b", "v1", 51, 51, 1))],
        },
    );
    obs(
        &mut r,
        2,
        Observation::Conn(ConnState::Reconnecting {
            attempt: 1,
            error: "refused".into(),
        }),
    );
    assert_eq!(r.etcd.outage_since(), Some(at(2)));
    obs(
        &mut r,
        3,
        Observation::Conn(ConnState::Reconnecting {
            attempt: 2,
            error: "refused".into(),
        }),
    );
    assert_eq!(
        r.etcd.outage_since(),
        Some(at(2)),
        "since the first failure"
    );
    // What the old etcd said of itself: a head its watch announced, its one member (the
    // leader).
    obs(&mut r, 1, Observation::HeadAtLeast { revision: 60 });
    let member = |id: u64| MemberStatus {
        id,
        name: "default".into(),
        endpoint: "http://127.0.0.1:2379".into(),
        is_learner: false,
        status: Some(EtcdStatus {
            member_id: id,
            leader: id,
            ..Default::default()
        }),
        error: None,
    };
    obs(&mut r, 1, Observation::Members(vec![member(1)]));
    assert_eq!(r.etcd.watch_health().head_at_least, 60);
    obs(&mut r, 4, server(0xb));
    obs(
        &mut r,
        4,
        Observation::Reset {
            reason: "etcd's cluster ID changed".into(),
        },
    );
    // None of it is the new etcd's: no head of 60 over its revision 3, no leader moving
    // from the old member to the new one at the first poll.
    assert_eq!(r.etcd.watch_health(), &WatchHealth::default());
    assert!(r.etcd.members().is_none());
    obs(&mut r, 4, Observation::Members(vec![member(2)]));
    assert!(
        !r.notes()
            .iter()
            .any(|(_, n)| matches!(n, Note::LeaderMoved { .. })),
        "{:?}",
        r.notes()
    );
    obs(&mut r, 5, Observation::ListBegin { revision: 3 });
    obs(&mut r, 5, Observation::ListPage { kvs: vec![] });
    obs(
        &mut r,
        5,
        Observation::ListDone {
            revision: 3,
            compacted: None,
        },
    );
    obs(&mut r, 5, Observation::Conn(ConnState::Watching));
    assert_eq!(r.etcd.outage_since(), None);
    let rep = r.etcd.replacements();
    assert_eq!(rep.len(), 1);
    assert_eq!(
        rep[0].describe(),
        "etcd at http://127.0.0.1:2379 replaced: cluster id a → b, revision 51 → 3"
    );
    assert!(r
        .notes()
        .iter()
        .any(|(_, n)| *n == Note::Replaced(rep[0].clone()) && n.to_string() == rep[0].describe()));
    // The event log keeps the old etcd's rows, then a row that says what happened; the
    // old rows keep their resource's name.
    let log: Vec<(i64, Option<&str>)> = r
        .replica
        .events()
        .iter()
        .map(|e| (e.revision, e.note.as_deref()))
        .collect();
    assert_eq!(log, vec![(51, None), (51, Some(rep[0].short().as_str()))]);
    assert_eq!(
        rep[0].short(),
        "etcd replaced: cluster id a → b, revision 51 → 3"
    );
    assert_eq!(
        r.replica.resource_name(r.replica.events()[0].resource),
        "cm"
    );
    assert_eq!(r.replica.live_keys(), 0);
    assert_eq!(r.summary().replacements.len(), 1);
    // The head chart's samples run on from the old cluster's to the new one's.
    let heads: Vec<i64> = r.replica.growth().map(|g| g.head).collect();
    assert_eq!(heads.first(), Some(&50));
    assert_eq!(heads.last(), Some(&3));
    // The old revisions are no watch-cache count for the new etcd's informers.
    assert_eq!(r.replica.events_after(3, |_| true), Some(0));
    assert_eq!(r.replica.events_after(1, |_| true), None);
}

#[test]
fn time_of_revision() {
    let mut r = Replica::new(ReplicaConfig::default());
    listed(&mut r, 1, vec![], None);
    obs(
        &mut r,
        5,
        Observation::Events {
            revision: 3,
            events: vec![
                put(kv("/registry/cm/a/x", "1", 2, 2, 1)),
                put(kv("/registry/cm/a/x", "2", 2, 3, 2)),
            ],
        },
    );
    assert_eq!(r.time_of(2), Some(at(5)));
    assert_eq!(r.time_of(1), Some(at(0)));
    assert_eq!(r.time_of(4), None);
}

#[test]
fn virtual_paging() {
    let mut r = Replica::new(ReplicaConfig::default());
    let kvs = (0..100)
        .map(|i| kv(&format!("/registry/cm/d/k{i:03}"), "v", 2, 2, 1))
        .collect();
    listed(&mut r, 2, kvs, None);
    let first = r.live_keys_after(b"/registry/cm/", None, 10);
    assert_eq!(first.len(), 10);
    let next = r.live_keys_after(b"/registry/cm/", Some(&first[9]), 10);
    assert_eq!(&next[0][..], b"/registry/cm/d/k010");
    let back = r.live_keys_before(b"/registry/cm/", Some(&next[0]), 3);
    assert_eq!(&back[0][..], b"/registry/cm/d/k009");
    assert_eq!(
        r.live_keys_before(b"/registry/cm/", None, 1)[0].as_ref(),
        b"/registry/cm/d/k099"
    );
    // Keys sorting after the prefix's range must not hide the prefix's last keys.
    obs(
        &mut r,
        1,
        Observation::Events {
            revision: 3,
            events: vec![put(kv("/registry/zz/d/a", "v", 3, 3, 1))],
        },
    );
    assert_eq!(
        r.live_keys_before(b"/registry/cm/", None, 1)[0].as_ref(),
        b"/registry/cm/d/k099"
    );
}

#[test]
fn deferred_packing_hands_nothing_over_until_turned_off() {
    let mut r = Replica::new(ReplicaConfig::default());
    r.defer_packing(true);
    let value = "x".repeat(super::packing::MIN_PACK_LEN + 10);
    let n = 600u64;
    for i in 0..n {
        let rev = 2 + i as i64;
        obs(
            &mut r,
            i,
            Observation::Events {
                revision: rev,
                events: vec![put(kv(
                    &format!("/registry/configmaps/d/c{i}"),
                    &value,
                    rev,
                    rev,
                    1,
                ))],
            },
        );
        // A clock tick sweeps when one is due, never while deferred.
        r.tick();
    }
    // Every key written waits for its sweep (more than a sweep check's worth of work
    // was applied, and a tick came after each).
    assert_eq!(r.memory().packing_outstanding, n);
    r.defer_packing(false);
    assert!(
        r.memory().packing_outstanding < n,
        "turned off, the sweep that was due ran: {:?}",
        r.memory()
    );
}

#[test]
fn ciphertext_is_offered_by_length_and_left_raw_by_the_sweep() {
    // `push_version` offers every long value without reading it; the sweep must still
    // pass over values encrypted at rest and leave nothing outstanding.
    let mut r = Replica::new(ReplicaConfig::default());
    let cipher = format!(
        "k8s:enc:aescbc:v1:key1:{}",
        "\u{1}".repeat(super::packing::MIN_PACK_LEN * 4)
    );
    // Enough plaintext values for their resource's dictionary to be trained.
    let n = 2_400u64;
    for i in 0..n {
        let rev = 2 + i as i64;
        let plain = format!("{i:08} {}", "x".repeat(super::packing::MIN_PACK_LEN * 4));
        let (key, value) = if i % 2 == 0 {
            (format!("/registry/secrets/d/s{i}"), &cipher)
        } else {
            (format!("/registry/configmaps/d/c{i}"), &plain)
        };
        obs(
            &mut r,
            i,
            Observation::Events {
                revision: rev,
                events: vec![put(kv(&key, value, rev, rev, 1))],
            },
        );
    }
    assert!(r.memory().packing_outstanding > 0);
    let wall = std::time::Instant::now();
    while r.memory().packing_outstanding > 0 {
        assert!(
            wall.elapsed() < std::time::Duration::from_secs(30),
            "packing never caught up: {:?}",
            r.memory()
        );
        r.maintain();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let m = r.memory();
    assert_eq!(m.packing_outstanding, 0, "{m:?}");
    assert_eq!(
        m.packed_values,
        n / 2,
        "only the plaintext values are packed: {m:?}"
    );
    let held = r.get(b"/registry/secrets/d/s0").expect("held");
    assert_eq!(held.value.as_deref(), Some(cipher.as_bytes()));
}

/// Who made each write, over a table of managedFields shapes as kube-apiserver stores them:
/// a write is attributed to a manager only when it changed managedFields; a write that left
/// every entry as it was (graceful deletion, a finalizer removed by the garbage collector, a
/// custom resource written again by a client whose owned fields did not change) and a
/// delete are attributed to nobody, and say so.
#[test]
fn writes_are_attributed_only_when_they_changed_managed_fields() {
    use serde_json::json;
    let csa = json!({"manager": "kubectl-client-side-apply", "operation": "Update",
        "apiVersion": "v1", "time": "2024-01-02T10:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:containers": {}}}});
    let kubelet = |t: &str| {
        json!({"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
        "time": t, "fieldsType": "FieldsV1", "subresource": "status",
        "fieldsV1": {"f:status": {"f:conditions": {}, "f:phase": {}}}})
    };
    let kcm = json!({"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
        "time": "2024-01-02T10:00:07Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:ownerReferences": {}}}});
    let ssa = json!({"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
        "time": "2024-01-02T10:00:09Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:annotations": {"f:team": {}}}}});
    let pod = |mf: serde_json::Value, extra: serde_json::Value| {
        let mut meta = json!({"name": "web", "namespace": "shop", "uid": "u-1", "managedFields": mf,
            "finalizers": ["example.com/protect"]});
        if let (Some(m), Some(e)) = (meta.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                m.insert(k.clone(), v.clone());
            }
        }
        Bytes::from(
            serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}))
            .unwrap(),
        )
    };
    let cr = |mf: serde_json::Value, replicas: u64| {
        Bytes::from(
            serde_json::to_vec(&json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "shop", "managedFields": mf},
            "spec": {"replicas": replicas}}))
            .unwrap(),
        )
    };
    let steps: Vec<(&str, &str, Option<Bytes>, &str)> = vec![
        (
            "pod",
            "created by client-side apply",
            Some(pod(json!([csa]), json!({}))),
            "kubectl-client-side-apply",
        ),
        (
            "pod",
            "kubelet status update",
            Some(pod(
                json!([csa, kubelet("2024-01-02T10:00:05Z")]),
                json!({}),
            )),
            "kubelet (Update/status)",
        ),
        (
            "pod",
            "the kubelet again, a new second",
            Some(pod(
                json!([csa, kubelet("2024-01-02T10:00:06Z")]),
                json!({}),
            )),
            "kubelet (Update/status)",
        ),
        (
            "pod",
            "controller update",
            Some(pod(
                json!([csa, kubelet("2024-01-02T10:00:06Z"), kcm]),
                json!({}),
            )),
            "kube-controller-manager",
        ),
        (
            "pod",
            "server-side apply",
            Some(pod(
                json!([csa, kubelet("2024-01-02T10:00:06Z"), kcm, ssa]),
                json!({}),
            )),
            "kubectl (Apply)",
        ),
        (
            "pod",
            "graceful delete: deletionTimestamp, managedFields as they were",
            Some(pod(
                json!([csa, kubelet("2024-01-02T10:00:06Z"), kcm, ssa]),
                json!({"deletionTimestamp": "2024-01-02T10:01:00Z", "deletionGracePeriodSeconds": 30}),
            )),
            "(unknown: same managedFields)",
        ),
        (
            "pod",
            "finalizer removed by the garbage collector",
            Some(pod(
                json!([csa, kubelet("2024-01-02T10:00:06Z"), kcm, ssa]),
                json!({"deletionTimestamp": "2024-01-02T10:01:00Z", "finalizers": []}),
            )),
            "(unknown: same managedFields)",
        ),
        ("pod", "the DELETE itself", None, "(deleter unknown)"),
        (
            "widget",
            "custom resource created",
            Some(cr(
                json!([{"manager": "operator", "operation": "Update", "apiVersion": "example.com/v1", "time": "2024-01-02T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]),
                1,
            )),
            "operator",
        ),
        (
            "widget",
            "written again, managedFields unchanged",
            Some(cr(
                json!([{"manager": "operator", "operation": "Update", "apiVersion": "example.com/v1", "time": "2024-01-02T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]),
                2,
            )),
            "(unknown: same managedFields)",
        ),
    ];
    let mut r = Replica::new(ReplicaConfig::default());
    listed(&mut r, 1, vec![], None);
    let mut rev = 1;
    for (i, (key, what, value, want)) in steps.iter().enumerate() {
        rev += 1;
        let key = format!("/registry/pods/shop/{key}");
        let ev = match value {
            Some(v) => put(KeyValue {
                key: Bytes::from(key.clone()),
                create_revision: 2,
                mod_revision: rev,
                version: rev - 1,
                lease: 0,
                value: v.clone(),
            }),
            None => del(&key, rev),
        };
        obs(
            &mut r,
            1 + i as u64,
            Observation::Events {
                revision: rev,
                events: vec![ev],
            },
        );
        let row = r.events().back().unwrap();
        assert_eq!(row.writer(), *want, "{what}");
    }
    // The writers' rows say the same, and still add up to every write.
    let count = |m: &str| -> u64 {
        r.writers()
            .iter()
            .filter(|w| w.manager == m)
            .map(|w| w.puts + w.deletes)
            .sum()
    };
    assert_eq!(count("(unknown: same managedFields)"), 3);
    assert_eq!(count("(deleter unknown)"), 1);
    assert_eq!(count("kubelet"), 2);
    let total: u64 = r.writers().iter().map(|w| w.puts + w.deletes).sum();
    assert_eq!(total, steps.len() as u64);
}

/// After a checkpoint (where the marks are not kept), the first write of a key compares
/// with its previous version read from the value, as a session that never stopped did.
#[test]
fn the_managed_fields_comparison_survives_a_checkpoint() {
    let v = |n: u32| {
        Bytes::from(format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"a","managedFields":[{{"manager":"m","operation":"Update","time":"2024-01-02T10:00:00Z"}}]}},"data":{{"n":"{n}"}}}}"#
        ))
    };
    let mut r = Replica::new(ReplicaConfig::default());
    listed(&mut r, 1, vec![], None);
    obs(
        &mut r,
        1,
        Observation::Events {
            revision: 2,
            events: vec![put(kv_bytes("/registry/configmaps/d/a", v(1), 2, 2, 1))],
        },
    );
    let (etcd, notes) = (EtcdCluster::default(), Notes::default());
    let bytes = postcard::to_allocvec(&super::checkpoint::Image::of(&r, &etcd, &notes)).unwrap();
    let back: super::checkpoint::Owned = crate::store::shared_bytes::restore_from(
        &Bytes::from(bytes),
        crate::store::CHECKPOINT_FORMAT,
        |b| postcard::from_bytes(b).unwrap(),
    );
    let (mut back, _, _) = back.into_parts();
    back.restored().unwrap();
    for rep in [&mut r, &mut back] {
        obs(
            rep,
            2,
            Observation::Events {
                revision: 3,
                events: vec![put(kv_bytes("/registry/configmaps/d/a", v(2), 2, 3, 2))],
            },
        );
        assert_eq!(
            rep.events().back().unwrap().writer(),
            "(unknown: same managedFields)"
        );
    }
}

fn kv_bytes(key: &str, value: Bytes, create: i64, modr: i64, ver: i64) -> KeyValue {
    KeyValue {
        key: Bytes::copy_from_slice(key.as_bytes()),
        create_revision: create,
        mod_revision: modr,
        version: ver,
        lease: 0,
        value,
    }
}

#[test]
fn a_list_faster_than_the_worker_is_packed_on_the_replicas_thread() {
    // One page of 56 MiB: a sweep hands the worker at most IN_FLIGHT_BYTES of it, so
    // without the assist more than ASSIST_ABOVE would stay raw once the page is applied.
    let mut r = Replica::new(ReplicaConfig::default());
    let value = |i: usize| {
        let mut v = format!("k8s\0{{\"kind\":\"ConfigMap\",\"name\":\"cm-{i}\",\"data\":{{");
        for j in 0..40 {
            v.push_str(&format!(
                "\"key-{}\":\"value {}\",",
                (i + j) % 97,
                i * 7 + j
            ));
        }
        v.push_str("}}");
        v
    };
    let mut kvs = Vec::new();
    let mut total = 0usize;
    let mut i = 0;
    while total < 56 << 20 {
        let v = value(i);
        total += v.len();
        kvs.push(kv(
            &format!("/registry/configmaps/d/cm-{i:06}"),
            &v,
            2,
            2,
            1,
        ));
        i += 1;
    }
    obs(&mut r, 0, Observation::ListBegin { revision: 2 });
    obs(&mut r, 0, Observation::ListPage { kvs });
    let backlog = r.versions.backlog();
    assert!(
        backlog <= super::versions::ASSIST_ABOVE,
        "{backlog} bytes still wait: {:?}",
        r.memory()
    );
    let m = r.memory();
    // What neither the assist nor the worker's answers have packed: the bound, and what
    // the worker holds unanswered.
    let slack =
        super::versions::ASSIST_ABOVE as usize + super::packing::IN_FLIGHT_BYTES + (1 << 20);
    assert!(
        m.packed_raw_bytes as usize + slack >= total,
        "{total} bytes listed: {m:?}"
    );
    for j in [0, i / 2, i - 1] {
        let got = r
            .get(format!("/registry/configmaps/d/cm-{j:06}").as_bytes())
            .and_then(|v| v.value);
        assert_eq!(got.as_deref(), Some(value(j).as_bytes()), "key {j}");
    }
}

/// A StorageVersionMigration the replica holds (listed, so from before the watch) names
/// the rewrites of its resource that keep managedFields as they were, and still does after a
/// checkpoint, which saves no field for it; once it has succeeded, such rewrites are
/// nobody's again. The rows add up to the resource's writes throughout, and 30 keys of 30
/// rewritten within a minute look like a rewrite of every object.
#[test]
fn a_storage_version_migration_names_the_rewrites_of_its_resource() {
    let cm = |i: usize| {
        Bytes::from(format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"c{i}","managedFields":[{{"manager":"kubectl","operation":"Update","time":"2024-01-02T10:00:00Z"}}]}}}}"#
        ))
    };
    let svm = |conditions: &str| {
        Bytes::from(format!(
            r#"{{"apiVersion":"storagemigration.k8s.io/v1","kind":"StorageVersionMigration","metadata":{{"name":"svm-cm"}},"spec":{{"resource":{{"group":"","resource":"configmaps"}}}},"status":{{"conditions":[{conditions}]}}}}"#
        ))
    };
    let running = r#"{"type":"Running","status":"True"}"#;
    let succeeded = r#"{"type":"Succeeded","status":"True"}"#;
    let svm_key = "/registry/storageversionmigrations/svm-cm";
    let key = |i: usize| format!("/registry/configmaps/d/c{i}");
    let mut kvs: Vec<KeyValue> = (0..30).map(|i| kv_bytes(&key(i), cm(i), 2, 2, 1)).collect();
    kvs.push(kv_bytes(svm_key, svm(running), 3, 3, 1));
    let mut r = Replica::new(ReplicaConfig::default());
    listed(&mut r, 3, kvs, None);
    // Each key written once by kubectl (managedFields new to the replica: a list gave no
    // mark, so the value before is read), then rewritten unchanged.
    let mut rev = 3;
    let mut rewrite = |r: &mut Replica, i: usize, s: u64| {
        rev += 1;
        obs(
            r,
            s,
            Observation::Events {
                revision: rev,
                events: vec![put(kv_bytes(&key(i), cm(i), 2, rev, 2))],
            },
        );
    };
    for i in 0..30 {
        rewrite(&mut r, i, 100 + i as u64 / 10);
    }
    let rows = |r: &Replica| -> Vec<(String, u64)> {
        let cms = r.resource_ids["configmaps"];
        r.writers()
            .iter()
            .filter(|w| w.resource == cms)
            .map(|w| (w.manager.clone(), w.puts))
            .collect()
    };
    assert_eq!(
        rows(&r),
        vec![("(storage version migration svm-cm)".to_string(), 30)]
    );
    let cms = r.resource_ids["configmaps"];
    let second = |s: u64| crate::model::unix_second(at(s));
    assert!(r.looks_rewritten(cms, second(103)));
    assert!(
        !r.looks_rewritten(cms, second(200)),
        "a minute later, no more"
    );

    let (etcd, notes) = (EtcdCluster::default(), Notes::default());
    let bytes = postcard::to_allocvec(&super::checkpoint::Image::of(&r, &etcd, &notes)).unwrap();
    let back: super::checkpoint::Owned = crate::store::shared_bytes::restore_from(
        &Bytes::from(bytes),
        crate::store::CHECKPOINT_FORMAT,
        |b| postcard::from_bytes(b).unwrap(),
    );
    let (mut back, _, _) = back.into_parts();
    back.restored().unwrap();
    assert!(
        back.looks_rewritten(cms, second(103)),
        "the sketch, from the event log"
    );
    for rep in [&mut r, &mut back] {
        let writes = [
            (41, kv_bytes(&key(0), cm(0), 2, 41, 3)),
            (42, kv_bytes(svm_key, svm(succeeded), 3, 42, 2)),
            (43, kv_bytes(&key(1), cm(1), 2, 43, 3)),
        ];
        for (rev, kv) in writes {
            obs(
                rep,
                64 + rev as u64,
                Observation::Events {
                    revision: rev,
                    events: vec![put(kv)],
                },
            );
        }
        assert_eq!(
            rows(rep),
            vec![
                ("(storage version migration svm-cm)".to_string(), 31),
                ("(unknown: same managedFields)".to_string(), 1)
            ]
        );
        let total: u64 = rep
            .writers()
            .iter()
            .filter(|w| w.resource == cms)
            .map(|w| w.puts + w.deletes)
            .sum();
        let stats = &rep.resources()[cms as usize];
        assert_eq!(total, stats.puts + stats.deletes);
    }
    // Deleted, the migration is forgotten.
    let mut m = super::writers::Migrations::default();
    m.follow("a", Some(&svm(running)));
    assert_eq!(m.active_for("configmaps"), Some("a"));
    m.follow("a", None);
    assert_eq!(m.active_for("configmaps"), None);
}
