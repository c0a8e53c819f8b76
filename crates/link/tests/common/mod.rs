//! Test helpers: a toy ACK-clocked slow-start sender driving a `Path`, and RTT analysis
//! (binning, detrending, a plain DFT).

#![allow(dead_code)]

use satquic_link::{LinkSpec, Path};
use std::time::Duration;

/// Data packet size of the toy sender, bytes.
pub const DATA_BYTES: u32 = 1200;
/// ACK size, bytes.
pub const ACK_BYTES: u32 = 50;
/// Initial window, packets.
pub const INITIAL_WINDOW_PACKETS: u64 = 10;

#[derive(Debug, Clone, Copy)]
pub enum Msg {
    Data { sent_at: Duration },
    Ack { data_sent_at: Duration },
}

/// What a toy run produced.
pub struct ToyRun {
    /// (time the ACK reached the sender, RTT of the acked packet).
    pub rtt_samples: Vec<(Duration, Duration)>,
    /// When the down direction's BoD allocation first reached the plan rate.
    pub full_allocation_at: Option<Duration>,
    /// First congestion drop on the down direction.
    pub first_congestion_drop: Option<Duration>,
    /// Capacity point of the down direction (at the first drop or the end).
    pub capacity_at: Option<Duration>,
    /// BoD allocation changes.
    pub allocation: Vec<(Duration, u64)>,
    pub delivered_bytes: u64,
}

/// Variations of the toy sender/receiver, to check the calibration is not an artefact of
/// one idealised sender.
#[derive(Debug, Clone, Copy)]
pub struct ToyConfig {
    /// The receiver ACKs every n-th data packet (a lone packet after `ack_delay`).
    pub ack_every: u32,
    /// Largest ACK delay of the receiver.
    pub ack_delay: Duration,
    /// Pace sends at 1.25 x cwnd / latest RTT instead of sending bursts.
    pub paced: bool,
}

impl Default for ToyConfig {
    fn default() -> Self {
        ToyConfig {
            ack_every: 1,
            ack_delay: Duration::from_millis(25),
            paced: false,
        }
    }
}

/// Classic slow start (cwnd += acked bytes, no loss reaction), downloading over `spec`
/// until `end` or the first congestion drop.
pub fn run_slow_start(spec: &LinkSpec, seed: u64, end: Duration) -> ToyRun {
    run_slow_start_with(spec, seed, end, ToyConfig::default())
}

/// As [`run_slow_start`] with a sender/receiver variation.
pub fn run_slow_start_with(spec: &LinkSpec, seed: u64, end: Duration, cfg: ToyConfig) -> ToyRun {
    let mut path: Path<Msg> = Path::new(spec, seed).expect("valid spec");
    let data = DATA_BYTES as u64;
    let mut cwnd_bytes: u64 = INITIAL_WINDOW_PACKETS * data;
    let mut in_flight_bytes: u64 = 0;
    let mut rtt_samples = Vec::new();
    let mut delivered_bytes = 0;
    let mut now = Duration::ZERO;
    let mut latest_rtt = spec.base_rtt();
    let mut next_send = Duration::ZERO;
    // Receiver: data packets not yet acknowledged (their send times) and the ACK deadline.
    let mut unacked: Vec<Duration> = Vec::new();
    let mut ack_deadline: Option<Duration> = None;
    loop {
        // Sender: send what the window (and the pacer) allows.
        while in_flight_bytes + data <= cwnd_bytes && (!cfg.paced || next_send <= now) {
            path.down
                .enqueue(now, DATA_BYTES, Msg::Data { sent_at: now });
            in_flight_bytes += data;
            if cfg.paced {
                let rate_bps = 1.25 * cwnd_bytes as f64 * 8.0 / latest_rtt.as_secs_f64();
                next_send =
                    next_send.max(now) + Duration::from_secs_f64(data as f64 * 8.0 / rate_bps);
            }
        }
        let pacer = (cfg.paced && in_flight_bytes + data <= cwnd_bytes).then_some(next_send);
        let Some(t) = [path.poll_timeout(), ack_deadline, pacer]
            .into_iter()
            .flatten()
            .min()
        else {
            break;
        };
        now = now.max(t);
        if now > end || path.down.ground_truth().first_congestion_drop().is_some() {
            break;
        }
        while let Some(d) = path.down.poll_deliver(now) {
            if let Msg::Data { sent_at } = d.payload {
                delivered_bytes += d.size_bytes as u64;
                unacked.push(sent_at);
                ack_deadline.get_or_insert(now + cfg.ack_delay);
            }
        }
        if unacked.len() as u32 >= cfg.ack_every || ack_deadline.is_some_and(|d| d <= now) {
            // One ACK per acknowledged packet keeps the toy simple; they share one wire packet
            // in spirit, so only the first carries the ACK's size.
            for (i, sent_at) in unacked.drain(..).enumerate() {
                let size = if i == 0 { ACK_BYTES } else { 0 };
                path.up.enqueue(
                    now,
                    size,
                    Msg::Ack {
                        data_sent_at: sent_at,
                    },
                );
            }
            ack_deadline = None;
        }
        while let Some(a) = path.up.poll_deliver(now) {
            if let Msg::Ack { data_sent_at } = a.payload {
                latest_rtt = now - data_sent_at;
                rtt_samples.push((now, latest_rtt));
                in_flight_bytes -= data;
                cwnd_bytes += data;
            }
        }
    }
    let truth = path.down.finish(now);
    ToyRun {
        rtt_samples,
        full_allocation_at: truth.full_allocation_at(),
        first_congestion_drop: truth.first_congestion_drop().map(|(t, _)| t),
        capacity_at: truth.capacity_time_at_end(),
        allocation: truth.allocation().to_vec(),
        delivered_bytes,
    }
}

/// Mean RTT (seconds) per `bin` from `from` to `to`; empty bins repeat the previous value.
pub fn binned_rtt(
    samples: &[(Duration, Duration)],
    from: Duration,
    to: Duration,
    bin: Duration,
) -> Vec<f64> {
    let n = ((to - from).as_nanos() / bin.as_nanos()) as usize;
    let mut sum = vec![0.0; n];
    let mut count = vec![0u32; n];
    for &(t, rtt) in samples {
        if t < from || t >= to {
            continue;
        }
        let i = ((t - from).as_nanos() / bin.as_nanos()) as usize;
        if i < n {
            sum[i] += rtt.as_secs_f64();
            count[i] += 1;
        }
    }
    let first = samples
        .iter()
        .find(|(t, _)| *t >= from)
        .map_or(0.0, |(_, r)| r.as_secs_f64());
    let mut out = Vec::with_capacity(n);
    let mut last = first;
    for i in 0..n {
        if count[i] > 0 {
            last = sum[i] / count[i] as f64;
        }
        out.push(last);
    }
    out
}

/// Removes the least-squares line from `x`.
pub fn detrend(x: &[f64]) -> Vec<f64> {
    let n = x.len() as f64;
    let mean_i = (n - 1.0) / 2.0;
    let mean_x = x.iter().sum::<f64>() / n;
    let mut cov = 0.0;
    let mut var = 0.0;
    for (i, v) in x.iter().enumerate() {
        let di = i as f64 - mean_i;
        cov += di * (v - mean_x);
        var += di * di;
    }
    let slope = if var > 0.0 { cov / var } else { 0.0 };
    x.iter()
        .enumerate()
        .map(|(i, v)| v - mean_x - slope * (i as f64 - mean_i))
        .collect()
}

/// Plain DFT magnitudes |X_k| for k = 0..n/2.
pub fn dft_magnitudes(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    (0..=n / 2)
        .map(|k| {
            let (mut re, mut im) = (0.0, 0.0);
            for (i, v) in x.iter().enumerate() {
                let a = -std::f64::consts::TAU * (k * i) as f64 / n as f64;
                re += v * a.cos();
                im += v * a.sin();
            }
            (re * re + im * im).sqrt()
        })
        .collect()
}

/// Period (seconds) of the strongest DFT component above `min_hz`, after detrending.
pub fn dominant_period_s(x: &[f64], bin_s: f64, min_hz: f64) -> f64 {
    let mags = dft_magnitudes(&detrend(x));
    let n = x.len() as f64;
    let (k, _) = mags
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(k, _)| *k as f64 / (n * bin_s) >= min_hz)
        .max_by(|a, b| a.1.total_cmp(b.1))
        .expect("series long enough");
    n * bin_s / k as f64
}
