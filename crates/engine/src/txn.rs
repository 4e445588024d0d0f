//! Transactions: snapshot reads, buffered writes, read tracking, and the commit path.
//!
//! A transaction reads at the snapshot it took when it began (READ COMMITTED: per statement)
//! and buffers its writes. It tracks its **read dependency** — the largest CSN among the
//! versions it read, deletes included — and, under SERIALIZABLE, the keys and ranges it read.
//! At commit the sequencer checks that nothing it read, scanned or wrote has a newer version
//! (first-committer-wins), so every committed update transaction is equivalent to running
//! alone at its CSN: the history is serializable in CSN order, at every instant (G3).
//!
//! A read-only transaction needs no validation: its snapshot is a prefix of the CSN order. Its
//! durability point is `durable watermark ≥ read dependency` (G4).

use std::collections::{btree_map, BTreeMap, HashMap, HashSet};
use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::config::{CommitMode, CommitModel, DurabilityLevel, IsolationLevel, TxnOptions};
use crate::durability::format::{self, WriteOp};
use crate::engine::{aborted_id, Shared};
use crate::error::{Error, Result};
use crate::id::{Csn, Epoch, TxnId, TxnKind};
use crate::store::{Row, Table, Value};

/// The last ids of a session.
#[derive(Debug, Default)]
pub(crate) struct SessionState {
    pub last_id: Option<TxnId>,
    /// The session's last committed update transaction of each epoch since the last
    /// successful sync (epochs change only at a loss, so this stays tiny).
    pub unsynced_updates: Vec<TxnId>,
    /// The session's last committed read-only transaction (its id carries its read
    /// dependency, which may be older than `last_update`).
    pub last_read_only: Option<TxnId>,
}

/// A range scan request: bounds, direction and a row limit.
#[derive(Clone, Copy, Debug)]
pub struct Scan<'a> {
    /// Lower bound.
    pub start: Bound<&'a [u8]>,
    /// Upper bound.
    pub end: Bound<&'a [u8]>,
    /// Descending key order when true.
    pub reverse: bool,
    /// The most rows to return.
    pub limit: usize,
}

impl<'a> Scan<'a> {
    /// Every key of the keyspace, ascending, without a limit.
    pub fn all() -> Scan<'static> {
        Scan { start: Bound::Unbounded, end: Bound::Unbounded, reverse: false, limit: usize::MAX }
    }
    /// Keys in `[start, end)`.
    pub fn range(start: &'a [u8], end: &'a [u8]) -> Scan<'a> {
        Scan { start: Bound::Included(start), end: Bound::Excluded(end), ..Scan::all() }
    }
    /// Keys with the given bounds.
    pub fn bounds(start: Bound<&'a [u8]>, end: Bound<&'a [u8]>) -> Scan<'a> {
        Scan { start, end, ..Scan::all() }
    }
    /// Descending order.
    pub fn reverse(mut self) -> Self {
        self.reverse = true;
        self
    }
    /// At most `limit` rows.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }
}

type OwnedBound = Bound<Vec<u8>>;

/// A buffered write: the new value (`None`: delete) and the key's row, if it had one when
/// written (so that validation and installation need not search for it again).
#[derive(Clone)]
struct PendingWrite {
    /// Shared with the store once installed: the bytes are copied once, at the write.
    value: Option<Value>,
    row: Option<Arc<Row>>,
}

/// What a write or a clear replaced, so a rollback to a savepoint can put it back.
enum Undo {
    /// A write: its keyspace and key, and the pending write it overwrote (none: the key was
    /// not written before).
    Write { keyspace: Arc<str>, key: Vec<u8>, previous: Option<PendingWrite> },
    /// A clear: the keyspace's pending writes it dropped, and whether it was cleared before.
    Clear { keyspace: Arc<str>, writes: Option<BTreeMap<Vec<u8>, PendingWrite>>, was_cleared: bool },
}

/// A point inside a transaction that [`Transaction::rollback_to`] returns to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Savepoint {
    undo_len: usize,
    write_count: usize,
    write_bytes: u64,
    depth: usize,
}

/// A key read under SERIALIZABLE, for validation: its keyspace, key, and row if it had one.
type ReadEntry = (Arc<Table>, Vec<u8>, Option<Arc<Row>>);

/// A transaction's buffered writes, per keyspace and key.
type WriteSet = HashMap<Arc<str>, BTreeMap<Vec<u8>, PendingWrite>>;

fn own(bound: Bound<&[u8]>) -> OwnedBound {
    match bound {
        Bound::Included(k) => Bound::Included(k.to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn writes_keyspace(writes: &WriteSet, keyspace: &str) -> Arc<str> {
    writes.get_key_value(keyspace).map(|(k, _)| k.clone()).unwrap_or_else(|| Arc::from(keyspace))
}

fn borrow(bound: &OwnedBound) -> Bound<&[u8]> {
    match bound {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// An open transaction. Dropping it without committing rolls it back.
pub struct Transaction {
    shared: Arc<Shared>,
    session: Option<Arc<Mutex<SessionState>>>,
    options: TxnOptions,
    begin_epoch: Epoch,
    snapshot: Csn,
    read_dep: Csn,
    writes: WriteSet,
    /// Keyspaces this transaction cleared: it sees none of their stored rows, only its own
    /// writes after the clear, and its commit deletes every key they hold at the commit point.
    cleared: HashSet<Arc<str>>,
    write_count: usize,
    write_bytes: u64,
    reads: Vec<ReadEntry>,
    scans: Vec<(Arc<Table>, OwnedBound, OwnedBound)>,
    /// Guarded writes ([`Transaction::put_guarded`]): keyspace, key and the snapshot the
    /// write was made in.
    guarded: Vec<(Arc<str>, Vec<u8>, Csn)>,
    /// Undo entries, recorded only while a savepoint is held.
    undo: Vec<Undo>,
    savepoints: usize,
    finished: bool,
    operations: Operations,
}

/// What a transaction asked of the store so far: point reads, range scans and the rows they
/// returned, writes and deletes (for tests that pin the work a statement does, and for
/// diagnostics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Operations {
    /// `get` calls.
    pub gets: u64,
    /// `scan` calls.
    pub scans: u64,
    /// Rows the scans returned.
    pub rows_scanned: u64,
    /// `put` calls.
    pub puts: u64,
    /// `delete` calls.
    pub deletes: u64,
    /// `clear` calls.
    pub clears: u64,
}

impl Operations {
    /// What happened between `earlier` and `self`.
    pub fn since(self, earlier: Operations) -> Operations {
        Operations {
            gets: self.gets - earlier.gets,
            scans: self.scans - earlier.scans,
            rows_scanned: self.rows_scanned - earlier.rows_scanned,
            puts: self.puts - earlier.puts,
            deletes: self.deletes - earlier.deletes,
            clears: self.clears - earlier.clears,
        }
    }
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("options", &self.options)
            .field("epoch", &self.begin_epoch)
            .field("snapshot", &self.snapshot)
            .field("read_dep", &self.read_dep)
            .field("writes", &self.write_count)
            .finish_non_exhaustive()
    }
}

/// What [`Committed::acknowledge_within`] found.
#[derive(Debug)]
pub enum Acknowledgement {
    /// The commit may be acknowledged (safe: it is durable).
    Acknowledged(TxnId),
    /// Still waiting for the durability point.
    Pending(Committed),
}

/// A transaction past its commit point, not yet acknowledged (see
/// [`Transaction::commit_point`]). Dropping it without acknowledging loses nothing: the
/// commit stands and reaches its durability point (or is lost) as any other.
#[must_use = "a commit is acknowledged by `acknowledge`"]
pub struct Committed {
    shared: Arc<Shared>,
    id: TxnId,
    waits: bool,
    /// The level a safe commit waits for.
    level: DurabilityLevel,
    /// The writer thread was not woken for this commit's record because this commit would
    /// flush it (or wait for it, which wakes the writer); owed on drop if neither happened.
    wake_owed: bool,
}

impl Drop for Committed {
    fn drop(&mut self) {
        if self.wake_owed {
            self.shared.durability.wake_writer();
        }
    }
}

impl std::fmt::Debug for Committed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Committed").field("id", &self.id).field("waits", &self.waits).finish()
    }
}

impl Committed {
    /// The transaction's id.
    pub fn id(&self) -> TxnId {
        self.id
    }

    /// Whether [`Committed::acknowledge`] waits for the durability point.
    pub fn waits(&self) -> bool {
        self.waits
    }

    /// The level a safe commit waits for ([`DurabilityLevel::Quorum`], `durable`, unless
    /// set): in a replicated log, how far the commit must harden; alone, every level is the
    /// log's fdatasync.
    pub fn at_level(mut self, level: DurabilityLevel) -> Committed {
        self.level = level;
        self
    }

    /// As [`Committed::acknowledge`], but waits at most `timeout`: the id once the commit may
    /// be acknowledged, or the commit back (still committed, not yet at its level) so that
    /// the caller can check for a cancellation or a full disk and wait again, or give up.
    pub fn acknowledge_within(mut self, timeout: Duration) -> Result<Acknowledgement> {
        match self.settle(Some(timeout))? {
            true => Ok(Acknowledgement::Acknowledged(self.id)),
            false => Ok(Acknowledgement::Pending(self)),
        }
    }

    /// Returns the id once the commit may be acknowledged: at once when fast; when safe (or
    /// classic), once it reached its level, flushing the log itself if no flush is under
    /// way.
    pub fn acknowledge(mut self) -> Result<TxnId> {
        let settled = self.settle(None)?;
        debug_assert!(settled, "a wait without a timeout ends settled or failed");
        Ok(self.id)
    }

    /// Waits up to `timeout` for the acknowledgement; whether it may be given.
    ///
    /// Classic commits are all acknowledged at durability; a safe read-only transaction
    /// waits for its read dependency (at once when that is already durable). In a
    /// replicated log, a leader that stops leading before the commit is decided answers
    /// [`Error::InDoubt`], and one that stops before it learns whether a durable commit
    /// reached a level beyond `quorum` answers [`Error::LevelUnconfirmed`].
    fn settle(&mut self, timeout: Option<Duration>) -> Result<bool> {
        if !self.waits {
            return Ok(true);
        }
        let id = self.id;
        if let Some(writer) = self.shared.writer.get() {
            writer.lead(id.epoch, id.csn);
        }
        // Waiting registers a safe waiter, which wakes the writer if the record still needs it.
        self.wake_owed = false;
        let shared = &self.shared;
        let level = match shared.config.commit_model {
            // Classic visibility is the quorum watermark: the level of the acknowledgement.
            CommitModel::Classic => DurabilityLevel::Quorum.max(self.level.clone()),
            CommitModel::EventuallyDurable => self.level.clone(),
        };
        let in_doubt = |status| {
            shared.config.replicated_log
                && match status {
                    crate::TxnStatus::Committed => !shared.leads(id.epoch),
                    _ => !shared.leads(shared.epoch()),
                }
        };
        let cause = "durability failed before the commit was acknowledged";
        shared.durability.wait_durable(id, cause, &level, timeout, in_doubt)
    }
}

impl Transaction {
    pub(crate) fn begin(
        shared: Arc<Shared>,
        session: Option<Arc<Mutex<SessionState>>>,
        options: TxnOptions,
    ) -> Result<Transaction> {
        shared.check_open()?;
        if let Some(reason) = shared.durability.poisoned() {
            return Err(Error::Poisoned(reason));
        }
        let (begin_epoch, snapshot) = shared.take_snapshot();
        Ok(Transaction {
            shared,
            session,
            options,
            begin_epoch,
            snapshot,
            read_dep: 0,
            writes: HashMap::new(),
            cleared: HashSet::new(),
            write_count: 0,
            write_bytes: 0,
            reads: Vec::new(),
            scans: Vec::new(),
            guarded: Vec::new(),
            undo: Vec::new(),
            savepoints: 0,
            finished: false,
            operations: Operations::default(),
        })
    }

    /// What the transaction asked of the store so far.
    pub fn operations(&self) -> Operations {
        self.operations
    }

    /// The options the transaction began with (the commit mode may have changed since).
    pub fn options(&self) -> TxnOptions {
        self.options
    }

    /// Changes whether [`Transaction::commit`] is fast or safe.
    pub fn set_mode(&mut self, mode: CommitMode) {
        self.options.mode = mode;
    }

    /// The snapshot CSN reads see.
    pub fn snapshot(&self) -> Csn {
        self.snapshot
    }

    /// The largest CSN among the versions read so far (0: only data durable before the
    /// transaction's epoch, or nothing).
    pub fn read_dependency(&self) -> Csn {
        self.read_dep
    }

    /// True when the transaction has written something.
    pub fn has_writes(&self) -> bool {
        self.write_count > 0
    }

    /// READ COMMITTED only: moves the snapshot forward to the newest committed data, as at the
    /// start of each statement.
    pub fn refresh_snapshot(&mut self) -> Result<()> {
        self.check_usable()?;
        if self.options.isolation != IsolationLevel::ReadCommitted {
            return Err(Error::InvalidArgument(
                "only READ COMMITTED transactions take a new snapshot per statement".into(),
            ));
        }
        let (epoch, snapshot) = self.shared.take_snapshot();
        self.shared.release_snapshot(self.snapshot);
        self.snapshot = snapshot;
        if epoch != self.begin_epoch {
            // A loss happened; the old reads' CSNs stay comparable only within the old epoch.
            self.check_epoch()?;
        }
        Ok(())
    }

    /// Runs `reads` against the newest committed data instead of the transaction's snapshot,
    /// then returns to the snapshot. For checks that must see what concurrent transactions
    /// committed under any isolation level (a foreign key's referencing rows, looked for
    /// after the referenced row is locked); what `reads` finds is recorded as read, so the
    /// transaction depends on it (G4) and, under SERIALIZABLE, a version newer than the
    /// snapshot fails validation. A caller that must act only on what its snapshot shows
    /// compares with [`Transaction::written_since_snapshot`].
    pub fn with_newest_snapshot<R, E: From<Error>>(
        &mut self,
        reads: impl FnOnce(&mut Self) -> std::result::Result<R, E>,
    ) -> std::result::Result<R, E> {
        self.check_usable()?;
        let (_, newest) = self.shared.take_snapshot();
        let own = self.snapshot;
        self.snapshot = newest;
        // After a loss the reads see the new epoch's data, as `refresh_snapshot` does; the
        // transaction fails if the loss took data it had read (checked at the start).
        let result = reads(self);
        self.snapshot = own;
        self.shared.release_snapshot(newest);
        result
    }

    fn check_usable(&self) -> Result<()> {
        assert!(!self.finished, "finished transactions are consumed");
        self.shared.check_open()?;
        self.check_epoch()
    }

    /// Fails when a loss since `begin` took away data this transaction saw.
    fn check_epoch(&self) -> Result<()> {
        if self.shared.epoch() == self.begin_epoch {
            return Ok(());
        }
        let end = self.shared.end_of_epoch(self.begin_epoch).expect("an older epoch has ended");
        if self.snapshot > end || self.read_dep > end {
            self.shared.counters.dependency_lost.fetch_add(1, Ordering::Relaxed);
            return Err(Error::DependencyLost { epoch: self.begin_epoch, lost_from: end + 1 });
        }
        Ok(())
    }

    fn check_keyspace(&self, keyspace: &str) -> Result<()> {
        let max = self.shared.config.keyspace_name_bytes_max;
        if keyspace.is_empty() || keyspace.len() > max {
            return Err(Error::InvalidArgument(format!(
                "keyspace names are 1 to {max} bytes, got {}",
                keyspace.len()
            )));
        }
        Ok(())
    }

    fn check_key(&self, key: &[u8]) -> Result<()> {
        Error::check_limit(
            "key size in bytes",
            key.len() as u64,
            self.shared.config.key_bytes_max as u64,
        )?;
        Ok(())
    }

    fn track_read(&mut self) -> Result<()> {
        check_reads(&self.shared.config, self.reads.len() + self.scans.len())
    }

    /// Whether a transaction that committed after this one's snapshot wrote `key` of
    /// `keyspace`. Under REPEATABLE READ and SERIALIZABLE such a write makes this
    /// transaction's own write of the key fail validation at commit; a caller may check
    /// first and fail early, as PostgreSQL does at the UPDATE itself.
    pub fn written_since_snapshot(&self, keyspace: &str, key: &[u8]) -> Result<bool> {
        self.check_usable()?;
        Ok(self.shared.store.get_table(keyspace).is_some_and(|t| t.newest_csn(key) > self.snapshot))
    }

    /// Reads `key` of `keyspace`: this transaction's own write if any, else the snapshot.
    pub fn get(&mut self, keyspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_usable()?;
        self.operations.gets += 1;
        self.check_keyspace(keyspace)?;
        self.check_key(key)?;
        if let Some(own) = self.writes.get(keyspace).and_then(|w| w.get(key)) {
            return Ok(own.value.as_deref().map(<[u8]>::to_vec));
        }
        if self.cleared.contains(keyspace) {
            return Ok(None); // depends on nothing stored: nothing to record
        }
        let table = self.shared.store.table(keyspace);
        let row = table.row(key);
        let version = row.as_ref().and_then(|r| r.read(self.snapshot));
        if let Some(v) = &version {
            self.read_dep = self.read_dep.max(v.csn);
        }
        if self.options.isolation == IsolationLevel::Serializable {
            self.track_read()?;
            self.reads.push((table, key.to_vec(), row));
        }
        self.check_epoch()?;
        Ok(version.and_then(|v| v.value).map(|v| v.to_vec()))
    }

    /// Scans a range of `keyspace`, merging this transaction's own writes.
    pub fn scan(&mut self, keyspace: &str, scan: Scan<'_>) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.check_usable()?;
        self.check_keyspace(keyspace)?;
        if bounds_empty(scan.start, scan.end) {
            // `k > 5 AND k < 3`: nothing can be in it, and ordered maps refuse such ranges.
            return Ok(Vec::new());
        }
        let table = self.shared.store.table(keyspace);
        let own: Vec<(Vec<u8>, Option<Vec<u8>>)> = match self.writes.get(keyspace) {
            Some(w) => w
                .range::<[u8], _>((scan.start, scan.end))
                .map(|(k, w)| (k.clone(), w.value.as_deref().map(<[u8]>::to_vec)))
                .collect(),
            None => Vec::new(),
        };
        // Fetch enough that the limit still holds after own deletes hide stored rows.
        let fetch = scan.limit.saturating_add(own.len());
        let cleared = self.cleared.contains(keyspace);
        let (stored, dep) = if cleared {
            (Vec::new(), 0)
        } else {
            table.scan((scan.start, scan.end), self.snapshot, scan.reverse, fetch)
        };
        self.read_dep = self.read_dep.max(dep);
        // Stored rows come in scan order; the last one fetched is the edge of what was seen.
        let stored_complete = stored.len() < fetch;
        let stored_edge = stored.last().map(|(k, _)| k.clone());
        let mut rows: Vec<(Vec<u8>, Vec<u8>)> = if own.is_empty() {
            // Nothing of its own to merge (a bulk read): the stored rows as they are.
            stored.into_iter().filter_map(|(k, v)| v.value.map(|v| (k, v.to_vec()))).collect()
        } else {
            let mut merged: BTreeMap<Vec<u8>, Option<Vec<u8>>> =
                stored.into_iter().map(|(k, v)| (k, v.value.map(|v| v.to_vec()))).collect();
            for (k, v) in own {
                // An own write beyond the last stored row fetched may hide a stored row that
                // was not fetched; rows past the edge are trusted only when the store scan
                // completed.
                let beyond = match &stored_edge {
                    Some(edge) if !stored_complete => {
                        if scan.reverse {
                            k < *edge
                        } else {
                            k > *edge
                        }
                    }
                    _ => false,
                };
                if !beyond {
                    merged.insert(k, v);
                }
            }
            let mut rows: Vec<(Vec<u8>, Vec<u8>)> =
                merged.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect();
            if scan.reverse {
                rows.reverse();
            }
            rows
        };
        self.operations.scans += 1;
        rows.truncate(scan.limit);
        self.operations.rows_scanned += rows.len() as u64;
        if self.options.isolation == IsolationLevel::Serializable && !cleared {
            self.track_read()?;
            let covered = self.covered_range(&scan, &rows, stored_complete, stored_edge);
            self.scans.push((table, covered.0, covered.1));
        }
        self.check_epoch()?;
        Ok(rows)
    }

    /// The part of the scan's range whose contents the result depends on.
    fn covered_range(
        &self,
        scan: &Scan<'_>,
        rows: &[(Vec<u8>, Vec<u8>)],
        stored_complete: bool,
        stored_edge: Option<Vec<u8>>,
    ) -> (OwnedBound, OwnedBound) {
        let full = rows.len() < scan.limit && stored_complete;
        if full {
            return (own(scan.start), own(scan.end));
        }
        // Stopped early: the result depends on keys up to the last returned (or fetched) one.
        let last = rows.last().map(|(k, _)| k.clone()).or(stored_edge);
        match (scan.reverse, last) {
            (false, Some(k)) => (own(scan.start), Bound::Included(k)),
            (true, Some(k)) => (Bound::Included(k), own(scan.end)),
            (_, None) => (own(scan.start), own(scan.end)),
        }
    }

    /// Writes `value` at `key` of `keyspace`.
    pub fn put(&mut self, keyspace: &str, key: &[u8], value: &[u8]) -> Result<()> {
        self.operations.puts += 1;
        self.write(keyspace, key, Some(value), false).map(|_| ())
    }

    /// Writes `value` at `key` of `keyspace` unless the key has a value this transaction sees
    /// (its own write, or a version in its snapshot); returns whether it wrote. The same as a
    /// [`Transaction::get`] followed by a [`Transaction::put`] when the get found nothing —
    /// the same reads recorded for validation and dependency tracking — with one search of
    /// the write set and one of the keyspace instead of two of each (a bulk insert's check
    /// of its primary key).
    pub fn insert(&mut self, keyspace: &str, key: &[u8], value: &[u8]) -> Result<bool> {
        self.operations.gets += 1;
        self.operations.puts += 1;
        self.write(keyspace, key, Some(value), true)
    }

    /// [`Transaction::put`], validated at every isolation level, READ COMMITTED too: the
    /// commit fails with a conflict if another transaction committed a write of the key after
    /// the snapshot this write was made in. For a value computed from what the transaction
    /// read (a definition read, changed and written back), which must not silently replace a
    /// concurrent change.
    pub fn put_guarded(&mut self, keyspace: &str, key: &[u8], value: &[u8]) -> Result<()> {
        self.put(keyspace, key, value)?;
        self.guarded.push((Arc::from(keyspace), key.to_vec(), self.snapshot));
        Ok(())
    }

    /// [`Transaction::delete`], validated as [`Transaction::put_guarded`] is.
    pub fn delete_guarded(&mut self, keyspace: &str, key: &[u8]) -> Result<()> {
        self.delete(keyspace, key)?;
        self.guarded.push((Arc::from(keyspace), key.to_vec(), self.snapshot));
        Ok(())
    }

    /// Deletes `key` of `keyspace` (deleting a missing key is not an error).
    pub fn delete(&mut self, keyspace: &str, key: &[u8]) -> Result<()> {
        self.operations.deletes += 1;
        self.write(keyspace, key, None, false).map(|_| ())
    }

    /// Buffers a write; with `if_absent`, only when the key has no value this transaction
    /// sees (reading it as [`Transaction::get`] does). Returns whether it wrote.
    fn write(
        &mut self,
        keyspace: &str,
        key: &[u8],
        value: Option<&[u8]>,
        if_absent: bool,
    ) -> Result<bool> {
        self.check_usable()?;
        if self.options.read_only {
            return Err(Error::ReadOnlyTransaction);
        }
        self.check_keyspace(keyspace)?;
        self.check_key(key)?;
        let config = &self.shared.config;
        if let Some(value) = value {
            Error::check_limit(
                "value size in bytes",
                value.len() as u64,
                config.value_bytes_max as u64,
            )?;
        }
        let added = format::write_encoded_len(keyspace, key, value) as u64;
        let bytes = self.write_bytes + added;
        Error::check_limit("bytes written by one transaction", bytes, config.txn_bytes_max)?;
        // The undo entry names the keyspace by the write set's own `Arc` when it has one.
        let undo_keyspace = (self.savepoints > 0).then(|| writes_keyspace(&self.writes, keyspace));
        let writes = match self.writes.get_mut(keyspace) {
            Some(w) => w,
            None => self.writes.entry(Arc::from(keyspace)).or_default(),
        };
        // One search of the write set: a key written before is updated in place; a new one is
        // checked against the count limit before anything changes.
        match writes.entry(key.to_vec()) {
            btree_map::Entry::Occupied(pending) if if_absent && pending.get().value.is_some() => {
                return Ok(false);
            }
            btree_map::Entry::Occupied(mut pending) => {
                if let Some(keyspace) = undo_keyspace {
                    let previous = Some(pending.get().clone());
                    self.undo.push(Undo::Write { keyspace, key: key.to_vec(), previous });
                }
                pending.get_mut().value = value.map(Value::from);
            }
            btree_map::Entry::Vacant(slot) => {
                let count = self.write_count as u64 + 1;
                // Find the row now, outside the commit lock, so the commit need not search
                // again; `if_absent` reads it as `get` would (`None`: the key has a value).
                let found = Error::check_limit(
                    "writes in one transaction",
                    count,
                    config.txn_writes_max as u64,
                )
                .and_then(|()| {
                    if !if_absent || self.cleared.contains(keyspace) {
                        // A cleared keyspace holds nothing this transaction sees.
                        return Ok(Some(
                            self.shared.store.get_table(keyspace).and_then(|t| t.row(key)),
                        ));
                    }
                    let table = self.shared.store.table(keyspace);
                    let row = table.row(key);
                    let version = row.as_ref().and_then(|r| r.read(self.snapshot));
                    if let Some(v) = &version {
                        self.read_dep = self.read_dep.max(v.csn);
                    }
                    if self.options.isolation == IsolationLevel::Serializable {
                        check_reads(config, self.reads.len() + self.scans.len())?;
                        self.reads.push((table, key.to_vec(), row.clone()));
                    }
                    Ok(version.and_then(|v| v.value).is_none().then_some(row))
                });
                let row = match found {
                    Ok(Some(row)) => row,
                    other => {
                        if writes.is_empty() {
                            self.writes.remove(keyspace);
                        }
                        other?;
                        self.check_epoch()?;
                        return Ok(false);
                    }
                };
                if let Some(keyspace) = undo_keyspace {
                    self.undo.push(Undo::Write { keyspace, key: key.to_vec(), previous: None });
                }
                slot.insert(PendingWrite { value: value.map(Value::from), row });
                self.write_count += 1;
            }
        }
        self.write_bytes += added;
        Ok(true)
    }

    /// Deletes every key of `keyspace` (TRUNCATE, DROP TABLE): one write, however many keys
    /// it holds. From here on the transaction sees none of the keyspace's stored rows, only
    /// its own later writes; its pending writes to the keyspace are dropped. At the commit
    /// point every key the keyspace then holds is deleted (then the later writes applied), and
    /// the commit record carries the clear, not the keys. Under REPEATABLE READ and
    /// SERIALIZABLE the commit fails if a concurrent transaction committed a write to the
    /// keyspace after this one's snapshot (first committer wins, as for a key).
    pub fn clear(&mut self, keyspace: &str) -> Result<()> {
        self.check_usable()?;
        if self.options.read_only {
            return Err(Error::ReadOnlyTransaction);
        }
        self.check_keyspace(keyspace)?;
        self.operations.clears += 1;
        let name = writes_keyspace(&self.writes, keyspace);
        let dropped = self.writes.remove(keyspace);
        let was_cleared = !self.cleared.insert(name.clone());
        if let Some(dropped) = &dropped {
            self.write_count -= dropped.len();
            self.write_bytes -= dropped
                .iter()
                .map(|(key, w)| format::write_encoded_len(&name, key, w.value.as_deref()) as u64)
                .sum::<u64>();
        }
        if !was_cleared {
            self.write_count += 1;
            self.write_bytes += format::write_encoded_len(&name, &[], None) as u64;
        }
        if self.savepoints > 0 {
            self.undo.push(Undo::Clear { keyspace: name, writes: dropped, was_cleared });
        }
        Ok(())
    }

    /// Marks a savepoint: [`Transaction::rollback_to`] undoes the writes made after it. Reads
    /// stay in the validation set (as PostgreSQL keeps SSI reads after ROLLBACK TO).
    pub fn savepoint(&mut self) -> Savepoint {
        self.savepoints += 1;
        Savepoint {
            undo_len: self.undo.len(),
            write_count: self.write_count,
            write_bytes: self.write_bytes,
            depth: self.savepoints,
        }
    }

    /// Undoes every write made since `sp` (which stays valid, as SQL's ROLLBACK TO keeps
    /// the savepoint).
    pub fn rollback_to(&mut self, sp: Savepoint) -> Result<()> {
        self.check_usable()?;
        if sp.undo_len > self.undo.len() {
            return Err(Error::InvalidArgument("the savepoint was released".into()));
        }
        while self.undo.len() > sp.undo_len {
            match self.undo.pop().expect("checked length") {
                Undo::Write { keyspace, key, previous } => {
                    let writes = self.writes.entry(keyspace.clone()).or_default();
                    match previous {
                        Some(p) => {
                            writes.insert(key, p);
                        }
                        None => {
                            writes.remove(&key);
                            if writes.is_empty() {
                                self.writes.remove(&keyspace);
                            }
                        }
                    }
                }
                Undo::Clear { keyspace, writes, was_cleared } => {
                    // Later writes to the keyspace were undone already (undo runs backwards).
                    if !was_cleared {
                        self.cleared.remove(&keyspace);
                    }
                    if let Some(writes) = writes {
                        self.writes.insert(keyspace, writes);
                    }
                }
            }
        }
        self.write_count = sp.write_count;
        self.write_bytes = sp.write_bytes;
        Ok(())
    }

    /// Forgets savepoints from `sp` on (RELEASE): their writes stay.
    pub fn release(&mut self, sp: Savepoint) {
        self.savepoints = sp.depth.saturating_sub(1);
        if self.savepoints == 0 {
            self.undo.clear();
        }
    }

    /// Commits with the transaction's mode (fast unless set otherwise). Returns its id.
    pub fn commit(self) -> Result<TxnId> {
        let mode = self.options.mode;
        self.commit_with(mode)
    }

    /// Commits and returns at the commit point.
    pub fn commit_fast(self) -> Result<TxnId> {
        self.commit_with(CommitMode::Fast)
    }

    /// Commits and returns at the durability point.
    pub fn commit_safe(self) -> Result<TxnId> {
        self.commit_with(CommitMode::Safe)
    }

    /// Commits with the given mode.
    pub fn commit_with(self, mode: CommitMode) -> Result<TxnId> {
        self.commit_point(mode)?.acknowledge()
    }

    /// Passes the commit point and returns before waiting for anything: the transaction is
    /// visible and holds nothing. [`Committed::acknowledge`] then returns when `mode` says
    /// the commit may be acknowledged (at once when fast, at the durability point when safe
    /// or under the classic model). A caller that keeps locks of its own (the SQL layer's
    /// row locks) releases them between the two steps, so a safe commit never holds
    /// anything while it waits (G9).
    pub fn commit_point(mut self, mode: CommitMode) -> Result<Committed> {
        let waits =
            mode != CommitMode::Fast || self.shared.config.commit_model == CommitModel::Classic;
        let result = if self.write_count == 0 {
            self.commit_read_only().map(|id| (id, false))
        } else {
            self.commit_update(mode, waits)
        };
        if result.is_err() {
            self.shared.counters.aborts.fetch_add(1, Ordering::Relaxed);
            self.record(aborted_id(self.begin_epoch, self.snapshot), false);
        }
        self.finish();
        let (id, wake_owed) = result?;
        let level = DurabilityLevel::Quorum;
        Ok(Committed { shared: self.shared.clone(), id, waits, level, wake_owed })
    }

    fn commit_read_only(&mut self) -> Result<TxnId> {
        self.check_usable()?;
        let epoch = self.shared.epoch();
        let id = TxnId { epoch, csn: self.read_dep, kind: TxnKind::ReadOnly };
        self.shared.counters.commits_read_only.fetch_add(1, Ordering::Relaxed);
        self.record(id, true);
        Ok(id)
    }

    /// Commits the writes; also returns whether the writer thread's wake is owed (see
    /// [`Committed`]), which `leads` (the committer will flush or wait) allows.
    fn commit_update(&mut self, mode: CommitMode, leads: bool) -> Result<(TxnId, bool)> {
        self.check_usable()?;
        let shared = self.shared.clone();
        let mut record = Vec::with_capacity(self.write_bytes as usize + 8);
        format::encode_record(
            &mut record,
            self.write_count,
            // Clears first: a keyspace's clear comes before its writes.
            self.cleared
                .iter()
                .map(|keyspace| format::WriteRef { keyspace, key: &[], op: WriteOp::Clear })
                .chain(self.writes.iter().flat_map(|(keyspace, writes)| {
                    writes.iter().map(move |(key, pending)| format::WriteRef {
                        keyspace,
                        key,
                        op: match &pending.value {
                            Some(v) => WriteOp::Put(v),
                            None => WriteOp::Delete,
                        },
                    })
                })),
        );
        // Early, so that a follower does not wait for admission first; checked again below.
        shared.check_may_commit(shared.epoch())?;
        shared.record_epoch(shared.config.backpressure_timeout)?;
        shared.durability.admit_commit(shared.config.backpressure_timeout)?;
        let (epoch, csn, wake_owed) = self.sequence_commit(record, leads)?;
        let counter = match (mode, shared.config.commit_model) {
            (CommitMode::Fast, CommitModel::EventuallyDurable) => &shared.counters.commits_fast,
            _ => &shared.counters.commits_safe,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let id = TxnId { epoch, csn, kind: TxnKind::Update };
        self.record(id, true);
        Ok((id, wake_owed))
    }

    /// The commit sequencer's critical section: under the commit lock, with no I/O, validate
    /// → take the next CSN → append the commit record to the log buffer (so the log is in CSN
    /// order) → install the versions tagged with the CSN → publish the visible watermark.
    /// When it returns the transaction is committed and visible, and holds nothing (G2, G9).
    fn sequence_commit(&mut self, record: Vec<u8>, leads: bool) -> Result<(Epoch, Csn, bool)> {
        let shared = self.shared.clone();
        let mut sequencer = shared.sequencer.lock();
        shared.check_open()?;
        if let Some(reason) = shared.durability.poisoned() {
            return Err(Error::Poisoned(reason));
        }
        self.check_epoch()?;
        let epoch = shared.epoch(); // changes only under the commit lock, which we hold
        shared.check_may_commit(epoch)?;
        if let Err(e) = self.validate() {
            shared.counters.conflicts.fetch_add(1, Ordering::Relaxed);
            return Err(e);
        }
        let store_bytes = shared.store.bytes() + self.write_bytes;
        Error::check_limit("store memory in bytes", store_bytes, shared.config.memory_bytes_max)?;
        let csn = sequencer.next_csn;
        let visible = shared.visible.load(Ordering::SeqCst);
        let durable = shared.durability.durable_csn.load(Ordering::SeqCst);
        crate::invariant!(
            visible + 1 == csn,
            "commit {epoch}.{csn} does not follow the visible {visible}"
        );
        crate::invariant!(durable <= visible, "durable {durable} is ahead of visible {visible}");
        crate::invariant!(
            shared.epoch_unrecorded().is_none(),
            "commit {epoch}.{csn} in an epoch the history does not record"
        );
        sequencer.next_csn += 1;
        let wake_owed = shared.durability.append(epoch, csn, record, leads);
        let horizon = shared.gc_horizon();
        for keyspace in std::mem::take(&mut self.cleared) {
            shared.store.clear(&shared.store.table(&keyspace), csn, horizon);
        }
        for (keyspace, writes) in std::mem::take(&mut self.writes) {
            let table = shared.store.table(&keyspace);
            for (key, pending) in writes {
                let value = pending.value;
                shared.store.install(&table, &key, pending.row.as_ref(), csn, value, horizon);
            }
        }
        shared.visible.store(csn, Ordering::SeqCst);
        Ok((epoch, csn, wake_owed))
    }

    /// First-committer-wins validation, under the commit lock.
    fn validate(&self) -> Result<()> {
        let isolation = self.options.isolation;
        for (keyspace, key, snapshot) in &self.guarded {
            // A write a rollback to a savepoint undid is not checked.
            let Some(pending) = self.writes.get(&**keyspace).and_then(|w| w.get(key)) else {
                continue;
            };
            let Some(table) = self.shared.store.get_table(keyspace) else { continue };
            if table.newest_csn_via(key, pending.row.as_ref()) > *snapshot {
                return Err(Error::conflict(format!(
                    "a concurrent transaction wrote a key this transaction wrote from what it read ({keyspace})"
                )));
            }
        }
        if isolation == IsolationLevel::ReadCommitted {
            return Ok(());
        }
        for keyspace in &self.cleared {
            let Some(table) = self.shared.store.get_table(keyspace) else { continue };
            if table.changed_since((Bound::Unbounded, Bound::Unbounded), self.snapshot) {
                return Err(Error::conflict(format!(
                    "a concurrent transaction wrote to a keyspace this transaction cleared ({keyspace})"
                )));
            }
        }
        for (keyspace, writes) in &self.writes {
            let Some(table) = self.shared.store.get_table(keyspace) else { continue };
            for (key, pending) in writes {
                if table.newest_csn_via(key, pending.row.as_ref()) > self.snapshot {
                    return Err(Error::conflict(format!(
                        "a concurrent transaction wrote a key this transaction writes ({keyspace})"
                    )));
                }
            }
        }
        if isolation == IsolationLevel::Serializable {
            for (table, key, row) in &self.reads {
                if table.newest_csn_via(key, row.as_ref()) > self.snapshot {
                    return Err(Error::conflict(format!(
                        "a concurrent transaction wrote a key this transaction read ({})",
                        table.name()
                    )));
                }
            }
            for (table, start, end) in &self.scans {
                if table.changed_since((borrow(start), borrow(end)), self.snapshot) {
                    return Err(Error::conflict(format!(
                        "a concurrent transaction changed a range this transaction scanned ({})",
                        table.name()
                    )));
                }
            }
        }
        Ok(())
    }

    /// Ends a transaction that only looked (a catalog lookup to describe a statement): it
    /// releases its snapshot and counts as neither a commit nor an abort. One that wrote is
    /// rolled back and counted as an abort.
    pub fn close_unused(mut self) {
        if self.has_writes() {
            self.abort();
            return;
        }
        self.finish();
    }

    /// Rolls back; returns the id that reports `aborted`.
    pub fn abort(mut self) -> TxnId {
        let id = aborted_id(self.begin_epoch, self.snapshot);
        self.shared.counters.aborts.fetch_add(1, Ordering::Relaxed);
        self.record(id, false);
        self.finish();
        id
    }

    fn record(&self, id: TxnId, committed: bool) {
        if let Some(session) = &self.session {
            let mut state = session.lock();
            state.last_id = Some(id);
            if committed {
                match id.kind {
                    TxnKind::ReadOnly => state.last_read_only = Some(id),
                    _ => match state.unsynced_updates.last_mut() {
                        Some(last) if last.epoch == id.epoch => *last = id,
                        _ => state.unsynced_updates.push(id),
                    },
                }
            }
        }
    }

    fn finish(&mut self) {
        if !self.finished {
            self.finished = true;
            self.shared.release_snapshot(self.snapshot);
        }
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if !self.finished {
            self.shared.counters.aborts.fetch_add(1, Ordering::Relaxed);
            self.record(aborted_id(self.begin_epoch, self.snapshot), false);
            self.finish();
        }
    }
}

/// Whether no key can lie between `start` and `end` (an inverted or empty exclusive range).
/// Fails when one more key or range read would pass the transaction's read-set limit.
fn check_reads(config: &crate::config::Config, tracked: usize) -> Result<()> {
    Error::check_limit(
        "keys and ranges read by one transaction",
        (tracked + 1) as u64,
        config.txn_reads_max as u64,
    )
}

pub(crate) fn bounds_empty(start: Bound<&[u8]>, end: Bound<&[u8]>) -> bool {
    match (start, end) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a), Bound::Excluded(b)) | (Bound::Excluded(a), Bound::Included(b)) => {
            a >= b
        }
        (Bound::Excluded(a), Bound::Excluded(b)) => a >= b,
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => false,
    }
}
