//! The [`Reader`]: opens a recording, takes its index from the trailer or a scan, and reads
//! frames on demand (resolving delta scrapes through their base chains); its
//! [`SegmentReader`] reads segments from another thread; [`Reader::check`] verifies a
//! whole file into a [`Report`].

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use super::codec::Cursor;
use super::compress::zstd_decode;
use super::frames::{decode_checkpoint, decode_segment, parse_scrape_meta, ScrapeMeta};
use super::scan::{load_index, make_damage, read_frame_raw, scan};
use super::types::{Damage, Error, FrameInfo, Item};
use super::{
    kind_name, FrameKind, FILE_HEADER_LEN, FILE_MAGIC, FORMAT_VERSION, OLDEST_READ_VERSION,
};

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
        if file_len == 0 {
            return Err(Error::Empty);
        }
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

    /// The caller's session header bytes, as given to
    /// [`Writer::create`](super::Writer::create).
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
    use crate::record::format::frames::parse_checkpoint_meta;
    use crate::record::format::tests::{big_state, checkpoint, prom_body, scrape, HEADER};
    use crate::record::format::{Writer, WriterOptions, CHECKPOINT_CHUNK_LEN};

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
}
