//! The implementation matrix of `satquic matrix` (seed 002): per scenario (link and cc)
//! a heatmap of the mean efficiency of each client x server pair (002 Fig. 4), the CDF of
//! the efficiency with unsuccessful runs at 0 (002 Fig. 3), 002 Table II (mean and max
//! goodput and efficiency of the successful runs, timeouts and failures) and our numbers
//! next to the seed's.

use super::{FigureEntry, Item, Loaded, Table, mbps, pct};
use crate::analysis::{self, Quartiles};
use crate::dataset::RunData;
use crate::plot::{Figure, Heatmap};

/// Seed 002 Table II: (our preset, the seed's scenario, mean Mbit/s, mean efficiency,
/// max Mbit/s, max efficiency).
const SEED_TABLE_II: [(&str, &str, f64, f64, f64, f64); 3] = [
    ("qir-terrestrial", "TERRESTRIAL", 15.11, 0.76, 19.2, 0.96),
    ("qir-sat", "SAT", 5.05, 0.25, 12.0, 0.60),
    ("qir-satloss", "SATLOSS", 3.06, 0.15, 11.5, 0.57),
];

/// The seed's file: 10 MiB.
const SEED_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Ours within this many percentage points of the seed's efficiency: `matches`.
const MATCH_POINTS: f64 = 10.0;

/// Whether a campaign is a matrix (its rows name implementations).
pub(super) fn is_matrix(l: &Loaded) -> bool {
    l.runs.iter().any(|r| r.row.client_impl.is_some())
}

/// Runs that ran (not skipped for a missing implementation, not incompatible).
fn ran<'a>(runs: &[&'a RunData]) -> Vec<&'a RunData> {
    runs.iter()
        .copied()
        .filter(|r| !matches!(r.row.status.as_str(), "skipped" | "incompatible"))
        .collect()
}

fn scenario(r: &RunData) -> String {
    if r.row.cc == "default" {
        r.row.link.clone()
    } else {
        format!("{} cc={}", r.row.link, r.row.cc)
    }
}

fn in_order<'a>(values: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in values {
        if !out.iter().any(|o| o == v) {
            out.push(v.to_string());
        }
    }
    out
}

fn is_tcp(r: &RunData) -> bool {
    r.row.transport.as_deref() == Some("tcp")
}

pub(super) fn items(l: &Loaded, tag: &str, all_rows: &[&RunData]) -> Vec<Item> {
    let tcp: Vec<&RunData> = all_rows.iter().copied().filter(|r| is_tcp(r)).collect();
    let all: Vec<&RunData> = all_rows.iter().copied().filter(|r| !is_tcp(r)).collect();
    let all = &all[..];
    let runs = ran(all);
    let clients = in_order(all.iter().filter_map(|r| r.row.client_impl.as_deref()));
    let servers = in_order(all.iter().filter_map(|r| r.row.server_impl.as_deref()));
    let scenarios = analysis::group_by(&runs, scenario);
    let mut items = vec![
        Item::Table(table_ii(&l.meta.name, &scenarios)),
        Item::Table(comparison(&scenarios)),
    ];
    for (i, (name, sr)) in scenarios.iter().enumerate() {
        items.push(heatmap(l, tag, i, name, sr, &clients, &servers));
    }
    if !scenarios.is_empty() {
        items.push(cdf(l, tag, &scenarios));
    }
    items.push(Item::Table(pairs(&l.meta.name, &scenarios)));
    items.extend(not_run(all));
    if !tcp.is_empty() {
        items.push(Item::Table(tcp_table(&l.meta.name, &tcp)));
        items.extend(not_run(&tcp));
    }
    items
}

/// Kernel TCP rows (iperf3 through `satquic link --tun`): per link and variant, time,
/// efficiency and seed 003's Table III classes (early / chokepoint / late) from tcp_info.
fn tcp_table(name: &str, runs: &[&RunData]) -> Table {
    let mut t = Table {
        title: format!("{name}: kernel TCP through the TUN link, slow-start exits"),
        seed_ref: "003 Table III".into(),
        columns: [
            "link",
            "variant",
            "runs",
            "completed",
            "mean time s",
            "mean eff.",
            "exit s (mean)",
            "capacity s (mean)",
            "early",
            "chokepoint",
            "late",
            "none",
            "early (OWD)",
            "chokepoint (OWD)",
            "late (OWD)",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
        note: "iperf3 (Debian) in two network namespaces joined by satquic link --tun on the preset; the sender's tcp_info sampled every 50 ms (runs/<id>/tcp_info.csv). Exit = the first finite ssthresh (HyStart's exit, or loss recovery: then late); capacity from the link's ground truth, by the simulator's rule; (OWD): capacity from the latency-offset heuristic of 003 Sec. V-B on the tcp_info RTT. BBR leaves ssthresh alone: no class. Time = sender start to the last payload byte delivered.".into(),
    };
    let groups = analysis::group_by(runs, |r| format!("{}|{}", r.row.link, r.row.variant));
    for (key, g) in &groups {
        let (link, variant) = key.split_once('|').unwrap_or((key, ""));
        let ok = completed(g);
        let mean = |v: Vec<f64>| {
            if v.is_empty() {
                "-".to_string()
            } else {
                format!("{:.2}", v.iter().sum::<f64>() / v.len() as f64)
            }
        };
        let classes = analysis::class_counts(g.iter().map(|r| r.row.exit_class.as_deref()));
        let owd = analysis::class_counts(g.iter().map(|r| r.row.owd_exit_class.as_deref()));
        let n = |c: &analysis::ClassCounts, class: analysis::ExitClass| {
            if c.total() == 0 {
                "-".to_string()
            } else {
                pct(c.pct(class))
            }
        };
        use analysis::ExitClass::{Chokepoint, Early, Late, None as NoExit};
        t.rows.push(vec![
            link.to_string(),
            variant.to_string(),
            g.len().to_string(),
            ok.len().to_string(),
            mean(ok.iter().filter_map(|r| r.row.completion_time_s).collect()),
            ok.iter()
                .filter_map(|r| r.row.efficiency)
                .map(|e| e * 100.0)
                .reduce(|a, b| a + b)
                .map_or("-".into(), |s| pct(s / ok.len().max(1) as f64)),
            mean(g.iter().filter_map(|r| r.row.exit_at_s).collect()),
            mean(g.iter().filter_map(|r| r.row.capacity_at_s).collect()),
            n(&classes, Early),
            n(&classes, Chokepoint),
            n(&classes, Late),
            n(&classes, NoExit),
            n(&owd, Early),
            n(&owd, Chokepoint),
            n(&owd, Late),
        ]);
    }
    t
}

type Scenarios<'a> = [(String, Vec<&'a RunData>)];

fn completed<'a>(runs: &[&'a RunData]) -> Vec<&'a RunData> {
    runs.iter()
        .copied()
        .filter(|r| r.row.status == "completed")
        .collect()
}

/// Mean and max goodput (bit/s) and efficiency of the completed runs.
fn stats(runs: &[&RunData]) -> Option<(f64, f64, f64, f64)> {
    let ok = completed(runs);
    if ok.is_empty() {
        return None;
    }
    let g: Vec<f64> = ok.iter().filter_map(|r| r.row.goodput_bps).collect();
    let e: Vec<f64> = ok.iter().filter_map(|r| r.row.efficiency).collect();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    Some((mean(&g), mean(&e), max(&g), max(&e)))
}

/// 002 Table II: per scenario, over every pair's successful runs.
fn table_ii(name: &str, scenarios: &Scenarios) -> Table {
    let mut t = Table {
        title: format!("{name}: overview of the matrix (seed 002 Table II)"),
        seed_ref: "002 Table II".into(),
        columns: [
            "scenario",
            "runs",
            "mean Mbit/s",
            "mean eff.",
            "max Mbit/s",
            "max eff.",
            "timeout T",
            "failed x",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
        note: "As in the seed, unsuccessful runs are left out of the means. Goodput = file size x 8 / the client's wall-clock time (process start to exit); efficiency = goodput / the preset's down rate (002 Eq. 1).".into(),
    };
    for (s, sr) in scenarios {
        let count = |st: &str| sr.iter().filter(|r| r.row.status == st).count();
        let (mg, me, xg, xe) = match stats(sr) {
            Some((mg, me, xg, xe)) => (mbps(mg), pct(me * 100.0), mbps(xg), pct(xe * 100.0)),
            None => ("-".into(), "-".into(), "-".into(), "-".into()),
        };
        t.rows.push(vec![
            s.clone(),
            sr.len().to_string(),
            mg,
            me,
            xg,
            xe,
            count("timeout").to_string(),
            count("failed").to_string(),
        ]);
    }
    t
}

/// The seed's Table II numbers, ours and a verdict, for the scenarios the seed has.
fn comparison(scenarios: &Scenarios) -> Table {
    let mut t = Table {
        title: "seed 002 Table II against ours".into(),
        seed_ref: "002 Table II".into(),
        columns: ["scenario", "what", "seed's number", "ours", "verdict"]
            .map(String::from)
            .to_vec(),
        rows: Vec::new(),
        note: format!(
            "matches: ours within {MATCH_POINTS} percentage points of the seed's efficiency; compared only for the seed's 10 MiB file. The seed measured the QUIC interop runner's implementations of 2021-22 (13 clients and servers) over ns-3, 10 MiB files, 10 repetitions; ours are this matrix's implementations, file size and repetitions through satquic link, so a difference says as much about the set and the file size as about the link."
        ),
    };
    for (preset, seed_name, mg, me, xg, xe) in SEED_TABLE_II {
        let runs = scenarios.iter().find(|(s, _)| s == preset);
        let ours = runs.and_then(|(_, sr)| stats(sr));
        let mut sizes: Vec<u64> = runs
            .map(|(_, sr)| sr.iter().filter_map(|r| r.row.bytes).collect())
            .unwrap_or_default();
        sizes.sort_unstable();
        sizes.dedup();
        for (what, seed_bps, seed_eff, pick) in [
            ("mean goodput (efficiency)", mg, me, 0usize),
            ("max goodput (efficiency)", xg, xe, 1usize),
        ] {
            let (ours_text, verdict) = match ours {
                Some((og, oe, xg, xe)) => {
                    let (g, e) = if pick == 0 { (og, oe) } else { (xg, xe) };
                    let diff = (e - seed_eff) * 100.0;
                    let verdict = if sizes != [SEED_FILE_BYTES] {
                        // Handshake and slow start weigh more on a smaller file.
                        format!(
                            "not comparable (file {}, the seed's 10MiB)",
                            sizes
                                .iter()
                                .map(|b| crate::spec::size_label(*b))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    } else if diff.abs() <= MATCH_POINTS {
                        "matches".to_string()
                    } else {
                        format!("differs ({diff:+.1} points)")
                    };
                    (format!("{} Mbit/s ({})", mbps(g), pct(e * 100.0)), verdict)
                }
                None => ("-".into(), "no data".into()),
            };
            t.rows.push(vec![
                format!("{preset} ({seed_name})"),
                what.into(),
                format!("{seed_bps:.2} Mbit/s ({:.0}%)", seed_eff * 100.0),
                ours_text,
                verdict,
            ]);
        }
    }
    t
}

/// Mean efficiency of each pair (002 Fig. 4): clients as rows, servers as columns.
fn heatmap(
    l: &Loaded,
    tag: &str,
    i: usize,
    name: &str,
    runs: &[&RunData],
    clients: &[String],
    servers: &[String],
) -> Item {
    let values = clients
        .iter()
        .map(|c| {
            servers
                .iter()
                .map(|s| {
                    let cell: Vec<&RunData> = runs
                        .iter()
                        .copied()
                        .filter(|r| {
                            r.row.client_impl.as_deref() == Some(c)
                                && r.row.server_impl.as_deref() == Some(s)
                        })
                        .collect();
                    stats(&cell).map(|(_, e, _, _)| e)
                })
                .collect()
        })
        .collect();
    Item::Figure(Box::new(FigureEntry {
        id: format!("{tag}-matrix-heatmap-{}", i + 1),
        figure: Figure::Heatmap(Heatmap {
            title: format!("{name}: mean efficiency, client (rows) x server (columns)"),
            columns: servers.to_vec(),
            rows: clients.to_vec(),
            values,
            range: (0.0, 1.0),
            percent: true,
        }),
        seed_ref: "002 Fig. 4 (empty cells: no successful run; see the table of runs that did not complete)".into(),
        runs: format!(
            "campaign {}, scenario {name}: {} runs (rows of runs.csv with this link and cc)",
            l.meta.name,
            runs.len()
        ),
    }))
}

/// The efficiency CDF per scenario, unsuccessful runs at 0 (002 Fig. 3).
fn cdf(l: &Loaded, tag: &str, scenarios: &Scenarios) -> Item {
    super::goodput::efficiency_cdf_figure(
        format!("{tag}-matrix-efficiency-cdf"),
        "Efficiency per scenario, all pairs (unsuccessful runs at 0)",
        "efficiency (goodput / link rate)",
        scenarios.iter().map(|(name, sr)| {
            let e = sr
                .iter()
                .map(|r| {
                    if r.row.status == "completed" {
                        r.row.efficiency.unwrap_or(0.0)
                    } else {
                        0.0
                    }
                })
                .collect();
            (name.clone(), e)
        }),
        format!(
            "campaign {}: {} runs that ran",
            l.meta.name,
            scenarios.iter().map(|(_, s)| s.len()).sum::<usize>()
        ),
    )
}

/// Every pair: runs, completed, mean goodput and efficiency, median time.
fn pairs(name: &str, scenarios: &Scenarios) -> Table {
    let mut t = Table {
        title: format!("{name}: each pair"),
        seed_ref: "002 Fig. 4".into(),
        columns: [
            "scenario",
            "client",
            "server",
            "runs",
            "completed",
            "mean Mbit/s",
            "mean eff.",
            "median time s",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
        note: String::new(),
    };
    for (s, sr) in scenarios {
        for pair in in_order(sr.iter().map(|r| r.row.variant.as_str())) {
            let pr: Vec<&RunData> = sr
                .iter()
                .copied()
                .filter(|r| r.row.variant == pair)
                .collect();
            let ok = completed(&pr);
            let times: Vec<f64> = ok.iter().filter_map(|r| r.row.completion_time_s).collect();
            let (mg, me) = stats(&pr).map_or(("-".into(), "-".into()), |(g, e, _, _)| {
                (mbps(g), pct(e * 100.0))
            });
            t.rows.push(vec![
                s.clone(),
                pr[0].row.client_impl.clone().unwrap_or_default(),
                pr[0].row.server_impl.clone().unwrap_or_default(),
                pr.len().to_string(),
                ok.len().to_string(),
                mg,
                me,
                Quartiles::of(&times).map_or("-".into(), |q| format!("{:.2}", q.median)),
            ]);
        }
    }
    t
}

/// Runs that did not complete, with the reason (the seed's T and x, plus pairs that
/// could not run here).
fn not_run(all: &[&RunData]) -> Option<Item> {
    let rows: Vec<Vec<String>> = all
        .iter()
        .filter(|r| r.row.status != "completed")
        .map(|r| {
            vec![
                scenario(r),
                r.row.variant.clone(),
                r.row.rep.to_string(),
                r.row.status.clone(),
                r.row.reason.chars().take(160).collect(),
            ]
        })
        .collect();
    (!rows.is_empty()).then(|| {
        Item::Table(Table {
            title: "runs that did not complete".into(),
            seed_ref: "002 Fig. 4 (T, x)".into(),
            columns: ["scenario", "client/server", "rep", "status", "reason"]
                .map(String::from)
                .to_vec(),
            rows,
            note: "timeout: the client had not finished at the time cap; failed: it exited without the whole file; incompatible: the pair cannot talk (no common ALPN, no such cc); skipped: an implementation is not installed here.".into(),
        })
    })
}
