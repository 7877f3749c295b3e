//! Whole-console snapshots: a replica built from synthetic observations with fixed
//! timestamps, keys and actions driven into the `App`, drawn on ratatui's `TestBackend` and
//! compared as text with insta. Every panel at 80x24 and 160x48; a 544x125 frame (more
//! than 65,535 cells, BR-13) must keep the footer on the last row.
//!
//! Text that comes from the decoder (being completed separately) is replaced by
//! placeholders and checked against `decode::render` directly, so these snapshots pin the
//! console's layout, not the decoder's output.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use regscope::decode::{self, RenderOptions};
use regscope::model::{ConnState, EventKind, KeyValue, Observation, Stamped, WatchEvent};
use regscope::store::{Replica, ReplicaConfig};
use regscope::tui::{views, App, Settings};

const T0: u64 = 1_700_000_000; // 2023-11-14 22:13:20 UTC

fn at(s: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(T0 + s)
}

fn kv(key: &[u8], create: i64, rev: i64, version: i64, lease: i64, size: usize) -> KeyValue {
    let body = format!("payload@{rev};");
    KeyValue {
        key: Bytes::copy_from_slice(key),
        create_revision: create,
        mod_revision: rev,
        version,
        lease,
        value: Bytes::from(body.repeat(size.max(1))),
    }
}

/// A small cluster: a list at revision 100, 29 seconds of writes (lease renewals,
/// configmap updates, pod churn), a compaction, and a resync after compaction (gap).
fn fixture() -> Replica {
    let mut r = Replica::new(ReplicaConfig::default());
    let apply = |r: &mut Replica, s: u64, obs: Observation| r.apply(&Stamped { at: at(s), obs });
    apply(
        &mut r,
        0,
        Observation::Server {
            endpoint: "http://127.0.0.1:2379".into(),
            version: "3.4.30".into(),
        },
    );
    apply(&mut r, 0, Observation::Conn(ConnState::Listing { keys: 0 }));
    let mut kvs = Vec::new();
    let mut rev = 2;
    let mut add = |key: Vec<u8>, size: usize| {
        kvs.push(kv(&key, rev, rev, 1, 0, size));
        rev += 1;
    };
    for i in 0..5 {
        add(
            format!("/registry/configmaps/default/cm-{i}").into_bytes(),
            3 + i,
        );
    }
    add(b"/registry/configmaps/default/cm\xff".to_vec(), 2);
    add(b"/registry/example.com/widgets/default/w1".to_vec(), 4);
    add(b"/registry/leases/kube-node-lease/node-1".to_vec(), 6);
    add(b"/registry/namespaces/default".to_vec(), 5);
    add(b"/registry/namespaces/kube-system".to_vec(), 5);
    for i in 0..30 {
        add(
            format!("/registry/pods/default/web-{i:02}").into_bytes(),
            40,
        );
    }
    add(b"/registry/secrets/default/token".to_vec(), 8);
    add(b"/registry/services/specs/default/kubernetes".to_vec(), 10);
    kvs.sort_by(|a, b| a.key.cmp(&b.key));
    apply(&mut r, 0, Observation::ListBegin { revision: 100 });
    apply(&mut r, 0, Observation::ListPage { kvs });
    apply(
        &mut r,
        0,
        Observation::ListDone {
            revision: 100,
            compacted: None,
        },
    );
    apply(&mut r, 0, Observation::Conn(ConnState::Watching));

    let mut rev = 100;
    let mut cm_versions = [1i64; 5];
    for s in 1..=24 {
        step(&mut r, s, &mut rev, &mut cm_versions);
    }
    r.apply(&Stamped {
        at: at(20),
        obs: Observation::Compacted {
            revision: 110,
            source: "compact_rev_key",
        },
    });
    // Watch lost, compacted meanwhile: relist with a gap.
    r.apply(&Stamped {
        at: at(25),
        obs: Observation::Conn(ConnState::Reconnecting {
            attempt: 1,
            error: "connection reset by peer".into(),
        }),
    });
    r.apply(&Stamped {
        at: at(25),
        obs: Observation::Note("watch stream lost; reconnecting".into()),
    });
    let head = r.revision();
    let mut relisted: Vec<KeyValue> = r
        .range_at(b"/registry", head)
        .expect("range")
        .map(|(k, v)| KeyValue {
            key: k.clone(),
            create_revision: v.create_revision,
            mod_revision: v.mod_revision,
            version: v.version,
            lease: v.lease,
            value: v.value.unwrap_or_default(),
        })
        .collect();
    relisted.push(kv(
        b"/registry/pods/default/web-new",
        head + 3,
        head + 3,
        1,
        0,
        40,
    ));
    relisted.sort_by(|a, b| a.key.cmp(&b.key));
    for obs in [
        Observation::ListBegin { revision: head + 5 },
        Observation::ListPage { kvs: relisted },
        Observation::ListDone {
            revision: head + 5,
            compacted: Some(head + 4),
        },
        Observation::Conn(ConnState::Watching),
    ] {
        r.apply(&Stamped { at: at(26), obs });
    }
    rev = head + 5;
    for s in 27..=29 {
        step(&mut r, s, &mut rev, &mut cm_versions);
    }
    r
}

/// One second of writes: a lease renewal; every 3 s a configmap update; every 5 s an event
/// object (with a lease) and a pod deletion.
fn step(r: &mut Replica, s: u64, rev: &mut i64, cm_versions: &mut [i64; 5]) {
    let mut events = Vec::new();
    let mut put =
        |rev: &mut i64, key: String, create: i64, version: i64, lease: i64, size: usize| {
            *rev += 1;
            let create = if create == 0 { *rev } else { create };
            events.push(WatchEvent {
                kind: EventKind::Put,
                kv: kv(key.as_bytes(), create, *rev, version, lease, size),
                prev_kv: None,
            });
        };
    put(
        rev,
        "/registry/leases/kube-node-lease/node-1".into(),
        9,
        s as i64 + 1,
        0,
        6,
    );
    if s % 3 == 0 {
        let i = (s as usize / 3) % 5;
        cm_versions[i] += 1;
        put(
            rev,
            format!("/registry/configmaps/default/cm-{i}"),
            2 + i as i64,
            cm_versions[i],
            0,
            3 + i,
        );
    }
    if s % 5 == 0 {
        put(
            rev,
            format!("/registry/events/default/web.{s:03}"),
            0,
            1,
            0x7a1,
            12,
        );
        *rev += 1;
        events.push(WatchEvent {
            kind: EventKind::Delete,
            kv: KeyValue {
                key: Bytes::from(format!("/registry/pods/default/web-{s:02}")),
                create_revision: 0,
                mod_revision: *rev,
                version: 0,
                lease: 0,
                value: Bytes::new(),
            },
            prev_kv: None,
        });
    }
    r.apply(&Stamped {
        at: at(s),
        obs: Observation::Events {
            revision: *rev,
            events,
        },
    });
}

fn app() -> App {
    let mut app = App::new(fixture(), Settings::default());
    app.set_now(at(30));
    app
}

fn keys(app: &mut App, keys: &str) {
    for c in keys.chars() {
        let code = match c {
            '\n' => KeyCode::Enter,
            '\x1b' => KeyCode::Esc,
            c => KeyCode::Char(c),
        };
        app.handle_key(&KeyEvent::new(code, KeyModifiers::NONE));
    }
}

/// Draws `app` at `w`x`h` and returns the screen as text (trailing spaces trimmed).
fn render(app: &mut App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    // Draw twice: the first frame records viewport sizes that paging uses.
    term.draw(|f| views::draw(app, f)).expect("draw");
    app.mark_drawn();
    let frame = term.draw(|f| views::draw(app, f)).expect("draw");
    let buf = frame.buffer;
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        for x in 0..buf.area.width {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[test]
fn growth_80x24() {
    insta::assert_snapshot!(render(&mut app(), 80, 24));
}

#[test]
fn growth_160x48() {
    insta::assert_snapshot!(render(&mut app(), 160, 48));
}

#[test]
fn events_80x24() {
    let mut a = app();
    keys(&mut a, "2");
    insta::assert_snapshot!(render(&mut a, 80, 24));
}

#[test]
fn events_160x48() {
    let mut a = app();
    keys(&mut a, "2");
    insta::assert_snapshot!(render(&mut a, 160, 48));
}

#[test]
fn events_filtered_and_paused_80x24() {
    let mut a = app();
    keys(&mut a, "2/cm-\n ");
    let text = render(&mut a, 80, 24);
    assert!(text.contains("filter \"cm-\""), "{text}");
    assert!(text.contains("PAUSED"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn keys_list_80x24() {
    let mut a = app();
    keys(&mut a, "3jjjj\njj");
    insta::assert_snapshot!(render(&mut a, 80, 24));
}

#[test]
fn keys_list_160x48() {
    let mut a = app();
    keys(&mut a, "3jjjj\njj");
    insta::assert_snapshot!(render(&mut a, 160, 48));
}

/// Replaces decoder-produced text (format label, value lines) with placeholders after
/// checking it is on screen.
fn mask_decoded(text: &str, value: &[u8], inner_width: usize) -> String {
    let r = decode::render(
        value,
        &RenderOptions {
            show_secrets: false,
            ..Default::default()
        },
    );
    let mut out = text.replace(&format!("format {}", r.format), "format <format>");
    out = out.replace(&format!(" {} · ", r.format), " <format> · ");
    for (i, l) in r.lines.iter().enumerate().take(3) {
        let shown: String = l.chars().take(inner_width).collect();
        assert!(
            out.contains(&shown),
            "value line {i} {shown:?} not on screen:\n{out}"
        );
        out = out.replacen(&format!("│{shown}"), &format!("│<value line {i}>"), 1);
    }
    out
}

fn open_cm1(a: &mut App) {
    // configmaps is the first resource; cm-1 is its second key.
    keys(a, "3\nj\n");
}

#[test]
fn key_detail_80x24() {
    let mut a = app();
    open_cm1(&mut a);
    let value = a
        .replica()
        .get(b"/registry/configmaps/default/cm-1")
        .expect("live");
    let text = render(&mut a, 80, 24);
    insta::assert_snapshot!(mask_decoded(&text, &value.value.unwrap_or_default(), 78));
}

#[test]
fn key_detail_160x48() {
    let mut a = app();
    open_cm1(&mut a);
    let value = a
        .replica()
        .get(b"/registry/configmaps/default/cm-1")
        .expect("live");
    let text = render(&mut a, 160, 48);
    insta::assert_snapshot!(mask_decoded(&text, &value.value.unwrap_or_default(), 158));
}

#[test]
fn key_detail_older_version_160x48() {
    let mut a = app();
    open_cm1(&mut a);
    keys(&mut a, "[");
    let hist = a.replica().history(b"/registry/configmaps/default/cm-1");
    let older = hist[hist.len() - 2].value.clone().unwrap_or_default();
    let text = render(&mut a, 160, 48);
    assert!(text.contains("showing older version"), "{text}");
    insta::assert_snapshot!(mask_decoded(&text, &older, 158));
}

#[test]
fn help_80x24() {
    let mut a = app();
    keys(&mut a, "?");
    insta::assert_snapshot!(render(&mut a, 80, 24));
}

#[test]
fn help_160x48() {
    let mut a = app();
    keys(&mut a, "?");
    insta::assert_snapshot!(render(&mut a, 160, 48));
}

fn not_responding() -> App {
    let mut r = fixture();
    r.apply(&Stamped {
        at: at(40),
        obs: Observation::Conn(ConnState::NotResponding { since: at(31) }),
    });
    let mut a = App::new(r, Settings::default());
    a.set_now(at(52));
    a
}

#[test]
fn not_responding_header_80x24() {
    let text = render(&mut not_responding(), 80, 24);
    assert!(
        text.contains("etcd not responding since 22:13:51"),
        "{text}"
    );
    assert!(text.contains("STALE"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn not_responding_header_160x48() {
    let mut a = not_responding();
    keys(&mut a, "2");
    insta::assert_snapshot!(render(&mut a, 160, 48));
}

#[test]
fn source_ended_and_config_warning_80x24() {
    let settings = Settings {
        warnings: vec![
            "keymap k.toml: [global] \"y\" = \"launch\": unknown action (ignored)".into(),
        ],
        ..Settings::default()
    };
    let mut a = App::new(fixture(), settings);
    a.set_now(at(30));
    a.set_source_ended();
    let text = render(&mut a, 80, 24);
    assert!(text.contains("source ended"), "{text}");
    insta::assert_snapshot!(text);
}

/// BR-13: 544x125 is 68,000 cells, past the 65,535 that older ratatui mishandled.
#[test]
fn huge_terminal_544x125_keeps_footer_on_last_row() {
    for panel in ["1", "2", "3", "3l\n\n", "?"] {
        let mut a = app();
        keys(&mut a, panel);
        let text = render(&mut a, 544, 125);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 125);
        assert!(lines[0].contains("regscope"), "header on the first row");
        let last = lines[124];
        assert!(
            last.contains("help") || last.contains("back"),
            "footer on the last row: {last:?}"
        );
        assert!(last.contains("quit"), "{last:?}");
        // The main pane's bottom border is the row right above the footer and spans the width.
        let above = lines[123];
        assert!(above.starts_with('└'), "{above:?}");
        assert_eq!(above.chars().count(), 544, "{above:?}");
    }
}
