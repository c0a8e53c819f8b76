//! The namespaces' lifecycle: checking the names, making the two namespaces with a TUN
//! device each (configured as the [module docs](super) say), and removing them, also when
//! the process is told to stop.
//!
//! Everything here runs `ip` (iproute2) as root, as a user would; a namespace made is
//! recorded at once ([`Namespaces`]) so that an error halfway leaves nothing behind.

use std::net::Ipv4Addr;
use std::os::fd::OwnedFd;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use super::device::open_tun;
use super::{TUN_DEVICE, TUN_MTU, TunOptions};
use crate::NetError;

/// Largest TCP send and receive buffer in the namespaces (above geo-viasat's 11 MB BDP
/// plus its 36 MB queue would need more; 64 MiB covers the window TCP reaches there).
pub const TCP_BUFFER_MAX_BYTES: u64 = 64 << 20;
/// The default (middle) value of the namespaces' `tcp_rmem` and `tcp_wmem`, Linux's own.
pub const TCP_BUFFER_DEFAULT_BYTES: u64 = 131_072;

/// Checks the options before anything is made: two valid, distinct namespace names that
/// do not exist yet, two distinct addresses, and root.
pub(super) fn check_options(options: &TunOptions) -> Result<(), NetError> {
    check_namespace_name("--client-ns", &options.client_ns)?;
    check_namespace_name("--server-ns", &options.server_ns)?;
    if options.client_ns == options.server_ns {
        return Err(NetError::Usage(format!(
            "--client-ns and --server-ns are both {:?}: the two sides need two namespaces",
            options.client_ns
        )));
    }
    if options.client_addr == options.server_addr {
        return Err(NetError::Usage(
            "--client-addr and --server-addr must differ".into(),
        ));
    }
    check_host_address("--client-addr", options.client_addr)?;
    check_host_address("--server-addr", options.server_addr)?;
    if !is_root() {
        return Err(NetError::Usage(
                "--tun needs root (it makes network namespaces and TUN devices); without root use the UDP relay (--listen/--to)".into(),
            ));
    }
    for name in [&options.client_ns, &options.server_ns] {
        if namespace_exists(name) {
            return Err(NetError::Usage(format!(
                "network namespace {name} exists (another satquic link --tun, or one that was killed: `ip netns del {name}`); choose others with --client-ns/--server-ns"
            )));
        }
    }
    Ok(())
}

static DEVICE_COUNTER: AtomicU32 = AtomicU32::new(0);

/// Opens the two TUN devices, makes the two namespaces and moves and configures a device
/// into each: the client's and the server's descriptors, and the namespaces (removed when
/// dropped).
pub(super) fn make_sides(options: &TunOptions) -> Result<(OwnedFd, OwnedFd, Namespaces), NetError> {
    let n = DEVICE_COUNTER.fetch_add(1, Ordering::Relaxed);
    let tag = format!("{}{}", std::process::id() % 1_000_000, n % 100);
    let client_dev = format!("sq{tag}c");
    let server_dev = format!("sq{tag}s");
    let client_fd = open_tun(&client_dev)?;
    let server_fd = open_tun(&server_dev)?;
    let mut namespaces = Namespaces(Vec::new());
    namespaces.add(&options.client_ns)?;
    namespaces.add(&options.server_ns)?;
    configure_side(
        &options.client_ns,
        &client_dev,
        options.client_addr,
        options.server_addr,
        options.client_receive_buffer,
    )?;
    configure_side(
        &options.server_ns,
        &server_dev,
        options.server_addr,
        options.client_addr,
        TCP_BUFFER_MAX_BYTES,
    )?;
    Ok((client_fd, server_fd, namespaces))
}

/// Set by SIGINT or SIGTERM once [`stop_on_termination_signals`] ran.
static TERMINATION: AtomicBool = AtomicBool::new(false);

extern "C" fn on_termination(_signal: libc::c_int) {
    TERMINATION.store(true, Ordering::SeqCst);
}

/// Makes SIGINT and SIGTERM set a flag ([`termination_requested`]) instead of killing the
/// process, so a command can remove its namespaces before it leaves.
pub fn stop_on_termination_signals() {
    let handler = on_termination as extern "C" fn(libc::c_int);
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
    }
}

/// Whether SIGINT or SIGTERM arrived since [`stop_on_termination_signals`].
pub fn termination_requested() -> bool {
    TERMINATION.load(Ordering::SeqCst)
}

/// Whether this process may make namespaces and TUN devices.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether a network namespace of this name exists (`ip netns` keeps them here).
pub fn namespace_exists(name: &str) -> bool {
    std::path::Path::new("/run/netns").join(name).exists()
}

/// Checks a namespace name: what `ip netns add` takes, and nothing a shell would mangle.
fn check_namespace_name(flag: &str, name: &str) -> Result<(), NetError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && name != "."
        && name != "..";
    if ok {
        Ok(())
    } else {
        Err(NetError::Usage(format!(
            "{flag} {name:?}: a namespace name is 1 to 64 letters, digits, '-', '_' or '.'"
        )))
    }
}

/// Runs `ip ARGS`; an error is its first line of stderr.
fn ip(args: &[&str]) -> Result<(), NetError> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| NetError::Setup(format!("cannot run ip (iproute2): {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(NetError::Setup(format!(
        "ip {}: {}",
        args.join(" "),
        err.lines().next().unwrap_or("failed").trim()
    )))
}

/// Namespaces made so far; removed when dropped.
pub(super) struct Namespaces(pub(super) Vec<String>);

impl Namespaces {
    fn add(&mut self, name: &str) -> Result<(), NetError> {
        ip(&["netns", "add", name])?;
        self.0.push(name.to_string());
        Ok(())
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for name in self.0.drain(..) {
            let _ = ip(&["netns", "del", &name]);
        }
    }
}

/// Configures one side: moves the device into the namespace, names it [`TUN_DEVICE`],
/// gives it the point-to-point pair, brings it and loopback up, raises the TCP buffers.
fn configure_side(
    ns: &str,
    device: &str,
    local: Ipv4Addr,
    peer: Ipv4Addr,
    receive_buffer: u64,
) -> Result<(), NetError> {
    ip(&["link", "set", "dev", device, "netns", ns])?;
    ip(&["-n", ns, "link", "set", "dev", device, "name", TUN_DEVICE])?;
    let mtu = TUN_MTU.to_string();
    let pair = format!("{local}/32");
    let peer = format!("{peer}/32");
    ip(&[
        "-n", ns, "addr", "add", &pair, "peer", &peer, "dev", TUN_DEVICE,
    ])?;
    let rmem = format!("4096 {TCP_BUFFER_DEFAULT_BYTES} {receive_buffer}");
    let wmem = format!("4096 {TCP_BUFFER_DEFAULT_BYTES} {TCP_BUFFER_MAX_BYTES}");
    // IPv6 off on the device: its router solicitations and MLD reports would otherwise
    // cross the link too (the pair is IPv4).
    let script = format!(
        "echo '{rmem}' > /proc/sys/net/ipv4/tcp_rmem && echo '{wmem}' > /proc/sys/net/ipv4/tcp_wmem && \
         {{ echo 1 > /proc/sys/net/ipv6/conf/{TUN_DEVICE}/disable_ipv6 2>/dev/null || true; }}"
    );
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "sh", "-c", &script])
        .output()
        .map_err(|e| NetError::Setup(format!("cannot run ip netns exec: {e}")))?;
    if !out.status.success() {
        return Err(NetError::Setup(format!(
            "cannot set the TCP buffers in {ns}: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("")
        )));
    }
    ip(&[
        "-n",
        ns,
        "link",
        "set",
        "dev",
        TUN_DEVICE,
        "mtu",
        &mtu,
        "txqueuelen",
        "10000",
        "up",
    ])?;
    ip(&["-n", ns, "link", "set", "dev", "lo", "up"])?;
    Ok(())
}

/// Refuses an address no host of the point-to-point link between the namespaces can have:
/// 0.0.0.0, loopback (the namespace's own `lo`), broadcast, multicast. Each was accepted,
/// and the link ran with nothing able to cross it.
fn check_host_address(flag: &str, addr: Ipv4Addr) -> Result<(), NetError> {
    let what = if addr.is_unspecified() {
        "the unspecified address"
    } else if addr.is_loopback() {
        "a loopback address (each namespace has its own lo)"
    } else if addr.is_broadcast() {
        "the broadcast address"
    } else if addr.is_multicast() {
        "a multicast address"
    } else {
        return Ok(());
    };
    Err(NetError::Usage(format!(
        "{flag} {addr}: {what}, not an address a namespace's end of the link can have"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_a_host_cannot_have_are_refused() {
        for bad in [
            "0.0.0.0",
            "127.0.0.1",
            "127.1.2.3",
            "255.255.255.255",
            "224.0.0.1",
        ] {
            let addr: Ipv4Addr = bad.parse().unwrap();
            assert!(
                matches!(check_host_address("--client-addr", addr), Err(NetError::Usage(m)) if m.contains(bad) && !m.contains('\n')),
                "{bad}"
            );
        }
        for good in ["10.199.0.1", "192.0.2.7", "100.64.0.1"] {
            assert!(check_host_address("--server-addr", good.parse().unwrap()).is_ok());
        }
        // Through the options' check, before the root check (were accepted and ran).
        let options = TunOptions {
            client_addr: Ipv4Addr::BROADCAST,
            ..TunOptions::new(None)
        };
        assert!(
            matches!(check_options(&options), Err(NetError::Usage(m)) if m.starts_with("--client-addr 255.255.255.255")),
        );
    }

    #[test]
    fn namespace_names_are_checked() {
        for bad in ["", "a b", "../x", "a;b", ".", &"x".repeat(65)] {
            assert!(
                matches!(check_namespace_name("--client-ns", bad), Err(NetError::Usage(m)) if !m.contains('\n')),
                "{bad:?}"
            );
        }
        assert!(check_namespace_name("--client-ns", "satq-client.2_x").is_ok());
    }
}
