//! # Kiln's server
//!
//! A PostgreSQL-compatible server on the SQL layer: the wire protocol (the `pgwire` crate's
//! message codec, TLS negotiation and SCRAM), one thread per connection, cancel requests,
//! `statement_timeout`, durability notifications, a Prometheus `/metrics` endpoint, and a
//! clean shutdown on SIGTERM. It knows nothing of how SQL runs; it passes text and values
//! to [`kiln_sql::Session`] and answers what comes back.

mod cluster;
mod codec;
pub mod config;
mod connection;
mod copy_binary;
mod metrics;
mod wire;

use std::collections::{BinaryHeap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kiln_sql::{Database, Session};
use parking_lot::{Condvar, Mutex};
use pgwire::api::auth::sasl::scram::{gen_salted_password, ScramAuth};
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::{AuthSource, LoginInfo, Password};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::startup::SecretKey;
use tracing::{info, warn};

pub use config::ServerConfig;

/// Passwords for SCRAM, from the configuration.
#[derive(Debug)]
struct ConfigPasswords {
    users: std::collections::BTreeMap<String, String>,
}

#[async_trait::async_trait]
impl AuthSource for ConfigPasswords {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        let user = login.user().unwrap_or_default();
        let Some(password) = self.users.get(user) else {
            return Err(PgWireError::InvalidPassword(user.to_string()));
        };
        let salt: [u8; 16] = std::array::from_fn(|i| (random_u64() >> (i % 8 * 8)) as u8);
        let hashed = gen_salted_password(password, &salt, 4096);
        Ok(Password::new(Some(salt.to_vec()), hashed))
    }
}

fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    h.finish()
}

type ScramHandler = SASLAuthStartupHandler<connection::KilnParameters>;

struct Deadline {
    at: Instant,
    done: Arc<AtomicBool>,
    interrupt: Arc<AtomicBool>,
}

impl PartialEq for Deadline {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}
impl Eq for Deadline {}
impl PartialOrd for Deadline {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Deadline {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.at.cmp(&self.at) // earliest first in the max-heap
    }
}

/// One thread that fires statement timeouts.
#[derive(Default)]
struct Timer {
    heap: Mutex<BinaryHeap<Deadline>>,
    wake: Condvar,
    stop: AtomicBool,
}

impl Timer {
    fn run(&self) {
        let mut heap = self.heap.lock();
        while !self.stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            while heap.peek().is_some_and(|d| d.at <= now) {
                let d = heap.pop().expect("peeked");
                if !d.done.load(Ordering::Relaxed) {
                    d.interrupt.store(true, Ordering::Relaxed);
                }
            }
            match heap.peek() {
                Some(d) => {
                    let wait = d.at.saturating_duration_since(now);
                    self.wake.wait_for(&mut heap, wait);
                }
                None => {
                    self.wake.wait_for(&mut heap, Duration::from_millis(500));
                }
            }
        }
    }
}

/// The stack of a connection's thread: room for the SQL layer's per-statement guarantee
/// (`kiln_sql::STATEMENT_STACK_BYTES`, sized for the deepest statement it accepts) on top of
/// the protocol loop, so statements never need a stack of their own. Only the pages a
/// statement touches are ever backed by memory.
const CONNECTION_STACK_BYTES: usize = kiln_sql::STATEMENT_STACK_BYTES + (8 << 20);

/// How long a node of a cluster that stops waits for its commits to reach the cluster.
const CLUSTER_CLOSE_WAIT: Duration = Duration::from_secs(5);

/// At most this many connections over the limit are being answered 53300 at once; more are
/// closed without an answer.
const REJECTING_MAX: usize = 64;

/// Notices clients that went away while their statement runs. Nobody reads a connection's
/// socket while its statement executes, so every [`WATCH_INTERVAL`] this thread peeks at the
/// sockets of running statements: end of stream or an error means the client is gone, and
/// the statement is interrupted (its transaction then rolls back and its locks go).
#[derive(Default)]
struct Watchdog {
    running: Mutex<HashMap<u64, Watched>>,
    next: std::sync::atomic::AtomicU64,
    stop: AtomicBool,
}

/// A running statement's socket and the flag that interrupts it.
type Watched = (Arc<std::net::TcpStream>, Arc<AtomicBool>);

/// How often the watchdog looks at the sockets of running statements.
const WATCH_INTERVAL: Duration = Duration::from_millis(100);

impl Watchdog {
    fn run(&self) {
        while !self.stop.load(Ordering::Relaxed) {
            std::thread::sleep(WATCH_INTERVAL);
            let running = self.running.lock();
            for (stream, interrupt) in running.values() {
                let mut byte = [0u8; 1];
                let gone = match stream.peek(&mut byte) {
                    Ok(0) => true,
                    Ok(_) => false,
                    Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
                };
                if gone && !interrupt.swap(true, Ordering::Relaxed) {
                    info!("client went away: its statement is canceled");
                }
            }
        }
    }

    /// Watches a connection's socket (a non-blocking handle on the same socket, made once per
    /// connection; peek never consumes what the client sent) while a statement runs.
    fn watch(&self, stream: &Arc<std::net::TcpStream>, interrupt: Arc<AtomicBool>) -> u64 {
        let token = self.next.fetch_add(1, Ordering::Relaxed);
        self.running.lock().insert(token, (stream.clone(), interrupt));
        token
    }

    fn unwatch(&self, token: u64) {
        self.running.lock().remove(&token);
    }
}

/// What every connection shares.
pub(crate) struct Shared {
    db: Arc<Database>,
    config: ServerConfig,
    tls: Option<pgwire::tokio::TlsAcceptor>,
    slots: Arc<AtomicUsize>,
    rejecting: AtomicUsize,
    cancels: Mutex<HashMap<i32, (SecretKey, Arc<AtomicBool>)>>,
    next_pid: AtomicI32,
    shutdown: tokio::sync::watch::Sender<bool>,
    timer: Arc<Timer>,
    watchdog: Arc<Watchdog>,
    scram: Option<Arc<ScramHandler>>,
    /// The cluster node, when this server is one.
    cluster: Mutex<Option<cluster::ClusterNode>>,
}

/// Holds a connection slot until dropped.
pub(crate) struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Shared {
    fn take_slot(&self) -> Option<Slot> {
        let n = self.slots.fetch_add(1, Ordering::SeqCst);
        let slot = Slot(self.slots.clone());
        if n >= self.config.max_connections {
            return None;
        }
        Some(slot)
    }

    fn new_backend_key(&self) -> (i32, i32) {
        let pid = self.next_pid.fetch_add(1, Ordering::Relaxed);
        (pid, (random_u64() as i32) & 0x7fff_ffff)
    }

    fn register_cancel(&self, pid: i32, secret: i32, flag: Arc<AtomicBool>) {
        self.cancels.lock().insert(pid, (SecretKey::I32(secret), flag));
    }

    fn register_cancel_key(&self, pid: i32, secret: SecretKey, flag: Arc<AtomicBool>) {
        self.cancels.lock().insert(pid, (secret, flag));
    }

    fn unregister_cancel(&self, pid: i32) {
        self.cancels.lock().remove(&pid);
    }

    fn cancel(&self, pid: i32, secret: &SecretKey) {
        if let Some((s, flag)) = self.cancels.lock().get(&pid) {
            if s.eq_value(secret) {
                flag.store(true, Ordering::Relaxed);
                info!(pid, "statement canceled by request");
            }
        }
    }

    fn scram_handler(&self) -> Arc<ScramHandler> {
        self.scram.clone().expect("SCRAM is configured")
    }

    /// Arms `statement_timeout` and the watch for a vanished client for one statement; both
    /// end when the returned guard is dropped.
    fn start_statement_timer(
        self: &Arc<Self>,
        session: &Session,
        socket: Option<&Arc<std::net::TcpStream>>,
    ) -> connection::StatementTimer {
        let watch = socket.map(|s| self.watchdog.watch(s, session.interrupt_handle()));
        let watch = watch.map(|token| (self.clone(), token));
        let ms = session.setting_ms("statement_timeout").unwrap_or(0);
        if ms == 0 {
            return connection::StatementTimer { cancel: None, watch };
        }
        let done = Arc::new(AtomicBool::new(false));
        self.timer.heap.lock().push(Deadline {
            at: Instant::now() + Duration::from_millis(ms),
            done: done.clone(),
            interrupt: session.interrupt_handle(),
        });
        self.timer.wake.notify_one();
        connection::StatementTimer { cancel: Some(done), watch }
    }

    fn unwatch(&self, token: u64) {
        self.watchdog.unwatch(token);
    }
}

/// A running server.
pub struct Server {
    shared: Arc<Shared>,
    runtime: tokio::runtime::Runtime,
    local_addr: SocketAddr,
    metrics_addr: Option<SocketAddr>,
}

fn load_tls(config: &config::TlsConfig) -> Result<Option<pgwire::tokio::TlsAcceptor>, String> {
    use pgwire::tokio::tokio_rustls::rustls;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let (Some(cert), Some(key)) = (&config.cert, &config.key) else {
        if config.cert.is_some() || config.key.is_some() {
            return Err("tls needs both cert and key".into());
        }
        return Ok(None);
    };
    let certs = CertificateDer::pem_file_iter(cert)
        .map_err(|e| format!("{}: {e}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .map_err(|e| format!("TLS configuration: {e}"))?;
    Ok(Some(pgwire::tokio::TlsAcceptor::from(Arc::new(tls))))
}

impl Server {
    /// Opens the database and starts listening.
    pub fn start(config: ServerConfig) -> Result<Server, String> {
        let faults = config.fault_injection.then(kiln_sql::engine_config::Faults::new);
        if faults.is_some() {
            warn!("fault injection is ON: kiln_fault_fail_syncs() can make fsyncs fail; never use this in production");
        }
        let engine_config = config.engine_config(faults.as_ref())?;
        let session_config = config.session_config(faults)?;
        if config.auth.allow_remote && config.auth.method == config::AuthMethod::Trust {
            return Err("auth.allow_remote needs auth.method = \"scram-sha-256\": trust would let anyone in".into());
        }
        if config.auth.method == config::AuthMethod::ScramSha256 && config.auth.users.is_empty() {
            return Err(
                "auth.method = \"scram-sha-256\" needs at least one user in [auth.users]".into()
            );
        }
        static HOOK: std::sync::Once = std::sync::Once::new();
        HOOK.call_once(codec::quiet_decoder_panics);
        let tls = load_tls(&config.tls)?;
        std::fs::create_dir_all(&config.data_dir)
            .map_err(|e| format!("cannot create {}: {e}", config.data_dir.display()))?;
        let (db, cluster) = match &config.cluster {
            None => {
                let db = Database::open_dir(&config.data_dir, engine_config, session_config)
                    .map_err(|e| e.message)?;
                (db, None)
            }
            Some(cluster_config) => {
                // The catalog comes from the cluster: the leader creates it.
                let db = Database::attach_dir(&config.data_dir, engine_config, session_config)
                    .map_err(|e| e.message)?;
                let node = cluster::ClusterNode::start(cluster_config, &config.data_dir, &db)?;
                (db, Some(node))
            }
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("kiln-accept")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the runtime: {e}"))?;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(config.listen))
            .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
        let local_addr = listener.local_addr().map_err(|e| e.to_string())?;
        let metrics_listener = match config.metrics_listen {
            Some(addr) => Some(
                runtime
                    .block_on(tokio::net::TcpListener::bind(addr))
                    .map_err(|e| format!("cannot listen on {addr} for metrics: {e}"))?,
            ),
            None => None,
        };
        let metrics_addr = metrics_listener.as_ref().and_then(|l| l.local_addr().ok());
        let scram = (config.auth.method == config::AuthMethod::ScramSha256).then(|| {
            let mut auth =
                ScramAuth::new(Arc::new(ConfigPasswords { users: config.auth.users.clone() }));
            auth.set_iterations(4096);
            Arc::new(
                SASLAuthStartupHandler::new(Arc::new(connection::KilnParameters)).with_scram(auth),
            )
        });
        let (shutdown, _) = tokio::sync::watch::channel(false);
        let timer = Arc::new(Timer::default());
        let t = timer.clone();
        std::thread::Builder::new()
            .name("kiln-timer".into())
            .spawn(move || t.run())
            .map_err(|e| e.to_string())?;
        let watchdog = Arc::new(Watchdog::default());
        let w = watchdog.clone();
        std::thread::Builder::new()
            .name("kiln-watchdog".into())
            .spawn(move || w.run())
            .map_err(|e| e.to_string())?;
        let shared = Arc::new(Shared {
            db,
            config,
            tls,
            slots: Arc::new(AtomicUsize::new(0)),
            rejecting: AtomicUsize::new(0),
            cancels: Mutex::new(HashMap::new()),
            next_pid: AtomicI32::new(1000 + (random_u64() % 30_000) as i32),
            shutdown,
            timer,
            watchdog,
            scram,
            cluster: Mutex::new(cluster),
        });
        let s = shared.clone();
        runtime.spawn(accept_loop(listener, s));
        if let Some(l) = metrics_listener {
            runtime.spawn(metrics::serve(l, shared.db.clone(), shared.slots.clone()));
        }
        info!(listen = %local_addr, metrics = ?metrics_addr, data_dir = %shared.config.data_dir.display(), "kiln is ready");
        Ok(Server { shared, runtime, local_addr, metrics_addr })
    }

    /// The address clients connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The metrics address, when enabled.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// Blocks until SIGTERM or SIGINT, then shuts down cleanly.
    pub fn run_until_signal(self) -> Result<(), String> {
        self.runtime.block_on(async {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut term), Ok(mut int)) =
                (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
            else {
                return;
            };
            tokio::select! {
                _ = term.recv() => info!("SIGTERM: shutting down"),
                _ = int.recv() => info!("SIGINT: shutting down"),
            }
        });
        self.shutdown()
    }

    /// Stops accepting connections, ends idle sessions (57P01), lets running statements
    /// finish (a safe commit in flight completes or fails explicitly) for up to the grace
    /// period, makes everything committed durable, and closes the engine.
    pub fn shutdown(self) -> Result<(), String> {
        let _ = self.shared.shutdown.send(true);
        let deadline = Instant::now() + Duration::from_secs(self.shared.config.shutdown_grace_s);
        while self.shared.slots.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if self.shared.slots.load(Ordering::SeqCst) > 0 {
            // Past the grace period, statements still running are interrupted and their
            // sessions ended (57P01); their transactions roll back.
            warn!("grace period over: terminating the sessions still running");
            self.shared.db.activities().terminate_all();
            let deadline = Instant::now() + Duration::from_secs(5);
            while self.shared.slots.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let left = self.shared.slots.load(Ordering::SeqCst);
        if left > 0 {
            warn!(connections = left, "closing with statements still running");
        }
        self.shared.watchdog.stop.store(true, Ordering::Relaxed);
        self.shared.timer.stop.store(true, Ordering::Relaxed);
        self.shared.timer.wake.notify_all();
        self.runtime.shutdown_timeout(Duration::from_secs(1));
        let cluster = self.shared.cluster.lock().take();
        let closed = match cluster {
            None => self.shared.db.close(),
            Some(node) => {
                // Commits become durable through the cluster, so they are waited for while
                // it still runs; what is not durable then stays in doubt and the cluster
                // decides it after this node stops.
                let _ = self.shared.db.engine().persist_within(CLUSTER_CLOSE_WAIT);
                node.stop();
                self.shared.db.close_within(Duration::ZERO).or_else(|e| {
                    warn!(error = %e.message, "stopped with commits the cluster has not made durable");
                    Ok(())
                })
            }
        };
        closed.map_err(|e: kiln_sql::SqlError| format!("closing the database: {}", e.message))?;
        info!("kiln stopped");
        Ok(())
    }
}

async fn accept_loop(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.changed() => return,
        };
        let (tcp, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // The connection limit is checked before a thread is started: past it, the client is
        // answered 53300 (or its cancel request served) by a short task on this runtime.
        let Some(slot) = shared.take_slot() else {
            if shared.rejecting.fetch_add(1, Ordering::SeqCst) < REJECTING_MAX {
                let s = shared.clone();
                tokio::spawn(async move {
                    connection::reject(tcp, &s).await;
                    s.rejecting.fetch_sub(1, Ordering::SeqCst);
                });
            } else {
                shared.rejecting.fetch_sub(1, Ordering::SeqCst);
            }
            continue;
        };
        let Ok(std_tcp) = tcp.into_std() else { continue };
        let watch =
            std_tcp.try_clone().and_then(|w| w.set_nonblocking(true).map(|()| Arc::new(w))).ok();
        let s = shared.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("kiln-conn-{peer}"))
            .stack_size(CONNECTION_STACK_BYTES)
            .spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build()
                else {
                    return;
                };
                rt.block_on(async move {
                    let Ok(tcp) = tokio::net::TcpStream::from_std(std_tcp) else { return };
                    connection::serve(tcp, s, slot, watch).await;
                });
            });
        if let Err(e) = spawned {
            warn!(error = %e, "cannot start a connection thread");
        }
    }
}
