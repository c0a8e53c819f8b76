//! Quartiles, and the per-variant statistics `satquic sim` prints.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use satquic_run::record::{EXIT_CLASSES, RunRecord};

/// First quartile, median and third quartile (linear interpolation between order
/// statistics, numpy's default).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quartiles {
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    /// Number of values.
    pub n: usize,
}

impl Quartiles {
    /// `None` for no values.
    pub fn of(values: &[f64]) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        Some(Quartiles {
            q1: quantile(&v, 0.25),
            median: quantile(&v, 0.5),
            q3: quantile(&v, 0.75),
            n: v.len(),
        })
    }
}

/// Quantile `q` of sorted values, linear interpolation.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Statistics of one variant over its runs (first flow of each run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantStats {
    pub label: String,
    pub runs: usize,
    pub completed: usize,
    pub capped: usize,
    pub failed: usize,
    /// Completion time of completed runs, seconds.
    pub completion_s: Option<Quartiles>,
    /// Time to deliver each of the requested MB marks (only runs that got there).
    pub time_to_mb_s: BTreeMap<u64, Option<Quartiles>>,
    /// Slow-start exit time, seconds since the start.
    pub exit_s: Option<Quartiles>,
    /// Runs per exit class (`early`, `chokepoint`, `late`, `none`).
    pub exit_classes: BTreeMap<String, usize>,
    /// Runs in which the sender detected at least one loss.
    pub runs_with_loss: usize,
    /// Packets the sender declared lost, per run.
    pub packets_lost: Option<Quartiles>,
    /// First detected loss, seconds since the start (runs with a loss).
    pub first_loss_s: Option<Quartiles>,
    /// Goodput in bit/s.
    pub goodput_bps: Option<Quartiles>,
}

impl VariantStats {
    /// Aggregates the records of one variant; `marks_mb` are the MB marks to report.
    pub fn from_records<'a>(
        label: &str,
        records: impl IntoIterator<Item = &'a RunRecord>,
        marks_mb: &[u64],
    ) -> Self {
        let mut stats = VariantStats {
            label: label.to_string(),
            runs: 0,
            completed: 0,
            capped: 0,
            failed: 0,
            completion_s: None,
            time_to_mb_s: BTreeMap::new(),
            exit_s: None,
            exit_classes: EXIT_CLASSES.iter().map(|c| (c.to_string(), 0)).collect(),
            runs_with_loss: 0,
            packets_lost: None,
            first_loss_s: None,
            goodput_bps: None,
        };
        let mut completion = Vec::new();
        let mut marks: BTreeMap<u64, Vec<f64>> =
            marks_mb.iter().map(|m| (*m, Vec::new())).collect();
        let mut exits = Vec::new();
        let mut lost = Vec::new();
        let mut first_loss = Vec::new();
        let mut goodput = Vec::new();
        for record in records {
            let Some(flow) = record.summary.flows.first() else {
                continue;
            };
            stats.runs += 1;
            match flow.status.as_str() {
                "completed" => stats.completed += 1,
                "failed" => stats.failed += 1,
                _ => stats.capped += 1,
            }
            if let Some(t) = flow.completion_time_s {
                completion.push(t);
            }
            for (mb, times) in marks.iter_mut() {
                if let Some(t) = record.time_to_mb(flow.flow, *mb) {
                    times.push(t);
                }
            }
            if let Some(e) = &flow.slow_start_exit {
                exits.push(e.at_s);
            }
            *stats
                .exit_classes
                .entry(flow.exit_class.clone())
                .or_default() += 1;
            if let Some(t) = flow.first_loss_detected_at_s {
                stats.runs_with_loss += 1;
                first_loss.push(t);
            }
            lost.push(flow.packets_lost as f64);
            goodput.push(flow.goodput_bps);
        }
        stats.completion_s = Quartiles::of(&completion);
        stats.time_to_mb_s = marks
            .into_iter()
            .map(|(mb, times)| (mb, Quartiles::of(&times)))
            .collect();
        stats.exit_s = Quartiles::of(&exits);
        stats.packets_lost = Quartiles::of(&lost);
        stats.first_loss_s = Quartiles::of(&first_loss);
        stats.goodput_bps = Quartiles::of(&goodput);
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quartiles_interpolate_like_numpy() {
        let q = Quartiles::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((q.q1, q.median, q.q3, q.n), (1.75, 2.5, 3.25, 4));
        let q = Quartiles::of(&[7.0]).unwrap();
        assert_eq!((q.q1, q.median, q.q3), (7.0, 7.0, 7.0));
        assert!(Quartiles::of(&[]).is_none());
    }
}
