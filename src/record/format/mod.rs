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

mod codec;
mod compress;
mod frames;
mod reader;
mod scan;
mod types;
mod writer;

#[cfg(test)]
mod tests;

pub use reader::{Reader, Report, SegmentReader};
pub use types::{Damage, Error, FrameInfo, Item};
pub use writer::{Writer, WriterOptions};

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
