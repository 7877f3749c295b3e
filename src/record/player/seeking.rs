//! The player's seeks: to a position, a time or a revision, from the nearest checkpoint
//! before it (restored) or in place when that is nearer, and to the first view a replay
//! opens on.

use super::*;

impl Player {
    /// Indexes into `frames` of the checkpoints a seek to `target` may start from, oldest
    /// first (the last is the one tried first).
    pub(super) fn checkpoints_before(&self, target: Target) -> Vec<usize> {
        self.frames
            .iter()
            .enumerate()
            .filter(|(_, f)| f.kind == FrameKind::Checkpoint)
            .filter(|(_, f)| match target {
                Target::Position(p) => f.position <= p,
                // A checkpoint's time is its session's clock: every observation before it
                // is stamped at or before it.
                Target::Time(t) => from_ns(f.first_ns) <= t,
                Target::Revision(r) => f.rev < r,
                Target::End => true,
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// Moves `session` — the one this player's last [`Player::seek`] returned, advanced
    /// only by [`Player::advance`] — to `target`. When the target lies ahead of the cursor
    /// and no checkpoint would get there sooner, the observations in between are applied
    /// to it in place (a step of 10 s costs milliseconds); otherwise the session is
    /// rebuilt as [`Player::seek`] does and the old one is returned, for the caller to drop
    /// where it does not hold anything up (freeing a session of 300 MB takes up to a
    /// second). Either way `session` ends up equal to what `seek(target)` returns.
    pub fn seek_in(&mut self, session: &mut Session, target: Target) -> Option<Session> {
        if self.cursor_applied == Some(session.applied()) && self.ahead(session, target) {
            let start = self.checkpoints_before(target).last().copied();
            let from = start
                .and_then(|i| self.frames.get(i))
                .map_or(0, |f| f.position);
            if self.position >= from || from - self.position <= IN_PLACE_MAX {
                self.advance(session, target, u64::MAX, |_, _, _| {});
                return None;
            }
        }
        let fresh = self.seek(target);
        Some(std::mem::replace(session, fresh))
    }

    /// Whether playing on from the cursor reaches `target` exactly where a fresh seek
    /// would: it is at or after the cursor.
    pub(super) fn ahead(&self, session: &Session, target: Target) -> bool {
        match target {
            Target::Position(p) => p >= self.position,
            // Every observation applied so far is stamped at or before the clock, so none
            // of them would have stopped a seek to a later time.
            Target::Time(t) => t >= session.now(),
            // A seek stops where the revision first reaches `r`; every frame since the
            // checkpoint it would start from must have stayed below it.
            Target::Revision(r) => {
                session.revision() < r && {
                    let from = self.checkpoints_before(target).last().copied().unwrap_or(0);
                    self.frames
                        .get(from..self.next_frame.min(self.frames.len()))
                        .is_some_and(|fs| fs.iter().all(|f| f.rev <= r))
                }
            }
            Target::End => true,
        }
    }

    /// Rebuilds the session at `target`: restores the last checkpoint before it and
    /// applies the observations after it. A checkpoint that cannot be read is passed over
    /// for the one before (recorded as damage); with none left the session starts empty.
    pub fn seek(&mut self, target: Target) -> Session {
        let mut candidates = self.checkpoints_before(target);
        if candidates.is_empty() {
            candidates.push(0);
        }
        let mut session = None;
        while let Some(i) = candidates.pop() {
            let Some(f) = self.frames.get(i).copied() else {
                continue;
            };
            if f.kind != FrameKind::Checkpoint {
                continue;
            }
            // The segments after the checkpoint decode while it is restored.
            self.read_ahead_from(i + 1);
            match self.restore_frame(&f) {
                Ok(s) => {
                    session = Some(s);
                    self.next_frame = i + 1;
                    self.position = f.position;
                    break;
                }
                Err(e) => {
                    let line = self.frame_damage(&f, e);
                    self.push_damage(line);
                }
            }
        }
        let mut session = session.unwrap_or_else(|| {
            self.read_ahead_from(0);
            self.next_frame = 0;
            self.position = 0;
            Session::new(self.header.info.clone())
        });
        self.pending.clear();
        self.tail_records = 0;
        self.lead_records = 0;
        self.next_digest = None;
        self.lost = false;
        self.resync = None;
        self.advance(&mut session, target, u64::MAX, |_, _, _| {});
        session
    }

    /// The session a replay opens on: the first checkpoint, or, when nothing was held then
    /// or a list was under way (a recording started before etcd was listed: an empty or
    /// half-filled screen), just after that list completed, when it completes within
    /// [`FIRST_VIEW_SCAN`] observations.
    pub fn seek_first_frame(&mut self) -> Session {
        let mut session = self.seek(Target::Position(0));
        if session.replica.live_keys() > 0 && session.replica.listing().is_none() {
            return session;
        }
        let mut looked = 0u64;
        while looked < FIRST_VIEW_SCAN {
            let Some(next) = self.peek() else { break };
            let done = matches!(next.obs, Observation::ListDone { .. });
            looked += self
                .advance(&mut session, Target::End, 1, |_, _, _| {})
                .max(1);
            if done {
                // The source says it watches soon after its list (`record` may write a
                // scrape or two in between): that too, so that the header does not open
                // on "listing"; nothing else.
                for _ in 0..FIRST_VIEW_AFTER_LIST {
                    let Some(next) = self.peek() else { break };
                    let conn = matches!(next.obs, Observation::Conn(_));
                    if !conn && !matches!(next.obs, Observation::Scrape { .. }) {
                        break;
                    }
                    self.advance(&mut session, Target::End, 1, |_, _, _| {});
                    if conn {
                        break;
                    }
                }
                return session;
            }
        }
        // No list near the start: the start itself.
        self.seek(Target::Position(0))
    }
}
