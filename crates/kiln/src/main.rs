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
    /// Start a local cluster: N `kiln serve` processes on this machine, each with its own
    /// data directory under --data-dir (default kiln-cluster), until Ctrl-C.
    Cluster(ClusterArgs),
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
    /// Run as node N of a cluster (with --raft-listen, --member for every node, and the
    /// cluster secret).
    #[arg(long, env = "KILN_NODE_ID")]
    node_id: Option<u64>,
    /// Address this node receives the other nodes' Raft messages on.
    #[arg(long, env = "KILN_RAFT_LISTEN")]
    raft_listen: Option<std::net::SocketAddr>,
    /// A voter of the cluster, this node included: ID=RAFT_ADDR,SQL_ADDR[,SITE]. Repeat for
    /// each node; every node must be given the same list.
    #[arg(long = "member", value_name = "ID=RAFT,SQL[,SITE]")]
    members: Vec<String>,
    /// The cluster's name [default: kiln].
    #[arg(long, env = "KILN_CLUSTER_NAME")]
    cluster_name: Option<String>,
    /// A file holding the cluster's shared secret (at least 16 bytes). KILN_CLUSTER_SECRET
    /// may give the secret itself.
    #[arg(long, env = "KILN_CLUSTER_SECRET_FILE")]
    cluster_secret_file: Option<PathBuf>,
    /// The level a safe commit waits for by default: local, quorum, all or site:NAME
    /// [default: quorum].
    #[arg(long, env = "KILN_DURABILITY_LEVEL")]
    durability_level: Option<String>,
    /// Join a running cluster instead of forming one: the node waits until the leader adds it
    /// (SELECT kiln_cluster_add_node(ID, 'RAFT_ADDR', 'SQL_ADDR', 'SITE') there). Give
    /// --member for this node only.
    #[arg(long)]
    join: bool,
}

/// Settings of `kiln cluster`.
#[derive(clap::Args)]
struct ClusterArgs {
    /// How many nodes.
    #[arg(long, default_value_t = 3)]
    nodes: u64,
    /// SQL address of node 1; node N listens on its port + N - 1.
    #[arg(long, default_value = "127.0.0.1:5433")]
    listen: std::net::SocketAddr,
    /// Raft port of node 1; node N uses this + N - 1 [default: the SQL port + 100].
    #[arg(long)]
    raft_port: Option<u16>,
}

/// Parses `ID=RAFT,SQL[,SITE]`.
fn parse_member(text: &str) -> Result<kiln_server::config::MemberConfig, String> {
    let bad = || format!("--member {text}: expected ID=RAFT_ADDR,SQL_ADDR[,SITE]");
    let (id, rest) = text.split_once('=').ok_or_else(bad)?;
    let id = id.trim().parse::<u64>().map_err(|_| bad())?;
    let mut parts = rest.split(',').map(str::trim);
    let (Some(raft), Some(sql)) = (parts.next(), parts.next()) else { return Err(bad()) };
    let site = parts.next().unwrap_or("").to_string();
    if parts.next().is_some() || raft.is_empty() || sql.is_empty() {
        return Err(bad());
    }
    Ok(kiln_server::config::MemberConfig { id, raft: raft.into(), sql: sql.into(), site })
}

/// Applies the cluster flags over the config file's `[cluster]`.
fn apply_cluster_args(
    config: &mut kiln_server::ServerConfig,
    args: &ServeArgs,
) -> Result<(), String> {
    let secret = std::env::var("KILN_CLUSTER_SECRET").ok().filter(|s| !s.is_empty());
    let any = args.node_id.is_some()
        || args.raft_listen.is_some()
        || !args.members.is_empty()
        || args.cluster_name.is_some()
        || args.cluster_secret_file.is_some()
        || args.durability_level.is_some()
        || args.join;
    if !any && config.cluster.is_none() {
        return Ok(());
    }
    let cluster = config.cluster.get_or_insert_with(Default::default);
    if let Some(id) = args.node_id {
        cluster.node_id = id;
    }
    if let Some(addr) = args.raft_listen {
        cluster.raft_listen = Some(addr);
    }
    if !args.members.is_empty() {
        cluster.members = args.members.iter().map(|m| parse_member(m)).collect::<Result<_, _>>()?;
    }
    if let Some(name) = &args.cluster_name {
        cluster.name = name.clone();
    }
    if let Some(level) = &args.durability_level {
        cluster.durability_level = level.clone();
    }
    if args.join {
        cluster.join = true;
    }
    if let Some(path) = &args.cluster_secret_file {
        cluster.secret_file = Some(path.clone());
        cluster.secret = None;
    } else if let Some(secret) = secret {
        cluster.secret = Some(secret);
        cluster.secret_file = None;
    }
    Ok(())
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
    apply_cluster_args(&mut config, args)?;
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
        Command::Status { ids } => {
            standalone_dir(&dir()).and_then(|()| status(dir(), ids).map_err(|e| e.to_string()))
        }
        Command::Stats => {
            standalone_dir(&dir()).and_then(|()| stats(dir()).map_err(|e| e.to_string()))
        }
        Command::Cluster(args) => local_cluster(
            cli.data_dir.clone().unwrap_or_else(|| PathBuf::from("kiln-cluster")),
            args,
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kiln: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `kiln cluster`: starts `args.nodes` servers as one cluster on this machine, prints how to
/// reach each, and stops them on Ctrl-C or SIGTERM. A node that exits (or is killed, to
/// watch a failover) is reported and left down.
fn local_cluster(dir: PathBuf, args: &ClusterArgs) -> Result<(), String> {
    if args.nodes == 0 || args.nodes > 9 {
        return Err("--nodes must be between 1 and 9".into());
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let secret_file = dir.join("cluster.secret");
    if !secret_file.exists() {
        let mut bytes = [0u8; 24];
        std::io::Read::read_exact(
            &mut std::fs::File::open("/dev/urandom").map_err(|e| e.to_string())?,
            &mut bytes,
        )
        .map_err(|e| e.to_string())?;
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        std::fs::write(&secret_file, hex).map_err(|e| e.to_string())?;
        std::fs::set_permissions(&secret_file, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .map_err(|e| e.to_string())?;
    }
    let ip = args.listen.ip();
    let sql_port = |n: u64| args.listen.port() as u64 + n - 1;
    let raft_base = args.raft_port.map_or(args.listen.port() as u64 + 100, u64::from);
    let raft_port = |n: u64| raft_base + n - 1;
    if sql_port(args.nodes) > 65535 || raft_port(args.nodes) > 65535 {
        return Err("the ports run past 65535".into());
    }
    let members: Vec<String> = (1..=args.nodes)
        .map(|n| format!("{n}={ip}:{},{ip}:{},site-{n}", raft_port(n), sql_port(n)))
        .collect();
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut children = Vec::new();
    for n in 1..=args.nodes {
        let node_dir = dir.join(format!("node{n}"));
        let log_path = dir.join(format!("node{n}.log"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| format!("{}: {e}", log_path.display()))?;
        let mut command = std::process::Command::new(&exe);
        command
            .arg("--data-dir")
            .arg(&node_dir)
            .arg("serve")
            .arg("--listen")
            .arg(format!("{ip}:{}", sql_port(n)))
            .arg("--metrics-listen")
            .arg("none")
            .arg("--node-id")
            .arg(n.to_string())
            .arg("--raft-listen")
            .arg(format!("{ip}:{}", raft_port(n)))
            .arg("--cluster-secret-file")
            .arg(&secret_file);
        for m in &members {
            command.arg("--member").arg(m);
        }
        let child = command
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start node {n}: {e}"))?;
        children.push((n, child));
    }
    println!("A {}-node Kiln cluster is starting in {}:", args.nodes, dir.display());
    for n in 1..=args.nodes {
        println!(
            "  node {n}: psql -h {ip} -p {} -U kiln kiln    (log: {})",
            sql_port(n),
            dir.join(format!("node{n}.log")).display()
        );
    }
    println!(
        "Writes go to the leader (SELECT * FROM kiln_cluster shows it); any node serves reads."
    );
    println!("Stop one node's process to watch a failover; Ctrl-C stops the cluster.");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut int)) =
            (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
        else {
            return;
        };
        loop {
            tokio::select! {
                _ = term.recv() => break,
                _ = int.recv() => break,
                _ = tokio::time::sleep(Duration::from_millis(200)) => {
                    for (n, child) in &mut children {
                        if let Ok(Some(status)) = child.try_wait() {
                            if *n != 0 {
                                println!("node {n} exited ({status})");
                                *n = 0;
                            }
                        }
                    }
                }
            }
        }
    });
    println!("stopping the cluster");
    for (_, child) in &mut children {
        if matches!(child.try_wait(), Ok(None)) {
            let pid = child.id().to_string();
            let _ = std::process::Command::new("kill").arg("-TERM").arg(pid).status();
        }
    }
    for (_, mut child) in children {
        let _ = child.wait();
    }
    Ok(())
}

/// Refuses a cluster node's directory: its statuses depend on what the cluster committed,
/// which only a running node knows.
fn standalone_dir(dir: &std::path::Path) -> Result<(), String> {
    if dir.join("raft").is_dir() {
        return Err(format!(
            "{} belongs to a node of a cluster; ask a running node instead \
             (SELECT kiln_txn_status('EPOCH.CSN'), SELECT * FROM kiln_stat)",
            dir.display()
        ));
    }
    Ok(())
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
            DurabilityEvent::Reached { level, csn } => println!("   event: {level} up to CSN {csn}"),
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
