//! Step 4, FROM and WHERE: FROM items joined left to right, each row of an item filtered as
//! soon as its conditions can be evaluated.

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
