//! Synthetic ACK timelines: a sender driven by a satquic-cc `Controller`, a bottleneck
//! that serializes at a fixed rate into an unbounded FIFO (or no bottleneck), and an RTT
//! that may oscillate or jitter. No network, no quinn: the controller is fed exactly the
//! calls quinn would make (`on_sent`, `on_ack`, `on_end_acks`).
//!
//! The sender transmits every step (base RTT / 200) what the window and a pacer
//! (`pacing_gain` x cwnd / srtt) allow, as one batch; each batch is one "packet" to the controller. Batching keeps 20 RTTs of uncapped doubling
//! (a 10^6-fold window growth) to a few thousand events.

#![allow(dead_code)]

pub mod samples;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use satquic_cc::{CcEvent, CongestionConfig, Controller, EventLog, ExitReason, RttInfo};

pub const MSS: u64 = 1200;
pub const BASE_RTT: Duration = Duration::from_millis(600);
/// Sending opportunities per base RTT.
pub const STEPS_PER_RTT: u32 = 200;

/// How the propagation RTT varies.
#[derive(Debug, Clone, Copy)]
pub enum Noise {
    None,
    /// `rtt = base * (1 + amplitude * sin(2 pi f t))`, t = send time.
    Sine {
        amplitude: f64,
        hz: f64,
    },
    /// `rtt = base * (1 + U(-amplitude, amplitude))` per packet.
    Jitter {
        amplitude: f64,
        seed: u64,
    },
}

/// The RTT the controller is told.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RttSeen {
    /// What the packet really took (queueing included): the physical case.
    Measured,
    /// Always the propagation RTT: seed 003's fixed-RTT model.
    Propagation,
}

#[derive(Debug, Clone, Copy)]
pub struct PathModel {
    pub base_rtt: Duration,
    /// Bottleneck rate in bytes per second; `None` = no bottleneck.
    pub rate_bytes_per_s: Option<f64>,
    pub noise: Noise,
    pub rtt_seen: RttSeen,
    /// Pacing rate as a multiple of cwnd / srtt. 2.0 is Linux's slow-start pacing ratio
    /// (`sk_pacing_ss_ratio` = 200%); quinn paces at 1.25 in every phase.
    pub pacing_gain: f64,
}

impl PathModel {
    pub fn uncapped(noise: Noise) -> Self {
        Self {
            base_rtt: BASE_RTT,
            rate_bytes_per_s: None,
            noise,
            rtt_seen: RttSeen::Measured,
            pacing_gain: 2.0,
        }
    }

    pub fn bottleneck(rate_bits_per_s: f64, rtt_seen: RttSeen) -> Self {
        Self {
            base_rtt: BASE_RTT,
            rate_bytes_per_s: Some(rate_bits_per_s / 8.0),
            noise: Noise::None,
            rtt_seen,
            pacing_gain: 2.0,
        }
    }

    /// Bandwidth-delay product in bytes.
    pub fn bdp(&self) -> f64 {
        self.rate_bytes_per_s.unwrap_or(f64::INFINITY) * self.base_rtt.as_secs_f64()
    }
}

/// What happened in one timeline.
#[derive(Debug, Clone)]
pub struct Trace {
    pub events: Vec<CcEvent>,
    /// First real (non-shadow) slow-start exit: time, reason, cwnd before, cwnd after.
    pub exit: Option<(Duration, ExitReason, u64, u64)>,
    /// Start of the bottleneck busy period in progress at the exit (the capacity point:
    /// the queue started to grow for good there). `None` if the queue was empty at exit.
    pub capacity_at_exit: Option<Duration>,
    /// When the sender could first see the capacity point: the ACK of the first packet
    /// that left the bottleneck in that busy period (capacity + propagation RTT).
    pub capacity_seen_at_exit: Option<Duration>,
    /// Queueing delay at the bottleneck when slow start exited.
    pub queue_delay_at_exit: Duration,
    /// First time the queueing delay reached 3 x base RTT.
    pub queue_3x_at: Option<Duration>,
    /// Start of the busy period in progress at the end of the run.
    pub capacity_at_end: Option<Duration>,
    /// Window samples (time, cwnd) after every ACK batch.
    pub cwnd: Vec<(Duration, u64)>,
    /// The controller at the end.
    pub controller: Controller,
}

/// A packet in flight: (ACK time, packet number, send time, bytes, propagation RTT).
type PendingAck = (Duration, u64, Duration, u64, Duration);

/// Runs `cc` over `path` until `until`, or until `after_exit` past the first exit.
pub fn run(cc: CongestionConfig, path: &PathModel, until: Duration, after_exit: Duration) -> Trace {
    let log = EventLog::new();
    let cc = cc.event_sink(log.clone() as Arc<dyn satquic_cc::EventSink>);
    let mut ctl = cc.build_controller(MSS).expect("composed controller");
    let step = path.base_rtt / STEPS_PER_RTT;
    let mut rng = match path.noise {
        Noise::Jitter { seed, .. } => ChaCha8Rng::seed_from_u64(seed),
        _ => ChaCha8Rng::seed_from_u64(0),
    };
    let mut acks: BinaryHeap<Reverse<PendingAck>> = BinaryHeap::new();
    let mut in_flight = 0u64;
    let mut pn = 0u64;
    let mut last_departure = Duration::ZERO;
    let mut busy_start = Duration::ZERO;
    let mut busy_start_prop = Duration::ZERO;
    let mut min_rtt = Duration::MAX;
    let mut srtt: Option<Duration> = None;
    let mut trace = Trace {
        events: Vec::new(),
        exit: None,
        capacity_at_exit: None,
        capacity_seen_at_exit: None,
        queue_delay_at_exit: Duration::ZERO,
        queue_3x_at: None,
        capacity_at_end: None,
        cwnd: Vec::new(),
        controller: ctl.clone(),
    };
    let mut now = Duration::ZERO;
    let mut deadline = until;
    let mut pacing_credit = 0.0f64;
    while now <= deadline {
        // Deliver every ACK due by `now`, in time order.
        let mut largest = None;
        while let Some(Reverse((at, ..))) = acks.peek() {
            if *at > now {
                break;
            }
            let Reverse((at, number, sent, bytes, prop)) = acks.pop().unwrap();
            let rtt_seen = match path.rtt_seen {
                RttSeen::Measured => at - sent,
                RttSeen::Propagation => prop,
            };
            min_rtt = min_rtt.min(rtt_seen);
            srtt = Some(match srtt {
                None => rtt_seen,
                Some(s) => (s * 7 + rtt_seen) / 8,
            });
            in_flight -= bytes;
            let info = RttInfo {
                latest: rtt_seen,
                smoothed: srtt.unwrap(),
                min: min_rtt,
            };
            ctl.on_ack(at, sent, bytes, false, info);
            largest = Some(largest.map_or(number, |l: u64| l.max(number)));
        }
        if largest.is_some() {
            ctl.on_end_acks(now, in_flight, largest);
            trace.cwnd.push((now, ctl.window()));
        }
        let queue_delay = last_departure.saturating_sub(now);
        if trace.queue_3x_at.is_none() && queue_delay >= path.base_rtt * 3 {
            trace.queue_3x_at = Some(now);
        }
        if trace.exit.is_none() {
            for e in log.events() {
                if let CcEvent::SlowStartExit {
                    at,
                    reason,
                    cwnd_before,
                    cwnd_after,
                    shadow: false,
                    ..
                } = e
                {
                    trace.exit = Some((at, reason, cwnd_before, cwnd_after));
                    trace.queue_delay_at_exit = queue_delay;
                    trace.capacity_at_exit = (last_departure > now).then_some(busy_start);
                    trace.capacity_seen_at_exit =
                        trace.capacity_at_exit.map(|c| c + busy_start_prop);
                    deadline = deadline.min(now + after_exit);
                    break;
                }
            }
        }
        // Send what the window and the pacer allow, as one batch. The pacer spreads a
        // window over an RTT at 1.25 x cwnd / srtt, as quinn's does.
        let window = ctl.window();
        let rtt = srtt.unwrap_or(path.base_rtt).max(Duration::from_micros(1));
        let rate = path.pacing_gain * window as f64 / rtt.as_secs_f64();
        pacing_credit =
            (pacing_credit + rate * step.as_secs_f64()).min((window as f64).max(12_000.0) / 8.0);
        if pn == 0 {
            pacing_credit = window as f64;
        }
        let allowed = (pacing_credit as u64).min(window.saturating_sub(in_flight));
        if allowed >= MSS.min(window) {
            let bytes = allowed;
            pacing_credit -= bytes as f64;
            // The initial window goes out as separate packets so the first round has ACKs.
            let packets = if pn == 0 { (bytes / MSS).max(1) } else { 1 };
            let per = bytes / packets;
            for _ in 0..packets {
                pn += 1;
                ctl.on_sent(now, per, pn);
                in_flight += per;
                let prop = propagation(path, now, &mut rng);
                let ack_at = match path.rate_bytes_per_s {
                    None => now + prop,
                    Some(rate) => {
                        if last_departure <= now {
                            busy_start = now;
                            busy_start_prop = prop;
                        }
                        let service = Duration::from_secs_f64(per as f64 / rate);
                        last_departure = last_departure.max(now) + service;
                        last_departure + prop
                    }
                };
                acks.push(Reverse((ack_at, pn, now, per, prop)));
            }
        }
        now += step;
    }
    trace.capacity_at_end = (last_departure > now).then_some(busy_start);
    trace.events = log.take();
    trace.controller = ctl;
    trace
}

fn propagation(path: &PathModel, t: Duration, rng: &mut ChaCha8Rng) -> Duration {
    let base = path.base_rtt.as_secs_f64();
    let factor = match path.noise {
        Noise::None => 1.0,
        Noise::Sine { amplitude, hz } => {
            1.0 + amplitude * (2.0 * std::f64::consts::PI * hz * t.as_secs_f64()).sin()
        }
        Noise::Jitter { amplitude, .. } => 1.0 + rng.random_range(-amplitude..=amplitude),
    };
    Duration::from_secs_f64(base * factor)
}

/// `d` in units of the base RTT.
pub fn rtts(d: Duration) -> f64 {
    d.as_secs_f64() / BASE_RTT.as_secs_f64()
}
