//! Step 4, FROM and WHERE: FROM items joined left to right, each row of an item filtered as
//! soon as its conditions can be evaluated.

use std::collections::HashMap;

use crate::error::{code, Result, SqlError};
use crate::expr::*;
use crate::plan::*;
use crate::types::{DataType, Row, Value};

use crate::exec::scan::*;
use crate::exec::select::*;

/// Runs the FROM/WHERE part: every joined row that passes the filters, with the primary key
/// of the first item's row when it is a table (for UPDATE, DELETE and FOR UPDATE).
pub fn execute_from(
    plan: &SelectPlan,
    txn: &TxnCell,
    ctx: &Ctx,
    limits: &ExecLimits,
) -> Result<Vec<KeyedRow>> {
    execute_from_keyed(plan, txn, ctx, limits, 0)
}

/// The joined rows of a FROM clause, each with the key of FROM item `keyed`'s row (a
/// table's; `None` where an outer join left that item NULL).
pub fn execute_from_keyed(
    plan: &SelectPlan,
    txn: &TxnCell,
    ctx: &Ctx,
    limits: &ExecLimits,
    keyed: usize,
) -> Result<Vec<KeyedRow>> {
    let mut out = Vec::new();
    for c in &plan.constant_filters {
        if !c.eval_bool(&[], ctx)? {
            return Ok(out);
        }
    }
    let mut row = vec![Value::Null; plan.width];
    let n = plan.from.len();
    let mut join =
        Join { plan, txn, ctx, limits, keyed, inner: vec![None; n], matched: vec![vec![]; n] };
    join.level(0, &mut row, None, &mut out)?;
    // RIGHT and FULL joins: the item's rows no combination of earlier rows matched, the
    // earlier items' columns NULL, joined on to the items after it.
    for k in 1..n {
        let item = &plan.from[k];
        if !item.join.keeps_right() {
            continue;
        }
        let mut row = vec![Value::Null; plan.width];
        let inner = join.inner_rows(k, &row)?;
        for (i, (_, cand)) in inner.rows.iter().enumerate() {
            if join.matched[k].get(i).copied().unwrap_or(false) {
                continue;
            }
            if i % SCAN_BATCH_ROWS == 0 {
                limits.check()?;
            }
            row[item.offset..item.offset + item.width].clone_from_slice(&cand[..item.width]);
            if passes(&item.filters, &row, ctx)? {
                join.level(k + 1, &mut row, None, &mut out)?;
            }
        }
    }
    Ok(out)
}

/// The rows of an inner FROM item that do not depend on the rows before it (a table read
/// without a key from them, VALUES, a derived table), read once per execution instead of
/// once per outer row, with a hash table on the columns its equality conditions compare
/// with earlier items (a hash join) when it has such conditions.
struct InnerRows {
    rows: Vec<KeyedRow>,
    /// The equality conditions used: (column of the item, expression over earlier items).
    keys: Vec<(usize, Expr)>,
    /// Row positions by the hash keys of those columns; `None` when the values are of a
    /// kind that is not hashed (every row is then a candidate).
    table: Option<HashMap<Vec<HashKey>, Vec<usize>>>,
    /// Per key column, whether its values hashed as numbers (`Some(true)`) or text
    /// (`Some(false)`); a probe of the other kind (a comparison across types) is not looked
    /// up, every row is a candidate instead.
    numeric: Vec<Option<bool>>,
}

/// A join value as hashed: equal SQL values always get equal keys (numbers of every type
/// by their double-precision value, text without trailing blanks); unequal values may
/// collide, since every candidate is checked against the conditions again.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum HashKey {
    Number(u64),
    Text(String),
}

fn hash_key(v: &Value) -> Option<HashKey> {
    let number = |f: f64| HashKey::Number(if f == 0.0 { 0.0f64 } else { f }.to_bits());
    Some(match v {
        Value::Int(i) => number(*i as f64),
        Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => number((*f as i64) as f64),
        Value::Float(f) => number(*f),
        // The nearest double: equal to an equal integer's or float's (both round exactly).
        Value::Numeric(d) => number(d.to_f64()?),
        Value::Text(t) => HashKey::Text(t.trim_end_matches(' ').to_string()),
        _ => return None,
    })
}

/// One execution of a FROM clause.
struct Join<'a, 'c, 't> {
    plan: &'a SelectPlan,
    txn: &'a TxnCell<'t>,
    ctx: &'a Ctx<'c>,
    limits: &'a ExecLimits,
    /// The FROM item whose row's key each joined row carries.
    keyed: usize,
    /// Per FROM item: its rows, once read (items after the first that do not depend on
    /// earlier rows).
    inner: Vec<Option<std::rc::Rc<InnerRows>>>,
    /// Per RIGHT or FULL joined item: which of its rows some combination of earlier rows
    /// matched.
    matched: Vec<Vec<bool>>,
}

/// The rows of a recursive CTE: the non-recursive term, then the recursive term run again
/// over the rows the previous round produced, until a round produces none (with UNION,
/// rows already produced are dropped, so a cycle ends too).
fn recursive_rows(
    anchor: &SelectPlan,
    step: &SelectPlan,
    id: usize,
    all: bool,
    txn: &TxnCell,
    ctx: &Ctx,
    limits: &ExecLimits,
) -> Result<Vec<Row>> {
    let types: Vec<DataType> = anchor.columns.iter().map(|c| c.1).collect();
    let fit = |rows: Vec<Row>| -> Result<Vec<Row>> {
        rows.into_iter()
            .map(|r| {
                r.into_iter()
                    .zip(&types)
                    .map(|(v, t)| v.cast_in(*t, ctx.env.style()))
                    .collect::<Result<Row>>()
            })
            .collect()
    };
    let mut seen: std::collections::BTreeSet<Vec<Ordered>> = Default::default();
    let mut keep_new = |rows: Vec<Row>| -> Vec<Row> {
        if all {
            return rows;
        }
        rows.into_iter().filter(|r| seen.insert(r.iter().cloned().map(Ordered).collect())).collect()
    };
    let first = keep_new(fit(execute_select(anchor, txn, ctx, limits)?)?);
    let mut out = first.clone();
    let mut working = std::sync::Arc::new(first);
    while !working.is_empty() {
        limits.check()?;
        let plan = step.with_work_table(id, &working);
        let produced = keep_new(fit(execute_select(&plan, txn, ctx, limits)?)?);
        if out.len() + produced.len() > limits.rows_max {
            return Err(SqlError::new(
                code::OUT_OF_MEMORY,
                "a recursive query would produce too many rows",
            )
            .hint("A recursive query ends when a round adds no rows; check its condition."));
        }
        out.extend(produced.iter().cloned());
        working = std::sync::Arc::new(produced);
    }
    Ok(out)
}

impl Join<'_, '_, '_> {
    /// The rows of item `level`, read once (see [`SelectPlan::reads_once`]).
    fn inner_rows(&mut self, level: usize, row: &[Value]) -> Result<std::rc::Rc<InnerRows>> {
        if let Some(inner) = &self.inner[level] {
            return Ok(inner.clone());
        }
        let inner = std::rc::Rc::new(self.read_inner(level, row)?);
        if self.plan.from[level].join.keeps_right() {
            self.matched[level] = vec![false; inner.rows.len()];
        }
        self.inner[level] = Some(inner.clone());
        Ok(inner)
    }

    /// Reads item `level` once, and hashes it on its equi-join columns.
    fn read_inner(&self, level: usize, row: &[Value]) -> Result<InnerRows> {
        let item = &self.plan.from[level];
        let rows = self.candidates(item, row)?;
        let keys = self.plan.hash_keys(level);
        let mut table = (!keys.is_empty()).then(HashMap::new);
        let mut numeric: Vec<Option<bool>> = vec![None; keys.len()];
        if let Some(t) = &mut table {
            'rows: for (i, (_, r)) in rows.iter().enumerate() {
                if i % SCAN_BATCH_ROWS == 0 {
                    self.limits.check()?;
                }
                let mut key = Vec::with_capacity(keys.len());
                for (n, (col, _)) in keys.iter().enumerate() {
                    match &r[*col] {
                        Value::Null => continue 'rows, // equal to nothing
                        v => match hash_key(v) {
                            Some(k)
                                if *numeric[n].get_or_insert(matches!(k, HashKey::Number(_)))
                                    == matches!(k, HashKey::Number(_)) =>
                            {
                                key.push(k)
                            }
                            // Not hashable, or of mixed kinds: every row is a candidate.
                            _ => {
                                table = None;
                                break 'rows;
                            }
                        },
                    }
                }
                t.entry(key).or_insert_with(Vec::new).push(i);
            }
        }
        Ok(InnerRows { rows, keys, table, numeric })
    }

    /// The rows of `item` for the current combination of earlier rows (`row`).
    fn candidates(&self, item: &FromItem, row: &[Value]) -> Result<Vec<KeyedRow>> {
        let (txn, ctx, limits) = (self.txn, self.ctx, self.limits);
        Ok(match &item.source {
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
            // Its `Expr::Outer` references read the joined row so far.
            Source::Lateral(sub) => {
                let shape = crate::expr::OuterRow { width: item.offset, deep: false };
                let outer = shape.of(ctx.outer, row);
                let inner = crate::expr::Ctx { outer: &outer, ..*ctx };
                execute_select(sub, txn, &inner, limits)?.into_iter().map(|r| (None, r)).collect()
            }
            Source::Recursive(anchor, step, id, all) => {
                recursive_rows(anchor, step, *id, *all, txn, ctx, limits)?
                    .into_iter()
                    .map(|r| (None, r))
                    .collect()
            }
            Source::WorkTable(_) => {
                return Err(SqlError::unsupported(
                    "a recursive reference inside a subquery of the recursive term",
                ))
            }
            Source::SetOp(left, right, kind, all) => {
                let a = execute_select(left, txn, ctx, limits)?;
                let b = execute_select(right, txn, ctx, limits)?;
                set_operation(a, b, *kind, *all).into_iter().map(|r| (None, r)).collect()
            }
            Source::Unnest(exprs, ordinality) => {
                let mut columns = Vec::with_capacity(exprs.len());
                for e in exprs {
                    columns.push(array_items(e.eval(row, ctx)?)?);
                }
                let n = columns.iter().map(Vec::len).max().unwrap_or(0);
                if n > limits.rows_max {
                    return Err(SqlError::new(
                        code::OUT_OF_MEMORY,
                        "unnest would produce too many rows",
                    ));
                }
                let mut iters: Vec<_> = columns.into_iter().map(Vec::into_iter).collect();
                let mut v = Vec::with_capacity(n);
                for i in 0..n {
                    if i % SCAN_BATCH_ROWS == 0 {
                        limits.check()?;
                    }
                    let mut r: Row =
                        iters.iter_mut().map(|it| it.next().unwrap_or(Value::Null)).collect();
                    if *ordinality {
                        r.push(Value::Int(i as i64 + 1));
                    }
                    v.push((None, r));
                }
                v
            }
            Source::Call(call, shape) => {
                let rows = shape.rows(call.eval(row, ctx)?)?;
                if rows.len() > limits.rows_max {
                    return Err(SqlError::new(
                        code::OUT_OF_MEMORY,
                        "a set-returning function would produce too many rows",
                    ));
                }
                rows.into_iter().map(|r| (None, r)).collect()
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
        })
    }

    /// Joins item `level` (and, recursively, the ones after it) to the current row.
    fn level(
        &mut self,
        level: usize,
        row: &mut Vec<Value>,
        keyed_key: Option<&[u8]>,
        out: &mut Vec<KeyedRow>,
    ) -> Result<()> {
        let (plan, ctx, limits) = (self.plan, self.ctx, self.limits);
        let Some(item) = plan.from.get(level) else {
            if out.len() >= limits.rows_max {
                return Err(SqlError::new(
                    code::OUT_OF_MEMORY,
                    format!(
                        "the statement would hold more than {} rows in memory",
                        limits.rows_max
                    ),
                )
                .hint("Add a WHERE clause or LIMIT, or raise the server's rows limit."));
            }
            out.push((keyed_key.map(<[u8]>::to_vec), row.clone()));
            return Ok(());
        };
        limits.check()?;
        let owned: Vec<KeyedRow>;
        let shared: std::rc::Rc<InnerRows>;
        // Candidate rows, each with its position among the item's rows when read once.
        let candidates: Vec<(usize, &KeyedRow)> = if self.plan.reads_once(level) {
            shared = self.inner_rows(level, row)?;
            match &shared.table {
                Some(table) => {
                    let mut key = Vec::with_capacity(shared.keys.len());
                    let mut probe = true;
                    for (n, (_, e)) in shared.keys.iter().enumerate() {
                        match e.eval(row, ctx)? {
                            Value::Null => {
                                probe = false; // equal to nothing: no candidate
                                key.clear();
                                break;
                            }
                            v => match hash_key(&v) {
                                Some(k)
                                    if shared.numeric[n].is_none_or(|num| {
                                        num == matches!(k, HashKey::Number(_))
                                    }) =>
                                {
                                    key.push(k)
                                }
                                // Not hashable, or another kind than the column's values:
                                // every row is a candidate.
                                _ => break,
                            },
                        }
                    }
                    if !probe {
                        Vec::new()
                    } else if key.len() == shared.keys.len() {
                        table.get(&key).map_or_else(Vec::new, |ix| {
                            ix.iter().map(|&i| (i, &shared.rows[i])).collect()
                        })
                    } else {
                        shared.rows.iter().enumerate().collect()
                    }
                }
                None => shared.rows.iter().enumerate().collect(),
            }
        } else {
            owned = self.candidates(item, row)?;
            owned.iter().enumerate().collect()
        };
        let mut matched = false;
        for (position, (key, cand)) in candidates {
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
            if let Some(m) = self.matched[level].get_mut(position) {
                *m = true;
            }
            if !passes(&item.filters, row, ctx)? {
                continue;
            }
            let fk = if level == self.keyed { key.as_deref() } else { keyed_key };
            self.level(level + 1, row, fk, out)?;
        }
        if !matched && item.join.keeps_left() {
            for v in &mut row[item.offset..item.offset + item.width] {
                *v = Value::Null;
            }
            if passes(&item.filters, row, ctx)? {
                let fk = if level == self.keyed { None } else { keyed_key };
                self.level(level + 1, row, fk, out)?;
            }
        }
        Ok(())
    }
}

pub(crate) fn passes(filters: &[Expr], row: &[Value], ctx: &Ctx) -> Result<bool> {
    for f in filters {
        if !f.eval_bool(row, ctx)? {
            return Ok(false);
        }
    }
    Ok(true)
}
