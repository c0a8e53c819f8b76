//! The parameters presets take after their name (`thesis-sat:buffer=0.5,plr=0.001`):
//! parsing `key=value` lists and applying each preset's keys to its link. Apart from the
//! catalogue ([`super`]) so that a preset's values read in one place and the ways to
//! change them in another; every error names the preset and the parameter.

use std::time::Duration;

use super::{RETURN_BUFFER, bernoulli};
use crate::error::LinkError;
use crate::spec::{Discipline, HandoverSpec, LinkSpec, QueueLimit, QueueSpec, RateSpec, SlotPhase};

/// A parameter error of `preset`, from its message.
fn param_error(preset: &str) -> impl Fn(String) -> LinkError + '_ {
    move |message| LinkError::PresetParameter {
        preset: preset.to_string(),
        message,
    }
}

/// `v`, the value of `preset`'s parameter `k`, parsed; an error names the parameter.
fn param_value<T, E: std::fmt::Display>(
    preset: &str,
    k: &str,
    v: &str,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Result<T, LinkError> {
    parse(v).map_err(|e| param_error(preset)(format!("{k}: {e}")))
}

pub(super) fn parse_params(preset: &str, text: &str) -> Result<Vec<(String, String)>, LinkError> {
    let mut out: Vec<(String, String)> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = part.split_once('=') else {
            return Err(LinkError::PresetParameter {
                preset: preset.to_string(),
                message: format!("parameter {part:?} is not key=value"),
            });
        };
        let k = k.trim().to_string();
        if out.iter().any(|(seen, _)| *seen == k) {
            return Err(LinkError::PresetParameter {
                preset: preset.to_string(),
                message: format!("parameter {k:?} given twice"),
            });
        }
        out.push((k, v.trim().to_string()));
    }
    Ok(out)
}

pub(super) fn no_params(
    preset: &str,
    params: &[(String, String)],
    spec: LinkSpec,
) -> Result<LinkSpec, LinkError> {
    match params.first() {
        None => Ok(spec),
        Some((k, _)) => Err(LinkError::PresetParameter {
            preset: preset.to_string(),
            message: format!(
                "takes no parameters but cross and cross-up (got {k:?}); parameterised presets: geo-viasat, geo-viasat-bod, leo, starlink-*, thesis-sat, thesis-terr, thesis-asym-<pct>, sat-*"
            ),
        }),
    }
}

/// `(buffer x BDP, plr)` from `buffer=..,plr=..`.
pub(super) fn thesis_params(
    preset: &str,
    params: &[(String, String)],
) -> Result<(f64, f64), LinkError> {
    let mut buffer = 1.0;
    let mut plr = 0.0;
    let err = param_error(preset);
    for (k, v) in params {
        let x: f64 = v
            .parse()
            .map_err(|_| err(format!("{k}={v:?} is not a number")))?;
        match k.as_str() {
            "buffer" => {
                if !x.is_finite() || x <= 0.0 || x > crate::spec::MAX_QUEUE_BDP {
                    return Err(err(format!(
                        "buffer must be a multiple of the BDP in (0, 1000], got {v}"
                    )));
                }
                buffer = x;
            }
            "plr" => {
                if !x.is_finite() || !(0.0..=1.0).contains(&x) {
                    return Err(err(format!(
                        "plr must be a fraction in [0, 1] (0.01 = 1 %), got {v}"
                    )));
                }
                plr = x;
            }
            other => {
                return Err(err(format!(
                    "unknown parameter {other:?}; valid parameters: buffer, plr, cross, cross-up"
                )));
            }
        }
    }
    Ok((buffer, plr))
}

/// `geo-viasat-bod`'s randomness: `lag-jitter=DURATION` (each grant a uniform 0 to that
/// much later, [`BodSpec::lag_jitter`]) and `phase=random` (the allocation cycle at a random
/// offset from the connection's start, [`BodSpec::random_phase`]; `phase=fixed` is the
/// default), `headroom-spread=S` (each grant's factor uniform within S of the headroom,
/// [`BodSpec::headroom_spread`]); and its allocator's shape, for calibration: `headroom=H`,
/// `period=`, `lag=`, `window=DURATION` ([`BodSpec`]'s fields of the same names).
///
/// The GEO presets take the down rate and the gateway queue's shape, for calibration:
/// `rate=RATE` (150 Mbit/s, the seeds' testbed; the real plan's peak is 144), `queue=SIZE`
/// (the per-client limit of both directions, 36 MB; of the down one where the preset has a
/// return buffer), `aqm-at=F` (the fraction of it above which the AQM drops, 0.5) and
/// `aqm-drop=P` (its drop probability, 0.25).
///
/// And the return link, which the seeds' testbed ran at the down rate but a consumer
/// terminal shares at a few Mbit/s (SEEDS.md's "thin return"; seed 000 Sec. 2.6 puts the
/// real link's RTT growth on queuing during uplink reservations): `up=RATE` is its rate
/// and `up-queue=SIZE` the terminal's buffer in front of it, drop-tail (the AQM is the
/// gateway's, on the forward link; seed 003 Sec. V-A). With `up=` alone a preset's own
/// return buffer stays (`geo-viasat-real`'s 2 MB); the symmetric presets get one of
/// [`RETURN_BUFFER`] at the new rate.
///
/// And `plr=P`, a random loss of each packet with probability P in each direction: the
/// "wireless loss" of seed 000 (Sec. 5.1; 20 of 1,318 runs of dataset 1 and 45 of 720 of
/// dataset 2 lost a packet before 9 s, before any congestion), 0 by default.
pub(super) fn geo_params(
    preset: &str,
    params: &[(String, String)],
    mut spec: LinkSpec,
) -> Result<LinkSpec, LinkError> {
    let err = param_error(preset);
    let fraction = |k: &str, v: &str| match v.parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(err(format!("{k}: a fraction from 0 to 1, got {v:?}"))),
    };
    let has_bod = spec.down.bod.is_some();
    // `queue=`, `aqm-at=` and `aqm-drop=` shape the gateway's queues, the AQM ones: both
    // directions on the symmetric presets, the down one where the up queue is a terminal's
    // return buffer (drop-tail), which only `up=` and `up-queue=` change, in any order.
    let is_gateway = |q: &QueueSpec| matches!(q.discipline, Discipline::ViasatAqm { .. });
    for (k, v) in params {
        let value = |parse: fn(&str) -> Result<u64, String>| param_value(preset, k, v, parse);
        let queues = [&mut spec.down.queue, &mut spec.up.queue];
        match k.as_str() {
            "up" => {
                let bps = value(crate::units::parse_rate_bps)?;
                spec.up.rate = RateSpec::constant(bps);
                // A symmetric preset's up queue is the gateway's: the return link gets a
                // buffer of RETURN_BUFFER at its rate. A return buffer already there stays.
                if is_gateway(&spec.up.queue) {
                    let bytes = (bps as f64 / 8.0 * RETURN_BUFFER.as_secs_f64()) as u64;
                    spec.up.queue = QueueSpec::drop_tail(QueueLimit::Bytes(bytes));
                }
            }
            "up-queue" => {
                let bytes = value(crate::units::parse_size)?;
                spec.up.queue = QueueSpec::drop_tail(QueueLimit::Bytes(bytes));
            }
            "queue" => {
                let bytes = value(crate::units::parse_size)?;
                for q in queues.into_iter().filter(|q| is_gateway(q)) {
                    q.limit = QueueLimit::Bytes(bytes);
                }
            }
            "rate" => spec.down.rate = RateSpec::constant(value(crate::units::parse_rate_bps)?),
            "plr" => {
                let plr = fraction(k, v)?;
                for d in [&mut spec.down, &mut spec.up] {
                    d.loss = bernoulli(plr);
                }
            }
            "aqm-at" | "aqm-drop" => {
                let f = fraction(k, v)?;
                for q in queues {
                    if let Discipline::ViasatAqm {
                        threshold_fraction,
                        drop_probability,
                    } = &mut q.discipline
                    {
                        if k == "aqm-at" {
                            *threshold_fraction = f;
                        } else {
                            *drop_probability = f;
                        }
                    }
                }
            }
            _ if has_bod => spec = bod_param(preset, k, v, spec)?,
            other => {
                return Err(err(format!(
                    "unknown parameter {other:?}; valid parameters: rate, queue, aqm-at, aqm-drop, up, up-queue, plr, cross, cross-up"
                )));
            }
        }
    }
    if let Some(bod) = &spec.down.bod {
        bod.validate(spec.down.rate.nominal_rate_bps())
            .map_err(|e| err(e.to_string()))?;
    }
    spec.validate().map_err(|e| err(e.to_string()))?;
    Ok(spec)
}

fn bod_param(preset: &str, k: &str, v: &str, mut spec: LinkSpec) -> Result<LinkSpec, LinkError> {
    let err = param_error(preset);
    let bod = spec.down.bod.as_mut().expect("called for presets with BoD");
    match k {
        "lag-jitter" => {
            bod.lag_jitter = param_value(preset, k, v, crate::units::parse_duration)?;
        }
        "headroom" | "headroom-spread" => {
            let h = v
                .parse()
                .map_err(|_| err(format!("{k}: not a number: {v:?}")))?;
            match k {
                "headroom" => bod.headroom = h,
                _ => bod.headroom_spread = h,
            }
        }
        "period" | "lag" | "window" => {
            let d = param_value(preset, k, v, crate::units::parse_duration)?;
            match k {
                "period" => bod.period = d,
                "lag" => bod.lag = d,
                _ => bod.window = d,
            }
        }
        "phase" => {
            bod.random_phase = match v {
                "random" => true,
                "fixed" => false,
                _ => return Err(err(format!("phase is random or fixed, got {v:?}"))),
            }
        }
        other => {
            return Err(err(format!(
                "unknown parameter {other:?}; valid parameters: lag-jitter, phase, headroom, headroom-spread, period, lag, window, rate, queue, aqm-at, aqm-drop, up, up-queue, plr, cross, cross-up"
            )));
        }
    }
    Ok(spec)
}

/// `leo`'s parameters: `queue=SIZE` (the down queue's limit) and `path-extra=DURATION`
/// (the largest extra one-way delay a path change draws, each direction).
pub(super) fn leo_params(
    preset: &str,
    params: &[(String, String)],
    mut spec: LinkSpec,
) -> Result<LinkSpec, LinkError> {
    let err = param_error(preset);
    for (k, v) in params {
        match k.as_str() {
            "queue" => {
                let bytes = param_value(preset, k, v, crate::units::parse_size)?;
                spec.down.queue.limit = QueueLimit::Bytes(bytes);
            }
            "path-extra" => {
                let d = param_value(preset, k, v, crate::units::parse_duration)?;
                for dir in [&mut spec.down, &mut spec.up] {
                    if let Some(p) = dir.delay.path_changes.as_mut() {
                        p.max_extra = d;
                    }
                }
            }
            other => {
                return Err(err(format!(
                    "unknown parameter {other:?}; valid parameters: queue, path-extra, cross, cross-up"
                )));
            }
        }
    }
    spec.validate().map_err(|e| err(e.to_string()))?;
    Ok(spec)
}

/// The factors `rate-scale=` takes: a cell ten times busier or emptier is as far as a
/// factor means anything (the rates' own spread is about that).
pub const RATE_SCALE: std::ops::RangeInclusive<f64> = 0.1..=10.0;

/// The most `rtt-add=` adds: a server on another continent (half a second of RTT).
pub const MAX_RTT_ADD: std::time::Duration = std::time::Duration::from_millis(500);

/// The `starlink-*` presets' parameters: `phase=DURATION|random` (where the first slot
/// boundary falls after the start; [`SlotPhase`]), `slot-seed=N` (the schedule's own
/// seed: the same slots in every run), `queue=SIZE` and `up-queue=SIZE` (the gateway's
/// and the dish's buffers), `handover=none` (boundaries bring no spike, outage or loss,
/// to see what the slots alone do; `handover=on` keeps them), `rate-scale=F` (every slot
/// rate of both directions times F, a busier or emptier cell; [`RATE_SCALE`]) and
/// `rtt-add=DURATION` (a server that far beyond the PoP: every slot RTT and the floor
/// grow by it, half each way; at most [`MAX_RTT_ADD`]).
pub(super) fn starlink_params(
    preset: &str,
    params: &[(String, String)],
    mut spec: LinkSpec,
) -> Result<LinkSpec, LinkError> {
    let err = param_error(preset);
    fn slots(spec: &mut LinkSpec) -> &mut crate::spec::SlotSpec {
        spec.slots.as_mut().expect("a starlink preset has slots")
    }
    for (k, v) in params {
        match k.as_str() {
            "phase" => slots(&mut spec).phase = param_value(preset, k, v, SlotPhase::parse)?,
            "slot-seed" => {
                slots(&mut spec).seed = Some(param_value(preset, k, v, |t| {
                    t.parse::<u64>()
                        .map_err(|_| format!("a whole number from 0 to {}, got {t:?}", u64::MAX))
                })?)
            }
            "queue" => {
                let bytes = param_value(preset, k, v, crate::units::parse_size)?;
                spec.down.queue.limit = QueueLimit::Bytes(bytes);
            }
            "up-queue" => {
                let bytes = param_value(preset, k, v, crate::units::parse_size)?;
                spec.up.queue.limit = QueueLimit::Bytes(bytes);
            }
            "rate-scale" => {
                let f = param_value(preset, k, v, |t| match t.parse::<f64>() {
                    Ok(f) if RATE_SCALE.contains(&f) => Ok(f),
                    _ => Err(format!(
                        "a factor from {} to {}, got {t:?}",
                        RATE_SCALE.start(),
                        RATE_SCALE.end()
                    )),
                })?;
                for d in [&mut spec.down, &mut spec.up] {
                    if let RateSpec::Slotted { quantiles } = &mut d.rate {
                        for q in quantiles.iter_mut() {
                            q.rate_bps = ((q.rate_bps as f64 * f).round() as u64).max(1);
                        }
                    }
                }
            }
            "rtt-add" => {
                let add = param_value(preset, k, v, crate::units::parse_duration)?;
                if add > MAX_RTT_ADD {
                    return Err(err(format!(
                        "rtt-add is at most {}, got {v}",
                        crate::units::format_duration(MAX_RTT_ADD)
                    )));
                }
                spec.down.delay.base += add / 2;
                spec.up.delay.base += add - add / 2;
                for q in slots(&mut spec).rtt.iter_mut() {
                    q.rtt += add;
                }
            }
            "handover" => match v.as_str() {
                "none" => slots(&mut spec).handover = HandoverSpec::default(),
                "on" => {}
                _ => return Err(err(format!("handover is none or on, got {v:?}"))),
            },
            other => {
                return Err(err(format!(
                    "unknown parameter {other:?}; valid parameters: phase, slot-seed, queue, up-queue, handover, rate-scale, rtt-add, cross, cross-up"
                )));
            }
        }
    }
    spec.validate().map_err(|e| err(e.to_string()))?;
    Ok(spec)
}

/// `(loss one in N, jitter)` from `loss=N,jitter=DURATION`.
pub(super) fn sat_params(
    preset: &str,
    params: &[(String, String)],
) -> Result<(Option<u32>, Option<Duration>), LinkError> {
    let err = param_error(preset);
    let mut loss = None;
    let mut jitter = None;
    for (k, v) in params {
        match k.as_str() {
            "loss" => match v.parse::<u32>() {
                Ok(n) if n >= 2 => loss = Some(n),
                _ => {
                    return Err(err(format!(
                        "loss is 1 packet in N with N >= 2 (picoquic's is 64), got {v}"
                    )));
                }
            },
            "jitter" => {
                let d = param_value(preset, k, v, crate::units::parse_duration)?;
                jitter = (!d.is_zero()).then_some(d);
            }
            other => {
                return Err(err(format!(
                    "unknown parameter {other:?}; valid parameters: loss, jitter, cross, cross-up"
                )));
            }
        }
    }
    Ok((loss, jitter))
}
