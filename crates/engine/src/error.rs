//! The engine's one error type.
//!
//! Expected failures are values of [`Error`]; broken invariants are assertions. Callers ask
//! [`Error::is_retryable`] to tell a transaction worth retrying (a conflict, a transaction that
//! read lost data) from a deterministic failure (a limit, a misuse, corruption).

use std::path::PathBuf;

use crate::id::{Csn, Epoch, TxnId};

/// A result with the engine's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every failure the engine reports.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A serialization conflict: another transaction committed a change to something this
    /// transaction read or wrote. Retry the whole transaction.
    #[error("could not serialize access: {reason}; retry the transaction")]
    Conflict {
        /// What conflicted, for a person to read.
        reason: String,
    },

    /// This transaction depended on transactions that were lost before they became durable
    /// (its snapshot or reads included them), so it cannot commit. Retry the transaction.
    #[error(
        "transaction depended on lost transactions: epoch {epoch} lost every commit from CSN \
         {lost_from}; retry the transaction"
    )]
    DependencyLost {
        /// The epoch that lost its suffix.
        epoch: Epoch,
        /// The first lost CSN of that epoch.
        lost_from: Csn,
    },

    /// A safe commit (or a wait for durability) ended with the transaction lost: it committed
    /// but a failure struck before it became durable, and its effects are gone.
    #[error("transaction {id} was lost before it became durable: {cause}")]
    Lost {
        /// The lost transaction.
        id: TxnId,
        /// Why durability failed.
        cause: String,
    },

    /// A commit waited longer than the back-pressure timeout for durability to make room:
    /// the non-durable backlog stayed above its bound, or the epoch the engine opened in
    /// could not be recorded (for example the disk is full). Nothing was committed.
    #[error("durability is stalled ({cause}); the commit was not admitted; retry later")]
    DurabilityStalled {
        /// Why the log cannot be written.
        cause: String,
    },

    /// A size or count limit was exceeded.
    #[error("{what} is {actual}, over the limit of {limit}")]
    LimitExceeded {
        /// What was too large.
        what: &'static str,
        /// Its size.
        actual: u64,
        /// The configured limit.
        limit: u64,
    },

    /// A write in a read-only transaction.
    #[error("cannot write in a read-only transaction")]
    ReadOnlyTransaction,

    /// A safe commit on a cluster's leader that stopped leading before the cluster had the
    /// commit: it is neither durable nor lost yet, and a later term decides which.
    #[error(
        "transaction {id} committed, but this node stopped leading before the cluster had it; \
         a later term decides whether it is durable or lost"
    )]
    InDoubt {
        /// The transaction.
        id: TxnId,
    },

    /// A commit that is durable (on a quorum) waited for a higher level on a node that does
    /// not lead the cluster (or stopped leading), and so cannot learn whether it reached it.
    #[error(
        "transaction {id} is durable on a quorum, but this node does not lead the cluster and \
         cannot tell whether it reached level {level}"
    )]
    LevelUnconfirmed {
        /// The transaction.
        id: TxnId,
        /// The level it waited for.
        level: String,
    },

    /// A commit on a node of a cluster that is not its leader (or not yet ready to lead).
    #[error("this node is not the cluster's leader; {detail}")]
    NotLeader {
        /// Why this node does not commit.
        detail: String,
        /// Where the leader's clients connect, if this node knows.
        leader: Option<String>,
    },

    /// An invalid argument, such as an empty or over-long keyspace name.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// The engine was closed, or shut down after an unrecoverable durability failure.
    #[error("the engine is closed")]
    Closed,

    /// The data directory is locked by another process.
    #[error("data directory {path} is in use by another process (lock file {path}/LOCK)")]
    Locked {
        /// The data directory.
        path: PathBuf,
    },

    /// A durable file failed verification. The engine refuses to open rather than silently
    /// dropping durable data.
    #[error("corruption in {path} at byte {offset}: {detail}")]
    Corruption {
        /// The damaged file.
        path: PathBuf,
        /// The byte offset of the damage.
        offset: u64,
        /// What was wrong.
        detail: String,
    },

    /// The durability layer failed in a way it cannot continue from (it could not record a
    /// new epoch). The engine stops accepting work; reopening recovers.
    #[error("durability failed and the engine stopped: {0}")]
    Poisoned(String),

    /// An I/O error outside the commit path (opening, checkpointing).
    #[error("{context}: {source}")]
    Io {
        /// What the engine was doing.
        context: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// True when retrying the same transaction may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::Conflict { .. } | Error::DependencyLost { .. } | Error::DurabilityStalled { .. }
        )
    }

    /// Wraps an I/O error with what the engine was doing.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io { context: context.into(), source }
    }

    /// `Err(LimitExceeded)` when `actual` is over `limit`.
    pub(crate) fn check_limit(what: &'static str, actual: u64, limit: u64) -> Result<()> {
        if actual > limit {
            return Err(Error::LimitExceeded { what, actual, limit });
        }
        Ok(())
    }

    pub(crate) fn conflict(reason: impl Into<String>) -> Error {
        Error::Conflict { reason: reason.into() }
    }
}
