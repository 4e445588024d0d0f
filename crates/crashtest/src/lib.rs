//! The crash test: a child process runs a mixed fast/safe workload against a Kiln data
//! directory and is killed with SIGKILL at a random moment; the parent then opens the
//! directory and checks what recovery gave back against what the child acknowledged.
//!
//! The workload is bank transfers between `ACCOUNTS` accounts whose balances must always sum
//! to `TOTAL`, plus per-client sequence numbers: every transaction of client `c` moves
//! `seq/c` from `n - 1` to `n` and writes `log/c/n`. After each kill the parent asserts:
//! - the invariant holds (the sum of balances is `TOTAL`);
//! - each client's log has no holes: `log/c/1 ..= log/c/seq` exist and nothing above;
//! - every acknowledged safe transaction is present, and `status()` says durable;
//! - every acknowledged fast transaction is present exactly when `status()` says durable, and
//!   absent exactly when it says lost (nothing is left `committed` or `unknown`);
//! - what survived is a prefix of the commit order: no lost transaction has a smaller CSN
//!   than a surviving one of the same epoch;
//! - every status verified after an earlier kill still answers the same.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kiln_engine::{Config, Engine, Scan, TxnId, TxnOptions, TxnStatus};
use rand::{Rng, SeedableRng};

/// Number of bank accounts.
pub const ACCOUNTS: u32 = 64;
/// The sum of all balances.
pub const TOTAL: i64 = ACCOUNTS as i64 * 1000;
/// The keyspace of the workload.
pub const KS: &str = "bank";

/// Engine configuration of the workload: small segments and frequent checkpoints, so kills
/// land during rotations, checkpoints and log truncation too.
pub fn worker_config() -> Config {
    Config {
        vulnerability_window: Duration::from_millis(4),
        segment_bytes_max: 64 << 10,
        checkpoint_log_bytes: 256 << 10,
        ..Config::default()
    }
}

/// Key of an account's balance.
pub fn account_key(account: u32) -> Vec<u8> {
    format!("acct/{account:04}").into_bytes()
}
/// Key of a client's sequence number.
pub fn seq_key(client: u32) -> Vec<u8> {
    format!("seq/{client:02}").into_bytes()
}
/// Key of a client's n-th transaction record.
pub fn log_key(client: u32, n: u64) -> Vec<u8> {
    format!("log/{client:02}/{n:010}").into_bytes()
}

/// Decodes an integer value.
pub fn int(value: Option<Vec<u8>>) -> i64 {
    value.map_or(0, |v| i64::from_le_bytes(v.try_into().expect("8-byte integer")))
}

/// One acknowledged transaction, as the worker reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    /// The client.
    pub client: u32,
    /// Its sequence number.
    pub seq: u64,
    /// Acknowledged safe (durable) or fast.
    pub safe: bool,
    /// The transaction id.
    pub id: TxnId,
}

impl Ack {
    /// Parses `ack CLIENT SEQ safe|fast ID`.
    pub fn parse(line: &str) -> Option<Ack> {
        let mut parts = line.split(' ');
        if parts.next()? != "ack" {
            return None;
        }
        let client = parts.next()?.parse().ok()?;
        let seq = parts.next()?.parse().ok()?;
        let safe = match parts.next()? {
            "safe" => true,
            "fast" => false,
            _ => return None,
        };
        let id = parts.next()?.parse().ok()?;
        parts.next().is_none().then_some(Ack { client, seq, safe, id })
    }
}

/// Statistics of a crash-test run.
#[derive(Debug, Default)]
pub struct Summary {
    /// Kills performed.
    pub kills: u64,
    /// Acknowledged transactions checked.
    pub acknowledged: u64,
    /// Of those, safe.
    pub safe: u64,
    /// Acknowledged fast transactions that recovery reported lost.
    pub fast_lost: u64,
}

/// Runs `kills` kill-and-recover cycles of the worker binary at `worker`, on a fresh
/// directory that is replaced by a new one every `fresh_every` kills (0: never; the database
/// grows with every cycle, so very long runs restart it to stay fast). Calls `progress` after
/// each kill. Panics with a description of the first violated guarantee.
pub fn run(
    worker: &Path,
    kills: u64,
    seed: u64,
    fresh_every: u64,
    mut progress: impl FnMut(&Summary),
) -> Summary {
    let mut dir = tempfile::tempdir().expect("tempdir");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut verified: HashMap<TxnId, TxnStatus> = HashMap::new();
    let mut summary = Summary::default();
    for cycle in 0..kills {
        if fresh_every > 0 && cycle > 0 && cycle % fresh_every == 0 {
            dir = tempfile::tempdir().expect("tempdir");
            verified.clear();
        }
        let acks = run_and_kill(worker, dir.path(), rng.gen(), rng.gen_range(5..150));
        let engine = Engine::open(dir.path(), Config::default())
            .unwrap_or_else(|e| panic!("cycle {cycle}: reopening after the kill failed: {e}"));
        check_cycle(&engine, &acks, &mut verified, &mut summary, cycle);
        engine.close().expect("close");
        summary.kills += 1;
        progress(&summary);
    }
    summary
}

/// Starts the worker, waits for it to be ready, lets it run `run_ms`, kills it with SIGKILL,
/// and returns every acknowledgement it printed before dying.
fn run_and_kill(worker: &Path, dir: &Path, seed: u64, run_ms: u64) -> Vec<Ack> {
    let mut child: Child = Command::new(worker)
        .arg(dir)
        .arg(seed.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn worker");
    let stdout = child.stdout.take().expect("piped stdout");
    let (ready_tx, ready_rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut acks = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line == "ready" {
                let _ = ready_tx.send(());
            } else if let Some(ack) = Ack::parse(&line) {
                acks.push(ack);
            }
            // A line cut by the kill parses as nothing and is ignored.
        }
        acks
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while ready_rx.recv_timeout(Duration::from_millis(50)).is_err() {
        if let Some(status) = child.try_wait().expect("wait") {
            panic!("worker exited before it was ready: {status}");
        }
        assert!(Instant::now() < deadline, "worker never became ready");
    }
    std::thread::sleep(Duration::from_millis(run_ms));
    child.kill().expect("SIGKILL the worker");
    child.wait().expect("reap the worker");
    reader.join().expect("reader thread")
}

fn check_cycle(
    engine: &Engine,
    acks: &[Ack],
    verified: &mut HashMap<TxnId, TxnStatus>,
    summary: &mut Summary,
    cycle: u64,
) {
    let mut txn = engine.begin(TxnOptions::new().read_only()).expect("begin");
    let total: i64 = (0..ACCOUNTS).map(|a| int(txn.get(KS, &account_key(a)).expect("get"))).sum();
    assert!(total == TOTAL || total == 0, "cycle {cycle}: balances sum to {total}, not {TOTAL}");
    let mut recovered_seq = HashMap::new();
    for client in acks.iter().map(|a| a.client).collect::<std::collections::BTreeSet<_>>() {
        let seq = int(txn.get(KS, &seq_key(client)).expect("get")) as u64;
        let prefix = format!("log/{client:02}/");
        let mut end = prefix.clone().into_bytes();
        *end.last_mut().expect("non-empty") += 1;
        let logged = txn.scan(KS, Scan::range(prefix.as_bytes(), &end)).expect("scan");
        let expected: Vec<Vec<u8>> = (1..=seq).map(|n| log_key(client, n)).collect();
        let found: Vec<Vec<u8>> = logged.into_iter().map(|(k, _)| k).collect();
        assert!(
            found == expected,
            "cycle {cycle}: client {client} log has holes or extras (seq {seq}, {} entries)",
            found.len()
        );
        recovered_seq.insert(client, seq);
    }
    let mut survived_max: HashMap<u32, u64> = HashMap::new();
    let mut lost_min: HashMap<u32, u64> = HashMap::new();
    for ack in acks {
        let present = ack.seq <= recovered_seq[&ack.client];
        let status = engine.status(ack.id);
        if ack.safe {
            assert!(present, "cycle {cycle}: acknowledged safe {ack:?} is missing");
        }
        let want = if present { TxnStatus::Durable } else { TxnStatus::Lost };
        assert_eq!(status, want, "cycle {cycle}: status of {ack:?} disagrees with recovered data");
        let (epoch, csn) = (ack.id.epoch, ack.id.csn);
        if present {
            let max = survived_max.entry(epoch).or_default();
            *max = (*max).max(csn);
        } else {
            let min = lost_min.entry(epoch).or_insert(u64::MAX);
            *min = (*min).min(csn);
            summary.fast_lost += 1;
        }
        verified.insert(ack.id, status);
        summary.acknowledged += 1;
        summary.safe += ack.safe as u64;
    }
    for (epoch, lost) in &lost_min {
        if let Some(survived) = survived_max.get(epoch) {
            assert!(survived < lost, "cycle {cycle}: epoch {epoch} lost CSN {lost} but kept CSN {survived}: not a prefix");
        }
    }
    for (id, status) in verified.iter() {
        assert_eq!(
            engine.status(*id),
            *status,
            "cycle {cycle}: status of {id} changed across restarts"
        );
    }
}
