//! Sessions: a [`Database`] (the engine, the catalog, row locks, every session's activity)
//! and its [`Session`]s. A session runs statements (parsing them, `crate::parse`), keeps
//! transaction blocks and savepoints, the one registry of prepared statements, and commits
//! fast or safe; it dispatches each statement to binding (`crate::bind`), planning
//! (`crate::plan`) and execution (`crate::exec`). Settings live in `crate::pg::settings`,
//! the ED functions and notifications in `crate::ed`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kiln_engine::{
    CommitMode, CommitModel, DurabilityEvent, DurabilityLevel, IsolationLevel, Operations,
    Transaction, TxnId, TxnKind, TxnOptions,
};
use sqlparser::ast;

use crate::bind::*;
use crate::error::{code, Result, SqlError};
use crate::expr::Ctx;
use crate::locks::HeldLocks;
use crate::parse::{parse_statement, utility, CommitHint, ReindexKind, Utility};
use crate::pg::activity::{Activity, Wait};
use crate::types::{now_micros, DataType, Value};

use crate::bind::dml::*;
use crate::ed::*;
use crate::exec::copy::*;
use crate::pg::settings::*;
use crate::prepared::PlanSlot;

use crate::database::*;

/// How long a transaction waits for `kiln.read_after` by default, in milliseconds.
const READ_AFTER_TIMEOUT_MS: u64 = 5_000;

/// The format of COPY data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyFormat {
    /// Tab-separated text with backslash escapes.
    Text,
    /// Comma-separated values.
    Csv,
    /// PostgreSQL's binary COPY format (its values in their binary wire forms).
    Binary,
}

/// What COPY … TO STDOUT sends.
#[derive(Debug, Clone, PartialEq)]
pub enum CopyOutData {
    /// Text or CSV lines, each ending with a newline.
    Lines(Vec<String>),
    /// Rows of values, to be written in the binary format.
    Rows(Vec<crate::types::Row>),
}

/// The result of one statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Rows and the command tag (`SELECT n`, `INSERT 0 n` with RETURNING, …).
    Rows {
        /// Column names and types.
        columns: Vec<(String, DataType)>,
        /// The table column each column shows unchanged, when it does: the table's OID and
        /// the column's number (RowDescription reports them; shorter than `columns` when
        /// the rest have none).
        origins: crate::types::Origins,
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
        /// The data's format. Binary data is read by the protocol layer, which hands the
        /// rows to [`Session::copy_rows`].
        format: CopyFormat,
    },
    /// COPY … TO STDOUT: the data, one line or row per row.
    CopyOut {
        /// The columns.
        columns: Vec<(String, DataType)>,
        /// The rows: formatted lines, or values for the protocol layer to write in binary.
        data: CopyOutData,
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
    pub(crate) statement: Option<ast::Statement>,
    pub(crate) hint: Option<CommitHint>,
    /// Parameter types ($1 first), fixed by the client or inferred.
    pub param_types: Vec<DataType>,
    /// Result columns, when the statement returns rows.
    pub columns: Option<Vec<(String, DataType)>>,
    /// The table column each result column shows unchanged, when it does (as in
    /// [`Output::Rows`]).
    pub origins: crate::types::Origins,
    /// The plan of its last execution, reused while still valid.
    pub(crate) plan: PlanSlot,
}

impl Prepared {
    /// Whether the statement is a query (SELECT, VALUES, a WITH that only reads): what a
    /// named portal keeps as a cursor.
    pub fn is_query(&self) -> bool {
        matches!(&self.statement, Some(ast::Statement::Query(_)))
            && self.columns.is_some()
            && self.statement.as_ref().and_then(crate::bind::with::modifying_with).is_none()
    }
}

pub(crate) struct TxnState {
    pub(crate) txn: Transaction,
    pub(crate) explicit: bool,
    pub(crate) failed: bool,
    /// Row locks, released at the commit point or whenever this state is dropped.
    pub(crate) locks: HeldLocks,
    pub(crate) hint: Option<CommitHint>,
    pub(crate) local: HashMap<String, String>,
    pub(crate) isolation: IsolationLevel,
    /// Savepoints, innermost last.
    pub(crate) savepoints: Vec<SavepointMark>,
    /// Foreign-key checks put off to the commit (deferred constraints).
    pub(crate) pending: Vec<crate::exec::constraints::PendingCheck>,
    /// SET CONSTRAINTS in this transaction.
    pub(crate) modes: crate::exec::constraints::ConstraintModes,
    /// The session's settings before this transaction's first SET: a rollback restores them,
    /// as PostgreSQL undoes a rolled-back transaction's SETs.
    pub(crate) settings_before: Option<BTreeMap<String, String>>,
}

/// A savepoint: what ROLLBACK TO restores.
pub(crate) struct SavepointMark {
    name: String,
    /// The engine's undo mark.
    engine: kiln_engine::Savepoint,
    /// How many row locks were held then.
    locks: usize,
    /// How many transaction-level advisory locks were taken then.
    advisory: usize,
    /// How many NOTIFYs were queued then.
    notifies: usize,
    /// SET CONSTRAINTS as it was then.
    modes: crate::exec::constraints::ConstraintModes,
    /// The session's settings and the transaction's SET LOCAL values then.
    settings: BTreeMap<String, String>,
    local: HashMap<String, String>,
}

impl TxnState {
    /// Where the innermost savepoint named `name` is (3B001 when there is none).
    pub(crate) fn savepoint_position(&self, name: &str) -> Result<usize> {
        let name = name.to_lowercase();
        self.savepoints
            .iter()
            .rposition(|s| s.name == name)
            .ok_or_else(|| SqlError::new("3B001", format!("savepoint \"{name}\" does not exist")))
    }
}

/// One client's session.
pub struct Session {
    pub(crate) db: Arc<Database>,
    pub(crate) engine_session: kiln_engine::Session,
    pub(crate) user: String,
    pub(crate) database: String,
    pub(crate) pid: i32,
    pub(crate) txn: Option<TxnState>,
    pub(crate) settings: BTreeMap<String, String>,
    /// The settings the client gave at startup: what RESET and DISCARD ALL return to
    /// (PostgreSQL's reset values), before the server's defaults.
    pub(crate) startup: BTreeMap<String, String>,
    /// Prepared statements by name (the protocol's Parse and SQL PREPARE share them).
    pub(crate) prepared: HashMap<String, Arc<Prepared>>,
    pub(crate) inbox: Arc<Inbox>,
    pub(crate) interrupt: Arc<AtomicBool>,
    /// This session's entry in pg_stat_activity.
    pub(crate) activity: Arc<Activity>,
    pub(crate) copy: Option<CopyState>,
    pub(crate) last_write: Option<TxnId>,
    /// What this session's `nextval` calls returned (for currval and lastval).
    pub(crate) sequence_values: parking_lot::Mutex<crate::sequence::SessionValues>,
    /// What the last statement run in a transaction asked of the engine.
    pub(crate) last_operations: Option<kiln_engine::Operations>,
    /// Open cursors (DECLARE).
    pub(crate) cursors: crate::cursor::Cursors,
    /// Counts the transactions begun, so cursors know which one declared them.
    pub(crate) txn_serial: u64,
    /// Who holds this session's row locks and advisory locks in the lock table: one owner
    /// for both, so a wait between them is seen by the deadlock check.
    pub(crate) lock_owner: u64,
    /// The advisory locks it holds.
    pub(crate) advisory: parking_lot::Mutex<crate::advisory::AdvisoryLocks>,
    /// The open transaction's NOTIFYs (channel, payload), each once, sent at its commit.
    pub(crate) notifies: parking_lot::Mutex<PendingNotifies>,
    /// The `set_config` calls of the running statement, applied when it succeeds.
    pub(crate) set_configs: parking_lot::Mutex<Vec<crate::pg::settings::SetConfig>>,
    /// Messages for the client raised by the running statement (NOTICE, WARNING, …), for
    /// the protocol layer to send before the statement's result.
    pub(crate) notices: parking_lot::Mutex<Vec<Notice>>,
    /// How many DO blocks run inside one another now (`EXECUTE 'DO …'`).
    pub(crate) do_depth: usize,
    /// Its temporary schema and tables (`exec::temp`).
    pub(crate) temps: crate::exec::temp::Temps,
}

/// A message for the client that is not an error (NoticeResponse): its level (NOTICE,
/// WARNING, INFO, LOG, DEBUG) and its SQLSTATE, message, detail and hint.
#[derive(Debug, Clone)]
pub struct Notice {
    /// Its level; [`Notice::severity`] names it.
    pub level: crate::parse::do_block::Level,
    /// Its fields (an error's: code, message, detail, hint).
    pub fields: SqlError,
}

impl Notice {
    /// A NOTICE with SQLSTATE `code`.
    pub(crate) fn new(code: &'static str, message: impl Into<String>) -> Notice {
        Notice {
            level: crate::parse::do_block::Level::Notice,
            fields: SqlError::new(code, message),
        }
    }

    /// A NOTICE carrying `fields` (code, message, detail).
    pub(crate) fn of(fields: SqlError) -> Notice {
        Notice { level: crate::parse::do_block::Level::Notice, fields }
    }

    /// NOTICE, WARNING, INFO, LOG or DEBUG.
    pub fn severity(&self) -> &'static str {
        self.level.severity()
    }
}

/// Keeps a notice for the client (a runaway producer of notices is bounded; PostgreSQL
/// would stream them).
pub(crate) fn raise_notice(notices: &parking_lot::Mutex<Vec<Notice>>, notice: Notice) {
    let mut n = notices.lock();
    if n.len() < NOTICES_MAX {
        n.push(notice);
    }
}

/// The stack every statement is guaranteed. Statements nest at most
/// [`crate::parse::EXPRESSION_DEPTH_MAX`] deep, and walking, copying or dropping such a tree
/// recurses once per level; a caller with less stack left than this (a small thread, an
/// embedding application) runs the statement on a fresh segment of this size instead.
pub const STATEMENT_STACK_BYTES: usize = 32 << 20;

/// The stack a function marked `#[recursive]` (the binder's and the evaluator's recursion)
/// wants left before it goes on: with less, it continues on a new segment of
/// [`RECURSION_SEGMENT_BYTES`]. What runs between two such calls (an operator's binding, a
/// cast, a literal's parsing) must fit in it — in an unoptimized build too, whose frames are
/// several times larger; the crate's default, 128 KiB, did not.
const RECURSION_RED_ZONE_BYTES: usize = 1 << 20;
/// The size of each new segment of stack `#[recursive]` functions take.
const RECURSION_SEGMENT_BYTES: usize = 8 << 20;

pub(crate) fn with_stack<R>(f: impl FnOnce() -> R) -> R {
    static SIZES: std::sync::Once = std::sync::Once::new();
    SIZES.call_once(|| {
        recursive::set_minimum_stack_size(RECURSION_RED_ZONE_BYTES);
        recursive::set_stack_allocation_size(RECURSION_SEGMENT_BYTES);
    });
    stacker::maybe_grow(STATEMENT_STACK_BYTES, STATEMENT_STACK_BYTES + (1 << 20), f)
}

/// The evaluation environment of a statement of session `$s` in `$style` (its time zone,
/// DateStyle and IntervalStyle; a macro, so that it borrows only the fields it names).
macro_rules! session_env {
    ($s:ident, $style:expr, $settings:expr) => {
        SessionEnv {
            db: &$s.db,
            last_write: $s.last_write,
            sequence_values: &$s.sequence_values,
            advisory: &$s.advisory,
            notifies: &$s.notifies,
            notices: &$s.notices,
            lock_timeout: crate::session::lock_timeout($settings),
            settings: $settings,
            startup: &$s.startup,
            set_configs: &$s.set_configs,
            engine_session: &$s.engine_session,
            user: &$s.user,
            database: &$s.database,
            pid: $s.pid,
            now: now_micros(),
            style: $style,
            activity: &$s.activity,
        }
    };
}

pub(crate) use session_env;

/// How long a lock is waited for under these settings (`lock_timeout`; 0 or unset: no
/// limit).
pub(crate) fn lock_timeout(settings: &BTreeMap<String, String>) -> Option<std::time::Duration> {
    settings
        .get("lock_timeout")
        .and_then(|v| crate::pg::settings::parse_duration_ms("lock_timeout", v).ok())
        .filter(|v| *v > 0)
        .map(std::time::Duration::from_millis)
}

/// The statement limits of session `$s`.
macro_rules! session_limits {
    ($s:ident) => {
        crate::exec::select::ExecLimits {
            rows_max: $s.db.config.rows_max,
            activity: Some($s.activity.clone()),
        }
    };
}

pub(crate) use session_limits;

/// A writer of session `$s` over its transaction `$ts`, waiting at most `$lock_timeout` for a
/// row lock (a macro, so that it borrows only the fields it names).
macro_rules! session_writer {
    ($s:ident, $ts:expr, $lock_timeout:expr) => {
        crate::exec::write::Writer {
            db: &$s.db,
            ts: $ts,
            lock_timeout: $lock_timeout,
            interrupt: &$s.interrupt,
            activity: &$s.activity,
            limits: crate::session::session_limits!($s),
            constraints: Default::default(),
            notices: &$s.notices,
            cascaded: Vec::new(),
            triggers: Default::default(),
            temps: &mut $s.temps,
            pid: $s.pid,
            txn_serial: $s.txn_serial,
            routine_ddl: false,
            ddl_guard: 0,
        }
    };
}

pub(crate) use session_writer;

impl Drop for Session {
    fn drop(&mut self) {
        // Whatever ends the session, its transaction is rolled back (releasing its row
        // locks), its temporary tables are dropped and it leaves pg_stat_activity.
        self.abort();
        self.drop_temp_schema();
        self.db.activities.unregister(&self.activity);
    }
}

impl Session {
    /// The connection's addresses, the client's and the server's end, as `inet_client_addr()`,
    /// `inet_server_addr()` and `pg_stat_activity` show them.
    pub fn set_addresses(&self, client: std::net::SocketAddr, server: std::net::SocketAddr) {
        self.activity.set_addresses(client, server);
    }

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

    /// What the last statement run in a transaction asked of the engine: point reads, scans
    /// and the rows they returned, writes (for tests that pin the work a plan does).
    pub fn last_statement_operations(&self) -> Option<Operations> {
        self.last_operations
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
    pub(crate) fn statement_done(&self) {
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
        let mut queue = self.inbox.queue.lock();
        // As in PostgreSQL, a session in a transaction block hears other sessions' NOTIFYs
        // only once the block ends; durability notifications go out at once.
        let in_block = self.txn.as_ref().is_some_and(|t| t.explicit);
        let taken: Vec<Notification> = if in_block {
            let (now, later): (Vec<Notification>, Vec<Notification>) =
                queue.drain(..).partition(|n| n.sender.is_none());
            *queue = VecDeque::from(later);
            now
        } else {
            queue.drain(..).collect()
        };
        let bytes: usize = taken
            .iter()
            .filter(|n| n.sender.is_some())
            .map(|n| notification_bytes(&n.channel, &n.payload))
            .sum();
        self.inbox.bytes.fetch_sub(bytes, Ordering::Relaxed);
        taken
    }

    /// ReadyForQuery status: `I` idle, `T` in a transaction block, `E` in a failed one.
    pub fn transaction_status(&self) -> u8 {
        match &self.txn {
            Some(t) if t.explicit && t.failed => b'E',
            Some(t) if t.explicit => b'T',
            _ => b'I',
        }
    }

    /// Rolls back whatever is open (the connection went away).
    pub fn abort(&mut self) {
        if let Some(ts) = self.txn.take() {
            self.finish(ts, false);
        }
        self.copy = None;
    }

    pub(crate) fn finish(&mut self, mut ts: TxnState, _committed: bool) {
        if let Some(before) = ts.settings_before.take() {
            self.settings = before;
        }
        // The ON COMMIT actions of temporary tables made by the rolled-back transaction.
        let serial = self.txn_serial;
        self.temps.on_commit.retain(|(_, _, made)| *made != serial);
        self.cursors.rolled_back(self.txn_serial);
        ts.locks.release_all();
        self.advisory.lock().end_transaction();
        self.notifies.get_mut().take();
        ts.txn.abort();
    }

    /// The columns of a cursor DECLAREd in SQL, when one of that name is open.
    pub fn cursor_columns(
        &self,
        name: &str,
    ) -> Option<(crate::types::Columns, crate::types::Origins)> {
        self.cursors.columns(name)
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

    pub(crate) fn simple_query_inner(&mut self, sql: &str) -> (Vec<Output>, Option<SqlError>) {
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
        for statement in &texts {
            let (text, hint) = (&statement.text, statement.hint.clone());
            let result = (|| -> Result<Output> {
                if let Some(u) = utility(text)? {
                    if u.is_transactional() && implicit && self.txn.is_none() && !implicit_open {
                        self.begin_txn(false, None, None, None)?;
                        implicit_open = true;
                    }
                    return self.utility(u, hint, implicit_open);
                }
                let mut statements = parse_statement(statement)?;
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
                self.execute_statement(&statement, hint, &[], implicit_open, None)
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
                // A failed block can only roll back, so its row locks can go now — unless a
                // savepoint can still bring it back to life with its earlier writes, which
                // must stay locked.
                // The locks taken since the innermost savepoint go at once: any way back
                // from the failure rolls back at least to it (a waiter on them, such as the
                // other side of a deadlock, goes on now, as in PostgreSQL).
                match t.savepoints.last() {
                    None => t.locks.release_all(),
                    Some(mark) => t.locks.release_since(mark.locks),
                }
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

    /// Executes a prepared statement with parameter values (extended protocol Execute).
    pub fn execute_prepared(&mut self, prepared: &Prepared, params: &[Value]) -> Result<Output> {
        self.activity.start_statement(&prepared.sql);
        let result = with_stack(|| self.execute_prepared_inner(prepared, params));
        self.statement_done();
        result
    }

    pub(crate) fn execute_prepared_inner(
        &mut self,
        prepared: &Prepared,
        params: &[Value],
    ) -> Result<Output> {
        if let Some(u) = utility(&prepared.sql)? {
            let r = self.utility(u, prepared.hint.clone(), false);
            if r.is_err() {
                self.fail();
            }
            return r.map_err(|e| e.resolve_position(&prepared.sql));
        }
        let Some(stmt) = &prepared.statement else { return Ok(Output::Empty) };
        let r = self.execute_statement(
            stmt,
            prepared.hint.clone(),
            params,
            false,
            Some(&prepared.plan),
        );
        if r.is_err() {
            self.fail();
        }
        r.map_err(|e| e.resolve_position(&prepared.sql))
    }

    /// `SET kiln.read_after = 'EPOCH.CSN'` (a session token: an id `kiln_last_txid()` gave on
    /// any node of the cluster): each transaction begins only once this node has that commit,
    /// so that a session that moves between nodes reads its own writes and never goes back in
    /// time. Waits at most `kiln.read_after_timeout` (default 5 s; 57014 after), and fails
    /// with 40000 if that commit was lost.
    fn wait_for_read_after(&self) -> Result<()> {
        let Some(token) = self.setting("kiln.read_after").filter(|t| !t.is_empty()) else {
            return Ok(());
        };
        let id = crate::ed::id_arg(&crate::types::Value::Text(token))?;
        let ms = self.setting_ms("kiln.read_after_timeout").unwrap_or(READ_AFTER_TIMEOUT_MS);
        match self.db.engine.wait_known(id, std::time::Duration::from_millis(ms))? {
            kiln_engine::TxnStatus::Durable => Ok(()),
            kiln_engine::TxnStatus::Lost => Err(SqlError::new(
                code::TXN_ROLLBACK,
                format!("transaction {id}, which this session reads after, was lost"),
            )
            .detail(
                "kiln.read_after names a commit that a failure took back before it became durable.",
            )
            .hint("Reset kiln.read_after, and redo the lost work if it still matters.")),
            status => Err(SqlError::new(
                code::QUERY_CANCELED,
                format!(
                    "this node has not received transaction {id} within {ms} ms (it is {status})"
                ),
            )
            .hint("Try again, raise kiln.read_after_timeout, or read on the leader.")),
        }
    }

    pub(crate) fn begin_txn(
        &mut self,
        explicit: bool,
        isolation: Option<IsolationLevel>,
        read_only: Option<bool>,
        hint: Option<CommitHint>,
    ) -> Result<()> {
        self.txn_serial += 1;
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
        self.wait_for_read_after()?;
        let txn = self.engine_session.begin(options)?;
        let mut local = HashMap::new();
        local.insert("transaction_isolation".to_string(), isolation_name(isolation).to_string());
        local.insert(
            "transaction_read_only".to_string(),
            if read_only { "on" } else { "off" }.to_string(),
        );
        self.activity.set_transaction(true);
        self.sequence_values.get_mut().transaction_id = None;
        self.txn = Some(TxnState {
            txn,
            explicit,
            failed: false,
            locks: HeldLocks::new(self.db.locks.clone(), self.lock_owner),
            hint,
            local,
            isolation,
            savepoints: Vec::new(),
            pending: Vec::new(),
            modes: Default::default(),
            settings_before: None,
        });
        Ok(())
    }

    /// The open transaction block, for a statement that needs one (25P01 otherwise).
    /// Marks a savepoint named `name` in the open transaction.
    pub(crate) fn push_savepoint(&mut self, name: String) {
        let settings = self.settings.clone();
        let advisory = self.advisory.lock().mark();
        let notifies = self.notifies.get_mut().len();
        let ts = self.txn.as_mut().expect("a transaction is open");
        let mark = SavepointMark {
            name,
            engine: ts.txn.savepoint(),
            locks: ts.locks.len(),
            advisory,
            notifies,
            modes: ts.modes.clone(),
            settings,
            local: ts.local.clone(),
        };
        ts.savepoints.push(mark);
    }

    /// Lets go of the savepoint at `pos` and those after it, keeping what was done since.
    pub(crate) fn release_savepoint_at(&mut self, pos: usize) {
        let ts = self.txn.as_mut().expect("a transaction is open");
        let sp = ts.savepoints[pos].engine;
        ts.savepoints.truncate(pos);
        ts.txn.release(sp);
    }

    /// Rolls the open transaction back to its savepoint at `pos` (kept; later ones go).
    pub(crate) fn rollback_to_savepoint(&mut self, pos: usize) -> Result<()> {
        let ts = self.txn.as_mut().expect("a transaction is open");
        ts.savepoints.truncate(pos + 1);
        let mark = &ts.savepoints[pos];
        let (sp, locks, advisory, notifies) =
            (mark.engine, mark.locks, mark.advisory, mark.notifies);
        ts.modes = mark.modes.clone();
        ts.local = mark.local.clone();
        let settings = mark.settings.clone();
        ts.txn.rollback_to(sp)?;
        // As in PostgreSQL, the row locks taken after the savepoint go with it. The
        // deferred checks stay: each looks at the rows as they are at the commit.
        ts.locks.release_since(locks);
        // The block is usable again (PostgreSQL's subtransaction abort).
        ts.failed = false;
        // Transaction-level advisory locks taken since go too, and NOTIFYs.
        self.advisory.get_mut().rollback_to(advisory);
        self.notifies.get_mut().truncate(notifies);
        // SETs since the savepoint are undone with it.
        self.settings = settings;
        Ok(())
    }

    /// The messages raised since the last call (NOTICE, WARNING, …) that
    /// `client_min_messages` lets through to the client (INFO always goes, as in
    /// PostgreSQL).
    pub fn take_notices(&mut self) -> Vec<Notice> {
        use crate::parse::do_block::Level;
        let taken = std::mem::take(&mut *self.notices.lock());
        if taken.is_empty() {
            return taken;
        }
        let rank = |l: &str| match l {
            "debug5" | "debug4" | "debug3" | "debug2" | "debug1" | "debug" => 0,
            "log" => 1,
            "notice" => 3,
            "warning" => 4,
            "error" => 5,
            _ => 3,
        };
        let min = rank(&self.setting("client_min_messages").unwrap_or_default().to_lowercase());
        taken
            .into_iter()
            .filter(|n| match n.level {
                Level::Info => true,
                Level::Debug => min == 0,
                Level::Log => min <= 1,
                Level::Notice => min <= 3,
                Level::Warning | Level::Exception => min <= 4,
            })
            .collect()
    }

    /// Sends the client a WARNING with SQLSTATE `code`.
    pub(crate) fn warn(&self, code: &'static str, message: &str) {
        let level = crate::parse::do_block::Level::Warning;
        raise_notice(&self.notices, Notice { level, fields: SqlError::new(code, message) });
    }

    /// `LOCK TABLE … IN ACCESS SHARE MODE` (what pg_dump takes on each table it dumps): that
    /// mode only keeps a table from being dropped or rewritten while the transaction reads
    /// it, and a REPEATABLE READ or SERIALIZABLE transaction reads its one snapshot's
    /// definition and rows whatever DDL commits meanwhile, so there holding it needs nothing
    /// more. A READ COMMITTED transaction takes a new snapshot per statement, so it would
    /// see such DDL: there, as in every stronger mode (which applications take to serialize
    /// writers), it would need table locks Kiln does not have, and is refused.
    fn lock_tables(&mut self, lock: &ast::Lock) -> Result<Output> {
        if lock.lock_mode != Some(ast::LockTableMode::AccessShare) {
            let mode = lock.lock_mode.as_ref().map_or("ACCESS EXCLUSIVE".into(), |m| m.to_string());
            return Err(SqlError::unsupported(format!("LOCK TABLE … IN {mode} MODE")).hint(
                "Kiln takes only ACCESS SHARE table locks; serialize writers with SELECT … FOR UPDATE or pg_advisory_xact_lock().",
            ));
        }
        let database = self.database.clone();
        let db = self.db.clone();
        let _installed = crate::bind::search::install(self.search_path()?);
        let ts = self.block("LOCK TABLE")?;
        if ts.isolation == IsolationLevel::ReadCommitted {
            return Err(SqlError::unsupported(
                "LOCK TABLE … IN ACCESS SHARE MODE in a READ COMMITTED transaction",
            )
            .hint("Begin the transaction with ISOLATION LEVEL REPEATABLE READ: its snapshot keeps the tables it reads as they were, as the lock would."));
        }
        for target in &lock.tables {
            let name = object_name(&target.name)?;
            let name = name.as_str();
            if crate::bind::reg::system_relation_oid(name).is_none()
                && db.catalog.table(&mut ts.txn, &database, name)?.is_none()
                && db.catalog.view(&mut ts.txn, &database, name)?.is_none()
            {
                return Err(crate::bind::reg::undefined_relation(name));
            }
        }
        Ok(Output::Command("LOCK TABLE".into()))
    }

    pub(crate) fn block(&mut self, what: &str) -> Result<&mut TxnState> {
        self.txn.as_mut().filter(|t| t.explicit).ok_or_else(|| {
            SqlError::new(
                code::NO_ACTIVE_TXN,
                format!("{what} can only be used in transaction blocks"),
            )
        })
    }

    /// How the transaction commits: fast, or safe at a level. A hint decides first, then
    /// `synchronous_commit` (`off` fast, `local` safe at `local`, the other values safe at
    /// `kiln.durability_level`).
    pub(crate) fn commit_mode(
        &self,
        ts: &TxnState,
        hint: Option<CommitHint>,
    ) -> Result<(CommitMode, DurabilityLevel)> {
        let setting =
            |name: &str| ts.local.get(name).cloned().or_else(|| self.settings.get(name).cloned());
        let session_level = || -> Result<DurabilityLevel> {
            let level = setting("kiln.durability_level").unwrap_or_default();
            crate::pg::settings::parse_level(&level, "kiln.durability_level")
        };
        let (mode, level) = match hint.or_else(|| ts.hint.clone()) {
            Some(CommitHint::Fast) => (CommitMode::Fast, DurabilityLevel::Quorum),
            Some(CommitHint::Safe(Some(level))) => (CommitMode::Safe, level),
            Some(CommitHint::Safe(None)) => (CommitMode::Safe, session_level()?),
            None => match setting("synchronous_commit").unwrap_or_default().as_str() {
                "off" => (CommitMode::Fast, DurabilityLevel::Quorum),
                "local" => (CommitMode::Safe, DurabilityLevel::Local),
                _ => (CommitMode::Safe, session_level()?),
            },
        };
        self.db.check_level(&level)?;
        Ok((mode, level))
    }

    pub(crate) fn commit_txn(&mut self, ts: TxnState, hint: Option<CommitHint>) -> Result<TxnId> {
        // Temporary tables' ON COMMIT actions run in the transaction, before its commit.
        let ts = if self.temps.on_commit.is_empty() {
            ts
        } else {
            self.txn = Some(ts);
            let done = self.temp_on_commit();
            let ts = self.txn.take().expect("the transaction stays open");
            if let Err(e) = done {
                self.finish(ts, false);
                return Err(e);
            }
            ts
        };
        let committed = self.commit_txn_inner(ts, hint);
        match committed {
            Ok(_) => self.cursors.committed(self.txn_serial),
            Err(_) => self.cursors.rolled_back(self.txn_serial),
        }
        committed
    }

    fn commit_txn_inner(&mut self, mut ts: TxnState, hint: Option<CommitHint>) -> Result<TxnId> {
        // Deferred foreign keys are checked now, before the commit point; a violation rolls
        // the transaction back.
        if !ts.pending.is_empty() {
            if let Err(e) = self.check_pending(&mut ts, false) {
                self.finish(ts, false);
                return Err(e);
            }
        }
        let (mode, level) = match self.commit_mode(&ts, hint) {
            Ok(choice) => choice,
            Err(e) => {
                // Nothing was committed: the transaction rolls back with its locks.
                self.finish(ts, false);
                return Err(e);
            }
        };
        let settings_before = ts.settings_before.take();
        let TxnState { txn, mut locks, .. } = ts;
        let committed = txn.commit_point(mode).map(|c| c.at_level(level));
        if committed.is_err() {
            // Not committed: its SETs are undone.
            if let Some(before) = settings_before {
                self.settings = before;
            }
        }
        // Row locks go at the commit point, before any wait for durability (G9). The classic
        // model, the control experiment, keeps them until the acknowledgement instead: there
        // a commit is visible only once durable, and so is the row a waiter would re-read.
        let classic = self.db.engine.config().commit_model == CommitModel::Classic;
        if !classic || committed.is_err() {
            locks.release_all();
            self.advisory.lock().end_transaction();
        }
        let committed = match committed {
            Ok(c) => c,
            Err(e) => {
                self.notifies.get_mut().take();
                return Err(e.into());
            }
        };
        // NOTIFYs go out at the commit point, when the transaction's writes become visible
        // (a listener that reads them depends on them, as any reader does).
        let notes = self.notifies.get_mut().take();
        if !notes.is_empty() {
            crate::ed::deliver_notifications(&self.db.listeners, self.pid, &notes);
        }
        let id = committed.id();
        if id.kind == TxnKind::Update {
            self.last_write = Some(id);
        }
        if id.kind == TxnKind::Update && !self.inbox.channels.lock().is_empty() {
            self.db.notifier.watch(id, &self.inbox);
            // Already durable (or further) by the time we registered? Deliver now.
            self.notify_known(id);
        }
        let waited = committed.waits();
        if waited {
            self.activity.set_wait(Some(Wait::Durability));
        }
        let acknowledged = self.acknowledge(committed);
        self.activity.set_wait(None);
        locks.release_all();
        self.advisory.lock().end_transaction();
        let id = acknowledged?;
        if waited && id.kind == TxnKind::Update && !self.inbox.channels.lock().is_empty() {
            // Acknowledged at its durability point: tell the session before it hears the reply.
            self.notify_known(id);
        }
        Ok(id)
    }

    /// Delivers the notifications of what is already known of `id`: durable (and the levels
    /// it reached) or lost.
    fn notify_known(&self, id: TxnId) {
        let notifier = &self.db.notifier;
        match self.db.engine.status(id) {
            kiln_engine::TxnStatus::Lost => notifier.on_event(&DurabilityEvent::Lost {
                epoch: id.epoch,
                from_csn: id.csn,
                new_epoch: id.epoch + 1,
                cause: String::new(),
            }),
            kiln_engine::TxnStatus::Durable => {
                notifier.on_event(&DurabilityEvent::Durable { epoch: id.epoch, csn: id.csn })
            }
            _ => {}
        }
        for level in self.db.engine.levels_reached(id) {
            notifier.on_event(&DurabilityEvent::Reached { level, csn: id.csn });
        }
    }

    /// Waits for a commit's acknowledgement ([`crate::ed::acknowledge`]).
    pub(crate) fn acknowledge(&self, committed: kiln_engine::Committed) -> Result<TxnId> {
        crate::ed::acknowledge(&self.db, &self.activity, committed)
    }

    /// Runs a statement sqlparser does not read ([`Utility`]).
    fn utility(
        &mut self,
        u: Utility,
        hint: Option<CommitHint>,
        in_implicit: bool,
    ) -> Result<Output> {
        if u.is_transactional() && self.txn.as_ref().is_some_and(|t| t.failed) {
            return Err(in_failed());
        }
        match u {
            Utility::Vacuum(tables) => self.vacuum(&tables),
            Utility::SetConstraints(names, deferred) => {
                self.set_constraints(names.as_deref(), deferred)
            }
            Utility::Move(name, direction) => self.fetch_cursor(&name, &direction, true),
            u => self.in_transaction_with(hint, in_implicit, |s| s.utility_in_txn(u)),
        }
    }

    /// Runs a transactional [`Utility`] in the open transaction (a statement of its own, or
    /// one of a DO block).
    pub(crate) fn utility_in_txn(&mut self, u: Utility) -> Result<Output> {
        match u {
            Utility::AlterSequence(a) => {
                let ts = self.txn.as_mut().expect("a transaction is open");
                let mut w = session_writer!(self, ts, None);
                w.alter_sequence(&a, &self.database)
            }
            Utility::AlterView(a) => {
                let ts = self.txn.as_mut().expect("a transaction is open");
                let mut w = session_writer!(self, ts, None);
                w.alter_view(&a, &self.database)
            }
            Utility::AlterIdentity(a) => {
                let ts = self.txn.as_mut().expect("a transaction is open");
                let mut w = session_writer!(self, ts, None);
                w.alter_identity(&a, &self.database)
            }
            Utility::AlterTypeOwner(name, schema) => {
                let ts = self.txn.as_mut().expect("a transaction is open");
                let mut w = session_writer!(self, ts, None);
                w.alter_type_owner(&name, schema.as_ref(), &self.database)
            }
            Utility::Do(block) => self.run_do(&block),
            Utility::CreateTrigger(_)
            | Utility::CreateProcedure(_)
            | Utility::CreateDomain(_)
            | Utility::AlterDomain(_)
            | Utility::CreateAggregate(_)
            | Utility::DropAggregate(_)
            | Utility::AlterAggregate(_)
            | Utility::CommentOnRoutine(_)
            | Utility::AttachPartition(_)
            | Utility::DetachPartition(..)
            | Utility::AttachIndex(..) => {
                let style = self.style();
                let settings = crate::pg::settings::settings_in_force(
                    &self.settings,
                    self.txn.as_ref().map(|t| &t.local),
                );
                let env = session_env!(self, style, &settings);
                let ts = self.txn.as_mut().expect("a transaction is open");
                let mut w = session_writer!(self, ts, None);
                match &u {
                    Utility::CreateTrigger(t) => w.create_trigger(t, &self.database, &env),
                    Utility::CreateProcedure(cf) => {
                        let check = crate::exec::routines::check_bodies(&settings);
                        w.create_function(cf, &self.database, check, &env, true)
                    }
                    Utility::CreateDomain(d) => w.create_domain(d, &self.database, &env),
                    Utility::AlterDomain(a) => w.alter_domain(a, &self.database, &env),
                    Utility::CreateAggregate(a) => w.create_aggregate(a, &self.database, &env),
                    Utility::DropAggregate(d) => w.drop_aggregates(d, &self.database),
                    Utility::AlterAggregate(a) => w.alter_aggregate(a, &self.database),
                    Utility::CommentOnRoutine(c) => w.comment_on_routine(c, &self.database),
                    Utility::AttachPartition(a) => w.attach_partition(a, &self.database, &env),
                    Utility::DetachPartition(p, c) => w.detach_partition(p, c, &self.database),
                    Utility::AttachIndex(p, c) => w.attach_index(p, c, &self.database),
                    _ => unreachable!("matched above"),
                }
            }
            Utility::CreateMatView(m) => self.create_matview(&m),
            Utility::RefreshMatView(r) => self.refresh_matview(&r),
            Utility::Reindex(r) => {
                // Whole schemas and databases, and CONCURRENTLY, only outside a block, as in
                // PostgreSQL.
                let whole = !matches!(r.kind, ReindexKind::Index | ReindexKind::Table);
                let in_block = self.do_depth > 0 || self.txn.as_ref().is_some_and(|t| t.explicit);
                if in_block && (whole || r.concurrently) {
                    let what =
                        if r.concurrently { "REINDEX CONCURRENTLY" } else { r.kind.keyword() };
                    let what =
                        if r.concurrently { what.to_string() } else { format!("REINDEX {what}") };
                    let place = if self.do_depth > 0 {
                        "be executed from a function"
                    } else {
                        "run inside a transaction block"
                    };
                    return Err(SqlError::new(code::ACTIVE_TXN, format!("{what} cannot {place}")));
                }
                let ts = self.txn.as_mut().expect("a transaction is open");
                let mut w = session_writer!(self, ts, None);
                w.reindex(&r, &self.database)
            }
            Utility::Vacuum(_) | Utility::SetConstraints(..) | Utility::Move(..) => {
                Err(SqlError::unsupported("VACUUM, SET CONSTRAINTS and MOVE in a DO block"))
            }
        }
    }

    pub(crate) fn vacuum(&mut self, tables: &[String]) -> Result<Output> {
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

    /// Executes one parsed statement.
    pub(crate) fn execute_statement(
        &mut self,
        stmt: &ast::Statement,
        hint: Option<CommitHint>,
        params: &[Value],
        in_implicit: bool,
        slot: Option<&PlanSlot>,
    ) -> Result<Output> {
        use ast::Statement as S;
        self.interrupt.store(false, Ordering::Relaxed);
        self.last_operations = None;
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
                    if t.explicit {
                        self.warn("25001", "there is already a transaction in progress");
                    }
                    let Some(t) = &mut self.txn else { unreachable!("checked above") };
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
                    self.warn("25P01", "there is no transaction in progress");
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
                self.block("SAVEPOINT")?;
                self.push_savepoint(name.value.to_lowercase());
                Ok(Output::Command("SAVEPOINT".into()))
            }
            S::Rollback { savepoint: Some(name), .. } => {
                let ts = self.block("ROLLBACK TO SAVEPOINT")?;
                let pos = ts.savepoint_position(&name.value)?;
                self.rollback_to_savepoint(pos)?;
                Ok(Output::Command("ROLLBACK".into()))
            }
            S::ReleaseSavepoint { name } => {
                let ts = self.block("RELEASE SAVEPOINT")?;
                if ts.failed {
                    return Err(in_failed());
                }
                let pos = ts.savepoint_position(&name.value)?;
                let sp = ts.savepoints[pos].engine;
                ts.savepoints.truncate(pos);
                ts.txn.release(sp);
                Ok(Output::Command("RELEASE".into()))
            }
            S::Rollback { .. } => {
                match self.txn.take() {
                    Some(ts) => self.finish(ts, false),
                    None => self.warn("25P01", "there is no transaction in progress"),
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
                        origins: vec![],
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
                    columns: vec![(crate::pg::settings::show_column(&name), DataType::Text)],
                    origins: vec![],
                    rows: vec![vec![Value::Text(v)]],
                    tag: "SHOW".into(),
                })
            }
            S::Reset(r) => {
                match &r.reset {
                    ast::Reset::ALL => self.reset_all(),
                    ast::Reset::ConfigurationParameter(p) => {
                        let name = crate::pg::settings::setting_name(p)?;
                        self.reset(&name);
                    }
                    ast::Reset::SessionAuthorization => {}
                }
                Ok(Output::Command("RESET".into()))
            }
            S::Deallocate { name, .. } => {
                // Names fold to lower case unless quoted, as in PREPARE and EXECUTE.
                let folded = ident(name);
                if name.value.eq_ignore_ascii_case("all") {
                    self.prepared.clear();
                } else if self.prepared.remove(&folded).is_none() {
                    return Err(SqlError::new(
                        code::INVALID_STATEMENT_NAME,
                        format!("prepared statement \"{folded}\" does not exist"),
                    ));
                }
                Ok(Output::Command(if name.value.eq_ignore_ascii_case("all") {
                    "DEALLOCATE ALL".into()
                } else {
                    "DEALLOCATE".into()
                }))
            }
            S::Prepare { name, data_types, statement } => {
                let mut declared = Vec::with_capacity(data_types.len());
                for t in data_types {
                    declared.push(
                        self.with_catalog(|c, txn, db| crate::bind::resolve_type(t, c, txn, db))?,
                    );
                }
                let prepared = self.prepare(&statement.to_string(), &declared)?;
                self.store_prepared(&ident(name), prepared)?;
                Ok(Output::Command("PREPARE".into()))
            }
            S::Execute { name: Some(name), parameters, immediate: false, .. } => {
                let name = crate::bind::name_as_written(name)?;
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
                let types = self.current_types(&prepared.param_types)?;
                for (p, ty) in parameters.iter().zip(&types) {
                    let (e, _) = bind_free(p)?;
                    let style = self.style();
                    let settings = crate::pg::settings::settings_in_force(
                        &self.settings,
                        self.txn.as_ref().map(|t| &t.local),
                    );
                    let env = session_env!(self, style, &settings);
                    values.push(e.eval(&[], &Ctx::new(params, &env))?.cast_in(*ty, style)?);
                }
                self.execute_prepared_inner(&prepared, &values)
            }
            S::Discard { object_type } => {
                if *object_type == ast::DiscardObject::ALL {
                    if self.txn.as_ref().is_some_and(|t| t.explicit) {
                        return Err(SqlError::new(
                            code::ACTIVE_TXN,
                            "DISCARD ALL cannot run inside a transaction block",
                        ));
                    }
                    // As RESET ALL, DEALLOCATE ALL and pg_advisory_unlock_all().
                    self.reset_all();
                    self.advisory.lock().unlock_all();
                }
                self.prepared.clear();
                Ok(Output::Command(format!("DISCARD {object_type}")))
            }
            S::LISTEN { channel } => {
                self.db.start_notifier()?;
                self.inbox.channels.lock().insert(channel_name(channel));
                if !self.inbox.registered.swap(true, Ordering::Relaxed) {
                    self.db.listeners.lock().push(Arc::downgrade(&self.inbox));
                }
                Ok(Output::Command("LISTEN".into()))
            }
            S::NOTIFY { channel, payload } => {
                let channel = channel_name(channel);
                let payload = payload.clone().unwrap_or_default();
                self.in_transaction_with(hint, in_implicit, |s| {
                    s.notifies.lock().push(&s.db.listeners, channel, payload)?;
                    Ok(Output::Command("NOTIFY".into()))
                })
            }
            S::UNLISTEN { channel } => {
                if channel.value == "*" {
                    self.inbox.channels.lock().clear();
                } else {
                    self.inbox.channels.lock().remove(&channel_name(channel));
                }
                Ok(Output::Command("UNLISTEN".into()))
            }
            S::Analyze(_) => Ok(Output::Command("ANALYZE".into())),
            S::Lock(lock) => self.lock_tables(lock),
            S::Declare { stmts } => match stmts.as_slice() {
                [d] => self.declare_cursor(d, params, in_implicit),
                _ => Err(SqlError::syntax("DECLARE declares one cursor")),
            },
            S::Fetch { name, direction, into: None, .. } => {
                self.fetch_cursor(name, direction, false)
            }
            S::Close { cursor } => self.close_cursor(cursor),
            _ => self.in_transaction(stmt, hint, params, in_implicit, slot),
        }
    }

    /// Statements that run in a transaction (an implicit one when none is open).
    pub(crate) fn in_transaction(
        &mut self,
        stmt: &ast::Statement,
        hint: Option<CommitHint>,
        params: &[Value],
        in_implicit: bool,
        slot: Option<&PlanSlot>,
    ) -> Result<Output> {
        self.in_transaction_with(hint, in_implicit, |s| s.run(stmt, params, slot))
    }

    /// Runs `f` in the session's transaction, or in one of its own committed (with `hint`)
    /// when it succeeds, unless it belongs to a multi-statement query's implicit one.
    pub(crate) fn in_transaction_with(
        &mut self,
        hint: Option<CommitHint>,
        in_implicit: bool,
        f: impl FnOnce(&mut Self) -> Result<Output>,
    ) -> Result<Output> {
        let autocommit = self.txn.is_none();
        if autocommit {
            self.begin_txn(false, None, None, None)?;
        }
        let before = self.txn.as_ref().map(|t| t.txn.operations()).unwrap_or_default();
        self.set_configs.lock().clear();
        // Unqualified names are found along the search path in force (nothing to read
        // unless it names a schema made with CREATE SCHEMA).
        let search = match self.search_path() {
            Ok(path) => path,
            Err(e) => {
                if autocommit {
                    if let Some(ts) = self.txn.take() {
                        self.finish(ts, false);
                    }
                }
                return Err(e);
            }
        };
        let installed = crate::bind::search::install(search);
        // A statement's set_config calls take effect when it succeeds, before it commits.
        let result = f(self).and_then(|out| self.apply_set_configs().map(|()| out));
        drop(installed);
        if let Some(t) = &self.txn {
            self.last_operations = Some(t.txn.operations().since(before));
        }
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
}

impl Session {
    /// The search path to install for a statement of the open transaction (none when the
    /// path in force names no schema made with CREATE SCHEMA).
    pub(crate) fn search_path(
        &mut self,
    ) -> Result<Option<std::rc::Rc<crate::bind::search::SearchPath>>> {
        // The transaction's SET LOCAL value, else the session's; read without copying unless
        // it may name a created schema (every statement passes here).
        let local = self.txn.as_ref().and_then(|t| t.local.get("search_path"));
        let path = local.or_else(|| self.settings.get("search_path"));
        // A session with temporary tables finds them first.
        let path = match (path, self.temps.used) {
            (Some(p), false) if crate::bind::search::may_name_created_schema(p) => p.clone(),
            (_, false) => return Ok(None),
            (p, true) => format!("{}, {}", self.temp_schema(), p.map_or("public", String::as_str)),
        };
        let Some(ts) = self.txn.as_mut() else { return Ok(None) };
        crate::bind::search::SearchPath::load(&self.db.catalog, &mut ts.txn, &self.database, &path)
    }
}

pub(crate) fn first_words(s: &str) -> String {
    s.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
}

pub(crate) fn in_failed() -> SqlError {
    SqlError::new(
        code::IN_FAILED_TXN,
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

pub(crate) fn param_types(params: &[Value]) -> Vec<DataType> {
    params.iter().map(|p| if p.is_null() { DataType::Unknown } else { p.natural_type() }).collect()
}

/// A LISTEN channel's name: folded to lower case unless quoted, as PostgreSQL does.
fn channel_name(channel: &ast::Ident) -> String {
    match channel.quote_style {
        Some(_) => channel.value.clone(),
        None => channel.value.to_lowercase(),
    }
}

/// How many notices one statement keeps for the client.
pub(crate) const NOTICES_MAX: usize = 10_000;
