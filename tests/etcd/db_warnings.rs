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

/// A member's file (no SHA-256 after the pages) whose root page's first bucket points past
/// the high-water mark: every command says the root page is damaged, naming the page
/// (`replay --check` as damage, exit 1; the others refuse, exit 2), and none answers as
/// if that bucket (`alarm`, `auth`, `lease`, …) were simply absent.
#[test]
fn a_bucket_past_the_high_water_mark_is_damage_to_every_command() {
    require!(ETCD, ETCDCTL, TESTDATA);
    let fx = etcd_db::write_workload_and_snapshot();
    let saved = std::fs::read(&fx.db).unwrap();
    let mut bytes = saved[..saved.len() - 32].to_vec();
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let u32_at =
        |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    // The meta with the larger txid (bbolt `meta`: magic, version, page size, flags, root
    // bucket {root, sequence}, freelist, pgid, txid, checksum, after the 16-byte header).
    let ps = u32_at(&bytes, 16 + 8);
    let meta = [16, ps + 16]
        .into_iter()
        .max_by_key(|&m| u64_at(&bytes, m + 48))
        .unwrap();
    let (root, high_water) = (
        u64_at(&bytes, meta + 16) as usize,
        u64_at(&bytes, meta + 40),
    );
    // Leaf element 0 of the root page: flags, pos, ksize, vsize; its value is the
    // bucket's header, starting with the bucket's root page id.
    let elem = root * ps + 16;
    let (pos, ksize) = (u32_at(&bytes, elem + 4), u32_at(&bytes, elem + 8));
    let value = elem + pos + ksize;
    bytes[value..value + 8].copy_from_slice(&(high_water + 1000).to_le_bytes());
    let member = fx.dir.path().join("member-db");
    std::fs::write(&member, &bytes).unwrap();
    let page = (high_water + 1000).to_string();
    for args in [
        vec!["analyze", s(&member)],
        vec!["snapshot", "--json", "--from", s(&member)],
        vec!["export", s(&member)],
        vec!["diff", s(&fx.db), s(&member)],
    ] {
        let o = run(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("page {page}")) && err.contains("root page is damaged"),
            "{args:?}: {err}"
        );
    }
    let o = run(&["replay", "--check", s(&member)]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(out.contains("root page is damaged"), "{out}");
}
