//! Access-path choice: which keys and indexes serve a FROM item's conditions.

use crate::catalog::Index;
use crate::expr::*;
use crate::plan::*;
use crate::types::{DataType, Value};

/// The most key alternatives one access may expand into (the product of its IN lists).
pub const KEY_ALTERNATIVES_MAX: usize = 10_000;

/// Chooses how a FROM item's rows are found, from its conditions (which all stay filters:
/// the access path only has to return every row that can pass them).
///
/// Each key — the primary key and every secondary index — is matched against the
/// conditions column by column: `col = v` fixes a column, `col IN (…)` fixes it to one of a
/// list, and an OR of conjunctions fixing the same leading columns (what a row-value IN list
/// `(a, b) IN ((1, 2), (3, 4))` binds to) fixes several at once, each combination an
/// alternative. After the fixed columns, a range on the next one bounds the scan. `v` may
/// use columns of earlier FROM items (an index nested-loop join). The key that fixes the
/// most columns wins; a primary key fixed entirely is a point lookup; ties go to the primary
/// key. Nothing fixed and no range: a full scan.
pub fn choose_access(item: &mut FromItem) {
    choose_access_with(item, &[])
}

/// The key parts of an index on expressions: each expression over the joined row (as the
/// query's conditions are bound) and its type.
pub type ExpressionKey = (u64, Vec<(Expr, DataType)>);

/// [`choose_access`], with the bound key parts of the table's indexes on expressions (by
/// index id): a condition on the same expression (`lower(email) = $1`) reads through one.
pub fn choose_access_with(item: &mut FromItem, expression_keys: &[ExpressionKey]) {
    let Source::Table(table, access) = &mut item.source else { return };
    if item.join.keeps_right() {
        return; // read whole: every row must be seen to find the unmatched ones
    }
    let conds: Vec<&Expr> = if item.join.outer() {
        item.on.iter().collect()
    } else {
        item.on.iter().chain(item.filters.iter()).collect()
    };
    let matcher = KeyMatcher { conds: &conds, lo: item.offset, hi: item.offset + item.width };
    let mut best: Option<(usize, bool, KeyAccess)> = None;
    let keys = std::iter::once(None).chain(table.indexes.iter().cloned().map(Some));
    for index in keys {
        let column = |c: usize| (Expr::Column(item.offset + c), table.columns[c].ty);
        let parts: Vec<(Expr, DataType)> = match &index {
            // A partial index lacks the rows its condition leaves out; an index of a
            // method Kiln records only holds nothing.
            Some(ix) if ix.predicate.is_some() || !ix.is_built() => continue,
            Some(ix) if !ix.expressions.is_empty() => {
                match expression_keys.iter().find(|(id, _)| *id == ix.id) {
                    Some((_, parts)) => parts.clone(),
                    None => continue,
                }
            }
            Some(ix) => ix.columns.iter().map(|&c| column(c)).collect(),
            None => table.primary_key.iter().map(|&c| column(c)).collect(),
        };
        if parts.is_empty() {
            continue;
        }
        let Some((fixed, key)) = matcher.key_access(index, &parts) else { continue };
        let points = key.is_points(table);
        let better = match &best {
            None => true,
            Some((best_fixed, best_points, _)) => !best_points && (points || fixed > *best_fixed),
        };
        if better {
            best = Some((fixed, points, key));
        }
    }
    if let Some((_, _, key)) = best {
        *access = Access::Key(Box::new(key));
    }
}

/// Sets `plan.key_order` when the plan's only FROM item can produce its rows in the order
/// the query needs by reading its primary key forward or backward, so that the executor
/// reads only as many rows as it needs:
/// - `ORDER BY … LIMIT n`: the sort keys are the key columns after those the access fixes
///   (fixed ones may appear anywhere), all ascending or all descending;
/// - `min(col)` / `max(col)` alone, without GROUP BY: `col` is the key column after the
///   fixed ones, and the first row that passes is the answer.
///
/// A full scan becomes a scan of the whole key for this.
pub fn key_order(plan: &mut SelectPlan) {
    if plan.from.len() != 1
        || plan.distinct
        || !plan.distinct_on.is_empty()
        || plan.lock.is_some()
        || plan.from[0].offset != 0
        || !plan.expand.is_empty()
        || !plan.windows.is_empty()
    {
        return;
    }
    // The order wanted, as (column, descending) sort keys.
    let wanted: Vec<(usize, bool)> = match &plan.grouping {
        Some(g) => match (g.keys.is_empty(), g.aggs.as_slice()) {
            (true, [(f @ (AggFunc::Min | AggFunc::Max), _, Some(Expr::Column(c)), _)]) => {
                vec![(*c, *f == AggFunc::Max)]
            }
            _ => return,
        },
        None => {
            if plan.order.is_empty() || plan.limit.is_none() {
                return;
            }
            let mut keys = Vec::with_capacity(plan.order.len());
            for &(pos, desc, _) in &plan.order {
                let Some(Expr::Column(c)) = plan.projection.get(pos) else { return };
                keys.push((*c, desc));
            }
            keys
        }
    };
    let Source::Table(table, access) = &mut plan.from[0].source else { return };
    let pk = &table.primary_key;
    let fixed = match access {
        Access::Full => 0,
        Access::Key(k) if k.index.is_none() && k.prefixes.len() == 1 => k.prefixes[0].len(),
        Access::Key(_) => return,
    };
    // Key order is ORDER BY's order only for types whose key encoding sorts as their values
    // do, and only without NULLs (primary key columns have none).
    let orderable = |c: usize| {
        let col = &table.columns[c];
        !col.nullable
            && (col.ty.is_integer()
                || col.ty.is_string()
                || matches!(
                    col.ty,
                    DataType::Date | DataType::Timestamp(_) | DataType::TimestampTz(_)
                ))
    };
    if fixed >= pk.len() || !pk.iter().all(|&c| orderable(c)) {
        return; // one row at most, or not in value order
    }
    // The direction of the first sort key that is not fixed (a fixed column is constant, so
    // its direction does not matter).
    let mut descending = None;
    let mut next = fixed;
    for &(c, desc) in &wanted {
        if next == pk.len() {
            break; // the key is unique: later sort keys cannot reorder anything
        }
        if c == pk[next] {
            if *descending.get_or_insert(desc) != desc {
                return;
            }
            next += 1;
        } else if !pk[..fixed].contains(&c) {
            return;
        }
    }
    let Some(descending) = descending else { return }; // ORDER BY fixed columns only
    if matches!(access, Access::Full) {
        *access = Access::Key(Box::new(KeyAccess {
            index: None,
            prefixes: vec![vec![]],
            lower: None,
            upper: None,
            types: pk.iter().map(|&c| table.columns[c].ty).collect(),
        }));
    }
    plan.key_order = Some(descending);
}

/// A key part: its column or expression over the joined row, and its type.
type Part = (Expr, DataType);

/// Matches one FROM item's conditions against keys.
struct KeyMatcher<'a> {
    conds: &'a [&'a Expr],
    /// The item's columns in the joined row.
    lo: usize,
    hi: usize,
}

impl KeyMatcher<'_> {
    /// Whether `e` can serve as a key value of key part `part`: it reads none of this
    /// item's or later items' columns and encodes as that part's key.
    fn usable(&self, e: &Expr, part: &Part) -> bool {
        !e.uses_columns_in(self.lo..self.hi)
            && !e.uses_columns_from(self.hi)
            && key_compatible(e, part.1)
    }

    /// Whether `e` is key part `part` (its column, or the same expression).
    fn is_part(&self, e: &Expr, part: &Part) -> bool {
        *e == part.0
    }

    /// `v` from a condition `col = v` (in either order) among `conds`.
    fn equal(&self, conds: &[&Expr], col: &Part) -> Option<Expr> {
        conds.iter().find_map(|c| match c {
            Expr::Binary(BinOp::Eq, a, b) => [(a, b), (b, a)]
                .into_iter()
                .find(|(x, y)| self.is_part(x, col) && self.usable(y, col))
                .map(|(_, y)| (**y).clone()),
            _ => None,
        })
    }

    /// The list of `col IN (…)`.
    fn in_list(&self, col: &Part) -> Option<Vec<Expr>> {
        self.conds.iter().find_map(|c| match c {
            Expr::InList(x, list, false)
                if self.is_part(x, col) && list.iter().all(|v| self.usable(v, col)) =>
            {
                Some(list.clone())
            }
            _ => None,
        })
    }

    /// From an OR of conjunctions, each fixing `columns[0..m]` by equalities: the values of
    /// each alternative for the largest such m.
    fn alternatives(&self, columns: &[Part]) -> Option<Vec<Vec<Expr>>> {
        let mut best: Option<Vec<Vec<Expr>>> = None;
        for c in self.conds {
            if !matches!(c, Expr::Or(..)) {
                continue;
            }
            let mut disjuncts = Vec::new();
            split_or(c, &mut disjuncts);
            let mut rows = Vec::with_capacity(disjuncts.len());
            let mut width = columns.len();
            for d in &disjuncts {
                let mut conj = Vec::new();
                split_and_ref(d, &mut conj);
                let mut values = Vec::new();
                for col in &columns[..width] {
                    match self.equal(&conj, col) {
                        Some(v) => values.push(v),
                        None => break,
                    }
                }
                width = width.min(values.len());
                if width == 0 {
                    break;
                }
                rows.push(values);
            }
            if width == 0 || rows.len() != disjuncts.len() {
                continue;
            }
            for r in &mut rows {
                r.truncate(width);
            }
            if best.as_ref().is_none_or(|b| b[0].len() < width) {
                best = Some(rows);
            }
        }
        best
    }

    /// A range bound on column `col`: lower when `lower`, else upper.
    fn bound(&self, col: &Part, lower: bool) -> Option<(Expr, bool)> {
        self.conds.iter().find_map(|c| {
            let Expr::Binary(op, a, b) = c else { return None };
            let (val, op) = if self.is_part(a, col) {
                (b, *op)
            } else if self.is_part(b, col) {
                (a, flip(*op))
            } else {
                return None;
            };
            if !self.usable(val, col) {
                return None;
            }
            match (op, lower) {
                (BinOp::Gt, true) | (BinOp::Lt, false) => Some(((**val).clone(), false)),
                (BinOp::GtEq, true) | (BinOp::LtEq, false) => Some(((**val).clone(), true)),
                _ => None,
            }
        })
    }

    /// The access through the key over `columns`, with how many leading columns it fixes;
    /// `None` when it fixes none and bounds none.
    fn key_access(&self, index: Option<Index>, columns: &[Part]) -> Option<(usize, KeyAccess)> {
        let mut prefixes: Vec<Vec<Expr>> = vec![Vec::new()];
        let mut fixed = 0;
        while fixed < columns.len() {
            let col = &columns[fixed];
            let (choices, width): (Vec<Vec<Expr>>, usize) =
                if let Some(v) = self.equal(self.conds, col) {
                    (vec![vec![v]], 1)
                } else if let Some(list) = self.in_list(col) {
                    (list.into_iter().map(|v| vec![v]).collect(), 1)
                } else if let Some(rows) = self.alternatives(&columns[fixed..]) {
                    let width = rows[0].len();
                    (rows, width)
                } else {
                    break;
                };
            if prefixes.len().saturating_mul(choices.len()) > KEY_ALTERNATIVES_MAX {
                break;
            }
            prefixes = prefixes
                .iter()
                .flat_map(|p| choices.iter().map(move |c| p.iter().chain(c).cloned().collect()))
                .collect();
            fixed += width;
        }
        let (lower, upper) = match columns.get(fixed) {
            Some(next) => (self.bound(next, true), self.bound(next, false)),
            None => (None, None),
        };
        if fixed == 0 && lower.is_none() && upper.is_none() {
            return None;
        }
        let types = columns.iter().map(|p| p.1).collect();
        Some((fixed, KeyAccess { index, prefixes, lower, upper, types }))
    }
}

fn split_or<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::Or(a, b) => {
            split_or(a, out);
            split_or(b, out);
        }
        e => out.push(e),
    }
}

fn split_and_ref<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::And(a, b) => {
            split_and_ref(a, out);
            split_and_ref(b, out);
        }
        e => out.push(e),
    }
}

/// Carries constants across column equalities, as PostgreSQL's equivalence classes do:
/// from `c_w_id = w_id AND w_id = $1` it adds `c_w_id = $1`, so the customer table's access
/// path can use it too. `conjuncts` are the query's WHERE conjuncts; `inner_on` the ON
/// conditions of its inner joins (as binding as WHERE for the rows they produce). Only
/// constants and parameters are carried: anything else might not give the same value twice.
/// The added conjuncts are implied by the others, so the result cannot change.
pub fn propagate_constants<'a>(
    conjuncts: &mut Vec<Expr>,
    inner_on: impl Iterator<Item = &'a Expr>,
    width: usize,
) {
    let mut parent: Vec<usize> = (0..width).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let known: Vec<Expr> = conjuncts.iter().cloned().chain(inner_on.cloned()).collect();
    let mut constants: Vec<(usize, Expr)> = Vec::new();
    for c in &known {
        let Expr::Binary(BinOp::Eq, a, b) = c else { continue };
        match (a.as_ref(), b.as_ref()) {
            (Expr::Column(x), Expr::Column(y)) if *x < width && *y < width => {
                let (rx, ry) = (root(&mut parent, *x), root(&mut parent, *y));
                parent[rx] = ry;
            }
            (Expr::Column(x), v @ (Expr::Const(_) | Expr::Param(_)))
            | (v @ (Expr::Const(_) | Expr::Param(_)), Expr::Column(x))
                if *x < width && !matches!(v, Expr::Const(Value::Null)) =>
            {
                constants.push((*x, v.clone()));
            }
            _ => {}
        }
    }
    if constants.is_empty() {
        return;
    }
    let mut class_constant: Vec<Option<Expr>> = vec![None; width];
    for (col, value) in &constants {
        let r = root(&mut parent, *col);
        class_constant[r].get_or_insert_with(|| value.clone());
    }
    for col in 0..width {
        let r = root(&mut parent, col);
        let Some(value) = class_constant[r].clone() else { continue };
        if constants.iter().any(|(c, v)| *c == col && *v == value) {
            continue;
        }
        conjuncts.push(Expr::Binary(BinOp::Eq, Box::new(Expr::Column(col)), Box::new(value)));
    }
}

pub(crate) fn flip(op: BinOp) -> BinOp {
    match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::LtEq => BinOp::GtEq,
        BinOp::Gt => BinOp::Lt,
        BinOp::GtEq => BinOp::LtEq,
        o => o,
    }
}

/// Whether a value expression can be encoded as a key of a column of type `ty` (so the
/// lookup finds exactly the rows equality would).
pub(crate) fn key_compatible(e: &Expr, ty: DataType) -> bool {
    if !crate::encoding::key_type_supported(ty) {
        return false;
    }
    match e {
        Expr::Const(v) => {
            matches!(
                (v, ty),
                (Value::Int(_), t) if t.is_integer()
            ) || matches!((v, ty), (Value::Text(_), t) if t.is_string())
                || matches!(
                    (v, ty),
                    (Value::Bool(_), DataType::Bool)
                        | (Value::Date(_), DataType::Date)
                        | (Value::Timestamp(_), DataType::Timestamp(_))
                        | (Value::TimestampTz(_), DataType::TimestampTz(_))
                        | (Value::Bytea(_), DataType::Bytea)
                        | (Value::Float(_), DataType::Float8 | DataType::Float4)
                )
        }
        // Parameters are converted to the key type when evaluated (see `key_value`); a
        // scalar subquery is too (an uncorrelated one is a constant by the time rows are
        // read, see `exec::init`). An outer reference is a constant for each run of a
        // correlated subquery.
        Expr::Subquery(_, SubqueryKind::Scalar, _)
        | Expr::Param(_)
        | Expr::Outer(_)
        | Expr::Column(_)
        | Expr::Binary(..)
        | Expr::Neg(_)
        | Expr::Cast(..)
        | Expr::Func(..) => true,
        _ => false,
    }
}
