//! Server behaviour at its edges: the connection limit (53300), SCRAM-SHA-256 and TLS when
//! configured, remote addresses refused by default, the idle-in-transaction timeout, and a
//! clean SIGTERM that keeps what was acknowledged.

mod common;

use std::process::Command;

fn psql_raw(conninfo: &str, sql: &str, password: Option<&str>) -> std::process::Output {
    let mut cmd = Command::new(common::require("psql"));
    cmd.args(["-X", "-At", "-d", conninfo, "-c", sql])
        .env_remove("PGOPTIONS")
        .env("PGCONNECT_TIMEOUT", "10");
    match password {
        Some(p) => cmd.env("PGPASSWORD", p),
        None => cmd.env_remove("PGPASSWORD"),
    };
    cmd.output().unwrap()
}

#[test]
fn connection_limit_answers_53300() {
    let kiln = common::Kiln::start(&["--max-connections", "2"]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut held = Vec::new();
        for _ in 0..2 {
            let (c, conn) =
                tokio_postgres::connect(&kiln.conninfo(), tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(conn);
            held.push(c);
        }
        let err = match tokio_postgres::connect(&kiln.conninfo(), tokio_postgres::NoTls).await {
            Ok(_) => panic!("a third connection was accepted"),
            Err(e) => e,
        };
        assert_eq!(
            err.code(),
            Some(&tokio_postgres::error::SqlState::TOO_MANY_CONNECTIONS),
            "{err}"
        );
        drop(held);
        // Slots come back when clients leave.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let (c, conn) =
            tokio_postgres::connect(&kiln.conninfo(), tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(conn);
        c.simple_query("SELECT 1").await.unwrap();
    });
}

#[test]
fn scram_and_tls() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("server.crt"), dir.path().join("server.key"));
    let ok = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-days",
            "1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs");
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let config = dir.path().join("kiln.toml");
    std::fs::write(
        &config,
        format!(
            "[auth]\nmethod = \"scram-sha-256\"\n[auth.users]\nkiln = \"s3cret\"\n[tls]\ncert = \"{}\"\nkey = \"{}\"\n",
            cert.display(),
            key.display()
        ),
    )
    .unwrap();
    let kiln = common::Kiln::start(&["--config", config.to_str().unwrap()]);
    let base = kiln.conninfo();
    // The right password, over TLS.
    let out = psql_raw(&format!("{base} sslmode=require"), "SELECT 41 + 1", Some("s3cret"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "42");
    // Without TLS too (TLS is offered, not required).
    let out = psql_raw(&format!("{base} sslmode=disable"), "SELECT 1", Some("s3cret"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // A wrong password is refused.
    let out = psql_raw(&format!("{base} sslmode=disable"), "SELECT 1", Some("nope"));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("password authentication failed"), "{stderr}");
}

#[test]
fn idle_in_transaction_timeout() {
    let kiln = common::Kiln::start(&[]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let (c, conn) =
            tokio_postgres::connect(&kiln.conninfo(), tokio_postgres::NoTls).await.unwrap();
        let handle = tokio::spawn(conn);
        c.batch_execute("CREATE TABLE t (a int PRIMARY KEY)").await.unwrap();
        c.batch_execute(
            "SET idle_in_transaction_session_timeout = 200; BEGIN; INSERT INTO t VALUES (1)",
        )
        .await
        .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
        assert!(c.simple_query("SELECT 1").await.is_err(), "the session outlived its idle timeout");
        let _ = handle.await;
        // Its transaction was rolled back.
        let (c2, conn2) =
            tokio_postgres::connect(&kiln.conninfo(), tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(conn2);
        let n: i64 = c2.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get(0);
        assert_eq!(n, 0);
    });
}

#[test]
fn sigterm_shuts_down_cleanly_and_keeps_commits() {
    let dir = tempfile::tempdir().unwrap();
    let mut kiln = common::Kiln::start_in(dir.path(), &[]);
    kiln.psql(&["-c", "CREATE TABLE t (a int PRIMARY KEY)", "-c", "INSERT INTO t VALUES (1)"]);
    // A fast commit, acknowledged before it is durable: a clean shutdown still keeps it.
    kiln.psql(&["-c", "SET synchronous_commit = off", "-c", "INSERT INTO t VALUES (2)"]);
    assert!(kiln.stop(), "kiln serve did not exit cleanly on SIGTERM");
    let kiln = common::Kiln::start_in(dir.path(), &[]);
    assert_eq!(kiln.query_value("SELECT count(*) FROM t"), "2");
}

/// A statement still running when the grace period after SIGTERM is over is interrupted and
/// its session ended (57P01): the server stops in bounded time whatever clients run.
#[test]
fn sigterm_ends_statements_still_running_after_the_grace_period() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("kiln.toml");
    std::fs::write(&config, "shutdown_grace_s = 1\n").unwrap();
    let data = dir.path().join("data");
    let mut kiln = common::Kiln::start_in(&data, &["--config", config.to_str().unwrap()]);
    let mut cmd = std::process::Command::new(common::require("psql"));
    kiln.pg_env(&mut cmd);
    let sleeper = cmd
        .args(["-X", "-c", "SELECT pg_sleep(600)"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the statement runs.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while kiln
        .query_value("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%'")
        != "1"
    {
        assert!(std::time::Instant::now() < deadline, "the sleeping statement never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let started = std::time::Instant::now();
    assert!(kiln.stop(), "kiln serve did not exit cleanly on SIGTERM");
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
    let out = sleeper.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("terminating connection due to administrator command"), "{stderr}");
}

#[test]
fn unknown_database_and_options() {
    let kiln = common::Kiln::start(&[]);
    let out = psql_raw(
        &format!("host=127.0.0.1 port={} user=kiln dbname=nosuch", kiln.port()),
        "SELECT 1",
        None,
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("database \"nosuch\" does not exist"));
    // Startup options (-c name=value) set session settings, as PGOPTIONS does.
    let out = psql_raw(
        &format!(
            "{} options='-c synchronous_commit=off -c default_transaction_isolation=serializable'",
            kiln.conninfo()
        ),
        "SHOW synchronous_commit; SHOW default_transaction_isolation",
        None,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "off\nserializable");
}
