//! Advisory locks (`pg_advisory_lock` and its family): locks on numbers an application
//! chooses, kept in the same lock table as row locks, so a wait between the two kinds is
//! seen by the same deadlock check (40P01), and held under the session's one lock owner.
//!
//! As in PostgreSQL, a session-level lock is held until it is unlocked as many times as it
//! was locked (or the session ends), whatever happens to transactions; a transaction-level
//! lock is held until its transaction ends (at the commit point, like row locks: never until
//! the durability point) or a rollback to a savepoint taken before it. Shared and exclusive
//! holds of one key by one session are counted apart; the lock table holds the strongest.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Result, SqlError};
use crate::locks::{LockKey, LockManager, LockMode};

/// How many keys one session may hold advisory locks on at once: past it, 53200, as
/// PostgreSQL answers when its lock table is full (each held key costs memory until the
/// session lets it go).
pub const ADVISORY_LOCKS_MAX: usize = 1 << 16;

/// Which of a session's holds of a key a call counts: session or transaction level,
/// shared or exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hold {
    /// Held until the transaction ends (`pg_advisory_xact_lock…`).
    pub xact: bool,
    /// Shared (`…_shared`) rather than exclusive.
    pub shared: bool,
}

impl Hold {
    fn slot(self) -> usize {
        usize::from(self.xact) * 2 + usize::from(!self.shared)
    }
}

/// A session's advisory locks.
pub struct AdvisoryLocks {
    manager: Arc<LockManager>,
    owner: u64,
    /// Per key, how many times it is held: session shared, session exclusive, transaction
    /// shared, transaction exclusive.
    held: HashMap<LockKey, [u32; 4]>,
    /// The transaction-level holds in the order they were taken (a rollback to a savepoint
    /// gives back those taken after it).
    xact_log: Vec<(LockKey, usize)>,
}

/// The mode the lock table must hold for these counts, if any.
fn strongest(counts: &[u32; 4]) -> Option<LockMode> {
    if counts[1] > 0 || counts[3] > 0 {
        Some(LockMode::Exclusive)
    } else if counts[0] > 0 || counts[2] > 0 {
        Some(LockMode::Shared)
    } else {
        None
    }
}

impl AdvisoryLocks {
    /// No locks yet, for the session whose locks are owned by `owner`.
    pub fn new(manager: Arc<LockManager>, owner: u64) -> AdvisoryLocks {
        AdvisoryLocks { manager, owner, held: HashMap::new(), xact_log: Vec::new() }
    }

    /// Takes `key` as `hold`. With `wait`, waits for other holders (40P01 on a cycle of
    /// waits, 55P03 past `timeout`, 57014 when interrupted) and returns true; without, returns
    /// whether it was free.
    pub fn lock(
        &mut self,
        key: LockKey,
        hold: Hold,
        wait: bool,
        timeout: Option<Duration>,
        interrupt: &AtomicBool,
    ) -> Result<bool> {
        let counts = self.held.get(&key).copied().unwrap_or_default();
        let now = strongest(&counts);
        if now.is_none() && self.held.len() >= ADVISORY_LOCKS_MAX {
            return Err(SqlError::new("53200", "out of shared memory").hint(format!(
                "A session holds at most {ADVISORY_LOCKS_MAX} advisory locks at once."
            )));
        }
        let wanted = if hold.shared { LockMode::Shared } else { LockMode::Exclusive };
        if now != Some(LockMode::Exclusive) && now != Some(wanted) {
            if wait {
                self.manager.lock(self.owner, key, wanted, timeout, interrupt)?;
            } else if !self.manager.try_lock(self.owner, key, wanted) {
                return Ok(false);
            }
        }
        self.held.entry(key).or_default()[hold.slot()] += 1;
        if hold.xact {
            self.xact_log.push((key, hold.slot()));
        }
        Ok(true)
    }

    /// Gives back one session-level hold of `key`: false when the session has none of that
    /// kind (PostgreSQL warns and returns false too).
    pub fn unlock(&mut self, key: LockKey, shared: bool) -> bool {
        let slot = Hold { xact: false, shared }.slot();
        match self.held.get_mut(&key) {
            Some(counts) if counts[slot] > 0 => {
                let before = strongest(counts);
                counts[slot] -= 1;
                self.settle(key, before);
                true
            }
            _ => false,
        }
    }

    /// Gives back every session-level hold (`pg_advisory_unlock_all`, DISCARD ALL).
    pub fn unlock_all(&mut self) {
        let keys: Vec<LockKey> = self.held.keys().copied().collect();
        for key in keys {
            let counts = self.held.get_mut(&key).expect("listed");
            let before = strongest(counts);
            counts[0] = 0;
            counts[1] = 0;
            self.settle(key, before);
        }
    }

    /// How many transaction-level holds were taken (a savepoint's mark).
    pub fn mark(&self) -> usize {
        self.xact_log.len()
    }

    /// Gives back the transaction-level holds taken after `mark`.
    pub fn rollback_to(&mut self, mark: usize) {
        while self.xact_log.len() > mark {
            let (key, slot) = self.xact_log.pop().expect("longer than mark");
            if let Some(counts) = self.held.get_mut(&key) {
                let before = strongest(counts);
                counts[slot] = counts[slot].saturating_sub(1);
                self.settle(key, before);
            }
        }
    }

    /// The transaction ended: its holds go.
    pub fn end_transaction(&mut self) {
        self.rollback_to(0);
    }

    /// After a count of `key` fell: the lock table follows (released, or down to shared).
    fn settle(&mut self, key: LockKey, before: Option<LockMode>) {
        let counts = self.held.get(&key).copied().unwrap_or_default();
        match (before, strongest(&counts)) {
            (Some(_), None) => {
                self.held.remove(&key);
                self.manager.release(self.owner, [key]);
            }
            (Some(LockMode::Exclusive), Some(LockMode::Shared)) => {
                self.manager.downgrade(self.owner, key)
            }
            _ => {}
        }
    }
}

impl Drop for AdvisoryLocks {
    fn drop(&mut self) {
        let keys: Vec<LockKey> = self.held.drain().map(|(k, _)| k).collect();
        if !keys.is_empty() {
            self.manager.release(self.owner, keys);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SESSION: Hold = Hold { xact: false, shared: false };
    const SESSION_SHARED: Hold = Hold { xact: false, shared: true };
    const XACT: Hold = Hold { xact: true, shared: false };

    #[test]
    fn holds_are_counted_and_levels_kept_apart() {
        let manager = Arc::new(LockManager::default());
        let stop = AtomicBool::new(false);
        let mut a = AdvisoryLocks::new(manager.clone(), 1);
        let mut b = AdvisoryLocks::new(manager.clone(), 2);
        let k = LockKey::advisory(7, false);
        assert!(a.lock(k, SESSION, true, None, &stop).unwrap());
        assert!(a.lock(k, SESSION, true, None, &stop).unwrap());
        assert!(!b.lock(k, SESSION, false, None, &stop).unwrap());
        assert!(a.unlock(k, false));
        assert!(!b.lock(k, SESSION, false, None, &stop).unwrap(), "still held once");
        // A transaction-level hold of the same key outlives the session-level one.
        assert!(a.lock(k, XACT, true, None, &stop).unwrap());
        assert!(a.unlock(k, false));
        assert!(!a.unlock(k, false), "no session-level hold is left");
        assert!(!b.lock(k, SESSION, false, None, &stop).unwrap());
        a.end_transaction();
        assert!(b.lock(k, SESSION, false, None, &stop).unwrap());
        // The two-integer keys are a separate space.
        assert!(a.lock(LockKey::advisory(7, true), SESSION, false, None, &stop).unwrap());
    }

    #[test]
    fn shared_holds_share_and_a_downgrade_lets_sharers_in() {
        let manager = Arc::new(LockManager::default());
        let stop = AtomicBool::new(false);
        let mut a = AdvisoryLocks::new(manager.clone(), 1);
        let mut b = AdvisoryLocks::new(manager.clone(), 2);
        let k = LockKey::advisory(1, false);
        assert!(a.lock(k, SESSION_SHARED, true, None, &stop).unwrap());
        assert!(b.lock(k, SESSION_SHARED, false, None, &stop).unwrap());
        assert!(!b.lock(k, SESSION, false, None, &stop).unwrap(), "a holds it shared");
        assert!(b.unlock(k, true));
        assert!(a.lock(k, SESSION, false, None, &stop).unwrap(), "upgrade");
        assert!(!b.lock(k, SESSION_SHARED, false, None, &stop).unwrap());
        assert!(a.unlock(k, false));
        assert!(b.lock(k, SESSION_SHARED, false, None, &stop).unwrap(), "a is down to shared");
        drop(a);
        assert!(b.lock(k, SESSION, false, None, &stop).unwrap(), "a's locks went with it");
    }

    #[test]
    fn a_session_holds_a_bounded_number_of_keys() {
        let manager = Arc::new(LockManager::default());
        let stop = AtomicBool::new(false);
        let mut a = AdvisoryLocks::new(manager.clone(), 1);
        for k in 0..ADVISORY_LOCKS_MAX as u64 {
            a.lock(LockKey::advisory(k, false), XACT, true, None, &stop).unwrap();
        }
        let past = LockKey::advisory(u64::MAX, false);
        assert_eq!(a.lock(past, XACT, true, None, &stop).unwrap_err().code, "53200");
        // A key already held can be taken again; after the transaction there is room.
        assert!(a.lock(LockKey::advisory(0, false), XACT, true, None, &stop).unwrap());
        a.end_transaction();
        assert!(a.lock(past, SESSION, true, None, &stop).unwrap());
        assert_eq!(manager.held(), 1);
    }

    #[test]
    fn savepoint_rollback_gives_back_later_transaction_holds() {
        let manager = Arc::new(LockManager::default());
        let stop = AtomicBool::new(false);
        let mut a = AdvisoryLocks::new(manager.clone(), 1);
        let mut b = AdvisoryLocks::new(manager.clone(), 2);
        let (k1, k2) = (LockKey::advisory(1, false), LockKey::advisory(2, false));
        a.lock(k1, XACT, true, None, &stop).unwrap();
        let mark = a.mark();
        a.lock(k2, XACT, true, None, &stop).unwrap();
        a.rollback_to(mark);
        assert!(b.lock(k2, SESSION, false, None, &stop).unwrap());
        assert!(!b.lock(k1, SESSION, false, None, &stop).unwrap());
        a.unlock_all();
        assert!(!b.lock(k1, SESSION, false, None, &stop).unwrap(), "unlock_all keeps xact holds");
    }
}
