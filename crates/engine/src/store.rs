//! The in-memory store: keyspaces of ordered byte keys, each key a chain of versions tagged
//! with the CSN of the transaction that wrote them.
//!
//! ```text
//! keyspace "kv" (lock-free skip list, ordered by key)
//!   "a" → [csn 3: "1"] [csn 9: "2"] [csn 12: deleted]     oldest … newest
//!   "b" → [csn 5: "x"]
//! ```
//!
//! A reader at snapshot S sees, for each key, the newest version with CSN ≤ S. Versions are
//! installed only by the commit sequencer (under the commit lock), in CSN order, so a chain is
//! always sorted. Garbage collection keeps, for each key, every version newer than the *GC
//! horizon* plus the newest one at or below it. The horizon is the smaller of the oldest active
//! snapshot and the **durable watermark**: a non-durable version may still be lost, and then
//! the version below it must be there to become current again.

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use crossbeam_skiplist::SkipMap;
use parking_lot::{Mutex, MutexGuard, RwLock};
use smallvec::SmallVec;

use crate::id::Csn;

/// Bytes charged per version beyond its value (the value's reference counts, and its slot
/// when a chain holds more than one), and per row beyond its key: the skip-list node with its
/// tower (64 bytes on average), the row with its inline version (64 with its reference
/// counts), and the key's allocation rounding. Measured with heaptrack on 200,000 rows of a
/// 9-byte key and a 40-byte value: 177 bytes requested per row, 128 of them overhead.
const VERSION_OVERHEAD_BYTES: i64 = 32;
const ROW_OVERHEAD_BYTES: i64 = 112;

/// A value shared between the store and readers without copying.
pub type Value = Arc<[u8]>;

/// One version of a key: its CSN and its value (`None`: deleted).
#[derive(Clone, Debug)]
pub struct Version {
    /// The CSN of the transaction that wrote it.
    pub csn: Csn,
    /// The value, or `None` for a delete.
    pub value: Option<Value>,
}

/// A version chain, oldest first. Most keys have one version most of the time (garbage
/// collection prunes the rest), so that one is kept inline: no allocation beyond the row's.
type Versions = SmallVec<[Version; 1]>;

/// The version chain of one key, oldest first. Transactions keep handles to the rows they
/// read and write, so that validation and installation need not search the keyspace again.
#[derive(Debug, Default)]
pub struct Row {
    versions: Mutex<Versions>,
    /// Set (under the commit lock) when the row is removed from its keyspace; a handle to a
    /// removed row must not be written to, and its key must be looked up afresh.
    removed: AtomicBool,
}

impl Row {
    /// True once the row was removed from its keyspace.
    pub fn is_removed(&self) -> bool {
        self.removed.load(Ordering::Acquire)
    }

    /// The newest version visible at `snapshot`.
    pub fn read(&self, snapshot: Csn) -> Option<Version> {
        let versions = self.versions.lock();
        versions.iter().rev().find(|v| v.csn <= snapshot).cloned()
    }

    /// The CSN of the newest installed version (0 when empty).
    pub fn newest_csn(&self) -> Csn {
        self.versions.lock().last().map_or(0, |v| v.csn)
    }
}

/// A handle to one row of a keyspace's skip list.
type RowEntry<'a> = crossbeam_skiplist::map::Entry<'a, Box<[u8]>, Arc<Row>>;

/// One keyspace.
pub struct Table {
    name: Arc<str>,
    rows: SkipMap<Box<[u8]>, Arc<Row>>,
}

impl Table {
    /// The keyspace's name.
    pub fn name(&self) -> &Arc<str> {
        &self.name
    }

    /// The newest version of `key` visible at `snapshot`.
    #[cfg(test)]
    pub fn read(&self, key: &[u8], snapshot: Csn) -> Option<Version> {
        self.rows.get(key).and_then(|entry| entry.value().read(snapshot))
    }

    /// The row of `key`, if it has one.
    pub fn row(&self, key: &[u8]) -> Option<Arc<Row>> {
        self.rows.get(key).map(|entry| entry.value().clone())
    }

    /// The CSN of the newest installed version of `key` (0 if none).
    pub fn newest_csn(&self, key: &[u8]) -> Csn {
        self.rows.get(key).map_or(0, |entry| entry.value().newest_csn())
    }

    /// Like [`Table::newest_csn`], through a row handle taken earlier when it is still live.
    pub fn newest_csn_via(&self, key: &[u8], row: Option<&Arc<Row>>) -> Csn {
        match row {
            Some(row) if !row.is_removed() => row.newest_csn(),
            _ => self.newest_csn(key),
        }
    }

    /// Up to `limit` live keys of the range visible at `snapshot`, in key order or reverse,
    /// with the version each read; and the largest CSN of every visible version passed,
    /// deletes included (a scan's result depends on the deletes it skipped too).
    pub fn scan(
        &self,
        range: (Bound<&[u8]>, Bound<&[u8]>),
        snapshot: Csn,
        reverse: bool,
        limit: usize,
    ) -> (Vec<(Vec<u8>, Version)>, Csn) {
        let mut out = Vec::new();
        let mut dep = 0;
        if limit == 0 {
            return (out, dep);
        }
        if crate::txn::bounds_empty(range.0, range.1) {
            return (out, dep);
        }
        self.walk(range, reverse, |entry| {
            if let Some(version) = entry.value().read(snapshot) {
                dep = dep.max(version.csn);
                if version.value.is_some() {
                    out.push((entry.key().to_vec(), version));
                }
            }
            out.len() < limit
        });
        (out, dep)
    }

    /// True when some key in the range has a version newer than `snapshot` (a phantom or a
    /// changed row for a serializable scan).
    pub fn changed_since(&self, range: (Bound<&[u8]>, Bound<&[u8]>), snapshot: Csn) -> bool {
        if crate::txn::bounds_empty(range.0, range.1) {
            return false;
        }
        let mut changed = false;
        self.walk(range, false, |entry| {
            changed = entry.value().newest_csn() > snapshot;
            !changed
        });
        changed
    }

    /// Calls `visit` on the rows of `range` in key order (or reverse) until it returns false.
    ///
    /// This walks entry to entry from the range's first (or last) key instead of using
    /// `SkipMap::range`: crossbeam-skiplist 0.1.3's range iterator never releases its hold on
    /// the entries it steps past, so every row a range scan ever visited would stay allocated
    /// after its removal (found with heaptrack: a dropped 200,000-row table kept all its
    /// skip-list nodes and rows; the same leak is fixed downstream in tikv/tikv#19284). The
    /// entry's own `move_next`/`move_prev` release the entry they leave.
    fn walk(
        &self,
        range: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        mut visit: impl FnMut(&RowEntry<'_>) -> bool,
    ) {
        let (start, end) = range;
        let inside = |key: &[u8]| {
            let above = match start {
                Bound::Included(s) => key >= s,
                Bound::Excluded(s) => key > s,
                Bound::Unbounded => true,
            };
            let below = match end {
                Bound::Included(e) => key <= e,
                Bound::Excluded(e) => key < e,
                Bound::Unbounded => true,
            };
            above && below
        };
        let first = if reverse { self.rows.upper_bound(end) } else { self.rows.lower_bound(start) };
        let Some(mut entry) = first else { return };
        loop {
            if !inside(entry.key()) || !visit(&entry) {
                return;
            }
            let moved = if reverse { entry.move_prev() } else { entry.move_next() };
            if !moved {
                return;
            }
        }
    }

    /// Number of rows (keys with at least one version).
    pub fn row_count(&self) -> usize {
        self.rows.len()
    }
}

/// Memory and size counters of the store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Bytes charged for keys, values and version overhead.
    pub bytes: u64,
    /// Number of keyspaces.
    pub keyspaces: u64,
    /// Number of rows across keyspaces.
    pub rows: u64,
}

/// All keyspaces.
#[derive(Default)]
pub struct Store {
    tables: RwLock<HashMap<Arc<str>, Arc<Table>>>,
    bytes: AtomicI64,
}

impl Store {
    /// An empty store.
    pub fn new() -> Store {
        Store::default()
    }

    /// The keyspace named `name`, if it was ever written or looked up.
    pub fn get_table(&self, name: &str) -> Option<Arc<Table>> {
        self.tables.read().get(name).cloned()
    }

    /// The keyspace named `name`, created empty if missing.
    pub fn table(&self, name: &str) -> Arc<Table> {
        if let Some(table) = self.get_table(name) {
            return table;
        }
        let mut tables = self.tables.write();
        tables
            .entry(Arc::from(name))
            .or_insert_with(|| Arc::new(Table { name: Arc::from(name), rows: SkipMap::new() }))
            .clone()
    }

    /// Every keyspace, sorted by name.
    pub fn tables(&self) -> Vec<Arc<Table>> {
        let mut tables: Vec<_> = self.tables.read().values().cloned().collect();
        tables.sort_by(|a, b| a.name.cmp(&b.name));
        tables
    }

    /// Bytes charged.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed).max(0) as u64
    }

    /// Size counters.
    pub fn stats(&self) -> StoreStats {
        let tables = self.tables.read();
        StoreStats {
            bytes: self.bytes(),
            keyspaces: tables.len() as u64,
            rows: tables.values().map(|t| t.row_count() as u64).sum(),
        }
    }

    /// Installs a version of `key` at `csn` and prunes versions below the GC `horizon`.
    /// `row` is a handle the transaction took earlier, used when still live. Only the commit
    /// sequencer calls this, so installs are serialized and in CSN order; a key may get a
    /// second write at the same CSN only after [`Store::clear`] of the same commit, which it
    /// replaces.
    pub fn install(
        &self,
        table: &Table,
        key: &[u8],
        row: Option<&Arc<Row>>,
        csn: Csn,
        value: Option<Value>,
        horizon: Csn,
    ) {
        let mut added = VERSION_OVERHEAD_BYTES + value.as_ref().map_or(0, |v| v.len() as i64);
        // One search when the handle is stale or missing: a row in the keyspace always has a
        // version (installs happen under the commit lock, and a row left without versions is
        // removed), so an empty chain is a row this call inserted.
        let row = match row.filter(|r| !r.is_removed()) {
            Some(row) => row.clone(),
            None => table.rows.get_or_insert_with(Box::from(key), Arc::default).value().clone(),
        };
        let mut versions = row.versions.lock();
        match versions.last_mut() {
            Some(last) if last.csn == csn => {
                // This commit cleared the keyspace first: the write replaces the clear's delete.
                added -= version_bytes(last);
                last.value = value;
            }
            Some(last) => {
                assert!(last.csn < csn, "install out of CSN order: {} after {}", csn, last.csn);
                versions.push(Version { csn, value });
            }
            None => {
                added += ROW_OVERHEAD_BYTES + key.len() as i64;
                versions.push(Version { csn, value });
            }
        }
        let freed = prune(&mut versions, horizon);
        self.bytes.fetch_add(added - freed, Ordering::Relaxed);
    }

    /// Deletes every live key of `table` at `csn` (a keyspace clear: TRUNCATE, DROP), pruning
    /// below `horizon` as installs do; a row whose delete is already at or below the horizon
    /// (recovery replays at the horizon) is removed at once. Only the commit sequencer calls
    /// this. Keys already deleted get no second delete: a reader sees no difference, and a
    /// writer of such a key does not conflict with the clear (as if it wrote after it).
    pub fn clear(&self, table: &Table, csn: Csn, horizon: Csn) {
        let mut added = 0i64;
        table.walk((Bound::Unbounded, Bound::Unbounded), false, |entry| {
            let mut versions = entry.value().versions.lock();
            match versions.last() {
                Some(last) if last.value.is_none() => return true,
                Some(last) => {
                    assert!(last.csn < csn, "clear out of CSN order: {} after {}", csn, last.csn)
                }
                None => return true,
            }
            versions.push(Version { csn, value: None });
            added += VERSION_OVERHEAD_BYTES - prune(&mut versions, horizon);
            added -= remove_if_dead(entry, versions, horizon);
            true
        });
        self.bytes.fetch_add(added, Ordering::Relaxed);
    }

    /// Removes every version of `key` newer than `durable` (the key's lost versions), and the
    /// row itself when nothing is left. Only the sequencer calls this, during a loss.
    pub fn purge_above(&self, table: &Table, key: &[u8], durable: Csn) {
        let Some(entry) = table.rows.get(key) else { return };
        let freed = Self::purge_entry(&entry, durable);
        self.bytes.fetch_sub(freed, Ordering::Relaxed);
    }

    /// [`Store::purge_above`] for every key of `table` (a lost clear).
    pub fn purge_all_above(&self, table: &Table, durable: Csn) {
        let mut freed = 0;
        table.walk((Bound::Unbounded, Bound::Unbounded), false, |entry| {
            freed += Self::purge_entry(entry, durable);
            true
        });
        self.bytes.fetch_sub(freed, Ordering::Relaxed);
    }

    /// Drops the versions of one row newer than `durable`; returns the bytes freed.
    fn purge_entry(entry: &RowEntry<'_>, durable: Csn) -> i64 {
        let mut versions = entry.value().versions.lock();
        let keep = versions.iter().take_while(|v| v.csn <= durable).count();
        let mut freed: i64 = versions[keep..].iter().map(version_bytes).sum();
        versions.truncate(keep);
        if versions.len() <= 1 {
            versions.shrink_to_fit();
        }
        let empty = versions.is_empty();
        drop(versions);
        if empty {
            freed += ROW_OVERHEAD_BYTES + entry.key().len() as i64;
            remove_row(entry);
        }
        freed
    }

    /// Prunes old versions of up to `batch` rows of `table`, starting at `from`, and removes
    /// rows whose only remaining version is a delete at or below `horizon`. Returns the key to
    /// continue from, or `None` when the keyspace is done. Must run under the commit lock, so
    /// that no install races with a row's removal.
    pub fn gc_batch(
        &self,
        table: &Table,
        from: Option<&[u8]>,
        horizon: Csn,
        batch: usize,
    ) -> Option<Vec<u8>> {
        let start = from.map_or(Bound::Unbounded, Bound::Included);
        let mut freed = 0i64;
        let mut next = None;
        let mut visited = 0;
        table.walk((start, Bound::Unbounded), false, |entry| {
            if visited == batch {
                next = Some(entry.key().to_vec());
                return false;
            }
            visited += 1;
            let mut versions = entry.value().versions.lock();
            freed += prune(&mut versions, horizon);
            freed += remove_if_dead(entry, versions, horizon);
            true
        });
        self.bytes.fetch_sub(freed, Ordering::Relaxed);
        next
    }
}

/// Removes `entry`'s row when its only version is a delete at or below `horizon` (no snapshot
/// can see anything of it); returns the bytes freed. Under the commit lock only.
fn remove_if_dead(
    entry: &RowEntry<'_>,
    mut versions: MutexGuard<'_, Versions>,
    horizon: Csn,
) -> i64 {
    let dead = versions.len() == 1 && versions[0].value.is_none() && versions[0].csn <= horizon;
    if !dead {
        return 0;
    }
    let freed = version_bytes(&versions[0]) + ROW_OVERHEAD_BYTES + entry.key().len() as i64;
    versions.clear();
    drop(versions);
    remove_row(entry);
    freed
}

/// Takes a row out of its keyspace; handles to it see it removed and look the key up afresh.
fn remove_row(entry: &RowEntry<'_>) {
    entry.value().removed.store(true, Ordering::Release);
    entry.remove();
}

fn version_bytes(v: &Version) -> i64 {
    VERSION_OVERHEAD_BYTES + v.value.as_ref().map_or(0, |v| v.len() as i64)
}

/// Drops every version older than the newest one at or below `horizon`; returns bytes freed.
fn prune(versions: &mut Versions, horizon: Csn) -> i64 {
    let Some(base) = versions.iter().rposition(|v| v.csn <= horizon) else { return 0 };
    if base == 0 {
        return 0;
    }
    let freed = versions[..base].iter().map(version_bytes).sum();
    versions.drain(..base);
    if versions.len() == 1 {
        // Back inline: the chain's heap buffer is freed.
        versions.shrink_to_fit();
    }
    freed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_with_one_version_is_one_allocation() {
        // The row (behind its Arc) holds its only version inline; the value is the other
        // allocation. A regression here costs every stored key.
        assert_eq!(std::mem::size_of::<Version>(), 24);
        assert!(std::mem::size_of::<Row>() <= 48, "Row is {} bytes", std::mem::size_of::<Row>());
        let table = Table { name: Arc::from("t"), rows: SkipMap::new() };
        let store = Store::new();
        store.install(&table, b"k", None, 1, val("a"), 0);
        store.install(&table, b"k", None, 2, val("b"), 0);
        let row = table.row(b"k").unwrap();
        assert!(row.versions.lock().spilled(), "two versions live beside an old snapshot");
        store.install(&table, b"k", Some(&row), 3, val("c"), 3);
        let versions = row.versions.lock();
        assert_eq!(versions.len(), 1);
        assert!(!versions.spilled(), "pruned back to one version, the chain is inline again");
    }

    fn val(s: &str) -> Option<Value> {
        Some(Arc::from(s.as_bytes()))
    }

    #[test]
    fn reads_see_the_newest_version_at_their_snapshot() {
        let store = Store::new();
        let t = store.table("t");
        store.install(&t, b"a", None, 3, val("1"), 0);
        store.install(&t, b"a", None, 9, val("2"), 0);
        store.install(&t, b"a", None, 12, None, 0);
        assert!(t.read(b"a", 2).is_none());
        assert_eq!(t.read(b"a", 3).unwrap().value, val("1"));
        assert_eq!(t.read(b"a", 11).unwrap().value, val("2"));
        assert_eq!(t.read(b"a", 12).unwrap().value, None);
        assert_eq!(t.newest_csn(b"a"), 12);
    }

    #[test]
    fn gc_keeps_the_base_version_at_the_horizon_and_purge_restores_it() {
        let store = Store::new();
        let t = store.table("t");
        store.install(&t, b"a", None, 1, val("1"), 0);
        store.install(&t, b"a", None, 2, val("2"), 0);
        // Horizon 2 (durable up to 2): csn 1 is garbage, csn 2 is the base.
        store.install(&t, b"a", None, 3, val("3"), 2);
        assert!(t.read(b"a", 1).is_none());
        store.purge_above(&t, b"a", 2);
        assert_eq!(t.read(b"a", 100).unwrap().value, val("2"));
        store.purge_above(&t, b"a", 0);
        assert_eq!(t.row_count(), 0);
        assert_eq!(store.bytes(), 0);
    }

    #[test]
    fn a_handle_to_a_removed_row_is_never_written_to() {
        let store = Store::new();
        let t = store.table("t");
        store.install(&t, b"a", None, 1, None, 0);
        let stale = t.row(b"a").unwrap();
        assert!(store.gc_batch(&t, None, 1, 10).is_none());
        assert!(stale.is_removed() && t.row(b"a").is_none());
        store.install(&t, b"a", Some(&stale), 2, val("new"), 1);
        assert_eq!(t.read(b"a", 2).unwrap().value, val("new"));
        assert!(stale.read(2).is_none(), "the removed row stayed untouched");
        assert_eq!(t.newest_csn_via(b"a", Some(&stale)), 2);
    }

    #[test]
    fn gc_removes_dead_rows_and_accounts_bytes() {
        let store = Store::new();
        let t = store.table("t");
        for i in 0..10u8 {
            store.install(&t, &[i], None, 1, val("x"), 0);
            store.install(&t, &[i], None, 2, if i % 2 == 0 { None } else { val("y") }, 0);
        }
        let mut from = None;
        while let Some(next) = store.gc_batch(&t, from.as_deref(), 2, 3) {
            from = Some(next);
        }
        assert_eq!(t.row_count(), 5);
        let (live, _) = t.scan((Bound::Unbounded, Bound::Unbounded), 2, false, 100);
        assert_eq!(live.len(), 5);
        let per_row = ROW_OVERHEAD_BYTES + 1 + VERSION_OVERHEAD_BYTES + 1;
        assert_eq!(store.bytes() as i64, 5 * per_row);
    }

    #[test]
    fn rows_a_scan_visited_are_freed_once_collected() {
        let table = Table { name: Arc::from("t"), rows: SkipMap::new() };
        let store = Store::new();
        let n = 10_000u32;
        for i in 0..n {
            store.install(&table, &i.to_be_bytes(), None, 1 + u64::from(i), val("v"), 0);
        }
        let rows: Vec<std::sync::Weak<Row>> =
            (0..n).map(|i| Arc::downgrade(&table.row(&i.to_be_bytes()).unwrap())).collect();
        // Scans of every kind pass over the rows (a leaked hold on a row keeps it forever).
        let all = (Bound::Unbounded, Bound::Unbounded);
        assert_eq!(table.scan(all, 100_000, false, usize::MAX).0.len(), n as usize);
        assert_eq!(table.scan(all, 100_000, true, usize::MAX).0.len(), n as usize);
        assert_eq!(table.scan(all, 100_000, false, 7).0.len(), 7);
        assert!(!table.changed_since(all, 100_000));
        let base = 100_000u64;
        for i in 0..n {
            store.install(&table, &i.to_be_bytes(), None, base + u64::from(i), None, 0);
        }
        let horizon = base + u64::from(n);
        let mut from = None;
        loop {
            from = store.gc_batch(&table, from.as_deref(), horizon, 1000);
            if from.is_none() {
                break;
            }
        }
        assert_eq!(table.row_count(), 0);
        // Removed entries are freed by epoch-based reclamation as threads pass through.
        let alive = || rows.iter().filter(|r| r.strong_count() > 0).count();
        for _ in 0..10_000 {
            if alive() == 0 {
                break;
            }
            crossbeam_epoch::pin().flush();
        }
        assert_eq!(alive(), 0, "rows removed by garbage collection were never freed");
    }
}
