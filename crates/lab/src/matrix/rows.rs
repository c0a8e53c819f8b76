//! A matrix run's row of runs.csv: its identity, link and workload columns before it
//! runs, then what its cell measured (QUIC: the client's time, goodput and efficiency;
//! kernel TCP: also seed 003's slow-start columns, classified as the simulator's rows).
//! Apart from running the cells ([`super::execute`]) because these are pure functions of
//! what a cell returned, tested without a network.

use std::time::Duration;

use satquic_link::LinkSpec;
use satquic_net::peers::CellOutcome;

use super::{MatrixRun, MatrixSpec};
use crate::dataset::Row;

/// The row of a run before it runs: identity, link and workload columns.
pub fn row(spec: &MatrixSpec, run: &MatrixRun, link: &LinkSpec) -> Row {
    let bytes = if run.tcp { spec.tcp_size() } else { spec.bytes };
    Row {
        index: run.index,
        run_id: run.run_id.clone(),
        campaign: spec.name.clone(),
        mode: "matrix".into(),
        link: run.preset.clone(),
        link_source: run.preset.clone(),
        variant: run.pair(),
        cc: run.cc.clone(),
        workload: crate::spec::size_label(bytes),
        workload_kind: "download".into(),
        bytes: Some(bytes),
        flows: 1,
        rep: run.rep,
        seed: run.seed,
        time_cap_s: spec.time_cap.as_secs_f64(),
        client_impl: Some(run.client.clone()),
        server_impl: Some(run.server.clone()),
        transport: Some(if run.tcp { "tcp" } else { "quic" }.into()),
        ..Row::with_link(link)
    }
}

/// A row with what the cell measured.
pub(super) fn outcome_row(base: Row, o: &CellOutcome) -> Row {
    let mut row = Row {
        status: o.status.clone(),
        reason: o.reason.replace(['\n', '\r'], " "),
        delivered_bytes: o.delivered_bytes,
        flows_completed: Some(u32::from(o.status == "completed")),
        ..base
    };
    if let Some(l) = &o.link {
        row.drops_congestion = Some(l.drops_congestion);
        row.drops_random = Some(l.drops_random);
        row.first_drop_at_s = l.first_drop_at_s;
        row.queue_p50_ms = l.queue_delay.map(|q| q.p50_ms);
        row.queue_p95_ms = l.queue_delay.map(|q| q.p95_ms);
    }
    if let Some(t) = o.client_time {
        let secs = t.as_secs_f64();
        let bytes = row.bytes.unwrap_or(0) as f64;
        let goodput = bytes * 8.0 / secs.max(1e-9);
        row.completion_time_s = Some(secs);
        row.sim_time_s = Some(secs);
        row.goodput_bps = Some(goodput);
        row.total_goodput_bps = Some(goodput);
        let rate = row.down_rate_bps as f64;
        row.efficiency = (rate > 0.0).then(|| goodput / rate);
        row.utilization = row.efficiency;
        row.jain_index = Some(1.0);
    }
    row
}

/// A kernel TCP row with what the cell measured, classified as the simulator's rows are.
pub(super) fn tcp_row(base: Row, o: &satquic_net::tcp::TcpOutcome) -> Row {
    use crate::analysis::{capacity_from_latency_offset, classify};
    let mut row = outcome_row(
        base,
        &CellOutcome {
            status: o.status.clone(),
            reason: o.reason.clone(),
            client_time: o.completion_s.map(Duration::from_secs_f64),
            delivered_bytes: o.delivered_bytes,
            progress: Default::default(),
            link: None,
        },
    );
    let e = &o.exit;
    row.exit_at_s = e.exit_at_s;
    row.exit_reason = e
        .exit_at_s
        .map(|_| if e.exit_by_loss { "loss" } else { "hystart" }.to_string());
    row.exit_cwnd_before = e.cwnd_before_bytes;
    row.exit_ssthresh = e.ssthresh_bytes;
    row.exit_rtt_s = e.rtt_at_exit_ms.map(|ms| ms / 1e3);
    row.first_loss_detected_at_s = e.first_loss_at_s;
    row.capacity_at_s = o.capacity_at_s;
    row.capacity_source = o.capacity_source.clone();
    row.min_rtt_s = o.min_rtt_s;
    row.max_queue_bytes = o.max_queue_bytes;
    row.drops_congestion = o.drops_congestion;
    row.drops_random = o.drops_random;
    row.packets_lost = o.retransmits;
    if o.samples > 0 {
        let classes = |capacity: Option<f64>| {
            // Variants without a slow-start exit (BBR) have no class.
            o.exit_signal
                .then(|| classify(e.exit_at_s, e.exit_by_loss, e.first_loss_at_s, capacity))
                .map(|c| c.as_str().to_string())
        };
        row.exit_class = classes(o.capacity_at_s);
        row.owd_capacity_at_s = o
            .min_rtt_s
            .and_then(|min| capacity_from_latency_offset(&o.rtt_offsets, min));
        row.owd_exit_class = classes(row.owd_capacity_at_s);
        if let (Some(x), Some(l), Some(rtt)) = (e.exit_at_s, e.first_loss_at_s, row.exit_rtt_s)
            && rtt > 0.0
        {
            row.exit_to_loss_ratio = Some((l - x) / rtt);
        }
    }
    row
}
