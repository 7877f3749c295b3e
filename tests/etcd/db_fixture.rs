//! The backend-file fixture (`common::etcd_db`) checked against itself and against etcd, so
//! that the tests built on it cannot rest on a silently wrong picture: what etcd said at
//! each revision follows the workload's steps, compacted revisions are refused, the file is
//! a bbolt database with etcd's SHA-256 trailer, `snapshot status` agrees with the head,
//! and the encrypted values open under the configuration the fixture wrote.

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

use crate::common::etcd_db::{self, bbolt, golden, DbFixture, Kv, SECRET};
use base64::Engine as _;

use crate::common::fixtures::KEY_A;
use crate::common::{output_within, require};

/// Every `/registry` key live at the head of the workload.
const REGISTRY_AT_HEAD: &[&str] = &[
    "/registry/configmaps/default/app-config",
    "/registry/configmaps/kube-system/extension-apiserver-authentication",
    "/registry/deployments/default/web",
    "/registry/leases/kube-node-lease/node-0",
    "/registry/leases/kube-node-lease/node-1",
    "/registry/minions/node-0",
    "/registry/namespaces/default",
    "/registry/pods/default/web-0",
    "/registry/pods/default/web-1",
    "/registry/pods/default/web-2",
    "/registry/pods/kube-system/kube-apiserver-node-0",
    "/registry/secrets/default/api-token",
    "/registry/secrets/default/db-password",
    "/registry/secrets/default/plain",
    "/registry/services/specs/default/kubernetes",
];

/// The keys outside `/registry` at head.
const OUTSIDE_AT_HEAD: &[&str] = &["/other/x", "/other/y", "compact_rev_key"];

fn keys(kvs: &[Kv]) -> Vec<&str> {
    kvs.iter().map(|kv| kv.key.as_str()).collect()
}

fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().expect("2 bytes"))
}
fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// `openssl ARGS`, which must succeed; its stdout.
fn openssl(args: &[&str]) -> Vec<u8> {
    let out = output_within(Command::new("openssl").args(args), Duration::from_secs(30));
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn the_db_fixture_holds_what_etcd_said() {
    require!(ETCD, ETCDCTL, TESTDATA, OPENSSL);
    let started = std::time::Instant::now();
    let fx = etcd_db::write_workload_and_snapshot();
    eprintln!(
        "db fixture: etcd {}, revisions {}..={} read, {} steps, built in {:?}",
        fx.etcd_version,
        fx.compacted,
        fx.head,
        fx.steps.len(),
        started.elapsed()
    );

    the_version_is_the_one_asked_for(&fx);
    every_readable_revision_follows_the_steps(&fx);
    the_head_holds_the_expected_keys(&fx);
    the_transaction_and_the_revoke_are_single_revisions(&fx);
    deletes_recreates_and_updates_count_as_etcd_counts(&fx);
    compacted_revisions_are_refused(&fx);
    the_kept_lease_holds_its_keys(&fx);
    encrypted_values_open_under_the_config(&fx);
    status_agrees_with_the_head(&fx);
    the_file_is_bbolt_with_etcds_trailer(&fx);
}

fn the_version_is_the_one_asked_for(fx: &DbFixture) {
    match std::env::var("REGSCOPE_TEST_ETCD_VERSION") {
        Ok(want) => assert_eq!(fx.etcd_version, want),
        Err(_) => assert!(
            ["3.4.", "3.5.", "3.6."]
                .iter()
                .any(|v| fx.etcd_version.starts_with(v)),
            "etcd {}",
            fx.etcd_version
        ),
    }
}

/// `at` covers exactly `compacted..=head`, each answer was given at head, and from one
/// revision to the next only the keys the step at that revision names changed, each with
/// that revision as its mod_revision.
fn every_readable_revision_follows_the_steps(fx: &DbFixture) {
    assert!(
        1 < fx.compacted && fx.compacted + 10 < fx.head,
        "compacted {} should sit in the middle of 1..={}",
        fx.compacted,
        fx.head
    );
    let revs: Vec<i64> = fx.at.keys().copied().collect();
    assert_eq!(revs, (fx.compacted..=fx.head).collect::<Vec<_>>());
    let step_revs: Vec<i64> = fx.steps.iter().map(|s| s.revision).collect();
    assert_eq!(
        step_revs,
        (2..=fx.head).collect::<Vec<_>>(),
        "{:#?}",
        fx.steps
    );
    for (rev, answer) in &fx.at {
        assert_eq!(
            answer["header"]["revision"].as_i64(),
            Some(fx.head),
            "{rev}"
        );
    }
    for rev in fx.compacted + 1..=fx.head {
        let before = fx.kvs_at(rev - 1);
        let after = fx.kvs_at(rev);
        let step = &fx.steps[(rev - 2) as usize];
        let changed: BTreeSet<&str> = before
            .iter()
            .filter(|kv| !after.contains(kv))
            .chain(after.iter().filter(|kv| !before.contains(kv)))
            .map(|kv| kv.key.as_str())
            .collect();
        let writes_registry = step.what.contains("/registry/") || step.what.starts_with("txn");
        assert_eq!(
            !changed.is_empty(),
            writes_registry,
            "revision {rev} ({}) changed {changed:?}",
            step.what
        );
        for key in &changed {
            let short = key.trim_start_matches("/registry/");
            assert!(
                step.what.contains(short),
                "revision {rev} changed {key}, which its step does not name: {}",
                step.what
            );
        }
        for kv in after.iter().filter(|kv| changed.contains(kv.key.as_str())) {
            assert_eq!(kv.mod_revision, rev, "{kv:?}");
        }
        for kv in &after {
            assert!(kv.create_revision <= kv.mod_revision && kv.mod_revision <= rev);
        }
    }
}

fn the_head_holds_the_expected_keys(fx: &DbFixture) {
    let head = fx.kvs_at(fx.head);
    assert_eq!(keys(&head), REGISTRY_AT_HEAD);
    let all = etcd_db::kvs(&fx.all_keys_at_head);
    let mut want: Vec<&str> = REGISTRY_AT_HEAD
        .iter()
        .chain(OUTSIDE_AT_HEAD)
        .copied()
        .collect();
    want.sort();
    assert_eq!(keys(&all), want);
    let compact = all.iter().find(|kv| kv.key == "compact_rev_key").unwrap();
    assert_eq!(compact.value, fx.compacted.to_string().into_bytes());
    // Real storage encodings only: protobuf (`k8s\0`) or encrypted (`k8s:enc:`).
    for kv in &head {
        assert!(
            kv.value.starts_with(b"k8s\0") || kv.value.starts_with(b"k8s:enc:"),
            "{}",
            kv.key
        );
    }
}

fn the_transaction_and_the_revoke_are_single_revisions(fx: &DbFixture) {
    let txn = fx.revision_of("txn");
    let at_txn = fx.kvs_at(txn);
    let written: Vec<&str> = at_txn
        .iter()
        .filter(|kv| kv.mod_revision == txn)
        .map(|kv| kv.key.as_str())
        .collect();
    assert_eq!(
        written,
        [
            "/registry/configmaps/kube-system/extension-apiserver-authentication",
            "/registry/pods/kube-system/etcd-node-0",
            "/registry/pods/kube-system/kube-apiserver-node-0",
        ]
    );
    assert!(fx.kv_at(txn - 1, "/registry/pods/default/web-2").is_some());
    assert!(fx.kv_at(txn, "/registry/pods/default/web-2").is_none());

    let revoke = fx.revision_of("revoke");
    let gone = [
        "/registry/events/default/web-0.17f0a1b2c3d4e5f6",
        "/registry/leases/kube-node-lease/node-2",
    ];
    for key in gone {
        let before = fx.kv_at(revoke - 1, key).unwrap_or_else(|| panic!("{key}"));
        assert_ne!(before.lease, 0, "{key} was on the lease");
        assert!(
            !fx.leases.iter().any(|(id, _, _)| *id == before.lease),
            "the revoked lease is gone"
        );
        assert!(fx.kv_at(revoke, key).is_none(), "{key}");
    }
    let before = keys(&fx.kvs_at(revoke - 1)).len();
    assert_eq!(keys(&fx.kvs_at(revoke)).len(), before - gone.len());
}

fn deletes_recreates_and_updates_count_as_etcd_counts(fx: &DbFixture) {
    // Deleted after the compaction and written again.
    let del = fx.revision_of("delete /registry/configmaps/default/app-config");
    assert!(del > fx.compacted);
    assert!(fx
        .kv_at(del, "/registry/configmaps/default/app-config")
        .is_none());
    let again = fx
        .kv_at(fx.head, "/registry/configmaps/default/app-config")
        .unwrap();
    assert_eq!((again.create_revision, again.version), (del + 1, 1));
    // Deleted and written again before the compaction: only the new life is left.
    let web1 = fx.kv_at(fx.head, "/registry/pods/default/web-1").unwrap();
    assert!(web1.create_revision < fx.compacted);
    assert_eq!(web1.version, 1);
    assert_eq!(web1.value, golden("head/core.v1.Pod.pb"));
    // Deleted in the transaction and written again.
    let web2 = fx.kv_at(fx.head, "/registry/pods/default/web-2").unwrap();
    assert!(web2.create_revision > fx.revision_of("txn"));
    assert_eq!(web2.version, 1);
    // Updated across the compaction: version counts every put since its creation.
    let web0 = fx.kv_at(fx.head, "/registry/pods/default/web-0").unwrap();
    let puts = fx
        .steps
        .iter()
        .filter(|s| s.what.starts_with("put /registry/pods/default/web-0 "))
        .count();
    assert!(puts >= 4, "{puts}");
    assert_eq!(web0.version, puts as i64);
    assert!(web0.create_revision < fx.compacted);
    assert_eq!(web0.value, golden("head/core.v1.Pod.pb"));
    // The two encodings alternate: a value changed within the readable range.
    let first = fx
        .kv_at(fx.compacted, "/registry/pods/default/web-0")
        .unwrap();
    assert_eq!(first.value, golden("v1.30.3/core.v1.Pod.pb"));
}

fn compacted_revisions_are_refused(fx: &DbFixture) {
    let revs: Vec<i64> = fx.below_compacted.keys().copied().collect();
    assert_eq!(revs, (1..fx.compacted).collect::<Vec<_>>());
    for (rev, got) in &fx.below_compacted {
        match got {
            Err(e) => assert!(e.contains("compacted"), "revision {rev}: {e}"),
            Ok(answer) => panic!("revision {rev} below {} was read: {answer}", fx.compacted),
        }
    }
}

fn the_kept_lease_holds_its_keys(fx: &DbFixture) {
    assert_eq!(fx.leases.len(), 1, "{:?}", fx.leases);
    let (id, ttl, keys) = &fx.leases[0];
    assert_eq!(*ttl, etcd_db::LEASE_TTL);
    assert_eq!(
        keys,
        &[
            "/registry/leases/kube-node-lease/node-0",
            "/registry/leases/kube-node-lease/node-1",
        ]
    );
    for key in keys {
        assert_eq!(fx.kv_at(fx.head, key).unwrap().lease, *id, "{key}");
    }
}

fn encrypted_values_open_under_the_config(fx: &DbFixture) {
    use regscope::decrypt::{Decryption, Keyring};
    let secret = golden(SECRET);
    let ring = Keyring::load(&fx.encryption_config).expect("the fixture's config parses");
    let cases = [
        ("/registry/secrets/default/db-password", "aescbc", "key1"),
        ("/registry/secrets/default/api-token", "secretbox", "key2"),
    ];
    for (key, want_provider, want_key) in cases {
        let kv = fx.kv_at(fx.head, key).unwrap();
        match ring.decrypt("secrets", key.as_bytes(), &kv.value) {
            Decryption::Plaintext {
                provider,
                key: name,
                plaintext,
            } => {
                assert_eq!(
                    (provider.as_str(), name.as_str()),
                    (want_provider, want_key)
                );
                assert!(plaintext == secret, "{key}: not the golden Secret");
            }
            other => panic!("{key}: {other:?}"),
        }
    }
    let plain = fx
        .kv_at(fx.head, "/registry/secrets/default/plain")
        .unwrap();
    assert_eq!(plain.value, secret);

    // The aescbc value is plain AES-256-CBC with PKCS#7 padding: openssl opens it too.
    let kv = fx
        .kv_at(fx.head, "/registry/secrets/default/db-password")
        .unwrap();
    let body = kv
        .value
        .strip_prefix(b"k8s:enc:aescbc:v1:key1:".as_slice())
        .expect("the aescbc prefix");
    let (iv, ct) = body.split_at(16);
    let ct_file = fx.dir.path().join("db-password.ct");
    std::fs::write(&ct_file, ct).unwrap();
    let to_hex = |b: &[u8]| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let key = base64::engine::general_purpose::STANDARD
        .decode(KEY_A)
        .unwrap();
    let (key_hex, iv_hex) = (to_hex(&key), to_hex(iv));
    let opened = openssl(&[
        "enc",
        "-d",
        "-aes-256-cbc",
        "-K",
        &key_hex,
        "-iv",
        &iv_hex,
        "-in",
        ct_file.to_str().unwrap(),
    ]);
    assert!(opened == secret, "openssl opened something else");
    // Rotated once: the value before has another IV, the same plaintext.
    let rotated = fx.revision_of("put /registry/secrets/default/db-password = aescbc key1 of v1.30.3/core.v1.Secret.pb, another IV");
    let older = fx
        .kv_at(rotated - 1, "/registry/secrets/default/db-password")
        .unwrap();
    assert_ne!(older.value, kv.value);
}

fn status_agrees_with_the_head(fx: &DbFixture) {
    assert_eq!(
        fx.status["revision"].as_i64(),
        Some(fx.head),
        "{}",
        fx.status
    );
    let size = std::fs::metadata(&fx.db).unwrap().len();
    assert_eq!(
        fx.status["totalSize"].as_u64().map(|s| s + 32),
        Some(size),
        "the file is the database plus the 32-byte SHA-256: {}",
        fx.status
    );
    let total_key = fx.status["totalKey"].as_u64().unwrap_or(0);
    assert!(
        total_key > (REGISTRY_AT_HEAD.len() + OUTSIDE_AT_HEAD.len()) as u64,
        "{}",
        fx.status
    );
}

/// Pages 0 and 1 are bbolt meta pages (layout in `etcd_db::bbolt`, from etcd-io/bbolt
/// `page.go` and `db.go`), and the last 32 bytes are the SHA-256 of the rest.
fn the_file_is_bbolt_with_etcds_trailer(fx: &DbFixture) {
    let file = std::fs::read(&fx.db).unwrap();
    assert!(file.len() > 2 * 4096 + 32, "{} bytes", file.len());
    let page_size = le_u32(&file, bbolt::PAGE_HEADER + 8) as usize;
    assert!(
        page_size.is_power_of_two() && page_size >= 1024,
        "page size {page_size}"
    );
    let (db, trailer) = file.split_at(file.len() - 32);
    assert_eq!(db.len() % page_size, 0, "whole pages, then the trailer");
    for page in 0..2 {
        let p = &db[page * page_size..];
        assert_eq!(le_u64(p, 0), page as u64, "page {page} id");
        assert_eq!(le_u16(p, 8), bbolt::META_PAGE_FLAG, "page {page} flags");
        let meta = &p[bbolt::PAGE_HEADER..];
        assert_eq!(le_u32(meta, 0), bbolt::MAGIC, "page {page} magic");
        assert_eq!(le_u32(meta, 4), bbolt::VERSION, "page {page} version");
        assert_eq!(le_u32(meta, 8) as usize, page_size, "page {page} page size");
        assert_eq!(
            le_u64(meta, bbolt::META_SUMMED),
            bbolt::fnv1a64(&meta[..bbolt::META_SUMMED]),
            "page {page} checksum"
        );
    }
    let pages = fx.dir.path().join("pages.db");
    std::fs::write(&pages, db).unwrap();
    let sum = openssl(&["dgst", "-sha256", "-binary", pages.to_str().unwrap()]);
    assert!(sum == trailer, "the trailer is the SHA-256 of the pages");
}
