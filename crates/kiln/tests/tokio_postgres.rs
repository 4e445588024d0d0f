//! tokio-postgres (Rust) against a `kiln serve` process: prepared statements with binary
//! parameters and results, transactions, errors with SQLSTATEs, COPY, cancellation and
//! notifications.

mod common;

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio_postgres::error::SqlState;
use tokio_postgres::{AsyncMessage, NoTls};

async fn connect(
    kiln: &common::Kiln,
) -> (tokio_postgres::Client, tokio::sync::mpsc::UnboundedReceiver<tokio_postgres::Notification>) {
    let (client, mut connection) =
        tokio_postgres::connect(&kiln.conninfo(), NoTls).await.expect("connects");
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(m) = messages.next().await {
            match m {
                Ok(AsyncMessage::Notification(n)) => {
                    let _ = tx.send(n);
                }
                Ok(_) => {}
                Err(e) => panic!("connection error: {e}"),
            }
        }
    });
    (client, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_postgres_client() {
    let kiln = common::Kiln::start(&[]);
    let (mut client, mut notes) = connect(&kiln).await;
    client
        .batch_execute("CREATE TABLE acc (id bigint PRIMARY KEY, owner text NOT NULL, balance int, flag boolean, score double precision)")
        .await
        .unwrap();

    // Prepared statements: parameter types inferred by the server, binary values both ways.
    let insert = client.prepare("INSERT INTO acc VALUES ($1, $2, $3, $4, $5)").await.unwrap();
    assert_eq!(insert.params().len(), 5);
    for i in 0..20i64 {
        let n = client
            .execute(
                &insert,
                &[&i, &format!("user{i}"), &(i as i32 * 10), &(i % 2 == 0), &(i as f64 / 2.0)],
            )
            .await
            .unwrap();
        assert_eq!(n, 1);
    }
    let rows = client
        .query(
            "SELECT id, owner, balance, flag, score FROM acc WHERE id >= $1 ORDER BY id",
            &[&15i64],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[0].get::<_, i64>(0), 15);
    assert_eq!(rows[0].get::<_, &str>(1), "user15");
    assert_eq!(rows[0].get::<_, i32>(2), 150);
    assert!(!rows[0].get::<_, bool>(3));
    assert_eq!(rows[0].get::<_, f64>(4), 7.5);
    let row = client.query_one("SELECT count(*), sum(balance) FROM acc", &[]).await.unwrap();
    assert_eq!(row.get::<_, i64>(0), 20);
    assert_eq!(row.get::<_, i64>(1), 1900);

    // Transactions: rollback discards, commit keeps.
    let tx = client.transaction().await.unwrap();
    tx.execute("UPDATE acc SET balance = 0 WHERE id = $1", &[&1i64]).await.unwrap();
    tx.rollback().await.unwrap();
    let tx = client.transaction().await.unwrap();
    tx.execute("UPDATE acc SET balance = balance + 1 WHERE id = $1", &[&2i64]).await.unwrap();
    tx.commit().await.unwrap();
    let b: i32 =
        client.query_one("SELECT balance FROM acc WHERE id = 1", &[]).await.unwrap().get(0);
    assert_eq!(b, 10);
    let b: i32 =
        client.query_one("SELECT balance FROM acc WHERE id = 2", &[]).await.unwrap().get(0);
    assert_eq!(b, 21);

    // Errors carry SQLSTATEs, and the connection stays usable.
    let e = client.execute("INSERT INTO acc VALUES (1, 'dup', 0, true, 0)", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::UNIQUE_VIOLATION));
    let e = client.execute("INSERT INTO acc (id) VALUES (99)", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::NOT_NULL_VIOLATION));
    let e = client.query("SELECT * FROM missing", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::UNDEFINED_TABLE));
    let e = client.prepare("SELEC $1").await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::SYNTAX_ERROR));
    assert_eq!(client.query_one("SELECT 1::int", &[]).await.unwrap().get::<_, i32>(0), 1);

    // COPY FROM STDIN and TO STDOUT.
    client.batch_execute("CREATE TABLE cp (a int PRIMARY KEY, b text)").await.unwrap();
    let sink = client.copy_in("COPY cp (a, b) FROM STDIN").await.unwrap();
    futures::pin_mut!(sink);
    let mut data = String::new();
    for i in 0..100 {
        data.push_str(&format!("{i}\tval {i}\n"));
    }
    sink.send(bytes::Bytes::from(data)).await.unwrap();
    assert_eq!(sink.finish().await.unwrap(), 100);
    let stream = client.copy_out("COPY (SELECT a, b FROM cp WHERE a < 3) TO STDOUT").await.unwrap();
    let chunks: Vec<bytes::Bytes> = stream.map(|c| c.unwrap()).collect().await;
    let text: String = chunks.iter().map(|c| String::from_utf8_lossy(c).into_owned()).collect();
    assert_eq!(text, "0\tval 0\n1\tval 1\n2\tval 2\n");

    // Cancel a long statement from another task.
    let token = client.cancel_token();
    let canceler = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        token.cancel_query(NoTls).await.unwrap();
    });
    let e = client
        .query(
            "SELECT count(*) FROM generate_series(1, 5000000) AS a, generate_series(1, 1000) AS b",
            &[],
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::QUERY_CANCELED));
    canceler.await.unwrap();

    // Durability notifications for this session's commits.
    client.batch_execute("LISTEN kiln_durable; SET synchronous_commit = off").await.unwrap();
    client.execute("UPDATE acc SET balance = 5 WHERE id = 3", &[]).await.unwrap();
    let id: String = client.query_one("SELECT kiln_last_txid()", &[]).await.unwrap().get(0);
    let n = tokio::time::timeout(Duration::from_secs(5), notes.recv())
        .await
        .expect("a notification")
        .unwrap();
    assert_eq!(n.channel(), "kiln_durable");
    assert_eq!(n.payload(), id);
}

/// Upserts on a unique column that is not the primary key, from several sessions at once:
/// each one either inserts the row or updates the one in the way (a session waits for the
/// one that inserted the key, then sees its row), so every increment counts and none fails;
/// a row skipped by DO NOTHING leaves no index entry behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_upserts_on_a_unique_column_count_every_one() {
    let kiln = common::Kiln::start(&[]);
    let (setup, _) = connect(&kiln).await;
    setup
        .batch_execute(
            "CREATE TABLE hits (id serial PRIMARY KEY, page text UNIQUE, n int NOT NULL);
             CREATE TABLE two (id int PRIMARY KEY, a int UNIQUE, b int UNIQUE);
             INSERT INTO two VALUES (1, 1, 1);",
        )
        .await
        .expect("schema");
    const SESSIONS: usize = 6;
    const EACH: usize = 40;
    let mut tasks = Vec::new();
    for s in 0..SESSIONS {
        let kiln_conninfo = kiln.conninfo();
        tasks.push(tokio::spawn(async move {
            let (client, connection) =
                tokio_postgres::connect(&kiln_conninfo, NoTls).await.expect("connects");
            tokio::spawn(connection);
            let upsert = client
                .prepare(
                    "INSERT INTO hits (page, n) VALUES ($1, 1)
                     ON CONFLICT (page) DO UPDATE SET n = hits.n + 1 RETURNING n",
                )
                .await
                .expect("prepares");
            for i in 0..EACH {
                // Every session hits the shared page; each also has a page of its own.
                let page = if i % 2 == 0 { "shared".to_string() } else { format!("own{s}") };
                client.query_one(&upsert, &[&page]).await.expect("an upsert never fails");
            }
        }));
    }
    for t in tasks {
        t.await.expect("session");
    }
    let rows = setup.query("SELECT page, n FROM hits ORDER BY page", &[]).await.expect("reads");
    let counts: Vec<(String, i32)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let mut expected = vec![("shared".to_string(), (SESSIONS * EACH / 2) as i32)];
    for s in 0..SESSIONS {
        expected.push((format!("own{s}"), (EACH / 2) as i32));
    }
    expected.sort();
    assert_eq!(counts, expected);

    // A row DO NOTHING skips for its second unique key leaves no entry under its first.
    let skipped = setup
        .execute("INSERT INTO two VALUES (2, 2, 1) ON CONFLICT DO NOTHING", &[])
        .await
        .expect("skips");
    assert_eq!(skipped, 0);
    setup.execute("INSERT INTO two VALUES (3, 2, 3)", &[]).await.expect("a = 2 is free");
    let err = setup
        .execute("INSERT INTO two VALUES (4, 2, 4) ON CONFLICT (b) DO NOTHING", &[])
        .await
        .expect_err("a conflict on a key that is not the arbiter fails");
    assert_eq!(err.code(), Some(&SqlState::UNIQUE_VIOLATION));
}

/// Whether `query` (which takes an advisory lock) is still waiting after `ms` milliseconds.
async fn still_waiting<T>(handle: &tokio::task::JoinHandle<T>, ms: u64) -> bool {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    !handle.is_finished()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advisory_locks_exclude_wait_and_go_with_their_holder() {
    let kiln = common::Kiln::start(&[]);
    let (a, _) = connect(&kiln).await;
    let (b, _) = connect(&kiln).await;
    let (b, a) = (std::sync::Arc::new(b), std::sync::Arc::new(a));
    let try_lock = |c: std::sync::Arc<tokio_postgres::Client>, sql: &'static str| async move {
        c.query_one(sql, &[]).await.unwrap().get::<_, bool>(0)
    };

    // A session-level lock excludes others until unlocked as often as it was locked.
    a.batch_execute("SELECT pg_advisory_lock(42); SELECT pg_advisory_lock(42)").await.unwrap();
    assert!(!try_lock(b.clone(), "SELECT pg_try_advisory_lock(42)").await);
    let waiter = {
        let b = b.clone();
        tokio::spawn(async move { b.batch_execute("SELECT pg_advisory_lock(42)").await })
    };
    assert!(still_waiting(&waiter, 300).await, "b waits while a holds the lock");
    assert!(try_lock(a.clone(), "SELECT pg_advisory_unlock(42)").await);
    assert!(still_waiting(&waiter, 300).await, "a still holds it once");
    assert!(try_lock(a.clone(), "SELECT pg_advisory_unlock(42)").await);
    waiter.await.unwrap().expect("b takes the lock once a lets it go");
    assert!(!try_lock(a.clone(), "SELECT pg_try_advisory_lock(42)").await);
    assert!(!try_lock(a.clone(), "SELECT pg_advisory_unlock(42)").await, "a holds nothing");
    b.batch_execute("SELECT pg_advisory_unlock_all()").await.unwrap();

    // Shared holders share; an exclusive one waits for all of them.
    a.batch_execute("SELECT pg_advisory_lock_shared(7)").await.unwrap();
    assert!(try_lock(b.clone(), "SELECT pg_try_advisory_lock_shared(7)").await);
    assert!(!try_lock(b.clone(), "SELECT pg_try_advisory_lock(7)").await);
    a.batch_execute("SELECT pg_advisory_unlock_all()").await.unwrap();
    b.batch_execute("DISCARD ALL").await.unwrap();
    assert!(try_lock(a.clone(), "SELECT pg_try_advisory_lock(7)").await, "DISCARD ALL unlocks");
    a.batch_execute("SELECT pg_advisory_unlock(7)").await.unwrap();

    // A transaction-level lock goes at the end of its transaction, commit or rollback, and
    // with a rollback to a savepoint taken before it; a session-level one stays.
    a.batch_execute("BEGIN; SELECT pg_advisory_xact_lock(1); SELECT pg_advisory_lock(2)")
        .await
        .unwrap();
    a.batch_execute("SAVEPOINT s; SELECT pg_advisory_xact_lock(3); ROLLBACK TO SAVEPOINT s")
        .await
        .unwrap();
    assert!(try_lock(b.clone(), "SELECT pg_try_advisory_lock(3)").await);
    assert!(!try_lock(b.clone(), "SELECT pg_try_advisory_lock(1)").await);
    a.batch_execute("ROLLBACK").await.unwrap();
    assert!(try_lock(b.clone(), "SELECT pg_try_advisory_lock(1)").await);
    assert!(!try_lock(b.clone(), "SELECT pg_try_advisory_lock(2)").await, "session lock stays");
    b.batch_execute("SELECT pg_advisory_unlock_all()").await.unwrap();

    // lock_timeout bounds the wait (55P03).
    let err =
        b.batch_execute("SET lock_timeout = 200; SELECT pg_advisory_lock(2)").await.unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::LOCK_NOT_AVAILABLE), "{err}");
    b.batch_execute("RESET lock_timeout").await.unwrap();

    // A wait that closes a cycle is a deadlock (40P01) for one of the two, and the other
    // then gets its lock.
    b.batch_execute("SELECT pg_advisory_lock(10)").await.unwrap();
    let a_waits = {
        let a = a.clone();
        tokio::spawn(async move { a.batch_execute("SELECT pg_advisory_lock(10)").await })
    };
    assert!(still_waiting(&a_waits, 200).await);
    let err = b.batch_execute("SELECT pg_advisory_lock(2)").await.unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::T_R_DEADLOCK_DETECTED), "{err}");
    b.batch_execute("SELECT pg_advisory_unlock(10)").await.unwrap();
    a_waits.await.unwrap().expect("a gets lock 10 once b gives it up");

    // A session's locks end with it.
    drop(a);
    let mut freed = false;
    for _ in 0..50 {
        if try_lock(b.clone(), "SELECT pg_try_advisory_lock(2)").await {
            freed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(freed, "a closed connection's advisory locks are released");
}

/// The notifications that arrive within `ms` milliseconds.
async fn heard(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<tokio_postgres::Notification>,
    ms: u64,
) -> Vec<(String, String, i32)> {
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(ms);
    while let Ok(Some(n)) = tokio::time::timeout_at(deadline, rx.recv()).await {
        out.push((n.channel().to_string(), n.payload().to_string(), n.process_id()));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notify_reaches_listeners_at_commit_and_only_then() {
    let kiln = common::Kiln::start(&[]);
    let (a, mut a_rx) = connect(&kiln).await;
    let (b, _) = connect(&kiln).await;
    let b_pid: i32 = b.query_one("SELECT pg_backend_pid()", &[]).await.unwrap().get(0);
    let a_pid: i32 = a.query_one("SELECT pg_backend_pid()", &[]).await.unwrap().get(0);
    a.batch_execute("LISTEN jobs; LISTEN \"Mixed\"").await.unwrap();

    // Sent at the commit, in order, each (channel, payload) once, with the sender's pid.
    b.batch_execute("BEGIN; NOTIFY jobs, 'one'; SELECT pg_notify('jobs', 'two'); NOTIFY jobs, 'one'; SELECT pg_notify('Mixed', NULL); NOTIFY other, 'x'")
        .await
        .unwrap();
    assert!(heard(&mut a_rx, 300).await.is_empty(), "nothing before the commit");
    b.batch_execute("COMMIT").await.unwrap();
    let got = heard(&mut a_rx, 1000).await;
    let want = vec![
        ("jobs".to_string(), "one".to_string(), b_pid),
        ("jobs".to_string(), "two".to_string(), b_pid),
        ("Mixed".to_string(), String::new(), b_pid),
    ];
    assert_eq!(got, want);

    // A rolled-back transaction sends nothing; a rollback to a savepoint drops what was
    // sent after it.
    b.batch_execute("BEGIN; NOTIFY jobs, 'lost'; ROLLBACK").await.unwrap();
    b.batch_execute(
        "BEGIN; NOTIFY jobs, 'kept'; SAVEPOINT s; NOTIFY jobs, 'undone'; ROLLBACK TO SAVEPOINT s; COMMIT",
    )
    .await
    .unwrap();
    let got = heard(&mut a_rx, 500).await;
    assert_eq!(got, vec![("jobs".to_string(), "kept".to_string(), b_pid)]);

    // A listener in a transaction block hears them when its block ends; a session hears its
    // own NOTIFYs; UNLISTEN stops them.
    a.batch_execute("BEGIN").await.unwrap();
    b.batch_execute("NOTIFY jobs, 'while busy'").await.unwrap();
    a.batch_execute("SELECT 1").await.unwrap();
    assert!(heard(&mut a_rx, 300).await.is_empty(), "held while a's block is open");
    a.batch_execute("COMMIT").await.unwrap();
    assert_eq!(heard(&mut a_rx, 1000).await, vec![("jobs".into(), "while busy".into(), b_pid)]);
    a.batch_execute("NOTIFY jobs, 'self'").await.unwrap();
    assert_eq!(heard(&mut a_rx, 1000).await, vec![("jobs".into(), "self".into(), a_pid)]);
    a.batch_execute("UNLISTEN jobs").await.unwrap();
    b.batch_execute("NOTIFY jobs, 'unheard'").await.unwrap();
    assert!(heard(&mut a_rx, 300).await.is_empty());

    // PostgreSQL's limits, and Kiln's durability channels are not for NOTIFY.
    for (sql, code) in [
        ("SELECT pg_notify('', 'x')", SqlState::INVALID_PARAMETER_VALUE),
        ("SELECT pg_notify(NULL, 'x')", SqlState::INVALID_PARAMETER_VALUE),
        ("SELECT pg_notify(repeat('c', 64), 'x')", SqlState::INVALID_PARAMETER_VALUE),
        ("SELECT pg_notify('c', repeat('p', 8000))", SqlState::INVALID_PARAMETER_VALUE),
        ("NOTIFY kiln_durable, '1.1'", SqlState::RESERVED_NAME),
        ("NOTIFY kiln_durable_local", SqlState::RESERVED_NAME),
    ] {
        let err = b.batch_execute(sql).await.unwrap_err();
        assert_eq!(err.code(), Some(&code), "{sql}: {err}");
    }
    b.batch_execute("SELECT pg_notify('c', repeat('p', 7999))").await.unwrap();
}

/// An enum label as a parameter or result (tokio-postgres takes enum types as its client
/// code defines them; this one takes any).
#[derive(Debug, PartialEq)]
struct Label(String);

impl tokio_postgres::types::ToSql for Label {
    fn to_sql(
        &self,
        _: &tokio_postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(self.0.as_bytes());
        Ok(tokio_postgres::types::IsNull::No)
    }

    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        matches!(ty.kind(), tokio_postgres::types::Kind::Enum(_))
    }

    tokio_postgres::types::to_sql_checked!();
}

impl<'a> tokio_postgres::types::FromSql<'a> for Label {
    fn from_sql(
        _: &tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Label, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Label(std::str::from_utf8(raw)?.to_string()))
    }

    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        matches!(ty.kind(), tokio_postgres::types::Kind::Enum(_))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enum_types_are_resolved_and_take_labels_added_after_prepare() {
    let kiln = common::Kiln::start(&[]);
    let (a, _) = connect(&kiln).await;
    let (b, _) = connect(&kiln).await;
    a.batch_execute(
        "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
         CREATE TABLE moods (id int PRIMARY KEY, m mood NOT NULL, past mood[]);
         INSERT INTO moods VALUES (1, 'happy', '{sad,ok}'), (2, 'sad', '{}');",
    )
    .await
    .unwrap();
    // The client looks the type up in the catalogs (binding an oid parameter) and finds an
    // enum type with its labels, for the parameter and the result column alike.
    let by_mood =
        a.prepare("SELECT id, m, past FROM moods WHERE m >= $1 ORDER BY m").await.unwrap();
    let kind = |t: &tokio_postgres::types::Type| t.kind().clone();
    let labels = tokio_postgres::types::Kind::Enum(vec!["sad".into(), "ok".into(), "happy".into()]);
    assert_eq!(by_mood.params()[0].name(), "mood");
    assert_eq!(kind(&by_mood.params()[0]), labels);
    assert_eq!(kind(by_mood.columns()[1].type_()), labels);
    assert_eq!(by_mood.columns()[2].type_().name(), "_mood");
    let rows = a.query(&by_mood, &[&Label("sad".into())]).await.unwrap();
    let got: Vec<(i32, Label, Vec<Label>)> =
        rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect();
    assert_eq!(
        got,
        [
            (2, Label("sad".into()), vec![]),
            (1, Label("happy".into()), vec![Label("sad".into()), Label("ok".into())])
        ]
    );
    let err = a.query(&by_mood, &[&Label("angry".into())]).await.unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::INVALID_TEXT_REPRESENTATION));
    // Another session adds a label and uses it; the statement prepared before takes it.
    b.batch_execute(
        "ALTER TYPE mood ADD VALUE 'elated'; INSERT INTO moods VALUES (3, 'elated', NULL)",
    )
    .await
    .unwrap();
    let rows = a.query(&by_mood, &[&Label("elated".into())]).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, Label>(1), Label("elated".into()));
    // An insert prepared before the change takes the new label too.
    let insert = b.prepare("INSERT INTO moods VALUES ($1, $2)").await.unwrap();
    b.batch_execute("ALTER TYPE mood ADD VALUE 'calm' BEFORE 'ok'").await.unwrap();
    b.execute(&insert, &[&4i32, &Label("calm".into())]).await.unwrap();
    let order: Vec<i32> = a
        .query("SELECT id FROM moods ORDER BY m", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(order, [2, 4, 1, 3]);
}
