//! Kiln's replication: the engine's replicated log (`kiln_engine::replicated`) driven by a
//! Raft library, openraft, which this crate keeps behind its own types so that it can be
//! replaced without touching the engine or the server.
//!
//! ```text
//!  leader's engine ─ship(batch)─▶ proposer ─write(batch, this term)─▶ Raft core
//!                                                                       │ (term, index)
//!  every node: LogStore::append ─▶ I/O thread ─▶ Engine::append_entries (fdatasync: `local`)
//!              StateMachine::apply (committed) ─▶ Engine::commit_log_upto (`quorum`)
//!              leadership watcher ─▶ Engine::lead(term) / Engine::follow()
//! ```
//!
//! A term is an epoch of the commit sequence: a new leader's first (blank) entry begins its
//! epoch right after the last record of its log, and whatever an earlier leader committed
//! beyond that is lost once the new term commits (see `docs/replication.md`).

mod log_store;
pub mod network;
mod node;
mod state_machine;
pub mod tcp;
pub mod types;

pub use log_store::LogStore;
pub use node::{
    add_voter, members, remove_node, sites, MemberStatus, MembershipError, Node, NodeConfig,
    CATCH_UP_TIMEOUT, LOG_KEPT_BEHIND_SNAPSHOT,
};
pub use state_machine::StateMachine;
pub use types::{Batch, KilnRaft, Member};

/// The Raft instance of a node.
pub type Raft = openraft::Raft<KilnRaft, StateMachine>;
