//! The narrow file-system interface of the durability layer.
//!
//! Every byte the log, the epoch history and the checkpoints read or write goes through
//! [`Vfs`], so tests can substitute [`FaultyVfs`] and make fsync fail, the disk fill up, writes
//! come back short, or the "power" go out after a given number of bytes (leaving a torn write
//! on disk), deterministically.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

/// An open file of the durability layer.
pub trait VfsFile: Send {
    /// Appends up to `buf.len()` bytes and returns how many were written (possibly fewer).
    /// Only for files opened with [`OpenMode::Append`] or [`OpenMode::CreateNew`].
    fn append(&mut self, buf: &[u8]) -> io::Result<usize>;
    /// Writes up to `buf.len()` bytes at `offset` (overwriting, or extending the file) and
    /// returns how many were written (possibly fewer). Only for files opened with
    /// [`OpenMode::Write`].
    fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<usize>;
    /// Reads from the current read position (the start of the file when opened).
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize>;
    /// Reads up to `buf.len()` bytes at `offset`, without moving the read position.
    fn read_at(&mut self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// Makes the file's data durable (fdatasync).
    fn sync_data(&mut self) -> io::Result<()>;
    /// Truncates or extends the file.
    fn set_len(&mut self, len: u64) -> io::Result<()>;
    /// The file's length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// True when the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
}

/// How to open a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// Read an existing file.
    Read,
    /// Append to an existing file, creating it if missing.
    Append,
    /// Create a new, empty file for appending; fail if it exists.
    CreateNew,
    /// Read and write at any offset, creating the file if missing.
    Write,
}

/// The file-system operations the durability layer needs.
pub trait Vfs: Send + Sync {
    /// Opens a file.
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>>;
    /// Creates a directory and its parents.
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// The names of the entries of a directory, unsorted.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Removes a file.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Atomically renames a file.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes a directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// The real file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsVfs;

struct OsFile(File);

impl VfsFile for OsFile {
    fn append(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<usize> {
        std::os::unix::fs::FileExt::write_at(&self.0, buf, offset)
    }
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
    fn read_at(&mut self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        std::os::unix::fs::FileExt::read_at(&self.0, buf, offset)
    }
    fn sync_data(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
}

fn open_os_file(path: &Path, mode: OpenMode) -> io::Result<OsFile> {
    let mut options = OpenOptions::new();
    match mode {
        OpenMode::Read => options.read(true),
        OpenMode::Append => options.read(true).append(true).create(true),
        OpenMode::CreateNew => options.read(true).append(true).create_new(true),
        OpenMode::Write => options.read(true).write(true).create(true),
    };
    Ok(OsFile(options.open(path)?))
}

impl Vfs for OsVfs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
        Ok(Box::new(open_os_file(path, mode)?))
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::create_dir_all(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)? {
            if let Ok(name) = entry?.file_name().into_string() {
                names.push(name);
            }
        }
        Ok(names)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

/// Appends all of `buf`, looping over short writes.
pub fn append_all(file: &mut dyn VfsFile, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        match file.append(buf) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "write returned 0")),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes all of `buf` at `offset`, looping over short writes.
pub fn write_all_at(file: &mut dyn VfsFile, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match file.write_at(buf, offset) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "write returned 0")),
            Ok(n) => {
                buf = &buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Fills `buf` from `offset`, looping over short reads; an early end of file is an error.
pub fn read_exact_at(
    file: &mut dyn VfsFile,
    mut buf: &mut [u8],
    mut offset: u64,
) -> io::Result<()> {
    while !buf.is_empty() {
        match file.read_at(buf, offset) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "file ends early")),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Removes `path` if it is there.
pub fn remove_if_exists(vfs: &dyn Vfs, path: &Path) -> io::Result<()> {
    match vfs.remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Whether `e` says the disk (or the user's quota) is full: a condition that passes when
/// space returns, unlike other write errors.
pub fn is_no_space(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
        || matches!(e.kind(), io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded)
}

/// Reads a whole file through the interface.
pub fn read_all(vfs: &dyn Vfs, path: &Path) -> io::Result<Vec<u8>> {
    let mut file = vfs.open(path, OpenMode::Read)?;
    let mut data = Vec::with_capacity(file.len()? as usize);
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        match file.read(&mut chunk) {
            Ok(0) => return Ok(data),
            Ok(n) => data.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The switches of a [`FaultyVfs`], shared with the test that drives it.
#[derive(Debug, Default)]
pub struct Faults {
    /// Fail this many upcoming fsyncs (of files and directories) with EIO.
    pub fail_syncs: AtomicU64,
    /// Fail every fsync while set.
    pub fail_all_syncs: AtomicBool,
    /// While set, at most this many more bytes fit on the "disk"; writes that need more space
    /// write what fits and then fail with ENOSPC. Overwriting bytes a file already holds
    /// needs no space. `u64::MAX` means unlimited.
    pub free_bytes: AtomicU64,
    /// The disk behaves like a copy-on-write file system (btrfs, ZFS): overwriting bytes a
    /// file already holds needs free space too, so preallocated space does not help.
    pub copy_on_write: AtomicBool,
    /// Every append writes at most half its buffer (at least one byte).
    pub short_writes: AtomicBool,
    /// After this many more appended bytes the "power goes out": the append that crosses the
    /// line writes only what fits, and every later operation fails. `u64::MAX`: never.
    pub crash_after_bytes: AtomicU64,
    /// Set once the simulated power loss happened.
    pub crashed: AtomicBool,
    /// Faults apply only to paths containing this text (all paths when empty).
    pub path_filter: Mutex<String>,
    /// How many fsyncs succeeded (for tests to wait on progress).
    pub syncs_done: AtomicU64,
    /// How many bytes were written to files the faults apply to (zeros included).
    pub bytes_written: AtomicU64,
}

impl Faults {
    /// No faults.
    pub fn new() -> Arc<Faults> {
        Arc::new(Faults {
            free_bytes: AtomicU64::new(u64::MAX),
            crash_after_bytes: AtomicU64::new(u64::MAX),
            ..Default::default()
        })
    }

    fn applies(&self, path: &Path) -> bool {
        let filter = self.path_filter.lock();
        filter.is_empty() || path.to_string_lossy().contains(filter.as_str())
    }

    fn check_crashed(&self) -> io::Result<()> {
        if self.crashed.load(Ordering::SeqCst) {
            return Err(io::Error::other("simulated power loss"));
        }
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        self.check_crashed()?;
        if self.fail_all_syncs.load(Ordering::SeqCst) {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        let take = self.fail_syncs.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            if n > 0 {
                Some(n - 1)
            } else {
                None
            }
        });
        if take.is_ok() {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        self.syncs_done.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// How many bytes of a write of `want` bytes, whose first `in_place` bytes overwrite
    /// bytes the file already holds, may be written, or the error to return.
    fn admit(&self, want: usize, in_place: usize) -> io::Result<usize> {
        self.check_crashed()?;
        let mut allowed = want;
        if self.short_writes.load(Ordering::SeqCst) && want > 1 {
            allowed = want / 2;
        }
        let free = self.free_bytes.load(Ordering::SeqCst);
        if free != u64::MAX && allowed > in_place {
            if free == 0 && in_place == 0 {
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
            allowed = allowed.min(in_place.saturating_add(free as usize));
            self.free_bytes.fetch_sub((allowed - in_place) as u64, Ordering::SeqCst);
        }
        let budget = self.crash_after_bytes.load(Ordering::SeqCst);
        if budget != u64::MAX {
            if (allowed as u64) >= budget {
                self.crash_after_bytes.store(0, Ordering::SeqCst);
                self.crashed.store(true, Ordering::SeqCst);
                self.bytes_written.fetch_add(budget, Ordering::SeqCst);
                return Ok(budget as usize);
            }
            self.crash_after_bytes.fetch_sub(allowed as u64, Ordering::SeqCst);
        }
        self.bytes_written.fetch_add(allowed as u64, Ordering::SeqCst);
        Ok(allowed)
    }
}

/// A [`Vfs`] over the real file system that injects the faults its [`Faults`] switch on.
pub struct FaultyVfs {
    faults: Arc<Faults>,
}

impl FaultyVfs {
    /// A fault-injecting file system driven by `faults`.
    pub fn new(faults: Arc<Faults>) -> FaultyVfs {
        FaultyVfs { faults }
    }
}

struct FaultyFile {
    inner: OsFile,
    path: PathBuf,
    faults: Arc<Faults>,
}

impl VfsFile for FaultyFile {
    fn append(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.faults.applies(&self.path) {
            self.faults.check_crashed()?;
            return self.inner.append(buf);
        }
        let allowed = self.faults.admit(buf.len(), 0)?;
        let written = if allowed > 0 { self.inner.append(&buf[..allowed])? } else { 0 };
        if self.faults.crashed.load(Ordering::SeqCst) {
            return Err(io::Error::other("simulated power loss"));
        }
        Ok(written)
    }
    fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<usize> {
        if !self.faults.applies(&self.path) {
            self.faults.check_crashed()?;
            return self.inner.write_at(buf, offset);
        }
        let in_place = if self.faults.copy_on_write.load(Ordering::SeqCst) {
            0
        } else {
            self.inner.len()?.saturating_sub(offset).min(buf.len() as u64) as usize
        };
        let allowed = self.faults.admit(buf.len(), in_place)?;
        let written = if allowed > 0 { self.inner.write_at(&buf[..allowed], offset)? } else { 0 };
        if self.faults.crashed.load(Ordering::SeqCst) {
            return Err(io::Error::other("simulated power loss"));
        }
        Ok(written)
    }
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.faults.check_crashed()?;
        self.inner.read(buf)
    }
    fn read_at(&mut self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.faults.check_crashed()?;
        self.inner.read_at(buf, offset)
    }
    fn sync_data(&mut self) -> io::Result<()> {
        if self.faults.applies(&self.path) {
            self.faults.sync()?;
        } else {
            self.faults.check_crashed()?;
        }
        self.inner.sync_data()
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.faults.check_crashed()?;
        let before = self.inner.len()?;
        self.inner.set_len(len)?;
        // Cutting a file back frees its space, as on a real disk.
        if len < before && self.faults.applies(&self.path) {
            let _ = self.faults.free_bytes.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |f| {
                (f != u64::MAX).then(|| f.saturating_add(before - len))
            });
        }
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
}

impl Vfs for FaultyVfs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
        self.faults.check_crashed()?;
        Ok(Box::new(FaultyFile {
            inner: open_os_file(path, mode)?,
            path: path.to_path_buf(),
            faults: self.faults.clone(),
        }))
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.faults.check_crashed()?;
        OsVfs.create_dir_all(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        OsVfs.list(dir)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.faults.check_crashed()?;
        OsVfs.remove_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.faults.check_crashed()?;
        OsVfs.rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if self.faults.applies(dir) {
            self.faults.sync()?;
        } else {
            self.faults.check_crashed()?;
        }
        OsVfs.sync_dir(dir)
    }
}
