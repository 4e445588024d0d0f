//! Sequences across loss and restart: a value `nextval` handed out is never handed out again,
//! even when the fast transaction that took it is lost (its block was durable before the
//! value was given), and values taken concurrently are all distinct.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use kiln_engine::{Config, Engine, Faults, FaultyVfs};
use kiln_sql::{Database, Output, Session, SessionConfig, Value};

fn run(session: &mut Session, sql: &str) -> Result<Vec<Output>, kiln_sql::SqlError> {
    let (outputs, error) = session.simple_query(sql);
    match error {
        Some(e) => Err(e),
        None => Ok(outputs),
    }
}

fn ok(session: &mut Session, sql: &str) -> Vec<Output> {
    run(session, sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"))
}

/// The integers of the last output's first column.
fn ints(outputs: &[Output]) -> Vec<i64> {
    match outputs.last() {
        Some(Output::Rows { rows, .. }) => rows
            .iter()
            .map(|r| match r.first() {
                Some(Value::Int(n)) => *n,
                other => panic!("not an integer: {other:?}"),
            })
            .collect(),
        other => panic!("no rows: {other:?}"),
    }
}

fn open(dir: &Path, config: Config) -> Arc<Database> {
    let engine = Engine::open(dir, config).unwrap();
    Database::open(engine, SessionConfig::default()).unwrap()
}

/// A configuration whose disk can fail, and whose fast commits stay unflushed long enough
/// for the test to lose them.
fn faulty(faults: &Arc<Faults>) -> Config {
    Config {
        vfs: Arc::new(FaultyVfs::new(faults.clone())),
        vulnerability_window: Duration::from_secs(600),
        ..Config::default()
    }
}

#[test]
fn values_of_lost_fast_transactions_are_not_handed_out_again_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    let mut seen = HashSet::new();
    {
        let db = open(dir.path(), faulty(&faults));
        let mut s = db.session("kiln", "kiln", 1).unwrap();
        ok(&mut s, "CREATE TABLE t (id bigserial PRIMARY KEY, v int)");
        ok(&mut s, "SET synchronous_commit = off");
        for v in 0..10 {
            let ids = ints(&ok(&mut s, &format!("INSERT INTO t (v) VALUES ({v}) RETURNING id")));
            seen.extend(ids);
        }
        assert_eq!(seen.len(), 10);
        // The power goes out before the fast inserts reach the disk.
        faults.crash_after_bytes.store(0, Ordering::SeqCst);
        drop(s);
        db.shutdown();
    }
    let db = open(dir.path(), Config::default());
    let mut s = db.session("kiln", "kiln", 1).unwrap();
    let rows = ints(&ok(&mut s, "SELECT count(*) FROM t"));
    assert_eq!(rows, vec![0], "the fast inserts were not lost: the test proves nothing");
    let next = ints(&ok(&mut s, "INSERT INTO t (v) VALUES (99) RETURNING id"));
    assert!(
        next[0] > *seen.iter().max().unwrap(),
        "value {} handed out again after a crash (seen: {seen:?})",
        next[0]
    );
}

#[test]
fn values_of_transactions_lost_without_a_restart_are_not_handed_out_again() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    let db = open(dir.path(), faulty(&faults));
    let mut s = db.session("kiln", "kiln", 1).unwrap();
    ok(&mut s, "CREATE SEQUENCE s");
    ok(&mut s, "CREATE TABLE t (id int PRIMARY KEY)");
    ok(&mut s, "SET synchronous_commit = off");
    let mut seen = Vec::new();
    for _ in 0..5 {
        seen.extend(ints(&ok(&mut s, "INSERT INTO t SELECT nextval('s') RETURNING id")));
    }
    // The next flush fails: the fast inserts are lost, the server carries on in a new epoch.
    faults.fail_syncs.store(1, Ordering::SeqCst);
    ok(&mut s, "SET synchronous_commit = on");
    assert!(run(&mut s, "INSERT INTO t VALUES (1000)").is_err(), "the flush did not fail");
    let left = ints(&ok(&mut s, "SELECT count(*) FROM t WHERE id < 1000"));
    assert_eq!(left, vec![0], "the fast inserts were not lost: the test proves nothing");
    let next = ints(&ok(&mut s, "SELECT nextval('s')"))[0];
    assert!(next > *seen.iter().max().unwrap(), "value {next} handed out again (seen: {seen:?})");
}

#[test]
fn concurrent_sessions_never_get_the_same_value_and_restarts_skip_ahead() {
    let dir = tempfile::tempdir().unwrap();
    let mut all = HashSet::new();
    for round in 0..3 {
        let db = open(dir.path(), Config::default());
        let mut s = db.session("kiln", "kiln", 1).unwrap();
        if round == 0 {
            ok(&mut s, "CREATE SEQUENCE s INCREMENT BY 3 START WITH 10");
        }
        let workers: Vec<_> = (0..4)
            .map(|i| {
                let db = db.clone();
                std::thread::spawn(move || {
                    let mut s = db.session("kiln", "kiln", 2 + i).unwrap();
                    let mut got = Vec::new();
                    for _ in 0..300 {
                        got.extend(ints(&ok(&mut s, "SELECT nextval('s')")));
                    }
                    got
                })
            })
            .collect();
        for w in workers {
            for v in w.join().unwrap() {
                assert_eq!((v - 10) % 3, 0, "{v} is not START + k × INCREMENT");
                assert!(all.insert(v), "value {v} handed out twice");
            }
        }
        drop(s);
        db.shutdown();
    }
    assert_eq!(all.len(), 3 * 4 * 300);
}
