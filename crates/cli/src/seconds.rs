//! Time flags (`-t`, `-i`, `--duration`, timeouts): one grammar and one check for all of
//! them, on every command: seconds (`10`, `0.5`, `1e3`) or a duration with a unit
//! (`500ms`, `10s`, `2min`); a value that passes is one `Duration` can hold (no overflow
//! panic in `Duration::from_secs_f64`) and every refusal names the range.

use std::ops::RangeInclusive;
use std::time::Duration;

use satquic_link::units::{format_duration, parse_duration};

use crate::Failure;

/// Shortest time a flag takes: a timer or cap below a millisecond means nothing on a
/// real socket and is almost certainly a typo (`1e-300`).
pub const SHORTEST: Duration = Duration::from_millis(1);

/// Longest run or wait a flag takes, about 16 weeks; longer ones are typos (`1e300`).
/// Omit the flag to run without a limit where that is possible.
pub const LONGEST: Duration = Duration::from_secs(10_000_000);

/// Caps of one run (`sim -t`, `run -t`): a day.
pub const DAY: Duration = Duration::from_secs(24 * 3600);

/// Timeouts of a connection or handshake: an hour.
pub const HOUR: Duration = Duration::from_secs(3600);

fn out_of_range(flag: &str, text: &str, range: &RangeInclusive<Duration>) -> Failure {
    Failure::Usage(format!(
        "{flag} {text}: must be between {} and {}",
        format_duration(*range.start()),
        format_duration(*range.end())
    ))
}

fn checked(
    flag: &str,
    shown: &str,
    v: f64,
    range: RangeInclusive<Duration>,
) -> Result<Duration, Failure> {
    let within =
        v.is_finite() && v >= range.start().as_secs_f64() && v <= range.end().as_secs_f64();
    match within.then(|| Duration::try_from_secs_f64(v)) {
        Some(Ok(d)) if range.contains(&d) => Ok(d),
        _ => Err(out_of_range(flag, shown, &range)),
    }
}

/// A duration written as seconds (`60`, `0.5`) or with a unit (`500ms`, `2min`), in
/// `range`.
pub fn duration(
    flag: &str,
    text: &str,
    range: RangeInclusive<Duration>,
) -> Result<Duration, Failure> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(out_of_range(flag, t, &range));
    }
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        let v: f64 = t.parse().map_err(|_| {
            Failure::Usage(format!("{flag} '{text}': expected seconds or a duration"))
        })?;
        return checked(flag, t, v, range);
    }
    // Seconds in exponent notation (`1e300`, `1e-3`): checked like the rest.
    if t.starts_with(|c: char| c.is_ascii_digit())
        && let Ok(v) = t.parse::<f64>()
    {
        return checked(flag, t, v, range);
    }
    let d = parse_duration(t).map_err(|e| Failure::Usage(format!("{flag}: {e}")))?;
    if !range.contains(&d) {
        return Err(out_of_range(flag, t, &range));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(r: Result<Duration, Failure>) -> String {
        match r {
            Err(Failure::Usage(m)) => m,
            _ => panic!("accepted"),
        }
    }

    #[test]
    fn values_no_duration_can_hold_are_refused_with_the_range() {
        for v in [
            "1e300",
            "-1",
            "0",
            "1e-300",
            "18446744073709551615",
            "0.1ms",
        ] {
            let m = refused(duration("-t", v, SHORTEST..=LONGEST));
            assert!(m.contains("must be between 1ms and 10000000s"), "{v}: {m}");
        }
        assert_eq!(
            duration("-t", "2.5", SHORTEST..=DAY).ok(),
            Some(Duration::from_millis(2500))
        );
        assert_eq!(
            duration("-t", "1e1", SHORTEST..=DAY).ok(),
            Some(Duration::from_secs(10))
        );
    }

    #[test]
    fn durations_take_seconds_or_a_unit() {
        assert_eq!(
            duration("-t", "60", SHORTEST..=DAY).ok(),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            duration("-t", "500ms", SHORTEST..=DAY).ok(),
            Some(Duration::from_millis(500))
        );
        for bad in [
            "18446744073709551615",
            "-1",
            "-1ms",
            "0",
            "2000min",
            "1e300",
            ".",
        ] {
            let m = refused(duration("-t", bad, SHORTEST..=DAY));
            assert!(!m.contains('\n') && m.starts_with("-t"), "{bad}: {m}");
        }
        assert!(refused(duration("-t", "-1", SHORTEST..=DAY)).contains("between"));
    }
}
