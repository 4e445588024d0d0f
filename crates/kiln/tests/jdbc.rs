//! pgJDBC (the PostgreSQL JDBC driver, from Maven Central) against a `kiln serve` process and
//! against a throwaway stock PostgreSQL: prepared statements of every type (timestamps with
//! zones, arrays), batches rewritten into multi-row INSERTs, generated keys, constraint
//! errors, DatabaseMetaData (tables, columns, primary, imported keys, indexes, types), and on
//! Kiln the ED surface. `tests/clients/jdbc/Check.java`.

mod common;

use std::path::Path;
use std::process::Command;

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e} (CI installs a JDK and Maven; see .ci/run)"));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    println!("{what}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{what} failed");
    stdout
}

#[test]
fn pgjdbc_on_postgresql_and_kiln() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/jdbc");
    let work = tempfile::tempdir().expect("temp dir");
    let lib = work.path().join("lib");
    let classes = work.path().join("classes");
    run(
        Command::new("mvn")
            .args(["-q", "-B", "-f"])
            .arg(src.join("pom.xml"))
            .arg("dependency:copy-dependencies")
            .arg(format!("-DoutputDirectory={}", lib.display())),
        "mvn (fetches pgJDBC)",
    );
    let classpath = format!("{}/*", lib.display());
    run(
        Command::new("javac")
            .args(["-cp", &classpath, "-d"])
            .arg(&classes)
            .arg(src.join("Check.java")),
        "javac",
    );
    let classpath = format!("{}:{}/*", classes.display(), lib.display());
    let pg = common::Postgres::start();
    let kiln = common::Kiln::start(&[]);
    let pg_url = format!("jdbc:postgresql://127.0.0.1:{}/postgres", pg.port);
    let kiln_url = format!("jdbc:postgresql://127.0.0.1:{}/kiln", kiln.port());
    // Once in UTC, once in a JVM whose zone has daylight saving: pgJDBC sends the JVM's zone
    // as the TimeZone startup parameter, and timestamps with its offsets.
    for zone in ["UTC", "America/New_York"] {
        let jvm_zone = format!("-Duser.timezone={zone}");
        for (url, server, ed) in [(&pg_url, "postgres", "false"), (&kiln_url, "kiln", "true")] {
            let out = run(
                Command::new("java").args([&jvm_zone, "-cp", &classpath, "Check", url, server, ed]),
                &format!("pgJDBC on {server} in {zone}"),
            );
            assert!(out.contains("jdbc ok"), "{out}");
        }
    }
}
