//! The log writer: turns buffered commit records into synced log frames, on its own thread
//! or, for a safe commit that finds no flush under way, on the committing thread itself.
//!
//! Each round it takes *everything* buffered (group commit: whatever accumulated while the
//! previous fsync ran goes out in the next one), writes it as one or more frames to the
//! current segment, calls fdatasync, and advances the durable watermark. Failures split two
//! ways:
//! - **No space** (ENOSPC on write): the segment is cut back to its length before the write
//!   and the same batch is retried with back-off. Nothing is lost; commits pile up against the
//!   backlog bound and are slowed, then refused, until space returns.
//! - **Anything else** (an fsync error, an unrecoverable write error): what was written can no
//!   longer be trusted, so the non-durable suffix is lost. The engine's loss handler drops it
//!   and records a new epoch; the writer abandons the segment and starts a new one.
//!
//! **Preallocation.** A flush that appends to a file makes its fdatasync commit the new file
//! size too (a journal write on top of the data); one that overwrites allocated blocks does
//! not. So the log is written into space that was zero-filled (written, not just reserved —
//! an unwritten extent costs the same metadata update on first write) ahead of it: a new
//! segment starts with its first 64 KiB zeroed, and the writer thread extends the zeroed space,
//! doubling it up to `log_preallocate_bytes` at a time, whenever less than half a step is left
//! ahead of the log. It does that with its own file handle and outside the flush lock, so
//! flushes never wait for it; the two only ever write disjoint ranges of the file (flushes below
//! the zeroed end, the extension above it). A flush that outruns the zeroed space appends as
//! before. Recovery treats a zeroed frame header followed only by zeros as the end of the log
//! (`docs/storage-format.md` has the torn-write argument).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::format::{self, FRAME_BODY_BYTES_TARGET};
use super::replicated::{
    EntryLocation, EntryPayload, LogEntry, LogLag, LogPosition, RecordBatch, Shipper,
};
use super::vfs::{self, is_no_space, OpenMode, Vfs, VfsFile};
use super::{Durability, LogState};
use crate::config::Config;
use crate::id::{Csn, Epoch};
use parking_lot::{Mutex, RwLock};

/// File name of the log segment of `epoch` whose first record is `first_csn` and, in a
/// replicated log, whose first entry is `first_index` (0 in a standalone log). A replicated
/// log continues its epoch across a reopen, so the entry index is what keeps a new segment's
/// name from being an old one's when no record was written in between.
pub fn segment_name(epoch: Epoch, first_csn: Csn, first_index: u64) -> String {
    match first_index {
        0 => format!("{epoch:010}-{first_csn:020}.log"),
        index => format!("{epoch:010}-{first_csn:020}-{index:020}.log"),
    }
}

/// Parses a segment file name into (epoch, first CSN, first entry index or 0).
pub fn parse_segment_name(name: &str) -> Option<(Epoch, Csn, u64)> {
    let stem = name.strip_suffix(".log")?;
    let mut parts = stem.split('-');
    let (epoch, csn) = (parts.next()?, parts.next()?);
    let index = parts.next();
    if epoch.len() != 10 || csn.len() != 20 || parts.next().is_some() {
        return None;
    }
    let index = match index {
        None => 0,
        Some(index) if index.len() == 20 => index.parse().ok().filter(|&i| i > 0)?,
        Some(_) => return None,
    };
    Some((epoch.parse().ok()?, csn.parse().ok()?, index))
}

/// Records taken from the buffer and not yet durable.
pub(crate) struct Batch {
    pub epoch: Epoch,
    pub first_csn: Csn,
    pub count: u32,
    pub records: Vec<u8>,
}

/// What the engine is told when the non-durable suffix is lost.
pub(crate) struct LossReport {
    pub epoch: Epoch,
    /// Everything of `epoch` up to here stays durable; everything after is lost.
    pub durable: Csn,
    /// The records of the failed batch (the buffer's records the handler takes itself).
    pub failed_records: Vec<u8>,
    pub cause: String,
}

enum WriteFailure {
    NoSpace(String),
    Lost(String),
}

struct Segment {
    file: Box<dyn VfsFile>,
    space: Arc<SegmentSpace>,
}

/// The zero-filled space of a segment ahead of its frames, shared by the flusher (which
/// writes frames below the zeroed end) and the writer thread (which extends it).
struct SegmentSpace {
    path: Arc<PathBuf>,
    /// A copy of `state.zeroed` the flusher reads without the lock. Only the flusher lowers it
    /// (when it cuts the file back), so the flusher's own reads are never stale downwards.
    zeroed_hint: AtomicU64,
    /// A zero fill was asked of the writer thread and has not run yet.
    fill_requested: AtomicBool,
    /// Where the next frame goes: the end of the frames written so far (written by the
    /// flusher only; the zero fill reads it to size its step).
    frames_end: AtomicU64,
    state: Mutex<SpaceState>,
}

struct SpaceState {
    /// Bytes `0..zeroed` of the file are written: frames, then zeros.
    zeroed: u64,
    /// The writer thread's own handle of the file, opened at its first extension.
    file: Option<Box<dyn VfsFile>>,
    /// No more frames will be written here (rotated or abandoned): stop extending.
    retired: bool,
    /// The last extension failed (a full disk, an I/O error) at this time; wait before trying
    /// again, since flushes continue by appending meanwhile.
    failed_at: Option<Instant>,
}

/// The first zero-filled space of a new segment.
const ZERO_FILL_FIRST: u64 = 64 << 10;
/// How long after a failed zero fill the next is attempted.
const ZERO_FILL_RETRY: Duration = Duration::from_secs(1);

/// How many bytes the next zero fill of a segment with `zeroed` bytes adds: as much as it
/// has (doubling), at least the first step, at most `max`. A fill is due once less than half
/// a step is left ahead of the log, so an idle segment stays small and a busy one keeps
/// between half a step and a step and a half of zeroed space ahead.
fn zero_fill_step(zeroed: u64, max: u64) -> u64 {
    zeroed.max(ZERO_FILL_FIRST).min(max)
}

/// What the writer thread is woken for.
#[derive(Debug, PartialEq, Eq)]
enum Work {
    Flush,
    ZeroFill,
    Stop,
}

/// What only the current flusher may touch: the open segment, and a batch that did not fit on
/// a full disk and is being retried.
#[derive(Default)]
pub(crate) struct FlushCore {
    segment: Option<Segment>,
    pending: Option<Batch>,
}

/// A replicated log's index of what is on disk. It changes only under the flush lock (after
/// a write is synced, or a cut), and has a lock of its own so that readers (the Raft commit
/// that moves the `quorum` watermark, reads of entries for replication, lag) need not wait
/// for a flush's fdatasync.
#[derive(Default)]
pub(crate) struct LogIndex {
    /// Where each entry on disk is, in index order.
    entries: Vec<EntryLocation>,
    /// The CSN of the next record the log will hold (its epoch is the last entry's term).
    next_csn: Csn,
    /// The entry a checkpoint stands at, as (term, index, CSN of its last record): the log
    /// need not hold it or any before it, and when it holds no entry after it, the next
    /// entry follows it.
    base: Option<(u64, u64, Csn)>,
}

/// Frames of consecutive entries of one epoch, written to one segment: where they start
/// (epoch, first CSN, first index), the frames, and each entry's (term, index, offset, length)
/// within them.
struct Run {
    at: (Epoch, Csn, u64),
    frames: Vec<u8>,
    located: Vec<Located>,
}

/// An entry's place within a run's frames.
struct Located {
    term: u64,
    index: u64,
    first_csn: Csn,
    csn_end: Csn,
    start: usize,
    len: usize,
}

/// Why entries were not appended to a replicated log.
pub(crate) enum EntriesRefused {
    /// They do not follow the log; nothing was written.
    DoNotFollow(String),
    /// Writing or syncing failed: the log can no longer be trusted.
    Io(String),
}

/// Where a replicated log stands when the engine opens (from recovery).
pub(crate) struct ReplicatedStart {
    pub entries: Vec<EntryLocation>,
    pub next_csn: Csn,
    pub base: Option<(u64, u64, Csn)>,
}

/// How a flush round ended.
#[derive(Debug, PartialEq, Eq)]
enum Round {
    /// Nothing was buffered.
    Idle,
    /// A batch became durable.
    Done,
    /// A batch (and whatever followed it) was lost, and the loss handled.
    LossHandled,
    /// The disk is full; the batch is kept for a retry.
    Stalled,
    /// Durability is poisoned; stop.
    Stop,
}

/// The log writer. Flushes are serialized by the flush lock (`core`): the writer thread
/// takes it for timed flushes, `persist()`, back-pressure and retries, and a safe committer
/// that finds it free takes it to flush its own commit at once (a *leader* flush, sparing two
/// thread hand-offs). Whoever holds it takes the whole buffer, so batches stay in CSN order.
/// A replicated log ships instead of writing, under a lock of its own (`ship_lock`): the
/// cluster's appends hold the flush lock through their fdatasync, and the next batch must not
/// wait for that.
pub(crate) struct LogWriter {
    durability: Arc<Durability>,
    vfs: Arc<dyn Vfs>,
    log_dir: PathBuf,
    segment_bytes_max: u64,
    preallocate_bytes: u64,
    flush_after: Duration,
    timed_flush: bool,
    checkpoint_log_bytes: u64,
    /// Drops the lost suffix and opens a new epoch; `Err` poisons durability.
    on_loss: Box<dyn Fn(LossReport) -> Result<(), String> + Send + Sync>,
    /// Called when enough log was written that a checkpoint is due.
    on_checkpoint_due: Box<dyn Fn() + Send + Sync>,
    core: Mutex<FlushCore>,
    /// A replicated log: its index (see [`LogIndex`]). Lock order: the flush lock first.
    index: RwLock<LogIndex>,
    /// The current segment's space, for the writer thread's zero fills.
    current_space: Mutex<Option<Arc<SegmentSpace>>>,
    /// A replicated log: batches are shipped, not written (see `durability::replicated`).
    replicated: bool,
    shipper: std::sync::OnceLock<Shipper>,
    /// A replicated log: keeps ship rounds in CSN order. Not the flush lock, which an append
    /// holds through its fdatasync: the next batch ships while the last one is being written.
    ship_lock: Mutex<()>,
}

const STALL_RETRY: Duration = Duration::from_millis(20);

impl LogWriter {
    /// A writer for the segments in `log_dir`, with the timing and sizes of `config`.
    pub fn new(
        durability: Arc<Durability>,
        config: &Config,
        log_dir: PathBuf,
        on_loss: Box<dyn Fn(LossReport) -> Result<(), String> + Send + Sync>,
        on_checkpoint_due: Box<dyn Fn() + Send + Sync>,
        replicated: Option<ReplicatedStart>,
    ) -> LogWriter {
        let core = FlushCore::default();
        let mut index = LogIndex::default();
        if let Some(start) = &replicated {
            index.entries = start.entries.clone();
            index.next_csn = start.next_csn;
            index.base = start.base;
        }
        LogWriter {
            durability,
            vfs: config.vfs.clone(),
            log_dir,
            segment_bytes_max: config.segment_bytes_max,
            preallocate_bytes: config.log_preallocate_bytes,
            flush_after: config.vulnerability_window / 2,
            timed_flush: config.timed_flush,
            checkpoint_log_bytes: config.checkpoint_log_bytes,
            on_loss,
            on_checkpoint_due,
            core: Mutex::new(core),
            index: RwLock::new(index),
            current_space: Mutex::new(None),
            replicated: replicated.is_some(),
            shipper: std::sync::OnceLock::new(),
            ship_lock: Mutex::new(()),
        }
    }

    /// The writer thread: runs until close has been requested and everything buffered is
    /// flushed (or cannot be).
    pub fn run(&self) {
        loop {
            match self.wait_for_work() {
                Work::Stop => return,
                Work::ZeroFill => self.zero_fill(),
                Work::Flush if self.replicated => {
                    if self.durability.poisoned().is_some() {
                        return;
                    }
                    self.ship_round(&self.ship_lock.lock());
                }
                Work::Flush => {
                    let mut core = self.core.lock();
                    if self.durability.poisoned().is_some()
                        || self.flush_round(&mut core) == Round::Stop
                    {
                        return;
                    }
                }
            }
        }
    }

    /// A safe committer's offer to flush its own commit `csn` of `epoch` now. Does nothing if
    /// a flush is under way (its flusher, or the writer thread after it, covers the commit),
    /// if the commit is already durable, or while the disk is full (the writer retries).
    pub fn lead(&self, epoch: Epoch, csn: Csn) {
        let d = &self.durability;
        let needless = || d.epoch() != epoch || d.durable_csn.load(Ordering::SeqCst) >= csn;
        // Check before taking the flush lock: a safe read-only commit whose reads are already
        // durable (the common case) must not hold the lock a safe update needs for its flush.
        if needless() {
            return;
        }
        if self.replicated {
            // A ship under way, or the writer thread after it, covers the commit.
            if let Some(order) = self.ship_lock.try_lock() {
                if d.poisoned().is_none() {
                    self.ship_round(&order);
                }
            }
            return;
        }
        let Some(mut core) = self.core.try_lock() else { return };
        if needless() || core.pending.is_some() || d.poisoned().is_some() {
            return;
        }
        self.flush_round(&mut core);
    }

    /// Waits until there is something to flush and a reason to flush it, or a zero fill to
    /// do.
    fn wait_for_work(&self) -> Work {
        let durability = &self.durability;
        let mut log = durability.log.lock();
        loop {
            if self.replicated && (log.shutdown || self.shipper.get().is_none()) {
                // Records not shipped by now were never written anywhere: not durable.
                if log.shutdown {
                    return Work::Stop;
                }
                durability.writer_wake.wait(&mut log);
                continue;
            }
            let stalled = log.stalled.is_some();
            if log.count == 0 && !stalled {
                log.persist_requested = false;
                if log.shutdown {
                    return Work::Stop;
                }
                if std::mem::take(&mut log.zero_fill_wanted) {
                    return Work::ZeroFill;
                }
                durability.writer_wake.wait(&mut log);
                continue;
            }
            if stalled && !log.shutdown {
                // Back off before retrying a batch that did not fit, unless woken for shutdown.
                durability.writer_wake.wait_for(&mut log, STALL_RETRY);
                return Work::Flush;
            }
            if self.flush_now(&log) {
                return Work::Flush;
            }
            if std::mem::take(&mut log.zero_fill_wanted) {
                return Work::ZeroFill;
            }
            let oldest = log.oldest.expect("buffered records have an age");
            if self.timed_flush {
                durability.writer_wake.wait_until(&mut log, oldest + self.flush_after);
            } else {
                durability.writer_wake.wait(&mut log);
            }
        }
    }

    fn flush_now(&self, log: &LogState) -> bool {
        log.safe_waiters > 0
            || log.persist_requested
            || log.shutdown
            || log.backlog_bytes >= self.durability.backlog_bytes_max / 2
            || log.buffer.len() >= FRAME_BODY_BYTES_TARGET
            || (self.timed_flush
                && log.oldest.is_some_and(|oldest| oldest.elapsed() >= self.flush_after))
    }

    /// Takes everything buffered (after a stalled batch, if any), writes it and syncs.
    ///
    /// After a full disk, the batch waiting for space is tried whole first; if it still does
    /// not fit, its first frame's worth alone, synced on its own, and on success the rest
    /// (whole again). So commits resume as soon as one frame fits, not only once the whole
    /// backlog does.
    fn flush_round(&self, core: &mut FlushCore) -> Round {
        if self.replicated {
            return self.ship_round(&self.ship_lock.lock());
        }
        let retrying = core.pending.is_some();
        let Some(batch) = self.take_batch(core) else { return Round::Idle };
        match self.flush_batch(core, batch, None) {
            Round::Stalled if retrying => {}
            other => return other,
        }
        loop {
            let mut batch = core.pending.take().expect("a stalled round keeps its batch");
            let Some(rest) = split_batch(&mut batch, FRAME_BODY_BYTES_TARGET) else {
                core.pending = Some(batch);
                return Round::Stalled;
            };
            match self.flush_batch(core, batch, Some(&rest)) {
                Round::Done => match self.flush_batch(core, rest, None) {
                    Round::Stalled => continue,
                    other => return other,
                },
                Round::Stalled => {
                    let pending = core.pending.as_mut().expect("kept by the stalled round");
                    pending.count += rest.count;
                    pending.records.extend_from_slice(&rest.records);
                    return Round::Stalled;
                }
                other => return other,
            }
        }
    }

    /// Writes and syncs one batch; on a full disk keeps it as the pending batch. `rest` is
    /// what follows it when a stalled batch is written in pieces: lost with it on a failure.
    fn flush_batch(&self, core: &mut FlushCore, batch: Batch, rest: Option<&Batch>) -> Round {
        let started = Instant::now();
        match self.write_and_sync(core, &batch) {
            Ok(written) => {
                self.made_durable(core, batch, written, started);
                Round::Done
            }
            Err(WriteFailure::NoSpace(cause)) => {
                let mut log = self.durability.log.lock();
                if log.stalled.is_none() {
                    tracing::warn!(%cause, "log write stalled; retrying");
                    self.durability.counters.stalls.fetch_add(1, Ordering::Relaxed);
                }
                log.stalled = Some(cause);
                self.durability.backlog_drained.notify_all();
                if log.shutdown {
                    drop(log);
                    self.durability.poison("closed while the log could not be written".into());
                    return Round::Stop;
                }
                core.pending = Some(batch);
                Round::Stalled
            }
            Err(WriteFailure::Lost(cause)) => {
                tracing::error!(%cause, epoch = batch.epoch, from = batch.first_csn,
                    "log write failed; losing the non-durable suffix");
                self.retire_segment(core);
                self.durability.log.lock().stalled = None;
                let mut failed_records = batch.records;
                if let Some(rest) = rest {
                    failed_records.extend_from_slice(&rest.records);
                }
                let report = LossReport {
                    epoch: batch.epoch,
                    durable: batch.first_csn - 1,
                    failed_records,
                    cause,
                };
                if let Err(reason) = (self.on_loss)(report) {
                    self.durability.poison(reason);
                    return Round::Stop;
                }
                Round::LossHandled
            }
        }
    }

    /// The stalled batch, if any, extended with everything buffered since.
    fn take_batch(&self, core: &mut FlushCore) -> Option<Batch> {
        let mut log = self.durability.log.lock();
        log.persist_requested = false;
        let pending = core.pending.take();
        if log.count == 0 {
            return pending;
        }
        let taken = take_buffer(&mut log);
        Some(match pending {
            Some(mut batch) if batch.epoch == taken.epoch => {
                assert_eq!(batch.first_csn + batch.count as u64, taken.first_csn);
                batch.count += taken.count;
                batch.records.extend_from_slice(&taken.records);
                batch
            }
            _ => taken,
        })
    }

    fn made_durable(&self, core: &mut FlushCore, batch: Batch, written: u64, started: Instant) {
        let micros = started.elapsed().as_micros() as u64;
        let d = &self.durability;
        let c = &d.counters;
        c.flushes.fetch_add(1, Ordering::Relaxed);
        c.flushed_txns.fetch_add(batch.count as u64, Ordering::Relaxed);
        c.flushed_bytes.fetch_add(written, Ordering::Relaxed);
        c.flush_micros_total.fetch_add(micros, Ordering::Relaxed);
        c.flush_micros_max.fetch_max(micros, Ordering::Relaxed);
        let bucket = (31 - (batch.count.max(1)).leading_zeros()).min(15) as usize;
        c.group_size_log2[bucket].fetch_add(1, Ordering::Relaxed);
        {
            let mut log = d.log.lock();
            if log.epoch == batch.epoch {
                log.backlog_bytes -= batch.records.len() as u64;
            }
            log.stalled = None;
        }
        d.backlog_drained.notify_all();
        d.advance_durable(batch.epoch, batch.first_csn + batch.count as u64 - 1);
        if core
            .segment
            .as_ref()
            .is_some_and(|s| s.space.frames_end.load(Ordering::Acquire) >= self.segment_bytes_max)
        {
            self.retire_segment(core); // the next flush starts a new segment
        }
        let since = c.log_bytes_since_checkpoint.fetch_add(written, Ordering::Relaxed) + written;
        if self.checkpoint_log_bytes > 0 && since >= self.checkpoint_log_bytes {
            (self.on_checkpoint_due)();
        }
    }

    /// Writes the batch as frames and syncs; returns the bytes written.
    fn write_and_sync(&self, core: &mut FlushCore, batch: &Batch) -> Result<u64, WriteFailure> {
        let frames = encode_frames(batch);
        let at = (batch.epoch, batch.first_csn, 0);
        self.write_frames(core, at, &frames).map(|_| frames.len() as u64)
    }

    /// Writes `frames` (of `epoch`, the first record at `first_csn`) to the current segment,
    /// starting one if there is none, and syncs; returns the segment and the offset written.
    fn write_frames(
        &self,
        core: &mut FlushCore,
        (epoch, first_csn, first_index): (Epoch, Csn, u64),
        frames: &[u8],
    ) -> Result<(Arc<PathBuf>, u64), WriteFailure> {
        if core.segment.is_none() {
            core.segment = Some(self.create_segment(epoch, first_csn, first_index)?);
        }
        let segment = core.segment.as_mut().expect("segment just ensured");
        let space = segment.space.clone();
        let before = space.frames_end.load(Ordering::Acquire);
        let end = before + frames.len() as u64;
        // Below the zeroed end the flusher owns the file; past it, the zero fill may be writing,
        // so a flush that outruns the zeroed space appends under the space lock.
        let outran = (end > space.zeroed_hint.load(Ordering::Acquire)).then(|| space.state.lock());
        let written = vfs::write_all_at(segment.file.as_mut(), frames, before);
        if let Err(e) = written {
            // Cut back to the last good frame (this drops the zeroed space after it as well).
            let mut state = outran.unwrap_or_else(|| space.state.lock());
            let cut_back = segment.file.set_len(before);
            state.zeroed = before;
            space.zeroed_hint.store(before, Ordering::Release);
            return Err(match (is_no_space(&e), cut_back) {
                (true, Ok(())) => WriteFailure::NoSpace(format!("log write: {e}")),
                (_, Ok(())) => WriteFailure::Lost(format!("log write: {e}")),
                (_, Err(t)) => WriteFailure::Lost(format!("log write: {e}; truncate: {t}")),
            });
        }
        space.frames_end.store(end, Ordering::Release);
        let zeroed = match outran {
            Some(mut state) => {
                state.zeroed = state.zeroed.max(end);
                space.zeroed_hint.store(state.zeroed, Ordering::Release);
                state.zeroed
            }
            None => space.zeroed_hint.load(Ordering::Acquire),
        };
        if self.preallocate_bytes > 0
            && end < self.segment_bytes_max
            && zeroed - end < zero_fill_step(zeroed, self.preallocate_bytes) / 2
            && !space.fill_requested.swap(true, Ordering::AcqRel)
        {
            self.durability.log.lock().zero_fill_wanted = true;
            self.durability.writer_wake.notify_one();
        }
        segment.file.sync_data().map_err(|e| WriteFailure::Lost(format!("log fsync: {e}")))?;
        Ok((space.path.clone(), before))
    }

    /// Sets where a replicated log's batches go; false if one was set already.
    pub fn set_shipper(&self, shipper: Shipper) -> bool {
        let set = self.shipper.set(shipper).is_ok();
        self.durability.wake_writer();
        set
    }

    /// A replicated log's flush round: hands everything buffered to the shipper, in CSN order
    /// (`ship_lock`, held by the caller, keeps rounds in order). It becomes durable when the
    /// cluster writes it back through [`LogWriter::write_entries`]. Nothing is written here,
    /// so nothing waits for a round: a replicated log never has a batch pending a retry.
    fn ship_round(&self, _order: &parking_lot::MutexGuard<'_, ()>) -> Round {
        let Some(shipper) = self.shipper.get() else { return Round::Idle };
        let batch = {
            let mut log = self.durability.log.lock();
            log.persist_requested = false;
            if log.count == 0 {
                return Round::Idle;
            }
            take_buffer(&mut log)
        };
        tracing::trace!(target: "kiln_latency", first_csn = batch.first_csn, "ship");
        shipper(RecordBatch {
            epoch: batch.epoch,
            first_csn: batch.first_csn,
            count: batch.count,
            records: Arc::from(batch.records),
        });
        Round::Done
    }

    /// Appends `entries` to a replicated log with one write and one fdatasync per epoch they
    /// span. An entry's epoch is its term: entries must follow the last one on disk (index +
    /// 1, same or later term), and records the last record on disk (CSN + 1, of the entry's
    /// term). Returns the bytes written and the epochs the entries began, as (epoch, first
    /// CSN). On an I/O error nothing of this call may be trusted: the error is returned and
    /// the caller must stop using the log.
    pub fn write_entries(
        &self,
        core: &mut FlushCore,
        entries: &[LogEntry],
    ) -> Result<(u64, Vec<(Epoch, Csn)>), EntriesRefused> {
        let Some(first) = entries.first() else { return Ok((0, Vec::new())) };
        let flush_first = first.index;
        // Only the flush lock's holder changes the index: what is read here stays true.
        let (follows, mut epoch, mut next_csn) = {
            let index = self.index.read();
            let follows = match (index.entries.last(), index.base) {
                (Some(last), _) => last.index + 1,
                (None, Some((_, base, _))) => base + 1,
                (None, None) => first.index,
            };
            (follows, Self::last_term(&index), index.next_csn)
        };
        let mut began = Vec::new();
        // Frames of one epoch go to one segment; an entry of a later epoch starts a new one.
        let mut runs: Vec<Run> = Vec::new();
        for (expected_index, entry) in (follows..).zip(entries) {
            let term = match Epoch::try_from(entry.term) {
                Ok(term) if term >= epoch => term,
                _ => {
                    return Err(EntriesRefused::DoNotFollow(format!(
                        "entry ({}, {}) has a term before the log's last term {epoch} or beyond \
                         2^32-1",
                        entry.term, entry.index
                    )))
                }
            };
            if entry.index != expected_index {
                return Err(EntriesRefused::DoNotFollow(format!(
                    "entry ({}, {}) does not follow the log's last index {}",
                    entry.term,
                    entry.index,
                    expected_index - 1
                )));
            }
            let tag = Some((entry.term, entry.index));
            if let EntryPayload::Records(batch) = &entry.payload {
                // Term 0 is the cluster's setup, before any leader: it holds no records.
                if batch.count == 0
                    || batch.first_csn != next_csn
                    || batch.epoch != term
                    || term == 0
                {
                    return Err(EntriesRefused::DoNotFollow(format!(
                        "records of epoch {} from CSN {} in an entry of term {term} do not \
                         follow the log's CSN {}",
                        batch.epoch,
                        batch.first_csn,
                        next_csn - 1
                    )));
                }
            }
            if term > epoch {
                began.push((term, next_csn));
                epoch = term;
            }
            if runs.last().is_none_or(|r| r.at.0 != epoch) {
                let at = (epoch, next_csn, entry.index);
                runs.push(Run { at, frames: Vec::new(), located: Vec::new() });
            }
            let run = runs.last_mut().expect("just pushed");
            let start = run.frames.len();
            let first_csn = next_csn;
            match &entry.payload {
                EntryPayload::Records(batch) => {
                    encode_frames_into(&mut run.frames, batch, flush_first, tag);
                    next_csn = batch.last_csn() + 1;
                }
                EntryPayload::Opaque(bytes) => {
                    if bytes.len() > format::FRAME_BODY_BYTES_MAX as usize {
                        return Err(EntriesRefused::DoNotFollow(format!(
                            "an entry of {} bytes is too large",
                            bytes.len()
                        )));
                    }
                    let frames = &mut run.frames;
                    format::encode_frame(frames, epoch, flush_first, next_csn, 0, tag, bytes);
                }
            }
            run.located.push(Located {
                term: entry.term,
                index: entry.index,
                first_csn,
                csn_end: next_csn,
                start,
                len: run.frames.len() - start,
            });
        }
        let mut written = 0;
        for Run { at, frames, located } in runs {
            let run_epoch = at.0;
            if core.segment.as_ref().is_some_and(|_| run_epoch != self.last_term_now()) {
                self.retire_segment(core);
            }
            let (segment, offset) = self.write_frames(core, at, &frames).map_err(|e| match e {
                WriteFailure::NoSpace(cause) | WriteFailure::Lost(cause) => {
                    EntriesRefused::Io(cause)
                }
            })?;
            let now = Instant::now();
            let mut index = self.index.write();
            for l in located {
                let before = index.entries.last().map_or(0, |e| e.bytes_end);
                index.entries.push(EntryLocation {
                    term: l.term,
                    index: l.index,
                    first_csn: l.first_csn,
                    csn_end: l.csn_end,
                    segment: segment.clone(),
                    offset: offset + l.start as u64,
                    len: l.len as u64,
                    bytes_end: before + l.len as u64,
                    written_at: Some(now),
                });
                index.next_csn = l.csn_end;
            }
            drop(index);
            written += frames.len() as u64;
            if core.segment.as_ref().is_some_and(|s| {
                s.space.frames_end.load(Ordering::Acquire) >= self.segment_bytes_max
            }) {
                self.retire_segment(core);
            }
        }
        debug_assert_eq!(self.index.read().next_csn, next_csn);
        let c = &self.durability.counters;
        c.flushes.fetch_add(1, Ordering::Relaxed);
        c.flushed_bytes.fetch_add(written, Ordering::Relaxed);
        let since = c.log_bytes_since_checkpoint.fetch_add(written, Ordering::Relaxed) + written;
        if self.checkpoint_log_bytes > 0 && since >= self.checkpoint_log_bytes {
            (self.on_checkpoint_due)();
        }
        Ok((written, began))
    }

    /// Runs `f` with the flush lock held: nothing is shipped or appended meanwhile. Lock order:
    /// the flush lock before the commit lock.
    pub fn locked<R>(&self, f: impl FnOnce(&mut FlushCore) -> R) -> R {
        f(&mut self.core.lock())
    }

    /// Cuts a replicated log back to the entries with index < `first_cut`: removes the segments
    /// after the cut and shortens the one it falls in (removing it if the cut is at its first
    /// entry), each made durable before this returns. Returns the records cut, as the CSN
    /// after the last one kept, or `None` if nothing was cut. The log's epoch becomes the last
    /// kept entry's term (0 when nothing is kept).
    pub fn truncate_from(
        &self,
        core: &mut FlushCore,
        first_cut: u64,
    ) -> Result<Option<Csn>, String> {
        let (keep, cut, cut_entries) = {
            let index = self.index.read();
            let keep = index.entries.partition_point(|e| e.index < first_cut);
            let Some(cut) = index.entries.get(keep).cloned() else { return Ok(None) };
            (keep, cut, index.entries[keep..].to_vec())
        };
        self.retire_segment(core);
        let segments = segments_of(&cut_entries);
        let io = |what: &str, path: &Path, e: io::Error| format!("{what} {}: {e}", path.display());
        // From the end backward, so that a crash midway leaves a shorter log, never a hole.
        for path in segments.iter().rev() {
            if **path == *cut.segment && cut.offset > 0 {
                let mut file = self
                    .vfs
                    .open(path.as_path(), OpenMode::Write)
                    .map_err(|e| io("opening", path, e))?;
                file.set_len(cut.offset)
                    .and_then(|()| file.sync_data())
                    .map_err(|e| io("truncating", path, e))?;
            } else {
                self.vfs.remove_file(path.as_path()).map_err(|e| io("removing", path, e))?;
            }
        }
        self.vfs.sync_dir(&self.log_dir).map_err(|e| io("syncing", &self.log_dir, e))?;
        let mut index = self.index.write();
        index.entries.truncate(keep);
        index.next_csn = cut.first_csn;
        Ok(Some(cut.first_csn))
    }

    /// Removes the segments whose entries all have index ≤ `upto` (never the one being
    /// written): the log no longer needs them, a checkpoint at `base` or later holding their
    /// records. Returns how many segments were removed.
    pub fn purge_upto(
        &self,
        core: &mut FlushCore,
        upto: u64,
        base: (u64, u64, Csn),
    ) -> Result<usize, String> {
        let current = core.segment.as_ref().map(|s| s.space.path.clone());
        let (doomed, keep_from) = {
            let index = self.index.read();
            let mut doomed: Vec<Arc<PathBuf>> = Vec::new();
            let mut keep_from = 0;
            for (i, e) in index.entries.iter().enumerate() {
                let next_in_other = index.entries.get(i + 1).is_none_or(|n| n.segment != e.segment);
                if e.index > upto || current.as_ref().is_some_and(|c| **c == *e.segment) {
                    break;
                }
                if next_in_other {
                    // The segment's last entry is within the purge: all of it goes.
                    doomed.push(e.segment.clone());
                    keep_from = i + 1;
                }
            }
            (doomed, keep_from)
        };
        let io = |what: &str, path: &Path, e: io::Error| format!("{what} {}: {e}", path.display());
        // From the oldest on, so that a crash midway leaves a log that starts later, never
        // one with a hole.
        for path in &doomed {
            self.vfs.remove_file(path.as_path()).map_err(|e| io("removing", path, e))?;
        }
        if !doomed.is_empty() {
            self.vfs.sync_dir(&self.log_dir).map_err(|e| io("syncing", &self.log_dir, e))?;
        }
        let mut index = self.index.write();
        index.entries.drain(..keep_from);
        if index.base.is_none_or(|b| b.1 < base.1) {
            index.base = Some(base);
        }
        Ok(doomed.len())
    }

    /// Replaces the whole log with a checkpoint's position `base` (term, index, CSN): removes
    /// every segment; the next entry follows `base`.
    pub fn reset_to(&self, core: &mut FlushCore, base: (u64, u64, Csn)) -> Result<(), String> {
        self.retire_segment(core);
        let doomed = segments_of(&self.index.read().entries);
        let io = |what: &str, path: &Path, e: io::Error| format!("{what} {}: {e}", path.display());
        for path in &doomed {
            self.vfs.remove_file(path.as_path()).map_err(|e| io("removing", path, e))?;
        }
        self.vfs.sync_dir(&self.log_dir).map_err(|e| io("syncing", &self.log_dir, e))?;
        let mut index = self.index.write();
        index.entries.clear();
        index.base = Some(base);
        index.next_csn = base.2 + 1;
        Ok(())
    }

    /// The term of the entry at `index` and the CSN of the last record up to and including
    /// it, if the entry is on disk (or is the checkpoint's base entry).
    pub fn entry_end(log: &LogIndex, index: u64) -> Option<(Epoch, Csn)> {
        match log.entries.binary_search_by_key(&index, |e| e.index) {
            Ok(at) => {
                let e = &log.entries[at];
                Some((e.term as Epoch, e.csn_end - 1))
            }
            Err(_) => match log.base {
                Some((term, base, csn)) if base == index => Some((term as Epoch, csn)),
                _ => None,
            },
        }
    }

    /// How far a log whose last entry is `index` (0: none) is behind this one, if `index` is
    /// at most this log's last entry on disk.
    pub fn lag_behind(log: &LogIndex, index: u64) -> Option<LogLag> {
        let last = log.entries.last()?;
        if index > last.index {
            return None;
        }
        let have = log.entries.partition_point(|e| e.index <= index);
        let (bytes_have, csn_have) = match have.checked_sub(1).map(|i| &log.entries[i]) {
            Some(e) => (e.bytes_end, e.csn_end),
            // It has nothing this log holds: count from this log's first entry on disk.
            None => (log.entries[0].bytes_end - log.entries[0].len, log.entries[0].first_csn),
        };
        Some(LogLag {
            entries: last.index - index,
            csns: last.csn_end.saturating_sub(csn_have),
            bytes: last.bytes_end - bytes_have,
            age: log.entries.get(have).and_then(|e| e.written_at).map(|at| at.elapsed()),
        })
    }

    /// The CSN the first entry from `index` on starts at, if there is one on disk holding a
    /// record.
    pub fn first_csn_from(log: &LogIndex, index: u64) -> Option<Csn> {
        let keep = log.entries.partition_point(|e| e.index < index);
        log.entries[keep..].iter().find(|e| e.csn_end > e.first_csn).map(|e| e.first_csn)
    }

    /// The term of the last entry on disk (0 if none).
    pub fn last_term(log: &LogIndex) -> Epoch {
        match (log.entries.last(), log.base) {
            (Some(e), _) => e.term as Epoch,
            (None, Some((term, _, _))) => term as Epoch,
            (None, None) => 0,
        }
    }

    /// The CSN of the last record on disk.
    pub fn last_csn(log: &LogIndex) -> Csn {
        log.next_csn - 1
    }

    /// The index of the last entry on disk (0 if none).
    pub fn last_index(log: &LogIndex) -> u64 {
        match (log.entries.last(), log.base) {
            (Some(e), _) => e.index,
            (None, Some((_, index, _))) => index,
            (None, None) => 0,
        }
    }

    /// Reads back the entries with index in `from..=to` that are on disk.
    pub fn read_entries(&self, from: u64, to: u64) -> Result<Vec<LogEntry>, String> {
        let located: Vec<EntryLocation> = {
            // The flush lock keeps a cut from shortening or removing the segments read here.
            let _core = self.core.lock();
            let log = self.index.read();
            let start = log.entries.partition_point(|e| e.index < from);
            log.entries[start..].iter().take_while(|e| e.index <= to).cloned().collect()
        };
        let mut out = Vec::with_capacity(located.len());
        let mut file: Option<(Arc<PathBuf>, Box<dyn VfsFile>)> = None;
        for loc in located {
            if file.as_ref().is_none_or(|(path, _)| *path != loc.segment) {
                let opened = self
                    .vfs
                    .open(loc.segment.as_path(), OpenMode::Read)
                    .map_err(|e| format!("opening {}: {e}", loc.segment.display()))?;
                file = Some((loc.segment.clone(), opened));
            }
            let (_, f) = file.as_mut().expect("just opened");
            let mut data = vec![0u8; loc.len as usize];
            vfs::read_exact_at(f.as_mut(), &mut data, loc.offset)
                .map_err(|e| format!("reading {}: {e}", loc.segment.display()))?;
            out.push(decode_entry(&data).map_err(|e| {
                format!("entry {} at {}:{}: {e}", loc.index, loc.segment.display(), loc.offset)
            })?);
        }
        Ok(out)
    }

    /// The first and last entry on disk of a replicated log, and its last record's CSN.
    pub fn log_position(&self) -> LogPosition {
        let log = self.index.read();
        let tag = |e: &EntryLocation| (e.term, e.index);
        LogPosition {
            first: log.entries.first().map(tag),
            last: log.entries.last().map(tag).or(log.base.map(|(term, index, _)| (term, index))),
            last_csn: log.next_csn - 1,
            base: log.base.map(|(term, index, _)| (term, index)),
        }
    }

    /// Runs `f` on the log's index, without the flush lock (see [`LogIndex`]).
    pub fn indexed<R>(&self, f: impl FnOnce(&LogIndex) -> R) -> R {
        f(&self.index.read())
    }

    /// The term of the last entry on disk; only for the flush lock's holder.
    fn last_term_now(&self) -> Epoch {
        Self::last_term(&self.index.read())
    }

    /// Extends the current segment's zeroed space by one step (the writer thread, outside the
    /// flush lock). Failures only mean that flushes keep appending; they are retried later.
    fn zero_fill(&self) {
        let Some(space) = self.current_space.lock().clone() else { return };
        space.fill_requested.store(false, Ordering::Release);
        let mut state = space.state.lock();
        if state.retired || state.failed_at.is_some_and(|t| t.elapsed() < ZERO_FILL_RETRY) {
            return;
        }
        let step = zero_fill_step(state.zeroed, self.preallocate_bytes);
        if state.zeroed.saturating_sub(space.frames_end.load(Ordering::Acquire)) >= step / 2
            || state.zeroed >= self.segment_bytes_max
        {
            return;
        }
        let from = state.zeroed;
        let started = Instant::now();
        let result = (|| {
            if state.file.is_none() {
                state.file = Some(self.vfs.open(space.path.as_path(), OpenMode::Write)?);
            }
            let file = state.file.as_mut().expect("just opened");
            write_zeros(file.as_mut(), from, step).and_then(|()| file.sync_data()).inspect_err(
                |_| {
                    // Zeros past the zeroed end are harmless, but give the space back.
                    let _ = file.set_len(from);
                },
            )
        })();
        match result {
            Ok(()) => {
                state.zeroed = from + step;
                space.zeroed_hint.store(state.zeroed, Ordering::Release);
                state.failed_at = None;
                let c = &self.durability.counters;
                c.zero_fills.fetch_add(1, Ordering::Relaxed);
                c.zero_fill_bytes.fetch_add(step, Ordering::Relaxed);
                tracing::debug!(path = %space.path.display(), from, step,
                    micros = started.elapsed().as_micros() as u64, "log space zero-filled");
            }
            Err(e) => {
                state.failed_at = Some(Instant::now());
                tracing::warn!(path = %space.path.display(), error = %e,
                    "could not zero-fill log space ahead of the log; flushes append meanwhile");
            }
        }
    }

    /// Stops writing to the current segment; the next flush starts a new one.
    fn retire_segment(&self, core: &mut FlushCore) {
        if let Some(segment) = core.segment.take() {
            segment.space.state.lock().retired = true;
        }
        *self.current_space.lock() = None;
    }

    fn create_segment(
        &self,
        epoch: Epoch,
        first_csn: Csn,
        first_index: u64,
    ) -> Result<Segment, WriteFailure> {
        let path = self.log_dir.join(segment_name(epoch, first_csn, first_index));
        let fail = |what: &str, e: io::Error| {
            let cause = format!("{what} {}: {e}", path.display());
            if is_no_space(&e) {
                WriteFailure::NoSpace(cause)
            } else {
                WriteFailure::Lost(cause)
            }
        };
        let mut file = self.vfs.open(&path, OpenMode::Write).map_err(|e| fail("creating", e))?;
        // A file of this name can only be our own earlier attempt that never became durable.
        file.set_len(0).map_err(|e| fail("resetting", e))?;
        // The first zeroed space, synced with the directory entry below. On a full disk the
        // segment starts without it and flushes append.
        let first = ZERO_FILL_FIRST.min(self.preallocate_bytes);
        let mut zeroed = 0;
        if first > 0 {
            match write_zeros(file.as_mut(), 0, first).and_then(|()| file.sync_data()) {
                Ok(()) => zeroed = first,
                Err(e) if is_no_space(&e) => file.set_len(0).map_err(|e| fail("resetting", e))?,
                Err(e) => return Err(fail("zero-filling", e)),
            }
        }
        self.vfs.sync_dir(Path::new(&self.log_dir)).map_err(|e| fail("syncing directory of", e))?;
        let space = Arc::new(SegmentSpace {
            path: Arc::new(path),
            zeroed_hint: AtomicU64::new(zeroed),
            fill_requested: AtomicBool::new(false),
            frames_end: AtomicU64::new(0),
            state: Mutex::new(SpaceState { zeroed, file: None, retired: false, failed_at: None }),
        });
        *self.current_space.lock() = Some(space.clone());
        Ok(Segment { file, space })
    }
}

/// Writes `len` zero bytes at `offset`.
/// The segments that hold `entries` (in index order), each once, in order.
fn segments_of(entries: &[EntryLocation]) -> Vec<Arc<PathBuf>> {
    let mut segments: Vec<Arc<PathBuf>> = Vec::new();
    for e in entries {
        if segments.last().is_none_or(|s| *s != e.segment) {
            segments.push(e.segment.clone());
        }
    }
    segments
}

fn write_zeros(file: &mut dyn VfsFile, offset: u64, len: u64) -> io::Result<()> {
    const CHUNK: usize = 256 << 10;
    let zeros = vec![0u8; CHUNK.min(len as usize)];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(CHUNK as u64) as usize;
        vfs::write_all_at(file, &zeros[..n], offset + done)?;
        done += n as u64;
    }
    Ok(())
}

fn take_buffer(log: &mut LogState) -> Batch {
    let batch = Batch {
        epoch: log.epoch,
        first_csn: log.first_csn,
        count: log.count,
        records: std::mem::take(&mut log.buffer),
    };
    log.first_csn += log.count as u64;
    log.count = 0;
    log.oldest = None;
    batch
}

/// Cuts `batch` after its first records totalling about `bytes_max` (at least one record);
/// returns the rest, if any.
fn split_batch(batch: &mut Batch, bytes_max: usize) -> Option<Batch> {
    let (mut pos, mut count) = (0usize, 0u32);
    while pos < batch.records.len() && (count == 0 || pos < bytes_max) {
        let len = u32::from_le_bytes(batch.records[pos..pos + 4].try_into().expect("4 bytes"));
        pos += 4 + len as usize;
        count += 1;
    }
    if count >= batch.count {
        return None;
    }
    let rest = Batch {
        epoch: batch.epoch,
        first_csn: batch.first_csn + count as u64,
        count: batch.count - count,
        records: batch.records.split_off(pos),
    };
    batch.count = count;
    Some(rest)
}

/// Splits a batch's records into frames of about `FRAME_BODY_BYTES_TARGET` bytes.
fn encode_frames(batch: &Batch) -> Vec<u8> {
    let mut out = Vec::with_capacity(batch.records.len() + format::FRAME_HEADER_BYTES);
    let records = (batch.epoch, batch.first_csn, batch.count, &batch.records[..]);
    encode_record_frames(&mut out, records, batch.first_csn, None);
    out
}

/// Appends the frames of a replicated entry's records, tagged with the entry.
fn encode_frames_into(
    out: &mut Vec<u8>,
    batch: &RecordBatch,
    flush_first: u64,
    tag: format::EntryTag,
) {
    let records = (batch.epoch, batch.first_csn, batch.count, &batch.records[..]);
    encode_record_frames(out, records, flush_first, tag);
}

/// Appends frames of about `FRAME_BODY_BYTES_TARGET` bytes for `count` records of `epoch`
/// from `first_csn`, encoded back to back in `records`.
fn encode_record_frames(
    out: &mut Vec<u8>,
    (epoch, first_csn, count_all, records): (Epoch, Csn, u32, &[u8]),
    flush_first: u64,
    tag: format::EntryTag,
) {
    let (mut start, mut pos, mut csn, mut count) = (0usize, 0usize, first_csn, 0u32);
    let mut frame_first = csn;
    while pos < records.len() {
        let len = u32::from_le_bytes(records[pos..pos + 4].try_into().expect("4 bytes"));
        pos += 4 + len as usize;
        count += 1;
        csn += 1;
        if pos - start >= FRAME_BODY_BYTES_TARGET || pos == records.len() {
            let body = &records[start..pos];
            format::encode_frame(out, epoch, flush_first, frame_first, count, tag, body);
            (start, frame_first, count) = (pos, csn, 0);
        }
    }
    assert_eq!(csn, first_csn + count_all as u64, "batch record count mismatch");
}

/// Rebuilds a replicated entry from its frames.
pub(crate) fn decode_entry(data: &[u8]) -> Result<LogEntry, String> {
    let mut offset = 0;
    let mut entry: Option<LogEntry> = None;
    let mut records = Vec::new();
    while offset < data.len() {
        let format::FrameAt::Valid { header, body_start } = format::frame_at(data, offset) else {
            return Err("not a valid frame".into());
        };
        let body = &data[body_start..body_start + header.body_len as usize];
        offset = body_start + header.body_len as usize;
        let tag = (header.term, header.index);
        match (entry.as_mut(), header.kind) {
            (None, format::FrameKind::Entry) => {
                let payload = EntryPayload::Opaque(Arc::from(body));
                entry = Some(LogEntry { term: tag.0, index: tag.1, payload });
            }
            (None, format::FrameKind::Records) => {
                let payload = EntryPayload::Records(RecordBatch {
                    epoch: header.epoch,
                    first_csn: header.first_csn,
                    count: header.record_count,
                    records: Arc::from(&[][..]),
                });
                entry = Some(LogEntry { term: tag.0, index: tag.1, payload });
                records.extend_from_slice(body);
            }
            (
                Some(LogEntry { term, index, payload: EntryPayload::Records(b) }),
                format::FrameKind::Records,
            ) if (*term, *index) == tag
                && b.epoch == header.epoch
                && b.last_csn() + 1 == header.first_csn =>
            {
                b.count += header.record_count;
                records.extend_from_slice(body);
            }
            _ => return Err("frames of different entries".into()),
        }
    }
    let mut entry = entry.ok_or("no frame")?;
    if let EntryPayload::Records(b) = &mut entry.payload {
        b.records = Arc::from(records);
    }
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch_of(sizes: &[usize]) -> Batch {
        let mut records = Vec::new();
        for &n in sizes {
            records.extend_from_slice(&(n as u32).to_le_bytes());
            records.extend(std::iter::repeat_n(7u8, n));
        }
        Batch { epoch: 3, first_csn: 10, count: sizes.len() as u32, records }
    }

    #[test]
    fn batches_split_at_record_boundaries() {
        let mut b = batch_of(&[10, 10, 10, 10]);
        let rest = split_batch(&mut b, 20).expect("a rest");
        assert_eq!((b.first_csn, b.count, b.records.len()), (10, 2, 28));
        assert_eq!((rest.first_csn, rest.count, rest.records.len()), (12, 2, 28));
        // At least one record, however small the limit; nothing left over is no rest.
        let mut one = batch_of(&[100, 5]);
        let rest = split_batch(&mut one, 1).expect("a rest");
        assert_eq!((one.count, rest.count, rest.first_csn), (1, 1, 11));
        let mut all = batch_of(&[5, 5]);
        assert!(split_batch(&mut all, 1000).is_none());
        assert_eq!(all.count, 2);
    }

    #[test]
    fn segment_names_round_trip_and_sort_by_epoch_then_csn_then_index() {
        let names = [
            segment_name(2, 99, 0),
            segment_name(10, 5, 0),
            segment_name(2, 100, 0),
            segment_name(10, 5, 7),
            segment_name(10, 5, 12),
        ];
        for n in &names {
            let (e, c, i) = parse_segment_name(n).unwrap();
            assert_eq!(&segment_name(e, c, i), n);
        }
        // Recovery sorts by the parsed fields (a log's names all have one form, so a plain sort
        // of the names would agree).
        let mut sorted = names.to_vec();
        sorted.sort_by_key(|n| parse_segment_name(n));
        assert_eq!(
            sorted,
            [
                names[0].clone(),
                names[2].clone(),
                names[1].clone(),
                names[3].clone(),
                names[4].clone()
            ]
        );
        for junk in [
            "junk.log",
            "0000000001-00000000000000000001-7.log",
            "0000000001-00000000000000000001-00000000000000000000.log",
        ] {
            assert_eq!(parse_segment_name(junk), None, "{junk}");
        }
    }
}
