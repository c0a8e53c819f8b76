use super::execute::is_final;
use super::rows::outcome_row;
use super::*;
use crate::LabError;
use satquic_net::peers::{AdapterFile, CellOutcome};
use std::time::Duration;

fn spec() -> MatrixSpec {
    MatrixSpec {
        name: "m".into(),
        impls: vec!["satquic".into(), "ngtcp2".into()],
        presets: vec!["qir-sat".into()],
        ccs: vec!["default".into()],
        repetitions: 2,
        seed: 1,
        bytes: 1 << 20,
        time_cap: Duration::from_secs(30),
        alpn: vec!["h3".into()],
        qlog: false,
        tcp_bytes: None,
        sender_cap: None,
    }
}

#[test]
fn plans_every_pair_per_preset_cc_and_repetition() {
    let runs = plan(&spec(), &AdapterFile::builtin()).unwrap();
    assert_eq!(runs.len(), 8);
    assert_eq!(runs[1].pair(), "satquic/ngtcp2");
    assert_eq!(runs[4].rep, 1);
    let mut ids: Vec<_> = runs.iter().map(|r| &r.run_id).collect();
    ids.dedup();
    assert_eq!(ids.len(), 8);
    assert!(
        runs[0]
            .run_id
            .starts_with("qir-sat__satquic--satquic__default__1MiB__r000-")
    );
}

#[test]
fn leo_presets_and_leo_grid_link_files_plan_like_any_link() {
    let grid = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/campaigns/leo-grid/links/p07.toml"
    );
    let mut s = spec();
    s.presets = vec![
        "starlink-moving".into(),
        "starlink-busy:phase=3s,slot-seed=7".into(),
        grid.into(),
    ];
    let runs = plan(&s, &AdapterFile::builtin()).unwrap();
    // Per link: 4 pairs, 2 repetitions.
    assert_eq!(runs.len(), 3 * 4 * 2);
    assert!(
        runs[8].run_id.starts_with("starlink-busy"),
        "{}",
        runs[8].run_id
    );
    // A row reads its link's rates like any other: the largest slot rate is the nominal.
    let link = satquic_run::resolve_link(grid).unwrap();
    let r = row(&s, &runs[16], &link);
    assert_eq!(r.down_rate_bps, link.down.rate.nominal_rate_bps());
    s.presets = vec!["starlink-moving:phase=16s".into()];
    let e = plan(&s, &AdapterFile::builtin()).unwrap_err().to_string();
    assert!(e.contains("phase") && !e.contains('\n'), "{e}");
}

#[test]
fn tcp_variants_run_once_per_preset_and_repetition_whatever_the_ccs() {
    let mut s = spec();
    s.impls = vec![
        "satquic".into(),
        "tcp-cubic-hystart".into(),
        "tcp-bbr".into(),
    ];
    s.ccs = vec!["default".into(), "bbr".into()];
    s.tcp_bytes = Some(50_000_000);
    let runs = plan(&s, &AdapterFile::builtin()).unwrap();
    // satquic/satquic per cc and rep (4), each tcp variant per rep (4).
    assert_eq!(runs.len(), 8);
    let tcp: Vec<&MatrixRun> = runs.iter().filter(|r| r.tcp).collect();
    assert_eq!(tcp.len(), 4);
    assert_eq!(tcp[0].pair(), "tcp-cubic-hystart");
    assert_eq!(tcp[0].cc, "cubic");
    assert_eq!(tcp[1].cc, "bbr");
    let link = satquic_run::resolve_link("qir-sat").unwrap();
    let r = row(&s, tcp[0], &link);
    assert_eq!(r.bytes, Some(50_000_000));
    assert_eq!(r.transport.as_deref(), Some("tcp"));
    assert_eq!(row(&s, &runs[0], &link).bytes, Some(1 << 20));
}

#[test]
fn bad_specs_are_usage_errors() {
    let adapters = AdapterFile::builtin();
    for (edit, want) in [
        (
            Box::new(|s: &mut MatrixSpec| s.impls.push("msquic".into()))
                as Box<dyn Fn(&mut MatrixSpec)>,
            "unknown implementation \"msquic\"",
        ),
        (
            Box::new(|s| s.presets = vec!["mars".into()]),
            "--preset mars",
        ),
        (Box::new(|s| s.ccs = vec!["vegas".into()]), "--cc vegas"),
        (Box::new(|s| s.repetitions = 0), "--reps 0"),
        (Box::new(|s| s.bytes = 0), "-n"),
        (Box::new(|s| s.alpn = vec!["h2".into()]), "--alpn h2"),
    ] {
        let mut s = spec();
        edit(&mut s);
        match plan(&s, &adapters) {
            Err(LabError::Usage(m)) => assert!(m.contains(want), "{m}"),
            other => panic!("{want}: {other:?}"),
        }
    }
}

#[test]
fn finished_rows_stand_and_decided_ones_are_decided_again() {
    assert!(is_final("completed", true));
    assert!(is_final("failed", false));
    assert!(!is_final("failed", true));
    assert!(!is_final("skipped", false));
    assert!(!is_final("incompatible", false));
}

#[test]
fn outcome_rows_have_goodput_and_efficiency_against_the_down_rate() {
    let s = spec();
    let runs = plan(&s, &AdapterFile::builtin()).unwrap();
    let link = satquic_run::resolve_link("qir-sat").unwrap();
    let base = row(&s, &runs[0], &link);
    let r = outcome_row(
        base,
        &CellOutcome {
            status: "completed".into(),
            reason: String::new(),
            client_time: Some(Duration::from_secs(1)),
            delivered_bytes: Some(1 << 20),
            progress: Default::default(),
            link: None,
        },
    );
    assert_eq!(r.goodput_bps, Some(8.0 * (1 << 20) as f64));
    let eff = r.efficiency.unwrap();
    assert!((eff - 8.0 * (1 << 20) as f64 / 20e6).abs() < 1e-9, "{eff}");
    assert_eq!(r.client_impl.as_deref(), Some("satquic"));
}

/// A link file deep in a long directory names every run after its whole path: the ids
/// are cut to fit a directory name, stay apart, and ids that fit are as before.
#[test]
fn run_ids_of_a_link_file_with_a_long_path_fit_a_file_name() {
    let grid = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/campaigns/leo-grid/links/p07.toml"
    );
    let deep = std::env::temp_dir()
        .join(format!("satquic-matrix-long-{}", std::process::id()))
        .join("d".repeat(200));
    std::fs::create_dir_all(&deep).unwrap();
    let link = deep.join("p07.toml");
    std::fs::copy(grid, &link).unwrap();
    let mut s = spec();
    s.presets = vec![link.to_string_lossy().into_owned()];
    s.tcp_bytes = Some(1 << 20);
    s.impls.push("tcp-bbr".into());
    let runs = plan(&s, &AdapterFile::builtin()).unwrap();
    let mut ids: Vec<&str> = runs.iter().map(|r| r.run_id.as_str()).collect();
    assert!(
        ids.iter().all(|id| id.len() <= crate::plan::MAX_FILE_NAME),
        "{ids:?}"
    );
    assert!(ids.iter().any(|id| id.contains('~')), "{ids:?}");
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), runs.len());
    std::fs::remove_dir_all(deep.parent().unwrap()).unwrap();
}
