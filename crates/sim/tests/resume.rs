//! Resumed runs (`Scenario::resume_after`): a first connection, then one that resumes with
//! the TLS session (0-RTT), the address-validation token and Careful Resume (RFC 9959).

use std::time::Duration;

use satquic_run::record::FlowSummary;
use satquic_run::scenario::AckFrequencySpec;
use satquic_run::{Scenario, TransportSpec};

const MIB_10: u64 = 10 << 20;

fn run(cc: &str, bytes: u64, gap: Option<Duration>) -> FlowSummary {
    let link = satquic_link::presets::lookup("qir-sat").unwrap();
    let mut s = Scenario::download(link, TransportSpec::with_cc(cc), bytes, 1);
    s.resume_after = gap;
    let record = satquic_sim::run(&s).unwrap();
    record.summary.flows[0].clone()
}

/// The second connection sends its request in 0-RTT, its sender jumps to half the saved
/// capacity (20 Mbit/s x 600 ms = 1.5 MB) about one RTT after the first flight, and the
/// download finishes well before the first connection's.
#[test]
fn resumed_connection_uses_0rtt_and_jumps_to_half_the_saved_capacity() {
    let f = run("cubic+search", MIB_10, Some(Duration::from_secs(10)));
    let r = f
        .resumption
        .as_ref()
        .expect("a resumed run says what it resumed from");
    let first = f.first_connection.as_ref().expect("and how the first went");
    assert!(r.zero_rtt, "{r:?}");
    assert_eq!(r.not_resumed, None);
    let saved = r.saved_cwnd.unwrap();
    assert!(
        (1_300_000..=1_600_000).contains(&saved),
        "saved_cwnd {saved}"
    );
    assert_eq!(r.jump_cwnd, Some(saved / 2));
    // 0-RTT request at 0, first flight acknowledged at ~0.9 s: the jump follows at once.
    let jump = r.jump_at_s.unwrap();
    assert!(jump < 1.3, "jump at {jump}");
    assert_eq!(
        r.ended_by.as_deref(),
        Some("last_unvalidated_packet_acknowledged")
    );
    assert!(!r.safe_retreat);
    let (resumed, first) = (
        f.completion_time_s.unwrap(),
        first.completion_time_s.unwrap(),
    );
    assert!(
        resumed < first - 2.0,
        "resumed {resumed} s, first {first} s"
    );
    // The first connection of a resumed run is a lone connection's, but for a few bytes
    // (its server offers 0-RTT in its tickets and sends a NEW_TOKEN).
    let lone = run("cubic+search", MIB_10, None);
    assert!((lone.completion_time_s.unwrap() - first).abs() < 0.05);
    assert!(lone.first_connection.is_none() && lone.resumption.is_none());
}

/// Our `ss-cap` option: after a validated jump slow start stops at the saved capacity
/// instead of doubling into the queue.
#[test]
fn slow_start_cap_after_the_jump_avoids_the_overshoot() {
    let gap = Some(Duration::from_secs(10));
    let plain = run("cubic+search", MIB_10, gap);
    let capped = run("cubic+search+cr:ss-cap=1", MIB_10, gap);
    assert!(plain.packets_lost > 500, "{}", plain.packets_lost);
    assert_eq!(capped.packets_lost, 0);
    assert!(capped.completion_time_s.unwrap() <= plain.completion_time_s.unwrap() + 0.01);
}

/// RFC 9959 Sec. 3.2, 4.3.1: saved parameters older than their Lifetime are not used; the
/// TLS session still resumes.
#[test]
fn saved_parameters_past_their_lifetime_are_not_used() {
    let f = run(
        "cubic+search+cr:lifetime=5",
        2_000_000,
        Some(Duration::from_secs(10)),
    );
    let r = f.resumption.unwrap();
    assert!(r.zero_rtt);
    assert_eq!(r.saved_cwnd, None);
    assert!(r.not_resumed.unwrap().contains("lifetime"));
    assert_eq!(r.jump_at_s, None);
}

/// quinn's BBR keeps no Careful Resume state: the run says so instead of failing.
#[test]
fn bbr_resumes_its_tls_session_only() {
    let f = run("bbr", 2_000_000, Some(Duration::from_secs(1)));
    let r = f.resumption.clone().unwrap();
    assert!(r.zero_rtt);
    assert!(r.not_resumed.unwrap().contains("bbr"), "{f:?}");
}

#[test]
fn resumed_runs_are_deterministic() {
    let a = run("satellite", 2_000_000, Some(Duration::from_secs(10)));
    let b = run("satellite", 2_000_000, Some(Duration::from_secs(10)));
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
}

/// quinn-proto 0.11.19 stopped the Data space's delayed-ACK timer whenever a handshake
/// ACK was sent, so a 1-RTT packet received during the handshake lost its deadline; with an
/// ACK_FREQUENCY threshold above the first flight (10 packets) the receiver then waited
/// for the sender's PTO, 1.5 s on this path. The workspace carries the fix
/// (vendor/quinn-proto/SATQUIC-PATCH.md): thinning ACKs to one per 16 packets now costs a
/// 2 MB download almost nothing.
#[test]
fn ack_frequency_above_the_first_flight_does_not_stall_the_handshake() {
    let link = satquic_link::presets::lookup("qir-sat").unwrap();
    let time = |ack: Option<&str>| {
        let mut t = TransportSpec::with_cc("cubic");
        t.ack_frequency = ack.map(|a| AckFrequencySpec::parse(a).unwrap().unwrap());
        let s = Scenario::download(link.clone(), t, 2_000_000, 1);
        satquic_sim::run(&s).unwrap().summary.flows[0]
            .completion_time_s
            .unwrap()
    };
    let (every_2nd, every_16th) = (time(None), time(Some("16:25ms")));
    assert!(
        every_16th < every_2nd + 0.2,
        "every 16th packet {every_16th} s, every 2nd {every_2nd} s"
    );
}
