//! Finding frames in a file: reading one checked frame at an offset, the scan that walks
//! every byte and resynchronises on the next frame magic after damage, and loading the
//! Index frame named by the trailer.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

use super::codec::{parse_frame_header, parse_trailer, Cursor};
use super::frames::summarize;
use super::types::{Damage, FrameInfo};
use super::{
    kind_name, FrameKind, FRAME_HEADER_LEN, FRAME_MAGIC, INDEX_ENTRY_LEN, INDEX_PREAMBLE_LEN,
    TRAILER_LEN,
};

/// Reads the frame at `pos` into `buf` after checking magic, header crc,
/// length against the end of the file and payload crc; returns the kind byte
/// and the whole frame size.
pub(super) fn read_frame_raw(
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

pub(super) fn make_damage(frames: &[FrameInfo], offset: u64, len: u64, what: String) -> Damage {
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

pub(super) struct Scan {
    pub(super) frames: Vec<FrameInfo>,
    pub(super) damage: Vec<Damage>,
}

/// Walks every byte from `start` to the end of the file, accepting frames
/// that pass all checks and collecting what lies between as damage.
pub(super) fn scan(file: &File, file_len: u64, start: u64) -> Scan {
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
pub(super) fn load_index(file: &File, file_len: u64, data_start: u64) -> Option<Vec<FrameInfo>> {
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
