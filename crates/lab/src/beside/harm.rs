//! Harm, after Ware, Mukerjee, Seshan and Sherry, "Beyond Jain's Fairness Index: Setting
//! the Bar for the Deployment of Congestion Control Algorithms" (HotNets 2019): a
//! newcomer N is judged by what an incumbent I loses beside it, against what I loses
//! beside a newcomer of its own algorithm (I beside I), on the same path, with the same
//! stagger, over the same seeds.
//!
//! For each measure of the incumbent over the shared period (mean over seeds):
//!
//! - **share**: its share of the pair's goodput. `share_loss_pts` = 100 x (share beside I
//!   minus share beside N): the points of throughput share it loses to N beyond what it
//!   loses to its own kind. In Ware's terms, with the incumbent's share beside its own kind as
//!   the reference, harm(N) - harm(I) in points; > 0: N takes more than I's own kind.
//! - **throughput harm** (Ware's form for a more-is-better measure x):
//!   100 x (x beside I minus x beside N) / x beside I, on its goodput.
//! - **loss rate** (link drops over its packets at the bottleneck): `loss_growth_pts` =
//!   100 x (rate beside N minus rate beside I).
//! - **p95 queueing delay**: `p95_growth_ms`, and the delay harm in Ware's form for a
//!   less-is-better measure, 100 x (d beside N minus d beside I) / d beside N.
//!
//! Negative values mean the incumbent fares better beside N than beside its own kind.

use super::pairs::{PairCell, PairRun};

/// What the incumbent got beside one newcomer: means over the cell's seeds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Beside {
    /// Goodput over the shared period, bit/s.
    pub goodput_bps: f64,
    /// Share of the pair's goodput (0-1).
    pub share: f64,
    /// Link drops over link packets in the shared period (0-1).
    pub loss_rate: f64,
    /// 95th percentile of its queueing delay in the shared period, ms.
    pub p95_ms: Option<f64>,
    /// Seeds averaged.
    pub runs: usize,
}

impl Beside {
    /// The incumbent's means over a cell.
    pub fn incumbent_of(cell: &PairCell) -> Beside {
        let inc = |f: fn(&PairRun) -> f64| cell.mean(|r| Some(f(r))).unwrap_or(0.0);
        Beside {
            goodput_bps: inc(|r| r.incumbent.goodput_bps),
            share: inc(|r| r.incumbent.share),
            loss_rate: inc(|r| r.incumbent.shared_loss_rate()),
            p95_ms: cell.mean(|r| r.incumbent.queue_p95_ms),
            runs: cell.runs.len(),
        }
    }
}

/// The harm newcomer N does to incumbent I on one path and stagger.
#[derive(Debug, Clone, PartialEq)]
pub struct Harm {
    pub link: String,
    pub stagger_ms: u64,
    pub incumbent: String,
    pub newcomer: String,
    /// I beside a newcomer of its own algorithm (the reference).
    pub own: Beside,
    /// I beside N.
    pub with: Beside,
}

impl Harm {
    /// Points of throughput share I loses beside N beyond those it loses beside I.
    pub fn share_loss_pts(&self) -> f64 {
        100.0 * (self.own.share - self.with.share)
    }

    /// Ware's throughput harm in points: 100 x (x_own - x_with) / x_own (0 if x_own is).
    pub fn throughput_harm_pts(&self) -> f64 {
        ware_more_is_better(self.own.goodput_bps, self.with.goodput_bps)
    }

    /// Points of loss rate I gains beside N.
    pub fn loss_growth_pts(&self) -> f64 {
        100.0 * (self.with.loss_rate - self.own.loss_rate)
    }

    /// Milliseconds of p95 queueing delay I gains beside N.
    pub fn p95_growth_ms(&self) -> Option<f64> {
        Some(self.with.p95_ms? - self.own.p95_ms?)
    }

    /// Ware's delay harm in points: 100 x (d_with - d_own) / d_with (0 if both are 0).
    pub fn delay_harm_pts(&self) -> Option<f64> {
        Some(ware_less_is_better(self.own.p95_ms?, self.with.p95_ms?))
    }
}

/// Ware's harm for a measure where more is better: (reference - with) / reference.
pub fn ware_more_is_better(reference: f64, with: f64) -> f64 {
    if reference > 0.0 {
        100.0 * (reference - with) / reference
    } else {
        0.0
    }
}

/// Ware's harm for a measure where less is better: (with - reference) / with.
pub fn ware_less_is_better(reference: f64, with: f64) -> f64 {
    if with > 0.0 {
        100.0 * (with - reference) / with
    } else {
        0.0
    }
}

/// The harm of every cell's latecomer to its incumbent, against the cell of the
/// incumbent beside its own kind on the same path and stagger (cells without that
/// reference are left out); in the cells' order. The own-kind cells themselves are in
/// it too, with no harm, as the reference rows.
pub fn harms(cells: &[PairCell]) -> Vec<Harm> {
    cells
        .iter()
        .filter_map(|c| {
            let own = cells.iter().find(|o| {
                o.link == c.link
                    && o.stagger_ms == c.stagger_ms
                    && o.incumbent == c.incumbent
                    && o.latecomer == c.incumbent
            })?;
            Some(Harm {
                link: c.link.clone(),
                stagger_ms: c.stagger_ms,
                incumbent: c.incumbent.clone(),
                newcomer: c.latecomer.clone(),
                own: Beside::incumbent_of(own),
                with: Beside::incumbent_of(c),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::pairs::{FlowMeasures, cells};
    use super::*;

    fn flow(cc: &str, goodput_mbps: f64, share: f64, drops: u64, p95_ms: f64) -> FlowMeasures {
        FlowMeasures {
            cc: cc.into(),
            goodput_bps: goodput_mbps * 1e6,
            share,
            shared_packets: 1000,
            shared_drops: drops,
            queue_p50_ms: Some(p95_ms / 2.0),
            queue_p95_ms: Some(p95_ms),
            flow_packets: 2000,
            flow_drops: drops,
        }
    }

    fn run(seed: u64, inc: FlowMeasures, late: FlowMeasures) -> PairRun {
        PairRun {
            link: "thesis-sat".into(),
            stagger_ms: 20_000,
            seed,
            incumbent: inc,
            latecomer: late,
            jain_index: 1.0,
            shared_s: 40.0,
        }
    }

    /// A constructed case: CUBIC beside CUBIC keeps 60 % of the link (two seeds: 0.62 and
    /// 0.58), 1 % loss and a 400 ms p95; beside the newcomer it keeps 40 % (0.45, 0.35),
    /// 3 % loss and a 500 ms p95. The newcomer's harm beyond CUBIC's own is 20 points of
    /// share, 2 points of loss, 100 ms of p95 (Ware: 100 / 500 = 20 points), and Ware's
    /// throughput harm is (12 - 8) / 12 = 33.3 points.
    #[test]
    fn harm_is_measured_against_the_incumbent_beside_its_own_kind() {
        let runs = vec![
            run(
                1,
                flow("cubic", 12.4, 0.62, 10, 380.0),
                flow("cubic", 7.6, 0.38, 5, 380.0),
            ),
            run(
                2,
                flow("cubic", 11.6, 0.58, 10, 420.0),
                flow("cubic", 8.4, 0.42, 5, 420.0),
            ),
            run(
                1,
                flow("cubic", 9.0, 0.45, 30, 450.0),
                flow("satellite", 11.0, 0.55, 80, 450.0),
            ),
            run(
                2,
                flow("cubic", 7.0, 0.35, 30, 550.0),
                flow("satellite", 13.0, 0.65, 90, 550.0),
            ),
            // Another stagger: not the reference of the runs above.
            PairRun {
                stagger_ms: 5_000,
                ..run(
                    1,
                    flow("cubic", 1.0, 0.05, 0, 0.0),
                    flow("cubic", 19.0, 0.95, 0, 0.0),
                )
            },
        ];
        let harms = harms(&cells(&runs));
        let h = harms
            .iter()
            .find(|h| h.newcomer == "satellite")
            .expect("the newcomer's harm");
        assert_eq!((h.incumbent.as_str(), h.stagger_ms), ("cubic", 20_000));
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(
            close(h.own.share, 0.60) && close(h.with.share, 0.40),
            "{h:?}"
        );
        assert!(close(h.share_loss_pts(), 20.0), "{}", h.share_loss_pts());
        assert!(close(h.loss_growth_pts(), 2.0), "{}", h.loss_growth_pts());
        assert!(close(h.p95_growth_ms().unwrap(), 100.0));
        assert!(close(h.delay_harm_pts().unwrap(), 20.0));
        assert!(close(h.throughput_harm_pts(), 100.0 / 3.0));
        // The own-kind cell is its own reference: no harm.
        let own = harms
            .iter()
            .find(|h| h.newcomer == "cubic" && h.stagger_ms == 20_000)
            .unwrap();
        assert_eq!(own.share_loss_pts(), 0.0);
        assert_eq!(own.delay_harm_pts(), Some(0.0));
        assert_eq!(harms.len(), 3, "every cell with a reference");
    }

    /// A newcomer that leaves the incumbent more than its own kind does does negative
    /// harm; an incumbent with no queue on either side has no delay harm.
    #[test]
    fn kinder_newcomers_do_negative_harm_and_empty_queues_none() {
        assert!(ware_more_is_better(10.0, 12.0) < 0.0);
        assert!(ware_less_is_better(100.0, 50.0) < 0.0);
        assert_eq!(ware_less_is_better(0.0, 0.0), 0.0);
        assert_eq!(ware_more_is_better(0.0, 5.0), 0.0);
    }
}
