//! The replay side of the console's loop: moves the player's cursor (play at a speed,
//! step, seek, markers, bookmarks) and applies what it passes to the app's session. The
//! app and the views are the same as live; only the source of observations differs.
//!
//! A replay is read-only towards the recording it is pointed at. The one write it makes
//! is a bookmark, on the user's explicit key press, into the sidecar file beside the
//! recording ([`crate::record::bookmarks`]), never into the recording itself.
//!
//! Over etcd's db file ([`crate::record::RevisionTimeline`], read from the recording's
//! header by the player) every stamp is the file's modification time, so the driver moves
//! by revisions instead of time: play goes one revision a second times the speed
//! ([`revision_at`]), the seek prompt's `start` is the file's first whole state (its
//! finished compaction) and `end` its head, and a time is refused with a message. What it
//! knows of the file reaches the views only through [`ReplayStatus::revisions`].

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::app::App;
use super::state::{ReplayStatus, Request, Speed};
use crate::model::Revision;
use crate::record::seek::SeekTo;
use crate::record::{Bookmark, Marker, Player, RevisionTimeline, Target};

/// Most observations applied between two looks at input and the frame budget.
const BUDGET: u64 = 100_000;

/// How often a playing replay moves its cursor (at most a frame's worth).
const PLAY_STEP: Duration = Duration::from_millis(50);

/// Where play last (re)started in the recording: a time, or over a db file a revision.
#[derive(Clone, Copy, Debug, PartialEq)]
enum PlayedFrom {
    Time(SystemTime),
    Revision(Revision),
}

pub(crate) struct ReplayDriver {
    player: Box<Player>,
    /// (wall clock, where in the recording) when play last (re)started, to map elapsed
    /// wall time to recording time (or revisions) at the current speed.
    anchor: Option<(Instant, PlayedFrom, Speed)>,
    /// The complete list ([`Player::complete_markers`]) once read, with the bookmarks
    /// added since, in time order.
    markers: Option<Arc<Vec<Marker>>>,
    markers_rx: Option<std::sync::mpsc::Receiver<Vec<Marker>>>,
    /// Bookmarks added in this replay, as markers: kept for the list still being read.
    added: Vec<Marker>,
    /// The marker asked for before the markers were read.
    pending_marker: Option<bool>,
    /// The marker last jumped to: its position and its index among the markers at that
    /// position (several can share one observation), so `n`/`N` step through them one by
    /// one. Meaningful while the cursor is still at that position.
    here: Option<(u64, usize)>,
    status: ReplayStatus,
}

impl ReplayDriver {
    /// Restores the recording's first checkpoint into the app (or the end of the first
    /// list when the recording starts empty: [`Player::seek_first_frame`]), paused, and
    /// starts reading the markers on a thread of their own.
    pub(crate) fn start(
        mut player: Box<Player>,
        file: String,
        at: Option<Target>,
        (p99_threshold, lag_threshold): (f64, f64),
        app: &mut App,
    ) -> ReplayDriver {
        player.set_bodies(false);
        let session = match at {
            Some(at) => player.seek(at),
            None => player.seek_first_frame(),
        };
        app.replace_session(session);
        let (start, end) = player.span();
        let (tx, rx) = std::sync::mpsc::channel();
        // The recording as named (a --keep-last set by its base: all its files, and the
        // bookmarks beside it).
        let name = player.name().to_path_buf();
        std::thread::spawn(move || {
            if let Ok(mut p) = Player::open(&name) {
                p.set_bodies(false);
                let _ = tx.send(p.markers(p99_threshold, lag_threshold));
            }
        });
        let status = ReplayStatus {
            file,
            start,
            end,
            total: player.total(),
            position: player.position(),
            speed: Speed::Times(1),
            secrets_shown: !player.header().secrets_redacted,
            damage: player.damage().first().cloned().unwrap_or_default(),
            marker: None,
            markers: None,
            revisions: player.revision_timeline(),
        };
        app.cursor.paused = true;
        // A db file keeps no times, so the Growth panel's per-second charts are empty over
        // it: its console opens on the keys.
        if status.revisions.is_some() {
            app.panel = super::app::Panel::Keys;
        }
        app.set_replay(Some(status.clone()));
        ReplayDriver {
            player,
            anchor: None,
            markers: None,
            markers_rx: Some(rx),
            added: Vec::new(),
            pending_marker: None,
            here: None,
            status,
        }
    }

    /// When the loop should call [`ReplayDriver::play`] next (`None` while paused).
    pub(crate) fn wake(&self, app: &App) -> Option<Duration> {
        if app.paused() {
            None
        } else {
            Some(PLAY_STEP)
        }
    }

    fn speed(app: &App) -> Speed {
        app.cursor
            .replay
            .as_ref()
            .map_or(Speed::Times(1), |r| r.speed)
    }

    /// Moves the cursor by the wall time elapsed at the current speed (or by a budget of
    /// observations at `max`), and pauses at the end of the recording. Over a db file the
    /// elapsed time is counted in revisions ([`revision_at`]).
    pub(crate) fn play(&mut self, app: &mut App) {
        let speed = Self::speed(app);
        let revisions = self.status.revisions;
        // Before the file's first whole state (the list under way) play starts from it.
        let here = || match revisions {
            Some(tl) => PlayedFrom::Revision(app.session.revision().max(tl.first - 1)),
            None => PlayedFrom::Time(app.session.now()),
        };
        let target = match speed {
            Speed::Max => Target::End,
            Speed::Times(k) => {
                let now = Instant::now();
                let (w0, from, s0) = *self.anchor.get_or_insert((now, here(), speed));
                if s0 != speed {
                    self.anchor = Some((now, here(), speed));
                    return;
                }
                let elapsed = now.duration_since(w0);
                match from {
                    PlayedFrom::Time(t0) => Target::Time(t0 + elapsed * k),
                    PlayedFrom::Revision(r0) => Target::Revision(revision_at(r0, elapsed, k)),
                }
            }
        };
        let resyncs = self.player.resyncs();
        let n = self.player.advance(app, target, BUDGET, |_, _, _| {});
        if self.player.resyncs() != resyncs {
            app.session_replaced();
        } else if n > 0 {
            app.after_replay_moved();
        }
        if self.player.peek().is_none() {
            app.cursor.paused = true;
            self.anchor = None;
            self.status.marker = Some(match revisions {
                Some(tl) => format!("at the file's head, r{}", tl.head),
                None => "end of the recording".into(),
            });
        }
        self.update(app);
    }

    /// Reads the markers once the thread has them.
    pub(crate) fn poll_markers(&mut self, app: &mut App) {
        if let Some(rx) = &self.markers_rx {
            if let Ok(mut m) = rx.try_recv() {
                // A bookmark added while the list was read may be in it already.
                for b in &self.added {
                    if !m.contains(b) {
                        m.push(b.clone());
                    }
                }
                m.sort_by_key(|m| m.at);
                self.markers = Some(Arc::new(m));
                self.markers_rx = None;
                if let Some(next) = self.pending_marker.take() {
                    self.jump_marker(app, next);
                }
            }
        }
        self.update(app);
    }

    fn update(&mut self, app: &mut App) {
        let mut s = self.status.clone();
        s.position = self.player.position();
        s.speed = Self::speed(app);
        s.markers = self.markers.clone();
        s.damage = match self.player.damage() {
            [] => String::new(),
            [one] => one.clone(),
            [first, rest @ ..] => {
                // The count first: a narrow timeline row cuts the end of a long line.
                format!(
                    "{} damaged stretches (replay --check lists all); first: {first}",
                    rest.len() + 1
                )
            }
        };
        self.status = s.clone();
        app.set_replay(Some(s));
    }

    fn seek(&mut self, app: &mut App, target: Target) {
        let resyncs = self.player.resyncs();
        match self.player.seek_in(&mut app.session, target) {
            Some(old) => {
                // Freeing a large session takes up to a second: not on the UI's time.
                std::thread::spawn(move || drop(old));
                app.session_replaced();
            }
            // Moved in place, through a checkpoint restored after a lost frame.
            None if self.player.resyncs() != resyncs => app.session_replaced(),
            None => app.after_replay_moved(),
        }
        self.anchor = None;
        self.update(app);
    }

    fn jump_marker(&mut self, app: &mut App, next: bool) {
        let Some(markers) = &self.markers else {
            self.pending_marker = Some(next);
            self.status.marker = Some("reading markers…".into());
            self.update(app);
            return;
        };
        let pos = self.player.position();
        let here = self.here.filter(|(p, _)| *p == pos).map(|(_, i)| i);
        let found = step_marker(markers, pos, here, next).and_then(|(p, i)| {
            let mut same = markers.iter().filter(|m| m.position == p);
            let count = same.clone().count();
            same.nth(i).map(|m| (m.clone(), i, count))
        });
        match found {
            Some((m, i, count)) => {
                let of = if count > 1 {
                    format!(" · {} of {count} here", i + 1)
                } else {
                    String::new()
                };
                // Over a db file every stamp is the file's time: the marker's revision says
                // where it is.
                let at = match self.status.revisions {
                    Some(_) => format!("r{}", m.revision),
                    None => super::text::clock(m.at, app.settings.utc_offset),
                };
                self.status.marker = Some(format!("{} at {at}{of}", m.label));
                app.cursor.paused = true;
                self.here = Some((m.position, i));
                if m.position == pos {
                    self.update(app);
                } else {
                    self.seek(app, Target::Position(m.position));
                }
            }
            None => {
                self.status.marker = Some(if next {
                    "no marker after the cursor".into()
                } else {
                    "no marker before the cursor".into()
                });
                self.update(app);
            }
        }
    }

    /// Saves bookmark `b` beside the recording and shows it on the timeline at once; when
    /// it cannot be saved (a directory not writable), the timeline's message row says so
    /// and the replay goes on.
    fn bookmark(&mut self, app: &mut App, b: Bookmark) {
        let path = crate::record::bookmarks::bookmarks_path(self.player.name());
        match crate::record::bookmarks::append(self.player.name(), &b) {
            Ok(()) => {
                let m = self.player.bookmark_marker(&b).unwrap_or_else(|| Marker {
                    position: self.player.position(),
                    at: b.at,
                    kind: crate::record::MarkerKind::Bookmark,
                    revision: b.revision,
                    label: format!("bookmark: {}", b.text),
                });
                if let Some(list) = self.markers.as_mut() {
                    let list = Arc::make_mut(list);
                    list.push(m.clone());
                    list.sort_by_key(|m| m.at);
                }
                self.added.push(m);
                self.status.marker = Some(format!("bookmark saved in {}", path.display()));
            }
            Err(e) => {
                self.status.marker = Some(format!("bookmark not saved: {e}"));
            }
        }
        self.update(app);
    }

    /// A seek over etcd's db file: to a revision the file holds, `start` (its first whole
    /// state) or `end` (its head); a time, or a revision outside the file, is said and
    /// the cursor stays.
    fn seek_revision(&mut self, app: &mut App, to: SeekTo, tl: RevisionTimeline) {
        let held = format!("the file holds revisions {} .. {}", tl.first, tl.head);
        let target = match to {
            SeekTo::Start => Ok(Target::Revision(tl.first)),
            SeekTo::End => Ok(Target::End),
            SeekTo::Revision(r) if r <= 0 => {
                Err("a revision is a positive number (etcd's first is 1)".to_string())
            }
            SeekTo::Revision(r) if r < tl.first => {
                Err(format!("revision {r} is compacted: {held}"))
            }
            SeekTo::Revision(r) if r > tl.head => {
                Err(format!("revision {r} is after the file's head: {held}"))
            }
            SeekTo::Revision(r) => Ok(Target::Revision(r)),
            SeekTo::Time(_) | SeekTo::Relative(_) => Err(format!(
                "etcd's db file keeps no times: seek to a revision (r{} .. r{}), start or end",
                tl.first, tl.head
            )),
        };
        let target = match target {
            Ok(t) => t,
            Err(why) => {
                self.status.marker = Some(why);
                self.update(app);
                return;
            }
        };
        self.status.marker = match to {
            SeekTo::Start if tl.compacted > 0 => Some(format!(
                "at the start: r{}, the file's finished compaction",
                tl.first
            )),
            SeekTo::Start => Some(format!(
                "at the start: r{}, etcd's first revision (never compacted)",
                tl.first
            )),
            SeekTo::End => Some(format!("at the file's head, r{}", tl.head)),
            _ => None,
        };
        self.seek(app, target);
        if let Some(line) = self.player.short_of(&app.session, target) {
            self.status.marker = Some(line);
            self.update(app);
        }
    }

    pub(crate) fn request(&mut self, app: &mut App, req: Request) {
        match req {
            Request::Seek(to) => {
                if let Some(tl) = self.status.revisions {
                    self.seek_revision(app, to, tl);
                    return;
                }
                let target = match to {
                    SeekTo::Relative(secs) => {
                        let now = app.session.now();
                        let d = Duration::from_secs(secs.unsigned_abs());
                        Target::Time(if secs < 0 {
                            now.checked_sub(d).unwrap_or(now)
                        } else {
                            now + d
                        })
                    }
                    SeekTo::Time(t) => Target::Time(t),
                    SeekTo::Revision(r) => Target::Revision(r),
                    // The first observation, not the last at the first time: the two
                    // differ when many share one stamp (a db file's history).
                    SeekTo::Start => Target::Position(0),
                    SeekTo::End => Target::End,
                };
                // A moment outside the recording is said, not guessed; a step past either
                // end stops there and says so.
                let (start, end) = self.player.span();
                let offset = app.settings.utc_offset;
                let clock = |t| super::text::clock(t, offset);
                let outside = match (to, target) {
                    (SeekTo::Time(_), Target::Time(t)) if !self.player.holds_time(t) => {
                        // Another day than the recording's is said with its date.
                        let day = |t| super::text::local_date(t, offset);
                        let when = if day(t) == day(start) {
                            clock(t)
                        } else {
                            format!("{} {}", day(t), clock(t))
                        };
                        Some(format!(
                            "{when} is outside the recording ({} .. {} {})",
                            clock(start),
                            clock(end),
                            app.settings.zone_label()
                        ))
                    }
                    (SeekTo::Revision(r), _) if r <= 0 => {
                        Some("a revision is a positive number".to_string())
                    }
                    (SeekTo::Revision(r), _)
                        if self.player.last_revision().is_some_and(|l| r > l)
                            || self.player.first_revision().is_some_and(|f| r < f) =>
                    {
                        Some(format!(
                            "revision {r} is outside the recording (revisions {} .. {})",
                            self.player.first_revision().unwrap_or(1),
                            self.player.last_revision().unwrap_or(0)
                        ))
                    }
                    _ => None,
                };
                if let Some(why) = outside {
                    self.status.marker = Some(why);
                    self.update(app);
                    return;
                }
                self.status.marker = match (to, target) {
                    (SeekTo::Start, _) => Some("at the start of the recording".into()),
                    (_, Target::Time(t)) if t < start => {
                        Some("at the start of the recording".into())
                    }
                    (SeekTo::End, _) => Some("at the end of the recording".into()),
                    (_, Target::Time(t)) if t > end => Some("at the end of the recording".into()),
                    _ => None,
                };
                self.seek(app, target);
                if let Some(line) = self.player.short_of(&app.session, target) {
                    self.status.marker = Some(line);
                    self.update(app);
                }
            }
            Request::Step => {
                let resyncs = self.player.resyncs();
                // One observation that shows: clock ticks alone are passed over.
                loop {
                    let pos = self.player.position();
                    let n = self
                        .player
                        .advance(app, Target::Position(pos + 1), 1, |_, _, _| {});
                    let tick = matches!(
                        self.player.peek().map(|s| &s.obs),
                        Some(crate::model::Observation::Tick)
                    );
                    if n == 0 || !tick {
                        break;
                    }
                }
                if self.player.resyncs() != resyncs {
                    app.session_replaced();
                } else {
                    app.after_replay_moved();
                }
                self.update(app);
            }
            Request::Marker(next) => self.jump_marker(app, next),
            Request::Notice(n) => {
                self.status.marker = Some(n);
                self.update(app);
            }
            Request::Bookmark(b) => self.bookmark(app, b),
            Request::StartRecording | Request::StopRecording => {}
        }
    }
}

/// The revision play over a db file has reached `elapsed` after it started at `from`, at
/// `per_second` revisions a second (the speed `n×` is `n` revisions a second): the next
/// revision at once, then one more each `1/per_second` s. Revisions with no write under
/// the prefix are steps too (the recording holds each as a progress notification).
pub(crate) fn revision_at(from: Revision, elapsed: Duration, per_second: u32) -> Revision {
    let steps = (elapsed.as_secs_f64() * f64::from(per_second)).floor();
    from.saturating_add(1)
        .saturating_add(steps.min(i64::MAX as f64) as i64)
}

/// Where `n` (`next`) or `N` goes from the cursor at `pos`: the position of a marker and
/// its index among the markers at that position (in the list's order). Markers are
/// ordered by position (the list is in time order, which a clock set back while
/// recording can make differ); several at one position are stepped through one by one:
/// `here` is the index of the one the cursor jumped to at `pos`, if it did. `n` from the
/// last of a position (or from none) goes to the first of the next position, `N` from
/// the first to the last of the previous one.
pub(crate) fn step_marker(
    markers: &[Marker],
    pos: u64,
    here: Option<usize>,
    next: bool,
) -> Option<(u64, usize)> {
    let count = |p: u64| markers.iter().filter(|m| m.position == p).count();
    match here {
        Some(i) if next && i + 1 < count(pos) => return Some((pos, i + 1)),
        Some(i) if !next && i > 0 && i <= count(pos) => return Some((pos, i - 1)),
        _ => {}
    }
    let positions = markers.iter().map(|m| m.position);
    if next {
        let p = positions.filter(|&p| p > pos).min()?;
        Some((p, 0))
    } else {
        let p = positions.filter(|&p| p < pos).max()?;
        Some((p, count(p) - 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::MarkerKind;

    fn mark(position: u64, kind: MarkerKind, label: &str) -> Marker {
        Marker {
            position,
            at: std::time::UNIX_EPOCH + Duration::from_secs(position),
            kind,
            revision: 1,
            label: label.into(),
        }
    }

    /// The labels `n` (or `N`) visits from `pos`, as the driver keeps its place.
    fn walk(markers: &[Marker], mut pos: u64, next: bool) -> Vec<String> {
        let mut here = None;
        let mut seen = Vec::new();
        while let Some((p, i)) = step_marker(markers, pos, here, next) {
            let m = markers.iter().filter(|m| m.position == p).nth(i).unwrap();
            seen.push(m.label.clone());
            pos = p;
            here = Some(i);
        }
        seen
    }

    #[test]
    fn play_over_a_db_file_steps_one_revision_a_second_times_the_speed() {
        let s = Duration::from_secs;
        assert_eq!(revision_at(10, s(0), 1), 11, "the next revision at once");
        assert_eq!(revision_at(10, Duration::from_millis(999), 1), 11);
        assert_eq!(revision_at(10, s(1), 1), 12);
        assert_eq!(revision_at(10, s(5), 1), 16);
        assert_eq!(revision_at(10, Duration::from_millis(50), 100), 16);
        assert_eq!(revision_at(10, s(2), 1000), 2011);
        assert_eq!(revision_at(i64::MAX - 1, s(1_000_000), 1000), i64::MAX);
    }

    #[test]
    fn markers_sharing_an_observation_are_each_reached_both_ways() {
        // A bookmark saved on the p99 marker's observation.
        let markers = [
            mark(10, MarkerKind::Compaction, "a"),
            mark(20, MarkerKind::Threshold, "p99"),
            mark(20, MarkerKind::Bookmark, "bookmark"),
            mark(30, MarkerKind::Gap, "z"),
        ];
        assert_eq!(walk(&markers, 0, true), ["a", "p99", "bookmark", "z"]);
        assert_eq!(walk(&markers, 40, false), ["z", "bookmark", "p99", "a"]);
        // Arrived at 20 some other way (a seek): `n` goes on to the next position, `N` back
        // to the previous.
        assert_eq!(step_marker(&markers, 20, None, true), Some((30, 0)));
        assert_eq!(step_marker(&markers, 20, None, false), Some((10, 0)));
        // Turning round inside a position.
        assert_eq!(step_marker(&markers, 20, Some(1), false), Some((20, 0)));
        assert_eq!(step_marker(&markers, 20, Some(0), true), Some((20, 1)));
        assert_eq!(step_marker(&markers, 30, Some(0), true), None);
        assert_eq!(step_marker(&[], 30, None, false), None);
    }
}
