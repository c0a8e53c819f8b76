//! CUBIC congestion avoidance (RFC 9438, spec `cubic`): the window follows `W_cubic`
//! after a loss, the Reno-friendly region on short RTTs, and smooth growth after a
//! slow-start exit without loss.

mod common;

use std::time::Duration;

use common::{BASE_RTT, MSS, PathModel, RttSeen, run};
use satquic_cc::{CongestionConfig, ExitReason, RttInfo, Search};

/// Drives a cubic+classic controller into a loss at `w_max_segments`, then feeds a
/// window's worth of ACKs every RTT (one ACK per ms). Returns (t since the avoidance
/// epoch, cwnd) samples.
fn cubic_after_loss(w_max_segments: u64, rtt: Duration, duration: Duration) -> Vec<(f64, f64)> {
    let cc = CongestionConfig::cubic().initial_window(w_max_segments * MSS);
    let mut ctl = cc.build_controller(MSS).unwrap();
    let info = RttInfo::fixed(rtt);
    let t0 = Duration::from_secs(1);
    ctl.on_congestion_event(t0, t0, false, MSS);
    assert_eq!(ctl.window(), (w_max_segments * MSS) * 7 / 10);
    let step = Duration::from_millis(1);
    let mut now = t0 + step;
    let mut epoch = None;
    let mut samples = Vec::new();
    let mut carry = 0.0;
    while now < t0 + duration {
        // A cwnd-limited flow: cwnd bytes acknowledged per RTT.
        carry += ctl.window() as f64 * step.as_secs_f64() / rtt.as_secs_f64();
        let bytes = carry.floor() as u64;
        carry -= bytes as f64;
        if bytes > 0 {
            ctl.on_ack(
                now,
                now - rtt.min(now - t0 - Duration::from_nanos(1)),
                bytes,
                false,
                info,
            );
            epoch.get_or_insert(now);
        }
        if let Some(e) = epoch {
            samples.push(((now - e).as_secs_f64(), ctl.window() as f64));
        }
        now += step;
    }
    samples
}

fn w_cubic(t: f64, w_max_segments: f64) -> f64 {
    let k = (w_max_segments * 0.3 / 0.4).cbrt();
    (0.4 * (t - k).powi(3) + w_max_segments) * MSS as f64
}

#[test]
fn cubic_follows_w_cubic_after_a_loss() {
    let w_max = 1000.0;
    let samples = cubic_after_loss(1000, Duration::from_millis(100), Duration::from_secs(14));
    for t in [1.0, 3.0, 6.0, 9.0, 11.0, 13.0] {
        let (_, cwnd) = samples.iter().find(|s| s.0 >= t).copied().unwrap();
        let expected = w_cubic(t, w_max);
        println!(
            "t={t}: cwnd {:.1} MSS, W_cubic {:.1} MSS",
            cwnd / MSS as f64,
            expected / MSS as f64
        );
        assert!(
            (cwnd - expected).abs() <= MSS as f64,
            "t={t}: {cwnd} vs {expected}"
        );
    }
}

#[test]
fn cubic_reno_friendly_region_on_short_rtts() {
    // W_max = 20 segments, RTT 10 ms: Reno's alpha per 10 ms beats the cubic curve,
    // which is in the Reno-friendly region of RFC 9438 Sec. 4.3 (W_cubic(t) < W_est).
    let samples = cubic_after_loss(20, Duration::from_millis(10), Duration::from_millis(1_200));
    let (t, cwnd) = samples.iter().find(|s| s.0 >= 1.0).copied().unwrap();
    let cubic = w_cubic(t, 20.0);
    // W_est: 14 segments growing alpha = 3 (1 - 0.7) / 1.7 per RTT up to cwnd_prior = 20,
    // then 1 per RTT.
    let alpha = 0.9 / 1.7;
    let to_prior = (20.0 - 14.0) / alpha * 0.010;
    let w_est = (20.0 + (t - to_prior) / 0.010) * MSS as f64;
    println!(
        "t={t:.3}: cwnd {:.1}, W_est {:.1}, W_cubic {:.1} segments",
        cwnd / 1200.0,
        w_est / 1200.0,
        cubic / 1200.0
    );
    assert!(cwnd > cubic + 10.0 * MSS as f64);
    assert!((cwnd - w_est).abs() / w_est < 0.05, "{cwnd} vs {w_est}");
    // And on the long-RTT case above, the region is not engaged: cwnd ~ W_cubic.
}

/// After a slow-start exit without loss CUBIC starts congestion avoidance from the exit
/// window with W_max = cwnd and K = 0 (RFC 9438 Sec. 4.10) and grows smoothly. The seeds'
/// quicly code left CUBIC's state unset on a SEARCH exit and its window exploded.
#[test]
fn cubic_grows_smoothly_after_a_search_exit() {
    let path = PathModel::bottleneck(150e6, RttSeen::Measured);
    let cc = CongestionConfig::cubic().slow_start(Search::draft());
    let trace = run(cc, &path, BASE_RTT * 60, Duration::from_secs(8));
    let (exit_at, reason, _, exit_cwnd) = trace.exit.expect("exit");
    assert_eq!(reason, ExitReason::Search);
    let after: Vec<(Duration, u64)> = trace
        .cwnd
        .iter()
        .copied()
        .filter(|s| s.0 > exit_at)
        .collect();
    assert!(after.len() > 100);
    let mut previous = exit_cwnd;
    for (at, cwnd) in after {
        // Monotone, and never above W_cubic(t + RTT) with W_max = exit window, K = 0
        // (the smoothed RTT is at most ~4 s here).
        assert!(cwnd >= previous, "window fell at {at:?}");
        let t = (at - exit_at).as_secs_f64() + 4.0;
        let bound = exit_cwnd as f64 + 0.4 * t.powi(3) * MSS as f64 + 2.0 * MSS as f64;
        assert!((cwnd as f64) <= bound, "at {at:?}: {cwnd} > {bound}");
        previous = cwnd;
    }
    println!(
        "cubic after draft exit: {} -> {} bytes in 8 s",
        exit_cwnd,
        trace.controller.window()
    );
}
