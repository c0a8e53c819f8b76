//! Expanding a spec into the ordered list of runs.
//!
//! Order: links, then workloads, then repetitions, then variants when `interleave` is on
//! (the variants alternate run by run, as the seeds alternated SEARCH and baseline
//! downloads so that both saw the same hours of the real link); with `interleave = false`
//! all repetitions of a variant come before the next variant. Every variant of a
//! repetition uses the same seed, so variants are compared on the same link randomness.
//!
//! A run's id is readable and stable: `LINK__VARIANT__WORKLOAD__rREP-HASH`, with the
//! labels reduced to `[A-Za-z0-9.=-]` and `HASH` 8 hex digits of a hash of the scenario
//! and mode. Adding a variant to a spec keeps the ids of the runs already made (a resumed
//! campaign runs only the new ones); changing anything a run depends on changes its id
//! (it is run again rather than confused with the old one).
//!
//! An id is a directory name, so it is at most [`MAX_FILE_NAME`] bytes: a longer one (a
//! parameterised link and a long congestion-control spec) keeps its first bytes, then `~`
//! and 8 hex digits of a hash of the whole id, then its `__rREP-HASH` ([`fit_name`]). Ids
//! that fit are as they were, so campaigns written before resume; the full link and spec
//! are in the run's `row.json` and `summary.json`.

use std::time::Duration;

use satquic_run::{DataDirection, FlowSpec, Scenario, ShaperSpec, TransportSpec, Workload};

use crate::spec::{
    CampaignSpec, Mode, ResolvedLink, ResolvedVariant, ResolvedWorkload, SpecError, WorkloadKind,
};

/// Most repetitions (or explicit seeds) a spec may ask for.
pub const MAX_REPETITIONS: usize = 100_000;

/// Most runs a plan may hold (links x workloads x variants x repetitions): a planned run
/// holds its scenario in memory, and 10^5 runs are days of simulation already. Split
/// larger studies into several campaigns.
pub const MAX_RUNS: usize = 100_000;

/// One run of a campaign.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedRun {
    /// Position in the plan (the row order of runs.csv).
    pub index: usize,
    pub run_id: String,
    pub link: ResolvedLink,
    pub variant: String,
    pub workload: ResolvedWorkload,
    /// Repetition number, from 0.
    pub rep: u32,
    pub seed: u64,
    pub mode: Mode,
    pub scenario: Scenario,
}

/// The whole plan and the resolved matrix it came from.
#[derive(Debug, Clone)]
pub struct Plan {
    pub name: String,
    pub runs: Vec<PlannedRun>,
    pub links: Vec<ResolvedLink>,
    pub variants: Vec<ResolvedVariant>,
    pub workloads: Vec<ResolvedWorkload>,
}

impl Plan {
    /// Expands a spec. Errors are usage errors naming the key.
    pub fn new(spec: &CampaignSpec) -> Result<Plan, SpecError> {
        check_repetitions(spec)?;
        // Counted before anything is built: a sweep's links are the product of its
        // parameters' values (four lists of 200 are 1.6 x 10^9 links), and building them to
        // count them took all memory.
        let link_count = spec.link_count();
        let variants = spec.resolve_variants()?;
        let workloads = spec.resolve_workloads()?;
        let seeds = spec.repetition_seeds();
        let runs = [
            link_count.unwrap_or(usize::MAX),
            workloads.len(),
            variants.len(),
            seeds.len(),
        ]
        .into_iter()
        .try_fold(1usize, usize::checked_mul)
        .filter(|n| *n <= MAX_RUNS);
        if runs.is_none() {
            let links = match link_count {
                Some(n) => n.to_string(),
                None => "more than 2^64".to_string(),
            };
            return Err(SpecError(format!(
                "{links} links x {} workloads x {} variants x {} repetitions is more than the \
                 {MAX_RUNS} runs a campaign may plan; split it into several campaigns",
                workloads.len(),
                variants.len(),
                seeds.len()
            )));
        }
        let links = spec.resolve_links()?;
        let mut cells: Vec<(usize, usize, usize, usize)> = Vec::new();
        for l in 0..links.len() {
            for w in 0..workloads.len() {
                if spec.interleave {
                    for r in 0..seeds.len() {
                        for v in 0..variants.len() {
                            cells.push((l, w, r, v));
                        }
                    }
                } else {
                    for v in 0..variants.len() {
                        for r in 0..seeds.len() {
                            cells.push((l, w, r, v));
                        }
                    }
                }
            }
        }
        let runs = cells
            .into_iter()
            .enumerate()
            .map(|(index, (l, w, r, v))| {
                let link = &links[l];
                let variant = &variants[v];
                let workload = &workloads[w];
                let scenario =
                    scenario(link, variant, workload, seeds[r], spec.time_cap, spec.mode);
                let hash = fnv1a(
                    serde_json::to_string(&scenario)
                        .expect("scenarios serialize")
                        .as_bytes(),
                ) ^ fnv1a(spec.mode.as_str().as_bytes());
                let run_id = fit_name(
                    &format!(
                        "{}__{}__{}__r{:03}-{:08x}",
                        sanitize(&link.label),
                        sanitize(&variant.label),
                        sanitize(&workload.label),
                        r,
                        hash as u32
                    ),
                    MAX_FILE_NAME,
                );
                PlannedRun {
                    index,
                    run_id,
                    link: link.clone(),
                    variant: variant.label.clone(),
                    workload: workload.clone(),
                    rep: r as u32,
                    seed: seeds[r],
                    mode: spec.mode,
                    scenario,
                }
            })
            .collect();
        Ok(Plan {
            name: spec.name.clone(),
            runs,
            links,
            variants,
            workloads,
        })
    }

    /// The runs of shard `index` of `of` (round robin over the plan, so each shard gets
    /// a similar mix of links and variants).
    pub fn shard(&self, index: usize, of: usize) -> Vec<&PlannedRun> {
        self.runs
            .iter()
            .filter(|r| of > 0 && r.index % of == index)
            .collect()
    }
}

/// Refuses more than [`MAX_REPETITIONS`] repetitions and seeds past `u64::MAX` before
/// the seeds are listed.
fn check_repetitions(spec: &CampaignSpec) -> Result<(), SpecError> {
    let (key, count) = match &spec.seeds {
        Some(seeds) => ("seeds", seeds.len()),
        None => ("repetitions", spec.repetitions as usize),
    };
    if count > MAX_REPETITIONS {
        return Err(SpecError(format!(
            "{key}: {count} repetitions is more than the {MAX_REPETITIONS} a campaign may plan"
        )));
    }
    if spec.seeds.is_none()
        && spec
            .seed
            .checked_add(u64::from(spec.repetitions.saturating_sub(1)))
            .is_none()
    {
        return Err(SpecError(format!(
            "seed: {} + {} repetitions passes the largest seed, 2^64-1",
            spec.seed, spec.repetitions
        )));
    }
    Ok(())
}

fn scenario(
    link: &ResolvedLink,
    variant: &ResolvedVariant,
    workload: &ResolvedWorkload,
    seed: u64,
    time_cap: Duration,
    mode: Mode,
) -> Scenario {
    let mut transport = variant.transport.clone();
    if variant.auto_sender_cap && mode == Mode::Sim {
        let data = match workload.kind {
            WorkloadKind::Upload => &link.spec.up,
            _ => &link.spec.down,
        };
        transport.sender_shaper = ShaperSpec::auto_for(data.rate.nominal_rate_bps());
    }
    if let Some(beam) = &workload.beam {
        let window = workload.duration.unwrap_or(Duration::from_secs(1));
        return Scenario {
            link: link.spec.clone(),
            flows: beam.flows(
                window,
                seed,
                |i| flow_transport(variant, &transport, i),
                |k| TransportSpec {
                    cc: workload.short_cc[k].clone(),
                    ..transport.clone()
                },
            ),
            seed,
            time_cap,
            resume_after: None,
        };
    }
    let flows = (0..workload.flows)
        .map(|i| FlowSpec {
            start: workload.stagger * i,
            transport: flow_transport(variant, &transport, i),
            workload: match workload.kind {
                WorkloadKind::Download | WorkloadKind::Upload => Workload::Download {
                    bytes: workload.bytes.unwrap_or(1),
                },
                WorkloadKind::Timed | WorkloadKind::Beam => Workload::Timed {
                    duration: workload.duration.unwrap_or(Duration::from_secs(1)),
                },
            },
            direction: match workload.kind {
                WorkloadKind::Upload => DataDirection::Upload,
                _ => DataDirection::Download,
            },
        })
        .collect();
    Scenario {
        link: link.spec.clone(),
        flows,
        seed,
        time_cap,
        resume_after: workload.resume_after,
    }
}

/// Flow `i`'s transport: the variant's, with the `i mod n`-th controller of a mix.
fn flow_transport(variant: &ResolvedVariant, transport: &TransportSpec, i: u32) -> TransportSpec {
    match variant.mix.get(i as usize % variant.mix.len().max(1)) {
        Some(cc) => TransportSpec {
            cc: cc.clone(),
            ..transport.clone()
        },
        None => transport.clone(),
    }
}

/// Labels as file-name parts: `[A-Za-z0-9.=-]` kept, anything else becomes `_`.
pub fn sanitize(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '=') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The longest file name, in bytes, of the file systems campaigns are written on (ext4,
/// XFS, btrfs, tmpfs, NFS, Lustre: NAME_MAX). A longer one is refused with "File name too
/// long" (os error 36).
pub const MAX_FILE_NAME: usize = 255;

/// `name` in at most `max_bytes` bytes, for a file name. A name that fits is returned as it
/// is. A longer one keeps its first bytes (cut at a character boundary) and ends in `~`, 8
/// hex digits of the FNV-1a hash of the whole name, and the name's last `__` part when
/// that is short (a run id's `__rREP-HASH`): names that differ anywhere stay apart, and
/// the cut one still says where it came from. No label reduced by [`sanitize`] holds `~`,
/// so a cut name is never one that fits.
pub fn fit_name(name: &str, max_bytes: usize) -> String {
    if name.len() <= max_bytes {
        return name.to_string();
    }
    let mark = format!("~{:08x}", fnv1a(name.as_bytes()) as u32);
    let tail = name
        .rfind("__")
        .map(|i| &name[i..])
        .filter(|t| t.len() <= 32 && mark.len() + t.len() <= max_bytes)
        .unwrap_or("");
    let mut head = max_bytes.saturating_sub(mark.len() + tail.len());
    while !name.is_char_boundary(head) {
        head -= 1;
    }
    let mut fitted = format!("{}{mark}{tail}", &name[..head]);
    // Only when max_bytes is below the mark's 9 bytes (all ASCII by then).
    fitted.truncate(max_bytes);
    fitted
}

/// 64-bit FNV-1a: a stable hash (Rust's default hasher is not stable across releases).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(extra: &str) -> CampaignSpec {
        CampaignSpec::from_toml_str(
            &format!(
                r#"
name = "t"
repetitions = 2
seed = 7
{extra}
[[link]]
preset = "qir-terrestrial"
[[variant]]
label = "a"
cc = "cubic"
[[variant]]
label = "b"
cc = "cubic+search"
[[workload]]
kind = "download"
bytes = "1MB"
"#
            ),
            None,
        )
        .unwrap()
    }

    #[test]
    fn interleaving_alternates_variants_with_shared_seeds() {
        let plan = Plan::new(&spec("")).unwrap();
        let order: Vec<_> = plan
            .runs
            .iter()
            .map(|r| (r.variant.as_str(), r.seed))
            .collect();
        assert_eq!(order, [("a", 7), ("b", 7), ("a", 8), ("b", 8)]);
        let plan = Plan::new(&spec("interleave = false")).unwrap();
        let order: Vec<_> = plan
            .runs
            .iter()
            .map(|r| (r.variant.as_str(), r.seed))
            .collect();
        assert_eq!(order, [("a", 7), ("a", 8), ("b", 7), ("b", 8)]);
    }

    /// A mix (`cc = "a|b"`) gives the flows of one run the congestion controls in turn.
    #[test]
    fn a_mixed_variant_alternates_the_flows_congestion_control() {
        let toml = r#"
name = "t"
[[link]]
preset = "thesis-sat"
[[variant]]
cc = "bbr | cubic+search"
[[workload]]
kind = "timed"
duration = "30s"
flows = 3
stagger = "5s"
"#;
        let plan = Plan::new(&CampaignSpec::from_toml_str(toml, None).unwrap()).unwrap();
        assert_eq!(plan.variants[0].label, "bbr | cubic+search");
        let flows = &plan.runs[0].scenario.flows;
        let ccs: Vec<(&str, u64)> = flows
            .iter()
            .map(|f| (f.transport.cc.as_str(), f.start.as_secs()))
            .collect();
        assert_eq!(ccs, [("bbr", 0), ("cubic+search", 5), ("bbr", 10)]);
        for bad in ["cubic|", "|cubic", "cubic||bbr", "cubic|bogus"] {
            let e = CampaignSpec::from_toml_str(&toml.replace("bbr | cubic+search", bad), None)
                .and_then(|s| Plan::new(&s).map(|_| ()))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("variant[0].cc") && !e.contains('\n'),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn run_ids_are_stable_and_distinct() {
        let a = Plan::new(&spec("")).unwrap();
        let b = Plan::new(&spec("interleave = false")).unwrap();
        let mut ids_a: Vec<_> = a.runs.iter().map(|r| r.run_id.clone()).collect();
        let mut ids_b: Vec<_> = b.runs.iter().map(|r| r.run_id.clone()).collect();
        assert!(ids_a[0].starts_with("qir-terrestrial__a__dl1MB__r000-"));
        ids_a.sort();
        ids_b.sort();
        assert_eq!(ids_a, ids_b, "ids do not depend on the order");
        ids_a.dedup();
        assert_eq!(ids_a.len(), 4);
        let c = Plan::new(&spec("time_cap = \"30s\"")).unwrap();
        assert_ne!(
            c.runs[0].run_id, a.runs[0].run_id,
            "a changed scenario is a new run"
        );
    }

    /// The spec of a long `satquic sim` that could not store its runs: its run id was 289
    /// bytes, and `.partial-ID-PID@HOST` more ("File name too long", os error 36).
    const LONG_LINK: &str = "starlink-busy:phase=4.814s,slot-seed=1530690897,rate-scale=1.202,\
                             rtt-add=0.8ms,queue=405675,up-queue=44624";
    const LONG_CC: &str = "cubic+search+growth:x=3+floor:iw=15360,max-rtt=1000+jump:cap=1.5,\
                           bound,validate+loss-filter:startup-confirm=2,cr=validating+retreat+\
                           cr:ss-cap=1,jump-on-confirm";

    #[test]
    fn a_name_that_fits_is_kept_and_a_longer_one_is_cut_to_fit_apart_from_others() {
        for short in [
            "",
            "a",
            "qir-terrestrial__a__dl1MB__r000-438b701d",
            &"x".repeat(255),
        ] {
            assert_eq!(fit_name(short, MAX_FILE_NAME), short);
        }
        let id = |cc: &str| {
            format!(
                "{}__{}__dl5MB__r000-438b701d",
                sanitize(LONG_LINK),
                sanitize(cc)
            )
        };
        let (a, b) = (id(LONG_CC), id(&LONG_CC.replace("confirm", "confirn")));
        assert!(a.len() > MAX_FILE_NAME, "{}", a.len());
        let (fa, fb) = (fit_name(&a, MAX_FILE_NAME), fit_name(&b, MAX_FILE_NAME));
        assert_eq!((fa.len(), fb.len()), (MAX_FILE_NAME, MAX_FILE_NAME));
        assert_ne!(fa, fb, "names differing only near their end stay apart");
        assert_eq!(fa[..200], a[..200], "a readable prefix");
        assert!(fa.ends_with("__r000-438b701d"), "{fa}");
        assert_eq!(fit_name(&a, MAX_FILE_NAME), fa, "the same name every time");
        // Cut at a character boundary; every bound is kept, even below the hash's 9 bytes.
        let (wide, wider) = ("é".repeat(200), "é".repeat(201));
        for max in [0, 3, 9, 10, 100, 255] {
            let f = fit_name(&wide, max);
            assert!(f.len() <= max, "{max}: {f}");
            if max >= 9 {
                assert!(f.ends_with(&format!("~{:08x}", fnv1a(wide.as_bytes()) as u32)));
                assert_ne!(f, fit_name(&wider, max));
            }
        }
    }

    #[test]
    fn a_run_id_longer_than_a_file_name_is_cut_and_short_ids_are_as_before() {
        let toml = format!(
            r#"
name = "long"
[[link]]
preset = "{LONG_LINK}"
[[variant]]
cc = "{LONG_CC}"
[[variant]]
cc = "{}"
[[workload]]
kind = "download"
bytes = "5MB"
"#,
            LONG_CC.replace("ss-cap=1", "ss-cap=2")
        );
        let plan = Plan::new(&CampaignSpec::from_toml_str(&toml, None).unwrap()).unwrap();
        let ids: Vec<&str> = plan.runs.iter().map(|r| r.run_id.as_str()).collect();
        assert!(ids.iter().all(|id| id.len() <= MAX_FILE_NAME), "{ids:?}");
        assert_ne!(ids[0], ids[1]);
        assert!(ids[0].starts_with("starlink-busy_phase=4.814s_slot-seed=1530690897_"));
        // An id that fits is the one made before ids were bounded (the format in full).
        let short = Plan::new(&spec("")).unwrap();
        let run = &short.runs[0];
        let hash = fnv1a(serde_json::to_string(&run.scenario).unwrap().as_bytes())
            ^ fnv1a(run.mode.as_str().as_bytes());
        assert_eq!(
            run.run_id,
            format!("qir-terrestrial__a__dl1MB__r000-{:08x}", hash as u32)
        );
    }

    #[test]
    fn shards_partition_the_plan() {
        let plan = Plan::new(&spec("seeds = [1, 2, 3, 4, 5]")).unwrap();
        let mut all: Vec<usize> = (0..3)
            .flat_map(|i| plan.shard(i, 3).into_iter().map(|r| r.index))
            .collect();
        all.sort();
        assert_eq!(all, (0..plan.runs.len()).collect::<Vec<_>>());
    }

    #[test]
    fn fnv_matches_the_reference_values() {
        assert_eq!(fnv1a(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a(b"a"), 0xaf63dc4c8601ec8c);
    }
}
