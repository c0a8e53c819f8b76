//! The `+cr[:OPTION,...]` spec part (options tabled in the module docs).

use std::time::Duration;

use crate::modifiers::SpecPart;

use super::config::{CarefulResumeConfig, JUMP_FRACTION, RETREAT_FRACTION};

/// Options of the `+cr` spec part.
const SPEC_OPTIONS: &str = "off, min-rtt=F, max-rtt=F, jump=F, max-jump=BYTES, \
     burst=BYTES, unpaced, pacer-gain=F, no-pacer, retreat=F, beta=F, min-observe=N, \
     lifetime=S, keep-on-delay-exit, jump-on-confirm, ss-cap=F";

fn number<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("cr option {key}={value} is not a number"))
}

fn ranged(key: &str, value: &str, min: f64, max: f64) -> Result<f64, String> {
    let v: f64 = number(key, value)?;
    if !(v.is_finite() && (min..=max).contains(&v)) {
        return Err(format!(
            "cr option {key}={value} must be between {min} and {max}"
        ));
    }
    Ok(v)
}

impl SpecPart for CarefulResumeConfig {
    const NAME: &'static str = "cr";
    const STANDALONE_REFUSAL: &'static str = "takes no careful resume";

    /// The part runs to the end of the spec: `+cr` at its end, or from the last `+cr:` on
    /// (the other parts are taken out before it).
    fn split(spec: &str) -> (String, Option<&str>) {
        if let Some(head) = spec.strip_suffix("+cr") {
            return (head.to_string(), Some(""));
        }
        match spec.rfind("+cr:") {
            Some(i) => (spec[..i].to_string(), Some(&spec[i + 4..])),
            None => (spec.to_string(), None),
        }
    }

    fn parse_options(opts: &str) -> Result<Self, String> {
        let mut c = Self::default();
        for opt in opts.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            match opt {
                "off" => c.enabled = false,
                "unpaced" => c.pace_unvalidated = false,
                "no-pacer" => c.platform_pacer_gain = None,
                "keep-on-delay-exit" => c.delay_exit_stops_resume = false,
                "jump-on-confirm" => c.defer_jump = false,
                _ => {
                    let Some((key, value)) = opt.split_once('=') else {
                        return Err(format!("unknown cr option '{opt}'; valid: {SPEC_OPTIONS}"));
                    };
                    match key {
                        "min-rtt" => c.min_rtt_factor = ranged(key, value, 0.0, 1.0)?,
                        "max-rtt" => c.max_rtt_factor = ranged(key, value, 1.0, 1e6)?,
                        "jump" => c.jump_fraction = ranged(key, value, 0.0, JUMP_FRACTION)?,
                        "max-jump" => c.max_jump = Some(number(key, value)?),
                        "burst" => c.max_burst = Some(number(key, value)?),
                        "pacer-gain" => {
                            c.platform_pacer_gain = Some(ranged(key, value, 1.0, 100.0)?)
                        }
                        "retreat" => {
                            c.retreat_fraction = ranged(key, value, 0.0, RETREAT_FRACTION)?
                        }
                        "beta" => c.beta = ranged(key, value, 0.5, 1.0)?,
                        "min-observe" => c.min_observe_iw = number(key, value)?,
                        "ss-cap" => c.slow_start_cap = Some(ranged(key, value, 0.1, 100.0)?),
                        "lifetime" => {
                            let s = ranged(key, value, 0.0, 1e9)?;
                            c.lifetime = Duration::from_secs_f64(s);
                        }
                        _ => {
                            return Err(format!(
                                "unknown cr option '{opt}'; valid: {SPEC_OPTIONS}"
                            ));
                        }
                    }
                }
            }
        }
        Ok(c)
    }

    /// Nothing for the default configuration.
    fn options(&self) -> Option<Vec<String>> {
        let c = self;
        let d = Self::default();
        let mut opts: Vec<String> = Vec::new();
        if !c.enabled {
            opts.push("off".into());
        }
        if c.min_rtt_factor != d.min_rtt_factor {
            opts.push(format!("min-rtt={}", c.min_rtt_factor));
        }
        if c.max_rtt_factor != d.max_rtt_factor {
            opts.push(format!("max-rtt={}", c.max_rtt_factor));
        }
        if c.jump_fraction != d.jump_fraction {
            opts.push(format!("jump={}", c.jump_fraction));
        }
        if let Some(m) = c.max_jump {
            opts.push(format!("max-jump={m}"));
        }
        if let Some(b) = c.max_burst {
            opts.push(format!("burst={b}"));
        }
        if !c.pace_unvalidated {
            opts.push("unpaced".into());
        }
        match c.platform_pacer_gain {
            None => opts.push("no-pacer".into()),
            Some(g) if Some(g) != d.platform_pacer_gain => opts.push(format!("pacer-gain={g}")),
            Some(_) => {}
        }
        if c.retreat_fraction != d.retreat_fraction {
            opts.push(format!("retreat={}", c.retreat_fraction));
        }
        if c.beta != d.beta {
            opts.push(format!("beta={}", c.beta));
        }
        if c.min_observe_iw != d.min_observe_iw {
            opts.push(format!("min-observe={}", c.min_observe_iw));
        }
        if c.lifetime != d.lifetime {
            opts.push(format!("lifetime={}", c.lifetime.as_secs_f64()));
        }
        if !c.delay_exit_stops_resume {
            opts.push("keep-on-delay-exit".into());
        }
        if !c.defer_jump {
            opts.push("jump-on-confirm".into());
        }
        if let Some(f) = c.slow_start_cap {
            opts.push(format!("ss-cap={f}"));
        }
        (!opts.is_empty()).then_some(opts)
    }
}
