//! SQLAlchemy 2 (ORM and Core over psycopg 3, and over psycopg2, the
//! default driver of SQLAlchemy 2.0) against
//! a `kiln serve` process and against a throwaway stock PostgreSQL, with the same
//! expectations: `tests/clients/test_sqlalchemy.py`.

mod common;

use std::process::Command;

#[test]
fn sqlalchemy_on_kiln_and_postgresql() {
    let kiln = common::Kiln::start(&[]);
    let pg = common::Postgres::start();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/test_sqlalchemy.py");
    let out = Command::new("python3")
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-W",
            "error::DeprecationWarning",
            script,
        ])
        .env("KILN_URL", format!("postgresql+psycopg://kiln@127.0.0.1:{}/kiln", kiln.port()))
        .env("PG_URL", format!("postgresql+psycopg://postgres@127.0.0.1:{}/postgres", pg.port))
        .output()
        .expect("python3 runs (CI installs pytest, psycopg and SQLAlchemy; see .ci/run)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "SQLAlchemy tests failed");
    // Every test (Alembic's among them) ran on both servers through both drivers (only the ED test is skipped on
    // PostgreSQL).
    assert!(stdout.contains("27 passed, 2 skipped"), "{stdout}");
}
