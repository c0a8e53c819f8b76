//! The optional modifiers of the composed controller, registered in one place.
//!
//! A modifier changes one thing the configured slow start and avoidance do, for long-RTT
//! paths or for resumed connections. Each lives in its own module, which owns its
//! configuration, its spec part (the options' parsing, their canonical writing and their
//! error texts, through its `SpecPart` implementation) and the table of its options,
//! constants and sources:
//!
//! | spec part | module | configuration | what it changes |
//! |---|---|---|---|
//! | `+growth:...` | [`crate::growth`] | [`StartupGrowth`] | how fast the initial slow start grows |
//! | `+floor[:...]` | [`crate::growth`] | [`RttWindowFloor`] | the least window of the initial slow start on a long path |
//! | `+jump[:...]` | [`crate::jump`] | [`BdpJump`] | a jump to half the delivery-rate BDP in the initial slow start, and a ceiling |
//! | `+burst[:...]` | [`crate::burst`] | [`SlowStartBurst`] | the pacer's bursts in the initial slow start |
//! | `+unpaced` | [`crate::unpaced`] | [`Unpaced`] | no pacing at all, as quicly, the seeds' stack, sends |
//! | `+loss-filter[:...]` | [`crate::loss_filter`] | [`LossFilterConfig`] | which losses are congestion |
//! | `+rollback[:...]` | [`crate::rollback`] | [`RollbackConfig`] | undoing a reduction whose recovery period lost few packets |
//! | `+retreat` | [`crate::retreat`] | [`Retreat`] | the first reduction taken from what the path delivered in the last round trip |
//! | `+cr[:...]` | [`crate::careful_resume`] | [`CarefulResumeConfig`] | resuming from saved parameters (RFC 9959) |
//!
//! The table's order is the canonical string's. Where and in which order each modifier
//! acts on the window is the table at the top of [`crate::controller`].
//!
//! Adding a modifier: its module holds its configuration and implements `SpecPart`;
//! here it gets a field of [`Modifiers`] and a line in each of `Modifiers::take` and
//! `Modifiers::write`; the controller runs it at its place in its order of operations
//! ([`crate::Controller::set_modifiers`] hands it over).

use std::fmt;

use crate::burst::SlowStartBurst;
use crate::careful_resume::CarefulResumeConfig;
use crate::growth::{RttWindowFloor, StartupGrowth};
use crate::jump::BdpJump;
use crate::loss_filter::{CarefulResumeHears, LossFilterConfig};
use crate::retreat::Retreat;
use crate::rollback::RollbackConfig;
use crate::unpaced::Unpaced;

/// The modifiers a configuration enables, each with its configuration: a spec string's
/// `+NAME[:OPTION,...]` parts. The default is none of them: doubling, no floor, no jump,
/// quinn-proto's bursts and pacing, every loss congestion, every reduction standing, and Careful
/// Resume on with the RFC's constants (it acts only on a connection given saved
/// parameters).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Modifiers {
    /// How fast the initial slow start grows (`+growth`).
    pub growth: StartupGrowth,
    /// picoquic's long-RTT window floor (`+floor`).
    pub floor: Option<RttWindowFloor>,
    /// The jump to the delivery-rate BDP (`+jump`).
    pub jump: Option<BdpJump>,
    /// Slow-start pacing bursts (`+burst`).
    pub burst: Option<SlowStartBurst>,
    /// quinn-proto's pacing off (`+unpaced`).
    pub unpaced: Option<Unpaced>,
    /// The filter that lets isolated losses pass (`+loss-filter`).
    pub loss_filter: Option<LossFilterConfig>,
    /// Undoing reductions whose recovery period lost few packets (`+rollback`).
    pub rollback: Option<RollbackConfig>,
    /// The first reduction from what the path delivered (`+retreat`).
    pub retreat: Option<Retreat>,
    /// Careful Resume's constants and switch (`+cr`).
    pub careful_resume: CarefulResumeConfig,
}

/// A modifier's `+NAME[:OPTION,...]` spec part, implemented by the modifier's module.
pub(crate) trait SpecPart: Sized {
    /// The part's name.
    const NAME: &'static str;

    /// Why a controller of its own (`bbr`, `bbr3`) refuses the part: `has its own startup
    /// and takes no ...` as is, or `takes no ...`, which the message prefixes with whose
    /// own controller it is.
    const STANDALONE_REFUSAL: &'static str;

    /// Splits a lower-case spec into the spec without this part and the part's options
    /// (`Some("")` for a bare `+NAME`, `None` without the part).
    fn split(spec: &str) -> (String, Option<&str>) {
        split_part(spec, Self::NAME)
    }

    /// Parses the part's options; an error is one line naming the option and the valid
    /// choices.
    fn parse_options(opts: &str) -> Result<Self, String>;

    /// The options the canonical string writes (empty: the bare `+NAME`), or `None` to
    /// leave the part out.
    fn options(&self) -> Option<Vec<String>>;
}

/// The modifiers' part names, in [`Modifiers::take`]'s order (`cr` last).
pub(crate) const PART_NAMES: [&str; 9] = [
    StartupGrowth::NAME,
    LossFilterConfig::NAME,
    RollbackConfig::NAME,
    Retreat::NAME,
    BdpJump::NAME,
    RttWindowFloor::NAME,
    SlowStartBurst::NAME,
    Unpaced::NAME,
    CarefulResumeConfig::NAME,
];

/// What [`Modifiers::take`] found in a spec.
#[derive(Debug)]
pub(crate) struct Taken {
    /// The spec without the modifiers' parts.
    pub rest: String,
    /// The modifiers, the default ones for the parts not given.
    pub modifiers: Modifiers,
    /// [`SpecPart::STANDALONE_REFUSAL`] of each part given, in the order parsed.
    pub standalone_refusals: Vec<&'static str>,
}

impl Modifiers {
    /// Takes the modifiers' parts out of a lower-case spec. The parts are parsed in the
    /// order below, which is the order their errors are reported in when several parts
    /// are wrong; `+cr` comes last because its part runs to the end of the spec.
    pub(crate) fn take(spec: &str) -> Result<Taken, String> {
        let mut taken = Taken {
            rest: spec.to_string(),
            modifiers: Self::default(),
            standalone_refusals: Vec::new(),
        };
        let growth = taken.part::<StartupGrowth>()?;
        // `+loss-filter:off` is the part left out: every loss is congestion.
        let loss_filter = taken.part::<LossFilterConfig>()?.filter(|f| f.enabled);
        let rollback = taken.part::<RollbackConfig>()?;
        let retreat = taken.part::<Retreat>()?;
        let jump = taken.part::<BdpJump>()?;
        let floor = taken.part::<RttWindowFloor>()?;
        let burst = taken.part::<SlowStartBurst>()?;
        let unpaced = taken.part::<Unpaced>()?;
        let careful_resume = taken.part::<CarefulResumeConfig>()?;
        // `cr=unvalidated` (the profile's) has nothing to say to a Careful Resume that is
        // off, and `satellite+cr:off` must stay a valid spec; a bare `cr`, asked for
        // explicitly, is refused beside `cr:off`.
        if loss_filter.is_some_and(|f| f.careful_resume == CarefulResumeHears::Answered)
            && careful_resume.as_ref().is_some_and(|cr| !cr.enabled)
        {
            return Err(
                "loss-filter:cr tells Careful Resume which losses to hear, but cr:off turns \
                 Careful Resume off: drop one of them"
                    .into(),
            );
        }
        taken.modifiers = Self {
            growth: growth.unwrap_or_default(),
            floor,
            jump,
            burst,
            unpaced,
            loss_filter,
            rollback,
            retreat,
            careful_resume: careful_resume.unwrap_or_default(),
        };
        Ok(taken)
    }

    /// Writes the modifiers' parts of the canonical spec string, in the table's order.
    pub(crate) fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_part(f, &self.growth)?;
        write_optional(f, self.floor.as_ref())?;
        write_optional(f, self.jump.as_ref())?;
        write_optional(f, self.burst.as_ref())?;
        write_optional(f, self.unpaced.as_ref())?;
        write_optional(f, self.loss_filter.as_ref())?;
        write_optional(f, self.rollback.as_ref())?;
        write_optional(f, self.retreat.as_ref())?;
        write_part(f, &self.careful_resume)
    }
}

impl Taken {
    /// Takes part `P` out of the rest, if given.
    fn part<P: SpecPart>(&mut self) -> Result<Option<P>, String> {
        let (rest, opts) = P::split(&self.rest);
        let Some(opts) = opts else {
            return Ok(None);
        };
        let part = P::parse_options(opts)?;
        self.rest = rest;
        self.standalone_refusals.push(P::STANDALONE_REFUSAL);
        Ok(Some(part))
    }
}

/// Splits a lower-case spec into the spec without its `+NAME[:OPTIONS]` part and that
/// part's options (`Some("")` for a bare `+NAME`, `None` without the part). The part ends
/// at the next `+`; `+NAMEx...` is not the part (the caller's parser names it).
pub(crate) fn split_part<'a>(spec: &'a str, name: &str) -> (String, Option<&'a str>) {
    let marker = format!("+{name}");
    let Some(start) = spec.find(&marker) else {
        return (spec.to_string(), None);
    };
    let rest = &spec[start + marker.len()..];
    let end = rest.find('+').unwrap_or(rest.len());
    let part = &rest[..end];
    if !part.is_empty() && !part.starts_with(':') {
        return (spec.to_string(), None);
    }
    let opts = part.strip_prefix(':').unwrap_or(part);
    (format!("{}{}", &spec[..start], &rest[end..]), Some(opts))
}

/// [`SpecPart::parse_options`] of a part that takes no options (`+retreat`, `+unpaced`):
/// the part for a bare `+NAME`, else one line saying it takes none.
pub(crate) fn bare_part<T: SpecPart + Default>(opts: &str) -> Result<T, String> {
    if opts.trim().is_empty() {
        Ok(T::default())
    } else {
        Err(format!("+{} takes no options", T::NAME))
    }
}

/// Writes `part` as `+NAME[:OPTION,...]`, the inverse of [`SpecPart::split`] and
/// [`SpecPart::parse_options`]: the bare name when every option is at its default, nothing
/// when the part is left out.
pub(crate) fn write_part<P: SpecPart>(f: &mut fmt::Formatter<'_>, part: &P) -> fmt::Result {
    match part.options() {
        None => Ok(()),
        Some(opts) if opts.is_empty() => write!(f, "+{}", P::NAME),
        Some(opts) => write!(f, "+{}:{}", P::NAME, opts.join(",")),
    }
}

fn write_optional<P: SpecPart>(f: &mut fmt::Formatter<'_>, part: Option<&P>) -> fmt::Result {
    part.map_or(Ok(()), |p| write_part(f, p))
}
