//! An in-process network: nodes of one process reach each other through a router that can
//! cut any link, for tests and the simulation. (The TCP network for separate processes comes
//! with the server's cluster mode.)

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;

use openraft::alias::{SnapshotOf, VoteOf};
use openraft::error::{RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::{RPCOption, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, TransferLeaderRequest,
    TransferLeaderResponse, VoteRequest, VoteResponse,
};
use openraft::{OptionalSend, RaftNetworkV2};
use parking_lot::Mutex;

use crate::state_machine::SnapshotData;
use crate::types::{KilnRaft, Member};
use crate::Raft;

/// Routes messages between the nodes registered with it.
#[derive(Clone, Default)]
pub struct Router {
    inner: Arc<Mutex<RouterState>>,
}

#[derive(Default)]
struct RouterState {
    nodes: HashMap<u64, Raft>,
    /// Links that drop every message, as (from, to).
    cut: HashSet<(u64, u64)>,
}

impl Router {
    /// Makes `raft` reachable as node `id`.
    pub fn register(&self, id: u64, raft: Raft) {
        self.inner.lock().nodes.insert(id, raft);
    }

    /// Makes node `id` unreachable (it crashed or stopped).
    pub fn unregister(&self, id: u64) {
        self.inner.lock().nodes.remove(&id);
    }

    /// Cuts (or heals) both directions between `a` and every node in `others`.
    pub fn set_partitioned(&self, a: u64, others: &[u64], partitioned: bool) {
        let mut state = self.inner.lock();
        for &b in others {
            for link in [(a, b), (b, a)] {
                if partitioned {
                    state.cut.insert(link);
                } else {
                    state.cut.remove(&link);
                }
            }
        }
    }

    /// The network of node `from`.
    pub fn network(&self, from: u64) -> Network {
        Network { router: self.clone(), from }
    }

    fn target(&self, from: u64, to: u64) -> Result<Raft, Unreachable<KilnRaft>> {
        let state = self.inner.lock();
        if state.cut.contains(&(from, to)) {
            return Err(Unreachable::from_string(format!("link {from} -> {to} is cut")));
        }
        state
            .nodes
            .get(&to)
            .cloned()
            .ok_or_else(|| Unreachable::from_string(format!("node {to} is down")))
    }
}

/// One node's side of the router.
pub struct Network {
    router: Router,
    from: u64,
}

/// A connection from one node to another through the router.
pub struct Connection {
    router: Router,
    from: u64,
    to: u64,
}

impl RaftNetworkFactory<KilnRaft> for Network {
    type Network = Connection;

    async fn new_client(&mut self, target: u64, _node: &Member) -> Connection {
        Connection { router: self.router.clone(), from: self.from, to: target }
    }
}

fn unreachable(e: impl std::fmt::Display) -> RPCError<KilnRaft> {
    RPCError::Unreachable(Unreachable::from_string(e))
}

impl RaftNetworkV2<KilnRaft> for Connection {
    type SnapshotData = SnapshotData;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<KilnRaft>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<KilnRaft>, RPCError<KilnRaft>> {
        let raft = self.router.target(self.from, self.to)?;
        let response = raft.append_entries(rpc).await.map_err(unreachable)?;
        // The answer crosses the link back.
        self.router.target(self.to, self.from)?;
        Ok(response)
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<KilnRaft>,
        _option: RPCOption,
    ) -> Result<VoteResponse<KilnRaft>, RPCError<KilnRaft>> {
        let raft = self.router.target(self.from, self.to)?;
        let response = raft.vote(rpc).await.map_err(unreachable)?;
        self.router.target(self.to, self.from)?;
        Ok(response)
    }

    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<KilnRaft>,
        _option: RPCOption,
    ) -> Result<VoteResponse<KilnRaft>, RPCError<KilnRaft>> {
        let raft = self.router.target(self.from, self.to)?;
        let response = raft.pre_vote(rpc).await.map_err(unreachable)?;
        self.router.target(self.to, self.from)?;
        Ok(response)
    }

    async fn transfer_leader(
        &mut self,
        rpc: TransferLeaderRequest<KilnRaft>,
        _option: RPCOption,
    ) -> Result<TransferLeaderResponse<KilnRaft>, RPCError<KilnRaft>> {
        let raft = self.router.target(self.from, self.to)?;
        let response = raft.handle_transfer_leader(rpc).await.map_err(unreachable)?;
        self.router.target(self.to, self.from)?;
        Ok(response)
    }

    async fn full_snapshot(
        &mut self,
        vote: VoteOf<KilnRaft>,
        snapshot: SnapshotOf<KilnRaft, SnapshotData>,
        _cancel: impl Future<Output = ReplicationClosed> + OptionalSend + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<KilnRaft>, StreamingError<KilnRaft>> {
        // The receiver copies the sender's checkpoint file into its own directory.
        let raft = self.router.target(self.from, self.to)?;
        let response = raft
            .install_full_snapshot(vote, snapshot)
            .await
            .map_err(|e| StreamingError::Unreachable(Unreachable::from_string(e)))?;
        self.router.target(self.to, self.from)?;
        Ok(response)
    }
}
