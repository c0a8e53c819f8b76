//! `satquic presets`: the link presets as a table, one preset as TOML, a link's slot
//! schedule as CSV (`--slots`), or how a link looks to pings and a saturating sender as
//! JSON (`--probe`; logic in satquic-link's `probe`), or the physical limits of transfers
//! over a link as CSV (`--limits`; the model is satquic-lab's `limit`).

use std::time::Duration;

use satquic_link::probe::{ProbeConfig, probe};
use satquic_link::{LinkSpec, Path, SlotRecord};
use satquic_run::resolve_link;

use crate::Failure;

#[derive(clap::Args)]
pub struct Args {
    /// Print this preset as a TOML link file (a starting point for custom links).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["slots", "probe"])]
    toml: Option<String>,
    /// Print the slot schedule of a link (preset or TOML file) as CSV, one row per slot:
    /// its span, base RTT, slotted rates and what its boundary brings.
    #[arg(long, value_name = "PRESET|FILE", conflicts_with_all = ["probe", "limits"])]
    slots: Option<String>,
    /// Print the physical limits of transfers over a link (preset or TOML file) as CSV,
    /// one row per --bytes: the fastest an upload (over the link's mirror: the data in its
    /// down direction) and a download can complete, as satquic times them, in seconds.
    #[arg(long, value_name = "PRESET|FILE", conflicts_with_all = ["probe", "toml"], requires = "bytes")]
    limits: Option<String>,
    /// With --limits: the transfer sizes in bytes (comma-separated).
    #[arg(long, value_name = "N,...", value_delimiter = ',')]
    bytes: Vec<u64>,
    /// Probe a link (preset or TOML file) as a measurement would and print JSON: idle
    /// pings (send time, RTT or null if lost), the capacity each way per second, and its
    /// slots.
    #[arg(long, value_name = "PRESET|FILE")]
    probe: Option<String>,
    /// With --slots or --probe: how long (seconds, or `10min`, `1h`).
    #[arg(long = "for", value_name = "DURATION", default_value = "10min")]
    span: String,
    /// With --slots or --probe: the seed the link model is built with (a link whose
    /// `[slots]` has a `seed` draws the same slots whatever this is).
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// With --probe: time between pings (the Starlink-on-the-Autobahn traces': 14.5ms).
    #[arg(long, value_name = "DURATION", default_value = "14.5ms")]
    ping_interval: String,
}

/// Longest span of `--slots` and `--probe`: a day (a probe's pings take memory).
const LONGEST_SPAN: Duration = Duration::from_secs(24 * 3600);

pub fn run(args: Args) -> Result<(), Failure> {
    if let Some(link) = &args.slots {
        return print_slots(&resolve(link)?, &args);
    }
    if let Some(link) = &args.probe {
        return print_probe(&resolve(link)?, &args);
    }
    if let Some(link) = &args.limits {
        return print_limits(&resolve(link)?, &args);
    }
    match args.toml {
        None => out!("{}", satquic_link::presets::table())?,
        Some(name) => {
            let spec =
                satquic_link::presets::lookup(&name).map_err(|e| Failure::Usage(e.to_string()))?;
            let text = spec
                .to_toml_string()
                .map_err(|e| Failure::Other(e.to_string()))?;
            out!("{text}")?;
        }
    }
    Ok(())
}

fn resolve(link: &str) -> Result<LinkSpec, Failure> {
    resolve_link(link).map_err(Failure::Usage)
}

fn span(args: &Args) -> Result<Duration, Failure> {
    crate::seconds::duration("--for", &args.span, crate::seconds::SHORTEST..=LONGEST_SPAN)
}

/// The columns of a slot row ([`slot_row`]).
const SLOT_COLUMNS: &str =
    "slot,start_s,end_s,base_rtt_ms,down_rate_bps,up_rate_bps,spike_ms,outage_ms,loss_ms,loss_plr";

/// Milliseconds with microsecond precision, or empty.
fn ms(d: Option<Duration>) -> String {
    d.map_or(String::new(), |d| format!("{:.3}", d.as_secs_f64() * 1e3))
}

fn slot_row(s: &SlotRecord) -> String {
    let rate = |r: Option<u64>| r.map_or(String::new(), |r| r.to_string());
    format!(
        "{},{:.6},{:.6},{},{},{},{},{},{},{}",
        s.index,
        s.start.as_secs_f64(),
        s.end.as_secs_f64(),
        ms(Some(s.base_rtt)),
        rate(s.down_rate_bps),
        rate(s.up_rate_bps),
        ms(s.spike),
        ms(s.outage),
        ms(s.loss),
        s.loss_plr
    )
}

/// `--limits`: a row per size, `bytes,up_s,down_s,serialization_s` (the last empty on a
/// slotted link), each with every digit it has (a script rounds as it needs).
fn print_limits(spec: &LinkSpec, args: &Args) -> Result<(), Failure> {
    let mut rows = String::from("bytes,up_s,down_s,serialization_s\n");
    for &b in &args.bytes {
        if b == 0 {
            return Err(Failure::Usage(
                "--bytes: a transfer of 0 bytes has no limit".into(),
            ));
        }
        let l = satquic_lab::limit::link_limits(spec, args.seed, b)
            .map_err(|e| Failure::Usage(format!("--limits {e}")))?;
        let ser = l.serialization_s.map_or(String::new(), |s| s.to_string());
        rows += &format!("{b},{},{},{ser}\n", l.up_s, l.down_s);
    }
    out!("{rows}")?;
    Ok(())
}

fn print_slots(spec: &LinkSpec, args: &Args) -> Result<(), Failure> {
    if spec.slots.is_none() {
        return Err(Failure::Usage(format!(
            "--slots {}: the link has no slot schedule ([slots])",
            spec.name
        )));
    }
    let until = span(args)?;
    let path: Path<()> = Path::new(spec, args.seed).map_err(|e| Failure::Usage(e.to_string()))?;
    // Row by row as they are drawn: a day of 1 ms slots is 86.4 million rows.
    let mut out = crate::out::Buffered::new();
    out.write(format_args!("{SLOT_COLUMNS}\n"))?;
    for s in path.slots(until) {
        out.write(format_args!("{}\n", slot_row(&s)))?;
    }
    out.finish()
}

/// The probe's JSON object, written as it goes: the pings (at most
/// [`satquic_link::probe::MAX_PINGS`]) and the slots of a long probe are too many to hold
/// as JSON values.
fn print_probe(spec: &LinkSpec, args: &Args) -> Result<(), Failure> {
    let config = ProbeConfig {
        duration: span(args)?,
        ping_interval: crate::seconds::duration(
            "--ping-interval",
            &args.ping_interval,
            crate::seconds::SHORTEST..=crate::seconds::HOUR,
        )?,
        seed: args.seed,
        ..ProbeConfig::default()
    };
    let usage = |e: satquic_link::LinkError| Failure::Usage(e.to_string());
    let report = probe(spec, &config).map_err(|e| match e {
        satquic_link::LinkError::Invalid { field, reason } if field == "ping_interval" => {
            Failure::Usage(format!(
                "--for {} --ping-interval {}: {reason}",
                args.span, args.ping_interval
            ))
        }
        e => usage(e),
    })?;
    let path: Path<()> = Path::new(spec, args.seed).map_err(usage)?;
    let json = |v: serde_json::Value| v.to_string();
    let mut out = crate::out::Buffered::new();
    out.write(format_args!(
        "{{\"link\":{},\"seed\":{},\"ping_interval_s\":{},\"pings\":[",
        json(spec.name.clone().into()),
        args.seed,
        json(config.ping_interval.as_secs_f64().into()),
    ))?;
    for (i, p) in report.pings.iter().enumerate() {
        let ping = serde_json::json!([
            p.sent.as_secs_f64(),
            p.rtt.map(|r| (r.as_secs_f64() * 1e6).round() / 1e3)
        ]);
        let comma = if i == 0 { "" } else { "," };
        out.write(format_args!("{comma}{ping}"))?;
    }
    out.write(format_args!(
        "],\"down_bps\":{},\"up_bps\":{},\"slot_columns\":{},\"slots\":[",
        json(report.down_bps.clone().into()),
        json(report.up_bps.clone().into()),
        json(SLOT_COLUMNS.into()),
    ))?;
    for (i, s) in path.slots(config.duration).enumerate() {
        let comma = if i == 0 { "" } else { "," };
        out.write(format_args!("{comma}{}", json(slot_row(&s).into())))?;
    }
    out.write(format_args!("]}}\n"))?;
    out.finish()
}
