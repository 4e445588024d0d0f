//! No client input may take the server down, hang it, or leave something behind for others:
//! deep and huge statements get 54001 and the server lives on; a panic ends one connection
//! (XX000) and releases its row locks; pg_stat_activity shows what runs, and
//! pg_cancel_backend / pg_terminate_backend / a vanished client stop it; SHOW and
//! DEALLOCATE work through the extended protocol as drivers use them.

mod common;

use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio_postgres::{AsyncMessage, Client, NoTls};

/// A connection whose driver task ends quietly when the server closes it.
async fn connect(kiln: &common::Kiln) -> Client {
    let (client, mut connection) =
        tokio_postgres::connect(&kiln.conninfo(), NoTls).await.expect("connects");
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(m)) = messages.next().await {
            let _: AsyncMessage = m;
        }
    });
    client
}

fn code(e: &tokio_postgres::Error) -> String {
    e.code().map(|c| c.code().to_string()).unwrap_or_else(|| format!("no SQLSTATE: {e}"))
}

async fn alive(kiln: &common::Kiln) {
    let c = connect(kiln).await;
    let v: i32 = c.query_one("SELECT 1", &[]).await.expect("server alive").get(0);
    assert_eq!(v, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_statements_get_errors_and_the_server_lives_on() {
    let kiln = common::Kiln::start(&[]);
    let c = connect(&kiln).await;
    // Left-deep chains of every length up to far past the limits: an answer, never a crash.
    for n in [100usize, 1_000, 3_900, 5_000, 20_000, 200_000] {
        let sql = format!("SELECT 1{}", " + 1".repeat(n));
        match c.simple_query(&sql).await {
            Ok(_) => assert!(n < kiln_sql::parse::EXPRESSION_DEPTH_MAX, "{n} terms accepted"),
            Err(e) => assert_eq!(code(&e), "54001", "{n} terms"),
        }
        let chain = format!("SELECT 1 WHERE {}", vec!["1 = 1"; n].join(" OR "));
        match c.simple_query(&chain).await {
            Ok(_) => assert!(n < kiln_sql::parse::EXPRESSION_DEPTH_MAX),
            Err(e) => assert_eq!(code(&e), "54001", "OR chain of {n}"),
        }
    }
    let nested = format!("SELECT {}1{}", "(".repeat(500), ")".repeat(500));
    assert_eq!(code(&c.simple_query(&nested).await.unwrap_err()), "54001");
    let subqueries = format!("SELECT {}1{}", "(SELECT ".repeat(300), ")".repeat(300));
    assert_eq!(code(&c.simple_query(&subqueries).await.unwrap_err()), "54001");
    // The same through the extended protocol.
    let deep = format!("SELECT 1{}", " + 1".repeat(50_000));
    assert_eq!(code(&c.prepare(&deep).await.unwrap_err()), "54001");

    // A row-value IN list of 5,000 pairs is a list, not a 5,000-deep tree.
    c.batch_execute("CREATE TABLE pairs (a int, b int, PRIMARY KEY (a, b))").await.unwrap();
    c.batch_execute("INSERT INTO pairs SELECT g, g FROM generate_series(1, 100) AS s (g)")
        .await
        .unwrap();
    let pairs: Vec<String> = (0..5_000).map(|i| format!("({i}, {i})")).collect();
    let sql = format!("SELECT count(*) FROM pairs WHERE (a, b) IN ({})", pairs.join(", "));
    let rows = c.simple_query(&sql).await.unwrap();
    let count = rows.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
        _ => None,
    });
    assert_eq!(count.as_deref(), Some("100"));

    // LIKE with many wildcards over a long string, and huge values, answer at once.
    let started = Instant::now();
    let like = format!("SELECT repeat('a', 100000) LIKE '{}b'", "%a".repeat(200));
    c.simple_query(&like).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(20), "LIKE took {:?}", started.elapsed());
    let big = c.simple_query("SELECT repeat('x', 1000000000)").await.unwrap_err();
    assert_eq!(code(&big), "54000");
    // Invalid input everywhere gives an error, never a dead connection.
    for bad in [
        "SELECT '\u{0}'",
        "SELECT 1 +",
        "SELECT * FROM t WHERE k > 5 AND k < 3",
        "SELECT -(-9223372036854775807 - 1)",
        "SELECT date '2000-01-01' - 2147483647",
        "UPDATE pairs SET a = 1, a = 2",
    ] {
        assert!(c.simple_query(bad).await.is_err(), "{bad}");
    }
    alive(&kiln).await;
    let v: i32 = c.query_one("SELECT 2", &[]).await.unwrap().get(0);
    assert_eq!(v, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_ends_one_connection_and_releases_its_locks() {
    let kiln = common::Kiln::start(&["--enable-fault-injection"]);
    let a = connect(&kiln).await;
    let b = connect(&kiln).await;
    a.batch_execute("CREATE TABLE t (k int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0)")
        .await
        .unwrap();
    a.batch_execute("BEGIN; UPDATE t SET v = 1 WHERE k = 1").await.unwrap();
    let e = a.simple_query("SELECT kiln_fault_panic()").await.unwrap_err();
    assert_eq!(code(&e), "XX000");
    assert!(a.simple_query("SELECT 1").await.is_err(), "the connection is closed");
    // The row lock went with the connection: another session updates the row at once, and
    // the panicked transaction's update was rolled back.
    b.batch_execute("SET lock_timeout = 5000").await.unwrap();
    let n = b.execute("UPDATE t SET v = v + 10 WHERE k = 1", &[]).await.unwrap();
    assert_eq!(n, 1);
    let v: i32 = b.query_one("SELECT v FROM t WHERE k = 1", &[]).await.unwrap().get(0);
    assert_eq!(v, 10);
    alive(&kiln).await;
}

async fn state_of(c: &Client, pid: i32) -> Option<(String, Option<String>, Option<String>)> {
    let rows = c
        .query("SELECT state, query, wait_event_type FROM pg_stat_activity WHERE pid = $1", &[&pid])
        .await
        .unwrap();
    rows.first().map(|r| (r.get(0), r.get(1), r.get(2)))
}

async fn wait_for_state(c: &Client, pid: i32, state: &str, wait: Option<&str>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = state_of(c, pid).await;
        if now.as_ref().is_some_and(|(s, _, w)| s == state && w.as_deref() == wait) {
            return;
        }
        assert!(Instant::now() < deadline, "pid {pid} never reached {state}/{wait:?}: {now:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_statements_are_seen_and_stopped() {
    let kiln = common::Kiln::start(&[]);
    let admin = connect(&kiln).await;
    let worker = connect(&kiln).await;
    let pid: i32 = worker.query_one("SELECT pg_backend_pid()", &[]).await.unwrap().get(0);
    admin
        .batch_execute("CREATE TABLE q (k int PRIMARY KEY, v int); INSERT INTO q VALUES (1, 0)")
        .await
        .unwrap();

    // pg_stat_activity shows the running statement; pg_cancel_backend stops it (57014) and
    // the session carries on.
    let sleeping = tokio::spawn(async move {
        let r = worker.simple_query("SELECT pg_sleep(60)").await;
        (worker, r)
    });
    wait_for_state(&admin, pid, "active", None).await;
    let (_, query, _) = state_of(&admin, pid).await.unwrap();
    assert_eq!(query.as_deref(), Some("SELECT pg_sleep(60)"));
    let canceled: bool =
        admin.query_one("SELECT pg_cancel_backend($1)", &[&pid]).await.unwrap().get(0);
    assert!(canceled);
    let (worker, r) = sleeping.await.unwrap();
    assert_eq!(code(&r.unwrap_err()), "57014");
    worker.batch_execute("SELECT 1").await.unwrap();

    // Waiting for a row lock shows as wait_event_type Lock; idle in a block shows its state.
    admin.batch_execute("BEGIN; UPDATE q SET v = 1 WHERE k = 1").await.unwrap();
    let updating = tokio::spawn(async move {
        let r = worker.simple_query("UPDATE q SET v = 2 WHERE k = 1").await;
        (worker, r)
    });
    wait_for_state(&connect(&kiln).await, pid, "active", Some("Lock")).await;
    admin.batch_execute("COMMIT").await.unwrap();
    let (worker, r) = updating.await.unwrap();
    r.unwrap();
    worker.batch_execute("BEGIN").await.unwrap();
    wait_for_state(&admin, pid, "idle in transaction", Some("Client")).await;

    // pg_terminate_backend ends even an idle session: its next statement fails.
    let ended: bool =
        admin.query_one("SELECT pg_terminate_backend($1)", &[&pid]).await.unwrap().get(0);
    assert!(ended);
    let deadline = Instant::now() + Duration::from_secs(10);
    while state_of(&admin, pid).await.is_some() {
        assert!(Instant::now() < deadline, "terminated session still listed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(worker.simple_query("SELECT 1").await.is_err());
    let none: bool =
        admin.query_one("SELECT pg_cancel_backend(2147483647)", &[]).await.unwrap().get(0);
    assert!(!none);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_client_stops_its_statement_and_frees_its_locks() {
    let kiln = common::Kiln::start(&[]);
    let admin = connect(&kiln).await;
    admin
        .batch_execute("CREATE TABLE r (k int PRIMARY KEY, v int); INSERT INTO r VALUES (1, 0)")
        .await
        .unwrap();
    // A raw connection (so the test can close its socket mid-statement) locks the row and
    // starts a statement that would run for a minute.
    let (client, connection) =
        tokio_postgres::connect(&kiln.conninfo(), NoTls).await.expect("connects");
    let driver = tokio::spawn(connection);
    let pid: i32 = client.query_one("SELECT pg_backend_pid()", &[]).await.unwrap().get(0);
    client.batch_execute("BEGIN; UPDATE r SET v = 1 WHERE k = 1").await.unwrap();
    let sleeper = tokio::spawn(async move { client.simple_query("SELECT pg_sleep(60)").await });
    wait_for_state(&admin, pid, "active", None).await;
    // The client goes away: the driver task (and with it the socket) is dropped.
    driver.abort();
    sleeper.abort();
    let started = Instant::now();
    admin.batch_execute("SET lock_timeout = 10000").await.unwrap();
    admin.execute("UPDATE r SET v = 2 WHERE k = 1", &[]).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    let deadline = Instant::now() + Duration::from_secs(10);
    while state_of(&admin, pid).await.is_some() {
        assert!(Instant::now() < deadline, "the vanished client's session is still listed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let v: i32 = admin.query_one("SELECT v FROM r WHERE k = 1", &[]).await.unwrap().get(0);
    assert_eq!(v, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_and_deallocate_through_the_extended_protocol() {
    let kiln = common::Kiln::start(&[]);
    let c = connect(&kiln).await;
    // tokio-postgres prepares every query: SHOW must describe its column, not NoData.
    let row = c.query_one("SHOW synchronous_commit", &[]).await.unwrap();
    assert_eq!(row.columns()[0].name(), "synchronous_commit");
    let v: String = row.get(0);
    assert_eq!(v, "on");
    let rows = c.query("SHOW ALL", &[]).await.unwrap();
    assert!(rows.len() > 5);
    let plan = c.query("EXPLAIN SELECT 1", &[]).await.unwrap();
    assert_eq!(plan[0].columns()[0].name(), "QUERY PLAN");
    // A statement the client prepared can be deallocated in SQL (one registry; tokio-postgres
    // does not tell its statements' names, so all of them).
    let stmt = c.prepare("SELECT $1::int + 1").await.unwrap();
    let v: i32 = c.query_one(&stmt, &[&1i32]).await.unwrap().get(0);
    assert_eq!(v, 2);
    c.batch_execute("DEALLOCATE ALL").await.unwrap();
    let e = c.query_one(&stmt, &[&1i32]).await.unwrap_err();
    assert_eq!(code(&e), "26000");
    // PREPARE / EXECUTE in SQL share it too.
    c.batch_execute("PREPARE twice (int) AS SELECT $1 * 2").await.unwrap();
    let r = c.simple_query("EXECUTE twice (21)").await.unwrap();
    let value = r.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
        _ => None,
    });
    assert_eq!(value.as_deref(), Some("42"));
    assert_eq!(code(&c.batch_execute("PREPARE twice AS SELECT 1").await.unwrap_err()), "42P05");
    c.batch_execute("DEALLOCATE twice").await.unwrap();
    assert_eq!(code(&c.batch_execute("DEALLOCATE twice").await.unwrap_err()), "26000");
    // Describing statements is not counted as aborted transactions.
    let before: i64 =
        c.query_one("SELECT value FROM kiln_stat WHERE name = 'aborts'", &[]).await.unwrap().get(0);
    for i in 0..20 {
        c.prepare(&format!("SELECT {i} + $1::int")).await.unwrap();
    }
    let after: i64 =
        c.query_one("SELECT value FROM kiln_stat WHERE name = 'aborts'", &[]).await.unwrap().get(0);
    assert_eq!(after, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_stalls_safe_commits_with_53100_and_they_harden_when_space_returns() {
    // No log space zero-filled ahead (it would carry commits on a full disk for a while), so
    // the very next flush finds the disk full.
    let kiln = common::Kiln::start(&["--enable-fault-injection", "--log-preallocate-bytes", "0"]);
    let c = connect(&kiln).await;
    let admin = connect(&kiln).await;
    c.batch_execute("CREATE TABLE full (k int PRIMARY KEY, v text)").await.unwrap();
    admin.batch_execute("SELECT kiln_fault_disk_full(0)").await.unwrap();
    // A safe commit cannot harden: after a bounded wait it answers 53100, naming its
    // transaction, which stays committed and visible.
    let started = Instant::now();
    let e = c.batch_execute("INSERT INTO full VALUES (1, 'one')").await.unwrap_err();
    assert_eq!(code(&e), "53100", "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(30));
    let detail = e.as_db_error().and_then(|d| d.detail()).unwrap_or_default().to_string();
    let id = detail.split_whitespace().nth(1).expect("the detail names the transaction");
    // Reads of data that is not durable yet are fast here (a safe read waits for what it
    // read to be durable, G4).
    c.batch_execute("SET synchronous_commit = off").await.unwrap();
    let status: String = c.query_one("SELECT kiln_txn_status($1)", &[&id]).await.unwrap().get(0);
    assert_eq!(status, "committed");
    let n: i64 = c.query_one("SELECT count(*) FROM full", &[]).await.unwrap().get(0);
    assert_eq!(n, 1, "the commit is visible while it waits for durability");
    // A safe commit waiting for durability can be canceled too.
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).await.unwrap().get(0);
    let waiting = tokio::spawn(async move {
        let r = c.batch_execute("/*+ SAFE */ INSERT INTO full VALUES (2, 'two')").await;
        (c, r)
    });
    wait_for_state(&admin, pid, "active", Some("IO")).await;
    admin.query_one("SELECT pg_cancel_backend($1)", &[&pid]).await.unwrap();
    let (c, r) = waiting.await.unwrap();
    assert_eq!(code(&r.unwrap_err()), "57014");
    // Space returns: both harden, nothing is lost.
    admin.batch_execute("SELECT kiln_fault_disk_full(-1)").await.unwrap();
    let status: String = c.query_one("SELECT kiln_wait($1, 10000)", &[&id]).await.unwrap().get(0);
    assert_eq!(status, "durable");
    c.batch_execute("/*+ SAFE */ INSERT INTO full VALUES (3, 'three')").await.unwrap();
    let n: i64 = c.query_one("SELECT count(*) FROM full", &[]).await.unwrap().get(0);
    assert_eq!(n, 3);
    let lost: i64 = c
        .query_one("SELECT value FROM kiln_stat WHERE name = 'lost_txns'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(lost, 0);
}

/// SIGTERM with a full disk: the server stops within a bounded time instead of waiting for
/// space forever; the fast commits that could not be made durable are reported lost after
/// the restart (never silently present or absent).
#[test]
fn sigterm_with_a_full_disk_stops_and_reports_what_was_lost() {
    let mut kiln =
        common::Kiln::start(&["--enable-fault-injection", "--log-preallocate-bytes", "0"]);
    kiln.psql(&["-c", "CREATE TABLE t (k int PRIMARY KEY)"]);
    kiln.psql(&["-c", "SELECT kiln_fault_disk_full(0)"]);
    let out = kiln.psql(&[
        "-At",
        "-c",
        "SET synchronous_commit = off",
        "-c",
        "INSERT INTO t VALUES (1)",
        "-c",
        "SELECT kiln_last_txid()",
    ]);
    let id = out.lines().last().expect("an id").trim().to_string();
    let mut child = kiln.child.take().expect("running");
    common::unsafe_free_kill(child.id(), "TERM");
    let started = Instant::now();
    let exited = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break Some(status);
        }
        if started.elapsed() > Duration::from_secs(40) {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(exited.is_some(), "the server did not stop within 40 s of SIGTERM on a full disk");
    let dir = kiln.dir.clone();
    let again = common::Kiln::start_in(&dir, &[]);
    assert_eq!(again.query_value(&format!("SELECT kiln_txn_status('{id}')")), "lost");
    assert_eq!(again.query_value("SELECT count(*) FROM t"), "0");
}

/// A message whose contents do not fill its declared length (a Query with a NUL inside)
/// used to leave its tail to be read as the next message, and the connection hung; now it is
/// refused (08P01) and closed, and the server answers everyone else (found by kiln-fuzz).
#[test]
fn a_message_shorter_than_its_length_is_refused() {
    use kiln_fuzz::wire::{cstr, message, Connection};
    let kiln = common::Kiln::start(&[]);
    let mut c = Connection::open(kiln.addr, &[]).expect("connects");
    c.send(&message(b'Q', &cstr(b"U\0P"))).unwrap();
    let outcome = c.read_until_ready(Duration::from_secs(10));
    assert!(!outcome.timed_out, "{outcome:?}");
    assert!(outcome.closed, "{outcome:?}");
    assert_eq!(outcome.errors.first().map(|e| e.1.as_str()), Some("08P01"), "{outcome:?}");
    let mut fresh = Connection::open(kiln.addr, &[]).expect("connects");
    let ok = fresh.query(b"SELECT 1", Duration::from_secs(10));
    assert!(ok.ready && ok.rows == 1 && ok.errors.is_empty(), "{ok:?}");
}
