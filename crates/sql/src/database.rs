//! The database a server serves: the engine, the catalog, the row-lock table, every
//! session's activity and the durability-notification router; opening and closing it.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kiln_engine::{DurabilityLevel, Engine, IsolationLevel, TxnOptions};
use parking_lot::Mutex;

use crate::catalog::Catalog;
use crate::error::{code, Result, SqlError};
use crate::locks::LockManager;
use crate::pg::activity::Activities;
use crate::types::DataType;

use crate::ed::*;
use crate::pg::settings::*;

use crate::session::*;

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
    /// `kiln.durability_level` of new sessions: the level a safe commit waits for (a
    /// cluster's default; alone, every level is the log's fdatasync).
    pub durability_level: kiln_engine::DurabilityLevel,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            synchronous_commit: true,
            default_isolation: IsolationLevel::ReadCommitted,
            rows_max: 10_000_000,
            statement_bytes_max: 16 << 20,
            faults: None,
            durability_level: kiln_engine::DurabilityLevel::Quorum,
        }
    }
}

/// A database server's shared state: the engine, the catalog cache, row locks.
pub struct Database {
    pub(crate) engine: Engine,
    pub(crate) catalog: Catalog,
    /// The sequences' values on this node.
    pub(crate) sequences: crate::sequence::Sequences,
    pub(crate) locks: Arc<LockManager>,
    pub(crate) config: SessionConfig,
    pub(crate) next_owner: AtomicU64,
    pub(crate) notifier: Arc<Notifier>,
    /// The inboxes of sessions that have listened to a channel (NOTIFY delivers to them).
    pub(crate) listeners: Mutex<Vec<std::sync::Weak<Inbox>>>,
    pub(crate) stop: Arc<AtomicBool>,
    /// Index, constraint and view definitions by OID, as the last catalog query saw them,
    /// or the binding of a statement that calls pg_get_indexdef, pg_get_constraintdef or
    /// pg_get_viewdef (`SystemTables::remember_catalog`); an OID names one object for ever.
    pub(crate) definitions: Mutex<HashMap<i64, String>>,
    /// Trigger functions bound for their tables, by database and trigger id
    /// (`exec::triggers`).
    pub(crate) trigger_programs:
        Mutex<HashMap<(String, u64), Arc<crate::exec::triggers::KeptProgram>>>,
    /// Enum types by database, as the last catalog query (or the binding of a statement
    /// that names types by OID at execution) saw them.
    enum_types: Mutex<HashMap<String, Vec<&'static crate::enums::EnumType>>>,
    /// Domains by database (OID and name), as the last catalog query saw them.
    domains: Mutex<HashMap<String, Vec<(u32, String)>>>,
    pub(crate) notifier_started: Mutex<bool>,
    /// Every session, for pg_stat_activity and pg_cancel/terminate_backend.
    pub(crate) activities: Activities,
    /// What `kiln_cluster` shows, for a node of a cluster.
    cluster: Mutex<Option<ClusterView>>,
    /// Membership changes, for a node of a cluster.
    cluster_admin: Mutex<Option<Arc<dyn ClusterAdmin>>>,
    /// When the SQL layer was opened, in microseconds since the epoch
    /// (`pg_postmaster_start_time()`).
    pub(crate) started: i64,
}

/// One node of a cluster, as `kiln_cluster` shows it. The SQL layer knows nothing of how the
/// cluster works; the server fills these in.
#[derive(Clone, Debug, Default)]
pub struct ClusterMember {
    /// The node's id.
    pub node_id: i64,
    /// leader, follower, candidate, learner, or unknown.
    pub role: String,
    /// Whether this is the node the session is connected to.
    pub is_self: bool,
    /// Its site tag (empty if none).
    pub site: String,
    /// Where its SQL clients connect.
    pub sql_addr: String,
    /// Where other nodes send it Raft messages.
    pub raft_addr: String,
    /// The term this node knows (the current epoch).
    pub term: i64,
    /// The last log index this node has (its own node only; others: what the leader matched).
    pub log_index: Option<i64>,
    /// Entries it is behind the leader's log, as the leader sees it (known on the leader).
    pub lag_entries: Option<i64>,
    /// The CSN of the last commit record its log holds (its own node; others: as far as the
    /// leader matched them).
    pub log_csn: Option<i64>,
    /// Commits (CSNs) it is behind the leader's log (known on the leader).
    pub lag_csns: Option<i64>,
    /// Bytes of log it is behind the leader's (known on the leader).
    pub lag_bytes: Option<i64>,
    /// Milliseconds since the leader wrote the oldest entry it lacks (known on the leader;
    /// 0 when it lacks none).
    pub lag_ms: Option<i64>,
    /// Milliseconds since the leader last heard from it (known on the leader).
    pub last_heard_ms: Option<i64>,
}

/// What the server tells the SQL layer about the cluster, each time it is asked.
pub type ClusterView = Arc<dyn Fn() -> Vec<ClusterMember> + Send + Sync>;

/// Why a membership change was not made.
#[derive(Debug, Clone)]
pub enum ClusterChangeError {
    /// This node does not lead; the leader's SQL address, if known.
    NotLeader(Option<String>),
    /// The change makes no sense for the cluster as it is.
    Invalid(String),
    /// The change could not be completed; says how far it got.
    Failed(String),
}

/// The cluster's membership, as the server keeps it: the sites a level may name (asked at
/// every commit at a site level, so cheap), and the changes `kiln_cluster_add_node` and
/// `kiln_cluster_remove_node` make. Each change waits, asking `interrupted` now and then
/// whether the session gave up (the change then goes on without it).
pub trait ClusterAdmin: Send + Sync {
    /// The site tags of the members (empty tags left out).
    fn sites(&self) -> Vec<String>;
    /// Adds node `id` (learner first, a voter once caught up).
    fn add_node(
        &self,
        id: u64,
        raft_addr: &str,
        sql_addr: &str,
        site: &str,
        interrupted: &dyn Fn() -> bool,
    ) -> std::result::Result<(), ClusterChangeError>;
    /// Removes node `id`.
    fn remove_node(
        &self,
        id: u64,
        interrupted: &dyn Fn() -> bool,
    ) -> std::result::Result<(), ClusterChangeError>;
}

impl Database {
    /// Opens the SQL layer on an engine; creates the `kiln` and `postgres` databases on a
    /// fresh engine, and starts the durability-notification router.
    pub fn open(engine: Engine, config: SessionConfig) -> Result<Arc<Database>> {
        let db = Database::attach(engine, config);
        db.bootstrap()?;
        db.drop_leftover_temp_schemas()?;
        Ok(db)
    }

    /// The SQL layer on an engine, without creating anything: for a node of a cluster, which
    /// receives the catalog from its leader (the leader calls [`Database::bootstrap`]).
    pub fn attach(engine: Engine, config: SessionConfig) -> Arc<Database> {
        let standalone = !engine.config().replicated_log;
        Arc::new(Database {
            engine,
            catalog: Catalog::default(),
            sequences: Default::default(),
            locks: Arc::new(LockManager::default()),
            config,
            next_owner: AtomicU64::new(1),
            notifier: Arc::new(Notifier::new(standalone)),
            listeners: Default::default(),
            stop: Arc::new(AtomicBool::new(false)),
            definitions: Mutex::new(HashMap::new()),
            trigger_programs: Mutex::new(HashMap::new()),
            enum_types: Mutex::new(HashMap::new()),
            domains: Mutex::new(HashMap::new()),
            notifier_started: Mutex::new(false),
            activities: Activities::default(),
            cluster: Mutex::new(None),
            cluster_admin: Mutex::new(None),
            started: crate::types::now_micros(),
        })
    }

    /// Creates the `kiln` and `postgres` databases if they do not exist (a safe commit);
    /// returns whether it created any.
    pub fn bootstrap(&self) -> Result<bool> {
        let mut txn =
            self.engine.begin(TxnOptions::new().isolation(IsolationLevel::Serializable))?;
        let mut created = false;
        for name in ["kiln", "postgres"] {
            if !self.catalog.database_exists(&mut txn, name)? {
                self.catalog.create_database(&mut txn, name)?;
                created = true;
            }
        }
        if created {
            txn.commit_safe()?;
        }
        Ok(created)
    }

    /// Sets what `kiln_cluster` shows (a node of a cluster).
    pub fn set_cluster_view(&self, view: ClusterView) {
        *self.cluster.lock() = Some(view);
    }

    /// Sets who makes membership changes (a node of a cluster).
    pub fn set_cluster_admin(&self, admin: Arc<dyn ClusterAdmin>) {
        *self.cluster_admin.lock() = Some(admin);
    }

    /// Who makes membership changes, on a node of a cluster.
    pub(crate) fn cluster_admin(&self) -> Option<Arc<dyn ClusterAdmin>> {
        self.cluster_admin.lock().clone()
    }

    /// The cluster's members as the server reports them (none for a standalone server).
    pub fn cluster_members(&self) -> Vec<ClusterMember> {
        let view = self.cluster.lock().clone();
        view.map(|v| v()).unwrap_or_default()
    }

    /// A site level must name a site some node of the cluster is tagged with: a commit waiting
    /// for any other would never be acknowledged.
    pub(crate) fn check_level(&self, level: &DurabilityLevel) -> Result<()> {
        let DurabilityLevel::Site(name) = level else { return Ok(()) };
        let admin = self.cluster_admin();
        let mut sites = admin.as_ref().map(|a| a.sites()).unwrap_or_default();
        if sites.iter().any(|s| **s == **name) {
            return Ok(());
        }
        sites.sort_unstable();
        sites.dedup();
        let known = if admin.is_none() {
            "this server is not a node of a cluster".to_string()
        } else if sites.is_empty() {
            "no node of this cluster is tagged with a site".to_string()
        } else {
            format!("the cluster's sites are {}", sites.join(", "))
        };
        Err(SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            format!("no node of the cluster is tagged with site \"{name}\""),
        )
        .detail(known)
        .hint("Name a site of kiln_cluster, or use local, quorum or all."))
    }

    /// Starts routing durability events to sessions, the first time a session LISTENs: until
    /// then no thread wakes for every flush.
    pub(crate) fn start_notifier(&self) -> Result<()> {
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
        let db = Database::attach_dir(dir, engine, config)?;
        db.bootstrap()?;
        db.drop_leftover_temp_schemas()?;
        Ok(db)
    }

    /// Drops the temporary schemas (and their tables) of sessions that ended with the
    /// process before they could drop them: after a crash or a kill.
    pub fn drop_leftover_temp_schemas(self: &Arc<Self>) -> Result<()> {
        let mut txn = self.engine.begin(TxnOptions::new().read_only())?;
        let mut leftovers = Vec::new();
        for db in self.catalog.databases(&mut txn)? {
            for schema in self.catalog.schemas(&mut txn, &db)? {
                if crate::exec::temp::is_temp_schema(&schema.name) {
                    leftovers.push((db.clone(), schema.name));
                }
            }
        }
        drop(txn);
        for (db, schema) in leftovers {
            let mut session = self.session("kiln", &db, 0)?;
            let sql = format!("DROP SCHEMA {} CASCADE", crate::bind::quote_ident(&schema));
            if let (_, Some(e)) = session.simple_query(&sql) {
                return Err(e);
            }
        }
        Ok(())
    }

    /// Opens the engine in `dir` and the SQL layer on it without creating anything (see
    /// [`Database::attach`]).
    pub fn attach_dir(
        dir: &std::path::Path,
        engine: kiln_engine::Config,
        config: SessionConfig,
    ) -> Result<Arc<Database>> {
        let engine = Engine::open(dir, engine).map_err(|e| {
            let mut err: SqlError = e.into();
            err.message = format!("cannot open {}: {}", dir.display(), err.message);
            err
        })?;
        Ok(Database::attach(engine, config))
    }

    /// Makes everything committed durable and closes the engine; sessions get 57P01 after.
    /// Makes everything committed durable (waiting at most [`CLOSE_PERSIST_WAIT`]: on a
    /// full disk the fast commits not yet durable are left to be reported lost after the
    /// restart, rather than keep the process from stopping) and closes the engine.
    pub fn close(&self) -> Result<()> {
        self.close_within(CLOSE_PERSIST_WAIT)
    }

    /// [`Database::close`], waiting at most `wait` for commits to become durable.
    pub fn close_within(&self, wait: Duration) -> Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        let flushed = match self.engine.persist_within(wait) {
            Ok(Some(_)) => Ok(()),
            Ok(None) => {
                let stats = self.engine.stats();
                tracing::error!(
                    durable = stats.durable_csn,
                    committed = stats.committed_csn,
                    cause = stats.stalled.as_deref().unwrap_or("the log writer is behind"),
                    "closing with commits that could not be made durable: they will be reported lost"
                );
                Err(SqlError::new(
                    code::DISK_FULL,
                    format!(
                        "commits {}..={} of this epoch could not be made durable before closing",
                        stats.durable_csn + 1,
                        stats.committed_csn
                    ),
                ))
            }
            Err(e) => Err(e.into()),
        };
        self.engine.clone().close()?;
        flushed
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
        let lock_owner = self.next_owner.fetch_add(1, Ordering::Relaxed);
        let activity = self.activities.register(pid, user, database, lock_owner);
        Ok(Session {
            do_depth: 0,
            db: self.clone(),
            engine_session: self.engine.session(),
            user: user.to_string(),
            database: database.to_string(),
            pid,
            txn: None,
            settings,
            startup: BTreeMap::new(),
            prepared: HashMap::new(),
            inbox: Arc::new(Inbox {
                queue: Mutex::new(VecDeque::new()),
                bytes: Default::default(),
                channels: Mutex::new(HashSet::new()),
                waker: Mutex::new(None),
                registered: Default::default(),
            }),
            notifies: Default::default(),
            set_configs: Default::default(),
            notices: Default::default(),
            interrupt: activity.interrupt().clone(),
            activity,
            copy: None,
            last_write: None,
            sequence_values: Default::default(),
            last_operations: None,
            cursors: Default::default(),
            txn_serial: 0,
            lock_owner,
            advisory: parking_lot::Mutex::new(crate::advisory::AdvisoryLocks::new(
                self.locks.clone(),
                lock_owner,
            )),
            temps: Default::default(),
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

    /// Remembers the enum types of database `db` (`format_type` and `regtype` name them by
    /// OID).
    pub fn remember_enum_types(&self, db: &str, types: &[&'static crate::enums::EnumType]) {
        self.enum_types.lock().insert(db.to_string(), types.to_vec());
    }

    /// Remembers the domains of database `db` (`format_type` and `regtype` name them by
    /// OID).
    pub fn remember_domains(&self, db: &str, domains: &[crate::catalog::Domain]) {
        let named = domains.iter().map(|d| (d.oid, d.name.clone())).collect();
        self.domains.lock().insert(db.to_string(), named);
    }

    /// The name of the domain with OID `oid` in database `db`, as last remembered.
    pub fn remembered_domain(&self, db: &str, oid: u32) -> Option<String> {
        let domains = self.domains.lock();
        domains.get(db)?.iter().find(|d| d.0 == oid).map(|d| d.1.clone())
    }

    /// The OID of the domain named `name` (`year`, `public.year`) in database `db`, as last
    /// remembered.
    pub fn remembered_domain_named(&self, db: &str, name: &str) -> Option<u32> {
        let (schema, name, array) = crate::bind::reg::type_name_parts(name)?;
        if schema.is_some_and(|s| s != "public") || array {
            return None;
        }
        let domains = self.domains.lock();
        domains.get(db)?.iter().find(|d| d.1 == name).map(|d| d.0)
    }

    /// The enum type (or array of one) with OID `oid` in database `db`, as last remembered.
    pub fn remembered_type(&self, db: &str, oid: u32) -> Option<DataType> {
        let types = self.enum_types.lock();
        let e = types.get(db)?.iter().find(|e| e.oid == oid || e.array_oid == oid)?;
        Some(crate::enums::type_with_oid(e, oid))
    }

    /// The enum type (or array of one) named `name` (`mood`, `public.mood`, `mood[]`,
    /// `_mood`) in database `db`, as last remembered.
    pub fn remembered_type_named(&self, db: &str, name: &str) -> Option<DataType> {
        let (schema, name, array) = crate::bind::reg::type_name_parts(name)?;
        if schema.is_some_and(|s| s != "public") {
            return None;
        }
        let (base, array) = match (array, name.strip_prefix('_')) {
            (false, Some(b)) => (b, true),
            _ => (name.as_str(), array),
        };
        let types = self.enum_types.lock();
        let e = types.get(db)?.iter().find(|e| e.name == base)?;
        Some(crate::enums::type_with_oid(e, if array { e.array_oid } else { e.oid }))
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

/// How long closing waits for the log to become durable.
pub const CLOSE_PERSIST_WAIT: Duration = Duration::from_secs(10);
