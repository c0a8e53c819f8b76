//! The physical limit of a transfer and the satellite grid's points (crates/lab/campaigns/grid/
//! README.md, "The physical limit"): one implementation, used by the scorecard and checked
//! against the limits `points.csv` carries.
//!
//! satquic times an upload from the client's start to the last byte at the server and a
//! download to the last byte at the client. With one-way delay d, the data direction's rate
//! R and S bytes in full-size packets (1452-byte datagrams carrying 1419 bytes of stream
//! data, 28 bytes of IP and UDP on top):
//!
//! ```text
//! upload:   2d (handshake) + d + ceil(S / 1419) x 1480 x 8 / R
//! download: the upload's + d (the request)
//! ```
//!
//! On a slotted (LEO) path the same terms read the schedule ([`slotted_limits`]): the
//! handshake's RTT is the first slot's, the data goes at each slot's rate and not at all in
//! its outage, and the last byte's one way is its slot's half RTT. `satquic presets
//! --limits LINK --bytes N` prints both limits of any link from here (the grids' scripts
//! ask it).

use std::fmt;

/// A full-size datagram's UDP payload, bytes (the path MTU every variant probes to).
pub const MTU: u64 = 1452;
/// Stream bytes a full-size packet carries.
pub const STREAM_BYTES: u64 = 1419;
/// IP and UDP headers the link counts on top of the datagram.
pub const IP_UDP: u64 = 28;

/// Who sends the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Direction {
    /// The client sends (`-R`, picoquic's satellite tests).
    Up,
    /// The server sends.
    Down,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Up => "up",
            Direction::Down => "down",
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The physical limit in seconds of `bytes` over a path of one-way delay `owd_s` whose data
/// direction carries `rate_bps` (the link's rate, IP and UDP headers included).
pub fn limit_s(owd_s: f64, rate_bps: f64, bytes: u64, direction: Direction) -> f64 {
    let upload = 3.0 * owd_s + serialization_s(bytes, rate_bps);
    match direction {
        Direction::Up => upload,
        Direction::Down => upload + owd_s,
    }
}

/// One slot of a schedule as the limit reads it (seconds, bit/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slot {
    pub start_s: f64,
    pub end_s: f64,
    pub base_rtt_s: f64,
    /// The data direction's rate in the slot.
    pub rate_bps: f64,
    /// The outage at its start (nothing is carried in it).
    pub outage_s: f64,
}

/// When the data direction has carried `wire_bytes` from `start_s`, at each slot's rate
/// and nothing in its outage; `None` if the slots end first.
pub fn serve_until(slots: &[Slot], start_s: f64, wire_bytes: u64) -> Option<f64> {
    let mut bits = (wire_bytes * 8) as f64;
    let mut t = start_s;
    for s in slots {
        if s.end_s <= t {
            continue;
        }
        let dark = s.start_s + s.outage_s;
        for (lo, hi, r) in [(s.start_s, dark, 0.0), (dark, s.end_s, s.rate_bps)] {
            let lo = lo.max(t);
            if hi <= lo || r == 0.0 {
                t = t.max(hi);
                continue;
            }
            if bits <= (hi - lo) * r {
                return Some(lo + bits / r);
            }
            bits -= (hi - lo) * r;
            t = hi;
        }
    }
    None
}

/// The one-way base delay at `t`: half its slot's base RTT (the last slot's past the end).
fn one_way_at(slots: &[Slot], t: f64) -> f64 {
    slots
        .iter()
        .find(|s| s.start_s <= t && t < s.end_s)
        .or(slots.last())
        .map_or(0.0, |s| s.base_rtt_s / 2.0)
}

/// The (upload, download) limits of `bytes` over a slot schedule, the data going in the
/// schedule's data direction (an upload's over the link's mirror): the handshake's RTT at
/// the start, a download's request one way, the data at line rate in full-size packets,
/// the last byte's one way. Handshake packets' serialization is left out (a lower bound).
/// `None` if the schedule ends before the transfer does. A constant path (one slot) gives
/// [`limit_s`].
pub fn slotted_limits(slots: &[Slot], bytes: u64) -> Option<(f64, f64)> {
    let wire = bytes.div_ceil(STREAM_BYTES) * (MTU + IP_UDP);
    let handshake = 2.0 * one_way_at(slots, 0.0);
    let up_end = serve_until(slots, handshake, wire)?;
    let request = handshake + one_way_at(slots, handshake);
    let down_end = serve_until(slots, request, wire)?;
    Some((
        up_end + one_way_at(slots, up_end),
        down_end + one_way_at(slots, down_end),
    ))
}

/// Seconds to the microsecond, as `satquic presets --slots` prints a slot (its times in
/// s with six decimals, its RTT and outage in ms with three), so that a limit is the same
/// from the schedule and from its CSV.
fn seconds(s: f64) -> f64 {
    format!("{s:.6}").parse().unwrap_or(s)
}

/// A slot's RTT or outage to the microsecond, as printed in ms ([`seconds`]).
fn micros(s: f64) -> f64 {
    let text = format!("{:.3}", s * 1e3);
    text.parse::<f64>().map_or(s, |ms| ms / 1e3)
}

/// How long a slotted link's schedule is read for a limit: an hour (the LEO grid's
/// longest limit is under 40 s).
pub const SCHEDULE_S: u64 = 3600;

/// The limits of a transfer over a link ([`link_limits`]), seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkLimits {
    pub up_s: f64,
    pub down_s: f64,
    /// The data at the down direction's constant rate (`None` on a slotted link): a limit
    /// less this is when the first byte can arrive.
    pub serialization_s: Option<f64>,
}

/// Seconds to put `bytes` of stream data on a link of `rate_bps` in full-size packets.
pub fn serialization_s(bytes: u64, rate_bps: f64) -> f64 {
    (bytes.div_ceil(STREAM_BYTES) * (MTU + IP_UDP) * 8) as f64 / rate_bps
}

/// The (upload, download) limits of `bytes` over a link, the data in its down direction
/// (an upload's over its mirror, as the grids' points define them): a slotted link by its
/// schedule (built with `seed`; a `[slots]` with its own seed ignores it), any other by
/// its down direction's constant rate and base delay, the same both ways.
pub fn link_limits(
    spec: &satquic_link::LinkSpec,
    seed: u64,
    bytes: u64,
) -> Result<LinkLimits, String> {
    use satquic_link::RateSpec;
    if spec.slots.is_some() {
        let path: satquic_link::Path<()> =
            satquic_link::Path::new(spec, seed).map_err(|e| e.to_string())?;
        let slots: Vec<Slot> = path
            .slots(std::time::Duration::from_secs(SCHEDULE_S))
            .map(|s| Slot {
                start_s: seconds(s.start.as_secs_f64()),
                end_s: seconds(s.end.as_secs_f64()),
                base_rtt_s: micros(s.base_rtt.as_secs_f64()),
                rate_bps: s.down_rate_bps.unwrap_or(0) as f64,
                outage_s: s.outage.map_or(0.0, |d| micros(d.as_secs_f64())),
            })
            .collect();
        if slots.iter().all(|s| s.rate_bps == 0.0) {
            return Err(format!(
                "{}: its down rate is not slotted: no limit from its schedule",
                spec.name
            ));
        }
        let (up_s, down_s) = slotted_limits(&slots, bytes).ok_or_else(|| {
            format!(
                "{}: {bytes} bytes do not fit in {SCHEDULE_S} s of its schedule",
                spec.name
            )
        })?;
        return Ok(LinkLimits {
            up_s,
            down_s,
            serialization_s: None,
        });
    }
    let RateSpec::Constant { rate_bps } = spec.down.rate else {
        return Err(format!(
            "{}: the limit needs a constant down rate or a slot schedule",
            spec.name
        ));
    };
    let owd = spec.down.delay.base.as_secs_f64();
    Ok(LinkLimits {
        up_s: limit_s(owd, rate_bps as f64, bytes, Direction::Up),
        down_s: limit_s(owd, rate_bps as f64, bytes, Direction::Down),
        serialization_s: Some(serialization_s(bytes, rate_bps as f64)),
    })
}

/// One row of the grid's `points.csv`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct GridPoint {
    pub point: String,
    pub cls: String,
    pub fwd_bps: u64,
    pub ret_bps: u64,
    pub pq_fwd_mbps: u32,
    pub pq_ret_mbps: u32,
    pub owd_ms: u32,
    pub queue_bdp: f64,
    pub fwd_queue_bytes: u64,
    pub ret_queue_bytes: u64,
    pub loss: f64,
    pub bytes: u64,
    pub bdp_bytes: u64,
    pub size_bdp: f64,
    pub phys_up_s: f64,
    pub phys_down_s: f64,
}

impl GridPoint {
    /// The physical limit of the point's transfer in a direction (the model, not the file).
    pub fn limit_s(&self, direction: Direction) -> f64 {
        limit_s(
            f64::from(self.owd_ms) / 1000.0,
            self.fwd_bps as f64,
            self.bytes,
            direction,
        )
    }

    /// The point's link file as `links/pNN.toml` (down) or `links/pNN-mirror.toml` (up)
    /// holds it: the forward direction is the data direction.
    pub fn link_toml(&self, direction: Direction) -> String {
        let mirror = direction == Direction::Up;
        let loss = if self.loss > 0.0 {
            format!("loss = {{ kind = \"bernoulli\", plr = {} }}\n", self.loss)
        } else {
            String::new()
        };
        let side = |rate: u64, queue: u64| {
            format!(
                "rate = {{ kind = \"constant\", rate_bps = {rate} }}\ndelay = {{ base = \"{}ms\" }}\nqueue = {{ limit = {{ bytes = {queue} }} }}\n{loss}",
                self.owd_ms
            )
        };
        let fwd = side(self.fwd_bps, self.fwd_queue_bytes);
        let ret = side(self.ret_bps, self.ret_queue_bytes);
        let (down, up) = if mirror { (ret, fwd) } else { (fwd, ret) };
        format!(
            "name = \"grid-{}{}\"\ndescription = \"satquic grid point {}: forward {:.2} Mbit/s, return {:.2} Mbit/s, {} ms each way, drop-tail {} BDP, loss {}; forward is {}\"\nsource = \"scripts/grid.py generate --seed 30\"\n\n[down]\n{down}\n[up]\n{up}",
            self.point,
            if mirror { "-mirror" } else { "" },
            self.point,
            self.fwd_bps as f64 / 1e6,
            self.ret_bps as f64 / 1e6,
            self.owd_ms,
            self.queue_bdp,
            self.loss,
            if mirror {
                "up (an upload's data direction)"
            } else {
                "down"
            },
        )
    }
}

/// The grid's points, from the committed `points.csv` (never drawn again: picoquic's
/// references are keyed by point).
pub fn grid_points() -> Vec<GridPoint> {
    let text = include_str!("../campaigns/grid/points.csv");
    csv::Reader::from_reader(text.as_bytes())
        .deserialize()
        .collect::<Result<Vec<GridPoint>, _>>()
        .expect("the committed points.csv parses")
}

/// One row of the LEO grid's `points.csv` (the columns the lab reads).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct LeoPoint {
    pub point: String,
    pub cls: String,
    pub case: String,
    /// The point as a preset string (`starlink-busy:phase=...`).
    pub link: String,
    pub bytes: u64,
    pub phys_up_s: f64,
    pub phys_down_s: f64,
}

/// The LEO grid's points, from the committed `points.csv`.
pub fn leo_points() -> Vec<LeoPoint> {
    let text = include_str!("../campaigns/leo-grid/points.csv");
    csv::Reader::from_reader(text.as_bytes())
        .deserialize()
        .collect::<Result<Vec<LeoPoint>, _>>()
        .expect("the committed LEO points.csv parses")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_cases() {
        // p00: 100 kB = 71 packets (70.47 rounded up), 71 x 1480 x 8 = 840,640 bits at
        // 10,684,453 bit/s = 0.078679 s; 3 x 0.273 s on top, a further 0.273 s down.
        let up = limit_s(0.273, 10_684_453.0, 100_000, Direction::Up);
        assert!((up - 0.897_679).abs() < 1e-6, "{up}");
        let down = limit_s(0.273, 10_684_453.0, 100_000, Direction::Down);
        assert!((down - 1.170_679).abs() < 1e-6, "{down}");
        // One packet's worth exactly: 1419 bytes is one packet, 1420 two.
        let one = limit_s(0.0, 1480.0 * 8.0, 1419, Direction::Up);
        assert!((one - 1.0).abs() < 1e-12);
        let two = limit_s(0.0, 1480.0 * 8.0, 1420, Direction::Up);
        assert!((two - 2.0).abs() < 1e-12);
        // 100 MB over 250 Mbit/s, 300 ms each way: 70,473 packets, 3.337 s + 0.9 s.
        let suite = limit_s(0.3, 250e6, 100_000_000, Direction::Up);
        assert!((suite - (0.9 + 70_473.0 * 1480.0 * 8.0 / 250e6)).abs() < 1e-9);
    }

    #[test]
    fn points_csv_limits_are_the_models() {
        let points = grid_points();
        assert_eq!(points.len(), 64);
        for p in &points {
            for (d, file) in [
                (Direction::Up, p.phys_up_s),
                (Direction::Down, p.phys_down_s),
            ] {
                let model = p.limit_s(d);
                assert!(
                    (model - file).abs() < 2e-6,
                    "{} {d}: {model} vs {file}",
                    p.point
                );
            }
        }
    }

    #[test]
    fn link_files_are_the_points() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("campaigns/grid/links");
        for p in grid_points() {
            for (d, name) in [
                (Direction::Down, format!("{}.toml", p.point)),
                (Direction::Up, format!("{}-mirror.toml", p.point)),
            ] {
                let file = std::fs::read_to_string(dir.join(&name)).unwrap();
                assert_eq!(p.link_toml(d), file, "{name}");
            }
        }
    }

    /// Hand-computed slotted cases: a constant schedule is the GEO formula; a slower slot
    /// after an outage takes the rest of the transfer; a schedule too short is no limit.
    #[test]
    fn slotted_hand_computed_cases() {
        let slot = |start_s, end_s, base_rtt_s, rate_bps, outage_s| Slot {
            start_s,
            end_s,
            base_rtt_s,
            rate_bps,
            outage_s,
        };
        let constant = [
            slot(0.0, 15.0, 0.04, 100e6, 0.0),
            slot(15.0, 3600.0, 0.04, 100e6, 0.0),
        ];
        let (up, down) = slotted_limits(&constant, 10_000_000).unwrap();
        assert!((up - limit_s(0.02, 100e6, 10_000_000, Direction::Up)).abs() < 1e-12);
        assert!((down - limit_s(0.02, 100e6, 10_000_000, Direction::Down)).abs() < 1e-12);
        // 10 MB = 7,048 packets = 10,431,040 bytes on the wire. From the handshake's end
        // (0.04 s) to 1 s at 80 Mbit/s: 9,600,000 bytes; the rest, 831,040 bytes, at
        // 40 Mbit/s after the 0.25 s outage: 1.25 + 0.166208 s; then 30 ms one way.
        let slots = [
            slot(0.0, 1.0, 0.04, 80e6, 0.0),
            slot(1.0, 16.0, 0.06, 40e6, 0.25),
            slot(16.0, 3600.0, 0.02, 10e6, 0.0),
        ];
        let end = serve_until(&slots, 0.04, 10_431_040).unwrap();
        assert!((end - 1.416_208).abs() < 1e-9, "{end}");
        let (up, _) = slotted_limits(&slots, 10_000_000).unwrap();
        assert!((up - (1.416_208 + 0.03)).abs() < 1e-9, "{up}");
        assert_eq!(serve_until(&slots[..1], 0.0, 1_000_000_000_000), None);
    }

    /// Every limit the LEO grid's points.csv carries is the model's over the point's link
    /// (to the file's six decimals).
    #[test]
    fn leo_points_csv_limits_are_the_models() {
        for p in leo_points() {
            let spec = satquic_run::resolve_link(&p.link).unwrap();
            let l = link_limits(&spec, 1, p.bytes).unwrap();
            let six = |x: f64| (x * 1e6).round() / 1e6;
            assert_eq!(
                (six(l.up_s), six(l.down_s)),
                (p.phys_up_s, p.phys_down_s),
                "{}",
                p.point
            );
            assert_eq!(l.serialization_s, None);
        }
    }

    #[test]
    fn leo_points_parse() {
        let points = leo_points();
        assert_eq!(points.len(), 51);
        assert!(points.iter().all(|p| p.link.starts_with(&p.case)));
    }
}
