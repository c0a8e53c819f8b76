//! Per-packet cost of the link model: pushes packets through a direction the way the
//! simulator does (enqueue, follow `poll_timeout`, `poll_deliver`) and prints a table.
//!
//! `cargo run --release -p satquic-link --example bench`

use satquic_link::{Direction, Path, presets};
use std::time::{Duration, Instant};

/// Offers `packets` of `size` bytes at `offered_bps` and drains everything.
fn run(preset: &str, packets: u64, size: u32, offered_bps: f64) -> (f64, u64, u64) {
    let spec = presets::lookup(preset).unwrap();
    let mut path: Path<u64> = Path::new(&spec, 1).unwrap();
    let d: &mut Direction<u64> = &mut path.down;
    let gap = Duration::from_secs_f64(size as f64 * 8.0 / offered_bps);
    let start = Instant::now();
    let mut next_send = Duration::ZERO;
    let mut sent = 0;
    let mut delivered = 0;
    let mut events = 0;
    loop {
        let timeout = d.poll_timeout();
        let now = match (timeout, sent < packets) {
            (Some(t), true) => t.min(next_send),
            (Some(t), false) => t,
            (None, true) => next_send,
            (None, false) => break,
        };
        events += 1;
        if sent < packets && next_send <= now {
            d.enqueue(now, size, sent);
            sent += 1;
            next_send += gap;
        }
        while d.poll_deliver(now).is_some() {
            delivered += 1;
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    (elapsed * 1e9 / packets as f64, delivered, events)
}

fn main() {
    println!("| preset | packets | offered | ns/packet | delivered | loop iterations |");
    println!("|---|---|---|---|---|---|");
    for (preset, offered) in [
        ("geo-viasat", 120e6),
        ("geo-viasat", 300e6),
        ("geo-viasat-bod", 120e6),
        ("leo", 90e6),
        ("lte", 40e6),
    ] {
        let (ns, delivered, events) = run(preset, 150_000, 1350, offered);
        println!(
            "| {preset} | 150000 | {} Mbit/s | {ns:.0} | {delivered} | {events} |",
            offered / 1e6
        );
    }
}
