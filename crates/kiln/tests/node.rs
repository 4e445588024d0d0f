//! Node.js applications against a `kiln serve` process and against a throwaway stock
//! PostgreSQL: node-postgres directly, Sequelize 6, TypeORM 0.3 and Knex 3 (`tests/clients/node`,
//! their versions pinned by its package-lock.json). Each program prints what it saw — rows,
//! types, reflected schemas, a migration's generated SQL, error fields — and the two
//! transcripts must be the same line for line; on Kiln each also uses the ED surface.

mod common;

use std::path::Path;
use std::process::Command;

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e} (CI installs Node.js and npm; see .ci/run)"));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() {
        panic!("{what} failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    }
    stdout
}

#[test]
fn node_applications_on_postgresql_and_kiln() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/node");
    let work = tempfile::tempdir().expect("temp dir");
    let programs = ["pg.js", "sequelize.js", "typeorm.js", "knex.js"];
    for file in ["package.json", "package-lock.json", "ed.js"].iter().chain(&programs) {
        std::fs::copy(src.join(file), work.path().join(file)).expect("copy the Node programs");
    }
    run(
        Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(work.path()),
        "npm ci (fetches pg, Sequelize, TypeORM and Knex)",
    );
    let pg = common::Postgres::start();
    let kiln = common::Kiln::start(&[]);
    let pg_url = format!("postgres://postgres@127.0.0.1:{}/postgres", pg.port);
    let kiln_url = format!("postgres://kiln@127.0.0.1:{}/kiln", kiln.port());
    for program in programs {
        let on = |url: &str, kiln: &str, server: &str| {
            run(
                Command::new("node").arg(program).args([url, kiln]).current_dir(work.path()),
                &format!("{program} on {server}"),
            )
        };
        let expected = on(&pg_url, "false", "PostgreSQL");
        let got = on(&kiln_url, "true", "Kiln");
        assert_eq!(expected.lines().last(), Some("ok"), "{program} on PostgreSQL:\n{expected}");
        for (i, (e, g)) in expected.lines().zip(got.lines()).enumerate() {
            assert_eq!(e, g, "{program}: line {} differs (PostgreSQL, then Kiln)", i + 1);
        }
        assert_eq!(expected.lines().count(), got.lines().count(), "{program}:\n{got}");
    }
}
