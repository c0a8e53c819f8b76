//! Slow-start exits: seed 003's classes and their shares (with Wilson intervals), the
//! capacity point read from a latency trace when there is no ground truth (003 Sec. V-B),
//! and the table of exit times against a normal fit (003 Table II).

use super::mean_sd;
use crate::dataset::RunData;

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
