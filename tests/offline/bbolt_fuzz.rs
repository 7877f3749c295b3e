//! The fuzz targets' code (`fuzz/src/lib.rs`, included as it is) run as an ordinary test,
//! so that CI, which has no nightly toolchain for libFuzzer, exercises it: the golden etcd
//! backend (`etcd-registry/auger/boltdb/db`) damaged the ways a file is damaged — flipped
//! bytes, cuts, forged page headers and element fields, branches pointed at themselves or
//! at meta pages, metas rewritten with a valid checksum — and handed to `bbolt_pages` and
//! `etcd_db`, which panic when a read runs over its bound.
//!
//! Runs `REGSCOPE_FUZZ_SECS` seconds (default 4); the seed is printed and
//! `REGSCOPE_FUZZ_SEED` replays one.

use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::common::fixtures;
use crate::common::require;

#[path = "../../fuzz/src/lib.rs"]
mod targets;

/// bbolt's page size on the machine that wrote the golden file.
const PS: usize = 4096;

/// Values a forger tries: small page ids and counts, and the edges of each width.
fn forged(rng: &mut StdRng) -> u64 {
    match rng.random_range(0..6) {
        0 | 1 => rng.random_range(0..12),
        2 => 0xFFFF,
        3 => u32::MAX as u64,
        4 => u64::MAX,
        _ => rng.random(),
    }
}

fn put(f: &mut [u8], at: usize, v: &[u8]) {
    if let Some(dst) = f.get_mut(at..at + v.len()) {
        dst.copy_from_slice(v);
    }
}

/// The golden file damaged one to six times.
fn damaged(rng: &mut StdRng, golden: &[u8]) -> Vec<u8> {
    let mut f = golden.to_vec();
    for _ in 0..rng.random_range(1..7) {
        let pages = f.len().div_ceil(PS).max(1);
        let page = rng.random_range(0..pages) * PS;
        let v = forged(rng);
        match rng.random_range(0..7) {
            0 if !f.is_empty() => {
                let at = rng.random_range(0..f.len());
                f[at] ^= rng.random_range(1..=255u8);
            }
            1 => f.truncate(rng.random_range(0..=f.len())),
            2 => put(&mut f, page + 12, &(v as u32).to_le_bytes()),
            3 => {
                let field = [0, 8, 10][rng.random_range(0..3)];
                let width = if field == 0 { 8 } else { 2 };
                put(&mut f, page + field, &v.to_le_bytes()[..width]);
            }
            4 => {
                let at = page + 16 + 16 * rng.random_range(0..8) + 4 * rng.random_range(0..4);
                put(&mut f, at, &(v as u32).to_le_bytes());
            }
            5 => {
                // A page made a branch whose first children point where the forger says.
                put(&mut f, page + 8, &1u16.to_le_bytes());
                for i in 0..rng.random_range(1..4) {
                    put(&mut f, page + 16 + 16 * i + 8, &forged(rng).to_le_bytes());
                }
            }
            _ => {
                // A meta field rewritten and the meta sealed again, so it is believed.
                let m = rng.random_range(0..2) * PS;
                let o = m + 16 + [8, 16, 32, 40, 48][rng.random_range(0..5)];
                put(
                    &mut f,
                    o,
                    &v.to_le_bytes()[..if o == m + 24 { 4 } else { 8 }],
                );
                if f.len() >= m + 80 {
                    let sum = regscope::bbolt::fnv1a64(&f[m + 16..m + 72]);
                    f[m + 72..m + 80].copy_from_slice(&sum.to_le_bytes());
                }
            }
        }
    }
    f
}

#[test]
fn the_fuzz_targets_survive_a_damaged_etcd_backend() {
    require!(TESTDATA);
    let path = fixtures::testdata().join("etcd-registry/auger/boltdb/db");
    let golden = std::fs::read(&path).unwrap();
    // Undamaged, the targets see the whole file: every version, and every entry of every
    // bucket (plus the seeks and last entries they also make).
    let db = regscope::source::etcd_db::EtcdDb::open(&path).unwrap();
    let all_versions = db.versions_from(0).count() as u64;
    let all_entries: u64 = db
        .buckets()
        .iter()
        .map(|(_, b)| db.bolt().entries(b).count() as u64)
        .sum();
    assert_eq!(targets::etcd_db(&golden), all_versions);
    assert!(all_versions >= 4, "{all_versions} versions");
    let whole = targets::bbolt_pages(&golden);
    assert!(whole > all_entries, "{whole} entries seen of {all_entries}");
    let secs: u64 = std::env::var("REGSCOPE_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    let seed: u64 = std::env::var("REGSCOPE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("bbolt fuzz seed {seed} for {secs} s (REGSCOPE_FUZZ_SEED replays)");
    let mut rng = StdRng::seed_from_u64(seed);
    let deadline = Instant::now() + Duration::from_secs(secs);
    let (mut n, mut opened, mut read_some) = (0u64, 0u64, 0u64);
    while Instant::now() < deadline {
        let f = damaged(&mut rng, &golden);
        let seen = targets::etcd_db(&f);
        opened += regscope::bbolt::Db::from_source(Box::new(f)).is_ok() as u64;
        read_some += (seen > 0) as u64;
        n += 1;
    }
    println!("bbolt fuzz: {n} files, {opened} opened, {read_some} with versions read");
    // The damage is not all fatal at the door: most files open and many still read.
    assert!(
        n > 0 && opened > 0 && read_some > 0,
        "{n} {opened} {read_some}"
    );
}
