//! Fault injection: fsync errors, full disks, short and torn writes, bit flips in the log and
//! checkpoints, misuse and limits. Each test checks the stated behaviour and then reopens the
//! directory to check that the recovered state is a prefix of the commit order that contains
//! every acknowledged safe transaction.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use kiln_engine::inspect::{list_segments, LOG_DIR};
use kiln_engine::{
    CommitMode, Config, Engine, Error, Faults, FaultyVfs, Scan, TxnId, TxnOptions, TxnStatus,
};

const KS: &str = "t";

fn config(faults: &Arc<Faults>) -> Config {
    Config {
        vfs: Arc::new(FaultyVfs::new(faults.clone())),
        vulnerability_window: Duration::from_millis(2),
        ..Config::default()
    }
}

/// Commit number `n`: writes `row/n` and moves `seq` to `n`. Returns its id if acknowledged.
fn commit_step(engine: &Engine, n: u64, mode: CommitMode) -> kiln_engine::Result<TxnId> {
    let mut txn = engine.begin(TxnOptions::new())?;
    txn.put(KS, format!("row/{n:06}").as_bytes(), &n.to_le_bytes())?;
    txn.put(KS, b"seq", &n.to_le_bytes())?;
    txn.commit_with(mode)
}

/// The recovered sequence number, after checking that rows form exactly the prefix 1..=seq.
fn check_prefix(engine: &Engine) -> u64 {
    let mut txn = engine.begin(TxnOptions::new().read_only()).expect("begin");
    let seq =
        txn.get(KS, b"seq").expect("get").map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()));
    let rows = txn.scan(KS, Scan::range(b"row/", b"row0")).expect("scan");
    let numbers: Vec<u64> =
        rows.iter().map(|(_, v)| u64::from_le_bytes(v.clone().try_into().unwrap())).collect();
    assert_eq!(
        numbers,
        (1..=seq).collect::<Vec<_>>(),
        "recovered rows are not the prefix 1..={seq}"
    );
    seq
}

/// A configuration that appends every flush (no space zero-filled ahead of the log), for the
/// tests of a full disk that need the very next flush to find no room.
fn appending(faults: &Arc<Faults>) -> Config {
    Config { log_preallocate_bytes: 0, ..config(faults) }
}

fn reopen_clean(dir: &Path) -> Engine {
    Engine::open(dir, Config::default()).expect("reopen")
}

/// SQLite-style loop: fail the k-th fsync for k = 1, 2, ...; each time, acknowledged safe
/// commits survive, a failed one is reported lost, and the engine carries on.
#[test]
fn fsync_error_at_every_position_loses_only_the_non_durable_suffix() {
    for fail_at in 1..=12u64 {
        let dir = tempfile::tempdir().unwrap();
        let faults = Faults::new();
        let engine = Engine::open(dir.path(), config(&faults)).unwrap();
        // Count how many syncs the open itself made, then arm the fault at `fail_at` more.
        faults.fail_syncs.store(0, Ordering::SeqCst);
        let mut acknowledged = Vec::new();
        let mut lost = Vec::new();
        let mut n = 0;
        for step in 0..20u64 {
            if step == fail_at {
                faults.fail_syncs.store(1, Ordering::SeqCst);
            }
            n += 1;
            let mode = if step % 3 == 2 { CommitMode::Fast } else { CommitMode::Safe };
            match commit_step(&engine, n, mode) {
                Ok(id) if mode == CommitMode::Safe => {
                    assert_eq!(engine.status(id), TxnStatus::Durable);
                    acknowledged.push((n, id));
                }
                Ok(_) => {}
                Err(Error::Lost { id, .. }) => {
                    lost.push(id);
                    // The lost commit's row is gone; the sequence continues from the durable one.
                    n = check_prefix(&engine);
                }
                // The transaction saw an earlier fast commit that was lost: it fails, retryably.
                Err(e @ Error::DependencyLost { .. }) => {
                    assert!(e.is_retryable());
                    n = check_prefix(&engine);
                }
                Err(e) => panic!("fail_at {fail_at}: unexpected {e}"),
            }
        }
        assert_eq!(engine.stats().loss_events, 1, "fail_at {fail_at}: one failed fsync, one loss");
        for id in &lost {
            assert_eq!(engine.status(*id), TxnStatus::Lost);
        }
        engine.close().unwrap();
        let engine = reopen_clean(dir.path());
        let seq = check_prefix(&engine);
        for (n, id) in &acknowledged {
            assert!(*n <= seq, "acknowledged safe commit {n} ({id}) missing after restart");
            assert_eq!(engine.status(*id), TxnStatus::Durable, "acknowledged safe {id}");
        }
        for id in &lost {
            assert_eq!(engine.status(*id), TxnStatus::Lost, "lost {id} after restart");
        }
    }
}

/// The log's fsyncs failing every time: every safe commit is reported lost, nothing
/// acknowledged is wrong, each loss opens an epoch, and once the disk recovers work continues.
#[test]
fn log_fsync_failing_every_time_then_recovering() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    let engine = Engine::open(dir.path(), config(&faults)).unwrap();
    commit_step(&engine, 1, CommitMode::Safe).unwrap();
    *faults.path_filter.lock() = ".log".into();
    faults.fail_all_syncs.store(true, Ordering::SeqCst);
    for _ in 0..5 {
        match commit_step(&engine, 2, CommitMode::Safe) {
            Err(Error::Lost { .. }) => {}
            other => panic!("expected a loss, got {other:?}"),
        }
        assert_eq!(check_prefix(&engine), 1);
    }
    faults.fail_all_syncs.store(false, Ordering::SeqCst);
    let id = commit_step(&engine, 2, CommitMode::Safe).unwrap();
    assert_eq!(engine.status(id), TxnStatus::Durable);
    assert_eq!(engine.stats().epoch, 6, "epoch 1 plus one epoch for each of the five losses");
    engine.close().unwrap();
    assert_eq!(check_prefix(&reopen_clean(dir.path())), 2);
}

/// Every fsync failing, the epoch history's too: the loss cannot be recorded, so the engine
/// stops with a clear error instead of running on an unrecorded epoch. Reopening recovers.
#[test]
fn when_a_loss_cannot_be_recorded_the_engine_stops_and_reopening_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    let engine = Engine::open(dir.path(), config(&faults)).unwrap();
    let acknowledged = commit_step(&engine, 1, CommitMode::Safe).unwrap();
    faults.fail_all_syncs.store(true, Ordering::SeqCst);
    let err = commit_step(&engine, 2, CommitMode::Safe).unwrap_err();
    assert!(matches!(err, Error::Poisoned(_)), "{err}");
    assert!(err.to_string().contains("could not record epoch"), "{err}");
    assert!(matches!(commit_step(&engine, 3, CommitMode::Fast), Err(Error::Poisoned(_))));
    assert!(matches!(engine.clone().close(), Err(Error::Poisoned(_))));
    drop(engine);
    let engine = reopen_clean(dir.path());
    assert!(check_prefix(&engine) >= 1);
    assert_eq!(engine.status(acknowledged), TxnStatus::Durable);
}

/// A full disk: commits continue up to the backlog bound, then slow down and fail with a clear
/// error; nothing is reported durable; when space returns everything hardens.
#[test]
fn full_disk_stalls_with_back_pressure_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    let mut cfg = appending(&faults);
    cfg.backlog_bytes_max = 8192;
    cfg.backpressure_timeout = Duration::from_millis(200);
    let engine = Engine::open(dir.path(), cfg).unwrap();
    commit_step(&engine, 1, CommitMode::Safe).unwrap();
    faults.free_bytes.store(0, Ordering::SeqCst);
    let mut last = None;
    let mut refused = None;
    for n in 2..10_000 {
        match commit_step(&engine, n, CommitMode::Fast) {
            Ok(id) => last = Some((n, id)),
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    let refused = refused.expect("the backlog bound was never enforced");
    assert!(matches!(refused, Error::DurabilityStalled { .. }), "{refused}");
    assert!(refused.to_string().contains("No space left"), "error names the cause: {refused}");
    assert!(refused.is_retryable());
    let stats = engine.stats();
    assert_eq!(stats.durable_csn, 1, "nothing reported durable while the disk is full");
    assert!(stats.backlog_bytes >= 8192 && stats.stalled.is_some(), "{stats:?}");
    let (last_n, last_id) = last.expect("some commits before the bound");
    assert_eq!(engine.status(last_id), TxnStatus::Committed);
    faults.free_bytes.store(u64::MAX, Ordering::SeqCst);
    assert_eq!(engine.wait(last_id, Duration::from_secs(10)).unwrap(), TxnStatus::Durable);
    assert_eq!(engine.stats().loss_events, 0, "a full disk loses nothing");
    engine.close().unwrap();
    assert_eq!(check_prefix(&reopen_clean(dir.path())), last_n);
}

/// A disk that fills in the middle of a frame: the partial frame is cut back, retried, and
/// recovery never sees it.
#[test]
fn partial_write_at_enospc_is_cut_back_and_retried() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    let engine = Engine::open(dir.path(), appending(&faults)).unwrap();
    commit_step(&engine, 1, CommitMode::Safe).unwrap();
    faults.free_bytes.store(17, Ordering::SeqCst);
    let engine2 = engine.clone();
    let waiter = std::thread::spawn(move || commit_step(&engine2, 2, CommitMode::Safe));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while engine.stats().stalled.is_none() {
        assert!(std::time::Instant::now() < deadline, "the writer never reported the full disk");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(!waiter.is_finished(), "a safe commit cannot return while its flush does not fit");
    faults.free_bytes.store(u64::MAX, Ordering::SeqCst);
    let id = waiter.join().unwrap().unwrap();
    assert_eq!(engine.status(id), TxnStatus::Durable);
    drop(engine);
    assert_eq!(check_prefix(&reopen_clean(dir.path())), 2);
}

/// Short writes (each write() takes half the buffer) are looped over transparently.
#[test]
fn short_writes_are_completed() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    faults.short_writes.store(true, Ordering::SeqCst);
    let engine = Engine::open(dir.path(), config(&faults)).unwrap();
    for n in 1..=200 {
        commit_step(&engine, n, if n % 2 == 0 { CommitMode::Safe } else { CommitMode::Fast })
            .unwrap();
    }
    engine.checkpoint().unwrap();
    for n in 201..=300 {
        commit_step(&engine, n, CommitMode::Fast).unwrap();
    }
    engine.close().unwrap();
    assert_eq!(check_prefix(&reopen_clean(dir.path())), 300);
}

/// Power loss after every possible number of written bytes: the torn frame is discarded, the
/// state is a prefix, and every acknowledged safe commit is in it. Run with the log written
/// into preallocated zeros (the default: the frames overwrite zeros), with no preallocation
/// (every flush appends), and with tiny zero-fill steps (fills race the flushes).
#[test]
fn torn_writes_at_every_offset_recover_a_prefix_with_every_acknowledged_commit() {
    for preallocate in [Config::default().log_preallocate_bytes, 0, 256] {
        let config =
            |faults: &Arc<Faults>| Config { log_preallocate_bytes: preallocate, ..config(faults) };
        // Measure how many bytes the workload writes to the log, zeros included, and how many
        // of them come before the first frame (the new segment's first zeroed space).
        let (total, before_frames) = {
            let dir = tempfile::tempdir().unwrap();
            let faults = Faults::new();
            *faults.path_filter.lock() = ".log".into();
            let engine = Engine::open(dir.path(), config(&faults)).unwrap();
            for n in 1..=12 {
                commit_step(&engine, n, CommitMode::Safe).unwrap();
            }
            let frames = engine.stats().log_bytes;
            engine.close().unwrap();
            let total = faults.bytes_written.load(Ordering::SeqCst);
            (total, if preallocate == 256 { 256 } else { total - frames })
        };
        let cuts = (0..before_frames)
            .step_by((before_frames as usize / 4).max(1))
            .chain((before_frames..total).step_by(7));
        for cut in cuts {
            let dir = tempfile::tempdir().unwrap();
            let faults = Faults::new();
            *faults.path_filter.lock() = ".log".into();
            faults.crash_after_bytes.store(cut, Ordering::SeqCst);
            let engine = Engine::open(dir.path(), config(&faults)).unwrap();
            let mut acknowledged = 0;
            for n in 1..=12 {
                match commit_step(&engine, n, CommitMode::Safe) {
                    Ok(_) => acknowledged = n,
                    Err(_) => break,
                }
            }
            drop(engine);
            let engine = reopen_clean(dir.path());
            let seq = check_prefix(&engine);
            assert!(
                seq >= acknowledged,
                "preallocate {preallocate}, cut {cut}: recovered {seq} < acknowledged {acknowledged}"
            );
        }
    }
}

fn newest_segment(dir: &Path) -> PathBuf {
    let segments = list_segments(&kiln_engine::OsVfs, &dir.join(LOG_DIR)).unwrap();
    segments.into_iter().rev().find(|s| std::fs::metadata(&s.path).unwrap().len() > 0).unwrap().path
}

/// Flips a bit of a segment, `offset` bytes into it or, with `offset_from_end`, that many
/// bytes before the end of its last valid frame (the zeroed space after it is not the log).
fn flip_byte(path: &Path, offset_from_end: Option<u64>, offset: u64) {
    let mut data = std::fs::read(path).unwrap();
    let at = match offset_from_end {
        Some(back) => log_end(path) - back as usize,
        None => offset as usize,
    };
    data[at] ^= 0x01;
    std::fs::write(path, data).unwrap();
}

/// A log with `count` single-commit frames (each commit safe, so each its own flush).
fn log_with_frames(count: u64) -> (tempfile::TempDir, Vec<TxnId>) {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), Config::default()).unwrap();
    let ids = (1..=count).map(|n| commit_step(&engine, n, CommitMode::Safe).unwrap()).collect();
    engine.close().unwrap();
    (dir, ids)
}

#[test]
fn bit_flip_in_the_log_tail_ends_replay_at_the_last_valid_record() {
    let (dir, ids) = log_with_frames(5);
    flip_byte(&newest_segment(dir.path()), Some(3), 0);
    let engine = reopen_clean(dir.path());
    assert_eq!(check_prefix(&engine), 4, "replay stops before the damaged last frame");
    assert_eq!(engine.status(ids[3]), TxnStatus::Durable);
    assert_eq!(engine.status(ids[4]), TxnStatus::Lost, "the discarded commit reports lost");
    // The torn tail was cut, so the next restart sees a clean log.
    drop(engine);
    assert_eq!(check_prefix(&reopen_clean(dir.path())), 4);
}

#[test]
fn bit_flip_in_the_middle_of_the_log_refuses_to_open() {
    let (dir, _) = log_with_frames(5);
    let segment = newest_segment(dir.path());
    let before = std::fs::read(&segment).unwrap();
    flip_byte(&segment, None, 60);
    for _ in 0..2 {
        match Engine::open(dir.path(), Config::default()) {
            Err(Error::Corruption { path, detail, .. }) => {
                assert_eq!(path, segment);
                assert!(detail.contains("followed by a valid frame of a later flush"), "{detail}");
            }
            other => panic!("expected corruption, got {other:?}"),
        }
    }
    assert_eq!(std::fs::read(&segment).unwrap().len(), before.len(), "the log was not truncated");
}

#[test]
fn damaged_checkpoint_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), Config::default()).unwrap();
    for n in 1..=50 {
        commit_step(&engine, n, CommitMode::Fast).unwrap();
    }
    engine.persist().unwrap();
    let csn = engine.checkpoint().unwrap();
    engine.close().unwrap();
    let path = dir.path().join(format!("checkpoint-{csn:020}.ckpt"));
    flip_byte(&path, None, 100);
    match Engine::open(dir.path(), Config::default()) {
        Err(Error::Corruption { path: p, .. }) => assert_eq!(p, path),
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn damaged_epoch_history_refuses_to_open() {
    let (dir, _) = log_with_frames(2);
    flip_byte(&dir.path().join("EPOCHS"), None, 14);
    assert!(matches!(Engine::open(dir.path(), Config::default()), Err(Error::Corruption { .. })));
}

#[test]
fn missing_log_segment_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config { segment_bytes_max: 256, ..Config::default() };
    let engine = Engine::open(dir.path(), cfg.clone()).unwrap();
    for n in 1..=40 {
        commit_step(&engine, n, CommitMode::Safe).unwrap();
    }
    engine.close().unwrap();
    let segments = list_segments(&kiln_engine::OsVfs, &dir.path().join(LOG_DIR)).unwrap();
    assert!(segments.len() > 4, "segments rotate at 256 bytes");
    std::fs::remove_file(&segments[2].path).unwrap();
    match Engine::open(dir.path(), cfg) {
        Err(Error::Corruption { detail, .. }) => assert!(detail.contains("skips"), "{detail}"),
        other => panic!("expected corruption, got {other:?}"),
    }
}

/// Checkpoints replace the log before them: old segments are removed, and recovery from the
/// checkpoint plus the remaining log gives the same state.
#[test]
fn checkpoint_truncates_the_log_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config { segment_bytes_max: 512, ..Config::default() };
    let engine = Engine::open(dir.path(), cfg.clone()).unwrap();
    for n in 1..=100 {
        commit_step(&engine, n, CommitMode::Safe).unwrap();
    }
    let segments_before =
        list_segments(&kiln_engine::OsVfs, &dir.path().join(LOG_DIR)).unwrap().len();
    assert_eq!(engine.checkpoint().unwrap(), 100);
    let segments_after =
        list_segments(&kiln_engine::OsVfs, &dir.path().join(LOG_DIR)).unwrap().len();
    assert!(segments_after < segments_before / 4, "{segments_before} → {segments_after}");
    for n in 101..=150 {
        commit_step(&engine, n, CommitMode::Fast).unwrap();
    }
    engine.close().unwrap();
    let engine = Engine::open(dir.path(), cfg).unwrap();
    assert_eq!(check_prefix(&engine), 150);
}

#[test]
fn a_directory_opens_only_once() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), Config::default()).unwrap();
    match Engine::open(dir.path(), Config::default()) {
        Err(Error::Locked { path }) => assert_eq!(path, dir.path()),
        other => panic!("expected Locked, got {other:?}"),
    }
    let clone = engine.clone();
    engine.close().unwrap();
    // Closing releases the directory even while other handles to the closed engine live.
    Engine::open(dir.path(), Config::default()).unwrap();
    drop(clone);
}

#[test]
fn closed_engine_and_finished_work_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), Config::default()).unwrap();
    let mut txn = engine.begin(TxnOptions::new()).unwrap();
    txn.put(KS, b"k", b"v").unwrap();
    let other = engine.clone();
    engine.close().unwrap();
    assert!(matches!(txn.put(KS, b"k2", b"v"), Err(Error::Closed)));
    assert!(matches!(txn.commit(), Err(Error::Closed)));
    assert!(matches!(other.begin(TxnOptions::new()), Err(Error::Closed)));
    assert!(matches!(other.persist(), Err(Error::Closed)));
}

#[test]
fn limits_are_enforced_with_clear_errors_and_no_partial_effects() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config {
        key_bytes_max: 16,
        value_bytes_max: 64,
        txn_writes_max: 3,
        txn_bytes_max: 400,
        memory_bytes_max: 4096,
        ..Config::default()
    };
    let engine = Engine::open(dir.path(), cfg).unwrap();
    let mut txn = engine.begin(TxnOptions::new()).unwrap();
    let err = txn.put(KS, &[0; 17], b"v").unwrap_err();
    assert!(err.to_string().contains("key size in bytes is 17, over the limit of 16"), "{err}");
    let err = txn.put(KS, b"k", &[0; 65]).unwrap_err();
    assert!(matches!(err, Error::LimitExceeded { what: "value size in bytes", .. }), "{err}");
    let err = txn.put(&"x".repeat(256), b"k", b"v").unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    for k in 0..3u8 {
        txn.put(KS, &[k], b"v").unwrap();
    }
    txn.put(KS, &[0], b"overwrite is not a new write").unwrap();
    let err = txn.put(KS, &[9], b"v").unwrap_err();
    assert!(matches!(err, Error::LimitExceeded { what: "writes in one transaction", .. }), "{err}");
    txn.commit().unwrap();
    let mut txn = engine.begin(TxnOptions::new()).unwrap();
    let err = (0..3u8)
        .try_for_each(|k| txn.put("big", &[k], &[7; 64]))
        .and_then(|()| txn.put("big", &[9], &[7; 64]));
    assert!(err.is_err());
    drop(txn);
    // Memory: fill the store until the bound refuses a commit; the refused commit left nothing.
    let mut refused = false;
    for n in 0..200u8 {
        let mut txn = engine.begin(TxnOptions::new()).unwrap();
        txn.put("mem", &[n], &[1; 64]).unwrap();
        match txn.commit() {
            Ok(_) => {}
            Err(Error::LimitExceeded { what: "store memory in bytes", .. }) => {
                let mut check = engine.begin(TxnOptions::new()).unwrap();
                assert_eq!(check.get("mem", &[n]).unwrap(), None, "refused commit left no effect");
                refused = true;
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(refused, "the memory bound was never enforced");
    let stats = engine.stats();
    assert!(stats.store_bytes <= 4096, "{stats:?}");
}

/// Where the last valid frame of a segment ends.
fn log_end(path: &Path) -> usize {
    frames_of(path).last().map_or(0, |(offset, h)| {
        offset + kiln_engine::inspect::FRAME_HEADER_BYTES + h.body_len as usize
    })
}

/// The frames of a segment: (offset, header).
fn frames_of(path: &Path) -> Vec<(usize, kiln_engine::inspect::FrameHeader)> {
    use kiln_engine::inspect::{frame_at, FrameAt};
    let data = std::fs::read(path).unwrap();
    let (mut offset, mut frames) = (0, Vec::new());
    while let FrameAt::Valid { header, body_start } = frame_at(&data, offset) {
        frames.push((offset, header));
        offset = body_start + header.body_len as usize;
    }
    frames
}

/// A log whose last flush was written as several frames in one write: five small safe commits,
/// then a flush held back by a full disk while sixteen 700 KiB commits join it. Returns the
/// first commit of that last flush.
///
/// When space returns the writer tries the stalled batch whole and, if that still fails, its
/// first frame's worth alone and then the rest. Space can come back between those two tries,
/// so the last flush is either the whole batch (from commit 6) or the rest after its first
/// frame; the backlog is large enough (about 11 MiB, frames hold 4 MiB) that either one is
/// written as several frames.
fn log_ending_in_a_multi_frame_flush() -> (tempfile::TempDir, PathBuf, u64) {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    let engine = Engine::open(dir.path(), appending(&faults)).unwrap();
    for n in 1..=5 {
        commit_step(&engine, n, CommitMode::Safe).unwrap();
    }
    faults.free_bytes.store(0, Ordering::SeqCst);
    let sixth = commit_step(&engine, 6, CommitMode::Fast).unwrap();
    assert_eq!(engine.wait(sixth, Duration::from_millis(50)).unwrap(), TxnStatus::Committed);
    for n in 7..=22u64 {
        let mut txn = engine.begin(TxnOptions::new()).unwrap();
        txn.put(KS, format!("row/{n:06}").as_bytes(), &n.to_le_bytes()).unwrap();
        txn.put(KS, b"seq", &n.to_le_bytes()).unwrap();
        txn.put("blob", &n.to_be_bytes(), &vec![n as u8; 700 << 10]).unwrap();
        txn.commit_fast().unwrap();
    }
    // Wait until the stalled writer has taken everything into the one batch it retries.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !(engine.stats().stalled.is_some() && engine.stats().buffered_bytes == 0) {
        assert!(std::time::Instant::now() < deadline, "{:?}", engine.stats());
        std::thread::sleep(Duration::from_millis(5));
    }
    faults.free_bytes.store(u64::MAX, Ordering::SeqCst);
    engine.persist().unwrap();
    engine.close().unwrap();
    let segment = newest_segment(dir.path());
    let frames = frames_of(&segment);
    let last_flush = frames.last().unwrap().1.flush_first;
    assert!((6..22).contains(&last_flush), "{frames:?}");
    assert!(frames.iter().filter(|(_, h)| h.flush_first == last_flush).count() >= 2, "{frames:?}");
    (dir, segment, last_flush)
}

/// A machine crash can persist a later frame of a flush but not an earlier one: that is a torn
/// flush, never acknowledged, and recovery must open with the state before it.
#[test]
fn torn_multi_frame_flush_recovers_the_state_before_it() {
    let (dir, segment, last_flush) = log_ending_in_a_multi_frame_flush();
    let frames = frames_of(&segment);
    let (first_of_flush, _) = frames.iter().find(|(_, h)| h.flush_first == last_flush).unwrap();
    flip_byte(&segment, None, *first_of_flush as u64 + 100);
    let engine = reopen_clean(dir.path());
    assert_eq!(check_prefix(&engine), last_flush - 1, "the whole torn flush is discarded");
}

/// Damage to an earlier, completed flush followed by a later flush is corruption.
#[test]
fn damage_before_a_later_flush_refuses_to_open() {
    let (dir, segment, _) = log_ending_in_a_multi_frame_flush();
    let (second_frame, _) = frames_of(&segment)[1];
    flip_byte(&segment, None, second_frame as u64 + 60);
    match Engine::open(dir.path(), Config::default()) {
        Err(Error::Corruption { detail, .. }) => {
            assert!(detail.contains("later flush"), "{detail}")
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

/// Space that comes back a little at a time is used at once: a backlog larger than the freed
/// space drains frame by frame instead of waiting until all of it fits (it used to retry the
/// whole batch, and a disk with less room than the backlog never resumed).
#[test]
fn a_full_disk_resumes_with_less_space_than_the_backlog() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    let engine = Engine::open(dir.path(), appending(&faults)).unwrap();
    commit_step(&engine, 1, CommitMode::Safe).unwrap();
    faults.free_bytes.store(0, Ordering::SeqCst);
    let blob = vec![7u8; 1 << 20];
    let mut ids = Vec::new();
    for n in 0..12u64 {
        let mut txn = engine.begin(TxnOptions::new()).unwrap();
        txn.put("blob", &n.to_be_bytes(), &blob).unwrap();
        ids.push(txn.commit_fast().unwrap());
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !(engine.stats().stalled.is_some() && engine.stats().buffered_bytes == 0) {
        assert!(std::time::Instant::now() < deadline, "{:?}", engine.stats());
        std::thread::sleep(Duration::from_millis(5));
    }
    // Room for about a frame and a half (frames hold about 4 MiB): less than the 12 MiB
    // backlog, so only a prefix can harden.
    faults.free_bytes.store(6 << 20, Ordering::SeqCst);
    assert_eq!(engine.wait(ids[0], Duration::from_secs(30)).unwrap(), TxnStatus::Durable);
    assert_eq!(engine.status(*ids.last().unwrap()), TxnStatus::Committed, "all of it fit?");
    faults.free_bytes.store(u64::MAX, Ordering::SeqCst);
    let last = *ids.last().unwrap();
    assert_eq!(engine.wait(last, Duration::from_secs(30)).unwrap(), TxnStatus::Durable);
    assert_eq!(engine.stats().loss_events, 0, "a full disk loses nothing");
    engine.close().unwrap();
    let engine = Engine::open(dir.path(), Config::default()).unwrap();
    let mut txn = engine.begin(TxnOptions::new().read_only()).unwrap();
    assert_eq!(txn.scan("blob", kiln_engine::Scan::all()).unwrap().len(), 12);
}

/// A restart on a full disk: the engine opens without being able to record its new epoch.
/// Reads are served at once; commits and checkpoints wait (bounded) and fail with a
/// retryable error naming the cause; a second restart on the still-full disk reuses the
/// unrecorded epoch (nothing committed in it); as soon as space returns the epoch is
/// recorded and commits resume, with nothing lost.
#[test]
fn a_restart_on_a_full_disk_serves_reads_and_resumes_commits_when_space_returns() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    let mut cfg = config(&faults);
    cfg.backpressure_timeout = Duration::from_millis(200);
    let engine = Engine::open(dir.path(), cfg.clone()).unwrap();
    let mut ids = Vec::new();
    for n in 1..=5 {
        ids.push(commit_step(&engine, n, CommitMode::Safe).unwrap());
    }
    engine.close().unwrap();

    faults.free_bytes.store(0, Ordering::SeqCst);
    let engine = Engine::open(dir.path(), cfg.clone()).expect("opens on a full disk");
    let epoch = engine.stats().epoch;
    assert_eq!(check_prefix(&engine), 5, "reads see everything recovered");
    let stalled = engine.stats().stalled.expect("the stall is reported");
    assert!(stalled.contains("No space left") && stalled.contains("epoch"), "{stalled}");
    for mode in [CommitMode::Fast, CommitMode::Safe] {
        let refused =
            commit_step(&engine, 6, mode).expect_err("no commit before the epoch is recorded");
        assert!(matches!(refused, Error::DurabilityStalled { .. }), "{refused}");
        assert!(refused.to_string().contains("No space left"), "{refused}");
        assert!(refused.is_retryable());
    }
    let refused = engine.checkpoint().expect_err("no checkpoint in an unrecorded epoch");
    assert!(matches!(refused, Error::DurabilityStalled { .. }), "{refused}");
    assert_eq!(engine.stats().committed_csn, 5, "the refused commits left nothing behind");
    engine.close().unwrap();

    // Still full: it opens again, in the same (still unrecorded) epoch.
    cfg.backpressure_timeout = Duration::from_secs(60);
    let engine = Engine::open(dir.path(), cfg).expect("opens on a full disk again");
    assert_eq!(engine.stats().epoch, epoch);

    // Space returns while a commit is waiting for it: that very commit goes through.
    let committer = {
        let engine = engine.clone();
        std::thread::spawn(move || {
            let mut txn = engine.begin(TxnOptions::new()).unwrap();
            txn.put(KS, b"row/000006", &6u64.to_le_bytes()).unwrap();
            txn.put(KS, b"seq", &6u64.to_le_bytes()).unwrap();
            txn.commit_safe()
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    faults.free_bytes.store(u64::MAX, Ordering::SeqCst);
    let id = committer.join().unwrap().expect("the waiting commit resumes");
    assert_eq!(id.epoch, epoch);
    assert_eq!(engine.status(id), TxnStatus::Durable);
    assert_eq!(engine.stats().stalled, None);
    assert_eq!(engine.stats().loss_events, 0);
    engine.checkpoint().expect("checkpoints resume");
    engine.close().unwrap();

    let engine = reopen_clean(dir.path());
    assert_eq!(check_prefix(&engine), 6);
    for id in ids.iter().chain([&id]) {
        assert_eq!(engine.status(*id), TxnStatus::Durable, "{id}");
    }
    assert_eq!(engine.stats().epoch, epoch + 1);
}

/// Flushes overwrite the zeroed space ahead of the log instead of appending: the segment's
/// size does not change while commits fit in it, the bytes after the last frame are zeros, and
/// a reopen reads the zeros as the end of the log.
#[test]
fn flushes_overwrite_zeroed_space_and_recovery_ends_at_the_zeros() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), Config::default()).unwrap();
    commit_step(&engine, 1, CommitMode::Safe).unwrap();
    let segment = newest_segment(dir.path());
    let size = std::fs::metadata(&segment).unwrap().len();
    assert!(size >= 64 << 10, "a new segment starts zero-filled: {size} bytes");
    for n in 2..=20 {
        commit_step(&engine, n, CommitMode::Safe).unwrap();
    }
    assert_eq!(std::fs::metadata(&segment).unwrap().len(), size, "a flush appended");
    engine.close().unwrap();
    let data = std::fs::read(&segment).unwrap();
    let end = log_end(&segment);
    assert_eq!(frames_of(&segment).len(), 20);
    assert!(end < data.len() && data[end..].iter().all(|&b| b == 0));
    let engine = reopen_clean(dir.path());
    assert_eq!(check_prefix(&engine), 20);
}

/// A log that keeps growing gets more zeroed space from the writer thread, ahead of it.
#[test]
fn zeroed_space_is_extended_ahead_of_a_growing_log() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), Config::default()).unwrap();
    let value = vec![3u8; 8 << 10];
    for n in 0..200u64 {
        let mut txn = engine.begin(TxnOptions::new()).unwrap();
        txn.put("blob", &n.to_be_bytes(), &value).unwrap();
        txn.commit_safe().unwrap();
    }
    let stats = engine.stats();
    assert!(stats.zero_fills > 0 && stats.zero_fill_bytes >= 64 << 10, "{stats:?}");
    engine.close().unwrap();
    let segment = newest_segment(dir.path());
    assert!(std::fs::metadata(&segment).unwrap().len() > log_end(&segment) as u64);
    let engine = reopen_clean(dir.path());
    let mut txn = engine.begin(TxnOptions::new().read_only()).unwrap();
    assert_eq!(txn.scan("blob", Scan::all()).unwrap().len(), 200);
}

/// On a full disk (that does not copy on write) the space zero-filled ahead of the log keeps
/// commits hardening; once the log outruns it, flushes stall until space returns, and nothing
/// is lost.
#[test]
fn a_full_disk_is_ridden_out_on_preallocated_space_then_stalls_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    let engine = Engine::open(dir.path(), config(&faults)).unwrap();
    commit_step(&engine, 1, CommitMode::Safe).unwrap();
    faults.free_bytes.store(0, Ordering::SeqCst);
    for n in 2..=10 {
        let id = commit_step(&engine, n, CommitMode::Safe).expect("fits in the zeroed space");
        assert_eq!(engine.status(id), TxnStatus::Durable);
    }
    // Outrun the zeroed space (64 KiB) with fast commits.
    let value = vec![5u8; 4 << 10];
    let mut last = None;
    for n in 0..40u64 {
        let mut txn = engine.begin(TxnOptions::new()).unwrap();
        txn.put("blob", &n.to_be_bytes(), &value).unwrap();
        last = Some(txn.commit_fast().unwrap());
    }
    let last = last.unwrap();
    assert_eq!(engine.wait(last, Duration::from_millis(300)).unwrap(), TxnStatus::Committed);
    let stalled = engine.stats().stalled.expect("the stall is reported");
    assert!(stalled.contains("No space left"), "{stalled}");
    faults.free_bytes.store(u64::MAX, Ordering::SeqCst);
    assert_eq!(engine.wait(last, Duration::from_secs(30)).unwrap(), TxnStatus::Durable);
    assert_eq!(engine.stats().loss_events, 0, "a full disk loses nothing");
    engine.close().unwrap();
    let engine = reopen_clean(dir.path());
    assert_eq!(check_prefix(&engine), 10);
    let mut txn = engine.begin(TxnOptions::new().read_only()).unwrap();
    assert_eq!(txn.scan("blob", Scan::all()).unwrap().len(), 40);
}

/// Overwrite `len` bytes of a segment at `at` with zeros.
fn zero_bytes(path: &Path, at: usize, len: usize) {
    let mut data = std::fs::read(path).unwrap();
    data[at..at + len].fill(0);
    std::fs::write(path, data).unwrap();
}

/// A zeroed frame header followed by more of the frame (not by zeros only) is a torn write of
/// the last flush: replay stops before it, and the commit answers lost.
#[test]
fn a_zeroed_header_before_data_in_the_last_flush_is_a_torn_tail() {
    let (dir, ids) = log_with_frames(5);
    let segment = newest_segment(dir.path());
    let (last_frame, _) = *frames_of(&segment).last().unwrap();
    zero_bytes(&segment, last_frame, kiln_engine::inspect::FRAME_HEADER_BYTES);
    let engine = reopen_clean(dir.path());
    assert_eq!(check_prefix(&engine), 4);
    assert_eq!(engine.status(ids[4]), TxnStatus::Lost);
}

/// A zeroed frame header followed by a valid frame of a later flush is damage inside synced
/// data: the engine refuses to open rather than drop durable commits.
#[test]
fn a_zeroed_header_before_a_later_flush_refuses_to_open() {
    let (dir, _) = log_with_frames(5);
    let segment = newest_segment(dir.path());
    let (third, _) = frames_of(&segment)[2];
    zero_bytes(&segment, third, kiln_engine::inspect::FRAME_HEADER_BYTES);
    match Engine::open(dir.path(), Config::default()) {
        Err(Error::Corruption { detail, .. }) => {
            assert!(detail.contains("later flush"), "{detail}")
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

/// On a copy-on-write file system overwriting preallocated space needs room too: a flush
/// that finds none is cut back (the zeroed space after it goes with it, which gives room
/// back), stalls, and is retried; nothing is lost and the log reads back whole.
#[test]
fn a_full_copy_on_write_disk_cuts_back_a_write_into_zeroed_space() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    let engine = Engine::open(dir.path(), config(&faults)).unwrap();
    commit_step(&engine, 1, CommitMode::Safe).unwrap();
    let segment = newest_segment(dir.path());
    assert!(std::fs::metadata(&segment).unwrap().len() >= 64 << 10);
    faults.copy_on_write.store(true, Ordering::SeqCst);
    faults.free_bytes.store(10, Ordering::SeqCst);
    let engine2 = engine.clone();
    let waiter = std::thread::spawn(move || commit_step(&engine2, 2, CommitMode::Safe));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while engine.stats().stalls == 0 {
        assert!(std::time::Instant::now() < deadline, "the writer never reported the full disk");
        std::thread::sleep(Duration::from_millis(1));
    }
    faults.free_bytes.store(u64::MAX, Ordering::SeqCst);
    let id = waiter.join().unwrap().unwrap();
    assert_eq!(engine.status(id), TxnStatus::Durable);
    assert_eq!(engine.stats().loss_events, 0);
    drop(engine);
    assert_eq!(check_prefix(&reopen_clean(dir.path())), 2);
}

/// Every key of keyspace `ks` visible to a new read-only transaction.
fn keys_of(engine: &Engine, ks: &str) -> Vec<Vec<u8>> {
    let mut txn = engine.begin(TxnOptions::new().read_only()).expect("begin");
    txn.scan(ks, Scan::all()).expect("scan").into_iter().map(|(k, _)| k).collect()
}

/// A keyspace clear (TRUNCATE, DROP) is one small log record however many keys it deletes;
/// snapshots from before it still read the keys; a fast clear lost to an fsync error brings
/// every key back; a durable one survives a restart, from the log and from a checkpoint; and
/// once no snapshot needs them, garbage collection frees the rows.
#[test]
fn a_keyspace_clear_is_one_record_undone_by_a_loss_and_kept_by_recovery() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    // No timed flush: the fast clear stays non-durable until the failing fsync.
    let engine =
        Engine::open(dir.path(), Config { timed_flush: false, ..config(&faults) }).unwrap();
    let mut load = engine.begin(TxnOptions::new()).unwrap();
    for n in 0..2000u32 {
        load.put(KS, format!("k{n:05}").as_bytes(), &[7u8; 40]).unwrap();
    }
    load.put("other", b"kept", b"1").unwrap();
    load.commit_safe().unwrap();
    let all = keys_of(&engine, KS);
    assert_eq!(all.len(), 2000);

    // The clear and a write after it in the same transaction; an older snapshot stays intact.
    let mut before = engine.begin(TxnOptions::new().read_only()).unwrap();
    let log_before = engine.stats().log_bytes;
    let mut clear = engine.begin(TxnOptions::new()).unwrap();
    clear.put(KS, b"k00001", b"dropped by the clear").unwrap();
    clear.clear(KS).unwrap();
    assert_eq!(clear.get(KS, b"k00002").unwrap(), None, "the clearing transaction sees none");
    clear.put(KS, b"k00003", b"after").unwrap();
    assert_eq!(clear.scan(KS, Scan::all()).unwrap().len(), 1);
    let lost_id = clear.commit_fast().unwrap();
    assert_eq!(keys_of(&engine, KS), vec![b"k00003".to_vec()]);
    assert_eq!(keys_of(&engine, "other"), vec![b"kept".to_vec()]);
    assert_eq!(before.scan(KS, Scan::all()).unwrap().len(), 2000, "an older snapshot");
    drop(before);

    // Lose it: every key comes back, the write after the clear goes.
    faults.fail_syncs.store(1, Ordering::SeqCst);
    assert!(matches!(engine.persist(), Err(Error::Lost { .. })));
    faults.fail_syncs.store(0, Ordering::SeqCst);
    assert_eq!(engine.status(lost_id), TxnStatus::Lost);
    assert_eq!(keys_of(&engine, KS), all, "a lost clear restores every key");
    let mut check = engine.begin(TxnOptions::new().read_only()).unwrap();
    assert_eq!(check.get(KS, b"k00003").unwrap().as_deref(), Some(&[7u8; 40][..]));
    drop(check);

    // Clear durably; the record is small.
    let log_before_clear = engine.stats().log_bytes;
    let mut clear = engine.begin(TxnOptions::new()).unwrap();
    clear.clear(KS).unwrap();
    clear.put(KS, b"z", b"after").unwrap();
    clear.commit_safe().unwrap();
    let record = engine.stats().log_bytes - log_before_clear;
    assert!(
        record < 200,
        "the clear took {record} bytes of log (the load took more than {})",
        log_before_clear - log_before
    );
    assert_eq!(keys_of(&engine, KS), vec![b"z".to_vec()]);
    engine.gc();
    assert_eq!(engine.stats().rows, 2, "garbage collection freed the cleared rows");
    engine.close().unwrap();

    // Recovery replays the clear from the log, then from a checkpoint.
    let engine = reopen_clean(dir.path());
    assert_eq!(keys_of(&engine, KS), vec![b"z".to_vec()]);
    assert_eq!(keys_of(&engine, "other"), vec![b"kept".to_vec()]);
    engine.checkpoint().unwrap();
    engine.close().unwrap();
    let engine = reopen_clean(dir.path());
    assert_eq!(keys_of(&engine, KS), vec![b"z".to_vec()]);
    assert_eq!(engine.stats().rows, 2);
}

/// Under REPEATABLE READ a clear conflicts with a write to its keyspace committed after its
/// snapshot, and a write to a key the clear deleted conflicts with the clear; under READ
/// COMMITTED the clear deletes whatever is there at its commit.
#[test]
fn a_keyspace_clear_conflicts_like_a_write_of_every_key() {
    use kiln_engine::IsolationLevel;
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), Config::default()).unwrap();
    let put = |key: &[u8]| {
        let mut t = engine.begin(TxnOptions::new()).unwrap();
        t.put(KS, key, b"v").unwrap();
        t.commit_fast().unwrap();
    };
    put(b"a");
    let rr = TxnOptions::new().isolation(IsolationLevel::RepeatableRead);

    let mut clear = engine.begin(rr).unwrap();
    clear.clear(KS).unwrap();
    put(b"b");
    assert!(clear.commit_fast().unwrap_err().is_retryable(), "a write after the snapshot");

    let mut writer = engine.begin(rr).unwrap();
    writer.put(KS, b"a", b"w").unwrap();
    let mut clear = engine.begin(rr).unwrap();
    clear.clear(KS).unwrap();
    clear.commit_fast().unwrap();
    assert!(writer.commit_fast().unwrap_err().is_retryable(), "a key the clear deleted");

    put(b"c");
    let mut clear =
        engine.begin(TxnOptions::new().isolation(IsolationLevel::ReadCommitted)).unwrap();
    clear.clear(KS).unwrap();
    put(b"d");
    clear.commit_fast().unwrap();
    assert!(keys_of(&engine, KS).is_empty(), "READ COMMITTED clears what is there at commit");
}
