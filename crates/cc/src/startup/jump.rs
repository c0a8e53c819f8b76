//! The start-up's jump ([`crate::jump`]): its estimates, where it stands, its ceiling, and
//! the steps of a batch's end (E2): the raise to the target and the judging of the flight.

use std::time::Duration;

use crate::event::ExitReason;
use crate::jump::{BdpJump, Dispersion, JumpPhase, JumpVerdict, PeakRate, VALIDATE_SPAN_RTTS};

use super::protocol::{Effect, Effects, View};

/// Round trips in a row the ceiling may hold the window on a path that shows no queue before
/// it rises (ours; BBRv3 judges its Startup's plateau over the same three rounds,
/// draft-ietf-ccwg-bbr-06 Sec. 4.3.1.2).
pub const CEILING_RELEASE_ROUNDS: u32 = 3;

/// The jump of one connection's initial slow start.
#[derive(Debug, Clone)]
pub(super) struct Jump {
    /// Its configuration (`+jump:...`).
    config: BdpJump,
    /// The peak delivery rate and the queueing-delay bound it is sized from.
    rates: PeakRate,
    /// Where it stands (validated or not, with `validate`).
    phase: JumpPhase,
    /// Round trips in a row that ended with the window held at the ceiling on a path that
    /// showed no queue.
    unqueued_holds: u32,
    /// Round trips in a row that ended with the window held at the ceiling on a path that
    /// showed a queue.
    queued_holds: u32,
    /// What the ceiling was lifted to after such holds, bytes (0: never).
    lifted: u64,
    /// Whether holds on a path that showed a queue proved it full (`+jump:full`; 0: not),
    /// and then the window they held over `cap` (the BDP it stood for): the ceiling leaves
    /// a queue of `full` x the BDP it reads, not `cap - 1` BDPs, never below that.
    full: u64,
    /// Round trips since the path proved full.
    full_rounds: u32,
    /// The smallest RTT envelope of the round trips since the path proved full, from the
    /// [`CEILING_RELEASE_ROUNDS`]th (its own queue drained by then): the path's RTT now,
    /// which a step up in a LEO path's base RTT has moved above the unloaded RTT.
    full_base: Option<Duration>,
    /// Whether an acknowledgement of the current round trip was application-limited (the
    /// window was not what held the sender: the round says nothing of the ceiling).
    round_app_limited: bool,
    /// Whether a packet sent in the current round trip filled the window.
    round_window_full: bool,
}

impl Jump {
    /// A jump configured by `config`, before any acknowledgement.
    pub(super) fn new(config: BdpJump) -> Self {
        Self {
            config,
            rates: PeakRate::default(),
            phase: JumpPhase::default(),
            unqueued_holds: 0,
            queued_holds: 0,
            lifted: 0,
            full: 0,
            full_rounds: 0,
            full_base: None,
            round_app_limited: false,
            round_window_full: false,
        }
    }

    /// S2: a packet was sent; `window_full`: it left no room for another in the window.
    pub(super) fn on_sent(&mut self, window_full: bool) {
        self.round_window_full |= window_full;
    }

    /// A7-A11: an acknowledgement of the initial slow start, `app_limited` or not (the
    /// ceiling's release reads only rounds the window limited).
    pub(super) fn on_slow_start_ack(&mut self, app_limited: bool) {
        self.round_app_limited |= app_limited;
    }

    /// A2: a packet of `bytes` sent at `sent` was acknowledged: the delivery-rate sample of
    /// the batch, the burst it left in (`bound`) and, while the jump is judged, its flight.
    pub(super) fn on_ack(&mut self, sent: Duration, bytes: u64) {
        self.rates.on_ack(sent, bytes);
        if let JumpPhase::Unvalidated(flight) = &mut self.phase {
            flight.on_ack(sent, bytes);
        }
    }

    /// Whether the window is held while the jump's flight is judged (`validate`).
    pub(super) fn holds(&self) -> bool {
        self.phase.holds()
    }

    /// The largest window the initial slow start may reach under `cap` at `now`: from the
    /// estimate the cap reads or what the path delivered over the latest RTT (see
    /// [`BdpJump::ceiling_from`]), but never below the saved window Careful Resume jumped
    /// to, unless that proved wrong (`View::resumed_window`).
    pub(super) fn ceiling(&self, now: Duration, view: &View) -> Option<u64> {
        // Only a capped jump has a ceiling: the other controllers do not pay for reading
        // the delivery marks on every acknowledgement of their slow start.
        let cap = self.config.cap?;
        let delivered = view.round_trip_rate(now);
        let rtt = view.unloaded_rtt().max(self.full_base.unwrap_or_default());
        let mut ceiling = self.config.ceiling_from(&self.rates, rtt, delivered)?;
        if let Some(headroom) = self.config.full
            && self.full > 0
        {
            ceiling = ((ceiling as f64 * (1.0 + headroom) / cap) as u64).max(self.full);
        }
        Some(ceiling.max(view.resumed_window).max(self.lifted))
    }

    /// E3: a round trip ended. Only a round in which the window held the sender at the
    /// ceiling counts: one in which a packet filled the window and no acknowledgement was
    /// application-limited; any other ends both counts of holds. A held round reads the
    /// path's RTT ([`PathRtt::shows_queue`](crate::path_rtt::PathRtt::shows_queue)): a queue
    /// above the unloaded RTT counts towards a full path ([`Self::on_queued_hold`]), none
    /// towards a lift of the ceiling ([`Self::on_clear_hold`]); on a full path the ceiling
    /// reads the RTT since ([`Self::track_full_base`]).
    pub(super) fn on_round_end(&mut self, now: Duration, view: &mut View) -> Effect {
        let window_limited = std::mem::take(&mut self.round_window_full)
            && !std::mem::take(&mut self.round_app_limited);
        self.track_full_base(view);
        let Some(ceiling) = self.ceiling(now, view) else {
            return Effect::None;
        };
        if !window_limited || view.cwnd < ceiling {
            (self.unqueued_holds, self.queued_holds) = (0, 0);
            return Effect::None;
        }
        if view.path_rtt.shows_queue(view.unloaded_rtt()) {
            self.unqueued_holds = 0;
            return self.on_queued_hold(now, view);
        }
        self.queued_holds = 0;
        self.on_clear_hold(view);
        Effect::None
    }

    /// A round held at the ceiling while the path showed a queue: from the
    /// [`CEILING_RELEASE_ROUNDS`]th in a row (with `full`, once), the path is full; the
    /// window the ceiling holds keeps a standing queue of its own making (up to `cap - 1`
    /// BDP), which slow start, blind to held acknowledgements, would keep until a loss.
    fn on_queued_hold(&mut self, now: Duration, view: &mut View) -> Effect {
        self.queued_holds += 1;
        if self.queued_holds < CEILING_RELEASE_ROUNDS || self.full > 0 || self.config.full.is_none()
        {
            return Effect::None;
        }
        self.queued_holds = 0;
        self.lower_to_the_path(now, view)
    }

    /// A round of a full path ended: from the [`CEILING_RELEASE_ROUNDS`]th, its envelope
    /// reads the path's RTT now.
    fn track_full_base(&mut self, view: &View) {
        if self.full == 0 {
            return;
        }
        self.full_rounds += 1;
        if self.full_rounds >= CEILING_RELEASE_ROUNDS
            && let Some(envelope) = view.path_rtt.envelope()
        {
            self.full_base = Some(self.full_base.map_or(envelope, |b| b.min(envelope)));
        }
    }

    /// A round held at the ceiling while the path showed no queue: nothing on a full path
    /// (the queue its headroom leaves reads as none). Otherwise, from the
    /// [`CEILING_RELEASE_ROUNDS`]th in a row on a path whose envelope is near its minimum,
    /// each lifts the ceiling to `cap` x the window: the estimate it reads is low. A held
    /// window delivers `window / RTT`, and where per-packet jitter keeps the mean RTT near
    /// `cap` x the minimum (a LEO path's is 1.4 x its minimum), `cap` x that rate x the
    /// minimum RTT is hardly larger than the window: the ceiling holds a path that is not
    /// full.
    fn on_clear_hold(&mut self, view: &View) {
        let Some(cap) = self.config.cap else {
            return;
        };
        if self.full > 0 {
            return;
        }
        if view.path_rtt.shows_queue(view.rtt.min) {
            self.unqueued_holds = 0;
            return;
        }
        self.unqueued_holds += 1;
        if self.unqueued_holds >= CEILING_RELEASE_ROUNDS {
            self.lifted = self.lifted.max((cap * view.cwnd as f64) as u64);
        }
    }

    /// A full path (`+jump:full`): the ceiling's headroom falls from `cap` to `full` x the
    /// BDP it reads, never below the window over `cap` (no lift stands), and the window
    /// steps down to it.
    fn lower_to_the_path(&mut self, now: Duration, view: &mut View) -> Effect {
        self.full = (view.cwnd as f64 / self.config.cap.unwrap_or(1.0)) as u64;
        self.lifted = 0;
        match self.ceiling(now, view) {
            Some(ceiling) if ceiling < view.cwnd => {
                let window = ceiling.max(2 * view.mss) as f64;
                view.set_window(window);
                Effect::Window(window)
            }
            _ => Effect::None,
        }
    }

    /// E2: the batch's delivery rate and bound are sampled; unless `may_raise` is false (a
    /// drain or Careful Resume owns the window), the window goes to the jump's target, and
    /// with `validate` a flight that came back is judged.
    pub(super) fn on_end_acks(
        &mut self,
        now: Duration,
        view: &mut View,
        may_raise: bool,
    ) -> Effects {
        let jitter = view.path_rtt.jitter(view.rtt.min, self.config.bound_jitter);
        let bound = self.config.bound_reading(view.rtt.min, jitter);
        self.rates.on_end_acks(now, self.config.min_interval, bound);
        if !may_raise {
            return Effects::NONE;
        }
        match self.phase {
            JumpPhase::Open | JumpPhase::Validated => {
                Effects::new(self.raise_to_target(now, view), Effect::None)
            }
            JumpPhase::Unvalidated(mut flight) => {
                flight.on_end_acks(now);
                let raise = self.raise_to_target(now, view);
                Effects::new(raise, self.judge(now, view, flight))
            }
            JumpPhase::Refused => Effects::NONE,
        }
    }

    /// The window to the jump's target, never past the ceiling or `ssthresh`; with
    /// `validate`, the first raise starts the judging of its flight.
    fn raise_to_target(&mut self, now: Duration, view: &mut View) -> Effect {
        let target = self
            .config
            .target_from(&self.rates, view.rtt.min, view.rtt.smoothed);
        // Never past the ceiling: picoquic's peak rate can be several times the bottleneck's
        // when a thin return link bunches the ACKs.
        let target = self.ceiling(now, view).map_or(target, |c| target.min(c));
        if target <= view.cwnd {
            return Effect::None;
        }
        if self.config.validate.is_some() && self.phase == JumpPhase::Open {
            self.phase = JumpPhase::Unvalidated(Dispersion::new(now));
        }
        raise(view, target)
    }

    /// Judges the jump's `flight` once it has come back over a quarter of a smoothed RTT
    /// ([`Dispersion`]): one that came back as fast as it left raises the window to the
    /// ceiling (a second jump) and lets it grow; one that came back slower ends the initial
    /// slow start with the window at what the path delivered per round trip.
    fn judge(&mut self, now: Duration, view: &mut View, flight: Dispersion) -> Effect {
        let span = view.rtt.smoothed.mul_f64(VALIDATE_SPAN_RTTS);
        let ratio = self.config.validate.unwrap_or(1.0);
        match flight.verdict(span, ratio, self.rates.bound()) {
            None => {
                self.phase = JumpPhase::Unvalidated(flight);
                Effect::None
            }
            Some(JumpVerdict::Pass) => {
                self.phase = JumpPhase::Validated;
                match self.ceiling(now, view) {
                    Some(ceiling) if ceiling > view.cwnd => raise(view, ceiling),
                    _ => Effect::None,
                }
            }
            Some(JumpVerdict::Fail { delivery_rate }) => {
                self.phase = JumpPhase::Refused;
                let delivered = (delivery_rate * view.rtt.latest.as_secs_f64()) as u64;
                let cwnd = delivered.min(view.cwnd);
                Effect::Exit {
                    cwnd,
                    ssthresh: cwnd,
                    reason: ExitReason::JumpRefused,
                    drain: false,
                }
            }
        }
    }

    /// While the flight is judged, the pacing rate it is sent at, bytes per second: no
    /// slower than the bound's rate (quinn-proto's own `1.25 x window / smoothed RTT` when
    /// that is faster), so the flight crosses the path at the rate it is judged against.
    pub(super) fn pacing_rate(&self, window: u64, smoothed: Duration) -> Option<u64> {
        if !self.holds() || smoothed.is_zero() {
            return None;
        }
        let quinn = 1.25 * window as f64 / smoothed.as_secs_f64();
        Some(quinn.max(self.rates.bound()) as u64)
    }

    /// The bottleneck's rate `+burst:time` sizes bursts by, bytes per second (0: not
    /// measured; [`BdpJump::rate_for_bursts`]).
    pub(super) fn rate_for_bursts(&self) -> f64 {
        self.config.rate_for_bursts(&self.rates)
    }
}

/// The window to `target`, bounded by `ssthresh`.
fn raise(view: &mut View, target: u64) -> Effect {
    let window = target.min(view.ssthresh) as f64;
    view.set_window(window);
    Effect::Window(window)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::careful_resume::{CarefulResume, CarefulResumeConfig, Window};
    use crate::controller::RttInfo;
    use crate::delivery::RecentDelivery;
    use crate::jump::FULL_PATH_HEADROOM;
    use crate::path_rtt::PathRtt;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// A round trip of deliveries at 2.5 MB/s, 75 kB every 30 ms up to 600 ms.
    fn delivered_at_2_5_mb_per_s() -> RecentDelivery {
        let mut delivery = RecentDelivery::default();
        for step in 0..=20 {
            delivery.on_ack(if step == 0 { 0 } else { 75_000 });
            delivery.on_end_acks(ms(30 * step), ms(600));
        }
        delivery
    }

    /// A window of `cwnd` bytes, no `ssthresh`.
    fn window(cwnd: u64) -> Window {
        Window {
            cwnd,
            ssthresh: u64::MAX,
            mss: 1200,
            max_window: u64::MAX,
        }
    }

    /// The ceiling of a capped jump with no bound measured, after a round trip of deliveries
    /// at 2.5 MB/s, on a path whose first small flights came back after `first(i)`.
    fn ceiling_after(first: impl Fn(u32) -> u64) -> u64 {
        const IW: u64 = 12_000;
        let mut path_rtt = PathRtt::new(IW);
        for i in 0..32 {
            path_rtt.on_sample(ms(first(i)), IW);
        }
        let delivery = delivered_at_2_5_mb_per_s();
        let cr = CarefulResume::new(CarefulResumeConfig::default(), None, IW);
        let view = View::new(
            window(1_000_000),
            RttInfo::fixed(ms(600)),
            &cr,
            &delivery,
            &path_rtt,
        );
        let jump = Jump::new(BdpJump {
            cap: Some(1.5),
            ..BdpJump::default()
        });
        jump.ceiling(ms(600), &view)
            .expect("a capped jump with a rate")
    }

    /// The ceiling is `cap` x what the path delivered x the RTT the path had before the
    /// connection loaded it: the minimum where the first flights came back at it, their mean
    /// where jitter spread them (half at 600 ms, half at 1,320 ms: 960 ms).
    #[test]
    fn the_ceiling_reads_the_unloaded_rtt() {
        let plain = ceiling_after(|_| 600);
        let jittered = ceiling_after(|i| if i % 2 == 0 { 600 } else { 1320 });
        // 2.5 MB/s x 600 ms x 1.5.
        assert!((2_240_000..2_260_000).contains(&plain), "{plain}");
        let ratio = jittered as f64 / plain as f64;
        assert!((ratio - 1.6).abs() < 0.01, "{plain} -> {jittered}");
    }

    /// `rounds` round trips held at the ceiling (2.25 MB: 1.5 x 2.5 MB/s x 600 ms) by a
    /// window of `cwnd` bytes, on a path whose latest RTTs were `latest` ms after first
    /// flights at 600 ms; what each round's end returned, and the ceiling after them.
    fn held(rounds: u32, full: Option<f64>, cwnd: u64, latest: u64) -> (Vec<Effect>, u64) {
        const IW: u64 = 12_000;
        let mut path_rtt = PathRtt::new(IW);
        for _ in 0..32 {
            path_rtt.on_sample(ms(600), IW);
        }
        for _ in 0..8 {
            path_rtt.on_sample(ms(latest), 100 * IW);
        }
        let delivery = delivered_at_2_5_mb_per_s();
        let cr = CarefulResume::new(CarefulResumeConfig::default(), None, IW);
        let mut view = View::new(
            window(cwnd),
            RttInfo::fixed(ms(600)),
            &cr,
            &delivery,
            &path_rtt,
        );
        let mut jump = Jump::new(BdpJump {
            cap: Some(1.5),
            full,
            ..BdpJump::default()
        });
        let effects = (0..rounds)
            .map(|_| {
                jump.on_sent(true);
                jump.on_slow_start_ack(false);
                jump.on_round_end(ms(600), &mut view)
            })
            .collect();
        let ceiling = jump.ceiling(ms(600), &view).expect("a capped jump");
        (effects, ceiling)
    }

    fn held_rounds(full: Option<f64>, cwnd: u64, latest: u64) -> (Vec<Effect>, u64) {
        held(CEILING_RELEASE_ROUNDS, full, cwnd, latest)
    }

    /// With `full`, the third round held at the ceiling over a queue (800 ms against 600)
    /// steps the window down to `1 + full` x the BDP the ceiling reads, and the ceiling
    /// stays there; never below the window over `cap`. Without a queue, or without `full`,
    /// nothing steps down.
    #[test]
    fn a_ceiling_held_over_a_queue_lowers_to_the_path() {
        let bdp = 1_500_000.0;
        let (effects, ceiling) = held_rounds(Some(FULL_PATH_HEADROOM), 2_250_000, 800);
        let lowered = (bdp * (1.0 + FULL_PATH_HEADROOM)) as u64;
        assert!(
            matches!(effects[..2], [Effect::None, Effect::None]),
            "{effects:?}"
        );
        let Effect::Window(w) = effects[2] else {
            panic!("the third round steps the window down: {effects:?}");
        };
        assert!(
            (w as u64).abs_diff(lowered) < 1_000,
            "{w} against {lowered}"
        );
        assert!(ceiling.abs_diff(lowered) < 1_000, "{ceiling}");
        // A window held above the ceiling never falls below itself over `cap`.
        let (effects, _) = held_rounds(Some(0.0), 3_000_000, 800);
        assert!(
            matches!(effects[2], Effect::Window(w) if w >= 2_000_000.0),
            "{effects:?}"
        );
        // No queue (the RTT at its first flights'), or no `full`: the ceiling holds.
        for (full, latest) in [(Some(FULL_PATH_HEADROOM), 600), (None, 800)] {
            let (effects, ceiling) = held_rounds(full, 2_250_000, latest);
            assert!(
                effects.iter().all(|e| matches!(e, Effect::None)),
                "{effects:?}"
            );
            assert!(ceiling >= 2_240_000, "{ceiling}");
        }
    }

    /// From the third round trip after the path proved full, the ceiling reads the BDP
    /// with the smallest RTT envelope since: where the RTT stays at 800 ms (a step up in
    /// the path's base RTT, not a queue of its own), the ceiling is (1 + 1/16) x 2.5 MB/s
    /// x 800 ms, not x 600 ms.
    #[test]
    fn a_full_path_reads_its_rtt_since() {
        let at = |rtt: f64| (2_500_000.0 * rtt * (1.0 + FULL_PATH_HEADROOM)) as u64;
        let (_, lowered) = held(
            CEILING_RELEASE_ROUNDS,
            Some(FULL_PATH_HEADROOM),
            2_250_000,
            800,
        );
        assert!(lowered.abs_diff(at(0.6)) < 1_000, "{lowered}");
        let (_, since) = held(
            2 * CEILING_RELEASE_ROUNDS,
            Some(FULL_PATH_HEADROOM),
            2_250_000,
            800,
        );
        assert!(
            since.abs_diff(at(0.8)) < 1_000,
            "{since} against {}",
            at(0.8)
        );
    }
}
