//! JVM applications (from Maven Central) against a `kiln serve` process and against a
//! throwaway stock PostgreSQL: Flyway's migrations, a Liquibase changelog applied, rolled
//! back and applied again, and Hibernate ORM's schema generation, validation and entity
//! work (`tests/clients/jvm_apps/src/main/java/Apps.java`). The program prints what it saw;
//! its transcripts on the two servers must be the same line for line, and on Kiln it also
//! uses the ED surface.

mod common;

use std::path::Path;
use std::process::Command;

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e} (CI installs a JDK and Maven; see .ci/run)"));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() {
        panic!("{what} failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    }
    stdout
}

#[test]
fn flyway_liquibase_and_hibernate_on_postgresql_and_kiln() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/jvm_apps");
    let work = tempfile::tempdir().expect("temp dir");
    let lib = work.path().join("lib");
    let classes = work.path().join("classes");
    run(
        Command::new("mvn")
            .args(["-q", "-B", "-f"])
            .arg(src.join("pom.xml"))
            .arg("dependency:copy-dependencies")
            .arg(format!("-DoutputDirectory={}", lib.display())),
        "mvn (fetches Flyway, Liquibase, Hibernate and pgJDBC)",
    );
    let classpath = format!("{}/*", lib.display());
    run(
        Command::new("javac")
            .args(["-cp", &classpath, "-d"])
            .arg(&classes)
            .arg(src.join("src/main/java/Apps.java")),
        "javac",
    );
    // The migrations and the changelog are read from the class path.
    let resources = src.join("src/main/resources");
    run(Command::new("cp").arg("-r").arg(format!("{}/.", resources.display())).arg(&classes), "cp");
    let classpath = format!("{}:{}/*", classes.display(), lib.display());
    let pg = common::Postgres::start();
    let kiln = common::Kiln::start(&[]);
    let on = |url: &str, user: &str, kiln: &str, server: &str| {
        run(
            Command::new("java").args(["-cp", &classpath, "Apps", url, user, kiln]),
            &format!("the JVM applications on {server}"),
        )
    };
    let expected = on(
        &format!("jdbc:postgresql://127.0.0.1:{}/postgres", pg.port),
        "postgres",
        "false",
        "PostgreSQL",
    );
    let got =
        on(&format!("jdbc:postgresql://127.0.0.1:{}/kiln", kiln.port()), "kiln", "true", "Kiln");
    assert_eq!(expected.lines().last(), Some("ok"), "on PostgreSQL:\n{expected}");
    for (i, (e, g)) in expected.lines().zip(got.lines()).enumerate() {
        assert_eq!(e, g, "line {} differs (PostgreSQL, then Kiln)", i + 1);
    }
    assert_eq!(expected.lines().count(), got.lines().count(), "{got}");
}
