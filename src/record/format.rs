//! Append-only, versioned, framed container for regscope session recordings.
//!
//! A recording is one file. The [`Writer`] takes three kinds of input from the
//! recorder and frames, checksums, compresses and indexes them:
//!
//! * **records**: opaque encoded observations (a kind byte plus payload
//!   bytes), buffered in memory and written in batches called *segments*;
//! * **scrapes**: Prometheus text bodies (3–4 MB every 5 s, nearly identical
//!   from one scrape to the next), each stored in its own frame, usually as a
//!   zstd *delta* against the previous body of the same target;
//! * **checkpoints**: opaque blobs holding the whole replica state, from which
//!   a player can start without reading anything before them.
//!
//! The [`Reader`] finds frames through the index at the end of the file or,
//! when the recorder was killed or the file is damaged, by scanning. It skips
//! damaged bytes, resynchronises on the next valid frame and reports what was
//! lost as [`Damage`]. It never panics on any input and never reads the whole
//! file into memory.
//!
//! Every byte handed to the writer comes back bit for bit: the module never
//! looks inside payloads, bodies or blobs.
//!
//! # Conventions
//!
//! * All integers are little-endian. `u16`/`u32`/`u64` are unsigned, `i64` is
//!   two's complement.
//! * Times are `i64` unix nanoseconds as given by the caller (not checked for
//!   monotonicity). Revisions are `i64`: the caller's "highest etcd revision
//!   known when this was written", expected non-decreasing, may be 0, stored
//!   verbatim.
//! * "crc32" is CRC-32/IEEE (polynomial 0x04C11DB7 reflected, as computed by
//!   `crc32fast`, zlib and gzip).
//! * "zstd" means exactly one complete zstd frame (RFC 8878; a checkpoint may
//!   hold several, see below) carrying its content size, no dictionary id and
//!   no zstd checksum (the frame crc already covers the compressed bytes and
//!   the uncompressed length and crc are stored beside it where it matters).
//! * "uvarint" is unsigned LEB128 (7 bits per byte, low group first, high bit
//!   set on all but the last byte, at most 10 bytes); "svarint" is a uvarint
//!   of the zigzag encoding `(n << 1) ^ (n >> 63)`.
//!
//! # File layout, format version 2
//!
//! ```text
//! +-------------+--------------+----------------------------+-------------+---------+
//! | file header | Header frame | Segment/Scrape/Checkpoint… | Index frame | trailer |
//! |  10 bytes   |              |        frames              | (finish())  | 20 bytes|
//! +-------------+--------------+----------------------------+-------------+---------+
//! ```
//!
//! Frames follow each other with no padding. A recording whose writer was
//! killed simply ends after its last complete frame (or in the middle of one);
//! the Index frame and the trailer exist only when [`Writer::finish`] ran.
//!
//! ## File header (offset 0, 10 bytes)
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0 | 8 | magic `52 47 53 43 4F 50 45 00` (`b"RGSCOPE\0"`) |
//! | 8 | 2 | u16 format version, `2` (a reader also reads `1`) |
//!
//! ## Frame (20-byte header, then the payload)
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0 | 4 | frame magic `D7 A1 5C 8E` (u32 `0x8E5CA1D7`) |
//! | 4 | 1 | u8 kind: 1 Header, 2 Segment, 3 Scrape, 4 Checkpoint, 5 Index |
//! | 5 | 1 | u8 flags, `0` (a version-1 reader treats other values as damage) |
//! | 6 | 2 | u16 reserved, `0` (idem) |
//! | 8 | 4 | u32 payload length `L` in bytes |
//! | 12 | 4 | u32 crc32 of the `L` payload bytes |
//! | 16 | 4 | u32 crc32 of header bytes 0..16 |
//! | 20 | L | payload |
//!
//! The header crc lets a resynchronising scanner reject bytes that merely
//! contain the magic before it trusts the length; the payload crc then
//! confirms the frame. A frame's total size is `20 + L`.
//!
//! ### Kind 1, Header (exactly one, at offset 10)
//!
//! The payload is the caller's session header, opaque, uncompressed.
//!
//! ### Kind 2, Segment (a batch of records)
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0 | 4 | u32 record count `n` (≥ 1) |
//! | 4 | 4 | u32 uncompressed length `R` of the record block, bytes (≤ 1 GiB) |
//! | 8 | 8 | i64 time of the first record, ns |
//! | 16 | 8 | i64 time of the last record, ns |
//! | 24 | 8 | i64 revision of the first record |
//! | 32 | 8 | i64 revision of the last record |
//! | 40 | L−40 | zstd of the `R`-byte record block |
//!
//! The record block is `n` records back to back, each:
//!
//! | field | encoding |
//! |-------|----------|
//! | kind | u8, the caller's |
//! | time | svarint of `time − previous time` (wrapping), the first record's previous time being the summary's first time |
//! | revision | svarint of `revision − previous revision` (wrapping), likewise from the summary's first revision |
//! | length | uvarint, payload bytes |
//! | payload | `length` bytes |
//!
//! A reader checks that the block decodes to exactly `n` records ending on
//! the summary's last time and revision with no byte left over.
//!
//! ### Kind 3, Scrape (one body, never inside a segment)
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0 | 8 | i64 time, ns |
//! | 8 | 8 | i64 revision |
//! | 16 | 8 | u64 file offset of the base frame (the previous Scrape frame of this target) for a delta, `0` for a key |
//! | 24 | 8 | u64 uncompressed body length, bytes (≤ 256 MiB) |
//! | 32 | 4 | u32 crc32 of the uncompressed body |
//! | 36 | 1 | u8 target |
//! | 37 | 1 | u8 encoding: `0` key, `1` delta |
//! | 38 | 2 | u16 source length `S`, bytes (≤ 4096) |
//! | 40 | S | source, UTF-8 (e.g. the scrape URL) |
//! | 40+S | L−40−S | zstd of the body |
//!
//! A *key* body is compressed alone. A *delta* body is compressed with the
//! base frame's uncompressed body referenced as a raw-content prefix
//! (`ZSTD_CCtx_refPrefix`, long-distance matching on, window log chosen so
//! the window covers prefix plus body, at most 27); decoding needs the base
//! body, which may itself be a delta. The writer makes a key at least every
//! [`WriterOptions::key_interval`] scrapes of a target, for the first scrape
//! of a target after every checkpoint, and whenever the source string of the
//! target changes, so a chain is bounded and never crosses a checkpoint.
//!
//! ### Kind 4, Checkpoint
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0 | 8 | i64 time, ns |
//! | 8 | 8 | i64 revision |
//! | 16 | 8 | u64 uncompressed state length, bytes (≤ 16 GiB) |
//! | 24 | 4 | u32 crc32 of the uncompressed state |
//! | 28 | L−28 | zstd of the state, in one or more frames back to back |
//!
//! Each zstd frame holds at most [`CHECKPOINT_CHUNK_LEN`] bytes of the state
//! (format version 2; version 1 has exactly one frame), so that a reader can
//! decode them on several cores at once.
//!
//! ### Kind 5, Index (written by [`Writer::finish`], last frame)
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0 | 4 | u32 entry size `E` in bytes (`52`; a reader ignores bytes past 52) |
//! | 4 | 4 | u32 entry count `m` |
//! | 8 | m·E | entries, one per Segment, Scrape and Checkpoint frame, in file order |
//!
//! Entry (52 bytes):
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0 | 8 | u64 frame offset |
//! | 8 | 4 | u32 frame payload length `L` |
//! | 12 | 4 | u32 records (segment count; 1 for scrapes and checkpoints) |
//! | 16 | 1 | u8 frame kind |
//! | 17 | 1 | u8 scrape target (0 for other kinds) |
//! | 18 | 1 | u8 scrape encoding (0 key, 1 delta; 0 for other kinds) |
//! | 19 | 1 | u8 reserved, 0 |
//! | 20 | 8 | i64 first time, ns |
//! | 28 | 8 | i64 last time, ns |
//! | 36 | 8 | i64 first revision |
//! | 44 | 8 | i64 last revision |
//!
//! The header frame and the index frame itself are not listed. The entries
//! must tile the file exactly from the end of the Header frame to the Index
//! frame, or the reader ignores the index and scans.
//!
//! ## Trailer (last 20 bytes of a finished file; not a frame)
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0 | 8 | u64 file offset of the Index frame |
//! | 8 | 4 | u32 crc32 of trailer bytes 0..8 |
//! | 12 | 8 | magic `52 47 53 43 45 4E 44 00` (`b"RGSCEND\0"`) |
//!
//! The Index frame must end exactly where the trailer starts.
//!
//! # Damage and recovery
//!
//! [`Reader::open`] fails only when the file is not a recording, has another
//! version, or its Header frame is unreadable. When the trailer or index is
//! missing or invalid it scans from the end of the Header frame: a frame is
//! accepted when its magic, header crc, length (within the file) and payload
//! crc are all valid; otherwise the scanner searches forward byte by byte for
//! the next frame magic and reports the skipped bytes as one [`Damage`],
//! giving the last good time and revision before the gap and the first good
//! ones after it. A delta scrape whose base frame was lost is itself reported
//! lost and left out. Payload decompression is checked only when a frame is
//! read ([`Reader::read_frame`]) or verified ([`Reader::check`]).

use std::collections::HashMap;
use std::fmt;
use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use zstd::zstd_safe::{CCtx, CParameter, DCtx, DParameter, InBuffer, OutBuffer};

/// First 8 bytes of every recording.
pub const FILE_MAGIC: [u8; 8] = *b"RGSCOPE\x00";
/// Format version written after [`FILE_MAGIC`] (u16 LE at offset 8). Version 2 differs
/// from 1 only in the Checkpoint frame, whose state may be several zstd frames; a reader
/// of version 2 reads both.
pub const FORMAT_VERSION: u16 = 2;
/// Oldest format version [`Reader::open`] reads.
pub const OLDEST_READ_VERSION: u16 = 1;
/// Bytes of checkpoint state per zstd frame: the reader decompresses the frames on all
/// cores at once (a 300 MB state in 16 MiB frames costs about 1 % more file than one frame).
pub const CHECKPOINT_CHUNK_LEN: usize = 16 << 20;
/// Size of magic plus version, in bytes: the Header frame starts here.
pub const FILE_HEADER_LEN: u64 = 10;
/// First 4 bytes of every frame (u32 LE `0x8E5CA1D7`), searched for when
/// resynchronising after damage.
pub const FRAME_MAGIC: [u8; 4] = 0x8E5C_A1D7_u32.to_le_bytes();
/// Size of a frame header, in bytes.
pub const FRAME_HEADER_LEN: u64 = 20;
/// Magic ending a finished file.
pub const TRAILER_MAGIC: [u8; 8] = *b"RGSCEND\x00";
/// Size of the trailer, in bytes.
pub const TRAILER_LEN: u64 = 20;
/// Default for [`WriterOptions::key_interval`], in scrapes.
pub const DEFAULT_KEY_INTERVAL: u32 = 60;
/// Default for [`WriterOptions::segment_limit`], in bytes.
pub const DEFAULT_SEGMENT_LIMIT: usize = 1 << 20;
/// Largest record payload accepted by [`Writer::append`], in bytes.
pub const MAX_RECORD_LEN: usize = 256 << 20;
/// Largest scrape body accepted by [`Writer::append_scrape`], in bytes.
pub const MAX_SCRAPE_LEN: usize = 256 << 20;
/// Largest scrape source string, in bytes of UTF-8.
pub const MAX_SOURCE_LEN: usize = 4096;
/// Largest checkpoint state accepted by [`Writer::checkpoint`], in bytes.
pub const MAX_CHECKPOINT_LEN: u64 = 16 << 30;

/// Upper bound on a segment's uncompressed block: a reader refuses more, so a
/// crafted file cannot make it allocate without bound.
const MAX_SEGMENT_RAW: u64 = 1 << 30;
/// Keeps `MAX_SEGMENT_RAW` reachable only by a limit plus one maximal record.
const MAX_SEGMENT_LIMIT: usize = 512 << 20;
/// zstd's default decoder limit; the writer never asks for a larger window so
/// any stock zstd can decode the frames.
const WINDOW_LOG_MAX: u32 = 27;
const WINDOW_LOG_MIN: u32 = 10;
const SEGMENT_SUMMARY_LEN: usize = 40;
const SCRAPE_FIXED_LEN: usize = 40;
const CHECKPOINT_FIXED_LEN: usize = 28;
const INDEX_PREAMBLE_LEN: usize = 8;
const INDEX_ENTRY_LEN: usize = 52;
const ENCODING_KEY: u8 = 0;
const ENCODING_DELTA: u8 = 1;

/// Kind byte of a frame (offset 4 of the frame header).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// The caller's session header; exactly one, first.
    Header = 1,
    /// A zstd-compressed batch of records.
    Segment = 2,
    /// One scrape body, key or delta.
    Scrape = 3,
    /// One compressed replica-state blob.
    Checkpoint = 4,
    /// The frame index written by [`Writer::finish`].
    Index = 5,
}

impl FrameKind {
    /// Maps a kind byte to a kind; `None` for bytes no version-1 writer uses.
    pub fn from_u8(b: u8) -> Option<FrameKind> {
        match b {
            1 => Some(FrameKind::Header),
            2 => Some(FrameKind::Segment),
            3 => Some(FrameKind::Scrape),
            4 => Some(FrameKind::Checkpoint),
            5 => Some(FrameKind::Index),
            _ => None,
        }
    }

    /// The kind byte stored in the frame header.
    pub fn as_u8(self) -> u8 {
        self as u8
    }
}

fn kind_name(b: u8) -> String {
    match FrameKind::from_u8(b) {
        Some(k) => format!("{k:?}"),
        None => format!("kind-{b}"),
    }
}

// ---------------------------------------------------------------------------
// Byte-level helpers
// ---------------------------------------------------------------------------

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

fn put_uvarint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// Bounds-checked little-endian reader over a byte slice; every failure is a
/// description of malformed data, never a panic.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| format!("data ends early (need {n} bytes at {})", self.pos))?;
        let s = self
            .buf
            .get(self.pos..end)
            .ok_or_else(|| "data ends early".to_string())?;
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        <[u8; N]>::try_from(self.take(N)?).map_err(|_| "data ends early".to_string())
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    fn uvarint(&mut self) -> Result<u64, String> {
        let mut x: u64 = 0;
        for i in 0..10u32 {
            let b = self.u8()?;
            if i == 9 && b > 1 {
                return Err("varint overflows 64 bits".into());
            }
            x |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(x);
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    fn rest(&mut self) -> &'a [u8] {
        let s = self.buf.get(self.pos..).unwrap_or(&[]);
        self.pos = self.buf.len();
        s
    }

    fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }
}

fn frame_header(kind: FrameKind, len: u32, crc: u32) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[0..4].copy_from_slice(&FRAME_MAGIC);
    h[4] = kind.as_u8();
    // h[5] flags and h[6..8] reserved stay zero.
    h[8..12].copy_from_slice(&len.to_le_bytes());
    h[12..16].copy_from_slice(&crc.to_le_bytes());
    let hc = crc32fast::hash(&h[0..16]);
    h[16..20].copy_from_slice(&hc.to_le_bytes());
    h
}

struct RawHeader {
    kind: u8,
    len: u32,
    crc: u32,
}

fn parse_frame_header(h: &[u8; 20]) -> Result<RawHeader, String> {
    let mut c = Cursor::new(h);
    if c.array::<4>()? != FRAME_MAGIC {
        return Err("no frame magic".into());
    }
    let kind = c.u8()?;
    let flags = c.u8()?;
    let reserved = c.u16()?;
    let len = c.u32()?;
    let crc = c.u32()?;
    let hcrc = c.u32()?;
    let covered = h.get(0..16).ok_or("short header")?;
    if crc32fast::hash(covered) != hcrc {
        return Err("frame header checksum mismatch".into());
    }
    if flags != 0 || reserved != 0 {
        return Err(format!(
            "{} frame header has unknown flags {flags:#x}/{reserved:#x}",
            kind_name(kind)
        ));
    }
    Ok(RawHeader { kind, len, crc })
}

fn trailer_bytes(index_offset: u64) -> [u8; 20] {
    let mut t = [0u8; 20];
    let off = index_offset.to_le_bytes();
    t[0..8].copy_from_slice(&off);
    t[8..12].copy_from_slice(&crc32fast::hash(&off).to_le_bytes());
    t[12..20].copy_from_slice(&TRAILER_MAGIC);
    t
}

fn parse_trailer(t: &[u8; 20]) -> Option<u64> {
    let mut c = Cursor::new(t);
    let off = c.array::<8>().ok()?;
    let crc = c.u32().ok()?;
    let magic = c.array::<8>().ok()?;
    (magic == TRAILER_MAGIC && crc32fast::hash(&off) == crc).then(|| u64::from_le_bytes(off))
}

fn zstd_err(code: usize) -> String {
    format!("zstd: {}", zstd::zstd_safe::get_error_name(code))
}

fn io_other(msg: String) -> io::Error {
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
fn compress_with_prefix(prefix: &[u8], body: &[u8], level: i32) -> io::Result<Vec<u8>> {
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
fn zstd_decode(src: &[u8], prefix: Option<&[u8]>, expected: usize) -> Result<Vec<u8>, String> {
    let mut dctx = DCtx::try_create().ok_or("zstd: no memory")?;
    dctx.set_parameter(DParameter::WindowLogMax(WINDOW_LOG_MAX))
        .map_err(zstd_err)?;
    if let Some(p) = prefix {
        dctx.ref_prefix(p).map_err(zstd_err)?;
    }
    let limit = expected.saturating_add(1);
    let first = limit.min(src.len().saturating_mul(64).saturating_add(1 << 20));
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

/// Decompresses a sequence of zstd frames, each carrying its content size, that together
/// must fill exactly `expected` bytes, and the crc32 of the output. The frames are decoded
/// (and checksummed) on up to `available_parallelism` threads at once, straight into their
/// place in the output. A single frame goes through [`zstd_decode`].
fn zstd_decode_frames(src: &[u8], expected: usize) -> Result<(Vec<u8>, u32), String> {
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

// ---------------------------------------------------------------------------
// Public value types
// ---------------------------------------------------------------------------

/// Index entry of one good Segment, Scrape or Checkpoint frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    /// File offset of the frame header, bytes.
    pub offset: u64,
    /// Whole frame size (20-byte header plus payload), bytes.
    pub len: u64,
    /// Frame kind (never `Header` or `Index` in [`Reader::frames`]).
    pub kind: FrameKind,
    /// Time of the first record (scrape/checkpoint: its time), unix ns.
    pub first_time_ns: i64,
    /// Time of the last record (scrape/checkpoint: its time), unix ns.
    pub last_time_ns: i64,
    /// Revision of the first record (scrape/checkpoint: its revision).
    pub first_rev: i64,
    /// Revision of the last record (scrape/checkpoint: its revision).
    pub last_rev: i64,
    /// Number of items in the frame: records of a segment, 1 otherwise.
    pub records: u32,
    /// Scrape target for Scrape frames, `None` otherwise.
    pub target: Option<u8>,
    /// True for a Scrape frame stored as a delta against an earlier body.
    pub delta: bool,
}

/// A stretch of the file that could not be read, or an item lost with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// File offset where the damage starts, bytes.
    pub offset: u64,
    /// Length of the damaged stretch, bytes (to the next good frame or EOF).
    pub len: u64,
    /// Last time of the good frame just before the damage, unix ns.
    pub after_time_ns: Option<i64>,
    /// First time of the good frame just after the damage, unix ns (`None`
    /// when the damage runs to the end of the file).
    pub before_time_ns: Option<i64>,
    /// Last revision of the good frame just before the damage.
    pub after_rev: Option<i64>,
    /// First revision of the good frame just after the damage.
    pub before_rev: Option<i64>,
    /// What was lost and why, for a person.
    pub what: String,
}

/// One item read back, exactly as handed to the [`Writer`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// A record from [`Writer::append`].
    Record {
        /// Unix ns.
        time_ns: i64,
        /// Caller's revision.
        revision: i64,
        /// Caller's kind byte.
        kind: u8,
        /// Caller's payload bytes (a slice of the segment's decompressed block).
        payload: Bytes,
    },
    /// A scrape from [`Writer::append_scrape`].
    Scrape {
        /// Unix ns.
        time_ns: i64,
        /// Caller's revision.
        revision: i64,
        /// Caller's target number.
        target: u8,
        /// Caller's source string (e.g. the URL).
        source: String,
        /// The body, bit for bit.
        body: Bytes,
    },
    /// A checkpoint from [`Writer::checkpoint`].
    Checkpoint {
        /// Unix ns.
        time_ns: i64,
        /// Caller's revision.
        revision: i64,
        /// The state blob, bit for bit.
        state: Bytes,
    },
}

impl Item {
    /// The item's time, unix ns.
    pub fn time_ns(&self) -> i64 {
        match self {
            Item::Record { time_ns, .. }
            | Item::Scrape { time_ns, .. }
            | Item::Checkpoint { time_ns, .. } => *time_ns,
        }
    }

    /// The item's revision.
    pub fn revision(&self) -> i64 {
        match self {
            Item::Record { revision, .. }
            | Item::Scrape { revision, .. }
            | Item::Checkpoint { revision, .. } => *revision,
        }
    }
}

/// Reader errors.
#[derive(Debug)]
pub enum Error {
    /// The operating system refused to open or stat the file.
    Io(io::Error),
    /// The file does not start with [`FILE_MAGIC`] (or is shorter than it).
    NotARecording,
    /// The file is a recording of a format version this code cannot read.
    UnsupportedVersion(u16),
    /// The Header frame at offset 10 is cut or damaged; nothing can be trusted.
    HeaderUnreadable(String),
    /// [`Reader::read_frame`] was given an index past [`Reader::frames`].
    NoSuchFrame(usize),
    /// The frame at `offset` fails its checks (crc, decompression, layout).
    Damaged {
        /// File offset of the frame, bytes.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The delta scrape at `offset` cannot be decoded because a frame of its
    /// base chain, at `base`, is missing or damaged.
    BaseLost {
        /// File offset of the requested scrape frame, bytes.
        offset: u64,
        /// File offset of the unusable base frame, bytes.
        base: u64,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "recording I/O error: {e}"),
            Error::NotARecording => write!(f, "not a regscope recording"),
            Error::UnsupportedVersion(v) => {
                write!(f, "unsupported recording format version {v}")
            }
            Error::HeaderUnreadable(r) => write!(f, "recording header unreadable: {r}"),
            Error::NoSuchFrame(i) => write!(f, "no frame number {i}"),
            Error::Damaged { offset, reason } => {
                write!(f, "frame at offset {offset} is damaged: {reason}")
            }
            Error::BaseLost { offset, base } => write!(
                f,
                "scrape at offset {offset} lost: its delta base at offset {base} is unusable"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

// ---------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------

/// Switches for [`Writer::create_with`]; `Default` gives the documented values.
#[derive(Clone, Debug)]
pub struct WriterOptions {
    /// Truncate and reuse an existing file (its mode is reset to 0600)
    /// instead of failing with `AlreadyExists`. Default false.
    pub overwrite: bool,
    /// zstd level of segments. Default 3.
    pub segment_level: i32,
    /// zstd level of key and delta scrapes. Default 3.
    pub scrape_level: i32,
    /// zstd level of checkpoints. Default 3.
    pub checkpoint_level: i32,
    /// Most Scrape frames of one target per key frame, the key included
    /// (so a chain decodes at most this many frames). Default 60; 0 or 1
    /// makes every scrape a key.
    pub key_interval: u32,
    /// Uncompressed bytes of pending records above which [`Writer::append`]
    /// writes the pending segment by itself. Default 1 MiB, at most 512 MiB.
    pub segment_limit: usize,
    /// Call `fdatasync` in [`Writer::flush_segment`] and after checkpoints so
    /// a power cut, not only a killed process, loses at most the pending
    /// records. Default false.
    pub sync_data: bool,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            overwrite: false,
            segment_level: 3,
            scrape_level: 3,
            checkpoint_level: 3,
            key_interval: DEFAULT_KEY_INTERVAL,
            segment_limit: DEFAULT_SEGMENT_LIMIT,
            sync_data: false,
        }
    }
}

struct TargetState {
    body: Vec<u8>,
    offset: u64,
    source: String,
    frames_since_key: u32,
}

/// Appends a recording to a new file. Not thread-safe by itself; one writer
/// per file.
///
/// After any write error the writer is *poisoned*: a partial frame may be in
/// the file and the offsets it tracks can no longer be trusted, so every
/// later call fails with the same kind of error. A reader recovers the file
/// up to the damage.
pub struct Writer {
    out: BufWriter<File>,
    offset: u64,
    opts: WriterOptions,
    seg: Vec<u8>,
    seg_count: u32,
    seg_first_time: i64,
    seg_last_time: i64,
    seg_first_rev: i64,
    seg_last_rev: i64,
    seg_comp: zstd::bulk::Compressor<'static>,
    targets: HashMap<u8, TargetState>,
    index: Vec<FrameInfo>,
    poisoned: bool,
    finished: bool,
}

impl Writer {
    /// Creates `path` with mode 0600 and writes the file header and the
    /// Header frame holding `header` (the caller's serialised session
    /// header). Fails with `AlreadyExists` if the file exists.
    pub fn create(path: &Path, header: &[u8]) -> io::Result<Writer> {
        Writer::create_with(path, header, WriterOptions::default())
    }

    /// Like [`Writer::create`] with explicit options. Fails with
    /// `InvalidInput` when `header` exceeds 4 GiB − 1 bytes.
    pub fn create_with(path: &Path, header: &[u8], opts: WriterOptions) -> io::Result<Writer> {
        let hlen = u32::try_from(header.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "session header too large"))?;
        let mut oo = OpenOptions::new();
        oo.write(true).mode(0o600);
        if opts.overwrite {
            oo.create(true).truncate(true);
        } else {
            oo.create_new(true);
        }
        let file = oo.open(path)?;
        if opts.overwrite {
            // `mode` applies only when the file is created; a reused file may
            // have been readable by others.
            file.set_permissions(Permissions::from_mode(0o600))?;
        }
        let mut opts = opts;
        opts.segment_limit = opts.segment_limit.min(MAX_SEGMENT_LIMIT);
        let mut w = Writer {
            out: BufWriter::with_capacity(1 << 18, file),
            offset: 0,
            seg_comp: zstd::bulk::Compressor::new(opts.segment_level)?,
            opts,
            seg: Vec::new(),
            seg_count: 0,
            seg_first_time: 0,
            seg_last_time: 0,
            seg_first_rev: 0,
            seg_last_rev: 0,
            targets: HashMap::new(),
            index: Vec::new(),
            poisoned: false,
            finished: false,
        };
        let mut fh = [0u8; 10];
        fh[0..8].copy_from_slice(&FILE_MAGIC);
        fh[8..10].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        w.write_raw(&fh)?;
        w.write_frame(FrameKind::Header, &[header], hlen)?;
        w.flush_out()?;
        Ok(w)
    }

    fn usable(&self) -> io::Result<()> {
        if self.poisoned {
            return Err(io_other("recording writer failed earlier".into()));
        }
        Ok(())
    }

    fn write_raw(&mut self, b: &[u8]) -> io::Result<()> {
        if let Err(e) = self.out.write_all(b) {
            self.poisoned = true;
            return Err(e);
        }
        self.offset = self.offset.saturating_add(b.len() as u64);
        Ok(())
    }

    /// Writes one frame whose payload is the concatenation of `parts`
    /// (`len` bytes in all) and returns its offset.
    fn write_frame(&mut self, kind: FrameKind, parts: &[&[u8]], len: u32) -> io::Result<u64> {
        let mut h = crc32fast::Hasher::new();
        for p in parts {
            h.update(p);
        }
        let hdr = frame_header(kind, len, h.finalize());
        let off = self.offset;
        self.write_raw(&hdr)?;
        for p in parts {
            self.write_raw(p)?;
        }
        Ok(off)
    }

    fn payload_len(parts: &[&[u8]]) -> io::Result<u32> {
        let total = parts.iter().try_fold(0usize, |a, p| a.checked_add(p.len()));
        total
            .and_then(|t| u32::try_from(t).ok())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "frame payload over 4 GiB"))
    }

    fn flush_out(&mut self) -> io::Result<()> {
        if let Err(e) = self.out.flush() {
            self.poisoned = true;
            return Err(e);
        }
        Ok(())
    }

    fn sync_if_asked(&mut self) -> io::Result<()> {
        if self.opts.sync_data {
            if let Err(e) = self.out.get_ref().sync_data() {
                self.poisoned = true;
                return Err(e);
            }
        }
        Ok(())
    }

    /// Buffers one record into the pending segment; no compression happens
    /// here unless the pending segment would outgrow
    /// [`WriterOptions::segment_limit`], in which case it is written first.
    /// `time_ns` is unix ns, `revision` the highest revision known now,
    /// `kind` and `payload` are opaque. Fails with `InvalidInput` for a
    /// payload over [`MAX_RECORD_LEN`] bytes.
    pub fn append(
        &mut self,
        time_ns: i64,
        revision: i64,
        kind: u8,
        payload: &[u8],
    ) -> io::Result<()> {
        self.usable()?;
        if payload.len() > MAX_RECORD_LEN {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "record payload too large",
            ));
        }
        let need = payload.len() + 31;
        if self.seg_count > 0
            && (self.seg.len() + need > self.opts.segment_limit || self.seg_count == u32::MAX)
        {
            self.write_pending_segment()?;
        }
        if self.seg_count == 0 {
            self.seg_first_time = time_ns;
            self.seg_last_time = time_ns;
            self.seg_first_rev = revision;
            self.seg_last_rev = revision;
        }
        self.seg.reserve(need);
        self.seg.push(kind);
        put_uvarint(
            &mut self.seg,
            zigzag(time_ns.wrapping_sub(self.seg_last_time)),
        );
        put_uvarint(
            &mut self.seg,
            zigzag(revision.wrapping_sub(self.seg_last_rev)),
        );
        put_uvarint(&mut self.seg, payload.len() as u64);
        self.seg.extend_from_slice(payload);
        self.seg_count += 1;
        self.seg_last_time = time_ns;
        self.seg_last_rev = revision;
        Ok(())
    }

    /// Compresses the pending records into one Segment frame and hands it to
    /// the buffered writer (no flush to the OS).
    fn write_pending_segment(&mut self) -> io::Result<()> {
        self.usable()?;
        if self.seg_count == 0 {
            return Ok(());
        }
        let raw_len = u32::try_from(self.seg.len())
            .ok()
            .filter(|&n| u64::from(n) <= MAX_SEGMENT_RAW)
            .ok_or_else(|| io_other("pending segment too large".into()))?;
        let compressed = self.seg_comp.compress(&self.seg)?;
        let mut summary = Vec::with_capacity(SEGMENT_SUMMARY_LEN);
        summary.extend_from_slice(&self.seg_count.to_le_bytes());
        summary.extend_from_slice(&raw_len.to_le_bytes());
        summary.extend_from_slice(&self.seg_first_time.to_le_bytes());
        summary.extend_from_slice(&self.seg_last_time.to_le_bytes());
        summary.extend_from_slice(&self.seg_first_rev.to_le_bytes());
        summary.extend_from_slice(&self.seg_last_rev.to_le_bytes());
        let parts: [&[u8]; 2] = [&summary, &compressed];
        let len = Self::payload_len(&parts)?;
        let offset = self.write_frame(FrameKind::Segment, &parts, len)?;
        self.index.push(FrameInfo {
            offset,
            len: FRAME_HEADER_LEN + u64::from(len),
            kind: FrameKind::Segment,
            first_time_ns: self.seg_first_time,
            last_time_ns: self.seg_last_time,
            first_rev: self.seg_first_rev,
            last_rev: self.seg_last_rev,
            records: self.seg_count,
            target: None,
            delta: false,
        });
        self.seg.clear();
        // One huge record should not pin its buffer for the whole session.
        if self.seg.capacity() > self.opts.segment_limit.saturating_mul(4).max(1 << 22) {
            self.seg
                .shrink_to(self.opts.segment_limit.saturating_add(1 << 16));
        }
        self.seg_count = 0;
        Ok(())
    }

    /// Writes one scrape body as its own Scrape frame, after writing the
    /// pending segment so that file order equals append order. The body is a
    /// delta against the previous body of `target` unless a key is due (see
    /// [`WriterOptions::key_interval`]; also first scrape of the target,
    /// first after a checkpoint, or a changed `source`). `time_ns` is unix
    /// ns. Fails with `InvalidInput` for a body over [`MAX_SCRAPE_LEN`] bytes
    /// or a source over [`MAX_SOURCE_LEN`] bytes.
    pub fn append_scrape(
        &mut self,
        time_ns: i64,
        revision: i64,
        target: u8,
        source: &str,
        body: &[u8],
    ) -> io::Result<()> {
        self.usable()?;
        if body.len() > MAX_SCRAPE_LEN {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "scrape body too large",
            ));
        }
        let source_len = u16::try_from(source.len())
            .ok()
            .filter(|&n| usize::from(n) <= MAX_SOURCE_LEN)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "scrape source too long"))?;
        self.write_pending_segment()?;
        let interval = self.opts.key_interval.max(1);
        let base = match self.targets.get(&target) {
            Some(st) if st.frames_since_key + 1 < interval && st.source == source => Some(st),
            _ => None,
        };
        let (encoding, base_offset, compressed) = match base {
            Some(st) => (
                ENCODING_DELTA,
                st.offset,
                compress_with_prefix(&st.body, body, self.opts.scrape_level)?,
            ),
            None => (
                ENCODING_KEY,
                0,
                zstd::bulk::compress(body, self.opts.scrape_level)?,
            ),
        };
        let mut fixed = Vec::with_capacity(SCRAPE_FIXED_LEN);
        fixed.extend_from_slice(&time_ns.to_le_bytes());
        fixed.extend_from_slice(&revision.to_le_bytes());
        fixed.extend_from_slice(&base_offset.to_le_bytes());
        fixed.extend_from_slice(&(body.len() as u64).to_le_bytes());
        fixed.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
        fixed.push(target);
        fixed.push(encoding);
        fixed.extend_from_slice(&source_len.to_le_bytes());
        let parts: [&[u8]; 3] = [&fixed, source.as_bytes(), &compressed];
        let len = Self::payload_len(&parts)?;
        let offset = self.write_frame(FrameKind::Scrape, &parts, len)?;
        self.index.push(FrameInfo {
            offset,
            len: FRAME_HEADER_LEN + u64::from(len),
            kind: FrameKind::Scrape,
            first_time_ns: time_ns,
            last_time_ns: time_ns,
            first_rev: revision,
            last_rev: revision,
            records: 1,
            target: Some(target),
            delta: encoding == ENCODING_DELTA,
        });
        let st = self.targets.entry(target).or_insert_with(|| TargetState {
            body: Vec::new(),
            offset: 0,
            source: String::new(),
            frames_since_key: 0,
        });
        st.body.clear();
        st.body.extend_from_slice(body);
        st.offset = offset;
        if st.source != source {
            st.source = source.to_owned();
        }
        st.frames_since_key = if encoding == ENCODING_KEY {
            0
        } else {
            st.frames_since_key + 1
        };
        Ok(())
    }

    /// Writes the pending segment, then one Checkpoint frame holding `state`
    /// (the caller's whole replica state, opaque), flushes to the OS, and
    /// forgets the scrape bases so that the next scrape of every target is a
    /// key and a reader starting here needs nothing earlier. `time_ns` is
    /// unix ns. Fails with `InvalidInput` for a state over
    /// [`MAX_CHECKPOINT_LEN`] bytes or compressing to 4 GiB or more.
    pub fn checkpoint(&mut self, time_ns: i64, revision: i64, state: &[u8]) -> io::Result<()> {
        self.usable()?;
        if state.len() as u64 > MAX_CHECKPOINT_LEN {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "checkpoint state too large",
            ));
        }
        self.write_pending_segment()?;
        let mut compressed = Vec::new();
        for chunk in state.chunks(CHECKPOINT_CHUNK_LEN) {
            compressed.extend_from_slice(&zstd::bulk::compress(chunk, self.opts.checkpoint_level)?);
        }
        let mut fixed = Vec::with_capacity(CHECKPOINT_FIXED_LEN);
        fixed.extend_from_slice(&time_ns.to_le_bytes());
        fixed.extend_from_slice(&revision.to_le_bytes());
        fixed.extend_from_slice(&(state.len() as u64).to_le_bytes());
        fixed.extend_from_slice(&crc32fast::hash(state).to_le_bytes());
        let parts: [&[u8]; 2] = [&fixed, &compressed];
        let len = Self::payload_len(&parts)?;
        let offset = self.write_frame(FrameKind::Checkpoint, &parts, len)?;
        self.index.push(FrameInfo {
            offset,
            len: FRAME_HEADER_LEN + u64::from(len),
            kind: FrameKind::Checkpoint,
            first_time_ns: time_ns,
            last_time_ns: time_ns,
            first_rev: revision,
            last_rev: revision,
            records: 1,
            target: None,
            delta: false,
        });
        self.targets.clear();
        self.flush_out()?;
        self.sync_if_asked()
    }

    /// Compresses and writes the pending records as one Segment frame (if
    /// any), then flushes everything to the OS (and `fdatasync`s when
    /// [`WriterOptions::sync_data`] is set), so that a killed process loses
    /// at most records appended after this call. Call it every second.
    pub fn flush_segment(&mut self) -> io::Result<()> {
        self.write_pending_segment()?;
        self.flush_out()?;
        self.sync_if_asked()
    }

    /// Bytes of the file framed so far (including bytes still in the
    /// user-space buffer, excluding pending records), for display.
    pub fn bytes_written(&self) -> u64 {
        self.offset
    }

    /// Uncompressed bytes of records waiting for the next segment.
    pub fn pending_bytes(&self) -> usize {
        self.seg.len()
    }

    /// Number of records waiting for the next segment.
    pub fn pending_records(&self) -> u32 {
        self.seg_count
    }

    /// Writes the pending segment, the Index frame and the trailer, flushes
    /// and `fsync`s the file, and returns its final size in bytes.
    pub fn finish(mut self) -> io::Result<u64> {
        self.write_pending_segment()?;
        let count = u32::try_from(self.index.len())
            .map_err(|_| io_other("too many frames for one index".into()))?;
        let mut payload =
            Vec::with_capacity(INDEX_PREAMBLE_LEN + self.index.len() * INDEX_ENTRY_LEN);
        payload.extend_from_slice(&(INDEX_ENTRY_LEN as u32).to_le_bytes());
        payload.extend_from_slice(&count.to_le_bytes());
        for f in &self.index {
            encode_index_entry(&mut payload, f);
        }
        let parts: [&[u8]; 1] = [&payload];
        let len = Self::payload_len(&parts)?;
        let index_offset = self.write_frame(FrameKind::Index, &parts, len)?;
        self.write_raw(&trailer_bytes(index_offset))?;
        self.flush_out()?;
        if let Err(e) = self.out.get_ref().sync_all() {
            self.poisoned = true;
            return Err(e);
        }
        self.finished = true;
        Ok(self.offset)
    }
}

impl Drop for Writer {
    /// Without `finish` (an early return or panic in the caller), keeps what
    /// can be kept: the pending records become a last segment. The file then
    /// has no index, which the reader handles by scanning.
    fn drop(&mut self) {
        if !self.finished && !self.poisoned {
            let _ = self.write_pending_segment();
            let _ = self.out.flush();
        }
    }
}

fn encode_index_entry(out: &mut Vec<u8>, f: &FrameInfo) {
    let payload_len = u32::try_from(f.len.saturating_sub(FRAME_HEADER_LEN)).unwrap_or(u32::MAX);
    out.extend_from_slice(&f.offset.to_le_bytes());
    out.extend_from_slice(&payload_len.to_le_bytes());
    out.extend_from_slice(&f.records.to_le_bytes());
    out.push(f.kind.as_u8());
    out.push(f.target.unwrap_or(0));
    out.push(u8::from(f.delta));
    out.push(0);
    out.extend_from_slice(&f.first_time_ns.to_le_bytes());
    out.extend_from_slice(&f.last_time_ns.to_le_bytes());
    out.extend_from_slice(&f.first_rev.to_le_bytes());
    out.extend_from_slice(&f.last_rev.to_le_bytes());
}

// ---------------------------------------------------------------------------
// Payload parsing shared by scanner and reader
// ---------------------------------------------------------------------------

struct SegmentSummary {
    count: u32,
    raw_len: u32,
    first_time: i64,
    last_time: i64,
    first_rev: i64,
    last_rev: i64,
}

fn parse_segment_summary(p: &[u8]) -> Result<(SegmentSummary, &[u8]), String> {
    let mut c = Cursor::new(p);
    let s = SegmentSummary {
        count: c.u32()?,
        raw_len: c.u32()?,
        first_time: c.i64()?,
        last_time: c.i64()?,
        first_rev: c.i64()?,
        last_rev: c.i64()?,
    };
    if s.count == 0 {
        return Err("segment with no records".into());
    }
    if u64::from(s.raw_len) > MAX_SEGMENT_RAW {
        return Err(format!("segment claims {} uncompressed bytes", s.raw_len));
    }
    // Every record needs at least 4 bytes (kind and three varints).
    if u64::from(s.count).saturating_mul(4) > u64::from(s.raw_len) {
        return Err("segment record count exceeds its size".into());
    }
    Ok((s, c.rest()))
}

fn decode_segment(p: &[u8]) -> Result<Vec<Item>, String> {
    let (s, compressed) = parse_segment_summary(p)?;
    let raw_len = usize::try_from(s.raw_len).map_err(|_| "segment too large".to_string())?;
    let raw = Bytes::from(zstd_decode(compressed, None, raw_len)?);
    let n = usize::try_from(s.count).map_err(|_| "segment too large".to_string())?;
    let mut items = Vec::with_capacity(n.min(raw.len() / 4 + 1));
    let mut c = Cursor::new(&raw);
    let (mut t, mut r) = (s.first_time, s.first_rev);
    for _ in 0..n {
        let kind = c.u8()?;
        t = t.wrapping_add(unzigzag(c.uvarint()?));
        r = r.wrapping_add(unzigzag(c.uvarint()?));
        let len =
            usize::try_from(c.uvarint()?).map_err(|_| "record length overflows".to_string())?;
        let payload = raw.slice_ref(c.take(len)?);
        items.push(Item::Record {
            time_ns: t,
            revision: r,
            kind,
            payload,
        });
    }
    if !c.is_empty() {
        return Err("bytes left after the last record".into());
    }
    if t != s.last_time || r != s.last_rev {
        return Err("records disagree with the segment summary".into());
    }
    Ok(items)
}

struct ScrapeMeta {
    time: i64,
    rev: i64,
    base: u64,
    raw_len: usize,
    raw_crc: u32,
    target: u8,
    delta: bool,
    source: String,
    data_start: usize,
}

fn parse_scrape_meta(p: &[u8]) -> Result<ScrapeMeta, String> {
    let mut c = Cursor::new(p);
    let time = c.i64()?;
    let rev = c.i64()?;
    let base = c.u64()?;
    let raw_len = c.u64()?;
    let raw_crc = c.u32()?;
    let target = c.u8()?;
    let encoding = c.u8()?;
    let source_len = c.u16()?;
    let source = c.take(usize::from(source_len))?;
    let source = std::str::from_utf8(source)
        .map_err(|_| "scrape source is not UTF-8".to_string())?
        .to_owned();
    let delta = match encoding {
        ENCODING_KEY if base == 0 => false,
        ENCODING_DELTA if base >= FILE_HEADER_LEN => true,
        _ => return Err(format!("bad scrape encoding {encoding} with base {base}")),
    };
    let raw_len = usize::try_from(raw_len)
        .ok()
        .filter(|&n| n <= MAX_SCRAPE_LEN)
        .ok_or_else(|| format!("scrape claims {raw_len} body bytes"))?;
    Ok(ScrapeMeta {
        time,
        rev,
        base,
        raw_len,
        raw_crc,
        target,
        delta,
        source,
        data_start: c.pos,
    })
}

struct CheckpointMeta {
    time: i64,
    rev: i64,
    raw_len: usize,
    raw_crc: u32,
}

fn parse_checkpoint_meta(p: &[u8]) -> Result<(CheckpointMeta, &[u8]), String> {
    let mut c = Cursor::new(p);
    let time = c.i64()?;
    let rev = c.i64()?;
    let raw_len = c.u64()?;
    let raw_crc = c.u32()?;
    let raw_len = usize::try_from(raw_len)
        .ok()
        .filter(|&n| n as u64 <= MAX_CHECKPOINT_LEN)
        .ok_or_else(|| format!("checkpoint claims {raw_len} state bytes"))?;
    Ok((
        CheckpointMeta {
            time,
            rev,
            raw_len,
            raw_crc,
        },
        c.rest(),
    ))
}

fn decode_checkpoint(p: &[u8]) -> Result<Item, String> {
    let (m, compressed) = parse_checkpoint_meta(p)?;
    let (state, crc) = zstd_decode_frames(compressed, m.raw_len)?;
    if crc != m.raw_crc {
        return Err("checkpoint state checksum mismatch".into());
    }
    Ok(Item::Checkpoint {
        time_ns: m.time,
        revision: m.rev,
        state: state.into(),
    })
}

/// A data frame's index entry plus, for a delta scrape, `(base offset, target)`;
/// `None` for frames that carry no items (the Index frame).
type Summary = Option<(FrameInfo, Option<(u64, u8)>)>;

/// Builds the index entry of a crc-valid frame from its payload.
fn summarize(kind: u8, offset: u64, len: u64, p: &[u8]) -> Result<Summary, String> {
    let info = |kind, ft, lt, fr, lr, records, target, delta| FrameInfo {
        offset,
        len,
        kind,
        first_time_ns: ft,
        last_time_ns: lt,
        first_rev: fr,
        last_rev: lr,
        records,
        target,
        delta,
    };
    match FrameKind::from_u8(kind) {
        Some(FrameKind::Segment) => {
            let (s, _) = parse_segment_summary(p)?;
            Ok(Some((
                info(
                    FrameKind::Segment,
                    s.first_time,
                    s.last_time,
                    s.first_rev,
                    s.last_rev,
                    s.count,
                    None,
                    false,
                ),
                None,
            )))
        }
        Some(FrameKind::Scrape) => {
            let m = parse_scrape_meta(p)?;
            if m.delta && m.base >= offset {
                return Err("delta scrape names a base that is not before it".into());
            }
            let base = m.delta.then_some((m.base, m.target));
            Ok(Some((
                info(
                    FrameKind::Scrape,
                    m.time,
                    m.time,
                    m.rev,
                    m.rev,
                    1,
                    Some(m.target),
                    m.delta,
                ),
                base,
            )))
        }
        Some(FrameKind::Checkpoint) => {
            let (m, _) = parse_checkpoint_meta(p)?;
            Ok(Some((
                info(
                    FrameKind::Checkpoint,
                    m.time,
                    m.time,
                    m.rev,
                    m.rev,
                    1,
                    None,
                    false,
                ),
                None,
            )))
        }
        Some(FrameKind::Index) => Ok(None),
        Some(FrameKind::Header) => Err("second Header frame".into()),
        None => Err(format!("unknown frame kind {kind}")),
    }
}

// ---------------------------------------------------------------------------
// Low-level frame access and scanning
// ---------------------------------------------------------------------------

/// Reads the frame at `pos` into `buf` after checking magic, header crc,
/// length against the end of the file and payload crc; returns the kind byte
/// and the whole frame size.
fn read_frame_raw(
    file: &File,
    file_len: u64,
    pos: u64,
    buf: &mut Vec<u8>,
) -> Result<(u8, u64), String> {
    let avail = file_len.saturating_sub(pos);
    if avail < FRAME_HEADER_LEN {
        return Err(format!(
            "{avail} bytes at end of file, too short for a frame header"
        ));
    }
    let mut h = [0u8; 20];
    file.read_exact_at(&mut h, pos)
        .map_err(|e| format!("read error: {e}"))?;
    let hdr = parse_frame_header(&h)?;
    let plen = u64::from(hdr.len);
    let present = avail - FRAME_HEADER_LEN;
    if plen > present {
        return Err(format!(
            "truncated {} frame: {present} of {plen} payload bytes present",
            kind_name(hdr.kind)
        ));
    }
    let n = usize::try_from(plen).map_err(|_| "frame too large for memory".to_string())?;
    // Only grow the buffer: its old contents are overwritten by the read.
    buf.truncate(n);
    buf.resize(n, 0);
    file.read_exact_at(buf, pos + FRAME_HEADER_LEN)
        .map_err(|e| format!("read error: {e}"))?;
    if crc32fast::hash(buf) != hdr.crc {
        return Err(format!(
            "{} frame payload checksum mismatch ({plen} bytes)",
            kind_name(hdr.kind)
        ));
    }
    Ok((hdr.kind, FRAME_HEADER_LEN + plen))
}

fn is_trailer_at(file: &File, file_len: u64, pos: u64) -> bool {
    if file_len.checked_sub(pos) != Some(TRAILER_LEN) {
        return false;
    }
    let mut t = [0u8; 20];
    file.read_exact_at(&mut t, pos).is_ok() && parse_trailer(&t).is_some()
}

/// Offset of the next frame magic at or after `from`, or `None`.
fn find_magic(file: &File, mut from: u64, end: u64) -> Option<u64> {
    let mut chunk = vec![0u8; 1 << 16];
    while from < end {
        let n = usize::try_from((end - from).min(chunk.len() as u64)).ok()?;
        if n < FRAME_MAGIC.len() {
            return None;
        }
        let buf = chunk.get_mut(..n)?;
        file.read_exact_at(buf, from).ok()?;
        if let Some(i) = buf.windows(4).position(|w| w == FRAME_MAGIC) {
            return Some(from + i as u64);
        }
        // Overlap by 3 bytes so a magic straddling two chunks is found.
        from += (n - 3) as u64;
    }
    None
}

fn make_damage(frames: &[FrameInfo], offset: u64, len: u64, what: String) -> Damage {
    let i = frames.partition_point(|f| f.offset < offset);
    let after = i.checked_sub(1).and_then(|j| frames.get(j));
    let end = offset.saturating_add(len);
    let before = frames.get(frames.partition_point(|f| f.offset < end));
    Damage {
        offset,
        len,
        after_time_ns: after.map(|f| f.last_time_ns),
        before_time_ns: before.map(|f| f.first_time_ns),
        after_rev: after.map(|f| f.last_rev),
        before_rev: before.map(|f| f.first_rev),
        what,
    }
}

struct Scan {
    frames: Vec<FrameInfo>,
    damage: Vec<Damage>,
}

/// Walks every byte from `start` to the end of the file, accepting frames
/// that pass all checks and collecting what lies between as damage.
fn scan(file: &File, file_len: u64, start: u64) -> Scan {
    let mut frames: Vec<FrameInfo> = Vec::new();
    let mut lost: Vec<(u64, u64, String)> = Vec::new();
    let mut bad: Option<(u64, String)> = None;
    // Scrape frames whose bodies can be rebuilt, with their targets, so a
    // delta over a lost base is reported instead of listed.
    let mut scrapes: HashMap<u64, u8> = HashMap::new();
    let mut buf = Vec::new();
    let mut pos = start;
    let close = |bad: &mut Option<(u64, String)>, end: u64, lost: &mut Vec<(u64, u64, String)>| {
        if let Some((at, why)) = bad.take() {
            let len = end.saturating_sub(at);
            lost.push((at, len, format!("{why}; {len} bytes skipped")));
        }
    };
    while pos < file_len {
        if is_trailer_at(file, file_len, pos) {
            close(&mut bad, pos, &mut lost);
            break;
        }
        let got = read_frame_raw(file, file_len, pos, &mut buf)
            .and_then(|(kind, len)| Ok((len, summarize(kind, pos, len, &buf)?)));
        match got {
            Ok((len, summary)) => {
                close(&mut bad, pos, &mut lost);
                if let Some((info, base)) = summary {
                    let usable = match base {
                        Some((b, t)) => scrapes.get(&b) == Some(&t),
                        None => true,
                    };
                    if usable {
                        if let Some(t) = info.target {
                            scrapes.insert(pos, t);
                        }
                        frames.push(info);
                    } else {
                        let (b, _) = base.unwrap_or_default();
                        lost.push((
                            pos,
                            len,
                            format!(
                                "scrape of target {} at time {} ns (revision {}) lost: its delta base at offset {b} is damaged",
                                info.target.unwrap_or_default(),
                                info.first_time_ns,
                                info.first_rev
                            ),
                        ));
                    }
                }
                pos = pos.saturating_add(len);
            }
            Err(why) => {
                if bad.is_none() {
                    bad = Some((pos, why));
                }
                pos = find_magic(file, pos + 1, file_len).unwrap_or(file_len);
            }
        }
    }
    close(&mut bad, file_len, &mut lost);
    let damage = lost
        .into_iter()
        .map(|(o, l, w)| make_damage(&frames, o, l, w))
        .collect();
    Scan { frames, damage }
}

/// Loads the index named by the trailer, or `None` when any part of it is
/// missing, damaged or inconsistent with the file.
fn load_index(file: &File, file_len: u64, data_start: u64) -> Option<Vec<FrameInfo>> {
    let min = data_start.checked_add(FRAME_HEADER_LEN + INDEX_PREAMBLE_LEN as u64 + TRAILER_LEN)?;
    if file_len < min {
        return None;
    }
    let trailer_at = file_len - TRAILER_LEN;
    let mut t = [0u8; 20];
    file.read_exact_at(&mut t, trailer_at).ok()?;
    let index_at = parse_trailer(&t)?;
    if index_at < data_start || index_at >= trailer_at {
        return None;
    }
    let mut buf = Vec::new();
    let (kind, len) = read_frame_raw(file, trailer_at, index_at, &mut buf).ok()?;
    if kind != FrameKind::Index.as_u8() || index_at.checked_add(len)? != trailer_at {
        return None;
    }
    let mut c = Cursor::new(&buf);
    let entry_len = usize::try_from(c.u32().ok()?).ok()?;
    let count = usize::try_from(c.u32().ok()?).ok()?;
    if entry_len < INDEX_ENTRY_LEN
        || count
            .checked_mul(entry_len)?
            .checked_add(INDEX_PREAMBLE_LEN)?
            != buf.len()
    {
        return None;
    }
    let mut frames = Vec::with_capacity(count);
    let mut expect = data_start;
    for _ in 0..count {
        let mut e = Cursor::new(c.take(entry_len).ok()?);
        let offset = e.u64().ok()?;
        let plen = e.u32().ok()?;
        let records = e.u32().ok()?;
        let kind = FrameKind::from_u8(e.u8().ok()?)?;
        let target = e.u8().ok()?;
        let delta = e.u8().ok()?;
        let _reserved = e.u8().ok()?;
        let (ft, lt, fr, lr) = (e.i64().ok()?, e.i64().ok()?, e.i64().ok()?, e.i64().ok()?);
        let single = records == 1 && ft == lt && fr == lr;
        let (target, delta) = match kind {
            FrameKind::Segment if records >= 1 && target == 0 && delta == 0 => (None, false),
            FrameKind::Checkpoint if single && target == 0 && delta == 0 => (None, false),
            FrameKind::Scrape if single && delta <= 1 => (Some(target), delta == 1),
            _ => return None,
        };
        let len = FRAME_HEADER_LEN + u64::from(plen);
        if offset != expect {
            return None;
        }
        expect = expect.checked_add(len)?;
        frames.push(FrameInfo {
            offset,
            len,
            kind,
            first_time_ns: ft,
            last_time_ns: lt,
            first_rev: fr,
            last_rev: lr,
            records,
            target,
            delta,
        });
    }
    (expect == index_at).then_some(frames)
}

// ---------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------

/// Result of [`Reader::check`]: what a full verification found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// File size, bytes.
    pub file_len: u64,
    /// True when the index had to be rebuilt by scanning at open.
    pub index_rebuilt: bool,
    /// Frames that decoded completely (all kinds but Header and Index).
    pub good_frames: usize,
    /// Good Segment frames.
    pub segments: usize,
    /// Good Scrape frames (key plus delta).
    pub scrapes: usize,
    /// Good key Scrape frames.
    pub key_scrapes: usize,
    /// Good delta Scrape frames.
    pub delta_scrapes: usize,
    /// Good Checkpoint frames.
    pub checkpoints: usize,
    /// Records decoded from good segments.
    pub records: u64,
    /// Uncompressed scrape body bytes decoded.
    pub scrape_bytes: u64,
    /// Uncompressed checkpoint state bytes decoded.
    pub checkpoint_bytes: u64,
    /// Smallest item time seen, unix ns.
    pub first_time_ns: Option<i64>,
    /// Largest item time seen, unix ns.
    pub last_time_ns: Option<i64>,
    /// Smallest item revision seen.
    pub first_rev: Option<i64>,
    /// Largest item revision seen.
    pub last_rev: Option<i64>,
    /// Every problem found, by file offset.
    pub damage: Vec<Damage>,
}

impl Report {
    /// True when nothing was damaged.
    pub fn is_clean(&self) -> bool {
        self.damage.is_empty()
    }

    fn see(&mut self, item: &Item) {
        let (t, r) = (item.time_ns(), item.revision());
        self.first_time_ns = Some(self.first_time_ns.map_or(t, |x| x.min(t)));
        self.last_time_ns = Some(self.last_time_ns.map_or(t, |x| x.max(t)));
        self.first_rev = Some(self.first_rev.map_or(r, |x| x.min(r)));
        self.last_rev = Some(self.last_rev.map_or(r, |x| x.max(r)));
    }
}

/// Reads frame `info` at its offset and checks it against the index entry: its crc,
/// kind and length. Errors: [`Error::Damaged`].
fn read_payload(file: &File, file_len: u64, info: &FrameInfo) -> Result<Vec<u8>, Error> {
    let mut buf = Vec::new();
    let (kind, len) =
        read_frame_raw(file, file_len, info.offset, &mut buf).map_err(|reason| Error::Damaged {
            offset: info.offset,
            reason,
        })?;
    if kind != info.kind.as_u8() || len != info.len {
        return Err(Error::Damaged {
            offset: info.offset,
            reason: format!(
                "found a {} frame of {len} bytes where the index has a {:?} frame of {} bytes",
                kind_name(kind),
                info.kind,
                info.len
            ),
        });
    }
    Ok(buf)
}

/// Reads and decodes the Segment frames of one recording file, apart from its
/// [`Reader`] and from another thread (a replay decodes the segments ahead of its
/// cursor while the session applies what came before). Shares the open file and
/// holds a copy of the index; from [`Reader::segment_reader`].
#[derive(Clone)]
pub struct SegmentReader {
    file: Arc<File>,
    file_len: u64,
    frames: Arc<[FrameInfo]>,
}

impl SegmentReader {
    /// Segment frame `i` of [`Reader::frames`], exactly as [`Reader::read_frame`]
    /// gives it.
    ///
    /// Errors: [`Error::NoSuchFrame`] (also for a frame of another kind),
    /// [`Error::Damaged`].
    pub fn read_segment(&self, i: usize) -> Result<Vec<Item>, Error> {
        let info = self.frames.get(i).cloned().ok_or(Error::NoSuchFrame(i))?;
        if info.kind != FrameKind::Segment {
            return Err(Error::NoSuchFrame(i));
        }
        let payload = read_payload(&self.file, self.file_len, &info)?;
        decode_segment(&payload).map_err(|reason| Error::Damaged {
            offset: info.offset,
            reason,
        })
    }
}

/// Reads a recording: header, frame index, frames on demand.
///
/// Holds the open file and the index (52-ish bytes per frame), plus the last
/// decoded body of each scrape target so that reading scrapes in order
/// decodes each delta once.
pub struct Reader {
    file: Arc<File>,
    file_len: u64,
    header: Vec<u8>,
    data_start: u64,
    frames: Vec<FrameInfo>,
    checkpoints: Vec<usize>,
    damage: Vec<Damage>,
    rebuilt: bool,
    cache: HashMap<u8, (u64, Bytes)>,
    base_reads: u64,
}

impl Reader {
    /// Opens a recording: checks magic and version, reads the Header frame,
    /// then loads the index through the trailer or, if that fails, rebuilds
    /// it by scanning the whole file (reading every frame once, verifying
    /// crcs, not decompressing).
    ///
    /// Errors: [`Error::Io`] when the file cannot be opened or read,
    /// [`Error::NotARecording`], [`Error::UnsupportedVersion`],
    /// [`Error::HeaderUnreadable`]. Damage after the header is not an error;
    /// see [`Reader::damage`].
    pub fn open(path: &Path) -> Result<Reader, Error> {
        let file = File::open(path)?;
        let file_len = file.metadata()?.len();
        if file_len < FILE_HEADER_LEN {
            return Err(Error::NotARecording);
        }
        let mut fh = [0u8; 10];
        file.read_exact_at(&mut fh, 0)?;
        let mut c = Cursor::new(&fh);
        let magic = c.array::<8>().map_err(|_| Error::NotARecording)?;
        if magic != FILE_MAGIC {
            return Err(Error::NotARecording);
        }
        let version = c.u16().map_err(|_| Error::NotARecording)?;
        if !(OLDEST_READ_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(Error::UnsupportedVersion(version));
        }
        let mut header = Vec::new();
        let (kind, hlen) = read_frame_raw(&file, file_len, FILE_HEADER_LEN, &mut header)
            .map_err(Error::HeaderUnreadable)?;
        if kind != FrameKind::Header.as_u8() {
            return Err(Error::HeaderUnreadable(format!(
                "first frame is {}, not Header",
                kind_name(kind)
            )));
        }
        let data_start = FILE_HEADER_LEN + hlen;
        let (frames, damage, rebuilt) = match load_index(&file, file_len, data_start) {
            Some(frames) => (frames, Vec::new(), false),
            None => {
                let s = scan(&file, file_len, data_start);
                (s.frames, s.damage, true)
            }
        };
        let checkpoints = checkpoint_list(&frames);
        Ok(Reader {
            file: Arc::new(file),
            file_len,
            header,
            data_start,
            frames,
            checkpoints,
            damage,
            rebuilt,
            cache: HashMap::new(),
            base_reads: 0,
        })
    }

    /// The caller's session header bytes, as given to [`Writer::create`].
    pub fn header(&self) -> &[u8] {
        &self.header
    }

    /// Good Segment, Scrape and Checkpoint frames in file order.
    pub fn frames(&self) -> &[FrameInfo] {
        &self.frames
    }

    /// Damage found so far, by offset: by the scan at open (empty when the
    /// index came from a valid trailer), replaced by the full list after
    /// [`Reader::check`].
    pub fn damage(&self) -> &[Damage] {
        &self.damage
    }

    /// True when there was no valid trailer index (the writer did not
    /// finish, or the end of the file is damaged) and the index was rebuilt
    /// by scanning.
    pub fn index_rebuilt(&self) -> bool {
        self.rebuilt
    }

    /// File size at open, bytes.
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// Reads frame `i` of [`Reader::frames`] and checks its payload crc, decoding nothing:
    /// a cheap pass over a whole file that finds what bytes were damaged.
    ///
    /// Errors: [`Error::NoSuchFrame`], [`Error::Damaged`].
    pub fn verify_frame(&self, i: usize) -> Result<(), Error> {
        let info = self.frames.get(i).cloned().ok_or(Error::NoSuchFrame(i))?;
        self.read_payload(&info).map(|_| ())
    }

    /// Reads and verifies Scrape frame `i` of [`Reader::frames`] without
    /// decoding its body: an [`Item::Scrape`] whose `body` is empty, and the
    /// length in bytes the body has. For a caller that already holds what it
    /// needs of the body; the next delta of the target then decodes its base
    /// chain from the file.
    ///
    /// Errors: [`Error::NoSuchFrame`] (also for a frame of another kind),
    /// [`Error::Damaged`].
    pub fn read_scrape_head(&self, i: usize) -> Result<(Item, u64), Error> {
        let info = self.frames.get(i).cloned().ok_or(Error::NoSuchFrame(i))?;
        if info.kind != FrameKind::Scrape {
            return Err(Error::NoSuchFrame(i));
        }
        let payload = self.read_payload(&info)?;
        let m = parse_scrape_meta(&payload).map_err(|reason| Error::Damaged {
            offset: info.offset,
            reason,
        })?;
        let item = Item::Scrape {
            time_ns: m.time,
            revision: m.rev,
            target: m.target,
            source: m.source,
            body: Bytes::new(),
        };
        Ok((item, m.raw_len as u64))
    }

    /// Reads, verifies and decodes frame `i` of [`Reader::frames`]: a
    /// segment gives its records, a scrape its body (a delta is resolved
    /// through its base chain, using the cached last body of its target when
    /// reading in order), a checkpoint its state.
    ///
    /// Errors: [`Error::NoSuchFrame`], [`Error::Damaged`] (crc, layout or
    /// decompression failure of this frame), [`Error::BaseLost`] (a delta
    /// whose base chain is unusable).
    pub fn read_frame(&mut self, i: usize) -> Result<Vec<Item>, Error> {
        let info = self.frames.get(i).cloned().ok_or(Error::NoSuchFrame(i))?;
        let payload = self.read_payload(&info)?;
        let damaged = |reason: String| Error::Damaged {
            offset: info.offset,
            reason,
        };
        match info.kind {
            FrameKind::Segment => decode_segment(&payload).map_err(damaged),
            FrameKind::Checkpoint => decode_checkpoint(&payload)
                .map(|c| vec![c])
                .map_err(damaged),
            FrameKind::Scrape => self.decode_scrape(info.offset, payload).map(|s| vec![s]),
            FrameKind::Header | FrameKind::Index => Ok(Vec::new()),
        }
    }

    /// A handle on this file that reads its Segment frames from any thread.
    pub fn segment_reader(&self) -> SegmentReader {
        SegmentReader {
            file: self.file.clone(),
            file_len: self.file_len,
            frames: self.frames.clone().into(),
        }
    }

    fn read_payload(&self, info: &FrameInfo) -> Result<Vec<u8>, Error> {
        read_payload(&self.file, self.file_len, info)
    }

    fn decode_scrape(&mut self, offset: u64, payload: Vec<u8>) -> Result<Item, Error> {
        let damaged = |reason: String| Error::Damaged { offset, reason };
        let meta = parse_scrape_meta(&payload).map_err(damaged)?;
        let target = meta.target;
        let lost = |base: u64| Error::BaseLost { offset, base };
        // Walk back to a key frame or to the cached body of this target;
        // the writer bounds the walk to `key_interval` frames.
        let mut chain: Vec<(u64, ScrapeMeta, Vec<u8>)> = vec![(offset, meta, payload)];
        let mut from_cache = false;
        loop {
            let Some((cur_off, cur, _)) = chain.last() else {
                return Err(damaged("empty scrape chain".into()));
            };
            if !cur.delta {
                break;
            }
            let (cur_off, base) = (*cur_off, cur.base);
            if base >= cur_off {
                return Err(damaged("delta base is not before its frame".into()));
            }
            if self.cache.get(&target).is_some_and(|(o, _)| *o == base) {
                from_cache = true;
                break;
            }
            if chain.len() > self.frames.len() {
                return Err(damaged("scrape chain longer than the file".into()));
            }
            let j = self
                .frames
                .binary_search_by_key(&base, |f| f.offset)
                .map_err(|_| lost(base))?;
            let bi = self.frames.get(j).cloned().ok_or_else(|| lost(base))?;
            if bi.kind != FrameKind::Scrape || bi.target != Some(target) {
                return Err(lost(base));
            }
            let bp = self.read_payload(&bi).map_err(|_| lost(base))?;
            let bm = parse_scrape_meta(&bp).map_err(|_| lost(base))?;
            self.base_reads += 1;
            chain.push((bi.offset, bm, bp));
        }
        let mut body: Option<Vec<u8>> = None;
        let mut first: Option<ScrapeMeta> = None;
        while let Some((off, m, p)) = chain.pop() {
            let fail = |reason: String| {
                if off == offset {
                    damaged(reason)
                } else {
                    lost(off)
                }
            };
            let data = p
                .get(m.data_start..)
                .ok_or_else(|| fail("scrape data out of range".into()))?;
            let decoded = if m.delta {
                let base: &[u8] = match (&body, self.cache.get(&target)) {
                    (Some(b), _) => b,
                    (None, Some((_, b))) if from_cache => b,
                    _ => return Err(fail("delta without a base body".into())),
                };
                zstd_decode(data, Some(base), m.raw_len)
            } else {
                zstd_decode(data, None, m.raw_len)
            }
            .map_err(fail)?;
            if crc32fast::hash(&decoded) != m.raw_crc {
                return Err(fail("scrape body checksum mismatch".into()));
            }
            body = Some(decoded);
            first = Some(m);
        }
        let (Some(body), Some(m)) = (body, first) else {
            return Err(damaged("empty scrape chain".into()));
        };
        let body = Bytes::from(body);
        self.cache.insert(target, (offset, body.clone()));
        Ok(Item::Scrape {
            time_ns: m.time,
            revision: m.rev,
            target,
            source: m.source,
            body,
        })
    }

    /// Index into [`Reader::frames`] of the last Checkpoint frame (in file
    /// order) whose time is ≤ `t_ns` (unix ns), or `None`.
    pub fn last_checkpoint_at_or_before_time(&self, t_ns: i64) -> Option<usize> {
        self.checkpoints
            .iter()
            .rev()
            .copied()
            .find(|&i| self.frames.get(i).is_some_and(|f| f.first_time_ns <= t_ns))
    }

    /// Index into [`Reader::frames`] of the last Checkpoint frame (in file
    /// order) whose revision is ≤ `rev`, or `None`.
    pub fn last_checkpoint_at_or_before_rev(&self, rev: i64) -> Option<usize> {
        self.checkpoints
            .iter()
            .rev()
            .copied()
            .find(|&i| self.frames.get(i).is_some_and(|f| f.first_rev <= rev))
    }

    /// Verifies the whole file: rescans every byte (frame checks, and the
    /// trailer index against the frames actually present), then reads and
    /// decodes every indexed frame (crc, decompression, record layout,
    /// scrape chains, body and state crcs). Returns counts, the time and
    /// revision span of the good items, and the complete damage list, which
    /// also replaces [`Reader::damage`]. [`Reader::frames`] is left as is;
    /// frames listed as damaged keep failing in [`Reader::read_frame`].
    pub fn check(&mut self) -> Report {
        let s = scan(&self.file, self.file_len, self.data_start);
        let mut damage = s.damage;
        if !self.rebuilt {
            for f in &s.frames {
                let same = self
                    .frames
                    .binary_search_by_key(&f.offset, |x| x.offset)
                    .ok()
                    .and_then(|j| self.frames.get(j))
                    == Some(f);
                if !same {
                    damage.push(make_damage(
                        &s.frames,
                        f.offset,
                        f.len,
                        format!(
                            "{:?} frame at offset {} is missing from or differs in the trailer index",
                            f.kind, f.offset
                        ),
                    ));
                }
            }
        }
        let mut report = Report {
            file_len: self.file_len,
            index_rebuilt: self.rebuilt,
            ..Report::default()
        };
        self.cache.clear();
        for i in 0..self.frames.len() {
            let Some(info) = self.frames.get(i).cloned() else {
                break;
            };
            match self.read_frame(i) {
                Ok(items) => {
                    report.good_frames += 1;
                    match info.kind {
                        FrameKind::Segment => {
                            report.segments += 1;
                            report.records += items.len() as u64;
                        }
                        FrameKind::Scrape => {
                            report.scrapes += 1;
                            if info.delta {
                                report.delta_scrapes += 1;
                            } else {
                                report.key_scrapes += 1;
                            }
                        }
                        FrameKind::Checkpoint => report.checkpoints += 1,
                        FrameKind::Header | FrameKind::Index => {}
                    }
                    for item in &items {
                        report.see(item);
                        match item {
                            Item::Scrape { body, .. } => report.scrape_bytes += body.len() as u64,
                            Item::Checkpoint { state, .. } => {
                                report.checkpoint_bytes += state.len() as u64
                            }
                            Item::Record { .. } => {}
                        }
                    }
                }
                Err(e) => {
                    let known = damage.iter().any(|d| {
                        d.offset <= info.offset && info.offset < d.offset.saturating_add(d.len)
                    });
                    if !known {
                        damage.push(make_damage(
                            &self.frames,
                            info.offset,
                            info.len,
                            format!("{:?} frame unreadable: {e}", info.kind),
                        ));
                    }
                }
            }
        }
        damage.sort_by_key(|d| d.offset);
        self.damage.clone_from(&damage);
        report.damage = damage;
        report
    }
}

fn checkpoint_list(frames: &[FrameInfo]) -> Vec<usize> {
    frames
        .iter()
        .enumerate()
        .filter(|(_, f)| f.kind == FrameKind::Checkpoint)
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::fs;
    use std::path::PathBuf;

    const HEADER: &[u8] = b"{\"cluster\":\"test\",\"started_ns\":1700000000000000000}";

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

    fn scrape(w: &mut Writer, want: &mut Vec<Item>, t: i64, r: i64, target: u8, body: &[u8]) {
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

    fn checkpoint(w: &mut Writer, want: &mut Vec<Item>, t: i64, r: i64, state: &[u8]) {
        w.checkpoint(t, r, state).unwrap();
        want.push(Item::Checkpoint {
            time_ns: t,
            revision: r,
            state: state.to_vec().into(),
        });
    }

    /// A small Prometheus-like body whose counters move with `step`.
    fn prom_body(target: u8, step: u64) -> Vec<u8> {
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
    fn varints_and_zigzag_cover_the_extremes() {
        for n in [
            0i64,
            1,
            -1,
            63,
            -64,
            i64::MAX,
            i64::MIN,
            1 << 40,
            -(1 << 40),
        ] {
            assert_eq!(unzigzag(zigzag(n)), n);
            let mut v = Vec::new();
            put_uvarint(&mut v, zigzag(n));
            assert!(v.len() <= 10);
            let mut c = Cursor::new(&v);
            assert_eq!(c.uvarint().unwrap(), zigzag(n));
            assert!(c.is_empty());
        }
        // Overlong and overflowing encodings are rejected, not wrapped.
        assert!(Cursor::new(&[0xff; 11]).uvarint().is_err());
        assert!(
            Cursor::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02])
                .uvarint()
                .is_err()
        );
        assert!(Cursor::new(&[0x80]).uvarint().is_err());
        assert_eq!(window_log_for(0), WINDOW_LOG_MIN);
        assert_eq!(window_log_for(7 << 20), 23);
        assert_eq!(window_log_for(usize::MAX), WINDOW_LOG_MAX);
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
    fn big_state(len: usize) -> Vec<u8> {
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
    fn a_checkpoint_larger_than_a_chunk_is_split_and_comes_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.rgs");
        let state = big_state(2 * CHECKPOINT_CHUNK_LEN + 12_345);
        let mut w = Writer::create(&p, HEADER).unwrap();
        w.checkpoint(5, 6, &state).unwrap();
        w.finish().unwrap();
        let mut r = Reader::open(&p).unwrap();
        let items = r.read_frame(0).unwrap();
        let [Item::Checkpoint { state: got, .. }] = items.as_slice() else {
            panic!("one checkpoint expected");
        };
        assert!(got[..] == state[..]);
        // Three zstd frames, each decodable alone.
        let payload = r.read_payload(&r.frames()[0].clone()).unwrap();
        let (_, compressed) = parse_checkpoint_meta(&payload).unwrap();
        let mut n = 0;
        let mut rest = compressed;
        while !rest.is_empty() {
            let len = zstd::zstd_safe::find_frame_compressed_size(rest).unwrap();
            rest = &rest[len..];
            n += 1;
        }
        assert_eq!(n, 3);
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
                        matches!(e, Error::NotARecording | Error::HeaderUnreadable(_)),
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
    fn scrape_chains_are_bounded_and_reset_by_checkpoints() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("chain.rgs");
        let opts = WriterOptions {
            key_interval: 4,
            ..WriterOptions::default()
        };
        let mut w = Writer::create_with(&p, HEADER, opts).unwrap();
        let mut want = Vec::new();
        for i in 0..10 {
            scrape(&mut w, &mut want, i, i, 2, &prom_body(2, i as u64));
        }
        checkpoint(&mut w, &mut want, 10, 10, b"s1");
        for i in 11..14 {
            scrape(&mut w, &mut want, i, i, 2, &prom_body(2, i as u64));
        }
        // A new source for the same target starts a fresh chain.
        w.append_scrape(14, 14, 2, "https://elsewhere/metrics", &prom_body(2, 14))
            .unwrap();
        checkpoint(&mut w, &mut want, 20, 20, b"s2");
        w.finish().unwrap();
        let mut r = Reader::open(&p).unwrap();
        let pattern: String = r
            .frames()
            .iter()
            .map(|f| match (f.kind, f.delta) {
                (FrameKind::Scrape, false) => 'K',
                (FrameKind::Scrape, true) => 'D',
                (FrameKind::Checkpoint, _) => 'C',
                _ => '?',
            })
            .collect();
        assert_eq!(pattern, "KDDDKDDDKDCKDDKC");

        // Reading in order decodes every delta from the cached base.
        let n = r.frames().len();
        for i in 0..n {
            r.read_frame(i).unwrap();
        }
        assert_eq!(r.base_reads, 0);
        // Jumping straight to the last delta of a chain walks back to its key.
        let mut r = Reader::open(&p).unwrap();
        r.read_frame(7).unwrap();
        assert_eq!(r.base_reads, 3);

        // Seeking to a checkpoint needs nothing before it.
        assert_eq!(r.last_checkpoint_at_or_before_time(9), None);
        assert_eq!(r.last_checkpoint_at_or_before_rev(9), None);
        assert_eq!(r.last_checkpoint_at_or_before_time(10), Some(10));
        assert_eq!(r.last_checkpoint_at_or_before_rev(19), Some(10));
        assert_eq!(r.last_checkpoint_at_or_before_time(i64::MAX), Some(15));
        let mut r = Reader::open(&p).unwrap();
        let c = r.last_checkpoint_at_or_before_rev(12).unwrap();
        let items: Vec<Item> = (c..n).flat_map(|i| r.read_frame(i).unwrap()).collect();
        assert_eq!(r.base_reads, 0);
        assert_eq!(items[0], want[10]);
        assert_eq!(items[1..4], want[11..14]);
    }

    fn testdata(name: &str) -> Option<Vec<u8>> {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/testdata/apiserver-metrics")
            .join(name);
        fs::read(p).ok()
    }

    #[test]
    fn prometheus_text_with_special_floats_round_trips_bit_for_bit() {
        let mut body = testdata("kube-apiserver-v1.34.0.prom").unwrap_or_else(|| {
            eprintln!("apiserver testdata not found; using a synthetic body");
            prom_body(0, 0).repeat(2000)
        });
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
        for (bytes, what) in [
            (&b""[..], "empty"),
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
}
