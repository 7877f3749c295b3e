//! What keeping values compressed in memory would buy: zstd over real Kubernetes
//! encodings, with and without a dictionary trained per resource on its first values.
//!
//! `cargo bench --bench value_compression` (no etcd needed) prints, per resource of the
//! `mixed` key set (see `common/keyset.rs`) and for all of it: raw and compressed bytes,
//! the ratio, and the time to compress and to decompress one value.
//! `VALUE_COMPRESSION_KEYS=N` changes the number of keys (default 200,000).

use std::collections::BTreeMap;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::SeedableRng;

#[path = "common/keyset.rs"]
mod keyset;

/// Values per resource a dictionary is trained on, and its size in bytes.
const TRAIN_ON: usize = 1000;
const DICT_BYTES: usize = 16 * 1024;

/// The resource part of a registry key: `/registry/<resource>/…` or
/// `/registry/<group>/<resource>/…` (a group has a dot).
fn resource(key: &str) -> String {
    let mut parts = key.trim_start_matches("/registry/").split('/');
    let first = parts.next().unwrap_or_default();
    if first.contains('.') {
        format!("{first}/{}", parts.next().unwrap_or_default())
    } else {
        first.to_string()
    }
}

struct Row {
    raw: usize,
    packed: usize,
    packed_dict: usize,
    compress_ns: f64,
    decompress_ns: f64,
    values: usize,
}

fn main() {
    // `VALUE_COMPRESSION_LEVEL=L`: the zstd level (default 3).
    let level: i32 = std::env::var("VALUE_COMPRESSION_LEVEL")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let keys: usize = std::env::var("VALUE_COMPRESSION_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let mut rng = SmallRng::seed_from_u64(0x5eed);
    let mut by_resource: BTreeMap<String, Vec<Vec<u8>>> = BTreeMap::new();
    for i in 0..keys {
        let (k, v) = keyset::entry("mixed", &mut rng, i);
        by_resource.entry(resource(&k)).or_default().push(v);
    }
    let mut total = Row {
        raw: 0,
        packed: 0,
        packed_dict: 0,
        compress_ns: 0.0,
        decompress_ns: 0.0,
        values: 0,
    };
    for (res, values) in &by_resource {
        let raw: usize = values.iter().map(Vec::len).sum();
        // Without a dictionary.
        let mut plain = zstd::bulk::Compressor::new(level).expect("compressor");
        let packed: usize = values
            .iter()
            .map(|v| plain.compress(v).expect("compress").len())
            .sum();
        // With a dictionary trained on the first values of the resource.
        let t = Instant::now();
        let dict = zstd::dict::from_samples(&values[..TRAIN_ON.min(values.len())], DICT_BYTES)
            .expect("train");
        let train_ms = t.elapsed().as_secs_f64() * 1e3;
        let mut c = zstd::bulk::Compressor::with_dictionary(level, &dict).expect("compressor");
        let t = Instant::now();
        let out: Vec<Vec<u8>> = values
            .iter()
            .map(|v| c.compress(v).expect("compress"))
            .collect();
        let compress_ns = t.elapsed().as_nanos() as f64 / values.len() as f64;
        let packed_dict: usize = out.iter().map(Vec::len).sum::<usize>() + dict.len();
        let mut d = zstd::bulk::Decompressor::with_dictionary(&dict).expect("decompressor");
        let mut buf = vec![0u8; values.iter().map(Vec::len).max().unwrap_or(0)];
        let t = Instant::now();
        for (o, v) in out.iter().zip(values) {
            let n = d.decompress_to_buffer(o, &mut buf).expect("decompress");
            assert_eq!(&buf[..n], v.as_slice());
        }
        let decompress_ns = t.elapsed().as_nanos() as f64 / values.len() as f64;
        println!(
            "{res:28} {:>7} values {:>8.1} MiB raw: zstd {level} {:.2}x, with a {} KiB dictionary (trained on {TRAIN_ON} in {train_ms:.0} ms) {:.2}x; {:.1} us to compress, {:.1} us to decompress a value",
            values.len(),
            raw as f64 / 1048576.0,
            raw as f64 / packed as f64,
            dict.len() / 1024,
            raw as f64 / packed_dict as f64,
            compress_ns / 1e3,
            decompress_ns / 1e3
        );
        total.raw += raw;
        total.packed += packed;
        total.packed_dict += packed_dict;
        total.compress_ns += compress_ns * values.len() as f64;
        total.decompress_ns += decompress_ns * values.len() as f64;
        total.values += values.len();
    }
    println!(
        "all {:>7} values {:.1} MiB raw: zstd {level} {:.2}x, with dictionaries {:.2}x ({:.1} MiB); {:.1} us to compress, {:.1} us to decompress a value",
        total.values,
        total.raw as f64 / 1048576.0,
        total.raw as f64 / total.packed as f64,
        total.raw as f64 / total.packed_dict as f64,
        total.packed_dict as f64 / 1048576.0,
        total.compress_ns / total.values as f64 / 1e3,
        total.decompress_ns / total.values as f64 / 1e3
    );
}
