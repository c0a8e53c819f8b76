use crate::Instant;

#[derive(Debug, Copy, Clone, Ord, PartialOrd, Eq, PartialEq)]
pub(crate) enum Timer {
    /// When to send an ack-eliciting probe packet or declare unacked packets lost
    LossDetection = 0,
    /// When to close the connection after no activity
    Idle = 1,
    /// When the close timer expires, the connection has been gracefully terminated.
    Close = 2,
    /// When keys are discarded because they should not be needed anymore
    KeyDiscard = 3,
    /// When to give up on validating a new path to the peer
    PathValidation = 4,
    /// When to send a `PING` frame to keep the connection alive
    KeepAlive = 5,
    /// When pacing will allow us to send a packet
    Pacing = 6,
    /// When to invalidate old CID and proactively push new one via NEW_CONNECTION_ID frame
    PushNewCid = 7,
    /// When to send an immediate ACK if there are unacked ack-eliciting packets of the peer
    MaxAckDelay = 8,
}

impl Timer {
    pub(crate) const VALUES: [Self; 9] = [
        Self::LossDetection,
        Self::Idle,
        Self::Close,
        Self::KeyDiscard,
        Self::PathValidation,
        Self::KeepAlive,
        Self::Pacing,
        Self::PushNewCid,
        Self::MaxAckDelay,
    ];
}

/// A table of data associated with each distinct kind of `Timer`
///
/// satquic patch 8: the table keeps its earliest deadline, so `next_timeout` (asked by the
/// caller after every event) does not scan the table; `set` and `stop` rescan only when
/// they move the deadline that was the earliest.
#[derive(Debug, Copy, Clone, Default)]
pub(crate) struct TimerTable {
    data: [Option<Instant>; 10],
    /// The earliest deadline in `data`.
    next: Option<Instant>,
}

impl TimerTable {
    pub(super) fn set(&mut self, timer: Timer, time: Instant) {
        let old = self.data[timer as usize].replace(time);
        match self.next {
            Some(next) if time > next => {
                if old == Some(next) {
                    self.next = self.earliest();
                }
            }
            _ => self.next = Some(time),
        }
    }

    pub(super) fn get(&self, timer: Timer) -> Option<Instant> {
        self.data[timer as usize]
    }

    pub(super) fn stop(&mut self, timer: Timer) {
        let old = self.data[timer as usize].take();
        if old.is_some() && old == self.next {
            self.next = self.earliest();
        }
    }

    pub(super) fn next_timeout(&self) -> Option<Instant> {
        self.next
    }

    pub(super) fn is_expired(&self, timer: Timer, after: Instant) -> bool {
        self.data[timer as usize].is_some_and(|x| x <= after)
    }

    fn earliest(&self) -> Option<Instant> {
        self.data.iter().filter_map(|&x| x).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Duration;

    /// satquic patch 8: the kept deadline is always the minimum of the table, whatever
    /// the order of sets (earlier, later, equal) and stops.
    #[test]
    fn next_timeout_is_the_earliest_deadline() {
        let start = Instant::now();
        let mut table = TimerTable::default();
        assert_eq!(table.next_timeout(), None);
        // A fixed pseudo-random walk (64-bit LCG) over timers, deadlines and stops.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for step in 0..20_000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let timer = Timer::VALUES[(state >> 33) as usize % Timer::VALUES.len()];
            // Few distinct deadlines, so equal deadlines in several timers are common.
            let at = start + Duration::from_millis((state >> 40) % 8);
            if (state >> 20) % 3 == 0 {
                table.stop(timer);
            } else {
                table.set(timer, at);
            }
            assert_eq!(table.next_timeout(), table.earliest(), "step {step}");
        }
    }
}
