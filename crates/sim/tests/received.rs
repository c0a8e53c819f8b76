//! `received_chunks.csv`: the bytes a client received in any order (qperf's count, the
//! seeds' measure) reach each megabyte no later than the in-order prefix (`chunks.csv`),
//! and earlier while a loss leaves a hole.

use satquic_run::{Scenario, TransportSpec};

#[test]
fn bytes_received_in_any_order_lead_the_in_order_prefix_after_losses() {
    // qir-sat's 1-BDP queue overflows in CUBIC's slow start.
    let link = satquic_link::presets::lookup("qir-sat").unwrap();
    let scenario = Scenario::download(link, TransportSpec::with_cc("cubic"), 10_000_000, 1);
    let r = satquic_sim::run(&scenario).unwrap();
    assert!(
        r.summary.flows[0].packets_lost > 0,
        "no loss: nothing to test"
    );
    let (in_order, received) = (&r.chunks, &r.received_chunks);
    assert_eq!((in_order.len(), received.len()), (10, 10));
    for (a, b) in in_order.iter().zip(received) {
        assert_eq!((a.flow, a.mb), (b.flow, b.mb));
        assert!(
            b.time_s <= a.time_s,
            "MB {}: {} > {}",
            a.mb,
            b.time_s,
            a.time_s
        );
    }
    assert!(
        in_order
            .iter()
            .zip(received)
            .any(|(a, b)| b.time_s < a.time_s - 0.1),
        "no megabyte arrived out of order 100 ms before the prefix reached it"
    );
}
