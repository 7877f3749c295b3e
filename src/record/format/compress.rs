//! zstd for the recording's frames: a delta scrape compressed against its base body as a
//! raw-content prefix, decoding in one call with a context kept per thread where the
//! declared length is plausible and else growing the output only as far as the frame
//! really expands, and a checkpoint's several frames decoded on several cores.

use std::io;

use zstd::zstd_safe::{CCtx, CParameter, DCtx, DParameter, InBuffer, OutBuffer};

use super::{WINDOW_LOG_MAX, WINDOW_LOG_MIN};

fn zstd_err(code: usize) -> String {
    format!("zstd: {}", zstd::zstd_safe::get_error_name(code))
}

pub(super) fn io_other(msg: String) -> io::Error {
    io::Error::other(msg)
}

/// Smallest window log whose window covers `n` bytes, clamped to what every
/// decoder accepts by default.
fn window_log_for(n: usize) -> u32 {
    let mut w = WINDOW_LOG_MIN;
    while w < WINDOW_LOG_MAX && (1usize << w) < n {
        w += 1;
    }
    w
}

/// Compresses `body` with `prefix` as raw-content history. Long-distance
/// matching and a window spanning prefix plus body are what let a 4 MB scrape
/// find its unchanged lines in the previous one: with the level's default
/// window (2 MiB at level 3) most of the prefix would be out of reach.
pub(super) fn compress_with_prefix(prefix: &[u8], body: &[u8], level: i32) -> io::Result<Vec<u8>> {
    let mut cctx = CCtx::try_create().ok_or_else(|| io_other("zstd: no memory".into()))?;
    let wlog = window_log_for(prefix.len().saturating_add(body.len()));
    for p in [
        CParameter::CompressionLevel(level),
        CParameter::WindowLog(wlog),
        CParameter::EnableLongDistanceMatching(true),
        CParameter::ContentSizeFlag(true),
        CParameter::ChecksumFlag(false),
    ] {
        cctx.set_parameter(p).map_err(|c| io_other(zstd_err(c)))?;
    }
    cctx.ref_prefix(prefix).map_err(|c| io_other(zstd_err(c)))?;
    let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(body.len()));
    cctx.compress2(&mut out, body)
        .map_err(|c| io_other(zstd_err(c)))?;
    Ok(out)
}

/// Decompresses exactly one zstd frame that must fill exactly `expected`
/// bytes. Memory grows with the output actually produced (starting from a
/// guess tied to the compressed size), so a lying length costs at most the
/// bytes the frame really expands to, and never more than `expected + 1`.
pub(super) fn zstd_decode(
    src: &[u8],
    prefix: Option<&[u8]>,
    expected: usize,
) -> Result<Vec<u8>, String> {
    let limit = expected.saturating_add(1);
    let first = limit.min(src.len().saturating_mul(64).saturating_add(1 << 20));
    if prefix.is_none() && first == limit {
        // The declared length is plausible for the frame: decode in one call straight
        // into a buffer of that length, with this thread's context (a replay decodes
        // thousands of segments; a context per segment and the streaming calls cost a
        // tenth of the read-ahead's zstd time, `cargo bench --bench record -- replay`).
        return zstd_decode_once(src, expected);
    }
    let mut dctx = DCtx::try_create().ok_or("zstd: no memory")?;
    dctx.set_parameter(DParameter::WindowLogMax(WINDOW_LOG_MAX))
        .map_err(zstd_err)?;
    if let Some(p) = prefix {
        dctx.ref_prefix(p).map_err(zstd_err)?;
    }
    let mut out: Vec<u8> = Vec::new();
    out.try_reserve_exact(first)
        .map_err(|_| format!("cannot allocate {first} bytes"))?;
    let mut input = InBuffer::around(src);
    loop {
        if out.len() >= out.capacity() {
            if out.len() >= limit {
                return Err(format!("zstd frame decodes to more than {expected} bytes"));
            }
            let grow = out.len().max(1 << 16).min(limit - out.len());
            out.try_reserve_exact(grow)
                .map_err(|_| format!("cannot allocate {grow} more bytes"))?;
        }
        let (in_before, out_before) = (input.pos, out.len());
        let hint = {
            let mut ob = OutBuffer::around_pos(&mut out, out_before);
            dctx.decompress_stream(&mut ob, &mut input)
                .map_err(zstd_err)?
        };
        if hint == 0 {
            break;
        }
        if input.pos == in_before && out.len() == out_before {
            return Err("zstd frame is truncated".into());
        }
    }
    if input.pos != src.len() {
        return Err("bytes left after the zstd frame".into());
    }
    if out.len() != expected {
        return Err(format!(
            "zstd frame decodes to {} bytes, {expected} declared",
            out.len()
        ));
    }
    Ok(out)
}

/// [`zstd_decode`] of a frame without prefix whose declared length `expected` is
/// allocated up front: one call with a context kept per thread. The same errors: a frame
/// that decodes to more or fewer bytes, a truncated frame, bytes after the frame.
fn zstd_decode_once(src: &[u8], expected: usize) -> Result<Vec<u8>, String> {
    thread_local! {
        static DCTX: std::cell::RefCell<Option<DCtx<'static>>> = const { std::cell::RefCell::new(None) };
    }
    let frame_len = zstd::zstd_safe::find_frame_compressed_size(src).map_err(zstd_err)?;
    if frame_len != src.len() {
        return Err("bytes left after the zstd frame".into());
    }
    let mut out: Vec<u8> = Vec::new();
    out.try_reserve_exact(expected)
        .map_err(|_| format!("cannot allocate {expected} bytes"))?;
    DCTX.with(|cell| {
        let mut slot = cell
            .try_borrow_mut()
            .map_err(|_| "zstd: context busy".to_string())?;
        if slot.is_none() {
            let mut d = DCtx::try_create().ok_or("zstd: no memory")?;
            d.set_parameter(DParameter::WindowLogMax(WINDOW_LOG_MAX))
                .map_err(zstd_err)?;
            *slot = Some(d);
        }
        let dctx = slot.as_mut().expect("set above");
        match dctx.decompress(&mut out, src) {
            Ok(_) => Ok(()),
            Err(code) => {
                // A failed call leaves the context mid-frame: start the next one afresh.
                let _ = dctx.reset(zstd::zstd_safe::ResetDirective::SessionOnly);
                // A frame longer than declared fails as "Destination buffer is too small".
                Err(format!("{} ({expected} bytes declared)", zstd_err(code)))
            }
        }
    })?;
    if out.len() != expected {
        return Err(format!(
            "zstd frame decodes to {} bytes, {expected} declared",
            out.len()
        ));
    }
    Ok(out)
}

/// Decompresses a sequence of zstd frames, each carrying its content size, that together
/// must fill exactly `expected` bytes, and the crc32 of the output. The frames are decoded
/// (and checksummed) on up to `available_parallelism` threads at once, straight into their
/// place in the output. A single frame goes through [`zstd_decode`].
pub(super) fn zstd_decode_frames(src: &[u8], expected: usize) -> Result<(Vec<u8>, u32), String> {
    // Where each frame is and what it decodes to, without decoding it.
    let mut frames: Vec<(&[u8], usize)> = Vec::new();
    let (mut pos, mut total) = (0usize, 0usize);
    while pos < src.len() {
        let rest = &src[pos..];
        let n = zstd::zstd_safe::find_frame_compressed_size(rest).map_err(zstd_err)?;
        let frame = rest.get(..n).ok_or("zstd frame is truncated")?;
        let size = match zstd::zstd_safe::get_frame_content_size(frame) {
            Ok(Some(size)) => usize::try_from(size).map_err(|_| "zstd frame too large")?,
            Ok(None) => return Err("zstd frame without its content size".into()),
            Err(_) => return Err("zstd frame header unreadable".into()),
        };
        total = total
            .checked_add(size)
            .filter(|t| *t <= expected)
            .ok_or_else(|| format!("zstd frames decode to more than {expected} bytes"))?;
        frames.push((frame, size));
        pos += n;
    }
    if frames.len() <= 1 {
        let out = zstd_decode(src, None, expected)?;
        let crc = crc32fast::hash(&out);
        return Ok((out, crc));
    }
    if total != expected {
        return Err(format!(
            "zstd frames decode to {total} bytes, {expected} declared"
        ));
    }
    // `expected` (at most MAX_CHECKPOINT_LEN) agrees with every frame's own header. A
    // zeroed allocation of this size is fresh pages from the kernel: nothing is written
    // here, the pages are faulted in by the decoding threads.
    let mut out = vec![0u8; expected];
    let count = frames.len();
    let mut jobs: Vec<(usize, &[u8], &mut [u8])> = Vec::with_capacity(count);
    let mut dst: &mut [u8] = &mut out;
    for (i, (frame, size)) in frames.into_iter().enumerate() {
        let (here, rest) = dst.split_at_mut(size);
        jobs.push((i, frame, here));
        dst = rest;
    }
    let crcs = std::sync::Mutex::new(vec![None::<crc32fast::Hasher>; count]);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8)
        .min(jobs.len());
    let next = std::sync::Mutex::new(jobs.into_iter());
    let decode_all = || -> Result<(), String> {
        let mut dctx = DCtx::try_create().ok_or("zstd: no memory")?;
        dctx.set_parameter(DParameter::WindowLogMax(WINDOW_LOG_MAX))
            .map_err(zstd_err)?;
        loop {
            let job = next.lock().map_err(|_| "zstd worker failed")?.next();
            let Some((i, frame, here)) = job else {
                return Ok(());
            };
            let want = here.len();
            let got = dctx.decompress(here, frame).map_err(zstd_err)?;
            if got != want {
                return Err(format!(
                    "zstd frame decodes to {got} bytes, {want} declared"
                ));
            }
            let mut h = crc32fast::Hasher::new();
            h.update(here);
            if let Some(slot) = crcs.lock().map_err(|_| "zstd worker failed")?.get_mut(i) {
                *slot = Some(h);
            }
        }
    };
    std::thread::scope(|scope| {
        let workers: Vec<_> = (1..threads).map(|_| scope.spawn(decode_all)).collect();
        let mut result = decode_all();
        for w in workers {
            let r = w
                .join()
                .unwrap_or_else(|_| Err("zstd worker failed".into()));
            result = result.and(r);
        }
        result
    })?;
    let mut crc = crc32fast::Hasher::new();
    for h in crcs.into_inner().map_err(|_| "zstd worker failed")? {
        crc.combine(&h.ok_or("zstd frame not decoded")?);
    }
    Ok((out, crc.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::format::tests::big_state;

    #[test]
    fn window_logs_cover_the_input_within_the_decoder_limit() {
        assert_eq!(window_log_for(0), WINDOW_LOG_MIN);
        assert_eq!(window_log_for(7 << 20), 23);
        assert_eq!(window_log_for(usize::MAX), WINDOW_LOG_MAX);
    }

    #[test]
    fn checkpoint_frames_that_disagree_with_the_declared_length_are_refused() {
        let a = zstd::bulk::compress(&big_state(1000), 1).unwrap();
        let b = zstd::bulk::compress(&big_state(500), 1).unwrap();
        let two = [a.clone(), b.clone()].concat();
        let (out, crc) = zstd_decode_frames(&two, 1500).unwrap();
        assert_eq!(out.len(), 1500);
        assert_eq!(crc, crc32fast::hash(&out));
        for (src, len) in [(&two, 1499), (&two, 1501), (&two, 10)] {
            assert!(zstd_decode_frames(src, len).is_err(), "{len}");
        }
        // A truncated second frame, and garbage after the frames.
        assert!(zstd_decode_frames(&two[..two.len() - 3], 1500).is_err());
        let junk = [two.clone(), b"junk".to_vec()].concat();
        assert!(zstd_decode_frames(&junk, 1500).is_err());
    }

    #[test]
    fn one_call_decoding_refuses_what_streaming_refuses_and_recovers() {
        let body = big_state(1000);
        let a = zstd::bulk::compress(&body, 1).unwrap();
        // Both paths: one call (plausible length) and streaming (a length far beyond
        // what the frame could hold takes the streaming path, and fails there).
        assert_eq!(zstd_decode(&a, None, 1000).unwrap(), body);
        for (src, len) in [
            (a.clone(), 999),
            (a.clone(), 1001),
            (a[..a.len() - 3].to_vec(), 1000),
            ([a.clone(), b"junk".to_vec()].concat(), 1000),
            ([a.clone(), a.clone()].concat(), 2000),
            (b"not zstd".to_vec(), 1000),
            (a.clone(), 1 << 40),
        ] {
            let e = zstd_decode(&src, None, len);
            assert!(e.is_err(), "{} bytes declared {len}: {e:?}", src.len());
            // The thread's context decodes the next frame after a failure.
            assert_eq!(zstd_decode(&a, None, 1000).unwrap(), body);
        }
    }
}
