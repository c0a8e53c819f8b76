//! A busy beam's runs read back ([`super::beam`]): each object's completion time and each
//! bulk flow's goodput and queueing delay, from the record's per-flow summaries; the
//! objects' completion times by size class, and the ratio of each object's completion
//! time in one variant to the same object's in another (same seed, same flow index: the
//! same object, [`super::beam`]); and the short requests' completion times against the
//! path's min RTT, a responsiveness test in the spirit of draft-ietf-ippm-responsiveness
//! ([`responsiveness`]).

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
    /// Seconds from its start to the end of its handshake, if it got there.
    pub handshake_s: Option<f64>,
}

impl ObjectResult {
    /// Seconds from the end of its handshake to its last byte: the request and its
    /// response on a connection already up; `None` if either end is missing.
    pub fn request_s(&self) -> Option<f64> {
        Some(self.completion_s? - self.handshake_s?)
    }
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
    /// The smallest RTT any flow of the run measured, s: the path's base RTT as the run
    /// saw it (on a slotted link, its lowest slot's).
    pub min_rtt_s: Option<f64>,
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
                    handshake_s: f.handshake_time_s,
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
            min_rtt_s: summary
                .flows
                .iter()
                .filter_map(|f| f.min_rtt_s)
                .min_by(f64::total_cmp),
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
    let times: Vec<f64> = objects
        .map(|o| o.completion_s.unwrap_or(f64::INFINITY))
        .collect();
    let (median_s, p95_s) = median_p95(times.clone())?;
    Some(Completion {
        objects: times.len(),
        unfinished: times.iter().filter(|t| t.is_infinite()).count(),
        median_s,
        p95_s,
    })
}

/// Median and 95th percentile of values whose missing ones are infinite (slowest);
/// `None` without values.
fn median_p95(mut values: Vec<f64>) -> Option<(f64, f64)> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some((
        quantile_of_slowest_last(&values, 0.5),
        quantile_of_slowest_last(&values, 0.95),
    ))
}

/// Objects below this size are the short requests of [`responsiveness`]: a request and
/// a response of a few packets, like the draft's probes, not a transfer of its own.
pub const SHORT_REQUEST_BYTES: u64 = 100_000;

/// The short requests of a set of runs against the path: each request's time over its
/// run's min RTT (the draft's "responsiveness" asks how many round trips a request takes
/// under load). Times in seconds; an unfinished request counts as slowest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Responsiveness {
    pub requests: usize,
    pub unfinished: usize,
    /// Median over the runs of their min RTT, s.
    pub min_rtt_s: f64,
    /// Completion time (handshake included), median and p95, s, and in min RTTs.
    pub completion_s: (f64, f64),
    pub completion_rtts: (f64, f64),
    /// From the handshake's end to the last byte, median and p95, s, and in min RTTs.
    pub request_s: (f64, f64),
    pub request_rtts: (f64, f64),
}

/// [`Responsiveness`] of the objects below [`SHORT_REQUEST_BYTES`] of runs that have a
/// min RTT; `None` without any.
pub fn responsiveness(runs: &[&BeamRun]) -> Option<Responsiveness> {
    let short: Vec<(&ObjectResult, f64)> = runs
        .iter()
        .filter_map(|r| Some((r, r.min_rtt_s.filter(|m| *m > 0.0)?)))
        .flat_map(|(r, rtt)| r.objects.iter().map(move |o| (o, rtt)))
        .filter(|(o, _)| o.bytes < SHORT_REQUEST_BYTES)
        .collect();
    if short.is_empty() {
        return None;
    }
    let time =
        |o: &ObjectResult, f: fn(&ObjectResult) -> Option<f64>| f(o).unwrap_or(f64::INFINITY);
    let of = |f: fn(&ObjectResult) -> Option<f64>, per_rtt: bool| {
        median_p95(
            short
                .iter()
                .map(|(o, rtt)| time(o, f) / if per_rtt { *rtt } else { 1.0 })
                .collect(),
        )
    };
    let mut rtts: Vec<f64> = runs.iter().filter_map(|r| r.min_rtt_s).collect();
    rtts.sort_by(f64::total_cmp);
    Some(Responsiveness {
        requests: short.len(),
        unfinished: short
            .iter()
            .filter(|(o, _)| o.completion_s.is_none())
            .count(),
        min_rtt_s: quantile(&rtts, 0.5),
        completion_s: of(|o| o.completion_s, false)?,
        completion_rtts: of(|o| o.completion_s, true)?,
        request_s: of(ObjectResult::request_s, false)?,
        request_rtts: of(ObjectResult::request_s, true)?,
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
            handshake_s: completion_s.map(|_| 0.03),
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

    /// Requests below 100 kB only, each against its own run's min RTT; a run without a
    /// min RTT is left out; an unfinished request is the slowest.
    #[test]
    fn responsiveness_counts_short_requests_in_their_runs_min_rtt() {
        let run = |min_rtt_s: Option<f64>, objects: Vec<ObjectResult>| BeamRun {
            link: "leo".into(),
            variant: "satellite".into(),
            workload: "rpm".into(),
            seed: 1,
            min_rtt_s,
            objects,
            bulk: Vec::new(),
        };
        // 20 ms path: 10 kB requests of 50 ms (30 ms of handshake, 20 of request), one
        // unfinished, and a 1 MB object that is not a request.
        let mut a: Vec<ObjectResult> = (0..19).map(|i| object(i, 10_000, Some(0.05))).collect();
        a.push(object(19, 10_000, None));
        a.push(object(20, 1_000_000, Some(9.0)));
        // 40 ms path: requests of 0.1 s (2.5 min RTTs); without a min RTT: left out.
        let b: Vec<ObjectResult> = (0..20).map(|i| object(i, 10_000, Some(0.1))).collect();
        let (ra, rb, rc) = (run(Some(0.02), a), run(Some(0.04), b.clone()), run(None, b));
        let r = responsiveness(&[&ra, &rb, &rc]).unwrap();
        assert_eq!((r.requests, r.unfinished), (40, 1));
        assert!((r.min_rtt_s - 0.03).abs() < 1e-12, "{r:?}");
        assert!((r.completion_rtts.0 - 2.5).abs() < 1e-9, "{r:?}");
        assert!((r.request_s.0 - 0.07).abs() < 1e-9, "{r:?}");
        assert!((r.request_rtts.0 - 1.75).abs() < 1e-9, "{r:?}");
        assert!(
            r.completion_s.1 > 0.09 && r.completion_s.1.is_finite(),
            "{r:?}"
        );
        assert!(responsiveness(&[&rc]).is_none());
    }

    #[test]
    fn ratios_pair_the_same_object_of_the_same_seed() {
        let run = |variant: &str, seed: u64, times: [Option<f64>; 3]| BeamRun {
            link: "geo".into(),
            variant: variant.into(),
            workload: "beam60s".into(),
            seed,
            min_rtt_s: Some(0.02),
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
