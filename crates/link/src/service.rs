//! The bottleneck's server: how fast the head-of-line packet is transmitted.
//!
//! Two kinds:
//! - *fluid* (constant, scheduled or slotted rate, stopped during a slot schedule's
//!   outages, optionally capped by a BoD allocation): the link
//!   transmits `rate_bps` bits per second; a rate change in the middle of a packet applies
//!   to the bits not yet sent. Arithmetic is exact: work is counted in bit-nanoseconds
//!   per second (bits x 10^9), the departure is the first nanosecond at which the packet's
//!   last bit is out, and the sub-nanosecond surplus is credited to the next packet of the
//!   same busy period, so `N` back-to-back packets take exactly `ceil(N x bits / rate)`.
//! - *trace* (mahimahi): discrete delivery opportunities (see [`crate::trace`]).

use crate::bod::Bod;
use crate::slot::{Leg, Quantiles, SlotSchedule};
use crate::spec::{BodSpec, RateSpec};
use crate::units::{NANOS_PER_SEC, Nanos};
use std::collections::VecDeque;

/// Work units per byte: 8 bits x 10^9 (rate in bit/s times nanoseconds).
const WORK_PER_BYTE: u128 = 8 * NANOS_PER_SEC as u128;

/// A piecewise-constant rate in bit/s as a function of time.
#[derive(Debug, Clone)]
pub(crate) enum RateFn {
    Constant(u64),
    Schedule {
        /// Step start times in ns (first is 0), strictly increasing.
        from_ns: Vec<Nanos>,
        rates_bps: Vec<u64>,
        repeat_ns: Option<Nanos>,
    },
    /// A rate drawn per slot of the link's schedule.
    Slotted {
        schedule: Box<SlotSchedule>,
        leg: Leg,
        quantiles: Quantiles,
    },
}

impl RateFn {
    /// The rate function of `spec`; a slotted rate takes the link's schedule (validation
    /// makes sure it has one).
    fn new(spec: &RateSpec, slots: Option<&(SlotSchedule, Leg)>) -> Self {
        match spec {
            RateSpec::Constant { rate_bps } => RateFn::Constant(*rate_bps),
            RateSpec::Schedule {
                steps,
                repeat_every,
            } => RateFn::Schedule {
                from_ns: steps
                    .iter()
                    .map(|s| crate::units::to_nanos(s.from))
                    .collect(),
                rates_bps: steps.iter().map(|s| s.rate_bps).collect(),
                repeat_ns: repeat_every.map(crate::units::to_nanos),
            },
            RateSpec::Slotted { quantiles } => {
                let (schedule, leg) = slots.expect("a slotted rate is built with its schedule");
                RateFn::Slotted {
                    schedule: Box::new(schedule.clone()),
                    leg: *leg,
                    quantiles: Quantiles::of_rates(quantiles),
                }
            }
            RateSpec::MahimahiTrace { .. } => unreachable!("traces use TraceServer"),
        }
    }

    /// (start of the current repetition, offset within it).
    fn split(t: Nanos, repeat_ns: Option<Nanos>) -> (Nanos, Nanos) {
        match repeat_ns {
            Some(p) => {
                let local = t % p;
                (t - local, local)
            }
            None => (0, t),
        }
    }

    pub(crate) fn at(&self, t: Nanos) -> u64 {
        match self {
            RateFn::Constant(r) => *r,
            RateFn::Schedule {
                from_ns,
                rates_bps,
                repeat_ns,
            } => {
                let (_, local) = Self::split(t, *repeat_ns);
                let i = from_ns.partition_point(|&f| f <= local);
                rates_bps[i.saturating_sub(1)]
            }
            RateFn::Slotted {
                schedule,
                leg,
                quantiles,
            } => schedule.rate_bps(*leg, quantiles, schedule.clock().index(t)),
        }
    }

    /// The first step boundary strictly after `t`.
    pub(crate) fn next_change_after(&self, t: Nanos) -> Option<Nanos> {
        match self {
            RateFn::Constant(_) => None,
            RateFn::Schedule {
                from_ns, repeat_ns, ..
            } => {
                let (cycle_start, local) = Self::split(t, *repeat_ns);
                let i = from_ns.partition_point(|&f| f <= local);
                if i < from_ns.len() {
                    Some(cycle_start.saturating_add(from_ns[i]))
                } else {
                    repeat_ns.map(|p| cycle_start.saturating_add(p))
                }
            }
            RateFn::Slotted { schedule, .. } => Some(schedule.next_boundary_after(t)),
        }
    }
}

/// The outages of a link's slot schedule, which stop a fluid server whatever its rate.
#[derive(Debug, Clone)]
pub(crate) struct Outages(Box<SlotSchedule>);

impl Outages {
    /// The outages of `slots`, if its schedule has any.
    fn of(slots: Option<&(SlotSchedule, Leg)>) -> Option<Self> {
        slots
            .filter(|(s, _)| s.has_outages())
            .map(|(s, _)| Outages(Box::new(s.clone())))
    }

    /// The end of the outage `t` falls in, if any.
    fn end(&self, t: Nanos) -> Option<Nanos> {
        self.0.outage_end(t)
    }

    /// The next time the outage state may change after `t`: the end of the current
    /// outage, else the next boundary (which may start one).
    fn next_change_after(&self, t: Nanos) -> Nanos {
        self.end(t).unwrap_or_else(|| self.0.next_boundary_after(t))
    }
}

/// What a change event did, for the ground-truth record.
pub(crate) struct ChangeOutcome {
    /// New BoD allocation, if a grant took effect.
    pub(crate) new_allocation_bps: Option<u64>,
}

/// Constant/scheduled rate, optionally capped by BoD.
#[derive(Debug, Clone)]
pub(crate) struct FluidServer {
    rate: RateFn,
    /// The slot schedule's outages, if it has any: no service during them.
    outages: Option<Outages>,
    bod: Option<Bod>,
    /// Time up to which the head packet's service has been accounted.
    clock: Nanos,
    /// Work (bits x 10^9) still to do for the head packet.
    head_remaining: u128,
    /// Effective rate since `clock`, bit/s.
    current_rate_bps: u64,
    /// Next schedule step after `clock` (valid while busy).
    next_step: Option<Nanos>,
}

impl FluidServer {
    /// The link's rate at `t` before any BoD allocation: 0 during an outage.
    fn link_rate(&self, t: Nanos) -> u64 {
        if self.outages.as_ref().is_some_and(|o| o.end(t).is_some()) {
            0
        } else {
            self.rate.at(t)
        }
    }

    /// The first time after `t` at which [`Self::link_rate`] may change.
    fn next_link_change_after(&self, t: Nanos) -> Option<Nanos> {
        min_opt(
            self.rate.next_change_after(t),
            self.outages.as_ref().map(|o| o.next_change_after(t)),
        )
    }

    /// Bits the link can serve in `[from, to)` at [`Self::link_rate`].
    fn bits_between(&self, from: Nanos, to: Nanos) -> u128 {
        let mut bits = 0u128;
        let mut t = from;
        while t < to {
            let end = self.next_link_change_after(t).unwrap_or(to).min(to);
            bits += u128::from(self.link_rate(t)) * u128::from(end - t) / NANOS_PER_SEC as u128;
            t = end;
        }
        bits
    }

    fn effective_rate(&self, t: Nanos) -> u64 {
        let base = self.link_rate(t);
        match &self.bod {
            Some(b) => base.min(b.allocation_bps()),
            None => base,
        }
    }

    #[inline]
    fn next_change(&self, busy: bool) -> Option<Nanos> {
        let bod = self.bod.as_ref().and_then(|b| b.next_event());
        let step = if busy { self.next_step } else { None };
        min_opt(bod, step)
    }

    #[inline]
    fn head_finish(&self) -> Option<Nanos> {
        if self.head_remaining == 0 {
            return Some(self.clock);
        }
        if self.current_rate_bps == 0 {
            return None;
        }
        // The work of one packet fits in 64 bits (a 64 KiB packet is ~5 x 10^14), and a
        // 64-bit division is many times cheaper than a 128-bit one; the simulator asks for
        // this at every event. Same quotient either way.
        let need = match u64::try_from(self.head_remaining) {
            Ok(work) => work.div_ceil(self.current_rate_bps),
            Err(_) => u64::try_from(self.head_remaining.div_ceil(self.current_rate_bps as u128))
                .unwrap_or(u64::MAX),
        };
        Some(self.clock.saturating_add(need))
    }

    /// Accounts service from `clock` to `t` at the current rate.
    #[inline]
    fn account(&mut self, t: Nanos, busy: bool) {
        if t <= self.clock {
            return;
        }
        if busy {
            let served = self.current_rate_bps as u128 * (t - self.clock) as u128;
            self.head_remaining = self.head_remaining.saturating_sub(served);
        }
        self.clock = t;
    }

    /// The head packet departs at `t` (its finish time); returns the surplus work.
    fn depart(&mut self, t: Nanos) -> u128 {
        let served = self.current_rate_bps as u128 * t.saturating_sub(self.clock) as u128;
        let surplus = served.saturating_sub(self.head_remaining);
        self.clock = self.clock.max(t);
        self.head_remaining = 0;
        surplus
    }

    fn refresh(&mut self, t: Nanos) {
        self.current_rate_bps = self.effective_rate(t);
        self.next_step = self.next_link_change_after(t);
    }
}

/// Mahimahi delivery opportunities.
#[derive(Debug, Clone)]
pub(crate) struct TraceServer {
    /// Opportunity times within one repetition, ns.
    times_ns: Vec<Nanos>,
    period_ns: Nanos,
    opportunity_bytes: u64,
    /// Index of the next unused opportunity (counting across repetitions).
    cursor: u128,
    /// Time of the opportunity whose unused bytes are `leftover`.
    current_time: Nanos,
    /// Unused bytes of the opportunity at `current_time`.
    leftover: u64,
    /// Bytes of the head packet still to transmit.
    head_remaining: u64,
}

impl TraceServer {
    fn opportunity_time(&self, index: u128) -> Nanos {
        let n = self.times_ns.len() as u128;
        let cycle = index / n;
        let pos = (index % n) as usize;
        let t = cycle * self.period_ns as u128 + self.times_ns[pos] as u128;
        u64::try_from(t).unwrap_or(u64::MAX)
    }

    /// Index of the first opportunity at or after `t`.
    fn seek(&self, t: Nanos) -> u128 {
        let cycle = (t / self.period_ns) as u128;
        let within = t % self.period_ns;
        if within == 0 && cycle > 0 {
            // The previous repetition's last timestamps (== period) fall exactly on `t`.
            let at_end = self.times_ns.partition_point(|&x| x < self.period_ns);
            if at_end < self.times_ns.len() {
                return (cycle - 1) * self.times_ns.len() as u128 + at_end as u128;
            }
        }
        let pos = self.times_ns.partition_point(|&x| x < within);
        cycle * self.times_ns.len() as u128 + pos as u128
    }

    fn opportunities_needed(&self) -> u64 {
        (self.head_remaining - self.leftover).div_ceil(self.opportunity_bytes)
    }

    fn head_finish(&self) -> Nanos {
        if self.head_remaining <= self.leftover {
            self.current_time
        } else {
            let m = self.opportunities_needed() as u128;
            self.opportunity_time(self.cursor + m - 1)
        }
    }

    fn depart(&mut self) {
        if self.head_remaining <= self.leftover {
            self.leftover -= self.head_remaining;
        } else {
            let m = self.opportunities_needed();
            let index = self.cursor + m as u128 - 1;
            self.current_time = self.opportunity_time(index);
            self.leftover = self.leftover + m * self.opportunity_bytes - self.head_remaining;
            self.cursor = index + 1;
        }
        self.head_remaining = 0;
    }
}

/// The server of one direction.
#[derive(Debug, Clone)]
pub(crate) enum Server {
    Fluid(FluidServer),
    Trace(TraceServer),
}

impl Server {
    pub(crate) fn new(
        spec: &RateSpec,
        bod: Option<&BodSpec>,
        seed: u64,
        slots: Option<&(SlotSchedule, Leg)>,
    ) -> Self {
        match spec {
            RateSpec::MahimahiTrace {
                timestamps_ms,
                opportunity_bytes,
                ..
            } => Server::Trace(TraceServer {
                times_ns: timestamps_ms.iter().map(|ms| ms * 1_000_000).collect(),
                period_ns: timestamps_ms.last().copied().unwrap_or(1).max(1) * 1_000_000,
                opportunity_bytes: u64::from(*opportunity_bytes).max(1),
                cursor: 0,
                current_time: 0,
                leftover: 0,
                head_remaining: 0,
            }),
            _ => {
                let mut s = FluidServer {
                    rate: RateFn::new(spec, slots),
                    outages: Outages::of(slots),
                    bod: bod.map(|b| Bod::new(b, spec.nominal_rate_bps(), seed)),
                    clock: 0,
                    head_remaining: 0,
                    current_rate_bps: 0,
                    next_step: None,
                };
                s.refresh(0);
                Server::Fluid(s)
            }
        }
    }

    /// When the head packet will have departed if nothing changes (None: never, rate 0).
    #[inline]
    pub(crate) fn head_finish(&self) -> Option<Nanos> {
        match self {
            Server::Fluid(f) => f.head_finish(),
            Server::Trace(t) => Some(t.head_finish()),
        }
    }

    /// Next time the service rate or the BoD state changes.
    #[inline]
    pub(crate) fn next_change(&self, busy: bool) -> Option<Nanos> {
        match self {
            Server::Fluid(f) => f.next_change(busy),
            Server::Trace(_) => None,
        }
    }

    /// Processes the change event(s) at `t` (`t` = [`Self::next_change`]).
    pub(crate) fn apply_change(&mut self, t: Nanos, busy: bool) -> ChangeOutcome {
        let mut out = ChangeOutcome {
            new_allocation_bps: None,
        };
        if let Server::Fluid(f) = self {
            f.account(t, busy);
            if let Some(b) = &mut f.bod {
                if b.next_event() == Some(t) {
                    out.new_allocation_bps = b.apply(t);
                }
            }
            f.refresh(t);
        }
        out
    }

    /// Accounts service up to `t` (no event in between).
    #[inline]
    pub(crate) fn account(&mut self, t: Nanos, busy: bool) {
        if let Server::Fluid(f) = self {
            f.account(t, busy);
        }
    }

    /// The queue was empty; a packet of `size_bytes` arrives at `t`.
    pub(crate) fn start_busy(&mut self, t: Nanos, size_bytes: u32) {
        match self {
            Server::Fluid(f) => {
                f.clock = t;
                f.head_remaining = size_bytes as u128 * WORK_PER_BYTE;
                f.refresh(t);
            }
            Server::Trace(s) => {
                s.cursor = s.seek(t);
                s.current_time = t;
                s.leftover = 0;
                s.head_remaining = u64::from(size_bytes);
            }
        }
    }

    /// The head departs at `t`; if `next` is the size of the packet behind it, that
    /// packet starts service at once (with any surplus of the departed one).
    pub(crate) fn depart(&mut self, t: Nanos, next: Option<u32>) {
        match self {
            Server::Fluid(f) => {
                let surplus = f.depart(t);
                if let Some(size) = next {
                    f.head_remaining = (size as u128 * WORK_PER_BYTE).saturating_sub(surplus);
                }
            }
            Server::Trace(s) => {
                s.depart();
                match next {
                    Some(size) => s.head_remaining = u64::from(size),
                    // mahimahi: an opportunity's bytes are lost once the queue is empty.
                    None => s.leftover = 0,
                }
            }
        }
    }

    /// Records an offered packet for the BoD measurement.
    pub(crate) fn record_arrival(&mut self, t: Nanos, size_bytes: u32) {
        if let Server::Fluid(FluidServer { bod: Some(b), .. }) = self {
            b.record_arrival(t, size_bytes);
        }
    }

    /// Current service rate in bit/s (trace: None).
    pub(crate) fn current_rate_bps(&self, t: Nanos) -> Option<u64> {
        match self {
            Server::Fluid(f) => Some(f.effective_rate(t)),
            Server::Trace(_) => None,
        }
    }

    /// The link's rate at `t` before any BoD allocation (trace: None).
    pub(crate) fn link_rate_bps(&self, t: Nanos) -> Option<u64> {
        match self {
            Server::Fluid(f) => Some(f.link_rate(t)),
            Server::Trace(_) => None,
        }
    }

    /// Bits the link can serve in `[from, to)` before any BoD allocation (trace: None).
    pub(crate) fn bits_between(&self, from: Nanos, to: Nanos) -> Option<u128> {
        match self {
            Server::Fluid(f) => Some(f.bits_between(from, to)),
            Server::Trace(_) => None,
        }
    }

    /// Current BoD allocation.
    pub(crate) fn allocation_bps(&self) -> Option<u64> {
        match self {
            Server::Fluid(FluidServer { bod: Some(b), .. }) => Some(b.allocation_bps()),
            _ => None,
        }
    }

    /// Initial BoD allocation history entry (time 0).
    pub(crate) fn initial_allocation(&self) -> Option<u64> {
        self.allocation_bps()
    }
}

#[inline]
pub(crate) fn min_opt(a: Option<Nanos>, b: Option<Nanos>) -> Option<Nanos> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// A ring of recent arrivals for the BoD measurement window.
pub(crate) type ArrivalLog = VecDeque<(Nanos, u64)>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::RateStep;
    use std::time::Duration;

    #[test]
    fn schedule_lookup_and_repeat() {
        let spec = RateSpec::Schedule {
            steps: vec![
                RateStep {
                    from: Duration::ZERO,
                    rate_bps: 10,
                },
                RateStep {
                    from: Duration::from_nanos(100),
                    rate_bps: 20,
                },
            ],
            repeat_every: Some(Duration::from_nanos(300)),
        };
        let r = RateFn::new(&spec, None);
        assert_eq!(r.at(0), 10);
        assert_eq!(r.at(99), 10);
        assert_eq!(r.at(100), 20);
        assert_eq!(r.at(299), 20);
        assert_eq!(r.at(300), 10);
        assert_eq!(r.at(450), 20);
        assert_eq!(r.next_change_after(0), Some(100));
        assert_eq!(r.next_change_after(100), Some(300));
        assert_eq!(r.next_change_after(350), Some(400));
    }

    #[test]
    fn fluid_head_finish_is_the_128_bit_quotient_rounded_up() {
        let server = |head_remaining: u128, rate_bps: u64| FluidServer {
            rate: RateFn::new(&RateSpec::Constant { rate_bps }, None),
            outages: None,
            bod: None,
            clock: 1_000,
            head_remaining,
            current_rate_bps: rate_bps,
            next_step: None,
        };
        let exact = |work: u128, rate: u64| 1_000 + work.div_ceil(u128::from(rate)) as u64;
        // 1500 bytes at 10 Mbit/s: 1.2 ms, and one unit of work more rounds up.
        let packet = 1500 * WORK_PER_BYTE;
        assert_eq!(
            server(packet, 10_000_000).head_finish(),
            Some(1_000 + 1_200_000)
        );
        assert_eq!(
            server(packet + 1, 10_000_000).head_finish(),
            Some(1_000 + 1_200_001)
        );
        for (work, rate) in [
            (packet, 7),
            (u128::from(u64::MAX), 3),
            (u128::from(u64::MAX) + 1, 3),
            (u128::from(u64::MAX) * 1_000, 1_000_000_007),
        ] {
            assert_eq!(
                server(work, rate).head_finish(),
                Some(exact(work, rate)),
                "{work}"
            );
        }
        // Beyond representable time the finish saturates.
        assert_eq!(server(u128::MAX, 1).head_finish(), Some(u64::MAX));
        assert_eq!(server(packet, 0).head_finish(), None);
    }

    #[test]
    fn trace_seek() {
        let s = TraceServer {
            times_ns: vec![1_000_000, 1_000_000, 3_000_000],
            period_ns: 3_000_000,
            opportunity_bytes: 1500,
            cursor: 0,
            current_time: 0,
            leftover: 0,
            head_remaining: 0,
        };
        assert_eq!(s.seek(0), 0);
        assert_eq!(s.seek(1_000_000), 0);
        assert_eq!(s.seek(1_000_001), 2);
        assert_eq!(s.seek(3_000_000), 2);
        assert_eq!(s.seek(3_000_001), 3);
        assert_eq!(s.opportunity_time(3), 4_000_000);
        assert_eq!(s.opportunity_time(5), 6_000_000);
    }
}
