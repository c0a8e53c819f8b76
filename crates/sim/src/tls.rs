//! Deterministic QUIC endpoint configuration: real rustls TLS 1.3, fixed keys, seeded RNGs.
//!
//! # Why the record cannot depend on the randomness that remains
//!
//! The simulator must produce byte-identical records for the same scenario and seed.
//! Everything random that *we* hand to quinn-proto is seeded from the run seed:
//!
//! - each endpoint's RNG (`EndpointConfig::rng_seed`), which seeds every connection's RNG
//!   (packet-number skipping, QUIC bit greasing, stateless-reset padding);
//! - connection IDs ([`SeededCidGenerator`]) and the client's initial destination CID;
//! - the stateless-reset key ([`FixedHmacKey`]) and the handshake-token key
//!   ([`FixedTokenKey`]), fixed constants instead of fresh random keys;
//! - the server's clock for token timestamps ([`FixedClock`]), a constant.
//!
//! What remains random is inside rustls and *ring*: the TLS client/server randoms, the
//! X25519 ephemeral key shares, the ECDH shared secret and therefore every traffic key,
//! session-ticket identifiers and the nonces inside address-validation tokens. These
//! change the *bytes* of every packet from run to run, but never a packet's *size* or
//! *timing*:
//!
//! - every field they feed has a fixed length (32-byte randoms, 32-byte X25519 shares,
//!   16-byte AEAD tags, fixed-size tickets and tokens);
//! - the certificate is a fixed Ed25519 certificate (built from a constant key; rcgen's
//!   serial number is a hash of the public key, validity dates are constants), and
//!   Ed25519 signatures are always 64 bytes (an ECDSA signature's DER length varies with
//!   the random nonce, which is why ECDSA is not used);
//! - the link model decides drops and delays from its own seeded RNG and the packet size,
//!   never from the packet's contents; quinn-proto's decisions depend on sizes, times and
//!   its seeded RNG, never on ciphertext values.
//!
//! So the sequence of (time, direction, size) of all datagrams — and with it every value
//! in the record — is a function of the scenario and the seed alone. The test
//! `datagram_trace_is_identical_although_tls_keys_differ` checks exactly that: two runs
//! with the same seed have different TLS traffic keys but identical datagram traces.
//!
//! TLS reads no wall clock either: both ends run on a frozen TLS clock (`FixedTlsClock`),
//! which webpki's validity check (1975-4096) and the session tickets' ages use.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn_proto::crypto::{AeadKey, CryptoError, HandshakeTokenKey, HmacKey};
use quinn_proto::{ConnectionId, ConnectionIdGenerator, TimeSource};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rustls::crypto::tls13::{Hkdf, HkdfExpander, OkmBlock};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The server name the client asks for and the certificate carries.
pub const SERVER_NAME: &str = "satquic.sim";

/// ALPN protocol both sides speak (a tiny HTTP/0.9-like download protocol).
pub const ALPN: &[u8] = b"satquic-sim";

/// Length of the connection IDs we issue, in bytes (quinn's default).
const CID_LEN: usize = 8;

/// The longest connection ID QUIC v1 allows (RFC 9000 Sec. 17.2), in bytes.
pub const MAX_CID_LEN: usize = 20;

/// The fixed Ed25519 private key (RFC 8410 PKCS#8 v1: a 16-byte prefix + a 32-byte seed).
/// A simulator needs no secret; it needs the same certificate in every run.
const ED25519_PKCS8_V1: [u8; 48] = {
    let prefix = [
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    let mut der = [0u8; 48];
    let mut i = 0;
    while i < 16 {
        der[i] = prefix[i];
        i += 1;
    }
    while i < 48 {
        // An arbitrary constant seed: 0x5a, 0x5b, ...
        der[i] = 0x5a + (i as u8 - 16);
        i += 1;
    }
    der
};

/// The certificate and key shared by every run: built once per process (it is a pure
/// function of constants, so caching it cannot change any run).
struct Identity {
    cert: CertificateDer<'static>,
    key: PrivatePkcs8KeyDer<'static>,
}

fn identity() -> &'static Identity {
    static IDENTITY: OnceLock<Identity> = OnceLock::new();
    IDENTITY.get_or_init(|| {
        let key_der = PrivatePkcs8KeyDer::from(ED25519_PKCS8_V1.to_vec());
        let key_pair = rcgen::KeyPair::from_pkcs8_der_and_sign_algo(&key_der, &rcgen::PKCS_ED25519)
            .expect("the constant Ed25519 key is valid");
        let params = rcgen::CertificateParams::new(vec![SERVER_NAME.to_string()])
            .expect("the constant server name is a valid DNS name");
        let cert = params
            .self_signed(&key_pair)
            .expect("self-signing with a valid key works");
        Identity {
            cert: cert.der().clone(),
            key: key_der,
        }
    })
}

/// The *ring* HKDF-SHA256 provider of rustls, used for the fixed reset and token keys.
fn hkdf() -> &'static dyn Hkdf {
    match rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256 {
        rustls::SupportedCipherSuite::Tls13(suite) => suite.hkdf_provider,
        #[allow(unreachable_patterns)]
        _ => unreachable!("TLS13_AES_128_GCM_SHA256 is a TLS 1.3 suite"),
    }
}

/// rustls configuration shared by client and server: *ring*, TLS 1.3 only, with
/// TLS_AES_128_GCM_SHA256 preferred. *ring*'s default order puts AES-256-GCM first;
/// AES-128-GCM is the suite QUIC's Initial packets already use (RFC 9001 Sec. 5) and the
/// one most QUIC clients offer first, and its 10 AES rounds instead of 14 make every
/// simulated packet cheaper. The suite reaches the record only through sizes: both have
/// 16-byte tags, but SHA-256 makes the handshake's Finished messages 16 bytes shorter.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    let mut provider = rustls::crypto::ring::default_provider();
    provider
        .cipher_suites
        .sort_by_key(|s| s.suite() != rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
    Arc::new(provider)
}

/// Whether a run's endpoints keep TLS sessions for a resumed connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sessions {
    /// Every connection is a first connection: the client keeps no session tickets (the
    /// seeds' downloads). The server still issues tickets, as rustls does by default.
    FirstOnly,
    /// The client keeps the server's session tickets and offers 0-RTT with them; the
    /// server accepts 0-RTT (QUIC's `max_early_data_size` of 2^32 - 1, RFC 9001 Sec. 4.6.1).
    Resumable,
}

/// The TLS clock of every simulated endpoint, frozen at [`FixedClock`]'s time: ticket
/// ages (RFC 8446 Sec. 4.6.1) and certificate validity then never depend on when or how
/// fast the simulation ran. (Ticket ages are always zero: the resumed connection's TLS
/// sees no gap.)
#[derive(Debug)]
struct FixedTlsClock;

impl rustls::time_provider::TimeProvider for FixedTlsClock {
    fn current_time(&self) -> Option<rustls::pki_types::UnixTime> {
        Some(rustls::pki_types::UnixTime::since_unix_epoch(
            FixedClock
                .now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .ok()?,
        ))
    }
}

/// The server's QUIC crypto configuration: the fixed certificate, TLS 1.3, our ALPN.
pub fn server_crypto(sessions: Sessions) -> Arc<QuicServerConfig> {
    let id = identity();
    let mut tls = rustls::ServerConfig::builder_with_details(provider(), Arc::new(FixedTlsClock))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("ring supports TLS 1.3")
        .with_no_client_auth()
        .with_single_cert(
            vec![id.cert.clone()],
            PrivateKeyDer::Pkcs8(id.key.clone_key()),
        )
        .expect("the fixed certificate matches its key");
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.max_early_data_size = match sessions {
        Sessions::FirstOnly => 0,
        Sessions::Resumable => u32::MAX,
    };
    Arc::new(QuicServerConfig::try_from(tls).expect("ring offers TLS13_AES_128_GCM_SHA256"))
}

/// The client's QUIC crypto configuration: trusts exactly the fixed certificate. With
/// [`Sessions::FirstOnly`] resumption is off so that every flow performs a full
/// first-connection handshake, as the seeds' downloads did.
pub fn client_crypto(sessions: Sessions) -> Arc<QuicClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(identity().cert.clone())
        .expect("the fixed certificate is well-formed");
    let mut tls = rustls::ClientConfig::builder_with_details(provider(), Arc::new(FixedTlsClock))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("ring supports TLS 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    match sessions {
        Sessions::FirstOnly => tls.resumption = rustls::client::Resumption::disabled(),
        Sessions::Resumable => tls.enable_early_data = true,
    }
    Arc::new(QuicClientConfig::try_from(tls).expect("ring offers TLS13_AES_128_GCM_SHA256"))
}

/// A fixed stateless-reset key: HMAC-SHA256 under a constant key.
pub struct FixedHmacKey {
    key: OkmBlock,
}

impl FixedHmacKey {
    pub fn new() -> Self {
        Self {
            key: OkmBlock::new(b"satquic-sim stateless reset key, fixed for determinism"),
        }
    }
}

impl Default for FixedHmacKey {
    fn default() -> Self {
        Self::new()
    }
}

impl HmacKey for FixedHmacKey {
    fn sign(&self, data: &[u8], signature_out: &mut [u8]) {
        let tag = hkdf().hmac_sign(&self.key, data);
        signature_out.copy_from_slice(&tag.as_ref()[..signature_out.len()]);
    }

    fn signature_len(&self) -> usize {
        32
    }

    fn verify(&self, data: &[u8], signature: &[u8]) -> Result<(), CryptoError> {
        let tag = hkdf().hmac_sign(&self.key, data);
        constant_time_eq(tag.as_ref(), signature)
            .then_some(())
            .ok_or(CryptoError)
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A fixed handshake-token master key. Per token, HKDF-Expand derives a one-time key
/// from the token's random bytes (as quinn's own ring-based key does); sealing is
/// encrypt-then-MAC with an HKDF keystream and a 16-byte HMAC-SHA256 tag.
pub struct FixedTokenKey {
    master: Box<dyn HkdfExpander>,
}

impl FixedTokenKey {
    pub fn new() -> Self {
        Self {
            master: hkdf().extract_from_secret(None, b"satquic-sim handshake token key"),
        }
    }
}

impl Default for FixedTokenKey {
    fn default() -> Self {
        Self::new()
    }
}

impl HandshakeTokenKey for FixedTokenKey {
    fn aead_from_hkdf(&self, random_bytes: &[u8]) -> Box<dyn AeadKey> {
        let stream = self.master.expand_block(&[random_bytes, b"stream"]);
        let mac = self.master.expand_block(&[random_bytes, b"mac"]);
        Box::new(TokenAead {
            stream: hkdf().expander_for_okm(&stream),
            mac,
        })
    }
}

/// Size of the authentication tag appended to sealed tokens, in bytes.
const TOKEN_TAG_LEN: usize = 16;

struct TokenAead {
    stream: Box<dyn HkdfExpander>,
    mac: OkmBlock,
}

impl TokenAead {
    fn xor_keystream(&self, data: &mut [u8]) -> Result<(), CryptoError> {
        let mut keystream = vec![0u8; data.len()];
        self.stream
            .expand_slice(&[b"keystream"], &mut keystream)
            .map_err(|_| CryptoError)?;
        data.iter_mut().zip(keystream).for_each(|(d, k)| *d ^= k);
        Ok(())
    }

    fn tag(&self, ciphertext: &[u8], additional_data: &[u8]) -> [u8; TOKEN_TAG_LEN] {
        let mut message = Vec::with_capacity(8 + additional_data.len() + ciphertext.len());
        message.extend_from_slice(&(additional_data.len() as u64).to_be_bytes());
        message.extend_from_slice(additional_data);
        message.extend_from_slice(ciphertext);
        let full = hkdf().hmac_sign(&self.mac, &message);
        let mut tag = [0u8; TOKEN_TAG_LEN];
        tag.copy_from_slice(&full.as_ref()[..TOKEN_TAG_LEN]);
        tag
    }
}

impl AeadKey for TokenAead {
    fn seal(&self, data: &mut Vec<u8>, additional_data: &[u8]) -> Result<(), CryptoError> {
        self.xor_keystream(data)?;
        let tag = self.tag(data, additional_data);
        data.extend_from_slice(&tag);
        Ok(())
    }

    fn open<'a>(
        &self,
        data: &'a mut [u8],
        additional_data: &[u8],
    ) -> Result<&'a mut [u8], CryptoError> {
        let body_len = data.len().checked_sub(TOKEN_TAG_LEN).ok_or(CryptoError)?;
        let (body, tag) = data.split_at_mut(body_len);
        if !constant_time_eq(&self.tag(body, additional_data), tag) {
            return Err(CryptoError);
        }
        self.xor_keystream(body)?;
        Ok(body)
    }
}

/// Connection IDs drawn from a seeded RNG (quinn's default draws from the thread RNG).
pub struct SeededCidGenerator {
    rng: ChaCha8Rng,
}

impl SeededCidGenerator {
    pub fn new(seed: u64) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// A fresh CID of `len` bytes.
    pub fn next_cid(&mut self, len: usize) -> ConnectionId {
        let mut bytes = [0u8; MAX_CID_LEN];
        self.rng.fill_bytes(&mut bytes[..len]);
        ConnectionId::new(&bytes[..len])
    }
}

impl ConnectionIdGenerator for SeededCidGenerator {
    fn generate_cid(&mut self) -> ConnectionId {
        self.next_cid(CID_LEN)
    }

    fn cid_len(&self) -> usize {
        CID_LEN
    }

    fn cid_lifetime(&self) -> Option<Duration> {
        None
    }
}

/// The server's wall clock for token timestamps, frozen: tokens minted in a simulation
/// must not depend on when the simulation ran.
pub struct FixedClock;

impl TimeSource for FixedClock {
    fn now(&self) -> SystemTime {
        // 2024-01-01T00:00:00Z, an arbitrary constant.
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_704_067_200)
    }
}

/// Derives independent sub-seeds from a run seed (SplitMix64 over seed and a domain tag),
/// so that adding a new consumer of randomness never shifts the streams of the others.
pub fn sub_seed(seed: u64, domain: u64) -> u64 {
    let mut z = seed ^ domain.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A 32-byte RNG seed for quinn-proto, expanded from a 64-bit sub-seed.
pub fn rng_seed_bytes(seed: u64) -> [u8; 32] {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = [0u8; 32];
    rng.fill_bytes(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_is_the_same_every_time() {
        let a = identity().cert.clone();
        // Rebuild from scratch (not from the cache) and compare bytes.
        let key_der = PrivatePkcs8KeyDer::from(ED25519_PKCS8_V1.to_vec());
        let key_pair =
            rcgen::KeyPair::from_pkcs8_der_and_sign_algo(&key_der, &rcgen::PKCS_ED25519).unwrap();
        let b = rcgen::CertificateParams::new(vec![SERVER_NAME.to_string()])
            .unwrap()
            .self_signed(&key_pair)
            .unwrap();
        assert_eq!(a.as_ref(), b.der().as_ref());
    }

    #[test]
    fn token_key_round_trips_and_rejects_tampering() {
        let key = FixedTokenKey::new();
        let aead = key.aead_from_hkdf(b"nonce-bytes");
        let mut data = b"address validation token".to_vec();
        aead.seal(&mut data, b"ad").unwrap();
        let mut tampered = data.clone();
        tampered[0] ^= 1;
        assert!(aead.open(&mut tampered, b"ad").is_err());
        assert!(aead.open(&mut data.clone(), b"other").is_err());
        let opened = aead.open(&mut data, b"ad").unwrap();
        assert_eq!(opened, b"address validation token");
    }

    #[test]
    fn hmac_key_verifies_its_own_signatures() {
        let key = FixedHmacKey::new();
        let mut sig = [0u8; 32];
        key.sign(b"cid", &mut sig);
        assert!(key.verify(b"cid", &sig).is_ok());
        assert!(key.verify(b"cie", &sig).is_err());
    }

    #[test]
    fn sub_seeds_differ_by_domain_and_seed() {
        assert_ne!(sub_seed(1, 1), sub_seed(1, 2));
        assert_ne!(sub_seed(1, 1), sub_seed(2, 1));
        assert_eq!(sub_seed(7, 3), sub_seed(7, 3));
    }
}
