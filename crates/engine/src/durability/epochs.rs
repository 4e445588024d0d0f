//! The epoch history: which CSN each epoch began at, and so where each earlier epoch's
//! durable history ended. It is what lets `status()` answer `durable` or `lost` for an id of
//! any earlier epoch, across any number of restarts.
//!
//! The history lives in the file `EPOCHS`, rewritten whole on every new epoch through a
//! temporary file, fsync, rename and a directory fsync, so it is always either the old or the
//! new history, never a mix.

use std::path::Path;

use super::format;
use super::vfs::{self, OpenMode, Vfs};
use crate::error::{Error, Result};
use crate::id::{Csn, Epoch, TxnId, TxnKind, TxnStatus};

/// File name of the epoch history.
pub const EPOCHS_FILE: &str = "EPOCHS";

/// The most epochs the history may hold (one per start of the engine and per loss event).
pub const EPOCHS_MAX: usize = 1 << 22;

/// The recorded epochs, oldest first, each with the first CSN it could assign.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EpochHistory {
    epochs: Vec<(Epoch, Csn)>,
}

impl EpochHistory {
    /// The newest epoch and its first CSN, if any epoch was recorded.
    pub fn current(&self) -> Option<(Epoch, Csn)> {
        self.epochs.last().copied()
    }

    /// The first CSN of `epoch`, if it is recorded. Epochs are increasing but need not be
    /// consecutive: a replicated log's epochs are the terms of the leaders that wrote it.
    pub fn start_of(&self, epoch: Epoch) -> Option<Csn> {
        let at = self.epochs.binary_search_by_key(&epoch, |&(e, _)| e).ok()?;
        Some(self.epochs[at].1)
    }

    /// The last CSN of a finished `epoch`: the one before the next recorded epoch's start
    /// (`None` for the current or an unrecorded one).
    pub fn end_of(&self, epoch: Epoch) -> Option<Csn> {
        let at = self.epochs.binary_search_by_key(&epoch, |&(e, _)| e).ok()?;
        self.epochs.get(at + 1).map(|&(_, next)| next - 1)
    }

    /// Appends a new epoch starting at `start`.
    pub fn push(&mut self, start: Csn) -> Epoch {
        let epoch = self.current().map_or(1, |(e, _)| e + 1);
        self.push_epoch(epoch, start);
        epoch
    }

    /// Appends `epoch` starting at `start`; it must follow the current epoch.
    pub fn push_epoch(&mut self, epoch: Epoch, start: Csn) {
        if let Some((e, s)) = self.current() {
            assert!(epoch > e, "epoch {epoch} does not follow epoch {e}");
            assert!(start >= s, "epoch start went backwards: {start} < {s}");
        }
        self.epochs.push((epoch, start));
    }

    /// Forgets every epoch after `epoch` (a replicated log cut back to an entry of `epoch`).
    pub fn truncate_after(&mut self, epoch: Epoch) {
        let keep = self.epochs.partition_point(|&(e, _)| e <= epoch);
        self.epochs.truncate(keep);
    }

    /// The recorded epochs, oldest first, each with its first CSN.
    pub fn epochs(&self) -> &[(Epoch, Csn)] {
        &self.epochs
    }

    /// Whether `csn` is within `epoch`'s range: recorded, at or after its start and before the
    /// next epoch's (it may be past the last record).
    pub fn contains(&self, epoch: Epoch, csn: Csn) -> bool {
        self.start_of(epoch).is_some_and(|start| start <= csn)
            && self.end_of(epoch).is_none_or(|end| csn <= end)
    }

    /// The epoch the record at `csn` belongs to: the newest recorded epoch starting at or
    /// before it.
    pub fn epoch_of(&self, csn: Csn) -> Option<Epoch> {
        let at = self.epochs.partition_point(|&(_, start)| start <= csn);
        at.checked_sub(1).map(|i| self.epochs[i].0)
    }

    /// The status of `id`, given the current epoch's durable watermark and its last commit.
    pub fn status(&self, id: TxnId, durable: Csn, last_committed: Csn) -> TxnStatus {
        if id.kind == TxnKind::Aborted {
            return TxnStatus::Aborted;
        }
        let Some((current, _)) = self.current() else { return TxnStatus::Unknown };
        let Some(start) = self.start_of(id.epoch) else { return TxnStatus::Unknown };
        if id.kind == TxnKind::Update && id.csn < start {
            return TxnStatus::Unknown;
        }
        if id.epoch < current {
            let end = self.end_of(id.epoch).expect("finished epoch has an end");
            return if id.csn <= end { TxnStatus::Durable } else { TxnStatus::Lost };
        }
        if id.csn <= durable {
            TxnStatus::Durable
        } else if id.csn <= last_committed {
            TxnStatus::Committed
        } else {
            TxnStatus::Unknown
        }
    }

    /// The status of `id` in a replicated log, whose history holds every epoch (term) with an
    /// entry in the log, committed or not. `committed` is the CSN of the last committed
    /// record and `committed_epoch` the epoch (term) of the last committed entry: what the
    /// cluster decided. `known` says whether this node knows `id` as committed and not yet
    /// decided (it committed or received it, and did not see it decided).
    ///
    /// An epoch's fate is decided once a later epoch has a committed entry: its records up to
    /// the next epoch's start survived, and everything after them is lost. Until then a record
    /// this node knows of is committed (in doubt, not lost), however it was cut from this log.
    pub fn status_replicated(
        &self,
        id: TxnId,
        committed: Csn,
        committed_epoch: Epoch,
        known: impl FnOnce() -> bool,
    ) -> TxnStatus {
        if id.kind == TxnKind::Aborted {
            return TxnStatus::Aborted;
        }
        if id.epoch == 0 {
            return TxnStatus::Unknown;
        }
        let recorded = self.start_of(id.epoch);
        if let Some(start) = recorded {
            if id.kind == TxnKind::Update && id.csn < start {
                return TxnStatus::Unknown;
            }
            if self.contains(id.epoch, id.csn) && id.csn <= committed {
                return TxnStatus::Durable;
            }
        }
        if id.epoch < committed_epoch {
            // A later epoch is committed: this one's surviving records are all in the log.
            let first = self.epochs.first().map_or(Epoch::MAX, |&(e, _)| e);
            return if recorded.is_some() || id.epoch > first {
                TxnStatus::Lost
            } else {
                TxnStatus::Unknown
            };
        }
        if known() {
            TxnStatus::Committed
        } else {
            TxnStatus::Unknown
        }
    }

    /// Loads the history of a data directory; an empty history when the file does not exist.
    pub fn load(vfs: &dyn Vfs, dir: &Path) -> Result<EpochHistory> {
        let path = dir.join(EPOCHS_FILE);
        let data = match vfs::read_all(vfs, &path) {
            Ok(data) => data,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(Error::io(format!("reading {}", path.display()), e)),
        };
        let epochs = format::decode_epochs(&data).map_err(|detail| Error::Corruption {
            path: path.clone(),
            offset: 0,
            detail: format!("epoch history unreadable: {detail}"),
        })?;
        Ok(EpochHistory { epochs })
    }

    /// Writes the history durably (temporary file, fsync, rename, directory fsync).
    pub fn store(&self, vfs: &dyn Vfs, dir: &Path) -> std::io::Result<()> {
        if self.epochs.len() > EPOCHS_MAX {
            return Err(std::io::Error::other(format!(
                "more than {EPOCHS_MAX} epochs recorded; the history is full"
            )));
        }
        let tmp = dir.join(format!("{EPOCHS_FILE}.tmp"));
        vfs::remove_if_exists(vfs, &tmp)?;
        let mut file = vfs.open(&tmp, OpenMode::CreateNew)?;
        vfs::append_all(file.as_mut(), &format::encode_epochs(&self.epochs))?;
        file.sync_data()?;
        drop(file);
        vfs.rename(&tmp, &dir.join(EPOCHS_FILE))?;
        vfs.sync_dir(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(epoch: Epoch, csn: Csn, kind: TxnKind) -> TxnId {
        TxnId { epoch, csn, kind }
    }

    #[test]
    fn status_follows_epoch_ends() {
        let mut h = EpochHistory::default();
        h.push(1); // epoch 1
        h.push(11); // epoch 2: epoch 1 ended durable at 10
        h.push(11); // epoch 3: epoch 2 committed nothing durable
        let u = TxnKind::Update;
        assert_eq!(h.status(id(1, 10, u), 0, 0), TxnStatus::Durable);
        assert_eq!(h.status(id(1, 11, u), 0, 0), TxnStatus::Lost);
        assert_eq!(h.status(id(2, 11, u), 0, 0), TxnStatus::Lost);
        assert_eq!(h.status(id(3, 11, u), 12, 14), TxnStatus::Durable);
        assert_eq!(h.status(id(3, 13, u), 12, 14), TxnStatus::Committed);
        assert_eq!(h.status(id(3, 15, u), 12, 14), TxnStatus::Unknown);
        assert_eq!(h.status(id(4, 1, u), 12, 14), TxnStatus::Unknown);
        assert_eq!(h.status(id(0, 1, u), 12, 14), TxnStatus::Unknown);
        assert_eq!(h.status(id(3, 5, TxnKind::ReadOnly), 12, 14), TxnStatus::Durable);
        assert_eq!(h.status(id(2, 12, TxnKind::ReadOnly), 12, 14), TxnStatus::Lost);
        assert_eq!(h.status(id(3, 5, TxnKind::Aborted), 12, 14), TxnStatus::Aborted);
    }

    #[test]
    fn sparse_epochs_and_truncation() {
        let mut h = EpochHistory::default();
        h.push_epoch(2, 1);
        h.push_epoch(5, 11);
        h.push_epoch(9, 11);
        assert_eq!(h.start_of(5), Some(11));
        assert_eq!(h.start_of(4), None);
        assert_eq!(h.end_of(2), Some(10));
        assert_eq!(h.end_of(5), Some(10));
        assert_eq!(h.end_of(9), None);
        assert_eq!(h.epoch_of(10), Some(2));
        assert_eq!(h.epoch_of(11), Some(9));
        h.truncate_after(5);
        assert_eq!(h.current(), Some((5, 11)));
        h.truncate_after(3);
        assert_eq!(h.current(), Some((2, 1)));
    }

    #[test]
    fn replicated_status_decides_an_epoch_only_when_a_later_one_is_committed() {
        let u = TxnKind::Update;
        let mut h = EpochHistory::default();
        h.push_epoch(1, 1);
        h.push_epoch(3, 11); // term 1 wrote CSNs 1..=10; term 2 left no entry
        let yes = || true;
        let no = || false;
        // Term 3 not committed yet: term 1's tail beyond 10 and term 2 are undecided.
        assert_eq!(h.status_replicated(id(1, 5, u), 8, 1, no), TxnStatus::Durable);
        assert_eq!(h.status_replicated(id(1, 9, u), 8, 1, yes), TxnStatus::Committed);
        assert_eq!(h.status_replicated(id(1, 12, u), 8, 1, yes), TxnStatus::Committed);
        assert_eq!(h.status_replicated(id(2, 11, u), 8, 1, yes), TxnStatus::Committed);
        assert_eq!(h.status_replicated(id(2, 11, u), 8, 1, no), TxnStatus::Unknown);
        // Term 3 committed: term 1 ended at 10, term 2 left nothing.
        assert_eq!(h.status_replicated(id(1, 10, u), 11, 3, no), TxnStatus::Durable);
        assert_eq!(h.status_replicated(id(1, 11, u), 11, 3, yes), TxnStatus::Lost);
        assert_eq!(h.status_replicated(id(2, 11, u), 11, 3, yes), TxnStatus::Lost);
        assert_eq!(h.status_replicated(id(3, 11, u), 11, 3, no), TxnStatus::Durable);
        assert_eq!(h.status_replicated(id(3, 12, u), 11, 3, yes), TxnStatus::Committed);
        assert_eq!(h.status_replicated(id(3, 12, u), 11, 3, no), TxnStatus::Unknown);
        assert_eq!(h.status_replicated(id(0, 1, u), 11, 3, yes), TxnStatus::Unknown);
    }
}
