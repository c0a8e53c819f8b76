//! Many runs in parallel, and the per-variant statistics `satquic sim` prints.
//!
//! Each run is single-threaded and deterministic; runs are spread over a rayon pool of
//! `jobs` threads. Run `i` of a batch uses seed `base_seed + i` (wrapping), the same for
//! every variant, so variants are compared on the same link randomness and any run can be
//! repeated alone with `--seed base_seed+i --runs 1`. Results come back in (run, variant)
//! order whatever the scheduling.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::SimError;
use crate::engine;
use crate::record::{EXIT_CLASSES, RunRecord};
use crate::scenario::Scenario;

/// One configuration to compare: a label and a scenario whose seed the batch replaces.
#[derive(Debug, Clone)]
pub struct Variant {
    pub label: String,
    pub scenario: Scenario,
}

/// One finished run.
#[derive(Debug)]
pub struct RunResult {
    /// Index into the batch's variants.
    pub variant: usize,
    /// Run index within the variant.
    pub run: usize,
    pub seed: u64,
    pub record: Result<RunRecord, SimError>,
    /// Wall-clock time the run took (for `timing.json` only).
    pub wall: Duration,
}

/// The seed of run `index` of a batch.
pub fn run_seed(base_seed: u64, index: usize) -> u64 {
    base_seed.wrapping_add(index as u64)
}

/// Runs `runs` seeds of every variant on `jobs` threads, calling `on_done` as each run
/// finishes (from a worker thread, in completion order). Returns results sorted by run,
/// then variant.
pub fn run_batch(
    variants: &[Variant],
    runs: usize,
    base_seed: u64,
    jobs: usize,
    on_done: impl Fn(&RunResult) + Sync,
) -> Result<Vec<RunResult>, SimError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .map_err(|e| SimError::Invalid(format!("cannot start {jobs} worker threads: {e}")))?;
    let work: Vec<(usize, usize)> = (0..runs)
        .flat_map(|run| (0..variants.len()).map(move |v| (run, v)))
        .collect();
    let results = pool.install(|| {
        work.par_iter()
            .map(|&(run, variant)| {
                let seed = run_seed(base_seed, run);
                let mut scenario = variants[variant].scenario.clone();
                scenario.seed = seed;
                let started = Instant::now();
                let record = engine::run(&scenario);
                let result = RunResult {
                    variant,
                    run,
                    seed,
                    record,
                    wall: started.elapsed(),
                };
                on_done(&result);
                result
            })
            .collect::<Vec<_>>()
    });
    Ok(results)
}

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

    #[test]
    fn run_seeds_count_up_from_the_base() {
        assert_eq!(run_seed(10, 0), 10);
        assert_eq!(run_seed(10, 3), 13);
        assert_eq!(run_seed(u64::MAX, 1), 0);
    }
}
