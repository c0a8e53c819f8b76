//! Resumed runs ([`Scenario::resume_after`]): a first connection per flow, then, after a
//! gap, a second one that resumes from what the first left behind.
//!
//! The two connections of a flow run as two passes over the same scenario and seed:
//!
//! 1. **First pass**: every flow runs its workload on a first connection. The client keeps
//!    the server's TLS session tickets and address-validation tokens (NEW_TOKEN); when a
//!    flow ends, its data sender's controller is asked what it observed
//!    ([`satquic_cc::Controller::observe`], RFC 9959 Sec. 3.1), and the observation is
//!    saved in a [`SavedStateStore`] keyed by the Remote Endpoint (the sender's and the
//!    receiver's addresses, Sec. 2.2) at the virtual wall-clock time the flow ended.
//! 2. **Resumed pass**, `gap` after the first pass ended: the link starts afresh (its
//!    queues drained during the gap; its random processes replay from the same seed, so
//!    both connections meet the same path). Each flow's client resumes its TLS session
//!    and sends its request (or the upload's first bytes) in 0-RTT, with the token that
//!    lets the server send more than 3x what it received before the handshake completes
//!    (RFC 9000 Sec. 8.1). The data sender takes its saved parameters from the store
//!    (path and Lifetime checked, Sec. 3.2) and its controller starts Careful Resume
//!    with them.
//!
//! The run's record is the resumed pass's; each flow's summary adds `first_connection`
//! (the first pass's figures) and `resumption` (0-RTT, the saved parameters or why there
//! were none, the jump and how Careful Resume ended). The virtual wall clock is
//! [`tls::FixedClock`]'s time plus virtual time, so a gap longer than the Lifetime
//! (`+cr:lifetime=S`) expires the saved parameters as it would on a real server.
//! The TLS session itself has no such clock (its ticket ages are always zero).

use std::time::{Duration, SystemTime};

use quinn_proto::TimeSource;
use satquic_cc::careful_resume::{CarefulResumePhase, CarefulResumeTrigger};
use satquic_cc::{CcEvent, RemoteEndpoint, ResumeParams, SavedStateStore};
use satquic_run::record::{FirstConnection, Resumption};
use satquic_run::scenario::Scenario;

use crate::SimError;
use crate::engine::{RunOptions, RunOutput, Simulation};
use crate::setup::Shared;
use crate::tls::{self, Sessions};

/// The longest gap a resumed run may ask for (a day: longer than any sensible Lifetime).
pub const MAX_RESUME_GAP: Duration = Duration::from_secs(24 * 3600);

/// Runs the first connections, then the resumed ones `gap` later.
pub(crate) fn run_resumed(
    scenario: &Scenario,
    options: &RunOptions,
    gap: Duration,
) -> Result<RunOutput, SimError> {
    if gap > MAX_RESUME_GAP {
        return Err(SimError::Invalid(format!(
            "resume_after must be at most {} s",
            MAX_RESUME_GAP.as_secs()
        )));
    }
    let shared = Shared::new(
        scenario.flows.len(),
        Sessions::Resumable,
        options.packet_cipher,
    );
    let first_scenario = Scenario {
        resume_after: None,
        ..scenario.clone()
    };
    // The first pass keeps no trace and no exporter: they describe the resumed pass.
    let first_options = RunOptions {
        cancel: options.cancel.clone(),
        packet_cipher: options.packet_cipher,
        stack_qlog: options.stack_qlog,
        ..RunOptions::default()
    };
    let first = Simulation::run_pass(&first_scenario, &first_options, &shared, &[])?;

    // The senders' store: no cap of its own, the controller's `+cr:lifetime` rules.
    let mut store = SavedStateStore::new(scenario.flows.len(), Duration::MAX);
    let endpoint = |(sender, receiver): (std::net::SocketAddr, std::net::SocketAddr)| {
        RemoteEndpoint::new(Some(sender.ip()), receiver.ip())
    };
    let mut not_resumed: Vec<Option<String>> = vec![None; scenario.flows.len()];
    for (i, observation) in first.observations.iter().enumerate() {
        match observation {
            Some(Ok(o)) => {
                store.save(o.save(endpoint(first.endpoints[i]), wall(first.ended_at[i])))
            }
            Some(Err(why)) => not_resumed[i] = Some(format!("nothing saved: {why}")),
            None => not_resumed[i] = Some("nothing saved".into()),
        }
    }
    let resume_at = wall(first.output.record.sim_time.saturating_add(gap));
    let resume: Vec<Option<ResumeParams>> = (0..scenario.flows.len())
        .map(|i| {
            if not_resumed[i].is_some() {
                return None;
            }
            match store.take(&endpoint(first.endpoints[i]), resume_at) {
                Ok(params) => Some(params),
                Err(why) => {
                    not_resumed[i] = Some(why.to_string());
                    None
                }
            }
        })
        .collect();

    let mut second = Simulation::run_pass(scenario, options, &shared, &resume)?;
    // The first connections' qlogs come first; the record describes the resumed ones.
    let mut stack_qlogs = first.output.stack_qlogs;
    for q in &mut stack_qlogs {
        q.in_record = false;
    }
    stack_qlogs.append(&mut second.output.stack_qlogs);
    second.output.stack_qlogs = stack_qlogs;
    let record = &mut second.output.record;
    for (i, flow) in record.summary.flows.iter_mut().enumerate() {
        let events = record
            .events
            .iter()
            .filter(|e| e.flow as usize == i)
            .map(|e| &e.event);
        flow.resumption = Some(resumption(
            gap,
            second.zero_rtt[i],
            resume[i],
            not_resumed[i].take(),
            events,
        ));
        flow.first_connection = first
            .output
            .record
            .summary
            .flows
            .get(i)
            .map(FirstConnection::of);
    }
    Ok(second.output)
}

/// The virtual wall clock: the simulator's frozen TLS and token clock plus virtual time.
fn wall(t: Duration) -> SystemTime {
    tls::FixedClock.now() + t
}

/// The `resumption` summary of a flow from its Careful Resume phase changes.
fn resumption<'a>(
    gap: Duration,
    zero_rtt: bool,
    params: Option<ResumeParams>,
    not_resumed: Option<String>,
    events: impl Iterator<Item = &'a CcEvent>,
) -> Resumption {
    let mut r = Resumption {
        gap_s: gap.as_secs_f64(),
        zero_rtt,
        saved_cwnd: params.map(|p| p.saved_cwnd),
        saved_rtt_s: params.map(|p| p.saved_rtt.as_secs_f64()),
        not_resumed,
        jump_at_s: None,
        jump_cwnd: None,
        ended_by: None,
        safe_retreat: false,
    };
    for e in events {
        let CcEvent::CarefulResumePhaseUpdated {
            at,
            new,
            trigger,
            cwnd,
            ..
        } = e
        else {
            continue;
        };
        match new {
            CarefulResumePhase::Unvalidated if r.jump_at_s.is_none() => {
                r.jump_at_s = Some(at.as_secs_f64());
                r.jump_cwnd = Some(*cwnd);
            }
            CarefulResumePhase::SafeRetreat => r.safe_retreat = true,
            CarefulResumePhase::Normal if r.ended_by.is_none() => {
                r.ended_by = Some(
                    trigger
                        .map(CarefulResumeTrigger::as_str)
                        .unwrap_or("cwnd_confirmed")
                        .to_string(),
                );
            }
            _ => {}
        }
    }
    r
}
