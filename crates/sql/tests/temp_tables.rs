//! Temporary tables belong to the session that made them: no other session's unqualified
//! names reach them, they go when the session ends, and those of sessions that ended with a
//! crash go when the database is opened again.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{ok, single_int};
use kiln_engine::{Config, Engine};
use kiln_sql::{Database, Session, SessionConfig};

fn open(dir: &Path) -> Arc<Database> {
    let engine = Engine::open(dir, Config::default()).unwrap();
    Database::open(engine, SessionConfig::default()).unwrap()
}

/// How many temporary schemas and tables named `name` the catalog holds.
fn leftovers(session: &mut Session, name: &str) -> (i64, i64) {
    let schemas = single_int(&ok(
        session,
        "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'pg\\_temp\\_%'",
    ));
    let tables = single_int(&ok(
        session,
        &format!("SELECT count(*) FROM pg_class WHERE relname = '{name}'"),
    ));
    (schemas, tables)
}

#[test]
fn temporary_tables_are_private_to_their_session_and_go_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut a = db.session("kiln", "kiln", 101).unwrap();
    let mut b = db.session("kiln", "kiln", 102).unwrap();
    ok(&mut b, "CREATE TABLE shared (n int)");
    ok(&mut b, "INSERT INTO shared VALUES (1)");
    // A's temporary table hides the permanent one of the same name, for A only.
    ok(&mut a, "CREATE TEMP TABLE shared (n int)");
    ok(&mut a, "INSERT INTO shared VALUES (10), (20)");
    assert_eq!(single_int(&ok(&mut a, "SELECT sum(n) FROM shared")), 30);
    assert_eq!(single_int(&ok(&mut b, "SELECT sum(n) FROM shared")), 1);
    // Each session has its own temporary table of one name.
    ok(&mut b, "CREATE TEMP TABLE scratch (n int)");
    ok(&mut a, "CREATE TEMP TABLE scratch (n int)");
    ok(&mut b, "INSERT INTO scratch VALUES (2)");
    assert_eq!(single_int(&ok(&mut a, "SELECT count(*) FROM scratch")), 0);
    // A table A makes without TEMP is a permanent one, which B reads.
    ok(&mut a, "CREATE TABLE made_by_a (n int)");
    assert_eq!(single_int(&ok(&mut b, "SELECT count(*) FROM made_by_a")), 0);
    assert_eq!(leftovers(&mut b, "scratch"), (2, 2));
    drop(a);
    // A's temporary tables and schema went with it; B's stay.
    assert_eq!(leftovers(&mut b, "scratch"), (1, 1));
    assert_eq!(single_int(&ok(&mut b, "SELECT sum(n) FROM shared")), 1);
    assert_eq!(single_int(&ok(&mut b, "SELECT n FROM scratch")), 2);
    drop(b);
    let mut c = db.session("kiln", "kiln", 103).unwrap();
    assert_eq!(leftovers(&mut c, "scratch"), (0, 0));
}

#[test]
fn temporary_tables_left_by_a_crash_are_dropped_when_the_database_opens() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut a = db.session("kiln", "kiln", 201).unwrap();
        ok(&mut a, "CREATE TEMP TABLE orphan (n int)");
        ok(&mut a, "INSERT INTO orphan VALUES (1)");
        let mut b = db.session("kiln", "kiln", 203).unwrap();
        assert_eq!(leftovers(&mut b, "orphan"), (1, 1));
        drop(b);
        // The process dies with the session open: nothing drops its schema.
        db.engine().persist().unwrap();
        std::mem::forget(a);
        db.close().unwrap();
    }
    let db = open(dir.path());
    let mut b = db.session("kiln", "kiln", 202).unwrap();
    assert_eq!(leftovers(&mut b, "orphan"), (0, 0));
}
