//! The one rule for a test whose needs from outside the repository are missing, set by
//! `REGSCOPE_TEST_REQUIRE`, and where the shared golden data is. Plain `std`, no crate
//! paths: the integration tests' `needs` module and the library's unit tests
//! (`src/testdata.rs`, which includes this file) follow the same code.
//!
//! - `all` (the default, and what `scripts/test.sh` sets): the test fails, naming what is
//!   missing. A test never passes by skipping.
//! - `none` (for a developer without the tools or the data): the test prints a loud line
//!   naming what is missing and returns, which the harness reports as a pass: a run with
//!   this setting proves nothing about those tests.
//!
//! Any other value fails every test that asks.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The setting's name.
pub const SETTING: &str = "REGSCOPE_TEST_REQUIRE";

/// Points the tests at another golden-data folder than `../shared/testdata` (a missing
/// one shows the rule at work without touching the real data).
pub const FOLDER: &str = "REGSCOPE_TESTDATA";

/// The golden data's folder, whether or not it is there: `../shared/testdata` beside the
/// repository, or the folder `REGSCOPE_TESTDATA` names.
pub fn testdata_path() -> PathBuf {
    match std::env::var_os(FOLDER) {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/testdata"),
    }
}

/// What is missing when `dir` is not a folder (`None` when it is).
pub fn folder_missing(dir: &Path) -> Option<String> {
    (!dir.is_dir()).then(|| {
        format!(
            "{} is absent: the golden data must sit beside the repository as ../shared/testdata",
            dir.display()
        )
    })
}

/// What the rule does with a test.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing is missing: the test runs.
    Run,
    /// The test prints a loud line saying this and returns (`none`).
    Skip(String),
    /// The test fails with this message (`all`, the default, or a value the rule does not
    /// know).
    Fail(String),
}

/// The rule for a test that misses `missing` (empty: nothing) under the setting's value
/// (`None`: unset).
pub fn verdict(setting: Option<&str>, missing: &[String]) -> Verdict {
    let fails = match setting {
        None | Some("all") => true,
        Some("none") => false,
        Some(other) => {
            return Verdict::Fail(format!(
                "{SETTING}={other}: expected `all` (the default) or `none`"
            ))
        }
    };
    if missing.is_empty() {
        return Verdict::Run;
    }
    let what = missing.join("; ");
    if fails {
        Verdict::Fail(format!(
            "{what} (set {SETTING}=none to skip the tests that need it instead)"
        ))
    } else {
        Verdict::Skip(what)
    }
}

/// Applies [`verdict`] under `setting`: `true` when the test may run; panics with the
/// message of a failure; for a skip, prints the loud line to stderr and gives `false`.
pub fn met_under(setting: Option<&str>, missing: &[String]) -> bool {
    match verdict(setting, missing) {
        Verdict::Run => true,
        Verdict::Fail(message) => panic!("{message}"),
        Verdict::Skip(what) => {
            let test = std::thread::current()
                .name()
                .unwrap_or("this test")
                .to_string();
            // Straight to stderr, not `eprintln!`: the harness hides what a passing test
            // prints.
            let _ = writeln!(
                std::io::stderr(),
                "!!!! SKIPPED {test}: {what} ({SETTING}=none); it did not run"
            );
            false
        }
    }
}

/// The setting's value in this process (unset or not Unicode: `None`, the default).
pub fn setting() -> Option<String> {
    std::env::var(SETTING).ok()
}
