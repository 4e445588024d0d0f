//! Sequences: `CREATE SEQUENCE`, `serial`, identity columns, `nextval`/`currval`/`setval`.
//!
//! A sequence's *definition* lives in the catalog (`s/<db>/<name>`), so creating, altering and
//! dropping one is transactional like any DDL. Its *values* are not, as in PostgreSQL: a
//! `nextval` is never taken back, whether its transaction commits, rolls back or is lost, so
//! values may be skipped but are never handed out twice.
//!
//! The eventually durable model makes "never twice" a question of durability: a fast
//! transaction that took value 7 may be lost in a crash after its client saw 7. So a value is
//! handed out only from a block whose end is already durable. Each sequence keeps one record
//! in the `kiln_sequences` keyspace — the last value that may have been handed out (and
//! whether it was) — written by a transaction of its own that commits *safe* at the `quorum`
//! level (one fdatasync on a standalone server) before any value of the block is given. After
//! a crash, a loss or a failover, a sequence resumes after the recorded value: the unused rest
//! of a block is skipped, nothing is repeated. Blocks start at [`BLOCK_MIN`] values (or the
//! sequence's CACHE) and double while a sequence is busy (a new block within
//! [`BUSY_WITHIN`] of the last), up to [`BLOCK_MAX`], so a bulk load waits for a durable
//! write once per many thousands of rows, and a quiet sequence skips few values on restart.
//!
//! A node remembers the blocks it reserved only for the epoch it reserved them in: after a
//! loss or a change of leader it reads the record again, since another leader may have
//! moved the sequence on meanwhile.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kiln_engine::{CommitMode, Committed, DurabilityLevel, Engine, IsolationLevel, TxnOptions};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::error::{code, Result, SqlError};
use crate::types::DataType;

/// The keyspace of the sequences' durable records (key: [`Sequence::key`], 8 bytes BE).
pub const SEQUENCES: &str = "kiln_sequences";

/// The fewest values reserved by one durable write.
pub const BLOCK_MIN: i64 = 32;
/// The most values reserved by one durable write.
pub const BLOCK_MAX: i64 = 65_536;
/// A sequence that needs a new block within this long of the last one is busy: its next
/// block is twice as large.
pub const BUSY_WITHIN: Duration = Duration::from_secs(1);

/// A sequence's definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sequence {
    /// Its id (its OID in the system catalogs).
    pub id: u64,
    /// Its record's key in [`SEQUENCES`], drawn at random when it is created: ids are
    /// transactional (a rolled-back CREATE gives its id to the next relation) but values are
    /// not, so a new sequence must never find the record of one whose creation rolled back.
    pub key: u64,
    /// The database it belongs to.
    pub database: String,
    /// Its name.
    pub name: String,
    /// smallint, integer or bigint (`AS type`): it bounds the default MAXVALUE/MINVALUE.
    pub ty: DataType,
    /// START WITH
    pub start: i64,
    /// INCREMENT BY (never 0)
    pub increment: i64,
    /// MINVALUE
    pub min: i64,
    /// MAXVALUE
    pub max: i64,
    /// CACHE (kept for display; the block size starts at it when larger than [`BLOCK_MIN`])
    pub cache: i64,
    /// CYCLE: past the bound, start again at the other one.
    pub cycle: bool,
    /// The column that owns it (`serial`, identity, `OWNED BY`): dropped with that column's
    /// table.
    pub owned_by: Option<(String, String)>,
    /// Its `COMMENT ON` text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

impl Sequence {
    /// The value after `last`, or what happens at the bound: the other bound when cycling,
    /// 2200H otherwise.
    fn after(&self, last: i64) -> Result<i64> {
        match last.checked_add(self.increment) {
            Some(v) if v >= self.min && v <= self.max => Ok(v),
            _ if self.cycle => Ok(if self.increment > 0 { self.min } else { self.max }),
            _ => Err(SqlError::new(
                code::SEQUENCE_LIMIT,
                format!(
                    "nextval: reached {} value of sequence \"{}\" ({})",
                    if self.increment > 0 { "maximum" } else { "minimum" },
                    self.name,
                    if self.increment > 0 { self.max } else { self.min }
                ),
            )),
        }
    }

    /// The value `nextval` returns after the state `(last, called)`.
    fn next_after(&self, state: Option<(i64, bool)>) -> Result<i64> {
        match state {
            None => Ok(self.start),
            Some((v, false)) => Ok(v),
            Some((v, true)) => self.after(v),
        }
    }

    /// The last value of a block of (at most) `n` values starting at `first`, stopping at the
    /// bound (a cycle starts a new block), and how many values it holds.
    fn block_from(&self, first: i64, n: i64) -> (i64, i64) {
        let room = if self.increment > 0 {
            (self.max as i128 - first as i128) / self.increment as i128
        } else {
            (first as i128 - self.min as i128) / (-(self.increment as i128))
        };
        let steps = (n as i128 - 1).min(room).max(0);
        ((first as i128 + steps * self.increment as i128) as i64, steps as i64 + 1)
    }

    /// The bounds of a sequence of type `ty` and this increment when MINVALUE/MAXVALUE are
    /// not given.
    pub fn default_bounds(ty: DataType, increment: i64) -> (i64, i64) {
        let top = type_max(ty);
        if increment > 0 {
            (1, top)
        } else {
            (-top - 1, -1)
        }
    }
}

/// The largest value of a sequence type.
pub fn type_max(ty: DataType) -> i64 {
    match ty {
        DataType::Int2 => i16::MAX as i64,
        DataType::Int4 => i32::MAX as i64,
        _ => i64::MAX,
    }
}

/// What this node knows of one sequence's values.
#[derive(Default)]
struct Runtime {
    /// The epoch the state below was read or reserved in (None: not read yet).
    epoch: Option<kiln_engine::Epoch>,
    /// The last value handed out and whether it was (PostgreSQL's last_value, is_called);
    /// None: none yet, the next is START.
    last: Option<(i64, bool)>,
    /// The current durable block, lowest and highest value: a value is handed out only from
    /// within it. A range rather than a count, so that a value computed with another
    /// INCREMENT (an ALTER SEQUENCE, committed or not, shares this runtime) never passes the
    /// recorded end.
    reserved: Option<(i64, i64)>,
    /// The size of the next block.
    block: i64,
    /// When the last block was reserved.
    reserved_at: Option<Instant>,
}

/// The sequences' values on this node.
#[derive(Default)]
pub struct Sequences {
    runtimes: Mutex<HashMap<u64, Arc<Mutex<Runtime>>>>,
}

/// What one session's `nextval` calls returned: `currval` per sequence and `lastval`.
#[derive(Default)]
pub struct SessionValues {
    /// The last value per sequence (by [`Sequence::key`]).
    pub values: HashMap<u64, i64>,
    /// The last value of any sequence.
    pub last: Option<i64>,
    /// The open transaction's id, once `txid_current()` gave it one (cleared when a
    /// transaction begins).
    pub transaction_id: Option<i64>,
}

/// The key of the record [`transaction_ids`] draws from (a user sequence's key is drawn at
/// random among 2^64).
const TRANSACTION_IDS_KEY: u64 = u64::from_be_bytes(*b"kiln/xid");

/// The server's transaction-id counter: `txid_current()` takes the next value the first
/// time a transaction asks, from durable blocks like any sequence's, so an id is never
/// given to two transactions — across restarts and losses too.
pub fn transaction_ids() -> Sequence {
    Sequence {
        id: 0,
        key: TRANSACTION_IDS_KEY,
        database: String::new(),
        name: "transaction ids".into(),
        ty: DataType::Int8,
        start: 1,
        increment: 1,
        min: 1,
        max: i64::MAX,
        cache: BLOCK_MIN,
        cycle: false,
        owned_by: None,
        comment: None,
    }
}

impl SessionValues {
    /// Records a value `nextval` returned.
    pub fn handed(&mut self, id: u64, value: i64) {
        self.values.insert(id, value);
        self.last = Some(value);
    }
}

/// Decodes a record: the last value and whether it was handed out.
fn decode(raw: &[u8]) -> Result<(i64, bool)> {
    match raw {
        [v @ .., called] if v.len() == 8 => {
            Ok((i64::from_be_bytes(v.try_into().expect("8 bytes")), *called != 0))
        }
        _ => Err(SqlError::new(code::DATA_CORRUPTED, "a sequence's record is damaged")),
    }
}

fn encode(last: i64, called: bool) -> [u8; 9] {
    let mut out = [0; 9];
    out[..8].copy_from_slice(&last.to_be_bytes());
    out[8] = u8::from(called);
    out
}

/// How a caller waits for a commit's acknowledgement (the session's wait, which a cancel
/// or a full disk ends: the record may still harden, which only skips values).
pub type Wait<'a> = &'a dyn Fn(Committed) -> Result<()>;

/// Writes a sequence's record in a transaction of its own, committed safe at the `quorum`
/// level (the one a failover keeps), and waits with `wait` until it is durable there.
fn write_durably(engine: &Engine, key: u64, last: i64, called: bool, wait: Wait) -> Result<()> {
    let options = TxnOptions { isolation: IsolationLevel::ReadCommitted, ..TxnOptions::default() };
    let mut txn = engine.begin(options)?;
    txn.put(SEQUENCES, &key.to_be_bytes(), &encode(last, called))?;
    wait(txn.commit_point(CommitMode::Safe)?.at_level(DurabilityLevel::Quorum))
}

/// Reads a sequence's record through a transaction of its own (what the node has
/// committed: every block any leader handed values from is there).
fn read_record(engine: &Engine, key: u64) -> Result<Option<(i64, bool)>> {
    let options = TxnOptions { isolation: IsolationLevel::ReadCommitted, ..TxnOptions::default() };
    let mut txn = engine.begin(options)?;
    let raw = txn.get(SEQUENCES, &key.to_be_bytes())?;
    txn.close_unused();
    raw.map(|r| decode(&r)).transpose()
}

impl Sequences {
    fn runtime(&self, key: u64) -> Arc<Mutex<Runtime>> {
        self.runtimes.lock().entry(key).or_default().clone()
    }

    /// Forgets what this node knows of a sequence (it was dropped, or its drop rolled back:
    /// the record is read again on next use).
    pub fn forget(&self, key: u64) {
        self.runtimes.lock().remove(&key);
    }

    /// `nextval`: the next value, from a durable block.
    pub fn next(&self, engine: &Engine, seq: &Sequence, wait: Wait) -> Result<i64> {
        let runtime = self.runtime(seq.key);
        let mut rt = runtime.lock();
        let epoch = engine.epoch();
        if rt.epoch != Some(epoch) {
            rt.last = read_record(engine, seq.key)?;
            rt.reserved = None;
            rt.epoch = Some(epoch);
        }
        let value = seq.next_after(rt.last)?;
        if !rt.reserved.is_some_and(|(lo, hi)| lo <= value && value <= hi) {
            let busy = rt.reserved_at.is_some_and(|t| t.elapsed() < BUSY_WITHIN);
            let floor = seq.cache.clamp(BLOCK_MIN, BLOCK_MAX);
            let block = if busy { (rt.block * 2).clamp(floor, BLOCK_MAX) } else { floor };
            let (end, _) = seq.block_from(value, block);
            write_durably(engine, seq.key, end, true, wait)?;
            rt.block = block;
            rt.reserved = Some((value.min(end), value.max(end)));
            rt.reserved_at = Some(Instant::now());
        }
        rt.last = Some((value, true));
        Ok(value)
    }

    /// `setval`: the sequence continues after `value` (`called`) or at it; durable before it
    /// returns, as a reservation is.
    pub fn set(
        &self,
        engine: &Engine,
        seq: &Sequence,
        value: i64,
        called: bool,
        wait: Wait,
    ) -> Result<()> {
        if value < seq.min || value > seq.max {
            return Err(SqlError::new(
                code::NUMERIC_OUT_OF_RANGE,
                format!(
                    "setval: value {value} is out of bounds for sequence \"{}\" ({}..{})",
                    seq.name, seq.min, seq.max
                ),
            ));
        }
        let runtime = self.runtime(seq.key);
        let mut rt = runtime.lock();
        // Values already handed out from the current block were recorded as possibly used;
        // setval moves the record explicitly, as PostgreSQL's setval moves last_value.
        write_durably(engine, seq.key, value, called, wait)?;
        rt.epoch = Some(engine.epoch());
        rt.last = Some((value, called));
        rt.reserved = None;
        rt.reserved_at = None;
        Ok(())
    }

    /// The last value and whether it was handed out, as `SELECT … FROM sequence` shows it.
    pub fn state(&self, engine: &Engine, seq: &Sequence) -> Result<(i64, bool)> {
        let runtime = self.runtime(seq.key);
        let rt = runtime.lock();
        let last =
            if rt.epoch == Some(engine.epoch()) { rt.last } else { read_record(engine, seq.key)? };
        Ok(last.unwrap_or((seq.start, false)))
    }
}

/// Parses a relation name given as text (`nextval('s')`, `'public.s'`, `'"S"'`,
/// `'db.public.s'`): unquoted parts are folded to lower case and a schema other than `public`
/// and `pg_catalog` is kept, as the catalog names its relations (`s.t`); a database named first must be `database`, the current one (any, when `None`:
/// a name checked when it was stored).
pub fn parse_name(text: &str, database: Option<&str>) -> Result<String> {
    let mut parts: Vec<String> = name_parts(text)?.into_iter().map(|(p, _)| p).collect();
    if let [catalog, _, _] = parts.as_slice() {
        if database.is_some_and(|d| d != catalog) {
            return Err(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                format!("cross-database references are not implemented: \"{text}\""),
            ));
        }
        parts.remove(0);
    }
    match parts.as_slice() {
        [name] | [_, name] if name.contains('.') => Err(crate::bind::dotted_name(name)),
        // A name in SQL is found along the search path; a stored one (no database) is
        // `public`'s.
        [name] if database.is_some() => Ok(crate::bind::search::resolve(name)),
        [name] => Ok(name.clone()),
        [schema, name] if schema == "public" || schema == "pg_catalog" => Ok(name.clone()),
        [schema, _] if schema.contains('.') => Err(crate::bind::dotted_name(schema)),
        // A relation of another schema (one that does not exist has none).
        [schema, name] => Ok(crate::catalog::qualified(schema, name)),
        _ => Err(SqlError::new(
            code::SYNTAX,
            format!("improper relation name (too many dotted names): {text}"),
        )),
    }
}

/// The dotted parts of a name given as text, each with whether it was quoted: quoted parts
/// as written (`""` is one quote), others folded to lower case and trimmed.
pub fn name_parts(text: &str) -> Result<Vec<(String, bool)>> {
    let mut parts = Vec::new();
    let mut chars = text.trim().chars().peekable();
    loop {
        let mut part = String::new();
        let quoted = chars.peek() == Some(&'"');
        if quoted {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        part.push('"');
                    }
                    Some('"') => break,
                    Some(c) => part.push(c),
                    None => return Err(invalid_name(text)),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == '.' {
                    break;
                }
                part.extend(c.to_lowercase());
                chars.next();
            }
            part = part.trim().to_string();
        }
        if part.is_empty() {
            return Err(invalid_name(text));
        }
        parts.push((part, quoted));
        match chars.next() {
            None => break,
            Some('.') => continue,
            Some(_) => return Err(invalid_name(text)),
        }
    }
    Ok(parts)
}

fn invalid_name(text: &str) -> SqlError {
    SqlError::new(code::INVALID_NAME, format!("invalid name syntax: \"{text}\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(increment: i64, min: i64, max: i64, cycle: bool) -> Sequence {
        Sequence {
            id: 1,
            key: 7,
            database: "kiln".into(),
            name: "s".into(),
            ty: DataType::Int8,
            start: if increment > 0 { min } else { max },
            increment,
            min,
            max,
            cache: 1,
            cycle,
            owned_by: None,
            comment: None,
        }
    }

    #[test]
    fn blocks_stop_at_the_bound() {
        let s = seq(1, 1, 10, false);
        assert_eq!(s.block_from(1, 32), (10, 10));
        assert_eq!(s.block_from(5, 3), (7, 3));
        let s = seq(-2, -9, -1, false);
        assert_eq!(s.block_from(-1, 32), (-9, 5));
        let s = seq(i64::MAX, 1, i64::MAX, false);
        assert_eq!(s.block_from(1, 32), (1, 1));
    }

    #[test]
    fn after_the_bound_a_sequence_cycles_or_fails() {
        assert_eq!(seq(1, 1, 3, true).after(3).unwrap(), 1);
        assert_eq!(seq(-1, 1, 3, true).after(1).unwrap(), 3);
        assert_eq!(seq(1, 1, 3, false).after(3).unwrap_err().code, code::SEQUENCE_LIMIT);
        assert_eq!(
            seq(1, 1, i64::MAX, false).after(i64::MAX).unwrap_err().code,
            code::SEQUENCE_LIMIT
        );
        assert_eq!(seq(1, 1, 3, false).next_after(None).unwrap(), 1);
        assert_eq!(seq(1, 1, 3, false).next_after(Some((2, false))).unwrap(), 2);
    }

    #[test]
    fn names_parse_as_postgresql_reads_regclass_text() {
        assert_eq!(parse_name("t_id_seq", None).unwrap(), "t_id_seq");
        assert_eq!(parse_name("Public.T_Id_Seq", None).unwrap(), "t_id_seq");
        assert_eq!(parse_name("\"My\"\"Seq\"", None).unwrap(), "My\"Seq");
        assert_eq!(parse_name("public.\"S\"", None).unwrap(), "S");
        assert_eq!(parse_name("other.s", None).unwrap(), "other.s");
        assert_eq!(parse_name("\"a.b\"", None).unwrap_err().code, code::FEATURE_NOT_SUPPORTED);
        assert_eq!(parse_name("db.public.s", Some("db")).unwrap(), "s");
        assert_eq!(parse_name("db.public.s", None).unwrap(), "s");
        assert_eq!(parse_name("a.b.c", Some("db")).unwrap_err().code, code::FEATURE_NOT_SUPPORTED);
        assert_eq!(parse_name("db.other.s", Some("db")).unwrap(), "other.s");
        assert_eq!(parse_name("a.b.c.d", None).unwrap_err().code, code::SYNTAX);
        assert_eq!(parse_name("", None).unwrap_err().code, code::INVALID_NAME);
        assert_eq!(parse_name("\"open", None).unwrap_err().code, code::INVALID_NAME);
    }
}
