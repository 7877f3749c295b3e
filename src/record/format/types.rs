//! What the format hands out: [`FrameInfo`] (an index entry), [`Damage`], [`Item`] (one
//! record, scrape or checkpoint, exactly as written) and the reader's [`Error`].

use std::fmt;
use std::io;

use bytes::Bytes;

use super::FrameKind;

/// Index entry of one good Segment, Scrape or Checkpoint frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    /// File offset of the frame header, bytes.
    pub offset: u64,
    /// Whole frame size (20-byte header plus payload), bytes.
    pub len: u64,
    /// Frame kind (never `Header` or `Index` in
    /// [`Reader::frames`](super::Reader::frames)).
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

/// One item read back, exactly as handed to the [`Writer`](super::Writer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// A record from [`Writer::append`](super::Writer::append).
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
    /// A scrape from [`Writer::append_scrape`](super::Writer::append_scrape).
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
    /// A checkpoint from [`Writer::checkpoint`](super::Writer::checkpoint).
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
    /// The file does not start with [`FILE_MAGIC`](super::FILE_MAGIC) (or is shorter than it).
    NotARecording,
    /// The file is empty (0 bytes).
    Empty,
    /// The file is a recording of a format version this code cannot read.
    UnsupportedVersion(u16),
    /// The Header frame at offset 10 is cut or damaged; nothing can be trusted.
    HeaderUnreadable(String),
    /// [`Reader::read_frame`](super::Reader::read_frame) was given an index past
    /// [`Reader::frames`](super::Reader::frames).
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
            Error::Empty => write!(f, "empty file (0 bytes), not a regscope recording"),
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
                "scrape body at offset {offset} cannot be rebuilt: its delta base at offset {base} is unusable (replay and snapshot apply its recorded digest when this regscope version wrote it; export has no samples for it)"
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
