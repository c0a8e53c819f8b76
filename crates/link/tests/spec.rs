//! Link specs: TOML round trips, validation errors, trace files, preset values.

use satquic_link::*;
use std::time::Duration;

const MS: fn(u64) -> Duration = Duration::from_millis;

const GEO_TOML: &str = r#"
name = "geo-viasat"
description = "Viasat-like GEO link"
source = "seed 000 Sec 4.2, 4.5"

[down]
rate = { kind = "constant", rate_bps = 150000000 }
delay = { base = "300ms" }
queue = { limit = { bytes = 36000000 }, discipline = { kind = "viasat_aqm" } }

[up]
rate = { kind = "constant", rate_bps = 150000000 }
delay = { base = "300ms" }
queue = { limit = { bytes = 36000000 }, discipline = { kind = "viasat_aqm" } }
"#;

#[test]
fn handwritten_toml_matches_the_preset() {
    let spec = LinkSpec::from_toml_str(GEO_TOML).unwrap();
    let preset = presets::lookup("geo-viasat").unwrap();
    assert_eq!(spec.down, preset.down);
    assert_eq!(spec.up, preset.up);
}

#[test]
fn every_preset_round_trips_through_toml() {
    for spec in presets::all() {
        let text = spec.to_toml_string().unwrap();
        let back =
            LinkSpec::from_toml_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", spec.name));
        assert_eq!(back, spec, "{}", spec.name);
    }
    let param = presets::lookup("thesis-asym-97.5:buffer=0.25,plr=0.001").unwrap();
    assert_eq!(
        LinkSpec::from_toml_str(&param.to_toml_string().unwrap()).unwrap(),
        param
    );
}

#[test]
fn full_featured_spec_round_trips() {
    let text = r#"
name = "everything"

[down]
rate = { kind = "schedule", steps = [{ from = "0s", rate_bps = 10000000 }, { from = "1.5s", rate_bps = 0 }, { from = "2s", rate_bps = 5000000 }], repeat_every = "10s" }
delay = { base = "20ms", jitter = { max = "2ms" }, oscillation = { peak_to_peak = "5ms", period = "100ms" }, path_changes = { interval = "15s", first_at = "12s", max_extra = "4ms" } }
queue = { limit = { bdp = 2.5 }, bdp_rate_of = "up", discipline = { kind = "viasat_aqm", threshold_fraction = 0.7, drop_probability = 0.1 } }
loss = { kind = "gilbert_elliott", p_good_to_bad = 0.001, p_bad_to_good = 0.3 }
bod = { period = "1s", headroom = 1.5 }

[up]
rate = { kind = "mahimahi_trace", timestamps_ms = [1, 1, 2, 5] }
delay = { base = "20ms" }
queue = { limit = { packets = 100 } }
loss = { kind = "bernoulli", plr = 0.02 }
"#;
    let spec = LinkSpec::from_toml_str(text).unwrap();
    assert_eq!(
        spec.down.loss,
        LossSpec::GilbertElliott {
            p_good_to_bad: 0.001,
            p_bad_to_good: 0.3,
            loss_in_good: 0.0,
            loss_in_bad: 1.0
        }
    );
    let bod = spec.down.bod.clone().unwrap();
    assert_eq!(bod.period, Duration::from_secs(1));
    assert_eq!(
        bod.lag,
        BodSpec::default().lag,
        "unset fields take the defaults"
    );
    assert_eq!(spec.up.rate.nominal_rate_bps(), 4 * 1500 * 8 * 1000 / 5);
    assert_eq!(
        LinkSpec::from_toml_str(&spec.to_toml_string().unwrap()).unwrap(),
        spec
    );
    // The BDP limit uses the up rate: 9.6 Mbit/s x 40 ms x 2.5 = 120 kB.
    assert_eq!(spec.resolved().down.queue.limit, QueueLimit::Bytes(120_000));
    Path::<()>::new(&spec, 1).unwrap();
}

/// Replaces `from` by `to` in the geo TOML and returns the one-line error.
fn error_of(from: &str, to: &str) -> String {
    let text = GEO_TOML.replacen(from, to, 1);
    assert_ne!(text, GEO_TOML, "pattern {from:?} not found");
    let err = LinkSpec::from_toml_str(&text).expect_err(to).to_string();
    assert!(!err.contains('\n'), "one line: {err}");
    err
}

#[test]
fn validation_errors_are_one_clear_line() {
    let rate = "rate = { kind = \"constant\", rate_bps = 150000000 }";
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "rate_bps = 150000000",
            "rate_bps = 0",
            &["down.rate.rate_bps", "above 0"],
        ),
        ("rate_bps = 150000000", "rate_bps = -5", &["line 7", "-5"]),
        (
            "rate_bps = 150000000",
            "rate_bps = 2000000000000",
            &["1 Tbit/s"],
        ),
        (
            "rate_bps = 150000000",
            "rate_bps = 1, speed = 3",
            &["speed"],
        ),
        ("base = \"300ms\"", "base = 300", &["no unit", "300ms"]),
        ("base = \"300ms\"", "base = -1", &["negative"]),
        ("base = \"300ms\"", "base = \"-1ms\"", &["negative"]),
        (
            "base = \"300ms\"",
            "base = \"300 parsecs\"",
            &["unknown unit"],
        ),
        (
            "base = \"300ms\"",
            "base = \"61s\"",
            &["down.delay.base", "60s"],
        ),
        (
            "base = \"300ms\"",
            "base = \"1ms\", oscillation = { peak_to_peak = \"1ms\", period = \"0s\" }",
            &["down.delay.oscillation.period", "1ms"],
        ),
        ("bytes = 36000000", "bytes = 0", &["down.queue.limit.bytes"]),
        (
            "bytes = 36000000",
            "bytes = 1000",
            &["down.queue.limit", "1228 bytes"],
        ),
        (
            "{ bytes = 36000000 }",
            "{ bdp = 1e-12 }",
            &["down.queue.limit", "holds no packet"],
        ),
        (
            "{ bytes = 36000000 }",
            "{ packets = 0 }",
            &["down.queue.limit.packets"],
        ),
        (
            "{ bytes = 36000000 }",
            "{ bdp = 0.0 }",
            &["down.queue.limit.bdp", "(0, 1000]"],
        ),
        (
            "{ bytes = 36000000 }",
            "{ bdp = nan }",
            &["down.queue.limit.bdp"],
        ),
        (
            "{ bytes = 36000000 }",
            "{ bdp = -1.0 }",
            &["down.queue.limit.bdp"],
        ),
        ("{ bytes = 36000000 }", "{ liters = 3 }", &["liters"]),
        (
            "{ kind = \"viasat_aqm\" }",
            "{ kind = \"viasat_aqm\", threshold_fraction = 0.0 }",
            &["threshold_fraction"],
        ),
        (
            "{ kind = \"viasat_aqm\" }",
            "{ kind = \"viasat_aqm\", drop_probability = 1.5 }",
            &["drop_probability", "[0, 1]"],
        ),
        ("{ kind = \"viasat_aqm\" }", "{ kind = \"red\" }", &["red"]),
        (
            rate,
            "rate = { kind = \"constant\", rate_bps = 1 }\nloss = { kind = \"bernoulli\", plr = 1.5 }",
            &["down.loss.plr", "[0, 1]"],
        ),
        (
            rate,
            "rate = { kind = \"constant\", rate_bps = 1 }\nloss = { kind = \"gilbert_elliott\", p_good_to_bad = -0.1, p_bad_to_good = 0.5 }",
            &["down.loss.p_good_to_bad"],
        ),
        (
            rate,
            "rate = { kind = \"schedule\", steps = [] }",
            &["down.rate.steps", "at least one"],
        ),
        (
            rate,
            "rate = { kind = \"schedule\", steps = [{ from = \"1s\", rate_bps = 5 }] }",
            &["down.rate.steps[0].from", "\"0s\""],
        ),
        (
            rate,
            "rate = { kind = \"schedule\", steps = [{ from = \"0s\", rate_bps = 5 }, { from = \"0s\", rate_bps = 6 }] }",
            &["steps[1].from", "later"],
        ),
        (
            rate,
            "rate = { kind = \"schedule\", steps = [{ from = \"0s\", rate_bps = 0 }] , repeat_every = \"1s\" }",
            &["above 0"],
        ),
        (
            rate,
            "rate = { kind = \"schedule\", steps = [{ from = \"0s\", rate_bps = 5 }, { from = \"1s\", rate_bps = 0 }] }",
            &["steps[1].rate_bps", "stop forever"],
        ),
        (
            rate,
            "rate = { kind = \"schedule\", steps = [{ from = \"0s\", rate_bps = 5 }, { from = \"1s\", rate_bps = 0 }], repeat_every = \"1s\" }",
            &["repeat_every"],
        ),
        (
            rate,
            "rate = { kind = \"schedule\", steps = [{ from = \"0s\", rate_bps = 5 }], repeat_every = \"1ns\" }",
            &["repeat_every", "is 1ns", "at least 1ms"],
        ),
        (
            rate,
            "rate = { kind = \"schedule\", steps = [{ from = \"0s\", rate_bps = 5 }, { from = \"1s\", rate_bps = 6 }], repeat_every = \"1000000002ns\" }",
            &["repeat_every", "at least 1ms"],
        ),
        (
            rate,
            "rate = { kind = \"schedule\", steps = [{ from = \"0s\", rate_bps = 5 }, { from = \"10ns\", rate_bps = 6 }] }",
            &["steps[1].from", "at least 1ms apart"],
        ),
        (
            "base = \"300ms\"",
            "base = \"1ms\", oscillation = { peak_to_peak = \"1ms\", period = \"2ns\" }",
            &["down.delay.oscillation.period", "is 2ns", "at least 1ms"],
        ),
        (
            rate,
            "rate = { kind = \"mahimahi_trace\" }",
            &["down.rate.timestamps_ms", "empty"],
        ),
        (
            rate,
            "rate = { kind = \"mahimahi_trace\", timestamps_ms = [0, 0] }",
            &["last timestamp is 0"],
        ),
        (
            rate,
            "rate = { kind = \"mahimahi_trace\", timestamps_ms = [5, 3] }",
            &["earlier"],
        ),
        (
            rate,
            "rate = { kind = \"mahimahi_trace\", timestamps_ms = [5], opportunity_bytes = 0 }",
            &["opportunity_bytes"],
        ),
        (
            rate,
            "rate = { kind = \"mahimahi_trace\", file = \"/nonexistent/x.trace\" }",
            &["cannot read /nonexistent/x.trace"],
        ),
        (
            rate,
            "rate = { kind = \"mahimahi_trace\", timestamps_ms = [5] }\nbod = {}",
            &["down.bod", "mahimahi"],
        ),
        (
            rate,
            "rate = { kind = \"constant\", rate_bps = 150000000 }\nbod = { headroom = 0.5 }",
            &["down.bod.headroom"],
        ),
        (
            rate,
            "rate = { kind = \"constant\", rate_bps = 150000000 }\nbod = { min_rate_bps = 0, initial_rate_bps = 0 }",
            &["down.bod.min_rate_bps"],
        ),
        (
            rate,
            "rate = { kind = \"constant\", rate_bps = 1000000 }\nbod = {}",
            &["down.bod.min_rate_bps", "plan rate"],
        ),
        (
            rate,
            "rate = { kind = \"constant\", rate_bps = 150000000 }\nbod = { initial_rate_bps = 200000000 }",
            &["down.bod.initial_rate_bps"],
        ),
        (
            rate,
            "rate = { kind = \"constant\", rate_bps = 150000000 }\nbod = { period = \"0s\" }",
            &["down.bod.period"],
        ),
    ];
    for (from, to, needles) in cases {
        let err = error_of(from, to);
        for needle in *needles {
            assert!(err.contains(needle), "{to:?}: {err:?} lacks {needle:?}");
        }
    }
}

#[test]
fn bdp_limit_needs_a_nonzero_rtt() {
    let text = GEO_TOML
        .replace("base = \"300ms\"", "base = \"0s\"")
        .replacen("{ bytes = 36000000 }", "{ bdp = 1.0 }", 1);
    let err = LinkSpec::from_toml_str(&text).unwrap_err().to_string();
    assert!(
        err.contains("down.queue.limit.bdp") && err.contains("base RTT"),
        "{err}"
    );
}

#[test]
fn missing_and_garbled_input() {
    let e = LinkSpec::from_toml_str("name = \"x\"")
        .unwrap_err()
        .to_string();
    assert!(e.contains("down"), "{e}");
    let e = LinkSpec::from_toml_str("name = ").unwrap_err().to_string();
    assert!(e.starts_with("link spec: line 1"), "{e}");
    let e = LinkSpec::from_toml_file("/nonexistent/link.toml")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("cannot read /nonexistent/link.toml"), "{e}");
}

/// A link file or a trace that is a device, a FIFO or far too large is refused at once,
/// in one line that states the limit, instead of being read until memory runs out
/// (issue 32 item 1).
#[test]
fn link_and_trace_files_are_read_bounded() {
    let started = std::time::Instant::now();
    let e = LinkSpec::from_toml_file("/dev/zero")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("/dev/zero") && e.contains("character device") && e.contains("4 MiB"),
        "{e}"
    );
    let dir = std::env::temp_dir().join(format!("satquic-link-bounded-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let toml = GEO_TOML.replacen(
        "rate = { kind = \"constant\", rate_bps = 150000000 }",
        "rate = { kind = \"mahimahi_trace\", file = \"/dev/zero\" }",
        1,
    );
    std::fs::write(dir.join("zero.toml"), &toml).unwrap();
    let e = LinkSpec::from_toml_file(dir.join("zero.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("/dev/zero") && e.contains("64 MiB"), "{e}");
    let sparse = dir.join("sparse.toml");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(10_000_000_000)
        .unwrap();
    let e = LinkSpec::from_toml_file(&sparse).unwrap_err().to_string();
    assert!(
        e.contains("10000000000 bytes") && e.contains("4 MiB"),
        "{e}"
    );
    assert!(!e.contains('\n'));
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn trace_files_load_relative_to_the_toml_file() {
    let dir = std::env::temp_dir().join(format!("satquic-link-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("cell.trace"), "1\n1\n2\n4\n").unwrap();
    let toml = GEO_TOML.replacen(
        "rate = { kind = \"constant\", rate_bps = 150000000 }",
        "rate = { kind = \"mahimahi_trace\", file = \"cell.trace\" }",
        1,
    );
    std::fs::write(dir.join("link.toml"), &toml).unwrap();
    let spec = LinkSpec::from_toml_file(dir.join("link.toml")).unwrap();
    assert_eq!(
        spec.down.rate,
        RateSpec::MahimahiTrace {
            file: None,
            timestamps_ms: vec![1, 1, 2, 4],
            opportunity_bytes: 1500
        }
    );
    std::fs::write(dir.join("bad.trace"), "1\nx\n").unwrap();
    std::fs::write(
        dir.join("bad.toml"),
        toml.replace("cell.trace", "bad.trace"),
    )
    .unwrap();
    let e = LinkSpec::from_toml_file(dir.join("bad.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad.trace") && e.contains("line 2"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

fn constant_rate(d: &DirectionSpec) -> u64 {
    match d.rate {
        RateSpec::Constant { rate_bps } => rate_bps,
        ref other => panic!("not constant: {other:?}"),
    }
}

fn resolved_bytes(spec: &LinkSpec, d: &DirectionSpec) -> u64 {
    match spec.resolved_limit(d) {
        QueueLimit::Bytes(b) => b,
        other => panic!("{other:?}"),
    }
}

#[test]
fn presets_match_the_seed_table() {
    let geo = presets::lookup("geo-viasat").unwrap();
    for d in [&geo.down, &geo.up] {
        assert_eq!(constant_rate(d), 150_000_000);
        assert_eq!(d.delay, DelaySpec::fixed(MS(300)));
        assert_eq!(d.queue.limit, QueueLimit::Bytes(36_000_000));
        assert_eq!(
            d.queue.discipline,
            Discipline::ViasatAqm {
                threshold_fraction: 0.5,
                drop_probability: 0.25
            }
        );
        assert_eq!(d.loss, LossSpec::None);
        assert!(d.bod.is_none());
    }
    let bod = presets::lookup("geo-viasat-bod").unwrap();
    assert_eq!(bod.down.bod, Some(BodSpec::default()));
    assert!(bod.up.bod.is_none());
    assert_eq!(bod.down.queue, geo.down.queue);

    let terr = presets::lookup("qir-terrestrial").unwrap();
    assert_eq!(terr.base_rtt(), MS(30));
    for d in [&terr.down, &terr.up] {
        assert_eq!(constant_rate(d), 20_000_000);
        assert_eq!(d.queue.limit, QueueLimit::Packets(25));
        assert_eq!(d.queue.discipline, Discipline::DropTail);
        assert_eq!(d.loss, LossSpec::None);
    }

    for (name, plr) in [("qir-sat", 0.0), ("qir-satloss", 0.01)] {
        let s = presets::lookup(name).unwrap();
        assert_eq!(constant_rate(&s.down), 20_000_000);
        assert_eq!(constant_rate(&s.up), 2_000_000);
        assert_eq!(s.down.delay.base, MS(300));
        assert_eq!(s.up.delay.base, MS(300));
        assert_eq!(s.down.loss.mean_loss_rate(), plr);
        assert_eq!(s.up.loss.mean_loss_rate(), plr);
        assert_eq!(resolved_bytes(&s, &s.down), 1_500_000);
        assert_eq!(resolved_bytes(&s, &s.up), 150_000);
    }

    let sat = presets::lookup("thesis-sat").unwrap();
    assert_eq!(sat.base_rtt(), MS(600));
    assert_eq!(resolved_bytes(&sat, &sat.down), 1_500_000, "BDP = 1.5 MB");
    assert_eq!(resolved_bytes(&sat, &sat.up), 1_500_000);
    assert_eq!(sat.down.loss, LossSpec::None);
    let sat = presets::lookup("thesis-sat:buffer=0.5,plr=0.001").unwrap();
    assert_eq!(sat.name, "thesis-sat:buffer=0.5,plr=0.001");
    assert_eq!(resolved_bytes(&sat, &sat.down), 750_000);
    assert_eq!(sat.down.loss, LossSpec::Bernoulli { plr: 0.001 });
    assert_eq!(sat.up.loss, LossSpec::Bernoulli { plr: 0.001 });
    let terr = presets::lookup("thesis-terr:buffer=2").unwrap();
    assert_eq!(terr.down.delay.base, MS(50));
    assert_eq!(terr.up.delay.base, MS(50));
    assert_eq!(resolved_bytes(&terr, &terr.down), 500_000, "2 x 250 kB");
    for (pct, up) in [
        ("50", 10_000_000),
        ("75", 5_000_000),
        ("90", 2_000_000),
        ("95", 1_000_000),
        ("97.5", 500_000),
        ("99", 200_000),
    ] {
        let s = presets::lookup(&format!("thesis-asym-{pct}")).unwrap();
        assert_eq!(constant_rate(&s.down), 20_000_000);
        assert_eq!(constant_rate(&s.up), up);
        let ratio = 100.0 * (1.0 - up as f64 / 20e6);
        assert!((ratio - pct.parse::<f64>().unwrap()).abs() < 1e-9);
        assert_eq!(s.down.delay.base, MS(300));
        assert_eq!(resolved_bytes(&s, &s.down), 1_500_000);
        assert_eq!(resolved_bytes(&s, &s.up), 1_500_000);
    }

    let leo = presets::lookup("leo").unwrap();
    assert_eq!(constant_rate(&leo.down), 100_000_000);
    assert_eq!(leo.base_rtt(), MS(30));
    assert_eq!(leo.down.delay.oscillation.as_ref().unwrap().period, MS(100));
    assert_eq!(
        leo.down.delay.path_changes.as_ref().unwrap().interval,
        Duration::from_secs(15)
    );
    let lte = presets::lookup("lte").unwrap();
    assert_eq!(lte.base_rtt(), MS(60));
    let osc = lte
        .down
        .delay
        .oscillation
        .as_ref()
        .unwrap()
        .period
        .as_secs_f64();
    assert!((1.0 / osc - 6.0).abs() < 1e-3, "6 Hz");
    assert!(matches!(lte.down.rate, RateSpec::Schedule { .. }));
}

#[test]
fn preset_table_lists_every_preset() {
    let table = presets::table();
    for name in presets::names() {
        assert!(
            table.lines().any(|l| l.starts_with(&format!("{name} "))),
            "{name} missing"
        );
    }
    let geo = table
        .lines()
        .find(|l| l.starts_with("geo-viasat "))
        .unwrap();
    for needle in ["150 Mbit/s", "300 ms", "36 MB", "viasat 25%>50%"] {
        assert!(geo.contains(needle), "{geo}");
    }
    let asym = table
        .lines()
        .find(|l| l.starts_with("thesis-asym-99 "))
        .unwrap();
    assert!(
        asym.contains("200 kbit/s") && asym.contains("1 BDP=1.5 MB"),
        "{asym}"
    );
    assert!(table.contains("thesis-sat:buffer=0.5,plr=0.001"));
}

#[test]
fn out_of_range_values_are_an_error_not_a_panic() {
    let mut spec = presets::lookup("geo-viasat").unwrap();
    spec.down.queue.limit = QueueLimit::Bytes(u64::MAX);
    assert!(spec.validate().is_err());
    if let Ok(text) = spec.to_toml_string() {
        let e = LinkSpec::from_toml_str(&text).unwrap_err().to_string();
        assert!(!e.contains('\n'), "{e}");
    }
}

/// A number a rate cannot be (1e30, NaN, inf, a fraction, a negative) is named at its own
/// line and column, in an inline table and in a `[down.rate]` table: serde reads a tagged
/// table before it knows its type, and the error came with the table's line (issue 47).
#[test]
fn a_rate_that_is_no_whole_number_is_named_at_its_own_line() {
    for (value, reported) in [
        ("1e30", "1000000000000000000000000000000.0"),
        ("nan", "NaN"),
        ("inf", "inf"),
        ("-inf", "-inf"),
        ("1.5", "1.5"),
        ("-3", "-3"),
    ] {
        let inline = GEO_TOML.replacen("rate_bps = 150000000", &format!("rate_bps = {value}"), 1);
        let e = LinkSpec::from_toml_str(&inline).unwrap_err().to_string();
        let column = "rate = { kind = \"constant\", rate_bps = ".len() + 1;
        assert!(
            e.contains(&format!("line 7, column {column}:")),
            "{value}: {e}"
        );
        assert!(e.contains(reported), "{value}: {e}");
        let header = format!(
            "name = \"x\"\n\n[down.rate]\nkind = \"constant\"\nrate_bps = {value}\n\n[down.delay]\nbase = \"300ms\"\n"
        );
        let e = LinkSpec::from_toml_str(&header).unwrap_err().to_string();
        assert!(e.contains("line 5, column 12:"), "{value}: {e}");
    }
}
