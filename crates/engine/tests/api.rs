//! The ED API's semantics beyond the golden scripts: flushing on the timer alone, session sync,
//! waits with deadlines, subscriptions, and statuses across a reopen.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use kiln_engine::{
    CommitMode, Config, DurabilityEvent, Engine, Faults, FaultyVfs, TxnKind, TxnOptions, TxnStatus,
};

fn put(engine: &Engine, key: &[u8], mode: CommitMode) -> kiln_engine::TxnId {
    let mut txn = engine.begin(TxnOptions::new()).unwrap();
    txn.put("kv", key, b"v").unwrap();
    txn.commit_with(mode).unwrap()
}

/// With no safe waiter, persist or wait, the log writer still hardens fast commits on its own
/// (within the vulnerability window under normal operation; the deadline here is only a
/// liveness bound, the window itself is measured by kiln-bench). Each round starts with the
/// writer idle, which is when it must be woken by the commit itself.
#[test]
fn fast_commits_harden_on_the_timer_alone() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config { vulnerability_window: Duration::from_millis(20), ..Config::default() };
    let engine = Engine::open(dir.path(), config).unwrap();
    let events = engine.subscribe();
    for round in 0..5u8 {
        std::thread::sleep(Duration::from_millis(50));
        let id = put(&engine, &[round], CommitMode::Fast);
        let event = events.recv_timeout(Duration::from_secs(30)).expect("no durability event");
        assert_eq!(
            event,
            DurabilityEvent::Durable { epoch: id.epoch, csn: id.csn },
            "round {round}"
        );
        assert_eq!(engine.status(id), TxnStatus::Durable);
    }
}

/// `Session::sync` waits for this session's commits only, and only up to its last one.
#[test]
fn session_sync_covers_every_commit_of_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config { timed_flush: false, ..Config::default() };
    let engine = Engine::open(dir.path(), config).unwrap();
    let (one, two) = (engine.session(), engine.session());
    assert!(one.last_txn_id().is_none());
    one.sync().unwrap(); // nothing committed: returns at once
    let a = {
        let mut txn = one.begin(TxnOptions::new()).unwrap();
        txn.put("kv", b"a", b"1").unwrap();
        txn.commit_fast().unwrap()
    };
    let b = {
        let mut txn = one.begin(TxnOptions::new()).unwrap();
        txn.put("kv", b"b", b"1").unwrap();
        txn.commit_fast().unwrap()
    };
    let aborted = two.begin(TxnOptions::new()).unwrap().abort();
    assert_eq!(aborted.kind, TxnKind::Aborted);
    assert_eq!(two.last_txn_id(), Some(aborted));
    two.sync().unwrap(); // an aborted transaction has nothing to wait for
    assert_eq!(engine.status(a), TxnStatus::Committed);
    one.sync().unwrap();
    assert_eq!(one.last_txn_id(), Some(b));
    assert_eq!((engine.status(a), engine.status(b)), (TxnStatus::Durable, TxnStatus::Durable));
}

/// A safe commit's record does not wake the writer thread (its committer flushes it), so a
/// safe commit that passes its commit point and is never acknowledged must still wake the
/// writer: its record, and fast commits queued behind it, harden on the timer.
#[test]
fn a_safe_commit_never_acknowledged_still_hardens() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config { vulnerability_window: Duration::from_millis(20), ..Config::default() };
    let engine = Engine::open(dir.path(), config).unwrap();
    let events = engine.subscribe();
    for round in 0..5u8 {
        std::thread::sleep(Duration::from_millis(50));
        let mut txn = engine.begin(TxnOptions::new()).unwrap();
        txn.put("kv", &[round], b"safe").unwrap();
        let committed = txn.commit_point(CommitMode::Safe).unwrap();
        let safe = committed.id();
        let fast = put(&engine, &[round, 1], CommitMode::Fast);
        drop(committed);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while engine.status(fast) != TxnStatus::Durable {
            assert!(std::time::Instant::now() < deadline, "round {round}: never hardened");
            events.recv_timeout(Duration::from_millis(100));
        }
        assert_eq!(engine.status(safe), TxnStatus::Durable);
    }
}

/// A wait with a deadline reports the status at the deadline when durability is stalled, and
/// the final status once it is not.
#[test]
fn wait_with_a_deadline_reports_committed_while_stalled() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    // No space zero-filled ahead of the log, so the full disk stalls the very next flush.
    let config = Config {
        vfs: Arc::new(FaultyVfs::new(faults.clone())),
        log_preallocate_bytes: 0,
        ..Config::default()
    };
    let engine = Engine::open(dir.path(), config).unwrap();
    faults.free_bytes.store(0, Ordering::SeqCst);
    let id = put(&engine, b"a", CommitMode::Fast);
    assert_eq!(engine.wait(id, Duration::from_millis(100)).unwrap(), TxnStatus::Committed);
    faults.free_bytes.store(u64::MAX, Ordering::SeqCst);
    assert_eq!(engine.wait(id, Duration::from_secs(30)).unwrap(), TxnStatus::Durable);
    let (epoch, csn) = engine.persist().unwrap();
    assert_eq!((epoch, csn), (id.epoch, id.csn));
}

/// Many threads waiting on different transactions are each woken, and statuses of all of them
/// answer the same after a reopen.
#[test]
fn concurrent_safe_commits_are_all_acknowledged_durable_and_stay_so() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), Config::default()).unwrap();
    let ids: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..32u32)
            .map(|t| {
                let engine = &engine;
                s.spawn(move || {
                    (0..20u32)
                        .map(|i| put(engine, &(t * 1000 + i).to_be_bytes(), CommitMode::Safe))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(ids.len(), 640);
    for id in &ids {
        assert_eq!(engine.status(*id), TxnStatus::Durable);
    }
    let stats = engine.stats();
    assert!(stats.flushes < 640, "safe commits shared flushes (group commit): {stats:?}");
    engine.close().unwrap();
    let engine = Engine::open(dir.path(), Config::default()).unwrap();
    for id in &ids {
        assert_eq!(engine.status(*id), TxnStatus::Durable);
    }
    let mut txn = engine.begin(TxnOptions::new().read_only()).unwrap();
    assert_eq!(txn.scan("kv", kiln_engine::Scan::all()).unwrap().len(), 640);
}

/// `Session::sync` waits for the session's update transactions even when a read-only
/// transaction (whose id is only its read dependency) finished after them.
#[test]
fn sync_covers_updates_before_a_read_only_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let config =
        Config { vulnerability_window: std::time::Duration::from_secs(30), ..Config::default() };
    let engine = Engine::open(dir.path(), config).unwrap();
    let session = engine.session();
    let mut txn = session.begin(TxnOptions::new()).unwrap();
    txn.put("t", b"k", b"v").unwrap();
    let id = txn.commit_fast().unwrap();
    // A read-only transaction that read nothing: its id's CSN is 0.
    let txn = session.begin(TxnOptions::new().read_only()).unwrap();
    txn.commit_fast().unwrap();
    assert_eq!(engine.status(id), TxnStatus::Committed, "the window is long: not durable yet");
    session.sync().unwrap();
    assert_eq!(engine.status(id), TxnStatus::Durable);
}

/// Savepoints: writes after one are undone by `rollback_to`, earlier ones stay; `release`
/// keeps the writes.
#[test]
fn savepoints_undo_later_writes() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), Config::default()).unwrap();
    let mut setup = engine.begin(TxnOptions::new()).unwrap();
    setup.put("t", b"a", b"0").unwrap();
    setup.commit_safe().unwrap();
    let mut txn = engine.begin(TxnOptions::new()).unwrap();
    txn.put("t", b"a", b"1").unwrap();
    let sp = txn.savepoint();
    txn.put("t", b"a", b"2").unwrap();
    txn.put("t", b"b", b"new").unwrap();
    txn.delete("t", b"a").unwrap();
    assert_eq!(txn.get("t", b"a").unwrap(), None);
    txn.rollback_to(sp).unwrap();
    assert_eq!(txn.get("t", b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(txn.get("t", b"b").unwrap(), None);
    let inner = txn.savepoint();
    txn.put("t", b"c", b"kept").unwrap();
    txn.release(inner);
    txn.commit_safe().unwrap();
    let mut check = engine.begin(TxnOptions::new().read_only()).unwrap();
    assert_eq!(check.get("t", b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(check.get("t", b"b").unwrap(), None);
    assert_eq!(check.get("t", b"c").unwrap().as_deref(), Some(&b"kept"[..]));
}

/// An inverted or empty range (`k > 5 AND k < 3`) scans nothing, with or without own writes
/// in the keyspace, at every isolation level; it never panics.
#[test]
fn inverted_ranges_are_empty() {
    use std::ops::Bound;
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), Config::default()).unwrap();
    put(&engine, b"4", CommitMode::Fast);
    for isolation in [
        kiln_engine::IsolationLevel::ReadCommitted,
        kiln_engine::IsolationLevel::RepeatableRead,
        kiln_engine::IsolationLevel::Serializable,
    ] {
        let mut txn = engine.begin(TxnOptions::new().isolation(isolation)).unwrap();
        txn.put("kv", b"1", b"own").unwrap();
        for (start, end) in [
            (Bound::Excluded(&b"5"[..]), Bound::Excluded(&b"3"[..])),
            (Bound::Included(&b"5"[..]), Bound::Included(&b"3"[..])),
            (Bound::Excluded(&b"4"[..]), Bound::Excluded(&b"4"[..])),
            (Bound::Included(&b"4"[..]), Bound::Excluded(&b"4"[..])),
        ] {
            let scan = kiln_engine::Scan { start, end, ..kiln_engine::Scan::all() };
            assert!(txn.scan("kv", scan).unwrap().is_empty());
        }
        let one = kiln_engine::Scan {
            start: Bound::Included(&b"4"[..]),
            end: Bound::Included(&b"4"[..]),
            ..kiln_engine::Scan::all()
        };
        assert_eq!(txn.scan("kv", one).unwrap().len(), 1);
        txn.commit_fast().unwrap();
    }
}

/// ROLLBACK TO undoes a clear and brings back the writes it dropped; a clear after a
/// savepoint that is kept stays.
#[test]
fn savepoints_undo_a_clear() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), Config::default()).unwrap();
    put(&engine, b"stored", CommitMode::Safe);
    let mut txn = engine.begin(TxnOptions::new()).unwrap();
    txn.put("kv", b"own", b"1").unwrap();
    let sp = txn.savepoint();
    txn.clear("kv").unwrap();
    txn.put("kv", b"later", b"2").unwrap();
    assert_eq!(txn.scan("kv", kiln_engine::Scan::all()).unwrap().len(), 1);
    txn.rollback_to(sp).unwrap();
    let keys: Vec<Vec<u8>> =
        txn.scan("kv", kiln_engine::Scan::all()).unwrap().into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, vec![b"own".to_vec(), b"stored".to_vec()]);
    txn.clear("kv").unwrap();
    txn.put("kv", b"last", b"3").unwrap();
    assert_eq!(txn.operations().clears, 2);
    txn.commit_safe().unwrap();
    let mut check = engine.begin(TxnOptions::new().read_only()).unwrap();
    let keys: Vec<Vec<u8>> =
        check.scan("kv", kiln_engine::Scan::all()).unwrap().into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, vec![b"last".to_vec()]);
}

/// A guarded write conflicts, even under READ COMMITTED, with a write of its key committed
/// after the snapshot it was made in; a plain write there replaces it (last writer wins),
/// and a guarded write made in a newer snapshot, or undone by a rollback to a savepoint, does
/// not conflict.
#[test]
fn guarded_writes_conflict_at_every_isolation_level() {
    use kiln_engine::IsolationLevel::ReadCommitted;
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), Config::default()).unwrap();
    let rc = || TxnOptions::new().isolation(ReadCommitted);
    let write = |key: &[u8], value: &[u8]| {
        let mut t = engine.begin(TxnOptions::new()).unwrap();
        t.put("cat", key, value).unwrap();
        t.commit_fast().unwrap();
    };
    write(b"def", b"v1");
    // Guarded, and the key changed after its snapshot: the commit fails.
    let mut a = engine.begin(rc()).unwrap();
    assert_eq!(a.get("cat", b"def").unwrap().as_deref(), Some(&b"v1"[..]));
    a.put_guarded("cat", b"def", b"v1+a").unwrap();
    write(b"def", b"v2");
    assert!(a.commit_fast().is_err());
    // Plain: the later commit replaces the concurrent one.
    let mut b = engine.begin(rc()).unwrap();
    b.put("cat", b"def", b"v2+b").unwrap();
    write(b"def", b"v3");
    b.commit_fast().unwrap();
    // Guarded in a snapshot taken after the concurrent commit: no conflict.
    let mut c = engine.begin(rc()).unwrap();
    write(b"def", b"v4");
    c.refresh_snapshot().unwrap();
    c.put_guarded("cat", b"def", b"v4+c").unwrap();
    c.commit_fast().unwrap();
    // Undone by a rollback to a savepoint: not checked.
    let mut d = engine.begin(rc()).unwrap();
    let sp = d.savepoint();
    d.put_guarded("cat", b"def", b"never").unwrap();
    d.rollback_to(sp).unwrap();
    d.put("cat", b"other", b"x").unwrap();
    write(b"def", b"v5");
    d.commit_fast().unwrap();
    let mut check = engine.begin(TxnOptions::new().read_only()).unwrap();
    assert_eq!(check.get("cat", b"def").unwrap().as_deref(), Some(&b"v5"[..]));
}
