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
//! | reset after a gap | more than `W + EXTRA_BINS` whole bins past the current bin's end, re-initialized at that ACK, which fills the new bin 0 (quicly) | more than `W + EXTRA_BINS` bins passed | more than `W` bins passed (draft "missed bins" option, as neqo) |
//! | clock ([`SearchClock`]) | whole milliseconds (quicly) | exact | exact |
//! | exit test | `norm_diff > THRESH` (quicly, 000 Alg. 1 line 24) | `>=` | `>=` |
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
//! * `>=` (003, 001 Alg. 1, drafts) vs `>` (quicly, 000 Alg. 1) for the threshold test:
//!   `>` for 2.0 (the code the seeds ran), `>=` otherwise
//!   ([`SearchConfig::strict_threshold`]).
//! * the clock: quicly's whole milliseconds for 2.0 (bins of 214 ms, not 214.2, at a 612
//!   ms RTT), exact durations otherwise ([`SearchClock`]).
//! * a bin duration that rounds to zero: quicly (000 Appendix A) floors it at 1 ms, neqo
//!   skips initialization; the exact clock floors it at 1 ns, so SEARCH works from
//!   microsecond to multi-second RTTs.
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
//! | `clock=ms`, `clock=exact` | [`SearchConfig::clock`]: whole milliseconds or exact durations ([`SearchClock`]) | `ms` / `exact` / `exact` | quicly (seed 000 Appendix A) / draft-00 / neqo |
//! | `lookback=auto`, `lookback=latest`, `lookback=smoothed`, `lookback=min`, `lookback=unloaded` | [`SearchConfig::lookback_rtt`]: the RTT that places the look-back point ([`LookbackRtt`]); `auto` is `latest` while the window doubles per RTT, `unloaded` (the path's RTT before the connection loaded it, [`crate::path_rtt`]: the minimum without jitter, its mean with) under a faster start-up growth | `auto` | quicly `rtt.latest`, neqo `latest_rtt()`; `auto` under growth: ours (*SEARCH under faster growth*) |
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
//! so specs without `+growth` behave as before. Where per-packet jitter spreads the RTT (a
//! LEO path's mean is 1.2-1.5 x its minimum) the bytes acknowledged now were sent a *mean*
//! RTT ago: looking back by the minimum then compares them with a later, larger sending,
//! and at 3x per RTT that gap alone crosses `THRESH` (leo-p28 exited at a 55 kB window of
//! a 1.3 MB path). So `auto` looks back by the path's RTT before the connection loaded it
//! ([`LookbackRtt::Unloaded`]: the mean of its first small flights' samples), which is the
//! minimum on a path without jitter. Sizing the ring for the inflation (`extra=N`)
//! does not help: the reference stays early whatever the ring holds.
//!
//! The `reset` defaults are numbers: `bins=` and `extra=` do not move them. One field is
//! not a spec option: [`SearchConfig::lower_cwnd_rtts`], how many initial RTTs `lower-cwnd`
//! looks back (2, seed 001 Alg. 1 line 25).

//!
//! # Files
//!
//! | file | concept |
//! |---|---|
//! | `config.rs` | the versions and their constants ([`SearchConfig`]) |
//! | `clock.rs` | how SEARCH reads time ([`SearchClock`]) |
//! | `bins.rs` | the bins: their duration, advancing them, the reset after a gap |
//! | `exit.rs` | the exit rule: the look-back, the comparison with `THRESH`, the exit window |
//! | here | [`Search`]: per-ACK steps and the evaluation at each bin boundary |

mod bins;
mod clock;
mod config;
mod exit;

use std::time::Duration;

pub use clock::SearchClock;
pub use config::{
    ExitAction, GROWTH_AWARE_ABOVE, LookbackRtt, PrevPoint, SearchConfig, SearchMode, SearchVersion,
};

use super::{AckSample, SlowStart, SsDecision};
use crate::event::{CcEvent, Emitter, ExitReason, SearchOutcome};

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
        // Bins and the reset read SEARCH's clock; events keep the exact time.
        let now = self.config.clock.read(ack.now);
        let latest = self.config.clock.read(ack.rtt);
        let curr = match self.curr {
            Some(c) => c,
            None => {
                self.initialize(now, latest);
                0
            }
        };
        let decision = match self.advance(now, latest, curr) {
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
            LookbackRtt::Unloaded => ack.unloaded_rtt,
        };
        let rtt = self.config.clock.read(rtt);
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
