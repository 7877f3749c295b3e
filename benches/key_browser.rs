//! Key browser frame time over one big resource: the console's own drawing code (the App
//! and its views on ratatui's TestBackend, 160x48) over a replica holding 300,000 Events
//! (real encodings from the `mixed` key set's builder) beside 100,000 keys of other
//! resources.
//!
//! `cargo bench --bench key_browser` prints the median and worst frame time for: the
//! resources list, the first screen of the big resource, paging down (PgDn), jumping to
//! its end (G) and back to its top (g), and searching a name (`/`). A frame at 60 Hz has
//! 16.7 ms; the console redraws at most that often. `KEY_BROWSER_KEYS=N` changes the size.

use std::time::{Duration, Instant, SystemTime};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use regscope::model::{Bytes, KeyValue, Observation, Stamped};
use regscope::store::{Replica, ReplicaConfig, Session};
use regscope::tui::{views, App, Settings};

#[path = "common/keyset.rs"]
mod keyset;

fn at() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

type Term = Terminal<TestBackend>;

/// Draws one frame as the console's loop does (getting the session ready, then drawing);
/// returns how long it took.
fn frame(term: &mut Term, app: &mut App) -> Duration {
    let t = Instant::now();
    app.prepare_frame();
    term.draw(|f| views::draw(app, f)).expect("draw");
    app.mark_drawn();
    t.elapsed()
}

fn screen(term: &Term) -> String {
    term.backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect()
}

fn press(app: &mut App, code: KeyCode) {
    app.handle_key(&KeyEvent::new(code, KeyModifiers::NONE));
}

fn main() {
    let events: usize = std::env::var("KEY_BROWSER_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300_000);
    let mut rng = SmallRng::seed_from_u64(7);
    let mut r = Replica::new(ReplicaConfig::default());
    r.apply(&Stamped {
        at: at(),
        obs: Observation::ListBegin { revision: 2 },
    });
    let mut kvs = Vec::new();
    let (mut n_events, mut others, mut i) = (0, 0, 0usize);
    while n_events < events || others < 100_000 {
        let (k, v) = keyset::entry("mixed", &mut rng, i);
        i += 1;
        let is_event = k.starts_with("/registry/events/");
        if is_event && n_events >= events || !is_event && others >= 100_000 {
            continue;
        }
        if is_event {
            n_events += 1;
        } else {
            others += 1;
        }
        kvs.push(KeyValue {
            key: Bytes::from(k.into_bytes()),
            create_revision: 2,
            mod_revision: 2,
            version: 1,
            lease: 0,
            value: Bytes::from(v),
        });
        if kvs.len() == 10_000 {
            r.apply(&Stamped {
                at: at(),
                obs: Observation::ListPage {
                    kvs: std::mem::take(&mut kvs),
                },
            });
        }
    }
    r.apply(&Stamped {
        at: at(),
        obs: Observation::ListPage { kvs },
    });
    r.apply(&Stamped {
        at: at(),
        obs: Observation::ListDone {
            revision: 2,
            compacted: None,
        },
    });
    let mut app = App::new(Session::from_replica(r, "bench"), Settings::default());
    app.tick(at());
    let mut term = Terminal::new(TestBackend::new(160, 48)).expect("terminal");
    let report = |what: &str, mut times: Vec<Duration>| {
        times.sort();
        println!(
            "key_browser {what:34} median {:6.2} ms, worst {:6.2} ms ({} frames)",
            times[times.len() / 2].as_secs_f64() * 1e3,
            times[times.len() - 1].as_secs_f64() * 1e3,
            times.len()
        );
    };
    // Opening Keys settles the key order once (every key was new after the list).
    let t = Instant::now();
    press(&mut app, KeyCode::Char('3'));
    frame(&mut term, &mut app);
    println!(
        "key_browser opening Keys after the list (sorts the order once): {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    report(
        "resources list",
        (0..20).map(|_| frame(&mut term, &mut app)).collect(),
    );
    // Walk down the resources list until Enter opens the events.
    let mut found = false;
    for _ in 0..10 {
        press(&mut app, KeyCode::Enter);
        frame(&mut term, &mut app);
        if screen(&term).contains("/registry/events/") {
            found = true;
            break;
        }
        press(&mut app, KeyCode::Esc);
        press(&mut app, KeyCode::Char('j'));
        frame(&mut term, &mut app);
    }
    assert!(
        found,
        "the events resource was not reached in the resources list"
    );
    report(
        &format!("first screen of {events} Events"),
        (0..20).map(|_| frame(&mut term, &mut app)).collect(),
    );
    let first_screen = screen(&term);
    report(
        "PgDn",
        (0..50)
            .map(|_| {
                press(&mut app, KeyCode::PageDown);
                frame(&mut term, &mut app)
            })
            .collect(),
    );
    assert_ne!(screen(&term), first_screen, "PgDn moved through the keys");
    report(
        "G (to the end) and g (to the top)",
        (0..20)
            .map(|i| {
                press(&mut app, KeyCode::Char(if i % 2 == 0 { 'G' } else { 'g' }));
                frame(&mut term, &mut app)
            })
            .collect(),
    );
    let t = Instant::now();
    press(&mut app, KeyCode::Char('/'));
    for c in "web-04999".chars() {
        press(&mut app, KeyCode::Char(c));
        frame(&mut term, &mut app);
    }
    press(&mut app, KeyCode::Enter);
    let last = frame(&mut term, &mut app);
    println!(
        "key_browser search '/web-04999' + Enter: {:.1} ms in all, last frame {:.2} ms",
        t.elapsed().as_secs_f64() * 1e3,
        last.as_secs_f64() * 1e3
    );
    // A filter that matches nothing: each frame scans the resource up to the scan limit.
    press(&mut app, KeyCode::Char('/'));
    for _ in 0..9 {
        press(&mut app, KeyCode::Backspace);
    }
    for c in "no-such-key".chars() {
        press(&mut app, KeyCode::Char(c));
    }
    press(&mut app, KeyCode::Enter);
    let misses: Vec<Duration> = (0..5).map(|_| frame(&mut term, &mut app)).collect();
    let text = screen(&term);
    assert!(text.contains("no-such-key"), "{text}");
    report("a filter that matches no key (scans to the limit)", misses);
}
