//! A replicated log: the engine's log when a cluster, not the engine, decides what is written
//! and in which order (`docs/replication.md`).
//!
//! ```text
//!  leader:   sequencer ─▶ buffer ─▶ log writer ─ship(RecordBatch)─▶ cluster layer
//!                                                                     │ assigns (term, index)
//!  every node:  Engine::append_entries([LogEntry]) ◀──────────────────┘
//!                 one write + one fdatasync of tagged frames ─▶ local durable watermark
//!                 records not installed here yet (a follower's) ─▶ installed at their CSNs
//! ```
//!
//! The engine knows nothing of the cluster's protocol: an entry is a `(term, index)` tag and
//! either a batch of commit records at consecutive CSNs or opaque bytes (the cluster's own
//! bookkeeping, stored and handed back, never interpreted). There is one copy of the data: the
//! frames the engine writes *are* the replicated log, and [`crate::Engine::log_entries`] reads
//! them back for a replica that is behind.

use std::path::PathBuf;
use std::sync::Arc;

use crate::id::{Csn, Epoch};

/// Committed records taken from the log buffer, in CSN order, for the cluster to replicate
/// (the log writer of a replicated engine ships them instead of writing them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordBatch {
    /// The epoch of every record.
    pub epoch: Epoch,
    /// The CSN of the first record; the i-th record has CSN `first_csn + i`.
    pub first_csn: Csn,
    /// The number of records (at least 1).
    pub count: u32,
    /// The records back to back, each a u32 length and a commit record
    /// (`docs/storage-format.md`).
    pub records: Arc<[u8]>,
}

impl RecordBatch {
    /// The CSN of the last record.
    pub fn last_csn(&self) -> Csn {
        self.first_csn + self.count as u64 - 1
    }
}

/// What a replicated log entry carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryPayload {
    /// Committed records.
    Records(RecordBatch),
    /// Bytes the engine stores and hands back without interpreting them (at most 256 MiB).
    Opaque(Arc<[u8]>),
}

/// One entry of a replicated log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEntry {
    /// The term the entry was created in (at least 1).
    pub term: u64,
    /// Its position in the log (at least 1; consecutive).
    pub index: u64,
    /// What it carries.
    pub payload: EntryPayload,
}

/// Receives each batch the log writer of a replicated engine ships, in CSN order. It runs
/// under the log writer's flush lock (on the writer thread, or on a safe committer's thread
/// leading its own flush), so it must hand the batch on and return: calling
/// [`crate::Engine::append_entries`] from inside it would deadlock.
pub type Shipper = Box<dyn Fn(RecordBatch) + Send + Sync>;

/// Where an entry's frames are on disk.
#[derive(Clone, Debug)]
pub(crate) struct EntryLocation {
    pub term: u64,
    pub index: u64,
    /// The CSN of its first record (of the next record, if it holds none), and the CSN after
    /// its last.
    pub first_csn: Csn,
    pub csn_end: Csn,
    pub segment: Arc<PathBuf>,
    /// Offset of its first frame, and the bytes of all its frames.
    pub offset: u64,
    pub len: u64,
    /// The bytes of the log's frames up to and including this entry's.
    pub bytes_end: u64,
    /// When this node wrote it (`None` for entries found at open).
    pub written_at: Option<std::time::Instant>,
}

/// How far a member's log is behind this node's (see `Engine::log_lag`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogLag {
    /// Entries beyond its last.
    pub entries: u64,
    /// Commit records beyond its last.
    pub csns: u64,
    /// Bytes of log frames beyond its last.
    pub bytes: u64,
    /// How long ago this node wrote the oldest entry it lacks (`None` when it lacks none, or
    /// that entry was written before this node last opened its log).
    pub age: Option<std::time::Duration>,
}

/// The state of a replicated log on disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogPosition {
    /// The first entry still on disk, as (term, index).
    pub first: Option<(u64, u64)>,
    /// The last entry on disk, as (term, index), or the checkpoint's entry when the log
    /// holds none after it.
    pub last: Option<(u64, u64)>,
    /// The CSN of the last record on disk, or of the checkpoint's (0 if none).
    pub last_csn: Csn,
    /// The entry the newest checkpoint stands at, as (term, index): the log need not hold it
    /// or any before it (see [`crate::Engine::purge_log`]).
    pub base: Option<(u64, u64)>,
}
