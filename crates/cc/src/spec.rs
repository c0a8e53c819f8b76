//! Short spec strings for congestion control, used by every satquic command.
//!
//! Grammar: `AVOIDANCE[+SLOWSTART[:OPTION,OPTION...]][+growth:OPTION,...][+floor[:OPTION,...]][+jump[:OPTION,...]][+burst[:OPTION,...]][+unpaced][+loss-filter[:OPTION,...]][+rollback[:OPTION,...]][+cr[:OPTION,...]]`,
//! case-insensitive.
//!
//! | part | values |
//! |---|---|
//! | avoidance | `newreno` (alias `reno`), `cubic`, `hybla`, `bbr3` (satquic's BBRv3), `bbr` (quinn's BBRv1-like) |
//! | `bbr3` options ([`bbr3`](crate::bbr3); each a draft-ietf-ccwg-bbr constant) | `startup-gain=F`, `startup-cwnd-gain=F`, `drain-gain=F`, `cwnd-gain=F`, `down-gain=F`, `cruise-gain=F`, `up-gain=F`, `up-cwnd-gain=F`, `probe-rtt-gain=F`, `probe-rtt-duration=MS`, `probe-rtt-interval=MS`, `min-rtt-window=MS`, `bw-cycles=N`, `extra-acked-rounds=N`, `extra-acked-max=MS`, `loss-thresh=F`, `beta=F`, `headroom=F`, `min-pipe=N` (segments), `full-loss-count=N`, `full-bw-growth=F`, `full-bw-rounds=N`, `pacing-margin=F` (percent), `max-quantum=BYTES`, `probe-wait=MS`, `probe-wait-random=MS`, `reno-rounds=N`, `pacing=rate` or `pacing=window`; the long-RTT start-up aids after picoquic ([`bbr3`](crate::bbr3), `long_rtt.rs`, off by default): `floor`, `floor-ref=MS`, `floor-max-rtt=MS`, `quanta`, `quanta-divisor=N`, `quanta-min=BYTES`, `jump`, `jump-fraction=F`, `jump-interval=MS`, `long-probe-rtt[=N]`, `long-rtt=MS` |
//! | slow start | `classic` (alias `ss`), `hystart++` (aliases `hspp`, `hystartpp`), `hystart` (classic HyStart as in Linux CUBIC), `hybla`, `search` |
//! | `search` options ([`search`](crate::slow_start::search)) | `v2`, `v3`, `draft`; `set-ssthresh`, `lower-cwnd`, `drain`; `exit`, `shadow`; `round`, `interp`, `interp-forward`; `thresh=F`, `window=F`, `bins=N`, `extra=N`, `reset=N` or `no-reset`, `app-limited=skip` or `app-limited=count`, `lookback=auto`, `lookback=latest`, `lookback=smoothed` or `lookback=min`; `clock=ms` or `clock=exact` |
//! | `hystart++` options ([`hystart_plus_plus`](crate::slow_start::hystart_plus_plus)) | `n-rtt-sample=N`, `css-rounds=N`, `css-divisor=N`, `divisor=N`, `min-thresh=MS`, `max-thresh=MS`, `ack-limit=N` |
//! | `hystart` options ([`hystart`](crate::slow_start::hystart)) | `ack-train` or `delay` (run only that detector; default both), `low-window=N` (segments), `ack-delta=MS`, `ack-delay=MS`, `min-samples=N`, `min-thresh=MS`, `max-thresh=MS`, `divisor=N`, `unpaced` |
//! | `hybla` options ([`hybla`](crate::slow_start::hybla)) | `rtt0=MS` (also accepted on the avoidance: `hybla:rtt0=MS`, [`avoidance::hybla`](crate::avoidance::hybla)) |
//! | `newreno` options ([`avoidance::newreno`](crate::avoidance::newreno)) | `loss-reduction=F`, RFC 9002's `kLossReductionFactor` (default 0.5; quicly's Reno, the seeds' controller, uses 0.7: `newreno:loss-reduction=0.7`) |
//! | modifiers ([`crate::modifiers`]) | `+growth:...`, `+floor[:...]`, `+jump[:...]`, `+burst[:...]`, `+unpaced`, `+loss-filter[:...]`, `+rollback[:...]`, `+cr[:...]` (Careful Resume, RFC 9959), in any order, but the slow start before `+cr:...` (its options run to the end of the spec once the other parts are taken out); each module tables its options |
//!
//! This module is the grammar of the avoidance and the slow start; the modifiers' parts
//! are taken out first, by [`crate::modifiers`], each parsed by its own module. What each
//! option means, its default and its source are tabled in the algorithm's module, found by
//! its spec name under [`crate::avoidance`], [`crate::bbr3`], [`crate::slow_start`],
//! [`crate::growth`], [`crate::jump`], [`crate::burst`], [`crate::unpaced`], [`crate::loss_filter`],
//! [`crate::rollback`] and [`crate::careful_resume`]. `MS` is milliseconds (fractions
//! allowed), `F` a number, `N` a whole number.
//!
//! Careful Resume is on by default and acts only on a connection given saved parameters
//! ([`crate::CongestionConfig::resume`]); `+cr:...` tunes it and `+cr:off` turns it off.
//! The canonical string omits the default `+cr`.
//!
//! Without a slow start, `newreno`/`cubic` use `classic` and `hybla` uses Hybla's own.
//! Version options come first in effect: `search:lower-cwnd,v2` is V2 with lower-cwnd.
//! `hystart` and `hystart++` are different algorithms (Ha & Rhee 2011 / Linux `tcp_cubic.c`
//! and RFC 9406); the names are matched whole, so neither is taken for the other.
//! `satellite` names the profile of [`crate::profile`] (its controller here; the satquic
//! commands apply its transport parts too).
//! Examples: `cubic+search`, `newreno+hystart++`, `cubic+hystart:delay,unpaced`,
//! `cubic+search:v2,lower-cwnd,thresh=0.3`.

use std::fmt;
use std::time::Duration;

use crate::avoidance::{AvoidanceConfig, CubicConfig};
use crate::modifiers::Modifiers;
use crate::slow_start::{
    ExitAction, HYBLA_RTT0, HyStartConfig, HyStartDetect, LinuxHyStartConfig, LookbackRtt,
    PrevPoint, Search, SearchClock, SearchConfig, SearchMode, SearchVersion, SlowStartConfig,
};

/// A spec string that could not be parsed. Its message is one line naming what was
/// wrong and the valid choices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError(String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

const AVOIDANCES: &str = "newreno, cubic, hybla, bbr3, bbr";
const SLOW_STARTS: &str = "classic, hystart++, hystart, hybla, search";
const SEARCH_OPTIONS: &str = "v2, v3, draft, set-ssthresh, lower-cwnd, drain, exit, shadow, \
     round, interp, interp-forward, thresh=F, window=F, bins=N, extra=N, reset=N, no-reset, \
     app-limited=skip|count, lookback=auto|latest|smoothed|min, clock=ms|exact";
const HYSTART_OPTIONS: &str = "n-rtt-sample=N, css-rounds=N, css-divisor=N, divisor=N, \
     min-thresh=MS, max-thresh=MS, ack-limit=N";
const LINUX_HYSTART_OPTIONS: &str = "ack-train, delay, low-window=N, ack-delta=MS, \
     ack-delay=MS, min-samples=N, min-thresh=MS, max-thresh=MS, divisor=N, unpaced";

fn err(spec: &str, msg: String) -> SpecError {
    SpecError(format!("invalid congestion control spec '{spec}': {msg}"))
}

/// What a spec string names: the avoidance (or a controller of its own), the slow start
/// and the modifiers. [`crate::CongestionConfig`] parses into one and prints one back.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerSpec {
    /// The congestion avoidance, or a controller of its own (`bbr`, `bbr3`).
    pub avoidance: AvoidanceConfig,
    /// The slow start (`classic` for the BBRs, which ignore it).
    pub slow_start: SlowStartConfig,
    /// The optional modifiers (the defaults for the BBRs, which take none).
    pub modifiers: Modifiers,
}

impl fmt::Display for ControllerSpec {
    /// The canonical spec string.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_spec(f, &self.avoidance, &self.slow_start, &self.modifiers)
    }
}

/// A congestion-control spec parsed once, where it enters (a command's flag, a campaign
/// file), and carried down to the controller: the text as written, which records, labels
/// and CSV columns print, and what it names, the `satellite` profile expanded. Nothing
/// below the edge parses the text again: [`CcSpec::config`] builds the controller's
/// configuration from the parsed form and [`CcSpec::is_profile`] says whether the
/// profile's transport half applies. Two specs are equal when their texts are.
#[derive(Debug, Clone)]
pub struct CcSpec {
    /// The spec as written (what records print).
    text: String,
    /// What it names.
    parsed: ControllerSpec,
    /// It names the `satellite` profile, alone or with parts added.
    profile: bool,
}

impl CcSpec {
    /// Parses `text` (see the module docs); the error is one line.
    pub fn parse(text: &str) -> Result<Self, SpecError> {
        let (parsed, profile) = parse_named(text)?;
        Ok(CcSpec {
            text: text.to_string(),
            parsed,
            profile,
        })
    }

    /// The spec as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// What the spec names (avoidance, slow start, modifiers; the profile expanded).
    pub fn controller(&self) -> &ControllerSpec {
        &self.parsed
    }

    /// The canonical spec string of what it names (the profile expanded, options in
    /// canonical order): parses back to the same controller.
    pub fn canonical(&self) -> String {
        self.parsed.to_string()
    }

    /// True if the spec names the `satellite` profile ([`crate::profile`]), whose
    /// transport half ([`crate::profile::apply_satellite_transport`]) goes with it.
    pub fn is_profile(&self) -> bool {
        self.profile
    }

    /// A new controller configuration of this spec, with the defaults for everything a
    /// spec does not say (initial window, sink, seed, its own count of controllers built).
    pub fn config(&self) -> crate::CongestionConfig {
        crate::CongestionConfig::from(self.parsed.clone())
    }
}

impl fmt::Display for CcSpec {
    /// The spec as written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for CcSpec {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CcSpec::parse(s)
    }
}

impl PartialEq for CcSpec {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for CcSpec {}

impl PartialEq<str> for CcSpec {
    fn eq(&self, other: &str) -> bool {
        self.text == other
    }
}

impl PartialEq<&str> for CcSpec {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

/// Written as its text; read by parsing it.
#[cfg(feature = "serde")]
impl serde::Serialize for CcSpec {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for CcSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        CcSpec::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Parses a spec string. See the module docs.
pub fn parse_spec(spec: &str) -> Result<ControllerSpec, SpecError> {
    parse_named(spec).map(|(parsed, _)| parsed)
}

/// Parses a spec string, and says whether it named the `satellite` profile.
fn parse_named(spec: &str) -> Result<(ControllerSpec, bool), SpecError> {
    if let Some(expanded) = crate::profile::expand(spec) {
        return parse_plain(&expanded.map_err(|m| err(spec, m))?).map(|parsed| (parsed, true));
    }
    parse_plain(spec).map(|parsed| (parsed, false))
}

/// Parses a spec string that does not name the profile.
fn parse_plain(spec: &str) -> Result<ControllerSpec, SpecError> {
    let lower = spec.trim().to_ascii_lowercase();
    if lower.is_empty() {
        return Err(err(
            spec,
            format!("empty; expected AVOIDANCE[+SLOWSTART] with avoidance one of {AVOIDANCES}"),
        ));
    }
    let taken = Modifiers::take(&lower).map_err(|m| err(spec, m))?;
    let (ca_part, ss_part) = match taken.rest.split_once('+') {
        // `hystart++` contains '+': split at the first '+' only.
        Some((ca, ss)) => (ca, Some(ss)),
        None => (taken.rest.as_str(), None),
    };
    let avoidance = parse_avoidance(spec, ca_part)?;
    let slow_start = match ss_part {
        None => match &avoidance {
            AvoidanceConfig::Hybla { rtt0 } => SlowStartConfig::Hybla { rtt0: *rtt0 },
            _ => SlowStartConfig::Classic,
        },
        Some(ss) => parse_slow_start(spec, ss)?,
    };
    if let Some(why) = standalone_refusal(&avoidance, &slow_start, &taken.standalone_refusals) {
        return Err(err(spec, why));
    }
    Ok(ControllerSpec {
        avoidance,
        slow_start,
        modifiers: taken.modifiers,
    })
}

/// Parses the avoidance part, `NAME[:OPTION,...]`.
fn parse_avoidance(spec: &str, part: &str) -> Result<AvoidanceConfig, SpecError> {
    let (ca_name, ca_opts) = split_opts(part);
    let mut avoidance = match ca_name {
        "newreno" | "reno" => AvoidanceConfig::newreno(),
        "cubic" => AvoidanceConfig::Cubic(CubicConfig::default()),
        "hybla" => AvoidanceConfig::Hybla { rtt0: HYBLA_RTT0 },
        "bbr" => AvoidanceConfig::Bbr,
        "bbr3" => AvoidanceConfig::Bbr3(Box::new(
            crate::bbr3::Bbr3Config::parse_options(&ca_opts).map_err(|m| err(spec, m))?,
        )),
        other => {
            return Err(err(
                spec,
                format!("unknown congestion avoidance '{other}'; valid: {AVOIDANCES}"),
            ));
        }
    };
    for opt in ca_opts {
        match (&mut avoidance, opt.split_once('=')) {
            (AvoidanceConfig::Bbr3(_), _) => {}
            (AvoidanceConfig::Hybla { rtt0 }, Some(("rtt0", v))) => {
                *rtt0 = millis(spec, "rtt0", v)?
            }
            (
                AvoidanceConfig::NewReno {
                    loss_reduction_factor,
                },
                Some(("loss-reduction", v)),
            ) => {
                *loss_reduction_factor = match v.parse::<f64>() {
                    Ok(x) if x > 0.0 && x < 1.0 => x,
                    _ => {
                        return Err(err(
                            spec,
                            format!("loss-reduction must be a fraction in (0, 1), got '{v}'"),
                        ));
                    }
                }
            }
            _ => return Err(err(spec, format!("unknown option '{opt}' for {ca_name}"))),
        }
    }
    Ok(avoidance)
}

/// Why a controller of its own (the BBRs) refuses what the spec gave it: a slow start
/// other than the default, or any modifier (`modifier_refusals`, in the order parsed).
fn standalone_refusal(
    avoidance: &AvoidanceConfig,
    slow_start: &SlowStartConfig,
    modifier_refusals: &[&'static str],
) -> Option<String> {
    if !avoidance.stands_alone() {
        return None;
    }
    let why = if *slow_start != SlowStartConfig::Classic {
        "has its own startup and takes no slow start"
    } else {
        modifier_refusals.first()?
    };
    let name = avoidance.name();
    Some(if why.starts_with("takes") {
        let own = if name == "bbr" {
            "is quinn's own"
        } else {
            "is a controller of its own"
        };
        format!("{name} {own} and {why}")
    } else {
        format!("{name} {why}")
    })
}

fn split_opts(part: &str) -> (&str, Vec<&str>) {
    match part.split_once(':') {
        Some((name, opts)) => (
            name,
            opts.split(',')
                .map(str::trim)
                .filter(|o| !o.is_empty())
                .collect(),
        ),
        None => (part, Vec::new()),
    }
}

fn parse_slow_start(spec: &str, part: &str) -> Result<SlowStartConfig, SpecError> {
    let (name, opts) = split_opts(part);
    match name {
        "classic" | "ss" => {
            if let Some(opt) = opts.first() {
                return Err(err(
                    spec,
                    format!("classic slow start takes no options, got '{opt}'"),
                ));
            }
            Ok(SlowStartConfig::Classic)
        }
        "hybla" => {
            let mut rtt0 = HYBLA_RTT0;
            for opt in opts {
                match opt.split_once('=') {
                    Some(("rtt0", v)) => rtt0 = millis(spec, "rtt0", v)?,
                    _ => {
                        return Err(err(
                            spec,
                            format!("unknown hybla option '{opt}'; valid: rtt0=MS"),
                        ));
                    }
                }
            }
            Ok(SlowStartConfig::Hybla { rtt0 })
        }
        "hystart++" | "hspp" | "hystartpp" => {
            let mut c = HyStartConfig::default();
            for opt in opts {
                let Some((key, value)) = opt.split_once('=') else {
                    return Err(err(
                        spec,
                        format!("unknown hystart++ option '{opt}'; valid: {HYSTART_OPTIONS}"),
                    ));
                };
                match key {
                    "n-rtt-sample" => c.n_rtt_sample = number(spec, key, value)?,
                    "css-rounds" => c.css_rounds = number(spec, key, value)?,
                    "css-divisor" => c.css_growth_divisor = positive(spec, key, value)?,
                    "divisor" => c.min_rtt_divisor = positive(spec, key, value)?,
                    "min-thresh" => c.min_rtt_thresh = millis(spec, key, value)?,
                    "max-thresh" => c.max_rtt_thresh = millis(spec, key, value)?,
                    "ack-limit" => {
                        c.ack_growth_limit_segments = Some(u64::from(positive(spec, key, value)?))
                    }
                    _ => {
                        return Err(err(
                            spec,
                            format!("unknown hystart++ option '{opt}'; valid: {HYSTART_OPTIONS}"),
                        ));
                    }
                }
            }
            Ok(SlowStartConfig::HyStartPlusPlus(c))
        }
        "hystart" => parse_linux_hystart(spec, &opts).map(SlowStartConfig::LinuxHyStart),
        "search" => parse_search(spec, &opts).map(SlowStartConfig::Search),
        other => Err(err(
            spec,
            format!("unknown slow start '{other}'; valid: {SLOW_STARTS}"),
        )),
    }
}

fn parse_linux_hystart(spec: &str, opts: &[&str]) -> Result<LinuxHyStartConfig, SpecError> {
    let mut c = LinuxHyStartConfig::default();
    let (mut ack_train, mut delay) = (false, false);
    let unknown = |opt: &str| {
        err(
            spec,
            format!("unknown hystart option '{opt}'; valid: {LINUX_HYSTART_OPTIONS}"),
        )
    };
    for opt in opts {
        match *opt {
            "ack-train" => ack_train = true,
            "delay" => delay = true,
            "unpaced" => c.paced = false,
            _ => {
                let Some((key, value)) = opt.split_once('=') else {
                    return Err(unknown(opt));
                };
                match key {
                    "low-window" => c.low_window_segments = number(spec, key, value)?,
                    "ack-delta" => c.ack_delta = millis(spec, key, value)?,
                    "ack-delay" => c.ack_delay = millis(spec, key, value)?,
                    "min-samples" => c.min_samples = number(spec, key, value)?,
                    "min-thresh" => c.delay_thresh_min = millis(spec, key, value)?,
                    "max-thresh" => c.delay_thresh_max = millis(spec, key, value)?,
                    "divisor" => c.delay_divisor = positive(spec, key, value)?,
                    _ => return Err(unknown(opt)),
                }
            }
        }
    }
    c.detect = match (ack_train, delay) {
        (true, false) => HyStartDetect::AckTrain,
        (false, true) => HyStartDetect::Delay,
        _ => HyStartDetect::Both,
    };
    Ok(c)
}

/// Refuses two options of one group (`v2,v3`, `exit,shadow`) and a key given twice
/// (`thresh=0.3,thresh=0.4`): the later one would silently win.
fn one_of_each(spec: &str, opts: &[&str], groups: &[&[&str]]) -> Result<(), SpecError> {
    let group = |opt: &str| {
        let key = opt.split_once('=').map_or(opt, |(k, _)| k);
        groups
            .iter()
            .position(|g| g.contains(&key))
            .map_or_else(|| key.to_string(), |i| format!("group {i}"))
    };
    for (i, later) in opts.iter().enumerate() {
        if let Some(earlier) = opts[..i].iter().find(|o| group(o) == group(later)) {
            return Err(err(
                spec,
                format!("options '{earlier}' and '{later}' contradict each other; give one"),
            ));
        }
    }
    Ok(())
}

fn parse_search(spec: &str, opts: &[&str]) -> Result<SearchConfig, SpecError> {
    one_of_each(
        spec,
        opts,
        &[
            &["v2", "v3", "draft"],
            &["set-ssthresh", "lower-cwnd", "drain"],
            &["exit", "shadow"],
            &["round", "interp", "interp-forward"],
            &["no-reset", "reset"],
        ],
    )?;
    // The version sets the defaults, so apply it first wherever it is written.
    let mut c = Search::draft();
    for opt in opts {
        match *opt {
            "v2" => c = Search::v2(),
            "v3" => c = Search::v3(),
            "draft" => c = Search::draft(),
            _ => {}
        }
    }
    for opt in opts {
        match *opt {
            "v2" | "v3" | "draft" => {}
            "set-ssthresh" => c.exit_action = ExitAction::SetSsthresh,
            "lower-cwnd" => c.exit_action = ExitAction::LowerCwnd,
            "drain" => c.exit_action = ExitAction::DrainToTarget,
            "exit" => c.mode = SearchMode::Exit,
            "shadow" => c.mode = SearchMode::Shadow,
            "round" => c.prev_point = PrevPoint::Round,
            "interp" => c.prev_point = PrevPoint::Interpolate,
            "interp-forward" => c.prev_point = PrevPoint::InterpolateForward,
            "no-reset" => c.missed_bins_reset = None,
            _ => {
                let Some((key, value)) = opt.split_once('=') else {
                    return Err(err(
                        spec,
                        format!("unknown search option '{opt}'; valid: {SEARCH_OPTIONS}"),
                    ));
                };
                match key {
                    "thresh" => c.threshold = fraction(spec, key, value)?,
                    "window" => {
                        c.window_factor = float(spec, key, value)?;
                        if !(c.window_factor > 0.0 && c.window_factor <= 100.0) {
                            return Err(err(spec, format!("window={value} must be in (0, 100]")));
                        }
                    }
                    "bins" => c.bins = bounded(spec, key, value, 1, 1000)?,
                    "extra" => c.extra_bins = bounded(spec, key, value, 1, 1000)?,
                    "reset" => c.missed_bins_reset = Some(number(spec, key, value)?),
                    "clock" => {
                        c.clock = match value {
                            "ms" => SearchClock::Millis,
                            "exact" => SearchClock::Exact,
                            _ => {
                                return Err(err(
                                    spec,
                                    format!("clock={value}: valid values are ms, exact"),
                                ));
                            }
                        }
                    }
                    "lookback" => {
                        c.lookback_rtt = match value {
                            "auto" => LookbackRtt::Auto,
                            "latest" => LookbackRtt::Latest,
                            "smoothed" => LookbackRtt::Smoothed,
                            "min" => LookbackRtt::Min,
                            "unloaded" => LookbackRtt::Unloaded,
                            _ => {
                                return Err(err(
                                    spec,
                                    format!(
                                        "lookback={value}: valid values are auto, latest, smoothed, min, unloaded"
                                    ),
                                ));
                            }
                        }
                    }
                    "app-limited" => {
                        c.skip_app_limited = match value {
                            "skip" => true,
                            "count" => false,
                            _ => {
                                return Err(err(
                                    spec,
                                    format!("app-limited={value}: valid values are skip, count"),
                                ));
                            }
                        }
                    }
                    _ => {
                        return Err(err(
                            spec,
                            format!("unknown search option '{opt}'; valid: {SEARCH_OPTIONS}"),
                        ));
                    }
                }
            }
        }
    }
    Ok(c)
}

fn number(spec: &str, key: &str, value: &str) -> Result<u32, SpecError> {
    value
        .parse()
        .map_err(|_| err(spec, format!("{key}={value} is not a whole number")))
}

fn positive(spec: &str, key: &str, value: &str) -> Result<u32, SpecError> {
    bounded(spec, key, value, 1, u32::MAX)
}

fn bounded(spec: &str, key: &str, value: &str, min: u32, max: u32) -> Result<u32, SpecError> {
    let n = number(spec, key, value)?;
    if n < min || n > max {
        return Err(err(
            spec,
            format!("{key}={value} must be between {min} and {max}"),
        ));
    }
    Ok(n)
}

fn float(spec: &str, key: &str, value: &str) -> Result<f64, SpecError> {
    value
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| err(spec, format!("{key}={value} is not a number")))
}

fn fraction(spec: &str, key: &str, value: &str) -> Result<f64, SpecError> {
    let v = float(spec, key, value)?;
    if !(v > 0.0 && v < 1.0) {
        return Err(err(
            spec,
            format!("{key}={value} must be between 0 and 1 (exclusive)"),
        ));
    }
    Ok(v)
}

fn millis(spec: &str, key: &str, value: &str) -> Result<Duration, SpecError> {
    let v = float(spec, key, value)?;
    if !(0.0..=3_600_000.0).contains(&v) {
        return Err(err(
            spec,
            format!("{key}={value} must be milliseconds between 0 and 3600000"),
        ));
    }
    Ok(Duration::from_secs_f64(v / 1000.0))
}

fn ms(d: Duration) -> String {
    format!("{}", d.as_secs_f64() * 1000.0)
}

/// Writes the canonical spec string of a configuration: the avoidance, then (unless it
/// is a controller of its own) the slow start and the modifiers.
pub(crate) fn write_spec(
    f: &mut fmt::Formatter<'_>,
    avoidance: &AvoidanceConfig,
    slow_start: &SlowStartConfig,
    modifiers: &Modifiers,
) -> fmt::Result {
    match avoidance {
        AvoidanceConfig::Hybla { rtt0 } if *rtt0 != HYBLA_RTT0 => {
            write!(f, "hybla:rtt0={}", ms(*rtt0))?
        }
        AvoidanceConfig::Bbr3(c) => write!(f, "{c}")?,
        AvoidanceConfig::NewReno {
            loss_reduction_factor: x,
        } if *x != crate::avoidance::newreno::LOSS_REDUCTION_FACTOR => {
            write!(f, "newreno:loss-reduction={x}")?
        }
        other => f.write_str(other.name())?,
    }
    if avoidance.stands_alone() {
        return Ok(());
    }
    write_slow_start(f, slow_start)?;
    modifiers.write(f)
}

/// Writes the `+SLOWSTART[:OPTION,...]` part, with the options not at their defaults.
fn write_slow_start(f: &mut fmt::Formatter<'_>, slow_start: &SlowStartConfig) -> fmt::Result {
    match slow_start {
        SlowStartConfig::Classic => f.write_str("+classic"),
        SlowStartConfig::Hybla { rtt0 } if *rtt0 == HYBLA_RTT0 => f.write_str("+hybla"),
        SlowStartConfig::Hybla { rtt0 } => write!(f, "+hybla:rtt0={}", ms(*rtt0)),
        SlowStartConfig::HyStartPlusPlus(c) => {
            f.write_str("+hystart++")?;
            write_opts(f, &hystart_plus_plus_options(c))
        }
        SlowStartConfig::LinuxHyStart(c) => {
            f.write_str("+hystart")?;
            write_opts(f, &linux_hystart_options(c))
        }
        SlowStartConfig::Search(c) => {
            f.write_str("+search")?;
            write_opts(f, &search_options(c))
        }
    }
}

fn hystart_plus_plus_options(c: &HyStartConfig) -> Vec<String> {
    let d = HyStartConfig::default();
    let mut opts = Vec::new();
    if c.n_rtt_sample != d.n_rtt_sample {
        opts.push(format!("n-rtt-sample={}", c.n_rtt_sample));
    }
    if c.css_rounds != d.css_rounds {
        opts.push(format!("css-rounds={}", c.css_rounds));
    }
    if c.css_growth_divisor != d.css_growth_divisor {
        opts.push(format!("css-divisor={}", c.css_growth_divisor));
    }
    if c.min_rtt_divisor != d.min_rtt_divisor {
        opts.push(format!("divisor={}", c.min_rtt_divisor));
    }
    if c.min_rtt_thresh != d.min_rtt_thresh {
        opts.push(format!("min-thresh={}", ms(c.min_rtt_thresh)));
    }
    if c.max_rtt_thresh != d.max_rtt_thresh {
        opts.push(format!("max-thresh={}", ms(c.max_rtt_thresh)));
    }
    if let Some(l) = c.ack_growth_limit_segments {
        opts.push(format!("ack-limit={l}"));
    }
    opts
}

fn linux_hystart_options(c: &LinuxHyStartConfig) -> Vec<String> {
    let d = LinuxHyStartConfig::default();
    let mut opts = Vec::new();
    match c.detect {
        HyStartDetect::AckTrain => opts.push("ack-train".to_string()),
        HyStartDetect::Delay => opts.push("delay".to_string()),
        HyStartDetect::Both => {}
    }
    if c.low_window_segments != d.low_window_segments {
        opts.push(format!("low-window={}", c.low_window_segments));
    }
    if c.ack_delta != d.ack_delta {
        opts.push(format!("ack-delta={}", ms(c.ack_delta)));
    }
    if c.ack_delay != d.ack_delay {
        opts.push(format!("ack-delay={}", ms(c.ack_delay)));
    }
    if c.min_samples != d.min_samples {
        opts.push(format!("min-samples={}", c.min_samples));
    }
    if c.delay_thresh_min != d.delay_thresh_min {
        opts.push(format!("min-thresh={}", ms(c.delay_thresh_min)));
    }
    if c.delay_thresh_max != d.delay_thresh_max {
        opts.push(format!("max-thresh={}", ms(c.delay_thresh_max)));
    }
    if c.delay_divisor != d.delay_divisor {
        opts.push(format!("divisor={}", c.delay_divisor));
    }
    if !c.paced {
        opts.push("unpaced".into());
    }
    opts
}

fn search_options(c: &SearchConfig) -> Vec<String> {
    let d = match c.version {
        SearchVersion::V2 => Search::v2(),
        SearchVersion::V3 => Search::v3(),
        SearchVersion::Draft => Search::draft(),
    };
    let mut opts = vec![c.version.as_str().to_string()];
    if c.exit_action != d.exit_action {
        opts.push(c.exit_action.as_str().into());
    }
    if c.mode != d.mode {
        opts.push("shadow".into());
    }
    if c.prev_point != d.prev_point {
        opts.push(
            match c.prev_point {
                PrevPoint::Round => "round",
                PrevPoint::Interpolate => "interp",
                PrevPoint::InterpolateForward => "interp-forward",
            }
            .into(),
        );
    }
    if c.threshold != d.threshold {
        opts.push(format!("thresh={}", c.threshold));
    }
    if c.window_factor != d.window_factor {
        opts.push(format!("window={}", c.window_factor));
    }
    if c.bins != d.bins {
        opts.push(format!("bins={}", c.bins));
    }
    if c.extra_bins != d.extra_bins {
        opts.push(format!("extra={}", c.extra_bins));
    }
    if c.missed_bins_reset != d.missed_bins_reset {
        opts.push(match c.missed_bins_reset {
            Some(n) => format!("reset={n}"),
            None => "no-reset".into(),
        });
    }
    if c.lookback_rtt != d.lookback_rtt {
        opts.push(format!("lookback={}", c.lookback_rtt.as_str()));
    }
    if c.clock != d.clock {
        opts.push(format!("clock={}", c.clock.as_str()));
    }
    if c.skip_app_limited != d.skip_app_limited {
        let v = if c.skip_app_limited { "skip" } else { "count" };
        opts.push(format!("app-limited={v}"));
    }
    opts
}

fn write_opts(f: &mut fmt::Formatter<'_>, opts: &[String]) -> fmt::Result {
    if opts.is_empty() {
        return Ok(());
    }
    write!(f, ":{}", opts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_examples() {
        let c = parse_spec("cubic+search").unwrap();
        assert_eq!(c.avoidance.name(), "cubic");
        assert_eq!(c.slow_start, SlowStartConfig::Search(Search::draft()));

        let c = parse_spec("newreno+hystart++").unwrap();
        assert_eq!(c.avoidance, AvoidanceConfig::newreno());
        assert!(matches!(c.slow_start, SlowStartConfig::HyStartPlusPlus(_)));
        let c = parse_spec("reno:loss-reduction=0.7+search:v2").unwrap();
        assert_eq!(
            c.avoidance,
            AvoidanceConfig::NewReno {
                loss_reduction_factor: 0.7
            }
        );
        for bad in [
            "newreno:loss-reduction=1",
            "newreno:loss-reduction=x",
            "newreno:beta=0.7",
        ] {
            let e = parse_spec(bad).unwrap_err().to_string();
            assert!(!e.contains('\n') && e.contains("newreno"), "{bad}: {e}");
        }

        let c = parse_spec("cubic+search:v2,lower-cwnd,thresh=0.3").unwrap();
        let SlowStartConfig::Search(s) = &c.slow_start else {
            panic!("not search")
        };
        assert_eq!(s.version, SearchVersion::V2);
        assert_eq!(s.exit_action, ExitAction::LowerCwnd);
        assert_eq!(s.threshold, 0.3);
    }

    #[test]
    fn contradicting_search_options_are_refused() {
        for spec in [
            "cubic+search:v2,v3",
            "cubic+search:exit,shadow",
            "cubic+search:v3,lower-cwnd,drain",
            "cubic+search:thresh=0.3,thresh=0.4",
            "cubic+search:no-reset,reset=3",
        ] {
            let e = parse_spec(spec).unwrap_err().to_string();
            assert!(e.contains("contradict"), "{spec}: {e}");
        }
        assert!(parse_spec("cubic+search:v3,shadow,drain,thresh=0.3").is_ok());
    }

    #[test]
    fn defaults_per_avoidance() {
        assert_eq!(
            parse_spec("cubic").unwrap().slow_start,
            SlowStartConfig::Classic
        );
        assert_eq!(
            parse_spec("hybla").unwrap().slow_start,
            SlowStartConfig::Hybla { rtt0: HYBLA_RTT0 }
        );
        assert_eq!(parse_spec("BBR").unwrap().avoidance, AvoidanceConfig::Bbr);
    }

    #[test]
    fn misspelled_slow_start_names_the_valid_choices() {
        let e = parse_spec("cubic+serch").unwrap_err().to_string();
        assert!(e.contains("'serch'"), "{e}");
        assert!(
            e.contains("classic, hystart++, hystart, hybla, search"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        let e = parse_spec("cubik").unwrap_err().to_string();
        assert!(e.contains("newreno, cubic, hybla, bbr3, bbr"), "{e}");
    }

    #[test]
    fn bad_option_values_are_errors() {
        for bad in [
            "cubic+search:thresh=1.5",
            "cubic+search:thresh=abc",
            "cubic+search:bins=0",
            "cubic+search:v9",
            "cubic+hystart++:css-rounds=-1",
            "cubic+classic:fast",
            "bbr+search",
            "",
            "cubic+search:window=0",
            "hybla:rtt0=-3",
            "cubic+hystart:fast",
            "cubic+hystart:delay=1",
            "cubic+hystart:low-window=-1",
            "cubic+hystart:low-window=x",
            "cubic+hystart:ack-delta=-2",
            "cubic+hystart:ack-delay=abc",
            "cubic+hystart:min-samples=1.5",
            "cubic+hystart:divisor=0",
            "cubic+hystart:max-thresh=",
            "cubic+hystart:css-rounds=3",
            "cubic+hystart+",
            "bbr+hystart",
            "bbr+burst",
            "bbr+floor",
            "bbr3+search",
            "bbr3+burst",
            "bbr3+cr",
            "bbr3+unpaced",
            "bbr+unpaced",
            "cubic+unpaced:fast",
            "cubic+search:clock=ns",
            "bbr3+loss-filter",
            "bbr3:beta=0",
            "bbr3:beta=1.5",
            "bbr3:loss-thresh=abc",
            "bbr3:startup-gain=inf",
            "bbr3:probe-rtt-interval=-5",
            "bbr3:bw-cycles=0",
            "bbr3:pacing=fast",
            "bbr3:fast",
            "bbr3:beta=0.5,beta=0.6",
            "bbr3:max-quantum=1",
            "cubic+burst:divisor=0",
            "cubic+floor:ref=0",
            "cubic+loss-filter:cr+cr:off",
            "cubic+jump:bound=5",
            "cubic+burst:time=0",
        ] {
            let e = parse_spec(bad).unwrap_err().to_string();
            assert!(!e.is_empty() && !e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn canonical_string_round_trips() {
        for spec in [
            "cubic+search",
            "cubic+search:v2",
            "cubic+search:v3",
            "cubic+search:v2,lower-cwnd,thresh=0.3",
            "cubic+search:draft,drain,shadow",
            "cubic+search:v2,interp,extra=10,no-reset",
            "cubic+search:draft,lookback=min",
            "cubic+search:draft,lookback=latest",
            "cubic+search:v2,lookback=latest+growth:x=4",
            "cubic+search+burst+floor+jump",
            "newreno:loss-reduction=0.7+search:v2+unpaced",
            "cubic+search:v2,clock=exact",
            "cubic+search:draft,clock=ms+unpaced",
            "cubic+search+growth:x=3+floor:ref=200,max-rtt=400+jump+burst:divisor=8,min=65536,min-rtt=100",
            "newreno+hystart++:css-rounds=3,min-thresh=2.5",
            "cubic+hystart",
            "newreno+hystart",
            "cubic+hystart:delay",
            "cubic+hystart:ack-train,unpaced",
            "cubic+hystart:ack-train,delay",
            "cubic+hystart:unpaced,low-window=8,ack-delta=1.5,ack-delay=0,min-samples=4",
            "cubic+hystart:min-thresh=2,max-thresh=8.5,divisor=4",
            "hybla",
            "hybla:rtt0=50",
            "cubic+hybla",
            "newreno",
            "bbr",
            "bbr3",
            "bbr3:beta=0.5,loss-thresh=0.05",
            "bbr3:probe-rtt-interval=10000,pacing=window",
            "bbr3:extra-acked-max=50",
            "BBR3:Up-Gain=1.5",
        ] {
            let parsed = parse_spec(spec).unwrap();
            let canonical = parsed.to_string();
            let again = parse_spec(&canonical).unwrap();
            assert_eq!(again.to_string(), canonical, "{spec}");
            assert_eq!(again, parsed, "{spec}");
        }
        assert!(
            parse_spec("cubic+search:v2+unpaced")
                .unwrap()
                .modifiers
                .unpaced
                .is_some()
        );
        assert!(
            parse_spec("cubic+search:v2")
                .unwrap()
                .modifiers
                .unpaced
                .is_none()
        );
        let SlowStartConfig::Search(s) = parse_spec("cubic+search:v2,clock=exact")
            .unwrap()
            .slow_start
        else {
            panic!("not search")
        };
        assert_eq!(s.clock, SearchClock::Exact);
        assert_eq!(
            parse_spec("reno:loss-reduction=0.7+search:v2+unpaced")
                .unwrap()
                .to_string(),
            "newreno:loss-reduction=0.7+search:v2+unpaced"
        );
        assert_eq!(
            parse_spec("cubic+search").unwrap().to_string(),
            "cubic+search:draft"
        );
        assert_eq!(
            parse_spec("CUBIC+HyStart:unpaced,delay,low-window=16")
                .unwrap()
                .to_string(),
            "cubic+hystart:delay,unpaced"
        );
    }

    #[test]
    fn bbr3_takes_the_draft_constants_and_overrides_them_by_name() {
        use crate::bbr3::{Bbr3Config, Bbr3Pacing, LOSS_THRESH, PROBE_RTT_INTERVAL};
        let c = parse_spec("bbr3").unwrap();
        let AvoidanceConfig::Bbr3(b) = &c.avoidance else {
            panic!("not bbr3")
        };
        assert_eq!(**b, Bbr3Config::default());
        assert_eq!(b.loss_thresh, LOSS_THRESH);
        assert_eq!(c.to_string(), "bbr3");
        let c = parse_spec("bbr3:loss-thresh=0.05,probe-rtt-interval=2500,pacing=window").unwrap();
        let AvoidanceConfig::Bbr3(b) = &c.avoidance else {
            panic!("not bbr3")
        };
        assert_eq!(b.loss_thresh, 0.05);
        assert_eq!(b.probe_rtt_interval, Duration::from_millis(2500));
        assert_ne!(b.probe_rtt_interval, PROBE_RTT_INTERVAL);
        assert_eq!(b.pacing, Bbr3Pacing::Window);
        assert_eq!(
            c.to_string(),
            "bbr3:probe-rtt-interval=2500,loss-thresh=0.05,pacing=window"
        );
        let e = parse_spec("bbr3:gain=2").unwrap_err().to_string();
        assert!(
            e.contains("'gain=2'") && e.contains("startup-gain=F"),
            "{e}"
        );
        let e = parse_spec("bbr3+hystart").unwrap_err().to_string();
        assert!(e.contains("bbr3 has its own startup"), "{e}");
    }

    #[test]
    fn hystart_and_hystart_plus_plus_are_different_slow_starts() {
        let classic = parse_spec("cubic+hystart").unwrap();
        assert_eq!(
            classic.slow_start,
            SlowStartConfig::LinuxHyStart(LinuxHyStartConfig::default())
        );
        assert_eq!(classic.slow_start.name(), "hystart");
        assert_eq!(classic.to_string(), "cubic+hystart");
        for spec in ["cubic+hystart++", "cubic+hspp", "cubic+hystartpp"] {
            let c = parse_spec(spec).unwrap();
            assert_eq!(
                c.slow_start,
                SlowStartConfig::HyStartPlusPlus(HyStartConfig::default()),
                "{spec}"
            );
            assert_eq!(c.to_string(), "cubic+hystart++");
        }
        // Options of one are not options of the other.
        assert!(parse_spec("cubic+hystart:css-rounds=3").is_err());
        assert!(parse_spec("cubic+hystart++:unpaced").is_err());
        let c = parse_spec("newreno+hystart:ack-train,unpaced,ack-delta=3").unwrap();
        let SlowStartConfig::LinuxHyStart(h) = &c.slow_start else {
            panic!("not hystart")
        };
        assert_eq!(h.detect, HyStartDetect::AckTrain);
        assert!(!h.paced);
        assert_eq!(h.ack_delta, Duration::from_millis(3));
        let e = parse_spec("cubic+hystart:fast").unwrap_err().to_string();
        assert!(
            e.contains("'fast'") && e.contains("ack-train, delay"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    /// A spec parsed once keeps its text as written (what records print), names what a
    /// fresh parse names, and says whether the profile's transport half goes with it.
    #[test]
    fn a_parsed_spec_keeps_its_text_and_names_what_a_parse_names() {
        for text in [
            "cubic",
            "Satellite",
            " satellite+jump:cap=2 ",
            "CUBIC+HyStart:unpaced,delay",
            "bbr3:loss-thresh=0.05",
            "newreno+search:v2+cr:off",
        ] {
            let spec = CcSpec::parse(text).unwrap();
            assert_eq!(spec.to_string(), text);
            assert_eq!(spec, text);
            assert_eq!(spec.controller(), &parse_spec(text).unwrap());
            assert_eq!(spec.canonical(), parse_spec(text).unwrap().to_string());
            assert_eq!(spec.config().to_string(), spec.canonical());
            assert_eq!(
                spec.is_profile(),
                text.trim().to_ascii_lowercase().starts_with("satellite"),
                "{text}"
            );
            assert_eq!(
                CcSpec::parse(&spec.canonical()).unwrap().controller(),
                spec.controller()
            );
        }
        assert_eq!(
            CcSpec::parse("satellite").unwrap().canonical(),
            crate::profile::satellite_cc().to_string()
        );
    }

    /// A bad spec gives the one-line error it gave before a typed value existed.
    #[test]
    fn a_bad_spec_gives_the_same_one_line_error() {
        for bad in [
            "cubic+serch",
            "satellite+bbr3",
            "satellite+",
            "bogus",
            "bbr3+hystart",
            "",
        ] {
            let e = CcSpec::parse(bad).unwrap_err();
            assert_eq!(e, bad.parse::<crate::CongestionConfig>().unwrap_err());
            let e = e.to_string();
            assert!(
                e.starts_with(&format!("invalid congestion control spec '{bad}'")),
                "{e}"
            );
            assert!(!e.contains('\n'), "{e}");
        }
    }

    /// Records write a spec as its text and read it back parsed.
    #[cfg(feature = "serde")]
    #[test]
    fn a_spec_is_written_as_its_text() {
        let spec = CcSpec::parse("satellite+rollback").unwrap();
        let json = serde_json::to_string(&spec).unwrap();
        assert_eq!(json, "\"satellite+rollback\"");
        let back: CcSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(back.controller(), spec.controller());
        assert!(back.is_profile());
        let e = serde_json::from_str::<CcSpec>("\"cubic+serch\"").unwrap_err();
        assert!(e.to_string().contains("unknown slow start 'serch'"), "{e}");
    }
}
