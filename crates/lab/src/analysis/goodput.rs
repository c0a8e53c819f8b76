//! Goodput and fairness: seed 002's goodput and efficiency table (Table II, Eq. 1) and
//! Jain's fairness index of flows sharing a link, over a run and over time (seed 004
//! Eq. 6.3, Fig. 6.11).

use crate::dataset::RunData;

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
/// 1/n when one flow takes everything. `None` for no flows or all zero. The run record's
/// shared period computes it the same way.
pub use satquic_run::record::jain_index;

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
