//! The null packet cipher (`PacketCipher::Null`) gives byte-identical records to the real
//! AES-128-GCM packet protection: the same record files and the same datagram trace (time,
//! direction, size, admitted) on random loss, AQM/buffer-overflow loss, an upload, a run
//! with ACK frequency and a resumed run with 0-RTT.

use std::time::Duration;

use satquic_run::record::RECORD_FILES;
use satquic_run::scenario::{AckFrequencySpec, DataDirection};
use satquic_run::{Scenario, TransportSpec};
use satquic_sim::{PacketCipher, RunOptions, RunOutput, run_with};

fn scenario(link: &str, cc: &str, bytes: u64) -> Scenario {
    let link = satquic_link::presets::lookup(link).unwrap();
    Scenario::download(link, TransportSpec::with_cc(cc), bytes, 1)
}

fn run(scenario: &Scenario, cipher: PacketCipher) -> RunOutput {
    let options = RunOptions {
        datagram_trace: true,
        packet_cipher: cipher,
        ..RunOptions::default()
    };
    run_with(scenario, &options).unwrap()
}

/// Runs `scenario` with both ciphers and asserts identical traces and record files.
/// Returns the record of the null-cipher run for further checks.
fn assert_identical(name: &str, scenario: &Scenario) -> RunOutput {
    let real = run(scenario, PacketCipher::Tls);
    let null = run(scenario, PacketCipher::Null);
    assert!(
        real.trace.len() > 1000,
        "{name}: {} datagrams",
        real.trace.len()
    );
    assert!(real.trace == null.trace, "{name}: datagram traces differ");
    let tmp =
        std::env::temp_dir().join(format!("satquic-null-cipher-{}-{name}", std::process::id()));
    real.record.write_to(&tmp.join("tls")).unwrap();
    null.record.write_to(&tmp.join("null")).unwrap();
    for file in RECORD_FILES {
        let a = std::fs::read(tmp.join("tls").join(file)).unwrap();
        let b = std::fs::read(tmp.join("null").join(file)).unwrap();
        assert!(!a.is_empty(), "{name}: {file} is empty");
        assert!(
            a == b,
            "{name}: {file} differs between the tls and null ciphers"
        );
    }
    std::fs::remove_dir_all(&tmp).ok();
    null
}

#[test]
fn random_loss_gives_the_same_record() {
    let out = assert_identical(
        "qir-satloss",
        &scenario("qir-satloss", "cubic+search", 2_000_000),
    );
    assert!(out.record.summary.flows[0].packets_lost > 0);
}

#[test]
fn buffer_overflow_loss_and_ack_frequency_give_the_same_record() {
    let mut s = scenario("qir-sat", "cubic+search", 10 << 20);
    s.flows[0].transport.ack_frequency = AckFrequencySpec::parse("16:25ms").unwrap();
    let out = assert_identical("qir-sat", &s);
    let flow = &out.record.summary.flows[0];
    assert!(flow.packets_lost > 0, "the 1-BDP buffer overflows");
    assert_eq!(flow.status, "completed");
}

#[test]
fn an_upload_gives_the_same_record() {
    let mut s = scenario("sat-50-10", "cubic+search", 5_000_000);
    s.flows[0].direction = DataDirection::Upload;
    assert_identical("upload", &s);
}

#[test]
fn a_resumed_run_with_0rtt_gives_the_same_record() {
    let s = scenario("qir-sat", "cubic+search", 4 << 20).resumed_after(Duration::from_secs(10));
    let out = assert_identical("resumed", &s);
    let resumption = out.record.summary.flows[0].resumption.as_ref().unwrap();
    assert!(resumption.zero_rtt, "0-RTT was accepted: {resumption:?}");
    assert!(resumption.jump_cwnd.is_some(), "{resumption:?}");
}

/// The ALPN protocol name, which the client's ClientHello carries in its first Initial.
const ALPN: &[u8] = b"satquic-sim";

/// Whether `needle` occurs in `haystack`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The option reaches the wire: under the null cipher the client's first Initial carries
/// its ClientHello (with the ALPN name) in plaintext; under AES-GCM it does not. TLS
/// still runs: each run derives fresh secrets (exporter values differ), yet both runs
/// agree on the record.
#[test]
fn the_null_cipher_sends_plaintext_and_the_tls_handshake_still_runs() {
    let s = scenario("qir-satloss", "cubic", 500_000);
    let options = |cipher| RunOptions {
        tls_exporter: true,
        datagram_bytes: 1,
        packet_cipher: cipher,
        ..RunOptions::default()
    };
    let real = run_with(&s, &options(PacketCipher::Tls)).unwrap();
    assert!(
        !contains(&real.datagrams[0], ALPN),
        "AES-GCM hides the ClientHello"
    );
    let a = run_with(&s, &options(PacketCipher::Null)).unwrap();
    let b = run_with(&s, &options(PacketCipher::Null)).unwrap();
    assert!(
        contains(&a.datagrams[0], ALPN),
        "the null cipher sends plaintext"
    );
    assert_eq!(a.datagrams[0].len(), real.datagrams[0].len());
    let (ka, kb) = (a.tls_exporter[0].unwrap(), b.tls_exporter[0].unwrap());
    assert_ne!(ka, kb, "each run derives fresh TLS secrets");
    assert_eq!(a.record.summary_json(), b.record.summary_json());
    assert_eq!(a.record.summary_json(), real.record.summary_json());
}
