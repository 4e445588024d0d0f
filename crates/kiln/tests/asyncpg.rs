//! asyncpg (Python; binary format throughout, its own type introspection, binary COPY,
//! protocol portals moved in SQL, RPC-style calls of functions returning rows) against a
//! `kiln serve` process and against a throwaway stock PostgreSQL, with the same
//! expectations: `tests/clients/test_asyncpg.py`.

mod common;

use std::process::Command;

#[test]
fn asyncpg_on_kiln_and_postgresql() {
    let kiln = common::Kiln::start(&[]);
    let pg = common::Postgres::start();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/test_asyncpg.py");
    let out = Command::new("python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", script])
        .env("KILN_DSN", format!("postgresql://kiln@127.0.0.1:{}/kiln", kiln.port()))
        .env("PG_DSN", format!("postgresql://postgres@127.0.0.1:{}/postgres", pg.port))
        .output()
        .expect("python3 runs (CI installs pytest and asyncpg; see .ci/run)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "asyncpg tests failed");
    // Every test ran on both servers (the ED test runs on Kiln only).
    assert!(stdout.contains("17 passed") && !stdout.contains("skipped"), "{stdout}");
}
