//! The dataset: `runs.csv` (one row per run) and the per-run directories.
//!
//! [`Row`] is the schema; its field docs are the column docs (units in the names). Empty
//! cells are missing values (pandas reads them as NaN). Per-flow columns describe flow 0
//! (the only flow of single-flow workloads); `total_goodput_bps`, `utilization` and
//! `jain_index` cover all flows. Nothing machine-dependent is in a row (wall-clock time
//! goes to each run's `timing.json`), so the same spec and seeds give the same runs.csv
//! (except for `bbr` runs: quinn's BBR draws from the thread RNG, see satquic-sim;
//! `bbr3` runs are reproducible).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use satquic_link::{LinkSpec, QueueLimit};
use satquic_run::{RunRecord, Workload};

use crate::analysis;
use crate::plan::PlannedRun;
use crate::spec::Delivery;

/// One row of `runs.csv`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Row {
    // --- identity and scenario ---
    /// Position in the plan (runs.csv is sorted by it).
    pub index: usize,
    /// The run's directory under `runs/`.
    pub run_id: String,
    /// Campaign name.
    pub campaign: String,
    /// `sim`, `emulated` or `matrix`.
    pub mode: String,
    /// Link label (`geo-viasat`, `thesis-sat:buffer=0.5,plr=0.001`, a file's stem).
    pub link: String,
    /// Preset name without parameters, or the link file.
    pub link_source: String,
    /// Swept preset parameters, `key=value` joined by `;`.
    pub link_params: String,
    /// The `buffer` parameter (queue as a multiple of the BDP), if given.
    pub buffer_bdp: Option<f64>,
    /// Mean random loss rate of the down direction (fraction).
    pub plr: f64,
    /// Nominal down and up rates, bit/s.
    pub down_rate_bps: u64,
    pub up_rate_bps: u64,
    /// Base (propagation) round-trip time, seconds.
    pub base_rtt_s: f64,
    /// Down queue limit, resolved (bytes or packets, whichever the link uses).
    pub down_queue_bytes: Option<u64>,
    pub down_queue_packets: Option<u64>,
    /// Variant label and its congestion-control spec.
    pub variant: String,
    pub cc: String,
    /// Transport settings of the variant (bytes; `initial_window` empty = controller's).
    pub initial_window: Option<u64>,
    pub receive_window: u64,
    pub stream_receive_window: u64,
    pub send_window: u64,
    pub initial_rtt_s: Option<f64>,
    pub mtu: u16,
    /// Rate cap at the server in bit/s (the seeds' tc TBF); empty = no cap.
    pub sender_cap_bps: Option<u64>,
    /// Workload label, kind (`download`, `upload`, `timed` or `beam`), size per flow or
    /// duration per flow (a beam's window).
    pub workload: String,
    pub workload_kind: String,
    pub bytes: Option<u64>,
    pub duration_s: Option<f64>,
    /// Number of flows (a beam's: bulk flows and objects) and the gap between their
    /// starts, seconds.
    pub flows: u32,
    pub stagger_s: f64,
    /// Repetition (from 0) and the run's seed.
    pub rep: u32,
    pub seed: u64,
    pub time_cap_s: f64,

    // --- outcome ---
    /// `completed`, `capped` (time cap reached), `failed` (connection or setup failure,
    /// panic; see `reason`) or `timeout` (wall-clock `timeout` of the spec exceeded);
    /// matrix runs also `incompatible` (the pair cannot talk) and `skipped` (an
    /// implementation is not installed), see [`crate::matrix`].
    pub status: String,
    /// Why a run failed or timed out; empty otherwise.
    pub reason: String,
    /// Simulated seconds until the run ended.
    pub sim_time_s: Option<f64>,

    // --- flow 0 ---
    /// Bytes the client application received.
    pub delivered_bytes: Option<u64>,
    /// Seconds from the flow's start to the last byte (completed flows).
    pub completion_time_s: Option<f64>,
    pub handshake_time_s: Option<f64>,
    /// delivered bytes x 8 / elapsed, bit/s.
    pub goodput_bps: Option<f64>,
    /// goodput / nominal down rate (seed 002 Eq. 1).
    pub efficiency: Option<f64>,
    pub packets_sent: Option<u64>,
    pub packets_lost: Option<u64>,
    pub bytes_lost: Option<u64>,
    pub congestion_events: Option<u64>,
    /// First RTT sample and minimum RTT at the sender, seconds.
    pub first_rtt_s: Option<f64>,
    pub min_rtt_s: Option<f64>,
    /// When the link first dropped one of the flow's packets (any reason), seconds.
    pub first_drop_at_s: Option<f64>,
    /// Link drops of the flow's down packets caused by the queue (full or AQM) and by
    /// random loss processes.
    pub drops_congestion: Option<u64>,
    pub drops_random: Option<u64>,
    /// When the sender first learned of a loss, seconds.
    pub first_loss_detected_at_s: Option<f64>,
    /// The (non-shadow) slow-start exit: time, reason (`loss`, `search`, `hystart++`,
    /// `hystart-delay`, `hystart-ack-train`), cwnd before and after, ssthresh (bytes),
    /// smoothed RTT at exit.
    pub exit_at_s: Option<f64>,
    pub exit_reason: Option<String>,
    pub exit_cwnd_before: Option<u64>,
    pub exit_cwnd_after: Option<u64>,
    pub exit_ssthresh: Option<u64>,
    pub exit_rtt_s: Option<f64>,
    /// (cwnd before - cwnd after) / cwnd before of a non-loss exit (seed 001 Fig. 10).
    pub cwnd_reduction_ratio: Option<f64>,
    /// Where SEARCH in shadow mode would have exited, and its cwnd then.
    pub shadow_exit_at_s: Option<f64>,
    pub shadow_exit_cwnd: Option<u64>,
    /// Capacity point from the simulator's ground truth and where it came from.
    pub capacity_at_s: Option<f64>,
    pub capacity_source: Option<String>,
    /// Seed 003's classes with the ground-truth capacity: `early`, `chokepoint`, `late`,
    /// `none` (no exit, no loss).
    pub exit_class: Option<String>,
    pub shadow_exit_class: Option<String>,
    /// (first loss detected - exit) / RTT at exit (seed 000 Fig. 8).
    pub exit_to_loss_ratio: Option<f64>,
    pub shadow_exit_to_loss_ratio: Option<f64>,
    /// Capacity point from the latency-offset heuristic of seed 003 Sec. V-B applied to
    /// the run's RTT series (offset = RTT - min RTT), and the classes it gives.
    pub owd_capacity_at_s: Option<f64>,
    pub owd_exit_class: Option<String>,
    pub owd_shadow_exit_class: Option<String>,
    /// Largest down-queue occupancy, bytes.
    pub max_queue_bytes: Option<u64>,
    /// Median and 95th percentile of the time flow 0's data packets waited in the
    /// bottleneck's queue over the whole flow, milliseconds: the link's ground truth
    /// (RTT minus the base RTT, without jitter; matrix QUIC cells: the relay's books of
    /// the download); empty where nothing measured it (kernel TCP cells).
    #[serde(default)]
    pub queue_p50_ms: Option<f64>,
    #[serde(default)]
    pub queue_p95_ms: Option<f64>,

    // --- all flows ---
    /// Flows that completed.
    pub flows_completed: Option<u32>,
    /// Sum of the flows' goodputs, bit/s; / nominal down rate.
    pub total_goodput_bps: Option<f64>,
    pub utilization: Option<f64>,
    /// Jain's fairness index of the flows' goodputs (seed 004 Eq. 6.3); 1 for one flow.
    pub jain_index: Option<f64>,

    // --- resumed runs (a workload's `resume_after`; flow 0 is then the resumed one) ---
    /// The first connection's completion time, seconds.
    pub first_completion_time_s: Option<f64>,
    /// Careful Resume's jump window, bytes (empty: no jump).
    pub resume_jump_cwnd: Option<u64>,

    // --- implementation matrix (`satquic matrix`; empty for satquic's own runs) ---
    /// The implementation that ran the client and the server (adapter names).
    #[serde(default)]
    pub client_impl: Option<String>,
    #[serde(default)]
    pub server_impl: Option<String>,
    /// `quic` for a client x server pair, `tcp` for a kernel TCP variant through
    /// `satquic link --tun` (client_impl = server_impl = the variant).
    #[serde(default)]
    pub transport: Option<String>,
}

/// Column names of runs.csv, in order.
pub fn header() -> Vec<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.serialize(Row::default()).expect("rows serialize");
    let bytes = w.into_inner().expect("in memory");
    let text = String::from_utf8(bytes).expect("utf-8");
    text.lines()
        .next()
        .unwrap_or_default()
        .split(',')
        .map(str::to_string)
        .collect()
}

impl Row {
    /// A row with only the columns that describe `link` filled in: its loss rate, rates,
    /// base RTT and the down queue's limit (bytes or packets, as the link states it).
    pub fn with_link(link: &LinkSpec) -> Row {
        let (down_queue_bytes, down_queue_packets) = match link.resolved().down.queue.limit {
            QueueLimit::Bytes(b) => (Some(b), None),
            QueueLimit::Packets(p) => (None, Some(p)),
            QueueLimit::Bdp(_) => (None, None),
        };
        Row {
            plr: link.down.loss.mean_loss_rate(),
            down_rate_bps: link.down.rate.nominal_rate_bps(),
            up_rate_bps: link.up.rate.nominal_rate_bps(),
            base_rtt_s: link.base_rtt().as_secs_f64(),
            down_queue_bytes,
            down_queue_packets,
            ..Row::default()
        }
    }
}

/// The scenario part of a row (everything known before running).
pub fn planned_row(campaign: &str, run: &PlannedRun) -> Row {
    let link = &run.scenario.link;
    let t = &run.scenario.flows[0].transport;
    Row {
        index: run.index,
        run_id: run.run_id.clone(),
        campaign: campaign.to_string(),
        mode: run.mode.as_str().to_string(),
        link: run.link.label.clone(),
        link_source: run.link.source.clone(),
        link_params: run
            .link
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(";"),
        buffer_bdp: run.link.params.get("buffer").and_then(|v| v.parse().ok()),
        variant: run.variant.clone(),
        cc: flow_ccs(&run.scenario),
        initial_window: t.initial_window,
        receive_window: t.receive_window,
        stream_receive_window: t.stream_receive_window,
        send_window: t.send_window,
        initial_rtt_s: t.initial_rtt.map(|d| d.as_secs_f64()),
        mtu: t.mtu,
        sender_cap_bps: t.sender_shaper.as_ref().map(|s| s.rate_bps),
        workload: run.workload.label.clone(),
        workload_kind: match run.scenario.flows[0].workload {
            _ if run.workload.beam.is_some() => "beam".into(),
            Workload::Download { .. } if !run.scenario.flows[0].direction.is_download() => {
                "upload".into()
            }
            Workload::Download { .. } => "download".into(),
            Workload::Timed { .. } => "timed".into(),
        },
        bytes: run.workload.bytes,
        duration_s: run.workload.duration.map(|d| d.as_secs_f64()),
        flows: run.scenario.flows.len() as u32,
        stagger_s: run.workload.stagger.as_secs_f64(),
        rep: run.rep,
        seed: run.seed,
        time_cap_s: run.scenario.time_cap.as_secs_f64(),
        ..Row::with_link(link)
    }
}

/// A failed or timed-out run.
pub fn failed_row(campaign: &str, run: &PlannedRun, status: &str, reason: &str) -> Row {
    Row {
        status: status.to_string(),
        reason: reason.replace(['\n', '\r'], " "),
        ..planned_row(campaign, run)
    }
}

/// A finished run: the scenario columns and the record's metrics.
pub fn record_row(campaign: &str, run: &PlannedRun, record: &RunRecord) -> Row {
    let mut row = planned_row(campaign, run);
    let s = &record.summary;
    row.status = s.outcome.clone();
    row.sim_time_s = Some(s.sim_time_s);
    row.max_queue_bytes = Some(s.link.max_queue_bytes);
    // Efficiency and utilisation are against the data direction's rate (up for uploads).
    let rate = if row.workload_kind == "upload" {
        row.up_rate_bps
    } else {
        row.down_rate_bps
    } as f64;
    if let Some(f) = s.flows.first() {
        if let Some(e) = &f.error {
            row.reason = e.replace(['\n', '\r'], " ");
        }
        row.delivered_bytes = Some(f.delivered_bytes);
        row.completion_time_s = f.completion_time_s;
        row.handshake_time_s = f.handshake_time_s;
        row.goodput_bps = Some(f.goodput_bps);
        row.efficiency = (rate > 0.0).then(|| f.goodput_bps / rate);
        row.first_completion_time_s = f
            .first_connection
            .as_ref()
            .and_then(|c| c.completion_time_s);
        row.resume_jump_cwnd = f.resumption.as_ref().and_then(|r| r.jump_cwnd);
        row.packets_sent = Some(f.packets_sent);
        row.packets_lost = Some(f.packets_lost);
        row.bytes_lost = Some(f.bytes_lost);
        row.congestion_events = Some(f.congestion_events);
        row.first_rtt_s = f.first_rtt_s;
        row.min_rtt_s = f.min_rtt_s;
        row.first_drop_at_s = f.first_drop_at_s;
        let by = |names: &[&str]| -> u64 {
            f.link_drops
                .iter()
                .filter(|(k, _)| names.contains(&k.as_str()))
                .map(|(_, n)| *n)
                .sum()
        };
        row.drops_congestion = Some(by(&["queue_full", "aqm"]));
        row.drops_random = Some(by(&["random_loss", "burst_loss"]));
        row.first_loss_detected_at_s = f.first_loss_detected_at_s;
        row.queue_p50_ms = f.queue_delay.map(|q| q.p50_ms);
        row.queue_p95_ms = f.queue_delay.map(|q| q.p95_ms);
        if let Some(e) = &f.slow_start_exit {
            row.exit_at_s = Some(e.at_s);
            row.exit_reason = Some(exit_reason_name(&e.reason));
            row.exit_cwnd_before = Some(e.cwnd_before);
            row.exit_cwnd_after = Some(e.cwnd_after);
            row.exit_ssthresh = Some(e.ssthresh);
            row.exit_rtt_s = e.rtt_s;
            if row.exit_reason.as_deref() != Some("loss") && e.cwnd_before > 0 {
                row.cwnd_reduction_ratio =
                    Some((e.cwnd_before as f64 - e.cwnd_after as f64) / e.cwnd_before as f64);
            }
        }
        if let Some(e) = &f.shadow_exit {
            row.shadow_exit_at_s = Some(e.at_s);
            row.shadow_exit_cwnd = Some(e.cwnd_before);
        }
        row.capacity_at_s = f.capacity_at_s;
        row.capacity_source = f.capacity_source.clone();
        row.exit_class = Some(f.exit_class.clone());
        row.shadow_exit_class = f.shadow_exit_class.clone();
        row.exit_to_loss_ratio = f.exit_to_loss_ratio;
        row.shadow_exit_to_loss_ratio = f.shadow_exit_to_loss_ratio;

        let offsets = analysis::latency_offsets(
            record
                .series
                .iter()
                .filter(|r| r.flow == f.flow)
                .filter_map(|r| r.latest_rtt_s.map(|rtt| (r.time_s, rtt))),
        );
        if let Some(min_rtt) = f.min_rtt_s {
            row.owd_capacity_at_s = analysis::capacity_from_latency_offset(&offsets, min_rtt);
            let loss = row.first_loss_detected_at_s;
            row.owd_exit_class = Some(
                analysis::classify(
                    row.exit_at_s,
                    row.exit_reason.as_deref() == Some("loss"),
                    loss,
                    row.owd_capacity_at_s,
                )
                .as_str()
                .to_string(),
            );
            row.owd_shadow_exit_class = row.shadow_exit_at_s.map(|t| {
                analysis::classify(Some(t), false, loss, row.owd_capacity_at_s)
                    .as_str()
                    .to_string()
            });
        }
    }
    let goodputs: Vec<f64> = s.flows.iter().map(|f| f.goodput_bps).collect();
    let total: f64 = goodputs.iter().sum();
    row.flows_completed = Some(s.flows.iter().filter(|f| f.status == "completed").count() as u32);
    row.total_goodput_bps = Some(total);
    row.utilization = (rate > 0.0).then(|| total / rate);
    row.jain_index = analysis::jain_index(&goodputs);
    row
}

/// The congestion control of the flows: flow 0's, or for a mix (`cc = "bbr|cubic"`) each
/// distinct one in flow order, joined by `|`.
fn flow_ccs(scenario: &satquic_run::Scenario) -> String {
    let mut ccs: Vec<&str> = Vec::new();
    for f in &scenario.flows {
        if !ccs.contains(&f.transport.cc.as_str()) {
            ccs.push(f.transport.cc.as_str());
        }
    }
    ccs.join(&crate::spec::MIX_SEPARATOR.to_string())
}

fn exit_reason_name(reason: &satquic_cc::ExitReason) -> String {
    reason.as_str().to_string()
}

/// runs.csv bytes for rows (header even without rows).
pub fn to_csv(rows: &[Row]) -> Vec<u8> {
    let mut out = header().join(",").into_bytes();
    out.push(b'\n');
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(out);
    for r in rows {
        w.serialize(r).expect("rows serialize");
    }
    w.into_inner().expect("in memory")
}

/// Reads runs.csv.
pub fn read_csv(path: &Path) -> Result<Vec<Row>, String> {
    let mut r = csv::Reader::from_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
    r.deserialize()
        .map(|row| row.map_err(|e| format!("{}: {e}", path.display())))
        .collect()
}

/// A run loaded for analysis: its row and the per-MB times of flow 0.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunData {
    pub row: Row,
    /// `mb_times_s[k]` = seconds from the flow's start until the client had k+1 MB.
    pub mb_times_s: Vec<f64>,
}

impl RunData {
    /// When the client had `mb` MB (1-based), if it got there.
    pub fn time_to_mb(&self, mb: u64) -> Option<f64> {
        if mb == 0 {
            return Some(0.0);
        }
        self.mb_times_s.get(mb as usize - 1).copied()
    }
}

/// Reads flow 0's per-MB times from a run directory's `chunks.csv` (empty if absent).
pub fn read_chunks(run_dir: &Path) -> Vec<f64> {
    read_chunks_file(&run_dir.join("chunks.csv"))
}

/// Flow 0's per-MB times counted as `delivery` says: `received_chunks.csv` for
/// [`Delivery::Received`] where the run has one (simulated and emulated runs), else
/// `chunks.csv` (a matrix run's client progress is already what the client counts).
pub fn read_chunks_as(run_dir: &Path, delivery: Delivery) -> Vec<f64> {
    let received = run_dir.join("received_chunks.csv");
    match delivery {
        Delivery::Received if received.is_file() => read_chunks_file(&received),
        _ => read_chunks(run_dir),
    }
}

fn read_chunks_file(path: &Path) -> Vec<f64> {
    #[derive(Deserialize)]
    struct Chunk {
        flow: u32,
        mb: u64,
        time_s: f64,
    }
    let Ok(file) = satquic_link::file::open(path, crate::files::RUN_LOG) else {
        return Vec::new();
    };
    let mut r = csv::Reader::from_reader(file);
    let mut by_mb: BTreeMap<u64, f64> = BTreeMap::new();
    for c in r.deserialize::<Chunk>().flatten() {
        if c.flow == 0 {
            by_mb.insert(c.mb, c.time_s);
        }
    }
    let mut out = Vec::with_capacity(by_mb.len());
    for (mb, t) in by_mb {
        if mb as usize != out.len() + 1 {
            break;
        }
        out.push(t);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn per_mb_times_are_read_as_the_campaign_counts_them() {
        let dir = std::env::temp_dir().join(format!("satquic-chunks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("chunks.csv"), "flow,mb,time_s\n0,1,2.0\n0,2,3.0\n").unwrap();
        assert_eq!(
            read_chunks_as(&dir, Delivery::Received),
            [2.0, 3.0],
            "falls back"
        );
        std::fs::write(
            dir.join("received_chunks.csv"),
            "flow,mb,time_s\n0,1,1.5\n0,2,2.5\n1,1,0.1\n",
        )
        .unwrap();
        assert_eq!(read_chunks_as(&dir, Delivery::Received), [1.5, 2.5]);
        assert_eq!(read_chunks_as(&dir, Delivery::InOrder), [2.0, 3.0]);
        std::fs::remove_dir_all(&dir).unwrap();
        let spec: crate::spec::AnalysisSpec = toml::from_str("delivery = \"received\"").unwrap();
        assert_eq!(spec.delivery, Delivery::Received);
        assert!(toml::from_str::<crate::spec::AnalysisSpec>("delivery = \"late\"").is_err());
    }

    use super::*;

    #[test]
    fn header_is_plain_and_unique() {
        let h = header();
        assert_eq!(h[0], "index");
        assert!(h.contains(&"exit_class".to_string()));
        let mut sorted = h.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), h.len());
        assert!(h.iter().all(|c| {
            c.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        }));
    }

    #[test]
    fn rows_round_trip_through_csv() {
        let row = Row {
            index: 3,
            run_id: "x".into(),
            link: "thesis-sat:buffer=0.5,plr=0.001".into(),
            status: "failed".into(),
            reason: "panic: \"quoted\", with comma".into(),
            goodput_bps: Some(1.5e6),
            exit_class: Some("early".into()),
            ..Row::default()
        };
        let bytes = to_csv(std::slice::from_ref(&row));
        let dir = std::env::temp_dir().join(format!("satquic-lab-csv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("runs.csv");
        std::fs::write(&path, &bytes).unwrap();
        let back = read_csv(&path).unwrap();
        assert_eq!(back, vec![row]);
        assert_eq!(String::from_utf8(bytes).unwrap().lines().count(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
