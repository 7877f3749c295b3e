//! Rates and quantiles from two scrapes, the way Prometheus computes them.
//!
//! * Counter deltas handle resets (a process restart sets counters to 0): when the newer
//!   value is smaller, the whole newer value is the increase since the reset, as
//!   Prometheus' `rate()`/`increase()` assume.
//! * [`histogram_quantile`] follows Prometheus' `histogram_quantile`: rank = q × total,
//!   the first bucket whose cumulative count reaches the rank, linear interpolation inside
//!   it with the lowest bucket starting at 0. Where Prometheus returns the largest finite
//!   bound for a rank in the `+Inf` bucket, regscope returns [`Quantile::AtLeast`] so the
//!   screen says "≥ 60s" instead of a number the data does not support.

use super::concepts::Hist;
use super::view::Quantile;

/// The increase of a counter between two scrapes, reset-aware. Never negative.
pub fn counter_increase(prev: f64, cur: f64) -> f64 {
    if cur >= prev {
        cur - prev
    } else {
        // Reset between the scrapes: everything counted since is the increase.
        cur.max(0.0)
    }
}

/// Per-bucket cumulative counts observed between `prev` and `cur` (`cur` alone when there
/// is no previous point, i.e. everything since the process started). A reset (any count
/// going down, or different bucket bounds) makes `cur` itself the increase.
pub fn histogram_increase(prev: Option<&Hist>, cur: &Hist) -> Vec<f64> {
    match prev {
        Some(p)
            if p.bounds == cur.bounds
                && p.cumulative.len() == cur.cumulative.len()
                && p.count <= cur.count
                && p.cumulative
                    .iter()
                    .zip(cur.cumulative.iter())
                    .all(|(a, b)| a <= b) =>
        {
            p.cumulative
                .iter()
                .zip(cur.cumulative.iter())
                .map(|(a, b)| b - a)
                .collect()
        }
        _ => cur.cumulative.to_vec(),
    }
}

/// The `q`-quantile (0 ≤ q ≤ 1) of a histogram given by finite upper `bounds` (ascending)
/// and `cumulative` counts (one per bound, then the `+Inf` bucket).
///
/// Prometheus' rules: no observations → [`Quantile::NoData`]; counts that decrease from
/// bucket to bucket (possible when scrapes race with observations) are made monotonic
/// first; the lowest bucket spans 0..bound (or is the bound itself when ≤ 0).
pub fn histogram_quantile(q: f64, bounds: &[f64], cumulative: &[f64]) -> Quantile {
    if cumulative.len() != bounds.len() + 1 || !(0.0..=1.0).contains(&q) {
        return Quantile::NoData;
    }
    let mut mono = Vec::with_capacity(cumulative.len());
    let mut max = 0.0f64;
    for c in cumulative {
        max = max.max(if c.is_nan() { 0.0 } else { *c });
        mono.push(max);
    }
    let total = *mono.last().unwrap_or(&0.0);
    if total <= 0.0 {
        return Quantile::NoData;
    }
    let rank = q * total;
    let b = mono
        .iter()
        .position(|c| *c >= rank)
        .unwrap_or(mono.len() - 1);
    if b == bounds.len() {
        // The +Inf bucket: the value is above every finite bound.
        return match bounds.last() {
            Some(last) => Quantile::AtLeast(*last),
            None => Quantile::NoData,
        };
    }
    let upper = bounds[b];
    let (lower, below) = if b == 0 {
        if upper <= 0.0 {
            return Quantile::Value(upper);
        }
        (0.0, 0.0)
    } else {
        (bounds[b - 1], mono[b - 1])
    };
    let in_bucket = mono[b] - below;
    if in_bucket <= 0.0 {
        return Quantile::Value(upper);
    }
    Quantile::Value(lower + (upper - lower) * ((rank - below) / in_bucket))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn hist(bounds: &[f64], cum: &[f64]) -> Hist {
        Hist {
            bounds: Arc::from(bounds),
            cumulative: cum.into(),
            sum: 0.0,
            count: *cum.last().unwrap(),
        }
    }

    #[test]
    fn interpolates_inside_the_bucket_like_prometheus() {
        // 10 observations ≤ 0.1, 10 more ≤ 0.2, none above.
        let b = [0.1, 0.2, 0.4];
        let c = [10.0, 20.0, 20.0, 20.0];
        assert_eq!(histogram_quantile(0.5, &b, &c), Quantile::Value(0.1));
        // rank 18 of 20: 8 of the 10 in (0.1, 0.2].
        match histogram_quantile(0.9, &b, &c) {
            Quantile::Value(v) => assert!((v - 0.18).abs() < 1e-12, "{v}"),
            q => panic!("{q:?}"),
        }
        // The lowest bucket starts at 0: rank 2.5 of 20 → 0.025.
        match histogram_quantile(0.125, &b, &c) {
            Quantile::Value(v) => assert!((v - 0.025).abs() < 1e-12, "{v}"),
            q => panic!("{q:?}"),
        }
    }

    #[test]
    fn a_rank_in_the_inf_bucket_is_at_least_the_last_bound() {
        let b = [0.1, 60.0];
        let c = [1.0, 2.0, 100.0];
        assert_eq!(histogram_quantile(0.99, &b, &c), Quantile::AtLeast(60.0));
        assert_eq!(
            histogram_quantile(0.5, &b, &[0.0, 0.0, 0.0]),
            Quantile::NoData
        );
        // Only a +Inf bucket: Prometheus returns NaN; no number can be given.
        assert_eq!(histogram_quantile(0.5, &[], &[3.0]), Quantile::NoData);
    }

    #[test]
    fn counter_resets_count_the_new_value() {
        assert_eq!(counter_increase(10.0, 15.0), 5.0);
        assert_eq!(counter_increase(10.0, 3.0), 3.0);
        let prev = hist(&[0.1, 1.0], &[5.0, 8.0, 9.0]);
        let cur = hist(&[0.1, 1.0], &[6.0, 10.0, 12.0]);
        assert_eq!(histogram_increase(Some(&prev), &cur), vec![1.0, 2.0, 3.0]);
        let reset = hist(&[0.1, 1.0], &[1.0, 1.0, 2.0]);
        assert_eq!(histogram_increase(Some(&prev), &reset), vec![1.0, 1.0, 2.0]);
        assert_eq!(histogram_increase(None, &cur), vec![6.0, 10.0, 12.0]);
    }

    #[test]
    fn non_monotonic_buckets_are_made_monotonic() {
        let b = [0.1, 0.2];
        // The 9 is raised to 10: all 10 observations are in the first bucket.
        let c = [10.0, 9.0, 10.0];
        match histogram_quantile(0.95, &b, &c) {
            Quantile::Value(v) => assert!((v - 0.095).abs() < 1e-12, "{v}"),
            q => panic!("{q:?}"),
        }
    }
}
