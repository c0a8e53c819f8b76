//! SEARCH's versions and constants: [`SearchConfig`] and its enums (tabled in the
//! module docs of [`super`]).

use super::clock::SearchClock;

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

/// SEARCH constants and options. Build with [`Search::draft`](super::Search::draft),
/// [`Search::v2`](super::Search::v2), [`Search::v3`](super::Search::v3) and adjust fields or use the builder methods.
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
    /// Reset all history when more than this many bins pass without an ACK (2.0: whole
    /// bins past the bin's end, re-initialized at that ACK, as quicly); `None`: never.
    pub missed_bins_reset: Option<u32>,
    /// Exit at `norm_diff > THRESH` (quicly, 000 Alg. 1 line 24; on for 2.0), not `>=`.
    pub strict_threshold: bool,
    /// How SEARCH reads time ([`SearchClock`]): whole milliseconds for 2.0 (quicly).
    pub clock: SearchClock,
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
    /// RTT as the sources while the window doubles per round trip, the path's unloaded RTT
    /// (the minimum, or a jittery path's mean) under a faster start-up growth.
    pub lookback_rtt: LookbackRtt,
}

/// The RTT estimate that places SEARCH's look-back point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LookbackRtt {
    /// [`LookbackRtt::Latest`] while the window at most doubles per round trip (the
    /// sources), [`LookbackRtt::Unloaded`] when a start-up growth makes it grow faster
    /// ([`GROWTH_AWARE_ABOVE`]; see *SEARCH under faster growth* in the module docs).
    #[default]
    Auto,
    /// The latest RTT sample (quicly, neqo).
    Latest,
    /// The smoothed RTT.
    Smoothed,
    /// The minimum RTT seen.
    Min,
    /// The path's RTT before the connection loaded it ([`crate::path_rtt`]): the minimum
    /// on a path without jitter, above it where per-packet jitter delays the ACKs of the
    /// bytes looked back at.
    Unloaded,
}

impl LookbackRtt {
    /// Short name used in spec strings.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Latest => "latest",
            Self::Smoothed => "smoothed",
            Self::Min => "min",
            Self::Unloaded => "unloaded",
        }
    }

    /// The estimate to use when the window grows `growth_per_rtt`-fold per round trip.
    pub fn resolve(self, growth_per_rtt: f64) -> Self {
        match self {
            Self::Auto if growth_per_rtt > GROWTH_AWARE_ABOVE => Self::Unloaded,
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
    pub(super) fn for_version(version: SearchVersion) -> Self {
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
                strict_threshold: true,
                clock: SearchClock::Millis,
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
                strict_threshold: false,
                clock: SearchClock::Exact,
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
                strict_threshold: false,
                clock: SearchClock::Exact,
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
    pub(super) fn w(&self) -> u64 {
        u64::from(self.bins.clamp(1, 1000))
    }

    /// Extra bins, clamped (1..=1000).
    pub(super) fn extra(&self) -> u64 {
        u64::from(self.extra_bins.clamp(1, 1000))
    }
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self::for_version(SearchVersion::Draft)
    }
}
