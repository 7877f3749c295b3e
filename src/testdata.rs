//! The shared golden data (`../shared/testdata`, beside the repository) for the library's
//! unit tests, under the rule the integration tests follow (`tests/common/needs/rule.rs`,
//! included here): when it is missing, a test fails naming it, unless
//! `REGSCOPE_TEST_REQUIRE=none`, where it prints a loud line and returns.
//! `REGSCOPE_TESTDATA` names another folder instead.
//!
//! A unit test that reads the data starts with
//! `let Some(td) = crate::testdata::dir() else { return };` and reads under `td`.

use std::path::PathBuf;

#[path = "../tests/common/needs/rule.rs"]
mod rule;

/// The golden data's folder when it is there; when not, fails the test or (under `none`)
/// says so loudly and gives `None`, and the test returns.
pub(crate) fn dir() -> Option<PathBuf> {
    dir_under(rule::setting().as_deref(), rule::testdata_path())
}

/// [`dir`] for the folder `path` under the setting's value `setting` (`None`: unset).
fn dir_under(setting: Option<&str>, path: PathBuf) -> Option<PathBuf> {
    let missing: Vec<String> = rule::folder_missing(&path).into_iter().collect();
    rule::met_under(setting, &missing).then_some(path)
}

mod tests {
    use super::rule::{verdict, Verdict};
    use super::*;
    use std::path::Path;

    fn missing_folder() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("no-such-golden-data")
    }

    #[test]
    fn a_missing_folder_fails_by_default_naming_it() {
        let p = missing_folder();
        for setting in [None, Some("all")] {
            let e = std::panic::catch_unwind(|| dir_under(setting, p.clone()))
                .expect_err("a missing folder fails the test");
            let message = e.downcast_ref::<String>().expect("a message");
            assert!(
                message.contains("no-such-golden-data is absent"),
                "{message}"
            );
            assert!(message.contains("REGSCOPE_TEST_REQUIRE=none"), "{message}");
        }
    }

    #[test]
    fn a_missing_folder_under_none_returns_none() {
        assert_eq!(dir_under(Some("none"), missing_folder()), None);
    }

    #[test]
    fn a_present_folder_is_given_under_every_setting() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for setting in [None, Some("all"), Some("none")] {
            assert_eq!(dir_under(setting, here.clone()), Some(here.clone()));
        }
    }

    #[test]
    fn the_rule() {
        let gone = vec!["etcd is not installed".to_string()];
        assert_eq!(verdict(None, &[]), Verdict::Run);
        assert_eq!(verdict(Some("none"), &[]), Verdict::Run);
        assert!(matches!(verdict(None, &gone), Verdict::Fail(m) if m.contains("etcd")));
        assert!(matches!(verdict(Some("all"), &gone), Verdict::Fail(m) if m.contains("etcd")));
        assert_eq!(
            verdict(Some("none"), &gone),
            Verdict::Skip("etcd is not installed".to_string())
        );
        // An unknown value fails even when nothing is missing.
        assert!(matches!(verdict(Some("some"), &[]), Verdict::Fail(m) if m.contains("some")));
    }
}
