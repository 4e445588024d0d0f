//! What every session is doing, for `pg_stat_activity`, and the means to stop it:
//! `pg_cancel_backend(pid)` interrupts a session's running statement (57014), and
//! `pg_terminate_backend(pid)` also ends the session (57P01), even an idle one.
//!
//! Each [`Session`](crate::Session) owns one [`Activity`], registered in its database's
//! [`Activities`] for as long as the session lives. The session updates its state at the
//! start and end of every statement and transaction, and while it waits for a row lock or
//! for durability; other sessions only read it, and set the two flags.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::types::now_micros;

/// What a session waits for, as `wait_event_type` / `wait_event` show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Idle: waiting for the client's next message.
    Client,
    /// Waiting for a row lock held by another transaction.
    RowLock,
    /// Waiting for an advisory lock another session holds.
    AdvisoryLock,
    /// A safe commit or `kiln_wait`/`kiln_sync` waiting for the durability point.
    Durability,
}

impl Wait {
    fn columns(self) -> (&'static str, &'static str) {
        match self {
            Wait::Client => ("Client", "ClientRead"),
            Wait::RowLock => ("Lock", "tuple"),
            Wait::AdvisoryLock => ("Lock", "advisory"),
            Wait::Durability => ("IO", "KilnDurability"),
        }
    }
}

/// A session's state as `pg_stat_activity` shows it.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Backend process id (the cancel key's pid).
    pub pid: i32,
    /// The client's address (a TCP connection's).
    pub client: Option<SocketAddr>,
    /// Who holds its locks in the lock table.
    pub lock_owner: u64,
    /// User name.
    pub user: String,
    /// Database name.
    pub database: String,
    /// `application_name`.
    pub application_name: String,
    /// When the session started (µs since the epoch).
    pub backend_start: i64,
    /// When the open transaction began.
    pub xact_start: Option<i64>,
    /// When the running (or last) statement began.
    pub query_start: Option<i64>,
    /// When `state` last changed.
    pub state_change: i64,
    /// `active`, `idle`, `idle in transaction`, `idle in transaction (aborted)`.
    pub state: &'static str,
    /// What it waits for, if anything: (`wait_event_type`, `wait_event`).
    pub wait: Option<(&'static str, &'static str)>,
    /// The running (or last) statement.
    pub query: String,
}

struct State {
    application_name: String,
    xact_start: Option<i64>,
    query_start: Option<i64>,
    state_change: i64,
    state: &'static str,
    wait: Option<Wait>,
    query: String,
}

/// One session's entry.
pub struct Activity {
    pid: i32,
    lock_owner: u64,
    user: String,
    database: String,
    backend_start: i64,
    /// Set to stop the running statement (cancel requests, statement_timeout, a vanished
    /// client, pg_cancel_backend); every executor loop checks it.
    interrupt: Arc<AtomicBool>,
    /// Set by pg_terminate_backend or shutdown: the session must end.
    terminate: AtomicBool,
    /// Wakes the session's connection while it is idle.
    waker: Mutex<Option<Arc<dyn Fn() + Send + Sync>>>,
    state: Mutex<State>,
    /// The client's and the server's address of a TCP connection, once known.
    addresses: std::sync::OnceLock<(SocketAddr, SocketAddr)>,
}

/// The longest statement text kept for `pg_stat_activity` (PostgreSQL's
/// track_activity_query_size is 1 kB by default).
const QUERY_TEXT_MAX: usize = 4096;

impl std::fmt::Debug for Activity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Activity").field("pid", &self.pid).finish_non_exhaustive()
    }
}

impl Activity {
    /// The interrupt flag of this session's statements.
    pub fn interrupt(&self) -> &Arc<AtomicBool> {
        &self.interrupt
    }

    /// 57014 when the running statement was interrupted, 57P01 when the session must end.
    pub fn check_interrupt(&self) -> crate::Result<()> {
        if self.terminating() {
            return Err(crate::SqlError::new(
                crate::code::ADMIN_SHUTDOWN,
                "terminating connection due to administrator command",
            ));
        }
        if !self.interrupt.load(Ordering::Relaxed) {
            return Ok(());
        }
        Err(crate::SqlError::new(
            crate::code::QUERY_CANCELED,
            "canceling statement due to statement timeout or user request",
        ))
    }

    /// Whether the session has been told to end.
    pub fn terminating(&self) -> bool {
        self.terminate.load(Ordering::Relaxed)
    }

    /// Sets the function that wakes the idle connection.
    pub fn set_waker(&self, waker: Arc<dyn Fn() + Send + Sync>) {
        *self.waker.lock() = Some(waker);
    }

    /// A statement starts.
    pub fn start_statement(&self, query: &str) {
        let now = now_micros();
        let mut s = self.state.lock();
        s.query.clear();
        let mut end = query.len().min(QUERY_TEXT_MAX);
        while !query.is_char_boundary(end) {
            end -= 1;
        }
        s.query.push_str(&query[..end]);
        s.query_start = Some(now);
        s.state = "active";
        s.state_change = now;
        s.wait = None;
    }

    /// The statement ended; the session is idle, in a block or not.
    pub fn end_statement(&self, in_block: bool, failed: bool) {
        let mut s = self.state.lock();
        s.state = match (in_block, failed) {
            (false, _) => "idle",
            (true, false) => "idle in transaction",
            (true, true) => "idle in transaction (aborted)",
        };
        s.state_change = now_micros();
        s.wait = Some(Wait::Client);
    }

    /// A transaction began (`Some(now)`) or ended (`None`).
    pub fn set_transaction(&self, open: bool) {
        self.state.lock().xact_start = open.then(now_micros);
    }

    /// The session starts (`Some`) or stops (`None`) waiting for something.
    pub fn set_wait(&self, wait: Option<Wait>) {
        self.state.lock().wait = wait;
    }

    /// The connection's addresses: the client's and the server's end (a TCP connection's;
    /// a session without them shows NULL, as one over a Unix socket does in PostgreSQL).
    pub fn set_addresses(&self, client: SocketAddr, server: SocketAddr) {
        let _ = self.addresses.set((client, server));
    }

    /// The client's and the server's address, when the session has them.
    pub fn addresses(&self) -> Option<(SocketAddr, SocketAddr)> {
        self.addresses.get().copied()
    }

    /// `application_name` changed.
    pub fn set_application_name(&self, name: &str) {
        self.state.lock().application_name = name.to_string();
    }

    fn snapshot(&self) -> Snapshot {
        let s = self.state.lock();
        Snapshot {
            pid: self.pid,
            lock_owner: self.lock_owner,
            user: self.user.clone(),
            database: self.database.clone(),
            application_name: s.application_name.clone(),
            backend_start: self.backend_start,
            xact_start: s.xact_start,
            query_start: s.query_start,
            state_change: s.state_change,
            state: s.state,
            wait: s.wait.map(Wait::columns),
            query: s.query.clone(),
            client: self.addresses().map(|(client, _)| client),
        }
    }

    fn cancel(&self) {
        self.interrupt.store(true, Ordering::Relaxed);
    }

    fn terminate(&self) {
        self.terminate.store(true, Ordering::Relaxed);
        self.interrupt.store(true, Ordering::Relaxed);
        let waker = self.waker.lock().clone();
        if let Some(w) = waker {
            w();
        }
    }
}

/// Every session of a database server, by pid.
#[derive(Default)]
pub struct Activities {
    by_pid: Mutex<BTreeMap<i32, Arc<Activity>>>,
}

impl Activities {
    /// Registers a new session.
    pub fn register(&self, pid: i32, user: &str, database: &str, lock_owner: u64) -> Arc<Activity> {
        let now = now_micros();
        let activity = Arc::new(Activity {
            pid,
            lock_owner,
            user: user.to_string(),
            database: database.to_string(),
            backend_start: now,
            interrupt: Arc::new(AtomicBool::new(false)),
            terminate: AtomicBool::new(false),
            waker: Mutex::new(None),
            addresses: std::sync::OnceLock::new(),
            state: Mutex::new(State {
                application_name: String::new(),
                xact_start: None,
                query_start: None,
                state_change: now,
                state: "idle",
                wait: Some(Wait::Client),
                query: String::new(),
            }),
        });
        self.by_pid.lock().insert(pid, activity.clone());
        activity
    }

    /// Removes a session that ended (only if `activity` is still the one registered).
    pub fn unregister(&self, activity: &Arc<Activity>) {
        let mut map = self.by_pid.lock();
        if map.get(&activity.pid).is_some_and(|a| Arc::ptr_eq(a, activity)) {
            map.remove(&activity.pid);
        }
    }

    /// Every session's state, by pid.
    pub fn snapshots(&self) -> Vec<Snapshot> {
        let all: Vec<Arc<Activity>> = self.by_pid.lock().values().cloned().collect();
        all.iter().map(|a| a.snapshot()).collect()
    }

    /// pg_cancel_backend: whether a session with this pid exists.
    pub fn cancel(&self, pid: i32) -> bool {
        let found = self.by_pid.lock().get(&pid).cloned();
        found.map(|a| a.cancel()).is_some()
    }

    /// pg_terminate_backend: whether a session with this pid exists.
    pub fn terminate(&self, pid: i32) -> bool {
        let found = self.by_pid.lock().get(&pid).cloned();
        found.map(|a| a.terminate()).is_some()
    }

    /// Tells every session to end (shutdown).
    pub fn terminate_all(&self) {
        let all: Vec<Arc<Activity>> = self.by_pid.lock().values().cloned().collect();
        for a in all {
            a.terminate();
        }
    }

    /// How many sessions are registered.
    pub fn len(&self) -> usize {
        self.by_pid.lock().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_and_terminate_reach_the_session() {
        let all = Activities::default();
        let a = all.register(7, "kiln", "kiln", 1);
        let woken = Arc::new(AtomicBool::new(false));
        let w = woken.clone();
        a.set_waker(Arc::new(move || w.store(true, Ordering::Relaxed)));
        a.start_statement("SELECT pg_sleep(100)");
        assert_eq!(all.snapshots()[0].state, "active");
        assert!(all.cancel(7));
        assert!(a.interrupt().load(Ordering::Relaxed));
        assert!(!a.terminating());
        assert!(!all.cancel(8));
        assert!(all.terminate(7));
        assert!(a.terminating() && woken.load(Ordering::Relaxed));
        a.end_statement(true, true);
        assert_eq!(all.snapshots()[0].state, "idle in transaction (aborted)");
        all.unregister(&a);
        assert!(all.is_empty());
    }
}
