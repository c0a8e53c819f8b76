//! The limits of the files the lab reads, in one place: a campaign spec the user names,
//! and what `campaign run --resume`, `collect` and `report` read back from a campaign
//! directory (which a user can point anywhere). Each is read through
//! [`satquic_link::file`], which refuses anything but a regular file and stops at the
//! limit, so a spec named `/dev/zero` or a `campaign.json` replaced by a FIFO is one line
//! and exit 2 instead of all memory or a hang. A run's `summary.json` and record files
//! have their limits where satquic-run reads them ([`satquic_run::record::SUMMARY_FILE`],
//! [`satquic_run::record::RECORD_LOG`]).

use satquic_link::file::FileLimit;

/// A campaign spec (`campaign run SPEC`): 16 MiB. The largest in the repository is a few
/// kilobytes; a spec lists links, variants and workloads, not runs.
pub const CAMPAIGN_SPEC: FileLimit = FileLimit {
    what: "campaign spec",
    max_bytes: 16 << 20,
};

/// A campaign directory's `campaign.json`: 64 MiB. It holds the spec and one id per run,
/// about 60 bytes each, so [`MAX_RUNS`](crate::plan::MAX_RUNS) runs take 6 MB.
pub const CAMPAIGN_META: FileLimit = FileLimit {
    what: "campaign.json",
    max_bytes: 64 << 20,
};

/// A matrix directory's `matrix.json`: 16 MiB (its spec: a few kilobytes written).
pub const MATRIX_META: FileLimit = FileLimit {
    what: "matrix.json",
    max_bytes: 16 << 20,
};

/// A run's `row.json` or `timing.json`: 1 MiB (a few hundred bytes written).
pub const RUN_SMALL_JSON: FileLimit = FileLimit {
    what: "run's row.json or timing.json",
    max_bytes: 1 << 20,
};

/// A run's `events.jsonl` or per-MB `chunks.csv`, read for the report: 1 GiB, above the
/// event log of an hour-long run.
pub const RUN_LOG: FileLimit = FileLimit {
    what: "run's event or chunk log",
    max_bytes: 1 << 30,
};

/// A saved `scorecard.json` (`scorecard --baseline`) or a scenario set (`--set`): 16 MiB.
/// The default set's card with one spec is 89 kB and the full set is 3.4 times as many
/// scenarios; a set lists scenarios, a few hundred bytes each.
pub const SCORECARD_FILE: FileLimit = FileLimit {
    what: "scorecard file",
    max_bytes: 16 << 20,
};
