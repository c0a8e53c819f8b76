//! The units of satquic, for every crate and command: one parser and one formatter each
//! for sizes, rates and durations (satquic-run re-exports this module as `units`).
//!
//! - Durations are strings with a unit (`ns`, `us`, `ms`, `s`, `min`), decimals allowed
//!   (`"1.5s"`), exact to the nanosecond. A bare number is rejected: its unit would have
//!   to be guessed.
//! - Sizes ([`parse_size`]) and rates ([`parse_rate_bps`]) are written as iperf and qperf
//!   users write them: `k`, `M`, `G`, `T` are decimal (10^3 ...; the seeds' "200 MB" and
//!   the record's MB are 10^6 bytes), `Ki`, `Mi`, `Gi`, `Ti` binary (2^10 ...). A size may
//!   end in `B` (`10MB`, `10MiB`), a rate in `bit`, `bps`, `bit/s` or `b/s` (`20Mbit`).
//!   Both are exact (integer arithmetic: `1.5G` is 1,500,000,000, `0.5` bytes is an
//!   error), at least 1 and at most 10^12; where zero means "off", a command says so
//!   itself.

use std::time::Duration;

/// Nanoseconds since the simulation epoch, the crate's internal time unit. Saturates at
/// `u64::MAX` (about 584 years); times beyond that are clamped.
pub(crate) type Nanos = u64;

pub(crate) const NANOS_PER_SEC: u64 = 1_000_000_000;

/// `Duration` -> internal nanoseconds, saturating.
pub(crate) fn to_nanos(d: Duration) -> Nanos {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Internal nanoseconds -> `Duration`.
pub(crate) fn from_nanos(ns: Nanos) -> Duration {
    Duration::from_nanos(ns)
}

/// Parses `"300ms"`, `"1.5s"`, `"250us"`, `"10ns"` into an exact `Duration`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    if s.starts_with('-') {
        return Err(format!(
            "duration {text:?} is negative; durations are at least 0"
        ));
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| {
            format!("duration {text:?} has no unit; write e.g. \"300ms\", \"1.5s\", \"250us\"")
        })?;
    let (number, unit) = s.split_at(split);
    let unit_ns: u128 = match unit.trim() {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        other => {
            return Err(format!(
                "duration {text:?} has unknown unit {other:?} (use ns, us, ms, s, min or h)"
            ));
        }
    };
    if number.is_empty() {
        return Err(format!("duration {text:?} has no number"));
    }
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    if frac_part.contains('.') || (int_part.is_empty() && frac_part.is_empty()) {
        return Err(format!("duration {text:?} is not a number with a unit"));
    }
    if int_part.len() > 20 || frac_part.len() > 20 {
        return Err(format!("duration {text:?} is out of range"));
    }
    let int: u128 = if int_part.is_empty() {
        0
    } else {
        int_part
            .parse()
            .map_err(|_| format!("duration {text:?} is not a number with a unit"))?
    };
    let mut ns = int
        .checked_mul(unit_ns)
        .ok_or_else(|| format!("duration {text:?} is out of range"))?;
    if !frac_part.is_empty() {
        let frac: u128 = frac_part
            .parse()
            .map_err(|_| format!("duration {text:?} is not a number with a unit"))?;
        let scale = 10u128.pow(frac_part.len() as u32);
        let scaled = frac * unit_ns;
        if scaled % scale != 0 {
            return Err(format!(
                "duration {text:?} is more precise than one nanosecond"
            ));
        }
        ns += scaled / scale;
    }
    let ns = u64::try_from(ns).map_err(|_| format!("duration {text:?} is out of range"))?;
    Ok(Duration::from_nanos(ns))
}

/// Largest size [`parse_size`] accepts: 1 TB, far beyond a 60 s run on any preset.
pub const MAX_SIZE_BYTES: u64 = 1_000_000_000_000;

/// Largest rate [`parse_rate_bps`] accepts: 1 Tbit/s.
pub const MAX_RATE_BPS: u64 = 1_000_000_000_000;

/// Parses a byte count: `200M`, `200MB`, `10MiB`, `1.5G`, `512k`, `2000000` (see the
/// module docs). Errors are one line.
pub fn parse_size(text: &str) -> Result<u64, String> {
    parse_scaled(text, &["B", "b"], MAX_SIZE_BYTES).map_err(|e| {
        let e = match e {
            ScaleError::Syntax => "use a number with an optional suffix K, M, G, T (10^3 ...) \
                                   or Ki, Mi, Gi, Ti (2^10 ...), e.g. 200M or 10MiB"
                .to_string(),
            ScaleError::Fraction => "not a whole number of bytes".to_string(),
            ScaleError::Zero => "must be at least one byte".to_string(),
            ScaleError::TooLarge => "larger than the 1 TB limit".to_string(),
        };
        format!("invalid size '{text}': {e}")
    })
}

/// Parses a rate in bit/s: `150M`, `150Mbit`, `20Mbps`, `1.5G`, `500k` (see the module
/// docs). Errors are one line.
pub fn parse_rate_bps(text: &str) -> Result<u64, String> {
    parse_scaled(text, &["bit/s", "b/s", "bps", "bit"], MAX_RATE_BPS).map_err(|e| {
        let e = match e {
            ScaleError::Syntax if text.trim().ends_with('B') => {
                "a rate is in bits per second, not bytes: write e.g. 150M or 150Mbit (150 MB/s \
                 is 1200M)"
                    .to_string()
            }
            ScaleError::Syntax => "use bit/s with an optional suffix k, M, G, T, e.g. 150M or \
                                   20Mbit"
                .to_string(),
            ScaleError::Fraction => "not a whole number of bit/s".to_string(),
            ScaleError::Zero => "must be at least 1 bit/s".to_string(),
            ScaleError::TooLarge => "larger than the 1 Tbit/s limit".to_string(),
        };
        format!("invalid rate '{text}': {e}")
    })
}

enum ScaleError {
    Syntax,
    Fraction,
    Zero,
    TooLarge,
}

/// A decimal number, a prefix and one of `units` (optional), exactly.
fn parse_scaled(text: &str, units: &[&str], max: u64) -> Result<u64, ScaleError> {
    let s = text.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    let mut suffix = suffix.trim();
    if let Some(unit) = units.iter().find(|u| suffix.ends_with(*u)) {
        suffix = &suffix[..suffix.len() - unit.len()];
    }
    let multiplier: u64 = match suffix {
        "" => 1,
        "k" | "K" => 1_000,
        "M" | "m" => 1_000_000,
        "G" | "g" => 1_000_000_000,
        "T" | "t" => 1_000_000_000_000,
        "Ki" | "ki" | "KI" => 1 << 10,
        "Mi" | "mi" | "MI" => 1 << 20,
        "Gi" | "gi" | "GI" => 1 << 30,
        "Ti" | "ti" | "TI" => 1 << 40,
        _ => return Err(ScaleError::Syntax),
    };
    if number.is_empty() || number.matches('.').count() > 1 || number.len() > 30 {
        return Err(ScaleError::Syntax);
    }
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    let int: u128 = if int_part.is_empty() {
        0
    } else {
        int_part.parse().map_err(|_| ScaleError::Syntax)?
    };
    let mut value = int
        .checked_mul(u128::from(multiplier))
        .ok_or(ScaleError::TooLarge)?;
    if !frac_part.is_empty() {
        let frac: u128 = frac_part.parse().map_err(|_| ScaleError::Syntax)?;
        let scale = 10u128.pow(frac_part.len() as u32);
        let scaled = frac * u128::from(multiplier);
        if scaled % scale != 0 {
            return Err(ScaleError::Fraction);
        }
        value += scaled / scale;
    }
    if value == 0 {
        return Err(ScaleError::Zero);
    }
    if value > u128::from(max) {
        return Err(ScaleError::TooLarge);
    }
    Ok(value as u64)
}

/// Formats a duration with the largest unit that represents it exactly (`"300ms"`).
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        "0s".to_string()
    } else if ns % 1_000_000_000 == 0 {
        format!("{}s", ns / 1_000_000_000)
    } else if ns % 1_000_000 == 0 {
        format!("{}ms", ns / 1_000_000)
    } else if ns % 1_000 == 0 {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

/// Formats a rate in bit/s for people: `"150 Mbit/s"`, `"500 kbit/s"`, `"1.5 Gbit/s"`.
pub fn format_rate_bps(rate_bps: u64) -> String {
    let (value, unit) = if rate_bps >= 1_000_000_000 {
        (rate_bps as f64 / 1e9, "Gbit/s")
    } else if rate_bps >= 1_000_000 {
        (rate_bps as f64 / 1e6, "Mbit/s")
    } else if rate_bps >= 1_000 {
        (rate_bps as f64 / 1e3, "kbit/s")
    } else {
        (rate_bps as f64, "bit/s")
    };
    format!("{} {unit}", trim_float(value))
}

/// Formats a byte count for people with decimal prefixes: `"36 MB"`, `"1.5 MB"`, `"62.5 kB"`.
pub fn format_bytes(bytes: u64) -> String {
    let (value, unit) = if bytes >= 1_000_000_000 {
        (bytes as f64 / 1e9, "GB")
    } else if bytes >= 1_000_000 {
        (bytes as f64 / 1e6, "MB")
    } else if bytes >= 1_000 {
        (bytes as f64 / 1e3, "kB")
    } else {
        (bytes as f64, "B")
    };
    format!("{} {unit}", trim_float(value))
}

/// Up to three decimals, trailing zeros removed.
pub(crate) fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// Serde adapter for `Duration` fields written as `"300ms"`.
pub mod duration_str {
    use super::{format_duration, parse_duration};
    use serde::{Deserialize, Deserializer, Serializer, de::Error};
    use std::time::Duration;

    /// Writes `"300ms"`.
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(*d))
    }

    /// Reads `"300ms"`; a bare number is an error naming the missing unit.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = DurationRepr::deserialize(d)?;
        v.into_duration().map_err(D::Error::custom)
    }

    /// What a duration field accepts: a string with a unit; numbers get a helpful error.
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum DurationRepr {
        Text(String),
        Int(i64),
        Float(f64),
    }

    impl DurationRepr {
        fn into_duration(self) -> Result<Duration, String> {
            match self {
                DurationRepr::Text(t) => parse_duration(&t),
                DurationRepr::Int(n) if n < 0 => Err(format!(
                    "duration {n} is negative; durations are at least 0"
                )),
                DurationRepr::Float(n) if n < 0.0 => Err(format!(
                    "duration {n} is negative; durations are at least 0"
                )),
                DurationRepr::Int(n) => Err(format!(
                    "duration {n} has no unit; write it as a string such as \"{n}ms\""
                )),
                DurationRepr::Float(n) => Err(format!(
                    "duration {n} has no unit; write it as a string such as \"{n}s\""
                )),
            }
        }
    }

    /// The same for `Option<Duration>` fields (use with `#[serde(default)]`).
    pub mod option {
        use super::DurationRepr;
        use crate::units::format_duration;
        use serde::{Deserialize, Deserializer, Serializer, de::Error};
        use std::time::Duration;

        /// Writes `"300ms"` (nothing for `None`).
        pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => s.serialize_str(&format_duration(*d)),
                None => s.serialize_none(),
            }
        }

        /// Reads `"300ms"`.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
            let v = Option::<DurationRepr>::deserialize(d)?;
            v.map(|v| v.into_duration().map_err(D::Error::custom))
                .transpose()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_durations_exactly() {
        assert_eq!(parse_duration("300ms").unwrap(), Duration::from_millis(300));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("0.1s").unwrap(), Duration::from_millis(100));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("7ns").unwrap(), Duration::from_nanos(7));
        assert_eq!(parse_duration("2min").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(
            parse_duration("166.667ms").unwrap(),
            Duration::from_micros(166_667)
        );
        assert!(parse_duration("300").is_err());
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("1.2.3s").is_err());
        assert!(parse_duration("1.0000000001s").is_err());
        assert!(parse_duration("-5ms").unwrap_err().contains("negative"));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("99999999999999999999999s").is_err());
    }

    #[test]
    fn formats_round_trip() {
        for d in [
            Duration::ZERO,
            Duration::from_millis(300),
            Duration::from_secs(15),
            Duration::from_micros(166_667),
            Duration::from_nanos(123_456_789),
        ] {
            assert_eq!(parse_duration(&format_duration(d)).unwrap(), d);
        }
    }

    #[test]
    fn sizes_parse_like_iperf_with_decimal_and_binary_suffixes() {
        assert_eq!(parse_size("200M"), Ok(200_000_000));
        assert_eq!(parse_size("200MB"), Ok(200_000_000));
        assert_eq!(parse_size("10MiB"), Ok(10 * 1024 * 1024));
        assert_eq!(parse_size("10Mi"), Ok(10 * 1024 * 1024));
        assert_eq!(parse_size("1.5G"), Ok(1_500_000_000));
        assert_eq!(parse_size("512k"), Ok(512_000));
        assert_eq!(parse_size("2000000"), Ok(2_000_000));
        for bad in [
            "12Q",
            "",
            "M",
            "0",
            "-5M",
            "1.2.3M",
            "0.5",
            "2T5",
            "99999999999999999999999999G",
            "1e30",
        ] {
            let err = parse_size(bad).unwrap_err();
            assert!(!err.contains('\n'), "{err}");
        }
        assert!(parse_size("2T").is_err(), "above the 1 TB limit");
    }

    #[test]
    fn rates_parse_with_the_same_rules_in_bit_per_second() {
        assert_eq!(parse_rate_bps("150M"), Ok(150_000_000));
        assert_eq!(parse_rate_bps("20Mbit"), Ok(20_000_000));
        assert_eq!(parse_rate_bps("20Mbps"), Ok(20_000_000));
        assert_eq!(parse_rate_bps("2.5Mbit/s"), Ok(2_500_000));
        assert_eq!(parse_rate_bps("1G"), Ok(1_000_000_000));
        assert!(parse_rate_bps("200MB").unwrap_err().contains("not bytes"));
        for bad in ["fast", "0", "0M", "1.0000001k", "2T"] {
            let err = parse_rate_bps(bad).unwrap_err();
            assert!(
                err.starts_with("invalid rate") && !err.contains('\n'),
                "{err}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn size_and_rate_parsing_never_panic_and_errors_are_one_line(text in ".{0,40}") {
            match parse_size(&text) {
                Ok(n) => proptest::prop_assert!((1..=MAX_SIZE_BYTES).contains(&n)),
                Err(e) => proptest::prop_assert!(!e.contains('\n')),
            }
            if let Err(e) = parse_rate_bps(&text) {
                proptest::prop_assert!(!e.contains('\n'));
            }
        }

        #[test]
        fn whole_megabytes_round_trip(n in 1u64..1_000_000) {
            proptest::prop_assert_eq!(parse_size(&format!("{n}M")), Ok(n * 1_000_000));
        }
    }

    #[test]
    fn formats_rates_and_bytes() {
        assert_eq!(format_rate_bps(150_000_000), "150 Mbit/s");
        assert_eq!(format_rate_bps(500_000), "500 kbit/s");
        assert_eq!(format_rate_bps(1_500_000_000), "1.5 Gbit/s");
        assert_eq!(format_bytes(36_000_000), "36 MB");
        assert_eq!(format_bytes(62_500), "62.5 kB");
    }
}
