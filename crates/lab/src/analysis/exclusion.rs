//! The seeds' exclusion rules (000 Sec. 5.1, 001 Sec. IV): which runs a dataset drops
//! (a loss in the first RTT, an early "wireless" loss) and the dataset's makeup that
//! their Tables 1-3 / I and III report.

use crate::dataset::RunData;

/// The seeds' exclusion rules (000 Sec. 5.1, 001 Sec. IV).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ExclusionRules {
    /// Exclude runs where the link dropped a packet within the first RTT after the
    /// handshake (drop time <= handshake time + minimum RTT).
    pub first_rtt_loss: bool,
    /// Exclude runs whose first detected loss came before this many seconds, unless the
    /// slow start (or the shadow SEARCH) had already exited ("wireless" loss).
    pub wireless_loss_before_s: Option<f64>,
}

/// Why a run is excluded, if it is.
pub fn exclusion(run: &RunData, rules: &ExclusionRules) -> Option<&'static str> {
    let r = &run.row;
    if rules.first_rtt_loss
        && let (Some(drop), Some(hs), Some(rtt)) =
            (r.first_drop_at_s, r.handshake_time_s, r.min_rtt_s)
        && drop <= hs + rtt
    {
        return Some("first_rtt_loss");
    }
    if let (Some(limit), Some(loss)) = (rules.wireless_loss_before_s, r.first_loss_detected_at_s)
        && loss < limit
    {
        let exited_before = [
            r.exit_at_s
                .filter(|_| r.exit_reason.as_deref() != Some("loss")),
            r.shadow_exit_at_s,
        ]
        .into_iter()
        .flatten()
        .any(|t| t < loss);
        if !exited_before {
            return Some("wireless_loss");
        }
    }
    None
}

/// Seed 000 Tables 1-3: counts per category for one variant.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Makeup {
    pub first_rtt_loss: usize,
    pub wireless_loss: usize,
    pub clean: usize,
    /// Failed or timed-out runs (not in the seeds' tables, which kept only finished runs).
    pub failed: usize,
    pub total: usize,
}

pub fn dataset_makeup(runs: &[&RunData], rules: &ExclusionRules) -> Makeup {
    let mut m = Makeup::default();
    for r in runs {
        m.total += 1;
        if matches!(r.row.status.as_str(), "failed" | "timeout") {
            m.failed += 1;
            continue;
        }
        match exclusion(r, rules) {
            Some("first_rtt_loss") => m.first_rtt_loss += 1,
            Some(_) => m.wireless_loss += 1,
            None => m.clean += 1,
        }
    }
    m
}

/// The runs that pass the rules (and did not fail).
pub fn clean<'a>(runs: &[&'a RunData], rules: &ExclusionRules) -> Vec<&'a RunData> {
    runs.iter()
        .copied()
        .filter(|r| !matches!(r.row.status.as_str(), "failed" | "timeout"))
        .filter(|r| exclusion(r, rules).is_none())
        .collect()
}
