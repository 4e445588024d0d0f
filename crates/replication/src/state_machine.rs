//! The Raft state machine: the engine already holds every record it logged, so applying a
//! committed entry only tells the engine how far the cluster has committed (the `quorum`
//! level), which makes safe commits return and followers' reads advance.

use std::io;

use futures::{Stream, TryStreamExt};
use kiln_engine::Engine;
use openraft::alias::{SnapshotMetaOf, SnapshotOf, StoredMembershipOf};
use openraft::storage::{EntryResponder, RaftStateMachine};
use openraft::{EntryPayload, OptionalSend, RaftSnapshotBuilder};

use crate::types::{KilnRaft, LogId};

/// The state machine of one node.
pub struct StateMachine {
    engine: Engine,
    applied: Option<LogId>,
    membership: StoredMembershipOf<KilnRaft>,
}

impl StateMachine {
    /// The state machine over `engine`. It starts with nothing applied: at start the library
    /// applies the committed entries again, which only moves the engine's committed
    /// watermark (the records are installed already, by recovery).
    pub fn new(engine: Engine) -> StateMachine {
        StateMachine { engine, applied: None, membership: Default::default() }
    }
}

fn unsupported() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "snapshots are not built yet: the replicated log is kept whole and replicas catch up from it",
    )
}

/// What a network answers when the library would send a snapshot (it never asks: see
/// [`unsupported`]).
pub(crate) fn snapshots_not_sent() -> openraft::error::StreamingError<KilnRaft> {
    openraft::error::StreamingError::Unreachable(openraft::error::Unreachable::from_string(
        "snapshots are not built yet; replicas catch up from the log",
    ))
}

/// Builds no snapshot (see [`unsupported`]); the library is configured never to ask.
pub struct NoSnapshots;

impl RaftSnapshotBuilder<KilnRaft> for NoSnapshots {
    type SnapshotData = ();

    async fn build_snapshot(&mut self) -> Result<SnapshotOf<KilnRaft, ()>, io::Error> {
        Err(unsupported())
    }
}

impl RaftStateMachine<KilnRaft> for StateMachine {
    type SnapshotData = ();
    type SnapshotBuilder = NoSnapshots;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId>, StoredMembershipOf<KilnRaft>), io::Error> {
        Ok((self.applied, self.membership.clone()))
    }

    async fn apply<Strm>(&mut self, mut entries: Strm) -> Result<(), io::Error>
    where
        Strm: Stream<Item = Result<EntryResponder<KilnRaft>, io::Error>> + Unpin + OptionalSend,
    {
        let mut last = None;
        while let Some((entry, responder)) = entries.try_next().await? {
            if let EntryPayload::Membership(membership) = &entry.payload {
                self.membership =
                    StoredMembershipOf::<KilnRaft>::new(Some(entry.log_id), membership.clone());
            }
            last = Some(entry.log_id);
            if let Some(responder) = responder {
                responder.send(());
            }
        }
        if let Some(last) = last {
            self.applied = Some(last);
            tracing::trace!(target: "kiln_latency", last = last.index(), "apply");
            // No I/O and no flush lock: it moves a watermark and wakes its waiters, so it runs
            // here rather than on a blocking thread (a hop every safe commit would wait for).
            self.engine
                .commit_log_upto(crate::types::engine_index(last.index()))
                .map_err(io::Error::other)?;
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        NoSnapshots
    }

    async fn install_snapshot(
        &mut self,
        _meta: &SnapshotMetaOf<KilnRaft>,
        _snapshot: Self::SnapshotData,
    ) -> Result<(), io::Error> {
        Err(unsupported())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<SnapshotOf<KilnRaft, Self::SnapshotData>>, io::Error> {
        Ok(None)
    }
}
