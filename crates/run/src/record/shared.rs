//! The time every flow of a run shared the bottleneck, and what each got of it: the
//! measures by which a congestion controller is judged beside other traffic (DESIGN.md,
//! "Judged beside other traffic"): each flow's goodput and share, its packets the link
//! dropped, its queueing delay, and Jain's index of the goodputs.
//!
//! The period runs from the start of the latest flow to the end of the first one to end
//! (its completion, or its end at the time cap or a failure): a latecomer's start-up is in
//! it, as it is in what the incumbent feels.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::SeriesRow;
use super::bottleneck::DelayQuantiles;
use super::summary::FlowInput;

/// The period all flows shared the link, in a run of two or more.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedPeriod {
    /// Run time the period began (the latest flow's start), seconds.
    pub from_s: f64,
    /// Run time it ended (the first flow's end), seconds.
    pub to_s: f64,
    /// Jain's index of the flows' goodputs over the period (seed 004 Eq. 6.3).
    pub jain_index: f64,
    /// Per flow, in flow order.
    pub flows: Vec<SharedFlow>,
}

/// What one flow got of the shared period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedFlow {
    pub flow: u32,
    /// The flow's congestion control spec.
    pub cc: String,
    /// Bytes its receiving application read during the period x 8 / its length, bit/s.
    pub goodput_bps: f64,
    /// Its goodput over the sum of all flows' goodputs.
    pub share: f64,
    /// Its data packets that reached the bottleneck during the period, and those the link
    /// dropped.
    pub link_packets: u64,
    pub link_drops: u64,
    /// Its data packets' queueing delay at the bottleneck during the period.
    pub queue_delay: Option<DelayQuantiles>,
}

/// Jain's fairness index `(sum x)^2 / (n sum x^2)` (seed 004 Eq. 6.3): 1 for equal
/// shares, 1/n when one flow takes everything; `None` without values or with all zero.
pub fn jain_index(values: &[f64]) -> Option<f64> {
    let sum: f64 = values.iter().sum();
    let squares: f64 = values.iter().map(|x| x * x).sum();
    (squares > 0.0).then(|| sum * sum / (values.len() as f64 * squares))
}

/// Bytes the receiving application of `flow` had read at run time `t`, from the series
/// (0 before the flow's first row).
fn delivered_at(series: &[SeriesRow], flow: u32, t: f64) -> u64 {
    series
        .iter()
        .filter(|r| r.flow == flow && r.time_s <= t)
        .map(|r| r.delivered_bytes)
        .next_back()
        .unwrap_or(0)
}

/// The shared period of `flows` (see the module docs), with the goodputs read from
/// `series`; `None` for a single flow or flows that never overlapped.
pub fn shared_period(flows: &[FlowInput], series: &[SeriesRow]) -> Option<SharedPeriod> {
    if flows.len() < 2 {
        return None;
    }
    let from = flows.iter().map(|f| f.start).max()?;
    let to = flows
        .iter()
        .map(|f| f.completed_at.unwrap_or(f.ended_at))
        .min()?;
    if to <= from {
        return None;
    }
    let length = (to - from).as_secs_f64();
    let goodputs: Vec<f64> = flows
        .iter()
        .map(|f| {
            let bytes = delivered_at(series, f.index, to.as_secs_f64())
                .saturating_sub(delivered_at(series, f.index, from.as_secs_f64()));
            bytes as f64 * 8.0 / length
        })
        .collect();
    let total: f64 = goodputs.iter().sum();
    let shared = flows
        .iter()
        .zip(&goodputs)
        .map(|(f, &goodput_bps)| shared_flow(f, goodput_bps, total, from, to))
        .collect();
    Some(SharedPeriod {
        from_s: from.as_secs_f64(),
        to_s: to.as_secs_f64(),
        jain_index: jain_index(&goodputs).unwrap_or(0.0),
        flows: shared,
    })
}

fn shared_flow(
    f: &FlowInput,
    goodput_bps: f64,
    total_bps: f64,
    from: Duration,
    to: Duration,
) -> SharedFlow {
    let (link_packets, link_drops) = f.bottleneck.arrivals_and_drops(from, to);
    SharedFlow {
        flow: f.index,
        cc: f.cc.clone(),
        goodput_bps,
        share: if total_bps > 0.0 {
            goodput_bps / total_bps
        } else {
            0.0
        },
        link_packets,
        link_drops,
        queue_delay: f.bottleneck.queue_delay(from, to),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index_of_equal_and_hog_flows() {
        assert_eq!(jain_index(&[5.0, 5.0]), Some(1.0));
        assert_eq!(jain_index(&[10.0, 0.0]), Some(0.5));
        assert_eq!(jain_index(&[0.0, 0.0]), None);
        assert_eq!(jain_index(&[]), None);
    }
}
