//! `satquic beside`: a controller judged beside other traffic (DESIGN.md, "Judged beside
//! other traffic"; issue 38 item 1), as two built-in campaigns and their report sections.
//!
//! | campaign | spec | what |
//! |---|---|---|
//! | `beside-pairs` | `crates/lab/campaigns/beside/pairs.toml` | every ordered pair of `satellite`, `cubic`, `bbr3`, `newreno` and quinn's `bbr` (incumbent, latecomer 0, 5 or 20 s later), 60 s timed flows, on nine paths, three seeds: 2,025 runs |
//! | `beside-beam` | `crates/lab/campaigns/beside/beam.toml` | a busy beam ([`beam`]): 24 users fetching web-like objects beside 3 bulk flows whose controller is the variant (`satellite` or `cubic`), on two 120-150 Mbit/s GEO paths, three seeds |
//!
//! The specs are ordinary campaign files: `satquic campaign run` runs them too, and
//! `satquic report` shows the sections for any campaign with two-flow runs or beam
//! workloads (`report/beside.rs`, `report/beam.rs`). Built in, as `reproduce`'s are, so
//! that one command runs both at a scale (`--quick` shortens the flows and keeps one
//! seed), restricted to some paths or controllers, and writes one report.
//!
//! What the analysis is made of: [`pairs`] (the runs of two flows, from the record's
//! shared period), [`harm`] (Ware et al.'s harm against the incumbent's own kind),
//! [`checks`] (issue 38's verdicts on the profile), [`objects`] (the beam's objects and
//! bulk flows).

pub mod beam;
pub mod checks;
pub mod harm;
pub mod objects;
pub mod pairs;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::LabError;
use crate::exec::{self, ExecOptions, Progress};
use crate::plan::Plan;
use crate::report::{self, Extras, Loaded};
use crate::reproduce::{Builtin, Scale};
use crate::spec::{CampaignSpec, LinkEntry, MIX_SEPARATOR, WorkloadKind};

/// The campaigns: name and spec file (the `--full` scale), under [`SPEC_FILES`].
const DEFINITIONS: [(&str, &str); 2] = [
    ("beside-pairs", "beside/pairs.toml"),
    ("beside-beam", "beside/beam.toml"),
];

/// The spec files and the link files they name, by path under `crates/lab/campaigns/`:
/// built into the binary, and written under the output directory
/// ([`write_specs`]) so that a run needs no source tree and the campaign directory keeps
/// the files it ran.
const SPEC_FILES: [(&str, &str); 6] = [
    (
        "beside/pairs.toml",
        include_str!("../campaigns/beside/pairs.toml"),
    ),
    (
        "beside/beam.toml",
        include_str!("../campaigns/beside/beam.toml"),
    ),
    (
        "beside/links/sat-250-3-mirror.toml",
        include_str!("../campaigns/beside/links/sat-250-3-mirror.toml"),
    ),
    (
        "beside/links/beam-120m-1bdp.toml",
        include_str!("../campaigns/beside/links/beam-120m-1bdp.toml"),
    ),
    (
        "grid/links/p02.toml",
        include_str!("../campaigns/grid/links/p02.toml"),
    ),
    (
        "grid/links/p10.toml",
        include_str!("../campaigns/grid/links/p10.toml"),
    ),
];

/// Writes the spec and link files under `dir` (as under `crates/lab/campaigns/`), for
/// [`builtins`].
pub fn write_specs(dir: &Path) -> Result<(), LabError> {
    for (path, text) in SPEC_FILES {
        let target = dir.join(path);
        let parent = target.parent().unwrap_or(dir);
        std::fs::create_dir_all(parent)
            .and_then(|()| std::fs::write(&target, text))
            .map_err(|e| LabError::Io(format!("{}: {e}", target.display())))?;
    }
    Ok(())
}

/// One of the link files the campaigns name, by its name (`beam-120m-1bdp`): for the
/// scorecard's `beside:NAME` links.
pub fn link_file(name: &str) -> Option<&'static str> {
    let path = format!("beside/links/{name}.toml");
    SPEC_FILES.iter().find(|(p, _)| *p == path).map(|(_, t)| *t)
}

fn spec_text(path: &str) -> &'static str {
    SPEC_FILES
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, t)| *t)
        .expect("every definition's spec is a spec file")
}

/// What `--quick` runs: one seed, and the pairs' 60 s flows as 20 s (their staggers in
/// proportion: 0, 1.7 and 6.7 s), the beam's 60 s window as 30 s.
const QUICK_PAIR_FLOW: Duration = Duration::from_secs(20);
const QUICK_PAIR_CAP: Duration = Duration::from_secs(30);
const QUICK_BEAM_WINDOW: Duration = Duration::from_secs(30);
const QUICK_BEAM_CAP: Duration = Duration::from_secs(50);

/// Which runs of the built-in campaigns to make.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Campaigns whose names end with one of these (`pairs`, `beam`); empty: both.
    pub only: Vec<String>,
    /// Link labels to keep (`thesis-sat`, `grid-p02-1bdp`); empty: all.
    pub links: Vec<String>,
    /// Controllers to keep: a pair runs if both its flows' are in it, a beam variant if
    /// its bulk flows' is; empty: all.
    pub ccs: Vec<String>,
    /// Seeds per cell instead of the spec's.
    pub seeds: Option<u32>,
}

/// The built-in campaigns at a scale, their relative link files resolved under
/// `campaigns_dir` (`crates/lab/campaigns`, or where [`write_specs`] wrote them).
pub fn builtins(scale: Scale, campaigns_dir: &Path) -> Vec<Builtin> {
    DEFINITIONS
        .iter()
        .map(|(name, path)| {
            let dir = campaigns_dir.join(path).parent().map(Path::to_path_buf);
            let mut spec = CampaignSpec::from_toml_str(spec_text(path), dir.as_deref())
                .expect("built-in campaign specs are valid");
            let scaled = (scale == Scale::Quick).then(|| quick(&mut spec));
            Builtin { name, spec, scaled }
        })
        .collect()
}

/// Scales a spec to `--quick` and says what changed.
fn quick(spec: &mut CampaignSpec) -> String {
    let full_seeds = spec.repetitions;
    spec.repetitions = 1;
    let mut what = Vec::new();
    for w in &mut spec.workloads {
        let (target, cap) = match w.kind {
            WorkloadKind::Beam => (QUICK_BEAM_WINDOW, QUICK_BEAM_CAP),
            _ => (QUICK_PAIR_FLOW, QUICK_PAIR_CAP),
        };
        if let Some(full) = w.duration.filter(|d| !d.is_zero()) {
            let f = target.as_secs_f64() / full.as_secs_f64();
            w.stagger = w.stagger.map(|s| s.mul_f64(f));
            w.duration = Some(target);
            spec.time_cap = cap;
            what.push(format!(
                "{} s instead of {} s",
                target.as_secs(),
                full.as_secs_f64()
            ));
        }
    }
    what.dedup();
    format!(
        "{}: --quick, 1 seed instead of {full_seeds}, flows (a beam's window) of {} (staggers in proportion).",
        spec.name,
        what.join(", ")
    )
}

/// A link entry's label as the plan gives it (its label, else its preset, else its file's
/// stem).
fn link_label(l: &LinkEntry) -> String {
    l.label
        .clone()
        .or_else(|| l.preset.clone())
        .or_else(|| {
            l.file
                .as_ref()
                .and_then(|f| f.file_stem())
                .map(|s| s.to_string_lossy().into_owned())
        })
        .unwrap_or_default()
}

/// The built-in campaigns narrowed to `sel`; a filter that matches nothing is a usage
/// error naming what there is.
pub fn select(all: Vec<Builtin>, sel: &Selection) -> Result<Vec<Builtin>, LabError> {
    let usage = |m: String| Err(LabError::Usage(m));
    // `beside-pairs` is `pairs`. An empty or unknown name is refused, not matched by every
    // campaign (`--only ''` ran them all).
    let short = |b: &Builtin| b.name.strip_prefix("beside-").unwrap_or(b.name).to_string();
    let names: Vec<String> = all.iter().map(short).collect();
    if let Some(bad) = sel
        .only
        .iter()
        .find(|o| !names.contains(&o.trim().to_string()))
    {
        return usage(format!(
            "--only: no campaign {bad:?}; campaigns: {}",
            names.join(", ")
        ));
    }
    let mut out = Vec::new();
    let mut labels: Vec<String> = Vec::new();
    for mut b in all {
        if !sel.only.is_empty() && !sel.only.iter().any(|o| o.trim() == short(&b)) {
            continue;
        }
        labels.extend(b.spec.links.iter().map(link_label));
        if !sel.links.is_empty() {
            b.spec.links.retain(|l| sel.links.contains(&link_label(l)));
        }
        if !sel.ccs.is_empty() {
            b.spec.variants.retain(|v| {
                v.cc.split(MIX_SEPARATOR)
                    .all(|cc| sel.ccs.iter().any(|c| c == cc.trim()))
            });
        }
        if let Some(n) = sel.seeds {
            b.spec.repetitions = n;
        }
        if !b.spec.links.is_empty() && !b.spec.variants.is_empty() {
            out.push(b);
        }
    }
    if let Some(bad) = sel.links.iter().find(|l| !labels.contains(l)) {
        return usage(format!(
            "--links: no path {bad:?}; paths: {}",
            labels.join(", ")
        ));
    }
    if sel.seeds == Some(0) {
        return usage("--seeds must be at least 1".into());
    }
    if out.is_empty() {
        return usage(
            "the selection leaves no run: --only takes pairs and beam, --cc the controllers \
             satellite, cubic, bbr3, newreno, bbr (a pair needs both of its flows' controllers)"
                .into(),
        );
    }
    Ok(out)
}

/// What `satquic beside` did.
#[derive(Debug, Clone)]
pub struct BesideOutcome {
    pub index_html: PathBuf,
    /// Per campaign: name, runs in its directory, runs made now, wall seconds now, and
    /// the sum of its runs' own wall times (seconds; one core each).
    pub campaigns: Vec<CampaignCost>,
}

/// What one campaign cost.
#[derive(Debug, Clone, PartialEq)]
pub struct CampaignCost {
    pub name: String,
    pub rows: usize,
    pub ran: usize,
    pub wall_s: f64,
    pub run_wall_s: f64,
}

/// Runs the selected campaigns into `out/NAME` (resuming what is there) and writes
/// `out/report`.
pub fn beside(
    campaigns: &[Builtin],
    out: &Path,
    opts: &ExecOptions,
    progress: &(dyn Fn(&str, &Progress) + Sync),
) -> Result<BesideOutcome, LabError> {
    crate::output_dir(out)?;
    let mut costs = Vec::new();
    let mut dirs = Vec::new();
    for b in campaigns {
        let plan = Plan::new(&b.spec).map_err(LabError::from)?;
        let dir = out.join(b.name);
        let t = Instant::now();
        let o = exec::run_campaign(&b.spec, &plan, &dir, opts, &|p| progress(b.name, p))?;
        costs.push(CampaignCost {
            name: b.name.to_string(),
            rows: o.rows,
            ran: o.ran,
            wall_s: t.elapsed().as_secs_f64(),
            run_wall_s: runs_wall_s(&dir),
        });
        dirs.push(dir);
    }
    let loaded: Vec<Loaded> = dirs
        .iter()
        .map(|d| report::load(d))
        .collect::<Result<_, _>>()?;
    let mut notes = vec![
        "satquic beside: the controllers beside other traffic, in simulation (real quinn-proto \
         endpoints over the satquic-link model, virtual time). The same command gives the same \
         runs, except those with quinn's bbr in them (it draws from the thread RNG)."
            .to_string(),
    ];
    notes.extend(campaigns.iter().filter_map(|b| b.scaled.clone()));
    let mut sections = Vec::new();
    for (i, l) in loaded.iter().enumerate() {
        sections.extend(report::campaign_sections(l, &format!("b{}", i + 1)));
    }
    let extras = Extras {
        title: Some("satquic beside: controllers judged beside other traffic".into()),
        comparison: Vec::new(),
        notes,
    };
    let index_html =
        report::write_report_sections(&loaded, &sections, &out.join("report"), &extras)?;
    Ok(BesideOutcome {
        index_html,
        campaigns: costs,
    })
}

/// The sum of the wall times in a campaign's `runs/*/timing.json` (seconds).
fn runs_wall_s(dir: &Path) -> f64 {
    let Ok(entries) = std::fs::read_dir(dir.join("runs")) else {
        return 0.0;
    };
    entries
        .flatten()
        .filter_map(|e| {
            let bytes = satquic_link::file::read(
                &e.path().join("timing.json"),
                crate::files::RUN_SMALL_JSON,
            )
            .ok()?;
            serde_json::from_slice::<satquic_run::Timing>(&bytes)
                .ok()
                .map(|t| t.wall_s)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crate_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("campaigns")
    }

    /// The files written for a run are the repository's, and plan the same runs.
    #[test]
    fn written_specs_are_the_repository_files() {
        let dir = std::env::temp_dir().join(format!("satquic-beside-specs-{}", std::process::id()));
        write_specs(&dir).unwrap();
        for (path, text) in SPEC_FILES {
            let repo = std::fs::read_to_string(crate_dir().join(path)).unwrap();
            assert_eq!(repo, text, "{path}");
        }
        let ours = builtins(Scale::Quick, &dir);
        let repo = builtins(Scale::Quick, &crate_dir());
        for (a, b) in ours.iter().zip(&repo) {
            let ids = |s: &CampaignSpec| -> Vec<String> {
                Plan::new(s)
                    .unwrap()
                    .runs
                    .into_iter()
                    .map(|r| r.run_id)
                    .collect()
            };
            assert_eq!(ids(&a.spec), ids(&b.spec));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The pairs are every ordered pair of five controllers on nine paths, three
    /// staggers and three seeds; `--quick` keeps the pairs and paths with one seed and
    /// shorter flows whose staggers shrink in proportion.
    #[test]
    fn the_campaigns_plan_the_pairs_and_the_beam() {
        let full = builtins(Scale::Full, &crate_dir());
        let pairs = Plan::new(&full[0].spec).unwrap();
        assert_eq!(pairs.runs.len(), 25 * 9 * 3 * 3);
        assert_eq!(pairs.links.len(), 9);
        let staggers: Vec<u64> = pairs
            .workloads
            .iter()
            .map(|w| w.stagger.as_secs())
            .collect();
        assert_eq!(staggers, [0, 5, 20]);
        let beam = Plan::new(&full[1].spec).unwrap();
        assert!(beam.runs.iter().all(|r| r.scenario.flows.len() > 100));
        let quick = builtins(Scale::Quick, &crate_dir());
        let q = Plan::new(&quick[0].spec).unwrap();
        assert_eq!(q.runs.len(), 25 * 9 * 3);
        let last = q.workloads.last().unwrap();
        assert_eq!(last.duration, Some(QUICK_PAIR_FLOW));
        assert!((last.stagger.as_secs_f64() - 20.0 / 3.0).abs() < 1e-6);
        assert!(quick[0].scaled.as_deref().unwrap().contains("1 seed"));
    }

    /// A tiny beam through the executor and the report: the simulator runs every object
    /// as its own connection, both variants of the seed get the same objects, the same
    /// spec gives the same runs.csv byte for byte, and the report has the beam's tables.
    #[test]
    fn a_tiny_beam_runs_end_to_end_into_its_section() {
        let toml = r#"
name = "tiny-beam"
time_cap = "25s"
sender_cap = "none"
[[link]]
preset = "thesis-sat"
[[variant]]
label = "satellite"
cc = "satellite"
[[variant]]
label = "cubic"
cc = "cubic"
[[workload]]
kind = "beam"
duration = "6s"
beam = { users = 4, bulk = 1, on = "2s", off = "2s", objects_per_s = 2.0, min_object = "20kB", max_object = "200kB" }
"#;
        let spec = CampaignSpec::from_toml_str(toml, None).unwrap();
        let plan = Plan::new(&spec).unwrap();
        let flows: Vec<usize> = plan.runs.iter().map(|r| r.scenario.flows.len()).collect();
        assert_eq!(flows[0], flows[1], "the same objects in both variants");
        assert!(flows[0] > 3, "{flows:?}");
        let dir = std::env::temp_dir().join(format!("satquic-tiny-beam-{}", std::process::id()));
        let opts = ExecOptions {
            jobs: 2,
            ..ExecOptions::default()
        };
        exec::run_campaign(&spec, &plan, &dir, &opts, &|_| {}).unwrap();
        // Deterministic: the same spec gives the same runs.csv, run by run and in parallel.
        let again = dir.with_extension("again");
        let one_job = ExecOptions {
            jobs: 1,
            ..ExecOptions::default()
        };
        exec::run_campaign(&spec, &plan, &again, &one_job, &|_| {}).unwrap();
        let csv = |d: &Path| std::fs::read(d.join("runs.csv")).unwrap();
        assert_eq!(csv(&dir), csv(&again), "byte-identical runs.csv");
        std::fs::remove_dir_all(&again).unwrap();
        let loaded = report::load(&dir).unwrap();
        let (runs, unreadable) = objects::load(&dir, &loaded.runs.iter().collect::<Vec<_>>());
        assert_eq!((runs.len(), unreadable), (2, 0));
        for r in &runs {
            assert_eq!(r.bulk.len(), 1);
            assert_eq!(r.objects.len() + 1, flows[0]);
            assert!(r.objects.iter().all(|o| o.completion_s.is_some()), "{r:?}");
        }
        let sections = report::campaign_sections(&loaded, "t");
        let beam = sections
            .iter()
            .find(|s| s.title.ends_with("busy beam"))
            .expect("the beam section");
        let titles: Vec<String> = beam
            .items
            .iter()
            .filter_map(|i| match i {
                report::Item::Table(t) => Some(t.title.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(titles.len(), 5, "{titles:?}");
        assert!(titles[1].ends_with("(responsiveness)"), "{titles:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_selection_narrows_the_runs_or_says_what_there_is() {
        let sel = Selection {
            only: vec!["pairs".into()],
            links: vec!["qir-sat".into()],
            ccs: vec!["cubic".into(), "satellite".into()],
            seeds: Some(1),
        };
        let b = select(builtins(Scale::Quick, &crate_dir()), &sel).unwrap();
        assert_eq!(b.len(), 1);
        assert_eq!(Plan::new(&b[0].spec).unwrap().runs.len(), 4 * 3);
        for bad in [
            Selection {
                links: vec!["mars".into()],
                ..Selection::default()
            },
            Selection {
                ccs: vec!["vegas".into()],
                ..Selection::default()
            },
            Selection {
                only: vec!["nothing".into()],
                ..Selection::default()
            },
            // `--only ''` ran every campaign: each name ends with "".
            Selection {
                only: vec!["".into()],
                ..Selection::default()
            },
            Selection {
                only: vec!["airs".into()],
                ..Selection::default()
            },
        ] {
            let e = select(builtins(Scale::Quick, &crate_dir()), &bad)
                .err()
                .unwrap()
                .to_string();
            assert!(!e.contains('\n'), "{e}");
        }
        let e = select(
            builtins(Scale::Quick, &crate_dir()),
            &Selection {
                only: vec!["".into()],
                ..Selection::default()
            },
        )
        .err()
        .unwrap()
        .to_string();
        assert_eq!(e, "--only: no campaign \"\"; campaigns: pairs, beam");
    }
}
