//! The engine: opening a directory, the commit sequencer, the ED API, checkpoints and GC.
//!
//! The **commit sequencer** is one short critical section (`Shared::sequencer`): validate,
//! take the next CSN, append the record to the log buffer, install the versions, publish the
//! visible watermark. It does no I/O and no waiting, so everything a transaction holds is
//! released the moment it commits, fast or safe alike (G9). Safe commits wait for the durable
//! watermark only after leaving it.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::config::{CommitModel, Config, DurabilityLevel, TxnOptions};
use crate::durability::checkpoint::{
    self, CheckpointFile, CheckpointInfo, CheckpointSink, CheckpointWriter, LogMark,
};
use crate::durability::epochs::EpochHistory;
use crate::durability::recovery::{self, LOG_DIR};
use crate::durability::replicated::{EntryPayload, LogEntry, LogLag, LogPosition, Shipper};
use crate::durability::vfs::{self, is_no_space, OpenMode};
use crate::durability::writer::{EntriesRefused, LogWriter, LossReport, ReplicatedStart};
use crate::durability::{format, DurabilityEvent, Subscription};
use crate::durability::{Durability, DurableState, ReplicaState};
use crate::error::{Error, Result};
use crate::id::{Csn, Epoch, TxnId, TxnKind, TxnStatus};
use crate::stats::{EngineCounters, EngineStats};
use crate::store::Store;
use crate::txn::{SessionState, Transaction};

/// Rows the GC sweep and the checkpoint scan handle per step.
const SWEEP_BATCH_ROWS: usize = 1024;
/// How often the background thread sweeps for garbage.
const GC_INTERVAL: Duration = Duration::from_secs(1);
/// How often a commit retries recording an epoch the engine opened without (a full disk).
const EPOCH_RECORD_RETRY: Duration = Duration::from_millis(20);

/// The sequencer's state, guarded by the commit lock.
pub(crate) struct Sequencer {
    pub next_csn: Csn,
}

#[derive(Default)]
struct BackgroundState {
    checkpoint_due: bool,
    shutdown: bool,
}

/// State shared by the engine handle, transactions and background threads.
pub(crate) struct Shared {
    pub config: Config,
    pub dir: PathBuf,
    pub store: Store,
    pub durability: Arc<Durability>,
    /// The commit lock.
    pub sequencer: Mutex<Sequencer>,
    /// Newest installed CSN of the current epoch: the snapshot of new transactions under the
    /// eventually durable model.
    pub visible: AtomicU64,
    /// Active snapshots and how many transactions hold each; GC keeps what they can see.
    snapshots: Mutex<BTreeMap<Csn, usize>>,
    pub closed: AtomicBool,
    pub counters: EngineCounters,
    /// The newest checkpoint; held while one is written, installed or opened.
    checkpoint_lock: Mutex<Option<CheckpointInfo>>,
    /// A replicated log: what to call when enough log was written that a checkpoint is due
    /// (the cluster takes it, as a snapshot: see [`Engine::checkpoint_log`]).
    checkpoint_hook: std::sync::OnceLock<Box<dyn Fn() + Send + Sync>>,
    /// Names received checkpoints' temporary files apart.
    received: AtomicU64,
    /// The log writer (set once at open, right after `Shared` is built).
    pub writer: std::sync::OnceLock<Arc<LogWriter>>,
    background: Mutex<BackgroundState>,
    background_wake: Condvar,
    /// Set while the current epoch is not yet in the epoch history (opened on a full disk).
    epoch_unrecorded: AtomicBool,
    /// Why it is not, while it is not; also serializes the attempts to record it.
    epoch_unrecorded_cause: Mutex<Option<String>>,
    /// A replicated log: the term this node leads and commits in (0 while it does not).
    pub leader_term: AtomicU32,
    /// A replicated log: the last term this node stopped leading. A term is led at most once:
    /// the records dropped when it ended keep their ids (epoch, CSN), which a second lead of
    /// the same term would hand out again.
    ended_term: AtomicU32,
    /// A replicated log: where the cluster's leader takes writes, as the cluster last said.
    leader_hint: Mutex<Option<String>>,
    /// A replicated log: the last entry index the cluster committed (it may be ahead of
    /// this node's log for a moment; the watermark follows what is on disk).
    commit_index: AtomicU64,
    /// A replicated log: the last entry index whose records are installed and whose epochs
    /// are in the history (an append is done with it). Only what is installed moves the
    /// committed watermark, which [`Engine::commit_log_upto`] moves without the flush lock.
    log_installed: AtomicU64,
}

impl Shared {
    pub fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// The current epoch (its one owner is the durability layer's epoch history).
    pub fn epoch(&self) -> Epoch {
        self.durability.epoch()
    }

    /// Registers and returns a snapshot for a new transaction or statement.
    pub fn take_snapshot(&self) -> (Epoch, Csn) {
        let mut snapshots = self.snapshots.lock();
        // Epoch first, then the watermark: a loss lowers the watermark before it publishes
        // the new epoch, so a snapshot of the new epoch never holds a lost CSN.
        let epoch = self.epoch();
        // A replicated log's node that does not lead reads at the committed watermark: what it
        // holds beyond it a change of leader could still take back.
        let follower = self.config.replicated_log && !self.leads(epoch);
        let csn = match self.config.commit_model {
            CommitModel::EventuallyDurable if !follower => self.visible.load(Ordering::SeqCst),
            _ => self.durability.durable_csn.load(Ordering::SeqCst),
        };
        *snapshots.entry(csn).or_default() += 1;
        (epoch, csn)
    }

    /// Whether this node leads `epoch` of a replicated log (and may commit in it).
    pub fn leads(&self, epoch: Epoch) -> bool {
        epoch != 0 && self.leader_term.load(Ordering::SeqCst) == epoch
    }

    /// `Err(NotLeader)` when this is a replicated log's node that does not lead `epoch`.
    pub fn check_may_commit(&self, epoch: Epoch) -> Result<()> {
        if self.config.replicated_log && !self.leads(epoch) {
            let leader = self.leader_hint.lock().clone();
            let detail = match &leader {
                Some(at) => format!("the leader takes writes at {at}"),
                None => "no leader is known right now (an election may be under way)".into(),
            };
            return Err(Error::NotLeader { detail, leader });
        }
        Ok(())
    }

    pub fn release_snapshot(&self, csn: Csn) {
        let mut snapshots = self.snapshots.lock();
        let count = snapshots.get_mut(&csn).expect("released an unregistered snapshot");
        *count -= 1;
        if *count == 0 {
            snapshots.remove(&csn);
        }
    }

    /// The GC horizon: no version at or below it, except the newest, is visible to anyone,
    /// and everything at or below it is durable.
    pub fn gc_horizon(&self) -> Csn {
        let durable = self.durability.durable_csn.load(Ordering::SeqCst);
        let oldest = self.snapshots.lock().keys().next().copied();
        oldest.map_or(durable, |s| s.min(durable))
    }

    /// The last durable CSN of `epoch`, or `None` if `epoch` is still current.
    pub fn end_of_epoch(&self, epoch: Epoch) -> Option<Csn> {
        self.durability.state.lock().history.end_of(epoch)
    }

    /// Records the current epoch in the epoch history if the engine opened on a full disk and
    /// could not. No update may commit before that: a restart would begin an epoch of the
    /// same number at the same CSN, and a lost commit's id would then name another
    /// transaction. Retries until `timeout` passes; [`Error::DurabilityStalled`] while the
    /// disk stays full. Reads never wait for it: everything they can see is durable already.
    pub fn record_epoch(&self, timeout: Duration) -> Result<()> {
        if !self.epoch_unrecorded.load(Ordering::Acquire) {
            return Ok(());
        }
        let deadline = Instant::now() + timeout;
        loop {
            self.check_open()?;
            let cause = {
                let mut cause = self.epoch_unrecorded_cause.lock();
                if cause.is_none() {
                    return Ok(()); // another thread recorded it
                }
                let history = self.durability.state.lock().history.clone();
                let epoch = history.current().expect("an open engine has an epoch").0;
                match history.store(self.config.vfs.as_ref(), &self.dir) {
                    Ok(()) => {
                        *cause = None;
                        self.epoch_unrecorded.store(false, Ordering::Release);
                        tracing::info!(epoch, "recorded the epoch after the disk had room again");
                        return Ok(());
                    }
                    Err(e) if is_no_space(&e) => {
                        let text = format!("recording epoch {epoch}: {e}");
                        *cause = Some(text.clone());
                        text
                    }
                    Err(e) => return Err(Error::io(format!("recording epoch {epoch}"), e)),
                }
            };
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::DurabilityStalled { cause });
            }
            std::thread::sleep((deadline - now).min(EPOCH_RECORD_RETRY));
        }
    }

    /// Why the current epoch is not recorded yet, if it is not.
    pub fn epoch_unrecorded(&self) -> Option<String> {
        if !self.epoch_unrecorded.load(Ordering::Acquire) {
            return None;
        }
        self.epoch_unrecorded_cause.lock().clone()
    }

    /// A replicated log: drops every version above `kept` that this node committed or
    /// installed beyond it (under the flush lock, so that nothing is appended meanwhile), and
    /// leaves those records in doubt. The commit sequence continues after `kept`.
    /// Stops leading, if this node leads: commits are refused from now on, and the term it
    /// led is never led again.
    fn end_leadership(&self) {
        let term = self.leader_term.swap(0, Ordering::SeqCst);
        if term != 0 {
            self.ended_term.fetch_max(term, Ordering::SeqCst);
            tracing::info!(term, "no longer leading: commits are refused");
            // Safe committers of the term learn that their outcome is now the cluster's.
            self.durability.wake_waiters_all();
        }
    }

    fn discard_above(&self, kept: Csn, why: &str) {
        let mut sequencer = self.sequencer.lock();
        let last = sequencer.next_csn - 1;
        if last <= kept {
            return;
        }
        {
            let mut log = self.durability.log.lock();
            log.count = 0;
            log.buffer = Vec::new();
            log.first_csn = kept + 1;
            log.backlog_bytes = 0;
            log.oldest = None;
        }
        self.durability.backlog_drained.notify_all();
        for table in self.store.tables() {
            self.store.purge_all_above(&table, kept);
        }
        {
            let mut state = self.durability.state.lock();
            let state = &mut *state;
            let mut ranges = Vec::new();
            for &(epoch, start) in state.history.epochs() {
                let end = state.history.end_of(epoch).unwrap_or(last).min(last);
                let first = start.max(kept + 1);
                if epoch != 0 && first <= end {
                    ranges.push((epoch, first, end));
                }
            }
            state.last_committed = kept;
            let replica = state.replica.as_mut().expect("a replicated log");
            replica.local = replica.local.min(kept);
            self.durability.local_csn.store(replica.local, Ordering::SeqCst);
            replica.in_doubt.extend(ranges);
        }
        sequencer.next_csn = kept + 1;
        self.visible.store(kept, Ordering::SeqCst);
        tracing::warn!(from = kept + 1, to = last, why,
            "dropped records beyond the replicated log; they are in doubt until the cluster decides");
        self.durability.wake_waiters_all();
    }

    /// Moves the committed watermark to the last record of the entries the cluster committed
    /// that are installed here. Needs no flush lock: entries up to the commit index are never
    /// cut, so the entry looked up is the one committed, whatever an append or cut does
    /// meanwhile, and it was installed (with its epochs in the history) before
    /// `log_installed` reached it. The watermark only moves forward.
    fn apply_commit_index(&self, writer: &LogWriter) {
        let committed = self.commit_index.load(Ordering::SeqCst);
        let index = committed.min(self.log_installed.load(Ordering::SeqCst));
        if let Some((term, csn)) = writer.indexed(|log| LogWriter::entry_end(log, index)) {
            self.durability.replicated_committed(csn, term);
        }
    }

    /// Drops the lost suffix and opens a new epoch (called by the log writer).
    fn lose_suffix(&self, report: LossReport) -> std::result::Result<(), String> {
        let mut sequencer = self.sequencer.lock();
        assert_eq!(self.epoch(), report.epoch, "loss reported for an old epoch");
        let durable = report.durable;
        let buffered = {
            let mut log = self.durability.log.lock();
            log.count = 0;
            log.first_csn = durable + 1;
            log.backlog_bytes = 0;
            log.oldest = None;
            std::mem::take(&mut log.buffer)
        };
        self.durability.backlog_drained.notify_all();
        for records in [&report.failed_records, &buffered] {
            for_each_write(records, |w| {
                if let Some(table) = self.store.get_table(w.keyspace) {
                    match w.op {
                        format::WriteOp::Clear => self.store.purge_all_above(&table, durable),
                        _ => self.store.purge_above(&table, w.key, durable),
                    }
                }
            });
        }
        let lost = sequencer.next_csn - 1 - durable;
        let mut history = self.durability.state.lock().history.clone();
        let new_epoch = history.push(durable + 1);
        history
            .store(self.config.vfs.as_ref(), &self.dir)
            .map_err(|e| format!("could not record epoch {new_epoch} after a loss: {e}"))?;
        // All under the commit lock and before anyone is woken: the watermark drops first, then
        // the durability layer publishes the new epoch with the history that says where the
        // old one ended, so whoever sees the new epoch can look that up, and whoever is told
        // of the loss sees the new epoch.
        sequencer.next_csn = durable + 1;
        self.visible.store(durable, Ordering::SeqCst);
        self.durability.begin_epoch(history, durable);
        tracing::error!(epoch = report.epoch, from = durable + 1, lost, new_epoch, cause = %report.cause,
            "lost the non-durable suffix; continuing in a new epoch");
        self.durability.publish(DurabilityEvent::Lost {
            epoch: report.epoch,
            from_csn: durable + 1,
            new_epoch,
            cause: report.cause,
        });
        self.durability.counters.lost_txns.fetch_add(lost, Ordering::Relaxed);
        self.durability.counters.loss_events.fetch_add(1, Ordering::Relaxed);
        self.durability.wake_waiters();
        drop(sequencer);
        Ok(())
    }

    /// Takes a checkpoint at the durable watermark and removes what it makes unnecessary.
    pub fn checkpoint(&self) -> Result<Csn> {
        if self.config.replicated_log {
            return Err(Error::InvalidArgument(
                "a replicated log is checkpointed by its cluster, as a snapshot at an entry \
                 (Engine::checkpoint_log)"
                    .into(),
            ));
        }
        // A checkpoint names the current epoch, so it must be in the history first.
        self.record_epoch(Duration::ZERO)?;
        let mut last = self.checkpoint_lock.lock();
        let (epoch, csn) = {
            let mut snapshots = self.snapshots.lock();
            let state = self.durability.state.lock();
            let csn = state.durable;
            *snapshots.entry(csn).or_default() += 1;
            (state.epoch(), csn)
        };
        let result = match &*last {
            Some(info) if info.csn == csn => Ok(info.clone()),
            _ => self.write_checkpoint(epoch, csn, None),
        };
        self.release_snapshot(csn);
        *last = Some(result?);
        self.durability.counters.log_bytes_since_checkpoint.store(0, Ordering::Relaxed);
        self.counters.checkpoints.fetch_add(1, Ordering::Relaxed);
        self.counters.last_checkpoint_csn.store(csn, Ordering::Relaxed);
        self.remove_obsolete_files(csn)?;
        Ok(csn)
    }

    /// Writes the checkpoint of `csn` (which a registered snapshot keeps from GC).
    fn write_checkpoint(
        &self,
        epoch: Epoch,
        csn: Csn,
        log: Option<LogMark>,
    ) -> Result<CheckpointInfo> {
        let vfs = self.config.vfs.as_ref();
        let io = |e| Error::io(format!("writing the checkpoint at CSN {csn}"), e);
        let mut writer =
            CheckpointWriter::create(vfs, &self.dir, epoch, csn, log.as_ref()).map_err(io)?;
        for table in self.store.tables() {
            let mut from: Option<Vec<u8>> = None;
            loop {
                let start =
                    from.as_deref().map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
                let (rows, _) =
                    table.scan((start, std::ops::Bound::Unbounded), csn, false, SWEEP_BATCH_ROWS);
                for (key, version) in &rows {
                    let value = version.value.as_ref().expect("scan returns live rows");
                    writer.add(table.name(), key, value).map_err(io)?;
                }
                if rows.len() < SWEEP_BATCH_ROWS {
                    break;
                }
                from = rows.last().map(|(k, _)| k.clone());
            }
        }
        let rows = writer.finish(vfs).map_err(io)?;
        tracing::info!(csn, rows, index = log.as_ref().map(|l| l.index), "checkpoint written");
        Ok(CheckpointInfo { epoch, csn, rows, log })
    }

    fn remove_obsolete_files(&self, csn: Csn) -> Result<()> {
        let vfs = self.config.vfs.as_ref();
        let remove = |path: &Path| {
            vfs.remove_file(path).map_err(|e| Error::io(format!("removing {}", path.display()), e))
        };
        for (older, path) in recovery::list_checkpoints(vfs, &self.dir)? {
            if older < csn {
                remove(&path)?;
            }
        }
        if self.config.replicated_log {
            // The cluster decides when a replicated log's entries may go (Engine::purge_log).
            return Ok(());
        }
        let log_dir = self.dir.join(LOG_DIR);
        let segments = recovery::list_segments(vfs, &log_dir)?;
        for pair in segments.windows(2) {
            if pair[1].first_csn <= csn + 1 {
                remove(&pair[0].path)?;
            }
        }
        vfs.sync_dir(&log_dir).map_err(|e| Error::io("syncing the log directory", e))
    }

    /// One garbage-collection sweep over every keyspace.
    pub fn gc(&self) {
        let horizon = self.gc_horizon();
        for table in self.store.tables() {
            let mut from: Option<Vec<u8>> = None;
            loop {
                let _sequencer = self.sequencer.lock();
                from = self.store.gc_batch(&table, from.as_deref(), horizon, SWEEP_BATCH_ROWS);
                if from.is_none() {
                    break;
                }
            }
        }
        self.counters.gc_sweeps.fetch_add(1, Ordering::Relaxed);
    }

    fn background_loop(&self) {
        loop {
            let due = {
                let mut state = self.background.lock();
                if !state.shutdown && !state.checkpoint_due {
                    self.background_wake.wait_for(&mut state, GC_INTERVAL);
                }
                if state.shutdown {
                    return;
                }
                std::mem::take(&mut state.checkpoint_due)
            };
            if self.epoch_unrecorded.load(Ordering::Acquire) {
                // Opened on a full disk: record the epoch as soon as there is room, so that
                // commits find it recorded rather than having to wait for it.
                let _ = self.record_epoch(Duration::ZERO);
            }
            if due && self.config.replicated_log {
                if let Some(hook) = self.checkpoint_hook.get() {
                    hook();
                }
            } else if due {
                if let Err(e) = self.checkpoint() {
                    tracing::error!(error = %e, "checkpoint failed; will retry");
                }
            }
            self.gc();
        }
    }
}

/// Decodes each record of `records` (u32 length, commit record, back to back) in order.
fn for_each_record(
    records: &[u8],
    mut f: impl FnMut(&[format::WriteRef<'_>]) -> std::result::Result<(), String>,
) -> std::result::Result<(), String> {
    let mut c = format::Cursor::new(records);
    while !c.is_empty() {
        let len = c.u32()? as usize;
        f(&format::decode_record(c.bytes(len)?)?)?;
    }
    Ok(())
}

/// Calls `f` for every write of `records` (encoded by this engine, so they decode).
fn for_each_write(records: &[u8], mut f: impl FnMut(&format::WriteRef<'_>)) {
    for_each_record(records, |writes| {
        writes.iter().for_each(&mut f);
        Ok(())
    })
    .expect("records we encoded decode");
}

/// Installs a logged commit's writes at its CSN, as recovery and a follower replay them;
/// versions older than `horizon` that no one can see any more may go (recovery: the CSN
/// itself, as nothing is visible to anyone yet; a follower: its GC horizon, as its readers
/// read at the committed watermark, below what it installs).
fn install_logged(store: &Store, csn: Csn, writes: &[format::WriteRef<'_>], horizon: Csn) {
    for w in writes {
        let table = store.table(w.keyspace);
        match w.op {
            format::WriteOp::Clear => store.clear(&table, csn, horizon),
            _ => store.install(&table, w.key, None, csn, w.value().map(Arc::from), horizon),
        }
    }
}

struct Handle {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Holds the directory lock until shutdown.
    lock_file: Mutex<Option<File>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Handle {
    fn shutdown(&self) {
        {
            // Under the commit lock: no commit is between its open-check and its append, so
            // every record is in the buffer before the writer's final drain below.
            let _sequencer = self.shared.sequencer.lock();
            if self.shared.closed.swap(true, Ordering::AcqRel) {
                return;
            }
        }
        {
            let mut log = self.shared.durability.log.lock();
            log.shutdown = true;
            self.shared.durability.writer_wake.notify_all();
            self.shared.durability.backlog_drained.notify_all();
        }
        {
            let mut background = self.shared.background.lock();
            background.shutdown = true;
            self.shared.background_wake.notify_all();
        }
        self.shared.durability.stop_notifier();
        for thread in self.threads.lock().drain(..) {
            let _ = thread.join();
        }
        self.shared.durability.wake_waiters();
        // Nothing writes any more: let another process (or handle) open the directory.
        self.lock_file.lock().take();
        tracing::info!(dir = %self.shared.dir.display(), "engine closed");
    }
}

/// An open Kiln database. Cloning gives another handle to the same engine; the engine closes
/// when the last handle is dropped or [`Engine::close`] is called.
#[derive(Clone)]
pub struct Engine {
    handle: Arc<Handle>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("dir", &self.handle.shared.dir).finish_non_exhaustive()
    }
}

impl Engine {
    /// Opens (creating if needed) the database in `dir`: locks it, recovers from the newest
    /// checkpoint and the log, and begins a new epoch.
    pub fn open(dir: impl AsRef<Path>, config: Config) -> Result<Engine> {
        let dir = dir.as_ref().to_path_buf();
        validate_config(&config)?;
        let vfs = config.vfs.clone();
        let log_dir = dir.join(LOG_DIR);
        vfs.create_dir_all(&log_dir)
            .map_err(|e| Error::io(format!("creating {}", log_dir.display()), e))?;
        let lock_file = lock_directory(&dir)?;
        let store = Store::new();
        let mut on_row = |keyspace: &str, key: &[u8], value: &[u8]| {
            let table = store.table(keyspace);
            store.install(&table, key, None, 0, Some(Arc::from(value)), 0);
        };
        let mut on_commit =
            |csn: Csn, writes: &[format::WriteRef<'_>]| install_logged(&store, csn, writes, csn);
        let replicated = config.replicated_log;
        let recovered =
            recovery::recover(vfs.as_ref(), &dir, replicated, &mut on_row, &mut on_commit)?;
        let last_csn = recovered.last_csn;
        let log_base = recovered.log_base();
        let mut history = recovered.history.clone();
        if replicated {
            // The log's own epochs (its terms), after epoch 0 at CSN 1: "before any leader".
            let mut with_start = EpochHistory::default();
            with_start.push_epoch(0, 1);
            for &(epoch, start) in history.epochs().iter().filter(|&&(e, _)| e > 0) {
                with_start.push_epoch(epoch, start);
            }
            history = with_start;
        }
        let epoch = match replicated {
            true => history.current().expect("pushed").0,
            false => history.push(last_csn + 1),
        };
        if let Some(last) = recovered.last_epoch.filter(|&last| last > epoch) {
            return Err(Error::Corruption {
                path: dir.join(LOG_DIR),
                offset: 0,
                detail: format!("the log holds epoch {last}, after the recorded epoch {epoch}"),
            });
        }
        // On a full disk the engine still opens: reads are served, and commits wait (bounded)
        // until the epoch can be recorded, exactly as they wait for a log write. A replicated
        // log records no epochs of its own: they are its terms.
        let stored = if replicated { Ok(()) } else { history.store(vfs.as_ref(), &dir) };
        let unrecorded = match stored {
            Ok(()) => None,
            Err(e) if is_no_space(&e) => {
                tracing::warn!(epoch, error = %e,
                    "the disk is full: reads are served; commits wait until epoch {epoch} can be recorded");
                Some(format!("recording epoch {epoch}: {e}"))
            }
            Err(e) => return Err(Error::io(format!("recording epoch {epoch}"), e)),
        };
        tracing::info!(dir = %dir.display(), epoch, last_csn,
            checkpoint = ?recovered.checkpoint.as_ref().map(|c| c.csn),
            replayed = recovered.replayed_records, torn_bytes = recovered.truncated_bytes,
            "recovered");
        // A replicated log's checkpoint is taken at the committed watermark, so what it holds
        // is known committed; the rest of the log waits for the cluster to say.
        let (durable, replica) = match replicated {
            true => (
                recovered.checkpoint.as_ref().map_or(0, |c| c.csn).min(last_csn),
                Some(ReplicaState { local: last_csn, ..ReplicaState::default() }),
            ),
            false => (last_csn, None),
        };
        let durability = Arc::new(Durability::new(
            history,
            durable,
            last_csn,
            replica,
            config.backlog_bytes_max,
        ));
        let shared = Arc::new(Shared {
            dir: dir.clone(),
            store,
            durability: durability.clone(),
            sequencer: Mutex::new(Sequencer { next_csn: last_csn + 1 }),
            visible: AtomicU64::new(last_csn),
            snapshots: Mutex::new(BTreeMap::new()),
            closed: AtomicBool::new(false),
            counters: EngineCounters::default(),
            checkpoint_lock: Mutex::new(recovered.checkpoint.clone()),
            checkpoint_hook: std::sync::OnceLock::new(),
            received: AtomicU64::new(0),
            writer: std::sync::OnceLock::new(),
            background: Mutex::new(BackgroundState::default()),
            background_wake: Condvar::new(),
            epoch_unrecorded: AtomicBool::new(unrecorded.is_some()),
            epoch_unrecorded_cause: Mutex::new(unrecorded),
            leader_term: AtomicU32::new(0),
            ended_term: AtomicU32::new(0),
            leader_hint: Mutex::new(None),
            commit_index: AtomicU64::new(log_base.map_or(0, |b| b.1)),
            log_installed: AtomicU64::new(
                recovered.entries.last().map(|e| e.index).or(log_base.map(|b| b.1)).unwrap_or(0),
            ),
            config,
        });
        let replicated = shared.config.replicated_log.then(|| ReplicatedStart {
            entries: recovered.entries,
            next_csn: last_csn + 1,
            base: log_base,
        });
        let threads = spawn_threads(&shared, log_dir, replicated)?;
        Ok(Engine {
            handle: Arc::new(Handle {
                shared,
                threads: Mutex::new(threads),
                lock_file: Mutex::new(Some(lock_file)),
            }),
        })
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.handle.shared
    }

    fn replicated_writer(&self) -> Result<&Arc<LogWriter>> {
        let shared = self.shared();
        if !shared.config.replicated_log {
            return Err(Error::InvalidArgument("the engine's log is not a replicated log".into()));
        }
        Ok(shared.writer.get().expect("set at open"))
    }

    /// A replicated log: where the log writer ships each batch of committed records (once;
    /// until then batches wait in the buffer). See [`crate::replicated`].
    pub fn set_shipper(&self, shipper: Shipper) -> Result<()> {
        if !self.replicated_writer()?.set_shipper(shipper) {
            return Err(Error::InvalidArgument("the shipper is already set".into()));
        }
        Ok(())
    }

    /// A replicated log: appends `entries` after the last entry on disk with one write and one
    /// fdatasync, then installs the records this node did not commit itself (a follower's) at
    /// their CSNs and moves the `local` watermark to the last record.
    ///
    /// An entry's term is the epoch of the records it carries. The first entry of a term
    /// later than the log's last begins that epoch at the next CSN; before it is written,
    /// whatever this node committed beyond its log (as a leader of an earlier term) is
    /// dropped and left in doubt (see [`Engine::truncate_log_from`]). The records of a batch
    /// this node committed itself are installed already; any others must follow the last
    /// installed CSN. An I/O error poisons durability: the log can no longer be trusted, and
    /// the node must be reopened (and catch up from the cluster).
    pub fn append_entries(&self, entries: &[LogEntry]) -> Result<()> {
        let writer = self.replicated_writer()?;
        let shared = self.shared();
        shared.check_open()?;
        if let Some(reason) = shared.durability.poisoned() {
            return Err(Error::Poisoned(reason));
        }
        let batches = || {
            entries.iter().filter_map(|e| match &e.payload {
                EntryPayload::Records(batch) => Some(batch),
                EntryPayload::Opaque(_) => None,
            })
        };
        writer.locked(|core| {
            let log_last = writer.indexed(LogWriter::last_csn);
            if entries.iter().any(|e| e.term > shared.epoch() as u64) {
                // A new term: nothing this node committed beyond its log can be in it.
                shared.discard_above(log_last, "a new term began");
                shared.end_leadership();
            }
            // Check what will be installed before anything is written.
            {
                let sequencer = shared.sequencer.lock();
                for batch in batches() {
                    let own =
                        batch.epoch == shared.epoch() && batch.last_csn() < sequencer.next_csn;
                    if !own {
                        for_each_record(&batch.records, |_| Ok(()))
                            .map_err(Error::InvalidArgument)?;
                    }
                }
            }
            let began = match writer.write_entries(core, entries) {
                Ok((_, began)) => began,
                Err(EntriesRefused::DoNotFollow(why)) => return Err(Error::InvalidArgument(why)),
                Err(EntriesRefused::Io(cause)) => {
                    shared.durability.poison(format!("replicated log write: {cause}"));
                    return Err(Error::Poisoned(cause));
                }
            };
            let mut own_bytes = 0;
            {
                let mut sequencer = shared.sequencer.lock();
                let epoch_before = shared.epoch();
                for batch in batches() {
                    if batch.epoch == epoch_before && batch.last_csn() < sequencer.next_csn {
                        own_bytes += batch.records.len() as u64;
                        continue;
                    }
                    crate::invariant!(
                        batch.first_csn == sequencer.next_csn,
                        "logged records from CSN {} do not follow the installed CSN {}",
                        batch.first_csn,
                        sequencer.next_csn - 1
                    );
                    let mut csn = batch.first_csn;
                    let horizon = shared.gc_horizon();
                    for_each_record(&batch.records, |writes| {
                        install_logged(&shared.store, csn, writes, horizon);
                        csn += 1;
                        Ok(())
                    })
                    .expect("checked before writing");
                    sequencer.next_csn = batch.last_csn() + 1;
                    shared.visible.store(batch.last_csn(), Ordering::SeqCst);
                }
                // The epochs begun here start within or right after what was just installed
                // (one append may carry the end of one term and the start of the next).
                if !began.is_empty() {
                    let mut history = shared.durability.state.lock().history.clone();
                    for &(epoch, start) in &began {
                        history.push_epoch(epoch, start);
                    }
                    shared.durability.replace_history(history, sequencer.next_csn - 1);
                }
            }
            let (last_csn, last_index) =
                writer.indexed(|log| (LogWriter::last_csn(log), LogWriter::last_index(log)));
            shared.durability.replicated_local(shared.epoch(), last_csn, own_bytes);
            shared.log_installed.store(last_index, Ordering::SeqCst);
            shared.apply_commit_index(writer);
            Ok(())
        })
    }

    /// A replicated log: cuts the log back to the entries with index < `first_cut` (a follower's
    /// entries that conflict with the leader's, a deposed leader's unreplicated tail). The
    /// versions of the records cut are dropped and the epochs after the last kept entry's
    /// term forgotten. Nothing is reported lost yet: the records stay *in doubt* (status
    /// committed) until the cluster commits an entry of a later term, which decides them —
    /// lost, unless the entries come back and commit. Cutting committed records is refused.
    pub fn truncate_log_from(&self, first_cut: u64) -> Result<()> {
        let writer = self.replicated_writer()?;
        let shared = self.shared();
        shared.check_open()?;
        writer.locked(|core| {
            let first_csn = writer.indexed(|log| LogWriter::first_csn_from(log, first_cut));
            let committed = shared.durability.durable_csn.load(Ordering::SeqCst);
            if first_csn.is_some_and(|csn| csn <= committed) {
                return Err(Error::InvalidArgument(format!(
                    "cutting the log from entry {first_cut} would drop records the cluster \
                     committed (up to CSN {committed})"
                )));
            }
            shared.end_leadership();
            let cut = writer.truncate_from(core, first_cut).map_err(|cause| {
                shared.durability.poison(format!("cutting the replicated log: {cause}"));
                Error::Poisoned(cause)
            })?;
            let Some(next) = cut else { return Ok(()) };
            let (last_term, last_index) =
                writer.indexed(|log| (LogWriter::last_term(log), LogWriter::last_index(log)));
            shared.log_installed.fetch_min(last_index, Ordering::SeqCst);
            shared.discard_above(next - 1, "the log was cut back");
            let _sequencer = shared.sequencer.lock();
            let mut history = shared.durability.state.lock().history.clone();
            history.truncate_after(last_term);
            shared.durability.replace_history(history, next - 1);
            tracing::info!(first_cut, next_csn = next, "replicated log cut back");
            Ok(())
        })
    }

    /// A replicated log: the cluster committed every entry up to `index`. Moves the committed
    /// watermark (the `quorum` level) to the last record up to it that is on this node's
    /// disk, and decides the epochs a later committed term ended.
    pub fn commit_log_upto(&self, index: u64) -> Result<()> {
        let writer = self.replicated_writer()?;
        let shared = self.shared();
        shared.check_open()?;
        shared.commit_index.fetch_max(index, Ordering::SeqCst);
        shared.apply_commit_index(writer);
        Ok(())
    }

    /// A replicated log: starts committing as the leader of `term`. The log's last entry must
    /// be of `term` already (the new leader's first entry, which began its epoch), so that
    /// every commit follows the entries of earlier terms.
    pub fn lead(&self, term: u64) -> Result<()> {
        let writer = self.replicated_writer()?;
        let shared = self.shared();
        shared.check_open()?;
        writer.locked(|_core| {
            let _sequencer = shared.sequencer.lock();
            let last_term = writer.indexed(LogWriter::last_term) as u64;
            let ended = shared.ended_term.load(Ordering::SeqCst) as u64;
            if term <= ended {
                return Err(Error::NotLeader {
                    leader: None,
                    detail: format!(
                        "this node stopped leading term {ended}; it leads only a later one"
                    ),
                });
            }
            if last_term != term || shared.epoch() as u64 != term {
                return Err(Error::NotLeader {
                    leader: None,
                    detail: format!(
                        "the log's last entry is of term {last_term}, not yet of term {term}"
                    ),
                });
            }
            shared.leader_term.store(term as Epoch, Ordering::SeqCst);
            tracing::info!(term, "leading: commits are accepted");
            Ok(())
        })
    }

    /// A replicated log: the term this node leads and commits in, if it does.
    pub fn leading_term(&self) -> Option<u64> {
        match self.shared().leader_term.load(Ordering::SeqCst) {
            0 => None,
            term => Some(term as u64),
        }
    }

    /// A replicated log: tells the engine where the cluster's leader takes writes (its SQL
    /// address), for the error a commit on this node gets.
    pub fn set_leader_hint(&self, leader: Option<String>) {
        *self.shared().leader_hint.lock() = leader;
    }

    /// A replicated log: the last term this node stopped leading, if any; it leads only later
    /// terms.
    pub fn ended_term(&self) -> Option<u64> {
        match self.shared().ended_term.load(Ordering::SeqCst) {
            0 => None,
            term => Some(term as u64),
        }
    }

    /// A replicated log: gives up leading `term` if this node leads it, as [`Engine::follow`]
    /// does (it may still lead it in the cluster's eyes); does nothing otherwise.
    pub fn give_up(&self, term: u64) -> Result<()> {
        if self.leading_term() == Some(term) {
            self.follow()?;
        }
        Ok(())
    }

    /// A replicated log: stops committing (this node no longer leads). Whatever it committed
    /// that is not in its log yet is dropped and left in doubt.
    pub fn follow(&self) -> Result<()> {
        let writer = self.replicated_writer()?;
        let shared = self.shared();
        shared.end_leadership();
        writer.locked(|_core| {
            shared.discard_above(writer.indexed(LogWriter::last_csn), "leadership ended")
        });
        Ok(())
    }

    /// A replicated log: the entries with index in `from..=to` that are on disk, read back.
    pub fn log_entries(&self, from: u64, to: u64) -> Result<Vec<LogEntry>> {
        self.shared().check_open()?;
        self.replicated_writer()?.read_entries(from, to).map_err(|detail| Error::Corruption {
            path: self.shared().dir.join(LOG_DIR),
            offset: 0,
            detail,
        })
    }

    /// A replicated log: the CSN of the last record in the entries up to `index` on disk (0
    /// when they hold none), or `None` if entry `index` is not on disk.
    pub fn log_csn_at(&self, index: u64) -> Result<Option<Csn>> {
        let writer = self.replicated_writer()?;
        Ok(writer.indexed(|log| LogWriter::entry_end(log, index).map(|(_, csn)| csn)))
    }

    /// A replicated log: for each index, the CSN of the last record in the entries up to it,
    /// counting only what is on this node's disk (an index beyond it counts as the last entry
    /// on disk; 0 when the entries hold no record). One look at the log's index for all.
    pub fn log_csns_upto(&self, indexes: &[u64]) -> Result<Vec<Csn>> {
        let writer = self.replicated_writer()?;
        Ok(writer.indexed(|log| {
            let last = LogWriter::last_index(log);
            let csn = |index: u64| match index.min(last) {
                0 => 0,
                i => LogWriter::entry_end(log, i).map_or(0, |(_, csn)| csn),
            };
            indexes.iter().map(|&i| csn(i)).collect()
        }))
    }

    /// A replicated log: how far a member whose log matches this one up to entry `index` is
    /// behind it, in entries, commits, bytes and time (`None` if `index` is beyond this log's
    /// last entry on disk).
    pub fn log_lag(&self, index: u64) -> Result<Option<LogLag>> {
        let writer = self.replicated_writer()?;
        Ok(writer.indexed(|log| LogWriter::lag_behind(log, index)))
    }

    /// A replicated log: its first and last entry on disk and its last record's CSN.
    pub fn log_position(&self) -> Result<LogPosition> {
        Ok(self.replicated_writer()?.log_position())
    }

    /// A replicated log: what to call when enough log was written since the last checkpoint
    /// that one is due (the cluster then takes a snapshot, [`Engine::checkpoint_log`]). Set
    /// once.
    pub fn set_checkpoint_hook(&self, hook: Box<dyn Fn() + Send + Sync>) -> Result<()> {
        self.replicated_writer()?;
        if self.shared().checkpoint_hook.set(hook).is_err() {
            return Err(Error::InvalidArgument("the checkpoint hook is already set".into()));
        }
        Ok(())
    }

    /// A replicated log: writes a checkpoint at the last entry the cluster committed that is
    /// installed here, holding every row as of that entry's last record, the epoch history up
    /// to it, and `cluster(index)` (the cluster's own bytes for that entry, stored and handed
    /// back). Older checkpoints are removed; the log is not (see [`Engine::purge_log`]).
    /// Returns what was written, or the newest checkpoint if it already stands at that entry.
    pub fn checkpoint_log(&self, cluster: impl FnOnce(u64) -> Vec<u8>) -> Result<CheckpointInfo> {
        let writer = self.replicated_writer()?;
        let shared = self.shared();
        shared.check_open()?;
        let mut last = shared.checkpoint_lock.lock();
        let index = shared
            .commit_index
            .load(Ordering::SeqCst)
            .min(shared.log_installed.load(Ordering::SeqCst));
        let Some((term, csn)) = writer.indexed(|log| LogWriter::entry_end(log, index)) else {
            return last.clone().ok_or_else(|| {
                Error::InvalidArgument("the cluster has committed no entry yet".into())
            });
        };
        if let Some(info) =
            last.as_ref().filter(|i| i.log.as_ref().is_some_and(|l| l.index >= index))
        {
            return Ok(info.clone());
        }
        let history = {
            // Registered under the state lock: the watermark is at or past `csn` (it moved
            // there when `index` was committed), so GC has not passed it and now cannot.
            let mut snapshots = shared.snapshots.lock();
            let state = shared.durability.state.lock();
            *snapshots.entry(csn).or_default() += 1;
            state.history.epochs().iter().copied().filter(|&(e, _)| e <= term).collect()
        };
        let mark =
            LogMark { term: term as u64, index, history, cluster: Arc::from(cluster(index)) };
        let result = shared.write_checkpoint(term, csn, Some(mark));
        shared.release_snapshot(csn);
        let info = result?;
        *last = Some(info.clone());
        shared.counters.checkpoints.fetch_add(1, Ordering::Relaxed);
        shared.counters.last_checkpoint_csn.store(csn, Ordering::Relaxed);
        shared.durability.counters.log_bytes_since_checkpoint.store(0, Ordering::Relaxed);
        shared.remove_obsolete_files(csn)?;
        Ok(info)
    }

    /// The newest checkpoint, open for reading (for a replica too far behind to catch up
    /// from the log), or `None` if there is none.
    pub fn open_checkpoint(&self) -> Result<Option<CheckpointFile>> {
        let shared = self.shared();
        shared.check_open()?;
        let last = shared.checkpoint_lock.lock();
        let Some(info) = last.clone() else { return Ok(None) };
        let path = shared.dir.join(checkpoint::checkpoint_name(info.csn));
        CheckpointFile::open(shared.config.vfs.as_ref(), &path, info)
            .map(Some)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))
    }

    /// The newest checkpoint's description, if there is one.
    pub fn newest_checkpoint(&self) -> Option<CheckpointInfo> {
        self.shared().checkpoint_lock.lock().clone()
    }

    /// Somewhere to write a checkpoint arriving from another node (a temporary file of the
    /// data directory), to be installed with [`Engine::install_checkpoint`].
    pub fn checkpoint_sink(&self) -> Result<CheckpointSink> {
        let shared = self.shared();
        shared.check_open()?;
        let nonce = shared.received.fetch_add(1, Ordering::Relaxed);
        CheckpointSink::create(shared.config.vfs.clone(), &shared.dir, nonce)
            .map_err(|e| Error::io("creating a file for a received checkpoint", e))
    }

    /// A replicated log: replaces this node's state with `source`, a checkpoint of the
    /// cluster's (another node's [`Engine::open_checkpoint`]) at an entry this node's log
    /// does not reach or holds under another term. It becomes this node's newest checkpoint
    /// and its log's starting point; the log it replaces is removed, and the rows become
    /// visible at the checkpoint's CSN as one change (transactions reading an older snapshot
    /// keep seeing it). Records this node held beyond its committed watermark are dropped
    /// and left in doubt until the cluster decides them. When the log holds the entry under
    /// the same term, the log already says everything the checkpoint does: it is only
    /// published as the newest checkpoint.
    pub fn install_checkpoint(&self, source: &mut CheckpointFile) -> Result<()> {
        let writer = self.replicated_writer()?;
        let shared = self.shared();
        shared.check_open()?;
        let info = source.info.clone();
        let Some(mark) = info.log.clone() else {
            return Err(Error::InvalidArgument(
                "the checkpoint holds no replicated log position".into(),
            ));
        };
        let csn = info.csn;
        let vfs = shared.config.vfs.as_ref();
        let mut last = shared.checkpoint_lock.lock();
        // Copied and checked before anything changes: a damaged copy changes nothing.
        let tmp = shared.dir.join(format!("checkpoint-{csn:020}.tmp"));
        let io = |what: &str, e| Error::io(format!("{what} the received checkpoint"), e);
        vfs::remove_if_exists(vfs, &tmp).map_err(|e| io("removing an old copy of", e))?;
        let mut file = vfs.open(&tmp, OpenMode::CreateNew).map_err(|e| io("creating", e))?;
        source.copy_into(file.as_mut()).map_err(|e| io("copying", e))?;
        drop(file);
        let copied = checkpoint::load(vfs, &tmp, |_, _, _| {})?;
        if copied.csn != csn || copied.log.as_ref().map(|l| l.index) != Some(mark.index) {
            let _ = vfs.remove_file(&tmp);
            return Err(Error::InvalidArgument(
                "the checkpoint changed while it was copied".into(),
            ));
        }
        let publish = || -> Result<()> {
            let path = shared.dir.join(checkpoint::checkpoint_name(csn));
            vfs.rename(&tmp, &path).map_err(|e| io("publishing", e))?;
            vfs.sync_dir(&shared.dir).map_err(|e| io("publishing", e))
        };
        let base = (mark.term, mark.index, csn);
        writer.locked(|core| -> Result<()> {
            let held = writer.indexed(|log| LogWriter::entry_end(log, mark.index));
            if held.is_some_and(|(term, _)| term as u64 == mark.term) {
                // The log says it all; the checkpoint's entry is committed.
                publish()?;
                shared.commit_index.fetch_max(mark.index, Ordering::SeqCst);
                shared.apply_commit_index(writer);
                return Ok(());
            }
            let committed = shared.durability.durable_csn.load(Ordering::SeqCst);
            if csn < committed {
                // Its rows would go under records this node already holds committed.
                let _ = vfs.remove_file(&tmp);
                return Err(Error::InvalidArgument(format!(
                    "the checkpoint at CSN {csn} is behind this node's committed CSN {committed}"
                )));
            }
            shared.end_leadership();
            let poison = |cause: String| {
                shared.durability.poison(format!("installing a checkpoint: {cause}"));
                Error::Poisoned(cause)
            };
            if held.is_some() {
                // Held under another term: that entry and all after it are not the cluster's.
                writer.truncate_from(core, mark.index).map_err(poison)?;
            }
            // What this node holds beyond its committed watermark is the cluster's to decide.
            shared.discard_above(committed, "a checkpoint of the cluster replaces the log");
            // Published before the log goes, so that a crash in between leaves the checkpoint
            // with a log it covers (recovery then removes that log).
            publish()?;
            writer.reset_to(core, base).map_err(poison)?;
            let mut sequencer = shared.sequencer.lock();
            if csn > committed {
                let path = shared.dir.join(checkpoint::checkpoint_name(csn));
                let horizon = shared.gc_horizon();
                let tables = shared.store.tables();
                for table in &tables {
                    shared.store.clear(table, csn, horizon);
                }
                checkpoint::load(vfs, &path, |keyspace, key, value| {
                    let table = shared.store.table(keyspace);
                    shared.store.install(&table, key, None, csn, Some(Arc::from(value)), horizon);
                })?;
            }
            let mut history = EpochHistory::default();
            for &(epoch, start) in &mark.history {
                history.push_epoch(epoch, start);
            }
            if history.current().is_none() {
                history.push_epoch(0, 1);
            }
            shared.durability.replace_history(history, csn);
            shared.durability.replicated_local(mark.term as Epoch, csn, 0);
            sequencer.next_csn = sequencer.next_csn.max(csn + 1);
            shared.visible.fetch_max(csn, Ordering::SeqCst);
            shared.log_installed.store(mark.index, Ordering::SeqCst);
            shared.commit_index.fetch_max(mark.index, Ordering::SeqCst);
            drop(sequencer);
            shared.apply_commit_index(writer);
            tracing::info!(
                csn,
                index = mark.index,
                term = mark.term,
                rows = info.rows,
                "installed a checkpoint of the cluster in place of the log"
            );
            Ok(())
        })?;
        *last = Some(CheckpointInfo { log: Some(mark), ..info });
        shared.counters.last_checkpoint_csn.store(csn, Ordering::Relaxed);
        shared.remove_obsolete_files(csn)?;
        Ok(())
    }

    /// A replicated log: removes the log's segments whose entries all have index ≤ `upto`,
    /// which must be at most the newest checkpoint's entry (the records are there). Entries
    /// up to `upto` are no longer read back afterwards.
    pub fn purge_log(&self, upto: u64) -> Result<()> {
        let writer = self.replicated_writer()?;
        let shared = self.shared();
        shared.check_open()?;
        let last = shared.checkpoint_lock.lock();
        let Some((info, mark)) = last.as_ref().and_then(|i| i.log.as_ref().map(|m| (i, m))) else {
            return Err(Error::InvalidArgument(format!(
                "purging the log up to entry {upto}: no checkpoint holds its records"
            )));
        };
        if upto > mark.index {
            return Err(Error::InvalidArgument(format!(
                "purging the log up to entry {upto}: the newest checkpoint holds the records \
                 up to entry {} only",
                mark.index
            )));
        }
        let base = (mark.term, mark.index, info.csn);
        let removed =
            writer.locked(|core| writer.purge_upto(core, upto, base)).map_err(|cause| {
                shared.durability.poison(format!("purging the replicated log: {cause}"));
                Error::Poisoned(cause)
            })?;
        if removed > 0 {
            tracing::info!(upto, segments = removed, "purged the replicated log");
        }
        Ok(())
    }

    /// A new session: the handle whose transactions [`Session::sync`] waits for.
    pub fn session(&self) -> Session {
        Session { engine: self.clone(), state: Arc::new(Mutex::new(SessionState::default())) }
    }

    /// Begins a transaction outside any session.
    pub fn begin(&self, options: TxnOptions) -> Result<Transaction> {
        Transaction::begin(self.shared().clone(), None, options)
    }

    /// The status of a transaction (G8).
    pub fn status(&self, id: TxnId) -> TxnStatus {
        self.shared().durability.status(id)
    }

    /// Waits until `id` is durable or lost, up to `timeout`; returns its status then
    /// (`Committed` if the timeout passed first).
    pub fn wait(&self, id: TxnId, timeout: Duration) -> Result<TxnStatus> {
        self.shared().check_open()?;
        self.shared().durability.wait(id, Some(timeout))
    }

    /// The durability levels `id` has reached, in order: `local`, `quorum`, each site, `all`
    /// (a standalone engine reaches them all at once, at its fdatasync). In a replicated log
    /// the levels beyond `quorum` are known where they are computed, on the leader.
    pub fn levels_reached(&self, id: TxnId) -> Vec<DurabilityLevel> {
        self.shared().durability.levels_reached(id)
    }

    /// Waits until `id` reached `level` (or is lost, or this node can no longer tell), up to
    /// `timeout`; returns its status and whether it reached the level.
    pub fn wait_level(
        &self,
        id: TxnId,
        timeout: Duration,
        level: &DurabilityLevel,
    ) -> Result<(TxnStatus, bool)> {
        let shared = self.shared();
        shared.check_open()?;
        let durability = &shared.durability;
        // Only a node that leads learns the levels beyond `quorum`.
        let unknowable = |status| {
            status == TxnStatus::Durable
                && shared.config.replicated_log
                && !shared.leads(shared.epoch())
        };
        let done = |status| match status {
            TxnStatus::Committed | TxnStatus::Durable => {
                durability.reached(id, status, level) || unknowable(status)
            }
            _ => true,
        };
        let status = durability.wait_until(id, Some(timeout), level.clone(), done)?;
        let reached = durability.reached(id, status, level);
        if !reached && unknowable(status) {
            return Err(Error::LevelUnconfirmed { id, level: level.to_string() });
        }
        Ok((status, reached))
    }

    /// A replicated log's leader: the watermarks of `all` and of each site, as CSNs of the
    /// log (see [`DurabilityLevel`]). They only move forward; each is capped at the
    /// committed watermark here, since no level beyond `quorum` holds what is not durable.
    pub fn set_level_marks(&self, all: Csn, sites: &[(Arc<str>, Csn)]) {
        let durability = &self.shared().durability;
        let committed = durability.durable_csn.load(Ordering::SeqCst);
        let sites: Vec<(Arc<str>, Csn)> =
            sites.iter().map(|(name, csn)| (name.clone(), (*csn).min(committed))).collect();
        durability.set_level_marks(all.min(committed), &sites);
    }

    /// The watermarks of `all` and of each site this node knows (0 until computed; a
    /// standalone engine has none).
    pub fn level_marks(&self) -> (Csn, Vec<(Arc<str>, Csn)>) {
        self.shared().durability.level_marks()
    }

    /// Waits until a new snapshot on this node would see `id` (or `id` is lost), up to
    /// `timeout`; returns its status then. A replica that does not lead waits for the cluster
    /// to commit it; a leader or a standalone engine sees its own commits at once. `Unknown`
    /// after the timeout means this node has not received it (or it never existed).
    pub fn wait_known(&self, id: TxnId, timeout: Duration) -> Result<TxnStatus> {
        let shared = self.shared();
        shared.check_open()?;
        let sees_committed = || {
            shared.config.commit_model == CommitModel::EventuallyDurable
                && (!shared.config.replicated_log || shared.leads(shared.epoch()))
        };
        shared.durability.wait_known(id, timeout, sees_committed)
    }

    /// Flushes the log now; returns the durable watermark (epoch and CSN) covering every
    /// commit made before the call. Fails if those commits were lost instead.
    pub fn persist(&self) -> Result<(Epoch, Csn)> {
        self.shared().check_open()?;
        self.shared().durability.persist()
    }

    /// As [`Engine::persist`], waiting at most `timeout`: `None` when the log could not be
    /// made durable in time (a full disk); nothing is lost by giving up.
    pub fn persist_within(&self, timeout: Duration) -> Result<Option<(Epoch, Csn)>> {
        self.shared().check_open()?;
        self.shared().durability.persist_within(timeout)
    }

    /// Subscribes to "durable up to" and "lost from" events.
    pub fn subscribe(&self) -> Subscription {
        self.shared().durability.subscribe()
    }

    /// Takes a checkpoint at the durable watermark now; returns its CSN.
    pub fn checkpoint(&self) -> Result<Csn> {
        self.shared().check_open()?;
        self.shared().checkpoint()
    }

    /// Runs one garbage-collection sweep now.
    pub fn gc(&self) {
        self.shared().gc()
    }

    /// Counters and watermarks.
    pub fn stats(&self) -> EngineStats {
        EngineStats::collect(self.shared())
    }

    /// The current epoch: it changes at a loss and, in a replicated log, with the leader's
    /// term. State a node keeps beside the data (a block of sequence values reserved ahead)
    /// is valid for the epoch it was made in.
    pub fn epoch(&self) -> Epoch {
        self.shared().epoch()
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.shared().dir
    }

    /// The configuration the engine runs with.
    pub fn config(&self) -> &Config {
        &self.shared().config
    }

    /// Flushes what is buffered, stops the background threads and releases the directory.
    /// Other handles and open transactions get [`Error::Closed`] afterwards.
    pub fn close(self) -> Result<()> {
        self.handle.shutdown();
        match self.shared().durability.poisoned() {
            Some(reason) => Err(Error::Poisoned(reason)),
            None => Ok(()),
        }
    }
}

/// A handle that tracks the transactions committed through it, so that [`Session::sync`] can
/// wait for all of them (the paper's connection-level sync).
#[derive(Clone)]
pub struct Session {
    engine: Engine,
    state: Arc<Mutex<SessionState>>,
}

impl Session {
    /// Begins a transaction in this session.
    pub fn begin(&self, options: TxnOptions) -> Result<Transaction> {
        Transaction::begin(self.engine.shared().clone(), Some(self.state.clone()), options)
    }

    /// The id of the session's last finished transaction (committed or aborted).
    pub fn last_txn_id(&self) -> Option<TxnId> {
        self.state.lock().last_id
    }

    /// Returns once every transaction this session committed is durable; fails if any of
    /// them was lost.
    pub fn sync(&self) -> Result<()> {
        while !self.sync_within(Duration::from_secs(3600))? {}
        Ok(())
    }

    /// As [`Session::sync`], waiting at most `timeout`: false when not everything the session
    /// committed was durable by then (nothing is lost by giving up; call again to go on).
    pub fn sync_within(&self, timeout: Duration) -> Result<bool> {
        let deadline = std::time::Instant::now() + timeout;
        let (updates, read_only) = {
            let state = self.state.lock();
            (state.unsynced_updates.clone(), state.last_read_only)
        };
        // Within an epoch, update transactions become durable in CSN order, so the last one
        // of each epoch covers the ones before it (an earlier epoch's is durable or lost);
        // a read-only transaction's id is its read dependency.
        for id in updates.iter().copied().chain(read_only) {
            self.engine.shared().check_open()?;
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.engine.shared().durability.wait(id, Some(left))? {
                TxnStatus::Durable => {}
                TxnStatus::Lost => {
                    return Err(Error::Lost { id, cause: "lost before the session synced".into() })
                }
                TxnStatus::Committed => return Ok(false),
                other => {
                    return Err(Error::InvalidArgument(format!(
                        "transaction {id} is {other}: there is no durability to wait for"
                    )))
                }
            }
        }
        let mut state = self.state.lock();
        // Synced: earlier epochs need no more waiting (keep the newest, still the latest).
        let done = updates.len().saturating_sub(1).min(state.unsynced_updates.len());
        state.unsynced_updates.drain(..done);
        Ok(true)
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }
}

fn validate_config(config: &Config) -> Result<()> {
    let invalid = |what: &str| Err(Error::InvalidArgument(format!("configuration: {what}")));
    if config.vulnerability_window.is_zero() {
        return invalid("vulnerability_window must be positive");
    }
    if config.backlog_bytes_max < 4096 {
        return invalid("backlog_bytes_max must be at least 4096");
    }
    if config.txn_bytes_max > 128 << 20 || config.txn_writes_max > 4 << 20 {
        return invalid("txn_bytes_max may be at most 128 MiB and txn_writes_max at most 4 Mi");
    }
    if config.keyspace_name_bytes_max > u16::MAX as usize
        || config.key_bytes_max > u32::MAX as usize
    {
        return invalid("keyspace_name_bytes_max or key_bytes_max too large for the log format");
    }
    Ok(())
}

fn lock_directory(dir: &Path) -> Result<File> {
    let path = dir.join("LOCK");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::Locked { path: dir.to_path_buf() }),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(Error::io(format!("locking {}", path.display()), e))
        }
    }
}

fn spawn_threads(
    shared: &Arc<Shared>,
    log_dir: PathBuf,
    replicated: Option<ReplicatedStart>,
) -> Result<Vec<JoinHandle<()>>> {
    let config = &shared.config;
    // The writer is owned by `Shared`; its callbacks hold weak references back, so that the
    // engine is freed once its handles and transactions are gone.
    let for_loss = Arc::downgrade(shared);
    let for_checkpoint = Arc::downgrade(shared);
    let writer = Arc::new(LogWriter::new(
        shared.durability.clone(),
        config,
        log_dir,
        Box::new(move |report| match for_loss.upgrade() {
            Some(shared) => shared.lose_suffix(report),
            None => Err("the engine is gone".into()),
        }),
        Box::new(move || {
            if let Some(shared) = for_checkpoint.upgrade() {
                shared.background.lock().checkpoint_due = true;
                shared.background_wake.notify_all();
            }
        }),
        replicated,
    ));
    assert!(shared.writer.set(writer.clone()).is_ok(), "the writer is set once");
    let spawn_error = |e| Error::io("starting a background thread", e);
    let writer = std::thread::Builder::new()
        .name("kiln-log-writer".into())
        .spawn(move || essential("the log writer", || writer.run()))
        .map_err(spawn_error)?;
    let durability = shared.durability.clone();
    let notifier = std::thread::Builder::new()
        .name("kiln-notifier".into())
        .spawn(move || essential("the notifier", || durability.run_notifier()))
        .map_err(spawn_error)?;
    let background = shared.clone();
    let background = std::thread::Builder::new()
        .name("kiln-checkpointer".into())
        .spawn(move || essential("the checkpointer", || background.background_loop()))
        .map_err(spawn_error)?;
    Ok(vec![writer, notifier, background])
}

/// Runs the body of a thread durability depends on. If it panics, no later commit could be
/// made durable, woken or checkpointed as promised, so the process stops (a restart recovers
/// everything durable) rather than leave clients waiting on a dead thread.
fn essential(what: &str, body: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).is_err() {
        crate::invariant_violated(format_args!("{what} thread panicked"));
    }
}

/// Exposes a status computation for a state snapshot (used by stats).
pub(crate) fn durable_state_summary(state: &DurableState) -> (Epoch, Csn, Csn) {
    (state.epoch(), state.durable, state.last_committed)
}

/// Reports an id's status as the engine's kind, for the aborted ids of transactions.
pub(crate) fn aborted_id(epoch: Epoch, snapshot: Csn) -> TxnId {
    TxnId { epoch, csn: snapshot, kind: TxnKind::Aborted }
}
