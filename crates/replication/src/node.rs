//! One node of a cluster: its Raft instance over the engine, the proposer that turns the
//! leader's shipped batches into Raft writes, and the watcher that tells the engine when it
//! leads.

use std::sync::Arc;
use std::time::Duration;

use kiln_engine::replicated::RecordBatch;
use kiln_engine::Engine;
use openraft::alias::CommittedLeaderIdOf;
use openraft::async_runtime::WatchReceiver;
use openraft::{Config, ServerState, SnapshotPolicy};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::network::Network;
use crate::types::{Batch, KilnRaft};
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
}

impl NodeConfig {
    /// A node with the timings of a local network.
    pub fn new(id: u64, state_dir: impl Into<std::path::PathBuf>) -> NodeConfig {
        NodeConfig {
            id,
            state_dir: state_dir.into(),
            heartbeat: Duration::from_millis(50),
            election_timeout: (Duration::from_millis(300), Duration::from_millis(600)),
        }
    }
}

/// A running node.
pub struct Node {
    /// Its Raft instance.
    pub raft: Raft,
    engine: Engine,
    tasks: Vec<JoinHandle<()>>,
}

/// How often a leader whose first entry is not on disk yet checks again before it leads.
const LEAD_RETRY: Duration = Duration::from_millis(2);

impl Node {
    /// Starts a node over `engine` (opened with `Config::replicated_log`), reaching the others
    /// through `network`. Must run inside a Tokio runtime.
    pub async fn start(
        config: NodeConfig,
        engine: Engine,
        network: Network,
    ) -> std::io::Result<Node> {
        let raft_config = Config {
            cluster_name: "kiln".into(),
            heartbeat_interval: config.heartbeat.as_millis() as u64,
            election_timeout_min: config.election_timeout.0.as_millis() as u64,
            election_timeout_max: config.election_timeout.1.as_millis() as u64,
            // Snapshots are not built yet: the log is kept whole.
            snapshot_policy: SnapshotPolicy::Never,
            ..Config::default()
        };
        let raft_config = Arc::new(raft_config.validate().map_err(std::io::Error::other)?);
        let log_store = LogStore::open(engine.clone(), &config.state_dir)?;
        let state_machine = StateMachine::new(engine.clone());
        let raft = Raft::new(config.id, raft_config, network, log_store, state_machine)
            .await
            .map_err(std::io::Error::other)?;

        let (tx, rx) = mpsc::unbounded_channel::<RecordBatch>();
        engine
            .set_shipper(Box::new(move |batch| {
                // The receiver goes only when the node stops; its batches are then lost anyway.
                let _ = tx.send(batch);
            }))
            .map_err(std::io::Error::other)?;
        let tasks = vec![
            tokio::spawn(propose(raft.clone(), rx)),
            tokio::spawn(watch_leadership(raft.clone(), engine.clone())),
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

/// Proposes each shipped batch as a Raft write of the term it was committed in: if that term
/// has ended, the library refuses the write, and the batch (never logged) is left to the
/// engine, which dropped it when the term ended.
async fn propose(raft: Raft, mut batches: mpsc::UnboundedReceiver<RecordBatch>) {
    while let Some(batch) = batches.recv().await {
        let term = CommittedLeaderIdOf::<KilnRaft>::new(batch.epoch as u64);
        if let Err(fatal) = raft.write(Batch::from(batch)).with_leader(term).await {
            tracing::error!(error = %fatal, "the Raft core stopped; shipped batches are dropped");
            return;
        }
    }
}

/// Tells the engine to lead when this node leads a term whose first entry is on its disk,
/// and to follow when it no longer leads.
async fn watch_leadership(raft: Raft, engine: Engine) {
    let mut metrics = raft.metrics();
    loop {
        let (state, term) = {
            let m = metrics.borrow_watched();
            (m.state, m.current_term)
        };
        let leading = engine.leading_term();
        let mut retry = false;
        if state == ServerState::Leader && leading != Some(term) {
            let e = engine.clone();
            match tokio::task::spawn_blocking(move || e.lead(term)).await {
                Ok(Ok(())) => {}
                Ok(Err(kiln_engine::Error::NotLeader { .. })) => retry = true,
                Ok(Err(e)) => {
                    tracing::error!(error = %e, "could not lead");
                    retry = true;
                }
                Err(_) => return,
            }
        } else if state != ServerState::Leader && leading.is_some() {
            let e = engine.clone();
            if let Ok(Err(e)) = tokio::task::spawn_blocking(move || e.follow()).await {
                tracing::error!(error = %e, "could not stop leading");
            }
        }
        if retry {
            tokio::time::sleep(LEAD_RETRY).await;
            continue;
        }
        if metrics.changed().await.is_err() {
            return;
        }
    }
}
