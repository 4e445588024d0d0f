//! The Raft state machine: the engine already holds every record it logged, so applying a
//! committed entry only tells the engine how far the cluster has committed (the `quorum`
//! level), which makes safe commits return and followers' reads advance.
//!
//! A snapshot is the engine's checkpoint at a committed entry: every row as of that entry's
//! last record, the epoch history up to it, and the membership in force there (the cluster's
//! bytes the checkpoint carries). Once one is taken the log before it can be purged; a node
//! whose log ends before what the others still hold is sent the checkpoint file and installs
//! it in place of its log (`Engine::install_checkpoint`).

use std::io;
use std::sync::Arc;

use futures::{Stream, TryStreamExt};
use kiln_engine::replicated::{CheckpointFile, CheckpointInfo};
use kiln_engine::Engine;
use openraft::alias::{SnapshotMetaOf, SnapshotOf, StoredMembershipOf};
use openraft::storage::{EntryResponder, RaftStateMachine};
use openraft::{EntryPayload, OptionalSend, RaftSnapshotBuilder};
use parking_lot::Mutex;

use crate::types::{engine_index, KilnRaft, LogId};

/// The snapshot data: the checkpoint file, open for reading.
pub type SnapshotData = CheckpointFile;

type Membership = StoredMembershipOf<KilnRaft>;

/// The state machine of one node.
pub struct StateMachine {
    engine: Engine,
    applied: Option<LogId>,
    /// The membership in force at the last applied entry, and the ones before it back to the
    /// newest snapshot's (a snapshot being built takes the one in force at its entry).
    memberships: Arc<Mutex<Vec<Membership>>>,
}

impl StateMachine {
    /// The state machine over `engine`. It starts where the engine's newest checkpoint
    /// stands: at start the library applies the committed entries after it again, which only
    /// moves the engine's committed watermark (their records are installed already, by
    /// recovery).
    pub fn new(engine: Engine) -> io::Result<StateMachine> {
        let (applied, membership) = match engine.newest_checkpoint() {
            Some(info) => {
                let meta = snapshot_meta(&info)?;
                (meta.last_log_id, meta.last_membership)
            }
            None => (None, Membership::default()),
        };
        Ok(StateMachine { engine, applied, memberships: Arc::new(Mutex::new(vec![membership])) })
    }
}

/// The snapshot meta of a replicated log's checkpoint.
fn snapshot_meta(info: &CheckpointInfo) -> io::Result<SnapshotMetaOf<KilnRaft>> {
    let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    let mark = info.log.as_ref().ok_or_else(|| {
        invalid(format!("the checkpoint at CSN {} has no log position", info.csn))
    })?;
    let last_membership: Membership = serde_json::from_slice(&mark.cluster)
        .map_err(|e| invalid(format!("the checkpoint's membership: {e}")))?;
    Ok(SnapshotMetaOf::<KilnRaft> {
        last_log_id: Some(LogId::new_term_index(mark.term, mark.index - 1)),
        last_membership,
    })
}

/// The membership in force at Raft index `index`: the last one of `memberships` at or before
/// it.
fn membership_at(memberships: &[Membership], index: u64) -> Membership {
    memberships
        .iter()
        .rev()
        .find(|m| m.log_id().is_none_or(|id| id.index() <= index))
        .cloned()
        .unwrap_or_default()
}

/// Builds a snapshot: the engine's checkpoint at the last committed entry installed here.
pub struct SnapshotBuilder {
    engine: Engine,
    memberships: Arc<Mutex<Vec<Membership>>>,
}

impl RaftSnapshotBuilder<KilnRaft> for SnapshotBuilder {
    type SnapshotData = SnapshotData;

    async fn build_snapshot(&mut self) -> Result<SnapshotOf<KilnRaft, SnapshotData>, io::Error> {
        let (engine, memberships) = (self.engine.clone(), self.memberships.clone());
        let file = tokio::task::spawn_blocking(move || -> io::Result<CheckpointFile> {
            let info = engine
                .checkpoint_log(|index| {
                    let mut memberships = memberships.lock();
                    let at = membership_at(&memberships, index - 1);
                    // What came before the one in force here no snapshot needs again.
                    memberships.retain(|m| m.log_id() >= at.log_id());
                    serde_json::to_vec(&at).expect("a membership serializes")
                })
                .map_err(io::Error::other)?;
            let file = engine.open_checkpoint().map_err(io::Error::other)?;
            file.ok_or_else(|| io::Error::other(format!("checkpoint at CSN {} is gone", info.csn)))
        })
        .await
        .map_err(io::Error::other)??;
        let meta = snapshot_meta(&file.info)?;
        tracing::info!(last = ?meta.last_log_id, csn = file.info.csn, rows = file.info.rows,
            bytes = file.len(), "snapshot taken");
        Ok(SnapshotOf::<KilnRaft, SnapshotData> { meta, snapshot: file })
    }
}

impl RaftStateMachine<KilnRaft> for StateMachine {
    type SnapshotData = SnapshotData;
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, Membership), io::Error> {
        let membership = self.memberships.lock().last().cloned().unwrap_or_default();
        Ok((self.applied, membership))
    }

    async fn apply<Strm>(&mut self, mut entries: Strm) -> Result<(), io::Error>
    where
        Strm: Stream<Item = Result<EntryResponder<KilnRaft>, io::Error>> + Unpin + OptionalSend,
    {
        let mut last = None;
        while let Some((entry, responder)) = entries.try_next().await? {
            if let EntryPayload::Membership(membership) = &entry.payload {
                // Before the engine hears of the entry: a snapshot at it must find it here.
                self.memberships
                    .lock()
                    .push(Membership::new(Some(entry.log_id), membership.clone()));
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
            self.engine.commit_log_upto(engine_index(last.index())).map_err(io::Error::other)?;
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        SnapshotBuilder { engine: self.engine.clone(), memberships: self.memberships.clone() }
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMetaOf<KilnRaft>,
        mut snapshot: SnapshotData,
    ) -> Result<(), io::Error> {
        let expected = snapshot_meta(&snapshot.info)?;
        if expected.last_log_id != meta.last_log_id {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the snapshot of {:?} holds a checkpoint at {:?}",
                    meta.last_log_id, expected.last_log_id
                ),
            ));
        }
        let engine = self.engine.clone();
        tokio::task::spawn_blocking(move || engine.install_checkpoint(&mut snapshot))
            .await
            .map_err(io::Error::other)?
            .map_err(io::Error::other)?;
        self.applied = meta.last_log_id;
        *self.memberships.lock() = vec![meta.last_membership.clone()];
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<SnapshotOf<KilnRaft, SnapshotData>>, io::Error> {
        let engine = self.engine.clone();
        let file = tokio::task::spawn_blocking(move || engine.open_checkpoint())
            .await
            .map_err(io::Error::other)?
            .map_err(io::Error::other)?;
        match file {
            Some(file) => Ok(Some(SnapshotOf::<KilnRaft, SnapshotData> {
                meta: snapshot_meta(&file.info)?,
                snapshot: file,
            })),
            None => Ok(None),
        }
    }
}
