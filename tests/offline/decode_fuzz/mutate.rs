//! The mutations of the decoder's fuzzing: bit flips, random bytes, inserted and deleted
//! runs, truncation, splices of two values, varint-length damage, growth up to 2 MiB. Its
//! test (`decode_fuzz.rs`) and the decode bench (which times the slowest of a fixed run)
//! both use it.

use rand::rngs::StdRng;
use rand::Rng;

/// The largest value a mutation makes.
pub const MAX_INPUT: usize = 2 << 20;

/// One value of `corpus`, altered one to five times.
pub fn mutate(rng: &mut StdRng, corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut v = corpus[rng.random_range(0..corpus.len())].clone();
    for _ in 0..rng.random_range(1..6) {
        let len = v.len();
        match rng.random_range(0..9) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                v[i] ^= 1 << rng.random_range(0..8);
            }
            1 if len > 0 => {
                let i = rng.random_range(0..len);
                v[i] = rng.random();
            }
            2 => {
                let i = rng.random_range(0..=len);
                let n = rng.random_range(1..32);
                let bytes: Vec<u8> = (0..n).map(|_| rng.random()).collect();
                v.splice(i..i, bytes);
            }
            3 if len > 1 => {
                let a = rng.random_range(0..len);
                let b = rng.random_range(a..len.min(a + 64));
                v.drain(a..b);
            }
            4 if len > 0 => v.truncate(rng.random_range(0..len)),
            5 => {
                let other = &corpus[rng.random_range(0..corpus.len())];
                let a = rng.random_range(0..=v.len());
                let b = rng.random_range(0..=other.len());
                v.truncate(a);
                v.extend_from_slice(&other[b..]);
            }
            6 if len > 0 => {
                // Damage a would-be length or varint: continuation bits, huge values.
                let i = rng.random_range(0..len);
                v[i] = [0x80, 0xff, 0x7f, 0x00, 0x0a, 0x12][rng.random_range(0..6)];
            }
            7 if len > 0 => {
                // Grow: repeat a chunk (up to 2 MiB), or wrap in a deep nest of len fields.
                if rng.random_bool(0.5) {
                    let a = rng.random_range(0..len);
                    let chunk = v[a..].to_vec();
                    while v.len() + chunk.len() < MAX_INPUT && rng.random_bool(0.9) {
                        v.extend_from_slice(&chunk);
                    }
                } else {
                    for _ in 0..rng.random_range(1..400) {
                        let mut w = vec![0x12];
                        let mut n = v.len();
                        while n >= 0x80 {
                            w.push((n as u8) | 0x80);
                            n >>= 7;
                        }
                        w.push(n as u8);
                        w.extend_from_slice(&v);
                        v = w;
                    }
                    let mut w = b"k8s\x00\x0a\x09\x0a\x02v1\x12\x03Pod".to_vec();
                    w.extend_from_slice(&v);
                    v = w;
                }
            }
            _ => {}
        }
        v.truncate(MAX_INPUT);
    }
    v
}
