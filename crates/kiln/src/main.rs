//! `kiln`: the command-line entry point.
//!
//! - `kiln serve` runs the PostgreSQL-compatible server on a data directory (default
//!   `./kiln-data`, listening on `127.0.0.1:5433`); flags, `KILN_*` environment variables
//!   and a TOML file (`--config`) set the rest.
//! - `kiln demo` opens a data directory (default `./kiln-data`) and walks through fast, safe
//!   and lost transactions, printing each transaction's status as it changes.
//! - `kiln status ID...` answers committed / durable / lost / aborted / unknown for ids, across
//!   restarts.
//! - `kiln stats` prints the counters and watermarks of a data directory.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use kiln_engine::{
    CommitMode, Config, DurabilityEvent, Engine, Faults, FaultyVfs, TxnId, TxnOptions,
};

/// Kiln: transactions that commit now and harden later.
#[derive(Parser)]
#[command(version)]
struct Cli {
    /// The data directory [default: kiln-data, or data_dir in the config file].
    #[arg(long, global = true, env = "KILN_DATA_DIR")]
    data_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the PostgreSQL-compatible server (psql -h 127.0.0.1 -p 5433 -U kiln kiln).
    Serve(Box<ServeArgs>),
    /// Walk through fast, safe and lost transactions on the data directory.
    Demo,
    /// Print the status of transaction ids (EPOCH.CSN, EPOCH.CSNr, EPOCH.CSNa).
    Status {
        /// Transaction ids.
        #[arg(required = true)]
        ids: Vec<TxnId>,
    },
    /// Print the counters and watermarks of the data directory.
    Stats,
}

/// Settings of `kiln serve`; each overrides the config file.
#[derive(clap::Args)]
struct ServeArgs {
    /// A TOML file of settings (the keys are the long flag names with underscores).
    #[arg(long, env = "KILN_CONFIG")]
    config: Option<PathBuf>,
    /// Address for PostgreSQL clients [default: 127.0.0.1:5433].
    #[arg(long, env = "KILN_LISTEN")]
    listen: Option<std::net::SocketAddr>,
    /// Address of the Prometheus /metrics endpoint, or "none" [default: 127.0.0.1:9187].
    #[arg(long, env = "KILN_METRICS_LISTEN")]
    metrics_listen: Option<String>,
    /// Maximum concurrent connections [default: 100].
    #[arg(long, env = "KILN_MAX_CONNECTIONS")]
    max_connections: Option<usize>,
    /// synchronous_commit of new sessions: on (safe) or off (fast) [default: on].
    #[arg(long, env = "KILN_SYNCHRONOUS_COMMIT")]
    synchronous_commit: Option<String>,
    /// Default isolation level [default: read committed].
    #[arg(long, env = "KILN_DEFAULT_ISOLATION")]
    default_isolation: Option<String>,
    /// eventually-durable, or classic (every commit waits for durability before it is
    /// visible) [default: eventually-durable].
    #[arg(long, env = "KILN_COMMIT_MODEL")]
    commit_model: Option<String>,
    /// Target bound on how long a fast commit stays non-durable, in ms [default: 10].
    #[arg(long, env = "KILN_VULNERABILITY_WINDOW_MS")]
    vulnerability_window_ms: Option<u64>,
    /// Rows one statement may hold in memory [default: 10000000].
    #[arg(long, env = "KILN_ROWS_MAX")]
    rows_max: Option<usize>,
    /// Bytes one transaction may write [default and most: 128 MiB].
    #[arg(long, env = "KILN_TXN_BYTES_MAX")]
    txn_bytes_max: Option<u64>,
    /// Statement text size limit in bytes [default: 16 MiB].
    #[arg(long, env = "KILN_STATEMENT_BYTES_MAX")]
    statement_bytes_max: Option<usize>,
    /// Memory for stored rows, in bytes [default: 8 GiB].
    #[arg(long, env = "KILN_MEMORY_BYTES_MAX")]
    memory_bytes_max: Option<u64>,
    /// Log space zero-filled ahead of the log, at most this many bytes at a time; 0 makes
    /// every flush append [default: 1 MiB].
    #[arg(long, env = "KILN_LOG_PREALLOCATE_BYTES")]
    log_preallocate_bytes: Option<u64>,
    /// Tests only: let SQL make log fsyncs fail (kiln_fault_fail_syncs).
    #[arg(long, hide = true)]
    enable_fault_injection: bool,
}

fn serve(data_dir: Option<PathBuf>, args: &ServeArgs) -> Result<(), String> {
    let mut config = match &args.config {
        Some(path) => kiln_server::ServerConfig::from_toml_file(path)?,
        None => kiln_server::ServerConfig::default(),
    };
    if let Some(d) = data_dir {
        config.data_dir = d;
    }
    if let Some(l) = args.listen {
        config.listen = l;
    }
    if let Some(m) = &args.metrics_listen {
        config.metrics_listen = match m.as_str() {
            "none" | "off" | "" => None,
            addr => Some(addr.parse().map_err(|e| format!("--metrics-listen {addr}: {e}"))?),
        };
    }
    if let Some(n) = args.max_connections {
        config.max_connections = n;
    }
    if let Some(sc) = &args.synchronous_commit {
        config.synchronous_commit = match sc.as_str() {
            "on" | "true" | "safe" => true,
            "off" | "false" | "fast" => false,
            other => return Err(format!("--synchronous-commit must be on or off, not {other}")),
        };
    }
    if let Some(i) = &args.default_isolation {
        config.default_isolation = i.clone();
    }
    if let Some(m) = &args.commit_model {
        config.commit_model = m.clone();
    }
    if let Some(w) = args.vulnerability_window_ms {
        config.vulnerability_window_ms = w;
    }
    if let Some(r) = args.rows_max {
        config.rows_max = r;
    }
    if let Some(b) = args.txn_bytes_max {
        config.txn_bytes_max = b;
    }
    if let Some(b) = args.statement_bytes_max {
        config.statement_bytes_max = b;
    }
    if let Some(b) = args.memory_bytes_max {
        config.memory_bytes_max = b;
    }
    if let Some(b) = args.log_preallocate_bytes {
        config.log_preallocate_bytes = b;
    }
    if args.enable_fault_injection {
        config.fault_injection = true;
    }
    let server = kiln_server::Server::start(config)?;
    eprintln!(
        "kiln: listening on {} (psql -h {} -p {} -U kiln kiln); metrics on {}",
        server.local_addr(),
        server.local_addr().ip(),
        server.local_addr().port(),
        server.metrics_addr().map_or("(off)".to_string(), |a| format!("http://{a}/metrics"))
    );
    server.run_until_signal()
}

/// mimalloc rather than the C library's malloc: statements allocate many small, short-lived
/// values (rows, keys, expressions), and under concurrent connections glibc's allocator was
/// the largest single item of the server's CPU profile.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("KILN_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,kiln_server=info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let dir = || cli.data_dir.clone().unwrap_or_else(|| PathBuf::from("kiln-data"));
    let result = match &cli.command {
        Command::Serve(args) => serve(cli.data_dir.clone(), args),
        Command::Demo => demo(dir()).map_err(|e| e.to_string()),
        Command::Status { ids } => status(dir(), ids).map_err(|e| e.to_string()),
        Command::Stats => stats(dir()).map_err(|e| e.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kiln: {e}");
            ExitCode::FAILURE
        }
    }
}

fn status(dir: PathBuf, ids: &[TxnId]) -> kiln_engine::Result<()> {
    let engine = Engine::open(&dir, Config::default())?;
    for id in ids {
        println!("{id} {}", engine.status(*id));
    }
    engine.close()
}

fn stats(dir: PathBuf) -> kiln_engine::Result<()> {
    let engine = Engine::open(&dir, Config::default())?;
    println!("{:#?}", engine.stats());
    engine.close()
}

fn demo(dir: PathBuf) -> kiln_engine::Result<()> {
    // The demo injects one fsync failure to show a loss, so it runs on a fault-injecting file
    // system over the real one. Nothing else differs from a normal engine.
    let faults = Faults::new();
    let config = Config {
        vfs: Arc::new(FaultyVfs::new(faults.clone())),
        vulnerability_window: Duration::from_millis(200),
        ..Config::default()
    };
    let engine = Engine::open(&dir, config)?;
    let session = engine.session();
    let start = engine.stats();
    println!(
        "Opened {} in epoch {} (durable up to CSN {}).",
        dir.display(),
        start.epoch,
        start.durable_csn
    );
    let events = engine.subscribe();

    println!("\n1. A fast transaction is acknowledged at its commit point:");
    let mut txn = session.begin(TxnOptions::new())?;
    let balance = read_int(&mut txn, b"alice")?;
    txn.put("accounts", b"alice", &(balance + 100).to_le_bytes())?;
    let fast = txn.commit_fast()?;
    println!("   committed {fast}: status {} — visible now, not yet durable", engine.status(fast));
    let mut reader = session.begin(TxnOptions::new())?;
    println!("   a new transaction already reads alice = {}", read_int(&mut reader, b"alice")?);
    let read_only = reader.commit_fast()?;
    println!(
        "   that read-only transaction {read_only} depends on {fast}: status {}",
        engine.status(read_only)
    );
    let status = engine.wait(fast, Duration::from_secs(5))?;
    println!("   within the vulnerability window (200 ms here) the log writer hardens it: {fast} {status}, {read_only} {}", engine.status(read_only));

    println!("\n2. A safe transaction is acknowledged at its durability point:");
    let mut txn = session.begin(TxnOptions::new().mode(CommitMode::Safe))?;
    txn.put("accounts", b"bob", &50i64.to_le_bytes())?;
    let safe = txn.commit()?;
    println!("   committed {safe}: status {} on return", engine.status(safe));

    println!("\n3. A failure before durability loses the non-durable suffix, atomically:");
    let mut txn = session.begin(TxnOptions::new())?;
    txn.put("accounts", b"carol", &75i64.to_le_bytes())?;
    let doomed = txn.commit_fast()?;
    println!("   committed {doomed} fast: status {}", engine.status(doomed));
    println!("   injecting an fsync failure into the next log flush...");
    faults.fail_syncs.store(1, Ordering::SeqCst);
    match engine.persist() {
        Err(e) => println!("   persist: {e}"),
        Ok(_) => println!("   persist succeeded (the flush had already happened)"),
    }
    println!("   {doomed} is now {}; {safe} stays {}", engine.status(doomed), engine.status(safe));
    let mut check = session.begin(TxnOptions::new())?;
    let carol = check.get("accounts", b"carol")?;
    println!(
        "   carol's row is {} — the loss is atomic and visible to everyone",
        if carol.is_some() { "still there" } else { "gone" }
    );
    drop(check);
    while let Some(event) = events.try_recv() {
        match event {
            DurabilityEvent::Durable { epoch, csn } => println!("   event: durable up to {epoch}.{csn}"),
            DurabilityEvent::Lost { epoch, from_csn, new_epoch, cause } => println!(
                "   event: lost every commit of epoch {epoch} from CSN {from_csn} ({cause}); epoch {new_epoch} begins"
            ),
        }
    }

    println!("\n4. Work continues in the new epoch, and statuses survive restarts:");
    let mut txn = session.begin(TxnOptions::new())?;
    txn.put("accounts", b"carol", &75i64.to_le_bytes())?;
    let retried = txn.commit_safe()?;
    println!("   retried as {retried}: {}", engine.status(retried));
    session.sync()?;
    engine.close()?;
    let engine = Engine::open(&dir, Config::default())?;
    println!("   reopened in epoch {}:", engine.stats().epoch);
    for id in [fast, read_only, safe, doomed, retried] {
        println!("     {id} {}", engine.status(id));
    }
    println!("   (ask again any time: kiln --data-dir {} status {fast} {doomed})", dir.display());
    engine.close()
}

fn read_int(txn: &mut kiln_engine::Transaction, key: &[u8]) -> kiln_engine::Result<i64> {
    Ok(txn.get("accounts", key)?.map_or(0, |v| i64::from_le_bytes(v.try_into().unwrap_or([0; 8]))))
}
