//! The text `satquic matrix` prints when it is done: per preset and cc a client x server
//! table of mean efficiencies, the kernel TCP rows, and the count of each status. Read
//! from runs.csv's rows, so it shows a resumed or sharded matrix whole.

use std::collections::BTreeMap;

use crate::dataset::Row;

/// The rows of a matrix as text: per preset and cc, clients as rows and servers as
/// columns, the mean efficiency of the completed runs of each pair (`F` failed, `T`
/// timed out, `x` incompatible, `s` skipped where none completed), then the counts of
/// each status.
pub fn text_summary(rows: &[Row]) -> String {
    let all: Vec<&Row> = rows.iter().filter(|r| r.client_impl.is_some()).collect();
    let rows: Vec<&Row> = all
        .iter()
        .copied()
        .filter(|r| r.transport.as_deref() != Some("tcp"))
        .collect();
    let mut out = String::new();
    let order = |v: &mut Vec<String>, s: &str| {
        if !v.iter().any(|x| x == s) {
            v.push(s.to_string());
        }
    };
    let (mut scenarios, mut clients, mut servers) = (Vec::new(), Vec::new(), Vec::new());
    for r in &rows {
        order(&mut scenarios, &format!("{} cc={}", r.link, r.cc));
        order(&mut clients, r.client_impl.as_deref().unwrap_or(""));
        order(&mut servers, r.server_impl.as_deref().unwrap_or(""));
    }
    for scenario in &scenarios {
        out.push_str(&format!(
            "{scenario}: mean efficiency (goodput / down rate), client rows x server columns\n"
        ));
        out.push_str(&format!("{:<12}", "client\\server"));
        for s in &servers {
            out.push_str(&format!(" {s:>9}"));
        }
        out.push('\n');
        for c in &clients {
            out.push_str(&format!("{c:<12}"));
            for s in &servers {
                let cell: Vec<&&Row> = rows
                    .iter()
                    .filter(|r| {
                        format!("{} cc={}", r.link, r.cc) == *scenario
                            && r.client_impl.as_deref() == Some(c)
                            && r.server_impl.as_deref() == Some(s)
                    })
                    .collect();
                let eff: Vec<f64> = cell
                    .iter()
                    .filter(|r| r.status == "completed")
                    .filter_map(|r| r.efficiency)
                    .collect();
                let text = if !eff.is_empty() {
                    format!("{:.0}%", 100.0 * eff.iter().sum::<f64>() / eff.len() as f64)
                } else {
                    let has = |st: &str| cell.iter().any(|r| r.status == st);
                    if cell.is_empty() {
                        "".into()
                    } else if has("timeout") {
                        "T".into()
                    } else if has("failed") {
                        "F".into()
                    } else if has("incompatible") {
                        "x".into()
                    } else {
                        "s".into()
                    }
                };
                out.push_str(&format!(" {text:>9}"));
            }
            out.push('\n');
        }
    }
    out.push_str(&tcp_summary(&all));
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &all {
        *counts.entry(r.status.as_str()).or_default() += 1;
    }
    out.push_str(&format!(
        "{} runs: {}\n",
        all.len(),
        counts
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    out
}

/// The kernel TCP rows, one line each: time, efficiency and seed 003's slow-start columns.
fn tcp_summary(rows: &[&Row]) -> String {
    let tcp: Vec<&&Row> = rows
        .iter()
        .filter(|r| r.transport.as_deref() == Some("tcp"))
        .collect();
    if tcp.is_empty() {
        return String::new();
    }
    let opt = |v: Option<f64>, unit: &str| v.map_or("-".to_string(), |v| format!("{v:.2}{unit}"));
    let mut out = format!(
        "kernel TCP (iperf3 through satquic link --tun), slow-start exit classes as seed 003's Table III\n{:<16} {:<18} {:>3} {:>9} {:>8} {:>5} {:>16} {:>9} {:>10}\n",
        "link", "variant", "rep", "status", "time", "eff", "exit", "capacity", "class"
    );
    for r in tcp {
        let _ = std::fmt::Write::write_fmt(
            &mut out,
            format_args!(
                "{:<16} {:<18} {:>3} {:>9} {:>8} {:>5} {:>16} {:>9} {:>10}\n",
                r.link,
                r.variant,
                r.rep,
                r.status,
                opt(r.completion_time_s, " s"),
                r.efficiency
                    .map_or("-".into(), |e| format!("{:.0}%", 100.0 * e)),
                match (&r.exit_reason, r.exit_at_s) {
                    (Some(why), Some(t)) => format!("{t:.2} s {why}"),
                    _ => "-".into(),
                },
                opt(r.capacity_at_s, " s"),
                r.exit_class.as_deref().unwrap_or("-")
            ),
        );
    }
    out
}
