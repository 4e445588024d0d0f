//! Durability: the log buffer, the log writer with group commit, the durable watermark, the
//! waiters and subscribers it wakes, epochs, checkpoints and recovery.
//!
//! ```text
//!  commit sequencer ──append(csn, record)──▶ LogState.buffer   (records in CSN order)
//!                                                │ swapped out whole by the log writer
//!                                                ▼
//!  log writer: frame ▶ append to segment ▶ fdatasync ▶ durable watermark := last CSN
//!                                                │
//!              safe waiters, wait(), persist(), subscriptions ◀─┘
//! ```
//!
//! The writer flushes at once when a safe waiter, a `persist()` or back-pressure asks, and
//! otherwise when the oldest buffered commit is half a vulnerability window old. Because the
//! log is written and synced in CSN order, durability is always a prefix of the commit order:
//! one integer, the durable watermark, says what is durable.

pub mod checkpoint;
pub mod epochs;
pub mod format;
pub mod recovery;
pub mod replicated;
pub mod vfs;
pub(crate) mod writer;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::config::DurabilityLevel;
use crate::error::{Error, Result};
use crate::id::{Csn, Epoch, TxnId, TxnKind, TxnStatus};
use epochs::EpochHistory;

/// Records appended by the sequencer and not yet taken by the log writer, plus the writer's
/// control flags. Guarded by `Durability::log`.
pub(crate) struct LogState {
    /// Epoch of the buffered records.
    pub epoch: Epoch,
    /// Encoded records, back to back, for CSNs `first_csn .. first_csn + count`.
    pub buffer: Vec<u8>,
    pub first_csn: Csn,
    pub count: u32,
    /// When the oldest buffered record was appended.
    pub oldest: Option<Instant>,
    /// Bytes of committed, non-durable records (buffered and in flight).
    pub backlog_bytes: u64,
    /// Threads waiting for durability; the writer flushes at once while any wait.
    pub safe_waiters: u32,
    /// A `persist()` asked for a flush.
    pub persist_requested: bool,
    /// Why the writer cannot write (for example a full disk), while it cannot.
    pub stalled: Option<String>,
    /// Close was requested: flush what is buffered and stop.
    pub shutdown: bool,
    /// The current segment's zero-filled space ahead of the log is running low: the writer
    /// thread should extend it (outside the flush lock).
    pub zero_fill_wanted: bool,
}

/// Where durability stands. Guarded by `Durability::state`.
pub(crate) struct DurableState {
    pub history: EpochHistory,
    /// Durable watermark of the current epoch.
    pub durable: Csn,
    /// Last CSN assigned in the current epoch.
    pub last_committed: Csn,
    /// Set when durability failed beyond recovery; every waiter gets this error.
    pub poisoned: Option<String>,
    /// A replicated log's state beyond the watermark, which then means *committed by the
    /// cluster* (`None` for a standalone engine).
    pub replica: Option<ReplicaState>,
}

/// Where a replicated log stands: `DurableState::durable` is the cluster's committed CSN (the
/// `quorum` level) and these are the rest.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReplicaState {
    /// The epoch (term) of the last committed entry.
    pub committed_epoch: Epoch,
    /// The CSN of the last record in this node's log on disk (the `local` level).
    pub local: Csn,
    /// Records this node committed or received that left its log (cut back, or never
    /// logged) before the cluster decided them, as (epoch, first CSN, last CSN): in doubt,
    /// reported committed, until a later epoch commits and they are lost.
    pub in_doubt: Vec<(Epoch, Csn, Csn)>,
}

impl DurableState {
    /// Whether this node knows `id` as committed: it committed or holds it, or did and has
    /// not seen it decided yet.
    fn knows(&self, id: TxnId) -> bool {
        if id.epoch == self.epoch() && id.csn <= self.last_committed {
            return true;
        }
        let Some(replica) = &self.replica else { return false };
        let in_log = self.history.contains(id.epoch, id.csn) && id.csn <= replica.local;
        in_log
            || replica
                .in_doubt
                .iter()
                .any(|&(epoch, first, last)| epoch == id.epoch && (first..=last).contains(&id.csn))
    }

    fn status(&self, id: TxnId) -> TxnStatus {
        match &self.replica {
            None => self.history.status(id, self.durable, self.last_committed),
            Some(replica) => {
                self.history
                    .status_replicated(id, self.durable, replica.committed_epoch, || self.knows(id))
            }
        }
    }
}

impl DurableState {
    pub fn epoch(&self) -> Epoch {
        self.history.current().expect("an open engine has an epoch").0
    }
}

/// An event delivered to subscribers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DurabilityEvent {
    /// Every transaction of `epoch` with CSN ≤ `csn` is durable.
    Durable {
        /// The epoch.
        epoch: Epoch,
        /// The new durable watermark.
        csn: Csn,
    },
    /// A replicated log: every record of the log up to `csn` (a position in the log, of any
    /// epoch the log kept) reached `level`, beyond `quorum`.
    Reached {
        /// `all` or a site.
        level: DurabilityLevel,
        /// The level's new watermark.
        csn: Csn,
    },
    /// Every transaction of `epoch` with CSN ≥ `from_csn` is lost; `new_epoch` began.
    Lost {
        /// The epoch that lost its suffix.
        epoch: Epoch,
        /// The first lost CSN.
        from_csn: Csn,
        /// The epoch that began after the loss.
        new_epoch: Epoch,
        /// Why.
        cause: String,
    },
}

/// A thread parked until `csn` of `epoch` is durable or lost.
struct Waiter {
    token: u64,
    epoch: Epoch,
    csn: Csn,
    /// The level it waits for.
    level: DurabilityLevel,
    thread: std::thread::Thread,
}

/// Up to this many waiters are woken by the log writer itself; more go to the notifier.
const INLINE_WAKE_MAX: usize = 4;

/// Queued events of one subscriber, at most this many (consecutive `Durable` events merge).
const SUBSCRIBER_QUEUE_MAX: usize = 1024;

struct SubscriberQueue {
    events: Mutex<VecDeque<DurabilityEvent>>,
    ready: Condvar,
}

/// A subscription to durability events (see [`crate::Engine::subscribe`]).
pub struct Subscription {
    queue: Arc<SubscriberQueue>,
}

impl Subscription {
    /// The next event, waiting up to `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<DurabilityEvent> {
        let deadline = Instant::now() + timeout;
        let mut events = self.queue.events.lock();
        loop {
            if let Some(event) = events.pop_front() {
                return Some(event);
            }
            if self.queue.ready.wait_until(&mut events, deadline).timed_out() {
                return events.pop_front();
            }
        }
    }

    /// The next event if one is queued.
    pub fn try_recv(&self) -> Option<DurabilityEvent> {
        self.queue.events.lock().pop_front()
    }
}

/// Counters of the durability layer; all monotonic except the gauges noted.
#[derive(Default)]
pub(crate) struct DurabilityCounters {
    pub flushes: AtomicU64,
    pub flushed_txns: AtomicU64,
    pub flushed_bytes: AtomicU64,
    pub flush_micros_total: AtomicU64,
    pub flush_micros_max: AtomicU64,
    /// Flushes by number of transactions: bucket i counts sizes in [2^i, 2^(i+1)).
    pub group_size_log2: [AtomicU64; 16],
    pub lost_txns: AtomicU64,
    pub loss_events: AtomicU64,
    pub stalls: AtomicU64,
    pub log_bytes_since_checkpoint: AtomicU64,
    /// Zero fills of log space ahead of the log, and the bytes they wrote.
    pub zero_fills: AtomicU64,
    pub zero_fill_bytes: AtomicU64,
}

/// The durability layer's shared state.
pub(crate) struct Durability {
    pub log: Mutex<LogState>,
    /// Wakes the log writer.
    pub writer_wake: Condvar,
    /// Wakes commits waiting for the backlog to drain.
    pub backlog_drained: Condvar,
    pub state: Mutex<DurableState>,
    /// Threads waiting for a transaction to become durable or lost, each woken on its own.
    waiters: Mutex<Vec<Waiter>>,
    next_waiter: AtomicU64,
    /// Copy of the durable watermark for lock-free reads.
    pub durable_csn: AtomicU64,
    /// A replicated log: the last CSN on this node's own disk (`DurableState`'s replica
    /// `local`), readable without the lock.
    pub(crate) local_csn: AtomicU64,
    /// Copy of the current epoch (the newest of `state.history`) for lock-free reads;
    /// changed only by `begin_epoch`, under `state` and the commit lock.
    current_epoch: AtomicU32,
    /// Set once durability is poisoned.
    poisoned_flag: AtomicBool,
    /// Threads for the notifier thread to unpark, and its shutdown flag.
    notify: Mutex<(Vec<std::thread::Thread>, bool)>,
    notify_ready: Condvar,
    subscribers: Mutex<Vec<Weak<SubscriberQueue>>>,
    pub counters: DurabilityCounters,
    pub backlog_bytes_max: u64,
    /// A replicated log (the levels beyond `quorum` have watermarks of their own).
    replicated: bool,
    /// The watermarks of the levels beyond `quorum`, as the leader last computed them.
    marks: Mutex<LevelMarks>,
}

/// The watermarks of `all` and of each site: the last CSN of the log, of any epoch, that
/// reached the level. Raw: a record counts at a level only once it is also durable.
#[derive(Clone, Debug, Default)]
pub(crate) struct LevelMarks {
    pub all: Csn,
    pub sites: std::collections::BTreeMap<std::sync::Arc<str>, Csn>,
}

impl LevelMarks {
    /// Whether the log's record at `csn`, durable, reached `level`.
    fn covers(&self, level: &DurabilityLevel, csn: Csn) -> bool {
        match level {
            DurabilityLevel::Local | DurabilityLevel::Quorum => true,
            DurabilityLevel::All => csn <= self.all,
            DurabilityLevel::Site(name) => self.sites.get(name).is_some_and(|&m| csn <= m),
        }
    }
}

impl Durability {
    /// The durability layer of an engine whose log ends at `last_csn`, of which `durable` is
    /// durable (all of it in a standalone log; what is known committed in a replicated one,
    /// given `replica`).
    pub fn new(
        history: EpochHistory,
        durable: Csn,
        last_csn: Csn,
        replica: Option<ReplicaState>,
        backlog_bytes_max: u64,
    ) -> Durability {
        let (epoch, start) = history.current().expect("recovery opened an epoch");
        let replicated = replica.is_some();
        // A standalone engine begins an epoch at every open, right after the durable history;
        // a replicated one continues the cluster's epoch.
        assert!(start <= last_csn + 1, "an epoch starts after the log");
        assert!(durable <= last_csn, "durable beyond the log");
        Durability {
            log: Mutex::new(LogState {
                epoch,
                buffer: Vec::new(),
                first_csn: last_csn + 1,
                count: 0,
                oldest: None,
                backlog_bytes: 0,
                safe_waiters: 0,
                persist_requested: false,
                stalled: None,
                shutdown: false,
                zero_fill_wanted: false,
            }),
            writer_wake: Condvar::new(),
            backlog_drained: Condvar::new(),
            state: Mutex::new(DurableState {
                history,
                durable,
                last_committed: last_csn,
                poisoned: None,
                replica,
            }),
            waiters: Mutex::new(Vec::new()),
            next_waiter: AtomicU64::new(0),
            durable_csn: AtomicU64::new(durable),
            local_csn: AtomicU64::new(0),
            current_epoch: AtomicU32::new(epoch),
            poisoned_flag: AtomicBool::new(false),
            notify: Mutex::new((Vec::new(), false)),
            notify_ready: Condvar::new(),
            subscribers: Mutex::new(Vec::new()),
            counters: DurabilityCounters::default(),
            backlog_bytes_max,
            replicated,
            marks: Mutex::new(LevelMarks::default()),
        }
    }

    /// The current epoch, read without a lock.
    pub fn epoch(&self) -> Epoch {
        self.current_epoch.load(Ordering::SeqCst)
    }

    /// Makes the newest epoch of `history` current after a loss: the epoch history is the
    /// one owner of the current epoch, and the log buffer and the lock-free copy follow it
    /// here, together, under the state lock. `durable` is where the previous epoch ended.
    /// Called with the commit lock held and the buffer emptied.
    pub fn begin_epoch(&self, history: EpochHistory, durable: Csn) {
        let (epoch, start) = history.current().expect("a new epoch");
        assert_eq!(start, durable + 1, "a new epoch starts right after the durable history");
        let mut state = self.state.lock();
        state.history = history;
        state.last_committed = durable;
        let mut log = self.log.lock();
        assert_eq!(log.count, 0, "records of the old epoch are still buffered");
        log.epoch = epoch;
        log.first_csn = start;
        drop(log);
        self.current_epoch.store(epoch, Ordering::SeqCst);
    }

    /// A replicated log's epochs changed (a new term's first entry, or a cut): makes `history`
    /// the history and its newest epoch current, with `last_csn` the log's (and the commit
    /// sequence's) last CSN. Called with the commit lock held and the buffer empty.
    pub fn replace_history(&self, history: EpochHistory, last_csn: Csn) {
        let (epoch, start) = history.current().expect("a replicated log has an epoch");
        assert!(start <= last_csn + 1, "an epoch starts after the log");
        let mut state = self.state.lock();
        state.history = history;
        state.last_committed = last_csn;
        if let Some(replica) = &mut state.replica {
            replica.local = replica.local.min(last_csn);
            self.local_csn.store(replica.local, Ordering::SeqCst);
        }
        let mut log = self.log.lock();
        assert_eq!(log.count, 0, "records of the old epoch are still buffered");
        log.epoch = epoch;
        log.first_csn = last_csn + 1;
        drop(log);
        self.current_epoch.store(epoch, Ordering::SeqCst);
    }

    /// Waits, before a commit enters the sequencer, until the backlog is under its bound.
    pub fn admit_commit(&self, timeout: Duration) -> Result<()> {
        let mut log = self.log.lock();
        if log.backlog_bytes < self.backlog_bytes_max {
            return Ok(());
        }
        let deadline = Instant::now() + timeout;
        while log.backlog_bytes >= self.backlog_bytes_max {
            if log.shutdown {
                return Err(Error::Closed);
            }
            self.writer_wake.notify_one();
            if self.backlog_drained.wait_until(&mut log, deadline).timed_out()
                && log.backlog_bytes >= self.backlog_bytes_max
            {
                let cause =
                    log.stalled.clone().unwrap_or_else(|| "the log writer is behind".into());
                return Err(Error::DurabilityStalled { cause });
            }
        }
        Ok(())
    }

    /// Appends the record of the commit `csn` of `epoch`. Called by the sequencer only, in CSN
    /// order, under the commit lock. Returns true when the writer thread was *not* woken for a
    /// record that starts a batch because `leads` says the committer will flush it itself: the
    /// committer then owes the writer that wake if it does not ([`Durability::wake_writer`]).
    pub fn append(&self, epoch: Epoch, csn: Csn, record: Vec<u8>, leads: bool) -> bool {
        let mut log = self.log.lock();
        assert_eq!(log.epoch, epoch, "append to the wrong epoch");
        assert_eq!(log.first_csn + log.count as u64, csn, "append out of CSN order");
        let first = log.count == 0;
        if first {
            log.oldest = Some(Instant::now());
        }
        log.backlog_bytes += record.len() as u64;
        if log.buffer.is_empty() {
            // The writer took the last batch's buffer: this record becomes the new one, with
            // no copy (a bulk load's record is as large as its data).
            log.buffer = record;
        } else {
            log.buffer.extend_from_slice(&record);
        }
        log.count += 1;
        // The first record of a batch arms the writer's vulnerability-window timer (an idle
        // writer sleeps until woken) — unless its committer is about to flush it; a large
        // buffer or backlog asks for a flush now.
        let urgent = log.buffer.len() >= format::FRAME_BODY_BYTES_TARGET
            || log.backlog_bytes >= self.backlog_bytes_max / 2;
        let owed = first && leads && !urgent;
        if (first && !leads) || urgent {
            self.writer_wake.notify_one();
        }
        drop(log);
        self.state.lock().last_committed = csn;
        owed
    }

    /// Wakes the writer thread (a committer that skipped the wake at append and did not flush
    /// its record itself).
    pub fn wake_writer(&self) {
        let _log = self.log.lock();
        self.writer_wake.notify_one();
    }

    /// The status of `id`.
    pub fn status(&self, id: TxnId) -> TxnStatus {
        self.state.lock().status(id)
    }

    /// The status of `id`, without locking when it is durable in the current epoch (the
    /// common answer for a waiter that was just woken).
    fn status_fast(&self, id: TxnId) -> TxnStatus {
        // Watermark first, then epoch: a watermark of a newer epoch is only ever read
        // together with that newer epoch, never paired with the old one.
        let durable = self.durable_csn.load(Ordering::SeqCst);
        if id.kind != TxnKind::Aborted && self.epoch() == id.epoch && id.csn <= durable {
            return TxnStatus::Durable;
        }
        self.status(id)
    }

    /// Waits until `id` is durable or lost, or `timeout` passes; returns its status then.
    /// Asks the writer to flush now, as a safe commit does.
    pub fn wait(&self, id: TxnId, timeout: Option<Duration>) -> Result<TxnStatus> {
        self.wait_until(id, timeout, DurabilityLevel::Quorum, |status| {
            status != TxnStatus::Committed
        })
    }

    /// Whether `id`, whose status is `status`, reached `level`: it is durable and, in a
    /// replicated log, the level's watermark covers it; or, for `local`, it is committed and
    /// on this node's own disk.
    pub fn reached(&self, id: TxnId, status: TxnStatus, level: &DurabilityLevel) -> bool {
        match status {
            TxnStatus::Durable => !self.replicated || self.marks.lock().covers(level, id.csn),
            TxnStatus::Committed => *level == DurabilityLevel::Local && self.local_has(id),
            _ => false,
        }
    }

    /// The levels `id` reached, in order (none unless it is at least on this node's disk);
    /// the sites are those whose watermark this node knows.
    pub fn levels_reached(&self, id: TxnId) -> Vec<DurabilityLevel> {
        let status = self.status(id);
        let marks = self.marks.lock().clone();
        let mut all = vec![DurabilityLevel::Local, DurabilityLevel::Quorum];
        all.extend(marks.sites.keys().map(|s| DurabilityLevel::Site(s.clone())));
        all.push(DurabilityLevel::All);
        all.into_iter()
            .filter(|level| match status {
                TxnStatus::Durable => !self.replicated || marks.covers(level, id.csn),
                _ => self.reached(id, status, level),
            })
            .collect()
    }

    /// A replicated log's leader computed the watermarks of `all` and of each site (CSNs of
    /// the log, each at most the committed watermark). Marks only move forward; a site not
    /// named keeps its mark. Tells subscribers and wakes the waiters now done.
    pub fn set_level_marks(&self, all: Csn, sites: &[(std::sync::Arc<str>, Csn)]) {
        let mut moved = Vec::new();
        {
            let mut marks = self.marks.lock();
            if all > marks.all {
                marks.all = all;
                moved.push((DurabilityLevel::All, all));
            }
            for (name, csn) in sites {
                let mark = marks.sites.entry(name.clone()).or_insert(0);
                if *csn > *mark {
                    *mark = *csn;
                    moved.push((DurabilityLevel::Site(name.clone()), *csn));
                }
            }
        }
        if moved.is_empty() {
            return;
        }
        for (level, csn) in moved {
            self.publish(DurabilityEvent::Reached { level, csn });
        }
        self.wake_ready();
    }

    /// The watermarks of `all` and of each site (a replicated log; 0 until computed).
    pub fn level_marks(&self) -> (Csn, Vec<(std::sync::Arc<str>, Csn)>) {
        let marks = self.marks.lock();
        (marks.all, marks.sites.iter().map(|(s, &c)| (s.clone(), c)).collect())
    }

    /// Whether a replicated log's node has `id` in its own log on disk (the `local` level).
    fn local_has(&self, id: TxnId) -> bool {
        self.epoch() == id.epoch && self.local_csn.load(Ordering::SeqCst) >= id.csn
    }

    /// Waits until `id` is decided on this node (`visible_if_committed` says whether a
    /// committed, not yet durable, transaction counts), up to `timeout`, also while this
    /// node does not know it yet (a replica that has not received it); returns its status.
    pub fn wait_known(
        &self,
        id: TxnId,
        timeout: Duration,
        visible_if_committed: impl Fn() -> bool,
    ) -> Result<TxnStatus> {
        self.wait_until(id, Some(timeout), DurabilityLevel::Quorum, |status| match status {
            TxnStatus::Unknown => false,
            TxnStatus::Committed => visible_if_committed(),
            _ => true,
        })
    }

    /// Waits until `done` says so of `id`'s status, or `timeout` passes; returns the status
    /// then. Parked, the thread is woken when `id` may have reached `level` (or its epoch
    /// ended, or durability was poisoned).
    pub fn wait_until(
        &self,
        id: TxnId,
        timeout: Option<Duration>,
        level: DurabilityLevel,
        done: impl Fn(TxnStatus) -> bool,
    ) -> Result<TxnStatus> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let status = self.status_fast(id);
        if done(status) {
            return Ok(status);
        }
        let token = self.next_waiter.fetch_add(1, Ordering::Relaxed);
        let waiter = || Waiter {
            token,
            epoch: id.epoch,
            csn: id.csn,
            level: level.clone(),
            thread: std::thread::current(),
        };
        self.waiters.lock().push(waiter());
        self.add_safe_waiter(1);
        let result = loop {
            if self.poisoned_flag.load(Ordering::SeqCst) {
                break Err(Error::Poisoned(self.poisoned().unwrap_or_default()));
            }
            let status = self.status_fast(id);
            if done(status) {
                break Ok(status);
            }
            {
                // Woken for an epoch change that did not decide it (a replicated log's new
                // term leaves an old one's records in doubt): wait on.
                let mut waiters = self.waiters.lock();
                if !waiters.iter().any(|w| w.token == token) {
                    waiters.push(waiter());
                }
            }
            match deadline {
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    Some(left) => std::thread::park_timeout(left),
                    None => break Ok(status),
                },
                None => std::thread::park(),
            }
        };
        self.waiters.lock().retain(|w| w.token != token);
        self.add_safe_waiter(-1);
        result
    }

    /// Wakes the waiters that are now done: a few directly (one hop less for a lone safe
    /// commit), a crowd through the notifier thread, so that the log writer can start its next
    /// flush at once instead of unparking a hundred threads one by one.
    fn wake_ready(&self) {
        let ready = self.take_ready_waiters();
        if ready.len() <= INLINE_WAKE_MAX {
            ready.into_iter().for_each(|t| t.unpark());
        } else {
            self.notify.lock().0.extend(ready);
            self.notify_ready.notify_one();
        }
    }

    /// The notifier thread: unparks the threads handed to it, until stopped.
    pub fn run_notifier(&self) {
        loop {
            let mut notify = self.notify.lock();
            while notify.0.is_empty() && !notify.1 {
                self.notify_ready.wait(&mut notify);
            }
            let (ready, stop) = (std::mem::take(&mut notify.0), notify.1);
            drop(notify);
            ready.into_iter().for_each(|t| t.unpark());
            if stop {
                return;
            }
        }
    }

    /// Stops the notifier thread.
    pub fn stop_notifier(&self) {
        self.notify.lock().1 = true;
        self.notify_ready.notify_one();
    }

    /// Wakes every waiter whose transaction is now durable, or all of them after a loss or
    /// a poisoning.
    pub fn wake_waiters(&self) {
        self.take_ready_waiters().into_iter().for_each(|t| t.unpark());
    }

    /// Removes and returns the waiters whose transaction is now durable or lost (all of them
    /// once poisoned).
    fn take_ready_waiters(&self) -> Vec<std::thread::Thread> {
        let epoch = self.epoch();
        let durable = self.durable_csn.load(Ordering::SeqCst);
        let local = self.local_csn.load(Ordering::SeqCst);
        let everyone = self.poisoned_flag.load(Ordering::SeqCst);
        let mut ready = Vec::new();
        let marks = self.marks.lock();
        self.waiters.lock().retain(|w| {
            let reached = match &w.level {
                DurabilityLevel::Local => w.csn <= durable || w.csn <= local,
                level => w.csn <= durable && (!self.replicated || marks.covers(level, w.csn)),
            };
            let done = everyone || w.epoch != epoch || reached;
            if done {
                ready.push(w.thread.clone());
            }
            !done
        });
        ready
    }

    /// Waits until `id` reached `level`, up to `timeout`: `Ok(true)` then, `Ok(false)` if the
    /// timeout passed first. A lost transaction is an error. `in_doubt` says whether its
    /// outcome has left this node's hands (a replicated log's leader that stopped leading
    /// before the cluster had it: a later term decides, which may take as long as the
    /// cluster stays without a quorum); the committer is then told so rather than kept
    /// waiting, and likewise when it is durable but this node can no longer tell whether it
    /// reaches a level beyond `quorum`.
    pub fn wait_durable(
        &self,
        id: TxnId,
        cause_if_lost: &str,
        level: &DurabilityLevel,
        timeout: Option<Duration>,
        in_doubt: impl Fn(TxnStatus) -> bool,
    ) -> Result<bool> {
        let done = |status| match status {
            TxnStatus::Committed | TxnStatus::Durable => {
                self.reached(id, status, level) || in_doubt(status)
            }
            _ => true,
        };
        tracing::trace!(target: "kiln_latency", csn = id.csn, "wait durable");
        let status = self.wait_until(id, timeout, level.clone(), done)?;
        tracing::trace!(target: "kiln_latency", csn = id.csn, "woken");
        if self.reached(id, status, level) {
            return Ok(true);
        }
        match status {
            TxnStatus::Lost => Err(Error::Lost { id, cause: cause_if_lost.to_string() }),
            TxnStatus::Committed if in_doubt(status) => Err(Error::InDoubt { id }),
            TxnStatus::Durable if in_doubt(status) => {
                Err(Error::LevelUnconfirmed { id, level: level.to_string() })
            }
            TxnStatus::Committed | TxnStatus::Durable => Ok(false),
            other => Err(Error::InvalidArgument(format!(
                "transaction {id} is {other}: there is no durability to wait for"
            ))),
        }
    }

    fn add_safe_waiter(&self, delta: i32) {
        let mut log = self.log.lock();
        log.safe_waiters = log.safe_waiters.checked_add_signed(delta).expect("waiter count");
        if delta > 0 {
            self.writer_wake.notify_one();
        }
    }

    /// Flushes everything committed so far; returns the durable CSN of the current epoch.
    pub fn persist(&self) -> Result<(Epoch, Csn)> {
        loop {
            if let Some(done) = self.persist_within(Duration::from_secs(3600))? {
                return Ok(done);
            }
        }
    }

    /// As [`Durability::persist`], waiting at most `timeout`: `None` when the log could not be
    /// made durable by then (a full disk), with nothing lost.
    pub fn persist_within(&self, timeout: Duration) -> Result<Option<(Epoch, Csn)>> {
        let id = {
            let state = self.state.lock();
            if state.durable == state.last_committed {
                return Ok(Some((state.epoch(), state.durable)));
            }
            TxnId { epoch: state.epoch(), csn: state.last_committed, kind: TxnKind::ReadOnly }
        };
        {
            let mut log = self.log.lock();
            log.persist_requested = true;
            self.writer_wake.notify_one();
        }
        // Name the newest lost transaction rather than the internal read-only id.
        let lost = |id: TxnId| Error::Lost {
            id: TxnId { kind: TxnKind::Update, ..id },
            cause: "durability failed during persist".into(),
        };
        match self.wait(id, Some(timeout))? {
            TxnStatus::Durable => {}
            TxnStatus::Lost => return Err(lost(id)),
            _ => return Ok(None),
        }
        let state = self.state.lock();
        Ok(Some((state.epoch(), state.durable)))
    }

    /// Publishes a new durable watermark (the writer, after an fsync).
    pub fn advance_durable(&self, epoch: Epoch, csn: Csn) {
        let mut state = self.state.lock();
        if state.epoch() != epoch {
            return; // a loss already ended that epoch
        }
        assert!(csn >= state.durable, "durable watermark went backwards");
        state.durable = csn;
        self.durable_csn.store(csn, Ordering::Release);
        drop(state);
        // Subscribers first, so that an acknowledged commit's event is already queued.
        self.publish(DurabilityEvent::Durable { epoch, csn });
        self.wake_ready();
    }

    /// A replicated log wrote records up to `csn` of `epoch`: the local watermark moves
    /// there. `own_bytes` are the bytes of those records this node committed itself (counted
    /// in the backlog since their commit); a follower's records were never buffered.
    pub fn replicated_local(&self, epoch: Epoch, csn: Csn, own_bytes: u64) {
        {
            let mut log = self.log.lock();
            if log.epoch == epoch {
                log.backlog_bytes = log.backlog_bytes.saturating_sub(own_bytes);
                if log.count == 0 && log.first_csn <= csn {
                    log.first_csn = csn + 1; // a follower's records: the next commit follows them
                }
            }
        }
        self.backlog_drained.notify_all();
        let mut state = self.state.lock();
        if state.epoch() == epoch && state.last_committed < csn {
            state.last_committed = csn;
        }
        if let Some(replica) = &mut state.replica {
            replica.local = replica.local.max(csn);
            self.local_csn.store(replica.local, Ordering::SeqCst);
        }
        drop(state);
        self.wake_ready();
    }

    /// A replicated log: the cluster committed every record up to `csn`, and the last
    /// committed entry is of `epoch`. Moves the watermark; when a later epoch committed,
    /// decides the records left in doubt (lost unless the log kept them) and tells
    /// subscribers; wakes whoever is done waiting.
    pub fn replicated_committed(&self, csn: Csn, epoch: Epoch) {
        let mut state = self.state.lock();
        // Per epoch decided: its first lost CSN and how many were lost.
        let mut lost_events: std::collections::BTreeMap<Epoch, (Csn, u64)> = Default::default();
        let (moved, new_epoch) = {
            let state = &mut *state;
            let replica = state.replica.as_mut().expect("a replicated log");
            let new_epoch = epoch > replica.committed_epoch;
            replica.committed_epoch = replica.committed_epoch.max(epoch);
            let moved = csn > state.durable;
            if moved {
                state.durable = csn;
                self.durable_csn.store(csn, Ordering::Release);
            }
            let decided = replica.committed_epoch;
            let history = &state.history;
            replica.in_doubt.retain(|&(e, first, last)| {
                if e >= decided {
                    return true;
                }
                // What of it the log kept is durable; the rest is lost.
                let kept_to = match history.start_of(e) {
                    Some(_) => history.end_of(e).unwrap_or(Csn::MAX).min(state.durable),
                    None => 0,
                };
                let from = first.max(kept_to.saturating_add(1));
                if from <= last {
                    let lost = lost_events.entry(e).or_insert((from, 0));
                    lost.0 = lost.0.min(from);
                    lost.1 += last - from + 1;
                }
                false
            });
            (moved, new_epoch)
        };
        let at = state.history.epoch_of(csn).unwrap_or(0);
        drop(state);
        for (epoch, (from_csn, count)) in lost_events {
            tracing::warn!(
                epoch,
                from_csn,
                count,
                committed_epoch = at,
                "records not replicated before a change of leader are lost"
            );
            self.counters.lost_txns.fetch_add(count, Ordering::Relaxed);
            self.counters.loss_events.fetch_add(1, Ordering::Relaxed);
            self.publish(DurabilityEvent::Lost {
                epoch,
                from_csn,
                new_epoch: at,
                cause: "not replicated to a quorum before the leader changed".into(),
            });
        }
        if moved {
            tracing::trace!(target: "kiln_latency", csn, "quorum watermark");
            self.publish(DurabilityEvent::Durable { epoch: at, csn });
        }
        if new_epoch {
            self.wake_waiters_all();
        } else if moved {
            self.wake_ready();
        }
    }

    /// Wakes every waiter to look at its transaction again.
    pub fn wake_waiters_all(&self) {
        let all: Vec<_> = self.waiters.lock().drain(..).map(|w| w.thread).collect();
        all.into_iter().for_each(|t| t.unpark());
    }

    /// Records that durability failed beyond recovery; wakes every waiter with the error.
    pub fn poison(&self, reason: String) {
        tracing::error!(%reason, "durability failed; the engine stops accepting commits");
        self.state.lock().poisoned = Some(reason);
        self.poisoned_flag.store(true, Ordering::SeqCst);
        self.wake_waiters();
        let mut log = self.log.lock();
        log.stalled = Some("durability failed; reopen the database".into());
        drop(log);
        self.backlog_drained.notify_all();
    }

    /// The reason durability was poisoned, if it was.
    pub fn poisoned(&self) -> Option<String> {
        self.state.lock().poisoned.clone()
    }

    /// Adds a subscriber.
    pub fn subscribe(&self) -> Subscription {
        let queue = Arc::new(SubscriberQueue {
            events: Mutex::new(VecDeque::new()),
            ready: Condvar::new(),
        });
        let mut subscribers = self.subscribers.lock();
        subscribers.retain(|weak| weak.strong_count() > 0);
        subscribers.push(Arc::downgrade(&queue));
        Subscription { queue }
    }

    /// Delivers an event to every live subscriber.
    pub fn publish(&self, event: DurabilityEvent) {
        let mut subscribers = self.subscribers.lock();
        subscribers.retain(|weak| {
            let Some(queue) = weak.upgrade() else { return false };
            let mut events = queue.events.lock();
            match (events.back_mut(), &event) {
                (
                    Some(DurabilityEvent::Durable { epoch: e1, csn: c1 }),
                    DurabilityEvent::Durable { epoch: e2, csn: c2 },
                ) if e1 == e2 => *c1 = *c2,
                _ => {
                    if events.len() == SUBSCRIBER_QUEUE_MAX {
                        events.pop_front();
                    }
                    events.push_back(event.clone());
                }
            }
            drop(events);
            queue.ready.notify_all();
            true
        });
    }
}
