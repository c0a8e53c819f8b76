//! The interval rows (iperf3's table): every `-i` the bytes moved, the rate, the RTT,
//! the congestion window and the losses of the last interval, made by a task beside the
//! transfer so that the transfer's loop does nothing per row.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use quinn::Connection;
use satquic_run::probe::{ProbeHandle, read_probe};

use super::transfer::Progress;
use super::{IntervalCallback, IntervalRow, lock, secs};

/// The task making interval rows while the transfer runs (none without `-i`).
pub(super) struct IntervalTicker {
    done: Arc<AtomicBool>,
    rows: Arc<Mutex<Vec<IntervalRow>>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl IntervalTicker {
    /// Starts the task when `interval` is given; `on_row` sees each row as it is made.
    pub(super) fn start(
        interval: Option<Duration>,
        conn: &Connection,
        progress: &Arc<Progress>,
        probe: &ProbeHandle,
        on_row: Option<IntervalCallback>,
    ) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let rows = Arc::new(Mutex::new(Vec::new()));
        let task = interval.map(|every| {
            tokio::spawn(ticker(
                every,
                conn.clone(),
                progress.clone(),
                done.clone(),
                rows.clone(),
                probe.clone(),
                on_row,
            ))
        });
        IntervalTicker { done, rows, task }
    }

    /// Ends the task once the transfer has (it makes the last, partial row) and returns
    /// the rows.
    pub(super) async fn finish(self) -> Vec<IntervalRow> {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.task {
            let _ = t.await;
        }
        std::mem::take(&mut *lock(&self.rows))
    }
}

async fn ticker(
    every: Duration,
    conn: Connection,
    progress: Arc<Progress>,
    done: Arc<AtomicBool>,
    rows: Arc<Mutex<Vec<IntervalRow>>>,
    probe: ProbeHandle,
    mut on_row: Option<IntervalCallback>,
) {
    let mut last_bytes = 0u64;
    let mut last_lost = 0u64;
    let mut last_t = Duration::ZERO;
    let mut next = progress.start + every;
    loop {
        // Wake at the interval's end, or early when the transfer ends (checked often).
        while Instant::now() < next {
            if done.load(Ordering::Relaxed) {
                break;
            }
            let step = next
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(20));
            tokio::time::sleep(step).await;
        }
        let finished = done.load(Ordering::Relaxed);
        let t = progress.start.elapsed();
        let bytes = progress.bytes.load(Ordering::Relaxed);
        let stats = conn.stats();
        let span = t.saturating_sub(last_t);
        if span >= Duration::from_millis(1) || !finished {
            let delta = bytes - last_bytes.min(bytes);
            let p = read_probe(&probe);
            let row = IntervalRow {
                start_s: secs(last_t),
                end_s: secs(t),
                bytes: delta,
                rate_bps: if span.is_zero() {
                    0.0
                } else {
                    delta as f64 * 8.0 / secs(span)
                },
                rtt_s: Some(secs(conn.rtt())),
                cwnd_bytes: (p.sent_bytes > 0).then_some(stats.path.cwnd),
                lost_packets: stats.path.lost_packets - last_lost.min(stats.path.lost_packets),
            };
            if let Some(f) = on_row.as_mut() {
                f(&row);
            }
            lock(&rows).push(row);
        }
        if finished {
            return;
        }
        last_bytes = bytes;
        last_lost = stats.path.lost_packets;
        last_t = t;
        next += every;
    }
}
