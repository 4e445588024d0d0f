//! The cluster's types for the Raft library, and how its entries map onto the engine's
//! replicated log entries (and back).
//!
//! A normal entry carries one [`Batch`]: the records of one flush of the leader's log writer.
//! The library's own entries (the blank entry a new leader writes, membership changes) are
//! stored as opaque engine entries whose first byte says which they are.

use std::fmt;
use std::io;
use std::sync::Arc;

use kiln_engine::replicated::{EntryPayload as EnginePayload, LogEntry, RecordBatch};
use openraft::alias::{EntryOf, LogIdOf};
use openraft::entry::RaftEntry;
use openraft::EntryPayload;

/// The records of one flush of the leader's log writer: the data of a normal Raft entry.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Batch {
    /// The epoch (the leader's term) the records were committed in.
    pub epoch: u32,
    /// The CSN of the first record.
    pub first_csn: u64,
    /// The number of records.
    pub count: u32,
    /// The records, as the engine encodes them.
    pub records: Arc<[u8]>,
}

impl fmt::Display for Batch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let last = self.first_csn + self.count as u64 - 1;
        write!(
            f,
            "records {}.{}..={last} ({} bytes)",
            self.epoch,
            self.first_csn,
            self.records.len()
        )
    }
}

impl From<RecordBatch> for Batch {
    fn from(b: RecordBatch) -> Batch {
        Batch { epoch: b.epoch, first_csn: b.first_csn, count: b.count, records: b.records }
    }
}

impl From<Batch> for RecordBatch {
    fn from(b: Batch) -> RecordBatch {
        RecordBatch { epoch: b.epoch, first_csn: b.first_csn, count: b.count, records: b.records }
    }
}

/// A member of the cluster as its membership records it: where it is reached.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Member {
    /// The address other nodes send Raft messages to.
    pub raft_addr: String,
    /// The address its SQL clients connect to (what a follower tells a client to use instead).
    pub sql_addr: String,
    /// The site it stands in (a zone, region or data centre; empty if none is named).
    pub site: String,
}

impl fmt::Display for Member {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "raft {} sql {} site {:?}", self.raft_addr, self.sql_addr, self.site)
    }
}

openraft::declare_raft_types!(
    /// Kiln's Raft types. Standard Raft leader ids (one leader per term), because a term is
    /// an epoch of the commit sequence and must name one leader's commits.
    pub KilnRaft:
        D = Batch,
        R = (),
        Node = Member,
        LeaderId = openraft::impls::leader_id_std::LeaderId<u64, u64>,
);

/// A Raft log entry of Kiln's cluster.
pub type Entry = EntryOf<KilnRaft>;
/// A Raft log id: (term, index).
pub type LogId = LogIdOf<KilnRaft>;

/// First byte of an opaque engine entry: what the library's entry was.
const BLANK: u8 = 0;
const MEMBERSHIP: u8 = 1;
/// A batch that does not continue the log (see `log_store::write_entries`): its records are
/// not part of the log; the entry keeps its index.
const VOID: u8 = 2;

/// The engine's index of Raft's entry `index`. Raft numbers its log from 0 (the initial
/// membership entry); the engine from 1, as 0 marks a standalone frame.
pub fn engine_index(index: u64) -> u64 {
    index + 1
}

/// The engine entry that stores a Raft entry; a normal entry's records are stored only if
/// they `continue_log`, and the entry is stored void otherwise.
pub fn to_engine(entry: &Entry, continue_log: bool) -> io::Result<LogEntry> {
    let term = entry.log_id.committed_leader_id().term;
    let index = engine_index(entry.log_id.index());
    let opaque = |tag: u8, body: &[u8]| {
        let mut bytes = Vec::with_capacity(1 + body.len());
        bytes.push(tag);
        bytes.extend_from_slice(body);
        EnginePayload::Opaque(Arc::from(bytes))
    };
    let payload = match &entry.payload {
        EntryPayload::Blank => opaque(BLANK, &[]),
        EntryPayload::Normal(batch) if continue_log => EnginePayload::Records(batch.clone().into()),
        EntryPayload::Normal(_) => opaque(VOID, &[]),
        EntryPayload::Membership(membership) => {
            let body = serde_json::to_vec(membership).map_err(io::Error::other)?;
            opaque(MEMBERSHIP, &body)
        }
    };
    Ok(LogEntry { term, index, payload })
}

/// The Raft entry an engine entry stores.
pub fn from_engine(entry: LogEntry) -> io::Result<Entry> {
    let log_id = LogId::new_term_index(entry.term, entry.index - 1);
    let invalid = |what: &str| {
        io::Error::new(io::ErrorKind::InvalidData, format!("log entry {}: {what}", entry.index))
    };
    let payload = match entry.payload {
        EnginePayload::Records(batch) => EntryPayload::Normal(batch.into()),
        EnginePayload::Opaque(bytes) => match bytes.split_first() {
            Some((&BLANK, _)) | Some((&VOID, _)) => EntryPayload::Blank,
            Some((&MEMBERSHIP, body)) => EntryPayload::Membership(
                serde_json::from_slice(body).map_err(|e| invalid(&format!("membership: {e}")))?,
            ),
            _ => return Err(invalid("unknown kind of entry")),
        },
    };
    Ok(Entry::new(log_id, payload))
}
