//! # The Kiln engine: eventually durable transactions, embedded
//!
//! A transaction becomes visible at its **commit point** and durable at a later **durability
//! point** — or, if a failure strikes first, it is **lost**, atomically, together with every
//! transaction that read from it. Each commit chooses what it waits for: [`CommitMode::Fast`]
//! returns at the commit point, [`CommitMode::Safe`] at the durability point.
//!
//! ```no_run
//! use kiln_engine::{Engine, Config, TxnOptions, TxnStatus};
//! # fn main() -> kiln_engine::Result<()> {
//! let engine = Engine::open("/tmp/kiln-demo", Config::default())?;
//! let session = engine.session();
//! let mut txn = session.begin(TxnOptions::default())?;
//! txn.put("accounts", b"alice", b"100")?;
//! let id = txn.commit_fast()?;                 // visible now, durable soon
//! assert!(matches!(engine.status(id), TxnStatus::Committed | TxnStatus::Durable));
//! session.sync()?;                             // now durable
//! assert_eq!(engine.status(id), TxnStatus::Durable);
//! # Ok(()) }
//! ```
//!
//! ## A tour of one commit (see `docs/architecture.md` for the full walk)
//! 1. [`Transaction::get`] / [`Transaction::scan`] read the snapshot taken at begin from the
//!    [`store`]; the transaction remembers the largest CSN it read (its read dependency) and,
//!    under SERIALIZABLE, what it read. [`Transaction::put`] buffers writes.
//! 2. [`Transaction::commit`] encodes the write set as a log record, waits if the
//!    non-durable backlog is over its bound, then enters the **commit sequencer** (`engine`):
//!    validation, the next CSN, append to the log buffer in CSN order, install the versions,
//!    publish the visible watermark. Nothing is held after this point.
//! 3. A fast commit returns its [`TxnId`]. A safe commit flushes the log itself if no flush
//!    is under way (a leader flush), then waits for the durable watermark.
//! 4. The log writer (`durability::writer`) — its own thread for timed flushes, or a leading
//!    safe committer — takes the whole buffer, writes it as frames, fdatasyncs, advances the
//!    durable watermark, wakes waiters and tells subscribers.
//! 5. If the fsync fails, the non-durable suffix is lost: its versions are dropped, a new
//!    epoch is recorded, transactions that saw the lost data fail, subscribers are told.

#![warn(missing_docs)]

mod config;
mod durability;
mod engine;
mod error;
mod id;
mod stats;
mod store;
mod txn;

pub use config::{
    CommitMode, CommitModel, Config, DurabilityLevel, IsolationLevel, TxnOptions, SITE_NAME_MAX,
};
pub use durability::vfs::{Faults, FaultyVfs, OsVfs, Vfs};
pub use durability::{DurabilityEvent, Subscription};

/// A replicated log: the engine's log written in the order a cluster decides
/// ([`Config::replicated_log`]); see `docs/replication.md`.
pub mod replicated {
    pub use crate::durability::checkpoint::{
        CheckpointFile, CheckpointInfo, CheckpointSink, LogMark,
    };
    pub use crate::durability::replicated::{
        EntryPayload, LogEntry, LogLag, LogPosition, RecordBatch, Shipper,
    };
}
pub use engine::{Engine, Session};
pub use error::{Error, Result};
pub use id::{Csn, Epoch, ParseTxnIdError, TxnId, TxnKind, TxnStatus};
pub use stats::EngineStats;
pub use txn::{Acknowledgement, Committed, Operations, Savepoint, Scan, Transaction};

/// Read-only access to the files a data directory holds, for tools and fault tests that
/// examine what reached the disk (frame by frame). The engine's storage and durability
/// internals are otherwise private.
pub mod inspect {
    pub use crate::durability::format::{frame_at, FrameAt, FrameHeader, FRAME_HEADER_BYTES};
    pub use crate::durability::recovery::{list_segments, LOG_DIR};
}

/// Checks an invariant that protects the durable state or the commit order. A violation
/// stops the process at once instead of unwinding: a panic there could leave a half-done
/// commit behind a lock, while a restart recovers exactly what is durable (the crash tests
/// prove recovery at any instant).
macro_rules! invariant {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            $crate::invariant_violated(format_args!($($fmt)+))
        }
    };
}
pub(crate) use invariant;

#[cold]
pub(crate) fn invariant_violated(what: std::fmt::Arguments<'_>) -> ! {
    tracing::error!(%what, "invariant violated: stopping the process");
    eprintln!("kiln: invariant violated: {what}; stopping (a restart recovers everything durable)");
    std::process::abort()
}
