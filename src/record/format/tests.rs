//! Round trips through the writer and the reader, and what the reader makes of every kind
//! of damage; the fixtures here are shared with the tests beside the code.

use super::*;
use proptest::prelude::*;
use std::fs::{self, Permissions};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

pub(super) const HEADER: &[u8] = b"{\"cluster\":\"test\",\"started_ns\":1700000000000000000}";

fn header_end() -> u64 {
    FILE_HEADER_LEN + FRAME_HEADER_LEN + HEADER.len() as u64
}

fn small_opts() -> WriterOptions {
    WriterOptions {
        key_interval: 3,
        ..WriterOptions::default()
    }
}

fn rec(w: &mut Writer, want: &mut Vec<Item>, t: i64, r: i64, kind: u8, payload: &[u8]) {
    w.append(t, r, kind, payload).unwrap();
    want.push(Item::Record {
        time_ns: t,
        revision: r,
        kind,
        payload: payload.to_vec().into(),
    });
}

pub(super) fn scrape(
    w: &mut Writer,
    want: &mut Vec<Item>,
    t: i64,
    r: i64,
    target: u8,
    body: &[u8],
) {
    let source = format!("https://10.0.0.{target}:6443/metrics");
    w.append_scrape(t, r, target, &source, body).unwrap();
    want.push(Item::Scrape {
        time_ns: t,
        revision: r,
        target,
        source,
        body: body.to_vec().into(),
    });
}

pub(super) fn checkpoint(w: &mut Writer, want: &mut Vec<Item>, t: i64, r: i64, state: &[u8]) {
    w.checkpoint(t, r, state).unwrap();
    want.push(Item::Checkpoint {
        time_ns: t,
        revision: r,
        state: state.to_vec().into(),
    });
}

/// A small Prometheus-like body whose counters move with `step`.
pub(super) fn prom_body(target: u8, step: u64) -> Vec<u8> {
    let mut s = String::new();
    s.push_str("# HELP apiserver_request_total Counter of requests.\n");
    s.push_str("# TYPE apiserver_request_total counter\n");
    for i in 0..12u64 {
        let v = if i % 4 == 0 {
            1000 + i + step * 3
        } else {
            1000 + i
        };
        s.push_str(&format!(
            "apiserver_request_total{{code=\"200\",resource=\"r{i}\",target=\"{target}\"}} {v}\n"
        ));
    }
    s.push_str(&format!("process_cpu_seconds_total {}.25\n", 17 + step));
    s.into_bytes()
}

fn lease(i: u64, rv: u64) -> Vec<u8> {
    let mut p = format!("/registry/leases/kube-node-lease/node-{i}\0k8s\0").into_bytes();
    p.extend_from_slice(&rv.to_le_bytes());
    p.extend_from_slice(b"\x0a\x0bcoordination\x12\x05Lease");
    p
}

/// Writes a recording with every item kind, several segments, key and
/// delta scrapes on two targets and a checkpoint; returns the items in
/// append order.
fn write_sample(path: &Path, finish: bool) -> Vec<Item> {
    let mut w = Writer::create_with(path, HEADER, small_opts()).unwrap();
    let mut want = Vec::new();
    let t0 = 1_700_000_000_000_000_000i64;
    for i in 0..5u64 {
        rec(
            &mut w,
            &mut want,
            t0 + i as i64 * 1000,
            100 + i as i64,
            1,
            &lease(i, 100 + i),
        );
    }
    rec(&mut w, &mut want, t0 + 5000, 105, 2, b"");
    let all_bytes: Vec<u8> = (0..=255u8).collect();
    rec(&mut w, &mut want, i64::MIN, 0, 255, &all_bytes);
    rec(
        &mut w,
        &mut want,
        i64::MAX,
        i64::MAX,
        0,
        &f64::NAN.to_bits().to_le_bytes(),
    );
    w.flush_segment().unwrap();
    scrape(&mut w, &mut want, t0 + 10_000, 105, 0, &prom_body(0, 0));
    for i in 0..4u64 {
        rec(
            &mut w,
            &mut want,
            t0 + 11_000 + i as i64,
            106 + i as i64,
            1,
            &lease(i, 106 + i),
        );
    }
    scrape(&mut w, &mut want, t0 + 15_000, 109, 0, &prom_body(0, 1));
    scrape(&mut w, &mut want, t0 + 15_001, 109, 1, &prom_body(1, 0));
    scrape(&mut w, &mut want, t0 + 20_000, 109, 0, &prom_body(0, 2));
    scrape(&mut w, &mut want, t0 + 25_000, 110, 0, &prom_body(0, 3));
    rec(
        &mut w,
        &mut want,
        t0 + 26_000,
        111,
        3,
        b"delete /registry/pods/default/x",
    );
    checkpoint(
        &mut w,
        &mut want,
        t0 + 27_000,
        111,
        b"replica state: 3 keys, revision 111",
    );
    scrape(&mut w, &mut want, t0 + 30_000, 111, 0, &prom_body(0, 4));
    scrape(&mut w, &mut want, t0 + 30_001, 111, 1, &prom_body(1, 1));
    scrape(&mut w, &mut want, t0 + 35_000, 112, 0, &prom_body(0, 5));
    for i in 0..10u64 {
        rec(
            &mut w,
            &mut want,
            t0 + 36_000 + i as i64,
            112 + i as i64,
            1,
            &lease(i % 3, 112 + i),
        );
    }
    w.flush_segment().unwrap();
    for i in 0..3u64 {
        rec(
            &mut w,
            &mut want,
            t0 + 40_000 + i as i64,
            122,
            4,
            &lease(i, 122),
        );
    }
    if finish {
        let size = w.finish().unwrap();
        assert_eq!(size, fs::metadata(path).unwrap().len());
    }
    want
}

fn read_all(r: &mut Reader) -> Vec<Item> {
    (0..r.frames().len())
        .filter_map(|i| r.read_frame(i).ok())
        .flatten()
        .collect()
}

fn is_subsequence(got: &[Item], want: &[Item]) -> bool {
    let mut it = want.iter();
    got.iter().all(|g| it.any(|w| w == g))
}

fn sample_bytes() -> &'static (Vec<u8>, Vec<Item>) {
    static SAMPLE: std::sync::OnceLock<(Vec<u8>, Vec<Item>)> = std::sync::OnceLock::new();
    SAMPLE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sample.rgs");
        let want = write_sample(&p, true);
        (fs::read(&p).unwrap(), want)
    })
}

#[test]
fn round_trip_through_the_trailer_index() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rec.rgs");
    let want = write_sample(&p, true);
    let mut r = Reader::open(&p).unwrap();
    assert!(!r.index_rebuilt());
    assert!(r.damage().is_empty());
    assert_eq!(r.header(), HEADER);
    assert_eq!(read_all(&mut r), want);

    let scrapes: Vec<(u8, bool)> = r
        .frames()
        .iter()
        .filter(|f| f.kind == FrameKind::Scrape)
        .map(|f| (f.target.unwrap(), f.delta))
        .collect();
    // key_interval 3: key, delta, delta, key; the checkpoint forces keys.
    assert_eq!(
        scrapes,
        [
            (0, false),
            (0, true),
            (1, false),
            (0, true),
            (0, false),
            (0, false),
            (1, false),
            (0, true)
        ]
    );
    let seg = r
        .frames()
        .iter()
        .find(|f| f.kind == FrameKind::Segment)
        .unwrap();
    assert_eq!(seg.records, 8);
    assert_eq!(seg.first_time_ns, 1_700_000_000_000_000_000);
    assert_eq!(seg.last_time_ns, i64::MAX);
    assert_eq!((seg.first_rev, seg.last_rev), (100, i64::MAX));

    let rep = r.check();
    assert!(rep.is_clean(), "{:?}", rep.damage);
    assert_eq!(rep.records, 8 + 4 + 1 + 10 + 3);
    assert_eq!((rep.scrapes, rep.key_scrapes, rep.delta_scrapes), (8, 5, 3));
    assert_eq!(rep.checkpoints, 1);
    assert_eq!(rep.segments, 5);
    assert_eq!(rep.good_frames, r.frames().len());
    assert_eq!(rep.first_time_ns, Some(i64::MIN));
    assert_eq!(rep.last_time_ns, Some(i64::MAX));
    assert_eq!((rep.first_rev, rep.last_rev), (Some(0), Some(i64::MAX)));
    assert_eq!(rep.file_len, fs::metadata(&p).unwrap().len());
}

#[test]
fn index_rebuilt_by_scan_matches_the_trailer_index() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rec.rgs");
    let want = write_sample(&p, true);
    let indexed = Reader::open(&p).unwrap().frames().to_vec();

    // Without the trailer the index frame is skipped and nothing is lost.
    let bytes = fs::read(&p).unwrap();
    let q = dir.path().join("no-trailer.rgs");
    fs::write(&q, &bytes[..bytes.len() - TRAILER_LEN as usize]).unwrap();
    let mut r = Reader::open(&q).unwrap();
    assert!(r.index_rebuilt());
    assert!(r.damage().is_empty(), "{:?}", r.damage());
    assert_eq!(r.frames(), &indexed[..]);
    assert_eq!(read_all(&mut r), want);
    assert!(r.check().is_clean());

    // A writer dropped without finish writes its pending records but
    // no index.
    let u = dir.path().join("unfinished.rgs");
    let want_u = write_sample(&u, false);
    let mut r = Reader::open(&u).unwrap();
    assert!(r.index_rebuilt());
    assert!(r.damage().is_empty());
    assert_eq!(r.frames(), &indexed[..]);
    assert_eq!(read_all(&mut r), want_u);
}

/// A state of `len` bytes that compresses as a session does (repeats with changes).
pub(super) fn big_state(len: usize) -> Vec<u8> {
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        v.extend_from_slice(b"/registry/leases/kube-node-lease/node-");
        v.extend_from_slice(&rng.to_le_bytes());
    }
    v.truncate(len);
    v
}

#[test]
fn killed_writer_loses_only_pending_records() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("killed.rgs");
    let mut w = Writer::create(&p, HEADER).unwrap();
    let mut want = Vec::new();
    for i in 0..10 {
        rec(&mut w, &mut want, i, i, 1, &lease(i as u64, 7));
    }
    w.flush_segment().unwrap();
    w.append(11, 11, 1, b"never flushed").unwrap();
    assert_eq!(w.pending_records(), 1);
    assert!(w.bytes_written() > header_end());
    // Like SIGKILL: no destructor, no flush.
    std::mem::forget(w);
    let mut r = Reader::open(&p).unwrap();
    assert!(r.index_rebuilt());
    assert!(r.damage().is_empty());
    assert_eq!(read_all(&mut r), want);
}

#[test]
fn every_truncation_point_reads_a_prefix() {
    let (bytes, want) = sample_bytes();
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full.rgs");
    fs::write(&full, bytes).unwrap();
    let mut r = Reader::open(&full).unwrap();
    let frames = r.frames().to_vec();
    let counts: Vec<usize> = (0..frames.len())
        .map(|i| r.read_frame(i).unwrap().len())
        .collect();
    let len = bytes.len() as u64;
    let mut boundaries: Vec<u64> = vec![header_end(), len - TRAILER_LEN];
    boundaries.extend(frames.iter().map(|f| f.offset + f.len));

    let p = dir.path().join("cut.rgs");
    for cut in 0..=len {
        fs::write(&p, &bytes[..cut as usize]).unwrap();
        let mut r = match Reader::open(&p) {
            Err(e) => {
                assert!(cut < header_end(), "cut {cut}: {e}");
                assert!(
                    matches!(
                        e,
                        Error::Empty | Error::NotARecording | Error::HeaderUnreadable(_)
                    ),
                    "cut {cut}: {e}"
                );
                continue;
            }
            Ok(r) => r,
        };
        assert!(
            cut >= header_end(),
            "cut {cut} opened without a whole header"
        );
        let complete: usize = frames
            .iter()
            .zip(&counts)
            .filter(|(f, _)| f.offset + f.len <= cut)
            .map(|(_, c)| c)
            .sum();
        let got = read_all(&mut r);
        assert_eq!(got, want[..complete], "cut {cut}");
        if cut == len {
            assert!(!r.index_rebuilt());
            assert!(r.damage().is_empty());
        } else {
            assert!(r.index_rebuilt(), "cut {cut}");
            if !boundaries.contains(&cut) {
                let d = r
                    .damage()
                    .last()
                    .unwrap_or_else(|| panic!("cut {cut}: no damage"));
                assert_eq!(d.offset + d.len, cut, "cut {cut}");
                assert_eq!(d.before_time_ns, None);
            }
        }
        let rep = r.check();
        assert_eq!(rep.damage, r.damage());
        assert_eq!(
            rep.records as usize,
            got.iter()
                .filter(|i| matches!(i, Item::Record { .. }))
                .count()
        );
    }
}

/// Opens a damaged copy and checks the invariants every damage must keep.
fn check_damaged(bytes: &[u8], changed: &[usize], want: &[Item], dir: &Path) {
    let p = dir.join("flipped.rgs");
    fs::write(&p, bytes).unwrap();
    let in_header = changed.iter().any(|&o| (o as u64) < header_end());
    let mut r = match Reader::open(&p) {
        Err(e) => {
            assert!(in_header, "open failed for damage at {changed:?}: {e}");
            return;
        }
        Ok(r) => r,
    };
    assert!(!in_header, "damaged header at {changed:?} went unnoticed");
    let got = read_all(&mut r);
    assert!(
        is_subsequence(&got, want),
        "damage at {changed:?} produced foreign items"
    );
    let rep = r.check();
    if !changed.is_empty() {
        assert!(!rep.damage.is_empty(), "damage at {changed:?} not reported");
    }
    assert!(rep.records as usize <= want.len());
}

#[test]
fn every_single_byte_flip_is_detected_and_contained() {
    let (bytes, want) = sample_bytes();
    let dir = tempfile::tempdir().unwrap();
    for off in 0..bytes.len() {
        let mut b = bytes.clone();
        b[off] ^= 0x10;
        check_damaged(&b, &[off], want, dir.path());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
    #[test]
    fn random_byte_damage_never_yields_foreign_items(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)
    ) {
        let (bytes, want) = sample_bytes();
        let dir = tempfile::tempdir().unwrap();
        let mut b = bytes.clone();
        for (at, v) in &flips {
            let i = at.index(b.len());
            b[i] ^= v;
        }
        let changed: Vec<usize> = (0..b.len()).filter(|&i| b[i] != bytes[i]).collect();
        check_damaged(&b, &changed, want, dir.path());
    }

    #[test]
    fn arbitrary_bytes_after_the_header_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..600)) {
        let (bytes, _) = sample_bytes();
        let mut b = bytes[..header_end() as usize].to_vec();
        b.extend_from_slice(&tail);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("junk.rgs");
        fs::write(&p, &b).unwrap();
        let mut r = Reader::open(&p).unwrap();
        let _ = read_all(&mut r);
        let _ = r.check();
    }
}

#[test]
fn garbage_over_a_frame_is_skipped_and_located() {
    let (bytes, want) = sample_bytes();
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full.rgs");
    fs::write(&full, bytes).unwrap();
    let mut r = Reader::open(&full).unwrap();
    let frames = r.frames().to_vec();
    // The segment after the checkpoint: overwrite it with bytes that
    // contain frame magics but no valid frame.
    let k = frames
        .iter()
        .rposition(|f| f.kind == FrameKind::Segment && f.records == 10)
        .unwrap();
    let victim = &frames[k];
    let lost = r.read_frame(k).unwrap();
    let mut b = bytes.clone();
    let range = victim.offset as usize..(victim.offset + victim.len) as usize;
    for (n, i) in range.clone().enumerate() {
        b[i] = if n % 24 < 4 {
            FRAME_MAGIC[n % 24]
        } else {
            (n * 37) as u8
        };
    }
    // Drop the trailer too, so the index has to come from the scan.
    b.truncate(b.len() - TRAILER_LEN as usize);
    let p = dir.path().join("garbled.rgs");
    fs::write(&p, &b).unwrap();
    let mut r = Reader::open(&p).unwrap();
    assert!(r.index_rebuilt());
    assert_eq!(r.damage().len(), 1, "{:?}", r.damage());
    let d = &r.damage()[0];
    assert_eq!((d.offset, d.len), (victim.offset, victim.len));
    assert_eq!(d.after_time_ns, Some(frames[k - 1].last_time_ns));
    assert_eq!(d.after_rev, Some(frames[k - 1].last_rev));
    assert_eq!(d.before_time_ns, Some(frames[k + 1].first_time_ns));
    assert_eq!(d.before_rev, Some(frames[k + 1].first_rev));
    let got = read_all(&mut r);
    let expect: Vec<Item> = want.iter().filter(|i| !lost.contains(i)).cloned().collect();
    assert_eq!(got, expect);
}

#[test]
fn damaged_key_scrape_loses_its_deltas_only() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rec.rgs");
    let mut w = Writer::create_with(&p, HEADER, small_opts()).unwrap();
    let mut want = Vec::new();
    scrape(&mut w, &mut want, 1, 1, 0, &prom_body(0, 0));
    scrape(&mut w, &mut want, 2, 1, 0, &prom_body(0, 1));
    scrape(&mut w, &mut want, 3, 1, 0, &prom_body(0, 2));
    scrape(&mut w, &mut want, 4, 1, 7, &prom_body(7, 0));
    rec(&mut w, &mut want, 5, 2, 1, b"after");
    w.finish().unwrap();
    let frames = Reader::open(&p).unwrap().frames().to_vec();
    let key = &frames[0];
    let mut b = fs::read(&p).unwrap();
    b[(key.offset + key.len - 1) as usize] ^= 0xff;
    fs::write(&p, &b).unwrap();

    // Trailer index intact: the damage shows when frames are read.
    let mut r = Reader::open(&p).unwrap();
    assert!(!r.index_rebuilt());
    assert!(matches!(r.read_frame(0), Err(Error::Damaged { .. })));
    assert!(matches!(r.read_frame(2), Err(Error::BaseLost { base, .. }) if base == key.offset));
    assert_eq!(read_all(&mut r), want[3..].to_vec());
    let rep = r.check();
    assert_eq!(rep.damage.len(), 3, "{:?}", rep.damage);
    assert!(rep.damage[1].what.contains("lost") && rep.damage[2].what.contains("lost"));
    assert_eq!(rep.scrapes, 1);

    // Rebuilt by scan: the lost deltas are left out of the index.
    b.truncate(b.len() - TRAILER_LEN as usize);
    fs::write(&p, &b).unwrap();
    let mut r = Reader::open(&p).unwrap();
    assert!(r.index_rebuilt());
    assert_eq!(r.damage().len(), 3);
    assert_eq!(r.frames().len(), 2);
    assert_eq!(read_all(&mut r), want[3..].to_vec());
}

#[test]
fn prometheus_text_with_special_floats_round_trips_bit_for_bit() {
    let Some(td) = crate::testdata::dir() else {
        return;
    };
    let mut body = fs::read(td.join("apiserver-metrics/kube-apiserver-v1.34.0.prom"))
        .expect("the kube-apiserver 1.34 capture in the golden data");
    body.extend_from_slice(
        b"# TYPE regscope_special gauge\n\
          regscope_special{v=\"nan\"} NaN\n\
          regscope_special{v=\"pinf\"} +Inf\n\
          regscope_special{v=\"ninf\"} -Inf\n\
          regscope_special{v=\"nzero\"} -0\n\
          regscope_special{v=\"tiny\"} 4.9406564584124654e-324\n\
          regscope_special{v=\"ts\"} 1.5e+308 1700000000000\r\n\
          regscope_bytes{v=\"\xff\xfe\"} 0x1p-3\n",
    );
    let mut next = body.clone();
    let pos = next.len() / 2;
    next.splice(
        pos..pos,
        b"etcd_request_duration_seconds_bucket{le=\"+Inf\"} -0\n"
            .iter()
            .copied(),
    );
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("prom.rgs");
    let mut w = Writer::create(&p, HEADER).unwrap();
    w.append_scrape(1, 1, 0, "https://127.0.0.1:6443/metrics", &body)
        .unwrap();
    w.append_scrape(2, 2, 0, "https://127.0.0.1:6443/metrics", &next)
        .unwrap();
    w.finish().unwrap();
    let mut r = Reader::open(&p).unwrap();
    assert!(r.frames()[1].delta);
    let items = read_all(&mut r);
    match (&items[0], &items[1]) {
        (Item::Scrape { body: a, .. }, Item::Scrape { body: b, .. }) => {
            assert!(a == &body, "key body differs");
            assert!(b == &next, "delta body differs");
        }
        other => panic!("unexpected items {other:?}"),
    }
}

#[test]
fn files_are_private_and_never_clobbered_by_accident() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rec.rgs");
    Writer::create(&p, HEADER).unwrap().finish().unwrap();
    assert_eq!(
        fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let e = Writer::create(&p, b"other").err().unwrap();
    assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
    assert_eq!(Reader::open(&p).unwrap().header(), HEADER);

    fs::set_permissions(&p, Permissions::from_mode(0o644)).unwrap();
    let opts = WriterOptions {
        overwrite: true,
        ..WriterOptions::default()
    };
    Writer::create_with(&p, b"other", opts)
        .unwrap()
        .finish()
        .unwrap();
    assert_eq!(
        fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(Reader::open(&p).unwrap().header(), b"other");
}

#[test]
fn open_rejects_what_is_not_a_readable_recording() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x");
    fs::write(&p, b"").unwrap();
    assert!(matches!(Reader::open(&p), Err(Error::Empty)));
    for (bytes, what) in [
        (&b"RGSCOPE"[..], "short"),
        (&b"# HELP not a recording\n"[..], "text"),
    ] {
        fs::write(&p, bytes).unwrap();
        assert!(
            matches!(Reader::open(&p), Err(Error::NotARecording)),
            "{what}"
        );
    }
    let (bytes, _) = sample_bytes();
    let mut b = bytes.clone();
    b[8] = 3;
    fs::write(&p, &b).unwrap();
    assert!(matches!(
        Reader::open(&p),
        Err(Error::UnsupportedVersion(3))
    ));
    fs::write(&p, &bytes[..header_end() as usize - 1]).unwrap();
    assert!(matches!(Reader::open(&p), Err(Error::HeaderUnreadable(_))));
    assert!(matches!(
        Reader::open(&dir.path().join("missing")),
        Err(Error::Io(_))
    ));
}

#[test]
fn writer_limits_and_segment_splitting() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("limits.rgs");
    let opts = WriterOptions {
        segment_limit: 4096,
        ..WriterOptions::default()
    };
    let mut w = Writer::create_with(&p, HEADER, opts).unwrap();
    let mut want = Vec::new();
    let big = vec![0xa5u8; 10_000];
    for i in 0..20 {
        rec(&mut w, &mut want, i, i, 1, &lease(i as u64, 1));
    }
    rec(&mut w, &mut want, 20, 20, 9, &big);
    for i in 21..200 {
        rec(&mut w, &mut want, i, i, 1, &lease(i as u64, 1));
    }
    let long = "x".repeat(MAX_SOURCE_LEN + 1);
    assert_eq!(
        w.append_scrape(0, 0, 0, &long, b"").unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
    w.finish().unwrap();
    let mut r = Reader::open(&p).unwrap();
    assert!(r.frames().len() > 3, "segment limit not applied");
    assert!(
        r.frames().iter().any(|f| f.records == 1),
        "oversized record not alone"
    );
    assert_eq!(read_all(&mut r), want);
    assert!(r.check().is_clean());
}
