//! Fitting the link that stands for the seeds' real Viasat link (issue 13): the seeds'
//! claims about that link, evaluated with candidate links in its place.
//!
//! `reproduce` compares the real-link results of seeds 000, 001 and 003 with the runs of
//! one link, [`table::REAL`]. [`calibrate`] runs, for each candidate link (a preset with
//! parameters, e.g. `geo-viasat-bod:lag-jitter=1s,phase=random,cross=60M:2s:4s:exp:random`,
//! or a link file, `*.toml`), the part of the built-in campaigns a and b those claims read
//! (their real-link variants, at `--quick` scale unless told otherwise), then evaluates
//! every claim on [`table::REAL`] with the candidate's runs standing in for it. Candidates
//! are ranked by their verdicts: fewest `differs`, then most `matches`, then the spreads
//! nearest 003 Table II's. Each candidate's campaigns stay
//! in their own directory, so a second call with more candidates reuses the finished ones.

use std::path::{Path, PathBuf};

use crate::LabError;
use crate::analysis::ExitTimes;
use crate::claims::table;
use crate::exec::{self, ExecOptions, Progress};
use crate::plan::Plan;
use crate::report::{self, ComparisonRow, Loaded};
use crate::reproduce::{self, Scale};
use crate::spec::LinkEntry;

/// The built-in campaigns whose real-link claims are fitted, and the variants those
/// claims read.
const FITTED: [(&str, &[&str]); 2] = [
    (
        "a-search-geo",
        &["classic", "search", "search-lower-cwnd", "search-shadow"],
    ),
    (
        "b-exit-classes",
        &["classic", "search", "hystart", "search-shadow"],
    ),
];

/// One candidate's result.
#[derive(Debug, Clone)]
pub struct CandidateResult {
    /// The link, as given.
    pub link: String,
    /// Where its campaigns are.
    pub dir: PathBuf,
    /// The real-link claims with this link in place of [`table::REAL`].
    pub rows: Vec<ComparisonRow>,
    /// Capacity, first-loss and shadow exit times of campaign b's shadow runs, the
    /// distribution 003 Table II reports for the real link.
    pub times: ExitTimes,
}

impl CandidateResult {
    /// How many rows have this verdict.
    pub fn count(&self, verdict: &str) -> usize {
        self.rows.iter().filter(|r| r.verdict == verdict).count()
    }

    /// How far the spreads of [`Self::times`] are from 003 Table II's: the sum over
    /// capacity, first loss and exit of |log2(our sd / the seed's sd)| (0 when all three
    /// are the seed's; a missing or zero spread counts as [`MISSING_SPREAD`]).
    pub fn spread_distance(&self) -> f64 {
        let &(_, _, capacity, loss, exit, _) =
            table::table_ii_row(table::REAL).expect("the real link is in 003 Table II");
        [
            (self.times.capacity_s, capacity),
            (self.times.loss_s, loss),
            (self.times.exit_s, exit),
        ]
        .iter()
        .map(|(ours, (_, seed_sd))| match ours {
            Some((_, sd)) if *sd > 0.0 => (sd / seed_sd).log2().abs().min(MISSING_SPREAD),
            _ => MISSING_SPREAD,
        })
        .sum()
    }
}

/// What a spread that is missing or zero adds to [`CandidateResult::spread_distance`]:
/// as far as one 16 times too small or too large.
pub const MISSING_SPREAD: f64 = 4.0;

/// Runs and evaluates every candidate; the result is ranked, best first.
/// `repetitions` overrides the `--quick` repetitions of both campaigns.
pub fn calibrate(
    candidates: &[String],
    repetitions: Option<u32>,
    out: &Path,
    opts: &ExecOptions,
    progress: &(dyn Fn(&str, &Progress) + Sync),
) -> Result<Vec<CandidateResult>, LabError> {
    if candidates.is_empty() {
        return Err(LabError::Usage("give at least one candidate link".into()));
    }
    if repetitions == Some(0) {
        return Err(LabError::Usage("--repetitions must be at least 1".into()));
    }
    // Every candidate's campaigns are planned before any runs, so a candidate that does
    // not parse is a usage error at the start, not after the others have run.
    let builtins = reproduce::builtins(Scale::Quick);
    let mut planned = Vec::new();
    for (i, link) in candidates.iter().enumerate() {
        let mut campaigns = Vec::new();
        for (name, variants) in FITTED {
            let builtin = builtins
                .iter()
                .find(|b| b.name == name)
                .expect("the fitted campaigns are built in");
            let mut spec = builtin.spec.clone();
            spec.links = vec![candidate_link(link)];
            spec.variants
                .retain(|v| v.label.as_deref().is_some_and(|l| variants.contains(&l)));
            if let Some(r) = repetitions {
                spec.repetitions = r;
            }
            let plan = Plan::new(&spec)
                .map_err(|e| LabError::Usage(format!("candidate {}: {link}: {e}", i + 1)))?;
            campaigns.push((name, spec, plan));
        }
        planned.push((link, campaigns));
    }
    crate::output_dir(out)?;
    let mut results = Vec::new();
    for (i, (link, campaigns)) in planned.into_iter().enumerate() {
        let dir = out.join(format!("candidate-{:02}", i + 1));
        crate::output_dir(&dir)?;
        std::fs::write(dir.join("link.txt"), format!("{link}\n"))
            .map_err(|e| LabError::Io(format!("{}: {e}", dir.display())))?;
        let mut loaded = Vec::new();
        for (name, spec, plan) in campaigns {
            let campaign_dir = dir.join(name);
            let label = format!("candidate {} {name}", i + 1);
            exec::run_campaign(&spec, &plan, &campaign_dir, opts, &|p| progress(&label, p))?;
            loaded.push(standing_in(report::load(&campaign_dir)?, link));
        }
        let times = loaded
            .iter()
            .find(|l| l.meta.name == "b-exit-classes")
            .map(|b| crate::claims::ours::shadow_times(b, table::REAL).1)
            .expect("campaign b is fitted");
        results.push(CandidateResult {
            link: link.clone(),
            dir,
            rows: real_link_rows(&loaded),
            times,
        });
    }
    rank(&mut results);
    Ok(results)
}

/// A candidate as a campaign's link: a link file (a path ending in `.toml`, e.g. one from
/// `satquic presets --toml` with its values changed) or a preset with parameters. Either
/// way its runs are labelled with the candidate as given.
fn candidate_link(link: &str) -> LinkEntry {
    let file = link.ends_with(".toml").then(|| {
        let path = PathBuf::from(link);
        std::path::absolute(&path).unwrap_or(path)
    });
    LinkEntry {
        preset: file.is_none().then(|| link.to_string()),
        file,
        label: Some(link.to_string()),
        params: Default::default(),
    }
}

/// Best first: fewest `differs`, then most `matches`, then the spreads nearest 003 Table
/// II's ([`CandidateResult::spread_distance`]); ties keep the order given.
fn rank(results: &mut [CandidateResult]) {
    results.sort_by(|a, b| {
        let key = |r: &CandidateResult| (r.count("differs"), std::cmp::Reverse(r.count("matches")));
        key(a)
            .cmp(&key(b))
            .then(a.spread_distance().total_cmp(&b.spread_distance()))
    });
}

/// The campaign's runs of `link` relabelled as runs of [`table::REAL`].
fn standing_in(mut loaded: Loaded, link: &str) -> Loaded {
    for r in &mut loaded.runs {
        if r.row.link == link {
            r.row.link = table::REAL.to_string();
        }
    }
    loaded
}

/// The claims on [`table::REAL`] evaluated on `loaded`.
pub fn real_link_rows(loaded: &[Loaded]) -> Vec<ComparisonRow> {
    table::claims()
        .iter()
        .filter(|c| c.ours.link() == Some(table::REAL))
        .map(|c| c.evaluate(loaded))
        .collect()
}

/// The ranking as a Markdown table, then each candidate's rows.
pub fn markdown(results: &[CandidateResult]) -> String {
    let &(_, _, capacity, loss, exit, _) =
        table::table_ii_row(table::REAL).expect("the real link is in 003 Table II");
    let mut s = format!(
        "| rank | link | matches | same trend | differs | no data | capacity, loss, exit: mean (sd) s; 003 Table II: {} ({}), {} ({}), {} ({}) | spread distance |\n|---|---|---|---|---|---|---|---|\n",
        capacity.0, capacity.1, loss.0, loss.1, exit.0, exit.1
    );
    let cell = crate::report::mean_sd_str;
    for (i, r) in results.iter().enumerate() {
        s.push_str(&format!(
            "| {} | `{}` | {} | {} | {} | {} | {}, {}, {} ({} runs) | {:.2} |\n",
            i + 1,
            r.link,
            r.count("matches"),
            r.count("same trend"),
            r.count("differs"),
            r.count("no data"),
            cell(r.times.capacity_s),
            cell(r.times.loss_s),
            cell(r.times.exit_s),
            r.times.runs,
            r.spread_distance()
        ));
    }
    s.push_str(&format!(
        "\nSpread distance: the sum over capacity, first loss and exit of |log2(our sd / the seed's sd)|; 0 is the seed's spreads, each missing or zero spread counts {MISSING_SPREAD}. A match of the 003 Table II claim needs each sd within a factor of {} of the seed's.\n",
        table::SD_FACTOR
    ));
    for (i, r) in results.iter().enumerate() {
        s.push_str(&format!(
            "\n{}. `{}` ({})\n\n| source | what | seed's number | ours | verdict |\n|---|---|---|---|---|\n",
            i + 1,
            r.link,
            r.dir.display()
        ));
        for row in &r.rows {
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                row.source, row.what, row.seed, row.ours, row.verdict
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(link: &str, verdicts: &[&str]) -> CandidateResult {
        CandidateResult {
            link: link.into(),
            dir: PathBuf::new(),
            rows: verdicts
                .iter()
                .map(|v| ComparisonRow {
                    source: String::new(),
                    what: String::new(),
                    seed: String::new(),
                    ours: String::new(),
                    verdict: v.to_string(),
                })
                .collect(),
            times: ExitTimes {
                runs: 0,
                capacity_s: None,
                loss_s: None,
                exit_s: None,
                timely_pct: None,
            },
        }
    }

    fn with_spreads(mut c: CandidateResult, sd: [f64; 3]) -> CandidateResult {
        c.times.runs = 8;
        c.times.capacity_s = Some((10.0, sd[0]));
        c.times.loss_s = Some((20.0, sd[1]));
        c.times.exit_s = Some((12.0, sd[2]));
        c
    }

    #[test]
    fn equal_verdicts_rank_by_the_spreads_nearest_the_seeds() {
        // 003 Table II: sd 2.6 / 8.7 / 1.7 s.
        let seeds = with_spreads(candidate("seeds", &["differs"]), [2.6, 8.7, 1.7]);
        assert!(seeds.spread_distance().abs() < 1e-12);
        let twice = with_spreads(candidate("twice", &["differs"]), [5.2, 4.35, 3.4]);
        assert!((twice.spread_distance() - 3.0).abs() < 1e-9);
        let flat = with_spreads(candidate("flat", &["differs"]), [0.0, 0.0, 0.0]);
        assert_eq!(flat.spread_distance(), 3.0 * MISSING_SPREAD);
        let none = candidate("none", &["differs"]);
        assert_eq!(none.spread_distance(), 3.0 * MISSING_SPREAD);
        // A better verdict still ranks first.
        let better = candidate("better", &["same trend"]);
        let mut r = vec![flat, twice, better, seeds];
        rank(&mut r);
        let order: Vec<&str> = r.iter().map(|c| c.link.as_str()).collect();
        assert_eq!(order, ["better", "seeds", "twice", "flat"]);
        let md = markdown(&r);
        assert!(
            md.contains("| 2 | `seeds` | 0 | 0 | 1 | 0 | 10.0 (2.6), 20.0 (8.7), 12.0 (1.7) (8 runs) | 0.00 |"),
            "{md}"
        );
        assert!(
            md.contains("| 1 | `better` | 0 | 1 | 0 | 0 | -, -, - (0 runs) | 12.00 |"),
            "{md}"
        );
    }

    #[test]
    fn candidates_rank_by_fewest_differs_then_most_matches() {
        let mut r = vec![
            candidate("two-differ", &["matches", "differs", "differs"]),
            candidate("one-differs", &["same trend", "same trend", "differs"]),
            candidate(
                "one-differs-one-match",
                &["matches", "same trend", "differs"],
            ),
            candidate("none-differ", &["same trend", "no data", "same trend"]),
        ];
        rank(&mut r);
        let order: Vec<&str> = r.iter().map(|c| c.link.as_str()).collect();
        assert_eq!(
            order,
            [
                "none-differ",
                "one-differs-one-match",
                "one-differs",
                "two-differ"
            ]
        );
        let md = markdown(&r);
        assert!(
            md.contains("| 1 | `none-differ` | 0 | 2 | 0 | 1 | -, -, - (0 runs) |"),
            "{md}"
        );
    }

    #[test]
    fn a_candidate_is_a_preset_or_a_link_file_labelled_as_given() {
        let preset = candidate_link("geo-viasat-bod:phase=random");
        assert_eq!(
            preset.preset.as_deref(),
            Some("geo-viasat-bod:phase=random")
        );
        assert_eq!(preset.file, None);
        assert_eq!(preset.label.as_deref(), Some("geo-viasat-bod:phase=random"));
        let file = candidate_link("links/return-bod.toml");
        assert_eq!(file.preset, None);
        let path = file.file.unwrap();
        assert!(path.is_absolute() && path.ends_with("links/return-bod.toml"));
        assert_eq!(file.label.as_deref(), Some("links/return-bod.toml"));
    }

    #[test]
    fn the_fitted_variants_exist_in_the_builtin_campaigns() {
        let builtins = reproduce::builtins(Scale::Quick);
        for (name, variants) in FITTED {
            let b = builtins.iter().find(|b| b.name == name).expect(name);
            for v in variants {
                assert!(
                    b.spec
                        .variants
                        .iter()
                        .any(|e| e.label.as_deref() == Some(v)),
                    "{name} has no variant {v}"
                );
            }
        }
    }

    #[test]
    fn every_real_link_claim_reads_a_fitted_campaign_and_variant() {
        // A claim on the real link that reads a campaign or variant the calibration
        // does not run would always say "no data" there.
        let real: Vec<_> = table::claims()
            .into_iter()
            .filter(|c| c.ours.link() == Some(table::REAL))
            .collect();
        assert!(real.len() >= 8, "{}", real.len());
        for c in &real {
            assert!(
                FITTED.iter().any(|(name, _)| *name == c.ours.campaign()),
                "{}",
                c.what
            );
            match c.ours {
                crate::claims::Ours::ExitClasses { variant, .. } => {
                    assert!(FITTED[1].1.contains(&variant), "{variant}");
                }
                crate::claims::Ours::CwndReduction { .. } => {
                    assert!(FITTED[0].1.contains(&"search-lower-cwnd"), "{}", c.what);
                }
                _ => {}
            }
        }
    }
}
