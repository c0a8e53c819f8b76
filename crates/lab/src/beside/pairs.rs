//! The pairs of a campaign: each run of two flows read back from its `summary.json` as
//! what the incumbent (flow 0) and the latecomer (flow 1) got of the period they shared
//! the bottleneck (the record's `shared`: goodput, share, link packets and drops, queueing
//! delay, Jain's index; satquic-run's `record/shared.rs`) and over their whole flows
//! (link drops over the data packets that reached the link), and the runs of one pair
//! grouped across seeds ([`PairCell`]).
//!
//! Nothing is computed again here that the record has: the measures are the record's,
//! the cells only average them over seeds.

use std::path::Path;

use satquic_run::record::summary::FlowSummary;
use satquic_run::record::{SUMMARY_FILE, SharedFlow, Summary};

use crate::dataset::RunData;

/// One flow of a pair: what it got of the shared period and over its whole flow.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowMeasures {
    /// Its congestion-control spec.
    pub cc: String,
    /// Goodput over the shared period, bit/s, and its share of the pair's.
    pub goodput_bps: f64,
    pub share: f64,
    /// Its data packets that reached the bottleneck in the shared period, and those the
    /// link dropped.
    pub shared_packets: u64,
    pub shared_drops: u64,
    /// Queueing delay of its data packets in the shared period, ms.
    pub queue_p50_ms: Option<f64>,
    pub queue_p95_ms: Option<f64>,
    /// Over the whole flow: its data packets that reached the bottleneck (departed or
    /// dropped) and those dropped.
    pub flow_packets: u64,
    pub flow_drops: u64,
}

impl FlowMeasures {
    /// Link drops over link packets in the shared period (0 without packets).
    pub fn shared_loss_rate(&self) -> f64 {
        ratio(self.shared_drops, self.shared_packets)
    }

    /// Link drops over link packets over the whole flow (0 without packets).
    pub fn flow_loss_rate(&self) -> f64 {
        ratio(self.flow_drops, self.flow_packets)
    }

    fn of(shared: &SharedFlow, flow: &FlowSummary) -> Self {
        let flow_drops: u64 = flow.link_drops.values().sum();
        let departed = flow.queue_delay.map_or(0, |q| q.packets);
        FlowMeasures {
            cc: shared.cc.clone(),
            goodput_bps: shared.goodput_bps,
            share: shared.share,
            shared_packets: shared.link_packets,
            shared_drops: shared.link_drops,
            queue_p50_ms: shared.queue_delay.map(|q| q.p50_ms),
            queue_p95_ms: shared.queue_delay.map(|q| q.p95_ms),
            flow_packets: departed + flow_drops,
            flow_drops,
        }
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// One run of a pair.
#[derive(Debug, Clone, PartialEq)]
pub struct PairRun {
    /// Link label (runs.csv's `link`).
    pub link: String,
    /// How long after the incumbent the latecomer started, ms.
    pub stagger_ms: u64,
    pub seed: u64,
    pub incumbent: FlowMeasures,
    pub latecomer: FlowMeasures,
    /// Jain's index of the goodputs over the shared period.
    pub jain_index: f64,
    /// Length of the shared period, s.
    pub shared_s: f64,
}

impl PairRun {
    /// The pair's runs.csv row and record summary as a pair run; `None` unless the run
    /// has exactly two flows that shared the link.
    pub fn of(run: &RunData, summary: &Summary) -> Option<PairRun> {
        let shared = summary.shared.as_ref()?;
        if summary.flows.len() != 2 || shared.flows.len() != 2 {
            return None;
        }
        let [a, b] = [0, 1].map(|i| FlowMeasures::of(&shared.flows[i], &summary.flows[i]));
        let start = |i: usize| summary.flows[i].start_s;
        Some(PairRun {
            link: run.row.link.clone(),
            stagger_ms: ((start(1) - start(0)).max(0.0) * 1000.0).round() as u64,
            seed: run.row.seed,
            incumbent: a,
            latecomer: b,
            jain_index: shared.jain_index,
            shared_s: shared.to_s - shared.from_s,
        })
    }

    /// Whether the run can be reproduced byte for byte: quinn's `bbr` draws from the
    /// thread RNG, so a run with a `bbr` flow cannot.
    pub fn reproducible(&self) -> bool {
        !is_quinn_bbr(&self.incumbent.cc) && !is_quinn_bbr(&self.latecomer.cc)
    }
}

/// quinn's own BBR (`bbr`, as a spec string), whose runs are not reproducible.
pub fn is_quinn_bbr(cc: &str) -> bool {
    cc.trim().eq_ignore_ascii_case("bbr")
}

/// The pair runs of a campaign directory: every finished two-flow run whose record has a
/// shared period, in runs.csv order. Runs whose summary cannot be read are left out and
/// counted in the second value.
pub fn load(dir: &Path, runs: &[&RunData]) -> (Vec<PairRun>, usize) {
    let mut out = Vec::new();
    let mut unreadable = 0;
    for r in runs.iter().filter(|r| is_pair_row(r)) {
        let path = dir.join("runs").join(&r.row.run_id).join("summary.json");
        let summary = satquic_link::file::read(&path, SUMMARY_FILE)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Summary>(&bytes).ok());
        match summary.as_ref().and_then(|s| PairRun::of(r, s)) {
            Some(p) => out.push(p),
            None => unreadable += 1,
        }
    }
    (out, unreadable)
}

/// A runs.csv row of a finished run of two timed or download flows (not a beam).
pub fn is_pair_row(r: &RunData) -> bool {
    r.row.flows == 2
        && r.row.workload_kind != "beam"
        && matches!(r.row.status.as_str(), "completed" | "capped")
}

/// The runs of one pair on one path and stagger, across seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct PairCell {
    pub link: String,
    pub stagger_ms: u64,
    pub incumbent: String,
    pub latecomer: String,
    pub runs: Vec<PairRun>,
}

impl PairCell {
    /// Mean over the cell's runs of `f` (`None` where `f` has no value in any run).
    pub fn mean(&self, f: impl Fn(&PairRun) -> Option<f64>) -> Option<f64> {
        let v: Vec<f64> = self.runs.iter().filter_map(f).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }

    /// Whether every run of the cell is reproducible ([`PairRun::reproducible`]).
    pub fn reproducible(&self) -> bool {
        self.runs.iter().all(PairRun::reproducible)
    }
}

/// Groups pair runs into cells by (link, stagger, incumbent, latecomer), in the order the
/// cells first appear.
pub fn cells(runs: &[PairRun]) -> Vec<PairCell> {
    let mut out: Vec<PairCell> = Vec::new();
    for r in runs {
        let found = out.iter_mut().find(|c| {
            c.link == r.link
                && c.stagger_ms == r.stagger_ms
                && c.incumbent == r.incumbent.cc
                && c.latecomer == r.latecomer.cc
        });
        match found {
            Some(c) => c.runs.push(r.clone()),
            None => out.push(PairCell {
                link: r.link.clone(),
                stagger_ms: r.stagger_ms,
                incumbent: r.incumbent.cc.clone(),
                latecomer: r.latecomer.cc.clone(),
                runs: vec![r.clone()],
            }),
        }
    }
    out
}
