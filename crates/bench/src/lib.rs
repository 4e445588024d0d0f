//! What Kiln's benchmark programs share: starting a release `kiln serve` and a throwaway
//! stock PostgreSQL on free loopback ports, running psql and pgbench against them, and
//! summarizing latencies.

use std::io::{BufRead, BufReader, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

pub fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

pub fn as_root(args: &[&str]) -> Command {
    if is_root() {
        let mut c = Command::new(args[0]);
        c.args(&args[1..]);
        c
    } else {
        let mut c = Command::new("sudo");
        c.args(args);
        c
    }
}

pub const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

/// Installs PostgreSQL 15, its clients and gnuplot from Debian when missing.
pub fn ensure_tools() {
    let have_pg =
        Path::new(PG_BIN).join("postgres").exists() && Path::new(PG_BIN).join("pgbench").exists();
    let have_plot = Command::new("gnuplot").arg("--version").output().is_ok();
    if have_pg && have_plot {
        return;
    }
    eprintln!("installing PostgreSQL 15 and gnuplot from Debian");
    run(as_root(&["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "update", "-q"])
        .stdin(Stdio::null()));
    run(as_root(&[
        "env",
        "DEBIAN_FRONTEND=noninteractive",
        "apt-get",
        "install",
        "-y",
        "-q",
        "--no-install-recommends",
        "postgresql-15",
        "postgresql-client-15",
        "gnuplot-nox",
    ])
    .stdin(Stdio::null()));
}

/// A server under test.
pub trait Server {
    fn port(&self) -> u16;
    fn user(&self) -> &str;
    fn database(&self) -> &str;
}

pub struct Kiln {
    pub child: Child,
    pub addr: SocketAddr,
}

impl Kiln {
    /// A release `kiln serve` on a fresh `dir`, on a free loopback port.
    pub fn start(dir: &Path, extra: &[&str]) -> Kiln {
        Kiln::start_at(dir, "127.0.0.1:0", extra)
    }

    /// A release `kiln serve` on a fresh `dir`, listening on `listen`.
    pub fn start_at(dir: &Path, listen: &str, extra: &[&str]) -> Kiln {
        let _ = std::fs::remove_dir_all(dir);
        let mut child = Command::new(root().join("target/release/kiln"))
            .arg("serve")
            .arg("--data-dir")
            .arg(dir)
            .args(["--listen", listen, "--metrics-listen", "none", "--max-connections", "300"])
            .args(extra)
            .env("KILN_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kiln starts");
        let mut reader = BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        let addr = loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                panic!("kiln serve did not start");
            }
            if let Some(rest) = line.strip_prefix("kiln: listening on ") {
                break rest.split_whitespace().next().unwrap().parse().unwrap();
            }
        };
        std::thread::spawn(move || {
            let mut sink = String::new();
            while reader.read_line(&mut sink).unwrap_or(0) > 0 {
                sink.clear();
            }
        });
        Kiln { child, addr }
    }
}

impl Drop for Kiln {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server for Kiln {
    fn port(&self) -> u16 {
        self.addr.port()
    }
    fn user(&self) -> &str {
        "kiln"
    }
    fn database(&self) -> &str {
        "kiln"
    }
}

pub struct Postgres {
    pub dir: PathBuf,
    pub port: u16,
}

pub fn as_postgres(cmd: &str) -> Command {
    if is_root() {
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
    /// A stock cluster: default settings (fsync on), synchronous_commit chosen per session.
    pub fn start(dir: &Path) -> Postgres {
        Postgres::start_with(dir, |data| {
            format!("{PG_BIN}/initdb -D {data} -U postgres -A trust -E UTF8 --locale=C >/dev/null")
        })
    }

    /// A server on a fresh `dir` and a free port, its data directory (`dir/data`) made by
    /// the shell command `fill` returns for it.
    fn start_with(dir: &Path, fill: impl FnOnce(&str) -> String) -> Postgres {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).unwrap();
        if is_root() {
            run(Command::new("chown").args(["postgres", dir.to_str().unwrap()]));
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let data = dir.join("data");
        run(&mut as_postgres(&fill(&data.display().to_string())));
        run(&mut as_postgres(&format!(
            "{PG_BIN}/pg_ctl -D {} -w -l {}/log -o \"-p {port} -k {} -c listen_addresses=127.0.0.1 -c max_connections=300\" start >/dev/null",
            data.display(),
            dir.display(),
            dir.display()
        )));
        Postgres { dir: dir.to_path_buf(), port }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = as_postgres(&format!(
            "{PG_BIN}/pg_ctl -D {}/data -m fast stop >/dev/null 2>&1",
            self.dir.display()
        ))
        .status();
    }
}

impl Server for Postgres {
    fn port(&self) -> u16 {
        self.port
    }
    fn user(&self) -> &str {
        "postgres"
    }
    fn database(&self) -> &str {
        "postgres"
    }
}

pub fn env(cmd: &mut Command, s: &dyn Server, options: &str) {
    cmd.env("PGHOST", "127.0.0.1")
        .env("PGPORT", s.port().to_string())
        .env("PGUSER", s.user())
        .env("PGDATABASE", s.database())
        .env("PGOPTIONS", options);
}

pub fn psql(s: &dyn Server, sql: &str) -> String {
    let mut cmd = Command::new(format!("{PG_BIN}/psql"));
    env(&mut cmd, s, "");
    run(cmd.args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-c", sql]))
}

/// Latencies (µs) from pgbench `-l` logs with `prefix` in `dir`, then removes them.
pub fn latencies(dir: &Path, prefix: &str) -> Vec<f64> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with(prefix) {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        for line in text.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // client_id transaction_no time script_no time_epoch time_us [...]
            if let Some(us) = fields.get(2).and_then(|t| t.parse::<f64>().ok()) {
                out.push(us);
            }
        }
        let _ = std::fs::remove_file(entry.path());
    }
    out
}

#[derive(Clone, Copy, Default, Debug)]
pub struct Stats {
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub count: usize,
}

pub fn stats(mut v: Vec<f64>) -> Stats {
    if v.is_empty() {
        return Stats::default();
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pick = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
    Stats {
        mean: v.iter().sum::<f64>() / v.len() as f64,
        p50: pick(0.5),
        p99: pick(0.99),
        count: v.len(),
    }
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if v.is_empty() {
        0.0
    } else {
        v[v.len() / 2]
    }
}

pub fn median_stats(runs: &[Stats]) -> Stats {
    Stats {
        mean: median(runs.iter().map(|s| s.mean).collect()),
        p50: median(runs.iter().map(|s| s.p50).collect()),
        p99: median(runs.iter().map(|s| s.p99).collect()),
        count: runs.iter().map(|s| s.count).sum(),
    }
}

pub fn pgbench(s: &dyn Server, options: &str, dir: &Path, args: &[String]) -> Child {
    let mut cmd = Command::new(format!("{PG_BIN}/pgbench"));
    env(&mut cmd, s, options);
    cmd.current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.spawn().expect("pgbench runs")
}

pub fn finish(child: Child) -> String {
    let out = child.wait_with_output().expect("pgbench finishes");
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "pgbench failed:\n{text}");
    text
}

pub fn field(out: &str, prefix: &str) -> Option<f64> {
    out.lines()
        .find_map(|l| l.trim().strip_prefix(prefix))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// The raw floor: 512-byte appends, each followed by fdatasync, in `dir`.
pub fn fdatasync_floor(dir: &Path) -> Stats {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("fdatasync-probe");
    let mut f =
        std::fs::OpenOptions::new().create(true).truncate(true).write(true).open(&path).unwrap();
    let buf = [7u8; 512];
    let mut v = Vec::new();
    let end = Instant::now() + Duration::from_secs(3);
    while Instant::now() < end {
        let t = Instant::now();
        f.write_all(&buf).unwrap();
        f.sync_data().unwrap();
        v.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let _ = std::fs::remove_file(&path);
    stats(v)
}

impl Postgres {
    /// Makes `primary`'s commits with `synchronous_commit = on` wait for one standby.
    pub fn require_sync_standby(&self) {
        psql(self, "ALTER SYSTEM SET synchronous_standby_names = '*'");
        psql(self, "SELECT pg_reload_conf()");
    }

    /// A streaming standby of the primary reached at `primary_port` (through a delay proxy,
    /// say), on a fresh `dir` and a free port.
    pub fn standby(dir: &Path, primary_port: u16) -> Postgres {
        Postgres::start_with(dir, |data| {
            format!(
                "{PG_BIN}/pg_basebackup -h 127.0.0.1 -p {primary_port} -U postgres -D {data} -R -X stream >/dev/null"
            )
        })
    }
}

/// A TCP proxy on a free loopback port that delays every byte by a fixed one-way delay in
/// each direction (order kept, bandwidth not limited): a network link of RTT = 2 × delay
/// between processes of one machine, where the kernel offers no delay of its own here. Each
/// direction of a connection has a reading and a writing thread; the writer sleeps with the
/// operating system's timer (tens of microseconds), not a runtime's millisecond ticks.
pub struct DelayProxy {
    /// The port clients connect to.
    pub port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl DelayProxy {
    /// Forwards connections to `target` with `one_way` delay each way.
    pub fn start(target: SocketAddr, one_way: Duration) -> DelayProxy {
        use std::sync::atomic::{AtomicBool, Ordering};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let port = listener.local_addr().unwrap().port();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::spawn(move || {
            for inbound in listener.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(inbound) = inbound else { continue };
                let Ok(outbound) = std::net::TcpStream::connect(target) else { continue };
                let _ = inbound.set_nodelay(true);
                let _ = outbound.set_nodelay(true);
                let (Ok(in2), Ok(out2)) = (inbound.try_clone(), outbound.try_clone()) else {
                    continue;
                };
                pump(inbound, out2, one_way);
                pump(outbound, in2, one_way);
            }
        });
        DelayProxy { port, stop }
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        // Wake the accepting thread so that it sees the flag.
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Copies `from` to `to` on two threads, each chunk written `delay` after it was read.
fn pump(mut from: std::net::TcpStream, mut to: std::net::TcpStream, delay: Duration) {
    use std::io::Read;
    let (tx, rx) = std::sync::mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::spawn(move || {
        for (due, bytes) in rx {
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            if to.write_all(&bytes).is_err() {
                return;
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Write);
    });
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if tx.send((Instant::now() + delay, buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
            }
        }
    });
}

/// The round-trip time a [`DelayProxy`] with `one_way` delay really gives: the mean of
/// `rounds` 64-byte ping-pongs through it to an echo server, in microseconds.
pub fn measured_rtt(one_way: Duration, rounds: usize) -> f64 {
    use std::io::Read;
    let echo = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let target = echo.local_addr().unwrap();
    std::thread::spawn(move || {
        if let Ok((mut conn, _)) = echo.accept() {
            let _ = conn.set_nodelay(true);
            let mut buf = [0u8; 64];
            while conn.read_exact(&mut buf).is_ok() && conn.write_all(&buf).is_ok() {}
        }
    });
    let proxy = DelayProxy::start(target, one_way);
    let mut client = std::net::TcpStream::connect(("127.0.0.1", proxy.port)).unwrap();
    client.set_nodelay(true).unwrap();
    let mut buf = [1u8; 64];
    let started = Instant::now();
    for _ in 0..rounds {
        client.write_all(&buf).unwrap();
        client.read_exact(&mut buf).unwrap();
    }
    started.elapsed().as_secs_f64() * 1e6 / rounds as f64
}

/// Draws a PNG with gnuplot: writes each `(name, contents)` data file to a scratch directory,
/// then runs the script `script(dir)` returns (it names the data files under `dir`). False when
/// gnuplot is missing or fails; the report then goes without the picture.
pub fn gnuplot(data: &[(&str, String)], script: impl FnOnce(&Path) -> String) -> bool {
    let dir = std::env::temp_dir().join(format!("kiln-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, contents) in data {
        std::fs::write(dir.join(name), contents).unwrap();
    }
    let gp = dir.join("plot.gp");
    std::fs::write(&gp, script(&dir)).unwrap();
    let ok = Command::new("gnuplot").arg(&gp).status().map(|s| s.success()).unwrap_or(false);
    let _ = std::fs::remove_dir_all(&dir);
    ok
}
