//! A replicated log (`Config::replicated_log`): the log writer ships batches instead of writing
//! them, entries come back tagged with (term, index) through `append_entries`, a follower
//! installs what it receives, and both read the same entries back, across a reopen.
//!
//! The "cluster" here is a test thread that numbers batches in order and appends each to the
//! leader and the follower: the engine's side of replication without a consensus protocol.

use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use kiln_engine::replicated::{EntryPayload, LogEntry, RecordBatch};
use kiln_engine::{CommitMode, Config, Engine, Error, TxnOptions, TxnStatus};

fn replicated() -> Config {
    Config { replicated_log: true, ..Config::default() }
}

/// Begins `term` as the cluster would on electing `leader`: its first entry (an opaque one,
/// as a Raft leader's blank entry) appended to the leader and every follower at the next
/// index, committed, and the leader told to lead. Returns the entry.
fn begin_term(leader: &Engine, followers: &[Engine], term: u64) -> LogEntry {
    let index = leader.log_position().unwrap().last.map_or(0, |(_, i)| i) + 1;
    let payload = EntryPayload::Opaque(Arc::from(format!("term {term} begins").as_bytes()));
    let entry = LogEntry { term, index, payload };
    for node in std::iter::once(leader).chain(followers) {
        node.append_entries(std::slice::from_ref(&entry)).unwrap();
        node.commit_log_upto(index).unwrap();
    }
    leader.lead(term).unwrap();
    entry
}

/// Starts a thread that gives each shipped batch of `leader` the next index of `term`,
/// appends it to the leader and every follower, with an opaque entry after every third
/// batch, and then commits it everywhere (every node is in the quorum). Returns every entry it
/// appended, in order, once the leader closes.
fn numbering_cluster(
    leader: &Engine,
    followers: Vec<Engine>,
    term: u64,
) -> JoinHandle<Vec<LogEntry>> {
    let (tx, rx) = mpsc::channel::<RecordBatch>();
    let tx = std::sync::Mutex::new(tx);
    leader.set_shipper(Box::new(move |batch| tx.lock().unwrap().send(batch).unwrap())).unwrap();
    let leader = leader.clone();
    std::thread::spawn(move || {
        let mut log = Vec::new();
        let mut index = leader.log_position().unwrap().last.map_or(0, |(_, i)| i);
        while let Ok(batch) = rx.recv_timeout(Duration::from_secs(2)) {
            index += 1;
            let mut entries = vec![LogEntry { term, index, payload: EntryPayload::Records(batch) }];
            if index.is_multiple_of(3) {
                index += 1;
                let payload = EntryPayload::Opaque(Arc::from(format!("meta {index}").as_bytes()));
                entries.push(LogEntry { term, index, payload });
            }
            for node in std::iter::once(&leader).chain(&followers) {
                match node.append_entries(&entries) {
                    Ok(()) => {}
                    Err(Error::Closed) => return log,
                    Err(e) => panic!("append: {e}"),
                }
            }
            for node in std::iter::once(&leader).chain(&followers) {
                match node.commit_log_upto(index) {
                    Ok(()) | Err(Error::Closed) => {}
                    Err(e) => panic!("commit: {e}"),
                }
            }
            log.extend(entries);
        }
        log
    })
}

fn put(engine: &Engine, key: &str, value: &str, mode: CommitMode) -> kiln_engine::TxnId {
    let mut txn = engine.begin(TxnOptions::new()).unwrap();
    txn.put("kv", key.as_bytes(), value.as_bytes()).unwrap();
    txn.commit_with(mode).unwrap()
}

fn get(engine: &Engine, key: &str) -> Option<String> {
    let mut txn = engine.begin(TxnOptions::new().read_only()).unwrap();
    txn.get("kv", key.as_bytes()).unwrap().map(|v| String::from_utf8(v).unwrap())
}

#[test]
fn a_follower_installs_what_the_leader_ships_and_both_read_the_same_log_back() {
    let (leader_dir, follower_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let leader = Engine::open(leader_dir.path(), replicated()).unwrap();
    let follower = Engine::open(follower_dir.path(), replicated()).unwrap();
    let blank = begin_term(&leader, std::slice::from_ref(&follower), 1);
    let cluster = numbering_cluster(&leader, vec![follower.clone()], 1);

    let mut last = None;
    for i in 0..40 {
        let mode = if i % 4 == 3 { CommitMode::Safe } else { CommitMode::Fast };
        let id = put(&leader, &format!("k{i:02}"), &format!("v{i}"), mode);
        if mode == CommitMode::Safe {
            // A safe commit returns once its batch is committed by the cluster.
            assert_eq!(leader.status(id), TxnStatus::Durable, "commit {i}");
        }
        last = Some(id);
    }
    let last = last.unwrap();
    assert_eq!(leader.wait(last, Duration::from_secs(10)).unwrap(), TxnStatus::Durable);
    // The follower installed every record at its CSN and made it durable at the same CSN.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while follower.status(last) != TxnStatus::Durable {
        assert!(std::time::Instant::now() < deadline, "the follower never got CSN {}", last.csn);
        std::thread::sleep(Duration::from_millis(1));
    }
    for i in [0, 17, 39] {
        assert_eq!(get(&follower, &format!("k{i:02}")), Some(format!("v{i}")));
    }
    let (on_leader, on_follower) =
        (leader.log_position().unwrap(), follower.log_position().unwrap());
    assert_eq!(on_leader, on_follower);
    assert_eq!(on_leader.last_csn, last.csn);

    leader.clone().close().unwrap();
    let appended: Vec<LogEntry> = std::iter::once(blank).chain(cluster.join().unwrap()).collect();
    let (first, last_index) = (appended[0].index, appended.last().unwrap().index);
    assert_eq!(on_leader.first, Some((1, first)));
    assert_eq!(on_leader.last, Some((1, last_index)));
    assert_eq!(leader.log_entries(1, u64::MAX).unwrap_err().to_string(), Error::Closed.to_string());
    assert_eq!(follower.log_entries(first, last_index).unwrap(), appended);
    assert_eq!(follower.log_entries(4, 5).unwrap(), appended[3..5]);
    assert!(follower.log_entries(last_index + 1, u64::MAX).unwrap().is_empty());

    // A reopened follower has the same log and the same data; it did not begin an epoch of its
    // own, and what it holds beyond its checkpoint is committed, in doubt, until the cluster
    // says again how far its commits go.
    follower.clone().close().unwrap();
    let follower = Engine::open(follower_dir.path(), replicated()).unwrap();
    assert_eq!(follower.log_position().unwrap(), on_follower);
    assert_eq!(follower.log_entries(0, u64::MAX).unwrap(), appended);
    assert_eq!(follower.status(last), TxnStatus::Committed);
    follower.commit_log_upto(last_index).unwrap();
    assert_eq!(follower.status(last), TxnStatus::Durable);
    assert_eq!(get(&follower, "k39"), Some("v39".into()));
    let reopened = Engine::open(leader_dir.path(), replicated()).unwrap();
    assert_eq!(reopened.log_entries(0, u64::MAX).unwrap(), appended);
}

#[test]
fn entries_that_do_not_follow_the_log_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), replicated()).unwrap();
    let record = |csn: u64| {
        let mut records = Vec::new();
        // One commit record with no writes: u32 length 4, u32 write count 0.
        records.extend_from_slice(&4u32.to_le_bytes());
        records.extend_from_slice(&0u32.to_le_bytes());
        RecordBatch { epoch: 2, first_csn: csn, count: 1, records: Arc::from(records) }
    };
    let entry = |index: u64, csn: u64| LogEntry {
        term: 2,
        index,
        payload: EntryPayload::Records(record(csn)),
    };
    engine.append_entries(&[entry(7, 1), entry(8, 2)]).unwrap();
    // A gap in the indexes, a gap in the CSNs, records in term 0, an earlier term, a term that is
    // not the records' epoch, a term beyond 32 bits, a damaged record.
    let damaged = LogEntry {
        term: 2,
        index: 9,
        payload: EntryPayload::Records(RecordBatch {
            records: Arc::from(&b"\x09\0\0\0junk"[..]),
            ..record(3)
        }),
    };
    for bad in [
        vec![entry(10, 3)],
        vec![entry(9, 4)],
        vec![LogEntry { term: 0, ..entry(9, 3) }],
        vec![LogEntry {
            term: 1,
            payload: EntryPayload::Opaque(Arc::from(&b"x"[..])),
            ..entry(9, 3)
        }],
        vec![LogEntry { term: 3, ..entry(9, 3) }],
        vec![LogEntry { term: 1 << 32, ..entry(9, 3) }],
        vec![damaged],
    ] {
        assert!(engine.append_entries(&bad).is_err(), "{bad:?}");
    }
    let position = engine.log_position().unwrap();
    assert_eq!((position.first, position.last, position.last_csn), (Some((2, 7)), Some((2, 8)), 2));
    engine.append_entries(&[entry(9, 3)]).unwrap();
    assert_eq!(engine.log_entries(0, 100).unwrap().len(), 3);

    // A standalone engine has no replicated log.
    let standalone_dir = tempfile::tempdir().unwrap();
    let standalone = Engine::open(standalone_dir.path(), Config::default()).unwrap();
    assert!(matches!(standalone.append_entries(&[entry(1, 1)]), Err(Error::InvalidArgument(_))));
    assert!(matches!(standalone.log_position(), Err(Error::InvalidArgument(_))));
}

/// Until a shipper is set, a replicated engine's commits stay in the buffer: visible, not
/// durable. They are shipped as soon as it is.
#[test]
fn batches_wait_for_the_shipper() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), replicated()).unwrap();
    begin_term(&engine, &[], 1);
    let id = put(&engine, "a", "1", CommitMode::Fast);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(engine.status(id), TxnStatus::Committed);
    assert_eq!(get(&engine, "a"), Some("1".into()));
    let cluster = numbering_cluster(&engine, Vec::new(), 1);
    assert_eq!(engine.wait(id, Duration::from_secs(10)).unwrap(), TxnStatus::Durable);
    engine.clone().close().unwrap();
    assert_eq!(cluster.join().unwrap().len(), 1);
}

/// Offsets of the valid frames of a segment, in order.
fn frame_offsets(data: &[u8]) -> Vec<usize> {
    use kiln_engine::inspect::{frame_at, FrameAt};
    let (mut offset, mut found) = (0, Vec::new());
    while let FrameAt::Valid { header, body_start } = frame_at(data, offset) {
        found.push(offset);
        offset = body_start + header.body_len as usize;
    }
    found
}

/// A damaged last flush of a replicated log is a torn write: cut off, and the log continues
/// from the entry before it. Damage followed by a later flush is corruption, refused at open.
#[test]
fn a_torn_last_entry_is_cut_and_damage_before_a_later_flush_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let opaque = |index: u64| LogEntry {
        term: 3,
        index,
        payload: EntryPayload::Opaque(Arc::from(format!("entry {index}").as_bytes())),
    };
    let engine = Engine::open(dir.path(), replicated()).unwrap();
    for index in 1..=3 {
        engine.append_entries(&[opaque(index)]).unwrap(); // three flushes
    }
    engine.close().unwrap();
    let segments =
        kiln_engine::inspect::list_segments(&kiln_engine::OsVfs, &dir.path().join("log")).unwrap();
    assert_eq!(segments.len(), 1);
    let path = &segments[0].path;
    let flip = |offset: usize| {
        let mut data = std::fs::read(path).unwrap();
        data[offset] ^= 0x40;
        std::fs::write(path, data).unwrap();
    };
    let frames = frame_offsets(&std::fs::read(path).unwrap());
    assert_eq!(frames.len(), 3);

    flip(frames[2] + kiln_engine::inspect::FRAME_HEADER_BYTES); // the last flush's body
    let engine = Engine::open(dir.path(), replicated()).unwrap();
    assert_eq!(engine.log_position().unwrap().last, Some((3, 2)));
    assert_eq!(engine.log_entries(1, 9).unwrap(), vec![opaque(1), opaque(2)]);
    engine.append_entries(&[opaque(3)]).unwrap();
    engine.close().unwrap();

    // Entry 3 went to a segment of its own (the reopened log starts one, named by its first
    // entry). Damage to entry 2 is now damage to synced data.
    let segments =
        kiln_engine::inspect::list_segments(&kiln_engine::OsVfs, &dir.path().join("log")).unwrap();
    assert_eq!(segments.iter().map(|s| s.first_index).collect::<Vec<_>>(), [1, 3]);
    flip(frames[1] + kiln_engine::inspect::FRAME_HEADER_BYTES);
    match Engine::open(dir.path(), replicated()) {
        Err(Error::Corruption { detail, .. }) => {
            assert!(detail.contains("damaged"), "{detail}")
        }
        other => panic!("opened a corrupt log: {other:?}"),
    }
}

/// Within one segment, damage followed by a valid frame of a later flush (by entry index) is
/// damage to synced data; damage followed only by frames of its own flush is a torn flush.
#[test]
fn flushes_of_a_replicated_log_are_told_apart_by_entry_index() {
    let opaque = |index: u64| LogEntry {
        term: 1,
        index,
        payload: EntryPayload::Opaque(Arc::from(vec![index as u8; 100])),
    };
    for (flushes, damaged, opens) in [
        // Entries 1, 2 and 3 in three flushes; entry 2 damaged: entry 3 is a later flush.
        (vec![vec![1], vec![2], vec![3]], 1, false),
        // Entries 2 and 3 in one flush; entry 2 damaged: only its own flush follows.
        (vec![vec![1], vec![2, 3]], 1, true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path(), replicated()).unwrap();
        for flush in &flushes {
            let entries: Vec<_> = flush.iter().map(|&i| opaque(i)).collect();
            engine.append_entries(&entries).unwrap();
        }
        engine.close().unwrap();
        let segments =
            kiln_engine::inspect::list_segments(&kiln_engine::OsVfs, &dir.path().join("log"))
                .unwrap();
        let path = &segments[0].path;
        let mut data = std::fs::read(path).unwrap();
        let frames = frame_offsets(&data);
        data[frames[damaged] + kiln_engine::inspect::FRAME_HEADER_BYTES] ^= 1;
        std::fs::write(path, data).unwrap();
        match Engine::open(dir.path(), replicated()) {
            Ok(engine) if opens => {
                assert_eq!(engine.log_entries(0, 9).unwrap(), vec![opaque(1)]);
            }
            Err(Error::Corruption { detail, .. }) if !opens => {
                assert!(detail.contains("later flush"), "{detail}");
            }
            other => panic!("{flushes:?}: {other:?}"),
        }
    }
}

/// An fsync error while appending poisons a replicated engine: the append and every later one
/// fail, nothing is reported durable, and a reopen finds a prefix of what was sent (the failed
/// entry may or may not have reached the disk; it was never acknowledged either way).
#[test]
fn an_fsync_error_while_appending_poisons_and_a_reopen_keeps_a_prefix() {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().unwrap();
    let faults = kiln_engine::Faults::new();
    let config =
        Config { vfs: Arc::new(kiln_engine::FaultyVfs::new(faults.clone())), ..replicated() };
    let engine = Engine::open(dir.path(), config).unwrap();
    let record = |csn: u64| {
        let mut records = Vec::new();
        let mut body = Vec::new();
        body.extend_from_slice(&1u32.to_le_bytes()); // one write
        body.push(1); // put
        body.extend_from_slice(&2u16.to_le_bytes());
        body.extend_from_slice(b"kv");
        body.extend_from_slice(&8u32.to_le_bytes());
        body.extend_from_slice(&csn.to_be_bytes());
        body.extend_from_slice(&1u32.to_le_bytes());
        body.push(b'v');
        records.extend_from_slice(&(body.len() as u32).to_le_bytes());
        records.extend_from_slice(&body);
        let batch = RecordBatch { epoch: 1, first_csn: csn, count: 1, records: Arc::from(records) };
        LogEntry { term: 1, index: csn, payload: EntryPayload::Records(batch) }
    };
    engine.append_entries(&[record(1)]).unwrap();
    engine.append_entries(&[record(2)]).unwrap();
    engine.commit_log_upto(2).unwrap();
    *faults.path_filter.lock() = ".log".into();
    faults.fail_syncs.store(1, Ordering::SeqCst);
    assert!(matches!(engine.append_entries(&[record(3)]), Err(Error::Poisoned(_))));
    assert!(matches!(engine.append_entries(&[record(3)]), Err(Error::Poisoned(_))));
    assert_eq!(
        engine.log_position().unwrap().last,
        Some((1, 2)),
        "the failed entry is not on record"
    );
    let id2 = kiln_engine::TxnId { epoch: 1, csn: 2, kind: kiln_engine::TxnKind::Update };
    let id3 = kiln_engine::TxnId { csn: 3, ..id2 };
    assert_eq!(engine.status(id2), TxnStatus::Durable);
    assert_ne!(engine.status(id3), TxnStatus::Durable);
    assert!(engine.close().is_err());

    let engine = Engine::open(dir.path(), replicated()).unwrap();
    let kept = engine.log_entries(0, 9).unwrap();
    assert!(kept.len() == 2 || kept.len() == 3, "{kept:?}");
    assert_eq!(kept, (1..=kept.len() as u64).map(record).collect::<Vec<_>>());
    engine.append_entries(&[record(kept.len() as u64 + 1)]).unwrap();
}

/// Takes the next batch `leader` ships, makes it entry `index` of `term`, appends it to
/// `to` and commits it on `commit` (a quorum the test decides).
fn pump(
    shipped: &mpsc::Receiver<RecordBatch>,
    index: u64,
    term: u64,
    to: &[&Engine],
    commit: &[&Engine],
) -> LogEntry {
    let batch = shipped.recv_timeout(Duration::from_secs(10)).expect("a shipped batch");
    let entry = LogEntry { term, index, payload: EntryPayload::Records(batch) };
    for node in to {
        node.append_entries(std::slice::from_ref(&entry)).unwrap();
    }
    for node in commit {
        node.commit_log_upto(index).unwrap();
    }
    entry
}

fn shipper(engine: &Engine) -> mpsc::Receiver<RecordBatch> {
    let (tx, rx) = mpsc::channel::<RecordBatch>();
    let tx = std::sync::Mutex::new(tx);
    engine.set_shipper(Box::new(move |batch| tx.lock().unwrap().send(batch).unwrap())).unwrap();
    rx
}

/// A failover, driven by hand: leader `a` of term 1 commits; some of it reaches a quorum, one
/// batch only its own log, one nothing at all. `b` is elected for term 2 and `a` comes back.
/// The unreplicated suffix is in doubt until term 2 commits, then lost on every node alike,
/// announced once on the node that committed it; the rest is durable everywhere, and the
/// deposed leader's log, data and statuses become the new leader's.
#[test]
fn a_deposed_leader_cuts_its_unreplicated_tail_which_is_lost_once_a_later_term_commits() {
    use kiln_engine::DurabilityEvent;
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let open = |i: usize| Engine::open(dirs[i].path(), replicated()).unwrap();
    let (a, b, c) = (open(0), open(1), open(2));
    begin_term(&a, &[b.clone(), c.clone()], 1); // index 1
    let from_a = shipper(&a);
    let all = [&a, &b, &c];

    // Replicated to every node and committed: entries 2..=4.
    let mut durable = Vec::new();
    for (i, index) in (2..=4).enumerate() {
        durable.push(put(&a, &format!("k{i}"), "term 1", CommitMode::Fast));
        pump(&from_a, index, 1, &all, &all);
    }
    // In a's log only (entry 5), and committed by a but never logged anywhere.
    let events = a.subscribe();
    let logged = put(&a, "k3", "a alone", CommitMode::Fast);
    pump(&from_a, 5, 1, &[&a], &[]);
    let unlogged = put(&a, "k4", "nowhere", CommitMode::Fast);
    let _in_flight = from_a.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(get(&a, "k3"), Some("a alone".into()));
    for id in [logged, unlogged] {
        for node in all {
            let expected =
                if node.dir() == a.dir() { TxnStatus::Committed } else { TxnStatus::Unknown };
            assert_eq!(node.status(id), expected, "{id} on {}", node.dir().display());
        }
    }

    // b is elected for term 2 with c's vote; its first entry (index 5) begins epoch 2 right
    // after the last record b has, and commits on b and c.
    let term2 = begin_term(&b, std::slice::from_ref(&c), 2);
    assert_eq!(term2.index, 5);
    let from_b = shipper(&b);
    let replaced = put(&b, "k3", "term 2", CommitMode::Fast);
    assert_eq!(replaced.csn, logged.csn, "term 2 continues after the last committed record");
    let entry6 = pump(&from_b, 6, 2, &[&b, &c], &[&b, &c]);
    for node in [&b, &c] {
        assert_eq!(node.status(logged), TxnStatus::Lost);
        assert_eq!(node.status(unlogged), TxnStatus::Lost);
        assert_eq!(node.status(replaced), TxnStatus::Durable);
    }
    // a has not heard: its tail is in doubt, not lost.
    assert_eq!(a.status(logged), TxnStatus::Committed);
    assert!(matches!(put_result(&c, "k9", "x"), Err(Error::NotLeader { .. })));

    // a comes back: b's log conflicts at index 5, so a cuts its log after entry 4 and drops
    // what it committed beyond it; still in doubt until term 2 commits on a.
    a.follow().unwrap();
    assert!(matches!(put_result(&a, "k9", "x"), Err(Error::NotLeader { .. })));
    assert!(a.truncate_log_from(4).is_err(), "cutting committed entries is refused");
    a.truncate_log_from(5).unwrap();
    assert_eq!(a.log_position().unwrap().last, Some((1, 4)));
    assert_eq!(a.status(logged), TxnStatus::Committed);
    assert_eq!(a.status(unlogged), TxnStatus::Committed);
    assert_eq!(get(&a, "k3"), None);
    assert!(events.try_recv().is_none_or(|e| matches!(e, DurabilityEvent::Durable { .. })));
    a.append_entries(&[term2, entry6]).unwrap();
    a.commit_log_upto(6).unwrap();
    assert_eq!(get(&a, "k3"), Some("term 2".into()));
    let lost: Vec<_> = std::iter::from_fn(|| events.try_recv())
        .filter(|e| matches!(e, DurabilityEvent::Lost { .. }))
        .collect();
    assert_eq!(
        lost,
        [DurabilityEvent::Lost {
            epoch: 1,
            from_csn: logged.csn,
            new_epoch: 2,
            cause: "not replicated to a quorum before the leader changed".into(),
        }]
    );
    let ids: Vec<_> = durable.iter().copied().chain([logged, unlogged, replaced]).collect();
    for id in &ids {
        let statuses: Vec<_> = all.iter().map(|n| n.status(*id)).collect();
        assert!(statuses.iter().all(|s| *s == statuses[0]), "{id}: {statuses:?}");
    }
    assert_eq!(a.status(durable[2]), TxnStatus::Durable);
    assert_eq!(a.status(logged), TxnStatus::Lost);
    assert_eq!(a.log_entries(1, 9).unwrap(), b.log_entries(1, 9).unwrap());

    // A follower reads at the committed watermark: an entry it holds but the cluster has not
    // committed is not visible yet.
    let newer = put(&b, "k3", "uncommitted", CommitMode::Fast);
    pump(&from_b, 7, 2, &[&b, &c], &[]);
    assert_eq!(get(&c, "k3"), Some("term 2".into()));
    assert_eq!(get(&b, "k3"), Some("uncommitted".into()), "the leader reads what it committed");
    c.commit_log_upto(7).unwrap();
    assert_eq!(get(&c, "k3"), Some("uncommitted".into()));
    assert_eq!(c.status(newer), TxnStatus::Durable);

    // The cut survives a reopen: a's log and epochs are b's.
    drop(events);
    a.close().unwrap();
    let a = open(0);
    assert_eq!(a.log_entries(1, 9).unwrap(), b.log_entries(1, 6).unwrap());
    a.commit_log_upto(6).unwrap();
    for id in &ids {
        assert_eq!(a.status(*id), b.status(*id), "{id} after a reopen");
    }
}

fn put_result(engine: &Engine, key: &str, value: &str) -> kiln_engine::Result<kiln_engine::TxnId> {
    let mut txn = engine.begin(TxnOptions::new())?;
    txn.put("kv", key.as_bytes(), value.as_bytes())?;
    txn.commit_with(CommitMode::Fast)
}

#[test]
fn one_append_may_end_a_term_and_begin_the_next() {
    // A follower catching up receives the end of one term and the start of the next together.
    let dir = tempfile::tempdir().unwrap();
    let follower = Engine::open(dir.path(), replicated()).unwrap();
    let record = |epoch: u32, csn: u64| {
        let mut records = Vec::new();
        records.extend_from_slice(&4u32.to_le_bytes());
        records.extend_from_slice(&0u32.to_le_bytes());
        EntryPayload::Records(RecordBatch {
            epoch,
            first_csn: csn,
            count: 1,
            records: Arc::from(records),
        })
    };
    let opaque = || EntryPayload::Opaque(Arc::from(&b"blank"[..]));
    let entries = [
        LogEntry { term: 2, index: 1, payload: opaque() },
        LogEntry { term: 2, index: 2, payload: record(2, 1) },
        LogEntry { term: 2, index: 3, payload: record(2, 2) },
        LogEntry { term: 3, index: 4, payload: opaque() },
        LogEntry { term: 3, index: 5, payload: record(3, 3) },
    ];
    follower.append_entries(&entries).unwrap();
    let id = |epoch, csn| kiln_engine::TxnId { epoch, csn, kind: kiln_engine::TxnKind::Update };
    let check = |engine: &Engine| {
        // After a restart the cluster tells the node again how far it has committed.
        engine.commit_log_upto(5).unwrap();
        assert_eq!(engine.log_position().unwrap().last_csn, 3);
        assert_eq!(engine.status(id(2, 2)), TxnStatus::Durable);
        assert_eq!(engine.status(id(3, 3)), TxnStatus::Durable);
        // Epoch 2 ended at CSN 2 and epoch 3 began at CSN 3: no id (3, 2) was ever handed out.
        assert_eq!(engine.status(id(2, 3)), TxnStatus::Lost);
        assert_eq!(engine.status(id(3, 2)), TxnStatus::Unknown);
    };
    check(&follower);
    follower.close().unwrap();
    check(&Engine::open(dir.path(), replicated()).unwrap());
}

fn scan_kv(engine: &Engine) -> Vec<(String, String)> {
    let mut txn = engine.begin(TxnOptions::new().read_only()).unwrap();
    let rows = txn.scan("kv", kiln_engine::Scan::all()).unwrap();
    rows.into_iter()
        .map(|(k, v)| (String::from_utf8(k).unwrap(), String::from_utf8(v).unwrap()))
        .collect()
}

fn segment_count(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir.join("log")).unwrap().count()
}

/// Copies `from`'s newest checkpoint file into `to_dir` under the same name, as a node that
/// received it and crashed right after publishing it would have it.
fn copy_checkpoint(from: &Engine, to_dir: &std::path::Path) {
    let mut file = from.open_checkpoint().unwrap().expect("a checkpoint");
    let mut bytes = vec![0u8; file.len() as usize];
    file.read_exact_at(&mut bytes, 0).unwrap();
    let name = format!("checkpoint-{:020}.ckpt", file.info.csn);
    std::fs::write(to_dir.join(name), bytes).unwrap();
}

/// Snapshots of a replicated log at the engine's level. The leader checkpoints at its
/// committed entry (small segments, so the log spans many), purges the segments the
/// checkpoint covers, and reopens from the checkpoint and what is left of the log. A replica
/// that fell behind (it still holds rows the cluster deleted since) installs the leader's
/// checkpoint in place of its log: same rows, same statuses, its log continuing after the
/// checkpoint's entry, across a reopen. A replica that crashed between publishing a received
/// checkpoint and removing the log it replaces recovers to the checkpoint.
#[test]
fn a_checkpoint_stands_in_for_the_log_it_covers_and_replaces_a_replica_that_fell_behind() {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let config = || Config { segment_bytes_max: 16 << 10, ..replicated() };
    let open = |i: usize| Engine::open(dirs[i].path(), config()).unwrap();
    let (leader, behind, crashed) = (open(0), open(1), open(2));
    let all = [&leader, &behind, &crashed];
    begin_term(&leader, &[behind.clone(), crashed.clone()], 1); // index 1
    let shipped = shipper(&leader);
    let mut index = 1;
    // Rows every node has, some of which the cluster deletes later.
    for i in 0..10 {
        put(&leader, &format!("gone{i}"), "old", CommitMode::Fast);
        index += 1;
        pump(&shipped, index, 1, &all, &all);
    }
    let early = put(&leader, "early", "v", CommitMode::Fast);
    index += 1;
    pump(&shipped, index, 1, &all, &all);
    let behind_last = index;
    // The two replicas fall behind: the leader alone makes a quorum here.
    let mut ids = Vec::new();
    for i in 0..300 {
        let mut txn = leader.begin(TxnOptions::new()).unwrap();
        txn.put("kv", format!("k{i:03}").as_bytes(), &[b'x'; 200]).unwrap();
        if i < 10 {
            txn.delete("kv", format!("gone{i}").as_bytes()).unwrap();
        }
        ids.push(txn.commit_with(CommitMode::Fast).unwrap());
        index += 1;
        pump(&shipped, index, 1, &[&leader], &[&leader]);
    }
    assert_eq!(
        leader.wait(*ids.last().unwrap(), Duration::from_secs(10)).unwrap(),
        TxnStatus::Durable
    );

    let info = leader.checkpoint_log(|i| format!("cluster at {i}").into_bytes()).unwrap();
    let mark = info.log.clone().unwrap();
    assert_eq!((mark.term, mark.index), (1, index));
    assert_eq!(&*mark.cluster, format!("cluster at {index}").as_bytes());
    assert_eq!(info.csn, ids.last().unwrap().csn);
    let before = segment_count(dirs[0].path());
    assert!(before > 3, "the log spans {before} segments");
    // Purging beyond the checkpoint is refused; up to it, every segment it covers goes but
    // the one being written.
    assert!(leader.purge_log(index + 1).is_err());
    leader.purge_log(index).unwrap();
    let after = segment_count(dirs[0].path());
    assert!(after < before && after >= 1, "{before} segments before the purge, {after} after");
    let position = leader.log_position().unwrap();
    assert_eq!(position.base, Some((1, index)));
    assert_eq!(position.last, Some((1, index)));
    let expected = scan_kv(&leader);
    assert_eq!(expected.len(), 301);

    // The replica that fell behind installs the checkpoint.
    assert_eq!(scan_kv(&behind).len(), 11);
    let mut file = leader.open_checkpoint().unwrap().unwrap();
    behind.install_checkpoint(&mut file).unwrap();
    assert_eq!(scan_kv(&behind), expected);
    for id in [early, ids[0], *ids.last().unwrap()] {
        assert_eq!(behind.status(id), TxnStatus::Durable, "{id}");
    }
    let position = behind.log_position().unwrap();
    assert_eq!(
        (position.base, position.last, position.first),
        (Some((1, index)), Some((1, index)), None)
    );
    assert_eq!(segment_count(dirs[1].path()), 0);
    // The log goes on after the checkpoint's entry, on the leader and the replica alike.
    let next = put(&leader, "next", "v", CommitMode::Fast);
    index += 1;
    pump(&shipped, index, 1, &[&leader, &behind], &[&leader, &behind]);
    assert_eq!(behind.wait(next, Duration::from_secs(10)).unwrap(), TxnStatus::Durable);
    assert_eq!(get(&behind, "next"), Some("v".into()));

    // The other replica "crashed" right after publishing the checkpoint it received: its old
    // log is still there. Recovery removes the log the checkpoint covers.
    let crashed_dir = dirs[2].path().to_path_buf();
    crashed.close().unwrap();
    copy_checkpoint(&leader, &crashed_dir);
    let crashed = Engine::open(&crashed_dir, config()).unwrap();
    assert_eq!(segment_count(&crashed_dir), 0);
    let expected_then: Vec<_> = expected.clone();
    assert_eq!(scan_kv(&crashed), expected_then);
    assert_eq!(crashed.log_position().unwrap().base, Some((1, index - 1)));
    assert_eq!(crashed.status(early), TxnStatus::Durable);
    // It can only go on after the checkpoint's entry.
    let wrong = LogEntry {
        term: 1,
        index: behind_last + 1,
        payload: EntryPayload::Opaque(Arc::from(&b"x"[..])),
    };
    assert!(crashed.append_entries(&[wrong]).is_err());

    // Reopened, the leader and the replica that installed the checkpoint come back the same.
    drop(shipped);
    leader.close().unwrap();
    behind.close().unwrap();
    for dir in [dirs[0].path(), dirs[1].path()] {
        let engine = Engine::open(dir, config()).unwrap();
        let mut want = expected.clone();
        want.push(("next".into(), "v".into()));
        want.sort();
        // Only what the cluster committed is visible to a node that does not lead.
        engine.commit_log_upto(index).unwrap();
        assert_eq!(scan_kv(&engine), want, "{}", dir.display());
        assert_eq!(engine.status(next), TxnStatus::Durable);
        assert_eq!(engine.log_position().unwrap().base, Some((1, index - 1)));
        assert_eq!(engine.log_position().unwrap().last, Some((1, index)));
        engine.close().unwrap();
    }
    crashed.close().unwrap();
}
