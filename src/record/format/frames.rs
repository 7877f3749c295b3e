//! The payloads of Segment, Scrape and Checkpoint frames, parsed and decoded; shared by
//! the scanner (which only summarizes a frame into its index entry) and the reader.

use bytes::Bytes;

use super::codec::{unzigzag, Cursor};
use super::compress::{zstd_decode, zstd_decode_frames};
use super::types::{FrameInfo, Item};
use super::{
    FrameKind, ENCODING_DELTA, ENCODING_KEY, FILE_HEADER_LEN, MAX_CHECKPOINT_LEN, MAX_SCRAPE_LEN,
    MAX_SEGMENT_RAW,
};

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

pub(super) fn decode_segment(p: &[u8]) -> Result<Vec<Item>, String> {
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

pub(super) struct ScrapeMeta {
    pub(super) time: i64,
    pub(super) rev: i64,
    pub(super) base: u64,
    pub(super) raw_len: usize,
    pub(super) raw_crc: u32,
    pub(super) target: u8,
    pub(super) delta: bool,
    pub(super) source: String,
    pub(super) data_start: usize,
}

pub(super) fn parse_scrape_meta(p: &[u8]) -> Result<ScrapeMeta, String> {
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

pub(super) struct CheckpointMeta {
    time: i64,
    rev: i64,
    raw_len: usize,
    raw_crc: u32,
}

pub(super) fn parse_checkpoint_meta(p: &[u8]) -> Result<(CheckpointMeta, &[u8]), String> {
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

pub(super) fn decode_checkpoint(p: &[u8]) -> Result<Item, String> {
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
pub(super) type Summary = Option<(FrameInfo, Option<(u64, u8)>)>;

/// Builds the index entry of a crc-valid frame from its payload.
pub(super) fn summarize(kind: u8, offset: u64, len: u64, p: &[u8]) -> Result<Summary, String> {
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
