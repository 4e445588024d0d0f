//! Sessions: statements, transaction blocks, settings, prepared statements and the ED
//! surface (fast/safe per transaction, `kiln_*` functions, durability notifications).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use kiln_engine::{
    CommitMode, DurabilityEvent, Engine, IsolationLevel, Scan, Transaction, TxnId, TxnKind,
    TxnOptions,
};
use parking_lot::Mutex;
use sqlparser::ast;

use crate::activity::{Activities, Activity, Wait};
use crate::bind::*;
use crate::catalog::{Catalog, Column, Index, Table};
use crate::encoding::{decode_row, encode_key, encode_row};
use crate::error::{code, Result, SqlError};
use crate::exec::select::*;
use crate::expr::{assign, CatalogFunc, Ctx, Env, Expr, Func};
use crate::locks::{HeldLocks, LockManager};
use crate::parse::{commit_hint, parse, utility, StatementText, Utility};
use crate::plan::access::*;
use crate::plan::explain::*;
use crate::plan::*;
use crate::system::System;
use crate::types::{now_micros, Columns, DataType, Value};

/// Settings of the SQL layer (the server fills them from its configuration).
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// `synchronous_commit` of new sessions: true = safe (on), false = fast (off).
    pub synchronous_commit: bool,
    /// Default isolation of new sessions.
    pub default_isolation: IsolationLevel,
    /// Rows one statement may hold in memory (53200 beyond).
    pub rows_max: usize,
    /// Statement text size limit in bytes (54000 beyond).
    pub statement_bytes_max: usize,
    /// The engine's fault switches when the server runs with fault injection (tests only):
    /// enables `kiln_fault_fail_syncs(n)`.
    pub faults: Option<Arc<kiln_engine::Faults>>,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            synchronous_commit: true,
            default_isolation: IsolationLevel::ReadCommitted,
            rows_max: 10_000_000,
            statement_bytes_max: 16 << 20,
            faults: None,
        }
    }
}

/// A durability notification for one of a session's transactions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// `kiln_durable` or `kiln_lost`.
    pub channel: String,
    /// The transaction id (`epoch.csn`).
    pub payload: String,
}

struct Inbox {
    queue: Mutex<VecDeque<Notification>>,
    channels: Mutex<HashSet<String>>,
    waker: Mutex<Option<Arc<dyn Fn() + Send + Sync>>>,
}

impl Inbox {
    fn deliver(&self, channel: &str, id: TxnId) {
        if !self.channels.lock().contains(channel) {
            return;
        }
        self.queue.lock().push_back(Notification {
            channel: channel.to_string(),
            payload: format!("{}.{}", id.epoch, id.csn),
        });
        if let Some(w) = &*self.waker.lock() {
            w();
        }
    }
}

/// The sessions waiting to hear about one transaction.
type Watchers = Vec<Weak<Inbox>>;

/// A transaction (epoch, CSN) and who watches it.
type Watched = ((u32, u64), Watchers);

/// Routes the engine's durability events to the sessions whose transactions they concern.
#[derive(Default)]
struct Notifier {
    pending: Mutex<BTreeMap<(u32, u64), Watchers>>,
}

impl Notifier {
    fn watch(&self, id: TxnId, inbox: &Arc<Inbox>) {
        self.pending.lock().entry((id.epoch, id.csn)).or_default().push(Arc::downgrade(inbox));
    }

    fn on_event(&self, event: &DurabilityEvent) {
        let mut pending = self.pending.lock();
        let (channel, hit): (&str, Vec<Watched>) = match event {
            DurabilityEvent::Durable { epoch, csn } => {
                let keys: Vec<(u32, u64)> =
                    pending.range(..=(*epoch, *csn)).map(|(k, _)| *k).collect();
                (
                    "kiln_durable",
                    keys.into_iter().filter_map(|k| pending.remove(&k).map(|v| (k, v))).collect(),
                )
            }
            DurabilityEvent::Lost { epoch, from_csn, .. } => {
                let keys: Vec<(u32, u64)> = pending
                    .range((*epoch, *from_csn)..(*epoch, u64::MAX))
                    .map(|(k, _)| *k)
                    .collect();
                (
                    "kiln_lost",
                    keys.into_iter().filter_map(|k| pending.remove(&k).map(|v| (k, v))).collect(),
                )
            }
        };
        // Delivered under the lock, so whoever takes the lock next sees them queued.
        for ((epoch, csn), inboxes) in hit {
            for inbox in inboxes.iter().filter_map(Weak::upgrade) {
                inbox.deliver(channel, TxnId { epoch, csn, kind: TxnKind::Update });
            }
        }
        drop(pending);
    }
}

/// A database server's shared state: the engine, the catalog cache, row locks.
pub struct Database {
    engine: Engine,
    catalog: Catalog,
    locks: Arc<LockManager>,
    config: SessionConfig,
    next_owner: AtomicU64,
    notifier: Arc<Notifier>,
    stop: Arc<AtomicBool>,
    /// Index and constraint definitions by OID, as the last catalog query saw them (for
    /// pg_get_indexdef and pg_get_constraintdef).
    definitions: Mutex<HashMap<i64, String>>,
    notifier_started: Mutex<bool>,
    /// Every session, for pg_stat_activity and pg_cancel/terminate_backend.
    activities: Activities,
}

impl Database {
    /// Opens the SQL layer on an engine; creates the `kiln` and `postgres` databases on a
    /// fresh engine, and starts the durability-notification router.
    pub fn open(engine: Engine, config: SessionConfig) -> Result<Arc<Database>> {
        let db = Arc::new(Database {
            engine,
            catalog: Catalog::default(),
            locks: Arc::new(LockManager::default()),
            config,
            next_owner: AtomicU64::new(1),
            notifier: Arc::new(Notifier::default()),
            stop: Arc::new(AtomicBool::new(false)),
            definitions: Mutex::new(HashMap::new()),
            notifier_started: Mutex::new(false),
            activities: Activities::default(),
        });
        let mut txn = db.engine.begin(TxnOptions::new().isolation(IsolationLevel::Serializable))?;
        let mut created = false;
        for name in ["kiln", "postgres"] {
            if !db.catalog.database_exists(&mut txn, name)? {
                db.catalog.create_database(&mut txn, name)?;
                created = true;
            }
        }
        if created {
            txn.commit_safe()?;
        }
        Ok(db)
    }

    /// Starts routing durability events to sessions, the first time a session LISTENs: until
    /// then no thread wakes for every flush.
    fn start_notifier(&self) -> Result<()> {
        let mut started = self.notifier_started.lock();
        if *started {
            return Ok(());
        }
        let subscription = self.engine.subscribe();
        let (notifier, stop) = (self.notifier.clone(), self.stop.clone());
        std::thread::Builder::new()
            .name("kiln-notify".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(event) = subscription.recv_timeout(Duration::from_millis(100)) {
                        notifier.on_event(&event);
                    }
                }
            })
            .map_err(|e| SqlError::new(code::INTERNAL, format!("cannot start a thread: {e}")))?;
        *started = true;
        Ok(())
    }

    /// Opens (or creates) the engine in `dir` and the SQL layer on it.
    pub fn open_dir(
        dir: &std::path::Path,
        engine: kiln_engine::Config,
        config: SessionConfig,
    ) -> Result<Arc<Database>> {
        let engine = Engine::open(dir, engine).map_err(|e| {
            let mut err: SqlError = e.into();
            err.message = format!("cannot open {}: {}", dir.display(), err.message);
            err
        })?;
        Database::open(engine, config)
    }

    /// Makes everything committed durable and closes the engine; sessions get 57P01 after.
    pub fn close(&self) -> Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        let flushed = self.engine.persist().map(|_| ());
        self.engine.clone().close()?;
        Ok(flushed?)
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Opens a session for `user` on `database` (3D000 when it does not exist).
    pub fn session(self: &Arc<Self>, user: &str, database: &str, pid: i32) -> Result<Session> {
        let mut txn = self.engine.begin(TxnOptions::new().read_only())?;
        if !self.catalog.database_exists(&mut txn, database)? {
            return Err(SqlError::new(
                code::INVALID_CATALOG,
                format!("database \"{database}\" does not exist"),
            ));
        }
        txn.close_unused();
        let mut settings = BTreeMap::new();
        for (k, v) in default_settings(&self.config) {
            settings.insert(k.to_string(), v);
        }
        let activity = self.activities.register(pid, user, database);
        Ok(Session {
            db: self.clone(),
            engine_session: self.engine.session(),
            user: user.to_string(),
            database: database.to_string(),
            pid,
            txn: None,
            settings,
            prepared: HashMap::new(),
            inbox: Arc::new(Inbox {
                queue: Mutex::new(VecDeque::new()),
                channels: Mutex::new(HashSet::new()),
                waker: Mutex::new(None),
            }),
            interrupt: activity.interrupt().clone(),
            activity,
            copy: None,
            last_write: None,
        })
    }

    /// Stops the notification router (the engine is closed by its owner).
    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Remembers index and constraint definitions by OID (see [`crate::system`]).
    pub fn remember_definitions(&self, defs: Vec<(i64, String)>) {
        let mut map = self.definitions.lock();
        for (oid, def) in defs {
            map.insert(oid, def);
        }
    }

    /// The catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// How many transactions are waiting for a row lock now.
    pub fn lock_waits(&self) -> usize {
        self.locks.waiting()
    }

    /// Every session (pg_stat_activity, cancel and terminate).
    pub fn activities(&self) -> &Activities {
        &self.activities
    }

    /// How many rows are locked now.
    pub fn locked_rows(&self) -> usize {
        self.locks.held()
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn default_settings(config: &SessionConfig) -> Vec<(&'static str, String)> {
    vec![
        ("synchronous_commit", if config.synchronous_commit { "on" } else { "off" }.into()),
        ("default_transaction_isolation", isolation_name(config.default_isolation).into()),
        ("default_transaction_read_only", "off".into()),
        ("application_name", String::new()),
        ("client_encoding", "UTF8".into()),
        ("server_encoding", "UTF8".into()),
        ("datestyle", "ISO, MDY".into()),
        ("intervalstyle", "postgres".into()),
        ("timezone", "UTC".into()),
        ("extra_float_digits", "1".into()),
        ("statement_timeout", "0".into()),
        ("lock_timeout", "0".into()),
        ("idle_in_transaction_session_timeout", "0".into()),
        ("search_path", "\"$user\", public".into()),
        ("standard_conforming_strings", "on".into()),
        ("integer_datetimes", "on".into()),
        ("server_version", crate::SERVER_VERSION.into()),
        ("server_version_num", "150000".into()),
        ("max_connections", "100".into()),
        ("transaction_isolation", isolation_name(config.default_isolation).into()),
        ("transaction_read_only", "off".into()),
        ("is_superuser", "on".into()),
        ("bytea_output", "hex".into()),
        ("client_min_messages", "notice".into()),
        ("row_security", "on".into()),
        ("lc_messages", "C".into()),
        ("lc_monetary", "C".into()),
        ("lc_numeric", "C".into()),
        ("lc_time", "C".into()),
        ("work_mem", "4MB".into()),
        ("jit", "off".into()),
    ]
}

fn isolation_name(i: IsolationLevel) -> &'static str {
    match i {
        IsolationLevel::ReadCommitted => "read committed",
        IsolationLevel::RepeatableRead => "repeatable read",
        IsolationLevel::Serializable => "serializable",
    }
}

fn parse_isolation(s: &str) -> Result<IsolationLevel> {
    match s.trim().to_lowercase().replace('_', " ").as_str() {
        "read committed" | "read uncommitted" => Ok(IsolationLevel::ReadCommitted),
        "repeatable read" => Ok(IsolationLevel::RepeatableRead),
        "serializable" => Ok(IsolationLevel::Serializable),
        other => Err(SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            format!("invalid value for parameter \"default_transaction_isolation\": \"{other}\""),
        )),
    }
}

/// The result of one statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Rows and the command tag (`SELECT n`, `INSERT 0 n` with RETURNING, …).
    Rows {
        /// Column names and types.
        columns: Vec<(String, DataType)>,
        /// The rows.
        rows: Vec<Vec<Value>>,
        /// The command tag.
        tag: String,
    },
    /// A command tag only.
    Command(String),
    /// COPY … FROM STDIN: the client now sends the data; finish with [`Session::copy_data`]
    /// and [`Session::copy_done`].
    CopyIn {
        /// The columns the data holds.
        columns: Vec<(String, DataType)>,
        /// CSV (true) or text.
        csv: bool,
    },
    /// COPY … TO STDOUT: the data, already formatted, one line per row.
    CopyOut {
        /// The columns.
        columns: Vec<(String, DataType)>,
        /// Formatted lines (each ends with a newline).
        lines: Vec<String>,
        /// The command tag.
        tag: String,
    },
    /// An empty query.
    Empty,
}

/// A prepared statement: parsed once, bound and planned at each execution.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The statement text.
    pub sql: String,
    statement: Option<ast::Statement>,
    hint: Option<CommitMode>,
    /// Parameter types ($1 first), fixed by the client or inferred.
    pub param_types: Vec<DataType>,
    /// Result columns, when the statement returns rows.
    pub columns: Option<Vec<(String, DataType)>>,
}

struct TxnState {
    txn: Transaction,
    explicit: bool,
    failed: bool,
    /// Row locks, released at the commit point or whenever this state is dropped.
    locks: HeldLocks,
    hint: Option<CommitMode>,
    local: HashMap<String, String>,
    isolation: IsolationLevel,
    savepoints: Vec<(String, kiln_engine::Savepoint)>,
}

impl TxnState {
    /// Where the innermost savepoint named `name` is (3B001 when there is none).
    fn savepoint_position(&self, name: &str) -> Result<usize> {
        let name = name.to_lowercase();
        self.savepoints
            .iter()
            .rposition(|(n, _)| *n == name)
            .ok_or_else(|| SqlError::new("3B001", format!("savepoint \"{name}\" does not exist")))
    }
}

/// COPY FROM STDIN is inserted in chunks of about this many bytes.
const COPY_CHUNK_BYTES: usize = 1 << 20;

/// The longest COPY row (a record without its line end past this is refused: 54000).
const COPY_ROW_BYTES_MAX: usize = 64 << 20;

/// The most data one COPY FROM STDIN may send (it is one transaction, held in memory until
/// its commit).
const COPY_BYTES_MAX: u64 = 1 << 30;

/// Where the last complete record of COPY data ends (0 when none does): after the last line
/// end outside a quoted CSV field. `scanned` carries how far the buffer was already scanned
/// and whether that point is inside quotes, so each byte is looked at once.
fn last_record_end(buffer: &[u8], csv: bool, scanned: &mut (usize, bool)) -> usize {
    if !csv {
        return buffer.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    }
    let (from, mut quoted) = *scanned;
    let mut end = 0;
    for (i, b) in buffer.iter().enumerate().skip(from) {
        match b {
            b'"' => quoted = !quoted,
            b'\n' if !quoted => end = i + 1,
            _ => {}
        }
    }
    *scanned = (buffer.len(), quoted);
    end
}

struct CopyState {
    /// Bytes received so far.
    bytes: u64,
    /// How far `buffer` was scanned for record ends, and whether that point is quoted.
    scanned: (usize, bool),
    table: Arc<Table>,
    columns: Vec<usize>,
    csv: bool,
    buffer: Vec<u8>,
    rows: u64,
    implicit: bool,
}

/// One client's session.
pub struct Session {
    db: Arc<Database>,
    engine_session: kiln_engine::Session,
    user: String,
    database: String,
    pid: i32,
    txn: Option<TxnState>,
    settings: BTreeMap<String, String>,
    /// Prepared statements by name (the protocol's Parse and SQL PREPARE share them).
    prepared: HashMap<String, Arc<Prepared>>,
    inbox: Arc<Inbox>,
    interrupt: Arc<AtomicBool>,
    /// This session's entry in pg_stat_activity.
    activity: Arc<Activity>,
    copy: Option<CopyState>,
    last_write: Option<TxnId>,
}

/// The stack every statement is guaranteed. Statements nest at most
/// [`crate::parse::EXPRESSION_DEPTH_MAX`] deep, and walking, copying or dropping such a tree
/// recurses once per level; a caller with less stack left than this (a small thread, an
/// embedding application) runs the statement on a fresh segment of this size instead.
pub const STATEMENT_STACK_BYTES: usize = 32 << 20;

fn with_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(STATEMENT_STACK_BYTES, STATEMENT_STACK_BYTES + (1 << 20), f)
}

/// The evaluation environment of a statement of session `$s` (a macro, so that it borrows
/// only the fields it names).
macro_rules! session_env {
    ($s:ident) => {
        SessionEnv {
            db: &$s.db,
            last_write: $s.last_write,
            engine_session: &$s.engine_session,
            user: &$s.user,
            database: &$s.database,
            pid: $s.pid,
            now: now_micros(),
            activity: &$s.activity,
        }
    };
}

struct SessionEnv<'a> {
    db: &'a Database,
    /// The session's last committed transaction that wrote.
    last_write: Option<TxnId>,
    engine_session: &'a kiln_engine::Session,
    user: &'a str,
    database: &'a str,
    pid: i32,
    now: i64,
    activity: &'a Activity,
}

/// Waits run in slices this long, checking for an interrupt between them.
const WAIT_SLICE: Duration = Duration::from_millis(20);

/// How long a safe commit waits for a log that cannot be written (a full disk) before it
/// answers 53100; the commit itself stands and hardens when space returns.
const DISK_FULL_WAIT: Duration = Duration::from_secs(5);

fn id_arg(v: &Value) -> Result<TxnId> {
    let s = v.to_text(DataType::Text).unwrap_or_default();
    s.trim().parse::<TxnId>().map_err(|_| {
        SqlError::new(
            code::INVALID_TEXT,
            format!(
                "invalid transaction id \"{s}\": expected epoch.csn, as kiln_last_txid() returns"
            ),
        )
    })
}

impl Env for SessionEnv<'_> {
    fn now(&self) -> i64 {
        self.now
    }
    fn database(&self) -> String {
        self.database.to_string()
    }
    fn user(&self) -> String {
        self.user.to_string()
    }
    fn backend_pid(&self) -> i32 {
        self.pid
    }
    fn kiln(&self, func: Func, args: &[Value]) -> Result<Value> {
        let engine = &self.db.engine;
        Ok(match func {
            Func::KilnSync => {
                self.engine_session.sync()?;
                let stats = engine.stats();
                Value::Text(format!("{}.{}", stats.epoch, stats.durable_csn))
            }
            Func::KilnPersist => {
                let (epoch, csn) = engine.persist()?;
                Value::Text(format!("{epoch}.{csn}"))
            }
            Func::KilnLastTxid => {
                match self.last_write.or_else(|| self.engine_session.last_txn_id()) {
                    Some(id) => Value::Text(id.to_string()),
                    None => Value::Null,
                }
            }
            Func::KilnTxnStatus => Value::Text(engine.status(id_arg(&args[0])?).as_str().into()),
            Func::KilnWait => {
                let id = id_arg(&args[0])?;
                let ms = match args.get(1) {
                    Some(Value::Int(ms)) if *ms >= 0 => *ms as u64,
                    None | Some(Value::Null) => 10_000,
                    Some(v) => {
                        return Err(SqlError::new(
                            code::INVALID_PARAMETER_VALUE,
                            format!("kiln_wait timeout must be a non-negative number of milliseconds, not {v:?}"),
                        ))
                    }
                };
                let deadline = std::time::Instant::now() + Duration::from_millis(ms);
                self.activity.set_wait(Some(Wait::Durability));
                let status = loop {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    let status = match engine.wait(id, left.min(WAIT_SLICE)) {
                        Ok(s) => s,
                        Err(kiln_engine::Error::Lost { .. }) => kiln_engine::TxnStatus::Lost,
                        Err(e) => break Err(e.into()),
                    };
                    if status != kiln_engine::TxnStatus::Committed || left.is_zero() {
                        break Ok(status);
                    }
                    if let Err(e) = self.activity.check_interrupt() {
                        break Err(e);
                    }
                };
                self.activity.set_wait(None);
                Value::Text(status?.as_str().into())
            }
            Func::CancelBackend | Func::TerminateBackend => {
                let Value::Int(pid) = args[0] else {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER_VALUE,
                        "a backend pid is an integer",
                    ));
                };
                let pid = i32::try_from(pid).unwrap_or(-1);
                let found = if func == Func::CancelBackend {
                    self.db.activities.cancel(pid)
                } else {
                    self.db.activities.terminate(pid)
                };
                if !found {
                    tracing::warn!(pid, "PID {pid} is not a Kiln server process");
                }
                Value::Bool(found)
            }
            Func::Sleep => {
                let seconds = match &args[0] {
                    Value::Float(f) => *f,
                    Value::Int(i) => *i as f64,
                    Value::Numeric(d) => d.to_string().parse().unwrap_or(0.0),
                    _ => 0.0,
                };
                let total = Duration::try_from_secs_f64(seconds.max(0.0)).unwrap_or(Duration::MAX);
                let deadline = std::time::Instant::now().checked_add(total);
                loop {
                    self.activity.check_interrupt()?;
                    let left = match deadline {
                        Some(d) => d.saturating_duration_since(std::time::Instant::now()),
                        None => WAIT_SLICE,
                    };
                    if left.is_zero() {
                        break;
                    }
                    std::thread::sleep(left.min(WAIT_SLICE));
                }
                Value::Null
            }
            Func::KilnFaultPanic => {
                if self.db.config.faults.is_none() {
                    return Err(SqlError::new(
                        code::FEATURE_NOT_SUPPORTED,
                        "fault injection is disabled",
                    )
                    .hint("Start kiln serve with --enable-fault-injection (for tests only)."));
                }
                panic!("kiln_fault_panic() was called");
            }
            Func::KilnFaultFailSyncs => {
                let Some(faults) = &self.db.config.faults else {
                    return Err(SqlError::new(
                        code::FEATURE_NOT_SUPPORTED,
                        "fault injection is disabled",
                    )
                    .hint("Start kiln serve with --enable-fault-injection (for tests only)."));
                };
                let n = match args.first() {
                    Some(Value::Int(n)) if *n >= 0 => *n as u64,
                    _ => {
                        return Err(SqlError::new(
                            code::INVALID_PARAMETER_VALUE,
                            "kiln_fault_fail_syncs needs a non-negative count",
                        ))
                    }
                };
                *faults.path_filter.lock() = ".log".into();
                faults.fail_syncs.store(n, Ordering::SeqCst);
                Value::Text(format!("the next {n} log fsyncs will fail"))
            }
            Func::KilnFaultDiskFull => {
                let Some(faults) = &self.db.config.faults else {
                    return Err(SqlError::new(
                        code::FEATURE_NOT_SUPPORTED,
                        "fault injection is disabled",
                    )
                    .hint("Start kiln serve with --enable-fault-injection (for tests only)."));
                };
                let free = match args.first() {
                    Some(Value::Int(n)) if *n >= 0 => *n as u64,
                    _ => u64::MAX,
                };
                *faults.path_filter.lock() = ".log".into();
                faults.free_bytes.store(free, Ordering::SeqCst);
                Value::Text(if free == u64::MAX {
                    "the log's disk has room again".into()
                } else {
                    format!("the log's disk has {free} bytes free")
                })
            }
            _ => Value::Null,
        })
    }

    fn catalog(&self, func: CatalogFunc, args: &[Value]) -> Result<Value> {
        let arg_int = |i: usize| match args.get(i) {
            Some(Value::Int(n)) => Some(*n),
            Some(Value::Text(s)) => s.trim().parse().ok(),
            _ => None,
        };
        Ok(match func {
            CatalogFunc::TableIsVisible | CatalogFunc::HasPrivilege => Value::Bool(true),
            CatalogFunc::RelationIsPublishable => Value::Bool(false),
            CatalogFunc::UserById => Value::Text("kiln".into()),
            CatalogFunc::EncodingToChar => Value::Text("UTF8".into()),
            CatalogFunc::CurrentSchemas => Value::Text("{pg_catalog,public}".into()),
            CatalogFunc::StatisticsColumns | CatalogFunc::Description => Value::Null,
            CatalogFunc::GetExpr => args.first().cloned().unwrap_or(Value::Null),
            CatalogFunc::FormatType => {
                let Some(oid) = arg_int(0) else { return Ok(Value::Null) };
                let typmod = arg_int(1).unwrap_or(-1);
                let ty = match DataType::from_oid(oid as u32) {
                    Some(DataType::Varchar(_)) if typmod >= 4 => {
                        DataType::Varchar(Some(typmod as u32 - 4))
                    }
                    Some(DataType::Char(_)) if typmod >= 4 => DataType::Char(typmod as u32 - 4),
                    Some(DataType::Numeric(_)) if typmod >= 4 => {
                        let m = (typmod - 4) as u32;
                        DataType::Numeric(Some((m >> 16, m & 0xffff)))
                    }
                    Some(t) => t,
                    None => return Ok(Value::Text("???".into())),
                };
                Value::Text(ty.sql_name())
            }
            CatalogFunc::IndexDef | CatalogFunc::ConstraintDef => match arg_int(0) {
                Some(oid) => self
                    .db
                    .definitions
                    .lock()
                    .get(&oid)
                    .cloned()
                    .map(Value::Text)
                    .unwrap_or(Value::Null),
                None => Value::Null,
            },
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Whatever ends the session, its transaction is rolled back (releasing its row
        // locks) and it leaves pg_stat_activity.
        self.abort();
        self.db.activities.unregister(&self.activity);
    }
}

impl Session {
    /// The flag that stops the running statement (cancel requests, statement_timeout).
    pub fn interrupt_handle(&self) -> Arc<AtomicBool> {
        self.interrupt.clone()
    }

    /// Registers a function called whenever a notification is queued (from another thread).
    /// The same function is called when the session is terminated (pg_terminate_backend).
    pub fn set_notification_waker(&self, waker: Box<dyn Fn() + Send + Sync>) {
        let waker: Arc<dyn Fn() + Send + Sync> = Arc::from(waker);
        self.activity.set_waker(waker.clone());
        *self.inbox.waker.lock() = Some(waker);
    }

    /// Whether the session has been told to end (pg_terminate_backend, shutdown): the
    /// server answers 57P01 and closes the connection.
    pub fn terminating(&self) -> bool {
        self.activity.terminating()
    }

    /// This session's pg_stat_activity entry.
    pub fn activity(&self) -> &Arc<Activity> {
        &self.activity
    }

    /// Marks the end of a statement (the session is idle again, in a block or not).
    fn statement_done(&self) {
        let (in_block, failed) = match &self.txn {
            Some(t) => (t.explicit, t.failed),
            None => (false, false),
        };
        if self.txn.is_none() {
            self.activity.set_transaction(false);
        }
        self.activity.end_statement(in_block, failed);
    }

    /// Takes queued notifications.
    pub fn take_notifications(&self) -> Vec<Notification> {
        self.inbox.queue.lock().drain(..).collect()
    }

    /// ReadyForQuery status: `I` idle, `T` in a transaction block, `E` in a failed one.
    pub fn transaction_status(&self) -> u8 {
        match &self.txn {
            Some(t) if t.explicit && t.failed => b'E',
            Some(t) if t.explicit => b'T',
            _ => b'I',
        }
    }

    /// A setting's current value.
    pub fn setting(&self, name: &str) -> Option<String> {
        let name = name.to_lowercase();
        if let Some(t) = &self.txn {
            if let Some(v) = t.local.get(&name) {
                return Some(v.clone());
            }
        }
        self.settings.get(&name).cloned()
    }

    /// Applies a startup parameter (from the StartupMessage or `-c name=value` options).
    pub fn set_startup_parameter(&mut self, name: &str, value: &str) -> Result<()> {
        self.set(name, value, false)
    }

    /// Rolls back whatever is open (the connection went away).
    pub fn abort(&mut self) {
        if let Some(ts) = self.txn.take() {
            self.finish(ts, false);
        }
        self.copy = None;
    }

    fn finish(&mut self, mut ts: TxnState, _committed: bool) {
        ts.locks.release_all();
        ts.txn.abort();
    }

    /// Runs a simple-protocol query string: its statements in order, stopping at the first
    /// error. Returns the outputs so far and the error, if any. A string of several
    /// statements outside a transaction block runs as one implicit transaction.
    pub fn simple_query(&mut self, sql: &str) -> (Vec<Output>, Option<SqlError>) {
        self.activity.start_statement(sql);
        let result = with_stack(|| self.simple_query_inner(sql));
        self.statement_done();
        result
    }

    fn simple_query_inner(&mut self, sql: &str) -> (Vec<Output>, Option<SqlError>) {
        let mut outputs = Vec::new();
        if sql.len() > self.db.config.statement_bytes_max {
            return (
                outputs,
                Some(SqlError::new(
                    code::PROGRAM_LIMIT,
                    format!(
                        "statement is {} bytes, over the limit of {}",
                        sql.len(),
                        self.db.config.statement_bytes_max
                    ),
                )),
            );
        }
        let texts = match crate::parse::split(sql) {
            Ok(t) => t,
            Err(e) => return (outputs, Some(e)),
        };
        if texts.is_empty() {
            return (vec![Output::Empty], None);
        }
        let implicit = texts.len() > 1 && self.txn.is_none();
        let mut implicit_open = false;
        for StatementText { text, hint } in &texts {
            let hint = *hint;
            let result = (|| -> Result<Output> {
                if let Some(Utility::Vacuum(tables)) = utility(text) {
                    return self.vacuum(&tables);
                }
                let mut statements = parse(text)?;
                let Some(statement) = statements.pop() else { return Ok(Output::Empty) };
                let is_control = matches!(
                    statement,
                    ast::Statement::StartTransaction { .. }
                        | ast::Statement::Commit { .. }
                        | ast::Statement::Rollback { .. }
                );
                if implicit && !is_control && self.txn.is_none() && !implicit_open {
                    self.begin_txn(false, None, None, None)?;
                    implicit_open = true;
                }
                if is_control {
                    implicit_open = false;
                }
                self.execute_statement(&statement, hint, &[], implicit_open)
            })();
            match result {
                Ok(o) => {
                    let stop = matches!(o, Output::CopyIn { .. });
                    outputs.push(o);
                    if stop {
                        return (outputs, None);
                    }
                }
                Err(e) => {
                    self.fail();
                    return (outputs, Some(e.resolve_position(text)));
                }
            }
        }
        if implicit_open {
            if let Some(ts) = self.txn.take() {
                if let Err(e) = self.commit_txn(ts, None) {
                    return (outputs, Some(e));
                }
            }
        }
        (outputs, None)
    }

    /// After an error: an explicit block becomes failed; anything else is rolled back.
    pub fn fail(&mut self) {
        self.interrupt.store(false, Ordering::Relaxed);
        match &mut self.txn {
            Some(t) if t.explicit => {
                t.failed = true;
                t.locks.release_all();
            }
            Some(_) => {
                if let Some(ts) = self.txn.take() {
                    self.finish(ts, false);
                }
            }
            None => {}
        }
        self.copy = None;
    }

    /// Prepares a statement (extended protocol Parse): `declared` are the client's parameter
    /// types (`Unknown` for unspecified).
    pub fn prepare(&mut self, sql: &str, declared: &[DataType]) -> Result<Prepared> {
        with_stack(|| self.prepare_inner(sql, declared))
    }

    fn prepare_inner(&mut self, sql: &str, declared: &[DataType]) -> Result<Prepared> {
        if sql.len() > self.db.config.statement_bytes_max {
            return Err(SqlError::new(code::PROGRAM_LIMIT, "statement too long"));
        }
        let mut statements = parse(sql)?;
        if statements.len() > 1 {
            return Err(SqlError::syntax(
                "cannot insert multiple commands into a prepared statement",
            ));
        }
        let statement = statements.pop();
        // Describe: bind without executing to learn parameter and result types.
        let (param_types, columns) = match &statement {
            Some(stmt) => self.describe(stmt, declared).map_err(|e| e.resolve_position(sql))?,
            None => (declared.to_vec(), None),
        };
        Ok(Prepared {
            sql: sql.to_string(),
            statement,
            hint: commit_hint(sql),
            param_types,
            columns,
        })
    }

    fn describe(
        &mut self,
        stmt: &ast::Statement,
        declared: &[DataType],
    ) -> Result<(Vec<DataType>, Option<Columns>)> {
        let describable = matches!(
            stmt,
            ast::Statement::Query(_)
                | ast::Statement::Insert(_)
                | ast::Statement::Update(_)
                | ast::Statement::Delete(_)
        );
        if !describable {
            // Statements that answer rows without a plan describe their columns too: a driver
            // told NoData and then sent a DataRow raises.
            let columns = match stmt {
                ast::Statement::ShowVariable { variable } => Some(match show_name(variable) {
                    n if n == "all" => vec![
                        ("name".to_string(), DataType::Text),
                        ("setting".to_string(), DataType::Text),
                    ],
                    n => vec![(n, DataType::Text)],
                }),
                ast::Statement::Explain { .. } => {
                    Some(vec![("QUERY PLAN".to_string(), DataType::Text)])
                }
                _ => None,
            };
            return Ok((
                declared
                    .iter()
                    .map(|t| if *t == DataType::Unknown { DataType::Text } else { *t })
                    .collect(),
                columns,
            ));
        }
        let failed = self.txn.as_ref().is_some_and(|t| t.failed);
        if failed {
            return Err(in_failed());
        }
        let mut own = None;
        let txn = match &mut self.txn {
            Some(t) => &mut t.txn,
            None => {
                own = Some(self.db.engine.begin(
                    TxnOptions::new().read_only().isolation(IsolationLevel::ReadCommitted),
                )?);
                own.as_mut().expect("just set")
            }
        };
        let env = session_env!(self);
        let system = System { db: &self.db, database: &self.database, settings: &self.settings };
        let mut planner = Planner {
            txn,
            catalog: &self.db.catalog,
            db: &self.database,
            params: declared.to_vec(),
            param_values: None,
            system: &system,
            env: &env,
            outer: vec![],
            correlated: false,
            outer_refs: vec![],
        };
        let columns = match stmt {
            ast::Statement::Query(q) => Some(planner.query(q, None)?.columns),
            ast::Statement::Insert(ins) => {
                let plan = plan_insert(&mut planner, ins)?;
                plan.returning.map(|r| r.columns)
            }
            ast::Statement::Update(u) => plan_update(&mut planner, u)?.returning.map(|r| r.columns),
            ast::Statement::Delete(d) => plan_delete(&mut planner, d)?.returning.map(|r| r.columns),
            _ => None,
        };
        let params = planner
            .params
            .iter()
            .map(|t| if *t == DataType::Unknown { DataType::Text } else { *t })
            .collect();
        if let Some(own) = own {
            own.close_unused();
        }
        Ok((params, columns))
    }

    /// Stores a prepared statement under `name` (the unnamed one, `""`, is replaced; a named
    /// one that exists is 42P05, as in PostgreSQL).
    pub fn store_prepared(&mut self, name: &str, prepared: Prepared) -> Result<Arc<Prepared>> {
        if !name.is_empty() && self.prepared.contains_key(name) {
            return Err(SqlError::new(
                "42P05",
                format!("prepared statement \"{name}\" already exists"),
            ));
        }
        let prepared = Arc::new(prepared);
        self.prepared.insert(name.to_string(), prepared.clone());
        Ok(prepared)
    }

    /// A prepared statement by name.
    pub fn get_prepared(&self, name: &str) -> Option<Arc<Prepared>> {
        self.prepared.get(name).cloned()
    }

    /// Drops a prepared statement (nothing happens when there is none, as for Close).
    pub fn close_prepared(&mut self, name: &str) {
        self.prepared.remove(name);
    }

    /// Executes a prepared statement with parameter values (extended protocol Execute).
    pub fn execute_prepared(&mut self, prepared: &Prepared, params: &[Value]) -> Result<Output> {
        self.activity.start_statement(&prepared.sql);
        let result = with_stack(|| self.execute_prepared_inner(prepared, params));
        self.statement_done();
        result
    }

    fn execute_prepared_inner(&mut self, prepared: &Prepared, params: &[Value]) -> Result<Output> {
        let Some(stmt) = &prepared.statement else { return Ok(Output::Empty) };
        if let Some(Utility::Vacuum(tables)) = utility(&prepared.sql) {
            return self.vacuum(&tables);
        }
        let r = self.execute_statement(stmt, prepared.hint, params, false);
        if r.is_err() {
            self.fail();
        }
        r.map_err(|e| e.resolve_position(&prepared.sql))
    }

    fn begin_txn(
        &mut self,
        explicit: bool,
        isolation: Option<IsolationLevel>,
        read_only: Option<bool>,
        hint: Option<CommitMode>,
    ) -> Result<()> {
        let isolation = match isolation {
            Some(i) => i,
            None => {
                parse_isolation(&self.setting("default_transaction_isolation").unwrap_or_default())?
            }
        };
        let read_only = read_only.unwrap_or_else(|| {
            self.setting("default_transaction_read_only").as_deref() == Some("on")
        });
        let mut options = TxnOptions::new().isolation(isolation);
        if read_only {
            options = options.read_only();
        }
        let txn = self.engine_session.begin(options)?;
        let mut local = HashMap::new();
        local.insert("transaction_isolation".to_string(), isolation_name(isolation).to_string());
        local.insert(
            "transaction_read_only".to_string(),
            if read_only { "on" } else { "off" }.to_string(),
        );
        self.activity.set_transaction(true);
        self.txn = Some(TxnState {
            txn,
            explicit,
            failed: false,
            locks: HeldLocks::new(
                self.db.locks.clone(),
                self.db.next_owner.fetch_add(1, Ordering::Relaxed),
            ),
            hint,
            local,
            isolation,
            savepoints: Vec::new(),
        });
        Ok(())
    }

    /// The open transaction block, for a statement that needs one (25P01 otherwise).
    fn block(&mut self, what: &str) -> Result<&mut TxnState> {
        self.txn.as_mut().filter(|t| t.explicit).ok_or_else(|| {
            SqlError::new(
                code::NO_ACTIVE_TXN,
                format!("{what} can only be used in transaction blocks"),
            )
        })
    }

    fn commit_mode(&self, ts: &TxnState, hint: Option<CommitMode>) -> CommitMode {
        if let Some(h) = hint.or(ts.hint) {
            return h;
        }
        let sc = ts
            .local
            .get("synchronous_commit")
            .cloned()
            .or_else(|| self.settings.get("synchronous_commit").cloned())
            .unwrap_or_default();
        if sc == "off" {
            CommitMode::Fast
        } else {
            CommitMode::Safe
        }
    }

    fn commit_txn(&mut self, ts: TxnState, hint: Option<CommitMode>) -> Result<TxnId> {
        let mode = self.commit_mode(&ts, hint);
        let TxnState { txn, mut locks, .. } = ts;
        let committed = txn.commit_point(mode);
        // Row locks go at the commit point, before any wait for durability (G9).
        locks.release_all();
        let committed = committed?;
        let id = committed.id();
        if id.kind == TxnKind::Update {
            self.last_write = Some(id);
        }
        if id.kind == TxnKind::Update && !self.inbox.channels.lock().is_empty() {
            self.db.notifier.watch(id, &self.inbox);
            // Already durable by the time we registered? Deliver now.
            let status = self.db.engine.status(id);
            match status {
                kiln_engine::TxnStatus::Durable => self
                    .db
                    .notifier
                    .on_event(&DurabilityEvent::Durable { epoch: id.epoch, csn: id.csn }),
                kiln_engine::TxnStatus::Lost => self.db.notifier.on_event(&DurabilityEvent::Lost {
                    epoch: id.epoch,
                    from_csn: id.csn,
                    new_epoch: id.epoch + 1,
                    cause: String::new(),
                }),
                _ => {}
            }
        }
        let waited = committed.waits();
        if waited {
            self.activity.set_wait(Some(Wait::Durability));
        }
        let acknowledged = self.acknowledge(committed);
        self.activity.set_wait(None);
        let id = acknowledged?;
        if waited && id.kind == TxnKind::Update && !self.inbox.channels.lock().is_empty() {
            // Acknowledged at its durability point: tell the session before it hears the reply.
            self.db.notifier.on_event(&DurabilityEvent::Durable { epoch: id.epoch, csn: id.csn });
        }
        Ok(id)
    }

    /// Waits for a commit's acknowledgement (a safe one's durability point) in slices, so
    /// that the wait can end early: a cancel or a terminated session answers 57014 / 57P01,
    /// and a disk full for longer than [`DISK_FULL_WAIT`] answers 53100. Either way the
    /// transaction stays committed and visible, and becomes durable once the log can be
    /// written again (or is lost on a later failure): the error says so, with its id.
    fn acknowledge(&self, committed: kiln_engine::Committed) -> Result<TxnId> {
        let id = committed.id();
        let mut committed = committed;
        let mut stalled_since: Option<std::time::Instant> = None;
        loop {
            match committed.acknowledge_within(WAIT_SLICE)? {
                kiln_engine::Acknowledgement::Acknowledged(id) => return Ok(id),
                kiln_engine::Acknowledgement::Pending(c) => committed = c,
            }
            let unconfirmed = |e: SqlError| {
                e.detail(format!(
                    "Transaction {id} is committed and visible, but its durability was not confirmed: kiln_txn_status('{id}') tells whether it became durable or was lost."
                ))
            };
            if let Err(e) = self.activity.check_interrupt() {
                return Err(unconfirmed(e));
            }
            match self.db.engine.stats().stalled {
                Some(cause) => {
                    let since = *stalled_since.get_or_insert_with(std::time::Instant::now);
                    if since.elapsed() >= DISK_FULL_WAIT {
                        let e = SqlError::new(
                            code::DISK_FULL,
                            format!("could not make the commit durable: {cause}"),
                        )
                        .hint("Free disk space: waiting commits become durable as soon as the log can be written.");
                        return Err(unconfirmed(e));
                    }
                }
                None => stalled_since = None,
            }
        }
    }

    fn vacuum(&mut self, tables: &[String]) -> Result<Output> {
        if self.txn.as_ref().is_some_and(|t| t.explicit) {
            return Err(SqlError::new(
                code::ACTIVE_TXN,
                "VACUUM cannot run inside a transaction block",
            ));
        }
        let mut txn = self.db.engine.begin(TxnOptions::new().read_only())?;
        for t in tables {
            self.db.catalog.table_or_err(&mut txn, &self.database, t)?;
        }
        drop(txn);
        self.db.engine.gc();
        Ok(Output::Command("VACUUM".into()))
    }

    fn set(&mut self, name: &str, value: &str, local: bool) -> Result<()> {
        let name = name.to_lowercase();
        let value = value.trim().to_string();
        if name == "application_name" {
            self.activity.set_application_name(&value);
        }
        let normalized = match name.as_str() {
            "synchronous_commit" => match value.to_lowercase().as_str() {
                "on" | "true" | "yes" | "1" | "local" | "remote_write" | "remote_apply" => {
                    "on".to_string()
                }
                "off" | "false" | "no" | "0" => "off".to_string(),
                _ => {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER_VALUE,
                        format!("invalid value for parameter \"synchronous_commit\": \"{value}\""),
                    )
                    .hint("Available values: local, remote_write, remote_apply, on, off."))
                }
            },
            "default_transaction_isolation" | "transaction_isolation" => {
                isolation_name(parse_isolation(&value)?).to_string()
            }
            "statement_timeout" | "lock_timeout" | "idle_in_transaction_session_timeout" => {
                parse_duration_ms(&name, &value)?.to_string()
            }
            "client_encoding" => {
                let v = value.to_uppercase().replace('-', "");
                if v != "UTF8" && v != "UNICODE" && v != "SQL_ASCII" {
                    return Err(SqlError::new(
                        code::FEATURE_NOT_SUPPORTED,
                        format!("client_encoding {value} is not supported by Kiln; use UTF8"),
                    ));
                }
                "UTF8".into()
            }
            "timezone" => {
                if !matches!(
                    value.to_uppercase().as_str(),
                    "UTC" | "GMT" | "ETC/UTC" | "Z" | "+00" | "0"
                ) {
                    return Err(SqlError::unsupported(format!(
                        "time zone {value} (Kiln keeps UTC)"
                    )));
                }
                "UTC".into()
            }
            "default_transaction_read_only" | "transaction_read_only" => {
                if crate::types::parse_bool(&value)? {
                    "on".into()
                } else {
                    "off".into()
                }
            }
            "server_version" | "server_version_num" | "server_encoding" | "integer_datetimes"
            | "max_connections" | "is_superuser" => {
                return Err(SqlError::new(
                    "55P02",
                    format!("parameter \"{name}\" cannot be changed"),
                ));
            }
            n if self.settings.contains_key(n) => value.clone(),
            "search_path"
            | "application_name"
            | "extra_float_digits"
            | "datestyle"
            | "intervalstyle"
            | "client_min_messages"
            | "work_mem"
            | "jit"
            | "row_security" => value.clone(),
            n if n.contains('.') => value.clone(),
            _ => {
                return Err(SqlError::new(
                    code::UNDEFINED_SETTING,
                    format!("unrecognized configuration parameter \"{name}\""),
                ))
            }
        };
        if name == "transaction_isolation" {
            if let Some(t) = &self.txn {
                if t.txn.has_writes() || t.txn.read_dependency() > 0 {
                    return Err(SqlError::new(
                        code::ACTIVE_TXN,
                        "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                    ));
                }
            }
            if let Some(t) = &mut self.txn {
                let level = parse_isolation(&normalized)?;
                if level != t.isolation {
                    let read_only =
                        t.local.get("transaction_read_only").map(|v| v == "on").unwrap_or(false);
                    let mut options = TxnOptions::new().isolation(level);
                    if read_only {
                        options = options.read_only();
                    }
                    t.txn = self.engine_session.begin(options)?;
                    t.isolation = level;
                }
                t.local.insert(name, normalized);
            }
            return Ok(());
        }
        if local || name == "transaction_read_only" {
            if let Some(t) = &mut self.txn {
                t.local.insert(name, normalized);
            }
            // SET LOCAL outside a transaction block has no effect (PostgreSQL warns).
            return Ok(());
        }
        if let Some(t) = &mut self.txn {
            t.local.remove(&name);
        }
        self.settings.insert(name, normalized);
        Ok(())
    }

    /// Executes one parsed statement.
    fn execute_statement(
        &mut self,
        stmt: &ast::Statement,
        hint: Option<CommitMode>,
        params: &[Value],
        in_implicit: bool,
    ) -> Result<Output> {
        use ast::Statement as S;
        self.interrupt.store(false, Ordering::Relaxed);
        // In a failed block only ROLLBACK [TO SAVEPOINT] (or COMMIT, which rolls back) is
        // accepted.
        if self.txn.as_ref().is_some_and(|t| t.failed)
            && !matches!(stmt, S::Rollback { .. } | S::Commit { .. })
        {
            return Err(in_failed());
        }
        match stmt {
            S::StartTransaction { modes, .. } => {
                let (isolation, read_only) = txn_modes(modes)?;
                if let Some(t) = &mut self.txn {
                    // Already in a block: PostgreSQL warns and carries on. In the implicit
                    // transaction of a multi-statement query, BEGIN makes it explicit.
                    t.explicit = true;
                    if hint.is_some() {
                        t.hint = hint;
                    }
                    return Ok(Output::Command("BEGIN".into()));
                }
                self.begin_txn(true, isolation, read_only, hint)?;
                Ok(Output::Command("BEGIN".into()))
            }
            S::Commit { .. } => {
                let Some(ts) = self.txn.take() else {
                    return Ok(Output::Command("COMMIT".into()));
                };
                if ts.failed {
                    self.finish(ts, false);
                    return Ok(Output::Command("ROLLBACK".into()));
                }
                self.commit_txn(ts, hint)?;
                Ok(Output::Command("COMMIT".into()))
            }
            S::Savepoint { name } => {
                let name = name.value.to_lowercase();
                let ts = self.block("SAVEPOINT")?;
                let sp = ts.txn.savepoint();
                ts.savepoints.push((name, sp));
                Ok(Output::Command("SAVEPOINT".into()))
            }
            S::Rollback { savepoint: Some(name), .. } => {
                let ts = self.block("ROLLBACK TO SAVEPOINT")?;
                let pos = ts.savepoint_position(&name.value)?;
                let sp = ts.savepoints[pos].1;
                ts.savepoints.truncate(pos + 1);
                ts.txn.rollback_to(sp)?;
                // The block is usable again (PostgreSQL's subtransaction abort).
                ts.failed = false;
                Ok(Output::Command("ROLLBACK".into()))
            }
            S::ReleaseSavepoint { name } => {
                let ts = self.block("RELEASE SAVEPOINT")?;
                if ts.failed {
                    return Err(in_failed());
                }
                let pos = ts.savepoint_position(&name.value)?;
                let sp = ts.savepoints[pos].1;
                ts.savepoints.truncate(pos);
                ts.txn.release(sp);
                Ok(Output::Command("RELEASE".into()))
            }
            S::Rollback { .. } => {
                if let Some(ts) = self.txn.take() {
                    self.finish(ts, false);
                }
                Ok(Output::Command("ROLLBACK".into()))
            }
            S::Set(set) => self.execute_set(set),
            S::ShowVariable { variable } => {
                let name = show_name(variable);
                if name == "all" {
                    let rows = self
                        .settings
                        .iter()
                        .map(|(k, v)| vec![Value::Text(k.clone()), Value::Text(v.clone())])
                        .collect::<Vec<_>>();
                    let n = rows.len();
                    return Ok(Output::Rows {
                        columns: vec![
                            ("name".into(), DataType::Text),
                            ("setting".into(), DataType::Text),
                        ],
                        rows,
                        tag: format!("SHOW {n}"),
                    });
                }
                let v = self.setting(&name).ok_or_else(|| {
                    SqlError::new(
                        code::UNDEFINED_SETTING,
                        format!("unrecognized configuration parameter \"{name}\""),
                    )
                })?;
                Ok(Output::Rows {
                    columns: vec![(name, DataType::Text)],
                    rows: vec![vec![Value::Text(v)]],
                    tag: "SHOW".into(),
                })
            }
            S::Reset(r) => {
                match &r.reset {
                    ast::Reset::ALL => {
                        let defaults = default_settings(&self.db.config);
                        for (k, v) in defaults {
                            self.settings.insert(k.to_string(), v);
                        }
                    }
                    ast::Reset::ConfigurationParameter(p) => {
                        let name = object_name(p)?;
                        let default = default_settings(&self.db.config)
                            .into_iter()
                            .find(|(k, _)| *k == name)
                            .map(|(_, v)| v)
                            .unwrap_or_default();
                        self.settings.insert(name, default);
                    }
                    ast::Reset::SessionAuthorization => {}
                }
                Ok(Output::Command("RESET".into()))
            }
            S::Deallocate { name, .. } => {
                if name.value.eq_ignore_ascii_case("all") {
                    self.prepared.clear();
                } else if self.prepared.remove(&name.value).is_none() {
                    return Err(SqlError::new(
                        code::INVALID_STATEMENT_NAME,
                        format!("prepared statement \"{}\" does not exist", name.value),
                    ));
                }
                Ok(Output::Command(if name.value.eq_ignore_ascii_case("all") {
                    "DEALLOCATE ALL".into()
                } else {
                    "DEALLOCATE".into()
                }))
            }
            S::Prepare { name, data_types, statement } => {
                let declared = data_types.iter().map(data_type).collect::<Result<Vec<_>>>()?;
                let prepared = self.prepare(&statement.to_string(), &declared)?;
                self.store_prepared(&name.value, prepared)?;
                Ok(Output::Command("PREPARE".into()))
            }
            S::Execute { name: Some(name), parameters, immediate: false, .. } => {
                let name = object_name(name)?;
                let prepared = self.get_prepared(&name).ok_or_else(|| {
                    SqlError::new(
                        code::INVALID_STATEMENT_NAME,
                        format!("prepared statement \"{name}\" does not exist"),
                    )
                })?;
                if parameters.len() != prepared.param_types.len() {
                    return Err(SqlError::syntax(format!(
                        "wrong number of parameters for prepared statement \"{name}\""
                    ))
                    .detail(format!(
                        "Expected {} parameters but got {}.",
                        prepared.param_types.len(),
                        parameters.len()
                    )));
                }
                let mut values = Vec::with_capacity(parameters.len());
                for (p, ty) in parameters.iter().zip(&prepared.param_types) {
                    let (e, _) = bind_free(p)?;
                    let env = session_env!(self);
                    values.push(e.eval(&[], &Ctx::new(params, &env))?.cast(*ty)?);
                }
                self.execute_prepared_inner(&prepared, &values)
            }
            S::Discard { .. } => {
                self.prepared.clear();
                Ok(Output::Command("DISCARD ALL".into()))
            }
            S::LISTEN { channel } => {
                self.db.start_notifier()?;
                self.inbox.channels.lock().insert(channel.value.to_lowercase());
                Ok(Output::Command("LISTEN".into()))
            }
            S::UNLISTEN { channel } => {
                if channel.value == "*" {
                    self.inbox.channels.lock().clear();
                } else {
                    self.inbox.channels.lock().remove(&channel.value.to_lowercase());
                }
                Ok(Output::Command("UNLISTEN".into()))
            }
            S::Analyze(_) => Ok(Output::Command("ANALYZE".into())),
            _ => self.in_transaction(stmt, hint, params, in_implicit),
        }
    }

    fn execute_set(&mut self, set: &ast::Set) -> Result<Output> {
        match set {
            ast::Set::SingleAssignment { scope, variable, values, .. } => {
                let name = object_name(variable)?;
                let value = values.iter().map(set_value).collect::<Vec<_>>().join(", ");
                let local = matches!(scope, Some(ast::ContextModifier::Local));
                self.set(&name, &value, local)?;
            }
            ast::Set::SetTransaction { modes, session, .. } => {
                let (isolation, read_only) = txn_modes(modes)?;
                if let Some(i) = isolation {
                    let key = if *session {
                        "default_transaction_isolation"
                    } else {
                        "transaction_isolation"
                    };
                    self.set(key, isolation_name(i), false)?;
                }
                if let Some(r) = read_only {
                    let key = if *session {
                        "default_transaction_read_only"
                    } else {
                        "transaction_read_only"
                    };
                    self.set(key, if r { "on" } else { "off" }, false)?;
                    if !*session {
                        if let Some(t) = &mut self.txn {
                            if r {
                                let level = t.isolation;
                                t.txn = self
                                    .engine_session
                                    .begin(TxnOptions::new().isolation(level).read_only())?;
                            }
                        }
                    }
                }
            }
            ast::Set::SetTimeZone { value, .. } => {
                self.set("timezone", &set_value(value), false)?;
            }
            ast::Set::SetNames { charset_name, .. } => {
                self.set("client_encoding", &charset_name.value, false)?;
            }
            other => return Err(SqlError::unsupported(format!("the statement {other}"))),
        }
        Ok(Output::Command("SET".into()))
    }

    /// Statements that run in a transaction (an implicit one when none is open).
    fn in_transaction(
        &mut self,
        stmt: &ast::Statement,
        hint: Option<CommitMode>,
        params: &[Value],
        in_implicit: bool,
    ) -> Result<Output> {
        let autocommit = self.txn.is_none();
        if autocommit {
            self.begin_txn(false, None, None, None)?;
        }
        let result = self.run(stmt, params);
        if autocommit && !in_implicit {
            let ts = self.txn.take().expect("opened above");
            match result {
                Ok(out) => {
                    if matches!(out, Output::CopyIn { .. }) {
                        self.txn = Some(ts);
                        if let Some(c) = &mut self.copy {
                            c.implicit = true;
                        }
                        return Ok(out);
                    }
                    self.commit_txn(ts, hint)?;
                    Ok(out)
                }
                Err(e) => {
                    self.finish(ts, false);
                    Err(e)
                }
            }
        } else {
            if hint.is_some() {
                if let Some(t) = &mut self.txn {
                    // A hint on one statement of a block applies to the block's commit.
                    t.hint = hint;
                }
            }
            result
        }
    }

    fn run(&mut self, stmt: &ast::Statement, params: &[Value]) -> Result<Output> {
        use ast::Statement as S;
        let ts = self.txn.as_mut().expect("a transaction is open");
        if ts.isolation == IsolationLevel::ReadCommitted {
            // READ COMMITTED: each statement sees what committed before it began.
            ts.txn.refresh_snapshot()?;
        }
        let env = session_env!(self);
        let system = System { db: &self.db, database: &self.database, settings: &self.settings };
        let limits =
            ExecLimits { rows_max: self.db.config.rows_max, activity: Some(self.activity.clone()) };
        let ctx = Ctx::new(params, &env);
        let lock_timeout = self
            .settings
            .get("lock_timeout")
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|v| *v > 0)
            .map(Duration::from_millis);
        let mut w = Writer {
            db: &self.db,
            ts,
            lock_timeout,
            interrupt: &self.interrupt,
            activity: &self.activity,
        };
        // A planner for this statement (parameter values known: subqueries may run).
        macro_rules! planner {
            () => {
                Planner::new(
                    &mut w.ts.txn,
                    &self.db.catalog,
                    &self.database,
                    param_types(params),
                    Some(params),
                    &system,
                    &env,
                )
            };
        }
        match stmt {
            S::Query(q) => {
                let mut planner = planner!();
                let plan = planner.query(q, None)?;
                let rows = if plan.lock {
                    w.select_for_update(&plan, &ctx, &limits)?
                } else {
                    let cell = RefCell::new(&mut w.ts.txn);
                    let exec = Exec { txn: &cell, limits: &limits };
                    let ctx = Ctx { runner: Some(&exec), ..ctx };
                    execute_select(&plan, &cell, &ctx, &limits)?
                };
                let tag = format!("SELECT {}", rows.len());
                Ok(Output::Rows { columns: plan.columns, rows, tag })
            }
            S::Insert(ins) => {
                let mut planner = planner!();
                let plan = plan_insert(&mut planner, ins)?;
                w.insert(plan, &ctx, &limits)
            }
            S::Update(u) => {
                let mut planner = planner!();
                let plan = plan_update(&mut planner, u)?;
                w.update(plan, &ctx, &limits)
            }
            S::Delete(d) => {
                let mut planner = planner!();
                let plan = plan_delete(&mut planner, d)?;
                w.delete(plan, &ctx, &limits)
            }
            S::Explain { statement, .. } => {
                let mut planner = planner!();
                let lines = match statement.as_ref() {
                    S::Query(q) => explain(&planner.query(q, None)?),
                    S::Update(u) => {
                        let p = plan_update(&mut planner, u)?;
                        let mut l = vec![format!("Update on {}", p.table.name)];
                        l.extend(explain(&p.scan));
                        l
                    }
                    S::Delete(d) => {
                        let p = plan_delete(&mut planner, d)?;
                        let mut l = vec![format!("Delete on {}", p.table.name)];
                        l.extend(explain(&p.scan));
                        l
                    }
                    S::Insert(i) => {
                        vec![format!("Insert on {}", object_name(&table_object(&i.table)?)?)]
                    }
                    other => return Err(SqlError::unsupported(format!("EXPLAIN of {other}"))),
                };
                let rows = lines.into_iter().map(|l| vec![Value::Text(l)]).collect::<Vec<_>>();
                let tag = "EXPLAIN".to_string();
                Ok(Output::Rows { columns: vec![("QUERY PLAN".into(), DataType::Text)], rows, tag })
            }
            S::CreateTable(ct) => w.create_table(ct, &self.database),
            S::Drop { object_type, if_exists, names, .. } => {
                w.drop(*object_type, *if_exists, names, &self.database)
            }
            S::CreateIndex(ci) => w.create_index(ci, &self.database),
            S::AlterTable(at) => w.alter_table(at, &self.database),
            S::Truncate(t) => {
                for target in &t.table_names {
                    let name = object_name(&target.name)?;
                    let table =
                        self.db.catalog.table_or_err(&mut w.ts.txn, &self.database, &name)?;
                    w.truncate(&table)?;
                }
                Ok(Output::Command("TRUNCATE TABLE".into()))
            }
            S::CreateDatabase { db_name, if_not_exists, .. } => {
                let name = object_name(db_name)?;
                if self.db.catalog.database_exists(&mut w.ts.txn, &name)? {
                    if *if_not_exists {
                        return Ok(Output::Command("CREATE DATABASE".into()));
                    }
                    return Err(SqlError::new(
                        code::DUPLICATE_DATABASE,
                        format!("database \"{name}\" already exists"),
                    ));
                }
                self.db.catalog.create_database(&mut w.ts.txn, &name)?;
                Ok(Output::Command("CREATE DATABASE".into()))
            }
            S::Copy { source, to, target, options, legacy_options, .. } => {
                let csv = copy_csv(options, legacy_options)?;
                match (source, to, target) {
                    (
                        ast::CopySource::Table { table_name, columns },
                        false,
                        ast::CopyTarget::Stdin,
                    ) => {
                        let table = self.db.catalog.table_or_err(
                            &mut w.ts.txn,
                            &self.database,
                            &object_name(table_name)?,
                        )?;
                        let cols = if columns.is_empty() {
                            (0..table.columns.len()).collect()
                        } else {
                            columns
                                .iter()
                                .map(|c| table.column_or_err(&c.value.to_lowercase()))
                                .collect::<Result<Vec<_>>>()?
                        };
                        let out_cols = cols
                            .iter()
                            .map(|&c| (table.columns[c].name.clone(), table.columns[c].ty))
                            .collect();
                        self.copy = Some(CopyState {
                            bytes: 0,
                            scanned: (0, false),
                            table,
                            columns: cols,
                            csv,
                            buffer: Vec::new(),
                            rows: 0,
                            implicit: false,
                        });
                        Ok(Output::CopyIn { columns: out_cols, csv })
                    }
                    (source, true, ast::CopyTarget::Stdout) => {
                        let mut planner = Planner::new(
                            &mut w.ts.txn,
                            &self.db.catalog,
                            &self.database,
                            vec![],
                            Some(params),
                            &system,
                            &env,
                        );
                        let plan = match source {
                            ast::CopySource::Query(q) => planner.query(q, None)?,
                            ast::CopySource::Table { table_name, columns } => {
                                let cols = if columns.is_empty() {
                                    "*".to_string()
                                } else {
                                    columns
                                        .iter()
                                        .map(|c| c.to_string())
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                };
                                let q = format!("SELECT {cols} FROM {table_name}");
                                let Some(ast::Statement::Query(q)) = parse(&q)?.pop() else {
                                    return Err(SqlError::syntax("bad COPY"));
                                };
                                planner.query(&q, None)?
                            }
                        };
                        let rows = {
                            let cell = RefCell::new(&mut w.ts.txn);
                            let exec = Exec { txn: &cell, limits: &limits };
                            let ctx = Ctx { runner: Some(&exec), ..ctx };
                            execute_select(&plan, &cell, &ctx, &limits)?
                        };
                        let lines = rows
                            .iter()
                            .map(|r| format_copy_line(r, &plan.columns, csv))
                            .collect::<Vec<_>>();
                        let tag = format!("COPY {}", rows.len());
                        Ok(Output::CopyOut { columns: plan.columns, lines, tag })
                    }
                    _ => Err(SqlError::unsupported(
                        "COPY to or from a file or program (use STDIN/STDOUT)",
                    )),
                }
            }
            other => Err(SqlError::unsupported(format!(
                "the statement {}",
                first_words(&other.to_string())
            ))),
        }
    }

    /// COPY FROM STDIN data (any chunking).
    pub fn copy_data(&mut self, data: &[u8]) -> Result<()> {
        let Some(copy) = &mut self.copy else {
            return Err(SqlError::new(code::PROTOCOL_VIOLATION, "unexpected COPY data"));
        };
        copy.bytes += data.len() as u64;
        if copy.bytes > COPY_BYTES_MAX {
            let e = SqlError::new(
                code::PROGRAM_LIMIT,
                format!("COPY data is over the limit of {COPY_BYTES_MAX} bytes per statement"),
            )
            .hint("Split the data into several COPY statements (each is one transaction).");
            self.fail();
            return Err(e);
        }
        copy.buffer.extend_from_slice(data);
        // Insert complete records as they arrive, so memory stays bounded: everything up to
        // the last line end that is not inside a quoted CSV field.
        if copy.buffer.len() > COPY_CHUNK_BYTES {
            let cut = last_record_end(&copy.buffer, copy.csv, &mut copy.scanned);
            if cut == 0 {
                if copy.buffer.len() > COPY_ROW_BYTES_MAX {
                    let e = SqlError::new(
                        code::PROGRAM_LIMIT,
                        format!("a COPY row is over the limit of {COPY_ROW_BYTES_MAX} bytes"),
                    );
                    self.fail();
                    return Err(e);
                }
                return Ok(());
            }
            let rest = copy.buffer.split_off(cut);
            let chunk = std::mem::replace(&mut copy.buffer, rest);
            copy.scanned = (0, false);
            if let Err(e) = self.copy_lines(&chunk) {
                self.fail();
                return Err(e);
            }
        }
        Ok(())
    }

    fn copy_lines(&mut self, chunk: &[u8]) -> Result<()> {
        let copy = self.copy.as_mut().expect("copy in progress");
        let text = std::str::from_utf8(chunk).map_err(|_| {
            SqlError::new(
                code::BAD_ENCODING,
                "invalid byte sequence for encoding \"UTF8\" in COPY data",
            )
        })?;
        let table = copy.table.clone();
        let columns = copy.columns.clone();
        let csv = copy.csv;
        let records = if csv {
            parse_csv(text)?
        } else {
            text.lines().map(|l| Ok(Some(parse_copy_text_line(l)?))).collect::<Result<Vec<_>>>()?
        };
        let mut rows = Vec::with_capacity(records.len());
        for rec in records.into_iter().flatten() {
            if rec.len() == 1 && rec[0].as_deref() == Some("\\.") {
                break;
            }
            if rec.len() != columns.len() {
                return Err(SqlError::new(
                    code::BAD_COPY_FORMAT,
                    format!("COPY row has {} fields, expected {}", rec.len(), columns.len()),
                ));
            }
            let mut row = vec![None; table.columns.len()];
            for (field, &c) in rec.into_iter().zip(&columns) {
                row[c] = Some(match field {
                    None => Value::Null,
                    Some(s) => Value::parse(&s, table.columns[c].ty)?,
                });
            }
            rows.push(row);
        }
        let n = rows.len() as u64;
        let env = session_env!(self);
        let ctx = Ctx::new(&[], &env);
        let ts = self.txn.as_mut().expect("copy runs in a transaction");
        let mut w = Writer {
            db: &self.db,
            ts,
            lock_timeout: None,
            interrupt: &self.interrupt,
            activity: &self.activity,
        };
        let defaults = w.defaults(&table)?;
        for row in rows {
            let full = row
                .into_iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Some(v) => Ok(v),
                    None => match &defaults[i] {
                        Some(d) => d.eval(&[], &ctx),
                        None => Ok(Value::Null),
                    },
                })
                .collect::<Result<Vec<_>>>()?;
            w.insert_row(&table, full, false)?;
        }
        if let Some(c) = &mut self.copy {
            c.rows += n;
        }
        Ok(())
    }

    /// Ends COPY FROM STDIN: inserts what remains and commits when autocommitting.
    pub fn copy_done(&mut self) -> Result<Output> {
        let Some(copy) = &mut self.copy else {
            return Err(SqlError::new(code::PROTOCOL_VIOLATION, "unexpected CopyDone"));
        };
        let rest = std::mem::take(&mut copy.buffer);
        let result = self.copy_lines(&rest);
        let copy = self.copy.take().expect("copy in progress");
        if let Err(e) = result {
            self.fail();
            return Err(e);
        }
        if copy.implicit {
            if let Some(ts) = self.txn.take() {
                self.commit_txn(ts, None)?;
            }
        }
        Ok(Output::Command(format!("COPY {}", copy.rows)))
    }

    /// Aborts COPY FROM STDIN (CopyFail).
    pub fn copy_fail(&mut self, message: &str) -> SqlError {
        self.fail();
        SqlError::new(code::QUERY_CANCELED, format!("COPY from stdin failed: {message}"))
    }
}

/// The setting `SHOW` names (and the name of the column it answers).
fn show_name(variable: &[ast::Ident]) -> String {
    let name = variable.iter().map(|i| i.value.to_lowercase()).collect::<Vec<_>>().join(" ");
    match name.as_str() {
        "transaction isolation level" => "transaction_isolation".to_string(),
        n => n.to_string(),
    }
}

fn first_words(s: &str) -> String {
    s.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
}

fn in_failed() -> SqlError {
    SqlError::new(
        code::IN_FAILED_TXN,
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

fn param_types(params: &[Value]) -> Vec<DataType> {
    params.iter().map(|p| if p.is_null() { DataType::Unknown } else { p.natural_type() }).collect()
}

fn set_value(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => s.clone(),
            ast::Value::Number(n, _) => n.clone(),
            ast::Value::Boolean(b) => {
                if *b {
                    "on".into()
                } else {
                    "off".into()
                }
            }
            other => other.to_string(),
        },
        ast::Expr::Identifier(i) => i.value.clone(),
        other => other.to_string(),
    }
}

fn parse_duration_ms(name: &str, v: &str) -> Result<u64> {
    let v = v.trim().to_lowercase();
    let (num, unit) = v.split_at(v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len()));
    let n: u64 = num.parse().map_err(|_| {
        SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            format!("invalid value for parameter \"{name}\": \"{v}\""),
        )
    })?;
    Ok(match unit.trim() {
        "" | "ms" => n,
        "s" => n * 1000,
        "min" => n * 60_000,
        "h" => n * 3_600_000,
        _ => {
            return Err(SqlError::new(
                code::INVALID_PARAMETER_VALUE,
                format!("invalid value for parameter \"{name}\": \"{v}\""),
            )
            .hint("Valid units are \"ms\", \"s\", \"min\" and \"h\"."))
        }
    })
}

fn txn_modes(modes: &[ast::TransactionMode]) -> Result<(Option<IsolationLevel>, Option<bool>)> {
    let mut isolation = None;
    let mut read_only = None;
    for m in modes {
        match m {
            ast::TransactionMode::IsolationLevel(l) => {
                isolation = Some(match l {
                    ast::TransactionIsolationLevel::ReadUncommitted
                    | ast::TransactionIsolationLevel::ReadCommitted => {
                        IsolationLevel::ReadCommitted
                    }
                    ast::TransactionIsolationLevel::RepeatableRead => {
                        IsolationLevel::RepeatableRead
                    }
                    ast::TransactionIsolationLevel::Serializable => IsolationLevel::Serializable,
                    other => return Err(SqlError::unsupported(format!("isolation level {other}"))),
                })
            }
            ast::TransactionMode::AccessMode(a) => {
                read_only = Some(matches!(a, ast::TransactionAccessMode::ReadOnly))
            }
        }
    }
    Ok((isolation, read_only))
}

fn copy_csv(options: &[ast::CopyOption], legacy: &[ast::CopyLegacyOption]) -> Result<bool> {
    let mut csv = false;
    for o in options {
        match o {
            ast::CopyOption::Format(f) => match f.value.to_lowercase().as_str() {
                "csv" => csv = true,
                "text" => csv = false,
                "binary" => return Err(SqlError::unsupported("COPY … (FORMAT binary)")),
                other => {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER_VALUE,
                        format!("COPY format \"{other}\" not recognized"),
                    ))
                }
            },
            ast::CopyOption::Freeze(_) => {}
            other => return Err(SqlError::unsupported(format!("the COPY option {other}"))),
        }
    }
    for o in legacy {
        match o {
            ast::CopyLegacyOption::Csv(_) => csv = true,
            other => return Err(SqlError::unsupported(format!("the COPY option {other}"))),
        }
    }
    Ok(csv)
}

fn parse_copy_text_line(line: &str) -> Result<Vec<Option<String>>> {
    if line == "\\." {
        return Ok(vec![Some("\\.".into())]);
    }
    line.split('\t')
        .map(|f| {
            if f == "\\N" {
                return Ok(None);
            }
            let mut out = String::with_capacity(f.len());
            let mut chars = f.chars();
            while let Some(c) = chars.next() {
                if c != '\\' {
                    out.push(c);
                    continue;
                }
                match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('r') => out.push('\r'),
                    Some('b') => out.push('\u{8}'),
                    Some('f') => out.push('\u{c}'),
                    Some('v') => out.push('\u{b}'),
                    Some('\\') => out.push('\\'),
                    Some(other) => out.push(other),
                    None => {
                        return Err(SqlError::new(
                            code::BAD_COPY_FORMAT,
                            "unterminated backslash escape in COPY data",
                        ))
                    }
                }
            }
            Ok(Some(out))
        })
        .collect()
}

fn parse_csv(text: &str) -> Result<Vec<Option<Vec<Option<String>>>>> {
    let mut records = Vec::new();
    let mut chars = text.chars().peekable();
    let mut record: Vec<Option<String>> = Vec::new();
    let mut field = String::new();
    let mut quoted_field = false;
    let mut in_quotes = false;
    let mut any = false;
    while let Some(c) = chars.next() {
        any = true;
        if in_quotes {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    field.push('"');
                    chars.next();
                } else {
                    in_quotes = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' => {
                in_quotes = true;
                quoted_field = true;
            }
            ',' | '\n' => {
                // An unquoted empty field is NULL; a quoted one is the empty string.
                record.push(if field.is_empty() && !quoted_field {
                    None
                } else {
                    Some(std::mem::take(&mut field))
                });
                quoted_field = false;
                if c == '\n' {
                    records.push(Some(std::mem::take(&mut record)));
                    any = false;
                }
            }
            '\r' => {}
            c => field.push(c),
        }
    }
    if in_quotes {
        return Err(SqlError::new(code::BAD_COPY_FORMAT, "unterminated CSV quoted field"));
    }
    if any {
        record.push(if field.is_empty() && !quoted_field { None } else { Some(field) });
        records.push(Some(record));
    }
    Ok(records)
}

fn format_copy_line(row: &[Value], columns: &[(String, DataType)], csv: bool) -> String {
    let mut line = String::new();
    for (i, (v, (_, ty))) in row.iter().zip(columns).enumerate() {
        if i > 0 {
            line.push(if csv { ',' } else { '\t' });
        }
        match v.to_text(*ty) {
            None => {
                if !csv {
                    line.push_str("\\N");
                }
            }
            Some(s) => {
                if csv {
                    if s.is_empty() || s.contains([',', '"', '\n', '\r']) {
                        line.push('"');
                        line.push_str(&s.replace('"', "\"\""));
                        line.push('"');
                    } else {
                        line.push_str(&s);
                    }
                } else {
                    for c in s.chars() {
                        match c {
                            '\\' => line.push_str("\\\\"),
                            '\n' => line.push_str("\\n"),
                            '\t' => line.push_str("\\t"),
                            '\r' => line.push_str("\\r"),
                            c => line.push(c),
                        }
                    }
                }
            }
        }
    }
    line.push('\n');
    line
}

fn table_object(t: &ast::TableObject) -> Result<ast::ObjectName> {
    match t {
        ast::TableObject::TableName(n) => Ok(n.clone()),
        _ => Err(SqlError::unsupported("INSERT into a table function")),
    }
}

/// RETURNING: expressions over the table's row.
struct Returning {
    exprs: Vec<Expr>,
    columns: Vec<(String, DataType)>,
}

fn plan_returning(
    planner: &mut Planner,
    items: &Option<Vec<ast::SelectItem>>,
    scope: &Scope,
) -> Result<Option<Returning>> {
    let Some(items) = items else { return Ok(None) };
    let mut exprs = Vec::new();
    let mut columns = Vec::new();
    for item in items {
        match item {
            ast::SelectItem::Wildcard(_) => {
                for (i, c) in scope.cols.iter().enumerate() {
                    exprs.push(Expr::Column(i));
                    columns.push((c.name.clone(), c.ty));
                }
            }
            ast::SelectItem::UnnamedExpr(x) => {
                let (e, t) = planner.expr(x, scope, false)?;
                exprs.push(e);
                columns.push((
                    output_name(x),
                    if t == DataType::Unknown { DataType::Text } else { t },
                ));
            }
            ast::SelectItem::ExprWithAlias { expr, alias } => {
                let (e, t) = planner.expr(expr, scope, false)?;
                exprs.push(e);
                columns.push((
                    alias.value.to_lowercase(),
                    if t == DataType::Unknown { DataType::Text } else { t },
                ));
            }
            other => return Err(SqlError::unsupported(format!("RETURNING {other}"))),
        }
    }
    Ok(Some(Returning { exprs, columns }))
}

fn table_scope(table: &Table, alias: &str) -> Scope {
    Scope {
        cols: table
            .columns
            .iter()
            .map(|c| ScopeCol { table: Some(alias.to_string()), name: c.name.clone(), ty: c.ty })
            .collect(),
    }
}

/// ON CONFLICT DO UPDATE: assignments and the optional WHERE.
type ConflictUpdate = (Vec<(usize, Expr)>, Option<Expr>);

struct InsertPlan {
    table: Arc<Table>,
    /// Target column of each source column.
    targets: Vec<usize>,
    source: SelectPlan,
    defaults: Vec<Option<Expr>>,
    on_conflict: Option<(Vec<usize>, Option<ConflictUpdate>)>,
    returning: Option<Returning>,
}

fn bind_default(planner: &mut Planner, text: &str) -> Result<Expr> {
    let expr = crate::parse::parse_expr(text).map_err(|e| {
        SqlError::new(code::DATA_CORRUPTED, format!("stored DEFAULT {text} does not parse: {e}"))
    })?;
    Ok(planner.expr(&expr, &Scope::default(), false)?.0)
}

fn plan_insert(planner: &mut Planner, ins: &ast::Insert) -> Result<InsertPlan> {
    let name = object_name(&table_object(&ins.table)?)?;
    let table = planner.catalog.table_or_err(planner.txn, planner.db, &name)?;
    let targets: Vec<usize> = if ins.columns.is_empty() {
        (0..table.columns.len()).collect()
    } else {
        ins.columns.iter().map(|c| table.column_or_err(&object_name(c)?)).collect::<Result<_>>()?
    };
    let mut seen = HashSet::new();
    for t in &targets {
        if !seen.insert(*t) {
            return Err(SqlError::syntax(format!(
                "column \"{}\" specified more than once",
                table.columns[*t].name
            )));
        }
    }
    let expected: Vec<DataType> = targets.iter().map(|&c| table.columns[c].ty).collect();
    let source = match &ins.source {
        Some(q) => planner.query(q, Some(&expected))?,
        None => return Err(SqlError::unsupported("INSERT … DEFAULT VALUES")),
    };
    if source.columns.len() > targets.len() {
        return Err(SqlError::syntax("INSERT has more expressions than target columns"));
    }
    let mut defaults = Vec::with_capacity(table.columns.len());
    for c in &table.columns {
        defaults.push(match &c.default {
            Some(d) => Some(bind_default(planner, d)?),
            None => None,
        });
    }
    let alias = table.name.clone();
    let scope = table_scope(&table, &alias);
    let on_conflict = match &ins.on {
        None => None,
        Some(ast::OnInsert::OnConflict(oc)) => {
            let cols = match &oc.conflict_target {
                Some(ast::ConflictTarget::Columns(cols)) => cols
                    .iter()
                    .map(|c| table.column_or_err(&c.value.to_lowercase()))
                    .collect::<Result<Vec<_>>>()?,
                None => vec![],
                Some(ast::ConflictTarget::OnConstraint(_)) => {
                    return Err(SqlError::unsupported("ON CONFLICT ON CONSTRAINT"))
                }
            };
            if !cols.is_empty() {
                let mut sorted = cols.clone();
                sorted.sort_unstable();
                let mut pk = table.primary_key.clone();
                pk.sort_unstable();
                let matches_unique = table.indexes.iter().any(|i| {
                    i.unique && {
                        let mut c = i.columns.clone();
                        c.sort_unstable();
                        c == sorted
                    }
                });
                if sorted != pk && !matches_unique {
                    return Err(SqlError::new(code::INVALID_COLUMN_REFERENCE, "there is no unique or exclusion constraint matching the ON CONFLICT specification"));
                }
            }
            let action = match &oc.action {
                ast::OnConflictAction::DoNothing => None,
                ast::OnConflictAction::DoUpdate(du) => {
                    if cols.is_empty() {
                        return Err(SqlError::syntax("ON CONFLICT DO UPDATE requires inference specification or constraint name").hint("For example, ON CONFLICT (column_name)."));
                    }
                    // The row scope is the existing row, then `excluded`.
                    let mut both = scope.clone();
                    both.cols.extend(table.columns.iter().map(|c| ScopeCol {
                        table: Some("excluded".into()),
                        name: c.name.clone(),
                        ty: c.ty,
                    }));
                    let mut sets = Vec::new();
                    for a in &du.assignments {
                        let col = assignment_column(&table, &a.target)?;
                        check_assigned_once(&table, &sets, col)?;
                        let (e, t) = planner.expr(&a.value, &both, false)?;
                        let (e, _) = planner.coerce(e, t, table.columns[col].ty)?;
                        sets.push((col, e));
                    }
                    let cond = match &du.selection {
                        Some(s) => Some(planner.expr(s, &both, false)?.0),
                        None => None,
                    };
                    Some((sets, cond))
                }
            };
            Some((cols, action))
        }
        Some(_) => return Err(SqlError::unsupported("ON DUPLICATE KEY")),
    };
    let returning = plan_returning(planner, &ins.returning, &scope)?;
    Ok(InsertPlan { table, targets, source, defaults, on_conflict, returning })
}

/// 42601 when SET names a column twice (PostgreSQL refuses `SET x = 1, x = 2`).
fn check_assigned_once(table: &Table, sets: &[(usize, Expr)], col: usize) -> Result<()> {
    if sets.iter().any(|(c, _)| *c == col) {
        return Err(SqlError::syntax(format!(
            "multiple assignments to same column \"{}\"",
            table.columns[col].name
        )));
    }
    Ok(())
}

fn assignment_column(table: &Table, target: &ast::AssignmentTarget) -> Result<usize> {
    match target {
        ast::AssignmentTarget::ColumnName(n) => {
            let name =
                n.0.last()
                    .and_then(|p| p.as_ident())
                    .map(|i| {
                        if i.quote_style.is_some() {
                            i.value.clone()
                        } else {
                            i.value.to_lowercase()
                        }
                    })
                    .unwrap_or_default();
            table.column_or_err(&name)
        }
        ast::AssignmentTarget::Tuple(_) => Err(SqlError::unsupported("assigning a column tuple")),
    }
}

struct UpdatePlan {
    table: Arc<Table>,
    scan: SelectPlan,
    sets: Vec<(usize, Expr)>,
    returning: Option<Returning>,
}

fn single_table_scan(
    planner: &mut Planner,
    relation: &ast::TableFactor,
    selection: &Option<ast::Expr>,
) -> Result<(Arc<Table>, SelectPlan, Scope)> {
    let ast::TableFactor::Table { name, alias, args: None, .. } = relation else {
        return Err(SqlError::unsupported("this UPDATE/DELETE target"));
    };
    let tname = object_name(name)?;
    let table = planner.catalog.table_or_err(planner.txn, planner.db, &tname)?;
    let alias =
        alias.as_ref().map(|a| a.name.value.to_lowercase()).unwrap_or_else(|| table.name.clone());
    let scope = table_scope(&table, &alias);
    let mut filters = Vec::new();
    if let Some(w) = selection {
        let (e, t) = planner.expr(w, &scope, false)?;
        let (e, _) = planner.coerce(e, t, DataType::Bool)?;
        split_and(e, &mut filters);
    }
    let width = table.columns.len();
    let (constant_filters, filters): (Vec<Expr>, Vec<Expr>) =
        filters.into_iter().partition(|f| !f.uses_columns_from(0));
    let mut item = FromItem {
        source: Source::Table(table.clone(), Access::Full),
        offset: 0,
        width,
        join: JoinKind::Inner,
        on: vec![],
        filters,
        label: table.name.clone(),
    };
    choose_access(&mut item);
    let mut plan =
        SelectPlan::over(item, table.columns.iter().map(|c| (c.name.clone(), c.ty)).collect());
    plan.constant_filters = constant_filters;
    Ok((table, plan, scope))
}

fn plan_update(planner: &mut Planner, u: &ast::Update) -> Result<UpdatePlan> {
    if u.from.is_some() {
        return Err(SqlError::unsupported("UPDATE … FROM"));
    }
    if !u.table.joins.is_empty() {
        return Err(SqlError::unsupported("UPDATE of a join"));
    }
    let (table, scan, scope) = single_table_scan(planner, &u.table.relation, &u.selection)?;
    let mut sets = Vec::new();
    for a in &u.assignments {
        let col = assignment_column(&table, &a.target)?;
        check_assigned_once(&table, &sets, col)?;
        let (e, t) = match &a.value {
            ast::Expr::Identifier(i)
                if i.value.eq_ignore_ascii_case("default") && i.quote_style.is_none() =>
            {
                match &table.columns[col].default {
                    Some(d) => (bind_default(planner, d)?, table.columns[col].ty),
                    None => (Expr::Const(Value::Null), DataType::Unknown),
                }
            }
            v => planner.expr(v, &scope, false)?,
        };
        let (e, _) = planner.coerce(e, t, table.columns[col].ty)?;
        sets.push((col, e));
    }
    let returning = plan_returning(planner, &u.returning, &scope)?;
    Ok(UpdatePlan { table, scan, sets, returning })
}

struct DeletePlan {
    table: Arc<Table>,
    scan: SelectPlan,
    returning: Option<Returning>,
}

fn plan_delete(planner: &mut Planner, d: &ast::Delete) -> Result<DeletePlan> {
    let from = match &d.from {
        ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
    };
    let [twj] = from.as_slice() else {
        return Err(SqlError::unsupported("DELETE from several tables"));
    };
    if d.using.is_some() || !twj.joins.is_empty() {
        return Err(SqlError::unsupported("DELETE … USING"));
    }
    let (table, scan, scope) = single_table_scan(planner, &twj.relation, &d.selection)?;
    let returning = plan_returning(planner, &d.returning, &scope)?;
    Ok(DeletePlan { table, scan, returning })
}

/// Row writes of one statement, with row locks and index maintenance.
struct Writer<'a> {
    db: &'a Database,
    ts: &'a mut TxnState,
    lock_timeout: Option<Duration>,
    interrupt: &'a AtomicBool,
    activity: &'a Activity,
}

fn unique_violation(table: &Table, what: &str, values: &[Value], cols: &[usize]) -> SqlError {
    let names = cols.iter().map(|&c| table.columns[c].name.clone()).collect::<Vec<_>>().join(", ");
    let vals = values
        .iter()
        .map(|v| v.to_text(DataType::Text).unwrap_or_else(|| "null".into()))
        .collect::<Vec<_>>()
        .join(", ");
    SqlError::new(
        code::UNIQUE,
        format!("duplicate key value violates unique constraint \"{what}\""),
    )
    .detail(format!("Key ({names})=({vals}) already exists."))
}

/// The command tag and, with RETURNING, its rows, for the rows a statement wrote.
fn returning_output(
    returning: Option<Returning>,
    rows: Vec<Vec<Value>>,
    verb: &str,
    ctx: &Ctx,
) -> Result<Output> {
    let tag = if verb == "INSERT" {
        format!("INSERT 0 {}", rows.len())
    } else {
        format!("{verb} {}", rows.len())
    };
    Ok(match returning {
        Some(r) => {
            let mut out = Vec::with_capacity(rows.len());
            for row in &rows {
                out.push(r.exprs.iter().map(|e| e.eval(row, ctx)).collect::<Result<Vec<_>>>()?);
            }
            Output::Rows { columns: r.columns, rows: out, tag }
        }
        None => Output::Command(tag),
    })
}

impl Writer<'_> {
    fn lock(&mut self, table: u64, key: Vec<u8>) -> Result<()> {
        self.activity.set_wait(Some(Wait::RowLock));
        let locked = self.ts.locks.lock((table, key), self.lock_timeout, self.interrupt);
        self.activity.set_wait(None);
        locked
    }

    fn defaults(&mut self, table: &Table) -> Result<Vec<Option<Expr>>> {
        table
            .columns
            .iter()
            .map(|c| {
                c.default
                    .as_ref()
                    .map(|d| {
                        let expr = crate::parse::parse_expr(d).map_err(|e| {
                            SqlError::new(
                                code::DATA_CORRUPTED,
                                format!("stored DEFAULT does not parse: {e}"),
                            )
                        })?;
                        bind_constant(&expr)
                    })
                    .transpose()
            })
            .collect()
    }

    fn primary_key(&mut self, table: &Table, row: &[Value]) -> Result<Vec<u8>> {
        if table.primary_key.is_empty() {
            let id = self.db.catalog.next_rowid(&mut self.ts.txn, table)?;
            return Ok(id.to_be_bytes().to_vec());
        }
        let vals: Vec<&Value> = table.primary_key.iter().map(|&c| &row[c]).collect();
        encode_key(&vals)
    }

    fn index_entry(
        table: &Table,
        index: &Index,
        row: &[Value],
        pk: &[u8],
    ) -> Result<(Vec<u8>, Vec<u8>, bool)> {
        let vals: Vec<&Value> = index.columns.iter().map(|&c| &row[c]).collect();
        let mut key = encode_key(&vals)?;
        let _ = table;
        if index.unique && !vals.iter().any(|v| v.is_null()) {
            Ok((key, pk.to_vec(), true))
        } else {
            key.extend_from_slice(pk);
            key.extend_from_slice(&(pk.len() as u16).to_be_bytes());
            Ok((key, Vec::new(), false))
        }
    }

    /// Checks types, NOT NULL, and fits values to their columns.
    fn fit_row(table: &Table, row: Vec<Value>) -> Result<Vec<Value>> {
        let mut out = Vec::with_capacity(row.len());
        for (v, c) in row.into_iter().zip(&table.columns) {
            let v = assign(v, c.ty).map_err(|e| {
                if e.code == code::DATATYPE_MISMATCH {
                    SqlError::new(
                        code::DATATYPE_MISMATCH,
                        format!(
                            "column \"{}\" is of type {} but expression is of another type",
                            c.name,
                            c.ty.sql_name()
                        ),
                    )
                } else {
                    e
                }
            })?;
            if v.is_null() && !c.nullable {
                return Err(SqlError::new(code::NOT_NULL, format!("null value in column \"{}\" of relation \"{}\" violates not-null constraint", c.name, table.name)));
            }
            out.push(v);
        }
        Ok(out)
    }

    /// Inserts a row; with `skip_existing` returns `Ok(None)` instead of 23505 when the key
    /// exists (and returns the existing key for ON CONFLICT DO UPDATE via `Err`).
    fn insert_row(
        &mut self,
        table: &Table,
        row: Vec<Value>,
        skip_existing: bool,
    ) -> Result<Option<Vec<u8>>> {
        let row = Self::fit_row(table, row)?;
        let pk = self.primary_key(table, &row)?;
        let ks = table.keyspace();
        if !table.primary_key.is_empty() {
            self.lock(table.id, pk.clone())?;
            if self.ts.isolation == IsolationLevel::ReadCommitted {
                self.ts.txn.refresh_snapshot()?;
            }
            if self.ts.txn.get(&ks, &pk)?.is_some() {
                if skip_existing {
                    return Ok(None);
                }
                let vals: Vec<Value> = table.primary_key.iter().map(|&c| row[c].clone()).collect();
                let name = table
                    .primary_key_name
                    .clone()
                    .unwrap_or_else(|| format!("{}_pkey", table.name));
                return Err(unique_violation(table, &name, &vals, &table.primary_key));
            }
        }
        for index in &table.indexes {
            let (key, value, unique) = Self::index_entry(table, index, &row, &pk)?;
            if unique {
                if let Some(existing) = self.ts.txn.get(&index.keyspace(), &key)? {
                    if existing != pk {
                        if skip_existing {
                            return Ok(None);
                        }
                        let vals: Vec<Value> =
                            index.columns.iter().map(|&c| row[c].clone()).collect();
                        return Err(unique_violation(table, &index.name, &vals, &index.columns));
                    }
                }
            }
            self.ts.txn.put(&index.keyspace(), &key, &value)?;
        }
        self.ts.txn.put(&ks, &pk, &encode_row(&row))?;
        Ok(Some(pk))
    }

    fn delete_row(&mut self, table: &Table, pk: &[u8], row: &[Value]) -> Result<()> {
        for index in &table.indexes {
            let (key, _, _) = Self::index_entry(table, index, row, pk)?;
            self.ts.txn.delete(&index.keyspace(), &key)?;
        }
        self.ts.txn.delete(&table.keyspace(), pk)?;
        Ok(())
    }

    fn update_row(
        &mut self,
        table: &Table,
        pk: &[u8],
        old: &[Value],
        new: Vec<Value>,
    ) -> Result<Vec<Value>> {
        let new = Self::fit_row(table, new)?;
        let pk_changed = table
            .primary_key
            .iter()
            .any(|&c| old[c].total_cmp(&new[c]) != std::cmp::Ordering::Equal);
        if pk_changed {
            self.delete_row(table, pk, old)?;
            self.insert_row(table, new.clone(), false)?;
            return Ok(new);
        }
        for index in &table.indexes {
            let changed = index
                .columns
                .iter()
                .any(|&c| old[c].total_cmp(&new[c]) != std::cmp::Ordering::Equal);
            if !changed {
                continue;
            }
            let (old_key, _, _) = Self::index_entry(table, index, old, pk)?;
            self.ts.txn.delete(&index.keyspace(), &old_key)?;
            let (key, value, unique) = Self::index_entry(table, index, &new, pk)?;
            if unique {
                if let Some(existing) = self.ts.txn.get(&index.keyspace(), &key)? {
                    if existing != pk {
                        let vals: Vec<Value> =
                            index.columns.iter().map(|&c| new[c].clone()).collect();
                        return Err(unique_violation(table, &index.name, &vals, &index.columns));
                    }
                }
            }
            self.ts.txn.put(&index.keyspace(), &key, &value)?;
        }
        self.ts.txn.put(&table.keyspace(), pk, &encode_row(&new))?;
        Ok(new)
    }

    /// Locks a row found by a scan and returns its newest version under READ COMMITTED
    /// (PostgreSQL's re-check after a concurrent update), or the snapshot's otherwise.
    /// `None` when it was deleted meanwhile or no longer matches.
    fn lock_current(
        &mut self,
        table: &Table,
        pk: &[u8],
        row: Vec<Value>,
        filters: &[Expr],
        ctx: &Ctx,
    ) -> Result<Option<Vec<Value>>> {
        self.lock(table.id, pk.to_vec())?;
        if self.ts.isolation != IsolationLevel::ReadCommitted {
            // A row a concurrent transaction changed after our snapshot cannot be updated
            // here (the commit would fail validation): say so now, as PostgreSQL does.
            if self.ts.txn.written_since_snapshot(&table.keyspace(), pk)? {
                return Err(SqlError::new(
                    code::SERIALIZATION,
                    "could not serialize access due to concurrent update",
                )
                .hint("The transaction might succeed if retried."));
            }
            return Ok(Some(row));
        }
        self.ts.txn.refresh_snapshot()?;
        let Some(raw) = self.ts.txn.get(&table.keyspace(), pk)? else { return Ok(None) };
        let current = decode_row(&raw, table.columns.len())?;
        if current != row {
            for f in filters {
                if !f.eval_bool(&current, ctx)? {
                    return Ok(None);
                }
            }
        }
        Ok(Some(current))
    }

    /// `SELECT … FOR UPDATE / FOR SHARE`: the rows of the first table are locked in ORDER BY
    /// order and, as PostgreSQL does, re-read after the lock: under READ COMMITTED a row that
    /// changed meanwhile is returned in its newest version if it still qualifies and skipped
    /// otherwise, and the next candidate is taken, until LIMIT rows are locked (so two
    /// workers taking `ORDER BY … LIMIT 1 FOR UPDATE` from a queue never get the same row);
    /// under REPEATABLE READ and SERIALIZABLE a concurrent change is 40001.
    fn select_for_update(
        &mut self,
        plan: &SelectPlan,
        ctx: &Ctx,
        limits: &ExecLimits,
    ) -> Result<Vec<Vec<Value>>> {
        if plan.grouping.is_some() || plan.having.is_some() || plan.distinct {
            return Err(SqlError::unsupported(
                "FOR UPDATE/FOR SHARE with DISTINCT, GROUP BY, HAVING or aggregate functions",
            ));
        }
        let Some(first) = plan.from.first() else {
            return Err(SqlError::unsupported("FOR UPDATE/FOR SHARE without a table"));
        };
        let Source::Table(table, _) = &first.source else {
            return Err(SqlError::unsupported(
                "FOR UPDATE/FOR SHARE on a subquery, function or VALUES",
            ));
        };
        let (table, width) = (table.clone(), first.width);
        debug_assert_eq!(first.offset, 0, "the first FROM item starts the joined row");
        let joined = {
            let cell = RefCell::new(&mut self.ts.txn);
            let exec = Exec { txn: &cell, limits };
            let ctx = Ctx { runner: Some(&exec), ..*ctx };
            execute_from(plan, &cell, &ctx, limits)?
        };
        // Candidates in output order: (projected row, joined row, key).
        let mut candidates = Vec::with_capacity(joined.len());
        for (key, row) in joined {
            limits.check()?;
            let projected =
                plan.projection.iter().map(|e| e.eval(&row, ctx)).collect::<Result<Vec<_>>>()?;
            candidates.push((projected, row, key.expect("table rows have keys")));
        }
        let order = plan.order.clone();
        let mut sortable: Vec<Vec<Value>> = Vec::with_capacity(candidates.len());
        for (i, (projected, _, _)) in candidates.iter().enumerate() {
            let mut r = projected.clone();
            r.push(Value::Int(i as i64));
            sortable.push(r);
        }
        sort_rows(&mut sortable, &order, limits)?;
        let (offset, limit) = offset_limit(plan, ctx)?;
        let wanted = limit.map_or(usize::MAX, |l| l.saturating_add(offset));
        let mut out = Vec::new();
        for sorted in sortable {
            if out.len() >= wanted {
                break;
            }
            limits.check()?;
            let Some(Value::Int(i)) = sorted.last() else { unreachable!("pushed above") };
            let (_, row, key) = &candidates[*i as usize];
            let mine = row[..width].to_vec();
            let Some(current) = self.lock_current(&table, key, mine, &first.filters, ctx)? else {
                continue;
            };
            let mut row = row.clone();
            row[..width].clone_from_slice(&current);
            // The other tables' rows are as read; the join conditions are checked again
            // against the newest version of this one.
            let mut still = true;
            for item in &plan.from[1..] {
                for c in item.on.iter().chain(&item.filters) {
                    if !c.eval_bool(&row, ctx)? {
                        still = false;
                    }
                }
            }
            if !still {
                continue;
            }
            out.push(
                plan.projection.iter().map(|e| e.eval(&row, ctx)).collect::<Result<Vec<_>>>()?,
            );
        }
        let visible = plan.columns.len();
        let mut rows: Vec<Vec<Value>> = out.into_iter().skip(offset).collect();
        for r in &mut rows {
            r.truncate(visible);
        }
        Ok(rows)
    }

    fn insert(&mut self, plan: InsertPlan, ctx: &Ctx, limits: &ExecLimits) -> Result<Output> {
        let table = plan.table.clone();
        let source_rows = {
            let cell = RefCell::new(&mut self.ts.txn);
            let exec = Exec { txn: &cell, limits };
            let ctx = Ctx { runner: Some(&exec), ..*ctx };
            execute_select(&plan.source, &cell, &ctx, limits)?
        };
        let mut written_rows = Vec::new();
        for src in source_rows {
            limits.check()?;
            let mut row: Vec<Option<Value>> = vec![None; table.columns.len()];
            for (v, &t) in src.into_iter().zip(&plan.targets) {
                row[t] = Some(v);
            }
            let mut full = Vec::with_capacity(row.len());
            for (i, v) in row.into_iter().enumerate() {
                full.push(match v {
                    Some(v) => v,
                    None => match &plan.defaults[i] {
                        Some(d) => d.eval(&[], ctx)?,
                        None => Value::Null,
                    },
                });
            }
            let written = match &plan.on_conflict {
                None => self.insert_row(&table, full.clone(), false)?.map(|_| full),
                Some((_, None)) => self.insert_row(&table, full.clone(), true)?.map(|_| full),
                Some((_, Some((sets, cond)))) => {
                    match self.insert_row(&table, full.clone(), true)? {
                        Some(_) => Some(full),
                        None => {
                            let fitted = Self::fit_row(&table, full.clone())?;
                            let pk = self.primary_key(&table, &fitted)?;
                            let Some(raw) = self.ts.txn.get(&table.keyspace(), &pk)? else {
                                return Err(SqlError::unsupported("ON CONFLICT DO UPDATE on a unique index other than the primary key"));
                            };
                            let existing = decode_row(&raw, table.columns.len())?;
                            let mut both = existing.clone();
                            both.extend(fitted);
                            let go = match cond {
                                Some(c) => c.eval_bool(&both, ctx)?,
                                None => true,
                            };
                            if go {
                                let mut new = existing.clone();
                                for (c, e) in sets {
                                    new[*c] = e.eval(&both, ctx)?;
                                }
                                Some(self.update_row(&table, &pk, &existing, new)?)
                            } else {
                                None
                            }
                        }
                    }
                }
            };
            if let Some(row) = written {
                written_rows.push(row);
            }
        }
        returning_output(plan.returning, written_rows, "INSERT", ctx)
    }

    /// The rows an UPDATE or DELETE applies to: scanned, locked, and (under READ COMMITTED)
    /// re-read in their newest version; each with its primary key.
    fn target_rows(
        &mut self,
        table: &Table,
        scan: &SelectPlan,
        ctx: &Ctx,
        limits: &ExecLimits,
    ) -> Result<Vec<(Vec<u8>, Vec<Value>)>> {
        let filters = scan.from[0].filters.clone();
        let rows = {
            let cell = RefCell::new(&mut self.ts.txn);
            let exec = Exec { txn: &cell, limits };
            let ctx = Ctx { runner: Some(&exec), ..*ctx };
            execute_from(scan, &cell, &ctx, limits)?
        };
        let mut out = Vec::with_capacity(rows.len());
        for (pk, row) in rows {
            limits.check()?;
            let pk = pk.expect("table rows have keys");
            if let Some(current) = self.lock_current(table, &pk, row, &filters, ctx)? {
                out.push((pk, current));
            }
        }
        Ok(out)
    }

    fn update(&mut self, plan: UpdatePlan, ctx: &Ctx, limits: &ExecLimits) -> Result<Output> {
        let table = plan.table.clone();
        let mut changed = Vec::new();
        for (pk, current) in self.target_rows(&table, &plan.scan, ctx, limits)? {
            let mut new = current.clone();
            for (c, e) in &plan.sets {
                new[*c] = e.eval(&current, ctx)?;
            }
            changed.push(self.update_row(&table, &pk, &current, new)?);
        }
        returning_output(plan.returning, changed, "UPDATE", ctx)
    }

    fn delete(&mut self, plan: DeletePlan, ctx: &Ctx, limits: &ExecLimits) -> Result<Output> {
        let table = plan.table.clone();
        let mut deleted = Vec::new();
        for (pk, current) in self.target_rows(&table, &plan.scan, ctx, limits)? {
            self.delete_row(&table, &pk, &current)?;
            deleted.push(current);
        }
        returning_output(plan.returning, deleted, "DELETE", ctx)
    }

    fn truncate(&mut self, table: &Table) -> Result<()> {
        for (k, _) in self.ts.txn.scan(&table.keyspace(), Scan::all())? {
            self.ts.txn.delete(&table.keyspace(), &k)?;
        }
        for index in &table.indexes {
            for (k, _) in self.ts.txn.scan(&index.keyspace(), Scan::all())? {
                self.ts.txn.delete(&index.keyspace(), &k)?;
            }
        }
        Ok(())
    }

    /// Whether relation `name` exists: Ok(true) when IF NOT EXISTS lets the statement do
    /// nothing, 42P07 otherwise.
    fn relation_taken(&mut self, database: &str, name: &str, if_not_exists: bool) -> Result<bool> {
        if !self.db.catalog.relation_exists(&mut self.ts.txn, database, name)? {
            return Ok(false);
        }
        if if_not_exists {
            return Ok(true);
        }
        Err(SqlError::new(code::DUPLICATE_TABLE, format!("relation \"{name}\" already exists")))
    }

    fn create_table(&mut self, ct: &ast::CreateTable, database: &str) -> Result<Output> {
        let name = object_name(&ct.name)?;
        if ct.query.is_some() {
            return Err(SqlError::unsupported("CREATE TABLE … AS"));
        }
        if self.relation_taken(database, &name, ct.if_not_exists)? {
            return Ok(Output::Command("CREATE TABLE".into()));
        }
        if ct.columns.len() > 1600 {
            return Err(SqlError::new(code::PROGRAM_LIMIT, "tables can have at most 1600 columns"));
        }
        let mut columns: Vec<Column> = Vec::new();
        let mut primary_key: Vec<usize> = Vec::new();
        let mut uniques: Vec<Vec<usize>> = Vec::new();
        for (i, c) in ct.columns.iter().enumerate() {
            let cname = if c.name.quote_style.is_some() {
                c.name.value.clone()
            } else {
                c.name.value.to_lowercase()
            };
            if columns.iter().any(|x| x.name == cname) {
                return Err(SqlError::new(
                    "42701",
                    format!("column \"{cname}\" specified more than once"),
                ));
            }
            let ty = data_type(&c.data_type)?;
            let mut col = Column { name: cname, ty, nullable: true, default: None };
            for opt in &c.options {
                match &opt.option {
                    ast::ColumnOption::NotNull => col.nullable = false,
                    ast::ColumnOption::Null => col.nullable = true,
                    ast::ColumnOption::Default(e) => {
                        // Check now that it binds as a constant expression.
                        bind_constant(e)?;
                        col.default = Some(e.to_string());
                    }
                    ast::ColumnOption::PrimaryKey(_) => {
                        if !primary_key.is_empty() {
                            return Err(SqlError::new(
                                code::INVALID_TABLE_DEFINITION,
                                format!(
                                    "multiple primary keys for table \"{name}\" are not allowed"
                                ),
                            ));
                        }
                        primary_key.push(i);
                        col.nullable = false;
                    }
                    ast::ColumnOption::Unique(_) => uniques.push(vec![i]),
                    other => {
                        return Err(SqlError::unsupported(format!("the column option {other}")))
                    }
                }
            }
            columns.push(col);
        }
        let find = |cols: &[ast::IndexColumn], columns: &[Column]| -> Result<Vec<usize>> {
            cols.iter()
                .map(|ic| match &ic.column.expr {
                    ast::Expr::Identifier(id) => {
                        let n = id.value.to_lowercase();
                        columns.iter().position(|c| c.name == n).ok_or_else(|| {
                            SqlError::new(
                                code::UNDEFINED_COLUMN,
                                format!("column \"{n}\" named in key does not exist"),
                            )
                        })
                    }
                    other => Err(SqlError::unsupported(format!("a key on the expression {other}"))),
                })
                .collect()
        };
        for constraint in &ct.constraints {
            match constraint {
                ast::TableConstraint::PrimaryKey(pk) => {
                    if !primary_key.is_empty() {
                        return Err(SqlError::new(
                            code::INVALID_TABLE_DEFINITION,
                            format!("multiple primary keys for table \"{name}\" are not allowed"),
                        ));
                    }
                    primary_key = find(&pk.columns, &columns)?;
                    for &c in &primary_key {
                        columns[c].nullable = false;
                    }
                }
                ast::TableConstraint::Unique(u) => uniques.push(find(&u.columns, &columns)?),
                other => return Err(SqlError::unsupported(format!("the constraint {other}"))),
            }
        }
        for &c in &primary_key {
            if !crate::encoding::key_type_supported(columns[c].ty) {
                return Err(SqlError::unsupported(format!(
                    "a primary key on column \"{}\" of type {}",
                    columns[c].name,
                    columns[c].ty.sql_name()
                )));
            }
        }
        let options = match &ct.table_options {
            ast::CreateTableOptions::With(opts) => opts
                .iter()
                .map(|o| {
                    let s = o.to_string();
                    let (k, v) = s.split_once('=').unwrap_or((&s, ""));
                    (k.trim().to_string(), v.trim().to_string())
                })
                .collect(),
            _ => vec![],
        };
        let id = self.db.catalog.next_id(&mut self.ts.txn)?;
        let mut table = Table {
            id,
            database: database.to_string(),
            name: name.clone(),
            columns,
            primary_key,
            primary_key_name: None,
            indexes: vec![],
            options,
        };
        if !table.primary_key.is_empty() {
            table.primary_key_name = Some(format!("{name}_pkey"));
        }
        for cols in uniques {
            let iname = format!(
                "{name}_{}_key",
                cols.iter().map(|&c| table.columns[c].name.clone()).collect::<Vec<_>>().join("_")
            );
            for &c in &cols {
                if !crate::encoding::key_type_supported(table.columns[c].ty) {
                    return Err(SqlError::unsupported(format!(
                        "a unique constraint on a column of type {}",
                        table.columns[c].ty.sql_name()
                    )));
                }
            }
            let iid = self.db.catalog.next_id(&mut self.ts.txn)?;
            table.indexes.push(Index { name: iname, id: iid, columns: cols, unique: true });
        }
        self.db.catalog.put_table(&mut self.ts.txn, &table)?;
        Ok(Output::Command("CREATE TABLE".into()))
    }

    fn drop(
        &mut self,
        object_type: ast::ObjectType,
        if_exists: bool,
        names: &[ast::ObjectName],
        database: &str,
    ) -> Result<Output> {
        match object_type {
            ast::ObjectType::Table => {
                for n in names {
                    let name = object_name(n)?;
                    match self.db.catalog.table(&mut self.ts.txn, database, &name)? {
                        Some(t) => {
                            self.truncate(&t)?;
                            self.db.catalog.delete_table(&mut self.ts.txn, &t)?;
                        }
                        None if if_exists => {}
                        None => {
                            return Err(SqlError::new(
                                code::UNDEFINED_TABLE,
                                format!("table \"{name}\" does not exist"),
                            ))
                        }
                    }
                }
                Ok(Output::Command("DROP TABLE".into()))
            }
            ast::ObjectType::Index => {
                for n in names {
                    let name = object_name(n)?;
                    let Some(tname) =
                        self.db.catalog.index_table(&mut self.ts.txn, database, &name)?
                    else {
                        if if_exists {
                            continue;
                        }
                        return Err(SqlError::new(
                            code::UNDEFINED_OBJECT,
                            format!("index \"{name}\" does not exist"),
                        ));
                    };
                    let table = self.db.catalog.table_or_err(&mut self.ts.txn, database, &tname)?;
                    let mut t = (*table).clone();
                    let Some(pos) = t.indexes.iter().position(|i| i.name == name) else { continue };
                    let index = t.indexes.remove(pos);
                    for (k, _) in self.ts.txn.scan(&index.keyspace(), Scan::all())? {
                        self.ts.txn.delete(&index.keyspace(), &k)?;
                    }
                    self.ts.txn.delete(
                        crate::catalog::CATALOG,
                        format!("i/{database}/{name}").as_bytes(),
                    )?;
                    self.db.catalog.put_table(&mut self.ts.txn, &t)?;
                }
                Ok(Output::Command("DROP INDEX".into()))
            }
            ast::ObjectType::Database => {
                if self.ts.explicit {
                    return Err(SqlError::new(
                        code::ACTIVE_TXN,
                        "DROP DATABASE cannot run inside a transaction block",
                    ));
                }
                for n in names {
                    let name = object_name(n)?;
                    if name == database {
                        return Err(SqlError::new(
                            "55006",
                            "cannot drop the currently open database",
                        ));
                    }
                    if !self.db.catalog.database_exists(&mut self.ts.txn, &name)? {
                        if if_exists {
                            continue;
                        }
                        return Err(SqlError::new(
                            code::INVALID_CATALOG,
                            format!("database \"{name}\" does not exist"),
                        ));
                    }
                    for t in self.db.catalog.tables(&mut self.ts.txn, &name)? {
                        self.truncate(&t)?;
                        self.db.catalog.delete_table(&mut self.ts.txn, &t)?;
                    }
                    self.db.catalog.drop_database(&mut self.ts.txn, &name)?;
                }
                Ok(Output::Command("DROP DATABASE".into()))
            }
            other => Err(SqlError::unsupported(format!("DROP {other}"))),
        }
    }

    fn build_index(&mut self, table: &Table, index: &Index) -> Result<()> {
        for (pk, raw) in self.ts.txn.scan(&table.keyspace(), Scan::all())? {
            let row = decode_row(&raw, table.columns.len())?;
            let (key, value, unique) = Self::index_entry(table, index, &row, &pk)?;
            if unique {
                if let Some(existing) = self.ts.txn.get(&index.keyspace(), &key)? {
                    if existing != pk {
                        let vals: Vec<Value> =
                            index.columns.iter().map(|&c| row[c].clone()).collect();
                        return Err(SqlError::new(
                            code::UNIQUE,
                            format!("could not create unique index \"{}\"", index.name),
                        )
                        .detail(
                            unique_violation(table, &index.name, &vals, &index.columns)
                                .detail
                                .unwrap_or_default(),
                        ));
                    }
                }
            }
            self.ts.txn.put(&index.keyspace(), &key, &value)?;
        }
        Ok(())
    }

    fn create_index(&mut self, ci: &ast::CreateIndex, database: &str) -> Result<Output> {
        if ci.predicate.is_some() {
            return Err(SqlError::unsupported("partial indexes"));
        }
        let tname = object_name(&ci.table_name)?;
        let table = self.db.catalog.table_or_err(&mut self.ts.txn, database, &tname)?;
        let columns = ci
            .columns
            .iter()
            .map(|ic| match &ic.column.expr {
                ast::Expr::Identifier(id) => table.column_or_err(&id.value.to_lowercase()),
                other => Err(SqlError::unsupported(format!("an index on the expression {other}"))),
            })
            .collect::<Result<Vec<_>>>()?;
        for &c in &columns {
            if !crate::encoding::key_type_supported(table.columns[c].ty) {
                return Err(SqlError::unsupported(format!(
                    "an index on a column of type {}",
                    table.columns[c].ty.sql_name()
                )));
            }
        }
        let name = match &ci.name {
            Some(n) => object_name(n)?,
            None => format!(
                "{tname}_{}_idx",
                columns
                    .iter()
                    .map(|&c| table.columns[c].name.clone())
                    .collect::<Vec<_>>()
                    .join("_")
            ),
        };
        if self.relation_taken(database, &name, ci.if_not_exists)? {
            return Ok(Output::Command("CREATE INDEX".into()));
        }
        let id = self.db.catalog.next_id(&mut self.ts.txn)?;
        let index = Index { name, id, columns, unique: ci.unique };
        self.build_index(&table, &index)?;
        let mut t = (*table).clone();
        t.indexes.push(index);
        self.db.catalog.put_table(&mut self.ts.txn, &t)?;
        Ok(Output::Command("CREATE INDEX".into()))
    }

    fn alter_table(&mut self, at: &ast::AlterTable, database: &str) -> Result<Output> {
        let tname = object_name(&at.name)?;
        let table = self.db.catalog.table_or_err(&mut self.ts.txn, database, &tname)?;
        let mut t = (*table).clone();
        for op in &at.operations {
            match op {
                ast::AlterTableOperation::AddConstraint {
                    constraint: ast::TableConstraint::PrimaryKey(pk),
                    ..
                } => {
                    if !t.primary_key.is_empty() {
                        return Err(SqlError::new(
                            code::INVALID_TABLE_DEFINITION,
                            format!("multiple primary keys for table \"{tname}\" are not allowed"),
                        ));
                    }
                    let cols = pk
                        .columns
                        .iter()
                        .map(|ic| match &ic.column.expr {
                            ast::Expr::Identifier(id) => t.column_or_err(&id.value.to_lowercase()),
                            other => Err(SqlError::unsupported(format!(
                                "a key on the expression {other}"
                            ))),
                        })
                        .collect::<Result<Vec<_>>>()?;
                    for &c in &cols {
                        if !crate::encoding::key_type_supported(t.columns[c].ty) {
                            return Err(SqlError::unsupported(format!(
                                "a primary key on a column of type {}",
                                t.columns[c].ty.sql_name()
                            )));
                        }
                    }
                    // Re-key every row under a new keyspace id; indexes are rebuilt too.
                    let old = t.clone();
                    let rows = self.ts.txn.scan(&old.keyspace(), Scan::all())?;
                    t.id = self.db.catalog.next_id(&mut self.ts.txn)?;
                    t.primary_key = cols.clone();
                    t.primary_key_name = Some(format!("{tname}_pkey"));
                    for &c in &cols {
                        t.columns[c].nullable = false;
                    }
                    for index in &mut t.indexes {
                        index.id = self.db.catalog.next_id(&mut self.ts.txn)?;
                    }
                    for (oldkey, raw) in rows {
                        let row = decode_row(&raw, old.columns.len())?;
                        for &c in &cols {
                            if row[c].is_null() {
                                return Err(SqlError::new(code::NOT_NULL, format!("column \"{}\" of relation \"{tname}\" contains null values", t.columns[c].name)));
                            }
                        }
                        self.ts.txn.delete(&old.keyspace(), &oldkey)?;
                        let key = encode_key(&cols.iter().map(|&c| &row[c]).collect::<Vec<_>>())?;
                        if self.ts.txn.get(&t.keyspace(), &key)?.is_some() {
                            let vals: Vec<Value> = cols.iter().map(|&c| row[c].clone()).collect();
                            return Err(SqlError::new(
                                code::UNIQUE,
                                format!("could not create unique index \"{tname}_pkey\""),
                            )
                            .detail(
                                unique_violation(&t, "", &vals, &cols).detail.unwrap_or_default(),
                            ));
                        }
                        self.ts.txn.put(&t.keyspace(), &key, &raw)?;
                    }
                    for index in &old.indexes {
                        for (k, _) in self.ts.txn.scan(&index.keyspace(), Scan::all())? {
                            self.ts.txn.delete(&index.keyspace(), &k)?;
                        }
                    }
                    for index in t.indexes.clone() {
                        self.build_index(&t, &index)?;
                    }
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "ALTER TABLE … {}",
                        first_words(&other.to_string())
                    )))
                }
            }
        }
        self.db.catalog.put_table(&mut self.ts.txn, &t)?;
        Ok(Output::Command("ALTER TABLE".into()))
    }
}

/// Binds a DEFAULT expression (constants and functions such as now(); no columns).
fn bind_constant(e: &ast::Expr) -> Result<Expr> {
    if let ast::Expr::Subquery(_) = e {
        return Err(SqlError::unsupported("a subquery in DEFAULT"));
    }
    let (bound, _) = bind_free(e)?;
    if bound.uses_columns_from(0) {
        return Err(SqlError::new("0A000", "cannot use column references in default expression"));
    }
    Ok(bound)
}

/// Binds an expression that refers to no table (defaults).
fn bind_free(e: &ast::Expr) -> Result<(Expr, DataType)> {
    use ast::Expr as E;
    Ok(match e {
        E::Value(v) => match &v.value {
            ast::Value::Number(n, _) => match n.parse::<i64>() {
                Ok(i) => (Expr::Const(Value::Int(i)), DataType::Int8),
                Err(_) => (
                    Expr::Const(Value::parse(n, DataType::Numeric(None))?),
                    DataType::Numeric(None),
                ),
            },
            ast::Value::SingleQuotedString(s) => {
                (Expr::Const(Value::Text(s.clone())), DataType::Unknown)
            }
            ast::Value::Boolean(b) => (Expr::Const(Value::Bool(*b)), DataType::Bool),
            ast::Value::Null => (Expr::Const(Value::Null), DataType::Unknown),
            other => return Err(SqlError::unsupported(format!("DEFAULT {other}"))),
        },
        E::UnaryOp { op: ast::UnaryOperator::Minus, expr } => {
            let (x, t) = bind_free(expr)?;
            (Expr::Neg(Box::new(x)), t)
        }
        E::Nested(x) => bind_free(x)?,
        E::Cast { expr, data_type: dt, .. } => {
            let ty = data_type(dt)?;
            let (x, _) = bind_free(expr)?;
            (Expr::Cast(Box::new(x), ty), ty)
        }
        E::Identifier(i)
            if matches!(
                i.value.to_lowercase().as_str(),
                "current_timestamp" | "localtimestamp"
            ) =>
        {
            (Expr::Func(Func::Now, vec![]), DataType::TimestampTz)
        }
        E::Identifier(i) if i.value.eq_ignore_ascii_case("current_date") => {
            (Expr::Func(Func::CurrentDate, vec![]), DataType::Date)
        }
        E::Function(f) if f.name.to_string().eq_ignore_ascii_case("now") => {
            (Expr::Func(Func::Now, vec![]), DataType::TimestampTz)
        }
        E::BinaryOp { left, op, right } => {
            let (a, at) = bind_free(left)?;
            let (b, _) = bind_free(right)?;
            let op = match op {
                ast::BinaryOperator::Plus => crate::expr::BinOp::Add,
                ast::BinaryOperator::Minus => crate::expr::BinOp::Sub,
                ast::BinaryOperator::Multiply => crate::expr::BinOp::Mul,
                ast::BinaryOperator::StringConcat => crate::expr::BinOp::Concat,
                other => {
                    return Err(SqlError::unsupported(format!("the operator {other} in DEFAULT")))
                }
            };
            (Expr::Binary(op, Box::new(a), Box::new(b)), at)
        }
        other => return Err(SqlError::unsupported(format!("DEFAULT {other}"))),
    })
}
