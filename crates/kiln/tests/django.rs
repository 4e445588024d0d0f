//! A Django 5 project (`tests/clients/django_app`) against a `kiln serve` process and against
//! a throwaway stock PostgreSQL: migrate from scratch with the contrib apps, migrations that
//! add and rename a column of a table with rows, CRUD with foreign keys, bulk_create,
//! `.iterator()` (server-side cursors), constraint errors, and on Kiln the ED surface.

mod common;

use std::process::Command;

fn check(port: u16, database: &str, user: &str, kiln: bool) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/django_app/check.py");
    let out = Command::new("python3")
        .arg(script)
        .env("DB_PORT", port.to_string())
        .env("DB_NAME", database)
        .env("DB_USER", user)
        .env("KILN", if kiln { "1" } else { "0" })
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs (CI installs Django and psycopg; see .ci/run)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let server = if kiln { "Kiln" } else { "PostgreSQL" };
    println!("{server}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the Django project failed on {server}");
    assert!(stdout.contains("django ok"), "{stdout}");
}

#[test]
fn django_on_postgresql_and_kiln() {
    let pg = common::Postgres::start();
    check(pg.port, "postgres", "postgres", false);
    let kiln = common::Kiln::start(&[]);
    check(kiln.port(), "kiln", "kiln", true);
}
