//! psycopg 3 (Python) against a `kiln serve` process: `tests/clients/test_psycopg.py`.

mod common;

use std::process::Command;

#[test]
fn psycopg_suite() {
    let kiln = common::Kiln::start(&["--enable-fault-injection"]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/test_psycopg.py");
    let out = Command::new("python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", script])
        .env("KILN_DSN", kiln.conninfo())
        .output()
        .expect("python3 runs (CI installs pytest and psycopg; see .ci/run)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "psycopg tests failed");
    assert!(stdout.contains("passed") && !stdout.contains("failed"), "{stdout}");
}
