//! Starts a real `kiln serve` process on a free loopback port for a test, and stops it (with
//! SIGTERM, then SIGKILL) when dropped.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free loopback port for a server a test starts on a port it chooses (a cluster's
/// members must know each other's ports before any starts). Chosen below the kernel's
/// ephemeral range (32768 and up on Linux): a port taken from that range and released can
/// be handed to another process's outgoing connection — a cluster's own peers dialling each
/// other — before the server binds it, which made a cluster test fail with "Address
/// already in use".
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let seed = u64::from(std::process::id())
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
    loop {
        // A well-mixed step (splitmix64) over the seed and a counter.
        let mut z = seed.wrapping_add(NEXT.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let port = 20_000 + (z % 12_000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// A running server.
pub struct Kiln {
    pub child: Option<Child>,
    pub addr: SocketAddr,
    pub metrics: Option<SocketAddr>,
    pub dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
}

/// Fails with a message naming the missing tool (CI installs them; see .ci/run).
pub fn require(tool: &str) -> PathBuf {
    let candidates = [
        format!("/usr/lib/postgresql/15/bin/{tool}"),
        format!("/usr/bin/{tool}"),
        format!("/usr/local/bin/{tool}"),
    ];
    for c in candidates {
        if Path::new(&c).exists() {
            return PathBuf::from(c);
        }
    }
    panic!(
        "{tool} is required for this test (Debian: apt-get install postgresql-client postgresql)"
    );
}

impl Kiln {
    /// Starts a server on a fresh data directory.
    pub fn start(args: &[&str]) -> Kiln {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path().to_path_buf();
        let mut k = Kiln::start_in(&dir, args);
        k._tmp = Some(tmp);
        k
    }

    /// Starts a server on `dir` (kept when the server stops).
    pub fn start_in(dir: &Path, args: &[&str]) -> Kiln {
        Kiln::start_at(dir, "127.0.0.1:0", args)
    }

    /// Starts a server on `dir` (kept when the server stops) listening on `listen`.
    pub fn start_at(dir: &Path, listen: &str, args: &[&str]) -> Kiln {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kiln"));
        cmd.arg("serve")
            .arg("--data-dir")
            .arg(dir)
            .args(["--listen", listen, "--metrics-listen", "127.0.0.1:0"])
            .args(args)
            // KILN_TEST_SERVER_LOG=<filter> (any value but 1) sets the servers' log filter.
            .env(
                "KILN_LOG",
                std::env::var("KILN_TEST_SERVER_LOG")
                    .ok()
                    .filter(|f| f != "1")
                    .unwrap_or_else(|| "warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("kiln starts");
        let stderr = child.stderr.take().expect("stderr piped");
        let mut reader = BufReader::new(stderr);
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut line = String::new();
        let mut said = String::new();
        let (addr, metrics) = loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || Instant::now() > deadline {
                let _ = child.kill();
                panic!("kiln serve did not start; it said:\n{said}");
            }
            said.push_str(&line);
            if let Some(rest) = line.strip_prefix("kiln: listening on ") {
                let addr: SocketAddr = rest.split_whitespace().next().unwrap().parse().unwrap();
                let metrics = line
                    .split("http://")
                    .nth(1)
                    .and_then(|m| m.split('/').next())
                    .and_then(|a| a.parse().ok());
                break (addr, metrics);
            }
        };
        // Keep draining stderr so the server never blocks on it.
        let port = addr.port();
        std::thread::spawn(move || {
            let mut sink = String::new();
            while reader.read_line(&mut sink).unwrap_or(0) > 0 {
                if std::env::var_os("KILN_TEST_SERVER_LOG").is_some() {
                    eprint!("[kiln :{port}] {sink}");
                }
                sink.clear();
            }
        });
        Kiln { child: Some(child), addr, metrics, dir: dir.to_path_buf(), _tmp: None }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// libpq connection string.
    pub fn conninfo(&self) -> String {
        format!("host=127.0.0.1 port={} user=kiln dbname=kiln", self.port())
    }

    /// Environment for libpq clients (psql, pgbench).
    pub fn pg_env(&self, cmd: &mut Command) {
        cmd.env("PGHOST", "127.0.0.1")
            .env("PGPORT", self.port().to_string())
            .env("PGUSER", "kiln")
            .env("PGDATABASE", "kiln")
            .env_remove("PGOPTIONS")
            .env("PGCONNECT_TIMEOUT", "10");
    }

    /// Runs psql with `args`, returns stdout (panics with stderr on failure).
    pub fn psql(&self, args: &[&str]) -> String {
        let mut cmd = Command::new(require("psql"));
        self.pg_env(&mut cmd);
        cmd.args(["-X", "-v", "ON_ERROR_STOP=1"]).args(args);
        let out = cmd.output().expect("psql runs");
        assert!(
            out.status.success(),
            "psql {args:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// One value from a query, through psql -At.
    pub fn query_value(&self, sql: &str) -> String {
        self.psql(&["-At", "-c", sql]).trim().to_string()
    }

    /// Stops with SIGTERM and waits; returns whether it exited cleanly.
    pub fn stop(&mut self) -> bool {
        let Some(mut child) = self.child.take() else { return true };
        unsafe_free_kill(child.id(), "TERM");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return status.success();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL, as a crash.
    pub fn crash(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Sends a signal with the kill command (the workspace forbids unsafe code).
pub fn unsafe_free_kill(pid: u32, signal: &str) {
    let _ = Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).status();
}

impl Drop for Kiln {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A throwaway stock PostgreSQL (Debian's package) on a free loopback port, stopped when
/// dropped.
pub struct Postgres {
    pub port: u16,
    dir: tempfile::TempDir,
    bin: PathBuf,
}

fn as_postgres_user(cmd: &str) -> Command {
    // initdb and postgres refuse to run as root; run them as the postgres user then.
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--", "sh", "-c", cmd]);
        c
    } else {
        let mut c = Command::new("sh");
        c.args(["-c", cmd]);
        c
    }
}

impl Postgres {
    pub fn start() -> Postgres {
        let bin = require("pg_ctl").parent().unwrap().to_path_buf();
        let bin = if bin.join("initdb").exists() {
            bin
        } else {
            PathBuf::from("/usr/lib/postgresql/15/bin")
        };
        let dir = tempfile::Builder::new().prefix("kiln-pg-").tempdir().expect("temp dir");
        let _ = Command::new("chmod").args(["777", dir.path().to_str().unwrap()]).status();
        let data = dir.path().join("data");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let init = format!(
            "{}/initdb -D {} -U postgres -A trust --no-sync -E UTF8 --locale=C >/dev/null",
            bin.display(),
            data.display()
        );
        assert!(as_postgres_user(&init).status().unwrap().success(), "initdb failed");
        let start = format!(
            "{}/pg_ctl -D {} -w -l {}/log -o \"-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c timezone=UTC -c max_connections=200\" start >/dev/null",
            bin.display(),
            data.display(),
            dir.path().display(),
            dir.path().display()
        );
        assert!(
            as_postgres_user(&start).status().unwrap().success(),
            "PostgreSQL did not start: see {}/log",
            dir.path().display()
        );
        Postgres { port, dir, bin }
    }

    pub fn conninfo(&self) -> String {
        format!("host=127.0.0.1 port={} user=postgres dbname=postgres", self.port)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let stop = format!(
            "{}/pg_ctl -D {}/data -m immediate stop >/dev/null 2>&1",
            self.bin.display(),
            self.dir.path().display()
        );
        let _ = as_postgres_user(&stop).status();
    }
}

/// A tokio-postgres client whose connection runs on the test's runtime.
pub async fn connect(conninfo: &str) -> tokio_postgres::Client {
    let (client, connection) =
        tokio_postgres::connect(conninfo, tokio_postgres::NoTls).await.expect("connects");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// One row of a read-only query, retried while it fails with 40001. A node that has not yet
/// learned that some of its commits were lost (a partitioned or restarted leader catching
/// up) gives its statements snapshots that include them; when it learns, such a statement
/// cannot commit and is answered 40001, which a client retries like any serialization
/// failure. Any other error fails the test.
pub async fn read_one(
    client: &tokio_postgres::Client,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> tokio_postgres::Row {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match client.query_one(sql, params).await {
            Ok(row) => return row,
            Err(e)
                if e.code()
                    == Some(&tokio_postgres::error::SqlState::T_R_SERIALIZATION_FAILURE) =>
            {
                assert!(Instant::now() < deadline, "{sql} kept failing: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{sql}: {e}"),
        }
    }
}

/// Runs a tool the test needs and returns its standard output; panics with both of its
/// outputs when it cannot start or fails (CI installs the tools; see .ci/run).
pub fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e} (CI installs it; see .ci/run)"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Panics with the lines where `got` differs from `expected`, then all of `got`.
pub fn assert_same(what: &str, expected: &str, got: &str) {
    if expected == got {
        return;
    }
    let mut diff: Vec<String> = expected
        .lines()
        .zip(got.lines())
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(i, (a, b))| format!("line {i}:\n  expected: {a}\n  got:      {b}"))
        .collect();
    if diff.is_empty() {
        diff.push(format!(
            "{} lines expected, {} lines got",
            expected.lines().count(),
            got.lines().count()
        ));
    }
    panic!("{what} differs:\n{}\n\n{got}", diff.join("\n"));
}

/// Fetches the dependencies `pom` names from Maven Central into `work/lib` and compiles
/// `sources` against them into `work/classes`; returns the class path of both.
pub fn build_java(pom: &Path, sources: &[PathBuf], work: &Path) -> String {
    let lib = work.join("lib");
    let classes = work.join("classes");
    run(
        Command::new("mvn")
            .args(["-q", "-B", "-f"])
            .arg(pom)
            .arg("dependency:copy-dependencies")
            .arg(format!("-DoutputDirectory={}", lib.display())),
        "mvn (fetches the dependencies)",
    );
    run(
        Command::new("javac")
            .args(["-cp", &format!("{}/*", lib.display()), "-d"])
            .arg(&classes)
            .args(sources),
        "javac",
    );
    format!("{}:{}/*", classes.display(), lib.display())
}
