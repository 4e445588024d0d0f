//! Counters and watermarks, as one plain struct (the SQL layer will expose it as a view and
//! the server as metrics).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::CommitModel;
use crate::engine::{durable_state_summary, Shared};
use crate::id::{Csn, Epoch};

/// Engine-side counters (the durability layer keeps its own).
#[derive(Default)]
pub(crate) struct EngineCounters {
    pub commits_fast: AtomicU64,
    pub commits_safe: AtomicU64,
    pub commits_read_only: AtomicU64,
    pub aborts: AtomicU64,
    pub conflicts: AtomicU64,
    pub dependency_lost: AtomicU64,
    pub checkpoints: AtomicU64,
    pub last_checkpoint_csn: AtomicU64,
    pub gc_sweeps: AtomicU64,
}

/// A consistent-enough snapshot of every counter and watermark.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// The current epoch.
    pub epoch: Epoch,
    /// Newest committed CSN of the current epoch.
    pub committed_csn: Csn,
    /// Newest CSN visible to new snapshots (under the classic model, the durable watermark).
    pub visible_csn: Csn,
    /// Durable watermark of the current epoch.
    pub durable_csn: Csn,
    /// Update transactions committed fast.
    pub commits_fast: u64,
    /// Update transactions committed safe (including every classic commit).
    pub commits_safe: u64,
    /// Read-only transactions committed.
    pub commits_read_only: u64,
    /// Transactions rolled back or failed.
    pub aborts: u64,
    /// Commits refused with a serialization conflict.
    pub conflicts: u64,
    /// Transactions failed because they depended on lost transactions.
    pub dependency_lost: u64,
    /// Transactions made durable by the log writer.
    pub durable_txns: u64,
    /// Transactions lost.
    pub lost_txns: u64,
    /// Events that lost a suffix.
    pub loss_events: u64,
    /// Log flushes (each one fdatasync).
    pub flushes: u64,
    /// Bytes written to the log.
    pub log_bytes: u64,
    /// Mean transactions per flush, times 100.
    pub group_commit_mean_x100: u64,
    /// Flushes by group size: entry i counts flushes of [2^i, 2^(i+1)) transactions.
    pub group_commit_log2_histogram: Vec<u64>,
    /// Mean and max write+fsync time of a flush, in microseconds.
    pub flush_micros_mean: u64,
    /// The slowest flush, in microseconds.
    pub flush_micros_max: u64,
    /// Committed, non-durable log bytes.
    pub backlog_bytes: u64,
    /// Of those, bytes still buffered (not yet taken by the log writer).
    pub buffered_bytes: u64,
    /// Times the writer stalled (for example on a full disk).
    pub stalls: u64,
    /// Zero fills of log space ahead of the log (preallocation).
    pub zero_fills: u64,
    /// Bytes those zero fills wrote.
    pub zero_fill_bytes: u64,
    /// Why the writer is stalled now, if it is.
    pub stalled: Option<String>,
    /// Bytes held by the store.
    pub store_bytes: u64,
    /// Keyspaces in the store.
    pub keyspaces: u64,
    /// Rows in the store.
    pub rows: u64,
    /// Checkpoints taken since open.
    pub checkpoints: u64,
    /// CSN of the newest checkpoint taken since open.
    pub last_checkpoint_csn: Csn,
    /// Garbage-collection sweeps since open.
    pub gc_sweeps: u64,
    /// A replicated log: the last CSN on this node's own disk (the `local` level); `durable_csn`
    /// is then what the cluster committed (the `quorum` level).
    pub local_csn: Option<Csn>,
    /// A replicated log: the watermark of the `all` level, as the leader computed it last
    /// (see [`crate::Engine::level_marks`] for the sites).
    pub all_csn: Option<Csn>,
    /// A replicated log: the term this node leads, if it does.
    pub leading_term: Option<u64>,
}

impl EngineStats {
    pub(crate) fn collect(shared: &Shared) -> EngineStats {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let d = &shared.durability;
        let (epoch, durable_csn, committed_csn, local_csn) = {
            let state = d.state.lock();
            let (epoch, durable, committed) = durable_state_summary(&state);
            (epoch, durable, committed, state.replica.as_ref().map(|r| r.local))
        };
        let (backlog_bytes, buffered_bytes, stalled) = {
            let log = d.log.lock();
            (log.backlog_bytes, log.buffer.len() as u64, log.stalled.clone())
        };
        let stalled = stalled.or_else(|| shared.epoch_unrecorded());
        let flushes = load(&d.counters.flushes);
        let durable_txns = load(&d.counters.flushed_txns);
        let store = shared.store.stats();
        let c = &shared.counters;
        EngineStats {
            epoch,
            committed_csn,
            visible_csn: match shared.config.commit_model {
                CommitModel::EventuallyDurable => shared.visible.load(Ordering::Relaxed),
                CommitModel::Classic => durable_csn,
            },
            durable_csn,
            commits_fast: load(&c.commits_fast),
            commits_safe: load(&c.commits_safe),
            commits_read_only: load(&c.commits_read_only),
            aborts: load(&c.aborts),
            conflicts: load(&c.conflicts),
            dependency_lost: load(&c.dependency_lost),
            durable_txns,
            lost_txns: load(&d.counters.lost_txns),
            loss_events: load(&d.counters.loss_events),
            flushes,
            log_bytes: load(&d.counters.flushed_bytes),
            group_commit_mean_x100: (durable_txns * 100).checked_div(flushes).unwrap_or(0),
            group_commit_log2_histogram: d.counters.group_size_log2.iter().map(load).collect(),
            flush_micros_mean: load(&d.counters.flush_micros_total)
                .checked_div(flushes)
                .unwrap_or(0),
            flush_micros_max: load(&d.counters.flush_micros_max),
            backlog_bytes,
            buffered_bytes,
            stalls: load(&d.counters.stalls),
            zero_fills: load(&d.counters.zero_fills),
            zero_fill_bytes: load(&d.counters.zero_fill_bytes),
            stalled,
            store_bytes: store.bytes,
            keyspaces: store.keyspaces,
            rows: store.rows,
            checkpoints: load(&c.checkpoints),
            last_checkpoint_csn: load(&c.last_checkpoint_csn),
            local_csn,
            all_csn: local_csn.map(|_| d.level_marks().0),
            leading_term: match shared.leader_term.load(Ordering::SeqCst) {
                0 => None,
                term => Some(term as u64),
            },
            gc_sweeps: load(&c.gc_sweeps),
        }
    }
}
