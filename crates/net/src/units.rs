//! Sizes and rates as people type them on the command line.
//!
//! Sizes follow qperf/iperf3 habits with an explicit base: `k`, `M`, `G`, `T` are decimal
//! (10^3 ...; the seeds' "200 MB" and the record's MB are 10^6 bytes), `Ki`, `Mi`, `Gi`
//! are binary (2^10 ...). A trailing `B` is allowed (`10MB`, `10MiB`); plain digits are
//! bytes. Rates use the same prefixes on bits per second (`150M`, `1.5G`, `20Mbit`).

/// Parses a byte count: `200M`, `10MiB`, `1.5G`, `4096`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    parse_scaled(text, &["b", "byte", "bytes"]).map_err(|e| format!("invalid size '{text}': {e}"))
}

/// Parses a rate in bit/s: `150M`, `1G`, `20Mbit`, `500k`.
pub fn parse_rate_bps(text: &str) -> Result<u64, String> {
    parse_scaled(text, &["bit", "bps", "bit/s", "b/s"])
        .map_err(|e| format!("invalid rate '{text}': {e}"))
}

fn parse_scaled(text: &str, units: &[&str]) -> Result<u64, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("empty".into());
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, suffix) = t.split_at(split);
    if number.is_empty() {
        return Err("expected a number, e.g. 10M".into());
    }
    let value: f64 = number
        .parse()
        .map_err(|_| "expected a number, e.g. 10M".to_string())?;
    let mut suffix = suffix.trim();
    let lower = suffix.to_ascii_lowercase();
    for unit in units {
        if lower.ends_with(unit) && (lower.len() > unit.len() || !unit.is_empty()) {
            suffix = &suffix[..suffix.len() - unit.len()];
            break;
        }
    }
    let multiplier: f64 = match suffix {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" | "m" => 1e6,
        "G" | "g" => 1e9,
        "T" | "t" => 1e12,
        "Ki" | "ki" | "KI" => 1024.0,
        "Mi" | "mi" | "MI" => 1024.0 * 1024.0,
        "Gi" | "gi" | "GI" => 1024.0 * 1024.0 * 1024.0,
        "Ti" | "ti" | "TI" => 1024.0f64.powi(4),
        other => {
            return Err(format!(
                "unknown suffix '{other}' (use k, M, G, T or Ki, Mi, Gi, Ti)"
            ));
        }
    };
    let v = value * multiplier;
    if !v.is_finite() || v > 1e18 {
        return Err("too large".into());
    }
    if v.fract() != 0.0 && v < 1.0 {
        return Err("below one unit".into());
    }
    Ok(v.round() as u64)
}

/// `12.3 MB`-style rendering, decimal.
pub fn format_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("200M").unwrap(), 200_000_000);
        assert_eq!(parse_size("10MiB").unwrap(), 10 * 1024 * 1024);
        assert_eq!(parse_size("10Mi").unwrap(), 10 * 1024 * 1024);
        assert_eq!(parse_size("1.5G").unwrap(), 1_500_000_000);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("20MB").unwrap(), 20_000_000);
        assert_eq!(parse_size("5k").unwrap(), 5000);
        assert!(parse_size("").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("10X").is_err());
        assert!(parse_size("-3").is_err());
        assert!(parse_size("1e30").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate_bps("150M").unwrap(), 150_000_000);
        assert_eq!(parse_rate_bps("20Mbit").unwrap(), 20_000_000);
        assert_eq!(parse_rate_bps("1G").unwrap(), 1_000_000_000);
        assert!(parse_rate_bps("fast").is_err());
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in ".{0,12}") {
            let _ = parse_size(&s);
            let _ = parse_rate_bps(&s);
        }
    }
}
