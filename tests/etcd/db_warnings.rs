//! What every command reading etcd's db file says beside its answer: a saved snapshot
//! whose SHA-256 (what `etcdctl snapshot save` appends) no longer matches its pages is
//! warned about by `analyze`, `snapshot --from`, `export` and `diff` (not only by `replay
//! --check`), and a file that is intact draws no such line.

use crate::common::etcd_db;
use crate::common::require;
use crate::common::snapshot_cli::{run, s, stderr};

/// The fixture's snapshot with one byte changed inside the last page of values (past the
/// meta pages, before the SHA-256): the pages still parse, the digest no longer matches.
#[test]
fn a_snapshot_changed_after_it_was_saved_is_warned_about_by_every_reader() {
    require!(ETCD, ETCDCTL, TESTDATA);
    let fx = etcd_db::write_workload_and_snapshot();
    let mut bytes = std::fs::read(&fx.db).unwrap();
    let changed = fx.dir.path().join("changed.db");
    // A byte of the free space at the end of the last page: no page reads it.
    let at = bytes.len() - 32 - 1;
    bytes[at] ^= 0x01;
    std::fs::write(&changed, &bytes).unwrap();
    let commands: Vec<Vec<&str>> = vec![
        vec!["analyze", s(&changed)],
        vec!["snapshot", "--json", "--from", s(&changed)],
        vec!["export", s(&changed)],
        vec!["diff", s(&fx.db), s(&changed)],
    ];
    for args in &commands {
        let o = run(args);
        let err = stderr(&o);
        assert!(
            err.contains("does not match the pages") && err.contains("replay --check"),
            "{args:?}: {err}"
        );
        assert!(o.status.code() != Some(2), "{args:?} still answers: {err}");
    }
    // The intact file: no digest line.
    for args in [
        vec!["analyze", s(&fx.db)],
        vec!["snapshot", "--json", "--from", s(&fx.db)],
    ] {
        let o = run(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("SHA-256"), "{args:?}: {}", stderr(&o));
    }
}
