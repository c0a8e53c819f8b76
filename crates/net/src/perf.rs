//! The `satquic-perf` protocol (ALPN `satquic-perf`): what `satquic client` and
//! `satquic server` say to each other. It extends the simulator's request so the two
//! carry the same bytes for a plain download.
//!
//! ```text
//! client -> server, on a new bidirectional stream:
//!   size     8 bytes, big-endian u64    download: bytes the server sends (u64::MAX: until
//!                                       the client stops reading); upload: bytes that follow
//!   [optional, absent for a plain download]
//!   opts_len 2 bytes, big-endian u16
//!   opts     opts_len bytes of UTF-8, space separated: `upload`
//!   [upload only] the payload, then FIN
//! server -> client:
//!   download: `size` bytes (zeros), then FIN
//!   upload:   a 16-byte receipt: bytes received (u64) and microseconds from the first to
//!             the last payload byte at the server (u64), then FIN
//! after a download whose stream the client read to the end, the server may open a
//! unidirectional stream with a JSON [`ServerReport`] (its congestion controller's view).
//! ```
//!
//! The server refuses a request above its `--max-bytes` by resetting the stream with
//! [`ERR_TOO_LARGE`]; malformed requests get [`ERR_BAD_REQUEST`].

use serde::{Deserialize, Serialize};

/// Stream error code: the request is malformed.
pub const ERR_BAD_REQUEST: u32 = 0x101;
/// Stream error code: the request asks for more than the server allows.
pub const ERR_TOO_LARGE: u32 = 0x102;
/// Application close code when the client is done.
pub const CLOSE_DONE: u32 = 0;

/// Longest option string a server accepts.
pub const MAX_OPTIONS_LEN: usize = 1024;

/// What the client asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Bytes to download or upload; `u64::MAX` means "until stopped".
    pub size: u64,
    /// The client sends the payload.
    pub upload: bool,
}

impl Request {
    /// The bytes the client writes before any upload payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.size.to_be_bytes().to_vec();
        if self.upload {
            let opts = b"upload";
            out.extend_from_slice(&(opts.len() as u16).to_be_bytes());
            out.extend_from_slice(opts);
        }
        out
    }

    /// Parses the options string of an extended request.
    pub fn parse_options(size: u64, opts: &[u8]) -> Result<Self, String> {
        let text = std::str::from_utf8(opts).map_err(|_| "options are not UTF-8".to_string())?;
        let mut req = Request {
            size,
            upload: false,
        };
        for word in text.split_ascii_whitespace() {
            match word {
                "upload" => req.upload = true,
                other => return Err(format!("unknown option '{other}'")),
            }
        }
        Ok(req)
    }
}

/// The upload receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Receipt {
    pub bytes: u64,
    pub micros: u64,
}

impl Receipt {
    pub fn encode(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.bytes.to_be_bytes());
        out[8..].copy_from_slice(&self.micros.to_be_bytes());
        out
    }

    pub fn decode(b: &[u8]) -> Option<Self> {
        if b.len() != 16 {
            return None;
        }
        Some(Receipt {
            bytes: u64::from_be_bytes(b[..8].try_into().ok()?),
            micros: u64::from_be_bytes(b[8..].try_into().ok()?),
        })
    }
}

/// What the server's sending side saw during a download: sent to the client after the
/// transfer so `satquic client -J` can report the sender's congestion control.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerReport {
    /// The congestion control spec the server used.
    pub cc: String,
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub bytes_sent: u64,
    pub bytes_lost: u64,
    pub udp_datagrams_sent: u64,
    pub congestion_events: u64,
    /// ACK frames the server received.
    #[serde(default)]
    pub ack_frames_received: u64,
    pub first_rtt_s: Option<f64>,
    pub min_rtt_s: Option<f64>,
    /// Seconds since the server accepted the connection.
    pub first_loss_detected_at_s: Option<f64>,
    /// The slow-start exit and congestion events, as `events.jsonl` writes them (times in
    /// seconds since the server accepted the connection). At most [`MAX_REPORT_EVENTS`].
    pub events: Vec<serde_json::Value>,
}

/// Cap on the events a server report carries.
pub const MAX_REPORT_EVENTS: usize = 2000;

/// Largest server report a client reads.
pub const MAX_REPORT_BYTES: usize = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_download_is_the_simulators_request() {
        let r = Request {
            size: 20_000_000,
            upload: false,
        };
        assert_eq!(r.encode(), 20_000_000u64.to_be_bytes().to_vec());
    }

    #[test]
    fn upload_round_trip() {
        let r = Request {
            size: 5,
            upload: true,
        };
        let bytes = r.encode();
        let len = u16::from_be_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!(Request::parse_options(5, &bytes[10..10 + len]).unwrap(), r);
        assert!(Request::parse_options(5, b"fly").is_err());
        let receipt = Receipt {
            bytes: 7,
            micros: 9,
        };
        assert_eq!(Receipt::decode(&receipt.encode()), Some(receipt));
    }
}
