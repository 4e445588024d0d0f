//! The Raft log storage: the engine's replicated log, plus the vote in a small file.
//!
//! ```text
//!  Raft core ─append(entries, callback)─▶ recent (readable at once) ─▶ I/O thread
//!                                            one Engine::append_entries per run of appends:
//!                                            one write + one fdatasync ─▶ callbacks
//!            ─truncate_after / save_vote──▶ the same I/O thread, in order, awaited
//! ```
//!
//! Every write (appends, cuts, votes) goes through one I/O thread in the order the Raft core
//! issued it, as the library requires. Appends that queue up while a flush runs are written
//! together: the replicated log's group commit.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;

use kiln_engine::Engine;
use openraft::alias::VoteOf;
use openraft::entry::RaftEntry;
use openraft::storage::{IOFlushed, LogState, RaftLogStorage};
use openraft::{EntryPayload, OptionalSend, RaftLogReader};
use parking_lot::Mutex;

use crate::types::{engine_index, from_engine, to_engine, Entry, KilnRaft, LogId};

/// File name of the vote, in the cluster's state directory.
const VOTE_FILE: &str = "vote.json";
/// File name of the last committed log id (a hint, not synced: a lost one is learned again).
const COMMITTED_FILE: &str = "committed.json";

/// Work for the I/O thread.
enum Io {
    Append(Vec<Entry>, IOFlushed<KilnRaft>),
    Truncate(Option<u64>, tokio::sync::oneshot::Sender<io::Result<()>>),
    Purge(u64, tokio::sync::oneshot::Sender<io::Result<()>>),
    Vote(VoteOf<KilnRaft>, tokio::sync::oneshot::Sender<io::Result<()>>),
}

/// Entries written most recently that stay readable from memory besides those not written yet:
/// the leader replicates and applies what it has just written, and reading it back from disk
/// would wait for the flush lock (held through the next append's fdatasync) and a file read.
const RECENT_ENTRIES_MAX: usize = 4096;
/// The same, in bytes of records.
const RECENT_BYTES_MAX: u64 = 32 << 20;

/// Entries in memory, by index: every entry handed to `append` and not yet written, and the
/// most recent ones written (see [`RECENT_ENTRIES_MAX`]). Always one run of indexes up to the
/// last entry appended.
#[derive(Default)]
struct Recent {
    entries: BTreeMap<u64, Entry>,
    bytes: u64,
}

impl Recent {
    fn size(entry: &Entry) -> u64 {
        match &entry.payload {
            EntryPayload::Normal(batch) => batch.records.len() as u64,
            _ => 0,
        }
    }

    fn insert(&mut self, entry: Entry) {
        self.bytes += Recent::size(&entry);
        if let Some(old) = self.entries.insert(entry.log_id.index(), entry) {
            self.bytes -= Recent::size(&old);
        }
    }

    /// Drops the entries up to `last_purged`.
    fn purge(&mut self, last_purged: u64) {
        let kept = self.entries.split_off(&(last_purged + 1));
        for (_, old) in std::mem::replace(&mut self.entries, kept) {
            self.bytes -= Recent::size(&old);
        }
    }

    /// Drops the entries from `first_cut` on.
    fn cut(&mut self, first_cut: u64) {
        for (_, old) in self.entries.split_off(&first_cut) {
            self.bytes -= Recent::size(&old);
        }
    }

    /// Forgets the oldest written entries (those up to `written`) beyond the limits.
    fn trim(&mut self, written: u64) {
        while self.entries.len() > RECENT_ENTRIES_MAX || self.bytes > RECENT_BYTES_MAX {
            match self.entries.first_entry() {
                Some(first) if *first.key() <= written => {
                    self.bytes -= Recent::size(&first.remove());
                }
                _ => break,
            }
        }
    }
}

struct Shared {
    engine: Engine,
    /// Entries in memory (see [`Recent`]).
    recent: Mutex<Recent>,
    /// The last log id handed to `append` (or kept by a cut).
    last: Mutex<Option<LogId>>,
    /// The last committed log id the library saved, and whether the file has it yet.
    committed: Mutex<(Option<LogId>, bool)>,
    dir: PathBuf,
}

/// The log storage of one node.
#[derive(Clone)]
pub struct LogStore {
    shared: Arc<Shared>,
    io: mpsc::Sender<Io>,
}

impl LogStore {
    /// The log storage over `engine`'s replicated log, with the vote and commit hint kept in
    /// `dir` (created if missing). Starts the I/O thread, which stops when the store and its
    /// readers are dropped.
    pub fn open(engine: Engine, dir: &Path) -> io::Result<LogStore> {
        std::fs::create_dir_all(dir)?;
        let position = engine.log_position().map_err(io::Error::other)?;
        let last = position.last.map(|(term, index)| LogId::new_term_index(term, index - 1));
        let shared = Arc::new(Shared {
            engine,
            recent: Mutex::new(Recent::default()),
            last: Mutex::new(last),
            committed: Mutex::new((None, true)),
            dir: dir.to_path_buf(),
        });
        let for_hint = Arc::downgrade(&shared);
        std::thread::Builder::new()
            .name("kiln-raft-hint".into())
            .spawn(move || write_committed_hints(&for_hint))?;
        let (tx, rx) = mpsc::channel();
        let for_thread = shared.clone();
        std::thread::Builder::new()
            .name("kiln-raft-io".into())
            .spawn(move || io_thread(&for_thread, rx))?;
        Ok(LogStore { shared, io: tx })
    }

    fn send(&self, op: Io) -> io::Result<()> {
        self.io.send(op).map_err(|_| io::Error::other("the log's I/O thread stopped"))
    }
}

fn io_thread(shared: &Shared, rx: mpsc::Receiver<Io>) {
    let mut next = None;
    loop {
        let op = match next.take() {
            Some(op) => op,
            None => match rx.recv() {
                Ok(op) => op,
                Err(_) => return,
            },
        };
        match op {
            Io::Append(entries, callback) => {
                // Take every append queued behind this one: one write and one fdatasync.
                let (mut entries, mut callbacks) = (entries, vec![callback]);
                while let Ok(op) = rx.try_recv() {
                    match op {
                        Io::Append(more, callback) => {
                            entries.extend(more);
                            callbacks.push(callback);
                        }
                        other => {
                            next = Some(other);
                            break;
                        }
                    }
                }
                let result = write_entries(shared, &entries);
                let last = entries.last().map(|e| e.log_id.index());
                tracing::trace!(target: "kiln_latency", ?last, "log flushed");
                if let (Ok(void), Some(last)) = (&result, last) {
                    let mut recent = shared.recent.lock();
                    // Read back, a void entry is a blank one: memory says the same as the disk.
                    for &log_id in void {
                        if recent.entries.get(&log_id.index()).is_some_and(|e| e.log_id == log_id) {
                            recent.insert(Entry::new_blank(log_id));
                        }
                    }
                    recent.trim(last);
                }
                for callback in callbacks {
                    let result = match &result {
                        Ok(_) => Ok(()),
                        Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
                    };
                    callback.io_completed(result);
                }
            }
            Io::Truncate(after, done) => {
                let result = truncate(shared, after);
                let _ = done.send(result);
            }
            Io::Purge(upto, done) => {
                let result = shared.engine.purge_log(engine_index(upto)).map_err(io::Error::other);
                let _ = done.send(result);
            }
            Io::Vote(vote, done) => {
                let result = write_file_durably(&shared.dir, VOTE_FILE, &vote);
                let _ = done.send(result);
            }
        }
    }
}

/// How often the committed hint is written when it changed.
const COMMITTED_HINT_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

/// Writes the last committed log id the library saved to its file every
/// [`COMMITTED_HINT_EVERY`] it changed, until the store is gone. A hint for a restart (it
/// lets the node apply what it knows committed before hearing from a leader): not synced,
/// and one that is old, damaged or missing is only learned again from the leader.
fn write_committed_hints(shared: &std::sync::Weak<Shared>) {
    loop {
        std::thread::sleep(COMMITTED_HINT_EVERY);
        let Some(shared) = shared.upgrade() else { return };
        let committed = {
            let mut saved = shared.committed.lock();
            if saved.1 {
                continue;
            }
            saved.1 = true;
            saved.0
        };
        let write = || -> io::Result<()> {
            let bytes = serde_json::to_vec(&committed).map_err(io::Error::other)?;
            let tmp = shared.dir.join(format!("{COMMITTED_FILE}.tmp"));
            std::fs::write(&tmp, bytes)?;
            std::fs::rename(tmp, shared.dir.join(COMMITTED_FILE))
        };
        if let Err(e) = write() {
            tracing::warn!(error = %e, "could not write the committed hint");
        }
    }
}

/// Writes `entries` after the log: one engine append, one fdatasync.
///
/// A batch of records is part of the log only if it continues it: its epoch is its entry's
/// term and its first CSN follows the last record logged before it. Any other batch is
/// written *void* (see [`to_engine`]): the entry keeps its place, its records are not part of
/// the log. This is decided from the log before the entry alone, which every node holds alike
/// (Raft's log matching), so every node decides it alike. It happens when a leader's write of
/// one batch was refused (its lease expired) and a later batch of the same term was accepted:
/// without the first, the second would leave a gap in the commit order, and the leader gives
/// up the term when it learns of the refusal (see `node::propose`).
///
/// Returns the ids of the entries written void.
fn write_entries(shared: &Shared, entries: &[Entry]) -> io::Result<Vec<LogId>> {
    let mut next_csn = shared.engine.log_position().map_err(io::Error::other)?.last_csn + 1;
    let mut converted = Vec::with_capacity(entries.len());
    let mut void = Vec::new();
    for entry in entries {
        let term = entry.log_id.committed_leader_id().term;
        let follows = match &entry.payload {
            EntryPayload::Normal(batch) => {
                let follows =
                    batch.epoch as u64 == term && batch.first_csn == next_csn && batch.count > 0;
                if follows {
                    next_csn += batch.count as u64;
                } else {
                    tracing::warn!(
                        log_id = %entry.log_id, %batch, next_csn,
                        "a batch that does not continue the log is void"
                    );
                    void.push(entry.log_id);
                }
                follows
            }
            _ => true,
        };
        converted.push(to_engine(entry, follows)?);
    }
    shared.engine.append_entries(&converted).map_err(io::Error::other)?;
    Ok(void)
}

/// Cuts the engine's log. Entries in memory were cut when the cut was issued: those there
/// now were appended after it, and stay.
fn truncate(shared: &Shared, after: Option<u64>) -> io::Result<()> {
    let first_cut = after.map_or(0, |i| i + 1);
    shared.engine.truncate_log_from(engine_index(first_cut)).map_err(io::Error::other)
}

/// Writes `value` as JSON to `dir/name` through a temporary file, fsync, rename and a
/// directory fsync: the file is always the old or the new value.
fn write_file_durably(dir: &Path, name: &str, value: &impl serde::Serialize) -> io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let bytes = serde_json::to_vec(value).map_err(io::Error::other)?;
    {
        let mut file = std::fs::File::create(&tmp)?;
        std::io::Write::write_all(&mut file, &bytes)?;
        file.sync_data()?;
    }
    std::fs::rename(&tmp, dir.join(name))?;
    std::fs::File::open(dir)?.sync_all()
}

fn read_file<T: serde::de::DeserializeOwned>(dir: &Path, name: &str) -> io::Result<Option<T>> {
    match std::fs::read(dir.join(name)) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{name}: {e}"))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

impl RaftLogReader<KilnRaft> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        let from = match range.start_bound() {
            Bound::Included(&i) => i,
            Bound::Excluded(&i) => i + 1,
            Bound::Unbounded => 0,
        };
        let to = match range.end_bound() {
            Bound::Included(&i) => i,
            Bound::Excluded(&i) => i.saturating_sub(1),
            Bound::Unbounded => u64::MAX,
        };
        if from > to {
            return Ok(Vec::new());
        }
        // Memory first: an entry leaves it only once it is on disk, so whatever is not seen
        // here is found there. Entries in memory are one run of indexes up to the last
        // appended: a range that starts inside it is served from memory alone. That is the
        // common case (the leader replicating what it has just appended, every node applying
        // what it has just written), and it must not wait for the disk: reading the log waits
        // for the flush lock, which an append holds through its fdatasync.
        let in_memory: Vec<Entry> = {
            let recent = self.shared.recent.lock();
            let covered = recent.entries.keys().next().is_some_and(|&first| first <= from);
            let entries = recent.entries.range(from..=to).map(|(_, e)| e.clone()).collect();
            if covered {
                return Ok(entries);
            }
            entries
        };
        let engine = self.shared.engine.clone();
        let (from_e, to_e) = (engine_index(from), engine_index(to.min(u64::MAX - 1)));
        let on_disk = tokio::task::spawn_blocking(move || engine.log_entries(from_e, to_e))
            .await
            .map_err(io::Error::other)?
            .map_err(io::Error::other)?;
        let mut by_index = BTreeMap::new();
        for entry in on_disk {
            let entry = from_engine(entry)?;
            by_index.insert(entry.log_id.index(), entry);
        }
        for entry in in_memory {
            by_index.entry(entry.log_id.index()).or_insert(entry);
        }
        Ok(by_index.into_values().collect())
    }

    async fn read_vote(&mut self) -> Result<Option<VoteOf<KilnRaft>>, io::Error> {
        read_file(&self.shared.dir, VOTE_FILE)
    }
}

impl RaftLogStorage<KilnRaft> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<KilnRaft>, io::Error> {
        // The entries up to the newest checkpoint's count as purged, whether or not their
        // segments are still there: the checkpoint holds their records.
        let position = self.shared.engine.log_position().map_err(io::Error::other)?;
        let last_purged_log_id =
            position.base.map(|(term, index)| LogId::new_term_index(term, index - 1));
        Ok(LogState { last_purged_log_id, last_log_id: *self.shared.last.lock() })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &VoteOf<KilnRaft>) -> Result<(), io::Error> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(Io::Vote(*vote, tx))?;
        rx.await.map_err(io::Error::other)?
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), io::Error> {
        // A hint for a restart, written in the background (see `write_committed_hints`): the
        // library saves it on every commit, and a file written here would sit between each
        // commit and its apply, which safe committers wait for.
        *self.shared.committed.lock() = (committed, false);
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, io::Error> {
        if let (Some(committed), _) = *self.shared.committed.lock() {
            return Ok(Some(committed));
        }
        Ok(read_file(&self.shared.dir, COMMITTED_FILE).unwrap_or(None).flatten())
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: IOFlushed<KilnRaft>,
    ) -> Result<(), io::Error>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry> = entries.into_iter().collect();
        if let Some(last) = entries.last() {
            tracing::trace!(target: "kiln_latency", last = last.log_id.index(), "log append");
            let mut recent = self.shared.recent.lock();
            for entry in &entries {
                recent.insert(entry.clone());
            }
            *self.shared.last.lock() = Some(last.log_id);
        }
        self.send(Io::Append(entries, callback))
    }

    async fn truncate_after(&mut self, last_log_id: Option<LogId>) -> Result<(), io::Error> {
        let index = last_log_id.map(|id| id.index());
        {
            let first_cut = index.map_or(0, |i| i + 1);
            self.shared.recent.lock().cut(first_cut);
            *self.shared.last.lock() = last_log_id;
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(Io::Truncate(index, tx))?;
        rx.await.map_err(io::Error::other)?
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), io::Error> {
        // The library purges only what a snapshot holds, and never reads it again.
        self.shared.recent.lock().purge(log_id.index());
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(Io::Purge(log_id.index(), tx))?;
        rx.await.map_err(io::Error::other)?
    }
}

#[cfg(test)]
mod tests {
    use kiln_engine::replicated::EntryPayload as EnginePayload;
    use kiln_engine::{Config, Engine};
    use openraft::entry::RaftEntry;

    use super::*;
    use crate::types::Batch;

    /// A batch of `count` commit records with no writes.
    fn batch(epoch: u32, first_csn: u64, count: u32) -> Batch {
        let mut records = Vec::new();
        for _ in 0..count {
            records.extend_from_slice(&4u32.to_le_bytes());
            records.extend_from_slice(&0u32.to_le_bytes());
        }
        Batch { epoch, first_csn, count, records: Arc::from(records) }
    }

    fn normal(term: u64, index: u64, batch: Batch) -> Entry {
        Entry::new_normal(LogId::new_term_index(term, index), batch)
    }

    fn shared(dir: &Path) -> Shared {
        let config = Config { replicated_log: true, ..Config::default() };
        Shared {
            engine: Engine::open(dir.join("engine"), config).unwrap(),
            recent: Mutex::new(Recent::default()),
            last: Mutex::new(None),
            committed: Mutex::new((None, true)),
            dir: dir.to_path_buf(),
        }
    }

    #[test]
    fn batches_that_do_not_continue_the_log_are_void_however_the_appends_are_grouped() {
        let entries = vec![
            Entry::new_blank(LogId::new_term_index(2, 0)),
            normal(2, 1, batch(2, 1, 2)),
            // A gap: CSN 3 is missing (the leader's write of it was refused).
            normal(2, 2, batch(2, 4, 1)),
            // The next batch continues the log, which ends at CSN 2.
            normal(2, 3, batch(2, 3, 1)),
            // Records of an earlier term, appended in a later one.
            normal(3, 4, batch(2, 4, 1)),
            normal(3, 5, batch(3, 4, 1)),
            // An empty batch continues nothing.
            normal(3, 6, batch(3, 5, 0)),
        ];
        let together = tempfile::tempdir().unwrap();
        let one_by_one = tempfile::tempdir().unwrap();
        let (a, b) = (shared(together.path()), shared(one_by_one.path()));
        write_entries(&a, &entries).unwrap();
        for entry in &entries {
            write_entries(&b, std::slice::from_ref(entry)).unwrap();
        }
        for node in [&a, &b] {
            let logged = node.engine.log_entries(1, 100).unwrap();
            let kinds: Vec<_> = logged
                .iter()
                .map(|e| match &e.payload {
                    EnginePayload::Records(r) => format!("{}.{}+{}", r.epoch, r.first_csn, r.count),
                    EnginePayload::Opaque(bytes) => format!("opaque {}", bytes[0]),
                })
                .collect();
            assert_eq!(
                kinds,
                ["opaque 0", "2.1+2", "opaque 2", "2.3+1", "opaque 2", "3.4+1", "opaque 2"]
            );
            assert_eq!(node.engine.log_position().unwrap().last_csn, 4);
            // Read back through the library's types, a void entry is a blank one.
            let back: Vec<Entry> = logged.into_iter().map(|e| from_engine(e).unwrap()).collect();
            assert!(matches!(back[2].payload, EntryPayload::Blank));
            assert_eq!(back[2].log_id, entries[2].log_id);
            assert_eq!(back[3], entries[3]);
        }
    }
}
