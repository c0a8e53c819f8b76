//! The sender's `tcp_info` as `ss -tin` shows it, sampled in the server namespace: the
//! samples parsed, the data connection picked out, and the slow-start exit and first loss
//! it shows (the module docs' rules), written out as `tcp_info.csv`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::SystemTime;

/// One sample of the sender's tcp_info (`ss -tin`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TcpInfoSample {
    /// Seconds since the sender started.
    pub t_s: f64,
    /// The sender's local port (tells the data connection from iperf3's control one).
    pub port: u16,
    pub mss_bytes: u64,
    pub cwnd_packets: u64,
    /// `None` while it is infinite (slow start has not ended).
    pub ssthresh_packets: Option<u64>,
    pub rtt_ms: Option<f64>,
    /// Total retransmissions (`retrans:a/TOTAL`) and segments now considered lost.
    pub retrans_total: u64,
    pub lost_packets: u64,
    pub bytes_acked: u64,
}

impl TcpInfoSample {
    fn saw_loss(&self) -> bool {
        self.retrans_total > 0 || self.lost_packets > 0
    }
}

/// Parses the sampler's output: `@ EPOCH_SECONDS` lines, each followed by `ss -tinH`'s
/// two lines per socket. `t0` is the sender's start on the wall clock.
pub fn parse_ss(text: &str, t0: SystemTime) -> Vec<TcpInfoSample> {
    let t0 = t0
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    let mut out = Vec::new();
    let mut now: Option<f64> = None;
    let mut port: Option<u16> = None;
    for line in text.lines() {
        if let Some(stamp) = line.strip_prefix("@ ") {
            now = stamp.trim().parse::<f64>().ok().map(|t| t - t0);
            port = None;
            continue;
        }
        if !line.starts_with(char::is_whitespace) {
            // `ESTAB 0 0 LOCAL:PORT PEER:PORT`
            port = line
                .split_whitespace()
                .nth(3)
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| p.parse().ok());
            continue;
        }
        let (Some(t), Some(p)) = (now, port) else {
            continue;
        };
        let mut s = TcpInfoSample {
            t_s: t,
            port: p,
            ..TcpInfoSample::default()
        };
        for word in line.split_whitespace() {
            let Some((key, value)) = word.split_once(':') else {
                continue;
            };
            let num = |v: &str| v.parse::<u64>().ok();
            match key {
                "mss" => s.mss_bytes = num(value).unwrap_or(0),
                "cwnd" => s.cwnd_packets = num(value).unwrap_or(0),
                "ssthresh" => s.ssthresh_packets = num(value),
                "rtt" => s.rtt_ms = value.split('/').next().and_then(|v| v.parse().ok()),
                "retrans" => {
                    s.retrans_total = value.rsplit('/').next().and_then(num).unwrap_or(0);
                }
                "lost" => s.lost_packets = num(value).unwrap_or(0),
                "bytes_acked" => s.bytes_acked = num(value).unwrap_or(0),
                _ => {}
            }
        }
        out.push(s);
        port = None;
    }
    out
}

/// The data connection's samples: the port that got the most bytes acknowledged.
pub fn data_connection(samples: &[TcpInfoSample]) -> Vec<TcpInfoSample> {
    let mut acked: BTreeMap<u16, u64> = BTreeMap::new();
    for s in samples {
        let e = acked.entry(s.port).or_default();
        *e = (*e).max(s.bytes_acked);
    }
    let Some((&port, _)) = acked.iter().max_by_key(|(_, b)| **b) else {
        return Vec::new();
    };
    samples.iter().filter(|s| s.port == port).copied().collect()
}

/// The slow-start exit and first loss a tcp_info trace shows (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TraceExit {
    pub exit_at_s: Option<f64>,
    pub exit_by_loss: bool,
    /// cwnd (bytes) of the sample before the exit and ssthresh (bytes) at the exit.
    pub cwnd_before_bytes: Option<u64>,
    pub ssthresh_bytes: Option<u64>,
    pub rtt_at_exit_ms: Option<f64>,
    pub first_loss_at_s: Option<f64>,
}

/// The slow-start exit (with `exit_signal`: the variant has one) and the first loss of
/// a data connection's samples.
pub fn trace_exit(samples: &[TcpInfoSample], exit_signal: bool) -> TraceExit {
    let mut e = TraceExit {
        first_loss_at_s: samples.iter().find(|s| s.saw_loss()).map(|s| s.t_s),
        ..TraceExit::default()
    };
    if !exit_signal {
        return e;
    }
    if let Some(i) = samples.iter().position(|s| s.ssthresh_packets.is_some()) {
        let s = samples[i];
        e.exit_at_s = Some(s.t_s);
        e.exit_by_loss = s.saw_loss();
        e.ssthresh_bytes = s.ssthresh_packets.map(|p| p * s.mss_bytes);
        e.rtt_at_exit_ms = s.rtt_ms;
        let before = if i > 0 { samples[i - 1] } else { s };
        e.cwnd_before_bytes = Some(before.cwnd_packets.max(s.cwnd_packets) * s.mss_bytes);
    }
    e
}

/// Writes the samples as `tcp_info.csv`.
pub(super) fn write_csv(path: &Path, samples: &[TcpInfoSample]) {
    let mut text = String::from(
        "t_s,port,mss_bytes,cwnd_packets,ssthresh_packets,rtt_ms,retrans_total,lost_packets,bytes_acked\n",
    );
    for s in samples {
        let _ = writeln!(
            text,
            "{:.3},{},{},{},{},{},{},{},{}",
            s.t_s,
            s.port,
            s.mss_bytes,
            s.cwnd_packets,
            s.ssthresh_packets.map_or(String::new(), |v| v.to_string()),
            s.rtt_ms.map_or(String::new(), |v| v.to_string()),
            s.retrans_total,
            s.lost_packets,
            s.bytes_acked
        );
    }
    let _ = std::fs::write(path, text);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const SS: &str = "@ 100.000
ESTAB 0 0 10.199.0.2:5201 10.199.0.1:40000
\t cubic wscale:7,7 rto:804 rtt:601.5/0.75 mss:1448 cwnd:10 bytes_acked:1 retrans:0/0
ESTAB 0 0 10.199.0.2:40002 10.199.0.1:5201
\t cubic wscale:7,7 rto:804 rtt:600.2/0.1 mss:1448 cwnd:40 bytes_acked:50000
@ 100.050
ESTAB 0 0 10.199.0.2:40002 10.199.0.1:5201
\t cubic wscale:7,7 rto:804 rtt:650.1/2 mss:1448 cwnd:80 ssthresh:80 bytes_acked:90000
@ 100.100
ESTAB 0 0 10.199.0.2:40002 10.199.0.1:5201
\t cubic rtt:700/2 mss:1448 cwnd:60 ssthresh:56 bytes_acked:99000 retrans:1/3 lost:2
";

    #[test]
    fn ss_samples_parse_and_the_data_connection_is_found() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let all = parse_ss(SS, t0);
        assert_eq!(all.len(), 4);
        let data = data_connection(&all);
        assert_eq!(data.len(), 3);
        assert_eq!(data[0].port, 40002);
        assert_eq!(data[1].ssthresh_packets, Some(80));
        assert!((data[1].t_s - 0.05).abs() < 1e-9);
        assert_eq!((data[2].retrans_total, data[2].lost_packets), (3, 2));
        assert_eq!(data[0].rtt_ms, Some(600.2));
    }

    #[test]
    fn exit_is_the_first_finite_ssthresh_and_loss_makes_it_late() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let data = data_connection(&parse_ss(SS, t0));
        let e = trace_exit(&data, true);
        assert_eq!(e.exit_at_s.map(|t| (t * 1e3).round()), Some(50.0));
        assert!(!e.exit_by_loss);
        assert_eq!(e.ssthresh_bytes, Some(80 * 1448));
        assert_eq!(e.cwnd_before_bytes, Some(80 * 1448));
        assert_eq!(e.first_loss_at_s.map(|t| (t * 1e3).round()), Some(100.0));
        // Without an exit signal (BBR): no exit, the loss still counts.
        let e = trace_exit(&data, false);
        assert_eq!(e.exit_at_s, None);
        assert!(e.first_loss_at_s.is_some());
    }
}
