//! The comparison table that opens a `reproduce` report: the seeds' claims, each next to
//! the same measure on our runs, with a verdict.
//!
//! A [`Claim`] is data: where the seed says it, what it is, the seed's number as the seed
//! gives it, which analysis of our runs gives ours ([`Ours`], computed in [`ours`]) and
//! the rule that judges ours against the seed's ([`Rule`]). The claims are listed in
//! [`table`], in the order of the report; [`comparison`] evaluates them all.
//!
//! Verdicts: `matches` (within the rule's tolerance of the seed's number), `same trend`
//! (the same direction or ordering, a different size), `differs`, `no data` (the runs
//! needed are missing: the campaign was not run, or had no run of that kind).

pub mod ours;
pub mod table;

pub use ours::Ours;

use crate::report::{ComparisonRow, Loaded};

/// One claim of a seed and how ours is measured and judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// Seed and figure/table, e.g. `003 Table II`.
    pub source: &'static str,
    /// What is compared (and on which link).
    pub what: String,
    /// The seed's number, as the seed gives it.
    pub seed: String,
    /// The analysis of our runs that gives our number.
    pub ours: Ours,
    /// How our number is judged against the seed's.
    pub rule: Rule,
}

impl Claim {
    /// Measures ours on the loaded built-in campaigns and judges it.
    pub fn evaluate(&self, loaded: &[Loaded]) -> ComparisonRow {
        let campaign = self.ours.campaign();
        let measured = match loaded.iter().find(|l| l.meta.name.starts_with(campaign)) {
            Some(runs) => self.ours.measure(runs, loaded),
            None => Measured::NoData(format!("campaign {campaign} not run")),
        };
        let (ours, verdict) = match measured {
            Measured::Values { text, values } => (text, self.rule.verdict(&values)),
            Measured::Judged { text, verdict } => (text, verdict),
            Measured::NoData(why) => (format!("- ({why})"), Verdict::NoData),
        };
        ComparisonRow {
            source: self.source.into(),
            what: self.what.clone(),
            seed: self.seed.clone(),
            ours,
            verdict: verdict.as_str().into(),
        }
    }
}

/// Builds the comparison table from the loaded built-in campaigns (rows whose campaign
/// is missing say "no data").
pub fn comparison(loaded: &[Loaded]) -> Vec<ComparisonRow> {
    table::claims().iter().map(|c| c.evaluate(loaded)).collect()
}

/// What an analysis of ours found.
#[derive(Debug, Clone, PartialEq)]
pub enum Measured {
    /// Our number as the report shows it, and the values the claim's rule reads (their
    /// order is documented on each [`Ours`]).
    Values { text: String, values: Vec<f64> },
    /// A result the rule does not apply to, with its verdict (e.g. SEARCH never exited).
    Judged { text: String, verdict: Verdict },
    /// Nothing to measure, and why.
    NoData(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Matches,
    SameTrend,
    Differs,
    NoData,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Matches => "matches",
            Verdict::SameTrend => "same trend",
            Verdict::Differs => "differs",
            Verdict::NoData => "no data",
        }
    }
}

/// How our values are judged: `matches` when every check of `matches` holds, else
/// `same trend` when every check of `trend` holds, else `differs`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub matches: Vec<Check>,
    /// `None`: only a match counts (no trend short of it).
    pub trend: Option<Vec<Check>>,
}

impl Rule {
    /// Matches when each value is within its target, in order (value 0 within the
    /// first target, ...); no trend short of a match.
    pub fn each(targets: impl IntoIterator<Item = Target>) -> Self {
        Rule::all(
            targets
                .into_iter()
                .enumerate()
                .map(|(i, t)| Check::Is(i, t)),
        )
    }

    /// Matches when all the checks hold; no trend short of a match.
    pub fn all(checks: impl IntoIterator<Item = Check>) -> Self {
        Rule {
            matches: checks.into_iter().collect(),
            trend: None,
        }
    }

    /// Short of a match, the seed's trend when all these checks hold.
    pub fn trend(self, checks: impl IntoIterator<Item = Check>) -> Self {
        Rule {
            trend: Some(checks.into_iter().collect()),
            ..self
        }
    }

    /// Short of a match, any value of ours shows the seed's trend.
    pub fn any_trend(self) -> Self {
        self.trend([])
    }

    pub fn verdict(&self, values: &[f64]) -> Verdict {
        let holds = |checks: &[Check]| checks.iter().all(|c| c.holds(values));
        if holds(&self.matches) {
            Verdict::Matches
        } else if self.trend.as_deref().is_some_and(holds) {
            Verdict::SameTrend
        } else {
            Verdict::Differs
        }
    }
}

/// A condition on our values (indices into [`Measured::Values`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    /// Value `.0` is within the target.
    Is(usize, Target),
    /// Value `.0` is above value `.1`.
    Above(usize, usize),
    /// Value `.0` is at least value `.1` times `.2`.
    AtLeast(usize, usize, f64),
    /// Values `.0` and `.1` are at most `.2` apart.
    Close(usize, usize, f64),
    /// Our largest value is where the seed's largest is (the first of equals counts).
    SameLargest(Vec<f64>),
    /// There are `count` values from `from` on and they never rise.
    Falling { from: usize, count: usize },
}

impl Check {
    fn holds(&self, v: &[f64]) -> bool {
        match self {
            Check::Is(i, target) => target.contains(v[*i]),
            Check::Above(i, j) => v[*i] > v[*j],
            Check::AtLeast(i, j, factor) => v[*i] >= v[*j] * factor,
            Check::Close(i, j, tolerance) => (v[*i] - v[*j]).abs() <= *tolerance,
            Check::SameLargest(seed) => largest(v) == largest(seed),
            Check::Falling { from, count } => {
                v.len() == from + count && v[*from..].windows(2).all(|w| w[0] >= w[1])
            }
        }
    }
}

/// Position of the first largest value.
fn largest(v: &[f64]) -> usize {
    (1..v.len()).fold(0, |best, i| if v[i] > v[best] { i } else { best })
}

/// Where one of our values should be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// Within `tolerance` of the seed's number.
    Near {
        seed: f64,
        tolerance: f64,
    },
    /// Within the seed's standard deviation of its mean, or 30% of the mean, and at
    /// least 0.2 (seed 003 gives means and standard deviations).
    Spread {
        mean: f64,
        sd: f64,
    },
    /// In `[low, high]`.
    Between(f64, f64),
    Below(f64),
    Above(f64),
}

impl Target {
    pub fn contains(self, x: f64) -> bool {
        match self {
            Target::Near { seed, tolerance } => (x - seed).abs() <= tolerance,
            Target::Spread { mean, sd } => (x - mean).abs() <= sd.max(mean * 0.3).max(0.2),
            Target::Between(low, high) => low <= x && x <= high,
            Target::Below(limit) => x < limit,
            Target::Above(limit) => x > limit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparison_without_campaigns_fills_every_row_with_no_data() {
        let rows = comparison(&[]);
        assert_eq!(rows.len(), table::claims().len());
        assert!(rows.len() >= 20, "{}", rows.len());
        assert!(
            rows.iter()
                .all(|r| r.verdict == "no data" && !r.seed.is_empty())
        );
        assert!(rows[0].ours.starts_with("- (campaign a-search-geo not run"));
    }

    #[test]
    fn a_rule_matches_then_falls_back_to_its_trend() {
        let rule = Rule::each([
            Target::Near {
                seed: 9.0,
                tolerance: 2.0,
            },
            Target::Between(10.0, 12.0),
        ])
        .trend([Check::Above(1, 0)]);
        assert_eq!(rule.verdict(&[11.0, 12.0]), Verdict::Matches);
        assert_eq!(rule.verdict(&[13.0, 14.0]), Verdict::SameTrend);
        assert_eq!(rule.verdict(&[13.0, 12.0]), Verdict::Differs);
        let only_match = Rule::each([Target::Below(0.3)]);
        assert_eq!(only_match.verdict(&[0.3]), Verdict::Differs);
        assert_eq!(only_match.any_trend().verdict(&[0.3]), Verdict::SameTrend);
    }

    #[test]
    fn checks_read_the_values_they_name() {
        assert!(Check::SameLargest(vec![3.9, 2.6, 93.5]).holds(&[0.0, 37.5, 62.5]));
        assert!(!Check::SameLargest(vec![3.9, 57.1, 39.0]).holds(&[0.0, 25.0, 75.0]));
        assert!(Check::SameLargest(vec![100.0, 0.0, 0.0]).holds(&[50.0, 50.0, 0.0]));
        let falling = Check::Falling { from: 1, count: 3 };
        assert!(falling.holds(&[0.5, 0.9, 0.5, 0.5]));
        assert!(!falling.holds(&[0.5, 0.9, 0.5]), "a scenario without runs");
        assert!(!falling.holds(&[0.5, 0.5, 0.9, 0.1]));
        assert!(Check::AtLeast(0, 1, 0.97).holds(&[17.0, 17.5]));
        assert!(Check::Close(0, 1, 0.15).holds(&[1.0, 0.9]));
    }
}
