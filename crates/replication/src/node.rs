//! One node of a cluster: its Raft instance over the engine, the proposer that turns the
//! leader's shipped batches into Raft writes, and the watcher that tells the engine when it
//! leads.

use std::sync::Arc;
use std::time::Duration;

use kiln_engine::replicated::RecordBatch;
use kiln_engine::Engine;
use openraft::alias::CommittedLeaderIdOf;
use openraft::async_runtime::WatchReceiver;
use openraft::impls::ProgressResponder;
use openraft::network::RaftNetworkFactory;
use openraft::{Config, ServerState, SnapshotPolicy};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::state_machine::SnapshotData;
use crate::types::{engine_index, Batch, KilnRaft, Member};
use crate::{LogStore, Raft, StateMachine};

/// How a node runs.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    /// This node's id in the cluster (not 0).
    pub id: u64,
    /// Where the node keeps the cluster's own state (the vote); not the engine's directory.
    pub state_dir: std::path::PathBuf,
    /// The leader's heartbeat interval.
    pub heartbeat: Duration,
    /// A follower that hears nothing for a random time in this range starts an election.
    pub election_timeout: (Duration, Duration),
    /// Entries the log keeps behind the newest snapshot: a replica behind by fewer catches up
    /// from the log, one behind by more is sent the snapshot.
    pub log_kept_behind_snapshot: u64,
}

impl NodeConfig {
    /// A node with the timings of a local network.
    pub fn new(id: u64, state_dir: impl Into<std::path::PathBuf>) -> NodeConfig {
        NodeConfig {
            id,
            state_dir: state_dir.into(),
            heartbeat: Duration::from_millis(50),
            election_timeout: (Duration::from_millis(300), Duration::from_millis(600)),
            log_kept_behind_snapshot: LOG_KEPT_BEHIND_SNAPSHOT,
        }
    }
}

/// How many entries the log keeps behind the newest snapshot by default. An entry is one flush
/// of the leader's log: under load a few milliseconds of commits.
pub const LOG_KEPT_BEHIND_SNAPSHOT: u64 = 10_000;

/// A running node.
pub struct Node {
    /// Its Raft instance.
    pub raft: Raft,
    engine: Engine,
    tasks: Vec<JoinHandle<()>>,
}

/// How often a leader that cannot lead yet (its first entry is not on disk) checks again.
const LEAD_RETRY: Duration = Duration::from_millis(2);

impl Node {
    /// Starts a node over `engine` (opened with `Config::replicated_log`), reaching the others
    /// through `network`. Must run inside a Tokio runtime.
    pub async fn start<N>(config: NodeConfig, engine: Engine, network: N) -> std::io::Result<Node>
    where
        N: RaftNetworkFactory<KilnRaft>,
        N::Network: openraft::network::NetSnapshot<KilnRaft, SnapshotData = SnapshotData>,
    {
        let raft_config = Config {
            cluster_name: "kiln".into(),
            heartbeat_interval: config.heartbeat.as_millis() as u64,
            election_timeout_min: config.election_timeout.0.as_millis() as u64,
            election_timeout_max: config.election_timeout.1.as_millis() as u64,
            // The engine says when a snapshot is due (enough log written since its last
            // checkpoint: the hook below), not the library's entry count: entries are flush
            // batches of any size.
            snapshot_policy: SnapshotPolicy::Never,
            // Entries kept behind a snapshot, for a replica that is a little behind to catch up
            // from the log rather than be sent the snapshot.
            max_in_snapshot_log_to_keep: config.log_kept_behind_snapshot,
            // A restarted leader must win a new term: the commits it made in its old term that
            // never reached its log are gone, and their ids would be handed out again.
            enable_leader_restore: Some(false),
            // A node cut off from the others asks before it starts an election, so that it
            // does not depose a healthy leader with a higher term when it returns.
            enable_pre_vote: Some(true),
            // Replicate an entry to the followers as soon as it is handed to the log store,
            // while the leader's own fdatasync runs, and look at ready notifications (a
            // follower's answer, a flush done) between API messages: lower commit latency,
            // which is what a safe commit waits for.
            broadcast_submitted_on_append: Some(true),
            ..Config::default()
        };
        let raft_config = Arc::new(raft_config.validate().map_err(std::io::Error::other)?);
        let log_store = LogStore::open(engine.clone(), &config.state_dir)?;
        let state_machine = StateMachine::new(engine.clone())?;
        let raft = Raft::new(config.id, raft_config, network, log_store, state_machine)
            .await
            .map_err(std::io::Error::other)?;

        let (trigger, runtime) = (raft.clone(), tokio::runtime::Handle::current());
        engine
            .set_checkpoint_hook(Box::new(move || {
                // Called on the engine's background thread; ignored while a snapshot is
                // being built.
                let trigger = trigger.clone();
                runtime.spawn(async move { trigger.trigger().snapshot().await });
            }))
            .map_err(std::io::Error::other)?;
        let (tx, rx) = mpsc::unbounded_channel::<RecordBatch>();
        engine
            .set_shipper(Box::new(move |batch| {
                // The receiver goes only when the node stops; its batches are then lost anyway.
                let _ = tx.send(batch);
            }))
            .map_err(std::io::Error::other)?;
        let tasks = vec![
            tokio::spawn(propose(raft.clone(), engine.clone(), rx)),
            tokio::spawn(track_levels(raft.clone(), engine.clone())),
            tokio::spawn(watch_leadership(
                raft.clone(),
                engine.clone(),
                config.heartbeat,
                config.election_timeout.1,
            )),
        ];
        Ok(Node { raft, engine, tasks })
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Stops the node: its Raft instance and tasks. The engine stays open (close it after).
    pub async fn shutdown(self) {
        for task in &self.tasks {
            task.abort();
        }
        if let Err(e) = self.raft.shutdown().await {
            tracing::warn!(error = %e, "raft shutdown");
        }
        let engine = self.engine.clone();
        let _ = tokio::task::spawn_blocking(move || engine.follow()).await;
    }
}

/// Proposes each shipped batch as a Raft write of the term it was committed in, in the order
/// the engine committed them.
///
/// A write can be refused: the term ended (the batch was never logged, and the engine dropped
/// it when it stopped leading), or this leader's lease expired (a quorum has not answered for
/// an election timeout, so another node may be leading already). Either way the term is over
/// for this node: a later batch of it that the library accepts would not continue the log and
/// is logged void (`log_store::write_entries`), so the engine stops leading the term at once,
/// dropping what it committed beyond its log; those commits are in doubt until a later term
/// decides them. Refusals come back while later batches are already submitted, so each
/// submission's outcome is awaited on its own.
async fn propose(raft: Raft, engine: Engine, mut batches: mpsc::UnboundedReceiver<RecordBatch>) {
    while let Some(batch) = batches.recv().await {
        let epoch = batch.epoch;
        if engine.leading_term() != Some(epoch as u64) {
            // The term ended before this batch could be proposed: it is dropped (in doubt).
            continue;
        }
        tracing::trace!(target: "kiln_latency", first_csn = batch.first_csn, "propose");
        let (responder, outcome) = ProgressResponder::complete_only();
        let term = CommittedLeaderIdOf::<KilnRaft>::new(epoch as u64);
        let submitted = raft.write(Batch::from(batch)).with_leader(term).responder(responder).await;
        tracing::trace!(target: "kiln_latency", "proposed");
        if let Err(fatal) = submitted {
            tracing::error!(error = %fatal, "the Raft core stopped; shipped batches are dropped");
            return;
        }
        let engine = engine.clone();
        tokio::spawn(async move {
            // A dropped responder means the core stopped; the engine follows at shutdown.
            if let Ok(Err(refused)) = outcome.await {
                tracing::warn!(epoch, error = %refused, "a write was refused: the term is over here");
                let _ = tokio::task::spawn_blocking(move || engine.give_up(epoch as u64)).await;
            }
        });
    }
}

/// Tells the engine to lead when this node leads a term whose first entry the cluster has
/// committed (then its lease is fresh and its writes are accepted), and to follow when it no
/// longer leads. A leader that has not heard from a quorum for a lease (an election timeout)
/// gives the term up, as if one of its writes had been refused: another node may be leading
/// by now, and its safe committers must not wait for a quorum that is gone. A node that still
/// leads a term the engine gave up hands the leadership to another voter, so that a new term
/// begins and decides what the given-up one left in doubt.
async fn watch_leadership(raft: Raft, engine: Engine, heartbeat: Duration, lease: Duration) {
    let mut metrics = raft.metrics();
    let mut last_transfer: Option<tokio::time::Instant> = None;
    loop {
        let (state, term, committed_term, voters, id, leader_at, quorum_heard) = {
            let m = metrics.borrow_watched();
            let committed = m.cluster_committed.as_ref().map(|c| c.committed_leader_id().term);
            let membership = m.membership_config.membership();
            let voters: Vec<u64> = membership.voter_ids().collect();
            let leader_at = m
                .current_leader
                .and_then(|l| membership.get_node(&l))
                .map(|member| member.sql_addr.clone())
                .filter(|addr| !addr.is_empty());
            let heard = m
                .last_quorum_acked
                .as_ref()
                .map(|at| openraft::async_runtime::Instant::elapsed(&**at));
            (m.state, m.current_term, committed, voters, m.id, leader_at, heard)
        };
        engine.set_leader_hint(leader_at);
        let leading = engine.leading_term();
        // How soon to look again without a change of metrics (None: only on a change).
        let mut again = None;
        if state == ServerState::Leader && leading == Some(term) {
            // A lone voter is its own quorum: there is no one to hear from.
            let alone = voters.len() == 1 && voters[0] == id;
            if !alone && quorum_heard.is_none_or(|since| since > lease) {
                tracing::warn!(term, ?quorum_heard, "no quorum within a lease: giving the term up");
                let e = engine.clone();
                let _ = tokio::task::spawn_blocking(move || e.give_up(term)).await;
                again = Some(Duration::ZERO);
            } else {
                again = Some(heartbeat);
            }
        } else if state == ServerState::Leader {
            if engine.ended_term().is_some_and(|ended| ended >= term) {
                // The engine gave this term up; let another voter start the next one.
                let due = last_transfer.is_none_or(|at| at.elapsed() >= lease);
                if let Some(&to) = voters.iter().find(|&&v| v != id).filter(|_| due) {
                    tracing::warn!(term, to, "handing leadership over after giving up the term");
                    if raft.trigger().transfer_leader(to).await.is_err() {
                        return;
                    }
                    last_transfer = Some(tokio::time::Instant::now());
                }
                again = Some(lease);
            } else if committed_term == Some(term) {
                let e = engine.clone();
                match tokio::task::spawn_blocking(move || e.lead(term)).await {
                    Ok(Ok(())) => again = Some(heartbeat),
                    Ok(Err(kiln_engine::Error::NotLeader { .. })) => again = Some(LEAD_RETRY),
                    Ok(Err(e)) => {
                        tracing::error!(error = %e, "could not lead");
                        again = Some(LEAD_RETRY);
                    }
                    Err(_) => return,
                }
            }
        } else if leading.is_some() {
            let e = engine.clone();
            if let Ok(Err(e)) = tokio::task::spawn_blocking(move || e.follow()).await {
                tracing::error!(error = %e, "could not stop leading");
            }
        }
        match again {
            Some(wait) => {
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    changed = metrics.changed() => if changed.is_err() { return },
                }
            }
            None => {
                if metrics.changed().await.is_err() {
                    return;
                }
            }
        }
    }
}

/// On the leader, computes the watermarks of the levels beyond `quorum` from how far each
/// member's log matches the leader's (a follower reports a match only once its log is
/// flushed): `all`, the least match among the voters; a site, the greatest match among the
/// nodes tagged with it. The engine caps each at the committed watermark, which makes
/// `site:<name>` mean "on a node of the site *and* on a quorum".
///
/// Turning a log index into a CSN takes the log's flush lock, which a flush holds through its
/// fdatasync, so that part runs on a thread of its own, always on the newest indexes.
async fn track_levels(raft: Raft, engine: Engine) {
    let (tx, rx) = std::sync::mpsc::channel::<LevelIndexes>();
    let converter = engine.clone();
    let spawned = std::thread::Builder::new().name("kiln-levels".into()).spawn(move || {
        while let Ok(mut latest) = rx.recv() {
            while let Ok(newer) = rx.try_recv() {
                latest = newer;
            }
            set_level_marks(&converter, latest);
        }
    });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the level tracker; levels beyond quorum stay unknown");
        return;
    }
    let mut metrics = raft.metrics();
    let mut last: Option<LevelIndexes> = None;
    loop {
        let marks = {
            let m = metrics.borrow_watched();
            match (&m.replication, m.state) {
                (Some(replication), ServerState::Leader)
                    if engine.leading_term() == Some(m.current_term) =>
                {
                    let membership = m.membership_config.membership();
                    let matched = |id: &u64| {
                        replication
                            .get(id)
                            .and_then(|l| l.as_ref())
                            .map_or(0, |l| engine_index(l.index()))
                    };
                    let all = membership.voter_ids().map(|v| matched(&v)).min().unwrap_or(0);
                    let mut sites: std::collections::BTreeMap<Arc<str>, u64> = Default::default();
                    for (id, member) in membership.nodes() {
                        if !member.site.is_empty() {
                            let best = sites.entry(member.site.as_str().into()).or_insert(0);
                            *best = (*best).max(matched(id));
                        }
                    }
                    // The engine caps the marks at the committed watermark, which moves when
                    // the state machine applies: a new applied index asks again.
                    let applied = m.last_applied.as_ref().map_or(0, |l| l.index());
                    Some(LevelIndexes { all, sites: sites.into_iter().collect(), applied })
                }
                _ => None,
            }
        };
        if let Some(marks) = marks.filter(|m| last.as_ref() != Some(m)) {
            last = Some(marks.clone());
            if tx.send(marks).is_err() {
                return;
            }
        }
        if metrics.changed().await.is_err() {
            return;
        }
    }
}

/// Log indexes (engine numbering) that reached `all` and each site.
#[derive(Clone, Debug, PartialEq, Eq)]
struct LevelIndexes {
    all: u64,
    sites: Vec<(Arc<str>, u64)>,
    applied: u64,
}

fn set_level_marks(engine: &Engine, marks: LevelIndexes) {
    // A follower may match an entry the leader has not flushed yet: only what is on the
    // leader's disk counts, whose CSNs it can read.
    let indexes: Vec<u64> =
        std::iter::once(marks.all).chain(marks.sites.iter().map(|(_, i)| *i)).collect();
    let Ok(csns) = engine.log_csns_upto(&indexes) else { return };
    let sites: Vec<(Arc<str>, u64)> =
        marks.sites.into_iter().zip(&csns[1..]).map(|((site, _), &csn)| (site, csn)).collect();
    engine.set_level_marks(csns[0], &sites);
}

/// How long a new member may take to catch up before it is made a voter.
pub const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(600);

/// Why a membership change was not made.
#[derive(Debug)]
pub enum MembershipError {
    /// This node does not lead; the leader's SQL address, if known.
    NotLeader(Option<String>),
    /// The change makes no sense for the cluster as it is (the detail says why).
    Invalid(String),
    /// The change could not be completed (the cluster lost its leader, or the new member did
    /// not catch up); the detail says how far it got.
    Failed(String),
}

impl std::fmt::Display for MembershipError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MembershipError::NotLeader(Some(at)) => {
                write!(f, "this node does not lead the cluster; the leader is at {at}")
            }
            MembershipError::NotLeader(None) => {
                f.write_str("this node does not lead the cluster, and no leader is known")
            }
            MembershipError::Invalid(why) | MembershipError::Failed(why) => f.write_str(why),
        }
    }
}

fn membership_error(
    e: openraft::error::RaftError<KilnRaft, openraft::error::ClientWriteError<KilnRaft>>,
) -> MembershipError {
    use openraft::error::ClientWriteError;
    match e.api_error() {
        Some(ClientWriteError::ForwardToLeader(forward)) => {
            let at = forward.leader_node.as_ref().map(|m| m.sql_addr.clone());
            MembershipError::NotLeader(at.filter(|a| !a.is_empty()))
        }
        Some(ClientWriteError::ChangeMembershipError(change)) => {
            MembershipError::Invalid(change.to_string())
        }
        _ => MembershipError::Failed(e.to_string()),
    }
}

/// Adds node `id` to the cluster while it serves: first as a learner, which receives the log
/// without counting toward any quorum, and once it has caught up (within
/// [`CATCH_UP_TIMEOUT`]) as a voter. Runs on the leader. A node already a voter is refused.
pub async fn add_voter(raft: &Raft, id: u64, member: Member) -> Result<(), MembershipError> {
    {
        let metrics = raft.metrics();
        let m = metrics.borrow_watched();
        let membership = m.membership_config.membership();
        if membership.voter_ids().any(|v| v == id) {
            return Err(MembershipError::Invalid(format!("node {id} is already a voter")));
        }
        if m.state != ServerState::Leader {
            let at = m
                .current_leader
                .and_then(|l| membership.get_node(&l))
                .map(|n| n.sql_addr.clone())
                .filter(|a| !a.is_empty());
            return Err(MembershipError::NotLeader(at));
        }
    }
    let learner = tokio::time::timeout(CATCH_UP_TIMEOUT, raft.add_learner(id, member, true));
    match learner.await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(membership_error(e)),
        Err(_) => {
            return Err(MembershipError::Failed(format!(
                "node {id} was added as a learner but did not catch up within {} s; it stays a \
                 learner (remove it, or add it again once it is reachable)",
                CATCH_UP_TIMEOUT.as_secs()
            )))
        }
    }
    let voters = std::collections::BTreeSet::from([id]);
    raft.change_membership(openraft::ChangeMembers::AddVoterIds(voters), false)
        .await
        .map(|_| ())
        .map_err(membership_error)
}

/// Removes node `id` from the cluster while it serves (from the voters, and as a member).
/// Runs on the leader; the last voter cannot be removed. A removed leader hands over.
pub async fn remove_node(raft: &Raft, id: u64) -> Result<(), MembershipError> {
    let (is_voter, is_member, voters) = {
        let metrics = raft.metrics();
        let m = metrics.borrow_watched();
        let membership = m.membership_config.membership();
        let voters: std::collections::BTreeSet<u64> = membership.voter_ids().collect();
        (voters.contains(&id), membership.get_node(&id).is_some(), voters)
    };
    if !is_member {
        return Err(MembershipError::Invalid(format!("node {id} is not a member of the cluster")));
    }
    if is_voter && voters.len() == 1 {
        return Err(MembershipError::Invalid(format!(
            "node {id} is the cluster's only voter; add another before removing it"
        )));
    }
    if is_voter {
        let remove = std::collections::BTreeSet::from([id]);
        raft.change_membership(openraft::ChangeMembers::RemoveVoters(remove), false)
            .await
            .map_err(membership_error)?;
    } else {
        let remove = std::collections::BTreeSet::from([id]);
        raft.change_membership(openraft::ChangeMembers::RemoveNodes(remove), false)
            .await
            .map_err(membership_error)?;
    }
    Ok(())
}

/// One member of the cluster as a node sees it.
#[derive(Clone, Debug)]
pub struct MemberStatus {
    /// Its id.
    pub node_id: u64,
    /// Where it is reached.
    pub member: Member,
    /// Whether it is the node asked.
    pub is_self: bool,
    /// leader, follower, candidate, learner or shutdown.
    pub role: &'static str,
    /// The term the node asked is in.
    pub term: u64,
    /// Its last log entry (engine numbering, from 1): the node asked knows its own; a leader
    /// knows how far each follower's log matches its own.
    pub log_index: Option<u64>,
    /// Entries it is behind the leader (known on the leader).
    pub lag_entries: Option<u64>,
    /// The CSN of the last commit record in its log up to `log_index` (as far as this node's
    /// log on disk tells).
    pub log_csn: Option<u64>,
    /// Commits it is behind the leader's log (known on the leader).
    pub lag_csns: Option<u64>,
    /// Bytes of log it is behind the leader's log (known on the leader).
    pub lag_bytes: Option<u64>,
    /// How long ago the leader wrote the oldest entry it lacks (known on the leader; zero
    /// when it lacks none).
    pub lag_time: Option<Duration>,
    /// How long ago the leader last heard from it (known on the leader).
    pub last_heard: Option<Duration>,
}

/// The site tags of the cluster's members (empty tags left out), from the membership alone.
pub fn sites(raft: &Raft) -> Vec<String> {
    let metrics = raft.metrics();
    let m = metrics.borrow_watched();
    let nodes = m.membership_config.membership().nodes();
    nodes.map(|(_, member)| member.site.clone()).filter(|s| !s.is_empty()).collect()
}

/// Every member of the cluster as node `id` (running `raft` over `engine`) sees it.
pub fn members(raft: &Raft, engine: &Engine, id: u64) -> Vec<MemberStatus> {
    let metrics = raft.metrics();
    let m = metrics.borrow_watched();
    let membership = m.membership_config.membership();
    let last_index = m.last_log_index.map(engine_index);
    membership
        .nodes()
        .map(|(&node_id, member)| {
            let is_self = node_id == id;
            let role = if is_self {
                match m.state {
                    ServerState::Leader => "leader",
                    ServerState::Follower => "follower",
                    ServerState::Candidate => "candidate",
                    ServerState::Learner => "learner",
                    ServerState::Shutdown => "shutdown",
                }
            } else if Some(node_id) == m.current_leader {
                "leader"
            } else if membership.voter_ids().any(|v| v == node_id) {
                "follower"
            } else {
                "learner"
            };
            let matched = m
                .replication
                .as_ref()
                .and_then(|r| r.get(&node_id))
                .map(|log_id| log_id.as_ref().map_or(0, |l| engine_index(l.index())));
            let log_index = if is_self { last_index } else { matched };
            let lag_entries = match (matched, last_index) {
                (Some(matched), Some(last)) => Some(last.saturating_sub(matched)),
                _ => None,
            };
            let last_heard = m
                .heartbeat
                .as_ref()
                .and_then(|h| h.get(&node_id))
                .and_then(|at| at.as_ref())
                .map(|at| openraft::async_runtime::Instant::elapsed(&**at));
            // Measured against the leader's log on disk (an entry it has not flushed yet does
            // not count as lag).
            let lag = matched.and_then(|m| engine.log_lag(m).ok().flatten());
            MemberStatus {
                node_id,
                log_csn: log_index.and_then(|i| match i {
                    0 => Some(0),
                    i => engine.log_csn_at(i).ok().flatten(),
                }),
                lag_csns: lag.map(|l| l.csns),
                lag_bytes: lag.map(|l| l.bytes),
                lag_time: lag
                    .and_then(|l| if l.entries == 0 { Some(Duration::ZERO) } else { l.age }),
                member: member.clone(),
                is_self,
                role,
                term: m.current_term,
                log_index,
                lag_entries,
                last_heard,
            }
        })
        .collect()
}
