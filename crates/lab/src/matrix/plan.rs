//! A matrix's plan: its spec checked against the adapters, then expanded into runs (QUIC
//! client x server pairs and kernel TCP variants) with stable run ids. Apart from running
//! them ([`super::execute`]) so that `satquic matrix` can refuse a bad spec before it
//! writes anything.

use std::collections::BTreeSet;

use satquic_net::peers::{self, AdapterFile};

use super::MatrixSpec;
use crate::LabError;

/// One download of the matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixRun {
    pub index: usize,
    pub run_id: String,
    pub preset: String,
    pub cc: String,
    pub rep: u32,
    pub seed: u64,
    pub client: String,
    pub server: String,
    /// A kernel TCP variant (client = server = its name), not a QUIC pair.
    pub tcp: bool,
}

impl MatrixRun {
    /// `CLIENT/SERVER`, the run's variant in runs.csv.
    pub fn pair(&self) -> String {
        if self.tcp {
            return self.client.clone();
        }
        format!("{}/{}", self.client, self.server)
    }
}

/// Checks a spec against the adapters and expands it, in plan order: presets, then ccs,
/// then repetitions, then clients, then servers (an implementation without a client, such
/// as Caddy, is only a server). Errors are usage errors.
pub fn plan(spec: &MatrixSpec, adapters: &AdapterFile) -> Result<Vec<MatrixRun>, LabError> {
    check(spec, adapters)?;
    let mut runs = Vec::new();
    for preset in &spec.presets {
        for cc in &spec.ccs {
            for rep in 0..spec.repetitions {
                push_pairs(spec, adapters, preset, cc, rep, &mut runs);
            }
        }
        for rep in 0..spec.repetitions {
            push_tcp(spec, adapters, preset, rep, &mut runs);
        }
    }
    Ok(runs)
}

fn usage(m: String) -> LabError {
    LabError::Usage(m)
}

/// Every check of a spec, in the order its errors are reported.
fn check(spec: &MatrixSpec, adapters: &AdapterFile) -> Result<(), LabError> {
    check_impls(spec, adapters)?;
    check_presets(spec)?;
    check_ccs(spec)?;
    spec.sender_cap_spec()
        .map_err(|e| usage(format!("--sender-cap: {e}")))?;
    check_sizes(spec)?;
    check_alpn(spec, adapters)
}

/// At least one implementation, each known to the adapters.
fn check_impls(spec: &MatrixSpec, adapters: &AdapterFile) -> Result<(), LabError> {
    if spec.impls.is_empty() {
        return Err(usage("no implementation to run".into()));
    }
    for name in &spec.impls {
        if adapters.get(name).is_none() && adapters.get_tcp(name).is_none() {
            return Err(usage(format!(
                "unknown implementation {name:?}; the adapters know {}",
                adapters.names().join(", ")
            )));
        }
    }
    Ok(())
}

/// At least one preset, each a link `satquic link` resolves.
fn check_presets(spec: &MatrixSpec) -> Result<(), LabError> {
    if spec.presets.is_empty() {
        return Err(usage("no preset to run on".into()));
    }
    for p in &spec.presets {
        satquic_run::resolve_link(p).map_err(|e| usage(format!("--preset {p}: {e}")))?;
    }
    Ok(())
}

/// Congestion controls the adapters can ask for, at least one.
fn check_ccs(spec: &MatrixSpec) -> Result<(), LabError> {
    for cc in &spec.ccs {
        if cc != "default" && !peers::CC_NAMES.contains(&cc.as_str()) {
            return Err(usage(format!(
                "--cc {cc}: expected default or one of {}",
                peers::CC_NAMES.join(", ")
            )));
        }
    }
    if spec.ccs.is_empty() {
        return Err(usage("--cc: no congestion control".into()));
    }
    Ok(())
}

/// Repetitions, file sizes and the time cap within their ranges.
fn check_sizes(spec: &MatrixSpec) -> Result<(), LabError> {
    if !(1..=1000).contains(&spec.repetitions) {
        return Err(usage(format!(
            "--reps {}: expected 1 to 1000",
            spec.repetitions
        )));
    }
    if spec.bytes == 0 || spec.tcp_bytes == Some(0) {
        return Err(usage("-n: the file must have at least one byte".into()));
    }
    if spec.time_cap.is_zero() {
        return Err(usage("--time-cap must be above zero".into()));
    }
    Ok(())
}

/// Each application protocol is one some implementation's adapter speaks (h3 and
/// hq-interop for the built-in ones; an adapter file may add its own, as qperf's).
fn check_alpn(spec: &MatrixSpec, adapters: &AdapterFile) -> Result<(), LabError> {
    let spoken: BTreeSet<&str> = spec
        .impls
        .iter()
        .filter_map(|n| adapters.get(n))
        .flat_map(|a| a.alpn.iter().map(String::as_str))
        .chain(["h3", "hq-interop"])
        .collect();
    for a in &spec.alpn {
        if !spoken.contains(a.as_str()) {
            return Err(usage(format!(
                "--alpn {a}: no implementation speaks it (expected one of {})",
                spoken.iter().copied().collect::<Vec<_>>().join(", ")
            )));
        }
    }
    Ok(())
}

/// The QUIC pairs of one preset, cc and repetition: every client with every server.
fn push_pairs(
    spec: &MatrixSpec,
    adapters: &AdapterFile,
    preset: &str,
    cc: &str,
    rep: u32,
    runs: &mut Vec<MatrixRun>,
) {
    // Server-only (or client-only) implementations take only their role.
    let with = |role: fn(&peers::Adapter) -> bool| {
        spec.impls
            .iter()
            .filter(move |n| adapters.get(n).is_some_and(role))
    };
    for client in with(|a| a.client.is_some()) {
        for server in with(|a| a.server.is_some()) {
            let seed = spec.seed.wrapping_add(u64::from(rep));
            let key = format!(
                "{preset}|{cc}|{client}|{server}|{}|{seed}|{}|{}",
                spec.bytes,
                spec.time_cap.as_secs_f64(),
                spec.alpn.join(",")
            );
            let run_id = crate::plan::fit_name(
                &format!(
                    "{}__{}--{}__{}__{}__r{:03}-{:08x}",
                    crate::plan::sanitize(preset),
                    crate::plan::sanitize(client),
                    crate::plan::sanitize(server),
                    crate::plan::sanitize(cc),
                    crate::spec::size_label(spec.bytes),
                    rep,
                    crate::plan::fnv1a(key.as_bytes()) as u32
                ),
                crate::plan::MAX_FILE_NAME,
            );
            runs.push(MatrixRun {
                index: runs.len(),
                run_id,
                preset: preset.to_string(),
                cc: cc.to_string(),
                rep,
                seed,
                client: client.clone(),
                server: server.clone(),
                tcp: false,
            });
        }
    }
}

/// The kernel TCP variants of one preset and repetition, whatever the ccs (each variant
/// fixes its own).
fn push_tcp(
    spec: &MatrixSpec,
    adapters: &AdapterFile,
    preset: &str,
    rep: u32,
    runs: &mut Vec<MatrixRun>,
) {
    for t in spec.impls.iter().filter_map(|n| adapters.get_tcp(n)) {
        let seed = spec.seed.wrapping_add(u64::from(rep));
        let key = format!(
            "{preset}|tcp|{}|{}|{seed}|{}",
            t.name,
            spec.tcp_size(),
            spec.time_cap.as_secs_f64()
        );
        let run_id = crate::plan::fit_name(
            &format!(
                "{}__{}__{}__{}__r{:03}-{:08x}",
                crate::plan::sanitize(preset),
                crate::plan::sanitize(&t.name),
                crate::plan::sanitize(&t.cc),
                crate::spec::size_label(spec.tcp_size()),
                rep,
                crate::plan::fnv1a(key.as_bytes()) as u32
            ),
            crate::plan::MAX_FILE_NAME,
        );
        runs.push(MatrixRun {
            index: runs.len(),
            run_id,
            preset: preset.to_string(),
            cc: t.cc.clone(),
            rep,
            seed,
            client: t.name.clone(),
            server: t.name.clone(),
            tcp: true,
        });
    }
}
