//! picoquic's satellite scenarios in the simulator: uploads, the ACK load on a thin return
//! link with and without ACK frequency, and start-up growth.

use std::time::Duration;

use satquic_link::presets;
use satquic_run::scenario::AckFrequencySpec;
use satquic_run::{DataDirection, MB, RunRecord, Scenario, TransportSpec};
use satquic_sim::run;

fn upload(link: &str, transport: TransportSpec, bytes: u64) -> RunRecord {
    let mut scenario = Scenario::download(presets::lookup(link).unwrap(), transport, bytes, 1)
        .with_time_cap(Duration::from_secs(30));
    scenario.flows[0].direction = DataDirection::Upload;
    run(&scenario).unwrap()
}

/// The largest congestion window of the record's series up to `time_s`.
fn largest_window_until(record: &RunRecord, time_s: f64) -> u64 {
    record
        .series
        .iter()
        .filter(|row| row.time_s <= time_s)
        .map(|row| row.cwnd_bytes)
        .max()
        .expect("series rows before the time")
}

/// Share of the return link's capacity the run used, over the flow's lifetime.
fn return_link_share(record: &RunRecord, return_bps: u64) -> f64 {
    let f = &record.summary.flows[0];
    let t = f.completion_time_s.expect("completed");
    record.summary.link.up_delivered_bytes as f64 * 8.0 / t / return_bps as f64
}

#[test]
fn an_upload_is_sent_by_the_client_and_timed_to_the_servers_last_byte() {
    let record = upload("sat-250-3", TransportSpec::with_cc("cubic"), 5 * MB);
    let f = &record.summary.flows[0];
    assert_eq!(f.status, "completed", "{:?}", f.error);
    assert_eq!(f.delivered_bytes, 5 * MB);
    // The data went through the 250 Mbit/s direction (the record's `down` is the data
    // direction): 5 MB plus headers, and the 3 Mbit/s direction carried only ACKs.
    assert!(record.summary.link.delivered_bytes > 5 * MB);
    assert!(record.summary.link.up_delivered_bytes < MB / 2);
    // The client may send right after its handshake: one RTT, then at least 5 RTTs of
    // doubling from 10 packets, then one way.
    let t = f.completion_time_s.unwrap();
    let handshake = f.handshake_time_s.unwrap();
    assert!((0.6..0.7).contains(&handshake), "{handshake}");
    assert!(t > handshake + 0.3 && t < 8.0, "{t}");
    // A download of the same size on the same link takes about one RTT longer (the
    // request crosses first), and its data crosses the 3 Mbit/s direction.
    let down = run(&Scenario::download(
        presets::lookup("sat-250-3").unwrap(),
        TransportSpec::with_cc("cubic"),
        MB,
        1,
    )
    .with_time_cap(Duration::from_secs(30)))
    .unwrap();
    let slow = down.summary.flows[0].completion_time_s.unwrap();
    assert!(
        slow > 3.0,
        "1 MB over 3 Mbit/s takes more than 2.7 s, got {slow}"
    );
}

#[test]
fn ack_frequency_keeps_acks_under_a_quarter_of_a_3_mbit_return_link() {
    let bytes = 100 * MB;
    let plain = upload("sat-250-3", TransportSpec::with_cc("cubic"), bytes);
    let thinned = upload(
        "sat-250-3",
        TransportSpec {
            ack_frequency: AckFrequencySpec::parse("16:25ms").unwrap(),
            ..TransportSpec::with_cc("cubic")
        },
        bytes,
    );
    let (p, t) = (&plain.summary.flows[0], &thinned.summary.flows[0]);
    assert_eq!(t.status, "completed");
    let share_plain = return_link_share(&plain, 3_000_000);
    let share_thinned = return_link_share(&thinned, 3_000_000);
    assert!(share_plain > 0.4, "every-2nd-packet ACKs: {share_plain}");
    assert!(share_thinned <= 0.25, "ACK frequency 16: {share_thinned}");
    assert!(t.ack_frames_received * 4 < p.ack_frames_received);
    // Loss detection still behaves: no loss on a lossless link, so none declared.
    assert_eq!(t.packets_lost, 0);
}

/// `N:DELAY:cwnd/D` (our quinn-proto patch): the receiver is asked for an ACK at least
/// every cwnd / D bytes, re-asked as the window grows, up to N packets per ACK. Over the
/// initial window (10 packets, D = 4) that is every 2nd packet, as without ACK
/// frequency, where the fixed request leaves one ACK; in bulk transfer it thins out as
/// the fixed request does.
#[test]
fn an_ack_frequency_that_follows_the_window_is_dense_at_first_and_thin_in_bulk() {
    let with = |ack: &str| TransportSpec {
        ack_frequency: AckFrequencySpec::parse(ack).unwrap(),
        ..TransportSpec::with_cc("cubic")
    };
    // 100 kB: the window never passes 4 x 16 packets.
    let small = upload("sat-250-3", with("16:25ms:cwnd/4"), 100_000);
    let plain = upload("sat-250-3", TransportSpec::with_cc("cubic"), 100_000);
    let fixed = upload("sat-250-3", with("16:25ms"), 100_000);
    let acks = |r: &RunRecord| r.summary.flows[0].ack_frames_received;
    assert!(
        acks(&small) <= acks(&plain) && acks(&small) >= 2 * acks(&fixed),
        "window-following {}, every 2nd packet {}, fixed 16 {}",
        acks(&small),
        acks(&plain),
        acks(&fixed)
    );
    // 100 MB: the request reaches 16 packets per ACK and the return link stays light.
    let bulk = upload("sat-250-3", with("16:25ms:cwnd/4"), 100 * MB);
    let f = &bulk.summary.flows[0];
    assert_eq!(f.status, "completed");
    assert_eq!(f.packets_lost, 0);
    let share = return_link_share(&bulk, 3_000_000);
    assert!(share <= 0.25, "ACK frequency 16:25ms:cwnd/4: {share}");
}

#[test]
fn the_periodic_loss_pattern_is_recovered_with_ack_frequency() {
    let record = upload(
        "sat-20-2:loss=64",
        TransportSpec {
            ack_frequency: AckFrequencySpec::parse("16:25ms").unwrap(),
            ..TransportSpec::with_cc("bbr")
        },
        2 * MB,
    );
    let f = &record.summary.flows[0];
    assert_eq!(f.status, "completed", "{:?}", f.error);
    assert_eq!(f.delivered_bytes, 2 * MB);
    // 1 in 64 of the data packets is lost on the way and retransmitted.
    let drops = record.summary.link.drops["random_loss"];
    let sent = f.packets_sent;
    assert!(
        drops >= sent / 64 - 1 && drops <= sent / 64 + 1,
        "{drops} of {sent}"
    );
    assert!(f.packets_lost >= drops);
}

#[test]
fn faster_start_up_growth_fills_the_pipe_sooner_and_search_still_exits() {
    let time_to = |cc: &str| {
        let r = upload("sat-50-10", TransportSpec::with_cc(cc), 60 * MB);
        let f = r.summary.flows[0].clone();
        (r.time_to_mb(0, 20).unwrap(), f)
    };
    let (doubling, _) = time_to("cubic+search");
    let (triple, f) = time_to("cubic+search+growth:x=3");
    assert!(
        triple < doubling - 0.5,
        "20 MB: x3 {triple} s, doubling {doubling} s"
    );
    let exit = f.slow_start_exit.expect("SEARCH exits");
    assert_eq!(format!("{:?}", exit.reason), "Search");
    assert_eq!(f.exit_class, "chokepoint");
    assert_eq!(f.packets_lost, 0);
}

/// Path MTU discovery (RFC 8899, quinn's PLPMTUD) runs in the simulator when the
/// transport asks for it: the datagrams grow from 1,200 bytes towards quinn's 1,452.
#[test]
fn path_mtu_discovery_grows_the_datagrams_in_the_simulator() {
    let datagram = |mtu_discovery: bool| {
        let r = upload(
            "sat-50-10",
            TransportSpec {
                mtu_discovery,
                ..TransportSpec::with_cc("cubic")
            },
            5 * MB,
        );
        let f = &r.summary.flows[0];
        assert_eq!(f.status, "completed", "{:?}", f.error);
        f.udp_bytes_sent as f64 / f.udp_datagrams_sent as f64
    };
    let fixed = datagram(false);
    let discovered = datagram(true);
    assert!(fixed <= 1200.0, "{fixed}");
    assert!(discovered > 1350.0, "{discovered}");
}

/// `+burst` (crates/cc/src/burst.rs, through quinn-proto patch 4): quinn-proto's own
/// bursts (10 datagrams at a 600 ms RTT) spread the window over the round trip, so the
/// jump's rate samples measure the sender; bursts of a quarter window cross the
/// 250 Mbit/s bottleneck back to back and the jump sees more of it: two round trips
/// after the handshake the window is more than twice as large (10 MB against 4 MB).
#[test]
fn slow_start_bursts_let_the_jump_see_the_bottleneck() {
    let window_at_2s = |cc: &str| {
        let r = upload(
            "sat-250-3",
            TransportSpec {
                ack_frequency: AckFrequencySpec::parse("16:25ms:cwnd/8").unwrap(),
                ..TransportSpec::with_cc(cc)
            },
            30 * MB,
        );
        let f = &r.summary.flows[0];
        assert_eq!(f.status, "completed", "{:?}", f.error);
        assert_eq!(f.packets_lost, 0);
        let window = largest_window_until(&r, 2.0);
        (window, r.time_to_mb(0, 20).unwrap())
    };
    let (paced, paced_20mb) = window_at_2s("cubic+search+growth:x=3+jump");
    let (bursts, bursts_20mb) = window_at_2s("cubic+search+growth:x=3+jump+burst");
    assert!(
        bursts > 2 * paced && bursts > 5 * MB && bursts_20mb < paced_20mb,
        "window at 2 s: paced {paced}, bursts {bursts}; 20 MB at {paced_20mb} and {bursts_20mb} s"
    );
}

/// The long-RTT floor is set on the first acknowledgement, with the RTT that
/// acknowledgement measured (quinn-proto patch 6): on a 600 ms path the first flight after
/// the handshake is six initial windows, not the 3.33 of quinn's 333 ms initial guess.
#[test]
fn the_first_flight_after_the_handshake_is_scaled_by_the_measured_rtt() {
    let r = upload("sat-250-3", TransportSpec::with_cc("cubic+floor"), MB);
    let f = &r.summary.flows[0];
    assert_eq!(f.status, "completed", "{:?}", f.error);
    let handshake = f.handshake_time_s.unwrap();
    let row = r
        .series
        .iter()
        .find(|row| row.time_s > handshake)
        .expect("a series row after the handshake");
    // 10 initial windows of 1,200 bytes, times 603-605 ms over 100 ms.
    let floor = 12_000.0 * 6.04;
    assert!(
        (row.cwnd_bytes as f64 - floor).abs() < 0.01 * floor,
        "at {} s: window {}",
        row.time_s,
        row.cwnd_bytes
    );
}

#[test]
fn mixing_uploads_and_downloads_in_one_run_is_refused() {
    let mut scenario = Scenario::download(
        presets::lookup("sat-10-2").unwrap(),
        TransportSpec::default(),
        MB,
        1,
    );
    let mut second = scenario.flows[0].clone();
    second.direction = DataDirection::Upload;
    scenario.flows.push(second);
    let e = run(&scenario).unwrap_err().to_string();
    assert!(e.contains("mix uploads and downloads"), "{e}");
}

/// The profile's start-up parts with `+jump` as given, PLPMTUD and the profile's ACK
/// frequency.
fn profile_parts(jump: &str) -> TransportSpec {
    TransportSpec {
        ack_frequency: AckFrequencySpec::parse("16:25ms:cwnd/8").unwrap(),
        mtu_discovery: true,
        ..TransportSpec::with_cc(format!(
            "cubic+search+growth:x=3+floor+{jump}+burst:min=65536"
        ))
    }
}

/// qir-sat's bottleneck queue is one BDP (20 Mbit/s, 600 ms): growing 3x per round trip,
/// slow start overfills it before SEARCH has the round trips of history it needs to
/// exit. Held at twice the BDP the queueing-delay bound measured (`+jump:bound,cap`), the
/// window fills the link and at most the queue, and far fewer packets are lost.
#[test]
fn a_slow_start_held_at_twice_the_bdp_spares_a_one_bdp_queue() {
    let lost = |jump: &str| {
        let scenario = Scenario::download(
            presets::lookup("qir-sat").unwrap(),
            profile_parts(jump),
            10 * MB,
            1,
        )
        .with_time_cap(Duration::from_secs(30));
        let r = run(&scenario).unwrap();
        let f = &r.summary.flows[0];
        assert_eq!(f.status, "completed", "{:?}", f.error);
        (f.packets_lost, f.completion_time_s.unwrap())
    };
    let (free, free_done) = lost("jump:bound");
    let (held, held_done) = lost("jump:bound,cap");
    assert!(
        held * 4 < free && held_done < free_done,
        "lost {free} -> {held}; 10 MB at {free_done} -> {held_done} s"
    );
}

/// A GEO path with a 50 Mbit/s forward link, a 1 Mbit/s return link and 2-BDP queues.
fn thin_return_geo() -> satquic_link::LinkSpec {
    satquic_link::LinkSpec::from_toml_str(
        r#"
name = "geo-50-1"
[down]
rate = { kind = "constant", rate_bps = 50000000 }
delay = { base = "300ms" }
queue = { limit = { bdp = 2.0 } }
[up]
rate = { kind = "constant", rate_bps = 1000000 }
delay = { base = "300ms" }
queue = { limit = { bdp = 2.0 } }
"#,
    )
    .unwrap()
}

/// The same bytes over the same 50 Mbit/s direction of `link`, once sent by the server (a
/// download) and once by the client (an upload over the mirrored link): completion times,
/// the download's less the one-way delay its request takes, and packets lost.
fn both_directions(link: &satquic_link::LinkSpec, cc: &str, bytes: u64) -> [(f64, u64); 2] {
    let transport = TransportSpec {
        ack_frequency: AckFrequencySpec::parse("16:25ms:cwnd/8").unwrap(),
        mtu_discovery: true,
        ..TransportSpec::with_cc(cc)
    };
    let time_cap = Duration::from_secs(60);
    let down =
        Scenario::download(link.clone(), transport.clone(), bytes, 1).with_time_cap(time_cap);
    let mut up = Scenario::download(link.mirrored(), transport, bytes, 1).with_time_cap(time_cap);
    up.flows[0].direction = DataDirection::Upload;
    let one_way = 0.3;
    [(down, one_way), (up, 0.0)].map(|(scenario, request)| {
        let r = run(&scenario).unwrap();
        let f = &r.summary.flows[0];
        assert_eq!(f.status, "completed", "{:?}", f.error);
        (f.completion_time_s.unwrap() - request, f.packets_lost)
    })
}

/// On a thin return link the receiver's ACKs queue behind its other packets and arrive
/// bunched, so ACK-spacing rate samples (picoquic's peak rate) read several times the
/// bottleneck from one end and not from the other: the same path ends one direction's
/// slow start by loss far above the other's. The queueing-delay bound (`+jump:bound`) is
/// not raised by late or bunched ACKs, so the profile moves the same bytes in the same
/// time both ways, without loss.
#[test]
fn the_profile_sends_alike_from_either_end_of_a_thin_return_link() {
    let link = thin_return_geo();
    let [(down, down_lost), (up, up_lost)] =
        both_directions(&link, satquic_cc::profile::SATELLITE_CC, 20 * MB);
    assert!(
        (down - up).abs() < 0.02 * up && down_lost + up_lost < 50,
        "20 MB: download {down:.2} s ({down_lost} lost), upload {up:.2} s ({up_lost} lost)"
    );
    let peaks =
        satquic_cc::profile::SATELLITE_CC.replace("jump:cap=1.5,bound,validate", "jump:cap");
    let [(_, peak_down_lost), (_, peak_up_lost)] = both_directions(&link, &peaks, 20 * MB);
    assert!(
        peak_down_lost.abs_diff(peak_up_lost) > 1000,
        "peak rates: download lost {peak_down_lost}, upload {peak_up_lost}"
    );
}
