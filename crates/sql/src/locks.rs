//! Row locks, as PostgreSQL takes them: UPDATE, DELETE, INSERT and `SELECT … FOR UPDATE`
//! lock the rows they touch exclusively, `FOR SHARE` and a foreign key's check lock the
//! referenced row shared, until the transaction's commit point (never until its durability
//! point: G9). A waiter that would close a cycle of waits gets 40P01.
//!
//! The engine is optimistic; the locks serve READ COMMITTED, where an UPDATE must apply to the
//! newest committed version of a row (PostgreSQL re-reads it after waiting) instead of
//! failing or losing an update. Under REPEATABLE READ and SERIALIZABLE the engine's
//! validation decides; the locks only make the loser wait for the winner.

use std::collections::hash_map::RandomState;
use std::collections::{hash_map, HashMap};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::{code, Result, SqlError};

/// Capacity of the lock table below which it is never shrunk.
const SHRINK_ABOVE: usize = 4096;

/// A locked row: its table's id and a keyed 64-bit hash of its primary key.
///
/// A lock names its row by hash, not by the key's bytes: taking one allocates nothing, and a
/// bulk write's million locks cost about 64 bytes each (key and holder). Two keys sharing a
/// hash would only make one writer wait for the other (never let two hold the same row), and
/// the hash is keyed with a per-process random seed, so a client cannot choose keys that
/// collide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LockKey {
    table: u64,
    key: u64,
}

impl LockKey {
    /// The advisory lock `key` (`pg_advisory_lock(bigint)`; `pair` for the two-integer
    /// form, a separate space of keys as in PostgreSQL). Table ids never come near these.
    pub fn advisory(key: u64, pair: bool) -> LockKey {
        LockKey { table: if pair { u64::MAX - 1 } else { u64::MAX }, key }
    }

    /// Whether it is an advisory lock's.
    fn is_advisory(&self) -> bool {
        self.table >= u64::MAX - 1
    }

    /// The lock of `key` in table `table`.
    pub fn new(table: u64, key: &[u8]) -> LockKey {
        static SEED: std::sync::OnceLock<RandomState> = std::sync::OnceLock::new();
        LockKey { table, key: SEED.get_or_init(RandomState::new).hash_one(key) }
    }
}

/// How a row is locked. Exclusive (UPDATE, DELETE, INSERT, `FOR UPDATE`) conflicts with
/// every other holder; shared (`FOR SHARE`, a foreign key's check that its referenced row
/// exists) conflicts only with exclusive, so many transactions may insert rows referencing
/// one parent at once while none may delete it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// Shared with other shared holders.
    Shared,
    /// Held by one owner alone.
    Exclusive,
}

/// A held lock: its holders, and the condition its waiters sleep on (so a release wakes only
/// the waiters of that row), made by the first waiter: most locks are never waited for, and a
/// bulk insert takes one per row.
struct Held {
    /// The exclusive holder, or the first shared one.
    owner: u64,
    mode: LockMode,
    /// Further shared holders (an empty Vec allocates nothing).
    others: Vec<u64>,
    released: Option<Arc<Condvar>>,
}

impl Held {
    fn holders(&self) -> impl Iterator<Item = u64> + '_ {
        std::iter::once(self.owner).chain(self.others.iter().copied())
    }

    fn holds(&self, owner: u64) -> bool {
        self.holders().any(|h| h == owner)
    }

    /// The holders `owner` must wait for to take the lock in `mode`.
    fn blockers(&self, owner: u64, mode: LockMode) -> Vec<u64> {
        match (mode, self.mode) {
            (LockMode::Exclusive, _) => self.holders().filter(|&h| h != owner).collect(),
            (LockMode::Shared, LockMode::Exclusive) if self.owner != owner => vec![self.owner],
            (LockMode::Shared, _) => Vec::new(),
        }
    }

    /// Grants the lock to `owner` in `mode` (no blockers are left).
    fn grant(&mut self, owner: u64, mode: LockMode) {
        match mode {
            LockMode::Exclusive => {
                // `owner` is the only holder: an upgrade, or a lock it already had.
                self.owner = owner;
                self.mode = LockMode::Exclusive;
                self.others = Vec::new();
            }
            LockMode::Shared if !self.holds(owner) => self.others.push(owner),
            LockMode::Shared => {}
        }
    }

    /// Takes `owner` off the holders; true when none is left.
    fn release(&mut self, owner: u64) -> bool {
        if self.owner == owner {
            match self.others.pop() {
                Some(next) => self.owner = next,
                None => return true,
            }
        } else {
            self.others.retain(|&h| h != owner);
        }
        false
    }
}

#[derive(Default)]
struct State {
    holders: HashMap<LockKey, Held>,
    /// What each waiting owner waits for: the lock and the mode it asked for. Whom it waits
    /// for is read from the lock's holders when a cycle is looked for, so the wait graph is
    /// never stale (an owner is a session: one that released a lock and waits again must
    /// not appear to still hold what it let go).
    waits_for: HashMap<u64, (LockKey, LockMode)>,
    /// The advisory keys among `holders`, so that listing them (`pg_locks`) does not walk
    /// every row lock.
    advisory: std::collections::HashSet<LockKey>,
}

impl State {
    /// Whether `owner` waiting for `blockers` would close a cycle of waits.
    fn closes_cycle(&self, owner: u64, blockers: &[u64]) -> bool {
        let mut stack: Vec<u64> = blockers.to_vec();
        let mut seen = std::collections::HashSet::new();
        while let Some(next) = stack.pop() {
            if next == owner {
                return true;
            }
            if seen.len() > 10_000 {
                return true; // a wait graph this large is treated as a deadlock
            }
            if seen.insert(next) {
                if let Some((key, mode)) = self.waits_for.get(&next) {
                    if let Some(held) = self.holders.get(key) {
                        stack.extend(held.blockers(next, *mode));
                    }
                }
            }
        }
        false
    }
}

/// An advisory lock held or waited for ([`LockManager::advisory`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdvisoryEntry {
    /// The session (lock owner).
    pub owner: u64,
    /// The key: a bigint's bits, or two integers' (the first in the high half).
    pub key: u64,
    /// The two-integer form.
    pub pair: bool,
    /// Shared or exclusive.
    pub mode: LockMode,
    /// Held (or waited for).
    pub granted: bool,
}

/// The lock table shared by every session.
#[derive(Default)]
pub struct LockManager {
    state: Mutex<State>,
}

impl LockManager {
    /// Locks `key` for `owner` in `mode`; returns whether it was newly acquired (false when
    /// `owner` already held it, in any mode). Waits for conflicting holders to finish; fails
    /// with 40P01 on a cycle of waits, 55P03 past `timeout`, 57014 when `interrupt` is set.
    pub fn lock(
        &self,
        owner: u64,
        key: LockKey,
        mode: LockMode,
        timeout: Option<Duration>,
        interrupt: &AtomicBool,
    ) -> Result<bool> {
        let started = Instant::now();
        let mut state = self.state.lock();
        loop {
            // One search of the table whether the row is free, ours, or someone else's.
            let (blockers, released) = match state.holders.entry(key) {
                hash_map::Entry::Vacant(slot) => {
                    slot.insert(Held { owner, mode, others: Vec::new(), released: None });
                    if key.is_advisory() {
                        state.advisory.insert(key);
                    }
                    if !state.waits_for.is_empty() {
                        state.waits_for.remove(&owner);
                    }
                    return Ok(true);
                }
                hash_map::Entry::Occupied(mut h) => {
                    let h = h.get_mut();
                    let blockers = h.blockers(owner, mode);
                    if blockers.is_empty() {
                        let had = h.holds(owner);
                        h.grant(owner, mode);
                        if !state.waits_for.is_empty() {
                            state.waits_for.remove(&owner);
                        }
                        return Ok(!had);
                    }
                    (blockers, h.released.get_or_insert_with(Default::default).clone())
                }
            };
            if state.closes_cycle(owner, &blockers) {
                state.waits_for.remove(&owner);
                return Err(SqlError::new(code::DEADLOCK, "deadlock detected").detail(
                    format!("Transaction {owner} waits for a row held by {}, which waits (through others) for {owner}.", blockers[0]),
                ).hint("The transaction might succeed if retried."));
            }
            state.waits_for.insert(owner, (key, mode));
            if interrupt.load(Ordering::Relaxed) {
                state.waits_for.remove(&owner);
                return Err(SqlError::new(
                    code::QUERY_CANCELED,
                    "canceling statement due to user request or statement timeout",
                ));
            }
            if let Some(timeout) = timeout {
                if started.elapsed() >= timeout {
                    state.waits_for.remove(&owner);
                    return Err(SqlError::new("55P03", "could not obtain lock on row"));
                }
            }
            // Woken when this row is released; the timeout only re-checks cancellation.
            released.wait_for(&mut state, Duration::from_millis(10));
        }
    }

    /// Takes `key` for `owner` in `mode` if no one else holds it in a conflicting mode, and
    /// never waits: whether `owner` holds it now.
    pub fn try_lock(&self, owner: u64, key: LockKey, mode: LockMode) -> bool {
        let mut state = self.state.lock();
        match state.holders.entry(key) {
            hash_map::Entry::Vacant(slot) => {
                slot.insert(Held { owner, mode, others: Vec::new(), released: None });
                if key.is_advisory() {
                    state.advisory.insert(key);
                }
                true
            }
            hash_map::Entry::Occupied(mut h) => {
                let h = h.get_mut();
                let free = h.blockers(owner, mode).is_empty();
                if free {
                    h.grant(owner, mode);
                }
                free
            }
        }
    }

    /// Turns `owner`'s exclusive hold of `key` into a shared one (waiters for a shared hold
    /// go on).
    pub fn downgrade(&self, owner: u64, key: LockKey) {
        let mut state = self.state.lock();
        if let Some(h) = state.holders.get_mut(&key) {
            if h.owner == owner && h.mode == LockMode::Exclusive {
                h.mode = LockMode::Shared;
                if let Some(released) = &h.released {
                    released.notify_all();
                }
            }
        }
    }

    /// Releases every lock in `keys` held by `owner`.
    pub fn release(&self, owner: u64, keys: impl IntoIterator<Item = LockKey>) {
        let mut state = self.state.lock();
        for key in keys {
            if let hash_map::Entry::Occupied(mut held) = state.holders.entry(key) {
                if !held.get().holds(owner) {
                    continue;
                }
                let released = if held.get_mut().release(owner) {
                    let released = held.remove().released;
                    if key.is_advisory() {
                        state.advisory.remove(&key);
                    }
                    released
                } else {
                    held.get().released.clone()
                };
                if let Some(released) = released {
                    released.notify_all();
                }
            }
        }
        state.waits_for.remove(&owner);
        // A bulk write's locks grew the table; give the memory back once they are gone
        // (a table never shrinks by itself). Shrinking costs O(len) and happens only after
        // len fell to an eighth of the capacity, so it is amortized over the releases.
        let capacity = state.holders.capacity();
        if capacity > SHRINK_ABOVE && state.holders.len() < capacity / 8 {
            let keep = (state.holders.len() * 2).max(SHRINK_ABOVE / 2);
            state.holders.shrink_to(keep);
        }
    }

    /// The advisory locks held and waited for (`pg_locks`): each holder's and waiter's
    /// owner, the key (`pair`: the two-integer form), the mode, and whether it is granted.
    pub fn advisory(&self) -> Vec<AdvisoryEntry> {
        let state = self.state.lock();
        let entry = |k: &LockKey, owner, mode, granted| AdvisoryEntry {
            owner,
            key: k.key,
            pair: k.table == u64::MAX - 1,
            mode,
            granted,
        };
        let mut out = Vec::new();
        for k in &state.advisory {
            if let Some(held) = state.holders.get(k) {
                out.extend(held.holders().map(|o| entry(k, o, held.mode, true)));
            }
        }
        for (owner, (k, mode)) in state.waits_for.iter().filter(|(_, (k, _))| k.is_advisory()) {
            out.push(entry(k, *owner, *mode, false));
        }
        out
    }

    /// How many owners are waiting for a lock.
    pub fn waiting(&self) -> usize {
        self.state.lock().waits_for.len()
    }

    /// How many rows are locked (for `kiln_stat`).
    pub fn held(&self) -> usize {
        self.state.lock().holders.len()
    }
}

/// The row locks one transaction holds. They are released when the transaction reaches its
/// commit point or ends, and — whatever ends it: a rollback, an error, a dropped connection
/// or a panic that unwinds the connection's thread — when this guard is dropped, so no lock
/// can outlive its owner.
pub struct HeldLocks {
    manager: Arc<LockManager>,
    owner: u64,
    keys: Vec<LockKey>,
}

impl HeldLocks {
    /// An owner with no locks yet.
    pub fn new(manager: Arc<LockManager>, owner: u64) -> HeldLocks {
        HeldLocks { manager, owner, keys: Vec::new() }
    }

    /// Locks `key` (see [`LockManager::lock`]); a lock already held is not taken twice.
    pub fn lock(
        &mut self,
        key: LockKey,
        mode: LockMode,
        timeout: Option<Duration>,
        interrupt: &AtomicBool,
    ) -> Result<()> {
        if self.manager.lock(self.owner, key, mode, timeout, interrupt)? {
            self.keys.push(key);
        }
        Ok(())
    }

    /// Releases every lock held so far.
    pub fn release_all(&mut self) {
        if !self.keys.is_empty() {
            self.manager.release(self.owner, std::mem::take(&mut self.keys));
        }
    }

    /// Releases the locks taken after the first `kept` (a rollback to a savepoint).
    pub fn release_since(&mut self, kept: usize) {
        if self.keys.len() > kept {
            let later = self.keys.split_off(kept);
            self.manager.release(self.owner, later);
        }
    }

    /// How many locks are held.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

impl Drop for HeldLocks {
    fn drop(&mut self) {
        self.release_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    const X: LockMode = LockMode::Exclusive;
    const S: LockMode = LockMode::Shared;

    #[test]
    fn waits_then_acquires_and_detects_deadlock() {
        let locks = Arc::new(LockManager::default());
        let stop = AtomicBool::new(false);
        assert!(locks.lock(1, LockKey::new(1, b"a"), X, None, &stop).unwrap());
        assert!(!locks.lock(1, LockKey::new(1, b"a"), X, None, &stop).unwrap());
        assert!(locks.lock(2, LockKey::new(1, b"b"), X, None, &stop).unwrap());
        // 2 waits for 1 on "a" (in a thread); then 1 asking for "b" closes the cycle.
        let l = locks.clone();
        let waiter = std::thread::spawn(move || {
            let stop = AtomicBool::new(false);
            l.lock(2, LockKey::new(1, b"a"), X, None, &stop)
        });
        while locks.state.lock().waits_for.get(&2) != Some(&(LockKey::new(1, b"a"), X)) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let err = locks.lock(1, LockKey::new(1, b"b"), X, None, &stop).unwrap_err();
        assert_eq!(err.code, code::DEADLOCK);
        locks.release(1, [LockKey::new(1, b"a")]);
        assert!(waiter.join().unwrap().unwrap());
        let err = locks
            .lock(3, LockKey::new(1, b"a"), X, Some(Duration::from_millis(20)), &stop)
            .unwrap_err();
        assert_eq!(err.code, "55P03");
    }

    #[test]
    fn a_lock_let_go_is_no_longer_waited_for() {
        // 1 waits for "a", held shared by 2 and 3. 2 lets go of it and (the same owner, as a
        // session's next transaction is) waits for "b", which 1 holds: no cycle, since 1 now
        // waits for 3 alone. A wait graph that kept 1's first blockers until 1 woke could
        // answer 40P01 in between.
        let locks = Arc::new(LockManager::default());
        let stop = AtomicBool::new(false);
        let (a, b) = (LockKey::new(1, b"a"), LockKey::new(1, b"b"));
        assert!(locks.lock(2, a, S, None, &stop).unwrap());
        assert!(locks.lock(3, a, S, None, &stop).unwrap());
        assert!(locks.lock(1, b, X, None, &stop).unwrap());
        let l = locks.clone();
        let one = std::thread::spawn(move || l.lock(1, a, X, None, &AtomicBool::new(false)));
        while locks.state.lock().waits_for.get(&1) != Some(&(a, X)) {
            std::thread::sleep(Duration::from_millis(1));
        }
        locks.release(2, [a]);
        let two = {
            let l = locks.clone();
            std::thread::spawn(move || l.lock(2, b, X, None, &AtomicBool::new(false)))
        };
        while locks.state.lock().waits_for.get(&2) != Some(&(b, X)) {
            std::thread::sleep(Duration::from_millis(1));
        }
        locks.release(3, [a]);
        assert!(one.join().unwrap().unwrap());
        locks.release(1, [a, b]);
        assert!(two.join().unwrap().unwrap(), "2 waited, then got b: no deadlock");
    }

    #[test]
    fn shared_holders_exclude_an_exclusive_one_and_upgrades_deadlock() {
        let locks = Arc::new(LockManager::default());
        let stop = AtomicBool::new(false);
        let row = LockKey::new(1, b"parent");
        let none = Some(Duration::ZERO);
        assert!(locks.lock(1, row, S, None, &stop).unwrap());
        assert!(locks.lock(2, row, S, None, &stop).unwrap());
        assert!(!locks.lock(2, row, S, None, &stop).unwrap());
        // An exclusive request waits for every shared holder, and a shared one for it.
        assert_eq!(locks.lock(3, row, X, none, &stop).unwrap_err().code, "55P03");
        locks.release(1, [row]);
        assert_eq!(locks.lock(3, row, X, none, &stop).unwrap_err().code, "55P03");
        // The last shared holder may upgrade.
        assert!(!locks.lock(2, row, X, None, &stop).unwrap());
        assert_eq!(locks.lock(1, row, S, none, &stop).unwrap_err().code, "55P03");
        locks.release(2, [row]);
        assert_eq!(locks.held(), 0);
        // Two shared holders that both want the row exclusively: one of them is told.
        assert!(locks.lock(1, row, S, None, &stop).unwrap());
        assert!(locks.lock(2, row, S, None, &stop).unwrap());
        let l = locks.clone();
        let first = std::thread::spawn(move || l.lock(1, row, X, None, &AtomicBool::new(false)));
        while locks.state.lock().waits_for.get(&1) != Some(&(row, X)) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(locks.lock(2, row, X, None, &stop).unwrap_err().code, code::DEADLOCK);
        locks.release(2, [row]);
        assert!(!first.join().unwrap().unwrap());
        locks.release(1, [row]);
        assert_eq!(locks.held(), 0);
    }

    #[test]
    fn held_locks_are_released_when_dropped_even_by_a_panic() {
        let locks = Arc::new(LockManager::default());
        let stop = AtomicBool::new(false);
        let l = locks.clone();
        let died = std::thread::spawn(move || {
            let mut held = HeldLocks::new(l, 7);
            held.lock(LockKey::new(1, b"a"), X, None, &AtomicBool::new(false)).unwrap();
            held.lock(LockKey::new(1, b"b"), X, None, &AtomicBool::new(false)).unwrap();
            panic!("the connection's thread dies holding two row locks");
        })
        .join();
        assert!(died.is_err());
        assert_eq!(locks.held(), 0);
        assert!(locks.lock(8, LockKey::new(1, b"a"), X, Some(Duration::ZERO), &stop).unwrap());
    }

    #[test]
    fn the_lock_table_gives_back_what_a_bulk_write_grew() {
        let locks = LockManager::default();
        let stop = AtomicBool::new(false);
        let keys: Vec<LockKey> =
            (0u32..100_000).map(|i| LockKey::new(1, &i.to_be_bytes())).collect();
        for &k in &keys {
            locks.lock(1, k, X, None, &stop).unwrap();
        }
        assert!(locks.lock(2, LockKey::new(2, b"x"), X, None, &stop).unwrap());
        assert!(locks.state.lock().holders.capacity() >= 100_000);
        locks.release(1, keys);
        let capacity = locks.state.lock().holders.capacity();
        assert!(capacity <= 4 * SHRINK_ABOVE, "capacity {capacity} after the bulk locks went");
        // The lock another owner holds survived the shrink.
        assert!(!locks.lock(2, LockKey::new(2, b"x"), X, None, &stop).unwrap());
        assert_eq!(locks.held(), 1);
    }
}
