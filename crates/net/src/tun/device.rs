//! Device I/O: opening a TUN device (bare IP packets, non-blocking), the I/O thread that
//! reads both devices, and writing a packet into one.
//!
//! The I/O thread stamps each packet as it reads it (the model's arrival time) and hands
//! it to the scheduler without waiting: when the scheduler's channel is full the packet is
//! dropped and counted as `overload`, as in the UDP relay.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{SyncSender, TrySendError};
use std::time::{Duration, Instant};

use super::{Event, Shared};
use crate::NetError;

/// Largest packet read from a TUN device.
const READ_BUFFER: usize = 65536;

/// `struct ifreq` as TUNSETIFF reads it: the name and the flags (the rest is a union
/// the call does not use).
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// `_IOW('T', 202, int)`.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

/// Opens a TUN device named `name` (non-blocking, bare IP packets).
pub(super) fn open_tun(name: &str) -> Result<OwnedFd, NetError> {
    let path = c"/dev/net/tun";
    // SAFETY: a NUL-terminated path; the returned descriptor is checked.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(NetError::Setup(format!(
            "cannot open /dev/net/tun: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: fd was just opened and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: IFF_TUN | IFF_NO_PI,
        _pad: [0; 22],
    };
    let bytes = name.as_bytes();
    if bytes.len() >= libc::IFNAMSIZ {
        return Err(NetError::Setup(format!("device name {name} is too long")));
    }
    req.name[..bytes.len()].copy_from_slice(bytes);
    // SAFETY: TUNSETIFF reads (and writes back) an ifreq, which `req` is laid out as.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF as _, &mut req as *mut IfReq) };
    if r < 0 {
        return Err(NetError::Setup(format!(
            "cannot create TUN device {name}: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(fd)
}

/// Reads both devices until told to stop; each packet goes to the scheduler stamped.
pub(super) fn io_thread(
    client: OwnedFd,
    server: OwnedFd,
    shared: Arc<Shared>,
    tx: SyncSender<Event>,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        shared.stop.store(true, Ordering::Relaxed);
        return;
    };
    rt.block_on(async move {
        let readable = |fd: OwnedFd| {
            // SAFETY: an OwnedFd stays open, and is the same descriptor, while it lives.
            unsafe {
                tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
            }
        };
        let (Ok(client), Ok(server)) = (readable(client), readable(server)) else {
            shared.stop.store(true, Ordering::Relaxed);
            return;
        };
        let mut buf = vec![0u8; READ_BUFFER];
        let mut stop = stop;
        loop {
            let (ready, down) = tokio::select! {
                _ = &mut stop => return,
                r = client.readable() => (r, false),
                r = server.readable() => (r, true),
            };
            let Ok(mut guard) = ready else {
                shared.stop.store(true, Ordering::Relaxed);
                return;
            };
            // Drain what is there; a packet per read.
            loop {
                let fd = guard.get_inner().as_raw_fd();
                // SAFETY: reading into a buffer we own, of its length.
                let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
                if n < 0 {
                    // Would block: wait for readiness again. Another error (the device
                    // going away as the link stops): the same, after a pause, so it
                    // cannot spin.
                    let e = std::io::Error::last_os_error();
                    guard.clear_ready();
                    if e.kind() != std::io::ErrorKind::WouldBlock {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    break;
                }
                let at = Instant::now();
                let event = Event::Packet {
                    down,
                    at,
                    data: buf[..n as usize].to_vec(),
                };
                match tx.try_send(event) {
                    Ok(()) => {}
                    Err(TrySendError::Full(_)) => {
                        let c = if down {
                            &shared.overload_down
                        } else {
                            &shared.overload_up
                        };
                        c.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(TrySendError::Disconnected(_)) => return,
                }
            }
        }
    });
}

/// Writes one packet into a device (the kernel takes it at once; a full device queue is
/// retried briefly, then counted as a send error).
pub(super) fn write_packet(fd: &OwnedFd, data: &[u8]) -> bool {
    for _ in 0..1000 {
        // SAFETY: writing a buffer we own, of its length.
        let n = unsafe { libc::write(fd.as_raw_fd(), data.as_ptr().cast(), data.len()) };
        if n >= 0 {
            return true;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::WouldBlock {
            return false;
        }
        std::thread::yield_now();
    }
    false
}
