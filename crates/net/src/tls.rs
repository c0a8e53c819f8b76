//! TLS for the real-socket tools: the server's certificate (self-signed at start, or a
//! PEM pair), how the client checks it ([`Verify`]), ALPN identifiers, and
//! `SSLKEYLOGFILE` key logging for Wireshark.
//!
//! The command-line client verifies by default: the server's chain must lead to one of the
//! system's CA certificates ([`system_roots`], read from the CA bundle OpenSSL would use)
//! and name the server. A lab server with a fresh self-signed certificate passes only with
//! `--pin SHA256` (the fingerprint `satquic server` prints), `--ca FILE` when its
//! certificate was issued by a CA of your own, or `--insecure`, which checks nothing. A
//! refused certificate is reported with the fingerprint seen, so the next run can pin it.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use satquic_link::file::FileLimit;

use crate::NetError;

pub mod keylog;

/// satquic's own perf protocol (see [`crate::perf`]).
pub const ALPN_PERF: &[u8] = b"satquic-perf";
/// The QUIC interop runner's HTTP/0.9 (`GET /path\r\n`).
pub const ALPN_HQ: &[u8] = b"hq-interop";
/// HTTP/3.
pub const ALPN_H3: &[u8] = b"h3";

/// The ring crypto provider every satquic endpoint uses.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A certificate chain and its private key.
pub struct Identity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

impl Identity {
    /// A self-signed certificate for `localhost` and the given extra names.
    pub fn self_signed(extra_names: &[String]) -> Result<Self, NetError> {
        let mut names = vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
            "::1".into(),
        ];
        names.extend(extra_names.iter().cloned());
        let cert = rcgen::generate_simple_self_signed(names)
            .map_err(|e| NetError::Setup(format!("cannot generate a certificate: {e}")))?;
        Ok(Identity {
            chain: vec![cert.cert.der().clone()],
            key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der())),
        })
    }

    /// Reads a PEM certificate chain and a PEM private key.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Self, NetError> {
        let chain = certificates_in(cert).map_err(|e| {
            NetError::Usage(format!("cannot read certificate {}: {e}", cert.display()))
        })?;
        if chain.is_empty() {
            return Err(NetError::Usage(format!(
                "no certificate found in {}",
                cert.display()
            )));
        }
        let key = read_pem(key)
            .and_then(|pem| PrivateKeyDer::from_pem_slice(&pem).map_err(|e| e.to_string()))
            .map_err(|e| {
                NetError::Usage(format!("cannot read private key {}: {e}", key.display()))
            })?;
        Ok(Identity { chain, key })
    }

    /// SHA-256 of the leaf certificate, lowercase hex.
    pub fn fingerprint(&self) -> String {
        sha256_hex(self.chain[0].as_ref())
    }
}

/// SHA-256 of `data` as lowercase hex, computed with the TLS provider's hash.
pub fn sha256_hex(data: &[u8]) -> String {
    let suite = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256;
    let hash = suite
        .tls13()
        .expect("a TLS 1.3 suite")
        .common
        .hash_provider
        .hash(data);
    hex(hash.as_ref())
}

/// `bytes` in lower-case hex, two digits each.
fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(2 * bytes.len());
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Parses a `--pin` value: 64 hex digits, colons allowed (`AB:CD:...`).
pub fn parse_pin(text: &str) -> Result<String, String> {
    let hex: String = text
        .chars()
        .filter(|c| *c != ':')
        .collect::<String>()
        .to_ascii_lowercase();
    if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "invalid --pin '{text}': expected the certificate's SHA-256 as 64 hex digits"
        ));
    }
    Ok(hex)
}

/// The rustls server configuration for `alpns` (first match wins).
pub fn server_crypto(
    identity: &Identity,
    alpns: &[&[u8]],
) -> Result<rustls::ServerConfig, NetError> {
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| NetError::Setup(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(identity.chain.clone(), identity.key.clone_key())
        .map_err(|e| NetError::Usage(format!("certificate and key do not fit: {e}")))?;
    config.alpn_protocols = alpns.iter().map(|a| a.to_vec()).collect();
    // 0-RTT: a client resuming a session may send its request with its first flight
    // (QUIC's only allowed value, RFC 9001 Sec. 4.6.1). A replayed perf request repeats
    // a measurement; hq and h3 GETs are idempotent.
    config.max_early_data_size = u32::MAX;
    config.key_log = keylog::from_environment()?;
    Ok(config)
}

/// How the client checks the server's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verify {
    /// Accept any certificate: no protection against a machine in the middle
    /// (`--insecure`; in-process callers that started the server themselves).
    Any,
    /// Accept only a leaf certificate with this SHA-256 (lowercase hex), whoever issued
    /// it and whatever names it holds (`--pin`).
    Pin(String),
    /// Accept a chain that leads to one of these CA certificates and is valid for the
    /// server name, as a browser would (`--ca FILE`, or [`system_roots`] by default).
    Roots(Vec<CertificateDer<'static>>),
}

/// Where the system's CA bundle is looked for when `SSL_CERT_FILE` is not set, in
/// OpenSSL's order of distributions: Debian/Ubuntu/Arch, Fedora/RHEL, openSUSE,
/// Alpine/BSD.
pub const SYSTEM_CA_FILES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// The most satquic reads of a PEM file (a certificate, a key, a CA bundle: Debian's
/// holds about 150 CAs in 220 kB).
const PEM_FILE: FileLimit = FileLimit {
    what: "PEM file",
    max_bytes: 16 << 20,
};

/// The bytes of a PEM file: a regular file (a FIFO or a device is refused, not waited on
/// or read for ever) of at most [`PEM_FILE`].
fn read_pem(path: &Path) -> Result<Vec<u8>, String> {
    satquic_link::file::read(path, PEM_FILE).map_err(|e| e.reason)
}

/// The certificates of a PEM file, in order.
fn certificates_in(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = read_pem(path)?;
    CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())
}

/// The CA certificates of a PEM file (`--ca`).
pub fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, NetError> {
    let certs = certificates_in(path)
        .map_err(|e| NetError::Usage(format!("--ca {}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(NetError::Usage(format!(
            "--ca {}: no PEM certificate in it",
            path.display()
        )));
    }
    Ok(certs)
}

/// The system's trusted CA certificates: `SSL_CERT_FILE` if set, otherwise the first of
/// [`SYSTEM_CA_FILES`] that exists.
pub fn system_roots() -> Result<Vec<CertificateDer<'static>>, NetError> {
    let file = match std::env::var_os("SSL_CERT_FILE") {
        Some(f) => Some(std::path::PathBuf::from(f)),
        None => SYSTEM_CA_FILES
            .iter()
            .map(std::path::PathBuf::from)
            .find(|p| p.is_file()),
    };
    let no_roots = |why: String| {
        NetError::Usage(format!(
            "{why}: cannot verify the server certificate; give --ca FILE, --pin SHA256 \
             (printed by satquic server) or --insecure"
        ))
    };
    let file = file.ok_or_else(|| no_roots("no system CA certificates found".into()))?;
    let certs = certificates_in(&file)
        .map_err(|e| no_roots(format!("system CA certificates {}: {e}", file.display())))?;
    if certs.is_empty() {
        return Err(no_roots(format!(
            "no certificate in the system CA file {}",
            file.display()
        )));
    }
    Ok(certs)
}

/// Checks the certificate per [`Verify`], checks handshake signatures properly, and
/// remembers the fingerprint it saw and why it refused it.
#[derive(Debug)]
pub struct ServerVerifier {
    verify: Verify,
    /// The standard WebPKI check, for [`Verify::Roots`].
    webpki: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
    seen: Mutex<Option<String>>,
    refused: Mutex<Option<String>>,
}

impl ServerVerifier {
    pub fn new(verify: Verify) -> Result<Arc<Self>, NetError> {
        let provider = provider();
        let webpki = match &verify {
            Verify::Roots(certs) => {
                let mut roots = rustls::RootCertStore::empty();
                let (added, _unusable) = roots.add_parsable_certificates(certs.iter().cloned());
                if added == 0 {
                    return Err(NetError::Usage(
                        "none of the CA certificates given can be used".into(),
                    ));
                }
                Some(
                    rustls::client::WebPkiServerVerifier::builder_with_provider(
                        Arc::new(roots),
                        provider.clone(),
                    )
                    .build()
                    .map_err(|e| NetError::Setup(format!("certificate verifier: {e}")))?,
                )
            }
            Verify::Any | Verify::Pin(_) => None,
        };
        Ok(Arc::new(ServerVerifier {
            verify,
            webpki,
            provider,
            seen: Mutex::new(None),
            refused: Mutex::new(None),
        }))
    }

    /// SHA-256 of the last server certificate seen.
    pub fn seen(&self) -> Option<String> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Why the server's certificate was refused, in words, if it was.
    pub fn refused(&self) -> Option<String> {
        self.refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn refuse(&self, why: String) -> rustls::Error {
        *self.refused.lock().unwrap_or_else(|e| e.into_inner()) = Some(why.clone());
        rustls::Error::General(why)
    }
}

/// A refused certificate in words (rustls names them in Debug form).
fn certificate_error(e: &rustls::Error, name: &ServerName<'_>) -> String {
    use rustls::CertificateError as C;
    let name = name.to_str();
    match e {
        rustls::Error::InvalidCertificate(c) => match c {
            C::UnknownIssuer => "it is not issued by a trusted authority (self-signed?)".into(),
            C::NotValidForName | C::NotValidForNameContext { .. } => {
                format!("it is not valid for the name '{name}' (--sni)")
            }
            C::Expired | C::ExpiredContext { .. } => "it has expired".into(),
            C::NotValidYet | C::NotValidYetContext { .. } => "it is not valid yet".into(),
            C::Revoked => "it is revoked".into(),
            C::BadSignature => "its signature is invalid".into(),
            other => format!("it is invalid ({other})"),
        },
        other => other.to_string(),
    }
}

impl ServerCertVerifier for ServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let fp = sha256_hex(end_entity.as_ref());
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(fp.clone());
        match &self.verify {
            Verify::Any => Ok(ServerCertVerified::assertion()),
            Verify::Pin(pin) if *pin == fp => Ok(ServerCertVerified::assertion()),
            Verify::Pin(_) => Err(self.refuse("it does not match --pin".into())),
            Verify::Roots(_) => match &self.webpki {
                Some(w) => w
                    .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
                    .map_err(|e| self.refuse(certificate_error(&e, server_name))),
                None => Err(self.refuse("no trusted authorities".into())),
            },
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The rustls client configuration: TLS 1.3, one ALPN, `SSLKEYLOGFILE` honoured.
pub fn client_crypto(
    verifier: Arc<ServerVerifier>,
    alpn: &[u8],
) -> Result<rustls::ClientConfig, NetError> {
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| NetError::Setup(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    config.key_log = keylog::from_environment()?;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_abc() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn pins() {
        let fp = sha256_hex(b"abc");
        assert_eq!(parse_pin(&fp.to_uppercase()).unwrap(), fp);
        assert!(parse_pin("abc").is_err());
        assert!(parse_pin(&"zz".repeat(32)).is_err());
    }

    /// A FIFO in place of the key (or the certificate) is refused in one line at once,
    /// not waited on.
    #[test]
    fn pem_files_that_are_fifos_are_refused() {
        let dir = crate::test_files::scratch("tls-fifo");
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        std::fs::write(dir.join("cert.pem"), cert.cert.pem()).unwrap();
        std::fs::write(dir.join("key.pem"), cert.signing_key.serialize_pem()).unwrap();
        let fifo = dir.join("fifo");
        crate::test_files::mkfifo(&fifo);
        assert!(Identity::from_pem_files(&dir.join("cert.pem"), &dir.join("key.pem")).is_ok());
        for (cert, key) in [("cert.pem", "fifo"), ("fifo", "key.pem")] {
            let e = Identity::from_pem_files(&dir.join(cert), &dir.join(key))
                .err()
                .expect("refused")
                .to_string();
            assert!(e.contains("a FIFO, not a regular file"), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        assert!(read_ca_file(&fifo).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
