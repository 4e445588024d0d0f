//! The classic commit model (the control experiment): a commit is visible, and gives up its
//! row locks, only once durable. Concurrent READ COMMITTED increments of one row must then all
//! count: a writer that waited for the row's lock re-reads it, and by then the previous
//! writer's commit is durable and visible. (Were the lock released at the commit point, the
//! waiter would re-read the row as of the durable watermark, without the previous commit, and
//! overwrite it: a lost update.)

use std::sync::Arc;

use kiln_engine::{CommitModel, Config, Engine};
use kiln_sql::{Database, SessionConfig};

mod common;
use common::{ok, single_int};

#[test]
fn classic_commits_hold_row_locks_until_durable_and_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config { commit_model: CommitModel::Classic, ..Config::default() };
    let engine = Engine::open(dir.path(), config).unwrap();
    let db: Arc<Database> = Database::open(engine, SessionConfig::default()).unwrap();
    let mut s = db.session("kiln", "kiln", 1).unwrap();
    ok(&mut s, "CREATE TABLE counter (k int PRIMARY KEY, v int NOT NULL)");
    ok(&mut s, "INSERT INTO counter VALUES (1, 0)");

    const THREADS: usize = 8;
    const INCREMENTS: usize = 100;
    let workers: Vec<_> = (0..THREADS)
        .map(|i| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut s = db.session("kiln", "kiln", 2 + i as i32).unwrap();
                ok(&mut s, "SET default_transaction_isolation = 'read committed'");
                for _ in 0..INCREMENTS {
                    ok(&mut s, "UPDATE counter SET v = v + 1 WHERE k = 1");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let total = single_int(&ok(&mut s, "SELECT v FROM counter WHERE k = 1"));
    assert_eq!(total, (THREADS * INCREMENTS) as i64, "updates were lost");
}
