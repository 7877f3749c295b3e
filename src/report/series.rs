//! The sampled series a report's charts and findings are computed from: every derived
//! signal by its label values, one value per sampling instant, and the few rules both
//! read them by (a counter's increase per interval, an interval's length, a writer's
//! name).

use std::collections::BTreeMap;
use std::time::SystemTime;

/// The series of every signal over the grid: signal → label values → one value per
/// instant (`None` where the signal had no sample).
pub type SeriesTable = BTreeMap<&'static str, BTreeMap<Vec<String>, Vec<Option<f64>>>>;

/// Seconds between instant `i - 1` and `i` (1 for the first, at least 1 ms).
pub fn interval_seconds(times: &[SystemTime], i: usize) -> f64 {
    if i == 0 {
        return 1.0;
    }
    times[i]
        .duration_since(times[i - 1])
        .map_or(0.001, |d| d.as_secs_f64().max(0.001))
}

/// Per signal, whether it was read at each instant (any label set): a label set that
/// first appears where its signal was already read is a counter that started at zero.
pub type Presence = BTreeMap<&'static str, Vec<bool>>;

/// [`increases`] of a counter whose signal was read at the instants `read` says: where a
/// label set first appears after an instant its signal was read at, it started at zero
/// there (a writer's first write, a lazily created apiserver counter), so its first
/// value is its increase.
pub fn counter_increases(v: &[Option<f64>], read: Option<&Vec<bool>>) -> Vec<Option<f64>> {
    let mut out = increases(v);
    if let (Some(first), Some(read)) = (v.iter().position(Option::is_some), read) {
        if first > 0 && read.get(first - 1).copied().unwrap_or(false) {
            out[first] = v[first];
        }
    }
    out
}

/// Per-interval increases of a counter series (a decrease is a restart: the new value is
/// the increase), `None` at the first instant and where either end is unknown.
pub fn increases(v: &[Option<f64>]) -> Vec<Option<f64>> {
    let mut out = vec![None; v.len()];
    for i in 1..v.len() {
        if let (Some(a), Some(b)) = (v[i - 1], v[i]) {
            out[i] = Some(if b >= a { b - a } else { b });
        }
    }
    out
}

/// A writer row's name as the writers view shows it: `manager (Update/status)`.
pub fn writer_name(manager: &str, how: &str) -> String {
    if how.is_empty() {
        manager.to_string()
    } else {
        format!("{manager} ({how})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_appearing_where_its_signal_was_read_started_at_zero() {
        let v = [None, None, Some(4.0), Some(6.0)];
        // Its signal was read at instant 1 (other writers): the new row counts from 0.
        let read = vec![true, true, true, true];
        assert_eq!(
            counter_increases(&v, Some(&read)),
            vec![None, None, Some(4.0), Some(2.0)]
        );
        // Not read at instant 1 (etcd out of reach, damage): the first value is no increase.
        let read = vec![true, false, true, true];
        assert_eq!(
            counter_increases(&v, Some(&read)),
            vec![None, None, None, Some(2.0)]
        );
    }

    #[test]
    fn a_counter_that_restarts_counts_its_new_value() {
        let v = [Some(5.0), Some(9.0), None, Some(12.0), Some(2.0)];
        assert_eq!(increases(&v), vec![None, Some(4.0), None, None, Some(2.0)]);
    }
}
