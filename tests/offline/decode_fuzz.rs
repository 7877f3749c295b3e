//! Mutation fuzzing of the decoder: real stored values (the golden `.pb` files, the
//! field-case values — bytes altered on the way in, a custom resource stored as JSON, kinds
//! the decoder does not know, mixed encrypted and plain Secrets — JSON, CBOR, encrypted
//! prefixes) are mutated — bit flips, random bytes, inserted and deleted runs, truncation,
//! splices of two values, varint-length damage, growth up to 2 MiB — and fed to `summarize`,
//! `decode` (with and without the mixed-encryption keyring) and `render`.
//!
//! Checks: no panic; output stays bounded by the input (a proxy for memory). The slowest
//! input's time is printed; the time a worst-shaped value may take is a target of `cargo
//! bench --bench decode`, not of this test. Runs `REGSCOPE_FUZZ_SECS` seconds (default 8, so CI stays quick;
//! `REGSCOPE_FUZZ_SECS=600` is a 10-minute run). The seed is printed, and
//! `REGSCOPE_FUZZ_SEED` replays one.

use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use regscope::decode::{decode, render, summarize, DecodeOptions, RenderOptions};
use regscope::decrypt::Keyring;

mod mutate;

use crate::common::fixtures;
use crate::common::require;

use fixtures::{hex, MIXED_SECRET_S1, MIXED_SECRET_S2};
use mutate::mutate;

fn corpus() -> Vec<Vec<u8>> {
    let mut c = vec![
        hex("6b3873000a090a0276311203506f64120f0a0d0a0270311a0764656661756c741a002200"),
        hex("6b3873000a1e0a156275696c642e6f70656e73686966742e696f2f763112054275696c64120b0a090a0262311a036e73311a002200"),
        hex(MIXED_SECRET_S1),
        hex(MIXED_SECRET_S2),
        br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","namespace":"default"},"spec":{"size":3}}
"#
        .to_vec(),
        vec![0xd9, 0xd9, 0xf7, 0xa2, 0x64, b'k', b'i', b'n', b'd', 0x63, b'P', b'o', b'd', 0x61, b'x', 0x81, 0x01],
        b"k8s:enc:kms:v2:plugin:\x0a\x03abc\x12\x02id".to_vec(),
        b"k8s:enc:secretbox:v1:k:0123456789abcdef01234567".to_vec(),
    ];
    let dir = fixtures::testdata().join("k8s-api");
    for sub in ["v1.30.3", "head"] {
        if let Ok(rd) = std::fs::read_dir(dir.join(sub)) {
            let mut files: Vec<_> = rd.flatten().map(|e| e.path()).collect();
            files.sort();
            for p in files
                .into_iter()
                .filter(|p| p.extension().is_some_and(|e| e == "pb"))
            {
                c.push(std::fs::read(p).unwrap());
            }
        }
    }
    c
}

#[test]
fn decoder_survives_mutated_values() {
    require!(TESTDATA);
    let secs: u64 = std::env::var("REGSCOPE_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    let seed: u64 = std::env::var("REGSCOPE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("fuzz seed {seed} for {secs} s (REGSCOPE_FUZZ_SEED replays)");
    let keyring =
        Keyring::from_yaml(&fixtures::mixed_encryption_config(fixtures::KEY_A), "fuzz").unwrap();
    let corpus = corpus();
    let mut rng = StdRng::seed_from_u64(seed);
    let deadline = Instant::now() + Duration::from_secs(secs);
    let (mut n, mut bytes, mut slowest, mut biggest) = (0u64, 0usize, Duration::ZERO, 0usize);
    let mut max_ratio = 0f64;
    while Instant::now() < deadline {
        let v = mutate(&mut rng, &corpus);
        let start = Instant::now();
        let s = summarize(&v);
        let opts = DecodeOptions {
            show_secrets: rng.random_bool(0.5),
            etcd_key: b"/registry/secrets/default/s2",
            mod_revision: Some(7),
            keyring: rng.random_bool(0.5).then_some(&keyring),
            candidates: &[],
        };
        let d = decode(&v, &opts);
        let r = render(
            &v,
            &RenderOptions {
                etcd_key: b"/registry/pods/default/p1",
                ..Default::default()
            },
        );
        let took = start.elapsed();
        let out = d.json.as_ref().map_or(0, String::len)
            + r.lines.iter().map(String::len).sum::<usize>()
            + s.name.map_or(0, |n| n.len());
        // JSON of a value can exceed it (base64, escapes, field dumps), but boundedly.
        assert!(
            out <= 16 * v.len() + 256 * 1024,
            "{} bytes gave {out} bytes of output: {}",
            v.len(),
            hex_prefix(&v)
        );
        if !v.is_empty() {
            max_ratio = max_ratio.max(out as f64 / v.len() as f64);
        }
        slowest = slowest.max(took);
        biggest = biggest.max(v.len());
        bytes += v.len();
        n += 1;
    }
    println!(
        "fuzz: {n} inputs, {:.1} MiB total, largest {biggest} bytes, slowest {slowest:?}, max output/input {max_ratio:.1}",
        bytes as f64 / (1 << 20) as f64
    );
    assert!(n > 0);
}

fn hex_prefix(v: &[u8]) -> String {
    v.iter().take(64).map(|b| format!("{b:02x}")).collect()
}
