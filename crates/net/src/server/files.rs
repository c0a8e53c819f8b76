//! The files a server keeps while it runs: the Careful Resume store (`--resume-store`,
//! `resume.rs`) and the record of used tokens (`--token-key`, `used_tokens.rs`). Each is
//! written at start (which proves it writable before the server listens), whenever it
//! changed, at most once a [`FILE_WRITE_INTERVAL`], and at shutdown
//! ([`Server::shut_down`](super::Server::shut_down), which `satquic server` runs on SIGINT
//! and SIGTERM). A kill -9 loses at most the last interval's changes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::{ServerState, resume};
use crate::NetError;

/// The files are written at most this often while they change.
pub const FILE_WRITE_INTERVAL: Duration = Duration::from_secs(1);

/// Writes every file that changed since its last write; `stopped`: the server accepts no
/// more connections (the record of used tokens is then complete).
pub(super) fn write_all(state: &ServerState, stopped: bool) -> Result<(), NetError> {
    resume::write_store(state)?;
    state.used_tokens.write(stopped)
}

/// Writes the files whenever they changed, at most once a [`FILE_WRITE_INTERVAL`], for as
/// long as the server serves (pends for ever without files). A write that fails is said
/// on stderr once, and tried again at the next interval.
pub(super) async fn keep_written(state: Arc<ServerState>) {
    if !state.keeps_files() {
        return std::future::pending().await;
    }
    let failing = AtomicBool::new(false);
    let mut tick = tokio::time::interval(FILE_WRITE_INTERVAL);
    loop {
        tick.tick().await;
        let writer = state.clone();
        match tokio::task::spawn_blocking(move || write_all(&writer, false)).await {
            Ok(Ok(())) => failing.store(false, Ordering::Relaxed),
            Ok(Err(e)) => {
                if !failing.swap(true, Ordering::Relaxed) {
                    eprintln!("satquic server: {e}; trying again every second");
                }
            }
            Err(_) => {}
        }
    }
}
