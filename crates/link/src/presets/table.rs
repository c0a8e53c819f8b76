//! The presets as a table, the text `satquic presets` prints: rates, one-way delays,
//! queues, discipline and loss per preset, then each preset's extras (delay variation,
//! schedules, cross traffic) and source. Apart from the catalogue ([`super`]): it only
//! reads the links the catalogue builds.

use std::time::Duration;

use super::all;
use crate::spec::{
    DelaySpec, DirectionSpec, Discipline, HandoverEvent, LinkSpec, LossSpec, QueueLimit,
    RateQuantile, RateSpec, SlotPhase, SlotSpec,
};
use crate::units::{format_bytes, format_rate_bps, trim_float};

fn rate_text(spec: &RateSpec) -> String {
    match spec {
        RateSpec::Constant { rate_bps } => format_rate_bps(*rate_bps),
        RateSpec::Schedule { steps, .. } => {
            let lo = steps.iter().map(|s| s.rate_bps).min().unwrap_or(0);
            let hi = steps.iter().map(|s| s.rate_bps).max().unwrap_or(0);
            format!("{}-{}", trim_mbps(lo), format_rate_bps(hi))
        }
        RateSpec::MahimahiTrace { .. } => {
            format!("trace ~{}", format_rate_bps(spec.nominal_rate_bps()))
        }
        RateSpec::Slotted { quantiles } => format!("~{}", format_rate_bps(median_rate(quantiles))),
    }
}

/// The median of a slotted rate, to the Mbit/s above 10 Mbit/s (a column, not a value).
fn median_rate(quantiles: &[RateQuantile]) -> u64 {
    let bps = crate::slot::Quantiles::of_rates(quantiles).at(0.5);
    if bps >= 1e7 {
        (bps / 1e6).round() as u64 * 1_000_000
    } else {
        bps.round() as u64
    }
}

/// A handover event for people: `60% 100-500 ms` (no percentage when it is always).
fn event_text(e: &HandoverEvent) -> String {
    let chance = if e.probability >= 1.0 {
        String::new()
    } else {
        format!("{}% ", trim_float(e.probability * 100.0))
    };
    format!(
        "{chance}{}-{}",
        trim_float(e.min.as_secs_f64() * 1e3),
        ms_text(e.max)
    )
}

/// A slot schedule for people: its interval and phase, the slot RTT, the slotted rates'
/// medians and what a boundary brings.
fn slots_text(spec: &LinkSpec, slots: &SlotSpec) -> Vec<String> {
    let phase = match slots.phase {
        SlotPhase::Random => "random phase".to_string(),
        SlotPhase::At(d) => format!("first at {}", ms_text(d)),
    };
    let mut parts = vec![format!("slots {} ({phase})", ms_text(slots.interval))];
    if let (Some(lo), Some(hi)) = (slots.rtt.first(), slots.rtt.last()) {
        let median = crate::slot::Quantiles::of_rtts(&slots.rtt).at(0.5) / 1e6;
        parts.push(format!(
            "slot RTT {}-{} (median {} ms)",
            trim_float(lo.rtt.as_secs_f64() * 1e3),
            ms_text(hi.rtt),
            trim_float((median * 10.0).round() / 10.0)
        ));
    }
    for (name, d) in [("down", &spec.down), ("up", &spec.up)] {
        if let RateSpec::Slotted { quantiles } = &d.rate {
            let lo = quantiles.first().map_or(0, |q| q.rate_bps);
            parts.push(format!(
                "{name} {}-{} per slot",
                trim_mbps(lo),
                format_rate_bps(d.rate.nominal_rate_bps())
            ));
        }
    }
    let h = &slots.handover;
    if let Some(e) = &h.spike {
        parts.push(format!("spike {}", event_text(e)));
    }
    if let Some(e) = &h.outage {
        parts.push(format!("outage {}", event_text(e)));
    }
    if let Some(l) = &h.loss {
        let plr = if l.plr >= 1.0 {
            String::new()
        } else {
            format!(" at {}%", trim_float(l.plr * 100.0))
        };
        parts.push(format!("loss burst {}{plr}", event_text(&l.event())));
    }
    if let Some(seed) = slots.seed {
        parts.push(format!("slot seed {seed}"));
    }
    parts
}

fn trim_mbps(bps: u64) -> String {
    trim_float(bps as f64 / 1e6)
}

/// Milliseconds for people: `300 ms`, `166.667 ms`.
fn ms_text(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        format!("{} s", trim_float(d.as_secs_f64()))
    } else {
        format!("{} ms", trim_float(d.as_nanos() as f64 / 1e6))
    }
}

fn variation_text(d: &DelaySpec) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(o) = &d.oscillation {
        v.push(format!(
            "osc {} p-p/{}",
            ms_text(o.peak_to_peak),
            ms_text(o.period)
        ));
    }
    if let Some(j) = &d.jitter {
        v.push(format!("jitter <={}", ms_text(j.max)));
    }
    if let Some(p) = &d.path_changes {
        v.push(format!(
            "step <={}/{}",
            ms_text(p.max_extra),
            ms_text(p.interval)
        ));
    }
    v
}

pub(super) fn extra_text(spec: &LinkSpec) -> String {
    let mut parts = Vec::new();
    if let Some(slots) = &spec.slots {
        parts.extend(slots_text(spec, slots));
    }
    if spec.down.bod.is_some() {
        parts.push("BoD down".to_string());
    }
    if spec.up.bod.is_some() {
        parts.push("BoD up".to_string());
    }
    for (name, d) in [("down", &spec.down), ("up", &spec.up)] {
        if let RateSpec::Schedule {
            repeat_every: Some(p),
            ..
        } = &d.rate
        {
            parts.push(format!("rate cycle {} {name}", ms_text(*p)));
        }
    }
    let (down, up) = (
        variation_text(&spec.down.delay),
        variation_text(&spec.up.delay),
    );
    for item in &down {
        let tag = if up.contains(item) { "" } else { " down" };
        parts.push(format!("{item}{tag}"));
    }
    for item in up.iter().filter(|i| !down.contains(i)) {
        parts.push(format!("{item} up"));
    }
    for (name, d) in [("down", &spec.down), ("up", &spec.up)] {
        if let Some(c) = &d.cross_traffic {
            let users = match c.users {
                1 => String::new(),
                n => format!("{n} x "),
            };
            parts.push(format!(
                "other traffic {users}{} {name}",
                format_rate_bps(c.rate_bps)
            ));
        }
    }
    parts.join(", ")
}

fn queue_text(spec: &LinkSpec, d: &DirectionSpec) -> String {
    match d.queue.limit {
        QueueLimit::Bytes(b) => format_bytes(b),
        QueueLimit::Packets(p) => format!("{p} pkt"),
        QueueLimit::Bdp(m) => match spec.resolved_limit(d) {
            QueueLimit::Bytes(b) => format!("{} BDP={}", trim_float(m), format_bytes(b)),
            _ => format!("{} BDP", trim_float(m)),
        },
    }
}

fn aqm_text(d: &DirectionSpec) -> String {
    match d.queue.discipline {
        Discipline::DropTail => "drop-tail".into(),
        Discipline::ViasatAqm {
            threshold_fraction,
            drop_probability,
        } => format!(
            "viasat {}%>{}%",
            trim_float(drop_probability * 100.0),
            trim_float(threshold_fraction * 100.0)
        ),
    }
}

/// The AQM column: drop-tail is the default, so where one direction has an AQM and the
/// other drop-tail, only the AQM shows, with its direction.
fn aqm_pair(down: &DirectionSpec, up: &DirectionSpec) -> String {
    let (d, u) = (aqm_text(down), aqm_text(up));
    let tail = |x: &DirectionSpec| x.queue.discipline == Discipline::DropTail;
    match (tail(down), tail(up)) {
        (false, true) => format!("{d} down"),
        (true, false) => format!("{u} up"),
        _ => pair(d, u),
    }
}

fn loss_text(l: &LossSpec) -> String {
    match l {
        LossSpec::None => "0".into(),
        LossSpec::Bernoulli { plr } => format!("{}%", trim_float(plr * 100.0)),
        LossSpec::GilbertElliott { .. } => {
            format!("GE {}%", trim_float(l.mean_loss_rate() * 100.0))
        }
        LossSpec::Periodic { every, .. } => format!("1/{every}"),
    }
}

fn pair(a: String, b: String) -> String {
    if a == b { a } else { format!("{a} / {b}") }
}

/// Widest line of [`table`], characters.
pub const TABLE_WIDTH: usize = 100;

/// The presets as the text `satquic presets` prints: a table of rates, one-way delays,
/// queues, discipline and loss ("a / b" is down / up; a single value applies to both
/// directions), then each preset's extras and source, at most [`TABLE_WIDTH`] wide.
pub fn table() -> String {
    let header = ["NAME", "DOWN", "UP", "DELAY", "QUEUE", "AQM", "LOSS"];
    let mut rows: Vec<([String; 7], String)> = Vec::new();
    for spec in all() {
        let extra = extra_text(&spec);
        let note = if extra.is_empty() {
            spec.source.clone()
        } else {
            format!("{extra}; {}", spec.source)
        };
        rows.push((
            [
                spec.name.clone(),
                rate_text(&spec.down.rate),
                rate_text(&spec.up.rate),
                pair(ms_text(spec.down.delay.base), ms_text(spec.up.delay.base)),
                pair(queue_text(&spec, &spec.down), queue_text(&spec, &spec.up)),
                aqm_pair(&spec.down, &spec.up),
                pair(loss_text(&spec.down.loss), loss_text(&spec.up.loss)),
            ],
            note,
        ));
    }
    let mut widths = header.map(|h| h.chars().count());
    for (row, _) in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let text: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(text.join(" ").trim_end());
        out.push('\n');
    };
    line(header.to_vec());
    for (row, _) in &rows {
        line(row.iter().map(String::as_str).collect());
    }
    // Extras (delay variation, schedules) and sources, one paragraph a preset, wrapped.
    out.push('\n');
    for (row, note) in &rows {
        let mut current = format!("{}:", row[0]);
        for word in note.split_whitespace() {
            if current.chars().count() + 1 + word.chars().count() > TABLE_WIDTH {
                out.push_str(&current);
                out.push('\n');
                current = "   ".to_string();
            }
            current.push(' ');
            current.push_str(word);
        }
        out.push_str(&current);
        out.push('\n');
    }
    out.push_str(
        "\nParameters (thesis-sat, thesis-terr, thesis-asym-<pct>): buffer=<x BDP>\n   \
         (default 1), plr=<fraction> (default 0), e.g. thesis-sat:buffer=0.5,plr=0.001\n\
         Parameters (sat-*): loss=<N> (1 packet in N, picoquic's pattern),\n   \
         jitter=<duration>, e.g. sat-250-3:loss=64; the client sends on these links\n   \
         (satquic sim -R)\n\
         Parameters (starlink-*): phase=<duration|random> (first slot boundary; random by\n   \
         default), slot-seed=<N> (the same slots in every run), queue=<size>,\n   \
         up-queue=<size>, handover=none, rate-scale=<factor>, rtt-add=<duration>,\n   \
         e.g. starlink-moving:phase=4s,slot-seed=7\n",
    );
    out
}
