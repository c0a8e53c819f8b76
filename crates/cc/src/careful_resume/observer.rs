//! Observing (RFC 9959 Sec. 3.1, 4.1): the capacity a connection used and its minimum
//! RTT, measured in the Normal phase for a later connection to resume from.

use std::fmt;
use std::time::{Duration, SystemTime};

use super::endpoint::RemoteEndpoint;
use super::phase::CarefulResumePhase;
use super::saved::SavedCcParams;

/// What a connection measured (Sec. 3.1, 4.1): the capacity it used and its minimum RTT.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Observation {
    /// Bytes acknowledged in the last round trip limited by the window, scaled to
    /// `saved_rtt` (acknowledged rate x minimum RTT); a round limited by the application
    /// only raises it (Sec. 4.1).
    pub saved_cwnd: u64,
    /// Minimum RTT of the connection (Sec. 3.1 "saved_rtt").
    pub saved_rtt: Duration,
    /// When `saved_cwnd` was measured (controller time).
    pub at: Duration,
    /// The configured Lifetime (Sec. 4.3.1).
    pub lifetime: Duration,
}

impl Observation {
    /// The record to keep for `endpoint`, saved at wall-clock time `now`.
    pub fn save(&self, endpoint: RemoteEndpoint, now: SystemTime) -> SavedCcParams {
        SavedCcParams {
            saved_cwnd: self.saved_cwnd,
            saved_rtt: self.saved_rtt,
            saved_remote_endpoint: endpoint,
            saved_at: now,
            lifetime: self.lifetime,
        }
    }
}

/// Why [`crate::Controller::observe`] has nothing to save.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotObserved {
    /// Careful Resume is in this phase; observing waits for Normal (Sec. 4.6, App. A).
    Resuming(CarefulResumePhase),
    /// No round trip completed in the Normal phase yet.
    NoRound,
    /// `saved_cwnd` is below `min_observe_iw x IW` (Sec. 3.1).
    TooSmall { saved_cwnd: u64, minimum: u64 },
}

impl fmt::Display for NotObserved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Resuming(phase) => write!(f, "careful resume is in its {phase} phase"),
            Self::NoRound => f.write_str("no round trip observed yet"),
            Self::TooSmall {
                saved_cwnd,
                minimum,
            } => write!(f, "saved_cwnd {saved_cwnd} B is below {minimum} B"),
        }
    }
}

/// The acknowledged rate per round trip, for `saved_cwnd` (Sec. 3.1, 4.1).
#[derive(Debug, Clone, Copy)]
pub(super) struct Observer {
    /// Bytes acknowledged in the current round.
    round_bytes: u64,
    /// Whether the application limited the sender in the current round.
    round_app_limited: bool,
    /// The round began before observing did (or the connection's first round): skip it.
    round_partial: bool,
    /// When the current round began.
    round_start: Duration,
    /// The latest observation of `saved_cwnd`, bytes.
    saved_cwnd: Option<u64>,
    /// When it was measured.
    at: Duration,
    /// The minimum RTT seen (`saved_rtt`).
    min_rtt: Duration,
}

impl Observer {
    pub(super) fn new() -> Self {
        Self {
            round_bytes: 0,
            round_app_limited: false,
            round_partial: true,
            round_start: Duration::ZERO,
            saved_cwnd: None,
            at: Duration::ZERO,
            min_rtt: Duration::MAX,
        }
    }

    /// Forgets the current round: it is not observed.
    pub(super) fn restart_round(&mut self) {
        self.round_bytes = 0;
        self.round_app_limited = false;
        self.round_partial = true;
    }

    /// An RTT sample, in any phase.
    pub(super) fn on_rtt(&mut self, latest: Duration) {
        self.min_rtt = self.min_rtt.min(latest);
    }

    /// `bytes` were acknowledged in the Normal phase.
    pub(super) fn on_ack(&mut self, bytes: u64, app_limited: bool) {
        self.round_bytes = self.round_bytes.saturating_add(bytes);
        self.round_app_limited |= app_limited;
    }

    /// A round trip ended at `now`; `normal`: Careful Resume is in its Normal phase.
    ///
    /// Sec. 3.1 measures `saved_cwnd` as the bytes sent (acknowledged) during an RTT. A
    /// round lasts the minimum RTT plus any queueing, so its bytes are scaled to the
    /// minimum RTT: `saved_cwnd = acknowledged rate x saved_rtt`. Otherwise a standing
    /// queue would be saved as capacity, the overshoot Sec. 4.1 warns of, and the resumed
    /// rate (`jump_cwnd / RTT`, Sec. 4.2.1) could exceed the rate observed.
    pub(super) fn on_round_end(&mut self, now: Duration, normal: bool) {
        let duration = now.saturating_sub(self.round_start);
        self.round_start = now;
        if normal && !self.round_partial && self.round_bytes > 0 && self.min_rtt != Duration::MAX {
            let scale = self.min_rtt.as_secs_f64() / duration.as_secs_f64().max(1e-9);
            let measured = (self.round_bytes as f64 * scale.min(1.0)) as u64;
            // Sec. 4.1: a round limited by the application is discounted when an earlier
            // observation recorded more.
            let measured = match self.saved_cwnd {
                Some(c) if self.round_app_limited => c.max(measured),
                _ => measured,
            };
            self.saved_cwnd = Some(measured);
            self.at = now;
        }
        self.restart_round();
        self.round_partial = !normal;
    }

    /// The observation so far, for a connection whose initial window is `iw` bytes
    /// (Sec. 3.1: none below `min_observe_iw x IW`).
    pub(super) fn observation(
        &self,
        iw: u64,
        min_observe_iw: u32,
        lifetime: Duration,
    ) -> Result<Observation, NotObserved> {
        let saved_cwnd = match self.saved_cwnd {
            Some(c) if self.min_rtt != Duration::MAX => c,
            _ => return Err(NotObserved::NoRound),
        };
        let minimum = iw.saturating_mul(u64::from(min_observe_iw));
        if saved_cwnd < minimum {
            return Err(NotObserved::TooSmall {
                saved_cwnd,
                minimum,
            });
        }
        Ok(Observation {
            saved_cwnd,
            saved_rtt: self.min_rtt,
            at: self.at,
            lifetime,
        })
    }
}
