//! A campaign's overview: what ran, the dataset makeup under seed 000's exclusion rules
//! (000 Tables 1-3, 001 Tables I and III) and the runs that failed or timed out.

use std::collections::BTreeMap;

use super::{Item, Loaded, Table, variant_runs};
use crate::analysis::{self, ExclusionRules};
use crate::dataset::RunData;

/// Failed and timed-out runs listed by name, at most.
const FAILURES_LISTED: usize = 50;

pub(super) fn items(l: &Loaded, all: &[&RunData], rules: &ExclusionRules) -> Vec<Item> {
    let mut items = vec![
        Item::Text(summary(l, all)),
        Item::Table(makeup(l, all, rules)),
    ];
    items.extend(failures(l, all).map(Item::Table));
    items
}

/// One paragraph: description, runs by status, mode, links, variants, workloads.
pub(super) fn summary(l: &Loaded, all: &[&RunData]) -> String {
    let mut status: BTreeMap<String, usize> = BTreeMap::new();
    for r in all {
        *status.entry(r.row.status.clone()).or_default() += 1;
    }
    format!(
        "{}{} runs of {} planned ({}); mode {}; links: {}; variants: {}; workloads: {}.",
        if l.meta.description.is_empty() {
            String::new()
        } else {
            format!("{} ", l.meta.description)
        },
        all.len(),
        l.meta.run_ids.len(),
        status
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", "),
        l.meta.mode.as_str(),
        l.meta.links.join(", "),
        l.meta.variants.join(", "),
        l.meta.workloads.join(", "),
    )
}

fn makeup(l: &Loaded, all: &[&RunData], rules: &ExclusionRules) -> Table {
    let mut makeup = Table {
        title: format!("{}: dataset makeup", l.meta.name),
        seed_ref: "000 Tables 1-3, 001 Tables I and III".into(),
        columns: [
            "link",
            "variant",
            "first-RTT loss",
            "wireless loss",
            "clean",
            "failed/timeout",
            "total",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
        note: format!(
            "Exclusion rules: first-RTT loss {}, wireless loss {}. In simulation these losses exist only if the link models random loss, so the rules are off unless the spec's [analysis] turns them on.",
            if rules.first_rtt_loss { "on" } else { "off" },
            match rules.wireless_loss_before_s {
                Some(t) => format!("before {t} s"),
                None => "off".into(),
            }
        ),
    };
    for (link, runs) in analysis::group_by(all, |r| r.row.link.clone()) {
        for v in &l.meta.variants {
            let vr = variant_runs(&runs, v);
            if vr.is_empty() {
                continue;
            }
            let m = analysis::dataset_makeup(&vr, rules);
            makeup.rows.push(vec![
                link.clone(),
                v.clone(),
                m.first_rtt_loss.to_string(),
                m.wireless_loss.to_string(),
                m.clean.to_string(),
                m.failed.to_string(),
                m.total.to_string(),
            ]);
        }
    }
    makeup
}

/// The failed and timed-out runs with their reasons (002 Fig. 4 marks them X and T).
fn failures(l: &Loaded, all: &[&RunData]) -> Option<Table> {
    let failures: Vec<&RunData> = all
        .iter()
        .copied()
        .filter(|r| matches!(r.row.status.as_str(), "failed" | "timeout"))
        .collect();
    if failures.is_empty() {
        return None;
    }
    Some(Table {
        title: format!("{}: failed and timed-out runs", l.meta.name),
        seed_ref: "002 Fig. 4 (X and T)".into(),
        columns: ["run", "status", "reason"].map(String::from).to_vec(),
        rows: failures
            .iter()
            .take(FAILURES_LISTED)
            .map(|r| {
                vec![
                    r.row.run_id.clone(),
                    r.row.status.clone(),
                    r.row.reason.clone(),
                ]
            })
            .collect(),
        note: if failures.len() > FAILURES_LISTED {
            format!("First {FAILURES_LISTED} of {}.", failures.len())
        } else {
            String::new()
        },
    })
}
