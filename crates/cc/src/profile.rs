//! The `satellite` profile: one name for the combination satquic measures best on
//! long-RTT paths, and one call for quinn users.
//!
//! | part | value | why |
//! |---|---|---|
//! | congestion control | [`SATELLITE_CC`]: CUBIC (RFC 9438), SEARCH (current draft) exit, start-up growing 3x per RTT ([`crate::growth`]) | under growth SEARCH looks back by the path's RTT before it was loaded (`lookback=auto`: the minimum RTT, or a jittery path's mean, [`crate::path_rtt`], [`crate::slow_start::search`]), so faster growth still exits at the chokepoint on geo-viasat and sat-50-10; x3 rather than x4 or picoquic's RTT-scaled 7x, which exited late on qir-sat; since the jump reads the queueing-delay bound, x3 is within 0.01 s of doubling on the start-up rows and changes no verdict on the grid, so it is a candidate for removal (BENCHMARKS.md, "Start-up mechanisms") |
//! | start-up jump | the window raised during the initial slow start to the bottleneck rate that queueing delay proves x minimum RTT (`+jump:bound`, ours: a packet that left in a burst behind B bytes and came back w later than the smallest RTT of a data packet shows the bottleneck drains at least B / w, w not counting the path's own jitter, [`crate::path_rtt`], [`crate::jump`]), held there until the flight sent since has come back over a quarter RTT (`validate`, ours): as fast as it left or at the bound's rate, the window goes to 1.5 times that BDP and slow start goes on, held there (`cap=1.5`, ours); slower, the initial slow start ends at what the path delivered (`jump-refused`) | the bound is not raised by late or bunched ACKs, whichever end sends (ACK-spacing samples made a download overfill the queue where the same path's upload did not, 50/1 Mbit/s, 600 ms), and it measures a first flight at any rate; a burst measures the bottleneck's rate even when another flow keeps the bottleneck busy, and a minimum RTT taken beside that flow's standing queue includes the queue, so the jump is judged before the window grows past it: beside a BBRv3 flow on thesis-sat the latecomer jumped to 15 BDP and lost 41,640 packets, now at most 1.5 BDP and a few per cent of that (BENCHMARKS.md, "Beside other traffic"); the cap keeps the window from overfilling a 1-BDP buffer (qir-sat) and geo-viasat's AQM; with the path's jitter counted as queueing, the bound read a fifth of a 55 Mbit/s LEO bottleneck and the ceiling held the start-up to what the path delivered (LEO grid 65 -> 73 of 102 point-directions at least as fast as `cubic` and `bbr3` without it counted, no GEO run moved) (BENCHMARKS.md, "The satellite grid", "Start-up mechanisms" and "picoquic's satellite suite") |
//! | long-RTT start | picoquic's window floor (`+floor:iw=15360,max-rtt=1000`: picoquic's initial window, 10 x 1,536 bytes, times min RTT / 100 ms, for RTTs up to 1 s, [`crate::growth::RttWindowFloor`]) and slow-start pacing bursts of a quarter window, at least 64 KiB and at most 10 ms at the measured bottleneck rate (`+burst:min=65536,time=10`, picoquic's quanta with a larger minimum, [`crate::burst`]), so the first flights cross the bottleneck back to back and the jump measures the bottleneck, not our pacing | first connections start sooner on long paths, with and without random loss, on GEO paths up to 900 ms; bursts limited in time do not overfill a small queue once the rate is known (BENCHMARKS.md, "Start-up mechanisms" and "The satellite grid") |
//! | loss response | the profile's own, as RFC 9002 Sec. 7's "different controller" (docs/conformance.md): random loss tolerated, congestion answered (`+loss-filter:startup-confirm=2,cr=validating`: picoquic's smoothed per-packet loss rate above 0.15 is congestion, during the initial slow start once [`SATELLITE_LOSS_CONFIRM`] lost packets in a row have found it there, so losses in a burst are answered and isolated ones, or a short random cluster before the first reduction, are not; every ECN-CE mark and persistent congestion always, [`crate::loss_filter`]); what it answers, CUBIC answers (0.7, once per round trip). Careful Resume hears every loss in Reconnaissance and the Unvalidated Phase (RFC 9959's MUSTs), and in the Validating Phase only those the loss response answers (`cr=validating`); `satellite+loss-filter:off` answers every loss as RFC 9438 does | with every loss answered, random loss held the profile at the Mathis bound (0.1 % on geo-viasat: 2.9 Mbit/s of 150; sat-250-3 with 1 in 64 and qir-satloss did not finish in 120 s); with the loss response they take 8.0, 6.4 and 6.7 s, and beside other traffic the pairs pass exactly the same checks; at 5 % and 10 % random loss goodput falls below a tenth of the path; picoquic's rule alone took a random cluster of four losses at 1 % for a burst and ended the slow start at a 14.7 MB window (geo-viasat 100 MB, seed 8: 9.45 s against a median of 8.19 s over seeds 1-8), confirmed in the initial slow start it takes 8.47 s; confirmed after it too (`confirm=2`), a CUBIC overflow of a shallow queue, whose drops come sparse, was answered later (the profile's losses beside other traffic +10 % on a 0.5-BDP grid point, +14 % in the thesis-sat mix), so after the initial slow start the rule stays picoquic's; Safe Retreat on every loss of the Validating Phase made resumed lossy connections 2-3 times slower than new ones, `cr=validating` makes them faster (BENCHMARKS.md, "Random loss") |
//! | retreat | the first reduction taken from what the path delivered over the latest round trip when the window is larger (`+retreat`, ours, [`crate::retreat`]) | a start-up that overshot (a jump beside traffic that filled the path after it passed, growth past a queue) falls back at once, not by 0.7 per round trip from a window many times the path's |
//! | Careful Resume (RFC 9959) | jump as soon as the path is confirmed (`jump-on-confirm`, the RFC's "MAY be deferred" not taken) and, after a validated jump, slow start capped at the saved capacity (`ss-cap=1`, ours) | resumed connections finish sooner; without the cap, slow start doubles past the saved capacity into the buffer: the resumed rows' p95 queueing delay goes from 31-169 ms to 296-313 ms, for no time saved (BENCHMARKS.md, "Careful Resume and resumption") |
//! | ACK frequency | an ACK at least every cwnd / [`SATELLITE_WINDOW_DIVISOR`] bytes and every [`SATELLITE_PACKETS_PER_ACK`] packets, at most [`SATELLITE_MAX_ACK_DELAY`] late (draft-ietf-quic-ack-frequency; the window-following request is a quinn-proto patch of ours) | every-2nd-packet ACKs crowd the thin return link of a 250/3 Mbit/s path, 16 packets per ACK spare most of it (`crates/sim/tests/satellite.rs` asserts at most 25 %); dense ACKs while the window is small give the start-up jump its sample (BENCHMARKS.md, "Start-up mechanisms") |
//! | path MTU | PLPMTUD on (RFC 8899, quinn's search up to 1452 bytes) | fewer packets and ACKs for the same bytes |
//! | probe timeouts | a probe with nothing new to send resends the stream data of the oldest packet in flight, not a PING (RFC 9002 Sec. 6.2.4 allows either; quinn-proto patch 11) | a lost last packet reaches the receiver one round trip sooner (BENCHMARKS.md, "Careful Resume and resumption", the `probe-ping` row) |
//!
//! **Why CUBIC and not BBRv3 as the base.** On the satellite grid (BENCHMARKS.md, "The
//! satellite grid" and "BBRv3") the profile is at least as fast as picoquic's best on all 46
//! lossless points both ways (median 0.970 of picoquic's time); `bbr3` with its long-RTT
//! aids (`bbr3:floor,quanta,jump,long-probe-rtt`) and the profile's ACK frequency comes
//! within 10 % of picoquic's BBRv3 on all 46 (median 0.99-1.00 of it) but loses 3-5 times
//! more packets than the draft's Startup on shallow queues. Nothing on the grid argues for a
//! BBRv3 base, or for choosing by path.
//!
//! Everything stays available piece by piece
//! (`cubic+search+growth:x=3+floor:iw=15360,max-rtt=1000+jump:cap=1.5,bound,validate+burst:min=65536,time=10+loss-filter:startup-confirm=2,cr=validating+retreat+cr:ss-cap=1,jump-on-confirm`,
//! `--ack-freq 16:25ms:cwnd/8`, `mtu_discovery = true` in a campaign variant).

use std::sync::Arc;
use std::time::Duration;

use quinn_proto::{AckFrequencyConfig, TransportConfig, VarInt};

use crate::CongestionConfig;
use crate::modifiers::PART_NAMES;

/// The profile's name, accepted wherever a congestion-control spec is.
pub const SATELLITE: &str = "satellite";

/// The profile's congestion control as a spec string.
pub const SATELLITE_CC: &str = "cubic+search+growth:x=3+floor:iw=15360,max-rtt=1000+jump:cap=1.5,bound,validate+burst:min=65536,time=10+loss-filter:startup-confirm=2,cr=validating+retreat+cr:ss-cap=1,jump-on-confirm";

/// Lost packets in a row that must find the smoothed loss rate above its threshold before
/// the profile's loss response answers during the initial slow start
/// (`+loss-filter:startup-confirm=2`, [`crate::loss_filter`]): picoquic's rule (1) answers
/// three losses within a few packets, which 1 % random loss draws about once in 33,000
/// packets, once per 100 MB on GEO, and there the cut ends the slow start of a window of
/// 10,000 packets (geo-viasat 100 MB at 1 %, seed 8: 9.45 s against a median of 8.19 s); a
/// second one needs a fourth loss, drawn a seventh as often, while a queue that a slow start
/// overflows drops most of its arrivals and is answered in the same ACK batch. After the
/// initial slow start the rule is picoquic's: CUBIC overflows a shallow queue by a few
/// packets a round, whose sparse losses a confirmation answers later (BENCHMARKS.md, "Random
/// loss").
pub const SATELLITE_LOSS_CONFIRM: u32 = 2;

/// The receiver ACKs at least every this many ack-eliciting packets.
pub const SATELLITE_PACKETS_PER_ACK: u32 = 16;

/// ... and at most this long after the first unacknowledged one (RFC 9000's default
/// max_ack_delay).
pub const SATELLITE_MAX_ACK_DELAY: Duration = Duration::from_millis(25);

/// The reordering threshold an ACK_FREQUENCY request carries: RFC 9002 Sec. 6.1.1's packet
/// threshold (3) minus one, as draft-ietf-quic-ack-frequency recommends (quinn's default).
pub const REORDERING_THRESHOLD: u32 = 2;

/// ... and at least every congestion window / this many bytes: the packets per ACK follow
/// the window, from every 2nd packet over the initial window up to
/// [`SATELLITE_PACKETS_PER_ACK`] from a window of 64 packets on (draft-ietf-quic-ack-frequency
/// leaves the policy to the sender). Dense ACKs at the start give the start-up jump
/// (`+jump`) a rate sample from the initial window's train and SEARCH its first bins; thin
/// ones later spare the return link. 8 rather than 4 since the slow-start bursts
/// (`+burst`, a quarter window each): two ACKs or more per burst give the jump a rate
/// sample inside the burst, and sat-250-3's upload finishes sooner than with 4
/// (BENCHMARKS.md, "Start-up mechanisms").
pub const SATELLITE_WINDOW_DIVISOR: u32 = 8;

/// quinn's ACK_FREQUENCY request: an ACK at least every `packets_per_ack` (>= 1)
/// ack-eliciting packets, at most `max_ack_delay` late, at once after
/// `reordering_threshold` out-of-order packets; with `window_divisor` D, also at least
/// every cwnd / D bytes, re-requested as the window grows or shrinks (a quinn-proto patch
/// of ours, vendor/quinn-proto/SATQUIC-PATCH.md; without the feature `patched-quinn` the
/// divisor is ignored and the request is the fixed one).
pub fn ack_frequency_config(
    packets_per_ack: u32,
    max_ack_delay: Duration,
    reordering_threshold: u32,
    window_divisor: Option<u32>,
) -> AckFrequencyConfig {
    let mut ack = AckFrequencyConfig::default();
    ack.ack_eliciting_threshold(VarInt::from_u32(packets_per_ack.saturating_sub(1)))
        .max_ack_delay(Some(max_ack_delay))
        .reordering_threshold(VarInt::from_u32(reordering_threshold));
    #[cfg(feature = "patched-quinn")]
    ack.window_divisor(window_divisor);
    #[cfg(not(feature = "patched-quinn"))]
    let _ = window_divisor;
    ack
}

/// True if `spec` names the satellite profile, alone or with parts added
/// ([`expand`]).
pub fn is_satellite(spec: &str) -> bool {
    expand(spec).is_some()
}

/// The controller spec string of `satellite[-PART]...[+PART[:OPTIONS]]...`: the profile
/// without each part named after a `-`, then with each modifier part added, or put in place
/// of the profile's part of that name (`satellite+rollback` adds the rollback,
/// `satellite+jump:cap=2,bound` replaces the jump, `satellite+loss-filter:off` takes the loss
/// response out, `satellite-growth-retreat` is the profile without its growth and retreat:
/// what removing a part costs is measured this way, the transport half kept). `None` if
/// `spec` does not name the profile; an error names a part that is not a modifier (the
/// avoidance and the slow start are the profile's) or one the profile does not have.
pub fn expand(spec: &str) -> Option<Result<String, String>> {
    let lower = spec.trim().to_ascii_lowercase();
    let rest = lower.strip_prefix(SATELLITE)?;
    let (removed, added) = match rest.split_once('+') {
        Some((removed, added)) => (removed, Some(added)),
        None => (rest, None),
    };
    if !removed.is_empty() && !removed.starts_with('-') {
        return None;
    }
    let mut parts: Vec<String> = SATELLITE_CC.split('+').map(String::from).collect();
    if let Err(e) = remove_parts(&mut parts, removed) {
        return Some(Err(e));
    }
    for part in added.into_iter().flat_map(|a| a.split('+')) {
        let name = part_name(part);
        if !PART_NAMES.contains(&name) {
            return Some(Err(format!(
                "'{part}' cannot be added to the {SATELLITE} profile: only its modifiers \
                 can ({}); write the whole spec to change the rest ({SATELLITE_CC})",
                PART_NAMES.join(", ")
            )));
        }
        parts.retain(|p| part_name(p) != name);
        parts.push(part.to_string());
    }
    // `+cr` runs to the end of a spec: keep it last.
    parts.sort_by_key(|p| part_name(p) == "cr");
    Some(Ok(parts.join("+")))
}

/// The name of a spec part, `jump` of `jump:cap=2,bound`.
fn part_name(part: &str) -> &str {
    part.split(':').next().unwrap_or_default()
}

/// Takes out of the profile's `parts` each part `removed` names, `-NAME` after `-NAME`
/// (names hold dashes, `loss-filter`: each is the longest modifier name that follows a dash).
fn remove_parts(parts: &mut Vec<String>, removed: &str) -> Result<(), String> {
    let mut rest = removed;
    while let Some(after) = rest.strip_prefix('-') {
        let name = PART_NAMES
            .iter()
            .filter(|n| {
                after.starts_with(*n) && matches!(after.as_bytes().get(n.len()), None | Some(b'-'))
            })
            .max_by_key(|n| n.len())
            .ok_or_else(|| {
                format!(
                    "'-{after}' names no part the {SATELLITE} profile can lose: only its \
                     modifiers can be taken out ({})",
                    PART_NAMES.join(", ")
                )
            })?;
        let before = parts.len();
        parts.retain(|p| part_name(p) != *name);
        if parts.len() == before {
            return Err(format!(
                "'-{name}': the {SATELLITE} profile has no {name} part ({SATELLITE_CC})"
            ));
        }
        rest = &after[name.len()..];
    }
    Ok(())
}

/// The profile's congestion controller.
pub fn satellite_cc() -> CongestionConfig {
    SATELLITE_CC.parse().expect("the profile's spec parses")
}

/// Largest stream receive window [`apply_satellite`] lets auto-tuning reach: 256 MiB,
/// satquic's own fixed window, above the bandwidth-delay product of any preset.
pub const SATELLITE_MAX_STREAM_WINDOW: u32 = 256 * 1024 * 1024;

/// Applies the whole profile to a quinn transport configuration: controller, ACK
/// frequency, path MTU discovery, and a stream receive window that auto-tunes from the
/// one configured (quinn's default: 1.25 MB, 16.7 Mbit/s at a 600 ms RTT) up to
/// [`SATELLITE_MAX_STREAM_WINDOW`] while the application keeps reading faster than the
/// window lets the peer send (quinn-proto patch 5; [`ReceiveWindows::SATELLITE`]).
/// Auto-tuning bounds what a stream can make the receiver buffer by how fast the
/// application reads; a bulk transfer on a fast GEO path that can afford fixed BDP-sized
/// windows starts sooner with them ([`apply_satellite_transport`] with
/// [`ReceiveWindows::Fixed`], as satquic's commands do; BENCHMARKS.md, "Stock and patched
/// quinn-proto"). The connection window (quinn's default: unlimited) and timeouts are left
/// to the caller.
///
/// Without the feature `patched-quinn` (stock quinn-proto) the controller and path MTU
/// discovery are the same; the rest degrades as the crate docs table: a fixed ACK every 8th
/// packet instead of one that follows the window, fixed receive windows of
/// [`SATELLITE_MAX_STREAM_WINDOW`] per stream and per connection, and PING probes. It is
/// not the same profile: picoquic's basic upload over sat-250-3 takes 5.78 s there
/// against 5.19 s (BENCHMARKS.md, "Stock and patched quinn-proto").
pub fn apply_satellite(transport: &mut TransportConfig) -> &mut TransportConfig {
    transport.congestion_controller_factory(Arc::new(satellite_cc()));
    apply_satellite_transport(transport, ReceiveWindows::SATELLITE)
}

/// How [`apply_satellite_transport`] sets the receive windows: the one part of the
/// profile's transport half its callers choose differently. A quinn application gets
/// [`ReceiveWindows::SATELLITE`] from [`apply_satellite`]; satquic's commands pass the
/// windows of their transport spec (fixed 256 MiB windows by default, BDP-sized for any
/// preset). Sizes are bytes; one above QUIC's largest varint is taken as that varint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiveWindows {
    /// Each stream's window starts at `start` bytes (`None`: as configured, quinn's
    /// 1.25 MB by default) and doubles while the application reads a window faster than
    /// the peer sends it, up to `max` bytes (quinn-proto patch 5); the connection's window
    /// is `connection` bytes (`None`: as configured, quinn's unlimited by default).
    #[cfg(feature = "patched-quinn")]
    AutoTune {
        start: Option<u64>,
        max: u64,
        connection: Option<u64>,
    },
    /// Fixed windows: `stream` bytes per stream, `connection` bytes per connection.
    Fixed { stream: u64, connection: u64 },
}

impl ReceiveWindows {
    /// [`apply_satellite`]'s: per stream from quinn's window auto-tuned up to
    /// [`SATELLITE_MAX_STREAM_WINDOW`], the connection's left as configured.
    #[cfg(feature = "patched-quinn")]
    pub const SATELLITE: ReceiveWindows = ReceiveWindows::AutoTune {
        start: None,
        max: SATELLITE_MAX_STREAM_WINDOW as u64,
        connection: None,
    };

    /// [`apply_satellite`]'s on stock quinn-proto, which cannot auto-tune: fixed windows
    /// at the cap, which bound what one connection can make the receiver buffer to
    /// [`SATELLITE_MAX_STREAM_WINDOW`].
    #[cfg(not(feature = "patched-quinn"))]
    pub const SATELLITE: ReceiveWindows = ReceiveWindows::Fixed {
        stream: SATELLITE_MAX_STREAM_WINDOW as u64,
        connection: SATELLITE_MAX_STREAM_WINDOW as u64,
    };

    /// Sets these windows on `transport`.
    pub fn apply(self, transport: &mut TransportConfig) -> &mut TransportConfig {
        let varint = |bytes: u64| VarInt::from_u64(bytes).unwrap_or(VarInt::MAX);
        match self {
            #[cfg(feature = "patched-quinn")]
            ReceiveWindows::AutoTune {
                start,
                max,
                connection,
            } => {
                if let Some(start) = start {
                    transport.stream_receive_window(varint(start));
                }
                if let Some(connection) = connection {
                    transport.receive_window(varint(connection));
                }
                transport.stream_receive_window_max(Some(varint(max)))
            }
            ReceiveWindows::Fixed { stream, connection } => transport
                .stream_receive_window(varint(stream))
                .receive_window(varint(connection)),
        }
    }
}

/// The profile's transport half, the one place it is written, for [`apply_satellite`]
/// and satquic's commands alike: the ACK frequency ([`satellite_ack_frequency`]), path
/// MTU discovery, on patched quinn-proto stream data in probe timeouts (patch 11: a lost
/// last packet reaches the receiver one round trip sooner), and the receive windows
/// `windows`. The controller is the caller's (the profile's is [`satellite_cc`]).
pub fn apply_satellite_transport(
    transport: &mut TransportConfig,
    windows: ReceiveWindows,
) -> &mut TransportConfig {
    transport
        .ack_frequency_config(Some(satellite_ack_frequency()))
        .mtu_discovery_config(Some(Default::default()));
    #[cfg(feature = "patched-quinn")]
    transport.pto_probe_stream_data(true);
    windows.apply(transport)
}

/// The profile's ACK_FREQUENCY request on patched quinn-proto: an ACK at least every
/// cwnd / [`SATELLITE_WINDOW_DIVISOR`] bytes and at most every
/// [`SATELLITE_PACKETS_PER_ACK`] packets, re-requested as the window changes.
#[cfg(feature = "patched-quinn")]
pub fn satellite_ack_frequency() -> AckFrequencyConfig {
    ack_frequency_config(
        SATELLITE_PACKETS_PER_ACK,
        SATELLITE_MAX_ACK_DELAY,
        REORDERING_THRESHOLD,
        Some(SATELLITE_WINDOW_DIVISOR),
    )
}

/// The profile's ACK_FREQUENCY request on stock quinn-proto: a fixed request, an ACK
/// every 8th packet (stock cannot follow the window, patch 2). A request above the first
/// flight after the handshake stalls that flight until the sender's probe timeout (the
/// delayed-ACK timer bug of quinn-proto 0.11.19, patch 1), and that flight is the initial
/// window, 10 packets at least, so 8 stays below it on every path. It wins back most of
/// what every-2nd-packet ACKs cost on a thin return link (picoquic's basic upload over
/// sat-250-3: 5.78 s, 8.18 s without a request, 5.19 s patched; BENCHMARKS.md, "Stock and
/// patched quinn-proto").
#[cfg(not(feature = "patched-quinn"))]
pub fn satellite_ack_frequency() -> AckFrequencyConfig {
    const STOCK_PACKETS_PER_ACK: u32 = 8;
    ack_frequency_config(
        STOCK_PACKETS_PER_ACK,
        SATELLITE_MAX_ACK_DELAY,
        REORDERING_THRESHOLD,
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields of `transport`'s Debug text that `parts` name, each with its value.
    fn assert_fields(transport: &TransportConfig, parts: &[&str]) {
        let debug = format!("{transport:?}");
        for part in parts {
            assert!(debug.contains(part), "{part} not in {debug}");
        }
    }

    #[cfg(feature = "patched-quinn")]
    #[test]
    fn the_quinn_call_sets_every_transport_part() {
        let mut transport = TransportConfig::default();
        apply_satellite(&mut transport);
        assert_fields(
            &transport,
            &[
                "stream_receive_window: 1250000,",
                "stream_receive_window_max: Some(268435456)",
                " receive_window: 4611686018427387903,",
                "mtu_discovery_config: Some(",
                "ack_frequency_config: Some(AckFrequencyConfig { ack_eliciting_threshold: 15,",
                "window_divisor: Some(8)",
                "pto_probe_stream_data: true",
            ],
        );
    }

    #[cfg(not(feature = "patched-quinn"))]
    #[test]
    fn the_quinn_call_on_stock_quinn_sets_fixed_windows_and_a_fixed_ack_frequency() {
        let mut transport = TransportConfig::default();
        apply_satellite(&mut transport);
        assert_fields(
            &transport,
            &[
                "stream_receive_window: 268435456,",
                " receive_window: 268435456,",
                "mtu_discovery_config: Some(",
                "ack_frequency_config: Some(AckFrequencyConfig { ack_eliciting_threshold: 7,",
                "pto_probe_stream_data: false",
            ],
        );
    }

    /// The one transport function takes each caller's receive windows and sets the rest
    /// of the profile alike: fixed windows (satquic's commands by default), and on
    /// patched quinn-proto an auto-tuned window from a start of the caller's.
    #[test]
    fn the_transport_half_takes_the_callers_receive_windows() {
        let mut fixed = TransportConfig::default();
        apply_satellite_transport(
            &mut fixed,
            ReceiveWindows::Fixed {
                stream: 4_000_000,
                connection: 9_000_000,
            },
        );
        assert_fields(
            &fixed,
            &[
                "stream_receive_window: 4000000,",
                "stream_receive_window_max: None",
                " receive_window: 9000000,",
                "mtu_discovery_config: Some(",
                "ack_frequency_config: Some(",
            ],
        );
        let mut quinn_user = TransportConfig::default();
        apply_satellite(&mut quinn_user);
        let mut same = TransportConfig::default();
        apply_satellite_transport(&mut same, ReceiveWindows::SATELLITE);
        same.congestion_controller_factory(Arc::new(satellite_cc()));
        assert_eq!(format!("{same:?}"), format!("{quinn_user:?}"));
        #[cfg(feature = "patched-quinn")]
        {
            let mut tuned = TransportConfig::default();
            apply_satellite_transport(
                &mut tuned,
                ReceiveWindows::AutoTune {
                    start: Some(1_000_000),
                    max: 8_000_000,
                    connection: Some(u64::MAX),
                },
            );
            assert_fields(
                &tuned,
                &[
                    "stream_receive_window: 1000000,",
                    "stream_receive_window_max: Some(8000000)",
                    " receive_window: 4611686018427387903,",
                    "pto_probe_stream_data: true",
                ],
            );
        }
    }

    #[test]
    fn the_profile_name_parses_to_its_controller() {
        let by_name: CongestionConfig = "Satellite".parse().unwrap();
        assert_eq!(by_name.to_string(), satellite_cc().to_string());
        assert_eq!(
            satellite_cc().to_string(),
            "cubic+search:draft+growth:x=3+floor:max-rtt=1000,iw=15360+jump:cap=1.5,bound,validate+burst:min=65536,time=10+loss-filter:startup-confirm=2,cr=validating+retreat+cr:jump-on-confirm,ss-cap=1"
        );
        assert_eq!(
            satellite_cc().growth_config(),
            crate::StartupGrowth::Factor(3.0)
        );
        assert_eq!(
            satellite_cc().jump_config(),
            Some(crate::BdpJump {
                cap: Some(1.5),
                bound: Some(crate::jump::BOUND_FRACTION),
                validate: Some(crate::jump::VALIDATE_RATIO),
                ..crate::BdpJump::default()
            })
        );
        assert_eq!(
            satellite_cc().floor_config(),
            Some(crate::RttWindowFloor {
                max_rtt: Duration::from_secs(1),
                initial_window: Some(crate::growth::PICOQUIC_INITIAL_WINDOW),
                ..crate::RttWindowFloor::default()
            })
        );
        let burst = satellite_cc().burst_config().unwrap();
        assert_eq!(burst.min, 65_536);
        assert_eq!(burst.max_time, Some(Duration::from_millis(10)));
    }

    #[test]
    fn parts_added_to_the_profile_join_or_replace_its_own() {
        assert!(satellite_cc().rollback_config().is_none());
        let added: CongestionConfig = "satellite+rollback".parse().unwrap();
        assert!(added.rollback_config().is_some());
        assert_eq!(
            added.to_string().replace("+rollback", ""),
            satellite_cc().to_string()
        );
        let rfc: CongestionConfig = "satellite+loss-filter:off".parse().unwrap();
        assert_eq!(
            satellite_cc()
                .loss_filter_config()
                .map(|f| (f.confirm, f.startup_confirm)),
            Some((
                crate::loss_filter::LOSS_FILTER_CONFIRM,
                SATELLITE_LOSS_CONFIRM
            ))
        );
        assert!(rfc.loss_filter_config().is_none(), "{rfc}");
        assert!(!rfc.to_string().contains("loss-filter"), "{rfc}");
        let jump: CongestionConfig = "Satellite+jump:cap=2,bound+cr:off".parse().unwrap();
        assert_eq!(jump.jump_config().unwrap().cap, Some(2.0));
        assert_eq!(jump.jump_config().unwrap().validate, None);
        assert!(jump.to_string().ends_with("+cr:off"), "{jump}");
        assert!(is_satellite(" satellite+retreat "));
        assert!(!is_satellite("satellites"));
        assert!(!is_satellite("satellites+retreat"));
        for bad in ["satellite+hystart++", "satellite+bbr3", "satellite+"] {
            let e = bad.parse::<CongestionConfig>().unwrap_err().to_string();
            assert!(e.contains("cannot be added"), "{bad}: {e}");
        }
        let fewer: CongestionConfig = "satellite-growth-loss-filter+jump:cap=2".parse().unwrap();
        assert_eq!(fewer.growth_config(), crate::growth::StartupGrowth::Double);
        assert!(fewer.loss_filter_config().is_none(), "{fewer}");
        assert_eq!(fewer.jump_config().unwrap().cap, Some(2.0));
        assert!(is_satellite("Satellite-retreat"));
        for (bad, says) in [
            ("satellite-search", "names no part"),
            ("satellite-retreat-retreat", "has no retreat part"),
            ("satellite-rollback", "has no rollback part"),
            ("satellite-", "names no part"),
            ("satellite-jumpy", "names no part"),
        ] {
            let e = bad.parse::<CongestionConfig>().unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let e = "satellite+jump:nonsense"
            .parse::<CongestionConfig>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("nonsense"), "{e}");
    }
}
