//! A jump of the window towards the path's bandwidth-delay product, estimated from the
//! peak delivery rate, during the initial slow start.
//!
//! On a long, fast path the first acknowledgements already tell the sender how fast the
//! bottleneck drains: the initial window leaves in a burst and its acknowledgements come
//! back spaced by the bottleneck. picoquic uses this (`picoquic_estimate_max_path_bandwidth`
//! in `frames.c`, `picoquic_cc_update_target_cwin_estimation` in `cc_common.c`): it keeps
//! the *peak* delivery rate measured over intervals longer than 1 ms, each rate being the
//! bytes delivered over the longer of the acknowledgement interval and the send interval
//! of the acknowledged packets, and while in slow start it raises the window to half the
//! peak rate times an RTT. [`BdpJump`] is that rule with its constants named:
//!
//! | constant | value | picoquic |
//! |---|---|---|
//! | [`JUMP_FRACTION`] | 1/2 | `min_win = max_win / 2` |
//! | [`PEAK_RATE_MIN_INTERVAL`] | 1 ms | `PICOQUIC_MAX_BANDWIDTH_TIME_INTERVAL_MIN` |
//! | [`JumpRtt`] | minimum RTT (`rtt=min`) | BBR's long-RTT startup: `bbr_state->min_rtt`; CUBIC and NewReno: `smoothed_rtt` (`rtt=smoothed`) |
//! | [`JUMP_TRAIN_RTTS`] | off; with `train`, 1/4 of the minimum RTT | none: ours ([`PeakRate`]) |
//! | [`JUMP_CAP_BDPS`] | off; with `cap`, 2 | none: ours, BBR's Startup cwnd gain |
//! | `train-fraction` | off | none: ours; the train's estimate, robust, without the half |
//! | [`TRAIN_MIN_INTERVAL`] | 4 ms (`train-interval=MS`) | none: ours |
//! | [`BOUND_FRACTION`] | off; with `bound`, 1 | none: ours ([`PeakRate::bound`]) |
//! | [`BOUND_MARGIN`] | 1 ms (`bound-margin=MS`) | none: ours |
//! | [`BOUND_SAMPLES`] | 4 | none: ours |
//! | [`BURST_GAP`] | 1 ms | none: ours |
//!
//! The default is the minimum RTT, the pipe's own: a smoothed RTT inflated by a queue
//! multiplies the jump by that queue. On `thesis-asym-99`, where the ACKs queue on a thin
//! return link, the smoothed RTT made the jump overshoot (BENCHMARKS.md, "Start-up
//! mechanisms").
//!
//! Spec part
//! `+jump[:fraction=F,interval=MS,rtt=min|smoothed,train[=F],cap[=K],train-fraction=F,train-interval=MS,bound[=F],bound-margin=MS]`.
//! The jump only raises the window during the initial slow start, never while Careful
//! Resume holds it or a drain steps it down, and leaves the exit to the slow start: a jump
//! to half the estimate followed by `G`-fold growth reaches the pipe in one round trip and
//! then relies on SEARCH (or HyStart++) to stop. quinn-proto paces the larger window at
//! `1.25 x cwnd / smoothed RTT`, so the jump is spread over a round trip rather than sent
//! as a burst. Its own bursts are so small on a long path (10 datagrams at 600 ms) that
//! after the initial window the samples measure that pacing, not the bottleneck; `+burst`
//! ([`crate::burst`]) paces the initial slow start in quarter windows, picoquic's way, so
//! that they measure the bottleneck again.
//!
//! With `cap`, the initial slow start also stops growing the window at
//! [`JUMP_CAP_BDPS`] x the estimated BDP (from the train samples when trains are measured)
//! and holds it there while the estimate does not rise; the jump never goes past it
//! either. The slow start's heuristic (SEARCH, HyStart++) sees the held acknowledgements as
//! application-limited, so a hold is not mistaken for the path's plateau. It keeps the
//! window from overfilling a bottleneck queue a SEARCH exit would come too late for (a
//! 1-BDP buffer at 600 ms: qir-sat), and a bandwidth-on-demand link whose early grants make
//! the estimate low lifts the hold as the grants grow.
//!
//! With `bound` (ours), the rate is also bounded from below by each burst's queueing
//! delay: a packet that left in a burst behind `B` bytes and came back `w` later than the
//! minimum RTT waited behind at least those bytes at the bottleneck, so the bottleneck
//! drains at least `B / w` ([`PeakRate::bound`]). Acknowledgements that are late (a
//! delayed ACK, an ACK queued behind a large packet on a thin return link, a scheduler)
//! only lengthen `w`, so unlike a sample from the spacing of acknowledgements the bound
//! never exceeds the bottleneck's rate, whichever end sends and however the return link
//! bunches the ACKs; and it needs no minimum train length, so the first flight measures a
//! 1 Gbit/s path as well as a 10 Mbit/s one. What it cannot see is an error of the
//! minimum RTT itself: a minimum that is still too high (the handshake's samples carry the
//! return link's serialization of the handshake; the first data samples, what else waits
//! on a thin return link) shortens every `w` by as much. So every delay gets a margin
//! ([`BOUND_MARGIN`]), and the best few samples are kept and re-read against the minimum
//! RTT as it falls ([`BOUND_SAMPLES`]). Packets sent before the first acknowledgement
//! arrived give no sample: a server's handshake flight is a burst its client's does not
//! match, and a download would start knowing more of the path than an upload on its
//! mirror. The jump then goes to `bound` x that rate x the
//! minimum RTT, and `cap` holds the window at its multiple of the same estimate.
//!
//! The rate is a maximum, and a packet train measures the bottleneck's rate, not the
//! share left by other traffic: on a shared bottleneck the jump can overshoot, which is why
//! picoquic takes only half of it and why it is an option, measured in BENCHMARKS.md
//! ("Start-up mechanisms").

use std::fmt;
use std::time::Duration;

use crate::modifiers::{SpecPart, write_part};

/// Share of the estimated bandwidth-delay product the window jumps to (picoquic: 1/2).
pub const JUMP_FRACTION: f64 = 0.5;

/// Shortest acknowledgement interval a delivery-rate sample is taken over (picoquic's
/// `PICOQUIC_MAX_BANDWIDTH_TIME_INTERVAL_MIN`, 1 ms): shorter ones are too coarse.
pub const PEAK_RATE_MIN_INTERVAL: Duration = Duration::from_millis(1);

/// Share of the queueing-delay bound's BDP the window jumps to with `+jump:bound` (ours):
/// the bound never exceeds the bottleneck's rate ([`PeakRate::bound`]), so it needs no
/// halving.
pub const BOUND_FRACTION: f64 = 1.0;

/// Largest `bound=F`: the window may jump to at most four times the bound's BDP (a
/// `cap` below that still holds it).
pub const MAX_BOUND_FRACTION: f64 = 4.0;

/// Added to every queueing delay a bound sample divides by (`+jump:bound`, ours): it
/// absorbs an error of the minimum RTT (a sample that waited on the return link, jitter,
/// a scheduler on real sockets) of up to this much, at the cost of underestimating short
/// bursts: a 72 KB first flight through 1 Gbit/s queues for 0.58 ms and reads as 365
/// Mbit/s.
pub const BOUND_MARGIN: Duration = Duration::from_millis(1);

/// How many of the best bound samples are kept, to be read again as the minimum RTT falls
/// (`+jump:bound`, ours).
pub const BOUND_SAMPLES: usize = 4;

/// Longest pause between the sending of two packets of one burst (`+jump:bound`, ours):
/// a longer pause starts a new burst.
pub const BURST_GAP: Duration = Duration::from_millis(1);

/// How long a train of acknowledgements lasts with `+jump:train` (ours), in minimum RTTs:
/// long enough to span one flight's acknowledgements as jitter spreads them, short enough
/// not to reach the next flight's: on `sat-250-3:jitter=3ms` a wide range of values around
/// it gives the same runs, and a whole RTT merges flights (BENCHMARKS.md, "Start-up
/// mechanisms").
pub const JUMP_TRAIN_RTTS: f64 = 0.25;

/// Shortest interval a train sample is taken over (`+jump:train`, ours): the first ACK
/// of a train handled `d` late inflates a sample over `T` by `T / (T - d)`, and on real
/// sockets `d` reaches milliseconds (scheduling at both ends). Through `satquic run` on
/// geo-viasat, 1 ms let some runs measure several times the link's rate, 4 ms kept the
/// worst run within a small multiple of it, and 8 ms loses the jitter row's first flight
/// (BENCHMARKS.md, "Start-up mechanisms").
pub const TRAIN_MIN_INTERVAL: Duration = Duration::from_millis(4);

/// How far the initial slow start grows the window with `+jump:cap` (ours), in estimated
/// bandwidth-delay products (peak delivery rate x minimum RTT): BBR's Startup cwnd gain
/// of 2 (draft-ietf-ccwg-bbr Sec. 5.3.1.1, `BBR.DefaultCwndGain` in Startup; `bbr3`'s
/// `STARTUP_CWND_GAIN`): a BDP in flight and at most one more queued at the bottleneck.
/// Beyond it, growth only fills the queue towards the loss that ends slow start.
pub const JUMP_CAP_BDPS: f64 = 2.0;

/// Which RTT estimate turns the peak rate into a bandwidth-delay product.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JumpRtt {
    /// The minimum RTT (picoquic's BBR long-RTT startup).
    #[default]
    Min,
    /// The smoothed RTT (picoquic's CUBIC and NewReno).
    Smoothed,
}

/// The jump's configuration. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BdpJump {
    /// Share of peak rate x RTT the window is raised to, in (0, 1].
    pub fraction: f64,
    /// Shortest acknowledgement interval of a rate sample.
    pub min_interval: Duration,
    /// The RTT of the product.
    pub rtt: JumpRtt,
    /// If set, acknowledgements are also measured against the first one of their train,
    /// a train lasting this many minimum RTTs ([`PeakRate`]; ours, not picoquic's).
    pub train: Option<f64>,
    /// Shortest interval of a train sample.
    pub train_interval: Duration,
    /// If set, the initial slow start does not grow the window past this many times the
    /// estimated bandwidth-delay product (peak rate x minimum RTT; ours, not picoquic's).
    /// With trains measured, the rate is the peak of the train samples alone
    /// ([`PeakRate::train_peak`]): a sample over the 1 ms minimum interval is inflated by
    /// any bunching of the acknowledgements (on real sockets, by the receiver's and the
    /// sender's scheduling: through `satquic run` on qir-sat a 1 ms sample read a multiple
    /// of the link's rate; BENCHMARKS.md, "Start-up mechanisms"), which the jump's half
    /// tolerates and a ceiling of twice the BDP does not; a train spans a whole flight.
    pub cap: Option<f64>,
    /// If set (with trains measured), the window also jumps to this share of the train
    /// samples' peak x minimum RTT: a robust estimate needs no halving (ours).
    pub train_fraction: Option<f64>,
    /// If set, the window also jumps to this share of the queueing-delay bound x minimum
    /// RTT ([`PeakRate::bound`]), and `cap` reads the bound instead of the other
    /// estimates (ours).
    pub bound: Option<f64>,
    /// Added to every queueing delay a bound sample divides by.
    pub bound_margin: Duration,
}

impl Default for BdpJump {
    /// picoquic's constants, with the minimum RTT.
    fn default() -> Self {
        Self {
            fraction: JUMP_FRACTION,
            min_interval: PEAK_RATE_MIN_INTERVAL,
            rtt: JumpRtt::Min,
            train: None,
            train_interval: TRAIN_MIN_INTERVAL,
            cap: None,
            train_fraction: None,
            bound: None,
            bound_margin: BOUND_MARGIN,
        }
    }
}

impl BdpJump {
    /// The window the jump asks for at `peak` bytes per second, with minimum RTT `min`
    /// and smoothed RTT `smoothed`.
    pub fn target(&self, peak: f64, min: Duration, smoothed: Duration) -> u64 {
        let rtt = match self.rtt {
            JumpRtt::Min => min,
            JumpRtt::Smoothed => smoothed,
        };
        (self.fraction * peak * rtt.as_secs_f64()) as u64
    }

    /// The window the jump asks for with the train samples' peak `train_peak` as well:
    /// the larger of [`Self::target`] and `train_fraction` x `train_peak` x minimum RTT.
    pub fn target_with_train(
        &self,
        peak: f64,
        train_peak: f64,
        min: Duration,
        smoothed: Duration,
    ) -> u64 {
        let train = match (self.train, self.train_fraction) {
            (Some(_), Some(f)) => (f * train_peak * min.as_secs_f64()) as u64,
            _ => 0,
        };
        self.target(peak, min, smoothed).max(train)
    }

    /// The window the jump asks for from every estimate `rates` holds: the larger of
    /// [`Self::target_with_train`] and, with `bound`, its share of the queueing-delay
    /// bound x minimum RTT.
    pub fn target_from(&self, rates: &PeakRate, min: Duration, smoothed: Duration) -> u64 {
        let bound = self
            .bound
            .map_or(0, |f| (f * rates.bound() * min.as_secs_f64()) as u64);
        self.target_with_train(rates.peak(), rates.train_peak(), min, smoothed)
            .max(bound)
    }

    /// The largest window the initial slow start grows to at `peak` bytes per second and
    /// minimum RTT `min`, if capped and the rate was measured.
    pub fn ceiling(&self, peak: f64, min: Duration) -> Option<u64> {
        let cap = self.cap?;
        (peak > 0.0).then_some((cap * peak * min.as_secs_f64()) as u64)
    }

    /// [`Self::ceiling`] from the estimate `cap` reads: the queueing-delay bound with
    /// `bound`, else the train samples' peak when trains are measured, else the peak.
    pub fn ceiling_from(&self, rates: &PeakRate, min: Duration) -> Option<u64> {
        let rate = self.bottleneck_rate(rates).unwrap_or_else(|| rates.peak());
        self.ceiling(rate, min)
    }

    /// The bottleneck's rate as `+burst:time` sizes bursts by, bytes per second (0: not
    /// measured): [`Self::bottleneck_rate`]; never the 1 ms peak, which bunched ACKs
    /// inflate.
    pub fn rate_for_bursts(&self, rates: &PeakRate) -> f64 {
        self.bottleneck_rate(rates).unwrap_or(0.0)
    }

    /// The bottleneck's rate, bytes per second, from the estimate this jump measures
    /// besides the 1 ms peak: the queueing-delay bound with `bound`, else the train
    /// samples' peak with `train`; `None` with neither.
    fn bottleneck_rate(&self, rates: &PeakRate) -> Option<f64> {
        if self.bound.is_some() {
            Some(rates.bound())
        } else if self.train.is_some() {
            Some(rates.train_peak())
        } else {
            None
        }
    }

    /// How the queueing-delay bound is sampled, if it is.
    pub fn bound_at(&self, min: Duration) -> Option<Bound> {
        self.bound.map(|_| Bound {
            min_rtt: min,
            margin: self.bound_margin,
        })
    }

    /// The trains measured at minimum RTT `min`, if any.
    pub fn train_at(&self, min: Duration) -> Option<Train> {
        self.train.map(|f| Train {
            length: min.mul_f64(f),
            min_interval: self.train_interval,
        })
    }
}

/// The value of jump option `key` as a finite number that `ok` accepts; otherwise a
/// one-line error saying it must be `what`.
fn number(key: &str, value: &str, ok: impl Fn(f64) -> bool, what: &str) -> Result<f64, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && ok(*v))
        .ok_or_else(|| format!("jump option {key}={value} must be {what}"))
}

/// The value of jump option `key` as milliseconds in (0, 1000].
fn millis(key: &str, value: &str) -> Result<Duration, String> {
    let ms = number(
        key,
        value,
        |ms| ms > 0.0 && ms <= 1000.0,
        "milliseconds in (0, 1000]",
    )?;
    Ok(Duration::from_secs_f64(ms / 1000.0))
}

/// In (0, 1].
fn in_unit(v: f64) -> bool {
    v > 0.0 && v <= 1.0
}

impl SpecPart for BdpJump {
    const NAME: &'static str = "jump";
    const STANDALONE_REFUSAL: &'static str = "has its own startup and takes no jump";

    fn parse_options(opts: &str) -> Result<Self, String> {
        let mut out = Self::default();
        for opt in opts.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            match opt.split_once('=') {
                Some(("fraction", v)) => {
                    out.fraction = number("fraction", v, in_unit, "a number in (0, 1]")?;
                }
                Some(("interval", v)) => out.min_interval = millis("interval", v)?,
                Some(("cap", v)) => {
                    out.cap = Some(number("cap", v, |k| k >= 1.0, "a number of BDPs >= 1")?);
                }
                Some(("train-fraction", v)) => {
                    out.train_fraction =
                        Some(number("train-fraction", v, in_unit, "a number in (0, 1]")?);
                }
                Some(("train-interval", v)) => out.train_interval = millis("train-interval", v)?,
                None if opt == "bound" => out.bound = Some(BOUND_FRACTION),
                Some(("bound", v)) => {
                    out.bound = Some(number(
                        "bound",
                        v,
                        |f| f > 0.0 && f <= MAX_BOUND_FRACTION,
                        "a number in (0, 4]",
                    )?);
                }
                Some(("bound-margin", v)) => out.bound_margin = millis("bound-margin", v)?,
                None if opt == "cap" => out.cap = Some(JUMP_CAP_BDPS),
                None if opt == "train" => out.train = Some(JUMP_TRAIN_RTTS),
                Some(("train", v)) => {
                    out.train = Some(number("train", v, in_unit, "a number of RTTs in (0, 1]")?);
                }
                Some(("rtt", "min")) => out.rtt = JumpRtt::Min,
                Some(("rtt", "smoothed")) => out.rtt = JumpRtt::Smoothed,
                _ => {
                    return Err(format!(
                        "unknown jump option '{opt}'; valid: fraction=F, interval=MS, rtt=min|smoothed, train[=F], cap[=K], train-fraction=F, train-interval=MS, bound[=F], bound-margin=MS"
                    ));
                }
            }
        }
        Ok(out)
    }

    fn options(&self) -> Option<Vec<String>> {
        let mut opts = Vec::new();
        if self.fraction != JUMP_FRACTION {
            opts.push(format!("fraction={}", self.fraction));
        }
        if self.min_interval != PEAK_RATE_MIN_INTERVAL {
            opts.push(format!(
                "interval={}",
                self.min_interval.as_secs_f64() * 1000.0
            ));
        }
        if self.rtt == JumpRtt::Smoothed {
            opts.push("rtt=smoothed".into());
        }
        match self.train {
            Some(JUMP_TRAIN_RTTS) => opts.push("train".into()),
            Some(train) => opts.push(format!("train={train}")),
            None => {}
        }
        match self.cap {
            Some(JUMP_CAP_BDPS) => opts.push("cap".into()),
            Some(cap) => opts.push(format!("cap={cap}")),
            None => {}
        }
        if let Some(f) = self.train_fraction {
            opts.push(format!("train-fraction={f}"));
        }
        if self.train_interval != TRAIN_MIN_INTERVAL {
            opts.push(format!(
                "train-interval={}",
                self.train_interval.as_secs_f64() * 1000.0
            ));
        }
        match self.bound {
            Some(BOUND_FRACTION) => opts.push("bound".into()),
            Some(f) => opts.push(format!("bound={f}")),
            None => {}
        }
        if self.bound_margin != BOUND_MARGIN {
            opts.push(format!(
                "bound-margin={}",
                self.bound_margin.as_secs_f64() * 1000.0
            ));
        }
        Some(opts)
    }
}

impl fmt::Display for BdpJump {
    /// The `+jump[:...]` spec part.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_part(f, self)
    }
}

/// How trains of acknowledgements are measured: each lasts `length`, and a train sample
/// spans at least `min_interval`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Train {
    /// How long a train lasts from its first acknowledgement.
    pub length: Duration,
    /// Shortest interval of a train sample.
    pub min_interval: Duration,
}

/// How the queueing-delay bound is read: delays from minimum RTT `min_rtt`, each with
/// `margin` added.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// The minimum RTT the queueing delays are measured from.
    pub min_rtt: Duration,
    /// Added to every queueing delay.
    pub margin: Duration,
}

/// One sample of the queueing-delay bound: `ahead` bytes left in a burst before a packet
/// whose acknowledgement came `span` after the burst's first packet was sent.
#[derive(Debug, Clone, Copy, PartialEq)]
struct BoundSample {
    ahead: u64,
    span: Duration,
}

impl BoundSample {
    /// The rate it shows, bytes per second: the bytes over the span less the minimum RTT
    /// (the packet's queueing delay plus the time the burst took to send), plus the margin.
    fn rate(&self, bound: Bound) -> f64 {
        let delay = self.span.saturating_sub(bound.min_rtt) + bound.margin;
        self.ahead as f64 / delay.as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

/// A burst of acknowledged packets: sent back to back (no pause over [`BURST_GAP`]),
/// acknowledged in sending order.
#[derive(Debug, Clone, Copy)]
struct Burst {
    /// When its first packet was sent.
    first_sent: Duration,
    /// When its newest acknowledged packet was sent.
    last_sent: Duration,
    /// Bytes acknowledged that were sent in it before its newest acknowledged packet.
    ahead: u64,
    /// Bytes of its newest acknowledged packet.
    last: u64,
}

/// The peak delivery rate, picoquic's way: a sample is the bytes delivered since a
/// reference acknowledgement over the longer of the time since it and the time between
/// the sending of the packets the two acknowledged, taken once that time exceeds the
/// minimum interval; the reference then moves to the current acknowledgement.
///
/// With a train length (`+jump:train=F`, ours), every acknowledgement is also measured
/// against the first one of its train, a train lasting `F` x the minimum RTT: when jitter
/// holds back one acknowledgement and bunches the next ones behind it, the moving
/// reference gives one sample over the gap, the train the whole flight's.
#[derive(Debug, Clone, Default)]
pub struct PeakRate {
    /// Bytes acknowledged so far.
    delivered: u64,
    /// The reference: bytes delivered, when it was acknowledged, when its newest
    /// acknowledged packet was sent.
    reference: Option<Mark>,
    /// The first acknowledgement of the current train, if trains are measured.
    train: Option<Mark>,
    /// Send time of the newest packet acknowledged in the current batch.
    batch_sent: Option<Duration>,
    /// The peak rate, bytes per second.
    peak: f64,
    /// The peak of the train samples alone, bytes per second.
    train_peak: f64,
    /// The burst of the newest acknowledged packet, for the queueing-delay bound.
    burst: Option<Burst>,
    /// Whether the current batch acknowledged a packet of `burst`.
    burst_acked: bool,
    /// When the first batch of acknowledgements ended: packets sent before it (the
    /// handshake's flight, sent before either end had an RTT sample) give no bound.
    first_ack_at: Option<Duration>,
    /// The best samples of the queueing-delay bound so far.
    bound_samples: [Option<BoundSample>; BOUND_SAMPLES],
    /// The queueing-delay bound ([`Self::bound`]) at the latest minimum RTT, bytes per
    /// second.
    bound: f64,
}

/// A point a rate is measured from: bytes delivered, when they were acknowledged, when
/// the newest acknowledged packet was sent.
type Mark = (u64, Duration, Duration);

impl PeakRate {
    /// A packet sent at `sent` carrying `bytes` was acknowledged.
    pub fn on_ack(&mut self, sent: Duration, bytes: u64) {
        self.delivered = self.delivered.saturating_add(bytes);
        self.batch_sent = Some(self.batch_sent.map_or(sent, |s| s.max(sent)));
        self.on_burst_ack(sent, bytes);
    }

    /// Follows the burst of the newest acknowledged packet: a packet sent after the burst's
    /// newest within [`BURST_GAP`] extends it, a later one starts a new burst, an older
    /// one (acknowledged out of order) leaves it alone.
    fn on_burst_ack(&mut self, sent: Duration, bytes: u64) {
        if self.first_ack_at.is_none_or(|first| sent < first) {
            return;
        }
        match self.burst.as_mut() {
            Some(b) if sent < b.last_sent => return,
            Some(b) if sent - b.last_sent <= BURST_GAP => {
                b.ahead = b.ahead.saturating_add(b.last);
                b.last_sent = sent;
                b.last = bytes;
            }
            _ => {
                self.burst = Some(Burst {
                    first_sent: sent,
                    last_sent: sent,
                    ahead: 0,
                    last: bytes,
                })
            }
        }
        self.burst_acked = true;
    }

    /// Takes the queueing-delay bound's sample of a batch that ended at `now`, and reads
    /// the kept samples at the minimum RTT of `bound`. A sample is the bytes that left in
    /// the burst ahead of its newest acknowledged packet over how much later than the
    /// minimum RTT that packet came back plus how long the burst took to send: the
    /// bottleneck cannot have drained them faster, since they were all queued or in flight
    /// ahead of the packet when it reached the bottleneck.
    fn bound_sample(&mut self, now: Duration, bound: Bound) {
        if let Some(b) = self.burst.filter(|_| std::mem::take(&mut self.burst_acked)) {
            let sample = BoundSample {
                ahead: b.ahead,
                span: now.saturating_sub(b.first_sent),
            };
            self.keep_bound_sample(sample, bound);
        }
        self.bound = self
            .bound_samples
            .iter()
            .flatten()
            .map(|s| s.rate(bound))
            .fold(0.0, f64::max);
    }

    /// Keeps `sample` in place of the weakest kept one at `bound`, if it is stronger.
    fn keep_bound_sample(&mut self, sample: BoundSample, bound: Bound) {
        let rate = sample.rate(bound);
        let weakest = self
            .bound_samples
            .iter_mut()
            .min_by(|a, b| {
                let (a, b) = (
                    a.map_or(-1.0, |s| s.rate(bound)),
                    b.map_or(-1.0, |s| s.rate(bound)),
                );
                a.total_cmp(&b)
            })
            .expect("BOUND_SAMPLES is not zero");
        if weakest.is_none_or(|w| w.rate(bound) < rate) {
            *weakest = Some(sample);
        }
    }

    /// The queueing-delay bound so far, bytes per second (0 before the first sample): the
    /// largest rate the bottleneck was shown to drain at, never more than its rate.
    pub fn bound(&self) -> f64 {
        self.bound
    }

    /// A batch of acknowledgements received at `now` ended; returns the peak rate (bytes
    /// per second) if it rose. `train`: how trains are measured, if they are.
    pub fn on_end_acks(
        &mut self,
        now: Duration,
        min_interval: Duration,
        train: Option<Train>,
        bound: Option<Bound>,
    ) -> Option<f64> {
        if let Some(bound) = bound {
            self.bound_sample(now, bound);
        }
        self.first_ack_at.get_or_insert(now);
        let sent = self.batch_sent.take()?;
        let here = (self.delivered, now, sent);
        let mut best = None::<f64>;
        match self.reference {
            None => self.reference = Some(here),
            Some(from) => {
                if let Some(rate) = self.rate_since(from, now, sent, min_interval) {
                    best = Some(rate);
                    self.reference = Some(here);
                }
            }
        }
        if let Some(train) = train {
            match self.train {
                Some(from) if now.saturating_sub(from.1) <= train.length => {
                    if let Some(rate) = self.rate_since(from, now, sent, train.min_interval) {
                        self.train_peak = self.train_peak.max(rate);
                        best = Some(best.map_or(rate, |b| b.max(rate)));
                    }
                }
                _ => self.train = Some(here),
            }
        }
        let rate = best?;
        (rate > self.peak).then(|| {
            self.peak = rate;
            rate
        })
    }

    /// The delivery rate from `from` to an acknowledgement at `now` of a packet sent at
    /// `sent`, if the interval is long enough and the packets are in sending order.
    fn rate_since(
        &self,
        (delivered, acked_at, sent_at): Mark,
        now: Duration,
        sent: Duration,
        min_interval: Duration,
    ) -> Option<f64> {
        if sent < sent_at {
            return None;
        }
        let receive = now.saturating_sub(acked_at);
        if receive <= min_interval {
            return None;
        }
        let interval = receive.max(sent - sent_at);
        Some((self.delivered - delivered) as f64 / interval.as_secs_f64())
    }

    /// The peak rate so far, bytes per second (0 before the first sample).
    pub fn peak(&self) -> f64 {
        self.peak
    }

    /// The peak of the train samples alone, bytes per second (0 before the first).
    pub fn train_peak(&self) -> f64 {
        self.train_peak
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: f64) -> Duration {
        Duration::from_secs_f64(v / 1000.0)
    }

    #[test]
    fn a_burst_measures_the_bottleneck_by_its_acknowledgement_spacing() {
        // 20 packets of 1,250 bytes sent together at t = 0, delivered at 10 Mbit/s
        // (1 ms per packet), one ACK per 2 packets, 300 ms after sending.
        let mut rate = PeakRate::default();
        for ack in 0..10 {
            for _ in 0..2 {
                rate.on_ack(Duration::ZERO, 1250);
            }
            rate.on_end_acks(
                ms(300.0 + 2.0 * f64::from(ack)),
                PEAK_RATE_MIN_INTERVAL,
                None,
                None,
            );
        }
        // Samples over 2 ms: 2 x 1,250 bytes each.
        assert!((rate.peak() - 1_250_000.0).abs() < 1.0, "{}", rate.peak());
        let jump = BdpJump::default();
        assert_eq!(jump.target(rate.peak(), ms(600.0), ms(900.0)), 375_000);
        let smoothed = BdpJump {
            rtt: JumpRtt::Smoothed,
            ..jump
        };
        assert_eq!(smoothed.target(rate.peak(), ms(600.0), ms(900.0)), 562_500);
    }

    #[test]
    fn paced_sending_bounds_the_rate_by_the_send_interval() {
        // ACKs bunched 1.5 ms apart for packets sent 10 ms apart: the send interval rules.
        let mut rate = PeakRate::default();
        rate.on_ack(ms(0.0), 1000);
        rate.on_end_acks(ms(300.0), PEAK_RATE_MIN_INTERVAL, None, None);
        rate.on_ack(ms(10.0), 1000);
        assert_eq!(
            rate.on_end_acks(ms(301.5), PEAK_RATE_MIN_INTERVAL, None, None),
            Some(100_000.0)
        );
        // Intervals at or below the minimum give no sample.
        rate.on_ack(ms(20.0), 1000);
        assert_eq!(
            rate.on_end_acks(ms(302.0), PEAK_RATE_MIN_INTERVAL, None, None),
            None
        );
    }

    #[test]
    fn a_train_measures_a_flight_that_jitter_spread_out() {
        // A flight of 8 x 1,200 bytes sent within 0.4 ms, acknowledged in 4 ACKs of 2
        // packets: jitter delays all but the first by 5.5 ms, and bunches them.
        let flight = |rate: &mut PeakRate, train: Option<Train>| {
            let acks = [300.0, 305.5, 305.6, 305.7];
            for (i, at) in acks.into_iter().enumerate() {
                for p in 0..2 {
                    rate.on_ack(ms(0.05 * (2 * i + p) as f64), 1200);
                }
                rate.on_end_acks(ms(at), PEAK_RATE_MIN_INTERVAL, train, None);
            }
        };
        let mut moving = PeakRate::default();
        flight(&mut moving, None);
        // The moving reference: one sample, the second ACK's 2,400 bytes over the gap.
        assert!(
            (moving.peak() - 2400.0 / 0.0055).abs() < 1.0,
            "{}",
            moving.peak()
        );
        let mut train = PeakRate::default();
        assert_eq!(BdpJump::default().train_at(ms(600.0)), None);
        let length = BdpJump::parse_options("train").unwrap().train_at(ms(600.0));
        assert_eq!(
            length,
            Some(Train {
                length: ms(600.0 * JUMP_TRAIN_RTTS),
                min_interval: TRAIN_MIN_INTERVAL
            })
        );
        flight(&mut train, length);
        // The train: the last three ACKs' 7,200 bytes over 5.7 ms.
        assert!(
            (train.peak() - 7200.0 / 0.0057).abs() < 1.0,
            "{}",
            train.peak()
        );
        assert_eq!(train.train_peak(), train.peak());
        assert_eq!(moving.train_peak(), 0.0);
        // A train ends after its length: the next flight, one RTT later, starts a new one
        // instead of being measured over the idle round trip.
        let before = train.peak();
        train.on_ack(ms(600.0), 1200);
        assert_eq!(
            train.on_end_acks(ms(900.0), PEAK_RATE_MIN_INTERVAL, length, None),
            None
        );
        train.on_ack(ms(600.1), 1200);
        assert_eq!(
            train.on_end_acks(ms(900.05), PEAK_RATE_MIN_INTERVAL, length, None),
            None
        );
        assert_eq!(train.peak(), before);
    }

    #[test]
    fn bunched_acknowledgements_inflate_a_short_sample_not_the_train() {
        // ACKs of 2,400 bytes every 2 ms (1.2 MB/s) for packets sent in one burst; the one
        // due at 4 ms is handled at 5.9 ms, the next at 7 ms.
        let mut rate = PeakRate::default();
        let train = Some(Train {
            length: ms(150.0),
            min_interval: TRAIN_MIN_INTERVAL,
        });
        for at in [0.0, 2.0, 5.9, 7.0, 8.0] {
            rate.on_ack(ms(0.0), 2400);
            rate.on_end_acks(ms(300.0 + at), PEAK_RATE_MIN_INTERVAL, train, None);
        }
        // 5.9 -> 7 ms: 2,400 bytes over 1.1 ms.
        assert!(
            (rate.peak() - 2400.0 / 0.0011).abs() < 1.0,
            "{}",
            rate.peak()
        );
        // The train: 9,600 bytes over the 8 ms since its first ACK at best.
        assert!(
            (rate.train_peak() - 1_200_000.0).abs() < 1.0,
            "{}",
            rate.train_peak()
        );
    }

    #[test]
    fn the_train_fraction_jumps_to_the_trains_estimate_unhalved() {
        let (min, smoothed) = (ms(600.0), ms(900.0));
        let plain = BdpJump::parse_options("train").unwrap();
        // Half of the 3 MB/s peak x 600 ms; the train's 2 MB/s is not used.
        assert_eq!(plain.target_with_train(3e6, 2e6, min, smoothed), 900_000);
        let full = BdpJump::parse_options("train,train-fraction=1").unwrap();
        assert_eq!(full.target_with_train(3e6, 2e6, min, smoothed), 1_200_000);
        // The larger of the two: an inflated 1 ms peak still rules when it is the higher.
        assert_eq!(full.target_with_train(6e6, 2e6, min, smoothed), 1_800_000);
        // Without trains the option has nothing to read.
        let no_train = BdpJump::parse_options("train-fraction=1").unwrap();
        assert_eq!(no_train.target_with_train(3e6, 2e6, min, smoothed), 900_000);
    }

    /// A burst of `packets` x 1,200 bytes sent at once at `sent` (ms) through a
    /// bottleneck of `rate` bytes per second and a 600 ms minimum RTT, acknowledged every
    /// `per_ack` packets: the arrival (ms) of each ACK, and the packets it acknowledges.
    fn burst_acks(sent: f64, packets: u32, per_ack: u32, rate: f64) -> Vec<(f64, u32)> {
        (1..=packets)
            .filter(|p| p % per_ack == 0 || *p == packets)
            .map(|p| (sent + 600.0 + f64::from(p - 1) * 1200.0 / rate * 1000.0, p))
            .collect()
    }

    /// Feeds `acks` (arrival in ms, packets acknowledged so far) of a burst sent at `sent`
    /// to `rate` with the bound read against `min_rtt`.
    /// A rate estimate whose connection received its first ACK at 0 (a handshake).
    fn handshaken() -> PeakRate {
        let mut rates = PeakRate::default();
        rates.on_end_acks(ms(0.0), PEAK_RATE_MIN_INTERVAL, None, None);
        rates
    }

    fn feed(rates: &mut PeakRate, sent: f64, acks: &[(f64, u32)], min_rtt: f64) {
        let bound = BdpJump::parse_options("bound")
            .unwrap()
            .bound_at(ms(min_rtt));
        let mut acked = 0;
        for &(at, upto) in acks {
            for _ in acked..upto {
                rates.on_ack(ms(sent), 1200);
            }
            acked = upto;
            rates.on_end_acks(ms(at), PEAK_RATE_MIN_INTERVAL, None, bound);
        }
    }

    #[test]
    fn the_bound_measures_a_burst_by_its_queueing_delay() {
        // 60 packets through 50 Mbit/s (6.25 MB/s): the last waits 11.33 ms behind 59.
        let mut rates = handshaken();
        feed(&mut rates, 0.0, &burst_acks(0.0, 60, 2, 6.25e6), 600.0);
        let expected = 59.0 * 1200.0 / (0.011328 + 0.001);
        assert!((rates.bound() - expected).abs() < 1.0, "{}", rates.bound());
        assert!(rates.bound() < 6.25e6);
        // The same burst through 1 Gbit/s: 0.57 ms of queue, read with the 1 ms margin.
        let mut fast = handshaken();
        feed(&mut fast, 0.0, &burst_acks(0.0, 60, 2, 125e6), 600.0);
        let expected = 59.0 * 1200.0 / (0.0005664 + 0.001);
        assert!((fast.bound() - expected).abs() < 1.0, "{}", fast.bound());
        let jump = BdpJump::parse_options("bound,cap").unwrap();
        assert_eq!(
            jump.target_from(&fast, ms(600.0), ms(600.0)),
            (expected * 0.6) as u64
        );
        assert_eq!(
            jump.ceiling_from(&fast, ms(600.0)),
            Some((2.0 * expected * 0.6) as u64)
        );
    }

    #[test]
    fn bunched_acknowledgements_do_not_raise_the_bound() {
        // The ACKs of a 50 Mbit/s burst wait 11 ms behind a large packet on the return
        // link, then arrive 0.05 ms apart: their spacing reads 30 x 2,400 bytes over 1.5 ms,
        // 48 MB/s; the bound stays under the bottleneck's 6.25 MB/s.
        let natural = burst_acks(0.0, 60, 2, 6.25e6);
        let bunched: Vec<_> = natural
            .iter()
            .enumerate()
            .map(|(i, &(at, p))| (at.max(611.0 + 0.05 * i as f64), p))
            .collect();
        let mut rates = handshaken();
        feed(&mut rates, 0.0, &bunched, 600.0);
        assert!(
            rates.bound() > 0.0 && rates.bound() < 6.25e6,
            "{}",
            rates.bound()
        );
        // The 1 ms samples of the moving reference are fooled.
        assert!(rates.peak() > 6.25e6, "{}", rates.peak());
    }

    #[test]
    fn kept_samples_are_read_again_as_the_minimum_rtt_falls() {
        // The handshake's RTT is 9 ms above the path's: read against it, a 50 Mbit/s burst
        // looks several times faster. Once the minimum RTT is right, so is the bound.
        let acks = burst_acks(0.0, 60, 2, 6.25e6);
        let mut rates = handshaken();
        feed(&mut rates, 0.0, &acks, 609.0);
        assert!(rates.bound() > 6.25e6, "{}", rates.bound());
        // The next burst's first ACK brings the minimum down to the path's 600 ms.
        feed(&mut rates, 700.0, &acks[..1], 600.0);
        assert!(rates.bound() < 6.25e6, "{}", rates.bound());
    }

    #[test]
    fn a_burst_sent_before_the_first_ack_gives_no_bound() {
        // A server's handshake flight leaves before it has heard from the client; its
        // client's flight is one packet. Neither measures the data direction.
        let mut rates = PeakRate::default();
        feed(&mut rates, 0.0, &burst_acks(0.0, 4, 4, 6.25e6), 600.0);
        assert_eq!(rates.bound(), 0.0);
        // The first flight after it does.
        feed(&mut rates, 700.0, &burst_acks(700.0, 60, 2, 6.25e6), 600.0);
        assert!(rates.bound() > 0.0);
    }

    #[test]
    fn out_of_order_acknowledgements_leave_the_burst_alone() {
        let mut rates = handshaken();
        feed(&mut rates, 10.0, &burst_acks(10.0, 60, 2, 6.25e6), 600.0);
        let before = rates.bound();
        // A packet sent before the burst, acknowledged late: no sample, no new burst.
        let bound = BdpJump::parse_options("bound").unwrap().bound_at(ms(600.0));
        rates.on_ack(ms(5.0), 1200);
        rates.on_end_acks(ms(640.0), PEAK_RATE_MIN_INTERVAL, None, bound);
        assert_eq!(rates.bound(), before);
        // A packet 2 ms after the burst starts a new one: nothing ahead of it yet.
        rates.on_ack(ms(12.0), 1200);
        rates.on_end_acks(ms(641.0), PEAK_RATE_MIN_INTERVAL, None, bound);
        assert_eq!(rates.bound(), before);
    }

    #[test]
    fn options_parse_and_print_back() {
        for text in [
            "",
            "fraction=0.25",
            "interval=2",
            "fraction=1,interval=0.5",
            "rtt=smoothed",
            "train",
            "train=0.1",
            "cap",
            "cap=3,train",
            "train,cap,train-fraction=1",
            "train,train-interval=2",
            "fraction=0.5,train=1",
            "bound",
            "bound=0.5,cap",
            "bound=2,cap=1.5",
            "bound,bound-margin=0.25",
        ] {
            let j = BdpJump::parse_options(text).unwrap();
            let printed = j.to_string();
            let opts = printed
                .strip_prefix("+jump")
                .unwrap()
                .trim_start_matches(':');
            assert_eq!(BdpJump::parse_options(opts), Ok(j), "{text} -> {printed}");
        }
        for bad in [
            "fraction=0",
            "fraction=1.5",
            "interval=0",
            "interval=x",
            "train=0",
            "train=2",
            "cap=0.5",
            "cap=x",
            "train-fraction=0",
            "train-fraction=2",
            "train-interval=0",
            "train-interval=x",
            "bound=0",
            "bound=4.5",
            "bound-margin=0",
            "big",
        ] {
            let e = BdpJump::parse_options(bad).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
        assert_eq!(
            crate::modifiers::split_part("cubic+search+growth:x=3+jump+cr:jump-on-confirm", "jump"),
            (
                "cubic+search+growth:x=3+cr:jump-on-confirm".to_string(),
                Some("")
            )
        );
        assert_eq!(
            crate::modifiers::split_part("cubic+cr:jump-on-confirm", "jump"),
            ("cubic+cr:jump-on-confirm".to_string(), None)
        );
    }
}
