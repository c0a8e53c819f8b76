//! Analysis functions, each matching a seed figure or table. They work on [`RunData`]
//! (a runs.csv row and the run's per-MB times), so they apply to simulated and real runs
//! alike; nothing here reads files.
//!
//! | function | seed figure / table |
//! |---|---|
//! | [`time_to_mb_quartiles`] | 000 Fig. 10, 001 Fig. 6 |
//! | [`median_savings`] | 000 Fig. 11, 001 Fig. 7-8 |
//! | [`cdf`] of [`times_to_mb`] , [`paired_outcomes`] | 000 Fig. 12, 001 Fig. 9 |
//! | [`delivered_within_cap`] | 000 Table 4, 001 Table II |
//! | [`classify`], [`class_counts`] | 003 Table III |
//! | [`capacity_from_latency_offset`] | 003 Sec. V-B, Fig. 8, Table I |
//! | [`exit_times`] | 003 Table II |
//! | [`cdf`] of `exit_to_loss_ratio` | 000 Fig. 8 |
//! | [`cdf`] of `cwnd_reduction_ratio` | 001 Fig. 10 |
//! | [`dataset_makeup`] | 000 Tables 1-3, 001 Tables I, III |
//! | [`goodput_table`] | 002 Table II, Eq. 1, Fig. 3-4 |
//! | [`jain_index`] | 004 Eq. 6.3 |
//! | [`jain_over_time`] | 004 Fig. 6.11 (JFI over time), A4 latecomers |

mod delivery;
mod exclusion;
mod exits;
mod goodput;

pub use crate::stats::{Quartiles, quantile};
pub use delivery::*;
pub use exclusion::*;
pub use exits::*;
pub use goodput::*;

use crate::dataset::RunData;

/// Mean and sample standard deviation (n - 1); sd is 0 for one value.
pub fn mean_sd(values: &[f64]) -> Option<(f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let sd = if values.len() > 1 {
        (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    Some((mean, sd))
}

/// Empirical CDF: the sorted values with the fraction of values <= each, `(x, F(x))`.
pub fn cdf(values: &[f64]) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    v.into_iter()
        .enumerate()
        .map(|(i, x)| (x, (i + 1) as f64 / n))
        .collect()
}

/// Groups runs by a key, keeping first-seen order of the keys.
pub fn group_by<'a, K: PartialEq + Clone>(
    runs: &[&'a RunData],
    key: impl Fn(&RunData) -> K,
) -> Vec<(K, Vec<&'a RunData>)> {
    let mut out: Vec<(K, Vec<&'a RunData>)> = Vec::new();
    for r in runs {
        let k = key(r);
        match out.iter_mut().find(|(g, _)| *g == k) {
            Some((_, v)) => v.push(r),
            None => out.push((k, vec![r])),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::Row;

    #[test]
    fn wilson_intervals_of_small_samples() {
        // 5 of 8: 30.6-86.3 % (the textbook value).
        let (lo, hi) = wilson_interval(5, 8, Z_95).unwrap();
        assert!(
            (lo - 0.3057).abs() < 1e-3 && (hi - 0.8632).abs() < 1e-3,
            "{lo} {hi}"
        );
        // 0 and all of 12 keep an interval on one side only.
        let (lo, hi) = wilson_interval(0, 12, Z_95).unwrap();
        assert!(lo == 0.0 && (hi - 0.2425).abs() < 1e-3, "{hi}");
        let (lo, hi) = wilson_interval(12, 12, Z_95).unwrap();
        assert!((lo - 0.7575).abs() < 1e-3 && hi == 1.0, "{lo}");
        // More runs, a narrower interval around the same share.
        let (a, b) = wilson_interval(50, 80, Z_95).unwrap();
        assert!(b - a < 0.25 && a < 0.625 && 0.625 < b);
        assert_eq!(wilson_interval(0, 0, Z_95), None);
        assert_eq!(wilson_interval(3, 2, Z_95), None);
        assert_eq!(share_text(5, 8, 1, ""), "62.5 [31-86]");
        assert_eq!(share_text(1, 12, 0, "%"), "8% [1-35]");
        assert_eq!(share_text(12, 12, 0, "%"), "100% [76-100]");
        assert_eq!(share_text(0, 0, 0, "%"), "0%");
    }

    #[test]
    fn a_normal_cdf_passes_through_its_quantiles() {
        // 003 Table II, GEO first loss: 22.9 s (sd 8.7), over mean +- 3 sd in 0.5 sd steps.
        let c = normal_cdf(22.9, 8.7, 13);
        assert_eq!(c.len(), 13);
        let at = |k: usize| c[k];
        assert!((at(0).0 - (22.9 - 3.0 * 8.7)).abs() < 1e-9);
        assert!((at(6).0 - 22.9).abs() < 1e-9 && (at(6).1 - 0.5).abs() < 1e-9);
        // Phi(1) = 0.841345, Phi(-2) = 0.022750, Phi(3) = 0.998650.
        assert!((at(8).1 - 0.841_345).abs() < 1e-6, "{:?}", at(8));
        assert!((at(2).1 - 0.022_750).abs() < 1e-6, "{:?}", at(2));
        assert!((at(12).1 - 0.998_650).abs() < 1e-6, "{:?}", at(12));
        assert!(c.windows(2).all(|w| w[0].1 < w[1].1));
        // No spread, nothing to draw.
        assert!(normal_cdf(1.0, 0.0, 10).is_empty());
        assert!(normal_cdf(1.0, f64::NAN, 10).is_empty());
    }

    fn run(variant: &str, seed: u64, mb_times: &[f64]) -> RunData {
        RunData {
            row: Row {
                variant: variant.into(),
                link: "l".into(),
                workload: "w".into(),
                seed,
                status: "completed".into(),
                time_cap_s: 60.0,
                ..Row::default()
            },
            mb_times_s: mb_times.to_vec(),
        }
    }

    #[test]
    fn quartiles_of_time_to_mb() {
        let runs = [
            run("a", 1, &[1.0, 4.0]),
            run("a", 2, &[2.0, 3.0]),
            run("a", 3, &[3.0, 2.0]),
            run("a", 4, &[4.0]),
        ];
        let refs: Vec<&RunData> = runs.iter().collect();
        let q = time_to_mb_quartiles(&refs, &[1, 2, 3]);
        let q1 = q[0].1.unwrap();
        assert_eq!((q1.q1, q1.median, q1.q3, q1.n), (1.75, 2.5, 3.25, 4));
        let q2 = q[1].1.unwrap();
        assert_eq!((q2.median, q2.n), (3.0, 3));
        assert!(q[2].1.is_none());
        assert_eq!(
            delivered_within_cap(&refs, &[1, 2, 3]),
            [(1, 4), (2, 3), (3, 0)]
        );
    }

    #[test]
    fn savings_are_baseline_minus_variant() {
        let base = [
            run("b", 1, &[10.0]),
            run("b", 2, &[12.0]),
            run("b", 3, &[14.0]),
        ];
        let var = [
            run("s", 1, &[9.0]),
            run("s", 2, &[9.0]),
            run("s", 3, &[15.0]),
        ];
        let b: Vec<&RunData> = base.iter().collect();
        let v: Vec<&RunData> = var.iter().collect();
        let s = median_savings(&b, &v, &[1, 2]);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].saving_s, 3.0);
        assert!((s[0].saving_pct - 25.0).abs() < 1e-9);
        assert_eq!(s[0].q1_diff_s, 2.0);
        assert_eq!(s[0].q3_diff_s, 1.0);
        let p = paired_outcomes(&b, &v, 1, 0.5).unwrap();
        assert_eq!(p.pairs, 3);
        assert!((p.faster - 2.0 / 3.0).abs() < 1e-9 && (p.slower - 1.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn cdf_steps_to_one() {
        assert_eq!(
            cdf(&[3.0, 1.0, 2.0, 2.0]),
            [(1.0, 0.25), (2.0, 0.5), (2.0, 0.75), (3.0, 1.0)]
        );
        assert!(cdf(&[]).is_empty());
    }

    #[test]
    fn classification_edge_cases() {
        use ExitClass::{Chokepoint, Early, Late};
        // Exit exactly at capacity is at the chokepoint.
        assert_eq!(classify(Some(5.0), false, Some(9.0), Some(5.0)), Chokepoint);
        assert_eq!(classify(Some(4.999), false, Some(9.0), Some(5.0)), Early);
        // No loss at all: after capacity is the chokepoint, before it early.
        assert_eq!(classify(Some(6.0), false, None, Some(5.0)), Chokepoint);
        assert_eq!(classify(Some(6.0), false, None, None), Early);
        // No exit at all: late if a loss came, none otherwise.
        assert_eq!(classify(None, false, Some(9.0), Some(5.0)), Late);
        assert_eq!(classify(None, false, None, Some(5.0)), ExitClass::None);
        // Exit at the loss, or caused by it, is late.
        assert_eq!(classify(Some(9.0), false, Some(9.0), Some(5.0)), Late);
        assert_eq!(classify(Some(9.5), true, Some(9.5), None), Late);
        let c = class_counts([Some("early"), Some("late"), Some("late"), None, Some("x")]);
        assert_eq!((c.early, c.late, c.total()), (1, 2, 3));
        assert!((c.pct(Late) - 200.0 / 3.0).abs() < 1e-9);
    }

    /// Seed 003 Fig. 8 in miniature: a GEO trace (min RTT 600 ms) flat at 50 ms until
    /// 10 s, then rising linearly by 130 ms per second.
    #[test]
    fn capacity_heuristic_on_a_synthetic_delay_trace() {
        let trace: Vec<(f64, f64)> = (0..3000)
            .map(|i| {
                let t = i as f64 * 0.01;
                let offset = if t < 10.0 {
                    0.05
                } else {
                    0.05 + 0.13 * (t - 10.0)
                };
                (t, offset)
            })
            .collect();
        // Below 300 ms until 10 + 0.25 / 0.13 = 11.923 s; above 1200 ms from 18.85 s.
        let c = capacity_from_latency_offset(&trace, 0.6).unwrap();
        assert!((c - 11.92).abs() < 0.011, "{c}");
        // Never above 2 x min RTT: no capacity point.
        let flat: Vec<(f64, f64)> = trace.iter().map(|(t, o)| (*t, o.min(1.0))).collect();
        assert_eq!(capacity_from_latency_offset(&flat, 0.6), None);
        // Dips back below the low threshold after rising: the last dip counts.
        let mut dip = trace.clone();
        for s in dip.iter_mut().filter(|s| (15.0..15.5).contains(&s.0)) {
            s.1 = 0.1;
        }
        let c = capacity_from_latency_offset(&dip, 0.6).unwrap();
        assert!((c - 15.49).abs() < 0.011, "{c}");
        // Starting above the low threshold: undeterminable.
        assert_eq!(
            capacity_from_latency_offset(&[(0.0, 0.5), (1.0, 1.5)], 0.6),
            None
        );
        // LEO thresholds of 003 Table I: 60 ms / 15 ms with a 30 ms minimum RTT.
        let leo = [(0.0, 0.01), (0.1, 0.014), (0.2, 0.03), (0.3, 0.061)];
        assert_eq!(capacity_from_latency_offset(&leo, 0.03), Some(0.1));
        let offsets = latency_offsets([(0.0, 0.7), (1.0, 0.6), (2.0, 1.2)]);
        assert_eq!(offsets[2].1, 0.6);
        assert!(offsets[0].1 > 0.099 && offsets[1].1 == 0.0);
    }

    #[test]
    fn exit_times_table() {
        let mut a = run("s", 1, &[]);
        a.row.capacity_at_s = Some(10.0);
        a.row.first_loss_detected_at_s = Some(20.0);
        a.row.shadow_exit_at_s = Some(12.0);
        let mut b = run("s", 2, &[]);
        b.row.capacity_at_s = Some(14.0);
        b.row.first_loss_detected_at_s = Some(24.0);
        b.row.shadow_exit_at_s = Some(13.0);
        let runs = [&a, &b];
        let t = exit_times(
            &runs,
            ExitSource {
                shadow: true,
                heuristic_capacity: false,
            },
        );
        assert_eq!(t.capacity_s.unwrap().0, 12.0);
        assert!((t.capacity_s.unwrap().1 - 8f64.sqrt()).abs() < 1e-12);
        assert_eq!(t.loss_s.unwrap().0, 22.0);
        assert_eq!(t.exit_s.unwrap().0, 12.5);
        assert_eq!(t.timely_pct, Some(50.0));
        let t = exit_times(
            &runs,
            ExitSource {
                shadow: false,
                heuristic_capacity: false,
            },
        );
        assert!(t.exit_s.is_none() && t.timely_pct.is_none());
    }

    #[test]
    fn exclusion_rules_follow_seed_000() {
        let mut first_rtt = run("b", 1, &[]);
        first_rtt.row.first_drop_at_s = Some(1.0);
        first_rtt.row.handshake_time_s = Some(0.6);
        first_rtt.row.min_rtt_s = Some(0.6);
        first_rtt.row.first_loss_detected_at_s = Some(1.7);
        let mut wireless = run("b", 2, &[]);
        wireless.row.first_loss_detected_at_s = Some(5.0);
        let mut exited = run("s", 3, &[]);
        exited.row.first_loss_detected_at_s = Some(5.0);
        exited.row.exit_at_s = Some(4.0);
        exited.row.exit_reason = Some("search".into());
        let mut failed = run("s", 4, &[]);
        failed.row.status = "timeout".into();
        let runs = [&first_rtt, &wireless, &exited, &failed];
        let off = dataset_makeup(&runs, &ExclusionRules::default());
        assert_eq!((off.clean, off.failed, off.total), (3, 1, 4));
        let rules = ExclusionRules {
            first_rtt_loss: true,
            wireless_loss_before_s: Some(9.0),
        };
        let m = dataset_makeup(&runs, &rules);
        assert_eq!(
            (m.first_rtt_loss, m.wireless_loss, m.clean, m.failed),
            (1, 1, 1, 1)
        );
        assert_eq!(clean(&runs, &rules).len(), 1);
    }

    #[test]
    fn jain_over_time_counts_each_window_and_only_the_flows_active_in_it() {
        // Flow 0 sends 100 bytes/s from 0 s; flow 1 starts at 10 s and sends 50 bytes/s;
        // flow 2 never starts before 20 s.
        let flow = |start: f64, rate: u64| -> Vec<(f64, u64)> {
            (0..=20)
                .map(|t| (f64::from(t), (t as u64).saturating_sub(start as u64) * rate))
                .collect()
        };
        let delivered = vec![flow(0.0, 100), flow(10.0, 50), vec![]];
        let active = [(0.0, 20.0), (10.0, 20.0), (20.0, 30.0)];
        let points = jain_over_time(&delivered, &active, 5.0, 20.0);
        // Windows ending at 5 and 10 s hold one active flow: no point.
        let (a, b) = (500.0_f64, 250.0_f64);
        let two = (a + b).powi(2) / (2.0 * (a * a + b * b));
        assert_eq!(points, vec![(15.0, two), (20.0, two)]);
        assert!(jain_over_time(&delivered, &active, 0.0, 20.0).is_empty());
    }

    #[test]
    fn jain_index_of_equal_and_hog_flows() {
        assert_eq!(jain_index(&[5.0, 5.0, 5.0, 5.0]), Some(1.0));
        assert_eq!(jain_index(&[10.0, 0.0, 0.0, 0.0]), Some(0.25));
        assert_eq!(jain_index(&[7.0]), Some(1.0));
        assert_eq!(jain_index(&[]), None);
        assert_eq!(jain_index(&[0.0, 0.0]), None);
    }

    #[test]
    fn goodput_and_efficiency() {
        let mut a = run("x", 1, &[]);
        a.row.goodput_bps = Some(15e6);
        a.row.down_rate_bps = 20_000_000;
        let mut b = run("x", 2, &[]);
        b.row.goodput_bps = Some(5e6);
        b.row.down_rate_bps = 20_000_000;
        b.row.status = "capped".into();
        let g = goodput_table(&[&a, &b]).unwrap();
        assert_eq!((g.mean_bps, g.max_bps, g.unfinished), (10e6, 15e6, 1));
        assert_eq!((g.mean_efficiency, g.max_efficiency), (0.5, 0.75));
        assert_eq!(efficiency(1.0, 0.0), None);
        assert_eq!(mean_sd(&[2.0]), Some((2.0, 0.0)));
    }
}
