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
    let packets = bytes.div_ceil(STREAM_BYTES);
    let serialize = (packets * (MTU + IP_UDP) * 8) as f64 / rate_bps;
    let upload = 3.0 * owd_s + serialize;
    match direction {
        Direction::Up => upload,
        Direction::Down => upload + owd_s,
    }
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

    #[test]
    fn leo_points_parse() {
        let points = leo_points();
        assert_eq!(points.len(), 51);
        assert!(points.iter().all(|p| p.link.starts_with(&p.case)));
    }
}
