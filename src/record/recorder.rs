//! The recorder: writes a session's observation stream to a file (or a rolling set of
//! files), with checkpoints of the session so that a replay can seek.
//!
//! The owner of the stream calls [`Recorder::record`] for every observation, in stream
//! order, before or after applying it to its session, and [`Recorder::maintain`] after
//! each batch with the session when the session has applied everything recorded (a
//! paused console passes `None`): that is when a checkpoint can be taken, a pending
//! segment flushed (every second) and a rolling set moved on.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use super::files::{recording_files, set_file_path};
use super::format::Writer;
use super::{
    encode_observation, redact, time_ns, RecordError, RecordingHeader, FORMAT_VERSION,
    RECORD_OBSERVATION, RECORD_SCRAPE_DIGEST,
};
use crate::model::{KeyValue, Observation, Revision, ScrapeOutcome, SessionInfo, Stamped};
use crate::store::{Applied, Session};

/// When to write a checkpoint: after `records` observations or `interval` of session time
/// (whichever first), but only once the observations written since the last checkpoint
/// add up to `min_ratio` of its size, so that a large replica (a checkpoint of hundreds of
/// MB) is not written again every minute.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CheckpointPolicy {
    pub records: u64,
    pub interval: Duration,
    pub min_ratio: f64,
}

impl Default for CheckpointPolicy {
    fn default() -> Self {
        // A seek restores the checkpoint before its target and replays what follows: 50,000
        // observations or 150 s of a busy recording replay in under 0.1 s
        // (`cargo bench --bench record`), beside 0.1–0.2 s to restore a 300 MB session.
        CheckpointPolicy {
            records: 50_000,
            interval: Duration::from_secs(150),
            min_ratio: 0.25,
        }
    }
}

/// What and where to record.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// The file; with `keep_last`, the base name of the set (`BASE.000001.rgs`, …).
    pub path: PathBuf,
    /// Write Secret values as etcd holds them (the header says so and replay warns).
    pub show_secrets: bool,
    /// Stop (close the file cleanly) when it reaches this many bytes; with `keep_last`,
    /// the most the whole set may hold (oldest files dropped first).
    pub max_size: Option<u64>,
    /// A flight recorder: a rolling set of files that always holds at least this much of
    /// the newest session time, older files deleted.
    pub keep_last: Option<Duration>,
    /// Replace an existing file instead of refusing.
    pub overwrite: bool,
    pub policy: CheckpointPolicy,
    /// Written after the header's tail of every file: the stream comes from etcd's db
    /// file and its stamps are no times (see [`super::RevisionTimeline`]). `None` for
    /// every recording of live sources.
    pub revision_timeline: Option<super::RevisionTimeline>,
}

impl RecordOptions {
    /// Recording to `path` with the defaults (Secrets redacted, no limits).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        RecordOptions {
            path: path.into(),
            show_secrets: false,
            max_size: None,
            keep_last: None,
            overwrite: false,
            policy: CheckpointPolicy::default(),
            revision_timeline: None,
        }
    }
}

/// A file of a rolling set: its path and the session time it starts at.
#[derive(Clone, Debug)]
struct SetFile {
    path: PathBuf,
    start: SystemTime,
    bytes: u64,
}

/// See the module docs.
pub struct Recorder {
    opts: RecordOptions,
    info: SessionInfo,
    cluster_id: u64,
    writer: Option<Writer>,
    /// Files of the set, oldest first (one file without `keep_last`).
    files: Vec<SetFile>,
    /// Bytes of the files already closed and still on disk.
    closed_bytes: u64,
    /// Highest revision seen in the stream, stamped on every record for the index.
    stream_rev: Revision,
    /// Newest stamp recorded.
    stream_time: SystemTime,
    since_checkpoint: u64,
    bytes_at_checkpoint: u64,
    last_checkpoint_size: u64,
    last_checkpoint_time: SystemTime,
    last_flush: Instant,
    /// Observations written.
    records: u64,
    /// Why recording stopped by itself (max size reached, a write failed).
    stopped: Option<String>,
    /// Files of the set already deleted (for numbering).
    dropped: usize,
    /// What the caller should tell once: `--max-size` made the set hold less than
    /// `--keep-last`, or cannot be held at all.
    note: Option<String>,
    /// A note of each kind was made (each is said once).
    noted: (bool, bool),
}

/// Frames are flushed to the OS at least this often: a SIGKILL or a power loss loses at
/// most the observations of the last interval.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// A pending segment is compressed and written when it holds this much, even within the
/// second (bounds the recorder's memory at high write rates).
const SEGMENT_BYTES: usize = 1 << 20;

impl Recorder {
    /// Creates the file (mode 0600; an existing file is refused unless `overwrite`) and
    /// writes the header and a checkpoint of `session`, so the recording stands alone.
    /// `session` must have applied every observation that will not be passed to
    /// [`Recorder::record`] (a paused console records its backlog after this).
    ///
    /// Errors: the file cannot be created or written.
    pub fn create(
        opts: RecordOptions,
        session: &Session,
        cluster_id: u64,
    ) -> Result<Recorder, RecordError> {
        let mut r = Recorder {
            info: session.info().clone(),
            cluster_id,
            writer: None,
            files: Vec::new(),
            closed_bytes: 0,
            stream_rev: session.revision(),
            stream_time: session.now(),
            since_checkpoint: 0,
            bytes_at_checkpoint: 0,
            last_checkpoint_size: 0,
            last_checkpoint_time: session.now(),
            last_flush: Instant::now(),
            records: 0,
            stopped: None,
            dropped: 0,
            note: None,
            noted: (false, false),
            opts,
        };
        if r.opts.keep_last.is_some() {
            r.clear_old_set()?;
        }
        r.open_file(session)?;
        Ok(r)
    }

    /// A `--keep-last` base that already names a set (an earlier run): refused, or with
    /// `--force` that set's files are deleted, so that one set never mixes two sessions.
    fn clear_old_set(&self) -> Result<(), RecordError> {
        let Ok(old) = recording_files(&self.opts.path) else {
            return Ok(());
        };
        let old: Vec<PathBuf> = old.into_iter().filter(|p| *p != self.opts.path).collect();
        if old.is_empty() {
            return Ok(());
        }
        if !self.opts.overwrite {
            return Err(RecordError::Format {
                path: old[0].display().to_string(),
                what: format!(
                    "{} file(s) of an earlier --keep-last set are there; move them away, or pass --force to replace the set",
                    old.len()
                ),
            });
        }
        for p in old {
            if std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_file()) {
                let _ = std::fs::remove_file(&p);
            }
        }
        Ok(())
    }

    fn file_path(&self, n: usize) -> PathBuf {
        if self.opts.keep_last.is_none() {
            return self.opts.path.clone();
        }
        set_file_path(&self.opts.path, n)
    }

    fn open_file(&mut self, session: &Session) -> Result<(), RecordError> {
        let n = self.files.len() + 1 + self.dropped;
        let path = self.file_path(n);
        let header = RecordingHeader {
            format_version: FORMAT_VERSION,
            regscope_version: env!("CARGO_PKG_VERSION").to_string(),
            info: self.info.clone(),
            cluster_id: self.cluster_id,
            recording_started: session.now(),
            secrets_redacted: !self.opts.show_secrets,
            concepts_fingerprint: crate::metrics::concepts::table_fingerprint(),
        };
        let tail = super::HeaderTail {
            utc_offset_seconds: crate::config::zone::local_offset_at(session.now()),
        };
        let timeline = self.opts.revision_timeline;
        let header = postcard::to_stdvec(&header)
            .and_then(|mut h| {
                h.extend(postcard::to_stdvec(&tail)?);
                if let Some(t) = timeline {
                    h.extend(postcard::to_stdvec(&t)?);
                }
                Ok(h)
            })
            .map_err(|e| RecordError::Format {
                path: path.display().to_string(),
                what: e.to_string(),
            })?;
        let fmt_err = |what: String| RecordError::Format {
            path: path.display().to_string(),
            what,
        };
        match std::fs::symlink_metadata(&path) {
            // Only a regular file is ever replaced: never a device, a FIFO, a directory or
            // what a symlink points to (`record -o /dev/null --force` under sudo must not
            // delete /dev/null).
            Ok(m) if !m.file_type().is_file() => {
                return Err(fmt_err(
                    "exists and is not a regular file (a device, FIFO, directory or symlink); choose another path".into(),
                ))
            }
            Ok(_) if self.opts.overwrite => {
                let _ = std::fs::remove_file(&path);
            }
            Ok(_) => {
                return Err(fmt_err(
                    "exists; choose another path, or pass --force to replace it".into(),
                ))
            }
            Err(_) => {}
        }
        let io = |source| RecordError::Io {
            path: path.display().to_string(),
            source,
        };
        let w = Writer::create(&path, &header).map_err(io)?;
        self.writer = Some(w);
        self.files.push(SetFile {
            path: path.clone(),
            start: session.now(),
            bytes: 0,
        });
        self.checkpoint(session).map_err(io)?;
        Ok(())
    }

    /// Writes one observation that the caller has already applied, with what applying it
    /// gave (`applied`): a scrape body goes with the digest the session derived from it
    /// (see [`Recorder::record_digest`]).
    pub fn record_applied(&mut self, st: &Stamped, applied: &Applied) {
        if let Observation::Scrape {
            target,
            outcome: ScrapeOutcome::Body { body, .. },
        } = &st.obs
        {
            if let Some(d) = &applied.digest {
                self.record_digest(st.at, *target, body.len(), d);
            }
        }
        self.record(st);
    }

    /// Writes one observation (Secret values redacted unless `show_secrets`).
    pub fn record(&mut self, st: &Stamped) {
        if self.stopped.is_some() {
            return;
        }
        self.stream_rev = self.stream_rev.max(st.obs.revision());
        if st.at > self.stream_time {
            self.stream_time = st.at;
        }
        let Some(w) = self.writer.as_mut() else {
            return;
        };
        let t = time_ns(st.at);
        let res = match &st.obs {
            Observation::Scrape {
                target,
                outcome: ScrapeOutcome::Body { source, body },
            } => w.append_scrape(t, self.stream_rev, *target as u8, source, body),
            obs => {
                let redacted;
                let obs = if self.opts.show_secrets {
                    obs
                } else {
                    match redact_observation(self.info.prefix.as_bytes(), obs) {
                        Some(r) => {
                            redacted = r;
                            &redacted
                        }
                        None => obs,
                    }
                };
                w.append(
                    t,
                    self.stream_rev,
                    RECORD_OBSERVATION,
                    &encode_observation(obs),
                )
            }
        };
        self.records += 1;
        self.since_checkpoint += 1;
        if let Err(e) = res {
            self.fail(format!("writing {}: {e}", self.current_path()));
            return;
        }
        if w.pending_bytes() >= SEGMENT_BYTES {
            if let Err(e) = w.flush_segment() {
                self.fail(format!("writing {}: {e}", self.current_path()));
            }
        }
    }

    /// Writes what the session derived from the scrape body about to be recorded (call
    /// just before [`Recorder::record`] of that scrape; see `RECORD_SCRAPE_DIGEST`).
    pub fn record_digest(
        &mut self,
        at: SystemTime,
        target: crate::model::ScrapeTarget,
        body_len: usize,
        digest: &crate::store::metrics::ScrapeDigest,
    ) {
        if self.stopped.is_some() {
            return;
        }
        let Some(w) = self.writer.as_mut() else {
            return;
        };
        let Ok(payload) = postcard::to_stdvec(&(target as u8, body_len as u64, digest)) else {
            return;
        };
        if let Err(e) = w.append(time_ns(at), self.stream_rev, RECORD_SCRAPE_DIGEST, &payload) {
            self.fail(format!("writing {}: {e}", self.current_path()));
        }
    }

    /// Flushes the pending segment when a second has passed, and — when `session` is
    /// given (it has applied everything recorded) — writes a checkpoint when the policy
    /// says so and moves a rolling set on. Call after every batch.
    pub fn maintain(&mut self, session: Option<&mut Session>) {
        if self.stopped.is_some() {
            return;
        }
        if self.last_flush.elapsed() >= FLUSH_EVERY {
            self.last_flush = Instant::now();
            if let Some(w) = self.writer.as_mut() {
                if let Err(e) = w.flush_segment() {
                    self.fail(format!("writing {}: {e}", self.current_path()));
                    return;
                }
            }
        }
        if let Some(s) = session {
            if let (Some(keep), Some(_)) = (self.opts.keep_last, self.opts.max_size) {
                self.drop_oldest(s.now(), keep);
            }
            let roll = self.opts.keep_last.filter(|keep| {
                let span = keep.div_f64(4.0).max(Duration::from_secs(10));
                let start = self.files.last().map_or(s.now(), |f| f.start);
                let age = s.now().duration_since(start).unwrap_or_default();
                // With --max-size too, a file also closes at a quarter of it, so that
                // dropping the oldest files can keep the set under it; never before it
                // holds twice its opening checkpoint (a new file every second would be
                // all checkpoints).
                let by_size = self.opts.max_size.is_some_and(|m| {
                    let b = self.current_bytes();
                    b >= m / 4 && b >= 2 * self.last_checkpoint_size
                });
                age >= span || (by_size && age >= Duration::from_secs(10))
            });
            let checkpoint = roll.is_none() && self.checkpoint_due(s.now());
            if roll.is_some() || checkpoint {
                // A checkpoint writes keys in key order: settled here, that is a pass over
                // the order instead of a sort of a copy.
                s.settle();
            }
            if let Some(keep) = roll {
                self.roll(s, keep);
                return;
            }
            if checkpoint {
                if let Err(e) = self.checkpoint(s) {
                    self.fail(format!("writing {}: {e}", self.current_path()));
                    return;
                }
            }
        }
        if let Some(max) = self.opts.max_size {
            if self.opts.keep_last.is_none() && self.bytes_written() >= max {
                self.stopped = Some(format!(
                    "stopped at --max-size ({} bytes written)",
                    self.bytes_written()
                ));
                self.close();
            }
        }
    }

    fn checkpoint_due(&self, now: SystemTime) -> bool {
        let p = &self.opts.policy;
        if self.since_checkpoint == 0 {
            return false;
        }
        let elapsed = now
            .duration_since(self.last_checkpoint_time)
            .unwrap_or_default();
        let bytes_since = self
            .current_bytes()
            .saturating_sub(self.bytes_at_checkpoint);
        (self.since_checkpoint >= p.records || elapsed >= p.interval)
            && bytes_since as f64 >= self.last_checkpoint_size as f64 * p.min_ratio
    }

    fn checkpoint(&mut self, session: &Session) -> std::io::Result<()> {
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        let state = checkpoint_bytes(session, self.opts.show_secrets)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let before = w.bytes_written();
        w.checkpoint(time_ns(session.now()), session.revision(), &state)?;
        w.flush_segment()?;
        self.last_checkpoint_size = w.bytes_written().saturating_sub(before);
        self.bytes_at_checkpoint = w.bytes_written();
        self.last_checkpoint_time = session.now();
        self.since_checkpoint = 0;
        Ok(())
    }

    /// Closes the current file of the set, starts the next with a checkpoint, and deletes
    /// the oldest files no longer needed to hold `keep` (or over `max_size`).
    fn roll(&mut self, session: &Session, keep: Duration) {
        let closed = self.close_current();
        self.closed_bytes += closed;
        if let Some(f) = self.files.last_mut() {
            f.bytes = closed;
        }
        if let Err(e) = self.open_file(session) {
            self.fail(e.to_string());
            return;
        }
        self.drop_oldest(session.now(), keep);
    }

    /// Deletes the oldest files of the set no longer needed to hold `keep` at `now`, and,
    /// down to the file being written, those that put the set over `--max-size`.
    fn drop_oldest(&mut self, now: SystemTime, keep: Duration) {
        // The oldest file may go when the next one already starts at or before now - keep,
        // or, down to the file just opened, when the set is over --max-size.
        let over = |r: &Self| {
            r.opts
                .max_size
                .is_some_and(|m| r.closed_bytes + r.current_bytes() > m)
        };
        while self.files.len() > 1 {
            let next_start = self.files[1].start;
            let old_enough = now.duration_since(next_start).unwrap_or_default() >= keep;
            if !(old_enough && self.files.len() > 2 || over(self)) {
                break;
            }
            if !old_enough && !self.noted.0 {
                self.noted.0 = true;
                self.note = Some(format!(
                    "--max-size {} holds only the last {} of the session, less than --keep-last {}; the oldest files go first",
                    self.opts.max_size.unwrap_or(0),
                    humantime::format_duration(Duration::from_secs(
                        now.duration_since(next_start).unwrap_or_default().as_secs()
                    )),
                    humantime::format_duration(keep)
                ));
            }
            let f = self.files.remove(0);
            self.closed_bytes = self.closed_bytes.saturating_sub(f.bytes);
            self.dropped += 1;
            let _ = std::fs::remove_file(&f.path);
        }
        if over(self) && self.files.len() == 1 && !self.noted.1 {
            self.noted.1 = true;
            self.note = Some(format!(
                "--max-size {} is less than one file of the set ({} bytes, most of it the checkpoint that lets it stand alone): the set holds one file",
                self.opts.max_size.unwrap_or(0),
                self.current_bytes()
            ));
        }
    }

    /// What `--max-size` beside `--keep-last` made of the set, once each: that it holds
    /// less time than `--keep-last`, or that one file is already over it.
    pub fn take_note(&mut self) -> Option<String> {
        self.note.take()
    }

    fn close_current(&mut self) -> u64 {
        match self.writer.take() {
            Some(w) => match w.finish() {
                Ok(n) => n,
                Err(e) => {
                    self.stopped = Some(format!("closing {}: {e}", self.current_path()));
                    0
                }
            },
            None => 0,
        }
    }

    fn close(&mut self) {
        if self.writer.is_none() {
            return;
        }
        let n = self.close_current();
        if let Some(f) = self.files.last_mut() {
            f.bytes = n;
        }
    }

    fn fail(&mut self, why: String) {
        self.stopped = Some(why);
        self.writer = None;
    }

    fn current_bytes(&self) -> u64 {
        self.writer.as_ref().map_or(0, |w| w.bytes_written())
    }

    fn current_path(&self) -> String {
        self.files
            .last()
            .map_or_else(String::new, |f| f.path.display().to_string())
    }

    /// Bytes written to the file (or the whole set) so far.
    pub fn bytes_written(&self) -> u64 {
        self.closed_bytes + self.current_bytes()
    }

    /// Observations written.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// The file being written (the newest of a set).
    pub fn path(&self) -> PathBuf {
        self.files
            .last()
            .map_or_else(|| self.opts.path.clone(), |f| f.path.clone())
    }

    /// Why recording stopped by itself (`--max-size` reached, a write failed).
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.as_deref()
    }

    /// Flushes, writes the index and closes the file. Returns the bytes written in all.
    ///
    /// Errors: the last write or the close failed (what was flushed before stays
    /// readable).
    pub fn finish(mut self) -> Result<u64, String> {
        self.close();
        match self.stopped.take() {
            Some(e) if !e.starts_with("stopped at") => Err(e),
            _ => Ok(self.closed_bytes + self.files.last().map_or(0, |f| f.bytes)),
        }
    }

    /// Files of a rolling set written so far and still on disk (one without
    /// `--keep-last`).
    pub fn files(&self) -> usize {
        self.files.len()
    }
}

/// The session as a checkpoint, with every Secret value under `<prefix>/secrets/` redacted
/// as the records are (unless `show_secrets`): the session owner applied the observations
/// as received, so its replica holds them in the clear.
fn checkpoint_bytes(session: &Session, show_secrets: bool) -> Result<Vec<u8>, String> {
    let bytes = session.to_checkpoint().map_err(|e| e.to_string())?;
    let mut secrets = session.info().prefix.as_bytes().to_vec();
    secrets.extend_from_slice(b"/secrets/");
    let has_secrets = session
        .replica
        .resources()
        .iter()
        .any(|r| r.resource == "secrets")
        || session
            .replica
            .events()
            .iter()
            .any(|e| e.key.starts_with(&secrets));
    if show_secrets || !has_secrets {
        return Ok(bytes);
    }
    let mut copy = Session::from_checkpoint(&bytes.into(), crate::store::CHECKPOINT_FORMAT)?;
    // The copy lives for this call only: no packing worker for it.
    copy.replica.disable_packing();
    copy.replica
        .map_values(&secrets, |v| match redact::redact_secret_value(v) {
            redact::Redacted::Unchanged(_) => v.clone(),
            redact::Redacted::Rewritten(_, b) => b.into(),
        });
    copy.to_checkpoint().map_err(|e| e.to_string())
}

/// The observation with every Secret value under `<prefix>/secrets/` redacted, or `None`
/// when it holds none.
fn redact_observation(prefix: &[u8], obs: &Observation) -> Option<Observation> {
    let mut secret_prefix = prefix.to_vec();
    secret_prefix.extend_from_slice(b"/secrets/");
    let is_secret = |kv: &KeyValue| kv.key.starts_with(&secret_prefix) && !kv.value.is_empty();
    let fix = |kv: &KeyValue| -> KeyValue {
        match redact::redact_secret_value(&kv.value) {
            redact::Redacted::Unchanged(_) => kv.clone(),
            redact::Redacted::Rewritten(_, v) => KeyValue {
                value: v.into(),
                ..kv.clone()
            },
        }
    };
    match obs {
        Observation::ListPage { kvs } if kvs.iter().any(is_secret) => Some(Observation::ListPage {
            kvs: kvs
                .iter()
                .map(|kv| if is_secret(kv) { fix(kv) } else { kv.clone() })
                .collect(),
        }),
        Observation::Events { revision, events }
            if events
                .iter()
                .any(|e| is_secret(&e.kv) || e.prev_kv.as_ref().is_some_and(is_secret)) =>
        {
            Some(Observation::Events {
                revision: *revision,
                events: events
                    .iter()
                    .map(|e| {
                        let mut e = e.clone();
                        if is_secret(&e.kv) {
                            e.kv = fix(&e.kv);
                        }
                        if let Some(p) = e.prev_kv.as_ref().filter(|p| is_secret(p)) {
                            e.prev_kv = Some(fix(p));
                        }
                        e
                    })
                    .collect(),
            })
        }
        _ => None,
    }
}
