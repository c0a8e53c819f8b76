//! The real-time loop the relay and the TUN link share: a link model fed by an I/O
//! thread's events, delivering each packet when the model says it arrives.
//!
//! One thread owns the model, so the model needs no lock and its time only moves forward.
//! It sleeps until the earlier of the next event and the model's next departure, but never
//! past a departure: closer than [`SPIN_THRESHOLD`], it spins instead, since a sleeping
//! thread wakes up to tens of microseconds late (which the delay-error histogram would
//! show).

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The scheduler spins instead of sleeping when the next event is this close.
const SPIN_THRESHOLD: Duration = Duration::from_micros(50);

/// What the relay's and the TUN link's schedulers share: a link model fed by an I/O
/// thread's events, delivering what is due and publishing counters.
pub(crate) trait LinkScheduler {
    type Event;
    /// When the model next has something to do, on the wall clock.
    fn next_event(&self) -> Option<Instant>;
    /// Whether the link was told to stop.
    fn stopped(&self) -> bool;
    fn handle(&mut self, event: Self::Event);
    fn deliver_due(&mut self);
    fn publish(&mut self, force: bool);
}

/// The scheduler loop: waits for the I/O thread's next event or the model's next
/// departure, whichever comes first (sleeping at most 10 ms, and spinning on the channel
/// when a departure is closer than [`SPIN_THRESHOLD`], so as not to oversleep), handles
/// what arrived, delivers what is due and publishes; until told to stop or the I/O
/// thread is gone. Ends with a final publish.
pub(crate) fn run_scheduler<S: LinkScheduler>(s: &mut S, rx: &Receiver<S::Event>) {
    while !s.stopped() {
        let wait = match s.next_event() {
            Some(t) => t.saturating_duration_since(Instant::now()),
            None => Duration::from_millis(10),
        }
        .min(Duration::from_millis(10));
        let first = if wait > SPIN_THRESHOLD {
            match rx.recv_timeout(wait - SPIN_THRESHOLD / 2) {
                Ok(e) => Some(e),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            }
        } else {
            // Close to a departure: spin on the channel rather than risk oversleeping.
            let deadline = Instant::now() + wait;
            loop {
                if let Ok(e) = rx.try_recv() {
                    break Some(e);
                }
                if Instant::now() >= deadline {
                    break None;
                }
                std::hint::spin_loop();
            }
        };
        if let Some(e) = first {
            s.handle(e);
            // Take what else is waiting, but never for long: deliveries must not wait.
            for _ in 0..256 {
                match rx.try_recv() {
                    Ok(e) => s.handle(e),
                    Err(_) => break,
                }
            }
        }
        s.deliver_due();
        s.publish(false);
    }
    s.publish(true);
}
