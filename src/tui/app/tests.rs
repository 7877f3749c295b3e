use super::*;
use crate::model::{EventKind, KeyValue, Observation, WatchEvent};
use crate::store::ReplicaConfig;
use crate::tui::action::Action;
use crate::tui::state::{KeysFocus, Speed};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::time::{Duration, UNIX_EPOCH};

fn at(s: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000 + s)
}

fn kv(key: &str, rev: i64) -> KeyValue {
    KeyValue {
        key: Bytes::copy_from_slice(key.as_bytes()),
        create_revision: 2,
        mod_revision: rev,
        version: 1,
        lease: 0,
        value: Bytes::from(format!("value-{rev}")),
    }
}

fn listed(keys: usize) -> Replica {
    let mut r = Replica::new(ReplicaConfig::default());
    let kvs: Vec<KeyValue> = (0..keys)
        .map(|i| kv(&format!("/registry/configmaps/ns/cm{i:06}"), 2))
        .collect();
    for obs in [
        Observation::ListBegin { revision: 2 },
        Observation::ListPage { kvs },
        Observation::ListDone {
            revision: 2,
            compacted: None,
        },
    ] {
        r.apply(&Stamped { at: at(0), obs });
    }
    r
}

fn put(app: &mut App, s: u64, key: &str, rev: i64) {
    let mut v = kv(key, rev);
    v.version = rev;
    let st = Stamped {
        at: at(s),
        obs: Observation::Events {
            revision: rev,
            events: vec![WatchEvent {
                kind: EventKind::Put,
                kv: v,
                prev_kv: None,
            }],
        },
    };
    app.ingest_all([&st]);
}

/// A replay of 10 observations over a minute, at the start.
fn replay_status() -> ReplayStatus {
    ReplayStatus {
        file: "r.rgs".into(),
        start: at(0),
        end: at(60),
        total: 10,
        position: 0,
        speed: Speed::Times(1),
        secrets_shown: false,
        damage: String::new(),
        marker: None,
        markers: None,
        revisions: None,
    }
}

fn press(app: &mut App, c: char) {
    app.handle_key(&KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
}

fn code(app: &mut App, c: KeyCode) {
    app.handle_key(&KeyEvent::new(c, KeyModifiers::NONE));
}

/// On the too-small screen, keys act on nothing unseen; `q` and ctrl-c quit, from a
/// prompt too.
#[test]
fn the_too_small_screen_takes_only_quitting_keys() {
    let new = || {
        let mut app = App::new(
            Session::from_replica(listed(3), "demo"),
            Settings::default(),
        );
        app.too_small = true;
        app
    };
    let mut app = new();
    press(&mut app, ' ');
    press(&mut app, '2');
    press(&mut app, '/');
    assert!(!app.paused());
    assert!(app.input.is_none());
    assert!(!app.should_quit());
    press(&mut app, 'q');
    assert!(app.should_quit());
    let mut app = new();
    app.too_small = false;
    press(&mut app, '2');
    press(&mut app, '/');
    assert!(app.input.is_some(), "a prompt is open");
    app.too_small = true;
    press(&mut app, 'q');
    assert!(
        app.should_quit(),
        "q quits from a prompt too on that screen"
    );
    let mut app = new();
    app.handle_key(&KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert!(app.should_quit());
}

#[test]
fn pause_freezes_every_panel_and_queues_the_stream() {
    let mut app = App::new(
        Session::from_replica(listed(3), "demo"),
        Settings::default(),
    );
    put(&mut app, 1, "/registry/configmaps/ns/a", 3);
    press(&mut app, '2');
    press(&mut app, ' ');
    assert!(app.paused());
    put(&mut app, 2, "/registry/configmaps/ns/b", 4);
    app.tick(at(50));
    assert_eq!(app.events_len(), 1, "event list frozen");
    assert_eq!(app.replica().revision(), 3, "replica frozen at the cursor");
    assert_eq!(app.now(), at(1), "clock frozen");
    assert_eq!(
        app.cursor().backlog(),
        2,
        "the stream queues behind the cursor"
    );
    press(&mut app, '1');
    press(&mut app, ' ');
    assert!(!app.paused());
    assert_eq!(app.cursor().backlog(), 0);
    assert_eq!(app.replica().revision(), 4);
    assert_eq!(app.events_len(), 2);
    assert_eq!(app.now(), at(50));
}

#[test]
fn selection_stays_on_its_event_when_not_following() {
    let mut app = App::new(
        Session::from_replica(listed(1), "demo"),
        Settings::default(),
    );
    app.drawn.events.set(10);
    for r in 3..6 {
        put(&mut app, 1, &format!("/registry/configmaps/ns/k{r}"), r);
    }
    app.perform(Action::ShowEvents);
    app.perform(Action::Down);
    assert!(!app.events.follow);
    let before = app.events_row(app.events.selected).map(|e| e.revision);
    put(&mut app, 2, "/registry/configmaps/ns/new", 6);
    put(&mut app, 2, "/registry/configmaps/ns/new2", 7);
    let after = app.events_row(app.events.selected).map(|e| e.revision);
    assert_eq!(before, after);
    app.perform(Action::Top);
    assert!(app.events.follow, "back at the newest row follows again");
}

#[test]
fn the_seek_key_live_says_where_seeking_is_and_an_empty_seek_just_closes() {
    let mut app = App::new(
        Session::from_replica(listed(1), "demo"),
        Settings::default(),
    );
    press(&mut app, 't');
    assert!(app.input.is_none());
    assert!(app
        .current_notice()
        .is_some_and(|n| n.contains("seeking is for replays")));
    // In a replay, Enter on an empty prompt closes it without a request or an error.
    app.set_replay(Some(replay_status()));
    press(&mut app, 't');
    assert!(app.typing_seek());
    code(&mut app, KeyCode::Enter);
    assert!(app.input.is_none());
    assert!(app.take_requests().is_empty());
}

#[test]
fn a_notice_shows_until_a_newer_warning_or_the_next_key() {
    let mut app = App::new(
        Session::from_replica(listed(1), "demo"),
        Settings::default(),
    );
    assert_eq!(app.current_notice(), None);
    app.notify("recording saved: a.rgs".into());
    assert_eq!(app.current_notice(), Some("recording saved: a.rgs"));
    assert!(
        app.settings.warnings.is_empty(),
        "a notice is not a warning"
    );
    app.settings.warnings.push("pause ended".into());
    assert_eq!(app.current_notice(), None, "the newer warning shows");
    app.notify("screenshot saved: s.svg".into());
    app.handle_key(&KeyEvent::new(KeyCode::Char('2'), KeyModifiers::NONE));
    assert_eq!(
        app.current_notice(),
        None,
        "the next key dismisses a notice"
    );
}

#[test]
fn the_seek_prompt_keeps_what_is_typed_in_sight_on_a_narrow_terminal() {
    let mut app = App::new(
        Session::from_replica(listed(1), "demo"),
        Settings::default(),
    );
    app.set_replay(Some(replay_status()));
    press(&mut app, 't');
    for c in "03:54:00".chars() {
        press(&mut app, c);
    }
    let narrow = screen(&app, 40, 12);
    assert!(narrow.contains(" seek to: 03:54:00"), "{narrow}");
    let wide = screen(&app, 120, 30);
    assert!(
        wide.contains(" seek to (14:32:10, -5m, +30s, r1234): 03:54:00"),
        "{wide}"
    );
}

#[test]
fn an_unbound_alt_key_is_esc_then_the_key() {
    let mut app = App::new(
        Session::from_replica(listed(1), "demo"),
        Settings::default(),
    );
    press(&mut app, '?');
    assert!(app.help.is_some());
    // Esc and ':' in one read arrive as Alt+':': the help closes and the palette opens.
    app.handle_key(&KeyEvent::new(KeyCode::Char(':'), KeyModifiers::ALT));
    assert!(app.help.is_none(), "the Esc closed the help");
    assert!(app.palette_open(), "the ':' opened the palette");
    app.handle_key(&KeyEvent::new(KeyCode::Char('2'), KeyModifiers::ALT));
    assert!(!app.palette_open(), "the Esc closed the palette");
    assert_eq!(app.panel, Panel::Events, "the '2' switched panels");
}

/// Events of keys `alpha` (revision 3) and `beta` (4), the event list shown and its
/// filter being typed.
fn typing_events_filter() -> App {
    let mut app = App::new(
        Session::from_replica(listed(1), "demo"),
        Settings::default(),
    );
    put(&mut app, 1, "/registry/configmaps/ns/alpha", 3);
    put(&mut app, 1, "/registry/configmaps/ns/beta", 4);
    press(&mut app, '2');
    press(&mut app, '/');
    app
}

#[test]
fn a_key_opened_from_the_event_list_closes_back_to_it() {
    let mut app = typing_events_filter();
    for c in "alp".chars() {
        press(&mut app, c);
    }
    code(&mut app, KeyCode::Enter);
    code(&mut app, KeyCode::Enter);
    assert!(app.opened_key.is_some(), "the event's key is open");
    code(&mut app, KeyCode::Esc);
    assert!(app.opened_key.is_none());
    assert_eq!(app.panel, Panel::Events, "back where it was opened");
    assert_eq!(app.events.filter, "alp", "the filter as it was");
    // Opened in the key browser, it closes to the key browser.
    press(&mut app, '3');
    code(&mut app, KeyCode::Enter);
    code(&mut app, KeyCode::Enter);
    assert!(app.opened_key.is_some());
    code(&mut app, KeyCode::Esc);
    assert_eq!(app.panel, Panel::Keys);
}

#[test]
fn filter_is_typed_in_filter_mode() {
    let mut app = typing_events_filter();
    assert_eq!(app.mode(), Mode::Filter);
    for c in "ALP".chars() {
        press(&mut app, c);
    }
    press(&mut app, 'q'); // typed, not quit
    code(&mut app, KeyCode::Backspace);
    code(&mut app, KeyCode::Enter);
    assert!(!app.should_quit());
    assert_eq!(app.events.filter, "ALP");
    assert_eq!(app.events_len(), 1);
    code(&mut app, KeyCode::Esc);
    assert_eq!(app.events_len(), 2);
}

/// The screen `app` draws at `w`x`h`, as text.
fn screen(app: &App, w: u16, h: u16) -> String {
    let backend = ratatui::backend::TestBackend::new(w, h);
    let mut term = ratatui::Terminal::new(backend).unwrap();
    let frame = term.draw(|f| crate::tui::views::draw(app, f)).unwrap();
    crate::tui::screenshot::text(frame.buffer)
}

#[test]
fn counts_of_one_are_said_in_the_singular() {
    let mut app = App::new(
        Session::from_replica(listed(1), "demo"),
        Settings::default(),
    );
    app.tick(at(0));
    let hints: Vec<String> = app
        .palette_entries("configmaps")
        .into_iter()
        .map(|e| e.hint)
        .collect();
    assert!(hints.contains(&"1 key".to_string()), "{hints:?}");
    // A relist after a compaction: one gap.
    let kvs = vec![kv("/registry/configmaps/ns/cm000000", 2)];
    for obs in [
        Observation::ListBegin { revision: 10 },
        Observation::ListPage { kvs },
        Observation::ListDone {
            revision: 10,
            compacted: Some(5),
        },
    ] {
        app.ingest_all([&Stamped { at: at(1), obs }]);
    }
    let s = screen(&app, 160, 48);
    assert!(s.contains(" 1 gap") && !s.contains("1 gaps"), "{s}");
    press(&mut app, ' ');
    put(&mut app, 2, "/registry/secrets/ns/a", 11);
    assert_eq!(app.cursor().backlog(), 1);
    let s = screen(&app, 160, 48);
    assert!(s.contains(" 1 observation queued"), "{s}");
    press(&mut app, ' ');
    press(&mut app, '3');
    code(&mut app, KeyCode::Enter);
    let s = screen(&app, 160, 48);
    assert!(s.contains(" 1 key") && !s.contains("1 keys"), "{s}");
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.mode(), Mode::OpenedKey);
    let s = screen(&app, 160, 48);
    assert!(s.contains(" · 1 line") && !s.contains("1 lines"), "{s}");
}

#[test]
fn growth_says_when_it_shows_only_the_busiest_writers() {
    let mut app = App::new(
        Session::from_replica(listed(1), "demo"),
        Settings::default(),
    );
    for i in 0..30i64 {
        let value = format!(
            r#"{{"kind":"ConfigMap","apiVersion":"v1","metadata":{{"name":"w{i}","namespace":"ns","managedFields":[{{"manager":"writer-{i:02}","operation":"Update","apiVersion":"v1","time":"2026-12-01T00:00:00Z"}}]}}}}"#
        );
        let st = Stamped {
            at: at(1),
            obs: Observation::Events {
                revision: 3 + i,
                events: vec![WatchEvent {
                    kind: EventKind::Put,
                    kv: KeyValue {
                        key: Bytes::from(format!("/registry/configmaps/ns/w{i}")),
                        create_revision: 3 + i,
                        mod_revision: 3 + i,
                        version: 1,
                        lease: 0,
                        value: Bytes::from(value),
                    },
                    prev_kv: None,
                }],
            },
        };
        app.ingest_all([&st]);
    }
    let tall = screen(&app, 160, 80);
    assert!(tall.contains("30 writers)"), "{tall}");
    let short = screen(&app, 160, 40);
    assert!(
        short.contains("of 30 writers)") && short.contains("busiest "),
        "{short}"
    );
}

#[test]
fn key_browser_pages_through_many_keys_without_collecting_them() {
    let mut app = App::new(
        Session::from_replica(listed(100_000), "demo"),
        Settings::default(),
    );
    app.drawn.keys.set(20);
    press(&mut app, '3');
    code(&mut app, KeyCode::Enter);
    assert_eq!(
        app.keys.selected.as_deref(),
        Some(&b"/registry/configmaps/ns/cm000000"[..])
    );
    code(&mut app, KeyCode::PageDown);
    assert_eq!(
        app.keys.selected.as_deref(),
        Some(&b"/registry/configmaps/ns/cm000019"[..])
    );
    press(&mut app, 'G');
    assert_eq!(
        app.keys.selected.as_deref(),
        Some(&b"/registry/configmaps/ns/cm099999"[..])
    );
    let rows = app.key_rows(20);
    assert_eq!(rows.keys.len(), 20);
    assert_eq!(rows.keys.last(), app.keys.selected.as_ref());
    press(&mut app, 'k');
    assert_eq!(
        app.keys.selected.as_deref(),
        Some(&b"/registry/configmaps/ns/cm099998"[..])
    );
    press(&mut app, 'g');
    assert_eq!(app.keys.page_after, None);
    // Filter within the resource.
    press(&mut app, '/');
    for c in "cm05000".chars() {
        press(&mut app, c);
    }
    code(&mut app, KeyCode::Enter);
    let rows = app.key_rows(20);
    assert_eq!(rows.keys.len(), 10);
    assert_eq!(app.keys.selected.as_ref(), rows.keys.first());
}

#[test]
fn opened_key_follows_new_versions_and_shows_older_ones() {
    let mut app = App::new(
        Session::from_replica(listed(2), "demo"),
        Settings::default(),
    );
    press(&mut app, '3');
    code(&mut app, KeyCode::Enter);
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.mode(), Mode::OpenedKey);
    let key = "/registry/configmaps/ns/cm000000";
    put(&mut app, 1, key, 3);
    let d = app.opened_key.as_ref().map(|d| (d.history.len(), d.index));
    assert_eq!(d, Some((2, 1)));
    press(&mut app, '[');
    let d = app.opened_key.as_ref().map(|d| d.index);
    assert_eq!(d, Some(0));
    put(&mut app, 2, key, 4);
    let d = app.opened_key.as_ref().map(|d| (d.history.len(), d.index));
    assert_eq!(d, Some((3, 0)), "an older version stays shown");
    code(&mut app, KeyCode::Esc);
    assert_eq!(app.mode(), Mode::Keys);
}

#[test]
fn an_open_key_shows_nothing_of_it_after_a_seek_to_before_it_existed() {
    let mut app = App::new(
        Session::from_replica(listed(2), "demo"),
        Settings::default(),
    );
    let key = "/registry/configmaps/ns/new";
    put(&mut app, 1, key, 3);
    put(&mut app, 2, key, 4);
    app.open_key(Bytes::from(key));
    assert_eq!(app.opened_key.as_ref().map(|d| d.history.len()), Some(2));
    // A replay seeks back: the session is the one from before the key's first write.
    app.replace_session(Session::from_replica(listed(2), "demo"));
    let d = app.opened_key.as_ref().expect("still open");
    assert!(d.history.is_empty(), "{:?}", d.history);
    assert!(d.shown().is_none());
}

#[test]
fn encryption_summary_counts_on_open_and_at_most_once_a_second() {
    let mut app = App::new(
        Session::from_replica(listed(3), "demo"),
        Settings::default(),
    );
    app.tick(at(0));
    press(&mut app, '3');
    press(&mut app, 'E');
    assert_eq!(app.mode(), Mode::Encryption);
    let values = |app: &App| app.encryption.summary.as_ref().map(|s| s.total().values);
    assert_eq!(values(&app), Some(3));
    put(&mut app, 0, "/registry/configmaps/ns/new", 3);
    assert_eq!(
        values(&app),
        Some(3),
        "same clock second: not counted again"
    );
    app.tick(at(1));
    assert_eq!(values(&app), Some(4));
    // Enter opens the selected resource's keys; the counts are dropped.
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.mode(), Mode::Keys);
    assert_eq!(app.keys.resource.as_deref(), Some("configmaps"));
    assert_eq!(app.keys.focus, KeysFocus::Keys);
    app.tick(at(2));
    assert!(app.encryption.summary.is_none());
    press(&mut app, 'E');
    code(&mut app, KeyCode::Esc);
    assert_eq!(app.mode(), Mode::Keys);
}

#[test]
fn an_event_opens_the_object_as_that_event_left_it() {
    let mut app = App::new(
        Session::from_replica(listed(1), "demo"),
        Settings::default(),
    );
    let key = "/registry/configmaps/ns/cm000000";
    for rev in 3..=5 {
        put(&mut app, rev as u64, key, rev);
    }
    press(&mut app, '2');
    let row = (0..10)
        .find(|i| app.events_row(*i).is_some_and(|e| e.revision == 4))
        .expect("the event at revision 4");
    app.events.follow = false;
    app.events.selected = row;
    code(&mut app, KeyCode::Enter);
    let shown = app
        .opened_key
        .as_ref()
        .and_then(|d| d.shown())
        .map(|v| v.mod_revision);
    assert_eq!(shown, Some(4), "not the newest (5)");
}

#[test]
fn diff_mark_and_json_toggles_on_the_open_key() {
    let mut app = App::new(
        Session::from_replica(listed(1), "demo"),
        Settings::default(),
    );
    let key = "/registry/configmaps/ns/cm000000";
    put(&mut app, 1, key, 3);
    put(&mut app, 2, key, 4);
    press(&mut app, '3');
    code(&mut app, KeyCode::Enter);
    code(&mut app, KeyCode::Enter);
    press(&mut app, 'd');
    let title = |app: &App| {
        app.opened_key
            .as_ref()
            .and_then(|d| d.diff.as_ref())
            .map(|x| x.title.clone())
    };
    assert_eq!(title(&app).as_deref(), Some("3 → 4"));
    press(&mut app, '[');
    press(&mut app, '[');
    let text = |app: &App| {
        app.opened_key
            .as_ref()
            .and_then(|d| d.diff.as_ref())
            .map(|x| {
                x.lines
                    .iter()
                    .map(|(_, l)| l.clone())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    };
    assert!(
        text(&app).contains("the key's first version"),
        "{}",
        text(&app)
    );
    press(&mut app, 'm');
    press(&mut app, ']');
    press(&mut app, ']');
    assert_eq!(title(&app).as_deref(), Some("2 → 4 (marked)"));
    press(&mut app, 'm');
    assert_eq!(
        title(&app).as_deref(),
        Some("4 (marked)"),
        "the mark moves to 4"
    );
    press(&mut app, 'm');
    assert_eq!(title(&app).as_deref(), Some("3 → 4"), "m again unmarks");
    press(&mut app, 'd');
    assert!(title(&app).is_none());
    assert!(!app.json_output);
    press(&mut app, 'o');
    assert!(app.json_output);
}

#[test]
fn idle_means_no_redraw() {
    let mut app = App::new(
        Session::from_replica(listed(2), "demo"),
        Settings::default(),
    );
    app.tick(at(0));
    app.mark_drawn();
    assert!(!app.needs_draw());
    put(&mut app, 1, "/registry/configmaps/ns/x", 3);
    assert!(app.needs_draw(), "data changed");
    app.mark_drawn();
    app.tick(at(2));
    assert!(app.needs_draw(), "rates still moving");
    app.mark_drawn();
    app.tick(at(600));
    app.mark_drawn();
    app.tick(at(601));
    assert!(!app.needs_draw(), "nothing observed for minutes: no redraw");
    press(&mut app, '?');
    assert!(app.needs_draw());
}

#[test]
fn invalid_config_corpus_yields_warnings_not_crashes() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/config-invalid");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("corpus dir") {
        let path = entry.expect("entry").path();
        n += 1;
        let (km, w) = Keymap::load(Some(&path));
        assert!(!w.is_empty(), "{} as keymap: no warning", path.display());
        let help = KeyEvent::new(KeyCode::Char('?'), KeyModifiers::NONE);
        assert_eq!(km.lookup(Mode::Global, &help), Some(Action::ToggleHelp));
        let (theme, w) = Theme::load(Some(&path));
        assert!(!w.is_empty(), "{} as theme: no warning", path.display());
        let _ = theme.get(super::super::theme::Role::Alert);
        let opts = super::super::UiOptions {
            keymap_path: Some(path.clone()),
            theme_path: Some(path.clone()),
            ..Default::default()
        };
        let s = super::super::settings(&opts);
        assert!(s.warnings.len() >= 2);
    }
    assert!(n >= 8, "corpus has {n} files");
}

/// Growth's writers table tags a storage version migration's rows (`migration`) and the
/// unnamed rewrites of a resource most of whose keys were rewritten in a minute
/// (`rewrite?`), with a line under the table that words the latter as a guess.
#[test]
fn writers_tag_a_migration_and_a_rewrite_of_every_object() {
    let mut app = App::new(
        Session::from_replica(listed(1), "demo"),
        Settings::default(),
    );
    let mut rev = 2i64;
    let mut write = |app: &mut App, key: String, value: String, version: i64| {
        rev += 1;
        let st = Stamped {
            at: at(1),
            obs: Observation::Events {
                revision: rev,
                events: vec![WatchEvent {
                    kind: EventKind::Put,
                    kv: KeyValue {
                        key: Bytes::from(key),
                        create_revision: 3,
                        mod_revision: rev,
                        version,
                        lease: 0,
                        value: Bytes::from(value),
                    },
                    prev_kv: None,
                }],
            },
        };
        app.ingest_all([&st]);
    };
    let object = |kind: &str, i: i64| {
        format!(
            r#"{{"kind":"{kind}","apiVersion":"v1","metadata":{{"name":"o{i}","namespace":"ns","managedFields":[{{"manager":"kubectl","operation":"Update","apiVersion":"v1","time":"2026-12-01T00:00:00Z"}}]}}}}"#
        )
    };
    write(
        &mut app,
        "/registry/storageversionmigrations/secrets-1".into(),
        r#"{"apiVersion":"storagemigration.k8s.io/v1","kind":"StorageVersionMigration","metadata":{"name":"secrets-1"},"spec":{"resource":{"group":"","resource":"secrets"}},"status":{"conditions":[{"type":"Running","status":"True"}]}}"#.into(),
        1,
    );
    for version in [1, 2] {
        for i in 0..25 {
            let cm = format!("/registry/configmaps/ns/o{i}");
            write(&mut app, cm, object("ConfigMap", i), version);
            let secret = format!("/registry/secrets/ns/o{i}");
            write(&mut app, secret, object("Secret", i), version);
        }
    }
    let s = screen(&app, 160, 60);
    assert!(
        s.contains("(storage version migratio") && s.contains(" migration "),
        "{s}"
    );
    assert!(s.contains("rewrite?"), "{s}");
    assert!(
        s.contains("rewrite? configmaps: perhaps a rewrite of every object"),
        "worded as a guess: {s}"
    );
}
