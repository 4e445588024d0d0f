//! Kills a real child process with SIGKILL at random moments during a mixed fast/safe
//! workload, 30 times, checking every recovery (see the crate documentation for the checks).
//! `KILN_CRASH_KILLS` raises the count; the `kiln-crash-test` binary runs thousands.

#[test]
fn sigkill_at_random_moments_recovers_every_acknowledged_safe_commit_as_a_prefix() {
    let kills = std::env::var("KILN_CRASH_KILLS").ok().and_then(|k| k.parse().ok()).unwrap_or(30);
    let worker = std::path::Path::new(env!("CARGO_BIN_EXE_kiln-crash-worker"));
    let summary = kiln_crashtest::run(worker, kills, 0x6b696c6e, 0, |_| {});
    assert_eq!(summary.kills, kills);
    assert!(
        summary.safe > kills,
        "too few safe commits acknowledged to mean anything: {summary:?}"
    );
    eprintln!("{summary:?}");
}
