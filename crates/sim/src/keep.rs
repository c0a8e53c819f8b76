//! What a run keeps for its record: the series on the sampling grid, the controllers'
//! events (samples thinned to the grid, the RTT and bottleneck state at a slow-start
//! exit), and, when the loop has ended, the record itself ([`satquic_run::record`]).
//! Apart from the event loop ([`crate::engine`]) because none of it changes what the
//! simulated endpoints do.

use std::time::Duration;

use satquic_cc::CcEvent;
use satquic_link::Path;
use satquic_run::probe::read_probe;
use satquic_run::record::{
    self, ChunkRow, FlowEvent, FlowStatus, LinkObservation, RunRecord, SeriesRow,
};

use crate::engine::{Packet, RunOutput, SERIES_STEP, Simulation};
use crate::flow::FlowRt;

/// Trailing window over which the series' delivery rate is measured.
const DELIVERY_RATE_WINDOW: Duration = Duration::from_millis(100);

impl Simulation {
    /// One series row per running flow at grid point `t`.
    pub(crate) fn sample(&mut self, t: Duration) {
        let queue_bytes = self.net.path.down.queue_bytes();
        let link_departed_bytes = Some(self.net.path.down.stats().departed.bytes);
        for f in &mut self.flows {
            if f.status != FlowStatus::Running {
                continue;
            }
            let p = read_probe(&f.probe);
            f.acked_history.push_back((t, p.acked_bytes));
            while f
                .acked_history
                .front()
                .is_some_and(|(t0, _)| t.saturating_sub(*t0) > DELIVERY_RATE_WINDOW)
            {
                f.acked_history.pop_front();
            }
            let delivery_rate_bps = match f.acked_history.front() {
                Some(&(t0, a0)) if t > t0 => {
                    ((p.acked_bytes - a0) as f64 * 8.0 / (t - t0).as_secs_f64()).round() as u64
                }
                _ => 0,
            };
            self.series.push(SeriesRow {
                time_s: t.as_secs_f64(),
                flow: f.index,
                cwnd_bytes: p.cwnd,
                in_flight_bytes: p.in_flight,
                latest_rtt_s: p.latest_rtt.map(|d| d.as_secs_f64()),
                smoothed_rtt_s: p.smoothed_rtt.map(|d| d.as_secs_f64()),
                delivery_rate_bps,
                queue_bytes,
                delivered_bytes: f.reader.received,
                link_departed_bytes,
            });
        }
    }

    /// The record of the run, once its loop has ended.
    pub(crate) fn finish(mut self) -> RunOutput {
        let end = self.end;
        let truth = self.net.path.down.finish(end).clone();
        self.net.path.up.finish(end);
        let down_stats = self.net.path.down.stats().clone();
        let up_stats = self.net.path.up.stats().clone();
        let mut flows = Vec::with_capacity(self.flows.len());
        let mut chunks = Vec::new();
        let mut received_chunks = Vec::new();
        let mut events = Vec::new();
        let mut exporters = Vec::new();
        let mut stack_qlogs = Vec::new();
        for f in &mut self.flows {
            // Drain what the sink got after the last collection.
            for e in f.events_sink.take() {
                push_event(f, e);
            }
            for (rows, times) in [
                (&mut chunks, &f.reader.mb_times),
                (&mut received_chunks, &f.reader.received_mb_times),
            ] {
                let since_start = times
                    .iter()
                    .map(|t| t.saturating_sub(f.start).as_secs_f64());
                rows.extend(ChunkRow::of_flow(f.index, since_start));
            }
            for e in &f.events {
                events.push(FlowEvent {
                    flow: f.index,
                    event: e.clone(),
                });
            }
            exporters.push(f.exporter.filter(|_| self.options.tls_exporter));
            if let Some(qlog) = &f.qlog {
                stack_qlogs.extend(qlog.finish(f.index, f.upload));
            }
            let probe = f
                .final_probe
                .clone()
                .unwrap_or_else(|| read_probe(&f.probe));
            flows.push(record::FlowInput {
                index: f.index,
                start: f.start,
                workload: f.workload.clone(),
                cc: f.transport.cc.to_string(),
                status: f.status.clone(),
                capped: f.capped,
                delivered_bytes: f.reader.received,
                connected_at: f.connected_at,
                completed_at: f.reader.completed_at,
                ended_at: f.ended_at.unwrap_or(end),
                stats: f.final_stats,
                first_rtt: probe.first_rtt,
                first_loss_detected: probe.first_congestion,
                events: f.events.clone(),
                rtt_at_exit: f.rtt_at_exit,
                rtt_at_shadow_exit: f.rtt_at_shadow_exit,
                busy_since_at_exit: f.busy_since_at_exit,
                busy_since_at_shadow_exit: f.busy_since_at_shadow_exit,
                drops: f.drops.clone(),
                bottleneck: std::mem::take(&mut f.bottleneck),
                stream_receive_window_end: f.final_receive_window,
            });
        }
        let link = LinkObservation {
            truth: &truth,
            down: &down_stats,
            up: &up_stats,
            epoch: Duration::ZERO,
        };
        let summary = record::summarize(&self.scenario, end, &flows, &link, &self.series);
        RunOutput {
            record: RunRecord {
                summary,
                chunks,
                received_chunks,
                events,
                series: self.series,
                sim_time: end,
            },
            trace: self.trace.entries,
            datagrams: self.trace.bytes,
            stack_qlogs,
            tls_exporter: exporters,
        }
    }
}

/// Moves new controller events into the flow's list (thinning `Sample`s to one per
/// series step) and notes the RTT and bottleneck state at a slow-start exit.
pub(crate) fn collect_events(f: &mut FlowRt, path: &Path<Packet>) {
    let new = f.events_sink.take();
    if new.is_empty() {
        return;
    }
    let probe = read_probe(&f.probe);
    let busy = path.down.ground_truth().busy_since();
    for e in new {
        if let CcEvent::SlowStartExit { shadow, .. } = &e {
            if *shadow {
                if f.rtt_at_shadow_exit.is_none() {
                    f.rtt_at_shadow_exit = probe.smoothed_rtt;
                    f.busy_since_at_shadow_exit = busy;
                }
            } else if f.rtt_at_exit.is_none() {
                f.rtt_at_exit = probe.smoothed_rtt;
                f.busy_since_at_exit = busy;
            }
        }
        push_event(f, e);
    }
}

/// Keeps a controller event, thinning `Sample`s to one per series step.
fn push_event(f: &mut FlowRt, e: CcEvent) {
    if let CcEvent::Sample { at, .. } = e {
        if at < f.next_sample_event {
            return;
        }
        // Next grid point strictly after this sample.
        let step = SERIES_STEP.as_nanos();
        let k = at.as_nanos() / step + 1;
        f.next_sample_event = Duration::from_nanos((k * step) as u64);
    }
    f.events.push(e);
}
