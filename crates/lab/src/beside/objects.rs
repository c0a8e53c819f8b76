//! A busy beam's runs read back ([`super::beam`]): each object's completion time and each
//! bulk flow's goodput and queueing delay, from the record's per-flow summaries; the
//! objects' completion times by size class, and the ratio of each object's completion
//! time in one variant to the same object's in another (same seed, same flow index: the
//! same object, [`super::beam`]).

use std::path::Path;

use satquic_run::Workload;
use satquic_run::record::{SUMMARY_FILE, Summary};

use crate::dataset::RunData;
use crate::stats::quantile;

/// Size classes of the objects: label, smallest (inclusive) and largest (exclusive) size
/// in bytes. Log-uniform sizes from 100 kB to 5 MB put about 31 %, 31 % and 38 % of the
/// objects in them.
pub const SIZE_CLASSES: [(&str, u64, u64); 3] = [
    ("< 300 kB", 0, 300_000),
    ("0.3-1 MB", 300_000, 1_000_000),
    (">= 1 MB", 1_000_000, u64::MAX),
];

/// One object of a beam run.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectResult {
    /// Its flow index in the scenario (the same object in every variant of the seed).
    pub flow: u32,
    pub cc: String,
    pub bytes: u64,
    /// Seconds from its start to its last byte; `None` if the time cap came first.
    pub completion_s: Option<f64>,
}

/// One bulk flow of a beam run.
#[derive(Debug, Clone, PartialEq)]
pub struct BulkResult {
    pub cc: String,
    pub goodput_bps: f64,
    /// Link drops over its data packets at the bottleneck.
    pub loss_rate: f64,
    pub queue_p50_ms: Option<f64>,
    pub queue_p95_ms: Option<f64>,
}

/// One beam run.
#[derive(Debug, Clone, PartialEq)]
pub struct BeamRun {
    pub link: String,
    pub variant: String,
    pub workload: String,
    pub seed: u64,
    pub objects: Vec<ObjectResult>,
    pub bulk: Vec<BulkResult>,
}

impl BeamRun {
    /// A beam run from its row and summary: timed flows are the bulk flows, downloads
    /// the objects.
    pub fn of(run: &RunData, summary: &Summary) -> BeamRun {
        let mut objects = Vec::new();
        let mut bulk = Vec::new();
        for (f, spec) in summary.flows.iter().zip(&summary.scenario.flows) {
            match spec.workload {
                Workload::Download { bytes } => objects.push(ObjectResult {
                    flow: f.flow,
                    cc: f.cc.clone(),
                    bytes,
                    completion_s: f.completion_time_s.filter(|_| f.status == "completed"),
                }),
                Workload::Timed { .. } => {
                    let drops: u64 = f.link_drops.values().sum();
                    let packets = f.queue_delay.map_or(0, |q| q.packets) + drops;
                    bulk.push(BulkResult {
                        cc: f.cc.clone(),
                        goodput_bps: f.goodput_bps,
                        loss_rate: if packets > 0 {
                            drops as f64 / packets as f64
                        } else {
                            0.0
                        },
                        queue_p50_ms: f.queue_delay.map(|q| q.p50_ms),
                        queue_p95_ms: f.queue_delay.map(|q| q.p95_ms),
                    })
                }
            }
        }
        BeamRun {
            link: run.row.link.clone(),
            variant: run.row.variant.clone(),
            workload: run.row.workload.clone(),
            seed: run.row.seed,
            objects,
            bulk,
        }
    }
}

/// The beam runs of a campaign directory (rows of kind `beam` that finished), and how
/// many could not be read.
pub fn load(dir: &Path, runs: &[&RunData]) -> (Vec<BeamRun>, usize) {
    let mut out = Vec::new();
    let mut unreadable = 0;
    for r in runs.iter().filter(|r| {
        r.row.workload_kind == "beam" && matches!(r.row.status.as_str(), "completed" | "capped")
    }) {
        let path = dir.join("runs").join(&r.row.run_id).join("summary.json");
        match satquic_link::file::read(&path, SUMMARY_FILE)
            .ok()
            .and_then(|b| serde_json::from_slice::<Summary>(&b).ok())
        {
            Some(s) => out.push(BeamRun::of(r, &s)),
            None => unreadable += 1,
        }
    }
    (out, unreadable)
}

/// Completion times of a set of objects.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Completion {
    pub objects: usize,
    /// Objects the time cap ended first.
    pub unfinished: usize,
    /// Median and 95th percentile, s; an unfinished object counts as slower than every
    /// finished one, so a quantile that falls on one is infinite.
    pub median_s: f64,
    pub p95_s: f64,
}

/// The completion times of `objects`; `None` without objects.
pub fn completion<'a>(objects: impl Iterator<Item = &'a ObjectResult>) -> Option<Completion> {
    let mut times: Vec<f64> = objects
        .map(|o| o.completion_s.unwrap_or(f64::INFINITY))
        .collect();
    if times.is_empty() {
        return None;
    }
    times.sort_by(f64::total_cmp);
    Some(Completion {
        objects: times.len(),
        unfinished: times.iter().filter(|t| t.is_infinite()).count(),
        median_s: quantile_of_slowest_last(&times, 0.5),
        p95_s: quantile_of_slowest_last(&times, 0.95),
    })
}

/// [`quantile`] of sorted times whose tail may be infinite (unfinished): infinite when it
/// would interpolate towards an infinite value.
fn quantile_of_slowest_last(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    if sorted[hi].is_infinite() && (sorted[lo].is_infinite() || pos > lo as f64) {
        return f64::INFINITY;
    }
    quantile(sorted, q)
}

/// Whether an object is in size class `class` (an index of [`SIZE_CLASSES`]).
pub fn in_class(o: &ObjectResult, class: usize) -> bool {
    let (_, lo, hi) = SIZE_CLASSES[class];
    (lo..hi).contains(&o.bytes)
}

/// Per object finished in both, its completion time in `runs` over the same object's
/// in `baseline` (paired by link, workload, seed and flow index), with the object.
pub fn ratios<'a>(runs: &'a [&BeamRun], baseline: &[&BeamRun]) -> Vec<(&'a ObjectResult, f64)> {
    let mut out = Vec::new();
    for r in runs {
        let Some(b) = baseline
            .iter()
            .find(|b| b.link == r.link && b.workload == r.workload && b.seed == r.seed)
        else {
            continue;
        };
        for o in &r.objects {
            let other = b
                .objects
                .iter()
                .find(|x| x.flow == o.flow && x.bytes == o.bytes);
            if let (Some(t), Some(tb)) = (o.completion_s, other.and_then(|x| x.completion_s))
                && tb > 0.0
            {
                out.push((o, t / tb));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(flow: u32, bytes: u64, completion_s: Option<f64>) -> ObjectResult {
        ObjectResult {
            flow,
            cc: "cubic".into(),
            bytes,
            completion_s,
        }
    }

    #[test]
    fn unfinished_objects_count_as_slowest() {
        let objects: Vec<ObjectResult> = (0..20)
            .map(|i| object(i, 200_000, (i < 19).then_some(f64::from(i) + 1.0)))
            .collect();
        let c = completion(objects.iter()).unwrap();
        assert_eq!((c.objects, c.unfinished), (20, 1));
        assert!((c.median_s - 10.5).abs() < 1e-9, "{c:?}");
        assert!(
            c.p95_s.is_infinite(),
            "p95 falls between 19 s and the unfinished one"
        );
        assert!(completion([].iter()).is_none());
        assert!(in_class(&objects[0], 0) && !in_class(&objects[0], 1));
    }

    #[test]
    fn ratios_pair_the_same_object_of_the_same_seed() {
        let run = |variant: &str, seed: u64, times: [Option<f64>; 3]| BeamRun {
            link: "geo".into(),
            variant: variant.into(),
            workload: "beam60s".into(),
            seed,
            objects: times
                .iter()
                .enumerate()
                .map(|(i, t)| object(i as u32 + 3, 1_000_000, *t))
                .collect(),
            bulk: Vec::new(),
        };
        let a = run("satellite", 1, [Some(2.0), Some(3.0), None]);
        let b = run("cubic", 1, [Some(1.0), Some(6.0), Some(1.0)]);
        let other_seed = run("cubic", 2, [Some(9.0), Some(9.0), Some(9.0)]);
        let runs = [&a];
        let r = ratios(&runs, &[&other_seed, &b]);
        let values: Vec<f64> = r.iter().map(|(_, v)| *v).collect();
        assert_eq!(values, [2.0, 0.5]);
    }
}
