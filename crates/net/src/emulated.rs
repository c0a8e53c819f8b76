//! `satquic run`: an emulated run. A [`Server`], a [`Relay`] applying the scenario's link
//! and a client, in one process on loopback, with real sockets and real time. The result
//! is the simulator's [`RunRecord`], so the lab can run a campaign "emulated" as well as
//! "simulated" and analyse both with the same code.
//!
//! Differences from `satquic sim`, all inherent to real time:
//!
//! - times come from the wall clock, so runs are not bit-for-bit reproducible (the link's
//!   random processes still follow the scenario's seed);
//! - `series.csv` rows are sampled every 10 ms of wall time from the server's controller
//!   probe, the relay's queue (published every <= 10 ms) and the client's in-order bytes;
//! - the server skips address validation (as the simulator's endpoints do), and sends with
//!   GSO; the relay splits the batches back into datagrams;
//! - `capacity_source` is never `busy_at_exit` (the relay's model lives on its own thread).
//!
//! Only single-flow scenarios are supported. A sender cap (the seeds' tc TBF at the
//! server's interface) is applied by the relay in front of the link's down direction,
//! where the simulator applies it ([`crate::model`]); its drops are the record's
//! `shaper_packets`.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use satquic_cc::CcEvent;
use satquic_link::DropReason;
use satquic_run::record::{
    FlowDrops, FlowEvent, FlowInput, FlowStatus, LinkObservation, RunRecord, SeriesRow, Timing,
    summarize,
};
use satquic_run::{Scenario, Workload};

use crate::client::{ClientOptions, run_client};
use crate::relay::{Relay, RelayOptions, RelaySnapshot};
use crate::server::{ConnectionInfo, Server, ServerOptions};
use crate::tls::Verify;
use crate::transport::NetTransport;
use crate::{NetError, client};

/// Series resolution, as in the simulator.
pub const SERIES_STEP: Duration = Duration::from_millis(10);
const DELIVERY_RATE_WINDOW: Duration = Duration::from_millis(100);

/// What an emulated run produced.
pub struct EmulatedRun {
    pub record: RunRecord,
    pub timing: Timing,
    /// The relay's counters at the end (delay-error percentiles, drops).
    pub relay: RelaySnapshot,
}

/// Checks that a scenario can be emulated.
pub fn validate(scenario: &Scenario) -> Result<(), NetError> {
    if scenario.flows.len() != 1 {
        return Err(NetError::Usage(format!(
            "an emulated run has exactly one flow; this scenario has {}",
            scenario.flows.len()
        )));
    }
    scenario
        .link
        .validate()
        .map_err(|e| NetError::Usage(e.to_string()))?;
    transport_for(scenario).validate()
}

fn transport_for(scenario: &Scenario) -> NetTransport {
    NetTransport {
        spec: scenario.flows[0].transport.clone(),
        // Long stalls on deep GEO queues must not end the connection before the cap.
        idle_timeout: Duration::from_secs(120),
        ..NetTransport::default()
    }
}

/// Runs `scenario` on loopback in real time. Blocks for about the run's duration.
pub fn run_emulated(scenario: &Scenario) -> Result<EmulatedRun, NetError> {
    validate(scenario)?;
    crate::install_crypto_provider();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| NetError::Setup(e.to_string()))?;
    rt.block_on(run_async(scenario))
}

struct Sampler {
    rows: Vec<SeriesRow>,
    acked: VecDeque<(Duration, u64)>,
}

async fn run_async(scenario: &Scenario) -> Result<EmulatedRun, NetError> {
    let flow = &scenario.flows[0];
    let transport = transport_for(scenario);
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let server = Server::bind(ServerOptions {
        listen: loopback,
        transport: transport.clone(),
        retry: false,
        keep_connections: 1,
        ..ServerOptions::default()
    })?;
    let server_addr = server.local_addr();
    let mut relay_options = RelayOptions::new(loopback, server_addr, Some(scenario.link.clone()));
    relay_options.seed = scenario.seed;
    relay_options.sender_cap = scenario.flows[0].transport.sender_shaper.clone();
    relay_options.occupancy_resolution = SERIES_STEP;
    let relay = Relay::start(relay_options)?;
    let serve_endpoint = server.endpoint();
    let server = Arc::new(server);
    let serving = {
        let server = server.clone();
        tokio::spawn(async move { server.serve().await })
    };
    if !flow.start.is_zero() {
        tokio::time::sleep(flow.start).await;
    }
    let progress = Arc::new(AtomicU64::new(0));
    let options = ClientOptions {
        server: relay.local_addr(),
        server_name: "localhost".into(),
        alpn: client::Alpn::Perf,
        workload: flow.workload.clone(),
        upload: false,
        path: None,
        transport: transport.clone(),
        verify: Verify::Any,
        interval: None,
        time_cap: Some(scenario.time_cap.saturating_sub(flow.start)),
        want_server_report: false,
        qlog_dir: None,
        progress: Some(progress.clone()),
        interrupt: None,
        resumption: None,
    };
    let wall_start = Instant::now();
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        let server = server.clone();
        let progress = progress.clone();
        let queue_reader = relay.snapshot_reader();
        tokio::spawn(async move {
            let mut s = Sampler {
                rows: Vec::new(),
                acked: VecDeque::new(),
            };
            let mut tick = tokio::time::interval(SERIES_STEP);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            while !done.load(Ordering::Relaxed) {
                tick.tick().await;
                let t = wall_start.elapsed();
                let Some(info) = server.connections().into_iter().next() else {
                    continue;
                };
                sample(
                    &mut s,
                    t,
                    &info,
                    queue_reader(),
                    progress.load(Ordering::Relaxed),
                );
            }
            s.rows
        })
    };
    let result = run_client(options, None).await;
    done.store(true, Ordering::Relaxed);
    let series = sampler.await.unwrap_or_default();
    let run_end = wall_start.elapsed();
    let result = result?;
    let info = server.connections().into_iter().next();
    // Let the server see the close, so its final statistics are taken.
    tokio::time::sleep(Duration::from_millis(50)).await;
    serve_endpoint.close(quinn::VarInt::from_u32(0), b"run over");
    serving.abort();
    let relay_start = relay.epoch();
    let (relay_end, path) = relay.stop();
    let flow_start = result.started_at;
    // The flow's start on the relay's clock (the link model's time zero is the relay's).
    let epoch = flow_start.saturating_duration_since(relay_start);
    let mut path = path.ok_or_else(|| NetError::Setup("the relay ran without its model".into()))?;
    let truth = path.down.finish(run_end + epoch).clone();
    let down_stats = path.down.stats().clone();
    let up_stats = path.up.stats().clone();

    // The server's clock starts when it accepts the connection, about one RTT after the
    // flow's start: its events and probe times move to the flow's time base.
    let (accept_offset, events, probe, stats) = match &info {
        Some(info) => (
            info.accepted_at.saturating_duration_since(flow_start),
            info.events.events(),
            Some(satquic_run::probe::read_probe(&info.probe)),
            info.stats(),
        ),
        None => (Duration::ZERO, Vec::new(), None, None),
    };
    let events: Vec<CcEvent> = events
        .into_iter()
        .map(|e| shift_event(e, accept_offset))
        .collect();
    // The smoothed RTT at an exit, from the series (the relay has no hook at the exit).
    let rtt_at_exit = |shadow_wanted: bool| {
        let at = events.iter().find_map(|e| match e {
            CcEvent::SlowStartExit { at, shadow, .. } if *shadow == shadow_wanted => Some(*at),
            _ => None,
        })?;
        series
            .iter()
            .rev()
            .find(|r| r.time_s <= at.as_secs_f64())
            .and_then(|r| r.smoothed_rtt_s)
            .map(Duration::from_secs_f64)
    };
    let mut drops = FlowDrops {
        first_down_drop: DropReason::ALL
            .iter()
            .filter_map(|r| truth.first_drop(*r).map(|t| (t.saturating_sub(epoch), *r)))
            .min_by_key(|(t, _)| *t),
        up_packets: up_stats.dropped_total().packets,
        shaper_packets: relay_end.cap.stats.dropped_total().packets,
        ..FlowDrops::default()
    };
    for (i, reason) in DropReason::ALL.iter().enumerate() {
        drops.down_by_reason[i] = down_stats.dropped(*reason).packets;
    }
    let (status, capped) = match result.status.as_str() {
        "completed" => (FlowStatus::Completed, false),
        "capped" => (FlowStatus::Running, true),
        _ => (
            FlowStatus::Failed(result.error.clone().unwrap_or_default()),
            false,
        ),
    };
    let input = FlowInput {
        index: 0,
        start: Duration::ZERO,
        workload: flow.workload.clone(),
        cc: flow.transport.cc.clone(),
        status,
        capped,
        delivered_bytes: result.bytes,
        connected_at: result.connected_at,
        completed_at: result.completed_at,
        ended_at: result.ended_at,
        stats,
        first_rtt: probe.as_ref().and_then(|p| p.first_rtt),
        first_loss_detected: probe
            .as_ref()
            .and_then(|p| p.first_congestion)
            .map(|t| t + accept_offset),
        rtt_at_exit: rtt_at_exit(false),
        rtt_at_shadow_exit: rtt_at_exit(true),
        busy_since_at_exit: None,
        busy_since_at_shadow_exit: None,
        events: events.clone(),
        drops,
        stream_receive_window_end: None,
    };
    let link = LinkObservation {
        truth: &truth,
        down: &down_stats,
        up: &up_stats,
        epoch,
    };
    let sim_time = result.ended_at;
    let summary = summarize(scenario, sim_time, &[input], &link);
    let record = RunRecord {
        summary,
        chunks: crate::record::chunk_rows(&result),
        received_chunks: crate::record::received_chunk_rows(&result),
        events: events
            .into_iter()
            .map(|event| FlowEvent { flow: 0, event })
            .collect(),
        series,
        sim_time,
    };
    Ok(EmulatedRun {
        record,
        timing: Timing::new(wall_start.elapsed(), sim_time),
        relay: relay_end,
    })
}

fn sample(s: &mut Sampler, t: Duration, info: &ConnectionInfo, queue_bytes: u64, delivered: u64) {
    let probe = satquic_run::probe::read_probe(&info.probe);
    s.acked.push_back((t, probe.acked_bytes));
    while s
        .acked
        .front()
        .is_some_and(|(at, _)| t.saturating_sub(*at) > DELIVERY_RATE_WINDOW)
    {
        s.acked.pop_front();
    }
    let rate = match (s.acked.front(), s.acked.back()) {
        (Some((t0, b0)), Some((t1, b1))) if t1 > t0 => {
            (b1 - b0) as f64 * 8.0 / (*t1 - *t0).as_secs_f64()
        }
        _ => 0.0,
    };
    s.rows.push(SeriesRow {
        time_s: t.as_secs_f64(),
        flow: 0,
        cwnd_bytes: probe.cwnd,
        in_flight_bytes: probe.in_flight,
        latest_rtt_s: probe.latest_rtt.map(|d| d.as_secs_f64()),
        smoothed_rtt_s: probe.smoothed_rtt.map(|d| d.as_secs_f64()),
        delivery_rate_bps: rate as u64,
        queue_bytes,
        delivered_bytes: delivered,
        link_departed_bytes: None,
    });
}

/// Moves an event from the server's time base to the flow's.
fn shift_event(mut e: CcEvent, offset: Duration) -> CcEvent {
    *e.at_mut() += offset;
    e
}

/// Expected download time on an idle link, for sanity checks: handshake (one RTT), the
/// bytes at the bottleneck rate with QUIC/UDP/IP overhead, and one RTT to the first byte.
pub fn ideal_download_time(scenario: &Scenario) -> Option<Duration> {
    let Workload::Download { bytes } = scenario.flows.first()?.workload else {
        return None;
    };
    let rate = scenario.link.down.rate.nominal_rate_bps() as f64;
    let mtu = scenario.flows[0].transport.mtu as f64;
    // ~30 bytes of QUIC short header, frame header and AEAD tag per packet.
    let payload = mtu - 30.0;
    let wire = bytes as f64 / payload * (mtu + f64::from(satquic_link::IP_UDP_OVERHEAD_BYTES));
    let rtt = scenario.link.base_rtt().as_secs_f64();
    Some(Duration::from_secs_f64(wire * 8.0 / rate + 2.0 * rtt))
}

#[cfg(test)]
mod tests {
    use super::*;
    use satquic_run::{ShaperSpec, TransportSpec};

    #[test]
    fn a_capped_scenario_validates() {
        let link = satquic_link::presets::lookup("qir-sat").unwrap();
        let mut scenario = Scenario::download(link, TransportSpec::with_cc("cubic"), 1_000_000, 1);
        scenario.flows[0].transport.sender_shaper = Some(ShaperSpec::seeds_server());
        assert_eq!(validate(&scenario), Ok(()));
    }
}
