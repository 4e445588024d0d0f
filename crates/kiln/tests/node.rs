//! Node.js applications against a `kiln serve` process and against a throwaway stock
//! PostgreSQL: node-postgres directly, Sequelize 6, TypeORM 0.3 and Knex 3 (`tests/clients/node`,
//! their versions pinned by its package-lock.json). Each program prints what it saw — rows,
//! types, reflected schemas, a migration's generated SQL, error fields — and the two
//! transcripts must be the same line for line; on Kiln each also uses the ED surface.

mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn node_applications_on_postgresql_and_kiln() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/node");
    let work = tempfile::tempdir().expect("temp dir");
    let programs = ["pg.js", "sequelize.js", "typeorm.js", "knex.js"];
    for file in ["package.json", "package-lock.json", "ed.js"].iter().chain(&programs) {
        std::fs::copy(src.join(file), work.path().join(file)).expect("copy the Node programs");
    }
    common::run(
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
            common::run(
                Command::new("node").arg(program).args([url, kiln]).current_dir(work.path()),
                &format!("{program} on {server}"),
            )
        };
        let expected = on(&pg_url, "false", "PostgreSQL");
        let got = on(&kiln_url, "true", "Kiln");
        assert_eq!(expected.lines().last(), Some("ok"), "{program} on PostgreSQL:\n{expected}");
        common::assert_same(&format!("{program}'s transcript on Kiln"), &expected, &got);
    }
}
