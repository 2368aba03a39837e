//! Time as people write it: RFC 3339 timestamps (`2026-11-23T00:00:00Z`, with any offset) and
//! durations such as `30d`, `1h 30m` or ISO 8601's `P30D` (a day is 24 hours). Parsing is jiff's;
//! times travel as microseconds since the Unix epoch, UTC.

use jiff::{SignedDuration, Span, SpanTotal, Timestamp, Unit};

/// Microseconds in a second.
pub const MICROS_PER_S: f64 = 1e6;

/// Microseconds since the epoch of an RFC 3339 timestamp (an offset or Z is required).
pub fn parse_timestamp_us(text: &str) -> Result<i64, String> {
    let t: Timestamp = text.trim().parse().map_err(|e| {
        format!("not an RFC 3339 timestamp like 2026-11-23T00:00:00Z ({e}): {text:?}")
    })?;
    Ok(t.as_microsecond())
}

/// Seconds of a duration such as `30d`, `1h 30m`, `90s` or `P30D` (days of 24 hours); positive.
pub fn parse_duration_s(text: &str) -> Result<f64, String> {
    let span: Span = text
        .trim()
        .parse()
        .map_err(|e| format!("not a duration like 30d, 1h 30m or P1D ({e}): {text:?}"))?;
    let seconds = span
        .total(SpanTotal::from(Unit::Second).days_are_24_hours())
        .map_err(|e| format!("{text:?}: {e}"))?;
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(format!("a duration must be positive: {text:?}"));
    }
    Ok(seconds)
}

/// An instant as RFC 3339, UTC (`2026-11-23T00:00:00Z`).
pub fn format_timestamp(us: i64) -> String {
    match Timestamp::from_microsecond(us) {
        Ok(t) => t.to_string(),
        Err(_) => format!("{us} us since the epoch"),
    }
}

/// Now, microseconds since the epoch.
pub fn now_us() -> i64 {
    Timestamp::now().as_microsecond()
}

/// Microseconds since the epoch of 00:00 UTC today.
pub fn today_utc_us() -> i64 {
    let now = now_us();
    now - now.rem_euclid(86_400_000_000)
}

/// The instant `seconds` (any sign) after `us`, in microseconds, rounded to the nearest.
pub fn add_seconds_us(us: i64, seconds: f64) -> i64 {
    us + (seconds * MICROS_PER_S).round() as i64
}

/// Seconds from `origin_us` to `us`.
pub fn seconds_between(origin_us: i64, us: i64) -> f64 {
    SignedDuration::from_micros(us - origin_us).as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        assert_eq!(parse_timestamp_us("1970-01-01T00:00:00Z"), Ok(0));
        // date -u -d 2026-11-23T00:00:00Z +%s
        assert_eq!(
            parse_timestamp_us("2026-11-23T00:00:00Z"),
            Ok(1_795_392_000_000_000)
        );
        assert_eq!(
            parse_timestamp_us("2026-11-23T01:30:00.25+01:30"),
            Ok(1_795_392_000_250_000)
        );
        assert_eq!(
            parse_timestamp_us("2000-02-29T12:00:00-12:00"),
            Ok(951_868_800_000_000)
        );
        for bad in [
            "2026-11-23",
            "2026-11-23T00:00:00",
            "2026-02-29T00:00:00Z",
            "2026-11-23T24:00:00Z",
            "yesterday",
        ] {
            assert!(parse_timestamp_us(bad).is_err(), "{bad}");
        }
        assert_eq!(
            format_timestamp(1_795_392_000_000_000),
            "2026-11-23T00:00:00Z"
        );
    }

    #[test]
    fn durations_people_write() {
        assert_eq!(parse_duration_s("30d"), Ok(30.0 * 86_400.0));
        assert_eq!(parse_duration_s("1h 30m"), Ok(5_400.0));
        assert_eq!(parse_duration_s("90s"), Ok(90.0));
        assert_eq!(parse_duration_s("P1D"), Ok(86_400.0));
        for bad in ["", "0s", "-1h", "soon", "3"] {
            assert!(parse_duration_s(bad).is_err(), "{bad}");
        }
        assert_eq!(add_seconds_us(0, 1.5), 1_500_000);
        assert_eq!(seconds_between(1_000_000, 3_500_000), 2.5);
    }
}
