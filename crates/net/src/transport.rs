//! Transport settings shared by the server, the client and emulated runs.
//!
//! The congestion-control and window fields are the simulator's [`TransportSpec`], so an
//! emulated run and a simulated run of the same scenario configure quinn identically;
//! [`NetTransport`] adds what only real sockets have (GSO, idle timeout, stream limits).

use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::{IdleTimeout, TransportConfig, VarInt};
use satquic_cc::EventSink;
use satquic_sim::TransportSpec;
use satquic_sim::probe::{ProbeFactory, ProbeHandle, controller_factory};

use crate::NetError;

/// Real-socket transport settings.
#[derive(Debug, Clone)]
pub struct NetTransport {
    /// Congestion control, initial window, flow-control windows, initial RTT, MTU.
    pub spec: TransportSpec,
    /// Let quinn hand batches of datagrams to the kernel (UDP GSO) where it supports it.
    pub gso: bool,
    /// Close a connection after this long without any packet from the peer.
    pub idle_timeout: Duration,
    /// Concurrent bidirectional streams a peer may open.
    pub max_bidi_streams: u32,
    /// Concurrent unidirectional streams a peer may open (HTTP/3 needs 3).
    pub max_uni_streams: u32,
}

impl Default for NetTransport {
    fn default() -> Self {
        NetTransport {
            spec: TransportSpec {
                // Real networks: start at quinn's 1200 bytes and probe upwards.
                mtu_discovery: true,
                ..TransportSpec::default()
            },
            gso: true,
            idle_timeout: Duration::from_secs(30),
            max_bidi_streams: 32,
            max_uni_streams: 8,
        }
    }
}

impl NetTransport {
    /// Checks the settings a user typed, one line per problem.
    pub fn validate(&self) -> Result<(), NetError> {
        satquic_sim::probe::validate_cc(&self.spec.cc)
            .map_err(|e| NetError::Usage(e.to_string()))?;
        if self.spec.mtu < 1200 {
            return Err(NetError::Usage(format!(
                "mtu {} is below QUIC's minimum of 1200 bytes",
                self.spec.mtu
            )));
        }
        for (name, v) in [
            ("receive window", self.spec.receive_window),
            ("stream receive window", self.spec.stream_receive_window),
        ] {
            if VarInt::from_u64(v).is_err() || v == 0 {
                return Err(NetError::Usage(format!("{name} {v} bytes is out of range")));
            }
        }
        if self.idle_timeout.is_zero() || self.idle_timeout > Duration::from_secs(3600) {
            return Err(NetError::Usage(
                "idle timeout must be between 1 ms and 1 hour".into(),
            ));
        }
        if let Some(rtt) = self.spec.initial_rtt
            && (rtt.is_zero() || rtt > Duration::from_secs(60))
        {
            return Err(NetError::Usage(
                "initial RTT must be between 1 us and 60 s".into(),
            ));
        }
        Ok(())
    }

    /// A quinn transport configuration whose congestion controller reports its events to
    /// `sink` and its state to the returned probe (times relative to `origin`).
    pub fn build(
        &self,
        sink: Option<Arc<dyn EventSink>>,
        origin: Instant,
    ) -> Result<(TransportConfig, ProbeHandle), NetError> {
        self.validate()?;
        let spec = &self.spec;
        let factory =
            controller_factory(spec, sink, origin).map_err(|e| NetError::Usage(e.to_string()))?;
        let (probe_factory, probe) = ProbeFactory::new(factory, origin);
        let mut t = TransportConfig::default();
        let varint = |v: u64| VarInt::from_u64(v).unwrap_or(VarInt::MAX);
        t.receive_window(varint(spec.receive_window));
        t.stream_receive_window(varint(spec.stream_receive_window));
        t.send_window(spec.send_window);
        if let Some(rtt) = spec.initial_rtt {
            t.initial_rtt(rtt);
        }
        t.initial_mtu(spec.mtu);
        if spec.mtu_discovery {
            t.min_mtu(1200);
        } else {
            t.min_mtu(spec.mtu);
            t.mtu_discovery_config(None);
        }
        t.enable_segmentation_offload(self.gso);
        t.max_idle_timeout(Some(
            IdleTimeout::try_from(self.idle_timeout)
                .unwrap_or_else(|_| IdleTimeout::from(VarInt::from_u32(30_000))),
        ));
        // Keep-alives well inside the idle timeout, so a long stall on a GEO link (a
        // deep queue draining) does not look like a dead peer.
        t.keep_alive_interval(Some(self.idle_timeout / 3));
        t.max_concurrent_bidi_streams(VarInt::from_u32(self.max_bidi_streams));
        t.max_concurrent_uni_streams(VarInt::from_u32(self.max_uni_streams));
        t.congestion_controller_factory(probe_factory);
        Ok((t, probe))
    }
}
