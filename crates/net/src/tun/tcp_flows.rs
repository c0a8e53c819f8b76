//! The TCP connections the link carries down (server namespace -> client namespace), as
//! it delivers them: how many distinct payload bytes each has delivered and when, so that
//! a kernel TCP download is timed by what arrived rather than by what its sender wrote.
//!
//! Distinct bytes are counted by sequence number from each connection's first payload
//! packet (a retransmission adds nothing); only IPv4 is parsed, as the namespaces' pair
//! is IPv4.

use std::collections::HashMap;
use std::time::Duration;

use satquic_run::record::push_mb_times;

/// What one TCP connection sent down the link (server namespace -> client namespace), as
/// the link delivered it: for telling when a kernel TCP transfer arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpFlowSeen {
    /// Source and destination port (the sender's, the receiver's).
    pub ports: (u16, u16),
    /// TCP payload bytes delivered, retransmissions included.
    pub payload_bytes: u64,
    /// Distinct payload bytes delivered: the highest sequence offset reached from the
    /// first payload packet's.
    pub delivered_bytes: u64,
    /// When `delivered_bytes` reached [`TunOptions::tcp_target_bytes`](super::TunOptions::tcp_target_bytes), link clock.
    pub target_reached_at: Option<Duration>,
    /// When the link delivered the first and the last packet carrying payload, on the
    /// link's clock.
    pub first_payload_at: Duration,
    pub last_payload_at: Duration,
    /// `mb_times[k]`: when `delivered_bytes` passed k+1 MB (10^6 bytes), link clock.
    pub mb_times: Vec<Duration>,
}

/// The connections seen going down, by (source, destination) port: each one's first
/// sequence number and what it delivered.
pub(super) struct TcpFlows {
    flows: HashMap<(u16, u16), (u32, TcpFlowSeen)>,
    /// [`TunOptions::tcp_target_bytes`](super::TunOptions::tcp_target_bytes)(super::TunOptions::tcp_target_bytes).
    target_bytes: Option<u64>,
}

impl TcpFlows {
    pub(super) fn new(target_bytes: Option<u64>) -> Self {
        TcpFlows {
            flows: HashMap::new(),
            target_bytes,
        }
    }

    /// A packet the link delivered down at `sent_at` (link clock); returns `sent_at` when
    /// it made its connection reach the target for the first time.
    pub(super) fn observe(&mut self, data: &[u8], sent_at: Duration) -> Option<Duration> {
        let (ports, seq, payload) = tcp_payload(data).filter(|p| p.2 > 0)?;
        let (base, f) = self.flows.entry(ports).or_insert((
            seq,
            TcpFlowSeen {
                ports,
                payload_bytes: 0,
                delivered_bytes: 0,
                target_reached_at: None,
                first_payload_at: sent_at,
                last_payload_at: sent_at,
                mb_times: Vec::new(),
            },
        ));
        f.payload_bytes += payload as u64;
        f.last_payload_at = sent_at;
        // Offsets within 2 GiB after the base: a retransmission of an earlier
        // segment wraps to a large number and is ignored.
        let offset = u64::from(seq.wrapping_sub(*base));
        if offset < 1 << 31 {
            f.delivered_bytes = f.delivered_bytes.max(offset + payload as u64);
            push_mb_times(&mut f.mb_times, f.delivered_bytes, sent_at);
        }
        if let Some(target) = self.target_bytes
            && f.target_reached_at.is_none()
            && f.delivered_bytes >= target
        {
            f.target_reached_at = Some(sent_at);
            return Some(sent_at);
        }
        None
    }

    /// What each connection delivered, by ports (the table is left empty).
    pub(super) fn take_seen(&mut self) -> HashMap<(u16, u16), TcpFlowSeen> {
        self.flows.drain().map(|(k, (_, f))| (k, f)).collect()
    }
}

/// The TCP source and destination ports, sequence number and payload length of an IPv4
/// TCP packet.
fn tcp_payload(packet: &[u8]) -> Option<((u16, u16), u32, usize)> {
    if packet.len() < 20 || packet[0] >> 4 != 4 || packet[9] != 6 {
        return None;
    }
    let ihl = usize::from(packet[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([packet[2], packet[3]])).min(packet.len());
    let tcp = packet.get(ihl..total)?;
    if tcp.len() < 20 {
        return None;
    }
    let data_offset = usize::from(tcp[12] >> 4) * 4;
    let ports = (
        u16::from_be_bytes([tcp[0], tcp[1]]),
        u16::from_be_bytes([tcp[2], tcp[3]]),
    );
    let seq = u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]);
    Some((ports, seq, tcp.len().saturating_sub(data_offset)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_payload_of_an_ipv4_segment() {
        // IPv4 (IHL 5), protocol 6, total 60: a 20-byte TCP header and 20 bytes of data.
        let mut p = vec![0u8; 60];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&60u16.to_be_bytes());
        p[9] = 6;
        p[20..22].copy_from_slice(&5201u16.to_be_bytes());
        p[22..24].copy_from_slice(&40000u16.to_be_bytes());
        p[32] = 5 << 4;
        p[24..28].copy_from_slice(&7u32.to_be_bytes());
        assert_eq!(tcp_payload(&p), Some(((5201, 40000), 7, 20)));
        p[9] = 17;
        assert_eq!(tcp_payload(&p), None);
        assert_eq!(tcp_payload(&p[..10]), None);
    }
}
