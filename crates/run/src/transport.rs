//! The one quinn `TransportConfig` builder, for the simulator's endpoints, the real server
//! and client, and emulated runs: the same [`TransportSpec`] configures quinn identically
//! everywhere. What differs between an endpoint in virtual time and one on a real socket
//! (segmentation offload, idle timeout, keep-alives, stream limits) is an explicit
//! [`EndpointSettings`].

use std::time::Duration;

use quinn_proto::{IdleTimeout, TransportConfig, VarInt};

use crate::probe::SharedFactory;
use crate::scenario::TransportSpec;

/// QUIC's minimum UDP payload size (RFC 9000 Sec. 14), quinn's `initial_mtu` default.
pub const MIN_MTU: u16 = 1200;

/// Largest UDP payload size a spec may use: quinn reserves two bytes for a long-header
/// packet's Length field (a varint below 2^14), so a larger datagram fails an assertion
/// inside quinn-proto.
pub const MAX_MTU: u16 = 16_383;

/// Largest initial congestion window a spec may set: 1 GB, far beyond any BDP of the
/// presets.
pub const MAX_INITIAL_WINDOW: u64 = 1_000_000_000;

/// Longest initial RTT a spec may assume.
pub const MAX_INITIAL_RTT: Duration = Duration::from_secs(60);

/// Endpoint settings that are not part of a flow's [`TransportSpec`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointSettings {
    /// Hand batches of datagrams to the kernel (UDP GSO). The simulator's link carries
    /// single datagrams.
    pub segmentation_offload: bool,
    /// Close a connection after this long without a packet from the peer.
    pub idle_timeout: Duration,
    /// Send keep-alives at this interval (`None`: never).
    pub keep_alive_interval: Option<Duration>,
    /// Concurrent bidirectional / unidirectional streams a peer may open (`None`: quinn's
    /// default of 100).
    pub max_bidi_streams: Option<u32>,
    pub max_uni_streams: Option<u32>,
}

impl EndpointSettings {
    /// The simulator's endpoints: single datagrams, and an idle timeout of 120 s so that
    /// a stalled GEO flow (RTT 0.6 s plus a deep queue, silent for seconds) is not ended
    /// by quinn's 30 s default before a 60 s cap would.
    pub fn simulated() -> Self {
        EndpointSettings {
            segmentation_offload: false,
            idle_timeout: Duration::from_secs(120),
            keep_alive_interval: None,
            max_bidi_streams: None,
            max_uni_streams: None,
        }
    }
}

/// Checks a transport spec as a user typed it (its congestion control was parsed where
/// it entered); errors are one line.
pub fn validate(spec: &TransportSpec) -> Result<(), String> {
    if !(MIN_MTU..=MAX_MTU).contains(&spec.mtu) {
        return Err(format!(
            "mtu {} must be between QUIC's minimum of {MIN_MTU} bytes and {MAX_MTU} bytes",
            spec.mtu
        ));
    }
    if let Some(iw) = spec.initial_window
        && !(u64::from(MIN_MTU)..=MAX_INITIAL_WINDOW).contains(&iw)
    {
        return Err(format!(
            "initial window {iw} bytes must be between one packet ({MIN_MTU} bytes) and \
             {MAX_INITIAL_WINDOW} bytes"
        ));
    }
    for (name, bytes) in [
        ("receive_window", spec.receive_window),
        ("stream_receive_window", spec.stream_receive_window),
    ] {
        if bytes == 0 || VarInt::from_u64(bytes).is_err() {
            return Err(format!("{name} {bytes} bytes is out of range"));
        }
    }
    if spec.send_window == 0 {
        return Err("send_window must be at least one byte".into());
    }
    if let Some(rtt) = spec.initial_rtt
        && (rtt.is_zero() || rtt > MAX_INITIAL_RTT)
    {
        return Err("initial RTT must be above 0 and at most 60 s".into());
    }
    if let Some(a) = &spec.ack_frequency {
        a.validate()?;
    }
    Ok(())
}

/// The quinn transport configuration of an endpoint for `spec`, with `factory` as its
/// congestion controller.
pub fn transport_config(
    spec: &TransportSpec,
    endpoint: &EndpointSettings,
    factory: SharedFactory,
) -> Result<TransportConfig, String> {
    validate(spec)?;
    let profile = spec.cc.is_profile();
    let mut t = TransportConfig::default();
    if profile {
        // The profile's transport half (ACK frequency, path MTU discovery, stream data in
        // probes), with the spec's windows.
        satquic_cc::profile::apply_satellite_transport(&mut t, spec.receive_windows());
    } else {
        spec.receive_windows().apply(&mut t);
        t.pto_probe_stream_data(spec.pto_probe_data);
    }
    t.send_window(spec.send_window);
    if let Some(rtt) = spec.initial_rtt {
        t.initial_rtt(rtt);
    }
    t.initial_mtu(spec.mtu);
    if profile || spec.mtu_discovery {
        // PLPMTUD falls back to QUIC's minimum, not to the starting size.
        t.min_mtu(MIN_MTU);
    } else {
        t.min_mtu(spec.mtu);
        t.mtu_discovery_config(None);
    }
    // satquic's receivers read in order on long fat lossy paths, where quinn's fixed
    // 1,024-chunk reassembly bound closes legitimate connections (SATQUIC-PATCH.md, patch 10);
    // the growing bound keeps the bookkeeping proportional to the receive window.
    t.reassembly_chunk_limit_grows_with_data(true);
    t.enable_segmentation_offload(endpoint.segmentation_offload);
    let idle = IdleTimeout::try_from(endpoint.idle_timeout)
        .map_err(|_| "idle timeout out of range".to_string())?;
    t.max_idle_timeout(Some(idle));
    t.keep_alive_interval(endpoint.keep_alive_interval);
    if let Some(n) = endpoint.max_bidi_streams {
        t.max_concurrent_bidi_streams(VarInt::from_u32(n));
    }
    if let Some(n) = endpoint.max_uni_streams {
        t.max_concurrent_uni_streams(VarInt::from_u32(n));
    }
    // The spec's request, if it makes one, replaces the profile's.
    if let Some(a) = &spec.ack_frequency {
        t.ack_frequency_config(Some(satquic_cc::profile::ack_frequency_config(
            a.packets_per_ack,
            a.max_ack_delay,
            a.reordering_threshold,
            a.window_divisor,
        )));
    }
    t.congestion_controller_factory(factory);
    Ok(t)
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::scenario::AckFrequencySpec;

    #[test]
    fn bad_specs_are_refused_in_one_line() {
        let ok = TransportSpec::default();
        assert_eq!(validate(&ok), Ok(()));
        let cases = [
            TransportSpec {
                mtu: 1199,
                ..ok.clone()
            },
            TransportSpec {
                receive_window: 0,
                ..ok.clone()
            },
            TransportSpec {
                stream_receive_window: 1 << 62,
                ..ok.clone()
            },
            TransportSpec {
                send_window: 0,
                ..ok.clone()
            },
            TransportSpec {
                initial_rtt: Some(Duration::ZERO),
                ..ok.clone()
            },
        ];
        for spec in cases {
            let err = validate(&spec).unwrap_err();
            assert!(!err.is_empty() && !err.contains('\n'), "{err}");
        }
    }

    fn config_of(spec: &TransportSpec) -> String {
        let factory = crate::probe::controller_factory(spec, None, Instant::now(), None, 0);
        let t = transport_config(spec, &EndpointSettings::simulated(), factory).unwrap();
        format!("{t:?}")
    }

    fn assert_fields(debug: &str, parts: &[&str]) {
        for part in parts {
            assert!(debug.contains(part), "{part} not in {debug}");
        }
    }

    /// The profile, alone or with a part added, gets its transport half from the one
    /// function in satquic-cc, with the spec's windows (fixed 256 MiB by default, or
    /// auto-tuned when the spec asks); an ACK frequency the spec gives replaces the
    /// profile's; other controllers get only what the spec asks.
    #[test]
    fn the_profile_gets_its_transport_half_with_the_specs_windows() {
        let fixed = [
            "stream_receive_window: 268435456,",
            "stream_receive_window_max: None",
            " receive_window: 268435456,",
        ];
        let profile = [
            "pto_probe_stream_data: true",
            "min_mtu: 1200,",
            "mtu_discovery_config: Some(",
            "ack_frequency_config: Some(AckFrequencyConfig { ack_eliciting_threshold: 15,",
            "window_divisor: Some(8)",
        ];
        for cc in ["satellite", "Satellite+loss-filter"] {
            let debug = config_of(&TransportSpec::with_cc(cc));
            assert_fields(&debug, &fixed);
            assert_fields(&debug, &profile);
        }
        let tuned = TransportSpec {
            receive_window_autotune: true,
            mtu: 1400,
            ack_frequency: AckFrequencySpec::parse("4:25ms").unwrap(),
            ..TransportSpec::with_cc("satellite")
        };
        assert_fields(
            &config_of(&tuned),
            &[
                "stream_receive_window: 1250000,",
                "stream_receive_window_max: Some(268435456)",
                " receive_window: 268435456,",
                "pto_probe_stream_data: true",
                "min_mtu: 1200,",
                "ack_frequency_config: Some(AckFrequencyConfig { ack_eliciting_threshold: 3,",
            ],
        );
        let cubic = config_of(&TransportSpec {
            mtu: 1400,
            ..TransportSpec::with_cc("cubic")
        });
        assert_fields(
            &cubic,
            &[
                "pto_probe_stream_data: false",
                "min_mtu: 1400,",
                "mtu_discovery_config: None",
                "ack_frequency_config: None",
            ],
        );
        assert_fields(&cubic, &fixed);
    }
}
