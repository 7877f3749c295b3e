//! Whole-console snapshots: a replica built from synthetic observations with fixed
//! timestamps, keys and actions driven into the `App`, drawn on ratatui's `TestBackend` and
//! compared as text with insta. Every panel at 80x24 and 160x48; a 544x125 frame (more
//! than 65,535 cells, where layout has broken before) must keep the footer on the last row.
//!
//! The fixture's values are not Kubernetes encodings; the decoder's text for them is
//! replaced by placeholders and checked against `decode::render` directly, so those
//! snapshots pin the console's layout. The key-view snapshots at the end (a Pod, a Widget
//! custom resource stored as JSON, a Deployment diff, Secrets left mixed encrypted and
//! plain) use real storage encodings with fixed times and uids, and do pin the decoded
//! output.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use regscope::decode::{self, RenderOptions};
use regscope::model::{ConnState, EventKind, KeyValue, Observation, Stamped, WatchEvent};
use regscope::store::{Replica, ReplicaConfig, Session};
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
fn fixture() -> Session {
    fixture_titled("demo")
}

/// `s` with `title` in the header.
fn titled(s: Session, title: &str) -> Session {
    let info = regscope::model::SessionInfo {
        title: title.into(),
        ..s.info().clone()
    };
    s.with_info(info)
}

/// The fixture's session, with `title` in the header.
fn fixture_titled(title: &str) -> Session {
    let mut r = Session::from_replica(Replica::new(ReplicaConfig::default()), title);
    let apply = |r: &mut Session, s: u64, obs: Observation| {
        r.apply(&Stamped { at: at(s), obs });
    };
    apply(
        &mut r,
        0,
        Observation::Server {
            endpoint: "http://127.0.0.1:2379".into(),
            version: "3.4.30".into(),
            cluster_id: 0,
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
            source: regscope::model::CompactionSource::CompactRevKey,
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
        .replica
        .range_at(b"/registry", head)
        .expect("range")
        .map(|(k, v)| KeyValue {
            key: Bytes::copy_from_slice(k),
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
fn step(r: &mut Session, s: u64, rev: &mut i64, cm_versions: &mut [i64; 5]) {
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
    if s.is_multiple_of(3) {
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
    if s.is_multiple_of(5) {
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
    app.tick(at(30));
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
    // The same text as a screenshot's `.txt`.
    regscope::tui::screenshot::text(frame.buffer)
}

/// Draws `app` and returns the screen as text, then each row's styles as one letter per
/// cell (`.` for the terminal's default style) and the legend of the letters: what a
/// theme changes is visible in a text snapshot.
fn render_styles(app: &mut App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    term.draw(|f| views::draw(app, f)).expect("draw");
    app.mark_drawn();
    let frame = term.draw(|f| views::draw(app, f)).expect("draw");
    let buf = frame.buffer;
    let mut legend: Vec<ratatui::style::Style> = Vec::new();
    let mut text = String::new();
    let mut grid = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        let mut styles = String::new();
        for x in 0..buf.area.width {
            let cell = &buf[(x, y)];
            line.push_str(cell.symbol());
            let st = cell.style();
            if st
                == ratatui::style::Style::default()
                    .fg(ratatui::style::Color::Reset)
                    .bg(ratatui::style::Color::Reset)
                || st == ratatui::style::Style::default()
            {
                styles.push('.');
                continue;
            }
            let i = legend.iter().position(|l| *l == st).unwrap_or_else(|| {
                legend.push(st);
                legend.len() - 1
            });
            styles.push(char::from(b'a' + (i % 26) as u8));
        }
        text.push_str(line.trim_end());
        text.push('\n');
        grid.push_str(styles.trim_end_matches('.'));
        grid.push('\n');
    }
    let mut out = text;
    out.push_str("---- styles ----\n");
    out.push_str(&grid);
    for (i, st) in legend.iter().enumerate() {
        out.push_str(&format!(
            "{} = fg {:?} bg {:?} {:?}\n",
            char::from(b'a' + (i % 26) as u8),
            st.fg,
            st.bg,
            st.add_modifier
        ));
    }
    out
}

#[test]
fn every_shipped_theme_on_the_growth_screen() {
    use regscope::tui::{ColorDepth, Theme};
    for (name, _) in regscope::config::THEMES {
        let (spec, mut w) = regscope::config::load_theme(Some(std::path::Path::new(name)));
        let theme = Theme::from_spec(&spec, ColorDepth::TrueColor, &mut w);
        assert!(w.is_empty(), "{name}: {w:?}");
        let mut a = App::new(
            fixture(),
            Settings {
                theme,
                ..Settings::default()
            },
        );
        a.tick(at(30));
        insta::assert_snapshot!(format!("theme_{name}"), render_styles(&mut a, 80, 24));
    }
}

#[test]
fn growth_80x24() {
    insta::assert_snapshot!(render(&mut app(), 80, 24));
}

#[test]
fn growth_160x48() {
    insta::assert_snapshot!(render(&mut app(), 160, 48));
}

/// Narrow and short: the tab bar still names the current screen, and no table shows a
/// header without rows.
#[test]
fn growth_60x15() {
    let mut a = app();
    insta::assert_snapshot!(render(&mut a, 60, 15));
    // Another screen: its name, the others' numbers.
    keys(&mut a, "4");
    let text = render(&mut a, 60, 15);
    let tabs = text.lines().next().unwrap_or_default();
    assert!(tabs.contains(" 1   2   3   4 Apiserver "), "{tabs:?}");
}

/// The header says how much memory regscope holds, against `--memory-limit` when set, and
/// what the history budget keeps.
#[test]
fn header_shows_memory_and_history_budget() {
    let mut a = app();
    a.set_memory(Some(regscope::tui::MemoryStatus {
        resident: 612 << 20,
        limit: Some(1 << 30),
        packed: None,
    }));
    let (_, history) = a.replica().history_usage();
    let text = render(&mut a, 200, 24);
    let row = text.lines().nth(1).unwrap_or_default();
    let want = format!(
        "mem 612.0 MiB of 1.0 GiB (history {} of 256.0 MiB)",
        if history < 1024 {
            format!("{history} B")
        } else {
            format!("{:.1} KiB", history as f64 / 1024.0)
        }
    );
    assert!(row.contains(&want), "{row:?} lacks {want:?}");
    a.set_memory(Some(regscope::tui::MemoryStatus {
        resident: 612 << 20,
        limit: None,
        packed: None,
    }));
    let text = render(&mut a, 200, 24);
    assert!(text
        .lines()
        .nth(1)
        .unwrap_or_default()
        .contains("mem 612.0 MiB (history"));
    // Values packed in memory: their raw size and what they take.
    a.set_memory(Some(regscope::tui::MemoryStatus {
        resident: 300 << 20,
        limit: None,
        packed: Some((463 << 20, 122 << 20)),
    }));
    let text = render(&mut a, 200, 24);
    let row = text.lines().nth(1).unwrap_or_default().to_string();
    assert!(
        row.contains("mem 300.0 MiB (values 463.0 MiB packed to 122.0 MiB, history"),
        "{row:?}"
    );
    // Narrower: the packed values go first, then the history; the row is never cut inside.
    let text = render(&mut a, 120, 24);
    let row = text
        .lines()
        .nth(1)
        .unwrap_or_default()
        .trim_end()
        .to_string();
    assert!(row.ends_with(" of 256.0 MiB)"), "{row:?}");
    assert!(!row.contains("packed"), "{row:?}");
    let text = render(&mut a, 95, 24);
    let row = text
        .lines()
        .nth(1)
        .unwrap_or_default()
        .trim_end()
        .to_string();
    assert!(row.ends_with("mem 300.0 MiB"), "{row:?}");
}

/// While a list runs the header says how far it is: the whole line where it fits, the share
/// done and the time left on a narrow terminal (not a line cut in the middle).
#[test]
fn header_shows_list_progress_in_the_room_it_has() {
    let mut r = Session::from_replica(Replica::new(ReplicaConfig::default()), "demo");
    let page = |from: usize| Observation::ListPage {
        kvs: (from..from + 250)
            .map(|i| {
                kv(
                    format!("/registry/configmaps/default/cm-{i:04}").as_bytes(),
                    2,
                    2,
                    1,
                    0,
                    100,
                )
            })
            .collect(),
    };
    for (s, obs) in [
        (0, Observation::ListBegin { revision: 9 }),
        (0, Observation::ListCount { keys: 1000 }),
        (1, page(0)),
        (1, Observation::Conn(ConnState::Listing { keys: 250 })),
    ] {
        r.apply(&Stamped { at: at(s), obs });
    }
    let mut a = App::new(r, Settings::default());
    a.tick(at(1));
    let wide = render(&mut a, 240, 24);
    let row = wide.lines().next().unwrap_or_default();
    assert!(
        row.contains("listing @rev 9: 250 of 1,000 keys (25%), ")
            && row.contains("250 keys/s, about 3 s left"),
        "{row:?}"
    );
    let narrow = render(&mut a, 80, 24);
    let row = narrow.lines().next().unwrap_or_default();
    assert!(row.ends_with("listing 25% · 3 s left  UTC"), "{row:?}");
}

#[test]
fn events_80x24() {
    let mut a = app();
    keys(&mut a, "2");
    insta::assert_snapshot!(render(&mut a, 80, 24));
}

/// A narrow terminal drops columns rather than cutting revisions from the left (`,546`).
#[test]
fn events_40x12_keeps_whole_revisions() {
    let mut a = app();
    keys(&mut a, "2");
    let text = render(&mut a, 40, 12);
    let head = a.replica().revision().to_string();
    let with_commas: String = head
        .chars()
        .rev()
        .collect::<Vec<_>>()
        .chunks(3)
        .map(|c| c.iter().collect::<String>())
        .collect::<Vec<_>>()
        .join(",")
        .chars()
        .rev()
        .collect();
    assert!(
        text.contains(&format!(" {with_commas} ")),
        "revision {with_commas} not shown whole:\n{text}"
    );
    assert!(!text.contains(" ,"), "a number cut from the left:\n{text}");
    insta::assert_snapshot!(text);
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

/// Several words filter as AND: `DELETE pods` keeps the pod deletions only; `unseen`
/// keeps the rows only a relist showed.
#[test]
fn events_filter_words_are_and() {
    let mut a = app();
    keys(&mut a, "2/DELETE pods\n");
    let text = render(&mut a, 120, 40);
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("/registry/") && l.starts_with('│'))
        .collect();
    assert!(!rows.is_empty(), "{text}");
    assert!(
        rows.iter()
            .all(|l| l.contains("DELETE") && l.contains("pods")),
        "{text}"
    );
    let mut a = app();
    keys(&mut a, "2/unseen\n");
    let text = render(&mut a, 120, 40);
    assert!(text.contains("Events 1 shown"), "{text}");
    assert!(
        text.contains("CREATE") && text.contains("web-new"),
        "{text}"
    );
}

/// Opening a DELETE row shows what was deleted: the last live object, under a title that
/// says it was deleted and at which revision.
#[test]
fn a_delete_row_opens_on_the_last_live_object() {
    let mut a = app();
    keys(&mut a, "2/DELETE\n\n");
    let text = render(&mut a, 120, 40);
    assert!(
        text.contains("DELETED at revision 134; the last live object, revision"),
        "{text}"
    );
    assert!(text.contains("payload@"), "{text}");
    assert!(!text.contains("no value"), "{text}");
}

/// A key deleted inside a gap: etcd's deleting revision was never seen, and the console
/// says within which revisions instead of naming the relist's as the deletion's.
#[test]
fn a_delete_inside_a_gap_says_within_which_revisions() {
    let mut r = Session::from_replica(Replica::new(ReplicaConfig::default()), "demo");
    let list = |r: &mut Session, rev: i64, kvs: Vec<KeyValue>, compacted: Option<i64>, s: u64| {
        for obs in [
            Observation::ListBegin { revision: rev },
            Observation::ListPage { kvs },
            Observation::ListDone {
                revision: rev,
                compacted,
            },
            Observation::Conn(ConnState::Watching),
        ] {
            r.apply(&Stamped { at: at(s), obs });
        }
    };
    list(
        &mut r,
        5,
        vec![
            kv(b"/registry/configmaps/default/a", 2, 2, 1, 0, 2),
            kv(b"/registry/configmaps/default/b", 3, 3, 1, 0, 2),
        ],
        None,
        0,
    );
    list(
        &mut r,
        13,
        vec![kv(b"/registry/configmaps/default/a", 2, 2, 1, 0, 2)],
        Some(13),
        10,
    );
    let mut a = App::new(titled(r, "gap"), Settings::default());
    a.tick(at(11));
    keys(&mut a, "2/unseen\n\n");
    let text = render(&mut a, 160, 40);
    assert!(
        text.contains("DELETED within revisions 6–13 (not seen one by one"),
        "{text}"
    );
    assert!(text.contains("deleted within revisions 6–13"), "{text}");
    assert!(!text.contains("deleted at revision 13"), "{text}");
    // The history row gives the gap, not the relist's revision; the diff says deleted.
    assert!(
        text.contains("6–13 deleted · gap 6–13: v1 → deleted"),
        "{text}"
    );
    keys(&mut a, "d");
    let diff = render(&mut a, 160, 40);
    assert!(diff.contains("→ deleted in 6–13"), "{diff}");
    assert!(!diff.contains("0 changes"), "{diff}");
}

/// The key `/registry/` itself (and `/registry//x`): a named entry in Keys that lists
/// them, not a blank resource with "no live keys".
#[test]
fn keys_without_a_resource_segment_are_listed_under_a_name() {
    let mut r = Session::from_replica(Replica::new(ReplicaConfig::default()), "demo");
    let mut kvs = vec![
        kv(b"/registry/", 2, 2, 1, 0, 1),
        kv(b"/registry//stray", 3, 3, 1, 0, 1),
        kv(b"/registry/pods/default/p", 4, 4, 1, 0, 1),
    ];
    kvs.sort_by(|a, b| a.key.cmp(&b.key));
    for obs in [
        Observation::ListBegin { revision: 4 },
        Observation::ListPage { kvs },
        Observation::ListDone {
            revision: 4,
            compacted: None,
        },
        Observation::Conn(ConnState::Watching),
    ] {
        r.apply(&Stamped { at: at(0), obs });
    }
    let mut a = App::new(titled(r, "rootless"), Settings::default());
    a.tick(at(1));
    keys(&mut a, "3");
    let text = render(&mut a, 120, 30);
    assert!(text.contains("(no resource)"), "{text}");
    assert!(!text.contains("no live keys in this resource"), "{text}");
    assert!(text.contains("/stray"), "{text}");
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

/// `?` explains every column and mark of the screen it is opened on.
#[test]
fn help_explains_the_columns_of_its_screen() {
    for (screen, terms) in [
        (
            "1",
            &[
                "Revisions/s",
                "put/s del/s",
                "top writer",
                "(deleter unknown)",
            ][..],
        ),
        (
            "2",
            &["unseen CREATE/CHANGE/DELETE", "writer", "filter"][..],
        ),
        ("3", &["≤ time", "gap 12–16: v7 → v10"][..]),
        (
            "4",
            &[
                "risk",
                "cache lag",
                "inf lag / inf s",
                "%win",
                "term inits",
                "capacity cap ±",
                "history",
            ][..],
        ),
    ] {
        let mut a = app();
        keys(&mut a, screen);
        keys(&mut a, "?");
        let text = render(&mut a, 160, 100);
        assert!(
            text.contains("every clock time on screen is in UTC"),
            "{text}"
        );
        for t in terms {
            assert!(
                text.contains(&format!("│  {t}")),
                "screen {screen}: {t}\n{text}"
            );
        }
    }
}

/// Too narrow for a column of descriptions: each wraps under its key and action.
#[test]
fn help_60x20() {
    let mut a = app();
    keys(&mut a, "?");
    insta::assert_snapshot!(render(&mut a, 60, 20));
    // No room beside the names at all: under them, whole (below the screen's glossary).
    render(&mut a, 40, 30);
    let mut text = String::new();
    for _ in 0..400 {
        text = render(&mut a, 40, 30);
        if text.contains("│    open or close this help") {
            break;
        }
        keys(&mut a, "j");
    }
    assert!(text.contains("│    open or close this help"), "{text}");
}

fn not_responding() -> App {
    let mut r = fixture();
    r.apply(&Stamped {
        at: at(40),
        obs: Observation::Conn(ConnState::NotResponding { since: at(31) }),
    });
    let mut a = App::new(r, Settings::default());
    a.tick(at(52));
    a
}

/// The alert row of `app` at `w` columns (the line that starts with a warning sign).
fn alert_row(app: &mut App, w: u16) -> String {
    let text = render(app, w, 24);
    text.lines()
        .find(|l| l.starts_with(" ⚠") || l.starts_with(" ✖"))
        .unwrap_or_else(|| panic!("no alert row:\n{text}"))
        .to_string()
}

/// Every alert row at 80 and 160 columns: says what it must (since when and for how long,
/// which revisions a gap hid and what changed there, which etcd was replaced by which),
/// and ends at a word, never inside one.
#[test]
fn alert_rows_at_80_and_160_columns() {
    let reconnecting = || {
        let mut r = fixture();
        r.apply(&Stamped {
            at: at(40),
            obs: Observation::Conn(ConnState::Reconnecting {
                attempt: 3,
                error: "connection refused (os error 111)".into(),
            }),
        });
        let mut a = App::new(r, Settings::default());
        a.tick(at(170));
        a
    };
    let replaced = || {
        let mut r = fixture();
        let head = r.revision();
        for (s, obs) in [
            (
                40,
                Observation::Conn(ConnState::Reconnecting {
                    attempt: 1,
                    error: "refused".into(),
                }),
            ),
            (
                45,
                Observation::Server {
                    endpoint: "http://127.0.0.1:2379".into(),
                    version: "3.4.30".into(),
                    cluster_id: 0xcdf818194e3a8c32,
                },
            ),
            (
                45,
                Observation::Reset {
                    reason: "etcd's cluster ID changed".into(),
                },
            ),
            (45, Observation::ListBegin { revision: 3 }),
            (45, Observation::ListPage { kvs: vec![] }),
            (
                45,
                Observation::ListDone {
                    revision: 3,
                    compacted: None,
                },
            ),
            (45, Observation::Conn(ConnState::Watching)),
        ] {
            r.apply(&Stamped { at: at(s), obs });
        }
        assert!(head > 3);
        let mut a = App::new(r, Settings::default());
        a.tick(at(50));
        a
    };
    let with = |obs: Observation| {
        let obs = obs.clone();
        move || {
            let mut r = fixture();
            r.apply(&Stamped {
                at: at(50),
                obs: obs.clone(),
            });
            let mut a = App::new(r, Settings::default());
            a.tick(at(52));
            a
        }
    };
    let nospace = with(Observation::EtcdStatus(regscope::model::EtcdStatus {
        endpoint: "http://127.0.0.1:2379".into(),
        errors: vec!["memberID:10276657743932975437 alarm:NOSPACE ".into()],
        ..Default::default()
    }));
    let failed = with(Observation::Conn(ConnState::Failed {
        error:
            "authentication failed: invalid user ID or password (etcdserver: authentication failed)"
                .into(),
    }));
    type Case = (&'static str, Box<dyn Fn() -> App>, Vec<&'static str>);
    let cases: Vec<Case> = vec![
        ("nospace", Box::new(nospace), vec!["etcd alarm NOSPACE"]),
        ("failed", Box::new(failed), vec!["source failed"]),
        (
            "not responding",
            Box::new(not_responding),
            vec!["etcd not responding since 22:13:51, 21s"],
        ),
        (
            "reconnecting",
            Box::new(reconnecting),
            vec!["etcd unreachable since 22:14:00, 2m 10s"],
        ),
        (
            "gap",
            Box::new(app),
            vec!["gap 141–145 at 22:13:46: 1 created, 0 changed, 0 deleted unseen"],
        ),
        (
            "replaced",
            Box::new(replaced),
            vec!["etcd replaced at 22:14:05: revision 149 → 3, cluster id ? → cdf818194e3a8c32"],
        ),
    ];
    // The replaced etcd's row in Events, above the old etcd's rows.
    let mut a = replaced();
    keys(&mut a, "2");
    let text = render(&mut a, 160, 40);
    assert!(
        text.contains("RESET")
            && text.contains(
                "── etcd replaced: cluster id unknown → cdf818194e3a8c32, revision 149 → 3"
            ),
        "{text}"
    );
    assert!(text.contains("unseen"), "the old rows stay: {text}");
    let mut all = String::new();
    for (name, make, says) in cases {
        let full = alert_row(&mut make(), 400);
        assert!(!full.ends_with('…'), "{name} whole: {full}");
        for w in [80u16, 160] {
            let row = alert_row(&mut make(), w);
            assert!(row.chars().count() <= w as usize, "{name} at {w}: {row}");
            for s in &says {
                assert!(row.contains(s), "{name} at {w}: {row}");
            }
            // Cut only after a whole word: the text before the ellipsis is the start of
            // the whole alert, followed there by a space or a punctuation mark.
            if let Some(cut) = row.strip_suffix('…') {
                assert!(full.starts_with(cut), "{name} at {w}: {row}");
                let next = full[cut.len()..].chars().next();
                assert!(
                    next.is_some_and(|c| !c.is_alphanumeric()),
                    "{name} at {w} cut inside a word: {row}"
                );
            } else {
                assert_eq!(row, full, "{name} at {w}");
            }
            all.push_str(&format!("{name} at {w}:\n{row}\n"));
        }
    }
    insta::assert_snapshot!(all);
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

/// A head announced past the replica (etcd 3.4.23's lower bound: shown apart, not applied)
/// and a progress notification that ran behind what was applied (from an etcd that orders
/// them, an anomaly): the header says both, the event log says why.
#[test]
fn head_announced_and_watch_anomaly_160x48() {
    let mut r = fixture();
    let rev = r.revision();
    r.apply(&Stamped {
        at: at(50),
        obs: Observation::HeadAtLeast { revision: rev + 12 },
    });
    r.apply(&Stamped {
        at: at(51),
        obs: Observation::Progress { revision: rev - 3 },
    });
    assert_eq!(r.revision(), rev);
    let mut a = App::new(r, Settings::default());
    a.tick(at(52));
    let text = render(&mut a, 160, 48);
    assert!(
        text.contains(&format!("rev {rev} (head ≥ {})", rev + 12)),
        "{text}"
    );
    assert!(text.contains("watch anomalies 1"), "{text}");
    insta::assert_snapshot!(text);
}

/// After a failover to another of the endpoints given, the title names the member read now.
#[test]
fn the_title_follows_a_failover() {
    let mut r = fixture();
    r.apply(&Stamped {
        at: at(50),
        obs: Observation::Server {
            endpoint: "http://127.0.0.1:22379".into(),
            version: "3.4.30".into(),
            cluster_id: 0,
        },
    });
    let session = r.with_info(regscope::model::SessionInfo {
        title: "http://127.0.0.1:2379 (+1) /registry/".into(),
        endpoints: vec![
            "http://127.0.0.1:2379".into(),
            "http://127.0.0.1:22379".into(),
        ],
        started_at: at(0),
        ..Default::default()
    });
    let mut a = App::new(session, Settings::default());
    a.tick(at(52));
    let text = render(&mut a, 120, 40);
    let header = text.lines().next().unwrap();
    assert!(
        header.contains("regscope http://127.0.0.1:22379 /registry/ (failed over)"),
        "{text}"
    );
    // The demo's own title is not made from the endpoint: it stays.
    let demo = fixture().with_info(regscope::model::SessionInfo {
        title: "demo · etcd 127.0.0.1:22379".into(),
        endpoints: vec!["http://127.0.0.1:22379".into()],
        started_at: at(0),
        ..Default::default()
    });
    let mut d = App::new(demo, Settings::default());
    d.tick(at(52));
    let text = render(&mut d, 120, 40);
    assert!(!text.contains("failed over"), "{text}");
    let notes = a.session().notes();
    assert!(
        notes
            .back()
            .unwrap()
            .1
            .to_string()
            .contains("failover: reading from http://127.0.0.1:22379"),
        "{notes:?}"
    );
}

/// etcd out of space: the alert row and the etcd section of the Apiserver panel say what
/// it means and what to do.
#[test]
fn nospace_alarm_120x40() {
    let mut r = fixture();
    r.apply(&Stamped {
        at: at(50),
        obs: Observation::EtcdStatus(regscope::model::EtcdStatus {
            endpoint: "http://127.0.0.1:2379".into(),
            member_id: 10276657743932975437,
            leader: 10276657743932975437,
            db_size: 2_330_624,
            db_size_in_use: 2_330_624,
            errors: vec!["memberID:10276657743932975437 alarm:NOSPACE ".into()],
            ..Default::default()
        }),
    });
    let mut a = App::new(r, Settings::default());
    a.tick(at(52));
    let text = render(&mut a, 120, 40);
    assert!(text.contains("etcd alarm NOSPACE"), "{text}");
    assert!(text.contains("etcdctl alarm disarm"), "{text}");
    keys(&mut a, "4");
    let panel = render(&mut a, 120, 40);
    assert!(panel.contains("defragment every member"), "{panel}");
    assert!(panel.contains("accepts only reads and deletes"), "{panel}");
    insta::assert_snapshot!(panel);
}

/// Three etcd members in the etcd section: the one read from marked, the leader named, a
/// member that does not answer with its error; the poll that saw it stop left a note.
#[test]
fn etcd_members_120x40() {
    use regscope::model::{EtcdStatus, MemberStatus};
    let status = |endpoint: &str, id: u64, index: u64| EtcdStatus {
        endpoint: endpoint.into(),
        member_id: id,
        leader: 0x1111,
        raft_term: 3,
        raft_index: index,
        raft_applied_index: index,
        db_size: 2_330_624,
        db_size_in_use: 1_200_000,
        ..Default::default()
    };
    let member = |id: u64, name: &str, port: u16, up: bool| MemberStatus {
        id,
        name: name.into(),
        endpoint: format!("http://127.0.0.1:{port}"),
        is_learner: false,
        status: up.then(|| status(&format!("http://127.0.0.1:{port}"), id, 4_812)),
        error: (!up).then(|| "connect timed out after 2 s".to_string()),
    };
    let mut r = fixture();
    for (t, up) in [(48, true), (50, false)] {
        r.apply(&Stamped {
            at: at(t),
            obs: Observation::Members(vec![
                member(0x1111, "m0", 12379, true),
                member(0x2222, "m1", 2379, true),
                member(0x3333, "m2", 32379, up),
            ]),
        });
    }
    assert!(
        r.notes()
            .iter()
            .any(|(_, n)| n.to_string() == "etcd member m2 (http://127.0.0.1:32379) stopped answering: connect timed out after 2 s"),
        "{:?}",
        r.notes()
    );
    let mut a = App::new(r, Settings::default());
    a.tick(at(52));
    keys(&mut a, "4");
    let panel = render(&mut a, 120, 40);
    for want in [
        "▸ m1",
        "leader",
        "follower",
        "4,812",
        "no answer",
        "connect timed out",
    ] {
        assert!(panel.contains(want), "{want}: {panel}");
    }
    insta::assert_snapshot!(panel);
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
    a.tick(at(30));
    a.set_source_ended();
    let text = render(&mut a, 80, 24);
    assert!(text.contains("source ended"), "{text}");
    insta::assert_snapshot!(text);
}

/// Very large terminals: 544x125 is 68,000 cells, past the 65,535 that older ratatui
/// mishandled.
#[test]
fn huge_terminal_544x125_keeps_footer_on_last_row() {
    for panel in ["1", "2", "3", "3l\n\n", "4", "?"] {
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

// ---- Key detail, diff and encryption summary: every stored value decoded exactly.
// ---- Values are real storage encodings built with the demo's encoders,
// ---- with fixed times and uids, so these snapshots pin the decoder's output too.

mod common;

mod storage_fixtures {
    use super::*;
    use k8s_pb::api::core::v1::{Container, ContainerPort, Pod, PodSpec, PodStatus};
    use k8s_pb::apimachinery::pkg::apis::meta::v1::{
        FieldsV1, ManagedFieldsEntry, ObjectMeta, Time,
    };
    use regscope::demo::objects;

    pub fn time(s: u64) -> Time {
        Time {
            seconds: Some((T0 + s) as i64),
            nanos: Some(0),
        }
    }

    pub fn entry(
        manager: &str,
        api_version: &str,
        subresource: Option<&str>,
        s: u64,
        fields: &str,
    ) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some("Update".into()),
            api_version: Some(api_version.into()),
            time: Some(time(s)),
            fields_type: Some("FieldsV1".into()),
            fields_v1: Some(FieldsV1 {
                raw: Some(fields.as_bytes().to_vec()),
            }),
            subresource: subresource.map(str::to_string),
        }
    }

    /// A running pod as the scheduler and kubelet leave it.
    pub fn pod() -> Vec<u8> {
        let pod = Pod {
            metadata: Some(ObjectMeta {
                name: Some("web-7d4b9c-x2x9q".into()),
                namespace: Some("default".into()),
                uid: Some("00000000-0000-0000-0000-00000000a001".into()),
                creation_timestamp: Some(time(0)),
                labels: [("app".to_string(), "web".to_string())].into(),
                managed_fields: vec![
                    entry(
                        "kube-controller-manager",
                        "v1",
                        None,
                        0,
                        r#"{"f:metadata":{"f:labels":{}}}"#,
                    ),
                    entry(
                        "kubelet",
                        "v1",
                        Some("status"),
                        5,
                        r#"{"f:status":{"f:phase":{}}}"#,
                    ),
                ],
                ..Default::default()
            }),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: Some("app".into()),
                    image: Some("nginx:1.27".into()),
                    ports: vec![ContainerPort {
                        container_port: Some(80),
                        protocol: Some("TCP".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                node_name: Some("node-1".into()),
                restart_policy: Some("Always".into()),
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: Some("Running".into()),
                pod_ip: Some("10.244.0.7".into()),
                ..Default::default()
            }),
        };
        objects::encode_object(&pod)
    }

    /// Three revisions of a Deployment: created by `kubectl apply` (t=0), image and
    /// replicas changed by `kubectl apply` (t=10), status written by
    /// kube-controller-manager through the status subresource (t=20).
    pub fn deployment_revisions() -> Vec<Vec<u8>> {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut dep = objects::deployment(&mut rng, "default", "web", 2, "nginx:1.26");
        let fix = |dep: &mut k8s_pb::api::apps::v1::Deployment, s: u64| {
            let m = dep.metadata.as_mut().expect("metadata");
            m.uid = Some("00000000-0000-0000-0000-00000000d001".into());
            m.creation_timestamp = Some(time(0));
            for e in &mut m.managed_fields {
                e.time = Some(time(s));
            }
            if let Some(st) = dep.status.as_mut() {
                for c in &mut st.conditions {
                    c.last_update_time = Some(time(s));
                    c.last_transition_time = Some(time(s));
                }
            }
        };
        // Builders stamp "now": pin every fresh time to the revision's second.
        fix(&mut dep, 0);
        let v1 = objects::encode_object(&dep);
        objects::set_deployment_image(&mut dep, "nginx:1.27");
        if let Some(s) = dep.spec.as_mut() {
            s.replicas = Some(3);
        }
        let m = dep.metadata.as_mut().expect("metadata");
        m.managed_fields[0].time = Some(time(10));
        let v2 = objects::encode_object(&dep);
        objects::set_deployment_status(&mut dep, 3, 3, 3);
        let m = dep.metadata.as_mut().expect("metadata");
        m.managed_fields[1].time = Some(time(20));
        if let Some(st) = dep.status.as_mut() {
            for c in &mut st.conditions {
                c.last_update_time = Some(time(20));
                c.last_transition_time = Some(time(20));
            }
        }
        let v3 = objects::encode_object(&dep);
        vec![v1, v2, v3]
    }

    /// A replica from a list of `(key, value)` at revision 2.. and then watch events
    /// `(second, key, value)`; each event is one revision.
    pub fn replica(list: &[(&[u8], Vec<u8>)], events: &[(u64, &[u8], Vec<u8>)]) -> Session {
        let mut r = Session::from_replica(Replica::new(ReplicaConfig::default()), "demo");
        let mut kvs: Vec<KeyValue> = list
            .iter()
            .enumerate()
            .map(|(i, (k, v))| KeyValue {
                key: Bytes::copy_from_slice(k),
                create_revision: 2 + i as i64,
                mod_revision: 2 + i as i64,
                version: 1,
                lease: 0,
                value: Bytes::from(v.clone()),
            })
            .collect();
        let mut rev = 1 + kvs.len() as i64;
        kvs.sort_by(|a, b| a.key.cmp(&b.key));
        let listed = kvs.clone();
        for obs in [
            Observation::Server {
                endpoint: "http://127.0.0.1:2379".into(),
                version: "3.4.30".into(),
                cluster_id: 0,
            },
            Observation::ListBegin { revision: rev },
            Observation::ListPage { kvs },
            Observation::ListDone {
                revision: rev,
                compacted: None,
            },
            Observation::Conn(ConnState::Watching),
        ] {
            r.apply(&Stamped { at: at(0), obs });
        }
        let mut known: Vec<KeyValue> = listed;
        for (s, k, v) in events {
            rev += 1;
            let prev = known.iter().find(|kv| kv.key.as_ref() == *k).cloned();
            let kv = KeyValue {
                key: Bytes::copy_from_slice(k),
                create_revision: prev.as_ref().map_or(rev, |p| p.create_revision),
                mod_revision: rev,
                version: prev.as_ref().map_or(1, |p| p.version + 1),
                lease: 0,
                value: Bytes::from(v.clone()),
            };
            known.retain(|x| x.key.as_ref() != *k);
            known.push(kv.clone());
            r.apply(&Stamped {
                at: at(*s),
                obs: Observation::Events {
                    revision: rev,
                    events: vec![WatchEvent {
                        kind: EventKind::Put,
                        kv,
                        prev_kv: None,
                    }],
                },
            });
        }
        r
    }

    pub fn app(r: Session, settings: Settings) -> App {
        let mut a = App::new(r, settings);
        a.tick(at(30));
        a
    }

    pub use crate::common::fixtures::WIDGET_W1 as WIDGET;
    pub use crate::common::fixtures::{
        hex, MIXED_SECRET_S1 as S1, MIXED_SECRET_S2 as S2, MIXED_SECRET_S3 as S3,
    };

    pub fn encryption_config() -> String {
        crate::common::fixtures::mixed_encryption_config(crate::common::fixtures::KEY_A)
    }

    pub fn mixed_encryption_settings() -> Settings {
        let ring = regscope::decrypt::Keyring::from_yaml(&encryption_config(), "test")
            .expect("encryption config");
        Settings {
            keyring: Some(std::sync::Arc::new(ring)),
            ..Settings::default()
        }
    }
}

use storage_fixtures as sf;

#[test]
fn pod_detail_120x48() {
    let r = sf::replica(
        &[(b"/registry/pods/default/web-7d4b9c-x2x9q", sf::pod())],
        &[],
    );
    let mut a = sf::app(r, Settings::default());
    keys(&mut a, "3\n\n");
    let text = render(&mut a, 120, 48);
    for want in [
        "resource pods",
        "kind v1 Pod",
        "resourceVersion \"2\" (= mod_revision)",
        "format protobuf",
        "schema Kubernetes 1.",
        "(api.core.v1.Pod)",
        "written by kube-controller-manager Update at 2023-11-14T22:13:20Z; kubelet",
        "apiVersion: v1",
        "kind: Pod",
        "resourceVersion: '2'",
    ] {
        assert!(text.contains(want), "{want:?} missing:\n{text}");
    }
    insta::assert_snapshot!(text);
}

#[test]
fn json_widget_detail_120x30() {
    // The Widget's JSON text with its final LF is 201 bytes (the document the fixtures come
    // from, named in tests/common/fixtures.rs, says 222).
    assert_eq!(sf::WIDGET.len(), 201);
    let r = sf::replica(
        &[
            (b"/registry/configmaps/default/c", b"{}".to_vec()),
            (
                b"/registry/example.com/widgets/default/w1",
                sf::WIDGET.as_bytes().to_vec(),
            ),
        ],
        &[(5, b"/registry/configmaps/default/c", b"{}".to_vec())],
    );
    let mut a = sf::app(r, Settings::default());
    // widgets.example.com is the second resource.
    keys(&mut a, "3j\n\n");
    let text = render(&mut a, 120, 30);
    for want in [
        "resource widgets.example.com",
        "mod_revision 3",
        "resourceVersion \"3\" (= mod_revision)",
        "size 201 bytes",
        "format json",
        "kind example.com/v1 Widget",
        "resourceVersion: '3'",
        "size: 3",
    ] {
        assert!(text.contains(want), "{want:?} missing:\n{text}");
    }
    assert!(!text.contains("! "), "no decode error: {text}");
    insta::assert_snapshot!("br02_json_widget_detail_120x30", text);
    // The same object as JSON.
    keys(&mut a, "o");
    let json = render(&mut a, 120, 30);
    assert!(json.contains("Value JSON"), "{json}");
    assert!(json.contains("\"resourceVersion\": \"3\""), "{json}");
    assert!(json.contains("\"size\": 3"), "{json}");
}

fn deployment_app() -> App {
    let key: &[u8] = b"/registry/deployments/default/web";
    let v = sf::deployment_revisions();
    let r = sf::replica(
        &[(key, v[0].clone())],
        &[(10, key, v[1].clone()), (20, key, v[2].clone())],
    );
    let mut a = sf::app(r, Settings::default());
    keys(&mut a, "3\n\n");
    a
}

#[test]
fn deployment_diff_with_managers_120x36() {
    let mut a = deployment_app();
    keys(&mut a, "d");
    let text = render(&mut a, 120, 36);
    for want in [
        "Diff 3 → 4",
        "written by kube-controller-manager Update (subresource status) at 2023-11-14T22:13:40Z",
        "+ status.availableReplicas: 3",
        "~ metadata.managedFields: +kube-controller-manager (Update, status)",
    ] {
        assert!(text.contains(want), "{want:?} missing:\n{text}");
    }
    assert!(!text.contains("resourceVersion:"), "{text}");
    insta::assert_snapshot!(text);
    // One version back: kubectl's change of image and replicas.
    keys(&mut a, "[");
    let text = render(&mut a, 120, 36);
    for want in [
        "Diff 2 → 3",
        "written by kubectl-client-side-apply Update at 2023-11-14T22:13:30Z",
        "~ spec.replicas: 2 → 3",
        "~ spec.template.spec.containers[name=web].image: \"nginx:1.26\" → \"nginx:1.27\"",
        "~ metadata.generation: 1 → 2",
    ] {
        assert!(text.contains(want), "{want:?} missing:\n{text}");
    }
    // Mark the oldest, go to the newest: the diff spans both writes.
    keys(&mut a, "[m]]");
    let text = render(&mut a, 120, 36);
    assert!(text.contains("Diff 2 → 4 (marked)"), "{text}");
    assert!(text.contains("* marked"), "{text}");
    assert!(text.contains("~ spec.replicas: 2 → 3"), "{text}");
    assert!(text.contains("+ status.availableReplicas: 3"), "{text}");
    // Back to the value.
    keys(&mut a, "d");
    let text = render(&mut a, 120, 36);
    assert!(text.contains("Value YAML"), "{text}");
}

fn mixed_secrets_replica(with_copy: bool) -> Session {
    let mut list: Vec<(&[u8], Vec<u8>)> = vec![
        (b"/registry/secrets/default/s1", sf::hex(sf::S1)),
        (b"/registry/secrets/default/s2", sf::hex(sf::S2)),
        (b"/registry/secrets/default/s3", sf::hex(sf::S3)),
        (b"/registry/configmaps/default/c", b"{}".to_vec()),
    ];
    if with_copy {
        list.push((b"/registry/secrets/default/s2-copy", sf::hex(sf::S2)));
    }
    sf::replica(&list, &[])
}

#[test]
fn encryption_summary_100x20() {
    let mut a = sf::app(
        mixed_secrets_replica(false),
        sf::mixed_encryption_settings(),
    );
    keys(&mut a, "3E");
    // Rows: configmaps, secrets, all resources.
    keys(&mut a, "j");
    let text = render(&mut a, 100, 20);
    assert!(
        text.contains("secrets: 3 values, 2 encrypted (aescbc:key1 1, aesgcm:key2 1), 1 plaintext"),
        "{text}"
    );
    insta::assert_snapshot!("br11_encryption_summary_100x20", text);
    // Enter opens the resource's keys, with their storage column.
    keys(&mut a, "\n");
    let text = render(&mut a, 100, 20);
    for want in ["s1", "aescbc:key1", "aesgcm:key2", "identity"] {
        assert!(text.contains(want), "{want:?} missing:\n{text}");
    }
    insta::assert_snapshot!("br11_secrets_key_list_100x20", text);
}

#[test]
fn secrets_decrypt_and_stay_redacted() {
    for (i, name) in ["s1", "s2", "s3"].iter().enumerate() {
        let mut a = sf::app(
            mixed_secrets_replica(false),
            sf::mixed_encryption_settings(),
        );
        // secrets is the second resource.
        keys(&mut a, &format!("3j\n{}\n", "j".repeat(i)));
        let text = render(&mut a, 100, 30);
        for want in [
            format!("name {name}"),
            "kind v1 Secret".to_string(),
            format!("name: {name}"),
            "namespace: default".into(),
        ] {
            assert!(text.contains(&want), "{name}: {want:?} missing:\n{text}");
        }
        if *name == "s2" {
            assert!(
                text.contains("format aesgcm:key2, decrypted · payload protobuf"),
                "{text}"
            );
            insta::assert_snapshot!("br11_s2_detail_100x30", text);
        }
    }
    // s1 carries data: redacted unless --show-secrets.
    let mut a = sf::app(
        mixed_secrets_replica(false),
        sf::mixed_encryption_settings(),
    );
    keys(&mut a, "3j\n\n");
    let text = render(&mut a, 100, 30);
    assert!(text.contains("format aescbc:key1, decrypted"), "{text}");
}

#[test]
fn copied_value_is_bound_to_another_key_path() {
    let mut a = sf::app(mixed_secrets_replica(true), sf::mixed_encryption_settings());
    // Keys sort s1, s2, s2-copy, s3: s2-copy is the third.
    keys(&mut a, "3j\njj\n");
    let text = render(&mut a, 100, 24);
    assert!(
        text.contains("authentication failed: ciphertext is bound to a different key path"),
        "{text}"
    );
    assert!(
        text.contains("/registry/secrets/default/s2)"),
        "names the source: {text}"
    );
    assert!(text.contains("format aesgcm:key2, not decrypted"), "{text}");
    insta::assert_snapshot!("br11_copied_value_is_bound_to_another_key_path", text);
}

/// The value pane colours keys, strings, numbers/booleans, `#` notes and redacted values
/// with their own theme roles.
#[test]
fn value_syntax_colours_follow_theme_roles() {
    use regscope::tui::{Role, Theme};
    let secret = br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","namespace":"default","generation":4},"data":{"password":"aHVudGVyMg=="},"immutable":true}"#;
    let r = sf::replica(&[(b"/registry/secrets/default/db", secret.to_vec())], &[]);
    let mut a = sf::app(r, Settings::default());
    keys(&mut a, "3\n\n");
    let mut term = Terminal::new(TestBackend::new(100, 40)).expect("terminal");
    term.draw(|f| views::draw(&a, f)).expect("draw");
    let buf = term.backend().buffer().clone();
    let theme = Theme::default();
    let row_text = |y: u16| -> String { (0..100).map(|x| buf[(x, y)].symbol()).collect() };
    // The style of the first cell of `needle` on the first row holding `line`.
    let style_at = |line: &str, needle: &str| {
        let y = (0..40)
            .find(|y| row_text(*y).contains(line))
            .unwrap_or_else(|| panic!("{line:?} not on screen"));
        let text = row_text(y);
        let col = text[..text.find(needle).expect("needle")].chars().count() as u16;
        buf[(col, y)].style()
    };
    let fg = |role: Role| theme.get(role).fg;
    assert_eq!(style_at("  password: ", "password").fg, fg(Role::SyntaxKey));
    assert_eq!(
        style_at("  password: ", "'<redacted").fg,
        fg(Role::Redacted)
    );
    assert_eq!(
        style_at("  password: ", "'<redacted").bg,
        theme.get(Role::Redacted).bg
    );
    assert_eq!(style_at("  name: db", "db").fg, fg(Role::SyntaxString));
    assert_eq!(style_at("  generation: 4", "4").fg, fg(Role::SyntaxScalar));
    assert_eq!(
        style_at("immutable: true", "true").fg,
        fg(Role::SyntaxScalar)
    );
    assert!(!(0..40).any(|y| row_text(y).contains("hunter2")));
    // `#` notes (a protobuf Secret says that its payload is redacted).
    let r = sf::replica(&[(b"/registry/secrets/default/s3", sf::hex(sf::S3))], &[]);
    let mut a = sf::app(r, Settings::default());
    keys(&mut a, "3\n\n");
    term.draw(|f| views::draw(&a, f)).expect("draw");
    let buf = term.backend().buffer().clone();
    let y = (0..40)
        .find(|y| {
            (0..100)
                .map(|x| buf[(x, *y)].symbol())
                .collect::<String>()
                .contains("# Secret")
        })
        .expect("note on screen");
    assert_eq!(buf[(1, y)].style().fg, fg(Role::SyntaxNote));
}

// ---- The apiserver panel (key 4): literal `ApiserverPanels`s with realistic numbers (a
// ---- kube-apiserver v1.34.0 on etcd 3.6.4, as in ../shared/testdata), drawn as they are.

mod apiserver_views {
    use super::at;
    use regscope::derive::apiserver::{
        ApfRow, ApiserverPanels, CompactionWindow, EtcdHealth, LatencyRow, ObjectsRow, Reading,
        Risk, WatchCacheRow, WindowRow,
    };
    use regscope::metrics::quantile::Quantile;
    use regscope::store::metrics::TargetStatus;

    const MIB: f64 = 1024.0 * 1024.0;

    pub fn target(source: &str, version: &str) -> TargetStatus {
        TargetStatus {
            configured: true,
            source: source.into(),
            version: Some(version.into()),
            good_scrapes: 14,
            last_good: Some(at(28)),
            stale_since: None,
            last_error: None,
            skipped_lines: 0,
            first_skipped: None,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn lat(
        metric: &'static str,
        op: &str,
        group: &str,
        resource: &str,
        count: f64,
        q: [Quantile; 3],
        rate: f64,
        err: Option<f64>,
        hist: &[f64],
    ) -> LatencyRow {
        LatencyRow {
            metric,
            operation: op.into(),
            group: group.into(),
            resource: resource.into(),
            count,
            p50: q[0],
            p90: q[1],
            p99: q[2],
            rate: Some(rate),
            error_rate: err,
            p99_history: hist
                .iter()
                .map(|v| if *v < 0.0 { None } else { Some(*v) })
                .collect(),
        }
    }

    const ETCD: &str = "etcd_request_duration_seconds";
    const API: &str = "apiserver_request_duration_seconds";

    fn latency() -> Vec<LatencyRow> {
        use Quantile::{AtLeast, NoData, Value};
        vec![
            lat(
                API,
                "LIST",
                "",
                "events",
                412.0,
                [Value(0.045), Value(2.4), AtLeast(60.0)],
                0.2,
                Some(0.05),
                &[0.4, 0.5, 0.4, -1.0, 1.2, 3.0, 8.0, 60.0, 60.0, 60.0],
            ),
            lat(
                ETCD,
                "listWithCount",
                "",
                "pods",
                1_830.0,
                [Value(0.0123), Value(0.048), Value(1.2)],
                2.0,
                Some(0.0),
                &[0.02, 0.03, 0.02, 0.05, 0.4, 0.9, 1.2],
            ),
            lat(
                API,
                "GET",
                "",
                "configmaps",
                9_120.0,
                [Value(0.0021), Value(0.0087), Value(0.0412)],
                6.4,
                Some(0.0),
                &[0.03, 0.04, 0.035, 0.041, 0.04, 0.039, 0.0412],
            ),
            lat(
                ETCD,
                "create",
                "",
                "events",
                3_004.0,
                [Value(0.0019), Value(0.0064), Value(0.0181)],
                3.1,
                Some(0.0),
                &[0.012, 0.015, 0.02, 0.018, 0.0181],
            ),
            lat(
                ETCD,
                "get",
                "coordination.k8s.io",
                "leases",
                45_210.0,
                [Value(0.000_85), Value(0.0021), Value(0.0048)],
                12.5,
                Some(0.0),
                &[0.004, 0.005, 0.0045, 0.0048, 0.0047, 0.005, 0.0048],
            ),
            lat(
                ETCD,
                "delete",
                "",
                "secrets",
                3.0,
                [NoData, NoData, NoData],
                0.0,
                None,
                &[-1.0, -1.0, -1.0],
            ),
        ]
    }

    fn cache(group: &str, resource: &str, cap: f64, recv: f64, span: Option<f64>) -> WatchCacheRow {
        WatchCacheRow {
            group: group.into(),
            resource: resource.into(),
            capacity: Reading::Value(cap),
            capacity_increases: Reading::Value(0.0),
            capacity_decreases: Reading::Value(0.0),
            events_received_rate: Reading::Value(recv),
            events_dispatched_rate: Reading::Value(recv * 3.0),
            terminated_watchers: Reading::Value(0.0),
            initializations: Reading::Value(1.0),
            // 3 LIST requests and 1 watch-list a minute.
            list_requests_total: Reading::Value(12.0),
            watch_lists_total: Reading::Value(4.0),
            list_requests_rate: Reading::Value(0.05),
            watch_lists_rate: Reading::Value(1.0 / 60.0),
            lists_per_minute: Some(4.0),
            replica_event_rate: Some(recv),
            history_span_seconds: span,
            wrapped: Some(true),
        }
    }

    fn watch_cache() -> Vec<WatchCacheRow> {
        let mut pods = cache("", "pods", 100.0, 12.5, Some(8.0));
        pods.capacity_increases = Reading::Value(3.0);
        pods.capacity_decreases = Reading::Value(1.0);
        pods.terminated_watchers = Reading::Value(2.0);
        pods.initializations = Reading::Value(2.0);
        vec![
            cache("", "configmaps", 100.0, 0.1, Some(1000.0)),
            cache("", "events", 800.0, 8.0, Some(100.0)),
            pods,
            cache("", "secrets", 100.0, 0.0, None),
            cache("coordination.k8s.io", "leases", 200.0, 2.4, Some(83.3)),
        ]
    }

    fn wrow(
        resource: &str,
        cache: Reading<i64>,
        inf: Option<(i64, f64)>,
        gone: u64,
        relists: u64,
        state: &str,
        risk: Risk,
    ) -> WindowRow {
        let (group, resource) = match resource.split_once('.') {
            Some((r, g)) => (g.to_string(), r.to_string()),
            None => (String::new(), resource.to_string()),
        };
        WindowRow {
            group,
            resource,
            watch_cache_lag_revisions: cache,
            informer_lag_revisions: inf.map(|i| i.0),
            informer_lag_seconds: inf.map(|i| i.1),
            events_behind: None,
            gone_410: gone,
            relists,
            informer_state: Some(state.into()),
            risk,
            risk_reason: None,
        }
    }

    fn window() -> CompactionWindow {
        use Reading::Value;
        CompactionWindow {
            head: Some(12_345),
            compact_revision: Some(11_345),
            window_revisions: Some(1_000),
            window_seconds: Some(302.0),
            regscope_lag_revisions: Some(2),
            rows: vec![
                wrow(
                    "pods",
                    Value(2),
                    Some((1_204, 61.0)),
                    2,
                    2,
                    "relisting after 410",
                    Risk::Danger,
                ),
                WindowRow {
                    // The watch cache, not etcd compaction, is what the informer is about
                    // to fall out of: the reason says so.
                    risk_reason: Some(
                        "1100 events behind, the watch cache's ring holds the newest 1000: a resume gets 410 Gone from the watch cache (etcd still has the revisions)".into(),
                    ),
                    ..wrow(
                        "events",
                        Value(3),
                        Some((812, 41.5)),
                        1,
                        1,
                        "watching",
                        Risk::Danger,
                    )
                },
                wrow(
                    "leases.coordination.k8s.io",
                    Value(1),
                    Some((4, 0.2)),
                    0,
                    0,
                    "watching",
                    Risk::Ok,
                ),
                wrow(
                    "configmaps",
                    Value(0),
                    Some((0, 0.0)),
                    0,
                    0,
                    "watching",
                    Risk::Ok,
                ),
            ],
        }
    }

    /// DB size against in use, the first variant of the case operators misread after a
    /// defrag: 100 MiB file, 72 MiB in use, 2 GiB quota.
    pub fn health() -> EtcdHealth {
        EtcdHealth {
            db_size_bytes: Some(100.0 * MIB),
            db_in_use_bytes: Some(72.0 * MIB),
            quota_bytes: Some(2048.0 * MIB),
            quota_used_percent: Some(100.0 / 2048.0 * 100.0),
            not_in_use_percent: Some(28.0),
            reclaimable_bytes: Some(28.0 * MIB),
            just_defragmented: false,
            has_leader: Some(true),
            leader_changes: Some(1.0),
            slow_watchers: Some(0.0),
            proposals_failed: Some(0.0),
            revision: Some(12_345),
            compact_revision: Some(11_345),
            apiserver_db_size_bytes: Reading::Value(100.0 * MIB),
        }
    }

    /// For checking `apiserver_storage_objects` (which can be −1 or wrong): the replica holds
    /// 12 pods, 30 secrets and 40 configmaps (82 keys).
    pub fn objects() -> Vec<ObjectsRow> {
        // The flag text as derive::apiserver words it.
        let flag = |n: u64| {
            Some(format!(
                "apiserver says 82, replica has {n}: equals the total key count (82), the \
                 pattern of the 1.34-rc regression (kubernetes#133604)"
            ))
        };
        vec![
            ObjectsRow {
                group: String::new(),
                resource: "pods".into(),
                apiserver: Reading::Value(82),
                replica: Some(12),
                flag: flag(12),
            },
            ObjectsRow {
                group: String::new(),
                resource: "secrets".into(),
                apiserver: Reading::Value(82),
                replica: Some(30),
                flag: flag(30),
            },
            ObjectsRow {
                group: String::new(),
                resource: "configmaps".into(),
                apiserver: Reading::Unavailable,
                replica: Some(40),
                flag: None,
            },
        ]
    }

    fn apf() -> Vec<ApfRow> {
        let row = |pl: &str, q: f64, e: f64, seats: f64, rej: f64, rate: f64| ApfRow {
            priority_level: pl.into(),
            in_queue: Some(q),
            executing: Some(e),
            rejected_total: Some(rej),
            rejected_rate: Some(rate),
            nominal_seats: Some(seats),
        };
        vec![
            row("workload-low", 3.0, 12.0, 245.0, 340.0, 1.5),
            row("catch-all", 0.0, 0.0, 13.0, 0.0, 0.0),
            row("exempt", 0.0, 1.0, 0.0, 0.0, 0.0),
            row("global-default", 0.0, 0.0, 49.0, 0.0, 0.0),
            row("leader-election", 0.0, 0.0, 25.0, 0.0, 0.0),
            row("node-high", 0.0, 1.0, 98.0, 0.0, 0.0),
            row("system", 0.0, 0.0, 74.0, 0.0, 0.0),
            row("workload-high", 0.0, 2.0, 98.0, 0.0, 0.0),
        ]
    }

    /// Every section populated, as from a v1.34.0 apiserver on etcd 3.6.4.
    pub fn v134() -> ApiserverPanels {
        ApiserverPanels {
            apiserver: target("https://10.0.0.1:6443/metrics", "v1.34.0"),
            etcd: target("https://127.0.0.1:2379/metrics", "3.6.4"),
            latency: latency(),
            watch_cache: watch_cache(),
            window: window(),
            etcd_health: Some(health()),
            objects: objects(),
            apf: Some(apf()),
            not_exposed: Vec::new(),
            apiserver_version: Some("v1.34.0".into()),
            controllers: Default::default(),
        }
    }

    /// v1.34 panels with the controllers' section: a 1.36 controller manager (one informer
    /// past the compaction window, one quiet, one the log cannot reach back for) and a
    /// 1.34 scheduler, which has workqueues but no informer metrics.
    pub fn with_controllers() -> ApiserverPanels {
        use regscope::derive::apiserver::{
            ComponentRow, ControllerInformerRow, ControllersPanel, InformerMetrics, WorkqueueRow,
        };
        let mut v = v134();
        let informer = |resource: &str,
                        group: &str,
                        behind: Option<u64>,
                        head_rv: i64,
                        lag: i64,
                        fifo: f64,
                        risk: Risk,
                        why: Option<&str>| ControllerInformerRow {
            component: "kube-controller-manager",
            name: "shared-informers".into(),
            group: group.into(),
            resource: resource.into(),
            resource_version: (5000 - head_rv) as f64,
            behind_head_revisions: Some(head_rv),
            events_behind: behind,
            events_behind_from: Default::default(),
            lag_revisions: Some(lag),
            lag_seconds: None,
            queued_items: Some(fifo),
            window_fraction: Some((lag as f64 / 1000.0).min(1.0)),
            risk,
            risk_reason: why.map(str::to_string),
        };
        let queue = |component: &'static str, name: &str, depth: f64, adds: f64, retries: f64| {
            WorkqueueRow {
                component,
                name: name.into(),
                depth: Some(depth),
                adds_per_second: Reading::Value(adds),
                retries_per_second: Reading::Value(retries),
                adds_total: Some(adds * 600.0),
                retries_total: Some(retries * 600.0),
                longest_running_seconds: Some(0.0),
            }
        };
        v.controllers = ControllersPanel {
            components: vec![
                ComponentRow {
                    component: "kube-controller-manager",
                    status: target("https://127.0.0.1:10257/metrics", "v1.36.0"),
                    informer_metrics: InformerMetrics::Exposed,
                },
                ComponentRow {
                    component: "kube-scheduler",
                    status: target("https://127.0.0.1:10259/metrics", "v1.34.0"),
                    informer_metrics: InformerMetrics::NotInVersion {
                        version: "v1.34.0".into(),
                    },
                },
            ],
            informers: vec![
                informer(
                    "pods",
                    "",
                    Some(380),
                    1204,
                    1204,
                    380.0,
                    Risk::Danger,
                    Some("1204 revs behind, past the 1000-rev compaction window (380 events of its resource not applied): a watch restart from there gets 410 Gone and relists"),
                ),
                ControllerInformerRow {
                    lag_revisions: None,
                    window_fraction: None,
                    ..informer("configmaps", "", None, 420, 420, 0.0, Risk::Measuring, None)
                },
                informer("deployments", "apps", Some(0), 2311, 0, 0.0, Risk::Ok, None),
            ],
            workqueues: vec![
                queue("kube-controller-manager", "replicaset", 12.0, 4.2, 0.1),
                queue("kube-controller-manager", "garbage_collector_graph_changes", 3.0, 9.5, 0.0),
                queue("kube-scheduler", "DynamicServingCertificateController", 0.0, 0.0, 0.0),
            ],
        };
        v
    }

    /// A 1.28-like apiserver: no watch-cache resource version (1.31+), so no watch-cache
    /// lag; no compaction seen yet; no etcd error counter on one row.
    pub fn v128() -> ApiserverPanels {
        let mut v = v134();
        v.apiserver.version = Some("v1.28.3".into());
        v.etcd.version = Some("3.5.9".into());
        for r in &mut v.window.rows {
            r.watch_cache_lag_revisions = Reading::NotExposed;
            r.risk = Risk::Ok;
            r.informer_lag_revisions = Some(3);
            r.informer_lag_seconds = Some(0.1);
            r.gone_410 = 0;
            r.relists = 0;
            r.informer_state = Some("watching".into());
        }
        v.window.compact_revision = None;
        v.window.window_revisions = None;
        v.window.window_seconds = None;
        for r in &mut v.watch_cache {
            r.events_dispatched_rate = Reading::NotExposed;
            // No watch-lists before 1.29: the LIST requests alone.
            r.watch_lists_total = Reading::NotExposed;
            r.watch_lists_rate = Reading::NotExposed;
            r.lists_per_minute = Some(3.0);
        }
        v.watch_cache[0].events_received_rate = Reading::Pending;
        v.watch_cache[0].history_span_seconds = None;
        if let Some(h) = v.etcd_health.as_mut() {
            h.apiserver_db_size_bytes = Reading::NotExposed;
            h.compact_revision = None;
        }
        v.not_exposed = vec![
            "watch_cache_resource_version".into(),
            "watch_lists".into(),
            // New in 1.36 and not drawn: left out of the notes.
            "watch_shards".into(),
        ];
        v.apiserver_version = Some("v1.28.3".into());
        v
    }

    /// A 1.37 apiserver: the watch cache's list metrics are hidden (deprecated ALPHA), the
    /// storage objects gauge too (deprecated STABLE in 1.34).
    pub fn v137() -> ApiserverPanels {
        let mut v = v134();
        v.apiserver.version = Some("v1.37.0".into());
        v.apiserver_version = Some("v1.37.0".into());
        v.not_exposed = vec![
            "cache_lists".into(),
            "cache_list_fetched".into(),
            "cache_list_returned".into(),
        ];
        v
    }
}

use apiserver_views as av;
use regscope::tui::Section;

fn apiserver_app(v: regscope::derive::apiserver::ApiserverPanels) -> App {
    let mut a = app();
    a.set_apiserver_panels(v);
    keys(&mut a, "4");
    a
}

fn assert_shows(text: &str, needles: &[&str]) {
    for n in needles {
        assert!(text.contains(n), "{n:?} not on screen:\n{text}");
    }
}

#[test]
fn apiserver_all_sections_120x40() {
    let mut a = apiserver_app(av::v134());
    assert_eq!(a.panel(), regscope::tui::Panel::Apiserver);
    let text = render(&mut a, 120, 40);
    assert_shows(
        &text,
        &[
            "4 Apiserver",
            // Status lines.
            "apiserver  ● ok  v1.34.0",
            "etcd       ● ok  3.6.4",
            // Latency: worst first, the +Inf bucket as a bound, sub-ms and ms values.
            "Request latency",
            "≥ 60s",
            "listWithCount",
            "850µs",
            "12.3ms",
            // Window: the verdicts and the 410s.
            "Compaction window vs lag",
            "window 1,000 revs = 5m02s",
            "✖ events: 1100 events behind, the watch cache's ring holds the",
            "✖ informer pods lags 1,204 revs of a 1,000-rev window: a reconnect",
            "410 Gone seen 3 (pods 2, events 1)",
            // Watch cache.
            "Watch cache",
            "shortest history 8.0s (pods)",
            // etcd health and objects.
            "db size 100.0 MiB",
            "4.9 % used",
            // APF against etcd errors.
            "Flow control (APF)",
            "APF rejected 1.5/s",
            "workload-low",
        ],
    );
    assert!(!text.contains("NaN"), "{text}");
    insta::assert_snapshot!(text);
}

fn click(app: &mut App, column: u16, row: u16) {
    use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    app.handle_mouse(&MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column,
        row,
        modifiers: KeyModifiers::NONE,
    });
}

/// With `--mouse`: a click on a tab switches panels, a click on a row selects it and a
/// second click opens it; the wheel moves the selection.
#[test]
fn mouse_clicks_tabs_and_rows() {
    let mut a = app();
    let text = render(&mut a, 120, 40);
    let row0 = text.lines().next().unwrap();
    let col = row0.find("2 Events").expect("tab") as u16 + 1;
    click(&mut a, col, 0);
    let events = render(&mut a, 120, 40);
    assert_eq!(a.panel(), regscope::tui::Panel::Events, "{events}");
    // The third data row of the list: find its screen row by its text.
    let lines: Vec<&str> = events.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.contains("revision") && l.contains(" op "))
        .expect("list header");
    let target = (header + 3) as u16;
    let key_text: String = lines[header + 3]
        .split(|c: char| c.is_whitespace() || c == '│')
        .find(|w| w.contains('/'))
        .unwrap_or("")
        .to_string();
    click(&mut a, 10, target);
    render(&mut a, 120, 40);
    click(&mut a, 10, target);
    let opened = render(&mut a, 120, 40);
    assert!(
        opened.contains("create_revision"),
        "a second click opens the row: {opened}"
    );
    assert!(
        key_text.is_empty() || opened.contains(key_text.trim_start_matches('…')),
        "{key_text}\n{opened}"
    );
    // The wheel scrolls; a click outside any list does nothing.
    keys(&mut a, "\x1b");
    render(&mut a, 120, 40);
    let before = a.panel();
    use crossterm::event::{MouseEvent, MouseEventKind};
    a.handle_mouse(&MouseEvent {
        kind: MouseEventKind::ScrollDown,
        column: 10,
        row: 10,
        modifiers: KeyModifiers::NONE,
    });
    click(&mut a, 119, 39);
    render(&mut a, 120, 40);
    assert_eq!(a.panel(), before);
}

/// `/` filters the rows of every apiserver section; esc clears it.
#[test]
fn apiserver_filter_keeps_matching_rows_in_every_section() {
    let mut a = apiserver_app(av::v134());
    let all = render(&mut a, 120, 40);
    keys(&mut a, "/pods\n");
    let text = render(&mut a, 120, 40);
    assert_shows(
        &text,
        &["filter \"pods\"", "Request latency", "Watch cache"],
    );
    // Rows that do not mention pods are gone, rows that do stay.
    assert!(
        all.contains("workload-low") && !text.contains("workload-low"),
        "{text}"
    );
    assert!(
        text.contains("✖ informer pods lags") || text.contains("pods"),
        "{text}"
    );
    // `/` edits the filter in place (as in Events and Keys): clear it first.
    keys(&mut a, "\x1b/zzz-nothing\n");
    let none = render(&mut a, 120, 40);
    assert!(none.contains("no row matches \"zzz-nothing\""), "{none}");
    keys(&mut a, "\x1b");
    let back = render(&mut a, 120, 40);
    assert!(!back.contains("filter \""), "esc clears the filter: {back}");
    insta::assert_snapshot!(text);
}

#[test]
fn apiserver_80x24_shows_one_section_with_a_strip() {
    let mut a = apiserver_app(av::v134());
    let text = render(&mut a, 80, 24);
    assert_shows(
        &text,
        &[
            " Latency ",
            " Window !",
            " Watch cache ",
            " etcd !",
            " APF !",
            "Request latency",
            "≥ 60s",
        ],
    );
    assert!(!text.contains("Compaction window vs lag"), "{text}");
    insta::assert_snapshot!(text);
    // Focus moves with l / h and wraps; the strip follows.
    keys(&mut a, "l");
    assert_eq!(a.apiserver_focus(), (Section::Window, false));
    let text = render(&mut a, 80, 24);
    assert_shows(
        &text,
        &[
            "Compaction window vs lag",
            "✖ informer pods lags 1,204 revs of a 1,000-rev window: a reconnect gets 410",
        ],
    );
    insta::assert_snapshot!("apiserver_80x24_window", text);
    keys(&mut a, "hh");
    assert_eq!(a.apiserver_focus(), (Section::Apf, false));
}

#[test]
fn apiserver_zoomed_latency_120x40_has_every_column() {
    let mut a = apiserver_app(av::v134());
    keys(&mut a, "z");
    assert_eq!(a.apiserver_focus(), (Section::Latency, true));
    let text = render(&mut a, 120, 40);
    assert_shows(
        &text,
        &[
            "zoomed",
            "p50",
            "p90",
            "p99",
            "req/s",
            "err/s",
            "count",
            "p99 trend",
            "45.0ms",
            "2.4s",
            "45,210",
            "▁▁▁ ▁▁▂███",
        ],
    );
    assert!(!text.contains("Compaction window vs lag"), "{text}");
    insta::assert_snapshot!(text);
    // esc leaves the zoom.
    keys(&mut a, "\x1b");
    assert_eq!(a.apiserver_focus(), (Section::Latency, false));
}

#[test]
fn apiserver_zoomed_sections_120x40() {
    for (moves, name, needles) in [
        (
            "lz",
            "apiserver_zoomed_window_120x40",
            &[
                "✖ events: 1100 events behind, the watch cache's ring holds the newest 1000: a resume gets 410 Gone from the watch",
                "✖ informer pods lags 1,204 revs of a 1,000-rev window: a reconnect gets 410 Gone and relists",
                "cache lag",
                "informer state",
                "relisting after 410",
                "regscope's etcd watch lags 2 revs",
                "warn: lag past half the compaction window",
            ][..],
        ),
        (
            "llz",
            "apiserver_zoomed_watch_cache_120x40",
            &["capacity", "history", "16m40s", "idle", "+3/−1", "83s"][..],
        ),
        (
            "lllz",
            "apiserver_zoomed_etcd_120x40",
            &[
                "leader ✓",
                "leader changes 1",
                "apiserver sees 100.0 MiB",
                "2 of 3 object counts disagree with the replica",
            ][..],
        ),
        (
            "hz",
            "apiserver_zoomed_apf_120x40",
            &[
                "etcd request errors 0.0/s",
                "→ failures come from flow control (APF), not from etcd",
                "leader-election",
                "245",
                "340",
            ][..],
        ),
    ] {
        let mut a = apiserver_app(av::v134());
        keys(&mut a, moves);
        let text = render(&mut a, 120, 40);
        assert_shows(&text, needles);
        insta::assert_snapshot!(name, text);
    }
}

/// The controllers' informers and workqueues: a fourth row in the full layout, zoomed with
/// every column, and in the strip (with its mark) on a small terminal.
#[test]
fn apiserver_controllers_informer_lag() {
    let mut a = apiserver_app(av::with_controllers());
    let text = render(&mut a, 120, 48);
    assert_shows(
        &text,
        &[
            "Controllers' informers & workqueues",
            "shared-informers",
            "HIGH",
        ],
    );
    insta::assert_snapshot!("apiserver_controllers_120x48", text);
    keys(&mut a, "hz");
    assert_eq!(a.apiserver_focus(), (Section::Controllers, true));
    let text = render(&mut a, 120, 40);
    assert_shows(
        &text,
        &[
            "kube-controller-manager v1.36.0: informer and workqueue metrics",
            "kube-scheduler v1.34.0: no informer metrics (client-go informer metrics came in Kubernetes 1.36); workqueues only",
            "kube-controller-manager informer shared-informers pods: 1204 revs behind, past the 1000-rev compaction window (380",
            "behind",
            "head−rv",
            "fifo",
            "1,204",
            "380",
            "workqueue",
            "retries/s",
            "replicaset",
            "garbage_collector_graph_changes",
        ],
    );
    insta::assert_snapshot!("apiserver_zoomed_controllers_120x40", text);
    // The filter keeps the workqueue table's headings with a queue row it keeps, and
    // drops them with the queues.
    keys(&mut a, "/replicaset\n");
    let text = render(&mut a, 120, 40);
    assert_shows(
        &text,
        &["filter \"replicaset\" 1/6", "retries/s", "replicaset"],
    );
    assert!(!text.contains("kcm       shared-informers"), "{text}");
    keys(&mut a, "\x1b/configmaps\n");
    let text = render(&mut a, 120, 40);
    assert_shows(&text, &["filter \"configmaps\" 1/6", "configmaps"]);
    assert!(!text.contains("retries/s"), "{text}");
    keys(&mut a, "\x1b");
    keys(&mut a, "\x1b");
    let text = render(&mut a, 80, 24);
    assert_shows(&text, &[" Controllers !"]);
    // Without a controller component the section is neither drawn nor in the strip.
    let mut b = apiserver_app(av::v134());
    let text = render(&mut b, 80, 24);
    assert!(!text.contains("Controllers"), "{text}");
}

/// DB size and in use, often misread after a defrag: quota use from the file size, what a
/// defrag gives back, 0 % after a defrag is normal, a total of 0 is n/a.
#[test]
fn apiserver_db_size_quota_and_defrag() {
    const MIB: f64 = 1024.0 * 1024.0;
    let mut v = av::v134();
    v.objects.clear();
    let base = av::health();
    let mut defragged = base.clone();
    defragged.db_size_bytes = Some(72.0 * MIB);
    defragged.quota_used_percent = Some(72.0 / 2048.0 * 100.0);
    defragged.not_in_use_percent = Some(0.0);
    defragged.reclaimable_bytes = Some(0.0);
    defragged.just_defragmented = true;
    defragged.apiserver_db_size_bytes = regscope::derive::apiserver::Reading::Value(72.0 * MIB);
    let mut zero = base.clone();
    zero.db_size_bytes = Some(0.0);
    zero.quota_used_percent = Some(0.0);
    zero.not_in_use_percent = None;
    zero.reclaimable_bytes = None;
    for (h, name, needles, absent) in [
        (
            base,
            "apiserver_br10_defrag_reclaims_28mib",
            &[
                "db size 100.0 MiB",
                "quota 2.0 GiB, 4.9 % used",
                "in use 72.0 MiB",
                "not in use 28 %",
                "28.0 MiB reclaimable by defrag",
            ][..],
            &["nothing to reclaim"][..],
        ),
        (
            defragged,
            "apiserver_br10_after_defrag",
            &[
                "db size 72.0 MiB",
                "3.5 % used",
                "0 % not in use — nothing to reclaim",
            ][..],
            &["reclaimable"][..],
        ),
        (
            zero,
            "apiserver_br10_total_zero",
            &["db size 0 B", "not in use n/a"][..],
            &["NaN", "inf", "reclaimable"][..],
        ),
    ] {
        v.etcd_health = Some(h);
        let mut a = apiserver_app(v.clone());
        keys(&mut a, "lllz");
        let text = render(&mut a, 100, 24);
        assert_shows(&text, needles);
        for n in absent {
            assert!(!text.contains(n), "{n:?} on screen:\n{text}");
        }
        insta::assert_snapshot!(name, text);
    }
}

/// `apiserver_storage_objects` can be −1 or wrong: −1 is "count unavailable", an apiserver
/// count equal to the total key count is flagged, and the replica's counts stand beside the
/// metric.
#[test]
fn apiserver_object_counts_against_the_replica() {
    let mut a = apiserver_app(av::v134());
    keys(&mut a, "lllz");
    let text = render(&mut a, 100, 30);
    assert_shows(
        &text,
        &[
            "count unavailable (apiserver reported −1)",
            "≠ apiserver says 82, replica has 12: equals the total key count (82), the pattern",
            "≠ apiserver says 82, replica has 30: equals the total key count (82), the pattern",
            "regression (kubernetes#133604)",
            "2 of 3 object counts disagree with the replica",
        ],
    );
    let row = |name: &str| {
        text.lines()
            .find(|l| l.contains(name) && !l.contains("apiserver says"))
            .unwrap_or_else(|| panic!("no {name} row:\n{text}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(row("≠ pods").contains("≠ pods 82 12"), "{}", row("≠ pods"));
    assert!(
        row("≠ secrets").contains("≠ secrets 82 30"),
        "{}",
        row("≠ secrets")
    );
    assert!(
        row("configmaps").contains("configmaps n/a 40"),
        "{}",
        row("configmaps")
    );
    assert!(!text.contains("-1 ") && !text.contains("−1 4"), "{text}");
    insta::assert_snapshot!("apiserver_br09_object_counts_against_the_replica", text);
}

/// Metric names and labels change between Kubernetes releases: what a version does not expose
/// says so (1.28: no watch-cache lag), no compaction yet reads as such, and a rate that needs a
/// second scrape is not a 0.
#[test]
fn apiserver_not_exposed_readings_v128() {
    let mut a = apiserver_app(av::v128());
    keys(&mut a, "lz");
    let text = render(&mut a, 120, 30);
    assert_shows(
        &text,
        &[
            "v1.28.3",
            "no compaction yet: the window is all history",
            "watch-cache lag: not exposed by this version",
            "✓ every watcher is well inside the window",
        ],
    );
    assert!(!text.contains("cache lag "), "column left out:\n{text}");
    insta::assert_snapshot!(text);
    keys(&mut a, "lz");
    let text = render(&mut a, 120, 30);
    assert_shows(
        &text,
        &[
            "events dispatched: not exposed by this version",
            "…: rate needs a second scrape",
        ],
    );
    assert!(!text.contains("sent/s"), "{text}");
    assert!(!text.contains("apiserver_watch_shards_total"), "{text}");
    insta::assert_snapshot!("apiserver_not_exposed_watch_cache_v128", text);
    keys(&mut a, "lz");
    let text = render(&mut a, 120, 30);
    assert_shows(
        &text,
        &[
            "never compacted",
            "apiserver's db size: not exposed by this version",
        ],
    );
}

/// A metric Kubernetes hides on deprecation is named with the version it is missing in and
/// what replaces it, in the section where its data would be read; the lists column says
/// LIST requests and watch-lists apart.
#[test]
fn apiserver_hidden_metrics_name_their_replacement_v137() {
    let mut a = apiserver_app(av::v137());
    keys(&mut a, "lz");
    render(&mut a, 120, 30);
    keys(&mut a, "lz");
    let text = render(&mut a, 120, 30);
    assert_shows(
        &text,
        &[
            "apiserver_cache_list_total: not exposed by v1.37.0 (removed in 1.37;",
            "apiserver_storage_list_total)",
            "lists/min",
            "4.0 (3.0+1.0)",
            "(15.0 LIST + 5.0 watch-list)",
        ],
    );
}

#[test]
fn apiserver_stale_targets_and_skipped_lines() {
    let mut v = av::v134();
    v.apiserver.stale_since = Some(at(20));
    v.apiserver.last_error = Some("GET https://10.0.0.1:6443/metrics: timed out after 5s".into());
    v.etcd.skipped_lines = 3;
    v.etcd.first_skipped = Some("line 17: unexpected character '<' (body is HTML?)".into());
    let mut a = apiserver_app(v);
    let text = render(&mut a, 120, 40);
    assert_shows(
        &text,
        &[
            "⚠ stale since 22:13:40 (GET https://10.0.0.1:6443/metrics: timed out after 5s)",
            "3 lines skipped: first line 17: unexpected character '<'",
            "STALE Request latency",
            "STALE Flow control (APF)",
        ],
    );
    assert!(
        !text.contains("STALE etcd health"),
        "etcd is current:\n{text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn apiserver_not_configured_120x40() {
    let mut a = apiserver_app(Default::default());
    let text = render(&mut a, 120, 40);
    assert_shows(
        &text,
        &[
            "apiserver  not configured — use --kubeconfig / --apiserver-metrics-url / --apiserver-metrics-file",
            "etcd       not configured",
            "apiserver metrics not configured (see above)",
            "etcd metrics not configured (see above)",
            "compaction window not known yet",
        ],
    );
    insta::assert_snapshot!(text);
}

#[test]
fn apiserver_scrolls_the_focused_section() {
    let mut v = av::v134();
    v.watch_cache = (0..40)
        .map(|i| {
            let mut r = v.watch_cache[0].clone();
            r.resource = format!("widgets{i:02}");
            r
        })
        .collect();
    let mut a = apiserver_app(v);
    keys(&mut a, "ll");
    let text = render(&mut a, 120, 40);
    assert_shows(&text, &["rows 1–", "widgets00"]);
    keys(&mut a, "jjj");
    let text = render(&mut a, 120, 40);
    assert_shows(&text, &["rows 4–", "widgets03"]);
    assert!(!text.contains("widgets02"), "{text}");
    keys(&mut a, "G");
    let text = render(&mut a, 120, 40);
    assert_shows(&text, &["of 40", "widgets39"]);
    keys(&mut a, "g");
    let text = render(&mut a, 120, 40);
    assert_shows(&text, &["rows 1–", "widgets00"]);
}

#[test]
fn apiserver_set_view_marks_dirty() {
    let mut a = app();
    a.mark_drawn();
    assert!(!a.needs_draw());
    a.set_apiserver_panels(av::v134());
    assert!(a.needs_draw());
    assert_eq!(a.apiserver_panels().latency.len(), 6);
}

/// Tiny terminals (and zero-sized ones) draw without panicking, in every focus and zoom.
#[test]
fn apiserver_tiny_terminals_do_not_panic() {
    for (w, h) in [
        (20, 5),
        (1, 1),
        (2, 3),
        (10, 4),
        (30, 6),
        (40, 8),
        (60, 12),
        (99, 33),
        (100, 33),
        (0, 0),
        (120, 0),
        (0, 40),
    ] {
        for moves in ["", "l", "ll", "lll", "h", "z", "lz", "llz", "lllz", "hz"] {
            for v in [av::v134(), av::v128(), Default::default()] {
                let mut a = apiserver_app(v);
                keys(&mut a, moves);
                let text = render(&mut a, w, h);
                assert_eq!(text.lines().count(), h as usize);
                keys(&mut a, "jjG");
                render(&mut a, w, h);
            }
        }
    }
    let mut a = apiserver_app(av::v134());
    insta::assert_snapshot!(render(&mut a, 20, 5));
}

/// Every apiserver-panel key is in help, from the keymap.
#[test]
fn help_lists_the_apiserver_keys() {
    let mut a = apiserver_app(av::v134());
    keys(&mut a, "?G");
    let text = render(&mut a, 160, 48);
    assert_shows(
        &text,
        &[
            "[apiserver] apiserver panel",
            "→, l             next_section",
            "←, h             prev_section",
            "enter, z         zoom_section",
            "esc              back",
        ],
    );
}

/// The replay's timeline row, paused with a marker and damage, and playing at 100×; the
/// hint bar leads with the timeline's keys. Live pause shows what is queued.
#[test]
fn replay_timeline_120x30() {
    use regscope::tui::{ReplayStatus, Speed};
    let mut a = app();
    a.set_replay(Some(ReplayStatus {
        file: "incident.rgs".into(),
        start: at(0),
        end: at(60),
        total: 6_284,
        position: 3_100,
        speed: Speed::Times(1),
        secrets_shown: false,
        damage: String::new(),
        marker: Some("compaction at revision 110 (compact_rev_key) at 22:13:40".into()),
        markers: None,
        revisions: None,
    }));
    keys(&mut a, " ");
    assert!(a.paused());
    let paused = render(&mut a, 120, 30);
    assert!(paused.contains("REPLAY"), "{paused}");
    assert!(paused.contains("3,100/6,284"), "{paused}");
    assert!(paused.contains("◆ compaction at revision 110"), "{paused}");
    insta::assert_snapshot!("replay_timeline_paused_120x30", paused);
    keys(&mut a, "+++++ ");
    let mut r = a.cursor().replay.clone().unwrap();
    assert_eq!(r.speed, Speed::Times(1000), "five steps up from 1×");
    r.speed = Speed::Times(100);
    r.marker = None;
    r.secrets_shown = true;
    r.damage = "42 bytes at offset 1000 lost".into();
    a.set_replay(Some(r));
    assert!(!a.paused());
    let playing = render(&mut a, 160, 30);
    assert!(playing.contains("▶ 100×"), "{playing}");
    assert!(
        playing.contains("Secret data in this recording"),
        "{playing}"
    );
    assert!(
        playing.contains("42 bytes at offset 1000 lost"),
        "{playing}"
    );
    insta::assert_snapshot!("replay_timeline_playing_160x30", playing);
    // Tiny terminals never panic with the timeline shown.
    for (w, h) in [(0, 0), (1, 1), (20, 5), (40, 10)] {
        let _ = render(&mut a, w, h);
    }
}

/// The replay timeline with the recording's markers as ticks, each in its kind's colour
/// (the most severe of a column; the cursor keeps its own), and the bookmark prompt `b`
/// opens in the hint bar.
#[test]
fn replay_timeline_ticks_by_kind_120x12() {
    use regscope::record::{Marker, MarkerKind};
    use regscope::tui::{ReplayStatus, Speed};
    let mark = |secs: u64, kind: MarkerKind, label: &str| Marker {
        position: secs * 100,
        at: at(secs),
        kind,
        revision: 100 + secs as i64,
        label: label.into(),
    };
    let mut a = app();
    let status = ReplayStatus {
        file: "incident.rgs".into(),
        start: at(0),
        end: at(60),
        total: 6_000,
        position: 3_000,
        speed: Speed::Times(1),
        secrets_shown: false,
        damage: String::new(),
        marker: None,
        markers: None,
        revisions: None,
    };
    a.set_replay(Some(status.clone()));
    keys(&mut a, " ");
    let plain = render(&mut a, 120, 12);
    assert!(
        !plain.contains('┃'),
        "no ticks before the markers are read\n{plain}"
    );
    let markers = vec![
        mark(
            5,
            MarkerKind::Compaction,
            "compaction at revision 90 (compact_rev_key)",
        ),
        mark(
            12,
            MarkerKind::ConnectionLost,
            "connection lost: broken pipe",
        ),
        mark(14, MarkerKind::ConnectionRestored, "connection restored"),
        // One column: the gap shows over the compaction.
        mark(
            20,
            MarkerKind::Compaction,
            "compaction at revision 120 (compact_rev_key)",
        ),
        mark(
            20,
            MarkerKind::Gap,
            "relist at revision 130 after compaction at 120 (gap)",
        ),
        // The cursor's column: the cursor shows.
        mark(
            30,
            MarkerKind::Threshold,
            "etcd p99 over 1s: update pods 1.2s",
        ),
        mark(40, MarkerKind::Bookmark, "bookmark: outage starts here"),
        mark(50, MarkerKind::ScrapeFailed, "etcd scrape failed: refused"),
    ];
    a.set_replay(Some(ReplayStatus {
        markers: Some(std::sync::Arc::new(markers)),
        ..status
    }));
    let ticks = render_styles(&mut a, 120, 12);
    let row = ticks
        .lines()
        .find(|l| l.contains('⏸'))
        .unwrap_or_else(|| panic!("the timeline row\n{ticks}"));
    assert_eq!(row.matches('┃').count(), 6, "{ticks}");
    insta::assert_snapshot!("replay_timeline_ticks_by_kind_120x12", ticks);
    keys(&mut a, "boutage starts here");
    let prompt = render(&mut a, 120, 12);
    assert!(
        prompt.contains("bookmark (Enter saves, Esc cancels): outage starts here"),
        "{prompt}"
    );
    keys(&mut a, "\n");
    let reqs = a.take_requests();
    let [regscope::tui::Request::Bookmark(b)] = reqs.as_slice() else {
        panic!("one bookmark request: {reqs:?}");
    };
    assert_eq!(b.text, "outage starts here");
    assert_eq!(b.at, at(30), "the cursor's time");
    // Esc cancels.
    keys(&mut a, "bnot this\x1b");
    assert!(a.take_requests().is_empty());
    // Enter on nothing typed (or only spaces) saves nothing and says so.
    for typed in ["b\n", "b   \n"] {
        keys(&mut a, typed);
        assert_eq!(
            a.take_requests(),
            [regscope::tui::Request::Notice(
                "empty bookmark not saved".into()
            )],
            "{typed:?}"
        );
    }
    assert!(!render(&mut a, 120, 12).contains("bookmark (Enter"));
}

/// A value as kube-apiserver stores a JSON object whose newest managedFields entry is
/// (`manager`, `operation`, `subresource`).
fn managed_value(name: &str, manager: &str, operation: &str, subresource: &str, n: u64) -> Bytes {
    Bytes::from(
        serde_json::to_vec(&serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "managedFields": [
                {"manager": manager, "operation": operation, "subresource": subresource,
                 "time": format!("2024-01-02T00:00:{:02}Z", n % 60)}]},
            "data": {"n": n.to_string()}
        }))
        .unwrap(),
    )
}

/// A replica that listed an empty prefix at revision 1 (second 0) and watches.
fn watching_empty_replica() -> Session {
    let mut r = Session::from_replica(Replica::new(ReplicaConfig::default()), "demo");
    for obs in [
        Observation::ListBegin { revision: 1 },
        Observation::ListPage { kvs: vec![] },
        Observation::ListDone {
            revision: 1,
            compacted: None,
        },
        Observation::Conn(ConnState::Watching),
    ] {
        r.apply(&Stamped { at: at(0), obs });
    }
    r
}

/// A session younger than the rate windows: Growth's resources (10 s) and writers (60 s)
/// both name the seconds seen so far, and their rates are over those seconds.
#[test]
fn young_session_rates_name_the_seconds_seen() {
    let mut r = watching_empty_replica();
    let apply = |r: &mut Session, s: u64, obs: Observation| {
        r.apply(&Stamped { at: at(s), obs });
    };
    for s in 1..=6u64 {
        let rev = s as i64 + 1;
        let events = vec![WatchEvent {
            kind: EventKind::Put,
            kv: KeyValue {
                key: Bytes::from("/registry/configmaps/default/cm"),
                create_revision: 2,
                mod_revision: rev,
                version: s as i64,
                lease: 0,
                value: managed_value("cm", "kubectl", "Update", "", s),
            },
            prev_kv: None,
        }];
        apply(
            &mut r,
            s,
            Observation::Events {
                revision: rev,
                events,
            },
        );
    }
    let mut a = App::new(titled(r, "young"), Settings::default());
    a.tick(at(7));
    let text = render(&mut a, 160, 48);
    assert_shows(
        &text,
        &[
            "Top resources by writes (7 s rates; 1 resource)",
            "Writers by managedFields (7 s rates; 1 writer)",
        ],
    );
    // Six puts over the seven seconds seen, the list's second 0 included (not over the ten
    // of the window).
    let row = text
        .lines()
        .find(|l| l.contains("│configmaps"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains(" 0.9 "), "{row:?}");
}

/// Who writes, on Growth (the writers table, each resource's top writer) and under the
/// selected resource in Keys, narrow and wide; and the writer column of Events.
#[test]
fn writers_on_growth_keys_and_events() {
    let mut r = watching_empty_replica();
    let apply = |r: &mut Session, s: u64, obs: Observation| {
        r.apply(&Stamped { at: at(s), obs });
    };
    let mut rev = 1;
    let writers = [
        ("pods", "kubelet", "Update", "status", 3),
        ("pods", "kube-scheduler", "Update", "", 1),
        ("deployments", "argocd-controller", "Apply", "", 1),
        ("configmaps", "kubectl-client-side-apply", "Update", "", 1),
    ];
    for s in 1..=40u64 {
        for (res, m, op, sub, per_s) in writers {
            for i in 0..per_s {
                rev += 1;
                let name = format!("{m}-{}", (s + i) % 4);
                let key = format!("/registry/{res}/default/{name}");
                let delete = res == "pods" && m == "kube-scheduler" && s % 5 == 0;
                let value = managed_value(&name, m, op, sub, s);
                apply(
                    &mut r,
                    s,
                    Observation::Events {
                        revision: rev,
                        events: vec![WatchEvent {
                            kind: if delete {
                                EventKind::Delete
                            } else {
                                EventKind::Put
                            },
                            kv: KeyValue {
                                key: Bytes::from(key),
                                create_revision: if delete { 0 } else { 2 },
                                mod_revision: rev,
                                version: if delete { 0 } else { 1 },
                                lease: 0,
                                value: if delete { Bytes::new() } else { value },
                            },
                            prev_kv: None,
                        }],
                    },
                );
            }
        }
    }
    let mut a = App::new(titled(r, "writers"), Settings::default());
    a.tick(at(41));
    insta::assert_snapshot!("writers_growth_160x48", render(&mut a, 160, 48));
    keys(&mut a, "3");
    insta::assert_snapshot!("writers_keys_160x48", render(&mut a, 160, 48));
    insta::assert_snapshot!("writers_keys_80x24", render(&mut a, 80, 24));
    keys(&mut a, "2");
    insta::assert_snapshot!("writers_events_180x24", render(&mut a, 180, 24));
}

/// The command palette open with a few letters typed: fuzzy matches, best first.
#[test]
fn command_palette_120x30() {
    let mut a = app();
    keys(&mut a, ":pod");
    insta::assert_snapshot!("command_palette_pod_120x30", render(&mut a, 120, 30));
    // Enter runs the best match: the pods resource in Keys.
    keys(&mut a, "\n");
    assert_eq!(a.panel(), regscope::tui::Panel::Keys);
    let screen = render(&mut a, 120, 30);
    assert!(screen.contains("/registry/pods/"), "{screen}");
}

/// The palette's list moves with the arrows whatever the keymap binds; Enter on an empty
/// palette closes it (it never runs the first action blindly), and quit is listed last.
#[test]
fn command_palette_arrows_choose_and_an_empty_enter_runs_nothing() {
    let mut a = app();
    keys(&mut a, ":\n");
    assert!(!a.should_quit());
    assert_eq!(a.panel(), regscope::tui::Panel::Growth);
    let screen = render(&mut a, 120, 30);
    assert!(!screen.contains("Command palette"), "closed:\n{screen}");
    // Down twice, up once: the second action (next panel) runs.
    keys(&mut a, ":");
    for code in [KeyCode::Down, KeyCode::Down, KeyCode::Up] {
        a.handle_key(&KeyEvent::new(code, KeyModifiers::NONE));
    }
    let screen = render(&mut a, 120, 30);
    assert!(screen.contains("Command palette"), "{screen}");
    keys(&mut a, "\n");
    assert_eq!(a.panel(), regscope::tui::Panel::Events);
    assert!(!a.should_quit());
}

/// kube-apiserver's other etcd clusters (`--etcd-servers-overrides`) on the Growth screen:
/// one up with its own revisions, keys and write rates, one down with the alert row
/// naming it; at 120 columns (beside the tables), 80 (under them) and 80x24 (no room: the
/// alert row still names the one that is down).
#[test]
fn other_etcd_clusters_on_growth() {
    use regscope::model::{OtherClusterObs, OtherClusterWhat};
    let mut a = app();
    let other = |resources: &str, what: OtherClusterWhat| {
        Observation::OtherCluster(OtherClusterObs {
            resources: resources.into(),
            what,
        })
    };
    let mut obs = vec![Stamped {
        at: at(0),
        obs: other(
            "/events",
            OtherClusterWhat::Up {
                endpoint: "https://10.0.0.5:2379".into(),
                version: "3.5.12".into(),
                cluster_id: 42,
                revision: 500_000,
                db_size: 64 << 20,
                keys: 12_000,
            },
        ),
    }];
    for s in 1..=30 {
        obs.push(Stamped {
            at: at(s),
            obs: other(
                "/events",
                OtherClusterWhat::Writes {
                    revision: 500_000 + 12 * s as i64,
                    puts: 12,
                    creates: 8,
                    deletes: 4,
                    bytes: 12 * 900,
                },
            ),
        });
    }
    obs.push(Stamped {
        at: at(20),
        obs: other(
            "coordination.k8s.io/leases",
            OtherClusterWhat::Down {
                error: "https://10.0.0.6:2379: connection refused".into(),
            },
        ),
    });
    a.ingest_all(&obs);
    a.tick(at(30));
    let wide = render(&mut a, 120, 30);
    assert_shows(
        &wide,
        &[
            "Other etcd clusters",
            "events up · etcd 3.5.12 · 10.0.0.5:2379",
            "rev 500,360 (12.0/s)  keys 12,120  db 64.0 MiB",
            "put/s 12.0  del/s 4.0",
            "leases.coordination.k8s.io DOWN since",
            "⚠ etcd for leases.coordination.k8s.io unreachable since",
        ],
    );
    insta::assert_snapshot!("other_etcd_clusters_growth_120x30", wide);
    let narrow = render(&mut a, 80, 40);
    assert_shows(&narrow, &["Other etcd clusters", "events up", "put/s 12.0"]);
    insta::assert_snapshot!("other_etcd_clusters_growth_80x40", narrow);
    let small = render(&mut a, 80, 24);
    assert!(!small.contains("Other etcd clusters"), "{small}");
    assert_shows(
        &small,
        &["⚠ etcd for leases.coordination.k8s.io unreachable"],
    );
}

/// kube-apiserver's watch-cache flags beside the capacities: each resource's own
/// `--watch-cache-sizes` entry, and what the flags turn off.
#[test]
fn watch_cache_flags_beside_the_capacities() {
    let mut a = apiserver_app(av::v134());
    a.ingest_all(&[Stamped {
        at: at(30),
        obs: Observation::ApiserverFlags(regscope::model::ApiserverFlags {
            file: "/etc/kubernetes/manifests/kube-apiserver.yaml".into(),
            flags: vec![
                ("--default-watch-cache-size".into(), "100".into()),
                ("--watch-cache-sizes".into(), "pods#1000,secrets#0".into()),
            ],
        }),
    }]);
    keys(&mut a, "llz");
    let text = render(&mut a, 120, 40);
    assert_shows(
        &text,
        &[
            "flag",
            "#1000",
            "default",
            "configured (kube-apiserver.yaml): on by default (--default-watch-cache-size=100); off for secrets; on for pods",
            // The captured apiserver has a secrets cache: the flags read now disagree.
            "secrets cached although the manifest's flags turn that off",
        ],
    );
    insta::assert_snapshot!("watch_cache_flags_120x40", text);
}

/// Below 40x12 (the smallest layout every panel has) the screen says so instead of drawing
/// cut panels; at 40x12 the panels come back.
#[test]
fn a_terminal_below_40x12_says_it_is_too_small() {
    let mut a = app();
    let text = render(&mut a, 30, 8);
    assert!(text.contains("terminal too small: 30x8"), "{text}");
    assert!(text.contains("press q to quit"), "{text}");
    insta::assert_snapshot!("terminal_too_small_30x8", text);
    let text = render(&mut a, 39, 24);
    assert!(text.contains("terminal too small: 39x24"), "{text}");
    let text = render(&mut a, 40, 12);
    assert!(!text.contains("too small"), "{text}");
    assert!(text.contains("Growth"), "{text}");
}

/// A session as `regscope replay DB` builds it from etcd's db file: the file as the
/// source, its finished compaction at 110, the keys alive then as a list, and revisions
/// 111 to `upto` as watch responses, every observation stamped with the file's
/// modification time (`at(0)`), as `cli/db_file.rs` `to_recording` writes them.
fn db_file_session(upto: i64) -> Session {
    use regscope::model::CompactionSource;
    let info = regscope::model::SessionInfo {
        title: "file snap.db".into(),
        prefix: "/registry".into(),
        ..Default::default()
    };
    let mut s = Session::new(info);
    let mut obs = vec![
        Observation::Server {
            endpoint: "file snap.db".into(),
            version: "3.4.0".into(),
            cluster_id: 0,
        },
        Observation::Conn(ConnState::File),
        Observation::Compacted {
            revision: 110,
            source: CompactionSource::DbFile,
        },
        Observation::ListBegin { revision: 110 },
        Observation::ListPage {
            kvs: (0..5)
                .map(|i| {
                    kv(
                        format!("/registry/configmaps/default/cm{i}").as_bytes(),
                        100 + i,
                        100 + i,
                        1,
                        0,
                        1,
                    )
                })
                .collect(),
        },
        Observation::ListDone {
            revision: 110,
            compacted: None,
        },
    ];
    for rev in 111..=upto {
        obs.push(Observation::Events {
            revision: rev,
            events: vec![WatchEvent {
                kind: EventKind::Put,
                kv: kv(
                    format!("/registry/pods/default/p{rev}").as_bytes(),
                    rev,
                    rev,
                    1,
                    0,
                    1,
                ),
                prev_kv: None,
            }],
        });
    }
    for obs in obs {
        s.apply(&Stamped { at: at(0), obs });
    }
    s
}

/// The replay over etcd's db file: its timeline runs over revisions (the cursor's revision
/// of the head, on a bar from the finished compaction to the head, ticks at the markers'
/// revisions, the compaction), the speed in revisions a second, and no time shown as a
/// revision's: the file's modification time only where there is room, named as that. The
/// seek prompt names revisions, a time typed is refused with a message, `<` and `>` move
/// ten revisions within the file, `b` says why there are no bookmarks.
#[test]
fn db_file_timeline_over_revisions() {
    use regscope::record::seek::SeekTo;
    use regscope::record::{Marker, MarkerKind, RevisionTimeline};
    use regscope::tui::{ReplayStatus, Request, Speed};
    let tl = RevisionTimeline {
        compacted: 110,
        first: 110,
        head: 150,
        file_time: at(0),
    };
    let status = ReplayStatus {
        file: "snap.db".into(),
        // Every stamp is the file's time: the span is one instant.
        start: at(0),
        end: at(0),
        total: 48,
        position: 27,
        speed: Speed::Times(1),
        secrets_shown: false,
        damage: String::new(),
        marker: None,
        markers: None,
        revisions: Some(tl),
    };
    let mut a = App::new(db_file_session(130), Settings::default());
    a.set_replay(Some(status.clone()));
    keys(&mut a, " ");
    assert!(a.paused());
    let paused = render(&mut a, 120, 12);
    let row = |screen: &str| {
        screen
            .lines()
            .find(|l| l.contains("rev/s"))
            .unwrap_or_else(|| panic!("the timeline row\n{screen}"))
            .to_string()
    };
    let line = row(&paused);
    assert!(line.contains(" r130 of 150 "), "{line}");
    assert!(line.contains("compacted at r110"), "{line}");
    assert!(
        line.contains("space plays · t seeks rN, start, end"),
        "{line}"
    );
    // Half way from 110 to 150: the cursor in the middle of the 36-column bar.
    let bar: String = line.chars().filter(|c| "━─●┃".contains(*c)).collect();
    assert_eq!(bar.chars().count(), 36, "{line}");
    assert_eq!(bar.chars().position(|c| c == '●'), Some(18), "{line}");
    assert!(
        !line.contains("22:13"),
        "no revision shown at the file's time at 120 columns:\n{line}"
    );
    insta::assert_snapshot!("db_file_timeline_paused_120x12", paused);

    // Playing at 100 revisions a second, the markers read (ticks at their revisions: the
    // compaction at the bar's start, a bookmark at r140), after a seek's message; wide
    // enough for the file's time, said as the file's.
    let mark = |revision: i64, kind: MarkerKind, label: &str| Marker {
        position: 0,
        at: at(0),
        kind,
        revision,
        label: label.into(),
    };
    keys(&mut a, "++++ ");
    assert!(!a.paused());
    let mut r = a.cursor().replay.clone().unwrap();
    assert_eq!(r.speed, Speed::Times(100));
    r.marker = Some("at the start: r110, the file's finished compaction".into());
    r.markers = Some(std::sync::Arc::new(vec![
        mark(
            110,
            MarkerKind::Compaction,
            "compaction at revision 110 (db_file)",
        ),
        mark(140, MarkerKind::Threshold, "p99 over 1s"),
    ]));
    a.set_replay(Some(r));
    let playing = render_styles(&mut a, 200, 12);
    let line = row(&playing);
    assert!(line.contains("▶ 100 rev/s"), "{line}");
    assert!(
        line.contains("file modified 22:13:20 UTC (no revision's time)"),
        "{line}"
    );
    assert_eq!(line.matches('┃').count(), 2, "{line}");
    insta::assert_snapshot!("db_file_timeline_playing_200x12", playing);

    // The seek prompt names revisions; a time typed is refused, naming it as one.
    keys(&mut a, " t");
    let prompt = render(&mut a, 120, 12);
    assert!(
        prompt.contains(" seek to revision (r1234, start, end): "),
        "{prompt}"
    );
    keys(&mut a, "22:13:20\n");
    let reqs = a.take_requests();
    let [Request::Notice(n)] = reqs.as_slice() else {
        panic!("one notice: {reqs:?}");
    };
    assert_eq!(
        n,
        "seek: '22:13:20' is a time, and a db file keeps none: give a revision (r1234), start or end"
    );
    for (typed, want) in [
        ("tr120\n", SeekTo::Revision(120)),
        ("tstart\n", SeekTo::Start),
        ("tend\n", SeekTo::End),
        // Ten revisions back from r130, and forward up to the head.
        ("<", SeekTo::Revision(120)),
        (">", SeekTo::Revision(140)),
    ] {
        keys(&mut a, typed);
        assert_eq!(a.take_requests(), [Request::Seek(want)], "{typed:?}");
    }
    // The palette's seek reads the same way: a revision, never a time.
    keys(&mut a, ":r125");
    assert!(render(&mut a, 120, 12).contains("seek to r125"));
    keys(&mut a, "\x1b:22:13:20");
    assert!(!render(&mut a, 120, 12).contains("seek to 22:13:20"));
    keys(&mut a, "\x1bb");
    assert!(a.take_requests().is_empty());
    assert!(render(&mut a, 160, 12).contains("bookmarks are for recordings"));
    // Events show each revision without a time: the file's time is no event's.
    keys(&mut a, "2");
    let events = render(&mut a, 120, 14);
    let row = events
        .lines()
        .find(|l| l.contains("p130"))
        .unwrap_or_else(|| panic!("r130's event\n{events}"));
    assert!(row.starts_with("│—") && row.contains(" 130 PUT"), "{row}");
    assert!(!events.contains("22:13"), "{events}");
    insta::assert_snapshot!("db_file_events_120x14", events);
    // A recording's replay keeps its time timeline.
    a.set_replay(Some(ReplayStatus {
        revisions: None,
        ..status
    }));
    assert!(row_has_clock(&render(&mut a, 120, 12)));
}

/// A key's History pane over etcd's db file shows no time for a revision (`—`), as Events
/// does: every stamp is the file's modification time, not when the revision was written.
/// The same session replayed from a recording shows each revision's time.
#[test]
fn db_file_history_shows_no_time_for_a_revision() {
    use regscope::record::RevisionTimeline;
    use regscope::tui::{ReplayStatus, Speed};
    let session = || {
        let mut s = db_file_session(130);
        // cm0 (written at r100 before the compaction) written again at r131 and r132.
        for (rev, version) in [(131, 2), (132, 3)] {
            s.apply(&Stamped {
                at: at(0),
                obs: Observation::Events {
                    revision: rev,
                    events: vec![WatchEvent {
                        kind: EventKind::Put,
                        kv: kv(b"/registry/configmaps/default/cm0", 100, rev, version, 0, 1),
                        prev_kv: None,
                    }],
                },
            });
        }
        s
    };
    let status = |revisions| ReplayStatus {
        file: "snap.db".into(),
        start: at(0),
        end: at(0),
        total: 30,
        position: 30,
        speed: Speed::Times(1),
        secrets_shown: false,
        damage: String::new(),
        marker: None,
        markers: None,
        revisions,
    };
    let history_rows = |screen: &str| -> Vec<String> {
        screen
            .lines()
            .filter(|l| l.contains(" v1 ") || l.contains(" v2 ") || l.contains(" v3 "))
            .map(str::to_string)
            .collect()
    };
    // The file's time as the console prints it, which no db-file row may show.
    let file_clock = regscope::tui::text::clock(at(0), 0);

    let mut db = App::new(session(), Settings::default());
    db.set_replay(Some(status(Some(RevisionTimeline {
        compacted: 110,
        first: 110,
        head: 132,
        file_time: at(0),
    }))));
    keys(&mut db, "2/cm0\n\n");
    let screen = render(&mut db, 120, 30);
    let rows = history_rows(&screen);
    assert_eq!(rows.len(), 3, "the three versions of cm0\n{screen}");
    for (row, rev) in rows.iter().zip(["132", "131", "100"]) {
        assert!(row.contains(rev) && row.contains('—'), "{row}\n{screen}");
        assert!(!row.contains(&file_clock), "{row}\n{screen}");
    }
    insta::assert_snapshot!("db_file_history_120x30", screen);

    // A recording's console keeps each revision's time ("≤" for the one a list brought).
    let mut rec = App::new(session(), Settings::default());
    rec.set_replay(Some(status(None)));
    keys(&mut rec, "2/cm0\n\n");
    let screen = render(&mut rec, 120, 30);
    let rows = history_rows(&screen);
    assert_eq!(rows.len(), 3, "the three versions of cm0\n{screen}");
    assert!(
        rows[0].contains(&file_clock) && !rows[0].contains('—'),
        "{screen}"
    );
    assert!(rows[2].contains(&format!("≤{file_clock}")), "{screen}");
}

/// Whether the timeline row of `screen` shows the time-mode speed and a clock.
fn row_has_clock(screen: &str) -> bool {
    screen
        .lines()
        .any(|l| l.contains("⏸ 1× ") && l.contains("22:13:20"))
}
