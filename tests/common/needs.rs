//! What a test needs that the repository does not hold (the shared golden data in
//! `../shared/testdata`, and the etcd, etcdctl, tmux, openssl, `script`, chromium,
//! prometheus, promtool and systemd-analyze programs), and the one rule for when it is missing, set by `REGSCOPE_TEST_REQUIRE` (its
//! code is [`rule`], which the library's unit tests follow too):
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

use std::path::PathBuf;

pub mod rule;

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
pub const CHROMIUM: Need = Need::Program("chromium");
pub const PROMETHEUS: Need = Need::Program("prometheus");
pub const PROMTOOL: Need = Need::Program("promtool");
pub const SYSTEMD_ANALYZE: Need = Need::Program("systemd-analyze");

/// `../shared/testdata`, or the folder `REGSCOPE_TESTDATA` names (whether or not it is
/// there).
pub fn testdata_path() -> PathBuf {
    rule::testdata_path()
}

impl Need {
    /// What is missing and how to get it (`None`: it is there).
    fn missing(self) -> Option<String> {
        match self {
            Need::Testdata => rule::folder_missing(&testdata_path()),
            Need::Program(name) => regscope::demo::etcd_server::find_on_path(name)
                .is_none()
                .then(|| format!("{name} is not installed: scripts/setup.sh installs it")),
        }
    }
}

/// Whether every need is met. When one is not: panics naming it (`all`, the default), or
/// prints a loud line naming it to stderr and returns `false` (`none`). Panics on any other
/// value of the setting.
pub fn met(needs: &[Need]) -> bool {
    let missing: Vec<String> = needs.iter().filter_map(|n| n.missing()).collect();
    rule::met_under(rule::setting().as_deref(), &missing)
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
