//! UDP port probing: a free port for each side of a cell, and the wait until a process
//! listens on its port.
//!
//! The peers are other programs: none says when it is ready, so the runner watches the
//! kernel's socket table (`/proc/net/udp{,6}`) until the port is bound, and starts the
//! next process only then (a client started before its server listens would fail its
//! first handshake attempt and be timed from the wrong moment).

use std::net::{Ipv4Addr, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use super::process::{Running, last_line};

/// How long a server or the relay may take to bind its port.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// A free UDP port on 127.0.0.1 (bound and released: another process could take it in
/// between, which a failed run then says).
pub(super) fn free_udp_port() -> std::io::Result<u16> {
    Ok(UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

/// Whether some socket is bound to UDP `port` (Linux `/proc/net/udp{,6}`; elsewhere we
/// only wait a second).
fn udp_port_bound(port: u16) -> Option<bool> {
    let needle = format!(":{port:04X} ");
    let mut any_file = false;
    for f in ["/proc/net/udp", "/proc/net/udp6"] {
        if let Ok(text) = std::fs::read_to_string(f) {
            any_file = true;
            if text.lines().skip(1).any(|l| {
                l.split_whitespace()
                    .nth(1)
                    .is_some_and(|a| format!("{a} ").ends_with(&needle))
            }) {
                return Some(true);
            }
        }
    }
    any_file.then_some(false)
}

/// Waits until `port` is bound or the process exits.
pub(super) fn wait_ready(process: &mut Running, port: u16, log: &Path) -> Result<(), String> {
    let started = Instant::now();
    loop {
        if let Some(status) = process.exited() {
            return Err(format!(
                "{} exited ({status}) before listening: {}",
                process.what,
                last_line(log)
            ));
        }
        match udp_port_bound(port) {
            Some(true) => return Ok(()),
            None if started.elapsed() > Duration::from_secs(1) => return Ok(()),
            _ => {}
        }
        if started.elapsed() > READY_TIMEOUT {
            return Err(format!(
                "{} did not listen on UDP port {port} within {} s: {}",
                process.what,
                READY_TIMEOUT.as_secs(),
                last_line(log)
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_ports_are_seen_bound() {
        let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = s.local_addr().unwrap().port();
        if let Some(bound) = udp_port_bound(port) {
            assert!(bound);
        }
    }
}
