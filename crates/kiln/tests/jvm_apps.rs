//! JVM applications (from Maven Central) against a `kiln serve` process and against a
//! throwaway stock PostgreSQL: Flyway's migrations, a Liquibase changelog applied, rolled
//! back and applied again, and Hibernate ORM's schema generation, validation and entity
//! work (`tests/clients/jvm_apps/src/main/java/Apps.java`). The program prints what it saw;
//! its transcripts on the two servers must be the same line for line, and on Kiln it also
//! uses the ED surface.

mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn flyway_liquibase_and_hibernate_on_postgresql_and_kiln() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/jvm_apps");
    let work = tempfile::tempdir().expect("temp dir");
    let classpath = common::build_java(
        &src.join("pom.xml"),
        &[src.join("src/main/java/Apps.java")],
        work.path(),
    );
    // The migrations and the changelog are read from the class path.
    let resources = src.join("src/main/resources");
    let classes = work.path().join("classes");
    common::run(Command::new("cp").arg("-r").arg(resources.join(".")).arg(&classes), "cp");
    let pg = common::Postgres::start();
    let kiln = common::Kiln::start(&[]);
    let on = |url: &str, user: &str, kiln: &str, server: &str| {
        common::run(
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
    common::assert_same("the JVM applications' transcript on Kiln", &expected, &got);
}
