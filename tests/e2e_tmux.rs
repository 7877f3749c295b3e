//! End-to-end: the real `regscope` binary against a real etcd, driven in tmux (send-keys,
//! capture-pane) and in a pty via `script` (raw output bytes).

mod common;

use common::recording::recorded_so_far;
use common::require;
use common::tmux::{tmux_cmd, Tmux};

use std::process::Command;
use std::time::{Duration, Instant};

use regscope::demo::PrivateEtcd;

const BIN: &str = env!("CARGO_BIN_EXE_regscope");

async fn seeded_etcd() -> PrivateEtcd {
    let e = PrivateEtcd::start().await.expect("etcd");
    let mut c = e.client().await.expect("client");
    for i in 0..30 {
        c.put(format!("/registry/configmaps/default/cm{i:02}"), "{}", None)
            .await
            .unwrap();
    }
    c.put(
        b"/registry/configmaps/default/cm\xff".to_vec(),
        b"raw".to_vec(),
        None,
    )
    .await
    .unwrap();
    e
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_shows_live_etcd_and_quits_cleanly() {
    require!(ETCD, TMUX);
    let e = seeded_etcd().await;
    let mut c = e.client().await.unwrap();
    let cmd = format!("{BIN} --endpoints {}", e.endpoint());
    let t = Tmux::start(120, 40, &cmd);
    let port = e.endpoint().rsplit(':').next().unwrap().to_string();
    let screen = t.wait_for(
        "header with endpoint and 31 keys",
        Duration::from_secs(20),
        |s| s.contains(&port) && s.contains("31"),
    );
    assert!(screen.lines().count() >= 39, "{screen}");
    // A write shows up live.
    let r = c
        .put("/registry/pods/default/live-pod", "x", None)
        .await
        .unwrap();
    let rev = r.header().unwrap().revision().to_string();
    t.wait_for("new head revision", Duration::from_secs(10), |s| {
        s.contains(&rev)
    });
    // Help opens from the keymap, then quit.
    t.keys(&["?"]);
    t.wait_for("help", Duration::from_secs(5), |s| {
        s.to_lowercase().contains("help") && s.contains("quit")
    });
    t.keys(&["Escape"]);
    // Two keys in one read arrive as Alt+q under load: wait for the help to close first.
    t.wait_for("help closed", Duration::from_secs(5), |s| {
        !s.to_lowercase().contains("help ·") || !s.contains("quit")
    });
    // Key pacing, the point of this sleep: q must arrive in a read of its own.
    std::thread::sleep(Duration::from_millis(150));
    t.keys(&["q"]);
    common::wait_until("regscope to quit on q", Duration::from_secs(10), || {
        t.pane_dead()
    });
}

/// Layout in a terminal of more than 65,535 cells, where it has broken before: the footer
/// stays on the last row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layout_holds_in_a_terminal_of_more_than_65535_cells() {
    require!(ETCD, TMUX);
    let e = seeded_etcd().await;
    for (cols, rows) in [(544u16, 125u16), (509, 143), (80, 24)] {
        let cmd = format!("{BIN} --endpoints {}", e.endpoint());
        let t = Tmux::start(cols, rows, &cmd);
        let screen = t.wait_for("synced screen", Duration::from_secs(20), |s| {
            s.contains("31")
        });
        let lines: Vec<&str> = screen.lines().collect();
        assert_eq!(lines.len(), rows as usize, "{cols}x{rows}");
        let last = lines.last().unwrap();
        assert!(
            last.contains('?') || last.to_lowercase().contains("help"),
            "{cols}x{rows}: footer (hint bar) must be on the last row, got {last:?}"
        );
        t.keys(&["q"]);
    }
}

/// A panic must not leave the terminal broken: a panic while drawing restores the terminal
/// exactly once, prints the panic on the main screen after the restore, and exits non-zero.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_restores_the_terminal_once() {
    require!(ETCD, SCRIPT);
    let e = seeded_etcd().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("out.bin");
    let inner = format!(
        "REGSCOPE_DEBUG_PANIC=1 {BIN} --endpoints {}; rc=$?; echo; echo \"exit=$rc\"; stty -a",
        e.endpoint()
    );
    let st = Command::new("script")
        .args(["-q", "-e", "-c", &inner, log.to_str().unwrap()])
        .env("TERM", "xterm-256color")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .status()
        .expect("script");
    let bytes = std::fs::read(&log).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let count = |pat: &str| text.matches(pat).count();
    assert_eq!(
        count("\x1b[?1049l"),
        1,
        "leave-alternate-screen once: {text:?}"
    );
    assert_eq!(count("\x1b[?25h"), 1, "show-cursor once");
    let leave = text.find("\x1b[?1049l").unwrap();
    let panic_at = text.find("panicked").expect("panic message printed");
    assert!(panic_at > leave, "panic text must follow the restore");
    assert!(
        text.contains("icanon") && !text.contains("-icanon"),
        "cooked mode back"
    );
    assert!(
        text.contains(" echo") && !text.contains("-echo "),
        "echo back"
    );
    assert!(st.success(), "script itself ran");
    let code: i32 = text
        .rsplit("exit=")
        .next()
        .and_then(|t| t.split_whitespace().next())
        .and_then(|c| c.parse().ok())
        .expect("exit code printed");
    assert_ne!(code, 0, "a panic exits non-zero");
}

#[test]
fn snapshot_and_verify_commands() {
    require!(ETCD);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let e = rt.block_on(seeded_etcd());
    let out = Command::new(BIN)
        .args(["snapshot", "--json", "--keys", "--endpoints", &e.endpoint()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["keys"], 31);
    assert!(v["revision"].as_i64().unwrap() >= 32);
    assert!(v["compact_revision"].is_null());
    let res = v["resources"].as_array().unwrap();
    assert_eq!(res[0]["resource"], "configmaps");
    assert_eq!(res[0]["keys"], 31);
    assert_eq!(v["key_list"].as_array().unwrap().len(), 31);
    let out = Command::new(BIN)
        .args(["verify", "--endpoints", &e.endpoint()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("OK: 31 keys"));
    // Unreachable endpoint: one clear line, exit 2.
    let out = Command::new(BIN)
        .args(["snapshot", "--json", "--endpoints", "http://127.0.0.1:1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot reach etcd at http://127.0.0.1:1"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// `print-config keymap|theme` prints files that load back as overrides without warnings.
#[test]
fn print_config_output_loads_back() {
    let dir = tempfile::tempdir().unwrap();
    for which in ["keymap", "theme"] {
        let out = Command::new(BIN)
            .args(["print-config", which])
            .output()
            .unwrap();
        assert!(out.status.success());
        let path = dir.path().join(format!("{which}.toml"));
        std::fs::write(&path, &out.stdout).unwrap();
        let warnings = if which == "keymap" {
            regscope::config::load_keymap(Some(&path)).1
        } else {
            regscope::config::load_theme(Some(&path)).1
        };
        assert!(warnings.is_empty(), "{which}: {warnings:?}");
    }
}

/// SIGTERM restores the terminal and exits with 128 + 15, as shells expect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_exits_143() {
    require!(ETCD, TMUX);
    let e = seeded_etcd().await;
    let cmd = format!(
        "{BIN} --endpoints {} --prefix /registry-sigterm-test; echo \"rc=$?\"; sleep 30",
        e.endpoint()
    );
    let t = Tmux::start(100, 30, &cmd);
    t.wait_for("console up", Duration::from_secs(20), |s| {
        s.contains("help")
    });
    let pids = Command::new("pgrep")
        // Anchored: the wrapping shell's command line also names the prefix.
        .args(["-f", &format!("^{BIN} --endpoints .*registry-sigterm-test")])
        .output()
        .unwrap();
    let pids = String::from_utf8_lossy(&pids.stdout).into_owned();
    assert!(!pids.trim().is_empty(), "regscope process found");
    for pid in pids.split_whitespace() {
        let _ = Command::new("kill").args(["-TERM", pid]).status();
    }
    let screen = t.wait_for("exit code", Duration::from_secs(10), |s| s.contains("rc="));
    assert!(screen.contains("rc=143"), "{screen}");
}

/// The key view on `regscope demo`: a pod opened from the event stream decodes to YAML;
/// a node lease (renewed every 10 s) gets a second revision, and its diff names the
/// writer; quitting leaves the alternate screen.
#[test]
fn demo_key_view_decodes_yaml_and_diffs_revisions() {
    require!(ETCD, TMUX, TESTDATA);
    let t = Tmux::start(140, 45, &format!("{BIN} demo"));
    // One send-keys per key: an Escape and the next key in one write read as Alt+key.
    let press = |keys: &[&str]| {
        for k in keys {
            t.keys(&[k]);
            std::thread::sleep(Duration::from_millis(150));
        }
    };
    t.wait_for("demo watching", Duration::from_secs(40), |s| {
        s.contains("watching")
    });
    // A pod write from the event stream.
    press(&["2", "/"]);
    press(&["/pods/", "Enter"]);
    t.wait_for("a pod event", Duration::from_secs(20), |s| {
        s.contains("/registry/pods/")
    });
    press(&["Enter"]);
    let screen = t.wait_for("the pod", Duration::from_secs(10), |s| {
        s.contains("kind: Pod") || s.contains("deleted at revision")
    });
    if !screen.contains("kind: Pod") {
        // The demo deletes pods too: show the version before the deletion.
        press(&["["]);
    }
    let screen = t.wait_for("decoded pod", Duration::from_secs(10), |s| {
        s.contains("kind: Pod") && s.contains("apiVersion: v1")
    });
    assert!(screen.contains("format protobuf"), "{screen}");
    assert!(screen.contains("(= mod_revision)"), "{screen}");
    // JSON and back.
    press(&["o"]);
    t.wait_for("JSON", Duration::from_secs(5), |s| {
        s.contains("\"kind\": \"Pod\"")
    });
    press(&["o"]);
    // A node lease: back to the events, filter on the lease namespace.
    press(&["Escape", "2", "/", "C-u"]);
    press(&["kube-node-lease", "Enter"]);
    t.wait_for("a node lease renewal", Duration::from_secs(30), |s| {
        s.contains("/registry/leases/kube-node-lease/")
    });
    press(&["Enter"]);
    t.wait_for("decoded lease", Duration::from_secs(10), |s| {
        s.contains("kind: Lease")
    });
    // The detail follows new versions: wait for a second one, then diff.
    t.wait_for("two versions of the lease", Duration::from_secs(30), |s| {
        s.lines().any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.windows(3).any(|w| {
                w[1] == "versions" && w[2] == "held" && w[0].parse::<u32>().unwrap_or(0) >= 2
            })
        })
    });
    press(&["d"]);
    let screen = t.wait_for("the diff", Duration::from_secs(10), |s| {
        s.contains("Diff") && s.contains("written by")
    });
    assert!(screen.contains("spec.renewTime"), "{screen}");
    press(&["q"]);
    common::wait_until("regscope to quit on q", Duration::from_secs(10), || {
        t.pane_dead()
    });
    let screen = t.capture();
    assert!(!screen.contains("panicked"), "{screen}");
    let out = tmux_cmd(&t.socket)
        .args(["display-message", "-p", "-t", &t.session, "#{alternate_on}"])
        .output()
        .expect("display-message");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "0",
        "the alternate screen is left"
    );
}

/// The Apiserver screen (`4`) on `regscope demo` with a slow events watcher: the latency
/// section fills with `etcd` rows measured in ms, the slow watcher on events is terminated
/// by the simulated apiserver and its resume gets 410 Gone, shown on screen; `q` quits,
/// the terminal is restored and the private etcd is gone.
#[test]
fn demo_apiserver_screen_shows_latency_and_410() {
    require!(ETCD, TMUX);
    let started = Instant::now();
    let t = Tmux::start(
        160,
        50,
        // Through a shell that reports the exit status and the tty modes: tmux here
        // sometimes leaves an exited pane process unreaped, so `#{pane_dead_status}`
        // cannot be relied on.
        &format!(
            "{BIN} demo --slow-watcher events --slow-watcher-delay 50ms --rate 100; \
             echo \"regscope-exit=$?\"; stty -a; sleep 60"
        ),
    );
    let screen = t.wait_for("demo watching", Duration::from_secs(30), |s| {
        s.contains("watching")
    });
    // The private etcd's address, from the header's etcd line (`etcd 3.4.23  rev …
    // http://127.0.0.1:PORT`), to check it is gone after quitting.
    let etcd_addr: std::net::SocketAddr = screen
        .lines()
        .filter(|l| l.trim_start().starts_with("etcd ") && l.contains(" rev "))
        .flat_map(|l| l.split_whitespace())
        .find_map(|w| w.strip_prefix("http://"))
        .and_then(|a| a.trim_end_matches('/').parse().ok())
        .unwrap_or_else(|| panic!("the private etcd's URL in the header:\n{screen}"));
    t.keys(&["4"]);
    // Latency: at least one etcd row with a ms value (p50/p90/p99).
    let etcd_row_in_ms = |s: &str| {
        s.lines().any(|l| {
            let l = l.trim_start_matches(['│', '┃', ' ']);
            l.starts_with("etcd ")
                && l.split_whitespace().any(|w| {
                    w.strip_suffix("ms")
                        .is_some_and(|n| n.parse::<f64>().is_ok_and(|n| n > 0.0))
                })
        })
    };
    let screen = t.wait_for(
        "the latency section with an etcd row in ms",
        Duration::from_secs(20),
        |s| s.contains("Request latency") && etcd_row_in_ms(s),
    );
    assert!(screen.contains("Watch cache"), "{screen}");
    assert!(screen.contains("Compaction window"), "{screen}");
    // The slow events watcher falls out of the ring, is terminated and resumes into 410.
    let gone = |s: &str| -> u64 {
        s.split("410 Gone seen ")
            .skip(1)
            .filter_map(|r| r.split_whitespace().next())
            .filter_map(|n| n.replace(',', "").parse::<u64>().ok())
            .max()
            .unwrap_or(0)
    };
    let screen = t.wait_for(
        "410 Gone seen on the slow events watcher",
        Duration::from_secs(45),
        |s| gone(s) >= 1 && s.contains("(events "),
    );
    println!("410 seen after {:?}:\n{screen}", started.elapsed());
    // The apiserver's side of it: the watcher it terminated, on its next scrape.
    let terminated = |s: &str| -> u64 {
        s.split("terminated watchers ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.replace(',', "").parse().ok())
            .unwrap_or(0)
    };
    t.wait_for(
        "the apiserver's terminated watchers count",
        Duration::from_secs(15),
        |s| terminated(s) >= 1,
    );
    // The controllers' own informers: the demo's controller manager and scheduler serve
    // 1.36-style informer metrics; zoomed, each informer's row and the workqueues show.
    t.keys(&["h"]);
    t.keys(&["z"]);
    let screen = t.wait_for(
        "the controllers' informers and workqueues",
        Duration::from_secs(20),
        |s| {
            s.contains("Controllers' informers & workqueues")
                && s.contains(
                    "kube-controller-manager v1.36.0-regscope-demo: informer and workqueue metrics",
                )
                && s.lines().any(|l| l.contains("kcm") && l.contains(" pods "))
                && s.lines()
                    .any(|l| l.contains("sched") && l.contains(" nodes "))
                && s.contains("replicaset")
        },
    );
    println!("controllers:\n{screen}");
    t.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    t.keys(&["q"]);
    let screen = t.wait_for("regscope demo to quit on q", Duration::from_secs(15), |s| {
        s.contains("regscope-exit=")
    });
    assert!(screen.contains("regscope-exit=0"), "{screen}");
    assert!(!screen.contains("panicked"), "{screen}");
    // The terminal is restored: main screen, cooked mode, echo.
    let out = tmux_cmd(&t.socket)
        .args(["display-message", "-p", "-t", &t.session, "#{alternate_on}"])
        .output()
        .expect("display-message");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "0",
        "the alternate screen is left"
    );
    let screen = t.wait_for("stty -a", Duration::from_secs(5), |s| s.contains("icanon"));
    let modes: Vec<&str> = screen.split_whitespace().collect();
    for m in ["icanon", "echo", "isig"] {
        assert!(
            modes.contains(&m) && !modes.contains(&format!("-{m}").as_str()),
            "{m} restored:\n{screen}"
        );
    }
    // The demo removes its private etcd on exit.
    common::wait_until(
        &format!("the demo's private etcd at {etcd_addr} to stop listening after quitting"),
        Duration::from_secs(10),
        || std::net::TcpStream::connect_timeout(&etcd_addr, Duration::from_millis(200)).is_err(),
    );
    // A figure, not a claim: every step above is a bounded wait on what the screen shows.
    println!("took {:?}", started.elapsed());
}

/// Waits for the pane's command to exit.
fn wait_dead(t: &Tmux, what: &str) {
    common::wait_until(what, Duration::from_secs(15), || t.pane_dead());
}

/// `R` in the live console records to a file named in the header; `R` again closes it,
/// and `regscope replay` of that file opens the console with a timeline that plays, seeks
/// to a revision and quits cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_in_the_console_then_replay_it() {
    require!(ETCD, TMUX);
    let e = seeded_etcd().await;
    let mut c = e.client().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cmd = format!(
        "cd {} && HOME=/nonexistent {BIN} --endpoints {}",
        dir.path().display(),
        e.endpoint()
    );
    let t = Tmux::start(120, 40, &cmd);
    t.wait_for("the console", Duration::from_secs(20), |s| s.contains("31"));
    t.keys(&["R"]);
    t.wait_for("the recording indicator", Duration::from_secs(10), |s| {
        s.contains("● REC") && s.contains("recording to")
    });
    let mut last = 0;
    for i in 0..30 {
        let r = c
            .put(format!("/registry/pods/default/p{i}"), "x", None)
            .await
            .unwrap();
        last = r.header().unwrap().revision();
    }
    let rev = last.to_string();
    t.wait_for("the writes", Duration::from_secs(10), |s| s.contains(&rev));
    // The writes are in the file before the recording stops.
    let recording = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "rgs"))
        .expect("the recording in the working directory");
    common::wait_until(
        "the writes in the recording",
        Duration::from_secs(15),
        || recorded_so_far(&recording).is_some_and(|s| s.revision() >= last),
    );
    t.keys(&["R"]);
    let screen = t.wait_for("recording saved", Duration::from_secs(10), |s| {
        s.contains("recording saved")
    });
    assert!(!screen.contains("● REC"), "{screen}");
    t.keys(&["q"]);
    wait_dead(&t, "the console did not quit");
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "rgs"))
        .expect("a recording in the working directory");

    let t = Tmux::start(120, 40, &format!("{BIN} replay {}", file.display()));
    let screen = t.wait_for("the timeline", Duration::from_secs(20), |s| {
        s.contains("REPLAY") && s.contains('⏸')
    });
    assert!(
        screen.contains("31"),
        "the recording starts with the listed keys:\n{screen}"
    );
    // Seek to the last revision written.
    t.keys(&["t"]);
    t.wait_for("the seek prompt", Duration::from_secs(5), |s| {
        s.contains("seek to")
    });
    t.keys(&[&format!("r{last}"), "Enter"]);
    t.wait_for(
        "the replica at the revision",
        Duration::from_secs(10),
        |s| s.contains(&format!("rev {rev}")) || s.contains(&format!("rev {}", thousands(last))),
    );
    // Play at the fastest speed to the end, then quit.
    for _ in 0..7 {
        t.keys(&["+"]);
    }
    t.keys(&["space"]);
    t.wait_for("the end", Duration::from_secs(20), |s| {
        s.contains("end of the recording")
    });
    // The seek prompt takes `start` and `end` by name.
    for (to, said) in [
        ("start", "at the start of the recording"),
        ("end", "at the end of the recording"),
    ] {
        t.keys(&["t"]);
        t.wait_for("the seek prompt", Duration::from_secs(5), |s| {
            s.contains("seek to")
        });
        t.text(to);
        t.keys(&["Enter"]);
        t.wait_for(said, Duration::from_secs(10), |s| s.contains(said));
    }
    // A moment on another day is refused with its date (its clock time alone could
    // read as inside the span).
    t.keys(&["t"]);
    t.wait_for("the seek prompt", Duration::from_secs(5), |s| {
        s.contains("seek to")
    });
    t.text("2099-01-01T12:00:00Z");
    t.keys(&["Enter"]);
    t.wait_for("the date in the refusal", Duration::from_secs(10), |s| {
        s.contains("2099-01-01 ") && s.contains("is outside the recording")
    });
    t.keys(&["q"]);
    wait_dead(&t, "replay did not quit on q");
}

fn thousands(n: i64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The config file picks the theme and the screenshot folder; `S` saves the screen as SVG
/// (in that theme's colours, text kept) and text, mode 0600, and says where.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenshot_in_the_config_files_theme() {
    require!(ETCD, TMUX);
    use std::os::unix::fs::PermissionsExt;
    let e = seeded_etcd().await;
    let dir = tempfile::tempdir().unwrap();
    let shots = dir.path().join("shots");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "theme = \"high-contrast\"\nscreenshot-dir = \"{}\"\n",
            shots.display()
        ),
    )
    .unwrap();
    let cmd = format!(
        "env REGSCOPE_CONFIG={} {BIN} --endpoints {} --root {}",
        config.display(),
        e.endpoint(),
        dir.path().display()
    );
    let t = Tmux::start(120, 40, &cmd);
    let port = e.endpoint().rsplit(':').next().unwrap().to_string();
    t.wait_for(
        "header with endpoint and 31 keys",
        Duration::from_secs(20),
        |s| s.contains(&port) && s.contains("31"),
    );
    t.keys(&["S"]);
    let screen = t.wait_for("screenshot notice", Duration::from_secs(10), |s| {
        s.contains("screenshot saved")
    });
    let files: Vec<_> = std::fs::read_dir(&shots)
        .expect("screenshot dir")
        .map(|f| f.unwrap().path())
        .collect();
    let svg = files
        .iter()
        .find(|p| p.extension().is_some_and(|x| x == "svg"))
        .unwrap_or_else(|| panic!("no SVG in {files:?}\n{screen}"));
    assert!(
        screen.contains("regscope-2"),
        "the notice names the file: {screen}"
    );
    let mode = std::fs::metadata(svg).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let body = std::fs::read_to_string(svg).unwrap();
    assert!(body.starts_with("<svg"), "{}", &body[..100]);
    assert!(body.contains(&port), "the header's text is kept");
    // high-contrast: the active tab is black on white (the default theme's is on cyan).
    assert!(body.contains(r##"fill="#ffffff"/>"##), "white backgrounds");
    assert!(
        !body.contains(r##"fill="#00cdcd"/>"##),
        "no default-theme cyan tab"
    );
    let text = std::fs::read_to_string(svg.with_extension("txt")).unwrap();
    assert!(text.contains("Growth") && text.contains(&port), "{text}");
    // A pane resize relayouts: the footer moves to the new last row.
    let st = tmux_cmd(&t.socket)
        .args(["resize-window", "-t", &t.session, "-x", "100", "-y", "30"])
        .status()
        .unwrap();
    assert!(st.success());
    t.wait_for("relayout at 100x30", Duration::from_secs(10), |s| {
        let lines: Vec<&str> = s.lines().collect();
        lines.len() == 30
            && lines[29].contains("quit")
            && lines.iter().all(|l| l.chars().count() <= 100)
    });
    t.keys(&["q"]);
    common::wait_until("regscope to quit on q", Duration::from_secs(10), || {
        t.pane_dead()
    });
}

/// A JSON object under `key` whose newest managedFields entry is `manager` doing
/// `operation` through `subresource` (empty: the main resource), as kube-apiserver stores it.
fn written_by(key: &str, manager: &str, operation: &str, subresource: &str, i: usize) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": key.rsplit('/').next().unwrap(), "namespace": "default",
            "managedFields": [
                {"manager": "creator", "operation": "Update", "time": "2024-01-01T00:00:00Z"},
                {"manager": manager, "operation": operation, "subresource": subresource,
                 "time": format!("2024-01-02T00:00:{:02}Z", i % 60)}]},
        "data": {"i": i.to_string()}
    }))
    .unwrap()
}

/// Who writes: a workload whose managers the test controls shows up on Growth (writers
/// table and each resource's top writer), under the resource in Keys, and per event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_panel_names_the_managers_the_workload_uses() {
    require!(ETCD, TMUX);
    let e = seeded_etcd().await;
    let mut c = e.client().await.unwrap();
    let t = Tmux::start(200, 60, &format!("{BIN} --endpoints {}", e.endpoint()));
    t.wait_for("the console", Duration::from_secs(20), |s| s.contains("31"));
    // alpha-controller: 12 updates of configmaps, then deletes 3 of them; beta-applier: 7
    // server-side applies of widgets; gamma: 5 status updates of pods.
    let mut last = 0;
    for i in 0..12 {
        let k = format!("/registry/configmaps/default/a{i}");
        c.put(
            k.clone(),
            written_by(&k, "alpha-controller", "Update", "", i),
            None,
        )
        .await
        .unwrap();
    }
    for i in 0..7 {
        let k = format!("/registry/example.com/widgets/default/w{i}");
        c.put(
            k.clone(),
            written_by(&k, "beta-applier", "Apply", "", i),
            None,
        )
        .await
        .unwrap();
    }
    for i in 0..5 {
        let k = format!("/registry/pods/default/g{i}");
        c.put(
            k.clone(),
            written_by(&k, "gamma", "Update", "status", i),
            None,
        )
        .await
        .unwrap();
    }
    for i in 0..3 {
        let r = c
            .delete(format!("/registry/configmaps/default/a{i}"), None)
            .await
            .unwrap();
        last = r.header().unwrap().revision();
    }
    let rev = last.to_string();
    let screen = t.wait_for("every write applied", Duration::from_secs(15), |s| {
        s.contains(&rev) && s.contains("gamma")
    });
    let writers = |s: &str| -> Vec<Vec<String>> {
        let start = s
            .lines()
            .position(|l| l.contains("Writers by managedFields"))
            .unwrap_or_else(|| panic!("no writers table:\n{s}"));
        s.lines()
            .skip(start + 2)
            .take_while(|l| !l.contains('└'))
            .map(|l| {
                l.split('│')
                    .nth(1)
                    .unwrap_or("")
                    .split_whitespace()
                    .map(str::to_string)
                    .collect()
            })
            .filter(|r: &Vec<String>| !r.is_empty())
            .collect()
    };
    let rows = writers(&screen);
    let find = |m: &str| {
        rows.iter()
            .find(|r| r[0] == m)
            .unwrap_or_else(|| panic!("no writer {m}:\n{screen}"))
            .clone()
    };
    // writer, how, resource, put/s, del/s, bytes/s (number and unit), puts, deletes, bytes.
    let alpha = find("alpha-controller");
    assert_eq!(alpha[1..3], ["Update", "configmaps"], "{alpha:?}");
    assert_eq!(
        alpha[alpha.len() - 4..alpha.len() - 2],
        ["12", "0"],
        "{alpha:?}"
    );
    // The three deletes name nobody: kube-apiserver records no deleter.
    let deleter = find("(deleter");
    assert_eq!(deleter[1..3], ["unknown)", "configmaps"], "{deleter:?}");
    assert_eq!(
        deleter[deleter.len() - 4..deleter.len() - 2],
        ["0", "3"],
        "{deleter:?}"
    );
    let beta = find("beta-applier");
    assert_eq!(beta[1..3], ["Apply", "widgets.example.com"], "{beta:?}");
    assert_eq!(beta[beta.len() - 4..beta.len() - 2], ["7", "0"], "{beta:?}");
    let gamma = find("gamma");
    assert_eq!(gamma[1..3], ["Update/status", "pods"], "{gamma:?}");
    assert_eq!(
        gamma[gamma.len() - 4..gamma.len() - 2],
        ["5", "0"],
        "{gamma:?}"
    );
    // Each resource's top writer in the resources table.
    let res_row = |r: &str| {
        screen
            .lines()
            .find(|l| l.starts_with(&format!("│{r} ")))
            .unwrap_or_else(|| panic!("no resource row {r}:\n{screen}"))
            .to_string()
    };
    assert!(
        res_row("configmaps").contains("alpha-controller"),
        "{screen}"
    );
    assert!(
        res_row("pods").contains("gamma (Update/status)"),
        "{screen}"
    );
    assert!(
        res_row("widgets.example.com").contains("beta-applier (Apply)"),
        "{screen}"
    );

    // Events: the writer of each PUT; a filter on a writer's name keeps only its events.
    t.keys(&["2"]);
    t.wait_for("the events", Duration::from_secs(5), |s| {
        s.contains("writer")
    });
    for k in [&["/"][..], &["-l", "beta-applier"], &["Enter"]] {
        t.keys(k);
        // Key pacing, the point of this sleep: each send-keys is read as its own input.
        std::thread::sleep(Duration::from_millis(300));
    }
    let ev = t.wait_for("the filtered events", Duration::from_secs(5), |s| {
        s.contains("7 shown")
    });
    assert!(ev.contains("beta-applier (Apply)"), "{ev}");
    assert!(!ev.contains("alpha-controller"), "{ev}");

    // Keys: the selected resource's writers under the resource list.
    t.keys(&["3"]);
    t.wait_for("the key browser", Duration::from_secs(5), |s| {
        s.contains("Resources")
    });
    let keys = t.wait_for(
        "the writers of the selected resource",
        Duration::from_secs(5),
        |s| s.contains("Writers of "),
    );
    assert!(keys.contains("Writers of configmaps"), "{keys}");
    assert!(keys.contains("alpha-controller"), "{keys}");
    t.keys(&["q"]);
    wait_dead(&t, "the console did not quit");
}

/// The command palette (`:`), driven in the real binary: a fuzzy action, a resource, a key,
/// a revision in the event log and one that is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_palette_runs_actions_and_goes_to_resources_keys_and_revisions() {
    require!(ETCD, TMUX);
    let e = seeded_etcd().await;
    let mut c = e.client().await.unwrap();
    let t = Tmux::start(160, 40, &format!("{BIN} --endpoints {}", e.endpoint()));
    t.wait_for("the console", Duration::from_secs(20), |s| s.contains("31"));
    let pod_rev = c
        .put("/registry/pods/default/palette-pod", "{}", None)
        .await
        .unwrap()
        .header()
        .unwrap()
        .revision();
    t.wait_for("the pod", Duration::from_secs(10), |s| {
        s.contains(&format!("rev {pod_rev}"))
    });
    let palette = |text: &str| {
        t.keys(&[":"]);
        t.wait_for("the palette", Duration::from_secs(5), |s| {
            s.contains("Command palette")
        });
        t.keys(&["-l", text]);
        // Key pacing, the point of this sleep: the typed text is read before the next key.
        std::thread::sleep(Duration::from_millis(300));
    };
    // Letters of an action, in order: "tgpau" finds pause.
    palette("tgpau");
    let s = t.wait_for("pause on top", Duration::from_secs(5), |s| {
        s.contains("pause / resume")
    });
    assert!(
        s.contains("toggle_pause"),
        "the action's name and keys:\n{s}"
    );
    t.keys(&["Enter"]);
    t.wait_for("paused", Duration::from_secs(5), |s| s.contains("PAUSED"));
    t.keys(&["space"]);
    t.wait_for("resumed", Duration::from_secs(5), |s| !s.contains("PAUSED"));
    // A resource opens the key browser on it.
    palette("pods");
    t.keys(&["Enter"]);
    t.wait_for("the pods in Keys", Duration::from_secs(5), |s| {
        s.contains("/registry/pods/ 1 key")
            && !s.contains("/registry/pods/ 1 keys")
            && s.contains("palette-pod")
    });
    // A key path opens the key.
    palette("/registry/configmaps/default/cm05");
    t.wait_for("the key offered", Duration::from_secs(5), |s| {
        s.contains("open key /registry/configmaps/default/cm05")
    });
    t.keys(&["Enter"]);
    t.wait_for("the key opened", Duration::from_secs(5), |s| {
        s.contains("cm05") && s.contains("history")
    });
    t.keys(&["Escape"]);
    // A revision in the event log selects its event; one outside says so.
    palette(&format!("r{pod_rev}"));
    t.keys(&["Enter"]);
    t.wait_for("Events", Duration::from_secs(5), |s| {
        s.contains("Events") && s.contains("palette-pod")
    });
    palette("r999999");
    t.keys(&["Enter"]);
    t.wait_for("the miss explained", Duration::from_secs(5), |s| {
        s.contains("revision 999999 is not in the event log")
    });
    // Escape closes the palette without running anything.
    t.keys(&[":"]);
    t.wait_for("the palette", Duration::from_secs(5), |s| {
        s.contains("Command palette")
    });
    t.keys(&["Escape"]);
    t.wait_for("closed", Duration::from_secs(5), |s| {
        !s.contains("Command palette")
    });
    // Key pacing, the point of this sleep: an Escape and the next key in one read are Alt+key.
    std::thread::sleep(Duration::from_millis(200));
    t.keys(&["q"]);
    wait_dead(&t, "the console did not quit");
}

/// `--show-secrets` over a recording made without it: a warning says the Secret data is
/// redacted, and the Secret's placeholders stay `<redacted: N bytes>` (decoded, they
/// would pass for real values).
#[test]
fn show_secrets_over_a_redacted_recording_shows_redacted() {
    require!(TMUX);
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings/demo.rgs");
    let t = Tmux::start(
        160,
        40,
        &format!(
            "HOME=/nonexistent {BIN} replay --show-secrets --at end {}",
            file.display()
        ),
    );
    t.wait_for(
        "the timeline and the warning",
        Duration::from_secs(20),
        |s| s.contains("REPLAY") && s.contains("its Secret data is redacted"),
    );
    t.keys(&[":"]);
    t.wait_for("the palette", Duration::from_secs(5), |s| {
        s.contains("Command palette")
    });
    t.text("/registry/secrets/default/demo-credentials");
    t.wait_for("the key offered", Duration::from_secs(5), |s| {
        s.contains("open key /registry/secrets/default/demo-credentials")
    });
    t.keys(&["Enter"]);
    let screen = t.wait_for("the Secret decoded", Duration::from_secs(10), |s| {
        s.contains("password") && s.contains("history")
    });
    assert!(
        screen.contains("<redacted:") && !screen.contains("KioqKio"),
        "redacted placeholders, not their base64:\n{screen}"
    );
    t.keys(&["Escape", "q"]);
    wait_dead(&t, "replay did not quit on q");
}

/// The console reads a time in the zone it shows and says that zone in its header: the
/// time `replay --check` prints for a marker under `TZ`, its clock part typed into the
/// console's seek under the same `TZ`, lands on that marker (the compaction it marks is in
/// the header), in New York and in Kolkata alike.
#[test]
fn a_time_from_replay_check_typed_into_the_seek_lands_on_its_marker_in_any_zone() {
    require!(TMUX);
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings/demo.rgs");
    for (tz, label) in [
        ("America/New_York", "UTC-05:00"),
        ("Asia/Kolkata", "UTC+05:30"),
    ] {
        let check = std::process::Command::new(BIN)
            .env("TZ", tz)
            .args(["replay", "--check", file.to_str().unwrap()])
            .output()
            .unwrap();
        let check = String::from_utf8(check.stdout).unwrap();
        let line = check
            .lines()
            .find(|l| l.contains("compaction at revision 1588"))
            .unwrap_or_else(|| panic!("{check}"));
        let full = line.split_whitespace().nth(1).unwrap();
        let clock = &full[11..23];
        let t = Tmux::start(
            120,
            40,
            &format!("env TZ={tz} {BIN} replay {}", file.display()),
        );
        t.wait_for("the timeline and the zone", Duration::from_secs(20), |s| {
            s.contains("REPLAY") && s.contains(label)
        });
        t.keys(&["t"]);
        t.wait_for("the seek prompt", Duration::from_secs(5), |s| {
            s.contains("seek to")
        });
        t.text(clock);
        t.keys(&["Enter"]);
        t.wait_for(
            &format!("the compaction at {clock} {tz}"),
            Duration::from_secs(10),
            |s| s.contains("compacted 1,588"),
        );
        t.keys(&["q"]);
        wait_dead(&t, "replay did not quit on q");
    }
}

/// `b` in a replay asks for a line of text and, on Enter, saves it as a bookmark in the
/// file beside the recording (a copy of the demo's here), which then lists it; the
/// recording itself is not written.
#[test]
fn a_bookmark_typed_in_a_replay_lands_beside_the_recording() {
    require!(TMUX);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("demo.rgs");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings/demo.rgs"),
        &file,
    )
    .unwrap();
    let before = std::fs::read(&file).unwrap();
    let t = Tmux::start(
        120,
        40,
        &format!(
            "HOME=/nonexistent {BIN} replay --at +40s {}",
            file.display()
        ),
    );
    t.wait_for("the timeline", Duration::from_secs(20), |s| {
        s.contains("REPLAY")
    });
    t.keys(&["b"]);
    t.wait_for("the bookmark prompt", Duration::from_secs(5), |s| {
        s.contains("bookmark (Enter saves, Esc cancels)")
    });
    t.text("outage starts here");
    t.keys(&["Enter"]);
    t.wait_for("the bookmark saved", Duration::from_secs(10), |s| {
        s.contains("bookmark saved in")
    });
    t.keys(&["q"]);
    wait_dead(&t, "replay did not quit on q");
    let side = std::fs::read_to_string(dir.path().join("demo.rgs.bookmarks")).unwrap();
    let lines: Vec<&str> = side.lines().collect();
    assert_eq!(lines.len(), 1, "{side}");
    let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(v["text"], "outage starts here", "{side}");
    assert!(v["revision"].as_i64().unwrap() > 0, "{side}");
    assert!(v["at"].as_str().unwrap().ends_with('Z'), "{side}");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "the recording is not written"
    );
}
