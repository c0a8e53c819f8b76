//! The start-up's safety valves (issue 38): the jump's flight is judged before the window
//! grows past it (`+jump:validate`), and the first reduction retreats to what the path
//! delivered (`+retreat`). Hand-made ACK timelines: packets of 1,200 bytes, a 600 ms path, a
//! bottleneck of 2.5 MB/s (20 Mbit/s) that serializes a packet in 0.48 ms.

use std::sync::Arc;
use std::time::Duration;

use satquic_cc::{CcEvent, CongestionConfig, Controller, EventLog, ExitReason, RttInfo};

const PACKET: u64 = 1200;
const RTT: Duration = Duration::from_millis(600);
/// 1,200 bytes at 2.5 MB/s.
const SERIALIZE: Duration = Duration::from_micros(480);

fn controller(spec: &str) -> (Controller, Arc<EventLog>) {
    let log = EventLog::new();
    let ctl = spec
        .parse::<CongestionConfig>()
        .unwrap()
        .event_sink(log.clone() as Arc<dyn satquic_cc::EventSink>)
        .build_controller(PACKET)
        .unwrap();
    (ctl, log)
}

/// A sender and the packets it has in flight, acknowledged in order.
struct Path {
    ctl: Controller,
    next_pn: u64,
    in_flight: u64,
    /// The RTT estimates every acknowledgement carries.
    rtt: RttInfo,
}

impl Path {
    fn new(ctl: Controller) -> Self {
        Self {
            ctl,
            next_pn: 0,
            in_flight: 0,
            rtt: RttInfo::fixed(RTT),
        }
    }

    fn send(&mut self, at: Duration) -> (u64, Duration) {
        let pn = self.next_pn;
        self.next_pn += 1;
        self.ctl.on_sent(at, PACKET, pn);
        self.in_flight += PACKET;
        (pn, at)
    }

    /// Acknowledges `packets` (number, send time) at `now`, in one batch.
    fn ack(&mut self, now: Duration, packets: &[(u64, Duration)]) {
        for &(_, sent) in packets {
            self.ctl.on_ack(now, sent, PACKET, false, self.rtt);
            self.in_flight -= PACKET;
        }
        let largest = packets.last().map(|(pn, _)| *pn);
        self.ctl.on_end_acks(now, self.in_flight, largest);
    }

    /// The handshake's ACK at `t0`, then a first flight of 20 packets sent together at `t0`,
    /// acknowledged two by two as the bottleneck drains them: the bound measures about
    /// 2.5 MB/s and the jump takes the window to about rate x 600 ms.
    fn first_flight(&mut self, t0: Duration) {
        self.ctl.on_end_acks(t0, 0, None);
        let flight: Vec<_> = (0..20).map(|_| self.send(t0)).collect();
        for (i, pair) in flight.chunks(2).enumerate() {
            let now = t0 + RTT + SERIALIZE * (2 * i as u32 + 2);
            self.ack(now, pair);
        }
    }

    /// Sends a packet every `SERIALIZE` from `from` for `span`, two per ACK: on an empty
    /// path (`share` 1) each leaves the bottleneck as it arrives and comes back an RTT and
    /// its serialization later; beside a flow that keeps the bottleneck busy (`share` 1/2)
    /// they queue behind its packets and leave one per `SERIALIZE / share`.
    fn paced_flight(&mut self, from: Duration, span: Duration, share: f64) {
        let count = (span.as_micros() / SERIALIZE.as_micros()) as u32;
        let sent: Vec<_> = (0..count)
            .map(|k| self.send(from + SERIALIZE * k))
            .collect();
        for (i, pair) in sent.chunks(2).enumerate() {
            let k = 2 * i as u32 + 1;
            let at = from + RTT + SERIALIZE.div_f64(share) * (k + 1);
            self.ack(at, pair);
        }
    }
}

fn exit_reasons(log: &EventLog) -> Vec<ExitReason> {
    log.events()
        .iter()
        .filter_map(|e| match e {
            CcEvent::SlowStartExit { reason, .. } => Some(*reason),
            _ => None,
        })
        .collect()
}

/// After the jump the window is held (no slow-start growth) until a quarter of a smoothed
/// RTT of the flight sent since has come back; it came back as fast as it left, so the
/// window jumps again, to the ceiling (1.5 x the bound's BDP), and slow start goes on.
#[test]
fn a_flight_that_comes_back_as_it_left_passes_and_the_window_goes_to_the_ceiling() {
    let (ctl, log) = controller("cubic+jump:cap=1.5,bound,validate");
    let mut path = Path::new(ctl);
    let t0 = Duration::from_millis(600);
    path.first_flight(t0);
    let jumped = path.ctl.window();
    assert!((900_000..1_500_000).contains(&jumped), "{jumped}");
    // The jump's flight: a third of an RTT at the bottleneck's rate.
    let from = t0 + RTT + Duration::from_millis(20);
    path.paced_flight(from, RTT / 3, 1.0);
    let window = path.ctl.window();
    assert!(window as f64 > 1.4 * jumped as f64, "{jumped} -> {window}");
    assert!(path.ctl.in_slow_start());
    assert!(exit_reasons(&log).is_empty());
}

/// The same flight coming back at half the bottleneck's rate (another flow keeps the queue
/// busy and takes the other half): the jump is refused, and the initial slow start ends with
/// the window at what the path delivered per round trip: 1.25 MB/s x 600 ms.
#[test]
fn a_flight_that_comes_back_at_half_the_rate_is_refused() {
    let (ctl, log) = controller("cubic+jump:cap=1.5,bound,validate");
    let mut path = Path::new(ctl);
    let t0 = Duration::from_millis(600);
    path.first_flight(t0);
    let jumped = path.ctl.window();
    let from = t0 + RTT + Duration::from_millis(20);
    path.paced_flight(from, RTT / 3, 0.5);
    assert_eq!(exit_reasons(&log), vec![ExitReason::JumpRefused]);
    let window = path.ctl.window();
    assert!(!path.ctl.in_slow_start());
    assert!(
        (700_000..800_000).contains(&window) && window < jumped,
        "{jumped} -> {window}"
    );
}

/// While the flight is judged the window does not grow: acknowledgements of packets sent
/// before the jump add nothing, where without `validate` slow start grows it by what they
/// acknowledge.
#[test]
fn the_window_does_not_grow_while_the_jump_is_judged() {
    let grown = |spec: &str| {
        let (ctl, _) = controller(spec);
        let mut path = Path::new(ctl);
        let t0 = Duration::from_millis(600);
        path.first_flight(t0);
        let jumped = path.ctl.window();
        // Ten more packets sent with the first flight's last ACK, acknowledged one RTT
        // later: sent after the jump, they are its flight's first.
        let at = t0 + RTT + Duration::from_millis(10);
        let late: Vec<_> = (0..10).map(|_| path.send(at)).collect();
        path.ack(at + RTT, &late);
        path.ctl.window() - jumped
    };
    assert_eq!(grown("cubic+jump:cap=1.5,bound,validate"), 0);
    assert_eq!(grown("cubic+jump:cap=1.5,bound"), 10 * PACKET);
}

/// While the jump's flight is judged the pacer sends no slower than the bound's rate; a loss
/// that ends the initial slow start meanwhile leaves the flight unjudged, and the pacing is
/// quinn's own again, not the bound's for the rest of the connection.
#[test]
fn the_judged_flights_pacing_ends_with_the_initial_slow_start() {
    let (ctl, _) = controller("cubic+jump:cap=1.5,bound,validate");
    let mut path = Path::new(ctl);
    let t0 = Duration::from_millis(600);
    path.first_flight(t0);
    assert!(path.ctl.pacing_rate_bytes_per_sec().is_some());
    let at = t0 + RTT + Duration::from_millis(10);
    let sent = path.send(at);
    path.ctl
        .on_congestion_event(at + RTT, sent.1, false, PACKET);
    assert!(!path.ctl.in_slow_start());
    assert_eq!(path.ctl.pacing_rate_bytes_per_sec(), None);
}

/// `+retreat`: a window jumped far past the path meets its first loss; the path delivered
/// 1.25 MB/s for the last round trip, so CUBIC reduces from 750 kB (to 525 kB), not from the
/// window. The next reduction is CUBIC's own, from the window.
#[test]
fn the_first_reduction_retreats_to_what_the_path_delivered() {
    let reduced = |spec: &str| {
        let (mut ctl, _) = controller(spec);
        // 2,000 packets in flight, acknowledged at half the bottleneck's rate for a round
        // trip, then a loss.
        let t0 = Duration::from_millis(600);
        for pn in 0..2000 {
            ctl.on_sent(t0, PACKET, pn);
        }
        let mut now = t0 + RTT;
        for i in (0..1250_usize).step_by(2) {
            now = t0 + RTT + SERIALIZE * 2 * i as u32;
            ctl.on_ack(now, t0, PACKET, false, RttInfo::fixed(RTT));
            ctl.on_ack(now, t0, PACKET, false, RttInfo::fixed(RTT));
            ctl.on_end_acks(now, PACKET * (2000 - i as u64 - 2), Some(i as u64 + 1));
        }
        let before = ctl.congestion_window();
        ctl.on_congestion_event(now, t0, false, PACKET);
        let first = ctl.congestion_window();
        (before, first)
    };
    let (before, retreated) = reduced("cubic+retreat");
    let (same_before, cubic) = reduced("cubic");
    assert_eq!(before, same_before);
    assert_eq!(cubic, (before as f64 * 0.7) as u64);
    // 1,250 packets' bytes over 1.2 s, times the 600 ms RTT: 750 kB; CUBIC takes 0.7 of it.
    assert!(
        (500_000..560_000).contains(&retreated),
        "{before} -> {retreated}"
    );
}

/// A window-limited sender paced at `window / 0.96 s` for `duration` after the first flight,
/// on a path whose packet `pn` takes `latest(pn)` to come back: the window 40 % of the way
/// through, and at the end.
fn paced_on(duration: Duration, latest: impl Fn(u64) -> Duration) -> (u64, u64) {
    use std::collections::BTreeMap;
    let (ctl, _) = controller("cubic+jump:cap=1.5,bound");
    let mut path = Path::new(ctl);
    let t0 = Duration::from_millis(600);
    path.first_flight(t0);
    let mean = Duration::from_millis(960);
    let start = t0 + RTT + Duration::from_millis(10);
    let (end, early) = (start + duration, start + duration.mul_f64(0.4));
    let mut pending = BTreeMap::new();
    let (mut next_send, mut early_window) = (start, None);
    loop {
        let next_ack = pending.keys().next().map(|&(at, _)| at);
        let now = next_ack.map_or(next_send, |a: Duration| a.min(next_send));
        if now >= end {
            break;
        }
        if now >= early {
            early_window.get_or_insert(path.ctl.window());
        }
        if next_ack == Some(now) {
            let ((_, pn), sent) = pending.pop_first().unwrap();
            path.rtt = RttInfo {
                latest: latest(pn),
                smoothed: mean,
                min: RTT,
            };
            path.ack(now, &[(pn, sent)]);
        } else {
            if path.in_flight + PACKET <= path.ctl.window() {
                let (pn, sent) = path.send(now);
                pending.insert((sent + latest(pn), pn), sent);
            }
            next_send = now + mean.mul_f64(PACKET as f64 / path.ctl.window() as f64);
        }
    }
    (early_window.unwrap(), path.ctl.window())
}

/// The ceiling holds a window whose path shows a queue, and rises from a hold of three
/// round trips on a path whose RTT only jitters: half its packets come back at the
/// minimum, half at 2.2 x it (a mean of 1.6 x), so that the held window delivers less than
/// `cap` x the minimum RTT could ever lift the ceiling to.
#[test]
fn the_ceiling_rises_from_a_hold_the_path_shows_no_queue_for() {
    let ten_rounds = Duration::from_millis(9_600);
    let (held, after) = paced_on(ten_rounds, |_| Duration::from_millis(960));
    assert_eq!(held, after, "a queue: held at {held}");
    let (held, after) = paced_on(ten_rounds, |pn| {
        Duration::from_millis(if pn % 2 == 0 { 600 } else { 1320 })
    });
    assert!(
        after as f64 > 1.4 * held as f64,
        "jitter: {held} -> {after}"
    );
}
