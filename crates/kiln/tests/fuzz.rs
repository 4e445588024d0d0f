//! A short bounded run of the fuzzer (kiln-fuzz) against this build's server: hostile SQL and
//! protocol input from several connections; the server must not crash, hang, or answer
//! without an SQLSTATE, and must keep answering new connections. The long run is
//! `./target/release/kiln-fuzz --seconds 3600` (see docs/testing.md).

use std::time::Duration;

#[test]
fn fuzz_sql_and_wire_briefly() {
    let seed = std::env::var("KILN_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(7);
    let seconds =
        std::env::var("KILN_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let config = kiln_fuzz::Config {
        kiln: env!("CARGO_BIN_EXE_kiln").into(),
        duration: Duration::from_secs(seconds),
        seed,
        sql_workers: 2,
        wire_workers: 2,
        answer_timeout: Duration::from_secs(60),
        addr: None,
    };
    let report = kiln_fuzz::run(&config).expect("the fuzzer runs");
    eprintln!("{report:?}");
    assert!(report.failures.is_empty(), "seed {seed}: {:#?}", report.failures);
    assert!(report.statements > 100, "too few statements ran: {report:?}");
    assert!(report.wire_inputs > 100, "too few wire inputs ran: {report:?}");
    assert!(report.health_checks > 5);
}
