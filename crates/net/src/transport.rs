//! Transport settings shared by the server, the client and emulated runs.
//!
//! The congestion-control and window fields are satquic-run's [`TransportSpec`] and quinn
//! is configured by satquic-run's one builder, so an emulated run and a simulated run of
//! the same scenario configure quinn identically; [`NetTransport`] adds what only real
//! sockets have (GSO, idle timeout, keep-alives, stream limits).

use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::TransportConfig;
use satquic_cc::EventSink;
use satquic_run::TransportSpec;
use satquic_run::probe::{ProbeFactory, ProbeHandle, controller_factory};
use satquic_run::transport::{EndpointSettings, transport_config};

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
        satquic_run::transport::validate(&self.spec).map_err(NetError::Usage)?;
        if self.idle_timeout.is_zero() || self.idle_timeout > Duration::from_secs(3600) {
            return Err(NetError::Usage(
                "idle timeout must be between 1 ms and 1 hour".into(),
            ));
        }
        Ok(())
    }

    /// What this endpoint adds to the spec: GSO, the idle timeout with keep-alives well
    /// inside it (so a long stall on a GEO link, a deep queue draining, does not look like
    /// a dead peer), stream limits.
    pub fn endpoint_settings(&self) -> EndpointSettings {
        EndpointSettings {
            segmentation_offload: self.gso,
            idle_timeout: self.idle_timeout,
            keep_alive_interval: Some(self.idle_timeout / 3),
            max_bidi_streams: Some(self.max_bidi_streams),
            max_uni_streams: Some(self.max_uni_streams),
        }
    }

    /// A quinn transport configuration whose congestion controller reports its events to
    /// `sink` and its state to the returned probe (times relative to `origin`).
    pub fn build(
        &self,
        sink: Option<Arc<dyn EventSink>>,
        origin: Instant,
    ) -> Result<(TransportConfig, ProbeHandle), NetError> {
        self.build_resuming(sink, origin, None)
    }

    /// As [`Self::build`], the controller resuming from saved parameters (Careful Resume,
    /// RFC 9959; path and Lifetime checked by the caller).
    pub fn build_resuming(
        &self,
        sink: Option<Arc<dyn EventSink>>,
        origin: Instant,
        resume: Option<satquic_cc::ResumeParams>,
    ) -> Result<(TransportConfig, ProbeHandle), NetError> {
        self.validate()?;
        let factory = controller_factory(&self.spec, sink, origin, resume, connection_seed());
        let (probe_factory, probe) = ProbeFactory::new(factory, origin);
        let config = transport_config(&self.spec, &self.endpoint_settings(), probe_factory)
            .map_err(NetError::Usage)?;
        Ok((config, probe))
    }
}

/// The seed of a real connection's controller (BBRv3's probe timing): real runs are not
/// reproducible anyway, and two connections of one host should not probe in step, so it
/// comes from the clock and the process.
fn connection_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
}
