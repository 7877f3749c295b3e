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

/// A quantile estimated from histogram buckets the way Prometheus' `histogram_quantile`
/// does (linear interpolation inside the bucket, the first bucket starting at 0).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "seconds", rename_all = "snake_case")]
pub enum Quantile {
    /// No observations in the window.
    NoData,
    /// The estimate, in the histogram's unit (seconds for every latency here).
    Value(f64),
    /// The rank falls into the `+Inf` bucket: the true value is at least this, the largest
    /// finite bucket bound. Shown as `≥ 60s`, never as a number.
    AtLeast(f64),
}

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
        Some(p) if increase_applies(p, cur) => p
            .cumulative
            .iter()
            .zip(cur.cumulative.iter())
            .map(|(a, b)| b - a)
            .collect(),
        _ => cur.cumulative.to_vec(),
    }
}

/// Whether `cur` continues `prev` (same buckets, no count went down): else a reset.
fn increase_applies(p: &Hist, cur: &Hist) -> bool {
    p.bounds == cur.bounds
        && p.cumulative.len() == cur.cumulative.len()
        && p.count <= cur.count
        && p.cumulative
            .iter()
            .zip(cur.cumulative.iter())
            .all(|(a, b)| a <= b)
}

/// The `q`-quantile (0 ≤ q ≤ 1) of a histogram given by finite upper `bounds` (ascending)
/// and `cumulative` counts (one per bound, then the `+Inf` bucket).
///
/// Prometheus' rules: no observations → [`Quantile::NoData`]; counts that decrease from
/// bucket to bucket (possible when scrapes race with observations) are made monotonic
/// first; the lowest bucket spans 0..bound (or is the bound itself when ≤ 0).
pub fn histogram_quantile(q: f64, bounds: &[f64], cumulative: &[f64]) -> Quantile {
    quantile_by(q, bounds, cumulative.len(), |i| cumulative[i])
}

/// `histogram_quantile(q, &cur.bounds, &histogram_increase(prev, cur))` without building
/// the increase: for the metric store, which computes one per histogram series per scrape.
pub fn increase_quantile(q: f64, prev: Option<&Hist>, cur: &Hist) -> Quantile {
    let c = &cur.cumulative;
    match prev {
        Some(p) if increase_applies(p, cur) => {
            let pc = &p.cumulative;
            quantile_by(q, &cur.bounds, c.len(), |i| c[i] - pc[i])
        }
        _ => quantile_by(q, &cur.bounds, c.len(), |i| c[i]),
    }
}

/// [`histogram_quantile`] over `n` cumulative counts read by `count(i)`. Two passes over the
/// counts made monotonic (a running maximum, NaN as 0): the total, then the bucket.
fn quantile_by(q: f64, bounds: &[f64], n: usize, count: impl Fn(usize) -> f64) -> Quantile {
    if n != bounds.len() + 1 || !(0.0..=1.0).contains(&q) {
        return Quantile::NoData;
    }
    let step = |max: f64, i: usize| {
        let c = count(i);
        max.max(if c.is_nan() { 0.0 } else { c })
    };
    let total = (0..n).fold(0.0f64, step);
    if total <= 0.0 {
        return Quantile::NoData;
    }
    let rank = q * total;
    // The first bucket whose (monotonic) count reaches the rank, the last when none does,
    // with the monotonic count just below it.
    let (mut b, mut at, mut below) = (n - 1, total, 0.0f64);
    let mut max = 0.0f64;
    for i in 0..n {
        let prev_max = max;
        max = step(max, i);
        if max >= rank {
            (b, at, below) = (i, max, prev_max);
            break;
        }
        if i == n - 1 {
            (at, below) = (max, prev_max);
        }
    }
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
        (bounds[b - 1], below)
    };
    let in_bucket = at - below;
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

    /// The quantile as first written (the increase built, then made monotonic in a
    /// vector): the two-pass [`quantile_by`] must answer exactly the same.
    fn reference(q: f64, bounds: &[f64], cumulative: &[f64]) -> Quantile {
        if cumulative.len() != bounds.len() + 1 || !(0.0..=1.0).contains(&q) {
            return Quantile::NoData;
        }
        let mut mono = Vec::new();
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
            return bounds
                .last()
                .map_or(Quantile::NoData, |l| Quantile::AtLeast(*l));
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

    fn count() -> impl proptest::strategy::Strategy<Value = f64> {
        use proptest::prelude::*;
        prop_oneof![8 => (0u32..50).prop_map(f64::from), 1 => Just(f64::NAN)]
    }

    proptest::proptest! {
        #[test]
        fn increase_quantile_answers_as_building_the_increase_does(
            n in 0usize..6,
            cur in proptest::collection::vec(count(), 7),
            prev in proptest::option::of(proptest::collection::vec(count(), 7)),
            q in proptest::prop_oneof![proptest::strategy::Just(0.0), proptest::strategy::Just(1.0), 0.0f64..=1.0, -1.0f64..2.0],
        ) {
            let bounds: Vec<f64> = (0..n).map(|i| i as f64 * 0.25 - 0.25).collect();
            let mk = |c: &[f64]| {
                let mut sorted = c[..=n].to_vec();
                // Mostly cumulative (ascending), as exposed; NaN and dips stay possible.
                if sorted.iter().all(|v| !v.is_nan()) && n % 2 == 0 {
                    sorted.sort_by(f64::total_cmp);
                }
                hist(&bounds, &sorted)
            };
            let cur = mk(&cur);
            let prev = prev.map(|p| mk(&p));
            let want = reference(q, &bounds, &histogram_increase(prev.as_ref(), &cur));
            let got = increase_quantile(q, prev.as_ref(), &cur);
            proptest::prop_assert_eq!(format!("{want:?}"), format!("{got:?}"));
            let plain = histogram_quantile(q, &bounds, &cur.cumulative);
            proptest::prop_assert_eq!(
                format!("{:?}", reference(q, &bounds, &cur.cumulative)),
                format!("{plain:?}")
            );
        }
    }
}
