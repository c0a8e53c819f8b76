//! "Busy beam": the short flows' completion times per variant and size class, each
//! object's completion time against the same object's in the baseline variant (the one
//! whose bulk flows run `cubic`, or the campaign's `[analysis] baseline`), the bulk
//! flows' goodput, loss and queueing delay, and issue 38's check that the profile on the
//! bulk flows leaves the short flows' median and p95 within 5 % of the baseline's, and
//! the short requests (below 100 kB) in round trips of the path's min RTT, as issue 40's
//! responsiveness test asks ([`crate::beside::objects`]).

use super::{Item, Loaded, Table};
use crate::beside::objects::{self, BeamRun, Completion, ObjectResult, SIZE_CLASSES};
use crate::dataset::RunData;
use crate::stats::quantile;

/// The check's tolerance: the short flows' median and p95 within this factor of the
/// baseline's.
pub const BEAM_TOLERANCE: f64 = 1.05;

/// The section's items; empty without beam runs.
pub(super) fn items(l: &Loaded, all: &[&RunData]) -> Vec<Item> {
    let (runs, unreadable) = objects::load(&l.dir, all);
    if runs.is_empty() {
        return Vec::new();
    }
    let baseline = baseline_variant(l, &runs);
    let mut text = format!(
        "{} beam runs: bulk flows with the variant's controller beside users fetching objects \
         (their own QUIC connections, handshake included) generated from the seed, so that \
         every variant of a seed sees the same objects at the same times. Completion times \
         count an object the time cap ended as slower than all others (a quantile that falls \
         on one is shown as unfinished). Ratios pair each object with itself in the baseline \
         variant{}.",
        runs.len(),
        baseline
            .as_ref()
            .map_or_else(String::new, |b| format!(" ({b})"))
    );
    if unreadable > 0 {
        text.push_str(&format!(
            " {unreadable} beam runs are left out: their summary.json could not be read."
        ));
    }
    let mut items = vec![
        Item::Text(text),
        Item::Table(completion_table(&l.meta.name, &runs)),
    ];
    if let Some(t) = responsiveness_table(&l.meta.name, &runs) {
        items.push(Item::Table(t));
    }
    if let Some(b) = &baseline {
        items.push(Item::Table(ratio_table(&l.meta.name, &runs, b)));
        items.push(Item::Table(check_table(&l.meta.name, &runs, b)));
    }
    items.push(Item::Table(bulk_table(&l.meta.name, &runs)));
    items
}

/// The campaign's baseline, else the variant whose bulk flows run `cubic`.
fn baseline_variant(l: &Loaded, runs: &[BeamRun]) -> Option<String> {
    l.meta.analysis.baseline.clone().or_else(|| {
        runs.iter()
            .find(|r| r.bulk.first().is_some_and(|b| b.cc == "cubic"))
            .map(|r| r.variant.clone())
    })
}

/// (link, workload, variant) groups in first-seen order.
/// The runs of one path, workload and variant: (link, workload, variant, runs).
type Group<'a> = (String, String, String, Vec<&'a BeamRun>);

fn groups(runs: &[BeamRun]) -> Vec<Group<'_>> {
    let mut out: Vec<Group<'_>> = Vec::new();
    for r in runs {
        match out
            .iter_mut()
            .find(|g| g.0 == r.link && g.1 == r.workload && g.2 == r.variant)
        {
            Some(g) => g.3.push(r),
            None => out.push((
                r.link.clone(),
                r.workload.clone(),
                r.variant.clone(),
                vec![r],
            )),
        }
    }
    out
}

/// Each group of a variant other than `baseline`, with the baseline's group on the same
/// path and workload (groups without one are left out).
fn against_baseline<'g, 'a>(
    groups: &'g [Group<'a>],
    baseline: &str,
) -> Vec<(&'g Group<'a>, &'g Group<'a>)> {
    groups
        .iter()
        .filter(|g| g.2 != baseline)
        .filter_map(|g| {
            let base = groups
                .iter()
                .find(|b| b.0 == g.0 && b.1 == g.1 && b.2 == baseline)?;
            Some((g, base))
        })
        .collect()
}

fn secs(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}")
    } else {
        "unfinished".into()
    }
}

/// Class rows: all objects, then each size class.
fn classes() -> Vec<(String, Option<usize>)> {
    std::iter::once(("all".to_string(), None))
        .chain(
            SIZE_CLASSES
                .iter()
                .enumerate()
                .map(|(i, c)| (c.0.to_string(), Some(i))),
        )
        .collect()
}

fn objects_of<'a>(runs: &[&'a BeamRun], class: Option<usize>) -> Vec<&'a ObjectResult> {
    runs.iter()
        .flat_map(|r| r.objects.iter())
        .filter(|o| class.is_none_or(|c| objects::in_class(o, c)))
        .collect()
}

fn completion_table(campaign: &str, runs: &[BeamRun]) -> Table {
    let mut rows = Vec::new();
    for (link, workload, variant, g) in groups(runs) {
        for (label, class) in classes() {
            let Some(c) = objects::completion(objects_of(&g, class).into_iter()) else {
                continue;
            };
            rows.push(vec![
                link.clone(),
                workload.clone(),
                variant.clone(),
                label,
                c.objects.to_string(),
                c.unfinished.to_string(),
                secs(c.median_s),
                secs(c.p95_s),
            ]);
        }
    }
    Table {
        title: format!("{campaign}: short flows' completion times"),
        seed_ref: String::new(),
        columns: [
            "path",
            "workload",
            "variant (bulk flows)",
            "size",
            "objects",
            "unfinished",
            "median, s",
            "p95, s",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: "Over every object of every seed; from the object's start (its handshake) to its \
               last byte at the client."
            .into(),
    }
}

/// Milliseconds of a pair of seconds, `a / b`.
fn ms_pair((a, b): (f64, f64)) -> String {
    let ms = |v: f64| {
        if v.is_finite() {
            format!("{:.0}", v * 1e3)
        } else {
            "unfinished".into()
        }
    };
    format!("{} / {}", ms(a), ms(b))
}

/// A pair of ratios, `a / b`.
fn ratio_pair((a, b): (f64, f64)) -> String {
    let r = |v: f64| {
        if v.is_finite() {
            format!("{v:.2}")
        } else {
            "unfinished".into()
        }
    };
    format!("{} / {}", r(a), r(b))
}

/// The short requests per group in the path's min RTTs; `None` without short requests.
fn responsiveness_table(campaign: &str, runs: &[BeamRun]) -> Option<Table> {
    let rows: Vec<Vec<String>> = groups(runs)
        .into_iter()
        .filter_map(|(link, workload, variant, g)| {
            let r = objects::responsiveness(&g)?;
            Some(vec![
                link,
                workload,
                variant,
                r.requests.to_string(),
                r.unfinished.to_string(),
                format!("{:.1}", r.min_rtt_s * 1e3),
                ms_pair(r.completion_s),
                ratio_pair(r.completion_rtts),
                ms_pair(r.request_s),
                ratio_pair(r.request_rtts),
            ])
        })
        .collect();
    (!rows.is_empty()).then(|| Table {
        title: format!("{campaign}: short requests against the path's min RTT (responsiveness)"),
        seed_ref: String::new(),
        columns: [
            "path",
            "workload",
            "variant (bulk flows)",
            "requests",
            "unfinished",
            "min RTT, ms",
            "completion median / p95, ms",
            "completion / min RTT, median / p95",
            "request median / p95, ms",
            "request / min RTT, median / p95",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: format!(
            "Objects below {} kB, each its own connection, over every seed. Completion: from \
             its start (handshake included) to its last byte; request: from the end of its \
             handshake to its last byte, the round trip the draft-ietf-ippm-responsiveness \
             probes time on a connection that is up. Each is divided by its run's min RTT \
             (the smallest RTT any flow of the run measured: on a slotted link, its lowest \
             slot's, so a request in a slower slot counts its base RTT as load); min RTT is \
             the median over runs.",
            objects::SHORT_REQUEST_BYTES / 1000
        ),
    })
}

fn ratio_table(campaign: &str, runs: &[BeamRun], baseline: &str) -> Table {
    let mut rows = Vec::new();
    let groups = groups(runs);
    for ((link, workload, variant, g), base) in against_baseline(&groups, baseline) {
        let pairs = objects::ratios(g, &base.3);
        for (label, class) in classes() {
            let mut r: Vec<f64> = pairs
                .iter()
                .filter(|(o, _)| class.is_none_or(|c| objects::in_class(o, c)))
                .map(|(_, v)| *v)
                .collect();
            if r.is_empty() {
                continue;
            }
            r.sort_by(f64::total_cmp);
            rows.push(vec![
                link.clone(),
                workload.clone(),
                format!("{variant} / {baseline}"),
                label,
                r.len().to_string(),
                format!("{:.3}", quantile(&r, 0.5)),
                format!("{:.3}", quantile(&r, 0.95)),
                format!(
                    "{:.0}",
                    100.0 * r.iter().filter(|v| **v > 1.0).count() as f64 / r.len() as f64
                ),
            ]);
        }
    }
    Table {
        title: format!(
            "{campaign}: each object's completion time against the same object's in {baseline}"
        ),
        seed_ref: String::new(),
        columns: [
            "path",
            "workload",
            "variants",
            "size",
            "objects",
            "median ratio",
            "p95 ratio",
            "slower, %",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: "Objects finished in both variants; ratio > 1: slower than in the baseline.".into(),
    }
}

fn check_table(campaign: &str, runs: &[BeamRun], baseline: &str) -> Table {
    let mut rows = Vec::new();
    let groups = groups(runs);
    let all = |g: &[&BeamRun]| -> Option<Completion> {
        objects::completion(objects_of(g, None).into_iter())
    };
    for ((link, workload, variant, g), base) in against_baseline(&groups, baseline) {
        let (Some(c), Some(b)) = (all(g), all(&base.3)) else {
            continue;
        };
        let within = |v: f64, reference: f64| v <= reference * BEAM_TOLERANCE;
        let pass = within(c.median_s, b.median_s) && within(c.p95_s, b.p95_s);
        rows.push(vec![
            link.clone(),
            workload.clone(),
            variant.clone(),
            secs(c.median_s),
            secs(b.median_s),
            secs(c.p95_s),
            secs(b.p95_s),
            if pass { "pass" } else { "FAIL" }.into(),
        ]);
    }
    Table {
        title: format!(
            "{campaign}: the short flows beside each variant's bulk flows against beside {baseline}'s"
        ),
        seed_ref: String::new(),
        columns: [
            "path",
            "workload",
            "variant",
            "median, s",
            "baseline median, s",
            "p95, s",
            "baseline p95, s",
            "verdict",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: format!(
            "Pass: the median and the p95 of all objects' completion times at most {:.0} % above \
             the baseline's.",
            (BEAM_TOLERANCE - 1.0) * 100.0
        ),
    }
}

fn bulk_table(campaign: &str, runs: &[BeamRun]) -> Table {
    let mut rows = Vec::new();
    for (link, workload, variant, g) in groups(runs) {
        let bulk: Vec<&objects::BulkResult> = g.iter().flat_map(|r| r.bulk.iter()).collect();
        if bulk.is_empty() {
            continue;
        }
        let mean = |v: Vec<f64>| -> String {
            if v.is_empty() {
                "-".into()
            } else {
                format!("{:.2}", v.iter().sum::<f64>() / v.len() as f64)
            }
        };
        let mut ccs: Vec<&str> = bulk.iter().map(|b| b.cc.as_str()).collect();
        ccs.dedup();
        rows.push(vec![
            link,
            workload,
            variant,
            ccs.join("|"),
            bulk.len().to_string(),
            mean(bulk.iter().map(|b| b.goodput_bps / 1e6).collect()),
            mean(bulk.iter().map(|b| b.loss_rate * 100.0).collect()),
            mean(bulk.iter().filter_map(|b| b.queue_p50_ms).collect()),
            mean(bulk.iter().filter_map(|b| b.queue_p95_ms).collect()),
        ]);
    }
    Table {
        title: format!("{campaign}: the bulk flows"),
        seed_ref: String::new(),
        columns: [
            "path",
            "workload",
            "variant",
            "bulk cc",
            "flows",
            "goodput, Mbit/s",
            "loss %",
            "queue p50, ms",
            "queue p95, ms",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: "Means over bulk flows and seeds; each flow's goodput from its start to the \
               window's end, its queueing delay over its whole flow."
            .into(),
    }
}
