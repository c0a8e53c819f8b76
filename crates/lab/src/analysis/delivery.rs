//! Time to deliver: how long runs took to have N MB, their quartiles, the savings of a
//! variant against the baseline (paired by seed), and what the time cap let through
//! (seeds 000 and 001's Figs. 10-12 and Table 4 / Table II).

use std::collections::BTreeMap;

use super::Quartiles;
use crate::dataset::RunData;

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
