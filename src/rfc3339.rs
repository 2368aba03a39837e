//! RFC 3339 timestamps (`2026-11-23T00:00:00Z`, `2026-11-23T01:30:00.5+01:00`) to microseconds since
//! the Unix epoch, for `--start`. Only what RFC 3339 §5.6 allows; leap seconds are refused.

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
    use super::parse_micros;

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
