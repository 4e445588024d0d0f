//! pgJDBC (the PostgreSQL JDBC driver, from Maven Central) against a `kiln serve` process and
//! against a throwaway stock PostgreSQL: prepared statements of every type (timestamps with
//! zones, arrays), batches rewritten into multi-row INSERTs, generated keys, constraint
//! errors, DatabaseMetaData (tables, columns, primary, imported keys, indexes, types), and on
//! Kiln the ED surface. `tests/clients/jdbc/Check.java`.

mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn pgjdbc_on_postgresql_and_kiln() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/jdbc");
    let work = tempfile::tempdir().expect("temp dir");
    let classpath =
        common::build_java(&src.join("pom.xml"), &[src.join("Check.java")], work.path());
    let pg = common::Postgres::start();
    let kiln = common::Kiln::start(&[]);
    let pg_url = format!("jdbc:postgresql://127.0.0.1:{}/postgres", pg.port);
    let kiln_url = format!("jdbc:postgresql://127.0.0.1:{}/kiln", kiln.port());
    // Once in UTC, once in a JVM whose zone has daylight saving: pgJDBC sends the JVM's zone
    // as the TimeZone startup parameter, and timestamps with its offsets.
    for zone in ["UTC", "America/New_York"] {
        let jvm_zone = format!("-Duser.timezone={zone}");
        for (url, server, ed) in [(&pg_url, "postgres", "false"), (&kiln_url, "kiln", "true")] {
            let out = common::run(
                Command::new("java").args([&jvm_zone, "-cp", &classpath, "Check", url, server, ed]),
                &format!("pgJDBC on {server} in {zone}"),
            );
            assert!(out.contains("jdbc ok"), "{out}");
        }
    }
}
