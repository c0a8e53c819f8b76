//! The run record (DESIGN.md "Output and data") and how it is written.
//!
//! A run directory holds:
//!
//! | file | content |
//! |---|---|
//! | `summary.json` | [`Summary`]: the scenario, the outcome, per-flow results and classification, link ground truth |
//! | `chunks.csv` | `flow,mb,time_s`: when the client application had `mb` MB (1 MB = 1,000,000 bytes) of the flow in order, seconds since the flow's start |
//! | `received_chunks.csv` | the same columns, counting the bytes received in any order (what qperf's `byteslog` counts, the seeds' measure; absent from records older than this file) |
//! | `events.jsonl` | one JSON object per line: `{"flow":0,"type":"slow_start_exit","at":...}`; every satquic-cc event of each flow's sender, `Sample`s thinned to one per 10 ms; `at` is seconds since the run start |
//! | `series.csv` | one row per running flow per 10 ms: `time_s,flow,cwnd_bytes,in_flight_bytes,latest_rtt_s,smoothed_rtt_s,delivery_rate_bps,queue_bytes,delivered_bytes,link_departed_bytes` |
//! | `timing.json` | wall-clock seconds and simulated seconds; the only non-deterministic file |
//! | `qlog.sqlog` | optional ([`WriteOptions::qlog`], `satquic sim --qlog`): the record as qlog 0.3 JSON-SEQ from the sender's vantage point, in virtual time; one `qlog-flow<N>.sqlog` per flow when there are several (see [`crate::qlog`]) |
//!
//! All times are seconds since the start of the run unless a name says otherwise
//! (`completion_time_s` and `chunks.csv` count from the flow's own start). Each file is
//! written to a temporary name in the same directory and renamed into place;
//! `summary.json` is written last, so a directory with a `summary.json` is complete.
//!
//! # Series columns
//!
//! - `cwnd_bytes`, `in_flight_bytes`: the sender's (server's) congestion window and
//!   bytes in flight as quinn reports them to the controller (in flight: quinn's figure at
//!   the end of the latest ACK batch plus bytes sent since).
//! - `latest_rtt_s`: ACK arrival minus send time of the most recently acknowledged packet;
//!   `smoothed_rtt_s`: quinn's smoothed RTT. Empty before the first sample.
//! - `delivery_rate_bps`: bytes newly acknowledged to the sender over the trailing 100 ms,
//!   in bit/s.
//! - `queue_bytes`: the down-link bottleneck queue (shared by all flows), IP bytes.
//! - `delivered_bytes`: bytes the client application has read.
//! - `link_departed_bytes`: bytes (IP, all flows) that have left the down-link bottleneck
//!   since the run started, from the link's ground truth; its slope over the link rate is
//!   the link's utilisation ([`RunRecord::link_utilization`]). Empty where the link is not
//!   in the process (the emulated runs of `satquic-net`).
//!
//! # Slow-start exit classes
//!
//! Each flow's exit is classified (seed 003: `early`, `chokepoint`, `late`, `none`) against
//! the link's capacity point; the rules are in [`summary`], which assembles
//! `summary.json` (its items are re-exported here).

use std::fs;
use std::io::Write;
use std::path::Path as FsPath;
use std::time::Duration;

use satquic_cc::CcEvent;
#[cfg(test)]
use satquic_cc::ExitReason;
use serde::{Deserialize, Serialize};

use crate::scenario::MB;
use satquic_link::file::{self, FileLimit};

/// A run's `summary.json`, read back by [`RunRecord::read_from`] and the lab's reports:
/// 16 MiB (a few kilobytes for one flow, a few megabytes for the largest flow count).
pub const SUMMARY_FILE: FileLimit = FileLimit {
    what: "summary.json",
    max_bytes: 16 << 20,
};

/// A run's `chunks.csv`, `received_chunks.csv` or `series.csv`, read back by
/// [`RunRecord::read_from`]: 1 GiB, above the series of an hour-long run of many flows.
pub const RECORD_LOG: FileLimit = FileLimit {
    what: "run record csv",
    max_bytes: 1 << 30,
};

fn file_io(e: file::FileError) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string())
}

pub mod bottleneck;
pub mod shared;
pub mod summary;

pub use bottleneck::{BottleneckLog, DelayQuantiles};
pub use shared::{SharedFlow, SharedPeriod, jain_index, shared_period};
pub use summary::{
    EXIT_CLASSES, ExitSummary, FirstConnection, FlowDrops, FlowInput, FlowStatus, FlowSummary,
    LinkObservation, LinkTruth, Resumption, Summary, capacity_point, classify, summarize,
};

/// Version tag of the record layout.
pub const RECORD_SCHEMA: &str = "satquic-run/1";

/// The files every record writes ([`RunRecord::write_to`]; the qlogs are optional).
pub const RECORD_FILES: [&str; 5] = [
    "summary.json",
    "chunks.csv",
    "received_chunks.csv",
    "events.jsonl",
    "series.csv",
];

/// Everything a run produced, deterministically.
#[derive(Debug, Clone)]
pub struct RunRecord {
    pub summary: Summary,
    pub chunks: Vec<ChunkRow>,
    /// As `chunks`, counting bytes received in any order (`received_chunks.csv`).
    pub received_chunks: Vec<ChunkRow>,
    pub events: Vec<FlowEvent>,
    pub series: Vec<SeriesRow>,
    /// Simulated time at which the run ended.
    pub sim_time: Duration,
}

/// One row of `chunks.csv`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChunkRow {
    pub flow: u32,
    /// Megabytes received (1 MB = 1,000,000 bytes).
    pub mb: u64,
    /// Seconds since the flow's start.
    pub time_s: f64,
}

impl ChunkRow {
    /// The rows of `flow` from `times_s[k]`, the seconds at which it had k+1 MB.
    pub fn of_flow(flow: u32, times_s: impl IntoIterator<Item = f64>) -> Vec<ChunkRow> {
        (1..)
            .zip(times_s)
            .map(|(mb, time_s)| ChunkRow { flow, mb, time_s })
            .collect()
    }
}

/// Appends `now` to `times` once for every megabyte ([`MB`]) `total` has passed beyond
/// the `times.len()` already noted, so that `times[k]` is when a byte count first reached
/// k+1 MB (what `chunks.csv` lists), whatever the clock.
pub fn push_mb_times<T: Copy>(times: &mut Vec<T>, total: u64, now: T) {
    while (times.len() as u64 + 1) * MB <= total {
        times.push(now);
    }
}

/// One line of `events.jsonl`: the flow and a satquic-cc event, durations written as
/// seconds (`"at": 9.123456789`, `"rtt": 0.6`).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowEvent {
    pub flow: u32,
    pub event: CcEvent,
}

impl FlowEvent {
    /// The JSON object written to `events.jsonl`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(&self.event).expect("events serialize");
        durations_to_seconds(&mut value);
        let mut object = serde_json::Map::new();
        object.insert("flow".into(), self.flow.into());
        if let serde_json::Value::Object(fields) = value {
            object.extend(fields);
        }
        sorted_keys(serde_json::Value::Object(object))
    }
}

/// `value` with the keys of every object in sorted order. serde_json keeps an object's
/// keys sorted unless its `preserve_order` feature is on, and a dependency turns it on
/// (quinn-proto's `qlog` feature, through the `qlog` crate); writing through this keeps
/// the files as they have always been, whatever the feature.
pub fn sorted_keys(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|(a, _), (b, _)| a.cmp(b));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sorted_keys(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted_keys).collect()),
        other => other,
    }
}

/// Replaces serde's `{"secs": s, "nanos": n}` encoding of `Duration` by seconds.
fn durations_to_seconds(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            if map.len() == 2
                && let (Some(s), Some(n)) = (
                    map.get("secs").and_then(Value::as_u64),
                    map.get("nanos").and_then(Value::as_u64),
                )
            {
                *value = Duration::new(s, n as u32).as_secs_f64().into();
                return;
            }
            map.values_mut().for_each(durations_to_seconds);
        }
        Value::Array(items) => items.iter_mut().for_each(durations_to_seconds),
        _ => {}
    }
}

/// One row of `series.csv` (see the module docs for the columns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesRow {
    pub time_s: f64,
    pub flow: u32,
    pub cwnd_bytes: u64,
    pub in_flight_bytes: u64,
    pub latest_rtt_s: Option<f64>,
    pub smoothed_rtt_s: Option<f64>,
    pub delivery_rate_bps: u64,
    pub queue_bytes: u64,
    pub delivered_bytes: u64,
    #[serde(default)]
    pub link_departed_bytes: Option<u64>,
}

impl RunRecord {
    /// The down link's utilisation from `from_s` to `to_s` (run time, seconds): bytes that
    /// left the bottleneck (`link_departed_bytes`, sampled every 10 ms) over what its nominal
    /// rate ([`satquic_link::RateSpec::nominal_rate_bps`]) could carry. `None` without the column or samples covering the interval.
    pub fn link_utilization(&self, from_s: f64, to_s: f64) -> Option<f64> {
        let rate_bps = self.summary.scenario.link.down.rate.nominal_rate_bps() as f64;
        let departed_at = |t: f64| {
            self.series
                .iter()
                .rev()
                .find(|r| r.time_s <= t)
                .and_then(|r| r.link_departed_bytes.map(|b| (r.time_s, b)))
        };
        let (t0, b0) = departed_at(from_s)?;
        let (t1, b1) = departed_at(to_s)?;
        (t1 > t0 && rate_bps > 0.0).then(|| (b1 - b0) as f64 * 8.0 / (rate_bps * (t1 - t0)))
    }

    /// The down link's utilisation over the `rtts` smoothed RTTs (the sender's at the exit)
    /// that follow `flow`'s slow-start exit: what a drain after the exit costs. `None`
    /// without an exit or without the link column.
    pub fn utilization_after_exit(&self, flow: u32, rtts: f64) -> Option<f64> {
        let f = self.summary.flows.iter().find(|f| f.flow == flow)?;
        let exit = f.slow_start_exit.as_ref()?;
        let from = exit.at_s;
        self.link_utilization(from, from + rtts * exit.rtt_s?)
    }

    /// When the client of `flow` had `mb` MB, seconds since the flow's start.
    pub fn time_to_mb(&self, flow: u32, mb: u64) -> Option<f64> {
        self.chunks
            .iter()
            .find(|c| c.flow == flow && c.mb == mb)
            .map(|c| c.time_s)
    }

    /// `summary.json` as written.
    pub fn summary_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(&self.summary).expect("summary serializes");
        s.push('\n');
        s
    }

    /// `chunks.csv` as written.
    pub fn chunks_csv(&self) -> Vec<u8> {
        chunks_csv(&self.chunks)
    }

    /// Every file of the record but `summary.json` (written last, so that a directory
    /// with one is complete) and the optional qlogs: `(name, contents)`.
    pub fn data_files(&self) -> [(&'static str, Vec<u8>); 4] {
        [
            ("chunks.csv", self.chunks_csv()),
            ("received_chunks.csv", chunks_csv(&self.received_chunks)),
            ("events.jsonl", self.events_jsonl()),
            ("series.csv", self.series_csv()),
        ]
    }

    /// `series.csv` as written.
    pub fn series_csv(&self) -> Vec<u8> {
        to_csv(SERIES_HEADER, &self.series)
    }

    /// `events.jsonl` as written.
    pub fn events_jsonl(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for e in &self.events {
            serde_json::to_writer(&mut out, &e.to_json()).expect("events serialize");
            out.push(b'\n');
        }
        out
    }

    /// The qlog files, `(name, contents)`: see [`crate::qlog`].
    pub fn qlog_files(&self) -> Vec<(String, Vec<u8>)> {
        crate::qlog::qlog_files(self)
    }

    /// Reads a record back from a run directory: `summary.json`, `chunks.csv`,
    /// `received_chunks.csv` (empty where absent) and `series.csv`. The events are not
    /// read back (`events.jsonl` writes durations as seconds); `sim_time` is the summary's.
    /// Each file is read bounded ([`SUMMARY_FILE`], [`RECORD_LOG`]).
    pub fn read_from(dir: &FsPath) -> std::io::Result<RunRecord> {
        let invalid = |e: String| std::io::Error::new(std::io::ErrorKind::InvalidData, e);
        let summary = file::read(&dir.join("summary.json"), SUMMARY_FILE).map_err(file_io)?;
        let summary: Summary =
            serde_json::from_slice(&summary).map_err(|e| invalid(format!("summary.json: {e}")))?;
        let rows = |name: &str| -> std::io::Result<csv::Reader<file::BoundedFile>> {
            let path = dir.join(name);
            if !path.exists() {
                let missing = format!("{}: no such file", path.display());
                return Err(std::io::Error::new(std::io::ErrorKind::NotFound, missing));
            }
            Ok(csv::Reader::from_reader(
                file::open(&path, RECORD_LOG).map_err(file_io)?,
            ))
        };
        let chunks = rows("chunks.csv")?
            .deserialize()
            .collect::<Result<Vec<ChunkRow>, _>>()
            .map_err(|e| invalid(format!("chunks.csv: {e}")))?;
        let received_chunks = match rows("received_chunks.csv") {
            Ok(r) => r
                .into_deserialize()
                .collect::<Result<Vec<ChunkRow>, _>>()
                .map_err(|e| invalid(format!("received_chunks.csv: {e}")))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let series = rows("series.csv")?
            .deserialize()
            .collect::<Result<Vec<SeriesRow>, _>>()
            .map_err(|e| invalid(format!("series.csv: {e}")))?;
        Ok(RunRecord {
            sim_time: Duration::from_secs_f64(summary.sim_time_s.max(0.0)),
            summary,
            chunks,
            received_chunks,
            events: Vec::new(),
            series,
        })
    }

    /// Writes the record into `dir` (created if needed), each file atomically, the
    /// summary last.
    pub fn write_to(&self, dir: &FsPath) -> std::io::Result<()> {
        self.write_to_with(dir, &WriteOptions::default())
    }

    /// [`write_to`](Self::write_to) with the optional files of `options`.
    pub fn write_to_with(&self, dir: &FsPath, options: &WriteOptions) -> std::io::Result<()> {
        fs::create_dir_all(dir)?;
        for (name, bytes) in self.data_files() {
            write_atomic(dir, name, &bytes)?;
        }
        if options.qlog {
            for (name, bytes) in self.qlog_files() {
                write_atomic(dir, &name, &bytes)?;
            }
        }
        write_atomic(dir, "summary.json", self.summary_json().as_bytes())
    }
}

/// Optional files of a run directory. The qlog is a view of the record, not something
/// the engine keeps, so it is chosen when writing ([`RunRecord::write_to_with`]), not in
/// the simulator's run options; any record (a simulated or an emulated run) can have one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Also write `qlog.sqlog` (one `qlog-flow<N>.sqlog` per flow when there are
    /// several): [`crate::qlog`].
    pub qlog: bool,
}

/// `timing.json`: how long the run took on this machine. Kept apart from the record,
/// which must not depend on the machine.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Timing {
    pub wall_s: f64,
    pub simulated_s: f64,
    /// simulated / wall.
    pub speedup: f64,
}

impl Timing {
    pub fn new(wall: Duration, simulated: Duration) -> Self {
        let wall_s = wall.as_secs_f64();
        let simulated_s = simulated.as_secs_f64();
        Timing {
            wall_s,
            simulated_s,
            speedup: if wall_s > 0.0 {
                simulated_s / wall_s
            } else {
                0.0
            },
        }
    }

    pub fn write_to(&self, dir: &FsPath) -> std::io::Result<()> {
        let mut s = serde_json::to_string_pretty(self).expect("timing serializes");
        s.push('\n');
        write_atomic(dir, "timing.json", s.as_bytes())
    }
}

const CHUNKS_HEADER: &str = "flow,mb,time_s";

/// `chunks.csv` of these rows (also what `satquic matrix` writes from a peer client's
/// progress).
pub fn chunks_csv(rows: &[ChunkRow]) -> Vec<u8> {
    to_csv(CHUNKS_HEADER, rows)
}
const SERIES_HEADER: &str = "time_s,flow,cwnd_bytes,in_flight_bytes,latest_rtt_s,smoothed_rtt_s,delivery_rate_bps,queue_bytes,delivered_bytes,link_departed_bytes";

/// CSV with a header line even when there are no rows.
fn to_csv<T: Serialize>(header: &str, rows: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 * (rows.len() + 1));
    out.extend_from_slice(header.as_bytes());
    out.push(b'\n');
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(out);
    for r in rows {
        w.serialize(r).expect("rows serialize to CSV");
    }
    w.into_inner().expect("writing to a Vec cannot fail")
}

/// Writes `name` in `dir` through a temporary file in the same directory and a rename.
pub fn write_atomic(dir: &FsPath, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    fs::rename(&tmp, dir.join(name))
}

/// Bytes per MB in `chunks.csv`.
pub const CHUNK_BYTES: u64 = MB;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn megabyte_times_note_each_megabyte_once_when_first_reached() {
        let mut times = Vec::new();
        for (t, total) in [(1, 999_999), (2, 1_000_000), (3, 1_500_000), (4, 3_200_000)] {
            push_mb_times(&mut times, total, t);
        }
        assert_eq!(times, [2, 4, 4]);
        let rows = ChunkRow::of_flow(3, [0.5, 0.75]);
        assert_eq!((rows[1].flow, rows[1].mb, rows[1].time_s), (3, 2, 0.75));
    }

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn classification_follows_seed_003() {
        let search = ExitReason::Search;
        assert_eq!(
            classify(Some((2 * S, search)), Some(10 * S), Some(5 * S)),
            "early"
        );
        assert_eq!(
            classify(Some((6 * S, search)), Some(10 * S), Some(5 * S)),
            "chokepoint"
        );
        assert_eq!(
            classify(Some((6 * S, search)), None, Some(5 * S)),
            "chokepoint"
        );
        assert_eq!(
            classify(Some((10 * S, search)), Some(10 * S), Some(5 * S)),
            "late"
        );
        assert_eq!(
            classify(Some((10 * S, ExitReason::Loss)), Some(10 * S), None),
            "late"
        );
        assert_eq!(classify(None, Some(3 * S), Some(1 * S)), "late");
        assert_eq!(classify(None, None, None), "none");
        assert_eq!(classify(Some((2 * S, search)), None, None), "early");
    }
}
