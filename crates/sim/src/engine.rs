//! The discrete-event loop: real quinn-proto endpoints over the link model, in virtual time.
//!
//! # Time
//!
//! Virtual time is a `Duration` since the run's epoch. quinn-proto wants `Instant`s, so the
//! run captures one `Instant` at its start (`base`) and hands quinn `base + t`. Only
//! differences of such instants ever matter to quinn, and `(base + a) - (base + b) = a - b`
//! exactly, so the value of `base` (the only wall-clock read) cannot influence a run.
//!
//! # The loop
//!
//! Events are: flow starts, link deliveries (`poll_timeout` of each link direction),
//! connection timers (`Connection::poll_timeout`: loss detection, PTO, delayed ACKs,
//! pacing, idle), the end of timed flows and the 10 ms sampling grid. At each event time,
//! in this fixed order:
//!
//! 1. flows whose start has come connect;
//! 2. every datagram that has reached the client (link "down") and then the server
//!    ("up") is handed to its endpoint (`Endpoint::handle`), and the resulting events to
//!    the connection;
//! 3. per flow (in flow order), per connection (client, then server): expired timers
//!    (`handle_timeout`), endpoint events, application events and actions, then
//!    `poll_transmit` until it returns `None` - each datagram goes into the link. quinn's
//!    pacer is what makes `poll_transmit` return `None` early; it then reports the pacing
//!    time through `poll_timeout`, which becomes a loop event;
//! 4. on a grid point, one series row per running flow.
//!
//! `poll_transmit` is always called with `max_datagrams = 1` and segmentation offload off,
//! so the link sees individual datagrams. Each datagram occupies its UDP payload plus
//! [`IP_UDP_OVERHEAD_BYTES`] on the link.
//!
//! # Around the loop
//!
//! The loop is this module; what it drives stands apart, in the crate's private
//! modules: `setup` builds the link, the flows and their seeds; `flow` is one flow's
//! state; `app` the applications at both ends (download, upload, timed; their model is
//! described there); and `keep` what the record keeps (series, events, the record at
//! the end).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use quinn_proto::{Connection, DatagramEvent, Endpoint};
use satquic_cc::{Observation, ResumeParams};
use satquic_link::{Direction, IP_UDP_OVERHEAD_BYTES, Path};
use satquic_run::qlog::StackQlog;
use satquic_run::record::{BottleneckLog, FlowDrops, FlowStatus, RunRecord, SeriesRow};
use satquic_run::scenario::{Scenario, Workload};

use crate::SimError;
use crate::app::{client_app, open_data_stream, server_app, top_up};
use crate::flow::{Conn, FlowRt, end_flow};
use crate::keep::collect_events;
use crate::null_cipher::PacketCipher;
use crate::setup::{self, Shared};
use crate::tls::{self, Sessions};

/// Resolution of `series.csv`.
pub const SERIES_STEP: Duration = Duration::from_millis(10);

/// Options that do not change the simulated behaviour, only what is kept. (The qlog is
/// made from the record when it is written: [`satquic_run::WriteOptions`].)
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Keep every datagram offered to the link (time, direction, size, admitted): used
    /// by the determinism tests; costs memory on long runs.
    pub datagram_trace: bool,
    /// Keep the bytes of the first this many datagrams offered to the link (both
    /// directions, in order): lets a test look at what is on the wire.
    pub datagram_bytes: usize,
    /// Keep, per flow, 32 bytes exported from the TLS session (RFC 5705 exporter): they
    /// differ between runs with the same seed, proving TLS randomness is real.
    pub tls_exporter: bool,
    /// Set from another thread to stop the run early (a wall-clock timeout in the lab):
    /// the event loop checks it every [`CANCEL_CHECK_STEPS`] steps and the run returns
    /// [`SimError::Cancelled`]. It cannot change a run that completes.
    pub cancel: Option<Arc<AtomicBool>>,
    /// How packets are protected: the TLS suite's AEAD, or the null cipher that skips the
    /// cipher work and gives the same record ([`crate::null_cipher`]).
    pub packet_cipher: PacketCipher,
    /// Have quinn-proto write its own qlog (packet sent, received and lost, recovery
    /// metrics) for every connection, in virtual time ([`crate::stack_qlog`]); returned in
    /// [`RunOutput::stack_qlogs`]. One JSON event per packet: only when asked for.
    pub stack_qlog: bool,
}

/// How many event-loop steps pass between two looks at [`RunOptions::cancel`] (a few
/// milliseconds of wall time).
pub const CANCEL_CHECK_STEPS: u64 = 4096;

/// Most event-loop steps in a row at one virtual instant before a run is ended as
/// [`SimError::Stalled`]. A step handles everything due at its time, so the next step is
/// later; a loop whose clock stays put (a timer that stays in the past, an event the link
/// keeps reporting without handling it) would otherwise spin forever whatever `time_cap`
/// says. A step is at the same instant as the one before only when an endpoint asks to
/// be woken now; 100,000 in a row is far beyond that (every run of `reproduce --quick`
/// and the seed campaigns keeps its record with this guard) and still a fraction of a
/// second of wall time.
pub const MAX_STEPS_WITHOUT_PROGRESS: u64 = 100_000;

/// Counts the event-loop steps taken at one virtual instant ([`MAX_STEPS_WITHOUT_PROGRESS`]).
#[derive(Debug, Default)]
struct ProgressGuard {
    at: Option<Duration>,
    steps: u64,
}

impl ProgressGuard {
    /// Notes a step at `now`; an error at the [`MAX_STEPS_WITHOUT_PROGRESS`]th step in a
    /// row at one instant.
    fn step(&mut self, now: Duration) -> Result<(), SimError> {
        if self.at == Some(now) {
            self.steps += 1;
            if self.steps >= MAX_STEPS_WITHOUT_PROGRESS {
                return Err(SimError::Stalled { at: now });
            }
        } else {
            self.at = Some(now);
            self.steps = 1;
        }
        Ok(())
    }
}

/// One datagram offered to the link (see [`RunOptions::datagram_trace`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceEntry {
    /// Virtual time.
    pub at: Duration,
    /// `true` for server -> client.
    pub down: bool,
    /// Flow index.
    pub flow: u32,
    /// UDP payload size in bytes.
    pub size_bytes: u32,
    /// Whether the link queued it (false: dropped).
    pub admitted: bool,
}

/// What a run produced beyond the record.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// The deterministic record.
    pub record: RunRecord,
    /// Datagram trace, if asked for.
    pub trace: Vec<TraceEntry>,
    /// The first [`RunOptions::datagram_bytes`] datagrams, if asked for.
    pub datagrams: Vec<Vec<u8>>,
    /// quinn-proto's qlog of each connection and end, with [`RunOptions::stack_qlog`]
    /// (merge them with the record: [`satquic_run::qlog::connection_qlog_files`]).
    pub stack_qlogs: Vec<StackQlog>,
    /// TLS exporter values per flow, if asked for.
    pub tls_exporter: Vec<Option<[u8; 32]>>,
}

/// Runs a scenario to its end and returns its record.
pub fn run(scenario: &Scenario) -> Result<RunRecord, SimError> {
    Ok(run_with(scenario, &RunOptions::default())?.record)
}

/// Runs a scenario with options.
pub fn run_with(scenario: &Scenario, options: &RunOptions) -> Result<RunOutput, SimError> {
    if let Some(gap) = scenario.resume_after {
        return crate::resume::run_resumed(scenario, options, gap);
    }
    let shared = Shared::new(
        scenario.flows.len(),
        Sessions::FirstOnly,
        options.packet_cipher,
    );
    Ok(Simulation::run_pass(scenario, options, &shared, &[])?.output)
}

/// One pass of a run: its output and, for each flow, what its data sender could save for
/// Careful Resume when the flow ended (only with [`Sessions::Resumable`]).
pub(crate) struct Pass {
    pub(crate) output: RunOutput,
    pub(crate) observations: Vec<Option<Result<Observation, String>>>,
    /// Per flow: (the data sender's address, the receiver's address).
    pub(crate) endpoints: Vec<(SocketAddr, SocketAddr)>,
    /// Per flow: whether the client's 0-RTT data was accepted.
    pub(crate) zero_rtt: Vec<bool>,
    /// Per flow: when it ended.
    pub(crate) ended_at: Vec<Duration>,
}

/// What travels through the link.
pub(crate) struct Packet {
    pub(crate) flow: u32,
    pub(crate) data: Vec<u8>,
}

/// The links a datagram crosses: the optional sender shaper, then the path.
pub(crate) struct Net {
    pub(crate) path: Path<Packet>,
    /// Per flow, the server-side rate limiter in front of the down link, if any.
    pub(crate) shapers: Vec<Option<Direction<Packet>>>,
}

pub(crate) struct Simulation {
    pub(crate) scenario: Scenario,
    pub(crate) options: RunOptions,
    base: Instant,
    now: Duration,
    pub(crate) net: Net,
    pub(crate) flows: Vec<FlowRt>,
    next_sample: Duration,
    pub(crate) series: Vec<SeriesRow>,
    pub(crate) trace: Tracer,
    /// The buffer the next datagram is written into ([`poll_datagram`]).
    spare: Vec<u8>,
    buf: Vec<u8>,
    pub(crate) end: Duration,
}

impl Simulation {
    /// Runs `scenario` once; flow `i` resumes from `resume[i]` if given.
    pub(crate) fn run_pass(
        scenario: &Scenario,
        options: &RunOptions,
        shared: &Shared,
        resume: &[Option<ResumeParams>],
    ) -> Result<Pass, SimError> {
        let mut sim = Simulation::new(scenario, options, shared, resume)?;
        sim.run_loop(options.cancel.as_deref())?;
        let observations = sim.flows.iter_mut().map(|f| f.observation.take()).collect();
        let endpoints = sim
            .flows
            .iter()
            .map(|f| {
                if f.upload {
                    (f.client_addr, f.server_addr)
                } else {
                    (f.server_addr, f.client_addr)
                }
            })
            .collect();
        let zero_rtt = sim.flows.iter().map(|f| f.zero_rtt_accepted).collect();
        let end = sim.end;
        let ended_at = sim
            .flows
            .iter()
            .map(|f| f.ended_at.unwrap_or(end))
            .collect();
        Ok(Pass {
            output: sim.finish(),
            observations,
            endpoints,
            zero_rtt,
            ended_at,
        })
    }

    /// A run before its first event: the checks, the link, then the flows.
    fn new(
        scenario: &Scenario,
        options: &RunOptions,
        shared: &Shared,
        resume: &[Option<ResumeParams>],
    ) -> Result<Self, SimError> {
        let upload = setup::upload(scenario)?;
        let net = setup::net(scenario, upload)?;
        // The only wall-clock read of a run: an arbitrary origin for quinn's Instants.
        let base = Instant::now();
        let flows = (0..scenario.flows.len())
            .map(|i| {
                let resume = resume.get(i).copied().flatten();
                setup::flow(i, scenario, options, shared, resume, base)
            })
            .collect::<Result<_, _>>()?;
        Ok(Simulation {
            scenario: scenario.clone(),
            options: options.clone(),
            base,
            now: Duration::ZERO,
            net,
            flows,
            next_sample: Duration::ZERO,
            series: Vec::new(),
            trace: Tracer {
                keep_entries: options.datagram_trace,
                entries: Vec::new(),
                keep_bytes: options.datagram_bytes,
                bytes: Vec::new(),
            },
            spare: Vec::new(),
            buf: Vec::with_capacity(usize::from(u16::MAX)),
            end: Duration::ZERO,
        })
    }

    fn all_done(&self) -> bool {
        self.flows
            .iter()
            .all(|f| matches!(f.status, FlowStatus::Completed | FlowStatus::Failed(_)))
    }

    /// Earliest next event, never earlier than `now`.
    fn next_event(&mut self) -> Duration {
        let mut next = self.next_sample;
        let mut consider = |t: Option<Duration>| {
            if let Some(t) = t {
                next = next.min(t);
            }
        };
        consider(self.net.path.poll_timeout());
        for shaper in self.net.shapers.iter().flatten() {
            consider(shaper.poll_timeout());
        }
        for f in &mut self.flows {
            match f.status {
                FlowStatus::Pending => consider(Some(f.start)),
                FlowStatus::Running => {
                    // The earlier of the two deadlines, turned into simulated time once
                    // (the conversion is monotonic, so the minimum is the same).
                    let deadline = [&mut f.client, &mut f.server]
                        .into_iter()
                        .flatten()
                        .filter_map(|c| c.conn.poll_timeout())
                        .min();
                    consider(deadline.map(|t| t.saturating_duration_since(self.base)));
                    if let Workload::Timed { duration } = f.workload {
                        consider(Some(f.start + duration));
                    }
                }
                _ => {}
            }
        }
        next.max(self.now)
    }

    fn run_loop(&mut self, cancel: Option<&AtomicBool>) -> Result<(), SimError> {
        let cap = self.scenario.time_cap;
        let mut steps: u64 = 0;
        let mut progress = ProgressGuard::default();
        loop {
            if steps % CANCEL_CHECK_STEPS == 0 && cancel.is_some_and(|c| c.load(Ordering::Relaxed))
            {
                return Err(SimError::Cancelled);
            }
            steps += 1;
            let next = self.next_event();
            if next > cap {
                self.now = cap;
                break;
            }
            progress.step(next)?;
            self.now = next;
            self.step();
            if self.all_done() {
                break;
            }
        }
        self.end = self.now;
        let end = self.end;
        for f in &mut self.flows {
            if matches!(f.status, FlowStatus::Running | FlowStatus::Pending) {
                f.capped = true;
                end_flow(f, end);
            }
        }
        Ok(())
    }

    fn step(&mut self) {
        let now = self.now;
        let at = self.base + now;
        // 1. Flow starts.
        for i in 0..self.flows.len() {
            if self.flows[i].status == FlowStatus::Pending && self.flows[i].start <= now {
                self.start_flow(i, at);
            }
        }
        // 2. Deliveries: down (the data direction, to receivers), then up (to senders).
        for shaper in self.net.shapers.iter_mut().flatten() {
            while let Some(d) = shaper.poll_deliver(now) {
                let flow = d.payload.flow as usize;
                let admission = self.net.path.down.enqueue(now, d.size_bytes, d.payload);
                if let Some(f) = self.flows.get_mut(flow) {
                    if !admission.is_queued() {
                        f.bottleneck.on_dropped(now);
                    }
                    f.drops.on_down(now, admission);
                }
            }
        }
        while let Some(d) = self.net.path.down.poll_deliver(now) {
            if let Some(f) = self.flows.get_mut(d.payload.flow as usize) {
                f.bottleneck.on_departed(d.departed, d.waited);
            }
            self.deliver(true, d.payload, at);
        }
        while let Some(d) = self.net.path.up.poll_deliver(now) {
            self.deliver(false, d.payload, at);
        }
        // 3. Timers, events, applications, transmissions.
        for i in 0..self.flows.len() {
            if self.flows[i].status == FlowStatus::Running {
                self.drive_flow(i, at);
            }
        }
        // 4. Series.
        if now >= self.next_sample {
            self.sample(self.next_sample);
            self.next_sample += SERIES_STEP;
        }
    }

    fn start_flow(&mut self, i: usize, at: Instant) {
        let f = &mut self.flows[i];
        match f
            .client_ep
            .connect(at, f.client_cfg.clone(), f.server_addr, tls::SERVER_NAME)
        {
            Ok((handle, mut conn)) => {
                if conn.has_0rtt() {
                    // A resumed TLS session: the request (or the upload) goes in 0-RTT.
                    let requested = f.workload.requested_bytes();
                    open_data_stream(f.upload, requested, &mut f.writer, &mut f.reader, &mut conn);
                    f.early_stream = true;
                }
                f.client = Some(Conn {
                    handle,
                    conn,
                    dirty: true,
                });
                f.status = FlowStatus::Running;
            }
            Err(e) => {
                f.status = FlowStatus::Failed(format!("connect: {e}"));
                end_flow(f, self.now);
            }
        }
    }

    /// Hands a datagram that came out of the down (`to_receiver`) or up direction to its
    /// endpoint.
    fn deliver(&mut self, to_receiver: bool, packet: Packet, at: Instant) {
        let Some(f) = self.flows.get_mut(packet.flow as usize) else {
            return;
        };
        if f.status != FlowStatus::Running {
            return;
        }
        let to_client = to_receiver != f.upload;
        let (ep, conn, remote) = if to_client {
            (&mut f.client_ep, &mut f.client, f.server_addr)
        } else {
            (&mut f.server_ep, &mut f.server, f.client_addr)
        };
        self.buf.clear();
        // The packet's own buffer becomes quinn's receive buffer (no copy).
        let data = BytesMut::from(Bytes::from(packet.data));
        match ep.handle(at, remote, None, None, data, &mut self.buf) {
            Some(DatagramEvent::ConnectionEvent(handle, event)) => {
                if let Some(c) = conn.as_mut().filter(|c| c.handle == handle) {
                    c.conn.handle_event(event);
                    c.dirty = true;
                }
            }
            Some(DatagramEvent::NewConnection(incoming)) => {
                if to_client || conn.is_some() {
                    ep.ignore(incoming);
                } else {
                    match ep.accept(incoming, at, &mut self.buf, Some(f.server_cfg.clone())) {
                        Ok((handle, c)) => {
                            *conn = Some(Conn {
                                handle,
                                conn: c,
                                dirty: true,
                            })
                        }
                        Err(e) => {
                            if let Some(response) = e.response {
                                let data = self.buf[..response.size].to_vec();
                                let flow = f.index;
                                self.send(!to_receiver, flow, data);
                            }
                        }
                    }
                }
            }
            Some(DatagramEvent::Response(transmit)) => {
                let data = self.buf[..transmit.size].to_vec();
                let flow = f.index;
                // A response from the receiver's endpoint goes up, from the sender's down.
                self.send(!to_receiver, flow, data);
            }
            None => {}
        }
    }

    /// Offers a datagram to the link.
    fn send(&mut self, down: bool, flow: u32, data: Vec<u8>) {
        let f = &mut self.flows[flow as usize];
        send_on(
            &mut self.net,
            &mut self.trace,
            (&mut f.drops, &mut f.bottleneck),
            self.now,
            down,
            flow,
            data,
        );
    }

    fn drive_flow(&mut self, i: usize, at: Instant) {
        let now = self.now;
        let f = &mut self.flows[i];
        // Timed flows end at their deadline.
        if let Workload::Timed { duration } = f.workload
            && now >= f.start + duration
        {
            f.status = FlowStatus::Completed;
            f.reader.completed_at = Some(now);
            end_flow(f, now);
            return;
        }
        for pass in 0..3 {
            // Timers and endpoint events; after the first pass only what transmitting
            // queued (new connection IDs, ...) is left.
            let mut changed = false;
            if let Some(c) = f.client.as_mut() {
                changed |= service_connection(c, &mut f.client_ep, at);
            }
            if let Some(c) = f.server.as_mut() {
                changed |= service_connection(c, &mut f.server_ep, at);
            }
            if pass > 0 && !changed {
                break;
            }
            if f.client.as_ref().is_some_and(|c| c.dirty) {
                client_app(f, now);
                if f.status != FlowStatus::Running {
                    return;
                }
            }
            if f.server.as_ref().is_some_and(|c| c.dirty) {
                server_app(f, now);
                if f.status != FlowStatus::Running {
                    return;
                }
            }
            let flow = f.index;
            // Client first, then server; the sender keeps its stream topped up.
            for client in [true, false] {
                let sender = client == f.upload;
                let conn = if client { &mut f.client } else { &mut f.server };
                let Some(c) = conn.as_mut().filter(|c| c.dirty) else {
                    continue;
                };
                c.dirty = false;
                loop {
                    if sender {
                        top_up(&mut f.writer, &mut c.conn);
                    }
                    let Some(data) = poll_datagram(&mut c.conn, at, &mut self.spare) else {
                        break;
                    };
                    if sender {
                        f.writer.udp_sent += data.len() as u64;
                    }
                    send_on(
                        &mut self.net,
                        &mut self.trace,
                        (&mut f.drops, &mut f.bottleneck),
                        now,
                        sender,
                        flow,
                        data,
                    );
                }
            }
        }
        collect_events(f, &self.net.path);
    }
}

/// What a run keeps of the datagrams it offers to the link ([`RunOptions::datagram_trace`],
/// [`RunOptions::datagram_bytes`]).
pub(crate) struct Tracer {
    keep_entries: bool,
    pub(crate) entries: Vec<TraceEntry>,
    keep_bytes: usize,
    pub(crate) bytes: Vec<Vec<u8>>,
}

/// Offers a datagram of `flow` to the link (through its sender shaper first, if it has
/// one), counting a drop of the data direction in the flow's `drops` and `bottleneck` log.
fn send_on(
    net: &mut Net,
    trace: &mut Tracer,
    (drops, bottleneck): (&mut FlowDrops, &mut BottleneckLog),
    now: Duration,
    down: bool,
    flow: u32,
    data: Vec<u8>,
) {
    let size = data.len() as u32;
    if trace.bytes.len() < trace.keep_bytes {
        trace.bytes.push(data.clone());
    }
    let packet = Packet { flow, data };
    let wire = size + IP_UDP_OVERHEAD_BYTES;
    let shaper = net.shapers.get_mut(flow as usize).and_then(Option::as_mut);
    let admitted = match (down, shaper) {
        (true, Some(shaper)) => {
            let a = shaper.enqueue(now, wire, packet);
            if !a.is_queued() {
                drops.shaper_packets += 1;
            }
            a.is_queued()
        }
        (true, None) => {
            let a = net.path.down.enqueue(now, wire, packet);
            if !a.is_queued() {
                bottleneck.on_dropped(now);
            }
            drops.on_down(now, a);
            a.is_queued()
        }
        (false, _) => {
            let a = net.path.up.enqueue(now, wire, packet);
            if !a.is_queued() {
                drops.up_packets += 1;
            }
            a.is_queued()
        }
    };
    if trace.keep_entries {
        trace.entries.push(TraceEntry {
            at: now,
            down,
            flow,
            size_bytes: size,
            admitted,
        });
    }
}

/// The next datagram of `conn`, written by quinn straight into the buffer the link will
/// carry (no copy). `spare` is that buffer: a poll that finds nothing to send leaves it
/// for the next one, so only datagrams cost an allocation (most polls, one per arriving
/// packet, find nothing).
fn poll_datagram(conn: &mut Connection, at: Instant, spare: &mut Vec<u8>) -> Option<Vec<u8>> {
    spare.clear();
    spare.reserve(usize::from(conn.current_mtu()));
    let transmit = conn.poll_transmit(at, 1, spare)?;
    spare.truncate(transmit.size);
    Some(std::mem::take(spare))
}

/// Timers and endpoint events of one connection. Returns whether anything happened.
fn service_connection(c: &mut Conn, ep: &mut Endpoint, at: Instant) -> bool {
    let mut changed = false;
    if c.conn.poll_timeout().is_some_and(|t| t <= at) {
        c.conn.handle_timeout(at);
        changed = true;
    }
    while let Some(event) = c.conn.poll_endpoint_events() {
        changed = true;
        if let Some(reply) = ep.handle_event(c.handle, event) {
            c.conn.handle_event(reply);
        }
    }
    c.dirty |= changed;
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_that_stays_at_one_instant_is_ended_and_one_that_moves_is_not() {
        let mut guard = ProgressGuard::default();
        let t = Duration::from_millis(5);
        for _ in 0..MAX_STEPS_WITHOUT_PROGRESS - 1 {
            guard.step(t).unwrap();
        }
        assert_eq!(guard.step(t), Err(SimError::Stalled { at: t }));
        let msg = guard.step(t).unwrap_err().to_string();
        assert!(msg.contains("0.005000 s") && !msg.contains('\n'), "{msg}");
        // Steps that move the clock, however little, reset the count.
        let mut guard = ProgressGuard::default();
        for i in 0..3 * MAX_STEPS_WITHOUT_PROGRESS {
            guard.step(Duration::from_nanos(i / 2)).unwrap();
        }
    }
}
