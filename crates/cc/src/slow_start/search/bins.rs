//! SEARCH's bins: their duration from the first RTT sample, advancing to the bin an
//! ACK falls in (skipped bins filled), and the reset after a gap without ACKs.

use std::time::Duration;

use super::{Search, SearchVersion};

impl Search {
    pub(super) fn cumulative(&self) -> bool {
        self.config.version != SearchVersion::V2
    }

    pub(super) fn slot(ring: &[u64], i: u64) -> usize {
        (i % ring.len() as u64) as usize
    }

    pub(super) fn initialize(&mut self, now: Duration, rtt: Duration) {
        self.initial_rtt = rtt;
        let window = rtt.as_secs_f64() * self.config.window_factor.max(0.0);
        let bin_nanos = self.config.clock.bin_nanos(window, self.config.w());
        self.bin_duration = Duration::from_nanos(bin_nanos.min(1e18) as u64);
        self.bin_end = now.saturating_add(self.bin_duration);
        self.acked_bins.fill(0);
        self.sent_bins.fill(0);
        if self.cumulative() {
            self.acked_bins[0] = self.acked_total;
        }
        if let Some(first) = self.sent_bins.first_mut() {
            *first = self.sent_total;
        }
        self.curr = Some(0);
    }

    /// Advances to the bin containing `now`. Returns the new current index, or `None` if
    /// the bin boundary was not crossed or a reset happened.
    pub(super) fn advance(&mut self, now: Duration, rtt: Duration, curr: u64) -> Option<u64> {
        if now <= self.bin_end {
            return None;
        }
        let bin = self.bin_duration.as_nanos();
        let passed = ((now - self.bin_end).as_nanos() / bin + 1).min(u128::from(u32::MAX)) as u64;
        if let Some(limit) = self.config.missed_bins_reset {
            // quicly: `(now - bin_end) / bin_time > NUM_BINS`, then a fresh start at this
            // ACK, whose bytes fill the new bin 0.
            if self.config.version == SearchVersion::V2 && passed - 1 > u64::from(limit) {
                self.initialize(now, rtt);
                return None;
            } else if self.config.version != SearchVersion::V2 && passed > u64::from(limit) {
                self.restart_bins();
                return None;
            }
        }
        let new = curr + passed;
        // Skipped bins saw no delivery: zero (per-bin rings) or the last total (cumulative).
        let acked_fill = if self.cumulative() {
            self.acked_bins[Self::slot(&self.acked_bins, curr)]
        } else {
            0
        };
        let start = (curr + 1).max(new.saturating_sub(self.acked_bins.len() as u64));
        for i in start..new {
            let s = Self::slot(&self.acked_bins, i);
            self.acked_bins[s] = acked_fill;
        }
        let s = Self::slot(&self.acked_bins, new);
        self.acked_bins[s] = if self.cumulative() {
            self.acked_total
        } else {
            0
        };
        if !self.sent_bins.is_empty() {
            let sent_fill = self.sent_bins[Self::slot(&self.sent_bins, curr)];
            let start = (curr + 1).max(new.saturating_sub(self.sent_bins.len() as u64));
            for i in start..new {
                let s = Self::slot(&self.sent_bins, i);
                self.sent_bins[s] = sent_fill;
            }
            let s = Self::slot(&self.sent_bins, new);
            self.sent_bins[s] = self.sent_total;
        }
        self.bin_end = self
            .bin_end
            .saturating_add(self.bin_duration.saturating_mul(passed as u32));
        self.curr = Some(new);
        Some(new)
    }

    /// Forgets the bins but keeps counting bytes: SEARCH re-initializes on the next ACK.
    pub(super) fn restart_bins(&mut self) {
        self.curr = None;
        self.acked_total = 0;
        self.sent_total = 0;
    }
}
