//! What a test needs that the repository does not hold (the shared golden data in
//! `../shared/testdata`, and the etcd, etcdctl, tmux, openssl and `script` programs), and
//! the one rule for when it is missing, set by `REGSCOPE_TEST_REQUIRE`:
//!
//! - `all` (the default, and what `scripts/test.sh` sets): the test fails, naming what is
//!   missing and how to install it. A test never passes by skipping.
//! - `none` (for a developer without the tools): the test prints a loud line naming what is
//!   missing and returns, which the harness reports as a pass: a run with this setting
//!   proves nothing about those tests.
//!
//! A test states its needs on its first line with [`require!`](crate::common::require)
//! (`require!(ETCD, TESTDATA);`); a part of a test that needs something more asks
//! [`met`] and runs only when it says yes.

use std::io::Write;
use std::path::{Path, PathBuf};

/// One thing a test needs from outside the repository.
#[derive(Clone, Copy, Debug)]
pub enum Need {
    /// `../shared/testdata`, beside the repository.
    Testdata,
    /// A program on PATH, by name.
    Program(&'static str),
}

pub const TESTDATA: Need = Need::Testdata;
pub const ETCD: Need = Need::Program("etcd");
pub const ETCDCTL: Need = Need::Program("etcdctl");
pub const TMUX: Need = Need::Program("tmux");
pub const OPENSSL: Need = Need::Program("openssl");
pub const SCRIPT: Need = Need::Program("script");

/// The setting's name.
pub const SETTING: &str = "REGSCOPE_TEST_REQUIRE";

/// `../shared/testdata` (whether or not it is there).
pub fn testdata_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/testdata")
}

impl Need {
    fn present(self) -> bool {
        match self {
            Need::Testdata => testdata_path().is_dir(),
            Need::Program(name) => regscope::demo::etcd_server::find_on_path(name).is_some(),
        }
    }

    /// What is missing and how to get it.
    fn missing(self) -> String {
        match self {
            Need::Testdata => format!(
                "{} is absent: the golden data must sit beside the repository as ../shared/testdata",
                testdata_path().display()
            ),
            Need::Program(name) => {
                format!("{name} is not installed: scripts/setup.sh installs it")
            }
        }
    }
}

/// Whether a missing need fails the test (`true`, the default) or skips it.
fn missing_fails() -> bool {
    match std::env::var(SETTING).as_deref() {
        Err(_) | Ok("all") => true,
        Ok("none") => false,
        Ok(other) => panic!("{SETTING}={other}: expected `all` (the default) or `none`"),
    }
}

/// Whether every need is met. When one is not: panics naming it (`all`, the default), or
/// prints a loud line naming it to stderr and returns `false` (`none`). Panics on any other
/// value of the setting.
pub fn met(needs: &[Need]) -> bool {
    let fails = missing_fails();
    let missing: Vec<String> = needs
        .iter()
        .filter(|n| !n.present())
        .map(|n| n.missing())
        .collect();
    if missing.is_empty() {
        return true;
    }
    let what = missing.join("; ");
    if fails {
        panic!("{what} (set {SETTING}=none to skip the tests that need it instead)");
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("this test")
        .to_string();
    // Straight to stderr, not `eprintln!`: the harness hides what a passing test prints.
    let _ = writeln!(
        std::io::stderr(),
        "!!!! SKIPPED {test}: {what} ({SETTING}=none); it did not run"
    );
    false
}

/// Returns from the test (after the loud line of [`met`]) unless every named need of
/// [`needs`](crate::common::needs) is met; fails it instead under the default setting.
#[allow(unused_macros)] // binaries whose tests need nothing from outside
macro_rules! require {
    ($($need:ident),+ $(,)?) => {
        if !$crate::common::needs::met(&[$($crate::common::needs::$need),+]) {
            return;
        }
    };
}
pub(crate) use require;
