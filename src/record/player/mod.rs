//! The player: a recording as a source with a cursor.
//!
//! It reads a file (or a rolling set of files, in order) frame by frame and hands out the
//! observations in recorded order. The cursor is a position in that stream: the number of
//! observations after the first checkpoint. [`Player::seek`] rebuilds the [`Session`] at a
//! position, a time or a revision from the nearest checkpoint before it plus the
//! observations after it; playing forward applies the same observations in the same order,
//! so both reach identical sessions (the replay tests assert it).

mod marking;
mod reading;
mod seeking;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::files::recording_files;
use super::format::{FrameKind, Item, Reader};
use super::markers::{Marker, MarkerScan};
use super::readahead::{Decoded, ReadAhead};
use super::{from_ns, restore, RecordError, RecordingHeader, FORMAT_VERSION};
use crate::model::{Observation, Revision, ScrapeOutcome, ScrapeTarget, Stamped};
use crate::store::metrics::ScrapeDigest;
use crate::store::{Applies, Found, FoundWriters, Prepared, Session};

/// Most observations [`Player::seek_in`] applies in place to reach a checkpoint it could
/// restore instead (about 0.1 s of replay, less than restoring a large checkpoint).
const IN_PLACE_MAX: u64 = 100_000;

/// Applied observations handed back to the read-ahead thread at a time, to be dropped
/// there ([`ReadAhead::recycle`]): about a segment's worth.
const SPENT_BATCH: usize = 1024;

/// Observations a replay looks through for the end of the first list when the recording
/// starts empty (see [`Player::seek_first_frame`]): a list of a million keys is a few
/// thousand pages.
const FIRST_VIEW_SCAN: u64 = 100_000;

/// Scrapes a replay looks through after that list for the source's "watching" (see
/// [`Player::seek_first_frame`]).
const FIRST_VIEW_AFTER_LIST: usize = 16;

/// Where to seek.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    /// Just after `n` observations (0: the first checkpoint).
    Position(u64),
    /// Just after the last observation stamped at or before this time.
    Time(SystemTime),
    /// The state as of this revision: just after the observation that brought it, or,
    /// when no observation brought exactly it (no event under the prefix had that
    /// revision), just before the first that goes past it.
    Revision(Revision),
    /// After the last observation.
    End,
}

/// What `replay --check` prints: the span, counts and damage of a recording.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ReplayReport {
    pub files: Vec<String>,
    #[serde(with = "crate::model::humantime_serde_compat::opt")]
    pub start: Option<SystemTime>,
    #[serde(with = "crate::model::humantime_serde_compat::opt")]
    pub end: Option<SystemTime>,
    pub first_revision: Option<Revision>,
    pub last_revision: Option<Revision>,
    pub observations: u64,
    /// The positions a replay's timeline counts: observations and the records beside them
    /// (scrape digests), [`Player::total`].
    pub records: u64,
    pub scrapes: u64,
    pub checkpoints: u64,
    pub segments: u64,
    pub bytes: u64,
    pub secrets_redacted: bool,
    pub index_rebuilt: bool,
    /// What lost nothing but is worth knowing (not closed cleanly).
    pub notes: Vec<String>,
    /// Each damaged or lost stretch, one line (from which time/revision to which).
    pub damage: Vec<String>,
    /// What a replay's `n`/`N` jump to, in time order (see [`Player::complete_markers`]).
    pub markers: Vec<ReportMarker>,
}

/// One marker of a [`ReplayReport`]: when, of what kind, at which revision, and one line.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ReportMarker {
    #[serde(with = "crate::model::humantime_serde_compat")]
    pub at: SystemTime,
    pub kind: super::markers::MarkerKind,
    pub revision: Revision,
    pub label: String,
}

/// One frame of the whole set, with the position of its first observation.
#[derive(Clone, Copy, Debug)]
struct FrameRef {
    file: usize,
    frame: usize,
    kind: FrameKind,
    position: u64,
    records: u64,
    first_ns: i64,
    last_ns: i64,
    /// Highest revision known at the frame's first record and at its last.
    first_rev: i64,
    rev: i64,
    /// The first frame of a set's file whose predecessor is missing: the stream before
    /// it is not all there (see [`Player::advance`]).
    gap_before: bool,
}

/// See the module docs.
pub struct Player {
    paths: Vec<PathBuf>,
    readers: Vec<Reader>,
    /// Content format of each file (its header's `format_version`).
    formats: Vec<u32>,
    header: RecordingHeader,
    /// What the first file's header frame holds after the header, when it does.
    tail: Option<super::HeaderTail>,
    /// The first file's revision timeline: the recording was converted from etcd's db file.
    revision_timeline: Option<super::RevisionTimeline>,
    frames: Vec<FrameRef>,
    total: u64,
    /// Index into `frames` of the next frame to read.
    next_frame: usize,
    /// Observations read and not yet handed out, each scrape body with its digest when the
    /// file holds one.
    /// The writers of each one's events when found ahead (see [`FoundWriters`]).
    pending: VecDeque<(Stamped, Option<Arc<ScrapeDigest>>, FoundWriters)>,
    /// Records that are no observation (digests, records that did not decode, lost
    /// frames) are counted in the position next to an observation, never on their own:
    /// a seek to the position just after an observation (a marker's) then stops right
    /// there, not past the frames read while looking for the next one. `tail_records`:
    /// those of the frame `pending` came from, counted with its last observation;
    /// `lead_records`: those of frames without observations read since, counted with the
    /// next observation taken (or at the end).
    tail_records: u64,
    lead_records: u64,
    /// A digest read just before its scrape: (target, body length, digest).
    next_digest: Option<(u8, u64, Arc<ScrapeDigest>)>,
    /// Scrape bodies are decoded even when their digest makes them unneeded.
    bodies: bool,
    position: u64,
    /// `Session::applied` of the session the cursor is in, as the last seek or advance
    /// left it: a session with another count is not this cursor's.
    cursor_applied: Option<u64>,
    damage: Vec<String>,
    /// What is worth knowing but lost nothing (a file not closed cleanly).
    notes: Vec<String>,
    /// Segments decoded ahead of the cursor on another thread.
    readahead: ReadAhead,
    /// Index into `frames` of the next frame to consider asking `readahead` for.
    ahead_next: usize,
    /// See [`Player::first_revision`].
    first_revision: Option<Revision>,
    /// Observations applied and not yet handed back to `readahead` to be dropped.
    spent: Vec<Stamped>,
    /// Scrape digests the applies handed back, freed with `spent` on the read-ahead thread.
    spent_digests: Vec<Arc<ScrapeDigest>>,
    /// A segment or scrape frame was lost since the session was last exact (restored
    /// from a checkpoint, or started empty): the next checkpoint played through is
    /// restored instead of passed over.
    lost: bool,
    /// Frames lost while playing, as markers at their place (see [`Player::markers`]).
    lost_marks: Vec<Marker>,
    /// The recording as named when opened (a file, or a set's base): its bookmarks sit
    /// beside it (see [`super::bookmarks`]).
    name: PathBuf,
    /// That checkpoint, once [`Player::fill`] reached it: restored by
    /// [`Player::advance`] before the observations after it.
    resync: Option<FrameRef>,
    /// Checkpoints restored while playing forward, see [`Player::resyncs`].
    resyncs: u64,
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> RecordError {
    RecordError::Format {
        path: path.display().to_string(),
        what: e.to_string(),
    }
}

impl Player {
    /// Opens a recording (a file or a `--keep-last` set, see [`super::files`]): reads each file's header and index
    /// (rebuilt by scanning when the file was not closed cleanly), and positions the
    /// cursor before the first checkpoint.
    ///
    /// Errors: not a recording, an unsupported version, or a header that cannot be read.
    pub fn open(path: &Path) -> Result<Player, RecordError> {
        let all_paths = recording_files(path)?;
        let mut paths = Vec::new();
        let mut readers = Vec::new();
        let mut formats = Vec::new();
        let mut header: Option<RecordingHeader> = None;
        let mut tail: Option<super::HeaderTail> = None;
        let mut revision_timeline: Option<super::RevisionTimeline> = None;
        let mut frames = Vec::new();
        let mut damage = Vec::new();
        let mut notes = Vec::new();
        let mut position = 0u64;
        // The previous file's set number and its last frame's stamp and revision.
        let mut prev: Option<(usize, i64, i64)> = None;
        for p in &all_paths {
            let r = Reader::open(p).map_err(|e| io_err(p, e))?;
            let number = super::files::set_number(p);
            let mut gap_before = false;
            if let (Some((_, ns, rev)), Some(first)) = (prev, r.frames().first()) {
                // A file of the set that starts before the previous one ends, in time and
                // in revision, repeats what was already read (a copy, a file restored from
                // a backup): played, its observations would apply twice.
                if first.first_time_ns < ns && first.first_rev < rev {
                    let when = |ns: i64| humantime::format_rfc3339_seconds(from_ns(ns));
                    damage.push(format!(
                        "{}: starts at {} (revision {}), before the file before it ends ({}, revision {rev}): it repeats the set's observations and is skipped",
                        p.display(),
                        when(first.first_time_ns),
                        first.first_rev,
                        when(ns)
                    ));
                    continue;
                }
            }
            let fi = readers.len();
            if let (Some((n0, ns, rev)), Some(n)) = (prev, number) {
                if n != n0 + 1 {
                    gap_before = true;
                    let first = r.frames().first();
                    let when = |ns: i64| humantime::format_rfc3339_seconds(from_ns(ns));
                    damage.push(format!(
                        "{}: {} file(s) of the set missing before it: observations from {} (revision {rev}) to {} (revision {}) lost",
                        p.display(),
                        n.saturating_sub(n0 + 1),
                        when(ns),
                        when(first.map_or(ns, |f| f.first_time_ns)),
                        first.map_or(rev, |f| f.first_rev.max(f.last_rev))
                    ));
                }
            }
            let (h, t, timeline) = super::read_header(r.header())
                .map_err(|e| io_err(p, format!("unreadable recording header: {e}")))?;
            if header.is_none() {
                tail = t;
                revision_timeline = timeline;
            }
            if h.format_version > FORMAT_VERSION {
                return Err(io_err(
                    p,
                    format!(
                        "recording format {} is newer than this regscope's {FORMAT_VERSION} (written by regscope {})",
                        h.format_version, h.regscope_version
                    ),
                ));
            }
            for d in r.damage() {
                damage.push(format!("{}: {}", p.display(), describe_damage(d)));
            }
            if r.index_rebuilt() {
                notes.push(format!(
                    "{}: not closed cleanly (no index; rebuilt by scanning)",
                    p.display()
                ));
            }
            for (i, f) in r.frames().iter().enumerate() {
                // A later file of a set starts with a checkpoint of the state the previous
                // file ended in: the stream goes on.
                let records = match f.kind {
                    FrameKind::Segment => u64::from(f.records),
                    FrameKind::Scrape => 1,
                    _ => 0,
                };
                if matches!(
                    f.kind,
                    FrameKind::Segment | FrameKind::Scrape | FrameKind::Checkpoint
                ) {
                    frames.push(FrameRef {
                        file: fi,
                        frame: i,
                        kind: f.kind,
                        position,
                        records,
                        first_ns: f.first_time_ns,
                        last_ns: f.last_time_ns,
                        first_rev: f.first_rev,
                        rev: f.last_rev,
                        gap_before: std::mem::take(&mut gap_before),
                    });
                    position += records;
                }
            }
            if let (Some(n), Some(last)) = (number, r.frames().last()) {
                prev = Some((n, last.last_time_ns, last.last_rev));
            }
            formats.push(h.format_version);
            if header.is_none() {
                header = Some(h);
            }
            readers.push(r);
            paths.push(p.clone());
        }
        let header = header.ok_or_else(|| io_err(path, "empty recording set"))?;
        let use_digests = header.regscope_version == env!("CARGO_PKG_VERSION")
            && header.concepts_fingerprint == crate::metrics::concepts::table_fingerprint();
        // Positions count from the first checkpoint; anything before it cannot be applied.
        let first_ck = frames.iter().position(|f| f.kind == FrameKind::Checkpoint);
        let skip = first_ck.map_or(0, |i| frames[i].position);
        if skip > 0 {
            damage.push(format!(
                "{skip} observation(s) before the first readable checkpoint cannot be replayed"
            ));
        }
        if let Some(i) = first_ck {
            frames.drain(..i);
        }
        for f in &mut frames {
            f.position -= skip;
        }
        let total = position - skip;
        let first_revision = first_revision(&mut readers, &frames);
        let readahead = ReadAhead::new(
            readers.iter().map(Reader::segment_reader).collect(),
            use_digests,
        );
        Ok(Player {
            paths,
            readers,
            formats,
            header,
            tail,
            revision_timeline,
            frames,
            total,
            next_frame: 0,
            pending: VecDeque::new(),
            tail_records: 0,
            lead_records: 0,
            next_digest: None,
            bodies: true,
            position: 0,
            cursor_applied: None,
            damage,
            notes,
            readahead,
            ahead_next: 0,
            first_revision,
            spent: Vec::new(),
            spent_digests: Vec::new(),
            lost: false,
            lost_marks: Vec::new(),
            name: path.to_path_buf(),
            resync: None,
            resyncs: 0,
        })
    }

    /// Whether the segments ahead of the cursor are decoded on a thread of their own (the
    /// default) or on the caller's. Either way the same observations come out in the same
    /// order; the thread makes a replay "as fast as possible" about a third faster on two
    /// cores (`cargo bench --bench record`).
    pub fn set_read_ahead(&mut self, on: bool) {
        self.readahead.set_enabled(on);
    }

    /// Whether scrape bodies are needed (the default) or only the session is: then a
    /// scrape whose digest the recording holds (and this regscope can use) is handed out
    /// with an empty body, its frame checked but its 3 MB body not decompressed. The
    /// session applies the digest either way, so it ends up the same.
    pub fn set_bodies(&mut self, bodies: bool) {
        self.bodies = bodies;
    }

    /// The recording's header (of its first file).
    /// Whether the session played to the cursor misses observations: a segment or scrape
    /// frame on the way could not be read and no checkpoint after it has been restored
    /// yet (see [`Player::advance`]).
    pub fn is_lost(&self) -> bool {
        self.lost
    }

    /// The recorder's local offset from UTC at the start, in seconds, when the file says
    /// it (see [`super::HeaderTail`]).
    pub fn recorder_utc_offset(&self) -> Option<i64> {
        self.tail.as_ref().map(|t| t.utc_offset_seconds)
    }

    /// `Some` when the recording was converted from etcd's db file: its stamps are all the
    /// file's modification time and its timeline runs over revisions (see
    /// [`super::RevisionTimeline`]).
    pub fn revision_timeline(&self) -> Option<super::RevisionTimeline> {
        self.revision_timeline
    }

    pub fn header(&self) -> &RecordingHeader {
        &self.header
    }

    /// The files read, oldest first.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// Positions in the recording after the first checkpoint: observations and the
    /// records beside them (scrape digests), as the timeline counts them.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The cursor: observations handed out since the first checkpoint.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Damage found so far, one line each (each names its file).
    pub fn damage(&self) -> &[String] {
        &self.damage
    }

    /// Notes that lost nothing, e.g. a file not closed cleanly whose index was rebuilt.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Frames by kind (segments, scrapes, checkpoints) and whether any file's index had
    /// to be rebuilt by scanning.
    pub fn frame_counts(&self) -> ((u64, u64, u64), bool) {
        let mut c = (0, 0, 0);
        for f in &self.frames {
            match f.kind {
                FrameKind::Segment => c.0 += 1,
                FrameKind::Scrape => c.1 += 1,
                FrameKind::Checkpoint => c.2 += 1,
                _ => {}
            }
        }
        (c, self.readers.iter().any(|r| r.index_rebuilt()))
    }

    /// The highest revision the recording's index knows (`None` for an empty one).
    pub fn last_revision(&self) -> Option<Revision> {
        self.frames.iter().map(|f| f.rev).max().filter(|r| *r > 0)
    }

    /// The first revision whose state the recording holds: its first checkpoint's, or,
    /// when that checkpoint is of a session that had not listed yet (`regscope record`
    /// starts before its list), the revision of that first list. `None` when the
    /// recording never learns a revision. A seek to an earlier revision has nothing to
    /// show.
    pub fn first_revision(&self) -> Option<Revision> {
        self.first_revision
    }

    /// Position of the last checkpoint (0 when there is only the first).
    pub fn last_checkpoint_position(&self) -> u64 {
        self.frames
            .iter()
            .rev()
            .find(|f| f.kind == FrameKind::Checkpoint)
            .map_or(0, |f| f.position)
    }

    /// First and last stamp of the recording.
    pub fn span(&self) -> (SystemTime, SystemTime) {
        let first = self.frames.first().map_or(0, |f| f.first_ns);
        let last = self.frames.iter().map(|f| f.last_ns).max().unwrap_or(first);
        (from_ns(first), from_ns(last))
    }

    /// Whether a seek to time `t` is inside the recording: its first and last seconds
    /// count whole (spans are shown to the second, so `07:44:48.9` of a recording that
    /// ends at 07:44:48.808 is its end), the second after the last does not.
    pub fn holds_time(&self, t: SystemTime) -> bool {
        let (start, end) = self.span();
        let second = |t: SystemTime| {
            let s = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
            UNIX_EPOCH + Duration::from_secs(s)
        };
        t >= second(start) && t < second(end) + Duration::from_secs(1)
    }

    /// The next observation without taking it.
    pub fn peek(&mut self) -> Option<&Stamped> {
        if self.fill() {
            self.pending.front().map(|(st, _, _)| st)
        } else {
            None
        }
    }

    /// Takes the next observation (the cursor moves past it).
    pub fn next_observation(&mut self) -> Option<Stamped> {
        self.next_digested().map(|(st, _, _)| st)
    }

    /// Takes the next observation with the digest of its scrape body, when recorded, and
    /// the writers of its events when found ahead.
    fn next_digested(&mut self) -> Option<(Stamped, Option<Arc<ScrapeDigest>>, FoundWriters)> {
        if !self.fill() {
            return None;
        }
        let next = self.pending.pop_front()?;
        self.position += std::mem::take(&mut self.lead_records) + 1;
        if self.pending.is_empty() {
            self.position += std::mem::take(&mut self.tail_records);
        }
        Some(next)
    }

    /// Checks every frame of the recording, so that damage anywhere is known before a
    /// summary is trusted (a seek reads only the frames on its way): each frame's crc, and
    /// with `decode_checkpoints` every checkpoint decompressed and restored as a seek would
    /// (`replay --check`). Damage found is added to [`Player::damage`], once per frame.
    pub fn verify(&mut self, decode_checkpoints: bool) {
        for f in self.frames.clone() {
            // Reading a frame checks its crc first; a checkpoint is then also restored.
            let result = if decode_checkpoints && f.kind == FrameKind::Checkpoint {
                self.restore_frame(&f).map(drop)
            } else {
                self.readers[f.file]
                    .verify_frame(f.frame)
                    .map_err(|e| e.to_string())
            };
            if let Err(e) = result {
                let line = self.frame_damage(&f, e);
                self.push_damage(line);
            }
        }
    }

    /// The session held by checkpoint frame `f`, or why it cannot be had.
    fn restore_frame(&mut self, f: &FrameRef) -> Result<Session, String> {
        let items = self.readers[f.file]
            .read_frame(f.frame)
            .map_err(|e| e.to_string())?;
        items
            .into_iter()
            .find_map(|it| match it {
                Item::Checkpoint { state, .. } => Some(restore(&state, self.formats[f.file])),
                _ => None,
            })
            .unwrap_or_else(|| Err("checkpoint frame without a checkpoint".into()))
    }

    /// One line of damage for frame `f`: its file, what it held and from when, and why.
    /// The same frame with the same error gives the same line, however it was found.
    fn frame_damage(&self, f: &FrameRef, e: impl std::fmt::Display) -> String {
        let path = self.paths[f.file].display();
        let when = humantime::format_rfc3339_seconds(from_ns(f.first_ns));
        if f.kind == FrameKind::Checkpoint {
            format!(
                "{path}: checkpoint at position {} ({when}, revision {}) unreadable: {e}",
                f.position, f.rev
            )
        } else {
            format!(
                "{path}: {} frame at position {} lost ({} observation(s) from {when}, up to revision {}): {e}",
                if f.kind == FrameKind::Scrape { "scrape" } else { "segment" },
                f.position,
                f.records,
                f.rev
            )
        }
    }

    /// Adds a line of damage unless the same frame was already reported.
    fn push_damage(&mut self, line: String) {
        if !self.damage.contains(&line) {
            self.damage.push(line);
        }
    }

    /// Applies observations to `to` (a session, or the console showing one: the same way
    /// live observations reach it, see [`Applies`]) until `target` is reached or `budget`
    /// observations were applied; `each` sees every observation applied, after it was,
    /// with the cursor's position just after it.
    ///
    /// After a segment or scrape frame that could not be read, the session misses what it
    /// held: the next checkpoint on the way is then restored in its place (the recorder
    /// wrote it from the whole stream), so the state is exact again from there on, as a
    /// seek past it gives. [`Player::resyncs`] counts those replacements.
    ///
    /// Returns how many were applied.
    pub fn advance(
        &mut self,
        to: &mut impl Applies,
        target: Target,
        budget: u64,
        mut each: impl FnMut(&Session, &Stamped, u64),
    ) -> u64 {
        let mut n = 0;
        // What applying lets go of is freed on the read-ahead thread, with the
        // observations (see `ReadAhead::recycle`). Packing waits for the end of the
        // stretch (see `Replica::defer_packing`).
        to.session_mut().defer_frees(true);
        to.session_mut().replica.defer_packing(true);
        while n < budget {
            let more = self.fill();
            if let Some(f) = self.resync.take() {
                self.resync_at(to.session_mut(), &f);
            }
            if !more {
                break;
            }
            let Some(next) = self.peek() else { break };
            let stop = match target {
                Target::Position(p) => self.position >= p,
                Target::Time(t) => next.at > t,
                Target::Revision(r) => to.session_mut().revision() >= r || next.obs.revision() > r,
                Target::End => false,
            };
            if stop {
                break;
            }
            let Some((st, digest, found)) = self.next_digested() else {
                break;
            };
            if let Some((next, _, _)) = self.pending.front() {
                prefetch_keys(next);
            }
            let writers = Found {
                writers: &found,
                names: self.readahead.names(),
            };
            let prepared = Prepared {
                digest: digest.as_ref(),
                writers: Some(writers),
            };
            if let Some(d) = to.apply_prepared(&st, prepared).digest {
                self.spent_digests.push(d);
            }
            each(to.session_mut(), &st, self.position);
            n += 1;
            self.spent.push(st);
            if self.spent.len() >= SPENT_BATCH {
                self.recycle(to.session_mut());
            }
        }
        let session = to.session_mut();
        self.recycle(session);
        session.defer_frees(false);
        session.replica.defer_packing(false);
        self.cursor_applied = Some(session.applied());
        n
    }

    /// Checkpoints restored while playing forward, over a stretch a lost frame made
    /// inexact (see [`Player::advance`]): when the count grows, the session passed to
    /// `advance` was replaced by another, as a seek replaces it.
    pub fn resyncs(&self) -> u64 {
        self.resyncs
    }

    /// Replaces `session` by checkpoint `f`'s, the state the lost frames would have built
    /// (what a seek to just after `f` starts from). A checkpoint that cannot be restored
    /// is damage too; play goes on with the inexact session and tries the next one.
    fn resync_at(&mut self, session: &mut Session, f: &FrameRef) {
        match self.restore_frame(f) {
            Ok(mut fresh) => {
                self.recycle(session);
                fresh.defer_frees(true);
                fresh.replica.defer_packing(true);
                let old = std::mem::replace(session, fresh);
                // Freeing a large session takes up to a second: not on the cursor's time.
                // (When no thread can be started, the closure and the session drop here.)
                let _ = std::thread::Builder::new().spawn(move || drop(old));
                self.lost = false;
                self.resyncs += 1;
            }
            Err(e) => {
                let line = self.frame_damage(f, e);
                self.push_damage(line);
            }
        }
    }

    /// When a seek to revision `r` stopped short of it at a lost frame (the revisions in
    /// between were in it): one line saying so and which revision `session` shows.
    /// `None` when the seek reached its target or there was no loss on its way.
    pub fn short_of(&self, session: &Session, target: Target) -> Option<String> {
        match target {
            Target::Revision(r) if self.lost && session.revision() < r => Some(format!(
                "revision {r} lies in a damaged stretch of the file: shown as of revision {}, the last before it",
                session.revision()
            )),
            _ => None,
        }
    }
}

/// See [`Player::first_revision`]: the first frame that knows a revision, and in it the
/// first observation that carries one (a segment's index entry gives the highest revision
/// known at its first record, which is 0 when the list begins inside the segment). A
/// segment that cannot be read gives its last revision, the most a seek could reach
/// through it.
fn first_revision(readers: &mut [Reader], frames: &[FrameRef]) -> Option<Revision> {
    let f = frames.iter().find(|f| f.rev > 0)?;
    if f.kind != FrameKind::Segment || f.first_rev > 0 {
        return Some(if f.first_rev > 0 { f.first_rev } else { f.rev });
    }
    let items = readers.get_mut(f.file)?.read_frame(f.frame).ok();
    let first = items.into_iter().flatten().find_map(|it| match it {
        Item::Record {
            time_ns,
            kind: super::RECORD_OBSERVATION,
            payload,
            ..
        } => super::decode_observation(time_ns, &payload)
            .ok()
            .map(|st| st.obs.revision())
            .filter(|r| *r > 0),
        _ => None,
    });
    Some(first.unwrap_or(f.rev))
}

fn describe_damage(d: &super::format::Damage) -> String {
    // A side with no good frame is the file's start or end (a truncated file's loss runs
    // to its end): its time and revision are not known, so the line says which end.
    let at = |ns: Option<i64>, rev: Option<i64>, end: &str| {
        ns.map_or(end.to_string(), |n| {
            let r = rev.map_or("?".to_string(), |r| r.to_string());
            format!(
                "{} (revision {r})",
                humantime::format_rfc3339_seconds(from_ns(n))
            )
        })
    };
    format!(
        "{} bytes at offset {} lost ({}): between {} and {}",
        d.len,
        d.offset,
        d.what,
        at(d.after_time_ns, d.after_rev, "the start of the file"),
        at(d.before_time_ns, d.before_rev, "the end of the file")
    )
}

/// Asks the CPU to bring the keys of `st`'s events into its cache, while the observation
/// before it is applied: they were decoded on the read-ahead's core, and the session's
/// first look at each (hashing it to find its entry) was a cache miss per event (a sixth
/// of the session thread's time in `cargo bench --bench record -- replay`). A hint only:
/// the same results without it.
#[inline]
fn prefetch_keys(st: &Stamped) {
    #[cfg(target_arch = "x86_64")]
    if let Observation::Events { events, .. } = &st.obs {
        for e in events.iter().take(4) {
            // SAFETY: a prefetch reads nothing and cannot fault, whatever the address;
            // this one is the start of a live key.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    e.kv.key.as_ptr().cast(),
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = st;
}

#[cfg(test)]
mod tests {
    use super::super::format::Damage;
    use super::*;

    #[test]
    fn damage_at_either_end_of_the_file_says_which_end() {
        let d = |after: Option<(i64, i64)>, before: Option<(i64, i64)>| Damage {
            offset: 100,
            len: 20,
            after_time_ns: after.map(|a| a.0),
            before_time_ns: before.map(|b| b.0),
            after_rev: after.map(|a| a.1),
            before_rev: before.map(|b| b.1),
            what: "truncated".into(),
        };
        let (t1, t2) = (1_700_000_000_000_000_000, 1_700_000_060_000_000_000);
        assert_eq!(
            describe_damage(&d(Some((t1, 7)), Some((t2, 9)))),
            "20 bytes at offset 100 lost (truncated): between 2023-11-14T22:13:20Z (revision 7) \
             and 2023-11-14T22:14:20Z (revision 9)"
        );
        assert_eq!(
            describe_damage(&d(Some((t1, 7)), None)),
            "20 bytes at offset 100 lost (truncated): between 2023-11-14T22:13:20Z (revision 7) \
             and the end of the file"
        );
        assert_eq!(
            describe_damage(&d(None, Some((t2, 9)))),
            "20 bytes at offset 100 lost (truncated): between the start of the file \
             and 2023-11-14T22:14:20Z (revision 9)"
        );
    }
}
