//! One flow of a run as the event loop holds it: its client and server endpoints and
//! connections, its two applications ([`crate::app`]), the probe on its data sender, and
//! what the record will keep of it. Apart from the loop ([`crate::engine`]) and from how a
//! flow is built ([`crate::setup`]) so that each reads on its own.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use quinn_proto::{ClientConfig, Connection, ConnectionHandle, Endpoint, ServerConfig};
use satquic_cc::{CcEvent, Observation};
use satquic_run::probe::{
    EventCollector, ProbeHandle, ProbeState, careful_resume_observation, read_probe,
};
use satquic_run::record::{BottleneckLog, FlowDrops, FlowStatus};
use satquic_run::scenario::{TransportSpec, Workload};

use crate::app::{Reader, Writer};
use crate::stack_qlog::FlowQlog;

pub(crate) struct Conn {
    pub(crate) handle: ConnectionHandle,
    pub(crate) conn: Connection,
    /// Something happened that may let the connection send (a datagram, a timer, an
    /// application action): poll it for transmits. This is how quinn's own driver behaves,
    /// and it matters: quinn's pacer sets its timer for when a whole burst of tokens is
    /// back, but a poll before that would already release single packets, so polling on
    /// unrelated events (another flow's packet, a sampling tick) would change the pacing.
    pub(crate) dirty: bool,
}

/// One flow at run time: its two endpoints and connections, its applications, and what
/// the record will keep of it.
pub(crate) struct FlowRt {
    pub(crate) index: u32,
    pub(crate) start: Duration,
    pub(crate) workload: Workload,
    /// The client sends (an upload).
    pub(crate) upload: bool,
    pub(crate) transport: TransportSpec,
    pub(crate) client_addr: SocketAddr,
    pub(crate) server_addr: SocketAddr,
    pub(crate) client_ep: Endpoint,
    pub(crate) server_ep: Endpoint,
    pub(crate) client_cfg: ClientConfig,
    pub(crate) server_cfg: Arc<ServerConfig>,
    pub(crate) client: Option<Conn>,
    pub(crate) server: Option<Conn>,
    pub(crate) status: FlowStatus,
    pub(crate) capped: bool,
    pub(crate) connected_at: Option<Duration>,
    pub(crate) reader: Reader,
    pub(crate) writer: Writer,
    pub(crate) probe: ProbeHandle,
    pub(crate) events_sink: Arc<EventCollector>,
    /// Events kept for the record (Sample events thinned to one per series step).
    pub(crate) events: Vec<CcEvent>,
    pub(crate) next_sample_event: Duration,
    /// Smoothed RTT when the (real and shadow) slow-start exit was reported.
    pub(crate) rtt_at_exit: Option<Duration>,
    pub(crate) rtt_at_shadow_exit: Option<Duration>,
    /// Start of the bottleneck busy period in progress at the exit, if any.
    pub(crate) busy_since_at_exit: Option<Duration>,
    pub(crate) busy_since_at_shadow_exit: Option<Duration>,
    /// (time, acked bytes) for the trailing delivery rate.
    pub(crate) acked_history: std::collections::VecDeque<(Duration, u64)>,
    /// Stats snapshot taken when the flow ended.
    pub(crate) final_stats: Option<quinn_proto::ConnectionStats>,
    /// The receiver's auto-tuned stream window when the flow ended (auto-tuning only).
    pub(crate) final_receive_window: Option<u64>,
    pub(crate) final_probe: Option<ProbeState>,
    pub(crate) drops: FlowDrops,
    /// Its data packets at the down link's bottleneck: queueing delays and drops.
    pub(crate) bottleneck: BottleneckLog,
    pub(crate) exporter: Option<[u8; 32]>,
    pub(crate) ended_at: Option<Duration>,
    /// Keep what the data sender observed for Careful Resume when the flow ends.
    pub(crate) observe: bool,
    pub(crate) observation: Option<Result<Observation, String>>,
    /// The client opened its stream in 0-RTT (a resumed TLS session).
    pub(crate) early_stream: bool,
    pub(crate) zero_rtt_accepted: bool,
    /// quinn-proto's qlog of the flow's connection ([`crate::RunOptions::stack_qlog`]).
    pub(crate) qlog: Option<FlowQlog>,
}

/// Ends a flow: keeps the sender's stats and drops both connections (their remaining
/// packets in the link are discarded on arrival).
pub(crate) fn end_flow(f: &mut FlowRt, now: Duration) {
    let (sender, receiver) = if f.upload {
        (&f.client, &f.server)
    } else {
        (&f.server, &f.client)
    };
    f.final_stats = sender.as_ref().map(|c| c.conn.stats());
    if f.transport.receive_window_autotune {
        f.final_receive_window = receiver.as_ref().map(|c| c.conn.stream_receive_window());
    }
    if f.observe {
        f.observation = Some(match sender {
            Some(c) => careful_resume_observation(c.conn.congestion_state().clone_box()),
            None => Err("the data sender never connected".into()),
        });
    }
    f.final_probe = Some(read_probe(&f.probe));
    f.ended_at = Some(now);
    f.client = None;
    f.server = None;
}
