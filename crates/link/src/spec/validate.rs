//! Validation of a link spec: every value within its limits ([`super::MAX_RATE_BPS`] and
//! the others), each error one line naming the field (`down.queue.limit.bytes ...`).
//! Apart from the description ([`super`]) so that what a link is and what values it may
//! take read separately; every spec is checked here before a link model is built.

use std::time::Duration;

use super::{
    BodSpec, DelaySpec, DirectionSpec, Discipline, HandoverEvent, LinkSpec, LossSpec, MAX_DELAY,
    MAX_QUEUE_BDP, MAX_QUEUE_BYTES, MAX_QUEUE_PACKETS, MAX_RATE_BPS, MAX_SLOT, MIN_PERIOD,
    MIN_QUEUE_BYTES, QueueLimit, QueueSpec, RateSpec, SlotPhase, SlotSpec,
};
use crate::error::LinkError;
use crate::trace::MahimahiTrace;
use crate::units::format_duration;

impl RateSpec {
    pub(super) fn validate(&self) -> Result<(), LinkError> {
        match self {
            RateSpec::Constant { rate_bps } => check_rate("rate_bps", *rate_bps, false),
            RateSpec::Schedule {
                steps,
                repeat_every,
            } => {
                let Some(first) = steps.first() else {
                    return Err(LinkError::invalid("steps", "must have at least one step"));
                };
                if first.from != Duration::ZERO {
                    return Err(LinkError::invalid(
                        "steps[0].from",
                        format!("must be \"0s\", got {:?}", format_duration(first.from)),
                    ));
                }
                for (i, step) in steps.iter().enumerate() {
                    check_rate(&format!("steps[{i}].rate_bps"), step.rate_bps, true)?;
                    if i > 0 && step.from <= steps[i - 1].from {
                        return Err(LinkError::invalid(
                            format!("steps[{i}].from"),
                            "must be later than the previous step's",
                        ));
                    }
                    if i > 0 && step.from - steps[i - 1].from < MIN_PERIOD {
                        return Err(LinkError::invalid(
                            format!("steps[{i}].from"),
                            format!(
                                "is {} after the previous step; steps must be at least {} apart",
                                format_duration(step.from - steps[i - 1].from),
                                format_duration(MIN_PERIOD)
                            ),
                        ));
                    }
                }
                if steps.iter().all(|s| s.rate_bps == 0) {
                    return Err(LinkError::invalid(
                        "steps",
                        "must have at least one step with a rate above 0",
                    ));
                }
                let last = steps.last().expect("non-empty");
                match repeat_every {
                    Some(period) => {
                        if *period <= last.from {
                            return Err(LinkError::invalid(
                                "repeat_every",
                                "must be longer than the last step's from",
                            ));
                        }
                        if *period - last.from < MIN_PERIOD {
                            return Err(LinkError::invalid(
                                "repeat_every",
                                format!(
                                    "is {}, {} after the last step's from; the last step must \
                                     last at least {} (and a period at least that)",
                                    format_duration(*period),
                                    format_duration(*period - last.from),
                                    format_duration(MIN_PERIOD)
                                ),
                            ));
                        }
                        if *period > Duration::from_secs(365 * 24 * 3600) {
                            return Err(LinkError::invalid(
                                "repeat_every",
                                "must be at most a year",
                            ));
                        }
                    }
                    None => {
                        if last.rate_bps == 0 {
                            return Err(LinkError::invalid(
                                format!("steps[{}].rate_bps", steps.len() - 1),
                                "must be above 0 in the last step of a non-repeating schedule \
                                 (the link would stop forever)",
                            ));
                        }
                    }
                }
                Ok(())
            }
            RateSpec::Slotted { quantiles } => validate_slotted(quantiles),
            RateSpec::MahimahiTrace {
                file,
                timestamps_ms,
                opportunity_bytes,
            } => {
                if *opportunity_bytes == 0 || *opportunity_bytes > 65_535 {
                    return Err(LinkError::invalid(
                        "opportunity_bytes",
                        format!("must be in 1..=65535, got {opportunity_bytes}"),
                    ));
                }
                if timestamps_ms.is_empty() {
                    return Err(match file {
                        Some(f) => LinkError::invalid(
                            "file",
                            format!(
                                "{f:?} was not loaded (use LinkSpec::from_toml_file or load_traces)"
                            ),
                        ),
                        None => LinkError::invalid(
                            "timestamps_ms",
                            "must not be empty (give timestamps_ms or file)",
                        ),
                    });
                }
                MahimahiTrace::from_timestamps_ms(timestamps_ms.clone(), "inline")
                    .map(|_| ())
                    .map_err(|e| LinkError::invalid("timestamps_ms", e.to_string()))
            }
        }
    }
}

/// A slotted rate's quantiles: from p = 0 to 1, every rate above 0 and growing with p.
fn validate_slotted(quantiles: &[super::RateQuantile]) -> Result<(), LinkError> {
    check_quantiles("quantiles", quantiles.iter().map(|q| q.p))?;
    for (i, q) in quantiles.iter().enumerate() {
        check_rate(&format!("quantiles[{i}].rate_bps"), q.rate_bps, false)?;
        if i > 0 && q.rate_bps < quantiles[i - 1].rate_bps {
            return Err(LinkError::invalid(
                format!("quantiles[{i}].rate_bps"),
                "must not be below the previous quantile's (rates grow with p)",
            ));
        }
    }
    Ok(())
}

impl SlotSpec {
    /// Checks the schedule of a link whose directions have these base delays (the floor
    /// of the slot RTT).
    pub(super) fn validate(&self, floor: Duration) -> Result<(), LinkError> {
        if self.interval < MIN_PERIOD || self.interval > MAX_SLOT {
            return Err(LinkError::invalid(
                "interval",
                format!(
                    "is {}; a slot lasts from {} to {}",
                    format_duration(self.interval),
                    format_duration(MIN_PERIOD),
                    format_duration(MAX_SLOT)
                ),
            ));
        }
        if let SlotPhase::At(phase) = self.phase
            && phase >= self.interval
        {
            return Err(LinkError::invalid(
                "phase",
                format!(
                    "is {}; it must be below the interval ({}), or \"random\"",
                    format_duration(phase),
                    format_duration(self.interval)
                ),
            ));
        }
        self.validate_rtt(floor)?;
        let h = &self.handover;
        for (name, event) in [
            ("spike", h.spike),
            ("outage", h.outage),
            ("loss", h.loss.map(|l| l.event())),
        ] {
            if let Some(e) = event {
                e.validate(self.interval)
                    .map_err(|e| e.within(&format!("handover.{name}")))?;
            }
        }
        if let Some(l) = &h.loss {
            check_probability("handover.loss.plr", l.plr)?;
        }
        Ok(())
    }

    fn validate_rtt(&self, floor: Duration) -> Result<(), LinkError> {
        if self.rtt.is_empty() {
            return Ok(());
        }
        check_quantiles("rtt", self.rtt.iter().map(|q| q.p))?;
        for (i, q) in self.rtt.iter().enumerate() {
            check_delay(&format!("rtt[{i}].rtt"), q.rtt)?;
            if i > 0 && q.rtt < self.rtt[i - 1].rtt {
                return Err(LinkError::invalid(
                    format!("rtt[{i}].rtt"),
                    "must not be below the previous quantile's (RTTs grow with p)",
                ));
            }
        }
        if self.rtt[0].rtt < floor {
            return Err(LinkError::invalid(
                "rtt[0].rtt",
                format!(
                    "is {}, below the directions' base delays ({} together); the slot RTT includes them",
                    format_duration(self.rtt[0].rtt),
                    format_duration(floor)
                ),
            ));
        }
        Ok(())
    }
}

impl HandoverEvent {
    fn validate(&self, interval: Duration) -> Result<(), LinkError> {
        check_probability("probability", self.probability)?;
        if self.min > self.max {
            return Err(LinkError::invalid(
                "min",
                format!(
                    "is {}, above max ({})",
                    format_duration(self.min),
                    format_duration(self.max)
                ),
            ));
        }
        if self.max >= interval {
            return Err(LinkError::invalid(
                "max",
                format!(
                    "is {}; an event must end within its slot ({})",
                    format_duration(self.max),
                    format_duration(interval)
                ),
            ));
        }
        Ok(())
    }
}

impl DelaySpec {
    pub(super) fn validate(&self) -> Result<(), LinkError> {
        check_delay("base", self.base)?;
        if let Some(j) = &self.jitter {
            check_delay("jitter.max", j.max)?;
        }
        if let Some(o) = &self.oscillation {
            check_delay("oscillation.peak_to_peak", o.peak_to_peak)?;
            check_period("oscillation.period", o.period)?;
        }
        if let Some(p) = &self.path_changes {
            check_delay("path_changes.max_extra", p.max_extra)?;
            check_period("path_changes.interval", p.interval)?;
            if let Some(first) = p.first_at {
                check_delay("path_changes.first_at", first)?;
            }
        }
        Ok(())
    }
}

impl QueueSpec {
    pub(super) fn validate(&self) -> Result<(), LinkError> {
        match self.limit {
            QueueLimit::Bytes(b) => {
                if b == 0 || b > MAX_QUEUE_BYTES {
                    return Err(LinkError::invalid(
                        "limit.bytes",
                        format!("must be in 1..=1e12 bytes, got {b}"),
                    ));
                }
            }
            QueueLimit::Packets(p) => {
                if p == 0 || p > MAX_QUEUE_PACKETS {
                    return Err(LinkError::invalid(
                        "limit.packets",
                        format!("must be in 1..=1e9 packets, got {p}"),
                    ));
                }
            }
            QueueLimit::Bdp(m) => {
                if !m.is_finite() || m <= 0.0 || m > MAX_QUEUE_BDP {
                    return Err(LinkError::invalid(
                        "limit.bdp",
                        format!("must be a multiple of the BDP in (0, 1000], got {m}"),
                    ));
                }
            }
        }
        if let Discipline::ViasatAqm {
            threshold_fraction,
            drop_probability,
        } = self.discipline
        {
            if !threshold_fraction.is_finite()
                || threshold_fraction <= 0.0
                || threshold_fraction > 1.0
            {
                return Err(LinkError::invalid(
                    "discipline.threshold_fraction",
                    format!("must be a fraction of the limit in (0, 1], got {threshold_fraction}"),
                ));
            }
            check_probability("discipline.drop_probability", drop_probability)?;
        }
        Ok(())
    }
}

impl LossSpec {
    pub(super) fn validate(&self) -> Result<(), LinkError> {
        match *self {
            LossSpec::None => Ok(()),
            LossSpec::Bernoulli { plr } => check_probability("loss.plr", plr),
            LossSpec::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_in_good,
                loss_in_bad,
            } => {
                check_probability("loss.p_good_to_bad", p_good_to_bad)?;
                check_probability("loss.p_bad_to_good", p_bad_to_good)?;
                check_probability("loss.loss_in_good", loss_in_good)?;
                check_probability("loss.loss_in_bad", loss_in_bad)
            }
            LossSpec::Periodic { every, offset } => {
                if every < 2 {
                    return Err(LinkError::invalid(
                        "loss.every",
                        format!("must be at least 2 packets, got {every}"),
                    ));
                }
                if offset >= every {
                    return Err(LinkError::invalid(
                        "loss.offset",
                        format!("must be below every ({every}), got {offset}"),
                    ));
                }
                Ok(())
            }
        }
    }
}

impl BodSpec {
    pub(crate) fn validate(&self, plan_rate_bps: u64) -> Result<(), LinkError> {
        check_period("bod.period", self.period)?;
        check_period("bod.window", self.window)?;
        check_delay("bod.lag", self.lag)?;
        if self.lag_jitter >= self.period {
            return Err(LinkError::invalid(
                "bod.lag_jitter",
                format!(
                    "must be below the period ({}), got {}",
                    crate::units::format_duration(self.period),
                    crate::units::format_duration(self.lag_jitter)
                ),
            ));
        }
        if !self.headroom.is_finite() || !(1.0..=100.0).contains(&self.headroom) {
            return Err(LinkError::invalid(
                "bod.headroom",
                format!("must be in [1, 100], got {}", self.headroom),
            ));
        }
        let spread = self.headroom_spread;
        if !spread.is_finite() || spread < 0.0 || self.headroom - spread < 1.0 {
            return Err(LinkError::invalid(
                "bod.headroom_spread",
                format!(
                    "must be at least 0 and at most headroom - 1 ({}), got {spread}",
                    self.headroom - 1.0
                ),
            ));
        }
        if self.min_rate_bps == 0 {
            return Err(LinkError::invalid(
                "bod.min_rate_bps",
                "must be above 0 bit/s",
            ));
        }
        if self.min_rate_bps > plan_rate_bps {
            return Err(LinkError::invalid(
                "bod.min_rate_bps",
                format!("must not exceed the plan rate ({plan_rate_bps} bit/s)"),
            ));
        }
        if self.initial_rate_bps < self.min_rate_bps || self.initial_rate_bps > plan_rate_bps {
            return Err(LinkError::invalid(
                "bod.initial_rate_bps",
                format!(
                    "must be between min_rate_bps ({}) and the plan rate ({plan_rate_bps} bit/s)",
                    self.min_rate_bps
                ),
            ));
        }
        Ok(())
    }
}

impl DirectionSpec {
    /// Checks every value of this direction; field names in errors are relative to it.
    pub fn validate(&self) -> Result<(), LinkError> {
        self.rate.validate().map_err(|e| e.within("rate"))?;
        self.delay.validate().map_err(|e| e.within("delay"))?;
        self.queue.validate().map_err(|e| e.within("queue"))?;
        self.loss.validate()?;
        if let Some(bod) = &self.bod {
            if matches!(self.rate, RateSpec::MahimahiTrace { .. }) {
                return Err(LinkError::invalid(
                    "bod",
                    "needs a constant or scheduled rate, not a mahimahi trace",
                ));
            }
            bod.validate(self.rate.nominal_rate_bps())?;
        }
        if let Some(cross) = &self.cross_traffic {
            cross.validate().map_err(|e| e.within("cross_traffic"))?;
        }
        Ok(())
    }
}

impl LinkSpec {
    /// Checks every value; errors name the field (`down.queue.limit.bytes ...`).
    pub fn validate(&self) -> Result<(), LinkError> {
        self.down.validate().map_err(|e| e.within("down"))?;
        self.up.validate().map_err(|e| e.within("up"))?;
        self.validate_slots()?;
        for (name, d) in [("down", &self.down), ("up", &self.up)] {
            if let QueueLimit::Bytes(bytes) = self.resolved_limit(d)
                && bytes < MIN_QUEUE_BYTES
                && !(matches!(d.queue.limit, QueueLimit::Bdp(_)) && self.base_rtt().is_zero())
            {
                return Err(LinkError::invalid(
                    format!("{name}.queue.limit"),
                    format!(
                        "{bytes} bytes holds no packet; a queue must hold at least one \
                         datagram of QUIC's minimum size ({MIN_QUEUE_BYTES} bytes)"
                    ),
                ));
            }
        }
        if self.base_rtt().is_zero() {
            for (name, d) in [("down", &self.down), ("up", &self.up)] {
                if matches!(d.queue.limit, QueueLimit::Bdp(_)) {
                    return Err(LinkError::invalid(
                        format!("{name}.queue.limit.bdp"),
                        "needs a base RTT above 0 (the BDP would be 0 bytes)",
                    ));
                }
            }
        }
        Ok(())
    }
}

impl LinkSpec {
    /// The slot schedule, and what needs one: a slotted rate, an outage (which stops a
    /// rate, not a trace's opportunities).
    fn validate_slots(&self) -> Result<(), LinkError> {
        for (name, d) in [("down", &self.down), ("up", &self.up)] {
            if matches!(d.rate, RateSpec::Slotted { .. }) && self.slots.is_none() {
                return Err(LinkError::invalid(
                    format!("{name}.rate"),
                    "has kind \"slotted\", which needs the link's [slots] table (its schedule)",
                ));
            }
        }
        let Some(slots) = &self.slots else {
            return Ok(());
        };
        slots
            .validate(self.down.delay.base + self.up.delay.base)
            .map_err(|e| e.within("slots"))?;
        for (name, d) in [("down", &self.down), ("up", &self.up)] {
            if slots.handover.outage.is_some() && matches!(d.rate, RateSpec::MahimahiTrace { .. }) {
                return Err(LinkError::invalid(
                    "slots.handover.outage",
                    format!(
                        "stops a rate; {name}.rate is a mahimahi trace (its opportunities are the capacity)"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Most quantiles a table may have: a slot draws one value from it by interpolation, and
/// tens of points describe any measured distribution (10^6 were accepted, 2.4 GB to read).
pub const MAX_QUANTILES: usize = 1000;

/// The `p` of a quantile table: finite, from 0 to 1, strictly increasing, at most
/// [`MAX_QUANTILES`].
fn check_quantiles(field: &str, ps: impl Iterator<Item = f64>) -> Result<(), LinkError> {
    let ps: Vec<f64> = ps.collect();
    if ps.len() > MAX_QUANTILES {
        return Err(LinkError::invalid(
            field,
            format!(
                "has {} quantiles, more than the {MAX_QUANTILES} a table may have",
                ps.len()
            ),
        ));
    }
    let (Some(&first), Some(&last)) = (ps.first(), ps.last()) else {
        return Err(LinkError::invalid(
            field,
            "must have quantiles from p = 0 to p = 1",
        ));
    };
    if let Some(i) = ps
        .iter()
        .position(|p| !p.is_finite() || !(0.0..=1.0).contains(p))
    {
        return Err(LinkError::invalid(
            format!("{field}[{i}].p"),
            format!("must be a probability in [0, 1], got {}", ps[i]),
        ));
    }
    if first != 0.0 || last != 1.0 || ps.len() < 2 {
        return Err(LinkError::invalid(
            field,
            format!(
                "must run from p = 0 to p = 1 (got {first} to {last}), so every draw has a value"
            ),
        ));
    }
    if let Some(i) = ps.windows(2).position(|w| w[1] <= w[0]) {
        return Err(LinkError::invalid(
            format!("{field}[{}].p", i + 1),
            "must be above the previous quantile's p",
        ));
    }
    Ok(())
}

fn check_rate(field: &str, rate_bps: u64, zero_ok: bool) -> Result<(), LinkError> {
    if rate_bps == 0 && !zero_ok {
        return Err(LinkError::invalid(field, "must be above 0 bit/s"));
    }
    if rate_bps > MAX_RATE_BPS {
        return Err(LinkError::invalid(
            field,
            format!("is {rate_bps} bit/s, above the 1 Tbit/s limit"),
        ));
    }
    Ok(())
}

fn check_delay(field: &str, d: Duration) -> Result<(), LinkError> {
    if d > MAX_DELAY {
        return Err(LinkError::invalid(
            field,
            format!("is {}, above the 60s limit", format_duration(d)),
        ));
    }
    Ok(())
}

fn check_period(field: &str, d: Duration) -> Result<(), LinkError> {
    if d < MIN_PERIOD {
        return Err(LinkError::invalid(
            field,
            format!(
                "is {}; it must be at least {}",
                format_duration(d),
                format_duration(MIN_PERIOD)
            ),
        ));
    }
    if d > Duration::from_secs(24 * 3600) {
        return Err(LinkError::invalid(field, "must be at most 24h"));
    }
    Ok(())
}

fn check_probability(field: &str, p: f64) -> Result<(), LinkError> {
    if !p.is_finite() || !(0.0..=1.0).contains(&p) {
        return Err(LinkError::invalid(
            field,
            format!("must be a probability in [0, 1] (0.01 = 1 %), got {p}"),
        ));
    }
    Ok(())
}
