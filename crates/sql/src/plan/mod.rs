//! Step 3 of a statement: plans. A bound query is a [`SelectPlan`]: a left-deep list of FROM
//! items joined by nested loops, each with an access path ([`Access`]) chosen from the
//! conjuncts that constrain it (`access`), then grouping and aggregates, projection,
//! DISTINCT, ORDER BY and LIMIT. EXPLAIN prints it (`explain`).

pub mod access;
pub mod explain;

use std::sync::Arc;

use crate::catalog::{Index, Table};
use crate::error::{code, Result, SqlError};
use crate::expr::*;
use crate::types::{Columns, DataType, Row, Value};

/// How a FROM item's rows are found.
#[derive(Debug, Clone)]
pub enum Access {
    /// Every row.
    Full,
    /// Through a key: the primary key or a secondary index.
    Key(Box<KeyAccess>),
}

/// A key access: the entries whose leading key columns equal one of `prefixes` (all of one
/// length), and whose next key column is within the bounds. A prefix as long as the
/// primary key, with no bounds, is a point lookup.
#[derive(Debug, Clone)]
pub struct KeyAccess {
    /// The secondary index, or `None` for the primary key.
    pub index: Option<Index>,
    /// Values of the leading key columns, one list per alternative (`k IN (…)`, row-value
    /// IN lists); at least one.
    pub prefixes: Vec<Vec<Expr>>,
    /// Lower bound on the next key column (value, inclusive).
    pub lower: Option<(Expr, bool)>,
    /// Upper bound on the next key column (value, inclusive).
    pub upper: Option<(Expr, bool)>,
    /// The types of the key's parts (its columns', or its expressions').
    pub types: Vec<DataType>,
}

impl KeyAccess {
    /// Whether every alternative names one primary key (a point lookup each).
    pub fn is_points(&self, table: &Table) -> bool {
        self.index.is_none()
            && self.lower.is_none()
            && self.upper.is_none()
            && self.prefixes.first().is_some_and(|p| p.len() == table.primary_key.len())
    }
}

/// Where a FROM item's rows come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A stored table.
    Table(Arc<Table>, Access),
    /// generate_series(start, stop [, step])
    Series(Box<Expr>, Box<Expr>, Option<Box<Expr>>),
    /// unnest(a [, b …]) (and other set-returning calls in FROM): each expression evaluates
    /// to an array; row i holds element i of each (NULL past the end of the shorter ones),
    /// then with `true` (WITH ORDINALITY) i itself, from 1.
    Unnest(Vec<Expr>, bool),
    /// A call of a function made with CREATE FUNCTION (`Expr::Routine`), in FROM: its value
    /// read as rows by its shape (a set is an array of rows; a row of columns an array of
    /// their values). Its arguments may read earlier items' columns (it is LATERAL, as in
    /// PostgreSQL).
    Call(Box<Expr>, CallRows),
    /// Constant rows (system tables read while binding, constant VALUES, and derived tables
    /// once `exec::init` has run them).
    Rows(Arc<Vec<Vec<Value>>>),
    /// VALUES rows with parameters or functions, evaluated at execution.
    Values(Vec<Vec<Expr>>),
    /// A derived table, `FROM (SELECT …) AS t`, run at execution.
    Derived(Box<SelectPlan>),
    /// A LATERAL derived table that reads earlier FROM items' columns (as `Expr::Outer`,
    /// over the joined row so far): run again for every combination of earlier rows.
    Lateral(Box<SelectPlan>),
    /// UNION / INTERSECT / EXCEPT of two queries, run at execution.
    SetOp(Box<SelectPlan>, Box<SelectPlan>, SetOpKind, bool),
    /// A recursive common table expression: the non-recursive term, the recursive term
    /// (which reads `WorkTable` of this id), UNION ALL (true) or UNION.
    Recursive(Box<SelectPlan>, Box<SelectPlan>, usize, bool),
    /// The rows the previous step of recursive CTE `id` produced (only inside its
    /// recursive term).
    WorkTable(usize),
}

/// How a function call's value holds its rows ([`Source::Call`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallRows {
    /// A set: an array of rows (otherwise the one row).
    pub set: bool,
    /// Rows of columns: each an array of their values (otherwise a row is the one value).
    pub columns: bool,
    /// How many columns a row has.
    pub width: usize,
    /// WITH ORDINALITY: each row ends with its number, from 1.
    pub ordinality: bool,
}

impl CallRows {
    /// The rows a call's value holds.
    pub fn rows(&self, value: Value) -> Result<Vec<Vec<Value>>> {
        let row = |v: Value| -> Vec<Value> {
            match (self.columns, v) {
                (true, Value::Array(items)) => items,
                // A NULL row (an SQL function's query found none) is a row of NULLs.
                (true, _) => vec![Value::Null; self.width],
                (false, v) => vec![v],
            }
        };
        let mut rows: Vec<Vec<Value>> = match (self.set, value) {
            (true, Value::Array(rows)) => rows.into_iter().map(row).collect(),
            (true, Value::Null) => vec![],
            (true, other) => {
                return Err(SqlError::new(
                    code::INTERNAL,
                    format!("a set-returning call gave a value of {}", other.kind()),
                ))
            }
            (false, v) => vec![row(v)],
        };
        if self.ordinality {
            for (i, r) in rows.iter_mut().enumerate() {
                r.push(Value::Int(i as i64 + 1));
            }
        }
        Ok(rows)
    }
}

/// A set operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOpKind {
    /// UNION
    Union,
    /// INTERSECT
    Intersect,
    /// EXCEPT
    Except,
}

/// How an item joins the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    /// Inner (or cross) join.
    Inner,
    /// Left outer join.
    Left,
    /// Right outer join: the item's rows that no combination of earlier rows matched come
    /// out too, the earlier items' columns NULL (the item is read once, whole).
    Right,
    /// Full outer join: both.
    Full,
}

impl JoinKind {
    /// Whether a combination of earlier rows that matches none of the item's rows comes
    /// out, the item's columns NULL.
    pub fn keeps_left(self) -> bool {
        matches!(self, JoinKind::Left | JoinKind::Full)
    }

    /// Whether the item's rows that match no combination of earlier rows come out.
    pub fn keeps_right(self) -> bool {
        matches!(self, JoinKind::Right | JoinKind::Full)
    }

    /// Whether only the ON conditions decide which rows match (an outer join: WHERE
    /// conditions apply after it).
    pub fn outer(self) -> bool {
        self != JoinKind::Inner
    }
}

/// One item of FROM.
#[derive(Debug, Clone)]
pub struct FromItem {
    /// Its rows.
    pub source: Source,
    /// Its first column in the joined row.
    pub offset: usize,
    /// Its number of columns.
    pub width: usize,
    /// How it joins.
    pub join: JoinKind,
    /// Join conditions (decide whether a left-join row matched).
    pub on: Vec<Expr>,
    /// Conditions applied once this item's columns are set.
    pub filters: Vec<Expr>,
    /// The name shown by EXPLAIN.
    pub label: String,
}

/// Grouping: key expressions and aggregates over the joined row.
#[derive(Debug, Clone)]
pub struct Grouping {
    /// GROUP BY expressions (with grouping sets: every expression of any set, then the
    /// set number, `Func::GroupingSet`).
    pub keys: Vec<Expr>,
    /// Aggregates (function, DISTINCT, argument, result type).
    pub aggs: Vec<(AggFunc, bool, Option<Expr>, DataType)>,
    /// GROUPING SETS, ROLLUP, CUBE: the keys each set groups by (the others are NULL in its
    /// rows). Empty for a plain GROUP BY.
    pub sets: Vec<Vec<usize>>,
}

/// A planned SELECT.
#[derive(Debug, Clone)]
pub struct SelectPlan {
    /// FROM items, joined left to right.
    pub from: Vec<FromItem>,
    /// Width of the joined row.
    pub width: usize,
    /// Conditions with no columns (evaluated once).
    pub constant_filters: Vec<Expr>,
    /// Grouping, when the query aggregates.
    pub grouping: Option<Grouping>,
    /// HAVING, over the grouped row.
    pub having: Option<Expr>,
    /// Output expressions (visible columns, then hidden sort columns).
    pub projection: Vec<Expr>,
    /// Visible output columns.
    pub columns: Vec<(String, DataType)>,
    /// For each visible column, the table column it shows unchanged, when it does (the
    /// table's OID and the column's number, for RowDescription).
    pub origins: crate::types::Origins,
    /// DISTINCT
    pub distinct: bool,
    /// DISTINCT ON: output positions (visible or hidden); after ORDER BY, the first row of
    /// each run of rows equal in them is kept.
    pub distinct_on: Vec<usize>,
    /// ORDER BY: output position, descending, nulls first.
    pub order: Vec<(usize, bool, bool)>,
    /// LIMIT
    pub limit: Option<Expr>,
    /// OFFSET
    pub offset: Option<Expr>,
    /// FOR UPDATE (exclusive) / FOR SHARE (shared): lock the rows of the first table.
    pub lock: Option<crate::locks::LockMode>,
    /// Set when the only FROM item reads its primary key in ORDER BY's order (descending
    /// when true), so LIMIT can stop the scan once enough rows passed (`access::key_order`).
    pub key_order: Option<bool>,
    /// Projection positions that are set-returning functions (`SELECT unnest(a)`): each
    /// evaluates to an array, and the row is repeated once per element (the shorter ones
    /// padded with NULL, as PostgreSQL does).
    pub expand: Vec<usize>,
    /// Window function calls, computed after grouping and HAVING and appended to the row
    /// (the projection reads them as the columns after the row's own).
    pub windows: Vec<WindowCall>,
}

impl SelectPlan {
    /// All rows of one FROM item, every column, nothing else.
    pub fn over(item: FromItem, columns: Columns) -> SelectPlan {
        let width = item.width;
        SelectPlan {
            from: vec![item],
            width,
            constant_filters: vec![],
            grouping: None,
            having: None,
            projection: (0..width).map(Expr::Column).collect(),
            origins: vec![None; columns.len()],
            columns,
            distinct: false,
            distinct_on: vec![],
            order: vec![],
            limit: None,
            offset: None,
            lock: None,
            key_order: None,
            expand: vec![],
            windows: vec![],
        }
    }
}

impl SelectPlan {
    /// Rewrites every expression the plan evaluates itself: access keys, join conditions and
    /// filters, grouping, HAVING, the projection, LIMIT and OFFSET, and those of the operands
    /// of a set operation and of VALUES rows. The queries behind subquery expressions and
    /// derived tables are plans of their own and are not entered.
    pub fn try_map_exprs(self, f: &mut dyn FnMut(Expr) -> Result<Expr>) -> Result<SelectPlan> {
        let all = |v: Vec<Expr>, f: &mut dyn FnMut(Expr) -> Result<Expr>| {
            v.into_iter().map(f).collect::<Result<Vec<_>>>()
        };
        let mut from = Vec::with_capacity(self.from.len());
        for item in self.from {
            let source = match item.source {
                Source::Table(t, access) => Source::Table(
                    t,
                    match access {
                        Access::Full => Access::Full,
                        Access::Key(k) => Access::Key(Box::new(KeyAccess {
                            index: k.index,
                            prefixes: k
                                .prefixes
                                .into_iter()
                                .map(|p| all(p, f))
                                .collect::<Result<Vec<_>>>()?,
                            lower: k
                                .lower
                                .map(|(e, inc)| Ok::<_, SqlError>((f(e)?, inc)))
                                .transpose()?,
                            upper: k
                                .upper
                                .map(|(e, inc)| Ok::<_, SqlError>((f(e)?, inc)))
                                .transpose()?,
                            types: k.types,
                        })),
                    },
                ),
                Source::Series(a, b, step) => Source::Series(
                    Box::new(f(*a)?),
                    Box::new(f(*b)?),
                    step.map(|s| f(*s).map(Box::new)).transpose()?,
                ),
                Source::Unnest(exprs, ord) => Source::Unnest(all(exprs, f)?, ord),
                Source::Call(e, rows) => Source::Call(Box::new(f(*e)?), rows),
                Source::Rows(rows) => Source::Rows(rows),
                Source::Values(rows) => {
                    Source::Values(rows.into_iter().map(|r| all(r, f)).collect::<Result<Vec<_>>>()?)
                }
                Source::Derived(plan) => Source::Derived(plan),
                Source::Lateral(plan) => Source::Lateral(plan),
                Source::SetOp(l, r, kind, set_all) => Source::SetOp(
                    Box::new(l.try_map_exprs(f)?),
                    Box::new(r.try_map_exprs(f)?),
                    kind,
                    set_all,
                ),
                Source::Recursive(l, r, id, set_all) => Source::Recursive(
                    Box::new(l.try_map_exprs(f)?),
                    Box::new(r.try_map_exprs(f)?),
                    id,
                    set_all,
                ),
                Source::WorkTable(id) => Source::WorkTable(id),
            };
            from.push(FromItem {
                source,
                on: all(item.on, f)?,
                filters: all(item.filters, f)?,
                ..item
            });
        }
        let grouping = match self.grouping {
            Some(g) => Some(Grouping {
                sets: g.sets,
                keys: all(g.keys, f)?,
                aggs: g
                    .aggs
                    .into_iter()
                    .map(|(func, distinct, arg, ty)| {
                        Ok((func, distinct, arg.map(&mut *f).transpose()?, ty))
                    })
                    .collect::<Result<Vec<_>>>()?,
            }),
            None => None,
        };
        let windows = self
            .windows
            .into_iter()
            .map(|w| match f(Expr::Window(Box::new(w)))? {
                Expr::Window(w) => Ok(*w),
                _ => Err(SqlError::new(
                    crate::error::code::INTERNAL,
                    "a window call was rewritten away",
                )),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SelectPlan {
            from,
            windows,
            constant_filters: all(self.constant_filters, f)?,
            grouping,
            having: self.having.map(&mut *f).transpose()?,
            projection: all(self.projection, f)?,
            limit: self.limit.map(&mut *f).transpose()?,
            offset: self.offset.map(&mut *f).transpose()?,
            ..self
        })
    }
}

impl SelectPlan {
    /// Whether FROM item `level` (after the first) gives the same rows for every combination
    /// of earlier rows, so the executor reads it once per execution rather than once per
    /// outer row.
    pub fn reads_once(&self, level: usize) -> bool {
        let Some(item) = self.from.get(level).filter(|_| level > 0) else { return false };
        if item.join.keeps_right() {
            // Read whole (the binder makes sure it can be): its unmatched rows are found
            // after every combination of earlier rows was tried.
            return true;
        }
        let reads_earlier = |e: &Expr| e.uses_columns_in(0..item.offset);
        match &item.source {
            Source::Table(_, Access::Full) | Source::Rows(_) | Source::Derived(_) => true,
            Source::SetOp(..) | Source::Recursive(..) => true,
            Source::WorkTable(_) | Source::Lateral(_) => false,
            Source::Values(rows) => !rows.iter().flatten().any(reads_earlier),
            Source::Table(_, Access::Key(k)) => {
                !k.prefixes.iter().flatten().any(reads_earlier)
                    && !k.lower.iter().chain(&k.upper).any(|(e, _)| reads_earlier(e))
            }
            // generate_series(…) and unnest(…) in FROM may use earlier items' columns (they
            // are LATERAL).
            Source::Series(..) | Source::Unnest(..) | Source::Call(..) => false,
        }
    }

    /// For an item read once: its equality conditions with earlier items, as (its column,
    /// the expression over earlier items), on which the executor hashes it (a hash join).
    /// A left join uses only its ON conditions.
    pub fn hash_keys(&self, level: usize) -> Vec<(usize, Expr)> {
        let item = &self.from[level];
        let conds: Vec<&Expr> = if item.join.outer() {
            item.on.iter().collect()
        } else {
            item.on.iter().chain(&item.filters).collect()
        };
        let (lo, hi) = (item.offset, item.offset + item.width);
        let mut keys = Vec::new();
        for c in conds {
            let Expr::Binary(BinOp::Eq, a, b) = c else { continue };
            for (x, y) in [(a, b), (b, a)] {
                let Expr::Column(col) = x.as_ref() else { continue };
                let mut subquery = false;
                y.walk(&mut |n| subquery |= matches!(n, Expr::Subquery(..)));
                if (lo..hi).contains(col)
                    && !y.uses_columns_from(lo)
                    && y.uses_columns_in(0..lo)
                    && !subquery
                {
                    keys.push((col - lo, (**y).clone()));
                    break;
                }
            }
        }
        keys
    }
}

impl SelectPlan {
    /// Whether the plan reads work table `id` in its FROM items (or theirs).
    pub fn reads_work_table(&self, id: usize) -> bool {
        self.from.iter().any(|item| match &item.source {
            Source::WorkTable(w) => *w == id,
            Source::Derived(p) | Source::Lateral(p) => p.reads_work_table(id),
            Source::SetOp(l, r, ..) | Source::Recursive(l, r, ..) => {
                l.reads_work_table(id) || r.reads_work_table(id)
            }
            _ => false,
        })
    }

    /// The plan with work table `id` replaced by `rows` everywhere in its FROM items (and
    /// those of its derived tables and set operations).
    pub fn with_work_table(&self, id: usize, rows: &std::sync::Arc<Vec<Vec<Value>>>) -> SelectPlan {
        let mut plan = self.clone();
        for item in &mut plan.from {
            item.source = match &item.source {
                Source::WorkTable(w) if *w == id => Source::Rows(rows.clone()),
                Source::Derived(p) => Source::Derived(Box::new(p.with_work_table(id, rows))),
                Source::Lateral(p) => Source::Lateral(Box::new(p.with_work_table(id, rows))),
                Source::SetOp(l, r, k, a) => Source::SetOp(
                    Box::new(l.with_work_table(id, rows)),
                    Box::new(r.with_work_table(id, rows)),
                    *k,
                    *a,
                ),
                other => other.clone(),
            };
        }
        plan
    }
}

/// A computed table: its columns and rows.
pub type Relation = (Columns, Vec<Row>);
