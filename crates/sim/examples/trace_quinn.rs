//! Debug aid: runs one download printing quinn-proto's trace events to stderr.
//!
//! `cargo run -p satquic-sim --example trace_quinn -- qir-sat cubic 2000000 1 2> trace.txt`

use std::sync::atomic::{AtomicU64, Ordering};

use satquic_run::{Scenario, TransportSpec};
use satquic_sim::run;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

struct Printer {
    next_id: AtomicU64,
}

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={:?}", field.name(), value));
    }
}

impl Subscriber for Printer {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut line = Line(format!("span {}", span.metadata().name()));
        span.record(&mut line);
        eprintln!("{}", line.0);
        Id::from_u64(self.next_id.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut line = Line(format!(
            "{} {}",
            event.metadata().level(),
            event.metadata().target()
        ));
        event.record(&mut line);
        eprintln!("{}", line.0);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn main() {
    tracing::subscriber::set_global_default(Printer {
        next_id: AtomicU64::new(0),
    })
    .expect("first subscriber");
    let args: Vec<String> = std::env::args().skip(1).collect();
    let link = args.first().map(String::as_str).unwrap_or("qir-sat");
    let cc = args.get(1).map(String::as_str).unwrap_or("cubic");
    let bytes: u64 = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000_000);
    let seed: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let spec = satquic_link::presets::lookup(link).expect("known preset");
    let record = run(&Scenario::download(
        spec,
        TransportSpec::with_cc(cc),
        bytes,
        seed,
    ))
    .unwrap();
    println!("{:?}", record.summary.flows[0].completion_time_s);
}
