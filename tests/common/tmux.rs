//! A tmux session for driving the real binary end to end (send-keys, capture-pane).

use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux session on its own server socket (`tmux -L`), so parallel tests never race to
/// start or share one server.
pub struct Tmux {
    pub session: String,
    pub socket: String,
}

pub fn tmux_cmd(socket: &str) -> Command {
    let mut c = Command::new("tmux");
    c.args(["-L", socket]);
    c
}

impl Tmux {
    pub fn start(cols: u16, rows: u16, cmd: &str) -> Tmux {
        let session = format!("regscope-e2e-{}", rand::random::<u32>());
        let socket = format!("{session}-sock");
        let st = tmux_cmd(&socket)
            .args([
                "new-session",
                "-d",
                "-s",
                &session,
                "-x",
                &cols.to_string(),
                "-y",
                &rows.to_string(),
                cmd,
            ])
            .env("TERM", "xterm-256color")
            .status()
            .expect("tmux");
        assert!(st.success(), "tmux new-session failed");
        // Keep the pane after the command exits so we can read what it left behind.
        let _ = tmux_cmd(&socket)
            .args(["set-option", "-t", &session, "remain-on-exit", "on"])
            .status();
        // Without this, an Escape followed quickly by a key reaches the app as Alt+key.
        let _ = tmux_cmd(&socket)
            .args(["set-option", "-s", "escape-time", "0"])
            .status();
        Tmux { session, socket }
    }

    pub fn capture(&self) -> String {
        let out = tmux_cmd(&self.socket)
            .args(["capture-pane", "-p", "-t", &self.session])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.session];
        args.extend_from_slice(keys);
        assert!(tmux_cmd(&self.socket)
            .args(&args)
            .status()
            .unwrap()
            .success());
    }

    /// Types `text` as it is (`send-keys -l`): a word such as `end` is not taken for the
    /// key of that name.
    pub fn text(&self, text: &str) {
        assert!(tmux_cmd(&self.socket)
            .args(["send-keys", "-t", &self.session, "-l", text])
            .status()
            .unwrap()
            .success());
    }

    pub fn wait_for(&self, what: &str, timeout: Duration, cond: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let screen = self.capture();
            if cond(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pub fn pane_dead(&self) -> bool {
        let out = tmux_cmd(&self.socket)
            .args(["display-message", "-p", "-t", &self.session, "#{pane_dead}"])
            .output()
            .expect("display-message");
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = tmux_cmd(&self.socket).args(["kill-server"]).status();
    }
}
