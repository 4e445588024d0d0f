//! # kiln-fuzz: hostile input against a running server
//!
//! Starts `kiln serve` on a fresh data directory and a free loopback port, then throws at it,
//! from several connections at once:
//! - **SQL**: statements generated from a grammar over a small schema, hostile shapes (deep
//!   chains, huge IN lists and literals, nested subqueries) and byte-level mutations (NUL,
//!   invalid UTF-8, truncation), through the simple and the extended protocol;
//! - **wire**: messages of every type with random, truncated or oversized bodies, lying
//!   length fields, unknown types, and protocol sequences out of order.
//!
//! The server passes when it never crashes, aborts or hangs: every SQL statement is answered
//! with a result or an error carrying an SQLSTATE (never XX000, an internal error), a
//! garbled message gets an error or a closed connection, and after every round a new
//! connection still answers `SELECT 1`. A failure is reported with the input that caused it
//! and the seed that replays it.

pub mod sqlgen;
pub mod wire;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use wire::{cstr, message, Connection};

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// The `kiln` binary.
    pub kiln: PathBuf,
    /// How long to fuzz.
    pub duration: Duration,
    /// The seed of the first worker (worker i uses seed + i).
    pub seed: u64,
    /// Concurrent SQL workers.
    pub sql_workers: usize,
    /// Concurrent wire workers.
    pub wire_workers: usize,
    /// Longest a statement may take to be answered before the server counts as hung.
    pub answer_timeout: Duration,
    /// Fuzz a server that is already running here instead of starting one (its process is
    /// then not watched; for debugging a failure under a debugger).
    pub addr: Option<SocketAddr>,
}

/// What a run did.
#[derive(Debug, Default, Clone)]
pub struct Report {
    /// SQL statements sent.
    pub statements: u64,
    /// Of them, answered with an error (with an SQLSTATE).
    pub errors: u64,
    /// Wire sequences sent.
    pub wire_inputs: u64,
    /// Health checks (`SELECT 1` on a new connection) passed.
    pub health_checks: u64,
    /// What went wrong (empty when the server passed).
    pub failures: Vec<String>,
}

/// A server process on a fresh data directory, stopped when dropped.
pub struct Server {
    child: Child,
    /// Its address.
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Server {
    /// Starts `kiln serve` and waits until it listens.
    pub fn start(kiln: &Path) -> Result<Server, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mut child = Command::new(kiln)
            .arg("serve")
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"])
            .env("KILN_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", kiln.display()))?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let mut reader = BufReader::new(stderr);
        let mut line = String::new();
        let addr = loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                let _ = child.kill();
                return Err("kiln serve exited before listening".into());
            }
            if let Some(rest) = line.strip_prefix("kiln: listening on ") {
                let addr = rest.split_whitespace().next().unwrap_or_default();
                break addr.parse::<SocketAddr>().map_err(|e| e.to_string())?;
            }
        };
        // Keep the server's log flowing (a panic, a stack overflow or another fatal runtime
        // error would show here).
        std::thread::spawn(move || {
            let mut sink = String::new();
            while reader.read_line(&mut sink).unwrap_or(0) > 0 {
                let fatal = ["panicked", "overflowed", "fatal", "memory allocation"]
                    .iter()
                    .any(|w| sink.contains(w));
                if fatal || std::env::var_os("KILN_FUZZ_SERVER_LOG").is_some() {
                    eprint!("[kiln] {sink}");
                }
                sink.clear();
            }
        });
        Ok(Server { child, addr, _dir: dir })
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Shared {
    addr: SocketAddr,
    stop: AtomicBool,
    statements: AtomicU64,
    errors: AtomicU64,
    wire_inputs: AtomicU64,
    failures: Mutex<Vec<String>>,
    answer_timeout: Duration,
}

/// A run stops after this many failures (the server kept running: each is a wrong answer to
/// one input); a dead or hung server stops it at once.
const FAILURES_MAX: usize = 20;

impl Shared {
    /// The server is down or hung: stop.
    fn fail(&self, what: String) {
        eprintln!("kiln-fuzz: FAILURE: {what}");
        self.failures.lock().expect("not poisoned").push(what);
        self.stop.store(true, Ordering::Relaxed);
    }

    /// One input was answered wrongly, the server is still up: note it and go on.
    fn wrong(&self, what: String) {
        eprintln!("kiln-fuzz: FAILURE: {what}");
        let mut failures = self.failures.lock().expect("not poisoned");
        failures.push(what);
        if failures.len() >= FAILURES_MAX {
            self.stop.store(true, Ordering::Relaxed);
        }
    }
}

/// Shows an input in a report: printable, and not too long.
fn show(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let s: String = s.chars().map(|c| if c.is_control() { '·' } else { c }).collect();
    if s.chars().count() > 300 {
        format!("{}… ({} bytes)", s.chars().take(300).collect::<String>(), bytes.len())
    } else {
        s
    }
}

fn trace() -> bool {
    std::env::var_os("KILN_FUZZ_TRACE").is_some()
}

/// Settings for fuzzing connections: nothing may run long, wait long, or be durable slowly.
const SESSION_OPTIONS: &[(&str, &str)] =
    &[("options", "-c statement_timeout=3000 -c lock_timeout=1000 -c synchronous_commit=off")];

fn sql_worker(shared: &Shared, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut conn: Option<Connection> = None;
    while !shared.stop.load(Ordering::Relaxed) {
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match Connection::open(shared.addr, SESSION_OPTIONS) {
                Ok(c) => conn.insert(c),
                Err(e) => return shared.fail(format!("SQL worker {seed} cannot connect: {e}")),
            },
        };
        let sql = sqlgen::Gen::new(&mut rng).statement();
        let extended = rng.gen_bool(0.3);
        if trace() {
            eprintln!("kiln-fuzz: seed {seed} sends ({extended}): {}", show(&sql));
        }
        let outcome = if extended {
            c.extended(&sql, shared.answer_timeout)
        } else {
            c.query(&sql, shared.answer_timeout)
        };
        shared.statements.fetch_add(1, Ordering::Relaxed);
        let protocol = if extended { "extended" } else { "simple" };
        if outcome.timed_out {
            return shared.fail(format!(
                "no answer within {:?} ({protocol}, seed {seed}): {}",
                shared.answer_timeout,
                show(&sql)
            ));
        }
        if let Some((_, code, msg)) = outcome.errors.iter().find(|(_, c, _)| c.starts_with("XX")) {
            shared.wrong(format!(
                "internal error {code} {msg} ({protocol}, seed {seed}): {}",
                show(&sql)
            ));
        }
        if outcome.errors.iter().any(|(_, c, _)| c.len() != 5) {
            shared.wrong(format!("an error without an SQLSTATE: {:?}", outcome.errors));
        }
        if !outcome.errors.is_empty() {
            shared.errors.fetch_add(1, Ordering::Relaxed);
        }
        if outcome.closed {
            // The server may close a connection it cannot resync (a message it cannot
            // decode); it must say why first.
            if outcome.errors.iter().all(|(s, _, _)| s != "FATAL") {
                shared.wrong(format!(
                    "connection closed without a FATAL error ({protocol}, seed {seed}): {}",
                    show(&sql)
                ));
            }
            conn = None;
        }
    }
}

/// One random protocol input: a few messages, often damaged, then Sync.
fn wire_input(rng: &mut StdRng) -> Vec<u8> {
    let mut bytes = Vec::new();
    for _ in 0..rng.gen_range(1..5) {
        let kinds = b"QPBDESHCFdcfXpz\0";
        let kind = if rng.gen_bool(0.9) { kinds[rng.gen_range(0..kinds.len())] } else { rng.gen() };
        let mut body: Vec<u8> = match kind {
            b'Q' => cstr(b"SELECT 1"),
            b'P' => {
                let mut b = cstr(b"");
                b.extend(cstr(b"SELECT $1::int"));
                let n: i16 = [0i16, 1, -1, 1000, i16::MAX][rng.gen_range(0..5)];
                b.extend(n.to_be_bytes());
                b.extend(23i32.to_be_bytes());
                b
            }
            b'B' => {
                let mut b = cstr(b"");
                b.extend(cstr(b""));
                let formats: i16 = [0, 1, 2, -1, 30000][rng.gen_range(0..5)];
                b.extend(formats.to_be_bytes());
                for _ in 0..formats.clamp(0, 3) {
                    b.extend([1i16, 0, 7][rng.gen_range(0..3)].to_be_bytes());
                }
                let params: i16 = [0, 1, -1, 2, 5000][rng.gen_range(0..5)];
                b.extend(params.to_be_bytes());
                for _ in 0..params.clamp(0, 2) {
                    let len: i32 = [-1, 0, 4, 3, 1 << 30, -7][rng.gen_range(0..6)];
                    b.extend(len.to_be_bytes());
                    b.extend([0xffu8, 0, 0, 42].iter().take(len.clamp(0, 4) as usize));
                }
                b.extend(0i16.to_be_bytes());
                b
            }
            b'E' => {
                let mut b = cstr(b"");
                b.extend([0i32, -1, 1, i32::MAX][rng.gen_range(0..4)].to_be_bytes());
                b
            }
            b'D' | b'C' => vec![[b'S', b'P', b'X'][rng.gen_range(0..3)], 0],
            b'd' => (0..rng.gen_range(0..64)).map(|_| rng.gen()).collect(),
            b'f' => cstr(b"fuzz"),
            _ => (0..rng.gen_range(0..32)).map(|_| rng.gen()).collect(),
        };
        match rng.gen_range(0..10) {
            0 => body.truncate(rng.gen_range(0..=body.len())),
            1 => body.extend((0..rng.gen_range(1..16)).map(|_| rng.gen::<u8>())),
            2 if !body.is_empty() => {
                let at = rng.gen_range(0..body.len());
                body[at] = rng.gen();
            }
            _ => {}
        }
        let mut m = message(kind, &body);
        match rng.gen_range(0..12) {
            // A length that lies: short, long, negative, enormous.
            0 => m[1..5].copy_from_slice(&(body.len() as i32 + 4 - 2).to_be_bytes()),
            1 => m[1..5].copy_from_slice(&(body.len() as i32 + 4 + 3).to_be_bytes()),
            2 => m[1..5].copy_from_slice(&(-5i32).to_be_bytes()),
            3 => m[1..5].copy_from_slice(&0x3fff_fff0i32.to_be_bytes()),
            _ => {}
        }
        bytes.extend(m);
    }
    bytes.extend(message(b'S', &[]));
    bytes
}

fn wire_worker(shared: &Shared, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    while !shared.stop.load(Ordering::Relaxed) {
        let mut c = match Connection::open(shared.addr, SESSION_OPTIONS) {
            Ok(c) => c,
            Err(e) => return shared.fail(format!("wire worker {seed} cannot connect: {e}")),
        };
        for _ in 0..rng.gen_range(1..8) {
            let input = wire_input(&mut rng);
            shared.wire_inputs.fetch_add(1, Ordering::Relaxed);
            if c.send(&input).is_err() {
                break;
            }
            // A lying length may leave the server waiting for bytes that never come (as any
            // PostgreSQL server would); the client gives up on such a connection and moves
            // on. What must never happen is covered by the health checks: the server must
            // stay up and keep answering everyone else.
            let outcome = c.read_until_ready(Duration::from_secs(2));
            if let Some((_, code, msg)) =
                outcome.errors.iter().find(|(_, c, _)| c.starts_with("XX"))
            {
                shared.wrong(format!(
                    "internal error {code} {msg} (wire seed {seed}): {}",
                    show(&input)
                ));
            }
            if outcome.closed || outcome.timed_out {
                break;
            }
        }
    }
}

/// Runs the fuzzer against a fresh server; returns what happened.
pub fn run(config: &Config) -> Result<Report, String> {
    let mut server = match config.addr {
        Some(_) => None,
        None => Some(Server::start(&config.kiln)?),
    };
    let addr = match (&server, config.addr) {
        (Some(s), _) => s.addr,
        (None, Some(a)) => a,
        (None, None) => unreachable!("one of them is set"),
    };
    let mut alive = move || server.as_mut().is_none_or(|s| s.alive());
    let mut setup = Connection::open(addr, &[]).map_err(|e| e.to_string())?;
    for sql in sqlgen::SCHEMA {
        let outcome = setup.query(sql.as_bytes(), Duration::from_secs(60));
        if !outcome.errors.is_empty() || !outcome.ready {
            return Err(format!("schema statement failed: {sql}: {outcome:?}"));
        }
    }
    drop(setup);
    let shared = Arc::new(Shared {
        addr,
        stop: AtomicBool::new(false),
        statements: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        wire_inputs: AtomicU64::new(0),
        failures: Mutex::new(Vec::new()),
        answer_timeout: config.answer_timeout,
    });
    let mut threads = Vec::new();
    for i in 0..config.sql_workers {
        let s = shared.clone();
        let seed = config.seed + i as u64;
        threads.push(std::thread::spawn(move || sql_worker(&s, seed)));
    }
    for i in 0..config.wire_workers {
        let s = shared.clone();
        let seed = config.seed + 1000 + i as u64;
        threads.push(std::thread::spawn(move || wire_worker(&s, seed)));
    }
    let started = Instant::now();
    let mut health_checks = 0;
    let mut last_report = Instant::now();
    while started.elapsed() < config.duration && !shared.stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(500));
        if !alive() {
            shared.fail("the server process died".into());
            break;
        }
        let health =
            Connection::open(addr, &[]).map(|mut c| c.query(b"SELECT 1", Duration::from_secs(30)));
        match health {
            Ok(o) if o.ready && o.rows == 1 && o.errors.is_empty() => health_checks += 1,
            other => {
                shared.fail(format!("SELECT 1 on a new connection failed: {other:?}"));
                break;
            }
        }
        if last_report.elapsed() > Duration::from_secs(60) {
            last_report = Instant::now();
            eprintln!(
                "kiln-fuzz: {:?}: {} statements ({} errors), {} wire inputs, {} health checks",
                started.elapsed(),
                shared.statements.load(Ordering::Relaxed),
                shared.errors.load(Ordering::Relaxed),
                shared.wire_inputs.load(Ordering::Relaxed),
                health_checks
            );
        }
    }
    shared.stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    if !alive() && shared.failures.lock().expect("not poisoned").is_empty() {
        shared.fail("the server process died".into());
    }
    let failures = shared.failures.lock().expect("not poisoned").clone();
    Ok(Report {
        statements: shared.statements.load(Ordering::Relaxed),
        errors: shared.errors.load(Ordering::Relaxed),
        wire_inputs: shared.wire_inputs.load(Ordering::Relaxed),
        health_checks,
        failures,
    })
}
