//! Recovery: newest checkpoint, then the log after it, up to the last valid frame.
//!
//! The rules that keep a torn or interrupted write from ever becoming a wrong state:
//! - Frames are applied strictly in CSN order with no gaps; anything else is corruption.
//! - A damaged frame followed, anywhere later in the same segment, by a valid frame of a
//!   *later flush* means the damage is inside data that was synced (a flush is only written
//!   after the previous one's fdatasync returned), so it is corruption and the engine refuses
//!   to open. Every frame names the first CSN of its flush, which is how recovery tells.
//! - A damaged frame followed by nothing valid, or only by frames of its own flush, is a torn
//!   flush: its fdatasync never completed, so nothing in it was acknowledged as durable. The
//!   segment is cut back to the last valid frame (only for the newest segment; older ones end
//!   in an epoch change).
//! - Records of an epoch beyond that epoch's recorded end are the lost suffix of a failed
//!   flush: they are skipped, never applied.
//! - The epoch history says where every finished epoch's durable history ended; if the log
//!   stops short of that, durable data is missing and the engine refuses to open.

use std::path::{Path, PathBuf};

use super::checkpoint::{self, CheckpointInfo};
use super::epochs::{EpochHistory, EPOCHS_FILE};
use super::format::{self, FrameAt, WriteRef};
use super::replicated::EntryLocation;
use super::vfs::{self, OpenMode, Vfs};
use super::writer::parse_segment_name;
use crate::error::{Error, Result};
use crate::id::{Csn, Epoch};

/// Name of the log directory inside the data directory.
pub const LOG_DIR: &str = "log";

/// What recovery found.
#[derive(Debug)]
pub struct Recovered {
    /// The epoch history as recorded (the engine appends the new epoch).
    pub history: EpochHistory,
    /// The last CSN in the recovered state.
    pub last_csn: Csn,
    /// The checkpoint recovery started from.
    pub checkpoint: Option<CheckpointInfo>,
    /// Number of log records replayed.
    pub replayed_records: u64,
    /// Bytes of torn tail cut from the newest segment.
    pub truncated_bytes: u64,
    /// A replicated log's entries, in index order, with where they are.
    pub(crate) entries: Vec<EntryLocation>,
    /// The epoch of the last frame in the log, if any.
    pub last_epoch: Option<Epoch>,
}

impl Recovered {
    /// A replicated log's checkpoint position: the entry before the first the log must hold
    /// (those up to it may be gone), as (term, index, CSN of its last record).
    pub(crate) fn log_base(&self) -> Option<(u64, u64, Csn)> {
        let c = self.checkpoint.as_ref()?;
        c.log.as_ref().map(|l| (l.term, l.index, c.csn))
    }
}

/// A log segment on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentFile {
    /// The epoch it belongs to.
    pub epoch: Epoch,
    /// The CSN of its first record.
    pub first_csn: Csn,
    /// The index of its first entry in a replicated log (0 in a standalone log).
    pub first_index: u64,
    /// Its path.
    pub path: PathBuf,
}

/// The log segments of `log_dir`, ordered by epoch, then first CSN.
pub fn list_segments(vfs: &dyn Vfs, log_dir: &Path) -> Result<Vec<SegmentFile>> {
    let names =
        vfs.list(log_dir).map_err(|e| Error::io(format!("listing {}", log_dir.display()), e))?;
    let mut segments: Vec<SegmentFile> = names
        .iter()
        .filter_map(|name| {
            let (epoch, first_csn, first_index) = parse_segment_name(name)?;
            Some(SegmentFile { epoch, first_csn, first_index, path: log_dir.join(name) })
        })
        .collect();
    segments.sort_by_key(|s| (s.epoch, s.first_csn, s.first_index));
    Ok(segments)
}

/// The published checkpoints of `dir`, ordered by CSN.
pub fn list_checkpoints(vfs: &dyn Vfs, dir: &Path) -> Result<Vec<(Csn, PathBuf)>> {
    let names = vfs.list(dir).map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
    let mut found: Vec<_> = names
        .iter()
        .filter_map(|n| checkpoint::parse_checkpoint_name(n).map(|csn| (csn, dir.join(n))))
        .collect();
    found.sort();
    Ok(found)
}

/// Receives each checkpoint row: keyspace, key, value.
pub type OnRow<'a> = &'a mut dyn FnMut(&str, &[u8], &[u8]);
/// Receives each replayed commit record: its CSN and writes.
pub type OnCommit<'a> = &'a mut dyn FnMut(Csn, &[WriteRef<'_>]);

/// Recovers the state of `dir`: calls `on_row` for every checkpoint row, then `on_commit` for
/// every replayed commit record in CSN order.
///
/// A replicated log (`replicated`) keeps no epoch file: its epochs are the terms of the
/// entries it holds, each starting where its first segment starts, so the history is read from
/// the segment names and can never disagree with the log (a cut log loses its later epochs
/// with its segments). The epochs of entries the log no longer holds (covered by the newest
/// checkpoint) come from that checkpoint. A segment without a single valid frame, the trace
/// of a write that never happened, is removed so that its epoch is not recorded. When the
/// log ends at or before the checkpoint's entry (a checkpoint received from the cluster, with
/// the log it replaced not yet removed), every segment is covered by it and is removed.
pub fn recover(
    vfs: &dyn Vfs,
    dir: &Path,
    replicated: bool,
    on_row: OnRow<'_>,
    on_commit: OnCommit<'_>,
) -> Result<Recovered> {
    let log_dir = dir.join(LOG_DIR);
    remove_leftover_temporaries(vfs, dir)?;
    let checkpoints = list_checkpoints(vfs, dir)?;
    let mut segments = list_segments(vfs, &log_dir)?;
    let checkpoint = match checkpoints.last() {
        Some((_, path)) => Some(checkpoint::load(vfs, path, on_row)?),
        None => None,
    };
    let log_mark = checkpoint.as_ref().and_then(|c| c.log.clone());
    let history = if replicated {
        segments = remove_empty_segments(vfs, &log_dir, segments)?;
        replicated_history(log_mark.as_ref().map_or(&[], |m| &m.history), &segments)
    } else {
        EpochHistory::load(vfs, dir)?
    };
    if !replicated
        && history.current().is_none()
        && (!checkpoints.is_empty() || !segments.is_empty())
    {
        return Err(Error::Corruption {
            path: dir.join(EPOCHS_FILE),
            offset: 0,
            detail: "the epoch history is missing but the directory holds a log or checkpoint"
                .into(),
        });
    }
    let base = checkpoint.as_ref().map_or(0, |c| c.csn);
    let mut replay = Replay {
        history: &history,
        base,
        next: base + 1,
        records: 0,
        on_commit,
        entries: Vec::new(),
        last_epoch: None,
    };
    let mut truncated_bytes = 0;
    for (i, segment) in segments.iter().enumerate() {
        let is_last = i + 1 == segments.len();
        let last_of_epoch = is_last || segments[i + 1].epoch != segment.epoch;
        truncated_bytes += replay.segment(vfs, segment, is_last, last_of_epoch)?;
    }
    // Everything before the newest recorded epoch was durable; the log must reach it.
    if let Some((epoch, start)) = history.current() {
        let required = start - 1;
        if required > base && replay.next <= required {
            return Err(Error::Corruption {
                path: log_dir.clone(),
                offset: 0,
                detail: format!(
                    "the log ends at CSN {}, but everything up to CSN {required} was durable \
                     before epoch {epoch} began",
                    replay.next - 1
                ),
            });
        }
    }
    if let Some(last) = segments.last() {
        // What a killed process wrote may be only in the page cache: make it durable before
        // the new epoch declares it so.
        let mut file = vfs
            .open(&last.path, OpenMode::Append)
            .map_err(|e| Error::io(format!("opening {}", last.path.display()), e))?;
        file.sync_data().map_err(|e| Error::io(format!("syncing {}", last.path.display()), e))?;
    }
    let (last_csn, replayed_records) = (replay.next - 1, replay.records);
    let (mut entries, last_epoch) = (replay.entries, replay.last_epoch);
    let mut history = history;
    if let Some(mark) = &log_mark {
        if let Some(e) = entries.iter().find(|e| e.index == mark.index && e.term != mark.term) {
            return Err(Error::Corruption {
                path: (*e.segment).clone(),
                offset: e.offset,
                detail: format!(
                    "log entry {} is of term {}, but the checkpoint at CSN {base} holds it as \
                     of term {}",
                    e.index, e.term, mark.term
                ),
            });
        }
        if entries.last().is_none_or(|e| e.index <= mark.index) {
            for segment in &segments {
                vfs.remove_file(&segment.path)
                    .map_err(|e| Error::io(format!("removing {}", segment.path.display()), e))?;
            }
            if !segments.is_empty() {
                vfs.sync_dir(&log_dir).map_err(|e| Error::io("syncing the log directory", e))?;
                tracing::info!(
                    segments = segments.len(),
                    index = mark.index,
                    "removed the log segments the checkpoint covers"
                );
            }
            entries.clear();
            history = replicated_history(&mark.history, &[]);
        }
    }
    Ok(Recovered {
        last_csn,
        replayed_records,
        history,
        checkpoint,
        truncated_bytes,
        entries,
        last_epoch,
    })
}

struct Replay<'a, 'b> {
    history: &'a EpochHistory,
    base: Csn,
    next: Csn,
    records: u64,
    on_commit: &'b mut dyn FnMut(Csn, &[WriteRef<'_>]),
    entries: Vec<EntryLocation>,
    last_epoch: Option<Epoch>,
}

impl Replay<'_, '_> {
    /// Replays one segment; returns the bytes of torn tail cut off.
    fn segment(
        &mut self,
        vfs: &dyn Vfs,
        segment: &SegmentFile,
        is_last: bool,
        last_of_epoch: bool,
    ) -> Result<u64> {
        let path = &segment.path;
        let corrupt = |offset: usize, detail: String| Error::Corruption {
            path: path.clone(),
            offset: offset as u64,
            detail,
        };
        if self.history.start_of(segment.epoch).is_none() {
            return Err(corrupt(0, format!("segment of unrecorded epoch {}", segment.epoch)));
        }
        let end = self.history.end_of(segment.epoch);
        let data = vfs::read_all(vfs, path)
            .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        let shared_path = std::sync::Arc::new(path.clone());
        let (mut offset, mut segment_next) = (0usize, segment.first_csn);
        loop {
            // `End` includes preallocated zeros never written: the clean end of the log.
            match format::frame_at(&data, offset) {
                FrameAt::End => return Ok(0),
                FrameAt::Valid { header, body_start } => {
                    if header.epoch != segment.epoch || header.first_csn != segment_next {
                        return Err(corrupt(
                            offset,
                            format!(
                            "frame of epoch {} at CSN {} where epoch {} CSN {segment_next} belongs",
                            header.epoch, header.first_csn, segment.epoch
                        ),
                        ));
                    }
                    let body_end = body_start + header.body_len as usize;
                    let records = match header.kind {
                        // A cluster's own entry: no records, nothing to replay.
                        format::FrameKind::Entry => Vec::new(),
                        format::FrameKind::Records => {
                            format::split_records(&data[body_start..body_end], header.record_count)
                                .map_err(|e| corrupt(body_start, e))?
                        }
                    };
                    for (i, payload) in records.into_iter().enumerate() {
                        let csn = header.first_csn + i as u64;
                        if csn <= self.base || end.is_some_and(|end| csn > end) {
                            continue; // in the checkpoint already, or lost with its epoch
                        }
                        if csn != self.next {
                            return Err(corrupt(
                                offset,
                                format!("log skips from CSN {} to CSN {csn}", self.next - 1),
                            ));
                        }
                        let writes =
                            format::decode_record(payload).map_err(|e| corrupt(body_start, e))?;
                        (self.on_commit)(csn, &writes);
                        self.next += 1;
                        self.records += 1;
                    }
                    self.last_epoch = Some(header.epoch);
                    if header.index > 0 {
                        let frame_len = (body_end - offset) as u64;
                        match self.entries.last_mut() {
                            Some(e) if e.index == header.index && *e.segment == *path => {
                                e.len += frame_len;
                                e.csn_end = header.last_csn() + 1;
                            }
                            last => {
                                if let Some(last) = last.filter(|l| l.index + 1 != header.index) {
                                    return Err(corrupt(
                                        offset,
                                        format!(
                                            "log entry {} follows entry {}",
                                            header.index, last.index
                                        ),
                                    ));
                                }
                                let before = self.entries.last().map_or(0, |e| e.bytes_end);
                                self.entries.push(EntryLocation {
                                    term: header.term,
                                    index: header.index,
                                    first_csn: header.first_csn,
                                    csn_end: header.last_csn() + 1,
                                    segment: shared_path.clone(),
                                    offset: offset as u64,
                                    len: frame_len,
                                    bytes_end: before + frame_len,
                                    written_at: None,
                                });
                            }
                        }
                    }
                    segment_next = header.last_csn() + 1;
                    offset = body_end;
                }
                FrameAt::Invalid(reason) => {
                    // The damaged frame belongs to the flush that began right after the last
                    // valid frame, or to that frame's own flush. Valid frames of that same
                    // flush after it mean a torn flush; one of any later flush means the
                    // damage is inside data that was synced before.
                    // A replicated log numbers flushes by entry index, a standalone one by CSN.
                    let damaged_flush_max = match self.entries.last() {
                        Some(last) => last.index + 1,
                        None => segment_next,
                    };
                    let later = format::valid_frames_after(&data, offset)
                        .into_iter()
                        .find(|(_, h)| h.flush_first > damaged_flush_max);
                    if let Some((at, h)) = later {
                        return Err(corrupt(offset, format!(
                            "damaged frame ({reason}) followed by a valid frame of a later flush at \
                             byte {at} (epoch {}, CSN {}): the durable log is corrupt", h.epoch, h.first_csn
                        )));
                    }
                    if !last_of_epoch {
                        return Err(corrupt(
                            offset,
                            format!("damaged frame ({reason}) inside a segment that was complete"),
                        ));
                    }
                    let torn = (data.len() - offset) as u64;
                    tracing::warn!(path = %path.display(), offset, torn, %reason,
                        "log ends in a torn frame; it was never durable and is discarded");
                    if is_last {
                        let mut file = vfs
                            .open(path, OpenMode::Append)
                            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
                        file.set_len(offset as u64)
                            .and_then(|()| file.sync_data())
                            .map_err(|e| Error::io(format!("truncating {}", path.display()), e))?;
                    }
                    return Ok(torn);
                }
            }
        }
    }
}

/// The epochs of a replicated log: those of its checkpoint (`from_checkpoint`, the entries it
/// covers), then each later segment's epoch from the first CSN of its first segment
/// (segments are ordered by epoch, then first CSN).
fn replicated_history(from_checkpoint: &[(Epoch, Csn)], segments: &[SegmentFile]) -> EpochHistory {
    let mut history = EpochHistory::default();
    for &(epoch, start) in from_checkpoint {
        history.push_epoch(epoch, start);
    }
    for segment in segments {
        if history.current().is_none_or(|(e, _)| e < segment.epoch) {
            history.push_epoch(segment.epoch, segment.first_csn);
        }
    }
    history
}

/// Removes the replicated log's trailing segments that hold no valid frame (created, never
/// written: a crash between creating a segment and its first write, or a cut at its first
/// entry that did not finish removing it).
fn remove_empty_segments(
    vfs: &dyn Vfs,
    log_dir: &Path,
    mut segments: Vec<SegmentFile>,
) -> Result<Vec<SegmentFile>> {
    while let Some(last) = segments.last() {
        let data = vfs::read_all(vfs, &last.path)
            .map_err(|e| Error::io(format!("reading {}", last.path.display()), e))?;
        if matches!(format::frame_at(&data, 0), FrameAt::Valid { .. }) {
            break;
        }
        if !matches!(format::frame_at(&data, 0), FrameAt::End)
            && !format::valid_frames_after(&data, 0).is_empty()
        {
            break; // a damaged first frame with data after it: recovery decides what it is
        }
        tracing::warn!(path = %last.path.display(), "removing a log segment that holds no entry");
        vfs.remove_file(&last.path)
            .map_err(|e| Error::io(format!("removing {}", last.path.display()), e))?;
        segments.pop();
    }
    vfs.sync_dir(log_dir).map_err(|e| Error::io("syncing the log directory", e))?;
    Ok(segments)
}

fn remove_leftover_temporaries(vfs: &dyn Vfs, dir: &Path) -> Result<()> {
    let names = vfs.list(dir).map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
    for name in names.iter().filter(|n| n.ends_with(".tmp")) {
        let path = dir.join(name);
        vfs.remove_file(&path).map_err(|e| Error::io(format!("removing {}", path.display()), e))?;
    }
    Ok(())
}
