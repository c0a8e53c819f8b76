//! Packet protection without the cipher: the real TLS handshake, null packet keys.
//!
//! # What it is for
//!
//! A simulated 200 MB download encrypts and decrypts every one of its ~170,000 packets
//! with AES-128-GCM and masks every header with AES, only to undo it a moment later on
//! the other side of the modelled link. None of that work can reach the record: quinn-proto
//! decides from sizes, times and its seeded RNG, never from ciphertext values (the argument
//! of [`crate::tls`]). [`PacketCipher::Null`] skips it and keeps everything else real.
//!
//! # What stays and what changes
//!
//! The TLS 1.3 handshake is rustls's, unchanged: the same messages, sizes, session tickets,
//! 0-RTT and key schedule. Only the keys quinn-proto protects packets with are wrapped
//! ([`NullSession`] around quinn's rustls session):
//!
//! - **packet keys** ([`NullPacketKey`]) leave the payload as plaintext and write a tag of
//!   the real key's length (16 bytes for AES-128-GCM) that is a cheap checksum of the
//!   header, the payload, the packet number and which key it is (space, key generation,
//!   direction). A corrupted packet, or one opened with the wrong key (another space, the
//!   other key phase), still fails to open, as with an AEAD. The confidentiality and
//!   integrity limits are the real key's, so quinn-proto's key updates (its first one
//!   after a random 10-1000 packets, RFC 9001 Sec. 6) happen at the same packets;
//! - **header keys** ([`NullHeaderKey`]) apply no mask; the sample size is the real one,
//!   so the minimum packet sizes quinn-proto enforces for sampling are unchanged.
//!
//! So every datagram keeps its size and time, and the record is byte-identical to the
//! real-cipher record (`tests/null_cipher.rs` compares them on random loss, buffer
//! overflow with ACK frequency, an upload and a resumed run with 0-RTT; BENCHMARKS.md on
//! whole campaigns). This is a simulator option only: the packets are plaintext.
//! Retry integrity tags are not per packet and stay real.

use std::any::Any;
use std::sync::Arc;

use bytes::BytesMut;
use quinn_proto::crypto::{
    self, CryptoError, ExportKeyingMaterialError, HeaderKey, KeyPair, Keys, PacketKey,
    UnsupportedVersion,
};
use quinn_proto::transport_parameters::TransportParameters;
use quinn_proto::{ConnectError, ConnectionId, Side, TransportError};

/// How simulated packets are protected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum PacketCipher {
    /// The negotiated TLS suite's AEAD and header protection (AES-128-GCM), as on a real
    /// connection.
    #[default]
    Tls,
    /// The TLS handshake as always, but packet and header keys that copy the plaintext and
    /// write a checksum tag of the same length (this module). Records are identical to
    /// [`PacketCipher::Tls`]'s; the run is faster.
    Null,
}

impl PacketCipher {
    /// The name used on the command line and in files (`tls`, `null`).
    pub fn name(self) -> &'static str {
        match self {
            PacketCipher::Tls => "tls",
            PacketCipher::Null => "null",
        }
    }
}

impl std::str::FromStr for PacketCipher {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "tls" => Ok(PacketCipher::Tls),
            "null" => Ok(PacketCipher::Null),
            other => Err(format!(
                "unknown packet cipher '{other}' (expected tls or null)"
            )),
        }
    }
}

impl std::fmt::Display for PacketCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which key protects a packet, mixed into the tag so that a packet opened with another
/// key fails as it would under an AEAD: the key's space and generation (`Initial`,
/// `ZeroRtt`, `Handshake`, then 1-RTT generation 0, 1, ...) and its direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KeyLabel(u64);

/// Key spaces in the order a connection installs them; 1-RTT key generation `g` is
/// `ONE_RTT + g`.
const INITIAL: u64 = 0;
const ZERO_RTT: u64 = 1;
const HANDSHAKE: u64 = 2;
const ONE_RTT: u64 = 3;

impl KeyLabel {
    /// The label of the key of `space` written by `writer`.
    fn new(space: u64, writer: Side) -> Self {
        let direction = match writer {
            Side::Client => 0,
            Side::Server => 1,
        };
        KeyLabel(space << 1 | direction)
    }

    /// The pair (local, remote) of keys of `space` as seen by `side`.
    fn pair(space: u64, side: Side) -> KeyPair<KeyLabel> {
        let other = match side {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        };
        KeyPair {
            local: KeyLabel::new(space, side),
            remote: KeyLabel::new(space, other),
        }
    }
}

/// Wraps real keys: their sizes and limits are kept, their cipher work is not done.
fn null_keys(real: Keys, labels: KeyPair<KeyLabel>) -> Keys {
    Keys {
        header: KeyPair {
            local: Box::new(NullHeaderKey::new(&*real.header.local)),
            remote: Box::new(NullHeaderKey::new(&*real.header.remote)),
        },
        packet: KeyPair {
            local: Box::new(NullPacketKey::new(real.packet.local, labels.local)),
            remote: Box::new(NullPacketKey::new(real.packet.remote, labels.remote)),
        },
    }
}

/// A header key that applies no mask (the header stays as written).
pub struct NullHeaderKey {
    /// The real key's sample size in bytes (16 for AES).
    sample_size: usize,
}

impl NullHeaderKey {
    fn new(real: &dyn HeaderKey) -> Self {
        NullHeaderKey {
            sample_size: real.sample_size(),
        }
    }
}

impl HeaderKey for NullHeaderKey {
    fn decrypt(&self, _pn_offset: usize, _packet: &mut [u8]) {}

    fn encrypt(&self, _pn_offset: usize, _packet: &mut [u8]) {}

    fn sample_size(&self) -> usize {
        self.sample_size
    }
}

/// A packet key that leaves the payload in plaintext and appends a checksum tag of the
/// real key's length. The real key is kept only for its limits.
pub struct NullPacketKey {
    real: Box<dyn PacketKey>,
    label: KeyLabel,
    /// The real key's tag length in bytes (16 for AES-GCM).
    tag_len: usize,
}

impl NullPacketKey {
    fn new(real: Box<dyn PacketKey>, label: KeyLabel) -> Self {
        let tag_len = real.tag_len();
        NullPacketKey {
            real,
            label,
            tag_len,
        }
    }

    /// The tag: [`checksum`] of the header and the payload, seeded with the packet
    /// number and the key label, repeated to the tag length.
    fn tag(&self, packet: u64, header: &[u8], payload: &[u8], out: &mut [u8]) {
        let seed = packet.wrapping_mul(CHECKSUM_MIX) ^ self.label.0;
        let sum = checksum(checksum(seed, header), payload);
        let words = [sum.to_le_bytes(), (!sum).rotate_left(29).to_le_bytes()];
        for (byte, value) in out.iter_mut().zip(words.as_flattened().iter().cycle()) {
            *byte = *value;
        }
    }
}

impl PacketKey for NullPacketKey {
    fn encrypt(&self, packet: u64, buf: &mut [u8], header_len: usize) {
        let (header, payload_tag) = buf.split_at_mut(header_len);
        let body = payload_tag.len() - self.tag_len;
        let (payload, tag) = payload_tag.split_at_mut(body);
        self.tag(packet, header, payload, tag);
    }

    fn decrypt(
        &self,
        packet: u64,
        header: &[u8],
        payload: &mut BytesMut,
    ) -> Result<(), CryptoError> {
        let body = payload.len().checked_sub(self.tag_len).ok_or(CryptoError)?;
        let mut expected = [0u8; MAX_TAG_LEN];
        let expected = expected.get_mut(..self.tag_len).ok_or(CryptoError)?;
        self.tag(packet, header, &payload[..body], expected);
        if expected != &payload[body..] {
            return Err(CryptoError);
        }
        payload.truncate(body);
        Ok(())
    }

    fn tag_len(&self) -> usize {
        self.tag_len
    }

    fn confidentiality_limit(&self) -> u64 {
        self.real.confidentiality_limit()
    }

    fn integrity_limit(&self) -> u64 {
        self.real.integrity_limit()
    }
}

/// The longest AEAD tag a QUIC packet key has, in bytes (AES-GCM and ChaCha20-Poly1305:
/// 16).
const MAX_TAG_LEN: usize = 32;

/// An odd 64-bit constant (the golden ratio's) that spreads the packet number over the
/// checksum's seed.
const CHECKSUM_MIX: u64 = 0x9E37_79B9_7F4A_7C15;

/// Bytes the checksum takes per step: one 64-bit word for each of its lanes.
const CHECKSUM_BLOCK: usize = 8 * CHECKSUM_LANES;
/// Independent sums, so the compiler can add several words at once (SIMD).
const CHECKSUM_LANES: usize = 4;

/// A checksum of `data` continuing from `seed`: four lanes of wrapping sums of
/// little-endian 64-bit words (the tail zero-padded), folded with the length by
/// multiply-rotate steps. Any change of one word, and any change of length, changes it.
/// Not cryptographic: it only has to notice what an AEAD would notice in a simulation
/// (nothing corrupts packets there), at a fraction of AES-GCM's cost.
fn checksum(seed: u64, data: &[u8]) -> u64 {
    let mut lanes = [seed; CHECKSUM_LANES];
    let mut add = |block: &[u8]| {
        for (lane, word) in lanes.iter_mut().zip(block.chunks_exact(8)) {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(word);
            *lane = lane.wrapping_add(u64::from_le_bytes(bytes));
        }
    };
    let mut blocks = data.chunks_exact(CHECKSUM_BLOCK);
    for block in &mut blocks {
        add(block);
    }
    let mut tail = [0u8; CHECKSUM_BLOCK];
    tail[..blocks.remainder().len()].copy_from_slice(blocks.remainder());
    add(&tail);
    lanes.iter().fold(data.len() as u64, |acc, lane| {
        (acc ^ lane).wrapping_mul(CHECKSUM_MIX).rotate_left(31)
    })
}

/// quinn's rustls session with null packet keys: the handshake, its messages and its key
/// schedule are rustls's; the keys handed to quinn are [`null_keys`].
pub struct NullSession {
    inner: Box<dyn crypto::Session>,
    side: Side,
    /// Key changes `write_handshake` has reported: the first is Handshake, the second 1-RTT.
    handshake_key_changes: u64,
    /// 1-RTT key generations handed out so far (generation 0 comes from `write_handshake`).
    one_rtt_generations: u64,
}

impl NullSession {
    fn new(inner: Box<dyn crypto::Session>, side: Side) -> Self {
        NullSession {
            inner,
            side,
            handshake_key_changes: 0,
            one_rtt_generations: 1,
        }
    }
}

impl crypto::Session for NullSession {
    fn initial_keys(&self, dst_cid: &ConnectionId, side: Side) -> Keys {
        null_keys(
            self.inner.initial_keys(dst_cid, side),
            KeyLabel::pair(INITIAL, side),
        )
    }

    fn handshake_data(&self) -> Option<Box<dyn Any>> {
        self.inner.handshake_data()
    }

    fn peer_identity(&self) -> Option<Box<dyn Any>> {
        self.inner.peer_identity()
    }

    fn early_crypto(&self) -> Option<(Box<dyn HeaderKey>, Box<dyn PacketKey>)> {
        let (header, packet) = self.inner.early_crypto()?;
        // 0-RTT keys exist in one direction only: the client writes, the server reads.
        let label = KeyLabel::new(ZERO_RTT, Side::Client);
        Some((
            Box::new(NullHeaderKey::new(&*header)),
            Box::new(NullPacketKey::new(packet, label)),
        ))
    }

    fn early_data_accepted(&self) -> Option<bool> {
        self.inner.early_data_accepted()
    }

    fn is_handshaking(&self) -> bool {
        self.inner.is_handshaking()
    }

    fn read_handshake(&mut self, buf: &[u8]) -> Result<bool, TransportError> {
        self.inner.read_handshake(buf)
    }

    fn transport_parameters(&self) -> Result<Option<TransportParameters>, TransportError> {
        self.inner.transport_parameters()
    }

    fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<Keys> {
        let keys = self.inner.write_handshake(buf)?;
        let space = if self.handshake_key_changes == 0 {
            HANDSHAKE
        } else {
            ONE_RTT
        };
        self.handshake_key_changes += 1;
        Some(null_keys(keys, KeyLabel::pair(space, self.side)))
    }

    fn next_1rtt_keys(&mut self) -> Option<KeyPair<Box<dyn PacketKey>>> {
        let keys = self.inner.next_1rtt_keys()?;
        let labels = KeyLabel::pair(ONE_RTT + self.one_rtt_generations, self.side);
        self.one_rtt_generations += 1;
        Some(KeyPair {
            local: Box::new(NullPacketKey::new(keys.local, labels.local)),
            remote: Box::new(NullPacketKey::new(keys.remote, labels.remote)),
        })
    }

    fn is_valid_retry(&self, orig_dst_cid: &ConnectionId, header: &[u8], payload: &[u8]) -> bool {
        self.inner.is_valid_retry(orig_dst_cid, header, payload)
    }

    fn export_keying_material(
        &self,
        output: &mut [u8],
        label: &[u8],
        context: &[u8],
    ) -> Result<(), ExportKeyingMaterialError> {
        self.inner.export_keying_material(output, label, context)
    }
}

/// A client crypto configuration whose sessions are [`NullSession`]s.
pub struct NullClientConfig(pub Arc<dyn crypto::ClientConfig>);

impl crypto::ClientConfig for NullClientConfig {
    fn start_session(
        self: Arc<Self>,
        version: u32,
        server_name: &str,
        params: &TransportParameters,
    ) -> Result<Box<dyn crypto::Session>, ConnectError> {
        let inner = self.0.clone().start_session(version, server_name, params)?;
        Ok(Box::new(NullSession::new(inner, Side::Client)))
    }
}

/// A server crypto configuration whose sessions are [`NullSession`]s and whose Initial
/// keys (for the first packet of a connection) are null keys too.
pub struct NullServerConfig(pub Arc<dyn crypto::ServerConfig>);

impl crypto::ServerConfig for NullServerConfig {
    fn initial_keys(
        &self,
        version: u32,
        dst_cid: &ConnectionId,
    ) -> Result<Keys, UnsupportedVersion> {
        Ok(null_keys(
            self.0.initial_keys(version, dst_cid)?,
            KeyLabel::pair(INITIAL, Side::Server),
        ))
    }

    fn retry_tag(&self, version: u32, orig_dst_cid: &ConnectionId, packet: &[u8]) -> [u8; 16] {
        self.0.retry_tag(version, orig_dst_cid, packet)
    }

    fn start_session(
        self: Arc<Self>,
        version: u32,
        params: &TransportParameters,
    ) -> Box<dyn crypto::Session> {
        let inner = self.0.clone().start_session(version, params);
        Box::new(NullSession::new(inner, Side::Server))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Initial keys of `side` for a fixed CID: real AES-128-GCM keys, wrapped.
    fn keys(side: Side) -> Keys {
        let server = crate::tls::server_crypto(crate::tls::Sessions::FirstOnly);
        let cid = ConnectionId::new(&[7; 8]);
        let real = crypto::ServerConfig::initial_keys(&*server, 1, &cid).unwrap();
        null_keys(real, KeyLabel::pair(INITIAL, side))
    }

    const HEADER_LEN: usize = 20;
    const PAYLOAD_LEN: usize = 1000;

    fn sealed(key: &dyn PacketKey, packet: u64) -> Vec<u8> {
        let mut buf: Vec<u8> = (0..HEADER_LEN + PAYLOAD_LEN + key.tag_len())
            .map(|i| i as u8)
            .collect();
        key.encrypt(packet, &mut buf, HEADER_LEN);
        buf
    }

    fn open(key: &dyn PacketKey, packet: u64, buf: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let (header, payload) = buf.split_at(HEADER_LEN);
        let mut payload = BytesMut::from(payload);
        key.decrypt(packet, header, &mut payload)?;
        Ok(payload.to_vec())
    }

    #[test]
    fn a_sealed_packet_opens_with_the_peers_key_and_keeps_its_size() {
        let (client, server) = (keys(Side::Client), keys(Side::Server));
        let buf = sealed(&*client.packet.local, 42);
        assert_eq!(client.packet.local.tag_len(), 16, "AES-GCM's tag length");
        let plain = open(&*server.packet.remote, 42, &buf).unwrap();
        assert_eq!(plain.len(), PAYLOAD_LEN);
        assert_eq!(&plain[..], &buf[HEADER_LEN..HEADER_LEN + PAYLOAD_LEN]);
    }

    #[test]
    fn corruption_a_wrong_packet_number_or_a_wrong_key_fail_to_open() {
        let (client, server) = (keys(Side::Client), keys(Side::Server));
        let buf = sealed(&*client.packet.local, 42);
        for at in [0, HEADER_LEN + 3, buf.len() - 1] {
            let mut bad = buf.clone();
            bad[at] ^= 0x10;
            assert!(open(&*server.packet.remote, 42, &bad).is_err(), "byte {at}");
        }
        assert!(open(&*server.packet.remote, 43, &buf).is_err());
        // The server's own sending key is the other direction's.
        assert!(open(&*server.packet.local, 42, &buf).is_err());
    }

    #[test]
    fn limits_and_sample_size_are_the_real_keys() {
        let server = crate::tls::server_crypto(crate::tls::Sessions::FirstOnly);
        let cid = ConnectionId::new(&[7; 8]);
        let real = crypto::ServerConfig::initial_keys(&*server, 1, &cid).unwrap();
        let null = keys(Side::Server);
        assert_eq!(
            null.packet.local.confidentiality_limit(),
            real.packet.local.confidentiality_limit()
        );
        assert_eq!(
            null.packet.local.integrity_limit(),
            real.packet.local.integrity_limit()
        );
        assert_eq!(
            null.header.local.sample_size(),
            real.header.local.sample_size()
        );
    }

    #[test]
    fn packet_cipher_names_round_trip() {
        for c in [PacketCipher::Tls, PacketCipher::Null] {
            assert_eq!(c.name().parse::<PacketCipher>().unwrap(), c);
        }
        assert!("aes".parse::<PacketCipher>().is_err());
    }
}
