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

/// Starts a thread that gives each shipped batch of `leader` the next index of term 1 and
/// appends it to the leader and every follower, with an opaque entry after every third batch.
/// Returns every entry it appended, in order, once the leader closes.
fn numbering_cluster(leader: &Engine, followers: Vec<Engine>) -> JoinHandle<Vec<LogEntry>> {
    let (tx, rx) = mpsc::channel::<RecordBatch>();
    let tx = std::sync::Mutex::new(tx);
    leader.set_shipper(Box::new(move |batch| tx.lock().unwrap().send(batch).unwrap())).unwrap();
    let leader = leader.clone();
    std::thread::spawn(move || {
        let mut log = Vec::new();
        let mut index = leader.log_position().unwrap().last.map_or(0, |(_, i)| i);
        while let Ok(batch) = rx.recv_timeout(Duration::from_secs(2)) {
            index += 1;
            let mut entries =
                vec![LogEntry { term: 1, index, payload: EntryPayload::Records(batch) }];
            if index.is_multiple_of(3) {
                index += 1;
                let payload = EntryPayload::Opaque(Arc::from(format!("meta {index}").as_bytes()));
                entries.push(LogEntry { term: 1, index, payload });
            }
            for node in std::iter::once(&leader).chain(&followers) {
                match node.append_entries(&entries) {
                    Ok(()) => {}
                    Err(Error::Closed) => return log,
                    Err(e) => panic!("append: {e}"),
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
    let cluster = numbering_cluster(&leader, vec![follower.clone()]);

    let mut last = None;
    for i in 0..40 {
        let mode = if i % 4 == 3 { CommitMode::Safe } else { CommitMode::Fast };
        let id = put(&leader, &format!("k{i:02}"), &format!("v{i}"), mode);
        if mode == CommitMode::Safe {
            // A safe commit returns once its batch is back on the leader's disk.
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
    let appended = cluster.join().unwrap();
    let (first, last_index) = (appended[0].index, appended.last().unwrap().index);
    assert_eq!(on_leader.first, Some((1, first)));
    assert_eq!(on_leader.last, Some((1, last_index)));
    assert_eq!(leader.log_entries(1, u64::MAX).unwrap_err().to_string(), Error::Closed.to_string());
    assert_eq!(follower.log_entries(first, last_index).unwrap(), appended);
    assert_eq!(follower.log_entries(4, 5).unwrap(), appended[3..5]);
    assert!(follower.log_entries(last_index + 1, u64::MAX).unwrap().is_empty());

    // A reopened follower has the same log, the same data and the same statuses; it did not
    // begin an epoch of its own.
    follower.clone().close().unwrap();
    let follower = Engine::open(follower_dir.path(), replicated()).unwrap();
    assert_eq!(follower.log_position().unwrap(), on_follower);
    assert_eq!(follower.log_entries(0, u64::MAX).unwrap(), appended);
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
        RecordBatch { epoch: 1, first_csn: csn, count: 1, records: Arc::from(records) }
    };
    let entry = |index: u64, csn: u64| LogEntry {
        term: 2,
        index,
        payload: EntryPayload::Records(record(csn)),
    };
    engine.append_entries(&[entry(7, 1), entry(8, 2)]).unwrap();
    // A gap in the indexes, a gap in the CSNs, a term of 0, a damaged record.
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
    let id = put(&engine, "a", "1", CommitMode::Fast);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(engine.status(id), TxnStatus::Committed);
    assert_eq!(get(&engine, "a"), Some("1".into()));
    let cluster = numbering_cluster(&engine, Vec::new());
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
