//! Identifiers: commit sequence numbers, epochs and transaction ids.
//!
//! Every committed update transaction takes the next **commit sequence number** (CSN) of the
//! current **epoch**. An epoch begins at every start of the engine and at every event that loses
//! the non-durable suffix while running (an fsync error). The epoch history records, durably,
//! the CSN at which each epoch began; the previous epoch's durable history ended one below it.
//! A [`TxnId`] names its epoch and CSN, which is all `status()` needs to answer `lost` or
//! `durable` for a transaction of any earlier epoch, across any number of restarts.

use std::fmt;
use std::str::FromStr;

/// A commit sequence number. CSN 0 means "before the first commit".
pub type Csn = u64;

/// An epoch number. The first epoch of a new database is 1.
pub type Epoch = u32;

/// What kind of transaction an id names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnKind {
    /// An update transaction: `csn` is its own commit sequence number.
    Update,
    /// A committed read-only transaction: `csn` is its read dependency, the largest CSN among
    /// the versions it read (0 when it read only data that was durable before its epoch).
    ReadOnly,
    /// An aborted (rolled back or failed) transaction: `csn` is the snapshot it read at.
    Aborted,
}

/// The id of a finished transaction: its epoch, a CSN and its kind.
///
/// The text form is `EPOCH.CSN` for an update, `EPOCH.CSNr` for a read-only transaction and
/// `EPOCH.CSNa` for an aborted one, e.g. `3.1042`, `3.1042r`, `3.17a`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TxnId {
    /// The epoch in which the transaction finished.
    pub epoch: Epoch,
    /// The CSN that decides the transaction's durability (see [`TxnKind`]).
    pub csn: Csn,
    /// Update, read-only or aborted.
    pub kind: TxnKind,
}

impl fmt::Display for TxnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let suffix = match self.kind {
            TxnKind::Update => "",
            TxnKind::ReadOnly => "r",
            TxnKind::Aborted => "a",
        };
        write!(f, "{}.{}{}", self.epoch, self.csn, suffix)
    }
}

/// The error of parsing a [`TxnId`] from text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid transaction id {0:?}: expected EPOCH.CSN with an optional r or a suffix")]
pub struct ParseTxnIdError(pub String);

impl FromStr for TxnId {
    type Err = ParseTxnIdError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || ParseTxnIdError(text.to_string());
        let (epoch, rest) = text.split_once('.').ok_or_else(error)?;
        let (digits, kind) = match rest.as_bytes().last() {
            Some(b'r') => (&rest[..rest.len() - 1], TxnKind::ReadOnly),
            Some(b'a') => (&rest[..rest.len() - 1], TxnKind::Aborted),
            _ => (rest, TxnKind::Update),
        };
        let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !all_digits(epoch) || !all_digits(digits) {
            return Err(error());
        }
        Ok(TxnId {
            epoch: epoch.parse().map_err(|_| error())?,
            csn: digits.parse().map_err(|_| error())?,
            kind,
        })
    }
}

/// The state of a transaction as the engine knows it (guarantee G8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TxnStatus {
    /// Committed and visible, not yet durable.
    Committed,
    /// Durable at the configured durability level: it will never be lost.
    Durable,
    /// Lost by a failure before it became durable; its effects are gone.
    Lost,
    /// Rolled back or failed before its commit point.
    Aborted,
    /// Not a transaction this database has committed (e.g. an id from the future).
    Unknown,
}

impl TxnStatus {
    /// The lower-case name used in text output (`committed`, `durable`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            TxnStatus::Committed => "committed",
            TxnStatus::Durable => "durable",
            TxnStatus::Lost => "lost",
            TxnStatus::Aborted => "aborted",
            TxnStatus::Unknown => "unknown",
        }
    }

    /// True when the status can never change again.
    pub fn is_final(self) -> bool {
        matches!(self, TxnStatus::Durable | TxnStatus::Lost | TxnStatus::Aborted)
    }
}

impl fmt::Display for TxnStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn txn_id_text_round_trips() {
        for kind in [TxnKind::Update, TxnKind::ReadOnly, TxnKind::Aborted] {
            let id = TxnId { epoch: 7, csn: 123_456, kind };
            assert_eq!(id.to_string().parse::<TxnId>(), Ok(id));
        }
        for bad in ["", "1", "1.", ".2", "1.2x", "a.2", "1.-2", "1.2ra", "99999999999.1"] {
            assert!(bad.parse::<TxnId>().is_err(), "{bad:?} parsed");
        }
    }
}
