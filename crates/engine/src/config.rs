//! Engine configuration: commit model, durability timing, and every limit.
//!
//! Every queue, buffer and size in the engine has an explicit maximum here; the maxima are
//! also where back-pressure comes from.

use std::sync::Arc;
use std::time::Duration;

use crate::durability::vfs::{OsVfs, Vfs};

/// Isolation levels (guarantee G1). The default is [`IsolationLevel::Serializable`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum IsolationLevel {
    /// Each read sees the latest committed data as of the start of the current statement
    /// (see [`crate::Transaction::refresh_snapshot`]); no commit-time validation, so lost
    /// updates and write skew are possible, as in the SQL standard.
    ReadCommitted,
    /// Snapshot isolation: one snapshot for the whole transaction and first-committer-wins on
    /// written keys. No lost update; write skew is possible.
    RepeatableRead,
    /// Serializable: snapshot reads plus commit-time validation that every key read, every
    /// range scanned and every key written is still current. No lost update, no write skew,
    /// no phantom.
    #[default]
    Serializable,
}

/// When a transaction becomes visible and releases what it holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CommitModel {
    /// Eventually durable: visible and released at the commit point, durable later.
    #[default]
    EventuallyDurable,
    /// The classical baseline, kept as a control experiment: a transaction becomes visible to
    /// new snapshots, and stops conflicting with concurrent ones, only once it is durable. All
    /// commits are acknowledged at the durability point.
    Classic,
}

/// What a commit waits for before it returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CommitMode {
    /// Return at the commit point; durability follows within the vulnerability window.
    #[default]
    Fast,
    /// Return at the durability point of the commit's [`DurabilityLevel`].
    Safe,
}

/// How far a commit hardens before a safe commit returns, in the order a commit reaches
/// them: `local` ≤ `quorum` ≤ `site:<name>` ≤ `all`. In a replicated log each level has a
/// watermark of its own; a standalone engine has one copy, its log, and reaches every level
/// at its fdatasync.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DurabilityLevel {
    /// On this node's own disk: the leader's fdatasync. A failover may still lose it.
    Local,
    /// Fsynced on a majority of voters (the Raft commit): what `durable` means in a cluster.
    #[default]
    Quorum,
    /// Fsynced on at least one node tagged with the site, and on a quorum.
    Site(std::sync::Arc<str>),
    /// Fsynced on every voter.
    All,
}

/// The longest site name.
pub const SITE_NAME_MAX: usize = 63;

impl DurabilityLevel {
    /// The level `site:<name>`, if `name` is a valid site name: 1 to [`SITE_NAME_MAX`]
    /// ASCII letters, digits, `_` or `-`.
    pub fn site(name: &str) -> Option<DurabilityLevel> {
        let valid = !name.is_empty()
            && name.len() <= SITE_NAME_MAX
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        valid.then(|| DurabilityLevel::Site(name.into()))
    }
}

impl std::fmt::Display for DurabilityLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DurabilityLevel::Local => f.write_str("local"),
            DurabilityLevel::Quorum => f.write_str("quorum"),
            DurabilityLevel::Site(name) => write!(f, "site:{name}"),
            DurabilityLevel::All => f.write_str("all"),
        }
    }
}

impl std::str::FromStr for DurabilityLevel {
    type Err = String;

    /// `local`, `quorum`, `all` (any case) or `site:<name>`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let s = s.trim();
        match s.to_ascii_lowercase().as_str() {
            "local" => Ok(DurabilityLevel::Local),
            "quorum" => Ok(DurabilityLevel::Quorum),
            "all" => Ok(DurabilityLevel::All),
            lower if lower.starts_with("site:") => DurabilityLevel::site(&s[5..]).ok_or_else(|| {
                format!(
                    "invalid site name \"{}\": a site name is 1 to {SITE_NAME_MAX} letters, digits, '_' or '-'",
                    &s[5..]
                )
            }),
            _ => Err(format!(
                "invalid durability level \"{s}\": expected local, quorum, all or site:<name>"
            )),
        }
    }
}

/// Engine configuration. [`Config::default`] suits a server; tests shrink the limits.
#[derive(Clone)]
pub struct Config {
    /// Eventually durable (default) or classic.
    pub commit_model: CommitModel,
    /// The longest a committed transaction stays non-durable under normal operation. The log
    /// writer starts a flush once the oldest unflushed commit is half this old.
    pub vulnerability_window: Duration,
    /// The most bytes of committed, non-durable log records; past it commits wait.
    pub backlog_bytes_max: u64,
    /// How long a commit waits for the backlog to drain before failing with
    /// [`crate::Error::DurabilityStalled`].
    pub backpressure_timeout: Duration,
    /// The largest key.
    pub key_bytes_max: usize,
    /// The largest value.
    pub value_bytes_max: usize,
    /// The largest keyspace name.
    pub keyspace_name_bytes_max: usize,
    /// The most writes (puts and deletes) in one transaction.
    pub txn_writes_max: usize,
    /// The most bytes of keys and values written by one transaction.
    pub txn_bytes_max: u64,
    /// The most keys and ranges one transaction may read (its validation set).
    pub txn_reads_max: usize,
    /// The most bytes the store may hold (keys, values and version overhead); past it writing
    /// transactions fail with a limit error.
    pub memory_bytes_max: u64,
    /// Start a new log segment once the current one is larger than this.
    pub segment_bytes_max: u64,
    /// The log is written into space zero-filled ahead of it, so that a flush's fdatasync
    /// overwrites allocated blocks and commits no file-size change. A new segment starts with
    /// `min(this, 64 KiB)` zeroed; each extension doubles the space, adding at most this many
    /// bytes at a time. 0: no preallocation (every flush appends).
    pub log_preallocate_bytes: u64,
    /// Take a checkpoint once this many log bytes were written since the last one (0: never
    /// automatically).
    pub checkpoint_log_bytes: u64,
    /// When false the log writer flushes only on `persist()`, safe waiters, back-pressure and
    /// close — never on a timer. Deterministic tests use this; servers never should.
    pub timed_flush: bool,
    /// The file system the durability layer uses. Tests substitute a fault-injecting one.
    pub vfs: Arc<dyn Vfs>,
    /// The log is a replicated log written by a cluster (`durability::replicated`): the log
    /// writer ships batches instead of writing them, entries come back through
    /// [`crate::Engine::append_entries`], no epoch begins at open (the cluster decides epochs),
    /// and checkpoints keep every log segment.
    pub replicated_log: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            commit_model: CommitModel::EventuallyDurable,
            vulnerability_window: Duration::from_millis(10),
            backlog_bytes_max: 64 << 20,
            backpressure_timeout: Duration::from_secs(5),
            key_bytes_max: 8 << 10,
            value_bytes_max: 1 << 20,
            keyspace_name_bytes_max: 255,
            txn_writes_max: 1 << 20,
            txn_bytes_max: 64 << 20,
            txn_reads_max: 1 << 20,
            memory_bytes_max: 8 << 30,
            segment_bytes_max: 64 << 20,
            log_preallocate_bytes: 1 << 20,
            checkpoint_log_bytes: 256 << 20,
            timed_flush: true,
            vfs: Arc::new(OsVfs),
            replicated_log: false,
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("commit_model", &self.commit_model)
            .field("vulnerability_window", &self.vulnerability_window)
            .field("backlog_bytes_max", &self.backlog_bytes_max)
            .field("backpressure_timeout", &self.backpressure_timeout)
            .field("memory_bytes_max", &self.memory_bytes_max)
            .field("segment_bytes_max", &self.segment_bytes_max)
            .field("log_preallocate_bytes", &self.log_preallocate_bytes)
            .field("checkpoint_log_bytes", &self.checkpoint_log_bytes)
            .field("timed_flush", &self.timed_flush)
            .finish_non_exhaustive()
    }
}

/// Options for one transaction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxnOptions {
    /// The isolation level.
    pub isolation: IsolationLevel,
    /// Reject writes.
    pub read_only: bool,
    /// Fast or safe, used by [`crate::Transaction::commit`].
    pub mode: CommitMode,
}

impl TxnOptions {
    /// Serializable, read-write, fast.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the isolation level.
    pub fn isolation(mut self, isolation: IsolationLevel) -> Self {
        self.isolation = isolation;
        self
    }
    /// Makes the transaction read-only.
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }
    /// Sets fast or safe.
    pub fn mode(mut self, mode: CommitMode) -> Self {
        self.mode = mode;
        self
    }
}
