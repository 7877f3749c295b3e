//! The [`Writer`]: buffers records into segments, stores each scrape as a key or a delta
//! against the previous body of its target, writes checkpoints, and at
//! [`Writer::finish`] the Index frame and the trailer.

use std::collections::HashMap;
use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use super::codec::{frame_header, put_uvarint, trailer_bytes, zigzag};
use super::compress::{compress_with_prefix, io_other};
use super::types::FrameInfo;
use super::{
    FrameKind, CHECKPOINT_CHUNK_LEN, CHECKPOINT_FIXED_LEN, DEFAULT_KEY_INTERVAL,
    DEFAULT_SEGMENT_LIMIT, ENCODING_DELTA, ENCODING_KEY, FILE_MAGIC, FORMAT_VERSION,
    FRAME_HEADER_LEN, INDEX_ENTRY_LEN, INDEX_PREAMBLE_LEN, MAX_CHECKPOINT_LEN, MAX_RECORD_LEN,
    MAX_SCRAPE_LEN, MAX_SEGMENT_LIMIT, MAX_SEGMENT_RAW, MAX_SOURCE_LEN, SCRAPE_FIXED_LEN,
    SEGMENT_SUMMARY_LEN,
};

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
