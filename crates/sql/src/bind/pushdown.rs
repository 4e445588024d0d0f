//! Conditions pushed into derived tables, and partitions pruned by them.
//!
//! A WHERE (or inner ON) condition that reads only a derived table's columns — a subquery
//! in FROM, a view, a CTE read in place, a partitioned table's UNION ALL of its partitions
//! — holds for a row of it exactly when it holds for the row of the query inside that
//! produced it. So such a condition is rewritten over that query's own rows (each column
//! replaced by the expression it shows) and placed there as its WHERE would be: it reaches
//! the table it reads, where it can choose a key, and the rows that fail it are never
//! built. Through a set operation it goes to both sides.
//!
//! A query takes a condition only when filtering its output equals filtering its input:
//! through GROUP BY only a condition on its keys (it keeps or drops whole groups), never
//! through window functions, LIMIT/OFFSET, DISTINCT ON, set-returning select items, FOR
//! UPDATE or grouping sets, and never a condition that could give another value when
//! evaluated elsewhere or more often (a subquery, an aggregate, a volatile function such
//! as `random()` or `nextval`, a function made with CREATE FUNCTION). What is not pushed
//! stays where it was. A pushed condition leaves the outer query only when the query
//! inside took it whole (both sides of a set operation).
//!
//! Pruning: a partition's scan that took a condition `key op e` (`e` reading no column)
//! also takes a condition on `e` alone, from the partition's bound and its ancestors' —
//! "some key the bound holds could pass" — evaluated once before the scan (with the
//! statement's parameters, so prepared statements prune too). When it fails the partition
//! is not read at all.

use crate::bind::*;
use crate::catalog::Table;
use crate::partition::{decode, key_types, Bound, Datum};
use crate::plan::access::choose_access_with;

impl Planner<'_> {
    /// Pushes `item`'s pushable conditions into the query it reads (a derived table or a
    /// set operation), then chooses how a table item's rows are found.
    pub(crate) fn settle(&mut self, item: &mut FromItem) -> Result<()> {
        if item.join == JoinKind::Inner
            && matches!(item.source, Source::Derived(_) | Source::SetOp(..))
        {
            let range = item.offset..item.offset + item.width;
            for on in [false, true] {
                let conds = std::mem::take(if on { &mut item.on } else { &mut item.filters });
                // All of them at once: the query inside settles its items once.
                let locals: Vec<Option<Expr>> =
                    conds.iter().map(|c| local_form(c, range.clone())).collect();
                let pushed = locals.iter().flatten().cloned().collect();
                let mut taken = self.push_into_source(&mut item.source, pushed)?.into_iter();
                // The rest stay, in their order.
                let kept: Vec<Expr> = conds
                    .into_iter()
                    .zip(locals)
                    .filter(|(_, l)| !(l.is_some() && taken.next().unwrap_or(false)))
                    .map(|(c, _)| c)
                    .collect();
                *(if on { &mut item.on } else { &mut item.filters }) = kept;
            }
        }
        if let Source::Table(..) = item.source {
            let keys = self.expression_keys(item)?;
            choose_access_with(item, &keys);
        }
        Ok(())
    }

    /// Pushes conditions `conds` (over the source's output columns, from 0) into `source`;
    /// for each, whether it took it whole.
    fn push_into_source(&mut self, source: &mut Source, conds: Vec<Expr>) -> Result<Vec<bool>> {
        match source {
            Source::Derived(plan) => self.push_into_plan(plan, conds),
            Source::SetOp(left, right, _, _) => {
                // Only where both sides give the columns it reads their own types (no
                // conversion happens between the sides and the result).
                let same_types = |c: &Expr| {
                    let mut same = true;
                    c.walk(&mut |e| {
                        if let Expr::Column(i) = e {
                            same &= matches!(
                                (left.columns.get(*i), right.columns.get(*i)),
                                (Some(l), Some(r)) if l.1 == r.1
                            );
                        }
                    });
                    same
                };
                let eligible: Vec<bool> = conds.iter().map(same_types).collect();
                let pushed: Vec<Expr> =
                    conds.into_iter().zip(&eligible).filter(|(_, e)| **e).map(|(c, _)| c).collect();
                let l = self.push_into_plan(left, pushed.clone())?;
                let r = self.push_into_plan(right, pushed)?;
                let mut both = l.into_iter().zip(r).map(|(l, r)| l && r);
                Ok(eligible.into_iter().map(|e| e && both.next().unwrap_or(false)).collect())
            }
            _ => Ok(vec![false; conds.len()]),
        }
    }

    /// Pushes conditions `conds` (over `plan`'s output columns) into `plan`'s WHERE; for
    /// each, whether it did.
    fn push_into_plan(&mut self, plan: &mut SelectPlan, conds: Vec<Expr>) -> Result<Vec<bool>> {
        if !plan.windows.is_empty()
            || plan.limit.is_some()
            || plan.offset.is_some()
            || !plan.distinct_on.is_empty()
            || !plan.expand.is_empty()
            || plan.lock.is_some()
            || plan.key_order.is_some()
        {
            return Ok(vec![false; conds.len()]);
        }
        let inner: Vec<Option<Expr>> =
            conds.into_iter().map(|c| rewritten(plan, c)).collect::<Result<_>>()?;
        let taken = inner.iter().map(Option::is_some).collect();
        let inner: Vec<Expr> = inner.into_iter().flatten().collect();
        if inner.is_empty() {
            return Ok(taken);
        }
        if plan.from.len() == 1 {
            self.guard_partition(plan, &inner)?;
        }
        let mut placed = Vec::with_capacity(inner.len());
        for c in inner {
            // One that reads none of the query's columns now (`tableoid` in a partition's
            // scan is its OID) is decided now when it can be.
            match (c.uses_columns_from(0), settled(&c, self.env)) {
                (false, Some(true)) => {}
                (false, Some(false)) => plan.constant_filters.push(Expr::Const(Value::Bool(false))),
                _ => placed.push(c),
            }
        }
        let before: Vec<usize> = plan.from.iter().map(|i| i.filters.len()).collect();
        let constant = Self::place_filters(&mut plan.from, placed);
        plan.constant_filters.extend(constant);
        for (item, n) in plan.from.iter_mut().zip(before) {
            if item.filters.len() != n {
                self.settle(item)?;
            }
        }
        Ok(taken)
    }

    /// When `plan`'s first FROM item reads a partition: the guards of conditions `conds`
    /// (over its row) on the plan, so that it reads nothing when they rule the partition
    /// out. Every row the plan gives needs one of that partition's (the first item is
    /// inner-joined), so UPDATE and DELETE targets are pruned this way too.
    pub(crate) fn guard_partition(&mut self, plan: &mut SelectPlan, conds: &[Expr]) -> Result<()> {
        let Some(FromItem { source: Source::Table(t, _), offset: 0, .. }) = plan.from.first()
        else {
            return Ok(());
        };
        if t.partition_of.is_none() {
            return Ok(());
        }
        let t = t.clone();
        for c in conds {
            for g in self.partition_guards(&t, c)? {
                // A guard of constants alone is decided now: a partition it rules out keeps
                // a false one (nothing is read; EXPLAIN shows it), one it admits keeps none.
                match settled(&g, self.env) {
                    Some(true) => {}
                    Some(false) => plan.constant_filters.push(Expr::Const(Value::Bool(false))),
                    None => plan.constant_filters.push(g),
                }
            }
        }
        Ok(())
    }

    /// Conditions on the statement's values alone, true whenever partition `t`'s bound (and
    /// its ancestors') could hold a row passing `c` (over `t`'s row): a partition whose
    /// guard fails need not be read.
    fn partition_guards(&mut self, t: &Table, c: &Expr) -> Result<Vec<Expr>> {
        let Some(cond) = KeyCondition::of(c) else { return Ok(vec![]) };
        let mut guards = Vec::new();
        let mut of = t.partition_of.clone();
        let mut depth = 0;
        while let Some(o) = of {
            depth += 1;
            if depth > crate::partition::PARTITION_DEPTH_MAX {
                break;
            }
            let parent = self.table_or_err(&o.parent)?;
            let Some(p) = &parent.partitioning else { break };
            // A partition's columns are its parent's, in order: the key positions agree.
            if p.key.first() == Some(&cond.column) {
                let bound = decode(&o.bound, &key_types(&parent, p))?;
                if let Some(g) = cond.guard(&bound, p.key.len()) {
                    guards.push(g);
                }
            }
            of = parent.partition_of.clone();
        }
        Ok(guards)
    }
}

/// The value of guard `g` when it holds constants alone (no parameter, no function whose
/// value could change before the statement runs); `None` when it must wait for the run,
/// or evaluating it fails (the run reports that).
fn settled(g: &Expr, env: &dyn crate::expr::Env) -> Option<bool> {
    let mut constant = true;
    g.walk(&mut |e| {
        constant &= matches!(
            e,
            Expr::Const(_)
                | Expr::Binary(..)
                | Expr::And(..)
                | Expr::Or(..)
                | Expr::Not(_)
                | Expr::InList(..)
        )
    });
    if !constant {
        return None;
    }
    let ctx = crate::expr::Ctx::new(&[], env);
    g.eval_bool(&[], &ctx).ok()
}

/// Condition `c` over `plan`'s output columns, rewritten over its joined row (each column
/// replaced by the expression it shows); `None` when it may not move there.
fn rewritten(plan: &SelectPlan, c: Expr) -> Result<Option<Expr>> {
    let mut missing = false;
    let inner = c.map(&mut |e| {
        Ok(match e {
            Expr::Column(i) => match plan.projection.get(i) {
                Some(p) if i < plan.columns.len() => p.clone(),
                _ => {
                    missing = true;
                    Expr::Const(Value::Null)
                }
            },
            e => e,
        })
    })?;
    // Over a grouped query's output, a condition reading only its GROUP BY keys keeps or
    // drops whole groups: it holds for the group's input rows exactly when it holds for the
    // group (not so with grouping sets, whose rows leave keys NULL, nor without keys, where
    // the one group is there even when no row is).
    let inner = match &plan.grouping {
        None => inner,
        Some(g) if g.sets.is_empty() && !g.keys.is_empty() => inner.map(&mut |e| {
            Ok(match e {
                Expr::Column(j) => match g.keys.get(j) {
                    Some(key) => key.clone(),
                    None => {
                        missing = true;
                        Expr::Const(Value::Null)
                    }
                },
                e => e,
            })
        })?,
        Some(_) => return Ok(None),
    };
    Ok((!missing && movable(&inner)).then_some(inner))
}

/// Condition `c` (over the joined row) over `range`'s columns renumbered from 0, when it
/// reads only those and could be evaluated inside the query that produces them.
fn local_form(c: &Expr, range: std::ops::Range<usize>) -> Option<Expr> {
    let mut inside = true;
    let mut any = false;
    c.walk(&mut |e| {
        if let Expr::Column(i) = e {
            any = true;
            inside &= range.contains(i);
        }
    });
    if !inside || !any || !movable(c) {
        return None;
    }
    c.clone()
        .map(&mut |e| {
            Ok(match e {
                Expr::Column(i) => Expr::Column(i - range.start),
                e => e,
            })
        })
        .ok()
}

/// Whether `e` gives the same value wherever and however often it is evaluated within a
/// statement: no subqueries, aggregates, window functions, sequences, functions made with
/// CREATE FUNCTION or volatile built-ins.
fn movable(e: &Expr) -> bool {
    let mut ok = true;
    e.walk(&mut |x| {
        ok &= match x {
            Expr::Subquery(..)
            | Expr::InValues(..)
            | Expr::Agg(..)
            | Expr::Window(_)
            | Expr::Sequence(..)
            | Expr::Routine(..) => false,
            Expr::Func(f, _) => stable(*f),
            _ => true,
        }
    });
    ok
}

/// Whether built-in `f` gives the same value for the same arguments throughout a
/// statement (immutable, or stable: reading the statement's time or the session's
/// settings).
fn stable(f: Func) -> bool {
    use crate::expr::dates::TimeFunc;
    match f {
        Func::Time(TimeFunc::ClockTimestamp) => false,
        Func::Now
        | Func::CurrentDate
        | Func::LocalTimestamp
        | Func::LocalTime
        | Func::Timezone
        | Func::Extract
        | Func::DatePart
        | Func::DateTrunc
        | Func::ToChar
        | Func::ToNumber
        | Func::Age
        | Func::StartTime
        | Func::CurrentSetting
        | Func::CurrentDatabase
        | Func::CurrentSchema
        | Func::CurrentUser
        | Func::Time(_)
        | Func::Json(..) => true,
        f => crate::functions::of(f).is_some_and(|d| d.immutable),
    }
}

/// A condition on a partition key's first column: `column op value`, or `column IN
/// (values)`, or `column IS NULL`, the values reading no column.
struct KeyCondition {
    column: usize,
    test: KeyTest,
}

enum KeyTest {
    /// column op value (op one of = < <= > >=)
    Compare(BinOp, Expr),
    /// column IN (values)
    In(Vec<Expr>),
    /// column IS NULL
    IsNull,
}

impl KeyCondition {
    fn of(c: &Expr) -> Option<KeyCondition> {
        let free = |e: &Expr| !e.uses_columns_from(0);
        match c {
            Expr::Binary(op, a, b)
                if matches!(op, BinOp::Eq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq) =>
            {
                match (a.as_ref(), b.as_ref()) {
                    (Expr::Column(k), v) if free(v) => {
                        Some(KeyCondition { column: *k, test: KeyTest::Compare(*op, v.clone()) })
                    }
                    (v, Expr::Column(k)) if free(v) => Some(KeyCondition {
                        column: *k,
                        test: KeyTest::Compare(crate::plan::access::flip(*op), v.clone()),
                    }),
                    _ => None,
                }
            }
            Expr::InList(x, list, false) => match x.as_ref() {
                Expr::Column(k) if list.iter().all(free) => {
                    Some(KeyCondition { column: *k, test: KeyTest::In(list.clone()) })
                }
                _ => None,
            },
            Expr::IsNull(x, false) => match x.as_ref() {
                Expr::Column(k) => Some(KeyCondition { column: *k, test: KeyTest::IsNull }),
                _ => None,
            },
            _ => None,
        }
    }

    /// The guard for a partition whose bound (of a key `width` columns wide, this
    /// condition on its first) is `bound`: `None` when it cannot rule the partition out.
    fn guard(&self, bound: &Bound, width: usize) -> Option<Expr> {
        match (&self.test, bound) {
            (_, Bound::Default) => None,
            // A range partition holds no key with a NULL part; a list one holds NULL only
            // when it lists it.
            (KeyTest::IsNull, Bound::Range { .. }) => Some(Expr::Const(Value::Bool(false))),
            (KeyTest::IsNull, Bound::List(values)) => {
                Some(Expr::Const(Value::Bool(values.iter().any(|v| v.is_null()))))
            }
            (KeyTest::Compare(op, v), _) => compare_guard(*op, v, bound, width),
            (KeyTest::In(list), _) => {
                // Some listed value could be there (a value without a guard: it could).
                let mut any: Option<Expr> = None;
                for v in list {
                    let g = compare_guard(BinOp::Eq, v, bound, width)?;
                    any = Some(match any {
                        None => g,
                        Some(a) => Expr::Or(Box::new(a), Box::new(g)),
                    });
                }
                any
            }
        }
    }
}

/// When some key `bound` holds could make `key op v` true (the key's first column
/// compared; `width` columns in all).
fn compare_guard(op: BinOp, v: &Expr, bound: &Bound, width: usize) -> Option<Expr> {
    let cmp = |op: BinOp, a: Expr, b: Expr| Expr::Binary(op, Box::new(a), Box::new(b));
    match bound {
        Bound::Default => None,
        Bound::List(values) => {
            // The key is one column; NULL equals nothing and compares with nothing.
            let listed: Vec<Expr> =
                values.iter().filter(|x| !x.is_null()).cloned().map(Expr::Const).collect();
            if listed.is_empty() {
                return Some(Expr::Const(Value::Bool(false)));
            }
            Some(match op {
                BinOp::Eq => Expr::InList(Box::new(v.clone()), listed, false),
                // Some listed value passes `x op v`.
                _ => listed
                    .into_iter()
                    .map(|x| cmp(op, x, v.clone()))
                    .reduce(|a, b| Expr::Or(Box::new(a), Box::new(b)))?,
            })
        }
        Bound::Range { from, to } => {
            // The first column of a key the bound holds lies in [lo, hi) — [lo, hi] when
            // later columns follow, since they may decide at hi.
            let lo = match from.first()? {
                Datum::Value(x) => Some(Expr::Const(x.clone())),
                _ => None,
            };
            let hi = match to.first()? {
                Datum::Value(x) => Some(x),
                _ => None,
            };
            // `key = v` (or `>=`) with key < hi needs v < hi — but where a key and `v`
            // compare as floating-point numbers, a key just below hi may round to it: then
            // only v <= hi is sure.
            let hi_op = match hi {
                Some(h) if width == 1 && exact_compare(v, h) => BinOp::Lt,
                _ => BinOp::LtEq,
            };
            let hi = hi.map(|x| Expr::Const(x.clone()));
            let mut parts = Vec::new();
            // The key's first column as small as the bound allows passes `key < v` (or
            // `<=`, `=`) when any does; as large as it allows, `key > v` (`>=`, `=`).
            if matches!(op, BinOp::Eq | BinOp::Lt | BinOp::LtEq) {
                if let Some(lo) = lo {
                    let op = if op == BinOp::Lt { BinOp::Lt } else { BinOp::LtEq };
                    parts.push(cmp(op, lo, v.clone()));
                }
            }
            if matches!(op, BinOp::Eq | BinOp::Gt | BinOp::GtEq) {
                if let Some(hi) = hi {
                    // key < hi and key op v: some key passes when v < hi (`>`, and `=` /
                    // `>=` of a one-column key); with later columns key may equal hi.
                    let op = match op {
                        BinOp::Gt => BinOp::Lt,
                        _ => hi_op,
                    };
                    parts.push(cmp(op, v.clone(), hi));
                }
            }
            parts.into_iter().reduce(|a, b| Expr::And(Box::new(a), Box::new(b)))
        }
    }
}

/// Whether a key value of `bound`'s kind and `v` compare exactly: always for values that
/// are not numbers; for numbers, only when `v` is a constant that meets the key without a
/// floating-point conversion on either side (integers and numerics meet exactly, a float
/// meets a float).
fn exact_compare(v: &Expr, bound: &Value) -> bool {
    let float = |x: &Value| matches!(x, Value::Float(_));
    let number = |x: &Value| matches!(x, Value::Int(_) | Value::Numeric(_) | Value::Float(_));
    if !number(bound) {
        return true;
    }
    match v {
        Expr::Const(c) => number(c) && float(c) == float(bound),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holds(g: &Expr) -> bool {
        let env = crate::exec::indexes::IndexEnv;
        g.eval_bool(&[], &crate::expr::Ctx::new(&[], &env)).expect("a guard evaluates")
    }

    fn int(i: i64) -> Datum {
        Datum::Value(Value::Int(i))
    }

    /// A guard never rules out a partition that holds a key passing the condition, and
    /// with exact comparisons rules out one whose bound ends at an equal value.
    #[test]
    fn range_guards_are_sound_and_exact_at_the_upper_bound() {
        let bounds =
            [(int(0), int(10)), (Datum::Min, int(3)), (int(7), Datum::Max), (int(-2), int(-1))];
        let ops = [BinOp::Eq, BinOp::Lt, BinOp::LtEq, BinOp::Gt, BinOp::GtEq];
        for (from, to) in bounds {
            let bound = Bound::Range { from: vec![from.clone()], to: vec![to.clone()] };
            let lo = match &from {
                Datum::Value(Value::Int(i)) => *i,
                _ => -100,
            };
            let hi = match &to {
                Datum::Value(Value::Int(i)) => *i,
                _ => 100,
            };
            for op in ops {
                for v in -20..=20 {
                    for value in [Value::Int(v), Value::Float(v as f64 + 0.5)] {
                        let x = match &value {
                            Value::Float(f) => *f,
                            _ => v as f64,
                        };
                        let passes = |k: i64| match op {
                            BinOp::Eq => k as f64 == x,
                            BinOp::Lt => (k as f64) < x,
                            BinOp::LtEq => k as f64 <= x,
                            BinOp::Gt => k as f64 > x,
                            _ => k as f64 >= x,
                        };
                        let possible = (lo..hi).any(passes);
                        let guard = compare_guard(op, &Expr::Const(value.clone()), &bound, 1);
                        let admitted = guard.as_ref().is_none_or(holds);
                        assert!(
                            admitted || !possible,
                            "{op:?} {value:?} on {from:?}..{to:?} ruled out a partition with rows"
                        );
                        if op == BinOp::Eq && matches!(value, Value::Int(_)) && v == hi {
                            assert!(!admitted, "= {v} admitted the partition ending at {hi}");
                        }
                    }
                }
            }
        }
    }

    /// A parameter (or any non-constant) of a numeric key is compared with the upper bound
    /// inclusively; a constant of the key's kind exclusively.
    #[test]
    fn only_exact_comparisons_are_strict_at_the_upper_bound() {
        let bound = Bound::Range { from: vec![int(0)], to: vec![int(10)] };
        let strict = |v: Expr| match compare_guard(BinOp::Eq, &v, &bound, 1) {
            Some(Expr::And(_, hi)) => matches!(*hi, Expr::Binary(BinOp::Lt, ..)),
            other => panic!("unexpected guard {other:?}"),
        };
        assert!(strict(Expr::Const(Value::Int(3))));
        assert!(!strict(Expr::Param(0)));
        assert!(!strict(Expr::Const(Value::Float(3.0))));
        let dates = Bound::Range {
            from: vec![Datum::Value(Value::Date(0))],
            to: vec![Datum::Value(Value::Date(31))],
        };
        match compare_guard(BinOp::Eq, &Expr::Param(0), &dates, 1) {
            Some(Expr::And(_, hi)) => assert!(matches!(*hi, Expr::Binary(BinOp::Lt, ..))),
            other => panic!("unexpected guard {other:?}"),
        }
    }

    /// List partitions: `=` is membership, `IS NULL` is whether NULL is listed.
    #[test]
    fn list_guards() {
        let bound = Bound::List(vec![Value::Int(1), Value::Int(4), Value::Null]);
        let eq = |v: i64| {
            holds(&compare_guard(BinOp::Eq, &Expr::Const(Value::Int(v)), &bound, 1).unwrap())
        };
        assert!(eq(1) && eq(4) && !eq(2));
        let lt = |v: i64| {
            holds(&compare_guard(BinOp::Lt, &Expr::Const(Value::Int(v)), &bound, 1).unwrap())
        };
        assert!(!lt(1) && lt(2));
        let null = KeyCondition { column: 0, test: KeyTest::IsNull };
        assert!(holds(&null.guard(&bound, 1).unwrap()));
        let range = Bound::Range { from: vec![int(0)], to: vec![int(1)] };
        assert!(!holds(&null.guard(&range, 1).unwrap()));
    }
}
