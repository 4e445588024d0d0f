//! Model-based tests: random transactions against a reference model that executes the
//! committed ones serially, in CSN order.
//!
//! For every committed transaction the model checks that each read it made returned exactly
//! what the serial execution gives — at its CSN for SERIALIZABLE update transactions (G3), at
//! its snapshot for everything else — and that the engine's final state equals the model's.
//! The single-threaded property test also injects fsync failures: the model then drops the
//! lost suffix, and every status must agree with what survived (G6, G8).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kiln_engine::{
    CommitMode, Config, Engine, Error, Faults, FaultyVfs, IsolationLevel, Scan, Transaction, TxnId,
    TxnKind, TxnOptions, TxnStatus,
};
use proptest::prelude::*;

const KS: &str = "kv";
type State = BTreeMap<u8, u8>;

/// What a transaction did and saw.
#[derive(Clone, Debug)]
enum Step {
    Get(u8, Option<u8>),
    Scan(u8, u8, bool, usize, Vec<(u8, u8)>),
    Put(u8, u8),
    Delete(u8),
    /// `insert`: whether it wrote (the key had no value it could see) and the value.
    Insert(u8, u8, bool),
    /// `clear` of the whole keyspace.
    Clear,
}

#[derive(Debug)]
struct Committed {
    id: TxnId,
    begin_epoch: u32,
    isolation: IsolationLevel,
    snapshot: u64,
    steps: Vec<Step>,
}

/// Replays `steps` over `base`, checking reads; returns the writes, or a description of the
/// first read that differs.
fn replay(base: &State, steps: &[Step]) -> Result<State, String> {
    let mut state = base.clone();
    for step in steps {
        match step {
            Step::Get(k, seen) => {
                let want = state.get(k).copied();
                if want != *seen {
                    return Err(format!("get {k}: saw {seen:?}, serial order gives {want:?}"));
                }
            }
            Step::Scan(lo, hi, reverse, limit, seen) => {
                let mut want: Vec<(u8, u8)> = state.range(lo..hi).map(|(k, v)| (*k, *v)).collect();
                if *reverse {
                    want.reverse();
                }
                want.truncate(*limit);
                if want != *seen {
                    return Err(format!("scan {lo}..{hi}: saw {seen:?}, serial gives {want:?}"));
                }
            }
            Step::Put(k, v) => {
                state.insert(*k, *v);
            }
            Step::Delete(k) => {
                state.remove(k);
            }
            Step::Clear => state.clear(),
            Step::Insert(k, v, wrote) => {
                let absent = !state.contains_key(k);
                if absent != *wrote {
                    return Err(format!(
                        "insert {k}: wrote {wrote}, serial order has it {}",
                        if absent { "absent" } else { "present" }
                    ));
                }
                if absent {
                    state.insert(*k, *v);
                }
            }
        }
    }
    Ok(state)
}

/// Checks committed transactions against serial execution in CSN order; returns the final
/// state. `history[c]` is the state after CSN `c` (CSNs of surviving transactions are dense).
/// `epoch_ends` holds where each epoch that lost a suffix ended: a read-only transaction whose
/// snapshot reached past that point is checked at its read dependency instead, which gives
/// the same reads (no version of anything it read lies between the two).
fn check_serial(
    committed: Vec<Committed>,
    epoch_ends: &BTreeMap<u32, u64>,
) -> Result<State, String> {
    let (mut updates, reads): (Vec<_>, Vec<_>) =
        committed.into_iter().partition(|c| c.id.kind == TxnKind::Update);
    updates.sort_by_key(|c| c.id.csn);
    let mut history: Vec<State> = vec![State::new()];
    for txn in &updates {
        if txn.id.csn as usize != history.len() {
            return Err(format!("CSN gap: {} after {} states", txn.id, history.len()));
        }
        let at_commit = history.last().expect("history starts non-empty");
        let result = if txn.isolation == IsolationLevel::Serializable {
            replay(at_commit, &txn.steps)
        } else {
            // Snapshot reads; writes applied in CSN order.
            replay(&history[txn.snapshot as usize], &txn.steps)?;
            let writes: Vec<Step> = txn
                .steps
                .iter()
                .filter_map(|s| match s {
                    Step::Put(..) | Step::Delete(_) | Step::Clear => Some(s.clone()),
                    Step::Insert(k, v, true) => Some(Step::Put(*k, *v)),
                    _ => None,
                })
                .collect();
            replay(at_commit, &writes)
        };
        history.push(result.map_err(|e| format!("{} ({:?}): {e}", txn.id, txn.isolation))?);
    }
    for txn in &reads {
        let at = match epoch_ends.get(&txn.begin_epoch) {
            Some(&end) if txn.snapshot > end => txn.id.csn,
            _ => txn.snapshot,
        };
        let state = history
            .get(at as usize)
            .ok_or_else(|| format!("{} read at {at} beyond history", txn.id))?;
        replay(state, &txn.steps).map_err(|e| format!("read-only {} at {at}: {e}", txn.id))?;
    }
    Ok(history.pop().expect("non-empty"))
}

fn dump(engine: &Engine) -> State {
    let mut txn = engine.begin(TxnOptions::new().read_only()).expect("begin");
    txn.scan(KS, Scan::all()).expect("scan").into_iter().map(|(k, v)| (k[0], v[0])).collect()
}

#[derive(Clone, Debug)]
enum Op {
    Begin(usize, IsolationLevel),
    Get(usize, u8),
    Scan(usize, u8, u8, bool, usize),
    Put(usize, u8, u8),
    Delete(usize, u8),
    Insert(usize, u8, u8),
    Clear(usize),
    Commit(usize, bool),
    Abort(usize),
    /// Make the next fsync fail and flush: loses the non-durable suffix.
    FailFlush,
    Persist,
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let slot = 0..4usize;
    let key = 0..12u8;
    let isolation = prop_oneof![
        Just(IsolationLevel::Serializable),
        Just(IsolationLevel::Serializable),
        Just(IsolationLevel::RepeatableRead),
    ];
    prop_oneof![
        3 => (slot.clone(), isolation).prop_map(|(s, i)| Op::Begin(s, i)),
        6 => (slot.clone(), key.clone()).prop_map(|(s, k)| Op::Get(s, k)),
        2 => (slot.clone(), key.clone(), key.clone(), any::<bool>(), 1..6usize)
            .prop_map(|(s, a, b, r, l)| Op::Scan(s, a.min(b), a.max(b) + 1, r, l)),
        6 => (slot.clone(), key.clone(), any::<u8>()).prop_map(|(s, k, v)| Op::Put(s, k, v)),
        2 => (slot.clone(), key.clone()).prop_map(|(s, k)| Op::Delete(s, k)),
        3 => (slot.clone(), key, any::<u8>()).prop_map(|(s, k, v)| Op::Insert(s, k, v)),
        1 => slot.clone().prop_map(Op::Clear),
        4 => (slot.clone(), any::<bool>()).prop_map(|(s, safe)| Op::Commit(s, safe)),
        1 => slot.prop_map(Op::Abort),
        1 => Just(Op::FailFlush),
        1 => Just(Op::Persist),
    ]
}

struct Slot {
    txn: Transaction,
    begin_epoch: u32,
    isolation: IsolationLevel,
    steps: Vec<Step>,
}

struct Harness {
    engine: Engine,
    faults: Arc<Faults>,
    slots: Vec<Option<Slot>>,
    committed: Vec<Committed>,
    lost: Vec<TxnId>,
    epoch_ends: BTreeMap<u32, u64>,
    _dir: tempfile::TempDir,
}

impl Harness {
    fn new() -> Harness {
        let dir = tempfile::tempdir().expect("tempdir");
        let faults = Faults::new();
        let config = Config {
            timed_flush: false,
            vfs: Arc::new(FaultyVfs::new(faults.clone())),
            ..Config::default()
        };
        let engine = Engine::open(dir.path(), config).expect("open");
        Harness {
            engine,
            faults,
            slots: (0..4).map(|_| None).collect(),
            committed: vec![],
            lost: vec![],
            epoch_ends: BTreeMap::new(),
            _dir: dir,
        }
    }

    fn slot(&mut self, i: usize) -> &mut Slot {
        if self.slots[i].is_none() {
            self.begin(i, IsolationLevel::Serializable);
        }
        self.slots[i].as_mut().expect("just begun")
    }

    fn begin(&mut self, i: usize, isolation: IsolationLevel) {
        let begin_epoch = self.engine.stats().epoch;
        let txn = self.engine.begin(TxnOptions::new().isolation(isolation)).expect("begin");
        self.slots[i] = Some(Slot { txn, begin_epoch, isolation, steps: vec![] });
    }

    /// Runs `op`; a transaction whose operation fails with a retryable error is dropped.
    fn apply(&mut self, op: Op) {
        let outcome: kiln_engine::Result<()> = match op {
            Op::Begin(i, isolation) => {
                self.slots[i] = None;
                self.begin(i, isolation);
                Ok(())
            }
            Op::Get(i, k) => {
                let slot = self.slot(i);
                slot.txn.get(KS, &[k]).map(|v| slot.steps.push(Step::Get(k, v.map(|v| v[0]))))
            }
            Op::Scan(i, lo, hi, reverse, limit) => {
                let slot = self.slot(i);
                let (lo_key, hi_key) = ([lo], [hi]);
                let mut scan = Scan::range(&lo_key, &hi_key).limit(limit);
                if reverse {
                    scan = scan.reverse();
                }
                slot.txn.scan(KS, scan).map(|rows| {
                    let rows = rows.into_iter().map(|(k, v)| (k[0], v[0])).collect();
                    slot.steps.push(Step::Scan(lo, hi, reverse, limit, rows))
                })
            }
            Op::Put(i, k, v) => {
                let slot = self.slot(i);
                slot.txn.put(KS, &[k], &[v]).map(|()| slot.steps.push(Step::Put(k, v)))
            }
            Op::Delete(i, k) => {
                let slot = self.slot(i);
                slot.txn.delete(KS, &[k]).map(|()| slot.steps.push(Step::Delete(k)))
            }
            Op::Insert(i, k, v) => {
                let slot = self.slot(i);
                slot.txn
                    .insert(KS, &[k], &[v])
                    .map(|wrote| slot.steps.push(Step::Insert(k, v, wrote)))
            }
            Op::Clear(i) => {
                let slot = self.slot(i);
                slot.txn.clear(KS).map(|()| slot.steps.push(Step::Clear))
            }
            Op::Commit(i, safe) => {
                let Some(slot) = self.slots[i].take() else { return };
                let snapshot = slot.txn.snapshot();
                let mode = if safe { CommitMode::Safe } else { CommitMode::Fast };
                match slot.txn.commit_with(mode) {
                    Ok(id) => {
                        if safe {
                            assert_eq!(
                                self.engine.status(id),
                                TxnStatus::Durable,
                                "safe {id} acknowledged"
                            );
                        }
                        self.committed.push(Committed {
                            id,
                            begin_epoch: slot.begin_epoch,
                            isolation: slot.isolation,
                            snapshot,
                            steps: slot.steps,
                        });
                    }
                    Err(e) => assert!(e.is_retryable(), "commit failed: {e}"),
                }
                return;
            }
            Op::Abort(i) => {
                if let Some(slot) = self.slots[i].take() {
                    assert_eq!(self.engine.status(slot.txn.abort()), TxnStatus::Aborted);
                }
                return;
            }
            Op::FailFlush => {
                self.fail_flush();
                return;
            }
            Op::Persist => {
                self.engine.persist().expect("persist");
                return;
            }
        };
        if let Err(e) = outcome {
            assert!(e.is_retryable(), "operation failed: {e}");
            let i = match op {
                Op::Get(i, _)
                | Op::Scan(i, ..)
                | Op::Put(i, ..)
                | Op::Delete(i, _)
                | Op::Insert(i, ..)
                | Op::Clear(i) => i,
                _ => unreachable!(),
            };
            self.slots[i] = None;
        }
    }

    fn fail_flush(&mut self) {
        let before = self.engine.stats();
        self.faults.fail_syncs.store(1, std::sync::atomic::Ordering::SeqCst);
        let result = self.engine.persist();
        self.faults.fail_syncs.store(0, std::sync::atomic::Ordering::SeqCst);
        let after = self.engine.stats();
        if after.epoch == before.epoch {
            // Nothing was pending, or a flush already under way hardened it all.
            let (epoch, durable) = result.expect("no loss, so persist succeeds");
            assert_eq!((epoch, durable), (before.epoch, before.committed_csn));
            return;
        }
        assert!(matches!(result, Err(Error::Lost { .. })), "persist across a loss: {result:?}");
        assert_eq!(after.epoch, before.epoch + 1, "a loss opens one new epoch");
        // A flush already under way may have hardened more than `before` saw, never less.
        let durable = after.durable_csn;
        assert!(
            durable >= before.durable_csn && durable < before.committed_csn,
            "{before:?} {after:?}"
        );
        assert_eq!(
            self.engine.stats().committed_csn,
            durable,
            "the new epoch starts after the durable prefix"
        );
        self.epoch_ends.insert(before.epoch, durable);
        // The model drops the lost suffix: update transactions past the durable CSN and
        // read-only ones that read from them.
        let (kept, lost): (Vec<_>, Vec<_>) = self
            .committed
            .drain(..)
            .partition(|c| c.id.epoch != before.epoch || c.id.csn <= durable);
        self.committed = kept;
        self.lost.extend(lost.iter().map(|c| c.id));
    }

    /// Finishes everything, then checks the model, statuses and final state.
    fn check(mut self) -> Result<(), TestCaseError> {
        for i in 0..self.slots.len() {
            self.apply(Op::Commit(i, false));
        }
        self.engine.persist().expect("final persist");
        for c in &self.committed {
            prop_assert_eq!(self.engine.status(c.id), TxnStatus::Durable, "{}", c.id);
        }
        for id in &self.lost {
            prop_assert_eq!(self.engine.status(*id), TxnStatus::Lost, "{}", id);
        }
        let model = check_serial(std::mem::take(&mut self.committed), &self.epoch_ends)
            .map_err(TestCaseError::fail)?;
        prop_assert_eq!(dump(&self.engine), model);
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn interleaved_transactions_match_serial_execution(ops in prop::collection::vec(op_strategy(), 1..120)) {
        let mut harness = Harness::new();
        for op in ops {
            harness.apply(op);
        }
        harness.check()?;
    }
}

/// Real threads, real contention: random read-modify-write transactions with retries, all
/// checked against serial execution in CSN order.
#[test]
fn concurrent_transactions_match_serial_execution() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = Config { vulnerability_window: Duration::from_millis(2), ..Config::default() };
    let engine = Engine::open(dir.path(), config).expect("open");
    let threads: Vec<_> = (0..6u64)
        .map(|t| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                use rand::{Rng, SeedableRng};
                let mut rng = rand::rngs::StdRng::seed_from_u64(t);
                let mut done = Vec::new();
                for n in 0..300 {
                    let isolation = if n % 4 == 0 {
                        IsolationLevel::RepeatableRead
                    } else {
                        IsolationLevel::Serializable
                    };
                    let begin_epoch = engine.stats().epoch;
                    let mut txn =
                        engine.begin(TxnOptions::new().isolation(isolation)).expect("begin");
                    let snapshot = txn.snapshot();
                    let mut steps = Vec::new();
                    let mut failed = false;
                    for _ in 0..rng.gen_range(1..5) {
                        let k: u8 = rng.gen_range(0..16);
                        let r = match rng.gen_range(0..10) {
                            0..=3 => {
                                txn.get(KS, &[k]).map(|v| steps.push(Step::Get(k, v.map(|v| v[0]))))
                            }
                            4 => {
                                let hi = k.saturating_add(4);
                                txn.scan(KS, Scan::range(&[k], &[hi])).map(|rows| {
                                    let rows =
                                        rows.into_iter().map(|(k, v)| (k[0], v[0])).collect();
                                    steps.push(Step::Scan(k, hi, false, usize::MAX, rows))
                                })
                            }
                            5 => txn.delete(KS, &[k]).map(|()| steps.push(Step::Delete(k))),
                            _ => {
                                let v: u8 = rng.gen();
                                txn.put(KS, &[k], &[v]).map(|()| steps.push(Step::Put(k, v)))
                            }
                        };
                        if r.is_err() {
                            failed = true;
                            break;
                        }
                    }
                    if failed {
                        continue;
                    }
                    let mode = if n % 3 == 0 { CommitMode::Safe } else { CommitMode::Fast };
                    match txn.commit_with(mode) {
                        Ok(id) => {
                            done.push(Committed { id, begin_epoch, isolation, snapshot, steps })
                        }
                        Err(e) => assert!(e.is_retryable(), "{e}"),
                    }
                }
                done
            })
        })
        .collect();
    let committed: Vec<Committed> =
        threads.into_iter().flat_map(|t| t.join().expect("thread")).collect();
    let updates = committed.iter().filter(|c| c.id.kind == TxnKind::Update).count();
    assert!(updates > 300, "too few update transactions committed ({updates}) to mean anything");
    engine.persist().expect("persist");
    let model = check_serial(committed, &BTreeMap::new()).expect("serializable in CSN order");
    assert_eq!(dump(&engine), model);
    let stats = engine.stats();
    assert!(stats.conflicts > 0, "the workload should have produced conflicts");
}
