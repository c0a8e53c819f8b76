//! A jump of the window towards the path's bandwidth-delay product during the initial slow
//! start, and what keeps it from overshooting when the path is not empty.
//!
//! On a long, fast path the first acknowledgements already tell the sender how fast the
//! bottleneck drains. picoquic uses this (`picoquic_estimate_max_path_bandwidth` in
//! `frames.c`, `picoquic_cc_update_target_cwin_estimation` in `cc_common.c`): it keeps the
//! *peak* delivery rate measured over intervals longer than 1 ms, each rate being the bytes
//! delivered over the longer of the acknowledgement interval and the send interval of the
//! acknowledged packets, and while in slow start it raises the window to half the peak rate
//! times an RTT. [`BdpJump`] is that rule with its constants named, and three options of
//! ours:
//!
//! | constant | value | source |
//! |---|---|---|
//! | [`JUMP_FRACTION`] | 1/2 | picoquic: `min_win = max_win / 2` |
//! | [`PEAK_RATE_MIN_INTERVAL`] | 1 ms | picoquic: `PICOQUIC_MAX_BANDWIDTH_TIME_INTERVAL_MIN` |
//! | [`JumpRtt`] | minimum RTT (`rtt=min`) | picoquic's BBR long-RTT startup: `bbr_state->min_rtt`; its CUBIC and NewReno: `smoothed_rtt` (`rtt=smoothed`) |
//! | [`BOUND_FRACTION`] | off; with `bound`, 1 | ours ([`PeakRate::bound`]) |
//! | [`BOUND_MARGIN`] | 1 ms (`bound-margin=MS`) | ours |
//! | [`JITTER_PER_STEP`] | 1 mean step (`bound-jitter=K`, 0: off); none within 1/32 of the minimum RTT | ours ([`crate::path_rtt`]) |
//! | [`BOUND_SAMPLES`] | 4 | ours |
//! | [`BURST_GAP`] | 1 ms | ours |
//! | [`JUMP_CAP_BDPS`] | off; with `cap`, 2 | ours, BBR's Startup cwnd gain |
//! | [`VALIDATE_RATIO`] | off; with `validate`, 0.8 | ours ([`Dispersion`]) |
//! | [`VALIDATE_SPAN_RTTS`] | 1/4 | ours |
//! | [`FULL_PATH_HEADROOM`] | off; with `full`, 1/16 | ours ([`crate::path_rtt`]'s queue threshold, halved) |
//!
//! Spec part
//! `+jump[:fraction=F,interval=MS,rtt=min|smoothed,cap[=K],bound[=F],bound-margin=MS,bound-jitter=K,validate[=R],full[=F]]`.
//! The jump only raises the window during the initial slow start, never while Careful
//! Resume holds it or a drain steps it down, and leaves the exit to the slow start.
//! quinn-proto paces the larger window at `1.25 x cwnd / smoothed RTT`, so the jump is
//! spread over a round trip rather than sent as a burst; its own bursts are so small on a
//! long path (10 datagrams at 600 ms) that the ACKs after the initial window measure that
//! pacing, not the bottleneck, which is what `+burst` ([`crate::burst`]) is for.
//!
//! **The RTT.** The default is the minimum RTT, the pipe's own: a smoothed RTT inflated by
//! a queue multiplies the jump by that queue (on `thesis-asym-99`, where the ACKs queue on
//! a thin return link, it made the jump overshoot; BENCHMARKS.md, "Start-up mechanisms").
//!
//! **The bound** (`bound[=F]`, ours) replaces the peak rate: the window jumps to `F` x the
//! queueing-delay bound x the minimum RTT, and the ceiling and `+burst:time` read the bound
//! too. A packet that left in a burst behind `B` bytes and came back `w` later than the
//! path's RTT waited behind those bytes at the bottleneck, so the bottleneck drains at least
//! `B / w` ([`PeakRate::bound`]). Acknowledgements that are late (a delayed ACK, an ACK
//! queued on a thin return link) only lengthen `w`, so unlike the spacing of
//! acknowledgements, which a thin return link bunches, the bound is not raised by them, and
//! it needs no minimum train length: a first flight measures a 1 Gbit/s path as well as a
//! 10 Mbit/s one. The path's RTT is not known, only the smallest RTT of a data packet, and
//! that packet waited behind its own burst's bytes too: a sample is read against that
//! reference and credits only the bytes beyond those it waited behind, and a batch that comes
//! back sooner than the reference becomes the reference instead of a sample (another flow's
//! queue drained, or the reference's own burst inflated it): so on a FIFO bottleneck of
//! constant rate the bound never exceeds the bottleneck's rate, on stock quinn-proto as on
//! the patched one (the reference is the controller's own, not quinn's estimator, which
//! stock quinn-proto updates after the controller sees an ACK). The margin
//! ([`BOUND_MARGIN`]) absorbs the reference's own ACK delay, which the controller cannot see:
//! where that delay exceeds the margin (a receiver that holds the first ACK of a flight) or
//! the bottleneck's rate changes (bandwidth on demand, a LEO slot), the bound can read above
//! the rate, and the validation below is what then keeps the window from following it. The
//! path's own jitter is not counted as queueing (`bound-jitter=K`, [`JITTER_PER_STEP`]: what
//! its first small flights' RTTs are above the minimum, no more than K x their mean step
//! from one sample to the next, and none within 1/32 of the minimum, [`crate::path_rtt`]):
//! the reference is the luckiest packet, so every sample's delay holds the jitter it did
//! not draw, and on a LEO path with up to 14 ms of it each way the bound read a fifth of
//! the bottleneck's rate. A packet on a FIFO wire waits for the largest draw of those ahead
//! of it, so a burst's sample still reads at most the rate unless its packets drew less
//! than the path's usual jitter. The best few samples are kept and read again as the reference moves ([`BOUND_SAMPLES`]);
//! packets sent before the first acknowledgement give no sample (a server's handshake
//! flight is a burst its client's does not match).
//!
//! **The ceiling** (`cap[=K]`, ours): the initial slow start stops growing the window at
//! `K` x the estimated BDP and holds it there while the estimate does not rise; the jump
//! never goes past it either. The slow start's heuristic (SEARCH, HyStart++) sees the held
//! acknowledgements as application-limited, so a hold is not mistaken for the path's
//! plateau. It keeps the window from overfilling a queue a SEARCH exit would come too late
//! for (a 1-BDP buffer at 600 ms: qir-sat), and lifts as a bandwidth-on-demand link grants
//! more.
//!
//! **A full path** (`full[=F]`, ours, with `cap`; off, and not in the `satellite`
//! profile): a window the ceiling holds keeps a standing queue of up to `cap - 1` BDP,
//! and slow start, which reads held acknowledgements
//! as application-limited, would hold it there until a loss: 300 ms on a 600 ms path,
//! beside another flow the queue that flow's start-up meets. When the ceiling has held the
//! window for [`CEILING_RELEASE_ROUNDS`](crate::startup::CEILING_RELEASE_ROUNDS) round trips
//! in a row, limited by the window, while the path's RTT showed a queue above its unloaded
//! RTT ([`crate::path_rtt`]), the path is full: the ceiling's headroom falls from `cap` to
//! `1 + F` times the BDP it reads (never below the window it held over `cap`, the BDP that
//! window stood for), and the window steps down to it; slow start goes on, so a path whose
//! rate rises is still followed. From the third round trip after, the BDP the ceiling
//! reads takes the smallest RTT envelope since (the path's RTT once its own queue drained)
//! where that is above the unloaded RTT: a LEO path whose base RTT stepped up is not held
//! below its BDP. It stays off: on LEO a base-RTT step still reads as a queue, and some
//! points finish later (docs/history/benchmarks-journal.md, "A ceiling held over a queue").
//!
//! **Validation** (`validate[=R]`, ours): any rate a burst measures is the bottleneck's,
//! not the share other traffic leaves, and the minimum RTT of a path whose queue another
//! flow keeps standing includes that queue: beside such a flow the jump lands a BDP and a
//! queue's worth of packets on a full path. So after it jumps, the window does not grow
//! (and the floor does not raise it) until the flight sent since has come back over a
//! quarter of a smoothed RTT ([`VALIDATE_SPAN_RTTS`]), paced meanwhile at no less than the
//! bound's rate; it passes if it came back at least `R` as fast as it left or at `R` of the
//! bound ([`Dispersion`]), and the window then jumps to the ceiling and grows; otherwise the
//! path is shared, and the initial slow start ends with the window at what the path
//! delivered per round trip (`jump-refused`). Whether the flight came back as it left is
//! read so that per-packet jitter does not refuse it ([`VALIDATE_RTT_BATCHES`]). What it
//! cannot see is a path that fills only
//! after it passed (another flow's start-up, or one whose queue was draining when the
//! flight crossed): `+retreat` ([`crate::retreat`]) answers the losses that follow.

mod rates;
mod validate;

use std::fmt;
use std::time::Duration;

use crate::modifiers::{SpecPart, write_part};
pub use crate::path_rtt::JITTER_PER_STEP;

pub use rates::{Bound, PeakRate};
pub use validate::{Dispersion, JumpVerdict, VALIDATE_RTT_BATCHES};

/// Share of the estimated bandwidth-delay product the window jumps to (picoquic: 1/2).
pub const JUMP_FRACTION: f64 = 0.5;

/// Shortest acknowledgement interval a delivery-rate sample is taken over (picoquic's
/// `PICOQUIC_MAX_BANDWIDTH_TIME_INTERVAL_MIN`, 1 ms): shorter ones are too coarse.
pub const PEAK_RATE_MIN_INTERVAL: Duration = Duration::from_millis(1);

/// Share of the queueing-delay bound's BDP the window jumps to with `+jump:bound` (ours):
/// the bound does not exceed the bottleneck's rate, so it needs no halving.
pub const BOUND_FRACTION: f64 = 1.0;

/// Largest `bound=F`: the window may jump to at most four times the bound's BDP (a
/// `cap` below that still holds it).
pub const MAX_BOUND_FRACTION: f64 = 4.0;

/// Added to every queueing delay a bound sample divides by (`+jump:bound`, ours): it
/// absorbs an error of the reference RTT (its ACK's delay, jitter, a scheduler on real
/// sockets) of up to this much, at the cost of underestimating short bursts: a 72 KB
/// first flight through 1 Gbit/s queues for 0.58 ms and reads as 365 Mbit/s.
pub const BOUND_MARGIN: Duration = Duration::from_millis(1);

/// Largest `bound-jitter=K`: four mean steps of the path's unloaded RTT samples.
pub const MAX_BOUND_JITTER: f64 = 4.0;

/// How many of the best bound samples are kept, to be read again as the reference moves
/// (`+jump:bound`, ours).
pub const BOUND_SAMPLES: usize = 4;

/// Longest pause between the sending of two packets of one burst (`+jump:bound`, ours):
/// a longer pause starts a new burst.
pub const BURST_GAP: Duration = Duration::from_millis(1);

/// How far the initial slow start grows the window with `+jump:cap` (ours), in estimated
/// bandwidth-delay products (rate x minimum RTT): BBR's Startup cwnd gain of 2
/// (draft-ietf-ccwg-bbr Sec. 5.3.1.1, `BBR.DefaultCwndGain` in Startup; `bbr3`'s
/// `STARTUP_CWND_GAIN`): a BDP in flight and at most one more queued at the bottleneck.
/// Beyond it, growth only fills the queue towards the loss that ends slow start.
pub const JUMP_CAP_BDPS: f64 = 2.0;

/// How long the flight sent after the jump must have been acknowledged for before the jump
/// is judged (`+jump:validate`, ours), in smoothed RTTs: long enough that a few ACKs
/// delayed by the receiver's timer (25 ms with the profile's ACK frequency) or bunched on
/// the return link barely move the ratio, short enough to judge within the round trip
/// after the jump.
pub const VALIDATE_SPAN_RTTS: f64 = 0.25;

/// How fast the jump's flight must come back (`+jump:validate`, ours), as a share of the
/// speed it left at or of the bound's rate: on a path the flight has to itself, a quarter
/// RTT of it paced at the bound's rate comes back at the bound's rate or faster, bursts of
/// `+burst:time=10` stretching it by a few percent; beside one flow that keeps the
/// bottleneck busy it comes back at about half.
pub const VALIDATE_RATIO: f64 = 0.8;

/// The queue the ceiling leaves once holds proved the path full (`+jump:full=F`, ours), as a
/// share of the BDP it reads: half the queue [`crate::path_rtt`] reads as one
/// ([`crate::path_rtt::QUEUE_FRACTION`]), so the window it holds shows none.
pub const FULL_PATH_HEADROOM: f64 = crate::path_rtt::QUEUE_FRACTION / 2.0;

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
    /// If set, the initial slow start does not grow the window past this many times the
    /// estimated bandwidth-delay product (the bound with `bound`, else the peak rate, x the
    /// minimum RTT; ours).
    pub cap: Option<f64>,
    /// If set, the window jumps to this share of the queueing-delay bound x minimum RTT
    /// ([`PeakRate::bound`]) instead of picoquic's share of the peak rate, and `cap` and
    /// `+burst:time` read the bound (ours).
    pub bound: Option<f64>,
    /// Added to every queueing delay a bound sample divides by.
    pub bound_margin: Duration,
    /// If set, the jump is validated before the window grows again, its flight passing if
    /// it comes back at least this fast ([`Dispersion`]; ours).
    pub validate: Option<f64>,
    /// If set (with `cap`), the ceiling's headroom once its holds proved the path full,
    /// as a share of the BDP it reads (see the module docs; ours).
    pub full: Option<f64>,
    /// How many mean steps between the path's successive unloaded RTT samples are its own
    /// jitter, which a bound sample's delay does not count ([`crate::path_rtt`]; 0: none,
    /// as before; ours).
    pub bound_jitter: f64,
}

impl Default for BdpJump {
    /// picoquic's constants, with the minimum RTT.
    fn default() -> Self {
        Self {
            fraction: JUMP_FRACTION,
            min_interval: PEAK_RATE_MIN_INTERVAL,
            rtt: JumpRtt::Min,
            cap: None,
            bound: None,
            bound_margin: BOUND_MARGIN,
            validate: None,
            full: None,
            bound_jitter: JITTER_PER_STEP,
        }
    }
}

impl BdpJump {
    /// The window picoquic's rule asks for at `peak` bytes per second, with minimum RTT
    /// `min` and smoothed RTT `smoothed`.
    pub fn target(&self, peak: f64, min: Duration, smoothed: Duration) -> u64 {
        let rtt = match self.rtt {
            JumpRtt::Min => min,
            JumpRtt::Smoothed => smoothed,
        };
        (self.fraction * peak * rtt.as_secs_f64()) as u64
    }

    /// The window the jump asks for from the estimates `rates` holds: with `bound`, its
    /// share of the queueing-delay bound x minimum RTT; otherwise [`Self::target`].
    pub fn target_from(&self, rates: &PeakRate, min: Duration, smoothed: Duration) -> u64 {
        match self.bound {
            Some(f) => (f * rates.bound() * min.as_secs_f64()) as u64,
            None => self.target(rates.peak(), min, smoothed),
        }
    }

    /// The largest window the initial slow start grows to on a path whose RTT before it was
    /// loaded is `min` (the minimum, or a jittery path's mean: [`crate::path_rtt`]), if
    /// capped and a rate was measured: `cap` x the larger of [`Self::bottleneck_rate`] and
    /// `delivered_rate` (bytes per second the path delivered over the latest round trip)
    /// x `min`. What the path delivered is a rate it carries: where jitter keeps the
    /// bound low (a sample's delay then includes the jitter), a window held at the
    /// bound's ceiling would otherwise never fill the path, and the path's deliveries at
    /// that window lift the ceiling until they stop rising.
    pub fn ceiling_from(
        &self,
        rates: &PeakRate,
        min: Duration,
        delivered_rate: f64,
    ) -> Option<u64> {
        let cap = self.cap?;
        let rate = self.bottleneck_rate(rates).max(delivered_rate);
        (rate > 0.0).then_some((cap * rate * min.as_secs_f64()) as u64)
    }

    /// The bottleneck's rate as the ceiling reads it, bytes per second (0: not measured):
    /// the queueing-delay bound with `bound`, else the peak rate.
    pub fn bottleneck_rate(&self, rates: &PeakRate) -> f64 {
        match self.bound {
            Some(_) => rates.bound(),
            None => rates.peak(),
        }
    }

    /// The bottleneck's rate as `+burst:time` sizes bursts by, bytes per second (0: not
    /// measured): the queueing-delay bound with `bound`; never the 1 ms peak, which
    /// bunched ACKs inflate.
    pub fn rate_for_bursts(&self, rates: &PeakRate) -> f64 {
        self.bound.map_or(0.0, |_| rates.bound())
    }

    /// How the queueing-delay bound is read, if it is measured, with the connection's
    /// minimum RTT `connection_min` and the path's own jitter `jitter` (as
    /// [`Self::bound_jitter`] reads it).
    pub fn bound_reading(&self, connection_min: Duration, jitter: Duration) -> Option<Bound> {
        self.bound.map(|_| Bound {
            margin: self.bound_margin,
            connection_min,
            jitter,
        })
    }
}

/// Where the start-up jump stands.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum JumpPhase {
    /// It has not jumped, or it jumped without `validate` (it may jump again as its
    /// estimate grows).
    #[default]
    Open,
    /// It jumped; the window follows the jump's estimate but does not grow past it until
    /// the flight is judged.
    Unvalidated(Dispersion),
    /// The flight came back as fast as it left: the window went to the ceiling and grows.
    Validated,
    /// It came back slower: the initial slow start ended at what the path delivered.
    Refused,
}

impl JumpPhase {
    /// Whether the window is held (no growth, no floor) while the jump is judged.
    pub fn holds(&self) -> bool {
        matches!(self, Self::Unvalidated(_))
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
                Some(("rtt", "min")) => out.rtt = JumpRtt::Min,
                Some(("rtt", "smoothed")) => out.rtt = JumpRtt::Smoothed,
                None if opt == "cap" => out.cap = Some(JUMP_CAP_BDPS),
                Some(("cap", v)) => {
                    out.cap = Some(number("cap", v, |k| k >= 1.0, "a number of BDPs >= 1")?);
                }
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
                None if opt == "validate" => out.validate = Some(VALIDATE_RATIO),
                Some(("validate", v)) => {
                    out.validate = Some(number("validate", v, in_unit, "a ratio in (0, 1]")?);
                }
                Some(("bound-jitter", v)) => {
                    out.bound_jitter = number(
                        "bound-jitter",
                        v,
                        |k| (0.0..=MAX_BOUND_JITTER).contains(&k),
                        "a number of steps in [0, 4]",
                    )?;
                }
                None if opt == "full" => out.full = Some(FULL_PATH_HEADROOM),
                Some(("full", v)) => {
                    out.full = Some(number(
                        "full",
                        v,
                        |f| (0.0..=1.0).contains(&f),
                        "a share of the BDP in [0, 1]",
                    )?);
                }
                _ => {
                    return Err(format!(
                        "unknown jump option '{opt}'; valid: fraction=F, interval=MS, rtt=min|smoothed, cap[=K], bound[=F], bound-margin=MS, bound-jitter=K, validate[=R], full[=F]"
                    ));
                }
            }
        }
        if out.full.is_some() && out.cap.is_none() {
            return Err("jump option full lowers the ceiling: add cap".into());
        }
        if out.validate.is_some() && out.bound.is_none() {
            return Err(
                "jump option validate judges the flight against the bound: add bound".into(),
            );
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
        match self.cap {
            Some(JUMP_CAP_BDPS) => opts.push("cap".into()),
            Some(cap) => opts.push(format!("cap={cap}")),
            None => {}
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
        match self.validate {
            Some(VALIDATE_RATIO) => opts.push("validate".into()),
            Some(r) => opts.push(format!("validate={r}")),
            None => {}
        }
        match self.full {
            Some(FULL_PATH_HEADROOM) => opts.push("full".into()),
            Some(f) => opts.push(format!("full={f}")),
            None => {}
        }
        if self.bound_jitter != JITTER_PER_STEP {
            opts.push(format!("bound-jitter={}", self.bound_jitter));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: f64) -> Duration {
        Duration::from_secs_f64(v / 1000.0)
    }

    #[test]
    fn picoquics_rule_jumps_to_half_the_peak_rate_times_the_rtt() {
        let jump = BdpJump::default();
        // 1.25 MB/s x 600 ms / 2.
        assert_eq!(jump.target(1_250_000.0, ms(600.0), ms(900.0)), 375_000);
        let smoothed = BdpJump {
            rtt: JumpRtt::Smoothed,
            ..jump
        };
        assert_eq!(smoothed.target(1_250_000.0, ms(600.0), ms(900.0)), 562_500);
        // Without `bound` the ceiling reads the peak rate; bursts read nothing.
        let capped = BdpJump::parse_options("cap").unwrap();
        assert_eq!(capped.rate_for_bursts(&PeakRate::default()), 0.0);
        assert_eq!(
            capped.ceiling_from(&PeakRate::default(), ms(600.0), 0.0),
            None
        );
        // What the path delivered lifts a ceiling no estimate set: 1 MB/s x 600 ms x 2.
        assert_eq!(
            capped.ceiling_from(&PeakRate::default(), ms(600.0), 1e6),
            Some(1_200_000)
        );
    }

    #[test]
    fn options_parse_and_print_back() {
        for text in [
            "",
            "fraction=0.25",
            "interval=2",
            "fraction=1,interval=0.5",
            "rtt=smoothed",
            "cap",
            "cap=3",
            "bound",
            "bound=0.5,cap",
            "bound=2,cap=1.5",
            "bound,bound-margin=0.25",
            "cap=1.5,bound,validate",
            "bound,validate=0.7",
            "bound,bound-jitter=0",
            "bound,bound-jitter=2.5",
        ] {
            let j = BdpJump::parse_options(text).unwrap();
            let printed = j.to_string();
            let opts = printed
                .strip_prefix("+jump")
                .unwrap()
                .trim_start_matches(':');
            assert_eq!(BdpJump::parse_options(opts), Ok(j), "{text} -> {printed}");
        }
        assert_eq!(BdpJump::default().bound_jitter, JITTER_PER_STEP);
        assert_eq!(
            BdpJump::parse_options("bound-jitter=0")
                .unwrap()
                .bound_jitter,
            0.0
        );
        for bad in [
            "fraction=0",
            "fraction=1.5",
            "interval=0",
            "interval=x",
            "cap=0.5",
            "cap=x",
            "bound=0",
            "bound=4.5",
            "bound-margin=0",
            "bound-jitter=-1",
            "bound-jitter=5",
            "bound-jitter=x",
            "validate",
            "bound,validate=0",
            "bound,validate=1.5",
            "train",
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
