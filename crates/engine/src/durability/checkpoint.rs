//! Checkpoints: a consistent snapshot of every live row at one durable CSN.
//!
//! ```text
//! header:  u64 magic "KILNCKP1", u32 format version (2), u32 epoch, u64 CSN
//!          version 2 only: u64 log term, u64 log index (both 0 in a standalone engine's),
//!          u32 epoch count, each (u32 epoch, u64 first CSN), u32 length, the cluster's bytes
//! rows:    u8 tag 1, u16 keyspace length, keyspace, u32 key length, key, u32 value length, value
//! trailer: u8 tag 0xFF, u64 row count, u32 CRC-32C of every byte before it
//! ```
//!
//! A replicated log's checkpoint says where in the log it stands (the last entry whose
//! records it holds) and carries the epoch history up to that entry, because the log before
//! it may be removed: with it goes the only other record of those epochs. The cluster's bytes
//! (its membership at that entry) are stored and handed back, never interpreted. Version 1
//! files (no log position) are still read.
//!
//! A checkpoint is written to `checkpoint-<CSN>.tmp`, synced, renamed to
//! `checkpoint-<CSN>.ckpt` and the directory synced; only then may older checkpoints and the
//! log before the CSN be removed. A crash at any point leaves either the old checkpoint with
//! its log, or the new one.

use std::path::{Path, PathBuf};

use super::format::{Cursor, CHECKPOINT_END, CHECKPOINT_MAGIC, CHECKPOINT_ROW};
use super::vfs::{self, OpenMode, Vfs, VfsFile};
use crate::error::{Error, Result};
use crate::id::{Csn, Epoch};

const VERSION: u32 = 2;
const HEADER_BYTES: usize = 24;
/// The most epochs a checkpoint's history may hold, and the largest cluster bytes: bounds a
/// damaged or hostile file's header (a checkpoint received from another node) cannot exceed.
const HISTORY_EPOCHS_MAX: usize = 1 << 20;
const CLUSTER_BYTES_MAX: usize = 64 << 20;

/// Where a replicated log's checkpoint stands in the log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogMark {
    /// The term of the last entry whose records the checkpoint holds.
    pub term: u64,
    /// The index of that entry.
    pub index: u64,
    /// The epoch history up to that entry, as (epoch, first CSN).
    pub history: Vec<(Epoch, Csn)>,
    /// The cluster's own bytes for that entry (stored, never interpreted).
    pub cluster: std::sync::Arc<[u8]>,
}
const TRAILER_BYTES: usize = 13;
const WRITE_BUFFER_BYTES: usize = 1 << 20;

/// File name of the checkpoint at `csn`.
pub fn checkpoint_name(csn: Csn) -> String {
    format!("checkpoint-{csn:020}.ckpt")
}

/// Parses a checkpoint file name into its CSN.
pub fn parse_checkpoint_name(name: &str) -> Option<Csn> {
    let digits = name.strip_prefix("checkpoint-")?.strip_suffix(".ckpt")?;
    (digits.len() == 20).then(|| digits.parse().ok()).flatten()
}

/// Writes one checkpoint, streaming.
pub struct CheckpointWriter {
    file: Box<dyn VfsFile>,
    tmp_path: PathBuf,
    final_path: PathBuf,
    dir: PathBuf,
    buffer: Vec<u8>,
    crc: u32,
    rows: u64,
}

impl CheckpointWriter {
    /// Starts the checkpoint of `csn` (durable in `epoch`) in `dir`; `log` is a replicated
    /// log's position.
    pub fn create(
        vfs: &dyn Vfs,
        dir: &Path,
        epoch: Epoch,
        csn: Csn,
        log: Option<&LogMark>,
    ) -> std::io::Result<Self> {
        let tmp_path = dir.join(format!("checkpoint-{csn:020}.tmp"));
        vfs::remove_if_exists(vfs, &tmp_path)?;
        let file = vfs.open(&tmp_path, OpenMode::CreateNew)?;
        let mut writer = CheckpointWriter {
            file,
            tmp_path,
            final_path: dir.join(checkpoint_name(csn)),
            dir: dir.to_path_buf(),
            buffer: Vec::with_capacity(WRITE_BUFFER_BYTES),
            crc: 0,
            rows: 0,
        };
        writer.buffer.extend_from_slice(&CHECKPOINT_MAGIC);
        writer.buffer.extend_from_slice(&VERSION.to_le_bytes());
        writer.buffer.extend_from_slice(&epoch.to_le_bytes());
        writer.buffer.extend_from_slice(&csn.to_le_bytes());
        let none = LogMark::default();
        let log = log.unwrap_or(&none);
        writer.buffer.extend_from_slice(&log.term.to_le_bytes());
        writer.buffer.extend_from_slice(&log.index.to_le_bytes());
        writer.buffer.extend_from_slice(&(log.history.len() as u32).to_le_bytes());
        for &(epoch, start) in &log.history {
            writer.buffer.extend_from_slice(&epoch.to_le_bytes());
            writer.buffer.extend_from_slice(&start.to_le_bytes());
        }
        writer.buffer.extend_from_slice(&(log.cluster.len() as u32).to_le_bytes());
        writer.buffer.extend_from_slice(&log.cluster);
        Ok(writer)
    }

    /// Adds one live row.
    pub fn add(&mut self, keyspace: &str, key: &[u8], value: &[u8]) -> std::io::Result<()> {
        self.buffer.push(CHECKPOINT_ROW);
        self.buffer.extend_from_slice(&(keyspace.len() as u16).to_le_bytes());
        self.buffer.extend_from_slice(keyspace.as_bytes());
        self.buffer.extend_from_slice(&(key.len() as u32).to_le_bytes());
        self.buffer.extend_from_slice(key);
        self.buffer.extend_from_slice(&(value.len() as u32).to_le_bytes());
        self.buffer.extend_from_slice(value);
        self.rows += 1;
        if self.buffer.len() >= WRITE_BUFFER_BYTES {
            self.flush_buffer()?;
        }
        Ok(())
    }

    fn flush_buffer(&mut self) -> std::io::Result<()> {
        self.crc = crc32c::crc32c_append(self.crc, &self.buffer);
        vfs::append_all(self.file.as_mut(), &self.buffer)?;
        self.buffer.clear();
        Ok(())
    }

    /// Writes the trailer, syncs, and atomically publishes the checkpoint.
    pub fn finish(mut self, vfs: &dyn Vfs) -> std::io::Result<u64> {
        self.buffer.push(CHECKPOINT_END);
        self.buffer.extend_from_slice(&self.rows.to_le_bytes());
        self.flush_buffer()?;
        let crc = self.crc.to_le_bytes();
        vfs::append_all(self.file.as_mut(), &crc)?;
        self.file.sync_data()?;
        vfs.rename(&self.tmp_path, &self.final_path)?;
        vfs.sync_dir(&self.dir)?;
        Ok(self.rows)
    }
}

/// A loaded checkpoint's identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// The epoch in which the CSN was durable.
    pub epoch: Epoch,
    /// The CSN the checkpoint reflects.
    pub csn: Csn,
    /// Number of rows.
    pub rows: u64,
    /// A replicated log's checkpoint: where it stands in the log.
    pub log: Option<LogMark>,
}

/// Reads and verifies the checkpoint at `path`, calling `apply` for every row.
/// Any damage is [`Error::Corruption`]: a published checkpoint is durable data.
pub fn load(
    vfs: &dyn Vfs,
    path: &Path,
    mut apply: impl FnMut(&str, &[u8], &[u8]),
) -> Result<CheckpointInfo> {
    let data = vfs::read_all(vfs, path)
        .map_err(|e| Error::io(format!("reading checkpoint {}", path.display()), e))?;
    let corrupt = |offset: usize, detail: String| Error::Corruption {
        path: path.to_path_buf(),
        offset: offset as u64,
        detail: format!("checkpoint damaged: {detail}"),
    };
    if data.len() < HEADER_BYTES + TRAILER_BYTES {
        return Err(corrupt(0, format!("{} bytes is too short", data.len())));
    }
    let (body, crc) = data.split_at(data.len() - 4);
    if crc32c::crc32c(body) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
        return Err(corrupt(data.len() - 4, "checksum mismatch".into()));
    }
    let mut c = Cursor::new(body);
    let header = (|| -> std::result::Result<_, String> {
        if c.bytes(8)? != CHECKPOINT_MAGIC {
            return Err("bad magic".into());
        }
        let version = c.u32()?;
        if version != 1 && version != VERSION {
            return Err(format!("unsupported format version {version}"));
        }
        let (epoch, csn) = (c.u32()?, c.u64()?);
        if version == 1 {
            return Ok((epoch, csn, None));
        }
        let (term, index) = (c.u64()?, c.u64()?);
        let epochs = c.u32()? as usize;
        if epochs > HISTORY_EPOCHS_MAX {
            return Err(format!("{epochs} epochs is beyond the limit of {HISTORY_EPOCHS_MAX}"));
        }
        let mut history = Vec::with_capacity(epochs.min(1024));
        for _ in 0..epochs {
            history.push((c.u32()?, c.u64()?));
        }
        if history.windows(2).any(|w| w[0].0 >= w[1].0 || w[0].1 > w[1].1) {
            return Err("the epoch history is out of order".into());
        }
        let len = c.u32()? as usize;
        if len > CLUSTER_BYTES_MAX {
            return Err(format!("{len} cluster bytes is beyond the limit of {CLUSTER_BYTES_MAX}"));
        }
        let cluster = std::sync::Arc::from(c.bytes(len)?);
        let log = (index > 0).then_some(LogMark { term, index, history, cluster });
        Ok((epoch, csn, log))
    })()
    .map_err(|e| corrupt(0, e))?;
    let (epoch, csn, log) = header;
    let mut rows = 0u64;
    loop {
        let offset = c.position();
        let step = (|| -> std::result::Result<Option<u64>, String> {
            match c.u8()? {
                CHECKPOINT_ROW => {
                    let ks_len = c.u16()? as usize;
                    let keyspace = std::str::from_utf8(c.bytes(ks_len)?)
                        .map_err(|_| "keyspace name is not UTF-8".to_string())?;
                    let key_len = c.u32()? as usize;
                    let key = c.bytes(key_len)?;
                    let value_len = c.u32()? as usize;
                    let value = c.bytes(value_len)?;
                    apply(keyspace, key, value);
                    Ok(None)
                }
                CHECKPOINT_END => {
                    let count = c.u64()?;
                    if !c.is_empty() {
                        return Err("bytes after the trailer".into());
                    }
                    Ok(Some(count))
                }
                tag => Err(format!("unknown entry tag {tag}")),
            }
        })()
        .map_err(|e| corrupt(offset, e))?;
        match step {
            None => rows += 1,
            Some(count) if count == rows => return Ok(CheckpointInfo { epoch, csn, rows, log }),
            Some(count) => {
                return Err(corrupt(offset, format!("trailer says {count} rows, found {rows}")))
            }
        }
    }
}

/// A published checkpoint, open for reading whole: what a replica too far behind the log to
/// catch up from it is sent. The open file stays readable when a newer checkpoint replaces
/// it.
pub struct CheckpointFile {
    /// What the checkpoint holds.
    pub info: CheckpointInfo,
    file: Box<dyn VfsFile>,
    len: u64,
}

impl std::fmt::Debug for CheckpointFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckpointFile")
            .field("info", &self.info)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl CheckpointFile {
    /// Opens the checkpoint at `path`, which `info` describes.
    pub(crate) fn open(vfs: &dyn Vfs, path: &Path, info: CheckpointInfo) -> std::io::Result<Self> {
        let file = vfs.open(path, OpenMode::Read)?;
        let len = file.len()?;
        Ok(CheckpointFile { info, file, len })
    }

    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it is empty (never, for a published checkpoint).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Reads `buf.len()` bytes at `offset`.
    pub fn read_exact_at(&mut self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        vfs::read_exact_at(self.file.as_mut(), buf, offset)
    }

    /// Copies the whole file into `to`, then syncs it.
    pub(crate) fn copy_into(&mut self, to: &mut dyn VfsFile) -> std::io::Result<()> {
        let mut buf = vec![0u8; WRITE_BUFFER_BYTES];
        let mut at = 0;
        while at < self.len {
            let n = (self.len - at).min(buf.len() as u64) as usize;
            self.read_exact_at(&mut buf[..n], at)?;
            vfs::append_all(to, &buf[..n])?;
            at += n as u64;
        }
        to.sync_data()
    }
}

/// A checkpoint arriving from another node, written to a temporary file of the data
/// directory (removed at the next open if it is never finished).
pub struct CheckpointSink {
    file: Box<dyn VfsFile>,
    path: PathBuf,
    vfs: std::sync::Arc<dyn Vfs>,
    written: u64,
}

/// The largest checkpoint accepted from another node.
pub const RECEIVED_BYTES_MAX: u64 = 1 << 40;

impl CheckpointSink {
    pub(crate) fn create(
        vfs: std::sync::Arc<dyn Vfs>,
        dir: &Path,
        nonce: u64,
    ) -> std::io::Result<Self> {
        let path = dir.join(format!("received-{nonce:020}.tmp"));
        vfs::remove_if_exists(vfs.as_ref(), &path)?;
        let file = vfs.open(&path, OpenMode::CreateNew)?;
        Ok(CheckpointSink { file, path, vfs, written: 0 })
    }

    /// Appends the next bytes.
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.written += bytes.len() as u64;
        if self.written > RECEIVED_BYTES_MAX {
            return Err(Error::InvalidArgument(format!(
                "a checkpoint of more than {RECEIVED_BYTES_MAX} bytes is refused"
            )));
        }
        vfs::append_all(self.file.as_mut(), bytes)
            .map_err(|e| Error::io(format!("writing {}", self.path.display()), e))
    }

    /// Syncs and verifies what arrived (checksum, format, row count) and opens it for
    /// reading. A damaged checkpoint is [`Error::Corruption`].
    pub fn finish(mut self) -> Result<CheckpointFile> {
        let path = self.path.clone();
        self.file.sync_data().map_err(|e| Error::io(format!("syncing {}", path.display()), e))?;
        let info = load(self.vfs.as_ref(), &path, |_, _, _| {})?;
        CheckpointFile::open(self.vfs.as_ref(), &path, info)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))
    }
}

impl Drop for CheckpointSink {
    fn drop(&mut self) {
        // Finished or not, the temporary file has no further use: a finished one is open for
        // reading, which keeps its bytes.
        let _ = self.vfs.remove_file(&self.path);
    }
}
