//! The metric series: every scrape of the apiserver's and etcd's `/metrics`, parsed,
//! mapped onto concepts ([`crate::metrics::concepts`]) and kept as ring buffers.
//!
//! In: [`Observation::Scrape`] (raw bodies or failures). Out: per target, the newest mapped
//! scrape, every series' points (scrape time, value) for at most `retention` scrapes, and the
//! target's health (last good scrape, "stale since", skipped lines). Nothing is derived
//! here: rates and quantiles are computed on read, above the store (`derive::apiserver`).

use std::collections::VecDeque;
use std::time::SystemTime;

use crate::metrics::concepts::{self, Concept, Mapped, SeriesKey, Value};
use crate::metrics::exposition;
use crate::metrics::quantile::{increase_quantile, Quantile};
use crate::model::{humantime_serde_compat, Observation, ScrapeOutcome, ScrapeTarget, Stamped};

/// Scrapes kept per target by default: one hour at the default 5 s interval.
pub const DEFAULT_RETENTION: usize = 720;

use serde::{Deserialize, Serialize};

/// A point with the wall clock of its scrape.
pub type TimedPoint<'a> = (&'a Point, SystemTime);

/// One point of a series: the scrape's sequence number and the value.
///
/// Histogram series keep their buckets only in the newest [`RAW_HISTOGRAM_POINTS`] points
/// (what rates and window quantiles need); older points keep the count as a scalar and the
/// p99 of the interval they closed, for the sparkline. This keeps an hour of a histogram
/// series at the size of an hour of a gauge.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Point {
    pub seq: u32,
    pub value: Value,
    /// Histograms: p99 in seconds over the interval from the previous scrape to this one,
    /// for the sparkline (a rank in `+Inf` as the last finite bound); NaN for the first
    /// point, after a gap, without observations, and for scalars. `f32`: points are many.
    pub p99: f32,
}

/// Histogram points that keep their buckets.
pub const RAW_HISTOGRAM_POINTS: usize = 2;

/// Health of one scrape target (apiserver or etcd).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetStatus {
    /// A source is configured for this target (URL, kubeconfig, etcd endpoint or files).
    pub configured: bool,
    /// Where scrapes come from: a URL or a file path ("" when not configured).
    pub source: String,
    /// The server version read from the last good scrape (`kubernetes_build_info`
    /// `git_version`, or `etcd_server_version`).
    pub version: Option<String>,
    /// Scrapes that produced samples.
    pub good_scrapes: u64,
    /// Wall clock of the last scrape that produced samples.
    #[serde(with = "humantime_serde_compat::opt")]
    pub last_good: Option<SystemTime>,
    /// Set while the newest attempt failed or returned nothing readable: the time of the
    /// first failure since the last good scrape. Panels show "stale since …".
    #[serde(with = "humantime_serde_compat::opt")]
    pub stale_since: Option<SystemTime>,
    /// The newest error, one line (e.g. "timed out after 5s", "body is HTML, not metrics").
    pub last_error: Option<String>,
    /// Lines of the newest body that could not be parsed (never dropped silently).
    pub skipped_lines: usize,
    /// The first skipped line with its number and reason, for the status line.
    pub first_skipped: Option<String>,
}

/// Everything known about one scrape target.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct TargetSeries {
    pub status: TargetStatus,
    /// Wall clock of each good scrape still held, oldest first; `times[i]` has sequence
    /// number `first_seq + i`.
    times: VecDeque<SystemTime>,
    first_seq: u32,
    /// The newest good scrape, mapped.
    latest: Option<std::sync::Arc<Mapped>>,
    series: concepts::SeriesMap<VecDeque<Point>>,
}

impl TargetSeries {
    /// The newest good scrape.
    pub fn latest(&self) -> Option<&Mapped> {
        self.latest.as_deref()
    }

    /// Time of the scrape with sequence number `seq`, while it is held.
    pub fn time_of(&self, seq: u32) -> Option<SystemTime> {
        let i = seq.checked_sub(self.first_seq)?;
        self.times.get(usize::try_from(i).ok()?).copied()
    }

    /// Sequence number of the newest good scrape.
    pub fn newest_seq(&self) -> Option<u32> {
        (!self.times.is_empty()).then(|| self.first_seq + self.times.len() as u32 - 1)
    }

    /// Points of one series, oldest first.
    pub fn points(&self, key: &SeriesKey) -> Option<&VecDeque<Point>> {
        self.series.get(key)
    }

    /// Every series held.
    pub fn series(&self) -> impl Iterator<Item = (&SeriesKey, &VecDeque<Point>)> {
        self.series.iter()
    }

    /// The newest two points of a series when they come from the two newest scrapes
    /// (`prev` is `None` when the series is new or only one scrape exists).
    pub fn last_two(&self, key: &SeriesKey) -> Option<(Option<TimedPoint<'_>>, TimedPoint<'_>)> {
        let pts = self.series.get(key)?;
        let cur = pts.back()?;
        if Some(cur.seq) != self.newest_seq() {
            return None;
        }
        let cur_t = self.time_of(cur.seq)?;
        let prev = pts
            .len()
            .checked_sub(2)
            .and_then(|i| pts.get(i))
            .filter(|p| p.seq + 1 == cur.seq)
            .and_then(|p| Some((p, self.time_of(p.seq)?)));
        Some((prev, (cur, cur_t)))
    }

    /// Bytes held by the series, estimated (keys, points and histogram buckets), for the
    /// memory-per-series-hour figure.
    pub fn approx_bytes(&self) -> usize {
        let mut n = self.times.len() * std::mem::size_of::<SystemTime>();
        for (k, pts) in &self.series {
            n += std::mem::size_of::<SeriesKey>() + k.group.len() + k.resource.len() + k.op.len();
            n += pts.capacity() * std::mem::size_of::<Point>();
            for p in pts {
                if let Value::Histogram(h) = &p.value {
                    n += std::mem::size_of::<crate::metrics::concepts::Hist>()
                        + h.cumulative.len() * 8;
                }
            }
        }
        n
    }

    /// Number of series held.
    pub fn series_count(&self) -> usize {
        self.series.len()
    }
}

/// The metric store: one [`TargetSeries`] per target.
#[derive(Debug, Serialize, Deserialize)]
pub struct MetricStore {
    apiserver: TargetSeries,
    etcd: TargetSeries,
    retention: usize,
    /// kube-controller-manager's scrapes (checkpoints from format 9).
    #[serde(
        default,
        deserialize_with = "super::shared_bytes::since_format::<9, _, _>"
    )]
    controller_manager: TargetSeries,
    /// kube-scheduler's scrapes (checkpoints from format 9).
    #[serde(
        default,
        deserialize_with = "super::shared_bytes::since_format::<9, _, _>"
    )]
    scheduler: TargetSeries,
}

impl Default for MetricStore {
    fn default() -> Self {
        Self::new(DEFAULT_RETENTION)
    }
}

impl MetricStore {
    /// A store keeping at most `retention` good scrapes per target (at least 2, so rates
    /// can be computed).
    pub fn new(retention: usize) -> Self {
        Self {
            apiserver: TargetSeries::default(),
            etcd: TargetSeries::default(),
            retention: retention.max(2),
            controller_manager: TargetSeries::default(),
            scheduler: TargetSeries::default(),
        }
    }

    /// Whether any target is configured or has been scraped.
    pub fn any_configured(&self) -> bool {
        ScrapeTarget::ALL
            .iter()
            .any(|t| self.target(*t).status.configured)
    }

    pub fn target(&self, t: ScrapeTarget) -> &TargetSeries {
        match t {
            ScrapeTarget::Apiserver => &self.apiserver,
            ScrapeTarget::Etcd => &self.etcd,
            ScrapeTarget::ControllerManager => &self.controller_manager,
            ScrapeTarget::Scheduler => &self.scheduler,
        }
    }

    fn target_mut(&mut self, t: ScrapeTarget) -> &mut TargetSeries {
        match t {
            ScrapeTarget::Apiserver => &mut self.apiserver,
            ScrapeTarget::Etcd => &mut self.etcd,
            ScrapeTarget::ControllerManager => &mut self.controller_manager,
            ScrapeTarget::Scheduler => &mut self.scheduler,
        }
    }

    /// Marks a target as configured (a source exists) before its first scrape arrives, so
    /// panels say "waiting for the first scrape" rather than "not configured".
    pub fn set_configured(&mut self, t: ScrapeTarget, source: &str) {
        let s = &mut self.target_mut(t).status;
        s.configured = true;
        s.source = source.to_string();
    }

    /// etcd's compacted revision from the newest good etcd scrape
    /// (`etcd_debugging_mvcc_compact_revision`; `None` while etcd reports -1, before the
    /// first compaction).
    pub fn etcd_compact_revision(&self) -> Option<crate::model::Revision> {
        let t = concepts::table();
        let key = SeriesKey {
            concept: t.idx(Concept::EtcdCompactRevision),
            group: Default::default(),
            resource: Default::default(),
            op: Default::default(),
        };
        match self.etcd.latest()?.get(&key)? {
            Value::Scalar(v) if *v > 0.0 => Some(*v as crate::model::Revision),
            _ => None,
        }
    }

    /// Applies one observation; anything but a scrape is ignored. Returns true when
    /// something changed.
    pub fn apply(&mut self, st: &Stamped) -> bool {
        self.apply_digested(st, None).0
    }

    /// As [`MetricStore::apply`], with the body's [`ScrapeDigest`] when already known (a
    /// recording's cache) instead of parsing it. Also returns the digest of a scrape body
    /// (the one handed in, or the one made here), for the recorder to store beside the raw
    /// body so that a replay seeking through an hour of scrapes does not parse each 3 MB
    /// body again.
    pub fn apply_digested(
        &mut self,
        st: &Stamped,
        digest: Option<&std::sync::Arc<ScrapeDigest>>,
    ) -> (bool, Option<std::sync::Arc<ScrapeDigest>>) {
        let Observation::Scrape { target, outcome } = &st.obs else {
            return (false, None);
        };
        let retention = self.retention;
        let ts = self.target_mut(*target);
        ts.status.configured = true;
        match outcome {
            ScrapeOutcome::Failed { source, error } => {
                ts.status.source.clone_from(source);
                ts.status.last_error = Some(error.clone());
                ts.status.stale_since.get_or_insert(st.at);
            }
            ScrapeOutcome::Body { source, body } => {
                ts.status.source.clone_from(source);
                let d = match digest {
                    Some(d) => d.clone(),
                    None => std::sync::Arc::new(ScrapeDigest::of(body)),
                };
                ts.status.skipped_lines = d.skipped_lines;
                ts.status.first_skipped.clone_from(&d.first_skipped);
                match &d.mapped {
                    None => {
                        ts.status.last_error.clone_from(&d.no_samples);
                        ts.status.stale_since.get_or_insert(st.at);
                    }
                    Some(mapped) => {
                        ts.status.last_error = None;
                        ts.status.stale_since = None;
                        ts.status.last_good = Some(st.at);
                        ts.status.good_scrapes += 1;
                        ts.status.version.clone_from(&mapped.version);
                        ts.push(st.at, mapped, retention);
                    }
                }
                return (true, Some(d));
            }
        }
        (true, None)
    }
}

/// What the store derives from one scrape body: the parse's skipped lines, and the body
/// mapped onto the concepts (`None` when no sample could be read, with why). A pure
/// function of the body and this regscope's concept table; recordings keep it next to the
/// raw body as a cache, used only by the same regscope version (else the body is parsed).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ScrapeDigest {
    pub skipped_lines: usize,
    pub first_skipped: Option<String>,
    /// Why the body held no sample (HTML, garbage, empty), when `mapped` is `None`.
    pub no_samples: Option<String>,
    pub mapped: Option<std::sync::Arc<Mapped>>,
}

impl ScrapeDigest {
    /// Reads a recording's digest record: postcard of `(target index, body length in
    /// bytes, digest)`, as the recorder writes it. The fast reader of
    /// [`Mapped`] first (a replay reads one per scrape, thousands of series each), serde
    /// when it declines, so the value and the errors are serde's.
    ///
    /// # Errors
    /// postcard's, when the bytes are not such a record.
    pub fn from_record(payload: &[u8]) -> Result<(u8, u64, ScrapeDigest), postcard::Error> {
        match Self::from_record_fast(payload) {
            Some(r) => Ok(r),
            None => postcard::from_bytes(payload),
        }
    }

    /// [`ScrapeDigest::from_record`]'s fast way alone: `None` where it declines.
    fn from_record_fast(payload: &[u8]) -> Option<(u8, u64, ScrapeDigest)> {
        let mut w = crate::metrics::postcard_reader::PostcardReader::new(payload);
        let target = w.byte()?;
        let len = w.varint()?;
        let skipped_lines = w.usize()?;
        let first_skipped = w.opt_string()?;
        let no_samples = w.opt_string()?;
        let mapped = match w.tag()? {
            false => None,
            true => Some(std::sync::Arc::new(Mapped::from_postcard(&mut w)?)),
        };
        let d = ScrapeDigest {
            skipped_lines,
            first_skipped,
            no_samples,
            mapped,
        };
        Some((target, len, d))
    }

    /// Parses and maps `body` (about 45 ms for a 3.4 MB kube-apiserver page).
    pub fn of(body: &[u8]) -> ScrapeDigest {
        let expo = exposition::parse(body);
        let skipped_lines = expo.skipped.len();
        let first_skipped = expo.skipped.first().map(|s| s.to_string());
        if expo.samples.is_empty() {
            return ScrapeDigest {
                skipped_lines,
                first_skipped,
                no_samples: Some(why_no_samples(body, skipped_lines)),
                mapped: None,
            };
        }
        ScrapeDigest {
            skipped_lines,
            first_skipped,
            no_samples: None,
            mapped: Some(std::sync::Arc::new(concepts::map(concepts::table(), &expo))),
        }
    }
}

impl TargetSeries {
    fn push(&mut self, at: SystemTime, mapped: &std::sync::Arc<Mapped>, retention: usize) {
        let seq = self.first_seq + self.times.len() as u32;
        self.times.push_back(at);
        for (k, v) in &mapped.series {
            // Looked up before inserting: `entry` would take an owned key, three strings
            // allocated and freed per series per scrape for the few that are new.
            let pts = match self.series.get_mut(k) {
                Some(pts) => pts,
                None => self
                    .series
                    .entry(k.clone())
                    .or_insert_with(|| VecDeque::with_capacity(retention.min(64))),
            };
            let p99 = match (v, pts.back()) {
                (Value::Histogram(cur), Some(prev)) if prev.seq + 1 == seq => match &prev.value {
                    Value::Histogram(ph) => match increase_quantile(0.99, Some(ph), cur) {
                        Quantile::Value(x) | Quantile::AtLeast(x) => x as f32,
                        Quantile::NoData => f32::NAN,
                    },
                    _ => f32::NAN,
                },
                _ => f32::NAN,
            };
            if pts.len() == pts.capacity() {
                // Grow no further than the retention needs (doubling would leave up to
                // half of an hour's ring unused in every series).
                let want = (pts.capacity() * 2).clamp(4, retention + 1);
                pts.reserve_exact(want.saturating_sub(pts.len()));
            }
            pts.push_back(Point {
                seq,
                value: v.clone(),
                p99,
            });
            if let Some(old) = pts
                .len()
                .checked_sub(RAW_HISTOGRAM_POINTS + 1)
                .and_then(|i| pts.get_mut(i))
            {
                if let Value::Histogram(h) = &old.value {
                    old.value = Value::Scalar(h.count);
                }
            }
        }
        let first_before = self.first_seq;
        while self.times.len() > retention {
            self.times.pop_front();
            self.first_seq += 1;
        }
        let first = self.first_seq;
        // Only when a scrape left the window can a series have lost a point (a pass over
        // every series per scrape otherwise).
        if first != first_before {
            self.series.retain(|_, pts| {
                while pts.front().is_some_and(|p| p.seq < first) {
                    pts.pop_front();
                }
                !pts.is_empty()
            });
        }
        self.latest = Some(mapped.clone());
    }
}

/// One line saying why a 200 body held no metrics: HTML (a login page, a proxy's error
/// page), empty, or garbage.
fn why_no_samples(body: &[u8], skipped: usize) -> String {
    let head: String = String::from_utf8_lossy(&body[..body.len().min(512)])
        .trim_start()
        .chars()
        .take(64)
        .collect();
    let lower = head.to_ascii_lowercase();
    if body.iter().all(u8::is_ascii_whitespace) {
        "empty body: no metrics".into()
    } else if lower.starts_with("<!doctype html")
        || lower.starts_with("<html")
        || lower.starts_with('<')
    {
        let s = if skipped == 1 { "" } else { "s" };
        format!("body is HTML, not metrics ({skipped} line{s} unreadable)")
    } else {
        let first = head
            .lines()
            .next()
            .unwrap_or("")
            .replace(char::is_control, " ");
        let s = if skipped == 1 { "" } else { "s" };
        format!("no readable metrics: {skipped} line{s} unreadable, first: {first:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Bytes;
    use std::time::Duration;

    fn scrape(t: ScrapeTarget, at: u64, body: &str) -> Stamped {
        Stamped {
            at: SystemTime::UNIX_EPOCH + Duration::from_secs(at),
            obs: Observation::Scrape {
                target: t,
                outcome: ScrapeOutcome::Body {
                    source: "test".into(),
                    body: Bytes::from(body.to_string()),
                },
            },
        }
    }

    fn failed(t: ScrapeTarget, at: u64, e: &str) -> Stamped {
        Stamped {
            at: SystemTime::UNIX_EPOCH + Duration::from_secs(at),
            obs: Observation::Scrape {
                target: t,
                outcome: ScrapeOutcome::Failed {
                    source: "http://x/metrics".into(),
                    error: e.into(),
                },
            },
        }
    }

    #[test]
    fn failures_html_and_garbage_mark_stale_since_the_first_and_a_good_scrape_clears_it() {
        let mut m = MetricStore::new(10);
        let e = ScrapeTarget::Etcd;
        assert!(m.apply(&scrape(e, 100, "etcd_debugging_mvcc_current_revision 5\n")));
        assert_eq!(m.target(e).status.stale_since, None);
        m.apply(&failed(e, 105, "timed out after 5s"));
        m.apply(&scrape(
            e,
            110,
            "<!DOCTYPE html><html><body>Login</body></html>\n",
        ));
        m.apply(&scrape(e, 115, "\x00\x01garbage{{{\n"));
        let s = &m.target(e).status;
        assert_eq!(
            s.stale_since,
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(105))
        );
        assert!(
            s.last_error
                .as_deref()
                .unwrap()
                .contains("no readable metrics: 1 line unreadable"),
            "{s:?}"
        );
        assert_eq!(s.skipped_lines, 1);
        assert_eq!(s.good_scrapes, 1);
        m.apply(&scrape(e, 120, "<html>\n"));
        assert!(m
            .target(e)
            .status
            .last_error
            .as_deref()
            .unwrap()
            .contains("HTML, not metrics (1 line unreadable)"));
        m.apply(&scrape(e, 125, "etcd_debugging_mvcc_current_revision 9\n"));
        let s = &m.target(e).status;
        assert_eq!(s.stale_since, None);
        assert_eq!(s.last_error, None);
        assert_eq!(s.good_scrapes, 2);
    }

    #[test]
    fn retention_bounds_points_and_drops_series_that_vanished() {
        let mut m = MetricStore::new(3);
        let e = ScrapeTarget::Etcd;
        m.apply(&scrape(e, 1, "etcd_debugging_mvcc_keys_total 1\n"));
        for i in 2..10 {
            m.apply(&scrape(
                e,
                i,
                &format!("etcd_debugging_mvcc_current_revision {i}\n"),
            ));
        }
        let t = m.target(e);
        assert_eq!(t.series_count(), 1);
        let (_, pts) = t.series().next().unwrap();
        assert_eq!(pts.len(), 3);
        let (prev, cur) = t.last_two(t.series().next().unwrap().0).unwrap();
        assert_eq!(prev.unwrap().0.seq + 1, cur.0.seq);
        assert_eq!(cur.1, SystemTime::UNIX_EPOCH + Duration::from_secs(9));
    }

    /// A digest record's content, comparable bit for bit (NaN included): series as their
    /// sorted encodings.
    type Canon = (
        u8,
        u64,
        usize,
        Option<String>,
        Option<String>,
        Option<(Option<String>, Vec<Option<String>>, usize, Vec<Vec<u8>>)>,
    );

    fn canon(r: &(u8, u64, ScrapeDigest)) -> Canon {
        let (t, n, d) = r;
        let mapped = d.mapped.as_ref().map(|m| {
            let mut series: Vec<Vec<u8>> = m
                .series
                .iter()
                .map(|kv| postcard::to_allocvec(&kv).unwrap())
                .collect();
            series.sort();
            (m.version.clone(), m.names.clone(), m.samples, series)
        });
        (
            *t,
            *n,
            d.skipped_lines,
            d.first_skipped.clone(),
            d.no_samples.clone(),
            mapped,
        )
    }

    fn record(body: &[u8]) -> Vec<u8> {
        postcard::to_allocvec(&(3u8, body.len() as u64, ScrapeDigest::of(body))).unwrap()
    }

    fn by_serde(payload: &[u8]) -> Option<Canon> {
        postcard::from_bytes::<(u8, u64, ScrapeDigest)>(payload)
            .ok()
            .as_ref()
            .map(canon)
    }

    /// The fast reader of digest records gives serde's value for every real kube-apiserver
    /// page of `../shared/testdata` (1.28 to 1.34), read twice (the second time from its
    /// table of known series keys), and takes the fast way for all of them.
    #[test]
    fn digest_records_read_fast_as_serde_reads_them() {
        let Some(td) = crate::testdata::dir() else {
            return;
        };
        let dir = td.join("apiserver-metrics");
        let mut pages = 0;
        for e in std::fs::read_dir(&dir).expect("apiserver-metrics in the golden data") {
            let body = std::fs::read(e.unwrap().path()).unwrap();
            let payload = record(&body);
            let want = by_serde(&payload).unwrap();
            assert!(want.5.as_ref().unwrap().3.len() > 100, "a page with series");
            for _ in 0..2 {
                let fast = ScrapeDigest::from_record_fast(&payload).expect("the fast way");
                assert!(canon(&fast) == want);
            }
            pages += 1;
        }
        assert!(pages >= 4, "{pages} pages in {dir:?}");
    }

    /// Truncated or altered records: the reader fails where serde fails and reads what
    /// serde reads (special floats, histograms, a failed page's digest included).
    #[test]
    fn digest_records_cut_or_altered_read_as_serde_reads_them() {
        let body = b"# TYPE apiserver_request_duration_seconds histogram\n\
            apiserver_request_duration_seconds_bucket{verb=\"GET\",group=\"apps\",resource=\"deployments\",le=\"0.1\"} 1\n\
            apiserver_request_duration_seconds_bucket{verb=\"GET\",group=\"apps\",resource=\"deployments\",le=\"+Inf\"} 2\n\
            apiserver_request_duration_seconds_sum{verb=\"GET\",group=\"apps\",resource=\"deployments\"} -0\n\
            apiserver_request_duration_seconds_count{verb=\"GET\",group=\"apps\",resource=\"deployments\"} 2\n\
            apiserver_storage_objects{resource=\"pods\"} NaN\n\
            apiserver_storage_objects{resource=\"leases.coordination.k8s.io\"} +Inf\n\
            kubernetes_build_info{git_version=\"v1.34.0\"} 1\n\
            not a sample line\n";
        let payload = record(body);
        let full = ScrapeDigest::from_record_fast(&payload).expect("the fast way");
        assert!(canon(&full) == by_serde(&payload).unwrap());
        let series = &full.2.mapped.as_ref().unwrap().series;
        assert!(series.values().any(|v| matches!(v, Value::Histogram(_))));
        assert!(series
            .values()
            .any(|v| matches!(v, Value::Scalar(x) if x.is_nan())));
        for cut in 0..payload.len() {
            let r = ScrapeDigest::from_record(&payload[..cut]).ok();
            assert!(
                r.as_ref().map(canon) == by_serde(&payload[..cut]),
                "cut at {cut}"
            );
        }
        for at in 0..payload.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut p = payload.clone();
                p[at] ^= x;
                let r = ScrapeDigest::from_record(&p).ok();
                assert!(r.as_ref().map(canon) == by_serde(&p), "byte {at} ^ {x:#x}");
            }
        }
        for body in [&b"<html>login</html>"[..], b""] {
            let p = record(body);
            let r = ScrapeDigest::from_record_fast(&p).expect("the fast way");
            assert!(r.2.no_samples.is_some());
            assert!(Some(canon(&r)) == by_serde(&p));
        }
    }
}
