use super::*;

const MINIMAL: &str = r#"
name = "t"
[[link]]
preset = "qir-terrestrial"
[[variant]]
cc = "cubic"
[[workload]]
kind = "download"
bytes = "1MB"
"#;

fn parse(text: &str) -> Result<CampaignSpec, SpecError> {
    let spec = CampaignSpec::from_toml_str(text, None)?;
    spec.resolve_links()?;
    spec.resolve_variants()?;
    spec.resolve_workloads()?;
    Ok(spec)
}

#[test]
fn minimal_spec_has_defaults() {
    let spec = parse(MINIMAL).unwrap();
    assert_eq!(spec.mode, Mode::Sim);
    assert_eq!(spec.time_cap, Duration::from_secs(60));
    assert_eq!(spec.repetition_seeds(), vec![1]);
    assert!(spec.interleave);
    let w = spec.resolve_workloads().unwrap();
    assert_eq!(w[0].bytes, Some(1_000_000));
    assert_eq!(w[0].label, "dl1MB");
    assert_eq!(spec.resolve_variants().unwrap()[0].label, "cubic");
}

#[test]
fn unknown_keys_are_named() {
    let e = parse(&format!("repetitons = 3\n{MINIMAL}")).unwrap_err().0;
    assert!(e.contains("repetitons") && e.starts_with("line 1:"), "{e}");
    let e = parse(&MINIMAL.replace("cc = \"cubic\"", "cc = \"cubic\"\nccc = 1"))
        .unwrap_err()
        .0;
    assert!(e.contains("ccc"), "{e}");
    assert!(!e.contains('\n'));
}

#[test]
fn unknown_presets_and_cc_are_named() {
    let e = parse(&MINIMAL.replace("qir-terrestrial", "geo-nowhere"))
        .unwrap_err()
        .0;
    assert!(
        e.starts_with("link[0].preset:") && e.contains("geo-nowhere"),
        "{e}"
    );
    assert!(!e.contains('\n'));
    let e = parse(&MINIMAL.replace("\"cubic\"", "\"cubic+serch\""))
        .unwrap_err()
        .0;
    assert!(e.starts_with("variant[0].cc:"), "{e}");
}

#[test]
fn empty_matrices_are_named() {
    let e = parse(
        "name = \"t\"\n[[variant]]\ncc = \"cubic\"\n[[workload]]\nkind = \"download\"\nbytes = 1\n",
    )
    .unwrap_err()
    .0;
    assert!(e.starts_with("link:"), "{e}");
    let e = parse(&MINIMAL.replace("[[variant]]\ncc = \"cubic\"\n", ""))
        .unwrap_err()
        .0;
    assert!(e.starts_with("variant:"), "{e}");
    let e = parse(&format!("seeds = []\n{MINIMAL}")).unwrap_err().0;
    assert!(e.starts_with("seeds:"), "{e}");
    let e = parse(&MINIMAL.replace(
        "preset = \"qir-terrestrial\"",
        "preset = \"thesis-sat\"\nparams = { buffer = [] }",
    ))
    .unwrap_err()
    .0;
    assert!(e.starts_with("link[0].params.buffer:"), "{e}");
}

#[test]
fn sender_cap_applies_to_variants_unless_they_override_it() {
    let text = format!(
        "sender_cap = \"200M:1.5s\"\n{}",
        MINIMAL.replace(
            "[[variant]]\ncc = \"cubic\"\n",
            "[[variant]]\ncc = \"cubic\"\n[[variant]]\nlabel = \"free\"\ncc = \"cubic\"\nsender_cap = \"none\"\n",
        )
    );
    let v = parse(&text).unwrap().resolve_variants().unwrap();
    let cap = v[0].transport.sender_shaper.as_ref().expect("campaign cap");
    assert_eq!(cap.rate_bps, 200_000_000);
    assert_eq!(cap.latency, Duration::from_millis(1500));
    assert_eq!(v[1].transport.sender_shaper, None);
    // Without any sender_cap the cap is `auto`, satquic sim's default: set per link by
    // the plan, the seeds' cap on links slower than it.
    let v = parse(MINIMAL).unwrap().resolve_variants().unwrap();
    assert!(v[0].auto_sender_cap);
    let plan = crate::plan::Plan::new(&parse(MINIMAL).unwrap()).unwrap();
    let qir = plan.runs[0].link.spec.down.rate.nominal_rate_bps();
    assert_eq!(
        plan.runs[0].scenario.flows[0].transport.sender_shaper,
        satquic_run::ShaperSpec::auto_for(qir)
    );
    let e = parse(&format!("sender_cap = \"fast\"\n{MINIMAL}"))
        .unwrap_err()
        .0;
    assert!(e.starts_with("sender_cap:") && e.contains("fast"), "{e}");
    let e = parse(&MINIMAL.replace("cc = \"cubic\"", "cc = \"cubic\"\nsender_cap = \"1G:0s\""))
        .unwrap_err()
        .0;
    assert!(e.starts_with("variant[0].sender_cap:"), "{e}");
    assert!(!e.contains('\n'));
}

#[test]
fn sweeps_expand_to_the_cartesian_product() {
    let spec = parse(&MINIMAL.replace(
        "preset = \"qir-terrestrial\"",
        "preset = \"thesis-sat\"\nparams = { buffer = [0.5, 1], plr = [0, 0.01] }",
    ))
    .unwrap();
    let links = spec.resolve_links().unwrap();
    let labels: Vec<_> = links.iter().map(|l| l.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "thesis-sat:buffer=0.5,plr=0",
            "thesis-sat:buffer=0.5,plr=0.01",
            "thesis-sat:buffer=1,plr=0",
            "thesis-sat:buffer=1,plr=0.01"
        ]
    );
    assert_eq!(links[1].params["plr"], "0.01");
    assert_eq!(links[1].source, "thesis-sat");
}

#[test]
fn workload_keys_must_match_the_kind() {
    let e = parse(&MINIMAL.replace("bytes = \"1MB\"", "duration = \"1s\""))
        .unwrap_err()
        .0;
    assert!(e.starts_with("workload[0].duration"), "{e}");
    let e = parse(&MINIMAL.replace("kind = \"download\"", "kind = \"timed\""))
        .unwrap_err()
        .0;
    assert!(e.starts_with("workload[0].bytes"), "{e}");
    let upload = MINIMAL.replace("kind = \"download\"", "kind = \"upload\"");
    parse(&upload).unwrap();
    let e = parse(&upload.replace("bytes = \"1MB\"", "duration = \"1s\""))
        .unwrap_err()
        .0;
    assert!(e.contains("an upload has bytes"), "{e}");
    let e = parse(&MINIMAL.replace("kind = \"download\"", "kind = \"uplod\""))
        .unwrap_err()
        .0;
    assert!(e.contains("uplod"), "{e}");
}

#[test]
fn duplicate_labels_and_bad_baseline_are_rejected() {
    let twice = MINIMAL.replace(
        "[[variant]]\ncc = \"cubic\"",
        "[[variant]]\ncc = \"cubic\"\n[[variant]]\ncc = \"cubic\"",
    );
    assert!(parse(&twice).unwrap_err().0.starts_with("variant:"));
    let e = parse(&format!("{MINIMAL}\n[analysis]\nbaseline = \"nope\"\n"))
        .unwrap_err()
        .0;
    assert!(e.starts_with("analysis.baseline"), "{e}");
}

#[test]
fn example_campaigns_parse() {
    for text in [
        include_str!("../../campaigns/geo-search.toml"),
        include_str!("../../campaigns/thesis-a1-sweep.toml"),
    ] {
        parse(text).unwrap();
    }
}

#[test]
fn sizes_parse_with_units() {
    assert_eq!(parse_size("200MB"), Ok(200_000_000));
    assert_eq!(parse_size("10MiB"), Ok(10 * 1048576));
    assert_eq!(parse_size("1.5GB"), Ok(1_500_000_000));
    assert_eq!(parse_size("1500"), Ok(1500));
    assert!(parse_size("12 parsecs").is_err());
    assert_eq!(size_label(10 * 1048576), "10MiB");
    assert_eq!(size_label(200_000_000), "200MB");
}

#[test]
fn sizes_that_are_not_whole_bytes_say_what_to_write() {
    for (bytes, expect) in [
        ("1.5", "not a whole number of bytes"),
        ("-1", "negative"),
        ("true", "a byte count"),
    ] {
        let text = MINIMAL.replace("bytes = \"1MB\"", &format!("bytes = {bytes}"));
        let e = parse(&text).unwrap_err().0;
        assert!(
            e.contains(expect) && !e.contains("untagged"),
            "{bytes}: {e}"
        );
    }
}

#[test]
fn upload_rows_are_upload_rows() {
    let spec = parse(&MINIMAL.replace("kind = \"download\"", "kind = \"upload\"")).unwrap();
    let plan = crate::plan::Plan::new(&spec).unwrap();
    let row = crate::dataset::planned_row("t", &plan.runs[0]);
    // Efficiency and utilisation divide by the data direction's rate: up for uploads.
    assert_eq!(row.workload_kind, "upload");
}

#[test]
fn transport_switches_reach_the_variants_transport() {
    let text = MINIMAL.replace(
        "[[variant]]\ncc = \"cubic\"\n",
        "[[variant]]\ncc = \"cubic\"\n[[variant]]\nlabel = \"probes\"\ncc = \"cubic\"\npto_probe_data = true\nmtu_discovery = true\n",
    );
    let v = parse(&text).unwrap().resolve_variants().unwrap();
    assert!(!v[0].transport.pto_probe_data && !v[0].transport.mtu_discovery);
    assert!(v[1].transport.pto_probe_data && v[1].transport.mtu_discovery);
    // The satellite profile turns them on by itself: satquic_run::transport's tests.
}

#[test]
fn every_example_campaign_resolves() {
    // The files in crates/lab/campaigns are commands in README.md and BENCHMARKS.md; a key
    // renamed in the spec must not leave one of them unparseable.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("campaigns");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        // The error names the file.
        let spec = CampaignSpec::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
        let links = spec
            .resolve_links()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let variants = spec
            .resolve_variants()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let workloads = spec
            .resolve_workloads()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            !links.is_empty() && !variants.is_empty() && !workloads.is_empty(),
            "{}",
            path.display()
        );
        checked += 1;
    }
    assert!(
        checked >= 13,
        "only {checked} campaign files in {}",
        dir.display()
    );
}
