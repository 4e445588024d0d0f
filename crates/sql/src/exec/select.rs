//! Step 4 for queries: runs a [`SelectPlan`] — scans by access path (in batches, checking for
//! interrupts), nested-loop joins, then grouping, projection, DISTINCT, ORDER BY and LIMIT.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use kiln_engine::Transaction;

use crate::error::{code, Result, SqlError};
use crate::expr::*;
use crate::numeric::Numeric;
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

    fn call(
        &self,
        routine: &crate::exec::routines::Routine,
        args: Vec<Value>,
        ctx: &Ctx,
    ) -> Result<Value> {
        let mut host = crate::exec::plpgsql::QueryHost {
            txn: self.txn,
            limits: self.limits,
            name: &routine.name,
        };
        crate::exec::routines::call(routine, &mut host, args, ctx.env)
    }
}

/// A joined row with the primary key of the first FROM item's row (when it is a table).
pub type KeyedRow = (Option<Vec<u8>>, Row);

pub use crate::exec::join::*;
pub use crate::exec::scan::*;

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
    let mut rows = match &plan.having {
        Some(h) => {
            let mut kept = Vec::with_capacity(rows.len());
            for r in rows {
                limits.check()?;
                if h.eval_bool(&r, ctx)? {
                    kept.push(r);
                }
            }
            kept
        }
        None => rows,
    };
    if !plan.windows.is_empty() {
        crate::exec::window::compute_windows(&plan.windows, &mut rows, ctx, limits)?;
    }
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        limits.check()?;
        let mut o = Vec::with_capacity(plan.projection.len());
        for e in &plan.projection {
            o.push(e.eval(r, ctx)?);
        }
        if plan.expand.is_empty() {
            out.push(o);
        } else {
            expand_row(plan, o, &mut out, limits)?;
        }
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
    if !plan.distinct_on.is_empty() {
        // Rows arrive sorted with the DISTINCT ON keys leading: keep each run's first.
        let same = |a: &[Value], b: &[Value]| {
            plan.distinct_on.iter().all(|&p| a[p].total_cmp(&b[p]) == Ordering::Equal)
        };
        let mut kept: Vec<Vec<Value>> = Vec::with_capacity(out.len());
        for r in out {
            if kept.last().is_none_or(|l| !same(l, &r)) {
                kept.push(r);
            }
        }
        out = kept;
    }
    let (offset, limit) = offset_limit(plan, ctx)?;
    let mut out: Vec<Vec<Value>> =
        out.into_iter().skip(offset).take(limit.unwrap_or(usize::MAX)).collect();
    for r in &mut out {
        r.truncate(visible);
    }
    Ok(out)
}

/// A projected row whose set-returning items hold arrays: one row per element, up to the
/// longest (the shorter ones NULL past their end), the other items repeated.
pub(crate) fn expand_row(
    plan: &SelectPlan,
    mut row: Vec<Value>,
    out: &mut Vec<Vec<Value>>,
    limits: &ExecLimits,
) -> Result<()> {
    let mut lists = Vec::with_capacity(plan.expand.len());
    for &pos in &plan.expand {
        let v = std::mem::replace(&mut row[pos], Value::Null);
        lists.push(crate::expr::array_items(v)?.into_iter());
    }
    let n = lists.iter().map(|l| l.len()).max().unwrap_or(0);
    if out.len().saturating_add(n) > limits.rows_max {
        return Err(SqlError::new(
            code::OUT_OF_MEMORY,
            "a set-returning function would produce too many rows",
        ));
    }
    for i in 0..n {
        if i % 4096 == 4095 {
            limits.check()?;
        }
        let mut r = row.clone();
        for (&pos, list) in plan.expand.iter().zip(&mut lists) {
            r[pos] = list.next().unwrap_or(Value::Null);
        }
        out.push(r);
    }
    Ok(())
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
    /// string_agg / array_agg: each input packed as `[value, sort key…]`.
    Collect(Vec<Vec<Value>>),
    /// bool_and / bool_or
    Bool(Option<bool>),
    /// bit_and / bit_or / bit_xor
    Bits(Option<i64>),
    /// variance and standard deviation
    Moments(Moments),
    /// corr, covar_*, regr_*: n, Σx, Σy and the running Sxx, Syy, Sxy (PostgreSQL's
    /// float8_regr_accum)
    Regression([f64; 6]),
    /// An aggregate made with CREATE AGGREGATE, taking its inputs as they come: its state,
    /// and whether it has one yet (a strict transition function's NULL first state has
    /// none until the first row).
    User(Value, bool),
}

impl Acc {
    /// PostgreSQL's final functions of the (y, x) statistics.
    fn regression(kind: Regression, [n, sx, sy, sxx, syy, sxy]: [f64; 6]) -> Value {
        use Regression as R;
        let float = |f: f64| Value::Float(f);
        match kind {
            R::Count => Value::Int(n as i64),
            _ if n < 1.0 => Value::Null,
            R::AvgX => float(sx / n),
            R::AvgY => float(sy / n),
            R::Sxx => float(sxx),
            R::Syy => float(syy),
            R::Sxy => float(sxy),
            R::CovarPop => float(sxy / n),
            R::CovarSamp if n < 2.0 => Value::Null,
            R::CovarSamp => float(sxy / (n - 1.0)),
            // Per the standard, NULL for a horizontal or vertical line.
            R::Corr if sxx == 0.0 || syy == 0.0 => Value::Null,
            R::Corr => float(sxy / (sxx * syy).sqrt()),
            R::Slope | R::Intercept | R::R2 if sxx == 0.0 => Value::Null,
            R::R2 if syy == 0.0 => float(1.0),
            R::R2 => float((sxy * sxy) / (sxx * syy)),
            R::Slope => float(sxy / sxx),
            R::Intercept => float((sy - sx * sxy / sxx) / n),
        }
    }
}

/// The running state of a variance: exact sums for integers and numerics (as PostgreSQL
/// keeps them), Youngs and Cramer's running form for doubles (as PostgreSQL's float8_accum).
#[derive(Clone)]
pub(crate) enum Moments {
    Empty,
    Exact { n: i64, sum: Numeric, squares: Numeric },
    Float { n: f64, sum: f64, squares: f64 },
}

impl Moments {
    fn add(self, v: Value) -> Result<Moments> {
        Ok(match (self, v) {
            (Moments::Empty, Value::Float(x)) => Moments::Float { n: 1.0, sum: x, squares: 0.0 },
            (Moments::Float { n, sum, squares }, Value::Float(x)) => {
                let (n1, sum) = (n + 1.0, sum + x);
                let t = x * n1 - sum;
                Moments::Float { n: n1, sum, squares: squares + t * t / (n1 * n) }
            }
            // A double's state takes any number as a double; an exact one takes integers.
            (state @ Moments::Float { .. }, Value::Int(i)) => state.add(Value::Float(i as f64))?,
            (state @ Moments::Float { .. }, Value::Numeric(d)) => {
                state.add(Value::Float(crate::expr::numeric_to_float(&d)?))?
            }
            (state, Value::Int(i)) => state.add(Value::Numeric(i.into()))?,
            (Moments::Empty, Value::Numeric(x)) => {
                Moments::Exact { n: 1, squares: x.mul(&x)?, sum: x }
            }
            (Moments::Exact { n, sum, squares }, Value::Numeric(x)) => {
                Moments::Exact { n: n + 1, squares: squares.add(&x.mul(&x)?)?, sum: sum.add(&x)? }
            }
            (_, v) => {
                return Err(SqlError::new(
                    code::DATATYPE_MISMATCH,
                    format!("variance and stddev take numbers, not {}", v.kind()),
                ))
            }
        })
    }

    /// The variance or standard deviation; NULL without enough rows.
    fn finish(self, sample: bool, root: bool) -> Result<Value> {
        Ok(match self {
            Moments::Empty => Value::Null,
            Moments::Float { n, squares, .. } => {
                if sample && n <= 1.0 {
                    return Ok(Value::Null);
                }
                let var = squares / if sample { n - 1.0 } else { n };
                Value::Float(if root { var.sqrt() } else { var })
            }
            Moments::Exact { n, sum, squares } => {
                if sample && n <= 1 {
                    return Ok(Value::Null);
                }
                // PostgreSQL's numeric_stddev_internal: (n Σx² - (Σx)²) / (n (n - 1)), the
                // products at twice the sum's scale, the quotient (and its root) at the scale
                // of a division.
                let scale = sum.scale() as i64 * 2;
                let count = Numeric::from(n);
                let numerator =
                    count.mul(&squares)?.round(scale)?.sub(&sum.mul(&sum)?.round(scale)?)?;
                if numerator.signum() <= 0 {
                    return Ok(Value::Numeric(Numeric::ZERO));
                }
                let denominator =
                    Numeric::from(n).mul(&Numeric::from(if sample { n - 1 } else { n }))?;
                let scale = numerator.div_scale(&denominator);
                let var = numerator.div_to(&denominator, scale)?;
                Value::Numeric(if root {
                    crate::numeric_math::sqrt_to(&var, scale as i64)?
                } else {
                    var
                })
            }
        })
    }
}

impl Acc {
    /// The state of `f` before any input.
    pub(crate) fn new(f: &AggFunc) -> Acc {
        match f {
            AggFunc::Count => Acc::Count(0),
            AggFunc::Sum => Acc::Sum(None),
            AggFunc::Min | AggFunc::Max => Acc::MinMax(None),
            AggFunc::Avg => Acc::Avg(None, 0),
            AggFunc::StringAgg(..) | AggFunc::ArrayAgg(_) | AggFunc::OrderedSet(..) => {
                Acc::Collect(Vec::new())
            }
            AggFunc::BoolAnd | AggFunc::BoolOr => Acc::Bool(None),
            AggFunc::Bits(_) => Acc::Bits(None),
            AggFunc::Variance { .. } => Acc::Moments(Moments::Empty),
            AggFunc::Regression(_) => Acc::Regression([0.0; 6]),
            AggFunc::User(u) if u.collect => Acc::Collect(Vec::new()),
            AggFunc::User(u) => Acc::User(u.init.clone().unwrap_or(Value::Null), u.init.is_some()),
        }
    }

    /// Takes one input of `f` (never NULL: aggregates skip NULL inputs; the collecting ones
    /// see each value packed in an array, which is not).
    pub(crate) fn add(&mut self, f: &AggFunc, v: Value, ctx: &Ctx) -> Result<()> {
        *self = match (std::mem::replace(self, Acc::Count(0)), f) {
            (Acc::User(state, started), AggFunc::User(u)) => {
                let inputs = crate::expr::array_items(v)?;
                let (state, started) =
                    crate::exec::aggregates::step(u, state, started, &inputs, ctx)?;
                Acc::User(state, started)
            }
            (Acc::User(..), _) => {
                return Err(SqlError::new(code::INTERNAL, "an aggregate's state of another kind"))
            }
            (Acc::Count(n), _) => Acc::Count(n + 1),
            (Acc::Sum(s), _) => Acc::Sum(Some(match s {
                None => widen(v),
                Some(s) => crate::expr::binary(BinOp::Add, s, widen(v), NUMBERS)?,
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
            (Acc::Collect(mut items), _) => {
                items.push(crate::expr::array_items(v)?);
                Acc::Collect(items)
            }
            (Acc::Bool(b), f) => {
                let x = v.as_bool()?.unwrap_or(*f == AggFunc::BoolAnd);
                Acc::Bool(Some(match (b, f) {
                    (None, _) => x,
                    (Some(b), AggFunc::BoolAnd) => b && x,
                    (Some(b), _) => b || x,
                }))
            }
            (Acc::Bits(b), f) => {
                let Value::Int(x) = v else {
                    return Err(SqlError::new(
                        code::DATATYPE_MISMATCH,
                        "bitwise aggregates take integers",
                    ));
                };
                Acc::Bits(Some(match (b, f) {
                    (None, _) => x,
                    (Some(b), AggFunc::Bits(BitOp::And)) => b & x,
                    (Some(b), AggFunc::Bits(BitOp::Or)) => b | x,
                    (Some(b), _) => b ^ x,
                }))
            }
            (Acc::Moments(m), _) => Acc::Moments(m.add(v)?),
            (Acc::Regression(s), _) => {
                let pair = crate::expr::array_items(v)?;
                let (Some(Value::Float(y)), Some(Value::Float(x))) = (pair.first(), pair.get(1))
                else {
                    // A NULL in the pair: the row does not count.
                    *self = Acc::Regression(s);
                    return Ok(());
                };
                let [n0, sx, sy, sxx, syy, sxy] = s;
                let (n, sx, sy) = (n0 + 1.0, sx + x, sy + y);
                Acc::Regression(if n0 > 0.0 {
                    let (tx, ty) = (x * n - sx, y * n - sy);
                    let scale = 1.0 / (n * n0);
                    [n, sx, sy, sxx + tx * tx * scale, syy + ty * ty * scale, sxy + tx * ty * scale]
                } else {
                    [n, sx, sy, 0.0, 0.0, 0.0]
                })
            }
            (Acc::Avg(s, n), _) => Acc::Avg(
                Some(match s {
                    None => widen(v),
                    Some(s) => crate::expr::binary(BinOp::Add, s, widen(v), NUMBERS)?,
                }),
                n + 1,
            ),
        };
        Ok(())
    }

    /// The aggregate's value (`ty`: its result type).
    pub(crate) fn finish(
        self,
        f: &AggFunc,
        distinct: bool,
        ty: DataType,
        limits: &ExecLimits,
        ctx: &Ctx,
    ) -> Result<Value> {
        if let AggFunc::User(u) = f {
            return crate::exec::aggregates::finish(u, self, limits, ctx);
        }
        Ok(match self {
            Acc::User(..) => Value::Null,
            Acc::Count(n) => Value::Int(n),
            Acc::Sum(s) => match (s, ty) {
                (None, _) => Value::Null,
                // sum of smallint/integer is bigint.
                (Some(Value::Numeric(d)), DataType::Int8) => Value::Int(
                    d.to_i64().ok_or_else(|| crate::types::out_of_range(DataType::Int8))?,
                ),
                (Some(v), _) => v,
            },
            Acc::MinMax(m) => m.unwrap_or(Value::Null),
            Acc::Collect(items) => collected(f, distinct, items, limits)?,
            Acc::Bool(b) => b.map(Value::Bool).unwrap_or(Value::Null),
            Acc::Bits(b) => b.map(Value::Int).unwrap_or(Value::Null),
            Acc::Regression(s) => match f {
                AggFunc::Regression(kind) => Acc::regression(*kind, s),
                _ => Value::Null,
            },
            Acc::Moments(m) => match f {
                AggFunc::Variance { sample, root } => m.finish(*sample, *root)?,
                _ => Value::Null,
            },
            Acc::Avg(None, _) => Value::Null,
            Acc::Avg(Some(s), n) => match s {
                Value::Float(f) => Value::Float(f / n as f64),
                Value::Interval(iv) => Value::Interval(iv.checked_div(n as f64)?),
                s => {
                    let d = match s {
                        Value::Numeric(d) => d,
                        Value::Int(i) => i.into(),
                        _ => crate::numeric::Numeric::ZERO,
                    };
                    crate::expr::binary(
                        BinOp::Div,
                        Value::Numeric(d),
                        Value::Numeric(n.into()),
                        NUMBERS,
                    )?
                }
            },
        })
    }
}

/// A value ordered by [`Value::total_cmp`], for the sets DISTINCT aggregates keep.
#[derive(Debug, Clone)]
pub(crate) struct Ordered(pub(crate) Value);

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
    let init: Vec<Acc> = g.aggs.iter().map(|(f, _, _, _)| Acc::new(f)).collect();
    // Groups in first-seen order; keys compared by value.
    // Per group: key values, accumulators, values seen by each DISTINCT aggregate.
    type Group = (Row, Vec<Acc>, Vec<std::collections::BTreeSet<Ordered>>);
    let mut groups: Vec<Group> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    // With grouping sets, each row joins one group per set: the keys outside the set NULL,
    // the set's number last.
    let set_keys = if g.sets.is_empty() { 0 } else { g.keys.len() - 1 };
    let masked = |full: &[Value], si: usize| -> Row {
        let mut key: Row = (0..set_keys)
            .map(|k| if g.sets[si].contains(&k) { full[k].clone() } else { Value::Null })
            .collect();
        key.push(Value::Int(si as i64));
        key
    };
    for r in &rows {
        limits.check()?;
        let mut key = Vec::with_capacity(g.keys.len());
        for k in &g.keys {
            key.push(k.eval(r, ctx)?);
        }
        let keys: Vec<Row> = if g.sets.is_empty() {
            vec![key]
        } else {
            (0..g.sets.len()).map(|si| masked(&key, si)).collect()
        };
        // The aggregates' inputs, once per row whatever the number of sets.
        let mut inputs = Vec::with_capacity(g.aggs.len());
        for (_, _, arg, _) in &g.aggs {
            inputs.push(match arg {
                Some(a) => a.eval(r, ctx)?,
                None => Value::Bool(true),
            });
        }
        let last = keys.len().saturating_sub(1);
        for (ki, key) in keys.into_iter().enumerate() {
            let hkey = group_key(&key);
            let gi = match index.get(&hkey) {
                Some(i) => *i,
                None => {
                    // Grouping sets may make more groups than rows: the row limit holds.
                    if groups.len() >= limits.rows_max {
                        return Err(crate::exec::scan::too_many_rows(limits));
                    }
                    groups.push((key, init.clone(), vec![Default::default(); g.aggs.len()]));
                    index.insert(hkey, groups.len() - 1);
                    groups.len() - 1
                }
            };
            let (_, accs, seen) = &mut groups[gi];
            for (ai, (f, distinct, _, _)) in g.aggs.iter().enumerate() {
                // The last set takes the input; the others a copy.
                let v = if ki == last {
                    std::mem::replace(&mut inputs[ai], Value::Null)
                } else {
                    inputs[ai].clone()
                };
                if v.is_null() {
                    continue;
                }
                if *distinct && !seen[ai].insert(Ordered(v.clone())) {
                    continue;
                }
                accs[ai].add(f, v, ctx)?;
            }
        }
    }
    if groups.is_empty() && g.keys.is_empty() {
        groups.push((vec![], init.clone(), vec![]));
    }
    // An empty grouping set `()` has its one row even without input rows.
    if rows.is_empty() {
        let nulls = vec![Value::Null; set_keys];
        for (si, set) in g.sets.iter().enumerate() {
            if set.is_empty() {
                groups.push((masked(&nulls, si), init.clone(), vec![]));
            }
        }
    }
    let mut out = Vec::with_capacity(groups.len());
    for (key, accs, _) in groups {
        let mut row = key;
        for (a, (f, distinct, _, ty)) in accs.into_iter().zip(&g.aggs) {
            row.push(a.finish(f, *distinct, *ty, limits, ctx)?);
        }
        out.push(row);
    }
    Ok(out)
}

/// The result of string_agg or array_agg over its packed inputs (`[value, key…]`): sorted
/// by the keys (stably, so equal keys keep input order), then joined or collected. With
/// DISTINCT and no keys the values come sorted, as PostgreSQL's DISTINCT sorts them.
/// An ordered-set aggregate's result over its sorted values (NULL when there are none).
fn ordered_set(kind: &OrderedSet, values: Vec<Value>) -> Result<Value> {
    if values.is_empty() {
        return Ok(Value::Null);
    }
    Ok(match kind {
        OrderedSet::Mode => {
            // The longest run of equal values; the first such run on a tie.
            let (mut best, mut best_len) = (0, 0);
            let mut start = 0;
            for i in 1..=values.len() {
                if i == values.len() || values[i].total_cmp(&values[start]) != Ordering::Equal {
                    if i - start > best_len {
                        (best, best_len) = (start, i - start);
                    }
                    start = i;
                }
            }
            values[best].clone()
        }
        OrderedSet::Percentile { continuous, fractions, array } => {
            let n = values.len();
            let at = |fraction: Option<u64>| -> Result<Value> {
                let Some(bits) = fraction else { return Ok(Value::Null) };
                let f = f64::from_bits(bits);
                if !continuous {
                    // The first value whose place in the order reaches the fraction.
                    let row = ((f * n as f64).ceil() as usize).max(1);
                    return Ok(values[row.min(n) - 1].clone());
                }
                let position = f * (n - 1) as f64;
                let (lo, hi) = (position.floor() as usize, position.ceil() as usize);
                let share = position - lo as f64;
                Ok(match (&values[lo], &values[hi.min(n - 1)]) {
                    (Value::Float(a), Value::Float(b)) => Value::Float(a + share * (b - a)),
                    (Value::Interval(a), Value::Interval(b)) => {
                        let gap = b.checked_sub(*a)?.checked_mul(share)?;
                        Value::Interval(a.checked_add(gap)?)
                    }
                    (a, _) => a.clone(),
                })
            };
            if *array {
                Value::Array(fractions.iter().map(|f| at(*f)).collect::<Result<Vec<_>>>()?)
            } else {
                at(fractions.first().copied().flatten())?
            }
        }
    })
}

fn collected(
    f: &AggFunc,
    distinct: bool,
    mut items: Vec<Vec<Value>>,
    limits: &ExecLimits,
) -> Result<Value> {
    if items.is_empty() {
        return Ok(Value::Null);
    }
    if let AggFunc::OrderedSet(kind, (desc, nulls_first)) = f {
        // NULLs are not values here; the rest in the requested order.
        items.retain(|p| p.first().is_some_and(|v| !v.is_null()));
        sort_rows(&mut items, &[(0, *desc, *nulls_first)], limits)?;
        let values: Vec<Value> = items.into_iter().map(|mut p| p.swap_remove(0)).collect();
        return ordered_set(kind, values);
    }
    let order = match f {
        AggFunc::StringAgg(_, order) | AggFunc::ArrayAgg(order) => order.as_slice(),
        _ => &[],
    };
    if !order.is_empty() {
        let keys: Vec<(usize, bool, bool)> =
            order.iter().enumerate().map(|(i, &(desc, nf))| (i + 1, desc, nf)).collect();
        sort_rows(&mut items, &keys, limits)?;
    } else if distinct {
        sort_rows(&mut items, &[(0, false, false)], limits)?;
    }
    let values =
        items.into_iter().map(|mut p| if p.is_empty() { Value::Null } else { p.swap_remove(0) });
    Ok(match f {
        AggFunc::StringAgg(sep, _) => {
            let mut out: Option<String> = None;
            for v in values {
                let Some(text) = v.to_text(DataType::Text) else { continue };
                let Some(a) = out.as_mut() else {
                    out = Some(text);
                    continue;
                };
                if a.len() + sep.len() + text.len() > crate::expr::TEXT_BYTES_MAX {
                    return Err(SqlError::new(code::PROGRAM_LIMIT, "string_agg result too large")
                        .detail(format!(
                            "A computed string may hold at most {} bytes.",
                            crate::expr::TEXT_BYTES_MAX
                        )));
                }
                a.push_str(sep);
                a.push_str(&text);
            }
            out.map(Value::Text).unwrap_or(Value::Null)
        }
        _ => {
            let items: Vec<Value> = values.collect();
            crate::array::check_len(items.len())?;
            Value::Array(items)
        }
    })
}

/// Sums of integers are numeric (bigint for small integers would do, but numeric never
/// overflows).
/// The text a group's key values are found by: their debug form, except where values of
/// different forms are equal, which PostgreSQL puts in one group: intervals by their span
/// ('1 mon' = '30 days'), numerics by their normalized value (1.0 = 1.00), and the zeros of
/// double precision (0 = -0).
fn group_key(key: &[Value]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for v in key {
        let _ = match v {
            Value::Interval(iv) => write!(out, "I{},", iv.span()),
            // 1.0 = 1.00 and 0 = -0, as in PostgreSQL.
            Value::Numeric(d) => write!(out, "N{},", d.normalized()),
            Value::Float(f) if *f == 0.0 => write!(out, "F0,"),
            v => write!(out, "{v:?},"),
        };
    }
    out
}

/// The style of aggregates' arithmetic: sums and averages add numbers and intervals only,
/// which no zone or style changes.
pub(crate) const NUMBERS: crate::style::Style = crate::style::Style::DEFAULT;

pub(crate) fn widen(v: Value) -> Value {
    match v {
        Value::Int(i) => Value::Numeric(i.into()),
        v => v,
    }
}
