//! Access-path choice: which keys and indexes serve a FROM item's conditions.

use crate::expr::*;
use crate::plan::*;
use crate::types::{DataType, Value};

/// Chooses how a FROM item's rows are found, from its conditions: `col = expr` on every
/// primary-key column → point lookup; on a leading part (and a range on the next) → range
/// scan; on an index's leading columns → index scan. `expr` may use earlier items' columns.
pub fn choose_access(item: &mut FromItem) {
    let Source::Table(table, access) = &mut item.source else { return };
    let conds: Vec<&Expr> = if item.join == JoinKind::Left {
        item.on.iter().collect()
    } else {
        item.on.iter().chain(item.filters.iter()).collect()
    };
    let (lo, hi) = (item.offset, item.offset + item.width);
    let eq_for = |col: usize| -> Option<Expr> {
        let target = lo + col;
        let ty = table.columns[col].ty;
        for c in &conds {
            if let Expr::Binary(BinOp::Eq, a, b) = c {
                for (x, y) in [(a, b), (b, a)] {
                    if **x == Expr::Column(target)
                        && !y.uses_columns_in(lo..hi)
                        && !y.uses_columns_from(hi)
                        && key_compatible(y, ty)
                    {
                        return Some((**y).clone());
                    }
                }
            }
        }
        None
    };
    let bound_for = |col: usize, lower: bool| -> Option<(Expr, bool)> {
        let target = lo + col;
        let ty = table.columns[col].ty;
        for c in &conds {
            if let Expr::Binary(op, a, b) = c {
                let (col_side, val, op) = if **a == Expr::Column(target) {
                    (true, b, *op)
                } else if **b == Expr::Column(target) {
                    (true, a, flip(*op))
                } else {
                    (false, a, *op)
                };
                if !col_side
                    || val.uses_columns_in(lo..hi)
                    || val.uses_columns_from(hi)
                    || !key_compatible(val, ty)
                {
                    continue;
                }
                match (op, lower) {
                    (BinOp::Gt, true) => return Some(((**val).clone(), false)),
                    (BinOp::GtEq, true) => return Some(((**val).clone(), true)),
                    (BinOp::Lt, false) => return Some(((**val).clone(), false)),
                    (BinOp::LtEq, false) => return Some(((**val).clone(), true)),
                    _ => {}
                }
            }
        }
        None
    };
    if !table.primary_key.is_empty() {
        let mut prefix = Vec::new();
        for &col in &table.primary_key {
            match eq_for(col) {
                Some(e) => prefix.push(e),
                None => break,
            }
        }
        if prefix.len() == table.primary_key.len() {
            *access = Access::Point(prefix);
            return;
        }
        if let [col] = table.primary_key[..] {
            let target = lo + col;
            let ty = table.columns[col].ty;
            for c in &conds {
                if let Expr::InList(x, list, false) = c {
                    if **x == Expr::Column(target)
                        && list.iter().all(|v| {
                            !v.uses_columns_in(lo..hi)
                                && !v.uses_columns_from(hi)
                                && key_compatible(v, ty)
                        })
                    {
                        *access = Access::Points(list.clone());
                        return;
                    }
                }
            }
        }
        let next = table.primary_key[prefix.len()];
        let (lower, upper) = (bound_for(next, true), bound_for(next, false));
        if !prefix.is_empty() || lower.is_some() || upper.is_some() {
            *access = Access::Range { prefix, lower, upper };
            return;
        }
    }
    for index in &table.indexes {
        let mut values = Vec::new();
        for &col in &index.columns {
            match eq_for(col) {
                Some(e) => values.push(e),
                None => break,
            }
        }
        if !values.is_empty() {
            *access = Access::Index(index.clone(), values);
            return;
        }
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
                        | (Value::Timestamp(_), DataType::Timestamp)
                        | (Value::TimestampTz(_), DataType::TimestampTz)
                        | (Value::Bytea(_), DataType::Bytea)
                        | (Value::Float(_), DataType::Float8 | DataType::Float4)
                )
        }
        // Parameters are converted to the key type when evaluated (see `key_value`); a
        // scalar subquery is too (an uncorrelated one is a constant by the time rows are
        // read, see `exec::init`).
        Expr::Subquery(_, SubqueryKind::Scalar, _)
        | Expr::Param(_)
        | Expr::Column(_)
        | Expr::Binary(..)
        | Expr::Neg(_)
        | Expr::Cast(..)
        | Expr::Func(..) => true,
        _ => false,
    }
}
