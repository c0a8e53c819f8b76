//! What the UDP relay and the TUN link model in real time: a [`Path`] and, optionally, a
//! sender cap in front of its down direction.
//!
//! The cap is the seeds' token bucket at the server's interface (seed 000 Sec. 4.7:
//! 200 Mbit/s, 1.5 s of queue; [`ShaperSpec`]), placed where the simulator places it:
//! server -> client packets cross the cap first and enter the link's down direction when
//! they leave it. With it, a real-time run reproduces what `satquic sim` runs by default
//! on links slower than the cap, and an external QUIC or TCP binary crosses the same two
//! stages as satquic does in the simulator.

use std::time::Duration;

use satquic_link::{Admission, Delivered, Direction, GroundTruthConfig, LinkSpec, Path};
use satquic_run::scenario::ShaperSpec;

use crate::NetError;
use crate::relay::DirectionSnapshot;

/// Seed stream of the cap (it has no random process; the seed only keeps its packet ids
/// apart from the path's).
const CAP_SEED_STREAM: u64 = 0x5e4d_e2ca;

/// A path with an optional sender cap before its down direction.
pub struct Model<T> {
    pub path: Path<T>,
    cap: Option<Direction<T>>,
}

impl<T> Model<T> {
    /// Builds the path of `spec` (seeded by `seed`) and the cap, if any; errors are the
    /// model's own, as usage errors.
    pub fn new(
        spec: &LinkSpec,
        seed: u64,
        cap: Option<&ShaperSpec>,
        occupancy_resolution: Duration,
    ) -> Result<Self, NetError> {
        let usage = |e: satquic_link::LinkError| NetError::Usage(e.to_string());
        let path = Path::with_ground_truth(
            spec,
            seed,
            GroundTruthConfig {
                packet_log: false,
                occupancy_resolution,
            },
        )
        .map_err(usage)?;
        let cap = cap
            .map(|c| c.direction(seed ^ CAP_SEED_STREAM))
            .transpose()
            .map_err(|e| NetError::Usage(format!("sender cap: {e}")))?;
        Ok(Model { path, cap })
    }

    /// The model of a relay or TUN link: none without a link (forwarding at once), which
    /// leaves a sender cap nothing to stand in front of (a usage error).
    pub fn of(
        link: Option<&LinkSpec>,
        seed: u64,
        cap: Option<&ShaperSpec>,
        occupancy_resolution: Duration,
    ) -> Result<Option<Self>, NetError> {
        match (link, cap) {
            (None, Some(_)) => Err(NetError::Usage(
                "--sender-cap needs a link model (--link or --preset)".into(),
            )),
            (None, None) => Ok(None),
            (Some(spec), cap) => Self::new(spec, seed, cap, occupancy_resolution).map(Some),
        }
    }

    /// The earliest time anything in the model is due.
    pub fn poll_timeout(&self) -> Option<Duration> {
        let cap = self.cap.as_ref().and_then(Direction::poll_timeout);
        match (self.path.poll_timeout(), cap) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A packet of `size` link bytes arrives at `at`: down packets at the cap (if any),
    /// up packets at the link. Returns the link's admission when the packet entered the
    /// link itself (not the cap): what per-flow accounting counts as the bottleneck's.
    pub fn enqueue(
        &mut self,
        down: bool,
        at: Duration,
        size: u32,
        payload: T,
    ) -> Option<Admission> {
        let (dir, at_link) = match (down, self.cap.as_mut()) {
            (true, Some(cap)) => (cap, false),
            (true, None) => (&mut self.path.down, true),
            (false, _) => (&mut self.path.up, true),
        };
        let admission = dir.enqueue(at, size, payload);
        at_link.then_some(admission)
    }

    /// Hands every packet due by `now` to `forward(down, packet)`: first what left the
    /// cap enters the down direction at the time it left, then both directions deliver.
    pub fn deliver_due(&mut self, now: Duration, forward: impl FnMut(bool, Delivered<T>)) {
        self.deliver_due_noting(now, |_| (), &mut Vec::new(), forward);
    }

    /// [`Self::deliver_due`], noting in `dropped` (as `key(packet)` and the time) each
    /// packet that left the cap and that the link's down direction dropped.
    pub fn deliver_due_noting<K>(
        &mut self,
        now: Duration,
        key: impl Fn(&T) -> K,
        dropped: &mut Vec<(K, Duration)>,
        mut forward: impl FnMut(bool, Delivered<T>),
    ) {
        if let Some(cap) = self.cap.as_mut() {
            while let Some(p) = cap.poll_deliver(now) {
                let k = key(&p.payload);
                let admission = self.path.down.enqueue(p.arrival, p.size_bytes, p.payload);
                if !admission.is_queued() {
                    dropped.push((k, p.arrival));
                }
            }
        }
        while let Some(p) = self.path.down.poll_deliver(now) {
            forward(true, p);
        }
        while let Some(p) = self.path.up.poll_deliver(now) {
            forward(false, p);
        }
    }

    /// Brings the model to `now` and copies its counters and queue sizes into the
    /// snapshots the relay and the TUN link publish (`cap` stays default without a cap).
    pub(crate) fn refresh(
        &mut self,
        now: Duration,
        down: &mut DirectionSnapshot,
        up: &mut DirectionSnapshot,
        cap: &mut DirectionSnapshot,
    ) {
        let dirs = [
            (Some(&mut self.path.down), down),
            (Some(&mut self.path.up), up),
            (self.cap.as_mut(), cap),
        ];
        for (dir, snapshot) in dirs {
            if let Some(dir) = dir {
                dir.handle_timeout(now);
                snapshot.stats = dir.stats().clone();
                snapshot.queue_bytes = dir.queue_bytes();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo_with_cap(cap: Option<&ShaperSpec>) -> Model<u32> {
        let spec = satquic_link::presets::lookup("geo-viasat").unwrap();
        Model::new(&spec, 1, cap, Duration::from_secs(1)).unwrap()
    }

    /// Sends `n` packets of 1,500 bytes down at once; their arrival times, once the
    /// model is idle.
    fn burst(model: &mut Model<u32>, n: u32) -> Vec<Duration> {
        for i in 0..n {
            model.enqueue(true, Duration::ZERO, 1500, i);
        }
        let mut arrivals = Vec::new();
        while let Some(t) = model.poll_timeout() {
            model.deliver_due(t, |down, p| {
                assert!(down);
                arrivals.push(p.arrival);
            });
        }
        arrivals
    }

    #[test]
    fn a_cap_slower_than_the_link_spaces_packets_at_its_rate() {
        // geo-viasat's down direction is 150 Mbit/s; a 10 Mbit/s cap in front of it
        // spaces 1,500-byte packets 1.2 ms apart, and the link's delay comes on top.
        let cap = ShaperSpec {
            rate_bps: 10_000_000,
            latency: Duration::from_secs(1),
        };
        let capped = burst(&mut geo_with_cap(Some(&cap)), 20);
        let plain = burst(&mut geo_with_cap(None), 20);
        assert_eq!(capped.len(), 20);
        let gap = capped[19] - capped[18];
        assert_eq!(gap, Duration::from_micros(1200), "{capped:?}");
        assert!(
            plain[19] - plain[18] < Duration::from_micros(100),
            "{plain:?}"
        );
        // The first packet waits for its own serialisation at the cap, then crosses the link.
        assert_eq!(capped[0], plain[0] + Duration::from_micros(1200));
    }

    #[test]
    fn the_cap_queue_drops_what_exceeds_its_latency() {
        // 10 Mbit/s x 100 ms = 125 kB of queue (above the 64 KiB minimum): of 200
        // packets of 1,500 bytes at once, about 83 fit and the rest are dropped at the cap.
        let cap = ShaperSpec {
            rate_bps: 10_000_000,
            latency: Duration::from_millis(100),
        };
        let mut model = geo_with_cap(Some(&cap));
        let got = burst(&mut model, 200).len() as u64;
        let (mut down, mut up, mut capped) = Default::default();
        model.refresh(Duration::from_secs(5), &mut down, &mut up, &mut capped);
        let dropped = capped.stats.dropped_total().packets;
        assert!((80..=90).contains(&got), "{got} delivered");
        assert_eq!(got + dropped, 200);
        assert_eq!(down.stats.dropped_total().packets, 0);
    }
}
