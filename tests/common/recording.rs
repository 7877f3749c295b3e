//! Helpers shared by the recording tests of both binaries (offline and against etcd): the
//! binary, the test Secret whose plaintext must never reach a file, snapshots of a
//! recording, and whole-session fingerprints to compare a replay with.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use regscope::demo::objects::encode_object;
use regscope::store::Session;
use regscope::tui::{App, Settings};

pub const BIN: &str = env!("CARGO_BIN_EXE_regscope");

/// The plaintext of the test Secret: must never appear in a redacted recording.
pub const PLAINTEXT: &str = "s3cr3t-plaintext-that-must-not-leak-42";

pub fn secret_value(name: &str) -> Vec<u8> {
    let mut data = std::collections::BTreeMap::new();
    data.insert("password".to_string(), PLAINTEXT.as_bytes().to_vec());
    encode_object(&k8s_pb::api::core::v1::Secret {
        metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        }),
        data,
        r#type: Some("Opaque".into()),
        ..Default::default()
    })
}

pub fn snapshot_from(file: &Path, at: Option<&str>) -> serde_json::Value {
    let mut args = vec!["snapshot".to_string(), "--json".into(), "--from".into()];
    args.push(file.display().to_string());
    if let Some(a) = at {
        args.push(format!("--at={a}"));
    }
    let out = Command::new(BIN).args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The replica's state in a snapshot: what a fresh list of etcd also reports (the event
/// counters, gaps and compactions seen are the session's history, not etcd's state).
pub fn state(v: &serde_json::Value) -> serde_json::Value {
    let resources: Vec<serde_json::Value> = v["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["keys"].as_u64().unwrap_or(0) > 0)
        .map(|r| serde_json::json!([r["resource"], r["keys"], r["bytes"]]))
        .collect();
    serde_json::json!({
        "revision": v["revision"],
        "keys": v["keys"],
        "bytes": v["bytes"],
        "resources": resources,
    })
}

/// The session at the end of what a recording still being written holds so far (a
/// recorder writes its frames out about once a second), or `None` while the file cannot be
/// read yet. For waiting on a recorder instead of sleeping.
pub fn recorded_so_far(file: &Path) -> Option<Session> {
    let mut player = regscope::record::Player::open(file).ok()?;
    Some(player.seek(regscope::record::Target::End))
}

pub fn at(s: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + s)
}

pub fn frame(session: Session) -> String {
    let mut app = App::new(session, Settings::default());
    let backend = ratatui::backend::TestBackend::new(120, 40);
    let mut term = ratatui::Terminal::new(backend).unwrap();
    let mut out = String::new();
    for panel in ['1', '2', '3', '4'] {
        app.handle_key(&crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char(panel),
            crossterm::event::KeyModifiers::NONE,
        ));
        term.draw(|f| regscope::tui::views::draw(&app, f)).unwrap();
        out.push_str(&format!("{:?}", term.backend().buffer()));
    }
    out
}

/// What a session holds as `snapshot --json --keys` shows it, and its clock.
pub fn whole(s: &Session) -> (String, SystemTime, u64) {
    (
        regscope::cli::snapshot::snapshot_of(s, true).unwrap(),
        s.now(),
        s.applied(),
    )
}

pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
