//! RFC 3339 timestamps (`2026-11-23T00:00:00Z`, `2026-11-23T01:30:00.5+01:00`) to microseconds since
//! the Unix epoch, for `--start`, and back (UTC), for the time a run started. Only what RFC 3339
//! §5.6 allows; leap seconds are refused.

/// Microseconds since 1970-01-01T00:00:00Z of an RFC 3339 date-time.
pub fn parse_micros(text: &str) -> Result<i64, String> {
    let b = text.as_bytes();
    let bad = || format!("not an RFC 3339 date-time like 2026-11-23T00:00:00Z: {text:?}");
    let num = |from: usize, len: usize| -> Result<i64, String> {
        let s = b.get(from..from + len).ok_or_else(bad)?;
        if !s.iter().all(u8::is_ascii_digit) {
            return Err(bad());
        }
        Ok(s.iter().fold(0i64, |n, &d| n * 10 + (d - b'0') as i64))
    };
    let sep = |at: usize, ok: &[u8]| b.get(at).is_some_and(|c| ok.contains(c));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return Err(bad());
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    let mut i = 19;
    let mut micros = 0i64;
    if sep(i, b".") {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            if i - start < 6 {
                micros = micros * 10 + (b[i] - b'0') as i64;
            }
            i += 1;
        }
        if i == start {
            return Err(bad());
        }
        for _ in (i - start)..6 {
            micros *= 10;
        }
    }
    let offset_s = match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(&s @ (b'+' | b'-')) if i + 6 == b.len() && sep(i + 3, b":") => {
            let (h, m) = (num(i + 1, 2)?, num(i + 4, 2)?);
            if h > 23 || m > 59 {
                return Err(bad());
            }
            let o = h * 3600 + m * 60;
            if s == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return Err(bad()),
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days_in = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in[(month - 1) as usize]
        || hour > 23
        || minute > 59
        || second > 59
    {
        return Err(bad());
    }
    let seconds =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    Ok(seconds * 1_000_000 + micros)
}

/// The UTC date-time of `micros` since the epoch, to the microsecond (`2026-11-23T00:00:00.250000Z`;
/// whole seconds without a fraction).
pub fn format_micros(micros: i64) -> String {
    let seconds = micros.div_euclid(1_000_000);
    let fraction = micros.rem_euclid(1_000_000);
    let (days, of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    let (hh, mm, ss) = (of_day / 3600, of_day / 60 % 60, of_day % 60);
    if fraction == 0 {
        format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
    } else {
        format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{fraction:06}Z")
    }
}

/// Now, in microseconds since the epoch (0 if the clock is before it).
pub fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// The proleptic Gregorian date of a day count from 1970-01-01 (the inverse of
/// [`days_from_civil`], same source).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant, "chrono-Compatible Low-Level
/// Date Algorithms").
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::{format_micros, parse_micros};

    #[test]
    fn formatting_inverts_parsing() {
        assert_eq!(format_micros(0), "1970-01-01T00:00:00Z");
        assert_eq!(
            format_micros(1_795_392_000_250_000),
            "2026-11-23T00:00:00.250000Z"
        );
        assert_eq!(
            format_micros(951_868_800_000_000 - 1),
            "2000-02-29T23:59:59.999999Z"
        );
        // every day for 1,200 years around the epoch, at an odd time of day
        for day in -200_000i64..240_000 {
            let t = day * 86_400_000_000 + 45_296_000_007;
            assert_eq!(
                parse_micros(&format_micros(t)),
                Ok(t),
                "{}",
                format_micros(t)
            );
        }
    }

    #[test]
    fn known_instants() {
        assert_eq!(parse_micros("1970-01-01T00:00:00Z"), Ok(0));
        // date -u -d 2026-11-23T00:00:00Z +%s
        assert_eq!(
            parse_micros("2026-11-23T00:00:00Z"),
            Ok(1_795_392_000_000_000)
        );
        assert_eq!(
            parse_micros("2026-11-23T01:30:00.25+01:30"),
            Ok(1_795_392_000_250_000)
        );
        assert_eq!(
            parse_micros("2000-02-29T12:00:00-12:00"),
            Ok(951_868_800_000_000)
        );
        for bad in [
            "2026-11-23",
            "2026-11-23T00:00:00",
            "2026-02-29T00:00:00Z",
            "2026-11-23T24:00:00Z",
            "2026-11-23T00:00:00.Z",
            "2026-11-23T00:00:00+0100",
        ] {
            assert!(parse_micros(bad).is_err(), "{bad}");
        }
    }
}
