//! Step 4, reading a table: the rows an access path names (full scans, point lookups,
//! key and index ranges, scans in key order that stop early), read from the engine in
//! batches that check for interrupts and the statement's row limit.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use kiln_engine::Scan;

use crate::catalog::{Index, Table};
use crate::encoding::{decode_row, prefix_end};
use crate::error::{code, Result, SqlError};
use crate::expr::*;
use crate::plan::*;
use crate::types::{DataType, Row, Value};

use crate::exec::select::{passes, TxnCell};

/// Evaluates a key expression and converts it to the key column's type; `None` when the
/// value cannot equal any key (NULL, or a fractional number for an integer key).
pub(crate) fn key_value(e: &Expr, ty: DataType, row: &[Value], ctx: &Ctx) -> Result<Option<Value>> {
    let v = e.eval(row, ctx)?;
    Ok(match (v, ty) {
        (Value::Null, _) => None,
        (Value::Int(i), t) if t.is_integer() => Some(Value::Int(i)),
        (Value::Float(f), t) if t.is_integer() => {
            if f.fract() == 0.0 && f.abs() < 9.2e18 {
                Some(Value::Int(f as i64))
            } else {
                None
            }
        }
        (Value::Numeric(d), t) if t.is_integer() => {
            if d.is_integer() {
                d.to_i64().map(Value::Int)
            } else {
                None
            }
        }
        (Value::Int(i), DataType::Float4 | DataType::Float8) => Some(Value::Float(i as f64)),
        (Value::Int(i), DataType::Numeric(_)) => Some(Value::Numeric(i.into())),
        (Value::Numeric(d), DataType::Numeric(_)) => Some(Value::Numeric(d)),
        (Value::Text(s), t) if t.is_string() => Some(Value::Text(match t {
            DataType::Char(_) => s.trim_end_matches(' ').to_string(),
            _ => s,
        })),
        (Value::Text(s), t) => Value::parse_in(&s, t, ctx.env.style()).ok(),
        (v, t) => match v.clone().cast_in(t, ctx.env.style()) {
            Ok(c) if c.sql_cmp(&v) == Some(Ordering::Equal) => Some(c),
            _ => None,
        },
    })
}

/// Limits on what a statement may hold in memory.
#[derive(Debug, Clone)]
pub struct ExecLimits {
    /// Maximum rows a result may hold.
    pub rows_max: usize,
    /// The session running the statement: its interrupt flag stops the statement.
    pub activity: Option<Arc<crate::pg::activity::Activity>>,
}

impl Default for ExecLimits {
    fn default() -> Self {
        ExecLimits { rows_max: 10_000_000, activity: None }
    }
}

impl ExecLimits {
    /// Fails with 57014 when the statement was canceled (a cancel request,
    /// statement_timeout, pg_cancel_backend, a client that went away), 57P01 when the
    /// session is being terminated. Every executor loop calls it.
    pub fn check(&self) -> Result<()> {
        match &self.activity {
            Some(a) => a.check_interrupt(),
            None => Ok(()),
        }
    }
}

/// Rows a scan reads from the engine at a time, checking for an interrupt and the row limit
/// between batches.
pub(crate) const SCAN_BATCH_ROWS: usize = 4096;

/// Every key and value in a range, read in batches so that a long scan can be interrupted and
/// is refused once it passes the statement's row limit (53200).
pub(crate) fn scan_chunked(
    txn: &TxnCell,
    keyspace: &str,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    limits: &ExecLimits,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut resume: Option<Vec<u8>> = None;
    loop {
        limits.check()?;
        let from = match &resume {
            Some(k) => Bound::Excluded(k.as_slice()),
            None => start,
        };
        let batch =
            txn.borrow_mut().scan(keyspace, Scan::bounds(from, end).limit(SCAN_BATCH_ROWS))?;
        let full = batch.len() == SCAN_BATCH_ROWS;
        resume = batch.last().map(|(k, _)| k.clone());
        out.extend(batch);
        if out.len() > limits.rows_max {
            return Err(too_many_rows(limits));
        }
        if !full {
            return Ok(out);
        }
    }
}

pub(crate) fn too_many_rows(limits: &ExecLimits) -> SqlError {
    SqlError::new(
        code::OUT_OF_MEMORY,
        format!("the statement would hold more than {} rows in memory", limits.rows_max),
    )
    .hint("Add a WHERE clause or LIMIT, or raise the server's rows limit.")
}

/// The rows of a table item, found by its access path; each is (primary key, row).
pub fn table_rows(
    table: &Table,
    access: &Access,
    txn: &TxnCell,
    outer: &[Value],
    ctx: &Ctx,
    limits: &ExecLimits,
) -> Result<Vec<(Vec<u8>, Vec<Value>)>> {
    let ks = table.keyspace();
    let width = table.columns.len();
    match access {
        Access::Full => {
            let rows = scan_chunked(txn, &ks, Bound::Unbounded, Bound::Unbounded, limits)?;
            rows.into_iter().map(|(k, v)| Ok((k, decode_row(&v, width)?))).collect()
        }
        Access::Key(key) => key_rows(table, key, txn, outer, ctx, limits),
    }
}

/// Where a key access reads: one key, or a range of keys.
enum KeyRange {
    Point(Vec<u8>),
    Range(Bound<Vec<u8>>, Bound<Vec<u8>>),
}

/// The keys and ranges of a key access, in key order, with its values evaluated.
fn key_ranges(table: &Table, key: &KeyAccess, outer: &[Value], ctx: &Ctx) -> Result<Vec<KeyRange>> {
    // Each alternative's encoded prefix; one that no key can equal (a NULL) is dropped.
    let mut prefixes = Vec::with_capacity(key.prefixes.len());
    'alternatives: for values in &key.prefixes {
        let mut encoded = Vec::new();
        for (e, &ty) in values.iter().zip(&key.types) {
            match key_value(e, ty, outer, ctx)? {
                Some(v) => crate::encoding::encode_key_value(&mut encoded, &v)?,
                None => continue 'alternatives,
            }
        }
        prefixes.push(encoded);
    }
    prefixes.sort();
    prefixes.dedup();
    if key.is_points(table) {
        return Ok(prefixes.into_iter().map(KeyRange::Point).collect());
    }
    let bound = |b: &Option<(Expr, bool)>| -> Result<Option<Option<(Value, bool)>>> {
        let Some((e, inclusive)) = b else { return Ok(Some(None)) };
        let ty = key.types[key.prefixes[0].len()];
        Ok(key_value(e, ty, outer, ctx)?.map(|v| Some((v, *inclusive))))
    };
    let (Some(lower), Some(upper)) = (bound(&key.lower)?, bound(&key.upper)?) else {
        return Ok(vec![]); // a NULL bound: no key is in range
    };
    let mut ranges = Vec::with_capacity(prefixes.len());
    for prefix in prefixes {
        let mut start = Bound::Included(prefix.clone());
        let mut end = match prefix_end(&prefix) {
            Some(e) if !prefix.is_empty() => Bound::Excluded(e),
            _ => Bound::Unbounded,
        };
        if let Some((v, inclusive)) = &lower {
            let mut k = prefix.clone();
            crate::encoding::encode_key_value(&mut k, v)?;
            start = if *inclusive {
                Bound::Included(k)
            } else {
                match prefix_end(&k) {
                    Some(e) => Bound::Included(e),
                    None => continue,
                }
            };
        }
        if let Some((v, inclusive)) = &upper {
            let mut k = prefix.clone();
            crate::encoding::encode_key_value(&mut k, v)?;
            end = if *inclusive {
                match prefix_end(&k) {
                    Some(e) => Bound::Excluded(e),
                    None => Bound::Unbounded,
                }
            } else {
                Bound::Excluded(k)
            };
        }
        ranges.push(KeyRange::Range(start, end));
    }
    Ok(ranges)
}

/// The rows of a key access, in key order.
fn key_rows(
    table: &Table,
    key: &KeyAccess,
    txn: &TxnCell,
    outer: &[Value],
    ctx: &Ctx,
    limits: &ExecLimits,
) -> Result<Vec<(Vec<u8>, Vec<Value>)>> {
    let ks = table.keyspace();
    let width = table.columns.len();
    let mut out = Vec::new();
    for range in key_ranges(table, key, outer, ctx)? {
        limits.check()?;
        match (range, &key.index) {
            (KeyRange::Point(k), _) => {
                if let Some(v) = txn.borrow_mut().get(&ks, &k)? {
                    out.push((k, decode_row(&v, width)?));
                }
            }
            (KeyRange::Range(start, end), None) => {
                for (k, v) in scan_chunked(txn, &ks, as_ref(&start), as_ref(&end), limits)? {
                    out.push((k, decode_row(&v, width)?));
                }
            }
            (KeyRange::Range(start, end), Some(index)) => {
                let entries =
                    scan_chunked(txn, &index.keyspace(), as_ref(&start), as_ref(&end), limits)?;
                for (entry, pk) in entries {
                    // Unique entries keep the primary key as the value; others append it to
                    // the key.
                    let pk = if pk.is_empty() { index_entry_pk(table, index, &entry)? } else { pk };
                    if let Some(v) = txn.borrow_mut().get(&ks, &pk)? {
                        out.push((pk, decode_row(&v, width)?));
                    }
                }
            }
        }
        if out.len() > limits.rows_max {
            return Err(too_many_rows(limits));
        }
    }
    Ok(out)
}

/// The first `wanted` rows, in primary key order (descending when `reverse`), of a key
/// access with one alternative, that pass `filters`: reads batches from the engine and stops
/// as soon as it has them (`ORDER BY key LIMIT n`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn ordered_key_rows(
    table: &Table,
    key: &KeyAccess,
    reverse: bool,
    wanted: usize,
    filters: &[Expr],
    txn: &TxnCell,
    ctx: &Ctx,
    limits: &ExecLimits,
) -> Result<Vec<Row>> {
    let ks = table.keyspace();
    let width = table.columns.len();
    let mut out = Vec::new();
    for range in key_ranges(table, key, &[], ctx)? {
        let (mut start, mut end) = match range {
            KeyRange::Point(k) => (Bound::Included(k.clone()), Bound::Included(k)),
            KeyRange::Range(start, end) => (start, end),
        };
        // Small batches first: most such queries want a row or a few.
        let mut batch_rows = (wanted + 1).clamp(2, SCAN_BATCH_ROWS);
        loop {
            limits.check()?;
            let mut scan = Scan::bounds(as_ref(&start), as_ref(&end)).limit(batch_rows);
            if reverse {
                scan = scan.reverse();
            }
            let batch = txn.borrow_mut().scan(&ks, scan)?;
            let full = batch.len() == batch_rows;
            let last = batch.last().map(|(k, _)| k.clone());
            for (_, v) in batch {
                let row = decode_row(&v, width)?;
                if passes(filters, &row, ctx)? {
                    out.push(row);
                    if out.len() >= wanted {
                        return Ok(out);
                    }
                }
            }
            match last {
                Some(k) if full => {
                    if reverse {
                        end = Bound::Excluded(k);
                    } else {
                        start = Bound::Excluded(k);
                    }
                }
                _ => break,
            }
            batch_rows = (batch_rows * 4).min(SCAN_BATCH_ROWS);
        }
    }
    Ok(out)
}

pub(crate) fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The primary key stored at the end of a non-unique index entry: its length is the last
/// two bytes.
pub(crate) fn index_entry_pk(_table: &Table, _index: &Index, entry: &[u8]) -> Result<Vec<u8>> {
    if entry.len() < 2 {
        return Err(SqlError::new(code::DATA_CORRUPTED, "an index entry is damaged"));
    }
    let n = u16::from_be_bytes([entry[entry.len() - 2], entry[entry.len() - 1]]) as usize;
    if entry.len() < 2 + n {
        return Err(SqlError::new(code::DATA_CORRUPTED, "an index entry is damaged"));
    }
    Ok(entry[entry.len() - 2 - n..entry.len() - 2].to_vec())
}
