//! Opens a local HTML file in real headless Chromium and reports what the browser saw:
//! the console messages at error level (`console.error`, uncaught exceptions, and the
//! browser's own errors such as a Content-Security-Policy refusal), every network request
//! the page made, the DOM after the load event, and optionally a PNG screenshot.
//!
//! Chromium is driven over its DevTools protocol on a pipe (`--remote-debugging-pipe`: the
//! browser reads NUL-terminated JSON commands on fd 3 and writes replies and events on fd
//! 4), so the console levels and the page's requests are the browser's own account (the
//! `Log`, `Runtime` and `Network` domains of the page's target; the browser's background
//! traffic belongs to no page and is not counted), not a guess from the HTML. The browser
//! runs as a container's root can run it (`--no-sandbox`), with a fresh profile in a
//! temporary folder and its background networking off. Everything is bounded by a deadline:
//! a hung browser is killed and the test fails.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How the page is shown: on screen in the light or the dark scheme (CSS
/// `prefers-color-scheme`), or as printed (CSS `@media print`, light).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    Light,
    Dark,
    Print,
}

/// What loading a page produced.
#[derive(Debug, Default)]
pub struct PageLoad {
    /// Console messages at error level, as `source: text` (`console-api`, `javascript` for
    /// an uncaught exception, or the browser's `Log` source such as `security`, `network`).
    pub console_errors: Vec<String>,
    /// Every console message at any level, as `level source: text` (for failure messages).
    pub console_all: Vec<String>,
    /// The URL of every request the page made other than the file itself, in order (one
    /// the browser blocked before it left, such as by the page's Content-Security-Policy,
    /// is in `blocked` instead).
    pub requests: Vec<String>,
    /// Requests the page asked for and the browser refused, as `url (reason)`.
    pub blocked: Vec<String>,
    /// The document's HTML after the load event.
    pub dom: String,
    /// The computed colours of the page's background and of the first chart's text
    /// (`rgb(r, g, b)`; empty when there is no chart), as the browser resolved the CSS.
    pub background: String,
    pub chart_text: String,
    /// Whether the first table inside a `<details>` is rendered (the browser's
    /// `checkVisibility`: false when folded away, as a closed `<details>` hides its
    /// content, or absent).
    pub details_table_visible: bool,
}

/// How long one page may take from the browser's start to its exit.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// The browser process; killed when dropped (a failed or hung test leaves none behind).
struct Browser {
    child: Child,
    to: std::fs::File,
    from: mpsc::Receiver<Value>,
    next_id: u64,
    deadline: Instant,
    /// Events that arrived while waiting for a reply.
    events: Vec<Value>,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A pipe as (read end, write end), both close-on-exec.
fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two new descriptors into the array, which we then own.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just created and are owned by nothing else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

impl Browser {
    fn start(height: u32) -> Browser {
        let profile = tempfile::tempdir().expect("profile folder");
        // Commands: we write `cmd_w`, the browser reads fd 3. Replies: fd 4 → `out_r`.
        let (cmd_r, cmd_w) = pipe();
        let (out_r, out_w) = pipe();
        let (cr, ow) = (cmd_r.as_raw_fd(), out_w.as_raw_fd());
        let mut cmd = Command::new("chromium");
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-default-apps",
            "--disable-extensions",
            "--disable-sync",
            "--metrics-recording-only",
            "--no-pings",
            "--hide-scrollbars",
            "--mute-audio",
            "--remote-debugging-pipe",
            &format!("--window-size=1280,{height}"),
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        // SAFETY: only async-signal-safe calls (fcntl, dup2) between fork and exec. The
        // ends are first moved above 10 so that placing one on 3 cannot close the other.
        unsafe {
            cmd.pre_exec(move || {
                let hi_r = libc::fcntl(cr, libc::F_DUPFD, 10);
                let hi_w = libc::fcntl(ow, libc::F_DUPFD, 10);
                if hi_r < 0 || hi_w < 0 || libc::dup2(hi_r, 3) < 0 || libc::dup2(hi_w, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(hi_r);
                libc::close(hi_w);
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("starting chromium: {e}"));
        drop((cmd_r, out_w));
        let (tx, rx) = mpsc::channel();
        let mut reader = std::fs::File::from(out_r);
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 64 * 1024];
            loop {
                let n = match reader.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&chunk[..n]);
                while let Some(end) = buf.iter().position(|b| *b == 0) {
                    let msg: Vec<u8> = buf.drain(..=end).collect();
                    if let Ok(v) = serde_json::from_slice::<Value>(&msg[..msg.len() - 1]) {
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Browser {
            child,
            to: std::fs::File::from(cmd_w),
            from: rx,
            next_id: 0,
            deadline: Instant::now() + DEADLINE,
            events: Vec::new(),
            _profile: profile,
        }
    }

    /// The next message from the browser, or a failed test at the deadline.
    fn recv(&mut self, waiting_for: &str) -> Value {
        let left = self.deadline.saturating_duration_since(Instant::now());
        match self.from.recv_timeout(left) {
            Ok(v) => v,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                panic!("chromium: no {waiting_for} within {DEADLINE:?} (killed it)")
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = self.child.wait().ok();
                panic!("chromium closed its pipe while waiting for {waiting_for} (exit {status:?})")
            }
        }
    }

    /// Sends a command (to the page's session when given) and returns its result.
    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).expect("json");
        bytes.push(0);
        self.to
            .write_all(&bytes)
            .unwrap_or_else(|e| panic!("chromium: sending {method}: {e}"));
        loop {
            let v = self.recv(method);
            if v.get("id").and_then(Value::as_u64) == Some(id) {
                if let Some(err) = v.get("error") {
                    panic!("chromium: {method} failed: {err}");
                }
                return v["result"].clone();
            }
            self.events.push(v);
        }
    }

    /// Waits for an event of the page's session named `method`.
    fn wait_event(&mut self, method: &str) {
        if self.events.iter().any(|e| e["method"] == method) {
            return;
        }
        loop {
            let v = self.recv(method);
            let hit = v["method"] == method;
            self.events.push(v);
            if hit {
                return;
            }
        }
    }
}

/// Loads `file` in headless Chromium, `height` pixels of a 1280-wide window in the light or
/// dark scheme, and reports
/// what happened ([`PageLoad`]); with `screenshot`, also saves the window as a PNG there.
/// Panics when the browser cannot be started, fails a command, or passes [`DEADLINE`].
pub fn load(file: &Path, look: Look, height: u32, screenshot: Option<&Path>) -> PageLoad {
    let file = file.canonicalize().expect("the page exists");
    let url = format!("file://{}", file.display());
    let mut b = Browser::start(height);
    let target = b.call(None, "Target.createTarget", json!({ "url": "about:blank" }));
    let target_id = target["targetId"].as_str().expect("targetId").to_string();
    let attached = b.call(
        None,
        "Target.attachToTarget",
        json!({ "targetId": target_id, "flatten": true }),
    );
    let s = attached["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_string();
    let s = Some(s.as_str());
    for domain in [
        "Page.enable",
        "Runtime.enable",
        "Log.enable",
        "Network.enable",
    ] {
        b.call(s, domain, json!({}));
    }
    b.call(
        s,
        "Emulation.setDeviceMetricsOverride",
        json!({ "width": 1280, "height": height, "deviceScaleFactor": 1, "mobile": false }),
    );
    let scheme = if look == Look::Dark { "dark" } else { "light" };
    let media = if look == Look::Print {
        "print"
    } else {
        "screen"
    };
    b.call(
        s,
        "Emulation.setEmulatedMedia",
        json!({
            "media": media,
            "features": [{ "name": "prefers-color-scheme", "value": scheme }]
        }),
    );
    b.events.clear();
    let nav = b.call(s, "Page.navigate", json!({ "url": url }));
    if let Some(err) = nav.get("errorText") {
        panic!("chromium could not open {url}: {err}");
    }
    b.wait_event("Page.loadEventFired");
    // One more round trip lets late console entries arrive before they are counted.
    let doc = b.call(s, "DOM.getDocument", json!({ "depth": 0 }));
    let root = doc["root"]["nodeId"].clone();
    let dom = b.call(s, "DOM.getOuterHTML", json!({ "nodeId": root }))["outerHTML"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // DevTools' own evaluation, which the page's policy (no script at all) does not bind.
    let probe = b.call(
        s,
        "Runtime.evaluate",
        json!({
            "expression": "JSON.stringify([getComputedStyle(document.documentElement).backgroundColor, \
                (t => t ? getComputedStyle(t).fill : '')(document.querySelector('svg.chart text')), \
                (t => t ? String(t.checkVisibility()) : 'false')(document.querySelector('details table'))])",
            "returnByValue": true
        }),
    );
    let probe: Vec<String> =
        serde_json::from_str(probe["result"]["value"].as_str().unwrap_or("[]")).unwrap_or_default();
    if let Some(path) = screenshot {
        let shot = b.call(s, "Page.captureScreenshot", json!({ "format": "png" }));
        let data = shot["data"].as_str().expect("screenshot data");
        use base64::Engine;
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .expect("screenshot is base64");
        std::fs::write(path, png).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    let mut out = PageLoad {
        dom,
        background: probe.first().cloned().unwrap_or_default(),
        chart_text: probe.get(1).cloned().unwrap_or_default(),
        details_table_visible: probe.get(2).is_some_and(|v| v == "true"),
        ..Default::default()
    };
    let events = std::mem::take(&mut b.events);
    // Requests the browser blocked (by id), with the reason it gives.
    let blocked: std::collections::HashMap<&str, &str> = events
        .iter()
        .filter(|e| e["method"] == "Network.loadingFailed")
        .filter_map(|e| {
            let p = &e["params"];
            Some((p["requestId"].as_str()?, p["blockedReason"].as_str()?))
        })
        .collect();
    for e in &events {
        let p = &e["params"];
        match e["method"].as_str().unwrap_or_default() {
            "Runtime.consoleAPICalled" => {
                let text: Vec<String> = p["args"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|a| match &a["value"] {
                        Value::String(s) => s.clone(),
                        Value::Null => a["description"].as_str().unwrap_or_default().to_string(),
                        v => v.to_string(),
                    })
                    .collect();
                let level = p["type"].as_str().unwrap_or_default();
                let line = format!("console-api: {}", text.join(" "));
                out.console_all.push(format!("{level} {line}"));
                if matches!(level, "error" | "assert") {
                    out.console_errors.push(line);
                }
            }
            "Runtime.exceptionThrown" => {
                let d = &p["exceptionDetails"];
                let text = d["exception"]["description"]
                    .as_str()
                    .or(d["text"].as_str())
                    .unwrap_or_default();
                out.console_all.push(format!("error javascript: {text}"));
                out.console_errors.push(format!("javascript: {text}"));
            }
            "Log.entryAdded" => {
                let entry = &p["entry"];
                let level = entry["level"].as_str().unwrap_or_default();
                let line = format!(
                    "{}: {}",
                    entry["source"].as_str().unwrap_or_default(),
                    entry["text"].as_str().unwrap_or_default()
                );
                out.console_all.push(format!("{level} {line}"));
                if level == "error" {
                    out.console_errors.push(line);
                }
            }
            "Network.requestWillBeSent" => {
                let u = p["request"]["url"].as_str().unwrap_or_default();
                let id = p["requestId"].as_str().unwrap_or_default();
                match blocked.get(id) {
                    Some(reason) => out.blocked.push(format!("{u} ({reason})")),
                    None if u != url => out.requests.push(u.to_string()),
                    None => {}
                }
            }
            _ => {}
        }
    }
    // The browser may exit before it answers: no reply is awaited.
    let _ =
        b.to.write_all(b"{\"id\":999999,\"method\":\"Browser.close\",\"params\":{}}\0");
    let limit = Instant::now() + Duration::from_secs(10);
    while Instant::now() < limit {
        if let Ok(Some(_)) = b.child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    out
}
