//! Go applications against a `kiln serve` process and against a throwaway stock PostgreSQL:
//! pgx 5 directly (every common type in binary format, arrays, binary COPY, batches, enum
//! types loaded by name, the simple protocol, error fields, LISTEN/NOTIFY) and GORM
//! (AutoMigrate twice, associations, preload, soft delete, its migrator's reflection), from
//! `tests/clients/go` (versions pinned by its go.sum). The program prints what it saw, and
//! the two transcripts must be the same line for line; on Kiln it also uses the ED surface.

mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn pgx_and_gorm_on_postgresql_and_kiln() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/go");
    let work = tempfile::tempdir().expect("temp dir");
    for file in ["go.mod", "go.sum", "main.go"] {
        std::fs::copy(src.join(file), work.path().join(file)).expect("copy the Go program");
    }
    let binary = work.path().join("goapps");
    common::run(
        Command::new("go").arg("build").arg("-o").arg(&binary).arg(".").current_dir(work.path()),
        "go build (fetches pgx and GORM from the Go module proxy)",
    );
    let pg = common::Postgres::start();
    let kiln = common::Kiln::start(&[]);
    let pg_url = format!("postgres://postgres@127.0.0.1:{}/postgres", pg.port);
    let kiln_url = format!("postgres://kiln@127.0.0.1:{}/kiln", kiln.port());
    let expected = common::run(Command::new(&binary).arg(&pg_url), "the Go program on PostgreSQL");
    let got =
        common::run(Command::new(&binary).args([&kiln_url, "true"]), "the Go program on Kiln");
    assert_eq!(expected.lines().last(), Some("ok"), "on PostgreSQL:\n{expected}");
    common::assert_same("the Go program's transcript on Kiln", &expected, &got);
}
