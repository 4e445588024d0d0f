//! Step 4 for queries: runs a [`SelectPlan`] — scans by access path (in batches, checking for
//! interrupts), nested-loop joins, then grouping, projection, DISTINCT, ORDER BY and LIMIT.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::Arc;

use kiln_engine::{Scan, Transaction};

use crate::catalog::{Index, Table};
use crate::encoding::{decode_row, prefix_end};
use crate::error::{code, Result, SqlError};
use crate::expr::*;
use crate::plan::*;
use crate::types::{DataType, Row, Value};

/// The statement's transaction, shared by the executor and the subqueries it runs (each
/// borrows it only around an engine call).
pub type TxnCell<'t> = RefCell<&'t mut Transaction>;

/// Runs subqueries with the statement's transaction.
pub struct Exec<'a, 't> {
    /// The transaction.
    pub txn: &'a TxnCell<'t>,
    /// The statement's limits.
    pub limits: &'a ExecLimits,
    /// Values of the uncorrelated subqueries run so far, by plan (a subquery the planner
    /// copied, into a key and the filter it came from, still runs once).
    done: RefCell<HashMap<*const SelectPlan, SubqueryValues>>,
}

impl<'a, 't> Exec<'a, 't> {
    /// A runner for one statement.
    pub fn new(txn: &'a TxnCell<'t>, limits: &'a ExecLimits) -> Exec<'a, 't> {
        Exec { txn, limits, done: RefCell::default() }
    }
}

impl SubqueryRunner for Exec<'_, '_> {
    fn run(&self, plan: &SelectPlan, ctx: &Ctx) -> Result<Vec<Row>> {
        execute_select(plan, self.txn, ctx, self.limits)
    }

    fn run_once(&self, plan: &SubPlan, ctx: &Ctx) -> Result<SubqueryValues> {
        let key = Arc::as_ptr(&plan.0);
        if let Some(values) = self.done.borrow().get(&key) {
            return Ok(values.clone());
        }
        let top = Ctx { outer: &[], ..*ctx };
        let values = subquery_values(execute_select(&plan.0, self.txn, &top, self.limits)?);
        self.done.borrow_mut().insert(key, values.clone());
        Ok(values)
    }
}

/// A joined row with the primary key of the first FROM item's row (when it is a table).
pub type KeyedRow = (Option<Vec<u8>>, Row);

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
            if d.fract().is_zero() {
                i64::try_from(d).ok().map(Value::Int)
            } else {
                None
            }
        }
        (Value::Int(i), DataType::Float4 | DataType::Float8) => Some(Value::Float(i as f64)),
        (Value::Int(i), DataType::Numeric(_)) => {
            Some(Value::Numeric(rust_decimal::Decimal::from(i)))
        }
        (Value::Numeric(d), DataType::Numeric(_)) => Some(Value::Numeric(d)),
        (Value::Text(s), t) if t.is_string() => Some(Value::Text(match t {
            DataType::Char(_) => s.trim_end_matches(' ').to_string(),
            _ => s,
        })),
        (Value::Text(s), t) => Value::parse(&s, t).ok(),
        (v, t) => match v.clone().cast(t) {
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
    let columns = key.columns(table);
    // Each alternative's encoded prefix; one that no key can equal (a NULL) is dropped.
    let mut prefixes = Vec::with_capacity(key.prefixes.len());
    'alternatives: for values in &key.prefixes {
        let mut encoded = Vec::new();
        for (e, &c) in values.iter().zip(columns) {
            match key_value(e, table.columns[c].ty, outer, ctx)? {
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
        let ty = table.columns[columns[key.prefixes[0].len()]].ty;
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
fn ordered_key_rows(
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

/// Runs the FROM/WHERE part: every joined row that passes the filters, with the primary key
/// of the first item's row when it is a table (for UPDATE, DELETE and FOR UPDATE).
pub fn execute_from(
    plan: &SelectPlan,
    txn: &TxnCell,
    ctx: &Ctx,
    limits: &ExecLimits,
) -> Result<Vec<KeyedRow>> {
    let mut out = Vec::new();
    for c in &plan.constant_filters {
        if !c.eval_bool(&[], ctx)? {
            return Ok(out);
        }
    }
    let mut row = vec![Value::Null; plan.width];
    join_level(plan, 0, &mut row, None, txn, ctx, limits, &mut out)?;
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn join_level(
    plan: &SelectPlan,
    level: usize,
    row: &mut Vec<Value>,
    first_key: Option<&[u8]>,
    txn: &TxnCell,
    ctx: &Ctx,
    limits: &ExecLimits,
    out: &mut Vec<KeyedRow>,
) -> Result<()> {
    let Some(item) = plan.from.get(level) else {
        if out.len() >= limits.rows_max {
            return Err(SqlError::new(
                code::OUT_OF_MEMORY,
                format!("the statement would hold more than {} rows in memory", limits.rows_max),
            )
            .hint("Add a WHERE clause or LIMIT, or raise the server's rows limit."));
        }
        out.push((first_key.map(<[u8]>::to_vec), row.clone()));
        return Ok(());
    };
    limits.check()?;
    let candidates: Vec<KeyedRow> = match &item.source {
        Source::Table(table, access) => table_rows(table, access, txn, row, ctx, limits)?
            .into_iter()
            .map(|(k, r)| (Some(k), r))
            .collect(),
        Source::Rows(rows) => rows.iter().map(|r| (None, r.clone())).collect(),
        Source::Values(rows) => rows
            .iter()
            .map(|r| Ok((None, r.iter().map(|e| e.eval(row, ctx)).collect::<Result<Row>>()?)))
            .collect::<Result<_>>()?,
        // A derived table inside a correlated subquery (at the top level `exec::init` has
        // already run it): it may use the enclosing row, so it runs here.
        Source::Derived(sub) => {
            execute_select(sub, txn, ctx, limits)?.into_iter().map(|r| (None, r)).collect()
        }
        Source::SetOp(left, right, kind, all) => {
            let a = execute_select(left, txn, ctx, limits)?;
            let b = execute_select(right, txn, ctx, limits)?;
            set_operation(a, b, *kind, *all).into_iter().map(|r| (None, r)).collect()
        }
        Source::Series(start, stop, step) => {
            let int = |e: &Expr| -> Result<i64> {
                match e.eval(row, ctx)? {
                    Value::Int(i) => Ok(i),
                    Value::Null => Ok(i64::MIN),
                    v => match v.cast(DataType::Int8)? {
                        Value::Int(i) => Ok(i),
                        _ => Ok(i64::MIN),
                    },
                }
            };
            let (a, b) = (int(start)?, int(stop)?);
            let s = match step {
                Some(s) => int(s)?,
                None => 1,
            };
            if s == 0 {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER_VALUE,
                    "step size cannot equal zero",
                ));
            }
            let mut v = Vec::new();
            if a != i64::MIN && b != i64::MIN {
                let mut i = a;
                while (s > 0 && i <= b) || (s < 0 && i >= b) {
                    if v.len().is_multiple_of(SCAN_BATCH_ROWS) {
                        limits.check()?;
                    }
                    if v.len() >= limits.rows_max {
                        return Err(SqlError::new(
                            code::OUT_OF_MEMORY,
                            "generate_series would produce too many rows",
                        ));
                    }
                    v.push((None, vec![Value::Int(i)]));
                    i = match i.checked_add(s) {
                        Some(n) => n,
                        None => break,
                    };
                }
            }
            v
        }
    };
    let mut matched = false;
    for (key, cand) in candidates {
        limits.check()?;
        row[item.offset..item.offset + item.width].clone_from_slice(&cand[..item.width]);
        let mut ok = true;
        for c in &item.on {
            if !c.eval_bool(row, ctx)? {
                ok = false;
                break;
            }
        }
        if !ok {
            continue;
        }
        matched = true;
        if !passes(&item.filters, row, ctx)? {
            continue;
        }
        let fk = if level == 0 { key.as_deref() } else { first_key };
        join_level(plan, level + 1, row, fk, txn, ctx, limits, out)?;
    }
    if !matched && item.join == JoinKind::Left {
        for v in &mut row[item.offset..item.offset + item.width] {
            *v = Value::Null;
        }
        if passes(&item.filters, row, ctx)? {
            join_level(plan, level + 1, row, first_key, txn, ctx, limits, out)?;
        }
    }
    Ok(())
}

pub(crate) fn passes(filters: &[Expr], row: &[Value], ctx: &Ctx) -> Result<bool> {
    for f in filters {
        if !f.eval_bool(row, ctx)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Runs a SELECT to completion.
pub fn execute_select(
    plan: &SelectPlan,
    txn: &TxnCell,
    ctx: &Ctx,
    limits: &ExecLimits,
) -> Result<Vec<Vec<Value>>> {
    if offset_limit(plan, ctx)?.1 == Some(0) {
        return Ok(Vec::new()); // LIMIT 0 reads nothing and evaluates nothing, as in PostgreSQL
    }
    let keyed = match (plan.key_order, plan.from.as_slice()) {
        (Some(reverse), [item]) => match &item.source {
            Source::Table(table, Access::Key(key)) => Some((reverse, item, table, key)),
            _ => None,
        },
        _ => None,
    };
    if let Some((reverse, item, table, key)) = keyed {
        // min/max: the first row that passes; ORDER BY … LIMIT: OFFSET + LIMIT rows.
        let wanted = match (&plan.grouping, offset_limit(plan, ctx)?) {
            (Some(_), _) => Some(1),
            (None, (offset, Some(limit))) => Some(offset.saturating_add(limit)),
            (None, (_, None)) => None,
        };
        if let Some(wanted) = wanted {
            for c in &plan.constant_filters {
                if !c.eval_bool(&[], ctx)? {
                    return Ok(Vec::new());
                }
            }
            let rows =
                ordered_key_rows(table, key, reverse, wanted, &item.filters, txn, ctx, limits)?;
            return finish_select(plan, rows, ctx, limits);
        }
    }
    let joined = execute_from(plan, txn, ctx, limits)?;
    finish_select(plan, joined.into_iter().map(|(_, r)| r).collect(), ctx, limits)
}

/// Grouping, projection, DISTINCT, ORDER BY and LIMIT over joined rows.
pub fn finish_select(
    plan: &SelectPlan,
    rows: Vec<Vec<Value>>,
    ctx: &Ctx,
    limits: &ExecLimits,
) -> Result<Vec<Vec<Value>>> {
    let rows = match &plan.grouping {
        Some(g) => aggregate(g, rows, ctx, limits)?,
        None => rows,
    };
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        limits.check()?;
        if let Some(h) = &plan.having {
            if !h.eval_bool(r, ctx)? {
                continue;
            }
        }
        let mut o = Vec::with_capacity(plan.projection.len());
        for e in &plan.projection {
            o.push(e.eval(r, ctx)?);
        }
        out.push(o);
    }
    let visible = plan.columns.len();
    if plan.distinct {
        let mut seen: Vec<Vec<Value>> = Vec::new();
        out.sort_by(|a, b| cmp_rows(&a[..visible], &b[..visible]));
        out.retain(|r| {
            if seen
                .last()
                .is_some_and(|l| cmp_rows(&l[..visible], &r[..visible]) == Ordering::Equal)
            {
                false
            } else {
                seen.push(r.clone());
                true
            }
        });
    }
    sort_rows(&mut out, &plan.order, limits)?;
    let (offset, limit) = offset_limit(plan, ctx)?;
    let mut out: Vec<Vec<Value>> =
        out.into_iter().skip(offset).take(limit.unwrap_or(usize::MAX)).collect();
    for r in &mut out {
        r.truncate(visible);
    }
    Ok(out)
}

/// Sorts projected rows by ORDER BY (output position, descending, nulls first).
/// A sort checks for an interrupt every so many comparisons; once interrupted, every further
/// comparison answers "equal", so the sort ends quickly and the statement fails.
pub fn sort_rows(
    rows: &mut [Vec<Value>],
    order: &[(usize, bool, bool)],
    limits: &ExecLimits,
) -> Result<()> {
    if order.is_empty() {
        return Ok(());
    }
    let mut comparisons = 0usize;
    let mut interrupted = false;
    rows.sort_by(|a, b| {
        if interrupted {
            return Ordering::Equal;
        }
        comparisons += 1;
        if comparisons.is_multiple_of(65_536) && limits.check().is_err() {
            interrupted = true;
            return Ordering::Equal;
        }
        for &(pos, desc, nulls_first) in order {
            let (x, y) = (&a[pos], &b[pos]);
            let ord = match (x.is_null(), y.is_null()) {
                (true, true) => Ordering::Equal,
                (true, false) if nulls_first => Ordering::Less,
                (true, false) => Ordering::Greater,
                (false, true) if nulls_first => Ordering::Greater,
                (false, true) => Ordering::Less,
                _ if desc => x.total_cmp(y).reverse(),
                _ => x.total_cmp(y),
            };
            if ord != Ordering::Equal {
                return ord;
            }
        }
        Ordering::Equal
    });
    limits.check()
}

/// OFFSET (0 when absent) and LIMIT (none when absent or NULL); 2201W when negative.
pub fn offset_limit(plan: &SelectPlan, ctx: &Ctx) -> Result<(usize, Option<usize>)> {
    let count = |e: &Option<Expr>| -> Result<Option<usize>> {
        match e {
            None => Ok(None),
            Some(e) => match e.eval(&[], ctx)? {
                Value::Null => Ok(None),
                Value::Int(i) if i >= 0 => Ok(Some(i as usize)),
                _ => Err(SqlError::new("2201W", "LIMIT and OFFSET must not be negative")),
            },
        }
    };
    Ok((count(&plan.offset)?.unwrap_or(0), count(&plan.limit)?))
}

/// UNION / INTERSECT / EXCEPT, with ALL keeping duplicates (by multiset counts).
pub(crate) fn set_operation(a: Vec<Row>, b: Vec<Row>, kind: SetOpKind, all: bool) -> Vec<Row> {
    fn dedup(mut rows: Vec<Row>) -> Vec<Row> {
        rows.sort_by(|x, y| cmp_rows(x, y));
        rows.dedup_by(|x, y| cmp_rows(x, y) == Ordering::Equal);
        rows
    }
    match kind {
        SetOpKind::Union => {
            let mut out = a;
            out.extend(b);
            if all {
                out
            } else {
                dedup(out)
            }
        }
        SetOpKind::Intersect | SetOpKind::Except => {
            let mut b_sorted = b;
            b_sorted.sort_by(|x, y| cmp_rows(x, y));
            let mut used = vec![false; b_sorted.len()];
            let mut out = Vec::new();
            let a = if all { a } else { dedup(a) };
            for row in a {
                let found = b_sorted.binary_search_by(|probe| cmp_rows(probe, &row));
                // With ALL, each matching row of b pairs with one row of a.
                let hit = match found {
                    Ok(mut i) => {
                        while i > 0 && cmp_rows(&b_sorted[i - 1], &row) == Ordering::Equal {
                            i -= 1;
                        }
                        let mut j = i;
                        while j < b_sorted.len()
                            && cmp_rows(&b_sorted[j], &row) == Ordering::Equal
                            && (all && used[j])
                        {
                            j += 1;
                        }
                        if j < b_sorted.len() && cmp_rows(&b_sorted[j], &row) == Ordering::Equal {
                            if all {
                                used[j] = true;
                            }
                            true
                        } else {
                            false
                        }
                    }
                    Err(_) => false,
                };
                if hit == (kind == SetOpKind::Intersect) {
                    out.push(row);
                }
            }
            out
        }
    }
}

pub(crate) fn cmp_rows(a: &[Value], b: &[Value]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = x.total_cmp(y);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

#[derive(Clone)]
pub(crate) enum Acc {
    Count(i64),
    Sum(Option<Value>),
    MinMax(Option<Value>),
    Avg(Option<Value>, i64),
    Strings(Option<String>),
}

/// A value ordered by [`Value::total_cmp`], for the sets DISTINCT aggregates keep.
#[derive(Debug, Clone)]
pub(crate) struct Ordered(Value);

impl PartialEq for Ordered {
    fn eq(&self, other: &Self) -> bool {
        self.0.total_cmp(&other.0) == Ordering::Equal
    }
}

impl Eq for Ordered {}

impl PartialOrd for Ordered {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ordered {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

pub(crate) fn aggregate(
    g: &Grouping,
    rows: Vec<Vec<Value>>,
    ctx: &Ctx,
    limits: &ExecLimits,
) -> Result<Vec<Vec<Value>>> {
    let init: Vec<Acc> = g
        .aggs
        .iter()
        .map(|(f, _, _, _)| match f {
            AggFunc::Count => Acc::Count(0),
            AggFunc::Sum => Acc::Sum(None),
            AggFunc::Min | AggFunc::Max => Acc::MinMax(None),
            AggFunc::Avg => Acc::Avg(None, 0),
            AggFunc::StringAgg(_) => Acc::Strings(None),
        })
        .collect();
    // Groups in first-seen order; keys compared by value.
    // Per group: key values, accumulators, values seen by each DISTINCT aggregate.
    type Group = (Row, Vec<Acc>, Vec<std::collections::BTreeSet<Ordered>>);
    let mut groups: Vec<Group> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for r in &rows {
        limits.check()?;
        let mut key = Vec::with_capacity(g.keys.len());
        for k in &g.keys {
            key.push(k.eval(r, ctx)?);
        }
        let hkey = format!("{key:?}");
        let gi = match index.get(&hkey) {
            Some(i) => *i,
            None => {
                groups.push((key, init.clone(), vec![Default::default(); g.aggs.len()]));
                index.insert(hkey, groups.len() - 1);
                groups.len() - 1
            }
        };
        let (_, accs, seen) = &mut groups[gi];
        for (ai, (f, distinct, arg, _)) in g.aggs.iter().enumerate() {
            let v = match arg {
                Some(a) => a.eval(r, ctx)?,
                None => Value::Bool(true),
            };
            if v.is_null() {
                continue;
            }
            if *distinct && !seen[ai].insert(Ordered(v.clone())) {
                continue;
            }
            accs[ai] = match (std::mem::replace(&mut accs[ai], Acc::Count(0)), f) {
                (Acc::Count(n), _) => Acc::Count(n + 1),
                (Acc::Sum(s), _) => Acc::Sum(Some(match s {
                    None => widen(v),
                    Some(s) => crate::expr::binary(BinOp::Add, s, widen(v))?,
                })),
                (Acc::MinMax(m), f) => Acc::MinMax(Some(match m {
                    None => v,
                    Some(m) => {
                        let o = v.total_cmp(&m);
                        if (*f == AggFunc::Min && o == Ordering::Less)
                            || (*f == AggFunc::Max && o == Ordering::Greater)
                        {
                            v
                        } else {
                            m
                        }
                    }
                })),
                (Acc::Strings(acc), f) => {
                    let text = v.to_text(DataType::Text).unwrap_or_default();
                    Acc::Strings(Some(match (acc, f) {
                        (None, _) => text,
                        (Some(mut a), AggFunc::StringAgg(sep)) => {
                            if a.len() + sep.len() + text.len() > crate::expr::TEXT_BYTES_MAX {
                                return Err(SqlError::new(
                                    code::PROGRAM_LIMIT,
                                    "string_agg result too large",
                                )
                                .detail(format!(
                                    "A computed string may hold at most {} bytes.",
                                    crate::expr::TEXT_BYTES_MAX
                                )));
                            }
                            a.push_str(sep);
                            a.push_str(&text);
                            a
                        }
                        (Some(a), _) => a,
                    }))
                }
                (Acc::Avg(s, n), _) => Acc::Avg(
                    Some(match s {
                        None => widen(v),
                        Some(s) => crate::expr::binary(BinOp::Add, s, widen(v))?,
                    }),
                    n + 1,
                ),
            };
        }
    }
    if groups.is_empty() && g.keys.is_empty() {
        groups.push((vec![], init, vec![]));
    }
    let mut out = Vec::with_capacity(groups.len());
    for (key, accs, _) in groups {
        let mut row = key;
        for (a, (_, _, _, ty)) in accs.into_iter().zip(&g.aggs) {
            row.push(match a {
                Acc::Count(n) => Value::Int(n),
                Acc::Sum(s) => match (s, ty) {
                    (None, _) => Value::Null,
                    // sum of smallint/integer is bigint.
                    (Some(Value::Numeric(d)), DataType::Int8) => Value::Int(
                        i64::try_from(d).map_err(|_| crate::types::out_of_range(DataType::Int8))?,
                    ),
                    (Some(v), _) => v,
                },
                Acc::MinMax(m) => m.unwrap_or(Value::Null),
                Acc::Strings(s) => s.map(Value::Text).unwrap_or(Value::Null),
                Acc::Avg(None, _) => Value::Null,
                Acc::Avg(Some(s), n) => match s {
                    Value::Float(f) => Value::Float(f / n as f64),
                    s => {
                        let d = match s {
                            Value::Numeric(d) => d,
                            Value::Int(i) => rust_decimal::Decimal::from(i),
                            _ => rust_decimal::Decimal::ZERO,
                        };
                        crate::expr::binary(
                            BinOp::Div,
                            Value::Numeric(d),
                            Value::Numeric(rust_decimal::Decimal::from(n)),
                        )?
                    }
                },
            });
        }
        out.push(row);
    }
    Ok(out)
}

/// Sums of integers are numeric (bigint for small integers would do, but numeric never
/// overflows).
pub(crate) fn widen(v: Value) -> Value {
    match v {
        Value::Int(i) => Value::Numeric(rust_decimal::Decimal::from(i)),
        v => v,
    }
}
