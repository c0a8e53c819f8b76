//! Human-readable units for specs: durations as `"300ms"`, rates printed as `"150 Mbit/s"`.
//!
//! Durations in TOML are strings with a unit (`ns`, `us`, `ms`, `s`), decimals allowed
//! (`"1.5s"`), exact to the nanosecond. A bare number is rejected: its unit would have to
//! be guessed.

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
        other => {
            return Err(format!(
                "duration {text:?} has unknown unit {other:?} (use ns, us, ms, s or min)"
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
        assert_eq!(
            parse_duration("166.667ms").unwrap(),
            Duration::from_micros(166_667)
        );
        assert!(parse_duration("300").is_err());
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("1.2.3s").is_err());
        assert!(parse_duration("1.0000000001s").is_err());
        assert!(parse_duration("-5ms").is_err());
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
    fn formats_rates_and_bytes() {
        assert_eq!(format_rate_bps(150_000_000), "150 Mbit/s");
        assert_eq!(format_rate_bps(500_000), "500 kbit/s");
        assert_eq!(format_rate_bps(1_500_000_000), "1.5 Gbit/s");
        assert_eq!(format_bytes(36_000_000), "36 MB");
        assert_eq!(format_bytes(62_500), "62.5 kB");
    }
}
