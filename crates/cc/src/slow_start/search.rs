//! SEARCH: Slow start Exit At Right CHokepoint, in its three published versions.
//!
//! In slow start the sender doubles what it sends every RTT, so what is *delivered* now
//! should be twice what was delivered one RTT earlier (SEARCH 2.0 and 3.0), or equal to
//! what was *sent* one RTT earlier (the current draft). Once the bottleneck is saturated,
//! delivery falls short; when the normalized shortfall reaches a threshold, SEARCH leaves
//! slow start. Delivered (and sent) bytes are kept in time bins over a sliding window of
//! `WINDOW_FACTOR` x the initial RTT, which smooths the RTT oscillation of satellite and
//! cellular links (seed 003 Sec. IV-A: 0.5 Hz on GEO, ~3.3 RTTs).
//!
//! # Versions and their sources
//!
//! | | [`SearchVersion::V2`] | [`SearchVersion::V3`] | [`SearchVersion::Draft`] (default) |
//! |---|---|---|---|
//! | source | seed 003 Algorithm 1; quicly code of seed 000 Appendix A; seed 001 Algorithm 1 | draft-chung-ccwg-search-00 (June 2024) | draft-chung-ccwg-search-09/-10; Mozilla neqo `cc/search.rs` |
//! | bins hold | bytes delivered during the bin | cumulative delivered bytes | cumulative acked and sent bytes |
//! | compares | delivered now vs 2 x delivered one RTT earlier | same | delivered now vs *sent* one RTT earlier |
//! | `THRESH` | 0.35 | 0.35 | 0.26 |
//! | look-back point | rounded to the nearest bin (quicly) | interpolated | interpolated backwards (neqo) |
//! | ring sizes | `W + EXTRA_BINS` | `W + 1 + EXTRA_BINS` | acked `W + 1`, sent `W + 1 + EXTRA_BINS` |
//! | reset after a gap | more than `W + EXTRA_BINS` bins without ACK (quicly) | same | more than `W` bins (draft "missed bins" option, as neqo) |
//! | default exit action | [`ExitAction::SetSsthresh`] (003, quicly) | [`ExitAction::LowerCwnd`] (draft-00, 001 lines 25-27) | [`ExitAction::SetSsthresh`] (neqo; the draft's drain is optional) |
//!
//! Common constants ([`SearchConfig`], all overridable): `WINDOW_FACTOR` = 3.5 (window =
//! 3.5 x initial RTT, the first RTT sample), `W` = 10 bins per window,
//! `BIN_DURATION` = window / `W`, `EXTRA_BINS` = 15 (seed 000/001 and the drafts; seed 003
//! used 10). The RTT used to look back is the latest RTT sample.
//!
//! Where the sources disagree the disagreement is a [`SearchConfig`] field:
//! * 2.0's look-back point: seed 003's text interpolates the partial bin, quicly rounds
//!   ([`PrevPoint`]; default rounding, the code the seeds' measurements ran).
//! * the draft's interpolation direction: draft-09 interpolates forward, neqo notes this
//!   is a mistake and interpolates backwards (default: backwards, which matches what
//!   "one RTT earlier" means; [`PrevPoint::InterpolateForward`] reproduces the text).
//! * `>=` (003, 001, drafts) vs `>` (quicly) for the threshold test: `>=`.
//! * a bin duration that rounds to zero: quicly floors it at 1 (here 1 ns), neqo skips
//!   initialization; we floor, so SEARCH works from microsecond to multi-second RTTs.
//!
//! Exit actions ([`ExitAction`]): set `ssthresh = cwnd` (2.0 as published in 003);
//! lower `cwnd` and `ssthresh` by the bytes delivered in the last 2 x initial RTT (seed 001
//! Algorithm 1 lines 25-27, the 3.0 draft), because detection lags the chokepoint by about
//! two RTTs; or drain to the "empty-buffer BDP", the bytes acked over the last initial
//! RTT (draft-09 Sec. 3.2; neqo records but does not apply it). The controller runs the
//! drain ([`SsDecision::Exit`]'s `drain`): `ssthresh = target`, and the window steps down
//! from the bytes in flight to the target in proportion to the bytes acknowledged (RFC
//! 6937's Proportional Rate Reduction), a recovery period until it ends. Setting
//! `cwnd = target` at once, as the draft reads, silenced the sender until the bytes in
//! flight (losses not yet detected included) fell below the target, and quinn then paced
//! the restart at the queue-inflated RTT, leaving the link partly idle after the exit on
//! geo-viasat, which the proportional drain keeps busy (BENCHMARKS.md, "Start-up
//! mechanisms").
//!
//! [`SearchMode::Shadow`] evaluates and reports but never exits (seed 000's
//! `--searchexit 0`), so one run yields the baseline and where SEARCH would have exited.
//!
//! State: two small rings of `u64` (296 bytes of bins for the draft with defaults) plus
//! about 100 bytes of scalars; see [`Search::state_size`].
//!
//! # Options
//!
//! Spec `search[:OPTION,...]`; each option sets a [`SearchConfig`] field. The version
//! option sets every default and is applied first wherever it is written
//! (`search:lower-cwnd,v2` is V2 with `lower-cwnd`); without one, `draft`. Defaults are given
//! as V2 / V3 / draft where they differ; sources as in the table above.
//!
//! | option | meaning | default | source |
//! |---|---|---|---|
//! | `v2`, `v3`, `draft` | [`SearchConfig::version`] ([`SearchVersion`]) | `draft` | see *Versions and their sources* |
//! | `set-ssthresh`, `lower-cwnd`, `drain` | [`SearchConfig::exit_action`]: what the exit does to the window ([`ExitAction`]) | `set-ssthresh` / `lower-cwnd` / `set-ssthresh` | seed 003 Alg. 1 line 25 / seed 001 Alg. 1 lines 25-27, draft-00 / neqo (draft-09 Sec. 3.2 for `drain`) |
//! | `exit`, `shadow` | [`SearchConfig::mode`]: exit, or only report where it would ([`SearchMode`]) | `exit` | seed 000 `--searchexit` |
//! | `round`, `interp`, `interp-forward` | [`SearchConfig::prev_point`]: placement of the look-back point inside a bin ([`PrevPoint`]) | `round` / `interp` / `interp` | quicly / seed 003 Sec. III text / neqo (`interp-forward`: draft-09 pseudocode) |
//! | `thresh=F` (0 < F < 1) | [`SearchConfig::threshold`], `THRESH` on the normalized difference | 0.35 / 0.35 / 0.26 | seed 003, draft-00 / draft-09, neqo |
//! | `window=F` (0 < F <= 100) | [`SearchConfig::window_factor`], `WINDOW_FACTOR`: the window is F x the initial RTT | 3.5 | seed 003 Sec. IV-A, the drafts |
//! | `bins=N` (1 to 1000) | [`SearchConfig::bins`], `W`: bins per window | 10 | seed 003, the drafts |
//! | `extra=N` (1 to 1000) | [`SearchConfig::extra_bins`], `EXTRA_BINS`: bins kept beyond the window to look back one RTT | 15 | seeds 000/001, the drafts (seed 003: 10) |
//! | `reset=N`, `no-reset` | [`SearchConfig::missed_bins_reset`]: restart after more than N bins without an ACK; `no-reset` never | 25 / 25 / 10 | quicly (`W + EXTRA_BINS`) / same / draft-09 "missed bins" option, neqo (`W`) |
//! | `app-limited=skip`, `app-limited=count` | [`SearchConfig::skip_app_limited`]: skip the evaluations made while application-limited | `count` / `count` / `skip` | 2.0 and 3.0 as published / the draft's app-limited handling |
//! | `lookback=auto`, `lookback=latest`, `lookback=smoothed`, `lookback=min` | [`SearchConfig::lookback_rtt`]: the RTT that places the look-back point ([`LookbackRtt`]); `auto` is `latest` while the window doubles per RTT, `min` under a faster start-up growth | `auto` | quicly `rtt.latest`, neqo `latest_rtt()`; `auto` under growth: ours (*SEARCH under faster growth*) |
//!
//! # SEARCH under faster growth
//!
//! The sources assume doubling. With a start-up growth of `G` per RTT ([`crate::growth`],
//! e.g. `+growth:x=4` or picoquic's RTT-scaled 7x on GEO) the draft's test itself still
//! holds: below capacity what is delivered now is what was sent one RTT earlier, whatever
//! `G` (both counters describe the same packets), so `THRESH` needs no scaling, and after
//! capacity the shortfall tends to `1 - 1/G` (0.5 for doubling, 0.75 for 4x), further
//! past `THRESH` than at doubling. What breaks is *where* it looks back. Once a queue
//! builds, the sender sends `G` bytes per byte acknowledged, so the packet acknowledged at
//! time `t` was sent at `s(t)` with `ds/dt = 1/G`: the look-back point `t - latest RTT`
//! advances at `1/G` of real time (half speed at doubling, the delay the timeline tests
//! document). At 7x the reference window stays mostly before the capacity point for
//! about `G` windows (15 s on GEO); meanwhile the window outgrows the pipe many times,
//! the whole transfer is in flight and SEARCH, app-limited, stops evaluating, and a loss
//! ends slow start instead (`cubic+search+growth:rtt` on geo-viasat; BENCHMARKS.md,
//! "Start-up mechanisms"). Looking back by the *minimum* RTT instead keeps the
//! look-back point moving in real time, the fixed-RTT geometry of seed 003 Sec. IV-B, and
//! never leaves the `EXTRA_BINS` ring; [`LookbackRtt::Auto`] (the default) does that
//! whenever the growth is faster than doubling and keeps the sources' latest RTT otherwise,
//! so specs without `+growth` behave as before. Sizing the ring for the inflation (`extra=N`)
//! does not help: the reference stays early whatever the ring holds.
//!
//! The `reset` defaults are numbers: `bins=` and `extra=` do not move them. One field is
//! not a spec option: [`SearchConfig::lower_cwnd_rtts`], how many initial RTTs `lower-cwnd`
//! looks back (2, seed 001 Alg. 1 line 25).

use std::time::Duration;

use super::{AckSample, SlowStart, SsDecision};
use crate::event::{CcEvent, Emitter, ExitReason, SearchOutcome};

/// Which published SEARCH algorithm to run. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SearchVersion {
    /// SEARCH 2.0: per-bin delivered bytes, delivered vs 2 x delivered one RTT earlier.
    V2,
    /// SEARCH 3.0 (draft-00): cumulative bins, interpolation, threshold 0.35.
    V3,
    /// The current draft (-09/-10): delivered now vs sent one RTT earlier, threshold 0.26.
    #[default]
    Draft,
}

impl SearchVersion {
    /// Short name used in spec strings (`v2`, `v3`, `draft`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2 => "v2",
            Self::V3 => "v3",
            Self::Draft => "draft",
        }
    }
}

/// What SEARCH does to the window when it exits. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitAction {
    /// `ssthresh = cwnd`; the window is kept (seed 003 Algorithm 1 line 25).
    SetSsthresh,
    /// `cwnd = ssthresh = cwnd - bytes delivered in the last 2 x initial RTT`
    /// (seed 001 Algorithm 1 lines 25-27).
    LowerCwnd,
    /// `ssthresh = bytes acked over the last initial RTT` (draft-09 Sec. 3.2), the window
    /// drained to it proportionally by the controller (see the module docs).
    DrainToTarget,
}

impl ExitAction {
    /// Short name used in spec strings.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SetSsthresh => "set-ssthresh",
            Self::LowerCwnd => "lower-cwnd",
            Self::DrainToTarget => "drain",
        }
    }
}

/// Whether SEARCH acts on its decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SearchMode {
    /// Exit slow start when the threshold is reached.
    #[default]
    Exit,
    /// Evaluate and report, never exit (seed 000 `--searchexit 0`).
    Shadow,
}

/// How the point "one RTT earlier" is placed when it falls inside a bin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrevPoint {
    /// Round to the nearest bin boundary (quicly, seed 000 Appendix A). At least one bin.
    Round,
    /// Interpolate between the two neighbouring windows, the older one weighted by the
    /// fraction (seed 003 Sec. III text; neqo for the draft).
    Interpolate,
    /// Interpolate towards the *newer* neighbour, as draft-09's pseudocode literally reads.
    InterpolateForward,
}

/// SEARCH constants and options. Build with [`Search::draft`], [`Search::v2`],
/// [`Search::v3`] and adjust fields or use the builder methods.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchConfig {
    /// Algorithm version.
    pub version: SearchVersion,
    /// `WINDOW_SIZE = WINDOW_FACTOR x initial RTT` (3.5, seed 003 Sec. IV-A).
    pub window_factor: f64,
    /// `W`: bins per window (10).
    pub bins: u32,
    /// `EXTRA_BINS`: bins kept to look back one RTT (15; seed 003 used 10).
    pub extra_bins: u32,
    /// `THRESH` on the normalized difference (0.35 for 2.0/3.0, 0.26 for the draft).
    pub threshold: f64,
    /// What to do with the window on exit.
    pub exit_action: ExitAction,
    /// Exit or only report.
    pub mode: SearchMode,
    /// Placement of the look-back point.
    pub prev_point: PrevPoint,
    /// Reset all history when more than this many bins pass without an ACK; `None`
    /// disables the reset.
    pub missed_bins_reset: Option<u32>,
    /// `LowerCwnd` looks back this many initial RTTs (2, seed 001 line 25).
    pub lower_cwnd_rtts: f64,
    /// Skip evaluations made while the sender is application-limited: delivery then
    /// falls short of "2 x one RTT earlier" because the application, not the path, held
    /// the sender back. Off for 2.0/3.0 as published; on for the draft, whose app-limited
    /// handling this is (with the missed-bins reset).
    pub skip_app_limited: bool,
    /// Which RTT estimate places the look-back point. The sources use the latest sample
    /// (quicly's `rtt.latest`, neqo's `latest_rtt()`); seed 003's Algorithm 1 just says
    /// "RTT". With a deep queue the latest RTT inflates and SEARCH looks further back,
    /// which delays the exit (see the crate's timeline tests); the minimum RTT keeps the
    /// fixed-RTT geometry of seed 003 Sec. IV-B. Default: [`LookbackRtt::Auto`], the latest
    /// RTT as the sources while the window doubles per round trip, the minimum under a
    /// faster start-up growth.
    pub lookback_rtt: LookbackRtt,
}

/// The RTT estimate that places SEARCH's look-back point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LookbackRtt {
    /// [`LookbackRtt::Latest`] while the window at most doubles per round trip (the
    /// sources), [`LookbackRtt::Min`] when a start-up growth makes it grow faster
    /// ([`GROWTH_AWARE_ABOVE`]; see *SEARCH under faster growth* in the module docs).
    #[default]
    Auto,
    /// The latest RTT sample (quicly, neqo).
    Latest,
    /// The smoothed RTT.
    Smoothed,
    /// The minimum RTT seen.
    Min,
}

impl LookbackRtt {
    /// Short name used in spec strings.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Latest => "latest",
            Self::Smoothed => "smoothed",
            Self::Min => "min",
        }
    }

    /// The estimate to use when the window grows `growth_per_rtt`-fold per round trip.
    pub fn resolve(self, growth_per_rtt: f64) -> Self {
        match self {
            Self::Auto if growth_per_rtt > GROWTH_AWARE_ABOVE => Self::Min,
            Self::Auto => Self::Latest,
            other => other,
        }
    }
}

/// Growth per round trip above which the growth-aware defaults apply
/// ([`LookbackRtt::Auto`]): doubling, the slow start every source of SEARCH assumes
/// (seed 003 Sec. III; draft-chung-ccwg-search-09 Sec. 3).
pub const GROWTH_AWARE_ABOVE: f64 = 2.0;

impl SearchConfig {
    fn for_version(version: SearchVersion) -> Self {
        let w = 10;
        let extra = 15;
        match version {
            SearchVersion::V2 => Self {
                version,
                window_factor: 3.5,
                bins: w,
                extra_bins: extra,
                threshold: 0.35,
                exit_action: ExitAction::SetSsthresh,
                mode: SearchMode::Exit,
                prev_point: PrevPoint::Round,
                missed_bins_reset: Some(w + extra),
                lower_cwnd_rtts: 2.0,
                skip_app_limited: false,
                lookback_rtt: LookbackRtt::Auto,
            },
            SearchVersion::V3 => Self {
                version,
                window_factor: 3.5,
                bins: w,
                extra_bins: extra,
                threshold: 0.35,
                exit_action: ExitAction::LowerCwnd,
                mode: SearchMode::Exit,
                prev_point: PrevPoint::Interpolate,
                missed_bins_reset: Some(w + extra),
                lower_cwnd_rtts: 2.0,
                skip_app_limited: false,
                lookback_rtt: LookbackRtt::Auto,
            },
            SearchVersion::Draft => Self {
                version,
                window_factor: 3.5,
                bins: w,
                extra_bins: extra,
                threshold: 0.26,
                exit_action: ExitAction::SetSsthresh,
                mode: SearchMode::Exit,
                prev_point: PrevPoint::Interpolate,
                missed_bins_reset: Some(w),
                lower_cwnd_rtts: 2.0,
                skip_app_limited: true,
                lookback_rtt: LookbackRtt::Auto,
            },
        }
    }

    /// Sets the exit action.
    pub fn exit_action(mut self, action: ExitAction) -> Self {
        self.exit_action = action;
        self
    }

    /// Sets the mode (exit or shadow).
    pub fn mode(mut self, mode: SearchMode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets the threshold.
    pub fn threshold(mut self, threshold: f64) -> Self {
        self.threshold = threshold;
        self
    }

    /// Bins per window, clamped to a sane range (1..=1000).
    fn w(&self) -> u64 {
        u64::from(self.bins.clamp(1, 1000))
    }

    /// Extra bins, clamped (1..=1000).
    fn extra(&self) -> u64 {
        u64::from(self.extra_bins.clamp(1, 1000))
    }
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self::for_version(SearchVersion::Draft)
    }
}

/// SEARCH per-connection state. See the module docs.
#[derive(Debug, Clone)]
pub struct Search {
    config: SearchConfig,
    /// V2: bytes delivered in each bin. V3/Draft: cumulative acked bytes at each bin start.
    acked_bins: Vec<u64>,
    /// Draft only: cumulative sent bytes at each bin start.
    sent_bins: Vec<u64>,
    /// Bytes acknowledged since (re)start.
    acked_total: u64,
    /// Bytes sent since (re)start.
    sent_total: u64,
    /// Index of the current bin since (re)start; `None` until the first ACK.
    curr: Option<u64>,
    /// When the current bin ends.
    bin_end: Duration,
    /// Length of a bin: window / W, at least 1 ns.
    bin_duration: Duration,
    /// The first RTT sample since (re)start ("initial RTT" of the sources).
    initial_rtt: Duration,
    /// Shadow mode: the would-be exit was already reported.
    shadow_exit_reported: bool,
}

/// The result of one evaluation.
struct Evaluation {
    outcome: SearchOutcome,
    curr_delivered: u64,
    reference: u64,
    norm_diff: f64,
}

impl Evaluation {
    fn without(outcome: SearchOutcome) -> Self {
        Self {
            outcome,
            curr_delivered: 0,
            reference: 0,
            norm_diff: 0.0,
        }
    }
}

impl Search {
    /// SEARCH with the given configuration.
    pub fn new(config: SearchConfig) -> Self {
        let w = config.w() as usize;
        let extra = config.extra() as usize;
        let (acked_len, sent_len) = match config.version {
            SearchVersion::V2 => (w + extra, 0),
            SearchVersion::V3 => (w + 1 + extra, 0),
            SearchVersion::Draft => (w + 1, w + 1 + extra),
        };
        Self {
            config,
            acked_bins: vec![0; acked_len],
            sent_bins: vec![0; sent_len],
            acked_total: 0,
            sent_total: 0,
            curr: None,
            bin_end: Duration::ZERO,
            bin_duration: Duration::from_nanos(1),
            initial_rtt: Duration::ZERO,
            shadow_exit_reported: false,
        }
    }

    /// The current draft with its defaults (the project default).
    pub fn draft() -> SearchConfig {
        SearchConfig::for_version(SearchVersion::Draft)
    }

    /// SEARCH 2.0 with its defaults.
    pub fn v2() -> SearchConfig {
        SearchConfig::for_version(SearchVersion::V2)
    }

    /// SEARCH 3.0 (draft-00) with its defaults.
    pub fn v3() -> SearchConfig {
        SearchConfig::for_version(SearchVersion::V3)
    }

    /// The configuration in use.
    pub fn config(&self) -> &SearchConfig {
        &self.config
    }

    /// The bin duration in use (zero-free), once initialized.
    pub fn bin_duration(&self) -> Option<Duration> {
        self.curr.map(|_| self.bin_duration)
    }

    fn cumulative(&self) -> bool {
        self.config.version != SearchVersion::V2
    }

    fn slot(ring: &[u64], i: u64) -> usize {
        (i % ring.len() as u64) as usize
    }

    fn initialize(&mut self, now: Duration, rtt: Duration) {
        self.initial_rtt = rtt;
        let window = rtt.as_secs_f64() * self.config.window_factor.max(0.0);
        let bin_nanos = (window * 1e9 / self.config.w() as f64).max(1.0);
        self.bin_duration = Duration::from_nanos(bin_nanos.min(1e18) as u64);
        self.bin_end = now.saturating_add(self.bin_duration);
        self.acked_bins.fill(0);
        self.sent_bins.fill(0);
        if self.cumulative() {
            self.acked_bins[0] = self.acked_total;
        }
        if let Some(first) = self.sent_bins.first_mut() {
            *first = self.sent_total;
        }
        self.curr = Some(0);
    }

    /// Advances to the bin containing `now`. Returns the new current index, or `None` if
    /// the bin boundary was not crossed or a reset happened.
    fn advance(&mut self, now: Duration, curr: u64) -> Option<u64> {
        if now <= self.bin_end {
            return None;
        }
        let bin = self.bin_duration.as_nanos();
        let passed = ((now - self.bin_end).as_nanos() / bin + 1).min(u128::from(u32::MAX)) as u64;
        if let Some(limit) = self.config.missed_bins_reset {
            if passed > u64::from(limit) {
                self.restart_bins();
                return None;
            }
        }
        let new = curr + passed;
        // Skipped bins saw no delivery: zero (per-bin rings) or the last total (cumulative).
        let acked_fill = if self.cumulative() {
            self.acked_bins[Self::slot(&self.acked_bins, curr)]
        } else {
            0
        };
        let start = (curr + 1).max(new.saturating_sub(self.acked_bins.len() as u64));
        for i in start..new {
            let s = Self::slot(&self.acked_bins, i);
            self.acked_bins[s] = acked_fill;
        }
        let s = Self::slot(&self.acked_bins, new);
        self.acked_bins[s] = if self.cumulative() {
            self.acked_total
        } else {
            0
        };
        if !self.sent_bins.is_empty() {
            let sent_fill = self.sent_bins[Self::slot(&self.sent_bins, curr)];
            let start = (curr + 1).max(new.saturating_sub(self.sent_bins.len() as u64));
            for i in start..new {
                let s = Self::slot(&self.sent_bins, i);
                self.sent_bins[s] = sent_fill;
            }
            let s = Self::slot(&self.sent_bins, new);
            self.sent_bins[s] = self.sent_total;
        }
        self.bin_end = self
            .bin_end
            .saturating_add(self.bin_duration.saturating_mul(passed as u32));
        self.curr = Some(new);
        Some(new)
    }

    /// Forgets the bins but keeps counting bytes: SEARCH re-initializes on the next ACK.
    fn restart_bins(&mut self) {
        self.curr = None;
        self.acked_total = 0;
        self.sent_total = 0;
    }

    /// The look-back in bins: whole bins and the fraction (0..1) of the next older one.
    fn look_back(&self, rtt: Duration) -> (u64, f64) {
        let bins = rtt.as_nanos() as f64 / self.bin_duration.as_nanos() as f64;
        let bins = bins.min(1e12);
        match self.config.prev_point {
            PrevPoint::Round => ((bins.round() as u64).max(1), 0.0),
            PrevPoint::Interpolate | PrevPoint::InterpolateForward => {
                (bins.floor() as u64, bins.fract())
            }
        }
    }

    /// V2: sum of the `W` bins ending at (and including) bin `end`.
    fn window_sum(&self, end: u64) -> u64 {
        let w = self.config.w();
        (0..w)
            .map(|k| self.acked_bins[Self::slot(&self.acked_bins, end - k)])
            .fold(0u64, u64::saturating_add)
    }

    /// Cumulative rings: bytes between the snapshots `end - W` and `end`.
    fn window_diff(ring: &[u64], end: u64, w: u64) -> u64 {
        ring[Self::slot(ring, end)].saturating_sub(ring[Self::slot(ring, end - w)])
    }

    /// Blends the windows ending at `p` and its neighbour per the look-back mode.
    fn blend(&self, at_p: u64, neighbour: u64, fraction: f64) -> u64 {
        (at_p as f64 * (1.0 - fraction) + neighbour as f64 * fraction).round() as u64
    }

    fn evaluate(&self, curr: u64, rtt: Duration) -> Evaluation {
        let w = self.config.w();
        let extra = self.config.extra();
        let (shift, fraction) = self.look_back(rtt);
        let forward = self.config.prev_point == PrevPoint::InterpolateForward;
        // Extra bins the interpolation reads beyond the look-back point.
        let older = u64::from(fraction > 0.0 && !forward);
        match self.config.version {
            SearchVersion::V2 => {
                // Windows of completed bins: the current bin `curr` has just started.
                let last = curr - 1;
                let Some(p) = last.checked_sub(shift) else {
                    return Evaluation::without(SearchOutcome::WarmingUp);
                };
                // The oldest bin read must be a complete one (bin 0 is partial).
                if p < w + older {
                    return Evaluation::without(SearchOutcome::WarmingUp);
                }
                if shift + older >= extra {
                    return Evaluation::without(SearchOutcome::RttInflated);
                }
                let curr_delivered = self.window_sum(last);
                let prev = if fraction > 0.0 && !(forward && shift == 0) {
                    let neighbour = if forward { p + 1 } else { p - 1 };
                    self.blend(self.window_sum(p), self.window_sum(neighbour), fraction)
                } else {
                    self.window_sum(p)
                };
                self.finish(curr_delivered, prev.saturating_mul(2))
            }
            SearchVersion::V3 | SearchVersion::Draft => {
                let Some(p) = curr.checked_sub(shift) else {
                    return Evaluation::without(SearchOutcome::WarmingUp);
                };
                // neqo's rules: the snapshot `p - W - 1` must exist, and the span from it to
                // `curr` must fit the ring of `W + 1 + EXTRA_BINS` snapshots.
                if p <= w {
                    return Evaluation::without(SearchOutcome::WarmingUp);
                }
                if curr - p >= extra {
                    return Evaluation::without(SearchOutcome::RttInflated);
                }
                let curr_delivered = Self::window_diff(&self.acked_bins, curr, w);
                let ring = if self.config.version == SearchVersion::Draft {
                    &self.sent_bins
                } else {
                    &self.acked_bins
                };
                let at_p = Self::window_diff(ring, p, w);
                let prev = if fraction > 0.0 && !(forward && shift == 0) {
                    let neighbour = if forward { p + 1 } else { p - 1 };
                    self.blend(at_p, Self::window_diff(ring, neighbour, w), fraction)
                } else {
                    at_p
                };
                let reference = if self.config.version == SearchVersion::Draft {
                    prev
                } else {
                    prev.saturating_mul(2)
                };
                self.finish(curr_delivered, reference)
            }
        }
    }

    fn finish(&self, curr_delivered: u64, reference: u64) -> Evaluation {
        if reference == 0 {
            return Evaluation {
                outcome: SearchOutcome::NothingSent,
                curr_delivered,
                reference,
                norm_diff: 0.0,
            };
        }
        let norm_diff = (reference as f64 - curr_delivered as f64) / reference as f64;
        let outcome = if norm_diff >= self.config.threshold {
            SearchOutcome::Exit
        } else {
            SearchOutcome::Continue
        };
        Evaluation {
            outcome,
            curr_delivered,
            reference,
            norm_diff,
        }
    }

    /// Bytes delivered over the last `bins` bins (fractional), ending now.
    fn delivered_over(&self, curr: u64, bins: f64) -> u64 {
        let whole = bins.floor() as u64;
        let fraction = bins.fract();
        if self.cumulative() {
            let len = self.acked_bins.len() as u64;
            let whole = whole.min(len.saturating_sub(2)).min(curr);
            let now_total = self.acked_bins[Self::slot(&self.acked_bins, curr)];
            let at = |k: u64| self.acked_bins[Self::slot(&self.acked_bins, curr - k)];
            let base = at(whole);
            let older = if whole < curr { at(whole + 1) } else { base };
            let then = base as f64 * (1.0 - fraction) + older as f64 * fraction;
            (now_total as f64 - then).max(0.0).round() as u64
        } else {
            // Completed bins end at `curr - 1`.
            let len = self.acked_bins.len() as u64;
            let whole = whole.min(len.saturating_sub(2)).min(curr);
            let bin = |k: u64| self.acked_bins[Self::slot(&self.acked_bins, curr - k)];
            let mut sum = (1..=whole).map(bin).fold(0u64, u64::saturating_add) as f64;
            if whole < curr {
                sum += bin(whole + 1) as f64 * fraction;
            }
            sum.round() as u64
        }
    }

    fn exit_window(&self, curr: u64, cwnd: u64) -> u64 {
        let initial_rtt_bins =
            self.initial_rtt.as_nanos() as f64 / self.bin_duration.as_nanos() as f64;
        match self.config.exit_action {
            ExitAction::SetSsthresh => cwnd,
            ExitAction::LowerCwnd => {
                let over =
                    self.delivered_over(curr, initial_rtt_bins * self.config.lower_cwnd_rtts);
                cwnd.saturating_sub(over)
            }
            ExitAction::DrainToTarget => self.delivered_over(curr, initial_rtt_bins).min(cwnd),
        }
    }

    /// Size of the per-connection state in bytes, bins included.
    pub fn state_size(&self) -> usize {
        std::mem::size_of::<Self>()
            + (self.acked_bins.capacity() + self.sent_bins.capacity()) * std::mem::size_of::<u64>()
    }
}

impl SlowStart for Search {
    fn name(&self) -> &'static str {
        "search"
    }

    fn on_sent(&mut self, _now: Duration, bytes: u64) {
        self.sent_total = self.sent_total.saturating_add(bytes);
    }

    fn on_ack(&mut self, ack: &AckSample, events: &Emitter) -> SsDecision {
        let grow = SsDecision::Grow {
            increase: ack.bytes,
        };
        let curr = match self.curr {
            Some(c) => c,
            None => {
                self.initialize(ack.now, ack.rtt);
                0
            }
        };
        let decision = match self.advance(ack.now, curr) {
            None => grow,
            Some(new) => self.on_bin_boundary(new, ack, events),
        };
        // The acknowledged bytes belong to the bin that contains `now`.
        self.acked_total = self.acked_total.saturating_add(ack.bytes);
        if let Some(c) = self.curr {
            if !self.cumulative() {
                let s = Self::slot(&self.acked_bins, c);
                self.acked_bins[s] = self.acked_bins[s].saturating_add(ack.bytes);
            }
        }
        decision
    }

    fn reset(&mut self) {
        self.restart_bins();
        self.shadow_exit_reported = false;
    }

    fn clone_box(&self) -> Box<dyn SlowStart> {
        Box::new(self.clone())
    }

    fn state_size(&self) -> usize {
        Search::state_size(self)
    }
}

impl Search {
    fn on_bin_boundary(&mut self, curr: u64, ack: &AckSample, events: &Emitter) -> SsDecision {
        let grow = SsDecision::Grow {
            increase: ack.bytes,
        };
        if ack.app_limited && self.config.skip_app_limited {
            return grow;
        }
        let rtt = match self.config.lookback_rtt.resolve(ack.growth_per_rtt) {
            LookbackRtt::Latest | LookbackRtt::Auto => ack.rtt,
            LookbackRtt::Smoothed => ack.smoothed_rtt,
            LookbackRtt::Min => ack.min_rtt,
        };
        let eval = self.evaluate(curr, rtt);
        events.emit(|| CcEvent::SearchEval {
            at: ack.now,
            bin: curr,
            curr_delivered: eval.curr_delivered,
            reference: eval.reference,
            norm_diff: eval.norm_diff,
            outcome: eval.outcome,
        });
        if eval.outcome != SearchOutcome::Exit {
            return grow;
        }
        let target = self.exit_window(curr, ack.cwnd);
        match self.config.mode {
            SearchMode::Exit => SsDecision::Exit {
                cwnd: target,
                ssthresh: target,
                reason: ExitReason::Search,
                drain: self.config.exit_action == ExitAction::DrainToTarget,
            },
            SearchMode::Shadow => {
                if !self.shadow_exit_reported {
                    self.shadow_exit_reported = true;
                    events.emit(|| CcEvent::SlowStartExit {
                        at: ack.now,
                        reason: ExitReason::Search,
                        cwnd_before: ack.cwnd,
                        cwnd_after: target,
                        ssthresh: target,
                        shadow: true,
                    });
                }
                grow
            }
        }
    }
}
