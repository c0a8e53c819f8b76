//! "Beside other traffic": the pairs of a campaign (runs of two flows: an incumbent and a
//! latecomer) as tables of each pair's measures, the harm each newcomer does to each
//! incumbent against the incumbent's own kind (Ware et al., HotNets 2019), and issue 38's
//! checks of the `satellite` profile with their verdicts ([`crate::beside`]). Shown for
//! any campaign with two-flow runs; `satquic beside` runs the campaign it was made for.

use super::{Item, Loaded, Table};
use crate::beside::checks::{self, HarmCheck, LossCheck};
use crate::beside::harm::{self, Harm};
use crate::beside::pairs::{self, PairCell, PairRun};
use crate::dataset::RunData;

/// The section's items; empty without two-flow runs.
pub(super) fn items(l: &Loaded, all: &[&RunData]) -> Vec<Item> {
    let (runs, unreadable) = pairs::load(&l.dir, all);
    if runs.is_empty() {
        return Vec::new();
    }
    let cells = pairs::cells(&runs);
    let harms = harm::harms(&cells);
    let loss = checks::loss_checks(&runs);
    let harm_checks = checks::harm_checks(&harms);
    let mut items = vec![Item::Text(intro(&runs, unreadable))];
    if !loss.is_empty() || !harm_checks.is_empty() {
        items.push(Item::Table(glance_table(&l.meta.name, &loss, &harm_checks)));
    }
    if !loss.is_empty() {
        items.push(Item::Table(loss_table(&l.meta.name, &loss)));
    }
    if !harm_checks.is_empty() {
        items.push(Item::Table(harm_check_table(&l.meta.name, &harm_checks)));
    }
    if harms.iter().any(|h| h.newcomer != h.incumbent) {
        items.push(Item::Table(harm_table(&l.meta.name, &harms, &cells)));
    }
    items.push(Item::Table(pairs_table(&l.meta.name, &cells)));
    items
}

fn intro(runs: &[PairRun], unreadable: usize) -> String {
    let mut text = format!(
        "{} runs of two flows on one bottleneck: flow 0 is the incumbent, flow 1 the latecomer \
         (it starts the stagger later). Every measure is the record's, over the period both \
         flows shared the link (from the latecomer's start to the first flow's end): each \
         flow's goodput and share of the pair's, its loss rate (link drops over its data \
         packets at the bottleneck), the p50 and p95 of its packets' queueing delay at the \
         bottleneck (the link's ground truth: RTT minus the path's base RTT, in the data \
         direction), and Jain's index; means over seeds. Harm (Ware et al., HotNets 2019): \
         what the incumbent loses beside the newcomer against beside a newcomer of its own \
         algorithm on the same path, stagger and seeds: points of throughput share, Ware's \
         throughput harm (100 x (goodput beside own - beside newcomer) / beside own), points \
         of loss rate, ms of p95 queueing delay and Ware's delay harm (100 x (p95 beside \
         newcomer - beside own) / beside newcomer); > 0 is harm. The loss check counts the \
         whole flow. Rows marked * have quinn's bbr in them, which draws from the thread \
         RNG: not reproducible run for run.",
        runs.len()
    );
    if unreadable > 0 {
        text.push_str(&format!(
            " {unreadable} two-flow runs are left out: their summary.json could not be read or \
             has no shared period (the flows never overlapped)."
        ));
    }
    text
}

fn secs(ms: u64) -> String {
    format!("{} s", crate::spec::format_float(ms as f64 / 1000.0))
}

fn pct(fraction: f64) -> String {
    format!("{:.2}", fraction * 100.0)
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.digits$}"))
}

fn verdict(pass: Option<bool>) -> String {
    match pass {
        Some(true) => "pass",
        Some(false) => "FAIL",
        None => "no data",
    }
    .into()
}

fn mark(reproducible: bool, cc: &str) -> String {
    if reproducible {
        cc.to_string()
    } else {
        format!("{cc} *")
    }
}

/// Passes and failures of each check per path.
fn glance_table(campaign: &str, loss: &[LossCheck], harm: &[HarmCheck]) -> Table {
    let mut links: Vec<&str> = Vec::new();
    for l in loss
        .iter()
        .map(|c| c.link.as_str())
        .chain(harm.iter().map(|c| c.harm.link.as_str()))
    {
        if !links.contains(&l) {
            links.push(l);
        }
    }
    let mut rows = Vec::new();
    for link in links {
        let l: Vec<Option<bool>> = loss
            .iter()
            .filter(|c| c.link == link)
            .map(|c| c.pass)
            .collect();
        let h: Vec<Option<bool>> = harm
            .iter()
            .filter(|c| c.harm.link == link)
            .map(|c| Some(c.pass()))
            .collect();
        for (check, v) in [("loss", l), ("harm as latecomer", h)] {
            if v.is_empty() {
                continue;
            }
            let count = |x: Option<bool>| v.iter().filter(|p| **p == x).count().to_string();
            rows.push(vec![
                link.to_string(),
                check.to_string(),
                count(Some(true)),
                count(Some(false)),
                count(None),
            ]);
        }
    }
    Table {
        title: format!("{campaign}: the satellite profile's checks at a glance"),
        seed_ref: String::new(),
        columns: ["path", "check", "pass", "fail", "no data"]
            .map(String::from)
            .to_vec(),
        rows,
        note: format!(
            "Loss: the profile's flow loses at most {} % of its packets at the bottleneck, or no \
             more than cubic in the same role (the pair with cubic in its place) on the same path, \
             stagger and seed, whichever is larger; every seed. Harm: as the latecomer, the \
             profile takes at most {} points of throughput share from the incumbent (cubic, bbr3, \
             newreno, itself) beyond what the incumbent's own kind takes, and its delay harm on \
             the incumbent's p95 is at most {} points (Ware's form) or {} ms.",
            checks::LOSS_FLOOR * 100.0,
            checks::SHARE_TOLERANCE_PTS,
            checks::DELAY_TOLERANCE_PTS,
            checks::DELAY_TOLERANCE_MS
        ),
    }
}

fn loss_table(campaign: &str, loss: &[LossCheck]) -> Table {
    let rows = loss
        .iter()
        .map(|c| {
            vec![
                c.link.clone(),
                secs(c.stagger_ms),
                c.role.as_str().into(),
                mark(!pairs::is_quinn_bbr(&c.partner), &c.partner),
                c.seeds.to_string(),
                c.seed.to_string(),
                pct(c.loss_rate),
                c.drops.to_string(),
                c.reference_loss_rate.map_or_else(|| "-".into(), pct),
                pct(c.bound),
                verdict(c.pass),
            ]
        })
        .collect();
    Table {
        title: format!("{campaign}: the profile's loss in every pair with it (worst seed)"),
        seed_ref: String::new(),
        columns: [
            "path",
            "stagger",
            "profile's role",
            "other flow",
            "seeds",
            "worst seed",
            "loss %",
            "drops",
            "cubic in its place, loss %",
            "bound %",
            "verdict",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: "Whole flow: link drops over the flow's data packets that reached the bottleneck. \
               The worst seed is the one with the largest loss above its bound."
            .into(),
    }
}

fn harm_check_table(campaign: &str, checks: &[HarmCheck]) -> Table {
    let rows = checks
        .iter()
        .map(|c| {
            let h = &c.harm;
            vec![
                h.link.clone(),
                secs(h.stagger_ms),
                h.incumbent.clone(),
                pct(h.own.share),
                pct(h.with.share),
                format!("{:.1}", h.share_loss_pts()),
                opt(h.own.p95_ms, 1),
                opt(h.with.p95_ms, 1),
                opt(h.delay_harm_pts(), 1),
                verdict(Some(c.share_pass)),
                verdict(c.delay_pass),
            ]
        })
        .collect();
    Table {
        title: format!("{campaign}: the profile's harm as the latecomer"),
        seed_ref: String::new(),
        columns: [
            "path",
            "stagger",
            "incumbent",
            "its share beside own kind %",
            "beside the profile %",
            "share lost, pts",
            "its p95 beside own kind, ms",
            "beside the profile, ms",
            "delay harm, pts",
            "share verdict",
            "delay verdict",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: "Means over seeds of the incumbent's measures in the shared period.".into(),
    }
}

fn harm_table(campaign: &str, harms: &[Harm], cells: &[PairCell]) -> Table {
    let reproducible = |h: &Harm| {
        cells
            .iter()
            .filter(|c| c.link == h.link && c.stagger_ms == h.stagger_ms)
            .filter(|c| c.incumbent == h.incumbent)
            .filter(|c| c.latecomer == h.newcomer || c.latecomer == h.incumbent)
            .all(PairCell::reproducible)
    };
    let rows = harms
        .iter()
        .filter(|h| h.newcomer != h.incumbent)
        .map(|h| {
            vec![
                h.link.clone(),
                secs(h.stagger_ms),
                mark(reproducible(h), &h.incumbent),
                h.newcomer.clone(),
                pct(h.own.share),
                pct(h.with.share),
                format!("{:.1}", h.share_loss_pts()),
                format!("{:.1}", h.throughput_harm_pts()),
                pct(h.own.loss_rate),
                pct(h.with.loss_rate),
                format!("{:.2}", h.loss_growth_pts()),
                opt(h.own.p95_ms, 1),
                opt(h.with.p95_ms, 1),
                opt(h.delay_harm_pts(), 1),
            ]
        })
        .collect();
    Table {
        title: format!("{campaign}: harm of each newcomer to each incumbent"),
        seed_ref: String::new(),
        columns: [
            "path",
            "stagger",
            "incumbent",
            "newcomer",
            "share beside own %",
            "share beside newcomer %",
            "share lost, pts",
            "throughput harm, pts",
            "loss beside own %",
            "loss beside newcomer %",
            "loss added, pts",
            "p95 beside own, ms",
            "p95 beside newcomer, ms",
            "delay harm, pts",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: "The incumbent's measures, means over seeds, beside the newcomer against beside a \
               latecomer of its own algorithm."
            .into(),
    }
}

fn pairs_table(campaign: &str, cells: &[PairCell]) -> Table {
    let rows = cells
        .iter()
        .map(|c| {
            let m = |f: fn(&PairRun) -> f64| c.mean(|r| Some(f(r))).unwrap_or(0.0);
            vec![
                c.link.clone(),
                secs(c.stagger_ms),
                mark(c.reproducible(), &c.incumbent),
                c.latecomer.clone(),
                c.runs.len().to_string(),
                format!("{:.2}", m(|r| r.incumbent.goodput_bps) / 1e6),
                format!("{:.2}", m(|r| r.latecomer.goodput_bps) / 1e6),
                pct(m(|r| r.incumbent.share)),
                pct(m(|r| r.incumbent.shared_loss_rate())),
                pct(m(|r| r.latecomer.shared_loss_rate())),
                opt(c.mean(|r| r.incumbent.queue_p50_ms), 1),
                opt(c.mean(|r| r.incumbent.queue_p95_ms), 1),
                opt(c.mean(|r| r.latecomer.queue_p50_ms), 1),
                opt(c.mean(|r| r.latecomer.queue_p95_ms), 1),
                format!("{:.3}", m(|r| r.jain_index)),
                format!("{:.0}", m(|r| r.shared_s)),
            ]
        })
        .collect();
    Table {
        title: format!("{campaign}: every pair over the shared period"),
        seed_ref: String::new(),
        columns: [
            "path",
            "stagger",
            "incumbent",
            "latecomer",
            "seeds",
            "incumbent Mbit/s",
            "latecomer Mbit/s",
            "incumbent share %",
            "incumbent loss %",
            "latecomer loss %",
            "incumbent queue p50, ms",
            "incumbent queue p95, ms",
            "latecomer queue p50, ms",
            "latecomer queue p95, ms",
            "JFI",
            "shared, s",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: "Means over seeds.".into(),
    }
}
