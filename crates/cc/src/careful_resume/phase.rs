//! The phases of Careful Resume and the triggers that change them, named as in
//! draft-ietf-tsvwg-careful-resume-qlog.

use std::fmt;

/// A Careful Resume phase: `CarefulResumePhase` of draft-ietf-tsvwg-careful-resume-qlog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum CarefulResumePhase {
    /// Sec. 3.2: normal CC from the IW while the path is confirmed.
    Reconnaissance,
    /// Sec. 3.3: the window jumped; unvalidated packets are paced out.
    Unvalidated,
    /// Sec. 3.4: waiting for the unvalidated packets to be acknowledged.
    Validating,
    /// Sec. 3.7: normal CC (also: Careful Resume not in use). Observing happens here.
    Normal,
    /// Sec. 3.5: congestion after the jump; the path drains.
    SafeRetreat,
}

impl CarefulResumePhase {
    /// The qlog name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reconnaissance => "reconnaissance",
            Self::Unvalidated => "unvalidated",
            Self::Validating => "validating",
            Self::Normal => "normal",
            Self::SafeRetreat => "safe_retreat",
        }
    }
}

impl fmt::Display for CarefulResumePhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why the phase changed: the `trigger` of the qlog draft's `CarefulResumePhaseUpdated`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum CarefulResumeTrigger {
    /// Reconnaissance -> Unvalidated: path confirmed and more to send than the CWND allows.
    CongestionWindowLimited,
    /// Unvalidated -> Validating: more than one RTT in the Unvalidated Phase.
    RttExceeded,
    /// Unvalidated -> Validating: the first unvalidated packet was acknowledged.
    FirstUnvalidatedPacketAcknowledged,
    /// Unvalidated -> Validating: the jump window was used up.
    LastUnvalidatedPacketSent,
    /// Validating -> Normal: every unvalidated packet was acknowledged.
    LastUnvalidatedPacketAcknowledged,
    /// Reconnaissance -> Normal: the RTT does not confirm the path.
    RttNotValidated,
    /// Unvalidated -> Normal: `flight_size <= PipeSize` (or `< IW`).
    RateLimited,
    /// Unvalidated -> Safe Retreat (Reconnaissance -> Normal): the path changed.
    PathChanged,
    /// Unvalidated/Validating -> Safe Retreat, Reconnaissance -> Normal: packet loss.
    PacketLoss,
    /// As `PacketLoss`, for an ECN-CE mark.
    #[cfg_attr(feature = "serde", serde(rename = "ECN_CE"))]
    EcnCe,
    /// Safe Retreat -> Normal: the last packet sent before the retreat was acknowledged.
    ExitRecovery,
}

impl CarefulResumeTrigger {
    /// The qlog name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CongestionWindowLimited => "congestion_window_limited",
            Self::RttExceeded => "rtt_exceeded",
            Self::FirstUnvalidatedPacketAcknowledged => "first_unvalidated_packet_acknowledged",
            Self::LastUnvalidatedPacketSent => "last_unvalidated_packet_sent",
            Self::LastUnvalidatedPacketAcknowledged => "last_unvalidated_packet_acknowledged",
            Self::RttNotValidated => "rtt_not_validated",
            Self::RateLimited => "rate_limited",
            Self::PathChanged => "path_changed",
            Self::PacketLoss => "packet_loss",
            Self::EcnCe => "ECN_CE",
            Self::ExitRecovery => "exit_recovery",
        }
    }
}

impl fmt::Display for CarefulResumeTrigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
