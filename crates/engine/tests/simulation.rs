//! A deterministic simulation of the replicated log: three real engines on disk, driven by a
//! model of Raft's decisions on one thread, under a seeded schedule of commits, partial
//! replication, partitions, elections, lapsed leases, crashes, failing fsyncs, and
//! checkpoints with the log purged behind them (a follower that needs a purged entry is sent
//! the leader's checkpoint and installs it in place of its log).
//!
//! The model makes the decisions a Raft library makes (who may be elected — a candidate that
//! a majority finds at least as up to date —, where a follower's log stops matching the
//! leader's and is cut, which entries a majority holds and so are committed, when a new
//! leader may lead: once its term's first entry is committed); the engines do everything
//! Kiln does with them (ship batches, append tagged entries, install a follower's records,
//! keep epochs, cut logs back, leave records in doubt and decide them, report statuses). A
//! seed fixes every decision and the order of every call: the engines' own threads only
//! finish work the simulation then waits for, so a seed replays the same run.
//!
//! After every step it checks, on every running node:
//! - no acknowledged safe commit is lost (a safe commit is acknowledged once its node sees it
//!   durable, as a waiting committer would);
//! - no node calls a commit durable that another calls lost;
//! - a durable commit's row is there and a lost one's is not; a node that does not lead
//!   shows no row of a commit it does not know durable (replica reads stay at the quorum
//!   watermark);
//! - the lost commits of each epoch are a suffix of it, and no durable commit read from a
//!   lost one;
//! - each running node's durable watermark (the committed CSN, what a session token waits
//!   for) never goes back.
//!
//! At the end every link heals, every node restarts, a last term commits, and every commit
//! must be decided the same way everywhere: acknowledged safe ones durable, the others durable
//! and present or lost and absent.
//!
//! `cargo test -p kiln-engine --test simulation` runs `KILN_SIM_SEEDS` seeds (default 2000)
//! of `KILN_SIM_STEPS` steps (default 60) from `KILN_SIM_FIRST_SEED` (default 1); a failure
//! names its seed, and `KILN_SIM_FIRST_SEED=N KILN_SIM_SEEDS=1` replays it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kiln_engine::replicated::{EntryPayload, LogEntry, RecordBatch};
use kiln_engine::{Config, Engine, Error, Faults, FaultyVfs, TxnId, TxnOptions, TxnStatus};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const NODES: usize = 3;
const MAJORITY: usize = NODES / 2 + 1;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// One node: its engine (while running), what its log writer shipped, and its Raft state.
struct Node {
    dir: PathBuf,
    faults: Arc<Faults>,
    engine: Option<Engine>,
    shipped: Arc<Mutex<Vec<RecordBatch>>>,
    /// The newest term it knows (a Raft node keeps this on disk with its vote).
    term: u64,
    /// The term it is the Raft leader of, if it believes it leads.
    leader_of: Option<u64>,
    /// The highest index it knows committed.
    commit_index: u64,
    /// As its leader: how far each node's log matches its own.
    matched: [u64; NODES],
    /// Commits made here that its log writer has not shipped yet.
    unshipped: bool,
    /// The newest durable (committed) watermark seen here.
    durable_seen: u64,
}

/// A commit made on some leader, and what the simulation knows of it.
struct Commit {
    id: TxnId,
    key: String,
    /// The committer waits for durability (a safe commit).
    safe: bool,
    /// A safe commit whose committer saw it durable.
    acknowledged: bool,
    origin: usize,
    /// The commit whose row it read before writing, if it saw one.
    read_from: Option<TxnId>,
}

struct Sim {
    rng: StdRng,
    nodes: Vec<Node>,
    /// `cut[a][b]`: messages from a to b are dropped.
    cut: [[bool; NODES]; NODES],
    commits: Vec<Commit>,
    next_key: u64,
    seed: u64,
    step: usize,
    counts: Counts,
    _dir: tempfile::TempDir,
}

/// What a run exercised.
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
struct Counts {
    elections: u64,
    cuts: u64,
    restarts_after_error: u64,
    crashes: u64,
    leases_lapsed: u64,
    checkpoints: u64,
    snapshots_sent: u64,
}

fn config(faults: &Arc<Faults>) -> Config {
    Config {
        replicated_log: true,
        // Nothing ships on a timer: the simulation asks for every flush.
        vulnerability_window: Duration::from_secs(3600),
        vfs: Arc::new(FaultyVfs::new(faults.clone())),
        ..Config::default()
    }
}

fn last(engine: &Engine) -> (u64, u64) {
    engine.log_position().unwrap().last.unwrap_or((0, 0))
}

/// The term of entry `index`, or `None` if the log no longer holds it (purged behind a
/// checkpoint: committed, so the same on every node that holds it).
fn term_at(engine: &Engine, index: u64) -> Option<u64> {
    if index == 0 {
        return Some(0);
    }
    if let Some((term, base)) = engine.log_position().unwrap().base {
        if index == base {
            return Some(term);
        }
    }
    engine.log_entries(index, index).unwrap().first().map(|e| e.term)
}

/// The entry the newest checkpoint stands at, as (term, index), or (0, 0).
fn base(engine: &Engine) -> (u64, u64) {
    engine.log_position().unwrap().base.unwrap_or((0, 0))
}

impl Sim {
    fn new(seed: u64) -> Sim {
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            tempfile::tempdir_in("/dev/shm").unwrap()
        } else {
            tempfile::tempdir().unwrap()
        };
        let nodes = (0..NODES)
            .map(|i| Node {
                dir: base.path().join(format!("node{i}")),
                faults: Faults::new(),
                engine: None,
                shipped: Arc::default(),
                term: 0,
                leader_of: None,
                commit_index: 0,
                matched: [0; NODES],
                unshipped: false,
                durable_seen: 0,
            })
            .collect();
        let mut sim = Sim {
            rng: StdRng::seed_from_u64(seed),
            nodes,
            cut: [[false; NODES]; NODES],
            commits: Vec::new(),
            next_key: 0,
            seed,
            step: 0,
            counts: Counts::default(),
            _dir: base,
        };
        for i in 0..NODES {
            sim.start(i);
        }
        sim
    }

    fn fail(&self, what: impl std::fmt::Display) -> ! {
        panic!("seed {} step {}: {what}", self.seed, self.step)
    }

    fn start(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        node.faults.fail_syncs.store(0, std::sync::atomic::Ordering::SeqCst);
        let engine = Engine::open(&node.dir, config(&node.faults))
            .unwrap_or_else(|e| panic!("seed {}: node {i} does not reopen: {e}", self.seed));
        let shipped = node.shipped.clone();
        engine.set_shipper(Box::new(move |batch| shipped.lock().unwrap().push(batch))).unwrap();
        node.engine = Some(engine);
        node.leader_of = None;
        node.unshipped = false;
        // A restarted node knows nothing committed until a leader tells it again (its durable
        // watermark may be lower than before the crash, which is not going back).
        node.commit_index = 0;
        node.durable_seen = 0;
    }

    /// Stops node `i` as a crash would: what its log writer had not shipped never reaches
    /// its log.
    fn crash(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        if let Some(engine) = node.engine.take() {
            let _ = engine.close();
        }
        node.shipped.lock().unwrap().clear();
        node.leader_of = None;
    }

    fn up(&self, i: usize) -> bool {
        self.nodes[i].engine.is_some()
    }

    fn linked(&self, a: usize, b: usize) -> bool {
        a == b || (self.up(a) && self.up(b) && !self.cut[a][b] && !self.cut[b][a])
    }

    fn engine(&self, i: usize) -> &Engine {
        self.nodes[i].engine.as_ref().unwrap()
    }

    /// The node that believes it leads the newest term, if any is running.
    fn leader(&self) -> Option<usize> {
        (0..NODES)
            .filter(|&i| self.up(i) && self.nodes[i].leader_of.is_some())
            .max_by_key(|&i| self.nodes[i].leader_of)
    }

    /// A node's engine failed (a failed fsync poisons it): it is restarted, as an operator
    /// or a supervisor would.
    fn on_error(&mut self, i: usize, e: Error) {
        match e {
            Error::Poisoned(_)
            | Error::Io { .. }
            | Error::Closed
            | Error::DurabilityStalled { .. } => {
                self.counts.restarts_after_error += 1;
                self.crash(i);
                self.start(i);
            }
            other => self.fail(format!("node {i}: {other}")),
        }
    }

    /// Leader `l` commits a few transactions, fast or safe.
    fn commit(&mut self, l: usize) {
        let count = self.rng.gen_range(1..=4);
        for _ in 0..count {
            let key = format!("k{}", self.next_key);
            self.next_key += 1;
            let safe = self.rng.gen_bool(0.3);
            let engine = self.engine(l).clone();
            let mut txn = engine.begin(TxnOptions::new()).unwrap();
            // Some read a recent commit's row first: that commit becomes a dependency.
            let mut read_from = None;
            if !self.commits.is_empty() && self.rng.gen_bool(0.5) {
                let back = self.rng.gen_range(1..=self.commits.len().min(8));
                let dep = &self.commits[self.commits.len() - back];
                if txn.get("kv", dep.key.as_bytes()).unwrap().is_some() {
                    read_from = Some(dep.id);
                }
            }
            txn.put("kv", key.as_bytes(), b"v").unwrap();
            match txn.commit_fast() {
                Ok(id) => {
                    self.nodes[l].unshipped = true;
                    let acknowledged = false;
                    self.commits.push(Commit { id, key, safe, acknowledged, origin: l, read_from });
                }
                Err(Error::DependencyLost { .. }) => {}
                Err(Error::NotLeader { .. }) => return,
                Err(e) => return self.on_error(l, e),
            }
        }
    }

    /// Leader `l` flushes: its log writer ships what it buffered, and the leader appends it to
    /// its own log as the next entry of its term.
    fn flush(&mut self, l: usize) {
        let Some(term) = self.nodes[l].leader_of else { return };
        if !std::mem::take(&mut self.nodes[l].unshipped) {
            return;
        }
        let engine = self.engine(l).clone();
        if engine.leading_term() != Some(term) {
            return;
        }
        let _ = engine.persist_within(Duration::ZERO);
        let deadline = Instant::now() + Duration::from_secs(10);
        let batches = loop {
            let batches = std::mem::take(&mut *self.nodes[l].shipped.lock().unwrap());
            if !batches.is_empty() {
                break batches;
            }
            if engine.leading_term() != Some(term) {
                return;
            }
            if Instant::now() > deadline {
                self.fail(format!("node {l} shipped nothing"));
            }
            std::thread::sleep(Duration::from_micros(200));
        };
        for batch in batches {
            if batch.epoch as u64 != term {
                continue;
            }
            let index = last(&engine).1 + 1;
            let entry = LogEntry { term, index, payload: EntryPayload::Records(batch) };
            if let Err(e) = engine.append_entries(&[entry]) {
                return self.on_error(l, e);
            }
        }
        self.nodes[l].matched[l] = last(&engine).1;
    }

    /// A node learns of a newer term: it stops leading.
    fn learn_term(&mut self, i: usize, term: u64) {
        if term > self.nodes[i].term {
            self.nodes[i].term = term;
            if self.nodes[i].leader_of.take().is_some() || self.engine(i).leading_term().is_some() {
                if let Err(e) = self.engine(i).follow() {
                    self.on_error(i, e);
                }
            }
        }
    }

    /// Leader `l` sends follower `f` what it lacks (all of it, or only a part), and the
    /// commit index.
    fn replicate(&mut self, l: usize, f: usize) {
        let Some(term) = self.nodes[l].leader_of else { return };
        if l == f || !self.linked(l, f) {
            return;
        }
        if self.nodes[f].term > term {
            // The leader hears of a newer term in the answer, and steps down.
            let newer = self.nodes[f].term;
            return self.learn_term(l, newer);
        }
        self.learn_term(f, term);
        self.nodes[f].leader_of = None;
        if self.engine(f).leading_term().is_some() {
            if let Err(e) = self.engine(f).follow() {
                return self.on_error(f, e);
            }
        }
        let (leader, follower) = (self.engine(l).clone(), self.engine(f).clone());
        let (leader_last, follower_last) = (last(&leader).1, last(&follower).1);
        let mut at = follower_last.min(leader_last);
        let (base_term, leader_base) = base(&leader);
        let matches = |at: u64| match (term_at(&follower, at), term_at(&leader, at)) {
            (Some(a), Some(b)) => a == b,
            _ => true, // purged on one side: committed there, so in both logs
        };
        while at > leader_base && !matches(at) {
            at -= 1;
        }
        if leader_base > 0
            && at <= leader_base
            && (follower_last < leader_base
                || term_at(&follower, leader_base).is_some_and(|t| t != base_term))
        {
            // The follower needs what the leader purged: it is sent the leader's checkpoint.
            self.counts.snapshots_sent += 1;
            let mut checkpoint = leader.open_checkpoint().unwrap().expect("a purged log has one");
            if let Err(e) = follower.install_checkpoint(&mut checkpoint) {
                return self.on_error(f, e);
            }
            let position = follower.log_position().unwrap();
            if position.last != Some((base_term, leader_base)) || position.base.is_none() {
                self.fail(format!("node {f} installed a checkpoint and its log is {position:?}"));
            }
            at = leader_base;
            self.nodes[f].commit_index = self.nodes[f].commit_index.max(leader_base);
        }
        if follower_last > at {
            self.counts.cuts += 1;
            match follower.truncate_log_from(at + 1) {
                Ok(()) => {}
                Err(e @ (Error::Poisoned(_) | Error::Io { .. })) => return self.on_error(f, e),
                Err(e) => {
                    self.fail(format!("node {f} refused to cut its log from {}: {e}", at + 1))
                }
            }
        }
        let upto =
            if self.rng.gen_bool(0.3) { self.rng.gen_range(at..=leader_last) } else { leader_last };
        if upto > at {
            let entries = leader.log_entries(at + 1, upto).unwrap();
            if let Err(e) = follower.append_entries(&entries) {
                return self.on_error(f, e);
            }
        }
        self.nodes[l].matched[f] = upto;
        let commit = self.nodes[l].commit_index.min(upto);
        if commit > self.nodes[f].commit_index {
            self.nodes[f].commit_index = commit;
            if let Err(e) = follower.commit_log_upto(commit) {
                self.on_error(f, e);
            }
        }
    }

    /// Leader `l` commits what a majority holds, if it is of its term; once its term's first
    /// entry is committed its engine leads.
    fn advance_commit(&mut self, l: usize) {
        let Some(term) = self.nodes[l].leader_of else { return };
        let engine = self.engine(l).clone();
        self.nodes[l].matched[l] = last(&engine).1;
        let mut matched = self.nodes[l].matched;
        matched.sort_unstable_by(|a, b| b.cmp(a));
        let candidate = matched[MAJORITY - 1];
        if candidate > self.nodes[l].commit_index && term_at(&engine, candidate) == Some(term) {
            self.nodes[l].commit_index = candidate;
            if let Err(e) = engine.commit_log_upto(candidate) {
                return self.on_error(l, e);
            }
        }
        if engine.leading_term().is_none() && engine.ended_term().is_none_or(|t| t < term) {
            let first_of_term = self.first_index_of(&engine, term);
            if first_of_term.is_some_and(|i| i <= self.nodes[l].commit_index) {
                match engine.lead(term) {
                    Ok(()) => {}
                    Err(Error::NotLeader { .. }) => {}
                    Err(e) => self.on_error(l, e),
                }
            }
        }
    }

    fn first_index_of(&self, engine: &Engine, term: u64) -> Option<u64> {
        let (_, last_index) = last(engine);
        (1..=last_index).rev().take_while(|&i| term_at(engine, i).is_some_and(|t| t >= term)).last()
    }

    /// Node `c` asks for votes; it leads a new term if a majority of the nodes it reaches
    /// finds its log at least as up to date as theirs.
    fn elect(&mut self, c: usize) {
        if !self.up(c) {
            return;
        }
        let term =
            (0..NODES).filter(|&i| self.linked(c, i)).map(|i| self.nodes[i].term).max().unwrap()
                + 1;
        let mine = last(self.engine(c));
        let voters: Vec<usize> = (0..NODES)
            .filter(|&i| self.linked(c, i))
            .filter(|&i| last(self.engine(i)) <= mine)
            .collect();
        let reached: Vec<usize> = (0..NODES).filter(|&i| self.linked(c, i)).collect();
        for i in reached {
            self.learn_term(i, term);
        }
        if voters.len() < MAJORITY {
            return;
        }
        let engine = self.engine(c).clone();
        if engine.leading_term().is_some() {
            if let Err(e) = engine.follow() {
                return self.on_error(c, e);
            }
        }
        // The new leader's first entry: a blank one of its term.
        let index = last(&engine).1 + 1;
        let blank = EntryPayload::Opaque(Arc::from(format!("term {term}").as_bytes()));
        if let Err(e) = engine.append_entries(&[LogEntry { term, index, payload: blank }]) {
            return self.on_error(c, e);
        }
        self.nodes[c].shipped.lock().unwrap().clear();
        self.nodes[c].unshipped = false;
        self.nodes[c].leader_of = Some(term);
        self.counts.elections += 1;
        self.nodes[c].matched = [0; NODES];
        self.nodes[c].matched[c] = index;
    }

    /// Safe committers whose commit is now durable on their node are acknowledged.
    fn acknowledge(&mut self) {
        for i in 0..self.commits.len() {
            let c = &self.commits[i];
            if c.safe
                && !c.acknowledged
                && self.up(c.origin)
                && self.engine(c.origin).status(c.id) == TxnStatus::Durable
            {
                self.commits[i].acknowledged = true;
            }
        }
    }

    fn check(&mut self) {
        let mut statuses: Vec<BTreeMap<TxnId, TxnStatus>> = Vec::new();
        let running: Vec<usize> = (0..NODES).filter(|&i| self.up(i)).collect();
        for i in running {
            let engine = self.engine(i).clone();
            let leads = engine.leading_term().is_some();
            let mut by_node = BTreeMap::new();
            let mut txn = engine.begin(TxnOptions::new().read_only()).unwrap();
            for c in &self.commits {
                let status = engine.status(c.id);
                let present = txn.get("kv", c.key.as_bytes()).unwrap().is_some();
                match status {
                    TxnStatus::Durable if !present => {
                        self.fail(format!("node {i}: {} durable but its row is missing", c.id))
                    }
                    TxnStatus::Lost if present => {
                        self.fail(format!("node {i}: {} lost but its row is there", c.id))
                    }
                    TxnStatus::Lost if c.acknowledged => {
                        self.fail(format!("node {i}: acknowledged safe commit {} lost", c.id))
                    }
                    TxnStatus::Committed | TxnStatus::Unknown if present && !leads => self.fail(
                        format!("node {i} reads {} ({status}) above the quorum watermark", c.id),
                    ),
                    _ => {}
                }
                by_node.insert(c.id, status);
            }
            drop(txn);
            // The lost commits of each epoch are a suffix of it.
            let mut epochs: BTreeMap<u32, Vec<(u64, TxnStatus)>> = BTreeMap::new();
            for (id, status) in &by_node {
                epochs.entry(id.epoch).or_default().push((id.csn, *status));
            }
            for (epoch, mut list) in epochs {
                list.sort_unstable_by_key(|(csn, _)| *csn);
                if let Some(first_lost) = list.iter().position(|(_, s)| *s == TxnStatus::Lost) {
                    if let Some((csn, s)) =
                        list[first_lost..].iter().find(|(_, s)| *s == TxnStatus::Durable)
                    {
                        self.fail(format!(
                            "node {i}: epoch {epoch} has {csn} {s} after a lost commit"
                        ));
                    }
                }
            }
            let stats = engine.stats();
            // The committed watermark is a CSN of the log, whatever the epoch (a cut of
            // entries never committed may take the current epoch back, never this).
            let seen = stats.durable_csn;
            let before = self.nodes[i].durable_seen;
            if seen < before {
                self.fail(format!(
                    "node {i}: durable watermark went back from {before:?} to {seen:?}"
                ));
            }
            self.nodes[i].durable_seen = seen;
            statuses.push(by_node);
        }
        for (node, by_node) in statuses.iter().enumerate() {
            for c in &self.commits {
                let Some(dep) = c.read_from else { continue };
                if by_node[&c.id] == TxnStatus::Durable && by_node[&dep] == TxnStatus::Lost {
                    self.fail(format!(
                        "{} is durable but read from {dep}, which is lost ({node})",
                        c.id
                    ));
                }
            }
        }
        for c in &self.commits {
            let seen: Vec<TxnStatus> = statuses.iter().map(|s| s[&c.id]).collect();
            if seen.contains(&TxnStatus::Durable) && seen.contains(&TxnStatus::Lost) {
                self.fail(format!("{} is durable on one node and lost on another", c.id));
            }
        }
    }

    fn step(&mut self) {
        let leader = self.leader();
        match self.rng.gen_range(0..105) {
            0..=29 => {
                if let Some(l) = leader {
                    self.commit(l);
                }
            }
            30..=44 => {
                if let Some(l) = leader {
                    self.flush(l);
                }
            }
            45..=64 => {
                if let Some(l) = leader {
                    for f in 0..NODES {
                        if self.rng.gen_bool(0.7) {
                            self.replicate(l, f);
                        }
                    }
                    self.advance_commit(l);
                    for f in 0..NODES {
                        self.replicate(l, f);
                    }
                }
            }
            65..=74 => {
                let c = self.rng.gen_range(0..NODES);
                if leader.is_none() || self.rng.gen_bool(0.3) {
                    self.elect(c);
                }
            }
            75..=82 => {
                let (a, b) = (self.rng.gen_range(0..NODES), self.rng.gen_range(0..NODES));
                if a != b {
                    let cut = !self.cut[a][b];
                    self.cut[a][b] = cut;
                    self.cut[b][a] = cut;
                }
            }
            83..=87 => {
                let i = self.rng.gen_range(0..NODES);
                if self.up(i) {
                    self.counts.crashes += 1;
                    self.crash(i);
                } else {
                    self.start(i);
                }
            }
            88..=91 => {
                // A leader that has not heard from a majority for a lease gives its term up.
                if let Some(l) = leader {
                    let heard = (0..NODES).filter(|&i| self.linked(l, i)).count();
                    if heard < MAJORITY {
                        let term = self.nodes[l].leader_of.take().unwrap();
                        self.counts.leases_lapsed += 1;
                        if let Err(e) = self.engine(l).give_up(term) {
                            self.on_error(l, e);
                        }
                    }
                }
            }
            92..=95 => {
                // The next fsync of a node fails.
                let i = self.rng.gen_range(0..NODES);
                self.nodes[i].faults.fail_syncs.store(1, std::sync::atomic::Ordering::SeqCst);
            }
            96..=99 => {
                for i in 0..NODES {
                    if !self.up(i) {
                        self.start(i);
                    }
                }
            }
            _ => {
                // A node checkpoints at its committed entry and purges its log behind it,
                // keeping a few entries or none.
                let i = self.rng.gen_range(0..NODES);
                let keep = self.rng.gen_range(0..=3);
                if self.up(i) {
                    let engine = self.engine(i).clone();
                    let purged = engine
                        .checkpoint_log(|index| index.to_le_bytes().to_vec())
                        .map(|info| info.log.expect("a replicated log's checkpoint").index)
                        .and_then(|index| engine.purge_log(index.saturating_sub(keep)));
                    match purged {
                        Ok(()) => self.counts.checkpoints += 1,
                        // Nothing committed yet.
                        Err(Error::InvalidArgument(_)) => {}
                        Err(e) => self.on_error(i, e),
                    }
                }
            }
        }
        self.acknowledge();
        self.check();
    }

    /// Heals everything, elects a leader of a last term, and brings every node to it.
    fn settle(&mut self) {
        self.cut = [[false; NODES]; NODES];
        for i in 0..NODES {
            self.nodes[i].faults.fail_syncs.store(0, std::sync::atomic::Ordering::SeqCst);
            if !self.up(i) {
                self.start(i);
            }
        }
        let mut attempts = 0;
        loop {
            let c = (self.seed as usize + attempts) % NODES;
            self.elect(c);
            if let Some(l) = self.leader() {
                for _ in 0..3 {
                    for f in 0..NODES {
                        self.replicate(l, f);
                    }
                    self.advance_commit(l);
                }
                for f in 0..NODES {
                    self.replicate(l, f);
                }
                if self.nodes[l].leader_of.is_some()
                    && self.engine(l).leading_term().is_some()
                    && (0..NODES).all(|i| self.nodes[i].commit_index == self.nodes[l].commit_index)
                {
                    break;
                }
            }
            attempts += 1;
            if attempts > 10 {
                self.fail("no leader after healing everything");
            }
        }
        self.acknowledge();
        self.check();
        let reference: Vec<TxnStatus> =
            self.commits.iter().map(|c| self.engine(0).status(c.id)).collect();
        for i in 0..NODES {
            for (c, expected) in self.commits.iter().zip(&reference) {
                let status = self.engine(i).status(c.id);
                if status != *expected {
                    self.fail(format!("{} is {status} on node {i} and {expected} on node 0", c.id));
                }
                if !matches!(status, TxnStatus::Durable | TxnStatus::Lost) {
                    self.fail(format!("{} is still {status} on node {i} after settling", c.id));
                }
                if c.acknowledged && status != TxnStatus::Durable {
                    self.fail(format!("acknowledged safe commit {} is {status}", c.id));
                }
            }
        }
    }
}

/// Runs one seed to the end; returns what it exercised and every commit's final status.
fn run(seed: u64, steps: usize) -> (Counts, Vec<(TxnId, bool, TxnStatus)>) {
    let mut sim = Sim::new(seed);
    for step in 0..steps {
        sim.step = step;
        sim.step();
    }
    sim.step = steps;
    sim.settle();
    let outcome =
        sim.commits.iter().map(|c| (c.id, c.acknowledged, sim.engine(0).status(c.id))).collect();
    for i in 0..NODES {
        sim.crash(i);
    }
    (sim.counts, outcome)
}

#[test]
fn seeded_schedules_keep_every_guarantee() {
    let first = env("KILN_SIM_FIRST_SEED", 1);
    let seeds = env("KILN_SIM_SEEDS", 2000);
    let steps = env("KILN_SIM_STEPS", 60) as usize;
    let (mut commits, mut lost, mut acknowledged) = (0, 0, 0);
    let mut total = Counts::default();
    for seed in first..first + seeds {
        let (counts, outcome) = run(seed, steps);
        commits += outcome.len();
        acknowledged += outcome.iter().filter(|(_, ack, _)| *ack).count();
        lost += outcome.iter().filter(|(_, _, s)| *s == TxnStatus::Lost).count();
        total.elections += counts.elections;
        total.cuts += counts.cuts;
        total.restarts_after_error += counts.restarts_after_error;
        total.crashes += counts.crashes;
        total.leases_lapsed += counts.leases_lapsed;
        total.checkpoints += counts.checkpoints;
        total.snapshots_sent += counts.snapshots_sent;
    }
    eprintln!(
        "{seeds} seeds: {commits} commits, {acknowledged} acknowledged safe, {lost} lost; {total:?}"
    );
    // The schedules must exercise loss, cut logs and failed fsyncs, or the checks prove little.
    if seeds >= 50 {
        assert!(lost > 0 && total.cuts > 0 && total.restarts_after_error > 0, "{total:?}");
        assert!(total.leases_lapsed > 0 && total.crashes > 0, "{total:?}");
        assert!(total.checkpoints > 0 && total.snapshots_sent > 0, "{total:?}");
    }
}

#[test]
fn a_seed_replays_the_same_run() {
    let steps = env("KILN_SIM_STEPS", 60) as usize;
    for seed in [7, 21] {
        assert_eq!(run(seed, steps), run(seed, steps), "seed {seed}");
    }
}
