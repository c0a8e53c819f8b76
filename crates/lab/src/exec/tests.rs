use super::*;

/// A campaign of 2 variants x 2 seeds on a small link (about a second in debug).
const TINY: &str = r#"
name = "tiny"
repetitions = 2
seed = 11
[[link]]
preset = "qir-terrestrial"
[[variant]]
label = "classic"
cc = "cubic"
[[variant]]
label = "search"
cc = "cubic+search"
[[workload]]
kind = "download"
bytes = "4MB"
"#;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("satquic-lab-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn tiny() -> (CampaignSpec, Plan) {
    let spec = CampaignSpec::from_toml_str(TINY, None).unwrap();
    let plan = Plan::new(&spec).unwrap();
    (spec, plan)
}

#[test]
fn an_emulated_campaign_with_a_sender_cap_passes_the_check_and_keeps_its_cap() {
    // The relay applies the cap in front of the link now (satquic-net's model), so an
    // emulated campaign runs as specified instead of being refused.
    let text = TINY.replace(
        "repetitions = 2",
        "repetitions = 2\nmode = \"emulated\"\nsender_cap = \"200M:1.5s\"",
    );
    let spec = CampaignSpec::from_toml_str(&text, None).unwrap();
    let plan = Plan::new(&spec).unwrap();
    assert_eq!(
        check_emulated(&spec, &plan).map_err(|e| e.to_string()),
        Ok(())
    );
    let cap = plan.runs[0].scenario.flows[0]
        .transport
        .sender_shaper
        .clone();
    assert_eq!(cap.map(|c| c.rate_bps), Some(200_000_000));
}

#[test]
fn without_a_directory_the_hook_sees_every_run_and_nothing_is_written() {
    let (spec, plan) = tiny();
    let seen = Mutex::new(Vec::new());
    let hook = |f: &Finished| {
        seen.lock().unwrap().push((
            f.run.run_id.clone(),
            f.row.status.clone(),
            f.record.map(|r| r.summary.flows[0].delivered_bytes),
        ))
    };
    let o = execute_plan(
        &spec,
        &plan,
        None,
        &ExecOptions::default(),
        &|_| {},
        Some(&hook),
    )
    .unwrap();
    assert_eq!((o.ran, o.rows, o.runs_csv), (4, 0, None));
    let mut seen = seen.into_inner().unwrap();
    seen.sort();
    let mut ids: Vec<String> = plan.runs.iter().map(|r| r.run_id.clone()).collect();
    ids.sort();
    assert_eq!(seen.iter().map(|s| s.0.clone()).collect::<Vec<_>>(), ids);
    assert!(
        seen.iter()
            .all(|s| s.1 == "completed" && s.2 == Some(4_000_000)),
        "{seen:?}"
    );
}

fn finished_dirs(out: &Path) -> usize {
    std::fs::read_dir(out.join("runs"))
        .map(|d| {
            d.flatten()
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .count()
        })
        .unwrap_or(0)
}

/// Runs the tiny campaign when spawned by `killed_campaign_resumes_without_duplicates`
/// (it kills this process mid-way); does nothing when run directly.
#[test]
#[ignore = "helper process of killed_campaign_resumes_without_duplicates"]
fn child_campaign_for_kill_test() {
    let Ok(out) = std::env::var("SATQUIC_LAB_KILL_TEST_OUT") else {
        return;
    };
    let (spec, plan) = tiny();
    let opts = ExecOptions {
        jobs: 1,
        ..ExecOptions::default()
    };
    run_campaign(&spec, &plan, Path::new(&out), &opts, &|_| {}).unwrap();
}

#[test]
fn killed_campaign_resumes_without_duplicates() {
    let out = temp_dir("kill");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "exec::tests::child_campaign_for_kill_test",
            "--test-threads=1",
        ])
        .env("SATQUIC_LAB_KILL_TEST_OUT", &out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while finished_dirs(&out) < 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = finished_dirs(&out);
    assert!(
        (1..4).contains(&before),
        "killed mid-way: {before} of 4 runs finished"
    );
    let (spec, plan) = tiny();
    let seen = Mutex::new(Vec::new());
    let outcome = run_campaign(
        &spec,
        &plan,
        &out,
        &ExecOptions {
            jobs: 2,
            ..ExecOptions::default()
        },
        &|p| seen.lock().unwrap().push(p.clone()),
    )
    .unwrap();
    assert_eq!(outcome.skipped, before);
    assert_eq!(outcome.ran, 4 - before);
    assert_eq!(outcome.rows, 4);
    let rows = dataset::read_csv(&out.join("runs.csv")).unwrap();
    let mut ids: Vec<_> = rows.iter().map(|r| r.run_id.clone()).collect();
    assert_eq!(rows.len(), 4);
    ids.dedup();
    assert_eq!(ids.len(), 4);
    assert_eq!(
        rows.iter().map(|r| r.index).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    assert!(rows.iter().all(|r| r.status == "completed"), "{rows:?}");
    assert_eq!(seen.lock().unwrap().last().unwrap().done, 4 - before);
    // A third invocation has nothing to do.
    let again = run_campaign(&spec, &plan, &out, &ExecOptions::default(), &|_| {}).unwrap();
    assert_eq!((again.ran, again.skipped, again.rows), (0, 4, 4));
    assert!(
        std::fs::read_dir(out.join("runs"))
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().starts_with(".partial")),
        "stale partial directories are removed"
    );
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn same_spec_gives_the_same_runs_csv_and_shards_merge() {
    let (spec, plan) = tiny();
    let a = temp_dir("det-a");
    run_campaign(&spec, &plan, &a, &ExecOptions::default(), &|_| {}).unwrap();
    let b = temp_dir("det-b");
    for i in 0..2 {
        let opts = ExecOptions {
            jobs: 1,
            shard: Some((i, 2)),
            ..ExecOptions::default()
        };
        let o = run_campaign(&spec, &plan, &b, &opts, &|_| {}).unwrap();
        assert_eq!(o.selected, 2);
    }
    collect_dir(&b).unwrap();
    let csv_a = std::fs::read(a.join("runs.csv")).unwrap();
    let csv_b = std::fs::read(b.join("runs.csv")).unwrap();
    assert_eq!(
        String::from_utf8(csv_a).unwrap(),
        String::from_utf8(csv_b).unwrap()
    );
    for dir in [a, b] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn failures_and_timeouts_are_rows_with_a_reason() {
    let (mut spec, _) = tiny();
    spec.timeout = Some(Duration::from_micros(1));
    spec.repetitions = 1;
    let plan = Plan::new(&spec).unwrap();
    let out = temp_dir("timeout");
    let o = run_campaign(&spec, &plan, &out, &ExecOptions::default(), &|_| {}).unwrap();
    assert_eq!((o.rows, o.failed), (2, 2));
    let rows = dataset::read_csv(&out.join("runs.csv")).unwrap();
    assert!(
        rows.iter()
            .all(|r| r.status == "timeout" && r.reason.contains("timeout"))
    );
    // A retry without the timeout turns them into completed runs, still one row each.
    spec.timeout = None;
    let plan = Plan::new(&spec).unwrap();
    let opts = ExecOptions {
        retry_failed: true,
        ..ExecOptions::default()
    };
    let o = run_campaign(&spec, &plan, &out, &opts, &|_| {}).unwrap();
    assert_eq!((o.ran, o.rows, o.failed), (2, 2, 0));
    std::fs::remove_dir_all(&out).unwrap();
}

/// One emulated run on loopback (real sockets, real time: about a second).
#[test]
fn emulated_mode_runs_on_loopback_and_gives_the_same_row_schema() {
    let spec = CampaignSpec::from_toml_str(
        r#"
name = "emulated"
mode = "emulated"
time_cap = "20s"
timeout = "120s"
[[link]]
preset = "qir-terrestrial"
[[variant]]
cc = "cubic"
[[workload]]
kind = "download"
bytes = "1MB"
"#,
        None,
    )
    .unwrap();
    let plan = Plan::new(&spec).unwrap();
    let out = temp_dir("emulated");
    let o = run_campaign(&spec, &plan, &out, &ExecOptions::default(), &|_| {}).unwrap();
    let rows = dataset::read_csv(&out.join("runs.csv")).unwrap();
    assert_eq!(o.rows, 1);
    let row = &rows[0];
    assert_eq!(
        (row.mode.as_str(), row.status.as_str()),
        ("emulated", "completed"),
        "{row:?}"
    );
    assert_eq!(row.delivered_bytes, Some(1_000_000));
    let chunks = dataset::read_chunks(&out.join("runs").join(&row.run_id));
    assert_eq!(chunks.len(), 1);
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn emulated_mode_takes_one_flow() {
    let spec = CampaignSpec::from_toml_str(
        &TINY
            .replace("bytes = \"4MB\"", "bytes = \"4MB\"\nflows = 2")
            .replace("name = \"tiny\"", "name = \"tiny\"\nmode = \"emulated\""),
        None,
    )
    .unwrap();
    let plan = Plan::new(&spec).unwrap();
    let out = temp_dir("emulated-flows");
    let e = run_campaign(&spec, &plan, &out, &ExecOptions::default(), &|_| {}).unwrap_err();
    assert!(
        matches!(e, LabError::Usage(_)) && e.to_string().contains("one flow"),
        "{e}"
    );
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn half_written_runs_of_other_hosts_are_kept() {
    let here = lock::host_name();
    if here.is_empty() || !Path::new("/proc/self").exists() {
        return;
    }
    let runs = temp_dir("partials");
    // No process has pid 2^31 - 1 (Linux's pid_max is at most 2^22).
    let dead_here = format!(".partial-a__b-2147483647@{here}");
    let old_format = ".partial-a__c-2147483647".to_string();
    let elsewhere = ".partial-a__d-2147483647@another-node".to_string();
    let running_here = partial_dir(&runs, "a__e");
    for name in [&dead_here, &old_format, &elsewhere] {
        std::fs::create_dir_all(runs.join(name)).unwrap();
    }
    std::fs::create_dir_all(&running_here).unwrap();
    remove_stale_partials(&runs);
    assert!(
        !runs.join(&dead_here).exists(),
        "a killed process's run here"
    );
    assert!(!runs.join(&old_format).exists(), "a name without a host");
    assert!(
        runs.join(&elsewhere).exists(),
        "another node's shard may still be writing it"
    );
    assert!(running_here.exists(), "this process's own run");
    std::fs::remove_dir_all(&runs).unwrap();
}

/// A parameterised link and a long congestion-control spec made run ids of 300 bytes and
/// more: every run of such a campaign failed before it started ("File name too long", os
/// error 36, on `.partial-ID-PID@HOST`). Its runs now finish, keep their records under
/// cut names that hold the full link and spec in their files, and resume; its report's
/// figure files fit too.
#[test]
fn a_campaign_whose_run_ids_pass_a_file_name_runs_resumes_and_reports() {
    const LINK: &str = "starlink-busy:phase=4.814s,slot-seed=1530690897,rate-scale=1.202,\
                        rtt-add=0.8ms,queue=405675,up-queue=44624";
    const CC: &str = "cubic+search+growth:x=3+floor:iw=15360,max-rtt=1000+jump:cap=1.5,\
                      bound,validate+loss-filter:startup-confirm=2,cr=validating+retreat+\
                      cr:ss-cap=1,jump-on-confirm";
    let other = CC.replace("ss-cap=1", "ss-cap=2");
    let text = format!(
        r#"
name = "long"
seed = 3
time_cap = "30s"
[[link]]
preset = "{LINK}"
[[variant]]
cc = "{CC}"
[[variant]]
cc = "{other}"
[[workload]]
kind = "download"
bytes = "1MB"
"#
    );
    let spec = CampaignSpec::from_toml_str(&text, None).unwrap();
    let plan = Plan::new(&spec).unwrap();
    let out = temp_dir("long-names");
    let first = run_campaign(&spec, &plan, &out, &ExecOptions::default(), &|_| {}).unwrap();
    assert_eq!((first.ran, first.failed, first.rows), (2, 0, 2));
    let rows = dataset::read_csv(&out.join("runs.csv")).unwrap();
    for (row, cc) in rows.iter().zip([CC, other.as_str()]) {
        assert_eq!(row.status, "completed", "{}", row.reason);
        assert_eq!(row.delivered_bytes, Some(1_000_000));
        assert!(
            row.run_id.len() <= crate::plan::MAX_FILE_NAME,
            "{}",
            row.run_id
        );
        let dir = out.join("runs").join(&row.run_id);
        for file in ["summary.json", "chunks.csv", "events.jsonl", "row.json"] {
            assert!(dir.join(file).is_file(), "{file} missing");
        }
        // The cut name loses nothing: the run's own files hold the link and spec in full.
        let stored = read_row(&dir).unwrap();
        assert_eq!((stored.link.as_str(), stored.cc.as_str()), (LINK, cc));
        let summary = std::fs::read_to_string(dir.join("summary.json")).unwrap();
        assert!(summary.contains(cc), "summary.json names the spec");
    }
    let again = run_campaign(&spec, &plan, &out, &ExecOptions::default(), &|_| {}).unwrap();
    assert_eq!((again.ran, again.skipped, again.rows), (0, 2, 2));
    crate::report::write_report(std::slice::from_ref(&out), &out.join("report"), None).unwrap();
    let figures: Vec<String> = std::fs::read_dir(out.join("report").join("figures"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!figures.is_empty());
    assert!(
        figures
            .iter()
            .all(|f| f.len() <= crate::plan::MAX_FILE_NAME)
    );
    std::fs::remove_dir_all(&out).unwrap();
}

/// `.partial-ID-PID@HOST` fits a file name whatever the id (the longest is
/// [`MAX_FILE_NAME`](crate::plan::MAX_FILE_NAME) bytes) and the host (up to 64 bytes),
/// and a cut one left by a dead process is still removed.
#[test]
fn the_partial_directory_of_the_longest_run_id_fits_and_is_cleaned_up() {
    let runs = temp_dir("long-partials");
    let id = format!("{}__r000-438b701d", "x".repeat(240));
    assert_eq!(id.len(), crate::plan::MAX_FILE_NAME);
    let mine = partial_dir(&runs, &id);
    let name = mine.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.len() <= crate::plan::MAX_FILE_NAME, "{}", name.len());
    assert!(name.starts_with(".partial-xxx"), "{name}");
    assert_ne!(
        name,
        partial_dir(&runs, &id.replace("__r000", "__r001"))
            .file_name()
            .unwrap()
            .to_string_lossy(),
    );
    // Short ids keep their partial name as before.
    let short = partial_dir(&runs, "a__e");
    assert_eq!(
        short.file_name().unwrap().to_string_lossy(),
        format!(".partial-a__e-{}@{}", std::process::id(), lock::host_name())
    );
    std::fs::create_dir_all(&mine).unwrap();
    let here = lock::host_name();
    if !here.is_empty() && Path::new("/proc/self").exists() {
        // As partial_dir names it for a process of pid 2^31 - 1, which none has.
        let owner = format!("-2147483647@{here}");
        let room = crate::plan::MAX_FILE_NAME - ".partial-".len() - owner.len();
        let dead = format!(".partial-{}{owner}", crate::plan::fit_name(&id, room));
        std::fs::create_dir_all(runs.join(&dead)).unwrap();
        remove_stale_partials(&runs);
        assert!(!runs.join(&dead).exists(), "a killed process's cut partial");
        assert!(mine.exists(), "this process's own run");
    }
    std::fs::remove_dir_all(&runs).unwrap();
}
