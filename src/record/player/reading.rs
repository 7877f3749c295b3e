//! The player's reading side: filling the queue of observations frame by frame, on the
//! read-ahead thread when it runs (segments decoded, writers found, scrape digests read),
//! and counting or naming what could not be read.

use super::*;

impl Player {
    /// Reads frames until an observation is pending; `false` at the end.
    pub(super) fn fill(&mut self) -> bool {
        while self.pending.is_empty() {
            let index = self.next_frame;
            let Some(f) = self.frames.get(index).copied() else {
                self.position += std::mem::take(&mut self.lead_records);
                return false;
            };
            self.next_frame += 1;
            match f.kind {
                // A checkpoint holds the state the observations before it built: played
                // through, it is passed over, unless some of those were lost.
                FrameKind::Checkpoint => {
                    if self.lost || f.gap_before {
                        self.resync = Some(f);
                    }
                }
                FrameKind::Segment => self.fill_segment(index, &f),
                _ => self.fill_scrape(&f),
            }
        }
        true
    }

    /// Asks the read-ahead for the segments after the cursor, up to its window.
    pub(super) fn read_ahead(&mut self) {
        while self.readahead.has_room() {
            let Some(f) = self.frames.get(self.ahead_next) else {
                break;
            };
            if f.kind == FrameKind::Segment {
                self.readahead.request(self.ahead_next, f.file, f.frame);
            }
            self.ahead_next += 1;
        }
    }

    /// Hands the applied observations to the read-ahead thread to be dropped.
    pub(super) fn recycle(&mut self, session: &mut Session) {
        let mut discarded = session.take_discarded();
        discarded.digests.append(&mut self.spent_digests);
        if !self.spent.is_empty() || !discarded.is_empty() {
            let spent = std::mem::replace(&mut self.spent, Vec::with_capacity(SPENT_BATCH));
            self.readahead.recycle(spent, discarded);
        }
    }

    /// Restarts the read-ahead at frame `index` (the cursor moved there).
    pub(super) fn read_ahead_from(&mut self, index: usize) {
        self.readahead.reset();
        self.ahead_next = index;
        self.read_ahead();
    }

    /// Queues the observations of segment frame `f` (the player's frame `index`),
    /// decoded ahead when it was asked for, else here.
    pub(super) fn fill_segment(&mut self, index: usize, f: &FrameRef) {
        if !self.readahead.expects(index) || self.ahead_next <= index {
            self.read_ahead_from(index);
        }
        let decoded = self
            .readahead
            .take(index)
            .unwrap_or_else(|| self.readahead.decode_here(f.file, f.frame));
        self.read_ahead();
        let Some(items) = self.read_or_lose(f, decoded) else {
            return;
        };
        let mut got = 0u64;
        for it in items {
            match it {
                Decoded::Observation(st, found) => {
                    self.pending.push_back((st, None, found));
                    got += 1;
                }
                Decoded::Undecodable(e) => self.damage.push(e),
                Decoded::Digest(d) => self.next_digest = d,
            }
        }
        // Records that did not decode still count, so positions stay those of the
        // file's index.
        self.count_tail(f.records.saturating_sub(got), got);
    }

    /// Counts the `skipped` records of the frame just queued (`got` observations): with
    /// its last observation, or now when it queued none.
    pub(super) fn count_tail(&mut self, skipped: u64, got: u64) {
        if got == 0 {
            self.lead_records += skipped;
        } else {
            self.tail_records = skipped;
        }
    }

    /// What frame `f` read as, or `None` with its loss recorded and its records passed.
    pub(super) fn read_or_lose<T>(
        &mut self,
        f: &FrameRef,
        read: Result<T, super::super::format::Error>,
    ) -> Option<T> {
        match read {
            Ok(items) => Some(items),
            Err(e) => {
                let line = self.frame_damage(f, e);
                self.push_damage(line);
                if !self.lost_marks.iter().any(|m| m.position == f.position) {
                    self.lost_marks.push(Marker {
                        position: f.position,
                        at: from_ns(f.first_ns),
                        kind: super::super::markers::MarkerKind::Damage,
                        revision: f.first_rev.max(0),
                        label: format!(
                            "damaged {}: {} observation(s) lost",
                            if f.kind == FrameKind::Scrape {
                                "scrape"
                            } else {
                                "segment"
                            },
                            f.records
                        ),
                    });
                }
                self.lead_records += f.records;
                self.lost = true;
                None
            }
        }
    }

    /// Queues the scrape of frame `f`.
    pub(super) fn fill_scrape(&mut self, f: &FrameRef) {
        // A scrape whose digest was just read needs no body unless the caller wants
        // bodies: its frame is verified, its body not decoded. `body_len` is then the
        // length the body has.
        let head = (!self.bodies)
            .then(|| self.next_digest.as_ref().map(|(t, n, _)| (*t, *n)))
            .flatten()
            .and_then(
                |(t, n)| match self.readers[f.file].read_scrape_head(f.frame) {
                    Ok((item @ Item::Scrape { target, .. }, len)) if target == t && len == n => {
                        Some((vec![item], len))
                    }
                    _ => None,
                },
            );
        let (read, body_len) = match head {
            Some((items, len)) => (Ok(items), Some(len)),
            None => (self.readers[f.file].read_frame(f.frame), None),
        };
        let Some(items) = self.read_or_lose(f, read) else {
            return;
        };
        let mut got = 0u64;
        for it in items {
            if let Item::Scrape {
                time_ns,
                target,
                source,
                body,
                ..
            } = it
            {
                let len = body_len.unwrap_or(body.len() as u64);
                let digest = self
                    .next_digest
                    .take()
                    .filter(|(t, n, _)| *t == target && *n == len)
                    .map(|(_, _, d)| d);
                // A target this regscope does not know (a newer writer's) is left out.
                let Some(target) = ScrapeTarget::from_index(target) else {
                    continue;
                };
                self.pending.push_back((
                    Stamped {
                        at: from_ns(time_ns),
                        obs: Observation::Scrape {
                            target,
                            outcome: ScrapeOutcome::Body { source, body },
                        },
                    },
                    digest,
                    FoundWriters::None,
                ));
                got += 1;
            }
        }
        self.count_tail(f.records.saturating_sub(got), got);
    }
}
