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

use std::collections::BTreeMap;

pub use crate::stats::{Quartiles, quantile};

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

/// Times to deliver `mb` MB of the runs that got there.
pub fn times_to_mb(runs: &[&RunData], mb: u64) -> Vec<f64> {
    runs.iter().filter_map(|r| r.time_to_mb(mb)).collect()
}

/// Median and quartiles of the time to deliver each mark (runs that got there).
pub fn time_to_mb_quartiles(runs: &[&RunData], marks_mb: &[u64]) -> Vec<(u64, Option<Quartiles>)> {
    marks_mb
        .iter()
        .map(|mb| (*mb, Quartiles::of(&times_to_mb(runs, *mb))))
        .collect()
}

/// Saving of a variant against the baseline at one mark (seed 001 Fig. 7-8).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Saving {
    pub mb: u64,
    pub baseline_median_s: f64,
    pub variant_median_s: f64,
    /// baseline median - variant median (positive: the variant is faster).
    pub saving_s: f64,
    /// saving / baseline median x 100.
    pub saving_pct: f64,
    /// baseline q1 - variant q1 and baseline q3 - variant q3 (the shaded band).
    pub q1_diff_s: f64,
    pub q3_diff_s: f64,
}

/// Median savings at each mark where both sets have runs.
pub fn median_savings(
    baseline: &[&RunData],
    variant: &[&RunData],
    marks_mb: &[u64],
) -> Vec<Saving> {
    marks_mb
        .iter()
        .filter_map(|mb| {
            let b = Quartiles::of(&times_to_mb(baseline, *mb))?;
            let v = Quartiles::of(&times_to_mb(variant, *mb))?;
            let saving = b.median - v.median;
            Some(Saving {
                mb: *mb,
                baseline_median_s: b.median,
                variant_median_s: v.median,
                saving_s: saving,
                saving_pct: if b.median > 0.0 {
                    saving / b.median * 100.0
                } else {
                    0.0
                },
                q1_diff_s: b.q1 - v.q1,
                q3_diff_s: b.q3 - v.q3,
            })
        })
        .collect()
}

/// Runs pairwise compared at one mark (same link, workload and seed): fractions where the
/// variant is within `tolerance_s` of the baseline, faster by more, slower by more (seed
/// 001 Sec. IV: at 150 MB, 45 % no difference, 40 % faster, 15 % slower).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedOutcomes {
    pub pairs: usize,
    pub same: f64,
    pub faster: f64,
    pub slower: f64,
}

impl PairedOutcomes {
    /// The pairs behind one of the shares.
    pub fn count(&self, share: f64) -> usize {
        (share * self.pairs as f64).round() as usize
    }
}

pub fn paired_outcomes(
    baseline: &[&RunData],
    variant: &[&RunData],
    mb: u64,
    tolerance_s: f64,
) -> Option<PairedOutcomes> {
    let key = |r: &RunData| (r.row.link.clone(), r.row.workload.clone(), r.row.seed);
    let base: BTreeMap<_, f64> = baseline
        .iter()
        .filter_map(|r| Some((key(r), r.time_to_mb(mb)?)))
        .collect();
    let (mut same, mut faster, mut slower) = (0usize, 0usize, 0usize);
    for r in variant {
        let (Some(t), Some(b)) = (r.time_to_mb(mb), base.get(&key(r))) else {
            continue;
        };
        let d = b - t;
        if d.abs() <= tolerance_s {
            same += 1;
        } else if d > 0.0 {
            faster += 1;
        } else {
            slower += 1;
        }
    }
    let n = same + faster + slower;
    (n > 0).then(|| PairedOutcomes {
        pairs: n,
        same: same as f64 / n as f64,
        faster: faster as f64 / n as f64,
        slower: slower as f64 / n as f64,
    })
}

/// Number of runs that delivered each mark within the time cap (seed 000 Table 4).
pub fn delivered_within_cap(runs: &[&RunData], marks_mb: &[u64]) -> Vec<(u64, usize)> {
    marks_mb
        .iter()
        .map(|mb| {
            let n = runs
                .iter()
                .filter(|r| r.time_to_mb(*mb).is_some_and(|t| t <= r.row.time_cap_s))
                .count();
            (*mb, n)
        })
        .collect()
}

/// Seed 003's slow-start exit classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ExitClass {
    /// Exit before the capacity point (or while the link never saturated).
    Early,
    /// After the capacity point, before the first loss (or with no loss at all).
    Chokepoint,
    /// Caused by loss, at or after the first loss, or no exit but a loss.
    Late,
    /// No exit and no loss: the flow ended in slow start.
    None,
}

impl ExitClass {
    pub const ALL: [ExitClass; 4] = [
        ExitClass::Early,
        ExitClass::Chokepoint,
        ExitClass::Late,
        ExitClass::None,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ExitClass::Early => "early",
            ExitClass::Chokepoint => "chokepoint",
            ExitClass::Late => "late",
            ExitClass::None => "none",
        }
    }

    pub fn parse(s: &str) -> Option<ExitClass> {
        ExitClass::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// Classifies an exit at `exit_s` (`by_loss`: the exit was caused by a loss) against the
/// first loss the sender detected and the capacity point (the same rules as satquic-sim's
/// record, on seconds so real captures can use it).
pub fn classify(
    exit_s: Option<f64>,
    by_loss: bool,
    first_loss_s: Option<f64>,
    capacity_s: Option<f64>,
) -> ExitClass {
    match (exit_s, first_loss_s) {
        (None, None) => ExitClass::None,
        (None, Some(_)) => ExitClass::Late,
        (Some(_), _) if by_loss => ExitClass::Late,
        (Some(t), Some(loss)) if t >= loss => ExitClass::Late,
        (Some(t), _) => match capacity_s {
            Some(c) if t >= c => ExitClass::Chokepoint,
            _ => ExitClass::Early,
        },
    }
}

/// Counts of each class.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ClassCounts {
    pub early: usize,
    pub chokepoint: usize,
    pub late: usize,
    pub none: usize,
}

impl ClassCounts {
    pub fn total(&self) -> usize {
        self.early + self.chokepoint + self.late + self.none
    }

    /// Percentage of a class among all counted runs.
    pub fn pct(&self, class: ExitClass) -> f64 {
        let n = self.total();
        if n == 0 {
            return 0.0;
        }
        let k = match class {
            ExitClass::Early => self.early,
            ExitClass::Chokepoint => self.chokepoint,
            ExitClass::Late => self.late,
            ExitClass::None => self.none,
        };
        k as f64 * 100.0 / n as f64
    }

    fn add(&mut self, class: ExitClass) {
        match class {
            ExitClass::Early => self.early += 1,
            ExitClass::Chokepoint => self.chokepoint += 1,
            ExitClass::Late => self.late += 1,
            ExitClass::None => self.none += 1,
        }
    }
}

/// Counts the class names of runs (rows without a class are skipped).
pub fn class_counts<'a>(classes: impl IntoIterator<Item = Option<&'a str>>) -> ClassCounts {
    let mut c = ClassCounts::default();
    for class in classes.into_iter().flatten().filter_map(ExitClass::parse) {
        c.add(class);
    }
    c
}

/// z of a two-sided 95 % interval of a normal distribution.
pub const Z_95: f64 = 1.959_964;

/// The Wilson score interval (E. B. Wilson, "Probable inference, the law of succession,
/// and statistical inference", JASA 1927) of a share of `k` runs in `n`, as fractions:
/// the interval Agresti and Coull (The American Statistician, 1998) recommend for small
/// samples, as ours at `--quick` scale are (unlike the normal approximation it stays
/// within [0, 1] and does not shrink to a point at 0 or n of n). `None` for no runs.
pub fn wilson_interval(k: usize, n: usize, z: f64) -> Option<(f64, f64)> {
    if n == 0 || k > n {
        return None;
    }
    let (n, p) = (n as f64, k as f64 / n as f64);
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    Some(((center - half).max(0.0), (center + half).min(1.0)))
}

/// A share of `k` runs in `n` in percent with its 95 % Wilson interval: `62.5 [31-86]`,
/// `8% [1-35]` (`decimals` for the share itself, `unit` after it).
pub fn share_text(k: usize, n: usize, decimals: usize, unit: &str) -> String {
    let pct = if n == 0 {
        0.0
    } else {
        k as f64 * 100.0 / n as f64
    };
    match wilson_interval(k, n, Z_95) {
        Some((lo, hi)) => format!(
            "{pct:.decimals$}{unit} [{:.0}-{:.0}]",
            lo * 100.0,
            hi * 100.0
        ),
        None => format!("{pct:.decimals$}{unit}"),
    }
}

/// Converts (time, RTT) samples into latency offsets (time, RTT - minimum RTT), the
/// queueing delay a client capture shows as a one-way latency offset.
pub fn latency_offsets(samples: impl IntoIterator<Item = (f64, f64)>) -> Vec<(f64, f64)> {
    let samples: Vec<(f64, f64)> = samples.into_iter().collect();
    let min = samples.iter().map(|s| s.1).fold(f64::INFINITY, f64::min);
    samples.into_iter().map(|(t, rtt)| (t, rtt - min)).collect()
}

/// The "at capacity" point of seed 003 Sec. V-B from a one-way latency offset trace
/// `(time, offset)` (seconds, in time order): find when the offset first exceeds twice
/// the minimum RTT, then walk back to the last sample before it where the offset was
/// below half the minimum RTT; that sample's time is the capacity point (GEO with a
/// 600 ms minimum RTT: 1200 ms and 300 ms, 003 Table I). `None` when the offset never
/// exceeds the upper threshold, or never was below the lower one before.
pub fn capacity_from_latency_offset(trace: &[(f64, f64)], min_rtt_s: f64) -> Option<f64> {
    if min_rtt_s.is_nan() || min_rtt_s <= 0.0 {
        return None;
    }
    let high = 2.0 * min_rtt_s;
    let low = 0.5 * min_rtt_s;
    let first_high = trace.iter().position(|(_, o)| *o > high)?;
    let last_low = trace[..first_high].iter().rposition(|(_, o)| *o < low)?;
    Some(trace[last_low].0)
}

/// Seed 003 Table II: mean (sd) of capacity, first loss and exit times, and the share of
/// runs whose exit was timely (not before capacity).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExitTimes {
    pub runs: usize,
    pub capacity_s: Option<(f64, f64)>,
    pub loss_s: Option<(f64, f64)>,
    pub exit_s: Option<(f64, f64)>,
    /// Runs with an exit and a capacity point that exited at or after capacity, %.
    pub timely_pct: Option<f64>,
}

/// Which exit and capacity point [`exit_times`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitSource {
    /// Use the shadow exit (SEARCH evaluated on a classic slow start, as 003 did offline).
    pub shadow: bool,
    /// Use the latency-offset heuristic's capacity point instead of ground truth.
    pub heuristic_capacity: bool,
}

/// The capacity, first-loss and exit times of runs (each list holds the runs that have
/// that time), the samples behind [`exit_times`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExitSamples {
    pub capacity_s: Vec<f64>,
    pub loss_s: Vec<f64>,
    pub exit_s: Vec<f64>,
    /// Per run with an exit and a capacity point: whether it exited at or after capacity.
    pub timely: Vec<bool>,
}

pub fn exit_samples(runs: &[&RunData], source: ExitSource) -> ExitSamples {
    let exit = |r: &RunData| {
        if source.shadow {
            r.row.shadow_exit_at_s
        } else if r.row.exit_reason.as_deref() == Some("loss") {
            None
        } else {
            r.row.exit_at_s
        }
    };
    let capacity = |r: &RunData| {
        if source.heuristic_capacity {
            r.row.owd_capacity_at_s
        } else {
            r.row.capacity_at_s
        }
    };
    ExitSamples {
        capacity_s: runs.iter().filter_map(|r| capacity(r)).collect(),
        loss_s: runs
            .iter()
            .filter_map(|r| r.row.first_loss_detected_at_s)
            .collect(),
        exit_s: runs.iter().filter_map(|r| exit(r)).collect(),
        timely: runs
            .iter()
            .filter_map(|r| Some(exit(r)? >= capacity(r)?))
            .collect(),
    }
}

pub fn exit_times(runs: &[&RunData], source: ExitSource) -> ExitTimes {
    let s = exit_samples(runs, source);
    let judged = &s.timely;
    ExitTimes {
        runs: runs.len(),
        capacity_s: mean_sd(&s.capacity_s),
        loss_s: mean_sd(&s.loss_s),
        exit_s: mean_sd(&s.exit_s),
        timely_pct: (!judged.is_empty())
            .then(|| judged.iter().filter(|t| **t).count() as f64 * 100.0 / judged.len() as f64),
    }
}

/// The CDF of a normal distribution with this mean and standard deviation, at `points`
/// evenly spaced values over mean +- 3 sd: how a seed that reports only a mean and a
/// standard deviation is drawn beside our runs' CDFs. Empty when `sd` is not positive.
pub fn normal_cdf(mean: f64, sd: f64, points: usize) -> Vec<(f64, f64)> {
    if sd.is_nan() || sd <= 0.0 || points < 2 {
        return Vec::new();
    }
    (0..points)
        .map(|i| {
            let x = mean - 3.0 * sd + 6.0 * sd * i as f64 / (points - 1) as f64;
            (
                x,
                0.5 * (1.0 + erf((x - mean) / (sd * std::f64::consts::SQRT_2))),
            )
        })
        .collect()
}

/// The error function (Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7).
fn erf(x: f64) -> f64 {
    const P: f64 = 0.327_591_1;
    const A: [f64; 5] = [
        0.254_829_592,
        -0.284_496_736,
        1.421_413_741,
        -1.453_152_027,
        1.061_405_429,
    ];
    let t = 1.0 / (1.0 + P * x.abs());
    let poly = A.iter().rev().fold(0.0, |acc, a| acc * t + a) * t;
    (1.0 - poly * (-x * x).exp()).copysign(x)
}

/// The seeds' exclusion rules (000 Sec. 5.1, 001 Sec. IV).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ExclusionRules {
    /// Exclude runs where the link dropped a packet within the first RTT after the
    /// handshake (drop time <= handshake time + minimum RTT).
    pub first_rtt_loss: bool,
    /// Exclude runs whose first detected loss came before this many seconds, unless the
    /// slow start (or the shadow SEARCH) had already exited ("wireless" loss).
    pub wireless_loss_before_s: Option<f64>,
}

/// Why a run is excluded, if it is.
pub fn exclusion(run: &RunData, rules: &ExclusionRules) -> Option<&'static str> {
    let r = &run.row;
    if rules.first_rtt_loss
        && let (Some(drop), Some(hs), Some(rtt)) =
            (r.first_drop_at_s, r.handshake_time_s, r.min_rtt_s)
        && drop <= hs + rtt
    {
        return Some("first_rtt_loss");
    }
    if let (Some(limit), Some(loss)) = (rules.wireless_loss_before_s, r.first_loss_detected_at_s)
        && loss < limit
    {
        let exited_before = [
            r.exit_at_s
                .filter(|_| r.exit_reason.as_deref() != Some("loss")),
            r.shadow_exit_at_s,
        ]
        .into_iter()
        .flatten()
        .any(|t| t < loss);
        if !exited_before {
            return Some("wireless_loss");
        }
    }
    None
}

/// Seed 000 Tables 1-3: counts per category for one variant.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Makeup {
    pub first_rtt_loss: usize,
    pub wireless_loss: usize,
    pub clean: usize,
    /// Failed or timed-out runs (not in the seeds' tables, which kept only finished runs).
    pub failed: usize,
    pub total: usize,
}

pub fn dataset_makeup(runs: &[&RunData], rules: &ExclusionRules) -> Makeup {
    let mut m = Makeup::default();
    for r in runs {
        m.total += 1;
        if matches!(r.row.status.as_str(), "failed" | "timeout") {
            m.failed += 1;
            continue;
        }
        match exclusion(r, rules) {
            Some("first_rtt_loss") => m.first_rtt_loss += 1,
            Some(_) => m.wireless_loss += 1,
            None => m.clean += 1,
        }
    }
    m
}

/// The runs that pass the rules (and did not fail).
pub fn clean<'a>(runs: &[&'a RunData], rules: &ExclusionRules) -> Vec<&'a RunData> {
    runs.iter()
        .copied()
        .filter(|r| !matches!(r.row.status.as_str(), "failed" | "timeout"))
        .filter(|r| exclusion(r, rules).is_none())
        .collect()
}

/// Goodput statistics of a set of runs (seed 002 Table II: mean / max goodput and
/// efficiency = goodput / link rate).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GoodputStats {
    pub runs: usize,
    /// Runs that failed or timed out (QIR-SE's X and T) or did not complete a download.
    pub unfinished: usize,
    pub mean_bps: f64,
    pub max_bps: f64,
    pub mean_efficiency: f64,
    pub max_efficiency: f64,
}

pub fn goodput_table(runs: &[&RunData]) -> Option<GoodputStats> {
    let g: Vec<(f64, f64)> = runs
        .iter()
        .map(|r| {
            let gp = r.row.goodput_bps.unwrap_or(0.0);
            (
                gp,
                efficiency(gp, r.row.down_rate_bps as f64).unwrap_or(0.0),
            )
        })
        .collect();
    if g.is_empty() {
        return None;
    }
    let n = g.len() as f64;
    Some(GoodputStats {
        runs: g.len(),
        unfinished: runs.iter().filter(|r| r.row.status != "completed").count(),
        mean_bps: g.iter().map(|x| x.0).sum::<f64>() / n,
        max_bps: g.iter().map(|x| x.0).fold(0.0, f64::max),
        mean_efficiency: g.iter().map(|x| x.1).sum::<f64>() / n,
        max_efficiency: g.iter().map(|x| x.1).fold(0.0, f64::max),
    })
}

/// Goodput / link rate (seed 002 Eq. 1); `None` for a zero rate.
pub fn efficiency(goodput_bps: f64, link_rate_bps: f64) -> Option<f64> {
    (link_rate_bps > 0.0).then(|| goodput_bps / link_rate_bps)
}

/// Jain's fairness index (sum x)^2 / (n sum x^2) (seed 004 Eq. 6.3): 1 for equal shares,
/// 1/n when one flow takes everything. `None` for no flows or all zero.
pub fn jain_index(xs: &[f64]) -> Option<f64> {
    let sum: f64 = xs.iter().sum();
    let sq: f64 = xs.iter().map(|x| x * x).sum();
    (!xs.is_empty() && sq > 0.0).then(|| sum * sum / (xs.len() as f64 * sq))
}

/// Jain's index over time (seed 004 Fig. 6.11): for each window of `window_s` seconds from
/// 0 to `until_s`, the index of the bytes each flow delivered in it, over the flows active
/// for the whole window. `delivered[f]` is flow f's `(time_s, cumulative delivered bytes)`
/// in time order (a series.csv), `active[f]` its `(start_s, end_s)` in run time.
/// Points are `(window end, index)`; windows with fewer than two active flows, or in which
/// no flow delivered anything, have none.
pub fn jain_over_time(
    delivered: &[Vec<(f64, u64)>],
    active: &[(f64, f64)],
    window_s: f64,
    until_s: f64,
) -> Vec<(f64, f64)> {
    // Cumulative bytes at `t`: the last sample at or before it.
    let at = |samples: &[(f64, u64)], t: f64| {
        let i = samples.partition_point(|s| s.0 <= t + 1e-9);
        if i == 0 { 0 } else { samples[i - 1].1 }
    };
    let mut out = Vec::new();
    if window_s <= 0.0 {
        return out;
    }
    let windows = (until_s / window_s + 1e-9).floor() as usize;
    for k in 0..windows {
        let (from, to) = (k as f64 * window_s, (k + 1) as f64 * window_s);
        let shares: Vec<f64> = delivered
            .iter()
            .zip(active)
            .filter(|(_, (start, end))| *start <= from + 1e-9 && *end >= to - 1e-9)
            .map(|(samples, _)| at(samples, to).saturating_sub(at(samples, from)) as f64)
            .collect();
        if shares.len() < 2 {
            continue;
        }
        if let Some(j) = jain_index(&shares) {
            out.push((to, j));
        }
    }
    out
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
