//! Checkpoints: a consistent snapshot of every live row at one durable CSN.
//!
//! ```text
//! header:  u64 magic "KILNCKP1", u32 format version (1), u32 epoch, u64 CSN
//! rows:    u8 tag 1, u16 keyspace length, keyspace, u32 key length, key, u32 value length, value
//! trailer: u8 tag 0xFF, u64 row count, u32 CRC-32C of every byte before it
//! ```
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

const VERSION: u32 = 1;
const HEADER_BYTES: usize = 24;
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
    /// Starts the checkpoint of `csn` (durable in `epoch`) in `dir`.
    pub fn create(vfs: &dyn Vfs, dir: &Path, epoch: Epoch, csn: Csn) -> std::io::Result<Self> {
        let tmp_path = dir.join(format!("checkpoint-{csn:020}.tmp"));
        match vfs.remove_file(&tmp_path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// The epoch in which the CSN was durable.
    pub epoch: Epoch,
    /// The CSN the checkpoint reflects.
    pub csn: Csn,
    /// Number of rows.
    pub rows: u64,
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
        if version != VERSION {
            return Err(format!("unsupported format version {version}"));
        }
        Ok((c.u32()?, c.u64()?))
    })()
    .map_err(|e| corrupt(0, e))?;
    let (epoch, csn) = header;
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
            Some(count) if count == rows => return Ok(CheckpointInfo { epoch, csn, rows }),
            Some(count) => {
                return Err(corrupt(offset, format!("trailer says {count} rows, found {rows}")))
            }
        }
    }
}
