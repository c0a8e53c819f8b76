//! A campaign spec resolved: its link entries expanded (presets swept over their
//! parameters, link files read) and its variants and workloads validated, each entry
//! with its label. Apart from the TOML schema ([`super`]) because this is where the
//! spec meets the rest of satquic: presets, link files, cc strings and transport checks.

use std::collections::BTreeMap;
use std::time::Duration;

use satquic_cc::CcSpec;
use satquic_link::LinkSpec;
use satquic_run::{ShaperSpec, TransportSpec};

use crate::beside::beam::BeamSpec;

use super::{
    CampaignSpec, MAX_FLOWS, MIX_SEPARATOR, Mode, SpecError, WorkloadKind, err, format_float,
    size_label,
};

/// A link after expansion: one point of the link matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedLink {
    /// Label used in runs.csv and the report (`thesis-sat:buffer=0.5,plr=0.001`).
    pub label: String,
    /// The preset name without parameters, or the file path.
    pub source: String,
    /// Swept parameters and their values (empty for plain presets and files).
    pub params: BTreeMap<String, String>,
    pub spec: LinkSpec,
}

/// A variant after validation.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedVariant {
    pub label: String,
    /// Its transport; with `auto_sender_cap` the sender cap is set per link by the plan.
    /// For a mix, the first flow's congestion control.
    pub transport: TransportSpec,
    /// A mix (`cc = "bbr|cubic"`): the congestion controls the flows of a run take in
    /// turn, flow i the (i mod n)-th; empty for one congestion control.
    pub mix: Vec<CcSpec>,
    /// `sender_cap = "auto"` (the default): [`ShaperSpec::auto_for`] the data direction
    /// of each link in sim mode, no cap in emulated mode (the relay models the link only).
    pub auto_sender_cap: bool,
}

/// A workload after validation.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedWorkload {
    pub label: String,
    pub kind: WorkloadKind,
    /// Bytes per flow for downloads.
    pub bytes: Option<u64>,
    /// Receive time per flow for timed workloads.
    pub duration: Option<Duration>,
    pub flows: u32,
    pub stagger: Duration,
    /// See [`WorkloadEntry::resume_after`].
    pub resume_after: Option<Duration>,
    /// A beam's users and bulk flows (`kind = "beam"`; `duration` is its window, `flows`
    /// the number of bulk flows).
    pub beam: Option<BeamSpec>,
    /// A beam's `short_cc`, parsed (empty for other kinds).
    pub short_cc: Vec<CcSpec>,
}

impl CampaignSpec {
    /// Expands and validates the link matrix.
    pub fn resolve_links(&self) -> Result<Vec<ResolvedLink>, SpecError> {
        let mut out = Vec::new();
        for (i, entry) in self.links.iter().enumerate() {
            let key = format!("link[{i}]");
            match (&entry.preset, &entry.file) {
                (Some(_), Some(_)) => {
                    return Err(err(&key, "give either preset or file, not both"));
                }
                (None, None) => return Err(err(&key, "needs preset or file")),
                (None, Some(file)) => {
                    if !entry.params.is_empty() {
                        return Err(err(format!("{key}.params"), "only presets take parameters"));
                    }
                    let path = match &self.base_dir {
                        Some(dir) if file.is_relative() => dir.join(file),
                        _ => file.clone(),
                    };
                    let spec = LinkSpec::from_toml_file(&path)
                        .map_err(|e| err(format!("{key}.file"), e))?;
                    let label = entry.label.clone().unwrap_or_else(|| {
                        file.file_stem()
                            .map(|s| s.to_string_lossy().into_owned())
                            .unwrap_or_else(|| file.display().to_string())
                    });
                    out.push(ResolvedLink {
                        label,
                        source: file.display().to_string(),
                        params: BTreeMap::new(),
                        spec,
                    });
                }
                (Some(preset), None) => {
                    if preset.contains(':') && !entry.params.is_empty() {
                        return Err(err(
                            format!("{key}.params"),
                            "the preset already has parameters after ':'",
                        ));
                    }
                    for combo in param_combinations(&key, &entry.params)? {
                        let name = if combo.is_empty() {
                            preset.clone()
                        } else {
                            let p: Vec<String> =
                                combo.iter().map(|(k, v)| format!("{k}={v}")).collect();
                            format!("{preset}:{}", p.join(","))
                        };
                        let spec = satquic_link::presets::lookup(&name)
                            .map_err(|e| err(format!("{key}.preset"), e))?;
                        let (source, params) = match preset.split_once(':') {
                            Some((base, p)) => (
                                base.to_string(),
                                p.split(',')
                                    .filter_map(|kv| kv.split_once('='))
                                    .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                                    .collect(),
                            ),
                            None => (preset.clone(), combo.clone()),
                        };
                        let label = match (&entry.label, combo.is_empty()) {
                            (Some(l), true) => l.clone(),
                            (Some(l), false) => {
                                let p: Vec<String> =
                                    combo.iter().map(|(k, v)| format!("{k}={v}")).collect();
                                format!("{l}:{}", p.join(","))
                            }
                            (None, _) => name.clone(),
                        };
                        out.push(ResolvedLink {
                            label,
                            source,
                            params,
                            spec,
                        });
                    }
                }
            }
        }
        unique(out.iter().map(|l| l.label.as_str()), "link")?;
        Ok(out)
    }

    /// How many links [`CampaignSpec::resolve_links`] makes (a sweep is the product of its
    /// parameters' lists), counted without making them; `None` past `usize::MAX`.
    pub fn link_count(&self) -> Option<usize> {
        self.links.iter().try_fold(0usize, |total, entry| {
            let combos = entry
                .params
                .values()
                .try_fold(1usize, |n, value| match value {
                    toml::Value::Array(items) => n.checked_mul(items.len()),
                    _ => Some(n),
                })?;
            total.checked_add(combos)
        })
    }

    /// Validates the variants (cc strings parse, labels unique).
    pub fn resolve_variants(&self) -> Result<Vec<ResolvedVariant>, SpecError> {
        let mut out = Vec::new();
        for (i, v) in self.variants.iter().enumerate() {
            let key = format!("variant[{i}]");
            let parts: Vec<&str> = v.cc.split(MIX_SEPARATOR).map(str::trim).collect();
            let mut specs = Vec::new();
            for part in &parts {
                if part.is_empty() {
                    return Err(err(
                        format!("{key}.cc"),
                        format!(
                            "{:?}: a mix needs a congestion control on each side of '|'",
                            v.cc
                        ),
                    ));
                }
                specs.push(CcSpec::parse(part).map_err(|e| err(format!("{key}.cc"), e))?);
            }
            let mut t = TransportSpec::with_spec(specs[0].clone());
            let mix = if specs.len() > 1 { specs } else { Vec::new() };
            if let Some(s) = v.initial_window {
                t.initial_window = Some(s.0);
            }
            if let Some(s) = v.receive_window {
                t.receive_window = s.0;
            }
            if let Some(s) = v.stream_receive_window {
                t.stream_receive_window = s.0;
            }
            if let Some(s) = v.send_window {
                t.send_window = s.0;
            }
            if v.initial_rtt.is_some() {
                t.initial_rtt = v.initial_rtt;
            }
            if let Some(m) = v.mtu {
                use satquic_run::transport::{MAX_MTU, MIN_MTU};
                if !(MIN_MTU..=MAX_MTU).contains(&m) {
                    return Err(err(
                        format!("{key}.mtu"),
                        format!("{m} must be between {MIN_MTU} and {MAX_MTU} bytes"),
                    ));
                }
                t.mtu = m;
            }
            if let Some(d) = v.mtu_discovery {
                t.mtu_discovery = d;
            }
            if let Some(a) = v.receive_window_autotune {
                t.receive_window_autotune = a;
            }
            if let Some(p) = v.pto_probe_data {
                t.pto_probe_data = p;
            }
            if let Some(a) = &v.ack_frequency {
                t.ack_frequency = satquic_run::scenario::AckFrequencySpec::parse(a)
                    .map_err(|e| err(format!("{key}.ack_frequency"), e))?;
            }
            let (cap_key, cap) = match (&v.sender_cap, &self.sender_cap) {
                (Some(c), _) => (format!("{key}.sender_cap"), c.as_str()),
                (None, Some(c)) => ("sender_cap".to_string(), c.as_str()),
                (None, None) => ("sender_cap".to_string(), "auto"),
            };
            let auto_sender_cap = cap.trim().eq_ignore_ascii_case("auto");
            if !auto_sender_cap {
                t.sender_shaper = ShaperSpec::parse_cap(cap).map_err(|e| err(cap_key, e))?;
            }
            // The checks every command applies to a transport (windows, initial RTT).
            satquic_run::transport::validate(&t).map_err(|e| err(&key, e))?;
            let label = v.label.clone().unwrap_or_else(|| v.cc.trim().to_string());
            if label.trim().is_empty() {
                return Err(err(format!("{key}.label"), "must not be empty"));
            }
            out.push(ResolvedVariant {
                label,
                transport: t,
                mix,
                auto_sender_cap,
            });
        }
        unique(out.iter().map(|v| v.label.as_str()), "variant")?;
        if let Some(b) = &self.analysis.baseline
            && !out.iter().any(|v| &v.label == b)
        {
            return Err(err(
                "analysis.baseline",
                format!(
                    "{b:?} is not a variant label; labels: {}",
                    out.iter()
                        .map(|v| v.label.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        Ok(out)
    }

    /// Validates the workloads.
    pub fn resolve_workloads(&self) -> Result<Vec<ResolvedWorkload>, SpecError> {
        let mut out = Vec::new();
        for (i, w) in self.workloads.iter().enumerate() {
            let key = format!("workload[{i}]");
            if w.flows == 0 || w.flows > MAX_FLOWS {
                return Err(err(
                    format!("{key}.flows"),
                    format!("{} must be between 1 and {MAX_FLOWS}", w.flows),
                ));
            }
            let stagger = w.stagger.unwrap_or(Duration::ZERO);
            let suffix = if w.flows > 1 {
                format!("x{}", w.flows)
            } else {
                String::new()
            };
            if w.beam.is_some() && w.kind != WorkloadKind::Beam {
                return Err(err(format!("{key}.beam"), "only for kind = \"beam\""));
            }
            let mut short_cc = Vec::new();
            let (bytes, duration, default_label) = match w.kind {
                WorkloadKind::Download | WorkloadKind::Upload => {
                    let (kind, prefix, article) = match w.kind {
                        WorkloadKind::Upload => ("upload", "ul", "an"),
                        _ => ("download", "dl", "a"),
                    };
                    if w.duration.is_some() {
                        return Err(err(
                            format!("{key}.duration"),
                            format!("only for kind = \"timed\"; {article} {kind} has bytes"),
                        ));
                    }
                    let b = w
                        .bytes
                        .ok_or_else(|| {
                            err(
                                format!("{key}.bytes"),
                                format!("required for kind = \"{kind}\""),
                            )
                        })?
                        .0;
                    if b == 0 {
                        return Err(err(format!("{key}.bytes"), "must be above 0"));
                    }
                    (Some(b), None, format!("{prefix}{}{suffix}", size_label(b)))
                }
                WorkloadKind::Timed => {
                    if w.bytes.is_some() {
                        return Err(err(
                            format!("{key}.bytes"),
                            "only for kind = \"download\"; a timed flow has a duration",
                        ));
                    }
                    let d = w.duration.ok_or_else(|| {
                        err(format!("{key}.duration"), "required for kind = \"timed\"")
                    })?;
                    if d.is_zero() {
                        return Err(err(format!("{key}.duration"), "must be above 0"));
                    }
                    (
                        None,
                        Some(d),
                        format!("timed{}{suffix}", satquic_link::units::format_duration(d)),
                    )
                }
                WorkloadKind::Beam => {
                    let (d, short) = beam_window(&key, w)?;
                    short_cc = short;
                    (
                        None,
                        Some(d),
                        format!("beam{}", satquic_link::units::format_duration(d)),
                    )
                }
            };
            let default_label = match w.resume_after {
                Some(_) => format!("{default_label}-resumed"),
                None => default_label,
            };
            if w.resume_after.is_some() && self.mode != Mode::Sim {
                return Err(err(
                    format!("{key}.resume_after"),
                    "resumed connections run in simulation only (mode = \"sim\")",
                ));
            }
            if let Some(gap) = w.resume_after
                && gap > satquic_sim::resume::MAX_RESUME_GAP
            {
                return Err(err(format!("{key}.resume_after"), "must be at most 24 h"));
            }
            let beam = (w.kind == WorkloadKind::Beam).then(|| w.beam.clone().unwrap_or_default());
            out.push(ResolvedWorkload {
                label: w.label.clone().unwrap_or(default_label),
                kind: w.kind,
                bytes,
                duration,
                flows: beam.as_ref().map_or(w.flows, |b| b.bulk),
                stagger,
                resume_after: w.resume_after,
                beam,
                short_cc,
            });
        }
        unique(out.iter().map(|w| w.label.as_str()), "workload")?;
        Ok(out)
    }
}

/// A beam workload's window, after checking that it has one, that the keys of other
/// kinds are absent and that its `beam` table is sound (its `short_cc` parsed); errors
/// name the key.
fn beam_window(key: &str, w: &super::WorkloadEntry) -> Result<(Duration, Vec<CcSpec>), SpecError> {
    if w.bytes.is_some() {
        return Err(err(
            format!("{key}.bytes"),
            "a beam's objects have their own sizes (beam.min_object, beam.max_object)",
        ));
    }
    if w.flows != 1 || w.stagger.is_some() {
        return Err(err(
            format!("{key}.flows"),
            "a beam's bulk flows are beam.bulk, started beam.bulk_stagger apart",
        ));
    }
    if w.resume_after.is_some() {
        return Err(err(format!("{key}.resume_after"), "not for a beam"));
    }
    let d = w.duration.ok_or_else(|| {
        err(
            format!("{key}.duration"),
            "required for kind = \"beam\" (the window objects arrive in)",
        )
    })?;
    if d.is_zero() {
        return Err(err(format!("{key}.duration"), "must be above 0"));
    }
    let short_cc = w
        .beam
        .clone()
        .unwrap_or_default()
        .check(d)
        .map_err(|e| err(key, e))?;
    Ok((d, short_cc))
}

fn unique<'a>(labels: impl Iterator<Item = &'a str>, key: &str) -> Result<(), SpecError> {
    let mut seen = std::collections::BTreeSet::new();
    for l in labels {
        if !seen.insert(l) {
            return Err(err(
                key,
                format!("label {l:?} appears twice; give each entry its own label"),
            ));
        }
    }
    Ok(())
}

/// Cartesian product of swept parameters, in key order, values in the order given.
fn param_combinations(
    key: &str,
    params: &BTreeMap<String, toml::Value>,
) -> Result<Vec<BTreeMap<String, String>>, SpecError> {
    let mut combos = vec![BTreeMap::new()];
    for (name, value) in params {
        let values: Vec<String> = match value {
            toml::Value::Array(items) => {
                if items.is_empty() {
                    return Err(err(
                        format!("{key}.params.{name}"),
                        "empty list; the sweep is empty",
                    ));
                }
                items
                    .iter()
                    .map(|v| scalar(v).ok_or_else(|| not_scalar(key, name)))
                    .collect::<Result<_, _>>()?
            }
            v => vec![scalar(v).ok_or_else(|| not_scalar(key, name))?],
        };
        combos = combos
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.insert(name.clone(), v.clone());
                    c
                })
            })
            .collect();
    }
    Ok(combos)
}

fn not_scalar(key: &str, name: &str) -> SpecError {
    err(
        format!("{key}.params.{name}"),
        "must be a number, a string or a list of them",
    )
}

fn scalar(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(format_float(*f)),
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}
