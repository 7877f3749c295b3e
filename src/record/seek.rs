//! Positions in a recording as people type them: what the replay's seek prompt and every
//! `--at`, `--from` and `--to` take (a time, an offset, a revision, `start` or `end`),
//! parsed into a [`SeekTo`] without knowing the recording; the caller resolves it against
//! its span (the console's replay driver, the CLI's `parse_at`).

use std::time::SystemTime;

/// Where to seek in a replay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SeekTo {
    /// Seconds from the cursor (negative: back).
    Relative(i64),
    /// A wall-clock time.
    Time(SystemTime),
    /// The first point at which the replica's revision reaches this.
    Revision(crate::model::Revision),
    /// The start (`start`) or the end (`end`) of what is there to seek in.
    Start,
    End,
}

/// Parses what the seek prompt (and every `--at`, `--from`, `--to`) takes: `-5m`/`+30s`
/// (from `now`), `r1234` or a plain number (a revision), `start` or `end`, or a time: an
/// RFC 3339 date and time (`2026-12-03T07:44:03.792Z`, `T` or a space) or a clock time
/// `HH:MM[:SS[.fff]]` on the day of `now`, either with an explicit zone at its end (`Z`,
/// `UTC`, `GMT`, `+05:30`, `-0500`) or read in the zone `utc_offset` seconds east of UTC
/// (the zone regscope shows times in, [`crate::config::Zone`]): a time copied from any
/// output pasted here means the same moment. Fractions of a second are kept.
///
/// A time names the whole of its last digit: `07:44:20` is the second 07:44:20.000 to
/// .999…, `07:44:18.808` that millisecond. A seek there shows the state at the end of it
/// (every observation stamped within it applied): the moment asked for, and the marker a
/// time copied from `replay --check` names ([`parse_seek_from`] gives the start, for a
/// range's beginning).
///
/// Errors: one line saying what is accepted.
pub fn parse_seek(text: &str, now: SystemTime, utc_offset: i64) -> Result<SeekTo, String> {
    let to = parse_seek_from(text, now, utc_offset)?;
    Ok(match to {
        SeekTo::Time(at) => {
            SeekTo::Time(at + typed_precision(text) - std::time::Duration::from_nanos(1))
        }
        other => other,
    })
}

/// How much time the last digit of a typed time stands for: 1 s without a fraction, 1 ms
/// for `.808`, 1 ns at nine digits.
fn typed_precision(text: &str) -> std::time::Duration {
    let (body, _) = split_zone(text.trim());
    let digits = body
        .rsplit_once('.')
        .filter(|(head, _)| head.contains(':'))
        .map_or(0, |(_, f)| {
            f.bytes().take_while(u8::is_ascii_digit).count().min(9)
        });
    std::time::Duration::from_nanos(10u64.pow(9 - digits as u32))
}

/// As [`parse_seek`], with a time read as the start of what it names (`07:44:20` is
/// 07:44:20.000): where a range begins (`export --from`).
pub fn parse_seek_from(text: &str, now: SystemTime, utc_offset: i64) -> Result<SeekTo, String> {
    let t = text.trim();
    let bad = || {
        format!("seek: '{t}' is not a time (14:32:10, 14:32:10Z, 2026-12-01T14:32:10-05:00), an offset (-5m, +30s), a revision (r1234), start or end")
    };
    if t.eq_ignore_ascii_case("start") {
        return Ok(SeekTo::Start);
    }
    if t.eq_ignore_ascii_case("end") {
        return Ok(SeekTo::End);
    }
    if let Some(rest) = t.strip_prefix('-').or_else(|| t.strip_prefix('+')) {
        let d = humantime::parse_duration(rest.trim()).map_err(|_| bad())?;
        let secs = i64::try_from(d.as_secs()).map_err(|_| bad())?;
        return Ok(SeekTo::Relative(if t.starts_with('-') {
            -secs
        } else {
            secs
        }));
    }
    if let Some(r) = t.strip_prefix('r').or_else(|| t.strip_prefix('R')) {
        return r.trim().parse().map(SeekTo::Revision).map_err(|_| bad());
    }
    if let Ok(r) = t.parse::<i64>() {
        return Ok(SeekTo::Revision(r));
    }
    let (body, zone) = split_zone(t);
    let offset = zone.unwrap_or(utc_offset);
    let back_to_utc = |at: SystemTime| {
        let d = std::time::Duration::from_secs(offset.unsigned_abs());
        if offset >= 0 {
            at.checked_sub(d)
        } else {
            at.checked_add(d)
        }
    };
    // A date and a time: read as if UTC, then moved by the zone's offset.
    if body.len() > 10 && body.as_bytes()[4] == b'-' {
        let at = humantime::parse_rfc3339_weak(body).map_err(|_| bad())?;
        return back_to_utc(at).map(SeekTo::Time).ok_or_else(bad);
    }
    let parts: Vec<&str> = body.split(':').collect();
    if (2..=3).contains(&parts.len()) {
        let (whole, frac) = match parts.get(2) {
            Some(s) => s.split_once('.').map_or((*s, None), |(w, f)| (w, Some(f))),
            None => ("0", None),
        };
        let num = |p: &str| {
            (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                .then(|| p.parse::<u64>().ok())
                .flatten()
        };
        let (Some(h), Some(m), Some(sec)) = (num(parts[0]), num(parts[1]), num(whole)) else {
            return Err(bad());
        };
        // Up to nanoseconds: `.5` is 500 ms.
        let nanos = match frac {
            None => 0,
            Some(f) if (1..=9).contains(&f.len()) => {
                num(f).ok_or_else(bad)? * 10u64.pow(9 - f.len() as u32)
            }
            Some(_) => return Err(bad()),
        };
        if h < 24 && m < 60 && sec < 60 {
            // Midnight of `now`'s day where the clock is read, then back to UTC.
            let local = crate::derive::units::unix_second(now) as i64 + offset;
            let day = local.div_euclid(86_400) * 86_400;
            let t = day + (h * 3600 + m * 60 + sec) as i64 - offset;
            return Ok(SeekTo::Time(
                SystemTime::UNIX_EPOCH + std::time::Duration::new(t.max(0) as u64, nanos as u32),
            ));
        }
    }
    Err(bad())
}

/// What the seek prompt takes over etcd's db file, whose recording keeps revisions and no
/// times ([`crate::record::RevisionTimeline`]): `r1234` or a plain number (a revision),
/// `start` or `end`. Whether the revision is in the file is for the caller, who knows its
/// span.
///
/// Errors: one line; a time or an offset (what [`parse_seek`] would take) is named as one,
/// since a db file has none to seek to.
pub fn parse_revision_seek(text: &str, now: SystemTime, utc_offset: i64) -> Result<SeekTo, String> {
    let t = text.trim();
    match parse_seek_from(t, now, utc_offset) {
        Ok(to @ (SeekTo::Start | SeekTo::End | SeekTo::Revision(_))) => Ok(to),
        Ok(SeekTo::Time(_) | SeekTo::Relative(_)) => Err(format!(
            "seek: '{t}' is a time, and a db file keeps none: give a revision (r1234), start or end"
        )),
        Err(_) => Err(format!(
            "seek: '{t}' is not a revision (r1234), start or end"
        )),
    }
}

/// `t` without an explicit zone at its end, and that zone's offset in seconds east of
/// UTC: `Z`, ` UTC`/`UTC`, ` GMT`, or a numeric offset `±HH:MM`/`±HHMM` after a time
/// (so that a date's own dashes are never taken for one).
fn split_zone(t: &str) -> (&str, Option<i64>) {
    for name in ["UTC", "GMT", "Z", "z"] {
        if let Some(body) = t.strip_suffix(name) {
            if body.ends_with(|c: char| c.is_ascii_digit() || c == ' ') {
                return (body.trim_end(), Some(0));
            }
        }
    }
    let b = t.as_bytes();
    for (len, colon) in [(6, true), (5, false)] {
        let Some(cut) = b.len().checked_sub(len) else {
            continue;
        };
        let z = &b[cut..];
        let sign = match z[0] {
            b'+' => 1i64,
            b'-' => -1,
            _ => continue,
        };
        let digits: Vec<u8> = z[1..].iter().copied().filter(|c| *c != b':').collect();
        if digits.len() != 4
            || !digits.iter().all(u8::is_ascii_digit)
            || (colon && z[3] != b':')
            || !t[..cut].contains(':')
        {
            continue;
        }
        let n = |a: u8, b: u8| i64::from((a - b'0') * 10 + (b - b'0'));
        let (h, m) = (n(digits[0], digits[1]), n(digits[2], digits[3]));
        if h > 23 || m > 59 {
            continue;
        }
        return (t[..cut].trim_end(), Some(sign * (h * 3600 + m * 60)));
    }
    (t, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn at(s: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_700_000_000 + s)
    }

    #[test]
    fn a_db_file_seek_takes_revisions_and_names_a_time_as_one() {
        let p = |t: &str| parse_revision_seek(t, at(0), 0);
        assert_eq!(p("r20"), Ok(SeekTo::Revision(20)));
        assert_eq!(p(" 20 "), Ok(SeekTo::Revision(20)));
        assert_eq!(p("start"), Ok(SeekTo::Start));
        assert_eq!(p("END"), Ok(SeekTo::End));
        for time in ["14:32:10", "-5m", "+30s", "2026-12-01T14:32:10Z"] {
            let e = p(time).unwrap_err();
            assert!(
                e.contains("is a time") && e.contains("keeps none"),
                "{time}: {e}"
            );
        }
        let e = p("soon").unwrap_err();
        assert_eq!(e, "seek: 'soon' is not a revision (r1234), start or end");
    }

    #[test]
    fn seek_prompt_parses_times_offsets_and_revisions() {
        let now = at(0);
        // Where the moment named starts; `parse_seek` takes all of it (below).
        let parse_seek = |t: &str, now| super::parse_seek_from(t, now, 0);
        assert_eq!(parse_seek("-5m", now), Ok(SeekTo::Relative(-300)));
        assert_eq!(parse_seek("+30s", now), Ok(SeekTo::Relative(30)));
        assert_eq!(parse_seek("r1234", now), Ok(SeekTo::Revision(1234)));
        assert_eq!(parse_seek("77", now), Ok(SeekTo::Revision(77)));
        assert_eq!(parse_seek(" End ", now), Ok(SeekTo::End));
        assert_eq!(parse_seek("start", now), Ok(SeekTo::Start));
        // A clock time is read in the console's zone: 15:32:10 at UTC+1 is 14:32:10 UTC.
        assert_eq!(
            super::parse_seek_from("15:32:10", now, 3600),
            parse_seek("14:32:10", now)
        );
        assert_eq!(
            parse_seek("2026-12-01T14:32:10Z", now),
            Ok(SeekTo::Time(
                humantime::parse_rfc3339("2026-12-01T14:32:10Z").unwrap()
            ))
        );
        // An explicit zone means what it says, whatever zone the console shows; without
        // one, a time is read in the console's zone (New York, then Kolkata). A clock time
        // is on the day `now` has where it is read: at noon UTC, the same day in all three.
        let now = UNIX_EPOCH + Duration::from_secs(1_699_963_200);
        let parse_seek = |t: &str, now| super::parse_seek_from(t, now, 0);
        let utc = parse_seek("14:32:10", now);
        assert_eq!(
            utc,
            Ok(SeekTo::Time(
                humantime::parse_rfc3339("2023-11-14T14:32:10Z").unwrap()
            ))
        );
        for shown in [0, -18_000, 19_800] {
            let p = |t: &str| super::parse_seek_from(t, now, shown);
            assert_eq!(p("14:32:10Z"), utc, "{shown}");
            assert_eq!(p("14:32:10 UTC"), utc, "{shown}");
            assert_eq!(p("09:32:10-05:00"), utc, "{shown}");
            assert_eq!(p("20:02:10+0530"), utc, "{shown}");
            assert_eq!(
                p("2023-11-14T09:32:10-05:00"),
                p("2023-11-14T14:32:10Z"),
                "{shown}"
            );
        }
        assert_eq!(super::parse_seek_from("09:32:10", now, -18_000), utc);
        assert_eq!(super::parse_seek_from("20:02:10", now, 19_800), utc);
        assert_eq!(
            super::parse_seek_from("2023-11-14 20:02:10", now, 19_800),
            super::parse_seek_from("2023-11-14T14:32:10Z", now, 0)
        );
        // A seek takes the whole of the moment typed: its last digit's second, millisecond
        // or nanosecond.
        let t0 = humantime::parse_rfc3339("2023-11-14T14:32:10Z").unwrap();
        for (typed, through) in [
            ("14:32:10", 999_999_999),
            ("14:32:10Z", 999_999_999),
            ("14:32:10.808", 808_999_999),
            ("09:32:10.8-05:00", 899_999_999),
            ("2023-11-14T14:32:10.808123456Z", 808_123_456),
        ] {
            assert_eq!(
                super::parse_seek(typed, now, 0),
                Ok(SeekTo::Time(t0 + Duration::from_nanos(through))),
                "{typed}"
            );
        }
        let day = crate::derive::units::unix_second(now) / 86_400 * 86_400;
        assert_eq!(
            parse_seek("14:32:10", now),
            Ok(SeekTo::Time(
                SystemTime::UNIX_EPOCH
                    + std::time::Duration::from_secs(day + 14 * 3600 + 32 * 60 + 10)
            ))
        );
        for bad in [
            "",
            "soon",
            "25:00",
            "r",
            "-x",
            "14:32:10.",
            "14:32:10.1234567890",
            "14:+3:10",
            "14:32:1x",
            "2026-12-01T14:32:10+1:00",
            "2026-12-01T14:32:10+24:00",
        ] {
            assert!(parse_seek(bad, now).is_err(), "{bad}");
        }
        // Fractions of a second, and RFC 3339 offsets (humantime takes only `Z`).
        let Ok(SeekTo::Time(t)) = parse_seek("14:32:10", now) else {
            panic!()
        };
        assert_eq!(
            parse_seek("14:32:10.5", now),
            Ok(SeekTo::Time(t + Duration::from_millis(500)))
        );
        assert_eq!(
            parse_seek("14:32:10.000000001", now),
            Ok(SeekTo::Time(t + Duration::from_nanos(1)))
        );
        let utc = humantime::parse_rfc3339("2026-12-01T14:32:10Z").unwrap();
        for (text, want) in [
            ("2026-12-01T15:32:10+01:00", utc),
            ("2026-12-01T09:02:10-05:30", utc),
            ("2026-12-01T14:32:10+00:00", utc),
            (
                "2026-12-01 15:32:10.25+01:00",
                utc + Duration::from_millis(250),
            ),
            ("2026-12-01T14:32:10.25Z", utc + Duration::from_millis(250)),
        ] {
            assert_eq!(parse_seek(text, now), Ok(SeekTo::Time(want)), "{text}");
        }
    }
}
