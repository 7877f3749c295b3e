//! Value parsers of the flags and of the config file's settings: durations (`5s`, a bare
//! number of seconds), sizes (`256MiB`, `1GiB`, bytes), and their bounded forms for
//! `--memory-limit`, `record --duration` and `record --max-size`. Errors are one line for
//! clap to print after the flag's name.

/// Parses `5s`, `500ms`, `1m 30s` (humantime), or a bare number of seconds (`5`, `0.5`).
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Ok(std::time::Duration::from_secs_f64(secs));
        }
        return Err(format!("'{s}' is not a duration (e.g. 5s, 500ms, 1m)"));
    }
    humantime::parse_duration(t)
        .map_err(|e| format!("'{s}' is not a duration (e.g. 5s, 500ms, 1m): {e}"))
}

/// `--memory-limit`: a size of at least 1 MiB (less is no limit anyone means).
pub(super) fn parse_memory_limit(s: &str) -> Result<usize, String> {
    let n = parse_size(s)?;
    if n < 1 << 20 {
        return Err(format!("{s} is less than 1MiB; regscope itself takes more"));
    }
    Ok(n)
}

/// [`parse_duration`], refusing zero (a recording of no time holds nothing).
pub fn parse_positive_duration(s: &str) -> Result<std::time::Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err(format!("'{s}' is no time: give more than 0 (e.g. 10m)")),
        d => Ok(d),
    }
}

/// A marker threshold in seconds (`--p99-threshold`, `--lag-threshold`): a finite number
/// greater than 0 (`0.5`, `10`); a negative one, zero, `NaN` or `inf` is refused.
pub fn parse_threshold_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!(
            "'{s}' is not a threshold: give a number of seconds greater than 0 (e.g. 0.5)"
        )),
    }
}

/// [`parse_size`] for a recording's `--max-size`: at least 1 MiB, as a recording starts
/// with a checkpoint of the whole session (often larger) and a file cut before it holds
/// nothing to replay.
pub fn parse_record_size(s: &str) -> Result<usize, String> {
    match parse_size(s)? {
        n if n < 1 << 20 => Err(format!(
            "'{s}' is too small for a recording: give at least 1MiB"
        )),
        n => Ok(n),
    }
}

/// Parses sizes such as `1048576`, `512KiB`, `256MiB`, `1GiB`, `2GB` into bytes (`KiB`
/// and `MiB` are powers of 1024, `KB` and `MB` of 1000).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (e.g. 256MiB, 1GiB)"))?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "kib" => 1024.0,
        "m" | "mb" => 1e6,
        "mib" => 1024.0 * 1024.0,
        "g" | "gb" => 1e9,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        other => return Err(format!("unknown size unit '{other}' (use KiB, MiB, GiB)")),
    };
    Ok((n * mult) as usize)
}

/// A `--prefix` as kube-apiserver joins its `--etcd-prefix` onto `/`: a leading slash,
/// no trailing one (`registry/` is `/registry`; empty or `/` is `/`), as bytes.
pub fn normal_prefix(p: &str) -> Vec<u8> {
    let p = p.trim_end_matches('/');
    if p.is_empty() {
        b"/".to_vec()
    } else if p.starts_with('/') {
        p.as_bytes().to_vec()
    } else {
        format!("/{p}").into_bytes()
    }
}

/// `--listen`: an IP address and port (`127.0.0.1:9943`, `[::1]:9943`, `0.0.0.0:9943`), or
/// a bare port or `localhost:PORT`, which mean loopback (`9943` is `127.0.0.1:9943`).
pub fn parse_listen(s: &str) -> Result<std::net::SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Some(port) = s
        .strip_prefix("localhost:")
        .and_then(|p| p.parse::<u16>().ok())
    {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse().map_err(|_| {
        format!("{s:?} is not an address and port (e.g. 127.0.0.1:9943, [::1]:9943, 0.0.0.0:9943)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_default_to_loopback() {
        assert_eq!(parse_listen("9943"), Ok(([127, 0, 0, 1], 9943).into()));
        assert_eq!(parse_listen("0.0.0.0:80"), Ok(([0, 0, 0, 0], 80).into()));
        assert_eq!(parse_listen("[::1]:9943").map(|a| a.is_ipv6()), Ok(true));
        assert_eq!(
            parse_listen("localhost:9943"),
            Ok(([127, 0, 0, 1], 9943).into())
        );
        assert!(parse_listen("example.com:9943")
            .unwrap_err()
            .contains("e.g. 127.0.0.1:9943"));
        assert!(parse_listen("99999").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("3 parsecs").is_err());
        // A recording's: not below 1 MiB; durations not zero.
        assert_eq!(parse_record_size("1MiB"), Ok(1 << 20));
        assert!(parse_record_size("1")
            .unwrap_err()
            .contains("at least 1MiB"));
        assert!(parse_positive_duration("0s")
            .unwrap_err()
            .contains("no time"));
        assert_eq!(
            parse_positive_duration("10m"),
            Ok(std::time::Duration::from_secs(600))
        );
    }
}
