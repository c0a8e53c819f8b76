//! Admission and limits: which new connections the server takes, and what it counts and
//! frees while they live, so one misbehaving client cannot exhaust it (the limits listed
//! in the [module docs](super)).
//!
//! A handshake is refused at once (CONNECTION_REFUSED) above the total or per-address
//! cap, and a client that has not proved its address is sent a Retry first; a peer that
//! stops answering is abandoned ([`until_silent`]); memory freed by ended connections goes
//! back to the system ([`release_memory`]).

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use quinn::{Connection, Incoming};

use super::{ServerState, lock};

/// A peer that has not answered anything the server sent for this long (at least) is
/// abandoned. Longer than a LEO handover or a GEO beam switch; far shorter than the idle
/// timeout (30 s), which is what otherwise frees a dead client's connection.
pub const SILENT_PEER_MIN: Duration = Duration::from_secs(3);
/// ... or for this many smoothed RTTs, if longer: about three PTO backoffs (RFC 9002
/// Sec. 6.2; PTO = SRTT + 4 RTTVAR + max_ack_delay doubles after each).
pub const SILENT_PEER_RTTS: u32 = 8;
/// How often a connection checks whether its peer still answers.
pub const SILENCE_CHECK_INTERVAL: Duration = Duration::from_millis(250);
/// Application close code of an abandoned connection.
pub const CLOSE_PEER_SILENT: u32 = 0x110;
/// Application close code of a connection served in 0.5-RTT whose handshake did not
/// complete within the handshake timeout.
pub const CLOSE_HANDSHAKE_TIMEOUT: u32 = 0x111;
/// After a connection ends the server gives freed heap memory back to the system, at most
/// this often, and whenever the last one ends ([`release_memory`]).
pub const MEMORY_RELEASE_INTERVAL: Duration = Duration::from_secs(1);

/// The `incoming` connection if the server takes it: under both connection caps (else
/// refused) and, with Retry on, from a client that proved its address (else sent a
/// Retry, or ignored when it cannot be). A client that proved it with a token from an
/// earlier connection is counted (`tokens_accepted`).
pub(super) fn admit(state: &ServerState, incoming: Incoming) -> Option<Incoming> {
    let c = &state.counters;
    let from = incoming.remote_address().ip();
    let crowded = lock(&state.per_address).get(&from).copied().unwrap_or(0)
        >= state.options.max_connections_per_address;
    if crowded || c.active.load(Ordering::Relaxed) >= state.options.max_connections {
        c.refused.fetch_add(1, Ordering::Relaxed);
        incoming.refuse();
        return None;
    }
    if !incoming.remote_address_validated() {
        if !state.options.retry {
            return Some(incoming);
        }
        if incoming.may_retry() {
            c.retries.fetch_add(1, Ordering::Relaxed);
            let _ = incoming.retry();
        } else {
            incoming.ignore();
        }
        return None;
    }
    // Validated without a Retry: by a token from an earlier connection (NEW_TOKEN).
    if incoming.may_retry() {
        c.tokens_accepted.fetch_add(1, Ordering::Relaxed);
    }
    Some(incoming)
}

/// Returns when the peer has not answered anything sent to it for [`SILENT_PEER_MIN`] or
/// [`SILENT_PEER_RTTS`] smoothed RTTs, whichever is longer. A peer with nothing to
/// answer (an idle connection) is not silent: the clock starts at the first datagram the
/// server sends after the peer's latest one.
pub(super) async fn until_silent(conn: &Connection) {
    let mut tick = tokio::time::interval(SILENCE_CHECK_INTERVAL);
    let stats = conn.stats();
    let mut received = stats.udp_rx.datagrams;
    let mut sent_then = stats.udp_tx.datagrams;
    let mut unanswered_since: Option<Instant> = None;
    loop {
        tick.tick().await;
        let stats = conn.stats();
        if stats.udp_rx.datagrams != received {
            received = stats.udp_rx.datagrams;
            sent_then = stats.udp_tx.datagrams;
            unanswered_since = None;
        } else if stats.udp_tx.datagrams > sent_then {
            let since = *unanswered_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= (conn.rtt() * SILENT_PEER_RTTS).max(SILENT_PEER_MIN) {
                return;
            }
        }
    }
}

/// Gives the heap pages that freed memory left behind back to the system. glibc's
/// allocator keeps them (per thread arena) for reuse, so without this a server that once
/// held many connections (their packet records and buffers) keeps that footprint for
/// good: 50 clients killed mid-download left it at 140 MB, eighteen times its fresh size.
/// Elsewhere (musl, other systems) a no-op. Each call also counts in
/// [`memory_releases`], for a program with its own allocator to follow.
pub fn release_memory() {
    MEMORY_RELEASES.fetch_add(1, Ordering::Relaxed);
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions; it only returns free pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Calls of [`release_memory`] so far.
static MEMORY_RELEASES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How often [`release_memory`] was called. A program whose global allocator keeps freed
/// pages per thread (the `satquic` binary's mimalloc, which `malloc_trim` does not reach)
/// compares it on each worker thread, when the thread parks, to give that thread's pages
/// back after connections ended.
pub fn memory_releases() -> u64 {
    MEMORY_RELEASES.load(Ordering::Relaxed)
}

/// Counts a connection as active, in total and for its address, while it lives.
pub(super) struct ActiveGuard(Arc<ServerState>, IpAddr);

impl ActiveGuard {
    pub(super) fn new(state: Arc<ServerState>, from: IpAddr) -> Self {
        state.counters.active.fetch_add(1, Ordering::Relaxed);
        *lock(&state.per_address).entry(from).or_insert(0) += 1;
        ActiveGuard(state, from)
    }
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        let left = self.0.counters.active.fetch_sub(1, Ordering::Relaxed) - 1;
        {
            // Always when the last connection ends; otherwise at most once an interval.
            let mut released_at = lock(&self.0.released_at);
            if left == 0 || released_at.elapsed() >= MEMORY_RELEASE_INTERVAL {
                *released_at = Instant::now();
                release_memory();
            }
        }
        let mut per_address = lock(&self.0.per_address);
        if let Some(n) = per_address.get_mut(&self.1) {
            *n -= 1;
            if *n == 0 {
                per_address.remove(&self.1);
            }
        }
    }
}
