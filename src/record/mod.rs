//! Recordings: the session's observation stream written to a file, and read back in place
//! of the live sources.
//!
//! The recorder ([`Recorder`]) taps the stream the live sources hand to the session (etcd
//! list pages, watch events, progress, connection state, compactions, scrapes, informer
//! observations, clock ticks) and writes the observations themselves, not what the store
//! derives from them: a replay runs the same store and the same derivation as live. The
//! player ([`Player`]) is a source with a cursor: it rebuilds the [`Session`] at any
//! position from the nearest checkpoint before it and the observations after.
//!
//! # File format (contents version 6; versions 1 to 5 still read)
//!
//! A file is [`format`]'s container: the magic `RGSCOPE\0`, a version, then frames, each
//! with a magic, a kind, a length and a CRC-32 of its payload, so a damaged frame is
//! skipped and reading resyncs at the next good one (a replay playing through a lost
//! segment then restores the next checkpoint, see [`Player::advance`]). The frames:
//!
//! - **header** (first): [`RecordingHeader`] as `postcard` — format version, regscope
//!   version, the session's [`SessionInfo`] (title, endpoints, prefix, budgets, scrape
//!   targets, start time), etcd's cluster id and whether Secrets are redacted — then a
//!   [`HeaderTail`] (the recorder's UTC offset), which older readers leave unread, and, in
//!   a recording converted from etcd's own db file only, a [`RevisionTimeline`] after it
//!   (the file's revisions and modification time: its stamps are no times), which readers
//!   before it leave unread too;
//! - **checkpoint**: the whole [`Session`] as `postcard`, zstd-compressed. A file starts
//!   with one (a recording begun mid-session stands alone), and more follow by
//!   [`CheckpointPolicy`], so that a seek reads one checkpoint and at most a few seconds
//!   of observations. From version 2 the replica's keys are one image in key order with
//!   every value as memory held it, raw or packed with its resource's dictionary (carried
//!   in the image); see `store/image.rs`. Version 1 held them as a map of raw values;
//!   version 3 adds the replica's watch health (etcd's announced head, watch anomalies);
//!   version 4 the etcd members as last polled (and segments may hold their polls);
//!   version 5 the write counters per resource and managedFields writer; version 6
//!   kube-apiserver's other etcd clusters as watched and its storage flags (and segments
//!   may hold their observations);
//! - **segment**: up to a second (or 1 MiB) of observations, zstd-compressed together;
//!   each record is `kind`, the stamp (unix ns), the stream's revision and `postcard` of
//!   the [`Observation`]. SIGKILL or power loss loses at most the pending second;
//! - **scrape digest** (a segment record just before a scrape): what the store derived from
//!   that body (parsed and mapped samples), a cache that spares a seek from parsing each
//!   3 MB body again; used only by the regscope version that wrote it, which otherwise
//!   parses the body;
//! - **scrape**: one `/metrics` body, zstd-compressed with the previous body of the same
//!   target as dictionary (consecutive scrapes differ in a few numbers, so a 3.4 MB body
//!   costs tens of kB), a self-contained key frame at least every 60 scrapes and after
//!   every checkpoint. Bodies come back byte for byte, so every sample value does too;
//! - **index** and trailer (at a clean close): every frame's offset, kind, time and
//!   revision span. When missing (the process was killed) it is rebuilt by scanning.
//!
//! Files are created mode 0600. Secret values are redacted before they are written
//! ([`redact`]) unless the recording is made with `--show-secrets`; values encrypted at
//! rest are written as the ciphertext etcd holds; no key material is ever written.

pub mod bookmarks;
pub mod files;
pub mod format;
mod markers;
mod player;
mod readahead;
mod recorder;
pub mod redact;
pub mod seek;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

pub use bookmarks::Bookmark;
pub use markers::{Marker, MarkerKind, MarkerScan};
pub use player::{Player, ReplayReport, ReportMarker, Target};
pub use recorder::{CheckpointPolicy, RecordOptions, Recorder};

use crate::model::{Observation, SessionInfo, Stamped};
use crate::store::Session;

/// Version of what the frames hold (the [`RecordingHeader`], the records and the
/// checkpoints); [`format`] has its own container version. 6: checkpoints carry
/// kube-apiserver's other etcd clusters and storage flags, and records may hold
/// [`Observation::OtherCluster`] and [`Observation::ApiserverFlags`]; 5: checkpoints carry the
/// replica's write counters per managedFields writer; 4: checkpoints carry the etcd
/// members as last polled; 3: checkpoints carry the
/// replica's watch health and records may hold [`Observation::HeadAtLeast`]; 2: checkpoints
/// hold the replica's keys as one image with values packed in memory as they were
/// ([`crate::store::CHECKPOINT_FORMAT`]); files of every earlier version still read.
pub const FORMAT_VERSION: u32 = crate::store::CHECKPOINT_FORMAT;

/// Record kind of an observation in a segment.
pub(crate) const RECORD_OBSERVATION: u8 = 1;

/// Record kind of a scrape digest (`postcard` of [`crate::store::metrics::ScrapeDigest`]):
/// what the store derived from the scrape body that follows it in the file, so a seek does
/// not parse every body again. Only read by the regscope version that wrote it.
pub(crate) const RECORD_SCRAPE_DIGEST: u8 = 2;

/// What a recording starts with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordingHeader {
    /// [`FORMAT_VERSION`] of the writer.
    pub format_version: u32,
    /// `CARGO_PKG_VERSION` of the regscope that wrote it.
    pub regscope_version: String,
    /// The session recorded.
    pub info: SessionInfo,
    /// etcd's cluster id when known at the start (0 when not).
    pub cluster_id: u64,
    /// When this file was started (a recording begun mid-session starts later than
    /// `info.started_at`).
    pub recording_started: SystemTime,
    /// Secret values are redacted in this file (false only with `--show-secrets`).
    pub secrets_redacted: bool,
    /// [`crate::metrics::concepts::table_fingerprint`] of the writer: its scrape digests
    /// are used only by a reader with the same regscope version and concept table.
    pub concepts_fingerprint: u64,
}

/// What a header frame holds after its [`RecordingHeader`] (from regscope 0.1 with the
/// report): fields a reader before it ignores, as `postcard` leaves bytes after a value
/// unread, so older versions still open the file. A file without it reads as `None`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HeaderTail {
    /// The recorder's local offset from UTC at the start, in seconds (east positive), so
    /// that a report can say what the recorder's clock showed.
    pub utc_offset_seconds: i64,
}

/// What a header frame holds after its [`HeaderTail`] when the recording was converted
/// from etcd's own db file (`regscope replay DB`, `cli/db_file.rs` `to_recording`): a db
/// file keeps revisions, not times, so every observation of such a recording carries one
/// stamp, the file's modification time, and only revisions order it. A replay over it
/// runs its timeline over revisions `first..=head` (play steps through them, seeks take
/// revisions, `start` and `end`) and shows `file_time` only as the file's modification
/// time. A recording made from live sources has none (`None` from
/// [`crate::record::Player::revision_timeline`]), and its header bytes are as before.
///
/// The fields are the file's own: `compacted` and `head` from etcd's `meta` bucket
/// (`finishedCompactRev`) and `key` bucket (its newest revision), as
/// `source/etcd_db` reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevisionTimeline {
    /// etcd's finished compaction in the file (0: never compacted).
    pub compacted: crate::model::Revision,
    /// The first revision whose whole state the recording holds: the finished compaction,
    /// or etcd's first revision, 1, for a store never compacted.
    pub first: crate::model::Revision,
    /// The file's head: its newest revision.
    pub head: crate::model::Revision,
    /// The stamp every observation carries: the db file's modification time, not when
    /// any revision was written.
    pub file_time: SystemTime,
}

/// A header frame's payload as read: the header, its tail and the revision timeline when
/// present.
pub(crate) type ReadHeader = (
    RecordingHeader,
    Option<HeaderTail>,
    Option<RevisionTimeline>,
);

/// Reads a header frame's payload: the header, and its tail and revision timeline when
/// present (a file written before either reads as `None`).
pub(crate) fn read_header(bytes: &[u8]) -> Result<ReadHeader, String> {
    let (h, rest) =
        postcard::take_from_bytes::<RecordingHeader>(bytes).map_err(|e| e.to_string())?;
    let Ok((tail, rest)) = postcard::take_from_bytes::<HeaderTail>(rest) else {
        return Ok((h, None, None));
    };
    let timeline = postcard::from_bytes::<RevisionTimeline>(rest).ok();
    Ok((h, Some(tail), timeline))
}

/// A stamp as unix nanoseconds (0 for times before 1970; `i64` reaches 2262).
pub(crate) fn time_ns(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Unix nanoseconds back to a stamp.
pub(crate) fn from_ns(ns: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(u64::try_from(ns).unwrap_or(0))
}

/// Errors of recordings: I/O, a file that is not a recording, or content that cannot be
/// read (with what and where).
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {what}")]
    Format { path: String, what: String },
}

impl RecordError {
    /// Whether the file is no recording at all (no regscope magic at its start, or empty),
    /// as opposed to a recording that is damaged or of another format version.
    pub fn is_not_a_recording(&self) -> bool {
        matches!(self, RecordError::Format { what, .. }
            if [format::Error::NotARecording, format::Error::Empty]
                .iter()
                .any(|e| *what == e.to_string()))
    }
}

/// Encodes one observation for a segment record.
pub(crate) fn encode_observation(obs: &Observation) -> Vec<u8> {
    // The model's types serialise without failure; an empty payload would read back as
    // damage, never as a wrong observation.
    postcard::to_stdvec(obs).unwrap_or_default()
}

/// Decodes a segment record's payload.
pub(crate) fn decode_observation(at_ns: i64, payload: &[u8]) -> Result<Stamped, String> {
    // Keys and values come out shareable, on the reader's thread (the read-ahead's, in
    // a replay): see `KeyValue::joined`.
    postcard::from_bytes::<Observation>(payload)
        .map(|obs| Stamped {
            at: from_ns(at_ns),
            obs,
        })
        .map_err(|e| format!("undecodable observation: {e}"))
}

/// The session restored from a checkpoint's bytes written at content `format` (the
/// file's [`RecordingHeader::format_version`]), or why not.
pub(crate) fn restore(state: &crate::model::Bytes, format: u32) -> Result<Session, String> {
    Session::from_checkpoint(state, format).map_err(|e| format!("undecodable checkpoint: {e}"))
}

/// Reads every frame of a recording (all files of a set), verifying checksums and
/// decoding every observation, scrape and checkpoint: the report of `replay --check`.
pub fn check(mut player: Player, p99_threshold: f64, lag_threshold: f64) -> ReplayReport {
    let mut r = ReplayReport {
        files: player
            .paths()
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        secrets_redacted: player.header().secrets_redacted,
        ..Default::default()
    };
    for p in player.paths() {
        r.bytes += std::fs::metadata(p).map_or(0, |m| m.len());
    }
    let (counts, rebuilt) = player.frame_counts();
    r.segments = counts.0;
    r.scrapes = counts.1;
    r.checkpoints = counts.2;
    r.index_rebuilt = rebuilt;
    // Every checkpoint, not only the first: a seek later would need them.
    player.verify(true);
    let mut session = player.seek(Target::Position(0));
    let mut scan = MarkerScan::new(&session, p99_threshold, lag_threshold);
    let mut first_rev = None;
    let mut n = 0u64;
    let (mut start, mut end) = (None::<SystemTime>, None::<SystemTime>);
    // One pass: counts, span and markers.
    player.advance(&mut session, Target::End, u64::MAX, |s, st, pos| {
        scan.observe(s, st, pos);
        n += 1;
        start = Some(start.map_or(st.at, |t: SystemTime| t.min(st.at)));
        end = Some(end.map_or(st.at, |t: SystemTime| t.max(st.at)));
        if first_rev.is_none() && s.revision() > 0 {
            first_rev = Some(s.revision());
        }
    });
    r.observations = n;
    r.records = player.total();
    // The span the seeks accept and their refusals name (the frames', which starts with
    // the first checkpoint), so that every command says the same span.
    let (first, last) = player.span();
    r.start = start.map(|t| t.min(first));
    r.end = end.map(|t| t.max(last));
    // The revision seeks start from (`Player::first_revision`), so that the span printed
    // is the span a seek accepts; what the pass saw first when the index cannot say.
    r.first_revision = player.first_revision().or(first_rev);
    r.last_revision = (session.revision() > 0).then(|| session.revision());
    r.markers = player
        .complete_markers(scan.markers())
        .into_iter()
        .map(|m| player::ReportMarker {
            at: m.at,
            kind: m.kind,
            revision: m.revision,
            label: m.label,
        })
        .collect();
    r.damage = player.damage().to_vec();
    // After the markers: a bookmark line that could not be read is a note.
    r.notes = player.notes().to_vec();
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> RecordingHeader {
        RecordingHeader {
            format_version: FORMAT_VERSION,
            regscope_version: "0.1.0".into(),
            info: SessionInfo::default(),
            cluster_id: 7,
            recording_started: UNIX_EPOCH,
            secrets_redacted: true,
            concepts_fingerprint: 1,
        }
    }

    #[test]
    fn a_header_tail_is_read_when_present_and_left_unread_by_an_older_reader() {
        let mut bytes = postcard::to_stdvec(&header()).unwrap();
        // Without a tail (files written before it): the header, no offset.
        assert_eq!(read_header(&bytes).unwrap(), (header(), None, None));
        let tail = HeaderTail {
            utc_offset_seconds: -18_000,
        };
        bytes.extend(postcard::to_stdvec(&tail).unwrap());
        assert_eq!(
            read_header(&bytes).unwrap(),
            (header(), Some(tail.clone()), None)
        );
        // What a reader before the tail runs: the header alone, the rest unread.
        assert_eq!(
            postcard::from_bytes::<RecordingHeader>(&bytes).unwrap(),
            header()
        );
        // A db file's recording: the revision timeline after the tail, which a reader
        // before it leaves unread (the tail still reads).
        let timeline = RevisionTimeline {
            compacted: 10,
            first: 10,
            head: 42,
            file_time: UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        };
        bytes.extend(postcard::to_stdvec(&timeline).unwrap());
        assert_eq!(
            read_header(&bytes).unwrap(),
            (header(), Some(tail.clone()), Some(timeline))
        );
        assert_eq!(
            postcard::from_bytes::<RecordingHeader>(&bytes).unwrap(),
            header()
        );
        let (_, rest) = postcard::take_from_bytes::<RecordingHeader>(&bytes).unwrap();
        assert_eq!(postcard::from_bytes::<HeaderTail>(rest).unwrap(), tail);
    }
}
