//! Text for the apiserver panel's values: compact durations, quantiles, readings that may be
//! missing (a metric this Kubernetes release does not expose) or unavailable (the `-1` the
//! apiserver reports for a count it could not read), percentages and sparklines.

use crate::derive::apiserver::Reading;
use crate::metrics::quantile::Quantile;
use crate::tui::text::thousands;
use crate::tui::theme::Role;

/// A cell: text and the role it is drawn in.
pub(super) type Cell = (String, Role);

/// Shown for a value that has no data (no requests, no rate yet).
pub(super) const NONE: &str = "—";
/// Cell text for [`Reading::NotExposed`]; the section's legend explains it.
pub(super) const NOT_EXPOSED: &str = "n/e";
/// Cell text for [`Reading::Unavailable`]; the section's legend explains it.
pub(super) const UNAVAILABLE: &str = "unavail";
/// Cell text for [`Reading::Pending`] (a rate that needs a second scrape).
pub(super) const PENDING: &str = "…";
/// The legend for [`PENDING`].
pub(super) const PENDING_TEXT: &str = "rate needs a second scrape";
/// The legend for [`NOT_EXPOSED`].
pub(super) const NOT_EXPOSED_TEXT: &str = "not exposed by this version";
/// The legend for [`UNAVAILABLE`].
pub(super) const UNAVAILABLE_TEXT: &str = "unavailable (apiserver reported −1)";

/// Seconds, compactly: `850µs`, `12.3ms`, `250ms`, `1.2s`, `42s`, `1m40s`, `2h05m`, `3d04h`.
/// Thresholds are applied to the rounded value, so 0.9996 s reads `1.0s`, not `1000ms`.
pub(super) fn secs(s: f64) -> String {
    if !s.is_finite() || s < 0.0 {
        return NONE.to_string();
    }
    if s == 0.0 {
        return "0s".into();
    }
    let us = s * 1e6;
    let ms = s * 1e3;
    if us < 999.5 {
        format!("{us:.0}µs")
    } else if ms < 99.95 {
        format!("{ms:.1}ms")
    } else if ms < 999.5 {
        format!("{ms:.0}ms")
    } else if s < 9.95 {
        format!("{s:.1}s")
    } else if s < 99.5 {
        format!("{s:.0}s")
    } else {
        let t = s.round() as u64;
        if t < 3600 {
            format!("{}m{:02}s", t / 60, t % 60)
        } else if t < 86_400 {
            format!("{}h{:02}m", t / 3600, (t / 60) % 60)
        } else {
            format!("{}d{:02}h", t / 86_400, (t / 3600) % 24)
        }
    }
}

/// The role of a latency: slow (≥ 1 s) in the delete colour, noticeable (≥ 100 ms) as a note.
pub(super) fn latency_role(s: f64) -> Role {
    if s >= 1.0 {
        Role::Delete
    } else if s >= 0.1 {
        Role::Note
    } else {
        Role::Text
    }
}

/// A quantile cell: `—` without observations, `≥ 60s` when the rank fell into `+Inf`.
pub(super) fn quantile(q: Quantile) -> Cell {
    match q {
        Quantile::NoData => (NONE.into(), Role::Muted),
        Quantile::Value(v) => (secs(v), latency_role(v)),
        Quantile::AtLeast(b) => (format!("≥ {}", secs(b)), Role::Delete),
    }
}

/// A count (rounded; negative values cannot be counts and read `—`).
pub(super) fn count(v: f64) -> String {
    if v.is_finite() && v >= 0.0 {
        thousands(v.round() as u64)
    } else {
        NONE.into()
    }
}

/// A per-second rate: one decimal below 100.
pub(super) fn rate(v: f64) -> String {
    if v.is_finite() && v >= 0.0 {
        crate::tui::text::rate(v)
    } else {
        NONE.into()
    }
}

/// An optional value, `—` (muted) when absent.
pub(super) fn opt<T>(v: Option<T>, f: impl FnOnce(T) -> Cell) -> Cell {
    match v {
        Some(v) => f(v),
        None => (NONE.into(), Role::Muted),
    }
}

/// A reading: its value, or `n/e` / `unavail` / `…` (explained in the section's legend).
pub(super) fn reading<T: Copy>(r: &Reading<T>, f: impl FnOnce(T) -> Cell) -> Cell {
    match r {
        Reading::Value(v) => f(*v),
        Reading::NotExposed => (NOT_EXPOSED.into(), Role::Muted),
        Reading::Unavailable => (UNAVAILABLE.into(), Role::Note),
        Reading::Pending => (PENDING.into(), Role::Muted),
    }
}

/// Legends for the placeholders among `texts` (`n/e: not exposed by this version`, …).
pub(super) fn legends<'a>(texts: impl Iterator<Item = &'a str> + Clone) -> Vec<String> {
    let mut out = Vec::new();
    for (short, long) in [
        (NOT_EXPOSED, NOT_EXPOSED_TEXT),
        (UNAVAILABLE, UNAVAILABLE_TEXT),
        (PENDING, PENDING_TEXT),
    ] {
        if texts.clone().any(|t| t == short) {
            out.push(format!("{short}: {long}"));
        }
    }
    out
}

/// A percentage: `0 %`, `4.9 %`, `28 %`.
pub(super) fn pct(p: f64) -> String {
    if !p.is_finite() {
        "n/a".into()
    } else if p == 0.0 {
        "0 %".into()
    } else if p.abs() < 9.95 {
        format!("{p:.1} %")
    } else {
        format!("{p:.0} %")
    }
}

/// Bytes in binary units (`f64` from a gauge), `n/a` when negative or not finite.
pub(super) fn bytes(v: f64) -> String {
    if v.is_finite() && v >= 0.0 {
        crate::tui::text::bytes(v.round() as u64)
    } else {
        "n/a".into()
    }
}

/// `pods` for the core group, `leases.coordination.k8s.io` otherwise (kubectl's spelling).
pub(super) fn resource(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// The newest `w` points of `hist` as block characters scaled to the largest of them;
/// intervals without requests are blank.
pub(super) fn sparkline(hist: &[Option<f64>], w: usize) -> String {
    let tail = &hist[hist.len().saturating_sub(w)..];
    let max = tail
        .iter()
        .flatten()
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    tail.iter()
        .map(|v| match v {
            Some(v) if v.is_finite() && max > 0.0 => {
                let i = ((v / max) * 7.0).round().clamp(0.0, 7.0) as usize;
                BARS[i]
            }
            Some(_) => BARS[0],
            None => ' ',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_compact() {
        assert_eq!(secs(0.000_85), "850µs");
        assert_eq!(secs(0.012_34), "12.3ms");
        assert_eq!(secs(0.25), "250ms");
        assert_eq!(secs(0.999_6), "1.0s");
        assert_eq!(secs(1.23), "1.2s");
        assert_eq!(secs(42.0), "42s");
        assert_eq!(secs(60.0), "60s");
        assert_eq!(secs(100.0), "1m40s");
        assert_eq!(secs(7_500.0), "2h05m");
        assert_eq!(secs(273_600.0), "3d04h");
        assert_eq!(secs(f64::NAN), "—");
        assert_eq!(secs(0.0), "0s");
        assert_eq!(quantile(Quantile::AtLeast(60.0)).0, "≥ 60s");
        assert_eq!(quantile(Quantile::NoData).0, "—");
    }

    #[test]
    fn percentages_and_sparklines() {
        assert_eq!(pct(0.0), "0 %");
        assert_eq!(pct(4.8828125), "4.9 %");
        assert_eq!(pct(28.0), "28 %");
        assert_eq!(pct(f64::NAN), "n/a");
        assert_eq!(
            sparkline(&[Some(0.0), None, Some(1.0), Some(0.5)], 10),
            "▁ █▅"
        );
        assert_eq!(sparkline(&[Some(1.0), Some(2.0)], 1), "█");
        assert_eq!(sparkline(&[], 4), "");
        assert_eq!(resource("", "pods"), "pods");
        assert_eq!(
            resource("coordination.k8s.io", "leases"),
            "leases.coordination.k8s.io"
        );
    }
}
