//! Byte layouts of the log, the epoch history and checkpoints (see `docs/storage-format.md`).
//!
//! All integers are little-endian and fixed-size. Every unit that is read back is covered by a
//! CRC-32C, and every length is checked against an explicit maximum before it is trusted.
//!
//! ```text
//! log frame (one per flush, or more when a flush is large):
//!   0  u64 magic "KILNFRM2"    8  u32 header crc (bytes 12..64)
//!   12 u32 body length         16 u32 epoch        20 u32 record count
//!   24 u64 first CSN           32 u32 body crc     36 u32 kind (0 records, 1 entry)
//!   40 u64 flush number: the first CSN (standalone) or entry index (replicated) of the flush
//!   48 u64 term                56 u64 entry index  (both 0 in a standalone log)
//!   64 body: record count × ( u32 payload length, payload ), or an entry's opaque bytes
//! commit record payload (one committed update transaction; CSN = first CSN + index):
//!   u32 write count, then per write:
//!   u8 op (1 put, 2 delete), u16 keyspace length, keyspace, u32 key length, key,
//!   [put only: u32 value length, value]
//! ```

use crate::id::{Csn, Epoch};

/// Magic of a log frame.
pub const FRAME_MAGIC: [u8; 8] = *b"KILNFRM2";
/// Size of a frame header.
pub const FRAME_HEADER_BYTES: usize = 64;
/// The largest frame body the reader accepts.
pub const FRAME_BODY_BYTES_MAX: u32 = 256 << 20;
/// A flush cuts a new frame once the body reaches this size.
pub const FRAME_BODY_BYTES_TARGET: usize = 4 << 20;

const OP_PUT: u8 = 1;
const OP_DELETE: u8 = 2;
const OP_CLEAR: u8 = 3;

/// What one write of a commit record does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOp<'a> {
    /// Sets the key to this value.
    Put(&'a [u8]),
    /// Deletes the key.
    Delete,
    /// Deletes every key of the keyspace that exists when the record is applied (the key is
    /// empty). A record lists a keyspace's clear before that keyspace's other writes.
    Clear,
}

/// One write of a commit record, borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteRef<'a> {
    /// The keyspace.
    pub keyspace: &'a str,
    /// The key (empty for a clear).
    pub key: &'a [u8],
    /// What the write does.
    pub op: WriteOp<'a>,
}

impl<'a> WriteRef<'a> {
    /// The new value of a put, `None` for a delete or a clear.
    pub fn value(&self) -> Option<&'a [u8]> {
        match self.op {
            WriteOp::Put(v) => Some(v),
            WriteOp::Delete | WriteOp::Clear => None,
        }
    }
}

/// Encoded size of one put (`Some`) or delete (`None`); a clear encodes as a delete of the
/// empty key.
pub fn write_encoded_len(keyspace: &str, key: &[u8], value: Option<&[u8]>) -> usize {
    1 + 2 + keyspace.len() + 4 + key.len() + value.map_or(0, |v| 4 + v.len())
}

/// Appends a commit record (length prefix and payload) for `writes` to `out`.
pub fn encode_record<'a>(
    out: &mut Vec<u8>,
    write_count: usize,
    writes: impl Iterator<Item = WriteRef<'a>>,
) {
    let start = out.len();
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&(write_count as u32).to_le_bytes());
    let mut seen = 0;
    for w in writes {
        seen += 1;
        out.push(match w.op {
            WriteOp::Put(_) => OP_PUT,
            WriteOp::Delete => OP_DELETE,
            WriteOp::Clear => OP_CLEAR,
        });
        out.extend_from_slice(&(w.keyspace.len() as u16).to_le_bytes());
        out.extend_from_slice(w.keyspace.as_bytes());
        let key: &[u8] = if w.op == WriteOp::Clear { &[] } else { w.key };
        out.extend_from_slice(&(key.len() as u32).to_le_bytes());
        out.extend_from_slice(key);
        if let WriteOp::Put(value) = w.op {
            out.extend_from_slice(&(value.len() as u32).to_le_bytes());
            out.extend_from_slice(value);
        }
    }
    assert_eq!(seen, write_count, "write count mismatch");
    let payload_len = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&payload_len.to_le_bytes());
}

/// A little reader over a byte slice that fails instead of panicking.
pub struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// Reads from the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Cursor { data, pos: 0 }
    }
    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }
    /// True when everything was consumed.
    pub fn is_empty(&self) -> bool {
        self.pos == self.data.len()
    }
    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.data.len() - self.pos < n {
            return Err(format!("truncated: wanted {n} bytes at {}", self.pos));
        }
        let out = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }
    /// The next byte.
    pub fn u8(&mut self) -> Result<u8, String> {
        Ok(self.bytes(1)?[0])
    }
    /// The next little-endian u16.
    pub fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.bytes(2)?.try_into().expect("2 bytes")))
    }
    /// The next little-endian u32.
    pub fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.bytes(4)?.try_into().expect("4 bytes")))
    }
    /// The next little-endian u64.
    pub fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.bytes(8)?.try_into().expect("8 bytes")))
    }
}

/// Decodes a commit record's payload into its writes.
pub fn decode_record(payload: &[u8]) -> Result<Vec<WriteRef<'_>>, String> {
    let mut c = Cursor::new(payload);
    let count = c.u32()? as usize;
    // Each write takes at least 7 bytes, which bounds the count before allocating.
    if count > payload.len() / 7 + 1 {
        return Err(format!("write count {count} does not fit in {} bytes", payload.len()));
    }
    let mut writes = Vec::with_capacity(count);
    for _ in 0..count {
        let op = c.u8()?;
        let ks_len = c.u16()? as usize;
        let keyspace = std::str::from_utf8(c.bytes(ks_len)?)
            .map_err(|_| "keyspace name is not UTF-8".to_string())?;
        let key_len = c.u32()? as usize;
        let key = c.bytes(key_len)?;
        let op = match op {
            OP_PUT => {
                let len = c.u32()? as usize;
                WriteOp::Put(c.bytes(len)?)
            }
            OP_DELETE => WriteOp::Delete,
            OP_CLEAR if key.is_empty() => WriteOp::Clear,
            OP_CLEAR => return Err("a keyspace clear with a key".into()),
            other => return Err(format!("unknown write op {other}")),
        };
        writes.push(WriteRef { keyspace, key, op });
    }
    if !c.is_empty() {
        return Err("trailing bytes after the last write".into());
    }
    Ok(writes)
}

/// What a frame's body holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// Commit records at consecutive CSNs starting at `first_csn` (at least one).
    Records,
    /// A replicated log entry that is not data (a cluster's own bookkeeping): opaque bytes the
    /// engine stores and returns but never interprets. It has no records; its `first_csn` is
    /// the CSN the next record will have.
    Entry,
}

/// A frame's header fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// Length of the body.
    pub body_len: u32,
    /// Epoch of every record in the frame.
    pub epoch: Epoch,
    /// Number of records (0 for an entry frame).
    pub record_count: u32,
    /// CSN of the first record (of the next record, for an entry frame).
    pub first_csn: Csn,
    /// CRC-32C of the body.
    pub body_crc: u32,
    /// What the body holds.
    pub kind: FrameKind,
    /// The flush (one write and one fdatasync) that wrote this frame, by its first position:
    /// the first CSN of the flush in a standalone log, its first entry index in a replicated
    /// one. Flush numbers grow from flush to flush. Recovery uses them to tell a flush that was
    /// torn (damage followed only by frames of the same flush) from damage to synced data.
    pub flush_first: u64,
    /// The replicated log entry's term (0 in a standalone log).
    pub term: u64,
    /// The replicated log entry's index (0 in a standalone log). A large entry spans several
    /// consecutive frames with the same index.
    pub index: u64,
}

impl FrameHeader {
    /// CSN of the last record (one before `first_csn` for an entry frame).
    pub fn last_csn(&self) -> Csn {
        self.first_csn + self.record_count as u64 - 1
    }
}

/// Where a frame sits in a replicated log: (term, index); `None` in a standalone log.
pub type EntryTag = Option<(u64, u64)>;

/// Appends a frame for `body` to `out`: `count` records already encoded back to back, or,
/// with `count` 0, a replicated entry's opaque bytes.
#[allow(clippy::too_many_arguments)]
pub fn encode_frame(
    out: &mut Vec<u8>,
    epoch: Epoch,
    flush_first: u64,
    first_csn: Csn,
    count: u32,
    tag: EntryTag,
    body: &[u8],
) {
    let kind = if count == 0 { FrameKind::Entry } else { FrameKind::Records };
    assert!(kind == FrameKind::Records || tag.is_some(), "an entry frame outside a replicated log");
    assert!(flush_first > 0 && first_csn > 0, "frame positions start at 1");
    assert!(tag.is_some() || flush_first <= first_csn, "a standalone frame outside its flush");
    assert!(body.len() <= FRAME_BODY_BYTES_MAX as usize, "frame body too large");
    let (term, index) = tag.unwrap_or((0, 0));
    let start = out.len();
    out.extend_from_slice(&FRAME_MAGIC);
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&epoch.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&first_csn.to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(body).to_le_bytes());
    out.extend_from_slice(&(kind as u32).to_le_bytes());
    out.extend_from_slice(&flush_first.to_le_bytes());
    out.extend_from_slice(&term.to_le_bytes());
    out.extend_from_slice(&index.to_le_bytes());
    let header_crc = crc32c::crc32c(&out[start + 12..start + FRAME_HEADER_BYTES]);
    out[start + 8..start + 12].copy_from_slice(&header_crc.to_le_bytes());
    out.extend_from_slice(body);
}

/// What is at an offset of a log segment.
#[derive(Debug, PartialEq, Eq)]
pub enum FrameAt {
    /// A valid frame.
    Valid {
        /// Its header.
        header: FrameHeader,
        /// Where its body starts: the body is `data[body_start..][..header.body_len]`.
        body_start: usize,
    },
    /// The end of the data, or nothing but zeros up to it: space preallocated ahead of the log
    /// and not written yet.
    End,
    /// Not a valid frame, with the reason.
    Invalid(String),
}

/// Parses and verifies the frame at `offset` (header checksum, bounds, body checksum, and the
/// record framing inside the body).
pub fn frame_at(data: &[u8], offset: usize) -> FrameAt {
    if offset == data.len() {
        return FrameAt::End;
    }
    let rest = &data[offset..];
    if rest[..rest.len().min(FRAME_HEADER_BYTES)].iter().all(|&b| b == 0) {
        // A zeroed header before anything but zeros is judged like a damaged frame.
        return if rest.iter().all(|&b| b == 0) {
            FrameAt::End
        } else {
            FrameAt::Invalid("a zeroed frame header before data".into())
        };
    }
    if rest.len() < FRAME_HEADER_BYTES {
        return FrameAt::Invalid(format!("{} bytes, less than a frame header", rest.len()));
    }
    if rest[..8] != FRAME_MAGIC {
        return FrameAt::Invalid("no frame magic".into());
    }
    let mut c = Cursor::new(&rest[8..FRAME_HEADER_BYTES]);
    let header_crc = c.u32().expect("in bounds");
    if crc32c::crc32c(&rest[12..FRAME_HEADER_BYTES]) != header_crc {
        return FrameAt::Invalid("frame header checksum mismatch".into());
    }
    let body_len = c.u32().expect("in bounds");
    let epoch = c.u32().expect("in bounds");
    let record_count = c.u32().expect("in bounds");
    let first_csn = c.u64().expect("in bounds");
    let body_crc = c.u32().expect("in bounds");
    let kind = match c.u32().expect("in bounds") {
        0 => FrameKind::Records,
        1 => FrameKind::Entry,
        other => return FrameAt::Invalid(format!("unknown frame kind {other}")),
    };
    let header = FrameHeader {
        body_len,
        epoch,
        record_count,
        first_csn,
        body_crc,
        kind,
        flush_first: c.u64().expect("in bounds"),
        term: c.u64().expect("in bounds"),
        index: c.u64().expect("in bounds"),
    };
    let replicated = header.index > 0;
    if header.body_len > FRAME_BODY_BYTES_MAX
        || (header.kind == FrameKind::Records) != (header.record_count > 0)
        || (header.kind == FrameKind::Entry && !replicated)
        || header.first_csn == 0
        || header.flush_first == 0
        || (replicated && header.flush_first > header.index)
        // Term 0 is a cluster's setup, before any leader: its entries hold no records.
        || (replicated && header.term == 0 && header.kind == FrameKind::Records)
        || (!replicated && (header.term != 0 || header.flush_first > header.first_csn))
    {
        return FrameAt::Invalid(format!("frame header out of bounds: {header:?}"));
    }
    let body_end = FRAME_HEADER_BYTES + header.body_len as usize;
    if rest.len() < body_end {
        return FrameAt::Invalid(format!("frame body cut short at {} of {body_end}", rest.len()));
    }
    let body = &rest[FRAME_HEADER_BYTES..body_end];
    if crc32c::crc32c(body) != header.body_crc {
        return FrameAt::Invalid("frame body checksum mismatch".into());
    }
    if header.kind == FrameKind::Records {
        if let Err(e) = split_records(body, header.record_count) {
            return FrameAt::Invalid(e);
        }
    }
    FrameAt::Valid { header, body_start: offset + FRAME_HEADER_BYTES }
}

/// Splits a frame body into its record payloads.
pub fn split_records(body: &[u8], count: u32) -> Result<Vec<&[u8]>, String> {
    let mut c = Cursor::new(body);
    let mut records = Vec::with_capacity(count.min(1 << 16) as usize);
    for _ in 0..count {
        let len = c.u32()? as usize;
        records.push(c.bytes(len)?);
    }
    if !c.is_empty() {
        return Err("trailing bytes after the last record".into());
    }
    Ok(records)
}

/// Every valid frame strictly after `offset`, found by scanning for the magic.
pub fn valid_frames_after(data: &[u8], offset: usize) -> Vec<(usize, FrameHeader)> {
    let mut found = Vec::new();
    let mut pos = offset + 1;
    let finder = memchr::memmem::Finder::new(&FRAME_MAGIC);
    while pos + FRAME_HEADER_BYTES <= data.len() {
        let Some(at) = finder.find(&data[pos..]) else { break };
        pos += at;
        if let FrameAt::Valid { header, body_start } = frame_at(data, pos) {
            found.push((pos, header));
            pos = body_start + header.body_len as usize;
        } else {
            pos += 1;
        }
    }
    found
}

/// Magic of the epoch history file.
pub const EPOCHS_MAGIC: [u8; 8] = *b"KILNEPO1";

/// Encodes the epoch history: (epoch, first CSN of the epoch) pairs, ascending.
pub fn encode_epochs(epochs: &[(Epoch, Csn)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + epochs.len() * 12);
    out.extend_from_slice(&EPOCHS_MAGIC);
    out.extend_from_slice(&(epochs.len() as u32).to_le_bytes());
    for &(epoch, start) in epochs {
        out.extend_from_slice(&epoch.to_le_bytes());
        out.extend_from_slice(&start.to_le_bytes());
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Decodes and verifies the epoch history.
pub fn decode_epochs(data: &[u8]) -> Result<Vec<(Epoch, Csn)>, String> {
    if data.len() < 16 {
        return Err(format!("{} bytes, too short", data.len()));
    }
    let (body, crc) = data.split_at(data.len() - 4);
    if crc32c::crc32c(body) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
        return Err("checksum mismatch".into());
    }
    let mut c = Cursor::new(body);
    if c.bytes(8)? != EPOCHS_MAGIC {
        return Err("bad magic".into());
    }
    let count = c.u32()? as usize;
    if body.len() != 12 + count * 12 {
        return Err(format!("length {} does not match {count} epochs", body.len()));
    }
    let mut epochs = Vec::with_capacity(count);
    for _ in 0..count {
        epochs.push((c.u32()?, c.u64()?));
    }
    for pair in epochs.windows(2) {
        let ((e1, s1), (e2, s2)) = (pair[0], pair[1]);
        if e2 != e1 + 1 || s2 < s1 {
            return Err(format!("epochs out of order: {e1}@{s1} then {e2}@{s2}"));
        }
    }
    Ok(epochs)
}

/// Magic of a checkpoint file.
pub const CHECKPOINT_MAGIC: [u8; 8] = *b"KILNCKP1";
/// Checkpoint entry tag: a live row.
pub const CHECKPOINT_ROW: u8 = 1;
/// Checkpoint entry tag: the trailer.
pub const CHECKPOINT_END: u8 = 0xFF;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_and_frame_round_trip() {
        let mut body = Vec::new();
        let writes = [
            WriteRef { keyspace: "kv", key: b"", op: WriteOp::Clear },
            WriteRef { keyspace: "kv", key: b"a", op: WriteOp::Put(b"1") },
            WriteRef { keyspace: "kv", key: b"b", op: WriteOp::Delete },
        ];
        encode_record(&mut body, 3, writes.iter().copied());
        encode_record(&mut body, 0, std::iter::empty());
        let mut data = Vec::new();
        encode_frame(&mut data, 3, 15, 17, 2, None, &body);
        let FrameAt::Valid { header, body_start } = frame_at(&data, 0) else { panic!() };
        assert_eq!((header.epoch, header.first_csn, header.last_csn()), (3, 17, 18));
        assert_eq!(
            (header.flush_first, header.kind, header.term, header.index),
            (15, FrameKind::Records, 0, 0)
        );
        let records = split_records(&data[body_start..], header.record_count).unwrap();
        assert_eq!(decode_record(records[0]).unwrap(), writes);
        assert!(decode_record(records[1]).unwrap().is_empty());
        assert_eq!(frame_at(&data, data.len()), FrameAt::End);
    }

    #[test]
    fn every_single_bit_flip_and_truncation_is_detected() {
        let mut body = Vec::new();
        let w = [WriteRef { keyspace: "t", key: b"key", op: WriteOp::Put(b"value") }];
        encode_record(&mut body, 1, w.iter().copied());
        let mut data = Vec::new();
        encode_frame(&mut data, 1, 1, 1, 1, None, &body);
        // A replicated log's data frame and its opaque entry frame, back to back.
        encode_frame(&mut data, 2, 7, 2, 1, Some((3, 7)), &body);
        encode_frame(&mut data, 2, 8, 3, 0, Some((3, 8)), b"opaque entry");
        let FrameAt::Valid { header, body_start } =
            frame_at(&data, data.len() - 12 - FRAME_HEADER_BYTES)
        else {
            panic!()
        };
        assert_eq!(
            (header.kind, header.term, header.index, header.first_csn),
            (FrameKind::Entry, 3, 8, 3)
        );
        assert_eq!(&data[body_start..], b"opaque entry");
        for bit in 0..data.len() * 8 {
            let mut damaged = data.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            let at = [0, 1, 2].map(|i| nth_frame(&data, i));
            let hit = at.iter().rposition(|&o| o <= bit / 8).expect("inside a frame");
            assert!(matches!(frame_at(&damaged, at[hit]), FrameAt::Invalid(_)), "bit {bit}");
        }
        let at = [0, 1, 2].map(|i| nth_frame(&data, i));
        for len in 1..data.len() {
            let cut = at[at.iter().rposition(|&o| o < len).expect("inside a frame")];
            if at.contains(&len) {
                continue; // a cut between frames leaves whole frames
            }
            assert!(matches!(frame_at(&data[..len], cut), FrameAt::Invalid(_)), "len {len}");
        }
    }

    /// Offset of the `n`-th valid frame of `data`.
    fn nth_frame(data: &[u8], n: usize) -> usize {
        let mut offset = 0;
        for _ in 0..n {
            let FrameAt::Valid { header, body_start } = frame_at(data, offset) else { panic!() };
            offset = body_start + header.body_len as usize;
        }
        offset
    }

    #[test]
    fn frame_headers_that_mix_standalone_and_replicated_fields_are_invalid() {
        let body = {
            let mut b = Vec::new();
            encode_record(&mut b, 0, std::iter::empty());
            b
        };
        let mut frame = Vec::new();
        encode_frame(&mut frame, 1, 1, 1, 1, Some((1, 1)), &body);
        let set = |f: &mut Vec<u8>, at: usize, v: &[u8]| {
            f[at..at + v.len()].copy_from_slice(v);
            let crc = crc32c::crc32c(&f[12..FRAME_HEADER_BYTES]);
            f[8..12].copy_from_slice(&crc.to_le_bytes());
        };
        for (at, value) in [
            (48, 0u64.to_le_bytes()), // an index without a term
            (56, 0u64.to_le_bytes()), // a term without an index (a standalone frame with a term)
            (40, 2u64.to_le_bytes()), // a flush that starts after its own entry
        ] {
            let mut damaged = frame.clone();
            set(&mut damaged, at, &value);
            assert!(matches!(frame_at(&damaged, 0), FrameAt::Invalid(_)), "field at {at}");
        }
        let mut entry_with_records = frame.clone();
        set(&mut entry_with_records, 36, &1u32.to_le_bytes());
        assert!(matches!(frame_at(&entry_with_records, 0), FrameAt::Invalid(_)));
    }

    #[test]
    fn epochs_round_trip_and_reject_damage() {
        let epochs = vec![(1, 1), (2, 40), (3, 40), (4, 91)];
        let data = encode_epochs(&epochs);
        assert_eq!(decode_epochs(&data).unwrap(), epochs);
        for i in 0..data.len() {
            let mut damaged = data.clone();
            damaged[i] ^= 0x10;
            assert!(decode_epochs(&damaged).is_err(), "byte {i}");
        }
    }

    #[test]
    fn garbage_records_are_errors_not_panics() {
        for payload in [
            &b""[..],
            b"\xff\xff\xff\xff",
            b"\x01\x00\x00\x00\x07",
            b"\x01\0\0\0\x01\xff\xff",
            // A clear that names a key.
            b"\x01\0\0\0\x03\x01\0t\x01\0\0\0k",
        ] {
            assert!(decode_record(payload).is_err());
        }
    }
}
