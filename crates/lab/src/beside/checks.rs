//! Issue 38's checks of the `satellite` profile beside other traffic, each a row with a
//! verdict:
//!
//! - **loss**: in every pair with the profile in it, the profile's flow loses (link drops
//!   over its data packets at the bottleneck, over the whole flow) no more than
//!   [`LOSS_FLOOR`] of its packets or no more than `cubic` loses in the same role (the
//!   same pair with `cubic` in the profile's place) on the same path, stagger and seed,
//!   whichever is larger; a row passes when every seed does and shows the worst seed.
//! - **harm**: as the latecomer, the profile harms each incumbent (`cubic`, `bbr3`,
//!   `newreno`, itself) no more than the incumbent's own algorithm does in the same role
//!   ([`super::harm`]): within [`SHARE_TOLERANCE_PTS`] points of throughput share, and
//!   its delay harm on the incumbent's p95 queueing delay within the same number of
//!   points (Ware's form) or [`DELAY_TOLERANCE_MS`], whichever is looser (a packet's
//!   serialization at 20 Mbit/s is 0.6 ms: below that the quantiles are noise).

use super::harm::Harm;
use super::pairs::PairRun;

/// The controller the checks are about.
pub const PROFILE: &str = "satellite";
/// Its stand-in for the loss bound: `cubic` in the same role.
pub const LOSS_REFERENCE: &str = "cubic";
/// The loss the profile may always have: 2 % of its packets.
pub const LOSS_FLOOR: f64 = 0.02;
/// Points of throughput share the profile may take beyond the incumbent's own kind.
pub const SHARE_TOLERANCE_PTS: f64 = 5.0;
/// Points of delay harm (Ware's form) allowed beyond the incumbent's own kind ...
pub const DELAY_TOLERANCE_PTS: f64 = 5.0;
/// ... or this many milliseconds of p95, whichever is looser.
pub const DELAY_TOLERANCE_MS: f64 = 1.0;
/// The incumbents the harm check is made against.
pub const HARM_INCUMBENTS: [&str; 4] = ["cubic", "bbr3", "newreno", "satellite"];

/// Which flow of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Incumbent,
    Latecomer,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Incumbent => "incumbent",
            Role::Latecomer => "latecomer",
        }
    }
}

/// The loss check of the profile in one role of one pair on one path and stagger.
#[derive(Debug, Clone, PartialEq)]
pub struct LossCheck {
    pub link: String,
    pub stagger_ms: u64,
    pub role: Role,
    /// The other flow's controller.
    pub partner: String,
    /// The worst seed: the profile's loss rate, `cubic`'s in its place, the bound and the
    /// profile's drops.
    pub seed: u64,
    pub loss_rate: f64,
    pub reference_loss_rate: Option<f64>,
    pub bound: f64,
    pub drops: u64,
    /// Seeds compared.
    pub seeds: usize,
    /// `None` when no seed has the `cubic` counterpart run.
    pub pass: Option<bool>,
}

/// The loss checks of every pair with the profile in it, in the order the pairs first
/// appear (the profile beside itself gives a row per role).
pub fn loss_checks(runs: &[PairRun]) -> Vec<LossCheck> {
    let mut out: Vec<LossCheck> = Vec::new();
    for r in runs {
        for role in [Role::Incumbent, Role::Latecomer] {
            let (me, partner) = match role {
                Role::Incumbent => (&r.incumbent, &r.latecomer),
                Role::Latecomer => (&r.latecomer, &r.incumbent),
            };
            if me.cc != PROFILE {
                continue;
            }
            let reference = counterpart(runs, r, role).map(|c| match role {
                Role::Incumbent => c.incumbent.flow_loss_rate(),
                Role::Latecomer => c.latecomer.flow_loss_rate(),
            });
            let bound = reference.map_or(LOSS_FLOOR, |c| c.max(LOSS_FLOOR));
            let seed_check = LossCheck {
                link: r.link.clone(),
                stagger_ms: r.stagger_ms,
                role,
                partner: partner.cc.clone(),
                seed: r.seed,
                loss_rate: me.flow_loss_rate(),
                reference_loss_rate: reference,
                bound,
                drops: me.flow_drops,
                seeds: 1,
                pass: reference.map(|_| me.flow_loss_rate() <= bound),
            };
            merge(&mut out, seed_check);
        }
    }
    out
}

/// The same run with `cubic` in place of the profile's flow in `role`.
fn counterpart<'a>(runs: &'a [PairRun], r: &PairRun, role: Role) -> Option<&'a PairRun> {
    runs.iter().find(|c| {
        let (me, partner, r_partner) = match role {
            Role::Incumbent => (&c.incumbent, &c.latecomer, &r.latecomer),
            Role::Latecomer => (&c.latecomer, &c.incumbent, &r.incumbent),
        };
        c.link == r.link
            && c.stagger_ms == r.stagger_ms
            && c.seed == r.seed
            && me.cc == LOSS_REFERENCE
            && partner.cc == r_partner.cc
    })
}

/// Adds one seed's check to its row: the row keeps the worst seed (the largest loss over
/// its bound) and passes only if every seed with a counterpart does.
fn merge(rows: &mut Vec<LossCheck>, seed: LossCheck) {
    let Some(row) = rows.iter_mut().find(|c| {
        c.link == seed.link
            && c.stagger_ms == seed.stagger_ms
            && c.role == seed.role
            && c.partner == seed.partner
    }) else {
        rows.push(seed);
        return;
    };
    let seeds = row.seeds + 1;
    let pass = match (row.pass, seed.pass) {
        (Some(a), Some(b)) => Some(a && b),
        (a, b) => a.or(b),
    };
    if seed.loss_rate - seed.bound > row.loss_rate - row.bound {
        *row = seed;
    }
    row.seeds = seeds;
    row.pass = pass;
}

/// The harm check of the profile as the latecomer beside one incumbent.
#[derive(Debug, Clone, PartialEq)]
pub struct HarmCheck {
    pub harm: Harm,
    pub share_pass: bool,
    /// `None` without queueing-delay quantiles on either side.
    pub delay_pass: Option<bool>,
}

impl HarmCheck {
    /// Both parts pass (a missing delay part does not fail it).
    pub fn pass(&self) -> bool {
        self.share_pass && self.delay_pass != Some(false)
    }
}

/// The harm checks: every harm whose newcomer is the profile and whose incumbent is one
/// of [`HARM_INCUMBENTS`], in the harms' order.
pub fn harm_checks(harms: &[Harm]) -> Vec<HarmCheck> {
    harms
        .iter()
        .filter(|h| h.newcomer == PROFILE && HARM_INCUMBENTS.contains(&h.incumbent.as_str()))
        .map(|h| HarmCheck {
            harm: h.clone(),
            share_pass: h.share_loss_pts() <= SHARE_TOLERANCE_PTS,
            delay_pass: h
                .delay_harm_pts()
                .zip(h.p95_growth_ms())
                .map(|(pts, ms)| pts <= DELAY_TOLERANCE_PTS || ms <= DELAY_TOLERANCE_MS),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::harm::{Beside, harms};
    use super::super::pairs::{FlowMeasures, cells};
    use super::*;

    fn flow(cc: &str, packets: u64, drops: u64) -> FlowMeasures {
        FlowMeasures {
            cc: cc.into(),
            goodput_bps: 1e6,
            share: 0.5,
            shared_packets: packets,
            shared_drops: drops,
            queue_p50_ms: Some(10.0),
            queue_p95_ms: Some(20.0),
            flow_packets: packets,
            flow_drops: drops,
        }
    }

    fn run(seed: u64, inc: FlowMeasures, late: FlowMeasures) -> PairRun {
        PairRun {
            link: "qir-sat".into(),
            stagger_ms: 5_000,
            seed,
            incumbent: inc,
            latecomer: late,
            jain_index: 1.0,
            shared_s: 55.0,
        }
    }

    /// The profile's loss is held to 2 % or to cubic's in the same role and seed,
    /// whichever is larger, and a row fails if any seed does.
    #[test]
    fn loss_is_bounded_by_two_percent_or_cubic_in_the_same_role() {
        let runs = vec![
            // Seed 1: cubic as latecomer beside bbr3 loses 5 %: the profile's 4 % passes.
            run(1, flow("bbr3", 1000, 10), flow("cubic", 1000, 50)),
            run(1, flow("bbr3", 1000, 10), flow("satellite", 1000, 40)),
            // Seed 2: cubic loses 1 %, the bound is 2 %: the profile's 3 % fails.
            run(2, flow("bbr3", 1000, 10), flow("cubic", 1000, 10)),
            run(2, flow("bbr3", 1000, 10), flow("satellite", 1000, 30)),
            // As incumbent beside newreno, no cubic counterpart: no verdict.
            run(1, flow("satellite", 1000, 1), flow("newreno", 1000, 0)),
        ];
        let checks = loss_checks(&runs);
        assert_eq!(checks.len(), 2);
        let late = &checks[0];
        assert_eq!(
            (late.role, late.partner.as_str()),
            (Role::Latecomer, "bbr3")
        );
        assert_eq!(late.seeds, 2);
        assert_eq!(late.pass, Some(false));
        assert_eq!(late.seed, 2, "the worst seed is shown");
        assert!((late.bound - LOSS_FLOOR).abs() < 1e-12);
        assert_eq!(checks[1].role, Role::Incumbent);
        assert_eq!(checks[1].pass, None);
        // With seed 2 gone, seed 1 passes against cubic's 5 %.
        let one: Vec<PairRun> = runs.into_iter().filter(|r| r.seed == 1).collect();
        let late = &loss_checks(&one)[0];
        assert_eq!(late.pass, Some(true));
        assert!((late.bound - 0.05).abs() < 1e-12);
    }

    fn beside(share: f64, p95_ms: f64) -> Beside {
        Beside {
            goodput_bps: share * 20e6,
            share,
            loss_rate: 0.0,
            p95_ms: Some(p95_ms),
            runs: 3,
        }
    }

    fn harm(incumbent: &str, own: Beside, with: Beside) -> Harm {
        Harm {
            link: "thesis-sat".into(),
            stagger_ms: 20_000,
            incumbent: incumbent.into(),
            newcomer: PROFILE.into(),
            own,
            with,
        }
    }

    /// Harm passes within 5 points of share, and within 5 points of delay harm or 1 ms;
    /// incumbents outside the list are not checked.
    #[test]
    fn harm_passes_within_five_points_of_share_and_of_delay() {
        let cases = [
            (beside(0.60, 400.0), beside(0.56, 410.0), true, Some(true)),
            (beside(0.60, 400.0), beside(0.54, 400.0), false, Some(true)),
            (beside(0.60, 400.0), beside(0.60, 500.0), true, Some(false)),
            (beside(0.60, 0.2), beside(0.60, 0.9), true, Some(true)),
        ];
        for (own, with, share, delay) in cases {
            let c = &harm_checks(&[harm("cubic", own, with)])[0];
            assert_eq!(
                (c.share_pass, c.delay_pass),
                (share, delay),
                "{own:?} {with:?}"
            );
        }
        assert!(harm_checks(&[harm("bbr", beside(0.5, 1.0), beside(0.1, 9.0))]).is_empty());
        // From cells: the profile beside itself is its own reference and passes.
        let r = run(1, flow("satellite", 100, 0), flow("satellite", 100, 0));
        let checks = harm_checks(&harms(&cells(&[r])));
        assert_eq!(checks.len(), 1);
        assert!(checks[0].pass());
    }
}
