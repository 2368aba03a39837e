//! Numbers as people read them at a glance: thousands separators, four significant digits,
//! percentages with three. Summaries for machines (JSON) keep every digit; only the text uses these.

/// Significant digits of a number in text.
const DIGITS: i32 = 4;
/// Significant digits of a percentage.
const PERCENT_DIGITS: i32 = 3;
/// Below this magnitude a number is written in scientific notation (0.001234 reads as well as
/// 1.234e-3; 0.0001234 does not).
const SMALL: f64 = 1e-3;
/// From this magnitude on, scientific notation again (a 16-digit integer is not read at a glance).
const LARGE: f64 = 1e15;

/// A count with thousands separators: 20,000.
pub fn count(n: u64) -> String {
    group(&n.to_string())
}

/// A count and its noun, plural unless one: "1 input file", "4 input files".
pub fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{} {noun}s", count(n))
    }
}

/// A number to four significant digits: 7.691, 0.01235, 1.2e-5; from 1,000 on the integer it
/// rounds to, with separators (63,950; 4,000); "inf" when infinite.
pub fn num(x: f64) -> String {
    significant(x, DIGITS)
}

/// A share as a percentage to three significant digits: 97.3%, 100%, 0.05%.
pub fn percent(share: f64) -> String {
    format!("{}%", significant(100.0 * share, PERCENT_DIGITS))
}

/// An optional cost: the number, or "inf" when None (infinite).
pub fn cost(c: Option<f64>) -> String {
    c.map_or_else(|| "inf".to_owned(), num)
}

/// A path as a person gave it: relative to the working folder when inside it (plans hold
/// absolute paths, so that every process of a cluster names the same folder).
pub fn path(p: &std::path::Path) -> String {
    let here = std::env::current_dir().ok();
    here.as_deref()
        .and_then(|h| p.strip_prefix(h).ok())
        .filter(|r| !r.as_os_str().is_empty())
        .unwrap_or(p)
        .display()
        .to_string()
}

/// A size in bytes: 1.21 MiB.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = n as f64;
    let mut unit = 0;
    while x >= 1024.0 && unit + 1 < UNITS.len() {
        x /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{} {}", significant(x, 3), UNITS[unit])
    }
}

fn significant(x: f64, digits: i32) -> String {
    if x.is_nan() {
        return "NaN".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    if x == 0.0 {
        return "0".to_owned();
    }
    let a = x.abs();
    if !(SMALL..LARGE).contains(&a) {
        return scientific(x, digits);
    }
    let decimals = (digits - 1 - a.log10().floor() as i32).max(0) as usize;
    let text = format!("{x:.decimals$}");
    // rounding may carry into the next power of ten (999.96 -> 1000.0): whole numbers from 1,000
    let rounded: f64 = text.parse().unwrap_or(x);
    if rounded.abs() >= 1000.0 {
        let sign = if rounded < 0.0 { "-" } else { "" };
        return format!("{sign}{}", group(&format!("{:.0}", rounded.abs())));
    }
    trim_zeros(&text)
}

fn scientific(x: f64, digits: i32) -> String {
    let text = format!("{x:.prec$e}", prec = (digits - 1) as usize);
    match text.split_once('e') {
        Some((mantissa, exponent)) => format!("{}e{exponent}", trim_zeros(mantissa)),
        None => text,
    }
}

/// "7.6900" -> "7.69", "100.00" -> "100", "120" stays.
fn trim_zeros(text: &str) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text.to_owned()
    }
}

/// Digits with a comma every three from the right: "1234567" -> "1,234,567".
fn group(digits: &str) -> String {
    let n = digits.len();
    let mut out = String::with_capacity(n + n / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (n - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_have_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(20_000), "20,000");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(counted(1, "file"), "1 file");
        assert_eq!(counted(1_000, "file"), "1,000 files");
    }

    #[test]
    fn numbers_have_four_significant_digits() {
        let cases = [
            (4000.0, "4,000"),
            (63_950.25, "63,950"),
            (50_000_000.0, "50,000,000"),
            (7.690555, "7.691"),
            (1.0, "1"),
            (0.5, "0.5"),
            (0.012_345_6, "0.01235"),
            (999.96, "1,000"),
            (-2.5, "-2.5"),
            (1.2e-5, "1.2e-5"),
            (6.02e23, "6.02e23"),
            (0.0, "0"),
            (f64::INFINITY, "inf"),
        ];
        for (x, want) in cases {
            assert_eq!(num(x), want, "{x}");
        }
        assert_eq!(cost(None), "inf");
    }

    #[test]
    fn percentages_and_sizes() {
        assert_eq!(percent(1.0), "100%");
        assert_eq!(percent(0.973_4), "97.3%");
        assert_eq!(percent(0.000_5), "0.05%");
        assert_eq!(percent(0.8), "80%");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1_268_000), "1.21 MiB");
    }
}
