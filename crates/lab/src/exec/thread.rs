//! One run on its own thread: the executor waits for its result at most the spec's
//! wall-clock timeout, asking [`ExecOptions::stop`](super::ExecOptions::stop) every
//! [`STOP_POLL`] meanwhile, and cancels a simulation it no longer waits for so that it
//! does not keep a core busy.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use satquic_run::record::{RunRecord, Timing};

use super::{STOP_POLL, Target};
use crate::plan::PlannedRun;
use crate::spec::Mode;

/// The outcome of executing one run.
pub(super) enum Executed {
    /// The record, for emulated runs the timing the run measured itself, and for
    /// simulated runs with a qlog the per-connection qlog files (`(name, contents)`).
    Record(Box<RunRecord>, Option<Timing>, Vec<(String, Vec<u8>)>),
    Failed(String),
    TimedOut(Duration),
    /// [`ExecOptions::stop`] answered true while the run was in flight: cancelled, and
    /// neither stored nor shown to the hook.
    Abandoned,
}

/// Runs one scenario on its own thread, waiting at most `timeout`.
pub(super) fn execute(
    run: &PlannedRun,
    timeout: Option<Duration>,
    target: &Target,
) -> (Executed, Duration) {
    let (packet_cipher, qlog) = (target.packet_cipher, target.qlog);
    let started = Instant::now();
    let scenario = run.scenario.clone();
    let mode = run.mode;
    let (tx, rx) = std::sync::mpsc::channel();
    let cancel = Arc::new(AtomicBool::new(false));
    let options = satquic_sim::RunOptions {
        cancel: Some(cancel.clone()),
        packet_cipher,
        stack_qlog: qlog,
        ..Default::default()
    };
    let spawned = std::thread::Builder::new()
        .name(format!("satquic-run-{}", run.index))
        .spawn(move || {
            let result = std::panic::catch_unwind(|| match mode {
                Mode::Sim => satquic_sim::run_with(&scenario, &options)
                    .map(|o| {
                        let files =
                            satquic_run::qlog::connection_qlog_files(&o.record, &o.stack_qlogs);
                        (o.record, None, files)
                    })
                    .map_err(|e| match e {
                        satquic_sim::SimError::Invalid(msg) => format!("invalid scenario: {msg}"),
                        other => other.to_string(),
                    }),
                Mode::Emulated => satquic_net::emulated::run_emulated(&scenario)
                    .map(|e| (e.record, Some(e.timing), Vec::new()))
                    .map_err(|e| format!("emulated run: {e}")),
            });
            let _ = tx.send(result);
        });
    if let Err(e) = spawned {
        return (
            Executed::Failed(format!("cannot start a run thread: {e}")),
            started.elapsed(),
        );
    }
    let received = match wait(&rx, timeout, target.stop) {
        Waited::Stopped => {
            // Stop a simulation thread at once; an emulated run ends with the process.
            cancel.store(true, Ordering::Relaxed);
            return (Executed::Abandoned, started.elapsed());
        }
        Waited::Received(r) => r,
    };
    let outcome = match received {
        Ok(Ok(Ok((record, timing, files)))) => Executed::Record(Box::new(record), timing, files),
        Ok(Ok(Err(e))) => Executed::Failed(e),
        Ok(Err(panic)) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Executed::Failed(format!("panic: {msg}"))
        }
        Err(true) => {
            // Stop a simulation thread so it does not keep a core busy after its row is
            // written (an emulated run ends at its own time cap).
            cancel.store(true, Ordering::Relaxed);
            Executed::TimedOut(timeout.unwrap_or_default())
        }
        Err(false) => Executed::Failed("the run thread ended without a result".into()),
    };
    (outcome, started.elapsed())
}

/// How waiting for a run thread ended.
enum Waited<T> {
    /// Its result; `Err(true)`: the timeout passed first, `Err(false)`: the thread ended
    /// without one.
    Received(Result<T, bool>),
    /// [`ExecOptions::stop`] answered true first.
    Stopped,
}

/// Waits for the run thread's result at most `timeout`, asking `stop` every
/// [`STOP_POLL`].
fn wait<T>(
    rx: &std::sync::mpsc::Receiver<T>,
    timeout: Option<Duration>,
    stop: Option<fn() -> bool>,
) -> Waited<T> {
    use std::sync::mpsc::RecvTimeoutError;
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        if stop.is_some_and(|stop| stop()) {
            return Waited::Stopped;
        }
        let left = deadline.map_or(STOP_POLL, |d| {
            d.saturating_duration_since(Instant::now()).min(STOP_POLL)
        });
        match rx.recv_timeout(left) {
            Ok(r) => return Waited::Received(Ok(r)),
            Err(RecvTimeoutError::Disconnected) => return Waited::Received(Err(false)),
            Err(RecvTimeoutError::Timeout) => {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Waited::Received(Err(true));
                }
            }
        }
    }
}
