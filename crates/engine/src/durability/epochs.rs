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

    /// The first CSN of `epoch`.
    pub fn start_of(&self, epoch: Epoch) -> Option<Csn> {
        let first = self.epochs.first()?.0;
        let index = epoch.checked_sub(first)? as usize;
        self.epochs.get(index).map(|&(_, start)| start)
    }

    /// The last durable CSN of a finished `epoch` (`None` for the current or an unknown one).
    pub fn end_of(&self, epoch: Epoch) -> Option<Csn> {
        self.start_of(epoch)?;
        self.start_of(epoch + 1).map(|next| next - 1)
    }

    /// Appends a new epoch starting at `start`.
    pub fn push(&mut self, start: Csn) -> Epoch {
        let epoch = self.current().map_or(1, |(e, s)| {
            assert!(start >= s, "epoch start went backwards: {start} < {s}");
            e + 1
        });
        self.epochs.push((epoch, start));
        epoch
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
        match vfs.remove_file(&tmp) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
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
}
