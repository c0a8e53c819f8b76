//! Which flow an IP packet belongs to, for the TUN link's per-flow books
//! ([`crate::relay::FlowLedger`]): an IPv4 TCP or UDP packet's protocol and the client
//! side's and server side's addresses, the same for both directions (down packets go from
//! the server side to the client side, up packets the other way).

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

/// A flow as the TUN link tells flows apart: protocol (6 TCP, 17 UDP), client address,
/// server address.
pub(super) type FlowKey = (u8, SocketAddr, SocketAddr);

/// The flow key of an IPv4 TCP or UDP packet going `down` (server to client) or up;
/// `None` for anything else (ICMP, fragments past the first, IPv6).
pub(super) fn flow_key(packet: &[u8], down: bool) -> Option<FlowKey> {
    if packet.len() < 20 || packet[0] >> 4 != 4 || !matches!(packet[9], 6 | 17) {
        return None;
    }
    let ihl = usize::from(packet[0] & 0x0f) * 4;
    let ports = packet.get(ihl..ihl + 4)?;
    let addr = |at: usize, port_at: usize| {
        let ip = Ipv4Addr::new(packet[at], packet[at + 1], packet[at + 2], packet[at + 3]);
        let port = u16::from_be_bytes([ports[port_at], ports[port_at + 1]]);
        SocketAddr::V4(SocketAddrV4::new(ip, port))
    };
    let (src, dst) = (addr(12, 0), addr(16, 2));
    Some(if down {
        (packet[9], dst, src)
    } else {
        (packet[9], src, dst)
    })
}

/// Flow ids in order of first appearance.
#[derive(Debug, Default)]
pub(super) struct FlowIds {
    ids: HashMap<FlowKey, u32>,
}

impl FlowIds {
    /// The id of `key`, and whether it is new.
    pub(super) fn id(&mut self, key: FlowKey) -> (u32, bool) {
        let next = self.ids.len() as u32;
        let mut new = false;
        let id = *self.ids.entry(key).or_insert_with(|| {
            new = true;
            next
        });
        (id, new)
    }

    /// The id of a known flow.
    pub(super) fn get(&self, key: &FlowKey) -> Option<u32> {
        self.ids.get(key).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 packet of protocol `proto` from 10.0.0.2:5000 to 10.0.0.1:443.
    fn packet(proto: u8) -> Vec<u8> {
        let mut p = vec![0u8; 28];
        p[0] = 0x45;
        p[9] = proto;
        p[12..16].copy_from_slice(&[10, 0, 0, 2]);
        p[16..20].copy_from_slice(&[10, 0, 0, 1]);
        p[20..22].copy_from_slice(&5000u16.to_be_bytes());
        p[22..24].copy_from_slice(&443u16.to_be_bytes());
        p
    }

    #[test]
    fn both_directions_of_a_flow_have_one_key() {
        let up = flow_key(&packet(6), false).unwrap();
        assert_eq!(up.1, "10.0.0.2:5000".parse().unwrap());
        assert_eq!(up.2, "10.0.0.1:443".parse().unwrap());
        // The same bytes seen going down: the sender is the server side.
        let down = flow_key(&packet(17), true).unwrap();
        assert_eq!((down.1, down.2), (up.2, up.1));
        assert_eq!(flow_key(&packet(1), true), None, "ICMP");
        assert_eq!(flow_key(&packet(6)[..22], true), None, "truncated");
        let mut ids = FlowIds::default();
        assert_eq!(ids.id(up), (0, true));
        assert_eq!(ids.id(up), (0, false));
        assert_eq!(ids.id(down).0, 1);
        assert_eq!(ids.get(&up), Some(0));
    }
}
