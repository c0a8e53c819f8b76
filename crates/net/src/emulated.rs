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
use satquic_link::{DirectionStats, DropReason, GroundTruth};
use satquic_run::probe::ProbeState;
use satquic_run::record::{
    BottleneckLog, FlowDrops, FlowEvent, FlowInput, FlowStatus, LinkObservation, RunRecord,
    SeriesRow, Timing, summarize,
};
use satquic_run::{FlowSpec, Scenario, Workload};

use crate::client::{ClientOptions, ClientResult, run_client};
use crate::relay::{Pkt, Relay, RelayOptions, RelaySnapshot};
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

/// The steps of an emulated run: the server and the relay, the client with the series
/// sampled beside it, then everything stopped and the record made from what each saw.
async fn run_async(scenario: &Scenario) -> Result<EmulatedRun, NetError> {
    let flow = &scenario.flows[0];
    let transport = transport_for(scenario);
    let endpoints = Endpoints::start(scenario, &transport)?;
    if !flow.start.is_zero() {
        tokio::time::sleep(flow.start).await;
    }
    let progress = Arc::new(AtomicU64::new(0));
    let options = client_options(scenario, endpoints.relay.local_addr(), transport, &progress);
    let wall_start = Instant::now();
    let sampler = SeriesSampler::start(
        wall_start,
        endpoints.server.clone(),
        progress,
        endpoints.relay.snapshot_reader(),
    );
    let result = run_client(options, None).await;
    let series = sampler.finish().await;
    let run_end = wall_start.elapsed();
    let result = result?;
    let info = endpoints.server.connections().into_iter().next();
    let (relay_end, relay_start, path) = endpoints.stop().await;
    let flow_start = result.started_at;
    // The flow's start on the relay's clock (the link model's time zero is the relay's).
    let epoch = flow_start.saturating_duration_since(relay_start);
    let mut path = path.ok_or_else(|| NetError::Setup("the relay ran without its model".into()))?;
    let truth = path.down.finish(run_end + epoch).clone();
    let down_stats = path.down.stats().clone();
    let up_stats = path.up.stats().clone();
    let sender = SenderView::of(info.as_deref(), flow_start);
    let drops = flow_drops(&truth, &down_stats, &up_stats, &relay_end, epoch);
    let input = flow_input(flow, &result, &sender, &series, drops);
    let link = LinkObservation {
        truth: &truth,
        down: &down_stats,
        up: &up_stats,
        epoch,
    };
    let sim_time = result.ended_at;
    let summary = summarize(scenario, sim_time, &[input], &link, &series);
    let record = RunRecord {
        summary,
        chunks: crate::record::chunk_rows(&result),
        received_chunks: crate::record::received_chunk_rows(&result),
        events: sender
            .events
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

/// The server (serving in a task) and the relay in front of it, on loopback.
struct Endpoints {
    server: Arc<Server>,
    serve_endpoint: quinn::Endpoint,
    serving: tokio::task::JoinHandle<()>,
    relay: Relay,
}

impl Endpoints {
    /// Binds the server (no Retry, as the simulator's endpoints; keeping its connection
    /// for the sampler) and starts the relay with the scenario's link, seed and sender
    /// cap.
    fn start(scenario: &Scenario, transport: &NetTransport) -> Result<Self, NetError> {
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        let server = Server::bind(ServerOptions {
            listen: loopback,
            transport: transport.clone(),
            retry: false,
            keep_connections: 1,
            ..ServerOptions::default()
        })?;
        let server_addr = server.local_addr();
        let mut relay_options =
            RelayOptions::new(loopback, server_addr, Some(scenario.link.clone()));
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
        Ok(Endpoints {
            server,
            serve_endpoint,
            serving,
            relay,
        })
    }

    /// Stops the server (once it saw the client's close, so its final statistics are
    /// taken) and the relay: the relay's final counters, its epoch and its model.
    async fn stop(self) -> (RelaySnapshot, Instant, Option<satquic_link::Path<Pkt>>) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.serve_endpoint
            .close(quinn::VarInt::from_u32(0), b"run over");
        self.serving.abort();
        let relay_start = self.relay.epoch();
        let (relay_end, path) = self.relay.stop();
        (relay_end, relay_start, path)
    }
}

/// The client of the run: a perf download through the relay, mirroring its in-order bytes
/// into `progress` for the sampler, capped at the scenario's time cap.
fn client_options(
    scenario: &Scenario,
    relay: SocketAddr,
    transport: NetTransport,
    progress: &Arc<AtomicU64>,
) -> ClientOptions {
    let flow = &scenario.flows[0];
    ClientOptions {
        server: relay,
        server_name: "localhost".into(),
        alpn: client::Alpn::Perf,
        workload: flow.workload.clone(),
        upload: false,
        path: None,
        transport,
        verify: Verify::Any,
        interval: None,
        time_cap: Some(scenario.time_cap.saturating_sub(flow.start)),
        want_server_report: false,
        qlog_dir: None,
        progress: Some(progress.clone()),
        interrupt: None,
        resumption: None,
    }
}

/// The series rows so far and the recent acknowledged bytes (for the delivery rate).
struct Sampler {
    rows: Vec<SeriesRow>,
    acked: VecDeque<(Duration, u64)>,
}

/// The task sampling `series.csv` every [`SERIES_STEP`] while the client runs.
struct SeriesSampler {
    done: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Vec<SeriesRow>>,
}

impl SeriesSampler {
    /// Samples the server's connection (once there is one), the relay's queue and the
    /// client's in-order bytes, times from `wall_start`.
    fn start(
        wall_start: Instant,
        server: Arc<Server>,
        progress: Arc<AtomicU64>,
        queue_reader: impl Fn() -> u64 + Send + 'static,
    ) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let stop = done.clone();
        let task = tokio::spawn(async move {
            let mut s = Sampler {
                rows: Vec::new(),
                acked: VecDeque::new(),
            };
            let mut tick = tokio::time::interval(SERIES_STEP);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            while !stop.load(Ordering::Relaxed) {
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
        });
        SeriesSampler { done, task }
    }

    /// Stops sampling; the rows.
    async fn finish(self) -> Vec<SeriesRow> {
        self.done.store(true, Ordering::Relaxed);
        self.task.await.unwrap_or_default()
    }
}

/// The data sender's side of the run (the server's connection), on the flow's time base.
struct SenderView {
    /// When the server accepted the connection, after the flow's start.
    accept_offset: Duration,
    /// Its controller's events, moved to the flow's time base.
    events: Vec<CcEvent>,
    probe: Option<ProbeState>,
    stats: Option<quinn::ConnectionStats>,
}

impl SenderView {
    /// The server's clock starts when it accepts the connection, about one RTT after the
    /// flow's start: its events and probe times move to the flow's time base.
    fn of(info: Option<&ConnectionInfo>, flow_start: Instant) -> Self {
        let (accept_offset, events, probe, stats) = match info {
            Some(info) => (
                info.accepted_at.saturating_duration_since(flow_start),
                info.events.events(),
                Some(satquic_run::probe::read_probe(&info.probe)),
                info.stats(),
            ),
            None => (Duration::ZERO, Vec::new(), None, None),
        };
        let events = events
            .into_iter()
            .map(|e| shift_event(e, accept_offset))
            .collect();
        SenderView {
            accept_offset,
            events,
            probe,
            stats,
        }
    }

    /// The smoothed RTT at the (shadow) slow-start exit, from the series (the relay has no
    /// hook at the exit).
    fn rtt_at_exit(&self, series: &[SeriesRow], shadow_wanted: bool) -> Option<Duration> {
        let at = self.events.iter().find_map(|e| match e {
            CcEvent::SlowStartExit { at, shadow, .. } if *shadow == shadow_wanted => Some(*at),
            _ => None,
        })?;
        series
            .iter()
            .rev()
            .find(|r| r.time_s <= at.as_secs_f64())
            .and_then(|r| r.smoothed_rtt_s)
            .map(Duration::from_secs_f64)
    }
}

/// The link's drops as the record counts them: the first down drop (flow time), down
/// drops by reason, up drops, and the sender cap's.
fn flow_drops(
    truth: &GroundTruth,
    down_stats: &DirectionStats,
    up_stats: &DirectionStats,
    relay_end: &RelaySnapshot,
    epoch: Duration,
) -> FlowDrops {
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
    drops
}

/// The record's view of the flow: the client's result with the sender's side.
fn flow_input(
    flow: &FlowSpec,
    result: &ClientResult,
    sender: &SenderView,
    series: &[SeriesRow],
    drops: FlowDrops,
) -> FlowInput {
    let (status, capped) = match result.status.as_str() {
        "completed" => (FlowStatus::Completed, false),
        "capped" => (FlowStatus::Running, true),
        _ => (
            FlowStatus::Failed(result.error.clone().unwrap_or_default()),
            false,
        ),
    };
    let probe = sender.probe.as_ref();
    FlowInput {
        index: 0,
        start: Duration::ZERO,
        workload: flow.workload.clone(),
        cc: flow.transport.cc.to_string(),
        status,
        capped,
        delivered_bytes: result.bytes,
        connected_at: result.connected_at,
        completed_at: result.completed_at,
        ended_at: result.ended_at,
        stats: sender.stats,
        first_rtt: probe.and_then(|p| p.first_rtt),
        first_loss_detected: probe
            .and_then(|p| p.first_congestion)
            .map(|t| t + sender.accept_offset),
        rtt_at_exit: sender.rtt_at_exit(series, false),
        rtt_at_shadow_exit: sender.rtt_at_exit(series, true),
        busy_since_at_exit: None,
        busy_since_at_shadow_exit: None,
        events: sender.events.clone(),
        drops,
        bottleneck: BottleneckLog::default(),
        stream_receive_window_end: None,
    }
}

/// One row of the series at `t`: the server's controller, the delivery rate over the
/// last [`DELIVERY_RATE_WINDOW`], the relay's queue and the client's in-order bytes.
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
