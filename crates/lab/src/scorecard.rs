//! `satquic scorecard` (issue 45): every regime a satellite controller must serve, judged in
//! one command. The scenario sets are data (`crates/lab/campaigns/scorecard/`: `full.toml`,
//! `default.toml` drawn from it by a seed, `quick.toml`; `scripts/scorecard-sets.py` writes
//! them); each scenario is one ordinary campaign run by the executor into
//! `OUT/runs/<binary's SHA-256>/<regime>/<scenario>/` (so references are never stale and
//! `--full` resumes), read back from its runs.csv (and, for pairs, the records' shared
//! period, [`crate::beside::pairs`]). The external references (picoquic's suite and grid
//! numbers) and the targets are committed files; the physical limits come from
//! [`crate::limit`].

mod leo_links;
pub mod render;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::LabError;
use crate::beside::beam::BeamSpec;
use crate::beside::objects;
use crate::dataset::{self, RunData};
use crate::exec::{self, ExecOptions, Progress};
use crate::limit::{self, Direction};
use crate::plan::Plan;
use crate::spec::CampaignSpec;

/// The regimes, in the order the table shows them.
pub const REGIMES: [&str; 6] = [
    "geo-lossless",
    "geo-loss",
    "startup",
    "resumption",
    "beside",
    "leo",
];

/// In a pair's `other`: the spec being judged.
pub const CANDIDATE: &str = "CANDIDATE";

pub const SCHEMA: &str = "satquic-scorecard/1";

/// Which committed set to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetKind {
    Quick,
    Default,
    Full,
}

impl SetKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SetKind::Quick => "quick",
            SetKind::Default => "default",
            SetKind::Full => "full",
        }
    }

    pub fn text(self) -> &'static str {
        match self {
            SetKind::Quick => include_str!("../campaigns/scorecard/quick.toml"),
            SetKind::Default => include_str!("../campaigns/scorecard/default.toml"),
            SetKind::Full => include_str!("../campaigns/scorecard/full.toml"),
        }
    }
}

const PICOQUIC_GRID: &str = include_str!("../campaigns/scorecard/picoquic-grid.csv");
const REFERENCES: &str = include_str!("../campaigns/scorecard/references.toml");
const TARGETS: &str = include_str!("../campaigns/scorecard/targets.toml");

/// One scenario of a set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub regime: String,
    pub name: String,
    /// A preset string, `grid:pNN`, `leo:pNN` or `beside:NAME` (a link file of
    /// `satquic beside`'s, `crates/lab/campaigns/beside/links/NAME.toml`).
    pub link: String,
    /// `download`, `upload`, `pair` (timed flows, the candidate in `role` beside `other`),
    /// `mix` (`other` first, the candidate `stagger_s` later, `bytes` each), `beam` (a busy
    /// beam, `beam`, whose bulk flows take the candidate's controller and then each of
    /// `refs`') or `rpm` (a beam whose short objects take the candidate's controller and
    /// then each of `refs`', beside bulk flows of `other`: responsiveness beside a bulk
    /// flow).
    pub kind: String,
    #[serde(default)]
    pub bytes: Option<u64>,
    #[serde(default)]
    pub rwnd: Option<u64>,
    #[serde(default)]
    pub resume_after: Option<String>,
    #[serde(default)]
    pub other: Option<String>,
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub stagger_s: Option<u64>,
    #[serde(default)]
    pub duration_s: Option<u64>,
    pub time_cap_s: u64,
    /// Controllers run alone beside the candidate on the same scenario.
    #[serde(default)]
    pub refs: Vec<String>,
    #[serde(default)]
    pub seeds: Option<Vec<u64>>,
    /// A `beam` or `rpm` scenario's users, objects and bulk flows (`duration_s` is its
    /// window; `short_cc` is set by the kind).
    #[serde(default)]
    pub beam: Option<BeamSpec>,
}

#[derive(Deserialize)]
struct SetFile {
    scenario: Vec<Scenario>,
}

/// Parses a scenario set (one of the committed ones, or a test's).
pub fn parse_set(text: &str) -> Result<Vec<Scenario>, LabError> {
    let f: SetFile =
        toml::from_str(text).map_err(|e| LabError::Usage(format!("scenario set: {e}")))?;
    for s in &f.scenario {
        if !REGIMES.contains(&s.regime.as_str()) {
            return Err(LabError::Usage(format!(
                "scenario {}: unknown regime {:?}",
                s.name, s.regime
            )));
        }
        if !matches!(
            s.kind.as_str(),
            "download" | "upload" | "pair" | "mix" | "beam" | "rpm"
        ) {
            return Err(LabError::Usage(format!(
                "scenario {}: unknown kind {:?}",
                s.name, s.kind
            )));
        }
        if s.beam.is_some() != matches!(s.kind.as_str(), "beam" | "rpm") {
            return Err(LabError::Usage(format!(
                "scenario {}: a beam table goes with kinds beam and rpm only",
                s.name
            )));
        }
    }
    Ok(f.scenario)
}

/// The set run at `seed` (`--seed`, at least 1): every scenario's seeds (1 when the set
/// names none) shifted by `seed - 1`, so seed 1 is the set as committed and seeds 2, 3, ...
/// draw every random loss, jitter and cross-traffic schedule afresh: the spread across
/// seeds that the removal pass of issue 46 weighs a part's cost against.
pub fn at_seed(mut scenarios: Vec<Scenario>, seed: u64) -> Result<Vec<Scenario>, LabError> {
    let shift = seed
        .checked_sub(1)
        .ok_or_else(|| LabError::Usage("--seed must be at least 1".into()))?;
    for s in &mut scenarios {
        let seeds = s.seeds.take().unwrap_or_else(|| vec![1]);
        let shifted: Option<Vec<u64>> = seeds.iter().map(|x| x.checked_add(shift)).collect();
        s.seeds = Some(shifted.ok_or_else(|| {
            LabError::Usage(format!(
                "--seed {seed}: scenario {}'s seeds overflow",
                s.name
            ))
        })?);
    }
    Ok(scenarios)
}

/// The regimes named by `--regime` (all when empty), refusing unknown names.
pub fn regimes(names: &[String]) -> Result<Vec<&'static str>, LabError> {
    if names.is_empty() {
        return Ok(REGIMES.to_vec());
    }
    for n in names {
        if !REGIMES.contains(&n.as_str()) {
            return Err(LabError::Usage(format!(
                "--regime {n}: no such regime (one of {})",
                REGIMES.join(", ")
            )));
        }
    }
    Ok(REGIMES
        .iter()
        .copied()
        .filter(|r| names.iter().any(|n| n == r))
        .collect())
}

/// A scenario ready to run: its campaign and what its variants are.
pub struct Job {
    pub scenario: Scenario,
    pub spec: CampaignSpec,
    pub plan: Plan,
    /// Variant label -> (the spec judged, its role: `candidate` or a reference's name).
    pub variants: Vec<(String, String)>,
}

fn grid_point(name: &str) -> Result<limit::GridPoint, LabError> {
    limit::grid_points()
        .into_iter()
        .find(|p| p.point == name)
        .ok_or_else(|| LabError::Usage(format!("no grid point {name}")))
}

/// The `[[link]]` lines of a scenario, writing the link file it needs under `links_dir`.
fn link_lines(s: &Scenario, links_dir: &Path) -> Result<String, LabError> {
    let upload = s.kind == "upload";
    let write = |name: String, text: &str| -> Result<String, LabError> {
        std::fs::create_dir_all(links_dir)
            .and_then(|()| std::fs::write(links_dir.join(&name), text))
            .map_err(|e| LabError::Io(format!("{}: {e}", links_dir.display())))?;
        Ok(format!(
            "[[link]]\nfile = {:?}\nlabel = {:?}\n",
            links_dir.join(name).display().to_string(),
            s.link
        ))
    };
    if let Some(p) = s.link.strip_prefix("grid:") {
        let point = grid_point(p)?;
        let d = if upload {
            Direction::Up
        } else {
            Direction::Down
        };
        let suffix = if upload { "-mirror" } else { "" };
        return write(format!("grid-{p}{suffix}.toml"), &point.link_toml(d));
    }
    if let Some(name) = s.link.strip_prefix("beside:") {
        let text = crate::beside::link_file(name)
            .ok_or_else(|| LabError::Usage(format!("no beside link file {name}")))?;
        return write(format!("beside-{name}.toml"), text);
    }
    if let Some(p) = s.link.strip_prefix("leo:") {
        if upload {
            let text = leo_links::LEO_MIRRORS
                .iter()
                .find(|(n, _)| *n == p)
                .map(|(_, t)| *t)
                .ok_or_else(|| LabError::Usage(format!("no LEO grid point {p}")))?;
            return write(format!("leo-{p}-mirror.toml"), text);
        }
        let point = limit::leo_points()
            .into_iter()
            .find(|x| x.point == p)
            .ok_or_else(|| LabError::Usage(format!("no LEO grid point {p}")))?;
        return Ok(format!(
            "[[link]]\npreset = {:?}\nlabel = {:?}\n",
            point.link, s.link
        ));
    }
    Ok(format!("[[link]]\npreset = {:?}\n", s.link))
}

/// A pair's two variants for `spec`: the candidate in its role, and the same pair with
/// `cubic` in the candidate's role (one variant for every spec whose other flow is not
/// itself).
fn pair_labels(s: &Scenario, spec: &str) -> (String, String) {
    let other = s.other.clone().unwrap_or_else(|| "cubic".into());
    let o = if other == CANDIDATE {
        spec.to_string()
    } else {
        other
    };
    if s.role.as_deref() == Some("incumbent") {
        (format!("{spec}|{o}"), format!("cubic|{o}"))
    } else {
        (format!("{o}|{spec}"), format!("{o}|cubic"))
    }
}

/// The variants of a scenario: (cc, judged spec, role).
fn variants(s: &Scenario, specs: &[String]) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    let mut push = |cc: String, spec: &str, role: &str| {
        if !out.iter().any(|(c, _, _)| *c == cc) {
            out.push((cc, spec.to_string(), role.to_string()));
        }
    };
    match s.kind.as_str() {
        "pair" => {
            for c in specs {
                let (candidate, cubic) = pair_labels(s, c);
                push(candidate, c, "candidate");
                push(cubic, c, "cubic-newcomer");
            }
        }
        "mix" => {
            let other = s.other.clone().unwrap_or_else(|| "bbr3".into());
            for c in specs {
                push(format!("{other}|{c}"), c, "candidate");
            }
        }
        // Solo transfers, a beam's bulk flows and an rpm scenario's short objects (a
        // workload each, beside one variant: the bulk flows').
        _ => {
            for c in specs {
                push(c.clone(), c, "candidate");
            }
            for r in &s.refs {
                push(r.clone(), r, "reference");
            }
        }
    }
    out
}

/// The `[[workload]]` lines of a scenario (`rpm`: one per controller of the short objects,
/// labelled by it).
fn workload_lines(s: &Scenario, vs: &[(String, String, String)]) -> Result<String, LabError> {
    let beam_table = |short_cc: Option<&str>| -> Result<String, LabError> {
        let mut b = s.beam.clone().unwrap_or_default();
        if let Some(cc) = short_cc {
            b.short_cc = vec![cc.to_string()];
        }
        let text = toml::to_string(&b)
            .map_err(|e| LabError::Usage(format!("scenario {}: beam: {e}", s.name)))?;
        Ok(format!(
            "kind = \"beam\"\nduration = \"{}s\"\n[workload.beam]\n{text}",
            s.duration_s.unwrap_or(60)
        ))
    };
    let mut t = String::new();
    if s.kind == "rpm" {
        for (cc, _, _) in vs {
            t += &format!("[[workload]]\nlabel = {cc:?}\n");
            t += &beam_table(Some(cc))?;
        }
        return Ok(t);
    }
    t += "[[workload]]\nlabel = \"w\"\n";
    match s.kind.as_str() {
        "pair" => {
            t += &format!(
                "kind = \"timed\"\nduration = \"{}s\"\nflows = 2\nstagger = \"{}s\"\n",
                s.duration_s.unwrap_or(60),
                s.stagger_s.unwrap_or(0)
            )
        }
        "mix" => {
            t += &format!(
                "kind = \"download\"\nbytes = {}\nflows = 2\nstagger = \"{}s\"\n",
                s.bytes.unwrap_or(60_000_000),
                s.stagger_s.unwrap_or(10)
            )
        }
        "beam" => t += &beam_table(None)?,
        k => {
            t += &format!("kind = {k:?}\nbytes = {}\n", s.bytes.unwrap_or(10_000_000));
            if let Some(r) = &s.resume_after {
                t += &format!("resume_after = {r:?}\n");
            }
        }
    }
    Ok(t)
}

/// Builds every scenario's campaign (refusing a bad spec before anything runs); link files
/// go under `links_dir`.
pub fn jobs(
    scenarios: &[Scenario],
    specs: &[String],
    regimes: &[&str],
    links_dir: &Path,
) -> Result<Vec<Job>, LabError> {
    let mut out = Vec::new();
    for s in scenarios
        .iter()
        .filter(|s| regimes.contains(&s.regime.as_str()))
    {
        let vs = variants(s, specs);
        let mut t = format!(
            "name = {:?}\nmode = \"sim\"\ntime_cap = \"{}s\"\nsender_cap = \"none\"\n",
            format!("scorecard-{}", s.name),
            s.time_cap_s
        );
        let seeds = s.seeds.clone().unwrap_or_else(|| vec![1]);
        t += &format!(
            "seeds = [{}]\n",
            seeds
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
        t += &link_lines(s, links_dir)?;
        let ccs: Vec<String> = if s.kind == "rpm" {
            vec![s.other.clone().unwrap_or_else(|| "cubic".into())]
        } else {
            vs.iter().map(|(cc, _, _)| cc.clone()).collect()
        };
        for cc in &ccs {
            t += &format!("[[variant]]\nlabel = {cc:?}\ncc = {cc:?}\nmtu_discovery = true\n");
            if let Some(w) = s.rwnd {
                t += &format!("receive_window = {w}\nstream_receive_window = {w}\n");
            }
        }
        t += &workload_lines(s, &vs)?;
        let spec = CampaignSpec::from_toml_str(&t, Some(links_dir))
            .map_err(|e| LabError::Usage(format!("scenario {}: {}", s.name, e.0)))?;
        let plan = Plan::new(&spec).map_err(|e| LabError::Usage(e.0.clone()))?;
        out.push(Job {
            scenario: s.clone(),
            spec,
            plan,
            variants: vs
                .into_iter()
                .map(|(cc, spec, role)| (cc, format!("{spec}\t{role}")))
                .collect(),
        });
    }
    Ok(out)
}

/// What one variant of one scenario measured (rounded, so that the file is stable).
pub type Measures = BTreeMap<String, f64>;

/// One scenario's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioResult {
    pub name: String,
    pub regime: String,
    pub link: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The physical limit (solo transfers), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_s: Option<f64>,
    /// picoquic's time on the scenario where known (the grid's best of BBRv3 and CUBIC,
    /// a download's plus one way; the suite's rows), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub picoquic_s: Option<f64>,
    /// Variant (cc as run) -> measures.
    pub runs: BTreeMap<String, Measures>,
}

/// One regime's verdict for one spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The headline figure (lower is better except `higher_is_better`) and its words.
    pub figure: Option<f64>,
    pub headline: String,
    pub references: String,
    pub pass: Option<bool>,
    pub verdict: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegimeCard {
    pub name: String,
    pub target: String,
    pub source: String,
    pub scenarios: Vec<ScenarioResult>,
    /// Spec -> its verdict.
    pub verdicts: BTreeMap<String, Verdict>,
}

/// `scorecard.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Card {
    pub schema: String,
    pub set: String,
    /// The seed the set ran at ([`at_seed`]; cards written before it ran at 1).
    #[serde(default = "first_seed")]
    pub seed: u64,
    pub binary_sha256: String,
    pub specs: Vec<String>,
    pub regimes: Vec<RegimeCard>,
}

fn first_seed() -> u64 {
    1
}

/// Wall time per regime, seconds (`wall.json`).
pub type Walls = BTreeMap<String, f64>;

fn round(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

fn solo_measures(r: &dataset::Row) -> Measures {
    let mut m = Measures::new();
    let mut put = |k: &str, v: Option<f64>| {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            m.insert(k.to_string(), round(v));
        }
    };
    put("completion_s", r.completion_time_s);
    put("goodput_mbps", r.goodput_bps.map(|g| g / 1e6));
    put("lost", r.packets_lost.map(|x| x as f64));
    put("queue_p95_ms", r.queue_p95_ms);
    put("first_completion_s", r.first_completion_time_s);
    m
}

fn pair_measures(dir: &Path, rows: &[dataset::Row], variant: &str) -> Measures {
    let data: Vec<RunData> = rows
        .iter()
        .filter(|r| r.variant == variant)
        .map(|r| RunData {
            row: r.clone(),
            mb_times_s: Vec::new(),
        })
        .collect();
    let refs: Vec<&RunData> = data.iter().collect();
    let (pairs, _) = crate::beside::pairs::load(dir, &refs);
    let mut m = Measures::new();
    if pairs.is_empty() {
        return m;
    }
    let n = pairs.len() as f64;
    let mean = |f: &dyn Fn(&crate::beside::pairs::PairRun) -> f64| {
        round(pairs.iter().map(f).sum::<f64>() / n)
    };
    m.insert("incumbent_share".into(), mean(&|p| p.incumbent.share));
    m.insert("latecomer_share".into(), mean(&|p| p.latecomer.share));
    m.insert(
        "incumbent_loss".into(),
        mean(&|p| p.incumbent.flow_loss_rate()),
    );
    m.insert(
        "latecomer_loss".into(),
        mean(&|p| p.latecomer.flow_loss_rate()),
    );
    let p95 = |f: &dyn Fn(&crate::beside::pairs::PairRun) -> Option<f64>| {
        let v: Vec<f64> = pairs.iter().filter_map(f).collect();
        (!v.is_empty()).then(|| round(v.iter().sum::<f64>() / v.len() as f64))
    };
    if let Some(v) = p95(&|p| p.incumbent.queue_p95_ms) {
        m.insert("incumbent_p95_ms".into(), v);
    }
    if let Some(v) = p95(&|p| p.latecomer.queue_p95_ms) {
        m.insert("latecomer_p95_ms".into(), v);
    }
    m
}

/// The latecomer's lost packets of a mix run (flow 1 of its summary).
fn mix_measures(dir: &Path, rows: &[dataset::Row], variant: &str) -> Measures {
    let mut m = Measures::new();
    let mut lost = Vec::new();
    for r in rows.iter().filter(|r| r.variant == variant) {
        let path = dir.join("runs").join(&r.run_id).join("summary.json");
        let s = satquic_link::file::read(&path, satquic_run::record::SUMMARY_FILE)
            .ok()
            .and_then(|b| serde_json::from_slice::<satquic_run::record::Summary>(&b).ok());
        if let Some(f) = s.as_ref().and_then(|s| s.flows.get(1)) {
            lost.push(f.packets_lost as f64);
            if let Some(t) = f.completion_time_s {
                m.insert("completion_s".into(), round(t));
            }
        }
    }
    if let Some(max) = lost.iter().copied().reduce(f64::max) {
        m.insert("lost".into(), max);
    }
    m
}

/// A beam's objects over every run `pick` keeps (its seeds): how many, how many the time
/// cap ended, their median and p95 completion times (an unfinished object the slowest; a
/// quantile that falls on one is left out: infinite), and the bulk flows' mean goodput and
/// p95 queueing delay.
fn beam_measures(
    dir: &Path,
    rows: &[dataset::Row],
    pick: impl Fn(&dataset::Row) -> bool,
) -> Measures {
    let data: Vec<RunData> = rows
        .iter()
        .filter(|r| pick(r))
        .map(|r| RunData {
            row: r.clone(),
            mb_times_s: Vec::new(),
        })
        .collect();
    let refs: Vec<&RunData> = data.iter().collect();
    let (runs, _) = objects::load(dir, &refs);
    let mut m = Measures::new();
    let Some(c) = objects::completion(runs.iter().flat_map(|r| r.objects.iter())) else {
        return m;
    };
    m.insert("objects".into(), c.objects as f64);
    m.insert("unfinished".into(), c.unfinished as f64);
    for (k, v) in [("object_median_s", c.median_s), ("object_p95_s", c.p95_s)] {
        if v.is_finite() {
            m.insert(k.into(), round(v));
        }
    }
    let bulk: Vec<&objects::BulkResult> = runs.iter().flat_map(|r| r.bulk.iter()).collect();
    if !bulk.is_empty() {
        let n = bulk.len() as f64;
        m.insert(
            "bulk_goodput_mbps".into(),
            round(bulk.iter().map(|b| b.goodput_bps).sum::<f64>() / n / 1e6),
        );
        let p95: Vec<f64> = bulk.iter().filter_map(|b| b.queue_p95_ms).collect();
        if !p95.is_empty() {
            m.insert(
                "bulk_p95_ms".into(),
                round(p95.iter().sum::<f64>() / p95.len() as f64),
            );
        }
    }
    m
}

fn picoquic_grid() -> BTreeMap<String, f64> {
    let mut best: BTreeMap<String, f64> = BTreeMap::new();
    for line in PICOQUIC_GRID.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if let (Some(p), Some(Ok(t))) = (f.first(), f.get(2).map(|t| t.parse::<f64>())) {
            let e = best.entry(p.to_string()).or_insert(t);
            *e = e.min(t);
        }
    }
    best
}

#[derive(Deserialize)]
struct RefFile {
    suite: BTreeMap<String, SuiteRef>,
    resumed: BTreeMap<String, f64>,
}

#[derive(Deserialize)]
struct SuiteRef {
    picoquic_s: f64,
}

#[derive(Deserialize)]
struct TargetFile {
    target: BTreeMap<String, Target>,
}

#[derive(Deserialize)]
struct Target {
    text: String,
    source: String,
}

/// Runs the jobs into `runs_dir` and judges them.
/// What a scorecard run is asked to judge.
pub struct Request<'a> {
    pub set: SetKind,
    /// The seed the scenarios were shifted to ([`at_seed`]).
    pub seed: u64,
    pub specs: &'a [String],
    pub regimes: &'a [&'a str],
    /// Where the campaigns go (keyed by the binary's hash).
    pub runs_dir: &'a Path,
    pub binary_sha256: &'a str,
}

pub fn run(
    jobs: &[Job],
    req: &Request,
    opts: &ExecOptions,
    progress: &(dyn Fn(&str, &Progress) + Sync),
) -> Result<(Card, Walls), LabError> {
    let Request {
        set,
        seed,
        specs,
        regimes,
        runs_dir,
        binary_sha256,
    } = *req;
    let pq = picoquic_grid();
    let refs: RefFile = toml::from_str(REFERENCES).expect("references.toml parses");
    let targets: TargetFile = toml::from_str(TARGETS).expect("targets.toml parses");
    let mut walls = Walls::new();
    let mut cards = Vec::new();
    for regime in regimes {
        let started = Instant::now();
        let mine: Vec<&Job> = jobs
            .iter()
            .filter(|j| j.scenario.regime == *regime)
            .collect();
        // The scenarios of a regime run side by side, one campaign per worker (most
        // campaigns have two or three runs: a worker each would leave cores idle).
        let workers = opts.jobs.clamp(1, mine.len().max(1));
        let one = ExecOptions {
            jobs: 1,
            ..opts.clone()
        };
        let next = std::sync::atomic::AtomicUsize::new(0);
        let slots: Vec<std::sync::Mutex<Option<Result<ScenarioResult, LabError>>>> =
            mine.iter().map(|_| std::sync::Mutex::new(None)).collect();
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        let Some(job) = mine.get(i) else { break };
                        let r = scenario(job, regime, runs_dir, &one, progress, &pq, &refs);
                        let failed = r.is_err();
                        *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                        if failed {
                            next.store(mine.len(), std::sync::atomic::Ordering::SeqCst);
                            break;
                        }
                    }
                });
            }
        });
        let mut results = Vec::new();
        for slot in slots {
            match slot.into_inner().unwrap_or_else(|e| e.into_inner()) {
                Some(r) => results.push(r?),
                None => continue,
            }
        }
        let t = targets.target.get(*regime);
        let mut verdicts = BTreeMap::new();
        for spec in specs {
            verdicts.insert(
                spec.clone(),
                judge(regime, spec, &results, jobs, &refs.resumed),
            );
        }
        cards.push(RegimeCard {
            name: regime.to_string(),
            target: t.map(|t| t.text.clone()).unwrap_or_default(),
            source: t.map(|t| t.source.clone()).unwrap_or_default(),
            scenarios: results,
            verdicts,
        });
        walls.insert(
            regime.to_string(),
            (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        );
    }
    Ok((
        Card {
            schema: SCHEMA.into(),
            set: set.as_str().into(),
            seed,
            binary_sha256: binary_sha256.into(),
            specs: specs.to_vec(),
            regimes: cards,
        },
        walls,
    ))
}

/// Runs one scenario's campaign (resuming it) and reads it back.
fn scenario(
    job: &Job,
    regime: &str,
    runs_dir: &Path,
    opts: &ExecOptions,
    progress: &(dyn Fn(&str, &Progress) + Sync),
    pq: &BTreeMap<String, f64>,
    refs: &RefFile,
) -> Result<ScenarioResult, LabError> {
    let s = &job.scenario;
    let dir = runs_dir.join(regime).join(&s.name);
    exec::run_campaign(&job.spec, &job.plan, &dir, opts, &|p| progress(&s.name, p))?;
    let rows = dataset::read_csv(&dir.join("runs.csv")).map_err(LabError::Io)?;
    let mut runs = BTreeMap::new();
    for (cc, _) in &job.variants {
        let m = match s.kind.as_str() {
            "pair" => pair_measures(&dir, &rows, cc),
            "mix" => mix_measures(&dir, &rows, cc),
            "beam" => beam_measures(&dir, &rows, |r| r.variant == *cc),
            "rpm" => beam_measures(&dir, &rows, |r| r.workload == *cc),
            _ => rows
                .iter()
                .find(|r| &r.variant == cc)
                .map(solo_measures)
                .unwrap_or_default(),
        };
        runs.insert(cc.clone(), m);
    }
    let row = rows.first();
    let upload = s.kind == "upload";
    let solo = matches!(s.kind.as_str(), "download" | "upload");
    let limit_s = row
        .filter(|_| solo && !s.link.starts_with("leo:"))
        .map(|r| {
            let rate = if upload {
                r.up_rate_bps
            } else {
                r.down_rate_bps
            };
            let d = if upload {
                Direction::Up
            } else {
                Direction::Down
            };
            round(limit::limit_s(
                r.base_rtt_s / 2.0,
                rate as f64,
                s.bytes.unwrap_or(0),
                d,
            ))
        });
    let picoquic_s = if let Some(p) = s.link.strip_prefix("grid:") {
        pq.get(p).zip(grid_point(p).ok()).map(|(t, gp)| {
            round(if upload {
                *t
            } else {
                t + f64::from(gp.owd_ms) / 1000.0
            })
        })
    } else {
        let key = s.name.trim_end_matches("-resumed");
        refs.suite
            .get(key)
            .filter(|_| s.resume_after.is_none())
            .map(|r| r.picoquic_s)
    };
    Ok(ScenarioResult {
        name: s.name.clone(),
        regime: regime.to_string(),
        link: s.link.clone(),
        kind: s.kind.clone(),
        bytes: s.bytes,
        limit_s,
        picoquic_s,
        runs,
    })
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

fn time(m: Option<&Measures>) -> f64 {
    m.and_then(|m| m.get("completion_s").copied())
        .unwrap_or(f64::INFINITY)
}

fn fmt_opt(x: Option<f64>, digits: usize) -> String {
    x.map_or("-".into(), |x| format!("{x:.digits$}"))
}

/// The variant label of a spec's role in a scenario.
fn label_of<'a>(jobs: &'a [Job], scenario: &str, spec: &str, role: &str) -> Option<&'a str> {
    let job = jobs.iter().find(|j| j.scenario.name == scenario)?;
    // A pair's cubic reference is shared by the specs: it is registered under the first.
    let shared = (job.scenario.kind == "pair" && role == "cubic-newcomer")
        .then(|| pair_labels(&job.scenario, spec).1);
    let want = format!("{spec}\t{role}");
    job.variants
        .iter()
        .find(|(cc, r)| *r == want || shared.as_deref() == Some(cc.as_str()))
        .map(|(cc, _)| cc.as_str())
}

fn verdict(pass: Option<bool>, ok: usize, n: usize) -> String {
    match pass {
        Some(true) => format!("pass ({ok}/{n})"),
        Some(false) => format!("FAIL ({ok}/{n})"),
        None => "unjudged".into(),
    }
}

/// What a regime's judge reads: one spec's results on the regime's scenarios.
struct Judged<'a> {
    spec: &'a str,
    results: &'a [ScenarioResult],
    jobs: &'a [Job],
    /// ca0695a's resumed times by scenario (`references.toml`).
    resumed_refs: &'a BTreeMap<String, f64>,
}

impl<'a> Judged<'a> {
    /// What the spec measured on a scenario, in its role (`candidate`, `cubic-newcomer`).
    fn role(&self, s: &'a ScenarioResult, role: &str) -> Option<&'a Measures> {
        label_of(self.jobs, &s.name, self.spec, role).and_then(|l| s.runs.get(l))
    }

    fn cand(&self, s: &'a ScenarioResult) -> Option<&'a Measures> {
        self.role(s, "candidate")
    }
}

/// A regime's judge: one spec's verdict from its results.
type Judge = fn(&Judged) -> Verdict;

/// The regimes' judges, one per regime of [`REGIMES`], in its order.
const JUDGES: [(&str, Judge); 6] = [
    ("geo-lossless", judge_geo_lossless),
    ("geo-loss", judge_geo_loss),
    ("startup", judge_startup),
    ("resumption", judge_resumption),
    ("beside", judge_beside),
    ("leo", judge_leo),
];

fn judge(
    regime: &str,
    spec: &str,
    results: &[ScenarioResult],
    jobs: &[Job],
    resumed_refs: &BTreeMap<String, f64>,
) -> Verdict {
    let j = Judged {
        spec,
        results,
        jobs,
        resumed_refs,
    };
    let f = JUDGES
        .iter()
        .find(|(r, _)| *r == regime)
        .map(|(_, f)| *f)
        .expect("every regime has a judge");
    f(&j)
}

/// The candidate's time over the physical limit on each scenario that has one.
fn limit_ratios<'a>(j: &Judged<'a>) -> Vec<(f64, &'a ScenarioResult)> {
    j.results
        .iter()
        .filter_map(|s| s.limit_s.map(|l| (time(j.cand(s)) / l, s)))
        .collect()
}

fn judge_geo_lossless(j: &Judged) -> Verdict {
    let n = j.results.len();
    let ratios = limit_ratios(j);
    let fin: Vec<f64> = ratios
        .iter()
        .map(|(r, _)| *r)
        .filter(|r| r.is_finite())
        .collect();
    let finished = fin.len();
    let med = median(fin);
    let with_pq: Vec<&ScenarioResult> = j
        .results
        .iter()
        .filter(|s| s.picoquic_s.is_some())
        .collect();
    let ok = with_pq
        .iter()
        .filter(|s| time(j.cand(s)) <= s.picoquic_s.unwrap_or(0.0))
        .count();
    let pass = (!with_pq.is_empty()).then_some(ok == with_pq.len() && finished == n);
    Verdict {
        figure: med,
        headline: format!(
            "{} x limit (median), {finished}/{n} finished",
            fmt_opt(med, 3)
        ),
        references: format!(
            "at least as fast as picoquic's best on {ok}/{} (no picoquic reference: {})",
            with_pq.len(),
            n - with_pq.len()
        ),
        pass,
        verdict: verdict(pass, ok, with_pq.len()),
    }
}

fn judge_geo_loss(j: &Judged) -> Verdict {
    let n = j.results.len();
    let ratios = limit_ratios(j);
    let finished = ratios.iter().filter(|(r, _)| r.is_finite()).count();
    let med = median(
        ratios
            .iter()
            .map(|(r, _)| *r)
            .filter(|r| r.is_finite())
            .collect(),
    );
    let by_plr = |plr: &str| {
        median(
            ratios
                .iter()
                .filter(|(r, s)| r.is_finite() && s.link.starts_with("grid:") && plr_of(s) == plr)
                .map(|(r, _)| *r)
                .collect(),
        )
    };
    let (m01, m1) = (by_plr("0.001"), by_plr("0.01"));
    let pass = finished == n && m01.is_none_or(|m| m <= 1.3) && m1.is_none_or(|m| m <= 1.5);
    Verdict {
        figure: med,
        headline: format!(
            "{finished}/{n} finished; grid 0.1 %: {} x, 1 %: {} x limit",
            fmt_opt(m01, 2),
            fmt_opt(m1, 2)
        ),
        references: "the physical limit".into(),
        pass: Some(pass),
        verdict: verdict(Some(pass), finished, n),
    }
}

fn judge_startup(j: &Judged) -> Verdict {
    let mut vs_ref = BTreeMap::new();
    let mut ratios = Vec::new();
    for s in j.results {
        let t = time(j.cand(s));
        for r in ["cubic", "bbr3"] {
            if let Some(m) = s.runs.get(r) {
                let e = vs_ref.entry(r).or_insert((0, 0));
                e.1 += 1;
                if t <= time(Some(m)) {
                    e.0 += 1;
                }
                if r == "cubic" && t.is_finite() {
                    ratios.push(t / time(Some(m)));
                }
            }
        }
    }
    let pq: Vec<&ScenarioResult> = j
        .results
        .iter()
        .filter(|s| s.picoquic_s.is_some() && s.name != "suite-medium")
        .collect();
    let ok = pq
        .iter()
        .filter(|s| time(j.cand(s)) <= s.picoquic_s.unwrap_or(0.0))
        .count();
    let pass = (!pq.is_empty()).then_some(ok == pq.len());
    let refs = vs_ref
        .iter()
        .map(|(r, (a, b))| format!("{r} {a}/{b}"))
        .collect::<Vec<_>>()
        .join(", ");
    Verdict {
        figure: median(ratios.clone()),
        headline: format!("{} x cubic's time (median)", fmt_opt(median(ratios), 3)),
        references: format!(
            "at least as fast as {refs}; picoquic's suite {ok}/{}",
            pq.len()
        ),
        pass,
        verdict: verdict(pass, ok, pq.len()),
    }
}

fn judge_resumption(j: &Judged) -> Verdict {
    let n = j.results.len();
    let mut ok = 0;
    let mut ratios = Vec::new();
    for s in j.results {
        let m = j.cand(s);
        let t = time(m);
        let first = m
            .and_then(|m| m.get("first_completion_s").copied())
            .unwrap_or(f64::INFINITY);
        let reference = j.resumed_refs.get(&s.name).copied();
        if let Some(r) = reference {
            ratios.push(t / r);
        }
        let good = t.is_finite()
            && reference.is_none_or(|r| t <= r * 1.02)
            && (reference.is_some() || t <= first);
        ok += usize::from(good);
    }
    let pass = Some(ok == n);
    Verdict {
        figure: median(ratios.clone()),
        headline: format!(
            "{} x ca0695a's resumed time (median)",
            fmt_opt(median(ratios), 3)
        ),
        references: "ca0695a's resumed rows; the first connection on lossy rows".into(),
        pass,
        verdict: verdict(pass, ok, n),
    }
}

fn judge_beside(j: &Judged) -> Verdict {
    let n = j.results.len();
    // (passed, of) per kind: pairs, the thesis-sat mix, the busy beam.
    let mut counts: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for s in j.results {
        let c = j.cand(s);
        let good = match s.kind.as_str() {
            "mix" => c.and_then(|m| m.get("lost")).is_some_and(|l| *l <= 2600.0),
            "beam" => beam_pass(c, s.runs.get("cubic")),
            _ => pair_pass(s, c, j.role(s, "cubic-newcomer")),
        };
        let e = counts.entry(s.kind.as_str()).or_default();
        e.0 += usize::from(good);
        e.1 += 1;
    }
    let ok: usize = counts.values().map(|(a, _)| a).sum();
    let pass = Some(ok == n);
    let frac = (n > 0).then(|| ok as f64 / n as f64);
    let part = |kind: &str, what: &str| counts.get(kind).map(|(a, b)| format!("{what} {a}/{b}"));
    let parts: Vec<String> = [
        part("pair", "pairs"),
        part("mix", "thesis-sat mix"),
        part("beam", "busy beam"),
    ]
    .into_iter()
    .flatten()
    .collect();
    Verdict {
        figure: frac,
        headline: format!("{ok}/{n} pass ({})", parts.join(", ")),
        references: "pairs: the same pair with cubic in the candidate's role (share, loss, delay); beam: cubic bulk flows (objects' median and p95)".into(),
        pass,
        verdict: verdict(pass, ok, n),
    }
}

/// A measure of a beam's objects, infinite where missing (a quantile on an unfinished one).
fn object_time(m: Option<&Measures>, key: &str) -> f64 {
    m.and_then(|m| m.get(key).copied()).unwrap_or(f64::INFINITY)
}

/// Issue 46's beam check: the objects' median and p95 completion times with the candidate's
/// bulk flows no worse than with `cubic`'s.
fn beam_pass(cand: Option<&Measures>, cubic: Option<&Measures>) -> bool {
    cand.is_some()
        && cubic.is_some()
        && ["object_median_s", "object_p95_s"]
            .iter()
            .all(|k| object_time(cand, k) <= object_time(cubic, k))
}

fn judge_leo(j: &Judged) -> Verdict {
    let (rpm, grid): (Vec<&ScenarioResult>, Vec<&ScenarioResult>) =
        j.results.iter().partition(|s| s.kind == "rpm");
    let n = grid.len();
    let mut fast = 0;
    let mut delay = 0;
    let mut ratios = Vec::new();
    for s in &grid {
        let t = time(j.cand(s));
        let best = ["cubic", "bbr3"]
            .iter()
            .map(|r| time(s.runs.get(*r)))
            .fold(f64::INFINITY, f64::min);
        fast += usize::from(t <= best);
        if t.is_finite() && best.is_finite() {
            ratios.push(t / best);
        }
        let p95 = |m: Option<&Measures>| m.and_then(|m| m.get("queue_p95_ms").copied());
        let better = ["cubic", "bbr3"]
            .iter()
            .filter_map(|r| p95(s.runs.get(*r)))
            .fold(f64::INFINITY, f64::min);
        delay += usize::from(p95(j.cand(s)).is_some_and(|d| d <= better + 10.0));
    }
    let pass = Some(n > 0 && fast as f64 >= 0.95 * n as f64 && delay == n);
    let (rpm_ratio, rpm_ok) = responsiveness(j, &rpm);
    let mut headline = format!(
        "{} x the faster of cubic and bbr3 (median)",
        fmt_opt(median(ratios.clone()), 3)
    );
    let mut references = format!(
        "at least as fast as both on {fast}/{n}; p95 queueing delay within 10 ms of the better on {delay}/{n}"
    );
    if !rpm.is_empty() {
        headline += &format!(
            "; beside a bulk flow, objects {} x the faster's (median)",
            fmt_opt(rpm_ratio, 3)
        );
        references += &format!(
            "; beside a bulk flow, median and p95 object times at most the faster of cubic's and bbr3's on {rpm_ok}/{} (reported, no target)",
            rpm.len()
        );
    }
    Verdict {
        figure: median(ratios),
        headline,
        references,
        pass,
        verdict: verdict(pass, fast, n),
    }
}

/// LEO responsiveness: on each `rpm` scenario, the candidate's median object time over the
/// faster median of `cubic`'s and `bbr3`'s objects in the same role (the median of those
/// ratios), and on how many its median and p95 are both at most the faster reference's.
fn responsiveness(j: &Judged, rpm: &[&ScenarioResult]) -> (Option<f64>, usize) {
    let mut ratios = Vec::new();
    let mut ok = 0;
    for s in rpm {
        let c = j.cand(s);
        let best = |k: &str| {
            ["cubic", "bbr3"]
                .iter()
                .map(|r| object_time(s.runs.get(*r), k))
                .fold(f64::INFINITY, f64::min)
        };
        let (m, b) = (object_time(c, "object_median_s"), best("object_median_s"));
        if m.is_finite() && b.is_finite() {
            ratios.push(m / b);
        }
        ok += usize::from(
            c.is_some() && m <= b && object_time(c, "object_p95_s") <= best("object_p95_s"),
        );
    }
    (median(ratios), ok)
}

fn plr_of(s: &ScenarioResult) -> String {
    s.link
        .strip_prefix("grid:")
        .and_then(|p| grid_point(p).ok())
        .map(|p| p.loss.to_string())
        .unwrap_or_default()
}

/// Issue 46's checks on one pair: the other flow keeps at least the smaller of what it keeps
/// beside `cubic` and its fair share (half), less 5 points; its p95 queueing delay rises by no
/// more than `cubic`'s plus 10 ms (latecomer role); the candidate loses at most 2 % or no more
/// than `cubic` in its role.
fn pair_pass(s: &ScenarioResult, cand: Option<&Measures>, cubic: Option<&Measures>) -> bool {
    let (Some(c), Some(r)) = (cand, cubic) else {
        return false;
    };
    let latecomer = s.name.contains("-latecomer-");
    let (other_share, own_loss, other_p95) = if latecomer {
        (
            "incumbent_share",
            "latecomer_loss",
            Some("incumbent_p95_ms"),
        )
    } else {
        ("latecomer_share", "incumbent_loss", None)
    };
    let g = |m: &Measures, k: &str| m.get(k).copied().unwrap_or(0.0);
    let share_ok = g(c, other_share) >= g(r, other_share).min(0.5) - 0.05;
    let loss_ok = g(c, own_loss) <= 0.02 || g(c, own_loss) <= g(r, own_loss);
    let delay_ok = other_p95.is_none_or(|k| g(c, k) <= g(r, k) + 10.0);
    share_ok && loss_ok && delay_ok
}

/// What `--baseline` says: per regime, the scenarios both cards hold and the median ratio of
/// the candidate's completion times (or the pairs' check figures), and what it could not
/// compare.
pub fn compare(card: &Card, baseline: &Card) -> Vec<String> {
    let mut lines = Vec::new();
    let spec = card.specs.first().cloned().unwrap_or_default();
    let base_spec = baseline.specs.first().cloned().unwrap_or_default();
    let mut missing = Vec::new();
    if card.seed != baseline.seed {
        lines.push(format!(
            "seeds differ: this card ran at seed {}, the baseline at seed {} (the spread across seeds, not a change)",
            card.seed, baseline.seed
        ));
    }
    for r in &card.regimes {
        let Some(b) = baseline.regimes.iter().find(|b| b.name == r.name) else {
            missing.push(format!("regime {}", r.name));
            continue;
        };
        let mut ratios = Vec::new();
        let mut compared = 0;
        for s in &r.scenarios {
            let Some(bs) = b.scenarios.iter().find(|x| x.name == s.name) else {
                missing.push(s.name.clone());
                continue;
            };
            compared += 1;
            let pick = |x: &ScenarioResult, sp: &str| {
                x.runs
                    .iter()
                    .find(|(cc, _)| cc.as_str() == sp || cc.ends_with(&format!("|{sp}")))
                    .and_then(|(_, m)| {
                        m.get("completion_s")
                            .or_else(|| m.get("object_median_s"))
                            .copied()
                    })
            };
            if let (Some(a), Some(o)) = (pick(s, &spec), pick(bs, &base_spec)) {
                ratios.push(a / o);
            }
        }
        for s in &b.scenarios {
            if !r.scenarios.iter().any(|x| x.name == s.name) {
                missing.push(s.name.clone());
            }
        }
        let verdict = |c: &Card| {
            c.regimes
                .iter()
                .find(|x| x.name == r.name)
                .and_then(|x| x.verdicts.values().next())
                .map(|v| v.verdict.clone())
                .unwrap_or_default()
        };
        lines.push(format!(
            "{:<13} {compared} scenarios compared; completion time {} x the baseline's (median); verdict {} (baseline: {})",
            r.name,
            fmt_opt(median(ratios), 3),
            verdict(card),
            verdict(baseline)
        ));
    }
    for b in &baseline.regimes {
        if !card.regimes.iter().any(|r| r.name == b.name) {
            missing.push(format!("regime {}", b.name));
        }
    }
    lines.push(if missing.is_empty() {
        "could not compare: none".into()
    } else {
        format!("could not compare: {}", missing.join(", "))
    });
    lines
}

/// Reads a saved `scorecard.json`: a regular file of at most
/// [`SCORECARD_FILE`](crate::files::SCORECARD_FILE) with this [`SCHEMA`] (a FIFO, a device
/// or a file too large is refused before it is read).
pub fn read_card(path: &Path) -> Result<Card, LabError> {
    let text = satquic_link::file::read_to_string(path, crate::files::SCORECARD_FILE)
        .map_err(|e| LabError::Usage(format!("--baseline {e}")))?;
    let card: Card = serde_json::from_str(&text).map_err(|e| {
        LabError::Usage(format!(
            "--baseline {}: not a scorecard.json ({e})",
            path.display()
        ))
    })?;
    if card.schema != SCHEMA {
        return Err(LabError::Usage(format!(
            "--baseline {}: schema {:?}, this satquic reads {SCHEMA:?}",
            path.display(),
            card.schema
        )));
    }
    Ok(card)
}

/// Reads a scenario set file (`--set`), bounded as [`read_card`] is, and parses it.
pub fn read_set(path: &Path) -> Result<Vec<Scenario>, LabError> {
    let text = satquic_link::file::read_to_string(path, crate::files::SCORECARD_FILE)
        .map_err(|e| LabError::Usage(format!("--set {e}")))?;
    parse_set(&text)
}

/// Writes `bytes` to `dir/name` through a temporary file and a rename.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf, LabError> {
    let path = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| LabError::Io(format!("{}: {e}", path.display())))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--seed N` shifts every scenario's seeds by N - 1 (seed 1 where the set names none),
    /// refuses 0 and an overflow with one line, and leaves the set as committed at 1.
    #[test]
    fn a_seed_shifts_every_scenarios_seeds() {
        // The full set: most scenarios name seeds 1-3, the thesis-sat mix one seed each.
        let set = parse_set(SetKind::Full.text()).unwrap();
        let at = |seed| at_seed(parse_set(SetKind::Full.text()).unwrap(), seed);
        let first = at(1).unwrap();
        let third = at(3).unwrap();
        for ((s, one), three) in set.iter().zip(&first).zip(&third) {
            let committed = s.seeds.clone().unwrap_or_else(|| vec![1]);
            assert_eq!(one.seeds.as_ref(), Some(&committed), "{}", s.name);
            let shifted: Vec<u64> = committed.iter().map(|x| x + 2).collect();
            assert_eq!(three.seeds.as_ref(), Some(&shifted), "{}", s.name);
        }
        for seed in [0, u64::MAX] {
            let Err(e) = at(seed) else {
                panic!("--seed {seed} was not refused");
            };
            let e = e.to_string();
            assert!(e.contains("--seed") && !e.contains('\n'), "{e}");
        }
    }

    /// Every spec of a side-by-side run finds the pair's `cubic` reference, which is
    /// registered once, under the first spec (the second spec's pairs all failed before).
    #[test]
    fn every_spec_finds_the_shared_cubic_reference_of_a_pair() {
        let pair = Scenario {
            regime: "beside".into(),
            name: "pair-thesis-sat-bbr3-latecomer-5s".into(),
            link: "thesis-sat".into(),
            kind: "pair".into(),
            bytes: None,
            rwnd: None,
            resume_after: None,
            other: Some("bbr3".into()),
            role: Some("latecomer".into()),
            stagger_s: Some(5),
            duration_s: Some(20),
            time_cap_s: 40,
            refs: Vec::new(),
            seeds: None,
            beam: None,
        };
        let specs = [
            "satellite".to_string(),
            "satellite+loss-filter:off".to_string(),
        ];
        let dir =
            std::env::temp_dir().join(format!("satquic-scorecard-unit-{}", std::process::id()));
        let jobs = jobs(std::slice::from_ref(&pair), &specs, &["beside"], &dir).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        for spec in &specs {
            assert_eq!(
                label_of(&jobs, &pair.name, spec, "cubic-newcomer"),
                Some("bbr3|cubic"),
                "{spec}"
            );
            assert_eq!(
                label_of(&jobs, &pair.name, spec, "candidate"),
                Some(format!("bbr3|{spec}").as_str())
            );
        }
    }
}
