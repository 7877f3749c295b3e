//! The player's markers: the whole recording scanned ([`Player::markers`]), and the one
//! list every caller shows ([`Player::complete_markers`]): the scanned markers with what
//! damaged frames lost and the user's bookmarks (read from the sidecar beside the
//! recording, see [`super::super::bookmarks`]), in time order.

use super::super::bookmarks::{self, Bookmark};
use super::super::markers::MarkerKind;
use super::super::{time_ns, RECORD_OBSERVATION};
use super::*;

impl Player {
    /// The recording as named when it was opened: a file, or a `--keep-last` set's base.
    /// Its bookmarks sit beside it ([`bookmarks::bookmarks_path`]).
    pub fn name(&self) -> &Path {
        &self.name
    }

    /// Reads the whole recording once into a fresh session (from the first checkpoint)
    /// and collects the markers: compactions, relists and gaps, resets, connection lost
    /// and restored, 410 Gone, failed scrapes, etcd p99 latency over `p99_threshold`
    /// seconds or informer lag over `lag_threshold` seconds (each crossing upwards),
    /// damaged frames and bookmarks ([`Player::complete_markers`]). Leaves the cursor at
    /// the end.
    pub fn markers(&mut self, p99_threshold: f64, lag_threshold: f64) -> Vec<Marker> {
        let mut session = self.seek(Target::Position(0));
        let mut scan = MarkerScan::new(&session, p99_threshold, lag_threshold);
        self.advance(&mut session, Target::End, u64::MAX, |s, st, pos| {
            scan.observe(s, st, pos)
        });
        self.complete_markers(scan.markers())
    }

    /// The complete list of markers from those a [`MarkerScan`] found over the recording
    /// (`scanned`): with the frames lost while playing so far, at their places (so that
    /// jumping from marker to marker stops at damage too), and the bookmarks of the
    /// sidecar file, sorted by time (stably: markers of one moment stay in recorded
    /// order). `replay --check`, the console's timeline and `export` all take their list
    /// from here.
    ///
    /// A bookmark line that cannot be read, or a bookmark outside the recording's span,
    /// is skipped and added to [`Player::notes`] (never to its damage: the recording is
    /// whole).
    pub fn complete_markers(&mut self, mut scanned: Vec<Marker>) -> Vec<Marker> {
        scanned.extend(self.lost_marks.iter().cloned());
        let (marks, warnings) = self.bookmark_markers();
        scanned.extend(marks);
        for w in warnings {
            if !self.notes.contains(&w) {
                self.notes.push(w);
            }
        }
        scanned.sort_by_key(|m| m.at);
        scanned
    }

    /// The bookmarks of the sidecar as markers, and a warning for each line or bookmark
    /// skipped.
    fn bookmark_markers(&mut self) -> (Vec<Marker>, Vec<String>) {
        let (marks, mut warnings) = bookmarks::load(&self.name);
        let mut out = Vec::new();
        for b in marks {
            match self.bookmark_marker(&b) {
                Some(m) => out.push(m),
                None => {
                    let (start, end) = self.span();
                    warnings.push(format!(
                        "{}: bookmark at {} ({:?}) is outside the recording ({} .. {}), skipped",
                        bookmarks::bookmarks_path(&self.name).display(),
                        humantime::format_rfc3339_millis(b.at),
                        b.text,
                        humantime::format_rfc3339_millis(start),
                        humantime::format_rfc3339_millis(end),
                    ));
                }
            }
        }
        (out, warnings)
    }

    /// Bookmark `b` as a marker (kind [`MarkerKind::Bookmark`], label `bookmark: TEXT`)
    /// at the position just after the first observation stamped at or after its time
    /// ([`Player::position_at_or_after`]); `None` when its time is outside the recording
    /// (before its first millisecond or after its last stamp: a `--keep-last` set whose
    /// older files were deleted since).
    ///
    /// The marker keeps the bookmark's revision (as the user saw it) when it lies within
    /// the revisions of the segment holding its time; one outside (a hand-edited line, a
    /// revision beyond the recording's last) is replaced by the revision the index
    /// stamps on the observation at the marker's position, which costs nothing more than
    /// finding the position.
    pub fn bookmark_marker(&mut self, b: &Bookmark) -> Option<Marker> {
        let (start, end) = self.span();
        let start_ms = Bookmark::new(start, 0, "").at;
        if b.at < start_ms || b.at > end {
            return None;
        }
        let found = self.locate(b.at);
        let revision = match found.span {
            Some((first, last)) if b.revision < first || b.revision > last => found.revision,
            _ => b.revision,
        };
        Some(Marker {
            position: found.position,
            at: b.at,
            kind: MarkerKind::Bookmark,
            revision,
            label: format!("bookmark: {}", b.text),
        })
    }

    /// The position just after the first observation stamped at or after `t` (the
    /// recording's end when none is), found from the index: only the segment holding it
    /// is read. A segment that cannot be read gives its start, where its damage marker is.
    /// The cursor does not move.
    pub fn position_at_or_after(&mut self, t: SystemTime) -> u64 {
        self.locate(t).position
    }

    /// [`Player::position_at_or_after`], with the revision the index stamps there.
    fn locate(&mut self, t: SystemTime) -> Located {
        let t = time_ns(t);
        let frames = self.frames.clone();
        for (i, f) in frames.iter().copied().enumerate() {
            if f.kind == FrameKind::Checkpoint || f.last_ns < t {
                continue;
            }
            // From the revision before the segment's first record (the frame before it
            // ended there) to the one after its last.
            let before = frames[..i]
                .iter()
                .rev()
                .find(|p| p.rev > 0)
                .map_or(f.first_rev, |p| p.rev.min(f.first_rev));
            let at = |position, revision| Located {
                position,
                revision,
                span: Some((before, f.rev)).filter(|(a, b)| *a > 0 && a <= b),
            };
            if f.kind == FrameKind::Scrape {
                return at(f.position + f.records, f.rev);
            }
            let Ok(items) = self.readers[f.file].read_frame(f.frame) else {
                return at(f.position, f.first_rev);
            };
            // (stamp, revision) of each observation: the highest revision the stream
            // had seen, that observation included.
            let stamps: Vec<(i64, i64)> = items
                .iter()
                .filter_map(|it| match it {
                    Item::Record {
                        time_ns,
                        revision,
                        kind: RECORD_OBSERVATION,
                        ..
                    } => Some((*time_ns, *revision)),
                    _ => None,
                })
                .collect();
            // Records that are no observation count with the segment's last one.
            match stamps.iter().position(|(ns, _)| *ns >= t) {
                Some(k) if k + 1 == stamps.len() => return at(f.position + f.records, stamps[k].1),
                Some(k) => return at(f.position + k as u64 + 1, stamps[k].1),
                None => {}
            }
        }
        Located {
            position: self.total,
            revision: self.last_revision().unwrap_or(0),
            span: None,
        }
    }
}

/// Where a moment falls in the recording ([`Player::locate`]).
struct Located {
    /// Just after the first observation stamped at or after the moment.
    position: u64,
    /// The highest revision the stream had seen there.
    revision: Revision,
    /// The revisions of the segment holding it (from before its first record to after
    /// its last), when known.
    span: Option<(Revision, Revision)>,
}
