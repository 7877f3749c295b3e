//! Decoding a replay's segments ahead of its cursor, on a thread of their own.
//!
//! Replaying is two jobs of about the same size: reading the observations back
//! (decompressing a segment, decoding each observation and scrape digest) and applying
//! them to the session. Done one after the other on one thread, a 1-hour recording of
//! 1,000,000 events replayed at about 600,000 events/s (`cargo bench --bench record`);
//! with the decoding done here, a few segments ahead, the session's thread only applies.
//! The writer of each PUT is found here too, as its value is decoded, and handed over
//! as a number ([`crate::store::WriterNames`]): reading managedFields was a fifth of the
//! session's thread's time.
//!
//! The player asks for the segments in the order it will read them and takes each back
//! in that order; what comes back is exactly what decoding the frame on the player's own
//! thread gives ([`decode_segment_frame`] either way), so a replay reaches the same
//! session with or without this thread. A seek resets the queue: requests made before it
//! are skipped by the thread, and their answers dropped.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

use super::format::{Error, Item, SegmentReader};
use super::{decode_observation, RECORD_OBSERVATION, RECORD_SCRAPE_DIGEST};
use crate::model::{Observation, Stamped};
use crate::store::metrics::ScrapeDigest;
use crate::store::Discarded;
use crate::store::{FoundWriters, WriterNames};

/// Segments decoded ahead of the cursor at most. A segment of the demo holds about
/// 1,300 observations (1–2 MB decoded), so the queue holds a few MB.
const WINDOW: usize = 4;

/// One item of a segment as the player uses it.
pub(super) enum Decoded {
    /// An observation record, with the writers of its events found here (off the
    /// session's thread; see [`FoundWriters`]).
    Observation(Stamped, FoundWriters),
    /// An observation record that does not decode: why.
    Undecodable(String),
    /// A scrape digest record (target, body length, digest), or `None` when it does
    /// not decode. Only when the player uses digests.
    Digest(Option<(u8, u64, Arc<ScrapeDigest>)>),
}

/// A segment frame read, checked and decoded, or why not.
pub(super) type DecodedFrame = Result<Vec<Decoded>, Error>;

/// Reads segment `frame` of `reader` and decodes its records; digests are decoded only
/// with `use_digests` (else passed over, as records of kinds the player does not use).
/// Writers found are numbered in `names`.
pub(super) fn decode_segment_frame(
    reader: &SegmentReader,
    frame: usize,
    use_digests: bool,
    names: &WriterNames,
) -> DecodedFrame {
    let items = reader.read_segment(frame)?;
    let mut out = Vec::with_capacity(items.len());
    let mut names = names.lock();
    for it in items {
        let Item::Record {
            time_ns,
            kind,
            payload,
            ..
        } = it
        else {
            continue;
        };
        match kind {
            RECORD_OBSERVATION => out.push(match decode_observation(time_ns, &payload) {
                Ok(st) => {
                    let found = match &st.obs {
                        Observation::Events { events, .. } => FoundWriters::of(events, &mut names),
                        _ => FoundWriters::None,
                    };
                    Decoded::Observation(st, found)
                }
                Err(e) => Decoded::Undecodable(e),
            }),
            RECORD_SCRAPE_DIGEST if use_digests => out.push(Decoded::Digest(
                ScrapeDigest::from_record(&payload)
                    .ok()
                    .map(|(t, n, d)| (t, n, Arc::new(d))),
            )),
            _ => {}
        }
    }
    Ok(out)
}

/// Segment `frame` of file `file` of a set, decoded (see [`decode_segment_frame`]).
fn decode_in(
    readers: &[SegmentReader],
    file: usize,
    frame: usize,
    use_digests: bool,
    names: &WriterNames,
) -> DecodedFrame {
    match readers.get(file) {
        Some(r) => decode_segment_frame(r, frame, use_digests, names),
        None => Err(Error::NoSuchFrame(frame)),
    }
}

/// What the thread is asked to do.
enum Request {
    /// Decode: (generation, the player's frame index, file, frame of that file).
    Decode(u64, usize, usize, usize),
    /// Drop observations the player has applied and what the session let go of (see
    /// [`ReadAhead::recycle`]).
    Drop(Vec<Stamped>, Discarded),
}

/// An answer: (generation, the player's frame index, the frame).
type Answer = (u64, usize, DecodedFrame);

/// The queue of segments asked for and the thread that decodes them. See the module
/// docs.
pub(super) struct ReadAhead {
    readers: Vec<SegmentReader>,
    use_digests: bool,
    /// The writers found, numbered for as long as the player lives (seeks included).
    names: Arc<WriterNames>,
    worker: Option<(Sender<Request>, Receiver<Answer>)>,
    /// Requests of older generations are stale.
    generation: Arc<AtomicU64>,
    /// Frame indices asked for in this generation and not taken yet, in order.
    asked: VecDeque<usize>,
    /// The worker thread could not be started: decode on the caller's thread.
    inline: bool,
    /// The last frame taken was not decoded yet: the thread is behind the player.
    behind: bool,
}

impl ReadAhead {
    /// For the files of a set (one reader each, in order). The thread starts on the
    /// first request.
    pub(super) fn new(readers: Vec<SegmentReader>, use_digests: bool) -> ReadAhead {
        ReadAhead {
            readers,
            use_digests,
            names: Arc::default(),
            worker: None,
            generation: Arc::new(AtomicU64::new(0)),
            asked: VecDeque::new(),
            inline: false,
            behind: false,
        }
    }

    /// Off: nothing is asked for any more, every frame decodes on the caller's thread.
    pub(super) fn set_enabled(&mut self, on: bool) {
        self.reset();
        self.inline = !on;
        if !on {
            self.worker = None;
        }
    }

    /// Forgets every request: the cursor moved elsewhere.
    pub(super) fn reset(&mut self) {
        if !self.asked.is_empty() {
            self.generation.fetch_add(1, Ordering::Relaxed);
            self.asked.clear();
        }
    }

    /// Whether `index` is the next frame asked for (or nothing is asked yet).
    pub(super) fn expects(&self, index: usize) -> bool {
        self.asked.front().is_none_or(|&i| i == index)
    }

    /// Whether another request fits in the window.
    pub(super) fn has_room(&self) -> bool {
        !self.inline && self.asked.len() < WINDOW
    }

    /// Asks for segment `frame` of file `file`, the player's frame `index`.
    pub(super) fn request(&mut self, index: usize, file: usize, frame: usize) {
        if self.worker.is_none() && !self.start() {
            return;
        }
        let Some((tx, _)) = &self.worker else { return };
        let gen = self.generation.load(Ordering::Relaxed);
        if tx.send(Request::Decode(gen, index, file, frame)).is_ok() {
            self.asked.push_back(index);
        } else {
            self.worker = None;
            self.inline = true;
        }
    }

    /// The decoded frame `index` when it was asked for (waiting for the thread to finish
    /// it), else `None`: the caller decodes it itself.
    pub(super) fn take(&mut self, index: usize) -> Option<DecodedFrame> {
        if self.asked.front() != Some(&index) {
            return None;
        }
        self.asked.pop_front();
        let gen = self.generation.load(Ordering::Relaxed);
        let (_, rx) = self.worker.as_ref()?;
        self.behind = false;
        loop {
            let answer = match rx.try_recv() {
                Err(std::sync::mpsc::TryRecvError::Empty) => {
                    self.behind = true;
                    rx.recv()
                }
                got => got.map_err(|_| std::sync::mpsc::RecvError),
            };
            match answer {
                Ok((g, i, frame)) if g == gen && i == index => return Some(frame),
                Ok(_) => continue,
                Err(_) => {
                    self.worker = None;
                    self.inline = true;
                    self.asked.clear();
                    return None;
                }
            }
        }
    }

    /// Hands observations the player has applied to the thread, to be dropped there.
    ///
    /// Their keys, values and event lists were allocated on that thread, and most die
    /// when the observation does (the key of a key already held, the event list): freed
    /// there, each is a thread-local free instead of a cross-thread one, and the
    /// session's thread does not spend its time freeing (about a tenth of a replay's
    /// time on the session's thread, `cargo bench --bench record -- replay`). Without
    /// the thread they are dropped here.
    ///
    /// The same for what the session let go of while applying them (the event log's
    /// copies, dropped history, replaced scrape digests: see
    /// [`crate::store::Session::defer_frees`]).
    ///
    /// When the thread is the one behind (the player last waited for a frame), they are
    /// dropped here instead: the player's thread has the time then, the thread has not
    /// (a replay as fast as possible is bound by whichever of the two is slower, and
    /// which one that is changes with the recording and the machine's load).
    pub(super) fn recycle(&mut self, spent: Vec<Stamped>, discarded: Discarded) {
        if self.behind {
            drop((spent, discarded));
            return;
        }
        if let Some((tx, _)) = &self.worker {
            // A send fails only when the thread is gone; the observations then come back
            // inside the error and are dropped here.
            let _ = tx.send(Request::Drop(spent, discarded));
        }
    }

    /// Decodes segment `frame` of file `file` on this thread.
    pub(super) fn decode_here(&self, file: usize, frame: usize) -> DecodedFrame {
        decode_in(&self.readers, file, frame, self.use_digests, &self.names)
    }

    /// The table the writers handed out are numbered in.
    pub(super) fn names(&self) -> &WriterNames {
        &self.names
    }

    fn start(&mut self) -> bool {
        let (req_tx, req_rx) = channel::<Request>();
        let (res_tx, res_rx) = channel::<Answer>();
        let readers = self.readers.clone();
        let use_digests = self.use_digests;
        let names = self.names.clone();
        let generation = self.generation.clone();
        let spawned = std::thread::Builder::new()
            .name("replay-readahead".into())
            .spawn(move || {
                // Ends when the player (the request sender) is gone.
                for req in req_rx {
                    let (gen, index, file, frame) = match req {
                        Request::Decode(g, i, fi, fr) => (g, i, fi, fr),
                        Request::Drop(spent, discarded) => {
                            drop(spent);
                            drop(discarded);
                            continue;
                        }
                    };
                    if gen != generation.load(Ordering::Relaxed) {
                        continue;
                    }
                    let decoded = decode_in(&readers, file, frame, use_digests, &names);
                    if res_tx.send((gen, index, decoded)).is_err() {
                        break;
                    }
                }
            });
        match spawned {
            Ok(_) => {
                self.worker = Some((req_tx, res_rx));
                true
            }
            Err(_) => {
                self.inline = true;
                false
            }
        }
    }
}
