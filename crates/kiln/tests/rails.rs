//! A Rails application's data layer — ActiveRecord 6.1 over ruby-pg, from Debian's packages
//! (`tests/clients/rails/app.rb`) — against a `kiln serve` process and against a throwaway
//! stock PostgreSQL: migrations run from files (advisory lock, schema_migrations,
//! ar_internal_metadata) with a later one that reshapes populated tables and renames one,
//! models with associations, CRUD with prepared statements, bulk inserts and upserts,
//! batches, locks, savepoints, interval (under `IntervalStyle = iso_8601`, which
//! ActiveRecord sets on connect), timestamp(6), uuid, json(b) and array columns, the schema
//! dumper's reflection and constraint errors. The program prints what it saw; the two
//! transcripts must be the same line for line. On Kiln it also uses the ED surface.

mod common;

use std::process::Command;

#[test]
fn activerecord_on_postgresql_and_kiln() {
    let app = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/rails/app.rb");
    let on = |url: &str, kiln: &str, server: &str| {
        common::run(
            Command::new("ruby").args([app, url, kiln]),
            &format!("ActiveRecord on {server}"),
        )
    };
    let pg = common::Postgres::start();
    let expected =
        on(&format!("postgres://postgres@127.0.0.1:{}/postgres", pg.port), "false", "PostgreSQL");
    let kiln = common::Kiln::start(&[]);
    let got = on(&format!("postgres://kiln@127.0.0.1:{}/kiln", kiln.port()), "true", "Kiln");
    assert_eq!(expected.lines().last(), Some("ok"), "ActiveRecord on PostgreSQL:\n{expected}");
    common::assert_same("ActiveRecord's transcript on Kiln", &expected, &got);
}
